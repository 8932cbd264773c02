/* SPDX-License-Identifier: MIT */
/*
 * Internet checksum (RFC 1071) helpers shared by GRO, GSO and their tests. Pure.
 *
 * Sums are kept as Linux keeps them: a 32-bit partial sum of the bytes as they lie in memory
 * (so byte order never needs converting), folded to 16 bits only at the end. A folded value is
 * stored into a packet with csum_store(), which writes it in memory order. Values that are
 * numbers rather than bytes (a length, a protocol) enter through csum_add_be16().
 */
#ifndef QMAPD_CSUM_H
#define QMAPD_CSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Add len bytes at buf to a partial sum. Any alignment; an odd len pads with a zero byte. */
uint32_t csum_partial(const void *buf, size_t len, uint32_t sum);

static inline uint32_t csum_add(uint32_t a, uint32_t b)
{
	a += b;
	return a + (a < b);
}

/* Add a 16-bit number given in host order as if it were two big-endian bytes in the data. */
static inline uint32_t csum_add_be16(uint32_t sum, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	uint16_t m;

	memcpy(&m, b, 2);
	return csum_add(sum, m);
}

/* Fold to 16 bits, not complemented (the "partial" value a NEEDS_CSUM field holds). */
static inline uint16_t csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Read or write a 16-bit checksum field in memory order. */
static inline uint16_t csum_load(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline void csum_store(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/*
 * Pseudo-header sum of a TCP/UDP packet: source and destination address (alen 4 or 16 bytes,
 * adjacent as in both IP headers, starting at addrs), protocol and L4 length.
 */
static inline uint32_t csum_pseudo(const uint8_t *addrs, size_t alen, uint8_t proto,
				   uint32_t l4_len)
{
	uint32_t sum = csum_partial(addrs, 2 * alen, 0);

	sum = csum_add_be16(sum, proto);
	sum = csum_add_be16(sum, (uint16_t)(l4_len >> 16));
	return csum_add_be16(sum, (uint16_t)l4_len);
}

#endif
