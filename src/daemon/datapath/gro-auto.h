/* SPDX-License-Identifier: MIT */
/*
 * GRO only where it merges. Trying to merge costs every packet a parse, a flow key and a look
 * through the held flows; where nothing merges (many small flows: a router serving a LAN,
 * QUIC, DNS) that was 0.07-0.30x of the floor's time per packet for nothing
 * (tests/bench/RESULTS.md, "GRO device, nothing merges"). A merged segment saves a whole write
 * (~0.8x of the floor), so GRO pays from a merged share of about a tenth.
 *
 * Per mux, on headroom.c's windows of segments (HEADROOM_WINDOW_PACKETS, or the timer's for
 * slower traffic): a window in which less than GRO_AUTO_SKIP_BELOW of the segments left merged
 * makes the next windows skip the attempt (each packet written alone with the same virtio-net
 * header GRO gives a lone packet, gro_alone_header()). What the skipped windows would have merged
 * is not known, so every so often one window tries again: after 1 skipped window, then 2, 4 ...
 * GRO_AUTO_BACKOFF_MAX while the tries keep finding nothing, and a try that merges
 * GRO_AUTO_RESUME_AT or more turns GRO back on (the gap between the two thresholds keeps a
 * share near them from flapping). At 2048 segments a window, bulk TCP starting on a skipping
 * mux is merged again within GRO_AUTO_BACKOFF_MAX + 1 windows (at most ~67 000 packets, ~0.1 s
 * at 600 kpps), and traffic that never merges pays the attempt in one window of
 * GRO_AUTO_BACKOFF_MAX + 1 (~3%).
 *
 * Pure: no I/O, no clock.
 */
#ifndef QMAPD_GRO_AUTO_H
#define QMAPD_GRO_AUTO_H

#include <stdbool.h>
#include <stdint.h>

#define GRO_AUTO_SKIP_BELOW  0.10
#define GRO_AUTO_RESUME_AT   0.20
#define GRO_AUTO_BACKOFF_MAX 32
#define GRO_AUTO_MIN_PACKETS 1000 /* a shorter window (the timer's) decides nothing */

struct gro_auto {
	bool skip;	  /* this window: packets go out alone, no merge attempt */
	bool trying;	  /* this window tries GRO again after skipped ones */
	unsigned left;	  /* skipped windows before the next try */
	unsigned backoff; /* skipped windows between tries now */
	uint64_t skips;	  /* times GRO was switched to skipping */
	uint64_t resumes; /* times a try turned it back on */
};

void gro_auto_init(struct gro_auto *a);

/*
 * A window ended: packets segments, of which merged left in super-packets (meaningful only if
 * the window did not skip). Returns whether the next window skips GRO.
 */
bool gro_auto_window(struct gro_auto *a, uint64_t packets, uint64_t merged);

#endif
