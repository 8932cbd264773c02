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
 * - MBIM: a client's OPEN reaches only a closed function. An open one (left by an earlier
 *   qmapd) would end its sessions on a second OPEN (MBIM 1.0 §9.3.1), so the bridge asks
 *   first and answers the OPEN itself when the function is open (mbim-frag.h).
 * - MBIM: a function that answers a client's COMMAND NOT_OPENED (it was reset while open)
 *   is OPENed by the bridge, and the client sees the error as UNKNOWN, which mbim-proxy
 *   does not take as a reason to close its device for good (mbim-frag.h).
 */
#ifndef QMAPD_WDM_H
#define QMAPD_WDM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wdm-frame.h"

struct ev_loop;

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

struct wdm_stats {
	uint64_t to_modem; /* whole messages handed to send() (each MBIM fragment one) */
	uint64_t to_modem_bytes;
	uint64_t to_modem_errors;	/* send() failed: the message was dropped */
	uint64_t to_modem_deferred;	/* the transport was busy: queued, sent later */
	uint64_t to_modem_overflows;	/* ... and the queue was full: dropped */
	uint64_t to_modem_split;	/* MBIM COMMANDs sent in fragments (wdm_set_max_message) */
	uint64_t to_modem_open_clamped; /* MBIM OPENs whose MaxControlTransfer was lowered */
	uint64_t open_probes;	/* MBIM OPENs held to ask whether the function is open already */
	uint64_t open_answered; /* ... answered here: it was, and keeps its sessions */
	uint64_t open_probe_timeouts;	   /* ... the function did not say: the OPEN went on */
	uint64_t not_opened;		   /* client COMMANDs the function answered NOT_OPENED */
	uint64_t function_reopens;	   /* ... after which the bridge OPENed it (mbim-frag.h) */
	uint64_t function_reopen_timeouts; /* ... and got no OPEN_DONE in time */
	uint64_t to_modem_frag_errors;	   /* client fragments that continued no COMMAND: dropped */
	uint64_t partial_fragments;	   /* a client left with a COMMAND missing fragments */
	uint64_t from_modem;		   /* messages accepted by wdm_deliver() */
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
/*
 * MBIM: the function's wMaxControlMessage (0 = unknown; else raised to MBIM's minimum of 64).
 * A client cannot learn it (libmbim assumes 4096 when it finds no descriptors file, as for
 * this pty), so the bridge fits what it sends, for every transport (mbim-frag.h): an OPEN's
 * MaxControlTransfer is lowered to it, and a COMMAND larger than it, or arriving in the
 * client's own fragments, is put together and sent on in fragments of that size. Ignored
 * for QMUX.
 */
void wdm_set_max_message(struct wdm *w, size_t max);
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

/*
 * MBIM: fn(userdata) when the bridge has OPENed again a function that answered a client's
 * COMMAND NOT_OPENED (it was reset while open: mbim-frag.h). Whatever the function held
 * (sessions, subscriptions) is gone; the client is told nothing else.
 */
void wdm_set_on_reopened(struct wdm *w, void (*fn)(void *userdata), void *userdata);

#endif
