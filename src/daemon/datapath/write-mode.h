/* SPDX-License-Identifier: MIT */
/*
 * How a mux's downlink writes go out, by what each way costs on this machine: one writev()
 * per packet, or queued on the datapath's io_uring and submitted once per receive batch.
 * Neither wins everywhere. Where a system call is expensive (a VM that traps each one: ~1.7-3
 * us per write) the ring's single io_uring_enter() per batch saves most of it (0.3-0.9x of the
 * per-packet time); where it is cheap (bare metal, a router's CPU: ~0.4 us per write) the
 * ring's own work per write (SQE, iovec copy, CQE) costs more than the entry it saves
 * (1.08-1.13x). tests/bench/RESULTS.md, "Downlink: two regimes".
 *
 * So each mux measures both, on its own traffic: a probe runs WRITE_MODE_PROBE_BATCHES
 * receive batches in each mode, alternating (drift of a shared machine hits both alike), and
 * times each batch from the mux's first packet to the end of its writes. The cost of a mode is
 * the median of its batches' ns per packet (one preempted batch does not decide). The other
 * mode must be WRITE_MODE_MARGIN_PCT cheaper to be taken: measurement noise alone never
 * flips it. Probes repeat: WRITE_MODE_PROBE_MIN batches after a start or a switch, twice as
 * far apart after each probe that confirms the mode, at most WRITE_MODE_PROBE_MAX (so half a
 * probe in the worse mode costs < 0.1% of the batches once settled, and a change of the
 * machine, e.g. a VM migrated, is seen within WRITE_MODE_PROBE_MAX batches).
 *
 * Only a batch that carried this mux's packets alone is a sample (the caller decides: a batch
 * shared with other muxes mixes their costs); a probe that finds too few such batches within
 * WRITE_MODE_PROBE_TRIES gives up and takes what another mux of the same datapath measured
 * last (the hint: the same machine and kind of device), or keeps its mode without one. Until
 * the first probe ends the mode is writev, the plain path.
 *
 * Pure: no clock, no I/O. The caller passes each batch's measured ns; two clock reads per
 * probe batch, none between probes.
 */
#ifndef QMAPD_WRITE_MODE_H
#define QMAPD_WRITE_MODE_H

#include <stdbool.h>
#include <stdint.h>

#define WRITE_MODE_PROBE_BATCHES 8				/* samples per mode in one probe */
#define WRITE_MODE_PROBE_TRIES	 (8 * WRITE_MODE_PROBE_BATCHES) /* batches a probe may take */
#define WRITE_MODE_PROBE_MIN	 64
#define WRITE_MODE_PROBE_MAX	 8192
#define WRITE_MODE_MARGIN_PCT	 5

enum write_mode_kind {
	WRITE_MODE_WRITEV,
	WRITE_MODE_URING,
	_WRITE_MODE_MAX,
};

/* Why the mode is what it is (qmapctl stats: "dl_write_why"). */
enum write_mode_why {
	WRITE_MODE_WHY_UNMEASURED, /* no probe has ended yet: writev */
	WRITE_MODE_WHY_MEASURED,   /* the last probe's figures (ns[]) */
	WRITE_MODE_WHY_NO_URING,   /* io_uring unavailable: writev, never probed */
	WRITE_MODE_WHY_FORCED,	   /* set by the caller (benchmarks) */
	WRITE_MODE_WHY_OTHER_MUX,  /* no batch of its own to measure: another mux's choice */
	_WRITE_MODE_WHY_MAX,
};

struct write_mode {
	enum write_mode_kind mode; /* between probes */
	enum write_mode_why why;
	bool probing;
	unsigned countdown; /* batches until the next probe */
	unsigned interval;  /* batches between probes now */
	unsigned tries;	    /* batches the running probe has seen */
	unsigned n[_WRITE_MODE_MAX];
	double sample[_WRITE_MODE_MAX][WRITE_MODE_PROBE_BATCHES]; /* ns per packet */
	double ns[_WRITE_MODE_MAX]; /* the last probe's medians; 0: not measured */
	int hint;	 /* another mux's last measured mode, -1: none (write_mode_set_hint) */
	uint64_t probes; /* probes that ended with both figures */
	uint64_t switches;
};

void write_mode_init(struct write_mode *w, bool uring_available);
/* Fixed mode, no probes (benchmarks; a ring that broke: writev). */
void write_mode_force(struct write_mode *w, enum write_mode_kind mode, enum write_mode_why why);

/*
 * A receive batch carries packets of the mux: the mode its writes take. *ret_measure: time
 * this batch and report it with write_mode_batch_end() (or _skip() when it was not the mux's
 * alone).
 */
enum write_mode_kind write_mode_batch_begin(struct write_mode *w, bool *ret_measure);
/* The batch (mode: what write_mode_batch_begin() said) took ns for packets of the mux. */
void write_mode_batch_end(struct write_mode *w, enum write_mode_kind mode, uint64_t ns,
			  uint64_t packets);
/* The batch that was to be measured cannot be (shared with other muxes, no packets). */
void write_mode_batch_skip(struct write_mode *w);
/* What another mux measured last (-1: nothing yet), for a probe that cannot measure. */
static inline void write_mode_set_hint(struct write_mode *w, int mode)
{
	w->hint = mode;
}

const char *write_mode_name(enum write_mode_kind m);
const char *write_mode_why_name(enum write_mode_why why);

#endif
