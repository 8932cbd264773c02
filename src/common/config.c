/* SPDX-License-Identifier: MIT */
/*
 * qmapd.conf on top of inih.
 *
 * Line numbers: Debian's inih 55 is built without INI_HANDLER_LINENO, so the handler is not
 * told which line it is looking at, and ini_parse_*() only returns the line of the first
 * error, not which key failed or why. We therefore feed inih through ini_parse_stream() with
 * our own reader that hands over exactly one line per call and counts it. inih handles a line
 * completely (calling the handler at most once) before it asks the reader for the next one,
 * so inside the handler p->line is the line of the key being handled.
 *
 * The reader also does what inih cannot be told to do at run time (Debian builds it with
 * INI_ALLOW_MULTILINE, INI_ALLOW_INLINE_COMMENTS, a 200-byte INI_MAX_LINE and neither
 * INI_STOP_ON_FIRST_ERROR nor INI_CALL_HANDLER_ON_NEW_SECTION):
 *  - a line that does not fit inih's buffer is rejected instead of silently split in two;
 *  - leading whitespace is removed before inih sees the line, so an indented line is never
 *    taken as a continuation of the previous value: every line stands alone;
 *  - section headers are parsed and checked here, because inih never reports a section that
 *    has no keys, and an empty [mux.N] is a mux with all defaults;
 *  - a line that is neither blank, a comment, a section nor "key = value" is reported with
 *    its text instead of inih's bare line number;
 *  - after the first error it returns NULL, which ends ini_parse_stream() at once, so the
 *    first error is the one reported and no later line is looked at.
 *
 * Several modems: [device] holds the defaults of every modem and the daemon-wide keys;
 * [modem.NAME] overrides the per-modem ones. Its keys are judged when read (against a scratch
 * device) and applied over [device] once the whole file is read, so that the order of the
 * sections does not matter. Interface names and control links are given and checked for
 * collisions at the end too, when every default is known.
 *
 * Inline comments follow inih: ';' after whitespace starts a comment anywhere, '#' and ';'
 * start a comment at the beginning of a line.
 *
 * The [mux.N] keys are also set at run time (qmapctl mux add, the control socket) through
 * config_mux_set() and config_mux_finish(). File and run time share one setter per key and
 * one cross-key check, so a value is judged and explained the same way wherever it comes
 * from; only the place named in the message differs (" in [mux.2]" after the file's
 * file:line, nothing at run time, where the caller says which request it was).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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
/* 254 muxes with every key set are well under 100 KB; anything much bigger is not a config. */
#define FILE_MAX (1024 * 1024)
/* How long a FIFO or pipe may take to deliver the whole file. */
#define FILE_READ_TIMEOUT_MS 5000
/* Error messages show this much of an offending input; CONFIG_ERROR_MAX must hold it. */
#define QUOTE_INPUT_MAX CONFIG_QUOTE_INPUT_MAX
#define QUOTE_MAX	CONFIG_QUOTE_MAX
#define QUOTE(s)	CONFIG_QUOTE(s)

_Static_assert(sizeof(((struct config_device *)NULL)->control_socket) == SUN_PATH_SIZE,
	       "control-socket must fit sockaddr_un.sun_path");

/* "modem.NAME.mux.254" and the NUL */
#define SECTION_NAME_SIZE (sizeof("modem.") + CONFIG_MODEM_NAME_MAX + sizeof(".mux.254") - 1)
#define SERIAL_SCHEME	  "usb-serial:"

enum section_kind {
	SECTION_NONE,
	SECTION_DEVICE,
	SECTION_MUX,
	SECTION_MODEM,	   /* [modem.NAME]: the per-modem keys of [device] */
	SECTION_MODEM_MUX, /* [modem.NAME.mux.N]: the keys of [mux.N] */
	SECTION_DBUS,	   /* [dbus] */
};

enum key_id {
	KEY_DEVICE,
	KEY_QMAP_VERSION,
	KEY_NTB_FORMAT,
	KEY_DL_MAX_SIZE,
	KEY_RX_TRANSFERS,
	KEY_UL_MAX_SIZE,
	KEY_UL_MAX_DATAGRAMS,
	KEY_MAX_PACKET_SIZE,
	KEY_PERSIST_DEVICES,
	KEY_CONTROL,
	KEY_CONTROL_LINK,
	KEY_CONTROL_SOCKET,
	KEY_ADMIN_GROUP,
	KEY_INTERFACE,
	KEY_APN,
	KEY_IP_TYPE,
	KEY_ALLOWED_AUTH,
	KEY_USER,
	KEY_PASSWORD,
	KEY_MTU,
	KEY_HEADROOM,
	KEY_IPV4_ADDRESS,
	KEY_IPV6_ADDRESS,
	KEY_ROUTES,
	KEY_ROUTE_METRIC,
	KEY_DEFAULT_ROUTE,
	KEY_AUTOCONNECT,
	KEY_UPLINK_QUEUE,
	KEY_CODEL_TARGET,
	KEY_CODEL_INTERVAL,
	KEY_UPLINK_RATE,
	KEY_NAME,
	KEY_EXCLUDE,
	KEY_DISCOVERY,
	KEY_DBUS_ENABLED,
	KEY_DBUS_BUS,
	KEY_DBUS,
	_KEY_MAX,
};

/* The object a key is set on and where to explain a refusal. */
struct setter {
	struct config *config;	      /* for exclude; NULL from config_mux_set() */
	struct config_device *device; /* for [device] keys; NULL from config_mux_set() */
	struct config_mux *mux;	      /* for [mux.N] keys */
	char *name;		      /* for name: CONFIG_MODEM_NAME_MAX + 1 bytes */
	enum section_kind section;    /* which values of device are allowed */
	const char *where;	      /* " in [mux.2]" from the file, "" at run time */
	char *err;
	size_t errlen;
};

/* What the file said about one [modem.NAME], kept until the whole file is read. */
struct modem_record {
	unsigned section_line; /* [modem.NAME]; 0 while only its muxes were seen */
	unsigned first_line;   /* the first section naming this modem */
	unsigned key_line[_KEY_MAX];
	char value[_KEY_MAX][CONFIG_VALUE_MAX + 1]; /* applied over [device] at the end */
	unsigned mux_line[CONFIG_MUX_ID_MAX + 1];
	unsigned interface_line[CONFIG_MUX_ID_MAX + 1];
};

struct parser {
	struct config *config;
	const char *name; /* file name for messages */
	const char *next; /* input not yet handed to inih */
	unsigned line;	  /* line last handed to inih */
	char *errbuf;
	size_t errlen;
	bool failed;
	bool oom;

	enum section_kind section;
	char section_name[SECTION_NAME_SIZE];
	char where[sizeof(" in []") + SECTION_NAME_SIZE];
	unsigned section_line;
	struct config_mux *mux;	     /* the current [mux.N] or [modem.NAME.mux.N] */
	unsigned modem;		     /* index of the current [modem.NAME...] */
	unsigned key_line[_KEY_MAX]; /* where each key of this section was set, 0 = not set */
	unsigned device_line;	     /* where [device] was, 0 = not yet */
	unsigned dbus_line;	     /* where [dbus] was, 0 = not yet */
	unsigned device_key_line[_KEY_MAX]; /* where each key of [device] was set */
	unsigned mux_line[CONFIG_MUX_ID_MAX + 1];
	unsigned interface_line[CONFIG_MUX_ID_MAX + 1];
	char modem_name[CONFIG_MODEM_NAME_MAX + 1]; /* [device] name = */
	struct modem_record *record;		    /* one per config->modem, same index */
};

struct key {
	const char *name;
	enum section_kind section; /* SECTION_DEVICE or SECTION_MUX */
	int (*parse)(struct setter *s, const struct key *k, const char *value);
	bool daemon_wide; /* only in [device], not in [modem.NAME] */
};

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

/* line 0: the error is about the whole file. Always returns -EINVAL. */
_printf_(3, 4) static int parser_error(struct parser *p, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	p->failed = true;
	if (!p->errbuf || p->errlen == 0)
		return -EINVAL;

	if (line > 0)
		n = snprintf(p->errbuf, p->errlen, "%s:%u: ", p->name, line);
	else
		n = snprintf(p->errbuf, p->errlen, "%s: ", p->name);
	if (n < 0 || (size_t)n >= p->errlen)
		return -EINVAL;

	va_start(ap, fmt);
	vsnprintf(p->errbuf + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Always returns -EINVAL; the message has no file:line, the caller adds it if there is one. */
_printf_(2, 3) static int setter_error(struct setter *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->err || s->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int invalid(struct setter *s, const struct key *k, const char *value, const char *why)
{
	return setter_error(s, "invalid %s %s%s%s%s", k->name, QUOTE(value), s->where,
			    why ? ": " : "", why ?: "");
}

static int invalid_range(struct setter *s, const struct key *k, const char *value, uint32_t min,
			 uint32_t max)
{
	char why[64];

	snprintf(why, sizeof(why), "must be %" PRIu32 "..%" PRIu32, min, max);
	return invalid(s, k, value, why);
}

/* Plain decimal: no sign, no blanks, no leading zeros (no octal surprises), fits 32 bits. */
static int parse_u32(const char *s, uint32_t *ret)
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

static int parse_range(struct setter *s, const struct key *k, const char *value, uint32_t min,
		       uint32_t max, uint32_t *ret)
{
	uint32_t v;

	if (parse_u32(value, &v) < 0 || v < min || v > max)
		return invalid_range(s, k, value, min, max);
	*ret = v;
	return 0;
}

/* The spellings systemd accepts; ModemManager's keys use yes/no. */
static int parse_bool(struct setter *s, const struct key *k, const char *value, bool *ret)
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
static int parse_path(struct setter *s, const struct key *k, const char *value, size_t size,
		      char *ret)
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
	static const char *const schemes[] = { "sim:", "usb:", "usb-path:", SERIAL_SCHEME };
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

static int parse_device(struct setter *s, const struct key *k, const char *value)
{
	char buf[USB_SPEC_ERROR_MAX];
	const char *why;

	/* [device] device = auto: discovery, as when there is no device at all. */
	if (s->section == SECTION_DEVICE && strcmp(value, "auto") == 0) {
		s->device->device[0] = '\0';
		return 0;
	}
	why = device_spec_check(value, true, s->section == SECTION_MODEM, buf);
	if (why)
		return invalid(s, k, value, why);
	strcpy(s->device->device, value); /* length checked by setter_apply() */
	return 0;
}

static int parse_name(struct setter *s, const struct key *k, const char *value)
{
	if (!config_modem_name_is_valid(value))
		return invalid(s, k, value, "expected 1 to 11 of a-z, 0-9, '_' and '-'");
	strcpy(s->name, value);
	return 0;
}

/* Whether modems no [modem.NAME] pins are claimed too; checked against device = at the end. */
static int parse_discovery(struct setter *s, const struct key *k, const char *value)
{
	return parse_bool(s, k, value, &s->config->discovery);
}

/* Specs separated by blanks; the key may be given again, each adds to the list. */
static int parse_exclude(struct setter *s, const struct key *k, const char *value)
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

static int parse_qmap_version(struct setter *s, const struct key *k, const char *value)
{
	if (strcmp(value, "1") == 0)
		s->device->qmap_version = QMAP_V1;
	else if (strcmp(value, "5") == 0)
		s->device->qmap_version = QMAP_V5;
	else
		return invalid(s, k, value, "expected 1 or 5");
	return 0;
}

static int parse_ntb_format(struct setter *s, const struct key *k, const char *value)
{
	if (strcmp(value, "16") == 0)
		s->device->ntb_format = 16;
	else if (strcmp(value, "32") == 0)
		s->device->ntb_format = 32;
	else
		return invalid(s, k, value, "expected 16 or 32");
	return 0;
}

static int parse_dl_max_size(struct setter *s, const struct key *k, const char *value)
{
	return parse_range(s, k, value, CONFIG_DL_MAX_SIZE_MIN, CONFIG_DL_MAX_SIZE_MAX,
			   &s->device->dl_max_size);
}

static int parse_rx_transfers(struct setter *s, const struct key *k, const char *value)
{
	uint32_t v;

	/* Fewer transfers in flight lose downlink data under load (docs/ARCHITECTURE.md "Lesson 2: batching"). */
	if (parse_u32(value, &v) == 0 && v < CONFIG_RX_TRANSFERS_MIN)
		return invalid(s, k, value, "at least 16 transfers are always kept in flight");
	return parse_range(s, k, value, CONFIG_RX_TRANSFERS_MIN, CONFIG_RX_TRANSFERS_MAX,
			   &s->device->rx_transfers);
}

static int parse_ul_max_size(struct setter *s, const struct key *k, const char *value)
{
	return parse_range(s, k, value, UL_MAX_SIZE_MIN, UL_MAX_SIZE_MAX, &s->device->ul_max_size);
}

static int parse_ul_max_datagrams(struct setter *s, const struct key *k, const char *value)
{
	return parse_range(s, k, value, UL_MAX_DATAGRAMS_MIN, UL_MAX_DATAGRAMS_MAX,
			   &s->device->ul_max_datagrams);
}

static int parse_max_packet_size(struct setter *s, const struct key *k, const char *value)
{
	uint32_t v;

	/* The wMaxPacketSize values USB allows for bulk endpoints: full, high, super speed. */
	if (parse_u32(value, &v) < 0 || (v != 64 && v != 512 && v != 1024))
		return invalid(s, k, value, "expected 64, 512 or 1024");
	s->device->max_packet_size = v;
	return 0;
}

static int parse_persist_devices(struct setter *s, const struct key *k, const char *value)
{
	return parse_bool(s, k, value, &s->device->persist_devices);
}

static int parse_control(struct setter *s, const struct key *k, const char *value)
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

static int parse_control_link(struct setter *s, const struct key *k, const char *value)
{
	return parse_path(s, k, value, sizeof(s->device->control_link), s->device->control_link);
}

static int parse_control_socket(struct setter *s, const struct key *k, const char *value)
{
	/* bind() takes at most sun_path's 108 bytes with the NUL. */
	return parse_path(s, k, value, sizeof(s->device->control_socket),
			  s->device->control_socket);
}

static int parse_admin_group(struct setter *s, const struct key *k, const char *value)
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
static int parse_dbus(struct setter *s, const struct key *k, const char *value)
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

static int parse_dbus_enabled(struct setter *s, const struct key *k, const char *value)
{
	static const enum config_dbus_enabled all[] = { CONFIG_DBUS_ENABLED_AUTO,
							CONFIG_DBUS_ENABLED_YES,
							CONFIG_DBUS_ENABLED_NO };

	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (strcmp(value, config_dbus_enabled_to_string(all[i])) == 0) {
			s->config->dbus.enabled = all[i];
			return 0;
		}
	return invalid(s, k, value, "expected auto, yes or no");
}

static int parse_dbus_bus(struct setter *s, const struct key *k, const char *value)
{
	if (strcmp(value, "system") == 0)
		s->config->dbus.bus = CONFIG_DBUS_SYSTEM;
	else if (strcmp(value, "session") == 0)
		s->config->dbus.bus = CONFIG_DBUS_SESSION;
	else
		return invalid(s, k, value, "expected system or session");
	return 0;
}

static int parse_interface(struct setter *s, const struct key *k, const char *value)
{
	if (!ifname_is_valid(value))
		return invalid(s, k, value,
			       "1 to 15 printable characters without blanks, '/', ':' or '%'");
	strcpy(s->mux->interface, value);
	s->mux->interface_set = true;
	return 0;
}

/* 3GPP TS 23.003 9.1: dot-separated labels of letters, digits and hyphens; empty = default. */
static int parse_apn(struct setter *s, const struct key *k, const char *value)
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

static int parse_ip_type(struct setter *s, const struct key *k, const char *value)
{
	static const enum config_ip_type types[] = { CONFIG_IP_TYPE_IPV4, CONFIG_IP_TYPE_IPV6,
						     CONFIG_IP_TYPE_IPV4V6 };

	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (strcmp(value, config_ip_type_to_string(types[i])) == 0) {
			s->mux->ip_type = types[i];
			return 0;
		}
	return invalid(s, k, value, "expected ipv4, ipv6 or ipv4v6");
}

/* ModemManager's syntax: "pap|chap"; "none" only on its own. */
static int parse_allowed_auth(struct setter *s, const struct key *k, const char *value)
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

static int parse_user(struct setter *s, const struct key *k, const char *value)
{
	if (!is_printable(value, true))
		return invalid(s, k, value, "only printable ASCII is allowed");
	strcpy(s->mux->user, value);
	return 0;
}

static int parse_password(struct setter *s, const struct key *k, const char *value)
{
	/* A secret: never copied into a message that ends up in the journal. */
	if (!is_printable(value, true))
		return setter_error(s, "invalid %s%s: only printable ASCII is allowed", k->name,
				    s->where);
	strcpy(s->mux->password, value);
	return 0;
}

static int parse_mtu(struct setter *s, const struct key *k, const char *value)
{
	return parse_range(s, k, value, MTU_MIN, MTU_MAX, &s->mux->mtu);
}

static int parse_headroom(struct setter *s, const struct key *k, const char *value)
{
	static const enum config_headroom modes[] = { CONFIG_HEADROOM_XDP, CONFIG_HEADROOM_OFF,
						      CONFIG_HEADROOM_AUTO };

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (strcmp(value, config_headroom_to_string(modes[i])) == 0) {
			s->mux->headroom = modes[i];
			return 0;
		}
	return invalid(s, k, value, "expected auto, xdp or off");
}

static int parse_address(struct setter *s, const struct key *k, const char *value, int family,
			 struct config_prefix *ret)
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

static int parse_ipv4_address(struct setter *s, const struct key *k, const char *value)
{
	return parse_address(s, k, value, AF_INET, &s->mux->ipv4_address);
}

static int parse_ipv6_address(struct setter *s, const struct key *k, const char *value)
{
	return parse_address(s, k, value, AF_INET6, &s->mux->ipv6_address);
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
static int parse_routes(struct setter *s, const struct key *k, const char *value)
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

static int parse_route_metric(struct setter *s, const struct key *k, const char *value)
{
	return parse_range(s, k, value, 0, UINT32_MAX, &s->mux->route_metric);
}

static int parse_default_route(struct setter *s, const struct key *k, const char *value)
{
	return parse_bool(s, k, value, &s->mux->default_route);
}

static int parse_autoconnect(struct setter *s, const struct key *k, const char *value)
{
	return parse_bool(s, k, value, &s->mux->autoconnect);
}

static int parse_uplink_queue(struct setter *s, const struct key *k, const char *value)
{
	static const enum config_uplink_queue modes[] = { CONFIG_UPLINK_QUEUE_FQ_CODEL,
							  CONFIG_UPLINK_QUEUE_FIFO };

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (strcmp(value, config_uplink_queue_to_string(modes[i])) == 0) {
			s->mux->uplink_queue = modes[i];
			return 0;
		}
	return invalid(s, k, value, "expected fq-codel or fifo");
}

/* A duration: decimal with a unit, us, ms or s ("5ms", "100ms", "500us"). */
static int parse_duration_us(struct setter *s, const struct key *k, const char *value,
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
		if (parse_u32(digits, &v) < 0 || (uint64_t)v * units[i].us < min_us ||
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

static int parse_codel_target(struct setter *s, const struct key *k, const char *value)
{
	return parse_duration_us(s, k, value, 100, 1000000, &s->mux->codel_target_us);
}

static int parse_codel_interval(struct setter *s, const struct key *k, const char *value)
{
	return parse_duration_us(s, k, value, 1000, 10000000, &s->mux->codel_interval_us);
}

/*
 * Bits per second, decimal, with an optional k, M or G (powers of 1000); 0 = no shaper;
 * auto = the shaper follows the modem's rate estimated from OUT completions.
 */
static int parse_uplink_rate(struct setter *s, const struct key *k, const char *value)
{
	static const char *const why =
		"expected bits per second such as 20M, 950k, 0 (off) or auto";
	char digits[16];
	size_t n = strspn(value, "0123456789");
	uint64_t mult = 1;
	uint32_t v;

	s->device->uplink_rate_auto = strcmp(value, "auto") == 0;
	if (s->device->uplink_rate_auto) {
		s->device->uplink_rate = 0;
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
	if (parse_u32(digits, &v) < 0 || (uint64_t)v * mult > 100000000000ULL ||
	    (v != 0 && (uint64_t)v * mult < 64000))
		return invalid(s, k, value, "must be 0 or 64k..100G");
	s->device->uplink_rate = (uint64_t)v * mult;
	return 0;
}

static const struct key keys[_KEY_MAX] = {
	[KEY_DEVICE] = { "device", SECTION_DEVICE, parse_device },
	[KEY_QMAP_VERSION] = { "qmap-version", SECTION_DEVICE, parse_qmap_version },
	[KEY_NTB_FORMAT] = { "ntb-format", SECTION_DEVICE, parse_ntb_format },
	[KEY_DL_MAX_SIZE] = { "dl-max-size", SECTION_DEVICE, parse_dl_max_size },
	[KEY_RX_TRANSFERS] = { "rx-transfers", SECTION_DEVICE, parse_rx_transfers },
	[KEY_UL_MAX_SIZE] = { "ul-max-size", SECTION_DEVICE, parse_ul_max_size },
	[KEY_UL_MAX_DATAGRAMS] = { "ul-max-datagrams", SECTION_DEVICE, parse_ul_max_datagrams },
	[KEY_MAX_PACKET_SIZE] = { "max-packet-size", SECTION_DEVICE, parse_max_packet_size },
	[KEY_PERSIST_DEVICES] = { "persist-devices", SECTION_DEVICE, parse_persist_devices },
	[KEY_CONTROL] = { "control", SECTION_DEVICE, parse_control },
	[KEY_CONTROL_LINK] = { "control-link", SECTION_DEVICE, parse_control_link },
	[KEY_CONTROL_SOCKET] = { "control-socket", SECTION_DEVICE, parse_control_socket, true },
	[KEY_ADMIN_GROUP] = { "admin-group", SECTION_DEVICE, parse_admin_group, true },
	[KEY_DBUS] = { "dbus", SECTION_DEVICE, parse_dbus, true },
	[KEY_INTERFACE] = { "interface", SECTION_MUX, parse_interface },
	[KEY_APN] = { "apn", SECTION_MUX, parse_apn },
	[KEY_IP_TYPE] = { "ip-type", SECTION_MUX, parse_ip_type },
	[KEY_ALLOWED_AUTH] = { "allowed-auth", SECTION_MUX, parse_allowed_auth },
	[KEY_USER] = { "user", SECTION_MUX, parse_user },
	[KEY_PASSWORD] = { "password", SECTION_MUX, parse_password },
	[KEY_MTU] = { "mtu", SECTION_MUX, parse_mtu },
	[KEY_HEADROOM] = { "headroom", SECTION_MUX, parse_headroom },
	[KEY_IPV4_ADDRESS] = { "ipv4-address", SECTION_MUX, parse_ipv4_address },
	[KEY_IPV6_ADDRESS] = { "ipv6-address", SECTION_MUX, parse_ipv6_address },
	[KEY_ROUTES] = { "routes", SECTION_MUX, parse_routes },
	[KEY_ROUTE_METRIC] = { "route-metric", SECTION_MUX, parse_route_metric },
	[KEY_DEFAULT_ROUTE] = { "default-route", SECTION_MUX, parse_default_route },
	[KEY_AUTOCONNECT] = { "autoconnect", SECTION_MUX, parse_autoconnect },
	[KEY_UPLINK_QUEUE] = { "uplink-queue", SECTION_MUX, parse_uplink_queue },
	[KEY_CODEL_TARGET] = { "codel-target", SECTION_MUX, parse_codel_target },
	[KEY_CODEL_INTERVAL] = { "codel-interval", SECTION_MUX, parse_codel_interval },
	[KEY_UPLINK_RATE] = { "uplink-rate", SECTION_DEVICE, parse_uplink_rate },
	[KEY_NAME] = { "name", SECTION_DEVICE, parse_name, true },
	[KEY_EXCLUDE] = { "exclude", SECTION_DEVICE, parse_exclude, true },
	[KEY_DISCOVERY] = { "discovery", SECTION_DEVICE, parse_discovery, true },
	[KEY_DBUS_ENABLED] = { "enabled", SECTION_DBUS, parse_dbus_enabled, true },
	[KEY_DBUS_BUS] = { "bus", SECTION_DBUS, parse_dbus_bus, true },
};

/*
 * The key called name in section; NULL if there is none, with *ret_hint saying where a key of
 * that name belongs instead ("" if nowhere).
 */
static const struct key *key_find(const char *name, enum section_kind section,
				  const char **ret_hint)
{
	bool modem = section == SECTION_MODEM || section == SECTION_MODEM_MUX;
	enum section_kind want = section == SECTION_MODEM	? SECTION_DEVICE
				 : section == SECTION_MODEM_MUX ? SECTION_MUX
								: section;
	const struct key *k = NULL;

	*ret_hint = "";
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (strcmp(keys[i].name, name) != 0)
			continue;
		if (keys[i].section == want && !(section == SECTION_MODEM && keys[i].daemon_wide))
			k = &keys[i];
		else if (keys[i].section == SECTION_DBUS)
			*ret_hint = " (it belongs in [dbus])";
		else if (i == KEY_NAME && section == SECTION_MODEM)
			*ret_hint = " (the modem's name is the one in the section header)";
		else if (keys[i].daemon_wide && section == SECTION_MODEM)
			*ret_hint = " (it is for the whole daemon: it belongs in [device])";
		else if (keys[i].section == SECTION_MUX)
			*ret_hint = modem ? " (it belongs in [modem.NAME.mux.N])"
					  : " (it belongs in [mux.N])";
		else
			*ret_hint = modem ? " (it belongs in [modem.NAME])"
					  : " (it belongs in [device])";
	}
	return k;
}

/* The checks every value gets, then the key's own parser. */
static int setter_apply(struct setter *s, const struct key *k, const char *value)
{
	/* The file cannot hold longer values (inih would cut them); the control socket can. */
	if (strlen(value) > CONFIG_VALUE_MAX)
		return setter_error(s, "value of '%s'%s too long (%zu bytes, at most %d)", k->name,
				    s->where, strlen(value), CONFIG_VALUE_MAX);
	return k->parse(s, k, value);
}

static const char *family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

/*
 * Checks that need the whole mux, e.g. mtu against an ip-type given after it. On failure
 * *ret_key is the key the message is about, for the file parser to name its line.
 */
static int mux_check(struct setter *s, enum key_id *ret_key)
{
	const struct config_mux *m = s->mux;
	bool has4 = m->ip_type != CONFIG_IP_TYPE_IPV6;
	bool has6 = m->ip_type != CONFIG_IP_TYPE_IPV4;

	if (has6 && m->mtu < MTU_IPV6_MIN) {
		*ret_key = KEY_MTU;
		return setter_error(
			s, "invalid mtu '%" PRIu32 "'%s: ip-type '%s' needs at least %d", m->mtu,
			s->where, config_ip_type_to_string(m->ip_type), MTU_IPV6_MIN);
	}
	if (!has4 && m->ipv4_address.family) {
		*ret_key = KEY_IPV4_ADDRESS;
		return setter_error(s, "ipv4-address%s needs ip-type ipv4 or ipv4v6, not '%s'",
				    s->where, config_ip_type_to_string(m->ip_type));
	}
	if (!has6 && m->ipv6_address.family) {
		*ret_key = KEY_IPV6_ADDRESS;
		return setter_error(s, "ipv6-address%s needs ip-type ipv6 or ipv4v6, not '%s'",
				    s->where, config_ip_type_to_string(m->ip_type));
	}
	if (m->codel_interval_us < m->codel_target_us) {
		*ret_key = KEY_CODEL_INTERVAL;
		return setter_error(s,
				    "codel-interval %" PRIu32
				    "us%s is shorter than codel-target %" PRIu32 "us",
				    m->codel_interval_us, s->where, m->codel_target_us);
	}
	for (unsigned i = 0; i < m->n_routes; i++) {
		const struct config_prefix *r = &m->routes[i];

		if ((r->family == AF_INET && !has4) || (r->family == AF_INET6 && !has6)) {
			*ret_key = KEY_ROUTES;
			return setter_error(s, "%s route%s but ip-type is '%s'",
					    family_name(r->family), s->where,
					    config_ip_type_to_string(m->ip_type));
		}
		/* Both would install the same default route and the second would fail. */
		if (m->default_route && r->prefixlen == 0) {
			*ret_key = KEY_DEFAULT_ROUTE;
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
	struct setter s = { .mux = m, .where = "", .err = err, .errlen = errlen };
	const struct key *k;
	const char *hint;

	if (err && errlen > 0)
		err[0] = '\0';
	if (!m || !key || !value)
		return setter_error(&s, "no key or value");

	k = key_find(key, SECTION_MUX, &hint);
	if (!k)
		return setter_error(&s, "unknown key %s%s", QUOTE(key), hint);
	return setter_apply(&s, k, value);
}

int config_mux_finish(struct config_mux *m, char *err, size_t errlen)
{
	struct setter s = { .mux = m, .where = "", .err = err, .errlen = errlen };
	enum key_id key;
	int r;

	if (err && errlen > 0)
		err[0] = '\0';
	if (!m)
		return setter_error(&s, "no mux");
	if (m->id < CONFIG_MUX_ID_MIN || m->id > CONFIG_MUX_ID_MAX)
		return setter_error(&s, "invalid mux id %u: expected %d..%d", (unsigned)m->id,
				    CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
	r = mux_check(&s, &key);
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
	d->control = CONFIG_CONTROL_QMI;
	d->control_auto = true;
	strcpy(d->control_link, CONFIG_CONTROL_LINK_DEFAULT);
	strcpy(d->control_socket, CONFIG_CONTROL_SOCKET_DEFAULT);
	d->admin_group[0] = '\0';
}

void config_init_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	config_device_init_defaults(&c->device);
	c->dbus.enabled = CONFIG_DBUS_ENABLED_AUTO;
	c->dbus.bus = CONFIG_DBUS_SYSTEM;
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		config_mux_init_defaults(&c->mux[id], id);
}

/*
 * The file's cross-key checks of a finished section, reported at the line of the key.
 * Whether interface names collide is known only at the end, when the default names are.
 */
static int parser_finish_section(struct parser *p)
{
	struct config_mux *m = p->mux;
	char msg[CONFIG_ERROR_MAX];
	struct setter s = { .mux = m, .where = p->where, .err = msg, .errlen = sizeof(msg) };
	enum key_id key = _KEY_MAX;

	if (p->section != SECTION_MUX && p->section != SECTION_MODEM_MUX)
		return 0;

	if (mux_check(&s, &key) < 0)
		return parser_error(p, (key < _KEY_MAX ? p->key_line[key] : 0) ?: p->section_line,
				    "%s", msg);
	return 0;
}

/* The modem called name, created with every default when first named. */
static int parser_modem(struct parser *p, const char *name, unsigned *ret)
{
	struct config *c = p->config;
	struct config_modem *modems;
	struct modem_record *records;
	unsigned n = c->n_modems;

	for (unsigned i = 0; i < n; i++)
		if (strcmp(c->modem[i].name, name) == 0) {
			*ret = i;
			return 0;
		}
	if (n >= CONFIG_MAX_MODEMS)
		return parser_error(p, p->line, "too many modems: at most %d", CONFIG_MAX_MODEMS);

	/* Grown one at a time: a modem is some 230 KB, most files name one or two. */
	modems = realloc(c->modem, (n + 1) * sizeof(*modems));
	if (!modems)
		goto oom;
	c->modem = modems;
	records = realloc(p->record, (n + 1) * sizeof(*records));
	if (!records)
		goto oom;
	p->record = records;

	memset(&modems[n], 0, sizeof(modems[n]));
	strcpy(modems[n].name, name);
	config_device_init_defaults(&modems[n].device);
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		config_mux_init_defaults(&modems[n].mux[id], id);
	memset(&records[n], 0, sizeof(records[n]));
	records[n].first_line = p->line;
	c->n_modems = n + 1;
	*ret = n;
	return 0;

oom:
	p->oom = true;
	return parser_error(p, 0, "out of memory");
}

/* "modem.NAME" or "modem.NAME.mux.N". */
static int parser_section_modem(struct parser *p, const char *name)
{
	const char *n = name + strlen("modem."), *dot = strchr(n, '.');
	size_t len = dot ? (size_t)(dot - n) : strlen(n);
	char modem[CONFIG_MODEM_NAME_MAX + 1];
	struct modem_record *rec;
	uint32_t id = 0;
	unsigned idx = 0;

	if (len <= CONFIG_MODEM_NAME_MAX) {
		memcpy(modem, n, len);
		modem[len] = '\0';
	}
	if (len > CONFIG_MODEM_NAME_MAX || !config_modem_name_is_valid(modem))
		return parser_error(p, p->line,
				    "invalid section %s: expected modem.NAME, NAME 1 to %d of a-z, "
				    "0-9, '_' and '-'",
				    QUOTE(name), CONFIG_MODEM_NAME_MAX);
	if (dot && (strncmp(dot, ".mux.", 5) != 0 || parse_u32(dot + 5, &id) < 0 ||
		    id < CONFIG_MUX_ID_MIN || id > CONFIG_MUX_ID_MAX))
		return parser_error(p, p->line,
				    "invalid section %s: expected modem.NAME.mux.N with N = %d..%d",
				    QUOTE(name), CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
	if (parser_modem(p, modem, &idx) < 0)
		return -EINVAL;
	rec = &p->record[idx];
	p->modem = idx;

	if (!dot) {
		if (rec->section_line)
			return parser_error(p, p->line, "repeated section [%s] (first at line %u)",
					    name, rec->section_line);
		rec->section_line = p->line;
		p->section = SECTION_MODEM;
		snprintf(p->section_name, sizeof(p->section_name), "modem.%s", modem);
		p->mux = NULL;
		return 0;
	}
	if (rec->mux_line[id])
		return parser_error(p, p->line,
				    "repeated section [modem.%s.mux.%u] (first at line %u)", modem,
				    (unsigned)id, rec->mux_line[id]);
	rec->mux_line[id] = p->line;
	p->section = SECTION_MODEM_MUX;
	snprintf(p->section_name, sizeof(p->section_name), "modem.%s.mux.%u", modem, (unsigned)id);
	p->mux = &p->config->modem[idx].mux[id];
	config_mux_init_defaults(p->mux, id);
	p->mux->present = true;
	return 0;
}

/* "device", "mux.N" (N = 1..254 in plain decimal), "modem.NAME" or "modem.NAME.mux.N". */
static int parser_section(struct parser *p, const char *line)
{
	const char *close = strchr(line, ']'), *tail;
	char name[64];
	size_t n;
	uint32_t id;

	if (!close)
		return parser_error(p, p->line, "missing ']' in section header %s", QUOTE(line));
	tail = close + 1 + strspn(close + 1, " \t\r\v\f");
	if (*tail && *tail != ';' && *tail != '#')
		return parser_error(p, p->line, "unexpected %s after section header", QUOTE(tail));

	n = (size_t)(close - line - 1);
	if (n >= sizeof(name))
		n = sizeof(name) - 1; /* too long to be valid; the quote shows the start */
	memcpy(name, line + 1, n);
	name[n] = '\0';

	/* The previous section's errors come from earlier lines, so they are reported first. */
	if (parser_finish_section(p) < 0)
		return -EINVAL;

	if (strcmp(name, "device") == 0) {
		if (p->device_line)
			return parser_error(p, p->line,
					    "repeated section [device] (first at line %u)",
					    p->device_line);
		p->device_line = p->line;
		p->section = SECTION_DEVICE;
		strcpy(p->section_name, "device");
		p->mux = NULL;
	} else if (strcmp(name, "dbus") == 0) {
		if (p->dbus_line)
			return parser_error(p, p->line,
					    "repeated section [dbus] (first at line %u)",
					    p->dbus_line);
		p->dbus_line = p->line;
		p->section = SECTION_DBUS;
		strcpy(p->section_name, "dbus");
		p->mux = NULL;
	} else if (strncmp(name, "mux.", 4) == 0) {
		if (parse_u32(name + 4, &id) < 0 || id < CONFIG_MUX_ID_MIN ||
		    id > CONFIG_MUX_ID_MAX)
			return parser_error(p, p->line,
					    "invalid section %s: expected mux.N with N = %d..%d",
					    QUOTE(name), CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
		if (p->mux_line[id])
			return parser_error(p, p->line, "repeated section [%s] (first at line %u)",
					    name, p->mux_line[id]);
		p->mux_line[id] = p->line;
		p->section = SECTION_MUX;
		snprintf(p->section_name, sizeof(p->section_name), "mux.%u", (unsigned)id);
		p->mux = &p->config->mux[id];
		config_mux_init_defaults(p->mux, id);
		p->mux->present = true;
	} else if (strncmp(name, "modem.", 6) == 0) {
		if (parser_section_modem(p, name) < 0)
			return -EINVAL;
	} else {
		return parser_error(p, p->line,
				    "unknown section %s: expected device, dbus, mux.N, modem.NAME "
				    "or modem.NAME.mux.N",
				    QUOTE(name));
	}

	snprintf(p->where, sizeof(p->where), " in [%s]", p->section_name);
	p->section_line = p->line;
	memset(p->key_line, 0, sizeof(p->key_line));
	return 0;
}

/* inih's own test for "key = value": '=' or ':' before any inline comment. */
static bool has_separator(const char *s)
{
	bool was_space = false;

	for (; *s; s++) {
		if (*s == '=' || *s == ':')
			return true;
		if (was_space && *s == ';')
			return false;
		was_space = isspace((unsigned char)*s);
	}
	return false;
}

/* An ini_reader: see the comment at the top of this file. */
static char *parser_read_line(char *str, int num, void *userdata)
{
	struct parser *p = userdata;
	const char *s = p->next;
	size_t len, max;

	if (p->failed || !*s)
		return NULL;

	len = strcspn(s, "\n");
	p->next = s + len + (s[len] == '\n');
	p->line++;
	if (len > 0 && s[len - 1] == '\r')
		len--;
	if (p->line == 1 && len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
		s += 3;
		len -= 3;
	}

	max = num > 1 ? (size_t)num - 1 : 0;
	if (len > max) {
		parser_error(p, p->line, "line too long (%zu bytes, at most %zu)", len, max);
		return NULL;
	}
	while (len > 0 && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	memcpy(str, s, len);
	str[len] = '\0';

	if (str[0] == '[') {
		if (parser_section(p, str) < 0)
			return NULL;
	} else if (str[0] && str[0] != ';' && str[0] != '#' && !has_separator(str)) {
		parser_error(p, p->line, "expected 'key = value', got %s", QUOTE(str));
		return NULL;
	}
	return str;
}

static int parser_handle(void *userdata, const char *section, const char *name, const char *value)
{
	struct parser *p = userdata;
	char msg[CONFIG_ERROR_MAX];
	struct setter s = {
		.config = p->config,
		.device = &p->config->device,
		.mux = p->mux,
		.name = p->modem_name,
		.section = p->section,
		.where = p->where,
		.err = msg,
		.errlen = sizeof(msg),
	};
	const struct key *k;
	const char *hint;
	enum key_id id;

	if (p->failed)
		return 0;
	/* Only an inih built with INI_ALLOW_NO_VALUE passes NULL; the reader catches it first. */
	if (!name || !value) {
		parser_error(p, p->line, "expected 'key = value'");
		return 0;
	}
	if (p->section == SECTION_NONE) {
		parser_error(p, p->line, "key %s outside any section", QUOTE(name));
		return 0;
	}
	/* Cannot differ, as the reader saw the same header; but never act on a mismatch. */
	if (!section || strcmp(section, p->section_name) != 0) {
		parser_error(p, p->line, "key %s in unexpected section %s", QUOTE(name),
			     QUOTE(section ?: ""));
		return 0;
	}

	k = key_find(name, p->section, &hint);
	if (!k) {
		parser_error(p, p->line, "unknown key %s in [%s]%s", QUOTE(name), p->section_name,
			     hint);
		return 0;
	}
	id = (enum key_id)(k - keys);

	/* exclude adds to its list each time. */
	if (p->key_line[id] && id != KEY_EXCLUDE) {
		parser_error(p, p->line, "repeated key '%s' in [%s] (first at line %u)", k->name,
			     p->section_name, p->key_line[id]);
		return 0;
	}
	p->key_line[id] = p->line;

	if (p->section == SECTION_MODEM)
		s.device = &p->config->modem[p->modem].device;
	if (setter_apply(&s, k, value) < 0) {
		parser_error(p, p->line, "%s", msg);
		return 0;
	}

	switch (p->section) {
	case SECTION_DEVICE:
		p->device_key_line[id] = p->line;
		break;
	case SECTION_MUX:
		if (id == KEY_INTERFACE)
			p->interface_line[p->mux->id] = p->line;
		break;
	case SECTION_MODEM:
		/* Applied over [device] at the end, wherever [device] is in the file. */
		p->record[p->modem].key_line[id] = p->line;
		strcpy(p->record[p->modem].value[id], value);
		break;
	case SECTION_MODEM_MUX:
		if (id == KEY_INTERFACE)
			p->record[p->modem].interface_line[p->mux->id] = p->line;
		break;
	case SECTION_DBUS:
	case SECTION_NONE:
		break;
	}
	return 1;
}

static void config_freep(struct config **c)
{
	config_free(*c);
}

/* The same modem, whatever the spelling: usb:2C7C:125 is usb:2c7c:0125. */
static bool same_spec(const char *a, const char *b)
{
	struct usb_spec x, y;

	if (usb_spec_is_usb(a) && usb_spec_is_usb(b) && usb_spec_parse(a, &x, NULL, 0) == 0 &&
	    usb_spec_parse(b, &y, NULL, 0) == 0) {
		if (x.kind != y.kind)
			return false;
		if (x.kind == USB_SPEC_ID)
			return x.vid == y.vid && x.pid == y.pid;
		return x.bus == y.bus && x.n_ports == y.n_ports &&
		       memcmp(x.ports, y.ports, x.n_ports) == 0;
	}
	return strcmp(a, b) == 0;
}

/* A mux whose interface name must be unique, and where the file says so. */
struct mux_ref {
	const struct config_mux *mux;
	const char *modem; /* NULL: top-level [mux.N] */
	unsigned line;	   /* of interface =, else of the section */
};

static void mux_ref_section(const struct mux_ref *r, char *buf, size_t len)
{
	if (r->modem)
		snprintf(buf, len, "modem.%s.mux.%u", r->modem, (unsigned)r->mux->id);
	else
		snprintf(buf, len, "mux.%u", (unsigned)r->mux->id);
}

/* Two muxes with one interface name: reported at the later of the two in the file. */
static int check_interfaces(struct parser *p, bool legacy)
{
	struct config *c = p->config;
	_cleanup_free_ struct mux_ref *refs = NULL;
	size_t n = 0;

	refs = malloc((size_t)(c->n_modems + 1) * CONFIG_MUX_ID_MAX * sizeof(*refs));
	if (!refs) {
		p->oom = true;
		return parser_error(p, 0, "out of memory");
	}
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct config_mux *m = &c->mux[id];

		/* A template mux gets "<modem>.<N>" unless it names its interface. */
		if (m->present && (legacy || m->interface_set))
			refs[n++] = (struct mux_ref){ m, NULL,
						      p->interface_line[id] ?: p->mux_line[id] };
	}
	for (unsigned i = 0; !legacy && i < c->n_modems; i++)
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
			if (c->modem[i].mux[id].present)
				refs[n++] =
					(struct mux_ref){ &c->modem[i].mux[id], c->modem[i].name,
							  p->record[i].interface_line[id]
								  ?: p->record[i].mux_line[id] };

	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < j; i++) {
			const struct mux_ref *a = &refs[i], *b = &refs[j];
			char in[SECTION_NAME_SIZE], by[SECTION_NAME_SIZE];

			if (strcmp(a->mux->interface, b->mux->interface) != 0)
				continue;
			if (a->line > b->line) {
				const struct mux_ref *t = a;
				a = b;
				b = t;
			}
			mux_ref_section(b, in, sizeof(in));
			mux_ref_section(a, by, sizeof(by));
			return parser_error(p, b->line,
					    "interface %s in [%s] is already used by [%s]",
					    QUOTE(b->mux->interface), in, by);
		}
	return 0;
}

/* device = SPEC in [device] and no [modem.NAME]: the one modem of old, as it always was. */
static int finish_legacy(struct parser *p)
{
	struct config *c = p->config;

	if (check_interfaces(p, true) < 0)
		return -EINVAL;
	/* qmapd would bind its control socket over the modem's control link, or the reverse. */
	if (strcmp(c->device.control_link, c->device.control_socket) == 0)
		return parser_error(p, 0, "control-link and control-socket in [device] are both %s",
				    QUOTE(c->device.control_link));

	c->modem = calloc(1, sizeof(*c->modem));
	if (!c->modem) {
		p->oom = true;
		return parser_error(p, 0, "out of memory");
	}
	c->n_modems = 1;
	strcpy(c->modem[0].name, p->modem_name[0] ? p->modem_name : CONFIG_MODEM_NAME_DEFAULT);
	memcpy(&c->modem[0].device, &c->device, sizeof(c->device));
	memcpy(c->modem[0].mux, c->mux, sizeof(c->mux));
	return 0;
}

static void modem_apply_naming(struct config_modem *m, bool control_link_set);

/* Discovery, with or without [modem.NAME] sections. */
static int finish_modems(struct parser *p)
{
	struct config *c = p->config;

	if (!p->device_key_line[KEY_DISCOVERY])
		c->discovery = true;
	else if (!c->discovery && c->n_modems == 0)
		return parser_error(p, p->device_key_line[KEY_DISCOVERY],
				    "discovery is off and no [modem.NAME] section names a modem: "
				    "nothing to serve");
	if (p->device_key_line[KEY_NAME])
		return parser_error(p, p->device_key_line[KEY_NAME],
				    "name in [device] names the one modem of 'device = SPEC'; "
				    "without it, name modems with [modem.NAME] sections");
	/* One path cannot be the link of every modem. */
	if (p->device_key_line[KEY_CONTROL_LINK])
		return parser_error(p, p->device_key_line[KEY_CONTROL_LINK],
				    "control-link in [device] is for the one modem of "
				    "'device = SPEC'; set it in each [modem.NAME] (default "
				    "/run/qmapd/NAME.qmi)");

	for (unsigned i = 0; i < c->n_modems; i++) {
		struct config_modem *m = &c->modem[i];
		struct modem_record *rec = &p->record[i];
		struct config_device d;
		char msg[CONFIG_ERROR_MAX];
		struct setter s = { .config = c,
				    .device = &d,
				    .section = SECTION_MODEM,
				    .where = "",
				    .err = msg,
				    .errlen = sizeof(msg) };

		/* memcpy, not assignment: padding too, so that equal modems compare equal. */
		memcpy(&d, &c->device, sizeof(d));
		if (!rec->section_line)
			return parser_error(p, rec->first_line,
					    "no [modem.%s] section for this [modem.%s.mux.N]",
					    m->name, m->name);
		if (!rec->key_line[KEY_DEVICE])
			return parser_error(p, rec->section_line, "missing 'device' in [modem.%s]",
					    m->name);
		/* Already judged when read: applying them again over [device] cannot fail. */
		for (unsigned k = 0; k < _KEY_MAX; k++)
			if (rec->key_line[k] && setter_apply(&s, &keys[k], rec->value[k]) < 0)
				return parser_error(p, rec->key_line[k], "%s", msg);
		memcpy(&m->device, &d, sizeof(d));
		modem_apply_naming(m, rec->key_line[KEY_CONTROL_LINK] != 0);

		for (unsigned j = 0; j < i; j++) {
			const struct config_modem *o = &c->modem[j];

			if (same_spec(o->device.device, m->device.device))
				return parser_error(p, rec->key_line[KEY_DEVICE],
						    "device %s in [modem.%s] is already the device "
						    "of [modem.%s]",
						    QUOTE(m->device.device), m->name, o->name);
			if (strcmp(o->device.control_link, m->device.control_link) == 0)
				return parser_error(
					p, rec->key_line[KEY_CONTROL_LINK] ?: rec->section_line,
					"control-link %s of [modem.%s] is already the one "
					"of [modem.%s]",
					QUOTE(m->device.control_link), m->name, o->name);
		}
		if (strcmp(m->device.control_link, c->device.control_socket) == 0)
			return parser_error(p, rec->key_line[KEY_CONTROL_LINK] ?: rec->section_line,
					    "control-link %s of [modem.%s] is the control-socket",
					    QUOTE(m->device.control_link), m->name);
	}
	return check_interfaces(p, false);
}

static int config_parse_text(struct parser *p)
{
	struct config *c = p->config;
	int r;

	r = ini_parse_stream(parser_read_line, p, parser_handle, p);
	if (p->failed)
		return p->oom ? -ENOMEM : -EINVAL;
	if (r == -2) {
		parser_error(p, 0, "out of memory");
		return -ENOMEM;
	}
	if (r != 0)
		return parser_error(p, r > 0 ? (unsigned)r : 0, "syntax error");

	if (parser_finish_section(p) < 0)
		return -EINVAL;

	if (p->device_key_line[KEY_DBUS] && p->dbus_line)
		return parser_error(p, p->device_key_line[KEY_DBUS],
				    "dbus in [device] is the deprecated form of [dbus] (line %u): "
				    "keep only [dbus]",
				    p->dbus_line);
	c->dbus.legacy_line = p->device_key_line[KEY_DBUS];
	if (c->device.device[0] && c->n_modems > 0)
		return parser_error(p, p->device_key_line[KEY_DEVICE],
				    "device %s in [device] cannot be used with [modem.NAME] "
				    "sections: put device = in each [modem.NAME]",
				    QUOTE(c->device.device));
	if (c->device.device[0] && p->device_key_line[KEY_DISCOVERY])
		return parser_error(p, p->device_key_line[KEY_DISCOVERY],
				    "discovery in [device] is for configs without 'device = SPEC' "
				    "there: device %s serves exactly that modem",
				    QUOTE(c->device.device));
	r = c->device.device[0] ? finish_legacy(p) : finish_modems(p);
	if (r < 0)
		return p->oom ? -ENOMEM : -EINVAL;
	return 0;
}

static int config_parse(const char *text, const char *name, struct config **ret_config,
			char *errbuf, size_t errlen)
{
	_cleanup_(config_freep) struct config *c = NULL;
	struct parser p = {
		.name = name,
		.next = text,
		.errbuf = errbuf,
		.errlen = errlen,
	};
	int r;

	c = malloc(sizeof(*c));
	if (!c) {
		parser_error(&p, 0, "out of memory");
		return -ENOMEM;
	}
	config_init_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", name);
	p.config = c;

	r = config_parse_text(&p);
	free(p.record);
	if (r < 0)
		return r;
	*ret_config = TAKE_PTR(c);
	return 0;
}

int config_load_string(const char *text, const char *name, struct config **ret_config, char *errbuf,
		       size_t errlen)
{
	if (errbuf && errlen > 0)
		errbuf[0] = '\0';
	if (!name)
		name = "<string>";
	if (!text || !ret_config) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, errlen, "%s: no configuration", name);
		return -EINVAL;
	}
	return config_parse(text, name, ret_config, errbuf, errlen);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Read the whole file, at most FILE_MAX + 1 bytes. A regular file is read as it is; anything
 * else (a FIFO, a pipe from `<(...)`, a character device) is read non-blocking until end of
 * file within FILE_READ_TIMEOUT_MS, so that `qmapd -t` on a FIFO nobody writes ends.
 */
static int read_bounded(int fd, bool regular, char **ret_text, size_t *ret_size)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0, alloc = 0;
	int64_t deadline = now_ms() + FILE_READ_TIMEOUT_MS;

	for (;;) {
		ssize_t n;

		if (alloc - size < 2) {
			size_t new_alloc = alloc ? alloc * 2 : 4096;
			char *t;

			/* One byte beyond FILE_MAX tells a too large file, one more for the NUL. */
			if (new_alloc > FILE_MAX + 2)
				new_alloc = FILE_MAX + 2;
			t = realloc(text, new_alloc);
			if (!t)
				return -ENOMEM;
			text = t;
			alloc = new_alloc;
		}
		n = read(fd, text + size, alloc - size - 1);
		if (n > 0) {
			size += (size_t)n;
			if (size > FILE_MAX)
				return -EFBIG;
			continue;
		}
		/* A FIFO without a writer reads as empty: wait for one, within the bound. */
		if (n == 0 && (regular || size > 0))
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno != EAGAIN || regular))
			return negative_errno();
		{
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			/* POLLHUP without a writer returns at once: poll in short steps. */
			(void)poll(&p, 1, left < 50 ? (int)left : 50);
		}
	}
	text[size] = '\0';
	*ret_text = TAKE_PTR(text);
	*ret_size = size;
	return 0;
}

int config_load_file(const char *path, struct config **ret_config, char *errbuf, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	struct stat st;
	const char *nul;
	int r;

	if (errbuf && errlen > 0)
		errbuf[0] = '\0';
	if (!path || !ret_config) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, errlen, "no configuration file");
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(((struct config *)NULL)->path)) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}

	/* O_NONBLOCK: opening a FIFO must not wait for a writer either. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = negative_errno();
		goto io_error;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto io_error;
	}
	r = read_bounded(fd, S_ISREG(st.st_mode), &text, &size);
	if (r == -EFBIG) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, errlen, "%s: file too large (more than %d bytes)", path,
				 FILE_MAX);
		return r;
	}
	if (r == -ETIMEDOUT) {
		if (errbuf && errlen > 0)
			snprintf(errbuf, errlen, "%s: no complete file within %d s", path,
				 FILE_READ_TIMEOUT_MS / 1000);
		return r;
	}
	if (r < 0)
		goto io_error;

	/* inih and our reader stop at a NUL; what follows it would be silently ignored. */
	nul = memchr(text, '\0', size);
	if (nul) {
		unsigned line = 1;

		for (const char *s = text; s < nul; s++)
			line += *s == '\n';
		if (errbuf && errlen > 0)
			snprintf(errbuf, errlen, "%s:%u: NUL byte", path, line);
		return -EINVAL;
	}

	return config_parse(text, path, ret_config, errbuf, errlen);

io_error:
	if (errbuf && errlen > 0)
		snprintf(errbuf, errlen, "%s: %s", path, strerror(-r));
	return r;
}

struct config *config_free(struct config *c)
{
	if (c)
		free(c->modem);
	free(c);
	return NULL;
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

/*
 * "<modem>.<N>": parent.id as ip(8) shows VLANs (eth0.100) and ModemManager its QMAP links
 * (qmapmux0.0); stable across a replug, as the modem's name is. 11 + 4 bytes fit IFNAMSIZ.
 */
void config_mux_name_for_modem(struct config_mux *m, const char *modem)
{
	if (!m || !modem || m->interface_set)
		return;
	snprintf(m->interface, sizeof(m->interface), "%.*s.%u", CONFIG_MODEM_NAME_MAX, modem,
		 (unsigned)m->id);
}

/* Interface names and the control link of a named (not legacy) modem left at their defaults. */
void config_modem_default_link(struct config_modem *m)
{
	if (!m->device.control_link_default)
		return;
	snprintf(m->device.control_link, sizeof(m->device.control_link), "/run/qmapd/%s.%s",
		 m->name, m->device.control == CONFIG_CONTROL_MBIM ? "mbim" : "qmi");
}

static void modem_apply_naming(struct config_modem *m, bool control_link_set)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		config_mux_name_for_modem(&m->mux[id], m->name);
	m->device.control_link_default = !control_link_set;
	config_modem_default_link(m);
}

int config_modem_from_template(const struct config *c, const char *name, const char *device_spec,
			       struct config_modem *ret)
{
	if (!c || !ret || !config_modem_name_is_valid(name) || !device_spec ||
	    strlen(device_spec) >= sizeof(ret->device.device))
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	strcpy(ret->name, name);
	memcpy(&ret->device, &c->device, sizeof(ret->device));
	strcpy(ret->device.device, device_spec);
	memcpy(ret->mux, c->mux, sizeof(ret->mux));
	/* The [device] control-link names one modem's device: a template cannot share it. */
	modem_apply_naming(ret, false);
	return 0;
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

bool config_spec_needs_serial(const char *spec)
{
	return strncmp(spec, SERIAL_SCHEME, strlen(SERIAL_SCHEME)) == 0;
}

bool config_spec_matches_usb(const char *spec, uint16_t vid, uint16_t pid, const char *path,
			     const char *serial)
{
	static const char serial_scheme[] = "usb-serial:";

	if (!spec)
		return false;
	if (strncmp(spec, serial_scheme, strlen(serial_scheme)) == 0) {
		const char *want = spec + strlen(serial_scheme);

		return *want && serial && strcmp(want, serial) == 0;
	}
	if (usb_spec_is_usb(spec)) {
		struct usb_spec u;
		char buf[USB_SPEC_PATH_MAX];

		if (usb_spec_parse(spec, &u, NULL, 0) < 0)
			return false;
		if (u.kind == USB_SPEC_ID)
			return u.vid == vid && u.pid == pid;
		return path && *usb_spec_format_path(u.bus, u.ports, u.n_ports, buf, sizeof(buf)) &&
		       strcmp(buf, path) == 0;
	}
	return false;
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

		if (parse_u32(slash + 1, &len) < 0 || len > max)
			return -EINVAL;
		a.prefixlen = (uint8_t)len;
	} else {
		a.prefixlen = (uint8_t)max;
	}

	*ret = a;
	return 0;
}
