/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for mbim-frag.c: the input is a fragment size byte, then messages as
 * [u16 length][bytes]. Each goes through mbim_open_clamp() (on a copy), mbim_probe_answer()
 * and mbim_frag_feed();
 * a whole COMMAND is cut into fragments of the chosen size, which must each fit it, number
 * 0..n-1 of n, and feed back into a second assembler to the same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "mbim-frag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mbim_frag_asm a, b;

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t frag[4096];

	if (size < 1)
		return 0;
	size_t max = 64 + (size_t)data[0] * 16; /* 64 .. 4144, as wMaxControlMessage */
	if (max > sizeof(frag))
		max = sizeof(frag);
	data++, size--;
	a.busy = false;
	while (size >= 2) {
		size_t len = data[0] | data[1] << 8;
		data += 2, size -= 2;
		if (len > size)
			len = size;
		/* An exact-size heap copy: ASan sees a read past the message. */
		uint8_t *msg = malloc(len ? len : 1);
		if (!msg)
			return 0;
		memcpy(msg, data, len);
		data += len, size -= len;
		if (mbim_open_clamp(msg, len, (uint32_t)max))
			check(get_le32(msg + 12) == max);
		/* The bridge's probe reads the function's answers (mbim_probe_answer()). */
		check(mbim_probe_answer(msg, len, (uint32_t)max) <= MBIM_PROBE_ERROR);
		int r = mbim_frag_feed(&a, msg, len);
		free(msg);
		check(r == 0 || r == 1 || r == -EINVAL || r == -EMSGSIZE);
		if (r != 1)
			continue;
		check(a.len >= MBIM_FRAGMENT_HEADERS && a.len <= sizeof(a.buf));
		check(get_le32(a.buf + 4) == a.len && get_le32(a.buf + 12) == 1);
		uint32_t n = mbim_frag_count(a.len, max);
		b.busy = false;
		int rb = 0;
		for (uint32_t i = 0; i < n; i++) {
			size_t flen = mbim_frag_write(a.buf, a.len, max, i, frag);
			check(flen >= MBIM_FRAGMENT_HEADERS && flen <= max);
			check(get_le32(frag + 12) == n && get_le32(frag + 16) == i);
			rb = mbim_frag_feed(&b, frag, flen);
			check(rb == (i + 1 == n ? 1 : 0));
		}
		check(b.len == a.len && memcmp(b.buf, a.buf, a.len) == 0);
	}
	return 0;
}
