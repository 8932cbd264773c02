/* SPDX-License-Identifier: MIT */
/* The SIM's elementary files to text (sim-ef.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "sim-ef.h"

/* Digits from BCD nibbles, low nibble first, starting at nibble `first`. 'F' ends them;
 * after it only 'F' may follow. */
static int bcd_digits(const uint8_t *p, size_t len, size_t first, char *out, size_t outlen,
		      size_t max)
{
	size_t n = 0;
	bool ended = false;

	for (size_t i = first; i < len * 2; i++) {
		uint8_t v = i % 2 ? p[i / 2] >> 4 : p[i / 2] & 0x0F;
		if (v == 0x0F) {
			ended = true;
			continue;
		}
		if (ended || v > 9)
			return -EINVAL;
		if (n >= max)
			return -EINVAL;
		if (n + 1 >= outlen)
			return -ENOSPC;
		out[n++] = (char)('0' + v);
	}
	out[n] = '\0';
	return (int)n;
}

int sim_ef_iccid(const uint8_t *ef, size_t len, char *out, size_t outlen)
{
	if (!outlen)
		return -ENOSPC;
	out[0] = '\0';
	int n = bcd_digits(ef, len, 0, out, outlen, SIM_EF_ICCID_MAX);
	if (n == 0)
		return -EINVAL;
	if (n < 0)
		out[0] = '\0';
	return n;
}

int sim_ef_imsi(const uint8_t *ef, size_t len, char *out, size_t outlen)
{
	if (!outlen)
		return -ENOSPC;
	out[0] = '\0';
	if (len < 2 || ef[0] < 1 || ef[0] > 8 || ef[0] > len - 1)
		return -EINVAL;
	/* Nibble 0 of byte 1 is the parity/type nibble, not a digit. */
	int n = bcd_digits(ef + 1, ef[0], 1, out, outlen, SIM_EF_IMSI_MAX);
	if (n >= 0 && n < 6)
		n = -EINVAL;
	if (n < 0)
		out[0] = '\0';
	return n;
}

int sim_ef_ad_mnc_length(const uint8_t *ef, size_t len)
{
	if (len < 4)
		return -ENODATA;
	int v = ef[3] & 0x0F;
	return v == 2 || v == 3 ? v : -EINVAL;
}

/* UTF-8 of one code point of the Basic Multilingual Plane; 0 when it does not fit. */
static size_t put_utf8(char *out, size_t room, uint16_t c)
{
	if (c < 0x80 && room > 1) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800 && room > 2) {
		out[0] = (char)(0xC0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c >= 0x800 && room > 3) {
		out[0] = (char)(0xE0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		out[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	return 0;
}

/* TS 23.038's default alphabet as Unicode; 0 for what a name cannot hold (the escape to
 * the extension table, line feed, carriage return). */
static const uint16_t gsm_default[128] = {
	0x0040, 0x00A3, 0x0024, 0x00A5, 0x00E8, 0x00E9, 0x00F9, 0x00EC, 0x00F2, 0x00C7, 0,
	0x00D8, 0x00F8, 0,	0x00C5, 0x00E5, 0x0394, 0x005F, 0x03A6, 0x0393, 0x039B, 0x03A9,
	0x03A0, 0x03A8, 0x03A3, 0x0398, 0x039E, 0,	0x00C6, 0x00E6, 0x00DF, 0x00C9, ' ',
	'!',	'"',	'#',	0x00A4, '%',	'&',	'\'',	'(',	')',	'*',	'+',
	',',	'-',	'.',	'/',	'0',	'1',	'2',	'3',	'4',	'5',	'6',
	'7',	'8',	'9',	':',	';',	'<',	'=',	'>',	'?',	0x00A1, 'A',
	'B',	'C',	'D',	'E',	'F',	'G',	'H',	'I',	'J',	'K',	'L',
	'M',	'N',	'O',	'P',	'Q',	'R',	'S',	'T',	'U',	'V',	'W',
	'X',	'Y',	'Z',	0x00C4, 0x00D6, 0x00D1, 0x00DC, 0x00A7, 0x00BF, 'a',	'b',
	'c',	'd',	'e',	'f',	'g',	'h',	'i',	'j',	'k',	'l',	'm',
	'n',	'o',	'p',	'q',	'r',	's',	't',	'u',	'v',	'w',	'x',
	'y',	'z',	0x00E4, 0x00F6, 0x00F1, 0x00FC, 0x00E0,
};

int sim_ef_spn(const uint8_t *ef, size_t len, char *out, size_t outlen)
{
	size_t n = 0;

	if (!outlen)
		return -ENOSPC;
	out[0] = '\0';
	if (len < 1)
		return -EINVAL;
	const uint8_t *name = ef + 1;
	size_t name_len = len - 1 > 16 ? 16 : len - 1;

	if (name_len > 0 && name[0] == 0x80) {
		for (size_t i = 1; i + 1 < name_len; i += 2) {
			uint16_t c = (uint16_t)(name[i] << 8 | name[i + 1]);
			if (c == 0xFFFF)
				break;
			/* Surrogates are no characters on their own; controls no name's. */
			if (c < 0x20 || (c >= 0x7F && c < 0xA0) || (c >= 0xD800 && c < 0xE000)) {
				out[0] = '\0';
				return -EINVAL;
			}
			size_t k = put_utf8(out + n, outlen - n, c);
			if (!k) {
				out[0] = '\0';
				return -ENOSPC;
			}
			n += k;
		}
	} else if (name_len > 0 && (name[0] == 0x81 || name[0] == 0x82)) {
		return -EINVAL; /* the compressed UCS2 forms: not seen in an SPN, not read */
	} else {
		for (size_t i = 0; i < name_len && name[i] != 0xFF; i++) {
			uint16_t c = name[i] < 0x80 ? gsm_default[name[i]] : 0;
			if (!c) {
				out[0] = '\0';
				return -EINVAL;
			}
			size_t k = put_utf8(out + n, outlen - n, c);
			if (!k) {
				out[0] = '\0';
				return -ENOSPC;
			}
			n += k;
		}
	}
	out[n] = '\0';
	return (int)n;
}

int sim_operator_id(const char *imsi, int mnc_length, char *out, size_t outlen)
{
	size_t want = 3 + (size_t)mnc_length;

	if (!outlen)
		return -ENOSPC;
	out[0] = '\0';
	if ((mnc_length != 2 && mnc_length != 3) || strlen(imsi) < want)
		return -EINVAL;
	if (strspn(imsi, "0123456789") < want)
		return -EINVAL;
	if (want + 1 > outlen)
		return -ENOSPC;
	memcpy(out, imsi, want);
	out[want] = '\0';
	return (int)want;
}
