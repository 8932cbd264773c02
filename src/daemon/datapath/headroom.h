/* SPDX-License-Identifier: MIT */
/*
 * headroom = auto (docs/ARCHITECTURE.md, "Where the two lessons pull against each other"): an XDP
 * program on a TAP gives every small write 256 bytes of headroom for free, but sends every
 * GRO super-packet through generic XDP, which reallocates and linearizes it. Per mux, look at
 * the share of downlink segments that left merged: above HEADROOM_DETACH_ABOVE detach the
 * program, below HEADROOM_ATTACH_BELOW attach it again (hysteresis around the measured
 * break-even near 56%).
 *
 * When: after every HEADROOM_WINDOW_PACKETS segments (checked once per receive batch), and
 * on the timer for whatever accumulated below that (at least HEADROOM_MIN_PACKETS). A window
 * counted in segments follows the traffic as fast as it changes: at the ~45 kpps of
 * tests/bench/headroom.sh a window is ~45 ms, where a 1 s tick left ~30 000 packets
 * re-expanded after bulk TCP gave way to small UDP (tests/bench/RESULTS.md). 2048 segments
 * are still enough to measure a share: a TCP run is 17 segments per write, so a window holds
 * ~120 super-packets. A switch is a BPF load and a netlink call: at most one per
 * HEADROOM_MIN_SWITCH_SECONDS per mux, so traffic that alternates faster than that cannot
 * turn it into a storm; the decision of a window that comes too early is dropped, the next
 * window decides on fresh traffic.
 *
 * The timer alone compares qmapd's successful writes with the device's rx_packets (a packet
 * dropped inside generic XDP leaves no other trace): a count, so once a second sees every
 * drop, for one netlink query per mux per second whatever the packet rate.
 */
#ifndef QMAPD_HEADROOM_H
#define QMAPD_HEADROOM_H

#include "datapath.h"
#include "macro.h"

#define HEADROOM_INTERVAL_SECONDS   1.0
#define HEADROOM_MIN_PACKETS	    1000
#define HEADROOM_WINDOW_PACKETS	    2048
#define HEADROOM_MIN_SWITCH_SECONDS 0.1
#define HEADROOM_DETACH_ABOVE	    0.65
#define HEADROOM_ATTACH_BELOW	    0.45

/*
 * Pure: the mode a mux should be in next, given the segments since its last decision (packets,
 * of which merged left in super-packets) and the seconds since its last switch.
 */
bool headroom_want_xdp(bool xdp_now, uint64_t packets, uint64_t merged, double since_switch);

/* Pure: a window of segments is complete, decide now rather than on the timer. */
static inline bool headroom_window_full(uint64_t packets)
{
	return packets >= HEADROOM_WINDOW_PACKETS;
}

/* Decide for one mux on the segments since its last decision. */
void headroom_decide(struct datapath *dp, struct mux *m);

/* The receive batch's hook for a mux with GRO: one compare unless a window is complete. */
static inline void headroom_batch_done(struct datapath *dp, struct mux *m)
{
	if (_unlikely_(headroom_window_full(m->gro->stats.packets - m->hr.last_packets)))
		headroom_decide(dp, m);
}

/* The once-a-second tick for one mux: the silent-drop check, then a decision. */
void headroom_tick(struct datapath *dp, struct mux *m);

#endif
