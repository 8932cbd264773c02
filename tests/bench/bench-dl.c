/* SPDX-License-Identifier: MIT */
/*
 * Downlink benchmark: qmapd's own data path against the raw TUN floor, in one run.
 *
 *   floor: a minimal loop writing each packet with one write() into a plain TUN device.
 *   qmapd: prebuilt QMAP aggregates replayed through the `mem` transport into the datapath,
 *          which deaggregates and writes each packet into its mux device (TAP + XDP). The
 *          aggregates are put into the receive ring before the clock starts, as the modem's
 *          DMA puts them into usbfs memory in production: no CPU copy is timed. -c times
 *          the copy into the ring too (the stand-in DMA copy of earlier figures).
 *   ntb16: the same packets in NTB16 blocks (an MBIM modem; session N = mux N + 1) through the
 *          same datapath and devices, its framing switched to NTB for those runs.
 *   -s:    only the split of a packet's cost between device and qmapd (run_split()), with
 *          qmapd's per-packet mux and GRO device also on TUN devices (headroom = off).
 * Both deliver IPv4/UDP to a bound UDP socket that is never read (a closed port would cost
 * an ICMP error per packet). Runs in a network namespace of its own; needs root.
 * Prints pps, Gbit/s and ns per packet (median of the runs) and the ratio qmapd/floor (in
 * each run, then the median of the runs' ratios), then one verdict line per target.
 *
 * The write mode (writev per packet or io_uring per aggregate, write-mode.h) and GRO's
 * skipping (gro-auto.h) are forced for the columns that show one mode, and left to qmapd
 * ("auto", production) for the others; each run starts them afresh, so the auto columns
 * include the probes that measure at start. A run of each column goes in slices of
 * SLICE_PACKETS, all columns' slices in turn (an auto column's state carried from one of its
 * slices to the next): on a shared machine a burst of load then hits every column of the run
 * alike. Each round takes the turns in an order of its own, so no column always follows the
 * same one. -o writes every slice's figure to a file, for a look at the spread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "csum.h"
#include "config.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "log.h"
#include "netdev.h"
#include "ntb.h"
#include "qmap.h"
#include "rtnl.h"
#include "transport-mem.h"
#include "write-mode.h"

#define FLOOR_ADDR   "192.0.2.1"
#define QMAPD_ADDR   "203.0.113.1"
#define GRO_ADDR     "203.0.113.65"
#define TUN_ADDR     "203.0.113.129" /* -s: the per-packet mux on a TUN (headroom = off) */
#define TUN_GRO_ADDR "203.0.113.193" /* -s: the GRO device on a TUN (headroom = off) */
#define SRC_ADDR     "198.51.100.1"
#define UDP_PORT     9000
#define MAX_RUNS     15
/*
 * A run of each column in slices of this many packets, taken in turns. Short slices (a round
 * of all columns takes ~10 ms at 500 packets) put a burst of the shared machine's load on
 * every column of a round, where 20 000-packet slices (~300 ms a round) put it on two or
 * three: the "auto / plain writev" cells, the same writes on both sides, spread with an SD of
 * 3.1 % at 20 000 packets a slice, 1.9-2.0 % at 2 000 and 1.1-1.4 % at 500 (RESULTS.md).
 */
#define SLICE_PACKETS 500

/* An IPv4/UDP packet of `len` bytes in total, UDP checksum 0 (allowed for IPv4). */
static void build_packet(uint8_t *p, size_t len, const char *dst)
{
	memset(p, 0, len);
	p[0] = 0x45;
	p[2] = len >> 8;
	p[3] = len & 0xff;
	p[8] = 64;
	p[9] = IPPROTO_UDP;
	inet_pton(AF_INET, SRC_ADDR, p + 12);
	inet_pton(AF_INET, dst, p + 16);
	csum_store(p + 10, (uint16_t)~csum_fold(csum_partial(p, 20, 0)));
	p[20] = 0x30;
	p[21] = 0x39;
	p[22] = UDP_PORT >> 8;
	p[23] = UDP_PORT & 0xff;
	p[24] = (len - 20) >> 8;
	p[25] = (len - 20) & 0xff;
}

static int bind_sink(const char *addr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(UDP_PORT) };
	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind sink");
		exit(1);
	}
	return fd;
}

/*
 * Datagrams that reached the UDP layer in this namespace (queued or dropped for a full
 * receive buffer), from /proc/net/snmp: proof that a figure is not the speed of losing
 * packets (a drop inside generic XDP, say, costs little and leaves write() successful).
 */
static uint64_t udp_arrived(void)
{
	char line[512], vals[512];
	uint64_t in = 0, err = 0;
	FILE *f = fopen("/proc/net/snmp", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Udp: InDatagrams", 16) != 0 || !fgets(vals, sizeof(vals), f))
			continue;
		unsigned long long a, b, c;
		/* Udp: InDatagrams NoPorts InErrors ... */
		if (sscanf(vals, "Udp: %llu %llu %llu", &a, &b, &c) == 3) {
			in = a;
			err = c;
		}
	}
	fclose(f);
	return in + err;
}

/*
 * Floors on the kinds of device qmapd writes, to tell the device's cost from qmapd's: one
 * writev() per packet of [L2 header, packet] (the two iovecs qmapd's per-packet mux writes)
 * into a TAP without or with the XDP_PASS program, with an Ethernet header or with the 802.1Q
 * priority tag qmapd adds (mux.c), and with a virtio-net header in front (the GRO device's
 * lone packets); last [virtio-net header, packet] into a TUN with IFF_VNET_HDR (the GRO
 * device headroom = off makes). The packets are addressed to the TUN floor's address (a local
 * address whichever device they come in on).
 */
enum {
	FD_TAP,	     /* TAP, XDP detached, Ethernet header */
	FD_TAP_TAG,  /* the same, Ethernet + 802.1Q VID 0 */
	FD_XDP,	     /* TAP + XDP, Ethernet header */
	FD_XDP_TAG,  /* TAP + XDP, tagged: what the per-packet mux writes */
	FD_VNET,     /* TAP + XDP + virtio-net header, Ethernet header */
	FD_VNET_TAG, /* the same, tagged: what the GRO device's lone packets are */
	FD_TUN_VNET, /* TUN + virtio-net header: the GRO device with headroom = off */
	N_FDEV
};
static const char *const fdev_name[N_FDEV] = {
	"tap", "tap+tag", "tap+xdp", "tap+xdp+tag", "vnet+xdp", "vnet+xdp+tag", "tun+vnet",
};

struct fdev {
	struct netdev nd;
	uint8_t hdr[NETDEV_VNET_HDR_LEN + 18];
	size_t hdr_len;
};

struct bench {
	struct netdev floor;
	struct fdev fdev[N_FDEV];
	struct datapath *dp;
	uint8_t *agg;	    /* mux 1: per-packet writes (no virtio-net header) */
	uint8_t *agg_gro;   /* mux 2: GRO (USO super-packets of the same flow) */
	uint8_t *agg_flows; /* mux 2: a flow per packet, so GRO writes each one alone */
	/* -s only: the same on TUN devices (headroom = off), mux 3 per-packet, mux 4 GRO. */
	uint8_t *agg_tun, *agg_tun_flows;
	size_t agg_len;
	unsigned agg_frames;
	/* The same in NTB16 blocks, each with as many datagrams as the QMAP aggregates. */
	uint8_t *ntb, *ntb_gro, *ntb_flows;
	size_t ntb_len;
	uint8_t pkt[2048];
	bool dma_copy; /* -c: each aggregate copied into the ring inside the timed loop */
};

/* ns per packet for the raw floor: one write() per packet into a plain TUN. */
static double run_floor(struct bench *b, size_t len, unsigned packets)
{
	double t0 = bench_now_ns();
	for (unsigned i = 0; i < packets; i++)
		if (write(b->floor.fd, b->pkt, len) != (ssize_t)len) {
			perror("floor write");
			exit(1);
		}
	return (bench_now_ns() - t0) / packets;
}

/*
 * -s: the TUN floor's packets through writev() instead of write(): one iovec, or two (the
 * packet split after `split` bytes), to tell the system call's share from the device's.
 */
static double run_floor_writev(struct bench *b, size_t len, size_t split, unsigned packets)
{
	struct iovec iov[2] = { { .iov_base = b->pkt, .iov_len = split ? split : len },
				{ .iov_base = b->pkt + split, .iov_len = len - split } };
	int n = split ? 2 : 1;
	double t0 = bench_now_ns();
	for (unsigned i = 0; i < packets; i++)
		if (writev(b->floor.fd, iov, n) != (ssize_t)len) {
			perror("floor writev");
			exit(1);
		}
	return (bench_now_ns() - t0) / packets;
}

/* ns per packet for a device floor: one writev() of [header, packet] per packet. */
static double run_fdev(struct bench *b, const struct fdev *d, size_t len, unsigned packets)
{
	struct iovec iov[2] = { { .iov_base = (void *)d->hdr, .iov_len = d->hdr_len },
				{ .iov_base = b->pkt, .iov_len = len } };
	double t0 = bench_now_ns();
	for (unsigned i = 0; i < packets; i++)
		if (writev(d->nd.fd, iov, 2) != (ssize_t)(d->hdr_len + len)) {
			perror("device floor writev");
			exit(1);
		}
	return (bench_now_ns() - t0) / packets;
}

static int fdev_create(struct rtnl *rtnl, struct fdev *d, int which)
{
	static const char *const names[N_FDEV] = { "bftap",  "bftapt",	"bfxdp",    "bfxdpt",
						   "bfvnet", "bfvnett", "bftunvnet" };
	bool vnet = which == FD_VNET || which == FD_VNET_TAG;
	bool tag = which == FD_TAP_TAG || which == FD_XDP_TAG || which == FD_VNET_TAG;
	uint8_t *h;

	if (which == FD_TUN_VNET) {
		/* IFF_TUN | IFF_VNET_HDR with the offloads, as netdev_create() makes it for GRO. */
		if (netdev_create(rtnl, names[which], CONFIG_HEADROOM_OFF, 1500, false, true,
				  &d->nd) < 0 ||
		    d->nd.kind != NETDEV_KIND_TUN || d->nd.vnet_hdr_len == 0)
			return -1;
		memset(d->hdr, 0, sizeof(d->hdr)); /* no offload: what a lone packet gets */
		d->hdr_len = d->nd.vnet_hdr_len;
		return 0;
	}
	if (netdev_create(rtnl, names[which], CONFIG_HEADROOM_XDP, 1500, false, vnet, &d->nd) < 0 ||
	    d->nd.kind != NETDEV_KIND_TAP_XDP)
		return -1;
	if ((which == FD_TAP || which == FD_TAP_TAG) && netdev_set_xdp(rtnl, &d->nd, false) < 0)
		return -1;
	memset(d->hdr, 0, sizeof(d->hdr));
	h = d->hdr + (vnet ? d->nd.vnet_hdr_len : 0); /* virtio-net header: all zero, no offload */
	memcpy(h, d->nd.mac, 6);
	memcpy(h + 6, (const uint8_t[]){ 0x02, 'B', 'E', 'N', 'C', 'H' }, 6);
	if (tag) {
		h[12] = 0x81;
		h += 4; /* VID 0, PCP 0 */
	}
	h[12] = 0x08;
	h[13] = 0x00;
	d->hdr_len = (size_t)(h + 14 - d->hdr);
	return 0;
}

/* How a column runs: the write mode (-1: measured, as in production) and GRO's skipping. */
#define AUTO (-1)

/*
 * What an auto column measured and decided on its mux so far (the write mode and its figures,
 * GRO's skipping, the datapath's hint), kept between the column's slices: the slices of one
 * run are one life of the mux, as if the other columns had not run in between.
 */
struct auto_state {
	bool kept;
	struct write_mode wmode;
	struct gro_auto gro_auto;
	int write_mode_measured;
	uint64_t gro_skipped;
	/* GRO's window so far (headroom.h): the other columns' segments are not in it. */
	uint64_t window_packets, window_merged;
};

static void auto_state_save(struct auto_state *a, const struct datapath *dp, const struct mux *m)
{
	a->kept = true;
	a->wmode = m->wmode;
	a->gro_auto = m->gro_auto;
	a->write_mode_measured = dp->write_mode_measured;
	a->gro_skipped = m->gro ? m->gro->stats.reasons[GRO_NM_SKIPPED] : 0;
	if (m->gro) {
		a->window_packets = m->gro->stats.packets - m->hr.last_packets;
		a->window_merged = m->gro->stats.segments_merged - m->hr.last_merged;
	}
}

static void auto_state_restore(const struct auto_state *a, struct datapath *dp, struct mux *m)
{
	m->wmode = a->wmode;
	m->gro_auto = a->gro_auto;
	dp->write_mode_measured = a->write_mode_measured;
	if (m->gro) {
		m->hr.last_packets = m->gro->stats.packets - a->window_packets;
		m->hr.last_merged = m->gro->stats.segments_merged - a->window_merged;
	}
}

/*
 * ns per packet for qmapd: aggregates through transport, codec, demux and device writes;
 * wmode: WRITE_MODE_WRITEV (one writev per packet), WRITE_MODE_URING (the writes of each
 * aggregate through io_uring, one submit per aggregate) or AUTO; always_try_gro: GRO tries
 * every packet even when nothing merges (before gro-auto.h). carry (or NULL): the auto
 * state of mux carry_id, restored before the run when kept and saved after it.
 */
static double run_qmapd(struct bench *b, const uint8_t *agg, unsigned packets, int wmode,
			bool always_try_gro, bool skip_gro, struct auto_state *carry,
			unsigned carry_id)
{
	/* The framing is the transport's to say: the NTB blocks are the bigger buffers here. */
	bool ntb = agg == b->ntb || agg == b->ntb_gro || agg == b->ntb_flows;
	size_t agg_len = ntb ? b->ntb_len : b->agg_len;

	b->dp->transport->framing = ntb ? TRANSPORT_FRAMING_NTB : TRANSPORT_FRAMING_QMAP;
	b->dp->transport->ntb.format = NTB_FORMAT_16;
	if (!b->dp->uring) {
		fprintf(stderr, "io_uring unavailable\n");
		exit(1);
	}
	datapath_force_dl_modes(b->dp, wmode, always_try_gro);
	if (carry && carry->kept)
		auto_state_restore(carry, b->dp, b->dp->mux[carry_id]);
	if (skip_gro) {
		/* As gro-auto.h decides for traffic that never merges, held for the whole run. */
		for (unsigned id = 2; id <= 4; id += 2)
			if (b->dp->mux[id]) {
				b->dp->mux[id]->gro_auto.skip = true;
				b->dp->mux[id]->gro_auto.left = UINT32_MAX;
			}
	}
	unsigned aggs = (packets + b->agg_frames - 1) / b->agg_frames;
	struct transport *t = b->dp->transport;
	double ns;
	if (b->dma_copy) {
		double t0 = bench_now_ns();
		for (unsigned i = 0; i < aggs; i++)
			transport_mem_replay(t, agg, agg_len);
		ns = bench_now_ns() - t0;
	} else {
		/*
		 * The whole ring holds the aggregate before the clock starts; each replay hands
		 * over the ring's next buffer as it is (the datapath leaves a receive buffer as
		 * it found it: mux_write_in_place() puts back what it borrows).
		 */
		for (uint32_t i = 0; i < t->n_rx; i++)
			memcpy(transport_mem_rx_buf(t, i), agg, agg_len);
		double t0 = bench_now_ns();
		for (unsigned i = 0; i < aggs; i++)
			transport_mem_replay(t, transport_mem_rx_buf(t, 0), agg_len);
		ns = bench_now_ns() - t0;
	}
	if (carry)
		auto_state_save(carry, b->dp, b->dp->mux[carry_id]);
	return ns / ((double)aggs * b->agg_frames);
}

/*
 * -s: the split of a packet's cost between the device and qmapd. The TUN floor, the device
 * floors and qmapd's two writev paths (the per-packet mux; the GRO device with GRO skipped,
 * as gro-auto.h decides when nothing merges), each on a TAP + XDP (headroom = auto/xdp) and on
 * a TUN (headroom = off: the per-packet mux on a plain TUN, the GRO device on a TUN with
 * IFF_VNET_HDR), in turns, `slices` times a slice of ~2000 packets each; per column the
 * minimum, 10th percentile and median of the slices' ns per packet. The minimum of many short
 * slices is what a packet costs when the shared machine leaves the core alone, which a median
 * of long runs at load 5 does not show.
 */
static void build_aggregate(struct bench *b, uint8_t *agg, uint8_t mux_id, const char *dst,
			    size_t len, uint32_t dl_max, unsigned max_frames, bool many_flows);

enum {
	SP_TUN,
	SP_TUN_WV1, /* the TUN floor through writev(), one iovec */
	SP_TUN_WV2, /* the same, two iovecs (10 bytes, the rest) */
	SP_FDEV0,
	SP_PP = SP_FDEV0 + N_FDEV,
	SP_SKIP,
	SP_PP_TUN,
	SP_SKIP_TUN,
	SP_COPY,
	N_SP
};

/*
 * ns per packet of the copy transport_mem_replay() makes of each aggregate into the receive
 * ring (the stand-in for the modem's DMA, inside the qmapd columns' time): the same memcpy.
 */
static double run_copy(const struct bench *b, unsigned packets)
{
	const struct transport *t = b->dp->transport;
	unsigned aggs = (packets + b->agg_frames - 1) / b->agg_frames;
	double t0 = bench_now_ns();
	/* Into the ring's own buffers in turn, as the replay does (between two replays). */
	for (unsigned i = 0; i < aggs; i++) {
		uint8_t *dst = t->rx_buf[i % t->n_rx];
		memcpy(dst, b->agg, b->agg_len);
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	return (bench_now_ns() - t0) / ((double)aggs * b->agg_frames);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One verdict line: ratio <= limit in every cell. */
struct verdict {
	const char *what;
	double limit;
	double value[2][8]; /* [QMAP, NTB16][size] */
	bool ntb;	    /* the NTB16 row has this figure too */
};

static void verdict_print(const struct verdict *v, const size_t *sizes, size_t n_sizes);

static void run_split(struct bench *b, const size_t *sizes, size_t n_sizes, unsigned slices,
		      uint32_t dl_max)
{
	static const char *const sp_name[N_SP] = {
		"tun floor",	    "tun writev 1 iov",
		"tun writev 2 iov", "tap",
		"tap+tag",	    "tap+xdp",
		"tap+xdp+tag",	    "vnet+xdp",
		"vnet+xdp+tag",	    "tun+vnet",
		"qmapd pp",	    "qmapd skip",
		"qmapd pp tun",	    "qmapd skip tun+vnet",
		"dma copy",
	};
	/* Each qmapd column and the floor of the device it writes (lone frames go untagged). */
	static const struct {
		int col, fdev;
		const char *what;
	} own[] = {
		{ SP_PP, SP_FDEV0 + FD_XDP, "pp/tap+xdp" },
		{ SP_SKIP, SP_FDEV0 + FD_VNET, "skip/vnet+xdp" },
		{ SP_PP_TUN, SP_TUN, "pp tun/tun" },
		{ SP_SKIP_TUN, SP_FDEV0 + FD_TUN_VNET, "skip tun+vnet/tun+vnet" },
	};
	struct verdict v_pp = { "split: per-packet, TAP + XDP / TUN floor", 1.05 };
	struct verdict v_pp_tun = { "split: per-packet, TUN (headroom = off) / TUN floor", 1.05 };
	struct verdict v_skip = { "split: GRO device skipping, TAP + XDP / TUN floor", 1.10 };
	struct verdict v_skip_tun = { "split: GRO device skipping, TUN + vnet (off) / TUN floor",
				      1.10 };
	double *t = calloc((size_t)N_SP * slices, sizeof(double));

	printf("split: %u slices per column, ns/pkt min / p10 / median (min / TUN floor min)\n",
	       slices);
	for (size_t s = 0; s < n_sizes; s++) {
		size_t len = sizes[s];
		build_packet(b->pkt, len, FLOOR_ADDR);
		build_aggregate(b, b->agg_tun_flows, 4, TUN_GRO_ADDR, len, dl_max,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, true);
		build_aggregate(b, b->agg_tun, 3, TUN_ADDR, len, dl_max,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, false);
		build_aggregate(b, b->agg_flows, 2, GRO_ADDR, len, dl_max,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, true);
		build_aggregate(b, b->agg, 1, QMAPD_ADDR, len, dl_max,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, false);
		unsigned n = (2000 / b->agg_frames) * b->agg_frames;
		uint64_t arrived[N_SP] = { 0 };
		for (unsigned k = 0; k <= slices; k++) {
			/* Slice 0 warms up and is not kept. */
			double *row = k ? t + (size_t)(k - 1) * N_SP : NULL;
			double v[N_SP];
			uint64_t a[N_SP + 1];
			a[SP_TUN] = udp_arrived();
			v[SP_TUN] = run_floor(b, len, n);
			a[SP_TUN_WV1] = udp_arrived();
			v[SP_TUN_WV1] = run_floor_writev(b, len, 0, n);
			a[SP_TUN_WV2] = udp_arrived();
			v[SP_TUN_WV2] = run_floor_writev(b, len, 10, n);
			for (int i = 0; i < N_FDEV; i++) {
				a[SP_FDEV0 + i] = udp_arrived();
				v[SP_FDEV0 + i] = run_fdev(b, &b->fdev[i], len, n);
			}
			a[SP_PP] = udp_arrived();
			v[SP_PP] = run_qmapd(b, b->agg, n, WRITE_MODE_WRITEV, true, false, NULL, 0);
			a[SP_SKIP] = udp_arrived();
			v[SP_SKIP] = run_qmapd(b, b->agg_flows, n, WRITE_MODE_WRITEV, false, true,
					       NULL, 0);
			a[SP_PP_TUN] = udp_arrived();
			v[SP_PP_TUN] = run_qmapd(b, b->agg_tun, n, WRITE_MODE_WRITEV, true, false,
						 NULL, 0);
			a[SP_SKIP_TUN] = udp_arrived();
			v[SP_SKIP_TUN] = run_qmapd(b, b->agg_tun_flows, n, WRITE_MODE_WRITEV, false,
						   true, NULL, 0);
			a[SP_COPY] = udp_arrived();
			v[SP_COPY] = run_copy(b, n);
			a[N_SP] = udp_arrived();
			if (!row)
				continue;
			memcpy(row, v, sizeof(v));
			for (int c = 0; c < N_SP; c++)
				arrived[c] += a[c + 1] - a[c];
		}
		printf("%6zu B:", len);
		double min[N_SP];
		for (int c = 0; c < N_SP; c++) {
			double col[slices];
			for (unsigned k = 0; k < slices; k++)
				col[k] = t[(size_t)k * N_SP + c];
			qsort(col, slices, sizeof(double), cmp_dbl);
			min[c] = col[0];
			printf(" %s %.0f/%.0f/%.0f (%.2fx)%s", sp_name[c], col[0], col[slices / 10],
			       col[slices / 2], col[0] / min[SP_TUN], c == N_SP - 1 ? "\n" : ";");
		}
		/* The qmapd columns the other way: with the stand-in DMA copy (-c), or without. */
		double other = b->dma_copy ? -min[SP_COPY] : min[SP_COPY];
		const char *timed = b->dma_copy ? "with" : "without",
			   *untimed = b->dma_copy ? "without" : "with";
		printf("%6s   %s the dma copy, / TUN floor:", "", untimed);
		for (size_t i = 0; i < ARRAY_SIZE(own); i++)
			printf(" %s %.2fx", sp_name[own[i].col],
			       (min[own[i].col] + other) / min[SP_TUN]);
		printf("\n%6s   / its device's floor (%s / %s the copy):", "", timed, untimed);
		for (size_t i = 0; i < ARRAY_SIZE(own); i++)
			printf(" %s %.2fx / %.2fx", own[i].what, min[own[i].col] / min[own[i].fdev],
			       (min[own[i].col] + other) / min[own[i].fdev]);
		/* Proof that no column is the speed of losing packets (the copy sends none). */
		printf("\n%6s   arrived at UDP (of sent):", "");
		for (int c = 0; c < SP_COPY; c++)
			printf(" %s %.3f", sp_name[c], (double)arrived[c] / ((double)n * slices));
		printf("\n");
		v_pp.value[0][s] = min[SP_PP] / min[SP_TUN];
		v_pp_tun.value[0][s] = min[SP_PP_TUN] / min[SP_TUN];
		v_skip.value[0][s] = min[SP_SKIP] / min[SP_TUN];
		v_skip_tun.value[0][s] = min[SP_SKIP_TUN] / min[SP_TUN];
	}
	free(t);
	printf("\n");
	verdict_print(&v_pp, sizes, n_sizes);
	verdict_print(&v_pp_tun, sizes, n_sizes);
	verdict_print(&v_skip, sizes, n_sizes);
	verdict_print(&v_skip_tun, sizes, n_sizes);
	for (unsigned id = 1; id <= 4; id++) {
		const struct mux *m = b->dp->mux[id];
		printf("%smux %u (%s%s): rx_packets=%lu writes=%lu dropped=%lu gro skipped=%lu\n",
		       id == 1 ? "\n" : "", id, m->nd.status, m->nd.vnet_hdr_len ? ", vnet" : "",
		       (unsigned long)m->stats.rx_packets, (unsigned long)m->stats.rx_writes,
		       (unsigned long)(m->stats.rx_dropped_queue_full +
				       m->stats.rx_dropped_write_error),
		       m->gro ? (unsigned long)m->gro->stats.reasons[GRO_NM_SKIPPED] : 0UL);
	}
}

static void auto_state_print(const char *what, const struct auto_state *a, bool gro)
{
	printf(" %s %s (%s: writev %.0f, io_uring %.0f ns/pkt, %" PRIu64 " probes)", what,
	       write_mode_name(a->wmode.mode), write_mode_why_name(a->wmode.why),
	       a->wmode.ns[WRITE_MODE_WRITEV], a->wmode.ns[WRITE_MODE_URING], a->wmode.probes);
	if (gro)
		printf(" GRO %s", a->gro_auto.skip     ? "skipping"
				  : a->gro_auto.trying ? "trying"
						       : "merging");
}

static void verdict_print(const struct verdict *v, const size_t *sizes, size_t n_sizes)
{
	bool met = true;

	for (int f = 0; f < (v->ntb ? 2 : 1); f++)
		for (size_t s = 0; s < n_sizes; s++)
			met = met && v->value[f][s] <= v->limit;
	printf("verdict: %-52s <= %.2fx: %-4s", v->what, v->limit, met ? "met" : "MISS");
	for (int f = 0; f < (v->ntb ? 2 : 1); f++) {
		printf(" |%s", f ? " ntb16" : "");
		for (size_t s = 0; s < n_sizes; s++)
			printf(" %zu B %.2fx", sizes[s], v->value[f][s]);
	}
	printf("\n");
}

static void build_aggregate(struct bench *b, uint8_t *agg, uint8_t mux_id, const char *dst,
			    size_t len, uint32_t dl_max, unsigned max_frames, bool many_flows)
{
	uint8_t pkt[2048];
	unsigned pad = (4 - len % 4) % 4;
	size_t frame = QMAP_HEADER_SIZE + len + pad;

	build_packet(pkt, len, dst);
	b->agg_len = 0;
	b->agg_frames = 0;
	while (b->agg_frames < max_frames && b->agg_len + frame <= dl_max) {
		uint8_t *h = agg + b->agg_len;
		memset(h, 0, frame);
		memcpy(h + QMAP_HEADER_SIZE, pkt, len);
		/* Distinct IPv4 ids, as a sender's stack would give them. */
		h[QMAP_HEADER_SIZE + 4] = (uint8_t)(b->agg_frames >> 8);
		h[QMAP_HEADER_SIZE + 5] = (uint8_t)b->agg_frames;
		/* A flow per packet (source port): nothing for GRO to merge, as with many flows. */
		if (many_flows)
			h[QMAP_HEADER_SIZE + 21] = (uint8_t)(0x39 + b->agg_frames);
		uint8_t *ip = h + QMAP_HEADER_SIZE;
		ip[10] = ip[11] = 0;
		csum_store(ip + 10, (uint16_t)~csum_fold(csum_partial(ip, 20, 0)));
		qmap_write_data_header(h, QMAP_V1, mux_id, len, pad, false);
		b->agg_len += frame;
		b->agg_frames++;
	}
}

/* The packets of the QMAP aggregate just built, as one NTB16 block of `session` (NDP last). */
static void build_ntb(struct bench *b, uint8_t *ntb, size_t room, const uint8_t *agg,
		      uint8_t session)
{
	struct ntb_params p = {
		.formats = NTB_FORMATS_16,
		.in_max_size = (uint32_t)room,
		.in_divisor = 4,
		.in_alignment = 4,
		.out_max_size = (uint32_t)room,
		.out_divisor = 4,
		.out_alignment = 4,
	};
	struct ntb_builder nb;
	size_t off = 0;

	if (ntb_build_init(&nb, ntb, room, &p, NTB_FORMAT_16, 0) < 0)
		goto fail;
	for (unsigned i = 0; i < b->agg_frames; i++) {
		const uint8_t *h = agg + off;
		size_t len = (size_t)(h[2] << 8 | h[3]) - (h[0] & 0x3f);
		uint8_t *dst;
		if (ntb_build_reserve(&nb, session, len, &dst) < 0)
			goto fail;
		memcpy(dst, h + QMAP_HEADER_SIZE, len);
		off += QMAP_HEADER_SIZE + (size_t)(h[2] << 8 | h[3]);
	}
	if (ntb_build_finish(&nb, &b->ntb_len) == 0)
		return;
fail:
	fprintf(stderr, "cannot build the NTB16 blocks\n");
	exit(1);
}

/*
 * Column a against b (or against the faster of b and b2, run by run): the ratio of the two
 * in each run, whose slices took turns, and the median of those ratios. A ratio of two
 * medians would set one run's a against another run's b, and the machine's speed moves from
 * run to run.
 */
static double run_ratio(const double *a, const double *b, const double *b2, unsigned runs)
{
	double ratio[MAX_RUNS];

	for (unsigned k = 0; k < runs; k++)
		ratio[k] = a[k] / (b2 && b2[k] < b[k] ? b2[k] : b[k]);
	return bench_median(ratio, (int)runs);
}

/* 0 .. n-1 in an order of their own for seed: a round of turns (Fisher-Yates, xorshift32). */
static void shuffle_turns(int *order, int n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u | 1;

	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		int j = (int)(x % (uint32_t)(i + 1));
		int t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

/* -o: one slice's figure, a line per slice; the column's name has no spaces. */
static void slice_log(FILE *f, size_t len, unsigned run, int slice, const char *column, double ns)
{
	if (!f)
		return;
	fprintf(f, "%zu %u %d ", len, run, slice);
	for (const char *c = column; *c; c++)
		fputc(*c == ' ' ? '_' : *c, f);
	fprintf(f, " %.1f\n", ns);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 576, 1500 };
	unsigned packets = 200000, runs = 5, split = 0;
	const char *slices_path = NULL;
	struct bench b = {};
	struct rtnl *rtnl = NULL;
	int c;

	while ((c = getopt(argc, argv, "cn:o:r:s:h")) >= 0) {
		switch (c) {
		case 'c':
			b.dma_copy = true;
			break;
		case 'n':
			packets = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = strtoul(optarg, NULL, 10);
			break;
		case 's':
			split = strtoul(optarg, NULL, 10);
			break;
		case 'o':
			slices_path = optarg;
			break;
		case 'h':
			printf("Usage: qmapd-bench-dl [-c] [-n PACKETS] [-r RUNS] [-o FILE] [-s "
			       "SLICES]\n"
			       "Downlink: qmapd's data path vs one write() per packet into TUN.\n"
			       "-c: time a copy of each aggregate into the receive ring as well\n"
			       "    (a stand-in for the modem's DMA, which costs no CPU in "
			       "production)\n"
			       "-o: every slice's ns/pkt into FILE (size run slice column ns)\n"
			       "-s: only the split of a packet's cost between device and qmapd,\n"
			       "    SLICES slices of ~2000 packets per column, in turns; qmapd's\n"
			       "    paths on TAP + XDP and on TUN (headroom = off).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS || packets < 1000) {
		fprintf(stderr, "qmapd-bench-dl: runs must be 1..%d, packets >= 1000\n", MAX_RUNS);
		return 2;
	}
	unsigned run_slices = packets / SLICE_PACKETS;
	FILE *slices_out = NULL;
	if (slices_path && !(slices_out = fopen(slices_path, "we"))) {
		fprintf(stderr, "qmapd-bench-dl: %s: %s\n", slices_path, strerror(errno));
		return 2;
	}
	int r = bench_enter_netns("qmapd-bench-dl", &rtnl);
	if (r != 0)
		return r;
	bench_write_sysctl("/proc/sys/net/ipv4/conf/all/rp_filter", "0");
	bench_write_sysctl("/proc/sys/net/ipv4/conf/default/rp_filter", "0");

	struct config_prefix floor_addr, qmapd_addr, src_net;
	config_parse_prefix(FLOOR_ADDR "/32", &floor_addr);
	config_parse_prefix(QMAPD_ADDR "/32", &qmapd_addr);
	config_parse_prefix("198.51.100.0/24", &src_net);

	/* The floor: a plain TUN, written one packet per write(). */
	if (netdev_create(rtnl, "bfloor", CONFIG_HEADROOM_OFF, 1500, false, false, &b.floor) < 0 ||
	    rtnl_addr_add(rtnl, b.floor.ifindex, &floor_addr) < 0 ||
	    rtnl_route_add(rtnl, b.floor.ifindex, &src_net, 100) < 0) {
		fprintf(stderr, "cannot set up the floor TUN device\n");
		return 1;
	}

	for (int i = 0; i < N_FDEV; i++)
		if (fdev_create(rtnl, &b.fdev[i], i) < 0) {
			fprintf(stderr, "cannot set up the %s floor device\n", fdev_name[i]);
			return 1;
		}

	/* qmapd: one mux on the in-memory transport, its device configured as in production. */
	struct config *cfg = calloc(1, sizeof(*cfg));
	config_init_defaults(cfg);
	snprintf(cfg->device.device, sizeof(cfg->device.device), "mem:");
	cfg->device.qmap_version = QMAP_V1;
	struct config_mux mux_cfg, *m = &mux_cfg;
	config_mux_init_defaults(m, 1);
	m->present = true;
	m->id = 1;
	snprintf(m->interface, sizeof(m->interface), "bqmap1");
	m->mtu = 1500;
	m->headroom = CONFIG_HEADROOM_XDP;
	m->ipv4_address = qmapd_addr;
	m->routes[0] = src_net;
	m->n_routes = 1;
	m->route_metric = 200;

	struct config_mux m2 = *m;
	struct config_prefix gro_addr;
	config_parse_prefix(GRO_ADDR "/32", &gro_addr);
	m2.id = 2;
	snprintf(m2.interface, sizeof(m2.interface), "bqmap2");
	m2.ipv4_address = gro_addr;
	m2.route_metric = 300;

	struct ev_loop *loop = ev_default_loop(0);
	r = datapath_new_with_backend(loop, rtnl, &cfg->device, &transport_mem_ops, NULL, &b.dp);
	if (r >= 0) {
		/* mux 1: the per-packet path; mux 2: with the virtio-net header and GRO. */
		b.dp->offload_devices = false;
		r = datapath_mux_add(b.dp, m, false, true, NULL);
		b.dp->offload_devices = true;
	}
	if (r >= 0)
		r = datapath_mux_add(b.dp, &m2, false, true, NULL);
	/*
	 * -s: the same two on TUN devices, as headroom = off makes them: mux 3 per-packet on a
	 * plain TUN, mux 4 the GRO device, a TUN with IFF_VNET_HDR (what qmapd runs with).
	 */
	struct config_mux m3 = *m, m4 = m2;
	config_parse_prefix(TUN_ADDR "/32", &m3.ipv4_address);
	config_parse_prefix(TUN_GRO_ADDR "/32", &m4.ipv4_address);
	m3.id = 3;
	m4.id = 4;
	snprintf(m3.interface, sizeof(m3.interface), "bqmap3");
	snprintf(m4.interface, sizeof(m4.interface), "bqmap4");
	m3.headroom = m4.headroom = CONFIG_HEADROOM_OFF;
	m3.route_metric = 400;
	m4.route_metric = 500;
	if (r >= 0 && split) {
		b.dp->offload_devices = false;
		r = datapath_mux_add(b.dp, &m3, false, true, NULL);
		b.dp->offload_devices = true;
		if (r >= 0)
			r = datapath_mux_add(b.dp, &m4, false, true, NULL);
		if (r >= 0 && (b.dp->mux[3]->nd.kind != NETDEV_KIND_TUN ||
			       b.dp->mux[3]->nd.vnet_hdr_len != 0 ||
			       b.dp->mux[4]->nd.kind != NETDEV_KIND_TUN || !b.dp->mux[4]->gro))
			r = -EINVAL;
	}
	if (r < 0 || datapath_start(b.dp) < 0) {
		fprintf(stderr, "cannot set up the qmapd datapath\n");
		return 1;
	}
	b.agg = malloc(cfg->device.dl_max_size);
	b.agg_gro = malloc(cfg->device.dl_max_size);
	b.agg_flows = malloc(cfg->device.dl_max_size);
	b.agg_tun = malloc(cfg->device.dl_max_size);
	b.agg_tun_flows = malloc(cfg->device.dl_max_size);
	/* NDP and NTH on top of the same packets: a few hundred bytes more at most. */
	size_t ntb_room = cfg->device.dl_max_size + 1024;
	if (ntb_room > datapath_dl_buffer_size(b.dp))
		ntb_room = datapath_dl_buffer_size(b.dp);
	b.ntb = malloc(ntb_room);
	b.ntb_gro = malloc(ntb_room);
	b.ntb_flows = malloc(ntb_room);
	transport_set_dl_size(b.dp->transport, (uint32_t)ntb_room);

	int sink_floor = bind_sink(FLOOR_ADDR), sink_qmapd = bind_sink(QMAPD_ADDR);
	int sink_gro = bind_sink(GRO_ADDR);
	int sink_tun = split ? bind_sink(TUN_ADDR) : -1,
	    sink_tun_gro = split ? bind_sink(TUN_GRO_ADDR) : -1;

	if (split) {
		if (split > 100000)
			split = 100000;
		run_split(&b, sizes, ARRAY_SIZE(sizes), split, cfg->device.dl_max_size);
		goto out;
	}
	printf("qmapd-bench-dl: %u packets per run in %u slices, %u runs (median), dl aggregate "
	       "%u bytes\n",
	       packets, run_slices, runs, cfg->device.dl_max_size);
	printf("qmapd devices: per-packet %s, GRO %s (USO %s)\n\n", b.dp->mux[1]->nd.status,
	       b.dp->mux[2]->nd.status, b.dp->mux[2]->nd.uso ? "yes" : "no");
	/*
	 * Columns (the first ones as before, which scripts/bench.sh reads by position): floor;
	 * qmapd per-packet, one writev per packet; qmapd GRO (one flow, production: auto); then
	 * the batched-write variants: the per-packet mux with its writes through io_uring, and
	 * the GRO device fed a flow per packet (GRO cannot merge: one write per packet), GRO
	 * tried on every packet, without and with io_uring; last, production (write mode and GRO
	 * skipping measured by qmapd): the per-packet mux, and the GRO device with nothing to
	 * merge.
	 */
	printf("%6s %7s | %9s %7s | %9s %7s %6s | %9s %7s %6s | %9s %6s | %9s %6s | %9s %6s |"
	       " %9s %6s | %9s %6s\n",
	       "size", "per-agg", "floor", "Gbit/s", "qmapd", "Gbit/s", "ratio", "qmapd+GRO",
	       "Gbit/s", "ratio", "pp+uring", "ratio", "flows", "ratio", "fl+uring", "ratio",
	       "pp auto", "ratio", "fl auto", "ratio");
	printf("%6s %7s | %9s %7s | %9s %7s %6s | %9s %7s %6s | %9s %6s | %9s %6s | %9s %6s |"
	       " %9s %6s | %9s %6s\n",
	       "bytes", "frames", "ns/pkt", "", "ns/pkt", "", "", "ns/pkt", "", "", "ns/pkt", "",
	       "ns/pkt", "", "ns/pkt", "", "ns/pkt", "", "ns/pkt", "");

	enum {
		FLOOR,
		PP,
		GRO,
		PP_URING,
		FLOWS,
		FLOWS_URING,
		PP_AUTO,
		FLOWS_AUTO,
		NTB_PP,
		NTB_GRO,
		NTB_PP_URING,
		NTB_FLOWS_URING,
		NTB_PP_AUTO,
		NTB_FLOWS_AUTO,
		N_COL
	};
	static const char *const col_name[N_COL] = {
		"floor",       "qmapd",		 "qmapd+GRO",	 "pp+uring",
		"flows",       "flows+uring",	 "pp auto",	 "flows auto",
		"ntb",	       "ntb+GRO",	 "ntb pp+uring", "ntb flows+uring",
		"ntb pp auto", "ntb flows auto",
	};
	/* Each column: its aggregates (0 QMAP per-packet, 1 GRO, 2 flows; +3 NTB16), modes. */
	static const struct {
		int agg;
		int wmode;
		bool always_try_gro;
	} col_run[N_COL] = {
		[PP] = { 0, WRITE_MODE_WRITEV, true },
		[GRO] = { 1, AUTO, false },
		[PP_URING] = { 0, WRITE_MODE_URING, true },
		[FLOWS] = { 2, WRITE_MODE_WRITEV, true },
		[FLOWS_URING] = { 2, WRITE_MODE_URING, true },
		[PP_AUTO] = { 0, AUTO, false },
		[FLOWS_AUTO] = { 2, AUTO, false },
		[NTB_PP] = { 3, WRITE_MODE_WRITEV, true },
		[NTB_GRO] = { 4, AUTO, false },
		[NTB_PP_URING] = { 3, WRITE_MODE_URING, true },
		[NTB_FLOWS_URING] = { 5, WRITE_MODE_URING, true },
		[NTB_PP_AUTO] = { 3, AUTO, false },
		[NTB_FLOWS_AUTO] = { 5, AUTO, false },
	};
	struct verdict v_pp = { "per-packet (auto) / floor", 1.05, .ntb = true };
	struct verdict v_gro = { "GRO, one flow (auto) / floor", 0.85, .ntb = true };
	struct verdict v_flows = { "GRO device, nothing merges (auto) / floor", 1.10, .ntb = true };
	struct verdict v_best = { "auto / the faster forced write mode, per-packet", 1.05,
				  .ntb = true };
	struct verdict v_best_fl = { "auto / the faster forced write mode, nothing merges", 1.05 };
	struct verdict v_plain = { "auto / plain writev (never slower), per-packet", 1.03,
				   .ntb = true };
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
		size_t len = sizes[s];
		double t[N_COL][MAX_RUNS];
		uint64_t arrived[N_COL] = { 0 }, sent[N_COL] = { 0 };
		double tf[N_FDEV][MAX_RUNS];
		uint64_t f_arrived[N_FDEV] = { 0 };
		struct auto_state st[N_COL];

		build_packet(b.pkt, len, FLOOR_ADDR);
		build_aggregate(&b, b.agg_flows, 2, GRO_ADDR, len, cfg->device.dl_max_size,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, true);
		build_ntb(&b, b.ntb_flows, ntb_room, b.agg_flows, 1);
		build_aggregate(&b, b.agg_gro, 2, GRO_ADDR, len, cfg->device.dl_max_size,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, false);
		build_ntb(&b, b.ntb_gro, ntb_room, b.agg_gro, 1);
		build_aggregate(&b, b.agg, 1, QMAPD_ADDR, len, cfg->device.dl_max_size,
				CONFIG_UL_MAX_DATAGRAMS_DEFAULT, false);
		build_ntb(&b, b.ntb, ntb_room, b.agg, 0);
		const uint8_t *aggs[6] = { b.agg, b.agg_gro, b.agg_flows,
					   b.ntb, b.ntb_gro, b.ntb_flows };
		run_floor(&b, len, packets / 10); /* warm caches and neighbour state */
		for (int i = 0; i < N_FDEV; i++)
			run_fdev(&b, &b.fdev[i], len, packets / 10);
		for (int col = PP; col < N_COL; col++)
			run_qmapd(&b, aggs[col_run[col].agg], packets / 10, col_run[col].wmode,
				  col_run[col].always_try_gro, false, NULL, 0);
		/*
		 * Each run of a column in slices of SLICE_PACKETS, every column's slice in turn: a
		 * burst of the shared machine's load hits all columns alike instead of the one
		 * that ran then. An auto column's slices carry its state on (auto_state), so a
		 * run is one life of the mux from its start, probes included.
		 */
		unsigned slice = packets / run_slices;
		unsigned per_slice = (slice + b.agg_frames - 1) / b.agg_frames * b.agg_frames;
		for (unsigned k = 0; k < runs; k++) {
			for (int col = 0; col < N_COL; col++) {
				t[col][k] = 0;
				st[col].kept = false;
			}
			for (int i = 0; i < N_FDEV; i++)
				tf[i][k] = 0;
			for (int sl = 0; sl < (int)run_slices; sl++) {
				/* Each round in another order, so that no column always
				 * follows the same one: what a column leaves behind (io_uring's
				 * workers, the caches) taxes the next, 0.2-0.4 % measured. */
				int order[N_COL];
				shuffle_turns(order, N_COL,
					      (uint32_t)(len * 7919 + k * 104729 + (unsigned)sl));
				for (int turn = 0; turn < N_COL; turn++) {
					int col = order[turn];
					uint64_t a0 = udp_arrived();
					if (col == FLOOR) {
						/* The TUN floor, then each device floor. */
						double v = run_floor(&b, len, slice);
						t[col][k] += v;
						slice_log(slices_out, len, k, sl, col_name[col], v);
						arrived[col] += udp_arrived() - a0;
						for (int i = 0; i < N_FDEV; i++) {
							uint64_t fa0 = udp_arrived();
							tf[i][k] += run_fdev(&b, &b.fdev[i], len,
									     slice);
							f_arrived[i] += udp_arrived() - fa0;
						}
					} else {
						bool is_auto = col_run[col].wmode == AUTO;
						/* mux 1 carries the per-packet aggregates, mux 2 the others. */
						unsigned id = col_run[col].agg % 3 == 0 ? 1 : 2;
						double v = run_qmapd(&b, aggs[col_run[col].agg],
								     slice, col_run[col].wmode,
								     col_run[col].always_try_gro,
								     false,
								     is_auto ? &st[col] : NULL, id);
						t[col][k] += v;
						slice_log(slices_out, len, k, sl, col_name[col], v);
						arrived[col] += udp_arrived() - a0;
					}
					sent[col] += col == FLOOR ? slice : per_slice;
				}
			}
			for (int col = 0; col < N_COL; col++)
				t[col][k] /= run_slices;
			for (int i = 0; i < N_FDEV; i++)
				tf[i][k] /= run_slices;
		}
		double m_ns[N_COL], ratio[N_COL];
		for (int col = 0; col < N_COL; col++) {
			m_ns[col] = bench_median(t[col], runs);
			ratio[col] = run_ratio(t[col], t[FLOOR], NULL, runs);
		}
		double f = m_ns[FLOOR], q = m_ns[PP], g = m_ns[GRO];
		printf("%6zu %7u | %9.1f %7.2f | %9.1f %7.2f %5.2fx | %9.1f %7.2f %5.2fx | %9.1f "
		       "%5.2fx | %9.1f %5.2fx | %9.1f %5.2fx | %9.1f %5.2fx | %9.1f %5.2fx\n",
		       len, b.agg_frames, f, len * 8 / f, q, len * 8 / q, ratio[PP], g, len * 8 / g,
		       ratio[GRO], m_ns[PP_URING], ratio[PP_URING], m_ns[FLOWS], ratio[FLOWS],
		       m_ns[FLOWS_URING], ratio[FLOWS_URING], m_ns[PP_AUTO], ratio[PP_AUTO],
		       m_ns[FLOWS_AUTO], ratio[FLOWS_AUTO]);
		/* The same columns for NTB16 (an MBIM modem), against the same floor. */
		printf("%6s %7s | %9s %7s | %9.1f %7.2f %5.2fx | %9.1f %7.2f %5.2fx | %9.1f "
		       "%5.2fx | %9s %6s | %9.1f %5.2fx | %9.1f %5.2fx | %9.1f %5.2fx\n",
		       "ntb16", "", "", "", m_ns[NTB_PP], len * 8 / m_ns[NTB_PP], ratio[NTB_PP],
		       m_ns[NTB_GRO], len * 8 / m_ns[NTB_GRO], ratio[NTB_GRO], m_ns[NTB_PP_URING],
		       ratio[NTB_PP_URING], "", "", m_ns[NTB_FLOWS_URING], ratio[NTB_FLOWS_URING],
		       m_ns[NTB_PP_AUTO], ratio[NTB_PP_AUTO], m_ns[NTB_FLOWS_AUTO],
		       ratio[NTB_FLOWS_AUTO]);
		printf("%6s %7s | device floors, writev [header, packet] ns/pkt (/ TUN floor):", "",
		       "");
		for (int i = 0; i < N_FDEV; i++)
			printf(" %s %.1f (%.2fx)", fdev_name[i], bench_median(tf[i], runs),
			       run_ratio(tf[i], t[FLOOR], NULL, runs));
		/* Lone frames go untagged while XDP is attached (mux_update_dl_l2()). */
		printf("\n%6s %7s | qmapd / its device's floor (tap+xdp; flows: vnet+xdp): pp "
		       "%.2fx, pp auto %.2fx, ntb pp auto %.2fx, flows auto %.2fx\n",
		       "", "", run_ratio(t[PP], tf[FD_XDP], NULL, runs),
		       run_ratio(t[PP_AUTO], tf[FD_XDP], NULL, runs),
		       run_ratio(t[NTB_PP_AUTO], tf[FD_XDP], NULL, runs),
		       run_ratio(t[FLOWS_AUTO], tf[FD_VNET], NULL, runs));
		printf("%6s %7s | arrived at UDP (of sent):", "", "");
		for (int col = 0; col < N_COL; col++)
			printf(" %s %.3f", col_name[col], (double)arrived[col] / sent[col]);
		for (int i = 0; i < N_FDEV; i++)
			printf(" %s %.3f", fdev_name[i],
			       (double)f_arrived[i] / ((double)sent[FLOOR]));
		printf("\n%6s %7s | auto, last run:", "", "");
		auto_state_print("pp", &st[PP_AUTO], false);
		auto_state_print("; flows", &st[FLOWS_AUTO], true);
		auto_state_print("; GRO", &st[GRO], true);
		printf("\n");

		v_pp.value[0][s] = ratio[PP_AUTO];
		v_pp.value[1][s] = ratio[NTB_PP_AUTO];
		v_gro.value[0][s] = ratio[GRO];
		v_gro.value[1][s] = ratio[NTB_GRO];
		v_flows.value[0][s] = ratio[FLOWS_AUTO];
		v_flows.value[1][s] = ratio[NTB_FLOWS_AUTO];
		v_best.value[0][s] = run_ratio(t[PP_AUTO], t[PP], t[PP_URING], runs);
		v_best.value[1][s] = run_ratio(t[NTB_PP_AUTO], t[NTB_PP], t[NTB_PP_URING], runs);
		/* Nothing merges: the faster of the forced modes, GRO tried (as before). */
		v_best_fl.value[0][s] = run_ratio(t[FLOWS_AUTO], t[FLOWS], t[FLOWS_URING], runs);
		v_plain.value[0][s] = run_ratio(t[PP_AUTO], t[PP], NULL, runs);
		v_plain.value[1][s] = run_ratio(t[NTB_PP_AUTO], t[NTB_PP], NULL, runs);
	}
	printf("\n");
	verdict_print(&v_pp, sizes, ARRAY_SIZE(sizes));
	verdict_print(&v_gro, sizes, ARRAY_SIZE(sizes));
	verdict_print(&v_flows, sizes, ARRAY_SIZE(sizes));
	verdict_print(&v_plain, sizes, ARRAY_SIZE(sizes));
	verdict_print(&v_best, sizes, ARRAY_SIZE(sizes));
	verdict_print(&v_best_fl, sizes, ARRAY_SIZE(sizes));

	for (unsigned id = 1; id <= 2; id++) {
		const struct mux_stats *ms = &b.dp->mux[id]->stats;
		const struct gro *g = b.dp->mux[id]->gro;
		printf("%smux %u counters: rx_packets=%lu writes=%lu dropped_queue_full=%lu "
		       "write_errors=%lu gro_merged=%lu\n",
		       id == 1 ? "\n" : "", id, (unsigned long)ms->rx_packets,
		       (unsigned long)ms->rx_writes, (unsigned long)ms->rx_dropped_queue_full,
		       (unsigned long)ms->rx_dropped_write_error,
		       g ? (unsigned long)g->stats.segments_merged : 0UL);
	}
	printf("ratio = qmapd ns/packet / floor ns/packet in each run, the median of the runs' "
	       "ratios\n"
	       "qmapd: the per-packet mux, one writev per packet; pp+uring: its writes submitted "
	       "through io_uring per aggregate;\n"
	       "flows / fl+uring: the GRO device, a flow per packet (nothing merges), GRO tried on "
	       "every packet, without / with io_uring;\n"
	       "qmapd+GRO, pp auto, fl auto: as in production, write mode and GRO skipping "
	       "measured by qmapd (write-mode.h, gro-auto.h);\n"
	       "ntb16: the same packets and devices, in NTB16 blocks (MBIM) instead of QMAP\n");

out:
	if (slices_out)
		fclose(slices_out);
	close(sink_floor);
	close(sink_qmapd);
	close(sink_gro);
	if (split) {
		close(sink_tun);
		close(sink_tun_gro);
	}
	free(b.agg);
	free(b.agg_gro);
	free(b.agg_flows);
	free(b.agg_tun);
	free(b.agg_tun_flows);
	free(b.ntb);
	free(b.ntb_gro);
	free(b.ntb_flows);
	datapath_free(b.dp);
	netdev_close(&b.floor);
	for (int i = 0; i < N_FDEV; i++)
		netdev_close(&b.fdev[i].nd);
	rtnl_close(rtnl);
	free(cfg);
	return 0;
}
