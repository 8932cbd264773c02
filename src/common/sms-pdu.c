/* SPDX-License-Identifier: MIT */
/* SMS-DELIVER decoding and SMS-SUBMIT encoding (sms-pdu.h); TS 23.040 and TS 23.038. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sms-pdu.h"

/* TS 23.038 6.2.1: the default alphabet, septet -> Unicode. 0x1B escapes to the extension. */
static const uint16_t gsm7_default[128] = {
	0x0040, 0x00A3, 0x0024, 0x00A5, 0x00E8, 0x00E9, 0x00F9, 0x00EC, 0x00F2, 0x00C7, 0x000A,
	0x00D8, 0x00F8, 0x000D, 0x00C5, 0x00E5, 0x0394, 0x005F, 0x03A6, 0x0393, 0x039B, 0x03A9,
	0x03A0, 0x03A8, 0x03A3, 0x0398, 0x039E, 0x00A0, 0x00C6, 0x00E6, 0x00DF, 0x00C9, 0x0020,
	0x0021, 0x0022, 0x0023, 0x00A4, 0x0025, 0x0026, 0x0027, 0x0028, 0x0029, 0x002A, 0x002B,
	0x002C, 0x002D, 0x002E, 0x002F, 0x0030, 0x0031, 0x0032, 0x0033, 0x0034, 0x0035, 0x0036,
	0x0037, 0x0038, 0x0039, 0x003A, 0x003B, 0x003C, 0x003D, 0x003E, 0x003F, 0x00A1, 0x0041,
	0x0042, 0x0043, 0x0044, 0x0045, 0x0046, 0x0047, 0x0048, 0x0049, 0x004A, 0x004B, 0x004C,
	0x004D, 0x004E, 0x004F, 0x0050, 0x0051, 0x0052, 0x0053, 0x0054, 0x0055, 0x0056, 0x0057,
	0x0058, 0x0059, 0x005A, 0x00C4, 0x00D6, 0x00D1, 0x00DC, 0x00A7, 0x00BF, 0x0061, 0x0062,
	0x0063, 0x0064, 0x0065, 0x0066, 0x0067, 0x0068, 0x0069, 0x006A, 0x006B, 0x006C, 0x006D,
	0x006E, 0x006F, 0x0070, 0x0071, 0x0072, 0x0073, 0x0074, 0x0075, 0x0076, 0x0077, 0x0078,
	0x0079, 0x007A, 0x00E4, 0x00F6, 0x00F1, 0x00FC, 0x00E0,
};

#define GSM7_ESCAPE 0x1B

/* TS 23.038 6.2.1.1: the extension table's characters (after an escape). */
static const struct {
	uint8_t septet;
	uint16_t ch;
} gsm7_extension[] = {
	{ 0x0A, 0x000C }, { 0x14, 0x005E }, { 0x28, 0x007B }, { 0x29, 0x007D }, { 0x2F, 0x005C },
	{ 0x3C, 0x005B }, { 0x3D, 0x007E }, { 0x3E, 0x005D }, { 0x40, 0x007C }, { 0x65, 0x20AC },
};

/* ---- UTF-8 ------------------------------------------------------------------------------ */

/* Append code point c; false when it does not fit (with the terminator). */
static bool utf8_put(char *out, size_t outlen, size_t *n, uint32_t c)
{
	uint8_t b[4];
	size_t k;

	if (c < 0x80) {
		b[0] = (uint8_t)c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = (uint8_t)(0xC0 | c >> 6);
		b[1] = (uint8_t)(0x80 | (c & 0x3F));
		k = 2;
	} else if (c < 0x10000) {
		b[0] = (uint8_t)(0xE0 | c >> 12);
		b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
		b[2] = (uint8_t)(0x80 | (c & 0x3F));
		k = 3;
	} else {
		b[0] = (uint8_t)(0xF0 | c >> 18);
		b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F));
		b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
		b[3] = (uint8_t)(0x80 | (c & 0x3F));
		k = 4;
	}
	if (*n + k >= outlen)
		return false;
	memcpy(out + *n, b, k);
	*n += k;
	out[*n] = '\0';
	return true;
}

/* The next code point of s at *i, or -1 for invalid UTF-8 (overlong, surrogate, > U+10FFFF). */
static int32_t utf8_next(const char *s, size_t *i)
{
	const uint8_t *p = (const uint8_t *)s + *i;
	uint32_t c;
	size_t k;

	if (p[0] < 0x80) {
		*i += 1;
		return p[0];
	}
	if ((p[0] & 0xE0) == 0xC0) {
		c = p[0] & 0x1F;
		k = 2;
	} else if ((p[0] & 0xF0) == 0xE0) {
		c = p[0] & 0x0F;
		k = 3;
	} else if ((p[0] & 0xF8) == 0xF0) {
		c = p[0] & 0x07;
		k = 4;
	} else
		return -1;
	for (size_t j = 1; j < k; j++) {
		if ((p[j] & 0xC0) != 0x80)
			return -1;
		c = c << 6 | (p[j] & 0x3F);
	}
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (c < min[k] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return -1;
	*i += k;
	return (int32_t)c;
}

/* ---- the GSM 7-bit alphabet ------------------------------------------------------------- */

/* The septets of c: 1 (default table), 2 (escape + extension), 0 (no place in GSM 7-bit). */
static int gsm7_encode_char(uint32_t c, uint8_t s[2])
{
	for (unsigned i = 0; i < 128; i++)
		if (gsm7_default[i] == c && i != GSM7_ESCAPE) {
			s[0] = (uint8_t)i;
			return 1;
		}
	for (size_t i = 0; i < sizeof(gsm7_extension) / sizeof(gsm7_extension[0]); i++)
		if (gsm7_extension[i].ch == c) {
			s[0] = GSM7_ESCAPE;
			s[1] = gsm7_extension[i].septet;
			return 2;
		}
	return 0;
}

/* Septet i of packed data starting `shift` bits into the first byte (TS 23.038 6.1.2.1.1). */
static uint8_t septet_at(const uint8_t *p, size_t bit)
{
	size_t byte = bit / 8, off = bit % 8;
	unsigned v = p[byte] >> off;

	if (off > 1)
		v |= (unsigned)p[byte + 1] << (8 - off);
	return (uint8_t)(v & 0x7F);
}

/* Unpack n septets from bit `first` into UTF-8. A lone escape at the end, or an escape
 * before a septet the extension table lacks, is read as the default table's character
 * (TS 23.038: shown as a space / the default character); false only when out is full. */
static bool gsm7_unpack(const uint8_t *p, size_t first, size_t n, char *out, size_t outlen)
{
	size_t w = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		uint8_t s = septet_at(p, first + i * 7);
		uint32_t c = gsm7_default[s];
		if (s == GSM7_ESCAPE) {
			c = 0x20;
			if (i + 1 < n) {
				uint8_t e = septet_at(p, first + (i + 1) * 7);
				c = gsm7_default[e];
				for (size_t k = 0;
				     k < sizeof(gsm7_extension) / sizeof(gsm7_extension[0]); k++)
					if (gsm7_extension[k].septet == e)
						c = gsm7_extension[k].ch;
				i++;
			}
		}
		if (!utf8_put(out, outlen, &w, c))
			return false;
	}
	return true;
}

/* ---- addresses and time ----------------------------------------------------------------- */

#define TON_INTERNATIONAL  1
#define TON_ALPHANUMERIC   5
#define ADDRESS_DIGITS_MAX 20

/* TS 23.040 9.1.2.5 with the length in digits (TP addresses) or, for the SMSC (TS 24.011
 * 8.2.5.2), in bytes after the length: semi_octets says which. Returns the bytes used. */
static int decode_address(const uint8_t *p, size_t len, bool semi_octets, char *out, size_t outlen)
{
	if (len < 1)
		return -EINVAL;
	size_t n = p[0];
	if (!semi_octets && n == 0) {
		out[0] = '\0';
		return 1;
	}
	size_t bytes = semi_octets ? (n + 1) / 2 : n - 1;
	if (2 + bytes > len || bytes > 10)
		return -EINVAL;
	uint8_t type = p[1];
	const uint8_t *v = p + 2;
	unsigned ton = type >> 4 & 0x07;
	size_t w = 0;

	out[0] = '\0';
	if (ton == TON_ALPHANUMERIC) {
		size_t septets = (semi_octets ? n : bytes * 2) * 4 / 7;
		if (!gsm7_unpack(v, 0, septets, out, outlen))
			return -EINVAL;
		return (int)(2 + bytes);
	}
	if (ton == TON_INTERNATIONAL)
		out[w++] = '+';
	size_t digits = semi_octets ? n : bytes * 2;
	for (size_t i = 0; i < digits; i++) {
		uint8_t d = i % 2 ? v[i / 2] >> 4 : v[i / 2] & 0x0F;
		if (d == 0x0F && i == digits - 1)
			break; /* the filler of an odd count */
		if (d == 0x0F || w + 1 >= outlen)
			return -EINVAL;
		out[w++] = "0123456789*#abc"[d];
	}
	out[w] = '\0';
	return (int)(2 + bytes);
}

static int bcd(uint8_t b)
{
	int lo = b & 0x0F, hi = b >> 4;

	return lo > 9 || hi > 9 ? -1 : lo * 10 + hi;
}

/* TS 23.040 9.2.3.11: seven semi-octet swapped bytes, the zone in quarter hours with its sign
 * in bit 3 of the swapped byte. ISO 8601 with the offset, as ModemManager shows it. */
static int decode_timestamp(const uint8_t *p, char *out, size_t outlen)
{
	unsigned v[6];

	for (int i = 0; i < 6; i++) {
		int d = bcd(p[i]);
		if (d < 0)
			return -EINVAL;
		v[i] = (unsigned)d % 100;
	}
	int tz = bcd(p[6] & 0xF7);
	if (tz < 0 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 ||
	    v[5] > 59 || tz > 14 * 4)
		return -EINVAL;
	unsigned minutes = (unsigned)tz * 15 % (15 * 60);
	snprintf(out, outlen, "%04u-%02u-%02uT%02u:%02u:%02u%c%02u:%02u", 2000 + v[0], v[1], v[2],
		 v[3], v[4], v[5], p[6] & 0x08 && minutes ? '-' : '+', minutes / 60 % 15,
		 minutes % 60);
	return 0;
}

/* ---- SMS-DELIVER ------------------------------------------------------------------------ */

#define MTI_MASK    0x03
#define MTI_DELIVER 0x00
#define MTI_SUBMIT  0x01
#define UDHI	    0x40
#define SRR	    0x20

/* TS 23.038 4: the character set and class of a DCS; -EINVAL for the reserved groups. */
static int decode_dcs(uint8_t dcs, enum sms_encoding *enc, int *klass)
{
	*klass = -1;
	*enc = SMS_ENCODING_GSM7;
	switch (dcs >> 4) {
	case 0x0 ... 0x3: /* general data coding (compressed: refused below) */
	case 0x4 ... 0x7: /* ... marked for automatic deletion */
		if (dcs & 0x20)
			return -EINVAL; /* compressed text: nobody implements TS 23.042 */
		if (dcs & 0x10)
			*klass = dcs & 0x03;
		switch (dcs >> 2 & 0x03) {
		case 0:
			*enc = SMS_ENCODING_GSM7;
			break;
		case 1:
			*enc = SMS_ENCODING_8BIT;
			break;
		case 2:
			*enc = SMS_ENCODING_UCS2;
			break;
		default:
			return -EINVAL;
		}
		return 0;
	case 0xC: /* message waiting indication groups: discard / store, GSM 7-bit */
	case 0xD:
		return 0;
	case 0xE: /* ... store, UCS-2 */
		*enc = SMS_ENCODING_UCS2;
		return 0;
	case 0xF: /* data coding / message class */
		*enc = dcs & 0x04 ? SMS_ENCODING_8BIT : SMS_ENCODING_GSM7;
		*klass = dcs & 0x03;
		return 0;
	default:
		return -EINVAL;
	}
}

static int decode_ucs2(const uint8_t *p, size_t len, char *out, size_t outlen)
{
	size_t w = 0;

	out[0] = '\0';
	for (size_t i = 0; i + 1 < len; i += 2) {
		uint32_t c = (uint32_t)p[i] << 8 | p[i + 1];
		if (c >= 0xD800 && c <= 0xDBFF && i + 3 < len) {
			uint32_t lo = (uint32_t)p[i + 2] << 8 | p[i + 3];
			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
				i += 2;
			}
		}
		if (c >= 0xD800 && c <= 0xDFFF)
			c = 0xFFFD; /* a lone surrogate: shown, not dropped */
		if (!utf8_put(out, outlen, &w, c))
			return -EINVAL;
	}
	return 0;
}

static int decode_deliver(const uint8_t *pdu, size_t len, struct sms_deliver *ret)
{
	size_t pos = 0;
	int r = decode_address(pdu, len, false, ret->smsc, sizeof(ret->smsc));

	if (r < 0)
		return r;
	pos = (size_t)r;
	if (pos >= len)
		return -EINVAL;
	uint8_t first = pdu[pos++];
	if ((first & MTI_MASK) != MTI_DELIVER)
		return -EINVAL;
	r = decode_address(pdu + pos, len - pos, true, ret->number, sizeof(ret->number));
	if (r < 0)
		return r;
	pos += (size_t)r;
	/* PID, DCS, SCTS (7), UDL */
	if (len - pos < 10)
		return -EINVAL;
	ret->pid = pdu[pos++];
	ret->dcs = pdu[pos++];
	if (decode_dcs(ret->dcs, &ret->encoding, &ret->message_class) < 0)
		return -EINVAL;
	if (decode_timestamp(pdu + pos, ret->timestamp, sizeof(ret->timestamp)) < 0)
		return -EINVAL;
	pos += 7;
	size_t udl = pdu[pos++];
	const uint8_t *ud = pdu + pos;
	size_t ud_bytes = len - pos;
	bool septets = ret->encoding == SMS_ENCODING_GSM7;
	size_t need = septets ? (udl * 7 + 7) / 8 : udl;

	if ((septets && udl > 160) || (!septets && udl > SMS_DATA_MAX) || need > ud_bytes)
		return -EINVAL;
	size_t skip = 0; /* bytes of the user data header, with its length byte */
	if (first & UDHI) {
		if (udl < 1 || ud[0] + 1u > need)
			return -EINVAL;
		skip = ud[0] + 1u;
		ret->has_udh = true;
	}
	switch (ret->encoding) {
	case SMS_ENCODING_GSM7: {
		/* The text starts at the next septet boundary after the header. */
		size_t first_septet = (skip * 8 + 6) / 7;
		if (first_septet > udl)
			return -EINVAL;
		if (!gsm7_unpack(ud, first_septet * 7, udl - first_septet, ret->text,
				 sizeof(ret->text)))
			return -EINVAL;
		break;
	}
	case SMS_ENCODING_UCS2:
		if (decode_ucs2(ud + skip, udl - skip, ret->text, sizeof(ret->text)) < 0)
			return -EINVAL;
		break;
	default:
		memcpy(ret->data, ud + skip, udl - skip);
		ret->data_len = udl - skip;
		break;
	}
	return 0;
}

int sms_pdu_decode_deliver(const uint8_t *pdu, size_t len, struct sms_deliver *ret)
{
	memset(ret, 0, sizeof(*ret));
	int r = decode_deliver(pdu, len, ret);
	if (r < 0)
		memset(ret, 0, sizeof(*ret));
	return r;
}

/* ---- SMS-SUBMIT ------------------------------------------------------------------------- */

int sms_text_encoding(const char *text)
{
	bool gsm7 = true;

	for (size_t i = 0; text[i];) {
		int32_t c = utf8_next(text, &i);
		uint8_t s[2];
		if (c < 0)
			return -EINVAL;
		if (!gsm7_encode_char((uint32_t)c, s))
			gsm7 = false;
	}
	return gsm7 ? SMS_ENCODING_GSM7 : SMS_ENCODING_UCS2;
}

/* The user data of text in enc: returns its UDL (septets or bytes) and bytes in *bytes. */
static int encode_text(const char *text, enum sms_encoding enc, uint8_t *ud, size_t *bytes)
{
	size_t n = 0;

	memset(ud, 0, SMS_DATA_MAX);
	for (size_t i = 0; text[i];) {
		uint32_t c = (uint32_t)utf8_next(text, &i);
		if (enc == SMS_ENCODING_GSM7) {
			uint8_t s[2];
			int k = gsm7_encode_char(c, s);
			if (n + (size_t)k > 160)
				return -EMSGSIZE;
			for (int j = 0; j < k; j++, n++) {
				size_t bit = n * 7, byte = bit / 8, off = bit % 8;
				ud[byte] |= (uint8_t)(s[j] << off);
				if (off > 1)
					ud[byte + 1] |= (uint8_t)(s[j] >> (8 - off));
			}
			continue;
		}
		uint16_t u[2];
		size_t k = 1;
		if (c >= 0x10000) {
			u[0] = (uint16_t)(0xD800 + ((c - 0x10000) >> 10));
			u[1] = (uint16_t)(0xDC00 + ((c - 0x10000) & 0x3FF));
			k = 2;
		} else
			u[0] = (uint16_t)c;
		if (n + k * 2 > SMS_DATA_MAX)
			return -EMSGSIZE;
		for (size_t j = 0; j < k; j++) {
			ud[n++] = (uint8_t)(u[j] >> 8);
			ud[n++] = (uint8_t)u[j];
		}
	}
	*bytes = enc == SMS_ENCODING_GSM7 ? (n * 7 + 7) / 8 : n;
	return (int)n;
}

int sms_pdu_encode_submit(const char *number, const char *text, uint8_t *out, size_t outlen)
{
	uint8_t ud[SMS_DATA_MAX];
	uint8_t pdu[SMS_PDU_MAX];
	size_t n = 0, ud_bytes = 0;
	bool international = number[0] == '+';
	const char *digits = number + international;
	size_t nd = strlen(digits);

	if (nd < 1 || nd > ADDRESS_DIGITS_MAX || strspn(digits, "0123456789") != nd)
		return -EINVAL;
	int enc = sms_text_encoding(text);
	if (enc < 0)
		return enc;
	int udl = encode_text(text, (enum sms_encoding)enc, ud, &ud_bytes);
	if (udl < 0)
		return udl;

	pdu[n++] = 0x00;	/* no SMSC address: the SIM's */
	pdu[n++] = MTI_SUBMIT;	/* no validity period, no status report, no header */
	pdu[n++] = 0x00;	/* TP-MR: the modem assigns it */
	pdu[n++] = (uint8_t)nd; /* TP-DA: digits, then type, then BCD swapped */
	pdu[n++] = international ? 0x91 : 0x81;
	for (size_t i = 0; i < nd; i += 2) {
		uint8_t lo = (uint8_t)(digits[i] - '0');
		uint8_t hi = i + 1 < nd ? (uint8_t)(digits[i + 1] - '0') : 0x0F;
		pdu[n++] = (uint8_t)(hi << 4 | lo);
	}
	pdu[n++] = 0x00;				   /* TP-PID */
	pdu[n++] = enc == SMS_ENCODING_GSM7 ? 0x00 : 0x08; /* TP-DCS, no class */
	pdu[n++] = (uint8_t)udl;
	memcpy(pdu + n, ud, ud_bytes);
	n += ud_bytes;
	if (n > outlen)
		return -ENOSPC;
	memcpy(out, pdu, n);
	return (int)n;
}
