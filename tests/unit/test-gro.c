/* SPDX-License-Identifier: MIT */
/*
 * GRO: byte-exact super-packets (virtio-net header, rewritten first header, payload iovecs
 * pointing into the input), the flows that must not merge, limits, interleaving, v4/v6,
 * TCP/UDP, with and without the QMAPv5 valid bit, bad checksums, eviction and ordering.
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gro.h"
#include "pkt-util.h"
#include "test-case.h"

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define MAX_OUT 512

struct out {
	uint8_t *data; /* the bytes a writev would have written */
	size_t len;
	int iovcnt;
	bool payload_in_arena; /* every iovec after the first points into the input arena */
};

static uint8_t arena[4 << 20];
static size_t arena_used;
static struct out outs[MAX_OUT];
static unsigned n_out;

static void reset_outputs(void)
{
	for (unsigned i = 0; i < n_out; i++)
		free(outs[i].data);
	n_out = 0;
	arena_used = 0;
}

static void on_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	struct out *o = &outs[n_out++];
	size_t total = 0;
	(void)userdata;

	if (n_out > MAX_OUT)
		abort();
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	o->data = malloc(total ? total : 1);
	o->len = 0;
	o->iovcnt = iovcnt;
	o->payload_in_arena = true;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *b = iov[i].iov_base;
		memcpy(o->data + o->len, b, iov[i].iov_len);
		o->len += iov[i].iov_len;
		if (i > 0 && (b < arena || b + iov[i].iov_len > arena + arena_used))
			o->payload_in_arena = false;
	}
}

/* Build a packet into the arena (the "transfer buffer"). */
static uint8_t *add_pkt(const struct pk *s, size_t *ret_len)
{
	uint8_t *p = arena + arena_used;
	*ret_len = pk_build(p, s);
	arena_used += (*ret_len + 7) & ~(size_t)7;
	return p;
}

static struct gro g;

static void setup(size_t vnet, size_t l2, bool udp, unsigned max_flows)
{
	static const uint8_t eth4[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00 };
	static const uint8_t eth6[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd };
	struct gro_config cfg = {
		.vnet_hdr_len = vnet,
		.l2_len = l2,
		.l2_header = { eth4, eth6 },
		.max_flows = max_flows,
		.tcp = true,
		.udp = udp,
		.emit = on_emit,
	};
	reset_outputs();
	EXPECT_EQ(gro_init(&g, &cfg), 0);
}

static struct pk tcp4(uint32_t seq, size_t plen)
{
	return (struct pk){ .proto = 6,
			    .id = (uint16_t)(100 + seq / 1000),
			    .ttl = 64,
			    .seq = seq,
			    .ack = 777,
			    .flags = 0x10,
			    .win = 512,
			    .sport = 443,
			    .dport = 40000,
			    .host = 1,
			    .plen = plen,
			    .stream_off = seq };
}

/*
 * Check out[idx] is one packet of n segments built from specs (all of one flow), as a
 * super-packet if n > 1: vnet header, L2, first header rewritten, payloads concatenated.
 */
static void expect_super(int line, unsigned idx, size_t vnet, size_t l2, const struct pk *specs,
			 unsigned n, bool valid)
{
	int before = test_failures;
	static uint8_t first[70000], seg[70000];
	struct virtio_net_hdr vh;

	EXPECT_LT(idx, n_out);
	if (idx >= n_out)
		goto out;
	const struct out *o = &outs[idx];
	memcpy(&vh, o->data, sizeof(vh));
	const uint8_t *ip = o->data + vnet + l2;
	size_t hdr = specs[0].v6 ? 40 : 20;
	size_t l3 = hdr;
	hdr += specs[0].proto == 6 ? 20u + specs[0].optlen : 8u;
	size_t total = hdr;
	for (unsigned i = 0; i < n; i++)
		total += specs[i].plen;
	EXPECT_TRUE(o->payload_in_arena);
	if (l2)
		EXPECT_EQ(o->data[vnet + l2 - 2], specs[0].v6 ? 0x86 : 0x08);
	if (n == 1) {
		EXPECT_EQ(o->iovcnt, 2);
		EXPECT_EQ(vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
		EXPECT_EQ(vh.flags, valid ? VIRTIO_NET_HDR_F_DATA_VALID : 0);
		size_t len = pk_build(seg, &specs[0]);
		EXPECT_EQ(o->len, vnet + l2 + len);
		if (o->len == vnet + l2 + len)
			EXPECT_MEM_EQ(ip, seg, len);
		goto out;
	}
	EXPECT_EQ(o->len, vnet + l2 + total);
	if (o->len != vnet + l2 + total)
		goto out;
	EXPECT_EQ(o->iovcnt, 1 + (int)n);
	EXPECT_EQ(vh.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	EXPECT_EQ(vh.gso_type, specs[0].proto == 17 ? VIRTIO_NET_HDR_GSO_UDP_L4
			       : specs[0].v6	    ? VIRTIO_NET_HDR_GSO_TCPV6
						    : VIRTIO_NET_HDR_GSO_TCPV4);
	EXPECT_EQ(vh.gso_size, specs[0].plen);
	EXPECT_EQ(vh.hdr_len, l2 + hdr);
	EXPECT_EQ(vh.csum_start, l2 + l3);
	EXPECT_EQ(vh.csum_offset, specs[0].proto == 6 ? 16 : 6);

	/* The expected first header: the first segment's, with the super-packet's lengths. */
	pk_build(first, &specs[0]);
	if (specs[0].v6) {
		pk_be16(first + 4, (uint16_t)(total - 40));
	} else {
		pk_be16(first + 2, (uint16_t)total);
		first[10] = first[11] = 0;
		pk_be16(first + 10, (uint16_t)~ref_sum(first, 20, 0));
	}
	if (specs[0].proto == 6) {
		if (specs[n - 1].flags & 0x08)
			first[l3 + 13] |= 0x08;
		pk_be16(first + l3 + 16,
			ref_sum(NULL, 0, ref_pseudo(first, 6, (uint32_t)(total - l3))));
	} else {
		pk_be16(first + l3 + 4, (uint16_t)(total - l3));
		pk_be16(first + l3 + 6,
			ref_sum(NULL, 0, ref_pseudo(first, 17, (uint32_t)(total - l3))));
	}
	EXPECT_MEM_EQ(ip, first, hdr);
	size_t off = hdr;
	for (unsigned i = 0; i < n; i++) {
		size_t len = pk_build(seg, &specs[i]);
		EXPECT_MEM_EQ(ip + off, seg + len - specs[i].plen, specs[i].plen);
		off += specs[i].plen;
	}
out:
	if (test_failures != before)
		fprintf(stderr, "  (checking output %u from line %d)\n", idx, line);
}

static void feed(const struct pk *s, unsigned n, unsigned flags)
{
	for (unsigned i = 0; i < n; i++) {
		size_t len;
		uint8_t *p = add_pkt(&s[i], &len);
		gro_add(&g, p, len, flags);
	}
}

static void check_tcp4_merge(bool valid, size_t vnet, size_t l2)
{
	struct pk s[16];

	setup(vnet, l2, false, 0);
	for (unsigned i = 0; i < 16; i++) {
		s[i] = tcp4(1000 + i * 1448, 1448);
		s[i].id = (uint16_t)(100 + i);
	}
	s[15].flags |= 0x08; /* PSH on the last, as a sender's write ends */
	feed(s, 15, valid ? GRO_PKT_CSUM_VALID : 0);
	EXPECT_EQ(n_out, 0);
	EXPECT_EQ(gro_pending(&g), 1);
	feed(s + 15, 1, valid ? GRO_PKT_CSUM_VALID : 0);
	/* The PSH segment ends the super-packet at once. */
	EXPECT_EQ(n_out, 1);
	EXPECT_EQ(gro_pending(&g), 0);
	expect_super(__LINE__, 0, vnet, l2, s, 16, valid);
	EXPECT_EQ(g.stats.super_packets, 1);
	EXPECT_EQ(g.stats.segments_merged, 16);
	EXPECT_EQ(g.stats.csum_verified, valid ? 0 : 16);
}

TEST(tcp4_merge)
{
	check_tcp4_merge(true, 10, 0);
}

TEST(tcp4_merge_csum_unverified)
{
	check_tcp4_merge(false, 10, 0);
}

TEST(tcp4_merge_vnet12_ethernet)
{
	check_tcp4_merge(true, 12, 14);
}

/*
 * A second L2 header for lone packets (qmapd's untagged Ethernet while XDP gives them
 * headroom): lone packets take it once switched on, super-packets keep the first one.
 */
TEST(alone_l2)
{
	static const uint8_t tag4[18] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0, 0, 0, 0x08 };
	static const uint8_t tag6[18] = { 2, 0, 0, 0,	 0, 1, 2, 0,	0,
					  0, 0, 2, 0x81, 0, 0, 0, 0x86, 0xdd };
	static const uint8_t eth4[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00 };
	static const uint8_t eth6[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd };
	struct gro_config cfg = {
		.vnet_hdr_len = 10,
		.l2_len = 18,
		.l2_header = { tag4, tag6 },
		.l2_alone_len = 14,
		.l2_alone_header = { eth4, eth6 },
		.tcp = true,
		.emit = on_emit,
	};
	struct pk s[4];

	reset_outputs();
	EXPECT_EQ(gro_init(&g, &cfg), 0);
	for (unsigned i = 0; i < 4; i++) {
		s[i] = tcp4(5000 + i * 1448, 1448);
		s[i].id = (uint16_t)(100 + i);
	}
	/* Off (the default): a lone packet is tagged like a super-packet. */
	feed(s, 1, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	EXPECT_EQ(n_out, 1);
	expect_super(__LINE__, 0, 10, 18, s, 1, true);
	EXPECT_TRUE(memcmp(outs[0].data + 10, tag4, 18) == 0);

	gro_set_alone_l2(&g, true);
	feed(s + 1, 1, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	EXPECT_EQ(n_out, 2);
	expect_super(__LINE__, 1, 10, 14, s + 1, 1, true);
	EXPECT_TRUE(memcmp(outs[1].data + 10, eth4, 14) == 0);
	struct iovec h = gro_alone_header(&g, false, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(h.iov_len, 24);
	EXPECT_TRUE(memcmp((uint8_t *)h.iov_base + 10, eth4, 14) == 0);
	h = gro_alone_header(&g, true, 0);
	EXPECT_TRUE(memcmp((uint8_t *)h.iov_base + 10, eth6, 14) == 0);

	/* A super-packet keeps the tag. */
	feed(s + 2, 2, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	EXPECT_EQ(n_out, 3);
	expect_super(__LINE__, 2, 10, 18, s + 2, 2, true);
	EXPECT_TRUE(memcmp(outs[2].data + 10, tag4, 18) == 0);

	gro_set_alone_l2(&g, false);
	EXPECT_EQ(gro_alone_header(&g, false, 0).iov_len, 28);

	/* Without a second header, switching it on changes nothing. */
	cfg.l2_alone_len = 0;
	EXPECT_EQ(gro_init(&g, &cfg), 0);
	gro_set_alone_l2(&g, true);
	EXPECT_EQ(gro_alone_header(&g, false, 0).iov_len, 28);
}

/*
 * gro_alone_header(): the block a lone packet of that IP version and valid bit gets from
 * gro_add(), counted (packet, write, GRO_NM_SKIPPED) by the next gro_flush(), not before.
 */
TEST(alone_header_counted)
{
	static const uint8_t eth4[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00 };
	static const uint8_t eth6[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd };
	struct gro_config cfg = {
		.vnet_hdr_len = 10,
		.l2_len = 14,
		.l2_header = { eth4, eth6 },
		.tcp = true,
		.emit = on_emit,
	};
	struct pk s = tcp4(5000, 1448);

	reset_outputs();
	EXPECT_EQ(gro_init(&g, &cfg), 0);
	/* What gro_add() puts in front of a lone packet, valid bit and not. */
	for (unsigned valid = 0; valid < 2; valid++) {
		feed(&s, 1, valid ? GRO_PKT_CSUM_VALID : 0);
		gro_flush(&g);
		struct iovec h = gro_alone_header(&g, false, valid ? GRO_PKT_CSUM_VALID : 0);
		EXPECT_EQ(n_out, valid + 1);
		EXPECT_EQ(h.iov_len, 24);
		EXPECT_TRUE(memcmp(h.iov_base, outs[valid].data, h.iov_len) == 0);
	}
	struct iovec h6 = gro_alone_header(&g, true, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(h6.iov_len, 24);
	EXPECT_TRUE(memcmp((uint8_t *)h6.iov_base + 10, eth6, 14) == 0);
	EXPECT_EQ(((uint8_t *)h6.iov_base)[0], VIRTIO_NET_HDR_F_DATA_VALID);
	/* Two fed, three headers given out: the first counted by the second flush, two wait. */
	EXPECT_EQ(g.stats.packets, 3);
	EXPECT_EQ(g.stats.reasons[GRO_NM_SKIPPED], 1);
	gro_flush(&g);
	EXPECT_EQ(g.stats.packets, 5);
	EXPECT_EQ(g.stats.writes, 5);
	EXPECT_EQ(g.stats.reasons[GRO_NM_SKIPPED], 3);
	gro_flush(&g);
	EXPECT_EQ(g.stats.packets, 5);
	EXPECT_EQ(g.stats.reasons[GRO_NM_SKIPPED], 3);
}

/* ethtool -K DEV gro off: held flows go first, then every packet alone, in order. */
TEST(switch_off)
{
	struct pk s[8];

	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 8; i++) {
		s[i] = tcp4(5000 + i * 1448, 1448);
		s[i].id = (uint16_t)(100 + i);
	}
	feed(s, 3, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(n_out, 0);
	gro_set_off(&g, true);
	EXPECT_EQ(gro_pending(&g), 0);
	EXPECT_EQ(n_out, 1);
	expect_super(__LINE__, 0, 10, 0, s, 3, true);

	feed(s + 3, 3, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(gro_pending(&g), 0);
	EXPECT_EQ(n_out, 4);
	for (unsigned i = 0; i < 3; i++)
		expect_super(__LINE__, 1 + i, 10, 0, s + 3 + i, 1, true);
	EXPECT_EQ(g.stats.reasons[GRO_NM_OFF], 3);
	EXPECT_EQ(g.stats.segments_merged, 3);

	gro_set_off(&g, false);
	feed(s + 6, 2, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	EXPECT_EQ(n_out, 5);
	expect_super(__LINE__, 4, 10, 0, s + 6, 2, true);
	EXPECT_EQ(g.stats.super_packets, 2);
}

TEST(bad_csum)
{
	struct pk s[8];

	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 8; i++) {
		s[i] = tcp4(5000 + i * 1000, 1000);
		s[i].id = (uint16_t)(7 + i);
	}
	for (unsigned i = 0; i < 8; i++) {
		size_t len;
		uint8_t *p = add_pkt(&s[i], &len);
		if (i == 4)
			p[len - 1] ^= 0x55;
		gro_add(&g, p, len, 0);
	}
	gro_flush(&g);
	/* 0-3 merged, 4 alone without DATA_VALID (the kernel drops it), 5-7 a new flow. */
	EXPECT_EQ(n_out, 3);
	expect_super(__LINE__, 0, 10, 0, s, 4, false);
	EXPECT_EQ(outs[1].iovcnt, 2);
	struct virtio_net_hdr vh;
	memcpy(&vh, outs[1].data, sizeof(vh));
	EXPECT_EQ(vh.flags, 0);
	EXPECT_EQ(outs[1].len, 10 + 20 + 20 + 1000);
	expect_super(__LINE__, 2, 10, 0, s + 5, 3, false);
	EXPECT_EQ(g.stats.reasons[GRO_NM_BAD_CSUM], 1);

	/* A bad first segment is found when the second arrives and goes out alone. */
	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 3; i++) {
		size_t len;
		uint8_t *p = add_pkt(&s[i], &len);
		if (i == 0)
			p[40] ^= 1;
		gro_add(&g, p, len, 0);
	}
	gro_flush(&g);
	EXPECT_EQ(n_out, 2);
	EXPECT_EQ(outs[0].iovcnt, 2);
	expect_super(__LINE__, 1, 10, 0, s + 1, 2, false);

	/* With the valid bit nothing is verified: the modem said so. */
	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 3; i++) {
		size_t len;
		uint8_t *p = add_pkt(&s[i], &len);
		gro_add(&g, p, len, GRO_PKT_CSUM_VALID);
	}
	gro_flush(&g);
	EXPECT_EQ(n_out, 1);
	EXPECT_EQ(g.stats.csum_verified, 0);
	expect_super(__LINE__, 0, 10, 0, s, 3, true);
}

TEST(out_of_order)
{
	struct pk s[4];

	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 4; i++) {
		s[i] = tcp4(i * 1448, 1448);
		s[i].df = true;
	}
	struct pk order[4] = { s[0], s[1], s[3], s[2] };
	feed(order, 4, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	/* Arrival order is kept: [0,1], 3, 2. */
	EXPECT_EQ(n_out, 3);
	expect_super(__LINE__, 0, 10, 0, s, 2, true);
	expect_super(__LINE__, 1, 10, 0, &s[3], 1, true);
	expect_super(__LINE__, 2, 10, 0, &s[2], 1, true);
	EXPECT_EQ(g.stats.reasons[GRO_END_SEQ], 2);
}

/* Two segments that must each go out alone; reason is the counter that must say why. */
static void expect_no_merge(int line, const struct pk *a, const struct pk *b, int reason, bool udp)
{
	int before = test_failures;
	struct pk s[2] = { *a, *b };

	setup(10, 0, udp, 0);
	feed(s, 2, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	EXPECT_EQ(n_out, 2);
	EXPECT_EQ(g.stats.super_packets, 0);
	EXPECT_GE(g.stats.reasons[reason], 1);
	if (n_out == 2) {
		expect_super(line, 0, 10, 0, &s[0], 1, true);
		expect_super(line, 1, 10, 0, &s[1], 1, true);
	}
	if (test_failures != before)
		fprintf(stderr, "  (no-merge case from line %d)\n", line);
}

TEST(no_merge)
{
	struct pk a = tcp4(0, 1000), b = tcp4(1000, 1000);
	struct pk x;

	b.id = (uint16_t)(a.id + 1);
	/* Different options: timestamps differ. */
	struct pk a1 = a, b1 = b;
	a1.optlen = b1.optlen = 12;
	uint8_t ts1[12] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 9 };
	uint8_t ts2[12] = { 1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 9 };
	memcpy(a1.opts, ts1, 12);
	memcpy(b1.opts, ts2, 12);
	expect_no_merge(__LINE__, &a1, &b1, GRO_END_HEADER, false);
	/* Different option length. */
	b1 = b;
	expect_no_merge(__LINE__, &a1, &b1, GRO_END_HEADER, false);
	/* PSH on the first: nothing may follow it, so it goes out at once. */
	x = a;
	x.flags |= 0x08;
	expect_no_merge(__LINE__, &x, &b, GRO_NM_PSH_ALONE, false);
	/* Different TTL, TOS, DF. */
	x = b;
	x.ttl = 63;
	expect_no_merge(__LINE__, &a, &x, GRO_END_HEADER, false);
	x = b;
	x.tos = 4;
	expect_no_merge(__LINE__, &a, &x, GRO_END_HEADER, false);
	x = b;
	x.df = true;
	expect_no_merge(__LINE__, &a, &x, GRO_END_HEADER, false);
	/* IDs not counting up without DF. */
	x = b;
	x.id = (uint16_t)(a.id + 5);
	expect_no_merge(__LINE__, &a, &x, GRO_END_HEADER, false);
	/* Different ack. */
	x = b;
	x.ack++;
	expect_no_merge(__LINE__, &a, &x, GRO_END_HEADER, false);
	/* IP options. */
	x = b;
	x.ip_opts = 1;
	expect_no_merge(__LINE__, &a, &x, GRO_NM_IP_OPTIONS, false);
	/* A larger segment after a smaller one. */
	x = tcp4(1000, 1400);
	x.id = b.id;
	expect_no_merge(__LINE__, &a, &x, GRO_END_SIZE, false);
	/* Flags: FIN, SYN, URG, ECE, CWR never merge. */
	uint8_t bad_flags[] = { 0x11, 0x12, 0x30, 0x50, 0x90, 0x04 };
	for (size_t i = 0; i < sizeof(bad_flags); i++) {
		x = b;
		x.flags = bad_flags[i];
		expect_no_merge(__LINE__, &a, &x, GRO_NM_TCP_FLAGS, false);
	}
	/* A pure ACK of the same connection. */
	x = b;
	x.plen = 0;
	expect_no_merge(__LINE__, &a, &x, GRO_NM_NO_PAYLOAD, false);
	/* Different port: a separate flow; both held, both alone. */
	x = b;
	x.dport++;
	setup(10, 0, false, 0);
	struct pk two[2] = { a, x };
	feed(two, 2, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(gro_pending(&g), 2);
	gro_flush(&g);
	EXPECT_EQ(n_out, 2);
	EXPECT_EQ(g.stats.super_packets, 0);

	/* IPv6 with an extension header, and with different hop limit / flow label. */
	struct pk a6 = a, b6 = b;
	a6.v6 = b6.v6 = true;
	x = b6;
	x.ext_hdr = 1;
	expect_no_merge(__LINE__, &a6, &x, GRO_NM_IPV6_EXT, false);
	x = b6;
	x.ttl = 1;
	expect_no_merge(__LINE__, &a6, &x, GRO_END_HEADER, false);
	x = b6;
	x.flow_label = 5;
	expect_no_merge(__LINE__, &a6, &x, GRO_END_HEADER, false);
	x = b6;
	x.tos = 0x20;
	expect_no_merge(__LINE__, &a6, &x, GRO_END_HEADER, false);

	/* UDP with USO off: not merged at all. */
	struct pk u1 = { .proto = 17,
			 .ttl = 64,
			 .df = true,
			 .sport = 53,
			 .dport = 5353,
			 .host = 3,
			 .plen = 500 };
	struct pk u2 = u1;
	u2.stream_off = 500;
	expect_no_merge(__LINE__, &u1, &u2, GRO_NM_NOT_TCP_UDP, false);
	EXPECT_EQ(g.stats.reasons[GRO_NM_NOT_TCP_UDP], 2);
	/* UDP: a larger datagram after a smaller one. */
	u2.plen = 600;
	expect_no_merge(__LINE__, &u1, &u2, GRO_END_SIZE, true);
}

TEST(psh_in_middle)
{
	struct pk s[5];

	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 5; i++) {
		s[i] = tcp4(i * 1000, 1000);
		s[i].df = true;
	}
	s[2].flags |= 0x08;
	feed(s, 5, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(n_out, 1);
	gro_flush(&g);
	EXPECT_EQ(n_out, 2);
	expect_super(__LINE__, 0, 10, 0, s, 3, true);
	expect_super(__LINE__, 1, 10, 0, s + 3, 2, true);
	EXPECT_EQ(outs[0].data[10 + 20 + 13], 0x18);
}

TEST(limits)
{
	static struct pk s[100];

	/* 1448-byte segments: 45 fit in 65535 bytes of IP packet. */
	setup(12, 14, false, 0);
	for (unsigned i = 0; i < 100; i++) {
		s[i] = tcp4(i * 1448, 1448);
		s[i].id = (uint16_t)(65530 + i); /* wraps */
	}
	feed(s, 100, 0);
	EXPECT_EQ(n_out, 2);
	gro_flush(&g);
	EXPECT_EQ(n_out, 3);
	expect_super(__LINE__, 0, 12, 14, s, 45, false);
	expect_super(__LINE__, 1, 12, 14, s + 45, 45, false);
	expect_super(__LINE__, 2, 12, 14, s + 90, 10, false);
	EXPECT_LT(20 + 20 + 45 * 1448, 65536);

	/* Small segments: the segment limit (64) ends the super-packet. */
	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 100; i++) {
		s[i] = tcp4(i * 100, 100);
		s[i].df = true;
	}
	feed(s, 100, GRO_PKT_CSUM_VALID);
	gro_flush(&g);
	EXPECT_EQ(n_out, 2);
	expect_super(__LINE__, 0, 10, 0, s, 64, true);
	expect_super(__LINE__, 1, 10, 0, s + 64, 36, true);

	/* A short segment ends the flow. */
	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 4; i++) {
		s[i] = tcp4(i * 1000, i == 2 ? 300 : 1000);
		s[i].df = true;
	}
	s[3].seq = s[3].stream_off = 2300;
	feed(s, 4, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(n_out, 1);
	gro_flush(&g);
	expect_super(__LINE__, 0, 10, 0, s, 3, true);
	expect_super(__LINE__, 1, 10, 0, s + 3, 1, true);
}

TEST(interleaved)
{
	struct pk s[3][20], in[60];

	setup(10, 14, true, 0);
	for (unsigned i = 0; i < 20; i++) {
		s[0][i] = tcp4(i * 1448, 1448);
		s[0][i].df = true;
		s[1][i] = s[0][i];
		s[1][i].v6 = true;
		s[1][i].host = 9;
		s[2][i] = (struct pk){ .proto = 17,
				       .v6 = true,
				       .ttl = 64,
				       .sport = 4433,
				       .dport = 50000,
				       .host = 4,
				       .plen = 1200,
				       .stream_off = i * 1200 };
		for (unsigned k = 0; k < 3; k++)
			in[i * 3 + k] = s[k][i];
	}
	feed(in, 60, 0);
	EXPECT_EQ(n_out, 0);
	EXPECT_EQ(gro_pending(&g), 3);
	gro_flush(&g);
	EXPECT_EQ(n_out, 3);
	for (unsigned k = 0; k < 3; k++)
		expect_super(__LINE__, k, 10, 14, s[k], 20, false);
	EXPECT_EQ(g.stats.flows, 3);
	EXPECT_EQ(g.stats.segments_merged, 60);
}

static void check_udp(bool v6, bool valid)
{
	struct pk s[11];

	setup(10, 0, true, 0);
	for (unsigned i = 0; i < 11; i++)
		s[i] = (struct pk){ .proto = 17,
				    .v6 = v6,
				    .ttl = 64,
				    .df = true,
				    .sport = 4433,
				    .dport = 50000,
				    .host = 4,
				    .plen = i == 10 ? 500 : 1200,
				    .stream_off = i * 1200 };
	feed(s, 11, valid ? GRO_PKT_CSUM_VALID : 0);
	/* The short last datagram ends the flow. */
	EXPECT_EQ(n_out, 1);
	expect_super(__LINE__, 0, 10, 0, s, 11, valid);

	/* IPv4 UDP without checksum verifies; IPv6 UDP without one does not. */
	setup(10, 0, true, 0);
	for (unsigned i = 0; i < 3; i++) {
		size_t len;
		uint8_t *p = add_pkt(&s[i], &len);
		p[(v6 ? 40 : 20) + 6] = p[(v6 ? 40 : 20) + 7] = 0;
		gro_add(&g, p, len, 0);
	}
	gro_flush(&g);
	EXPECT_EQ(n_out, v6 ? 3 : 1);
}

TEST(udp4)
{
	check_udp(false, true);
}

TEST(udp6_csum_unverified)
{
	check_udp(true, false);
}

TEST(evict_and_ack)
{
	struct pk s[3];

	setup(10, 0, false, 2);
	for (unsigned i = 0; i < 3; i++) {
		s[i] = tcp4(0, 1000);
		s[i].dport = (uint16_t)(1000 + i);
	}
	feed(s, 3, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(n_out, 1);
	expect_super(__LINE__, 0, 10, 0, &s[0], 1, true);
	EXPECT_EQ(g.stats.reasons[GRO_END_EVICT], 1);
	gro_flush(&g);
	expect_super(__LINE__, 1, 10, 0, &s[1], 1, true);
	expect_super(__LINE__, 2, 10, 0, &s[2], 1, true);

	/* A FIN of a held connection goes out after what is held, not before. */
	struct pk f[3];
	setup(10, 0, false, 0);
	for (unsigned i = 0; i < 3; i++) {
		f[i] = tcp4(i * 1000, 1000);
		f[i].df = true;
	}
	f[2].flags = 0x11;
	feed(f, 3, GRO_PKT_CSUM_VALID);
	EXPECT_EQ(n_out, 2);
	expect_super(__LINE__, 0, 10, 0, f, 2, true);
	expect_super(__LINE__, 1, 10, 0, f + 2, 1, true);
}

TEST(malformed)
{
	uint8_t p[64] = { 0x45 };
	struct pk s = tcp4(0, 10);
	size_t len;

	setup(10, 0, true, 0);
	gro_add(&g, p, 10, 0);
	gro_add(&g, p, 20, 0); /* total length 0 */
	uint8_t *q = add_pkt(&s, &len);
	gro_add(&g, q, len - 1, 0); /* total length says one more */
	q[32] = 0x40;		    /* TCP header length 16 */
	gro_add(&g, q, len, 0);
	EXPECT_EQ(n_out, 4);
	EXPECT_EQ(g.stats.reasons[GRO_NM_MALFORMED], 4);
	for (unsigned i = 0; i < n_out; i++)
		EXPECT_EQ(outs[i].iovcnt, 2);

	struct gro_config bad = { .vnet_hdr_len = 11, .emit = on_emit };
	EXPECT_EQ(gro_init(&g, &bad), -EINVAL);
	bad.vnet_hdr_len = 10;
	bad.max_segs = 65;
	EXPECT_EQ(gro_init(&g, &bad), -EINVAL);
	bad.max_segs = 0;
	bad.emit = NULL;
	EXPECT_EQ(gro_init(&g, &bad), -EINVAL);
	for (int r = 0; r < _GRO_REASON_MAX; r++)
		EXPECT_TRUE(gro_reason_name(r) != NULL);
}
