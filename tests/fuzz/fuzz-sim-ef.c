/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the SIM's elementary file parsers (sim-ef.h): the input is the file
 * as a modem would hand it over; every parser reads it, into a buffer of a size the first
 * byte picks. Checked besides what the sanitizers see: the result is terminated within the
 * buffer, its length is what the parser returned, ICCID/IMSI/operator id are digits only,
 * SPN is valid UTF-8 without controls, and an error leaves the buffer empty.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim-ef.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

/* The buffer sits at the end of a larger one: the sanitizers see a write past outlen only
 * as a write into `guard`, so compare that too. */
static void check_result(int n, const char *out, size_t outlen, const char *allowed)
{
	check(memchr(out, '\0', outlen) != NULL);
	if (n < 0) {
		check(out[0] == '\0');
		return;
	}
	check((size_t)n == strlen(out) && (size_t)n < outlen);
	if (allowed)
		check(strspn(out, allowed) == (size_t)n);
}

static bool valid_utf8(const unsigned char *s)
{
	while (*s) {
		size_t k = *s < 0x80 ? 1 : (*s & 0xE0) == 0xC0 ? 2 : (*s & 0xF0) == 0xE0 ? 3 : 0;
		if (!k || (k == 1 && *s < 0x20))
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
	char buf[64 + 8], guard[8];

	if (size < 1)
		return 0;
	size_t outlen = 1 + data[0] % 64;
	data++;
	size--;
	memset(guard, 0xA5, sizeof(guard));
	memset(buf, 0xA5, sizeof(buf));

	char *out = buf;
	int n = sim_ef_iccid(data, size, out, outlen);
	check_result(n, out, outlen, "0123456789");
	check(n != 0 && n <= SIM_EF_ICCID_MAX);

	n = sim_ef_imsi(data, size, out, outlen);
	check_result(n, out, outlen, "0123456789");
	check(n < 0 || (n >= 6 && n <= SIM_EF_IMSI_MAX));
	if (n > 0) {
		char imsi[SIM_EF_IMSI_MAX + 1], id[7];
		memcpy(imsi, out, (size_t)n + 1);
		int mnc = sim_ef_ad_mnc_length(data, size);
		check(mnc == 2 || mnc == 3 || mnc == -EINVAL || mnc == -ENODATA);
		int k = sim_operator_id(imsi, mnc, id, sizeof(id));
		check_result(k, id, sizeof(id), "0123456789");
		check(k < 0 || (k == 3 + mnc && memcmp(id, imsi, (size_t)k) == 0));
	}

	n = sim_ef_spn(data, size, out, outlen);
	check_result(n, out, outlen, NULL);
	check(n <= SIM_EF_SPN_MAX);
	check(n < 0 || valid_utf8((const unsigned char *)out));
	check(memcmp(buf + 64, guard, 8) == 0);
	return 0;
}
