/* SPDX-License-Identifier: MIT */
/*
 * NTB codec (MBIM data path): walk downlink NCM Transfer Blocks in place, build uplink NTBs in
 * place, and read the device's GET_NTB_PARAMETERS answer.
 * Pure: no I/O, no allocation, no globals, no logging.
 *
 * Wire format (all little-endian), docs/PROTOCOLS.md §3:
 *   NTH16 (12 bytes): "NCMH", wHeaderLength 12, wSequence, wBlockLength, wNdpIndex
 *   NTH32 (16 bytes): "ncmh", wHeaderLength 16, wSequence, dwBlockLength, dwNdpIndex
 *   NDP16: "IPS"+session, wLength, wNextNdpIndex, {wDatagramIndex, wDatagramLength}... {0, 0}
 *   NDP32: "ips"+session, wLength, wReserved, dwNextNdpIndex, dwReserved,
 *          {dwDatagramIndex, dwDatagramLength}... {0, 0}
 */
#ifndef QMAPD_NTB_H
#define QMAPD_NTB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ntb_format {
	NTB_FORMAT_16,
	NTB_FORMAT_32,
};

#define NTB_NTH16_SIGN 0x484d434eu /* "NCMH" */
#define NTB_NTH32_SIGN 0x686d636eu /* "ncmh" */
#define NTB_NTH16_SIZE 12
#define NTB_NTH32_SIZE 16

/* MBIM IP session NDPs: the signature's fourth byte is the session id. */
#define NTB_NDP16_IPS_SIGN 0x00535049u /* "IPS" */
#define NTB_NDP32_IPS_SIGN 0x00737069u /* "ips" */
#define NTB_NDP_SIGN_MASK  0x00ffffffu
#define NTB_NDP16_HDR_SIZE 8
#define NTB_NDP32_HDR_SIZE 16
#define NTB_DPE16_SIZE	   4
#define NTB_DPE32_SIZE	   8
#define NTB_NDP_ALIGN_MIN  4 /* every NDP index is a multiple of this */

/* Bound on the NDPs followed in one NTB: a chain longer than this is treated as a loop. Linux
 * cdc_ncm gives up after 50; one NDP per session and a handful of sessions is the norm. */
#define NTB_MAX_NDPS 64

/*
 * Why a part of an NTB was rejected. Each has a defined outcome (see ntb_parse_next()):
 * the NTB ones drop the whole block, the NDP ones end the NDP chain (what came before is
 * kept), UNKNOWN_NDP skips one NDP and follows its next index, the datagram ones skip one
 * datagram, NDP_UNTERMINATED loses nothing.
 */
enum ntb_error {
	NTB_ERR_TOO_SHORT,	       /* NTB: fewer bytes than the NTH */
	NTB_ERR_BAD_SIGNATURE,	       /* NTB: NTH signature is not NCMH / ncmh */
	NTB_ERR_BAD_HEADER_LENGTH,     /* NTB: wHeaderLength is not 12 / 16 */
	NTB_ERR_BAD_BLOCK_LENGTH,      /* NTB: block length past the transfer or inside the NTH */
	NTB_ERR_NDP_OUT_OF_RANGE,      /* chain: NDP index 0, inside the NTH or its header past
					  the block */
	NTB_ERR_NDP_MISALIGNED,	       /* chain: NDP index not a multiple of 4 */
	NTB_ERR_NDP_LOOP,	       /* chain: an NDP index seen before in this NTB */
	NTB_ERR_TOO_MANY_NDPS,	       /* chain: more than NTB_MAX_NDPS NDPs */
	NTB_ERR_BAD_NDP_LENGTH,	       /* chain: wLength below the minimum or past the block */
	NTB_ERR_UNKNOWN_NDP,	       /* NDP: not an IP session ("IPS"/"ips"), e.g. DSS */
	NTB_ERR_NDP_UNTERMINATED,      /* none: the table filled wLength without a null entry */
	NTB_ERR_DATAGRAM_OUT_OF_RANGE, /* datagram: inside the NTH or past the block */
	NTB_ERR_NOT_IP, /* datagram: version nibble not 4/6, or shorter than the fixed IP header
			   (20/40 bytes) */
	_NTB_ERR_MAX,
};

/* A stable name for each error (counter keys); NULL when out of range. */
const char *ntb_error_name(enum ntb_error e);

/* Bits of struct ntb_datagram.flags. */
#define NTB_DATAGRAM_IPV6 0x01 /* the datagram is IPv6 (else IPv4) */

struct ntb_datagram {
	uint8_t *data; /* the IP packet, inside the NTB */
	uint32_t len;
	uint8_t session; /* MBIM session id: the NDP signature's fourth byte */
	uint8_t flags;	 /* NTB_DATAGRAM_* */
};

enum ntb_parse_state {
	NTB_PARSE_NTH,	/* the NTH is still to be checked */
	NTB_PARSE_NDP,	/* the next NDP (parser.ndp) is still to be checked */
	NTB_PARSE_DPE,	/* walking the datagram table of the current NDP */
	NTB_PARSE_DONE, /* the end, or a fatal error */
};

/* All fields are the parser's own; callers read error, sequence and block_len only. */
struct ntb_parser {
	uint8_t *buf;
	size_t len;	  /* the transfer; after the NTH is checked, the block length */
	size_t block_len; /* wBlockLength as used (0 until the NTH is checked) */
	enum ntb_format format;
	enum ntb_parse_state state;
	enum ntb_error error; /* set when ntb_parse_next() returns -EBADMSG */
	uint16_t sequence;    /* wSequence, valid once the NTH is checked */
	uint8_t session;      /* of the current NDP */
	size_t ndp;	      /* offset of the NDP to check next (state NDP) */
	size_t next_ndp;      /* the current NDP's next index (state DPE) */
	size_t dpe;	      /* offset of the next table entry (state DPE) */
	size_t dpe_end;	      /* end of the current table */
	unsigned n_ndps;
	uint32_t ndps[NTB_MAX_NDPS]; /* NDP indexes seen, for loop detection */
};

/* The parser takes a writable buffer: the datapath may write into the packets it yields. */
void ntb_parse_init(struct ntb_parser *p, uint8_t *buf, size_t len, enum ntb_format format);

/*
 * Yield the next IP datagram of the NTB without copying.
 * Returns 1 and fills *ret, 0 at the end (sticky), or -EBADMSG with p->error set, leaving
 * *ret untouched; after -EBADMSG call again: the walk goes on where the structure still
 * allows (enum ntb_error says where), else the next call returns 0.
 * An empty transfer (len 0) is an empty NTB: 0 at once.
 */
int ntb_parse_next(struct ntb_parser *p, struct ntb_datagram *ret);

/*
 * The same, with the common case inline: the next table entry of the current NDP is an IP
 * datagram inside the block, or the null entry that ends the last NDP (the block's end);
 * everything else (the NTH, the NDPs, a table's end before the next NDP, errors) is
 * ntb_parse_next()'s, so every result is its result (test-ntb, fuzz-ntb compare them).
 * For the datapath's receive loop, where the call cost ~20 instructions per datagram.
 */
static inline __attribute__((always_inline)) int ntb_parse_next_inline(struct ntb_parser *p,
								       struct ntb_datagram *ret)
{
	bool n32 = p->format == NTB_FORMAT_32;
	size_t esize = n32 ? NTB_DPE32_SIZE : NTB_DPE16_SIZE;

	if (__builtin_expect(p->state == NTB_PARSE_DPE && p->dpe_end - p->dpe >= esize, 1)) {
		const uint8_t *e = p->buf + p->dpe;
		size_t index = n32 ? (size_t)e[0] | (size_t)e[1] << 8 | (size_t)e[2] << 16 |
					       (size_t)e[3] << 24
				   : (size_t)e[0] | (size_t)e[1] << 8;
		size_t len = n32 ? (size_t)e[4] | (size_t)e[5] << 8 | (size_t)e[6] << 16 |
					     (size_t)e[7] << 24
				 : (size_t)e[2] | (size_t)e[3] << 8;
		size_t nth = n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE;
		/* len != 0: with index == p->len, data[0] would be past the block. */
		if (__builtin_expect(len != 0 && index >= nth && index <= p->len &&
					     len <= p->len - index,
				     1)) {
			uint8_t *data = p->buf + index;
			unsigned ip = data[0] >> 4;
			if (__builtin_expect((ip == 4 && len >= 20) || (ip == 6 && len >= 40), 1)) {
				p->dpe += esize;
				*ret = (struct ntb_datagram){
					.data = data,
					.len = (uint32_t)len,
					.session = p->session,
					.flags = ip == 6 ? NTB_DATAGRAM_IPV6 : 0,
				};
				return 1;
			}
		} else if ((index == 0 || len == 0) && p->next_ndp == 0) {
			/* The null entry of the last NDP: the end, as ntb_parse_next() ends. */
			p->dpe += esize;
			p->state = NTB_PARSE_DONE;
			return 0;
		}
	}
	return ntb_parse_next(p, ret);
}

/*
 * GET_NTB_PARAMETERS (NCM 1.0 §6.2.1, cdc.h struct usb_cdc_ncm_ntb_parameters): 28 bytes.
 * The IN values are the device's (the parser follows indexes, whatever they are); the OUT
 * values bind the host, and are corrected as Linux cdc_ncm corrects them.
 */
#define NTB_PARAMS_SIZE		28
#define NTB_FORMATS_16		0x0001
#define NTB_FORMATS_32		0x0002
#define NTB_MIN_IN_SIZE		2048 /* cdc.h USB_CDC_NCM_NTB_MIN_IN_SIZE (NCM 1.0 §6.2.7) */
#define NTB_MIN_OUT_SIZE	2048 /* cdc.h USB_CDC_NCM_NTB_MIN_OUT_SIZE */
#define NTB_DEFAULT_OUT_DIVISOR 4    /* Linux's fallback for a bad divisor or alignment */

/* Bits of struct ntb_params.fixed: what ntb_params_parse() had to correct. */
#define NTB_PARAMS_FIXED_IN_MAX_SIZE   0x01 /* dwNtbInMaxSize < 2048: raised to 2048 */
#define NTB_PARAMS_FIXED_OUT_MAX_SIZE  0x02 /* dwNtbOutMaxSize < 2048 (0: unset): 2048 */
#define NTB_PARAMS_FIXED_OUT_DIVISOR   0x04 /* not a power of two >= 4 below the max: 4 */
#define NTB_PARAMS_FIXED_OUT_REMAINDER 0x08 /* >= the divisor: 0 */
#define NTB_PARAMS_FIXED_OUT_ALIGNMENT 0x10 /* not a power of two >= 4 below the max: 4 */

struct ntb_params {
	uint16_t formats; /* NTB_FORMATS_* */
	uint32_t in_max_size;
	uint16_t in_divisor;
	uint16_t in_remainder;
	uint16_t in_alignment;
	uint32_t out_max_size;
	uint16_t out_divisor;
	uint16_t out_remainder;
	uint16_t out_alignment;
	uint16_t out_max_datagrams; /* 0: no limit given (devices before the NCM errata) */
	uint8_t fixed;		    /* NTB_PARAMS_FIXED_* */
};

/*
 * Parse and correct the 28 bytes. Returns 0, or -EBADMSG (fewer than 28 bytes, wLength below
 * 28, neither NTB format supported); *ret is untouched on failure.
 */
int ntb_params_parse(const uint8_t *buf, size_t len, struct ntb_params *ret);

/*
 * Uplink builder: datagrams go into the caller's buffer from the front, each where the
 * device's divisor and remainder want it, so a read from a TAP can land in place; finishing
 * writes the NTH in front and one NDP per session after the datagrams, each NDP at the
 * device's alignment (what cdc_ncm does for devices that want the NDP at the end).
 */
#define NTB_BUILD_MAX_DATAGRAMS 128 /* per NTB, whatever the device allows */
#define NTB_BUILD_MAX_SESSIONS	16  /* distinct sessions per NTB */

struct ntb_build_dg {
	uint32_t off;
	uint32_t len;
	uint16_t next; /* next datagram of the same session, or NTB_BUILD_MAX_DATAGRAMS */
};

struct ntb_build_session {
	uint8_t id;
	uint16_t count;
	uint16_t head, tail;
};

/* All fields are the builder's own. */
struct ntb_builder {
	uint8_t *buf;
	size_t size; /* usable: min(buffer, dwNtbOutMaxSize, 65535 for NTB16) */
	enum ntb_format format;
	uint16_t sequence;
	uint16_t divisor, remainder, alignment;
	uint16_t max_datagrams;
	size_t data_end; /* end of the last datagram (the NTH's end while empty) */
	size_t ndp_sum;	 /* the NDPs' sizes, each rounded up to the alignment */
	uint16_t count;
	uint8_t last_session; /* of the datagram added last */
	uint8_t n_sessions;
	struct ntb_build_session sessions[NTB_BUILD_MAX_SESSIONS];
	struct ntb_build_dg dgs[NTB_BUILD_MAX_DATAGRAMS];
};

/*
 * Start an NTB in buf (size bytes) for a device with these (corrected) parameters.
 * Returns 0, or -EINVAL: a parameter ntb_params_parse() would not have produced, a format
 * the device does not support, or a buffer too small for the NTH and one NDP.
 */
int ntb_build_init(struct ntb_builder *b, uint8_t *buf, size_t size,
		   const struct ntb_params *params, enum ntb_format format, uint16_t sequence);

/*
 * Where the next datagram of this session goes and how long it may be: returns that length
 * (> 0) and sets *ret_ptr, or -ENOSPC when the NTB takes no more datagrams of this session
 * (full, or the datagram limit reached): finish it, send it and start another.
 */
int ntb_build_room(const struct ntb_builder *b, uint8_t session, uint8_t **ret_ptr);

/* Add the datagram written at ntb_build_room()'s place: 0, -EINVAL (len 0 or more than the
 * room), -ENOSPC (no room at all). */
int ntb_build_commit(struct ntb_builder *b, uint8_t session, size_t len);

/* Both in one, for a datagram whose length is known: 0 and the place to write it, or
 * -ENOSPC (send this NTB first), -EINVAL (len 0). */
int ntb_build_reserve(struct ntb_builder *b, uint8_t session, size_t len, uint8_t **ret_ptr);

/* Datagrams added so far. */
static inline unsigned ntb_build_count(const struct ntb_builder *b)
{
	return b->count;
}

/* True when the NTB should go now: the datagram limit is reached, or not even a minimal IP
 * packet (20 bytes) of the session added last would fit (packets come in runs). */
bool ntb_build_full(const struct ntb_builder *b);

/* Write the NTH and the NDPs: returns 0 and the block length (what to send), or -ENODATA when
 * no datagram was added. The builder must be initialised again before reuse. */
int ntb_build_finish(struct ntb_builder *b, size_t *ret_len);

#endif
