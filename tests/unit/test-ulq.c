/* SPDX-License-Identifier: MIT */
/*
 * The managed uplink queue (ulq.h): CoDel's drop and mark schedule against hand-computed
 * times, DRR order and fairness, the new-flow preference, the memory bound, per-flow order,
 * flow control between muxes, the in-flight limit and the shaper.
 */
#include <math.h>

#include "macro.h"
#include "test-case.h"
#include "ulq.h"

#define MS 1000000ULL

static const struct ulq_codel_params codel_default = {
	.target_ns = ULQ_TARGET_DEFAULT_NS,
	.interval_ns = ULQ_INTERVAL_DEFAULT_NS,
	.ecn = true,
};

/* An IPv4/UDP packet of len bytes from 192.0.2.2:sport to 198.51.100.1:9, sequence in payload. */
static void make_udp4(uint8_t *p, uint32_t len, uint16_t sport, uint32_t seq, uint8_t ecn)
{
	memset(p, 0, len);
	p[0] = 0x45;
	p[1] = ecn;
	p[2] = len >> 8;
	p[3] = len & 0xff;
	p[8] = 64;
	p[9] = 17;
	memcpy(p + 12, (uint8_t[]){ 192, 0, 2, 2, 198, 51, 100, 1 }, 8);
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	p[10] = (uint8_t)(~sum >> 8);
	p[11] = (uint8_t)~sum;
	p[20] = sport >> 8;
	p[21] = sport & 0xff;
	p[23] = 9;
	memcpy(p + 28, &seq, sizeof(seq));
}

static bool ipv4_csum_ok(const uint8_t *p)
{
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static uint32_t seq_of(const struct ulq *q, uint32_t slot)
{
	uint32_t seq;
	memcpy(&seq, ulq_slot_data(q, slot) + 28, sizeof(seq));
	return seq;
}

static uint16_t sport_of(const struct ulq *q, uint32_t slot)
{
	const uint8_t *p = ulq_slot_data(q, slot);
	return (uint16_t)(p[20] << 8 | p[21]);
}

static void enqueue(struct ulq_mux *qm, uint32_t len, uint16_t sport, uint32_t seq, uint8_t ecn,
		    uint64_t now)
{
	uint32_t slot = ulq_reserve(qm->q);
	if (slot == ULQ_NONE) {
		EXPECT_NE(slot, ULQ_NONE);
		return;
	}
	make_udp4(ulq_slot_data(qm->q, slot), len, sport, seq, ecn);
	ulq_commit(qm, slot, len, 0, now);
}

static struct ulq *new_queue(uint32_t slots, uint32_t limit)
{
	struct ulq_params p = { .slots = slots, .limit_bytes = limit, .mtu = 1500 };
	struct ulq *q = NULL;
	EXPECT_EQ(ulq_new(&p, &q), 0);
	if (!q)
		exit(1);
	return q;
}

/*
 * One flow, 300 packets queued at 0, one dequeue every 10 ms (a slow link). Sojourn passes
 * 5 ms at 10 ms, so the first drop is one interval later, at 110 ms; then count = 1 and the
 * next drops follow t + 100 ms / sqrt(count) from the previous drop time:
 *   110 -> 210 (count 1) -> 280.71 (+70.71, count 2) -> 338.45 (+57.74) -> 388.45 (+50)
 *   -> 433.17 (+44.72) -> 473.99 (+40.82) -> 511.79 (+37.80) -> 547.14 (+35.36),
 * which the 10 ms steps meet at 110, 210, 290, 340, 390, 440, 480, 520, 550 ms.
 */
static const unsigned codel_steps[] = { 11, 21, 29, 34, 39, 44, 48, 52, 55 };

static void run_codel_schedule(uint8_t ecn)
{
	struct ulq *q = new_queue(512, 1 << 20);
	struct ulq_mux *qm = NULL;
	unsigned next = 0, events = 0;

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	for (uint32_t i = 0; i < 300; i++)
		enqueue(qm, 1000, 1000, i, ecn, 0);
	uint64_t before = 0;
	for (unsigned k = 0; k <= 56; k++) {
		uint32_t slot = ulq_dequeue(q, k * 10 * MS);
		EXPECT_NE(slot, ULQ_NONE);
		if (slot == ULQ_NONE)
			break;
		const uint8_t *p = ulq_slot_data(q, slot);
		uint64_t now = ecn ? qm->stats.ecn_marks : qm->stats.drops_codel;
		if (now != before) {
			EXPECT_EQ(now, before + 1);
			EXPECT_TRUE(next < ARRAY_SIZE(codel_steps));
			if (next < ARRAY_SIZE(codel_steps))
				EXPECT_EQ(k, codel_steps[next]);
			next++;
			events++;
			if (ecn) {
				/* Marked, not dropped: CE and a valid header checksum. */
				EXPECT_EQ(p[1] & 3, 3);
				EXPECT_TRUE(ipv4_csum_ok(p));
			}
		} else if (ecn) {
			EXPECT_EQ(p[1] & 3, ecn);
		}
		before = now;
		ulq_release(q, slot);
	}
	EXPECT_EQ(events, ARRAY_SIZE(codel_steps));
	EXPECT_EQ(ecn ? qm->stats.drops_codel : qm->stats.ecn_marks, 0);
	ulq_free(q);
}

TEST(codel_schedule)
{
	EXPECT_EQ(ulq_control_law(110 * MS, 100 * MS, 2), 110 * MS + 70710678);
	run_codel_schedule(0); /* Not-ECT: dropped */
	run_codel_schedule(2); /* ECT(0): marked */
	run_codel_schedule(1); /* ECT(1): marked */
}

/* Below one MTU of backlog nothing is dropped, whatever the sojourn. */
TEST(codel_mtu_floor)
{
	struct ulq *q = new_queue(64, 1 << 20);
	struct ulq_mux *qm = NULL;

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	for (uint32_t i = 0; i < 2; i++)
		enqueue(qm, 700, 1000, i, 0, 0);
	for (unsigned k = 0; k < 2; k++) {
		uint32_t slot = ulq_dequeue(q, (k + 1) * 500 * MS);
		EXPECT_NE(slot, ULQ_NONE);
		ulq_release(q, slot);
	}
	EXPECT_EQ(qm->stats.drops_codel, 0);
	EXPECT_EQ(ulq_dequeue(q, 2000 * MS), ULQ_NONE);
	ulq_free(q);
}

TEST(ecn_ipv6)
{
	uint8_t p[48] = { 0x60 };
	EXPECT_TRUE(!ulq_set_ce(p, sizeof(p))); /* Not-ECT */
	p[1] = 0x20;				/* ECT(0): traffic class 0x02 */
	EXPECT_TRUE(ulq_set_ce(p, sizeof(p)));
	EXPECT_EQ(p[1], 0x30);
	EXPECT_EQ(p[0], 0x60);
	uint8_t v4[32];
	make_udp4(v4, sizeof(v4), 0, 0, 3); /* already CE: nothing to change */
	EXPECT_TRUE(ulq_set_ce(v4, sizeof(v4)));
	EXPECT_TRUE(ipv4_csum_ok(v4));
}

/*
 * Flow A (1500-byte packets) and B (500-byte packets), both backlogged, quantum 1514.
 * A: 1514 -> 14 -> -1486 (two packets), then it is refilled to 28 and goes to the old list;
 * B: 1514 -> 1014 -> 514 -> 14 -> -486 (four); A 28 -> -1472 (one), refilled to 42;
 * B 1028 -> -472 (three); A one; B three: AABBBBABBBABBBA.
 */
TEST(drr_order)
{
	struct ulq *q = new_queue(4096, 1 << 23);
	struct ulq_mux *qm = NULL;
	char got[16] = { 0 };

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	EXPECT_NE(
		ulq_flow_index(qm, (uint8_t[28]){ 0x45, [9] = 17, [20] = 0x03, [21] = 0xe8 }, 28),
		ulq_flow_index(qm, (uint8_t[28]){ 0x45, [9] = 17, [20] = 0x07, [21] = 0xd0 }, 28));
	for (uint32_t i = 0; i < 20; i++)
		enqueue(qm, 1500, 1000, i, 0, 0);
	for (uint32_t i = 0; i < 40; i++)
		enqueue(qm, 500, 2000, i, 0, 0);
	for (unsigned i = 0; i < 15; i++) {
		uint32_t slot = ulq_dequeue(q, 0);
		got[i] = sport_of(q, slot) == 1000 ? 'A' : 'B';
		ulq_release(q, slot);
	}
	EXPECT_STR_EQ(got, "AABBBBABBBABBBA");

	/* Over a long run the bytes are shared evenly (within a quantum). */
	uint64_t bytes[2] = { 0, 0 };
	for (uint32_t i = 20; i < 400; i++) {
		enqueue(qm, 1500, 1000, i, 0, 0);
		enqueue(qm, 500, 2000, 2 * i, 0, 0);
		enqueue(qm, 500, 2000, 2 * i + 1, 0, 0);
		enqueue(qm, 500, 2000, 2 * i + 2, 0, 0);
	}
	for (unsigned i = 0; i < 600; i++) {
		uint32_t slot = ulq_dequeue(q, 0);
		bytes[sport_of(q, slot) == 1000 ? 0 : 1] += ulq_slot_len(q, slot);
		ulq_release(q, slot);
	}
	EXPECT_LT(bytes[0] > bytes[1] ? bytes[0] - bytes[1] : bytes[1] - bytes[0], 2 * 1514);
	ulq_free(q);
}

/* A sparse flow's packet overtakes the backlog of a bulk flow. */
TEST(new_flow_first)
{
	struct ulq *q = new_queue(512, 1 << 20);
	struct ulq_mux *qm = NULL;

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	for (uint32_t i = 0; i < 100; i++)
		enqueue(qm, 1500, 1000, i, 0, 0);
	for (unsigned i = 0; i < 5; i++)
		ulq_release(q, ulq_dequeue(q, 0));
	enqueue(qm, 84, 3000, 0, 0, 0); /* a ping-sized packet */
	uint32_t slot = ulq_dequeue(q, 0);
	EXPECT_EQ(sport_of(q, slot), 3000);
	ulq_release(q, slot);
	ulq_free(q);
}

/*
 * Byte limit 10000: flow A holds 10 x 1000 bytes; B's 500 bytes take the queue over the
 * limit, so half of the fattest flow (A, 10000 -> 5000 bytes: 5 packets) goes, from its head.
 */
TEST(memory_bound)
{
	struct ulq *q = new_queue(64, 10000);
	struct ulq_mux *qm = NULL;

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	for (uint32_t i = 0; i < 10; i++)
		enqueue(qm, 1000, 1000, i, 0, 0);
	EXPECT_EQ(qm->stats.drops_overlimit, 0);
	enqueue(qm, 500, 2000, 0, 0, 0);
	EXPECT_EQ(qm->stats.drops_overlimit, 5);
	EXPECT_EQ(q->backlog, 5500);
	EXPECT_EQ(qm->stats.queued_bytes, 5500);
	EXPECT_EQ(qm->stats.queued_packets, 6);
	uint32_t seq_a = 5;
	for (unsigned i = 0; i < 6; i++) {
		uint32_t slot = ulq_dequeue(q, 0);
		if (sport_of(q, slot) == 1000)
			EXPECT_EQ(seq_of(q, slot), seq_a++);
		ulq_release(q, slot);
	}
	EXPECT_EQ(seq_a, 10);
	EXPECT_EQ(ulq_dequeue(q, 0), ULQ_NONE);

	/* Out of slots: reserving one drops from the fattest flow first. */
	struct ulq *small = new_queue(4, 1 << 20);
	struct ulq_mux *sm = NULL;
	EXPECT_EQ(ulq_mux_new(small, 1, &codel_default, &sm), 0);
	for (uint32_t i = 0; i < 4; i++)
		enqueue(sm, 1000, 1000, i, 0, 0);
	EXPECT_EQ(small->n_free, 0);
	enqueue(sm, 100, 2000, 0, 0, 0);
	EXPECT_EQ(sm->stats.drops_overlimit, 2); /* half of 4000 bytes */
	EXPECT_EQ(sm->stats.queued_packets, 3);
	ulq_free(small);
	ulq_free(q);
}

/* Interleaved flows: each comes out in its own order, none lost. */
TEST(flow_order)
{
	struct ulq *q = new_queue(1024, 1 << 22);
	struct ulq_mux *qm = NULL;
	uint32_t next[8] = { 0 };

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	for (uint32_t i = 0; i < 800; i++)
		enqueue(qm, 100 + (i * 37) % 1400, (uint16_t)(5000 + i % 8), i / 8, 0, 0);
	uint32_t slot, n = 0;
	while ((slot = ulq_dequeue(q, 1 * MS)) != ULQ_NONE) {
		unsigned flow = sport_of(q, slot) - 5000;
		EXPECT_EQ(seq_of(q, slot), next[flow]);
		next[flow] = seq_of(q, slot) + 1;
		ulq_release(q, slot);
		n++;
	}
	EXPECT_EQ(n, 800);
	EXPECT_EQ(q->n_free, 1024);
	ulq_free(q);
}

/* A mux with flow off keeps its packets and does not hold up another mux. */
TEST(flow_control)
{
	struct ulq *q = new_queue(256, 1 << 20);
	struct ulq_mux *m1 = NULL, *m2 = NULL;

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &m1), 0);
	EXPECT_EQ(ulq_mux_new(q, 2, &codel_default, &m2), 0);
	for (uint32_t i = 0; i < 10; i++) {
		enqueue(m1, 1000, 1000, i, 0, 0);
		enqueue(m2, 1000, 1000, i, 0, 0);
	}
	ulq_mux_set_flow(m1, false);
	EXPECT_TRUE(ulq_sendable(q));
	for (unsigned i = 0; i < 10; i++) {
		uint32_t slot = ulq_dequeue(q, 0);
		EXPECT_EQ(ulq_slot_mux(q, slot), 2);
		ulq_release(q, slot);
	}
	EXPECT_EQ(ulq_dequeue(q, 0), ULQ_NONE);
	EXPECT_TRUE(!ulq_sendable(q));
	EXPECT_EQ(m1->stats.queued_packets, 10);
	ulq_mux_set_flow(m1, true);
	for (uint32_t i = 0; i < 10; i++) {
		uint32_t slot = ulq_dequeue(q, 0);
		EXPECT_EQ(ulq_slot_mux(q, slot), 1);
		EXPECT_EQ(seq_of(q, slot), i);
		ulq_release(q, slot);
	}
	/* A mux that goes away takes its packets with it. */
	enqueue(m2, 1000, 1000, 0, 0, 0);
	m2 = ulq_mux_free(m2);
	EXPECT_EQ(q->packets, 0);
	EXPECT_EQ(q->n_free, 256);
	ulq_free(q);
}

TEST(sojourn_percentiles)
{
	struct ulq *q = new_queue(256, 1 << 20);
	struct ulq_mux *qm = NULL;

	EXPECT_EQ(ulq_mux_new(q, 1, &codel_default, &qm), 0);
	/*
	 * 100 packets waiting 1 ms each, then one waiting 3 ms: p50 and p99 are the upper edge
	 * of the bucket of 1000 us (960..1023 us), max is exact.
	 */
	for (uint32_t i = 0; i < 100; i++) {
		enqueue(qm, 100, (uint16_t)(1000 + i), 0, 0, 10 * MS);
		ulq_release(q, ulq_dequeue(q, 11 * MS));
	}
	enqueue(qm, 100, 999, 0, 0, 10 * MS);
	ulq_release(q, ulq_dequeue(q, 13 * MS));
	ulq_mux_tick(qm, 1100 * MS);
	EXPECT_EQ(qm->stats.sojourn_p50_ns, 1024000);
	EXPECT_EQ(qm->stats.sojourn_p99_ns, 1024000);
	EXPECT_EQ(qm->stats.sojourn_max_ns, 3 * MS);
	ulq_mux_tick(qm, 2200 * MS); /* an empty window */
	EXPECT_EQ(qm->stats.sojourn_p99_ns, 0);
	ulq_free(q);
}

/*
 * The in-flight limit, by hand: limit 0, one 1000-byte transfer goes (avail 0 >= 0) and
 * completes with nothing else in flight: starved, limit += 1000. Two go (avail 1000, then 0),
 * one completes: not starved, but 1000 over the limit; the next goes and completes after all
 * of the previous ones did: starved again, limit += 0 + 1000 = 2000.
 */
TEST(dql_by_hand)
{
	struct ulq_dql d;

	ulq_dql_init(&d, 0, 1 << 20, 1000 * MS);
	EXPECT_EQ(ulq_dql_avail(&d), 0);
	ulq_dql_queued(&d, 1000);
	EXPECT_LT(ulq_dql_avail(&d), 0);
	ulq_dql_completed(&d, 1000, 1 * MS);
	EXPECT_EQ(d.limit, 1000);
	EXPECT_EQ(ulq_dql_avail(&d), 1000);
	ulq_dql_queued(&d, 1000);
	ulq_dql_queued(&d, 1000);
	ulq_dql_completed(&d, 1000, 2 * MS);
	EXPECT_EQ(d.limit, 1000);
	EXPECT_EQ(ulq_dql_avail(&d), 0);
	ulq_dql_queued(&d, 1000);
	ulq_dql_completed(&d, 1000, 3 * MS);
	EXPECT_EQ(d.limit, 2000);
	EXPECT_EQ(ulq_dql_inflight(&d), 1000);
}

/*
 * A modem that completes 1000 bytes per ms, a sender that keeps the limit full: from a limit
 * far too high, the slack comes off once per hold time and the link never runs dry.
 */
TEST(dql_converges)
{
	struct ulq_dql d;
	unsigned starved = 0;

	ulq_dql_init(&d, 1000, 1 << 20, 100 * MS);
	d.limit = 50000;
	d.adj_limit = 50000;
	for (uint64_t t = 1; t <= 2000; t++) {
		while (ulq_dql_avail(&d) >= 0)
			ulq_dql_queued(&d, 1000);
		if (ulq_dql_inflight(&d) == 0)
			starved++;
		ulq_dql_completed(&d, 1000, t * MS);
	}
	EXPECT_EQ(starved, 0);
	EXPECT_LT(d.limit, 5000);
	EXPECT_GE(d.limit, 1000);
}

/*
 * The modem takes 2000 bytes every 1 ms (16 Mbit/s) while we hold back: after the first
 * 50 ms window the estimate is 16 Mbit/s and 5 ms of it is 10000 bytes. Completions while
 * nothing waits say nothing; a slower window lowers the estimate by a quarter of the gap.
 */
TEST(rate_estimate)
{
	struct ulq_rate r = { 0 };

	EXPECT_EQ(ulq_rate_cap(&r, 5 * MS, 1500), UINT32_MAX);
	for (uint64_t t = 0; t <= 50; t++)
		ulq_rate_complete(&r, 2000, true, (1 + t) * MS);
	EXPECT_EQ(r.bps, 16000000);
	EXPECT_EQ(ulq_rate_cap(&r, 5 * MS, 1500), 10000);
	EXPECT_EQ(ulq_rate_cap(&r, 100000, 1500), 1500); /* 200 bytes: at least one MTU */
	for (uint64_t t = 100; t < 200; t++)
		ulq_rate_complete(&r, 100000, false, t * MS); /* we were the bottleneck */
	EXPECT_EQ(r.bps, 16000000);
	for (uint64_t t = 0; t <= 50; t++)
		ulq_rate_complete(&r, 1000, true, (300 + t) * MS); /* 8 Mbit/s */
	EXPECT_EQ(r.bps, 14000000);
}

/*
 * The estimate after the modem stalls. A modem serving 50 Mbit/s answers each 1500-byte
 * transfer 0.2 ms after its radio took it; then for 2 s it answers only 20 ms late (a host
 * starved of CPU, a modem busy elsewhere), so the in-flight cap of 5 ms of the estimate
 * starves the radio and the estimate sinks (to 0.6 Mbit/s); then it answers promptly again.
 * The estimate must climb back to the modem's rate within 200 ms (it takes 120 ms: a rise is
 * taken at once, a fall smoothed), and the cap never falls below one MTU.
 */
TEST(rate_after_stall)
{
	enum { SLOTS = 64, MTU = 1500 };
	const uint64_t rate = 50000000, tick = 100000,
		       per_transfer = MTU * 8 * 1000000000ULL / rate;
	struct ulq_rate r = { 0 };
	uint64_t done_at[SLOTS], head = 0, tail = 0, inflight = 0, radio_free = 0;
	uint64_t low = UINT64_MAX, recovered_after = 0;
	uint32_t min_cap = UINT32_MAX;

	for (uint64_t t = tick; t <= 4000 * MS; t += tick) {
		uint64_t late = t >= 1000 * MS && t < 3000 * MS ? 20 * MS : 200000;

		while (head != tail && done_at[head % SLOTS] <= t) {
			head++;
			inflight -= MTU;
			ulq_rate_complete(&r, MTU, true, t); /* packets always wait: held */
		}
		uint32_t cap = ulq_rate_cap(&r, 5 * MS, MTU);
		if (cap < min_cap)
			min_cap = cap;
		while (inflight + MTU <= cap && tail - head < SLOTS) {
			radio_free = (radio_free > t ? radio_free : t) + per_transfer;
			done_at[tail++ % SLOTS] = radio_free + late;
			inflight += MTU;
		}
		if (t == 1000 * MS)
			EXPECT_TRUE(r.bps >= rate * 9 / 10);
		if (t >= 1000 * MS && t < 3000 * MS && r.bps < low)
			low = r.bps;
		if (t >= 3000 * MS && recovered_after == 0 && r.bps >= rate * 9 / 10)
			recovered_after = t - 3000 * MS;
	}
	EXPECT_TRUE(low < rate / 4); /* the stall did drag the estimate down */
	EXPECT_TRUE(recovered_after > 0 && recovered_after <= 200 * MS);
	EXPECT_EQ(min_cap, MTU);
}

/* One millisecond of uplink-rate = auto: the modem completes `bytes`, backlogged or not. */
static uint64_t auto_ms(struct ulq_auto *a, struct ulq_rate *r, uint32_t bytes, bool held,
			uint64_t *t)
{
	*t += MS;
	ulq_rate_complete(r, bytes, held, *t);
	return ulq_auto_step(a, r, bytes, *t);
}

/*
 * uplink-rate = auto: no shaper until a backlogged window measured the modem; then 95% of it;
 * a probe at 125% that the modem keeps up with raises the rate to what it took (less the
 * buffer learnt before) and the next probe follows after the shortest cruise, at 150%; one that
 * backs up leaves the rate, drains at 75% and doubles the cruise; a slower modem seen while
 * cruising for two windows in a row is measured without a probe.
 */
TEST(auto)
{
	struct ulq_auto a = { 0 };
	struct ulq_rate r = { 0 };
	uint64_t t = 0, rate = 0;

	EXPECT_EQ(ulq_auto_step(&a, &r, 0, t), 0);
	for (int i = 0; i < 60 && rate == 0; i++) /* 2500 bytes/ms backlogged: 20 Mbit/s */
		rate = auto_ms(&a, &r, 2500, true, &t);
	EXPECT_EQ(a.bps, 20000000);
	EXPECT_EQ(rate, 19000000); /* no buffer learnt yet: no drain, cruise */
	EXPECT_EQ(a.phase, ULQ_AUTO_CRUISE);
	/* Cruise; then a probe the modem backs up in after 20 ms of 3000 bytes/ms taken. */
	while (a.phase == ULQ_AUTO_CRUISE)
		auto_ms(&a, &r, 2375, false, &t);
	EXPECT_EQ(a.phase, ULQ_AUTO_PROBE);
	EXPECT_EQ(ulq_auto_step(&a, &r, 0, t), 25000000);
	for (int i = 0; i < 10; i++)
		auto_ms(&a, &r, 3000, false, &t);
	for (int i = 0; i < 20 && a.phase == ULQ_AUTO_PROBE; i++)
		rate = auto_ms(&a, &r, 2500, true, &t);
	EXPECT_EQ(a.phase, ULQ_AUTO_DRAIN);
	EXPECT_EQ(rate, 15000000);
	EXPECT_EQ(a.bps, 20000000);
	EXPECT_EQ(a.cruise_ns, 2 * ULQ_AUTO_CRUISE_MIN_NS);
	EXPECT_TRUE(a.buffer_bytes > 0);
	uint64_t buffer = a.buffer_bytes;
	/* Drain and cruise without backlog; a probe the modem keeps up with (a faster cell). */
	while (a.phase != ULQ_AUTO_PROBE)
		auto_ms(&a, &r, 2000, false, &t);
	uint64_t start = t;
	while (a.phase == ULQ_AUTO_PROBE)
		auto_ms(&a, &r, 3125, false, &t);
	uint64_t took = (3125 * (t - start) / MS - buffer) * 8 * 1000000000ULL / (t - start);
	EXPECT_EQ(a.bps, took);
	EXPECT_EQ(a.cruise_ns, ULQ_AUTO_CRUISE_MIN_NS);
	EXPECT_EQ(a.probe_pct, 150); /* the next probe reaches further */
	/*
	 * A slower modem while cruising: one window brings the rate down no further than the
	 * window before it (20 Mbit/s; a stall looks the same)...
	 */
	for (int i = 0; i < 60; i++)
		auto_ms(&a, &r, 1250, true, &t);
	EXPECT_EQ(a.bps, 20000000);
	/* ...two in a row are: measured, drained. */
	for (int i = 0; i < 60 && a.bps != 10000000; i++)
		rate = auto_ms(&a, &r, 1250, true, &t);
	EXPECT_EQ(a.bps, 10000000);
	EXPECT_EQ(rate, 7500000);
}

TEST(shaper)
{
	struct ulq_shaper s;

	ulq_shaper_init(&s, 8000000, 1 * MS); /* 1 byte per microsecond */
	EXPECT_EQ(ulq_shaper_wait(&s, 0), 0);
	ulq_shaper_sent(&s, 1000, 0);
	EXPECT_EQ(ulq_shaper_wait(&s, 0), 0); /* within the 1 ms burst */
	ulq_shaper_sent(&s, 1000, 0);
	EXPECT_EQ(ulq_shaper_wait(&s, 0), 1 * MS);
	EXPECT_EQ(ulq_shaper_wait(&s, 1 * MS), 0);
	/* Idle time is not saved up beyond the burst. */
	ulq_shaper_sent(&s, 1000, 100 * MS);
	EXPECT_EQ(s.next_ns, 101 * MS);
	ulq_shaper_init(&s, 0, 0);
	ulq_shaper_sent(&s, 60000, 0);
	EXPECT_EQ(ulq_shaper_wait(&s, 0), 0); /* off */
}
