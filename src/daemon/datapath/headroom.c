/* SPDX-License-Identifier: MIT */
#include <inttypes.h>

#include "datapath-internal.h"
#include "headroom.h"
#include "log-mux.h"
#include "rtnl.h"

bool headroom_want_xdp(bool xdp_now, uint64_t packets, uint64_t merged, double since_switch)
{
	if (packets < HEADROOM_MIN_PACKETS || since_switch < HEADROOM_MIN_SWITCH_SECONDS)
		return xdp_now;
	double share = (double)merged / (double)packets;
	if (xdp_now && share > HEADROOM_DETACH_ABOVE)
		return false;
	if (!xdp_now && share < HEADROOM_ATTACH_BELOW)
		return true;
	return xdp_now;
}

static void headroom_check_device(struct datapath *dp, struct mux *m)
{
	uint64_t rx_packets, tx_dropped;

	if (rtnl_link_get_counters(dp->rtnl, m->nd.ifindex, &rx_packets, &tx_dropped) < 0)
		return;
	/*
	 * Uplink packets the device's queue dropped while we did not read (all OUT buffers in
	 * flight, a flow-disabled mux): the kernel counts them, we only show them.
	 */
	if (m->hr.primed && tx_dropped > m->hr.last_tx_dropped)
		m->stats.tx_dropped_device += tx_dropped - m->hr.last_tx_dropped;
	m->hr.last_tx_dropped = tx_dropped;
	uint64_t writes = m->stats.rx_writes - m->hr.last_writes;
	uint64_t received = rx_packets - m->hr.last_rx_packets;
	/* The first tick only takes the baseline: the device may have counted before us. */
	if (m->hr.primed && writes > received)
		m->stats.rx_silent_drops += writes - received;
	m->hr.last_writes = m->stats.rx_writes;
	m->hr.last_rx_packets = rx_packets;
	m->hr.primed = true;
}

void headroom_decide(struct datapath *dp, struct mux *m)
{
	if (!m->gro)
		return;
	uint64_t packets = m->gro->stats.packets - m->hr.last_packets;
	uint64_t merged = m->gro->stats.segments_merged - m->hr.last_merged;
	m->hr.last_packets = m->gro->stats.packets;
	m->hr.last_merged = m->gro->stats.segments_merged;
	/* A window that skipped GRO says nothing about merging: no XDP decision on it either. */
	bool skipped = m->gro_auto.skip;
	if (!dp->gro_always_try) {
		uint64_t changes = m->gro_auto.skips + m->gro_auto.resumes;
		bool skip = gro_auto_window(&m->gro_auto, packets, merged);
		/* Debug: mixed traffic may change it every few windows. */
		if (m->gro_auto.skips + m->gro_auto.resumes != changes)
			log_mux_debug(NULL, m->id, m->nd.name,
				      "%.0f%% of the last %" PRIu64
				      " downlink segments merged, GRO %s",
				      100.0 * (double)merged / (double)packets, packets,
				      skip ? "skipped while nothing merges" : "on again");
	}
	if (skipped)
		return;
	if (packets)
		m->hr.merge_share = (double)merged / (double)packets;

	if (m->headroom != CONFIG_HEADROOM_AUTO || m->nd.kind != NETDEV_KIND_TAP_XDP)
		return;
	double now = ev_now(dp->loop);
	bool xdp = !m->nd.xdp_detached;
	bool want = headroom_want_xdp(xdp, packets, merged, now - m->hr.last_switch);
	if (want == xdp)
		return;
	int r = netdev_set_xdp(dp->rtnl, &m->nd, want);
	if (r < 0) {
		/* Windows come often: retry (and warn) once per timer interval, not per window. */
		m->hr.last_switch = now + HEADROOM_INTERVAL_SECONDS - HEADROOM_MIN_SWITCH_SECONDS;
		log_mux_warning_errno(NULL, m->id, m->nd.name, r, "cannot %s the XDP program",
				      want ? "attach" : "detach");
		return;
	}
	/* The writes of the batch are done (headroom_batch_done() runs after the flush). */
	mux_update_dl_l2(m);
	m->hr.last_switch = now;
	m->stats.headroom_switches++;
	log_mux_info(NULL, m->id, m->nd.name,
		     "%.0f%% of the last %" PRIu64 " downlink segments merged, XDP headroom %s",
		     100.0 * (double)merged / (double)packets, packets, want ? "on" : "off");
}

void headroom_tick(struct datapath *dp, struct mux *m)
{
	headroom_check_device(dp, m);
	headroom_decide(dp, m);
}
