/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "netdev.h"
#include "rtnl.h"

const char *netdev_kind_to_string(enum netdev_kind kind)
{
	switch (kind) {
	case NETDEV_KIND_TAP_XDP:
		return "tap+xdp";
	case NETDEV_KIND_TUN:
		return "tun";
	}
	return "unknown";
}

int xdp_pass_prog_load(void)
{
	/* r0 = XDP_PASS; exit. No helpers, no maps: nothing for a compiler or libbpf to do. */
	static const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	/* Only GPL-only helpers care about the license, and the program calls none. */
	static const char license[] = "MIT";
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_XDP;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = ARRAY_SIZE(insns);
	attr.license = (uint64_t)(uintptr_t)license;
	/* Named so that `bpftool prog` and `ip link` show whose program it is. */
	snprintf(attr.prog_name, sizeof(attr.prog_name), "qmapd_xdp_pass");

	/* bpf(2) always returns its fds with O_CLOEXEC. */
	fd = (int)syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return negative_errno();
	return fd;
}

/*
 * TUNSETIFF answers -EINVAL both for a tun device of the other kind and for a device that is
 * not a tun at all. Tell the second apart (the tun driver calls itself "tun" for TUN and TAP),
 * so that the caller can say "name taken" rather than "invalid argument".
 */
static bool netdev_name_is_foreign(const char *name)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	_cleanup_close_ int sk = -1;
	struct ifreq ifr = { 0 };

	sk = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return false;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)&info;
	if (ioctl(sk, SIOCETHTOOL, &ifr) < 0)
		/* ENODEV: no such device, so the -EINVAL was about something else. */
		return errno != ENODEV && errno != ENXIO;
	return strcmp(info.driver, "tun") != 0;
}

/*
 * Open /dev/net/tun and attach to (or create) `name` as TUN or TAP. *ret_was_persistent
 * says whether the device already existed as a persistent one.
 */
static int netdev_tun_open(const char *name, short type, int *ret_fd, char ret_name[IFNAMSIZ],
			   bool *ret_was_persistent)
{
	_cleanup_close_ int fd = -1;
	struct ifreq ifr = { 0 };

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = type | IFF_NO_PI;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int r = negative_errno();
		if (r == -EINVAL && netdev_name_is_foreign(name)) {
			log_debug("mux device %s: name is taken by a device that is not a tun",
				  name);
			return -EEXIST;
		}
		if (r == -EINVAL)
			log_debug("mux device %s: exists as a persistent %s device", name,
				  (type & IFF_TAP) ? "tun" : "tap");
		return r;
	}

	/* Before we set it, IFF_PERSIST can only come from an earlier owner. */
	struct ifreq cur = { 0 };
	if (ioctl(fd, TUNGETIFF, &cur) < 0)
		return negative_errno();

	memcpy(ret_name, ifr.ifr_name, IFNAMSIZ);
	ret_name[IFNAMSIZ - 1] = '\0';
	*ret_was_persistent = cur.ifr_flags & IFF_PERSIST;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/*
 * With a virtio-net header on every read and write, the kernel hands us TSO/USO super-packets
 * (segmented by gso.c) and takes GRO super-packets (built by gro.c). USO needs Linux 6.2.
 */
static int netdev_set_offloads(int fd, bool *ret_uso)
{
	unsigned base = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;

	if (ioctl(fd, TUNSETOFFLOAD, base | NETDEV_TUN_F_USO4 | NETDEV_TUN_F_USO6) == 0) {
		*ret_uso = true;
		return 0;
	}
	if (ioctl(fd, TUNSETOFFLOAD, base) < 0)
		return negative_errno();
	*ret_uso = false;
	return 0;
}

static int netdev_set_persist(int fd, bool persist)
{
	if (ioctl(fd, TUNSETPERSIST, (unsigned long)persist) < 0)
		return negative_errno();
	return 0;
}

/* Up with its MTU, no ARP, and marked as ours (NETDEV_ALIAS) before anything else uses it. */
static int netdev_set_link(struct rtnl *rtnl, int ifindex, uint32_t mtu)
{
	int r = rtnl_link_set(rtnl, ifindex, mtu, true, true);
	if (r < 0)
		return r;
	return rtnl_link_set_alias(rtnl, ifindex, NETDEV_ALIAS);
}

/*
 * Try TAP + XDP. On success fills nd. An error in the XDP step (load or attach) is returned
 * through *ret_xdp_error with 0 from the function, so that the caller can fall back; any other
 * error is returned.
 */
static int netdev_create_tap_xdp(struct rtnl *rtnl, const char *name, uint32_t mtu, bool persist,
				 bool offload, struct netdev *nd, int *ret_xdp_error)
{
	char ifname[IFNAMSIZ];
	_cleanup_close_ int fd = -1, prog = -1;
	bool was_persistent;
	uint8_t mac[6];
	int ifindex, r;

	r = netdev_tun_open(name, IFF_TAP | (offload ? IFF_VNET_HDR : 0), &fd, ifname,
			    &was_persistent);
	if (r < 0)
		return r;
	ifindex = (int)if_nametoindex(ifname);
	if (ifindex <= 0)
		return negative_errno();

	/* XDP first: if it fails, nothing has been configured on a device we then remove. */
	prog = xdp_pass_prog_load();
	if (prog < 0) {
		r = log_debug_errno(prog, "mux device %s: loading XDP program", ifname);
	} else {
		r = rtnl_link_set_xdp(rtnl, ifindex, prog);
		if (r < 0)
			log_debug_errno(r, "mux device %s: attaching XDP program", ifname);
	}
	if (r < 0) {
		/*
		 * A persistent TAP left by an earlier run would keep the name from becoming a
		 * TUN; drop the flag so that closing the fd removes it.
		 */
		if (was_persistent) {
			int k = netdev_set_persist(fd, false);
			if (k < 0)
				return k;
		}
		*ret_xdp_error = r;
		return 0;
	}

	r = netdev_set_link(rtnl, ifindex, mtu);
	if (r < 0)
		return r;
	r = rtnl_link_get_mac(rtnl, ifindex, mac);
	if (r < 0)
		return r;
	/* Last, so that a failure above leaves no half-configured device behind. */
	if (persist || was_persistent) {
		r = netdev_set_persist(fd, persist);
		if (r < 0)
			return r;
	}

	*nd = (struct netdev){
		.fd = TAKE_FD(fd),
		.ifindex = ifindex,
		.kind = NETDEV_KIND_TAP_XDP,
		.persist = persist,
	};
	memcpy(nd->name, ifname, sizeof(nd->name));
	memcpy(nd->mac, mac, sizeof(nd->mac));
	snprintf(nd->status, sizeof(nd->status), "tap+xdp");
	*ret_xdp_error = 0;
	return 0;
}

static int netdev_create_tun(struct rtnl *rtnl, const char *name, uint32_t mtu, bool persist,
			     bool offload, struct netdev *nd)
{
	char ifname[IFNAMSIZ];
	_cleanup_close_ int fd = -1;
	bool was_persistent;
	int ifindex, r;

	r = netdev_tun_open(name, IFF_TUN | (offload ? IFF_VNET_HDR : 0), &fd, ifname,
			    &was_persistent);
	if (r < 0)
		return r;
	ifindex = (int)if_nametoindex(ifname);
	if (ifindex <= 0)
		return negative_errno();

	/*
	 * A TUN is born IFF_NOARP (and keeps IPv6 duplicate detection off that way); clearing
	 * the flag would start DAD on its random link-local address.
	 */
	r = netdev_set_link(rtnl, ifindex, mtu);
	if (r < 0)
		return r;
	if (persist || was_persistent) {
		r = netdev_set_persist(fd, persist);
		if (r < 0)
			return r;
	}

	*nd = (struct netdev){
		.fd = TAKE_FD(fd),
		.ifindex = ifindex,
		.kind = NETDEV_KIND_TUN,
		.persist = persist,
	};
	memcpy(nd->name, ifname, sizeof(nd->name));
	snprintf(nd->status, sizeof(nd->status), "tun");
	return 0;
}

bool netdev_name_is_valid(const char *name)
{
	/* "%d" would let the kernel pick the name; a mux device has the name it was given. */
	return name && name[0] != '\0' && strlen(name) < IFNAMSIZ && !strchr(name, '%') &&
	       !strchr(name, '/') && !strchr(name, ' ');
}

int netdev_probe_name(struct rtnl *rtnl, const char *name)
{
	char alias[256];
	int r;

	if (!rtnl || !netdev_name_is_valid(name))
		return -EINVAL;
	r = rtnl_link_get_alias(rtnl, name, alias, sizeof(alias), NULL);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return r;
	return strcmp(alias, NETDEV_ALIAS) == 0 ? 1 : -EEXIST;
}

int netdev_remove_kept(struct rtnl *rtnl, const char *name)
{
	_cleanup_close_ int fd = -1;
	char ifname[IFNAMSIZ];
	bool was_persistent = false;
	int r = netdev_probe_name(rtnl, name);

	if (r <= 0)
		return r == 0 ? -ENODEV : r; /* gone already, or not marked as ours */
	/* Attaching fails (EBUSY) while a program holds it: a running qmapd's device stays. */
	r = netdev_tun_open(name, IFF_TAP, &fd, ifname, &was_persistent);
	if (r == -EINVAL)
		r = netdev_tun_open(name, IFF_TUN, &fd, ifname, &was_persistent);
	if (r < 0)
		return r;
	if (!was_persistent)
		return -ENODEV; /* it went meanwhile, and the name was made anew: goes with fd */
	return netdev_set_persist(fd, false); /* the device goes with fd */
}

int netdev_create(struct rtnl *rtnl, const char *name, enum config_headroom headroom, uint32_t mtu,
		  bool persist, bool offload, struct netdev *ret)
{
	struct netdev nd = { .fd = -1 };
	int r, xdp_error = 0;

	if (!rtnl || !name || !ret)
		return -EINVAL;
	if (!netdev_name_is_valid(name))
		return -EINVAL;
	/* Never take over (and later delete) another program's device: only one we marked. */
	r = netdev_probe_name(rtnl, name);
	if (r < 0) {
		log_debug("mux device %s: %s", name,
			  r == -EEXIST ? "exists and was not created by qmapd" : strerror(-r));
		return r;
	}

	switch (headroom) {
	case CONFIG_HEADROOM_AUTO:
	case CONFIG_HEADROOM_XDP:
		r = netdev_create_tap_xdp(rtnl, name, mtu, persist, offload, &nd, &xdp_error);
		if (r < 0)
			return r;
		if (xdp_error == 0)
			break;
		log_warning("mux device %s: XDP headroom unavailable (%s), falling back to TUN",
			    name, strerror(-xdp_error));
		r = netdev_create_tun(rtnl, name, mtu, persist, offload, &nd);
		if (r < 0)
			return r;
		snprintf(nd.status, sizeof(nd.status), "tun (xdp unavailable: %s)",
			 strerror(-xdp_error));
		break;
	case CONFIG_HEADROOM_OFF:
		r = netdev_create_tun(rtnl, name, mtu, persist, offload, &nd);
		if (r < 0)
			return r;
		break;
	}
	if (nd.fd < 0)
		return -EINVAL; /* an enum value outside the type */
	if (offload) {
		r = netdev_set_offloads(nd.fd, &nd.uso);
		if (r < 0) {
			log_debug_errno(r, "mux device %s: offloads refused", name);
			netdev_close(&nd);
			return r;
		}
		nd.vnet_hdr_len = NETDEV_VNET_HDR_LEN;
	}

	*ret = nd;
	return 0;
}

int netdev_set_xdp(struct rtnl *rtnl, struct netdev *nd, bool on)
{
	int r;

	if (nd->kind != NETDEV_KIND_TAP_XDP)
		return -EOPNOTSUPP;
	if (on) {
		_cleanup_close_ int prog = xdp_pass_prog_load();
		if (prog < 0)
			return prog;
		r = rtnl_link_set_xdp(rtnl, nd->ifindex, prog);
	} else {
		r = rtnl_link_set_xdp(rtnl, nd->ifindex, -1);
	}
	if (r < 0)
		return r;
	nd->xdp_detached = !on;
	snprintf(nd->status, sizeof(nd->status), on ? "tap+xdp" : "tap");
	return 0;
}

int netdev_keep(struct netdev *nd, bool on)
{
	if (nd->fd < 0)
		return -EBADF;
	return netdev_set_persist(nd->fd, on);
}

void netdev_close(struct netdev *nd)
{
	if (!nd)
		return;
	/* Nothing to detach: the XDP program and addresses go with the device (or stay with it). */
	if (nd->fd >= 0)
		close(nd->fd);
	nd->fd = -1;
}

struct close_job {
	struct netdev *const *nds;
	size_t n, first, stride;
};

static void *close_worker(void *arg)
{
	const struct close_job *job = arg;

	for (size_t i = job->first; i < job->n; i += job->stride)
		netdev_close(job->nds[i]);
	return NULL;
}

void netdev_close_many(struct netdev *const *nds, size_t n)
{
	struct close_job jobs[NETDEV_CLOSE_THREADS];
	pthread_t threads[NETDEV_CLOSE_THREADS];
	size_t stride = n < NETDEV_CLOSE_THREADS ? n : NETDEV_CLOSE_THREADS, started = 0;

	if (n <= 1) {
		if (n == 1)
			netdev_close(nds[0]);
		return;
	}
	for (size_t t = 0; t < stride; t++)
		jobs[t] = (struct close_job){ .nds = nds, .n = n, .first = t, .stride = stride };
	/* Thread 0's share is done here; a thread that cannot start leaves its share to us. */
	for (size_t t = 1; t < stride; t++) {
		if (pthread_create(&threads[t], NULL, close_worker, &jobs[t]) != 0)
			break;
		started = t;
	}
	close_worker(&jobs[0]);
	for (size_t t = started + 1; t < stride; t++)
		close_worker(&jobs[t]);
	for (size_t t = 1; t <= started; t++)
		pthread_join(threads[t], NULL);
}

int netdev_set_carrier(struct netdev *nd, bool on)
{
	int v = on;

	if (!nd || nd->fd < 0)
		return -EINVAL;
	if (ioctl(nd->fd, TUNSETCARRIER, &v) < 0)
		return negative_errno();
	return 0;
}
