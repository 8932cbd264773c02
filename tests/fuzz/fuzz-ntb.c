/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the NTB codec. The first byte picks the mode and the format:
 *  - parse: the rest is one NTB. Every yielded datagram must lie inside the block, after the
 *    NTH, and start with a whole IP header, and the walk must end in a bounded number of
 *    steps, or the parser has trusted an index it should not have. Two more bits of the
 *    first byte repair the NTH's constants and the signatures along the NDP chain before
 *    the walk: random bytes seldom get all of them right at once, and without them the
 *    fuzzer spends its time in front of the NDPs and datagrams.
 *  - build: the rest is a GET_NTB_PARAMETERS answer, a buffer size and a list of (session,
 *    length) datagrams. Whatever the parameters, every NTB built must stay inside the buffer
 *    and dwNtbOutMaxSize, place datagrams and NDPs where the device asked, and read back
 *    through the parser as exactly what went in.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ntb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

/*
 * Buffers end where this array ends, so ASan's redzone after it catches an access one byte
 * past them, as an exact-size heap copy would, without an allocation per run (which cost a
 * tenth of the run time in page faults). 64 KiB + 1 holds every buffer size built below.
 */
static uint8_t arena[65536 + 1];

static uint8_t *arena_tail(size_t size)
{
	return size <= sizeof(arena) ? arena + sizeof(arena) - size : NULL;
}

/* Put the right signature and header length into the NTH, leaving the lengths and indexes
 * as they came. */
static void repair_nth(uint8_t *buf, size_t size, enum ntb_format format)
{
	bool n32 = format == NTB_FORMAT_32;

	if (size < (n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE))
		return;
	memcpy(buf, n32 ? "ncmh" : "NCMH", 4);
	buf[4] = n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE;
	buf[5] = 0;
}

/* Give the first NDPs of the chain an IP session signature, keeping their session byte. */
static void repair_ndps(uint8_t *buf, size_t size, enum ntb_format format)
{
	bool n32 = format == NTB_FORMAT_32;
	size_t hdr = n32 ? NTB_NDP32_HDR_SIZE : NTB_NDP16_HDR_SIZE;

	if (size < (n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE))
		return;
	size_t ndp = n32 ? le32(buf + 12) : le16(buf + 10);
	for (int i = 0; i < 8 && ndp && size >= hdr && ndp <= size - hdr; i++) {
		memcpy(buf + ndp, n32 ? "ips" : "IPS", 3);
		ndp = n32 ? le32(buf + ndp + 8) : le16(buf + ndp + 6);
	}
}

static void fuzz_parse(const uint8_t *data, size_t size, enum ntb_format format, uint8_t mode)
{
	size_t nth = format == NTB_FORMAT_32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE;
	/* The parser takes a writable buffer and the input is const. */
	uint8_t *heap = NULL, *buf = arena_tail(size);
	if (!buf) {
		buf = heap = malloc(size);
		if (!buf)
			return;
	}
	memcpy(buf, data, size);
	if (mode & 4)
		repair_nth(buf, size, format);
	if (mode & 8)
		repair_ndps(buf, size, format);

	struct ntb_parser p;
	struct ntb_datagram d;
	size_t steps = 0, dgrams = 0;
	int r;

	ntb_parse_init(&p, buf, size, format);
	/* Each step reads one NTH, one NDP or one table entry (4 bytes at least). */
	size_t max_steps = 2 + (size_t)(NTB_MAX_NDPS + 1) * (size / 4 + 2);
	while ((r = ntb_parse_next(&p, &d)) != 0) {
		check(++steps <= max_steps);
		if (r < 0) {
			check(r == -EBADMSG);
			check(p.error < _NTB_ERR_MAX);
			check(ntb_error_name(p.error) != NULL);
			continue;
		}
		check(r == 1);
		dgrams++;
		check(p.block_len >= nth && p.block_len <= size);
		check(d.data >= buf + nth);
		check(d.len <= p.block_len && d.data <= buf + p.block_len - d.len);
		uint8_t nibble = d.data[0] >> 4;
		check(nibble == 4 || nibble == 6);
		check(!!(d.flags & NTB_DATAGRAM_IPV6) == (nibble == 6));
		check(d.len >= (nibble == 6 ? 40u : 20u));
	}
	check(ntb_parse_next(&p, &d) == 0);
	if (dgrams)
		check(p.block_len >= nth);

	/* The datapath's inline walk: the same results, step by step. */
	struct ntb_parser pa, pb;
	struct ntb_datagram da = { 0 }, db = { 0 };
	int ra, rb;
	ntb_parse_init(&pa, buf, size, format);
	ntb_parse_init(&pb, buf, size, format);
	steps = 0;
	do {
		ra = ntb_parse_next(&pa, &da);
		rb = ntb_parse_next_inline(&pb, &db);
		check(ra == rb && pa.state == pb.state && pa.dpe == pb.dpe && pa.ndp == pb.ndp);
		check(ra >= 0 || pa.error == pb.error);
		check(ra != 1 || (da.data == db.data && da.len == db.len &&
				  da.session == db.session && da.flags == db.flags));
		check(++steps <= max_steps + 1);
	} while (ra != 0);
	free(heap);
}

struct sent {
	uint8_t session;
	uint32_t off;
	uint32_t len;
	uint8_t mark;
};

/* An IPv4 version nibble first and a mark last: enough to find it again, and cheap. */
static void fill(uint8_t *ptr, size_t len, uint8_t mark)
{
	ptr[0] = 0x45;
	ptr[len - 1] = mark;
}

/* Check a finished NTB against what was put in, then parse it back. */
static void verify(uint8_t *buf, size_t len, const struct ntb_builder *b,
		   const struct ntb_params *pa, enum ntb_format format, const struct sent *sent,
		   unsigned n)
{
	bool n32 = format == NTB_FORMAT_32;

	check(len <= b->size && len <= pa->out_max_size);
	check(!n32 ? len <= UINT16_MAX : 1);
	check(n <= NTB_BUILD_MAX_DATAGRAMS);
	if (pa->out_max_datagrams)
		check(n <= pa->out_max_datagrams);

	/* The NDP chain: every index at the alignment. */
	size_t ndp = n32 ? le32(buf + 12) : le16(buf + 10);
	unsigned ndps = 0;
	while (ndp) {
		check(ndp % pa->out_alignment == 0);
		check(ndp + (n32 ? NTB_NDP32_HDR_SIZE : NTB_NDP16_HDR_SIZE) <= len);
		ndp = n32 ? le32(buf + ndp + 8) : le16(buf + ndp + 6);
		check(++ndps <= NTB_BUILD_MAX_SESSIONS);
	}

	/* The parser sees the datagrams grouped by session, sessions in order of first use:
	 * chain each datagram to the next of its session, in one pass. */
	uint16_t next[NTB_BUILD_MAX_DATAGRAMS], last[256], first[NTB_BUILD_MAX_SESSIONS];
	unsigned n_first = 0;
	memset(last, 0xff, sizeof(last));
	for (unsigned i = 0; i < n; i++) {
		next[i] = UINT16_MAX;
		if (last[sent[i].session] == UINT16_MAX) {
			check(n_first < NTB_BUILD_MAX_SESSIONS);
			first[n_first++] = (uint16_t)i;
		} else {
			next[last[sent[i].session]] = (uint16_t)i;
		}
		last[sent[i].session] = (uint16_t)i;
	}
	check(n_first == ndps);

	struct ntb_parser p;
	struct ntb_datagram d;
	ntb_parse_init(&p, buf, len, format);
	for (unsigned s = 0; s < n_first; s++) {
		for (unsigned j = first[s]; j != UINT16_MAX; j = next[j]) {
			check(ntb_parse_next(&p, &d) == 1);
			check(d.session == sent[j].session);
			check(d.data == buf + sent[j].off);
			check(d.len == sent[j].len);
			check(d.data[d.len - 1] == sent[j].mark);
			check(sent[j].off % pa->out_divisor == pa->out_remainder);
		}
	}
	check(ntb_parse_next(&p, &d) == 0);
	check(p.error == _NTB_ERR_MAX);
	check(p.block_len == len);
}

static void fuzz_build(const uint8_t *data, size_t size, enum ntb_format format)
{
	struct ntb_params pa;

	if (size < NTB_PARAMS_SIZE + 2)
		return;
	if (ntb_params_parse(data, NTB_PARAMS_SIZE, &pa) < 0)
		return;
	/* What the parser hands on is what the builder accepts. */
	check(pa.out_divisor >= 4 && !(pa.out_divisor & (pa.out_divisor - 1)));
	check(pa.out_alignment >= 4 && !(pa.out_alignment & (pa.out_alignment - 1)));
	check(pa.out_remainder < pa.out_divisor);
	check(pa.in_max_size >= NTB_MIN_IN_SIZE && pa.out_max_size >= NTB_MIN_OUT_SIZE);

	size_t bufsize = (size_t)le16(data + NTB_PARAMS_SIZE) + 1;
	data += NTB_PARAMS_SIZE + 2;
	size -= NTB_PARAMS_SIZE + 2;

	uint8_t *buf = arena_tail(bufsize);
	struct ntb_builder b;
	uint16_t seq = 0;
	if (ntb_build_init(&b, buf, bufsize, &pa, format, seq) < 0)
		return;

	struct sent sent[NTB_BUILD_MAX_DATAGRAMS];
	unsigned n = 0;
	/* Enough operations to fill an NTB to NTB_BUILD_MAX_DATAGRAMS and start the next; more
	 * would only slow the run down. */
	if (size > 3 * 256)
		size = 3 * 256;
	for (; size >= 3; data += 3, size -= 3) {
		uint8_t session = data[0] & 0x1f; /* more than NTB_BUILD_MAX_SESSIONS */
		bool in_place = data[0] & 0x80;
		size_t want = le16(data + 1);
		uint8_t *ptr;
		int room = ntb_build_room(&b, session, &ptr);

		if (room > 0) {
			check(ptr >= buf && ptr < buf + b.size);
			check((size_t)room <= b.size - (size_t)(ptr - buf));
			if (want > (size_t)room)
				want = (size_t)room;
		}
		if (want < 20)
			want = 20;
		int r;
		if (in_place) {
			r = room < 0 ? room : (want <= (size_t)room ? 0 : -ENOSPC);
			if (r == 0) {
				fill(ptr, want, (uint8_t)n);
				check(ntb_build_commit(&b, session, want) == 0);
			} else {
				check(ntb_build_commit(&b, session, want) < 0);
			}
		} else {
			uint8_t *p2 = NULL;
			r = ntb_build_reserve(&b, session, want, &p2);
			check(r == 0 || r == -ENOSPC);
			check((r == 0) == (room >= 0 && want <= (size_t)room));
			if (r == 0) {
				check(p2 == ptr);
				fill(ptr, want, (uint8_t)n);
			}
		}
		if (r == 0) {
			sent[n] = (struct sent){ session, (uint32_t)(ptr - buf), (uint32_t)want,
						 (uint8_t)n };
			n++;
			check(ntb_build_count(&b) == n);
			/* Full means: the datagram limit, or no room for a minimal packet. */
			uint8_t *p3;
			int more = ntb_build_room(&b, session, &p3);
			if (ntb_build_full(&b))
				check(n >= b.max_datagrams || more < 20);
			else
				check(more >= 20);
			continue;
		}

		/* Full for this datagram: send what there is and start over. An empty NTB that
		 * takes nothing means the datagram can never fit: drop it. */
		size_t len = 0;
		if (n == 0) {
			check(ntb_build_finish(&b, &len) == -ENODATA);
			continue;
		}
		check(ntb_build_finish(&b, &len) == 0);
		verify(buf, len, &b, &pa, format, sent, n);
		n = 0;
		check(ntb_build_init(&b, buf, bufsize, &pa, format, ++seq) == 0);
	}
	size_t len = 0;
	if (n) {
		check(ntb_build_finish(&b, &len) == 0);
		verify(buf, len, &b, &pa, format, sent, n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;

	enum ntb_format format = data[0] & 1 ? NTB_FORMAT_32 : NTB_FORMAT_16;
	if (data[0] & 2)
		fuzz_build(data + 1, size - 1, format);
	else
		fuzz_parse(data + 1, size - 1, format, data[0]);
	return 0;
}
