/* SPDX-License-Identifier: MIT */
/* Shared by dns.c (the links, systemd-resolved) and dns-file.c (resolv.conf files). */
#ifndef QMAPD_DNS_INTERNAL_H
#define QMAPD_DNS_INTERNAL_H

#include <net/if.h>

#include "dns.h"

struct dns_link {
	int ifindex;
	char ifname[IFNAMSIZ];
	struct config_prefix servers[DNS_MAX_SERVERS];
	unsigned n_servers;
	bool default_route;
	bool resolved; /* handed to resolved (asked or confirmed): revert at the end */
	bool file;     /* a file was written: remove it at the end */
	struct dns_link *next;
};

/* <dir>/<ifname>.conf, replaced atomically, mode 0644 (dnsmasq reads it after dropping root).
 * 0 or -errno. */
int dns_file_write(const char *dir, const struct dns_link *l);
/* 0, or -errno (a missing file is 0). */
int dns_file_remove(const char *dir, const struct dns_link *l);

#endif
