/* SPDX-License-Identifier: MIT */
/*
 * The counter tables behind both renderings of the data-plane counters (counters.h). The
 * text and JSON keys are spelled apart (and scripts read both): each row carries
 * both spellings, and a key that only one rendering has keeps it that way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>

#include "datapath-internal.h"
#include "config.h"
#include "counters.h"
#include "datapath.h"
#include "gro.h"
#include "macro.h"
#include "mux.h"
#include "transport.h"

/* The struct a plain counter is a uint64_t member of. */
enum counter_in {
	COUNTER_GETTER,	      /* none: the row has a getter */
	COUNTER_IN_DATAPATH,  /* struct datapath_stats */
	COUNTER_IN_TRANSPORT, /* struct transport_stats */
	COUNTER_IN_MUX,	      /* struct mux_stats */
	COUNTER_IN_GRO,	      /* struct gro_stats; 0 for a mux without GRO */
	COUNTER_IN_ULQ,	      /* struct ulq_mux_stats; 0 for a fifo mux */
};

struct counter {
	const char *text; /* key in the text stats; NULL: JSON only */
	const char *json; /* key in the JSON stats; NULL: text only */
	enum counter_in in;
	size_t offset;
	/* Derived values; m is NULL for device counters. Ratios are "%.2f" in the text. */
	uint64_t (*u64)(const struct datapath *dp, const struct mux *m);
	double (*ratio)(const struct datapath *dp, const struct mux *m);
	const char *(*string)(const struct datapath *dp, const struct mux *m);
};

/* The .in and .offset of a row for a uint64_t member. */
#define DATAPATH(member)  COUNTER_IN_DATAPATH, offsetof(struct datapath_stats, member)
#define TRANSPORT(member) COUNTER_IN_TRANSPORT, offsetof(struct transport_stats, member)
#define MUX(member)	  COUNTER_IN_MUX, offsetof(struct mux_stats, member)
#define GRO(member)	  COUNTER_IN_GRO, offsetof(struct gro_stats, member)
#define ULQ(member)	  COUNTER_IN_ULQ, offsetof(struct ulq_mux_stats, member)

static const char *device_transport(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->transport->ops->scheme;
}

static uint64_t device_rx_transfers_posted(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->transport->n_rx;
}

static double device_datagrams_per_aggregate(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	const struct datapath_stats *s = &dp->stats;
	return s->dl_aggregates ? (double)s->dl_datagrams / s->dl_aggregates : 0.0;
}

static double device_ul_datagrams_per_aggregate(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	const struct datapath_stats *s = &dp->stats;
	return s->ul_aggregates ? (double)s->ul_datagrams / s->ul_aggregates : 0.0;
}

/* Failed OUT transfers and aggregates that could not be submitted are one thing to a user. */
static uint64_t device_ul_errors(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->transport->stats.out_errors + dp->stats.ul_submit_errors;
}

/* Bytes handed to the modem and not yet completed, and the limit that bounds them. */
static uint64_t device_ul_inflight(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return ulq_dql_inflight(&dp->dql);
}

static uint64_t device_ul_inflight_limit(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->dql.limit;
}

/* Bits per second at which the modem took transfers while packets waited for it. */
static uint64_t device_ul_rate_estimate(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->ul_rate.bps;
}

static uint64_t device_uplink_rate(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->shaper.rate_bps;
}

/* The downlink shaper's rate now (downlink-rate, or what auto set; 0: off or passing through). */
static uint64_t device_downlink_rate(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->dlq ? dp->dl_shaper.rate_bps : 0;
}

/* downlink-rate = auto: the base station's queue delay the last window saw (us, 0: none). */
static uint64_t device_dl_delay(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->dl_auto && dp->dl_auto->delay_ns > 0 ? (uint64_t)dp->dl_auto->delay_ns / 1000
							: 0;
}

static uint64_t device_dl_rate_cuts(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->dl_auto ? dp->dl_auto->cuts : 0;
}

static uint64_t device_dl_rate_raises(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->dl_auto ? dp->dl_auto->raises : 0;
}

/* Whether each uplink reader reads its devices, and what it waits for if not (ul-reader.h). */
static const char *device_ul_reader_fifo(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return ul_reader_state_to_string(dp->ul_reader[UL_READER_FIFO]);
}

static const char *device_ul_reader_fq_codel(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return ul_reader_state_to_string(dp->ul_reader[UL_READER_FQ_CODEL]);
}

static uint64_t device_ul_reader_transitions(const struct datapath *dp, const struct mux *m)
{
	(void)m;
	return dp->ul_reader_transitions;
}

/*
 * Adding a counter is adding a line to one of these tables; the order is the order of both
 * renderings.
 */
static const struct counter device_counters[] = {
	{ "transport", NULL, .string = device_transport },
	{ "rx_transfers_posted", "rx-transfers-posted", .u64 = device_rx_transfers_posted },
	{ "transfers", "transfers", TRANSPORT(in_transfers) },
	{ "bytes", "bytes", TRANSPORT(in_bytes) },
	{ "transfer_errors", "transfer-errors", TRANSPORT(in_errors) },
	{ "transfer_overflows", "transfer-overflows", TRANSPORT(in_overflows) },
	{ "transfers_mapped", "transfers-mapped", TRANSPORT(in_mapped) },
	{ "batch_max", NULL, TRANSPORT(in_batch_max) },
	{ "aggregates", "aggregates", DATAPATH(dl_aggregates) },
	{ "datagrams", "datagrams", DATAPATH(dl_datagrams) },
	{ "datagrams_per_aggregate", NULL, .ratio = device_datagrams_per_aggregate },
	{ "datagrams_max", "datagrams-max", DATAPATH(dl_datagrams_max) },
	{ "unknown_mux", "unknown-mux", DATAPATH(dl_unknown_mux) },
	{ "commands", "commands", DATAPATH(dl_commands) },
	{ "flow_disable", NULL, DATAPATH(dl_flow_disable) },
	{ "flow_enable", NULL, DATAPATH(dl_flow_enable) },
	{ "commands_unsupported", NULL, DATAPATH(dl_commands_unsupported) },
	{ "command_acks", NULL, DATAPATH(ul_command_acks) },
	{ "command_acks_dropped", NULL, DATAPATH(ul_command_acks_dropped) },
	{ "ul_aggregates", "ul-aggregates", DATAPATH(ul_aggregates) },
	{ "ul_datagrams", "ul-datagrams", DATAPATH(ul_datagrams) },
	{ "ul_datagrams_per_aggregate", NULL, .ratio = device_ul_datagrams_per_aggregate },
	{ "ul_bytes", "ul-bytes", TRANSPORT(out_bytes) },
	{ "ul_zlp", "ul-zlp", TRANSPORT(out_zlp) },
	{ "ul_errors", "ul-errors", .u64 = device_ul_errors },
	{ "ul_busy", NULL, TRANSPORT(out_busy) },
	{ "disconnects", "disconnects", DATAPATH(modem_disconnects) },
	{ "ctrl_retries", "ctrl-retries", TRANSPORT(ctrl_retries) },
	{ "ctrl_errors", "ctrl-errors", TRANSPORT(ctrl_errors) },
	{ "resp_errors", "resp-errors", TRANSPORT(resp_errors) },
	{ "resp_polled", "resp-polled", TRANSPORT(resp_polled) },
	{ "resp_drained", "resp-drained", TRANSPORT(resp_drained) },
	{ "halts_cleared", "halts-cleared", TRANSPORT(halts_cleared) },
	{ "ul_inflight", "ul-inflight", .u64 = device_ul_inflight },
	{ "ul_inflight_limit", "ul-inflight-limit", .u64 = device_ul_inflight_limit },
	{ "uplink_rate", "uplink-rate", .u64 = device_uplink_rate },
	{ "ul_rate_estimate", "ul-rate-estimate", .u64 = device_ul_rate_estimate },
	{ "ul_reader_fifo", "ul-reader-fifo", .string = device_ul_reader_fifo },
	{ "ul_reader_fq_codel", "ul-reader-fq-codel", .string = device_ul_reader_fq_codel },
	{ "ul_reader_transitions", "ul-reader-transitions", .u64 = device_ul_reader_transitions },
	{ "downlink_rate", "downlink-rate", .u64 = device_downlink_rate },
	{ "dl_delay_us", "dl-delay-us", .u64 = device_dl_delay },
	{ "dl_rate_cuts", "dl-rate-cuts", .u64 = device_dl_rate_cuts },
	{ "dl_rate_raises", "dl-rate-raises", .u64 = device_dl_rate_raises },
};

static const char *mux_device(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->nd.status;
}

static const char *mux_flow(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->flow_off ? "off" : "on";
}

static const char *mux_gro(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return mux_gro_state(m);
}

static double mux_merge_ratio(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	const struct gro_stats *gs = m->gro ? &m->gro->stats : NULL;
	return gs && gs->packets ? (double)gs->segments_merged / gs->packets : 0.0;
}

static const char *mux_headroom(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return config_headroom_to_string(m->headroom);
}

static const char *mux_uplink_queue(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return config_uplink_queue_to_string(m->ulq ? CONFIG_UPLINK_QUEUE_FQ_CODEL
						    : CONFIG_UPLINK_QUEUE_FIFO);
}

static uint64_t mux_ulq_queued_bytes(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->ulq ? m->ulq->stats.queued_bytes : 0;
}

static uint64_t mux_ulq_queued_packets(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->ulq ? m->ulq->stats.queued_packets : 0;
}

/* Percentiles of the last one-second window (ulq_mux_tick from the periodic tick). */
static uint64_t mux_ulq_sojourn_p50(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->ulq ? m->ulq->stats.sojourn_p50_ns / 1000 : 0;
}

static uint64_t mux_ulq_sojourn_p99(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->ulq ? m->ulq->stats.sojourn_p99_ns / 1000 : 0;
}

static uint64_t mux_ulq_sojourn_max(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->ulq ? m->ulq->stats.sojourn_max_ns / 1000 : 0;
}

/* The downlink shaper's queue of the mux (dl-shaper.c); 0 without a shaper. */
#define DLQ_GETTER(name, expr)                                                         \
	static uint64_t mux_dlq_##name(const struct datapath *dp, const struct mux *m) \
	{                                                                              \
		(void)dp;                                                              \
		return m->dlq ? (expr) : 0;                                            \
	}
DLQ_GETTER(queued_bytes, m->dlq->stats.queued_bytes)
DLQ_GETTER(queued_packets, m->dlq->stats.queued_packets)
DLQ_GETTER(drops_codel, m->dlq->stats.drops_codel)
DLQ_GETTER(drops_overlimit, m->dlq->stats.drops_overlimit)
DLQ_GETTER(ecn_marks, m->dlq->stats.ecn_marks)
DLQ_GETTER(sojourn_p50, m->dlq->stats.sojourn_p50_ns / 1000)
DLQ_GETTER(sojourn_p99, m->dlq->stats.sojourn_p99_ns / 1000)

/* The downlink write mode (write-mode.h), why, and the last probe's ns per packet of each. */
static const char *mux_dl_write_mode(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return write_mode_name(m->wmode.mode);
}

static const char *mux_dl_write_why(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return write_mode_why_name(m->wmode.why);
}

static uint64_t mux_dl_write_ns_writev(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return (uint64_t)(m->wmode.ns[WRITE_MODE_WRITEV] + 0.5);
}

static uint64_t mux_dl_write_ns_uring(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return (uint64_t)(m->wmode.ns[WRITE_MODE_URING] + 0.5);
}

static uint64_t mux_dl_write_probes(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->wmode.probes;
}

static uint64_t mux_dl_write_switches(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->wmode.switches;
}

/* gro-auto.h: merging, skipping the attempt (nothing merged), or trying again. */
static const char *mux_gro_auto(const struct datapath *dp, const struct mux *m)
{
	if (!m->gro)
		return "none";
	if (dp->gro_always_try)
		return "always";
	return m->gro_auto.skip ? "skipping" : m->gro_auto.trying ? "trying" : "merging";
}

static uint64_t mux_gro_auto_skips(const struct datapath *dp, const struct mux *m)
{
	(void)dp;
	return m->gro_auto.skips;
}

/* The text and the JSON place the device mode and the GRO state apart: two rows each. */
static const struct counter mux_counters[] = {
	{ "mode", NULL, .string = mux_device }, /* JSON: "device", below */
	{ "rx_packets", "rx-packets", MUX(rx_packets) },
	{ "rx_bytes", "rx-bytes", MUX(rx_bytes) },
	{ "rx_dropped_queue_full", "rx-dropped-queue-full", MUX(rx_dropped_queue_full) },
	{ "rx_dropped_write_error", "rx-dropped-write-error", MUX(rx_dropped_write_error) },
	{ "tx_packets", "tx-packets", MUX(tx_packets) },
	{ "tx_bytes", "tx-bytes", MUX(tx_bytes) },
	{ "tx_dropped_not_ip", "tx-dropped-not-ip", MUX(tx_dropped_not_ip) },
	{ "tx_dropped_too_big", "tx-dropped-too-big", MUX(tx_dropped_too_big) },
	{ "tx_dropped_link_down", "tx-dropped-link-down", MUX(tx_dropped_link_down) },
	{ "commands", "commands", MUX(commands_rx) },
	{ "flow", NULL, .string = mux_flow },
	{ "rx_writes", "rx-writes", MUX(rx_writes) },
	{ NULL, "gro", .string = mux_gro }, /* text: last */
	{ "gro_merged", "gro-merged", GRO(segments_merged) },
	{ "gro_super_packets", "gro-super-packets", GRO(super_packets) },
	{ "merge_ratio", "merge-ratio", .ratio = mux_merge_ratio },
	{ "tx_gso_segments", "tx-gso-segments", MUX(tx_gso_segments) },
	{ "tx_dropped_bad_gso", "tx-dropped-bad-gso", MUX(tx_dropped_bad_gso) },
	{ "rx_silent_drops", "rx-silent-drops", MUX(rx_silent_drops) },
	{ "tx_dropped_device", "tx-dropped-device", MUX(tx_dropped_device) },
	{ "headroom", "headroom", .string = mux_headroom },
	{ NULL, "device", .string = mux_device }, /* text: "mode", first */
	{ "headroom_switches", "headroom-switches", MUX(headroom_switches) },
	{ "gro", NULL, .string = mux_gro }, /* JSON: after "rx-writes" */
	{ "uplink_queue", "uplink-queue", .string = mux_uplink_queue },
	{ "ulq_queued_bytes", "ulq-queued-bytes", .u64 = mux_ulq_queued_bytes },
	{ "ulq_queued_packets", "ulq-queued-packets", .u64 = mux_ulq_queued_packets },
	{ "ulq_drops_codel", "ulq-drops-codel", ULQ(drops_codel) },
	{ "ulq_drops_overlimit", "ulq-drops-overlimit", ULQ(drops_overlimit) },
	{ "ulq_drops_flushed", "ulq-drops-flushed", ULQ(drops_flushed) },
	{ "ulq_ecn_marks", "ulq-ecn-marks", ULQ(ecn_marks) },
	{ "ulq_sojourn_p50_us", "ulq-sojourn-p50-us", .u64 = mux_ulq_sojourn_p50 },
	{ "ulq_sojourn_p99_us", "ulq-sojourn-p99-us", .u64 = mux_ulq_sojourn_p99 },
	{ "ulq_sojourn_max_us", "ulq-sojourn-max-us", .u64 = mux_ulq_sojourn_max },
	{ "dlq_queued_bytes", "dlq-queued-bytes", .u64 = mux_dlq_queued_bytes },
	{ "dlq_queued_packets", "dlq-queued-packets", .u64 = mux_dlq_queued_packets },
	{ "dlq_drops_codel", "dlq-drops-codel", .u64 = mux_dlq_drops_codel },
	{ "dlq_drops_overlimit", "dlq-drops-overlimit", .u64 = mux_dlq_drops_overlimit },
	{ "dlq_ecn_marks", "dlq-ecn-marks", .u64 = mux_dlq_ecn_marks },
	{ "dlq_sojourn_p50_us", "dlq-sojourn-p50-us", .u64 = mux_dlq_sojourn_p50 },
	{ "dlq_sojourn_p99_us", "dlq-sojourn-p99-us", .u64 = mux_dlq_sojourn_p99 },
	{ "dl_write", "dl-write", .string = mux_dl_write_mode },
	{ "dl_write_why", "dl-write-why", .string = mux_dl_write_why },
	{ "dl_write_ns_writev", "dl-write-ns-writev", .u64 = mux_dl_write_ns_writev },
	{ "dl_write_ns_uring", "dl-write-ns-uring", .u64 = mux_dl_write_ns_uring },
	{ "dl_write_probes", "dl-write-probes", .u64 = mux_dl_write_probes },
	{ "dl_write_switches", "dl-write-switches", .u64 = mux_dl_write_switches },
	{ "gro_auto", "gro-auto", .string = mux_gro_auto },
	{ "gro_auto_skips", "gro-auto-skips", .u64 = mux_gro_auto_skips },
	{ "gro_skipped", "gro-skipped", GRO(reasons[GRO_NM_SKIPPED]) },
};

static uint64_t counter_u64(const struct counter *c, const struct datapath *dp, const struct mux *m)
{
	const void *base = NULL;

	switch (c->in) {
	case COUNTER_GETTER:
		return c->u64(dp, m);
	case COUNTER_IN_DATAPATH:
		base = &dp->stats;
		break;
	case COUNTER_IN_TRANSPORT:
		base = &dp->transport->stats;
		break;
	case COUNTER_IN_MUX:
		base = &m->stats;
		break;
	case COUNTER_IN_GRO:
		if (!m->gro)
			return 0;
		base = &m->gro->stats;
		break;
	case COUNTER_IN_ULQ:
		if (!m->ulq)
			return 0;
		base = &m->ulq->stats;
		break;
	}
	return *(const uint64_t *)((const char *)base + c->offset);
}

static void counters_print(const struct counter *table, size_t n, const struct datapath *dp,
			   const struct mux *m, FILE *f)
{
	for (const struct counter *c = table; c < table + n; c++) {
		if (!c->text)
			continue;
		if (c->string)
			fprintf(f, " %s=%s", c->text, c->string(dp, m));
		else if (c->ratio)
			fprintf(f, " %s=%.2f", c->text, c->ratio(dp, m));
		else
			fprintf(f, " %s=%" PRIu64, c->text, counter_u64(c, dp, m));
	}
}

static int counters_json(const struct counter *table, size_t n, const struct datapath *dp,
			 const struct mux *m, json_t *o)
{
	for (const struct counter *c = table; c < table + n; c++) {
		json_t *v;

		if (!c->json)
			continue;
		if (c->string)
			v = json_string(c->string(dp, m));
		else if (c->ratio)
			v = json_real(c->ratio(dp, m));
		else
			v = json_integer((json_int_t)counter_u64(c, dp, m));
		if (json_object_set_new(o, c->json, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

void counters_print_device(const struct datapath *dp, FILE *f)
{
	counters_print(device_counters, ARRAY_SIZE(device_counters), dp, NULL, f);
}

void counters_print_mux(const struct mux *m, FILE *f)
{
	counters_print(mux_counters, ARRAY_SIZE(mux_counters), m->dp, m, f);
}

int counters_json_device(const struct datapath *dp, json_t *o)
{
	return counters_json(device_counters, ARRAY_SIZE(device_counters), dp, NULL, o);
}

int counters_json_mux(const struct mux *m, json_t *o)
{
	return counters_json(mux_counters, ARRAY_SIZE(mux_counters), m->dp, m, o);
}

json_t *counters_json_malformed(const struct datapath *dp)
{
	const struct datapath_stats *s = &dp->stats;
	json_t *o = json_object();
	char key[64];

	for (int e = 0; o && e < _QMAP_ERR_MAX; e++)
		if (json_object_set_new(o, qmap_error_name(e),
					json_integer((json_int_t)s->dl_malformed[e])) < 0)
			return json_decref(o), NULL;
	for (int e = 0; o && e < _NTB_ERR_MAX; e++) {
		snprintf(key, sizeof(key), "ntb_%s", ntb_error_name(e));
		if (json_object_set_new(o, key, json_integer((json_int_t)s->dl_ntb_malformed[e])) <
		    0)
			return json_decref(o), NULL;
	}
	return o;
}

json_t *counters_json_ntb_format(const struct datapath *dp)
{
	const struct transport_ntb *n = datapath_ntb(dp);

	if (!n)
		return NULL;
	const struct ntb_params *p = &n->params;
	json_t *ntb = json_pack(
		"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:b, s:b, s:i, s:i, s:i}",
		"formats", (p->formats & NTB_FORMATS_32) ? "ntb16,ntb32" : "ntb16", "in-max-size",
		(json_int_t)p->in_max_size, "in-divisor", (json_int_t)p->in_divisor, "in-remainder",
		(json_int_t)p->in_remainder, "in-alignment", (json_int_t)p->in_alignment,
		"out-max-size", (json_int_t)p->out_max_size, "out-divisor",
		(json_int_t)p->out_divisor, "out-remainder", (json_int_t)p->out_remainder,
		"out-alignment", (json_int_t)p->out_alignment, "out-max-datagrams",
		(json_int_t)p->out_max_datagrams, "crc", n->crc_refused ? "not offered" : "off",
		"format-refused", n->format_refused, "input-size-refused", n->in_size_refused,
		"max-control-message", n->max_control_message, "max-segment-size",
		n->max_segment_size, "mtu", n->mtu);
	if (!ntb)
		return NULL;
	/* A USB function: where it sits and what its descriptor offers. */
	if (n->control_interface >= 0 &&
	    (json_object_set_new(ntb, "control-interface", json_integer(n->control_interface)) <
		     0 ||
	     json_object_set_new(ntb, "data-alt-setting", json_integer(n->data_alt)) < 0 ||
	     json_object_set_new(ntb, "network-capabilities",
				 json_integer(n->network_capabilities)) < 0))
		return json_decref(ntb), NULL;
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:i, s:o}", "protocol",
			 n->format == NTB_FORMAT_32 ? "mbim/ntb32" : "mbim/ntb16", "dl-max-size",
			 (json_int_t)n->in_size, "dl-max-datagrams", (json_int_t)0, "ul-max-size",
			 (json_int_t)dp->ul_max_size, "ul-max-datagrams",
			 (json_int_t)dp->ul_max_datagrams, "dl-min-padding", (json_int_t)0,
			 "data-interface", datapath_data_interface(dp), "ntb", ntb);
}
