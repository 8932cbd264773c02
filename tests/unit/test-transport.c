/* SPDX-License-Identifier: MIT */
/* Transport core, through the in-memory backend: ring size, OUT pool, ZLP rule, replay. */
#include <errno.h>
#include <ev.h>
#include <string.h>

#include "test-case.h"
#include "transport-mem.h"

struct seen {
	unsigned bulk_in;
	size_t last_len;
	uint8_t first_byte;
	unsigned out_ready;
	unsigned connected;
};

static void on_bulk_in(void *userdata, uint8_t *buf, size_t len)
{
	struct seen *s = userdata;
	s->bulk_in++;
	s->last_len = len;
	s->first_byte = len ? buf[0] : 0;
}

static void on_out_ready(void *userdata)
{
	((struct seen *)userdata)->out_ready++;
}

static void on_connect(void *userdata)
{
	((struct seen *)userdata)->connected++;
}

/* Refused before anything is allocated: an unknown backend, the test-only one by name, extra
 * arguments, a transfer size over the limit. */
TEST(bad_specs)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct transport_callbacks cb = {
		.on_bulk_in = on_bulk_in,
		.on_out_ready = on_out_ready,
		.on_connect = on_connect,
	};
	struct transport_params params = {
		.dl_max_size = 16384,
		.rx_transfers = 4, /* asks for fewer than 16: the transport must not obey */
		.ul_max_size = 4096,
		.ul_buffers = 2,
		.max_packet_size = 512,
		.ul_headroom = 32,
	};
	struct seen seen = {};
	struct transport *t = NULL;

	EXPECT_EQ(transport_new(loop, "bogus:x", &params, &cb, &seen, &t), -EPROTONOSUPPORT);
	/* The test-only backend is not in the daemon's table: a config cannot name it. */
	EXPECT_EQ(transport_new(loop, "mem:", &params, &cb, &seen, &t), -EPROTONOSUPPORT);
	EXPECT_EQ(transport_new_with_backend(loop, &transport_mem_ops, "extra", &params, &cb, &seen,
					     &t),
		  -EINVAL);
	struct transport_params too_big = params;
	too_big.dl_max_size = TRANSPORT_MAX_TRANSFER + 1;
	EXPECT_EQ(
		transport_new_with_backend(loop, &transport_mem_ops, "", &too_big, &cb, &seen, &t),
		-EINVAL);
	EXPECT_PTR_EQ(t, NULL);
}

TEST(mem_backend)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct transport_callbacks cb = {
		.on_bulk_in = on_bulk_in,
		.on_out_ready = on_out_ready,
		.on_connect = on_connect,
	};
	struct transport_params params = {
		.dl_max_size = 16384,
		.rx_transfers = 4, /* asks for fewer than 16: the transport must not obey */
		.ul_max_size = 4096,
		.ul_buffers = 2,
		.max_packet_size = 512,
		.ul_headroom = 32,
	};
	struct seen seen = {};
	struct transport *t = NULL;

	EXPECT_EQ(transport_new_with_backend(loop, &transport_mem_ops, "", &params, &cb, &seen, &t),
		  0);
	EXPECT_GE(t->n_rx, 16);
	EXPECT_EQ(t->n_out, 2);

	/* Replay before start is refused; after start it reaches the callback. */
	uint8_t agg[100] = { 0x42 };
	EXPECT_EQ(transport_mem_replay(t, agg, sizeof(agg)), -EINVAL);
	EXPECT_EQ(transport_start(t), 0);
	EXPECT_EQ(seen.connected, 1);
	EXPECT_EQ(transport_mem_replay(t, agg, sizeof(agg)), 0);
	EXPECT_EQ(seen.bulk_in, 1);
	EXPECT_EQ(seen.last_len, sizeof(agg));
	EXPECT_EQ(seen.first_byte, 0x42);
	EXPECT_EQ(transport_mem_replay(t, agg, params.dl_max_size + 1), -EMSGSIZE);
	EXPECT_EQ(t->stats.in_errors, 1);

	/* Receive buffers rotate through the whole ring. */
	uint8_t *first = t->rx_buf[0];
	for (uint32_t i = 0; i < t->n_rx; i++)
		EXPECT_TRUE(t->rx_buf[i] != NULL);
	EXPECT_TRUE(((uintptr_t)first % 64) == 0);

	/* OUT pool: headroom is writable in front, two buffers, then empty. */
	struct transport_out *a = transport_out_get(t);
	struct transport_out *b = transport_out_get(t);
	EXPECT_TRUE(a && b && a != b);
	EXPECT_TRUE(transport_out_get(t) == NULL);
	EXPECT_EQ(t->stats.out_busy, 1);
	memset(a->data - params.ul_headroom, 0xaa, params.ul_headroom + a->size);

	/* ZLP exactly when the length is a multiple of wMaxPacketSize. */
	a->len = 1024;
	EXPECT_EQ(transport_out_submit(t, a), 0);
	EXPECT_TRUE(a->zlp);
	EXPECT_EQ(seen.out_ready, 1); /* someone waited: told when a buffer came back */
	b->len = 1025;
	EXPECT_EQ(transport_out_submit(t, b), 0);
	EXPECT_TRUE(!b->zlp);
	EXPECT_EQ(seen.out_ready, 1); /* nobody waited this time */
	EXPECT_EQ(t->stats.out_transfers, 2);
	EXPECT_EQ(t->stats.out_zlp, 1);
	EXPECT_EQ(t->stats.out_bytes, 2049);

	/* A borrowed buffer can be given back unsent. */
	struct transport_out *c = transport_out_get(t);
	EXPECT_TRUE(c != NULL);
	transport_out_put(t, c);
	EXPECT_EQ(t->n_out_free, 2);

	transport_stop(t);
	EXPECT_TRUE(transport_free(t) == NULL);
	EXPECT_TRUE(transport_free(NULL) == NULL);
}
