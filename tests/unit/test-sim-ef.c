/* SPDX-License-Identifier: MIT */
/*
 * The SIM's elementary files to text (sim-ef.h): vectors written from TS 102 221 / 31.102 /
 * 23.038, padding, every malformed case, and output buffers too small by one.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sim-ef.h"
#include "test-case.h"

TEST(iccid)
{
	/* 89 99 00 10 00 00 00 00 00 6F: nibbles swapped, the 20th digit is padding. */
	static const uint8_t ef[] = { 0x98, 0x99, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF6 };
	char out[SIM_EF_ICCID_MAX + 1];

	EXPECT_EQ(sim_ef_iccid(ef, sizeof(ef), out, sizeof(out)), 19);
	EXPECT_STR_EQ(out, "8999001000000000006");
	/* Exactly enough room, and one byte less. */
	EXPECT_EQ(sim_ef_iccid(ef, sizeof(ef), out, 20), 19);
	EXPECT_EQ(sim_ef_iccid(ef, sizeof(ef), out, 19), -ENOSPC);
	EXPECT_STR_EQ(out, "");
	/* A hex digit, a digit after the padding, nothing but padding, nothing at all. */
	EXPECT_EQ(sim_ef_iccid((const uint8_t[]){ 0x98, 0xA9 }, 2, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_iccid((const uint8_t[]){ 0xF8, 0x99 }, 2, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_iccid((const uint8_t[]){ 0xFF, 0xFF }, 2, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_iccid(ef, 0, out, sizeof(out)), -EINVAL);
	EXPECT_STR_EQ(out, "");
	/* More than 20 digits is no ICCID. */
	uint8_t big[11];
	memset(big, 0x11, sizeof(big));
	EXPECT_EQ(sim_ef_iccid(big, sizeof(big), out, sizeof(out)), -EINVAL);
}

TEST(imsi)
{
	/* 001010000000006: length 8, parity nibble 9 (odd, IMSI) under digit 1. */
	static const uint8_t ef[] = { 0x08, 0x09, 0x10, 0x10, 0x00, 0x00, 0x00, 0x00, 0x60 };
	char out[SIM_EF_IMSI_MAX + 1];

	EXPECT_EQ(sim_ef_imsi(ef, sizeof(ef), out, sizeof(out)), 15);
	EXPECT_STR_EQ(out, "001010000000006");
	EXPECT_EQ(sim_ef_imsi(ef, sizeof(ef), out, 15), -ENOSPC);
	/* An even IMSI of 14 digits: 'F' in the last high nibble. */
	static const uint8_t even[] = { 0x08, 0x29, 0x43, 0x65, 0x87, 0x09, 0x21, 0x43, 0xF5 };
	EXPECT_EQ(sim_ef_imsi(even, sizeof(even), out, sizeof(out)), 14);
	EXPECT_STR_EQ(out, "23456789012345");
	/* Length byte 0, beyond the file, above 8; too few digits; a hex digit. */
	EXPECT_EQ(sim_ef_imsi((const uint8_t[]){ 0x00, 0x09 }, 2, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_imsi(ef, 8, out, sizeof(out)), -EINVAL);
	uint8_t v[10] = { 0x09, 0x09 };
	EXPECT_EQ(sim_ef_imsi(v, sizeof(v), out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_imsi((const uint8_t[]){ 0x03, 0x09, 0x10, 0xF0 }, 4, out, sizeof(out)),
		  -EINVAL);
	EXPECT_EQ(
		sim_ef_imsi((const uint8_t[]){ 0x04, 0x09, 0x10, 0x10, 0xB0 }, 5, out, sizeof(out)),
		-EINVAL);
	EXPECT_STR_EQ(out, "");
	EXPECT_EQ(sim_ef_imsi(ef, 1, out, sizeof(out)), -EINVAL);
}

TEST(ad)
{
	EXPECT_EQ(sim_ef_ad_mnc_length((const uint8_t[]){ 0, 0, 0, 2 }, 4), 2);
	EXPECT_EQ(sim_ef_ad_mnc_length((const uint8_t[]){ 0x80, 0, 0, 0xF3, 0 }, 5), 3);
	EXPECT_EQ(sim_ef_ad_mnc_length((const uint8_t[]){ 0, 0, 0 }, 3), -ENODATA);
	EXPECT_EQ(sim_ef_ad_mnc_length((const uint8_t[]){ 0, 0, 0, 0x0F }, 4), -EINVAL);
}

TEST(spn)
{
	char out[SIM_EF_SPN_MAX + 1];
	uint8_t ef[17];

	memset(ef, 0xFF, sizeof(ef));
	ef[0] = 0x01;
	memcpy(ef + 1, "qmapd test", 10);
	EXPECT_EQ(sim_ef_spn(ef, sizeof(ef), out, sizeof(out)), 10);
	EXPECT_STR_EQ(out, "qmapd test");
	EXPECT_EQ(sim_ef_spn(ef, sizeof(ef), out, 10), -ENOSPC);
	EXPECT_STR_EQ(out, "");
	/* The GSM alphabet's own characters: '@' is 0x00, 'ö' 0x7C, '$' 0x02. */
	memcpy(ef + 1, "\x00\x7c\x02", 3);
	ef[4] = 0xFF;
	EXPECT_EQ(sim_ef_spn(ef, sizeof(ef), out, sizeof(out)), 4);
	EXPECT_STR_EQ(out, "@\xc3\xb6$");
	/* Sixteen characters, no padding; a longer file is read up to the name's 16. */
	uint8_t full[20];
	memset(full, 'A', sizeof(full));
	full[0] = 0;
	EXPECT_EQ(sim_ef_spn(full, sizeof(full), out, sizeof(out)), 16);
	/* UCS2: 0x80, then big-endian characters, 0xFFFF padding. */
	uint8_t u[17];
	memset(u, 0xFF, sizeof(u));
	memcpy(u, "\x00\x80\x00\x4e\x04\x1c\x20\xac", 8);
	EXPECT_EQ(sim_ef_spn(u, sizeof(u), out, sizeof(out)), 1 + 2 + 3);
	EXPECT_STR_EQ(out, "N\xd0\x9c\xe2\x82\xac");
	/* A surrogate, a control, the escape, a byte with bit 8, the 0x81 form: refused. */
	memcpy(u + 2, "\xd8\x00", 2);
	EXPECT_EQ(sim_ef_spn(u, sizeof(u), out, sizeof(out)), -EINVAL);
	memcpy(u + 2, "\x00\x0a", 2);
	EXPECT_EQ(sim_ef_spn(u, sizeof(u), out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_spn((const uint8_t[]){ 0, 'a', 0x1B, 'b' }, 4, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_spn((const uint8_t[]){ 0, 'a', 0xC0 }, 3, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_ef_spn((const uint8_t[]){ 0, 0x81, 2, 0 }, 4, out, sizeof(out)), -EINVAL);
	/* Only a display condition: an empty name; no byte at all: no file. */
	EXPECT_EQ(sim_ef_spn(ef, 1, out, sizeof(out)), 0);
	EXPECT_EQ(sim_ef_spn(ef, 0, out, sizeof(out)), -EINVAL);
}

TEST(operator_id)
{
	char out[7];

	EXPECT_EQ(sim_operator_id("001010000000006", 2, out, sizeof(out)), 5);
	EXPECT_STR_EQ(out, "00101");
	EXPECT_EQ(sim_operator_id("310260000000006", 3, out, sizeof(out)), 6);
	EXPECT_STR_EQ(out, "310260");
	EXPECT_EQ(sim_operator_id("310260000000006", 3, out, 6), -ENOSPC);
	EXPECT_EQ(sim_operator_id("31026", 3, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_operator_id("001010000000006", 4, out, sizeof(out)), -EINVAL);
	EXPECT_EQ(sim_operator_id("00a010000000006", 2, out, sizeof(out)), -EINVAL);
}
