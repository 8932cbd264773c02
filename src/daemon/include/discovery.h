/* SPDX-License-Identifier: MIT */
/*
 * Discovery: which USB modems are on the host, as they come and go. A device is a modem when
 * the usb transport could drive it (usb-device.h: a well-known modem's QMI interface, else a
 * vendor-specific ff/ff/ff interface with interrupt IN + bulk IN + bulk OUT, else an MBIM
 * function 02/0e + 0a/00/02; QMI first, as the transport chooses). Discovery only
 * looks: it reads descriptors and opens a recognised modem to read its serial number, and
 * never claims an interface or detaches a kernel driver; claiming is the transport's job.
 *
 * Its own libusb context in the libev loop (usb-loop.h); libusb hotplug callbacks where
 * libusb has them, otherwise a re-scan every second.
 */
#ifndef QMAPD_DISCOVERY_H
#define QMAPD_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>

struct ev_loop;
struct discovery;

struct discovery_device {
	uint16_t vid, pid;
	char path[32];	  /* "1-1.4" (kernel naming) */
	int iface;	  /* QMI: the interface chosen; MBIM: the communications interface */
	bool mbim;	  /* an MBIM function (the device has no QMI interface) */
	char serial[128]; /* "" when the device has none */
	char spec[64];	  /* "usb-path:1-1.4:4": what to hand to the usb transport */
	const char *
		how; /* why it matched: table entry name, "vendor class ff/ff/ff ...", "MBIM ..." */
};

struct discovery_callbacks {
	/*
	 * A recognised, not excluded modem is present (at start for each one, then on hotplug).
	 * Called once per presence: a modem unplugged and plugged in again is a new presence.
	 * Return true if the daemon took it, false to be told again on its next arrival only.
	 */
	bool (*on_arrive)(void *userdata, const struct discovery_device *d);
	/* A modem on_arrive returned true for is gone (d as it arrived). Optional. */
	void (*on_leave)(void *userdata, const struct discovery_device *d);
};

/*
 * excludes: specs as in the config (usb:VID:PID[:IF], usb-path:BUS-PORT[.PORT...][:IF],
 * usb-serial:SERIAL; an :IF suffix is ignored: a device is excluded whole). An excluded device
 * is never reported and never opened unless only its serial can tell. Returns 0, -EINVAL for an
 * invalid exclude (logged), or -errno. The callbacks must not free the discovery.
 */
int discovery_new(struct ev_loop *loop, const char *const *excludes, unsigned n_excludes,
		  const struct discovery_callbacks *cb, void *userdata, struct discovery **ret);
/* Look at what is plugged in now (on_arrive runs before this returns), then follow hotplug. */
int discovery_start(struct discovery *d);
/* No on_leave for the modems still present. NULL-safe; returns NULL. */
struct discovery *discovery_free(struct discovery *d);

#endif
