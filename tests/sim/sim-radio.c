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
	r->ul_rate = ul_rate;
	r->modem_buffer = modem_buffer;
	r->delay_ns = delay_ns;
}

bool sim_radio_room(const struct sim_radio *r, uint32_t bytes)
{
	return r->modem_buffer == 0 || r->buffered == 0 || r->buffered + bytes <= r->modem_buffer;
}

/* Skip a wrap marker at off. */
static uint32_t rec_skip_wrap(const struct sim_radio *r, uint32_t off)
{
	if (off != r->tail &&
	    (r->size - off < sizeof(struct rec) || rec_at(r, off)->len == REC_WRAP))
		return 0;
	return off;
}

int sim_radio_push(struct sim_radio *r, uint8_t mux, uint8_t flags, const uint8_t *pkt, size_t len,
		   uint64_t now)
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
	*rec = (struct rec){ .len = (uint32_t)len, .mux = mux, .flags = flags, .t = now };
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
	uint64_t wake = 0;

	/* The air interface: the buffer's head leaves when the radio has sent it. */
	for (;;) {
		r->mid = rec_skip_wrap(r, r->mid);
		if (r->mid == r->tail)
			break;
		struct rec *rec = rec_at(r, r->mid);
		uint64_t start = r->radio_free > rec->t ? r->radio_free : rec->t;
		uint64_t done = start;
		if (r->ul_rate)
			done += (uint64_t)rec->len * 8 * 1000000000ULL / r->ul_rate;
		if (done > now) {
			wake = done;
			break;
		}
		r->radio_free = done;
		rec->t = done + r->delay_ns;
		r->buffered -= rec->len;
		r->mid = (r->mid + rec_size(rec->len)) % r->size;
	}
	/* The network: deliver what has spent its delay. */
	for (;;) {
		uint32_t at = r->head;
		r->head = rec_skip_wrap(r, r->head);
		if (r->head != at)
			release(r, at, r->head);
		if (r->head == r->mid)
			break;
		struct rec *rec = rec_at(r, r->head);
		if (rec->t > now) {
			if (wake == 0 || rec->t < wake)
				wake = rec->t;
			break;
		}
		deliver(userdata, rec->mux, rec->flags, (const uint8_t *)(rec + 1), rec->len);
		uint32_t next = (r->head + rec_size(rec->len)) % r->size;
		release(r, r->head, next);
		r->head = next;
	}
	return wake;
}

uint32_t sim_radio_buffered(const struct sim_radio *r)
{
	return r->buffered;
}

uint32_t sim_radio_buffered_max(const struct sim_radio *r)
{
	return r->buffered_max;
}
