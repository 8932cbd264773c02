/* SPDX-License-Identifier: MIT */
/*
 * The ones'-complement sum is associative and byte-order independent (RFC 1071 §2), so the
 * loop adds 64-bit words as they lie in memory with an end-around carry and folds once. This is
 * the per-byte cost of GRO verification and GSO segmentation, so it is worth the unrolling.
 */
#include <string.h>

#include "csum.h"

static inline uint64_t add64(uint64_t a, uint64_t b)
{
	a += b;
	return a + (a < b);
}

uint32_t csum_partial(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = buf;
	uint64_t acc = sum, w0, w1, w2, w3;

	while (len >= 32) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + 8, 8);
		memcpy(&w2, p + 16, 8);
		memcpy(&w3, p + 24, 8);
		acc = add64(acc, w0);
		acc = add64(acc, w1);
		acc = add64(acc, w2);
		acc = add64(acc, w3);
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		memcpy(&w0, p, 8);
		acc = add64(acc, w0);
		p += 8;
		len -= 8;
	}
	if (len) {
		/* The tail as a zero-padded word keeps every byte at its lane, so an odd byte
		 * lands where a big-endian reading expects it. */
		uint8_t tail[8] = { 0 };

		memcpy(tail, p, len);
		memcpy(&w0, tail, 8);
		acc = add64(acc, w0);
	}
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}
