/* SPDX-License-Identifier: MIT */
/*
 * SMS PDUs (sms-pdu.h): SMS-DELIVERs from public examples and built by hand from TS 23.040 /
 * 23.038 (GSM 7-bit with the extension table, UCS-2 with a surrogate pair, 8-bit data, a
 * user data header, alphanumeric senders), every truncation of them, and SMS-SUBMITs
 * compared byte for byte.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sms-pdu.h"
#include "test-case.h"

static size_t hex(const char *s, uint8_t *out)
{
	size_t n = 0;

	for (; s[0] && s[1]; s += 2) {
		unsigned v;
		sscanf(s, "%2x", &v);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02X", p[i]);
	out[2 * n] = '\0';
}

/* Every prefix of a valid PDU shorter than the user data it announces is refused, cleanly. */
static void expect_truncations_refused(const uint8_t *pdu, size_t len)
{
	struct sms_deliver d;

	for (size_t i = 0; i < len; i++) {
		EXPECT_EQ(sms_pdu_decode_deliver(pdu, i, &d), -EINVAL);
		EXPECT_STR_EQ(d.text, "");
	}
}

TEST(deliver_gsm7_international)
{
	/* A widely published example: from +31641600986, "How are you?". */
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("07911326040000F0040B911346610089F60000208062917314080CC8F71D14969741F977"
		       "FD07",
		       pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_STR_EQ(d.smsc, "+31624000000");
	EXPECT_STR_EQ(d.number, "+31641600986");
	/* Zone byte 08: the sign bit alone, zero quarters. */
	EXPECT_STR_EQ(d.timestamp, "2002-08-26T19:37:41+00:00");
	EXPECT_EQ(d.encoding, SMS_ENCODING_GSM7);
	EXPECT_EQ(d.message_class, -1);
	EXPECT_STR_EQ(d.text, "How are you?");
	EXPECT_EQ(d.has_udh, false);
	expect_truncations_refused(pdu, n);
}

TEST(deliver_national_number)
{
	/* Another public one: SMSC +27381000015, a national-format sender, "hellohello". */
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("07917283010010F5040BC87238880900F10000993092516195800AE8329BFD4697D9EC37",
		       pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_STR_EQ(d.smsc, "+27381000015");
	EXPECT_STR_EQ(d.number, "27838890001");
	EXPECT_STR_EQ(d.timestamp, "2099-03-29T15:16:59+02:00");
	EXPECT_STR_EQ(d.text, "hellohello");
}

TEST(deliver_ucs2_and_zone_west)
{
	/* No SMSC; UCS-2 "Hé€" and U+1F600 as a surrogate pair; zone -05:00 (20 quarters,
	 * tens digit in the low nibble, sign in its bit 3). */
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("00040B911346610089F600082080629173140A"
		       "0A004800E920ACD83DDE00",
		       pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_STR_EQ(d.smsc, "");
	EXPECT_EQ(d.encoding, SMS_ENCODING_UCS2);
	EXPECT_STR_EQ(d.timestamp, "2002-08-26T19:37:41-05:00");
	EXPECT_STR_EQ(d.text, "H\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	expect_truncations_refused(pdu, n);
	/* A lone high surrogate is shown as U+FFFD, not dropped. */
	n = hex("00040B911346610089F600082080629173140802D83D", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_STR_EQ(d.text, "\xef\xbf\xbd");
}

TEST(deliver_extension_table_and_class)
{
	/* "€[" in GSM 7-bit: 1B 65 1B 3C packed; DCS F0: class 0 (flash), GSM 7-bit. */
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("00040B911346610089F600F020806291731408049BF28607", pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_EQ(d.message_class, 0);
	EXPECT_STR_EQ(d.text, "\xe2\x82\xac[");
}

TEST(deliver_alphanumeric_sender)
{
	/* Sender "Test" (TON 5): 7 semi-octets of packed GSM, D0 type. */
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("000407D0D4F29C0E000020806291731408"
		       "02E834",
		       pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_STR_EQ(d.number, "Test");
	EXPECT_STR_EQ(d.text, "hi");
}

TEST(deliver_user_data_header)
{
	/* UDHI, a concatenation header (part 1 of 2), then "hi" from the next septet boundary:
	 * 6 header bytes are 48 bits, the text starts at septet 7. */
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("00440B911346610089F60000208062917314080905000301020"
		       "1D069",
		       pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_EQ(d.has_udh, true);
	EXPECT_STR_EQ(d.text, "hi");
	/* A header longer than the user data. */
	pdu[n - 8] = 0x09;
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
}

TEST(deliver_8bit)
{
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = hex("00040B911346610089F600042080629173140803010203", pdu);
	struct sms_deliver d;

	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_EQ(d.encoding, SMS_ENCODING_8BIT);
	EXPECT_EQ(d.data_len, 3u);
	EXPECT_EQ(d.data[2], 3);
	EXPECT_STR_EQ(d.text, "");
}

TEST(deliver_refused)
{
	uint8_t pdu[SMS_PDU_MAX];
	struct sms_deliver d;
	size_t n;

	/* A SUBMIT is not a DELIVER. */
	n = hex("0001000B916407281553F800000AE8329BFD4697D9EC37", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	/* UDL 161 septets; UDL beyond the PDU; month 13; reserved DCS group; compressed. */
	n = hex("00040B911346610089F6000020806291731408A1", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	n = hex("00040B911346610089F600002080629173140805E832", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	n = hex("00040B911346610089F600002031629173140800", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	n = hex("00040B911346610089F600802080629173140800", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	n = hex("00040B911346610089F600202080629173140800", pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	/* An address of 21 digits; a filler nibble before the last digit. */
	n = hex("0004159113466100891346610089F1000020806291731408"
		"00",
		pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	n = hex("00040B9113F6610089F6000020806291731408"
		"00",
		pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), -EINVAL);
	/* An empty message is a message. */
	n = hex("00040B911346610089F6000020806291731408"
		"00",
		pdu);
	EXPECT_EQ(sms_pdu_decode_deliver(pdu, n, &d), 0);
	EXPECT_STR_EQ(d.text, "");
}

TEST(submit)
{
	uint8_t pdu[SMS_PDU_MAX];
	char h[2 * SMS_PDU_MAX + 1];
	int n;

	/* The published "hellohello" SUBMIT to +46708251358, without its validity period. */
	n = sms_pdu_encode_submit("+46708251358", "hellohello", pdu, sizeof(pdu));
	EXPECT_EQ(n, 23);
	to_hex(pdu, (size_t)n, h);
	EXPECT_STR_EQ(h, "0001000B916407281553F800000AE8329BFD4697D9EC37");
	/* A national number of odd length; the extension table. */
	n = sms_pdu_encode_submit("12345", "\xe2\x82\xac[", pdu, sizeof(pdu));
	to_hex(pdu, (size_t)n, h);
	EXPECT_STR_EQ(h, "00010005812143F50000049BF28607");
	/* Not in GSM 7-bit: UCS-2, a surrogate pair for U+1F600. */
	n = sms_pdu_encode_submit("+1", "H\xc3\xa9\xf0\x9f\x98\x80", pdu, sizeof(pdu));
	to_hex(pdu, (size_t)n, h);
	EXPECT_STR_EQ(h, "0001000191F1000808004800E9D83DDE00");
	/* The output buffer one byte short. */
	EXPECT_EQ(sms_pdu_encode_submit("+46708251358", "hellohello", pdu, 22), -ENOSPC);
}

TEST(submit_limits)
{
	char text[200];
	uint8_t pdu[SMS_PDU_MAX];

	memset(text, 'a', 160);
	text[160] = '\0';
	EXPECT_EQ(sms_pdu_encode_submit("+1", text, pdu, sizeof(pdu)), 4 + 2 + 3 + 140);
	text[160] = 'a';
	text[161] = '\0';
	EXPECT_EQ(sms_pdu_encode_submit("+1", text, pdu, sizeof(pdu)), -EMSGSIZE);
	/* 159 plain and one extension character are 161 septets. */
	memcpy(text + 159, "\xe2\x82\xac", 4);
	EXPECT_EQ(sms_pdu_encode_submit("+1", text, pdu, sizeof(pdu)), -EMSGSIZE);
	/* 70 UCS-2 characters fit, 71 do not. */
	text[0] = '\0';
	for (int i = 0; i < 70; i++)
		strcat(text, "\xd0\x96");
	EXPECT_EQ(sms_pdu_encode_submit("+1", text, pdu, sizeof(pdu)), 4 + 2 + 3 + 140);
	strcat(text, "\xd0\x96");
	EXPECT_EQ(sms_pdu_encode_submit("+1", text, pdu, sizeof(pdu)), -EMSGSIZE);
	/* Numbers: empty, letters, 21 digits; invalid UTF-8 (overlong, a surrogate). */
	EXPECT_EQ(sms_pdu_encode_submit("+", "x", pdu, sizeof(pdu)), -EINVAL);
	EXPECT_EQ(sms_pdu_encode_submit("+12a", "x", pdu, sizeof(pdu)), -EINVAL);
	EXPECT_EQ(sms_pdu_encode_submit("123456789012345678901", "x", pdu, sizeof(pdu)), -EINVAL);
	EXPECT_EQ(sms_pdu_encode_submit("+1", "\xc0\xaf", pdu, sizeof(pdu)), -EINVAL);
	EXPECT_EQ(sms_pdu_encode_submit("+1", "\xed\xa0\x80", pdu, sizeof(pdu)), -EINVAL);
	EXPECT_EQ(sms_text_encoding("abc"), SMS_ENCODING_GSM7);
	EXPECT_EQ(sms_text_encoding("\xd0\x96"), SMS_ENCODING_UCS2);
}
