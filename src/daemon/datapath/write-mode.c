/* SPDX-License-Identifier: MIT */
/* Per mux: writev per packet or io_uring per batch, whichever measured cheaper (write-mode.h). */
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "write-mode.h"

void write_mode_init(struct write_mode *w, bool uring_available)
{
	memset(w, 0, sizeof(*w));
	w->mode = WRITE_MODE_WRITEV;
	w->why = WRITE_MODE_WHY_UNMEASURED;
	w->interval = WRITE_MODE_PROBE_MIN;
	w->countdown = 1; /* the first batch starts the first probe */
	w->hint = -1;
	if (!uring_available)
		write_mode_force(w, WRITE_MODE_WRITEV, WRITE_MODE_WHY_NO_URING);
}

void write_mode_force(struct write_mode *w, enum write_mode_kind mode, enum write_mode_why why)
{
	w->mode = mode;
	w->why = why;
	w->probing = false;
}

static bool write_mode_fixed(const struct write_mode *w)
{
	return w->why == WRITE_MODE_WHY_NO_URING || w->why == WRITE_MODE_WHY_FORCED;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void probe_end(struct write_mode *w)
{
	w->probing = false;
	for (int m = 0; m < _WRITE_MODE_MAX; m++)
		w->ns[m] = median(w->sample[m], w->n[m]);
	w->probes++;
	w->why = WRITE_MODE_WHY_MEASURED;
	enum write_mode_kind other =
		w->mode == WRITE_MODE_URING ? WRITE_MODE_WRITEV : WRITE_MODE_URING;
	if (w->ns[other] * 100 < w->ns[w->mode] * (100 - WRITE_MODE_MARGIN_PCT)) {
		w->mode = other;
		w->switches++;
		w->interval = WRITE_MODE_PROBE_MIN;
	} else if (w->interval < WRITE_MODE_PROBE_MAX) {
		w->interval *= 2;
	}
	w->countdown = w->interval;
}

enum write_mode_kind write_mode_batch_begin(struct write_mode *w, bool *ret_measure)
{
	*ret_measure = false;
	if (write_mode_fixed(w))
		return w->mode;
	if (!w->probing) {
		if (--w->countdown > 0)
			return w->mode;
		w->probing = true;
		w->tries = 0;
		w->n[WRITE_MODE_WRITEV] = w->n[WRITE_MODE_URING] = 0;
	}
	if (w->tries == WRITE_MODE_PROBE_TRIES) {
		/* Too few batches of this mux alone: another mux's choice, try again later. */
		w->probing = false;
		w->countdown = w->interval;
		if (w->hint >= 0 && w->why != WRITE_MODE_WHY_MEASURED) {
			if (w->mode != (enum write_mode_kind)w->hint)
				w->switches++;
			w->mode = (enum write_mode_kind)w->hint;
			w->why = WRITE_MODE_WHY_OTHER_MUX;
		}
		return w->mode;
	}
	/* Alternate; once a mode has its samples, the other one until it has them too. */
	enum write_mode_kind m = (w->tries++ & 1) ? WRITE_MODE_URING : WRITE_MODE_WRITEV;
	if (w->n[m] == WRITE_MODE_PROBE_BATCHES)
		m = m == WRITE_MODE_URING ? WRITE_MODE_WRITEV : WRITE_MODE_URING;
	*ret_measure = true;
	return m;
}

void write_mode_batch_end(struct write_mode *w, enum write_mode_kind mode, uint64_t ns,
			  uint64_t packets)
{
	if (!w->probing || packets == 0 || w->n[mode] == WRITE_MODE_PROBE_BATCHES)
		return;
	w->sample[mode][w->n[mode]++] = (double)ns / (double)packets;
	if (w->n[WRITE_MODE_WRITEV] == WRITE_MODE_PROBE_BATCHES &&
	    w->n[WRITE_MODE_URING] == WRITE_MODE_PROBE_BATCHES)
		probe_end(w);
}

void write_mode_batch_skip(struct write_mode *w)
{
	/* Nothing learnt; write_mode_batch_begin() counts the try against the probe's limit. */
	(void)w;
}

const char *write_mode_name(enum write_mode_kind m)
{
	return m == WRITE_MODE_URING ? "io_uring" : "writev";
}

const char *write_mode_why_name(enum write_mode_why why)
{
	static const char *const names[_WRITE_MODE_WHY_MAX] = {
		[WRITE_MODE_WHY_UNMEASURED] = "unmeasured", [WRITE_MODE_WHY_MEASURED] = "measured",
		[WRITE_MODE_WHY_NO_URING] = "no-io-uring",  [WRITE_MODE_WHY_FORCED] = "forced",
		[WRITE_MODE_WHY_OTHER_MUX] = "other-mux",
	};
	return (unsigned)why < ARRAY_SIZE(names) ? names[why] : "unknown";
}
