/* SPDX-License-Identifier: MIT */
/*
 * counters: both renderings of the device and mux counters, key for key. Tests and scripts
 * parse these strings, so they are spelled out here in full: a change shows up as a diff.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "gro.h"
#include "test-case.h"
#include "transport.h"

static struct datapath dp;
static struct transport transport;
static const struct transport_ops ops = { .scheme = "sim:" };
static struct gro gro; /* about 40 KiB: not on the stack */

/* A device on a transport that counted nothing, whichever cases ran before. */
TEST_SETUP()
{
	memset(&dp, 0, sizeof(dp));
	memset(&transport, 0, sizeof(transport));
	memset(&gro, 0, sizeof(gro));
	dp.transport = &transport;
	transport.ops = &ops;
}

/* The text of the device's counters (m NULL) or of m's. */
static char *print(const struct mux *m)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	if (m)
		counters_print_mux(m, f);
	else
		counters_print_device(&dp, f);
	fclose(f);
	return text;
}

static char *to_json(const struct mux *m)
{
	json_t *o = json_object();
	char *text;

	EXPECT_EQ(m ? counters_json_mux(m, o) : counters_json_device(&dp, o), 0);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

TEST(device)
{
	struct datapath_stats *s = &dp.stats;
	struct transport_stats *ts = &transport.stats;
	char *text;

	transport.n_rx = 16;
	*ts = (struct transport_stats){ .in_transfers = 1,
					.in_bytes = 2,
					.in_errors = 3,
					.in_overflows = 2,
					.in_mapped = 35,
					.out_bytes = 4,
					.out_zlp = 5,
					.out_errors = 6,
					.out_busy = 7,
					.in_batch_max = 8,
					.ctrl_retries = 30,
					.ctrl_errors = 31,
					.resp_errors = 32,
					.resp_polled = 33,
					.resp_drained = 37,
					.halts_cleared = 36 };
	*s = (struct datapath_stats){ .dl_aggregates = 3,
				      .dl_datagrams = 10,
				      .dl_datagrams_max = 11,
				      .dl_unknown_mux = 12,
				      .dl_commands = 13,
				      .dl_flow_disable = 14,
				      .dl_flow_enable = 15,
				      .dl_commands_unsupported = 16,
				      .ul_command_acks = 17,
				      .ul_command_acks_dropped = 18,
				      .ul_datagrams = 19,
				      .ul_submit_errors = 20,
				      .modem_disconnects = 21 };
	dp.ul_reader[UL_READER_FIFO] = UL_READER_WAIT_OUT;
	dp.ul_reader[UL_READER_FQ_CODEL] = UL_READER_QUEUE_FULL;
	dp.ul_reader_transitions = 34;

	text = print(NULL);
	EXPECT_STR_EQ(text,
		      " transport=sim: rx_transfers_posted=16 transfers=1 bytes=2"
		      " transfer_errors=3 transfer_overflows=2 transfers_mapped=35 batch_max=8"
		      " aggregates=3 datagrams=10"
		      " datagrams_per_aggregate=3.33 datagrams_max=11 unknown_mux=12"
		      " commands=13 flow_disable=14 flow_enable=15 commands_unsupported=16"
		      " command_acks=17 command_acks_dropped=18 ul_aggregates=0"
		      " ul_datagrams=19 ul_datagrams_per_aggregate=0.00 ul_bytes=4 ul_zlp=5"
		      " ul_errors=26 ul_busy=7 disconnects=21 ctrl_retries=30 ctrl_errors=31"
		      " resp_errors=32 resp_polled=33 resp_drained=37 halts_cleared=36"
		      " ul_inflight=0 ul_inflight_limit=0 uplink_rate=0"
		      " ul_rate_estimate=0 ul_reader_fifo=wait-out ul_reader_fq_codel=queue-full"
		      " ul_reader_transitions=34 downlink_rate=0 dl_delay_us=0 dl_rate_cuts=0"
		      " dl_rate_raises=0");
	free(text);
	text = to_json(NULL);
	EXPECT_STR_EQ(text, "{\"rx-transfers-posted\":16,\"transfers\":1,\"bytes\":2,"
			    "\"transfer-errors\":3,\"transfer-overflows\":2,"
			    "\"transfers-mapped\":35,\"aggregates\":3,\"datagrams\":10,"
			    "\"datagrams-max\":11,\"unknown-mux\":12,\"commands\":13,"
			    "\"ul-aggregates\":0,\"ul-datagrams\":19,\"ul-bytes\":4,\"ul-zlp\":5,"
			    "\"ul-errors\":26,\"disconnects\":21,\"ctrl-retries\":30,"
			    "\"ctrl-errors\":31,\"resp-errors\":32,\"resp-polled\":33,"
			    "\"resp-drained\":37,\"halts-cleared\":36,\"ul-inflight\":0,"
			    "\"ul-inflight-limit\":0,\"uplink-rate\":0,\"ul-rate-estimate\":0,"
			    "\"ul-reader-fifo\":\"wait-out\",\"ul-reader-fq-codel\":\"queue-full\","
			    "\"ul-reader-transitions\":34,\"downlink-rate\":0,\"dl-delay-us\":0,"
			    "\"dl-rate-cuts\":0,\"dl-rate-raises\":0}");
	free(text);
}

TEST(mux)
{
	struct mux m = { .dp = &dp, .id = 3, .headroom = CONFIG_HEADROOM_AUTO };
	char *text;

	snprintf(m.nd.name, sizeof(m.nd.name), "qmap3");
	snprintf(m.nd.status, sizeof(m.nd.status), "tap+xdp");
	m.stats = (struct mux_stats){ .rx_packets = 1,
				      .rx_bytes = 2,
				      .rx_dropped_queue_full = 3,
				      .rx_dropped_write_error = 4,
				      .rx_writes = 5,
				      .rx_silent_drops = 6,
				      .headroom_switches = 7,
				      .tx_packets = 8,
				      .tx_bytes = 9,
				      .tx_dropped_not_ip = 10,
				      .tx_dropped_too_big = 11,
				      .tx_dropped_link_down = 12,
				      .tx_dropped_bad_gso = 13,
				      .tx_gso_segments = 14,
				      .commands_rx = 15,
				      .tx_dropped_device = 16 };

	/* Without GRO its counters are 0. */
	text = print(&m);
	EXPECT_STR_EQ(text, " mode=tap+xdp rx_packets=1 rx_bytes=2 rx_dropped_queue_full=3"
			    " rx_dropped_write_error=4 tx_packets=8 tx_bytes=9 tx_dropped_not_ip=10"
			    " tx_dropped_too_big=11 tx_dropped_link_down=12 commands=15 flow=on"
			    " rx_writes=5 gro_merged=0 gro_super_packets=0 merge_ratio=0.00"
			    " tx_gso_segments=14 tx_dropped_bad_gso=13 rx_silent_drops=6"
			    " tx_dropped_device=16 headroom=auto headroom_switches=7 gro=none"
			    " uplink_queue=fifo ulq_queued_bytes=0 ulq_queued_packets=0"
			    " ulq_drops_codel=0 ulq_drops_overlimit=0 ulq_drops_flushed=0"
			    " ulq_ecn_marks=0 ulq_sojourn_p50_us=0 ulq_sojourn_p99_us=0"
			    " ulq_sojourn_max_us=0 dlq_queued_bytes=0 dlq_queued_packets=0"
			    " dlq_drops_codel=0 dlq_drops_overlimit=0 dlq_ecn_marks=0"
			    " dlq_sojourn_p50_us=0 dlq_sojourn_p99_us=0 dl_write=writev"
			    " dl_write_why=unmeasured dl_write_ns_writev=0 dl_write_ns_uring=0"
			    " dl_write_probes=0 dl_write_switches=0 gro_auto=none gro_auto_skips=0"
			    " gro_skipped=0");
	free(text);

	m.gro = &gro;
	gro.stats.packets = 4;
	gro.stats.segments_merged = 6;
	gro.stats.super_packets = 2;
	gro.off = true;
	gro.stats.reasons[GRO_NM_SKIPPED] = 17;
	m.flow_off = true;
	m.wmode = (struct write_mode){ .mode = WRITE_MODE_URING,
				       .why = WRITE_MODE_WHY_MEASURED,
				       .ns = { 512.4, 301.6 },
				       .probes = 3,
				       .switches = 1 };
	m.gro_auto = (struct gro_auto){ .skip = true, .skips = 2 };
	text = print(&m);
	EXPECT_STR_EQ(text, " mode=tap+xdp rx_packets=1 rx_bytes=2 rx_dropped_queue_full=3"
			    " rx_dropped_write_error=4 tx_packets=8 tx_bytes=9 tx_dropped_not_ip=10"
			    " tx_dropped_too_big=11 tx_dropped_link_down=12 commands=15 flow=off"
			    " rx_writes=5 gro_merged=6 gro_super_packets=2 merge_ratio=1.50"
			    " tx_gso_segments=14 tx_dropped_bad_gso=13 rx_silent_drops=6"
			    " tx_dropped_device=16 headroom=auto headroom_switches=7 gro=off"
			    " uplink_queue=fifo ulq_queued_bytes=0 ulq_queued_packets=0"
			    " ulq_drops_codel=0 ulq_drops_overlimit=0 ulq_drops_flushed=0"
			    " ulq_ecn_marks=0 ulq_sojourn_p50_us=0 ulq_sojourn_p99_us=0"
			    " ulq_sojourn_max_us=0 dlq_queued_bytes=0 dlq_queued_packets=0"
			    " dlq_drops_codel=0 dlq_drops_overlimit=0 dlq_ecn_marks=0"
			    " dlq_sojourn_p50_us=0 dlq_sojourn_p99_us=0 dl_write=io_uring"
			    " dl_write_why=measured dl_write_ns_writev=512 dl_write_ns_uring=302"
			    " dl_write_probes=3 dl_write_switches=1 gro_auto=skipping"
			    " gro_auto_skips=2 gro_skipped=17");
	free(text);
	text = to_json(&m);
	EXPECT_STR_EQ(text,
		      "{\"rx-packets\":1,\"rx-bytes\":2,\"rx-dropped-queue-full\":3,"
		      "\"rx-dropped-write-error\":4,\"tx-packets\":8,\"tx-bytes\":9,"
		      "\"tx-dropped-not-ip\":10,\"tx-dropped-too-big\":11,"
		      "\"tx-dropped-link-down\":12,\"commands\":15,\"rx-writes\":5,"
		      "\"gro\":\"off\",\"gro-merged\":6,\"gro-super-packets\":2,"
		      "\"merge-ratio\":1.5,\"tx-gso-segments\":14,\"tx-dropped-bad-gso\":13,"
		      "\"rx-silent-drops\":6,\"tx-dropped-device\":16,\"headroom\":\"auto\","
		      "\"device\":\"tap+xdp\",\"headroom-switches\":7,\"uplink-queue\":\"fifo\","
		      "\"ulq-queued-bytes\":0,\"ulq-queued-packets\":0,\"ulq-drops-codel\":0,"
		      "\"ulq-drops-overlimit\":0,\"ulq-drops-flushed\":0,\"ulq-ecn-marks\":0,"
		      "\"ulq-sojourn-p50-us\":0,\"ulq-sojourn-p99-us\":0,\"ulq-sojourn-max-us\":0,"
		      "\"dlq-queued-bytes\":0,\"dlq-queued-packets\":0,\"dlq-drops-codel\":0,"
		      "\"dlq-drops-overlimit\":0,\"dlq-ecn-marks\":0,\"dlq-sojourn-p50-us\":0,"
		      "\"dlq-sojourn-p99-us\":0,\"dl-write\":\"io_uring\","
		      "\"dl-write-why\":\"measured\",\"dl-write-ns-writev\":512,"
		      "\"dl-write-ns-uring\":302,\"dl-write-probes\":3,"
		      "\"dl-write-switches\":1,\"gro-auto\":\"skipping\","
		      "\"gro-auto-skips\":2,\"gro-skipped\":17}");
	free(text);
}
