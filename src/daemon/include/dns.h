/* SPDX-License-Identifier: MIT */
/*
 * The network's DNS servers for the links qmapd configures itself (muxes of qmapd.conf and
 * qmapctl; not D-Bus bearers, whose client does that): handed to systemd-resolved over D-Bus
 * (SetLinkDNS, SetLinkDomains, SetLinkDefaultRoute; RevertLink when the session ends) when it
 * runs, otherwise written as resolv.conf lines to <dir>/<ifname>.conf for resolvconf or
 * dnsmasq. Asynchronous: nothing here waits for the bus. Failures are counted and logged once;
 * they never touch the session. One per process (sessions have no other way to reach it);
 * before dns_init() every call is a no-op, which is what the unit tests get.
 */
#ifndef QMAPD_DNS_H
#define QMAPD_DNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"

#define DNS_MAX_SERVERS 4 /* two per family, as WDS gives them */

/*
 * bus_address: a D-Bus address where systemd-resolved may be (NULL: none, files only); the
 * connection is made in the background. dir: where the per-link files go (created when the
 * first is written). 0 or -ENOMEM.
 */
int dns_init(const char *bus_address, const char *dir);
/* Revert every link (without waiting for answers), remove the files, disconnect. */
void dns_shutdown(void);

/*
 * The session on ifindex is up with these servers (family 0 entries skipped); default_route:
 * the mux carries the default routes, so resolved sends it every query without a better
 * link ("~." and DefaultRoute), otherwise none by default. The same settings again: nothing.
 */
void dns_link_set(int ifindex, const char *ifname, const struct config_prefix *servers, unsigned n,
		  bool default_route);
/* The session on ifindex ends (mux removed, qmapd stopping): revert. Unknown links: nothing. */
void dns_link_clear(int ifindex);

/* "dns: resolved-links=N resolved-failures=N files=N file-failures=N reverts=N" */
void dns_print_stats(FILE *f, const char *prefix);
/* The same as an object for qmapctl stats; NULL before dns_init(). */
json_t *dns_stats_json(void);

#endif
