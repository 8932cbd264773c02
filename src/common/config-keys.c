/* SPDX-License-Identifier: MIT */
/*
 * The keys of qmapd.conf: one row per key in the table below, and the value parsers the rows
 * name. A key whose value is a bool, a number in a range, one of a few words, a path, text,
 * an address or a duration needs only its row; a key with its own syntax names a parse
 * function. The file parser (config.c) and config_mux_set() both set keys through
 * config_keys_apply(), so a value is judged and explained the same way wherever it comes
 * from; only the place named in the message differs (" in [mux.2]" from the file, nothing at
 * run time, where the caller says which request it was).
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "config-keys.h"
#include "config.h"
#include "macro.h"
#include "usb-spec.h"

#define UL_MAX_SIZE_MIN	     2048
#define UL_MAX_SIZE_MAX	     65536
#define UL_MAX_DATAGRAMS_MIN 1
#define UL_MAX_DATAGRAMS_MAX 64
#define APN_MAX		     100 /* 3GPP TS 23.003 9.1: at most 100 octets */
#define MTU_MIN		     68	 /* RFC 791 */
#define MTU_MAX		     65535
#define MTU_IPV6_MIN	     1280 /* RFC 8200 5 */
/* IFNAMSIZ: config.h cannot include <net/if.h>, which clashes with <linux/if.h>. */
#define IFNAME_SIZE   sizeof(((struct config_mux *)NULL)->interface)
#define SUN_PATH_SIZE sizeof(((struct sockaddr_un *)NULL)->sun_path)
/* Error messages show this much of an offending input; CONFIG_ERROR_MAX must hold it. */
#define QUOTE_INPUT_MAX CONFIG_QUOTE_INPUT_MAX
#define QUOTE_MAX	CONFIG_QUOTE_MAX
#define QUOTE(s)	CONFIG_QUOTE(s)

_Static_assert(sizeof(((struct config_device *)NULL)->control_socket) == SUN_PATH_SIZE,
	       "control-socket must fit sockaddr_un.sun_path");

/* Escape everything but printable ASCII so that a message cannot mess up a terminal or log. */
const char *config_quote(char buf[static CONFIG_QUOTE_MAX], const char *s)
{
	size_t o = 0, i;

	buf[o++] = '\'';
	for (i = 0; s[i] && i < QUOTE_INPUT_MAX; i++) {
		unsigned char c = s[i];

		if (c == '\'' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = c;
		} else if (c < 0x20 || c >= 0x7f) {
			o += snprintf(buf + o, QUOTE_MAX - o, "\\x%02x", c);
		} else {
			buf[o++] = c;
		}
	}
	buf[o++] = '\'';
	if (s[i]) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/* Always returns -EINVAL; the message has no file:line, the caller adds it if there is one. */
_printf_(2, 3) static int setter_error(struct config_setter *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->err || s->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int invalid(struct config_setter *s, const struct config_key *k, const char *value,
		   const char *why)
{
	return setter_error(s, "invalid %s %s%s%s%s", k->name, QUOTE(value), s->where,
			    why ? ": " : "", why ?: "");
}

static int invalid_range(struct config_setter *s, const struct config_key *k, const char *value,
			 uint32_t min, uint32_t max)
{
	char why[64];

	snprintf(why, sizeof(why), "must be %" PRIu32 "..%" PRIu32, min, max);
	return invalid(s, k, value, why);
}

int config_keys_parse_u32(const char *s, uint32_t *ret)
{
	uint64_t v = 0;
	size_t i;

	if (!s[0] || (s[0] == '0' && s[1]))
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -ERANGE;
	*ret = (uint32_t)v;
	return 0;
}

static int parse_range(struct config_setter *s, const struct config_key *k, const char *value,
		       uint32_t min, uint32_t max, uint32_t *ret)
{
	uint32_t v;

	if (config_keys_parse_u32(value, &v) < 0 || v < min || v > max)
		return invalid_range(s, k, value, min, max);
	*ret = v;
	return 0;
}

/* The spellings systemd accepts; ModemManager's keys use yes/no. */
static int parse_bool(struct config_setter *s, const struct config_key *k, const char *value,
		      bool *ret)
{
	static const char *const yes[] = { "yes", "true", "1", "on" };
	static const char *const no[] = { "no", "false", "0", "off" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(value, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(value, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return invalid(s, k, value, "expected yes or no");
}

static bool is_printable(const char *s, bool allow_space)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c < 0x20 || c >= 0x7f || (c == ' ' && !allow_space))
			return false;
	}
	return true;
}

/* What the kernel's dev_valid_name() accepts, restricted to printable ASCII. */
static bool ifname_is_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IFNAME_SIZE || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		/* '%' would make the kernel number the device ("qmap%d"): a mux's name is fixed. */
		if (*s == '/' || *s == ':' || *s == '%' || !isgraph((unsigned char)*s))
			return false;
	return true;
}

/*
 * A plausible group name, the portable set useradd(8) and systemd agree on: a letter or '_',
 * then letters, digits, '_', '-' or '.', at most 31 characters (32 with a trailing '$'
 * for Samba machine accounts). All digits is never a name: it would read as a gid.
 */
static bool group_name_is_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32 || (n == 32 && s[31] != '$'))
		return false;
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (size_t i = 1; i < n; i++) {
		unsigned char c = s[i];

		if (c == '$' && i == n - 1)
			continue;
		if (!isalnum(c) && c != '_' && c != '-' && c != '.')
			return false;
	}
	return true;
}

/* An absolute path to a file: no blanks or control characters, not a directory. */
static int parse_path(struct config_setter *s, const struct config_key *k, const char *value,
		      size_t size, char *ret)
{
	char why[64];

	if (value[0] != '/')
		return invalid(s, k, value, "expected an absolute path");
	if (!is_printable(value, false))
		return invalid(s, k, value, "blanks and control characters are not allowed");
	if (value[strlen(value) - 1] == '/')
		return invalid(s, k, value, "expected a file, not a directory");
	if (strlen(value) >= size) {
		snprintf(why, sizeof(why), "longer than %zu bytes", size - 1);
		return invalid(s, k, value, why);
	}
	strcpy(ret, value);
	return 0;
}

/*
 * A modem spec: usb:, usb-path:, sim: and (where allowed) usb-serial:. Returns NULL if fine,
 * else why not.
 */
static const char *device_spec_check(const char *value, bool allow_sim, bool allow_serial,
				     char why[static USB_SPEC_ERROR_MAX])
{
	static const char *const schemes[] = { "sim:", "usb:", "usb-path:", CONFIG_SERIAL_SCHEME };
	const char *rest = NULL;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(schemes); i++)
		if (strncmp(value, schemes[i], strlen(schemes[i])) == 0) {
			rest = value + strlen(schemes[i]);
			break;
		}
	if (!rest || (i == 0 && !allow_sim))
		return !allow_sim ? "expected usb:VID:PID, usb-path:BUS-PORT or usb-serial:SERIAL"
		       : allow_serial
			       ? "expected sim:, usb:, usb-path: or usb-serial: and the device"
			       : "expected sim:, usb: or usb-path: and the device";
	if (i == 3 && !allow_serial)
		return "usb-serial: needs discovery: name the modem in a [modem.NAME] section";
	if (!*rest)
		return "nothing after the scheme";
	if (!is_printable(value, false))
		return "blanks and control characters are not allowed";
	/* Checked here so a typo fails at load time, not when the modem is looked for. */
	if (usb_spec_is_usb(value)) {
		struct usb_spec spec;

		if (usb_spec_parse(value, &spec, why, USB_SPEC_ERROR_MAX) < 0)
			return why;
	}
	return NULL;
}

static int parse_device(struct config_setter *s, const struct config_key *k, const char *value)
{
	char buf[USB_SPEC_ERROR_MAX];
	const char *why;

	/* [device] device = auto: discovery, as when there is no device at all. */
	if (s->section == CONFIG_SECTION_DEVICE && strcmp(value, "auto") == 0) {
		s->device->device[0] = '\0';
		return 0;
	}
	why = device_spec_check(value, true, s->section == CONFIG_SECTION_MODEM, buf);
	if (why)
		return invalid(s, k, value, why);
	strcpy(s->device->device, value); /* length checked by config_keys_apply() */
	return 0;
}

static int parse_name(struct config_setter *s, const struct config_key *k, const char *value)
{
	if (!config_modem_name_is_valid(value))
		return invalid(s, k, value, "expected 1 to 11 of a-z, 0-9, '_' and '-'");
	strcpy(s->name, value);
	return 0;
}

/* Specs separated by blanks; the key may be given again, each adds to the list. */
static int parse_exclude(struct config_setter *s, const struct config_key *k, const char *value)
{
	struct config *c = s->config;
	unsigned n = c->n_exclude;
	const char *v = value;

	for (;;) {
		char token[CONFIG_VALUE_MAX + 1], buf[USB_SPEC_ERROR_MAX];
		const char *why;
		size_t len;

		v += strspn(v, " \t");
		if (!*v)
			break;
		len = strcspn(v, " \t");
		memcpy(token, v, len); /* values are at most CONFIG_VALUE_MAX */
		token[len] = '\0';
		v += len;
		why = device_spec_check(token, false, true, buf);
		if (why)
			return setter_error(s, "invalid exclude %s%s: %s", QUOTE(token), s->where,
					    why);
		if (n >= CONFIG_MAX_EXCLUDES)
			return setter_error(s, "too many excludes%s (at most %d)", s->where,
					    CONFIG_MAX_EXCLUDES);
		strcpy(c->exclude[n++], token);
	}
	if (n == c->n_exclude)
		return invalid(s, k, value,
			       "expected usb:VID:PID, usb-path:BUS-PORT or usb-serial:SERIAL");
	c->n_exclude = n;
	return 0;
}

static int parse_rx_transfers(struct config_setter *s, const struct config_key *k,
			      const char *value)
{
	uint32_t v;

	/* Fewer transfers in flight lose downlink data under load (docs/ARCHITECTURE.md "Lesson 2: batching"). */
	if (config_keys_parse_u32(value, &v) == 0 && v < CONFIG_RX_TRANSFERS_MIN)
		return invalid(s, k, value, "at least 16 transfers are always kept in flight");
	return parse_range(s, k, value, CONFIG_RX_TRANSFERS_MIN, CONFIG_RX_TRANSFERS_MAX,
			   &s->device->rx_transfers);
}

static int parse_control(struct config_setter *s, const struct config_key *k, const char *value)
{
	static const enum config_control modes[] = { CONFIG_CONTROL_QMI, CONFIG_CONTROL_MBIM,
						     CONFIG_CONTROL_NONE };

	/* auto: qmi until the modem is found and its function (QMI or MBIM) is known. */
	if (strcmp(value, "auto") == 0) {
		s->device->control = CONFIG_CONTROL_QMI;
		s->device->control_auto = true;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (strcmp(value, config_control_to_string(modes[i])) == 0) {
			s->device->control = modes[i];
			s->device->control_auto = false;
			return 0;
		}
	return invalid(s, k, value, "expected auto, qmi, mbim or none");
}

static int parse_admin_group(struct config_setter *s, const struct config_key *k, const char *value)
{
	/* Only the name is checked here: the group may be created after the config is written,
	 * so the control server resolves it when a peer asks for a change. */
	if (value[0] && !group_name_is_valid(value))
		return invalid(s, k, value,
			       "expected a group name: a letter or '_', then letters, digits, "
			       "'_', '-' or '.', at most 32 characters");
	strcpy(s->device->admin_group, value);
	return 0;
}

/* The deprecated [device] dbus = system|session|none, before [dbus] existed. */
static int parse_dbus(struct config_setter *s, const struct config_key *k, const char *value)
{
	struct config_dbus_settings *d = &s->config->dbus;

	if (strcmp(value, "none") == 0) {
		d->enabled = CONFIG_DBUS_ENABLED_NO;
	} else if (strcmp(value, "system") == 0 || strcmp(value, "session") == 0) {
		d->enabled = CONFIG_DBUS_ENABLED_AUTO;
		d->bus = strcmp(value, "system") == 0 ? CONFIG_DBUS_SYSTEM : CONFIG_DBUS_SESSION;
	} else {
		return invalid(s, k, value, "expected system, session or none");
	}
	return 0;
}

static int parse_interface(struct config_setter *s, const struct config_key *k, const char *value)
{
	if (!ifname_is_valid(value))
		return invalid(s, k, value,
			       "1 to 15 printable characters without blanks, '/', ':' or '%'");
	strcpy(s->mux->interface, value);
	s->mux->interface_set = true;
	return 0;
}

/* 3GPP TS 23.003 9.1: dot-separated labels of letters, digits and hyphens; empty = default. */
static int parse_apn(struct config_setter *s, const struct config_key *k, const char *value)
{
	size_t n = strlen(value);

	if (n > APN_MAX)
		return invalid(s, k, value, "longer than 100 characters");
	for (size_t i = 0; i < n; i++) {
		char c = value[i];

		if (c == '.') {
			if (i == 0 || i == n - 1 || value[i + 1] == '.')
				return invalid(s, k, value, "empty label");
		} else if (!isalnum((unsigned char)c) && c != '-') {
			return invalid(s, k, value,
				       "only letters, digits, '-' and '.' are allowed");
		}
	}
	strcpy(s->mux->apn, value);
	return 0;
}

/* ModemManager's syntax: "pap|chap"; "none" only on its own. */
static int parse_allowed_auth(struct config_setter *s, const struct config_key *k,
			      const char *value)
{
	static const char *const methods[] = { "none", "pap", "chap", "mschapv2" };
	unsigned seen = 0;
	const char *v = value;

	if (strlen(value) >= sizeof(s->mux->allowed_auth))
		return invalid(s, k, value, "too long");

	/* Empty means: leave it to the modem. */
	while (*v) {
		size_t n = strcspn(v, "|"), i;

		for (i = 0; i < ARRAY_SIZE(methods); i++)
			if (strlen(methods[i]) == n && strncmp(v, methods[i], n) == 0)
				break;
		if (i == ARRAY_SIZE(methods))
			return invalid(s, k, value,
				       "expected none, or pap, chap, mschapv2 joined by '|'");
		if (seen & (1u << i))
			return invalid(s, k, value, "method listed twice");
		seen |= 1u << i;
		v += n;
		if (*v == '|' && !*++v)
			return invalid(s, k, value, "empty method after '|'");
	}
	if ((seen & 1u) && seen != 1u)
		return invalid(s, k, value, "'none' cannot be combined with other methods");

	strcpy(s->mux->allowed_auth, value);
	return 0;
}

static int parse_address(struct config_setter *s, const struct config_key *k, const char *value,
			 int family, struct config_prefix *ret)
{
	struct config_prefix a;

	if (config_parse_prefix(value, &a) < 0 || a.family != family)
		return invalid(s, k, value,
			       family == AF_INET
				       ? "expected an IPv4 address with optional /0..32"
				       : "expected an IPv6 address with optional /0..128");
	*ret = a;
	return 0;
}

static size_t prefix_addr_size(const struct config_prefix *a)
{
	return a->family == AF_INET ? sizeof(a->addr.v4) : sizeof(a->addr.v6);
}

static bool prefix_equal(const struct config_prefix *a, const struct config_prefix *b)
{
	return a->family == b->family && a->prefixlen == b->prefixlen &&
	       memcmp(&a->addr, &b->addr, prefix_addr_size(a)) == 0;
}

/* The kernel refuses a route whose destination has bits set beyond its prefix length. */
static bool prefix_has_host_bits(const struct config_prefix *a)
{
	const uint8_t *b = (const uint8_t *)&a->addr;
	size_t size = prefix_addr_size(a);

	for (size_t i = 0; i < size; i++) {
		unsigned bits = a->prefixlen > i * 8 ? a->prefixlen - i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);

		if (b[i] & ~mask)
			return true;
	}
	return false;
}

/* Prefixes separated by blanks and/or one comma: "a b", "a,b", "a, b"; "a,,b" is an error. */
static int parse_routes(struct config_setter *s, const struct config_key *k, const char *value)
{
	struct config_prefix routes[CONFIG_MAX_ROUTES];
	unsigned n = 0;
	bool want_route = false; /* after a comma */
	const char *v = value;

	for (;;) {
		char token[CONFIG_VALUE_MAX + 1];
		struct config_prefix r;
		size_t len;

		v += strspn(v, " \t");
		if (!*v)
			break;
		if (*v == ',') {
			if (n == 0 || want_route)
				return invalid(s, k, value, "empty entry");
			want_route = true;
			v++;
			continue;
		}

		len = strcspn(v, " \t,");
		if (len >= sizeof(token)) /* cannot happen: values are at most CONFIG_VALUE_MAX */
			return invalid(s, k, value, "too long");
		memcpy(token, v, len);
		token[len] = '\0';
		v += len;
		want_route = false;

		if (config_parse_prefix(token, &r) < 0)
			return setter_error(s, "invalid route %s%s", QUOTE(token), s->where);
		if (prefix_has_host_bits(&r))
			return setter_error(s,
					    "invalid route %s%s: bits set after the prefix length",
					    QUOTE(token), s->where);
		for (unsigned i = 0; i < n; i++)
			if (prefix_equal(&routes[i], &r))
				return setter_error(s, "route %s listed twice%s", QUOTE(token),
						    s->where);
		if (n >= CONFIG_MAX_ROUTES)
			return setter_error(s, "too many routes%s (at most %d)", s->where,
					    CONFIG_MAX_ROUTES);
		routes[n++] = r;
	}
	if (want_route)
		return invalid(s, k, value, "empty entry");

	memcpy(s->mux->routes, routes, n * sizeof(routes[0]));
	s->mux->n_routes = n;
	return 0;
}

/* A duration: decimal with a unit, us, ms or s ("5ms", "100ms", "500us"). */
static int parse_duration_us(struct config_setter *s, const struct config_key *k, const char *value,
			     uint32_t min_us, uint32_t max_us, uint32_t *ret)
{
	static const struct {
		const char *unit;
		uint32_t us;
	} units[] = { { "us", 1 }, { "ms", 1000 }, { "s", 1000000 } };
	char digits[16];
	size_t n = strspn(value, "0123456789");
	uint32_t v;

	if (n == 0 || n >= sizeof(digits))
		return invalid(s, k, value, "expected a duration such as 5ms, 500us or 1s");
	memcpy(digits, value, n);
	digits[n] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(value + n, units[i].unit) != 0)
			continue;
		if (config_keys_parse_u32(digits, &v) < 0 || (uint64_t)v * units[i].us < min_us ||
		    (uint64_t)v * units[i].us > max_us) {
			char why[64];
			snprintf(why, sizeof(why), "must be %" PRIu32 "us..%" PRIu32 "ms", min_us,
				 max_us / 1000);
			return invalid(s, k, value, why);
		}
		*ret = v * units[i].us;
		return 0;
	}
	return invalid(s, k, value, "expected a duration such as 5ms, 500us or 1s");
}

/*
 * Bits per second, decimal, with an optional k, M or G (powers of 1000), into *ret; 0 = no
 * shaper; "auto" sets *ret_auto (and *ret = 0): the shaper follows a measured rate.
 */
static int parse_rate(struct config_setter *s, const struct config_key *k, const char *value,
		      uint64_t *ret, bool *ret_auto)
{
	static const char *const why =
		"expected bits per second such as 20M, 950k, 0 (off) or auto";
	char digits[16];
	size_t n = strspn(value, "0123456789");
	uint64_t mult = 1;
	uint32_t v;

	*ret_auto = strcmp(value, "auto") == 0;
	if (*ret_auto) {
		*ret = 0;
		return 0;
	}
	if (n == 0 || n >= sizeof(digits))
		return invalid(s, k, value, why);
	memcpy(digits, value, n);
	digits[n] = '\0';
	if (strcmp(value + n, "k") == 0)
		mult = 1000;
	else if (strcmp(value + n, "M") == 0)
		mult = 1000000;
	else if (strcmp(value + n, "G") == 0)
		mult = 1000000000;
	else if (value[n] != '\0')
		return invalid(s, k, value, why);
	if (config_keys_parse_u32(digits, &v) < 0 || (uint64_t)v * mult > 100000000000ULL ||
	    (v != 0 && (uint64_t)v * mult < 64000))
		return invalid(s, k, value, "must be 0 or 64k..100G");
	*ret = (uint64_t)v * mult;
	return 0;
}

/* auto: the shaper follows the modem's rate estimated from OUT completions. */
static int parse_uplink_rate(struct config_setter *s, const struct config_key *k, const char *value)
{
	return parse_rate(s, k, value, &s->device->uplink_rate, &s->device->uplink_rate_auto);
}

/* off is 0's other name here; auto: the shaper follows the downlink's one-way delay. */
static int parse_downlink_rate(struct config_setter *s, const struct config_key *k,
			       const char *value)
{
	return parse_rate(s, k, strcmp(value, "off") == 0 ? "0" : value, &s->device->downlink_rate,
			  &s->device->downlink_rate_auto);
}

static const struct config_key_value qmap_versions[] = { { "1", QMAP_V1 }, { "5", QMAP_V5 }, {} };
static const struct config_key_value ntb_formats[] = { { "16", 16 }, { "32", 32 }, {} };
/* The wMaxPacketSize values USB allows for bulk endpoints: full, high, super speed. */
static const struct config_key_value packet_sizes[] = {
	{ "64", 64 }, { "512", 512 }, { "1024", 1024 }, {}
};
static const struct config_key_value ip_types[] = { { "ipv4", CONFIG_IP_TYPE_IPV4 },
						    { "ipv6", CONFIG_IP_TYPE_IPV6 },
						    { "ipv4v6", CONFIG_IP_TYPE_IPV4V6 },
						    {} };
static const struct config_key_value headrooms[] = { { "xdp", CONFIG_HEADROOM_XDP },
						     { "off", CONFIG_HEADROOM_OFF },
						     { "auto", CONFIG_HEADROOM_AUTO },
						     {} };
static const struct config_key_value uplink_queues[] = {
	{ "fq-codel", CONFIG_UPLINK_QUEUE_FQ_CODEL }, { "fifo", CONFIG_UPLINK_QUEUE_FIFO }, {}
};
static const struct config_key_value dbus_enableds[] = { { "auto", CONFIG_DBUS_ENABLED_AUTO },
							 { "yes", CONFIG_DBUS_ENABLED_YES },
							 { "no", CONFIG_DBUS_ENABLED_NO },
							 {} };
static const struct config_key_value dbus_buses[] = { { "system", CONFIG_DBUS_SYSTEM },
						      { "session", CONFIG_DBUS_SESSION },
						      {} };

/* Where a row's value goes: the section's object and the field in it. */
#define FIELD_OF(type, f) .offset = offsetof(type, f), .size = sizeof(((type *)NULL)->f)
#define DEVICE(f)	  .object = CONFIG_KEY_OBJECT_DEVICE, FIELD_OF(struct config_device, f)
#define MUX(f)		  .object = CONFIG_KEY_OBJECT_MUX, FIELD_OF(struct config_mux, f)
#define DBUS(f)		  .object = CONFIG_KEY_OBJECT_DBUS, FIELD_OF(struct config_dbus_settings, f)
#define CONFIG(f)	  .object = CONFIG_KEY_OBJECT_CONFIG, FIELD_OF(struct config, f)

/* How it is judged. */
#define BOOL(field)		 .type = CONFIG_KEY_BOOL, field
#define U32(field, lo, hi)	 .type = CONFIG_KEY_U32, field, .min = (lo), .max = (hi)
#define ENUM(field, table, text) .type = CONFIG_KEY_ENUM, field, .values = (table), .why = (text)
#define PATH(field)		 .type = CONFIG_KEY_PATH, field
#define TEXT(field)		 .type = CONFIG_KEY_TEXT, field
#define SECRET(field)		 .type = CONFIG_KEY_SECRET, field
#define PREFIX(field, fam)	 .type = CONFIG_KEY_PREFIX, field, .family = (fam)
#define DURATION(field, lo, hi)	 .type = CONFIG_KEY_DURATION, field, .min = (lo), .max = (hi)
#define CUSTOM(fn)		 .type = CONFIG_KEY_CUSTOM, .parse = (fn)
#define DAEMON_WIDE		 .daemon_wide = true

/*
 * Every key, one row each. The order is the order in which a [modem.NAME]'s keys are applied
 * over [device] once the file is read; none of them depends on another.
 */
const struct config_key config_keys[] = {
	{ "device", CONFIG_SECTION_DEVICE, CUSTOM(parse_device) },
	{ "qmap-version", CONFIG_SECTION_DEVICE,
	  ENUM(DEVICE(qmap_version), qmap_versions, "expected 1 or 5") },
	{ "ntb-format", CONFIG_SECTION_DEVICE,
	  ENUM(DEVICE(ntb_format), ntb_formats, "expected 16 or 32") },
	{ "dl-max-size", CONFIG_SECTION_DEVICE,
	  U32(DEVICE(dl_max_size), CONFIG_DL_MAX_SIZE_MIN, CONFIG_DL_MAX_SIZE_MAX) },
	{ "rx-transfers", CONFIG_SECTION_DEVICE, CUSTOM(parse_rx_transfers) },
	{ "ul-max-size", CONFIG_SECTION_DEVICE,
	  U32(DEVICE(ul_max_size), UL_MAX_SIZE_MIN, UL_MAX_SIZE_MAX) },
	{ "ul-max-datagrams", CONFIG_SECTION_DEVICE,
	  U32(DEVICE(ul_max_datagrams), UL_MAX_DATAGRAMS_MIN, UL_MAX_DATAGRAMS_MAX) },
	{ "max-packet-size", CONFIG_SECTION_DEVICE,
	  ENUM(DEVICE(max_packet_size), packet_sizes, "expected 64, 512 or 1024") },
	{ "persist-devices", CONFIG_SECTION_DEVICE, BOOL(DEVICE(persist_devices)) },
	{ "control", CONFIG_SECTION_DEVICE, CUSTOM(parse_control) },
	{ "control-link", CONFIG_SECTION_DEVICE, PATH(DEVICE(control_link)) },
	/* Seconds, as the control libraries take them: QMI CTL or MBIM OPEN unanswered. */
	{ "open-timeout", CONFIG_SECTION_DEVICE,
	  U32(DEVICE(open_timeout), CONFIG_OPEN_TIMEOUT_MIN, CONFIG_OPEN_TIMEOUT_MAX) },
	/* bind() takes at most sun_path's 108 bytes with the NUL. */
	{ "control-socket", CONFIG_SECTION_DEVICE, PATH(DEVICE(control_socket)), DAEMON_WIDE },
	{ "admin-group", CONFIG_SECTION_DEVICE, CUSTOM(parse_admin_group), DAEMON_WIDE },
	{ "interface", CONFIG_SECTION_MUX, CUSTOM(parse_interface) },
	{ "apn", CONFIG_SECTION_MUX, CUSTOM(parse_apn) },
	{ "ip-type", CONFIG_SECTION_MUX,
	  ENUM(MUX(ip_type), ip_types, "expected ipv4, ipv6 or ipv4v6") },
	{ "allowed-auth", CONFIG_SECTION_MUX, CUSTOM(parse_allowed_auth) },
	{ "user", CONFIG_SECTION_MUX, TEXT(MUX(user)) },
	/* A secret: never copied into a message that ends up in the journal. */
	{ "password", CONFIG_SECTION_MUX, SECRET(MUX(password)) },
	{ "mtu", CONFIG_SECTION_MUX, U32(MUX(mtu), MTU_MIN, MTU_MAX) },
	{ "headroom", CONFIG_SECTION_MUX,
	  ENUM(MUX(headroom), headrooms, "expected auto, xdp or off") },
	{ "ipv4-address", CONFIG_SECTION_MUX, PREFIX(MUX(ipv4_address), AF_INET) },
	{ "ipv6-address", CONFIG_SECTION_MUX, PREFIX(MUX(ipv6_address), AF_INET6) },
	{ "routes", CONFIG_SECTION_MUX, CUSTOM(parse_routes) },
	{ "route-metric", CONFIG_SECTION_MUX, U32(MUX(route_metric), 0, UINT32_MAX) },
	{ "default-route", CONFIG_SECTION_MUX, BOOL(MUX(default_route)) },
	{ "autoconnect", CONFIG_SECTION_MUX, BOOL(MUX(autoconnect)) },
	{ "uplink-queue", CONFIG_SECTION_MUX,
	  ENUM(MUX(uplink_queue), uplink_queues, "expected fq-codel or fifo") },
	{ "codel-target", CONFIG_SECTION_MUX, DURATION(MUX(codel_target_us), 100, 1000000) },
	{ "codel-interval", CONFIG_SECTION_MUX, DURATION(MUX(codel_interval_us), 1000, 10000000) },
	{ "uplink-rate", CONFIG_SECTION_DEVICE, CUSTOM(parse_uplink_rate) },
	{ "downlink-rate", CONFIG_SECTION_DEVICE, CUSTOM(parse_downlink_rate) },
	/* Bytes of packets qmapd holds at most for the downlink shaper: 64 KiB .. 64 MiB. */
	{ "downlink-buffer", CONFIG_SECTION_DEVICE, U32(DEVICE(downlink_buffer), 65536, 67108864) },
	{ "name", CONFIG_SECTION_DEVICE, CUSTOM(parse_name), DAEMON_WIDE },
	/* Specs separated by blanks; the key may be given again, each adds to the list. */
	{ "exclude", CONFIG_SECTION_DEVICE, CUSTOM(parse_exclude), DAEMON_WIDE,
	  .repeatable = true },
	/* Whether modems no [modem.NAME] pins are claimed too; checked against device = later. */
	{ "discovery", CONFIG_SECTION_DEVICE, BOOL(CONFIG(discovery)), DAEMON_WIDE },
	{ "enabled", CONFIG_SECTION_DBUS,
	  ENUM(DBUS(enabled), dbus_enableds, "expected auto, yes or no"), DAEMON_WIDE },
	{ "bus", CONFIG_SECTION_DBUS, ENUM(DBUS(bus), dbus_buses, "expected system or session"),
	  DAEMON_WIDE },
	{ "dbus", CONFIG_SECTION_DEVICE, CUSTOM(parse_dbus), DAEMON_WIDE },
};

const unsigned config_keys_count = ARRAY_SIZE(config_keys);
/* < not <=: config_keys_index() of a name not in the table is a slot no key ever sets. */
_Static_assert(ARRAY_SIZE(config_keys) < CONFIG_KEYS_MAX, "raise CONFIG_KEYS_MAX");

/* Where a row's field is in the object s sets; NULL for CUSTOM rows or a missing object. */
static void *key_field(const struct config_setter *s, const struct config_key *k)
{
	char *base = NULL;

	switch (k->object) {
	case CONFIG_KEY_OBJECT_NONE:
		break;
	case CONFIG_KEY_OBJECT_DEVICE:
		base = (char *)s->device;
		break;
	case CONFIG_KEY_OBJECT_MUX:
		base = (char *)s->mux;
		break;
	case CONFIG_KEY_OBJECT_DBUS:
		base = s->config ? (char *)&s->config->dbus : NULL;
		break;
	case CONFIG_KEY_OBJECT_CONFIG:
		base = (char *)s->config;
		break;
	}
	return base ? base + k->offset : NULL;
}

/* An enum or a small number, into a field of 1 or 4 bytes (uint8_t, uint32_t, an enum). */
static int store_uint(void *field, size_t size, uint32_t v)
{
	uint8_t v8 = (uint8_t)v;

	switch (size) {
	case sizeof(uint8_t):
		memcpy(field, &v8, size);
		return 0;
	case sizeof(uint32_t):
		memcpy(field, &v, size);
		return 0;
	}
	return -EINVAL;
}

static int parse_enum(struct config_setter *s, const struct config_key *k, const char *value,
		      void *field)
{
	for (const struct config_key_value *e = k->values; e->name; e++)
		if (strcmp(value, e->name) == 0)
			return store_uint(field, k->size, e->value);
	return invalid(s, k, value, k->why);
}

static int parse_text(struct config_setter *s, const struct config_key *k, const char *value,
		      char *field)
{
	if (!is_printable(value, true))
		return k->type == CONFIG_KEY_SECRET
			       ? setter_error(s, "invalid %s%s: only printable ASCII is allowed",
					      k->name, s->where)
			       : invalid(s, k, value, "only printable ASCII is allowed");
	if (strlen(value) >= k->size)
		return k->type == CONFIG_KEY_SECRET
			       ? setter_error(s, "invalid %s%s: too long", k->name, s->where)
			       : invalid(s, k, value, "too long");
	strcpy(field, value);
	return 0;
}

/* A row's value: the generic types by the row alone, CUSTOM by its function. */
static int key_parse(struct config_setter *s, const struct config_key *k, const char *value)
{
	void *field;

	if (k->type == CONFIG_KEY_CUSTOM)
		return k->parse(s, k, value);
	field = key_field(s, k);
	if (!field)
		return setter_error(s, "%s cannot be set here", k->name);

	switch (k->type) {
	case CONFIG_KEY_BOOL:
		return parse_bool(s, k, value, field);
	case CONFIG_KEY_U32:
		return parse_range(s, k, value, k->min, k->max, field);
	case CONFIG_KEY_ENUM:
		return parse_enum(s, k, value, field);
	case CONFIG_KEY_PATH:
		return parse_path(s, k, value, k->size, field);
	case CONFIG_KEY_TEXT:
	case CONFIG_KEY_SECRET:
		return parse_text(s, k, value, field);
	case CONFIG_KEY_PREFIX:
		return parse_address(s, k, value, k->family, field);
	case CONFIG_KEY_DURATION:
		return parse_duration_us(s, k, value, k->min, k->max, field);
	case CONFIG_KEY_CUSTOM:
		break;
	}
	return -EINVAL;
}

/*
 * The key called name in section; NULL if there is none, with *ret_hint saying where a key of
 * that name belongs instead ("" if nowhere).
 */
const struct config_key *config_keys_find(const char *name, enum config_section section,
					  const char **ret_hint)
{
	bool modem = section == CONFIG_SECTION_MODEM || section == CONFIG_SECTION_MODEM_MUX;
	enum config_section want = section == CONFIG_SECTION_MODEM	 ? CONFIG_SECTION_DEVICE
				   : section == CONFIG_SECTION_MODEM_MUX ? CONFIG_SECTION_MUX
									 : section;
	const struct config_key *k = NULL;

	*ret_hint = "";
	for (size_t i = 0; i < config_keys_count; i++) {
		const struct config_key *key = &config_keys[i];

		if (strcmp(key->name, name) != 0)
			continue;
		if (key->section == want && !(section == CONFIG_SECTION_MODEM && key->daemon_wide))
			k = key;
		else if (key->section == CONFIG_SECTION_DBUS)
			*ret_hint = " (it belongs in [dbus])";
		else if (strcmp(key->name, "name") == 0 && section == CONFIG_SECTION_MODEM)
			*ret_hint = " (the modem's name is the one in the section header)";
		else if (key->daemon_wide && section == CONFIG_SECTION_MODEM)
			*ret_hint = " (it is for the whole daemon: it belongs in [device])";
		else if (key->section == CONFIG_SECTION_MUX)
			*ret_hint = modem ? " (it belongs in [modem.NAME.mux.N])"
					  : " (it belongs in [mux.N])";
		else
			*ret_hint = modem ? " (it belongs in [modem.NAME])"
					  : " (it belongs in [device])";
	}
	return k;
}

/* The checks every value gets, then the key's own parser. */
int config_keys_apply(struct config_setter *s, const struct config_key *k, const char *value)
{
	/* The file cannot hold longer values (inih would cut them); the control socket can. */
	if (strlen(value) > CONFIG_VALUE_MAX)
		return setter_error(s, "value of '%s'%s too long (%zu bytes, at most %d)", k->name,
				    s->where, strlen(value), CONFIG_VALUE_MAX);
	return key_parse(s, k, value);
}

unsigned config_keys_index(const char *name)
{
	unsigned i;

	for (i = 0; i < config_keys_count; i++)
		if (strcmp(config_keys[i].name, name) == 0)
			break;
	assert(i < config_keys_count);
	return i;
}

static const char *family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

int config_keys_check_mux(struct config_setter *s, const char **ret_key)
{
	const struct config_mux *m = s->mux;
	bool has4 = m->ip_type != CONFIG_IP_TYPE_IPV6;
	bool has6 = m->ip_type != CONFIG_IP_TYPE_IPV4;

	if (has6 && m->mtu < MTU_IPV6_MIN) {
		*ret_key = "mtu";
		return setter_error(
			s, "invalid mtu '%" PRIu32 "'%s: ip-type '%s' needs at least %d", m->mtu,
			s->where, config_ip_type_to_string(m->ip_type), MTU_IPV6_MIN);
	}
	if (!has4 && m->ipv4_address.family) {
		*ret_key = "ipv4-address";
		return setter_error(s, "ipv4-address%s needs ip-type ipv4 or ipv4v6, not '%s'",
				    s->where, config_ip_type_to_string(m->ip_type));
	}
	if (!has6 && m->ipv6_address.family) {
		*ret_key = "ipv6-address";
		return setter_error(s, "ipv6-address%s needs ip-type ipv6 or ipv4v6, not '%s'",
				    s->where, config_ip_type_to_string(m->ip_type));
	}
	if (m->codel_interval_us < m->codel_target_us) {
		*ret_key = "codel-interval";
		return setter_error(s,
				    "codel-interval %" PRIu32
				    "us%s is shorter than codel-target %" PRIu32 "us",
				    m->codel_interval_us, s->where, m->codel_target_us);
	}
	for (unsigned i = 0; i < m->n_routes; i++) {
		const struct config_prefix *r = &m->routes[i];

		if ((r->family == AF_INET && !has4) || (r->family == AF_INET6 && !has6)) {
			*ret_key = "routes";
			return setter_error(s, "%s route%s but ip-type is '%s'",
					    family_name(r->family), s->where,
					    config_ip_type_to_string(m->ip_type));
		}
		/* Both would install the same default route and the second would fail. */
		if (m->default_route && r->prefixlen == 0) {
			*ret_key = "default-route";
			return setter_error(s,
					    "default-route%s duplicates the %s default route in "
					    "routes; use one of them",
					    s->where, family_name(r->family));
		}
	}
	return 0;
}

void config_mux_init_defaults(struct config_mux *m, unsigned id)
{
	memset(m, 0, sizeof(*m));
	/* An id out of range is kept visibly wrong for config_mux_finish() to refuse. */
	m->id = id <= CONFIG_MUX_ID_MAX ? (uint8_t)id : 0;
	snprintf(m->interface, sizeof(m->interface), "qmap%u", (unsigned)m->id);
	m->ip_type = CONFIG_IP_TYPE_IPV4V6;
	m->mtu = CONFIG_MTU_DEFAULT;
	m->headroom = CONFIG_HEADROOM_AUTO;
	m->uplink_queue = CONFIG_UPLINK_QUEUE_FQ_CODEL;
	m->codel_target_us = CONFIG_CODEL_TARGET_DEFAULT_US;
	m->codel_interval_us = CONFIG_CODEL_INTERVAL_DEFAULT_US;
	m->default_route = false;
	m->autoconnect = true;
}

int config_mux_set(struct config_mux *m, const char *key, const char *value, char *err,
		   size_t errlen)
{
	struct config_setter s = { .mux = m, .where = "", .err = err, .errlen = errlen };
	const struct config_key *k;
	const char *hint;

	if (err && errlen > 0)
		err[0] = '\0';
	if (!m || !key || !value)
		return setter_error(&s, "no key or value");

	k = config_keys_find(key, CONFIG_SECTION_MUX, &hint);
	if (!k)
		return setter_error(&s, "unknown key %s%s", QUOTE(key), hint);
	return config_keys_apply(&s, k, value);
}

int config_mux_finish(struct config_mux *m, char *err, size_t errlen)
{
	struct config_setter s = { .mux = m, .where = "", .err = err, .errlen = errlen };
	const char *key;
	int r;

	if (err && errlen > 0)
		err[0] = '\0';
	if (!m)
		return setter_error(&s, "no mux");
	if (m->id < CONFIG_MUX_ID_MIN || m->id > CONFIG_MUX_ID_MAX)
		return setter_error(&s, "invalid mux id %u: expected %d..%d", (unsigned)m->id,
				    CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
	r = config_keys_check_mux(&s, &key);
	if (r < 0)
		return r;
	m->present = true;
	return 0;
}

void config_device_init_defaults(struct config_device *d)
{
	memset(d, 0, sizeof(*d));
	d->qmap_version = QMAP_V5;
	d->ntb_format = 16;
	d->dl_max_size = CONFIG_DL_MAX_SIZE_DEFAULT;
	d->rx_transfers = CONFIG_RX_TRANSFERS_MIN;
	d->ul_max_size = CONFIG_UL_MAX_SIZE_DEFAULT;
	d->ul_max_datagrams = CONFIG_UL_MAX_DATAGRAMS_DEFAULT;
	d->max_packet_size = CONFIG_MAX_PACKET_SIZE_DEFAULT;
	d->persist_devices = false;
	d->downlink_buffer = CONFIG_DOWNLINK_BUFFER_DEFAULT;
	d->control = CONFIG_CONTROL_QMI;
	d->control_auto = true;
	strcpy(d->control_link, CONFIG_CONTROL_LINK_DEFAULT);
	d->open_timeout = CONFIG_OPEN_TIMEOUT_DEFAULT;
	strcpy(d->control_socket, CONFIG_CONTROL_SOCKET_DEFAULT);
	d->admin_group[0] = '\0';
}

void config_init_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	config_device_init_defaults(&c->device);
	c->dbus.enabled = CONFIG_DBUS_ENABLED_AUTO;
	c->dbus.bus = CONFIG_DBUS_SYSTEM;
}

bool config_modem_name_is_valid(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strlen(name);
	if (n == 0 || n > CONFIG_MODEM_NAME_MAX)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

int config_usb_match_check(const char *spec, char *err, size_t errlen)
{
	char buf[USB_SPEC_ERROR_MAX];
	const char *why = device_spec_check(spec, false, true, buf);

	if (!why)
		return 0;
	snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

const char *config_ip_type_to_string(enum config_ip_type t)
{
	switch (t) {
	case CONFIG_IP_TYPE_IPV4:
		return "ipv4";
	case CONFIG_IP_TYPE_IPV6:
		return "ipv6";
	case CONFIG_IP_TYPE_IPV4V6:
		return "ipv4v6";
	}
	return NULL;
}

const char *config_control_to_string(enum config_control c)
{
	switch (c) {
	case CONFIG_CONTROL_QMI:
		return "qmi";
	case CONFIG_CONTROL_NONE:
		return "none";
	case CONFIG_CONTROL_MBIM:
		return "mbim";
	}
	return NULL;
}

const char *config_control_describe(const struct config_device *d, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", config_control_to_string(d->control),
		 d->control_auto ? " (auto)" : "");
	return buf;
}

const char *config_dbus_to_string(enum config_dbus d)
{
	switch (d) {
	case CONFIG_DBUS_SYSTEM:
		return "system";
	case CONFIG_DBUS_SESSION:
		return "session";
	case CONFIG_DBUS_NONE:
		return "none";
	}
	return NULL;
}

const char *config_dbus_enabled_to_string(enum config_dbus_enabled e)
{
	switch (e) {
	case CONFIG_DBUS_ENABLED_AUTO:
		return "auto";
	case CONFIG_DBUS_ENABLED_YES:
		return "yes";
	case CONFIG_DBUS_ENABLED_NO:
		return "no";
	}
	return NULL;
}

const char *config_uplink_queue_to_string(enum config_uplink_queue q)
{
	switch (q) {
	case CONFIG_UPLINK_QUEUE_FQ_CODEL:
		return "fq-codel";
	case CONFIG_UPLINK_QUEUE_FIFO:
		return "fifo";
	}
	return NULL;
}

const char *config_headroom_to_string(enum config_headroom h)
{
	switch (h) {
	case CONFIG_HEADROOM_XDP:
		return "xdp";
	case CONFIG_HEADROOM_OFF:
		return "off";
	case CONFIG_HEADROOM_AUTO:
		return "auto";
	}
	return NULL;
}

int config_parse_prefix(const char *s, struct config_prefix *ret)
{
	char addr[INET6_ADDRSTRLEN];
	struct config_prefix a = {};
	const char *slash;
	size_t n;
	unsigned max;

	if (!s || !ret)
		return -EINVAL;

	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, n);
	addr[n] = '\0';

	/* inet_pton() takes only the strict forms: dotted quad, no zone, no blanks. */
	a.family = memchr(addr, ':', n) ? AF_INET6 : AF_INET;
	if (inet_pton(a.family, addr, &a.addr) != 1)
		return -EINVAL;
	max = a.family == AF_INET ? 32 : 128;

	if (slash) {
		uint32_t len;

		if (config_keys_parse_u32(slash + 1, &len) < 0 || len > max)
			return -EINVAL;
		a.prefixlen = (uint8_t)len;
	} else {
		a.prefixlen = (uint8_t)max;
	}

	*ret = a;
	return 0;
}
