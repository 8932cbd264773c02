/* SPDX-License-Identifier: MIT */
/* headroom = auto: the attach/detach decision and its hysteresis. */
#include "headroom.h"
#include "test-util.h"

int main(void)
{
	/* Too little traffic decides nothing, whatever the share. */
	EXPECT_TRUE(headroom_want_xdp(true, HEADROOM_MIN_PACKETS - 1, HEADROOM_MIN_PACKETS - 1));
	EXPECT_TRUE(!headroom_want_xdp(false, 10, 0));

	/* Mostly merged (bulk TCP): detach; mostly single packets: attach. */
	EXPECT_TRUE(!headroom_want_xdp(true, 10000, 9000));
	EXPECT_TRUE(headroom_want_xdp(false, 10000, 1000));

	/* Between the thresholds the current mode stays: no flapping near break-even. */
	EXPECT_TRUE(headroom_want_xdp(true, 10000, 5600));
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 5600));
	EXPECT_TRUE(headroom_want_xdp(true, 10000, 6500)); /* exactly at the edge: stays */
	EXPECT_TRUE(!headroom_want_xdp(true, 10000, 6501));
	EXPECT_TRUE(!headroom_want_xdp(false, 10000, 4500)); /* exactly at the edge: stays */
	EXPECT_TRUE(headroom_want_xdp(false, 10000, 4499));
	return test_result("test-headroom");
}
