/* SPDX-License-Identifier: MIT */
/*
 * The wdm bridge: pty master <-> the modem's control channel. See wdm.h for the rules;
 * the traps behind them are in docs/PROTOCOLS.md §4.3.
 */
#include <assert.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "mkdir.h"
#include "byteorder.h"
#include "log.h"
#include "macro.h"
#include "mbim-frag.h"
#include "usb-spec.h"
#include "wdm.h"

/* Reads per wakeup before the loop gets a turn; a drain (client change) reads up to this
 * many times more. */
#define WDM_READS_PER_WAKEUP 16
#define WDM_DRAIN_READS	     (16 * WDM_READS_PER_WAKEUP)
/* MBIM: how long a client's OPEN waits for the function to say whether it is open already
 * (mbim-frag.h); libmbim sends its OPEN again after 5 s. Probes use transaction ids from
 * here on, far from the clients' (libmbim counts up from 1). */
#define WDM_PROBE_TIMEOUT  1.0
#define WDM_PROBE_TID_BASE 0xf0000000u
/* MBIM: the bridge's own OPEN of a function that answered NOT_OPENED (mbim-frag.h): its
 * transaction ids, and how long it waits for OPEN_DONE before another NOT_OPENED may send
 * one again (libmbim waits 5 s before it asks again). */
#define WDM_REOPEN_TID_BASE 0xf8000000u
#define WDM_REOPEN_TIMEOUT  5.0

struct wdm {
	struct ev_loop *loop;
	enum wdm_framing framing;
	char *link_path; /* NULL: no link */
	char slave_path[64];
	const char *name; /* for log lines: the link, or the slave without one */

	int master_fd;
	int slave_fd; /* ours, never read: keeps the master from reading EIO */
	int inotify_fd;
	ev_io read_io;
	ev_io write_io;
	ev_io inotify_io;

	wdm_send_fn send;
	void *userdata;

	/* Messages the transport could not take yet: records of le32 length + bytes. */
	uint8_t *pend;
	size_t pend_len;
	ev_timer retry;
	bool overflow_logged;

	struct wdm_reasm reasm;
	size_t max_message;	    /* the function's wMaxControlMessage (MBIM); 0 unknown */
	uint8_t *frag;		    /* MBIM: one fragment (or OPEN) fitted to it, allocated once */
	struct mbim_frag_asm *fasm; /* MBIM: a client's COMMAND put together, allocated once */
	bool frag_error_logged;	    /* a client's broken fragment run is logged once */
	/* MBIM: a client's OPEN held while the function is asked whether it is open already;
	 * answered here when it is, so that an OPEN does not end its sessions (mbim-frag.h). */
	bool probing;
	uint32_t probe_tid; /* the last probe's: its late answers are dropped too; 0 none */
	uint8_t held_open[MBIM_OPEN_SIZE];
	ev_timer probe_timer;
	/* MBIM: the function answered a client's COMMAND NOT_OPENED: the bridge's own OPEN */
	bool reopening;
	uint32_t reopen_tid; /* the last one's: its late OPEN_DONE is dropped too; 0 none */
	ev_timer reopen_timer;
	void (*on_reopened)(void *userdata);
	void *reopened_userdata;

	/* Output queue toward the client, allocated once: bytes [out_head, out_tail). Only
	 * whole messages enter it; the first one may already be partly written. */
	uint8_t *out;
	size_t out_head;
	size_t out_tail;

	unsigned clients;
	bool send_failing;	/* logged once until a send succeeds again */
	bool queue_full_logged; /* logged once until the queue drains */
	bool invalid_logged;	/* the modem's first malformed transfer is logged */
	bool read_failed;
	struct wdm_stats stats;
};

static const char *framing_name(enum wdm_framing framing)
{
	switch (framing) {
	case WDM_FRAMING_QMUX:
		return "qmux";
	case WDM_FRAMING_MBIM:
		return "mbim";
	}
	return "?";
}

static bool send_busy(int r)
{
	return r == -EAGAIN || r == -ENOBUFS;
}

static int wdm_pend(struct wdm *w, const uint8_t *msg, size_t len)
{
	if (w->pend_len + 4 + len > WDM_TO_MODEM_QUEUE_SIZE) {
		w->stats.to_modem_overflows++;
		if (!w->overflow_logged)
			log_warning("wdm %s: %zu bytes already wait for the modem; dropped a "
				    "%zu-byte message (further ones are only counted: "
				    "to-modem-overflows)",
				    w->name, w->pend_len, len);
		w->overflow_logged = true;
		return -ENOBUFS;
	}
	w->pend[w->pend_len] = (uint8_t)len;
	w->pend[w->pend_len + 1] = (uint8_t)(len >> 8);
	w->pend[w->pend_len + 2] = (uint8_t)(len >> 16);
	w->pend[w->pend_len + 3] = (uint8_t)(len >> 24);
	memcpy(w->pend + w->pend_len + 4, msg, len);
	w->pend_len += 4 + len;
	w->stats.to_modem_deferred++;
	if (!ev_is_active(&w->retry))
		ev_timer_again(w->loop, &w->retry);
	return 0;
}

/* Send what waits, in order, until the transport is busy again. */
static void wdm_on_retry(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct wdm *w = t->data;
	size_t off = 0;

	(void)revents;
	while (off < w->pend_len) {
		size_t len = get_le32(w->pend + off);
		int r = w->send(w->userdata, w->pend + off + 4, len);

		if (send_busy(r))
			break;
		if (r < 0) {
			w->stats.to_modem_errors++;
			if (!w->send_failing)
				log_warning_errno(r,
						  "wdm %s: modem did not take a %zu-byte message, "
						  "dropped (further failures are only counted)",
						  w->name, len);
			w->send_failing = true;
		} else {
			w->send_failing = false;
			w->stats.to_modem++;
			w->stats.to_modem_bytes += len;
		}
		off += 4 + len;
	}
	memmove(w->pend, w->pend + off, w->pend_len - off);
	w->pend_len -= off;
	if (w->pend_len == 0) {
		ev_timer_stop(loop, &w->retry);
		w->overflow_logged = false;
	}
}

static int wdm_forward_one(struct wdm *w, const uint8_t *msg, size_t len);
static int wdm_to_client(struct wdm *w, const uint8_t *msg, size_t len, size_t count);

/*
 * MBIM toward a function whose wMaxControlMessage (max_message) the client cannot know
 * (mbim-frag.h): the OPEN asks for no more than it, and a COMMAND longer than it, or arriving
 * in the client's own fragments, is put together and sent on in fragments of that size. The
 * fragments follow each other through wdm_forward_one(), which keeps them in order.
 */
static int wdm_mbim_fit(struct wdm *w, const uint8_t *msg, size_t len)
{
	uint32_t type = get_le32(msg);

	if (type == MBIM_MSG_OPEN && len >= MBIM_OPEN_SIZE && len <= w->max_message) {
		memcpy(w->frag, msg, len);
		if (mbim_open_clamp(w->frag, len, (uint32_t)w->max_message)) {
			w->stats.to_modem_open_clamped++;
			log_debug("wdm %s: MBIM OPEN's MaxControlTransfer lowered to %zu", w->name,
				  w->max_message);
		}
		return wdm_forward_one(w, w->frag, len);
	}
	/* Anything else that fits goes as it is; what does not fit and is no COMMAND cannot be
	 * cut, and the transport refuses it (counted in to_modem_errors). */
	if (type != MBIM_MSG_COMMAND || len < MBIM_FRAGMENT_HEADERS ||
	    (len <= w->max_message && get_le32(msg + 12) == 1 && !w->fasm->busy))
		return wdm_forward_one(w, msg, len);

	int r = mbim_frag_feed(w->fasm, msg, len);
	if (r < 0) {
		w->stats.to_modem_frag_errors++;
		if (!w->frag_error_logged)
			log_warning_errno(
				r,
				"wdm %s: MBIM fragment %u/%u of transaction %u does not continue "
				"a command, dropped with what came before (further ones are "
				"only counted: to-modem-frag-errors)",
				w->name, get_le32(msg + 16), get_le32(msg + 12), get_le32(msg + 8));
		w->frag_error_logged = true;
		return r;
	}
	if (r == 0)
		return 0; /* more of the client's fragments to come */
	w->frag_error_logged = false;

	uint32_t n = mbim_frag_count(w->fasm->len, w->max_message);
	if (n > 1)
		w->stats.to_modem_split++;
	r = 0;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		size_t flen =
			mbim_frag_write(w->fasm->buf, w->fasm->len, w->max_message, i, w->frag);
		r = wdm_forward_one(w, w->frag, flen);
	}
	return r;
}

/* One whole client message to the modem, fitted to the function (wdm_set_max_message()). */
static int wdm_forward_fit(struct wdm *w, const uint8_t *msg, size_t len)
{
	if (w->framing == WDM_FRAMING_MBIM && w->max_message)
		return wdm_mbim_fit(w, msg, len);
	return wdm_forward_one(w, msg, len);
}

/* ---- MBIM: no OPEN for a function that is open already (mbim-frag.h) ---------------- */

static void wdm_probe_end(struct wdm *w)
{
	w->probing = false;
	ev_timer_stop(w->loop, &w->probe_timer);
}

/* The function is closed, or did not say: the held OPEN goes on. */
static void wdm_open_send(struct wdm *w)
{
	wdm_probe_end(w);
	(void)wdm_forward_fit(w, w->held_open, sizeof(w->held_open));
}

static void wdm_on_probe_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct wdm *w = t->data;

	(void)loop;
	(void)revents;
	w->stats.open_probe_timeouts++;
	log_warning("wdm %s: the MBIM function did not answer within %.0f s whether it is open: "
		    "the client's OPEN goes on (it ends any session the function still has)",
		    w->name, WDM_PROBE_TIMEOUT);
	wdm_open_send(w);
}

/* The function's answer to the probe (its late answers are dropped without a word). */
static void wdm_probe_answered(struct wdm *w, enum mbim_probe_answer a)
{
	uint8_t done[MBIM_OPEN_DONE_SIZE];

	if (!w->probing)
		return;
	switch (a) {
	case MBIM_PROBE_OPEN:
		/* Open since an earlier qmapd (a restart, a crash): an OPEN would end its
		 * sessions, so the client's is answered here and the function keeps its state. */
		wdm_probe_end(w);
		w->stats.open_answered++;
		log_info("wdm %s: the MBIM function is open already: the client's OPEN is answered "
			 "here, the function keeps its sessions",
			 w->name);
		(void)wdm_to_client(w, done, mbim_open_done_write(done, get_le32(w->held_open + 8)),
				    1);
		return;
	case MBIM_PROBE_CLOSED:
		log_debug("wdm %s: the MBIM function is closed: the client's OPEN goes on",
			  w->name);
		wdm_open_send(w);
		return;
	case MBIM_PROBE_ERROR:
		log_info("wdm %s: the MBIM function answered the probe with an error: the client's "
			 "OPEN goes on",
			 w->name);
		wdm_open_send(w);
		return;
	case MBIM_PROBE_NOT_ANSWER:
		return;
	}
}

/*
 * The function answered a client's COMMAND NOT_OPENED: it is closed while the client (and
 * mbim-proxy) believe it open. The client gets the error as UNKNOWN, so that mbim-proxy
 * does not close its device by force and leave it unusable (mbim-frag.h), and the bridge
 * OPENs the function itself, once for every NOT_OPENED until the OPEN_DONE.
 */
static int wdm_not_opened(struct wdm *w, const uint8_t *msg)
{
	uint8_t err[MBIM_FUNCTION_ERROR_SIZE], open[MBIM_OPEN_SIZE];

	w->stats.not_opened++;
	int r = wdm_to_client(
		w, err, mbim_function_error_write(err, get_le32(msg + 8), MBIM_ERROR_UNKNOWN), 1);
	if (w->reopening)
		return r;
	w->reopening = true;
	w->reopen_tid = WDM_REOPEN_TID_BASE + (uint32_t)(w->stats.function_reopens & 0xffffff);
	w->stats.function_reopens++;
	log_warning("wdm %s: the MBIM function answered transaction %u NOT_OPENED: it was reset "
		    "while its host side was open; opening it again (%" PRIu64 " time%s now)",
		    w->name, get_le32(msg + 8), w->stats.function_reopens,
		    w->stats.function_reopens == 1 ? "" : "s");
	ev_timer_set(&w->reopen_timer, WDM_REOPEN_TIMEOUT, 0.);
	ev_timer_start(w->loop, &w->reopen_timer);
	(void)wdm_forward_one(w, open,
			      mbim_open_write(open, w->reopen_tid,
					      w->max_message ? (uint32_t)w->max_message : 4096));
	return r;
}

static void wdm_on_reopen_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct wdm *w = t->data;

	(void)loop;
	(void)revents;
	w->reopening = false;
	w->stats.function_reopen_timeouts++;
	log_warning("wdm %s: the MBIM function did not answer the bridge's OPEN within %.0f s; "
		    "the next NOT_OPENED sends another",
		    w->name, WDM_REOPEN_TIMEOUT);
}

/* OPEN_DONE for the bridge's own OPEN (late ones after a timeout are dropped too). */
static void wdm_reopen_answered(struct wdm *w, const uint8_t *msg, size_t len)
{
	uint32_t status = len >= 16 ? get_le32(msg + 12) : 1;

	if (!w->reopening)
		return;
	w->reopening = false;
	ev_timer_stop(w->loop, &w->reopen_timer);
	if (status != 0) {
		log_warning("wdm %s: the MBIM function refused the bridge's OPEN (status %u)",
			    w->name, status);
		return;
	}
	log_debug("wdm %s: the MBIM function is open again", w->name);
	if (w->on_reopened)
		w->on_reopened(w->reopened_userdata);
}

static int wdm_open_hold(struct wdm *w, const uint8_t *msg)
{
	uint8_t probe[MBIM_PROBE_SIZE];

	/* A client asking again (libmbim, after 5 s) is answered by the probe under way. */
	memcpy(w->held_open, msg, sizeof(w->held_open));
	if (w->probing)
		return 0;
	w->probing = true;
	w->probe_tid = WDM_PROBE_TID_BASE + (uint32_t)(w->stats.open_probes & 0xffffff);
	w->stats.open_probes++;
	ev_timer_set(&w->probe_timer, WDM_PROBE_TIMEOUT, 0.);
	ev_timer_start(w->loop, &w->probe_timer);
	if (wdm_forward_one(w, probe, mbim_probe_write(probe, w->probe_tid)) < 0)
		wdm_open_send(w); /* counted and logged there; the OPEN may fare no better */
	return 0;
}

/* The reassembler's callback: one whole client message toward the modem. */
static int wdm_forward(void *userdata, const uint8_t *msg, size_t len)
{
	struct wdm *w = userdata;

	if (w->framing == WDM_FRAMING_MBIM && len == MBIM_OPEN_SIZE &&
	    get_le32(msg) == MBIM_MSG_OPEN && get_le32(msg + 4) == MBIM_OPEN_SIZE)
		return wdm_open_hold(w, msg);
	return wdm_forward_fit(w, msg, len);
}

static int wdm_forward_one(struct wdm *w, const uint8_t *msg, size_t len)
{
	/* Behind others that wait, so the modem sees requests in the order they were made. */
	if (w->pend_len > 0)
		return wdm_pend(w, msg, len);
	int r = w->send(w->userdata, msg, len);
	if (send_busy(r))
		return wdm_pend(w, msg, len);
	if (r < 0) {
		w->stats.to_modem_errors++;
		if (!w->send_failing)
			log_warning_errno(r,
					  "wdm %s: modem did not take a %zu-byte message, dropped "
					  "(further failures are only counted)",
					  w->name, len);
		w->send_failing = true;
		return r;
	}
	w->send_failing = false;
	w->stats.to_modem++;
	w->stats.to_modem_bytes += len;
	return 0;
}

/* Read what the clients wrote; up to max_reads reads. Returns true when the master is empty. */
static bool wdm_read_master(struct wdm *w, unsigned max_reads)
{
	if (w->read_failed)
		return true;

	for (unsigned i = 0; i < max_reads; i++) {
		size_t avail;
		uint8_t *p = wdm_reasm_space(&w->reasm, &avail);
		ssize_t n = read(w->master_fd, p, avail);
		if (n > 0) {
			wdm_reasm_commit(&w->reasm, (size_t)n, wdm_forward, w);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		/* EIO would mean no slave fd is open, but we hold one: something is badly
		 * wrong; stop reading rather than spin. */
		log_error_errno(n < 0 ? errno : EIO,
				"wdm %s: reading the pty master failed, giving up", w->name);
		w->read_failed = true;
		ev_io_stop(w->loop, &w->read_io);
		return true;
	}
	return false;
}

static void wdm_on_read(struct ev_loop *loop, ev_io *io, int revents)
{
	(void)loop;
	(void)revents;
	wdm_read_master(io->data, WDM_READS_PER_WAKEUP);
}

static void wdm_queue_clear(struct wdm *w)
{
	w->out_head = w->out_tail = 0;
	w->queue_full_logged = false;
	ev_io_stop(w->loop, &w->write_io);
}

/*
 * Throw away whatever waits for the client: in the slave's input and in our queue. The
 * bytes are read off our own slave fd rather than only tcflush()ed: a read waits for the
 * tty's flip-buffer work, so bytes the master took a moment ago are gone too, and counted
 * exactly (TIOCINQ misses those still in the flip buffer).
 */
static void wdm_flush_stale(struct wdm *w, const char *why)
{
	uint8_t scratch[4096];
	size_t stale = 0;

	/* The tty holds at most its 64 KiB flip buffer plus the 4 KiB line buffer. */
	for (unsigned i = 0; i < 64; i++) {
		ssize_t n = read(w->slave_fd, scratch, sizeof(scratch));
		if (n > 0)
			stale += (size_t)n;
		else if (!(n < 0 && errno == EINTR))
			break;
	}
	if (tcflush(w->slave_fd, TCIFLUSH) < 0)
		log_warning_errno(errno, "wdm %s: flushing the slave's input failed", w->name);

	size_t queued = w->out_tail - w->out_head;
	wdm_queue_clear(w);

	if (stale > 0 || queued > 0) {
		w->stats.stale_flushes++;
		w->stats.stale_bytes += stale + queued;
		log_debug("wdm %s: %s: flushed %zu stale bytes in the pty and %zu queued", w->name,
			  why, stale, queued);
	}
}

/* A COMMAND missing fragments cannot be finished by another client. */
static void wdm_frag_reset(struct wdm *w)
{
	if (w->fasm && w->fasm->busy) {
		w->fasm->busy = false;
		w->stats.partial_fragments++;
	}
}

static void wdm_client_opened(struct wdm *w)
{
	w->stats.client_opens++;
	if (w->clients++ > 0) {
		log_warning("wdm %s: %u openers at once: they will take each other's responses "
			    "(use the proxy: qmicli -p / mbimcli -p)",
			    w->name, w->clients);
		return;
	}
	log_debug("wdm %s: client attached", w->name);

	/* Flush before reading the master: whatever the new client already asked for is
	 * answered after this point and must not be flushed with the stale bytes. */
	wdm_flush_stale(w, "client opened");
	wdm_frag_reset(w); /* the last client's, before the new one's fragments are read */
	wdm_read_master(w, WDM_DRAIN_READS);
	wdm_reasm_reset(&w->reasm);
}

static void wdm_client_closed(struct wdm *w)
{
	w->stats.client_closes++;
	if (w->clients == 0)
		return; /* an open we never saw (the inotify queue overflowed) */
	if (--w->clients > 0)
		return;
	log_debug("wdm %s: last client detached", w->name);

	/* Its last messages (a CID release, say) still go to the modem; a partial one cannot
	 * be finished by anyone. */
	wdm_read_master(w, WDM_DRAIN_READS);
	wdm_reasm_reset(&w->reasm);
	wdm_frag_reset(w);
	wdm_flush_stale(w, "client closed");
	/* Nobody waits for the held OPEN any more. */
	wdm_probe_end(w);
}

static void wdm_on_inotify(struct ev_loop *loop, ev_io *io, int revents)
{
	(void)loop;
	(void)revents;
	struct wdm *w = io->data;
	/* Room for many events; ours carry no name. */
	uint8_t buf[64 * sizeof(struct inotify_event)]
		__attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(w->inotify_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			log_error_errno(n < 0 ? errno : EIO, "wdm %s: reading inotify failed",
					w->name);
			ev_io_stop(w->loop, &w->inotify_io);
			return;
		}

		for (size_t off = 0; off + sizeof(struct inotify_event) <= (size_t)n;) {
			const struct inotify_event *e = (const void *)(buf + off);
			off += sizeof(*e) + e->len;

			if (e->mask & IN_Q_OVERFLOW)
				log_warning("wdm %s: inotify queue overflowed, client count "
					    "may be wrong",
					    w->name);
			if (e->mask & IN_OPEN)
				wdm_client_opened(w);
			if (e->mask & IN_CLOSE)
				wdm_client_closed(w);
			if (e->mask & IN_IGNORED) {
				log_error("wdm %s: slave node %s went away", w->name,
					  w->slave_path);
				ev_io_stop(w->loop, &w->inotify_io);
				return;
			}
		}
	}
}

static void wdm_on_write(struct ev_loop *loop, ev_io *io, int revents)
{
	(void)loop;
	(void)revents;
	struct wdm *w = io->data;

	while (w->out_head < w->out_tail) {
		ssize_t n = write(w->master_fd, w->out + w->out_head, w->out_tail - w->out_head);
		if (n > 0) {
			w->out_head += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		log_warning_errno(
			n < 0 ? errno : EIO,
			"wdm %s: writing to the pty master failed, dropping %zu queued bytes",
			w->name, w->out_tail - w->out_head);
		break;
	}
	wdm_queue_clear(w);
}

static void wdm_queue_append(struct wdm *w, const uint8_t *data, size_t len)
{
	/* The caller made room: a whole message or nothing enters the queue. */
	assert(w->out_head <= w->out_tail && w->out_tail - w->out_head <= WDM_OUT_QUEUE_SIZE - len);
	if (WDM_OUT_QUEUE_SIZE - w->out_tail < len) {
		memmove(w->out, w->out + w->out_head, w->out_tail - w->out_head);
		w->out_tail -= w->out_head;
		w->out_head = 0;
	}
	memcpy(w->out + w->out_tail, data, len);
	w->out_tail += len;
	if (w->out_tail - w->out_head > w->stats.queue_high_water)
		w->stats.queue_high_water = w->out_tail - w->out_head;
	ev_io_start(w->loop, &w->write_io);
}

static bool wdm_reopen_answer(const struct wdm *w, const uint8_t *msg, size_t len)
{
	return w->reopen_tid && len >= MBIM_HEADER_SIZE && get_le32(msg) == MBIM_MSG_OPEN_DONE &&
	       get_le32(msg + 8) == w->reopen_tid;
}

/* One message from an MBIM function that the bridge handles (more than passing it on). */
static bool wdm_own(const struct wdm *w, const uint8_t *msg, size_t len)
{
	return (w->probe_tid &&
		mbim_probe_answer(msg, len, w->probe_tid) != MBIM_PROBE_NOT_ANSWER) ||
	       mbim_is_not_opened(msg, len) || wdm_reopen_answer(w, msg, len);
}

int wdm_deliver(struct wdm *w, const uint8_t *msg, size_t len)
{
	/* Only whole messages may reach the client: one bad byte and libqmi hangs up. */
	size_t off = 0, count = 0;
	bool own = false;
	while (off < len) {
		ssize_t m = wdm_frame_length(w->framing, msg + off, len - off);
		if (m <= 0)
			break;
		if (w->framing == WDM_FRAMING_MBIM && wdm_own(w, msg + off, (size_t)m))
			own = true;
		off += (size_t)m;
		count++;
	}
	if (len == 0 || off != len) {
		w->stats.from_modem_invalid++;
		if (!w->invalid_logged)
			log_warning("wdm %s: dropped a %zu-byte transfer from the modem that is no "
				    "whole %s message (further ones are only counted)",
				    w->name, len, framing_name(w->framing));
		w->invalid_logged = true;
		return -EBADMSG;
	}
	if (!own)
		return wdm_to_client(w, msg, len, count);

	/* The probe's answer (all its fragments) and the answer to the bridge's own OPEN are
	 * the bridge's; a NOT_OPENED goes on changed; the rest goes on as it is. */
	int r = 0;
	for (off = 0; off < len;) {
		size_t m = (size_t)wdm_frame_length(w->framing, msg + off, len - off);
		const uint8_t *p = msg + off;
		enum mbim_probe_answer a = w->probe_tid ? mbim_probe_answer(p, m, w->probe_tid)
							: MBIM_PROBE_NOT_ANSWER;
		int k = 0;
		if (a != MBIM_PROBE_NOT_ANSWER)
			wdm_probe_answered(w, a);
		else if (mbim_is_not_opened(p, m))
			k = wdm_not_opened(w, p);
		else if (wdm_reopen_answer(w, p, m))
			wdm_reopen_answered(w, p, m);
		else
			k = wdm_to_client(w, p, m, 1);
		if (k < 0)
			r = k;
		off += m;
	}
	return r;
}

/* Whole messages (count of them) toward the client: written, queued or dropped (counted). */
static int wdm_to_client(struct wdm *w, const uint8_t *msg, size_t len, size_t count)
{
	if (w->clients == 0) {
		/* Nobody would read it; the next opener must not. */
		w->stats.dropped_no_client += count;
		return -ENOTCONN;
	}

	size_t queued = w->out_tail - w->out_head;
	if (len > WDM_OUT_QUEUE_SIZE - queued) {
		w->stats.dropped_queue_full += count;
		if (!w->queue_full_logged)
			log_warning("wdm %s: client is not reading, %zu bytes queued: dropping "
				    "whole messages",
				    w->name, queued);
		w->queue_full_logged = true;
		return -ENOBUFS;
	}
	if (queued > 0) {
		/* Behind the queue, or the order breaks. */
		wdm_queue_append(w, msg, len);
	} else {
		ssize_t n;
		do
			n = write(w->master_fd, msg, len);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN)
			return log_warning_errno(errno, "wdm %s: writing to the pty master failed",
						 w->name);
		if (n < 0)
			n = 0;
		/* The master took part of it: the rest goes first when it has room again. */
		if ((size_t)n < len)
			wdm_queue_append(w, msg + n, len - (size_t)n);
	}

	w->stats.from_modem += count;
	w->stats.from_modem_bytes += len;
	return 0;
}

static int wdm_make_link(struct wdm *w)
{
	struct stat st;
	if (lstat(w->link_path, &st) == 0 && !S_ISLNK(st.st_mode))
		return log_error_errno(EEXIST, "wdm %s: exists and is no symlink, not replacing it",
				       w->name);

	int r = mkdir_parents(w->link_path, 0755);
	if (r < 0)
		return log_error_errno(r, "wdm %s: cannot create the link's directory", w->name);

	/* A symlink beside it, renamed over it: clients never see the path missing. */
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", w->link_path, (int)getpid()) >=
	    (int)sizeof(tmp))
		return log_error_errno(ENAMETOOLONG, "wdm %s: link path too long", w->name);
	(void)unlink(tmp);
	if (symlink(w->slave_path, tmp) < 0)
		return log_error_errno(errno, "wdm %s: cannot create symlink %s", w->name, tmp);
	if (rename(tmp, w->link_path) < 0) {
		r = log_error_errno(errno, "wdm %s: cannot rename %s over it", w->name, tmp);
		(void)unlink(tmp);
		return r;
	}
	return 0;
}

/* Whether the link still points at our slave (another qmapd may have taken it over). */
static bool wdm_link_is_ours(const struct wdm *w)
{
	char target[PATH_MAX];
	ssize_t n = readlink(w->link_path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, w->slave_path) == 0;
}

static int wdm_open_pty(struct wdm *w)
{
	w->master_fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (w->master_fd < 0)
		return log_error_errno(errno, "wdm %s: cannot open a pty", w->name);
	if (grantpt(w->master_fd) < 0 || unlockpt(w->master_fd) < 0)
		return log_error_errno(errno, "wdm %s: cannot unlock the pty", w->name);
	int r = ptsname_r(w->master_fd, w->slave_path, sizeof(w->slave_path));
	if (r != 0)
		return log_error_errno(r, "wdm %s: cannot name the pty slave", w->name);

	/* The peer ioctl opens exactly our slave without a path lookup. */
	w->slave_fd = ioctl(w->master_fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (w->slave_fd < 0)
		w->slave_fd = open(w->slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (w->slave_fd < 0)
		return log_error_errno(errno, "wdm %s: cannot open %s", w->name, w->slave_path);

	/* Raw: no echo, no CR/LF translation, no signals, no flow control characters. */
	struct termios t;
	if (tcgetattr(w->slave_fd, &t) < 0)
		return log_error_errno(errno, "wdm %s: cannot read the termios of %s", w->name,
				       w->slave_path);
	cfmakeraw(&t);
	if (tcsetattr(w->slave_fd, TCSANOW, &t) < 0)
		return log_error_errno(errno, "wdm %s: cannot make %s raw", w->name, w->slave_path);

	/* grantpt leaves 0620 (group tty may write); the control channel is for the owner and
	 * the group the administrator chose, who may read it too. */
	if (fchmod(w->slave_fd, 0660) < 0)
		return log_error_errno(errno, "wdm %s: cannot chmod %s", w->name, w->slave_path);

	/* Only other openers are reported: ours happened before the watch. */
	w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->inotify_fd < 0)
		return log_error_errno(errno, "wdm %s: inotify_init1 failed", w->name);
	if (inotify_add_watch(w->inotify_fd, w->slave_path, IN_OPEN | IN_CLOSE) < 0)
		return log_error_errno(errno, "wdm %s: cannot watch %s", w->name, w->slave_path);
	return 0;
}

static bool link_name_is_cdc_wdm(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "cdc-wdm", 7) == 0;
}

int wdm_new(struct ev_loop *loop, enum wdm_framing framing, const char *link_path, wdm_send_fn send,
	    void *userdata, struct wdm **ret)
{
	if (!loop || !send || !ret || wdm_frame_max_message(framing) == 0)
		return -EINVAL;
	if (link_path && (link_path[0] != '/' || link_name_is_cdc_wdm(link_path)))
		/* libmbim (and libqmi) look up sysfs by the basename: a real cdc-wdmN's
		 * descriptors would be taken for ours. */
		return log_error_errno(EINVAL,
				       "wdm %s: link must be an absolute path not named cdc-wdmN",
				       link_path);

	struct wdm *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->framing = framing;
	w->send = send;
	w->userdata = userdata;
	w->master_fd = w->slave_fd = w->inotify_fd = -1;
	w->name = "(new)";
	ev_io_init(&w->read_io, wdm_on_read, -1, EV_READ);
	ev_io_init(&w->write_io, wdm_on_write, -1, EV_WRITE);
	ev_io_init(&w->inotify_io, wdm_on_inotify, -1, EV_READ);
	ev_init(&w->retry, wdm_on_retry);
	w->retry.repeat = WDM_RETRY_INTERVAL;
	w->retry.data = w;
	ev_init(&w->probe_timer, wdm_on_probe_timeout);
	w->probe_timer.data = w;
	ev_init(&w->reopen_timer, wdm_on_reopen_timeout);
	w->reopen_timer.data = w;

	int r = -ENOMEM;
	if (link_path) {
		w->link_path = strdup(link_path);
		if (!w->link_path)
			goto fail_oom;
		w->name = w->link_path;
	}
	w->out = malloc(WDM_OUT_QUEUE_SIZE);
	w->pend = malloc(WDM_TO_MODEM_QUEUE_SIZE);
	if (!w->out || !w->pend)
		goto fail_oom;
	if (framing == WDM_FRAMING_MBIM) {
		w->frag = malloc(UINT16_MAX);
		w->fasm = calloc(1, sizeof(*w->fasm));
		if (!w->frag || !w->fasm)
			goto fail_oom;
	}
	r = wdm_reasm_init(&w->reasm, framing);
	if (r < 0)
		goto fail_oom;

	r = wdm_open_pty(w);
	if (r < 0)
		goto fail;
	if (!w->link_path)
		w->name = w->slave_path;

	ev_io_set(&w->read_io, w->master_fd, EV_READ);
	ev_io_set(&w->write_io, w->master_fd, EV_WRITE);
	ev_io_set(&w->inotify_io, w->inotify_fd, EV_READ);
	w->read_io.data = w->write_io.data = w->inotify_io.data = w;
	/* Opens and closes first in every loop iteration: a new client's flush must come
	 * before its requests are read, or their answers would be flushed with stale bytes. */
	ev_set_priority(&w->inotify_io, EV_MAXPRI);
	ev_io_start(loop, &w->inotify_io);
	ev_io_start(loop, &w->read_io);

	/* Last: clients find the pty only when it is ready. */
	if (w->link_path) {
		r = wdm_make_link(w);
		if (r < 0)
			goto fail;
	}

	log_info("wdm %s: %s control channel on %s", w->name, framing_name(framing), w->slave_path);
	*ret = w;
	return 0;

fail_oom:
	r = log_error_errno(ENOMEM, "wdm %s: out of memory", link_path ? link_path : "(pty)");
fail:
	free(w->link_path);
	w->link_path = NULL; /* never remove a link we did not make */
	wdm_free(w);
	return r;
}

struct wdm *wdm_free(struct wdm *w)
{
	if (!w)
		return NULL;

	ev_io_stop(w->loop, &w->inotify_io);
	ev_io_stop(w->loop, &w->read_io);
	ev_io_stop(w->loop, &w->write_io);
	ev_timer_stop(w->loop, &w->retry);
	ev_timer_stop(w->loop, &w->probe_timer);
	ev_timer_stop(w->loop, &w->reopen_timer);

	if (w->link_path && wdm_link_is_ours(w) && unlink(w->link_path) < 0 && errno != ENOENT)
		log_warning_errno(errno, "wdm %s: cannot remove the link", w->name);

	/* Closing the master hangs up the slave: clients see the device go away. */
	if (w->inotify_fd >= 0)
		close(w->inotify_fd);
	if (w->slave_fd >= 0)
		close(w->slave_fd);
	if (w->master_fd >= 0)
		close(w->master_fd);
	wdm_reasm_done(&w->reasm);
	free(w->out);
	free(w->pend);
	free(w->frag);
	free(w->fasm);
	free(w->link_path);
	free(w);
	return NULL;
}

const char *wdm_slave_path(const struct wdm *w)
{
	return w->slave_path;
}

const char *wdm_link_path(const struct wdm *w)
{
	return w->link_path;
}

void wdm_set_max_message(struct wdm *w, size_t max)
{
	if (w->framing != WDM_FRAMING_MBIM)
		return;
	/* MBIM 1.0 §6.4: wMaxControlMessage is at least 64; a u16 at most. */
	if (max > UINT16_MAX)
		max = UINT16_MAX;
	if (max && max < USB_MBIM_CONTROL_MIN)
		max = USB_MBIM_CONTROL_MIN;
	if (max != w->max_message && max)
		log_info("wdm %s: the function takes control messages up to %zu bytes", w->name,
			 max);
	w->max_message = max;
}

unsigned wdm_clients(const struct wdm *w)
{
	return w->clients;
}

void wdm_get_stats(const struct wdm *w, struct wdm_stats *ret)
{
	*ret = w->stats;
	ret->framing_errors = w->reasm.framing_errors;
	ret->resyncs = w->reasm.resyncs;
	ret->discarded_bytes = w->reasm.discarded_bytes;
	ret->partial_discards = w->reasm.partial_discards;
}

void wdm_set_on_reopened(struct wdm *w, void (*fn)(void *userdata), void *userdata)
{
	w->on_reopened = fn;
	w->reopened_userdata = userdata;
}
