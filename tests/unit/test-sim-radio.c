/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's radio (sim-radio.h) on a virtual clock: exact air and network times, the
 * instant a pending transfer fits, fractions of a nanosecond carried, and a saturated radio
 * serving its rate with a 32 KiB modem buffer at 10, 200 and 1000 Mbit/s while the loop that
 * drives it comes back up to 2 ms late (as qmapd-sim's does on a busy host), also across a
 * rate change. The modem buffer never holds more than it may: a transfer that does not fit
 * stays pending.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim-radio.h"
#include "test-case.h"

#define MS	   1000000ULL
#define T0	   (1000 * MS) /* virtual clocks start here, away from 0 */
#define PKT	   1500u
#define PER_XFER   10u /* packets per OUT transfer: 15 000 bytes, as qmapd's aggregates */
#define XFER	   (PKT * PER_XFER)
#define MODEM_BUF  32768u
#define WINDOW	   32u /* OUT transfers the host keeps submitted */
#define MAX_LATE   (2 * MS)
#define SATURATE_T (2000 * MS)

static uint8_t payload[PKT];

struct counter {
	uint64_t bytes, packets;
	uint64_t last_t; /* deliveries come in order */
};

static void count(void *userdata, uint8_t mux, uint8_t flags, const uint8_t *pkt, size_t len)
{
	struct counter *c = userdata;
	(void)mux;
	(void)flags;
	(void)pkt;
	c->bytes += len;
	c->packets++;
}

static struct sim_radio *radio(uint64_t rate, uint32_t modem_buffer, uint64_t delay)
{
	struct sim_radio *r = NULL;

	if (sim_radio_new(SIM_RADIO_RING_BYTES, &r) < 0) {
		fprintf(stderr, "cannot allocate the radio\n");
		exit(1);
	}
	sim_radio_set(r, rate, modem_buffer, delay);
	return r;
}

static void push_packets(struct sim_radio *r, unsigned n, uint64_t at)
{
	for (unsigned i = 0; i < n; i++)
		EXPECT_EQ(sim_radio_push(r, 1, 0, payload, PKT, at), 0);
}

TEST_SETUP()
{
	memset(payload, 0x45, sizeof(payload));
}

/* One packet at 12 Mbit/s takes 1 ms of air, then the network delay, to the nanosecond. */
TEST(timing)
{
	struct sim_radio *r = radio(12000000, MODEM_BUF, 20 * MS);
	struct counter c = { 0 };
	uint64_t at;

	EXPECT_TRUE(sim_radio_take(r, PKT, T0, T0, &at));
	EXPECT_EQ(at, T0);
	push_packets(r, 1, at);
	EXPECT_EQ(sim_radio_run(r, T0, count, &c), T0 + 21 * MS);
	EXPECT_EQ(sim_radio_run(r, T0 + 21 * MS - 1, count, &c), T0 + 21 * MS);
	EXPECT_EQ(c.packets, 0);
	EXPECT_EQ(sim_radio_run(r, T0 + 21 * MS, count, &c), 0);
	EXPECT_EQ(c.bytes, PKT);
	sim_radio_free(r);
}

/* A transfer that does not fit stays pending until the instant enough has left; not before
 * it was sent. */
TEST(pending)
{
	struct sim_radio *r = radio(12000000, MODEM_BUF, 0);
	uint64_t at;

	EXPECT_TRUE(sim_radio_take(r, XFER, T0, T0, &at));
	push_packets(r, PER_XFER, at);
	EXPECT_TRUE(sim_radio_take(r, XFER, T0, T0, &at));
	push_packets(r, PER_XFER, at);
	EXPECT_EQ(sim_radio_buffered(r), 2 * XFER);
	/* 30 000 bytes: 17 768 or fewer must be left for 15 000 more, so 9 packets of 1 ms. */
	EXPECT_EQ(sim_radio_room_at(r, XFER), T0 + 9 * MS);
	EXPECT_TRUE(!sim_radio_take(r, XFER, T0, T0 + 9 * MS - 1, &at));
	EXPECT_EQ(sim_radio_buffered(r), 2 * XFER);
	EXPECT_TRUE(sim_radio_take(r, XFER, T0, T0 + 15 * MS, &at));
	EXPECT_EQ(at, T0 + 9 * MS); /* taken when it fitted, however late the caller looked */
	EXPECT_EQ(sim_radio_buffered(r), 2 * XFER - 9 * PKT);
	push_packets(r, PER_XFER, at);
	EXPECT_TRUE(sim_radio_buffered_max(r) <= MODEM_BUF);
	/* Sent after it would have fitted: taken when sent. */
	EXPECT_TRUE(sim_radio_take(r, PKT, T0 + 40 * MS, T0 + 50 * MS, &at));
	EXPECT_EQ(at, T0 + 40 * MS);
	sim_radio_free(r);
}

/* 7 Mbit/s: 1 714 285.71 ns per packet; 7 000 back to back take exactly 12 s. */
TEST(fractions)
{
	struct sim_radio *r = radio(7000000, 0, 0);
	struct counter c = { 0 };

	push_packets(r, 7000, T0);
	sim_radio_run(r, T0 + 12000 * MS - 1, count, &c);
	EXPECT_EQ(c.packets, 6999);
	sim_radio_run(r, T0 + 12000 * MS, count, &c);
	EXPECT_EQ(c.packets, 7000);
	sim_radio_free(r);
}

/* A small pseudo-random lateness in [0, MAX_LATE], the same sequence every run. */
static uint64_t late(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return (*seed >> 33) % (MAX_LATE + 1);
}

/*
 * The sim's loop on a virtual clock: the host keeps WINDOW transfers submitted (a new one when
 * one is taken, at the time the sim acknowledges it); the sim takes what fits, runs the radio,
 * and sleeps until the next delivery or the instant the waiting transfer fits, waking up to
 * MAX_LATE after it. The rate is `rate` for the first half, `rate2` for the second. Returns
 * the bytes sent over the air.
 */
static uint64_t saturate(uint64_t rate, uint64_t rate2)
{
	struct sim_radio *r = radio(rate, MODEM_BUF, 0);
	struct counter c = { 0 };
	uint64_t sent_at[WINDOW]; /* the socket: when each waiting transfer was sent */
	unsigned head = 0, n = WINDOW;
	uint64_t now = T0, end = T0 + SATURATE_T, seed = rate;
	bool changed = false;

	for (unsigned i = 0; i < WINDOW; i++)
		sent_at[i] = T0;
	while (now < end) {
		if (!changed && now >= T0 + SATURATE_T / 2) {
			sim_radio_set(r, rate2, MODEM_BUF, 0);
			changed = true;
		}
		uint64_t at;
		unsigned taken = 0;
		while (n > 0 && sim_radio_take(r, XFER, sent_at[head], now, &at)) {
			push_packets(r, PER_XFER, at);
			head = (head + 1) % WINDOW;
			n--;
			taken++;
		}
		/* The acknowledgements go out; the host sends as many again. */
		for (; taken > 0; taken--, n++)
			sent_at[(head + n) % WINDOW] = now;
		uint64_t wake = sim_radio_run(r, now, count, &c);
		uint64_t room = sim_radio_room_at(r, XFER);
		if (room <= now)
			continue;
		if (wake == 0 || room < wake)
			wake = room;
		if (wake > end)
			wake = end;
		now = wake + late(&seed);
	}
	sim_radio_run(r, end, count, &c);
	EXPECT_TRUE(sim_radio_buffered_max(r) <= MODEM_BUF);
	uint64_t sent = sim_radio_sent(r);
	EXPECT_TRUE(c.bytes <= sent);
	sim_radio_free(r);
	return sent;
}

static void check_saturated(uint64_t rate, uint64_t rate2)
{
	uint64_t sent = saturate(rate, rate2);
	double want = (double)(rate + rate2) / 2 * (double)SATURATE_T / 1e9 / 8;
	double ratio = (double)sent / want;

	printf("%" PRIu64 "/%" PRIu64 " Mbit/s: %" PRIu64 " of %.0f bytes, %.4f of the rate\n",
	       rate / 1000000, rate2 / 1000000, sent, want, ratio);
	EXPECT_TRUE(ratio >= 0.98);
	EXPECT_TRUE(ratio <= 1.02);
}

TEST(saturated_10mbit)
{
	check_saturated(10000000, 10000000);
}

TEST(saturated_200mbit)
{
	check_saturated(200000000, 200000000);
}

TEST(saturated_1gbit)
{
	check_saturated(1000000000, 1000000000);
}

/* Two rates: the radio alternates, and the average is what counts. */
TEST(saturated_200_50mbit)
{
	check_saturated(200000000, 50000000);
}
