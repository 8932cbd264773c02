/* SPDX-License-Identifier: MIT */
/*
 * downlink-rate = auto: the downlink shaper's rate from the delay that builds up in front of
 * qmapd (dl = downlink). Pure: no I/O, no clock (callers pass `now` in nanoseconds), no
 * allocation.
 *
 * The signal is the one-way delay of the downlink's own TCP packets: a sender stamps each
 * segment with its clock (TSval, RFC 7323; Linux, the BSDs and Windows tick in milliseconds),
 * so arrival time minus TSval is the one-way delay plus a per-connection offset. Its minimum
 * over the flow's life is the empty path; what arrives above it waited in a queue between the
 * sender and qmapd: the base station's buffer, the only one the shaper exists to empty.
 * qmapd's own queue is behind the measuring point and never counts. No probe traffic, no
 * reflector to choose; flows without timestamps (UDP, QUIC) give no sample.
 *
 * Per window of DL_AUTO_WINDOW_NS the smallest delay any packet saw is the standing queue.
 * Bloat (above DL_AUTO_DELAY_HIGH_NS in 2 of the last 4 windows, as cake-autorate counts
 * detections over a few samples) cuts the rate to 90% of what arrived over the last windows
 * (the link delivered that much: it was saturated), then no cut for DL_AUTO_REFRACTORY_NS
 * while the buffer drains. While the delay stays below DL_AUTO_DELAY_LOW_NS and what arrived
 * over the last windows is DL_AUTO_LOAD_PCT or more of what the rates then in force let go
 * (the link delivers all the shaper releases: it may deliver more), the rate rises by a step
 * that starts at 1% per window after a cut and
 * doubles every DL_AUTO_STEP_DOUBLE_NS without bloat, up to 8%: gently just above the rate the
 * last cut found, fast when the cell became faster (4x in ~1.5 s). It starts with no shaper
 * (pass-through) and goes back to it when what arrived before a cut, or in a window of the
 * last 2 s, reached DL_AUTO_MAX_BPS (not a cellular rate: the delay is a stalled CPU, not a
 * base station) or no sample came for DL_AUTO_SILENT_NS (nothing to steer by: do no harm).
 *
 * Baselines: the minimum per flow falls at once and rises by 1/512 of the gap per window, so
 * clock drift between the hosts (up to ~0.1 ms/s) does not read as a growing queue.
 */
#ifndef QMAPD_DL_AUTO_H
#define QMAPD_DL_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DL_AUTO_WINDOW_NS      50000000ULL
#define DL_AUTO_DELAY_HIGH_NS  12000000ULL
#define DL_AUTO_DELAY_LOW_NS   4000000ULL
#define DL_AUTO_REFRACTORY_NS  300000000ULL
#define DL_AUTO_STEP_DOUBLE_NS 250000000ULL
#define DL_AUTO_SILENT_NS      10000000000ULL
#define DL_AUTO_FLOW_IDLE_NS   10000000000ULL /* a flow entry this old starts afresh */
#define DL_AUTO_PEAK_HOLD_NS   2000000000ULL  /* a window that fast this recently: no cut */
#define DL_AUTO_MAX_BPS	       1000000000ULL
#define DL_AUTO_MIN_BPS	       1000000ULL
#define DL_AUTO_CUT_PCT	       90
#define DL_AUTO_LOAD_PCT       95
#define DL_AUTO_UP_MIN_PCT     1
#define DL_AUTO_UP_MAX_PCT     8
#define DL_AUTO_FLOWS	       64
#define DL_AUTO_RATE_WINDOWS   4 /* the arrival rate a cut uses: the last 200 ms */
#define DL_AUTO_BASE_UP_SHIFT  9 /* baselines rise by 1/512 of the gap per window */

struct dl_auto_flow {
	uint32_t key;	    /* hash of the 5-tuple; 0 = unused */
	int64_t base_us;    /* lowest arrival - TSval seen, microseconds */
	int64_t win_min_us; /* this window's lowest, INT64_MAX: none */
	uint64_t seen;	    /* last sample */
};

struct dl_auto {
	uint64_t bps; /* the shaper's rate; 0 = pass-through */
	uint64_t window_start;
	uint64_t window_bytes;
	int64_t window_delay_ns;		/* the window's smallest delay; -1: no sample */
	uint64_t arrived[DL_AUTO_RATE_WINDOWS]; /* bytes of the last windows, ring */
	uint64_t arrived_ns[DL_AUTO_RATE_WINDOWS];
	uint64_t allowed_bits[DL_AUTO_RATE_WINDOWS]; /* what the rate then let go; 0: none */
	unsigned arrived_next;
	uint8_t bloat_hist; /* bit 0: the last window was bloated */
	uint64_t peak_bps;  /* the fastest window's arrivals lately */
	uint64_t peak_at;
	uint64_t last_cut;
	uint64_t last_sample;
	/* For qmapctl stats. */
	int64_t delay_ns; /* the last window's, -1: none */
	uint64_t cuts;
	uint64_t raises;
	struct dl_auto_flow flows[DL_AUTO_FLOWS];
};

void dl_auto_init(struct dl_auto *a, uint64_t now);

/* A downlink IP packet of len bytes arrived at now. Returns the shaper's rate (0: pass-through). */
uint64_t dl_auto_packet(struct dl_auto *a, const uint8_t *pkt, size_t len, uint64_t now);

/* A TCP packet's flow key and TSval; false without a timestamp option (exposed for tests). */
bool dl_auto_tsval(const uint8_t *pkt, size_t len, uint32_t *ret_key, uint32_t *ret_tsval);

#endif
