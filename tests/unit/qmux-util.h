/* SPDX-License-Identifier: MIT */
/*
 * QMUX message builders and vectors for the tests that play a modem or a host (test-wdm,
 * test-wdm-frame, test-wdm-qmi):
 * written from the format (wdm.h), independent of qmapd-sim's own encoder, so each side
 * checks the other.
 */
#ifndef QMAPD_QMUX_UTIL_H
#define QMAPD_QMUX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "macro.h"

/*
 * Marker, QMUX header (qmux_flags 0x80 = from the service), then the CTL (service 0: 8-bit
 * transaction id) or service (16-bit) header with qmi_flags, msg_id and tlv_len bytes of TLVs.
 * Returns the message length; b needs 13 + tlv_len bytes.
 */
static inline size_t test_qmux_build(uint8_t *b, uint8_t qmux_flags, uint8_t service, uint8_t cid,
				     uint8_t qmi_flags, uint16_t tid, uint16_t msg_id,
				     const uint8_t *tlvs, size_t tlv_len)
{
	size_t hdr = service == 0 ? 6 : 7;
	size_t qlen = 5 + hdr + tlv_len;
	size_t o = 0;

	b[o++] = 0x01;
	b[o++] = qlen & 0xff;
	b[o++] = (uint8_t)(qlen >> 8);
	b[o++] = qmux_flags;
	b[o++] = service;
	b[o++] = cid;
	b[o++] = qmi_flags;
	b[o++] = tid & 0xff;
	if (service != 0)
		b[o++] = (uint8_t)(tid >> 8);
	b[o++] = msg_id & 0xff;
	b[o++] = (uint8_t)(msg_id >> 8);
	b[o++] = tlv_len & 0xff;
	b[o++] = (uint8_t)(tlv_len >> 8);
	if (tlv_len)
		memcpy(b + o, tlvs, tlv_len);
	return o + tlv_len;
}

/* Message vectors, as libqmi and libmbim send them. */
/* CTL Allocate CID request for DMS, as libqmi sends it. */
_unused_ static const uint8_t ctl_alloc_cid[] = { 0x01, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
						  0x22, 0x00, 0x04, 0x00, 0x01, 0x01, 0x00, 0x02 };
/* DMS Get IDs request on client 1. */
_unused_ static const uint8_t dms_get_ids[] = { 0x01, 0x0c, 0x00, 0x00, 0x02, 0x01, 0x00,
						0x02, 0x00, 0x25, 0x00, 0x00, 0x00 };
/* MBIM OPEN, MaxControlTransfer 4096. */
_unused_ static const uint8_t mbim_open[] = { 0x01, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
					      0x01, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00 };

/* A send callback that keeps the first messages it is given (test-wdm, test-wdm-frame). */
struct test_sink {
	unsigned n;
	uint8_t msg[8][512];
	size_t len[8];
	int ret; /* what send() returns */
};

_unused_ static int test_sink_send(void *userdata, const uint8_t *msg, size_t len)
{
	struct test_sink *s = userdata;
	if (s->ret < 0)
		return s->ret;
	if (s->n < (unsigned)ARRAY_SIZE(s->msg) && len <= sizeof(s->msg[0])) {
		memcpy(s->msg[s->n], msg, len);
		s->len[s->n] = len;
	}
	s->n++;
	return 0;
}

/* Build a QMUX message: CTL (service 0) or a service message, `tlv_len` bytes of TLVs. */
_unused_ static size_t test_qmux(uint8_t *b, uint8_t flags, uint8_t service, uint16_t msg_id,
				 uint16_t tid, const uint8_t *tlvs, uint16_t tlv_len)
{
	/* Client id 1 for services; QMI flags response when from the service, else request. */
	return test_qmux_build(b, flags, service, service == 0 ? 0 : 1, flags ? 0x02 : 0x00, tid,
			       msg_id, tlvs, tlv_len);
}

#endif
