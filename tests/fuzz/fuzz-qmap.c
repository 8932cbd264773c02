/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the QMAP downlink parser. The first byte picks the version (bit 0) and
 * the granted DL minimum padding (bits 1-4, in words), the rest is one aggregate. Besides what ASan sees, every yielded frame must lie inside the aggregate and
 * the walk must cover it exactly, or the parser has trusted a length it should not have.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;

	enum qmap_version version = data[0] & 1 ? QMAP_V5 : QMAP_V1;
	uint32_t padding = ((data[0] >> 1) & 0x0f) * 4u;
	size_t len = size - 1;
	/* The parser takes a writable buffer (ACKs are made in place) and the input is const;
	 * an exact-size heap copy also lets ASan catch a read one byte past the end. */
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);

	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	size_t covered = 0;
	int r;

	qmap_iter_init(&it, buf, len, version);
	it.min_padding = padding;
	while ((r = qmap_next(&it, &f, &err)) != 0) {
		if (r < 0) {
			check(r == -EBADMSG);
			check(err < _QMAP_ERR_MAX);
			check(qmap_error_name(err) != NULL);
			check(it.off <= len);
			covered = it.off;
			continue;
		}
		check(r == 1);

		uint8_t *end = buf + len;
		/* Only zero words, at most the granted padding, lie between frames. */
		check(f.header >= buf + covered);
		check((size_t)(f.header - (buf + covered)) <= padding);
		for (uint8_t *z = buf + covered; z < f.header; z++)
			check(*z == 0);
		covered = (size_t)(f.header - buf);
		check(f.payload > f.header && f.payload <= end);
		check(f.len <= (size_t)(end - f.payload));
		check(f.wire_len >= (size_t)(f.payload - f.header) + f.len);
		check(f.wire_len <= (size_t)(end - f.header));
		covered += f.wire_len;
		check(it.off == covered);

		if (f.kind == QMAP_FRAME_DATA) {
			uint8_t nibble = f.payload[0] >> 4;
			check(nibble == 4 || nibble == 6);
			check(!!(f.flags & QMAP_FRAME_IPV6) == (nibble == 6));
			check(f.len >= (nibble == 6 ? 40 : 20));
			if (version == QMAP_V1)
				check(!(f.flags & QMAP_FRAME_CSUM_VALID));
		} else {
			struct qmap_command cmd;

			check(qmap_command_parse(f.payload, f.len, &cmd) == 0);
			check(cmd.type <= QMAP_COMMAND_INVALID);
			qmap_command_make_ack(f.payload);
			check(qmap_command_parse(f.payload, f.len, &cmd) == 0);
			check(cmd.type == QMAP_COMMAND_ACK);
		}
	}
	/* Fatal errors and the normal end both consume the whole aggregate. */
	check(it.off == len);

	/* The datapath's inline walk: the same results, step by step. */
	struct qmap_iter a, b;
	struct qmap_frame fa, fb;
	enum qmap_error ea = _QMAP_ERR_MAX, eb = _QMAP_ERR_MAX;
	int ra, rb;
	qmap_iter_init(&a, buf, len, version);
	qmap_iter_init(&b, buf, len, version);
	a.min_padding = b.min_padding = padding;
	do {
		ra = qmap_next(&a, &fa, &ea);
		rb = qmap_next_inline(&b, &fb, &eb);
		check(ra == rb && a.off == b.off);
		check(ra >= 0 || ea == eb);
		check(ra != 1 ||
		      (fa.kind == fb.kind && fa.mux_id == fb.mux_id && fa.flags == fb.flags &&
		       fa.header == fb.header && fa.payload == fb.payload && fa.len == fb.len &&
		       fa.wire_len == fb.wire_len));
	} while (ra != 0);

	free(buf);
	return 0;
}
