/* SPDX-License-Identifier: MIT */
/* MBIM messages fitted to wMaxControlMessage: OPEN clamped, COMMANDs reassembled and cut. */
#include <errno.h>
#include <string.h>

#include "byteorder.h"
#include "mbim-frag.h"
#include "test-case.h"
#include "wdm-frame.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A COMMAND fragment: headers, then n bytes counting up from first. */
static size_t command(uint8_t *m, uint32_t tid, uint32_t total, uint32_t cur, size_t n,
		      uint8_t first)
{
	put32(m, MBIM_MSG_COMMAND);
	put32(m + 4, (uint32_t)(MBIM_FRAGMENT_HEADERS + n));
	put32(m + 8, tid);
	put32(m + 12, total);
	put32(m + 16, cur);
	for (size_t i = 0; i < n; i++)
		m[MBIM_FRAGMENT_HEADERS + i] = (uint8_t)(first + i);
	return MBIM_FRAGMENT_HEADERS + n;
}

static struct mbim_frag_asm a;

/* Each case starts with nothing put together. */
TEST_SETUP()
{
	memset(&a, 0, sizeof(a));
}

TEST(open_clamp)
{
	uint8_t open_msg[16] = { 1, 0, 0, 0, 16, 0, 0, 0, 5, 0, 0, 0, 0x00, 0x10, 0, 0 };

	/* OPEN: 4096 lowered to 512; a smaller one and other messages untouched. */
	EXPECT_TRUE(mbim_open_clamp(open_msg, sizeof(open_msg), 512));
	EXPECT_EQ(get_le32(open_msg + 12), 512);
	EXPECT_TRUE(!mbim_open_clamp(open_msg, sizeof(open_msg), 4096));
	EXPECT_EQ(get_le32(open_msg + 12), 512);
	EXPECT_TRUE(!mbim_open_clamp(open_msg, 15, 64));
	open_msg[0] = 2; /* CLOSE */
	EXPECT_TRUE(!mbim_open_clamp(open_msg, sizeof(open_msg), 64));
}

TEST(fragments_of_512)
{
	uint8_t m[3000], f[512];

	/* A whole COMMAND of 1300 bytes in fragments of 512: 492 bytes each after the
	 * headers, so 1280 bytes take 3, numbered 0..2 of 3, the last one 316 bytes. */
	size_t len = command(m, 9, 1, 0, 1280, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 1);
	EXPECT_EQ(a.len, 1300);
	EXPECT_EQ(mbim_frag_count(a.len, 512), 3);
	size_t total = 0;
	for (uint32_t i = 0; i < 3; i++) {
		size_t n = mbim_frag_write(a.buf, a.len, 512, i, f);
		EXPECT_EQ(n, (i < 2 ? 512u : 316u));
		EXPECT_EQ(get_le32(f), MBIM_MSG_COMMAND);
		EXPECT_EQ(get_le32(f + 4), n);
		EXPECT_EQ(get_le32(f + 8), 9);
		EXPECT_EQ(get_le32(f + 12), 3);
		EXPECT_EQ(get_le32(f + 16), i);
		EXPECT_EQ(f[MBIM_FRAGMENT_HEADERS], (uint8_t)(i * 492));
		total += n - MBIM_FRAGMENT_HEADERS;
	}
	EXPECT_EQ(total, 1280);
	/* A message that fits takes one fragment; so does one with no payload at all. */
	EXPECT_EQ(mbim_frag_count(512, 512), 1);
	EXPECT_EQ(mbim_frag_count(513, 512), 2);
	EXPECT_EQ(mbim_frag_count(20, 512), 1);
}

TEST(fragments_of_64_rejoined)
{
	uint8_t m[3000], f[512];

	/* At MBIM's smallest wMaxControlMessage, 64: 124 bytes after the headers take
	 * fragments of 64, 64 and 56 bytes, each a whole message to the bridge's framing, and
	 * they join back into the original. */
	uint8_t joined[256];
	size_t jlen = MBIM_FRAGMENT_HEADERS;
	size_t len = command(m, 77, 1, 0, 124, 20);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 1);
	EXPECT_EQ(mbim_frag_count(a.len, 64), 3);
	for (uint32_t i = 0; i < 3; i++) {
		size_t n = mbim_frag_write(a.buf, a.len, 64, i, f);
		EXPECT_EQ(n, (i < 2 ? 64u : 56u));
		EXPECT_EQ(get_le32(f + 8), 77);
		EXPECT_EQ(get_le32(f + 12), 3);
		EXPECT_EQ(get_le32(f + 16), i);
		EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, f, n), (ssize_t)n);
		memcpy(joined + jlen, f + MBIM_FRAGMENT_HEADERS, n - MBIM_FRAGMENT_HEADERS);
		jlen += n - MBIM_FRAGMENT_HEADERS;
	}
	EXPECT_EQ(jlen, len);
	EXPECT_MEM_EQ(joined + MBIM_FRAGMENT_HEADERS, m + MBIM_FRAGMENT_HEADERS, 124);
}

TEST(client_fragments_joined)
{
	uint8_t m[3000];
	size_t len;

	/* The client's own fragments (2 of 4096-style sizes) put together first. */
	len = command(m, 11, 2, 0, 1000, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 0);
	len = command(m, 11, 2, 1, 400, (uint8_t)1000);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 1);
	EXPECT_EQ(a.len, 1420);
	EXPECT_EQ(get_le32(a.buf + 4), 1420);
	EXPECT_EQ(get_le32(a.buf + 12), 1);
	EXPECT_EQ(get_le32(a.buf + 16), 0);
	for (size_t i = 0; i < 1400; i++)
		if (a.buf[MBIM_FRAGMENT_HEADERS + i] != (uint8_t)i) {
			EXPECT_EQ(i, 1400); /* first wrong byte */
			break;
		}
}

TEST(bad_fragments)
{
	uint8_t m[3000];
	size_t len;

	/* Out of order, another transaction, a wrong length field, a bad fragment number. */
	len = command(m, 12, 3, 0, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 0);
	len = command(m, 12, 3, 2, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), -EINVAL);
	EXPECT_TRUE(!a.busy);
	len = command(m, 12, 3, 0, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 0);
	len = command(m, 13, 3, 1, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), -EINVAL);
	len = command(m, 14, 1, 0, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len - 1), -EINVAL);
	len = command(m, 14, 2, 2, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), -EINVAL);
	len = command(m, 14, 0, 0, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), -EINVAL);
	EXPECT_EQ(mbim_frag_feed(&a, m, 19), -EINVAL);
	/* A new first fragment while one is under way starts over. */
	len = command(m, 15, 2, 0, 100, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 0);
	len = command(m, 16, 1, 0, 50, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 1);
	EXPECT_EQ(a.tid, 16);
	EXPECT_EQ(a.len, 70);
}

TEST(too_long)
{
	uint8_t m[3000];
	size_t len;

	/* More than 64 KiB put together is refused. */
	len = command(m, 17, 40, 0, 2000, 0);
	EXPECT_EQ(mbim_frag_feed(&a, m, len), 0);
	int r = 0;
	for (uint32_t i = 1; i < 40 && r == 0; i++) {
		len = command(m, 17, 40, i, 2000, 0);
		r = mbim_frag_feed(&a, m, len);
	}
	EXPECT_EQ(r, -EMSGSIZE);
	EXPECT_TRUE(!a.busy);
}

/* The wdm bridge's own messages: the probe, the OPEN_DONE, and what answers to the probe say. */
TEST(probe)
{
	uint8_t m[MBIM_PROBE_SIZE], d[MBIM_OPEN_DONE_SIZE], ans[24] = { 0 };
	static const uint8_t basic_connect[16] = { 0xa2, 0x89, 0xcc, 0x33, 0xbc, 0xbb, 0x8b, 0x4f,
						   0xb6, 0xb0, 0x13, 0x3e, 0xc2, 0xaa, 0xe6, 0xdf };

	EXPECT_EQ(mbim_probe_write(m, 0xf0000001), 48);
	EXPECT_EQ(get_le32(m), MBIM_MSG_COMMAND);
	EXPECT_EQ(get_le32(m + 4), 48);
	EXPECT_EQ(get_le32(m + 8), 0xf0000001);
	EXPECT_EQ(get_le32(m + 12), 1);
	EXPECT_EQ(get_le32(m + 16), 0);
	EXPECT_MEM_EQ(m + 20, basic_connect, 16);
	EXPECT_EQ(get_le32(m + 36), 3); /* RADIO_STATE */
	EXPECT_EQ(get_le32(m + 40), 0); /* query */
	EXPECT_EQ(get_le32(m + 44), 0);
	EXPECT_EQ(wdm_frame_length(WDM_FRAMING_MBIM, m, sizeof(m)), 48);

	EXPECT_EQ(mbim_open_done_write(d, 9), 16);
	EXPECT_EQ(get_le32(d), MBIM_MSG_OPEN_DONE);
	EXPECT_EQ(get_le32(d + 8), 9);
	EXPECT_EQ(get_le32(d + 12), 0);

	put32(ans, MBIM_MSG_COMMAND_DONE);
	put32(ans + 4, 24);
	put32(ans + 8, 5);
	EXPECT_EQ(mbim_probe_answer(ans, 24, 5), MBIM_PROBE_OPEN);
	EXPECT_EQ(mbim_probe_answer(ans, 24, 6), MBIM_PROBE_NOT_ANSWER);
	EXPECT_EQ(mbim_probe_answer(ans, 11, 5), MBIM_PROBE_NOT_ANSWER);
	put32(ans, MBIM_MSG_FUNCTION_ERROR);
	put32(ans + 12, 5); /* NOT_OPENED */
	EXPECT_EQ(mbim_probe_answer(ans, 16, 5), MBIM_PROBE_CLOSED);
	EXPECT_EQ(mbim_probe_answer(ans, 12, 5), MBIM_PROBE_ERROR);
	put32(ans + 12, 2); /* FRAGMENT_OUT_OF_SEQUENCE */
	EXPECT_EQ(mbim_probe_answer(ans, 16, 5), MBIM_PROBE_ERROR);
	put32(ans, 0x80000007); /* an indication with that id is none of the probe's */
	EXPECT_EQ(mbim_probe_answer(ans, 16, 5), MBIM_PROBE_NOT_ANSWER);
}
