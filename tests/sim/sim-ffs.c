/* SPDX-License-Identifier: MIT */
/* qmapd-sim's FunctionFS front end (sim-ffs.h). */
#include "sim-ffs.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "transport.h"

/* CDC class requests (CDC 1.2 §6.2) and the notification (§6.3). */
#define CDC_SEND_ENCAPSULATED_COMMAND 0x00
#define CDC_GET_ENCAPSULATED_RESPONSE 0x01
#define CDC_SET_CONTROL_LINE_STATE    0x22
#define CDC_CTRL_DTR		      0x01
#define CDC_NOTIFY_RESPONSE_AVAILABLE 0x01
/* The EC25's QMI interface number: what the host's driver sees (the gadget's serial functions
 * take 0-3), and what a notification's wIndex names. */
#define FFS_QMI_INTERFACE 4
/* htole*() are not constant expressions with glibc; these are, for the static descriptors. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LE16(x) ((uint16_t)(x))
#define LE32(x) ((uint32_t)(x))
#else
#define LE16(x) __builtin_bswap16(x)
#define LE32(x) __builtin_bswap32(x)
#endif
#define FFS_QUEUE	64
#define FFS_WAKE_SIGNAL (SIGRTMIN + 5)
#define FFS_MAX_CONTROL 4096

struct ffs_msg {
	uint32_t len;
	uint8_t data[TRANSPORT_MAX_TRANSFER];
};

struct ffs_queue {
	struct ffs_msg *slot[FFS_QUEUE];
	unsigned head, count;
};

/* The faults of sim-ffs.h, in the order of their names. */
enum ffs_fault {
	FAULT_STALL,
	FAULT_SHORT,
	FAULT_OUT_STALL,
	FAULT_OUT_TIMEOUT,
	FAULT_CMD_STALL,
	FAULT_INT_SILENT,
	FAULT_CMD_HOLD,
	FAULT_MAX
};
_Static_assert(FAULT_MAX == SIM_FFS_FAULTS, "sim-ffs.h counts the faults");

static const char *const fault_names[FAULT_MAX] = {
	"stall", "short", "out-stall", "out-timeout", "cmd-stall", "int-silent", "cmd-hold",
};

struct sim_ffs {
	int ep0, ep_int, ep_in, ep_out, sock;
	int ep_probe; /* the interrupt endpoint again, O_NONBLOCK: is the function enabled? */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ffs_queue control;   /* responses waiting for GET_ENCAPSULATED_RESPONSE */
	struct ffs_queue bulk_in;   /* aggregates waiting for the host's bulk IN */
	unsigned notify;	    /* RESPONSE_AVAILABLE still to send */
	struct sim_ffs_stats stats; /* under lock */
	unsigned fault[FAULT_MAX];  /* faults still to make, under lock */
	pthread_t out_thread;	    /* woken by FFS_WAKE_SIGNAL for an OUT fault */
};

static const struct {
	struct usb_functionfs_descs_head_v2 header;
	__le32 fs_count;
	__le32 hs_count;
	struct {
		struct usb_interface_descriptor intf;
		struct usb_endpoint_descriptor_no_audio ep_int, ep_in, ep_out;
	} __attribute__((packed)) fs, hs;
} __attribute__((packed)) descriptors = {
	.header = {
		.magic = LE32(FUNCTIONFS_DESCRIPTORS_MAGIC_V2),
		.flags = LE32(FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC),
		.length = LE32(sizeof(descriptors)),
	},
	.fs_count = LE32(4),
	.hs_count = LE32(4),
#define FFS_FUNCTION(bulk_size, interval)                                     \
	{                                                                     \
		.intf = { .bLength = sizeof(struct usb_interface_descriptor), \
			  .bDescriptorType = USB_DT_INTERFACE,                \
			  .bNumEndpoints = 3,                                 \
			  .bInterfaceClass = 0xff,                            \
			  .bInterfaceSubClass = 0xff,                         \
			  .bInterfaceProtocol = 0xff,                         \
			  .iInterface = 1 },                                  \
		.ep_int = { .bLength = USB_DT_ENDPOINT_SIZE,                  \
			    .bDescriptorType = USB_DT_ENDPOINT,               \
			    .bEndpointAddress = 1 | USB_DIR_IN,               \
			    .bmAttributes = USB_ENDPOINT_XFER_INT,            \
			    .wMaxPacketSize = LE16(8),                        \
			    .bInterval = interval },                          \
		.ep_in = { .bLength = USB_DT_ENDPOINT_SIZE,                   \
			   .bDescriptorType = USB_DT_ENDPOINT,                \
			   .bEndpointAddress = 2 | USB_DIR_IN,                \
			   .bmAttributes = USB_ENDPOINT_XFER_BULK,            \
			   .wMaxPacketSize = LE16(bulk_size) },               \
		.ep_out = { .bLength = USB_DT_ENDPOINT_SIZE,                  \
			    .bDescriptorType = USB_DT_ENDPOINT,               \
			    .bEndpointAddress = 3 | USB_DIR_OUT,              \
			    .bmAttributes = USB_ENDPOINT_XFER_BULK,           \
			    .wMaxPacketSize = LE16(bulk_size) },              \
	}
	/* EC25: 8-byte interrupt endpoint, polled every 32 ms at full speed, 2^(9-1) microframes
	 * at high speed. */
	.fs = FFS_FUNCTION(64, 32),
	.hs = FFS_FUNCTION(512, 9),
};

#define FFS_INTERFACE_NAME "Quectel EC25 QMI (qmapd-sim)"
static const struct {
	struct usb_functionfs_strings_head header;
	struct {
		__le16 code;
		char str[sizeof(FFS_INTERFACE_NAME)];
	} __attribute__((packed)) lang0;
} __attribute__((packed)) strings = {
	.header = { .magic = LE32(FUNCTIONFS_STRINGS_MAGIC),
		    .length = LE32(sizeof(strings)),
		    .str_count = LE32(1),
		    .lang_count = LE32(1) },
	.lang0 = { LE16(0x0409), FFS_INTERFACE_NAME },
};

/* Push m (taking it) or drop it when full; called with the lock held. */
static bool queue_push(struct ffs_queue *q, struct ffs_msg *m)
{
	if (q->count == FFS_QUEUE) {
		free(m);
		return false;
	}
	q->slot[(q->head + q->count++) % FFS_QUEUE] = m;
	return true;
}

static struct ffs_msg *queue_pop(struct ffs_queue *q)
{
	if (q->count == 0)
		return NULL;
	struct ffs_msg *m = q->slot[q->head];
	q->head = (q->head + 1) % FFS_QUEUE;
	q->count--;
	return m;
}

/*
 * The host disabled the function (a reset, a new configuration, the cable pulled): what was
 * queued for it is dropped, as a Qualcomm modem's USB function driver does (f_rmnet purges
 * its response queue and zeroes its notification count on disable). A response kept would be
 * answered to the next host driver's first GET_ENCAPSULATED_RESPONSE, one notification late
 * for ever after. count: the event's counter; how: "disabled" or "unbound", for the log.
 */
static void function_gone(struct sim_ffs *f, uint64_t *count, const char *how)
{
	struct ffs_msg *m;

	pthread_mutex_lock(&f->lock);
	(*count)++;
	log_info("qmapd-sim: ffs: function %s; %u responses and %u aggregates dropped", how,
		 f->control.count, f->bulk_in.count);
	while ((m = queue_pop(&f->control))) {
		f->stats.responses_purged++;
		free(m);
	}
	while ((m = queue_pop(&f->bulk_in))) {
		f->stats.bulk_in_dropped++;
		free(m);
	}
	f->notify = 0;
	pthread_mutex_unlock(&f->lock);
}

/*
 * Whether a transfer of len bytes on an enabled endpoint is whole packets: its
 * wMaxPacketSize at the speed the host enabled the function at (64 at full speed, 512 at
 * high speed), asked only when len is a multiple of the smallest.
 */
static bool whole_packets(int fd, size_t len)
{
	struct usb_endpoint_descriptor d;

	if (len == 0 || len % 64 != 0 || ioctl(fd, FUNCTIONFS_ENDPOINT_DESC, &d) < 0)
		return false;
	uint16_t mps = le16toh(d.wMaxPacketSize) & 0x7ff;
	return mps && len % mps == 0;
}

/* Take one fault of kind k if one is due; called with the lock held. */
static bool fault_take(struct sim_ffs *f, enum ffs_fault k)
{
	if (f->fault[k] == 0)
		return false;
	f->fault[k]--;
	return true;
}

static void fault_made(struct sim_ffs *f, enum ffs_fault k)
{
	pthread_mutex_lock(&f->lock);
	f->stats.injected[k]++;
	pthread_mutex_unlock(&f->lock);
	log_info("qmapd-sim: ffs: fault %s made", fault_names[k]);
}

/*
 * Halt an endpoint: FunctionFS halts it on an I/O in the direction opposite to its own,
 * which then fails with EBADMSG (f_fs.c, ffs_epfile_io()). The UDC refuses to halt an IN
 * endpoint with a transfer queued, so the thread that writes it calls this between writes.
 */
static bool halt(struct sim_ffs *f, int fd, bool in, enum ffs_fault k)
{
	uint8_t b;
	ssize_t n = in ? read(fd, &b, 0) : write(fd, &b, 0);

	if (n >= 0 || errno != EBADMSG) {
		log_warning_errno(n < 0 ? errno : EIO, "qmapd-sim: ffs: fault %s: no halt",
				  fault_names[k]);
		return false;
	}
	fault_made(f, k);
	return true;
}

static int sim_send(struct sim_ffs *f, enum transport_ep ep, uint8_t flags, const void *data,
		    size_t len)
{
	struct transport_sim_header h = { .ep = ep, .flags = flags };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)data, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	if (sendmsg(f->sock, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

/* The sim's messages: control responses queued for ep0, aggregates for bulk IN. */
static void *sock_thread(void *arg)
{
	struct sim_ffs *f = arg;
	static uint8_t buf[sizeof(struct transport_sim_header) + TRANSPORT_MAX_TRANSFER];
	for (;;) {
		ssize_t n = recv(f->sock, buf, sizeof(buf), 0);
		if (n <= 0) {
			log_error("qmapd-sim: ffs: the sim closed its socket");
			exit(EXIT_FAILURE);
		}
		if ((size_t)n < sizeof(struct transport_sim_header))
			continue;
		const struct transport_sim_header *h = (const void *)buf;
		size_t len = (size_t)n - sizeof(*h);
		if (h->ep != TRANSPORT_EP_CONTROL && h->ep != TRANSPORT_EP_BULK_IN)
			continue; /* the descriptor message: this front end has its own */
		struct ffs_msg *m = malloc(sizeof(*m));
		if (!m) {
			log_error_errno(ENOMEM, "qmapd-sim: ffs: cannot queue a message");
			continue;
		}
		m->len = (uint32_t)len;
		memcpy(m->data, buf + sizeof(*h), len);
		pthread_mutex_lock(&f->lock);
		if (h->ep == TRANSPORT_EP_CONTROL) {
			if (!queue_push(&f->control, m)) {
				f->stats.responses_dropped++;
				pthread_mutex_unlock(&f->lock);
				continue;
			}
			bool silent = fault_take(f, FAULT_INT_SILENT);
			if (silent)
				f->stats.injected[FAULT_INT_SILENT]++;
			else
				f->notify++;
			log_debug("qmapd-sim: ffs: response of %zu bytes queued (%u queued, %u to "
				  "announce)%s",
				  len, f->control.count, f->notify,
				  silent ? ", not announced (fault int-silent)" : "");
		} else if (!queue_push(&f->bulk_in, m)) {
			f->stats.bulk_in_dropped++; /* the host does not read: a modem drops too */
		}
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
	}
	return NULL;
}

static void *notify_thread(void *arg)
{
	struct sim_ffs *f = arg;
	const struct usb_ctrlrequest n = {
		.bRequestType = USB_DIR_IN | USB_TYPE_CLASS | USB_RECIP_INTERFACE,
		.bRequest = CDC_NOTIFY_RESPONSE_AVAILABLE,
		.wIndex = htole16(FFS_QMI_INTERFACE),
	};
	for (;;) {
		pthread_mutex_lock(&f->lock);
		while (f->notify == 0)
			pthread_cond_wait(&f->cond, &f->lock);
		f->notify--;
		pthread_mutex_unlock(&f->lock);
		/* Blocks until the host polls the interrupt endpoint (cdc-wdm open), and while the
		 * function is disabled until it is enabled again. */
		if (write(f->ep_int, &n, sizeof(n)) < 0) {
			/*
			 * ESHUTDOWN: the host disabled the function, or enabled it again (a
			 * SET_INTERFACE or SET_CONFIGURATION re-enables the endpoints and fails
			 * what was in flight). Still queued, the response must be announced again:
			 * otherwise every later notification fetches the response before its own,
			 * one late for ever. Purged by a disable, it is not.
			 */
			if (errno != ESHUTDOWN) {
				log_warning_errno(errno, "qmapd-sim: ffs: interrupt IN");
				usleep(10000);
			}
			log_debug_errno(errno, "qmapd-sim: ffs: RESPONSE_AVAILABLE not sent");
			pthread_mutex_lock(&f->lock);
			f->stats.notify_failed++;
			if (f->notify < f->control.count)
				f->notify++;
			pthread_mutex_unlock(&f->lock);
		} else {
			log_debug("qmapd-sim: ffs: RESPONSE_AVAILABLE sent");
		}
	}
	return NULL;
}

static void *bulk_in_thread(void *arg)
{
	struct sim_ffs *f = arg;
	for (;;) {
		pthread_mutex_lock(&f->lock);
		struct ffs_msg *m = NULL;
		while (!f->fault[FAULT_STALL] && !f->fault[FAULT_SHORT] &&
		       !(m = queue_pop(&f->bulk_in)))
			pthread_cond_wait(&f->cond, &f->lock);
		if (fault_take(f, FAULT_STALL)) {
			pthread_mutex_unlock(&f->lock);
			halt(f, f->ep_in, true, FAULT_STALL);
			continue;
		}
		if (fault_take(f, FAULT_SHORT)) {
			pthread_mutex_unlock(&f->lock);
			static const uint8_t two[2] = { 0xde, 0xde };
			if (write(f->ep_in, two, sizeof(two)) == (ssize_t)sizeof(two))
				fault_made(f, FAULT_SHORT);
			else
				log_warning_errno(errno, "qmapd-sim: ffs: fault short not sent");
			continue;
		}
		pthread_mutex_unlock(&f->lock);
		/* Blocks while the function is disabled. ESHUTDOWN: disabled while in flight. */
		ssize_t n;
		while ((n = write(f->ep_in, m->data, m->len)) < 0 && errno == EINTR)
			;
		/* A transfer of whole packets ends with a zero-length packet, as the modem's
		 * function driver sends it (qmi_wwan's URBs are longer than an aggregate). */
		bool zlp = n > 0 && whole_packets(f->ep_in, (size_t)n);
		if (zlp && write(f->ep_in, m->data, 0) < 0)
			n = -1;
		pthread_mutex_lock(&f->lock);
		if (n < 0) {
			f->stats.bulk_in_dropped++;
		} else {
			f->stats.bulk_in++;
			f->stats.bulk_in_zlp += zlp;
		}
		pthread_mutex_unlock(&f->lock);
		if (n < 0 && errno != ESHUTDOWN)
			log_warning_errno(errno, "qmapd-sim: ffs: bulk IN");
		free(m);
	}
	return NULL;
}

/* The OUT faults, made by the bulk OUT thread between reads (see sim_ffs_inject()). */
static void out_faults(struct sim_ffs *f)
{
	pthread_mutex_lock(&f->lock);
	bool stall = fault_take(f, FAULT_OUT_STALL);
	bool pause = !stall && fault_take(f, FAULT_OUT_TIMEOUT);
	pthread_mutex_unlock(&f->lock);
	if (stall)
		halt(f, f->ep_out, false, FAULT_OUT_STALL);
	if (pause) {
		fault_made(f, FAULT_OUT_TIMEOUT);
		usleep(FFS_OUT_PAUSE_MS * 1000);
		log_info("qmapd-sim: ffs: bulk OUT read again after %d ms", FFS_OUT_PAUSE_MS);
	}
}

static void on_wake(int sig)
{
	(void)sig;
}

static void *bulk_out_thread(void *arg)
{
	struct sim_ffs *f = arg;
	static uint8_t buf[TRANSPORT_MAX_TRANSFER];
	for (;;) {
		out_faults(f);
		/* Blocks while the function is disabled. ESHUTDOWN: disabled while waiting.
		 * EINTR: woken for a fault (FunctionFS took the read's request back). */
		ssize_t n = read(f->ep_out, buf, sizeof(buf));
		if (n < 0) {
			if (errno != ESHUTDOWN && errno != EINTR) {
				log_warning_errno(errno, "qmapd-sim: ffs: bulk OUT");
				usleep(10000);
			}
			continue;
		}
		/* The read ends at a short packet: a length of whole packets below the buffer's
		 * ended with a zero-length one (the host's ZLP after an aligned aggregate). */
		bool zlp = (size_t)n < sizeof(buf) && whole_packets(f->ep_out, (size_t)n);
		pthread_mutex_lock(&f->lock);
		f->stats.bulk_out++;
		f->stats.bulk_out_zlp += zlp;
		pthread_mutex_unlock(&f->lock);
		int r = sim_send(f, TRANSPORT_EP_BULK_OUT, zlp ? TRANSPORT_SIM_FLAG_ZLP : 0, buf,
				 (size_t)n);
		if (r < 0)
			log_warning_errno(r, "qmapd-sim: ffs: cannot pass bulk OUT to the sim");
	}
	return NULL;
}

/*
 * cmd-hold: the SETUP of a SEND_ENCAPSULATED_COMMAND is left pending, neither its data taken
 * nor answered, so that the host's control transfer stays in flight until the cable is
 * pulled. The ep0 thread cannot read events meanwhile (a read on ep0 now would take the
 * data), so it asks every 10 ms whether the function is still enabled: an ioctl on an
 * O_NONBLOCK endpoint file fails with EAGAIN once FunctionFS disabled the endpoints, which
 * the unbind does just before it queues the DISABLE event, and queueing an event cancels a
 * pending SETUP (f_fs.c, __ffs_event_add()). The read on ep0 then fails with EIDRM: the
 * request is gone, and the events that follow are read as always.
 */
static void cmd_hold(struct sim_ffs *f, uint8_t *buf, uint16_t len)
{
	unsigned ms = 0;

	fault_made(f, FAULT_CMD_HOLD);
	while (ms < FFS_CMD_HOLD_MS &&
	       (ioctl(f->ep_probe, FUNCTIONFS_ENDPOINT_REVMAP) >= 0 || errno != EAGAIN)) {
		usleep(10000);
		ms += 10;
	}
	/* Disabled: the DISABLE event follows the endpoints' disable at once; let it land. */
	if (ms < FFS_CMD_HOLD_MS)
		usleep(20000);
	ssize_t n = read(f->ep0, buf, len);
	if (n < 0 && errno == EIDRM) {
		pthread_mutex_lock(&f->lock);
		f->stats.cmd_hold_dropped++;
		pthread_mutex_unlock(&f->lock);
		log_info("qmapd-sim: ffs: held command dropped after %u ms: the host %s", ms,
			 ms < FFS_CMD_HOLD_MS ? "disabled the function"
					      : "sent another request meanwhile");
		return;
	}
	if (n < 0) {
		log_warning_errno(errno, "qmapd-sim: ffs: ep0 OUT data of the held command");
		return;
	}
	log_warning("qmapd-sim: ffs: held command taken after %u ms, the function still enabled",
		    ms);
	int r = sim_send(f, TRANSPORT_EP_CONTROL, 0, buf, (size_t)n);
	if (r < 0)
		log_warning_errno(r, "qmapd-sim: ffs: cannot pass a command on");
}

static void ep0_setup(struct sim_ffs *f, const struct usb_ctrlrequest *s)
{
	uint16_t len = le16toh(s->wLength);
	uint8_t buf[FFS_MAX_CONTROL];
	bool in = s->bRequestType & USB_DIR_IN;

	log_debug("qmapd-sim: ffs: request %02x/%02x wValue %u wIndex %u wLength %u",
		  s->bRequestType, s->bRequest, le16toh(s->wValue), le16toh(s->wIndex), len);

	if ((s->bRequestType & USB_TYPE_MASK) == USB_TYPE_CLASS) {
		if (!in && s->bRequest == CDC_SEND_ENCAPSULATED_COMMAND && len <= sizeof(buf)) {
			pthread_mutex_lock(&f->lock);
			bool stall = fault_take(f, FAULT_CMD_STALL);
			bool hold = !stall && fault_take(f, FAULT_CMD_HOLD);
			pthread_mutex_unlock(&f->lock);
			if (hold) {
				cmd_hold(f, buf, len);
				return;
			}
			if (stall) {
				/* Before its data stage: the host's transfer fails with -EPIPE. */
				(void)!write(f->ep0, buf, 0);
				fault_made(f, FAULT_CMD_STALL);
				return;
			}
			ssize_t n = read(f->ep0, buf, len);
			if (n < 0) {
				log_warning_errno(errno, "qmapd-sim: ffs: ep0 OUT data");
				return;
			}
			int r = sim_send(f, TRANSPORT_EP_CONTROL, 0, buf, (size_t)n);
			if (r < 0)
				log_warning_errno(r, "qmapd-sim: ffs: cannot pass a command on");
			return;
		}
		if (in && s->bRequest == CDC_GET_ENCAPSULATED_RESPONSE) {
			pthread_mutex_lock(&f->lock);
			struct ffs_msg *m = queue_pop(&f->control);
			f->stats.get_empty += !m;
			pthread_mutex_unlock(&f->lock);
			size_t n = m ? (m->len < len ? m->len : len) : 0;
			log_debug("qmapd-sim: ffs: GET_ENCAPSULATED_RESPONSE: %zu bytes, %u left",
				  n, f->control.count);
			if (write(f->ep0, m ? m->data : buf, n) < 0)
				log_warning_errno(errno, "qmapd-sim: ffs: ep0 IN data");
			free(m);
			return;
		}
		if (!in && s->bRequest == CDC_SET_CONTROL_LINE_STATE) {
			uint16_t v = le16toh(s->wValue);
			log_info("qmapd-sim: ffs: SET_CONTROL_LINE_STATE wValue %u (DTR %s)", v,
				 v & CDC_CTRL_DTR ? "on" : "off");
			pthread_mutex_lock(&f->lock);
			if (v & CDC_CTRL_DTR)
				f->stats.dtr_set++;
			else
				f->stats.dtr_clear++;
			f->stats.line_state = v;
			pthread_mutex_unlock(&f->lock);
			if (read(f->ep0, buf, 0) < 0)
				log_warning_errno(errno, "qmapd-sim: ffs: ep0 status");
			return;
		}
	}
	log_info("qmapd-sim: ffs: stalling request %02x/%02x (wValue %u wIndex %u wLength %u)",
		 s->bRequestType, s->bRequest, le16toh(s->wValue), le16toh(s->wIndex), len);
	/* FunctionFS stalls ep0 on an I/O in the direction opposite to the request's. */
	if (in)
		(void)!read(f->ep0, buf, 0);
	else
		(void)!write(f->ep0, buf, 0);
}

static void *ep0_thread(void *arg)
{
	struct sim_ffs *f = arg;
	struct usb_functionfs_event ev[4];
	for (;;) {
		ssize_t n = read(f->ep0, ev, sizeof(ev));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error_errno(errno, "qmapd-sim: ffs: ep0");
			exit(EXIT_FAILURE);
		}
		for (size_t i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
			switch (ev[i].type) {
			case FUNCTIONFS_SETUP:
				ep0_setup(f, &ev[i].u.setup);
				break;
			case FUNCTIONFS_ENABLE:
				pthread_mutex_lock(&f->lock);
				f->stats.enables++;
				pthread_mutex_unlock(&f->lock);
				log_info("qmapd-sim: ffs: function enabled by the host");
				break;
			case FUNCTIONFS_DISABLE:
				function_gone(f, &f->stats.disables, "disabled");
				break;
			case FUNCTIONFS_UNBIND:
				/* The gadget left the UDC (the cable pulled). FunctionFS drops a
				 * DISABLE still unread when it queues UNBIND: this is the disable. */
				function_gone(f, &f->stats.unbinds, "unbound");
				break;
			default:
				log_debug("qmapd-sim: ffs: event %u", ev[i].type);
				break;
			}
		}
	}
	return NULL;
}

static int open_ep(const char *dir, const char *name, int flags, int *ret)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*ret = open(path, flags | O_CLOEXEC);
	if (*ret < 0)
		return log_error_errno(errno, "qmapd-sim: ffs: cannot open %s", path);
	return 0;
}

int sim_ffs_start(const char *dir, const char *socket_path, struct sim_ffs **ret)
{
	struct sim_ffs *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pthread_t t;
	int r;

	if (!f)
		return log_error_errno(ENOMEM, "qmapd-sim: ffs: cannot allocate");
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	r = open_ep(dir, "ep0", O_RDWR, &f->ep0);
	if (r < 0)
		return r;
	if (write(f->ep0, &descriptors, sizeof(descriptors)) < 0)
		return log_error_errno(errno, "qmapd-sim: ffs: %s/ep0 refused the descriptors",
				       dir);
	if (write(f->ep0, &strings, sizeof(strings)) < 0)
		return log_error_errno(errno, "qmapd-sim: ffs: %s/ep0 refused the strings", dir);
	if ((r = open_ep(dir, "ep1", O_RDWR, &f->ep_int)) < 0 ||
	    (r = open_ep(dir, "ep2", O_RDWR, &f->ep_in)) < 0 ||
	    (r = open_ep(dir, "ep3", O_RDWR, &f->ep_out)) < 0 ||
	    (r = open_ep(dir, "ep1", O_RDWR | O_NONBLOCK, &f->ep_probe)) < 0)
		return r;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	f->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (f->sock < 0 || connect(f->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return log_error_errno(errno, "qmapd-sim: ffs: cannot connect to %s", socket_path);

	/* The signal that wakes the bulk OUT thread from its read: no SA_RESTART. */
	struct sigaction sa_wake = { .sa_handler = on_wake };
	sigemptyset(&sa_wake.sa_mask);
	if (sigaction(FFS_WAKE_SIGNAL, &sa_wake, NULL) < 0)
		return log_error_errno(errno, "qmapd-sim: ffs: sigaction");
	void *(*threads[])(void *) = { sock_thread, notify_thread, bulk_in_thread, bulk_out_thread,
				       ep0_thread };
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		r = pthread_create(&t, NULL, threads[i], f);
		if (r)
			return log_error_errno(r, "qmapd-sim: ffs: cannot start a thread");
		if (threads[i] == bulk_out_thread)
			f->out_thread = t;
		pthread_detach(t);
	}
	log_info("qmapd-sim: ffs: EC25 QMI function on %s", dir);
	*ret = f;
	return 0;
}

void sim_ffs_print_stats(struct sim_ffs *f, FILE *out)
{
	pthread_mutex_lock(&f->lock);
	struct sim_ffs_stats st = f->stats;
	unsigned queued = f->control.count;
	pthread_mutex_unlock(&f->lock);
#define P(key) fprintf(out, "ffs_" #key "=%" PRIu64 "\n", st.key)
	P(enables);
	P(disables);
	P(unbinds);
	P(responses_purged);
	P(responses_dropped);
	P(notify_failed);
	P(get_empty);
	P(bulk_in);
	P(bulk_in_zlp);
	P(bulk_in_dropped);
	P(bulk_out);
	P(bulk_out_zlp);
	P(dtr_set);
	P(dtr_clear);
	P(line_state);
	P(cmd_hold_dropped);
#undef P
	/* Responses waiting for a GET_ENCAPSULATED_RESPONSE now: one left behind stays. */
	fprintf(out, "ffs_responses_queued=%u\n", queued);
	for (size_t k = 0; k < FAULT_MAX; k++) {
		fprintf(out, "ffs_injected_");
		for (const char *c = fault_names[k]; *c; c++)
			fputc(*c == '-' ? '_' : *c, out);
		fprintf(out, "=%" PRIu64 "\n", st.injected[k]);
	}
}

int sim_ffs_inject(struct sim_ffs *f, const char *kind, unsigned n)
{
	for (size_t k = 0; k < FAULT_MAX; k++) {
		if (strcmp(kind, fault_names[k]) != 0)
			continue;
		pthread_mutex_lock(&f->lock);
		f->fault[k] += n;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		/* The bulk OUT thread waits in a read: out of it, it makes the fault now. (A
		 * wake just before it enters the read is lost: then after the next transfer.) */
		if (k == FAULT_OUT_STALL || k == FAULT_OUT_TIMEOUT)
			pthread_kill(f->out_thread, FFS_WAKE_SIGNAL);
		log_info("qmapd-sim: ffs: fault %s armed %u time%s", kind, n, n == 1 ? "" : "s");
		return 0;
	}
	return -EINVAL;
}
