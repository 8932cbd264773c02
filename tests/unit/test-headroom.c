/* SPDX-License-Identifier: MIT */
/* headroom = auto: the attach/detach decision, its hysteresis, windows and rate limit. */
#include "datapath-internal.h"
#include "headroom.h"
#include "test-case.h"

/* Long ago: the rate limit does not apply. */
#define LONG_AGO 1e9

TEST(want_xdp)
{
	/* Too little traffic decides nothing, whatever the share. */
	EXPECT_TRUE(headroom_want_xdp(true, HEADROOM_MIN_PACKETS - 1, HEADROOM_MIN_PACKETS - 1,
				      LONG_AGO));
	EXPECT_TRUE(!headroom_want_xdp(false, 10, 0, LONG_AGO));

	/* Mostly merged (bulk TCP): detach; mostly single packets: attach. */
	EXPECT_TRUE(!headroom_want_xdp(true, 10000, 9000, LONG_AGO));
	EXPECT_TRUE(headroom_want_xdp(false, 10000, 1000, LONG_AGO));

	/* Between the thresholds the current mode stays: no flapping near break-even. */
	EXPECT_TRUE(headroom_want_xdp(true, 10000, 5600, LONG_AGO));
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 5600, LONG_AGO));
	EXPECT_TRUE(
		headroom_want_xdp(true, 10000, 6500, LONG_AGO)); /* exactly at the edge: stays */
	EXPECT_TRUE(!headroom_want_xdp(true, 10000, 6501, LONG_AGO));
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 4500, LONG_AGO)); /* exactly at the edge */
	EXPECT_TRUE(headroom_want_xdp(false, 10000, 4499, LONG_AGO));

	/* One window is enough to decide, in both directions. */
	EXPECT_GE(HEADROOM_WINDOW_PACKETS, HEADROOM_MIN_PACKETS);
	EXPECT_TRUE(headroom_want_xdp(false, HEADROOM_WINDOW_PACKETS, 0, LONG_AGO));
	EXPECT_TRUE(!headroom_want_xdp(true, HEADROOM_WINDOW_PACKETS, HEADROOM_WINDOW_PACKETS,
				       LONG_AGO));
}

TEST(rate_limit)
{
	/* Right after a switch nothing switches back, however clear the share. */
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 0, 0.0));
	EXPECT_TRUE(headroom_want_xdp(true, 10000, 10000, 0.0));
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 0, HEADROOM_MIN_SWITCH_SECONDS * 0.99));
	EXPECT_TRUE(headroom_want_xdp(true, 10000, 10000, HEADROOM_MIN_SWITCH_SECONDS * 0.99));
	/* From then on it may. */
	EXPECT_TRUE(headroom_want_xdp(false, 10000, 0, HEADROOM_MIN_SWITCH_SECONDS));
	EXPECT_TRUE(!headroom_want_xdp(true, 10000, 10000, HEADROOM_MIN_SWITCH_SECONDS));
	/* The limit does not shortcut the hysteresis or the minimum. */
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 5000, 10.0));
	EXPECT_TRUE(!headroom_want_xdp(false, HEADROOM_MIN_PACKETS - 1, 0, 10.0));

	/* Traffic that alternates every window switches at most once per limit. */
	double t = 0, last = -LONG_AGO, window = 0.01; /* 2048 segments at ~200 kpps */
	bool xdp = true;
	unsigned switches = 0;
	for (unsigned i = 0; i < 1000; i++, t += window) {
		uint64_t merged = (i % 2) ? 0 : HEADROOM_WINDOW_PACKETS;
		bool want = headroom_want_xdp(xdp, HEADROOM_WINDOW_PACKETS, merged, t - last);
		if (want != xdp) {
			EXPECT_TRUE(t - last >= HEADROOM_MIN_SWITCH_SECONDS);
			switches++;
			last = t;
			xdp = want;
		}
	}
	EXPECT_TRUE(switches > 0);
	EXPECT_TRUE(switches <= (unsigned)(1000 * window / HEADROOM_MIN_SWITCH_SECONDS) + 1);
}

/* The receive batch's hook decides (and starts a new window) only once a window is full. */
TEST(window)
{
	static struct datapath dp;
	static struct gro gro;
	struct mux m = { .dp = &dp, .gro = &gro, .headroom = CONFIG_HEADROOM_AUTO };

	m.nd.kind = NETDEV_KIND_TUN; /* no XDP to switch: only the window's bookkeeping runs */
	EXPECT_TRUE(!headroom_window_full(HEADROOM_WINDOW_PACKETS - 1));
	EXPECT_TRUE(headroom_window_full(HEADROOM_WINDOW_PACKETS));

	gro.stats.packets = HEADROOM_WINDOW_PACKETS - 1;
	gro.stats.segments_merged = 1000;
	headroom_batch_done(&dp, &m);
	EXPECT_EQ(m.hr.last_packets, 0);

	gro.stats.packets = HEADROOM_WINDOW_PACKETS;
	headroom_batch_done(&dp, &m);
	EXPECT_EQ(m.hr.last_packets, HEADROOM_WINDOW_PACKETS);
	EXPECT_EQ(m.hr.last_merged, 1000);

	/* The next window counts from there. */
	gro.stats.packets = 2 * HEADROOM_WINDOW_PACKETS - 1;
	headroom_batch_done(&dp, &m);
	EXPECT_EQ(m.hr.last_packets, HEADROOM_WINDOW_PACKETS);
	gro.stats.packets = 3 * HEADROOM_WINDOW_PACKETS;
	headroom_batch_done(&dp, &m);
	EXPECT_EQ(m.hr.last_packets, 3 * HEADROOM_WINDOW_PACKETS);
}
