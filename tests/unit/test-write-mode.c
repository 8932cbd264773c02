/* SPDX-License-Identifier: MIT */
/*
 * write-mode.h: writev or io_uring per mux, by measured cost. A fake machine stands for the
 * clock: each batch costs its mode's ns per packet (times the packets), so every decision
 * and its timing is exact.
 */
#include "test-case.h"
#include "write-mode.h"

struct fake_machine {
	double ns_per_pkt[_WRITE_MODE_MAX];
	unsigned packets;    /* per batch */
	unsigned outlier;    /* every outlier-th measured batch is 100x slower (preempted) */
	unsigned shared;     /* every shared-th batch carries another mux's packets too */
	unsigned measured;   /* batches measured so far */
	unsigned in_mode[2]; /* batches run in each mode */
};

/* Run batches of the fake machine; returns the batches measured. */
static unsigned run(struct write_mode *w, struct fake_machine *f, unsigned batches)
{
	unsigned measured = 0;

	for (unsigned i = 0; i < batches; i++) {
		bool measure;
		enum write_mode_kind m = write_mode_batch_begin(w, &measure);
		f->in_mode[m]++;
		if (!measure)
			continue;
		if (f->shared && i % f->shared == 0) {
			write_mode_batch_skip(w);
			continue;
		}
		measured++;
		f->measured++;
		double ns = f->ns_per_pkt[m] * f->packets;
		if (f->outlier && f->measured % f->outlier == 0)
			ns *= 100;
		write_mode_batch_end(w, m, (uint64_t)ns, f->packets);
	}
	return measured;
}

TEST(no_uring)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 2000, 500 }, .packets = 32 };

	write_mode_init(&w, false);
	EXPECT_EQ(run(&w, &f, 100000), 0);
	EXPECT_EQ(f.in_mode[WRITE_MODE_URING], 0);
	EXPECT_STR_EQ(write_mode_why_name(w.why), "no-io-uring");
}

/* Cheap system calls (bare metal): the ring's own work costs more; writev stays. */
TEST(cheap_syscalls_keep_writev)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 420, 470 }, .packets = 32 };

	write_mode_init(&w, true);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_STR_EQ(write_mode_why_name(w.why), "unmeasured");
	/* The first probe starts with the first batch and takes 2 x PROBE_BATCHES. */
	EXPECT_EQ(run(&w, &f, 2 * WRITE_MODE_PROBE_BATCHES), 2 * WRITE_MODE_PROBE_BATCHES);
	EXPECT_EQ(w.probes, 1);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_STR_EQ(write_mode_why_name(w.why), "measured");
	EXPECT_EQ((int)w.ns[WRITE_MODE_WRITEV], 420);
	EXPECT_EQ((int)w.ns[WRITE_MODE_URING], 470);
	run(&w, &f, 100000);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_EQ(w.switches, 0);
	/* Settled, the worse mode ran only in half of each probe: well under 1% of batches. */
	EXPECT_TRUE(f.in_mode[WRITE_MODE_URING] * 100 < 100000 + 2 * WRITE_MODE_PROBE_BATCHES);
}

/* Expensive system calls (a VM): one io_uring_enter per batch wins; taken after one probe. */
TEST(expensive_syscalls_take_uring)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 1800, 1400 }, .packets = 32 };

	write_mode_init(&w, true);
	run(&w, &f, 2 * WRITE_MODE_PROBE_BATCHES);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);
	EXPECT_EQ(w.switches, 1);
	run(&w, &f, 100000);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);
	EXPECT_EQ(w.switches, 1);
	EXPECT_TRUE(f.in_mode[WRITE_MODE_WRITEV] * 100 < 100000 + 2 * WRITE_MODE_PROBE_BATCHES);
}

/* A difference inside the margin is noise: the mode stays, whichever it is. */
TEST(margin)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 1000, 960 }, .packets = 10 };

	write_mode_init(&w, true);
	run(&w, &f, 10000);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_EQ(w.switches, 0);
	f.ns_per_pkt[WRITE_MODE_URING] = 940; /* 6% cheaper: beyond the margin */
	run(&w, &f, 2 * WRITE_MODE_PROBE_MAX + 2 * WRITE_MODE_PROBE_BATCHES);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);
	f.ns_per_pkt[WRITE_MODE_WRITEV] = 920; /* 2% cheaper: stays io_uring */
	run(&w, &f, 4 * WRITE_MODE_PROBE_MAX);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);
	EXPECT_EQ(w.switches, 1);
}

/* A preempted batch (100x) in each probe does not decide: the median is the cost. */
TEST(outliers)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 420, 470 }, .packets = 32, .outlier = 5 };

	write_mode_init(&w, true);
	run(&w, &f, 50000);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_EQ(w.switches, 0);
	EXPECT_EQ((int)w.ns[WRITE_MODE_WRITEV], 420);
}

/* Probes back off to PROBE_MAX while they confirm, and a changed machine is seen in time. */
TEST(backoff_and_change)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 420, 470 }, .packets = 32 };
	unsigned batches = 0;

	write_mode_init(&w, true);
	/* Probes at 1, then intervals 128, 256 ... up to PROBE_MAX (plus the probes). */
	while (w.interval < WRITE_MODE_PROBE_MAX) {
		unsigned interval = w.interval;
		uint64_t probes = w.probes;
		run(&w, &f, 1);
		EXPECT_TRUE(w.interval == interval || w.interval == 2 * interval);
		EXPECT_TRUE(w.probes <= probes + 1);
		if (++batches > 1000000)
			break;
	}
	EXPECT_EQ(w.interval, WRITE_MODE_PROBE_MAX);
	uint64_t probes = w.probes;
	run(&w, &f, 10 * (WRITE_MODE_PROBE_MAX + 2 * WRITE_MODE_PROBE_BATCHES));
	EXPECT_TRUE(w.probes - probes >= 9 && w.probes - probes <= 11);

	/* The VM migrates to a host with expensive system calls: io_uring within a period. */
	f.ns_per_pkt[WRITE_MODE_WRITEV] = 2000;
	run(&w, &f, WRITE_MODE_PROBE_MAX + 2 * WRITE_MODE_PROBE_BATCHES);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);
	EXPECT_EQ(w.interval, WRITE_MODE_PROBE_MIN);
}

/* Batches shared with other muxes are no samples; too few of its own: the probe gives up. */
TEST(shared_batches)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 1800, 1400 }, .packets = 32, .shared = 2 };

	/* Every other batch shared: the probe still completes, later. */
	write_mode_init(&w, true);
	run(&w, &f, 6 * WRITE_MODE_PROBE_BATCHES);
	EXPECT_EQ(w.probes, 1);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);

	/* Every batch shared: nothing measured, the mode stays and the probe ends. */
	f.shared = 1;
	write_mode_init(&w, true);
	run(&w, &f, WRITE_MODE_PROBE_TRIES + 1);
	EXPECT_TRUE(!w.probing);
	EXPECT_EQ(w.probes, 0);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_STR_EQ(write_mode_why_name(w.why), "unmeasured");
	/* ...and tries again an interval later. */
	run(&w, &f, WRITE_MODE_PROBE_MIN);
	EXPECT_TRUE(w.probing);

	/* With what another mux measured on this machine, a probe that gives up takes it. */
	write_mode_init(&w, true);
	write_mode_set_hint(&w, WRITE_MODE_URING);
	run(&w, &f, WRITE_MODE_PROBE_TRIES + 1);
	EXPECT_EQ(w.mode, WRITE_MODE_URING);
	EXPECT_STR_EQ(write_mode_why_name(w.why), "other-mux");
	EXPECT_EQ(w.probes, 0);
	/* Its own measurement, once it has one, wins over the hint. */
	f.shared = 0;
	f.ns_per_pkt[WRITE_MODE_URING] = 3000;
	run(&w, &f, WRITE_MODE_PROBE_MIN + 2 * WRITE_MODE_PROBE_BATCHES);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
	EXPECT_STR_EQ(write_mode_why_name(w.why), "measured");
	f.shared = 1;
	run(&w, &f, 4 * WRITE_MODE_PROBE_MAX);
	EXPECT_EQ(w.mode, WRITE_MODE_WRITEV);
}

TEST(forced)
{
	struct write_mode w;
	struct fake_machine f = { .ns_per_pkt = { 420, 470 }, .packets = 32 };

	write_mode_init(&w, true);
	write_mode_force(&w, WRITE_MODE_URING, WRITE_MODE_WHY_FORCED);
	EXPECT_EQ(run(&w, &f, 10000), 0);
	EXPECT_EQ(f.in_mode[WRITE_MODE_WRITEV], 0);
	EXPECT_STR_EQ(write_mode_name(w.mode), "io_uring");
	EXPECT_STR_EQ(write_mode_why_name(w.why), "forced");
}
