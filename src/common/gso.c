/* SPDX-License-Identifier: MIT */
/*
 * Uplink GSO (see gso.h for the contract). The header of the super-packet is the template of
 * every segment; only the fields Linux's own segmentation changes are rewritten. The byte
 * cost is one copy and one checksum pass per payload byte (none of either for a non-GSO
 * packet read in place).
 */
#include <errno.h>
#include <string.h>

#include "csum.h"
#include "gso.h"
#include "byteorder.h"

#define PROTO_TCP 6
#define PROTO_UDP 17

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_PSH 0x08
#define TCP_FLAG_CWR 0x80

/* Is a pending checksum at l4 + off the TCP or UDP one of a plain IP packet? */
static bool l4_offloadable(const uint8_t *pkt, size_t len, size_t from, size_t off)
{
	uint8_t proto;

	if ((pkt[0] >> 4) == 4) {
		if (len < 20 || from != (size_t)(pkt[0] & 0x0f) * 4 || (get_be16(pkt + 6) & 0x3fff))
			return false;
		proto = pkt[9];
	} else if ((pkt[0] >> 4) == 6) {
		if (len < 40 || from != 40)
			return false;
		proto = pkt[6];
	} else {
		return false;
	}
	return (proto == PROTO_TCP && off == 16) || (proto == PROTO_UDP && off == 6);
}

int gso_parse(const struct virtio_net_hdr *vh, size_t l2_len, const uint8_t *pkt, size_t len,
	      struct gso_packet *ret)
{
	struct gso_packet p = { .pkt = pkt, .len = len, .n_segs = 1 };
	uint8_t type = vh->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	size_t l3, l4h;

	if (len == 0 || len > UINT32_MAX)
		return -EINVAL;
	p.ipv6 = (pkt[0] >> 4) == 6;

	if (type == VIRTIO_NET_HDR_GSO_NONE) {
		if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
			size_t start = vh->csum_start, off = vh->csum_offset;
			if (start < l2_len || start - l2_len + off + 2 > len)
				return -EINVAL;
			p.needs_csum = true;
			p.csum_from = (uint32_t)(start - l2_len);
			p.csum_at = (uint32_t)(start - l2_len + off);
			p.offloadable = l4_offloadable(pkt, len, p.csum_from, off);
		}
		*ret = p;
		return 0;
	}
	if (type != VIRTIO_NET_HDR_GSO_TCPV4 && type != VIRTIO_NET_HDR_GSO_TCPV6 &&
	    type != VIRTIO_NET_HDR_GSO_UDP_L4)
		return -EPROTONOSUPPORT;
	if (vh->gso_size == 0)
		return -EINVAL;

	switch (pkt[0] >> 4) {
	case 4:
		if (type == VIRTIO_NET_HDR_GSO_TCPV6 || len < 20 || (pkt[0] & 0x0f) < 5)
			return -EINVAL;
		l3 = (size_t)(pkt[0] & 0x0f) * 4;
		if (l3 > len || get_be16(pkt + 2) != len)
			return -EINVAL;
		if (get_be16(pkt + 6) & 0x3fff)
			return -EPROTONOSUPPORT;
		p.proto = pkt[9];
		break;
	case 6:
		if (type == VIRTIO_NET_HDR_GSO_TCPV4 || len < 40 || get_be16(pkt + 4) + 40u != len)
			return -EINVAL;
		l3 = 40;
		p.proto = pkt[6];
		if (p.proto != PROTO_TCP && p.proto != PROTO_UDP)
			return -EPROTONOSUPPORT; /* extension headers, most likely */
		break;
	default:
		return -EINVAL;
	}

	if (type == VIRTIO_NET_HDR_GSO_UDP_L4) {
		if (p.proto != PROTO_UDP)
			return -EINVAL;
		l4h = 8;
		if (l3 + l4h > len)
			return -EINVAL;
	} else {
		if (p.proto != PROTO_TCP || l3 + 20 > len)
			return -EINVAL;
		l4h = (size_t)(pkt[l3 + 12] >> 4) * 4;
		if (l4h < 20 || l3 + l4h > len)
			return -EINVAL;
	}
	size_t payload = len - l3 - l4h;
	if (payload == 0 || l3 + l4h + vh->gso_size > 65535)
		return -EINVAL;
	p.l3_len = (uint16_t)l3;
	p.hdr_len = (uint16_t)(l3 + l4h);
	p.mss = vh->gso_size;
	p.n_segs = (uint32_t)((payload + p.mss - 1) / p.mss);
	p.split = true;
	p.offloadable = true;
	*ret = p;
	return 0;
}

static size_t seg_len(const struct gso_packet *p, uint32_t i)
{
	if (!p->split)
		return p->len;
	size_t payload = p->len - p->hdr_len;
	size_t done = (size_t)i * p->mss;
	size_t left = payload - done;
	return p->hdr_len + (left < p->mss ? left : p->mss);
}

size_t gso_out_size(const struct gso_packet *p, uint32_t first, size_t reserve)
{
	if (first >= p->n_segs)
		return 0;
	size_t count = p->n_segs - first;
	if (!p->split)
		return reserve + p->len;
	return count * (reserve + p->hdr_len) + (p->len - p->hdr_len) - (size_t)first * p->mss;
}

/* The template fields of segment 0, read before an in-place run may overwrite them. */
struct tmpl {
	uint16_t id;
	uint32_t seq;
	uint8_t flags;
};

static void write_split(const struct gso_packet *p, const struct tmpl *t, uint32_t i,
			unsigned flags, uint8_t *dst, struct gso_segment *seg)
{
	size_t len = seg->len, l3 = p->l3_len, plen = len - p->hdr_len;
	const uint8_t *src = p->pkt + p->hdr_len + (size_t)i * p->mss;
	uint8_t *l4 = dst + l3;

	memmove(dst + p->hdr_len, src, plen);
	if (dst != p->pkt)
		memcpy(dst, p->pkt, p->hdr_len);
	if (p->ipv6) {
		put_be16(dst + 4, (uint16_t)(len - 40));
	} else {
		put_be16(dst + 2, (uint16_t)len);
		put_be16(dst + 4, (uint16_t)(t->id + i));
		dst[10] = dst[11] = 0;
		csum_store(dst + 10, (uint16_t)~csum_fold(csum_partial(dst, l3, 0)));
	}

	uint8_t *check;
	if (p->proto == PROTO_TCP) {
		uint8_t fl = t->flags;
		if (i + 1 != p->n_segs)
			fl &= (uint8_t) ~(TCP_FLAG_FIN | TCP_FLAG_PSH);
		if (i != 0)
			fl &= (uint8_t)~TCP_FLAG_CWR;
		put_be32(l4 + 4, t->seq + i * (uint32_t)p->mss);
		l4[13] = fl;
		check = l4 + 16;
	} else {
		put_be16(l4 + 4, (uint16_t)(len - l3));
		check = l4 + 6;
	}
	uint32_t sum = csum_pseudo(dst + (p->ipv6 ? 8 : 12), p->ipv6 ? 16 : 4, p->proto,
				   (uint32_t)(len - l3));
	if (flags & GSO_F_L4_CSUM_OFFLOAD) {
		csum_store(check, csum_fold(sum));
		seg->csum_offload = true;
		return;
	}
	check[0] = check[1] = 0;
	uint16_t c = (uint16_t)~csum_fold(csum_partial(l4, len - l3, sum));
	/* 0 means "no checksum" to UDP; 0xffff is the same sum (RFC 768). */
	csum_store(check, c ? c : 0xffff);
	seg->csum_offload = false;
}

static void write_single(const struct gso_packet *p, unsigned flags, uint8_t *dst,
			 struct gso_segment *seg)
{
	if (dst != p->pkt)
		memcpy(dst, p->pkt, p->len);
	seg->csum_offload = false;
	if (!p->needs_csum)
		return;
	if ((flags & GSO_F_L4_CSUM_OFFLOAD) && p->offloadable) {
		/* The kernel left the pseudo-header sum in the field: what the modem expects. */
		seg->csum_offload = true;
		return;
	}
	uint16_t c =
		(uint16_t)~csum_fold(csum_partial(dst + p->csum_from, p->len - p->csum_from, 0));
	csum_store(dst + p->csum_at, c ? c : 0xffff);
}

int gso_write(const struct gso_packet *p, uint32_t first, unsigned flags, uint8_t *out,
	      size_t out_room, size_t reserve, struct gso_segment *segs, unsigned max_segs)
{
	uintptr_t o0 = (uintptr_t)out, o1 = o0 + out_room;
	uintptr_t i0 = (uintptr_t)p->pkt, i1 = i0 + p->len;
	bool in_place = out + reserve == p->pkt;
	size_t off = 0;
	unsigned k = 0;

	if (first >= p->n_segs || max_segs == 0)
		return -EINVAL;
	if (o0 < i1 && i0 < o1 && !(in_place && first == 0))
		return -EINVAL;
	while (first + k < p->n_segs && k < max_segs) {
		size_t len = seg_len(p, first + k);
		if (out_room - off < reserve + len)
			break;
		segs[k] = (struct gso_segment){ .offset = (uint32_t)off, .len = (uint32_t)len };
		off += reserve + len;
		k++;
	}
	if (k == 0 || (in_place && first + k < p->n_segs))
		return -ENOBUFS;

	if (!p->split) {
		write_single(p, flags, out + reserve, &segs[0]);
		return 1;
	}
	struct tmpl t = { .seq = 0 };
	if (!p->ipv6)
		t.id = get_be16(p->pkt + 4);
	if (p->proto == PROTO_TCP) {
		t.seq = get_be32(p->pkt + p->l3_len + 4);
		t.flags = p->pkt[p->l3_len + 13];
	}
	/* Last to first: in place, segment i only covers input that segments > i have read. */
	for (unsigned j = k; j-- > 0;)
		write_split(p, &t, first + j, flags, out + segs[j].offset + reserve, &segs[j]);
	return (int)k;
}
