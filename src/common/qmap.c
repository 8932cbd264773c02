/* SPDX-License-Identifier: MIT */
/*
 * QMAP codec (docs/PROTOCOLS.md §1): walks a downlink aggregate in place and writes uplink
 * headers in place.
 *
 * Every length on the wire is checked against what is left of the aggregate before it is
 * used. A frame whose extent is still known after an error (pkt_len fits) is skipped and the
 * walk goes on; when the extent is not known (header cut off, pkt_len past the end) nothing
 * after it can be trusted and the rest of the aggregate is dropped, as rmnet and qmi_wwan do.
 *
 * A data payload counts as IP only if its version nibble is 4 or 6 and it is at least as long
 * as the fixed IP header (20 bytes for IPv4, 40 for IPv6); anything shorter is reported as
 * QMAP_ERR_NOT_IP, so consumers may read the fixed header without checking again.
 * The IP total-length field is deliberately not used to trim trailing bytes: the kernel trims
 * when the packet is written to the TUN/TAP device, and an extra check here would cost the hot
 * path for no gain.
 */
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "qmap.h"
#include "byteorder.h"

#define IPV4_MIN_HEADER 20
#define IPV6_HEADER	40

const char *qmap_error_name(enum qmap_error e)
{
	switch (e) {
	case QMAP_ERR_TRUNCATED_HEADER:
		return "truncated_header";
	case QMAP_ERR_LEN_OVERFLOW:
		return "len_overflow";
	case QMAP_ERR_ZERO_LEN:
		return "zero_len";
	case QMAP_ERR_PAD_TOO_LONG:
		return "pad_too_long";
	case QMAP_ERR_NO_CSUM_HEADER:
		return "no_csum_header";
	case QMAP_ERR_BAD_NEXT_HEADER:
		return "bad_next_header";
	case QMAP_ERR_NOT_IP:
		return "not_ip";
	case QMAP_ERR_SHORT_COMMAND:
		return "short_command";
	case _QMAP_ERR_MAX:
		break;
	}
	/* Out of range: callers use the name as a counter key, so no name rather than a guess. */
	return NULL;
}

void qmap_iter_init(struct qmap_iter *it, uint8_t *buf, size_t len, enum qmap_version version)
{
	it->buf = buf;
	it->len = buf ? len : 0;
	it->off = 0;
	it->version = version;
	it->min_padding = 0;
}

/* A modem granted DL minimum padding puts zero words between frames: no header is all
 * zeros (pkt_len 0), so they are told apart from a frame. */
static void skip_padding(struct qmap_iter *it)
{
	for (uint32_t k = 0; k < it->min_padding && it->len - it->off >= QMAP_HEADER_SIZE;
	     k += QMAP_HEADER_SIZE) {
		const uint8_t *p = it->buf + it->off;
		if (p[0] | p[1] | p[2] | p[3])
			return;
		it->off += QMAP_HEADER_SIZE;
	}
}

/* The frame's extent is known: step over it and let the caller continue with the next one. */
static inline int skip_frame(struct qmap_iter *it, size_t wire_len, enum qmap_error err,
			     enum qmap_error *ret_error)
{
	it->off += wire_len;
	if (ret_error)
		*ret_error = err;
	return -EBADMSG;
}

/* Nothing after this point can be located reliably: end the aggregate. */
static inline int fail_aggregate(struct qmap_iter *it, enum qmap_error err,
				 enum qmap_error *ret_error)
{
	it->off = it->len;
	if (ret_error)
		*ret_error = err;
	return -EBADMSG;
}

int qmap_next(struct qmap_iter *it, struct qmap_frame *ret_frame, enum qmap_error *ret_error)
{
	if (it->off >= it->len)
		return 0;
	if (_unlikely_(it->min_padding)) {
		skip_padding(it);
		if (it->off >= it->len)
			return 0;
	}

	size_t left = it->len - it->off;
	if (_unlikely_(left < QMAP_HEADER_SIZE))
		return fail_aggregate(it, QMAP_ERR_TRUNCATED_HEADER, ret_error);

	uint8_t *hdr = it->buf + it->off;
	uint8_t b0 = hdr[0];
	unsigned pad = b0 & QMAP_PAD_MASK;
	size_t pkt_len = get_be16(hdr + 2);
	bool command = b0 & QMAP_FLAG_CMD;
	bool v5 = it->version == QMAP_V5;
	size_t hdr_len = QMAP_HEADER_SIZE;

	/* Only v5 data frames announce a checksum header; commands never carry one. */
	if (v5 && !command && (b0 & QMAP_FLAG_NEXT_HEADER)) {
		hdr_len += QMAP_CSUM_HEADER_SIZE;
		if (_unlikely_(left < hdr_len))
			return fail_aggregate(it, QMAP_ERR_TRUNCATED_HEADER, ret_error);
	}

	/* left >= hdr_len here, so the subtraction cannot wrap. */
	if (_unlikely_(pkt_len > left - hdr_len))
		return fail_aggregate(it, QMAP_ERR_LEN_OVERFLOW, ret_error);

	size_t wire_len = hdr_len + pkt_len;
	if (_unlikely_(pkt_len == 0))
		return skip_frame(it, wire_len, QMAP_ERR_ZERO_LEN, ret_error);

	uint8_t *payload = hdr + hdr_len;

	if (_unlikely_(command)) {
		/* A pad longer than pkt_len leaves no body at all, which is just as short. */
		if (pad >= pkt_len || pkt_len - pad < QMAP_COMMAND_SIZE)
			return skip_frame(it, wire_len, QMAP_ERR_SHORT_COMMAND, ret_error);

		it->off += wire_len;
		*ret_frame = (struct qmap_frame){
			.kind = QMAP_FRAME_COMMAND,
			.mux_id = hdr[1],
			.header = hdr,
			.payload = payload,
			.len = (uint16_t)(pkt_len - pad),
			.wire_len = (uint32_t)wire_len,
		};
		return 1;
	}

	uint8_t flags = 0;
	if (v5) {
		if (_unlikely_(!(b0 & QMAP_FLAG_NEXT_HEADER)))
			return skip_frame(it, wire_len, QMAP_ERR_NO_CSUM_HEADER, ret_error);

		/* Unknown types (e.g. downstream coalescing) and chained headers are not ours to
		 * interpret; their length is still given by pkt_len, so only this frame is lost. */
		uint8_t info = hdr[QMAP_HEADER_SIZE];
		if (_unlikely_(info != QMAP_CSUM_HEADER_TYPE_CSUM_OFFLOAD << 1))
			return skip_frame(it, wire_len, QMAP_ERR_BAD_NEXT_HEADER, ret_error);

		if (hdr[QMAP_HEADER_SIZE + 1] & QMAP_CSUM_VALID)
			flags |= QMAP_FRAME_CSUM_VALID;
	} else if (_unlikely_(b0 & QMAP_FLAG_NEXT_HEADER)) {
		/* The bit is reserved in v1: a modem setting it speaks another version than the
		 * one negotiated, so the payload cannot be trusted to start with IP. */
		return skip_frame(it, wire_len, QMAP_ERR_BAD_NEXT_HEADER, ret_error);
	}

	if (_unlikely_(pad >= pkt_len))
		return skip_frame(it, wire_len, QMAP_ERR_PAD_TOO_LONG, ret_error);

	size_t len = pkt_len - pad;
	switch (payload[0] >> 4) {
	case 4:
		if (_unlikely_(len < IPV4_MIN_HEADER))
			return skip_frame(it, wire_len, QMAP_ERR_NOT_IP, ret_error);
		break;
	case 6:
		if (_unlikely_(len < IPV6_HEADER))
			return skip_frame(it, wire_len, QMAP_ERR_NOT_IP, ret_error);
		flags |= QMAP_FRAME_IPV6;
		break;
	default:
		return skip_frame(it, wire_len, QMAP_ERR_NOT_IP, ret_error);
	}

	it->off += wire_len;
	*ret_frame = (struct qmap_frame){
		.kind = QMAP_FRAME_DATA,
		.mux_id = hdr[1],
		.flags = flags,
		.header = hdr,
		.payload = payload,
		.len = (uint16_t)len,
		.wire_len = (uint32_t)wire_len,
	};
	return 1;
}

int qmap_command_parse(const uint8_t *body, size_t len, struct qmap_command *ret_cmd)
{
	if (len < QMAP_COMMAND_SIZE)
		return -EBADMSG;

	struct qmap_command cmd = {
		.name = body[0],
		.type = body[1] & 0x03,
		.flow_seq_num = get_be16(body + 10),
		.qos_id = get_be32(body + 12),
	};
	/* Opaque to us and echoed as-is, so keep the wire bytes rather than a byte-swapped value. */
	memcpy(&cmd.transaction_id, body + 4, sizeof(cmd.transaction_id));

	*ret_cmd = cmd;
	return 0;
}

void qmap_command_make_ack(uint8_t *body)
{
	/* The reserved bits 7:2 go back exactly as received, like rmnet does. */
	body[1] = (uint8_t)((body[1] & ~0x03) | QMAP_COMMAND_ACK);
}

size_t qmap_ul_header_size(enum qmap_version version)
{
	switch (version) {
	case QMAP_V1:
		return QMAP_HEADER_SIZE;
	case QMAP_V5:
		return QMAP_HEADER_SIZE + QMAP_CSUM_HEADER_SIZE;
	}
	/* Not a version we speak; qmap_write_data_header() refuses it with -EINVAL. */
	return 0;
}

int qmap_write_data_header(uint8_t *hdr, enum qmap_version version, uint8_t mux_id,
			   size_t payload_len, unsigned pad, bool csum_flag)
{
	if (version != QMAP_V1 && version != QMAP_V5)
		return -EINVAL;
	if (pad > QMAP_MAX_PAD)
		return -EINVAL;
	/* pad <= 63 here, so the subtraction cannot wrap. */
	if (payload_len > UINT16_MAX - pad)
		return -EINVAL;

	hdr[0] = (uint8_t)pad;
	hdr[1] = mux_id;
	put_be16(hdr + 2, (uint16_t)(payload_len + pad));
	if (version == QMAP_V1)
		return QMAP_HEADER_SIZE;

	hdr[0] |= QMAP_FLAG_NEXT_HEADER;
	hdr[4] = QMAP_CSUM_HEADER_TYPE_CSUM_OFFLOAD << 1;
	hdr[5] = csum_flag ? QMAP_CSUM_VALID : 0;
	hdr[6] = 0;
	hdr[7] = 0;
	return QMAP_HEADER_SIZE + QMAP_CSUM_HEADER_SIZE;
}

void qmap_write_command(uint8_t *buf, uint8_t mux_id, const struct qmap_command *cmd)
{
	uint8_t *body = buf + QMAP_HEADER_SIZE;

	buf[0] = QMAP_FLAG_CMD;
	buf[1] = mux_id;
	put_be16(buf + 2, QMAP_COMMAND_SIZE);

	/* Reserved fields and the host-endian flow-control bitfield at 8-9 are sent as zero. */
	memset(body, 0, QMAP_COMMAND_SIZE);
	body[0] = cmd->name;
	body[1] = cmd->type & 0x03;
	memcpy(body + 4, &cmd->transaction_id, sizeof(cmd->transaction_id));
	put_be16(body + 10, cmd->flow_seq_num);
	put_be32(body + 12, cmd->qos_id);
}
