/* SPDX-License-Identifier: MIT */
/*
 * The datapath's life cycle, transport events and counters. The packet paths are in
 * datapath-dl.c and datapath-ul.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counters.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "headroom.h"
#include "log-mux.h"
#include "mux.h"
#include "uring.h"

static void datapath_on_headroom_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct datapath *dp = w->data;

	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++) {
		struct mux *m = dp->mux[id];
		if (m) {
			headroom_tick(dp, m);
			mux_sync_gro(m);
			if (m->ulq)
				ulq_mux_tick(m->ulq, datapath_now_ns(dp));
			if (m->dlq)
				ulq_mux_tick(m->dlq, datapath_now_ns(dp));
		}
	}
}

/* Runs once per loop iteration after all ready devices were read: send what we have. */
static void datapath_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	datapath_ul_prepare(w->data);
	datapath_ul_flush(w->data);
}

static void datapath_on_shaper_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	/* The loop's ev_prepare runs datapath_ul_prepare() before it sleeps again. */
}

uint64_t datapath_now_ns(const struct datapath *dp)
{
	return (uint64_t)(ev_now(dp->loop) * 1e9);
}

uint64_t datapath_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int datapath_ulq_get(struct datapath *dp)
{
	struct ulq_params p = {
		.slots = DATAPATH_ULQ_SLOTS,
		.limit_bytes = DATAPATH_ULQ_LIMIT,
		.mtu = CONFIG_MTU_DEFAULT,
	};

	if (dp->ulq)
		return 0;
	dp->ulq_scratch = malloc(DATAPATH_UL_SCRATCH);
	if (!dp->ulq_scratch)
		return -ENOMEM;
	return ulq_new(&p, &dp->ulq);
}

/* The modem took an OUT transfer: the in-flight limit learns how fast. */
static void datapath_on_out_complete(void *userdata, size_t len)
{
	struct datapath *dp = userdata;

	/* Batched, as NAPI does for BQL: datapath_ul_sync_completions() takes them in. */
	dp->ul_completed += (uint32_t)len;
	/* A fifo reader that waited for room in flight (datapath_ul_fifo_yields()) resumes in
	 * the next prepare: no OUT get failed, so on_out_ready will not say so. */
	datapath_ul_transfers_freed(dp);
}

void datapath_ul_sync_completions(struct datapath *dp)
{
	uint64_t now;

	if (dp->ul_completed == 0)
		return;
	now = datapath_now_ns(dp);
	ulq_dql_completed(&dp->dql, dp->ul_completed, now);
	/*
	 * Held back: packets wait in the queue, or in the kernel while reads pause or fifo
	 * packets wait for room in flight, and not for the shaper (then completions come at
	 * our rate, not the modem's).
	 */
	bool held = dp->ulq &&
		    (dp->ulq->packets > 0 ||
		     dp->ul_reader[UL_READER_FQ_CODEL] == UL_READER_PAUSED || dp->ul_fifo_held) &&
		    ulq_shaper_wait(&dp->shaper, now) == 0;
	ulq_rate_complete(&dp->ul_rate, dp->ul_completed, held, now);
	if (dp->shaper_auto)
		dp->shaper.rate_bps =
			ulq_auto_step(&dp->ul_auto, &dp->ul_rate, dp->ul_completed, now);
	dp->ul_completed = 0;
}

static void datapath_on_out_ready(void *userdata)
{
	struct datapath *dp = userdata;

	datapath_send_pending_acks(dp);
	datapath_ul_segment_resume(dp);
	datapath_ul_transfers_freed(dp);
}

static void datapath_update_carrier(struct datapath *dp, struct mux *m)
{
	int r = netdev_set_carrier(&m->nd, dp->modem_up && m->link_up);
	if (r < 0)
		log_mux_warning_errno(NULL, m->id, m->nd.name, r, "cannot set carrier");
}

static void datapath_on_connect(void *userdata)
{
	struct datapath *dp = userdata;

	/* The function decides the framing; QMAP's limits come back with the next grant. */
	if (datapath_is_ntb(dp)) {
		if (!dp->ntb_limits) {
			dp->qmap_ul_max_size = dp->ul_max_size;
			dp->qmap_ul_max_datagrams = dp->ul_max_datagrams;
			dp->ntb_limits = true;
		}
		datapath_ntb_connected(dp);
	} else {
		if (dp->ntb_limits) {
			dp->ul_max_size = dp->qmap_ul_max_size;
			dp->ul_max_datagrams = dp->qmap_ul_max_datagrams;
			dp->ntb_limits = false;
		}
		dp->ul_header_size = qmap_ul_header_size(dp->version);
	}
	dp->modem_up = true;
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id])
			datapath_update_carrier(dp, dp->mux[id]);
	if (!dp->modem_seen) {
		dp->modem_seen = true;
		ul_reader_update_all(dp);
	}
	if (dp->events.on_modem_up)
		dp->events.on_modem_up(dp->events.userdata);
}

static void datapath_on_control(void *userdata, const uint8_t *buf, size_t len)
{
	struct datapath *dp = userdata;

	if (dp->events.on_control)
		dp->events.on_control(dp->events.userdata, buf, len);
}

static void datapath_on_disconnect(void *userdata)
{
	struct datapath *dp = userdata;

	dp->stats.modem_disconnects++;
	dp->modem_up = false;
	dp->n_ack_pending = 0; /* answers to a modem that is gone */
	dp->ul_gso_mux = NULL;
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id] && dp->mux[id]->ulq)
			ulq_mux_flush(dp->mux[id]->ulq);
	if (dp->ul_out) {
		transport_out_put(dp->transport, dp->ul_out);
		dp->ul_out = NULL;
		dp->ul_frames = 0;
	}
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id])
			datapath_update_carrier(dp, dp->mux[id]);
	if (dp->events.on_modem_down)
		dp->events.on_modem_down(dp->events.userdata);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int datapath_new(struct ev_loop *loop, struct rtnl *rtnl, const struct config_device *dev,
		 const struct datapath_events *events, struct datapath **ret)
{
	return datapath_new_with_backend(loop, rtnl, dev, NULL, events, ret);
}

int datapath_new_with_backend(struct ev_loop *loop, struct rtnl *rtnl,
			      const struct config_device *dev, const struct transport_ops *backend,
			      const struct datapath_events *events, struct datapath **ret)
{
	struct datapath *dp = calloc(1, sizeof(*dp));
	int r;

	if (!dp)
		return log_error_errno(-ENOMEM, "datapath: out of memory");
	dp->loop = loop;
	dp->rtnl = rtnl;
	dp->offload_devices = true;
	if (events)
		dp->events = *events;
	dp->version = dev->qmap_version;
	dp->ul_header_size = qmap_ul_header_size(dp->version);
	dp->ul_max_size = dev->ul_max_size;
	dp->ul_max_datagrams = dev->ul_max_datagrams;
	ev_prepare_init(&dp->ul_flush, datapath_on_prepare);
	dp->ul_flush.data = dp;
	ev_timer_init(&dp->headroom_timer, datapath_on_headroom_tick, HEADROOM_INTERVAL_SECONDS,
		      HEADROOM_INTERVAL_SECONDS);
	dp->headroom_timer.data = dp;
	ev_timer_init(&dp->shaper_timer, datapath_on_shaper_timer, 0., 0.);
	dp->shaper_timer.data = dp;
	ulq_shaper_init(&dp->shaper, dev->uplink_rate, DATAPATH_SHAPER_BURST_NS);
	dp->shaper_auto = dev->uplink_rate_auto;
	r = datapath_dlq_new(dp, dev);
	if (r < 0) {
		datapath_free(dp);
		return r;
	}

	struct transport_params params = {
		.dl_max_size = dev->dl_max_size,
		/* A modem may grant larger aggregates than asked (Fibocom FM150: 32768, RM520N:
		 * 31744, docs/PROTOCOLS.md §5): with QMI the buffers have room for those. */
		.dl_buffer_size = dev->control == CONFIG_CONTROL_QMI &&
						  dev->dl_max_size < DATAPATH_DL_GRANT_ROOM
					  ? DATAPATH_DL_GRANT_ROOM
					  : dev->dl_max_size,
		.rx_transfers = dev->rx_transfers,
		.ul_max_size = dev->ul_max_size,
		.max_packet_size = dev->max_packet_size,
		.ntb_format = dev->ntb_format,
	};
	/*
	 * In flight: from nothing (one transfer always goes) up to every OUT buffer; it grows
	 * whenever the modem ran dry while we held packets back.
	 */
	ulq_dql_init(&dp->dql, 0, 16 * dev->ul_max_size, DATAPATH_DQL_HOLD_NS);
	dp->ul_scratch = malloc(DATAPATH_UL_SCRATCH);
	if (!dp->ul_scratch) {
		datapath_free(dp);
		return log_error_errno(-ENOMEM, "datapath: out of memory");
	}
	struct transport_callbacks cb = {
		.on_bulk_in = datapath_bulk_in,
		.on_bulk_in_done = datapath_gro_flush,
		.on_control = datapath_on_control,
		.on_out_ready = datapath_on_out_ready,
		.on_out_complete = datapath_on_out_complete,
		.on_connect = datapath_on_connect,
		.on_disconnect = datapath_on_disconnect,
	};
	if (backend) {
		size_t n = strlen(backend->scheme);
		const char *address = dev->device;

		if (strncmp(address, backend->scheme, n) == 0)
			address += n;
		r = transport_new_with_backend(loop, backend, address, &params, &cb, dp,
					       &dp->transport);
	} else {
		r = transport_new(loop, dev->device, &params, &cb, dp, &dp->transport);
	}
	if (r < 0) {
		datapath_free(dp);
		return log_error_errno(r, "device %s: cannot set up transport", dev->device);
	}
	/*
	 * The ring is there by default; each mux measures whether batching its writes through it
	 * is cheaper than one writev per packet on this machine (write-mode.h: 0.3-0.9x where
	 * system calls are expensive, 1.1x where they are cheap, tests/bench/RESULTS.md).
	 * Without io_uring, plain writes, same counters.
	 */
	dp->write_mode_measured = -1;
	r = datapath_set_batch_writes(dp, true);
	if (r < 0)
		log_info("datapath: io_uring unavailable (%s), one write per packet", strerror(-r));
	*ret = dp;
	return 0;
}

int datapath_mux_add(struct datapath *dp, const struct config_mux *cfg, bool persist, bool link_up,
		     struct mux **ret)
{
	struct mux *m;
	int r;

	if (dp->mux[cfg->id])
		return -EEXIST;
	r = mux_new(dp, cfg, persist, &m);
	if (r < 0)
		return r;
	ev_io_init(&m->io, datapath_ul_on_readable, m->nd.fd, EV_READ);
	m->io.data = m;
	m->link_up = link_up;
	dp->mux[cfg->id] = m;
	dp->n_mux++;
	datapath_update_carrier(dp, m);
	ul_reader_update_mux(dp, m);
	if (ret)
		*ret = m;
	return 0;
}

int datapath_mux_del(struct datapath *dp, unsigned id)
{
	if (id >= ARRAY_SIZE(dp->mux) || !dp->mux[id])
		return -ENOENT;
	/* Queued writes point at the mux: out with them first. */
	datapath_write_flush(dp);
	/* Frames of this mux already in the uplink aggregate still go out: they are valid. */
	dp->mux[id] = mux_free(dp->mux[id]);
	dp->n_mux--;
	return 0;
}

void datapath_mux_set_link(struct datapath *dp, struct mux *m, bool up)
{
	m->link_up = up;
	if (!up && m->ulq)
		ulq_mux_flush(m->ulq); /* nowhere to go: the session is gone */
	datapath_update_carrier(dp, m);
}

int datapath_set_data_format(struct datapath *dp, enum qmap_version version, uint32_t dl_max_size,
			     uint32_t ul_max_size, uint32_t ul_max_datagrams,
			     uint32_t dl_min_padding)
{
	if (ul_max_size == 0 || ul_max_size > dp->transport->params.ul_max_size ||
	    ul_max_datagrams == 0 || dl_min_padding > QMAP_DL_PADDING_MAX)
		return -EINVAL;
	int r = transport_set_dl_size(dp->transport, dl_max_size);
	if (r < 0)
		return r;
	dp->dl_min_padding = dl_min_padding;
	/* A half-built aggregate was framed for the old version: send it first. */
	datapath_ul_flush(dp);
	/* Queued segments may leave their checksums to a QMAPv5 modem: not to another one. */
	if (version != dp->version)
		for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
			if (dp->mux[id] && dp->mux[id]->ulq)
				ulq_mux_flush(dp->mux[id]->ulq);
	dp->version = version;
	dp->ul_header_size = qmap_ul_header_size(version);
	dp->ul_max_size = ul_max_size;
	dp->ul_max_datagrams = ul_max_datagrams;
	return 0;
}

struct datapath *datapath_free(struct datapath *dp)
{
	if (!dp)
		return NULL;
	if (dp->loop) {
		ev_prepare_stop(dp->loop, &dp->ul_flush);
		ev_timer_stop(dp->loop, &dp->headroom_timer);
		ev_timer_stop(dp->loop, &dp->shaper_timer);
	}
	if (dp->transport) {
		if (dp->ul_out)
			transport_out_put(dp->transport, dp->ul_out);
		transport_stop(dp->transport);
	}
	dp->uring = uring_free(dp->uring);
	/* The devices go all at once (netdev_close_many()), then the rest of each mux. */
	{
		struct netdev *nds[ARRAY_SIZE(dp->mux)];
		size_t n = 0;

		for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++) {
			if (!dp->mux[id])
				continue;
			if (dp->loop)
				ev_io_stop(dp->loop, &dp->mux[id]->io);
			mux_unkeep_device(dp->mux[id]);
			nds[n++] = &dp->mux[id]->nd;
		}
		netdev_close_many(nds, n);
	}
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		dp->mux[id] = mux_free(dp->mux[id]);
	transport_free(dp->transport);
	dp->ulq = ulq_free(dp->ulq); /* after the muxes: they hand their flows back */
	datapath_dlq_free(dp);
	free(dp->ulq_scratch);
	free(dp->ul_scratch);
	free(dp);
	return NULL;
}

void datapath_keep_modem(struct datapath *dp)
{
	transport_keep_modem(dp->transport);
}

int datapath_start(struct datapath *dp)
{
	int r = transport_start(dp->transport);
	if (r < 0)
		return log_error_errno(r, "datapath: cannot start transport");
	ev_prepare_start(dp->loop, &dp->ul_flush);
	ev_timer_start(dp->loop, &dp->headroom_timer);
	for (enum ul_reader reader = 0; reader < _UL_READER_MAX; reader++)
		ul_reader_set_state(dp, reader, UL_READER_READING, "datapath started");
	return 0;
}

/* ---- accessors ---------------------------------------------------------------------- */

uint32_t datapath_dl_buffer_size(const struct datapath *dp)
{
	return dp->transport->rx_buf_size;
}

int datapath_data_interface(const struct datapath *dp)
{
	return dp->transport->data_interface;
}

bool datapath_modem_up(const struct datapath *dp)
{
	return dp->modem_up;
}

struct mux *datapath_mux(const struct datapath *dp, unsigned id)
{
	return id < ARRAY_SIZE(dp->mux) ? dp->mux[id] : NULL;
}

const struct datapath_stats *datapath_get_stats(const struct datapath *dp)
{
	return &dp->stats;
}

struct transport *datapath_transport(const struct datapath *dp)
{
	return dp->transport;
}

int datapath_control_send(struct datapath *dp, const uint8_t *buf, size_t len)
{
	return transport_control_send(dp->transport, buf, len);
}

/* ---- counters ----------------------------------------------------------------------- */

/*
 * Format (stable, tests parse it):
 * Every line starts with `prefix` (a journald priority such as "<6>" for stderr, or "").
 *   device: key=value ...
 *   malformed: <qmap_error_name>=N ... ntb_<ntb_error_name>=N ...
 *   mux <id> (<ifname>): mode=<status> key=value ...
 * The device and mux keys, shared with the JSON of the control socket, are the tables in
 * counters.c.
 */
void datapath_print_stats(const struct datapath *dp, FILE *f, const char *prefix)
{
	const struct datapath_stats *s = &dp->stats;

	fprintf(f, "%sdevice:", prefix);
	counters_print_device(dp, f);
	fprintf(f, "\n%smalformed:", prefix);
	for (int e = 0; e < _QMAP_ERR_MAX; e++)
		fprintf(f, " %s=%" PRIu64, qmap_error_name(e), s->dl_malformed[e]);
	for (int e = 0; e < _NTB_ERR_MAX; e++)
		fprintf(f, " ntb_%s=%" PRIu64, ntb_error_name(e), s->dl_ntb_malformed[e]);
	fputc('\n', f);
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++) {
		const struct mux *m = dp->mux[id];
		if (!m)
			continue;
		fprintf(f, "%smux %u (%s):", prefix, m->id, m->nd.name);
		counters_print_mux(m, f);
		fputc('\n', f);
	}
	fflush(f);
}
