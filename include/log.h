/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr, one line per message. When stderr is the journal (JOURNAL_STREAM names
 * it, systemd.exec(5)) each line starts with the "<N>" priority prefix journald understands;
 * anywhere else (a terminal, a file) with the time, "2026-12-03T10:40:12.345Z message",
 * unless QMAPD_LOG_TIME=0 says a logger that stamps lines itself reads stderr (OpenWrt's
 * logd through procd).
 * Log an error once, where the decision is made; carry the object in the text (log-modem.h,
 * log-mux.h put the usual prefixes in front).
 *
 * Two families, as in systemd's log.h:
 *   log_error(), log_warning(), log_info(), log_debug(): a message, nothing returned, so
 *     a failing function says its errno in its own `return -EXXX;`.
 *   log_error_errno(r, ...), log_warning_errno(r, ...), log_debug_errno(r, ...): r is a
 *     -errno or errno value and never 0 (assert()ed in debug builds); the line ends in
 *     ": strerror(r)" and the macro returns -abs(r), so `return log_error_errno(r, ...);`.
 * Arguments are not evaluated for a level that is not logged.
 */
#ifndef QMAPD_LOG_H
#define QMAPD_LOG_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <syslog.h>
#include <time.h>

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

/*
 * The time in front of lines that do not go to the journal: on (default) or off whatever
 * QMAPD_LOG_TIME says, for output that is not a log (qmapd -t). The journal never gets it.
 */
void log_set_time(bool on);

/* "2026-12-03T10:40:12.345Z": RFC 3339, UTC, milliseconds. Its length, 0 if it cannot be. */
#define LOG_TIME_MAX 32
size_t log_format_time(const struct timespec *ts, char buf[static LOG_TIME_MAX]);

/*
 * What starts a line to stderr: "<N>" when it is the journal, else the time and a space
 * (unless turned off), else "". In buf, or a constant string; one clock read.
 */
#define LOG_LINE_PREFIX_MAX (LOG_TIME_MAX + 1)
const char *log_line_prefix(int level, char buf[static LOG_LINE_PREFIX_MAX]);

/*
 * One line at level, ": strerror(error)" appended when error is not 0. Returns -abs(error)
 * (0 for 0). Call it through the macros, which skip the formatting for levels not logged.
 */
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

/* A release build that was handed 0 anyway: a failure must not turn into success. */
static inline int log_errno_failure(int r)
{
	return r < 0 ? r : -EIO;
}

/* The r of a log_*_errno(): an errno of either sign, never 0. */
#define LOG_ERRNO_ARG(r)                                                      \
	({                                                                    \
		int _log_errno = (r);                                         \
		assert(_log_errno != 0 && "log_*_errno() needs a nonzero r"); \
		_log_errno;                                                   \
	})

/* error may be 0 here (no suffix, returns 0): for a caller that has an errno only sometimes. */
#define log_full_errno_zerook(level, error, ...)                            \
	({                                                                  \
		int _log_level = (level), _log_error = (error);             \
		log_get_max_level() >= _log_level                           \
			? log_internal(_log_level, _log_error, __VA_ARGS__) \
			: -abs(_log_error);                                 \
	})

#define log_full_errno(level, r, ...) \
	log_errno_failure(log_full_errno_zerook(level, LOG_ERRNO_ARG(r), __VA_ARGS__))
#define log_full(level, ...) ((void)log_full_errno_zerook(level, 0, __VA_ARGS__))

#define log_error(...)	 log_full(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_info(...)	 log_full(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	 log_full(LOG_DEBUG, __VA_ARGS__)

#define log_error_errno(r, ...)	  log_full_errno(LOG_ERR, r, __VA_ARGS__)
#define log_warning_errno(r, ...) log_full_errno(LOG_WARNING, r, __VA_ARGS__)
#define log_debug_errno(r, ...)	  log_full_errno(LOG_DEBUG, r, __VA_ARGS__)

#endif
