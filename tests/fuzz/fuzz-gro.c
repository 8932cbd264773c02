/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for GRO. The input is a sequence of packets (2-byte length, 1 flag byte,
 * bytes), each copied into its own exact-size heap buffer so ASan sees any read past a packet.
 * The first byte picks the configuration. Every emitted iovec list must be: a header block
 * inside the gro struct, then pieces that lie inside the packets given so far, with a total no
 * larger than the virtio-net header + L2 + 65535; a super-packet's lengths must add up and its
 * pieces must follow the header in stream order.
 */
#include <linux/virtio_net.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PKTS 256

static uint8_t *pkts[MAX_PKTS];
static size_t lens[MAX_PKTS];
static unsigned n_pkts;
static struct gro g;
static unsigned segs_out;

static void check(int ok)
{
	if (!ok)
		abort();
}

static bool inside_packets(const void *p, size_t len)
{
	const uint8_t *b = p;

	for (unsigned i = 0; i < n_pkts; i++)
		if (b >= pkts[i] && b + len <= pkts[i] + lens[i])
			return true;
	return false;
}

static void on_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	const uint8_t *gs = (const uint8_t *)&g, *ge = gs + sizeof(g);
	size_t vl = g.cfg.vnet_hdr_len, l2 = g.cfg.l2_len, total = 0;
	struct virtio_net_hdr vh;
	(void)userdata;

	check(iovcnt >= 2 && iovcnt <= 1 + GRO_MAX_SEGS);
	const uint8_t *h = iov[0].iov_base;
	check(h >= gs && h + iov[0].iov_len <= ge);
	check(iov[0].iov_len >= vl + l2 && iov[0].iov_len <= GRO_HDR_ROOM);
	for (int i = 1; i < iovcnt; i++) {
		check(inside_packets(iov[i].iov_base, iov[i].iov_len));
		total += iov[i].iov_len;
	}
	memcpy(&vh, h, sizeof(vh));
	if (iovcnt == 2) {
		check(vh.gso_type == VIRTIO_NET_HDR_GSO_NONE);
		check(iov[0].iov_len == vl + l2);
		segs_out++;
		return;
	}
	/* A super-packet: header block + payloads make exactly the IP length it claims. */
	size_t hdr = iov[0].iov_len - vl - l2;
	const uint8_t *ip = h + vl + l2;
	size_t ip_len = hdr + total;
	check(ip_len <= g.cfg.max_bytes);
	check(vh.flags == VIRTIO_NET_HDR_F_NEEDS_CSUM);
	check(vh.hdr_len == l2 + hdr && vh.csum_start < vh.hdr_len);
	check(vh.gso_size > 0);
	for (int i = 1; i < iovcnt - 1; i++)
		check(iov[i].iov_len == vh.gso_size);
	check(iov[iovcnt - 1].iov_len <= vh.gso_size);
	if ((ip[0] >> 4) == 4)
		check((size_t)(ip[2] << 8 | ip[3]) == ip_len);
	else
		check((size_t)(ip[4] << 8 | ip[5]) + 40 == ip_len);
	segs_out += (unsigned)iovcnt - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t eth[2][14] = { { [12] = 0x08 }, { [12] = 0x86, [13] = 0xdd } };

	if (size < 1)
		return 0;
	struct gro_config cfg = {
		.vnet_hdr_len = data[0] & 1 ? 12 : 10,
		.l2_len = data[0] & 2 ? 14 : 0,
		.l2_header = { eth[0], eth[1] },
		.max_flows = (data[0] >> 2) & 3 ? 1u << ((data[0] >> 2) & 3) : 0,
		.max_segs = data[0] & 0x10 ? 4 : 0,
		.max_bytes = data[0] & 0x20 ? 4000 : 0,
		.tcp = !(data[0] & 0x40),
		.udp = !(data[0] & 0x80),
		.emit = on_emit,
	};
	check(gro_init(&g, &cfg) == 0);
	data++;
	size--;

	unsigned added = 0;
	segs_out = 0;
	n_pkts = 0;
	while (size >= 3 && n_pkts < MAX_PKTS) {
		size_t len = (size_t)(data[0] << 8 | data[1]);
		unsigned flags = data[2];
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		uint8_t *p = malloc(len ? len : 1);
		if (!p)
			break;
		memcpy(p, data, len);
		data += len;
		size -= len;
		pkts[n_pkts] = p;
		lens[n_pkts++] = len;
		enum gro_result r = gro_add(&g, p, len, flags & 1 ? GRO_PKT_CSUM_VALID : 0);
		check(r == GRO_RESULT_HELD || r == GRO_RESULT_MERGED || r == GRO_RESULT_EMITTED);
		added++;
		check(gro_pending(&g) <= g.cfg.max_flows);
		if (flags & 0x80)
			gro_flush(&g);
	}
	gro_flush(&g);
	check(gro_pending(&g) == 0);
	/* Every packet left exactly once, whole or as one super-packet's piece. */
	check(segs_out == added);
	check(g.stats.packets == added);
	for (unsigned i = 0; i < n_pkts; i++)
		free(pkts[i]);
	return 0;
}
