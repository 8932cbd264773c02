/* SPDX-License-Identifier: MIT */
/*
 * The `usb` transport: the modem's QMI interface driven with libusb, as qmi_wwan + cdc-wdm
 * would (docs/PROTOCOLS.md §4), or its MBIM function as cdc_mbim would: the data interface
 * reset to alternate setting 0, the class requests of ntb-setup.h, then the data alternate
 * setting; control the same way on the communications interface, messages up to its
 * wMaxControlMessage. Control: SEND_ENCAPSULATED_COMMAND on EP0 for requests;
 * GET_ENCAPSULATED_RESPONSE whenever the interrupt endpoint says RESPONSE_AVAILABLE (an
 * interrupt IN transfer is always submitted). One encapsulated transfer is on EP0 at a
 * time: cdc-wdm, which firmware is tested against, never has two commands in flight, and
 * a function that completes a command's data stage before its firmware has read the
 * request (gadgetfs; see tests/sim/sim-gadgetfs.h) loses it when the next control
 * request follows in the same bus pass. The host controller runs EP0's transfers one
 * after another anyway, so this costs a completion-to-submission turn of the loop between
 * two. Announced responses go before waiting commands; commands wait in order in a queue
 * of USB_CTRL_SLOTS (-ENOBUFS beyond: the wdm bridge keeps them, wdm.h). Data: n_rx bulk
 * IN transfers always in flight over the transport's receive ring, bulk OUT straight from
 * the OUT pool.
 *
 * libusb runs inside qmapd's libev loop (usb-loop.h), in a context of its own; which
 * interface is the modem's QMI function is usb-device.h's decision, shared with discovery.
 *
 * Finding the modem again: libusb hotplug callbacks where libusb has them (Linux with
 * udev, and umockdev's emulated uevents in the tests), so a replug is claimed at once;
 * without hotplug support a re-scan timer runs while the modem is away, and where a
 * udev-built libusb hears nothing because udevd does not run, the same timer looks at
 * sysfs and renews the libusb context when a device came (usb-presence.h). A modem that is
 * present but cannot be claimed (busy, no permission) is retried on a slow timer, because
 * freeing an interface sends no uevent. A replug is the same modem when its serial number
 * matches (or, without one, its port path).
 */
#include <assert.h>
#include <errno.h>
#include <ev.h>
#include <inttypes.h>
#include <libusb.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "byteorder.h"
#include "log.h"
#include "ntb-setup.h"
#include "transport.h"
#include "usb-device.h"
#include "usb-loop.h"
#include "usb-presence.h"
#include "usb-spec.h"

/* cdc-wdm's buffer for qmi_wwan (usb_cdc_wdm_register(..., 4096, ...)): a QMUX message. */
#define USB_CTRL_MAX	   4096
#define USB_CTRL_SLOTS	   16 /* encapsulated commands queued (qmi-proxy clients), 1 in flight */
#define USB_RESCAN_SECONDS 1.0
#define USB_RETRY_SECONDS  5.0
#define USB_CTRL_TIMEOUT   5000 /* ms */
#define USB_OUT_TIMEOUT	   5000 /* ms: a wedged modem gives the OUT buffers back */
#define USB_STOP_WAIT	   2.0	/* s for cancelled transfers to come back on exit */
#define USB_ERRORS_GONE	   1000 /* errors in a row without a good transfer: the modem is gone */
#define USB_SHORT_MIN	   4	/* a QMAP header: a shorter non-empty transfer is damaged */
#define USB_CMD_TRIES	   3	/* SEND_ENCAPSULATED_COMMAND attempts before the request is lost */
/*
 * A command with no RESPONSE_AVAILABLE this long after it: ask for the response anyway (an
 * interrupt endpoint that stopped reporting must not stall QMI until the modem goes away).
 * The modem's responses wait in one FIFO, and a GET_ENCAPSULATED_RESPONSE takes the oldest:
 * a notification that came for a newer response fetches an older, unannounced one instead,
 * and the newer one stays behind. So after a response the transport asks again, until the
 * modem has nothing (0 bytes, as Qualcomm's f_rmnet and qmapd-sim answer then; a STALL, as
 * its newer f_gsi and f_mbim answer), whenever a response may wait unannounced: the modem
 * has lost a notification before (resp_polled), the ask was not announced itself, or fewer
 * responses came than commands went (resp_owed). A modem that announces every response,
 * one command at a time, gets no extra request.
 */
#define USB_RESP_POLL_SECONDS 1.0

#define USB_HALT_IN  0x01
#define USB_HALT_OUT 0x02
#define USB_HALT_INT 0x04

#define CDC_SEND_ENCAPSULATED_COMMAND 0x00
#define CDC_GET_ENCAPSULATED_RESPONSE 0x01
#define CDC_SET_CONTROL_LINE_STATE    0x22
#define CDC_NOTIFY_RESPONSE_AVAILABLE 0x01
#define CDC_CTRL_DTR		      0x01
#define CDC_REQTYPE_OUT		      (LIBUSB_REQUEST_TYPE_CLASS | LIBUSB_RECIPIENT_INTERFACE)
#define CDC_REQTYPE_IN		      (CDC_REQTYPE_OUT | LIBUSB_ENDPOINT_IN)

enum usb_state {
	USB_STATE_WAITING, /* no modem claimed */
	USB_STATE_UP,	   /* claimed, transfers flow */
	USB_STATE_DYING,   /* gone or stopping: waiting for every transfer to come back */
};

struct transport_usb {
	struct transport base;
	struct usb_spec spec;
	char spec_text[USB_SPEC_PATH_MAX + 16];
	struct usb_loop *ul;
	libusb_context *ctx; /* ul's */
	libusb_device_handle *h;
	libusb_hotplug_callback_handle hotplug;
	bool has_hotplug;
	bool started;
	enum usb_state state;
	char name[96]; /* "usb 2-1.4 (2c7c:0125) if4", for every log line */

	/* The modem we claimed, to recognise it on replug. */
	bool have_identity;
	char serial[128];
	uint8_t bus;
	uint8_t ports[USB_SPEC_MAX_PORTS];
	uint8_t n_ports;

	uint8_t ifnum; /* QMI: the interface; MBIM: the communications interface */
	uint8_t ep_int, ep_in, ep_out;
	/* MBIM: the data interface, its data alternate setting, what the descriptors say. */
	bool mbim;
	uint8_t data_ifnum, data_alt, comm_alt;
	struct usb_mbim_desc mbim_desc;
	/* Bytes per encapsulated command and response: 4096, or MBIM's wMaxControlMessage. */
	uint16_t ctrl_size;
	uint16_t mps_in;
	bool kernel_detached;
	bool warned_missing;
	int last_open_error;
	unsigned errors_in_row;

	uint32_t rx_len; /* bytes per bulk IN transfer: >= granted DL size, * wMaxPacketSize */
	size_t rx_stride;
	uint8_t *rx_dev_mem; /* usbfs-mapped ring when the kernel offers it, else NULL */
	struct libusb_transfer **rx;
	struct libusb_transfer **rx_batch; /* delivered this wakeup, resubmitted after done */
	uint32_t n_batch;
	struct libusb_transfer *intr;
	uint8_t intr_buf[64];
	uint16_t intr_len; /* bytes per interrupt IN transfer: one packet (usb_claim()) */
	struct libusb_transfer *resp;
	uint8_t resp_buf[LIBUSB_CONTROL_SETUP_SIZE + USB_CTRL_MAX];
	bool resp_busy;
	unsigned resp_pending;
	/* Encapsulated commands in order: cmd_count from cmd_head, the head in flight while
	 * cmd_busy (the one transfer carries its slot). */
	struct libusb_transfer *cmd;
	uint8_t cmd_buf[USB_CTRL_SLOTS][LIBUSB_CONTROL_SETUP_SIZE + USB_CTRL_MAX];
	unsigned cmd_head, cmd_count;
	bool cmd_busy;
	unsigned cmd_tries;
	ev_tstamp last_cmd, last_notify; /* last command sent, last RESPONSE_AVAILABLE */
	bool polling;			 /* the GET in flight is the poll timer's */
	bool draining;			 /* ... asks whether more than was announced waits */
	/* Commands sent whose response has not come, as far as the transport can tell: one
	 * more per command sent, one less per response (indications too: it errs low), 0 when
	 * the modem answers that nothing waits. Beyond 0 a response may wait unannounced. */
	unsigned resp_owed;
	/* Responses fetched by an unannounced ask whose notification may still come: its
	 * GET finds nothing, which a STALL can say (below). */
	unsigned resp_ahead;
	unsigned resp_tries; /* GET_ENCAPSULATED_RESPONSE failures in a row */
	ev_timer resp_poll;
	/* Each kind of fault is logged once, then counted, until that path works again. */
	bool out_failing, cmd_failing, resp_failing, in_failing;
	enum libusb_transfer_status in_failed; /* the bulk IN failure logged last */
	/* Endpoints whose halt was cleared in this event pass (USB_HALT_*): the other
	 * transfers the same halt failed need no clear of their own. */
	uint8_t halts_cleared;
	struct libusb_transfer **tx; /* one per OUT buffer, by index */
	unsigned in_flight;

	ev_timer rescan; /* look for the modem */
	ev_timer reap;	 /* tear down after the last transfer came back */
};

static struct transport_usb *to_usb(struct transport *t)
{
	return (struct transport_usb *)t;
}

static void LIBUSB_CALL usb_resp_cb(struct libusb_transfer *x);
static void LIBUSB_CALL usb_cmd_cb(struct libusb_transfer *x);
static void usb_lost(struct transport_usb *s);
static void usb_register_hotplug(struct transport_usb *s);

/* ---- downlink batches ---- */

static void usb_resubmit(struct transport_usb *s, struct libusb_transfer *x);

/*
 * The consumer may keep pointers into this wakeup's IN buffers until on_bulk_in_done(),
 * so they go back to the modem only after it.
 */
static void usb_flush_batch(struct transport_usb *s)
{
	struct transport *t = &s->base;
	uint32_t n = s->n_batch;

	if (n == 0)
		return;
	if (n > t->stats.in_batch_max)
		t->stats.in_batch_max = n;
	if (t->cb.on_bulk_in_done)
		t->cb.on_bulk_in_done(t->userdata);
	s->n_batch = 0;
	for (uint32_t i = 0; i < n && s->state == USB_STATE_UP; i++) {
		s->rx_batch[i]->length = (int)s->rx_len;
		usb_resubmit(s, s->rx_batch[i]);
	}
}

static void usb_after_events(void *userdata)
{
	struct transport_usb *s = userdata;

	usb_flush_batch(s);
	s->halts_cleared = 0;
}

/* ---- transfers ---- */

/*
 * A halt fails every transfer queued on the endpoint, not only one: dummy_hcd gives them all
 * back with -EPIPE at once (16 bulk IN transfers for one halt). One CLEAR_FEATURE does for
 * all that come back in the same event pass; the bulk IN ones are submitted again only at
 * its end (usb_flush_batch()). A STALL in a later pass clears again.
 */
static void usb_clear_halt_once(struct transport_usb *s, uint8_t ep)
{
	uint8_t bit = ep == s->ep_in ? USB_HALT_IN : ep == s->ep_out ? USB_HALT_OUT : USB_HALT_INT;

	if (s->halts_cleared & bit)
		return;
	s->halts_cleared |= bit;
	int r = libusb_clear_halt(s->h, ep);
	if (r < 0) {
		log_warning_errno(usb_errno(r), "%s: clearing the halt on %02x failed", s->name,
				  ep);
		return;
	}
	s->base.stats.halts_cleared++;
	log_debug("%s: halt on %02x cleared", s->name, ep);
}

static bool usb_transfer_alive(struct transport_usb *s, struct libusb_transfer *x)
{
	switch (x->status) {
	case LIBUSB_TRANSFER_NO_DEVICE:
		usb_lost(s);
		return false;
	case LIBUSB_TRANSFER_CANCELLED:
		return false;
	case LIBUSB_TRANSFER_COMPLETED:
		s->errors_in_row = 0;
		return s->state == USB_STATE_UP;
	case LIBUSB_TRANSFER_STALL:
		/* The endpoint halted: clear it (what usbnet's EVENT_RX_HALT does) and go on. */
		if (s->state == USB_STATE_UP)
			usb_clear_halt_once(s, x->endpoint);
		break;
	case LIBUSB_TRANSFER_ERROR:
	case LIBUSB_TRANSFER_TIMED_OUT:
	case LIBUSB_TRANSFER_OVERFLOW:
		break;
	}
	if (++s->errors_in_row >= USB_ERRORS_GONE) {
		log_warning_errno(-EIO, "%s: %u transfer errors in a row, giving the modem up",
				  s->name, s->errors_in_row);
		usb_lost(s);
		return false;
	}
	return s->state == USB_STATE_UP;
}

static void usb_resubmit(struct transport_usb *s, struct libusb_transfer *x)
{
	int r = libusb_submit_transfer(x);

	if (r < 0) {
		if (r != LIBUSB_ERROR_NO_DEVICE)
			log_warning_errno(usb_errno(r), "%s: resubmitting on %02x failed", s->name,
					  x->endpoint);
		usb_lost(s);
		return;
	}
	s->in_flight++;
}

static void usb_transfer_done(struct transport_usb *s)
{
	assert(s->in_flight > 0); /* one completion per submitted transfer */
	s->in_flight--;
	if (s->state == USB_STATE_DYING && s->in_flight == 0)
		ev_feed_event(s->base.loop, &s->reap, EV_TIMER);
}

static const char *usb_status_name(enum libusb_transfer_status st)
{
	switch (st) {
	case LIBUSB_TRANSFER_COMPLETED:
		return "completed";
	case LIBUSB_TRANSFER_ERROR:
		return "protocol error";
	case LIBUSB_TRANSFER_TIMED_OUT:
		return "timeout";
	case LIBUSB_TRANSFER_CANCELLED:
		return "cancelled";
	case LIBUSB_TRANSFER_STALL:
		return "stall";
	case LIBUSB_TRANSFER_NO_DEVICE:
		return "no device";
	case LIBUSB_TRANSFER_OVERFLOW:
		return "overflow";
	}
	return "unknown";
}

static void LIBUSB_CALL usb_rx_cb(struct libusb_transfer *x)
{
	struct transport_usb *s = x->user_data;
	struct transport *t = &s->base;

	assert(s->in_flight > 0); /* one completion per submitted transfer */
	s->in_flight--;
	if (x->status == LIBUSB_TRANSFER_COMPLETED) {
		size_t len = (size_t)x->actual_length;

		/* An empty transfer is the modem's ZLP after a packet-aligned aggregate. */
		if (len > 0 && len < USB_SHORT_MIN) {
			t->stats.in_errors++;
			log_debug("%s: short bulk IN transfer of %zu bytes dropped", s->name, len);
		} else if (len > 0) {
			s->in_failing = false;
			t->stats.in_transfers++;
			t->stats.in_bytes += len;
			if (s->rx_dev_mem)
				t->stats.in_mapped++;
			t->cb.on_bulk_in(t->userdata, x->buffer, len);
		}
	} else if (x->status != LIBUSB_TRANSFER_CANCELLED &&
		   x->status != LIBUSB_TRANSFER_NO_DEVICE) {
		t->stats.in_errors++;
		if (x->status == LIBUSB_TRANSFER_OVERFLOW)
			t->stats.in_overflows++;
		/* Once per kind of failure in a row: a halt fails every queued transfer. */
		if (!s->in_failing || s->in_failed != x->status)
			log_warning("%s: bulk IN %s (%" PRIu64 " errors so far; further ones are "
				    "only counted: transfer_errors)%s",
				    s->name, usb_status_name(x->status), t->stats.in_errors,
				    x->status == LIBUSB_TRANSFER_OVERFLOW
					    ? ": the modem sent more than the granted size"
					    : "");
		s->in_failing = true;
		s->in_failed = x->status;
	}
	if (usb_transfer_alive(s, x)) {
		s->rx_batch[s->n_batch++] = x;
	} else if (s->state == USB_STATE_DYING && s->in_flight == 0) {
		ev_feed_event(t->loop, &s->reap, EV_TIMER);
	}
}

static int usb_resp_start(struct transport_usb *s)
{
	libusb_fill_control_setup(s->resp_buf, CDC_REQTYPE_IN, CDC_GET_ENCAPSULATED_RESPONSE, 0,
				  s->ifnum, s->ctrl_size);
	/* Filled after the setup packet: the transfer's length comes from its wLength. */
	libusb_fill_control_transfer(s->resp, s->h, s->resp_buf, usb_resp_cb, s, USB_CTRL_TIMEOUT);
	int r = libusb_submit_transfer(s->resp);
	if (r < 0) {
		log_warning_errno(usb_errno(r), "%s: GET_ENCAPSULATED_RESPONSE failed", s->name);
		if (r == LIBUSB_ERROR_NO_DEVICE)
			usb_lost(s);
		return usb_errno(r);
	}
	s->resp_busy = true;
	s->in_flight++;
	return 0;
}

/* The oldest waiting command on its way. */
static int usb_cmd_start(struct transport_usb *s)
{
	int r = libusb_submit_transfer(s->cmd);

	if (r < 0) {
		if (r == LIBUSB_ERROR_NO_DEVICE)
			usb_lost(s);
		return usb_errno(r);
	}
	s->cmd_busy = true;
	s->in_flight++;
	usb_loop_arm_timeout(s->ul);
	return 0;
}

/* Fill the one command transfer with the queue's head (after a pop, before a start). */
static void usb_cmd_fill(struct transport_usb *s)
{
	uint8_t *b = s->cmd_buf[s->cmd_head];

	libusb_fill_control_transfer(s->cmd, s->h, b, usb_cmd_cb, s, USB_CTRL_TIMEOUT);
	s->cmd_tries = 0;
}

static void usb_cmd_pop(struct transport_usb *s)
{
	if (s->cmd_count == 0)
		return;
	s->cmd_head = (s->cmd_head + 1) % USB_CTRL_SLOTS;
	s->cmd_count--;
}

/*
 * Start the next encapsulated transfer once EP0 is free (see the top of the file): an
 * announced response first, else the oldest command. A command that cannot be submitted
 * is lost (counted: ctrl_errors) and the next one tried.
 */
static void usb_ctrl_pump(struct transport_usb *s)
{
	struct transport *t = &s->base;

	while (!s->resp_busy && !s->cmd_busy && s->state == USB_STATE_UP) {
		if (s->resp_pending > 0 && usb_resp_start(s) == 0)
			return;
		if (s->cmd_count == 0 || s->state != USB_STATE_UP)
			return;
		usb_cmd_fill(s);
		int r = usb_cmd_start(s);
		if (r == 0 || s->state != USB_STATE_UP)
			return;
		t->stats.ctrl_errors++;
		if (!s->cmd_failing)
			log_warning_errno(
				r,
				"%s: SEND_ENCAPSULATED_COMMAND could not be submitted, the "
				"request is lost (further failures are only counted: "
				"ctrl_errors)",
				s->name);
		s->cmd_failing = true;
		usb_cmd_pop(s);
	}
}

/* Ask for a response nobody announced (see USB_RESP_POLL_SECONDS). */
static void usb_poll_response(struct transport_usb *s)
{
	/* A response on its way or waiting for EP0 is an ask already. */
	if (s->resp_busy || s->resp_pending > 0 || s->state != USB_STATE_UP)
		return;
	/* EP0 carries a command: ask once it is free (the flag must mark the ask). */
	if (s->cmd_busy) {
		ev_timer_stop(s->base.loop, &s->resp_poll);
		ev_timer_set(&s->resp_poll, USB_RESP_POLL_SECONDS, 0.);
		ev_timer_start(s->base.loop, &s->resp_poll);
		return;
	}
	s->polling = true;
	s->resp_pending++;
	usb_ctrl_pump(s);
}

static void usb_on_resp_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct transport_usb *s = w->data;

	(void)loop;
	(void)revents;
	/* Something was asked after the last notification and nothing announced since, or a
	 * response is owed though every command had a notification after it (one of them
	 * fetched an older response). */
	if (s->last_cmd > s->last_notify || s->resp_owed > 0)
		usb_poll_response(s);
}

/*
 * After a response: ask again if one may wait unannounced (USB_RESP_POLL_SECONDS), unless an
 * announced ask still waits (it fetches the next, and this is decided again after it).
 */
static void usb_drain_responses(struct transport_usb *s, bool unannounced)
{
	if (s->resp_pending > 0 || s->state != USB_STATE_UP)
		return;
	if (unannounced || s->resp_owed > 0 || s->base.stats.resp_polled > 0) {
		s->draining = true;
		s->resp_pending++;
	}
}

static void LIBUSB_CALL usb_resp_cb(struct libusb_transfer *x)
{
	struct transport_usb *s = x->user_data;
	struct transport *t = &s->base;
	bool polled = s->polling, drained = s->draining;

	s->resp_busy = false;
	s->polling = s->draining = false;
	if (s->resp_pending > 0)
		s->resp_pending--;
	if (x->status == LIBUSB_TRANSFER_COMPLETED && x->actual_length > 0) {
		log_debug("%s: encapsulated response, %d bytes%s", s->name, x->actual_length,
			  polled    ? " (polled)"
			  : drained ? " (asked again)"
				    : "");
		s->resp_failing = false;
		s->resp_tries = 0;
		if (s->resp_owed > 0)
			s->resp_owed--;
		if (polled && t->stats.resp_polled++ == 0)
			log_warning("%s: a response came without RESPONSE_AVAILABLE; asking again "
				    "after every response from now on, until the modem has none "
				    "(counted as resp_polled, resp_drained)",
				    s->name);
		if (drained)
			t->stats.resp_drained++;
		if ((polled || drained) && s->resp_ahead < USB_CTRL_SLOTS)
			s->resp_ahead++;
		/* There may be more: keep asking until the modem has none. */
		usb_drain_responses(s, polled || drained);
		if (t->cb.on_control)
			t->cb.on_control(t->userdata, libusb_control_transfer_get_data(x),
					 (size_t)x->actual_length);
	} else if (x->status == LIBUSB_TRANSFER_COMPLETED ||
		   (x->status == LIBUSB_TRANSFER_STALL &&
		    (polled || drained || s->resp_ahead > 0))) {
		/* Nothing waits: what is still owed has yet to come, announced or polled. A
		 * CDC function answers 0 bytes; Qualcomm's newer gadget functions (f_gsi,
		 * f_mbim) STALL instead, which is no failure to ask again after. An announced
		 * ask finds nothing where its response was fetched ahead. */
		s->resp_failing = false;
		s->resp_tries = 0;
		s->resp_owed = 0;
		if (!polled && !drained && s->resp_ahead > 0)
			s->resp_ahead--;
	} else if (x->status != LIBUSB_TRANSFER_CANCELLED &&
		   x->status != LIBUSB_TRANSFER_NO_DEVICE) {
		/* Every completed answer was taken above: a failure. */
		t->stats.resp_errors++;
		if (!s->resp_failing)
			log_warning("%s: GET_ENCAPSULATED_RESPONSE: %s; asking again (further "
				    "failures are only counted: resp_errors)",
				    s->name, usb_status_name(x->status));
		s->resp_failing = true;
		/* The response is still in the modem: ask again now, a few times, then in a
		 * second (the poll timer), so a broken pipe is not asked in a busy loop. */
		if (++s->resp_tries < USB_CMD_TRIES) {
			s->resp_pending++;
		} else {
			s->resp_tries = 0;
			s->last_notify = 0;
			ev_timer_stop(t->loop, &s->resp_poll);
			ev_timer_set(&s->resp_poll, USB_RESP_POLL_SECONDS, 0.);
			ev_timer_start(t->loop, &s->resp_poll);
		}
	}
	if (x->status == LIBUSB_TRANSFER_NO_DEVICE)
		usb_lost(s);
	usb_ctrl_pump(s);
	usb_transfer_done(s);
}

static void LIBUSB_CALL usb_intr_cb(struct libusb_transfer *x)
{
	struct transport_usb *s = x->user_data;
	struct transport *t = &s->base;

	assert(s->in_flight > 0); /* one completion per submitted transfer */
	s->in_flight--;
	if (x->status == LIBUSB_TRANSFER_COMPLETED && x->actual_length >= 8 &&
	    x->buffer[0] == CDC_REQTYPE_IN && x->buffer[1] == CDC_NOTIFY_RESPONSE_AVAILABLE) {
		/* Several in one transfer where a packet holds more than one: each counts. */
		size_t n = 0;
		for (size_t off = 0; off + 8 <= (size_t)x->actual_length; off += 8)
			n += x->buffer[off] == CDC_REQTYPE_IN &&
			     x->buffer[off + 1] == CDC_NOTIFY_RESPONSE_AVAILABLE;
		s->last_notify = ev_now(t->loop);
		s->resp_pending += (unsigned)n;
		usb_ctrl_pump(s);
	} else if (x->status == LIBUSB_TRANSFER_COMPLETED && x->actual_length > 0) {
		if (t->cb.on_interrupt)
			t->cb.on_interrupt(t->userdata, x->buffer, (size_t)x->actual_length);
	}
	if (usb_transfer_alive(s, x))
		usb_resubmit(s, x);
	else if (s->state == USB_STATE_DYING && s->in_flight == 0)
		ev_feed_event(t->loop, &s->reap, EV_TIMER);
}

static void LIBUSB_CALL usb_cmd_cb(struct libusb_transfer *x)
{
	struct transport_usb *s = x->user_data;
	struct transport *t = &s->base;

	if (x->status == LIBUSB_TRANSFER_COMPLETED) {
		s->cmd_failing = false;
		s->last_cmd = ev_now(t->loop);
		s->resp_owed++;
		ev_timer_stop(t->loop, &s->resp_poll);
		ev_timer_set(&s->resp_poll, USB_RESP_POLL_SECONDS, 0.);
		ev_timer_start(t->loop, &s->resp_poll);
	} else if (x->status == LIBUSB_TRANSFER_NO_DEVICE) {
		usb_lost(s);
	} else if (x->status != LIBUSB_TRANSFER_CANCELLED) {
		/* STALL, protocol error, timeout: the request is in cmd_buf still; send it again. */
		bool again = s->state == USB_STATE_UP && ++s->cmd_tries < USB_CMD_TRIES;

		if (!s->cmd_failing)
			log_warning("%s: SEND_ENCAPSULATED_COMMAND: %s; %s (further failures are "
				    "only counted: ctrl_retries, ctrl_errors)",
				    s->name, usb_status_name(x->status),
				    again ? "sending it again" : "the request is lost");
		s->cmd_failing = true;
		if (again && libusb_submit_transfer(x) == 0) {
			t->stats.ctrl_retries++;
			return; /* still busy, still in flight */
		}
		t->stats.ctrl_errors++;
	}
	s->cmd_busy = false;
	usb_cmd_pop(s);
	if (s->state != USB_STATE_UP)
		s->cmd_count = 0; /* cancelled with the modem: what waited goes too */
	usb_ctrl_pump(s);
	usb_transfer_done(s);
}

static void LIBUSB_CALL usb_tx_cb(struct libusb_transfer *x)
{
	struct transport_usb *s = x->user_data;
	struct transport *t = &s->base;
	struct transport_out *out = NULL;

	/* Transfer i carries OUT buffer i. */
	for (uint32_t i = 0; i < t->n_out && !out; i++)
		if (s->tx[i] == x)
			out = &t->out[i];
	if (x->status != LIBUSB_TRANSFER_COMPLETED) {
		t->stats.out_errors++;
		if (x->status != LIBUSB_TRANSFER_CANCELLED &&
		    x->status != LIBUSB_TRANSFER_NO_DEVICE && !s->out_failing) {
			log_warning("%s: bulk OUT %s, the aggregate is dropped (further failures "
				    "are only counted: out_errors)",
				    s->name, usb_status_name(x->status));
			s->out_failing = true;
		}
		usb_transfer_alive(s, x); /* clears a halt, notices a lost modem */
	} else {
		s->errors_in_row = 0;
		s->out_failing = false;
	}
	if (out)
		transport_out_complete(t, out);
	usb_transfer_done(s);
}

static int usb_out_submit(struct transport *t, struct transport_out *out, bool zlp)
{
	struct transport_usb *s = to_usb(t);
	struct libusb_transfer *x = s->tx[out->index];

	if (s->state != USB_STATE_UP) {
		t->stats.out_errors++;
		transport_out_complete(t, out);
		return -ENOTCONN;
	}
	libusb_fill_bulk_transfer(x, s->h, s->ep_out, out->data, (int)out->len, usb_tx_cb, s,
				  USB_OUT_TIMEOUT);
	/* qmi_wwan's FLAG_SEND_ZLP: end a packet-aligned transfer with a zero-length packet. */
	x->flags = zlp ? LIBUSB_TRANSFER_ADD_ZERO_PACKET : 0;
	int r = libusb_submit_transfer(x);
	if (r < 0) {
		t->stats.out_errors++;
		transport_out_complete(t, out);
		if (r == LIBUSB_ERROR_NO_DEVICE)
			usb_lost(s);
		return usb_errno(r);
	}
	s->in_flight++;
	usb_loop_arm_timeout(s->ul);
	return 0;
}

/* Queue a command behind those waiting; it goes when EP0 is free (usb_ctrl_pump()). */
static int usb_cmd_submit(struct transport_usb *s, const uint8_t *buf, size_t len)
{
	if (len == 0 || len > s->ctrl_size)
		return -EMSGSIZE;
	if (s->cmd_count == USB_CTRL_SLOTS)
		return -ENOBUFS;
	uint8_t *b = s->cmd_buf[(s->cmd_head + s->cmd_count) % USB_CTRL_SLOTS];
	libusb_fill_control_setup(b, CDC_REQTYPE_OUT, CDC_SEND_ENCAPSULATED_COMMAND, 0, s->ifnum,
				  (uint16_t)len);
	memcpy(b + LIBUSB_CONTROL_SETUP_SIZE, buf, len);
	s->cmd_count++;
	log_debug("%s: encapsulated command, %zu bytes (%u waiting)", s->name, len,
		  s->cmd_count - 1);
	usb_ctrl_pump(s);
	return 0;
}

static int usb_control_send(struct transport *t, const uint8_t *buf, size_t len)
{
	struct transport_usb *s = to_usb(t);

	if (s->state != USB_STATE_UP)
		return -ENOTCONN;
	/* MBIM arrives fitted to ctrl_size by the wdm bridge (wdm_set_max_message()). */
	return usb_cmd_submit(s, buf, len);
}

static void usb_dl_size_changed(struct transport *t)
{
	struct transport_usb *s = to_usb(t);
	uint32_t mps = s->mps_in ? s->mps_in : 512;
	uint32_t want = (t->params.dl_max_size + mps - 1) / mps * mps;
	uint32_t room = (uint32_t)((s->rx_stride - TRANSPORT_RX_HEADROOM) / mps * mps);

	/* Transfers in flight keep their length; each takes the new one when resubmitted. */
	s->rx_len = want <= room ? want : room;
	if (s->rx_len < t->params.dl_max_size)
		log_warning("%s: receive buffers of %u bytes are not a multiple of "
			    "wMaxPacketSize %u above the granted %u: large aggregates may overflow",
			    s->name, s->rx_len, mps, t->params.dl_max_size);
}

/* ---- finding and claiming the modem ---- */

static void usb_set_dtr(struct transport_usb *s, bool on)
{
	/* qmi_wwan's DTR quirk: some modems answer no QMI until DTR is set (PROTOCOLS 1.9). */
	int r = libusb_control_transfer(s->h, CDC_REQTYPE_OUT, CDC_SET_CONTROL_LINE_STATE,
					on ? CDC_CTRL_DTR : 0, s->ifnum, NULL, 0, USB_CTRL_TIMEOUT);
	if (r < 0 && r != LIBUSB_ERROR_NO_DEVICE)
		log_warning_errno(usb_errno(r), "%s: SET_CONTROL_LINE_STATE DTR=%d failed", s->name,
				  on);
}

enum usb_release_mode {
	USB_RELEASE_GONE,      /* unplugged: only free what we hold */
	USB_RELEASE_UNCLAIMED, /* claiming failed: give the kernel driver back */
	USB_RELEASE_CLAIMED,   /* release, DTR off as on unbind, kernel driver back */
	USB_RELEASE_KEEP,      /* release only, as a crash would: the sessions stay up */
};

static void usb_release(struct transport_usb *s, enum usb_release_mode mode)
{
	if (!s->h)
		return;
	if (mode == USB_RELEASE_CLAIMED) {
		if (s->mbim) {
			/* What cdc_ncm's unbind leaves: the data interface without endpoints. */
			libusb_set_interface_alt_setting(s->h, s->data_ifnum, 0);
			libusb_release_interface(s->h, s->data_ifnum);
		} else {
			usb_set_dtr(s, false);
		}
		libusb_release_interface(s->h, s->ifnum);
	}
	if (mode == USB_RELEASE_KEEP) {
		if (s->mbim)
			libusb_release_interface(s->h, s->data_ifnum);
		libusb_release_interface(s->h, s->ifnum);
		s->kernel_detached =
			false; /* the next qmapd claims it without a driver to detach */
	}
	if ((mode == USB_RELEASE_UNCLAIMED || mode == USB_RELEASE_CLAIMED) && s->kernel_detached) {
		int r = libusb_attach_kernel_driver(s->h, s->ifnum);
		if (r < 0)
			log_warning_errno(usb_errno(r),
					  "%s: re-attaching the kernel driver failed; "
					  "replug the modem to get it back",
					  s->name);
		else
			log_info("%s: handed back to the kernel driver", s->name);
	}
	s->kernel_detached = false;
	if (s->rx_dev_mem)
		libusb_dev_mem_free(s->h, s->rx_dev_mem, s->rx_stride * s->base.n_rx);
	s->rx_dev_mem = NULL;
	libusb_close(s->h);
	s->h = NULL;
}

static void usb_open_failed(struct transport_usb *s, const char *what, int r)
{
	if (r == s->last_open_error)
		return; /* said once; retried quietly */
	s->last_open_error = r;
	if (r == -EACCES)
		log_error_errno(
			r,
			"%s: permission denied opening the USB device; run qmapd as root (a "
			"dedicated user needs the device node's group: see the GROUP line of "
			"the example udev rule 70-qmapd.rules in qmapd's documentation)",
			s->name);
	else if (r == -EBUSY)
		log_error_errno(
			r,
			"%s: interface busy: another program (ModemManager, another qmapd?) "
			"claimed it; retrying",
			s->name);
	else
		log_error_errno(r, "%s: %s failed", s->name, what);
}

static void usb_format_name(struct transport_usb *s, libusb_device *dev,
			    const struct libusb_device_descriptor *dd, int ifnum)
{
	char path[USB_SPEC_PATH_MAX];

	usb_device_path(dev, path, sizeof(path));
	if (ifnum >= 0)
		snprintf(s->name, sizeof(s->name), "usb %s (%04x:%04x) if%d", path, dd->idVendor,
			 dd->idProduct, ifnum);
	else
		snprintf(s->name, sizeof(s->name), "usb %s (%04x:%04x)", path, dd->idVendor,
			 dd->idProduct);
}

/* Detach whatever kernel driver holds ifnum (qmi_wwan, cdc_mbim); 0 or -errno. */
static int usb_detach(struct transport_usb *s, uint8_t ifnum, const char *driver)
{
	int r = libusb_kernel_driver_active(s->h, ifnum);

	if (r != 1)
		return 0;
	r = libusb_detach_kernel_driver(s->h, ifnum);
	if (r < 0 && r != LIBUSB_ERROR_NOT_FOUND) {
		usb_open_failed(s, "detaching the kernel driver", usb_errno(r));
		return usb_errno(r);
	}
	if (r == 0) {
		s->kernel_detached = true;
		log_info("%s: detached the kernel driver (%s)", s->name, driver);
	}
	return 0;
}

/*
 * MBIM: the data interface set up as cdc_ncm's bind does (docs/PROTOCOLS.md §3.3). The data
 * alternate setting is toggled to reset the function, alternate setting 0 selected, the
 * class requests sent on EP0 to the communications interface (synchronously: this runs once
 * per claim), a pause the Sierra MC7455 firmware needs, then the data alternate setting.
 * Only a GET_NTB_PARAMETERS that fails is fatal: USB has no other copy of the parameters.
 */
static int usb_mbim_setup(struct transport_usb *s)
{
	struct transport *t = &s->base;
	struct ntb_setup ns;
	struct ntb_setup_request req;
	uint8_t buf[NTB_PARAMS_SIZE];
	int r;

	if (s->comm_alt) {
		r = libusb_set_interface_alt_setting(s->h, s->ifnum, s->comm_alt);
		if (r < 0)
			return log_error_errno(usb_errno(r),
					       "%s: selecting MBIM alternate setting %u failed",
					       s->name, s->comm_alt);
	}
	t->ntb = (struct transport_ntb){
		.format = NTB_FORMAT_16,
		/* What usb_cmd_submit() takes: the bridge fits MBIM commands to it. */
		.max_control_message = s->ctrl_size,
		.max_segment_size = s->mbim_desc.max_segment_size,
		.mtu = s->mbim_desc.have_extended ? s->mbim_desc.mtu : 0,
		.control_interface = s->ifnum,
		.data_alt = s->data_alt,
		.network_capabilities = s->mbim_desc.network_capabilities,
	};
	libusb_set_interface_alt_setting(s->h, s->data_ifnum, s->data_alt);
	r = libusb_set_interface_alt_setting(s->h, s->data_ifnum, 0);
	if (r < 0)
		return log_error_errno(usb_errno(r),
				       "%s: data interface %u alternate setting 0 failed", s->name,
				       s->data_ifnum);
	ntb_setup_begin(&ns, t, s->name, true, s->mbim_desc.network_capabilities);
	while (ntb_setup_next(&ns, t, &req)) {
		memcpy(buf, req.data, sizeof(req.data));
		r = libusb_control_transfer(s->h, req.request_type, req.request, req.value,
					    s->ifnum, buf, req.length, USB_CTRL_TIMEOUT);
		bool stall = r == LIBUSB_ERROR_PIPE;
		if (r < 0 && !stall)
			return log_error_errno(usb_errno(r), "%s: %s failed", s->name,
					       ntb_setup_request_name(req.request));
		if (req.request == CDC_GET_NTB_PARAMETERS &&
		    (stall || ntb_params_parse(buf, (size_t)r, &t->ntb.params) < 0))
			return log_error_errno(-EPROTO, "%s: GET_NTB_PARAMETERS %s", s->name,
					       stall ? "refused" : "malformed");
		ntb_setup_answer(&ns, t, stall, buf, stall ? 0 : (size_t)r);
	}
	nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	r = libusb_set_interface_alt_setting(s->h, s->data_ifnum, s->data_alt);
	if (r < 0)
		return log_error_errno(usb_errno(r),
				       "%s: data interface %u alternate setting %u failed", s->name,
				       s->data_ifnum, s->data_alt);
	t->data_interface = s->data_ifnum;
	ntb_setup_finish(&ns, t);
	return 0;
}

static int usb_claim(struct transport_usb *s, libusb_device *dev,
		     const struct libusb_device_descriptor *dd, libusb_device_handle *h,
		     const char *serial)
{
	struct transport *t = &s->base;
	struct usb_qmi_iface q;
	struct usb_mbim_iface mb;
	uint16_t mps_out;
	const char *how;
	int r;

	usb_format_name(s, dev, dd, -1);
	/* QMI where the modem has it (the data path qmapd was made for), else MBIM. */
	r = usb_qmi_find(dev, dd, s->spec.iface, &q);
	s->mbim = r < 0 && usb_mbim_find(dev, s->spec.iface, &mb) == 0;
	if (r < 0 && !s->mbim) {
		if (s->last_open_error != -ENXIO)
			log_error_errno(
				-ENXIO,
				"%s: no QMI interface (interrupt IN + bulk IN + bulk OUT) and no "
				"MBIM function (02/0e + 0a/00/02)%s; name it as usb:VID:PID:IFACE",
				s->name, s->spec.iface >= 0 ? " on the configured interface" : "");
		s->last_open_error = -ENXIO;
		libusb_close(h);
		return -ENXIO;
	}
	if (s->mbim) {
		s->ifnum = mb.comm_ifnum;
		s->comm_alt = mb.comm_alt;
		s->data_ifnum = mb.data_ifnum;
		s->data_alt = mb.data_alt;
		s->mbim_desc = mb.desc;
		s->ctrl_size = usb_mbim_control_size(&mb.desc);
		s->ep_int = mb.ep_int;
		s->ep_in = mb.ep_in;
		s->ep_out = mb.ep_out;
		s->mps_in = mb.mps_in;
		mps_out = mb.mps_out;
		how = mb.how;
	} else {
		s->ifnum = s->data_ifnum = q.ifnum;
		s->ctrl_size = USB_CTRL_MAX;
		s->ep_int = q.ep_int;
		s->ep_in = q.ep_in;
		s->ep_out = q.ep_out;
		s->mps_in = q.mps_in;
		mps_out = q.mps_out;
		how = q.how;
	}
	usb_format_name(s, dev, dd, s->ifnum);
	s->h = h;
	t->framing = TRANSPORT_FRAMING_QMAP;

	/* The kernel's name for the control port while its driver still holds it; an earlier
	 * claim's stays when the driver had let go already. */
	char path[USB_SPEC_PATH_MAX];
	int cfg = 0;
	if (libusb_get_configuration(h, &cfg) == 0 && cfg > 0)
		usb_wdm_name("/sys", usb_device_path(dev, path, sizeof(path)), (unsigned)cfg,
			     s->ifnum, t->control_port, sizeof(t->control_port));
	/* cdc_mbim binds the communications interface and claims the data interface. */
	if (usb_detach(s, s->ifnum, s->mbim ? "cdc_mbim" : "qmi_wwan") < 0 ||
	    (s->mbim && usb_detach(s, s->data_ifnum, "cdc_mbim") < 0))
		goto fail;
	r = libusb_claim_interface(h, s->ifnum);
	if (r < 0) {
		usb_open_failed(s, "claiming the interface", usb_errno(r));
		goto fail;
	}
	if (s->mbim) {
		r = libusb_claim_interface(h, s->data_ifnum);
		if (r < 0) {
			usb_open_failed(s, "claiming the data interface", usb_errno(r));
			libusb_release_interface(h, s->ifnum);
			goto fail;
		}
		/* No DTR: cdc_mbim sets no control line state. */
		r = usb_mbim_setup(s);
		if (r < 0) {
			s->last_open_error = r;
			libusb_set_interface_alt_setting(h, s->data_ifnum, 0);
			libusb_release_interface(h, s->data_ifnum);
			libusb_release_interface(h, s->ifnum);
			goto fail;
		}
	} else {
		usb_set_dtr(s, true);
	}

	/* The ZLP rule must use the real endpoint's packet size, not the configured guess. */
	if (mps_out)
		t->params.max_packet_size = mps_out;

	/* usbfs-mapped memory saves a copy per transfer; umockdev and old kernels lack it. */
	s->rx_dev_mem = libusb_dev_mem_alloc(h, s->rx_stride * t->n_rx);
	usb_dl_size_changed(t);
	/*
	 * No grant yet for this modem: the first transfers take the whole buffer, so that a
	 * grant larger than the last one (or than the request) cannot overflow the transfers
	 * already in flight when it arrives. Each resubmission takes the granted length.
	 */
	uint32_t mps = s->mps_in ? s->mps_in : 512;
	uint32_t room = (uint32_t)((s->rx_stride - TRANSPORT_RX_HEADROOM) / mps * mps);
	/* MBIM: the input size is agreed already; every transfer takes exactly that. */
	if (room > s->rx_len && !s->mbim)
		s->rx_len = room;

	s->have_identity = true;
	snprintf(s->serial, sizeof(s->serial), "%s", serial);
	s->bus = libusb_get_bus_number(dev);
	int n = libusb_get_port_numbers(dev, s->ports, sizeof(s->ports));
	s->n_ports = n < 0 ? 0 : (uint8_t)n;
	s->state = USB_STATE_UP;
	s->errors_in_row = 0;
	s->last_open_error = 0;
	s->warned_missing = false;
	s->resp_pending = 0;
	s->resp_busy = false;
	s->polling = s->draining = false;
	s->resp_owed = s->resp_ahead = 0;
	s->cmd_head = s->cmd_count = 0;
	s->cmd_busy = false;

	/*
	 * One packet per interrupt transfer, as cdc-wdm and usbnet size theirs. A transfer
	 * ends at a short packet or when full: a longer one never ends at an 8-byte
	 * RESPONSE_AVAILABLE on an 8-byte endpoint (the EC25's), only once eight have come,
	 * and each response waits for the poll timer meanwhile (seen on the real USB stack).
	 */
	int mps_int = libusb_get_max_packet_size(dev, s->ep_int) & 0x7ff;
	s->intr_len = mps_int >= 8 && (size_t)mps_int < sizeof(s->intr_buf)
			      ? (uint16_t)mps_int
			      : (uint16_t)sizeof(s->intr_buf);
	libusb_fill_interrupt_transfer(s->intr, h, s->ep_int, s->intr_buf, s->intr_len, usb_intr_cb,
				       s, 0);
	r = libusb_submit_transfer(s->intr);
	if (r < 0)
		goto fail_submit;
	s->in_flight++;
	for (uint32_t i = 0; i < t->n_rx; i++) {
		uint8_t *buf = s->rx_dev_mem
				       ? s->rx_dev_mem + i * s->rx_stride + TRANSPORT_RX_HEADROOM
				       : t->rx_buf[i];
		libusb_fill_bulk_transfer(s->rx[i], h, s->ep_in, buf, (int)s->rx_len, usb_rx_cb, s,
					  0);
		r = libusb_submit_transfer(s->rx[i]);
		if (r < 0)
			goto fail_submit;
		s->in_flight++;
	}
	usb_loop_arm_timeout(s->ul);
	t->data_interface = s->data_ifnum;
	usb_device_names(h, dd, t->manufacturer, sizeof(t->manufacturer), t->product,
			 sizeof(t->product));
	t->vid = dd->idVendor;
	t->pid = dd->idProduct;
	log_info("%s: claimed (%s), '%s' '%s', serial '%s', %u bulk IN transfers of %u bytes in "
		 "flight%s",
		 s->name, how, t->manufacturer, t->product, serial, t->n_rx, s->rx_len,
		 s->rx_dev_mem ? " (usbfs memory)" : "");
	if (t->cb.on_connect)
		t->cb.on_connect(t->userdata);
	return 0;

fail_submit:
	log_error_errno(usb_errno(r), "%s: submitting the first transfers failed", s->name);
	usb_lost(s);
	return usb_errno(r);
fail:
	usb_release(s, USB_RELEASE_UNCLAIMED);
	return -EBUSY;
}

/* A hotplug callback will tell us of the modem's return (else the rescan timer looks). */
static bool usb_hotplug_heard(const struct transport_usb *s)
{
	return s->has_hotplug && !usb_hotplug_unheard();
}

/* Look for the modem; claim it when found. 0 claimed, -ENODEV absent, other -errno. */
static int usb_scan(struct transport_usb *s)
{
	libusb_device **list;
	ssize_t n = libusb_get_device_list(s->ctx, &list);
	int r = -ENODEV;

	if (n < 0)
		return usb_errno((int)n);
	for (ssize_t i = 0; i < n && r == -ENODEV; i++) {
		libusb_device *dev = list[i];
		struct libusb_device_descriptor dd;
		libusb_device_handle *h;
		char serial[128];

		if (libusb_get_device_descriptor(dev, &dd) < 0)
			continue;
		if (s->spec.kind == USB_SPEC_ID &&
		    (dd.idVendor != s->spec.vid || dd.idProduct != s->spec.pid))
			continue;
		if (s->spec.kind == USB_SPEC_PATH &&
		    !usb_device_path_matches(dev, s->spec.bus, s->spec.ports, s->spec.n_ports))
			continue;
		/* A replug must be the same modem: its serial, or without one its port. */
		if (s->have_identity && !s->serial[0] &&
		    !usb_device_path_matches(dev, s->bus, s->ports, s->n_ports))
			continue;
		usb_format_name(s, dev, &dd, -1);
		int k = libusb_open(dev, &h);
		if (k < 0) {
			usb_open_failed(s, "opening the device", usb_errno(k));
			r = usb_errno(k);
			break;
		}
		usb_device_serial(h, &dd, serial, sizeof(serial));
		if (s->have_identity && s->serial[0] && strcmp(serial, s->serial) != 0) {
			log_debug("%s: serial '%s' is not the modem we had ('%s')", s->name, serial,
				  s->serial);
			libusb_close(h);
			continue;
		}
		r = usb_claim(s, dev, &dd, h, serial);
	}
	libusb_free_device_list(list, 1);
	if (r == -ENODEV && !s->warned_missing) {
		log_warning_errno(-ENODEV, "transport usb %s: no such device%s; waiting for it",
				  s->spec_text,
				  usb_hotplug_heard(s) ? "" : " (re-scanning every second)");
		s->warned_missing = true;
	}
	return r;
}

/* Every transfer not allocated yet. 0 or -ENOMEM. */
static int usb_alloc_transfers(struct transport_usb *s)
{
	struct transport *t = &s->base;
	struct libusb_transfer **one[] = { &s->cmd, &s->intr, &s->resp };

	for (uint32_t i = 0; i < t->n_rx; i++)
		if (!s->rx[i] && !(s->rx[i] = libusb_alloc_transfer(0)))
			return -ENOMEM;
	for (uint32_t i = 0; i < t->n_out; i++)
		if (!s->tx[i] && !(s->tx[i] = libusb_alloc_transfer(0)))
			return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(one); i++)
		if (!*one[i] && !(*one[i] = libusb_alloc_transfer(0)))
			return -ENOMEM;
	return 0;
}

/*
 * Transfers before libusb_exit(): a transfer once submitted holds a reference to its
 * device, and dropping that after the context is gone reads freed memory (seen after an
 * unplug/replug cycle, when the old device lives on only through those references).
 */
static void usb_free_transfers(struct transport_usb *s)
{
	struct transport *t = &s->base;

	for (uint32_t i = 0; s->rx && i < t->n_rx; i++) {
		libusb_free_transfer(s->rx[i]);
		s->rx[i] = NULL;
	}
	for (uint32_t i = 0; s->tx && i < t->n_out; i++) {
		libusb_free_transfer(s->tx[i]);
		s->tx[i] = NULL;
	}
	libusb_free_transfer(s->cmd);
	libusb_free_transfer(s->intr);
	libusb_free_transfer(s->resp);
	s->cmd = s->intr = s->resp = NULL;
}

/*
 * Without udevd a udev-built libusb lists only the devices it had (usb-presence.h): when
 * sysfs shows a change, a new context, enumerated afresh, and new transfers (the old ones
 * hold the old context's devices). Only while waiting, when nothing is open or in flight.
 * 0, or -ENOMEM with a transfer missing (allocated again on the next look).
 */
static int usb_notice_new_devices(struct transport_usb *s)
{
	if (s->has_hotplug && usb_loop_missed_devices(s->ul)) {
		libusb_hotplug_deregister_callback(s->ctx, s->hotplug);
		usb_free_transfers(s);
		if (usb_loop_renew(s->ul) == 0)
			s->ctx = usb_loop_context(s->ul);
		usb_register_hotplug(s);
	}
	if (usb_alloc_transfers(s) < 0)
		return log_error_errno(-ENOMEM, "%s: no memory for new transfers", s->name);
	return 0;
}

static void usb_on_rescan(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct transport_usb *s = w->data;
	(void)revents;

	ev_timer_stop(loop, w);
	if (!s->started || s->state != USB_STATE_WAITING)
		return;
	int r = usb_notice_new_devices(s);
	if (r == 0)
		r = usb_scan(s);
	if (r == 0)
		return;
	/* Absent with hotplug that is heard: the ARRIVED callback brings us back. */
	if (r == -ENODEV && usb_hotplug_heard(s))
		return;
	ev_timer_set(w, r == -ENODEV ? USB_RESCAN_SECONDS : USB_RETRY_SECONDS, 0.);
	ev_timer_start(loop, w);
}

static void usb_schedule_scan(struct transport_usb *s)
{
	ev_timer_stop(s->base.loop, &s->rescan);
	ev_timer_set(&s->rescan, 0., 0.);
	ev_timer_start(s->base.loop, &s->rescan);
}

/*
 * Cancelling an idle or finished transfer only returns an error, so every one is tried;
 * but not one last filled for an earlier claim: its handle is closed (and its context
 * maybe gone, usb_loop_renew()), and such a transfer is not in flight.
 */
static void usb_cancel(struct transport_usb *s, struct libusb_transfer *x)
{
	if (s->h && x->dev_handle == s->h)
		libusb_cancel_transfer(x);
}

static void usb_cancel_all(struct transport_usb *s)
{
	struct transport *t = &s->base;

	for (uint32_t i = 0; i < t->n_rx; i++)
		usb_cancel(s, s->rx[i]);
	usb_cancel(s, s->intr);
	usb_cancel(s, s->resp);
	usb_cancel(s, s->cmd);
	for (uint32_t i = 0; i < t->n_out; i++)
		usb_cancel(s, s->tx[i]);
}

/* The modem went away (or stops): cancel everything, tear down once all came back. */
static void usb_lost(struct transport_usb *s)
{
	struct transport *t = &s->base;

	if (s->state != USB_STATE_UP)
		return;
	s->state = USB_STATE_DYING;
	ev_timer_stop(t->loop, &s->resp_poll);
	s->resp_pending = 0;
	s->out_failing = s->cmd_failing = s->resp_failing = false;
	log_warning_errno(-ENODEV, "%s: modem disconnected, %u transfers to complete", s->name,
			  s->in_flight);
	usb_cancel_all(s);
	if (s->in_flight == 0)
		ev_feed_event(t->loop, &s->reap, EV_TIMER);
}

static void usb_on_reap(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct transport_usb *s = w->data;
	struct transport *t = &s->base;
	(void)loop;
	(void)revents;

	if (s->state != USB_STATE_DYING || s->in_flight > 0)
		return;
	usb_flush_batch(s);
	usb_release(s, USB_RELEASE_GONE);
	s->state = USB_STATE_WAITING;
	t->framing = TRANSPORT_FRAMING_QMAP;
	log_info("%s: all transfers completed; waiting for the modem to come back", s->name);
	if (t->cb.on_disconnect)
		t->cb.on_disconnect(t->userdata);
	if (s->started)
		usb_schedule_scan(s);
}

static int LIBUSB_CALL usb_on_hotplug(libusb_context *ctx, libusb_device *dev,
				      libusb_hotplug_event ev, void *userdata)
{
	struct transport_usb *s = userdata;
	(void)ctx;

	/* Never open from inside libusb's event handling: look on the next loop turn. */
	if (ev == LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED && s->state == USB_STATE_WAITING)
		usb_schedule_scan(s);
	else if (ev == LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT && s->h && libusb_get_device(s->h) == dev)
		usb_lost(s);
	return 0;
}

/* Hotplug callbacks for our modem (its IDs, or every device for a port path). */
static void usb_register_hotplug(struct transport_usb *s)
{
	bool by_id = s->spec.kind == USB_SPEC_ID;
	int r;

	if (!s->has_hotplug)
		return;
	r = libusb_hotplug_register_callback(
		s->ctx, LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT, 0,
		by_id ? s->spec.vid : LIBUSB_HOTPLUG_MATCH_ANY,
		by_id ? s->spec.pid : LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
		usb_on_hotplug, s, &s->hotplug);
	if (r < 0) {
		log_warning_errno(usb_errno(r),
				  "transport usb %s: no hotplug callbacks, re-scanning instead",
				  s->spec_text);
		s->has_hotplug = false;
	}
}

/* ---- the ops ---- */

static int usb_init(struct transport *t, const char *address)
{
	struct transport_usb *s = to_usb(t);
	char err[USB_SPEC_ERROR_MAX];
	int r;

	/* The scheme is "usb" so both "usb:" and "usb-path:" come here. */
	snprintf(s->spec_text, sizeof(s->spec_text), "usb%s", address);
	r = usb_spec_parse(s->spec_text, &s->spec, err, sizeof(err));
	if (r < 0) {
		log_error("transport usb: invalid device '%s': %s", s->spec_text, err);
		return r;
	}
	snprintf(s->name, sizeof(s->name), "transport %s", s->spec_text);

	ev_timer_init(&s->rescan, usb_on_rescan, 0., 0.);
	ev_timer_init(&s->reap, usb_on_reap, 0., 0.);
	ev_timer_init(&s->resp_poll, usb_on_resp_poll, 0., 0.);
	s->rescan.data = s->reap.data = s->resp_poll.data = s;

	/* Receive buffers: the ring's stride (headroom and buffer), kept in usbfs memory too. */
	s->rx_stride = TRANSPORT_RX_HEADROOM + t->rx_buf_size;
	if (t->n_rx > 1)
		s->rx_stride = (size_t)(t->rx_buf[1] - t->rx_buf[0]);
	s->rx_len = t->params.dl_max_size;

	s->rx = calloc(t->n_rx, sizeof(*s->rx));
	s->rx_batch = calloc(t->n_rx, sizeof(*s->rx_batch));
	s->tx = calloc(t->n_out, sizeof(*s->tx));
	if (!s->rx || !s->rx_batch || !s->tx)
		return -ENOMEM;
	r = usb_alloc_transfers(s);
	if (r < 0)
		return r;

	char what[sizeof(s->spec_text) + 16];
	snprintf(what, sizeof(what), "transport %s", s->spec_text);
	r = usb_loop_new(t->loop, what, usb_after_events, s, &s->ul);
	if (r < 0)
		return r;
	s->ctx = usb_loop_context(s->ul);

	s->has_hotplug = libusb_has_capability(LIBUSB_CAP_HAS_HOTPLUG);
	usb_register_hotplug(s);
	return 0;
}

static int usb_start(struct transport *t)
{
	struct transport_usb *s = to_usb(t);

	s->started = true;
	/* A modem that is not there yet is not an error: wait for it, like the sim does. */
	if (s->state == USB_STATE_WAITING)
		usb_schedule_scan(s);
	return 0;
}

/* Wait (bounded) for cancelled transfers, so the buffers are ours again before release. */
static void usb_drain(struct transport_usb *s)
{
	ev_tstamp end = ev_time() + USB_STOP_WAIT;

	while (s->in_flight > 0 && ev_time() < end) {
		struct timeval tv = { 0, 100000 };
		libusb_handle_events_timeout_completed(s->ctx, &tv, NULL);
	}
	if (s->in_flight > 0)
		log_warning_errno(-ETIMEDOUT, "%s: %u transfers did not come back", s->name,
				  s->in_flight);
}

static void usb_stop(struct transport *t)
{
	struct transport_usb *s = to_usb(t);

	s->started = false;
	ev_timer_stop(t->loop, &s->rescan);
	ev_timer_stop(t->loop, &s->resp_poll);
	if (s->state == USB_STATE_UP) {
		s->state = USB_STATE_DYING;
		/* Stopping: nothing more goes to the consumer, which may be half torn down. */
		s->n_batch = 0;
		usb_cancel_all(s);
		usb_drain(s);
		usb_release(s, t->keep_modem ? USB_RELEASE_KEEP : USB_RELEASE_CLAIMED);
		s->state = USB_STATE_WAITING;
	} else if (s->state == USB_STATE_DYING) {
		usb_drain(s);
		usb_release(s, USB_RELEASE_GONE);
		s->state = USB_STATE_WAITING;
	}
	ev_timer_stop(t->loop, &s->reap);
}

static void usb_free(struct transport *t)
{
	struct transport_usb *s = to_usb(t);

	if (s->ctx && t->loop)
		usb_stop(t);
	usb_free_transfers(s);
	if (s->ctx) {
		if (s->has_hotplug)
			libusb_hotplug_deregister_callback(s->ctx, s->hotplug);
		s->ul = usb_loop_free(s->ul);
		s->ctx = NULL;
	}
	free(s->rx);
	free(s->rx_batch);
	free(s->tx);
}

const struct transport_ops transport_usb_ops = {
	.scheme = "usb",
	.size = sizeof(struct transport_usb),
	.init = usb_init,
	.start = usb_start,
	.stop = usb_stop,
	.out_submit = usb_out_submit,
	.control_send = usb_control_send,
	.dl_size_changed = usb_dl_size_changed,
	.free = usb_free,
};
