/* SPDX-License-Identifier: MIT */
/*
 * Synchronous rtnetlink requests over libmnl: links, addresses, routes, XDP attach.
 * Each call sends one request with NLM_F_ACK and returns 0 or the kernel's -errno.
 */
#ifndef QMAPD_RTNL_H
#define QMAPD_RTNL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct rtnl;

int rtnl_open(struct rtnl **ret);
struct rtnl *rtnl_close(struct rtnl *rtnl);

/* Set MTU (0 = leave), IFF_UP and IFF_NOARP as given. */
int rtnl_link_set(struct rtnl *rtnl, int ifindex, uint32_t mtu, bool up, bool noarp);
/* Read the link-layer address (IFLA_ADDRESS) into mac[6]. */
int rtnl_link_get_mac(struct rtnl *rtnl, int ifindex, uint8_t mac[6]);
/*
 * The alias (IFLA_IFALIAS, "" when unset) of the device called ifname, and its index
 * (ret_ifindex may be NULL). -ENODEV: no such device.
 */
int rtnl_link_get_alias(struct rtnl *rtnl, const char *ifname, char *buf, size_t len,
			int *ret_ifindex);
int rtnl_link_set_alias(struct rtnl *rtnl, int ifindex, const char *alias);
/*
 * The device's received packets and the packets it dropped on transmit (IFLA_STATS64
 * rx_packets, tx_dropped: for a TUN/TAP, what its queue had no room for while nobody read).
 */
int rtnl_link_get_counters(struct rtnl *rtnl, int ifindex, uint64_t *ret_rx_packets,
			   uint64_t *ret_tx_dropped);
/* The device's received packets (IFLA_STATS64 rx_packets). */
int rtnl_link_get_rx_packets(struct rtnl *rtnl, int ifindex, uint64_t *ret);
/*
 * Whether the device's generic-receive-offload feature is on (what `ethtool -k` shows):
 * an ethtool ioctl, made on the rtnetlink socket because the unit allows no other family.
 */
int rtnl_link_get_gro(struct rtnl *rtnl, const char *ifname, bool *ret);
/* IFLA_XDP with XDP_FLAGS_DRV_MODE; prog_fd -1 detaches. */
int rtnl_link_set_xdp(struct rtnl *rtnl, int ifindex, int prog_fd);

/* Add (replace) an address; IPv6 gets IFA_F_NODAD. */
int rtnl_addr_add(struct rtnl *rtnl, int ifindex, const struct config_prefix *addr);
int rtnl_addr_del(struct rtnl *rtnl, int ifindex, const struct config_prefix *addr);

/* Add (replace) a device route (scope link, no gateway) in the main table. */
int rtnl_route_add(struct rtnl *rtnl, int ifindex, const struct config_prefix *dst,
		   uint32_t metric);

#endif
