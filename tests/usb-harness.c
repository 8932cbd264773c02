/* SPDX-License-Identifier: MIT */
/*
 * usb-harness: a Quectel-like QMI modem on a umockdev testbed whose URBs are carried to
 * and from qmapd-sim, so qmapd's real libusb code runs against the same simulated modem
 * as the `sim` transport (docs/ARCHITECTURE.md "Tests"). Run it under umockdev-wrapper (its uevents
 * need the preload) and qmapd with LD_PRELOAD=libumockdev-preload.so.0 and UMOCKDEV_DIR
 * set to what --dir-file receives.
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
 *   plug | unplug | stats | inject KIND [N] | quit
 * where KIND is, for the next N of its kind:
 *   stall, eproto, short, overflow    a bulk IN URB fails so (or is damaged)
 *   out-stall, out-eproto             a bulk OUT URB fails with -EPIPE / -EPROTO
 *   out-timeout                       a bulk OUT URB never completes (libusb times it out)
 *   cmd-stall, cmd-eproto             a SEND_ENCAPSULATED_COMMAND fails, not forwarded
 *   int-silent                        a response comes without RESPONSE_AVAILABLE
 *   vanish-ctrl                       the device is unplugged while a SEND_ENCAPSULATED_
 *                                     COMMAND is in flight (that URB never completes)
 * Counters go to --stats as key=value lines (atomically) on `stats` and at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <linux/usb/ch9.h>
#include <linux/usbdevice_fs.h>
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

#define H_VID	    0x2c7c
#define H_PID	    0x0125
#define H_BUS	    1
#define H_IFNUM	    4
#define H_EP_INT    0x89
#define H_EP_IN	    0x88
#define H_EP_OUT    0x05
#define H_MPS	    512
#define H_SERIAL    "qmapdsim0001"
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
	INJ_MAX
};
static const char *const inject_names[INJ_MAX] = {
	"stall",       "eproto",    "short",	  "overflow",	"out-stall",   "out-eproto",
	"out-timeout", "cmd-stall", "cmd-eproto", "int-silent", "vanish-ctrl",
};
/* Their counters, "injected_" and the name with '_' for '-'. */
static const char *const inject_keys[INJ_MAX] = {
	"injected_stall",      "injected_eproto",     "injected_short",	      "injected_overflow",
	"injected_out_stall",  "injected_out_eproto", "injected_out_timeout", "injected_cmd_stall",
	"injected_cmd_eproto", "injected_int_silent", "injected_vanish_ctrl",
};

struct urb {
	UMockdevIoctlData *urb; /* ->data: our copy of struct usbdevfs_urb */
	UMockdevIoctlData *buf;
	UMockdevIoctlClient *client;
};

struct harness {
	UMockdevTestbed *tb;
	UMockdevIoctlBase *handler;
	GMutex lock;
	const char *sim_path;
	const char *stats_path;
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
	GMainLoop *main;
};

static struct harness H = { .sim_fd = -1, .pty_master = -1, .pty_slave = -1, .devnum = 1 };

static void count(const char *key, guint64 n)
{
	guint64 *v = g_hash_table_lookup(H.stats, key);

	if (!v) {
		v = g_new0(guint64, 1);
		g_hash_table_insert(H.stats, (gpointer)key, v);
	}
	*v += n;
}

static struct usbdevfs_urb *U(struct urb *u)
{
	return (struct usbdevfs_urb *)u->urb->data;
}

static void urb_free(struct urb *u)
{
	g_clear_object(&u->buf);
	g_clear_object(&u->urb);
	g_free(u);
}

/* POLLOUT on qmapd's usbfs fd <=> some URB is reapable (tty output flow control). */
static void doorbell_locked(bool on)
{
	if (on == H.ringing || H.pty_slave < 0)
		return;
	tcflow(H.pty_slave, on ? TCOON : TCOOFF);
	H.ringing = on;
}

static void complete_locked(struct urb *u, int status, int actual)
{
	U(u)->status = status;
	U(u)->actual_length = actual;
	g_queue_push_tail(&H.reapable, u);
	doorbell_locked(true);
}

/* Take one injection of kind k, if one is due. */
static bool take_locked(enum inject k)
{
	if (!H.inject[k])
		return false;
	H.inject[k]--;
	count(inject_keys[k], 1);
	return true;
}

/* Injected faults take the next bulk IN URB whether or not the sim has data. */
static bool inject_locked(struct urb *u)
{
	int room = U(u)->buffer_length;

	for (int k = 0; k < INJ_BULK_IN_MAX; k++) {
		if (!take_locked((enum inject)k))
			continue;
		switch ((enum inject)k) {
		case INJ_STALL:
			complete_locked(u, -EPIPE, 0);
			break;
		case INJ_EPROTO:
			complete_locked(u, -EPROTO, 0);
			break;
		case INJ_SHORT:
			/* Shorter than any QMAP header: a truncated transfer. */
			memset(u->buf->data, 0xde, MIN(room, 2));
			complete_locked(u, 0, MIN(room, 2));
			break;
		case INJ_OVERFLOW:
			/* Babble: the device sent more than the URB holds. */
			memset(u->buf->data, 0xee, room);
			complete_locked(u, -EOVERFLOW, room);
			break;
		default:
			break;
		}
		return true;
	}
	return false;
}

static void pump_locked(void)
{
	while (!g_queue_is_empty(&H.bulk_in_urbs)) {
		struct urb *u = g_queue_peek_head(&H.bulk_in_urbs);
		if (!inject_locked(u)) {
			GBytes *b = g_queue_pop_head(&H.bulk_in_data);
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
			complete_locked(u, status, (int)len);
			count("bulk_in", 1);
			g_bytes_unref(b);
		}
		g_queue_pop_head(&H.bulk_in_urbs);
	}
	while (!g_queue_is_empty(&H.int_urbs) && !g_queue_is_empty(&H.int_data)) {
		struct urb *u = g_queue_pop_head(&H.int_urbs);
		GBytes *b = g_queue_pop_head(&H.int_data);
		gsize len;
		const guint8 *d = g_bytes_get_data(b, &len);
		len = MIN(len, (gsize)U(u)->buffer_length);
		memcpy(u->buf->data, d, len);
		complete_locked(u, 0, (int)len);
		count("interrupts", 1);
		g_bytes_unref(b);
	}
}

static int sim_send_locked(uint8_t ep, uint8_t flags, const void *buf, size_t len)
{
	struct transport_sim_header h = { .ep = ep, .flags = flags };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)buf, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (H.sim_fd < 0)
		return -ENOTCONN;
	if (sendmsg(H.sim_fd, &msg, MSG_NOSIGNAL) < 0) {
		count("sim_send_errors", 1);
		return -errno;
	}
	return 0;
}

/* ---- descriptors: device, config, one QMI interface ---- */

static const guint8 descriptors[] = {
	18,
	USB_DT_DEVICE,
	0x10,
	0x02,
	0,
	0,
	0,
	64,
	H_VID & 0xff,
	H_VID >> 8,
	H_PID & 0xff,
	H_PID >> 8,
	0x18,
	0x03,
	1,
	2,
	3,
	1,
	/* config: 9 + interface 9 + 3 endpoints 7 = 39 bytes */
	9,
	USB_DT_CONFIG,
	39,
	0,
	1,
	1,
	0,
	0xa0,
	250,
	9,
	USB_DT_INTERFACE,
	H_IFNUM,
	0,
	3,
	0xff,
	0xff,
	0xff,
	0,
	7,
	USB_DT_ENDPOINT,
	H_EP_INT,
	USB_ENDPOINT_XFER_INT,
	8,
	0,
	9,
	7,
	USB_DT_ENDPOINT,
	H_EP_IN,
	USB_ENDPOINT_XFER_BULK,
	H_MPS & 0xff,
	H_MPS >> 8,
	0,
	7,
	USB_DT_ENDPOINT,
	H_EP_OUT,
	USB_ENDPOINT_XFER_BULK,
	H_MPS & 0xff,
	H_MPS >> 8,
	0,
};

static int string_descriptor(unsigned idx, guint8 *out, int room)
{
	static const char *const strs[] = { NULL, "Quectel", "EC25 (qmapd-sim)", H_SERIAL };
	guint8 tmp[64];
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

static void unplug(void);

/* From the main loop: unplug() takes the lock the ioctl handler holds. */
static gboolean unplug_later(gpointer user)
{
	(void)user;
	unplug();
	return G_SOURCE_REMOVE;
}

/* EP0: the 8-byte setup packet, then the data stage. */
static void control_locked(struct urb *u)
{
	guint8 *b = u->buf ? u->buf->data : NULL;
	int blen = U(u)->buffer_length;

	if (!b || blen < 8) {
		complete_locked(u, -EINVAL, 0);
		return;
	}
	guint8 rt = b[0], req = b[1];
	guint16 value = b[2] | b[3] << 8, length = b[6] | b[7] << 8;
	guint8 *data = b + 8;
	int room = MIN((int)length, blen - 8);

	if (rt == 0x21 && req == 0x00) { /* SEND_ENCAPSULATED_COMMAND */
		if (take_locked(INJ_CMD_STALL)) {
			complete_locked(u, -EPIPE, 0);
			return;
		}
		if (take_locked(INJ_CMD_EPROTO)) {
			complete_locked(u, -EPROTO, 0);
			return;
		}
		if (take_locked(INJ_VANISH_CTRL)) {
			/* In flight when the device goes: the unplug flushes it. */
			g_queue_push_tail(&H.held_urbs, u);
			g_idle_add(unplug_later, NULL);
			return;
		}
		count("ctrl_commands", 1);
		sim_send_locked(TRANSPORT_EP_CONTROL, 0, data, room);
		complete_locked(u, 0, room);
	} else if (rt == 0xa1 && req == 0x01) { /* GET_ENCAPSULATED_RESPONSE */
		GBytes *r = g_queue_pop_head(&H.encap);
		gsize n = 0;
		if (r) {
			const guint8 *d = g_bytes_get_data(r, &n);
			n = MIN(n, (gsize)room);
			memcpy(data, d, n);
			g_bytes_unref(r);
			count("ctrl_responses", 1);
		}
		complete_locked(u, 0, (int)n);
	} else if (rt == 0x21 && req == 0x22) { /* SET_CONTROL_LINE_STATE */
		count(value & 1 ? "dtr_set" : "dtr_clear", 1);
		complete_locked(u, 0, 0);
	} else if (rt == 0x80 && req == USB_REQ_GET_DESCRIPTOR) {
		int n = -1;
		if (value >> 8 == USB_DT_DEVICE) {
			n = MIN(18, room);
			memcpy(data, descriptors, n);
		} else if (value >> 8 == USB_DT_CONFIG) {
			n = MIN((int)sizeof(descriptors) - 18, room);
			memcpy(data, descriptors + 18, n);
		} else if (value >> 8 == USB_DT_STRING) {
			n = string_descriptor(value & 0xff, data, room);
		}
		if (n < 0)
			complete_locked(u, -EPIPE, 0);
		else
			complete_locked(u, 0, n);
	} else {
		complete_locked(u, -EPIPE, 0);
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

static int submit_locked(UMockdevIoctlClient *client, UMockdevIoctlData *d)
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
	count("submitted", 1);

	if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
		control_locked(u);
	} else if (urb->type == USBDEVFS_URB_TYPE_BULK && urb->endpoint == H_EP_IN) {
		g_queue_push_tail(&H.bulk_in_urbs, u);
		pump_locked();
	} else if (urb->type == USBDEVFS_URB_TYPE_BULK && urb->endpoint == H_EP_OUT) {
		/* The kernel adds the ZLP only where the transfer ends on a packet boundary. */
		bool zlp = (urb->flags & USBDEVFS_URB_ZERO_PACKET) && urb->buffer_length > 0 &&
			   urb->buffer_length % H_MPS == 0;
		if (take_locked(INJ_OUT_STALL)) {
			complete_locked(u, -EPIPE, 0);
			return 0;
		}
		if (take_locked(INJ_OUT_EPROTO)) {
			complete_locked(u, -EPROTO, 0);
			return 0;
		}
		if (take_locked(INJ_OUT_TIMEOUT)) {
			g_queue_push_tail(&H.held_urbs, u);
			return 0;
		}
		count("bulk_out", 1);
		count("bulk_out_bytes", urb->buffer_length);
		if (zlp)
			count("bulk_out_zlp", 1);
		sim_send_locked(TRANSPORT_EP_BULK_OUT, zlp ? TRANSPORT_SIM_FLAG_ZLP : 0,
				buf ? buf->data : NULL, urb->buffer_length);
		complete_locked(u, 0, urb->buffer_length);
	} else if (urb->type == USBDEVFS_URB_TYPE_INTERRUPT && urb->endpoint == H_EP_INT) {
		g_queue_push_tail(&H.int_urbs, u);
		pump_locked();
	} else {
		urb_free(u);
		return ENOENT;
	}
	return 0;
}

static int discard_locked(UMockdevIoctlClient *client)
{
	gulong addr = *(gulong *)umockdev_ioctl_client_get_arg(client)->data;
	GQueue *queues[] = { &H.bulk_in_urbs, &H.int_urbs, &H.held_urbs };

	for (size_t i = 0; i < G_N_ELEMENTS(queues); i++)
		for (GList *l = queues[i]->head; l; l = l->next) {
			struct urb *u = l->data;
			if (u->client == client && u->urb->client_addr == addr) {
				g_queue_delete_link(queues[i], l);
				count("discarded", 1);
				complete_locked(u, -ENOENT, 0);
				return 0;
			}
		}
	return EINVAL;
}

static int reap_locked(UMockdevIoctlClient *client)
{
	struct urb *u = NULL;

	for (GList *l = H.reapable.head; l; l = l->next)
		if (((struct urb *)l->data)->client == client) {
			u = l->data;
			g_queue_delete_link(&H.reapable, l);
			break;
		}
	if (!u) {
		if (g_queue_is_empty(&H.reapable))
			doorbell_locked(false);
		return H.plugged ? EAGAIN : ENODEV;
	}
	g_autoptr(UMockdevIoctlData) p = resolve(client, sizeof(void *));
	if (!p) {
		urb_free(u);
		return EFAULT;
	}
	/* Point the client's pointer at its own URB; umockdev writes back URB and buffer. */
	umockdev_ioctl_data_set_ptr(p, 0, u->urb);
	count("reaped", 1);
	urb_free(u);
	return 0;
}

static gboolean on_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user)
{
	gulong req = umockdev_ioctl_client_get_request(client);
	g_autoptr(UMockdevIoctlData) d = NULL;
	int err = 0, ret = 0;
	(void)base;
	(void)user;

	g_mutex_lock(&H.lock);
	count("ioctls", 1);
	if (!H.plugged && req != USBDEVFS_REAPURBNDELAY) {
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
		if (gd->interface != H_IFNUM)
			err = EINVAL;
		else if (H.driver_bound)
			g_strlcpy(gd->driver, "qmi_wwan", sizeof(gd->driver));
		else if (H.claimed)
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
		if (io->ifno != H_IFNUM) {
			err = EINVAL;
		} else if (io->ioctl_code == USBDEVFS_DISCONNECT) {
			if (!H.driver_bound) {
				err = ENODATA;
				break;
			}
			H.driver_bound = false;
			count("driver_detached", 1);
		} else if (io->ioctl_code == USBDEVFS_CONNECT) {
			if (H.claimed) {
				err = EBUSY;
				break;
			}
			H.driver_bound = true;
			count("driver_reattached", 1);
			ret = 1; /* the kernel answers 1 when a driver bound */
		} else {
			err = ENOTTY;
		}
		break;
	}
	case USBDEVFS_DISCONNECT_CLAIM:
		if (H.driver_bound) {
			H.driver_bound = false;
			count("driver_detached", 1);
		}
		H.claimed = true;
		count("claimed", 1);
		break;
	case USBDEVFS_CLAIMINTERFACE:
		if (!(d = resolve(client, _IOC_SIZE(req)))) {
			err = EFAULT;
			break;
		}
		if (*(guint32 *)d->data != H_IFNUM)
			err = ENOENT;
		else if (H.driver_bound || H.claimed)
			err = EBUSY;
		else {
			H.claimed = true;
			count("claimed", 1);
		}
		break;
	case USBDEVFS_RELEASEINTERFACE:
		H.claimed = false;
		count("released", 1);
		break;
	case USBDEVFS_CLEAR_HALT:
		count("clear_halt", 1);
		break;
	case USBDEVFS_SETINTERFACE:
	case USBDEVFS_SETCONFIGURATION:
	case USBDEVFS_RESETEP:
	case USBDEVFS_RESET:
		break;
	case USBDEVFS_SUBMITURB:
		if (!(d = resolve(client, sizeof(struct usbdevfs_urb)))) {
			err = EFAULT;
			break;
		}
		err = submit_locked(client, d);
		break;
	case USBDEVFS_DISCARDURB:
		err = discard_locked(client);
		break;
	case USBDEVFS_REAPURBNDELAY:
		err = reap_locked(client);
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
	(void)cond;
	(void)user;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return G_SOURCE_CONTINUE;
		if (n <= 0) {
			g_printerr("usb-harness: qmapd-sim closed the connection\n");
			g_mutex_lock(&H.lock);
			close(H.sim_fd);
			H.sim_fd = -1;
			H.sim_watch = 0;
			g_mutex_unlock(&H.lock);
			return G_SOURCE_REMOVE;
		}
		if ((size_t)n < sizeof(struct transport_sim_header))
			continue;
		const struct transport_sim_header *h = (const void *)buf;
		GBytes *b = g_bytes_new(buf + sizeof(*h), n - sizeof(*h));
		g_mutex_lock(&H.lock);
		if (h->ep == TRANSPORT_EP_BULK_IN) {
			if (g_queue_get_length(&H.bulk_in_data) >= H_QUEUE_MAX) {
				count("dl_dropped", 1);
				g_bytes_unref(b);
			} else {
				g_queue_push_tail(&H.bulk_in_data, b);
			}
		} else if (h->ep == TRANSPORT_EP_CONTROL) {
			/* cdc-wdm's shape: notify, then the host fetches the response. */
			const guint8 notify[8] = { 0xa1, 0x01, 0, 0, H_IFNUM, 0, 0, 0 };
			g_queue_push_tail(&H.encap, b);
			if (!take_locked(INJ_INT_SILENT))
				g_queue_push_tail(&H.int_data, g_bytes_new(notify, sizeof(notify)));
		} else if (h->ep == TRANSPORT_EP_INTERRUPT) {
			g_queue_push_tail(&H.int_data, b);
		} else {
			g_bytes_unref(b);
		}
		pump_locked();
		g_mutex_unlock(&H.lock);
	}
}

static int sim_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	g_strlcpy(a.sun_path, H.sim_path, sizeof(a.sun_path));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	H.sim_fd = fd;
	H.sim_watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_sim_readable, NULL);
	return 0;
}

/* ---- plug / unplug ---- */

static const char *hub_path = "/devices/pci0000:00/0000:00:14.0/usb1";

static gboolean plug(GError **error)
{
	g_autofree char *rec = NULL;
	g_autofree char *dhex = NULL;
	char name[128];

	if (H.plugged)
		return TRUE;
	if (sim_connect() < 0)
		g_printerr("usb-harness: cannot connect to %s: %m\n", H.sim_path);
	H.devnum++;
	g_autofree char *hubdir =
		g_build_filename(umockdev_testbed_get_root_dir(H.tb), "sys", hub_path, NULL);
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
	for (size_t i = 0; i < sizeof(descriptors); i++)
		g_string_append_printf(hex, "%02X", descriptors[i]);
	dhex = g_string_free(hex, FALSE);

	/* The pty symlink must exist before the "add" uevent, or a fast opener gets a plain file. */
	if (openpty(&H.pty_master, &H.pty_slave, name, NULL, NULL) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "openpty: %m");
		return FALSE;
	}
	fcntl(H.pty_master, F_SETFD, FD_CLOEXEC);
	fcntl(H.pty_slave, F_SETFD, FD_CLOEXEC);
	struct termios tio;
	tcgetattr(H.pty_slave, &tio);
	cfmakeraw(&tio);
	tcsetattr(H.pty_slave, TCSANOW, &tio);
	H.ringing = true;
	doorbell_locked(false);
	g_free(H.devnode);
	H.devnode = g_strdup_printf("/dev/bus/usb/%03u/%03u", H_BUS, H.devnum);
	g_autofree char *node =
		g_build_filename(umockdev_testbed_get_root_dir(H.tb), H.devnode, NULL);
	g_autofree char *dir = g_path_get_dirname(node);
	g_mkdir_with_parents(dir, 0755);
	unlink(node);
	if (symlink(name, node) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "symlink: %m");
		return FALSE;
	}
	if (!umockdev_testbed_attach_ioctl(H.tb, H.devnode, H.handler, error))
		return FALSE;
	g_mutex_lock(&H.lock);
	H.plugged = true;
	H.driver_bound = true;
	H.claimed = false;
	g_mutex_unlock(&H.lock);

	rec = g_strdup_printf(
		"P: %s/1-1\nE: DEVNAME=%s\nE: DEVTYPE=usb_device\nE: DRIVER=usb\n"
		"E: SUBSYSTEM=usb\nE: BUSNUM=001\nE: DEVNUM=%03u\nE: PRODUCT=2c7c/125/318\n"
		"E: MAJOR=189\nE: MINOR=%u\n"
		"A: busnum=1\nA: devnum=%u\nA: speed=480\nA: bConfigurationValue=1\n"
		"A: bNumConfigurations=1\nA: bNumInterfaces= 1\nA: idVendor=2c7c\n"
		"A: idProduct=0125\nA: devpath=1\nA: dev=189:%u\nA: manufacturer=Quectel\n"
		"A: product=EC25 (qmapd-sim)\nA: serial=%s\nH: descriptors=%s\n\n"
		"P: %s/1-1/1-1:1.%u\nE: DEVTYPE=usb_interface\nE: DRIVER=qmi_wwan\n"
		"E: SUBSYSTEM=usb\nE: INTERFACE=255/255/255\nA: bInterfaceNumber=%02x\n"
		"A: bInterfaceClass=ff\nA: bInterfaceSubClass=ff\nA: bInterfaceProtocol=ff\n"
		"A: bNumEndpoints=03\n",
		hub_path, H.devnode, H.devnum, H.devnum - 1, H.devnum, H.devnum - 1, H_SERIAL, dhex,
		hub_path, H_IFNUM, H_IFNUM);
	if (!umockdev_testbed_add_from_string(H.tb, rec, error))
		return FALSE;
	g_free(H.syspath);
	H.syspath = g_strdup_printf("/sys%s/1-1", hub_path);
	count("plugged", 1);
	g_printerr("usb-harness: plugged in as %s\n", H.devnode);
	return TRUE;
}

static void unplug(void)
{
	if (!H.plugged)
		return;
	g_mutex_lock(&H.lock);
	H.plugged = false;
	/* Like usb_disconnect(): the host controller flushes the endpoints. */
	GQueue *queues[] = { &H.bulk_in_urbs, &H.int_urbs, &H.held_urbs };
	for (size_t i = 0; i < G_N_ELEMENTS(queues); i++)
		while (!g_queue_is_empty(queues[i])) {
			complete_locked(g_queue_pop_head(queues[i]), -ESHUTDOWN, 0);
			count("flushed_on_unplug", 1);
		}
	g_queue_clear_full(&H.bulk_in_data, (GDestroyNotify)g_bytes_unref);
	g_queue_clear_full(&H.int_data, (GDestroyNotify)g_bytes_unref);
	g_queue_clear_full(&H.encap, (GDestroyNotify)g_bytes_unref);
	/* The hang-up gives every open usbfs fd POLLERR|POLLHUP, as usbfs does. */
	close(H.pty_master);
	close(H.pty_slave);
	H.pty_master = H.pty_slave = -1;
	/* The modem is gone: for the sim, the host side closed. */
	if (H.sim_watch)
		g_source_remove(H.sim_watch);
	H.sim_watch = 0;
	if (H.sim_fd >= 0)
		close(H.sim_fd);
	H.sim_fd = -1;
	g_mutex_unlock(&H.lock);

	/* "remove" before deleting (it reads the uevent file); interface first. */
	g_autofree char *ifpath = g_strdup_printf("%s/1-1:1.%u", H.syspath, H_IFNUM);
	umockdev_testbed_uevent(H.tb, ifpath, "remove");
	umockdev_testbed_remove_device(H.tb, ifpath);
	umockdev_testbed_uevent(H.tb, H.syspath, "remove");
	umockdev_testbed_remove_device(H.tb, H.syspath);
	umockdev_testbed_detach_ioctl(H.tb, H.devnode, NULL);
	count("unplugged", 1);
	g_printerr("usb-harness: unplugged\n");
}

static void write_stats(void)
{
	g_autofree char *tmp = g_strdup_printf("%s.tmp", H.stats_path);
	FILE *f = fopen(tmp, "we");

	if (!f)
		return;
	g_mutex_lock(&H.lock);
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
	};
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		guint64 *v = g_hash_table_lookup(H.stats, keys[i]);
		fprintf(f, "%s=%" G_GUINT64_FORMAT "\n", keys[i], v ? *v : 0);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(inject_keys); i++) {
		guint64 *v = g_hash_table_lookup(H.stats, inject_keys[i]);
		fprintf(f, "%s=%" G_GUINT64_FORMAT "\n", inject_keys[i], v ? *v : 0);
	}
	fprintf(f, "bulk_in_urbs_pending=%u\n", g_queue_get_length(&H.bulk_in_urbs));
	fprintf(f, "driver=%s\n", H.driver_bound ? "qmi_wwan" : H.claimed ? "usbfs" : "none");
	g_mutex_unlock(&H.lock);
	fclose(f);
	rename(tmp, H.stats_path);
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
		g_auto(GStrv) w = g_strsplit(line, " ", 3);
		g_autoptr(GError) err = NULL;
		if (!g_strcmp0(w[0], "unplug")) {
			unplug();
		} else if (!g_strcmp0(w[0], "plug")) {
			if (!plug(&err))
				g_printerr("usb-harness: plug: %s\n", err->message);
		} else if (!g_strcmp0(w[0], "stats")) {
			write_stats();
		} else if (!g_strcmp0(w[0], "quit")) {
			g_main_loop_quit(H.main);
		} else if (!g_strcmp0(w[0], "inject") && w[1]) {
			unsigned times = w[2] ? (unsigned)atoi(w[2]) : 1;
			g_mutex_lock(&H.lock);
			for (int k = 0; k < INJ_MAX; k++)
				if (!strcmp(w[1], inject_names[k]))
					H.inject[k] += times;
			pump_locked();
			g_mutex_unlock(&H.lock);
		} else if (w[0] && w[0][0]) {
			g_printerr("usb-harness: unknown command '%s'\n", line);
		}
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

int main(int argc, char **argv)
{
	const char *dir_file = NULL, *control = NULL;
	g_autoptr(GError) err = NULL;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sim"))
			H.sim_path = argv[i + 1];
		else if (!strcmp(argv[i], "--dir-file"))
			dir_file = argv[i + 1];
		else if (!strcmp(argv[i], "--control"))
			control = argv[i + 1];
		else if (!strcmp(argv[i], "--stats"))
			H.stats_path = argv[i + 1];
	}
	if (!H.sim_path || !dir_file || !control || !H.stats_path) {
		fprintf(stderr, "usage: umockdev-wrapper usb-harness --sim SOCKET --dir-file FILE "
				"--control FIFO --stats FILE\n");
		return 2;
	}
	g_mutex_init(&H.lock);
	H.stats = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
	H.main = g_main_loop_new(NULL, FALSE);
	H.tb = umockdev_testbed_new();
	/*
	 * Every /dev node the preloaded qmapd opens would otherwise have its ioctls sent to
	 * umockdev's default handler, which answers ENOTTY: /dev/net/tun, for one. Without
	 * the default socket only our usbfs node is emulated, everything else is real.
	 */
	g_autofree char *dflt =
		g_build_filename(umockdev_testbed_get_root_dir(H.tb), "ioctl", "_default", NULL);
	unlink(dflt);
	H.handler = umockdev_ioctl_base_new();
	g_signal_connect(H.handler, "handle-ioctl", G_CALLBACK(on_ioctl), NULL);

	int cfd = open(control, O_RDWR | O_NONBLOCK | O_CLOEXEC); /* RDWR: never EOF */
	if (cfd < 0) {
		fprintf(stderr, "usb-harness: %s: %m\n", control);
		return 1;
	}
	g_unix_fd_add(cfd, G_IO_IN, on_control_line, NULL);
	g_unix_signal_add(SIGTERM, on_term, NULL);
	g_unix_signal_add(SIGINT, on_term, NULL);
	if (!plug(&err)) {
		fprintf(stderr, "usb-harness: plug: %s\n", err->message);
		return 1;
	}
	/* Written last: the testbed is ready once the file exists. */
	g_autofree char *tmp = g_strdup_printf("%s.tmp", dir_file);
	if (!g_file_set_contents(tmp, umockdev_testbed_get_root_dir(H.tb), -1, &err) ||
	    rename(tmp, dir_file) < 0) {
		fprintf(stderr, "usb-harness: %s: cannot write\n", dir_file);
		return 1;
	}
	g_main_loop_run(H.main);
	write_stats();
	if (H.plugged)
		umockdev_testbed_detach_ioctl(H.tb, H.devnode, NULL);
	g_clear_object(&H.handler);
	g_clear_object(&H.tb);
	return 0;
}
