/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's data side against a real TUN in a private network namespace: uplink
 * deaggregation into the kernel, downlink aggregation with longest-prefix mux choice,
 * no-route drops, disconnect/reconnect, and the garbage/unknown-mux/command/oversize
 * injections as qmap_next() sees them, each with the TUN's offloads and without; then TCP
 * and UDP streams through the offloads (super-packets cut into frames, coalesced uplink).
 * The option parsers are checked first, unprivileged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "qmap.h"
#include "sim.h"
#include "test-loop.h"
#include "test-case.h"
#include "transport.h"

#define TEST_NETDEV "simtest0"
#define HDR	    sizeof(struct transport_sim_header)

static struct ev_loop *loop;
static char sock_path[108];
static struct sim_options opts; /* ~50 KiB: not on the stack */
static bool plain;		/* base_options(): --no-offload */

static const uint8_t net_addr4[4] = { 198, 51, 100, 1 };
static const uint8_t mux1_host4[4] = { 192, 0, 2, 10 };

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t csum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* IPv4/UDP packet; udp_csum as given (0 = none) unless good_csum. Returns its length. */
static size_t build_udp4(uint8_t *p, const uint8_t src[4], const uint8_t dst[4], uint16_t sport,
			 uint16_t dport, const char *payload, bool good_csum, uint16_t udp_csum)
{
	size_t plen = strlen(payload), len = 28 + plen;

	memset(p, 0, 28);
	p[0] = 0x45;
	put16(p + 2, len);
	p[8] = 64;
	p[9] = 17;
	memcpy(p + 12, src, 4);
	memcpy(p + 16, dst, 4);
	uint16_t c = csum(p, 20, 0);
	put16(p + 10, c);
	put16(p + 20, sport);
	put16(p + 22, dport);
	put16(p + 24, len - 20);
	memcpy(p + 28, payload, plen);
	if (good_csum) {
		uint32_t pseudo = 17 + (uint32_t)(len - 20);
		for (int i = 12; i < 20; i += 2)
			pseudo += (uint32_t)(p[i] << 8 | p[i + 1]);
		udp_csum = csum(p + 20, len - 20, pseudo);
		if (udp_csum == 0)
			udp_csum = 0xffff;
	}
	put16(p + 26, udp_csum);
	return len;
}

static int udp_socket(int family, const char *addr, uint16_t port)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (family == AF_INET) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		inet_pton(AF_INET, addr, &sa.sin_addr);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
	} else {
		struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
		inet_pton(AF_INET6, addr, &sa.sin6_addr);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
	}
	fprintf(stderr, "bind %s port %u: %m\n", addr, port);
	close(fd);
	return -1;
}

static int send_udp(int fd, int family, const char *addr, uint16_t port, const char *payload)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;

	if (family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
		sa->sin_family = AF_INET;
		sa->sin_port = htons(port);
		inet_pton(AF_INET, addr, &sa->sin_addr);
		len = sizeof(*sa);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
		sa->sin6_family = AF_INET6;
		sa->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &sa->sin6_addr);
		len = sizeof(*sa);
	}
	if (sendto(fd, payload, strlen(payload), 0, (struct sockaddr *)&ss, len) < 0) {
		fprintf(stderr, "sendto %s: %m\n", addr);
		return -1;
	}
	return 0;
}

static int client_connect_raw(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	strcpy(sa.sun_path, sock_path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "connect %s: %m\n", sock_path);
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool descriptor_arrived(void *data)
{
	struct {
		struct transport_sim_header h;
		struct transport_sim_descriptor d;
	} __attribute__((packed)) m;
	int *fd = data;
	ssize_t n = recv(*fd, &m, sizeof(m), MSG_DONTWAIT | MSG_PEEK);

	if (n < 0)
		return false;
	if (n == (ssize_t)sizeof(m) && m.h.ep == TRANSPORT_EP_DESCRIPTOR) {
		EXPECT_EQ(m.d.interface_number, opts.quirks.data_interface);
		EXPECT_EQ(recv(*fd, &m, sizeof(m), MSG_DONTWAIT), (ssize_t)sizeof(m));
	}
	return true;
}

/* Connect as qmapd; the descriptor message that opens the connection is checked and
 * consumed (a rejected second connection gets none). */
static int client_connect(void)
{
	int fd = client_connect_raw();

	if (fd >= 0)
		test_run_until(loop, descriptor_arrived, &fd);
	return fd;
}

/* Conditions for test_run_until(). */
static struct sim *cur;

static bool is_connected(void *data)
{
	(void)data;
	return sim_is_connected(cur);
}

static bool is_disconnected(void *data)
{
	(void)data;
	return !sim_is_connected(cur);
}

struct msg {
	int fd;
	uint8_t buf[HDR + TRANSPORT_MAX_TRANSFER];
	ssize_t len;
	struct sockaddr_storage from;
};

static bool msg_arrived(void *data)
{
	struct msg *m = data;
	socklen_t fl = sizeof(m->from);

	m->len = recvfrom(m->fd, m->buf, sizeof(m->buf), MSG_DONTWAIT, (struct sockaddr *)&m->from,
			  &fl);
	return m->len >= 0;
}

static bool wait_msg(struct msg *m, int fd)
{
	m->fd = fd;
	m->len = -1;
	return test_run_until(loop, msg_arrived, m);
}

static struct sim *start_sim(void)
{
	struct sim *s = NULL;

	if (sim_new(loop, &opts, &s) < 0)
		return NULL;
	if (sim_start(s) < 0)
		return sim_free(s);
	return s;
}

/* Start the sim with opts and connect as qmapd: the client fd, or -1. */
static int start_connected(void)
{
	int fd;

	cur = start_sim();
	EXPECT_TRUE(cur);
	if (!cur)
		return -1;
	fd = client_connect();
	EXPECT_TRUE(fd >= 0);
	if (fd >= 0)
		EXPECT_TRUE(test_run_until(loop, is_connected, NULL));
	return fd;
}

static void base_options(void)
{
	char err[SIM_ERROR_MAX];

	sim_options_init(&opts);
	strcpy(opts.socket_path, sock_path);
	strcpy(opts.netdev, TEST_NETDEV);
	opts.offload = !plain;
	/* The data side alone: no QMI session gates the traffic (test-sim-qmi covers that). */
	opts.always_connected = true;
	EXPECT_EQ(sim_options_add_net_address(&opts, "198.51.100.1/24", err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_add_net_address(&opts, "2001:db8:ff::1/64", err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_add_mux(&opts, "1=192.0.2.0/24,2001:db8:1::/64", err, sizeof(err)),
		  0);
	EXPECT_EQ(sim_options_add_mux(&opts, "2=203.0.113.0/24", err, sizeof(err)), 0);
	/* Inside mux 1's /24: the longer prefix must win. */
	EXPECT_EQ(sim_options_add_mux(&opts, "3=192.0.2.128/25", err, sizeof(err)), 0);
}

TEST(parsers)
{
	char err[SIM_ERROR_MAX];
	unsigned mask = 0;

	sim_options_init(&opts);
	EXPECT_STR_EQ(opts.netdev, SIM_NETDEV_DEFAULT);
	EXPECT_EQ(opts.flush_usec, SIM_FLUSH_USEC_DEFAULT);
	EXPECT_EQ(opts.qmap_version, QMAP_V5);

	EXPECT_EQ(sim_options_add_mux(&opts, "0=192.0.2.0/24", err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "'0'"));
	EXPECT_EQ(sim_options_add_mux(&opts, "255=192.0.2.0/24", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_options_add_mux(&opts, "1", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_options_add_mux(&opts, "1=", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_options_add_mux(&opts, "1=192.0.2.0/24,", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_options_add_mux(&opts, "1=192.0.2.0/33", err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "'192.0.2.0/33'"));
	EXPECT_EQ(opts.mux[1].present, false);

	/* Host bits are dropped: a mux prefix is a network. */
	EXPECT_EQ(sim_options_add_mux(&opts, "1=192.0.2.77/24,2001:db8:1::5/64", err, sizeof(err)),
		  0);
	EXPECT_EQ(opts.mux[1].n_prefix, 2);
	EXPECT_EQ(ntohl(opts.mux[1].prefix[0].addr.v4.s_addr), 0xc0000200);
	EXPECT_EQ(opts.mux[1].prefix[1].addr.v6.s6_addr[15], 0);
	EXPECT_EQ(sim_options_add_mux(&opts, "1=198.51.100.0/24", err, sizeof(err)), -EEXIST);

	EXPECT_EQ(sim_options_add_mux(&opts, "4=192.0.2.0/24", err, sizeof(err)), 0);
	strcpy(opts.socket_path, "/x");
	EXPECT_EQ(sim_options_validate(&opts, err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "192.0.2.0/24"));
	opts.mux[4].present = false;
	EXPECT_EQ(sim_options_validate(&opts, err, sizeof(err)), 0);
	opts.mtu = opts.dl_max_size;
	EXPECT_EQ(sim_options_validate(&opts, err, sizeof(err)), -EINVAL);

	EXPECT_EQ(sim_options_add_net_address(&opts, "198.51.100.1/24", err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_add_net_address(&opts, "nope", err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "'nope'"));

	EXPECT_EQ(sim_parse_inject("garbage,oversize", &mask, err, sizeof(err)), 0);
	EXPECT_EQ(mask, 1u << SIM_INJECT_GARBAGE | 1u << SIM_INJECT_OVERSIZE);
	EXPECT_EQ(sim_parse_inject("unknown-mux,command", &mask, err, sizeof(err)), 0);
	EXPECT_EQ(mask, 1u << SIM_INJECT_UNKNOWN_MUX | 1u << SIM_INJECT_COMMAND);
	EXPECT_EQ(sim_parse_inject("garbage,bogus", &mask, err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "'bogus'"));
	EXPECT_EQ(sim_parse_inject("", &mask, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(mask, 1u << SIM_INJECT_UNKNOWN_MUX | 1u << SIM_INJECT_COMMAND);
	EXPECT_STR_EQ(sim_inject_to_string(SIM_INJECT_UNKNOWN_MUX), "unknown-mux");
}

/* Check a downlink frame carries an IPv4/UDP packet to dst:dport with this payload. */
static void expect_udp4_frame(const struct qmap_frame *f, uint8_t mux, const uint8_t dst[4],
			      uint16_t dport, const char *payload)
{
	size_t plen = strlen(payload);

	EXPECT_EQ(f->kind, QMAP_FRAME_DATA);
	EXPECT_EQ(f->mux_id, mux);
	EXPECT_EQ(f->len, 28 + plen);
	if (f->len != 28 + plen)
		return;
	EXPECT_EQ(f->payload[0], 0x45);
	EXPECT_MEM_EQ(f->payload + 16, dst, 4);
	EXPECT_EQ(f->payload[9], 17);
	EXPECT_EQ(f->payload[22] << 8 | f->payload[23], dport);
	EXPECT_MEM_EQ(f->payload + 28, payload, plen);
	/* Padded with zeros to a multiple of 4, and the pad length says so. */
	unsigned pad = f->header[0] & QMAP_PAD_MASK;
	EXPECT_EQ(pad, (4 - f->len % 4) % 4);
	for (unsigned i = 0; i < pad; i++)
		EXPECT_EQ(f->payload[f->len + i], 0);
}

static void check_datapath(void)
{
	static struct msg m;
	uint8_t agg[HDR + 512], pkt[256];
	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	size_t off, len1, len2;
	int client = -1, other = -1, udp4 = -1, udp6 = -1;

	base_options();
	opts.qmap_version = QMAP_V1;
	opts.flush_usec = 0;
	opts.dl_max_datagrams = 3;
	cur = start_sim();
	EXPECT_TRUE(cur);
	if (!cur)
		return;
	const struct sim_stats *st = sim_get_stats(cur);

	/* The socket file appears only once the network side is configured. */
	EXPECT_TRUE(if_nametoindex(TEST_NETDEV) > 0);
	EXPECT_EQ(access(sock_path, F_OK), 0);

	client = client_connect();
	EXPECT_TRUE(client >= 0);
	EXPECT_TRUE(test_run_until(loop, is_connected, NULL));

	/* One qmapd at a time: a second one is accepted and closed. */
	other = client_connect();
	EXPECT_TRUE(other >= 0);
	EXPECT_TRUE(test_wait_counter(loop, &st->connections_rejected, 1));
	EXPECT_EQ(recv(other, pkt, sizeof(pkt), MSG_DONTWAIT), 0);
	close(other);

	udp4 = udp_socket(AF_INET, "198.51.100.1", 5000);
	udp6 = udp_socket(AF_INET6, "2001:db8:ff::1", 5001);
	EXPECT_TRUE(udp4 >= 0 && udp6 >= 0);
	if (client < 0 || udp4 < 0 || udp6 < 0)
		goto out;

	/* Uplink: two packets on mux 1, one on an unconfigured mux, an ACK, an empty frame. */
	*(struct transport_sim_header *)agg =
		(struct transport_sim_header){ .ep = TRANSPORT_EP_BULK_OUT };
	off = HDR;
	len1 = build_udp4(pkt, mux1_host4, net_addr4, 4000, 5000, "uplink-1", true, 0);
	off += qmap_write_data_header(agg + off, QMAP_V1, 1, len1, 0, false);
	memcpy(agg + off, pkt, len1);
	off += len1;
	len2 = build_udp4(pkt, mux1_host4, net_addr4, 4000, 5000, "uplink-two!", true, 0);
	off += qmap_write_data_header(agg + off, QMAP_V1, 1, len2, 0, false);
	memcpy(agg + off, pkt, len2);
	off += len2;
	off += qmap_write_data_header(agg + off, QMAP_V1, 7, len2, 0, false);
	memcpy(agg + off, pkt, len2);
	off += len2;
	struct qmap_command ack = { .name = QMAP_COMMAND_FLOW_ENABLE,
				    .type = QMAP_COMMAND_ACK,
				    .transaction_id = 7 };
	qmap_write_command(agg + off, 1, &ack);
	off += QMAP_HEADER_SIZE + QMAP_COMMAND_SIZE;
	memset(agg + off, 0, QMAP_HEADER_SIZE);
	agg[off + 1] = 1;
	off += QMAP_HEADER_SIZE;
	EXPECT_EQ(send(client, agg, off, 0), (ssize_t)off);

	EXPECT_TRUE(wait_msg(&m, udp4));
	EXPECT_EQ(m.len, 8);
	EXPECT_MEM_EQ(m.buf, "uplink-1", 8);
	EXPECT_EQ(((struct sockaddr_in *)&m.from)->sin_addr.s_addr, htonl(0xc000020a));
	EXPECT_TRUE(wait_msg(&m, udp4));
	EXPECT_EQ(m.len, 11);
	EXPECT_MEM_EQ(m.buf, "uplink-two!", 11);
	EXPECT_EQ(st->ul_transfers, 1);
	EXPECT_EQ(st->ul_bytes, off - HDR);
	EXPECT_EQ(st->mux[1].ul_packets, 2);
	EXPECT_EQ(st->mux[1].ul_bytes, len1 + len2);
	EXPECT_EQ(st->ul_unknown_mux, 1);
	EXPECT_EQ(st->commands[QMAP_COMMAND_ACK], 1);
	EXPECT_EQ(st->malformed[QMAP_ERR_ZERO_LEN], 1);

	/* Downlink IPv4: back through the TUN, aggregated on mux 1, padded. */
	static const uint8_t dst1[4] = { 192, 0, 2, 20 };
	EXPECT_EQ(send_udp(udp4, AF_INET, "192.0.2.20", 6000, "downlink-1"), 0);
	EXPECT_TRUE(wait_msg(&m, client));
	EXPECT_TRUE(m.len > (ssize_t)HDR);
	EXPECT_EQ(m.buf[0], TRANSPORT_EP_BULK_IN);
	qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V1);
	EXPECT_EQ(qmap_next(&it, &f, &err), 1);
	expect_udp4_frame(&f, 1, dst1, 6000, "downlink-1");
	EXPECT_EQ(qmap_next(&it, &f, &err), 0);
	EXPECT_EQ(st->mux[1].dl_packets, 1);
	EXPECT_EQ(st->mux[1].dl_bytes, 38);

	/* Longest prefix: 192.0.2.200 is in mux 3's /25 as well as mux 1's /24. */
	static const uint8_t dst3[4] = { 192, 0, 2, 200 };
	EXPECT_EQ(send_udp(udp4, AF_INET, "192.0.2.200", 6000, "to-mux-3"), 0);
	EXPECT_TRUE(wait_msg(&m, client));
	qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V1);
	EXPECT_EQ(qmap_next(&it, &f, &err), 1);
	expect_udp4_frame(&f, 3, dst3, 6000, "to-mux-3");

	/* Downlink IPv6 on mux 1. */
	EXPECT_EQ(send_udp(udp6, AF_INET6, "2001:db8:1::20", 6001, "downlink-v6"), 0);
	EXPECT_TRUE(wait_msg(&m, client));
	qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V1);
	EXPECT_EQ(qmap_next(&it, &f, &err), 1);
	EXPECT_EQ(f.mux_id, 1);
	EXPECT_TRUE(f.flags & QMAP_FRAME_IPV6);
	EXPECT_EQ(f.len, 40 + 8 + 11);
	if (f.len == 40 + 8 + 11) {
		uint8_t want[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 0x20 };
		EXPECT_MEM_EQ(f.payload + 24, want, 16);
		EXPECT_MEM_EQ(f.payload + 48, "downlink-v6", 11);
	}

	/* No mux owns 198.51.100.77 (the kernel routes it into the TUN as on-link). */
	uint64_t no_route = st->dl_no_route;
	EXPECT_EQ(send_udp(udp4, AF_INET, "198.51.100.77", 6000, "nowhere"), 0);
	EXPECT_TRUE(test_wait_counter(loop, &st->dl_no_route, no_route + 1));

	/* Five packets at once: read in one go, split by dl_max_datagrams 3, the rest sent as
	 * soon as the TUN is empty (flush_usec 0). */
	uint64_t aggregates = st->dl_aggregates;
	for (int i = 0; i < 5; i++) {
		char payload[24];
		snprintf(payload, sizeof(payload), "burst-%d", i);
		EXPECT_EQ(send_udp(udp4, AF_INET, "192.0.2.21", 6000, payload), 0);
	}
	static const uint8_t dst2[4] = { 192, 0, 2, 21 };
	int seen = 0;
	for (int a = 0; a < 2; a++) {
		EXPECT_TRUE(wait_msg(&m, client));
		if (m.len < (ssize_t)HDR)
			break;
		qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V1);
		int in_this = 0;
		while (qmap_next(&it, &f, &err) == 1) {
			char payload[24];
			snprintf(payload, sizeof(payload), "burst-%d", seen++);
			expect_udp4_frame(&f, 1, dst2, 6000, payload);
			in_this++;
		}
		EXPECT_EQ(in_this, a == 0 ? 3 : 2);
	}
	EXPECT_EQ(seen, 5);
	EXPECT_EQ(st->dl_aggregates, aggregates + 2);
	/* The no-route packet was dropped, not aggregated: nothing more is pending. */
	test_run_for(loop, 0.02);
	EXPECT_EQ(recv(client, m.buf, sizeof(m.buf), MSG_DONTWAIT), -1);

	/* qmapd goes away: counters stay, downlink is drained and counted. */
	close(client);
	client = -1;
	EXPECT_TRUE(test_run_until(loop, is_disconnected, NULL));
	EXPECT_EQ(st->disconnects, 1);
	uint64_t dropped = st->dl_dropped_disconnected;
	EXPECT_EQ(send_udp(udp4, AF_INET, "192.0.2.22", 6000, "lost"), 0);
	EXPECT_TRUE(test_wait_counter(loop, &st->dl_dropped_disconnected, dropped + 1));

	/* And comes back. */
	client = client_connect();
	EXPECT_TRUE(client >= 0);
	EXPECT_TRUE(test_run_until(loop, is_connected, NULL));
	EXPECT_EQ(st->connections, 2);
	EXPECT_EQ(st->mux[1].ul_packets, 2);
	EXPECT_EQ(send_udp(udp4, AF_INET, "192.0.2.23", 6000, "again"), 0);
	EXPECT_TRUE(wait_msg(&m, client));
	qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V1);
	EXPECT_EQ(qmap_next(&it, &f, &err), 1);
	EXPECT_EQ(f.mux_id, 1);

	/* The stats text tests grep. */
	char *text = NULL;
	size_t text_len = 0;
	FILE *mf = open_memstream(&text, &text_len);
	EXPECT_TRUE(mf);
	if (mf) {
		sim_print_stats(cur, mf);
		fclose(mf);
		char line[128];
		snprintf(line, sizeof(line),
			 "mux 1: ul_packets=2 ul_bytes=%zu dl_packets=", len1 + len2);
		EXPECT_TRUE(strstr(text, line));
		EXPECT_TRUE(strstr(text, "\nul_transfers=1\n"));
		EXPECT_TRUE(strstr(text, "\nmalformed_zero_len=1\n"));
		EXPECT_TRUE(strstr(text, "\ncommands_ack=1\n"));
		EXPECT_TRUE(strstr(text, "\ninjected_garbage=0\n"));
		EXPECT_TRUE(strstr(text, "mux 3: "));
		EXPECT_TRUE(!strstr(text, "mux 4: "));
		free(text);
	}

	/* The stats file is replaced whole. */
	char stats_path[160];
	snprintf(stats_path, sizeof(stats_path), "%s.stats", sock_path);
	EXPECT_EQ(sim_write_stats_file(cur, stats_path), 0);
	struct stat sb;
	EXPECT_EQ(stat(stats_path, &sb), 0);
	EXPECT_TRUE(sb.st_size > 0);
	unlink(stats_path);

out:
	if (client >= 0)
		close(client);
	if (udp4 >= 0)
		close(udp4);
	if (udp6 >= 0)
		close(udp6);
	cur = sim_free(cur);
	EXPECT_EQ(access(sock_path, F_OK), -1);
	EXPECT_EQ(if_nametoindex(TEST_NETDEV), 0);
}

static void check_injections(void)
{
	static struct msg m;
	uint8_t agg[HDR + 256], pkt[128];
	struct qmap_iter it;
	struct qmap_frame f;
	struct qmap_command cmd;
	enum qmap_error err = _QMAP_ERR_MAX;
	char errbuf[SIM_ERROR_MAX];
	int client = -1, udp4 = -1;
	static const uint8_t dst[4] = { 192, 0, 2, 20 };

	base_options();
	opts.qmap_version = QMAP_V5;
	opts.csum_valid = true;
	opts.flush_usec = 2000;
	opts.inject_every = 1;
	EXPECT_EQ(sim_parse_inject("garbage,unknown-mux,command,oversize", &opts.inject, errbuf,
				   sizeof(errbuf)),
		  0);
	cur = start_sim();
	EXPECT_TRUE(cur);
	if (!cur)
		return;
	const struct sim_stats *st = sim_get_stats(cur);

	client = client_connect();
	udp4 = udp_socket(AF_INET, "198.51.100.1", 5000);
	EXPECT_TRUE(client >= 0 && udp4 >= 0);
	if (client < 0 || udp4 < 0)
		goto out;
	EXPECT_TRUE(test_run_until(loop, is_connected, NULL));

	/* A wakeup that finds only unroutable packets opens the aggregate without sending it:
	 * its leading injections must not be written (or counted) twice. */
	uint64_t no_route = st->dl_no_route;
	EXPECT_EQ(send_udp(udp4, AF_INET, "198.51.100.77", 6000, "nowhere"), 0);
	EXPECT_TRUE(test_wait_counter(loop, &st->dl_no_route, no_route + 1));

	for (uint32_t round = 1; round <= 2; round++) {
		char payload[24];
		snprintf(payload, sizeof(payload), "inject-%u", round);
		EXPECT_EQ(send_udp(udp4, AF_INET, "192.0.2.20", 6000, payload), 0);
		EXPECT_TRUE(wait_msg(&m, client));
		if (m.len < (ssize_t)HDR)
			break;
		qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V5);

		/* garbage: a non-IP payload on mux 1, skipped, parsing goes on */
		EXPECT_EQ(qmap_next(&it, &f, &err), -EBADMSG);
		EXPECT_EQ(err, QMAP_ERR_NOT_IP);
		/* unknown-mux: a valid IPv4 packet on mux 200 */
		EXPECT_EQ(qmap_next(&it, &f, &err), 1);
		EXPECT_EQ(f.kind, QMAP_FRAME_DATA);
		EXPECT_EQ(f.mux_id, SIM_INJECT_UNKNOWN_MUX_ID);
		EXPECT_EQ(f.len, 32);
		EXPECT_EQ(f.payload[0], 0x45);
		EXPECT_EQ(csum(f.payload, 20, 0), 0);
		/* command: FLOW_ENABLE request on mux 1, transaction ids counting up */
		EXPECT_EQ(qmap_next(&it, &f, &err), 1);
		EXPECT_EQ(f.kind, QMAP_FRAME_COMMAND);
		EXPECT_EQ(f.mux_id, 1);
		EXPECT_EQ(qmap_command_parse(f.payload, f.len, &cmd), 0);
		EXPECT_EQ(cmd.name, QMAP_COMMAND_FLOW_ENABLE);
		EXPECT_EQ(cmd.type, QMAP_COMMAND_REQUEST);
		EXPECT_EQ(cmd.transaction_id, round);
		/* the real packet, checksum marked valid */
		EXPECT_EQ(qmap_next(&it, &f, &err), 1);
		expect_udp4_frame(&f, 1, dst, 6000, payload);
		EXPECT_TRUE(f.flags & QMAP_FRAME_CSUM_VALID);
		/* oversize: a header at the very end whose length runs past it */
		err = _QMAP_ERR_MAX;
		EXPECT_EQ(qmap_next(&it, &f, &err), -EBADMSG);
		EXPECT_EQ(err, QMAP_ERR_LEN_OVERFLOW);
		EXPECT_EQ(qmap_next(&it, &f, &err), 0);
	}
	EXPECT_EQ(st->dl_aggregates, 2);
	EXPECT_EQ(st->dl_datagrams, 2);
	/* Every QMAP kind twice; the NTB kinds are for MBIM mode. */
	for (unsigned k = 0; k < _SIM_INJECT_MAX; k++)
		EXPECT_EQ(st->injected[k], (SIM_INJECT_QMAP_MASK >> k) & 1 ? 2 : 0);

	/* QMAPv5 uplink asking for the checksum: the wrong one we send must be replaced, or
	 * the kernel would drop the datagram. */
	*(struct transport_sim_header *)agg =
		(struct transport_sim_header){ .ep = TRANSPORT_EP_BULK_OUT,
					       .flags = TRANSPORT_SIM_FLAG_ZLP };
	size_t len =
		build_udp4(pkt, mux1_host4, net_addr4, 4000, 5000, "fix-my-csum", false, 0x1234);
	size_t off = HDR;
	off += qmap_write_data_header(agg + off, QMAP_V5, 1, len, 0, true);
	memcpy(agg + off, pkt, len);
	off += len;
	EXPECT_EQ(send(client, agg, off, 0), (ssize_t)off);
	EXPECT_TRUE(wait_msg(&m, udp4));
	EXPECT_EQ(m.len, 11);
	EXPECT_MEM_EQ(m.buf, "fix-my-csum", 11);
	EXPECT_EQ(st->ul_csum_computed, 1);
	EXPECT_EQ(st->ul_zlp, 1);
	EXPECT_EQ(st->mux[1].ul_packets, 1);

out:
	if (client >= 0)
		close(client);
	if (udp4 >= 0)
		close(udp4);
	cur = sim_free(cur);
}

/* Count the data frames of one bulk IN message (-1 if it is not a clean aggregate) and
 * whether one of them goes to last_octet of 192.0.2.0/24. */
static int count_frames(const struct msg *m, enum qmap_version version, uint8_t last_octet,
			bool *found)
{
	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	int n = 0, r;

	if (m->len < (ssize_t)HDR || m->buf[0] != TRANSPORT_EP_BULK_IN)
		return -1;
	qmap_iter_init(&it, (uint8_t *)m->buf + HDR, m->len - HDR, version);
	while ((r = qmap_next(&it, &f, &err)) == 1) {
		if (f.payload[19] == last_octet)
			*found = true;
		n++;
	}
	return r == 0 ? n : -1;
}

/*
 * qmapd stops reading: the sim must park its aggregate, stop reading the TUN and never
 * block, then resume when the socket drains, losing nothing it already aggregated.
 */
static void check_backpressure(void)
{
	static struct msg m;
	static char big[1401];
	int client = -1, udp4 = -1;

	base_options();
	opts.qmap_version = QMAP_V1;
	opts.flush_usec = 0;
	opts.dl_max_datagrams = 3;
	cur = start_sim();
	EXPECT_TRUE(cur);
	if (!cur)
		return;
	const struct sim_stats *st = sim_get_stats(cur);

	client = client_connect();
	udp4 = udp_socket(AF_INET, "198.51.100.1", 5000);
	EXPECT_TRUE(client >= 0 && udp4 >= 0);
	if (client < 0 || udp4 < 0)
		goto out;
	EXPECT_TRUE(test_run_until(loop, is_connected, NULL));

	/* ~4 KiB messages against a send buffer of several MiB: a few thousand packets. */
	memset(big, 'x', sizeof(big) - 1);
	double deadline = test_now() + TEST_WAIT_SECONDS;
	while (st->dl_send_blocked == 0 && test_now() < deadline) {
		for (int i = 0; i < 64; i++)
			/* A full TUN queue drops silently; that is the kernel's backpressure. */
			send_udp(udp4, AF_INET, "192.0.2.30", 6000, big);
		ev_run(loop, EVRUN_NOWAIT);
	}
	EXPECT_EQ(st->dl_send_blocked, 1);

	/* Parked: more traffic does not produce more aggregates. */
	uint64_t aggregates = st->dl_aggregates;
	for (int i = 0; i < 16; i++)
		send_udp(udp4, AF_INET, "192.0.2.30", 6000, big);
	test_run_for(loop, 0.02);
	EXPECT_EQ(st->dl_aggregates, aggregates);

	/* Drain: every aggregate the sim counted arrives whole, then the marker. */
	uint64_t frames = 0, messages = 0;
	bool marker = false, sent_marker = false;
	deadline = test_now() + TEST_WAIT_SECONDS;
	while (!marker && test_now() < deadline) {
		for (;;) {
			m.len = recv(client, m.buf, sizeof(m.buf), MSG_DONTWAIT);
			if (m.len < 0)
				break;
			int n = count_frames(&m, QMAP_V1, 31, &marker);
			EXPECT_TRUE(n > 0);
			frames += n;
			messages++;
		}
		if (!sent_marker && messages > aggregates) {
			send_udp(udp4, AF_INET, "192.0.2.31", 6000, "marker");
			sent_marker = true;
		}
		ev_run(loop, EVRUN_NOWAIT);
	}
	EXPECT_TRUE(marker);
	EXPECT_TRUE(sent_marker);
	EXPECT_EQ(messages, st->dl_aggregates);
	EXPECT_EQ(frames, st->dl_datagrams);
	EXPECT_EQ(st->mux[1].dl_packets, st->dl_datagrams);

out:
	if (client >= 0)
		close(client);
	if (udp4 >= 0)
		close(udp4);
	cur = sim_free(cur);
}

/* ---- offloads: TCP and UDP streams through the TUN, checked segment by segment ------- */

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* Pseudo-header sum of an IPv4 packet for its L4 protocol and length. */
static uint32_t pseudo4(const uint8_t *ip, uint8_t proto, size_t l4_len)
{
	uint32_t sum = proto + (uint32_t)l4_len;
	for (int i = 12; i < 20; i += 2)
		sum += get16(ip + i);
	return sum;
}

/* The IPv4 header and TCP/UDP checksums of a packet verify. */
static bool l4_csum_ok(const uint8_t *ip, size_t len)
{
	return len >= 28 && csum(ip, 20, 0) == 0 &&
	       csum(ip + 20, len - 20, pseudo4(ip, ip[9], len - 20)) == 0;
}

static const uint8_t mss_option[4] = { 2, 4, 0x05, 0xb4 }; /* MSS 1460 */

struct tcp4 {
	const uint8_t *src, *dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	bool mss;
	const uint8_t *payload;
	size_t plen;
	bool bad_csum; /* a wrong checksum, for the sim to replace (QMAPv5 offload bit) */
};

#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10

static size_t build_tcp4(uint8_t *p, const struct tcp4 *t)
{
	size_t thl = t->mss ? 24 : 20, len = 20 + thl + t->plen;

	memset(p, 0, 20 + thl);
	p[0] = 0x45;
	put16(p + 2, len);
	p[6] = 0x40; /* DF */
	p[8] = 64;
	p[9] = 6;
	memcpy(p + 12, t->src, 4);
	memcpy(p + 16, t->dst, 4);
	put16(p + 10, csum(p, 20, 0));
	put16(p + 20, t->sport);
	put16(p + 22, t->dport);
	put32(p + 24, t->seq);
	put32(p + 28, t->ack);
	p[32] = (uint8_t)(thl / 4) << 4;
	p[33] = t->flags;
	put16(p + 34, 65535);
	if (t->mss)
		memcpy(p + 40, mss_option, sizeof(mss_option));
	if (t->plen)
		memcpy(p + 20 + thl, t->payload, t->plen);
	put16(p + 36, t->bad_csum ? 0x1234 : csum(p + 20, len - 20, pseudo4(p, 6, len - 20)));
	return len;
}

/* An uplink transfer being built: QMAPv5 frames on mux 1. */
struct ul_agg {
	uint8_t buf[HDR + 16384];
	size_t len;
};

static void ul_add(struct ul_agg *a, const struct tcp4 *t)
{
	if (a->len == 0) {
		*(struct transport_sim_header *)a->buf =
			(struct transport_sim_header){ .ep = TRANSPORT_EP_BULK_OUT };
		a->len = HDR;
	}
	size_t h = qmap_ul_header_size(QMAP_V5);
	size_t len = build_tcp4(a->buf + a->len + h, t);
	qmap_write_data_header(a->buf + a->len, QMAP_V5, 1, len, 0, t->bad_csum);
	a->len += h + len;
}

static bool ul_send(int client, struct ul_agg *a)
{
	bool ok = send(client, a->buf, a->len, 0) == (ssize_t)a->len;
	a->len = 0;
	return ok;
}

/* Packets the kernel counted on the TUN (a super-packet is one), from /proc/net/dev. */
static void tun_packets(uint64_t *ret_rx, uint64_t *ret_tx)
{
	char line[512];
	FILE *f = fopen("/proc/net/dev", "re");

	*ret_rx = *ret_tx = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long v[10];
		char *p = strstr(line, TEST_NETDEV ":");
		if (p && sscanf(p + strlen(TEST_NETDEV ":"),
				"%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
				&v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 10) {
			*ret_rx = v[1];
			*ret_tx = v[9];
		}
	}
	if (f)
		fclose(f);
}

/* Calls fn for every data frame of the downlink messages that arrive, until it returns true. */
static bool dl_frames(int client, bool (*fn)(const struct qmap_frame *, void *), void *data)
{
	static struct msg m;
	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	int r;

	while (wait_msg(&m, client)) {
		EXPECT_EQ(m.buf[0], TRANSPORT_EP_BULK_IN);
		qmap_iter_init(&it, m.buf + HDR, m.len - HDR, QMAP_V5);
		while ((r = qmap_next(&it, &f, &err)) == 1)
			if (f.kind == QMAP_FRAME_DATA && fn(&f, data))
				return true;
		EXPECT_EQ(r, 0);
	}
	return false;
}

struct syn_wait {
	uint16_t port; /* the TCP port the segment goes to */
	uint8_t flags;
	uint32_t seq;
	uint16_t sport;
};

static bool is_syn(const struct qmap_frame *f, void *data)
{
	struct syn_wait *w = data;
	const uint8_t *p = f->payload;

	if (f->len < 40 || p[9] != 6 || get16(p + 22) != w->port || p[33] != w->flags)
		return false;
	w->seq = get32(p + 24);
	w->sport = get16(p + 20);
	return true;
}

/* What a downlink stream must look like, frame by frame. */
struct stream_check {
	uint8_t proto;
	uint16_t dport;
	const uint8_t *data; /* the bytes sent */
	size_t len;
	size_t got;    /* payload bytes seen so far, in order */
	uint32_t seq0; /* TCP: the sequence number of data[0] */
	size_t seg;    /* UDP: every datagram but the last is this long */
	unsigned frames;
};

static bool stream_frame(const struct qmap_frame *f, void *data)
{
	struct stream_check *c = data;
	const uint8_t *p = f->payload;

	if (f->len < 28 || p[9] != c->proto || get16(p + 22) != c->dport)
		return false;
	size_t l4h = c->proto == 6 ? (size_t)(p[32] >> 4) * 4 : 8;
	size_t plen = f->len - 20 - l4h;
	if (plen == 0)
		return false; /* a pure ACK */
	c->frames++;
	EXPECT_EQ(f->mux_id, 1);
	EXPECT_TRUE(f->len <= 1500); /* cut to the MTU */
	EXPECT_EQ(get16(p + 2), f->len);
	EXPECT_TRUE(l4_csum_ok(p, f->len));
	unsigned pad = f->header[0] & QMAP_PAD_MASK;
	EXPECT_EQ(pad, (4 - f->len % 4) % 4);
	for (unsigned i = 0; i < pad; i++)
		EXPECT_EQ(f->payload[f->len + i], 0);
	if (c->proto == 6) {
		EXPECT_EQ(get32(p + 24), c->seq0 + (uint32_t)c->got);
	} else {
		EXPECT_EQ(get16(p + 24), f->len - 20);
		if (c->got + plen < c->len)
			EXPECT_EQ(plen, c->seg);
	}
	EXPECT_TRUE(c->got + plen <= c->len);
	if (c->got + plen > c->len)
		return true;
	EXPECT_MEM_EQ(p + 20 + l4h, c->data + c->got, plen);
	c->got += plen;
	return c->got == c->len;
}

static bool tcp_connected(void *data)
{
	int fd = *(int *)data, err = 0;
	socklen_t len = sizeof(err);
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	/* getpeername succeeds once the handshake is done. */
	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 &&
	       getpeername(fd, (struct sockaddr *)&sa, &sl) == 0;
}

struct tcp_read {
	int fd;
	uint8_t *buf;
	size_t len, got;
};

static bool tcp_read_all(void *data)
{
	struct tcp_read *r = data;
	ssize_t n;

	while (r->got < r->len && (n = recv(r->fd, r->buf + r->got, r->len - r->got, 0)) > 0)
		r->got += (size_t)n;
	return r->got == r->len;
}

static uint8_t stream_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 8) + 1);
}

/*
 * The same streams with and without offload: downlink TCP and UDP (USO, datagrams that need
 * padding) cut into MTU-sized frames with valid checksums, contiguous and byte-identical, the
 * TCP one across several aggregates (dl_max_datagrams 4); an uplink TCP stream in two
 * transfers arriving byte-identical, one segment with the QMAPv5 "compute checksum" bit. With
 * offload the TUN must have carried super-packets both ways (its kernel packet counters).
 */
static void check_offload(bool offload)
{
	static uint8_t data[14600], rbuf[12000];
	static struct ul_agg ul;
	static const uint8_t peer[4] = { 192, 0, 2, 10 };
	_cleanup_close_ int client = -1, tcp = -1, udp = -1, lsn = -1, conn = -1;
	int one = 1;
	uint64_t rx0, tx0, rx1, tx1;
	/* Ports of their own per run: the kernel still knows the other run's connections. */
	const uint16_t port = offload ? 7000 : 7100, sport = (uint16_t)(port + 40000);

	base_options();
	opts.flush_usec = 0;
	opts.dl_max_datagrams = 4;
	opts.offload = offload;
	client = start_connected();
	if (client < 0)
		goto out;
	const struct sim_stats *st = sim_get_stats(cur);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = stream_byte(i);

	/* Downlink TCP: the kernel connects to the "host" the test plays over QMAP. */
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
	memcpy(&to.sin_addr, peer, 4);
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	EXPECT_TRUE(tcp >= 0);
	EXPECT_EQ(connect(tcp, (struct sockaddr *)&to, sizeof(to)), -1);
	struct syn_wait syn = { .port = port, .flags = TCP_SYN };
	EXPECT_TRUE(dl_frames(client, is_syn, &syn));
	ul_add(&ul, &(struct tcp4){ .src = peer,
				    .dst = net_addr4,
				    .sport = port,
				    .dport = syn.sport,
				    .seq = 1000,
				    .ack = syn.seq + 1,
				    .flags = TCP_SYN | TCP_ACK,
				    .mss = true });
	EXPECT_TRUE(ul_send(client, &ul));
	EXPECT_TRUE(test_run_until(loop, tcp_connected, &tcp));

	/* The initial window, ten full segments: one TSO super-packet (or a few). */
	tun_packets(&rx0, &tx0);
	EXPECT_EQ(send(tcp, data, sizeof(data), 0), (ssize_t)sizeof(data));
	struct stream_check c = {
		.proto = 6, .dport = port, .data = data, .len = sizeof(data), .seq0 = syn.seq + 1
	};
	uint64_t aggregates = st->dl_aggregates;
	EXPECT_TRUE(dl_frames(client, stream_frame, &c));
	EXPECT_EQ(c.got, sizeof(data));
	EXPECT_EQ(c.frames, 10);
	EXPECT_GE(st->dl_aggregates - aggregates, 3);
	tun_packets(&rx1, &tx1);
	if (offload)
		EXPECT_LT(tx1 - tx0, c.frames);
	else
		EXPECT_GE(tx1 - tx0, c.frames);

	/* Downlink UDP in 1001-byte datagrams (USO where the kernel has it): each needs padding. */
	udp = udp_socket(AF_INET, "198.51.100.1", (uint16_t)(port + 2));
	EXPECT_TRUE(udp >= 0);
	int gso = 1001;
	EXPECT_EQ(setsockopt(udp, SOL_UDP, UDP_SEGMENT, &gso, sizeof(gso)), 0);
	to.sin_port = htons(port + 1);
	EXPECT_EQ(sendto(udp, data, 5500, 0, (struct sockaddr *)&to, sizeof(to)), 5500);
	c = (struct stream_check){
		.proto = 17, .dport = (uint16_t)(port + 1), .data = data, .len = 5500, .seg = 1001
	};
	EXPECT_TRUE(dl_frames(client, stream_frame, &c));
	EXPECT_EQ(c.frames, 6);

	/* Uplink TCP: the "host" connects to a listener on the network side. */
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(port + 3) };
	memcpy(&la.sin_addr, net_addr4, 4);
	lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	EXPECT_EQ(setsockopt(lsn, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	EXPECT_EQ(bind(lsn, (struct sockaddr *)&la, sizeof(la)), 0);
	EXPECT_EQ(listen(lsn, 1), 0);
	struct tcp4 t = { .src = peer,
			  .dst = net_addr4,
			  .sport = sport,
			  .dport = (uint16_t)(port + 3),
			  .seq = 5000,
			  .flags = TCP_SYN,
			  .mss = true };
	ul_add(&ul, &t);
	EXPECT_TRUE(ul_send(client, &ul));
	struct syn_wait synack = { .port = sport, .flags = TCP_SYN | TCP_ACK };
	EXPECT_TRUE(dl_frames(client, is_syn, &synack));

	/* The handshake's ACK and twelve 1000-byte segments in two transfers, sent at once. */
	tun_packets(&rx0, &tx0);
	t = (struct tcp4){ .src = peer,
			   .dst = net_addr4,
			   .sport = sport,
			   .dport = (uint16_t)(port + 3),
			   .seq = 5001,
			   .ack = synack.seq + 1,
			   .flags = TCP_ACK };
	ul_add(&ul, &t);
	for (unsigned i = 0; i < 12; i++) {
		t.payload = data + i * 1000;
		t.plen = 1000;
		t.flags = i == 11 ? TCP_ACK | TCP_PSH : TCP_ACK;
		t.bad_csum = i == 3;
		ul_add(&ul, &t);
		t.seq += 1000;
		if (i == 5)
			EXPECT_TRUE(ul_send(client, &ul));
	}
	EXPECT_TRUE(ul_send(client, &ul));
	struct tcp_read rd = { .buf = rbuf, .len = sizeof(rbuf) };
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	EXPECT_TRUE(test_wait_counter(loop, &st->mux[1].ul_packets, 1 + 1 + 1 + 12));
	conn = accept4(lsn, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	EXPECT_TRUE(conn >= 0);
	rd.fd = conn;
	EXPECT_TRUE(test_run_until(loop, tcp_read_all, &rd));
	EXPECT_EQ(rd.got, sizeof(rbuf));
	EXPECT_MEM_EQ(rbuf, data, sizeof(rbuf));
	EXPECT_EQ(st->ul_csum_computed, 1);
	EXPECT_EQ(st->ul_tun_dropped + st->ul_tun_errors, 0);
	/* SYN-ACK, SYN, ACK, 12 segments; IP bytes counted per segment either way. */
	EXPECT_EQ(st->mux[1].ul_packets, 15);
	EXPECT_EQ(st->mux[1].ul_bytes, 44 + 44 + 40 + 12 * 1040);
	tun_packets(&rx1, &tx1);
	if (offload)
		EXPECT_LT(rx1 - rx0, 13);
	else
		EXPECT_EQ(rx1 - rx0, 13);

out:
	cur = sim_free(cur);
}

static char sim_dir[] = "/tmp/test-sim.XXXXXX";
static ev_timer tick;

static void sim_env_free(void)
{
	ev_timer_stop(loop, &tick);
	ev_loop_destroy(loop);
	unlink(sock_path);
	rmdir(sim_dir);
}

/* The cases that run qmapd-sim share a namespace, a socket directory and a loop, made by the
 * first of them. */
static void need_sim_env(void)
{
	if (loop)
		return;
	if (geteuid() != 0)
		TEST_SKIP("test-sim needs root (a TUN device in a private network namespace)");
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		TEST_SKIP("test-sim needs /dev/net/tun: %m");
	close(fd);
	/* Only this process moves: the TUN, its routes and test traffic stay in here. */
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("test-sim cannot create a network namespace: %m");
	if (!mkdtemp(sim_dir)) {
		fprintf(stderr, "mkdtemp: %m\n");
		exit(1);
	}
	snprintf(sock_path, sizeof(sock_path), "%s/sim.sock", sim_dir);
	loop = ev_loop_new(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "ev_loop_new failed\n");
		exit(1);
	}
	test_loop_tick(loop, &tick);
	atexit(sim_env_free);
}

/* Everything but the offload specifics behaves the same with offload and without (plain). */
TEST(datapath)
{
	need_sim_env();
	plain = false;
	check_datapath();
}

TEST(datapath_plain)
{
	need_sim_env();
	plain = true;
	check_datapath();
}

TEST(injections)
{
	need_sim_env();
	plain = false;
	check_injections();
}

TEST(injections_plain)
{
	need_sim_env();
	plain = true;
	check_injections();
}

TEST(backpressure)
{
	need_sim_env();
	plain = false;
	check_backpressure();
}

TEST(backpressure_plain)
{
	need_sim_env();
	plain = true;
	check_backpressure();
}

TEST(offload)
{
	need_sim_env();
	check_offload(true);
}

TEST(offload_off)
{
	need_sim_env();
	check_offload(false);
}
