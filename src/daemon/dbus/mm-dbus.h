/* SPDX-License-Identifier: MIT */
/*
 * ModemManager's D-Bus API for qmapd's modems, so that NetworkManager, mmcli and the desktop
 * panels drive qmapd as they drive ModemManager: the name org.freedesktop.ModemManager1, an
 * object manager at /org/freedesktop/ModemManager1 with one Modem/N object per present
 * modem (Modem, Modem.Simple, Modem.Modem3gpp), and Bearer/N objects, one per mux. Built
 * on GDBus with libmm-glib's generated skeletons, so names and types are ModemManager's.
 *
 * Bearers created over D-Bus become muxes that the client configures (config_mux
 * client_managed); the muxes of qmapd.conf and qmapctl appear as bearers that qmapd keeps.
 */
#ifndef QMAPD_MM_DBUS_H
#define QMAPD_MM_DBUS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

struct manager;
struct mm_dbus;

/*
 * Follow the manager's modems and own the name on bus (address: a D-Bus address that wins
 * over bus, for tests; NULL otherwise). Methods that change state are for root and members
 * of admin_group (NULL or "": root only), as on the control socket. The connection is qmapd's
 * own and made asynchronously: no bus, or the name owned by someone else, is logged and
 * leaves qmapd running without it; a bus that goes away is connected to again, and the name
 * and the objects come back with it. ready(userdata), if not NULL, is called once the name
 * is owned, refused or no bus answered (at the latest after 10 s), so that start-up can say
 * ready when clients find the name. 0 or -errno.
 */
int mm_dbus_new(struct manager *manager, enum config_dbus bus, const char *address,
		const char *admin_group, void (*ready)(void *userdata), void *userdata,
		struct mm_dbus **ret);
/* NULL-safe; pending calls are answered with Core.Aborted. */
struct mm_dbus *mm_dbus_free(struct mm_dbus *d);
/* Counters in the text format: "dbus: calls=N rejected=N invalid=N connects=N
 * connect-failures=N", then "dbus-error: NAME=N" per error name answered. */
void mm_dbus_print_stats(const struct mm_dbus *d, FILE *f, const char *prefix);
/* The same as JSON for qmapctl stats: {calls, rejected, invalid, connects, connect-failures,
 * errors: {NAME: N}}; NULL when d is. */
json_t *mm_dbus_stats_json(const struct mm_dbus *d);

#endif
