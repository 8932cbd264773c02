/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for downlink-rate = auto (dl-auto.h): the TCP timestamp parser and the
 * controller fed with downlink packets from the network. The input is records: one byte of
 * milliseconds the clock advances, one byte of length, that many bytes of IP packet (cut at
 * the input's end). The rate must stay 0 (pass-through) or within the controller's bounds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "dl-auto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dl_auto a;
	uint64_t now = 1000000;
	uint32_t key, tsval;

	dl_auto_init(&a, now);
	while (size >= 2) {
		size_t n = data[1] <= size - 2 ? data[1] : size - 2;
		now += (uint64_t)data[0] * 1000000;
		if (dl_auto_tsval(data + 2, n, &key, &tsval) && key == 0)
			abort(); /* 0 marks an unused flow entry */
		uint64_t bps = dl_auto_packet(&a, data + 2, n, now);
		if (bps != 0 && (bps < DL_AUTO_MIN_BPS || bps > DL_AUTO_MAX_BPS))
			abort();
		data += 2 + n;
		size -= 2 + n;
	}
	return 0;
}
