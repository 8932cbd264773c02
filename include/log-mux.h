/* SPDX-License-Identifier: MIT */
/*
 * Log lines about one mux (a QMAP mux id or MBIM session and its network device), with
 * the prefix qmapd has always written, so logs and the tests that read them stay the same:
 *   "mux 3 (qmap3): "        ifname given, no modem name
 *   "mux 3: "                before the device exists (ifname NULL)
 *   "lte: mux 3: "           modem name given: a mux of one modem among several
 *   "lte: mux 3 (qmap3): "   both
 * Arguments, not objects: the datapath's struct mux and a session's config both know the
 * id and the interface name, and the modem's name is known where several modems matter.
 */
#ifndef QMAPD_LOG_MUX_H
#define QMAPD_LOG_MUX_H

#include "log.h"

int log_mux_internal(int level, int error, const char *modem, unsigned id, const char *ifname,
		     const char *fmt, ...) _printf_(6, 7);

#define log_mux_full_errno_zerook(modem, id, ifname, level, error, ...)                     \
	({                                                                                  \
		int _log_level = (level), _log_error = (error);                             \
		log_get_max_level() >= _log_level                                           \
			? log_mux_internal(_log_level, _log_error, (modem), (id), (ifname), \
					   __VA_ARGS__)                                     \
			: -abs(_log_error);                                                 \
	})

#define log_mux_full_errno(modem, id, ifname, level, r, ...)                                    \
	log_errno_failure(log_mux_full_errno_zerook(modem, id, ifname, level, LOG_ERRNO_ARG(r), \
						    __VA_ARGS__))
#define log_mux_full(modem, id, ifname, level, ...) \
	((void)log_mux_full_errno_zerook(modem, id, ifname, level, 0, __VA_ARGS__))

#define log_mux_error(modem, id, ifname, ...) log_mux_full(modem, id, ifname, LOG_ERR, __VA_ARGS__)
#define log_mux_warning(modem, id, ifname, ...) \
	log_mux_full(modem, id, ifname, LOG_WARNING, __VA_ARGS__)
#define log_mux_info(modem, id, ifname, ...) log_mux_full(modem, id, ifname, LOG_INFO, __VA_ARGS__)
#define log_mux_debug(modem, id, ifname, ...) \
	log_mux_full(modem, id, ifname, LOG_DEBUG, __VA_ARGS__)

#define log_mux_error_errno(modem, id, ifname, r, ...) \
	log_mux_full_errno(modem, id, ifname, LOG_ERR, r, __VA_ARGS__)
#define log_mux_warning_errno(modem, id, ifname, r, ...) \
	log_mux_full_errno(modem, id, ifname, LOG_WARNING, r, __VA_ARGS__)
#define log_mux_debug_errno(modem, id, ifname, r, ...) \
	log_mux_full_errno(modem, id, ifname, LOG_DEBUG, r, __VA_ARGS__)

#endif
