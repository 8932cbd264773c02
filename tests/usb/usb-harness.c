/* SPDX-License-Identifier: MIT */
/*
 * usb-harness: Quectel-like QMI modems on a umockdev testbed whose URBs are carried to and
 * from qmapd-sim, so qmapd's real libusb code runs against the same simulated modem as the
 * `sim` transport (docs/ARCHITECTURE.md "Tests"). Run it under umockdev-wrapper (its uevents
 * need the preload) and qmapd with LD_PRELOAD=libumockdev-preload.so.0 and UMOCKDEV_DIR
 * set to what --dir-file receives.
 *
 * Modems, numbered from 0 in the order given: `--sim SOCKET` is a modem carried to the
 * qmapd-sim at SOCKET; `--modem KEY=VALUE[,KEY=VALUE...]` one described by
 *   sim=SOCKET       its qmapd-sim (none: the modem answers no QMI, its data goes nowhere)
 *   serial=STRING    default qmapdsim<NNNN>, NNNN = number + 1 (qmapdsim0001 for modem 0)
 *   id=VID:PID       default 2c7c:0125
 *   port=P           on port P of bus 1's root hub, sysfs 1-P (default number + 1)
 *   iface=N          bInterfaceNumber of its one interface (default 4)
 *   kind=qmi|diag|mbim  qmi: ff/ff/ff with interrupt IN + bulk IN + bulk OUT, bound to
 *                    qmi_wwan; diag: ff/ff/ff with bulk IN + bulk OUT only (not a QMI modem),
 *                    bound to `option`; mbim: an MBIM function as on a Sierra EM7455 in
 *                    composition 9 (default id 1199:9079, iface 12): an IAD, communications
 *                    interface IFACE 02/0e/00 (CDC header, MBIM, MBIM extended and union
 *                    descriptors, interrupt IN) and data interface IFACE+1, alternate
 *                    setting 0 without endpoints, 1 = 0a/00/02 with bulk IN + bulk OUT;
 *                    bound to cdc_mbim. Its sim must be `qmapd-sim --mbim`.
 *   qmi=N            mbim: also a QMI interface N (ff/ff/ff, interrupt IN + bulk IN + bulk
 *                    OUT) in the descriptors, as a composition with both has; it carries
 *                    nothing (discovery's choice only)
 *   caps=HEX         mbim: bmNetworkCapabilities (default 20: the 8-byte NTB input size)
 *   ctrl=N           mbim: wMaxControlMessage (default 4096)
 *   segment=N        mbim: wMaxSegmentSize (default 2048)
 *   mtu=N            mbim: the extended descriptor's wMTU (default 1500; 0: no extended
 *                    descriptor)
 *   plugged=0        not plugged in at start (`plug` brings it)
 * Each modem has its own usbfs node, bus address (a new one on every plug), sim connection
 * and counters, and is plugged and unplugged on its own.
 *
 * URB <-> sim message (struct transport_sim_header + bytes):
 *   bulk IN URB        <- next BULK_IN message (queued until an URB is there)
 *   interrupt IN URB   <- RESPONSE_AVAILABLE for each CONTROL message, INTERRUPT messages
 *   GET_ENCAPSULATED_RESPONSE  <- that CONTROL message's QMUX bytes
 *   SEND_ENCAPSULATED_COMMAND  -> CONTROL message
 *   bulk OUT URB       -> BULK_OUT message, ZLP flag when USBDEVFS_URB_ZERO_PACKET applied
 *   unplug             -> the sim connection closes (the modem is gone); plug reconnects
 *
 * The usbfs node is a symlink to a pty slave: tty flow control gates POLLOUT ("an URB is
 * reapable"), so libusb does not spin, and closing the master gives POLLERR like a real
 * disconnect. Commands, one per line, on the --control FIFO:
 *   [@K] plug | [@K] unplug | [@K] inject KIND [N] | stats | quit
 * @K names modem K (default 0); N = 0 cancels those of KIND still due. KIND is, for the next
 * N of its kind:
 *   stall, eproto, short, overflow    a bulk IN URB fails so (or is damaged)
 *   out-stall, out-eproto             a bulk OUT URB fails with -EPIPE / -EPROTO
 *   out-timeout                       a bulk OUT URB never completes (libusb times it out)
 *   cmd-stall, cmd-eproto             a SEND_ENCAPSULATED_COMMAND fails, not forwarded
 *   int-silent                        a response comes without RESPONSE_AVAILABLE
 *   vanish-ctrl                       the device is unplugged while a SEND_ENCAPSULATED_
 *                                     COMMAND is in flight (that URB never completes)
 *   class-stall                       mbim: the next class request is STALLed
 *   input-size-stall                  mbim: the next SET_NTB_INPUT_SIZE is STALLed
 *   cmd-lose                          a SEND_ENCAPSULATED_COMMAND completes but never
 *                                     reaches the sim (as a SETUP that gadgetfs lost)
 *   empty-stall                       a GET_ENCAPSULATED_RESPONSE with nothing queued is
 *                                     STALLed, as Qualcomm's f_gsi and f_mbim answer it
 *                                     (otherwise: 0 bytes, as f_rmnet and qmapd-sim)
 * MBIM class requests (NCM 1.0 §6.2) are answered by the harness, with the NTB parameters
 * of the sim's descriptor message; the SET requests it accepts go on to the sim
 * (TRANSPORT_EP_CLASS_REQUEST), which switches its format and sizes and must accept them too
 * (`sim_class_stalled` counts where it did not). The harness refuses with a STALL, as a
 * strict function would, what the sim would (an unoffered format, an input size outside
 * 2048..dwNtbInMaxSize) and: any on another interface than the communications interface,
 * SET_CRC_MODE when bmNetworkCapabilities has no CRC bit, SET_CRC_MODE and SET_NTB_FORMAT
 * while the data interface is in its data alternate setting (§6.2.5, §6.2.11), and a
 * SET_NTB_INPUT_SIZE of another length than 4 (or 8 where caps offer it). Bulk URBs on the
 * data endpoints fail with ENOENT until the data alternate setting is selected (the
 * endpoints do not exist before, as in usbfs). The order is kept in the counter
 * `class_sequence`: data-altN, comm-altN and the request names (SET_NTB_FORMAT/16|32,
 * SET_NTB_INPUT_SIZE/4|8), a STALLed one ending in '!', reset on every plug.
 *
 * Counters go to --stats as key=value lines (atomically) on `stats` and at exit: modem 0's
 * as `key=value`, then every modem's as `K.key=value`, e.g. `1.driver=qmi_wwan` (the driver
 * bound to its interface now: the kernel's, `usbfs` when claimed, or `none`), and
 * `ctrl_in_flight_max`, the most SEND_ENCAPSULATED_COMMAND and GET_ENCAPSULATED_RESPONSE
 * URBs submitted and not yet reaped at once (qmapd keeps one on EP0 at a time),
 * `ctrl_responses_empty`, the GET_ENCAPSULATED_RESPONSEs answered with 0 bytes (nothing
 * queued, as a CDC function answers), and `ctrl_responses_queued`, the responses waiting
 * for one now.
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <linux/usb/ch9.h>
#include <linux/usbdevice_fs.h>
#include <poll.h>
#include <pty.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <umockdev.h>
#include <unistd.h>

#include "transport.h"

#define H_BUS	    1
#define H_EP_INT    0x89
#define H_EP_IN	    0x88
#define H_EP_OUT    0x05
#define H_MPS	    512
#define H_QUEUE_MAX 1024 /* sim messages waiting for URBs; beyond, dropped like a full FIFO */

enum inject {
	INJ_STALL,
	INJ_EPROTO,
	INJ_SHORT,
	INJ_OVERFLOW,
	INJ_BULK_IN_MAX, /* the kinds above take bulk IN URBs */
	INJ_OUT_STALL = INJ_BULK_IN_MAX,
	INJ_OUT_EPROTO,
	INJ_OUT_TIMEOUT,
	INJ_CMD_STALL,
	INJ_CMD_EPROTO,
	INJ_INT_SILENT,
	INJ_VANISH_CTRL,
	INJ_CLASS_STALL,
	INJ_INPUT_SIZE_STALL,
	INJ_CMD_LOSE,
	INJ_EMPTY_STALL,
	INJ_MAX
};
static const char *const inject_names[INJ_MAX] = {
	"stall",
	"eproto",
	"short",
	"overflow",
	"out-stall",
	"out-eproto",
	"out-timeout",
	"cmd-stall",
	"cmd-eproto",
	"int-silent",
	"vanish-ctrl",
	"class-stall",
	"input-size-stall",
	"cmd-lose",
	"empty-stall",
};
/* Their counters, "injected_" and the name with '_' for '-'. */
static const char *const inject_keys[INJ_MAX] = {
	"injected_stall",
	"injected_eproto",
	"injected_short",
	"injected_overflow",
	"injected_out_stall",
	"injected_out_eproto",
	"injected_out_timeout",
	"injected_cmd_stall",
	"injected_cmd_eproto",
	"injected_int_silent",
	"injected_vanish_ctrl",
	"injected_class_stall",
	"injected_input_size_stall",
	"injected_cmd_lose",
	"injected_empty_stall",
};

struct urb {
	UMockdevIoctlData *urb; /* ->data: our copy of struct usbdevfs_urb */
	UMockdevIoctlData *buf;
	UMockdevIoctlClient *client;
	struct modem *encap; /* an encapsulated command or response: in its encap_in_flight */
};

enum modem_kind {
	KIND_QMI,  /* ff/ff/ff, interrupt IN + bulk IN + bulk OUT: what qmi_wwan binds */
	KIND_DIAG, /* ff/ff/ff, bulk IN + bulk OUT: a DIAG/serial function, not QMI */
	KIND_MBIM, /* 02/0e/00 + 0a/00/02: what cdc_mbim binds */
};

struct modem {
	unsigned index;
	UMockdevIoctlBase *handler;
	const char *sim_path; /* NULL: no sim */
	char serial[64];
	guint16 vid, pid;
	unsigned port;
	guint8 ifnum; /* mbim: the communications interface; the data interface follows */
	enum modem_kind kind;
	bool id_given, iface_given;
	guint8 caps;
	guint16 ctrl_size, segment, mtu;
	unsigned data_alt;    /* mbim: the data interface's alternate setting */
	int also_qmi;	      /* mbim: a QMI interface's number in the descriptors too, or -1 */
	unsigned claimed_ifs; /* bit 0: ifnum, bit 1: ifnum + 1 */
	GString *sequence;    /* class_sequence */
	/* The function's NTB state: GET_NTB_PARAMETERS from the sim's descriptor message. */
	guint8 ntb_params[28];
	bool have_params;
	unsigned ntb_format; /* 0 NTB16, 1 NTB32 */
	guint32 ntb_in_size;
	guint16 resp_wlength;	   /* of the last GET_ENCAPSULATED_RESPONSE */
	guint16 cmd_wlength_max;   /* the longest SEND_ENCAPSULATED_COMMAND */
	guint32 open_max_transfer; /* MaxControlTransfer of the last MBIM OPEN */
	/* SEND_ENCAPSULATED_COMMAND and GET_ENCAPSULATED_RESPONSE URBs submitted and not yet
	 * reaped (or discarded), and the most at once: ctrl_in_flight_max. */
	unsigned encap_in_flight, encap_in_flight_max;
	bool start_plugged;
	const char *driver; /* the kernel driver bound to the interface */
	guint8 descriptors[192];
	size_t descriptors_len;
	int sim_fd;
	guint sim_watch;
	int pty_master, pty_slave;
	bool ringing, plugged, driver_bound, claimed;
	unsigned devnum;
	char *devnode, *syspath;
	GQueue bulk_in_urbs, int_urbs, reapable; /* struct urb * */
	GQueue held_urbs; /* never completed (out-timeout, vanish-ctrl) until discarded */
	GQueue bulk_in_data, int_data, encap; /* GBytes * */
	unsigned inject[INJ_MAX];
	GHashTable *stats; /* const char * -> count */
};

#define H_MAX_MODEMS 16

struct harness {
	UMockdevTestbed *tb;
	GMutex lock; /* every modem's state: the ioctl handlers run in umockdev's thread */
	const char *stats_path;
	unsigned next_devnum; /* bus 1's next address; the root hub has 1 */
	struct modem modem[H_MAX_MODEMS];
	unsigned n_modems;
	GMainLoop *main;
};

static struct harness H = { .next_devnum = 1 };

static void count(struct modem *m, const char *key, guint64 n)
{
	guint64 *v = g_hash_table_lookup(m->stats, key);

	if (!v) {
		v = g_new0(guint64, 1);
		g_hash_table_insert(m->stats, (gpointer)key, v);
	}
	*v += n;
}

static struct usbdevfs_urb *U(struct urb *u)
{
	return (struct usbdevfs_urb *)u->urb->data;
}

static void urb_free(struct urb *u)
{
	if (u->encap)
		u->encap->encap_in_flight--;
	g_clear_object(&u->buf);
	g_clear_object(&u->urb);
	g_free(u);
}

/* POLLOUT on qmapd's usbfs fd <=> some URB is reapable (tty output flow control). */
static void doorbell_locked(struct modem *m, bool on)
{
	if (on == m->ringing || m->pty_slave < 0)
		return;
	tcflow(m->pty_slave, on ? TCOON : TCOOFF);
	m->ringing = on;
}

static void complete_locked(struct modem *m, struct urb *u, int status, int actual)
{
	U(u)->status = status;
	U(u)->actual_length = actual;
	g_queue_push_tail(&m->reapable, u);
	doorbell_locked(m, true);
}

/* Take one injection of kind k, if one is due. */
static bool take_locked(struct modem *m, enum inject k)
{
	if (!m->inject[k])
		return false;
	m->inject[k]--;
	count(m, inject_keys[k], 1);
	return true;
}

/* Injected faults take the next bulk IN URB whether or not the sim has data. */
static bool inject_locked(struct modem *m, struct urb *u)
{
	int room = U(u)->buffer_length;

	for (int k = 0; k < INJ_BULK_IN_MAX; k++) {
		if (!take_locked(m, (enum inject)k))
			continue;
		switch ((enum inject)k) {
		case INJ_STALL:
			complete_locked(m, u, -EPIPE, 0);
			break;
		case INJ_EPROTO:
			complete_locked(m, u, -EPROTO, 0);
			break;
		case INJ_SHORT:
			/* Shorter than any QMAP header: a truncated transfer. */
			memset(u->buf->data, 0xde, MIN(room, 2));
			complete_locked(m, u, 0, MIN(room, 2));
			break;
		case INJ_OVERFLOW:
			/* Babble: the device sent more than the URB holds. */
			memset(u->buf->data, 0xee, room);
			complete_locked(m, u, -EOVERFLOW, room);
			break;
		default:
			break;
		}
		return true;
	}
	return false;
}

static void pump_locked(struct modem *m)
{
	while (!g_queue_is_empty(&m->bulk_in_urbs)) {
		struct urb *u = g_queue_peek_head(&m->bulk_in_urbs);
		if (!inject_locked(m, u)) {
			GBytes *b = g_queue_pop_head(&m->bulk_in_data);
			if (!b)
				break;
			gsize len;
			const guint8 *d = g_bytes_get_data(b, &len);
			int room = U(u)->buffer_length, status = 0;
			if ((gsize)room < len) {
				len = room;
				status = -EOVERFLOW;
			}
			memcpy(u->buf->data, d, len);
			complete_locked(m, u, status, (int)len);
			count(m, "bulk_in", 1);
			g_bytes_unref(b);
		}
		g_queue_pop_head(&m->bulk_in_urbs);
	}
	while (!g_queue_is_empty(&m->int_urbs) && !g_queue_is_empty(&m->int_data)) {
		struct urb *u = g_queue_pop_head(&m->int_urbs);
		GBytes *b = g_queue_pop_head(&m->int_data);
		gsize len;
		const guint8 *d = g_bytes_get_data(b, &len);
		len = MIN(len, (gsize)U(u)->buffer_length);
		memcpy(u->buf->data, d, len);
		complete_locked(m, u, 0, (int)len);
		count(m, "interrupts", 1);
		g_bytes_unref(b);
	}
}

static int sim_send_locked(struct modem *m, uint8_t ep, uint8_t flags, const void *buf, size_t len)
{
	struct transport_sim_header h = { .ep = ep, .flags = flags };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)buf, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (m->sim_fd < 0)
		return -ENOTCONN;
	if (sendmsg(m->sim_fd, &msg, MSG_NOSIGNAL) < 0) {
		count(m, "sim_send_errors", 1);
		return -errno;
	}
	return 0;
}

/* ---- descriptors: device, config, one interface ---- */

static void build_descriptors(struct modem *m)
{
	guint8 *d = m->descriptors;
	size_t n = 0;
	guint8 n_eps = m->kind == KIND_QMI ? 3 : 2;

#define PUT(...)                                     \
	do {                                         \
		const guint8 b_[] = { __VA_ARGS__ }; \
		memcpy(d + n, b_, sizeof(b_));       \
		n += sizeof(b_);                     \
	} while (0)
	/* device: USB 2.0, class per interface (IAD-style for MBIM), 64-byte EP0, strings
	 * 1..3, one config */
	if (m->kind == KIND_MBIM)
		PUT(18, USB_DT_DEVICE, 0x10, 0x02, 0xef, 0x02, 0x01, 64, m->vid & 0xff, m->vid >> 8,
		    m->pid & 0xff, m->pid >> 8, 0x06, 0x00, 1, 2, 3, 1);
	else
		PUT(18, USB_DT_DEVICE, 0x10, 0x02, 0, 0, 0, 64, m->vid & 0xff, m->vid >> 8,
		    m->pid & 0xff, m->pid >> 8, 0x18, 0x03, 1, 2, 3, 1);
	size_t config = n;
	PUT(9, USB_DT_CONFIG, 0, 0, m->kind == KIND_MBIM ? 2 + (m->also_qmi >= 0) : 1, 1, 0, 0xa0,
	    250);
	if (m->kind == KIND_MBIM) {
		guint8 c = m->ifnum, di = (guint8)(m->ifnum + 1);
		PUT(8, USB_DT_INTERFACE_ASSOCIATION, c, 2, 0x02, 0x0e, 0x00, 0);
		PUT(9, USB_DT_INTERFACE, c, 0, 1, 0x02, 0x0e, 0x00, 0);
		PUT(5, 0x24, 0x00, 0x10, 0x01); /* CDC header 1.10 */
		PUT(12, 0x24, 0x1b, 0x00, 0x01, m->ctrl_size & 0xff, m->ctrl_size >> 8, 32, 128,
		    m->segment & 0xff, m->segment >> 8, m->caps); /* MBIM 1.00 */
		if (m->mtu)
			PUT(8, 0x24, 0x1c, 0x00, 0x01, 64, m->mtu & 0xff, m->mtu >> 8);
		PUT(5, 0x24, 0x06, c, di); /* union */
		PUT(7, USB_DT_ENDPOINT, H_EP_INT, USB_ENDPOINT_XFER_INT, 64, 0, 9);
		PUT(9, USB_DT_INTERFACE, di, 0, 0, 0x0a, 0x00, 0x02, 0);
		PUT(9, USB_DT_INTERFACE, di, 1, 2, 0x0a, 0x00, 0x02, 0);
	} else {
		PUT(9, USB_DT_INTERFACE, m->ifnum, 0, n_eps, 0xff, 0xff, 0xff, 0);
		if (m->kind == KIND_QMI)
			PUT(7, USB_DT_ENDPOINT, H_EP_INT, USB_ENDPOINT_XFER_INT, 8, 0, 9);
	}
	PUT(7, USB_DT_ENDPOINT, H_EP_IN, USB_ENDPOINT_XFER_BULK, H_MPS & 0xff, H_MPS >> 8, 0);
	PUT(7, USB_DT_ENDPOINT, H_EP_OUT, USB_ENDPOINT_XFER_BULK, H_MPS & 0xff, H_MPS >> 8, 0);
	if (m->kind == KIND_MBIM && m->also_qmi >= 0) {
		PUT(9, USB_DT_INTERFACE, (guint8)m->also_qmi, 0, 3, 0xff, 0xff, 0xff, 0);
		PUT(7, USB_DT_ENDPOINT, 0x8a, USB_ENDPOINT_XFER_INT, 8, 0, 9);
		PUT(7, USB_DT_ENDPOINT, 0x8b, USB_ENDPOINT_XFER_BULK, H_MPS & 0xff, H_MPS >> 8, 0);
		PUT(7, USB_DT_ENDPOINT, 0x0c, USB_ENDPOINT_XFER_BULK, H_MPS & 0xff, H_MPS >> 8, 0);
	}
#undef PUT
	d[config + 2] = (guint8)((n - config) & 0xff);
	d[config + 3] = (guint8)((n - config) >> 8);
	m->descriptors_len = n;
}

/* Whether interface n belongs to this modem; its bit in claimed_ifs. */
static unsigned iface_bit(const struct modem *m, unsigned n)
{
	if (n == m->ifnum)
		return 1;
	if (m->kind == KIND_MBIM && n == m->ifnum + 1u)
		return 2;
	return 0;
}

static void record_locked(struct modem *m, const char *what, bool stalled)
{
	if (m->sequence->len)
		g_string_append_c(m->sequence, ',');
	g_string_append(m->sequence, what);
	if (stalled) {
		g_string_append_c(m->sequence, '!');
		count(m, "class_stalled", 1);
	}
}

static const char *class_name(guint8 req, guint16 value, guint16 length, char *buf, size_t len)
{
	switch (req) {
	case 0x80:
		return "GET_NTB_PARAMETERS";
	case 0x83:
		return "GET_NTB_FORMAT";
	case 0x84:
		snprintf(buf, len, "SET_NTB_FORMAT/%s",
			 value == 1   ? "32"
			 : value == 0 ? "16"
				      : "?");
		return buf;
	case 0x85:
		return "GET_NTB_INPUT_SIZE";
	case 0x86:
		snprintf(buf, len, "SET_NTB_INPUT_SIZE/%u", length);
		return buf;
	case 0x89:
		return "GET_CRC_MODE";
	case 0x8a:
		return "SET_CRC_MODE";
	}
	snprintf(buf, len, "request-%02x", req);
	return buf;
}

static int string_descriptor(struct modem *m, unsigned idx, guint8 *out, int room)
{
	const char *const strs[] = {
		NULL,
		m->kind == KIND_MBIM ? "Sierra Wireless, Incorporated" : "Quectel",
		m->kind == KIND_MBIM ? "EM7455 (qmapd-sim)" : "EC25 (qmapd-sim)",
		m->serial,
	};
	guint8 tmp[2 + 2 * sizeof(m->serial)];
	int n = 2;

	if (idx == 0) {
		tmp[2] = 0x09; /* en-US */
		tmp[3] = 0x04;
		n = 4;
	} else if (idx < G_N_ELEMENTS(strs)) {
		for (const char *c = strs[idx]; *c; c++) {
			tmp[n++] = (guint8)*c;
			tmp[n++] = 0;
		}
	} else {
		return -1;
	}
	tmp[0] = (guint8)n;
	tmp[1] = USB_DT_STRING;
	n = MIN(n, room);
	memcpy(out, tmp, n);
	return n;
}

static void unplug(struct modem *m);

/* From the main loop: unplug() takes the lock the ioctl handler holds. */
static gboolean unplug_later(gpointer user)
{
	unplug(user);
	return G_SOURCE_REMOVE;
}

/* EP0: the 8-byte setup packet, then the data stage. */
static void control_locked(struct modem *m, struct urb *u)
{
	guint8 *b = u->buf ? u->buf->data : NULL;
	int blen = U(u)->buffer_length;

	if (!b || blen < 8) {
		complete_locked(m, u, -EINVAL, 0);
		return;
	}
	guint8 rt = b[0], req = b[1];
	guint16 value = b[2] | b[3] << 8, index = b[4] | b[5] << 8, length = b[6] | b[7] << 8;
	guint8 *data = b + 8;
	int room = MIN((int)length, blen - 8);

	if (m->kind == KIND_MBIM && (rt == 0x21 || rt == 0xa1) && req >= 0x80 && req <= 0x8a) {
		char name[32];
		const char *what = class_name(req, value, length, name, sizeof(name));
		bool data_alt_set = m->data_alt != 0;
		bool refuse = index != m->ifnum ||
			      (req == 0x8a && (!(m->caps & 0x10) || data_alt_set || value != 0)) ||
			      (req == 0x84 && data_alt_set) ||
			      (req == 0x86 && length != 4 && !(length == 8 && (m->caps & 0x20)));
		count(m, "class_requests", 1);
		guint32 formats = m->ntb_params[2] | m->ntb_params[3] << 8;
		guint32 in_max = m->ntb_params[4] | m->ntb_params[5] << 8 |
				 (guint32)m->ntb_params[6] << 16 | (guint32)m->ntb_params[7] << 24;
		guint32 size = room >= 4 ? (guint32)(data[0] | data[1] << 8 | data[2] << 16 |
						     (guint32)data[3] << 24)
					 : 0;
		int n = 0;
		refuse = refuse || take_locked(m, INJ_CLASS_STALL) ||
			 (req == 0x86 && take_locked(m, INJ_INPUT_SIZE_STALL));
		switch (req) {
		case 0x80: /* GET_NTB_PARAMETERS */
			refuse = refuse || !m->have_params || rt != 0xa1;
			n = MIN(room, 28);
			if (!refuse)
				memcpy(data, m->ntb_params, n);
			break;
		case 0x83: /* GET_NTB_FORMAT */
			refuse = refuse || rt != 0xa1 || room < 2;
			n = 2;
			if (!refuse)
				data[0] = (guint8)m->ntb_format, data[1] = 0;
			break;
		case 0x84: /* SET_NTB_FORMAT */
			refuse = refuse || rt != 0x21 || length != 0 || value > 1 ||
				 (value == 1 && !(formats & 2));
			if (!refuse)
				m->ntb_format = value;
			break;
		case 0x85: /* GET_NTB_INPUT_SIZE */
			refuse = refuse || rt != 0xa1 || room < 4;
			n = 4;
			if (!refuse)
				memcpy(data, &(guint32){ GUINT32_TO_LE(m->ntb_in_size) }, 4);
			break;
		case 0x86: /* SET_NTB_INPUT_SIZE: NCM 1.0 §6.2.7, at least 2048 */
			refuse = refuse || rt != 0x21 || room < 4 || size < 2048 || size > in_max;
			if (!refuse)
				m->ntb_in_size = size;
			break;
		case 0x89: /* GET_CRC_MODE */
			refuse = refuse || rt != 0xa1 || room < 2;
			n = 2;
			if (!refuse)
				data[0] = data[1] = 0;
			break;
		case 0x8a: /* SET_CRC_MODE: checked above */
			refuse = refuse || rt != 0x21 || length != 0;
			break;
		default:
			refuse = true;
			break;
		}
		record_locked(m, what, refuse);
		if (refuse) {
			complete_locked(m, u, -EPIPE, 0);
			return;
		}
		/* The sim follows the settings (its format and NTB sizes); it answers too. */
		if (rt == 0x21) {
			struct transport_sim_class_request rq = {
				.request_type = rt,
				.request = req,
				.value = GUINT16_TO_LE(value),
				.index = GUINT16_TO_LE(index),
				.length = GUINT16_TO_LE(length),
			};
			guint8 msg[sizeof(rq) + 64];
			size_t mlen = sizeof(rq);
			memcpy(msg, &rq, sizeof(rq));
			if (room > 0) {
				memcpy(msg + mlen, data, MIN((size_t)room, sizeof(msg) - mlen));
				mlen += MIN((size_t)room, sizeof(msg) - mlen);
			}
			sim_send_locked(m, TRANSPORT_EP_CLASS_REQUEST, 0, msg, mlen);
		}
		complete_locked(m, u, 0, rt == 0xa1 ? n : room);
		return;
	}
	if (m->kind == KIND_MBIM && (rt & 0x7f) == 0x21 && (req == 0x00 || req == 0x01) &&
	    index != m->ifnum) {
		/* Encapsulated commands go to the communications interface only. */
		count(m, "class_stalled", 1);
		complete_locked(m, u, -EPIPE, 0);
		return;
	}
	if ((rt == 0x21 && req == 0x00) || (rt == 0xa1 && req == 0x01)) {
		u->encap = m;
		m->encap_in_flight++;
		m->encap_in_flight_max = MAX(m->encap_in_flight_max, m->encap_in_flight);
	}
	if (rt == 0x21 && req == 0x00) { /* SEND_ENCAPSULATED_COMMAND */
		if (take_locked(m, INJ_CMD_STALL)) {
			complete_locked(m, u, -EPIPE, 0);
			return;
		}
		if (take_locked(m, INJ_CMD_EPROTO)) {
			complete_locked(m, u, -EPROTO, 0);
			return;
		}
		if (take_locked(m, INJ_VANISH_CTRL)) {
			/* In flight when the device goes: the unplug flushes it. */
			g_queue_push_tail(&m->held_urbs, u);
			g_idle_add(unplug_later, m);
			return;
		}
		if (take_locked(m, INJ_CMD_LOSE)) {
			/* Acknowledged and gone, as on a function that lost it. */
			complete_locked(m, u, 0, room);
			return;
		}
		count(m, "ctrl_commands", 1);
		m->cmd_wlength_max = MAX(m->cmd_wlength_max, length);
		if (m->kind == KIND_MBIM && room >= 16 && data[0] == 1 && !data[1] && !data[2] &&
		    !data[3]) /* MBIM OPEN: its MaxControlTransfer */
			m->open_max_transfer = data[12] | data[13] << 8 | (guint32)data[14] << 16 |
					       (guint32)data[15] << 24;
		sim_send_locked(m, TRANSPORT_EP_CONTROL, 0, data, room);
		complete_locked(m, u, 0, room);
	} else if (rt == 0xa1 && req == 0x01) { /* GET_ENCAPSULATED_RESPONSE */
		GBytes *r = g_queue_pop_head(&m->encap);
		m->resp_wlength = length;
		if (!r && take_locked(m, INJ_EMPTY_STALL)) {
			complete_locked(m, u, -EPIPE, 0);
			return;
		}
		gsize n = 0;
		if (r) {
			const guint8 *d = g_bytes_get_data(r, &n);
			n = MIN(n, (gsize)room);
			memcpy(data, d, n);
			g_bytes_unref(r);
			count(m, "ctrl_responses", 1);
		} else {
			count(m, "ctrl_responses_empty", 1);
		}
		complete_locked(m, u, 0, (int)n);
	} else if (rt == 0x21 && req == 0x22) { /* SET_CONTROL_LINE_STATE */
		count(m, value & 1 ? "dtr_set" : "dtr_clear", 1);
		complete_locked(m, u, 0, 0);
	} else if (rt == 0x80 && req == USB_REQ_GET_DESCRIPTOR) {
		int n = -1;
		if (value >> 8 == USB_DT_DEVICE) {
			n = MIN(18, room);
			memcpy(data, m->descriptors, n);
		} else if (value >> 8 == USB_DT_CONFIG) {
			n = MIN((int)m->descriptors_len - 18, room);
			memcpy(data, m->descriptors + 18, n);
		} else if (value >> 8 == USB_DT_STRING) {
			n = string_descriptor(m, value & 0xff, data, room);
		}
		if (n < 0)
			complete_locked(m, u, -EPIPE, 0);
		else
			complete_locked(m, u, 0, n);
	} else {
		complete_locked(m, u, -EPIPE, 0);
	}
}

/* ---- the usbfs ioctls (umockdev's worker thread) ---- */

static UMockdevIoctlData *resolve(UMockdevIoctlClient *client, gsize len)
{
	g_autoptr(GError) err = NULL;
	UMockdevIoctlData *d =
		umockdev_ioctl_data_resolve(umockdev_ioctl_client_get_arg(client), 0, len, &err);
	if (err)
		g_printerr("usb-harness: resolve: %s\n", err->message);
	return d;
}

static int submit_locked(struct modem *m, UMockdevIoctlClient *client, UMockdevIoctlData *d)
{
	struct usbdevfs_urb *urb = (void *)d->data;
	UMockdevIoctlData *buf = NULL;

	if (urb->buffer_length > 0) {
		g_autoptr(GError) err = NULL;
		buf = umockdev_ioctl_data_resolve(d, offsetof(struct usbdevfs_urb, buffer),
						  urb->buffer_length, &err);
		if (!buf)
			return EFAULT;
	}
	struct urb *u = g_new0(struct urb, 1);
	u->urb = g_object_ref(d);
	u->buf = buf;
	u->client = client;
	urb->status = -EINPROGRESS;
	urb->actual_length = 0;
	count(m, "submitted", 1);

	if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
		control_locked(m, u);
	} else if (urb->type == USBDEVFS_URB_TYPE_BULK && m->kind == KIND_MBIM &&
		   m->data_alt == 0) {
		/* The data endpoints exist only in the data alternate setting. */
		count(m, "bulk_without_alt", 1);
		urb_free(u);
		return ENOENT;
	} else if (urb->type == USBDEVFS_URB_TYPE_BULK && urb->endpoint == H_EP_IN) {
		g_queue_push_tail(&m->bulk_in_urbs, u);
		pump_locked(m);
	} else if (urb->type == USBDEVFS_URB_TYPE_BULK && urb->endpoint == H_EP_OUT) {
		/* The kernel adds the ZLP only where the transfer ends on a packet boundary. */
		bool zlp = (urb->flags & USBDEVFS_URB_ZERO_PACKET) && urb->buffer_length > 0 &&
			   urb->buffer_length % H_MPS == 0;
		if (take_locked(m, INJ_OUT_STALL)) {
			complete_locked(m, u, -EPIPE, 0);
			return 0;
		}
		if (take_locked(m, INJ_OUT_EPROTO)) {
			complete_locked(m, u, -EPROTO, 0);
			return 0;
		}
		if (take_locked(m, INJ_OUT_TIMEOUT)) {
			g_queue_push_tail(&m->held_urbs, u);
			return 0;
		}
		count(m, "bulk_out", 1);
		count(m, "bulk_out_bytes", urb->buffer_length);
		if (zlp)
			count(m, "bulk_out_zlp", 1);
		sim_send_locked(m, TRANSPORT_EP_BULK_OUT, zlp ? TRANSPORT_SIM_FLAG_ZLP : 0,
				buf ? buf->data : NULL, urb->buffer_length);
		complete_locked(m, u, 0, urb->buffer_length);
	} else if (urb->type == USBDEVFS_URB_TYPE_INTERRUPT && urb->endpoint == H_EP_INT) {
		g_queue_push_tail(&m->int_urbs, u);
		pump_locked(m);
	} else {
		urb_free(u);
		return ENOENT;
	}
	return 0;
}

static int discard_locked(struct modem *m, UMockdevIoctlClient *client)
{
	gulong addr = *(gulong *)umockdev_ioctl_client_get_arg(client)->data;
	GQueue *queues[] = { &m->bulk_in_urbs, &m->int_urbs, &m->held_urbs };

	for (size_t i = 0; i < G_N_ELEMENTS(queues); i++)
		for (GList *l = queues[i]->head; l; l = l->next) {
			struct urb *u = l->data;
			if (u->client == client && u->urb->client_addr == addr) {
				g_queue_delete_link(queues[i], l);
				count(m, "discarded", 1);
				complete_locked(m, u, -ENOENT, 0);
				return 0;
			}
		}
	return EINVAL;
}

static int reap_locked(struct modem *m, UMockdevIoctlClient *client)
{
	struct urb *u = NULL;

	for (GList *l = m->reapable.head; l; l = l->next)
		if (((struct urb *)l->data)->client == client) {
			u = l->data;
			g_queue_delete_link(&m->reapable, l);
			break;
		}
	if (!u) {
		if (g_queue_is_empty(&m->reapable))
			doorbell_locked(m, false);
		return m->plugged ? EAGAIN : ENODEV;
	}
	g_autoptr(UMockdevIoctlData) p = resolve(client, sizeof(void *));
	if (!p) {
		urb_free(u);
		return EFAULT;
	}
	/* Point the client's pointer at its own URB; umockdev writes back URB and buffer. */
	umockdev_ioctl_data_set_ptr(p, 0, u->urb);
	count(m, "reaped", 1);
	urb_free(u);
	return 0;
}

static gboolean on_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user)
{
	gulong req = umockdev_ioctl_client_get_request(client);
	g_autoptr(UMockdevIoctlData) d = NULL;
	struct modem *m = user;
	int err = 0, ret = 0;
	(void)base;

	g_mutex_lock(&H.lock);
	count(m, "ioctls", 1);
	if (!m->plugged && req != USBDEVFS_REAPURBNDELAY) {
		err = ENODEV;
		goto out;
	}
	switch (req) {
	case USBDEVFS_GET_CAPABILITIES:
		if (!(d = resolve(client, _IOC_SIZE(req)))) {
			err = EFAULT;
			break;
		}
		*(guint32 *)d->data = USBDEVFS_CAP_ZERO_PACKET | USBDEVFS_CAP_BULK_CONTINUATION |
				      USBDEVFS_CAP_NO_PACKET_SIZE_LIM |
				      USBDEVFS_CAP_BULK_SCATTER_GATHER |
				      USBDEVFS_CAP_REAP_AFTER_DISCONNECT;
		break;
	case USBDEVFS_GET_SPEED:
		ret = USB_SPEED_HIGH;
		break;
	case USBDEVFS_GETDRIVER: {
		if (!(d = resolve(client, _IOC_SIZE(req)))) {
			err = EFAULT;
			break;
		}
		struct usbdevfs_getdriver *gd = (void *)d->data;
		if (!iface_bit(m, gd->interface))
			err = EINVAL;
		else if (m->driver_bound)
			g_strlcpy(gd->driver, m->driver, sizeof(gd->driver));
		else if (m->claimed_ifs & iface_bit(m, gd->interface))
			g_strlcpy(gd->driver, "usbfs", sizeof(gd->driver));
		else
			err = ENODATA;
		break;
	}
	case USBDEVFS_IOCTL: { /* libusb_detach/attach_kernel_driver */
		if (!(d = resolve(client, _IOC_SIZE(req)))) {
			err = EFAULT;
			break;
		}
		struct usbdevfs_ioctl *io = (void *)d->data;
		/* cdc_mbim holds both interfaces: unbinding either frees both. */
		if (!iface_bit(m, io->ifno) ||
		    (io->ioctl_code == USBDEVFS_CONNECT && io->ifno != m->ifnum)) {
			err = EINVAL;
		} else if (io->ioctl_code == USBDEVFS_DISCONNECT) {
			if (!m->driver_bound) {
				err = ENODATA;
				break;
			}
			m->driver_bound = false;
			count(m, "driver_detached", 1);
		} else if (io->ioctl_code == USBDEVFS_CONNECT) {
			if (m->claimed_ifs) {
				err = EBUSY;
				break;
			}
			m->driver_bound = true;
			count(m, "driver_reattached", 1);
			ret = 1; /* the kernel answers 1 when a driver bound */
		} else {
			err = ENOTTY;
		}
		break;
	}
	case USBDEVFS_DISCONNECT_CLAIM:
		if (m->driver_bound) {
			m->driver_bound = false;
			count(m, "driver_detached", 1);
		}
		m->claimed_ifs |= 1;
		count(m, "claimed", 1);
		break;
	case USBDEVFS_CLAIMINTERFACE: {
		if (!(d = resolve(client, _IOC_SIZE(req)))) {
			err = EFAULT;
			break;
		}
		unsigned bit = iface_bit(m, *(guint32 *)d->data);
		if (!bit)
			err = ENOENT;
		else if (m->driver_bound || (m->claimed_ifs & bit))
			err = EBUSY;
		else {
			m->claimed_ifs |= bit;
			count(m, "claimed", 1);
		}
		break;
	}
	case USBDEVFS_RELEASEINTERFACE:
		if (!(d = resolve(client, sizeof(guint32)))) {
			err = EFAULT;
			break;
		}
		m->claimed_ifs &= ~iface_bit(m, *(guint32 *)d->data);
		count(m, "released", 1);
		break;
	case USBDEVFS_SETINTERFACE: {
		if (!(d = resolve(client, _IOC_SIZE(req)))) {
			err = EFAULT;
			break;
		}
		const struct usbdevfs_setinterface *si = (const void *)d->data;
		unsigned bit = iface_bit(m, si->interface);
		char what[32];
		if (!bit) {
			err = EINVAL;
		} else if (!(m->claimed_ifs & bit)) {
			err = EBUSY; /* usbfs claims on the fly; a bound driver makes that fail */
		} else if (bit == 2 && si->altsetting <= 1) {
			m->data_alt = si->altsetting;
			snprintf(what, sizeof(what), "data-alt%u", si->altsetting);
			record_locked(m, what, false);
			/* Leaving the data alternate setting ends the endpoints' URBs. */
			if (si->altsetting == 0)
				while (!g_queue_is_empty(&m->bulk_in_urbs))
					complete_locked(m, g_queue_pop_head(&m->bulk_in_urbs),
							-ESHUTDOWN, 0);
		} else if (si->altsetting == 0) {
			snprintf(what, sizeof(what), "comm-alt0");
			record_locked(m, what, false);
		} else {
			err = EINVAL;
		}
		break;
	}
	case USBDEVFS_CLEAR_HALT:
		count(m, "clear_halt", 1);
		break;
	case USBDEVFS_SETCONFIGURATION:
	case USBDEVFS_RESETEP:
	case USBDEVFS_RESET:
		break;
	case USBDEVFS_SUBMITURB:
		if (!(d = resolve(client, sizeof(struct usbdevfs_urb)))) {
			err = EFAULT;
			break;
		}
		err = submit_locked(m, client, d);
		break;
	case USBDEVFS_DISCARDURB:
		err = discard_locked(m, client);
		break;
	case USBDEVFS_REAPURBNDELAY:
		err = reap_locked(m, client);
		break;
	default:
		err = ENOTTY;
		break;
	}
out:
	g_mutex_unlock(&H.lock);
	umockdev_ioctl_client_complete(client, err ? -1 : ret, err);
	return TRUE;
}

/* ---- the sim side (main thread) ---- */

static gboolean on_sim_readable(gint fd, GIOCondition cond, gpointer user)
{
	static guint8 buf[sizeof(struct transport_sim_header) + TRANSPORT_MAX_TRANSFER];
	struct modem *m = user;
	(void)cond;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return G_SOURCE_CONTINUE;
		if (n <= 0) {
			g_printerr("usb-harness: modem %u: qmapd-sim closed the connection\n",
				   m->index);
			g_mutex_lock(&H.lock);
			close(m->sim_fd);
			m->sim_fd = -1;
			m->sim_watch = 0;
			g_mutex_unlock(&H.lock);
			return G_SOURCE_REMOVE;
		}
		if ((size_t)n < sizeof(struct transport_sim_header))
			continue;
		const struct transport_sim_header *h = (const void *)buf;
		GBytes *b = g_bytes_new(buf + sizeof(*h), n - sizeof(*h));
		g_mutex_lock(&H.lock);
		if (h->ep == TRANSPORT_EP_BULK_IN) {
			if (g_queue_get_length(&m->bulk_in_data) >= H_QUEUE_MAX) {
				count(m, "dl_dropped", 1);
				g_bytes_unref(b);
			} else {
				g_queue_push_tail(&m->bulk_in_data, b);
			}
		} else if (h->ep == TRANSPORT_EP_CONTROL) {
			/* cdc-wdm's shape: notify, then the host fetches the response. */
			const guint8 notify[8] = { 0xa1, 0x01, 0, 0, m->ifnum, 0, 0, 0 };
			g_queue_push_tail(&m->encap, b);
			if (!take_locked(m, INJ_INT_SILENT))
				g_queue_push_tail(&m->int_data,
						  g_bytes_new(notify, sizeof(notify)));
		} else if (h->ep == TRANSPORT_EP_INTERRUPT) {
			g_queue_push_tail(&m->int_data, b);
		} else if (h->ep == TRANSPORT_EP_CLASS_REQUEST) {
			/* The harness answered already; the sim must agree. */
			if (h->flags & TRANSPORT_SIM_FLAG_STALL)
				count(m, "sim_class_stalled", 1);
			g_bytes_unref(b);
		} else {
			g_bytes_unref(b);
		}
		pump_locked(m);
		g_mutex_unlock(&H.lock);
	}
}

static int sim_connect(struct modem *m)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (!m->sim_path)
		return 0;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	g_strlcpy(a.sun_path, m->sim_path, sizeof(a.sun_path));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	m->sim_fd = fd;
	m->have_params = false;
	m->ntb_format = 0;
	if (m->kind == KIND_MBIM) {
		/* The sim's first message (transport.h) holds the GET_NTB_PARAMETERS answer the
		 * function gives: wait for it, so the host never finds the function without. */
		guint8 msg[sizeof(struct transport_sim_header) + 64];
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		const size_t off = sizeof(struct transport_sim_header) +
				   sizeof(struct transport_sim_descriptor);
		ssize_t n = poll(&pfd, 1, 5000) == 1 ? recv(fd, msg, sizeof(msg), 0) : -1;
		if (n >= (ssize_t)(off + 28) && msg[0] == TRANSPORT_EP_DESCRIPTOR &&
		    msg[sizeof(struct transport_sim_header) + 1] == TRANSPORT_SIM_FUNCTION_MBIM) {
			memcpy(m->ntb_params, msg + off, 28);
			m->have_params = true;
			m->ntb_in_size = m->ntb_params[4] | m->ntb_params[5] << 8 |
					 (guint32)m->ntb_params[6] << 16 |
					 (guint32)m->ntb_params[7] << 24;
		} else {
			g_printerr("usb-harness: modem %u: %s is no MBIM function (qmapd-sim "
				   "--mbim?)\n",
				   m->index, m->sim_path);
		}
	}
	m->sim_watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_sim_readable, m);
	return 0;
}

/* ---- plug / unplug ---- */

static const char *hub_path = "/devices/pci0000:00/0000:00:14.0/usb1";

static gboolean plug(struct modem *m, GError **error)
{
	g_autofree char *rec = NULL;
	g_autofree char *dhex = NULL;
	char name[128];
	int r;

	if (m->plugged)
		return TRUE;
	if ((r = sim_connect(m)) < 0)
		g_printerr("usb-harness: modem %u: cannot connect to %s: %s\n", m->index,
			   m->sim_path, g_strerror(-r));
	/* A new address on every plug, as the kernel gives; 128 and above do not exist. */
	if (++H.next_devnum > 127)
		H.next_devnum = 2;
	m->devnum = H.next_devnum;
	/* The testbed's root comes as a new string each time. */
	g_autofree char *root = umockdev_testbed_get_root_dir(H.tb);
	g_autofree char *hubdir = g_build_filename(root, "sys", hub_path, NULL);
	if (!g_file_test(hubdir, G_FILE_TEST_IS_DIR)) {
		rec = g_strdup_printf(
			"P: %s\nE: DEVNAME=/dev/bus/usb/001/001\nE: DEVTYPE=usb_device\n"
			"E: DRIVER=usb\nE: SUBSYSTEM=usb\nE: BUSNUM=001\nE: DEVNUM=001\n"
			"A: busnum=1\nA: devnum=1\nA: speed=480\nA: bConfigurationValue=1\n"
			"A: idVendor=1d6b\nA: idProduct=0002\nA: devpath=0\n"
			"H: descriptors=12010002090001406B1D020006060302010109021900010100E00009040"
			"00001090000000705810304000C\n",
			hub_path);
		if (!umockdev_testbed_add_from_string(H.tb, rec, error))
			return FALSE;
		g_clear_pointer(&rec, g_free);
	}
	GString *hex = g_string_new(NULL);
	for (size_t i = 0; i < m->descriptors_len; i++)
		g_string_append_printf(hex, "%02X", m->descriptors[i]);
	dhex = g_string_free(hex, FALSE);

	/* The pty symlink must exist before the "add" uevent, or a fast opener gets a plain file. */
	if (openpty(&m->pty_master, &m->pty_slave, name, NULL, NULL) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "openpty: %m");
		return FALSE;
	}
	fcntl(m->pty_master, F_SETFD, FD_CLOEXEC);
	fcntl(m->pty_slave, F_SETFD, FD_CLOEXEC);
	struct termios tio;
	tcgetattr(m->pty_slave, &tio);
	cfmakeraw(&tio);
	tcsetattr(m->pty_slave, TCSANOW, &tio);
	m->ringing = true;
	doorbell_locked(m, false);
	g_free(m->devnode);
	m->devnode = g_strdup_printf("/dev/bus/usb/%03u/%03u", H_BUS, m->devnum);
	g_autofree char *node = g_build_filename(root, m->devnode, NULL);
	g_autofree char *dir = g_path_get_dirname(node);
	g_mkdir_with_parents(dir, 0755);
	unlink(node);
	if (symlink(name, node) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "symlink: %m");
		return FALSE;
	}
	if (!umockdev_testbed_attach_ioctl(H.tb, m->devnode, m->handler, error))
		return FALSE;
	g_mutex_lock(&H.lock);
	m->plugged = true;
	m->driver_bound = true;
	m->claimed_ifs = 0;
	m->data_alt = 0;
	g_string_truncate(m->sequence, 0);
	g_mutex_unlock(&H.lock);

	guint8 n_eps = m->kind == KIND_QMI ? 3 : 2;
	bool mbim = m->kind == KIND_MBIM;
	g_autofree char *ifaces = NULL;
	if (mbim)
		ifaces = g_strdup_printf(
			"P: %s/1-%u/1-%u:1.%u\nE: DEVTYPE=usb_interface\nE: DRIVER=%s\n"
			"E: SUBSYSTEM=usb\nE: INTERFACE=2/14/0\nA: bInterfaceNumber=%02x\n"
			"A: bInterfaceClass=02\nA: bInterfaceSubClass=0e\nA: "
			"bInterfaceProtocol=00\n"
			"A: bNumEndpoints=01\n\n"
			"P: %s/1-%u/1-%u:1.%u\nE: DEVTYPE=usb_interface\nE: DRIVER=%s\n"
			"E: SUBSYSTEM=usb\nE: INTERFACE=10/0/2\nA: bInterfaceNumber=%02x\n"
			"A: bInterfaceClass=0a\nA: bInterfaceSubClass=00\nA: "
			"bInterfaceProtocol=02\n"
			"A: bNumEndpoints=00\n",
			hub_path, m->port, m->port, m->ifnum, m->driver, m->ifnum, hub_path,
			m->port, m->port, m->ifnum + 1, m->driver, m->ifnum + 1);
	else
		ifaces = g_strdup_printf(
			"P: %s/1-%u/1-%u:1.%u\nE: DEVTYPE=usb_interface\nE: DRIVER=%s\n"
			"E: SUBSYSTEM=usb\nE: INTERFACE=255/255/255\nA: bInterfaceNumber=%02x\n"
			"A: bInterfaceClass=ff\nA: bInterfaceSubClass=ff\nA: "
			"bInterfaceProtocol=ff\n"
			"A: bNumEndpoints=%02x\n",
			hub_path, m->port, m->port, m->ifnum, m->driver, m->ifnum, n_eps);
	rec = g_strdup_printf(
		"P: %s/1-%u\nE: DEVNAME=%s\nE: DEVTYPE=usb_device\nE: DRIVER=usb\n"
		"E: SUBSYSTEM=usb\nE: BUSNUM=001\nE: DEVNUM=%03u\nE: PRODUCT=%x/%x/318\n"
		"E: MAJOR=189\nE: MINOR=%u\n"
		"A: busnum=1\nA: devnum=%u\nA: speed=480\nA: bConfigurationValue=1\n"
		"A: bNumConfigurations=1\nA: bNumInterfaces= %u\nA: idVendor=%04x\n"
		"A: idProduct=%04x\nA: devpath=%u\nA: dev=189:%u\nA: manufacturer=%s\n"
		"A: product=%s\nA: serial=%s\nH: descriptors=%s\n\n%s",
		hub_path, m->port, m->devnode, m->devnum, m->vid, m->pid, m->devnum - 1, m->devnum,
		mbim ? 2 + (m->also_qmi >= 0) : 1, m->vid, m->pid, m->port, m->devnum - 1,
		mbim ? "Sierra Wireless, Incorporated" : "Quectel",
		mbim ? "EM7455 (qmapd-sim)" : "EC25 (qmapd-sim)", m->serial, dhex, ifaces);
	if (!umockdev_testbed_add_from_string(H.tb, rec, error))
		return FALSE;
	g_free(m->syspath);
	m->syspath = g_strdup_printf("/sys%s/1-%u", hub_path, m->port);
	count(m, "plugged", 1);
	g_printerr("usb-harness: modem %u plugged in as %s (1-%u)\n", m->index, m->devnode,
		   m->port);
	return TRUE;
}

static void unplug(struct modem *m)
{
	if (!m->plugged)
		return;
	g_mutex_lock(&H.lock);
	m->plugged = false;
	/* Like usb_disconnect(): the host controller flushes the endpoints. */
	GQueue *queues[] = { &m->bulk_in_urbs, &m->int_urbs, &m->held_urbs };
	for (size_t i = 0; i < G_N_ELEMENTS(queues); i++)
		while (!g_queue_is_empty(queues[i])) {
			complete_locked(m, g_queue_pop_head(queues[i]), -ESHUTDOWN, 0);
			count(m, "flushed_on_unplug", 1);
		}
	g_queue_clear_full(&m->bulk_in_data, (GDestroyNotify)g_bytes_unref);
	g_queue_clear_full(&m->int_data, (GDestroyNotify)g_bytes_unref);
	g_queue_clear_full(&m->encap, (GDestroyNotify)g_bytes_unref);
	/* The hang-up gives every open usbfs fd POLLERR|POLLHUP, as usbfs does. */
	close(m->pty_master);
	close(m->pty_slave);
	m->pty_master = m->pty_slave = -1;
	/* The modem is gone: for the sim, the host side closed. */
	if (m->sim_watch)
		g_source_remove(m->sim_watch);
	m->sim_watch = 0;
	if (m->sim_fd >= 0)
		close(m->sim_fd);
	m->sim_fd = -1;
	g_mutex_unlock(&H.lock);

	/* "remove" before deleting (it reads the uevent file); interface first. */
	g_autofree char *ifpath = g_strdup_printf("%s/1-%u:1.%u", m->syspath, m->port, m->ifnum);
	if (m->kind == KIND_MBIM) {
		g_autofree char *dpath =
			g_strdup_printf("%s/1-%u:1.%u", m->syspath, m->port, m->ifnum + 1);
		umockdev_testbed_uevent(H.tb, dpath, "remove");
		umockdev_testbed_remove_device(H.tb, dpath);
	}
	umockdev_testbed_uevent(H.tb, ifpath, "remove");
	umockdev_testbed_remove_device(H.tb, ifpath);
	umockdev_testbed_uevent(H.tb, m->syspath, "remove");
	umockdev_testbed_remove_device(H.tb, m->syspath);
	umockdev_testbed_detach_ioctl(H.tb, m->devnode, NULL);
	count(m, "unplugged", 1);
	g_printerr("usb-harness: modem %u unplugged\n", m->index);
}

static void write_modem_stats(FILE *f, struct modem *m, const char *prefix)
{
	static const char *const keys[] = {
		"ioctls",
		"submitted",
		"reaped",
		"discarded",
		"bulk_in",
		"bulk_out",
		"bulk_out_bytes",
		"bulk_out_zlp",
		"interrupts",
		"ctrl_commands",
		"ctrl_responses",
		"dtr_set",
		"dtr_clear",
		"driver_detached",
		"driver_reattached",
		"claimed",
		"released",
		"clear_halt",
		"flushed_on_unplug",
		"plugged",
		"unplugged",
		"dl_dropped",
		"sim_send_errors",
		"class_requests",
		"class_stalled",
		"bulk_without_alt",
		"sim_class_stalled",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		guint64 *v = g_hash_table_lookup(m->stats, keys[i]);
		fprintf(f, "%s%s=%" G_GUINT64_FORMAT "\n", prefix, keys[i], v ? *v : 0);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(inject_keys); i++) {
		guint64 *v = g_hash_table_lookup(m->stats, inject_keys[i]);
		fprintf(f, "%s%s=%" G_GUINT64_FORMAT "\n", prefix, inject_keys[i], v ? *v : 0);
	}
	fprintf(f, "%sbulk_in_urbs_pending=%u\n", prefix, g_queue_get_length(&m->bulk_in_urbs));
	guint64 *empty = g_hash_table_lookup(m->stats, "ctrl_responses_empty");
	fprintf(f, "%sctrl_responses_empty=%" G_GUINT64_FORMAT "\n", prefix, empty ? *empty : 0);
	fprintf(f, "%sctrl_responses_queued=%u\n", prefix, g_queue_get_length(&m->encap));
	fprintf(f, "%sdriver=%s\n", prefix,
		m->driver_bound	 ? m->driver
		: m->claimed_ifs ? "usbfs"
				 : "none");
	fprintf(f, "%spresent=%d\n", prefix, m->plugged);
	fprintf(f, "%sclass_sequence=%s\n", prefix, m->sequence->str);
	fprintf(f, "%sdata_alt=%u\n", prefix, m->data_alt);
	fprintf(f, "%sresp_wlength=%u\n", prefix, m->resp_wlength);
	fprintf(f, "%scmd_wlength_max=%u\n", prefix, m->cmd_wlength_max);
	fprintf(f, "%sctrl_in_flight_max=%u\n", prefix, m->encap_in_flight_max);
	fprintf(f, "%sopen_max_transfer=%u\n", prefix, m->open_max_transfer);
	fprintf(f, "%sdevnum=%u\n", prefix, m->plugged ? m->devnum : 0);
}

static void write_stats(void)
{
	g_autofree char *tmp = g_strdup_printf("%s.tmp", H.stats_path);
	FILE *f = fopen(tmp, "we");

	if (!f)
		return;
	g_mutex_lock(&H.lock);
	/* Modem 0's without a prefix: what the single-modem tests read. */
	write_modem_stats(f, &H.modem[0], "");
	fprintf(f, "modems=%u\n", H.n_modems);
	for (unsigned k = 0; k < H.n_modems; k++) {
		char prefix[16];
		snprintf(prefix, sizeof(prefix), "%u.", k);
		write_modem_stats(f, &H.modem[k], prefix);
	}
	g_mutex_unlock(&H.lock);
	fclose(f);
	rename(tmp, H.stats_path);
}

static void control_command(char *line)
{
	struct modem *m = &H.modem[0];
	g_autoptr(GError) err = NULL;

	if (line[0] == '@') {
		char *end;
		unsigned long k = strtoul(line + 1, &end, 10);
		if (end == line + 1 || k >= H.n_modems) {
			g_printerr("usb-harness: no modem '%s'\n", line);
			return;
		}
		m = &H.modem[k];
		line = end + strspn(end, " ");
	}
	g_auto(GStrv) w = g_strsplit(line, " ", 3);
	if (!g_strcmp0(w[0], "unplug")) {
		unplug(m);
	} else if (!g_strcmp0(w[0], "plug")) {
		if (!plug(m, &err))
			g_printerr("usb-harness: modem %u: plug: %s\n", m->index, err->message);
	} else if (!g_strcmp0(w[0], "stats")) {
		write_stats();
	} else if (!g_strcmp0(w[0], "quit")) {
		g_main_loop_quit(H.main);
	} else if (!g_strcmp0(w[0], "inject") && w[1]) {
		unsigned times = w[2] ? (unsigned)atoi(w[2]) : 1;
		g_mutex_lock(&H.lock);
		for (int k = 0; k < INJ_MAX; k++)
			if (!strcmp(w[1], inject_names[k]))
				m->inject[k] = w[2] && !times ? 0 : m->inject[k] + times;
		pump_locked(m);
		g_mutex_unlock(&H.lock);
	} else if (w[0] && w[0][0]) {
		g_printerr("usb-harness: unknown command '%s'\n", line);
	}
}

static gboolean on_control_line(gint fd, GIOCondition cond, gpointer user)
{
	static char line[256];
	static size_t have;
	(void)cond;
	(void)user;

	ssize_t n = read(fd, line + have, sizeof(line) - 1 - have);
	if (n <= 0)
		return G_SOURCE_CONTINUE;
	have += n;
	char *nl;
	while ((nl = memchr(line, '\n', have))) {
		*nl = '\0';
		control_command(line);
		have -= (size_t)(nl + 1 - line);
		memmove(line, nl + 1, have);
	}
	if (have == sizeof(line) - 1)
		have = 0;
	return G_SOURCE_CONTINUE;
}

static gboolean on_term(gpointer user)
{
	(void)user;
	g_main_loop_quit(H.main);
	return G_SOURCE_REMOVE;
}

/* ---- the command line ---- */

static struct modem *modem_add(void)
{
	struct modem *m;

	if (H.n_modems == H_MAX_MODEMS) {
		fprintf(stderr, "usb-harness: at most %d modems\n", H_MAX_MODEMS);
		return NULL;
	}
	m = &H.modem[H.n_modems];
	m->index = H.n_modems++;
	m->sim_fd = m->pty_master = m->pty_slave = -1;
	snprintf(m->serial, sizeof(m->serial), "qmapdsim%04u", m->index + 1);
	m->vid = 0x2c7c;
	m->pid = 0x0125;
	m->port = m->index + 1;
	m->ifnum = 4;
	m->kind = KIND_QMI;
	m->also_qmi = -1;
	m->caps = 0x20;
	m->ctrl_size = 4096;
	m->segment = 2048;
	m->mtu = 1500;
	m->start_plugged = true;
	return m;
}

/* KEY=VALUE[,KEY=VALUE...] as in the header comment. */
static bool modem_parse(struct modem *m, char *desc)
{
	for (char *kv = strtok(desc, ","); kv; kv = strtok(NULL, ",")) {
		char *v = strchr(kv, '=');
		unsigned a, b;
		char end;

		if (!v)
			goto bad;
		*v++ = '\0';
		if (!strcmp(kv, "sim")) {
			m->sim_path = v;
		} else if (!strcmp(kv, "serial")) {
			if (strlen(v) >= sizeof(m->serial))
				goto bad;
			g_strlcpy(m->serial, v, sizeof(m->serial));
		} else if (!strcmp(kv, "id")) {
			if (sscanf(v, "%4x:%4x%c", &a, &b, &end) != 2)
				goto bad;
			m->vid = (guint16)a;
			m->pid = (guint16)b;
			m->id_given = true;
		} else if (!strcmp(kv, "port")) {
			if (sscanf(v, "%u%c", &a, &end) != 1 || a < 1 || a > 15)
				goto bad;
			m->port = a;
		} else if (!strcmp(kv, "iface")) {
			if (sscanf(v, "%u%c", &a, &end) != 1 || a > 255)
				goto bad;
			if (a > 254)
				goto bad;
			m->ifnum = (guint8)a;
			m->iface_given = true;
		} else if (!strcmp(kv, "kind")) {
			if (!strcmp(v, "qmi"))
				m->kind = KIND_QMI;
			else if (!strcmp(v, "diag"))
				m->kind = KIND_DIAG;
			else if (!strcmp(v, "mbim"))
				m->kind = KIND_MBIM;
			else
				goto bad;
		} else if (!strcmp(kv, "qmi")) {
			if (sscanf(v, "%u%c", &a, &end) != 1 || a > 254)
				goto bad;
			m->also_qmi = (int)a;
		} else if (!strcmp(kv, "caps")) {
			if (sscanf(v, "%x%c", &a, &end) != 1 || a > 0xff)
				goto bad;
			m->caps = (guint8)a;
		} else if (!strcmp(kv, "ctrl") || !strcmp(kv, "segment") || !strcmp(kv, "mtu")) {
			if (sscanf(v, "%u%c", &a, &end) != 1 || a > 0xffff)
				goto bad;
			*(!strcmp(kv, "ctrl")	   ? &m->ctrl_size
			  : !strcmp(kv, "segment") ? &m->segment
						   : &m->mtu) = (guint16)a;
		} else if (!strcmp(kv, "plugged")) {
			m->start_plugged = strcmp(v, "0") != 0;
		} else {
			goto bad;
		}
	}
	return true;
bad:
	fprintf(stderr, "usb-harness: modem %u: bad description at '%s'\n", m->index, desc);
	return false;
}

int main(int argc, char **argv)
{
	const char *dir_file = NULL, *control = NULL;
	g_autoptr(GError) err = NULL;
	struct modem *m;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sim")) {
			if (!(m = modem_add()))
				return 2;
			m->sim_path = argv[i + 1];
		} else if (!strcmp(argv[i], "--modem")) {
			if (!(m = modem_add()) || !modem_parse(m, argv[i + 1]))
				return 2;
		} else if (!strcmp(argv[i], "--dir-file")) {
			dir_file = argv[i + 1];
		} else if (!strcmp(argv[i], "--control")) {
			control = argv[i + 1];
		} else if (!strcmp(argv[i], "--stats")) {
			H.stats_path = argv[i + 1];
		}
	}
	if (!H.n_modems || !dir_file || !control || !H.stats_path) {
		fprintf(stderr,
			"usage: umockdev-wrapper usb-harness {--sim SOCKET | --modem "
			"KEY=VALUE[,...]}... --dir-file FILE --control FIFO --stats FILE\n");
		return 2;
	}
	for (unsigned k = 0; k < H.n_modems; k++)
		for (unsigned j = 0; j < k; j++)
			if (H.modem[k].port == H.modem[j].port) {
				fprintf(stderr, "usb-harness: modems %u and %u on port %u\n", j, k,
					H.modem[k].port);
				return 2;
			}
	g_mutex_init(&H.lock);
	H.main = g_main_loop_new(NULL, FALSE);
	H.tb = umockdev_testbed_new();
	/*
	 * Every /dev node the preloaded qmapd opens would otherwise have its ioctls sent to
	 * umockdev's default handler, which answers ENOTTY: /dev/net/tun, for one. Without
	 * the default socket only our usbfs nodes are emulated, everything else is real.
	 */
	g_autofree char *root = umockdev_testbed_get_root_dir(H.tb);
	g_autofree char *dflt = g_build_filename(root, "ioctl", "_default", NULL);
	unlink(dflt);
	for (unsigned k = 0; k < H.n_modems; k++) {
		m = &H.modem[k];
		m->driver = m->kind == KIND_QMI	   ? "qmi_wwan"
			    : m->kind == KIND_MBIM ? "cdc_mbim"
						   : "option";
		if (m->kind == KIND_MBIM && !m->id_given) {
			m->vid = 0x1199; /* Sierra Wireless EM7455, composition 9 (MBIM) */
			m->pid = 0x9079;
		}
		if (m->kind == KIND_MBIM && !m->iface_given)
			m->ifnum = 12;
		m->sequence = g_string_new(NULL);
		build_descriptors(m);
		m->stats = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
		m->handler = umockdev_ioctl_base_new();
		g_signal_connect(m->handler, "handle-ioctl", G_CALLBACK(on_ioctl), m);
	}

	int cfd = open(control, O_RDWR | O_NONBLOCK | O_CLOEXEC); /* RDWR: never EOF */
	if (cfd < 0) {
		fprintf(stderr, "usb-harness: %s: %m\n", control);
		return 1;
	}
	g_unix_fd_add(cfd, G_IO_IN, on_control_line, NULL);
	g_unix_signal_add(SIGTERM, on_term, NULL);
	g_unix_signal_add(SIGINT, on_term, NULL);
	for (unsigned k = 0; k < H.n_modems; k++) {
		m = &H.modem[k];
		if (m->start_plugged && !plug(m, &err)) {
			fprintf(stderr, "usb-harness: modem %u: plug: %s\n", k, err->message);
			return 1;
		}
	}
	/* Written last: the testbed is ready once the file exists. */
	g_autofree char *tmp = g_strdup_printf("%s.tmp", dir_file);
	if (!g_file_set_contents(tmp, root, -1, &err) || rename(tmp, dir_file) < 0) {
		fprintf(stderr, "usb-harness: %s: cannot write\n", dir_file);
		return 1;
	}
	g_main_loop_run(H.main);
	write_stats();
	for (unsigned k = 0; k < H.n_modems; k++) {
		m = &H.modem[k];
		if (m->plugged)
			umockdev_testbed_detach_ioctl(H.tb, m->devnode, NULL);
		g_clear_object(&m->handler);
		g_free(m->devnode);
		g_free(m->syspath);
		g_string_free(m->sequence, TRUE);
		g_hash_table_destroy(m->stats);
	}
	g_clear_object(&H.tb);
	return 0;
}
