/* SPDX-License-Identifier: MIT */
/*
 * GRO against the real kernel: super-packets written to a TUN with IFF_VNET_HDR and offloads
 * on must reach local sockets as exactly the byte stream (TCP) or the datagrams (UDP) that were
 * merged, for IPv4 and IPv6, with and without the QMAPv5 valid bit. The test plays the remote
 * peer: for TCP it writes the handshake itself and reads the SYN-ACK back from the device.
 * Needs root (it makes its own network namespace); exits 77 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gro.h"
#include "pkt-util.h"
#include "test-case.h"

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif

#define IFNAME	   "grotest0"
#define SEG	   1400
#define HOST_PORT  5001
#define HOST_ADDR4 "192.0.2.2" /* this host, the device side: pkt-util.h's destination */
#define HOST_ADDR6 "2001:db8::2"
#define PEER_PORT  40001

static int tun_fd = -1;
static bool have_uso;
static uint8_t arena[1 << 20];
static size_t arena_used;
static unsigned write_errors;

struct in6_ifreq_compat {
	struct in6_addr addr;
	uint32_t prefixlen;
	int ifindex;
};

static void on_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	size_t total = 0;
	(void)userdata;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	ssize_t n = writev(tun_fd, iov, iovcnt);
	if (n < 0 || (size_t)n != total) {
		fprintf(stderr, "writev of %zu bytes: %zd (%m)\n", total, n);
		write_errors++;
	}
}

static int write_sysctl(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	close(fd);
	return n < 0 ? -errno : 0;
}

static void setup_device(void)
{
	struct ifreq ifr = { 0 };
	int s;

	tun_fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (tun_fd < 0)
		TEST_SKIP("cannot open /dev/net/tun: %m");
	strcpy(ifr.ifr_name, IFNAME);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(tun_fd, TUNSETIFF, &ifr) < 0)
		TEST_SKIP("TUNSETIFF: %m");
	unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 | TUN_F_USO6;
	have_uso = ioctl(tun_fd, TUNSETOFFLOAD, off) == 0;
	if (!have_uso && ioctl(tun_fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) < 0)
		TEST_SKIP("TUNSETOFFLOAD: %m");
	printf("offloads: csum tso4 tso6%s\n", have_uso ? " uso4 uso6" : " (no USO)");

	/* No duplicate address detection: the v6 address must be usable at once. */
	write_sysctl("/proc/sys/net/ipv6/conf/" IFNAME "/accept_dad", "0");
	write_sysctl("/proc/sys/net/ipv6/conf/" IFNAME "/router_solicitations", "0");

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	memset(&ifr.ifr_addr, 0, sizeof(ifr.ifr_addr));
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, HOST_ADDR4, &sin->sin_addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		TEST_SKIP("SIOCSIFADDR: %m");
	inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr);
	ioctl(s, SIOCSIFNETMASK, &ifr);
	ioctl(s, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		TEST_SKIP("SIOCSIFFLAGS: %m");
	ioctl(s, SIOCGIFINDEX, &ifr);
	close(s);

	s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct in6_ifreq_compat r6 = { .prefixlen = 64, .ifindex = ifr.ifr_ifindex };
	inet_pton(AF_INET6, HOST_ADDR6, &r6.addr);
	if (s < 0 || ioctl(s, SIOCSIFADDR, &r6) < 0)
		TEST_SKIP("IPv6 address: %m");
	close(s);
}

/*
 * The packet builder's addresses: IPv4 192.0.2.<host> -> 192.0.2.2, IPv6 2001:db8::<host> ->
 * 2001:db8::2 (see pkt-util.h). The peer is host 1; the device side (this host) is .2.
 */
union host_addr {
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

/* This host's address and HOST_PORT, to bind the receiving socket; returns its length. */
static socklen_t host_sockaddr(bool v6, union host_addr *a)
{
	if (v6) {
		a->v6.sin6_family = AF_INET6;
		a->v6.sin6_port = htons(HOST_PORT);
		inet_pton(AF_INET6, HOST_ADDR6, &a->v6.sin6_addr);
		return sizeof(a->v6);
	}
	a->v4.sin_family = AF_INET;
	a->v4.sin_port = htons(HOST_PORT);
	inet_pton(AF_INET, HOST_ADDR4, &a->v4.sin_addr);
	return sizeof(a->v4);
}

static uint8_t *build(const struct pk *s, size_t *len)
{
	uint8_t *p = arena + arena_used;
	*len = pk_build(p, s);
	arena_used += (*len + 7) & ~(size_t)7;
	return p;
}

static void write_plain(const uint8_t *pkt, size_t len)
{
	uint8_t vh[10] = { 0 };
	struct iovec iov[2] = { { vh, sizeof(vh) }, { (void *)pkt, len } };
	on_emit(NULL, iov, 2);
}

/* Read packets from the device until a TCP SYN-ACK to the peer port; returns its seq. */
static int read_synack(bool v6, uint32_t *ret_seq)
{
	uint8_t buf[70000];

	for (int tries = 0; tries < 200; tries++) {
		struct pollfd pfd = { .fd = tun_fd, .events = POLLIN };
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		ssize_t n = read(tun_fd, buf, sizeof(buf));
		if (n < 10 + 40)
			continue;
		const uint8_t *ip = buf + 10;
		size_t l3 = v6 ? 40 : (size_t)(ip[0] & 15) * 4;
		if ((ip[0] >> 4) != (v6 ? 6 : 4) || ip[v6 ? 6 : 9] != 6)
			continue;
		const uint8_t *th = ip + l3;
		if (pk_get16(th + 2) == PEER_PORT && (th[13] & 0x12) == 0x12) {
			*ret_seq = pk_get32(th + 4);
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static void drain_device(void)
{
	uint8_t buf[70000];
	while (read(tun_fd, buf, sizeof(buf)) > 0)
		;
}

static size_t read_all(int fd, uint8_t *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, 2000) <= 0)
			break;
		ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static void check_tcp(bool v6, bool valid)
{
	struct gro g;
	struct gro_config cfg = {
		.vnet_hdr_len = 10, .tcp = true, .udp = have_uso, .emit = on_emit
	};
	union host_addr a = { 0 };
	socklen_t alen;
	int one = 1;

	int l = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	alen = host_sockaddr(v6, &a);
	EXPECT_EQ(bind(l, (struct sockaddr *)&a, alen), 0);
	EXPECT_EQ(listen(l, 1), 0);

	/* Handshake: SYN with MSS, SYN-ACK read back, ACK. */
	arena_used = 0;
	uint32_t isn = 1000000u + (v6 ? 7 : 0) + (valid ? 3 : 0), srv;
	struct pk s = { .v6 = v6,
			.proto = 6,
			.ttl = 64,
			.df = true,
			.seq = isn,
			.flags = 0x02,
			.win = 65535,
			.sport = PEER_PORT,
			.dport = HOST_PORT,
			.host = 1 };
	s.optlen = 4;
	memcpy(s.opts, (uint8_t[]){ 2, 4, SEG >> 8, SEG & 0xff }, 4);
	size_t len;
	uint8_t *p = build(&s, &len);
	write_plain(p, len);
	if (read_synack(v6, &srv) < 0) {
		fprintf(stderr, "%s:%d: no SYN-ACK (v6=%d)\n", __FILE__, __LINE__, v6);
		test_failures++;
		close(l);
		return;
	}
	s.optlen = 0;
	s.flags = 0x10;
	s.seq = isn + 1;
	s.ack = srv + 1;
	p = build(&s, &len);
	write_plain(p, len);
	struct pollfd pfd = { .fd = l, .events = POLLIN };
	poll(&pfd, 1, 2000);
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	EXPECT_GE(c, 0);
	if (c < 0) {
		close(l);
		return;
	}

	/* Three batches of 30 segments (42000 bytes, inside the 65535 window), PSH last. */
	static uint8_t got[200000], want[200000];
	size_t total = 0;
	EXPECT_EQ(gro_init(&g, &cfg), 0);
	for (int batch = 0; batch < 3; batch++) {
		arena_used = 0;
		for (int i = 0; i < 30; i++) {
			struct pk d = s;
			d.seq = isn + 1 + (uint32_t)total;
			d.stream_off = (uint32_t)total;
			d.id = (uint16_t)(total / SEG);
			d.plen = SEG;
			d.flags = i == 29 ? 0x18 : 0x10;
			p = build(&d, &len);
			gro_add(&g, p, len, valid ? GRO_PKT_CSUM_VALID : 0);
			total += SEG;
		}
		gro_flush(&g);
		size_t before = total - 30 * SEG;
		size_t n = read_all(c, got + before, 30 * SEG);
		EXPECT_EQ(n, 30 * SEG);
		drain_device();
	}
	for (size_t i = 0; i < total; i++)
		want[i] = pk_byte((uint32_t)i);
	EXPECT_MEM_EQ(got, want, total);
	EXPECT_EQ(g.stats.super_packets, 3);
	EXPECT_EQ(g.stats.segments_merged, 90);
	EXPECT_EQ(g.stats.csum_verified, valid ? 0 : 90);
	printf("tcp v%d valid=%d: %zu bytes in %llu writes, received intact\n", v6 ? 6 : 4, valid,
	       total, (unsigned long long)g.stats.writes);

	/* Close from the peer side quietly: RST. */
	arena_used = 0;
	s.seq = isn + 1 + (uint32_t)total;
	s.flags = 0x14;
	p = build(&s, &len);
	write_plain(p, len);
	close(c);
	close(l);
	drain_device();
}

static void check_udp(bool v6, bool valid)
{
	struct gro g;
	struct gro_config cfg = {
		.vnet_hdr_len = 10, .tcp = true, .udp = have_uso, .emit = on_emit
	};
	union host_addr a = { 0 };
	socklen_t alen;

	int u = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rcv = 4 << 20;
	setsockopt(u, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
	alen = host_sockaddr(v6, &a);
	EXPECT_EQ(bind(u, (struct sockaddr *)&a, alen), 0);

	/* 40 datagrams of 1200 bytes and a last one of 333, all of one flow. */
	EXPECT_EQ(gro_init(&g, &cfg), 0);
	arena_used = 0;
	for (int i = 0; i < 41; i++) {
		struct pk d = { .v6 = v6,
				.proto = 17,
				.ttl = 64,
				.df = true,
				.id = (uint16_t)i,
				.sport = PEER_PORT,
				.dport = HOST_PORT,
				.host = 1,
				.plen = i == 40 ? 333 : 1200,
				.stream_off = (uint32_t)i * 1200 };
		size_t len;
		uint8_t *p = build(&d, &len);
		gro_add(&g, p, len, valid ? GRO_PKT_CSUM_VALID : 0);
	}
	gro_flush(&g);
	for (int i = 0; i < 41; i++) {
		uint8_t buf[2000], want[2000];
		size_t plen = i == 40 ? 333 : 1200;
		struct pollfd pfd = { .fd = u, .events = POLLIN };
		poll(&pfd, 1, 2000);
		ssize_t n = recv(u, buf, sizeof(buf), MSG_DONTWAIT);
		EXPECT_EQ(n, (ssize_t)plen);
		if (n != (ssize_t)plen)
			break;
		for (size_t k = 0; k < plen; k++)
			want[k] = pk_byte((uint32_t)(i * 1200 + k));
		EXPECT_MEM_EQ(buf, want, plen);
	}
	if (have_uso)
		EXPECT_EQ(g.stats.super_packets, 1);

	/*
	 * Not a requirement, a fact for the datapath: does tun trust DATA_VALID on a single
	 * packet? A datagram with a wrong checksum written with it tells.
	 */
	struct pk bad = { .v6 = v6,
			  .proto = 17,
			  .ttl = 64,
			  .sport = PEER_PORT,
			  .dport = HOST_PORT,
			  .host = 1,
			  .plen = 100 };
	size_t blen;
	uint8_t *bp = build(&bad, &blen);
	bp[blen - 1] ^= 0xff;
	uint8_t vh[10] = { VIRTIO_NET_HDR_F_DATA_VALID };
	struct iovec biov[2] = { { vh, sizeof(vh) }, { bp, blen } };
	on_emit(NULL, biov, 2);
	struct pollfd bpfd = { .fd = u, .events = POLLIN };
	printf("udp v%d: a bad checksum with DATA_VALID is %s\n", v6 ? 6 : 4,
	       poll(&bpfd, 1, 200) > 0 ? "delivered (DATA_VALID trusted)"
				       : "dropped (DATA_VALID ignored)");
	printf("udp v%d valid=%d: 41 datagrams in %llu writes, received intact\n", v6 ? 6 : 4,
	       valid, (unsigned long long)g.stats.writes);
	close(u);
	drain_device();
}

/*
 * Even without duplicate address detection the IPv6 address takes a moment before a socket
 * can bind to it: the IPv4 cases used to run first and hide that, an IPv6 case alone does not.
 */
static bool addr6_usable(void)
{
	union host_addr a;
	socklen_t alen = host_sockaddr(true, &a);

	for (int i = 0; i < 500; i++) {
		int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int r = s < 0 ? -1 : bind(s, (struct sockaddr *)&a, alen);

		if (s >= 0)
			close(s);
		if (r == 0)
			return true;
		usleep(10000);
	}
	return false;
}

/* One namespace and one TUN device for every case, made by the first one that runs. */
TEST_SETUP()
{
	static bool ready;

	if (ready)
		return;
	if (geteuid() != 0)
		TEST_SKIP("needs root (network namespace, TUN device)");
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("unshare(CLONE_NEWNET): %m");
	if (tun_fd >= 0)
		close(tun_fd);
	setup_device();
	EXPECT_TRUE(addr6_usable()); /* within 5 s */
	drain_device();
	ready = true;
}

/* Each with the checksum left to verify and known good (the kernel's two paths). */
TEST(tcp_ipv4)
{
	check_tcp(false, false);
	check_tcp(false, true);
	EXPECT_EQ(write_errors, 0);
}

TEST(udp_ipv4)
{
	check_udp(false, false);
	check_udp(false, true);
	EXPECT_EQ(write_errors, 0);
}

TEST(tcp_ipv6)
{
	check_tcp(true, false);
	check_tcp(true, true);
	EXPECT_EQ(write_errors, 0);
}

TEST(udp_ipv6)
{
	check_udp(true, false);
	check_udp(true, true);
	EXPECT_EQ(write_errors, 0);
}
