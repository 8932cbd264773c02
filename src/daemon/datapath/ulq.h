/* SPDX-License-Identifier: MIT */
/*
 * The managed uplink queue of one modem (ulq = uplink queue): FQ-CoDel as RFC 8290 describes
 * it, with the in-flight limit of the kernel's dynamic queue limits in front of the modem.
 * Pure: no I/O, no clock (callers pass `now` in nanoseconds), no logging, and no allocation
 * after ulq_new() / ulq_mux_new().
 *
 * Packets live in preallocated slots of ULQ_SLOT_SIZE bytes (one IP packet each: a
 * super-packet is queued as its segments). Filling a slot is two steps so that a device can
 * be read straight into it: ulq_reserve() hands out a free slot (making room by dropping from
 * the fattest flow when none is free), the caller writes the packet there and either
 * ulq_commit()s it or ulq_cancel()s the slot.
 *
 * Flows: each mux has ULQ_FLOWS buckets hashed from the 5-tuple (addresses, protocol, ports;
 * addresses and protocol alone for fragments and other protocols), so two muxes never share
 * a bucket. Scheduling is deficit round robin over every mux's flows with RFC 8290's two
 * lists: a flow that becomes active goes to the new list with one quantum and is served before
 * the old flows; an emptied new flow moves to the old list once so it cannot re-enter as new
 * at once. CoDel runs per flow on the sojourn time (enqueue to dequeue), with the control law
 * next = t + interval / sqrt(count); an ECN-capable packet (ECT(0)/ECT(1), or already CE) is
 * marked CE instead of dropped (IPv4 header checksum updated, RFC 1624). No packet is dropped
 * while the whole queue holds at most one MTU (ulq_params.mtu).
 *
 * Memory: at most params.limit_bytes of packets; above it, packets are dropped from the head
 * of the flow with the largest backlog (up to half of it, at most 64 packets at once), as
 * sch_fq_codel does. Flow control: a mux whose flow is off keeps its packets; its flows are
 * parked when the scheduler reaches them, so other muxes are served, and return to the old
 * list when the flow is back on. Packets of one flow leave in the order they came.
 *
 * In-flight limit (struct ulq_dql): bytes handed to the modem and not yet completed are
 * bounded by a limit that grows when the modem ran dry while we held back (starvation) and
 * shrinks by the smallest slack seen over hold_ns, as lib/dynamic_queue_limits.c does.
 *
 * Shaper (struct ulq_shaper): an optional rate in bits per second with a burst of burst_ns
 * of it, so that the queue forms here and not in the modem.
 */
#ifndef QMAPD_ULQ_H
#define QMAPD_ULQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ULQ_FLOWS		1024 /* per mux: RFC 8290's default number of queues */
#define ULQ_SLOT_SIZE		2048 /* an MTU-sized IP packet (muxes with a larger MTU use fifo) */
#define ULQ_NONE		UINT32_MAX
#define ULQ_QUANTUM		1514 /* bytes a flow may send per round: one Ethernet MTU, as RFC 8290 */
#define ULQ_DROP_BATCH		64 /* packets dropped at most from the fattest flow at once */
#define ULQ_SOJOURN_BUCKETS	200
#define ULQ_TARGET_DEFAULT_NS	5000000ULL   /* RFC 8290: 5 ms */
#define ULQ_INTERVAL_DEFAULT_NS 100000000ULL /* RFC 8290: 100 ms */

enum ulq_list_id {
	ULQ_LIST_NONE,
	ULQ_LIST_NEW,
	ULQ_LIST_OLD,
	ULQ_LIST_PARKED,
};

struct ulq_flow;

struct ulq_list {
	struct ulq_flow *head;
	struct ulq_flow *tail;
};

struct ulq_codel {
	uint64_t first_above_time; /* 0: sojourn below target */
	uint64_t drop_next;
	uint32_t count;
	uint32_t lastcount;
	bool dropping;
};

struct ulq_flow {
	struct ulq_flow *prev, *next;
	struct ulq_mux *mux;
	uint32_t head, tail; /* slots, ULQ_NONE when empty */
	uint32_t backlog;    /* bytes */
	uint32_t packets;
	int32_t deficit;
	enum ulq_list_id list;
	struct ulq_codel codel;
};

struct ulq_codel_params {
	uint64_t target_ns;
	uint64_t interval_ns;
	bool ecn; /* mark ECN-capable packets instead of dropping them */
};

/* Counters of one mux's queue; queued_* are the current backlog. */
struct ulq_mux_stats {
	uint64_t enqueued;
	uint64_t dequeued;
	uint64_t drops_codel;	  /* CoDel dropped (sojourn above target for an interval) */
	uint64_t drops_overlimit; /* the byte limit or the slots ran out: fattest flow */
	uint64_t drops_flushed;	  /* the mux went away or its link went down */
	uint64_t ecn_marks;	  /* CoDel marked CE instead of dropping */
	uint32_t queued_bytes;
	uint32_t queued_packets;
	/* Sojourn time percentiles of the last complete window (0 without packets). */
	uint64_t sojourn_p50_ns;
	uint64_t sojourn_p99_ns;
	uint64_t sojourn_max_ns; /* of the last window */
};

struct ulq_mux {
	struct ulq *q;
	uint8_t id;
	bool flow_off;
	struct ulq_codel_params codel;
	struct ulq_list parked;
	uint32_t seed;
	struct ulq_mux_stats stats;
	/* Sojourn histogram of the current window. */
	uint64_t window_start;
	uint64_t window_max;
	uint32_t window_count;
	uint32_t hist[ULQ_SOJOURN_BUCKETS];
	struct ulq_flow flows[ULQ_FLOWS];
};

struct ulq_params {
	uint32_t slots;	      /* packet slots (memory: slots * ULQ_SLOT_SIZE) */
	uint32_t limit_bytes; /* packet bytes queued at most */
	uint32_t quantum;     /* 0: ULQ_QUANTUM */
	uint32_t mtu;	      /* no CoDel drop while the whole queue holds this or less */
	uint64_t window_ns;   /* sojourn percentile window; 0: one second */
};

struct ulq_slot {
	uint32_t next; /* in its flow, or the free list */
	uint32_t len;
	uint64_t enqueue_ns;
	uint8_t flags; /* the caller's, returned by ulq_slot_flags() */
	uint8_t mux;
};

struct ulq {
	struct ulq_params params;
	uint8_t *mem;
	struct ulq_slot *slots;
	uint32_t free_head;
	uint32_t n_free;
	uint32_t backlog; /* bytes queued, all muxes */
	uint32_t packets;
	struct ulq_list new_flows;
	struct ulq_list old_flows;
	struct ulq_mux *mux[256];
};

int ulq_new(const struct ulq_params *params, struct ulq **ret);
struct ulq *ulq_free(struct ulq *q);

/* A mux's flows; its packets are dropped (drops_flushed) by ulq_mux_free(). */
int ulq_mux_new(struct ulq *q, uint8_t id, const struct ulq_codel_params *codel,
		struct ulq_mux **ret);
struct ulq_mux *ulq_mux_free(struct ulq_mux *qm);
/* Drop every packet of the mux (drops_flushed). */
void ulq_mux_flush(struct ulq_mux *qm);
void ulq_mux_set_flow(struct ulq_mux *qm, bool on);

/*
 * A free slot to fill (ULQ_SLOT_SIZE bytes at ulq_slot_data()); when none is free, packets
 * of the fattest flow are dropped first. ULQ_NONE only when nothing is queued either.
 */
uint32_t ulq_reserve(struct ulq *q);
void ulq_cancel(struct ulq *q, uint32_t slot);
/* Queue a filled slot (len bytes of IP packet) on the mux's flow; may drop from the fattest
 * flow (this one included) to keep the byte limit. */
void ulq_commit(struct ulq_mux *qm, uint32_t slot, uint32_t len, uint8_t flags, uint64_t now);

/*
 * The next packet to send, after CoDel (which may drop or mark): its slot, which stays the
 * caller's until ulq_release(), or ULQ_NONE when no mux with flow on has packets.
 */
uint32_t ulq_dequeue(struct ulq *q, uint64_t now);
void ulq_release(struct ulq *q, uint32_t slot);

static inline uint8_t *ulq_slot_data(const struct ulq *q, uint32_t slot)
{
	return q->mem + (size_t)slot * ULQ_SLOT_SIZE;
}

static inline uint32_t ulq_slot_len(const struct ulq *q, uint32_t slot)
{
	return q->slots[slot].len;
}

static inline uint8_t ulq_slot_flags(const struct ulq *q, uint32_t slot)
{
	return q->slots[slot].flags;
}

/* The mux a dequeued slot belongs to (set by ulq_commit). */
uint8_t ulq_slot_mux(const struct ulq *q, uint32_t slot);

/* Packets queued for muxes whose flow is on. */
bool ulq_sendable(const struct ulq *q);

/* The bucket a packet falls into (exposed for tests). */
uint32_t ulq_flow_index(const struct ulq_mux *qm, const uint8_t *pkt, size_t len);

/* Set CE on an ECN-capable IPv4/IPv6 packet; false for Not-ECT (and non-IP). */
bool ulq_set_ce(uint8_t *pkt, size_t len);

/* CoDel's control law: t + interval / sqrt(count). */
uint64_t ulq_control_law(uint64_t t, uint64_t interval, uint32_t count);

/* Close the sojourn window if it is over: publishes p50/p99/max into stats. */
void ulq_mux_tick(struct ulq_mux *qm, uint64_t now);

/* ---- in-flight limit ------------------------------------------------------------------ */

struct ulq_dql {
	uint32_t num_queued; /* bytes handed to the modem, ever (wraps) */
	uint32_t adj_limit;  /* limit + num_completed */
	uint32_t last_obj_cnt;
	uint32_t limit;
	uint32_t num_completed;
	uint32_t prev_ovlimit;
	uint32_t prev_num_queued;
	uint32_t prev_last_obj_cnt;
	uint32_t lowest_slack;
	uint64_t slack_start;
	uint32_t min_limit;
	uint32_t max_limit;
	uint64_t slack_hold_ns;
};

void ulq_dql_init(struct ulq_dql *d, uint32_t min_limit, uint32_t max_limit, uint64_t hold_ns);
void ulq_dql_queued(struct ulq_dql *d, uint32_t bytes);
void ulq_dql_completed(struct ulq_dql *d, uint32_t bytes, uint64_t now);
/* Bytes that may still be handed over; negative when over the limit. */
static inline int32_t ulq_dql_avail(const struct ulq_dql *d)
{
	return (int32_t)(d->adj_limit - d->num_queued);
}
static inline uint32_t ulq_dql_inflight(const struct ulq_dql *d)
{
	return d->num_queued - d->num_completed;
}

/* ---- the modem's rate, from completion timing ----------------------------------------- */

/*
 * An OUT completion means the modem took a transfer into its own buffer, not that it left on
 * the air, so DQL alone cannot tell a modem that ran dry from one whose buffer still holds
 * plenty: it settles at about two transfers in flight. The rate at which the modem takes
 * transfers while we hold packets back is its air rate; the bytes in flight are also kept
 * under time_ns of it (but at least one MTU), so a slow radio gets small transfers, one at a
 * time, and its modem buffer is the only queue behind ours.
 */
#define ULQ_RATE_WINDOW_NS 50000000ULL /* samples of 50 ms: ~25 transfers at 10 Mbit/s */

struct ulq_rate {
	uint64_t bps;	       /* estimate, 0 = none yet */
	uint64_t window_start; /* 0: no window open */
	uint64_t window_bytes;
	bool window_held;     /* we held packets back at every completion of the window */
	uint64_t last_sample; /* the last window's rate */
	uint32_t samples;     /* windows measured, ever (wraps) */
};

/* A completion of `bytes`; `held`: packets were waiting for the in-flight limit. */
void ulq_rate_complete(struct ulq_rate *r, uint32_t bytes, bool held, uint64_t now);
/* Bytes in flight allowed for time_ns at the estimate (at least min_bytes; UINT32_MAX without). */
uint32_t ulq_rate_cap(const struct ulq_rate *r, uint64_t time_ns, uint32_t min_bytes);

/* ---- uplink-rate = auto ------------------------------------------------------------------ */

/*
 * The shaper follows the modem's rate, learnt only from windows in which the modem was
 * backlogged (packets waited for the in-flight limit, not for the shaper): then completions
 * come at its air rate. Cruise at 95% of it; after a cruise, probe at 125% for
 * ULQ_AUTO_PROBE_NS. If the modem keeps up, what it took (less what its buffer can have
 * absorbed) is a floor for its rate, and the next probe follows after the shortest cruise,
 * at 150%, then 200% (a faster cell is found in a few probes). If it backs up, the probe ends there: the rate stands, and the
 * cruise before the next probe doubles up to ULQ_AUTO_CRUISE_MAX_NS (each probe fills the
 * modem's buffer once). A slower cell needs no probe: the modem backs up while we cruise and
 * a window measures it (then the next probe comes soon: a stall looks the same). After a backlog the buffer is full: drain at 75% for as long as the
 * buffer (learnt from the probes) takes to empty at that margin.
 */
#define ULQ_AUTO_CRUISE_MIN_NS 250000000ULL
#define ULQ_AUTO_CRUISE_MAX_NS 3000000000ULL
#define ULQ_AUTO_PROBE_NS      150000000ULL
#define ULQ_AUTO_DRAIN_MAX_NS  500000000ULL
#define ULQ_AUTO_BACKLOG_NS    10000000ULL /* held this long: backed up, not a DQL step */

enum ulq_auto_phase {
	ULQ_AUTO_START,	 /* no estimate yet: no shaper, the in-flight limit measures */
	ULQ_AUTO_DRAIN,	 /* 75% */
	ULQ_AUTO_CRUISE, /* 95% */
	ULQ_AUTO_PROBE,	 /* 125% */
};

struct ulq_auto {
	enum ulq_auto_phase phase;
	uint64_t bps; /* the modem's rate as far as known; 0 = not yet */
	uint64_t phase_start;
	uint64_t phase_end;
	uint64_t phase_bytes;  /* completed since phase_start */
	uint32_t samples_seen; /* ulq_rate.samples taken into account */
	uint64_t buffer_bytes; /* what the modem's buffer absorbed in a probe, at most */
	uint64_t cruise_ns;    /* before the next probe */
	uint32_t probe_pct;    /* the next probe's rate, % of bps */
	uint64_t prev_sample;  /* the window before the last */
};

/* Completions of `bytes` (0: time only) with the rate estimator's state; the shaper rate. */
uint64_t ulq_auto_step(struct ulq_auto *a, const struct ulq_rate *r, uint32_t bytes, uint64_t now);

/* ---- shaper ----------------------------------------------------------------------------- */

struct ulq_shaper {
	uint64_t rate_bps; /* 0: off */
	uint64_t burst_ns;
	uint64_t next_ns; /* when the bytes sent so far have left at the rate */
};

void ulq_shaper_init(struct ulq_shaper *s, uint64_t rate_bps, uint64_t burst_ns);
/* 0 when bytes may go now, else the nanoseconds to wait. */
uint64_t ulq_shaper_wait(const struct ulq_shaper *s, uint64_t now);
void ulq_shaper_sent(struct ulq_shaper *s, uint32_t bytes, uint64_t now);

#endif
