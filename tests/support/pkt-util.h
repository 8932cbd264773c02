/* SPDX-License-Identifier: MIT */
/*
 * Packet builders for the GRO/GSO tests, with their own byte-at-a-time RFC 1071 checksum so
 * the modules' checksum code is checked against something independent of it.
 */
#ifndef QMAPD_PKT_UTIL_H
#define QMAPD_PKT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pk {
	bool v6;
	uint8_t proto; /* 6 or 17 */
	uint16_t id;
	uint8_t ttl;
	uint8_t tos;
	bool df;
	uint32_t flow_label;
	uint32_t seq;
	uint32_t ack;
	uint8_t flags; /* TCP */
	uint16_t win;
	uint8_t opts[40];
	uint8_t optlen; /* multiple of 4 */
	uint16_t sport, dport;
	uint8_t host; /* last byte of the source address: tells flows apart */
	size_t plen;
	uint32_t stream_off; /* payload byte i is pk_byte(stream_off + i) */
	uint8_t ext_hdr;     /* IPv6: insert an 8-byte hop-by-hop header */
	uint8_t ip_opts;     /* IPv4: add 4 bytes of options (NOPs) */
};

static inline uint8_t pk_byte(uint32_t off)
{
	return (uint8_t)(off * 7 + (off >> 8) + (off >> 16) * 3);
}

static inline void pk_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void pk_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint16_t pk_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t pk_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Ones'-complement sum of big-endian 16-bit words, folded, not complemented. */
static inline uint16_t ref_sum(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Pseudo-header sum for an IP packet at ip whose L4 part starts at l4 and is l4_len long. */
static inline uint32_t ref_pseudo(const uint8_t *ip, uint8_t proto, uint32_t l4_len)
{
	bool v6 = (ip[0] >> 4) == 6;
	uint32_t s = ref_sum(ip + (v6 ? 8 : 12), v6 ? 32 : 8, 0);
	return s + proto + (l4_len >> 16) + (l4_len & 0xffff);
}

/* L4 checksum of a packet with l3 bytes of IP header: true if it verifies. */
static inline bool ref_l4_ok(const uint8_t *ip, size_t len, size_t l3, uint8_t proto)
{
	return ref_sum(ip + l3, len - l3, ref_pseudo(ip, proto, (uint32_t)(len - l3))) == 0xffff;
}

static inline bool ref_ipv4_ok(const uint8_t *ip)
{
	return ref_sum(ip, (size_t)(ip[0] & 15) * 4, 0) == 0xffff;
}

/* Fill a TCP or UDP checksum of a packet built by pk_build. */
static inline void ref_fill_l4(uint8_t *ip, size_t len, size_t l3, uint8_t proto)
{
	size_t off = l3 + (proto == 6 ? 16 : 6);
	ip[off] = ip[off + 1] = 0;
	uint16_t c =
		(uint16_t)~ref_sum(ip + l3, len - l3, ref_pseudo(ip, proto, (uint32_t)(len - l3)));
	if (proto == 17 && c == 0)
		c = 0xffff;
	pk_be16(ip + off, c);
}

/* Build the packet at buf; returns its length. */
static inline size_t pk_build(uint8_t *buf, const struct pk *s)
{
	size_t l3, l4h = s->proto == 6 ? 20u + s->optlen : 8u;
	uint8_t *l4;

	if (s->v6) {
		l3 = 40 + (s->ext_hdr ? 8 : 0);
		size_t len = l3 + l4h + s->plen;
		memset(buf, 0, l3);
		pk_be32(buf, 6u << 28 | (uint32_t)s->tos << 20 | (s->flow_label & 0xfffff));
		pk_be16(buf + 4, (uint16_t)(len - 40));
		buf[6] = s->ext_hdr ? 0 : s->proto;
		buf[7] = s->ttl;
		/* 2001:db8::<host> -> 2001:db8::2 (RFC 3849 documentation prefix) */
		memcpy(buf + 8, "\x20\x01\x0d\xb8", 4);
		buf[23] = s->host;
		memcpy(buf + 24, "\x20\x01\x0d\xb8", 4);
		buf[39] = 2;
		if (s->ext_hdr) {
			buf[40] = s->proto; /* next header; length 0 = 8 bytes; PadN */
			buf[42] = 1;
			buf[43] = 4;
		}
	} else {
		l3 = 20 + (s->ip_opts ? 4 : 0);
		size_t len = l3 + l4h + s->plen;
		memset(buf, 0, l3);
		buf[0] = (uint8_t)(0x40 | (l3 / 4));
		buf[1] = s->tos;
		pk_be16(buf + 2, (uint16_t)len);
		pk_be16(buf + 4, s->id);
		buf[6] = s->df ? 0x40 : 0;
		buf[8] = s->ttl;
		buf[9] = s->proto;
		/* 192.0.2.<host> -> 192.0.2.2 (RFC 5737 documentation range) */
		memcpy(buf + 12, "\xc0\x00\x02", 3);
		buf[15] = s->host;
		memcpy(buf + 16, "\xc0\x00\x02\x02", 4);
		if (s->ip_opts)
			memset(buf + 20, 1, 4);
		pk_be16(buf + 10, (uint16_t)~ref_sum(buf, l3, 0));
	}
	l4 = buf + l3;
	memset(l4, 0, l4h);
	pk_be16(l4, s->sport);
	pk_be16(l4 + 2, s->dport);
	if (s->proto == 6) {
		pk_be32(l4 + 4, s->seq);
		pk_be32(l4 + 8, s->ack);
		l4[12] = (uint8_t)((l4h / 4) << 4);
		l4[13] = s->flags;
		pk_be16(l4 + 14, s->win);
		memcpy(l4 + 20, s->opts, s->optlen);
	} else {
		pk_be16(l4 + 4, (uint16_t)(l4h + s->plen));
	}
	for (size_t i = 0; i < s->plen; i++)
		l4[l4h + i] = pk_byte(s->stream_off + (uint32_t)i);
	size_t len = l3 + l4h + s->plen;
	ref_fill_l4(buf, len, l3, s->proto);
	return len;
}

#endif
