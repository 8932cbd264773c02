/* SPDX-License-Identifier: MIT */
/*
 * Discovery (discovery.h). Every scan compares libusb's device list with what is known: a
 * device is one presence (bus, device address and port path: the kernel gives a new address
 * on every plug), inspected once when it appears; what left is reported before what arrived,
 * so a modem replugged between two scans leaves before it comes back. Hotplug callbacks only
 * schedule a scan on the next loop turn: nothing may be opened from inside libusb's event
 * handling. Where they will never come (a udev-built libusb without udevd), a scan every
 * second renews the libusb context first when sysfs changed (usb-presence.h).
 */
#include <errno.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "discovery-internal.h"
#include "discovery.h"
#include "log.h"
#include "usb-device.h"
#include "usb-loop.h"
#include "usb-presence.h"

#define DISCOVERY_RESCAN_SECONDS 1.0 /* without hotplug */
#define DISCOVERY_RETRY_SECONDS	 5.0 /* a modem that could not be opened */

enum discovery_state {
	DISCOVERY_IGNORED,    /* not a modem */
	DISCOVERY_EXCLUDED,   /* a modem an exclude names */
	DISCOVERY_UNREADABLE, /* a modem that could not be opened: looked at again */
	DISCOVERY_DECLINED,   /* on_arrive returned false */
	DISCOVERY_TAKEN,      /* on_arrive returned true */
};

struct discovery_entry {
	struct discovery_entry *next;
	uint8_t bus, addr;
	char path[32];
	enum discovery_state state;
	bool seen; /* in this scan's device list */
	int last_error;
	struct discovery_device d;
};

struct discovery {
	struct ev_loop *loop;
	struct usb_loop *ul;
	libusb_context *ctx;
	libusb_hotplug_callback_handle hotplug;
	bool has_hotplug;
	bool no_hotplug;       /* discovery_disable_hotplug() */
	double rescan_seconds; /* without hotplug; tests shorten it */
	bool started;
	char **exclude;
	unsigned n_exclude;
	struct discovery_callbacks cb;
	void *userdata;
	struct discovery_entry *devices;
	ev_timer scan;
};

static void discovery_schedule(struct discovery *d, double after)
{
	ev_timer_stop(d->loop, &d->scan);
	ev_timer_set(&d->scan, after, 0.);
	ev_timer_start(d->loop, &d->scan);
}

static const char *discovery_excluded_by(struct discovery *d, const struct discovery_entry *e,
					 const char *serial)
{
	for (unsigned i = 0; i < d->n_exclude; i++)
		if (config_spec_matches_usb(d->exclude[i], e->d.vid, e->d.pid, e->path, serial))
			return d->exclude[i];
	return NULL;
}

/* A new presence, or one that could not be opened before: is it a modem, ours to report? */
static void discovery_inspect(struct discovery *d, struct discovery_entry *e, libusb_device *dev)
{
	struct libusb_device_descriptor dd;
	struct usb_qmi_iface q;
	struct usb_mbim_iface mb;
	libusb_device_handle *h;
	const char *by;
	char name[80];

	e->state = DISCOVERY_IGNORED;
	if (libusb_get_device_descriptor(dev, &dd) < 0)
		return;
	snprintf(name, sizeof(name), "discovery: usb %s (%04x:%04x)", e->path, dd.idVendor,
		 dd.idProduct);
	/* QMI where the modem has it, else MBIM: what the usb transport will claim. */
	if (usb_qmi_find(dev, &dd, -1, &q) == 0) {
		e->d.iface = q.ifnum;
		e->d.how = q.how;
		e->d.mbim = false;
	} else if (usb_mbim_find(dev, -1, &mb) == 0) {
		e->d.iface = mb.comm_ifnum;
		e->d.how = mb.how;
		e->d.mbim = true;
	} else {
		log_debug("%s: neither a QMI modem nor an MBIM function", name);
		return;
	}
	e->d.vid = dd.idVendor;
	e->d.pid = dd.idProduct;
	snprintf(e->d.path, sizeof(e->d.path), "%s", e->path);
	snprintf(e->d.spec, sizeof(e->d.spec), "usb-path:%s:%d", e->path, e->d.iface);
	/* By id or port: decided without even opening the device. */
	by = discovery_excluded_by(d, e, NULL);
	if (by) {
		e->state = DISCOVERY_EXCLUDED;
		log_info("%s if%d: excluded by %s; left alone", name, e->d.iface, by);
		return;
	}
	/* Opening claims nothing: the kernel driver stays bound. */
	int r = libusb_open(dev, &h);
	if (r < 0) {
		e->state = DISCOVERY_UNREADABLE;
		if (e->last_error != r)
			log_warning_errno(
				usb_errno(r),
				"%s if%u: cannot open it to read its serial number; trying "
				"again every %.0f s",
				name, e->d.iface, DISCOVERY_RETRY_SECONDS);
		e->last_error = r;
		return;
	}
	usb_device_serial(h, &dd, e->d.serial, sizeof(e->d.serial));
	libusb_close(h);
	by = discovery_excluded_by(d, e, e->d.serial);
	if (by) {
		e->state = DISCOVERY_EXCLUDED;
		log_info("%s if%d: excluded by %s; left alone", name, e->d.iface, by);
		return;
	}
	log_info("%s if%d: %s (%s), serial '%s'", name, e->d.iface,
		 e->d.mbim ? "MBIM modem" : "QMI modem", e->d.how, e->d.serial);
	e->state = d->cb.on_arrive(d->userdata, &e->d) ? DISCOVERY_TAKEN : DISCOVERY_DECLINED;
	if (e->state == DISCOVERY_DECLINED)
		log_debug("%s: not taken; reported again when it next arrives", name);
}

static struct discovery_entry *discovery_find(struct discovery *d, libusb_device *dev,
					      const char *path)
{
	uint8_t bus = libusb_get_bus_number(dev), addr = libusb_get_device_address(dev);

	for (struct discovery_entry *e = d->devices; e; e = e->next)
		if (e->bus == bus && e->addr == addr && strcmp(e->path, path) == 0)
			return e;
	return NULL;
}

/* By bus and port path: modems present at start arrive in an order that does not change. */
static int discovery_compare(const void *a, const void *b)
{
	libusb_device *x = *(libusb_device *const *)a, *y = *(libusb_device *const *)b;
	uint8_t px[8], py[8];
	int nx = libusb_get_port_numbers(x, px, sizeof(px));
	int ny = libusb_get_port_numbers(y, py, sizeof(py));

	if (libusb_get_bus_number(x) != libusb_get_bus_number(y))
		return libusb_get_bus_number(x) - libusb_get_bus_number(y);
	for (int i = 0; i < nx && i < ny; i++)
		if (px[i] != py[i])
			return px[i] - py[i];
	return nx - ny;
}

static void discovery_scan(struct discovery *d)
{
	libusb_device **list;
	ssize_t n = libusb_get_device_list(d->ctx, &list);
	bool retry = false;

	if (n < 0) {
		log_warning_errno(usb_errno((int)n), "discovery: listing the USB devices failed");
		discovery_schedule(d, DISCOVERY_RETRY_SECONDS);
		return;
	}
	qsort(list, (size_t)n, sizeof(*list), discovery_compare);
	for (struct discovery_entry *e = d->devices; e; e = e->next)
		e->seen = false;
	for (ssize_t i = 0; i < n; i++) {
		char path[32];
		struct discovery_entry *e =
			discovery_find(d, list[i], usb_device_path(list[i], path, sizeof(path)));
		if (e)
			e->seen = true;
	}
	/* Gone first: a modem replugged between two scans leaves before it arrives again. */
	for (struct discovery_entry **p = &d->devices; *p;) {
		struct discovery_entry *e = *p;

		if (e->seen) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		if (e->state == DISCOVERY_TAKEN || e->state == DISCOVERY_EXCLUDED)
			log_info("discovery: usb %s (%04x:%04x): gone", e->path, e->d.vid,
				 e->d.pid);
		if (e->state == DISCOVERY_TAKEN && d->cb.on_leave)
			d->cb.on_leave(d->userdata, &e->d);
		free(e);
	}
	for (ssize_t i = 0; i < n; i++) {
		char path[32];
		struct discovery_entry *e;

		usb_device_path(list[i], path, sizeof(path));
		e = discovery_find(d, list[i], path);
		if (!e) {
			e = calloc(1, sizeof(*e));
			if (!e) {
				retry = true;
				break;
			}
			e->bus = libusb_get_bus_number(list[i]);
			e->addr = libusb_get_device_address(list[i]);
			snprintf(e->path, sizeof(e->path), "%s", path);
			e->seen = true;
			e->next = d->devices;
			d->devices = e;
			discovery_inspect(d, e, list[i]);
		} else if (e->state == DISCOVERY_UNREADABLE) {
			discovery_inspect(d, e, list[i]);
		}
		if (e->state == DISCOVERY_UNREADABLE)
			retry = true;
	}
	libusb_free_device_list(list, 1);
	if (!d->has_hotplug || usb_hotplug_unheard())
		discovery_schedule(d, d->rescan_seconds);
	else if (retry)
		discovery_schedule(d, DISCOVERY_RETRY_SECONDS);
}

static int LIBUSB_CALL discovery_on_hotplug(libusb_context *ctx, libusb_device *dev,
					    libusb_hotplug_event ev, void *userdata)
{
	struct discovery *d = userdata;
	(void)ctx;
	(void)dev;
	(void)ev;

	discovery_schedule(d, 0.);
	return 0;
}

static void discovery_register_hotplug(struct discovery *d)
{
	/* Before a scan, so nothing plugged in meanwhile is missed. */
	int r = libusb_hotplug_register_callback(
		d->ctx, LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT, 0,
		LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
		discovery_on_hotplug, d, &d->hotplug);

	if (r < 0) {
		log_warning_errno(usb_errno(r), "discovery: no hotplug callbacks, re-scanning "
						"every second instead");
		d->has_hotplug = false;
	}
}

/* Without udevd, libusb's list holds only what it had: a fresh one when sysfs changed. */
static void discovery_notice_new_devices(struct discovery *d)
{
	if (!d->has_hotplug || !usb_loop_missed_devices(d->ul))
		return;
	libusb_hotplug_deregister_callback(d->ctx, d->hotplug);
	if (usb_loop_renew(d->ul) == 0)
		d->ctx = usb_loop_context(d->ul);
	discovery_register_hotplug(d);
}

static void discovery_on_scan(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct discovery *d = w->data;
	(void)loop;
	(void)revents;

	if (!d->started)
		return;
	discovery_notice_new_devices(d);
	discovery_scan(d);
}

int discovery_new(struct ev_loop *loop, const char *const *excludes, unsigned n_excludes,
		  const struct discovery_callbacks *cb, void *userdata, struct discovery **ret)
{
	struct discovery *d;
	char err[128];
	int r;

	for (unsigned i = 0; i < n_excludes; i++)
		if (config_usb_match_check(excludes[i], err, sizeof(err)) < 0)
			return log_error_errno(-EINVAL, "discovery: invalid exclude '%s': %s",
					       excludes[i], err);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->loop = loop;
	d->rescan_seconds = DISCOVERY_RESCAN_SECONDS;
	d->cb = *cb;
	d->userdata = userdata;
	ev_timer_init(&d->scan, discovery_on_scan, 0., 0.);
	d->scan.data = d;
	d->exclude = calloc(n_excludes ? n_excludes : 1, sizeof(*d->exclude));
	if (!d->exclude) {
		discovery_free(d);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n_excludes; i++) {
		if (!(d->exclude[i] = strdup(excludes[i]))) {
			discovery_free(d);
			return -ENOMEM;
		}
		d->n_exclude++;
	}
	r = usb_loop_new(loop, "discovery", NULL, NULL, &d->ul);
	if (r < 0) {
		discovery_free(d);
		return r;
	}
	d->ctx = usb_loop_context(d->ul);
	*ret = d;
	return 0;
}

int discovery_start(struct discovery *d)
{
	if (d->started)
		return 0;
	d->has_hotplug = !d->no_hotplug && libusb_has_capability(LIBUSB_CAP_HAS_HOTPLUG);
	if (d->has_hotplug) {
		discovery_register_hotplug(d);
	} else if (!d->no_hotplug) {
		log_info("discovery: libusb has no hotplug support here, re-scanning every second");
	}
	d->started = true;
	discovery_scan(d);
	return 0;
}

void discovery_disable_hotplug(struct discovery *d, double rescan_seconds)
{
	d->no_hotplug = true;
	d->rescan_seconds = rescan_seconds;
}

struct discovery *discovery_free(struct discovery *d)
{
	if (!d)
		return NULL;
	ev_timer_stop(d->loop, &d->scan);
	if (d->ul) {
		if (d->has_hotplug)
			libusb_hotplug_deregister_callback(d->ctx, d->hotplug);
		usb_loop_free(d->ul);
	}
	while (d->devices) {
		struct discovery_entry *e = d->devices;
		d->devices = e->next;
		free(e);
	}
	for (unsigned i = 0; i < d->n_exclude; i++)
		free(d->exclude[i]);
	free(d->exclude);
	free(d);
	return NULL;
}
