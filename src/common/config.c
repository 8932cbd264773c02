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
 * The keys themselves, their values and the cross-key checks of a mux are in config-keys.c,
 * shared with config_mux_set() at run time; this file knows files, lines and sections.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config-keys.h"
#include "config.h"
#include "macro.h"
#include "usb-spec.h"

/* 254 muxes with every key set are well under 100 KB; anything much bigger is not a config. */
#define FILE_MAX (1024 * 1024)
/* How long a FIFO or pipe may take to deliver the whole file. */
#define FILE_READ_TIMEOUT_MS 5000
#define QUOTE(s)	     CONFIG_QUOTE(s)

/* "modem.NAME.mux.254" and the NUL */
#define SECTION_NAME_SIZE (sizeof("modem.") + CONFIG_MODEM_NAME_MAX + sizeof(".mux.254") - 1)

/* What the file said about one [modem.NAME], kept until the whole file is read. */
struct modem_record {
	unsigned section_line; /* [modem.NAME]; 0 while only its muxes were seen */
	unsigned first_line;   /* the first section naming this modem */
	unsigned key_line[CONFIG_KEYS_MAX];
	char value[CONFIG_KEYS_MAX][CONFIG_VALUE_MAX + 1]; /* applied over [device] at the end */
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

	enum config_section section;
	char section_name[SECTION_NAME_SIZE];
	char where[sizeof(" in []") + SECTION_NAME_SIZE];
	unsigned section_line;
	struct config_mux *mux; /* the current [mux.N] or [modem.NAME.mux.N] */
	unsigned modem;		/* index of the current [modem.NAME...] */
	unsigned
		key_line[CONFIG_KEYS_MAX]; /* where each key of this section was set, 0 = not set */
	unsigned device_line;		   /* where [device] was, 0 = not yet */
	unsigned dbus_line;		   /* where [dbus] was, 0 = not yet */
	unsigned device_key_line[CONFIG_KEYS_MAX]; /* where each key of [device] was set */
	unsigned mux_line[CONFIG_MUX_ID_MAX + 1];
	unsigned interface_line[CONFIG_MUX_ID_MAX + 1];
	char modem_name[CONFIG_MODEM_NAME_MAX + 1]; /* [device] name = */
	struct modem_record *record;		    /* one per config->modem, same index */
};

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

/* Where key was set (0: not set), in one of the per-key line arrays. */
static unsigned line_of(const unsigned lines[static CONFIG_KEYS_MAX], const char *key)
{
	return lines[config_keys_index(key)];
}

/*
 * The file's cross-key checks of a finished section, reported at the line of the key.
 * Whether interface names collide is known only at the end, when the default names are.
 */
static int parser_finish_section(struct parser *p)
{
	struct config_mux *m = p->mux;
	char msg[CONFIG_ERROR_MAX];
	struct config_setter s = { .mux = m, .where = p->where, .err = msg, .errlen = sizeof(msg) };
	const char *key = NULL;

	if (p->section != CONFIG_SECTION_MUX && p->section != CONFIG_SECTION_MODEM_MUX)
		return 0;

	if (config_keys_check_mux(&s, &key) < 0)
		return parser_error(p, (key ? line_of(p->key_line, key) : 0) ?: p->section_line,
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

	/* Grown one at a time: most files name one or two modems. */
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
	if (dot && (strncmp(dot, ".mux.", 5) != 0 || config_keys_parse_u32(dot + 5, &id) < 0 ||
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
		p->section = CONFIG_SECTION_MODEM;
		snprintf(p->section_name, sizeof(p->section_name), "modem.%s", modem);
		p->mux = NULL;
		return 0;
	}
	if (rec->mux_line[id])
		return parser_error(p, p->line,
				    "repeated section [modem.%s.mux.%u] (first at line %u)", modem,
				    (unsigned)id, rec->mux_line[id]);
	rec->mux_line[id] = p->line;
	p->section = CONFIG_SECTION_MODEM_MUX;
	snprintf(p->section_name, sizeof(p->section_name), "modem.%s.mux.%u", modem, (unsigned)id);
	/* Not repeated (above): only memory can be short. */
	p->mux = config_mux_add(p->config->modem[idx].mux, id);
	if (!p->mux) {
		p->oom = true;
		return parser_error(p, 0, "out of memory");
	}
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
		p->section = CONFIG_SECTION_DEVICE;
		strcpy(p->section_name, "device");
		p->mux = NULL;
	} else if (strcmp(name, "dbus") == 0) {
		if (p->dbus_line)
			return parser_error(p, p->line,
					    "repeated section [dbus] (first at line %u)",
					    p->dbus_line);
		p->dbus_line = p->line;
		p->section = CONFIG_SECTION_DBUS;
		strcpy(p->section_name, "dbus");
		p->mux = NULL;
	} else if (strncmp(name, "mux.", 4) == 0) {
		if (config_keys_parse_u32(name + 4, &id) < 0 || id < CONFIG_MUX_ID_MIN ||
		    id > CONFIG_MUX_ID_MAX)
			return parser_error(p, p->line,
					    "invalid section %s: expected mux.N with N = %d..%d",
					    QUOTE(name), CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
		if (p->mux_line[id])
			return parser_error(p, p->line, "repeated section [%s] (first at line %u)",
					    name, p->mux_line[id]);
		p->mux_line[id] = p->line;
		p->section = CONFIG_SECTION_MUX;
		snprintf(p->section_name, sizeof(p->section_name), "mux.%u", (unsigned)id);
		p->mux = config_mux_add(p->config->mux, id);
		if (!p->mux) {
			p->oom = true;
			return parser_error(p, 0, "out of memory");
		}
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
	struct config_setter s = {
		.config = p->config,
		.device = &p->config->device,
		.mux = p->mux,
		.name = p->modem_name,
		.section = p->section,
		.where = p->where,
		.err = msg,
		.errlen = sizeof(msg),
	};
	const struct config_key *k;
	const char *hint;
	unsigned id;

	if (p->failed)
		return 0;
	/* Only an inih built with INI_ALLOW_NO_VALUE passes NULL; the reader catches it first. */
	if (!name || !value) {
		parser_error(p, p->line, "expected 'key = value'");
		return 0;
	}
	if (p->section == CONFIG_SECTION_NONE) {
		parser_error(p, p->line, "key %s outside any section", QUOTE(name));
		return 0;
	}
	/* Cannot differ, as the reader saw the same header; but never act on a mismatch. */
	if (!section || strcmp(section, p->section_name) != 0) {
		parser_error(p, p->line, "key %s in unexpected section %s", QUOTE(name),
			     QUOTE(section ?: ""));
		return 0;
	}

	k = config_keys_find(name, p->section, &hint);
	if (!k) {
		parser_error(p, p->line, "unknown key %s in [%s]%s", QUOTE(name), p->section_name,
			     hint);
		return 0;
	}
	id = (unsigned)(k - config_keys);

	/* A list key (exclude) adds to its list each time. */
	if (p->key_line[id] && !k->repeatable) {
		parser_error(p, p->line, "repeated key '%s' in [%s] (first at line %u)", k->name,
			     p->section_name, p->key_line[id]);
		return 0;
	}
	p->key_line[id] = p->line;

	if (p->section == CONFIG_SECTION_MODEM)
		s.device = &p->config->modem[p->modem].device;
	if (config_keys_apply(&s, k, value) < 0) {
		parser_error(p, p->line, "%s", msg);
		return 0;
	}

	switch (p->section) {
	case CONFIG_SECTION_DEVICE:
		p->device_key_line[id] = p->line;
		break;
	case CONFIG_SECTION_MUX:
		if (strcmp(k->name, "interface") == 0)
			p->interface_line[p->mux->id] = p->line;
		break;
	case CONFIG_SECTION_MODEM:
		/* Applied over [device] at the end, wherever [device] is in the file. */
		p->record[p->modem].key_line[id] = p->line;
		strcpy(p->record[p->modem].value[id], value);
		break;
	case CONFIG_SECTION_MODEM_MUX:
		if (strcmp(k->name, "interface") == 0)
			p->record[p->modem].interface_line[p->mux->id] = p->line;
		break;
	case CONFIG_SECTION_DBUS:
	case CONFIG_SECTION_NONE:
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
		const struct config_mux *m = c->mux[id];

		/* A template mux gets "<modem>.<N>" unless it names its interface. */
		if (m && (legacy || m->interface_set))
			refs[n++] = (struct mux_ref){ m, NULL,
						      p->interface_line[id] ?: p->mux_line[id] };
	}
	for (unsigned i = 0; !legacy && i < c->n_modems; i++)
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
			if (c->modem[i].mux[id])
				refs[n++] =
					(struct mux_ref){ c->modem[i].mux[id], c->modem[i].name,
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
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		if (c->mux[id] && !(c->modem[0].mux[id] = config_mux_dup(c->mux[id]))) {
			p->oom = true;
			return parser_error(p, 0, "out of memory");
		}
	return 0;
}

static void modem_apply_naming(struct config_modem *m, bool control_link_set);

/* Discovery, with or without [modem.NAME] sections. */
static int finish_modems(struct parser *p)
{
	struct config *c = p->config;

	if (!line_of(p->device_key_line, "discovery"))
		c->discovery = true;
	else if (!c->discovery && c->n_modems == 0)
		return parser_error(p, line_of(p->device_key_line, "discovery"),
				    "discovery is off and no [modem.NAME] section names a modem: "
				    "nothing to serve");
	if (line_of(p->device_key_line, "name"))
		return parser_error(p, line_of(p->device_key_line, "name"),
				    "name in [device] names the one modem of 'device = SPEC'; "
				    "without it, name modems with [modem.NAME] sections");
	/* One path cannot be the link of every modem. */
	if (line_of(p->device_key_line, "control-link"))
		return parser_error(p, line_of(p->device_key_line, "control-link"),
				    "control-link in [device] is for the one modem of "
				    "'device = SPEC'; set it in each [modem.NAME] (default "
				    "/run/qmapd/NAME.qmi)");

	for (unsigned i = 0; i < c->n_modems; i++) {
		struct config_modem *m = &c->modem[i];
		struct modem_record *rec = &p->record[i];
		struct config_device d;
		char msg[CONFIG_ERROR_MAX];
		struct config_setter s = { .config = c,
					   .device = &d,
					   .section = CONFIG_SECTION_MODEM,
					   .where = "",
					   .err = msg,
					   .errlen = sizeof(msg) };

		/* memcpy, not assignment: padding too, so that equal modems compare equal. */
		memcpy(&d, &c->device, sizeof(d));
		if (!rec->section_line)
			return parser_error(p, rec->first_line,
					    "no [modem.%s] section for this [modem.%s.mux.N]",
					    m->name, m->name);
		if (!line_of(rec->key_line, "device"))
			return parser_error(p, rec->section_line, "missing 'device' in [modem.%s]",
					    m->name);
		/* Already judged when read: applying them again over [device] cannot fail. */
		for (unsigned k = 0; k < config_keys_count; k++)
			if (rec->key_line[k] &&
			    config_keys_apply(&s, &config_keys[k], rec->value[k]) < 0)
				return parser_error(p, rec->key_line[k], "%s", msg);
		memcpy(&m->device, &d, sizeof(d));
		modem_apply_naming(m, line_of(rec->key_line, "control-link") != 0);

		for (unsigned j = 0; j < i; j++) {
			const struct config_modem *o = &c->modem[j];

			if (same_spec(o->device.device, m->device.device))
				return parser_error(p, line_of(rec->key_line, "device"),
						    "device %s in [modem.%s] is already the device "
						    "of [modem.%s]",
						    QUOTE(m->device.device), m->name, o->name);
			if (strcmp(o->device.control_link, m->device.control_link) == 0)
				return parser_error(
					p,
					line_of(rec->key_line, "control-link") ?: rec->section_line,
					"control-link %s of [modem.%s] is already the one "
					"of [modem.%s]",
					QUOTE(m->device.control_link), m->name, o->name);
		}
		if (strcmp(m->device.control_link, c->device.control_socket) == 0)
			return parser_error(
				p, line_of(rec->key_line, "control-link") ?: rec->section_line,
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

	if (line_of(p->device_key_line, "dbus") && p->dbus_line)
		return parser_error(p, line_of(p->device_key_line, "dbus"),
				    "dbus in [device] is the deprecated form of [dbus] (line %u): "
				    "keep only [dbus]",
				    p->dbus_line);
	c->dbus.legacy_line = line_of(p->device_key_line, "dbus");
	if (c->device.device[0] && c->n_modems > 0)
		return parser_error(p, line_of(p->device_key_line, "device"),
				    "device %s in [device] cannot be used with [modem.NAME] "
				    "sections: put device = in each [modem.NAME]",
				    QUOTE(c->device.device));
	if (c->device.device[0] && line_of(p->device_key_line, "discovery"))
		return parser_error(p, line_of(p->device_key_line, "discovery"),
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
			/* Bounded: gcc for 32-bit targets warns that a longer one overflows INT_MAX. */
			snprintf(errbuf, errlen, "%.200s...: path too long", path);
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

static void mux_array_clear(struct config_mux *mux[static CONFIG_MUX_ID_MAX + 1])
{
	/* Only those there: under ASan every free(), NULL too, records its stack (a quarter
	 * of fuzz-config's time). */
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (mux[id]) {
			free(mux[id]);
			mux[id] = NULL;
		}
}

struct config *config_free(struct config *c)
{
	if (!c)
		return NULL;
	mux_array_clear(c->mux);
	for (unsigned i = 0; i < c->n_modems; i++)
		config_modem_clear(&c->modem[i]);
	free(c->modem);
	free(c);
	return NULL;
}

void config_modem_clear(struct config_modem *m)
{
	if (m)
		mux_array_clear(m->mux);
}

struct config_mux *config_mux_dup(const struct config_mux *m)
{
	struct config_mux *d = malloc(sizeof(*d));

	/* memcpy, not assignment: padding too, so that equal muxes compare equal. */
	if (d)
		memcpy(d, m, sizeof(*d));
	return d;
}

struct config_mux *config_mux_add(struct config_mux *mux[static CONFIG_MUX_ID_MAX + 1], unsigned id)
{
	struct config_mux *m;

	if (id < CONFIG_MUX_ID_MIN || id > CONFIG_MUX_ID_MAX || mux[id])
		return NULL;
	m = malloc(sizeof(*m));
	if (!m)
		return NULL;
	config_mux_init_defaults(m, id);
	m->present = true;
	mux[id] = m;
	return m;
}

/* Copies of the muxes of src into dst (whose own are not freed). 0 or -ENOMEM, then none. */
static int mux_array_copy(struct config_mux *dst[static CONFIG_MUX_ID_MAX + 1],
			  struct config_mux *const src[static CONFIG_MUX_ID_MAX + 1])
{
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		dst[id] = NULL;
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (src[id] && !(dst[id] = config_mux_dup(src[id]))) {
			mux_array_clear(dst);
			return -ENOMEM;
		}
	return 0;
}

int config_modem_copy(struct config_modem *dst, const struct config_modem *src)
{
	memcpy(dst->name, src->name, sizeof(dst->name));
	memcpy(&dst->device, &src->device, sizeof(dst->device));
	return mux_array_copy(dst->mux, src->mux);
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
		config_mux_name_for_modem(m->mux[id], m->name);
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
	if (mux_array_copy(ret->mux, c->mux) < 0)
		return -ENOMEM;
	/* The [device] control-link names one modem's device: a template cannot share it. */
	modem_apply_naming(ret, false);
	return 0;
}

bool config_spec_needs_serial(const char *spec)
{
	return strncmp(spec, CONFIG_SERIAL_SCHEME, strlen(CONFIG_SERIAL_SCHEME)) == 0;
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
