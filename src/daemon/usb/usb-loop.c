/* SPDX-License-Identifier: MIT */
/* libusb inside libev (usb-loop.h). */
#include <errno.h>
#include <ev.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "usb-loop.h"
#include "usb-presence.h"

#define USB_LOOP_MAX_POLLFDS 16 /* libusb's own fds plus one per open device */

struct usb_loop_fd {
	ev_io io;
	bool used;
};

struct usb_loop {
	struct ev_loop *loop;
	libusb_context *ctx;
	char name[64];
	void (*after_events)(void *userdata);
	void *userdata;
	struct usb_loop_fd fd[USB_LOOP_MAX_POLLFDS];
	ev_timer timeout;    /* libusb's next timeout, when it has no timerfd */
	uint64_t sysfs_seen; /* usb_sysfs_fingerprint() before the context's enumeration */
	bool told_unheard;   /* logged once: udevd does not run, sysfs is watched */
};

static void usb_loop_handle_events(struct usb_loop *ul)
{
	struct timeval zero = { 0, 0 };

	libusb_handle_events_timeout_completed(ul->ctx, &zero, NULL);
	if (ul->after_events)
		ul->after_events(ul->userdata);
	usb_loop_arm_timeout(ul);
}

static void usb_loop_on_fd(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	usb_loop_handle_events(w->data);
}

static void usb_loop_on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	usb_loop_handle_events(w->data);
}

void usb_loop_arm_timeout(struct usb_loop *ul)
{
	struct timeval tv;

	/* With a timerfd (Linux) the timeouts arrive as a readable pollfd. */
	if (libusb_pollfds_handle_timeouts(ul->ctx))
		return;
	ev_timer_stop(ul->loop, &ul->timeout);
	if (libusb_get_next_timeout(ul->ctx, &tv) == 1) {
		ev_timer_set(&ul->timeout, tv.tv_sec + tv.tv_usec / 1e6, 0.);
		ev_timer_start(ul->loop, &ul->timeout);
	}
}

static void LIBUSB_CALL usb_loop_fd_added(int fd, short events, void *userdata)
{
	struct usb_loop *ul = userdata;

	for (size_t i = 0; i < ARRAY_SIZE(ul->fd); i++) {
		struct usb_loop_fd *p = &ul->fd[i];

		if (p->used)
			continue;
		p->used = true;
		ev_io_init(&p->io, usb_loop_on_fd, fd,
			   ((events & POLLIN) ? EV_READ : 0) | ((events & POLLOUT) ? EV_WRITE : 0));
		p->io.data = ul;
		ev_io_start(ul->loop, &p->io);
		return;
	}
	log_error_errno(-EMFILE, "%s: more than %zu libusb fds", ul->name, ARRAY_SIZE(ul->fd));
}

static void LIBUSB_CALL usb_loop_fd_removed(int fd, void *userdata)
{
	struct usb_loop *ul = userdata;

	for (size_t i = 0; i < ARRAY_SIZE(ul->fd); i++) {
		struct usb_loop_fd *p = &ul->fd[i];

		if (p->used && p->io.fd == fd) {
			ev_io_stop(ul->loop, &p->io);
			p->used = false;
		}
	}
}

/* Watch ctx's pollfds, and every one it adds later. */
static void usb_loop_attach(struct usb_loop *ul, libusb_context *ctx)
{
	const struct libusb_pollfd **pfds = libusb_get_pollfds(ctx);

	ul->ctx = ctx;
	for (size_t i = 0; pfds && pfds[i]; i++)
		usb_loop_fd_added(pfds[i]->fd, pfds[i]->events, ul);
	libusb_free_pollfds(pfds);
	libusb_set_pollfd_notifiers(ctx, usb_loop_fd_added, usb_loop_fd_removed, ul);
}

/* Stop every watcher and exit the context. */
static void usb_loop_detach(struct usb_loop *ul)
{
	libusb_set_pollfd_notifiers(ul->ctx, NULL, NULL, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(ul->fd); i++) {
		if (ul->fd[i].used)
			ev_io_stop(ul->loop, &ul->fd[i].io);
		ul->fd[i].used = false;
	}
	ev_timer_stop(ul->loop, &ul->timeout);
	libusb_exit(ul->ctx);
	ul->ctx = NULL;
}

int usb_loop_new(struct ev_loop *loop, const char *name, void (*after_events)(void *userdata),
		 void *userdata, struct usb_loop **ret)
{
	struct usb_loop *ul = calloc(1, sizeof(*ul));
	libusb_context *ctx;
	int r;

	if (!ul)
		return -ENOMEM;
	ul->loop = loop;
	ul->after_events = after_events;
	ul->userdata = userdata;
	snprintf(ul->name, sizeof(ul->name), "%s", name);
	ev_timer_init(&ul->timeout, usb_loop_on_timeout, 0., 0.);
	ul->timeout.data = ul;
	/* Before the enumeration, so a device added meanwhile changes it. */
	ul->sysfs_seen = usb_sysfs_fingerprint(USB_SYSFS_DEVICES);
	r = libusb_init(&ctx);
	if (r < 0) {
		free(ul);
		return log_error_errno(usb_errno(r), "%s: libusb_init failed", name);
	}
	usb_loop_attach(ul, ctx);
	*ret = ul;
	return 0;
}

bool usb_loop_missed_devices(struct usb_loop *ul)
{
	const char *why = usb_hotplug_unheard();

	if (!why || usb_sysfs_fingerprint(USB_SYSFS_DEVICES) == ul->sysfs_seen)
		return false;
	if (!ul->told_unheard)
		log_info("%s: %s, so libusb hears of no new device; looking at " USB_SYSFS_DEVICES
			 " every second",
			 ul->name, why);
	ul->told_unheard = true;
	return true;
}

int usb_loop_renew(struct usb_loop *ul)
{
	libusb_context *ctx;
	uint64_t seen = usb_sysfs_fingerprint(USB_SYSFS_DEVICES);
	/* The new one first: a failure keeps the old, and libusb's udev monitor (shared by
	 * every context) is not stopped and started again in between. */
	int r = libusb_init(&ctx);

	if (r < 0)
		return log_warning_errno(usb_errno(r), "%s: a new libusb context failed", ul->name);
	usb_loop_detach(ul);
	usb_loop_attach(ul, ctx);
	ul->sysfs_seen = seen;
	return 0;
}

struct usb_loop *usb_loop_free(struct usb_loop *ul)
{
	if (!ul)
		return NULL;
	usb_loop_detach(ul);
	free(ul);
	return NULL;
}

libusb_context *usb_loop_context(struct usb_loop *ul)
{
	return ul->ctx;
}

int usb_errno(int r)
{
	switch (r) {
	case LIBUSB_ERROR_IO:
		return -EIO;
	case LIBUSB_ERROR_INVALID_PARAM:
		return -EINVAL;
	case LIBUSB_ERROR_ACCESS:
		return -EACCES;
	case LIBUSB_ERROR_NO_DEVICE:
		return -ENODEV;
	case LIBUSB_ERROR_NOT_FOUND:
		return -ENOENT;
	case LIBUSB_ERROR_BUSY:
		return -EBUSY;
	case LIBUSB_ERROR_TIMEOUT:
		return -ETIMEDOUT;
	case LIBUSB_ERROR_OVERFLOW:
		return -EOVERFLOW;
	case LIBUSB_ERROR_PIPE:
		return -EPIPE;
	case LIBUSB_ERROR_INTERRUPTED:
		return -EINTR;
	case LIBUSB_ERROR_NO_MEM:
		return -ENOMEM;
	case LIBUSB_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}
