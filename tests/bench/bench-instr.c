/* SPDX-License-Identifier: MIT */
/*
 * Downlink instruction counts, meant to run under callgrind (tests/bench/callgrind.sh):
 * QMAP aggregates of one bulk TCP/IPv4 flow (1500-byte packets, MSS 1460, consecutive
 * sequence numbers, valid checksums) replayed through the `mem` transport into the real
 * datapath, in three scenarios:
 *   v1:        QMAPv1, mux 1 without offloads: deaggregate, demux, one write per packet;
 *   v5-valid:  QMAPv5 with the checksum-valid bit, mux 2 with GRO (one write per aggregate);
 * the writes are queued on io_uring and submitted once per batch, as in production (the
 * queueing, submission and completion count here; without io_uring they are writev calls);
 *   v5-novalid: the same without the bit, so GRO verifies every checksum in software;
 *   ntb16:     the v1 packets in NTB16 blocks (an MBIM function, session 0 = mux 1);
 *   ntb16-gro: the same on session 1 = mux 2 with GRO (MBIM has no valid bit: software
 *              verification, as v5-novalid);
 *   v1-writev: v1 without io_uring, one write per packet (the write mode qmapd measures
 *              cheaper where system calls are cheap, write-mode.h);
 *   ntb16-writev: ntb16 the same way;
 *   flows-try: QMAPv1 on mux 2 (GRO), every packet a flow of its own (nothing merges), GRO
 *              tried on every packet, one writev per packet;
 *   flows-skip: the same with GRO skipped, as gro-auto.h decides for such traffic.
 * The write mode and GRO's skipping are fixed per scenario (qmapd's measurement would time
 * valgrind, not the code).
 * Each scenario is bracketed by callgrind client requests (zero, then dump with its name), so
 * every dump holds one scenario. The script collects only inside datapath_bulk_in() and the
 * GRO flush at the end of a batch: setup, building the aggregates and the memcpy that stands
 * for the modem's DMA are not counted. Callgrind counts userspace instructions only, so the
 * writes into the devices count as their syscall wrappers, which is what we want: the
 * kernel's share is measured by the timing benchmarks. Without valgrind the client requests
 * are no-ops and the program just replays (and checks the counters).
 * Needs root (network namespace, TAP devices).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* Optional: without valgrind's headers the program still builds and replays, uncounted. */
#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

#include "../support/pkt-util.h"
#include "bench-util.h"
#include "config.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "log.h"
#include "ntb.h"
#include "qmap.h"
#include "rtnl.h"
#include "transport-mem.h"
#include "write-mode.h"

#define PKT_LEN	     1500
#define TCP_PAYLOAD  (PKT_LEN - 40)
#define TCP_FLAG_ACK 0x10

struct scenario {
	const char *name;
	enum qmap_version version;
	uint8_t mux_id;
	bool valid;
	bool ntb; /* the packets of the QMAPv1 aggregate, in one NTB16 block */
	enum write_mode_kind wmode;
	bool flows; /* a TCP flow per packet: nothing for GRO to merge */
	bool skip;  /* GRO skipped (gro-auto.h), else tried on every packet */
};

/* The QMAPv1 aggregate's packets as one NTB16 of session mux_id - 1; returns its length. */
static size_t qmap_to_ntb(uint8_t *ntb, size_t max, const uint8_t *agg, unsigned frames,
			  uint8_t mux_id)
{
	struct ntb_params p = {
		.formats = NTB_FORMATS_16,
		.in_max_size = (uint32_t)max,
		.in_divisor = 4,
		.in_alignment = 4,
		.out_max_size = (uint32_t)max,
		.out_divisor = 4,
		.out_alignment = 4,
	};
	struct ntb_builder b;
	size_t len = 0;

	if (ntb_build_init(&b, ntb, max, &p, NTB_FORMAT_16, 0) < 0)
		return 0;
	for (unsigned i = 0; i < frames; i++) {
		uint8_t *dst;
		if (ntb_build_reserve(&b, (uint8_t)(mux_id - 1), PKT_LEN, &dst) < 0)
			return 0;
		memcpy(dst, agg + i * (QMAP_HEADER_SIZE + PKT_LEN) + QMAP_HEADER_SIZE, PKT_LEN);
	}
	return ntb_build_finish(&b, &len) == 0 ? len : 0;
}

/* One aggregate of consecutive segments of one flow; returns its length, frames in *ret. */
static size_t build_aggregate(uint8_t *agg, size_t max, const struct scenario *s,
			      unsigned *ret_frames)
{
	size_t hdr =
		s->version == QMAP_V5 ? QMAP_HEADER_SIZE + QMAP_CSUM_HEADER_SIZE : QMAP_HEADER_SIZE;
	size_t len = 0;
	unsigned n = 0;

	while (len + hdr + PKT_LEN <= max) {
		struct pk p = {
			.proto = 6,
			.id = (uint16_t)n,
			.ttl = 64,
			.df = true,
			.seq = 1000 + n * TCP_PAYLOAD,
			.ack = 1,
			.flags = TCP_FLAG_ACK,
			.win = 1024,
			.sport = (uint16_t)(s->flows ? 5001 + n : 5001),
			.dport = 40000,
			.host = 1,
			.plen = TCP_PAYLOAD,
			.stream_off = n * TCP_PAYLOAD,
		};
		pk_build(agg + len + hdr, &p);
		qmap_write_data_header(agg + len, s->version, s->mux_id, PKT_LEN, 0, s->valid);
		len += hdr + PKT_LEN;
		n++;
	}
	*ret_frames = n;
	return len;
}

int main(int argc, char **argv)
{
	static const struct scenario scenarios[] = {
		{ "v1", QMAP_V1, 1, false, false, WRITE_MODE_URING },
		{ "v5-valid", QMAP_V5, 2, true, false, WRITE_MODE_URING },
		{ "v5-novalid", QMAP_V5, 2, false, false, WRITE_MODE_URING },
		{ "ntb16", QMAP_V1, 1, false, true, WRITE_MODE_URING },
		{ "ntb16-gro", QMAP_V1, 2, false, true, WRITE_MODE_URING },
		{ "v1-writev", QMAP_V1, 1, false, false, WRITE_MODE_WRITEV },
		{ "ntb16-writev", QMAP_V1, 1, false, true, WRITE_MODE_WRITEV },
		{ "flows-try", QMAP_V1, 2, false, false, WRITE_MODE_WRITEV, true, false },
		{ "flows-skip", QMAP_V1, 2, false, false, WRITE_MODE_WRITEV, true, true },
	};
	unsigned aggregates = 1000;
	struct rtnl *rtnl = NULL;
	struct datapath *dp;
	int c;

	while ((c = getopt(argc, argv, "n:h")) >= 0) {
		switch (c) {
		case 'n':
			aggregates = strtoul(optarg, NULL, 10);
			break;
		case 'h':
			printf("Usage: qmapd-bench-instr [-n AGGREGATES]\n"
			       "Replays downlink aggregates; run it with "
			       "tests/bench/callgrind.sh.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (aggregates < 1) {
		fprintf(stderr, "qmapd-bench-instr: -n must be >= 1\n");
		return 2;
	}
	int r = bench_enter_netns("qmapd-bench-instr", &rtnl);
	if (r != 0)
		return r;
	bench_write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	bench_write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");

	/*
	 * The devices get no address: the kernel drops what qmapd writes at the routing step
	 * (forwarding is off in a new namespace), which costs it little and us nothing.
	 */
	struct config *cfg = calloc(1, sizeof(*cfg));
	config_init_defaults(cfg);
	snprintf(cfg->device.device, sizeof(cfg->device.device), "mem:");
	cfg->device.qmap_version = QMAP_V1;
	struct config_mux m;
	config_mux_init_defaults(&m, 1);
	m.present = true;
	m.mtu = 1500;
	m.headroom = CONFIG_HEADROOM_XDP;
	struct ev_loop *loop = ev_default_loop(0);
	r = datapath_new_with_backend(loop, rtnl, &cfg->device, &transport_mem_ops, NULL, &dp);
	if (r >= 0) {
		m.id = 1;
		snprintf(m.interface, sizeof(m.interface), "iqmap1");
		dp->offload_devices = false;
		r = datapath_mux_add(dp, &m, false, true, NULL);
	}
	if (r >= 0) {
		m.id = 2;
		snprintf(m.interface, sizeof(m.interface), "iqmap2");
		dp->offload_devices = true;
		r = datapath_mux_add(dp, &m, false, true, NULL);
	}
	if (r < 0 || datapath_start(dp) < 0) {
		fprintf(stderr, "cannot set up the qmapd datapath\n");
		return 1;
	}
	printf("qmapd-bench-instr: %u aggregates of %u bytes per scenario; mux1 %s, mux2 %s%s\n",
	       aggregates, cfg->device.dl_max_size, dp->mux[1]->nd.status, dp->mux[2]->nd.status,
	       RUNNING_ON_VALGRIND ? " (under valgrind)" : "");

	uint8_t *agg = malloc(cfg->device.dl_max_size);
	uint8_t *ntb = malloc(cfg->device.dl_max_size);
	for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++) {
		const struct scenario *s = &scenarios[i];
		struct mux *mx = dp->mux[s->mux_id];
		unsigned frames;
		size_t len = build_aggregate(agg, cfg->device.dl_max_size, s, &frames);
		const uint8_t *buf = agg;

		if (s->ntb) {
			len = qmap_to_ntb(ntb, cfg->device.dl_max_size, agg, frames, s->mux_id);
			if (len == 0) {
				fprintf(stderr, "cannot build the NTB16 blocks\n");
				return 1;
			}
			buf = ntb;
		}
		/* What transport-sim.c sets once an MBIM function is set up. */
		dp->transport->framing = s->ntb ? TRANSPORT_FRAMING_NTB : TRANSPORT_FRAMING_QMAP;
		dp->transport->ntb.format = NTB_FORMAT_16;

		if (datapath_set_data_format(dp, s->version, cfg->device.dl_max_size,
					     cfg->device.ul_max_size, cfg->device.ul_max_datagrams,
					     0) < 0) {
			fprintf(stderr, "cannot switch the QMAP version\n");
			return 1;
		}
		datapath_force_dl_modes(dp, s->wmode, true);
		mx->gro_auto.skip = s->skip; /* never changed: gro_auto_window() is not called */
		for (int k = 0; k < 10; k++) /* warm up: first-touch and lazy binding */
			transport_mem_replay(dp->transport, buf, len);
		struct mux_stats m0 = mx->stats;
		uint64_t merged0 = mx->gro ? mx->gro->stats.segments_merged : 0;
		CALLGRIND_ZERO_STATS;
		for (unsigned k = 0; k < aggregates; k++)
			transport_mem_replay(dp->transport, buf, len);
		CALLGRIND_DUMP_STATS_AT(s->name);
		uint64_t pkts = mx->stats.rx_packets - m0.rx_packets;
		uint64_t writes = mx->stats.rx_writes - m0.rx_writes;
		uint64_t drops = mx->stats.rx_dropped_queue_full - m0.rx_dropped_queue_full +
				 mx->stats.rx_dropped_write_error - m0.rx_dropped_write_error;
		uint64_t merged = (mx->gro ? mx->gro->stats.segments_merged : 0) - merged0;
		/* Parsed by callgrind.sh: name, packets, device writes, GRO-merged, drops. */
		printf("SCENARIO %s packets=%llu frames_per_aggregate=%u writes=%llu merged=%llu "
		       "dropped=%llu\n",
		       s->name, (unsigned long long)pkts, frames, (unsigned long long)writes,
		       (unsigned long long)merged, (unsigned long long)drops);
		if (pkts != (uint64_t)aggregates * frames) {
			fprintf(stderr, "scenario %s: %llu packets delivered, expected %llu\n",
				s->name, (unsigned long long)pkts,
				(unsigned long long)aggregates * frames);
			return 1;
		}
	}
	free(agg);
	free(ntb);
	datapath_free(dp);
	rtnl_close(rtnl);
	free(cfg);
	return 0;
}
