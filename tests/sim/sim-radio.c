/* SPDX-License-Identifier: MIT */
/* qmapd-sim's radio (sim-radio.h): modem buffer, air interface, network delay. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim-radio.h"

#define REC_WRAP UINT32_MAX /* the rest of the ring is unused: the next record is at 0 */

struct rec {
	uint32_t len;
	uint8_t mux;
	uint8_t flags;
	uint16_t reserved;
	uint64_t t; /* in the buffer: arrival; after the radio: delivery time */
};

struct sim_radio {
	uint8_t *ring;
	uint32_t size;
	uint32_t head, mid, tail;
	uint32_t used;	   /* bytes of ring in use, records and wrap gaps included */
	uint32_t buffered; /* IP bytes in [mid, tail) */
	uint32_t buffered_max;
	uint64_t ul_rate;
	uint32_t modem_buffer;
	uint64_t delay_ns;
	uint64_t radio_free; /* when the air interface has sent what it took so far */
	uint64_t air_rem;    /* radio_free's fraction of a ns, in units of 1/ul_rate ns */
	uint64_t clock;	     /* the time the buffer's state is at */
	uint64_t sent;	     /* IP bytes sent over the air */
};

static uint32_t rec_size(uint32_t len)
{
	return (uint32_t)((sizeof(struct rec) + len + 7) & ~7u);
}

static struct rec *rec_at(const struct sim_radio *r, uint32_t off)
{
	return (struct rec *)(r->ring + off);
}

int sim_radio_new(uint32_t ring_bytes, struct sim_radio **ret)
{
	struct sim_radio *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->size = ring_bytes & ~7u;
	r->ring = malloc(r->size);
	if (!r->ring) {
		free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

struct sim_radio *sim_radio_free(struct sim_radio *r)
{
	if (r) {
		free(r->ring);
		free(r);
	}
	return NULL;
}

void sim_radio_set(struct sim_radio *r, uint64_t ul_rate, uint32_t modem_buffer, uint64_t delay_ns)
{
	if (ul_rate != r->ul_rate)
		r->air_rem = 0;
	r->ul_rate = ul_rate;
	r->modem_buffer = modem_buffer;
	r->delay_ns = delay_ns;
}

/* Skip a wrap marker at off. */
static uint32_t rec_skip_wrap(const struct sim_radio *r, uint32_t off)
{
	if (off != r->tail &&
	    (r->size - off < sizeof(struct rec) || rec_at(r, off)->len == REC_WRAP))
		return 0;
	return off;
}

/*
 * When the air interface has sent the record at off: it starts when the radio is free or
 * the record arrived, whichever is later. *rem carries radio_free's fraction of a ns, so
 * back-to-back packets add up to exactly rate x time whatever their sizes.
 */
static uint64_t air_done(const struct sim_radio *r, const struct rec *rec, uint64_t free,
			 uint64_t *rem)
{
	if (rec->t > free) {
		free = rec->t; /* the radio idled: nothing to carry */
		*rem = 0;
	}
	if (!r->ul_rate)
		return free;
	uint64_t num = (uint64_t)rec->len * 8 * 1000000000ULL + *rem;
	*rem = num % r->ul_rate;
	return free + num / r->ul_rate;
}

/* The air interface up to t: what it has sent by then leaves the buffer for the network. */
static void air_advance(struct sim_radio *r, uint64_t t)
{
	for (;;) {
		r->mid = rec_skip_wrap(r, r->mid);
		if (r->mid == r->tail)
			break;
		struct rec *rec = rec_at(r, r->mid);
		uint64_t rem = r->air_rem;
		uint64_t done = air_done(r, rec, r->radio_free, &rem);
		if (done > t)
			break;
		r->radio_free = done;
		r->air_rem = rem;
		rec->t = done + r->delay_ns;
		r->buffered -= rec->len;
		r->sent += rec->len;
		r->mid = (r->mid + rec_size(rec->len)) % r->size;
	}
	if (t > r->clock)
		r->clock = t;
}

static bool fits(const struct sim_radio *r, uint32_t buffered, uint32_t bytes)
{
	return r->modem_buffer == 0 || buffered == 0 || buffered + bytes <= r->modem_buffer;
}

uint64_t sim_radio_room_at(const struct sim_radio *r, uint32_t bytes)
{
	uint32_t buffered = r->buffered, off = r->mid;
	uint64_t free = r->radio_free, rem = r->air_rem;

	/* Walk the buffer as the air interface will send it until the transfer fits. */
	while (!fits(r, buffered, bytes)) {
		off = rec_skip_wrap(r, off);
		const struct rec *rec = rec_at(r, off);
		free = air_done(r, rec, free, &rem);
		buffered -= rec->len;
		off = (off + rec_size(rec->len)) % r->size;
	}
	return free > r->clock ? free : r->clock;
}

bool sim_radio_take(struct sim_radio *r, uint32_t bytes, uint64_t since, uint64_t now, uint64_t *at)
{
	uint64_t t = sim_radio_room_at(r, bytes);

	if (since > t)
		t = since;
	if (t > now)
		return false;
	air_advance(r, t);
	*at = t;
	return true;
}

int sim_radio_push(struct sim_radio *r, uint8_t mux, uint8_t flags, const uint8_t *pkt, size_t len,
		   uint64_t at)
{
	uint32_t need = rec_size((uint32_t)len), gap = 0;

	if (r->size - r->tail < need) {
		gap = r->size - r->tail; /* wrap: the tail's leftover is lost until head passes */
		if (r->used + gap + need > r->size)
			return -ENOBUFS;
		if (gap >= sizeof(struct rec))
			rec_at(r, r->tail)->len = REC_WRAP;
		r->used += gap;
		r->tail = 0;
	}
	if (r->used + need > r->size)
		return -ENOBUFS;
	struct rec *rec = rec_at(r, r->tail);
	*rec = (struct rec){ .len = (uint32_t)len, .mux = mux, .flags = flags, .t = at };
	memcpy(rec + 1, pkt, len);
	r->tail = (r->tail + need) % r->size;
	r->used += need;
	r->buffered += (uint32_t)len;
	if (r->buffered > r->buffered_max)
		r->buffered_max = r->buffered;
	return 0;
}

static void release(struct sim_radio *r, uint32_t old, uint32_t next)
{
	/* Bytes from old to next, a wrap gap included. */
	r->used -= next > old ? next - old : r->size - old + next;
}

uint64_t sim_radio_run(struct sim_radio *r, uint64_t now, sim_radio_deliver_fn deliver,
		       void *userdata)
{
	air_advance(r, now);
	/* The network: deliver what has spent its delay. */
	for (;;) {
		uint32_t at = r->head;
		r->head = rec_skip_wrap(r, r->head);
		if (r->head != at)
			release(r, at, r->head);
		if (r->head == r->mid)
			break;
		struct rec *rec = rec_at(r, r->head);
		if (rec->t > now)
			return rec->t;
		deliver(userdata, rec->mux, rec->flags, (const uint8_t *)(rec + 1), rec->len);
		uint32_t next = (r->head + rec_size(rec->len)) % r->size;
		release(r, r->head, next);
		r->head = next;
	}
	/* Nothing on the network side: the next is the buffer's head, once sent. */
	uint32_t off = rec_skip_wrap(r, r->mid);
	if (off == r->tail)
		return 0;
	uint64_t rem = r->air_rem;
	return air_done(r, rec_at(r, off), r->radio_free, &rem) + r->delay_ns;
}

uint32_t sim_radio_buffered(const struct sim_radio *r)
{
	return r->buffered;
}

uint32_t sim_radio_buffered_max(const struct sim_radio *r)
{
	return r->buffered_max;
}

uint64_t sim_radio_sent(const struct sim_radio *r)
{
	return r->sent;
}
