/* SPDX-License-Identifier: MIT */
/*
 * headroom = auto (ARCHITECTURE.md, "Where the two lessons pull against each other"): an XDP
 * program on a TAP gives every small write 256 bytes of headroom for free, but sends every
 * GRO super-packet through generic XDP, which reallocates and linearizes it. Once a second,
 * per mux, look at the share of downlink segments that left merged: above
 * HEADROOM_DETACH_ABOVE detach the program, below HEADROOM_ATTACH_BELOW attach it again
 * (hysteresis around the measured break-even near 56%). Too little traffic decides nothing.
 * The same tick compares qmapd's successful writes with the device's rx_packets: a packet
 * dropped inside generic XDP leaves no other trace.
 */
#ifndef QMAPD_HEADROOM_H
#define QMAPD_HEADROOM_H

#include "datapath.h"

#define HEADROOM_INTERVAL_SECONDS 1.0
#define HEADROOM_MIN_PACKETS	  1000
#define HEADROOM_DETACH_ABOVE	  0.65
#define HEADROOM_ATTACH_BELOW	  0.45

/* Pure: the mode a mux should be in next, given its merged share over the last interval. */
bool headroom_want_xdp(bool xdp_now, uint64_t packets, uint64_t merged);

/* One tick for every mux of the datapath. */
void headroom_tick(struct datapath *dp);

#endif
