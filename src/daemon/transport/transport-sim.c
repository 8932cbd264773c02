/* SPDX-License-Identifier: MIT */
/*
 * The `sim` transport: an AF_UNIX SOCK_SEQPACKET connection to qmapd-sim, one message per
 * USB transfer (struct transport_sim_header + bytes). Message boundaries are kept by the
 * kernel, so a message is exactly what a completed URB would be. All receive buffers are
 * posted at once with recvmmsg(), which also takes up to n_rx transfers per syscall.
 */
#include <errno.h>
#include <ev.h>
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "ntb-setup.h"
#include "transport.h"

#define SIM_RECONNECT_SECONDS 1.0
#define SIM_RX_BATCHES	      4 /* recvmmsg rounds per wakeup before yielding to the loop */

struct transport_sim {
	struct transport base;
	struct sockaddr_un addr;
	int fd;
	bool connected;
	bool described;	  /* the descriptor message of this connection arrived */
	bool announced;	  /* on_connect was called for this connection */
	bool negotiating; /* MBIM: the class requests are under way */
	struct ntb_setup setup;
	char setup_name[sizeof(((struct sockaddr_un *)0)->sun_path) + 16];
	bool warned_connect;
	ev_io io_read;
	ev_io io_write;
	ev_timer reconnect;
	struct transport_out *pending_head; /* OUT transfers waiting for socket space */
	struct transport_out *pending_tail;
	/* Sent, and in flight until the sim says the modem took them (TRANSPORT_SIM_FLAG_ACK). */
	struct transport_out *sent_head;
	struct transport_out *sent_tail;

	/* recvmmsg scaffolding, allocated once for n_rx buffers. */
	struct mmsghdr *msgs;
	struct iovec *iovs;
	struct transport_sim_header *hdrs;
};

static struct transport_sim *to_sim(struct transport *t)
{
	return (struct transport_sim *)t;
}

static void sim_disconnect(struct transport_sim *s);
static void sim_descriptor(struct transport_sim *s, const uint8_t *buf, size_t len);
static void sim_class_answer(struct transport_sim *s, const uint8_t *buf, size_t len,
			     uint8_t flags);
static int sim_send(struct transport_sim *s, uint8_t ep, uint8_t flags, const uint8_t *buf,
		    size_t len);

static void sim_deliver(struct transport_sim *s, unsigned i, size_t msg_len, int msg_flags)
{
	struct transport *t = &s->base;
	const struct transport_sim_header *h = &s->hdrs[i];
	uint8_t *buf = t->rx_buf[i];

	if (msg_len < sizeof(*h) || (msg_flags & MSG_TRUNC)) {
		/* The sim sent more than a receive buffer holds: what libusb calls OVERFLOW. */
		t->stats.in_errors++;
		if (msg_flags & MSG_TRUNC) {
			t->stats.in_overflows++;
			if (t->stats.in_overflows == 1 || t->stats.in_overflows % 1000 == 0)
				log_warning("transport sim %s: a transfer larger than the granted "
					    "%u bytes, dropped (%" PRIu64 " so far): the modem "
					    "ignores the grant",
					    s->addr.sun_path, t->params.dl_max_size,
					    t->stats.in_overflows);
		}
		return;
	}
	size_t len = msg_len - sizeof(*h);
	switch ((enum transport_ep)h->ep) {
	case TRANSPORT_EP_BULK_IN:
		t->stats.in_transfers++;
		t->stats.in_bytes += len;
		t->cb.on_bulk_in(t->userdata, buf, len);
		return;
	case TRANSPORT_EP_CONTROL:
		if (t->cb.on_control)
			t->cb.on_control(t->userdata, buf, len);
		return;
	case TRANSPORT_EP_INTERRUPT:
		if (t->cb.on_interrupt)
			t->cb.on_interrupt(t->userdata, buf, len);
		return;
	case TRANSPORT_EP_DESCRIPTOR:
		sim_descriptor(s, buf, len);
		return;
	case TRANSPORT_EP_CLASS_REQUEST:
		sim_class_answer(s, buf, len, h->flags);
		return;
	case TRANSPORT_EP_BULK_OUT:
		/* The modem took that many more of the transfers we sent. */
		if (len == sizeof(uint32_t)) {
			uint32_t n;
			memcpy(&n, buf, sizeof(n));
			while (n-- > 0 && s->sent_head) {
				struct transport_out *out = s->sent_head;
				s->sent_head = out->next;
				if (!s->sent_head)
					s->sent_tail = NULL;
				transport_out_complete(t, out);
			}
			return;
		}
		break;
	}
	t->stats.in_errors++;
}

/* The function is there and the data interface set up: transfers may flow. */
static void sim_announce(struct transport_sim *s)
{
	struct transport *t = &s->base;

	s->announced = true;
	if (t->cb.on_connect)
		t->cb.on_connect(t->userdata);
}

/*
 * The next class request of the sequence (ntb-setup.h), or at its end the function is
 * announced. The sim answers every request, in order.
 */
static void sim_mbim_next(struct transport_sim *s)
{
	struct transport *t = &s->base;
	struct ntb_setup_request req;

	if (!ntb_setup_next(&s->setup, t, &req)) {
		s->negotiating = false;
		ntb_setup_finish(&s->setup, t);
		sim_announce(s);
		return;
	}
	uint8_t msg[sizeof(struct transport_sim_class_request) + sizeof(req.data)];
	struct transport_sim_class_request h = {
		.request_type = req.request_type,
		.request = req.request,
		.value = htole16(req.value),
		.length = htole16(req.length),
	};
	memcpy(msg, &h, sizeof(h));
	size_t n = sizeof(h);
	if (req.request_type == CDC_REQ_TYPE_OUT && req.length) {
		memcpy(msg + n, req.data, req.length);
		n += req.length;
	}
	int r = sim_send(s, TRANSPORT_EP_CLASS_REQUEST, 0, msg, n);
	if (r < 0) {
		log_warning_errno(r, "transport sim %s: class request 0x%02x failed",
				  s->addr.sun_path, req.request);
		sim_disconnect(s);
	}
}

/* The answer to the class request in flight. */
static void sim_class_answer(struct transport_sim *s, const uint8_t *buf, size_t len, uint8_t flags)
{
	struct transport *t = &s->base;
	const size_t hlen = sizeof(struct transport_sim_class_request);

	if (len < hlen || !s->negotiating) {
		t->stats.in_errors++;
		return;
	}
	ntb_setup_answer(&s->setup, t, flags & TRANSPORT_SIM_FLAG_STALL, buf + hlen, len - hlen);
	sim_mbim_next(s);
}

/*
 * The sim's first message says what a USB descriptor would: the data interface's number and
 * the function: QMI, announced at once (it precedes every control response on the
 * connection, so QMI, which asks for the number only when it builds a request, always finds
 * it), or MBIM followed by its NTB parameters, announced once the class requests are done.
 */
static void sim_descriptor(struct transport_sim *s, const uint8_t *buf, size_t len)
{
	struct transport *t = &s->base;
	struct transport_sim_descriptor d;
	struct transport_sim_mbim_descriptor md;

	if (len < sizeof(d) || s->described) {
		t->stats.in_errors++;
		return;
	}
	memcpy(&d, buf, sizeof(d));
	s->described = true;
	t->data_interface = d.interface_number;
	if (d.function != TRANSPORT_SIM_FUNCTION_MBIM) {
		log_info("transport sim %s: data interface %u", s->addr.sun_path,
			 d.interface_number);
		sim_announce(s);
		return;
	}
	t->ntb = (struct transport_ntb){ .format = NTB_FORMAT_16, .control_interface = -1 };
	if (len < sizeof(d) + sizeof(md) ||
	    (memcpy(&md, buf + sizeof(d), sizeof(md)),
	     ntb_params_parse(md.ntb_parameters, sizeof(md.ntb_parameters), &t->ntb.params) < 0)) {
		log_warning("transport sim %s: MBIM function without usable NTB parameters",
			    s->addr.sun_path);
		t->stats.in_errors++;
		sim_disconnect(s);
		return;
	}
	t->ntb.max_control_message = le16toh(md.max_control_message);
	t->ntb.max_segment_size = le16toh(md.max_segment_size);
	t->ntb.mtu = le16toh(md.mtu);
	t->ntb.in_size = t->ntb.params.in_max_size;
	/* Until SET_NTB_INPUT_SIZE is answered the function may send its largest NTBs. */
	transport_set_dl_size(t, t->ntb.in_size < t->rx_buf_size ? t->ntb.in_size : t->rx_buf_size);
	log_info("transport sim %s: MBIM function, data interface %u", s->addr.sun_path,
		 d.interface_number);
	snprintf(s->setup_name, sizeof(s->setup_name), "transport sim %s", s->addr.sun_path);
	/* The sim's descriptor does not carry bmNetworkCapabilities: SET_CRC_MODE is asked. */
	ntb_setup_begin(&s->setup, t, s->setup_name, false, 0);
	s->negotiating = true;
	sim_mbim_next(s);
}

static void sim_batch_done(struct transport *t)
{
	if (t->cb.on_bulk_in_done)
		t->cb.on_bulk_in_done(t->userdata);
}

static void sim_on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct transport_sim *s = w->data;
	struct transport *t = &s->base;
	(void)loop;
	(void)revents;

	for (int round = 0; round < SIM_RX_BATCHES; round++) {
		for (uint32_t i = 0; i < t->n_rx; i++) {
			s->msgs[i].msg_hdr.msg_flags = 0;
			s->msgs[i].msg_len = 0;
		}
		int n = recvmmsg(s->fd, s->msgs, t->n_rx, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			log_warning_errno(errno, "transport sim %s: receive failed",
					  s->addr.sun_path);
			sim_disconnect(s);
			return;
		}
		if ((uint64_t)n > t->stats.in_batch_max)
			t->stats.in_batch_max = n;
		for (int i = 0; i < n; i++) {
			/* Every message has a header: a zero-length one is the end of the stream. */
			if (s->msgs[i].msg_len == 0) {
				log_warning("transport sim %s: modem disconnected",
					    s->addr.sun_path);
				sim_batch_done(t);
				sim_disconnect(s);
				return;
			}
			sim_deliver(s, i, s->msgs[i].msg_len, s->msgs[i].msg_hdr.msg_flags);
			if (!s->connected) {
				sim_batch_done(t);
				return;
			}
		}
		/* The next recvmmsg() reuses the buffers: whoever holds pointers lets go now. */
		sim_batch_done(t);
		if ((uint32_t)n < t->n_rx)
			return;
	}
}

static int sim_send(struct transport_sim *s, uint8_t ep, uint8_t flags, const uint8_t *buf,
		    size_t len)
{
	struct transport_sim_header h = { .ep = ep, .flags = flags };
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return negative_errno();
	return 0;
}

/* Send queued OUT transfers in order; stop at the first that does not fit. */
static int sim_flush_pending(struct transport_sim *s)
{
	struct transport *t = &s->base;

	while (s->pending_head) {
		struct transport_out *out = s->pending_head;
		int r = sim_send(s, TRANSPORT_EP_BULK_OUT,
				 TRANSPORT_SIM_FLAG_ACK | (out->zlp ? TRANSPORT_SIM_FLAG_ZLP : 0),
				 out->data, out->len);
		if (r == -EAGAIN) {
			ev_io_start(t->loop, &s->io_write);
			return 0;
		}
		s->pending_head = out->next;
		if (!s->pending_head)
			s->pending_tail = NULL;
		if (r < 0) {
			t->stats.out_errors++;
			transport_out_complete(t, out);
		} else {
			/* In flight until the modem takes it: the sim acknowledges. */
			out->next = NULL;
			if (s->sent_tail)
				s->sent_tail->next = out;
			else
				s->sent_head = out;
			s->sent_tail = out;
		}
		if (r < 0 && r != -EAGAIN) {
			log_warning_errno(r, "transport sim %s: send failed", s->addr.sun_path);
			sim_disconnect(s);
			return r;
		}
	}
	ev_io_stop(t->loop, &s->io_write);
	return 0;
}

static void sim_on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	sim_flush_pending(w->data);
}

static int sim_out_submit(struct transport *t, struct transport_out *out, bool zlp)
{
	struct transport_sim *s = to_sim(t);
	(void)zlp;

	if (!s->connected) {
		t->stats.out_errors++;
		transport_out_complete(t, out);
		return -ENOTCONN;
	}
	out->next = NULL;
	if (s->pending_tail)
		s->pending_tail->next = out;
	else
		s->pending_head = out;
	s->pending_tail = out;
	return sim_flush_pending(s);
}

static int sim_control_send(struct transport *t, const uint8_t *buf, size_t len)
{
	struct transport_sim *s = to_sim(t);

	if (!s->connected)
		return -ENOTCONN;
	return sim_send(s, TRANSPORT_EP_CONTROL, 0, buf, len);
}

static int sim_connect(struct transport_sim *s)
{
	struct transport *t = &s->base;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return negative_errno();
	if (connect(fd, (struct sockaddr *)&s->addr, sizeof(s->addr)) < 0)
		return negative_errno();

	s->fd = TAKE_FD(fd);
	s->connected = true;
	s->warned_connect = false;
	ev_io_set(&s->io_read, s->fd, EV_READ);
	ev_io_set(&s->io_write, s->fd, EV_WRITE);
	s->described = false;
	s->announced = false;
	s->negotiating = false;
	t->framing = TRANSPORT_FRAMING_QMAP;
	ev_io_start(t->loop, &s->io_read);
	/* on_connect waits for the descriptor message (and, for MBIM, the class requests). */
	log_info("transport sim %s: connected to modem", s->addr.sun_path);
	return 0;
}

static void sim_on_reconnect(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct transport_sim *s = w->data;
	(void)revents;

	int r = sim_connect(s);
	if (r < 0) {
		if (!s->warned_connect)
			log_warning_errno(r, "transport sim %s: cannot connect, retrying",
					  s->addr.sun_path);
		s->warned_connect = true;
		ev_timer_set(&s->reconnect, SIM_RECONNECT_SECONDS, 0.);
		ev_timer_start(loop, &s->reconnect);
	}
}

static void sim_close(struct transport_sim *s)
{
	struct transport *t = &s->base;

	ev_io_stop(t->loop, &s->io_read);
	ev_io_stop(t->loop, &s->io_write);
	ev_timer_stop(t->loop, &s->reconnect);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->connected = false;
	s->described = false;
	s->announced = false;
	t->data_interface = -1;
	t->framing = TRANSPORT_FRAMING_QMAP;
	/* Like an unplug: every OUT transfer completes (with an error). */
	while (s->pending_head) {
		struct transport_out *out = s->pending_head;
		s->pending_head = out->next;
		t->stats.out_errors++;
		transport_out_complete(t, out);
	}
	s->pending_tail = NULL;
	/* Sent but never taken: they end with the connection, as URBs do on an unplug. */
	while (s->sent_head) {
		struct transport_out *out = s->sent_head;
		s->sent_head = out->next;
		transport_out_complete(t, out);
	}
	s->sent_tail = NULL;
}

static void sim_disconnect(struct transport_sim *s)
{
	struct transport *t = &s->base;
	bool announced = s->announced;
	sim_close(s);
	if (announced && t->cb.on_disconnect)
		t->cb.on_disconnect(t->userdata);
	ev_timer_set(&s->reconnect, SIM_RECONNECT_SECONDS, 0.);
	ev_timer_start(t->loop, &s->reconnect);
}

static int sim_init(struct transport *t, const char *address)
{
	struct transport_sim *s = to_sim(t);

	s->fd = -1;
	if (address[0] == '\0' || strlen(address) >= sizeof(s->addr.sun_path))
		return -EINVAL;
	s->addr.sun_family = AF_UNIX;
	strcpy(s->addr.sun_path, address);

	s->msgs = calloc(t->n_rx, sizeof(*s->msgs));
	s->iovs = calloc(t->n_rx * 2, sizeof(*s->iovs));
	s->hdrs = calloc(t->n_rx, sizeof(*s->hdrs));
	if (!s->msgs || !s->iovs || !s->hdrs)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n_rx; i++) {
		s->iovs[2 * i] = (struct iovec){ &s->hdrs[i], sizeof(s->hdrs[i]) };
		s->iovs[2 * i + 1] = (struct iovec){ t->rx_buf[i], t->params.dl_max_size };
		s->msgs[i].msg_hdr.msg_iov = &s->iovs[2 * i];
		s->msgs[i].msg_hdr.msg_iovlen = 2;
	}
	ev_io_init(&s->io_read, sim_on_readable, -1, EV_READ);
	ev_io_init(&s->io_write, sim_on_writable, -1, EV_WRITE);
	ev_timer_init(&s->reconnect, sim_on_reconnect, SIM_RECONNECT_SECONDS, 0.);
	s->io_read.data = s->io_write.data = s->reconnect.data = s;
	return 0;
}

static void sim_dl_size_changed(struct transport *t)
{
	struct transport_sim *s = to_sim(t);

	/* A larger message than granted now shows up as MSG_TRUNC: an overflow, counted. */
	for (uint32_t i = 0; i < t->n_rx; i++)
		s->iovs[2 * i + 1].iov_len = t->params.dl_max_size;
}

static int sim_start(struct transport *t)
{
	struct transport_sim *s = to_sim(t);

	/* A modem that is not there yet is not an error: keep trying, like a hotplug wait. */
	sim_on_reconnect(t->loop, &s->reconnect, 0);
	return 0;
}

static void sim_stop(struct transport *t)
{
	sim_close(to_sim(t));
}

static void sim_free(struct transport *t)
{
	struct transport_sim *s = to_sim(t);

	if (t->loop)
		sim_close(s);
	free(s->msgs);
	free(s->iovs);
	free(s->hdrs);
}

const struct transport_ops transport_sim_ops = {
	.scheme = "sim:",
	.size = sizeof(struct transport_sim),
	.init = sim_init,
	.start = sim_start,
	.stop = sim_stop,
	.out_submit = sim_out_submit,
	.control_send = sim_control_send,
	.dl_size_changed = sim_dl_size_changed,
	.free = sim_free,
};
