/* SPDX-License-Identifier: MIT */
/*
 * netdev + rtnl against the real kernel, inside a network namespace of this process's own
 * (unshare(CLONE_NEWNET)), so nothing is created in the host's namespace. Needs root and
 * /dev/net/tun; exits 77 otherwise.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "netdev.h"
#include "rtnl.h"
#include "test-case.h"

/* <net/if.h> stops at IFF_DYNAMIC and <linux/if.h> cannot be included next to it. */
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP (1 << 16)
#endif

/* What RTM_GETLINK says about a device, read independently of the code under test. */
struct link_info {
	bool found;
	unsigned flags;
	uint32_t mtu;
	uint8_t carrier;
	uint8_t mac[6];
	bool has_mac;
	uint8_t xdp_attached;
	char kind[16];
	uint8_t tun_type; /* IFF_TUN or IFF_TAP (IFLA_TUN_TYPE) */
	uint8_t tun_persist;
};

static int link_info_data_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_info *li = data;

	switch (mnl_attr_get_type(attr)) {
	case IFLA_TUN_TYPE:
		li->tun_type = mnl_attr_get_u8(attr);
		break;
	case IFLA_TUN_PERSIST:
		li->tun_persist = mnl_attr_get_u8(attr);
		break;
	}
	return MNL_CB_OK;
}

static int link_info_linkinfo_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_info *li = data;

	switch (mnl_attr_get_type(attr)) {
	case IFLA_INFO_KIND:
		snprintf(li->kind, sizeof(li->kind), "%s", mnl_attr_get_str(attr));
		break;
	case IFLA_INFO_DATA:
		mnl_attr_parse_nested(attr, link_info_data_attr_cb, li);
		break;
	}
	return MNL_CB_OK;
}

static int link_info_xdp_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_info *li = data;

	if (mnl_attr_get_type(attr) == IFLA_XDP_ATTACHED)
		li->xdp_attached = mnl_attr_get_u8(attr);
	return MNL_CB_OK;
}

static int link_info_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_info *li = data;

	switch (mnl_attr_get_type(attr)) {
	case IFLA_MTU:
		li->mtu = mnl_attr_get_u32(attr);
		break;
	case IFLA_CARRIER:
		li->carrier = mnl_attr_get_u8(attr);
		break;
	case IFLA_ADDRESS:
		if (mnl_attr_get_payload_len(attr) == 6) {
			memcpy(li->mac, mnl_attr_get_payload(attr), 6);
			li->has_mac = true;
		}
		break;
	case IFLA_XDP:
		mnl_attr_parse_nested(attr, link_info_xdp_attr_cb, li);
		break;
	case IFLA_LINKINFO:
		mnl_attr_parse_nested(attr, link_info_linkinfo_attr_cb, li);
		break;
	}
	return MNL_CB_OK;
}

static int link_info_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_info *li = data;
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	li->found = true;
	li->flags = ifi->ifi_flags;
	return mnl_attr_parse(nlh, sizeof(*ifi), link_info_attr_cb, li);
}

static struct link_info link_info_get(const char *name)
{
	static char buf[32768]; /* one RTM_NEWLINK with stats fits easily */
	struct link_info li = { 0 };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	ssize_t n;

	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		fprintf(stderr, "link_info_get: netlink: %m\n");
		test_failures++;
		if (nl)
			mnl_socket_close(nl);
		return li;
	}
	memset(buf, 0, 1024);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = 1;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		goto out;
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n > 0)
		mnl_cb_run(buf, (size_t)n, 1, mnl_socket_get_portid(nl), link_info_cb, &li);
out:
	mnl_socket_close(nl);
	return li;
}

/* Run a shell command (in our namespace) and return its stdout; "" on failure. */
static const char *sh(const char *cmd)
{
	static char out[16384]; /* a few lines of `ip` output */
	size_t n = 0;
	FILE *f;

	out[0] = '\0';
	f = popen(cmd, "re");
	if (!f) {
		fprintf(stderr, "popen %s: %m\n", cmd);
		test_failures++;
		return out;
	}
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	pclose(f);
	return out;
}

#define EXPECT_CONTAINS(haystack, needle)                                                          \
	do {                                                                                       \
		const char *_h = (haystack), *_n = (needle);                                       \
		if (!strstr(_h, _n)) {                                                             \
			fprintf(stderr, "%s:%d: expected \"%s\" in output of %s:\n%s\n", __FILE__, \
				__LINE__, _n, #haystack, _h);                                      \
			test_failures++;                                                           \
		}                                                                                  \
	} while (0)

#define EXPECT_NOT_CONTAINS(haystack, needle)                                              \
	do {                                                                               \
		const char *_h = (haystack), *_n = (needle);                               \
		if (strstr(_h, _n)) {                                                      \
			fprintf(stderr, "%s:%d: unexpected \"%s\" in output of %s:\n%s\n", \
				__FILE__, __LINE__, _n, #haystack, _h);                    \
			test_failures++;                                                   \
		}                                                                          \
	} while (0)

static struct config_prefix prefix(const char *addr, uint8_t len)
{
	struct config_prefix p = { .family = strchr(addr, ':') ? AF_INET6 : AF_INET,
				   .prefixlen = len };

	if (inet_pton(p.family, addr, &p.addr) != 1) {
		fprintf(stderr, "bad test address %s\n", addr);
		exit(1);
	}
	return p;
}

static uint16_t ip_checksum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)(p[len - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Ethernet + IPv4 + ICMP echo request 192.0.2.2 -> 192.0.2.1, id 0x4d51. Returns length. */
static size_t build_echo_request(uint8_t *f, const uint8_t dst_mac[6])
{
	static const uint8_t src_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
	uint8_t *ip = f + 14, *icmp = ip + 20;
	size_t icmp_len = 8 + 32;
	uint16_t c;

	memset(f, 0, 14 + 20 + icmp_len);
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + icmp_len) >> 8);
	ip[3] = (uint8_t)(20 + icmp_len);
	ip[8] = 64;
	ip[9] = 1; /* ICMP */
	inet_pton(AF_INET, "192.0.2.2", ip + 12);
	inet_pton(AF_INET, "192.0.2.1", ip + 16);
	c = ip_checksum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	icmp[0] = 8; /* echo request */
	icmp[4] = 0x4d;
	icmp[5] = 0x51;
	icmp[7] = 1;
	for (size_t i = 8; i < icmp_len; i++)
		icmp[i] = (uint8_t)i;
	c = ip_checksum(icmp, icmp_len);
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	return 14 + 20 + icmp_len;
}

static void print_frame(const char *what, const uint8_t *f, ssize_t n)
{
	printf("  %s: %zd bytes, dst %02x:%02x:%02x:%02x:%02x:%02x src "
	       "%02x:%02x:%02x:%02x:%02x:%02x type %02x%02x\n",
	       what, n, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11],
	       f[12], f[13]);
}

/* Read frames until the echo reply shows up (or 2 s pass); then the queue must drain. */
static void check_echo_and_nonblocking(const struct netdev *nd)
{
	uint8_t f[2048];
	size_t len = build_echo_request(f, nd->mac);
	bool got_reply = false;
	struct timespec t0, t1;

	EXPECT_EQ(write(nd->fd, f, len), (ssize_t)len);

	for (int i = 0; i < 200 && !got_reply; i++) {
		struct pollfd pfd = { .fd = nd->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 2000) <= 0)
			break;
		n = read(nd->fd, f, sizeof(f));
		if (n < 0)
			continue;
		if (n >= 14 + 20 + 8 && f[12] == 0x08 && f[13] == 0x00 && f[14 + 9] == 1 &&
		    f[14 + 20] == 0 && f[14 + 24] == 0x4d && f[14 + 25] == 0x51) {
			got_reply = true;
			print_frame("echo reply", f, n);
			EXPECT_MEM_EQ(f + 6, nd->mac, 6);
		} else {
			print_frame("other frame from the kernel", f, n);
		}
	}
	EXPECT_TRUE(got_reply);

	/* On an empty queue a non-blocking read answers EAGAIN at once instead of waiting. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int last_errno = 0;
	for (int i = 0; i < 256; i++) {
		ssize_t n = read(nd->fd, f, sizeof(f));
		if (n < 0) {
			last_errno = errno;
			break;
		}
		print_frame("other frame from the kernel", f, n);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_EQ(last_errno, EAGAIN);
	EXPECT_LT((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 500);
}

/* Opened by the setup of the first case, closed by the last one (no_fd_left). */
static struct rtnl *the_rtnl;

static void check_fd_flags(int fd)
{
	EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
}

TEST(prog_load)
{
	int fd = xdp_pass_prog_load();

	EXPECT_GE(fd, 0);
	if (fd >= 0) {
		EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		close(fd);
	}
}

TEST(tap_xdp)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd = { .fd = -1 };
	struct config_prefix a4 = prefix("192.0.2.1", 24), a6 = prefix("2001:db8::1", 64);
	struct config_prefix r4 = prefix("198.51.100.0", 24), r6 = prefix("2001:db8:1::", 48);
	static const uint8_t zero[6];
	struct link_info li;
	int r;

	r = netdev_create(rtnl, "qmt0", CONFIG_HEADROOM_XDP, 1400, false, false, &nd);
	EXPECT_EQ(r, 0);
	if (r < 0)
		return;
	EXPECT_EQ(nd.kind, NETDEV_KIND_TAP_XDP);
	EXPECT_STR_EQ(nd.name, "qmt0");
	EXPECT_STR_EQ(nd.status, "tap+xdp");
	EXPECT_STR_EQ(netdev_kind_to_string(nd.kind), "tap+xdp");
	EXPECT_GE(nd.ifindex, 1);
	EXPECT_EQ(nd.ifindex, (int)if_nametoindex("qmt0"));
	EXPECT_EQ(nd.persist, false);
	check_fd_flags(nd.fd);

	li = link_info_get("qmt0");
	EXPECT_TRUE(li.found);
	EXPECT_TRUE(li.flags & IFF_UP);
	EXPECT_TRUE(li.flags & IFF_NOARP);
	EXPECT_EQ(li.mtu, 1400);
	EXPECT_EQ(li.xdp_attached, XDP_ATTACHED_DRV);
	EXPECT_STR_EQ(li.kind, "tun");
	EXPECT_EQ(li.tun_type, IFF_TAP);
	EXPECT_EQ(li.tun_persist, 0);
	EXPECT_TRUE(li.has_mac);
	EXPECT_MEM_EQ(nd.mac, li.mac, 6);
	EXPECT_TRUE(memcmp(nd.mac, zero, 6) != 0);
	EXPECT_EQ(nd.mac[0] & 1, 0); /* unicast */
	EXPECT_CONTAINS(sh("ip -d link show dev qmt0"), "prog/xdp");

	/* Addresses and routes; adding twice is a replace, not an error. */
	EXPECT_EQ(rtnl_addr_add(rtnl, nd.ifindex, &a4), 0);
	EXPECT_EQ(rtnl_addr_add(rtnl, nd.ifindex, &a4), 0);
	EXPECT_EQ(rtnl_addr_add(rtnl, nd.ifindex, &a6), 0);
	EXPECT_EQ(rtnl_route_add(rtnl, nd.ifindex, &r4, 100), 0);
	EXPECT_EQ(rtnl_route_add(rtnl, nd.ifindex, &r4, 100), 0);
	EXPECT_EQ(rtnl_route_add(rtnl, nd.ifindex, &r6, 100), 0);

	const char *out = sh("ip -o addr show dev qmt0");
	EXPECT_CONTAINS(out, "inet 192.0.2.1/24");
	EXPECT_CONTAINS(out, "inet6 2001:db8::1/64 scope global nodad");
	/* Usable at once; only the kernel's own link-local may still be tentative here. */
	out = sh("ip -o addr show dev qmt0 to 2001:db8::1/128");
	EXPECT_CONTAINS(out, "2001:db8::1/64");
	EXPECT_NOT_CONTAINS(out, "tentative");
	out = sh("ip -4 route show dev qmt0");
	EXPECT_CONTAINS(out, "198.51.100.0/24 proto static scope link metric 100");
	out = sh("ip -6 route show dev qmt0");
	EXPECT_CONTAINS(out, "2001:db8:1::/48 proto static metric 100");

	/* Bad input is refused before the kernel sees it; kernel errors come back as -errno. */
	struct config_prefix bad = a4;
	bad.prefixlen = 33;
	EXPECT_EQ(rtnl_addr_add(rtnl, nd.ifindex, &bad), -EINVAL);
	bad.family = 0;
	EXPECT_EQ(rtnl_route_add(rtnl, nd.ifindex, &bad, 0), -EAFNOSUPPORT);
	EXPECT_EQ(rtnl_link_set(rtnl, 99999, 1400, true, true), -ENODEV);
	/* Not a BPF program: the kernel refuses (and explains in extack, logged at debug). */
	EXPECT_EQ(rtnl_link_set_xdp(rtnl, nd.ifindex, nd.fd), -EINVAL);

	/* A frame written to the TAP reaches the kernel's stack and the answer comes back. */
	check_echo_and_nonblocking(&nd);

	/* Carrier follows the session without touching the device. */
	EXPECT_EQ(netdev_set_carrier(&nd, false), 0);
	li = link_info_get("qmt0");
	EXPECT_EQ(li.carrier, 0);
	EXPECT_EQ(li.flags & IFF_LOWER_UP, 0);
	EXPECT_EQ(netdev_set_carrier(&nd, true), 0);
	li = link_info_get("qmt0");
	EXPECT_EQ(li.carrier, 1);
	EXPECT_TRUE(li.flags & IFF_LOWER_UP);
	EXPECT_CONTAINS(sh("ip -o addr show dev qmt0"), "inet 192.0.2.1/24");

	/* Detach and attach again. */
	EXPECT_EQ(rtnl_link_set_xdp(rtnl, nd.ifindex, -1), 0);
	EXPECT_EQ(link_info_get("qmt0").xdp_attached, XDP_ATTACHED_NONE);
	int prog = xdp_pass_prog_load();
	EXPECT_GE(prog, 0);
	EXPECT_EQ(rtnl_link_set_xdp(rtnl, nd.ifindex, prog), 0);
	/* lo has no native XDP hook; the kernel says so in extack (seen in the debug log). */
	EXPECT_EQ(rtnl_link_set_xdp(rtnl, (int)if_nametoindex("lo"), prog), -EOPNOTSUPP);
	close(prog);
	EXPECT_EQ(link_info_get("qmt0").xdp_attached, XDP_ATTACHED_DRV);

	EXPECT_EQ(rtnl_addr_del(rtnl, nd.ifindex, &a4), 0);
	EXPECT_LT(rtnl_addr_del(rtnl, nd.ifindex, &a4), 0);
	EXPECT_EQ(rtnl_addr_del(rtnl, nd.ifindex, &a6), 0);
	out = sh("ip -o addr show dev qmt0");
	EXPECT_NOT_CONTAINS(out, "192.0.2.1");
	EXPECT_NOT_CONTAINS(out, "2001:db8::1");

	netdev_close(&nd);
	EXPECT_EQ(nd.fd, -1);
	EXPECT_EQ(if_nametoindex("qmt0"), 0);
}

TEST(tun)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd = { .fd = -1 };
	struct config_prefix a6 = prefix("2001:db8:2::1", 64);
	static const uint8_t zero[6];
	uint8_t mac[6];
	struct link_info li;
	int r;

	r = netdev_create(rtnl, "qmt1", CONFIG_HEADROOM_OFF, 1500, false, false, &nd);
	EXPECT_EQ(r, 0);
	if (r < 0)
		return;
	EXPECT_EQ(nd.kind, NETDEV_KIND_TUN);
	EXPECT_STR_EQ(nd.status, "tun");
	EXPECT_STR_EQ(netdev_kind_to_string(nd.kind), "tun");
	EXPECT_MEM_EQ(nd.mac, zero, 6);
	check_fd_flags(nd.fd);

	li = link_info_get("qmt1");
	EXPECT_TRUE(li.found);
	EXPECT_TRUE(li.flags & IFF_UP);
	EXPECT_TRUE(li.flags & IFF_NOARP); /* as the tun driver makes it; DAD stays off */
	EXPECT_EQ(li.mtu, 1500);
	EXPECT_EQ(li.tun_type, IFF_TUN);
	EXPECT_EQ(li.xdp_attached, XDP_ATTACHED_NONE);
	EXPECT_EQ(rtnl_link_get_mac(rtnl, nd.ifindex, mac), -ENODATA);

	EXPECT_EQ(rtnl_addr_add(rtnl, nd.ifindex, &a6), 0);
	EXPECT_CONTAINS(sh("ip -o addr show dev qmt1"), "inet6 2001:db8:2::1/64");

	netdev_close(&nd);
	EXPECT_EQ(if_nametoindex("qmt1"), 0);
	netdev_close(&nd); /* twice is harmless */
	netdev_close(NULL);
}

TEST(persist)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd = { .fd = -1 }, nd2 = { .fd = -1 };
	struct link_info li;
	int ifindex;

	EXPECT_EQ(netdev_create(rtnl, "qmt3", CONFIG_HEADROOM_XDP, 1400, true, false, &nd), 0);
	EXPECT_EQ(nd.persist, true);
	EXPECT_EQ(link_info_get("qmt3").tun_persist, 1);
	ifindex = nd.ifindex;
	netdev_close(&nd);
	EXPECT_EQ((int)if_nametoindex("qmt3"), ifindex);

	/* The other kind cannot take over a persistent device; out-parameter untouched. */
	nd2.ifindex = 4242;
	EXPECT_EQ(netdev_create(rtnl, "qmt3", CONFIG_HEADROOM_OFF, 1400, true, false, &nd2),
		  -EINVAL);
	EXPECT_EQ(nd2.ifindex, 4242);
	EXPECT_EQ(nd2.fd, -1);

	/* Same kind re-attaches; persist=false hands the device's life back to the fd. */
	EXPECT_EQ(netdev_create(rtnl, "qmt3", CONFIG_HEADROOM_XDP, 1280, false, false, &nd), 0);
	EXPECT_EQ(nd.ifindex, ifindex);
	EXPECT_STR_EQ(nd.status, "tap+xdp");
	li = link_info_get("qmt3");
	EXPECT_EQ(li.tun_persist, 0);
	EXPECT_EQ(li.mtu, 1280);
	EXPECT_EQ(li.xdp_attached, XDP_ATTACHED_DRV);
	netdev_close(&nd);
	EXPECT_EQ(if_nametoindex("qmt3"), 0);
}

TEST(bad_names)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd = { .fd = -1 };

	/* "lo" exists in every namespace and is no tun. */
	EXPECT_EQ(netdev_create(rtnl, "lo", CONFIG_HEADROOM_XDP, 1400, false, false, &nd), -EEXIST);
	EXPECT_EQ(netdev_create(rtnl, "lo", CONFIG_HEADROOM_OFF, 1400, false, false, &nd), -EEXIST);
	EXPECT_EQ(netdev_create(rtnl, "", CONFIG_HEADROOM_OFF, 1400, false, false, &nd), -EINVAL);
	EXPECT_EQ(netdev_create(rtnl, "qmt%d", CONFIG_HEADROOM_OFF, 1400, false, false, &nd),
		  -EINVAL);
	EXPECT_EQ(netdev_create(rtnl, "qmt0123456789abc", CONFIG_HEADROOM_OFF, 1400, false, false,
				&nd),
		  -EINVAL);
	EXPECT_EQ(nd.fd, -1);
}

/* A persistent TAP as `ip tuntap add mode tap name NAME` leaves it: no alias. Returns its fd. */
static int foreign_tap(const char *name)
{
	struct ifreq ifr = { 0 };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, 1UL) < 0) {
		fprintf(stderr, "%s:%d: foreign tap %s: %s\n", __FILE__, __LINE__, name,
			strerror(errno));
		test_failures++;
	}
	return fd;
}

/* Only devices qmapd marked are taken over; another program's persistent TAP is refused. */
TEST(foreign)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd = { .fd = -1 };
	int fd = foreign_tap("victim0"), ifindex = (int)if_nametoindex("victim0");

	close(fd); /* persistent: it stays, as another program's device does */
	EXPECT_EQ(netdev_probe_name(rtnl, "victim0"), -EEXIST);
	EXPECT_EQ(netdev_create(rtnl, "victim0", CONFIG_HEADROOM_XDP, 1400, false, false, &nd),
		  -EEXIST);
	EXPECT_EQ(netdev_create(rtnl, "victim0", CONFIG_HEADROOM_OFF, 1400, true, false, &nd),
		  -EEXIST);
	EXPECT_EQ(nd.fd, -1);
	EXPECT_EQ((int)if_nametoindex("victim0"), ifindex);
	EXPECT_EQ(netdev_probe_name(rtnl, "lo"), -EEXIST);
	EXPECT_EQ(netdev_probe_name(rtnl, "qmt9"), 0);
	EXPECT_EQ(netdev_probe_name(rtnl, "qmt%d"), -EINVAL);

	/* Ours are marked, and a persistent one of ours is taken over again. */
	EXPECT_EQ(netdev_create(rtnl, "qmt9", CONFIG_HEADROOM_OFF, 1400, true, false, &nd), 0);
	EXPECT_EQ(netdev_probe_name(rtnl, "qmt9"), 1);
	netdev_close(&nd);
	EXPECT_EQ(netdev_create(rtnl, "qmt9", CONFIG_HEADROOM_OFF, 1400, false, false, &nd), 0);
	netdev_close(&nd);
	EXPECT_EQ(if_nametoindex("qmt9"), 0);

	fd = foreign_tap("victim0");
	if (fd >= 0) {
		(void)!ioctl(fd, TUNSETPERSIST, 0UL);
		close(fd);
	}
	EXPECT_EQ(if_nametoindex("victim0"), 0);
}

/* Many devices closed at once from threads: all gone, every fd -1. */
TEST(close_many)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd[40], *p[40];
	char name[16];

	for (unsigned i = 0; i < ARRAY_SIZE(nd); i++) {
		snprintf(name, sizeof(name), "qmc%u", i);
		nd[i] = (struct netdev){ .fd = -1 };
		EXPECT_EQ(
			netdev_create(rtnl, name, CONFIG_HEADROOM_OFF, 1400, false, false, &nd[i]),
			0);
		p[i] = &nd[i];
	}
	netdev_close_many(p, ARRAY_SIZE(p));
	for (unsigned i = 0; i < ARRAY_SIZE(nd); i++) {
		snprintf(name, sizeof(name), "qmc%u", i);
		EXPECT_EQ(nd[i].fd, -1);
		EXPECT_EQ(if_nametoindex(name), 0);
	}
	netdev_close_many(p, 0);
}

/* Keep CAP_NET_ADMIN, lose what bpf(BPF_PROG_LOAD) needs. */
static int drop_bpf_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	static const int drop[] = { CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON };

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(drop); i++) {
		uint32_t bit = 1u << (drop[i] % 32);
		data[drop[i] / 32].effective &= ~bit;
		data[drop[i] / 32].permitted &= ~bit;
		data[drop[i] / 32].inheritable &= ~bit;
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

/* Runs in a child without CAP_BPF/CAP_SYS_ADMIN. Exit 0 = passed, 77 = cannot test here. */
static int fallback_child(void)
{
	struct rtnl *rtnl = NULL;
	struct netdev nd = { .fd = -1 };
	struct link_info li;
	int r, prog;

	test_failures = 0; /* the parent's count came along with fork() */
	r = drop_bpf_caps();
	if (r < 0) {
		fprintf(stderr, "fallback: capset: %s\n", strerror(-r));
		return 77;
	}
	prog = xdp_pass_prog_load();
	if (prog >= 0) {
		fprintf(stderr, "fallback: BPF still loads without CAP_BPF/CAP_SYS_ADMIN\n");
		close(prog);
		return 77;
	}
	EXPECT_EQ(prog, -EPERM);
	EXPECT_EQ(rtnl_open(&rtnl), 0);
	if (!rtnl)
		return 1;

	r = netdev_create(rtnl, "qmt2", CONFIG_HEADROOM_XDP, 1400, false, false, &nd);
	EXPECT_EQ(r, 0);
	if (r == 0) {
		EXPECT_EQ(nd.kind, NETDEV_KIND_TUN);
		EXPECT_STR_EQ(nd.status, "tun (xdp unavailable: Operation not permitted)");
		li = link_info_get("qmt2");
		EXPECT_EQ(li.tun_type, IFF_TUN);
		EXPECT_TRUE(li.flags & IFF_UP);
		EXPECT_EQ(li.mtu, 1400);
		netdev_close(&nd);
		EXPECT_EQ(if_nametoindex("qmt2"), 0);
	}

	/* A persistent TAP from an earlier run (made by the parent) becomes a persistent TUN. */
	r = netdev_create(rtnl, "qmt4", CONFIG_HEADROOM_XDP, 1400, true, false, &nd);
	EXPECT_EQ(r, 0);
	if (r == 0) {
		EXPECT_EQ(nd.kind, NETDEV_KIND_TUN);
		li = link_info_get("qmt4");
		EXPECT_EQ(li.tun_type, IFF_TUN);
		EXPECT_EQ(li.tun_persist, 1);
		netdev_close(&nd);
	}

	rtnl_close(rtnl);
	return test_failures ? 1 : 0;
}

TEST(fallback)
{
	struct rtnl *rtnl = the_rtnl;
	struct netdev nd = { .fd = -1 };
	int status;
	pid_t pid;

	EXPECT_EQ(netdev_create(rtnl, "qmt4", CONFIG_HEADROOM_XDP, 1400, true, false, &nd), 0);
	netdev_close(&nd);

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fork: %m\n");
		test_failures++;
		return;
	}
	if (pid == 0) {
		int r = fallback_child();
		fflush(NULL);
		_exit(r);
	}
	EXPECT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		printf("fallback sub-test skipped (see above)\n");
	else
		EXPECT_EQ(WEXITSTATUS(status), 0);

	/* Clean up the persistent device whatever kind it ended as. */
	if (link_info_get("qmt4").tun_type == IFF_TUN)
		EXPECT_EQ(netdev_create(rtnl, "qmt4", CONFIG_HEADROOM_OFF, 1400, false, false, &nd),
			  0);
	else
		EXPECT_EQ(netdev_create(rtnl, "qmt4", CONFIG_HEADROOM_XDP, 1400, false, false, &nd),
			  0);
	netdev_close(&nd);
	EXPECT_EQ(if_nametoindex("qmt4"), 0);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* The namespace is made once and dies with the process; every case needs rtnetlink. */
static int fds_before = -1;

TEST_SETUP()
{
	static bool unshared;

	if (geteuid() != 0)
		TEST_SKIP("test-netdev needs root (tun devices, BPF, a network namespace)");
	if (access("/dev/net/tun", R_OK | W_OK) < 0)
		TEST_SKIP("test-netdev needs /dev/net/tun: %m");
	/* Everything happens in a namespace that dies with this process. */
	if (!unshared && unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("test-netdev cannot make a network namespace: %m");
	unshared = true;
	log_set_max_level(LOG_DEBUG);
	if (fds_before < 0)
		fds_before = count_fds();
	if (!the_rtnl) {
		EXPECT_EQ(rtnl_open(&the_rtnl), 0);
		if (!the_rtnl)
			TEST_SKIP("no rtnetlink socket");
	}
}

/* Every fd opened on the way (tun, bpf, netlink, ioctl sockets) was closed again. */
TEST(no_fd_left)
{
	the_rtnl = rtnl_close(the_rtnl);
	EXPECT_PTR_EQ(the_rtnl, NULL);
	EXPECT_EQ(count_fds(), fds_before);
}
