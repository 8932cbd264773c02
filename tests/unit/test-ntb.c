/* SPDX-License-Identifier: MIT */
/*
 * NTB codec: byte-exact NTB16/NTB32 vectors written from NCM 1.0 / MBIM 1.0 (docs/PROTOCOLS.md
 * §3), every malformed case with its outcome, GET_NTB_PARAMETERS with Linux's corrections, and
 * uplink NTBs built by us and read back by our own parser.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "byteorder.h"
#include "ntb.h"
#include "test-case.h"

#define LE16(v) (uint8_t)((v)&0xff), (uint8_t)(((v) >> 8) & 0xff)
#define LE32(v) LE16((v)&0xffff), LE16(((v) >> 16) & 0xffff)

/* Headers, written out from the structures rather than from our own constants. */
#define NTH16(seq, block, ndp)	  'N', 'C', 'M', 'H', LE16(12), LE16(seq), LE16(block), LE16(ndp)
#define NTH32(seq, block, ndp)	  'n', 'c', 'm', 'h', LE16(16), LE16(seq), LE32(block), LE32(ndp)
#define NDP16(session, len, next) 'I', 'P', 'S', session, LE16(len), LE16(next)
#define NDP32(session, len, next) 'i', 'p', 's', session, LE16(len), LE16(0), LE32(next), LE32(0)
#define DPE16(index, len)	  LE16(index), LE16(len)
#define DPE32(index, len)	  LE32(index), LE32(len)

/* Smallest well-formed IP headers: the parser requires the fixed header to be present. */
#define IPV4_20                                                                                  \
	0x45, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, \
		0, 0, 2
#define IPV6_ADDR 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define IPV6_40	  0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x40, IPV6_ADDR, 1, IPV6_ADDR, 2

#define PAD4  0, 0, 0, 0
#define JUNK4 0xee, 0xee, 0xee, 0xee

struct expect {
	uint8_t session;
	uint8_t flags;
	size_t off;
	uint32_t len;
};

/* Helpers report the caller's line too, since the EXPECT macros only know their own. */
static void expect_dgram(int line, struct ntb_parser *p, const struct expect *e)
{
	int before = test_failures;
	struct ntb_datagram d;

	int r = ntb_parse_next(p, &d);
	EXPECT_EQ(r, 1);
	if (r == 1) {
		EXPECT_EQ(d.session, e->session);
		EXPECT_EQ(d.flags, e->flags);
		EXPECT_PTR_EQ(d.data, p->buf + e->off);
		EXPECT_EQ(d.len, e->len);
	} else {
		fprintf(stderr, "  error %s\n", r < 0 ? ntb_error_name(p->error) : "(end)");
	}
	if (test_failures != before)
		fprintf(stderr, "  (from line %d)\n", line);
}

static void expect_error(int line, struct ntb_parser *p, enum ntb_error want)
{
	int before = test_failures;
	struct ntb_datagram d, sentinel;

	/* The out-parameter is left alone on failure. */
	memset(&d, 0xa5, sizeof(d));
	memcpy(&sentinel, &d, sizeof(d));

	EXPECT_EQ(ntb_parse_next(p, &d), -EBADMSG);
	EXPECT_EQ(p->error, want);
	EXPECT_STR_EQ(ntb_error_name(p->error), ntb_error_name(want));
	EXPECT_MEM_EQ(&d, &sentinel, sizeof(d));
	if (test_failures != before)
		fprintf(stderr, "  (from line %d)\n", line);
}

static void expect_end(int line, struct ntb_parser *p)
{
	int before = test_failures;
	struct ntb_datagram d;

	EXPECT_EQ(ntb_parse_next(p, &d), 0);
	/* The end is sticky. */
	EXPECT_EQ(ntb_parse_next(p, &d), 0);
	if (test_failures != before)
		fprintf(stderr, "  (from line %d)\n", line);
}

#define EXPECT_DGRAM(p, ...) expect_dgram(__LINE__, p, &(struct expect){ __VA_ARGS__ })
#define EXPECT_ERROR(p, e)   expect_error(__LINE__, p, e)
#define EXPECT_END(p)	     expect_end(__LINE__, p)

#define V6  NTB_DATAGRAM_IPV6
#define F16 NTB_FORMAT_16
#define F32 NTB_FORMAT_32

TEST(error_names)
{
	static const char *const names[] = {
		[NTB_ERR_TOO_SHORT] = "too_short",
		[NTB_ERR_BAD_SIGNATURE] = "bad_signature",
		[NTB_ERR_BAD_HEADER_LENGTH] = "bad_header_length",
		[NTB_ERR_BAD_BLOCK_LENGTH] = "bad_block_length",
		[NTB_ERR_NDP_OUT_OF_RANGE] = "ndp_out_of_range",
		[NTB_ERR_NDP_MISALIGNED] = "ndp_misaligned",
		[NTB_ERR_NDP_LOOP] = "ndp_loop",
		[NTB_ERR_TOO_MANY_NDPS] = "too_many_ndps",
		[NTB_ERR_BAD_NDP_LENGTH] = "bad_ndp_length",
		[NTB_ERR_UNKNOWN_NDP] = "unknown_ndp",
		[NTB_ERR_NDP_UNTERMINATED] = "ndp_unterminated",
		[NTB_ERR_DATAGRAM_OUT_OF_RANGE] = "datagram_out_of_range",
		[NTB_ERR_NOT_IP] = "not_ip",
	};

	EXPECT_EQ(sizeof(names) / sizeof(names[0]), _NTB_ERR_MAX);
	for (int e = 0; e < _NTB_ERR_MAX; e++)
		EXPECT_STR_EQ(ntb_error_name(e), names[e]);
	EXPECT_PTR_EQ(ntb_error_name(_NTB_ERR_MAX), NULL);
}

TEST(constants)
{
	/* The signatures are the ASCII letters read as a little-endian u32 (cdc.h). */
	const uint8_t nth16[] = { 'N', 'C', 'M', 'H' }, nth32[] = { 'n', 'c', 'm', 'h' };
	const uint8_t ips16[] = { 'I', 'P', 'S', 0 }, ips32[] = { 'i', 'p', 's', 0 };

	EXPECT_EQ(NTB_NTH16_SIGN, 0x484d434e);
	EXPECT_EQ(NTB_NTH32_SIGN, 0x686d636e);
	EXPECT_EQ(NTB_NDP16_IPS_SIGN, 0x00535049);
	EXPECT_EQ(NTB_NDP32_IPS_SIGN, 0x00737069);
	EXPECT_EQ(nth16[0] | nth16[1] << 8 | nth16[2] << 16 | (uint32_t)nth16[3] << 24,
		  NTB_NTH16_SIGN);
	EXPECT_EQ(nth32[0] | nth32[1] << 8 | nth32[2] << 16 | (uint32_t)nth32[3] << 24,
		  NTB_NTH32_SIGN);
	EXPECT_EQ(ips16[0] | ips16[1] << 8 | ips16[2] << 16 | ips16[3] << 24, NTB_NDP16_IPS_SIGN);
	EXPECT_EQ(ips32[0] | ips32[1] << 8 | ips32[2] << 16 | ips32[3] << 24, NTB_NDP32_IPS_SIGN);
}

TEST(empty)
{
	struct ntb_parser p;
	uint8_t buf[1] = { 0 };

	ntb_parse_init(&p, buf, 0, F16);
	EXPECT_END(&p);
	ntb_parse_init(&p, NULL, 5, F32);
	EXPECT_END(&p);
}

TEST(ntb16_single)
{
	struct ntb_parser p;
	uint8_t ntb[] = {
		NTH16(0x1234, 48, 12), NDP16(0, 16, 0), DPE16(28, 20), DPE16(0, 0), IPV4_20,
	};

	EXPECT_EQ(sizeof(ntb), 48);
	ntb_parse_init(&p, ntb, sizeof(ntb), F16);
	EXPECT_DGRAM(&p, 0, 0, 28, 20);
	EXPECT_EQ(p.sequence, 0x1234);
	EXPECT_EQ(p.block_len, 48);
	EXPECT_END(&p);
}

/*
 * Three sessions chained, the NDPs after the datagrams and in descending order (the chain may
 * run anywhere in the block), padding between datagrams, bytes after wBlockLength ignored.
 */
TEST(ntb16_chain)
{
	struct ntb_parser p;
	uint8_t ntb[] = {
		NTH16(7, 176, 152), /* 0 */
		IPV4_20,	    /* 12: session 0 */
		PAD4,		    /* 32: pad */
		IPV6_40,	    /* 36: session 5 */
		IPV4_20,	    /* 76: session 0 */
		IPV4_20,	    /* 96: session 255 */
		PAD4,		    /* 116: pad */
		NDP16(255, 16, 0),  /* 120 */
		DPE16(96, 20),
		DPE16(0, 0),
		NDP16(5, 16, 120), /* 136 */
		DPE16(36, 40),
		DPE16(0, 0),
		NDP16(0, 20, 136), /* 152 */
		DPE16(12, 20),
		DPE16(76, 20),
		DPE16(0, 0),
		PAD4,  /* 172: pad inside the block */
		JUNK4, /* 176: after the block */
	};

	EXPECT_EQ(sizeof(ntb), 180);
	ntb_parse_init(&p, ntb, sizeof(ntb), F16);
	EXPECT_DGRAM(&p, 0, 0, 12, 20);
	EXPECT_DGRAM(&p, 0, 0, 76, 20);
	EXPECT_DGRAM(&p, 5, V6, 36, 40);
	EXPECT_DGRAM(&p, 255, 0, 96, 20);
	EXPECT_END(&p);
	EXPECT_EQ(p.sequence, 7);
	EXPECT_EQ(p.block_len, 176);
}

TEST(ntb32_chain)
{
	struct ntb_parser p;
	uint8_t ntb[] = {
		NTH32(0xffff, 168, 16), /* 0 */
		NDP32(1, 32, 48),	/* 16 */
		DPE32(88, 20),
		DPE32(0, 0),
		NDP32(2, 40, 0), /* 48 */
		DPE32(108, 40),
		DPE32(148, 20),
		DPE32(0, 0),
		IPV4_20, /* 88: session 1 */
		IPV6_40, /* 108: session 2 */
		IPV4_20, /* 148: session 2 */
	};

	EXPECT_EQ(sizeof(ntb), 168);
	ntb_parse_init(&p, ntb, sizeof(ntb), F32);
	EXPECT_DGRAM(&p, 1, 0, 88, 20);
	EXPECT_DGRAM(&p, 2, V6, 108, 40);
	EXPECT_DGRAM(&p, 2, 0, 148, 20);
	EXPECT_END(&p);
	EXPECT_EQ(p.sequence, 0xffff);

	/* The same bytes are no NTB16, and an NTB16 is no NTB32. */
	ntb_parse_init(&p, ntb, sizeof(ntb), F16);
	EXPECT_ERROR(&p, NTB_ERR_BAD_SIGNATURE);
	EXPECT_END(&p);
}

/* One NDP at 12 for session 0 with two datagrams, at 32 and 56; mutated below. */
static const uint8_t base16[] = {
	NTH16(1, 76, 12), /* 0 */
	NDP16(0, 20, 0),  /* 12 */
	DPE16(32, 20),	  /* 20 */
	DPE16(56, 20),	  /* 24 */
	DPE16(0, 0),	  /* 28 */
	IPV4_20,	  /* 32 */
	PAD4,		  /* 52 */
	IPV4_20,	  /* 56 */
};

#define BASE_LEN sizeof(base16)

static void set16(uint8_t *b, size_t off, uint16_t v)
{
	b[off] = (uint8_t)v;
	b[off + 1] = (uint8_t)(v >> 8);
}

static void set32(uint8_t *b, size_t off, uint32_t v)
{
	set16(b, off, (uint16_t)v);
	set16(b, off + 2, (uint16_t)(v >> 16));
}

/* Parse base16 with one 16-bit field changed. */
static void parse_with(struct ntb_parser *p, uint8_t *b, size_t len, size_t off, uint16_t v)
{
	memcpy(b, base16, BASE_LEN);
	set16(b, off, v);
	ntb_parse_init(p, b, len, F16);
}

TEST(nth_errors)
{
	struct ntb_parser p;
	uint8_t b[BASE_LEN];

	EXPECT_EQ(BASE_LEN, 76);
	memcpy(b, base16, BASE_LEN);
	ntb_parse_init(&p, b, BASE_LEN, F16);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);

	/* Shorter than the NTH. */
	ntb_parse_init(&p, b, 11, F16);
	EXPECT_ERROR(&p, NTB_ERR_TOO_SHORT);
	EXPECT_END(&p);
	ntb_parse_init(&p, b, 15, F32);
	EXPECT_ERROR(&p, NTB_ERR_TOO_SHORT);
	EXPECT_END(&p);

	/* "NCMh" */
	parse_with(&p, b, BASE_LEN, 2, 'M' | 'h' << 8);
	EXPECT_ERROR(&p, NTB_ERR_BAD_SIGNATURE);
	EXPECT_END(&p);

	parse_with(&p, b, BASE_LEN, 4, 16);
	EXPECT_ERROR(&p, NTB_ERR_BAD_HEADER_LENGTH);
	EXPECT_END(&p);

	/* Block length past the transfer, or inside the NTH. */
	parse_with(&p, b, BASE_LEN, 8, 77);
	EXPECT_ERROR(&p, NTB_ERR_BAD_BLOCK_LENGTH);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 8, 11);
	EXPECT_ERROR(&p, NTB_ERR_BAD_BLOCK_LENGTH);
	EXPECT_END(&p);
	/* The transfer is cut short: the same. */
	parse_with(&p, b, BASE_LEN - 1, 8, 76);
	EXPECT_ERROR(&p, NTB_ERR_BAD_BLOCK_LENGTH);
	EXPECT_END(&p);

	/* 0: the whole transfer, as Linux reads it. */
	parse_with(&p, b, BASE_LEN, 8, 0);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);
	EXPECT_EQ(p.block_len, BASE_LEN);

	/* A shorter block bounds the datagrams, not the transfer. */
	parse_with(&p, b, BASE_LEN, 8, 75);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_END(&p);
}

TEST(ndp_errors)
{
	struct ntb_parser p;
	uint8_t b[BASE_LEN];

	/* The NTH names no NDP, one inside itself, one whose header crosses the block's end,
	 * one far outside. */
	static const uint16_t out[] = { 0, 8, 72, 76, 200, 0xfffc };
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		parse_with(&p, b, BASE_LEN, 10, out[i]);
		EXPECT_ERROR(&p, NTB_ERR_NDP_OUT_OF_RANGE);
		EXPECT_END(&p);
	}

	parse_with(&p, b, BASE_LEN, 10, 14);
	EXPECT_ERROR(&p, NTB_ERR_NDP_MISALIGNED);
	EXPECT_END(&p);

	/* wLength below header + entry + null entry, or past the block. */
	parse_with(&p, b, BASE_LEN, 16, 12);
	EXPECT_ERROR(&p, NTB_ERR_BAD_NDP_LENGTH);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 16, 65);
	EXPECT_ERROR(&p, NTB_ERR_BAD_NDP_LENGTH);
	EXPECT_END(&p);
	/* Up to the block's end is fine: entries after the null one are not read. */
	parse_with(&p, b, BASE_LEN, 16, 64);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);

	/* No null entry inside wLength: the entries count, the omission is reported. */
	parse_with(&p, b, BASE_LEN, 16, 16);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_ERROR(&p, NTB_ERR_NDP_UNTERMINATED);
	EXPECT_END(&p);
	/* wLength not a multiple of the entry size: the part-entry is not read. */
	parse_with(&p, b, BASE_LEN, 16, 18);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_ERROR(&p, NTB_ERR_NDP_UNTERMINATED);
	EXPECT_END(&p);

	/* NDP pointing at itself: its datagrams once, then the loop ends the chain. */
	parse_with(&p, b, BASE_LEN, 18, 12);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_ERROR(&p, NTB_ERR_NDP_LOOP);
	EXPECT_END(&p);

	/* A next index that is bad ends the chain after the good NDP's datagrams. */
	parse_with(&p, b, BASE_LEN, 18, 66);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_ERROR(&p, NTB_ERR_NDP_MISALIGNED);
	EXPECT_END(&p);

	/* Not an IP session: plain NCM ("NCM0") and a device service stream ("DSS"). */
	parse_with(&p, b, BASE_LEN, 12, 'N' | 'C' << 8);
	set16(b, 14, 'M' | '0' << 8);
	EXPECT_ERROR(&p, NTB_ERR_UNKNOWN_NDP);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 12, 'D' | 'S' << 8);
	set16(b, 14, 'S' | 0 << 8);
	EXPECT_ERROR(&p, NTB_ERR_UNKNOWN_NDP);
	EXPECT_END(&p);
	/* The NDP32 "ips" signature in an NTB16. */
	parse_with(&p, b, BASE_LEN, 12, 'i' | 'p' << 8);
	set16(b, 14, 's' | 0 << 8);
	EXPECT_ERROR(&p, NTB_ERR_UNKNOWN_NDP);
	EXPECT_END(&p);

	/* The session id is the fourth byte. */
	parse_with(&p, b, BASE_LEN, 14, 'S' | 0x81 << 8);
	EXPECT_DGRAM(&p, 0x81, 0, 32, 20);
	EXPECT_DGRAM(&p, 0x81, 0, 56, 20);
	EXPECT_END(&p);
}

/* A chain of two NDPs pointing at each other, and an unknown NDP in the middle of a chain. */
TEST(ndp_chain_errors)
{
	struct ntb_parser p;
	uint8_t loop[] = {
		NTH16(0, 64, 12),				 /* 0 */
		NDP16(1, 16, 28),				 /* 12 */
		DPE16(44, 20),	  DPE16(0, 0), NDP16(2, 16, 12), /* 28 */
		DPE16(44, 20),	  DPE16(0, 0), IPV4_20,		 /* 44 */
	};
	uint8_t unknown[] = {
		NTH16(0, 80, 12), /* 0 */
		'D',
		'S',
		'S',
		3,
		LE16(16),
		LE16(28), /* 12 */
		DPE16(60, 20),
		DPE16(0, 0),
		NDP16(4, 16, 44), /* 28 */
		DPE16(60, 20),
		DPE16(0, 0),
		NDP16(5, 16, 0), /* 44 */
		DPE16(60, 20),
		DPE16(0, 0),
		IPV4_20, /* 60 */
	};

	ntb_parse_init(&p, loop, sizeof(loop), F16);
	EXPECT_DGRAM(&p, 1, 0, 44, 20);
	EXPECT_DGRAM(&p, 2, 0, 44, 20);
	EXPECT_ERROR(&p, NTB_ERR_NDP_LOOP);
	EXPECT_END(&p);

	ntb_parse_init(&p, unknown, sizeof(unknown), F16);
	EXPECT_ERROR(&p, NTB_ERR_UNKNOWN_NDP);
	EXPECT_DGRAM(&p, 4, 0, 60, 20);
	EXPECT_DGRAM(&p, 5, 0, 60, 20);
	EXPECT_END(&p);
}

/* n empty NDPs chained one after the other. */
static size_t make_ndp_chain(uint8_t *b, unsigned n)
{
	size_t block = NTB_NTH16_SIZE + 16 * (size_t)n;
	const uint8_t nth[] = { NTH16(0, 0, 12) };

	memcpy(b, nth, sizeof(nth));
	set16(b, 8, (uint16_t)block);
	for (unsigned i = 0; i < n; i++) {
		size_t off = NTB_NTH16_SIZE + 16 * (size_t)i;
		const uint8_t ndp[] = { NDP16(0, 16, 0), DPE16(0, 0), DPE16(0, 0) };
		memcpy(b + off, ndp, sizeof(ndp));
		set16(b, off + 6, i + 1 < n ? (uint16_t)(off + 16) : 0);
	}
	return block;
}

TEST(too_many_ndps)
{
	struct ntb_parser p;
	uint8_t b[NTB_NTH16_SIZE + 16 * (NTB_MAX_NDPS + 1)];

	size_t len = make_ndp_chain(b, NTB_MAX_NDPS);
	ntb_parse_init(&p, b, len, F16);
	EXPECT_END(&p);

	len = make_ndp_chain(b, NTB_MAX_NDPS + 1);
	ntb_parse_init(&p, b, len, F16);
	EXPECT_ERROR(&p, NTB_ERR_TOO_MANY_NDPS);
	EXPECT_END(&p);
}

TEST(datagram_errors)
{
	struct ntb_parser p;
	uint8_t b[BASE_LEN];

	/* Inside the NTH; the next datagram still comes. */
	parse_with(&p, b, BASE_LEN, 20, 4);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);
	/* Past the block, by its start or its length. */
	parse_with(&p, b, BASE_LEN, 20, 77);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 26, 21);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 26, 0xffff);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_END(&p);

	/* A null entry (zero index or zero length) ends the table, even the first one. */
	parse_with(&p, b, BASE_LEN, 20, 0);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 22, 0);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 26, 0);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_END(&p);

	/* Not IP: version nibble, IPv4 shorter than 20, IPv6 shorter than 40. */
	parse_with(&p, b, BASE_LEN, 32, 0x55);
	EXPECT_ERROR(&p, NTB_ERR_NOT_IP);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 22, 19);
	EXPECT_ERROR(&p, NTB_ERR_NOT_IP);
	EXPECT_DGRAM(&p, 0, 0, 56, 20);
	EXPECT_END(&p);
	parse_with(&p, b, BASE_LEN, 56, 0x65);
	EXPECT_DGRAM(&p, 0, 0, 32, 20);
	EXPECT_ERROR(&p, NTB_ERR_NOT_IP);
	EXPECT_END(&p);
}

TEST(ntb32_errors)
{
	struct ntb_parser p;
	uint8_t ntb[] = {
		NTH32(0, 88, 16), /* 0 */
		NDP32(9, 40, 0),  /* 16 */
		DPE32(56, 20),	  /* 32 */
		DPE32(68, 20),	  /* 40 */
		DPE32(0, 0),	  /* 48 */
		IPV4_20,	  /* 56 */
		PAD4,
		PAD4,
		PAD4,
	};
	uint8_t b[sizeof(ntb)];

	/* The second datagram overlaps the first: not ours to judge. Then 68 is not IP. */
	memcpy(b, ntb, sizeof(b));
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_DGRAM(&p, 9, 0, 56, 20);
	EXPECT_ERROR(&p, NTB_ERR_NOT_IP);
	EXPECT_END(&p);

	/* 32-bit fields that would wrap a 32-bit sum. */
	memcpy(b, ntb, sizeof(b));
	set32(b, 32, 0xfffffff0);
	set32(b, 36, 0x20);
	set32(b, 44, 0xffffffff);
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_ERROR(&p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);
	EXPECT_END(&p);

	memcpy(b, ntb, sizeof(b));
	set32(b, 12, 0xfffffff0);
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_ERROR(&p, NTB_ERR_NDP_OUT_OF_RANGE);
	EXPECT_END(&p);

	memcpy(b, ntb, sizeof(b));
	set32(b, 8, 0x10000058);
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_ERROR(&p, NTB_ERR_BAD_BLOCK_LENGTH);
	EXPECT_END(&p);

	/* Below the NDP32 minimum (16 + 2 * 8). */
	memcpy(b, ntb, sizeof(b));
	set16(b, 20, 31);
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_ERROR(&p, NTB_ERR_BAD_NDP_LENGTH);
	EXPECT_END(&p);

	/* Next index pointing back at the NDP. */
	memcpy(b, ntb, sizeof(b));
	set32(b, 24, 16);
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_DGRAM(&p, 9, 0, 56, 20);
	EXPECT_ERROR(&p, NTB_ERR_NOT_IP);
	EXPECT_ERROR(&p, NTB_ERR_NDP_LOOP);
	EXPECT_END(&p);

	/* The NTB16 header length in an NTB32. */
	memcpy(b, ntb, sizeof(b));
	set16(b, 4, 12);
	ntb_parse_init(&p, b, sizeof(b), F32);
	EXPECT_ERROR(&p, NTB_ERR_BAD_HEADER_LENGTH);
	EXPECT_END(&p);
}

#define PARAMS(formats, in_max, in_div, in_rem, in_align, out_max, out_div, out_rem, out_align, \
	       out_dg)                                                                          \
	LE16(28), LE16(formats), LE32(in_max), LE16(in_div), LE16(in_rem), LE16(in_align),      \
		LE16(0), LE32(out_max), LE16(out_div), LE16(out_rem), LE16(out_align),          \
		LE16(out_dg)

TEST(params)
{
	struct ntb_params p;
	const uint8_t good[] = { PARAMS(3, 32768, 4, 0, 4, 16384, 32, 2, 16, 32) };

	EXPECT_EQ(sizeof(good), NTB_PARAMS_SIZE);
	EXPECT_EQ(ntb_params_parse(good, sizeof(good), &p), 0);
	EXPECT_EQ(p.formats, NTB_FORMATS_16 | NTB_FORMATS_32);
	EXPECT_EQ(p.in_max_size, 32768);
	EXPECT_EQ(p.in_divisor, 4);
	EXPECT_EQ(p.in_remainder, 0);
	EXPECT_EQ(p.in_alignment, 4);
	EXPECT_EQ(p.out_max_size, 16384);
	EXPECT_EQ(p.out_divisor, 32);
	EXPECT_EQ(p.out_remainder, 2);
	EXPECT_EQ(p.out_alignment, 16);
	EXPECT_EQ(p.out_max_datagrams, 32);
	EXPECT_EQ(p.fixed, 0);

	/* Longer answers are fine: the fields are where they are. */
	uint8_t longer[32] = { PARAMS(1, 2048, 1, 0, 1, 2048, 4, 3, 4, 0) };
	set16(longer, 0, 32);
	EXPECT_EQ(ntb_params_parse(longer, sizeof(longer), &p), 0);
	EXPECT_EQ(p.formats, NTB_FORMATS_16);
	EXPECT_EQ(p.out_remainder, 3);
	EXPECT_EQ(p.out_max_datagrams, 0);
	EXPECT_EQ(p.fixed, 0);

	/* Rejected; *ret untouched. */
	struct ntb_params sentinel;
	memset(&p, 0xa5, sizeof(p));
	memcpy(&sentinel, &p, sizeof(p));
	EXPECT_EQ(ntb_params_parse(good, 27, &p), -EBADMSG);
	uint8_t b[NTB_PARAMS_SIZE];
	memcpy(b, good, sizeof(b));
	set16(b, 0, 27);
	EXPECT_EQ(ntb_params_parse(b, sizeof(b), &p), -EBADMSG);
	memcpy(b, good, sizeof(b));
	set16(b, 2, 0xfffc); /* neither NTB16 nor NTB32 */
	EXPECT_EQ(ntb_params_parse(b, sizeof(b), &p), -EBADMSG);
	EXPECT_MEM_EQ(&p, &sentinel, sizeof(p));

	/* Corrected as cdc_ncm corrects them. */
	static const struct {
		uint8_t raw[NTB_PARAMS_SIZE];
		uint32_t in_max, out_max;
		uint16_t div, rem, align;
		uint8_t fixed;
	} fixes[] = {
		{ { PARAMS(1, 1000, 4, 0, 4, 4096, 4, 0, 4, 0) },
		  2048,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_IN_MAX_SIZE },
		{ { PARAMS(1, 4096, 4, 0, 4, 2047, 4, 0, 4, 0) },
		  4096,
		  2048,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_MAX_SIZE },
		{ { PARAMS(1, 4096, 4, 0, 4, 0, 4, 0, 4, 0) },
		  4096,
		  2048,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_MAX_SIZE },
		/* Divisor: not a power of two, below 4, 0, not below the max size. */
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 12, 0, 4, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_DIVISOR },
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 2, 1, 4, 0) },
		  4096,
		  4096,
		  4,
		  1,
		  4,
		  NTB_PARAMS_FIXED_OUT_DIVISOR },
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 0, 0, 4, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_DIVISOR },
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 4096, 0, 4, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_DIVISOR },
		/* Remainder not below the (corrected) divisor. */
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 8, 8, 4, 0) },
		  4096,
		  4096,
		  8,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_REMAINDER },
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 3, 5, 4, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_DIVISOR | NTB_PARAMS_FIXED_OUT_REMAINDER },
		/* Alignment, likewise. */
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 4, 0, 2, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_ALIGNMENT },
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 4, 0, 24, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_ALIGNMENT },
		{ { PARAMS(1, 4096, 4, 0, 4, 4096, 4, 0, 0x8000, 0) },
		  4096,
		  4096,
		  4,
		  0,
		  4,
		  NTB_PARAMS_FIXED_OUT_ALIGNMENT },
	};
	for (size_t i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++) {
		int before = test_failures;
		EXPECT_EQ(ntb_params_parse(fixes[i].raw, NTB_PARAMS_SIZE, &p), 0);
		EXPECT_EQ(p.in_max_size, fixes[i].in_max);
		EXPECT_EQ(p.out_max_size, fixes[i].out_max);
		EXPECT_EQ(p.out_divisor, fixes[i].div);
		EXPECT_EQ(p.out_remainder, fixes[i].rem);
		EXPECT_EQ(p.out_alignment, fixes[i].align);
		EXPECT_EQ(p.fixed, fixes[i].fixed);
		if (test_failures != before)
			fprintf(stderr, "  (params case %zu)\n", i);
	}
}

static struct ntb_params params(uint32_t out_max, uint16_t div, uint16_t rem, uint16_t align,
				uint16_t max_dg)
{
	return (struct ntb_params){
		.formats = NTB_FORMATS_16 | NTB_FORMATS_32,
		.in_max_size = 16384,
		.in_divisor = 4,
		.in_alignment = 4,
		.out_max_size = out_max,
		.out_divisor = div,
		.out_remainder = rem,
		.out_alignment = align,
		.out_max_datagrams = max_dg,
	};
}

static const uint8_t ipv4_20[] = { IPV4_20 };
static const uint8_t ipv6_40[] = { IPV6_40 };

/* The NTB written out by hand from the specification, for the simplest case. */
TEST(build_exact)
{
	struct ntb_params pa = params(2048, 4, 0, 4, 0);
	struct ntb_builder b;
	uint8_t buf[2048], *ptr;
	size_t len;

	memset(buf, 0xee, sizeof(buf));
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0x0102), 0);
	EXPECT_EQ(ntb_build_count(&b), 0);
	EXPECT_EQ(ntb_build_reserve(&b, 3, 20, &ptr), 0);
	EXPECT_PTR_EQ(ptr, buf + 12);
	memcpy(ptr, ipv4_20, 20);
	EXPECT_EQ(ntb_build_count(&b), 1);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);
	const uint8_t want16[] = {
		NTH16(0x0102, 48, 32), IPV4_20, NDP16(3, 16, 0), DPE16(12, 20), DPE16(0, 0),
	};
	EXPECT_EQ(len, sizeof(want16));
	EXPECT_MEM_EQ(buf, want16, sizeof(want16));

	memset(buf, 0xee, sizeof(buf));
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F32, 5), 0);
	EXPECT_EQ(ntb_build_reserve(&b, 0xfe, 40, &ptr), 0);
	EXPECT_PTR_EQ(ptr, buf + 16);
	memcpy(ptr, ipv6_40, 40);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);
	const uint8_t want32[] = {
		NTH32(5, 88, 56), IPV6_40, NDP32(0xfe, 32, 0), DPE32(16, 40), DPE32(0, 0),
	};
	EXPECT_EQ(len, sizeof(want32));
	EXPECT_MEM_EQ(buf, want32, sizeof(want32));
}

/* Datagrams at offset ≡ remainder (mod divisor), the gaps zeroed, NDPs at the alignment. */
TEST(build_alignment)
{
	struct ntb_params pa = params(4096, 16, 2, 16, 0);
	struct ntb_builder b;
	struct ntb_parser p;
	uint8_t buf[4096], *ptr;
	size_t len;
	uint8_t v4_21[21];

	memcpy(v4_21, ipv4_20, 20);
	v4_21[20] = 0x99;
	memset(buf, 0xee, sizeof(buf));
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), 0);
	EXPECT_EQ(ntb_build_reserve(&b, 1, 21, &ptr), 0);
	EXPECT_PTR_EQ(ptr, buf + 18);
	memcpy(ptr, v4_21, 21);
	EXPECT_EQ(ntb_build_reserve(&b, 2, 20, &ptr), 0);
	EXPECT_PTR_EQ(ptr, buf + 50);
	memcpy(ptr, ipv4_20, 20);
	EXPECT_EQ(ntb_build_reserve(&b, 1, 20, &ptr), 0);
	EXPECT_PTR_EQ(ptr, buf + 82);
	memcpy(ptr, ipv4_20, 20);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);

	/* NDP session 1 (20 bytes) at 112 (102 rounded up to 16), session 2 (16 bytes) at 144. */
	const uint8_t nth[] = { NTH16(0, 160, 112) };
	const uint8_t ndp1[] = { NDP16(1, 20, 144), DPE16(18, 21), DPE16(82, 20), DPE16(0, 0) };
	const uint8_t ndp2[] = { NDP16(2, 16, 0), DPE16(50, 20), DPE16(0, 0) };
	const uint8_t zero[16] = { 0 };
	EXPECT_EQ(len, 160);
	EXPECT_MEM_EQ(buf, nth, sizeof(nth));
	EXPECT_MEM_EQ(buf + 112, ndp1, sizeof(ndp1));
	EXPECT_MEM_EQ(buf + 144, ndp2, sizeof(ndp2));
	EXPECT_MEM_EQ(buf + 12, zero, 6);
	EXPECT_MEM_EQ(buf + 39, zero, 11);
	EXPECT_MEM_EQ(buf + 70, zero, 12);
	EXPECT_MEM_EQ(buf + 102, zero, 10);
	EXPECT_MEM_EQ(buf + 132, zero, 12);
	EXPECT_EQ(buf[160], 0xee);

	ntb_parse_init(&p, buf, len, F16);
	EXPECT_DGRAM(&p, 1, 0, 18, 21);
	EXPECT_DGRAM(&p, 1, 0, 82, 20);
	EXPECT_DGRAM(&p, 2, 0, 50, 20);
	EXPECT_END(&p);
}

/* The room left accounts for the NDPs still to be written; filling it exactly fills the NTB. */
TEST(build_room)
{
	struct ntb_params pa = params(2048, 4, 0, 4, 0);
	struct ntb_builder b;
	struct ntb_parser p;
	uint8_t buf[4096], *ptr, *ptr2;
	size_t len;

	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), 0);
	EXPECT_EQ(b.size, 2048);
	/* 2048 - NTH 12 - NDP (8 + 2 * 4) */
	EXPECT_EQ(ntb_build_room(&b, 0, &ptr), 2020);
	EXPECT_PTR_EQ(ptr, buf + 12);
	EXPECT_TRUE(!ntb_build_full(&b));

	/* The in-place pattern: read into the room, then commit what came. */
	memcpy(ptr, ipv4_20, 20);
	EXPECT_EQ(ntb_build_commit(&b, 0, 0), -EINVAL);
	EXPECT_EQ(ntb_build_commit(&b, 0, 2021), -EINVAL);
	EXPECT_EQ(ntb_build_commit(&b, 0, 20), 0);
	/* One more entry for session 0; a new session needs a whole NDP. */
	EXPECT_EQ(ntb_build_room(&b, 0, &ptr), 2048 - 32 - 20);
	EXPECT_PTR_EQ(ptr, buf + 32);
	EXPECT_EQ(ntb_build_room(&b, 1, &ptr2), 2048 - 32 - 32);
	EXPECT_PTR_EQ(ptr2, buf + 32);
	EXPECT_EQ(ntb_build_reserve(&b, 1, 2048 - 32 - 32 + 1, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_reserve(&b, 1, 0, &ptr), -EINVAL);
	EXPECT_EQ(ntb_build_reserve(&b, 1, 2048 - 32 - 32, &ptr), 0);
	memcpy(ptr, ipv4_20, 20);
	EXPECT_TRUE(ntb_build_full(&b));
	EXPECT_EQ(ntb_build_room(&b, 0, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_room(&b, 1, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_room(&b, 2, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_commit(&b, 1, 1), -ENOSPC);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);
	EXPECT_EQ(len, 2048);

	ntb_parse_init(&p, buf, len, F16);
	EXPECT_DGRAM(&p, 0, 0, 12, 20);
	EXPECT_DGRAM(&p, 1, 0, 32, 1984);
	EXPECT_END(&p);

	/* A single datagram filling the whole NTB. */
	EXPECT_EQ(ntb_build_init(&b, buf, 2048, &pa, F32, 0), 0);
	int room = ntb_build_room(&b, 7, &ptr);
	EXPECT_EQ(room, 2048 - 16 - 32);
	EXPECT_EQ(ntb_build_reserve(&b, 7, (size_t)room, &ptr), 0);
	memcpy(ptr, ipv6_40, 40);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);
	EXPECT_EQ(len, 2048);
	ntb_parse_init(&p, buf, len, F32);
	EXPECT_DGRAM(&p, 7, V6, 16, 2048 - 16 - 32);
	EXPECT_END(&p);

	/* The buffer, dwNtbOutMaxSize and the 16-bit block length all bound the NTB. */
	static uint8_t big[70000];
	pa = params(100000, 4, 0, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, big, sizeof(big), &pa, F16, 0), 0);
	EXPECT_EQ(b.size, 65535);
	EXPECT_EQ(ntb_build_room(&b, 0, &ptr), 65532 - 16 - 12);
	EXPECT_EQ(ntb_build_init(&b, big, sizeof(big), &pa, F32, 0), 0);
	EXPECT_EQ(b.size, sizeof(big));
	EXPECT_EQ(ntb_build_init(&b, big, 3000, &pa, F32, 0), 0);
	EXPECT_EQ(b.size, 3000);
}

TEST(build_limits)
{
	struct ntb_params pa = params(8192, 4, 0, 4, 3);
	struct ntb_builder b;
	uint8_t buf[8192], *ptr;
	size_t len;

	/* wNtbOutMaxDatagrams counts datagrams in the NTB, over all its NDPs. */
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), 0);
	for (uint8_t i = 0; i < 3; i++) {
		EXPECT_TRUE(!ntb_build_full(&b));
		EXPECT_EQ(ntb_build_reserve(&b, i, 20, &ptr), 0);
		memcpy(ptr, ipv4_20, 20);
	}
	EXPECT_TRUE(ntb_build_full(&b));
	EXPECT_EQ(ntb_build_reserve(&b, 0, 20, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_room(&b, 0, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);

	/* 0 (before the NCM errata) means no limit from the device: ours applies. */
	pa = params(8192, 4, 0, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), 0);
	for (unsigned i = 0; i < NTB_BUILD_MAX_DATAGRAMS; i++) {
		EXPECT_EQ(ntb_build_reserve(&b, 0, 20, &ptr), 0);
		memcpy(ptr, ipv4_20, 20);
	}
	EXPECT_TRUE(ntb_build_full(&b));
	EXPECT_EQ(ntb_build_reserve(&b, 0, 20, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_finish(&b, &len), 0);
	struct ntb_parser p;
	struct ntb_datagram d;
	unsigned n = 0;
	ntb_parse_init(&p, buf, len, F16);
	while (ntb_parse_next(&p, &d) == 1)
		n++;
	EXPECT_EQ(n, NTB_BUILD_MAX_DATAGRAMS);
	EXPECT_EQ(p.error, _NTB_ERR_MAX);

	/* Sessions per NTB: a new one past the table waits, the known ones go on. */
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F32, 0), 0);
	for (unsigned i = 0; i < NTB_BUILD_MAX_SESSIONS; i++)
		EXPECT_EQ(ntb_build_reserve(&b, (uint8_t)(i * 3), 20, &ptr), 0);
	EXPECT_EQ(ntb_build_reserve(&b, 1, 20, &ptr), -ENOSPC);
	EXPECT_EQ(ntb_build_reserve(&b, 3, 20, &ptr), 0);

	/* Nothing to send. */
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), 0);
	len = 12345;
	EXPECT_EQ(ntb_build_finish(&b, &len), -ENODATA);
	EXPECT_EQ(len, 12345);
}

TEST(build_init_errors)
{
	struct ntb_builder b;
	uint8_t buf[2048];
	struct ntb_params pa = params(2048, 4, 0, 4, 0);

	pa.formats = NTB_FORMATS_16;
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F32, 0), -EINVAL);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, (enum ntb_format)2, 0), -EINVAL);
	EXPECT_EQ(ntb_build_init(&b, NULL, sizeof(buf), &pa, F16, 0), -EINVAL);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), NULL, F16, 0), -EINVAL);
	pa = params(2048, 3, 0, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), -EINVAL);
	pa = params(2048, 4, 4, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), -EINVAL);
	pa = params(2048, 4, 0, 2, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), -EINVAL);
	pa = params(2048, 4, 0, 12, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), -EINVAL);
	/* Room for the NTH and one NDP at least. */
	pa = params(2048, 4, 0, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, 12 + 16 - 1, &pa, F16, 0), -EINVAL);
	EXPECT_EQ(ntb_build_init(&b, buf, 12 + 16, &pa, F16, 0), 0);
	EXPECT_EQ(ntb_build_init(&b, buf, 16 + 32 - 1, &pa, F32, 0), -EINVAL);
	pa = params(16 + 32 - 1, 4, 0, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F32, 0), -EINVAL);
	/* A divisor of 1 or 2 is ours to accept (no correction makes one, but it is valid). */
	pa = params(2048, 1, 0, 4, 0);
	EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, F16, 0), 0);
}

/* Three sessions interleaved, both formats, unusual alignment: what goes in comes out. */
TEST(build_round_trip)
{
	static const struct {
		uint8_t session;
		uint16_t len;
	} in[] = {
		{ 1, 20 }, { 2, 40 }, { 1, 33 }, { 200, 100 }, { 2, 60 }, { 1, 1400 }, { 200, 41 },
	};
	/* Grouped by session, in the order each session first came. */
	static const unsigned order[] = { 0, 2, 5, 1, 4, 3, 6 };
	const struct ntb_params pas[] = {
		params(16384, 4, 0, 4, 0),
		params(16384, 8, 6, 8, 16),
		params(4096, 64, 63, 32, 0),
	};

	for (size_t k = 0; k < sizeof(pas) / sizeof(pas[0]); k++) {
		for (int f = F16; f <= F32; f++) {
			int before = test_failures;
			struct ntb_builder b;
			struct ntb_parser p;
			struct ntb_datagram d;
			uint8_t buf[16384], *ptrs[7];
			size_t len;

			memset(buf, 0xee, sizeof(buf));
			EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pas[k], f, (uint16_t)k), 0);
			for (size_t i = 0; i < 7; i++) {
				EXPECT_EQ(ntb_build_reserve(&b, in[i].session, in[i].len, &ptrs[i]),
					  0);
				EXPECT_EQ((size_t)(ptrs[i] - buf) % pas[k].out_divisor,
					  pas[k].out_remainder);
				/* IPv4 or IPv6 by length parity, the rest a pattern of i. */
				if (in[i].len >= 40 && in[i].len % 2 == 0)
					memcpy(ptrs[i], ipv6_40, 40);
				else
					memcpy(ptrs[i], ipv4_20, 20);
				size_t hdr = ptrs[i][0] >> 4 == 6 ? 40 : 20;
				memset(ptrs[i] + hdr, (int)i, in[i].len - hdr);
			}
			EXPECT_EQ(ntb_build_finish(&b, &len), 0);
			EXPECT_TRUE(len <= pas[k].out_max_size);

			ntb_parse_init(&p, buf, len, f);
			for (size_t i = 0; i < 7; i++) {
				unsigned j = order[i];
				EXPECT_EQ(ntb_parse_next(&p, &d), 1);
				EXPECT_EQ(d.session, in[j].session);
				EXPECT_PTR_EQ(d.data, ptrs[j]);
				EXPECT_EQ(d.len, in[j].len);
				if (d.len > 40)
					EXPECT_EQ(d.data[d.len - 1], j);
			}
			EXPECT_END(&p);
			EXPECT_EQ(p.error, _NTB_ERR_MAX);
			EXPECT_EQ(p.sequence, k);
			EXPECT_EQ(p.block_len, len);
			/* NDP indexes honour the alignment. */
			size_t ndp = f == F32 ? (size_t)(buf[12] | buf[13] << 8)
					      : (size_t)(buf[10] | buf[11] << 8);
			EXPECT_EQ(ndp % pas[k].out_alignment, 0);
			if (test_failures != before)
				fprintf(stderr, "  (params %zu, format %d)\n", k, f);
		}
	}
}

/*
 * The datapath's inline walk (ntb_parse_next_inline) yields exactly what ntb_parse_next()
 * yields, on built NTB16 and NTB32 blocks of several sessions with random bytes changed
 * (table entries mostly) and cut.
 */
static void expect_same_ntb_walk(uint8_t *buf, size_t len, enum ntb_format f)
{
	struct ntb_parser a, c;
	struct ntb_datagram da = { 0 }, dc = { 0 };
	int ra, rc, steps = 0;

	ntb_parse_init(&a, buf, len, f);
	ntb_parse_init(&c, buf, len, f);
	do {
		ra = ntb_parse_next(&a, &da);
		rc = ntb_parse_next_inline(&c, &dc);
		EXPECT_EQ(ra, rc);
		EXPECT_EQ(a.state, c.state);
		EXPECT_EQ(a.dpe, c.dpe);
		EXPECT_EQ(a.ndp, c.ndp);
		if (ra < 0)
			EXPECT_EQ(a.error, c.error);
		if (ra == 1)
			EXPECT_TRUE(da.data == dc.data && da.len == dc.len &&
				    da.session == dc.session && da.flags == dc.flags);
	} while (ra != 0 && ra == rc && ++steps < 2000);
}

TEST(inline_matches)
{
	struct ntb_params pa = params(2048, 4, 0, 4, 0);
	uint8_t buf[2048];
	uint32_t x = 88172645u;

	/* An entry pointing anywhere from the NTH's start to past the block's end. */
	for (int f32 = 0; f32 < 2; f32++) {
		enum ntb_format f = f32 ? NTB_FORMAT_32 : NTB_FORMAT_16;
		struct ntb_builder b;
		size_t len;
		uint8_t *ptr;
		for (unsigned idx = 0; idx < 200; idx++) {
			for (unsigned dl = 0; dl < 64; dl += 7) {
				memset(buf, 0, sizeof(buf));
				EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, f, 1), 0);
				for (int i = 0; i < 2; i++) {
					EXPECT_EQ(ntb_build_reserve(&b, 0, 40, &ptr), 0);
					memcpy(ptr, ipv6_40, 40);
				}
				EXPECT_EQ(ntb_build_finish(&b, &len), 0);
				/* The second entry: the first is read with the NDP, out of line. */
				size_t ndp = f32 ? get_le32(buf + 12) : get_le16(buf + 10);
				uint8_t *dpe = buf + ndp + (f32 ? 16 + 8 : 8 + 4);
				if (f32) {
					set32(dpe, 0, idx);
					set32(dpe, 4, dl);
				} else {
					set16(dpe, 0, (uint16_t)idx);
					set16(dpe, 2, (uint16_t)dl);
				}
				expect_same_ntb_walk(buf, len, f);
			}
		}
	}

	for (int round = 0; round < 20000 && !test_failures; round++) {
		enum ntb_format f = round & 1 ? NTB_FORMAT_32 : NTB_FORMAT_16;
		struct ntb_builder b;
		size_t len = 0;
		uint8_t *ptr;

		memset(buf, 0, sizeof(buf));
		EXPECT_EQ(ntb_build_init(&b, buf, sizeof(buf), &pa, f, (uint16_t)round), 0);
		for (int i = 0; i < 12; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			bool v6 = x & 1;
			size_t dl = (v6 ? 40 : 20) + (x >> 4) % 40;
			if (ntb_build_reserve(&b, (uint8_t)((x >> 12) % 3), dl, &ptr) < 0)
				break;
			memset(ptr, 0, dl);
			memcpy(ptr, v6 ? ipv6_40 : ipv4_20, v6 ? 40 : 20);
		}
		EXPECT_EQ(ntb_build_finish(&b, &len), 0);
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		for (unsigned k = x % 4; k > 0; k--) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			/* Half of them in the last 64 bytes: the NDPs and their tables. */
			size_t at = (x & 1) && len > 64 ? len - 1 - (x >> 1) % 64 : (x >> 1) % len;
			/* Small values too: an index into the NTH, a length below an IP header. */
			buf[at] = (uint8_t)((x >> 23) & 1 ? (x >> 24) % 24 : x >> 24);
		}
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		if (x % 4 == 0)
			len -= (x >> 8) % 48;

		expect_same_ntb_walk(buf, len, f);
		if (test_failures)
			fprintf(stderr, "  round %d\n", round);
	}
}
