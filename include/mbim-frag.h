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

#define MBIM_HEADER_SIZE	12
#define MBIM_FRAGMENT_HEADERS	20 /* message header + fragment header */
#define MBIM_OPEN_SIZE		16
#define MBIM_MSG_OPEN		1u
#define MBIM_MSG_CLOSE		2u
#define MBIM_MSG_COMMAND	3u
#define MBIM_MSG_OPEN_DONE	0x80000001u
#define MBIM_MSG_COMMAND_DONE	0x80000003u
#define MBIM_MSG_FUNCTION_ERROR 0x80000004u
#define MBIM_FRAG_MAX_MESSAGE	65536 /* a whole reassembled COMMAND, headers included */

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

/*
 * An OPEN must not reach a function that is open already: MBIM 1.0 §9.3.1 has the function
 * take it as host and function out of step and do what a CLOSE does first, which ends every
 * session (§9.3.2). So before a client's OPEN goes on, the wdm bridge asks the function
 * something harmless (a RADIO_STATE query, which every function answers): COMMAND_DONE means
 * it is open, and the bridge answers the OPEN itself; FUNCTION_ERROR NOT_OPENED means it is
 * closed, and the OPEN goes on. libmbim's mbim-proxy checks a device it believes open the
 * same way (a DEVICE_CAPS query, reopening on NOT_OPENED).
 */
#define MBIM_PROBE_SIZE	    48
#define MBIM_OPEN_DONE_SIZE 16

/* The probe (a BASIC_CONNECT RADIO_STATE query) with transaction tid into out; its length. */
size_t mbim_probe_write(uint8_t out[MBIM_PROBE_SIZE], uint32_t tid);
/* OPEN_DONE, status success, for transaction tid into out; its length. */
size_t mbim_open_done_write(uint8_t out[MBIM_OPEN_DONE_SIZE], uint32_t tid);

enum mbim_probe_answer {
	MBIM_PROBE_NOT_ANSWER, /* not about the probe's transaction */
	MBIM_PROBE_OPEN,       /* a COMMAND_DONE (any status, any fragment): the function is open */
	MBIM_PROBE_CLOSED,     /* FUNCTION_ERROR NOT_OPENED */
	MBIM_PROBE_ERROR,      /* another FUNCTION_ERROR: the function is in no known state */
};
/* What one message from the function (len bytes, MessageLength not trusted) says of the
 * probe with transaction tid. */
enum mbim_probe_answer mbim_probe_answer(const uint8_t *msg, size_t len, uint32_t tid);

/*
 * A function that is closed while its host side believes it open (it reset: a crash, a
 * watchdog, a replug behind the proxy's back) answers every COMMAND with FUNCTION_ERROR
 * NOT_OPENED (MBIM 1.0 §9.3.1) until an OPEN comes. mbim-proxy (libmbim before 1.32) takes
 * that NOT_OPENED as its cue to close its device by force, which leaves the device marked
 * open without a channel: every later command is answered NOT_OPENED by the proxy itself
 * and no OPEN is ever sent again. So the wdm bridge OPENs the function itself and hands the
 * client the error as MBIM_ERROR_UNKNOWN, which the proxy passes on without closing.
 */
#define MBIM_ERROR_UNKNOWN 6u /* MBIM_PROTOCOL_ERROR_UNKNOWN */
/* Whether one message from the function (len bytes) is a FUNCTION_ERROR NOT_OPENED. */
bool mbim_is_not_opened(const uint8_t *msg, size_t len);
/* FUNCTION_ERROR error for transaction tid into out; its length. */
#define MBIM_FUNCTION_ERROR_SIZE 16
size_t mbim_function_error_write(uint8_t out[MBIM_FUNCTION_ERROR_SIZE], uint32_t tid,
				 uint32_t error);
/* OPEN with transaction tid and MaxControlTransfer max into out; its length. */
size_t mbim_open_write(uint8_t out[MBIM_OPEN_SIZE], uint32_t tid, uint32_t max);

#endif
