/* SPDX-License-Identifier: MIT */
/*
 * Control-channel framing (wdm-frame.h): message length vectors for QMUX and MBIM, every
 * malformed start, and stream reassembly with resynchronisation. Pure, so it also runs
 * big-endian (tests/big-endian/big-endian.sh).
 */
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "qmux-util.h"
#include "test-case.h"
#include "wdm-frame.h"

TEST(frame_length)
{
	static uint8_t big[WDM_QMUX_MAX_MESSAGE + 16], zeros[WDM_QMUX_MAX_MESSAGE];
	uint8_t b[64];

	/* Complete messages, also with bytes of the next one behind. */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, ctl_alloc_cid, sizeof(ctl_alloc_cid)), 16);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, dms_get_ids, sizeof(dms_get_ids)), 13);
	memcpy(b, ctl_alloc_cid, 16);
	memcpy(b + 16, dms_get_ids, 13);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 29), 16);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 17), 16);

	/* Every proper prefix needs more bytes. */
	for (size_t i = 0; i < sizeof(ctl_alloc_cid); i++)
		EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, ctl_alloc_cid, i), 0);
	for (size_t i = 0; i < sizeof(dms_get_ids); i++)
		EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, dms_get_ids, i), 0);

	/* Bad starts. */
	memcpy(b, ctl_alloc_cid, 16);
	b[0] = 0x02;
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 1), -EBADMSG);
	b[0] = 0x00;
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 16), -EBADMSG);
	memcpy(b, ctl_alloc_cid, 16);
	b[1] = 0x0a; /* 10 < QMUX + CTL header */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 3), -EBADMSG);
	memcpy(b, ctl_alloc_cid, 16);
	b[10] = 0x05; /* TLV length does not fill the message */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 11), 0);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 12), -EBADMSG);
	memcpy(b, dms_get_ids, 13);
	b[1] = 0x0b; /* enough for CTL, too short for a service header */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 4), 0);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 5), -EBADMSG);
	memcpy(b, dms_get_ids, 13);
	b[11] = 0x01; /* service TLV length sits one byte later than CTL's */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, 13), -EBADMSG);

	/* Bounds: exactly the largest message, and one byte more. */
	size_t n = test_qmux(big, 0x80, 2, 0x25, 7, zeros, WDM_QMUX_MAX_MESSAGE - 13);
	EXPECT_EQ(n, WDM_QMUX_MAX_MESSAGE);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, big, n), WDM_QMUX_MAX_MESSAGE);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, big, 3), 0);
	n = test_qmux(big, 0x80, 2, 0x25, 7, zeros, WDM_QMUX_MAX_MESSAGE - 12);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, big, 3), -EBADMSG);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, (const uint8_t *)"\x01\xff\xff", 3), -EBADMSG);
	/* The smallest message: CTL without TLVs. */
	n = test_qmux(b, 0x00, 0, 0x27, 3, NULL, 0);
	EXPECT_EQ(n, WDM_QMUX_MIN_MESSAGE);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_QMUX, b, n), WDM_QMUX_MIN_MESSAGE);

	/* MBIM. */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, mbim_open, sizeof(mbim_open)), 16);
	for (size_t i = 0; i < sizeof(mbim_open); i++)
		EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, mbim_open, i), 0);
	static const uint8_t done[] = { 0x03, 0x00, 0x00, 0x80, 0x30, 0x00, 0x00, 0x00 };
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, done, sizeof(done)), 0);
	memcpy(b, mbim_open, 16);
	b[0] = 0x05;
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 1), -EBADMSG);
	b[0] = 0x07; /* INDICATE_STATUS exists only from the device */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 3), 0);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 4), -EBADMSG);
	b[3] = 0x80;
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 16), 16);
	b[2] = 0x01;
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 3), -EBADMSG);
	memcpy(b, mbim_open, 16);
	b[4] = 11;
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 8), -EBADMSG);
	b[4] = 0x00;
	b[6] = 0x01; /* 65536: the bound itself */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 16), 0);
	b[4] = 0x01; /* 65537 */
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, b, 8), -EBADMSG);
}

/* Feed a stream in pieces of 1..7 bytes, as a pty might hand it over. */
static void feed(struct wdm_reasm *r, const uint8_t *data, size_t len, struct test_sink *s)
{
	for (size_t off = 0, step = 1; off < len; off += step, step = step % 7 + 1) {
		if (step > len - off)
			step = len - off;
		size_t avail;
		uint8_t *p = wdm_reasm_space(r, &avail);
		EXPECT_GE(avail, step);
		memcpy(p, data + off, step);
		wdm_reasm_commit(r, step, test_sink_send, s);
	}
}

TEST(reasm)
{
	struct wdm_reasm r;
	struct test_sink s = {};
	uint8_t stream[128];
	size_t n = 0;

	/* garbage, a message, a bogus start (too long), a message, half a message */
	memcpy(stream + n, "\xff\x00", 2);
	n += 2;
	memcpy(stream + n, ctl_alloc_cid, 16);
	n += 16;
	memcpy(stream + n, "\x01\xff\xff", 3);
	n += 3;
	memcpy(stream + n, dms_get_ids, 13);
	n += 13;
	memcpy(stream + n, ctl_alloc_cid, 5);
	n += 5;

	EXPECT_EQ(wdm_reasm_init(&r, WDM_FRAMING_QMUX), 0);
	feed(&r, stream, n, &s);
	EXPECT_EQ(s.n, 2);
	EXPECT_EQ(s.len[0], 16);
	EXPECT_MEM_EQ(s.msg[0], ctl_alloc_cid, 16);
	EXPECT_EQ(s.len[1], 13);
	EXPECT_MEM_EQ(s.msg[1], dms_get_ids, 13);
	EXPECT_EQ(r.messages, 2);
	EXPECT_EQ(r.framing_errors, 2);
	EXPECT_EQ(r.resyncs, 2);
	EXPECT_EQ(r.discarded_bytes, 5);
	EXPECT_EQ(r.len, 5);
	wdm_reasm_reset(&r);
	EXPECT_EQ(r.partial_discards, 1);
	EXPECT_EQ(r.discarded_bytes, 10);

	/* A run of garbage over several reads is one framing error. */
	feed(&r, (const uint8_t *)"garbage with no marker at all", 29, &s);
	feed(&r, (const uint8_t *)"more of it", 10, &s);
	EXPECT_EQ(r.framing_errors, 3);
	EXPECT_EQ(r.resyncs, 2);
	feed(&r, ctl_alloc_cid, 16, &s);
	EXPECT_EQ(s.n, 3);
	EXPECT_EQ(r.resyncs, 3);
	EXPECT_EQ(r.len, 0);
	wdm_reasm_done(&r);

	/* MBIM: the message type is the only anchor. */
	struct test_sink m = {};
	EXPECT_EQ(wdm_reasm_init(&r, WDM_FRAMING_MBIM), 0);
	memcpy(stream, "xyz", 3);
	memcpy(stream + 3, mbim_open, 16);
	memcpy(stream + 19, mbim_open, 16);
	feed(&r, stream, 35, &m);
	EXPECT_EQ(m.n, 2);
	EXPECT_MEM_EQ(m.msg[1], mbim_open, 16);
	EXPECT_EQ(r.framing_errors, 1);
	EXPECT_EQ(r.discarded_bytes, 3);
	wdm_reasm_done(&r);
}
