/* SPDX-License-Identifier: MIT */
/* downlink-rate = auto (dl-auto.h): one-way delay from TCP timestamps, the rate from it. */
#include <string.h>

#include "dl-auto.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t mix(uint32_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u; /* FNV-1a */
	return h;
}

bool dl_auto_tsval(const uint8_t *pkt, size_t len, uint32_t *ret_key, uint32_t *ret_tsval)
{
	size_t l4;
	uint32_t key = 2166136261u;

	if (len < 1)
		return false;
	if (pkt[0] >> 4 == 4) {
		if (len < 20 || pkt[9] != 6 || (get32(pkt + 4) & 0x1fff) != 0)
			return false; /* not TCP, or a later fragment */
		l4 = (size_t)(pkt[0] & 15) * 4;
		key = mix(key, pkt + 12, 8);
	} else if (pkt[0] >> 4 == 6) {
		if (len < 40 || pkt[6] != 6)
			return false; /* extension headers: no sample, rare on TCP */
		l4 = 40;
		key = mix(key, pkt + 8, 32);
	} else {
		return false;
	}
	if (l4 < 20 || len < l4 + 20)
		return false;
	const uint8_t *tcp = pkt + l4;
	size_t doff = (size_t)(tcp[12] >> 4) * 4;
	if (doff < 20 || len < l4 + doff)
		return false;
	key = mix(key, tcp, 4);
	for (size_t i = 20; i < doff;) {
		uint8_t kind = tcp[i];
		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= doff || tcp[i + 1] < 2 || i + tcp[i + 1] > doff)
			break;
		if (kind == 8 && tcp[i + 1] == 10) {
			*ret_key = key ? key : 1;
			*ret_tsval = get32(tcp + i + 2);
			return true;
		}
		i += tcp[i + 1];
	}
	return false;
}

void dl_auto_init(struct dl_auto *a, uint64_t now)
{
	memset(a, 0, sizeof(*a));
	a->window_start = now;
	a->window_delay_ns = -1;
	a->delay_ns = -1;
	a->last_sample = now;
	for (unsigned i = 0; i < DL_AUTO_FLOWS; i++)
		a->flows[i].win_min_us = INT64_MAX;
}

/* One delay sample: the packet's one-way delay above its flow's baseline. */
static void sample(struct dl_auto *a, uint32_t key, uint32_t tsval, uint64_t now)
{
	struct dl_auto_flow *f = &a->flows[key % DL_AUTO_FLOWS];
	/* Milliseconds of our clock minus the sender's: the offset cancels against the base. */
	uint32_t now_ms = (uint32_t)(now / 1000000);
	int64_t raw_us = (int64_t)(int32_t)(now_ms - tsval) * 1000;

	if (f->key != key || now - f->seen > DL_AUTO_FLOW_IDLE_NS) {
		f->key = key;
		f->base_us = raw_us;
		f->win_min_us = INT64_MAX;
	}
	f->seen = now;
	if (raw_us < f->base_us)
		f->base_us = raw_us;
	if (raw_us < f->win_min_us)
		f->win_min_us = raw_us;
	int64_t d = (raw_us - f->base_us) * 1000;
	if (a->window_delay_ns < 0 || d < a->window_delay_ns)
		a->window_delay_ns = d;
	a->last_sample = now;
}

static uint64_t arrived_bps(const struct dl_auto *a)
{
	uint64_t bytes = 0, ns = 0;

	for (unsigned i = 0; i < DL_AUTO_RATE_WINDOWS; i++) {
		bytes += a->arrived[i];
		ns += a->arrived_ns[i];
	}
	return ns ? bytes * 8 * 1000000000ULL / ns : 0;
}

/*
 * The shaper was the limit over the last windows: what arrived reached DL_AUTO_LOAD_PCT of
 * what the rates then in force let go. Against those rates, not today's: the senders are
 * clocked by what the shaper released, so while the rate climbs what arrives trails the
 * newest rate by a raise or two, and a test against it held back every other raise (20 -> 80
 * Mbit/s took 3.1 s). A pass-through window in the ring: no rate to compare, no raise yet.
 */
static bool loaded(const struct dl_auto *a)
{
	uint64_t bits = 0, allowed = 0;

	for (unsigned i = 0; i < DL_AUTO_RATE_WINDOWS; i++) {
		if (a->allowed_bits[i] == 0)
			return false;
		bits += a->arrived[i] * 8;
		allowed += a->allowed_bits[i];
	}
	return bits * 100 >= allowed * DL_AUTO_LOAD_PCT;
}

static void window_close(struct dl_auto *a, uint64_t now)
{
	uint64_t elapsed = now - a->window_start;
	bool bloated = a->window_delay_ns > (int64_t)DL_AUTO_DELAY_HIGH_NS;

	a->arrived[a->arrived_next] = a->window_bytes;
	a->arrived_ns[a->arrived_next] = elapsed;
	/* In microseconds: 1 Gbit/s for an hour still fits. */
	a->allowed_bits[a->arrived_next] = a->bps * (elapsed / 1000) / 1000000;
	a->arrived_next = (a->arrived_next + 1) % DL_AUTO_RATE_WINDOWS;
	a->bloat_hist = (uint8_t)((a->bloat_hist << 1 | bloated) & 15);
	/* The fastest window of the last DL_AUTO_PEAK_HOLD_NS: a stall must not hide it. */
	uint64_t w = elapsed ? a->window_bytes * 8 * 1000000000ULL / elapsed : 0;
	if (w >= a->peak_bps || now - a->peak_at >= DL_AUTO_PEAK_HOLD_NS) {
		a->peak_bps = w;
		a->peak_at = now;
	}
	a->delay_ns = a->window_delay_ns;

	if (bloated && __builtin_popcount(a->bloat_hist) >= 2 &&
	    now - a->last_cut >= DL_AUTO_REFRACTORY_NS) {
		/* The link was saturated: what arrived is its rate. */
		uint64_t r = arrived_bps(a);
		if (a->bps && a->bps < r)
			r = a->bps;
		/*
		 * Delivered above DL_AUTO_MAX_BPS: no cellular link is that fast, the delay is
		 * a stall of some CPU on the way (measured: a cut to 984 Mbit/s of a 2 Gbit/s
		 * path cost a quarter of its throughput). A stall lowers what arrives as well: a
		 * window that fast in the last 2 s counts too. Pass through.
		 */
		r = r >= DL_AUTO_MAX_BPS || a->peak_bps >= DL_AUTO_MAX_BPS
			    ? 0
			    : r * DL_AUTO_CUT_PCT / 100;
		a->bps = r == 0 ? 0 : r < DL_AUTO_MIN_BPS ? DL_AUTO_MIN_BPS : r;
		a->last_cut = now;
		a->bloat_hist = 0;
		a->cuts++;
	} else if (a->bps && loaded(a) && a->window_delay_ns >= 0 &&
		   a->window_delay_ns < (int64_t)DL_AUTO_DELAY_LOW_NS) {
		uint64_t doublings = (now - a->last_cut) / DL_AUTO_STEP_DOUBLE_NS;
		unsigned pct =
			doublings >= 3 ? DL_AUTO_UP_MAX_PCT : DL_AUTO_UP_MIN_PCT << doublings;
		a->bps = a->bps * (100 + pct) / 100;
		if (a->bps > DL_AUTO_MAX_BPS)
			a->bps = 0;
		a->raises++;
	}
	if (now - a->last_sample >= DL_AUTO_SILENT_NS)
		a->bps = 0;
	/* Baselines creep up towards what the window saw: drift is not a queue. */
	for (unsigned i = 0; i < DL_AUTO_FLOWS; i++) {
		struct dl_auto_flow *f = &a->flows[i];
		if (f->win_min_us == INT64_MAX)
			continue;
		f->base_us += (f->win_min_us - f->base_us) >> DL_AUTO_BASE_UP_SHIFT;
		f->win_min_us = INT64_MAX;
	}
	a->window_start = now;
	a->window_bytes = 0;
	a->window_delay_ns = -1;
}

uint64_t dl_auto_packet(struct dl_auto *a, const uint8_t *pkt, size_t len, uint64_t now)
{
	uint32_t key, tsval;

	if (now - a->window_start >= DL_AUTO_WINDOW_NS)
		window_close(a, now);
	a->window_bytes += len;
	if (dl_auto_tsval(pkt, len, &key, &tsval))
		sample(a, key, tsval, now);
	return a->bps;
}
