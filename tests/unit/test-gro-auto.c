/* SPDX-License-Identifier: MIT */
/* gro-auto.h: GRO skipped while nothing merges, tried again with back-off, resumed. */
#include "gro-auto.h"
#include "test-case.h"

#define W 2048 /* a window's segments (headroom.h) */

/* Windows of traffic merging share; returns how many of them tried GRO (did not skip). */
static unsigned windows(struct gro_auto *a, unsigned n, double share)
{
	unsigned tried = 0;

	for (unsigned i = 0; i < n; i++) {
		bool skipping = a->skip;
		tried += !skipping;
		/* A skipped window merges nothing: GRO was not asked. */
		gro_auto_window(a, W, skipping ? 0 : (uint64_t)(W * share));
	}
	return tried;
}

TEST(nothing_merges)
{
	struct gro_auto a;

	gro_auto_init(&a);
	EXPECT_TRUE(!a.skip);
	/* One window decides. */
	EXPECT_TRUE(gro_auto_window(&a, W, 0));
	EXPECT_EQ(a.skips, 1);
	/* Tries after 1, 2, 4 ... GRO_AUTO_BACKOFF_MAX skipped windows. */
	unsigned expect_left = 1;
	for (unsigned k = 0; k < 8; k++) {
		EXPECT_EQ(a.left, expect_left);
		for (unsigned i = 0; i < expect_left; i++)
			EXPECT_EQ(gro_auto_window(&a, W, 0), i + 1 < expect_left);
		EXPECT_TRUE(a.trying);
		EXPECT_TRUE(gro_auto_window(&a, W, 0)); /* the try found nothing */
		if (expect_left < GRO_AUTO_BACKOFF_MAX)
			expect_left *= 2;
	}
	EXPECT_EQ(a.left, GRO_AUTO_BACKOFF_MAX);
	/* Settled, GRO is tried in 1 window of GRO_AUTO_BACKOFF_MAX + 1. */
	unsigned tried = windows(&a, 33 * 100, 0);
	EXPECT_EQ(tried, 100);
	EXPECT_EQ(a.resumes, 0);
}

TEST(bulk_never_skips)
{
	struct gro_auto a;

	gro_auto_init(&a);
	EXPECT_EQ(windows(&a, 1000, 0.9), 1000);
	EXPECT_EQ(a.skips, 0);
	/* Just above the threshold: still merging. */
	EXPECT_EQ(windows(&a, 1000, GRO_AUTO_SKIP_BELOW + 0.01), 1000);
	EXPECT_EQ(a.skips, 0);
}

/* Bulk TCP starts on a skipping mux: merged again within GRO_AUTO_BACKOFF_MAX + 1 windows. */
TEST(resume)
{
	struct gro_auto a;

	gro_auto_init(&a);
	windows(&a, 1000, 0);
	EXPECT_TRUE(a.skip || a.trying);
	unsigned n = 0;
	while ((a.skip || a.trying) && n < 100) {
		bool skipping = a.skip;
		gro_auto_window(&a, W, skipping ? 0 : W * 9 / 10);
		n++;
	}
	EXPECT_TRUE(n <= GRO_AUTO_BACKOFF_MAX + 1);
	EXPECT_TRUE(!a.skip && !a.trying);
	EXPECT_EQ(a.resumes, 1);
	EXPECT_EQ(a.backoff, 1);
	EXPECT_EQ(windows(&a, 100, 0.9), 100);
}

/* Between the thresholds the state stays: merging goes on, skipping goes on. */
TEST(hysteresis)
{
	struct gro_auto a;
	double mid = (GRO_AUTO_SKIP_BELOW + GRO_AUTO_RESUME_AT) / 2;

	gro_auto_init(&a);
	EXPECT_EQ(windows(&a, 100, mid), 100);
	EXPECT_EQ(a.skips, 0);
	gro_auto_window(&a, W, 0);
	EXPECT_TRUE(a.skip);
	windows(&a, 1000, mid);
	EXPECT_EQ(a.resumes, 0);
	windows(&a, 100, GRO_AUTO_RESUME_AT + 0.01);
	EXPECT_EQ(a.resumes, 1);
}

/* The timer's short windows decide nothing while merging; skipped ones still count down. */
TEST(short_windows)
{
	struct gro_auto a;

	gro_auto_init(&a);
	EXPECT_TRUE(!gro_auto_window(&a, GRO_AUTO_MIN_PACKETS - 1, 0));
	EXPECT_EQ(a.skips, 0);
	EXPECT_TRUE(gro_auto_window(&a, GRO_AUTO_MIN_PACKETS, 0));
	EXPECT_TRUE(!gro_auto_window(&a, 3, 0)); /* the one skipped window ends */
	EXPECT_TRUE(a.trying);
	EXPECT_TRUE(!gro_auto_window(&a, 3, 0)); /* a try needs a long enough window */
	EXPECT_TRUE(a.trying);
	EXPECT_TRUE(gro_auto_window(&a, W, 0));
	EXPECT_TRUE(!a.trying);
}
