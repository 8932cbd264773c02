/* SPDX-License-Identifier: MIT */
/*
 * Which USB modem the `usb` transport drives, from the config's device key:
 *   usb:VID:PID[:IFACE]             e.g. usb:2c7c:0125 or usb:2c7c:0125:4
 *   usb-path:BUS-PORT[.PORT...][:IFACE]  e.g. usb-path:2-1.4 (sysfs naming, as in
 *                                   /sys/bus/usb/devices/2-1.4)
 * VID and PID are 1..4 hex digits; BUS, PORT and IFACE plain decimal (no leading zeros),
 * BUS and PORT 1..255, IFACE 0..255. Pure: never logs.
 *
 * Plus the table of well-known modems and the QMI interface qmi_wwan binds on them
 * (usb-ids.c), for devices whose QMI function the generic ff/ff/ff rule does not find.
 */
#ifndef QMAPD_USB_SPEC_H
#define QMAPD_USB_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* USB allows 5 tiers of hubs below the root (7 with USB 3 root ports): 7 port numbers. */
#define USB_SPEC_MAX_PORTS 7
/* "usb-path:255-255.255.255.255.255.255.255:255" and the NUL */
#define USB_SPEC_PATH_MAX  40
#define USB_SPEC_ERROR_MAX 128

enum usb_spec_kind {
	USB_SPEC_ID,   /* usb:VID:PID */
	USB_SPEC_PATH, /* usb-path:BUS-PORT.PORT */
};

struct usb_spec {
	enum usb_spec_kind kind;
	uint16_t vid;
	uint16_t pid;
	uint8_t bus;
	uint8_t ports[USB_SPEC_MAX_PORTS];
	uint8_t n_ports;
	int iface; /* -1: choose like qmi_wwan */
};

/* True when s names the usb transport (starts with "usb:" or "usb-path:"). */
bool usb_spec_is_usb(const char *s);

/*
 * Parse a whole device value. Returns 0, or -EINVAL with a reason (no input quoted; the
 * caller quotes it) in err; *ret is untouched on failure.
 */
int usb_spec_parse(const char *s, struct usb_spec *ret, char *err, size_t errlen);

/* "BUS-PORT.PORT..." as the kernel names the device; returns buf ("" if it does not fit). */
const char *usb_spec_format_path(uint8_t bus, const uint8_t *ports, unsigned n_ports, char *buf,
				 size_t len);

struct usb_known_modem {
	uint16_t vid;
	uint16_t pid;
	uint8_t iface;
	const char *name;
};

/*
 * The idx-th entry (0, 1, ...) for vid:pid, or NULL when there are no more: some modems
 * have two candidate interfaces (e.g. 413c:81b6 on 8 and 10).
 */
const struct usb_known_modem *usb_ids_lookup(uint16_t vid, uint16_t pid, unsigned idx);

#endif
