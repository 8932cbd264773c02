/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "log.h"
#include "uring.h"

#ifdef QMAPD_HAVE_LIBURING
#include <liburing.h>

/*
 * SUBMIT_ALL: one bad SQE does not leave the rest unsubmitted (each gets its CQE).
 * SINGLE_ISSUER + DEFER_TASKRUN: only this thread uses the ring, and completion work runs when
 * we wait for it, not by interrupting us.
 */
#define URING_SETUP_FLAGS \
	(IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)

/* One queued write: what the kernel reads must live here until its completion. */
struct uring_slot {
	void *tag;
	uint32_t arg;
	int fd, iovcnt;
	size_t len; /* bytes of the write, to tell a short one */
	uint8_t head[URING_HEAD_ROOM] __attribute__((aligned(8)));
	struct iovec iov[URING_MAX_IOVECS];
};

struct uring {
	struct io_uring ring;
	uring_done_fn done;
	unsigned n;   /* slots queued */
	bool broken;  /* a submit failed: free the ring, write directly */
	bool wait_ok; /* the kernel refused RWF_NOWAIT on the devices: write without it */
	struct uring_stats stats;
	struct uring_slot slot[URING_SLOTS];
};

int uring_new(uring_done_fn done, struct uring **ret)
{
	struct uring *u = calloc(1, sizeof(*u));
	int r;

	if (!u)
		return -ENOMEM;
	/*
	 * No SQPOLL (a kernel thread per ring would cost a core), no IOPOLL (not a block
	 * device). A refusal (-EPERM by seccomp or kernel.io_uring_disabled, -ENOSYS) means
	 * plain writes, not an error.
	 */
	r = io_uring_queue_init(URING_SLOTS, &u->ring, URING_SETUP_FLAGS);
	if (r == -EINVAL) /* a kernel older than 6.1 */
		r = io_uring_queue_init(URING_SLOTS, &u->ring, 0);
	if (r < 0) {
		free(u);
		return r == -ENOMEM ? -ENOMEM : -EOPNOTSUPP;
	}
	u->done = done;
	*ret = u;
	return 0;
}

struct uring *uring_free(struct uring *u)
{
	if (!u)
		return NULL;
	if (!u->broken)
		uring_flush(u);
	io_uring_queue_exit(&u->ring);
	free(u);
	return NULL;
}

int uring_writev(struct uring *u, int fd, const struct iovec *iov, int iovcnt, bool copy_head,
		 void *tag, uint32_t arg)
{
	if (iovcnt < 1 || iovcnt > URING_MAX_IOVECS ||
	    (copy_head && iov[0].iov_len > URING_HEAD_ROOM))
		return -EINVAL;
	if (u->broken)
		return -EIO;
	if (u->n == URING_SLOTS && uring_flush(u) < 0)
		return -EIO;
	/* One SQE per slot and all of them consumed by each flush: there is always one. */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	assert(sqe);
	if (!sqe)
		return -EIO;
	struct uring_slot *s = &u->slot[u->n];
	memcpy(s->iov, iov, iovcnt * sizeof(*iov));
	if (copy_head) {
		memcpy(s->head, iov[0].iov_base, iov[0].iov_len);
		s->iov[0].iov_base = s->head;
	}
	s->tag = tag;
	s->arg = arg;
	s->fd = fd;
	s->iovcnt = iovcnt;
	s->len = 0;
	for (int i = 0; i < iovcnt; i++)
		s->len += iov[i].iov_len;
	io_uring_prep_writev(sqe, fd, s->iov, iovcnt, 0);
	/* Never wait for a full queue: -EAGAIN at once, as a non-blocking write() would. */
	sqe->rw_flags = u->wait_ok ? 0 : RWF_NOWAIT;
	io_uring_sqe_set_data64(sqe, u->n);
	u->n++;
	return 0;
}

/*
 * A TUN/TAP takes RWF_NOWAIT only since its file gained FMODE_NOWAIT (Linux 6.10 or so):
 * older kernels, Debian 12's 6.1 among them (seen in the VM tests), fail every such write
 * with -EOPNOTSUPP. Such a write is made directly, while its buffers are still ours, and the
 * ring's later writes go without the flag (io_uring hands them to a worker; a TAP write
 * never blocks).
 */
static int uring_write_waiting(struct uring *u, struct uring_slot *s)
{
	if (!u->wait_ok)
		log_info("datapath: the kernel refuses RWF_NOWAIT writes to the mux devices; "
			 "io_uring writes without it");
	u->wait_ok = true;
	ssize_t w = writev(s->fd, s->iov, s->iovcnt);
	return w < 0 ? -errno : (int)w;
}

int uring_flush(struct uring *u)
{
	unsigned n = u->n, seen = 0;
	uint64_t completed = 0; /* bit i: slot i has its completion */
	int r;

	if (n == 0)
		return 0;
	u->stats.submits++;
	u->stats.writes += n;
	do
		r = io_uring_submit_and_wait(&u->ring, n);
	while (r == -EINTR);
	/*
	 * A slot may be reused only when its completion is in: wait for every one. Writes to a
	 * TUN/TAP complete inline during the submit, so this normally finds all n at once.
	 */
	while (seen < n) {
		struct io_uring_cqe *cqe;
		unsigned head, k = 0;
		int w = r < 0 ? io_uring_peek_cqe(&u->ring, &cqe)
			      : io_uring_wait_cqe(&u->ring, &cqe);
		if (w == -EINTR)
			continue;
		if (w < 0) {
			r = r < 0 ? r : w;
			break;
		}
		io_uring_for_each_cqe(&u->ring, head, cqe)
		{
			uint64_t i = io_uring_cqe_get_data64(cqe);
			if (i < n && !(completed & (UINT64_C(1) << i))) {
				completed |= UINT64_C(1) << i;
				int res = cqe->res;
				if (res == -EOPNOTSUPP)
					res = uring_write_waiting(u, &u->slot[i]);
				u->done(u->slot[i].tag, u->slot[i].arg, res, u->slot[i].len);
				seen++;
			}
			k++;
		}
		io_uring_cq_advance(&u->ring, k);
	}
	u->n = 0;
	if (seen == n)
		return (int)n;
	/*
	 * The submit itself failed: SQEs may still sit in the submission queue, pointing at our
	 * slots. The ring is unusable; the caller frees it (which discards them) and writes
	 * directly from now on. Report the writes that never completed as failed.
	 */
	u->broken = true;
	for (unsigned i = 0; i < n; i++)
		if (!(completed & (UINT64_C(1) << i)))
			u->done(u->slot[i].tag, u->slot[i].arg, r < 0 ? r : -EIO, u->slot[i].len);
	return r < 0 ? r : -EIO;
}

bool uring_broken(const struct uring *u)
{
	return u->broken;
}

unsigned uring_pending(const struct uring *u)
{
	return u->n;
}

const struct uring_stats *uring_get_stats(const struct uring *u)
{
	return &u->stats;
}

#else /* !QMAPD_HAVE_LIBURING: built without liburing, always the plain-write fallback */

int uring_new(uring_done_fn done, struct uring **ret)
{
	(void)done;
	(void)ret;
	return -EOPNOTSUPP;
}

struct uring *uring_free(struct uring *u)
{
	(void)u;
	return NULL;
}

int uring_writev(struct uring *u, int fd, const struct iovec *iov, int iovcnt, bool copy_head,
		 void *tag, uint32_t arg)
{
	(void)u;
	(void)fd;
	(void)iov;
	(void)iovcnt;
	(void)copy_head;
	(void)tag;
	(void)arg;
	return -EOPNOTSUPP;
}

int uring_flush(struct uring *u)
{
	(void)u;
	return 0;
}

unsigned uring_pending(const struct uring *u)
{
	(void)u;
	return 0;
}

bool uring_broken(const struct uring *u)
{
	(void)u;
	return true;
}

const struct uring_stats *uring_get_stats(const struct uring *u)
{
	(void)u;
	return NULL;
}

#endif
