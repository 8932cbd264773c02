/* SPDX-License-Identifier: MIT */
/*
 * QMAP codec: byte-exact downlink vectors for every frame type and every malformed case,
 * command parse/ACK, and uplink headers built by us and read back by our own parser.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "qmap.h"
#include "test-case.h"

/* Smallest well-formed IP headers: the parser requires the fixed header to be present. */
#define IPV4_20                                                                                  \
	0x45, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, \
		0, 0, 2
#define IPV6_ADDR 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define IPV6_39	  0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x40, IPV6_ADDR, 1, IPV6_ADDR
#define IPV6_40	  IPV6_39, 2

/* A command body: FLOW_DISABLE request, reserved bits set to see they survive an ACK. */
#define CMD_BODY                                                                                  \
	0x01, 0xfc, 0xab, 0xcd, 0x12, 0x34, 0x56, 0x78, 0x40, 0x00, 0x01, 0x02, 0xde, 0xad, 0xbe, \
		0xef

struct expect {
	enum qmap_frame_kind kind;
	uint8_t mux_id;
	uint8_t flags;
	size_t header_off;
	size_t payload_off;
	uint16_t len;
	uint32_t wire_len;
};

/* Helpers report the caller's line too, since the EXPECT macros only know their own. */
static void expect_frame(int line, struct qmap_iter *it, const struct expect *e)
{
	int before = test_failures;
	struct qmap_frame f;
	enum qmap_error err = _QMAP_ERR_MAX;

	int r = qmap_next(it, &f, &err);
	EXPECT_EQ(r, 1);
	if (r == 1) {
		EXPECT_EQ(f.kind, e->kind);
		EXPECT_EQ(f.mux_id, e->mux_id);
		EXPECT_EQ(f.flags, e->flags);
		EXPECT_PTR_EQ(f.header, it->buf + e->header_off);
		EXPECT_PTR_EQ(f.payload, it->buf + e->payload_off);
		EXPECT_EQ(f.len, e->len);
		EXPECT_EQ(f.wire_len, e->wire_len);
	} else {
		fprintf(stderr, "  error %s\n", r < 0 ? qmap_error_name(err) : "(end)");
	}
	if (test_failures != before)
		fprintf(stderr, "  (from line %d)\n", line);
}

static void expect_error(int line, struct qmap_iter *it, enum qmap_error want, size_t off_after)
{
	int before = test_failures;
	struct qmap_frame f, sentinel;
	enum qmap_error err = _QMAP_ERR_MAX;

	/* Out-parameters are left alone on failure. */
	memset(&f, 0xa5, sizeof(f));
	memcpy(&sentinel, &f, sizeof(f));

	EXPECT_EQ(qmap_next(it, &f, &err), -EBADMSG);
	EXPECT_EQ(err, want);
	EXPECT_STR_EQ(qmap_error_name(err), qmap_error_name(want));
	EXPECT_EQ(it->off, off_after);
	EXPECT_MEM_EQ(&f, &sentinel, sizeof(f));
	if (test_failures != before)
		fprintf(stderr, "  (from line %d)\n", line);
}

static void expect_end(int line, struct qmap_iter *it)
{
	int before = test_failures;
	struct qmap_frame f;
	enum qmap_error err = _QMAP_ERR_MAX;

	EXPECT_EQ(qmap_next(it, &f, &err), 0);
	/* The end is sticky. */
	EXPECT_EQ(qmap_next(it, &f, &err), 0);
	EXPECT_EQ(err, _QMAP_ERR_MAX);
	if (test_failures != before)
		fprintf(stderr, "  (from line %d)\n", line);
}

#define EXPECT_FRAME(it, ...)	 expect_frame(__LINE__, it, &(struct expect){ __VA_ARGS__ })
#define EXPECT_ERROR(it, e, off) expect_error(__LINE__, it, e, off)
#define EXPECT_END(it)		 expect_end(__LINE__, it)

#define DATA QMAP_FRAME_DATA
#define CMD  QMAP_FRAME_COMMAND

TEST(error_names)
{
	static const char *const names[] = {
		[QMAP_ERR_TRUNCATED_HEADER] = "truncated_header",
		[QMAP_ERR_LEN_OVERFLOW] = "len_overflow",
		[QMAP_ERR_ZERO_LEN] = "zero_len",
		[QMAP_ERR_PAD_TOO_LONG] = "pad_too_long",
		[QMAP_ERR_NO_CSUM_HEADER] = "no_csum_header",
		[QMAP_ERR_BAD_NEXT_HEADER] = "bad_next_header",
		[QMAP_ERR_NOT_IP] = "not_ip",
		[QMAP_ERR_SHORT_COMMAND] = "short_command",
	};

	EXPECT_EQ(sizeof(names) / sizeof(names[0]), _QMAP_ERR_MAX);
	for (int e = 0; e < _QMAP_ERR_MAX; e++)
		EXPECT_STR_EQ(qmap_error_name(e), names[e]);
	EXPECT_PTR_EQ(qmap_error_name(_QMAP_ERR_MAX), NULL);
}

TEST(empty)
{
	struct qmap_iter it;
	uint8_t buf[1] = { 0 };

	qmap_iter_init(&it, buf, 0, QMAP_V1);
	EXPECT_END(&it);
	qmap_iter_init(&it, NULL, 0, QMAP_V5);
	EXPECT_END(&it);
}

TEST(v1_single)
{
	struct qmap_iter it;
	uint8_t v4[] = { 0x00, 0x01, 0x00, 0x14, IPV4_20 };
	uint8_t v6_pad[] = { 0x02, 0x05, 0x00, 0x2a, IPV6_40, 0x00, 0x00 };

	qmap_iter_init(&it, v4, sizeof(v4), QMAP_V1);
	EXPECT_FRAME(&it, DATA, 1, 0, 0, 4, 20, 24);
	EXPECT_END(&it);

	qmap_iter_init(&it, v6_pad, sizeof(v6_pad), QMAP_V1);
	EXPECT_FRAME(&it, DATA, 5, QMAP_FRAME_IPV6, 0, 4, 40, 46);
	EXPECT_END(&it);
}

/* v1 data with padding, a command in the middle, then data again. */
TEST(v1_mixed)
{
	struct qmap_iter it;
	uint8_t agg[] = {
		/* 0: IPv4, 21 bytes + 3 pad */
		0x03,
		0x01,
		0x00,
		0x18,
		IPV4_20,
		0x99,
		0x00,
		0x00,
		0x00,
		/* 28: FLOW_DISABLE command on mux 7 */
		0x80,
		0x07,
		0x00,
		0x10,
		CMD_BODY,
		/* 48: IPv6, no pad */
		0x00,
		0x02,
		0x00,
		0x28,
		IPV6_40,
		/* 92: IPv4, 20 bytes + 1 pad, mux 254 */
		0x01,
		0xfe,
		0x00,
		0x15,
		IPV4_20,
		0x00,
	};

	qmap_iter_init(&it, agg, sizeof(agg), QMAP_V1);
	EXPECT_FRAME(&it, DATA, 1, 0, 0, 4, 21, 28);
	EXPECT_FRAME(&it, CMD, 7, 0, 28, 32, 16, 20);
	EXPECT_FRAME(&it, DATA, 2, QMAP_FRAME_IPV6, 48, 52, 40, 44);
	EXPECT_FRAME(&it, DATA, 254, 0, 92, 96, 20, 25);
	EXPECT_END(&it);
	EXPECT_EQ(sizeof(agg), 117);
}

TEST(v5_frames)
{
	struct qmap_iter it;
	uint8_t agg[] = {
		/* 0: IPv4, checksum valid */
		0x40,
		0x01,
		0x00,
		0x14,
		0x04,
		0x80,
		0x00,
		0x00,
		IPV4_20,
		/* 28: IPv6 with 2 pad, checksum not validated; reserved csum bits ignored */
		0x42,
		0x03,
		0x00,
		0x2a,
		0x04,
		0x7f,
		0xff,
		0xff,
		IPV6_40,
		0x00,
		0x00,
		/* 78: command: no checksum header even with the next-header bit set */
		0xc0,
		0x03,
		0x00,
		0x10,
		CMD_BODY,
		/* 98: IPv6, checksum valid */
		0x40,
		0x04,
		0x00,
		0x28,
		0x04,
		0x80,
		0x00,
		0x00,
		IPV6_40,
	};

	qmap_iter_init(&it, agg, sizeof(agg), QMAP_V5);
	EXPECT_FRAME(&it, DATA, 1, QMAP_FRAME_CSUM_VALID, 0, 8, 20, 28);
	EXPECT_FRAME(&it, DATA, 3, QMAP_FRAME_IPV6, 28, 36, 40, 50);
	EXPECT_FRAME(&it, CMD, 3, 0, 78, 82, 16, 20);
	EXPECT_FRAME(&it, DATA, 4, QMAP_FRAME_IPV6 | QMAP_FRAME_CSUM_VALID, 98, 106, 40, 48);
	EXPECT_END(&it);
	EXPECT_EQ(sizeof(agg), 146);
}

static bool same_frame(const struct qmap_frame *a, const struct qmap_frame *b)
{
	return a->kind == b->kind && a->mux_id == b->mux_id && a->flags == b->flags &&
	       a->header == b->header && a->payload == b->payload && a->len == b->len &&
	       a->wire_len == b->wire_len;
}

/* Walk agg with qmap_next() and qmap_next_inline() side by side: the same every step. */
static void expect_same_walk(uint8_t *agg, size_t len, enum qmap_version v, uint32_t padding)
{
	struct qmap_iter a, b;
	struct qmap_frame fa, fb;
	enum qmap_error ea = _QMAP_ERR_MAX, eb = _QMAP_ERR_MAX;
	int ra, rb, steps = 0;

	qmap_iter_init(&a, agg, len, v);
	qmap_iter_init(&b, agg, len, v);
	a.min_padding = b.min_padding = padding;
	do {
		memset(&fa, 0, sizeof(fa));
		memset(&fb, 0, sizeof(fb));
		ra = qmap_next(&a, &fa, &ea);
		rb = qmap_next_inline(&b, &fb, &eb);
		EXPECT_EQ(ra, rb);
		EXPECT_EQ(a.off, b.off);
		if (ra < 0)
			EXPECT_EQ(ea, eb);
		if (ra == 1)
			EXPECT_TRUE(same_frame(&fa, &fb));
	} while (ra != 0 && rb == ra && ++steps < 1000);
}

/*
 * The datapath's inline walk (qmap_next_inline) yields exactly what qmap_next() yields, on
 * aggregates of well-formed v1 and v5 frames with random bytes changed, cut and padded.
 */
TEST(inline_matches)
{
	uint8_t agg[512];
	uint32_t x = 2463534242u;

	for (int round = 0; round < 20000; round++) {
		enum qmap_version v = round & 1 ? QMAP_V5 : QMAP_V1;
		size_t len = 0;
		/* Frames of 20..80 bytes of IPv4 or IPv6, pad 0..3, mux 1..4. */
		while (len < sizeof(agg) - 100) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			unsigned ip_len = 20 + x % 61, pad = (x >> 8) % 4;
			bool v6 = (x >> 12) & 1;
			if (v6 && ip_len < 40)
				ip_len += 20;
			size_t hdr = v == QMAP_V5 ? 8 : 4;
			uint8_t *h = agg + len;
			h[0] = (uint8_t)((v == QMAP_V5 ? QMAP_FLAG_NEXT_HEADER : 0) | pad);
			h[1] = (uint8_t)(1 + (x >> 16) % 4);
			h[2] = (uint8_t)((ip_len + pad) >> 8);
			h[3] = (uint8_t)(ip_len + pad);
			if (v == QMAP_V5) {
				h[4] = QMAP_CSUM_HEADER_TYPE_CSUM_OFFLOAD << 1;
				h[5] = (x >> 20) & 1 ? QMAP_CSUM_VALID : 0;
				h[6] = h[7] = 0;
			}
			memset(agg + len + hdr, 0, ip_len + pad);
			agg[len + hdr] = v6 ? 0x60 : 0x45;
			len += hdr + ip_len + pad;
		}
		/* Mutations: a few bytes anywhere (headers mostly), then maybe a cut. */
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		for (unsigned k = x % 4; k > 0; k--) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			agg[x % len] = (uint8_t)(x >> 24);
		}
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		if (x % 3 == 0)
			len -= (x >> 8) % 60;
		expect_same_walk(agg, len, v, round % 5 == 0 ? 8 : 0);
		if (test_failures) {
			fprintf(stderr, "  round %d\n", round);
			return;
		}
	}
}

TEST(truncated_header)
{
	struct qmap_iter it;
	/* A good frame, then 3 bytes that cannot be a header. */
	uint8_t v1[] = { 0x00, 0x01, 0x00, 0x14, IPV4_20, 0x00, 0x01, 0x00 };
	/* v5 data frame announcing a checksum header, with only 7 bytes left. */
	uint8_t v5[] = { 0x40, 0x01, 0x00, 0x00, 0x04, 0x00, 0x00 };
	/* v5 command with 4 bytes: complete, since commands carry no checksum header. */
	uint8_t v5_cmd[] = { 0xc0, 0x01, 0x00, 0x00 };
	uint8_t one[] = { 0x00 };

	qmap_iter_init(&it, v1, sizeof(v1), QMAP_V1);
	EXPECT_FRAME(&it, DATA, 1, 0, 0, 4, 20, 24);
	EXPECT_ERROR(&it, QMAP_ERR_TRUNCATED_HEADER, sizeof(v1));
	EXPECT_END(&it);

	qmap_iter_init(&it, v5, sizeof(v5), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_TRUNCATED_HEADER, sizeof(v5));
	EXPECT_END(&it);

	/* The MAP header alone is complete, but a v5 data frame needs 8 bytes. */
	qmap_iter_init(&it, v5, 4, QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_TRUNCATED_HEADER, 4);
	EXPECT_END(&it);

	qmap_iter_init(&it, v5_cmd, sizeof(v5_cmd), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 4);
	EXPECT_END(&it);

	qmap_iter_init(&it, one, sizeof(one), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_TRUNCATED_HEADER, 1);
	EXPECT_END(&it);
}

TEST(len_overflow)
{
	struct qmap_iter it;
	/* pkt_len 0x15 with 20 bytes following; a good frame hides behind it and must not show. */
	uint8_t v1[] = { 0x00, 0x01, 0x00, 0x15, IPV4_20 };
	uint8_t v1_hidden[] = { 0x00, 0x01, 0x00, 0x40, 0x00, 0x02, 0x00, 0x14, IPV4_20 };
	/* Fits as 4 + pkt_len but not as 8 + pkt_len. */
	uint8_t v5[] = { 0x40, 0x01, 0x00, 0x18, 0x04, 0x80, 0x00, 0x00, IPV4_20 };
	static uint8_t max[4 + 65535] = { 0x00, 0x09, 0xff, 0xff, IPV4_20 };

	qmap_iter_init(&it, v1, sizeof(v1), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_LEN_OVERFLOW, sizeof(v1));
	EXPECT_END(&it);

	qmap_iter_init(&it, v1_hidden, sizeof(v1_hidden), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_LEN_OVERFLOW, sizeof(v1_hidden));
	EXPECT_END(&it);

	qmap_iter_init(&it, v5, sizeof(v5), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_LEN_OVERFLOW, sizeof(v5));
	EXPECT_END(&it);

	/* The largest pkt_len, exactly fitting, and one byte short of fitting. */
	qmap_iter_init(&it, max, sizeof(max), QMAP_V1);
	EXPECT_FRAME(&it, DATA, 9, 0, 0, 4, 65535, 65539);
	EXPECT_END(&it);
	qmap_iter_init(&it, max, sizeof(max) - 1, QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_LEN_OVERFLOW, sizeof(max) - 1);
	EXPECT_END(&it);
}

TEST(zero_len)
{
	struct qmap_iter it;
	uint8_t v1[] = { 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x14, IPV4_20 };
	uint8_t v5[] = {
		0x40, 0x01, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,	   0x40,
		0x02, 0x00, 0x14, 0x04, 0x80, 0x00, 0x00, IPV4_20,
	};
	/* A command with pkt_len 0 is empty before it is short. */
	uint8_t cmd[] = { 0x80, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x14, IPV4_20 };

	qmap_iter_init(&it, v1, sizeof(v1), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 4);
	EXPECT_FRAME(&it, DATA, 2, 0, 4, 8, 20, 24);
	EXPECT_END(&it);

	qmap_iter_init(&it, v5, sizeof(v5), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 8);
	EXPECT_FRAME(&it, DATA, 2, QMAP_FRAME_CSUM_VALID, 8, 16, 20, 28);
	EXPECT_END(&it);

	qmap_iter_init(&it, cmd, sizeof(cmd), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 4);
	EXPECT_FRAME(&it, DATA, 2, 0, 4, 8, 20, 24);
	EXPECT_END(&it);
}

/* Granted DL minimum padding: zero words between frames are skipped, up to that many. */
TEST(min_padding)
{
	struct qmap_iter it;
	uint8_t buf[] = {
		0,    0,    0,	  0,	   0,	 0,    0,    0,	      0, 0, 0, 0, 0, 0, 0, 0, 0x00,
		0x01, 0x00, 0x14, IPV4_20, 0,	 0,    0,    0,	      0, 0, 0, 0, 0, 0, 0, 0, 0,
		0,    0,    0,	  0x00,	   0x02, 0x00, 0x14, IPV4_20, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	/* More zeros than granted: the rest is an empty frame, as without padding. */
	uint8_t over[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0x00, 0x14, IPV4_20 };

	qmap_iter_init(&it, buf, sizeof(buf), QMAP_V1);
	EXPECT_EQ(it.min_padding, 0u);
	it.min_padding = 16;
	EXPECT_FRAME(&it, DATA, 1, 0, 16, 20, 20, 24);
	EXPECT_FRAME(&it, DATA, 2, 0, 56, 60, 20, 24);
	EXPECT_END(&it);

	qmap_iter_init(&it, over, sizeof(over), QMAP_V1);
	it.min_padding = 4;
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 8);
	EXPECT_FRAME(&it, DATA, 1, 0, 8, 12, 20, 24);
	EXPECT_END(&it);

	/* Without a grant the same zeros are empty frames, counted. */
	qmap_iter_init(&it, over, sizeof(over), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 4);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 8);
	EXPECT_FRAME(&it, DATA, 1, 0, 8, 12, 20, 24);
	EXPECT_END(&it);
}

TEST(pad_too_long)
{
	struct qmap_iter it;
	uint8_t v1[] = {
		/* pad == pkt_len */
		0x04,
		0x01,
		0x00,
		0x04,
		0x45,
		0x00,
		0x00,
		0x00,
		/* pad > pkt_len */
		0x3f,
		0x01,
		0x00,
		0x02,
		0x45,
		0x00,
		0x00,
		0x02,
		0x00,
		0x14,
		IPV4_20,
	};
	uint8_t v5[] = {
		0x44, 0x01, 0x00, 0x04, 0x04, 0x00, 0x00, 0x00, 0x60, 0x00,    0x00,
		0x00, 0x40, 0x02, 0x00, 0x14, 0x04, 0x00, 0x00, 0x00, IPV4_20,
	};

	qmap_iter_init(&it, v1, sizeof(v1), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_PAD_TOO_LONG, 8);
	EXPECT_ERROR(&it, QMAP_ERR_PAD_TOO_LONG, 14);
	EXPECT_FRAME(&it, DATA, 2, 0, 14, 18, 20, 24);
	EXPECT_END(&it);

	qmap_iter_init(&it, v5, sizeof(v5), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_PAD_TOO_LONG, 12);
	EXPECT_FRAME(&it, DATA, 2, 0, 12, 20, 20, 28);
	EXPECT_END(&it);
}

TEST(no_csum_header)
{
	struct qmap_iter it;
	/* Without the next-header bit the frame is 4 + pkt_len long: the next one is at 24. */
	uint8_t v5[] = {
		0x00, 0x01, 0x00, 0x14, IPV4_20, 0x40, 0x02,
		0x00, 0x14, 0x04, 0x80, 0x00,	 0x00, IPV4_20,
	};

	qmap_iter_init(&it, v5, sizeof(v5), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_NO_CSUM_HEADER, 24);
	EXPECT_FRAME(&it, DATA, 2, QMAP_FRAME_CSUM_VALID, 24, 32, 20, 28);
	EXPECT_END(&it);
}

TEST(bad_next_header)
{
	struct qmap_iter it;
	uint8_t v5[] = {
		/* 0: type 1 (downstream coalescing) */
		0x40,
		0x01,
		0x00,
		0x14,
		0x02,
		0x80,
		0x00,
		0x00,
		IPV4_20,
		/* 28: type 2 but "more headers" set */
		0x40,
		0x01,
		0x00,
		0x14,
		0x05,
		0x80,
		0x00,
		0x00,
		IPV4_20,
		/* 56: type 0 */
		0x40,
		0x01,
		0x00,
		0x14,
		0x00,
		0x80,
		0x00,
		0x00,
		IPV4_20,
		/* 84: type 0x7f */
		0x40,
		0x01,
		0x00,
		0x14,
		0xfe,
		0x80,
		0x00,
		0x00,
		IPV4_20,
		/* 112: good */
		0x40,
		0x02,
		0x00,
		0x14,
		0x04,
		0x00,
		0x00,
		0x00,
		IPV4_20,
	};
	/* The reserved bit on a v1 stream: no header follows, so the frame is 4 + pkt_len. */
	uint8_t v1[] = {
		0x40, 0x01, 0x00, 0x14, IPV4_20, 0x00, 0x02, 0x00, 0x14, IPV4_20,
	};
	/* On a v1 command frame the bit is not looked at. */
	uint8_t v1_cmd[] = { 0xc0, 0x01, 0x00, 0x10, CMD_BODY };

	qmap_iter_init(&it, v5, sizeof(v5), QMAP_V5);
	EXPECT_ERROR(&it, QMAP_ERR_BAD_NEXT_HEADER, 28);
	EXPECT_ERROR(&it, QMAP_ERR_BAD_NEXT_HEADER, 56);
	EXPECT_ERROR(&it, QMAP_ERR_BAD_NEXT_HEADER, 84);
	EXPECT_ERROR(&it, QMAP_ERR_BAD_NEXT_HEADER, 112);
	EXPECT_FRAME(&it, DATA, 2, 0, 112, 120, 20, 28);
	EXPECT_END(&it);

	qmap_iter_init(&it, v1, sizeof(v1), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_BAD_NEXT_HEADER, 24);
	EXPECT_FRAME(&it, DATA, 2, 0, 24, 28, 20, 24);
	EXPECT_END(&it);

	qmap_iter_init(&it, v1_cmd, sizeof(v1_cmd), QMAP_V1);
	EXPECT_FRAME(&it, CMD, 1, 0, 0, 4, 16, 20);
	EXPECT_END(&it);
}

TEST(not_ip)
{
	struct qmap_iter it;
	uint8_t v1[] = {
		/* 0: version nibble 5 */
		0x00,
		0x01,
		0x00,
		0x14,
		0x55,
		0x00,
		0x00,
		0x14,
		0x00,
		0x00,
		0x00,
		0x00,
		0x40,
		0x11,
		0x00,
		0x00,
		10,
		0,
		0,
		1,
		10,
		0,
		0,
		2,
		/* 24: version nibble 0 */
		0x00,
		0x01,
		0x00,
		0x01,
		0x00,
		/* 29: IPv4 nibble, 19 bytes: shorter than the fixed header */
		0x00,
		0x01,
		0x00,
		0x13,
		0x45,
		0x00,
		0x00,
		0x13,
		0x00,
		0x00,
		0x00,
		0x00,
		0x40,
		0x11,
		0x00,
		0x00,
		10,
		0,
		0,
		1,
		10,
		0,
		0,
		/* 52: IPv4 in 21 bytes of which 2 are pad: 19 bytes of packet */
		0x02,
		0x01,
		0x00,
		0x15,
		IPV4_20,
		0x00,
		/* 77: IPv6 nibble, 39 bytes */
		0x00,
		0x01,
		0x00,
		0x27,
		IPV6_39,
		/* 120: good IPv6 */
		0x00,
		0x02,
		0x00,
		0x28,
		IPV6_40,
	};

	qmap_iter_init(&it, v1, sizeof(v1), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_NOT_IP, 24);
	EXPECT_ERROR(&it, QMAP_ERR_NOT_IP, 29);
	EXPECT_ERROR(&it, QMAP_ERR_NOT_IP, 52);
	EXPECT_ERROR(&it, QMAP_ERR_NOT_IP, 77);
	EXPECT_ERROR(&it, QMAP_ERR_NOT_IP, 120);
	EXPECT_FRAME(&it, DATA, 2, QMAP_FRAME_IPV6, 120, 124, 40, 44);
	EXPECT_END(&it);
	EXPECT_EQ(sizeof(v1), 164);
}

TEST(short_command)
{
	struct qmap_iter it;
	uint8_t agg[] = {
		/* 0: 15-byte body */
		0x80,
		0x01,
		0x00,
		0x0f,
		0x01,
		0x00,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		/* 19: 16 bytes of which 1 is pad */
		0x81,
		0x01,
		0x00,
		0x10,
		0x01,
		0x00,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		/* 39: pad longer than pkt_len */
		0xbf,
		0x01,
		0x00,
		0x04,
		0x01,
		0x00,
		0x00,
		0x00,
		/* 47: 20 bytes of which 4 are pad: a full command */
		0x84,
		0x02,
		0x00,
		0x14,
		CMD_BODY,
		0x00,
		0x00,
		0x00,
		0x00,
	};

	qmap_iter_init(&it, agg, sizeof(agg), QMAP_V1);
	EXPECT_ERROR(&it, QMAP_ERR_SHORT_COMMAND, 19);
	EXPECT_ERROR(&it, QMAP_ERR_SHORT_COMMAND, 39);
	EXPECT_ERROR(&it, QMAP_ERR_SHORT_COMMAND, 47);
	EXPECT_FRAME(&it, CMD, 2, 0, 47, 51, 16, 24);
	EXPECT_END(&it);
	EXPECT_EQ(sizeof(agg), 71);
}

/* One aggregate with every skip kind between good frames, and a fatal error at the end. */
TEST(skip_then_fatal)
{
	struct qmap_iter it;
	uint8_t agg[] = {
		/* 0 */ 0x00,
		0x01,
		0x00,
		0x14,
		IPV4_20,
		/* 24: zero_len */ 0x00,
		0x01,
		0x00,
		0x00,
		/* 28 */ 0x00,
		0x02,
		0x00,
		0x14,
		IPV4_20,
		/* 52: not_ip */ 0x00,
		0x01,
		0x00,
		0x01,
		0x70,
		/* 57 */ 0x00,
		0x03,
		0x00,
		0x14,
		IPV4_20,
		/* 81: len_overflow; a good frame hides behind it */
		0x00,
		0x01,
		0x01,
		0x00,
		0x00,
		0x04,
		0x00,
		0x14,
		IPV4_20,
	};
	struct qmap_frame f;

	qmap_iter_init(&it, agg, sizeof(agg), QMAP_V1);
	EXPECT_FRAME(&it, DATA, 1, 0, 0, 4, 20, 24);
	EXPECT_ERROR(&it, QMAP_ERR_ZERO_LEN, 28);
	EXPECT_FRAME(&it, DATA, 2, 0, 28, 32, 20, 24);
	EXPECT_ERROR(&it, QMAP_ERR_NOT_IP, 57);
	EXPECT_FRAME(&it, DATA, 3, 0, 57, 61, 20, 24);
	EXPECT_ERROR(&it, QMAP_ERR_LEN_OVERFLOW, sizeof(agg));
	EXPECT_END(&it);

	/* ret_error may be NULL when the caller only counts. */
	qmap_iter_init(&it, agg, sizeof(agg), QMAP_V1);
	int frames = 0, errors = 0, r;
	while ((r = qmap_next(&it, &f, NULL)) != 0) {
		if (r > 0)
			frames++;
		else
			errors++;
	}
	EXPECT_EQ(frames, 3);
	EXPECT_EQ(errors, 3);
}

TEST(command_parse_ack)
{
	uint8_t frame[] = { 0x80, 0x07, 0x00, 0x10, CMD_BODY };
	uint8_t orig[sizeof(frame)];
	struct qmap_iter it;
	struct qmap_frame f;
	struct qmap_command cmd, sentinel;
	enum qmap_error err;
	const uint8_t tid[4] = { 0x12, 0x34, 0x56, 0x78 };

	memcpy(orig, frame, sizeof(frame));
	qmap_iter_init(&it, frame, sizeof(frame), QMAP_V1);
	EXPECT_EQ(qmap_next(&it, &f, &err), 1);
	EXPECT_EQ(f.kind, QMAP_FRAME_COMMAND);

	EXPECT_EQ(qmap_command_parse(f.payload, f.len, &cmd), 0);
	EXPECT_EQ(cmd.name, QMAP_COMMAND_FLOW_DISABLE);
	EXPECT_EQ(cmd.type, QMAP_COMMAND_REQUEST);
	EXPECT_MEM_EQ(&cmd.transaction_id, tid, sizeof(tid));
	EXPECT_EQ(cmd.flow_seq_num, 0x0102);
	EXPECT_EQ(cmd.qos_id, 0xdeadbeef);

	/* The ACK changes only the two type bits, in place. */
	qmap_command_make_ack(f.payload);
	EXPECT_EQ(frame[5], 0xfd);
	frame[5] = orig[5];
	EXPECT_MEM_EQ(frame, orig, sizeof(frame));
	qmap_command_make_ack(f.payload);
	EXPECT_EQ(qmap_command_parse(f.payload, f.len, &cmd), 0);
	EXPECT_EQ(cmd.type, QMAP_COMMAND_ACK);
	EXPECT_EQ(cmd.name, QMAP_COMMAND_FLOW_DISABLE);
	EXPECT_MEM_EQ(&cmd.transaction_id, tid, sizeof(tid));

	/* An ACK of an INVALID-typed frame is still an ACK. */
	uint8_t body[QMAP_COMMAND_SIZE] = { 0x02, 0x03 };
	qmap_command_make_ack(body);
	EXPECT_EQ(body[1], QMAP_COMMAND_ACK);

	/* Too short: nothing written. */
	memset(&sentinel, 0x5a, sizeof(sentinel));
	memcpy(&cmd, &sentinel, sizeof(cmd));
	EXPECT_EQ(qmap_command_parse(f.payload, QMAP_COMMAND_SIZE - 1, &cmd), -EBADMSG);
	EXPECT_MEM_EQ(&cmd, &sentinel, sizeof(cmd));
	EXPECT_EQ(qmap_command_parse(f.payload, 0, &cmd), -EBADMSG);
}

TEST(write_command)
{
	static const uint8_t want[] = {
		0x80, 0x21, 0x00, 0x10, 0x02, 0x01, 0x00, 0x00, 0xca, 0xfe,
		0xba, 0xbe, 0x00, 0x00, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67,
	};
	const uint8_t tid[4] = { 0xca, 0xfe, 0xba, 0xbe };
	struct qmap_command cmd = {
		.name = QMAP_COMMAND_FLOW_ENABLE,
		.type = QMAP_COMMAND_ACK,
		.flow_seq_num = 0xbeef,
		.qos_id = 0x01234567,
	};
	uint8_t buf[4 + QMAP_COMMAND_SIZE];
	struct qmap_iter it;
	struct qmap_frame f;
	struct qmap_command back;
	enum qmap_error err;

	memcpy(&cmd.transaction_id, tid, sizeof(tid));
	memset(buf, 0xee, sizeof(buf));
	qmap_write_command(buf, 0x21, &cmd);
	EXPECT_EQ(sizeof(want), sizeof(buf));
	EXPECT_MEM_EQ(buf, want, sizeof(want));

	/* Read back through the parser in both versions. */
	for (int v = 0; v < 2; v++) {
		qmap_iter_init(&it, buf, sizeof(buf), v ? QMAP_V5 : QMAP_V1);
		EXPECT_EQ(qmap_next(&it, &f, &err), 1);
		EXPECT_EQ(f.kind, QMAP_FRAME_COMMAND);
		EXPECT_EQ(f.mux_id, 0x21);
		EXPECT_EQ(f.len, QMAP_COMMAND_SIZE);
		EXPECT_EQ(qmap_command_parse(f.payload, f.len, &back), 0);
		EXPECT_EQ(back.name, cmd.name);
		EXPECT_EQ(back.type, cmd.type);
		EXPECT_EQ(back.transaction_id, cmd.transaction_id);
		EXPECT_EQ(back.flow_seq_num, cmd.flow_seq_num);
		EXPECT_EQ(back.qos_id, cmd.qos_id);
		EXPECT_END(&it);
	}
}

TEST(ul_header_bytes)
{
	uint8_t hdr[8];
	static const uint8_t v1[] = { 0x02, 0x03, 0x05, 0xde };
	static const uint8_t v5_on[] = { 0x42, 0x03, 0x00, 0x16, 0x04, 0x80, 0x00, 0x00 };
	static const uint8_t v5_off[] = { 0x40, 0xfe, 0xff, 0xff, 0x04, 0x00, 0x00, 0x00 };

	EXPECT_EQ(qmap_ul_header_size(QMAP_V1), 4);
	EXPECT_EQ(qmap_ul_header_size(QMAP_V5), 8);
	EXPECT_EQ(qmap_ul_header_size((enum qmap_version)2), 0);

	memset(hdr, 0xee, sizeof(hdr));
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V1, 3, 1500, 2, true), 4);
	EXPECT_MEM_EQ(hdr, v1, sizeof(v1));
	EXPECT_EQ(hdr[4], 0xee);

	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V5, 3, 20, 2, true), 8);
	EXPECT_MEM_EQ(hdr, v5_on, sizeof(v5_on));
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V5, 254, 65535, 0, false), 8);
	EXPECT_MEM_EQ(hdr, v5_off, sizeof(v5_off));
}

TEST(ul_header_einval)
{
	uint8_t hdr[8], orig[8];

	memset(hdr, 0xee, sizeof(hdr));
	memcpy(orig, hdr, sizeof(hdr));

	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V1, 1, 20, 64, false), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V5, 1, 20, 64, false), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V1, 1, 65536, 0, false), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V5, 1, 65535, 1, true), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V1, 1, 65473, 63, false), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V1, 1, SIZE_MAX, 0, false), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, (enum qmap_version)0, 1, 20, 0, false), -EINVAL);
	EXPECT_EQ(qmap_write_data_header(hdr, (enum qmap_version)4, 1, 20, 0, false), -EINVAL);
	EXPECT_MEM_EQ(hdr, orig, sizeof(hdr));

	/* The limits themselves are fine. */
	EXPECT_EQ(qmap_write_data_header(hdr, QMAP_V1, 1, 65472, 63, false), 4);
	EXPECT_EQ(hdr[0], 63);
	EXPECT_EQ(hdr[2], 0xff);
	EXPECT_EQ(hdr[3], 0xff);
}

/* Build an aggregate with our UL writer and read it back with the DL parser. */
TEST(ul_round_trip)
{
	static const struct {
		uint8_t mux_id;
		bool ipv6;
		uint16_t len;
		unsigned pad;
		bool csum;
	} frames[] = {
		{ 1, false, 20, 0, true },   { 2, true, 40, 0, false },
		{ 3, false, 21, 3, false },  { 254, true, 1280, 63, true },
		{ 0, false, 1500, 1, true }, { 0x81, true, 41, 2, true },
	};
	static uint8_t buf[8192];

	for (int v = 0; v < 2; v++) {
		enum qmap_version version = v ? QMAP_V5 : QMAP_V1;
		size_t hs = qmap_ul_header_size(version);
		size_t off = 0;
		size_t offs[sizeof(frames) / sizeof(frames[0])];

		memset(buf, 0xee, sizeof(buf));
		for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
			uint8_t *payload = buf + off + hs;

			for (size_t j = 0; j < frames[i].len; j++)
				payload[j] = (uint8_t)(i * 31 + j);
			payload[0] = frames[i].ipv6 ? 0x60 : 0x45;
			memset(payload + frames[i].len, 0, frames[i].pad);

			EXPECT_EQ(qmap_write_data_header(buf + off, version, frames[i].mux_id,
							 frames[i].len, frames[i].pad,
							 frames[i].csum),
				  (int)hs);
			offs[i] = off;
			off += hs + frames[i].len + frames[i].pad;
		}

		struct qmap_iter it;
		qmap_iter_init(&it, buf, off, version);
		for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
			uint8_t flags = frames[i].ipv6 ? QMAP_FRAME_IPV6 : 0;

			/* v1 has nowhere to carry the flag. */
			if (version == QMAP_V5 && frames[i].csum)
				flags |= QMAP_FRAME_CSUM_VALID;
			EXPECT_FRAME(&it, DATA, frames[i].mux_id, flags, offs[i], offs[i] + hs,
				     frames[i].len, (uint32_t)(hs + frames[i].len + frames[i].pad));
			for (size_t j = 1; j < frames[i].len; j++)
				if (buf[offs[i] + hs + j] != (uint8_t)(i * 31 + j)) {
					EXPECT_EQ(buf[offs[i] + hs + j], (uint8_t)(i * 31 + j));
					break;
				}
		}
		EXPECT_END(&it);
	}
}
