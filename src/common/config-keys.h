/* SPDX-License-Identifier: MIT */
/*
 * The keys of qmapd.conf, shared by the file parser (config.c) and the run-time setter
 * (config_mux_set()): one table row per key in config-keys.c says where the key may appear,
 * which field it sets and how its value is judged. Private to src/common.
 */
#ifndef QMAPD_CONFIG_KEYS_H
#define QMAPD_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Bounds the parser's per-key arrays; config-keys.c checks the table fits. */
#define CONFIG_KEYS_MAX 48

#define CONFIG_SERIAL_SCHEME "usb-serial:"

enum config_section {
	CONFIG_SECTION_NONE,
	CONFIG_SECTION_DEVICE,
	CONFIG_SECTION_MUX,
	CONFIG_SECTION_MODEM,	  /* [modem.NAME]: the per-modem keys of [device] */
	CONFIG_SECTION_MODEM_MUX, /* [modem.NAME.mux.N]: the keys of [mux.N] */
	CONFIG_SECTION_DBUS,	  /* [dbus] */
};

/* The object a key is set on and where to explain a refusal. */
struct config_setter {
	struct config *config;	      /* for exclude and [dbus]; NULL from config_mux_set() */
	struct config_device *device; /* for [device] keys; NULL from config_mux_set() */
	struct config_mux *mux;	      /* for [mux.N] keys */
	char *name;		      /* for name: CONFIG_MODEM_NAME_MAX + 1 bytes */
	enum config_section section;  /* which values of device are allowed */
	const char *where;	      /* " in [mux.2]" from the file, "" at run time */
	char *err;
	size_t errlen;
};

/* How a value is judged; the generic ones need only the row in the table. */
enum config_key_type {
	CONFIG_KEY_BOOL,     /* yes/no as systemd spells them */
	CONFIG_KEY_U32,	     /* plain decimal in min..max */
	CONFIG_KEY_ENUM,     /* one of values[], stored as a 1- or 4-byte integer */
	CONFIG_KEY_PATH,     /* an absolute file path that fits the field */
	CONFIG_KEY_TEXT,     /* printable ASCII, blanks allowed */
	CONFIG_KEY_SECRET,   /* as TEXT, never quoted in a message */
	CONFIG_KEY_PREFIX,   /* an address of family with an optional /len */
	CONFIG_KEY_DURATION, /* 5ms, 500us, 1s: in min..max microseconds */
	CONFIG_KEY_CUSTOM,   /* parse() */
};

/* Which object offset is in. */
enum config_key_object {
	CONFIG_KEY_OBJECT_NONE,	  /* CUSTOM: parse() knows */
	CONFIG_KEY_OBJECT_DEVICE, /* struct config_device */
	CONFIG_KEY_OBJECT_MUX,	  /* struct config_mux */
	CONFIG_KEY_OBJECT_DBUS,	  /* struct config_dbus_settings */
	CONFIG_KEY_OBJECT_CONFIG, /* struct config */
};

struct config_key_value {
	const char *name;
	uint32_t value;
};

struct config_key {
	const char *name;
	enum config_section section; /* CONFIG_SECTION_DEVICE, _MUX or _DBUS */
	enum config_key_type type;
	enum config_key_object object;
	size_t offset;
	size_t size;
	uint32_t min, max;		       /* U32, DURATION */
	int family;			       /* PREFIX */
	const struct config_key_value *values; /* ENUM, ended by a NULL name */
	const char *why;		       /* ENUM: what was expected */
	int (*parse)(struct config_setter *s, const struct config_key *k, const char *value);
	bool daemon_wide; /* only in [device], not in [modem.NAME] */
	bool repeatable;  /* each line adds to a list instead of being a repeated key */
};

extern const struct config_key config_keys[];
extern const unsigned config_keys_count;

/*
 * The key called name in section; NULL if there is none, with *ret_hint saying where a key of
 * that name belongs instead ("" if nowhere).
 */
const struct config_key *config_keys_find(const char *name, enum config_section section,
					  const char **ret_hint);
/*
 * The index in config_keys[] of a key the parser names itself. The name must exist (assert);
 * without assert() an unknown one gives config_keys_count, a slot that is never set.
 */
unsigned config_keys_index(const char *name);

/* The length check every value gets, then the key's own; 0 or -EINVAL with s->err. */
int config_keys_apply(struct config_setter *s, const struct config_key *k, const char *value);

/*
 * Checks that need the whole mux, e.g. mtu against an ip-type given after it. On failure
 * *ret_key names the key the message is about, for the file parser to name its line.
 */
int config_keys_check_mux(struct config_setter *s, const char **ret_key);

/* Plain decimal: no sign, no blanks, no leading zeros (no octal surprises), fits 32 bits. */
int config_keys_parse_u32(const char *s, uint32_t *ret);

#endif
