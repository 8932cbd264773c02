/* SPDX-License-Identifier: MIT */
/*
 * QMAP codec: parse downlink aggregates in place and build uplink frames in place.
 * Pure: no I/O, no allocation, no globals, no logging above debug.
 *
 * Wire format (all big-endian), docs/PROTOCOLS.md §1:
 *   byte 0: 0x80 command flag, 0x40 next header (QMAPv5), 0x3f pad length
 *   byte 1: mux_id
 *   byte 2-3: pkt_len = payload + pad (excludes the 4-byte MAP header and the
 *             4-byte QMAPv5 checksum header)
 * A QMAPv5 data frame carries a 4-byte checksum header after the MAP header:
 *   byte 0: header type << 1 | more-headers bit (type 2 = checksum offload)
 *   byte 1: 0x80 = checksum valid (DL) / please compute (UL)
 */
#ifndef QMAPD_QMAP_H
#define QMAPD_QMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QMAP_HEADER_SIZE 4
/* WDA "DL minimum padding": 0-64 bytes between downlink frames, a multiple of 4. */
#define QMAP_DL_PADDING_MAX   64
#define QMAP_CSUM_HEADER_SIZE 4
#define QMAP_COMMAND_SIZE     16 /* struct rmnet_map_control_command */
#define QMAP_MAX_PAD	      0x3f

#define QMAP_FLAG_CMD	      0x80
#define QMAP_FLAG_NEXT_HEADER 0x40
#define QMAP_PAD_MASK	      0x3f

#define QMAP_CSUM_HEADER_TYPE_CSUM_OFFLOAD 2
#define QMAP_CSUM_VALID			   0x80

enum qmap_version {
	QMAP_V1 = 1,
	QMAP_V5 = 5,
};

enum qmap_frame_kind {
	QMAP_FRAME_DATA,
	QMAP_FRAME_COMMAND,
};

/* Bits of struct qmap_frame.flags. */
#define QMAP_FRAME_CSUM_VALID 0x01 /* QMAPv5: the modem verified the L4 checksum */
#define QMAP_FRAME_IPV6	      0x02 /* data frame payload is IPv6 (else IPv4) */

/*
 * Why a frame was rejected. Each has a defined outcome (see qmap_next()):
 * the FATAL ones make the rest of the aggregate untrustworthy and end it,
 * the others skip exactly one frame whose extent is still known.
 */
enum qmap_error {
	QMAP_ERR_TRUNCATED_HEADER, /* fatal: fewer bytes left than a header */
	QMAP_ERR_LEN_OVERFLOW,	   /* fatal: pkt_len runs past the end of the buffer */
	QMAP_ERR_ZERO_LEN,	   /* skip: pkt_len 0 */
	QMAP_ERR_PAD_TOO_LONG,	   /* skip: pad >= pkt_len */
	QMAP_ERR_NO_CSUM_HEADER,   /* skip: QMAPv5 data frame without the next-header bit */
	QMAP_ERR_BAD_NEXT_HEADER,  /* skip: QMAPv5 next header of unknown type, or next-header
				      bit on a QMAPv1 stream */
	QMAP_ERR_NOT_IP,	/* skip: payload version nibble not 4/6, or shorter than the fixed
				      IP header (20/40 bytes) */
	QMAP_ERR_SHORT_COMMAND, /* skip: command frame shorter than a command */
	_QMAP_ERR_MAX,
};

const char *qmap_error_name(enum qmap_error e);

struct qmap_frame {
	enum qmap_frame_kind kind;
	uint8_t mux_id;
	uint8_t flags;	   /* QMAP_FRAME_* */
	uint8_t *header;   /* the MAP header, inside the aggregate (for an in-place ACK) */
	uint8_t *payload;  /* IP packet, or command body for QMAP_FRAME_COMMAND */
	uint16_t len;	   /* payload length without padding */
	uint32_t wire_len; /* bytes this frame occupies in the aggregate */
};

struct qmap_iter {
	uint8_t *buf;
	size_t len;
	size_t off;
	enum qmap_version version;
	/* Granted DL minimum padding (0 after qmap_iter_init()): up to this many zero bytes,
	 * in whole 4-byte words, are skipped in front of every frame. */
	uint32_t min_padding;
};

void qmap_iter_init(struct qmap_iter *it, uint8_t *buf, size_t len, enum qmap_version version);

/*
 * Yield the next frame of the aggregate without copying.
 * Returns 1 and fills *ret_frame, 0 at the end, or -EBADMSG and sets *ret_error;
 * after -EBADMSG call again: a skipped frame continues with the next one, a fatal
 * error ends the aggregate (the next call returns 0).
 */
int qmap_next(struct qmap_iter *it, struct qmap_frame *ret_frame, enum qmap_error *ret_error);

/*
 * The same, with the common case inline: a well-formed IP data frame (v1, or v5 with its
 * checksum header) and no padding words to skip is yielded here, everything else by
 * qmap_next(), so the result is qmap_next()'s in every case (test-qmap, fuzz-qmap compare
 * them). For the datapath's receive loop, where the call cost ~20 instructions per packet.
 */
static inline __attribute__((always_inline)) int
qmap_next_inline(struct qmap_iter *it, struct qmap_frame *ret_frame, enum qmap_error *ret_error)
{
	size_t left = it->len - it->off;

	if (__builtin_expect(it->off < it->len && left >= QMAP_HEADER_SIZE + 20 && !it->min_padding,
			     1)) {
		uint8_t *hdr = it->buf + it->off;
		uint8_t b0 = hdr[0];
		size_t pkt_len = (size_t)(hdr[2] << 8 | hdr[3]);
		unsigned pad = b0 & QMAP_PAD_MASK;
		size_t hdr_len = QMAP_HEADER_SIZE;
		uint8_t flags = 0;
		bool ok = !(b0 & QMAP_FLAG_CMD);

		if (it->version == QMAP_V5) {
			/* left >= 24: the checksum header is there to read. */
			ok = ok && (b0 & QMAP_FLAG_NEXT_HEADER) &&
			     hdr[QMAP_HEADER_SIZE] == QMAP_CSUM_HEADER_TYPE_CSUM_OFFLOAD << 1;
			hdr_len += QMAP_CSUM_HEADER_SIZE;
			if (hdr[QMAP_HEADER_SIZE + 1] & QMAP_CSUM_VALID)
				flags |= QMAP_FRAME_CSUM_VALID;
		} else {
			ok = ok && !(b0 & QMAP_FLAG_NEXT_HEADER);
		}
		if (__builtin_expect(ok && pkt_len <= left - hdr_len && pad < pkt_len, 1)) {
			uint8_t *payload = hdr + hdr_len;
			size_t len = pkt_len - pad;
			unsigned ip = payload[0] >> 4;
			if (ip == 6)
				flags |= QMAP_FRAME_IPV6;
			if (__builtin_expect((ip == 4 && len >= 20) || (ip == 6 && len >= 40), 1)) {
				it->off += hdr_len + pkt_len;
				*ret_frame = (struct qmap_frame){
					.kind = QMAP_FRAME_DATA,
					.mux_id = hdr[1],
					.flags = flags,
					.header = hdr,
					.payload = payload,
					.len = (uint16_t)len,
					.wire_len = (uint32_t)(hdr_len + pkt_len),
				};
				return 1;
			}
		}
	}
	return qmap_next(it, ret_frame, ret_error);
}

/* Command frames, docs/PROTOCOLS.md §1.3. */
enum qmap_command_name {
	QMAP_COMMAND_FLOW_DISABLE = 1,
	QMAP_COMMAND_FLOW_ENABLE = 2,
};

enum qmap_command_type {
	QMAP_COMMAND_REQUEST = 0,
	QMAP_COMMAND_ACK = 1,
	QMAP_COMMAND_UNSUPPORTED = 2,
	QMAP_COMMAND_INVALID = 3,
};

struct qmap_command {
	uint8_t name;		 /* enum qmap_command_name, or anything the modem sent */
	uint8_t type;		 /* enum qmap_command_type */
	uint32_t transaction_id; /* opaque, echoed untouched in the ACK */
	uint16_t flow_seq_num;
	uint32_t qos_id;
};

/* Parse a command body (frame.payload, frame.len). Returns 0 or -EBADMSG. */
int qmap_command_parse(const uint8_t *body, size_t len, struct qmap_command *ret_cmd);

/* Turn a received command frame into its ACK in place (rmnet replies with the same frame). */
void qmap_command_make_ack(uint8_t *body);

/* Bytes that go in front of an uplink IP packet for this version (4 or 8). */
size_t qmap_ul_header_size(enum qmap_version version);

/*
 * Write the MAP header (and the QMAPv5 checksum header) for a data frame in place, in
 * the qmap_ul_header_size() bytes right before the payload. pad zero bytes must already
 * follow the payload; pkt_len on the wire = payload_len + pad.
 * Returns the header size, or -EINVAL (pad > 63, pkt_len > 65535).
 */
int qmap_write_data_header(uint8_t *hdr, enum qmap_version version, uint8_t mux_id,
			   size_t payload_len, unsigned pad, bool csum_flag);

/* Write a whole command frame (header + 16-byte body); buf must hold 20 bytes. */
void qmap_write_command(uint8_t *buf, uint8_t mux_id, const struct qmap_command *cmd);

#endif
