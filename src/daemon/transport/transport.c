/* SPDX-License-Identifier: MIT */
/*
 * Backend-independent part of the transport: buffer rings allocated once, the OUT pool
 * and the zero-length-packet rule. Backends live in transport-<name>.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "transport.h"

#define TRANSPORT_UL_BUFFERS_DEFAULT 16 /* room for a 64 KiB super-packet while others fly */
#define TRANSPORT_BUFFER_ALIGN	     64 /* a cache line: payloads start aligned */

static const struct transport_ops *const transport_backends[] = {
	&transport_sim_ops,
	&transport_usb_ops,
};

static size_t align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

static int transport_alloc_buffers(struct transport *t)
{
	struct transport_params *p = &t->params;

	t->n_rx = p->rx_transfers;
	t->rx_buf = calloc(t->n_rx, sizeof(*t->rx_buf));
	if (!t->rx_buf)
		return -ENOMEM;
	uint32_t room = p->dl_buffer_size > p->dl_max_size ? p->dl_buffer_size : p->dl_max_size;
	/* Each buffer after its own headroom, which no neighbour's transfer writes into. */
	_Static_assert(TRANSPORT_RX_HEADROOM % TRANSPORT_BUFFER_ALIGN == 0,
		       "payloads stay aligned");
	size_t rx_stride = TRANSPORT_RX_HEADROOM + align_up(room, TRANSPORT_BUFFER_ALIGN);
	t->rx_buf_size = room;
	uint8_t *rx_mem = aligned_alloc(TRANSPORT_BUFFER_ALIGN, rx_stride * t->n_rx);
	if (!rx_mem)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n_rx; i++)
		t->rx_buf[i] = rx_mem + i * rx_stride + TRANSPORT_RX_HEADROOM;

	t->n_out = p->ul_buffers;
	t->out = calloc(t->n_out, sizeof(*t->out));
	t->out_free = calloc(t->n_out, sizeof(*t->out_free));
	if (!t->out || !t->out_free)
		return -ENOMEM;
	size_t head = align_up(p->ul_headroom, TRANSPORT_BUFFER_ALIGN);
	size_t out_stride = head + align_up(p->ul_max_size, TRANSPORT_BUFFER_ALIGN);
	t->out_mem = aligned_alloc(TRANSPORT_BUFFER_ALIGN, out_stride * t->n_out);
	if (!t->out_mem)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n_out; i++) {
		t->out[i].data = t->out_mem + i * out_stride + head;
		t->out[i].size = p->ul_max_size;
		t->out[i].index = i;
		t->out_free[i] = i;
	}
	t->n_out_free = t->n_out;
	return 0;
}

int transport_new(struct ev_loop *loop, const char *spec, const struct transport_params *params,
		  const struct transport_callbacks *cb, void *userdata, struct transport **ret)
{
	const struct transport_ops *ops = NULL;
	const char *address = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(transport_backends); i++) {
		size_t n = strlen(transport_backends[i]->scheme);
		if (strncmp(spec, transport_backends[i]->scheme, n) == 0) {
			ops = transport_backends[i];
			address = spec + n;
			break;
		}
	}
	if (!ops)
		return -EPROTONOSUPPORT;
	return transport_new_with_backend(loop, ops, address, params, cb, userdata, ret);
}

int transport_new_with_backend(struct ev_loop *loop, const struct transport_ops *ops,
			       const char *address, const struct transport_params *params,
			       const struct transport_callbacks *cb, void *userdata,
			       struct transport **ret)
{
	if (params->dl_max_size == 0 || params->dl_max_size > TRANSPORT_MAX_TRANSFER ||
	    params->dl_buffer_size > TRANSPORT_MAX_TRANSFER || params->ul_max_size == 0 ||
	    params->ul_max_size > TRANSPORT_MAX_TRANSFER || params->max_packet_size == 0)
		return -EINVAL;

	struct transport *t = calloc(1, ops->size);
	if (!t)
		return -ENOMEM;
	t->ops = ops;
	t->loop = loop;
	t->params = *params;
	t->data_interface = -1;
	/* Seed lesson 2: never fewer than 16 receive transfers in flight. */
	if (t->params.rx_transfers < 16)
		t->params.rx_transfers = 16;
	if (t->params.ul_buffers == 0)
		t->params.ul_buffers = TRANSPORT_UL_BUFFERS_DEFAULT;
	t->cb = *cb;
	t->userdata = userdata;

	int r = transport_alloc_buffers(t);
	if (r >= 0)
		r = ops->init(t, address);
	if (r < 0) {
		transport_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

struct transport *transport_free(struct transport *t)
{
	if (!t)
		return NULL;
	if (t->ops->free)
		t->ops->free(t);
	if (t->rx_buf && t->rx_buf[0])
		free(t->rx_buf[0] - TRANSPORT_RX_HEADROOM);
	free(t->rx_buf);
	free(t->out_mem);
	free(t->out);
	free(t->out_free);
	free(t);
	return NULL;
}

int transport_start(struct transport *t)
{
	return t->ops->start(t);
}

int transport_set_dl_size(struct transport *t, uint32_t dl_max_size)
{
	if (dl_max_size == 0 || dl_max_size > t->rx_buf_size)
		return -EINVAL;
	t->params.dl_max_size = dl_max_size;
	if (t->ops->dl_size_changed)
		t->ops->dl_size_changed(t);
	return 0;
}

void transport_keep_modem(struct transport *t)
{
	t->keep_modem = true;
}

void transport_stop(struct transport *t)
{
	t->ops->stop(t);
}

struct transport_out *transport_out_get(struct transport *t)
{
	return transport_out_get_keep(t, 0);
}

struct transport_out *transport_out_get_keep(struct transport *t, uint32_t keep)
{
	if (t->n_out_free <= keep) {
		t->stats.out_busy++;
		t->out_waiting = true;
		return NULL;
	}
	struct transport_out *out = &t->out[t->out_free[--t->n_out_free]];
	out->len = 0;
	out->zlp = false;
	out->next = NULL;
	return out;
}

void transport_out_put(struct transport *t, struct transport_out *out)
{
	/* A buffer put back twice would overrun the free list. */
	assert(t->n_out_free < t->n_out && out->index < t->n_out);
	t->out_free[t->n_out_free++] = out->index;
	if (t->out_waiting) {
		t->out_waiting = false;
		if (t->cb.on_out_ready)
			t->cb.on_out_ready(t->userdata);
	}
}

int transport_out_submit(struct transport *t, struct transport_out *out)
{
	/*
	 * A transfer that ends exactly on a packet boundary needs a zero-length packet so the
	 * modem sees where it ends (qmi_wwan sets FLAG_SEND_ZLP for the same reason).
	 */
	out->zlp = out->len > 0 && out->len % t->params.max_packet_size == 0;
	t->stats.out_transfers++;
	t->stats.out_bytes += out->len;
	if (out->zlp)
		t->stats.out_zlp++;
	return t->ops->out_submit(t, out, out->zlp);
}

void transport_out_complete(struct transport *t, struct transport_out *out)
{
	if (t->cb.on_out_complete)
		t->cb.on_out_complete(t->userdata, out->len);
	transport_out_put(t, out);
}

int transport_control_send(struct transport *t, const uint8_t *buf, size_t len)
{
	if (!t->ops->control_send)
		return -EOPNOTSUPP;
	return t->ops->control_send(t, buf, len);
}
