/* SPDX-License-Identifier: MIT */
/*
 * GSO: every segment of TCP/UDP, v4/v6 super-packets compared byte for byte with the packet an
 * independent builder makes for it (IDs, lengths, seq, flags, checksums by the test's own sum),
 * in place and into a separate buffer, resumed across buffers, the checksum-offload variant,
 * NEEDS_CSUM completion, rejected headers, the checksum helper against a byte-wise reference,
 * and the round trip GSO -> GRO giving back the original super-packet.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "gro.h"
#include "gso.h"
#include "pkt-util.h"
#include "test-case.h"

static uint8_t in[70000], out[140000], expect[70000];

static struct pk base(bool v6, uint8_t proto, size_t plen)
{
	return (struct pk){ .v6 = v6,
			    .proto = proto,
			    .id = 65500,
			    .ttl = 64,
			    .tos = 0x28,
			    .df = true,
			    .seq = 0xfffff000,
			    .ack = 99,
			    .flags = 0x10,
			    .win = 1000,
			    .sport = 5001,
			    .dport = 40000,
			    .host = 7,
			    .plen = plen,
			    .stream_off = 0xfffff000 };
}

static struct virtio_net_hdr vnet_for(const struct pk *s, uint16_t mss, size_t l2)
{
	size_t l3 = s->v6 ? 40 : 20;
	return (struct virtio_net_hdr){
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = s->proto == 17 ? VIRTIO_NET_HDR_GSO_UDP_L4
			    : s->v6	   ? VIRTIO_NET_HDR_GSO_TCPV6
					   : VIRTIO_NET_HDR_GSO_TCPV4,
		.gso_size = mss,
		.hdr_len = (uint16_t)(l2 + l3 + (s->proto == 6 ? 20 + s->optlen : 8)),
		.csum_start = (uint16_t)(l2 + l3),
		.csum_offset = s->proto == 6 ? 16 : 6,
	};
}

/* The segment i of super-packet s as the kernel would send it, built independently. */
static size_t expected_seg(const struct pk *s, uint16_t mss, uint32_t i, uint32_t n)
{
	struct pk e = *s;
	size_t left = s->plen - (size_t)i * mss;

	e.plen = left < mss ? left : mss;
	e.id = (uint16_t)(s->id + i);
	e.seq = s->seq + i * mss;
	e.stream_off = s->stream_off + i * mss;
	if (i + 1 != n)
		e.flags &= (uint8_t)~0x09;
	if (i != 0)
		e.flags &= (uint8_t)~0x80;
	return pk_build(expect, &e);
}

static void check_segments(int line, const struct pk *s, uint16_t mss, const uint8_t *o,
			   const struct gso_segment *segs, int n, uint32_t first, uint32_t total,
			   size_t reserve, bool offload)
{
	int before = test_failures;

	for (int k = 0; k < n; k++) {
		size_t len = expected_seg(s, mss, first + (uint32_t)k, total);
		const uint8_t *ip = o + segs[k].offset + reserve;
		size_t l3 = s->v6 ? 40 : 20;
		EXPECT_EQ(segs[k].len, len);
		EXPECT_EQ(segs[k].csum_offload, offload);
		if (k > 0)
			EXPECT_EQ(segs[k].offset, segs[k - 1].offset + reserve + segs[k - 1].len);
		if (segs[k].len != len)
			continue;
		if (!s->v6)
			EXPECT_TRUE(ref_ipv4_ok(ip));
		if (offload) {
			/* The field holds the pseudo-header sum; everything else is exact. */
			size_t at = l3 + (s->proto == 6 ? 16 : 6);
			EXPECT_EQ(pk_get16(ip + at),
				  ref_sum(NULL, 0, ref_pseudo(ip, s->proto, (uint32_t)(len - l3))));
			pk_be16(expect + at, pk_get16(ip + at));
		} else {
			EXPECT_TRUE(ref_l4_ok(ip, len, l3, s->proto));
		}
		EXPECT_MEM_EQ(ip, expect, len);
	}
	if (test_failures != before)
		fprintf(stderr, "  (segments checked from line %d)\n", line);
}

static void check_split(bool v6, uint8_t proto, size_t plen, uint16_t mss, uint8_t flags,
			bool offload)
{
	struct pk s = base(v6, proto, plen);
	struct gso_segment segs[128];
	struct gso_packet p;
	size_t reserve = 8;

	s.flags = flags;
	if (proto == 6) {
		s.optlen = 12;
		memcpy(s.opts, (uint8_t[]){ 1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8 }, 12);
	}
	size_t len = pk_build(in, &s);
	struct virtio_net_hdr vh = vnet_for(&s, mss, 14);
	EXPECT_EQ(gso_parse(&vh, 14, in, len, &p), 0);
	uint32_t n = (uint32_t)((plen + mss - 1) / mss);
	EXPECT_EQ(p.n_segs, n);

	/* Into a separate buffer. */
	int r = gso_write(&p, 0, offload ? GSO_F_L4_CSUM_OFFLOAD : 0, out, sizeof(out), reserve,
			  segs, 128);
	EXPECT_EQ(r, (int)n);
	EXPECT_EQ(segs[r - 1].offset + reserve + segs[r - 1].len, gso_out_size(&p, 0, reserve));
	check_segments(__LINE__, &s, mss, out, segs, r, 0, n, reserve, offload);

	/* In place: the packet read into the aggregation buffer after room for one header. */
	memset(out, 0xee, sizeof(out));
	pk_build(out + reserve, &s);
	EXPECT_EQ(gso_parse(&vh, 14, out + reserve, len, &p), 0);
	r = gso_write(&p, 0, offload ? GSO_F_L4_CSUM_OFFLOAD : 0, out, sizeof(out), reserve, segs,
		      128);
	EXPECT_EQ(r, (int)n);
	check_segments(__LINE__, &s, mss, out, segs, r, 0, n, reserve, offload);

	/* In place without room for all: refused, nothing touched. */
	if (n > 1) {
		pk_build(out + reserve, &s);
		memcpy(in, out, len + reserve);
		EXPECT_EQ(gso_parse(&vh, 14, out + reserve, len, &p), 0);
		r = gso_write(&p, 0, 0, out, gso_out_size(&p, 0, reserve) - 1, reserve, segs, 128);
		EXPECT_EQ(r, -ENOBUFS);
		EXPECT_MEM_EQ(out, in, len + reserve);
	}

	/* Resumed across small buffers (three segments' worth each), as aggregates fill. */
	len = pk_build(in, &s);
	EXPECT_EQ(gso_parse(&vh, 14, in, len, &p), 0);
	uint32_t done = 0;
	while (done < p.n_segs) {
		size_t room = 3 * (reserve + p.hdr_len + mss);
		r = gso_write(&p, done, offload ? GSO_F_L4_CSUM_OFFLOAD : 0, out, room, reserve,
			      segs, 128);
		EXPECT_GE(r, 1);
		if (r < 1)
			break;
		check_segments(__LINE__, &s, mss, out, segs, r, done, n, reserve, offload);
		done += (uint32_t)r;
	}
	/* max_segs limits a call too. */
	r = gso_write(&p, 0, 0, out, sizeof(out), reserve, segs, 1);
	EXPECT_EQ(r, 1);
}

static void check_needs_csum(bool v6, uint8_t proto)
{
	struct pk s = base(v6, proto, 333);
	struct gso_segment seg;
	struct gso_packet p;
	size_t l3 = v6 ? 40 : 20, at = l3 + (proto == 6 ? 16 : 6);
	size_t len = pk_build(expect, &s);

	/* What the kernel hands over with TUN_F_CSUM: the pseudo-header sum in the field. */
	memcpy(in + 4, expect, len);
	pk_be16(in + 4 + at, ref_sum(NULL, 0, ref_pseudo(in + 4, proto, (uint32_t)(len - l3))));
	struct virtio_net_hdr vh = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
				     .csum_start = (uint16_t)l3,
				     .csum_offset = proto == 6 ? 16 : 6 };
	EXPECT_EQ(gso_parse(&vh, 0, in + 4, len, &p), 0);
	EXPECT_EQ(p.n_segs, 1);
	EXPECT_TRUE(p.offloadable);
	/* In place. */
	EXPECT_EQ(gso_write(&p, 0, 0, in, sizeof(in), 4, &seg, 1), 1);
	EXPECT_EQ(seg.offset, 0);
	EXPECT_EQ(seg.len, len);
	EXPECT_MEM_EQ(in + 4, expect, len);

	/* Copied, with the offload: left as it was, flagged. */
	pk_be16(in + 4 + at, ref_sum(NULL, 0, ref_pseudo(in + 4, proto, (uint32_t)(len - l3))));
	EXPECT_EQ(gso_write(&p, 0, GSO_F_L4_CSUM_OFFLOAD, out, sizeof(out), 8, &seg, 1), 1);
	EXPECT_TRUE(seg.csum_offload);
	EXPECT_MEM_EQ(out + 8, in + 4, len);

	/* No NEEDS_CSUM: a plain copy. */
	struct virtio_net_hdr none = { 0 };
	EXPECT_EQ(gso_parse(&none, 0, expect, len, &p), 0);
	EXPECT_EQ(gso_write(&p, 0, GSO_F_L4_CSUM_OFFLOAD, out, sizeof(out), 8, &seg, 1), 1);
	EXPECT_EQ(seg.csum_offload, false);
	EXPECT_MEM_EQ(out + 8, expect, len);
}

TEST(errors)
{
	struct pk s = base(false, 6, 3000);
	struct gso_packet p;
	struct gso_segment seg[4];
	size_t len = pk_build(in, &s);
	struct virtio_net_hdr vh = vnet_for(&s, 1000, 0);

	vh.gso_type = VIRTIO_NET_HDR_GSO_UDP; /* UFO: never produced for tun since 4.14 */
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), -EPROTONOSUPPORT);
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), -EINVAL);
	vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), -EINVAL);
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	vh.gso_size = 0;
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), -EINVAL);
	vh.gso_size = 1000;
	EXPECT_EQ(gso_parse(&vh, 0, in, len - 1, &p), -EINVAL);
	EXPECT_EQ(gso_parse(&vh, 0, in, 30, &p), -EINVAL);
	in[6] |= 0x20; /* MF */
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), -EPROTONOSUPPORT);
	in[6] &= (uint8_t)~0x20;
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), 0);
	EXPECT_EQ(p.n_segs, 3);
	/* Overlap other than exactly in place. */
	EXPECT_EQ(gso_write(&p, 0, 0, in + 4, sizeof(in) - 4, 8, seg, 4), -EINVAL);
	EXPECT_EQ(gso_write(&p, 3, 0, out, sizeof(out), 8, seg, 4), -EINVAL);
	EXPECT_EQ(gso_write(&p, 0, 0, out, 100, 8, seg, 4), -ENOBUFS);

	struct pk e = base(true, 6, 3000);
	e.ext_hdr = 1;
	len = pk_build(in, &e);
	vh = vnet_for(&e, 1000, 0);
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), -EPROTONOSUPPORT);

	struct virtio_net_hdr partial = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
					  .csum_start = 10,
					  .csum_offset = 16 };
	EXPECT_EQ(gso_parse(&partial, 14, in, len, &p), -EINVAL);
	partial.csum_start = (uint16_t)(14 + len);
	EXPECT_EQ(gso_parse(&partial, 14, in, len, &p), -EINVAL);
}

TEST(csum_helper)
{
	uint8_t buf[300];

	srand(1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n + off <= 260; n++) {
			uint16_t mine = csum_fold(csum_partial(buf + off, n, 0));
			uint16_t ref = ref_sum(buf + off, n, 0);
			/* Stored in memory order, read back big-endian. */
			uint8_t b[2];
			csum_store(b, mine);
			/* 0x0000 and 0xffff are the same ones'-complement number. */
			uint16_t got = pk_get16(b);
			if (got == 0xffff)
				got = 0;
			if (ref == 0xffff)
				ref = 0;
			EXPECT_EQ(got, ref);
		}
}

static uint8_t roundtrip_out[70000];
static size_t roundtrip_len;
static int roundtrip_writes;

static void on_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	(void)userdata;
	roundtrip_len = 0;
	roundtrip_writes++;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(roundtrip_out + roundtrip_len, iov[i].iov_base, iov[i].iov_len);
		roundtrip_len += iov[i].iov_len;
	}
}

static void check_roundtrip(bool v6, uint8_t proto)
{
	struct pk s = base(v6, proto, 20000);
	struct gso_segment segs[64];
	struct gso_packet p;
	struct gro g;
	struct gro_config cfg = { .vnet_hdr_len = 10, .tcp = true, .udp = true, .emit = on_emit };

	s.flags = 0x18;
	size_t len = pk_build(in, &s);
	struct virtio_net_hdr vh = vnet_for(&s, 1400, 0);
	EXPECT_EQ(gso_parse(&vh, 0, in, len, &p), 0);
	int n = gso_write(&p, 0, 0, out, sizeof(out), 4, segs, 64);
	EXPECT_EQ(n, 15);
	EXPECT_EQ(gro_init(&g, &cfg), 0);
	roundtrip_writes = 0;
	for (int i = 0; i < n; i++)
		gro_add(&g, out + segs[i].offset + 4, segs[i].len, 0);
	gro_flush(&g);
	EXPECT_EQ(roundtrip_writes, 1);
	EXPECT_EQ(g.stats.segments_merged, 15);
	EXPECT_EQ(g.stats.csum_verified, 15);
	struct virtio_net_hdr back;
	memcpy(&back, roundtrip_out, sizeof(back));
	EXPECT_EQ(back.gso_type, vh.gso_type);
	EXPECT_EQ(back.gso_size, vh.gso_size);
	EXPECT_EQ(back.hdr_len, vh.hdr_len);
	EXPECT_EQ(back.csum_start, vh.csum_start);
	EXPECT_EQ(roundtrip_len, 10 + len);
	/* Everything but the L4 checksum (partial now) is the original super-packet. */
	size_t at = (v6 ? 40 : 20) + (proto == 6 ? 16 : 6);
	EXPECT_MEM_EQ(roundtrip_out + 10, in, at);
	EXPECT_MEM_EQ(roundtrip_out + 10 + at + 2, in + at + 2, len - at - 2);
}

static void check_splits(bool v6)
{
	check_split(v6, 6, 10000, 1448, 0x80 | 0x18 | 0x01, false);
	check_split(v6, 6, 10000, 1448, 0x18, true);
	check_split(v6, 6, 65535 - 100, 1000, 0x10, false);
	check_split(v6, 6, 500, 1448, 0x18, false);
	check_split(v6, 17, 9000, 1200, 0, false);
	check_split(v6, 17, 9000, 1200, 0, true);
	check_split(v6, 17, 64, 1, 0, false);
}

TEST(split_ipv4)
{
	check_splits(false);
}

TEST(split_ipv6)
{
	check_splits(true);
}

TEST(needs_csum)
{
	for (int v6 = 0; v6 < 2; v6++) {
		check_needs_csum(v6, 6);
		check_needs_csum(v6, 17);
	}
}

TEST(roundtrip)
{
	for (int v6 = 0; v6 < 2; v6++) {
		check_roundtrip(v6, 6);
		check_roundtrip(v6, 17);
	}
}
