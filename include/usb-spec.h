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

/*
 * An MBIM function's class-specific descriptors (the `extra` bytes after its communications
 * interface 02/0e/00): CDC header, union, MBIM functional and MBIM extended functional
 * descriptors (CDC 1.2 §5.2.3, MBIM 1.0 §6.4, §6.5). Pure: the first of each kind counts,
 * others and unknown descriptors are skipped, one too short for its kind is ignored (as
 * Linux's cdc_parse_cdc_header() does).
 */
#define USB_DT_CS_INTERFACE	   0x24
#define USB_CDC_HEADER_TYPE	   0x00
#define USB_CDC_UNION_TYPE	   0x06
#define USB_CDC_MBIM_TYPE	   0x1b
#define USB_CDC_MBIM_EXTENDED_TYPE 0x1c
/* MBIM 1.0 §6.4: wMaxControlMessage is at least 64; cdc-wdm's buffer for it at most 4096. */
#define USB_MBIM_CONTROL_MIN 64
#define USB_MBIM_CONTROL_MAX 4096

struct usb_mbim_desc {
	bool have_header, have_union, have_mbim, have_extended;
	uint16_t bcd_cdc;
	uint8_t control_interface; /* union: bControlInterface */
	uint8_t data_interface;	   /* union: the first bSubordinateInterface */
	/* MBIM functional descriptor */
	uint16_t bcd_mbim;
	uint16_t max_control_message;
	uint8_t number_filters;
	uint8_t max_filter_size;
	uint16_t max_segment_size;
	uint8_t network_capabilities;
	/* MBIM extended functional descriptor */
	uint16_t bcd_mbim_extended;
	uint8_t max_outstanding_commands;
	uint16_t mtu;
};

/*
 * Parse len bytes of class-specific descriptors. Returns 0 (what was found in *ret), or
 * -EINVAL when the chain itself is broken (a bLength below 2 or past the end): *ret then
 * holds what came before. -ENOENT: the chain is fine but has no MBIM functional descriptor.
 */
int usb_mbim_desc_parse(const uint8_t *buf, size_t len, struct usb_mbim_desc *ret);

/* The control message size to use: wMaxControlMessage within [64, 4096] (0: 4096). */
uint16_t usb_mbim_control_size(const struct usb_mbim_desc *d);

/*
 * The largest IP packet the function takes, which bounds the mux devices' MTU: the smaller
 * of wMaxSegmentSize and the extended descriptor's wMTU (0 there: not given), as cdc_mbim
 * bounds its netdev. 0 when neither is known.
 */
uint16_t usb_mbim_mtu(const struct usb_mbim_desc *d);

#endif
