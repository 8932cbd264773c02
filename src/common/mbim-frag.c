/* SPDX-License-Identifier: MIT */
/* MBIM messages fitted to the function's wMaxControlMessage (mbim-frag.h). */
#include <errno.h>
#include <string.h>

#include "byteorder.h"
#include "mbim-frag.h"

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

bool mbim_open_clamp(uint8_t *msg, size_t len, uint32_t max)
{
	if (len < MBIM_OPEN_SIZE || get_le32(msg) != MBIM_MSG_OPEN || get_le32(msg + 12) <= max)
		return false;
	put_le32(msg + 12, max);
	return true;
}

int mbim_frag_feed(struct mbim_frag_asm *a, const uint8_t *msg, size_t len)
{
	if (len < MBIM_FRAGMENT_HEADERS || get_le32(msg) != MBIM_MSG_COMMAND ||
	    get_le32(msg + 4) != len)
		return a->busy = false, -EINVAL;
	uint32_t tid = get_le32(msg + 8), total = get_le32(msg + 12), cur = get_le32(msg + 16);

	if (total == 0 || cur >= total)
		return a->busy = false, -EINVAL;
	if (cur == 0) {
		/* A first fragment starts anew: a message under way was given up by its client. */
		if (len > sizeof(a->buf))
			return a->busy = false, -EMSGSIZE;
		memcpy(a->buf, msg, len);
		a->len = len;
		a->tid = tid;
		a->total = total;
		a->next = 1;
		a->busy = true;
	} else {
		if (!a->busy || tid != a->tid || total != a->total || cur != a->next)
			return a->busy = false, -EINVAL;
		size_t more = len - MBIM_FRAGMENT_HEADERS;
		if (a->len + more > sizeof(a->buf))
			return a->busy = false, -EMSGSIZE;
		memcpy(a->buf + a->len, msg + MBIM_FRAGMENT_HEADERS, more);
		a->len += more;
		a->next++;
	}
	if (a->next < a->total)
		return 0;
	a->busy = false;
	put_le32(a->buf + 4, (uint32_t)a->len);
	put_le32(a->buf + 12, 1);
	put_le32(a->buf + 16, 0);
	return 1;
}

uint32_t mbim_frag_count(size_t len, size_t max)
{
	size_t body = len - MBIM_FRAGMENT_HEADERS, room = max - MBIM_FRAGMENT_HEADERS;

	return body == 0 ? 1 : (uint32_t)((body + room - 1) / room);
}

size_t mbim_frag_write(const uint8_t *msg, size_t len, size_t max, uint32_t i, uint8_t *out)
{
	size_t room = max - MBIM_FRAGMENT_HEADERS, body = len - MBIM_FRAGMENT_HEADERS;
	size_t off = (size_t)i * room, n = body - off < room ? body - off : room;

	memcpy(out, msg, MBIM_FRAGMENT_HEADERS);
	put_le32(out + 4, (uint32_t)(MBIM_FRAGMENT_HEADERS + n));
	put_le32(out + 12, mbim_frag_count(len, max));
	put_le32(out + 16, i);
	memcpy(out + MBIM_FRAGMENT_HEADERS, msg + MBIM_FRAGMENT_HEADERS + off, n);
	return MBIM_FRAGMENT_HEADERS + n;
}

/* UUID_BASIC_CONNECT a289cc33-bcbb-8b4f-b6b0-133ec2aae6df as it goes on the wire. */
static const uint8_t basic_connect[16] = { 0xa2, 0x89, 0xcc, 0x33, 0xbc, 0xbb, 0x8b, 0x4f,
					   0xb6, 0xb0, 0x13, 0x3e, 0xc2, 0xaa, 0xe6, 0xdf };
#define MBIM_CID_RADIO_STATE  3u
#define MBIM_ERROR_NOT_OPENED 5u /* MBIM_PROTOCOL_ERROR_NOT_OPENED */

size_t mbim_probe_write(uint8_t out[MBIM_PROBE_SIZE], uint32_t tid)
{
	put_le32(out, MBIM_MSG_COMMAND);
	put_le32(out + 4, MBIM_PROBE_SIZE);
	put_le32(out + 8, tid);
	put_le32(out + 12, 1); /* TotalFragments */
	put_le32(out + 16, 0); /* CurrentFragment */
	memcpy(out + 20, basic_connect, sizeof(basic_connect));
	put_le32(out + 36, MBIM_CID_RADIO_STATE);
	put_le32(out + 40, 0); /* query */
	put_le32(out + 44, 0); /* no InformationBuffer */
	return MBIM_PROBE_SIZE;
}

size_t mbim_open_done_write(uint8_t out[MBIM_OPEN_DONE_SIZE], uint32_t tid)
{
	put_le32(out, MBIM_MSG_OPEN_DONE);
	put_le32(out + 4, MBIM_OPEN_DONE_SIZE);
	put_le32(out + 8, tid);
	put_le32(out + 12, 0); /* MBIM_STATUS_SUCCESS */
	return MBIM_OPEN_DONE_SIZE;
}

enum mbim_probe_answer mbim_probe_answer(const uint8_t *msg, size_t len, uint32_t tid)
{
	if (len < MBIM_HEADER_SIZE || get_le32(msg + 8) != tid)
		return MBIM_PROBE_NOT_ANSWER;
	switch (get_le32(msg)) {
	case MBIM_MSG_COMMAND_DONE:
		return MBIM_PROBE_OPEN;
	case MBIM_MSG_FUNCTION_ERROR:
		return len >= 16 && get_le32(msg + 12) == MBIM_ERROR_NOT_OPENED ? MBIM_PROBE_CLOSED
										: MBIM_PROBE_ERROR;
	default:
		return MBIM_PROBE_NOT_ANSWER;
	}
}

bool mbim_is_not_opened(const uint8_t *msg, size_t len)
{
	return len >= 16 && get_le32(msg) == MBIM_MSG_FUNCTION_ERROR &&
	       get_le32(msg + 12) == MBIM_ERROR_NOT_OPENED;
}

size_t mbim_open_write(uint8_t out[MBIM_OPEN_SIZE], uint32_t tid, uint32_t max)
{
	put_le32(out, MBIM_MSG_OPEN);
	put_le32(out + 4, MBIM_OPEN_SIZE);
	put_le32(out + 8, tid);
	put_le32(out + 12, max);
	return MBIM_OPEN_SIZE;
}

size_t mbim_function_error_write(uint8_t out[MBIM_FUNCTION_ERROR_SIZE], uint32_t tid,
				 uint32_t error)
{
	put_le32(out, MBIM_MSG_FUNCTION_ERROR);
	put_le32(out + 4, MBIM_FUNCTION_ERROR_SIZE);
	put_le32(out + 8, tid);
	put_le32(out + 12, error);
	return MBIM_FUNCTION_ERROR_SIZE;
}
