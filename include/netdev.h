/* SPDX-License-Identifier: MIT */
/*
 * One network device per mux. Preferred: a TAP device (IFF_NO_PI, IFF_NOARP, written
 * non-blocking) with a native XDP_PASS program attached, which makes the kernel build the
 * skb with XDP_PACKET_HEADROOM (256 B) in front (docs/ARCHITECTURE.md "Lesson 1: headroom"). Fallback when
 * BPF is not permitted: a plain TUN device (NET_SKB_PAD headroom only), reported in status.
 */
#ifndef QMAPD_NETDEV_H
#define QMAPD_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct rtnl;

enum netdev_kind {
	NETDEV_KIND_TAP_XDP, /* TAP, Ethernet framing, XDP_PASS attached (unless xdp_detached) */
	NETDEV_KIND_TUN,     /* TUN, raw IP framing */
};

struct netdev {
	int fd; /* O_NONBLOCK | O_CLOEXEC */
	int ifindex;
	char name[16]; /* IFNAMSIZ; <net/if.h> clashes with <linux/if.h> */
	enum netdev_kind kind;
	uint8_t mac[6]; /* TAP: the device's own address (destination of what we write) */
	char status
		[96]; /* human readable, e.g. "tap+xdp" or "tun (xdp unavailable: Operation not permitted)" */
	bool persist;
	size_t vnet_hdr_len; /* 0, or NETDEV_VNET_HDR_LEN: every read and write carries one */
	bool uso;	     /* the kernel takes UDP GSO (USO) super-packets too */
	bool xdp_detached;   /* a TAP whose XDP program headroom=auto took off */
};

/* struct virtio_net_hdr; TUNSETVNETHDRSZ is left at this default. */
#define NETDEV_VNET_HDR_LEN 10
/* Linux 6.2 UAPI; Debian 12's headers predate them. */
#define NETDEV_TUN_F_USO4 0x20
#define NETDEV_TUN_F_USO6 0x40

/*
 * qmapd marks every device it creates with this alias (IFLA_IFALIAS, `ip link` shows it) and
 * takes over only devices that carry it: never another program's, which `mux del` or a stop
 * would then delete.
 */
#define NETDEV_ALIAS "qmapd mux device"

/* A name netdev_create() takes: 1 to 15 bytes, no '%' (kernel numbering), '/' or blank. */
bool netdev_name_is_valid(const char *name);
/*
 * Who holds the name: 0 nobody, 1 a device qmapd created (NETDEV_ALIAS), -EEXIST another
 * program's device, -EINVAL not a valid name, or another -errno of rtnetlink.
 */
int netdev_probe_name(struct rtnl *rtnl, const char *name);

/*
 * Remove a device an earlier qmapd kept (IFF_PERSIST) for a mux this one does not have:
 * only a tun/tap marked as ours (NETDEV_ALIAS), persistent and held by nobody. 0 removed,
 * -ENODEV no such device, -EEXIST not ours, -EBUSY in use, other -errno.
 */
int netdev_remove_kept(struct rtnl *rtnl, const char *name);

/*
 * Create (or re-attach to a persistent) device named `name`, refusing (-EEXIST) a device
 * qmapd did not create (netdev_probe_name()). With CONFIG_HEADROOM_XDP try
 * TAP + XDP first and fall back to TUN, logging a warning; CONFIG_HEADROOM_OFF makes a TUN.
 * The device is brought up with the given MTU (IFF_NOARP for TAP). offload: IFF_VNET_HDR
 * with checksum, TSO and (where the kernel has it) USO offloads. Returns 0 or -errno.
 */
int netdev_create(struct rtnl *rtnl, const char *name, enum config_headroom headroom, uint32_t mtu,
		  bool persist, bool offload, struct netdev *ret);

/* Attach (a freshly loaded XDP_PASS program) or detach; TAP only. Updates status. */
int netdev_set_xdp(struct rtnl *rtnl, struct netdev *nd, bool on);

/*
 * Make the device outlive this fd (IFF_PERSIST) with its addresses, routes and XDP program,
 * for the next qmapd to attach to after a restart or a crash (docs/ARCHITECTURE.md "Restart
 * and crash"), or (on = false) no longer. nd->persist, the config's wish, is left alone.
 */
int netdev_keep(struct netdev *nd, bool on);

/* Close the fd; the kernel removes the device unless it was made persistent. */
void netdev_close(struct netdev *nd);

/*
 * Close many at once, from up to NETDEV_CLOSE_THREADS threads. Removing a device waits for
 * RCU grace periods the kernel shares between concurrent removals: 254 TAPs closed one by one
 * took 4.65 s here, from 16 threads 0.61 s. Each fd is -1 afterwards.
 */
#define NETDEV_CLOSE_THREADS 16
void netdev_close_many(struct netdev *const *nds, size_t n);

/* Carrier on/off (TUNSETCARRIER): the device and its addresses stay. */
int netdev_set_carrier(struct netdev *nd, bool on);

const char *netdev_kind_to_string(enum netdev_kind kind);

/* Load the two-instruction XDP_PASS program with bpf(2). Returns a prog fd or -errno. */
int xdp_pass_prog_load(void);

#endif
