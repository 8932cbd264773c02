/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr with the "<N>" priority prefixes journald understands.
 * Log an error once, where the decision is made; carry the object in the text.
 */
#ifndef QMAPD_LOG_H
#define QMAPD_LOG_H

#include <syslog.h>

#include "macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);

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
