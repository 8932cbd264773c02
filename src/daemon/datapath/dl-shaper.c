/* SPDX-License-Identifier: MIT */
/*
 * The downlink shaper (downlink-rate in [device], one per modem: the radio's rate is the
 * modem's, shared by its muxes). Downlink packets are copied from the transfer into slots of a
 * queue of their own (the uplink's FQ-CoDel code, ulq.h: flows per mux, CoDel with ECN marks,
 * a byte limit) and leave for the mux devices no faster than the rate, so that the standing
 * queue of a download forms here, where CoDel keeps it short, rather than in the base
 * station's buffer in front of the radio, where every packet of every flow waits behind it.
 * The rate is fixed, or followed by dl-auto.c. Off, nothing here runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath-internal.h"
#include "log.h"
#include "mux.h"

static void datapath_on_dl_shaper_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	datapath_dlq_release(w->data);
}

int datapath_dlq_new(struct datapath *dp, const struct config_device *dev)
{
	uint32_t limit = dev->downlink_buffer ?: CONFIG_DOWNLINK_BUFFER_DEFAULT;
	/* Downloads are mostly full-sized packets: a slot per KiB leaves room for small ones. */
	struct ulq_params p = {
		.slots = limit / 1024 < 64 ? 64 : limit / 1024,
		.limit_bytes = limit,
		.mtu = 1500,
	};
	int r;

	ev_timer_init(&dp->dl_shaper_timer, datapath_on_dl_shaper_timer, 0., 0.);
	dp->dl_shaper_timer.data = dp;
	if (!dev->downlink_rate && !dev->downlink_rate_auto)
		return 0;
	dp->dl_shaper_fixed = dev->downlink_rate;
	ulq_shaper_init(&dp->dl_shaper, dev->downlink_rate, DATAPATH_DLQ_BURST_NS);
	if (dev->downlink_rate_auto) {
		dp->dl_auto = malloc(sizeof(*dp->dl_auto));
		if (!dp->dl_auto)
			return log_error_errno(-ENOMEM, "datapath: out of memory");
		dl_auto_init(dp->dl_auto, datapath_clock_ns());
	}
	r = ulq_new(&p, &dp->dlq);
	if (r < 0)
		return log_error_errno(r, "datapath: cannot set up the downlink shaper");
	return 0;
}

void datapath_dlq_free(struct datapath *dp)
{
	if (dp->loop)
		ev_timer_stop(dp->loop, &dp->dl_shaper_timer);
	dp->dlq = ulq_free(dp->dlq);
	free(dp->dl_auto);
	dp->dl_auto = NULL;
}

int datapath_dlq_mux_add(struct datapath *dp, struct mux *m, const struct ulq_codel_params *cp)
{
	if (!dp->dlq)
		return 0;
	return ulq_mux_new(dp->dlq, m->id, cp, &m->dlq);
}

bool datapath_dlq_enqueue(struct datapath *dp, struct mux *m, const uint8_t *pkt, size_t len,
			  bool ipv6, unsigned gro_flags)
{
	struct ulq *q = dp->dlq;
	uint64_t now = datapath_now_ns(dp);

	if (dp->dl_auto) {
		dp->dl_shaper.rate_bps = dl_auto_packet(dp->dl_auto, pkt, len, dp->dl_auto_now);
		/* Pass-through while nothing waits: no copy, as without a shaper. */
		if (dp->dl_shaper.rate_bps == 0 && q->packets == 0)
			return false;
	}
	if (!m->dlq || len > ULQ_SLOT_SIZE)
		return false; /* a mux added before a failure, a jumbo frame: straight through */
	uint32_t slot = ulq_reserve(q);
	if (slot == ULQ_NONE)
		return false; /* cannot happen: reserve drops the fattest flow to make room */
	memcpy(ulq_slot_data(q, slot), pkt, len);
	uint8_t flags = (ipv6 ? DATAPATH_DLQ_F_IPV6 : 0) |
			(gro_flags & GRO_PKT_CSUM_VALID ? DATAPATH_DLQ_F_CSUM_VALID : 0);
	ulq_commit(m->dlq, slot, (uint32_t)len, flags, now);
	return true;
}

void datapath_dlq_release(struct datapath *dp)
{
	struct ulq *q = dp->dlq;
	uint32_t held[DATAPATH_DLQ_RELEASE_BATCH];
	uint64_t now = datapath_now_ns(dp);

	ev_timer_stop(dp->loop, &dp->dl_shaper_timer);
	while (q->packets > 0 && ulq_shaper_wait(&dp->dl_shaper, now) == 0) {
		unsigned n = 0;
		while (n < DATAPATH_DLQ_RELEASE_BATCH &&
		       ulq_shaper_wait(&dp->dl_shaper, now) == 0) {
			uint32_t slot = ulq_dequeue(q, now);
			if (slot == ULQ_NONE)
				break;
			uint32_t len = ulq_slot_len(q, slot);
			uint8_t flags = ulq_slot_flags(q, slot);
			struct mux *m = dp->mux[ulq_slot_mux(q, slot)];
			held[n++] = slot;
			ulq_shaper_sent(&dp->dl_shaper, len, now);
			if (m)
				datapath_dl_write(
					dp, m, ulq_slot_data(q, slot), len,
					flags & DATAPATH_DLQ_F_IPV6,
					flags & DATAPATH_DLQ_F_CSUM_VALID ? GRO_PKT_CSUM_VALID : 0);
		}
		if (n == 0)
			break; /* CoDel dropped what was left */
		/* GRO and the ring point into the slots: written before they are reused. */
		datapath_dl_batch_flush(dp);
		for (unsigned i = 0; i < n; i++)
			ulq_release(q, held[i]);
	}
	if (q->packets == 0)
		return;
	uint64_t wait = ulq_shaper_wait(&dp->dl_shaper, now);
	ev_timer_set(&dp->dl_shaper_timer, (double)(wait ?: 100000) / 1e9, 0.);
	ev_timer_start(dp->loop, &dp->dl_shaper_timer);
}
