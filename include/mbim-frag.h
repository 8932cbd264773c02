/* SPDX-License-Identifier: MIT */
/*
 * Host-to-function MBIM messages fitted to the function's wMaxControlMessage (MBIM 1.0 §9.2,
 * §9.3.1): a client on qmapd's control link cannot know that size (libmbim looks for the USB
 * descriptors in sysfs and falls back to 4096), so the wdm bridge (src/daemon/transport/
 * wdm.c, for every transport) lowers the OPEN's MaxControlTransfer to it and cuts COMMAND
 * messages into fragments of at most that many bytes, reassembling a client's own fragments
 * first so the numbering stays whole.
 * Pure: no I/O, no logging.
 *
 * Every message starts with MessageType, MessageLength, TransactionId (le32); COMMAND adds
 * the fragment header TotalFragments, CurrentFragment (le32), and every fragment after the
 * first carries only the continuation of the bytes after the first one's 20-byte headers.
 */
#ifndef QMAPD_MBIM_FRAG_H
#define QMAPD_MBIM_FRAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MBIM_HEADER_SIZE      12
#define MBIM_FRAGMENT_HEADERS 20 /* message header + fragment header */
#define MBIM_OPEN_SIZE	      16
#define MBIM_MSG_OPEN	      1u
#define MBIM_MSG_COMMAND      3u
#define MBIM_FRAG_MAX_MESSAGE 65536 /* a whole reassembled COMMAND, headers included */

/* Lower an OPEN's MaxControlTransfer to max, in place; whether it was changed. */
bool mbim_open_clamp(uint8_t *msg, size_t len, uint32_t max);

/* A client's COMMAND being put together from its fragments. */
struct mbim_frag_asm {
	uint8_t buf[MBIM_FRAG_MAX_MESSAGE];
	size_t len; /* bytes in buf: the first fragment's headers, then all the continuation */
	uint32_t tid, total, next;
	bool busy;
};

/*
 * Feed one COMMAND fragment (len = its MessageLength). Returns 1 when the message is whole
 * (buf/len: one fragment's worth of headers with TotalFragments 1, then every byte), 0 while
 * fragments are missing, -EINVAL for a fragment that does not continue the message under
 * way (out of order, another transaction, bad header: the partial message is dropped; a
 * first fragment always starts a new one), -EMSGSIZE when the whole would exceed
 * MBIM_FRAG_MAX_MESSAGE.
 */
int mbim_frag_feed(struct mbim_frag_asm *a, const uint8_t *msg, size_t len);

/* Fragments of at most max bytes (max > 20) a whole COMMAND of len bytes takes. */
uint32_t mbim_frag_count(size_t len, size_t max);
/* Write fragment i of the whole COMMAND msg/len into out (room: max); its length. */
size_t mbim_frag_write(const uint8_t *msg, size_t len, size_t max, uint32_t i, uint8_t *out);

#endif
