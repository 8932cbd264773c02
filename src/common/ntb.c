/* SPDX-License-Identifier: MIT */
/*
 * NTB codec (docs/PROTOCOLS.md §3): walks downlink NCM Transfer Blocks in place, builds uplink
 * NTBs in place, reads GET_NTB_PARAMETERS.
 *
 * Every index and length on the wire is checked against the block before it is used. The
 * NTH bounds everything: a bad NTH drops the NTB. A bad NDP ends the chain, because its
 * next index cannot be trusted any more; the datagrams already yielded stay good. A bad
 * datagram entry is skipped and the table goes on, since each entry stands alone (Linux
 * cdc_mbim gives up on the rest of the NDP there, and on the rest of the NTB for a datagram
 * that is not IP; we lose less).
 *
 * Loops: an NDP chain may run in any order inside the block, so every NDP index followed is
 * remembered and a repeat ends the chain before any datagram is yielded twice; the chain is
 * bounded by NTB_MAX_NDPS.
 *
 * A datagram counts as IP only if its version nibble is 4 or 6 and it is at least as long as
 * the fixed IP header, as in qmap.c, so consumers may read the fixed header without checking
 * again.
 */
#include <errno.h>
#include <string.h>

#include "byteorder.h"
#include "macro.h"
#include "ntb.h"

#define IPV4_MIN_HEADER 20
#define IPV6_HEADER	40

/* Lengths of the NDP without entries, and minimum wLength: header + one entry + the null
 * entry (cdc_ncm.h USB_CDC_NCM_NDP16_LENGTH_MIN 0x10, _NDP32_ 0x20). */
#define NDP16_LENGTH_MIN (NTB_NDP16_HDR_SIZE + 2 * NTB_DPE16_SIZE)
#define NDP32_LENGTH_MIN (NTB_NDP32_HDR_SIZE + 2 * NTB_DPE32_SIZE)

/* Block sizes the builder works with stay far below INT_MAX, so room fits its int return. */
#define BUILD_MAX_SIZE 0x1000000

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

const char *ntb_error_name(enum ntb_error e)
{
	switch (e) {
	case NTB_ERR_TOO_SHORT:
		return "too_short";
	case NTB_ERR_BAD_SIGNATURE:
		return "bad_signature";
	case NTB_ERR_BAD_HEADER_LENGTH:
		return "bad_header_length";
	case NTB_ERR_BAD_BLOCK_LENGTH:
		return "bad_block_length";
	case NTB_ERR_NDP_OUT_OF_RANGE:
		return "ndp_out_of_range";
	case NTB_ERR_NDP_MISALIGNED:
		return "ndp_misaligned";
	case NTB_ERR_NDP_LOOP:
		return "ndp_loop";
	case NTB_ERR_TOO_MANY_NDPS:
		return "too_many_ndps";
	case NTB_ERR_BAD_NDP_LENGTH:
		return "bad_ndp_length";
	case NTB_ERR_UNKNOWN_NDP:
		return "unknown_ndp";
	case NTB_ERR_NDP_UNTERMINATED:
		return "ndp_unterminated";
	case NTB_ERR_DATAGRAM_OUT_OF_RANGE:
		return "datagram_out_of_range";
	case NTB_ERR_NOT_IP:
		return "not_ip";
	case _NTB_ERR_MAX:
		break;
	}
	/* Out of range: callers use the name as a counter key, so no name rather than a guess. */
	return NULL;
}

static inline size_t nth_size(enum ntb_format format)
{
	return format == NTB_FORMAT_32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE;
}

void ntb_parse_init(struct ntb_parser *p, uint8_t *buf, size_t len, enum ntb_format format)
{
	p->buf = buf;
	p->len = buf ? len : 0;
	p->block_len = 0;
	p->format = format;
	p->state = p->len ? NTB_PARSE_NTH : NTB_PARSE_DONE;
	p->error = _NTB_ERR_MAX;
	p->sequence = 0;
	p->session = 0;
	p->ndp = 0;
	p->next_ndp = 0;
	p->dpe = 0;
	p->dpe_end = 0;
	p->n_ndps = 0;
}

static inline int fail(struct ntb_parser *p, enum ntb_error err)
{
	p->state = NTB_PARSE_DONE;
	p->error = err;
	return -EBADMSG;
}

/* The error leaves the walk where it is (the state was already moved on). */
static inline int report(struct ntb_parser *p, enum ntb_error err)
{
	p->error = err;
	return -EBADMSG;
}

static int parse_nth(struct ntb_parser *p)
{
	bool n32 = p->format == NTB_FORMAT_32;
	size_t hlen = nth_size(p->format);
	const uint8_t *h = p->buf;

	if (_unlikely_(p->len < hlen))
		return fail(p, NTB_ERR_TOO_SHORT);
	if (_unlikely_(get_le32(h) != (n32 ? NTB_NTH32_SIGN : NTB_NTH16_SIGN)))
		return fail(p, NTB_ERR_BAD_SIGNATURE);
	if (_unlikely_(get_le16(h + 4) != hlen))
		return fail(p, NTB_ERR_BAD_HEADER_LENGTH);

	size_t block = n32 ? get_le32(h + 8) : get_le16(h + 8);
	/* Linux only compares the block length with its maximum and bounds everything by the
	 * transfer, so a 0 there passes; take it as "the whole transfer" likewise. */
	if (block == 0)
		block = p->len;
	if (_unlikely_(block > p->len || block < hlen))
		return fail(p, NTB_ERR_BAD_BLOCK_LENGTH);

	p->len = block;
	p->block_len = block;
	p->sequence = get_le16(h + 6);
	p->ndp = n32 ? get_le32(h + 12) : get_le16(h + 10);
	p->state = NTB_PARSE_NDP;
	return 0;
}

/* Move past the current NDP: on to the next in the chain, or the end. */
static void next_ndp(struct ntb_parser *p)
{
	if (p->next_ndp == 0) {
		p->state = NTB_PARSE_DONE;
		return;
	}
	p->ndp = p->next_ndp;
	p->state = NTB_PARSE_NDP;
}

/* Check the NDP at p->ndp and set up its table; returns 0 or an error (state set). */
static int parse_ndp(struct ntb_parser *p)
{
	bool n32 = p->format == NTB_FORMAT_32;
	size_t off = p->ndp;
	size_t hdr = n32 ? NTB_NDP32_HDR_SIZE : NTB_NDP16_HDR_SIZE;

	/* Index 0 in the NTH means no NDP at all, which the specification does not allow. */
	if (_unlikely_(off < nth_size(p->format) || off > p->len || p->len - off < hdr))
		return fail(p, NTB_ERR_NDP_OUT_OF_RANGE);
	/* Every valid NDP alignment is a power of two of at least 4, so this holds for all. */
	if (_unlikely_(off % NTB_NDP_ALIGN_MIN))
		return fail(p, NTB_ERR_NDP_MISALIGNED);
	for (unsigned i = 0; i < p->n_ndps; i++)
		if (_unlikely_(p->ndps[i] == off))
			return fail(p, NTB_ERR_NDP_LOOP);
	if (_unlikely_(p->n_ndps >= NTB_MAX_NDPS))
		return fail(p, NTB_ERR_TOO_MANY_NDPS);
	/* off was read from a 16- or 32-bit field, so it fits. */
	p->ndps[p->n_ndps++] = (uint32_t)off;

	const uint8_t *n = p->buf + off;
	size_t len = get_le16(n + 4);
	if (_unlikely_(len < (n32 ? NDP32_LENGTH_MIN : NDP16_LENGTH_MIN) || len > p->len - off))
		return fail(p, NTB_ERR_BAD_NDP_LENGTH);

	uint32_t sig = get_le32(n);
	p->next_ndp = n32 ? get_le32(n + 8) : get_le16(n + 6);
	p->session = (uint8_t)(sig >> 24);
	p->dpe = off + hdr;
	p->dpe_end = off + len;
	p->state = NTB_PARSE_DPE;

	if (_unlikely_((sig & NTB_NDP_SIGN_MASK) !=
		       (n32 ? NTB_NDP32_IPS_SIGN : NTB_NDP16_IPS_SIGN))) {
		/* Not ours to read (a device service stream, or plain NCM), but its next index is
		 * as good as any: skip the table and go on with the chain. */
		next_ndp(p);
		return report(p, NTB_ERR_UNKNOWN_NDP);
	}
	return 0;
}

int ntb_parse_next(struct ntb_parser *p, struct ntb_datagram *ret)
{
	bool n32 = p->format == NTB_FORMAT_32;
	size_t esize = n32 ? NTB_DPE32_SIZE : NTB_DPE16_SIZE;
	int r;

	for (;;) {
		switch (p->state) {
		case NTB_PARSE_DONE:
			return 0;
		case NTB_PARSE_NTH:
			r = parse_nth(p);
			if (r < 0)
				return r;
			continue;
		case NTB_PARSE_NDP:
			r = parse_ndp(p);
			if (r < 0)
				return r;
			continue;
		case NTB_PARSE_DPE:
			break;
		}

		if (_unlikely_(p->dpe_end - p->dpe < esize)) {
			/* The table ran out without its null entry. The entries were all read, so
			 * only the specification was broken; the chain goes on. */
			next_ndp(p);
			return report(p, NTB_ERR_NDP_UNTERMINATED);
		}

		const uint8_t *e = p->buf + p->dpe;
		size_t index = n32 ? get_le32(e) : get_le16(e);
		size_t len = n32 ? get_le32(e + 4) : get_le16(e + 2);
		p->dpe += esize;

		/* The first entry with a zero index or length ends the table, as in Linux; what
		 * follows it is to be ignored (NCM 1.0 §3.7, as cdc_ncm.c quotes it). */
		if (index == 0 || len == 0) {
			next_ndp(p);
			continue;
		}
		if (_unlikely_(index < nth_size(p->format) || index > p->len ||
			       len > p->len - index))
			return report(p, NTB_ERR_DATAGRAM_OUT_OF_RANGE);

		uint8_t *data = p->buf + index;
		uint8_t flags = 0;
		switch (data[0] >> 4) {
		case 4:
			if (_unlikely_(len < IPV4_MIN_HEADER))
				return report(p, NTB_ERR_NOT_IP);
			break;
		case 6:
			if (_unlikely_(len < IPV6_HEADER))
				return report(p, NTB_ERR_NOT_IP);
			flags |= NTB_DATAGRAM_IPV6;
			break;
		default:
			return report(p, NTB_ERR_NOT_IP);
		}

		*ret = (struct ntb_datagram){
			.data = data,
			.len = (uint32_t)len,
			.session = p->session,
			.flags = flags,
		};
		return 1;
	}
}

static inline bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* cdc_ncm_fix_modulus(): a power of two, at least 4, below the maximum OUT size. */
static inline bool good_modulus(uint32_t v, uint32_t max)
{
	return v >= NTB_NDP_ALIGN_MIN && is_pow2(v) && v < max;
}

int ntb_params_parse(const uint8_t *buf, size_t len, struct ntb_params *ret)
{
	if (len < NTB_PARAMS_SIZE || get_le16(buf) < NTB_PARAMS_SIZE)
		return -EBADMSG;

	struct ntb_params p = {
		.formats = get_le16(buf + 2),
		.in_max_size = get_le32(buf + 4),
		.in_divisor = get_le16(buf + 8),
		.in_remainder = get_le16(buf + 10),
		.in_alignment = get_le16(buf + 12),
		/* 14: wPadding1 */
		.out_max_size = get_le32(buf + 16),
		.out_divisor = get_le16(buf + 20),
		.out_remainder = get_le16(buf + 22),
		.out_alignment = get_le16(buf + 24),
		.out_max_datagrams = get_le16(buf + 26),
	};
	if (!(p.formats & (NTB_FORMATS_16 | NTB_FORMATS_32)))
		return -EBADMSG;

	/* Sizes below the specification's minimum are raised to it, as Linux does
	 * (cdc_ncm_check_rx_max, cdc_ncm_check_tx_max): for IN that only makes our buffers
	 * larger; for OUT every device must take 2048 bytes. An OUT size of 0 means "not set",
	 * which Linux answers with its own default; the minimum is the safe choice. */
	if (p.in_max_size < NTB_MIN_IN_SIZE) {
		p.in_max_size = NTB_MIN_IN_SIZE;
		p.fixed |= NTB_PARAMS_FIXED_IN_MAX_SIZE;
	}
	if (p.out_max_size < NTB_MIN_OUT_SIZE) {
		p.out_max_size = NTB_MIN_OUT_SIZE;
		p.fixed |= NTB_PARAMS_FIXED_OUT_MAX_SIZE;
	}
	if (!good_modulus(p.out_alignment, p.out_max_size)) {
		p.out_alignment = NTB_DEFAULT_OUT_DIVISOR;
		p.fixed |= NTB_PARAMS_FIXED_OUT_ALIGNMENT;
	}
	if (!good_modulus(p.out_divisor, p.out_max_size)) {
		p.out_divisor = NTB_DEFAULT_OUT_DIVISOR;
		p.fixed |= NTB_PARAMS_FIXED_OUT_DIVISOR;
	}
	if (p.out_remainder >= p.out_divisor) {
		p.out_remainder = 0;
		p.fixed |= NTB_PARAMS_FIXED_OUT_REMAINDER;
	}

	*ret = p;
	return 0;
}

static inline size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static inline size_t ndp_size(enum ntb_format format, size_t n)
{
	/* n entries and the null one */
	if (format == NTB_FORMAT_32)
		return NTB_NDP32_HDR_SIZE + (n + 1) * NTB_DPE32_SIZE;
	return NTB_NDP16_HDR_SIZE + (n + 1) * NTB_DPE16_SIZE;
}

int ntb_build_init(struct ntb_builder *b, uint8_t *buf, size_t size,
		   const struct ntb_params *params, enum ntb_format format, uint16_t sequence)
{
	if (!buf || !params)
		return -EINVAL;
	if (format != NTB_FORMAT_16 && format != NTB_FORMAT_32)
		return -EINVAL;
	if (!(params->formats & (format == NTB_FORMAT_32 ? NTB_FORMATS_32 : NTB_FORMATS_16)))
		return -EINVAL;
	if (!is_pow2(params->out_divisor) || params->out_remainder >= params->out_divisor)
		return -EINVAL;
	if (params->out_alignment < NTB_NDP_ALIGN_MIN || !is_pow2(params->out_alignment))
		return -EINVAL;

	size_t max = size;
	if (params->out_max_size < max)
		max = params->out_max_size;
	if (format == NTB_FORMAT_16 && max > UINT16_MAX)
		max = UINT16_MAX;
	if (max > BUILD_MAX_SIZE)
		max = BUILD_MAX_SIZE;
	if (max < nth_size(format) + ndp_size(format, 1))
		return -EINVAL;

	uint16_t max_dg = params->out_max_datagrams;
	if (max_dg == 0 || max_dg > NTB_BUILD_MAX_DATAGRAMS)
		max_dg = NTB_BUILD_MAX_DATAGRAMS;

	b->buf = buf;
	b->size = max;
	b->format = format;
	b->sequence = sequence;
	b->divisor = params->out_divisor;
	b->remainder = params->out_remainder;
	b->alignment = params->out_alignment;
	b->max_datagrams = max_dg;
	b->data_end = nth_size(format);
	b->ndp_sum = 0;
	b->count = 0;
	b->n_sessions = 0;
	b->last_session = 0;
	return 0;
}

/* The smallest offset >= off where a datagram may start: off ≡ remainder (mod divisor). */
static inline size_t dg_place(const struct ntb_builder *b, size_t off)
{
	return off + ((b->remainder - off) & (size_t)(b->divisor - 1));
}

static int find_session(const struct ntb_builder *b, uint8_t session)
{
	/* Last one first: packets of one session come in runs. */
	for (int i = b->n_sessions - 1; i >= 0; i--)
		if (b->sessions[i].id == session)
			return i;
	return -1;
}

/*
 * Room for one more datagram of this session at *ret_place, given that the NDPs follow the
 * datagrams: returns the length, or -ENOSPC.
 */
static int room(const struct ntb_builder *b, uint8_t session, size_t *ret_place, int *ret_slot)
{
	size_t a = b->alignment;

	if (b->count >= b->max_datagrams)
		return -ENOSPC;

	int slot = find_session(b, session);
	size_t sum = b->ndp_sum, last;
	if (slot < 0) {
		if (b->n_sessions >= NTB_BUILD_MAX_SESSIONS)
			return -ENOSPC;
		/* A new session: its NDP goes last. */
		last = ndp_size(b->format, 1);
		sum += align_up(last, a);
	} else {
		size_t old = ndp_size(b->format, b->sessions[slot].count);
		sum += align_up(old + (ndp_size(b->format, 1) - ndp_size(b->format, 0)), a) -
		       align_up(old, a);
		size_t lslot = b->n_sessions - 1;
		last = ndp_size(b->format, b->sessions[lslot].count + ((size_t)slot == lslot));
	}
	/* The last NDP needs no padding after it. */
	size_t ndps = sum - (align_up(last, a) - last);

	/* The NDPs start at the first aligned offset after the datagram: the datagram may end
	 * anywhere up to the last aligned offset that still leaves them room. */
	if (ndps > b->size)
		return -ENOSPC;
	size_t limit = (b->size - ndps) & ~(a - 1);
	size_t place = dg_place(b, b->data_end);
	if (place >= limit)
		return -ENOSPC;

	*ret_place = place;
	*ret_slot = slot;
	return (int)(limit - place);
}

int ntb_build_room(const struct ntb_builder *b, uint8_t session, uint8_t **ret_ptr)
{
	size_t place;
	int slot;
	int r = room(b, session, &place, &slot);
	if (r < 0)
		return r;
	*ret_ptr = b->buf + place;
	return r;
}

/* Add a datagram of len bytes at place, which room() gave for this session's slot. */
static void add(struct ntb_builder *b, uint8_t session, size_t len, size_t place, int slot)
{
	size_t a = b->alignment;
	struct ntb_build_session *s;

	if (slot < 0) {
		s = &b->sessions[b->n_sessions++];
		*s = (struct ntb_build_session){ .id = session, .head = b->count };
		b->ndp_sum += align_up(ndp_size(b->format, 1), a);
	} else {
		s = &b->sessions[slot];
		b->ndp_sum += align_up(ndp_size(b->format, s->count + 1), a) -
			      align_up(ndp_size(b->format, s->count), a);
		b->dgs[s->tail].next = b->count;
	}

	/* The gap in front is sent too: no stale bytes of an earlier packet go to the device. */
	memset(b->buf + b->data_end, 0, place - b->data_end);
	b->dgs[b->count] = (struct ntb_build_dg){
		.off = (uint32_t)place,
		.len = (uint32_t)len,
		.next = NTB_BUILD_MAX_DATAGRAMS,
	};
	s->tail = b->count;
	s->count++;
	b->last_session = session;
	b->count++;
	b->data_end = place + len;
}

int ntb_build_commit(struct ntb_builder *b, uint8_t session, size_t len)
{
	size_t place;
	int slot;
	int r = room(b, session, &place, &slot);
	if (r < 0)
		return r;
	if (len == 0 || len > (size_t)r)
		return -EINVAL;
	add(b, session, len, place, slot);
	return 0;
}

int ntb_build_reserve(struct ntb_builder *b, uint8_t session, size_t len, uint8_t **ret_ptr)
{
	size_t place;
	int slot;
	int r = room(b, session, &place, &slot);
	if (r < 0)
		return r;
	if (len == 0)
		return -EINVAL;
	if (len > (size_t)r)
		return -ENOSPC;
	add(b, session, len, place, slot);
	*ret_ptr = b->buf + place;
	return 0;
}

bool ntb_build_full(const struct ntb_builder *b)
{
	size_t place;
	int slot;

	if (b->count >= b->max_datagrams)
		return true;
	/* While empty, last_session is 0: any session needs the same room then. */
	return room(b, b->last_session, &place, &slot) < IPV4_MIN_HEADER;
}

int ntb_build_finish(struct ntb_builder *b, size_t *ret_len)
{
	bool n32 = b->format == NTB_FORMAT_32;
	size_t a = b->alignment;

	if (b->count == 0)
		return -ENODATA;

	size_t off = align_up(b->data_end, a);
	size_t first = off;
	memset(b->buf + b->data_end, 0, off - b->data_end);

	for (unsigned i = 0; i < b->n_sessions; i++) {
		const struct ntb_build_session *s = &b->sessions[i];
		size_t len = ndp_size(b->format, s->count);
		bool last = i + 1 == b->n_sessions;
		size_t next = last ? 0 : align_up(off + len, a);
		uint8_t *n = b->buf + off;
		uint8_t *e;

		if (n32) {
			put_le32(n, NTB_NDP32_IPS_SIGN | (uint32_t)s->id << 24);
			put_le16(n + 4, (uint16_t)len);
			put_le16(n + 6, 0);
			put_le32(n + 8, (uint32_t)next);
			put_le32(n + 12, 0);
			e = n + NTB_NDP32_HDR_SIZE;
			for (unsigned d = s->head; d != NTB_BUILD_MAX_DATAGRAMS;
			     d = b->dgs[d].next) {
				put_le32(e, b->dgs[d].off);
				put_le32(e + 4, b->dgs[d].len);
				e += NTB_DPE32_SIZE;
			}
			memset(e, 0, NTB_DPE32_SIZE);
		} else {
			put_le32(n, NTB_NDP16_IPS_SIGN | (uint32_t)s->id << 24);
			put_le16(n + 4, (uint16_t)len);
			put_le16(n + 6, (uint16_t)next);
			e = n + NTB_NDP16_HDR_SIZE;
			for (unsigned d = s->head; d != NTB_BUILD_MAX_DATAGRAMS;
			     d = b->dgs[d].next) {
				put_le16(e, (uint16_t)b->dgs[d].off);
				put_le16(e + 2, (uint16_t)b->dgs[d].len);
				e += NTB_DPE16_SIZE;
			}
			memset(e, 0, NTB_DPE16_SIZE);
		}
		if (!last)
			memset(b->buf + off + len, 0, next - off - len);
		off = last ? off + len : next;
	}

	/* room() kept off <= size, which is below 2^16 for NTB16. */
	uint8_t *h = b->buf;
	if (n32) {
		put_le32(h, NTB_NTH32_SIGN);
		put_le16(h + 4, NTB_NTH32_SIZE);
		put_le16(h + 6, b->sequence);
		put_le32(h + 8, (uint32_t)off);
		put_le32(h + 12, (uint32_t)first);
	} else {
		put_le32(h, NTB_NTH16_SIGN);
		put_le16(h + 4, NTB_NTH16_SIZE);
		put_le16(h + 6, b->sequence);
		put_le16(h + 8, (uint16_t)off);
		put_le16(h + 10, (uint16_t)first);
	}
	*ret_len = off;
	return 0;
}
