/* SPDX-License-Identifier: MIT */
/*
 * Log lines about one modem, "modem NAME: message", as networkd's log-link.h does for a
 * link. They take the modem's name, not the modem: struct modem is private to modem.c and
 * every caller (modem, session, transport, D-Bus) has the name at hand. The rest as log.h.
 */
#ifndef QMAPD_LOG_MODEM_H
#define QMAPD_LOG_MODEM_H

#include "log.h"

int log_modem_internal(int level, int error, const char *modem, const char *fmt, ...)
	_printf_(4, 5);

#define log_modem_full_errno_zerook(modem, level, error, ...)                              \
	({                                                                                 \
		int _log_level = (level), _log_error = (error);                            \
		log_get_max_level() >= _log_level                                          \
			? log_modem_internal(_log_level, _log_error, (modem), __VA_ARGS__) \
			: -abs(_log_error);                                                \
	})

#define log_modem_full_errno(modem, level, r, ...) \
	log_errno_failure(log_modem_full_errno_zerook(modem, level, LOG_ERRNO_ARG(r), __VA_ARGS__))
#define log_modem_full(modem, level, ...) \
	((void)log_modem_full_errno_zerook(modem, level, 0, __VA_ARGS__))

#define log_modem_error(modem, ...)   log_modem_full(modem, LOG_ERR, __VA_ARGS__)
#define log_modem_warning(modem, ...) log_modem_full(modem, LOG_WARNING, __VA_ARGS__)
#define log_modem_info(modem, ...)    log_modem_full(modem, LOG_INFO, __VA_ARGS__)
#define log_modem_debug(modem, ...)   log_modem_full(modem, LOG_DEBUG, __VA_ARGS__)

#define log_modem_error_errno(modem, r, ...) log_modem_full_errno(modem, LOG_ERR, r, __VA_ARGS__)
#define log_modem_warning_errno(modem, r, ...) \
	log_modem_full_errno(modem, LOG_WARNING, r, __VA_ARGS__)
#define log_modem_debug_errno(modem, r, ...) log_modem_full_errno(modem, LOG_DEBUG, r, __VA_ARGS__)

#endif
