/* SPDX-License-Identifier: MIT */
/*
 * Short messages as 3GPP TS 23.040 puts them on the air: SMS-DELIVER (what the network hands
 * a modem, read back from its storage) decoded, SMS-SUBMIT (what a modem sends) encoded, each
 * with the SMSC address in front as modems store and take them (TS 27.005 PDU mode, QMI WMS
 * raw data, MBIM SMS PDU records). Text in the GSM 7-bit default alphabet with its extension
 * table (TS 23.038, packed) or UCS-2 (UTF-16 in practice: surrogate pairs pass through).
 * One part only: a user data header is skipped, so each part of a concatenated message is
 * its own message; a SUBMIT longer than one part is refused.
 * Pure functions over untrusted bytes: every length is checked, outputs always terminated.
 */
#ifndef QMAPD_SMS_PDU_H
#define QMAPD_SMS_PDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An address: '+' and up to 20 digits, or 11 alphanumeric GSM characters in UTF-8. */
#define SMS_ADDRESS_MAX 40
/* 160 septets of up to 3 bytes of UTF-8 each, or 70 UTF-16 units of up to 3 bytes. */
#define SMS_TEXT_MAX (160 * 3 + 1)
#define SMS_DATA_MAX 140
/* "2026-12-02T05:41:41+01:00" */
#define SMS_TIMESTAMP_MAX 32
/* SMSC (1 + 11) and the longest SUBMIT TPDU (1 + 1 + 12 + 1 + 1 + 7 + 1 + 140). */
#define SMS_PDU_MAX 176

/* TS 23.038 character sets (the DCS's), as ModemManager's MMSmsEncoding numbers them. */
enum sms_encoding {
	SMS_ENCODING_UNKNOWN = 0,
	SMS_ENCODING_GSM7 = 1,
	SMS_ENCODING_8BIT = 2,
	SMS_ENCODING_UCS2 = 3,
};

struct sms_deliver {
	char smsc[SMS_ADDRESS_MAX + 1];	  /* "" when the PDU has none */
	char number[SMS_ADDRESS_MAX + 1]; /* the originating address */
	char timestamp[SMS_TIMESTAMP_MAX];
	uint8_t pid, dcs;
	int message_class; /* 0..3, -1 none */
	enum sms_encoding encoding;
	bool has_udh;		 /* a user data header was skipped (a part of a longer message) */
	char text[SMS_TEXT_MAX]; /* UTF-8; "" for 8-bit data */
	uint8_t data[SMS_DATA_MAX];
	size_t data_len; /* 8-bit data only */
};

/*
 * An SMSC address and an SMS-DELIVER TPDU. 0, or -EINVAL (not a DELIVER, a length that runs
 * past the PDU, a field out of range: the message is not used) with ret cleared.
 */
int sms_pdu_decode_deliver(const uint8_t *pdu, size_t len, struct sms_deliver *ret);

/*
 * An SMS-SUBMIT to number ('+' then digits for international, else digits) with text (UTF-8)
 * in GSM 7-bit when every character has a place in it, else UCS-2; no SMSC address (the
 * SIM's is used), message reference 0 (the modem assigns it), no validity period, as
 * ModemManager sends. Returns the PDU's length, or -EINVAL (a bad number or invalid UTF-8),
 * -EMSGSIZE (more than one part), -ENOSPC (out too small).
 */
int sms_pdu_encode_submit(const char *number, const char *text, uint8_t *out, size_t outlen);

/* The encoding a text would be sent in (GSM7 or UCS2), -EINVAL for invalid UTF-8. */
int sms_text_encoding(const char *text);

#endif
