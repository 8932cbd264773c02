/* SPDX-License-Identifier: MIT */
/*
 * Control-channel message framing, QMUX (QMI) and MBIM: where a message ends in a byte
 * stream, and the reassembly of a stream (a pty keeps no boundaries) into whole messages.
 * Pure: no I/O, no logging; the wdm bridge (src/daemon) uses it, the fuzzer drives it.
 */
#ifndef QMAPD_WDM_FRAME_H
#define QMAPD_WDM_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum wdm_framing {
	WDM_FRAMING_QMUX,
	WDM_FRAMING_MBIM,
};

/*
 * QMUX: 0x01 marker, then le16 length (counting itself, not the marker), flags, service,
 * client id, and the QMI header (6 bytes for CTL, 7 for services) with an le16 TLV length
 * that must fill the rest exactly (libqmi's own check). libqmi has no limit below the u16
 * length field, but Linux qmi_wwan registers cdc-wdm with a 4096-byte wMaxCommand, so no
 * request larger than that reaches a real modem and a response comes in GET_ENCAPSULATED_
 * RESPONSE transfers of that size. Twice that bounds how long a bogus length can stall the
 * reassembly.
 */
#define WDM_QMUX_MARKER	     0x01
#define WDM_QMUX_MIN_MESSAGE 12 /* marker + 5 QMUX + 6 CTL header, no TLVs */
#define WDM_QMUX_MAX_MESSAGE 8192

/*
 * MBIM: le32 MessageType, le32 MessageLength, le32 TransactionId. MessageLength is bounded
 * by MaxControlTransfer, which fits the u16 wMaxControlMessage (libmbim uses 4096 on a pty);
 * larger commands are MBIM fragments, each a message of its own (fitted to the function's
 * wMaxControlMessage by the bridge with mbim-frag.h).
 */
#define WDM_MBIM_MIN_MESSAGE 12
#define WDM_MBIM_MAX_MESSAGE 65536

/*
 * One whole message to the modem; returns 0 or -errno (-ENOTCONN while it is absent,
 * -EAGAIN or -ENOBUFS to be retried).
 */
typedef int (*wdm_send_fn)(void *userdata, const uint8_t *msg, size_t len);

/*
 * Reassembly of the client byte stream into whole messages; pure (no I/O, no logging), so
 * it is fuzzed on its own. The buffer is allocated once and holds one largest message.
 * Read straight into wdm_reasm_space(), then wdm_reasm_commit() hands every whole message
 * to `fn` (its return value is ignored) and keeps the partial tail.
 */
struct wdm_reasm {
	enum wdm_framing framing;
	uint8_t *buf;
	size_t len;
	size_t cap;
	int resyncing; /* inside a run of bytes that cannot start a message */
	uint64_t messages;
	uint64_t framing_errors;
	uint64_t resyncs;
	uint64_t discarded_bytes;
	uint64_t partial_discards;
};

int wdm_reasm_init(struct wdm_reasm *r, enum wdm_framing framing);
void wdm_reasm_done(struct wdm_reasm *r);
/* Where the next bytes go; *ret_avail is always > 0 after init. */
uint8_t *wdm_reasm_space(struct wdm_reasm *r, size_t *ret_avail);
void wdm_reasm_commit(struct wdm_reasm *r, size_t n, wdm_send_fn fn, void *userdata);
/* Throw away a buffered partial message (a client left); counted. */
void wdm_reasm_reset(struct wdm_reasm *r);

/*
 * Length of the first whole message at buf: > 0 when all of it is there, 0 when more bytes
 * are needed to tell, -EBADMSG when buf cannot be the start of a message. Pure.
 */
ssize_t wdm_frame_length(enum wdm_framing framing, const uint8_t *buf, size_t len);
/* The largest message of a framing, or 0 for one that does not exist. */
size_t wdm_frame_max_message(enum wdm_framing framing);

#endif
