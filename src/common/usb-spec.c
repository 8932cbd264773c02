/* SPDX-License-Identifier: MIT */
/* Parser for the usb transport's device spec (usb-spec.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "usb-spec.h"

#define USB_SCHEME_ID	"usb:"
#define USB_SCHEME_PATH "usb-path:"

bool usb_spec_is_usb(const char *s)
{
	return strncmp(s, USB_SCHEME_ID, strlen(USB_SCHEME_ID)) == 0 ||
	       strncmp(s, USB_SCHEME_PATH, strlen(USB_SCHEME_PATH)) == 0;
}

static int fail(char *err, size_t errlen, const char *why)
{
	if (errlen)
		snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

/* 1..4 hex digits up to the next ':' or the end. Advances *p. */
static bool parse_hex16(const char **p, uint16_t *ret)
{
	unsigned v = 0, n = 0;
	const char *s = *p;

	for (; *s && *s != ':'; s++, n++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (n == 4)
			return false;
		v = v * 16 + (unsigned)d;
	}
	if (n == 0)
		return false;
	*ret = (uint16_t)v;
	*p = s;
	return true;
}

/*
 * Plain decimal min..255, no leading zeros (no octal surprises), ended by one of the
 * characters in `stop` or the end. Advances *p.
 */
static bool parse_dec8(const char **p, unsigned min, const char *stop, uint8_t *ret)
{
	unsigned v = 0, n = 0;
	const char *s = *p;

	for (; *s && !strchr(stop, *s); s++, n++) {
		if (*s < '0' || *s > '9' || n == 3)
			return false;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (n == 0 || (n > 1 && (*p)[0] == '0') || v < min || v > 255)
		return false;
	*ret = (uint8_t)v;
	*p = s;
	return true;
}

/* An optional ":IFACE" at the end. */
static int parse_iface(const char *s, int *ret, char *err, size_t errlen)
{
	uint8_t v;

	if (*s == '\0') {
		*ret = -1;
		return 0;
	}
	if (*s != ':')
		return fail(err, errlen, "unexpected characters after the device");
	s++;
	if (!parse_dec8(&s, 0, "", &v))
		return fail(err, errlen, "expected an interface number 0..255 after the last ':'");
	*ret = v;
	return 0;
}

int usb_spec_parse(const char *s, struct usb_spec *ret, char *err, size_t errlen)
{
	struct usb_spec spec = { .iface = -1 };
	int r;

	if (strncmp(s, USB_SCHEME_ID, strlen(USB_SCHEME_ID)) == 0) {
		const char *p = s + strlen(USB_SCHEME_ID);

		spec.kind = USB_SPEC_ID;
		if (!parse_hex16(&p, &spec.vid) || *p != ':')
			return fail(err, errlen,
				    "expected usb:VID:PID[:IFACE], VID in 1..4 hex digits");
		p++;
		if (!parse_hex16(&p, &spec.pid))
			return fail(err, errlen,
				    "expected usb:VID:PID[:IFACE], PID in 1..4 hex digits");
		r = parse_iface(p, &spec.iface, err, errlen);
	} else if (strncmp(s, USB_SCHEME_PATH, strlen(USB_SCHEME_PATH)) == 0) {
		const char *p = s + strlen(USB_SCHEME_PATH);

		spec.kind = USB_SPEC_PATH;
		if (!parse_dec8(&p, 1, "-", &spec.bus) || *p != '-')
			return fail(err, errlen,
				    "expected usb-path:BUS-PORT[.PORT...][:IFACE], BUS 1..255");
		do {
			p++;
			if (spec.n_ports == USB_SPEC_MAX_PORTS)
				return fail(err, errlen, "more than 7 port numbers");
			if (!parse_dec8(&p, 1, ".:", &spec.ports[spec.n_ports]))
				return fail(err, errlen,
					    "expected port numbers 1..255 separated by '.'");
			spec.n_ports++;
		} while (*p == '.');
		r = parse_iface(p, &spec.iface, err, errlen);
	} else {
		return fail(err, errlen, "expected usb: or usb-path:");
	}
	if (r < 0)
		return r;
	*ret = spec;
	return 0;
}

const char *usb_spec_format_path(uint8_t bus, const uint8_t *ports, unsigned n_ports, char *buf,
				 size_t len)
{
	size_t off;
	int n;

	if (len == 0)
		return buf;
	n = snprintf(buf, len, "%u", bus);
	for (unsigned i = 0; n >= 0 && (size_t)n < len && i < n_ports; i++) {
		off = (size_t)n;
		int m = snprintf(buf + off, len - off, "%c%u", i == 0 ? '-' : '.', ports[i]);
		n = m < 0 ? m : n + m;
	}
	if (n < 0 || (size_t)n >= len)
		buf[0] = '\0';
	return buf;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int usb_mbim_desc_parse(const uint8_t *buf, size_t len, struct usb_mbim_desc *ret)
{
	struct usb_mbim_desc d = { 0 };
	int r = 0;

	while (len > 0) {
		uint8_t dlen = buf[0];

		if (dlen < 2 || dlen > len) {
			r = -EINVAL;
			break;
		}
		if (buf[1] == USB_DT_CS_INTERFACE && dlen >= 3) {
			switch (buf[2]) {
			case USB_CDC_HEADER_TYPE:
				if (dlen >= 5 && !d.have_header) {
					d.have_header = true;
					d.bcd_cdc = le16(buf + 3);
				}
				break;
			case USB_CDC_UNION_TYPE:
				if (dlen >= 5 && !d.have_union) {
					d.have_union = true;
					d.control_interface = buf[3];
					d.data_interface = buf[4];
				}
				break;
			case USB_CDC_MBIM_TYPE:
				if (dlen >= 12 && !d.have_mbim) {
					d.have_mbim = true;
					d.bcd_mbim = le16(buf + 3);
					d.max_control_message = le16(buf + 5);
					d.number_filters = buf[7];
					d.max_filter_size = buf[8];
					d.max_segment_size = le16(buf + 9);
					d.network_capabilities = buf[11];
				}
				break;
			case USB_CDC_MBIM_EXTENDED_TYPE:
				if (dlen >= 8 && !d.have_extended) {
					d.have_extended = true;
					d.bcd_mbim_extended = le16(buf + 3);
					d.max_outstanding_commands = buf[5];
					d.mtu = le16(buf + 6);
				}
				break;
			default:
				break;
			}
		}
		buf += dlen;
		len -= dlen;
	}
	*ret = d;
	if (r == 0 && !d.have_mbim)
		r = -ENOENT;
	return r;
}

uint16_t usb_mbim_control_size(const struct usb_mbim_desc *d)
{
	uint16_t v = d->max_control_message;

	if (v == 0 || v > USB_MBIM_CONTROL_MAX)
		return USB_MBIM_CONTROL_MAX;
	return v < USB_MBIM_CONTROL_MIN ? USB_MBIM_CONTROL_MIN : v;
}

uint16_t usb_mbim_mtu(const struct usb_mbim_desc *d)
{
	uint16_t mtu = d->have_mbim ? d->max_segment_size : 0;

	if (d->have_extended && d->mtu && (mtu == 0 || d->mtu < mtu))
		mtu = d->mtu;
	return mtu;
}
