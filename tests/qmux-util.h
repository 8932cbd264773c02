/* SPDX-License-Identifier: MIT */
/*
 * A QMUX message builder for the tests that play a modem or a host (test-wdm, test-wdm-qmi):
 * written from the format (wdm.h), independent of qmapd-sim's own encoder, so each side
 * checks the other.
 */
#ifndef QMAPD_QMUX_UTIL_H
#define QMAPD_QMUX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#endif
