/* SPDX-License-Identifier: MIT */
/*
 * The `mem` transport: an in-process modem for benchmarks and tests. Replayed aggregates go
 * through the same receive ring and callback as real transfers.
 */
#include <errno.h>
#include <string.h>

#include "transport-mem.h"

struct transport_mem {
	struct transport base;
	uint32_t next_rx;
	bool started;
	bool hold_out;		    /* OUT transfers stay pending until released */
	struct transport_out *held; /* pending, in submission order (through ->next) */
};

/* Copy one transfer into the next receive buffer and hand it over, as a completed DMA. */
static void mem_bulk_in(struct transport *t, const uint8_t *buf, size_t len)
{
	struct transport_mem *m = (struct transport_mem *)t;
	uint8_t *rx = t->rx_buf[m->next_rx];

	m->next_rx = (m->next_rx + 1) % t->n_rx;
	if (buf != rx) /* built in place by the caller (transport_mem_rx_buf): nothing to copy */
		memcpy(rx, buf, len);
	t->stats.in_transfers++;
	t->stats.in_bytes += len;
	t->cb.on_bulk_in(t->userdata, rx, len);
}

static int mem_replay(struct transport *t, const uint8_t *const *bufs, const size_t *lens, size_t n)
{
	struct transport_mem *m = (struct transport_mem *)t;

	if (t->ops != &transport_mem_ops || !m->started || n == 0 || n > t->n_rx)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (lens[i] > t->params.dl_max_size) {
			t->stats.in_errors++;
			return -EMSGSIZE;
		}
	for (size_t i = 0; i < n; i++)
		mem_bulk_in(t, bufs[i], lens[i]);
	if (t->cb.on_bulk_in_done)
		t->cb.on_bulk_in_done(t->userdata);
	return 0;
}

int transport_mem_replay(struct transport *t, const uint8_t *buf, size_t len)
{
	return mem_replay(t, &buf, &len, 1);
}

int transport_mem_replay_batch(struct transport *t, const uint8_t *const *bufs, const size_t *lens,
			       size_t n)
{
	int r = mem_replay(t, bufs, lens, n);

	if (r >= 0 && n > t->stats.in_batch_max)
		t->stats.in_batch_max = n;
	return r;
}

uint8_t *transport_mem_rx_buf(struct transport *t, uint32_t i)
{
	struct transport_mem *m = (struct transport_mem *)t;

	if (t->ops != &transport_mem_ops || i >= t->n_rx)
		return NULL;
	return t->rx_buf[(m->next_rx + i) % t->n_rx];
}

static int mem_init(struct transport *t, const char *address)
{
	(void)t;
	return address[0] == '\0' ? 0 : -EINVAL;
}

static int mem_start(struct transport *t)
{
	((struct transport_mem *)t)->started = true;
	if (t->cb.on_connect)
		t->cb.on_connect(t->userdata);
	return 0;
}

static void mem_stop(struct transport *t)
{
	((struct transport_mem *)t)->started = false;
}

static int mem_out_submit(struct transport *t, struct transport_out *out, bool zlp)
{
	struct transport_mem *m = (struct transport_mem *)t;
	(void)zlp;

	if (m->hold_out) {
		struct transport_out **tail = &m->held;
		while (*tail)
			tail = &(*tail)->next;
		out->next = NULL;
		*tail = out;
		return 0;
	}
	transport_out_complete(t, out);
	return 0;
}

void transport_mem_hold_out(struct transport *t, bool hold)
{
	((struct transport_mem *)t)->hold_out = hold;
}

struct transport_out *transport_mem_held(struct transport *t)
{
	return ((struct transport_mem *)t)->held;
}

unsigned transport_mem_complete_held(struct transport *t)
{
	struct transport_mem *m = (struct transport_mem *)t;
	unsigned n = 0;

	while (m->held) {
		struct transport_out *out = m->held;
		m->held = out->next;
		transport_out_complete(t, out);
		n++;
	}
	return n;
}

bool transport_mem_complete_one(struct transport *t)
{
	struct transport_mem *m = (struct transport_mem *)t;
	struct transport_out *out = m->held;

	if (!out)
		return false;
	m->held = out->next;
	transport_out_complete(t, out);
	return true;
}

const struct transport_ops transport_mem_ops = {
	.scheme = "mem:",
	.size = sizeof(struct transport_mem),
	.init = mem_init,
	.start = mem_start,
	.stop = mem_stop,
	.out_submit = mem_out_submit,
};
