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
 * Raises: a cut at t = 0 left 10 Mbit/s; arrivals at 10 Mbit/s (what an application asks for),
 * no delay. Each window lets 500000 bits go at 10 Mbit/s and 500000 arrive. Windows closing at
 * 50..150 ms: fewer than four windows of rates in force in the ring, no raise. 200: 2000000 of
 * 2000000 (>= 95%) raises 1% (doublings of 250 ms since the cut: 0) -> 10100000; 250: the
 * ring let 500000 * 3 + 505000 go, 2000000 arrived, 2% -> 10302000; 300, 350, 400 2% (ring
 * 2020100, 2045502, 2081412: 95% of each is below 2000000) -> 10508040, 10718200, 10932564;
 * 450: the ring let 515100 + 525402 + 535910 + 546628 = 2123040 go, 95% of it 2016888 is more
 * than arrived: the shaper is not the limit, no raise, and none after. The cell gets faster at
 * 500 ms (20 Mbit/s, two packets per ms): windows closing at 550..700 raise 4% (2 doublings)
 * and 750 8% (capped): 11369866, 11824660, 12297646, 12789551, 13812715.
 */
TEST(raise_steps)
{
	struct dl_auto a;
	uint64_t t;

	dl_auto_init(&a, 0);
	a.bps = 10000000;
	a.last_cut = 0;
	for (t = 0; t < 200; t++)
		EXPECT_EQ(feed(&a, t, 0, 1250), 10000000u);
	EXPECT_EQ(feed(&a, t++, 0, 1250), 10100000u);
	for (; t < 500; t++)
		feed(&a, t, 0, 1250);
	EXPECT_EQ(a.bps, 10932564u);
	for (; t <= 550; t++) {
		feed(&a, t, 0, 1250);
		feed(&a, t, 0, 1250);
	}
	EXPECT_EQ(a.bps, 11369866u);
	for (; t <= 750; t++) {
		feed(&a, t, 0, 1250);
		feed(&a, t, 0, 1250);
	}
	EXPECT_EQ(a.bps, 13812715u);
	EXPECT_EQ(a.raises, 10u);
}

/*
 * A faster cell found within 2 s (issue 26), even right after a cut. The shaper sits at 15
 * Mbit/s, the cell delivers 80; the senders are clocked by the shaper: each millisecond brings
 * what the rate in force 20 ms earlier (the bench's round trip) let go, with no queue in front
 * of qmapd. The windows of [0, 200 ms) fill the ring; a cut lands at 200 ms, the worst moment:
 * the step starts again at 1%. Every window from 200 ms on raises, 1% at 200..400, 2% at
 * 450..650, 4% at 700..900, 8% from 950 (rates truncated to bit/s):
 * 15150000 15301500 15454515 15609060 15765150, 16080453 16402062 16730103 17064705 17405999,
 * 18102238 18826327 19579380 20362555 21177057, 22871221 24700918 26676991 28811150 31116042
 * 33605325 36293751 39197251 42333031 45719673 49377246 53327425 57593619: 70% of 80 Mbit/s
 * at 1550 ms, 1.35 s after the cut. Before the raises were measured against the rates then in
 * force, what arrived trailed the newest rate and every second raise failed: 3.1 s in the
 * bench.
 */
TEST(raise_within_2s)
{
	static uint64_t rate_at[1600];
	struct dl_auto a;
	uint64_t t;

	dl_auto_init(&a, 0);
	a.bps = 15000000;
	for (t = 0; t < 1600; t++) {
		if (t == 200)
			a.last_cut = 200 * MS;
		uint64_t r = t < 20 ? 15000000 : rate_at[t - 20];
		rate_at[t] = feed(&a, t, 0, (uint32_t)(r / 8000));
		if (t == 199)
			EXPECT_EQ(a.bps, 15000000u);
		if (t == 900)
			EXPECT_EQ(a.bps, 21177057u);
		if (t == 1500)
			EXPECT_EQ(a.bps, 53327425u);
	}
	EXPECT_EQ(a.bps, 57593619u);
	EXPECT_EQ(a.raises, 28u);
	EXPECT_EQ(a.cuts, 0u);
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
