/* SPDX-License-Identifier: MIT */
/* qmapd-sim's gadgetfs front end: an MBIM function as a whole USB device (sim-gadgetfs.h). */
#include "sim-gadgetfs.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <linux/usb/cdc.h>
#include <linux/usb/ch9.h>
#include <linux/usb/gadgetfs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "transport.h"

/* The EM7455's MBIM composition (see the header): its interface numbers, ids and strings. */
#define GFS_COMM_INTERFACE 12
#define GFS_DATA_INTERFACE 13
#define GFS_VENDOR	   0x1199
#define GFS_PRODUCT	   0x9079
#define GFS_BCD_DEVICE	   0x0006
#define GFS_MANUFACTURER   "Sierra Wireless, Incorporated"
#define GFS_PRODUCT_NAME   "EM7455 (qmapd-sim)"
#define GFS_SERIAL	   "qmapdsim0001"
/* bmNetworkCapabilities: the 8-byte SET_NTB_INPUT_SIZE only (no CRC, no max datagram size
 * requests), as the harness's EM7455. */
#define GFS_CAPS USB_CDC_NCM_NCAP_NTB_INPUT_SIZE
/*
 * gadgetfs names an endpoint file after the controller's endpoint, and the descriptors are
 * written before those files exist: these are dummy_hcd's fixed-function endpoints of the
 * right type and direction, and their addresses (another controller names its own).
 */
#define GFS_EP_INT (5 | USB_DIR_IN)
#define GFS_EP_IN  (1 | USB_DIR_IN)
#define GFS_EP_OUT 2
static const char *const ep_files[] = { "ep5in-int", "ep1in-bulk", "ep2out-bulk" };
#define GFS_QUEUE 64
/* The sim's answer to a class request comes back within its event loop's turn; this bounds a
 * sim that hangs (the host's own control timeout is 5 s). */
#define GFS_CLASS_TIMEOUT_S 2
/* Interrupts a bulk IN write the host will never complete (sim-gadgetfs.h: dropped data). */
#define GFS_SIG_FLUSH (SIGRTMIN + 6)

struct gfs_msg {
	uint32_t len;
	uint8_t data[];
};

struct gfs_queue {
	struct gfs_msg *slot[GFS_QUEUE];
	unsigned head, count;
};

struct sim_gadgetfs {
	char dir[4096];	       /* the gadgetfs mount */
	char ep0_path[4096];   /* its controller file */
	char socket_path[108]; /* the sim's */
	int ep0, ep_int, ep_in, ep_out, sock;
	pthread_t bulk_in_thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct transport_sim_mbim_descriptor mbim; /* the sim's, from its descriptor message */
	uint8_t caps;				   /* bmNetworkCapabilities */
	uint8_t config[2][256];			   /* full-speed and high-speed configuration */
	size_t config_len[2];
	/* Under the lock: */
	bool eps_open, configured;
	unsigned data_alt;   /* the data interface's alternate setting */
	uint16_t mps;	     /* bulk wMaxPacketSize at the connected speed */
	uint32_t in_size;    /* the host's NTB input size: no ZLP after an NTB this long */
	unsigned generation; /* bumped by every flush: bulk IN from before is dropped */
	struct gfs_queue control, bulk_in;
	unsigned notify; /* RESPONSE_AVAILABLE still to send */
	/* The sim's answer to the class request in flight: answer_len < 0 while waiting. */
	uint8_t answer[sizeof(struct transport_sim_class_request) + 64];
	int answer_len;
	uint8_t answer_flags;
	struct sim_gadgetfs_stats stats;
	char sequence[1024]; /* class_sequence: what the host did to the data interface */
	/* The ep0 thread's: a request ep0_recover() stalled, whose event is still to come. */
	bool stale_in;
	uint32_t slow_us;			 /* --gadgetfs-slow-commands */
	uint8_t ep0_buf[TRANSPORT_MAX_TRANSFER]; /* ep0 thread only */
	uint8_t out_buf[TRANSPORT_MAX_TRANSFER]; /* bulk OUT thread only */
};

static uint16_t get_le16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t get_le32(const void *p)
{
	const uint8_t *b = p;
	return b[0] | b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* dwNtbInMaxSize of GET_NTB_PARAMETERS: the NTB input size until the host sets one. */
static uint32_t ntb_in_max(const struct sim_gadgetfs *g)
{
	return get_le32(g->mbim.ntb_parameters + 4);
}

/* The configuration at full (hs false) or high speed, into d; returns its length. */
static size_t build_config(const struct sim_gadgetfs *g, bool hs, uint8_t *d)
{
	uint16_t ctrl = get_le16(&g->mbim.max_control_message);
	uint16_t seg = get_le16(&g->mbim.max_segment_size);
	uint16_t mtu = get_le16(&g->mbim.mtu);
	uint16_t mps = hs ? 512 : 64;
	size_t n = 0;

#define PUT(...)                                      \
	do {                                          \
		const uint8_t b_[] = { __VA_ARGS__ }; \
		memcpy(d + n, b_, sizeof(b_));        \
		n += sizeof(b_);                      \
	} while (0)
	/* Bus powered, 500 mA; not the EM7455's remote wakeup bit, which gadgetfs refuses. */
	PUT(USB_DT_CONFIG_SIZE, USB_DT_CONFIG, 0, 0, 2, 1, 0, USB_CONFIG_ATT_ONE, 250);
	PUT(sizeof(struct usb_interface_assoc_descriptor), USB_DT_INTERFACE_ASSOCIATION,
	    GFS_COMM_INTERFACE, 2, USB_CLASS_COMM, USB_CDC_SUBCLASS_MBIM, 0, 0);
	PUT(USB_DT_INTERFACE_SIZE, USB_DT_INTERFACE, GFS_COMM_INTERFACE, 0, 1, USB_CLASS_COMM,
	    USB_CDC_SUBCLASS_MBIM, 0, 0);
	PUT(5, USB_DT_CS_INTERFACE, USB_CDC_HEADER_TYPE, 0x10, 0x01); /* CDC 1.10 */
	/* MBIM 1.00: 32 filters of up to 128 bytes. */
	PUT(12, USB_DT_CS_INTERFACE, USB_CDC_MBIM_TYPE, 0x00, 0x01, ctrl & 0xff, ctrl >> 8, 32, 128,
	    seg & 0xff, seg >> 8, g->caps);
	if (mtu) /* MBIM extended 1.00: 64 commands outstanding */
		PUT(8, USB_DT_CS_INTERFACE, USB_CDC_MBIM_EXTENDED_TYPE, 0x00, 0x01, 64, mtu & 0xff,
		    mtu >> 8);
	PUT(5, USB_DT_CS_INTERFACE, USB_CDC_UNION_TYPE, GFS_COMM_INTERFACE, GFS_DATA_INTERFACE);
	/* 64-byte notifications every 32 ms: 2^(9-1) microframes at high speed. */
	PUT(USB_DT_ENDPOINT_SIZE, USB_DT_ENDPOINT, GFS_EP_INT, USB_ENDPOINT_XFER_INT, 64, 0,
	    hs ? 9 : 32);
	PUT(USB_DT_INTERFACE_SIZE, USB_DT_INTERFACE, GFS_DATA_INTERFACE, 0, 0, USB_CLASS_CDC_DATA,
	    0, 0x02, 0); /* 0a/00/02: NTB (MBIM) */
	PUT(USB_DT_INTERFACE_SIZE, USB_DT_INTERFACE, GFS_DATA_INTERFACE, 1, 2, USB_CLASS_CDC_DATA,
	    0, 2, 0);
	PUT(USB_DT_ENDPOINT_SIZE, USB_DT_ENDPOINT, GFS_EP_IN, USB_ENDPOINT_XFER_BULK, mps & 0xff,
	    mps >> 8, 0);
	PUT(USB_DT_ENDPOINT_SIZE, USB_DT_ENDPOINT, GFS_EP_OUT, USB_ENDPOINT_XFER_BULK, mps & 0xff,
	    mps >> 8, 0);
#undef PUT
	d[2] = (uint8_t)(n & 0xff);
	d[3] = (uint8_t)(n >> 8);
	return n;
}

/* An endpoint's descriptor as the configuration has it, at full (0) or high (1) speed. */
static const uint8_t *endpoint_desc(const struct sim_gadgetfs *g, int speed, uint8_t addr)
{
	const uint8_t *d = g->config[speed], *end = d + g->config_len[speed];
	for (; d < end && d[0]; d += d[0])
		if (d[1] == USB_DT_ENDPOINT && d[2] == addr)
			return d;
	return NULL;
}

static void queue_push(struct sim_gadgetfs *g, struct gfs_queue *q, struct gfs_msg *m)
{
	if (q->count == GFS_QUEUE) {
		g->stats.dropped++;
		free(m);
		return;
	}
	q->slot[(q->head + q->count++) % GFS_QUEUE] = m;
}

static struct gfs_msg *queue_pop(struct gfs_queue *q)
{
	if (q->count == 0)
		return NULL;
	struct gfs_msg *m = q->slot[q->head];
	q->head = (q->head + 1) % GFS_QUEUE;
	q->count--;
	return m;
}

static void queue_clear(struct gfs_queue *q)
{
	struct gfs_msg *m;
	while ((m = queue_pop(q)))
		free(m);
}

/* Drop what waits for the host (all of it, or the bulk IN side only), with the lock held. */
static void flush_locked(struct sim_gadgetfs *g, bool control)
{
	queue_clear(&g->bulk_in);
	if (control) {
		queue_clear(&g->control);
		g->notify = 0;
	}
	g->generation++;
	/* A write the host may never read is taken back (EINTR in the bulk IN thread). */
	pthread_kill(g->bulk_in_thread, GFS_SIG_FLUSH);
}

static int sim_send_hdr(struct sim_gadgetfs *g, struct transport_sim_header h, const void *a,
			size_t alen, const void *b, size_t blen)
{
	struct iovec iov[3] = { { &h, sizeof(h) }, { (void *)a, alen }, { (void *)b, blen } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };
	if (sendmsg(g->sock, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

static int sim_send(struct sim_gadgetfs *g, enum transport_ep ep, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	return sim_send_hdr(g, (struct transport_sim_header){ .ep = ep }, a, alen, b, blen);
}

/* Bulk OUT, with TRANSPORT_SIM_FLAG_ZLP where a zero-length packet ended it. */
static int sim_send_flags(struct sim_gadgetfs *g, enum transport_ep ep, uint8_t flags,
			  const void *data, size_t len)
{
	return sim_send_hdr(g, (struct transport_sim_header){ .ep = ep, .flags = flags }, data, len,
			    NULL, 0);
}

/* The sim's messages: responses queued for ep0, NTBs for bulk IN, class request answers. */
static void *sock_thread(void *arg)
{
	struct sim_gadgetfs *g = arg;
	static uint8_t buf[sizeof(struct transport_sim_header) + TRANSPORT_MAX_TRANSFER];
	for (;;) {
		ssize_t n = recv(g->sock, buf, sizeof(buf), 0);
		if (n <= 0) {
			log_error("qmapd-sim: gadgetfs: the sim closed its socket");
			exit(EXIT_FAILURE);
		}
		if ((size_t)n < sizeof(struct transport_sim_header))
			continue;
		const struct transport_sim_header *h = (const void *)buf;
		size_t len = (size_t)n - sizeof(*h);
		const uint8_t *data = buf + sizeof(*h);
		if (h->ep == TRANSPORT_EP_CLASS_REQUEST) {
			pthread_mutex_lock(&g->lock);
			if (len <= sizeof(g->answer) && g->answer_len < 0) {
				memcpy(g->answer, data, len);
				g->answer_len = (int)len;
				g->answer_flags = h->flags;
				pthread_cond_broadcast(&g->cond);
			}
			pthread_mutex_unlock(&g->lock);
			continue;
		}
		if (h->ep != TRANSPORT_EP_CONTROL && h->ep != TRANSPORT_EP_BULK_IN)
			continue; /* bulk OUT acknowledgements: never asked for */
		struct gfs_msg *m = malloc(sizeof(*m) + len);
		if (!m) {
			log_error_errno(ENOMEM, "qmapd-sim: gadgetfs: cannot queue a message");
			continue;
		}
		m->len = (uint32_t)len;
		memcpy(m->data, data, len);
		pthread_mutex_lock(&g->lock);
		if (h->ep == TRANSPORT_EP_CONTROL) {
			queue_push(g, &g->control, m);
			g->notify++;
			log_debug("qmapd-sim: gadgetfs: response of %zu bytes queued (%u waiting)",
				  len, g->control.count);
		} else {
			queue_push(g, &g->bulk_in, m);
		}
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	return NULL;
}

static void *notify_thread(void *arg)
{
	struct sim_gadgetfs *g = arg;
	const struct usb_ctrlrequest n = {
		.bRequestType = USB_DIR_IN | USB_TYPE_CLASS | USB_RECIP_INTERFACE,
		.bRequest = USB_CDC_NOTIFY_RESPONSE_AVAILABLE,
		.wIndex = htole16(GFS_COMM_INTERFACE),
	};
	for (;;) {
		pthread_mutex_lock(&g->lock);
		while (!g->configured || g->notify == 0)
			pthread_cond_wait(&g->cond, &g->lock);
		g->notify--;
		pthread_mutex_unlock(&g->lock);
		/* Blocks until the host polls (cdc-wdm open, or qmapd's interrupt transfer). */
		if (write(g->ep_int, &n, sizeof(n)) < 0)
			log_warning_errno(errno, "qmapd-sim: gadgetfs: interrupt IN");
		else
			log_debug("qmapd-sim: gadgetfs: RESPONSE_AVAILABLE taken by the host");
	}
	return NULL;
}

static void on_flush_signal(int sig)
{
	(void)sig;
}

static void *bulk_in_thread(void *arg)
{
	struct sim_gadgetfs *g = arg;
	for (;;) {
		struct gfs_msg *m;
		pthread_mutex_lock(&g->lock);
		while (!g->configured || g->data_alt != 1 || !(m = queue_pop(&g->bulk_in)))
			pthread_cond_wait(&g->cond, &g->lock);
		uint16_t mps = g->mps;
		uint32_t in_size = g->in_size;
		pthread_mutex_unlock(&g->lock);
		/* A flush between the pop and the write is caught by its signal, unless it lands
		 * before the write starts; then one stale NTB reaches the next host session. */
		ssize_t r = write(g->ep_in, m->data, m->len);
		/* NCM 1.0 §3.2.1: a short packet ends an NTB, so one that fills its last packet
		 * gets a zero-length one, unless it is as long as the host's buffer. */
		bool zlp = r >= 0 && m->len % mps == 0 && m->len < in_size;
		if (zlp)
			r = write(g->ep_in, m->data, 0);
		if (r < 0 && errno != ESHUTDOWN && errno != ECONNRESET && errno != EINTR)
			log_warning_errno(errno, "qmapd-sim: gadgetfs: bulk IN");
		pthread_mutex_lock(&g->lock);
		g->stats.bulk_in += r >= 0;
		g->stats.bulk_in_zlp += r >= 0 && zlp;
		pthread_mutex_unlock(&g->lock);
		free(m);
	}
	return NULL;
}

static void *bulk_out_thread(void *arg)
{
	struct sim_gadgetfs *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->eps_open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	/* One transfer per NTB: the function's buffer is dwNtbOutMaxSize, and an NTB that long
	 * ends without a short packet (NCM 1.0 §3.2.2). */
	uint32_t out_max = get_le32(g->mbim.ntb_parameters + 16);
	if (out_max == 0 || out_max > sizeof(g->out_buf))
		out_max = sizeof(g->out_buf);
	for (;;) {
		ssize_t n = read(g->ep_out, g->out_buf, out_max);
		if (n < 0) {
			if (errno != ESHUTDOWN && errno != ECONNRESET && errno != EINTR &&
			    errno != ENODEV)
				log_warning_errno(errno, "qmapd-sim: gadgetfs: bulk OUT");
			usleep(10000);
			continue;
		}
		/*
		 * dummy_hcd ends a read at a short packet or a full buffer: a length of whole
		 * packets below the buffer's was ended by a zero-length packet (the host's ZLP
		 * after an NTB that fills its last packet). A read of nothing is a ZLP on its
		 * own: after an NTB that filled the buffer, or one the host sent for nothing.
		 */
		pthread_mutex_lock(&g->lock);
		bool zlp = n > 0 && n % g->mps == 0 && (size_t)n < out_max;
		g->stats.bulk_out += n > 0;
		g->stats.bulk_out_bytes += (size_t)n;
		g->stats.bulk_out_zlp += zlp;
		g->stats.bulk_out_zlp_alone += n == 0;
		pthread_mutex_unlock(&g->lock);
		if (n == 0)
			continue;
		int r = sim_send_flags(g, TRANSPORT_EP_BULK_OUT, zlp ? TRANSPORT_SIM_FLAG_ZLP : 0,
				       g->out_buf, (size_t)n);
		if (r < 0)
			log_warning_errno(r,
					  "qmapd-sim: gadgetfs: cannot pass bulk OUT to the sim");
	}
	return NULL;
}

/* ---- ep0 (the ep0 thread only) ---- */

/*
 * EIDRM from ep0: the host sent a new SETUP while this thread was in the middle of a request
 * (gadgetfs' setup_abort; sim-gadgetfs.h says how a host does that). That request is lost:
 * an OUT request's data was overwritten by the new one's. gadgetfs stays in its SETUP
 * state, now about the new request, whose event is still to be read: a read of ep0 would
 * be the new request's data stage or stall it, not its event. Leave that state without
 * taking anything of the new request, as poll() tells what it is:
 *   OUT with data (neither POLLIN nor POLLOUT): a zero-length read leaves with EBUSY, its
 *     data kept for the read that follows its event;
 *   IN, or OUT without data (POLLOUT): a zero-length read stalls it (EL2HLT; the host asks
 *     again) or acknowledges it (followed when its event comes); a stalled request's event
 *     is stalled again when it comes (stale_in), without taking a response from the queue;
 *   POLLIN: out of the SETUP state already, events waiting.
 * Before this, the event read took the new request's data for events, and from then on the
 * thread was one data stage behind: each command got the next one's data, and no IN request
 * was answered again (vm-gadget-mbim, once in 11 runs).
 */
static void ep0_recover(struct sim_gadgetfs *g, const char *during)
{
	log_warning("qmapd-sim: gadgetfs: the host sent a new request during the %s of the last "
		    "one, which is lost (EIDRM)",
		    during);
	for (unsigned tries = 0; tries < 64; tries++) {
		struct pollfd p = { .fd = g->ep0, .events = POLLIN | POLLOUT };
		if (poll(&p, 1, 0) < 0) {
			if (errno == EINTR)
				continue;
			log_warning_errno(errno, "qmapd-sim: gadgetfs: ep0 poll");
			return;
		}
		if (p.revents & POLLHUP)
			continue; /* yet another new SETUP: poll() took its abort */
		if (p.revents & POLLIN)
			return;
		/* An OUT data stage completes in the bus pass that brought its SETUP (dummy_hcd);
		 * a zero-length read before it would be queued on top of it: give it the time. */
		if (!(p.revents & POLLOUT))
			usleep(1000);
		ssize_t n = read(g->ep0, g->ep0_buf, 0);
		if (n < 0 && errno == EIDRM)
			continue;
		if (n < 0 && errno == EL2HLT) {
			g->stale_in = true;
			log_info("qmapd-sim: gadgetfs: stalled the new request (IN)");
		} else if (n == 0 && !(p.revents & POLLOUT)) {
			log_warning("qmapd-sim: gadgetfs: a new OUT request's data stage did not "
				    "complete in time: its data may be lost too");
		}
		return;
	}
	log_warning("qmapd-sim: gadgetfs: ep0 kept aborting");
}

/* gadgetfs: the status stage of an OUT request without data; false if it failed. */
static bool ep0_ack(struct sim_gadgetfs *g)
{
	if (read(g->ep0, g->ep0_buf, 0) < 0) {
		if (errno == EIDRM)
			ep0_recover(g, "status stage");
		else
			log_warning_errno(errno, "qmapd-sim: gadgetfs: ep0 status");
		return false;
	}
	return true;
}

static bool ep0_in(struct sim_gadgetfs *g, const void *data, size_t len, uint16_t want)
{
	if (write(g->ep0, data, len < want ? len : want) < 0) {
		if (errno == EIDRM)
			ep0_recover(g, "IN data stage");
		else
			log_warning_errno(errno, "qmapd-sim: gadgetfs: ep0 IN data");
		return false;
	}
	return true;
}

/* The data stage of an OUT request, into ep0_buf; -1 when it failed. */
static ssize_t ep0_out(struct sim_gadgetfs *g, uint16_t len)
{
	ssize_t n = read(g->ep0, g->ep0_buf, len);
	if (n < 0) {
		if (errno == EIDRM)
			ep0_recover(g, "OUT data stage");
		else
			log_warning_errno(errno, "qmapd-sim: gadgetfs: ep0 OUT data");
	}
	return n;
}

/* Refuse a request: gadgetfs stalls on an I/O in the direction opposite to the request's.
 * An OUT request with data cannot be stalled any more (sim-gadgetfs.h): its data is taken,
 * and the refusal logged and counted. */
static void ep0_stall(struct sim_gadgetfs *g, const struct usb_ctrlrequest *s, const char *why)
{
	uint16_t len = le16toh(s->wLength);
	bool in = s->bRequestType & USB_DIR_IN;

	if (!in && len > 0) {
		(void)ep0_out(g, len);
		pthread_mutex_lock(&g->lock);
		g->stats.unstallable++;
		pthread_mutex_unlock(&g->lock);
		log_warning("qmapd-sim: gadgetfs: request %02x/%02x refused (%s) but acknowledged: "
			    "gadgetfs cannot stall it after its data stage",
			    s->bRequestType, s->bRequest, why);
		return;
	}
	log_info("qmapd-sim: gadgetfs: stalling request %02x/%02x (wValue %u wIndex %u wLength "
		 "%u): %s",
		 s->bRequestType, s->bRequest, le16toh(s->wValue), le16toh(s->wIndex), len, why);
	ssize_t n = in ? read(g->ep0, g->ep0_buf, 0) : write(g->ep0, g->ep0_buf, 0);
	if (n < 0 && errno == EIDRM)
		ep0_recover(g, "stall");
}

static void string_descriptor(struct sim_gadgetfs *g, const struct usb_ctrlrequest *s)
{
	static const char *const strs[] = { NULL, GFS_MANUFACTURER, GFS_PRODUCT_NAME, GFS_SERIAL };
	unsigned idx = le16toh(s->wValue) & 0xff;
	uint8_t d[2 + 2 * sizeof(GFS_MANUFACTURER)];
	size_t n = 2;

	if (idx == 0) {
		d[n++] = 0x09; /* en-US */
		d[n++] = 0x04;
	} else if (idx < sizeof(strs) / sizeof(strs[0])) {
		for (const char *c = strs[idx]; *c; c++) {
			d[n++] = (uint8_t)*c;
			d[n++] = 0;
		}
	} else {
		ep0_stall(g, s, "no such string");
		return;
	}
	d[0] = (uint8_t)n;
	d[1] = USB_DT_STRING;
	ep0_in(g, d, n, le16toh(s->wLength));
}

/* Open and enable the three endpoints (gadgetfs: tag 1, full- then high-speed descriptor). */
static int open_endpoints(struct sim_gadgetfs *g, const char *dir)
{
	int *fds[] = { &g->ep_int, &g->ep_in, &g->ep_out };
	const uint8_t addrs[] = { GFS_EP_INT, GFS_EP_IN, GFS_EP_OUT };
	char path[4096];

	for (size_t i = 0; i < 3; i++) {
		uint8_t cfg[4 + 2 * USB_DT_ENDPOINT_SIZE];
		const uint32_t tag = 1;
		memcpy(cfg, &tag, 4);
		memcpy(cfg + 4, endpoint_desc(g, 0, addrs[i]), USB_DT_ENDPOINT_SIZE);
		memcpy(cfg + 4 + USB_DT_ENDPOINT_SIZE, endpoint_desc(g, 1, addrs[i]),
		       USB_DT_ENDPOINT_SIZE);
		snprintf(path, sizeof(path), "%s/%s", dir, ep_files[i]);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return log_error_errno(errno, "qmapd-sim: gadgetfs: cannot open %s", path);
		if (write(fd, cfg, sizeof(cfg)) < 0) {
			int r = log_error_errno(
				errno, "qmapd-sim: gadgetfs: %s refused its descriptor", path);
			close(fd);
			return r;
		}
		*fds[i] = fd;
	}
	return 0;
}

static void set_configuration(struct sim_gadgetfs *g, unsigned value)
{
	/* The endpoints stay enabled from the first configuration on (closing a file another
	 * thread blocks in would not disable it); the host reaches them only as its
	 * descriptors allow, and the threads gate what they send. */
	if (value == 1 && !g->eps_open && open_endpoints(g, g->dir) < 0)
		exit(EXIT_FAILURE);
	pthread_mutex_lock(&g->lock);
	g->eps_open = g->eps_open || value == 1;
	g->configured = value == 1;
	g->data_alt = 0;
	g->in_size = ntb_in_max(g);
	flush_locked(g, true);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	log_info("qmapd-sim: gadgetfs: configuration %u", value);
}

static void set_data_alt(struct sim_gadgetfs *g, unsigned alt)
{
	pthread_mutex_lock(&g->lock);
	g->data_alt = alt;
	if (alt == 0)
		flush_locked(g, false);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	/* SET_INTERFACE would also reset the data endpoints' toggles (USB 2.0 §9.4.10), but
	 * gadgetfs' GADGETFS_CLEAR_HALT waits for the endpoint's lock, which a blocked read
	 * holds until the host's next OUT transfer; dummy_hcd keeps no toggles anyway. */
	log_debug("qmapd-sim: gadgetfs: data interface alternate setting %u", alt);
}

/*
 * class_sequence, as the harness keeps it (tests/usb/usb-harness.c): data-altN and comm-alt0
 * for SET_INTERFACE, the class requests by name (SET_NTB_FORMAT/16|32, SET_NTB_INPUT_SIZE/4|8),
 * a refused one ending in '!', one the host's next request aborted in '?'.
 */
static void record(struct sim_gadgetfs *g, const char *what, char mark)
{
	pthread_mutex_lock(&g->lock);
	size_t n = strlen(g->sequence), room = sizeof(g->sequence) - n;
	int w = snprintf(g->sequence + n, room, "%s%s%.1s", n ? "," : "", what, &mark);
	if (w < 0 || (size_t)w >= room) /* full: the end says so */
		memcpy(g->sequence + sizeof(g->sequence) - 4, "...", 4);
	pthread_mutex_unlock(&g->lock);
}

static const char *class_name(const struct usb_ctrlrequest *s, char *buf, size_t size)
{
	uint16_t value = le16toh(s->wValue);
	switch (s->bRequest) {
	case USB_CDC_GET_NTB_PARAMETERS:
		return "GET_NTB_PARAMETERS";
	case USB_CDC_GET_NTB_FORMAT:
		return "GET_NTB_FORMAT";
	case USB_CDC_SET_NTB_FORMAT:
		snprintf(buf, size, "SET_NTB_FORMAT/%s",
			 value == 1   ? "32"
			 : value == 0 ? "16"
				      : "?");
		return buf;
	case USB_CDC_GET_NTB_INPUT_SIZE:
		return "GET_NTB_INPUT_SIZE";
	case USB_CDC_SET_NTB_INPUT_SIZE:
		snprintf(buf, size, "SET_NTB_INPUT_SIZE/%u", le16toh(s->wLength));
		return buf;
	case USB_CDC_GET_CRC_MODE:
		return "GET_CRC_MODE";
	case USB_CDC_SET_CRC_MODE:
		return "SET_CRC_MODE";
	}
	snprintf(buf, size, "request-%02x", s->bRequest);
	return buf;
}

/* How a class request ended, for class_sequence. */
enum gfs_outcome {
	GFS_ANSWERED,
	GFS_REFUSED, /* stalled, or acknowledged where gadgetfs could not stall it */
	GFS_LOST,    /* aborted by the host's next request, or no data stage */
};

/* An NCM/MBIM class request (0x80-0x8a): checked here as the harness does, then the sim
 * follows (or refuses) it and says what to answer. */
static enum gfs_outcome class_request(struct sim_gadgetfs *g, const struct usb_ctrlrequest *s)
{
	uint16_t value = le16toh(s->wValue), len = le16toh(s->wLength);
	bool in = s->bRequestType & USB_DIR_IN;
	size_t dlen = 0;

	pthread_mutex_lock(&g->lock);
	bool data_alt = g->data_alt != 0;
	pthread_mutex_unlock(&g->lock);
	if (s->bRequest == USB_CDC_SET_CRC_MODE && !(g->caps & USB_CDC_NCM_NCAP_CRC_MODE)) {
		ep0_stall(g, s, "the function offers no CRC mode");
		return GFS_REFUSED;
	}
	if ((s->bRequest == USB_CDC_SET_CRC_MODE || s->bRequest == USB_CDC_SET_NTB_FORMAT) &&
	    data_alt) {
		ep0_stall(g, s, "the data interface is in its data setting");
		return GFS_REFUSED;
	}
	if (s->bRequest == USB_CDC_SET_NTB_INPUT_SIZE && len != 4 &&
	    !(len == 8 && (g->caps & USB_CDC_NCM_NCAP_NTB_INPUT_SIZE))) {
		ep0_stall(g, s, "an input size of a length the function does not take");
		return GFS_REFUSED;
	}
	if (!in && len > 64) {
		ep0_stall(g, s, "longer than any NCM request");
		return GFS_REFUSED;
	}
	if (!in && len > 0) {
		ssize_t n = ep0_out(g, len);
		if (n < 0)
			return GFS_LOST;
		dlen = (size_t)n;
	}

	struct transport_sim_class_request rq = {
		.request_type = s->bRequestType,
		.request = s->bRequest,
		.value = s->wValue,
		.index = s->wIndex,
		.length = s->wLength,
	};
	pthread_mutex_lock(&g->lock);
	g->answer_len = -1;
	pthread_mutex_unlock(&g->lock);
	int r = sim_send(g, TRANSPORT_EP_CLASS_REQUEST, &rq, sizeof(rq), g->ep0_buf, dlen);
	if (r < 0) {
		log_warning_errno(r, "qmapd-sim: gadgetfs: cannot pass a class request on");
		ep0_stall(g, s, "the sim is gone");
		return GFS_REFUSED;
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GFS_CLASS_TIMEOUT_S;
	pthread_mutex_lock(&g->lock);
	while (g->answer_len < 0 && pthread_cond_timedwait(&g->cond, &g->lock, &until) != ETIMEDOUT)
		;
	int alen = g->answer_len;
	bool stalled = alen < (int)sizeof(rq) || (g->answer_flags & TRANSPORT_SIM_FLAG_STALL);
	g->answer_len = 0; /* a late answer is not taken for the next request's */
	if (!stalled && !in && s->bRequest == USB_CDC_SET_NTB_INPUT_SIZE && dlen >= 4)
		g->in_size = get_le32(g->ep0_buf);
	pthread_mutex_unlock(&g->lock);
	if (stalled) {
		if (!in && len > 0) { /* its data stage is over: ep0_stall() cannot stall it */
			pthread_mutex_lock(&g->lock);
			g->stats.unstallable++;
			pthread_mutex_unlock(&g->lock);
			log_warning(
				"qmapd-sim: gadgetfs: the sim refused request %02x/%02x value %u "
				"but it was acknowledged: gadgetfs cannot stall it after its "
				"data stage",
				s->bRequestType, s->bRequest, value);
			return GFS_REFUSED;
		}
		ep0_stall(g, s, alen < 0 ? "no answer from the sim" : "refused by the sim");
		return GFS_REFUSED;
	}
	bool ok = true;
	if (in)
		ok = ep0_in(g, g->answer + sizeof(rq), (size_t)alen - sizeof(rq), len);
	else if (len == 0)
		ok = ep0_ack(g);
	return ok ? GFS_ANSWERED : GFS_LOST;
}

/* A class request refused before it reached the sim: stalled already, now counted. */
static void class_refused(struct sim_gadgetfs *g, const struct usb_ctrlrequest *s)
{
	char name[32];
	record(g, class_name(s, name, sizeof(name)), '!');
	pthread_mutex_lock(&g->lock);
	g->stats.class_stalled++;
	pthread_mutex_unlock(&g->lock);
}

static void class_setup(struct sim_gadgetfs *g, const struct usb_ctrlrequest *s)
{
	uint16_t len = le16toh(s->wLength);
	bool in = s->bRequestType & USB_DIR_IN;
	bool ncm = s->bRequest >= USB_CDC_GET_NTB_PARAMETERS && s->bRequest <= USB_CDC_SET_CRC_MODE;

	if ((s->bRequestType & USB_RECIP_MASK) != USB_RECIP_INTERFACE ||
	    le16toh(s->wIndex) != GFS_COMM_INTERFACE) {
		ep0_stall(g, s, "not the communications interface");
		class_refused(g, s);
		return;
	}
	if (!in && s->bRequest == USB_CDC_SEND_ENCAPSULATED_COMMAND && len > 0) {
		if (g->slow_us)
			usleep(g->slow_us);
		ssize_t n = ep0_out(g, len);
		if (n < 0)
			return;
		log_debug("qmapd-sim: gadgetfs: SEND_ENCAPSULATED_COMMAND: %zd bytes", n);
		int r = sim_send(g, TRANSPORT_EP_CONTROL, g->ep0_buf, (size_t)n, NULL, 0);
		if (r < 0)
			log_warning_errno(r, "qmapd-sim: gadgetfs: cannot pass a command on");
		return;
	}
	if (in && s->bRequest == USB_CDC_GET_ENCAPSULATED_RESPONSE) {
		pthread_mutex_lock(&g->lock);
		struct gfs_msg *m = queue_pop(&g->control);
		pthread_mutex_unlock(&g->lock);
		log_debug("qmapd-sim: gadgetfs: GET_ENCAPSULATED_RESPONSE: %u bytes",
			  m ? m->len : 0);
		ep0_in(g, m ? m->data : g->ep0_buf, m ? m->len : 0, len);
		free(m);
		return;
	}
	if (ncm) {
		char name[32];
		enum gfs_outcome o = class_request(g, s);
		char mark = o == GFS_REFUSED ? '!' : o == GFS_LOST ? '?' : 0;
		record(g, class_name(s, name, sizeof(name)), mark);
		pthread_mutex_lock(&g->lock);
		g->stats.class_requests++;
		g->stats.class_stalled += o == GFS_REFUSED;
		g->stats.class_lost += o == GFS_LOST;
		pthread_mutex_unlock(&g->lock);
		return;
	}
	/* In class_sequence too: a request no MBIM host sends (cdc_acm's SET_CONTROL_LINE_STATE,
	 * request-22) shows where it came. */
	ep0_stall(g, s, "not a request this function knows");
	class_refused(g, s);
}

static void standard_setup(struct sim_gadgetfs *g, const struct usb_ctrlrequest *s)
{
	uint16_t value = le16toh(s->wValue), index = le16toh(s->wIndex);

	switch (s->bRequestType << 8 | s->bRequest) {
	case USB_DIR_IN << 8 | USB_REQ_GET_DESCRIPTOR:
		if (value >> 8 == USB_DT_STRING) {
			string_descriptor(g, s);
			return;
		}
		break;
	case USB_REQ_SET_CONFIGURATION: /* gadgetfs has checked the value; it cannot stall */
		set_configuration(g, value & 0xff);
		ep0_ack(g);
		return;
	case USB_RECIP_INTERFACE << 8 | USB_REQ_SET_INTERFACE:
		if (index == GFS_COMM_INTERFACE && value == 0) {
			record(g, "comm-alt0", ep0_ack(g) ? 0 : '?');
			return;
		}
		if (index == GFS_DATA_INTERFACE && value <= 1) {
			set_data_alt(g, value);
			record(g, value ? "data-alt1" : "data-alt0", ep0_ack(g) ? 0 : '?');
			return;
		}
		break;
	case (USB_DIR_IN | USB_RECIP_INTERFACE) << 8 | USB_REQ_GET_INTERFACE:
		if (index == GFS_COMM_INTERFACE || index == GFS_DATA_INTERFACE) {
			pthread_mutex_lock(&g->lock);
			uint8_t alt = index == GFS_DATA_INTERFACE ? (uint8_t)g->data_alt : 0;
			pthread_mutex_unlock(&g->lock);
			ep0_in(g, &alt, 1, le16toh(s->wLength));
			return;
		}
		break;
	default:
		break;
	}
	ep0_stall(g, s, "not a standard request this function takes");
}

static void *ep0_thread(void *arg)
{
	struct sim_gadgetfs *g = arg;
	struct usb_gadgetfs_event ev[5];
	/*
	 * gadgetfs completes a control OUT request's data stage before user space sees it, so a
	 * host with several requests in flight may start the next one before this thread has
	 * read the last, and gadgetfs drops the unread SETUP or aborts the one being handled
	 * (sim-gadgetfs.h). A real-time thread at least reads each one as soon as the scheduler
	 * allows; where dummy_hcd starts the next request in the same timer run, nothing in
	 * user space can help.
	 */
	struct sched_param sp = { .sched_priority = 10 };
	int r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (r)
		log_warning_errno(r, "qmapd-sim: gadgetfs: ep0 thread without real-time priority");
	for (;;) {
		ssize_t n = read(g->ep0, ev, sizeof(ev));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EIDRM) {
				ep0_recover(g, "handling");
				continue;
			}
			/* An IN request left unanswered (a failed write): stalled by the read. */
			if (errno == EL2HLT) {
				log_warning(
					"qmapd-sim: gadgetfs: an unanswered IN request stalled");
				continue;
			}
			log_error_errno(errno, "qmapd-sim: gadgetfs: ep0");
			exit(EXIT_FAILURE);
		}
		if (n % sizeof(ev[0])) { /* a data stage, not events: must not happen */
			log_warning("qmapd-sim: gadgetfs: ep0 read %zd bytes that are no events",
				    n);
			continue;
		}
		for (size_t i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
			const struct usb_ctrlrequest *s = &ev[i].u.setup;
			if (ev[i].type == GADGETFS_SETUP && g->stale_in) {
				g->stale_in = false;
				if (s->bRequestType & USB_DIR_IN) {
					/* Most likely the request ep0_recover() stalled. */
					if (read(g->ep0, g->ep0_buf, 0) < 0 && errno == EIDRM)
						ep0_recover(g, "stall");
					continue;
				}
			}
			switch (ev[i].type) {
			case GADGETFS_CONNECT:
				pthread_mutex_lock(&g->lock);
				g->mps = ev[i].u.speed == USB_SPEED_HIGH ? 512 : 64;
				pthread_mutex_unlock(&g->lock);
				log_info("qmapd-sim: gadgetfs: connected at %s speed",
					 ev[i].u.speed == USB_SPEED_HIGH ? "high" : "full");
				break;
			case GADGETFS_DISCONNECT: /* also a bus reset: the function starts over */
				pthread_mutex_lock(&g->lock);
				g->configured = false;
				g->data_alt = 0;
				flush_locked(g, true);
				pthread_mutex_unlock(&g->lock);
				log_info("qmapd-sim: gadgetfs: disconnected or reset by the host");
				break;
			case GADGETFS_SETUP:
				if ((s->bRequestType & USB_TYPE_MASK) == USB_TYPE_STANDARD)
					standard_setup(g, s);
				else if ((s->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS)
					class_setup(g, s);
				else
					ep0_stall(g, s, "a vendor request");
				break;
			default: /* GADGETFS_SUSPEND, GADGETFS_NOP */
				break;
			}
		}
	}
	return NULL;
}

/* The controller's file in a fresh gadgetfs: its only entry, named after the UDC. */
static int find_controller(const char *dir, char *path, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = -ENOENT;

	if (!d)
		return log_error_errno(errno, "qmapd-sim: gadgetfs: cannot open %s", dir);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, size, "%s/%s", dir, e->d_name);
			r = 0;
			break;
		}
	closedir(d);
	if (r < 0)
		return log_error_errno(r,
				       "qmapd-sim: gadgetfs: %s has no controller file (is a "
				       "gadgetfs mounted there, with a free UDC?)",
				       dir);
	return 0;
}

/* The sim's first message: what its MBIM function's descriptors say. */
static int read_descriptor(struct sim_gadgetfs *g)
{
	struct {
		struct transport_sim_header h;
		struct transport_sim_descriptor d;
		struct transport_sim_mbim_descriptor mbim;
	} __attribute__((packed)) desc;
	struct timeval tv = { .tv_sec = 5 };
	ssize_t n;

	(void)setsockopt(g->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(g->sock, &desc, sizeof(desc), 0);
	if (n < 0)
		return log_error_errno(errno, "qmapd-sim: gadgetfs: no descriptor message from %s",
				       g->socket_path);
	if ((size_t)n < sizeof(desc) || desc.h.ep != TRANSPORT_EP_DESCRIPTOR ||
	    desc.d.function != TRANSPORT_SIM_FUNCTION_MBIM) {
		log_error(
			"qmapd-sim: gadgetfs: %s plays no MBIM function (--gadgetfs needs --mbim)",
			g->socket_path);
		return -EPROTO;
	}
	tv.tv_sec = 0;
	(void)setsockopt(g->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	g->mbim = desc.mbim;
	return 0;
}

/*
 * The sim answers the connection from its event loop, which runs only after
 * sim_gadgetfs_start() returns: its descriptor message, and with it the device, come here.
 * Then this thread carries the sim's messages (sock_thread()).
 */
static void *setup_thread(void *arg)
{
	struct sim_gadgetfs *g = arg;
	uint8_t dev[4 + sizeof(g->config) + USB_DT_DEVICE_SIZE];
	size_t n = 0;
	pthread_t t;
	int r;

	if (read_descriptor(g) < 0)
		exit(EXIT_FAILURE);
	g->in_size = ntb_in_max(g);
	g->config_len[0] = build_config(g, false, g->config[0]);
	g->config_len[1] = build_config(g, true, g->config[1]);

	/* gadgetfs: tag 0, the full-speed configuration, the high-speed one, the device. */
	const uint32_t tag = 0;
	memcpy(dev, &tag, 4);
	n += 4;
	memcpy(dev + n, g->config[0], g->config_len[0]);
	n += g->config_len[0];
	memcpy(dev + n, g->config[1], g->config_len[1]);
	n += g->config_len[1];
	/* USB 2.0, class in the interface association (ef/02/01), 64-byte ep0, strings 1-3. */
	const uint8_t device[USB_DT_DEVICE_SIZE] = {
		USB_DT_DEVICE_SIZE,
		USB_DT_DEVICE,
		0x00,
		0x02,
		USB_CLASS_MISC,
		0x02,
		0x01,
		64,
		GFS_VENDOR & 0xff,
		GFS_VENDOR >> 8,
		GFS_PRODUCT & 0xff,
		GFS_PRODUCT >> 8,
		GFS_BCD_DEVICE & 0xff,
		GFS_BCD_DEVICE >> 8,
		1,
		2,
		3,
		1,
	};
	memcpy(dev + n, device, sizeof(device));
	n += sizeof(device);

	/* The host enumerates as soon as the device is written; the ep0 thread follows at once
	 * (the hub's connect debounce alone takes 100 ms). */
	if (write(g->ep0, dev, n) < 0) {
		log_error_errno(errno, "qmapd-sim: gadgetfs: %s refused the device", g->ep0_path);
		exit(EXIT_FAILURE);
	}
	void *(*threads[])(void *) = { ep0_thread, notify_thread, bulk_out_thread };
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		r = pthread_create(&t, NULL, threads[i], g);
		if (r) {
			log_error_errno(r, "qmapd-sim: gadgetfs: cannot start a thread");
			exit(EXIT_FAILURE);
		}
		pthread_detach(t);
	}
	log_info("qmapd-sim: gadgetfs: EM7455 MBIM device on %s (interfaces %u and %u)",
		 g->ep0_path, GFS_COMM_INTERFACE, GFS_DATA_INTERFACE);
	return sock_thread(g);
}

int sim_gadgetfs_start(const char *dir, const char *socket_path, uint32_t slow_us,
		       struct sim_gadgetfs **ret)
{
	struct sim_gadgetfs *g = calloc(1, sizeof(*g));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sigaction sig = { .sa_handler = on_flush_signal }; /* no SA_RESTART */
	pthread_t t;
	int r;

	if (!g)
		return log_error_errno(ENOMEM, "qmapd-sim: gadgetfs: cannot allocate");
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->ep_int = g->ep_in = g->ep_out = -1;
	g->mps = 512;
	g->caps = GFS_CAPS;
	g->slow_us = slow_us;
	snprintf(g->dir, sizeof(g->dir), "%s", dir);
	snprintf(g->socket_path, sizeof(g->socket_path), "%s", socket_path);

	if ((r = find_controller(dir, g->ep0_path, sizeof(g->ep0_path))) < 0)
		return r;
	g->ep0 = open(g->ep0_path, O_RDWR | O_CLOEXEC);
	if (g->ep0 < 0)
		return log_error_errno(errno, "qmapd-sim: gadgetfs: cannot open %s", g->ep0_path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	g->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (g->sock < 0 || connect(g->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return log_error_errno(errno, "qmapd-sim: gadgetfs: cannot connect to %s",
				       socket_path);
	sigemptyset(&sig.sa_mask);
	if (sigaction(GFS_SIG_FLUSH, &sig, NULL) < 0)
		return log_error_errno(errno, "qmapd-sim: gadgetfs: cannot set a signal handler");
	/* The bulk IN thread first: flush_locked() signals it. */
	r = pthread_create(&g->bulk_in_thread, NULL, bulk_in_thread, g);
	if (r == 0)
		r = pthread_create(&t, NULL, setup_thread, g);
	if (r)
		return log_error_errno(r, "qmapd-sim: gadgetfs: cannot start a thread");
	pthread_detach(t);
	*ret = g;
	return 0;
}

void sim_gadgetfs_print_stats(struct sim_gadgetfs *g, FILE *out)
{
	pthread_mutex_lock(&g->lock);
	struct sim_gadgetfs_stats st = g->stats;
	char sequence[sizeof(g->sequence)];
	memcpy(sequence, g->sequence, sizeof(sequence));
	pthread_mutex_unlock(&g->lock);
#define P(key) fprintf(out, "gadgetfs_" #key "=%" PRIu64 "\n", st.key)
	P(class_requests);
	P(class_stalled);
	P(class_lost);
	P(unstallable);
	P(bulk_in);
	P(bulk_in_zlp);
	P(bulk_out);
	P(bulk_out_bytes);
	P(bulk_out_zlp);
	P(bulk_out_zlp_alone);
	P(dropped);
#undef P
	fprintf(out, "gadgetfs_class_sequence=%s\n", sequence);
}
