/* SPDX-License-Identifier: MIT */
/*
 * The `mem` transport: an in-process modem for benchmarks and tests. Replayed aggregates go
 * through the same receive ring and callback as real transfers.
 */
#include <errno.h>
#include <string.h>

#include "transport.h"

struct transport_mem {
	struct transport base;
	uint32_t next_rx;
	bool started;
};

int transport_mem_replay(struct transport *t, const uint8_t *buf, size_t len)
{
	struct transport_mem *m = (struct transport_mem *)t;

	if (t->ops != &transport_mem_ops || !m->started)
		return -EINVAL;
	if (len > t->params.dl_max_size) {
		t->stats.in_errors++;
		return -EMSGSIZE;
	}
	uint8_t *rx = t->rx_buf[m->next_rx];
	m->next_rx = (m->next_rx + 1) % t->n_rx;
	memcpy(rx, buf, len);
	t->stats.in_transfers++;
	t->stats.in_bytes += len;
	t->cb.on_bulk_in(t->userdata, rx, len);
	if (t->cb.on_bulk_in_done)
		t->cb.on_bulk_in_done(t->userdata);
	return 0;
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
	(void)zlp;
	transport_out_complete(t, out);
	return 0;
}

const struct transport_ops transport_mem_ops = {
	.scheme = "mem:",
	.size = sizeof(struct transport_mem),
	.init = mem_init,
	.start = mem_start,
	.stop = mem_stop,
	.out_submit = mem_out_submit,
};
