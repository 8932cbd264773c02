/* SPDX-License-Identifier: MIT */
/*
 * The SIM's elementary files as a modem hands them over raw (QMI UIM Read Transparent):
 * EF_ICCID, EF_IMSI, EF_AD and EF_SPN to text. Pure functions over untrusted bytes: every
 * length is checked, the output is always terminated (or left empty on error), never
 * written past outlen. Coding: ETSI TS 102 221 (ICCID), 3GPP TS 31.102 (IMSI, AD, SPN),
 * TS 23.038 (the GSM default alphabet of SPN).
 */
#ifndef QMAPD_SIM_EF_H
#define QMAPD_SIM_EF_H

#include <stddef.h>
#include <stdint.h>

#define SIM_EF_ICCID_MAX 20 /* digits */
#define SIM_EF_IMSI_MAX	 15
#define SIM_EF_SPN_MAX	 (16 * 3) /* 16 characters, each at most 3 bytes of UTF-8 */

/*
 * EF_ICCID: BCD, two digits a byte with the first in the low nibble, 'F' after the last.
 * Returns the number of digits (at least 1), or -EINVAL for a nibble that is no digit
 * before the padding, or anything but padding after it; -ENOSPC when out is too small.
 */
int sim_ef_iccid(const uint8_t *ef, size_t len, char *out, size_t outlen);

/*
 * EF_IMSI: a length byte (1..8, within the file), then the first digit in the high nibble
 * of the next byte after a parity/type nibble, then two digits a byte as above. Returns the
 * number of digits (6..15), or -EINVAL / -ENOSPC.
 */
int sim_ef_imsi(const uint8_t *ef, size_t len, char *out, size_t outlen);

/* EF_AD: the MNC length (2 or 3) from the low nibble of its fourth byte, or -ENODATA when
 * the file is too short to say, -EINVAL for another value. */
int sim_ef_ad_mnc_length(const uint8_t *ef, size_t len);

/*
 * EF_SPN: a display condition byte, then 16 bytes of name in the GSM default alphabet
 * (unpacked, 0xFF padding) or UCS2 (first byte 0x80, big endian, 0xFFFF padding). Returns
 * the UTF-8 length of the name (0 for an empty name), or -EINVAL (an unknown coding, a
 * character that has no place in a name) / -ENOSPC.
 */
int sim_ef_spn(const uint8_t *ef, size_t len, char *out, size_t outlen);

/* MCC and MNC: the IMSI's first 3 + mnc_length digits. -EINVAL when the IMSI is shorter or
 * mnc_length is not 2 or 3, -ENOSPC. */
int sim_operator_id(const char *imsi, int mnc_length, char *out, size_t outlen);

#endif
