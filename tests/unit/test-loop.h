/* SPDX-License-Identifier: MIT */
/*
 * Driving a libev loop from a unit test: a 5 ms tick bounds every ev_run(EVRUN_ONCE), so a
 * missed wakeup shows up as a failed wait rather than a hang, and test_run_until() turns the
 * loop until a condition holds or TEST_WAIT_SECONDS pass.
 */
#ifndef QMAPD_TEST_LOOP_H
#define QMAPD_TEST_LOOP_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define TEST_WAIT_SECONDS 3.0

static inline double test_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void test_on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
}

/* Start the tick on loop; tick must live as long as the loop runs. */
static inline void test_loop_tick(struct ev_loop *loop, ev_timer *tick)
{
	ev_timer_init(tick, test_on_tick, 0.005, 0.005);
	ev_timer_start(loop, tick);
}

/* Run the loop until cond(data) holds (true) or TEST_WAIT_SECONDS pass (false). */
static inline bool test_run_until(struct ev_loop *loop, bool (*cond)(void *), void *data)
{
	double deadline = test_now() + TEST_WAIT_SECONDS;

	for (;;) {
		if (cond(data))
			return true;
		if (test_now() > deadline)
			return false;
		ev_run(loop, EVRUN_ONCE);
	}
}

/* Let the loop run for a while, for "nothing else happens" checks. */
static inline void test_run_for(struct ev_loop *loop, double seconds)
{
	double deadline = test_now() + seconds;

	while (test_now() < deadline)
		ev_run(loop, EVRUN_ONCE);
}

struct test_counter_wait {
	const uint64_t *counter;
	uint64_t at_least;
};

static inline bool test_counter_reached(void *data)
{
	struct test_counter_wait *w = data;
	return *w->counter >= w->at_least;
}

/* Run the loop until *counter reaches at_least. */
static inline bool test_wait_counter(struct ev_loop *loop, const uint64_t *counter,
				     uint64_t at_least)
{
	struct test_counter_wait w = { counter, at_least };
	return test_run_until(loop, test_counter_reached, &w);
}

#endif
