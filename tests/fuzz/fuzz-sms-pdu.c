/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the SMS PDU codec (sms-pdu.h): the input is a PDU as a modem hands it
 * over (QMI WMS Raw Read, MBIM SMS_READ), decoded as an SMS-DELIVER; and, split at its first
 * NUL, a number and a text to encode as an SMS-SUBMIT. Checked besides what the sanitizers
 * see: every string is terminated and valid UTF-8, a failed decode leaves the result empty,
 * 8-bit data stays within its buffer, an encoded PDU fits SMS_PDU_MAX and carries the
 * number's digit count.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sms-pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static bool valid_utf8(const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!memchr(str, '\0', max))
		return false;
	while (*s) {
		size_t k = *s < 0x80		 ? 1
			   : (*s & 0xE0) == 0xC0 ? 2
			   : (*s & 0xF0) == 0xE0 ? 3
			   : (*s & 0xF8) == 0xF0 ? 4
						 : 0;
		if (!k)
			return false;
		for (size_t i = 1; i < k; i++)
			if ((s[i] & 0xC0) != 0x80)
				return false;
		s += k;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sms_deliver d;
	int r = sms_pdu_decode_deliver(data, size, &d);

	check(valid_utf8(d.smsc, sizeof(d.smsc)) && valid_utf8(d.number, sizeof(d.number)) &&
	      valid_utf8(d.text, sizeof(d.text)) && memchr(d.timestamp, '\0', sizeof(d.timestamp)));
	check(d.data_len <= sizeof(d.data));
	if (r < 0)
		check(!d.smsc[0] && !d.number[0] && !d.text[0] && !d.data_len);
	else
		check(r == 0 && d.encoding != SMS_ENCODING_UNKNOWN && d.message_class >= -1 &&
		      d.message_class <= 3);

	/* number NUL text NUL: both as C strings (a missing NUL: the rest is ignored). */
	char buf[512];
	size_t n = size < sizeof(buf) - 2 ? size : sizeof(buf) - 2;
	memcpy(buf, data, n);
	buf[n] = buf[n + 1] = '\0';
	const char *number = buf;
	const char *text = buf + strlen(buf) + 1;
	if (text > buf + n)
		text = buf + n + 1;
	uint8_t pdu[SMS_PDU_MAX];
	r = sms_pdu_encode_submit(number, text, pdu, sizeof(pdu));
	if (r >= 0) {
		size_t digits = strlen(number) - (number[0] == '+');
		check(r <= SMS_PDU_MAX && r >= 8 && pdu[0] == 0 && pdu[3] == digits);
		check(sms_text_encoding(text) >= 0);
	}
	return 0;
}
