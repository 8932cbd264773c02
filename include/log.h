/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr, one line per message. When stderr is the journal (JOURNAL_STREAM names
 * it, systemd.exec(5)) each line starts with the "<N>" priority prefix journald understands;
 * anywhere else (a terminal, a file, a router's logd) the line is the message alone.
 * Log an error once, where the decision is made; carry the object in the text.
 */
#ifndef QMAPD_LOG_H
#define QMAPD_LOG_H

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);

/*
 * Decide (again) whether stderr is the journal: JOURNAL_STREAM is "DEV:INO" and matches
 * fstat(STDERR_FILENO). The first log line decides by itself; call this only to decide
 * earlier or after stderr changed.
 */
void log_init(void);
bool log_to_journal(void);
/* "<level>" for a line to stderr when it is the journal, otherwise "". */
const char *log_stderr_prefix(int level);

/* Returns -error (or -EIO when error is 0) so callers can `return log_err(r, ...)`. */
int log_full(int level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_err(error, ...)	log_full(LOG_ERR, (error), __VA_ARGS__)
#define log_warning(error, ...) log_full(LOG_WARNING, (error), __VA_ARGS__)
#define log_info(...)		log_full(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...)                                       \
	do {                                                 \
		if (log_get_max_level() >= LOG_DEBUG)        \
			log_full(LOG_DEBUG, 0, __VA_ARGS__); \
	} while (0)

#endif
