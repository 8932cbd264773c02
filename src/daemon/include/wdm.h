/* SPDX-License-Identifier: MIT */
/*
 * The wdm bridge: a raw-mode pseudo-terminal whose slave path libqmi/libmbim (and qmicli or
 * mbimcli through their proxies) open as if it were /dev/cdc-wdmN. Whole QMUX or MBIM
 * messages go between the pty master and the modem's control channel (the transport's
 * CONTROL endpoint). docs/ARCHITECTURE.md "Data flow", docs/PROTOCOLS.md §4.3.
 *
 * Rules this module keeps:
 * - qmapd holds one slave fd of its own, so the master never reads EIO while no client is
 *   attached.
 * - The pty keeps no message boundaries. Client bytes are reassembled into whole messages
 *   before the modem sees them; toward the client only whole messages are written, and a
 *   message the master took only in part is finished before anything else is written.
 * - Clients are counted with inotify (IN_OPEN / IN_CLOSE_*) on the slave node. Messages
 *   from the modem while nobody is attached are dropped (counted). When the last client
 *   goes and when the first one comes, bytes still queued toward the slave are flushed, so
 *   a new opener never reads a stale (or half) message: libqmi hangs up on a first byte
 *   other than 0x01.
 * - One kind of opener per pty: all through the proxy (qmicli -p) or one direct opener.
 *   Two direct openers steal each other's responses, as on a real cdc-wdm.
 * - The link must not be called cdc-wdmN: libmbim looks up sysfs by the basename.
 */
#ifndef QMAPD_WDM_H
#define QMAPD_WDM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ev_loop;

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
 * larger commands are MBIM fragments, each a message of its own.
 */
#define WDM_MBIM_MIN_MESSAGE 12
#define WDM_MBIM_MAX_MESSAGE 65536

/* Messages from the modem waiting for the client to read; whole messages are dropped beyond. */
#define WDM_OUT_QUEUE_SIZE (256 * 1024)

/*
 * Messages to the modem that the transport could not take at once (-EAGAIN, -ENOBUFS: every
 * control slot busy under uplink load) wait here, in order, and are retried every
 * WDM_RETRY_INTERVAL seconds; only a message that finds the queue full is dropped (counted
 * in to_modem_overflows). Room for the largest MBIM message and its length.
 */
#define WDM_TO_MODEM_QUEUE_SIZE (128 * 1024)
#define WDM_RETRY_INTERVAL	0.002

/*
 * One whole message to the modem; returns 0 or -errno (-ENOTCONN while it is absent,
 * -EAGAIN or -ENOBUFS to be retried).
 */
typedef int (*wdm_send_fn)(void *userdata, const uint8_t *msg, size_t len);

struct wdm_stats {
	uint64_t to_modem; /* whole messages handed to send() */
	uint64_t to_modem_bytes;
	uint64_t to_modem_errors;    /* send() failed: the message was dropped */
	uint64_t to_modem_deferred;  /* the transport was busy: queued, sent later */
	uint64_t to_modem_overflows; /* ... and the queue was full: dropped */
	uint64_t from_modem;	     /* messages accepted by wdm_deliver() */
	uint64_t from_modem_bytes;
	uint64_t from_modem_invalid; /* wdm_deliver() input that was not whole messages */
	uint64_t dropped_no_client;  /* from the modem while no client was attached */
	uint64_t dropped_queue_full; /* whole messages dropped: output queue full */
	uint64_t framing_errors;     /* client byte runs that could not start a message */
	uint64_t resyncs;	     /* ... after which a plausible start was found again */
	uint64_t discarded_bytes;    /* client bytes thrown away (framing, partial messages) */
	uint64_t partial_discards;   /* a client left (or came) with a partial message buffered */
	uint64_t stale_flushes;	     /* flushes that found bytes queued toward the slave */
	uint64_t stale_bytes;	     /* bytes those flushes discarded */
	uint64_t client_opens;
	uint64_t client_closes;
	uint64_t queue_high_water; /* most bytes ever in the output queue */
};

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

struct wdm;

/*
 * Open the pty (raw mode, slave mode 0660), keep one slave fd, watch the slave node for
 * opens, and point link_path (created with its directory if missing, replaced atomically)
 * at the slave. link_path may be NULL: clients then use wdm_slave_path().
 */
int wdm_new(struct ev_loop *loop, enum wdm_framing framing, const char *link_path, wdm_send_fn send,
	    void *userdata, struct wdm **ret);
/* NULL-safe; removes the link only while it still points at our slave. */
struct wdm *wdm_free(struct wdm *w);

const char *wdm_slave_path(const struct wdm *w);
const char *wdm_link_path(const struct wdm *w);
/* Clients attached now, as counted by inotify. */
unsigned wdm_clients(const struct wdm *w);

/*
 * Messages from the modem (one transfer: one or more whole messages) toward the client.
 * 0 when written or queued whole; -EBADMSG when they are not whole messages, -ENOTCONN
 * when no client is attached, -ENOBUFS when the output queue is full (all dropped whole,
 * counted), other -errno when the master failed.
 */
int wdm_deliver(struct wdm *w, const uint8_t *msg, size_t len);

void wdm_get_stats(const struct wdm *w, struct wdm_stats *ret);

#endif
