/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the wdm bridge's framing: wdm_frame_length() on the raw input, and
 * the stream reassembly fed the input in pieces whose sizes the input picks. The first byte
 * picks the framing and the piece pattern, the rest is the client's byte stream.
 * Checked besides what the sanitizers see: every message handed on is one whole message by
 * wdm_frame_length() and lies inside the buffer; every input byte is either handed on,
 * discarded (counted) or still buffered; what stays buffered is a prefix of one message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wdm-frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

struct seen {
	enum wdm_framing framing;
	const uint8_t *lo, *hi; /* the reassembly buffer */
	size_t bytes;
};

static int on_message(void *userdata, const uint8_t *msg, size_t len)
{
	struct seen *s = userdata;

	check(msg >= s->lo && len <= (size_t)(s->hi - msg));
	check(wdm_frame_length(s->framing, msg, len) == (ssize_t)len);
	s->bytes += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;

	enum wdm_framing framing = data[0] & 1 ? WDM_FRAMING_MBIM : WDM_FRAMING_QMUX;
	unsigned pattern = data[0] >> 1;
	const uint8_t *stream = data + 1;
	size_t len = size - 1;

	/* The pure length function on an exact-size copy: ASan sees a read past the end. */
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		return 0;
	memcpy(copy, stream, len);
	ssize_t n = wdm_frame_length(framing, copy, len);
	check(n == 0 || n == -EBADMSG || (n > 0 && (size_t)n <= len));
	if (n > 0) {
		check(wdm_frame_length(framing, copy, (size_t)n) == n);
		/* Any proper prefix of a whole message needs more bytes. */
		check(wdm_frame_length(framing, copy, (size_t)n - 1) == 0);
	}
	free(copy);

	struct wdm_reasm r;
	if (wdm_reasm_init(&r, framing) < 0)
		return 0;
	struct seen s = { .framing = framing, .lo = r.buf, .hi = r.buf + r.cap };

	/* Piece sizes 1..(pattern % 64 + 1), cycling, or everything at once for pattern 0. */
	size_t off = 0;
	unsigned step = 1;
	while (off < len) {
		size_t avail;
		uint8_t *p = wdm_reasm_space(&r, &avail);
		check(avail > 0 && p >= r.buf && p + avail == r.buf + r.cap);
		size_t piece = pattern == 0 ? len - off : step;
		if (piece > len - off)
			piece = len - off;
		if (piece > avail)
			piece = avail;
		memcpy(p, stream + off, piece);
		wdm_reasm_commit(&r, piece, on_message, &s);
		off += piece;
		step = step % (pattern % 64 + 1) + 1;

		/* What stays is less than one message and still could start one. */
		check(r.len < r.cap);
		if (r.len > 0)
			check(wdm_frame_length(framing, r.buf, r.len) == 0);
	}
	check(s.bytes + r.discarded_bytes + r.len == len);

	wdm_reasm_reset(&r);
	check(r.len == 0);
	check(s.bytes + r.discarded_bytes == len);
	wdm_reasm_done(&r);
	return 0;
}
