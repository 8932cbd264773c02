/* SPDX-License-Identifier: MIT */
/*
 * The managed uplink queue (ulq.h): FQ-CoDel after RFC 8290, the in-flight limit after the
 * kernel's dynamic queue limits, a rate shaper. Pure: no I/O, no clock, no logging.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "ulq.h"

#define ULQ_WINDOW_DEFAULT_NS 1000000000ULL

/* ---- lists of flows ----------------------------------------------------------------- */

static void list_add_tail(struct ulq_list *l, struct ulq_flow *f, enum ulq_list_id id)
{
	f->next = NULL;
	f->prev = l->tail;
	if (l->tail)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
	f->list = id;
}

static void list_del(struct ulq_list *l, struct ulq_flow *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		l->head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		l->tail = f->prev;
	f->prev = f->next = NULL;
	f->list = ULQ_LIST_NONE;
}

static struct ulq_list *flow_list(struct ulq *q, struct ulq_flow *f)
{
	switch (f->list) {
	case ULQ_LIST_NEW:
		return &q->new_flows;
	case ULQ_LIST_OLD:
		return &q->old_flows;
	case ULQ_LIST_PARKED:
		return &f->mux->parked;
	case ULQ_LIST_NONE:
		break;
	}
	return NULL;
}

static void flow_unlink(struct ulq *q, struct ulq_flow *f)
{
	struct ulq_list *l = flow_list(q, f);

	if (l)
		list_del(l, f);
}

static void flow_move_tail(struct ulq *q, struct ulq_flow *f, struct ulq_list *to,
			   enum ulq_list_id id)
{
	flow_unlink(q, f);
	list_add_tail(to, f, id);
}

/* ---- slots ------------------------------------------------------------------------------ */

int ulq_new(const struct ulq_params *params, struct ulq **ret)
{
	struct ulq *q;

	if (params->slots == 0 || params->slots >= ULQ_NONE || params->limit_bytes == 0)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->params = *params;
	if (q->params.quantum == 0)
		q->params.quantum = ULQ_QUANTUM;
	if (q->params.window_ns == 0)
		q->params.window_ns = ULQ_WINDOW_DEFAULT_NS;
	q->slots = calloc(params->slots, sizeof(*q->slots));
	q->mem = malloc((size_t)params->slots * ULQ_SLOT_SIZE);
	if (!q->slots || !q->mem) {
		ulq_free(q);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < params->slots; i++)
		q->slots[i].next = i + 1 < params->slots ? i + 1 : ULQ_NONE;
	q->free_head = 0;
	q->n_free = params->slots;
	*ret = q;
	return 0;
}

struct ulq *ulq_free(struct ulq *q)
{
	if (!q)
		return NULL;
	for (unsigned i = 0; i < ARRAY_SIZE(q->mux); i++)
		q->mux[i] = ulq_mux_free(q->mux[i]);
	free(q->slots);
	free(q->mem);
	free(q);
	return NULL;
}

static void slot_put(struct ulq *q, uint32_t slot)
{
	q->slots[slot].next = q->free_head;
	q->free_head = slot;
	q->n_free++;
}

void ulq_cancel(struct ulq *q, uint32_t slot)
{
	slot_put(q, slot);
}

void ulq_release(struct ulq *q, uint32_t slot)
{
	slot_put(q, slot);
}

uint8_t ulq_slot_mux(const struct ulq *q, uint32_t slot)
{
	return q->slots[slot].mux;
}

/* Take the head packet off a flow; the caller frees or returns the slot. */
static uint32_t flow_pop(struct ulq *q, struct ulq_flow *f)
{
	uint32_t slot = f->head;

	if (slot == ULQ_NONE)
		return ULQ_NONE;
	struct ulq_slot *s = &q->slots[slot];
	f->head = s->next;
	if (f->head == ULQ_NONE)
		f->tail = ULQ_NONE;
	f->backlog -= s->len;
	f->packets--;
	q->backlog -= s->len;
	q->packets--;
	f->mux->stats.queued_bytes -= s->len;
	f->mux->stats.queued_packets--;
	return slot;
}

/* Drop up to half of the fattest flow's backlog (at least one packet, at most a batch). */
static void drop_fattest(struct ulq *q)
{
	struct ulq_flow *fat = NULL;
	const struct ulq_list *lists[2] = { &q->new_flows, &q->old_flows };

	for (unsigned i = 0; i < 2; i++)
		for (struct ulq_flow *f = lists[i]->head; f; f = f->next)
			if (!fat || f->backlog > fat->backlog)
				fat = f;
	for (unsigned id = 0; id < ARRAY_SIZE(q->mux); id++) {
		if (!q->mux[id])
			continue;
		for (struct ulq_flow *f = q->mux[id]->parked.head; f; f = f->next)
			if (!fat || f->backlog > fat->backlog)
				fat = f;
	}
	if (!fat || fat->backlog == 0)
		return;
	uint32_t threshold = fat->backlog / 2, dropped = 0;
	for (unsigned n = 0; n < ULQ_DROP_BATCH && fat->head != ULQ_NONE; n++) {
		uint32_t slot = flow_pop(q, fat);
		dropped += q->slots[slot].len;
		fat->mux->stats.drops_overlimit++;
		slot_put(q, slot);
		if (dropped >= threshold)
			break;
	}
}

uint32_t ulq_reserve(struct ulq *q)
{
	if (q->n_free == 0)
		drop_fattest(q);
	if (q->n_free == 0)
		return ULQ_NONE;
	uint32_t slot = q->free_head;
	q->free_head = q->slots[slot].next;
	q->n_free--;
	return slot;
}

/* ---- classification --------------------------------------------------------------------- */

static uint32_t mix(uint32_t h, uint32_t v)
{
	h ^= v;
	h *= 0x9e3779b1u;
	return (h << 13) | (h >> 19);
}

static uint32_t fmix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

uint32_t ulq_flow_index(const struct ulq_mux *qm, const uint8_t *pkt, size_t len)
{
	uint32_t h = qm->seed;
	size_t l4 = 0;
	uint8_t proto = 0;
	bool ports = false;

	if (len >= 20 && pkt[0] >> 4 == 4) {
		size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
		proto = pkt[9];
		h = mix(h, load32(pkt + 12));
		h = mix(h, load32(pkt + 16));
		/* Only an unfragmented packet or a first fragment has the ports. */
		bool later_fragment = ((pkt[6] & 0x1f) | pkt[7]) != 0;
		l4 = ihl;
		ports = !later_fragment && ihl >= 20;
	} else if (len >= 40 && pkt[0] >> 4 == 6) {
		proto = pkt[6];
		for (unsigned i = 8; i < 40; i += 4)
			h = mix(h, load32(pkt + i));
		l4 = 40;
		ports = true;
	}
	if (ports && (proto == 6 || proto == 17 || proto == 132 || proto == 136) && len >= l4 + 4)
		h = mix(h, load32(pkt + l4));
	h = fmix(mix(h, proto));
	return (uint32_t)(((uint64_t)h * ULQ_FLOWS) >> 32);
}

/* ---- ECN ---------------------------------------------------------------------------------- */

bool ulq_set_ce(uint8_t *pkt, size_t len)
{
	if (len >= 20 && pkt[0] >> 4 == 4) {
		uint8_t ecn = pkt[1] & 3;
		if (ecn == 0)
			return false;
		if (ecn == 3)
			return true;
		/* RFC 1624: HC' = ~(~HC + ~m + m') over the 16-bit word holding the TOS. */
		uint16_t old_word = (uint16_t)(pkt[0] << 8 | pkt[1]);
		pkt[1] |= 3;
		uint16_t new_word = (uint16_t)(pkt[0] << 8 | pkt[1]);
		uint32_t sum = (uint16_t) ~(pkt[10] << 8 | pkt[11]);
		sum += (uint16_t)~old_word;
		sum += new_word;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		uint16_t check = (uint16_t)~sum;
		pkt[10] = check >> 8;
		pkt[11] = check & 0xff;
		return true;
	}
	if (len >= 40 && pkt[0] >> 4 == 6) {
		uint8_t ecn = (pkt[1] >> 4) & 3;
		if (ecn == 0)
			return false;
		pkt[1] |= 0x30;
		return true;
	}
	return false;
}

/* ---- muxes -------------------------------------------------------------------------------- */

int ulq_mux_new(struct ulq *q, uint8_t id, const struct ulq_codel_params *codel,
		struct ulq_mux **ret)
{
	struct ulq_mux *qm;

	if (q->mux[id])
		return -EEXIST;
	if (codel->target_ns == 0 || codel->interval_ns == 0)
		return -EINVAL;
	qm = calloc(1, sizeof(*qm));
	if (!qm)
		return -ENOMEM;
	qm->q = q;
	qm->id = id;
	qm->codel = *codel;
	/* A fixed seed per mux: the buckets need not be secret from the host's own flows. */
	qm->seed = fmix(0x51ed270bu + id);
	for (unsigned i = 0; i < ULQ_FLOWS; i++) {
		qm->flows[i].mux = qm;
		qm->flows[i].head = qm->flows[i].tail = ULQ_NONE;
	}
	q->mux[id] = qm;
	*ret = qm;
	return 0;
}

void ulq_mux_flush(struct ulq_mux *qm)
{
	struct ulq *q = qm->q;

	for (unsigned i = 0; i < ULQ_FLOWS; i++) {
		struct ulq_flow *f = &qm->flows[i];
		uint32_t slot;
		while ((slot = flow_pop(q, f)) != ULQ_NONE) {
			qm->stats.drops_flushed++;
			slot_put(q, slot);
		}
		flow_unlink(q, f);
		f->codel = (struct ulq_codel){ 0 };
	}
}

struct ulq_mux *ulq_mux_free(struct ulq_mux *qm)
{
	if (!qm)
		return NULL;
	ulq_mux_flush(qm);
	qm->q->mux[qm->id] = NULL;
	free(qm);
	return NULL;
}

void ulq_mux_set_flow(struct ulq_mux *qm, bool on)
{
	struct ulq *q = qm->q;

	qm->flow_off = !on;
	if (!on)
		return;
	while (qm->parked.head)
		flow_move_tail(q, qm->parked.head, &q->old_flows, ULQ_LIST_OLD);
}

/* ---- enqueue ------------------------------------------------------------------------------ */

void ulq_commit(struct ulq_mux *qm, uint32_t slot, uint32_t len, uint8_t flags, uint64_t now)
{
	struct ulq *q = qm->q;
	struct ulq_flow *f = &qm->flows[ulq_flow_index(qm, ulq_slot_data(q, slot), len)];
	struct ulq_slot *s = &q->slots[slot];

	s->len = len;
	s->flags = flags;
	s->mux = qm->id;
	s->enqueue_ns = now;
	s->next = ULQ_NONE;
	if (f->tail == ULQ_NONE)
		f->head = slot;
	else
		q->slots[f->tail].next = slot;
	f->tail = slot;
	f->backlog += len;
	f->packets++;
	q->backlog += len;
	q->packets++;
	qm->stats.queued_bytes += len;
	qm->stats.queued_packets++;
	qm->stats.enqueued++;
	if (f->list == ULQ_LIST_NONE) {
		list_add_tail(&q->new_flows, f, ULQ_LIST_NEW);
		f->deficit = (int32_t)q->params.quantum;
	}
	while (q->backlog > q->params.limit_bytes) {
		uint32_t before = q->backlog;
		drop_fattest(q);
		if (q->backlog == before)
			break; /* cannot happen: every queued packet is on a listed flow */
	}
}

/* ---- CoDel (RFC 8290 section 4.2 and RFC 8289's pseudocode, per flow) --------------------- */

uint64_t ulq_control_law(uint64_t t, uint64_t interval, uint32_t count)
{
	return t + (uint64_t)((double)interval / sqrt((double)count));
}

static bool codel_should_drop(struct ulq *q, struct ulq_flow *f, uint32_t slot, uint64_t now)
{
	struct ulq_codel *c = &f->codel;
	const struct ulq_codel_params *p = &f->mux->codel;

	if (slot == ULQ_NONE) {
		c->first_above_time = 0;
		return false;
	}
	uint64_t sojourn = now - q->slots[slot].enqueue_ns;
	if (sojourn < p->target_ns || q->backlog <= q->params.mtu) {
		c->first_above_time = 0;
		return false;
	}
	if (c->first_above_time == 0) {
		c->first_above_time = now + p->interval_ns;
		return false;
	}
	return now >= c->first_above_time;
}

static void codel_drop(struct ulq *q, struct ulq_flow *f, uint32_t slot)
{
	f->mux->stats.drops_codel++;
	slot_put(q, slot);
}

static uint32_t codel_dequeue(struct ulq *q, struct ulq_flow *f, uint64_t now)
{
	struct ulq_codel *c = &f->codel;
	const struct ulq_codel_params *p = &f->mux->codel;
	uint32_t slot = flow_pop(q, f);

	if (slot == ULQ_NONE) {
		/* An emptied flow starts afresh: a sparse flow is never above target for long. */
		c->first_above_time = 0;
		c->dropping = false;
		return ULQ_NONE;
	}
	bool drop = codel_should_drop(q, f, slot, now);
	if (c->dropping) {
		if (!drop) {
			c->dropping = false;
			return slot;
		}
		while (c->dropping && now >= c->drop_next) {
			c->count++;
			if (p->ecn && ulq_set_ce(ulq_slot_data(q, slot), q->slots[slot].len)) {
				f->mux->stats.ecn_marks++;
				c->drop_next =
					ulq_control_law(c->drop_next, p->interval_ns, c->count);
				return slot;
			}
			codel_drop(q, f, slot);
			slot = flow_pop(q, f);
			if (!codel_should_drop(q, f, slot, now))
				c->dropping = false;
			else
				c->drop_next =
					ulq_control_law(c->drop_next, p->interval_ns, c->count);
		}
		return slot;
	}
	if (drop) {
		if (p->ecn && ulq_set_ce(ulq_slot_data(q, slot), q->slots[slot].len)) {
			f->mux->stats.ecn_marks++;
		} else {
			codel_drop(q, f, slot);
			slot = flow_pop(q, f);
			codel_should_drop(q, f, slot, now);
		}
		c->dropping = true;
		/* Dropping again soon after the last episode: resume near its drop rate. */
		uint32_t delta = c->count - c->lastcount;
		if (delta > 1 && (int64_t)(now - c->drop_next) < (int64_t)(16 * p->interval_ns))
			c->count = delta;
		else
			c->count = 1;
		c->lastcount = c->count;
		c->drop_next = ulq_control_law(now, p->interval_ns, c->count);
	}
	return slot;
}

/* ---- sojourn percentiles ------------------------------------------------------------------ */

/* 8 buckets per octave of microseconds: ~9% resolution, 0 us .. ~2^24 us. */
static unsigned sojourn_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	if (us < 8)
		return (unsigned)us;
	unsigned msb = 63 - (unsigned)__builtin_clzll(us);
	unsigned b = (msb - 2) * 8 + (unsigned)((us >> (msb - 3)) & 7);
	return b < ULQ_SOJOURN_BUCKETS ? b : ULQ_SOJOURN_BUCKETS - 1;
}

/* The upper edge of a bucket, in ns: a percentile errs high, by at most 1/8. */
static uint64_t sojourn_bucket_ns(unsigned b)
{
	if (b < 8)
		return (uint64_t)(b + 1) * 1000;
	unsigned msb = b / 8 + 2;
	return ((9ULL + (b % 8)) << (msb - 3)) * 1000;
}

static uint64_t percentile(const struct ulq_mux *qm, uint32_t per_mille)
{
	uint64_t want = ((uint64_t)qm->window_count * per_mille + 999) / 1000, seen = 0;

	for (unsigned b = 0; b < ULQ_SOJOURN_BUCKETS; b++) {
		seen += qm->hist[b];
		if (seen >= want && seen > 0)
			return sojourn_bucket_ns(b);
	}
	return 0;
}

void ulq_mux_tick(struct ulq_mux *qm, uint64_t now)
{
	if (now - qm->window_start < qm->q->params.window_ns)
		return;
	qm->stats.sojourn_p50_ns = qm->window_count ? percentile(qm, 500) : 0;
	qm->stats.sojourn_p99_ns = qm->window_count ? percentile(qm, 990) : 0;
	qm->stats.sojourn_max_ns = qm->window_max;
	memset(qm->hist, 0, sizeof(qm->hist));
	qm->window_count = 0;
	qm->window_max = 0;
	qm->window_start = now;
}

/* ---- dequeue: deficit round robin over new, then old flows -------------------------------- */

uint32_t ulq_dequeue(struct ulq *q, uint64_t now)
{
	for (;;) {
		struct ulq_list *l = q->new_flows.head ? &q->new_flows : &q->old_flows;
		struct ulq_flow *f = l->head;

		if (!f)
			return ULQ_NONE;
		if (f->mux->flow_off) {
			flow_move_tail(q, f, &f->mux->parked, ULQ_LIST_PARKED);
			continue;
		}
		if (f->deficit <= 0) {
			f->deficit += (int32_t)q->params.quantum;
			flow_move_tail(q, f, &q->old_flows, ULQ_LIST_OLD);
			continue;
		}
		uint32_t slot = codel_dequeue(q, f, now);
		if (slot == ULQ_NONE) {
			/* An emptied new flow goes to the old list once (RFC 8290 4.2). */
			if (l == &q->new_flows && q->old_flows.head)
				flow_move_tail(q, f, &q->old_flows, ULQ_LIST_OLD);
			else
				flow_unlink(q, f);
			continue;
		}
		struct ulq_mux *qm = f->mux;
		uint64_t sojourn = now - q->slots[slot].enqueue_ns;
		f->deficit -= (int32_t)q->slots[slot].len;
		qm->stats.dequeued++;
		qm->hist[sojourn_bucket(sojourn)]++;
		qm->window_count++;
		if (sojourn > qm->window_max)
			qm->window_max = sojourn;
		return slot;
	}
}

bool ulq_sendable(const struct ulq *q)
{
	/* Flows of a stopped mux are parked lazily: look for one that is not. */
	const struct ulq_list *lists[2] = { &q->new_flows, &q->old_flows };

	for (unsigned i = 0; i < 2; i++)
		for (const struct ulq_flow *f = lists[i]->head; f; f = f->next)
			if (!f->mux->flow_off && f->packets > 0)
				return true;
	return false;
}

/* ---- in-flight limit (the idea of lib/dynamic_queue_limits.c) ----------------------------- */

static uint32_t posdiff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0 ? a - b : 0;
}

void ulq_dql_init(struct ulq_dql *d, uint32_t min_limit, uint32_t max_limit, uint64_t hold_ns)
{
	*d = (struct ulq_dql){
		.min_limit = min_limit,
		.max_limit = max_limit,
		.limit = min_limit,
		.adj_limit = min_limit,
		.lowest_slack = UINT32_MAX,
		.slack_hold_ns = hold_ns,
	};
}

void ulq_dql_queued(struct ulq_dql *d, uint32_t bytes)
{
	d->last_obj_cnt = bytes;
	d->num_queued += bytes;
}

void ulq_dql_completed(struct ulq_dql *d, uint32_t bytes, uint64_t now)
{
	uint32_t num_queued = d->num_queued;
	uint32_t completed = d->num_completed + bytes;
	uint32_t limit = d->limit;
	uint32_t ovlimit = posdiff(num_queued - d->num_completed, limit);
	uint32_t inprogress = num_queued - completed;
	uint32_t prev_inprogress = d->prev_num_queued - d->num_completed;
	bool all_prev_completed = (int32_t)(completed - d->prev_num_queued) >= 0;

	if ((ovlimit && !inprogress) || (d->prev_ovlimit && all_prev_completed)) {
		/*
		 * Starved: we held back (over the limit) and the modem ran out. Grow by what
		 * was both sent and completed since, plus the previous overshoot.
		 */
		limit += posdiff(completed, d->prev_num_queued) + d->prev_ovlimit;
		d->slack_start = now;
		d->lowest_slack = UINT32_MAX;
	} else if (inprogress && prev_inprogress && !all_prev_completed) {
		/*
		 * Busy the whole interval: the slack is what was queued beyond twice what
		 * completed; take the smallest seen over the hold time off the limit.
		 */
		uint32_t slack =
			posdiff(limit + d->prev_ovlimit, 2 * (completed - d->num_completed));
		uint32_t slack_last =
			d->prev_ovlimit ? posdiff(d->prev_last_obj_cnt, d->prev_ovlimit) : 0;
		if (slack_last > slack)
			slack = slack_last;
		if (slack < d->lowest_slack)
			d->lowest_slack = slack;
		if (now - d->slack_start > d->slack_hold_ns) {
			limit = posdiff(limit, d->lowest_slack);
			d->slack_start = now;
			d->lowest_slack = UINT32_MAX;
		}
	}
	if (limit < d->min_limit)
		limit = d->min_limit;
	if (limit > d->max_limit)
		limit = d->max_limit;
	if (limit != d->limit) {
		d->limit = limit;
		ovlimit = 0;
	}
	d->adj_limit = limit + completed;
	d->prev_ovlimit = ovlimit;
	d->prev_last_obj_cnt = d->last_obj_cnt;
	d->num_completed = completed;
	d->prev_num_queued = num_queued;
}

/* ---- the modem's rate -------------------------------------------------------------------- */

void ulq_rate_complete(struct ulq_rate *r, uint32_t bytes, bool held, uint64_t now)
{
	if (!held) {
		/* The modem waited for us: this window says nothing about its rate. */
		r->window_start = 0;
		return;
	}
	if (r->window_start == 0) {
		r->window_start = now;
		r->window_bytes = 0;
		return; /* the window starts at this completion, its bytes are before it */
	}
	r->window_bytes += bytes;
	uint64_t elapsed = now - r->window_start;
	if (elapsed < ULQ_RATE_WINDOW_NS)
		return;
	uint64_t sample = r->window_bytes * 8 * 1000000000ULL / elapsed;
	r->last_sample = sample;
	r->samples++;
	/* Up at once (a faster cell must not wait), down smoothed (one slow window is noise). */
	r->bps = sample > r->bps ? sample : (3 * r->bps + sample) / 4;
	r->window_start = now;
	r->window_bytes = 0;
}

uint32_t ulq_rate_cap(const struct ulq_rate *r, uint64_t time_ns, uint32_t min_bytes)
{
	if (r->bps == 0)
		return UINT32_MAX;
	uint64_t cap = r->bps * time_ns / 8 / 1000000000ULL;
	if (cap < min_bytes)
		cap = min_bytes;
	return cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

/* ---- uplink-rate = auto -------------------------------------------------------------------- */

static void auto_enter(struct ulq_auto *a, enum ulq_auto_phase phase, uint64_t ns, uint64_t now)
{
	a->phase = phase;
	a->phase_start = now;
	a->phase_end = now + ns;
	a->phase_bytes = 0;
}

/* The modem's buffer is full (it backed up): drain it, then cruise. */
static void auto_drain(struct ulq_auto *a, uint64_t now)
{
	/* At 75% the buffer empties at a quarter of the rate. */
	uint64_t drain = a->bps ? a->buffer_bytes * 8 * 4 * 1000000000ULL / a->bps : 0;

	if (drain > ULQ_AUTO_DRAIN_MAX_NS)
		drain = ULQ_AUTO_DRAIN_MAX_NS;
	auto_enter(a, ULQ_AUTO_DRAIN, drain, now);
}

/* A probe that found the modem backlogged: what beyond its rate it took went into its buffer. */
static void auto_learn_buffer(struct ulq_auto *a, uint64_t now)
{
	uint64_t air = a->bps * (now - a->phase_start) / 8 / 1000000000ULL;

	if (a->phase_bytes > air && a->phase_bytes - air > a->buffer_bytes)
		a->buffer_bytes = a->phase_bytes - air;
}

uint64_t ulq_auto_step(struct ulq_auto *a, const struct ulq_rate *r, uint32_t bytes, uint64_t now)
{
	if (a->cruise_ns == 0) {
		a->cruise_ns = ULQ_AUTO_CRUISE_MIN_NS;
		a->probe_pct = 125;
	}
	a->phase_bytes += bytes;
	if (r->samples != a->samples_seen) {
		/*
		 * A window with the modem backlogged: its rate, measured (a slower cell). A
		 * stall can look the same: probe again soon.
		 */
		uint64_t c = r->last_sample;
		a->samples_seen = r->samples;
		/* Down only as far as two windows in a row say: one stall is not a cell. */
		if (c < a->bps && a->prev_sample > c)
			c = a->prev_sample < a->bps ? a->prev_sample : a->bps;
		a->prev_sample = r->last_sample;
		if (c < a->bps)
			a->cruise_ns = ULQ_AUTO_CRUISE_MIN_NS;
		a->probe_pct = 125;
		a->bps = c;
		auto_drain(a, now);
	}
	switch (a->phase) {
	case ULQ_AUTO_START:
		return 0;
	case ULQ_AUTO_DRAIN:
		if (now >= a->phase_end)
			auto_enter(a, ULQ_AUTO_CRUISE, a->cruise_ns, now);
		break;
	case ULQ_AUTO_CRUISE:
		if (now >= a->phase_end)
			auto_enter(a, ULQ_AUTO_PROBE, ULQ_AUTO_PROBE_NS, now);
		break;
	case ULQ_AUTO_PROBE:
		/*
		 * Backed up: held for a while, and the modem took less than the probe sent (held
		 * while it takes all is our in-flight limit growing, not the modem).
		 */
		if (r->window_start != 0 && now - r->window_start >= ULQ_AUTO_BACKLOG_NS &&
		    r->window_bytes * 8 * 1000000000ULL / (now - r->window_start) <
			    a->bps * a->probe_pct / 100 * 9 / 10) {
			/* Backed up: not faster than the probe. Probe less often. */
			auto_learn_buffer(a, now);
			a->cruise_ns = a->cruise_ns * 2 < ULQ_AUTO_CRUISE_MAX_NS
					       ? a->cruise_ns * 2
					       : ULQ_AUTO_CRUISE_MAX_NS;
			a->probe_pct = 125;
			auto_drain(a, now);
			break;
		}
		if (now < a->phase_end)
			break;
		/* The modem kept up: what it took, less what its buffer may hold, is its floor. */
		uint64_t took_bytes =
			a->phase_bytes > a->buffer_bytes ? a->phase_bytes - a->buffer_bytes : 0;
		uint64_t took = took_bytes * 8 * 1000000000ULL / (now - a->phase_start);
		if (took > a->bps) {
			/* Maybe faster still: again soon, and higher. */
			a->bps = took;
			a->cruise_ns = ULQ_AUTO_CRUISE_MIN_NS;
			a->probe_pct = a->probe_pct >= 150 ? 200 : 150;
		}
		auto_enter(a, ULQ_AUTO_CRUISE, a->cruise_ns, now);
		break;
	}
	switch (a->phase) {
	case ULQ_AUTO_DRAIN:
		return a->bps * 3 / 4;
	case ULQ_AUTO_PROBE:
		return a->bps * a->probe_pct / 100;
	default:
		return a->bps * 95 / 100;
	}
}

/* ---- shaper ---------------------------------------------------------------------------------- */

void ulq_shaper_init(struct ulq_shaper *s, uint64_t rate_bps, uint64_t burst_ns)
{
	*s = (struct ulq_shaper){ .rate_bps = rate_bps, .burst_ns = burst_ns };
}

uint64_t ulq_shaper_wait(const struct ulq_shaper *s, uint64_t now)
{
	if (s->rate_bps == 0 || s->next_ns <= now + s->burst_ns)
		return 0;
	return s->next_ns - now - s->burst_ns;
}

void ulq_shaper_sent(struct ulq_shaper *s, uint32_t bytes, uint64_t now)
{
	if (s->rate_bps == 0)
		return;
	if (s->next_ns < now)
		s->next_ns = now; /* idle time is not saved up beyond the burst */
	s->next_ns += (uint64_t)bytes * 8 * 1000000000ULL / s->rate_bps;
}
