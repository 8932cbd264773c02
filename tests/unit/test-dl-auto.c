/* SPDX-License-Identifier: MIT */
/*
 * downlink-rate = auto (dl-auto.h): the TCP timestamp parser, and the rate's cuts, raises and
 * returns to pass-through against hand-computed timelines on a fake clock (one packet per
 * millisecond unless said otherwise; windows close with the first packet 50 ms after the last
 * close).
 */
#include <string.h>

#include "dl-auto.h"
#include "macro.h"
#include "test-case.h"

#define MS 1000000ULL

/* IPv4/TCP from 198.51.100.1:sport to 192.0.2.2:5201, len bytes, timestamps NOP NOP TS. */
static void make_tcp4(uint8_t *p, uint32_t len, uint16_t sport, uint32_t tsval)
{
	memset(p, 0, len);
	p[0] = 0x45;
	p[2] = len >> 8;
	p[3] = len & 0xff;
	p[8] = 64;
	p[9] = 6;
	memcpy(p + 12, (uint8_t[]){ 198, 51, 100, 1, 192, 0, 2, 2 }, 8);
	uint8_t *t = p + 20;
	t[0] = sport >> 8;
	t[1] = sport & 0xff;
	t[2] = 5201 >> 8;
	t[3] = 5201 & 0xff;
	t[12] = 8 << 4; /* 32 bytes: 12 of options */
	t[20] = 1;
	t[21] = 1;
	t[22] = 8;
	t[23] = 10;
	t[24] = (uint8_t)(tsval >> 24);
	t[25] = (uint8_t)(tsval >> 16);
	t[26] = (uint8_t)(tsval >> 8);
	t[27] = (uint8_t)tsval;
}

TEST(tsval_parse)
{
	uint8_t p[1500];
	uint32_t key = 0, ts = 0, key2 = 0;

	make_tcp4(p, sizeof(p), 40000, 0x01020304);
	EXPECT_TRUE(dl_auto_tsval(p, sizeof(p), &key, &ts));
	EXPECT_EQ(ts, 0x01020304u);
	EXPECT_TRUE(key != 0);
	make_tcp4(p, sizeof(p), 40001, 7);
	EXPECT_TRUE(dl_auto_tsval(p, sizeof(p), &key2, &ts));
	EXPECT_TRUE(key2 != key); /* another port, another flow */
	/* Truncated inside the options, a later fragment, UDP, no timestamp option: no sample. */
	EXPECT_EQ(dl_auto_tsval(p, 50, &key, &ts), false);
	p[6] = 0x00;
	p[7] = 0xb9;
	EXPECT_EQ(dl_auto_tsval(p, sizeof(p), &key, &ts), false);
	make_tcp4(p, sizeof(p), 40000, 1);
	p[9] = 17;
	EXPECT_EQ(dl_auto_tsval(p, sizeof(p), &key, &ts), false);
	make_tcp4(p, sizeof(p), 40000, 1);
	p[20 + 22] = 4; /* SACK permitted, length 10 would run past: the walk stops */
	EXPECT_EQ(dl_auto_tsval(p, sizeof(p), &key, &ts), false);
	/* A bad option length (1) ends the walk too. */
	make_tcp4(p, sizeof(p), 40000, 1);
	p[20 + 23] = 1;
	EXPECT_EQ(dl_auto_tsval(p, sizeof(p), &key, &ts), false);

	/* IPv6: next header TCP right after the fixed header. */
	uint8_t v6[100] = { 0x60 };
	v6[6] = 6;
	v6[40 + 12] = 8 << 4;
	v6[40 + 20] = 8;
	v6[40 + 21] = 10;
	v6[40 + 25] = 42;
	EXPECT_TRUE(dl_auto_tsval(v6, sizeof(v6), &key, &ts));
	EXPECT_EQ(ts, 42u);
	v6[6] = 0; /* hop-by-hop options first: skipped */
	EXPECT_EQ(dl_auto_tsval(v6, sizeof(v6), &key, &ts), false);
}

/*
 * One 1250-byte packet at t ms (10 Mbit/s of arrivals at one a millisecond), sent at
 * t - extra ms of the sender's clock (which runs 1000000 ms ahead of ours): extra is the
 * queue it waited in.
 */
static uint64_t feed(struct dl_auto *a, uint64_t t, uint32_t extra, uint32_t len)
{
	uint8_t p[1250];

	make_tcp4(p, sizeof(p), 40000, (uint32_t)(1000000 + t - extra));
	return dl_auto_packet(a, p, len, t * MS);
}

/*
 * The base station's queue grows by 0.1 ms per ms from t = 500 ms. Window minima: [600, 650)
 * 10 ms (not above 12), [650, 700) 15 ms (bloat 1 of 4), [700, 750) 20 ms (2 of 4): the cut
 * comes with the packet at 750, to 90% of the 10 Mbit/s that arrived over the last four
 * windows. Then no cut for 300 ms although every window is bloated: the next comes at 1050,
 * to 90% of min(arrived, 9 Mbit/s).
 */
TEST(cut_on_bloat)
{
	struct dl_auto a;
	uint64_t t;

	dl_auto_init(&a, 0);
	for (t = 0; t < 750; t++)
		EXPECT_EQ(feed(&a, t, t < 500 ? 0 : (uint32_t)(t - 500) / 10, 1250), 0u);
	EXPECT_EQ(a.cuts, 0u);
	EXPECT_EQ(feed(&a, 750, 25, 1250), 9000000u);
	EXPECT_EQ(a.cuts, 1u);
	for (t = 751; t < 1050; t++)
		EXPECT_EQ(feed(&a, t, (uint32_t)(t - 500) / 10, 1250), 9000000u);
	EXPECT_EQ(feed(&a, 1050, 55, 1250), 8100000u);
	EXPECT_EQ(a.cuts, 2u);
	/* [1000, 1050): 50 ms, less what the baseline crept up meanwhile (under 1 ms). */
	EXPECT_TRUE(a.delay_ns > 49 * (int64_t)MS && a.delay_ns <= 50 * (int64_t)MS);
}

/* One bloated window alone (a burst, a stall) is no cut. */
TEST(single_spike_no_cut)
{
	struct dl_auto a;

	dl_auto_init(&a, 0);
	for (uint64_t t = 0; t < 1000; t++)
		feed(&a, t, t >= 400 && t < 450 ? 30 : 0, 1250);
	EXPECT_EQ(a.cuts, 0u);
	EXPECT_EQ(a.bps, 0u);
}

/*
 * Raises: a cut at t = 0 left 10 Mbit/s; arrivals at 10 Mbit/s, no delay. Windows closing at
 * 50..200 ms raise 1% each (doublings of 250 ms since the cut: 0), 250 ms 2%:
 * 10000000 -> 10100000 -> 10201000 -> 10303010 -> 10406040 -> 10614160. At 300 ms the rate is
 * above arrivals / 95% (10614160 * 0.95 = 10083452 > 10 Mbit/s): the shaper is not the limit,
 * no raise. The cell gets faster at 500 ms (20 Mbit/s, two packets per ms): windows closing at
 * 550..700 raise 4% (2 doublings) and 750 8% (capped): 11038726, 11480275, 11939486,
 * 12417065, 13410430.
 */
TEST(raise_steps)
{
	struct dl_auto a;
	uint64_t t;

	dl_auto_init(&a, 0);
	a.bps = 10000000;
	a.last_cut = 0;
	for (t = 0; t <= 250; t++)
		feed(&a, t, 0, 1250);
	EXPECT_EQ(a.bps, 10614160u);
	for (; t < 500; t++)
		feed(&a, t, 0, 1250);
	EXPECT_EQ(a.bps, 10614160u);
	for (; t <= 550; t++) {
		feed(&a, t, 0, 1250);
		feed(&a, t, 0, 1250);
	}
	EXPECT_EQ(a.bps, 11038726u);
	for (; t <= 750; t++) {
		feed(&a, t, 0, 1250);
		feed(&a, t, 0, 1250);
	}
	EXPECT_EQ(a.bps, 13410430u);
	EXPECT_EQ(a.raises, 10u);
}

/* No timestamps for 10 s (UDP only): nothing to steer by, back to pass-through. */
TEST(silent_pass_through)
{
	struct dl_auto a;
	uint8_t p[1250];

	dl_auto_init(&a, 0);
	a.bps = 10000000;
	make_tcp4(p, sizeof(p), 40000, 0);
	p[9] = 17;
	for (uint64_t t = 1; t < 10000; t++)
		EXPECT_EQ(dl_auto_packet(&a, p, sizeof(p), t * MS), 10000000u);
	EXPECT_EQ(dl_auto_packet(&a, p, sizeof(p), 10000 * MS), 0u);
}

/* Bloat at 2 Gbit/s (a CPU stall looks like one): no shaper. */
TEST(gigabit_stays_pass_through)
{
	struct dl_auto a;

	dl_auto_init(&a, 0);
	/* 250000 bytes per ms as 1250-byte packets, 200 per ms; the queue grows from 100 ms. */
	for (uint64_t t = 0; t < 1000; t++)
		for (int i = 0; i < 200; i++)
			EXPECT_EQ(feed(&a, t, t < 100 ? 0 : (uint32_t)(t - 100) / 5, 1250), 0u);
	EXPECT_TRUE(a.cuts >= 1);
}

/*
 * Just above 1 Gbit/s (1.05: 105 packets of 1250 bytes per ms) a cut to 90% would land at
 * 945 Mbit/s, under the pass-through bound: what arrived decides, and it stays off.
 */
TEST(just_above_gigabit_stays_pass_through)
{
	struct dl_auto a;

	dl_auto_init(&a, 0);
	for (uint64_t t = 0; t < 1000; t++)
		for (int i = 0; i < 105; i++)
			EXPECT_EQ(feed(&a, t, t < 100 ? 0 : (uint32_t)(t - 100) / 5, 1250), 0u);
	EXPECT_TRUE(a.cuts >= 1);
}

/*
 * A path at 2 Gbit/s stalls: 600 ms of 1250 bytes per ms (10 Mbit/s) with the delay growing,
 * as a host whose CPU is busy elsewhere delivers. The 2 Gbit/s window 0.1 s before says it is
 * no cellular link: no cut.
 */
TEST(stall_after_gigabit_no_cut)
{
	struct dl_auto a;
	uint64_t t;

	dl_auto_init(&a, 0);
	for (t = 0; t < 200; t++)
		for (int i = 0; i < 200; i++)
			feed(&a, t, 0, 1250);
	for (; t < 800; t++)
		EXPECT_EQ(feed(&a, t, (uint32_t)(t - 200) / 5, 1250), 0u);
	EXPECT_TRUE(a.cuts >= 1);
}
