/* SPDX-License-Identifier: MIT */
/*
 * Uplink benchmark: qmapd's own data path reading its mux devices into QMAP aggregates on the
 * `mem` transport (whose OUT transfers complete at once and are only counted).
 *
 * The traffic comes from UDP sockets in the same network namespace: the kernel routes it out
 * through a mux device (a TAP, IFF_NOARP, so no neighbour resolution) and qmapd reads it.
 * One thread does both, in alternating phases: the sender puts a batch into the device's queue
 * (the kernel's whole transmit path runs inside sendmmsg()), then qmapd's event loop is turned
 * with ev_run(EVRUN_NOWAIT) until the queue is empty. Only the second phase is charged to
 * qmapd, as CPU time of the thread (CLOCK_THREAD_CPUTIME_ID: user + system, preemption by the
 * shared machine excluded). "Per core" therefore means: packets per second one core would
 * carry if it did nothing but qmapd's work (epoll, readv, framing, aggregation, submission)
 * while the senders ran elsewhere. It is optimistic by the cache misses a sender on another
 * core would cause (here the packets are still in this core's cache when qmapd reads them).
 *
 * Figures, medians of several interleaved runs:
 *  (a) plain reads, one UDP datagram per read: kpps per core, against a floor measured in the
 *      same run (one read() per packet from a TAP like mux 2's, no event loop, no framing);
 *  (b) UDP GSO sends (UDP_SEGMENT, 1400-byte segments, 64400-byte sends): ns of qmapd CPU
 *      per segment, for the production device (virtio-net header, USO super-packets segmented
 *      by gso.c; QMAPv1 computes the UDP checksums, QMAPv5 leaves them to the modem) and for a
 *      device without offloads (the kernel segments in the sender's context).
 * Every count is checked: qmapd's mux tx_packets/tx_bytes and the transport's out_bytes
 * against what the sender sent, and the device's tx_dropped (queue full) from /proc/net/dev.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench-util.h"
#include "config.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "log.h"
#include "netdev.h"
#include "qmap.h"
#include "rtnl.h"
#include "transport-mem.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* Linux 4.18 UAPI, not in every libc's headers */
#endif

#define MAX_RUNS     15
#define BATCH_MAX    400 /* below the TAP queue (500 packets): a batch is never dropped */
#define GSO_SEG	     1400
#define GSO_SEGS     46 /* 46 * 1400 = 64400 bytes of payload: a 64 KB send */
#define GSO_BATCH    8	/* super-packets per phase: 368 segments without offloads */
#define UDP_IP_HDRS  28
#define DST_PORT     9
#define UDP_SEGMENTS (GSO_SEG + UDP_IP_HDRS)

/* Something that reads the traffic: qmapd through one mux, or the raw floor. */
struct path {
	const char *label;
	const char *ifname;
	struct mux *m;	 /* qmapd; NULL for the floor */
	int floor_fd;	 /* the floor's device */
	int sock;	 /* the sender's UDP socket, connected to a host behind the device */
	int sock_gso;	 /* the same with UDP_SEGMENT set */
	bool gso_direct; /* UDP_SEGMENT refused (EIO): send the segments one by one */
};

struct totals {
	uint64_t sent, sent_bytes; /* IP packets (segments) and their bytes */
	uint64_t read;		   /* packets qmapd framed (or the floor read) */
	uint64_t tx_bytes, out_bytes, hdr_bytes;
	uint64_t qmapd_drops;			    /* not IP, too big, link down, bad GSO */
	uint64_t ulq_codel, ulq_limit, ulq_flushed; /* dropped by the fq-codel queue */
	uint64_t ulq_left;			    /* still queued when a run ended */
	uint64_t dev_dropped;			    /* the device's queue overflowed */
	uint64_t gso_segments;
};

struct bench {
	struct ev_loop *loop;
	struct datapath *dp;
	struct config *cfg;
	uint8_t payload[65536];
	uint8_t rbuf[65536];
};

static uint64_t mux_drops(const struct mux *m)
{
	const struct mux_stats *s = &m->stats;
	return s->tx_dropped_not_ip + s->tx_dropped_too_big + s->tx_dropped_link_down +
	       s->tx_dropped_bad_gso;
}

static uint64_t mux_progress(const struct mux *m)
{
	return m->stats.tx_packets + mux_drops(m);
}

/* Packets the mux's fq-codel queue holds (read, not yet framed). */
static uint64_t mux_queued(const struct mux *m)
{
	return m->ulq ? m->ulq->stats.queued_packets : 0;
}

/*
 * Turn qmapd's loop until an iteration reads nothing more and the mux's fq-codel queue is
 * empty: a queued packet is read but not yet framed, and packets left there would be counted
 * lost at the end of a run (or flushed when the QMAP version changes).
 */
static uint64_t drain_qmapd(struct bench *b, struct path *p)
{
	uint64_t start = mux_progress(p->m), before;
	unsigned idle = 0;

	do {
		before = mux_progress(p->m);
		ev_run(b->loop, EVRUN_NOWAIT);
		idle = mux_progress(p->m) == before ? idle + 1 : 0;
	} while (idle == 0 || (mux_queued(p->m) > 0 && idle < 1000));
	return mux_progress(p->m) - start;
}

/* The floor: one read() per packet, nothing else. */
static uint64_t drain_floor(struct bench *b, struct path *p)
{
	uint64_t n = 0;

	while (read(p->floor_fd, b->rbuf, sizeof(b->rbuf)) > 0)
		n++;
	return n;
}

/* Send `count` datagrams of `ip_len` IP bytes with sendmmsg(); returns how many went. */
static unsigned send_small(struct bench *b, int sock, size_t ip_len, unsigned count)
{
	struct mmsghdr msgs[64];
	struct iovec iov = { .iov_base = b->payload, .iov_len = ip_len - UDP_IP_HDRS };
	unsigned sent = 0;

	memset(msgs, 0, sizeof(msgs));
	for (unsigned i = 0; i < ARRAY_SIZE(msgs); i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (sent < count) {
		unsigned n = count - sent < ARRAY_SIZE(msgs) ? count - sent : ARRAY_SIZE(msgs);
		int r = sendmmsg(sock, msgs, n, 0);
		if (r <= 0) {
			perror("sendmmsg");
			exit(1);
		}
		sent += r;
	}
	return sent;
}

/* `count` sends of GSO_SEGS * GSO_SEG bytes with UDP_SEGMENT; returns segments sent. */
static unsigned send_gso(struct bench *b, struct path *p, unsigned count)
{
	if (p->gso_direct)
		return send_small(b, p->sock, UDP_SEGMENTS, count * GSO_SEGS);
	for (unsigned i = 0; i < count; i++) {
		ssize_t r = send(p->sock_gso, b->payload, GSO_SEGS * GSO_SEG, 0);
		if (r != GSO_SEGS * GSO_SEG) {
			perror("send (UDP_SEGMENT)");
			exit(1);
		}
	}
	return count * GSO_SEGS;
}

struct measure {
	double qmapd_ns; /* CPU ns of the reading side per packet/segment */
	double sender_ns;
};

/*
 * One run of one scenario: `packets` IP packets in batches, sender phase then reader phase.
 * gso: send 64 KB UDP_SEGMENT super-packets instead of single datagrams of ip_len bytes.
 */
static struct measure run(struct bench *b, struct path *p, size_t ip_len, bool gso,
			  unsigned packets, unsigned batch, struct totals *t)
{
	double reader = 0, sender = 0;
	uint64_t sent = 0, read = 0;
	struct bench_ifstats d0 = {}, d1 = {};
	struct mux_stats m0 = {};
	struct ulq_mux_stats q0 = {};
	struct transport_stats t0 = b->dp->transport->stats;

	if (p->m)
		m0 = p->m->stats;
	if (p->m && p->m->ulq)
		q0 = p->m->ulq->stats;
	bench_ifstats(p->ifname, &d0);
	while (sent < packets) {
		double c0 = bench_thread_cpu_ns();
		sent += gso ? send_gso(b, p, GSO_BATCH) : send_small(b, p->sock, ip_len, batch);
		double c1 = bench_thread_cpu_ns();
		read += p->m ? drain_qmapd(b, p) : drain_floor(b, p);
		double c2 = bench_thread_cpu_ns();
		sender += c1 - c0;
		reader += c2 - c1;
	}
	bench_ifstats(p->ifname, &d1);
	size_t seg_len = gso ? UDP_SEGMENTS : ip_len;
	t->sent += sent;
	t->sent_bytes += sent * seg_len;
	t->read += read;
	t->dev_dropped += d1.tx_dropped - d0.tx_dropped;
	if (p->m) {
		const struct mux_stats *m1 = &p->m->stats;
		const struct transport_stats *t1 = &b->dp->transport->stats;
		t->tx_bytes += m1->tx_bytes - m0.tx_bytes;
		t->out_bytes += t1->out_bytes - t0.out_bytes;
		t->hdr_bytes += (m1->tx_packets - m0.tx_packets) * b->dp->ul_header_size;
		t->qmapd_drops +=
			mux_drops(p->m) - (m0.tx_dropped_not_ip + m0.tx_dropped_too_big +
					   m0.tx_dropped_link_down + m0.tx_dropped_bad_gso);
		t->gso_segments += m1->tx_gso_segments - m0.tx_gso_segments;
		if (p->m->ulq) {
			const struct ulq_mux_stats *q1 = &p->m->ulq->stats;
			t->ulq_codel += q1->drops_codel - q0.drops_codel;
			t->ulq_limit += q1->drops_overlimit - q0.drops_overlimit;
			t->ulq_flushed += q1->drops_flushed - q0.drops_flushed;
			t->ulq_left += q1->queued_packets;
		}
	} else {
		t->tx_bytes += read * seg_len;
	}
	return (struct measure){ reader / sent, sender / sent };
}

/* "ok", or what did not add up. */
static const char *check(const struct totals *t, bool qmapd, char *buf, size_t size)
{
	int n = 0;

	if (t->read != t->sent)
		n += snprintf(buf + n, size - n, "LOSS %llu of %llu ",
			      (unsigned long long)(t->sent - t->read), (unsigned long long)t->sent);
	if (t->dev_dropped)
		n += snprintf(buf + n, size - n, "device tx_dropped %llu ",
			      (unsigned long long)t->dev_dropped);
	if (qmapd && t->ulq_codel + t->ulq_limit + t->ulq_flushed)
		n += snprintf(buf + n, size - n,
			      "queue dropped codel %llu limit %llu flushed %llu ",
			      (unsigned long long)t->ulq_codel, (unsigned long long)t->ulq_limit,
			      (unsigned long long)t->ulq_flushed);
	if (qmapd && t->ulq_left)
		n += snprintf(buf + n, size - n, "still queued at the ends of runs %llu ",
			      (unsigned long long)t->ulq_left);
	if (qmapd && t->qmapd_drops)
		n += snprintf(buf + n, size - n, "qmapd dropped %llu ",
			      (unsigned long long)t->qmapd_drops);
	if (qmapd && t->tx_bytes != t->sent_bytes)
		n += snprintf(buf + n, size - n, "tx_bytes %llu != sent %llu ",
			      (unsigned long long)t->tx_bytes, (unsigned long long)t->sent_bytes);
	if (qmapd && t->out_bytes != t->tx_bytes + t->hdr_bytes)
		n += snprintf(buf + n, size - n, "out_bytes %llu != %llu ",
			      (unsigned long long)t->out_bytes,
			      (unsigned long long)(t->tx_bytes + t->hdr_bytes));
	if (n == 0)
		snprintf(buf, size, "ok");
	return buf;
}

static int connect_udp(const char *dst, bool gso)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(DST_PORT) };
	int seg = GSO_SEG, buf = 4 << 20;

	inet_pton(AF_INET, dst, &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	/* The TAP orphans what it queues, but a 64 KB send still needs the room to be built. */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	if (gso && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) < 0) {
		perror("setsockopt(UDP_SEGMENT)");
		exit(1);
	}
	return fd;
}

static void add_mux(struct bench *b, struct config_mux *m, unsigned id, const char *ifname,
		    const char *addr, const char *route, bool offload)
{
	*m = *b->cfg->mux[1];
	m->present = true;
	m->id = id;
	snprintf(m->interface, sizeof(m->interface), "%s", ifname);
	m->mtu = 1500;
	m->headroom = CONFIG_HEADROOM_XDP;
	config_parse_prefix(addr, &m->ipv4_address);
	config_parse_prefix(route, &m->routes[0]);
	m->n_routes = 1;
	m->route_metric = 100 + id;
	b->dp->offload_devices = offload;
	if (datapath_mux_add(b->dp, m, false, true, NULL) < 0) {
		fprintf(stderr, "cannot add mux %u\n", id);
		exit(1);
	}
}

static void set_version(struct bench *b, enum qmap_version v)
{
	const struct config_device *d = &b->cfg->device;
	if (datapath_set_data_format(b->dp, v, d->dl_max_size, d->ul_max_size, d->ul_max_datagrams,
				     0) < 0) {
		fprintf(stderr, "cannot set QMAP version\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1400 };
	unsigned packets = 100000, runs = 5, batch = 256;
	int cpu = -1, c;
	struct bench *b = calloc(1, sizeof(*b));
	struct rtnl *rtnl = NULL;
	char why[256];

	const char *queue = "fq-codel";

	while ((c = getopt(argc, argv, "n:r:b:c:q:h")) >= 0) {
		switch (c) {
		case 'n':
			packets = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			batch = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'q':
			if (strcmp(optarg, "fifo") != 0 && strcmp(optarg, "fq-codel") != 0 &&
			    strcmp(optarg, "queued") != 0) {
				fprintf(stderr, "invalid -q '%s': fifo, fq-codel or queued\n",
					optarg);
				return 2;
			}
			queue = optarg;
			break;
		case 'h':
			printf("Usage: qmapd-bench-ul [-n PACKETS] [-r RUNS] [-b BATCH] [-c CPU] "
			       "[-q fifo|fq-codel|queued]\n"
			       "Uplink: qmapd reading its mux devices into QMAP aggregates.\n"
			       "-q: the muxes' uplink queue (default fq-codel: straight into the "
			       "aggregate while nothing waits); queued: every packet through the "
			       "queue\n");
			return 0;
		default:
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS || packets < 1000 || batch < 1 || batch > BATCH_MAX) {
		fprintf(stderr, "qmapd-bench-ul: runs 1..%d, packets >= 1000, batch 1..%d\n",
			MAX_RUNS, BATCH_MAX);
		return 2;
	}
	if (cpu >= 0 && bench_pin_cpu(cpu) < 0)
		perror("sched_setaffinity");
	int r = bench_enter_netns("qmapd-bench-ul", &rtnl);
	if (r != 0)
		return r;
	/*
	 * No IPv6: router solicitations, MLD and DAD would go out through the mux devices and
	 * be counted by qmapd, spoiling the check that it read exactly what the sender sent.
	 */
	bench_write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	bench_write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");

	b->cfg = calloc(1, sizeof(*b->cfg));
	config_init_defaults(b->cfg);
	snprintf(b->cfg->device.device, sizeof(b->cfg->device.device), "mem:");
	b->cfg->device.qmap_version = QMAP_V1;
	if (!config_mux_add(b->cfg->mux, 1)) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	if (strcmp(queue, "fifo") == 0)
		b->cfg->mux[1]->uplink_queue = CONFIG_UPLINK_QUEUE_FIFO;
	b->loop = ev_default_loop(0);
	if (datapath_new_with_backend(b->loop, rtnl, &b->cfg->device, &transport_mem_ops, NULL,
				      &b->dp) < 0) {
		fprintf(stderr, "cannot set up the qmapd datapath\n");
		return 1;
	}
	/* -q queued: every packet through the fq-codel queue (one copy more), never straight in. */
	b->dp->ul_force_queue = strcmp(queue, "queued") == 0;
	/* mux 1 as in production (virtio-net header: USO/TSO, checksum offload); mux 2 without. */
	struct config_mux m1, m2;
	add_mux(b, &m1, 1, "bqmap1", "192.0.2.1/32", "198.51.100.0/24", true);
	add_mux(b, &m2, 2, "bqmap2", "192.0.2.2/32", "198.51.101.0/24", false);
	if (datapath_start(b->dp) < 0) {
		fprintf(stderr, "cannot start the datapath\n");
		return 1;
	}

	/* The floor: the same kind of device as mux 2 (TAP + XDP, no offloads), read raw. */
	struct netdev floor;
	struct config_prefix faddr, froute;
	config_parse_prefix("192.0.2.3/32", &faddr);
	config_parse_prefix("198.51.102.0/24", &froute);
	if (netdev_create(rtnl, "bfloor", CONFIG_HEADROOM_XDP, 1500, false, false, &floor) < 0 ||
	    rtnl_addr_add(rtnl, floor.ifindex, &faddr) < 0 ||
	    rtnl_route_add(rtnl, floor.ifindex, &froute, 100) < 0 ||
	    netdev_set_carrier(&floor, true) < 0) {
		fprintf(stderr, "cannot set up the floor device\n");
		return 1;
	}

	struct mux *mx1 = b->dp->mux[1], *mx2 = b->dp->mux[2];
	struct path pf = { "floor",
			   "bfloor",
			   NULL,
			   floor.fd,
			   connect_udp("198.51.102.9", false),
			   connect_udp("198.51.102.9", true) };
	struct path p1 = { "qmapd",
			   "bqmap1",
			   mx1,
			   -1,
			   connect_udp("198.51.100.9", false),
			   connect_udp("198.51.100.9", true) };
	struct path p2 = { "qmapd",
			   "bqmap2",
			   mx2,
			   -1,
			   connect_udp("198.51.101.9", false),
			   connect_udp("198.51.101.9", true) };

	/* A device without checksum offload may refuse UDP_SEGMENT (older kernels: EIO). */
	if (send(p2.sock_gso, b->payload, GSO_SEGS * GSO_SEG, 0) < 0) {
		fprintf(stderr,
			"note: UDP_SEGMENT on the device without offloads: %s; sending "
			"the 46 segments as single datagrams there\n",
			strerror(errno));
		p2.gso_direct = true;
	}
	drain_qmapd(b, &p2);

	printf("qmapd-bench-ul: %u packets per scenario and run, %u runs (median), batches of %u "
	       "(GSO: %u sends of %u x %u B)\n",
	       packets, runs, batch, GSO_BATCH, GSO_SEGS, GSO_SEG);
	printf("uplink aggregate: %u bytes, at most %u datagrams; mem transport; devices: "
	       "mux1 %s (offloads, USO %s), mux2 %s (none), floor %s; uplink queue %s\n",
	       b->cfg->device.ul_max_size, b->cfg->device.ul_max_datagrams, mx1->nd.status,
	       mx1->nd.uso ? "yes" : "no", mx2->nd.status, floor.status, queue);
	printf("per core = packets / CPU time of the reading phase alone (the sender runs in "
	       "its own phase\n  of the same thread and is not counted): the rate one core "
	       "would sustain doing only qmapd's work.\n\n");

	/* ---- (a) plain reads ---- */
	printf("(a) UL plain reads, QMAPv1, one UDP datagram per read\n");
	printf("%6s | %8s %7s | %8s %7s %6s | %8s %7s %6s | %7s\n", "IP", "floor", "", "qmapd",
	       "mux1", "", "qmapd", "mux2", "", "sender");
	printf("%6s | %8s %7s | %8s %7s %6s | %8s %7s %6s | %7s\n", "bytes", "kpps", "ns/pkt",
	       "kpps", "ns/pkt", "ratio", "kpps", "ns/pkt", "ratio", "ns/pkt");
	set_version(b, QMAP_V1);
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
		size_t len = sizes[s];
		struct path *paths[3] = { &pf, &p1, &p2 };
		struct totals tot[3] = {};
		double v[3][MAX_RUNS], snd[MAX_RUNS];

		for (int i = 0; i < 3; i++) /* warm up caches, routes, the loop */
			run(b, paths[i], len, false, packets / 10, batch, &(struct totals){});
		for (unsigned k = 0; k < runs; k++)
			for (int i = 0; i < 3; i++) {
				struct measure me =
					run(b, paths[i], len, false, packets, batch, &tot[i]);
				v[i][k] = me.qmapd_ns;
				if (i == 1)
					snd[k] = me.sender_ns;
			}
		double f = bench_median(v[0], runs), q1 = bench_median(v[1], runs),
		       q2 = bench_median(v[2], runs);
		printf("%6zu | %8.0f %7.1f | %8.0f %7.1f %5.2fx | %8.0f %7.1f %5.2fx | %7.1f\n",
		       len, 1e6 / f, f, 1e6 / q1, q1, q1 / f, 1e6 / q2, q2, q2 / f,
		       bench_median(snd, runs));
		for (int i = 0; i < 3; i++)
			printf("%6s   %s: sent %llu, read %llu: %s\n", "",
			       i == 0	? "floor"
			       : i == 1 ? "mux1 "
					: "mux2 ",
			       (unsigned long long)tot[i].sent, (unsigned long long)tot[i].read,
			       check(&tot[i], i > 0, why, sizeof(why)));
		printf("RESULT ul_plain_%zu_floor_kpps %.1f\nRESULT ul_plain_%zu_mux1_kpps %.1f\n"
		       "RESULT ul_plain_%zu_mux2_kpps %.1f\nRESULT ul_plain_%zu_mux1_ratio %.3f\n"
		       "RESULT ul_plain_%zu_mux2_ratio %.3f\n"
		       "RESULT ul_plain_%zu_loss %llu\n",
		       len, 1e6 / f, len, 1e6 / q1, len, 1e6 / q2, len, q1 / f, len, q2 / f, len,
		       (unsigned long long)(tot[1].sent - tot[1].read + tot[2].sent - tot[2].read +
					    tot[0].sent - tot[0].read));
	}
	printf("ratio = qmapd ns per packet / floor ns per packet (one read() per packet); "
	       "target >= 400 kpps per core\n\n");

	/* ---- (b) UDP GSO ---- */
	printf("(b) UL TSO/USO: UDP_SEGMENT sends of %u x %u B payload (%u-byte IP segments)\n",
	       GSO_SEGS, GSO_SEG, UDP_SEGMENTS);
	struct {
		const char *label;
		struct path *p;
		enum qmap_version v;
	} sc[] = {
		{ "mux1 USO, QMAPv1 (gso.c, sw csum)", &p1, QMAP_V1 },
		{ "mux1 USO, QMAPv5 (gso.c, csum offl.)", &p1, QMAP_V5 },
		{ "mux2 no offloads, QMAPv1", &p2, QMAP_V1 },
	};
	struct totals tot[ARRAY_SIZE(sc)] = {};
	double v[ARRAY_SIZE(sc)][MAX_RUNS], snd[ARRAY_SIZE(sc)][MAX_RUNS];
	for (size_t i = 0; i < ARRAY_SIZE(sc); i++) {
		set_version(b, sc[i].v);
		run(b, sc[i].p, 0, true, packets / 10, batch, &(struct totals){});
	}
	for (unsigned k = 0; k < runs; k++)
		for (size_t i = 0; i < ARRAY_SIZE(sc); i++) {
			set_version(b, sc[i].v);
			struct measure me = run(b, sc[i].p, 0, true, packets, batch, &tot[i]);
			v[i][k] = me.qmapd_ns;
			snd[i][k] = me.sender_ns;
		}
	set_version(b, QMAP_V1);
	printf("%-38s | %9s %8s %7s | %9s | %s\n", "path", "qmapd", "", "", "sender", "");
	printf("%-38s | %9s %8s %7s | %9s | %s\n", "", "ns/seg", "Gbit/s", "vs mux2", "ns/seg",
	       "counts");
	double base = bench_median(v[2], runs);
	double med[ARRAY_SIZE(sc)];
	for (size_t i = 0; i < ARRAY_SIZE(sc); i++) {
		double q = bench_median(v[i], runs);
		med[i] = q;
		printf("%-38s | %9.1f %8.2f %6.2fx | %9.1f | sent %llu, read %llu (gso segments "
		       "%llu): %s\n",
		       sc[i].label, q, UDP_SEGMENTS * 8 / q, q / base, bench_median(snd[i], runs),
		       (unsigned long long)tot[i].sent, (unsigned long long)tot[i].read,
		       (unsigned long long)tot[i].gso_segments,
		       check(&tot[i], true, why, sizeof(why)));
	}
	printf("target <= 400 ns per segment of qmapd's CPU; Gbit/s = IP bits per ns of qmapd "
	       "CPU (one core)\n");
	printf("RESULT ul_tso_v1_ns %.1f\nRESULT ul_tso_v5_ns %.1f\nRESULT ul_tso_nooffload_ns "
	       "%.1f\nRESULT ul_tso_uso_segments %llu\n",
	       med[0], med[1], med[2],
	       (unsigned long long)(tot[0].gso_segments + tot[1].gso_segments));
	uint64_t loss = 0;
	for (size_t i = 0; i < ARRAY_SIZE(sc); i++)
		loss += tot[i].sent - tot[i].read;
	printf("RESULT ul_tso_loss %llu\n", (unsigned long long)loss);
	/* How many packets took the queued path (one copy more) instead of going straight in. */
	for (unsigned id = 1; id <= 2; id++)
		if (b->dp->mux[id]->ulq)
			printf("RESULT ul_mux%u_queued_packets %llu of %llu\n", id,
			       (unsigned long long)b->dp->mux[id]->ulq->stats.enqueued,
			       (unsigned long long)b->dp->mux[id]->stats.tx_packets);

	close(pf.sock);
	close(pf.sock_gso);
	close(p1.sock);
	close(p1.sock_gso);
	close(p2.sock);
	close(p2.sock_gso);
	netdev_close(&floor);
	datapath_free(b->dp);
	rtnl_close(rtnl);
	b->cfg = config_free(b->cfg);
	free(b);
	return 0;
}
