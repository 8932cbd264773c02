/* SPDX-License-Identifier: MIT */
/* Control-channel message framing and stream reassembly (wdm-frame.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "wdm-frame.h"

static ssize_t qmux_frame_length(const uint8_t *buf, size_t len)
{
	if (len < 1)
		return 0;
	if (buf[0] != WDM_QMUX_MARKER)
		return -EBADMSG;
	if (len < 3)
		return 0;

	size_t qmux_len = get_le16(buf + 1); /* counts itself, not the marker */
	size_t total = 1 + qmux_len;
	if (total < WDM_QMUX_MIN_MESSAGE || total > WDM_QMUX_MAX_MESSAGE)
		return -EBADMSG;
	if (len < 5)
		return 0;

	/* QMUX header: length(2) flags(1) service(1) client(1); service 0 is CTL, whose QMI
	 * header has a one-byte transaction id. */
	bool ctl = buf[4] == 0;
	size_t qmi_header = ctl ? 6 : 7;
	size_t tlv_len_off = 1 + 5 + (ctl ? 4 : 5);
	if (qmux_len < 5 + qmi_header)
		return -EBADMSG;
	if (len < tlv_len_off + 2)
		return 0;
	if (get_le16(buf + tlv_len_off) != qmux_len - 5 - qmi_header)
		return -EBADMSG;
	if (len < total)
		return 0;
	return (ssize_t)total;
}

/* MBIM message types either side sends (MBIM 1.0 §9.1-9.2). */
static bool mbim_type_valid(uint32_t type)
{
	switch (type) {
	case 0x00000001: /* OPEN */
	case 0x00000002: /* CLOSE */
	case 0x00000003: /* COMMAND */
	case 0x00000004: /* HOST_ERROR */
	case 0x80000001: /* OPEN_DONE */
	case 0x80000002: /* CLOSE_DONE */
	case 0x80000003: /* COMMAND_DONE */
	case 0x80000004: /* FUNCTION_ERROR */
	case 0x80000007: /* INDICATE_STATUS */
		return true;
	}
	return false;
}

static ssize_t mbim_frame_length(const uint8_t *buf, size_t len)
{
	/* MBIM has no marker: the type is checked byte by byte so that a resync scan does not
	 * settle on any offset at the end of the buffer. */
	if (len >= 1 && !(buf[0] >= 1 && buf[0] <= 4) && buf[0] != 7)
		return -EBADMSG;
	if (len >= 2 && buf[1] != 0)
		return -EBADMSG;
	if (len >= 3 && buf[2] != 0)
		return -EBADMSG;
	if (len < 4)
		return 0;
	if (!mbim_type_valid(get_le32(buf)))
		return -EBADMSG;
	if (len < 8)
		return 0;

	uint32_t total = get_le32(buf + 4);
	if (total < WDM_MBIM_MIN_MESSAGE || total > WDM_MBIM_MAX_MESSAGE)
		return -EBADMSG;
	if (len < total)
		return 0;
	return (ssize_t)total;
}

ssize_t wdm_frame_length(enum wdm_framing framing, const uint8_t *buf, size_t len)
{
	switch (framing) {
	case WDM_FRAMING_QMUX:
		return qmux_frame_length(buf, len);
	case WDM_FRAMING_MBIM:
		return mbim_frame_length(buf, len);
	}
	return -EINVAL;
}

size_t wdm_frame_max_message(enum wdm_framing framing)
{
	switch (framing) {
	case WDM_FRAMING_QMUX:
		return WDM_QMUX_MAX_MESSAGE;
	case WDM_FRAMING_MBIM:
		return WDM_MBIM_MAX_MESSAGE;
	}
	return 0;
}

int wdm_reasm_init(struct wdm_reasm *r, enum wdm_framing framing)
{
	size_t cap = wdm_frame_max_message(framing);
	if (cap == 0)
		return -EINVAL;

	*r = (struct wdm_reasm){ .framing = framing, .cap = cap };
	/* One largest message: whatever stays buffered is a prefix of one (see commit). */
	r->buf = malloc(cap);
	if (!r->buf)
		return -ENOMEM;
	return 0;
}

void wdm_reasm_done(struct wdm_reasm *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = 0;
}

uint8_t *wdm_reasm_space(struct wdm_reasm *r, size_t *ret_avail)
{
	/* Cannot happen (commit leaves less than one message); never hand out 0 bytes. */
	if (r->len >= r->cap)
		wdm_reasm_reset(r);
	*ret_avail = r->cap - r->len;
	return r->buf + r->len;
}

void wdm_reasm_commit(struct wdm_reasm *r, size_t n, wdm_send_fn fn, void *userdata)
{
	if (n > r->cap - r->len)
		n = r->cap - r->len;
	r->len += n;

	size_t off = 0;
	while (off < r->len) {
		ssize_t m = wdm_frame_length(r->framing, r->buf + off, r->len - off);
		if (m >= 0 && r->resyncing) {
			r->resyncs++;
			r->resyncing = 0;
		}
		if (m > 0) {
			r->messages++;
			(void)fn(userdata, r->buf + off, (size_t)m);
			off += (size_t)m;
			continue;
		}
		if (m == 0)
			break; /* a prefix of one message: wait for the rest */

		/*
		 * Not a message start. Heuristic resynchronisation: drop bytes up to the next
		 * offset that could start a message (for QMUX a 0x01 whose length and TLV
		 * length agree). A marker byte inside a payload can pass for a start; then that
		 * bogus message goes to the modem and the stream recovers after it.
		 */
		if (!r->resyncing) {
			r->framing_errors++;
			r->resyncing = 1;
		}
		size_t skip = 1;
		while (off + skip < r->len &&
		       wdm_frame_length(r->framing, r->buf + off + skip, r->len - off - skip) < 0)
			skip++;
		r->discarded_bytes += skip;
		off += skip;
	}

	if (off > 0) {
		memmove(r->buf, r->buf + off, r->len - off);
		r->len -= off;
	}
}

void wdm_reasm_reset(struct wdm_reasm *r)
{
	if (r->len > 0) {
		r->partial_discards++;
		r->discarded_bytes += r->len;
	}
	r->len = 0;
	r->resyncing = 0;
}
