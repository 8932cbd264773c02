/* SPDX-License-Identifier: MIT */
/*
 * Batched device writes through io_uring: many writev()s queued, then one io_uring_enter()
 * for all of them. docs/ARCHITECTURE.md "Lesson 2: batching": the per-packet syscall is the cost to remove
 * where GRO cannot merge (small UDP, many flows).
 *
 * Every write carries RWF_NOWAIT, so a full device queue completes at once with -EAGAIN (a
 * drop, as with a plain non-blocking write) instead of io_uring arming a poll and retrying
 * later, which would wait and could reorder. Writes to a TUN/TAP are then executed inline
 * during the submit, in submission order (verified on 6.18 by tests/unit/test-uring.c).
 *
 * Lifetime: uring_writev() copies the iovec array and, if asked, the bytes of iov[0] (a header
 * block the caller reuses, at most URING_HEAD_ROOM bytes); every other iovec must stay valid
 * until the next uring_flush() returns, which waits for every completion.
 *
 * Without liburing at build time, or where the kernel refuses io_uring_setup() (seccomp,
 * sysctl kernel.io_uring_disabled), uring_new() returns -EOPNOTSUPP and the caller writes
 * directly.
 */
#ifndef QMAPD_URING_H
#define QMAPD_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define URING_SLOTS	 64  /* writes per submit at most; a full ring is flushed */
#define URING_HEAD_ROOM	 128 /* >= GRO_HDR_ROOM: virtio-net + Ethernet + IPv6 + TCP headers */
#define URING_MAX_IOVECS 65  /* 1 + GRO_MAX_SEGS */

struct uring;

/*
 * Called for every completed write, in submission order: res is what writev() would have
 * returned, or -errno; len is the bytes asked for (res < len: a short write). tag and arg are
 * the caller's, from uring_writev().
 */
typedef void (*uring_done_fn)(void *tag, uint32_t arg, int res, size_t len);

/* 0, -EOPNOTSUPP (no io_uring here), or -ENOMEM. */
int uring_new(uring_done_fn done, struct uring **ret);
/* Flushes first. NULL-safe. */
struct uring *uring_free(struct uring *u);

/*
 * Queue one writev(fd, iov, iovcnt) of len bytes (the iovecs' total, which the caller knows);
 * flushes first when every slot is taken. copy_head: copy
 * iov[0]'s bytes (<= URING_HEAD_ROOM) into the slot. Returns 0 or -EINVAL (too many iovecs
 * or too long a head; -EIO for a broken ring: nothing queued, the caller writes directly).
 */
int uring_writev(struct uring *u, int fd, const struct iovec *iov, int iovcnt, size_t len,
		 bool copy_head, void *tag, uint32_t arg);

/*
 * Submit what is queued and wait for every completion (each reported to done). Returns the
 * writes completed, or -errno when the submit failed: the writes without a completion are
 * reported with that error, and the ring is broken (uring_broken): free it, write directly.
 */
int uring_flush(struct uring *u);
bool uring_broken(const struct uring *u);

/* Writes queued and not yet flushed. */
unsigned uring_pending(const struct uring *u);

/* Counters: submit calls and writes submitted, for writes per submit. */
struct uring_stats {
	uint64_t submits;
	uint64_t writes;
};
const struct uring_stats *uring_get_stats(const struct uring *u);

#endif
