/* SPDX-License-Identifier: MIT */
/*
 * Downlink GRO (see gro.h for the contract). Choices made against the kernel's own GRO
 * (net/ipv4/tcp_offload.c, udp_offload.c, af_inet.c inet_gro_receive, ipv6 ip6_offload.c):
 *  - Same as the kernel: ack must be equal, option bytes identical (timestamps included),
 *    TTL/TOS/DF equal, PSH or a short segment ends the super-packet, the window is not
 *    compared and the first segment's is kept (the kernel re-segments with it).
 *  - Stricter: FIN, URG, ECE, CWR and the reserved bits are never merged (the kernel merges a
 *    FIN as the last segment and ECE when equal); an IPv4 packet whose total length is not the
 *    frame length is not merged (its tail would otherwise end up in the payload iovec).
 *  - IPv4 IDs: the kernel segments a TCPV4/UDP_L4 packet with IDs counting up from the first,
 *    so without DF only packets whose IDs do count up are merged (a receiver reassembling
 *    fragments relies on them); with DF the ID means nothing (RFC 6864) and is not checked.
 *  - Checksums are verified lazily: the first segment of a flow only when a second one joins
 *    it, so a packet that ends up alone is never summed here (the kernel checks it anyway).
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "csum.h"
#include "gro.h"
#include "macro.h"
#include "byteorder.h"

#define PROTO_TCP 6
#define PROTO_UDP 17

#define TCP_FLAG_PSH 0x08
#define TCP_FLAG_ACK 0x10

#define IPV4_DF 0x40 /* in the high byte of frag_off */

struct pkt_info {
	uint8_t key[40];
	uint8_t ipv6;
	uint8_t proto;
	uint8_t l3_len;
	uint8_t hdr_len;
	uint8_t psh;
	uint16_t payload;
};

const char *gro_reason_name(enum gro_reason r)
{
	switch (r) {
	case GRO_NM_NOT_TCP_UDP:
		return "not_tcp_udp";
	case GRO_NM_MALFORMED:
		return "malformed";
	case GRO_NM_IP_OPTIONS:
		return "ip_options";
	case GRO_NM_IPV6_EXT:
		return "ipv6_ext_header";
	case GRO_NM_FRAGMENT:
		return "fragment";
	case GRO_NM_TCP_FLAGS:
		return "tcp_flags";
	case GRO_NM_NO_PAYLOAD:
		return "no_payload";
	case GRO_NM_BAD_CSUM:
		return "bad_csum";
	case GRO_NM_PSH_ALONE:
		return "psh_alone";
	case GRO_NM_OFF:
		return "off";
	case GRO_NM_SKIPPED:
		return "skipped";
	case GRO_END_SEQ:
		return "end_seq";
	case GRO_END_HEADER:
		return "end_header";
	case GRO_END_SIZE:
		return "end_size";
	case GRO_END_FULL:
		return "end_full";
	case GRO_END_EVICT:
		return "end_evict";
	case _GRO_REASON_MAX:
		break;
	}
	return NULL;
}

static void write_vnet(const struct gro *g, uint8_t *p, uint8_t flags, uint8_t gso_type,
		       uint16_t hdr_len, uint16_t gso_size, uint16_t csum_start,
		       uint16_t csum_offset);

int gro_init(struct gro *g, const struct gro_config *cfg)
{
	if (!cfg->emit || (cfg->vnet_hdr_len != 10 && cfg->vnet_hdr_len != 12) ||
	    cfg->l2_len > GRO_MAX_L2_LEN || cfg->max_flows > GRO_MAX_FLOWS || cfg->max_segs == 1 ||
	    cfg->max_segs > GRO_MAX_SEGS || cfg->max_bytes > 65535)
		return -EINVAL;
	if (cfg->l2_len && (!cfg->l2_header[0] || !cfg->l2_header[1]))
		return -EINVAL;
	if (cfg->l2_alone_len > GRO_MAX_L2_LEN ||
	    (cfg->l2_alone_len && (!cfg->l2_alone_header[0] || !cfg->l2_alone_header[1])))
		return -EINVAL;
	/* A limit below one IPv6 header plus a byte could never merge anything. */
	if (cfg->max_bytes && cfg->max_bytes < 128)
		return -EINVAL;

	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	if (!g->cfg.max_flows)
		g->cfg.max_flows = GRO_MAX_FLOWS;
	if (!g->cfg.max_segs)
		g->cfg.max_segs = GRO_MAX_SEGS;
	if (!g->cfg.max_bytes)
		g->cfg.max_bytes = 65535;
	for (int i = 0; i < 2; i++) {
		if (cfg->l2_len)
			memcpy(g->l2[i], cfg->l2_header[i], cfg->l2_len);
		g->cfg.l2_header[i] = g->l2[i];
	}
	/* A lone packet's header depends only on its IP version and the valid bit. */
	for (int a = 0; a < 2; a++) {
		size_t l2_len = a ? cfg->l2_alone_len : cfg->l2_len;
		if (a && !l2_len)
			break;
		g->single_len[a] = (uint8_t)(cfg->vnet_hdr_len + l2_len);
		for (int v6 = 0; v6 < 2; v6++)
			for (int valid = 0; valid < 2; valid++) {
				uint8_t *h = g->single[a][v6][valid];
				write_vnet(g, h, valid ? VIRTIO_NET_HDR_F_DATA_VALID : 0,
					   VIRTIO_NET_HDR_GSO_NONE, 0, 0, 0, 0);
				if (l2_len)
					memcpy(h + cfg->vnet_hdr_len,
					       a ? cfg->l2_alone_header[v6] : g->l2[v6], l2_len);
			}
	}
	/* Not kept: the caller's headers were copied into the blocks. */
	g->cfg.l2_alone_header[0] = g->cfg.l2_alone_header[1] = NULL;
	gro_set_alone_l2(g, false);
	g->last = -1;
	return 0;
}

static bool ipv6_is_ext_header(uint8_t nh)
{
	switch (nh) {
	case 0:	  /* hop-by-hop */
	case 43:  /* routing */
	case 44:  /* fragment */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253:
	case 254: /* experiments */
		return true;
	default:
		return false;
	}
}

/*
 * Classify a packet. Returns -1 when it is a merge candidate (info filled), otherwise the
 * reason it is not; for GRO_NM_TCP_FLAGS, GRO_NM_NO_PAYLOAD the key is filled as well so that
 * a held flow of the same connection can be emitted before it.
 */
static int parse(const struct gro *g, const uint8_t *pkt, size_t len, struct pkt_info *info)
{
	size_t l3;
	uint8_t proto;

	if (len < 20 || len > 65535)
		return GRO_NM_MALFORMED;
	switch (pkt[0] >> 4) {
	case 4:
		if ((pkt[0] & 0x0f) < 5)
			return GRO_NM_MALFORMED;
		if ((pkt[0] & 0x0f) > 5)
			return GRO_NM_IP_OPTIONS;
		if (get_be16(pkt + 2) != len)
			return GRO_NM_MALFORMED;
		if (get_be16(pkt + 6) & 0x3fff)
			return GRO_NM_FRAGMENT;
		l3 = 20;
		proto = pkt[9];
		info->ipv6 = 0;
		break;
	case 6:
		if (len < 40 || get_be16(pkt + 4) + 40u != len)
			return GRO_NM_MALFORMED;
		l3 = 40;
		proto = pkt[6];
		if (ipv6_is_ext_header(proto))
			return GRO_NM_IPV6_EXT;
		info->ipv6 = 1;
		break;
	default:
		return GRO_NM_MALFORMED;
	}

	if (proto == PROTO_TCP && g->cfg.tcp) {
		if (len < l3 + 20)
			return GRO_NM_MALFORMED;
		size_t thlen = (size_t)(pkt[l3 + 12] >> 4) * 4;
		if (thlen < 20 || len < l3 + thlen)
			return GRO_NM_MALFORMED;
		info->hdr_len = (uint8_t)(l3 + thlen);
		uint8_t fl = pkt[l3 + 13];
		info->psh = (fl & TCP_FLAG_PSH) != 0;
		info->payload = (uint16_t)(len - l3 - thlen);
	} else if (proto == PROTO_UDP && g->cfg.udp) {
		if (len < l3 + 8 || get_be16(pkt + l3 + 4) != len - l3)
			return GRO_NM_MALFORMED;
		info->hdr_len = (uint8_t)(l3 + 8);
		info->psh = 0;
		info->payload = (uint16_t)(len - l3 - 8);
	} else {
		return GRO_NM_NOT_TCP_UDP;
	}
	info->proto = proto;
	info->l3_len = (uint8_t)l3;

	/* Fixed-size copies: the compiler makes them a few moves (this runs for every packet). */
	memset(info->key, 0, sizeof(info->key));
	if (info->ipv6) {
		memcpy(info->key, pkt + 8, 32); /* source and destination, adjacent */
	} else {
		memcpy(info->key, pkt + 12, 4);
		memcpy(info->key + 16, pkt + 16, 4);
	}
	memcpy(info->key + 32, pkt + l3, 4);
	info->key[36] = proto;
	info->key[37] = info->ipv6;

	if (proto == PROTO_TCP) {
		/* The data-offset byte's low nibble holds reserved bits and AE: not merged. */
		uint8_t fl = pkt[l3 + 13];
		if ((pkt[l3 + 12] & 0x0f) ||
		    (fl != TCP_FLAG_ACK && fl != (TCP_FLAG_ACK | TCP_FLAG_PSH)))
			return GRO_NM_TCP_FLAGS;
	}
	if (info->payload == 0)
		return GRO_NM_NO_PAYLOAD;
	return -1;
}

static bool csum_ok(const uint8_t *pkt, size_t len, const struct gro_flow *f)
{
	size_t l3 = f->l3_len;
	size_t alen = f->ipv6 ? 16 : 4;
	const uint8_t *addrs = pkt + (f->ipv6 ? 8 : 12);

	/* IPv4 UDP may go without a checksum (RFC 768); IPv6 UDP may not (RFC 8200 §8.1). */
	if (f->proto == PROTO_UDP && pkt[l3 + 6] == 0 && pkt[l3 + 7] == 0)
		return !f->ipv6;
	uint32_t sum = csum_pseudo(addrs, alen, f->proto, (uint32_t)(len - l3));
	sum = csum_partial(pkt + l3, len - l3, sum);
	return csum_fold(sum) == 0xffff;
}

static void write_vnet(const struct gro *g, uint8_t *p, uint8_t flags, uint8_t gso_type,
		       uint16_t hdr_len, uint16_t gso_size, uint16_t csum_start,
		       uint16_t csum_offset)
{
	/* Native byte order: what tun expects unless TUNSETVNETLE/BE changed it. */
	struct virtio_net_hdr vh = {
		.flags = flags,
		.gso_type = gso_type,
		.hdr_len = hdr_len,
		.gso_size = gso_size,
		.csum_start = csum_start,
		.csum_offset = csum_offset,
	};

	memcpy(p, &vh, sizeof(vh));
	if (g->cfg.vnet_hdr_len > sizeof(vh))
		memset(p + sizeof(vh), 0, g->cfg.vnet_hdr_len - sizeof(vh));
}

static void emit_single(struct gro *g, const uint8_t *pkt, size_t len, bool valid)
{
	/* DATA_VALID only says what we know: tun_get_user() ignores it (6.18, measured by
	 * test-gro-kernel) and verifies a single packet itself, which is why it is not summed here. */
	struct iovec iov[2] = {
		{ .iov_base = g->alone_blk[len && (pkt[0] >> 4) == 6][valid],
		  .iov_len = g->alone_blk_len },
		{ .iov_base = (void *)pkt, .iov_len = len },
	};
	g->stats.writes++;
	g->cfg.emit(g->cfg.userdata, iov, 2);
}

static void flow_release(struct gro *g, struct gro_flow *f)
{
	f->slot_in_use = 0;
	f->first = NULL;
	g->n_active--;
	if (g->last == f - g->flows)
		g->last = -1;
}

static void flow_emit(struct gro *g, struct gro_flow *f)
{
	size_t vl = g->cfg.vnet_hdr_len, l2 = g->cfg.l2_len;

	if (f->nseg == 1) {
		const uint8_t *pkt = f->first;
		size_t len = f->first_len;
		bool ok = f->first_ok;

		flow_release(g, f);
		emit_single(g, pkt, len, ok);
		return;
	}

	uint8_t *ip = f->scratch + vl + l2;
	uint8_t *l4 = ip + f->l3_len;
	uint32_t l4_len = f->total - f->l3_len;
	const uint8_t *addrs = ip + (f->ipv6 ? 8 : 12);
	uint8_t gso_type;

	if (f->ipv6) {
		put_be16(ip + 4, (uint16_t)l4_len);
	} else {
		put_be16(ip + 2, (uint16_t)f->total);
		ip[10] = ip[11] = 0;
		csum_store(ip + 10, (uint16_t)~csum_fold(csum_partial(ip, 20, 0)));
	}
	uint32_t pseudo = csum_pseudo(addrs, f->ipv6 ? 16 : 4, f->proto, l4_len);
	if (f->proto == PROTO_TCP) {
		gso_type = f->ipv6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
		csum_store(l4 + 16, csum_fold(pseudo));
	} else {
		gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		put_be16(l4 + 4, (uint16_t)l4_len);
		csum_store(l4 + 6, csum_fold(pseudo));
	}
	write_vnet(g, f->scratch, VIRTIO_NET_HDR_F_NEEDS_CSUM, gso_type,
		   (uint16_t)(l2 + f->hdr_len), f->gso_size, (uint16_t)(l2 + f->l3_len),
		   f->proto == PROTO_TCP ? 16 : 6);
	f->iov[0].iov_len = vl + l2 + f->hdr_len;

	g->stats.writes++;
	g->stats.super_packets++;
	g->stats.segments_merged += f->nseg;
	int n = 1 + f->nseg;
	flow_release(g, f);
	g->cfg.emit(g->cfg.userdata, f->iov, n);
}

static struct gro_flow *flow_find(struct gro *g, const uint8_t *key)
{
	if (g->last >= 0 && memcmp(g->flows[g->last].key, key, 40) == 0 &&
	    g->flows[g->last].slot_in_use)
		return &g->flows[g->last];
	for (unsigned i = 0; i < g->cfg.max_flows; i++) {
		struct gro_flow *f = &g->flows[i];
		if (f->slot_in_use && memcmp(f->key, key, 40) == 0)
			return f;
	}
	return NULL;
}

static struct gro_flow *flow_oldest(struct gro *g)
{
	struct gro_flow *oldest = NULL;

	for (unsigned i = 0; i < g->cfg.max_flows; i++) {
		struct gro_flow *f = &g->flows[i];
		if (f->slot_in_use && (!oldest || f->age < oldest->age))
			oldest = f;
	}
	return oldest;
}

/* 0 when pkt may follow the flow's last segment, else a GRO_END_* reason. */
static int can_append(const struct gro *g, const struct gro_flow *f, const uint8_t *pkt,
		      const struct pkt_info *in)
{
	const uint8_t *first = f->first;
	size_t l3 = f->l3_len;

	if (f->ipv6) {
		if (memcmp(pkt, first, 4) != 0 || pkt[7] != first[7])
			return GRO_END_HEADER;
	} else {
		if (pkt[1] != first[1] || pkt[8] != first[8] ||
		    (pkt[6] & 0xe0) != (first[6] & 0xe0))
			return GRO_END_HEADER;
		if (!(pkt[6] & IPV4_DF) && get_be16(pkt + 4) != f->next_id)
			return GRO_END_HEADER;
	}
	if (f->proto == PROTO_TCP) {
		if (in->hdr_len != f->hdr_len || memcmp(pkt + l3 + 8, first + l3 + 8, 4) != 0 ||
		    memcmp(pkt + l3 + 20, first + l3 + 20, f->hdr_len - l3 - 20) != 0)
			return GRO_END_HEADER;
		if (get_be32(pkt + l3 + 4) != f->next_seq)
			return GRO_END_SEQ;
	}
	if (in->payload > f->gso_size)
		return GRO_END_SIZE;
	if (f->nseg >= g->cfg.max_segs || f->total + in->payload > g->cfg.max_bytes)
		return GRO_END_FULL;
	return 0;
}

static void flow_append(struct gro *g, struct gro_flow *f, const uint8_t *pkt,
			const struct pkt_info *in)
{
	size_t vl = g->cfg.vnet_hdr_len, l2 = g->cfg.l2_len;

	if (!f->hdr_built) {
		memcpy(f->scratch + vl, g->l2[f->ipv6], l2);
		memcpy(f->scratch + vl + l2, f->first, f->hdr_len);
		f->iov[0].iov_base = f->scratch;
		f->iov[1].iov_base = (void *)(f->first + f->hdr_len);
		f->iov[1].iov_len = f->first_len - f->hdr_len;
		f->hdr_built = 1;
	}
	f->nseg++;
	f->iov[f->nseg].iov_base = (void *)(pkt + in->hdr_len);
	f->iov[f->nseg].iov_len = in->payload;
	f->total += in->payload;
	f->next_seq += in->payload;
	f->next_id++;
	if (in->psh)
		f->scratch[vl + l2 + f->l3_len + 13] |= TCP_FLAG_PSH;
}

static struct gro_flow *flow_start(struct gro *g, const uint8_t *pkt, size_t len,
				   const struct pkt_info *in, bool valid)
{
	struct gro_flow *f = NULL;

	if (g->n_active >= g->cfg.max_flows) {
		g->stats.reasons[GRO_END_EVICT]++;
		flow_emit(g, flow_oldest(g));
	}
	for (unsigned i = 0; i < g->cfg.max_flows; i++)
		if (!g->flows[i].slot_in_use) {
			f = &g->flows[i];
			break;
		}
	memcpy(f->key, in->key, sizeof(f->key));
	f->slot_in_use = 1;
	f->ipv6 = in->ipv6;
	f->proto = in->proto;
	f->l3_len = in->l3_len;
	f->hdr_len = in->hdr_len;
	f->nseg = 1;
	f->first_ok = valid;
	f->hdr_built = 0;
	f->gso_size = in->payload;
	f->next_id = (uint16_t)(get_be16(pkt + 4) + 1);
	f->next_seq = in->proto == PROTO_TCP ? get_be32(pkt + in->l3_len + 4) + in->payload : 0;
	f->total = (uint32_t)len;
	f->age = g->next_age++;
	f->first = pkt;
	f->first_len = (uint16_t)len;
	g->n_active++;
	g->stats.flows++;
	g->last = (int)(f - g->flows);
	return f;
}

static void flush_hosts(struct gro *g, const uint8_t *pkt)
{
	uint8_t hosts[32] = { 0 };
	bool v6 = (pkt[0] >> 4) == 6;
	size_t alen = v6 ? 16 : 4;

	memcpy(hosts, pkt + (v6 ? 8 : 12), alen);
	memcpy(hosts + 16, pkt + (v6 ? 8 : 12) + alen, alen);
	for (unsigned i = 0; i < g->cfg.max_flows; i++) {
		struct gro_flow *f = &g->flows[i];
		if (f->slot_in_use && f->ipv6 == v6 && memcmp(f->key, hosts, 32) == 0)
			flow_emit(g, f);
	}
}

enum gro_result gro_add(struct gro *g, const uint8_t *pkt, size_t len, unsigned flags)
{
	bool valid = flags & GRO_PKT_CSUM_VALID;
	struct pkt_info in;
	struct gro_flow *f;
	int r;

	g->stats.packets++;
	if (g->off) {
		g->stats.reasons[GRO_NM_OFF]++;
		emit_single(g, pkt, len, valid);
		return GRO_RESULT_EMITTED;
	}
	r = parse(g, pkt, len, &in);
	if (r >= 0) {
		g->stats.reasons[r]++;
		if (r == GRO_NM_TCP_FLAGS || r == GRO_NM_NO_PAYLOAD) {
			/* Same connection: what we hold for it goes first. */
			f = flow_find(g, in.key);
			if (f)
				flow_emit(g, f);
		} else if (r == GRO_NM_IP_OPTIONS || r == GRO_NM_IPV6_EXT || r == GRO_NM_FRAGMENT) {
			/* Its ports are not at hand: keep order with every flow between the
			 * same two hosts (rare packets, so the cost does not matter). */
			flush_hosts(g, pkt);
		}
		emit_single(g, pkt, len, valid);
		return GRO_RESULT_EMITTED;
	}

	f = flow_find(g, in.key);
	if (f) {
		r = can_append(g, f, pkt, &in);
		if (r == 0 && !f->first_ok) {
			g->stats.csum_verified++;
			if (csum_ok(f->first, f->first_len, f)) {
				f->first_ok = 1;
			} else {
				/* Emitted alone without DATA_VALID: the kernel drops and counts it. */
				g->stats.reasons[GRO_NM_BAD_CSUM]++;
				flow_emit(g, f);
				f = NULL;
			}
		}
		if (f && r == 0) {
			if (!valid) {
				g->stats.csum_verified++;
				if (!csum_ok(pkt, len, f)) {
					g->stats.reasons[GRO_NM_BAD_CSUM]++;
					flow_emit(g, f);
					emit_single(g, pkt, len, false);
					return GRO_RESULT_EMITTED;
				}
			}
			flow_append(g, f, pkt, &in);
			g->last = (int)(f - g->flows);
			/* Nothing can follow a PSH or short segment, and a full packet is done. */
			if (in.psh || in.payload < f->gso_size || f->nseg >= g->cfg.max_segs ||
			    f->total + f->gso_size > g->cfg.max_bytes)
				flow_emit(g, f);
			return GRO_RESULT_MERGED;
		}
		if (f) {
			g->stats.reasons[r]++;
			flow_emit(g, f);
		}
	}

	if (in.psh) {
		/* Held, it could take nothing after it: send it now. */
		g->stats.reasons[GRO_NM_PSH_ALONE]++;
		emit_single(g, pkt, len, valid);
		return GRO_RESULT_EMITTED;
	}
	flow_start(g, pkt, len, &in, valid);
	return GRO_RESULT_HELD;
}

void gro_set_off(struct gro *g, bool off)
{
	if (off && !g->off)
		gro_flush(g);
	g->off = off;
}

void gro_flush(struct gro *g)
{
	uint64_t n = g->alone_pending;

	g->alone_pending = 0;
	g->stats.packets += n;
	g->stats.writes += n;
	g->stats.reasons[GRO_NM_SKIPPED] += n;
	while (g->n_active)
		flow_emit(g, flow_oldest(g));
}
