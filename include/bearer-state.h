/* SPDX-License-Identifier: MIT */
/*
 * A bearer a D-Bus client connected (its mux is not in the config), recorded for the next
 * qmapd after a restart or a crash (docs/ARCHITECTURE.md "Restart and crash"): which bearer
 * object it is, whether it may roam, and the mux keys it was created with. One small text
 * file per mux beside the control link ("<link>.bearer<N>"), written atomically whenever it
 * changes; the next qmapd creates the mux again with the same keys (config_mux_set(), the
 * same checks as qmapd.conf) and the bearer with the same object path. Lines:
 *   bearer <index>            the object's /org/freedesktop/ModemManager1/Bearer/<index>
 *   allow-roaming <0|1>
 *   key <name> <hex>          a mux key and its value, hex-encoded (printable ASCII only)
 * The parser is pure (fuzz-qmi-state reads every state file).
 */
#ifndef QMAPD_BEARER_STATE_H
#define QMAPD_BEARER_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define BEARER_STATE_MAX_KEYS  8
#define BEARER_STATE_KEY_MAX   15
#define BEARER_STATE_INDEX_MAX 65535u /* more bearers than any client makes */
#define BEARER_STATE_FILE_MAX  4096   /* 8 keys of at most 160 bytes, hex-encoded: under 2.8 KiB */

struct bearer_state {
	unsigned bearer;
	bool allow_roaming;
	unsigned n_keys;
	struct bearer_state_key {
		char name[BEARER_STATE_KEY_MAX + 1];
		char value[CONFIG_VALUE_MAX + 1];
	} keys[BEARER_STATE_MAX_KEYS];
};

/* Parse text (len bytes, need not end in NUL): 0, or -EINVAL for anything but the lines above
 * (each once: bearer and allow-roaming exactly once, a key name at most once). */
int bearer_state_parse(const char *text, size_t len, struct bearer_state *ret);
/* The text (what the parser reads back), NUL-terminated in size > 0 bytes; its length, or
 * -ENOSPC when it does not fit. */
int bearer_state_format(const struct bearer_state *b, char *buf, size_t size);
/* Add a key; -EINVAL for a name or value the parser would refuse, -ENOSPC when full. */
int bearer_state_add_key(struct bearer_state *b, const char *name, const char *value);

/* The files: "<link>.bearer<id>". */
int bearer_state_read(const char *link, unsigned mux_id, struct bearer_state *ret);
int bearer_state_write(const char *link, unsigned mux_id, const struct bearer_state *b);
void bearer_state_remove(const char *link, unsigned mux_id);

#endif
