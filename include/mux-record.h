/* SPDX-License-Identifier: MIT */
/*
 * A list of muxes by id and device name that one qmapd leaves for the next after a restart
 * or a crash (docs/ARCHITECTURE.md "Restart and crash"), so that the next one can undo what
 * it has no mux for: "<link>.devices", the mux devices kept (IFF_PERSIST) across a crash
 * (modem.c), and "<link>.sessions", the MBIM sessions qmapd activated or took over
 * (mbim-session.c). A small text file beside the control link, written atomically whenever
 * it changes; removed when the list is empty. One line per mux, ids ascending:
 *   <mux-id> <device name>
 * The parser is pure (fuzz-qmi-state reads every state file).
 */
#ifndef QMAPD_MUX_RECORD_H
#define QMAPD_MUX_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define MUX_RECORD_NAME_MAX 15	 /* IFNAMSIZ - 1 */
#define MUX_RECORD_FILE_MAX 8192 /* 254 lines of at most 19 bytes: under 5 KiB */

struct mux_record {
	/* name[id][0] == '\0': no entry for mux id */
	char name[CONFIG_MUX_ID_MAX + 1][MUX_RECORD_NAME_MAX + 1];
};

/* Parse text (len bytes, need not end in NUL): 0, or -EINVAL for anything but the lines
 * above (ids CONFIG_MUX_ID_MIN..CONFIG_MUX_ID_MAX, ascending, no leading zero; a name of 1
 * to 15 printable bytes without blank, '/' or '%'). */
int mux_record_parse(const char *text, size_t len, struct mux_record *ret);
/* The text (what the parser reads back), NUL-terminated in size > 0 bytes; its length (cut
 * at size - 1; MUX_RECORD_FILE_MAX always holds it). */
size_t mux_record_format(const struct mux_record *r, char *buf, size_t size);

/* Set (name: a valid name, else -EINVAL) or clear (name NULL) mux id's entry. */
int mux_record_set(struct mux_record *r, unsigned id, const char *name);
bool mux_record_empty(const struct mux_record *r);

/* "<link>.<what>" ("devices", "sessions"): read (-ENOENT: none), written (an empty list
 * removes the file). */
int mux_record_read(const char *link, const char *what, struct mux_record *ret);
int mux_record_write(const char *link, const char *what, const struct mux_record *r);
/* Read, set or clear one entry, write back: for writers that keep no copy. An unreadable
 * file is started afresh. */
int mux_record_update(const char *link, const char *what, unsigned id, const char *name);

#endif
