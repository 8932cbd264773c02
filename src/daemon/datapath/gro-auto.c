/* SPDX-License-Identifier: MIT */
/* GRO skipped per mux while nothing merges, tried again with back-off (gro-auto.h). */
#include <string.h>

#include "gro-auto.h"

void gro_auto_init(struct gro_auto *a)
{
	memset(a, 0, sizeof(*a));
	a->backoff = 1;
}

bool gro_auto_window(struct gro_auto *a, uint64_t packets, uint64_t merged)
{
	if (a->skip) {
		if (--a->left == 0) {
			a->skip = false;
			a->trying = true;
		}
		return a->skip;
	}
	if (packets < GRO_AUTO_MIN_PACKETS)
		return false; /* a try stays a try until a window long enough to tell */
	double share = (double)merged / (double)packets;
	if (a->trying) {
		a->trying = false;
		if (share >= GRO_AUTO_RESUME_AT) {
			a->backoff = 1;
			a->resumes++;
			return false;
		}
		/* Still nothing worth it: skip longer before the next try. */
		if (a->backoff < GRO_AUTO_BACKOFF_MAX)
			a->backoff *= 2;
	} else {
		if (share >= GRO_AUTO_SKIP_BELOW)
			return false;
		a->backoff = 1;
		a->skips++;
	}
	a->skip = true;
	a->left = a->backoff;
	return true;
}
