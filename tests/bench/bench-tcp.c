/* SPDX-License-Identifier: MIT */
/*
 * Downlink bulk TCP with GRO, per qmapd core: a real kernel TCP connection through qmapd's real
 * datapath, with only qmapd's work charged.
 *
 * Three network namespaces of this process, anonymous (held by fds, so they vanish with the
 * process whatever way it ends):
 *   S  the sender: a TCP socket whose route to the receivers goes through "snd", a TUN device
 *      of this program with IFF_VNET_HDR and TSO offloads: the modem's network side. Its
 *      return path is the veth pair vs (S) - vq (Q).
 *   Q  qmapd's namespace: the mux device (created by qmapd's datapath, virtio-net header, GRO,
 *      headroom as configured) and the local receiver; forwards to F over vqf - vf.
 *   F  the far end of the forwarded case.
 * One thread, pinned to CPU 0, plays the modem and qmapd in alternating phases:
 *   modem (not timed): read TSO super-packets (up to 64 KB) from snd, cut them into MSS-sized
 *      segments with gso.c straight into QMAPv5 aggregates (dl max size, checksum-valid bit
 *      set, as a QMAPv5 modem does), until a batch of them is complete or snd is empty. The
 *      aggregates are built in the mem transport's receive ring, so the replay copies nothing,
 *      as a DMA costs the host's CPU nothing; but they are then in CPU 0's cache, which a DMA
 *      would not leave them in: optimistic by those cache misses;
 *   qmapd (timed with the thread's CPU clock): hand the batch to the datapath on the `mem`
 *      transport as one completion of several transfers (transport_mem_replay_batch), which
 *      deaggregates, merges (GRO) and writes super-packets into the mux device: the kernel's
 *      receive path (IP, then TCP to the socket or forwarding to the veth) runs in that write.
 * The sender (send() of a large buffer in a loop) and the receivers (recv() into a large
 * buffer) are threads pinned to CPU 1. ACKs go back asymmetrically over the veth pairs, not
 * through qmapd: qmapd's uplink cost for them is NOT included. Every veth end steers its
 * receive work to CPU 1 (RPS), so the far end's and the sender's TCP never run on CPU 0.
 *
 * Variants, interleaved in every run: local socket / forwarded to F; RPS on the mux device
 * off (the receive path runs in qmapd's write, charged to qmapd) / on (rx-0 rps_cpus = CPU 1,
 * as phones do for rmnet). Floor, as a reference in the same run: the same super-packets from
 * snd written straight into a plain TUN with IFF_VNET_HDR, one write each (no QMAP, no GRO),
 * timed the same way.
 *
 * Per core = bytes received by the receiving socket / CPU time of the timed phases (softirq
 * work run inside the writes counts in it unless the kernel has CONFIG_IRQ_TIME_ACCOUNTING,
 * which the team's machine has not). Each run
 * stops the sender and drains: the bytes sent must all have arrived (checked), qmapd must have
 * dropped nothing and parsed no malformed frame. Needs root.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench-util.h"
#include "config.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "gso.h"
#include "log.h"
#include "netdev.h"
#include "qmap.h"
#include "rtnl.h"
#include "transport-mem.h"

#define MAX_RUNS    15
#define MUX_ID	    1
#define MUX_IF	    "btqmap1"
#define FLOOR_IF    "btfloor"
#define PORT	    5201
#define CHUNK	    (1 << 20)	  /* bytes per send() and per recv() */
#define READ_SIZE   (65536 + 256) /* a virtio-net header and a 64 KB super-packet */
#define MAX_AGGS    (64 + 8)	  /* a batch, and what one super-packet adds past it */
#define MAX_BATCH   64		  /* aggregates per completion (<= the receive ring) */
#define FLOOR_BATCH 4		  /* super-packets per timed floor phase (~ one qmapd batch) */
#define DRAIN_NS    (10 * 1000000000.0) /* a run's tail must arrive within this */

/* Addresses: documentation ranges only, inside the namespaces made here. */
#define S_ADDR	    "198.51.100.1" /* the sender, on vs */
#define Q_VETH_ADDR "198.51.100.2"
#define LOCAL_ADDR  "203.0.113.1"   /* on the mux device */
#define LFLOOR_ADDR "203.0.113.129" /* on the floor device */
#define QF_ADDR	    "192.0.2.1"
#define FWD_ADDR    "192.0.2.2" /* on vf, reached through the mux device */
#define FFLOOR_ADDR "192.0.2.3" /* on vf, reached through the floor device */

enum { LOCAL, FWD };
enum { QMAPD, FLOOR };

/* One TCP connection S -> receiver, with its sender and receiver threads. */
struct conn {
	const char *label;
	int where; /* LOCAL, FWD */
	int path;  /* QMAPD, FLOOR */
	const char *dst;
	int snd_sock, rcv_sock;
	pthread_t snd_thr, rcv_thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool active, busy, quit; /* under lock */
	_Atomic uint64_t sent, received;
};

struct bench {
	struct ev_loop *loop;
	struct datapath *dp;
	struct config *cfg;
	struct mux *mux;
	struct netdev snd, floor;
	int ns_s, ns_q, ns_f;
	unsigned batch;
	uint32_t dl_max;
	size_t hdr; /* QMAPv5 headers in front of each frame */

	/* Aggregates being built: [0, n_full) complete, [n_full] filling. */
	uint8_t *agg[MAX_AGGS];
	size_t agg_len[MAX_AGGS];
	unsigned n_full;
	uint8_t *rd;
	/* Floor super-packets read, written in one timed phase. */
	uint8_t *fl[FLOOR_BATCH];
	size_t fl_len[FLOOR_BATCH];
	unsigned n_fl;

	/* Accumulated by the phases of the current run. */
	double cpu_ns;
	uint64_t floor_writes, floor_segs, floor_drops, not_ipv4, bad_gso;
};

static void die(const char *what)
{
	fprintf(stderr, "qmapd-bench-tcp: %s\n", what);
	exit(1);
}

/* ---- the modem side (not timed) ---------------------------------------------------------- */

/* Cut one super-packet into the aggregates, QMAPv5 frames with the checksum-valid bit. */
static void modem_segment(struct bench *b, const struct virtio_net_hdr *vh, const uint8_t *pkt,
			  size_t len)
{
	struct gso_packet p;
	struct gso_segment segs[64];
	uint32_t first = 0;

	if (gso_parse(vh, 0, pkt, len, &p) < 0) {
		b->bad_gso++;
		return;
	}
	while (first < p.n_segs) {
		if (b->n_full >= MAX_AGGS - 1)
			die("aggregate array overflow");
		uint8_t *a = b->agg[b->n_full];
		size_t *al = &b->agg_len[b->n_full];
		int n = gso_write(&p, first, 0, a + *al, b->dl_max - *al, b->hdr, segs,
				  ARRAY_SIZE(segs));
		if (n == -ENOBUFS && *al > 0) {
			b->n_full++;
			continue;
		}
		if (n < 0)
			die("gso_write failed");
		for (int i = 0; i < n; i++)
			qmap_write_data_header(a + *al + segs[i].offset, QMAP_V5, MUX_ID,
					       segs[i].len, 0, true);
		*al += segs[n - 1].offset + b->hdr + segs[n - 1].len;
		first += n;
	}
}

static bool is_floor_dst(const uint8_t *ip)
{
	struct in_addr l, f;

	inet_pton(AF_INET, LFLOOR_ADDR, &l);
	inet_pton(AF_INET, FFLOOR_ADDR, &f);
	return memcmp(ip + 16, &l, 4) == 0 || memcmp(ip + 16, &f, 4) == 0;
}

/* ---- the timed phases -------------------------------------------------------------------- */

/*
 * The aggregates are built in the transport's receive ring, where the next transfers land,
 * so the replay copies nothing: a modem's DMA costs the host's CPU nothing either.
 */
static void agg_map_ring(struct bench *b)
{
	for (unsigned i = 0; i < MAX_AGGS; i++)
		if (!(b->agg[i] = transport_mem_rx_buf(b->dp->transport, i)))
			die("receive ring smaller than the aggregates in use");
}

/* qmapd: n aggregates completed together, then GRO's flush writes the super-packets. */
static void qmapd_phase(struct bench *b, unsigned n)
{
	double c0 = bench_thread_cpu_ns();
	int r = transport_mem_replay_batch(b->dp->transport, (const uint8_t *const *)b->agg,
					   b->agg_len, n);
	b->cpu_ns += bench_thread_cpu_ns() - c0;
	if (r < 0)
		die("transport_mem_replay_batch failed");

	/* The ring moved on by n: what was built past the batch is now at its front. */
	unsigned used = b->n_full + (b->agg_len[b->n_full] > 0);
	memmove(b->agg_len, b->agg_len + n, (MAX_AGGS - n) * sizeof(b->agg_len[0]));
	for (unsigned i = used - n; i < MAX_AGGS; i++)
		b->agg_len[i] = 0;
	b->n_full = b->n_full >= n ? b->n_full - n : 0;
	agg_map_ring(b);
}

/* The floor: each super-packet as read from snd, one write() into a plain TUN. */
static void floor_phase(struct bench *b)
{
	ssize_t res[FLOOR_BATCH];
	double c0 = bench_thread_cpu_ns();
	for (unsigned i = 0; i < b->n_fl; i++)
		res[i] = write(b->floor.fd, b->fl[i], b->fl_len[i]);
	b->cpu_ns += bench_thread_cpu_ns() - c0;
	for (unsigned i = 0; i < b->n_fl; i++)
		if (res[i] != (ssize_t)b->fl_len[i])
			b->floor_drops++;
	b->floor_writes += b->n_fl;
	b->n_fl = 0;
}

/*
 * One turn: the modem reads snd until a batch of aggregates is complete (or floor packets
 * are collected) or snd is empty, then the timed phase delivers what is there. With nothing
 * to do, wait for snd up to wait_ms.
 */
static void pump(struct bench *b, int wait_ms)
{
	bool empty = false;

	ev_now_update(b->loop); /* qmapd's loop would have, for headroom's clock */
	while (b->n_full < b->batch && b->n_fl < FLOOR_BATCH) {
		ssize_t n = read(b->snd.fd, b->rd, READ_SIZE);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				die("read from snd failed");
			empty = true;
			break;
		}
		struct virtio_net_hdr vh;
		const uint8_t *ip = b->rd + NETDEV_VNET_HDR_LEN;
		size_t len = (size_t)n - NETDEV_VNET_HDR_LEN;
		if ((size_t)n < NETDEV_VNET_HDR_LEN + 20 || (ip[0] >> 4) != 4) {
			b->not_ipv4++;
			continue;
		}
		memcpy(&vh, b->rd, sizeof(vh));
		if (is_floor_dst(ip)) {
			struct gso_packet p;
			if (gso_parse(&vh, 0, ip, len, &p) < 0) {
				b->bad_gso++;
				continue;
			}
			b->floor_segs += p.n_segs;
			memcpy(b->fl[b->n_fl], b->rd, n);
			b->fl_len[b->n_fl++] = n;
			continue;
		}
		modem_segment(b, &vh, ip, len);
	}
	if (b->n_fl && (empty || b->n_fl == FLOOR_BATCH))
		floor_phase(b);
	unsigned n = b->n_full >= b->batch ? b->batch
		     : empty		   ? b->n_full + (b->agg_len[b->n_full] > 0)
					   : 0;
	if (n)
		qmapd_phase(b, n);
	else if (empty && wait_ms)
		poll(&(struct pollfd){ .fd = b->snd.fd, .events = POLLIN }, 1, wait_ms);
}

/* ---- the peers (threads on CPU 1) -------------------------------------------------------- */

static void *sender_main(void *arg)
{
	struct conn *c = arg;
	uint8_t *buf = calloc(1, CHUNK);

	if (!buf || bench_pin_cpu(1) < 0)
		die("sender: no memory or cannot pin to CPU 1");
	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (!c->active && !c->quit)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->quit) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		c->busy = true;
		pthread_mutex_unlock(&c->lock);
		ssize_t n = send(c->snd_sock, buf, CHUNK, MSG_NOSIGNAL);
		if (n > 0)
			c->sent += n;
		pthread_mutex_lock(&c->lock);
		c->busy = false;
		pthread_mutex_unlock(&c->lock);
		if (n < 0 && errno != EINTR)
			die("sender: send failed");
	}
	free(buf);
	return NULL;
}

static void *receiver_main(void *arg)
{
	struct conn *c = arg;
	uint8_t *buf = malloc(CHUNK);

	if (!buf || bench_pin_cpu(1) < 0)
		die("receiver: no memory or cannot pin to CPU 1");
	for (;;) {
		ssize_t n = recv(c->rcv_sock, buf, CHUNK, 0);
		if (n <= 0)
			break;
		c->received += n;
	}
	free(buf);
	return NULL;
}

static bool conn_busy(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	bool busy = c->busy;
	pthread_mutex_unlock(&c->lock);
	return busy;
}

static void conn_set_active(struct conn *c, bool on)
{
	pthread_mutex_lock(&c->lock);
	c->active = on;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void enter_ns(int fd)
{
	if (setns(fd, CLONE_NEWNET) < 0)
		die("setns failed");
}

/* Connect S -> c->dst through snd, turning the pump for the handshake, and start the threads. */
static void conn_open(struct bench *b, struct conn *c, int ns_rx)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	int one = 1;

	inet_pton(AF_INET, c->dst, &sa.sin_addr);
	enter_ns(ns_rx);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0)
		die("cannot listen");
	enter_ns(b->ns_s);
	c->snd_sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->snd_sock < 0 ||
	    (connect(c->snd_sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS))
		die("cannot connect");
	enter_ns(b->ns_q);

	double t0 = bench_now_ns();
	c->rcv_sock = -1;
	while (c->rcv_sock < 0) {
		pump(b, 1);
		c->rcv_sock = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (bench_now_ns() - t0 > DRAIN_NS)
			die("no connection through qmapd (handshake lost)");
	}
	struct pollfd pfd = { .fd = c->snd_sock, .events = POLLOUT };
	while (poll(&pfd, 1, 1) == 0)
		pump(b, 0);
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(c->snd_sock, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err)
		die("connect failed");
	close(lfd);
	/* Blocking from here on: the threads wait in send() and recv(). */
	fcntl(c->snd_sock, F_SETFL, 0);
	fcntl(c->rcv_sock, F_SETFL, 0);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->snd_thr, NULL, sender_main, c) != 0 ||
	    pthread_create(&c->rcv_thr, NULL, receiver_main, c) != 0)
		die("cannot start threads");
}

static void conn_close(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->quit = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->snd_thr, NULL);
	shutdown(c->rcv_sock, SHUT_RDWR);
	pthread_join(c->rcv_thr, NULL);
	close(c->snd_sock);
	close(c->rcv_sock);
}

static uint32_t tcp_retrans(int sock)
{
	struct tcp_info ti = {};
	socklen_t len = sizeof(ti);

	if (getsockopt(sock, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return 0;
	return ti.tcpi_total_retrans;
}

/* ---- runs ------------------------------------------------------------------------------ */

struct run {
	double per_core_gbit, wall_gbit, share, segs_per_write;
	uint64_t bytes, writes, segs, drops, malformed, retrans;
	bool complete; /* every byte sent arrived */
};

static uint64_t mux_drops(const struct mux *m)
{
	return m->stats.rx_dropped_queue_full + m->stats.rx_dropped_write_error;
}

static uint64_t dp_malformed(const struct datapath *dp)
{
	uint64_t n = dp->stats.dl_unknown_mux;
	for (unsigned i = 0; i < _QMAP_ERR_MAX; i++)
		n += dp->stats.dl_malformed[i];
	return n;
}

/* Send for `secs` seconds (or `bytes`), then stop the sender and drain. */
static struct run run_once(struct bench *b, struct conn *c, double secs, uint64_t bytes)
{
	struct run r = {};
	struct mux_stats m0 = b->mux->stats;
	uint64_t mal0 = dp_malformed(b->dp), rx0 = c->received, tx0 = c->sent;
	uint32_t re0 = tcp_retrans(c->snd_sock);

	if (rx0 != tx0)
		die("a run started with bytes in flight");
	b->cpu_ns = 0;
	b->floor_writes = b->floor_segs = b->floor_drops = 0;
	double t0 = bench_now_ns();
	conn_set_active(c, true);
	while (bytes ? c->received - rx0 < bytes : bench_now_ns() - t0 < secs * 1e9)
		pump(b, 1);
	conn_set_active(c, false);
	double td = bench_now_ns();
	while ((conn_busy(c) || c->received != c->sent || b->n_full || b->agg_len[0] || b->n_fl) &&
	       bench_now_ns() - td < DRAIN_NS)
		pump(b, 1);
	double wall = bench_now_ns() - t0;

	r.bytes = c->received - rx0;
	r.complete = c->received == c->sent && r.bytes == c->sent - tx0;
	r.retrans = tcp_retrans(c->snd_sock) - re0;
	if (c->path == QMAPD) {
		const struct mux_stats *m1 = &b->mux->stats;
		r.writes = m1->rx_writes - m0.rx_writes;
		r.segs = m1->rx_packets - m0.rx_packets;
		r.drops =
			mux_drops(b->mux) - (m0.rx_dropped_queue_full + m0.rx_dropped_write_error);
		r.malformed = dp_malformed(b->dp) - mal0;
	} else {
		r.writes = b->floor_writes;
		r.segs = b->floor_segs;
		r.drops = b->floor_drops;
	}
	r.malformed += b->bad_gso;
	b->bad_gso = 0;
	r.per_core_gbit = r.bytes * 8 / b->cpu_ns;
	r.wall_gbit = r.bytes * 8 / wall;
	r.share = b->cpu_ns / wall;
	r.segs_per_write = r.writes ? (double)r.segs / r.writes : 0;
	return r;
}

static void set_rps(struct bench *b, bool on)
{
	char path[128];
	const char *mask = on ? "2" : "0";

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-0/rps_cpus", MUX_IF);
	if (bench_netns_sysfs_write(b->ns_q, path, mask) < 0)
		die("cannot set rps_cpus of the mux device");
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-0/rps_cpus", FLOOR_IF);
	if (bench_netns_sysfs_write(b->ns_q, path, mask) < 0)
		die("cannot set rps_cpus of the floor device");
}

/* lo up, no IPv6 (nothing unasked for through the devices), no reverse-path filter. */
static void ns_basics(bool forward)
{
	bench_write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	bench_write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	bench_write_sysctl("/proc/sys/net/ipv4/conf/all/rp_filter", "0");
	bench_write_sysctl("/proc/sys/net/ipv4/conf/default/rp_filter", "0");
	if (forward)
		bench_write_sysctl("/proc/sys/net/ipv4/ip_forward", "1");
	if (bench_sh("ip link set lo up") < 0)
		die("cannot set up loopback");
}

static int new_netns(void)
{
	if (unshare(CLONE_NEWNET) < 0)
		die("unshare(CLONE_NEWNET) failed");
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open /proc/self/ns/net");
	return fd;
}

/* Steer a veth end's receive work to CPU 1: the far end's and the sender's TCP stay off CPU 0. */
static void veth_rps(int ns, const char *dev)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-0/rps_cpus", dev);
	if (bench_netns_sysfs_write(ns, path, "2") < 0)
		die("cannot set rps_cpus of a veth");
}

static void setup_namespaces(struct bench *b, struct rtnl **ret_rtnl_q)
{
	struct rtnl *rtnl_s = NULL;
	pid_t pid = getpid();

	b->ns_s = new_netns();
	ns_basics(false);
	b->ns_f = new_netns();
	ns_basics(false);
	b->ns_q = new_netns();
	ns_basics(true);

	/* Q: the veth pairs to S and F. */
	if (bench_sh("ip link add dev vq type veth peer name vs netns /proc/%d/fd/%d", pid,
		     b->ns_s) < 0 ||
	    bench_sh("ip link add dev vqf type veth peer name vf netns /proc/%d/fd/%d", pid,
		     b->ns_f) < 0 ||
	    bench_sh("ip addr add %s/24 dev vq && ip link set dev vq up", Q_VETH_ADDR) < 0 ||
	    bench_sh("ip addr add %s/24 dev vqf && ip link set dev vqf up", QF_ADDR) < 0)
		die("cannot set up the veth pairs");
	veth_rps(b->ns_q, "vq");
	veth_rps(b->ns_q, "vqf");

	/* F: both receivers' addresses; back to S through Q. */
	enter_ns(b->ns_f);
	if (bench_sh(
		    "ip addr add %s/24 dev vf && ip addr add %s/24 dev vf && ip link set dev vf up "
		    "&& ip route add 198.51.100.0/24 via %s",
		    FWD_ADDR, FFLOOR_ADDR, QF_ADDR) < 0)
		die("cannot set up namespace F");
	veth_rps(b->ns_f, "vf");

	/* S: the sender; everything towards Q and F leaves through snd (the modem). */
	enter_ns(b->ns_s);
	if (rtnl_open(&rtnl_s) < 0 ||
	    netdev_create(rtnl_s, "snd", CONFIG_HEADROOM_OFF, 1500, false, true, &b->snd) < 0 ||
	    netdev_set_carrier(&b->snd, true) < 0)
		die("cannot create the snd TUN device");
	rtnl_close(rtnl_s);
	if (bench_sh("ip addr add %s/24 dev vs && ip link set dev vs up", S_ADDR) < 0 ||
	    bench_sh("ip route add 203.0.113.0/24 dev snd src %s", S_ADDR) < 0 ||
	    bench_sh("ip route add 192.0.2.0/24 dev snd src %s", S_ADDR) < 0)
		die("cannot set up namespace S");
	veth_rps(b->ns_s, "vs");
	enter_ns(b->ns_q);

	struct rtnl *rtnl = NULL;
	struct config_prefix floor_addr;
	config_parse_prefix(LFLOOR_ADDR "/32", &floor_addr);
	if (rtnl_open(&rtnl) < 0 ||
	    netdev_create(rtnl, FLOOR_IF, CONFIG_HEADROOM_OFF, 1500, false, true, &b->floor) < 0 ||
	    netdev_set_carrier(&b->floor, true) < 0 ||
	    rtnl_addr_add(rtnl, b->floor.ifindex, &floor_addr) < 0)
		die("cannot create the floor TUN device");
	*ret_rtnl_q = rtnl;
}

static void setup_qmapd(struct bench *b, struct rtnl *rtnl, enum config_headroom headroom)
{
	b->cfg = calloc(1, sizeof(*b->cfg));
	if (!b->cfg)
		die("out of memory");
	config_init_defaults(b->cfg);
	snprintf(b->cfg->device.device, sizeof(b->cfg->device.device), "mem:");
	b->cfg->device.qmap_version = QMAP_V5;
	b->cfg->device.rx_transfers = MAX_AGGS; /* a batch and what was built past it */
	b->dl_max = b->cfg->device.dl_max_size;
	b->hdr = qmap_ul_header_size(QMAP_V5);

	struct config_mux mux_cfg, *m = &mux_cfg;
	config_mux_init_defaults(m, MUX_ID);
	m->present = true;
	m->id = MUX_ID;
	snprintf(m->interface, sizeof(m->interface), MUX_IF);
	m->mtu = 1500;
	m->headroom = headroom;
	config_parse_prefix(LOCAL_ADDR "/32", &m->ipv4_address);
	m->n_routes = 0; /* back to S over the veth: ACKs do not go through qmapd */

	b->loop = ev_default_loop(0);
	if (datapath_new_with_backend(b->loop, rtnl, &b->cfg->device, &transport_mem_ops, NULL,
				      &b->dp) < 0 ||
	    datapath_mux_add(b->dp, m, false, true, &b->mux) < 0 || datapath_start(b->dp) < 0)
		die("cannot set up the qmapd datapath");
	if (!b->mux->gro)
		die("the mux device has no virtio-net header (GRO off)");
	agg_map_ring(b);
	for (unsigned i = 0; i < FLOOR_BATCH; i++)
		if (!(b->fl[i] = malloc(READ_SIZE)))
			die("out of memory");
	if (!(b->rd = malloc(READ_SIZE)))
		die("out of memory");
}

static const char *const where_name[] = { "local", "fwd" };
static const char *const path_name[] = { "qmapd", "floor" };

int main(int argc, char **argv)
{
	unsigned runs = 5, batch = 16;
	double secs = 2;
	uint64_t bytes = 0;
	enum config_headroom headroom = CONFIG_HEADROOM_AUTO;
	struct bench *b = calloc(1, sizeof(*b));
	struct rtnl *rtnl = NULL;
	int c;

	while ((c = getopt(argc, argv, "t:n:r:b:H:h")) >= 0) {
		switch (c) {
		case 't':
			secs = atof(optarg);
			break;
		case 'n':
			bytes = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			runs = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			batch = strtoul(optarg, NULL, 10);
			break;
		case 'H':
			if (strcmp(optarg, "off") == 0)
				headroom = CONFIG_HEADROOM_OFF;
			else if (strcmp(optarg, "xdp") == 0)
				headroom = CONFIG_HEADROOM_XDP;
			else if (strcmp(optarg, "auto") == 0)
				headroom = CONFIG_HEADROOM_AUTO;
			else {
				fprintf(stderr, "qmapd-bench-tcp: invalid headroom '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: qmapd-bench-tcp [-t SECONDS | -n BYTES] [-r RUNS] [-b "
			       "BATCH] "
			       "[-H off|auto|xdp]\n"
			       "DL bulk TCP with GRO through qmapd's datapath: Gbit/s per qmapd "
			       "core,\n"
			       "into a local socket and forwarded, RPS off/on, against a raw TUN "
			       "floor.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!b || runs < 1 || runs > MAX_RUNS || batch < 1 || batch > MAX_BATCH || secs <= 0) {
		fprintf(stderr, "qmapd-bench-tcp: runs 1..%d, batch 1..%d, seconds > 0\n", MAX_RUNS,
			MAX_BATCH);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "qmapd-bench-tcp: needs root (network namespaces, TUN/TAP)\n");
		return 77;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "qmapd-bench-tcp: needs 2 CPUs (qmapd on 0, the peers on 1)\n");
		return 77;
	}
	if (bench_pin_cpu(0) < 0)
		die("cannot pin to CPU 0");
	log_set_max_level(LOG_WARNING);
	b->batch = batch;
	setup_namespaces(b, &rtnl);
	setup_qmapd(b, rtnl, headroom);

	struct conn conns[4] = {
		{ .label = "local qmapd", .where = LOCAL, .path = QMAPD, .dst = LOCAL_ADDR },
		{ .label = "local floor", .where = LOCAL, .path = FLOOR, .dst = LFLOOR_ADDR },
		{ .label = "fwd qmapd", .where = FWD, .path = QMAPD, .dst = FWD_ADDR },
		{ .label = "fwd floor", .where = FWD, .path = FLOOR, .dst = FFLOOR_ADDR },
	};
	for (unsigned i = 0; i < ARRAY_SIZE(conns); i++)
		conn_open(b, &conns[i], conns[i].where == LOCAL ? b->ns_q : b->ns_f);

	/* Warm up every path (and let headroom = auto see bulk traffic). */
	for (int rps = 0; rps < 2; rps++) {
		set_rps(b, rps);
		for (unsigned i = 0; i < ARRAY_SIZE(conns); i++)
			run_once(b, &conns[i], 0.3, 0);
	}

	printf("qmapd-bench-tcp: %u runs (median) of %s per scenario; QMAPv5 aggregates of %u "
	       "bytes, %u per completion; mux device %s, writes %s\n",
	       runs, bytes ? "a byte count" : "a time", b->dl_max, batch, b->mux->nd.status,
	       b->dp->uring ? "through io_uring" : "one writev each");
	if (bytes)
		printf("  %llu bytes per run\n", (unsigned long long)bytes);
	else
		printf("  %.1f s per run\n", secs);
	printf("qmapd on CPU 0 (timed: datapath + GRO flush + the kernel's receive path in its "
	       "writes); sender and receivers on CPU 1;\nACKs return over veth, not through "
	       "qmapd (uplink cost for them not included). floor = one write() per TSO "
	       "super-packet into a plain TUN.\n\n");

	struct run res[2][4][MAX_RUNS];
	for (unsigned k = 0; k < runs; k++)
		for (int rps = 0; rps < 2; rps++) {
			set_rps(b, rps);
			for (unsigned i = 0; i < ARRAY_SIZE(conns); i++)
				res[rps][i][k] = run_once(b, &conns[i], secs, bytes);
		}

	printf("%-6s %-5s %-5s | %9s %8s %6s | %7s %7s | %9s %7s %5s %5s | %s\n", "", "", "",
	       "per core", "wall", "CPU", "segs/", "vs", "delivered", "retrans", "drops", "malf",
	       "");
	printf("%-6s %-5s %-5s | %9s %8s %6s | %7s %7s | %9s %7s %5s %5s | %s\n", "case", "RPS",
	       "path", "Gbit/s", "Gbit/s", "share", "write", "floor", "MB", "(all)", "(all)",
	       "(all)", "check");
	/* Medians per [rps][conn]; the RESULT lines follow the table. */
	struct summary {
		double per_core, wall, share, segs_per_write;
	} sum[2][4];
	unsigned failures = 0;
	for (int rps = 0; rps < 2; rps++)
		for (unsigned j = 0; j < ARRAY_SIZE(conns); j++) {
			double v[4][MAX_RUNS];
			for (unsigned k = 0; k < runs; k++) {
				const struct run *r = &res[rps][j][k];
				v[0][k] = r->per_core_gbit;
				v[1][k] = r->wall_gbit;
				v[2][k] = r->share;
				v[3][k] = r->segs_per_write;
			}
			sum[rps][j] = (struct summary){ bench_median(v[0], runs),
							bench_median(v[1], runs),
							bench_median(v[2], runs),
							bench_median(v[3], runs) };
		}
	for (unsigned i = 0; i < ARRAY_SIZE(conns); i += 2)
		for (int rps = 0; rps < 2; rps++)
			for (unsigned j = i; j < i + 2; j++) {
				const struct conn *cn = &conns[j];
				const struct summary *sm = &sum[rps][j];
				uint64_t mb = 0, retrans = 0, drops = 0, malformed = 0;
				unsigned incomplete = 0;
				for (unsigned k = 0; k < runs; k++) {
					const struct run *r = &res[rps][j][k];
					mb += r->bytes;
					retrans += r->retrans;
					drops += r->drops;
					malformed += r->malformed;
					incomplete += !r->complete;
				}
				bool ok = !incomplete && !drops && !malformed;
				failures += !ok;
				char check[96] = "ok";
				if (!ok)
					snprintf(check, sizeof(check),
						 "FAIL: %u runs incomplete, %llu drops, %llu "
						 "malformed",
						 incomplete, (unsigned long long)drops,
						 (unsigned long long)malformed);
				printf("%-6s %-5s %-5s | %9.2f %8.2f %6.3f | %7.1f %6.2fx | %9.0f "
				       "%7llu "
				       "%5llu %5llu | %s\n",
				       where_name[cn->where], rps ? "on" : "off",
				       path_name[cn->path], sm->per_core, sm->wall, sm->share,
				       sm->segs_per_write, sm->per_core / sum[rps][i + 1].per_core,
				       mb / 1e6, (unsigned long long)retrans,
				       (unsigned long long)drops, (unsigned long long)malformed,
				       check);
			}
	printf("per core = bytes received / qmapd's CPU time (thread CPU clock, user + system, of "
	       "the timed phases);\nwall = bytes / elapsed time; CPU share = timed CPU / elapsed "
	       "time; vs floor = per core / the floor's per core in the same runs.\n"
	       "User/system split not given: with tick-based CPU accounting it cannot be separated "
	       "per phase.\nmux device %s; GRO writes %llu, segments merged %llu; transport "
	       "in_batch_max %llu\n",
	       b->mux->nd.status, (unsigned long long)b->mux->gro->stats.writes,
	       (unsigned long long)b->mux->gro->stats.segments_merged,
	       (unsigned long long)b->dp->transport->stats.in_batch_max);
	for (unsigned j = 0; j < ARRAY_SIZE(conns); j++)
		for (int rps = 0; rps < 2; rps++) {
			const struct summary *sm = &sum[rps][j];
			const char *w = where_name[conns[j].where], *p = path_name[conns[j].path];
			const char *rs = rps ? "on" : "off";
			printf("RESULT tcp_%s_rps%s_%s_per_core_gbit %.2f\n", w, rs, p,
			       sm->per_core);
			printf("RESULT tcp_%s_rps%s_%s_gbit %.2f\n", w, rs, p, sm->wall);
			printf("RESULT tcp_%s_rps%s_%s_share %.3f\n", w, rs, p, sm->share);
			printf("RESULT tcp_%s_rps%s_%s_segs_per_write %.1f\n", w, rs, p,
			       sm->segs_per_write);
		}
	printf("RESULT tcp_check_failures %u\n", failures);

	for (unsigned i = 0; i < ARRAY_SIZE(conns); i++)
		conn_close(&conns[i]);
	datapath_free(b->dp);
	netdev_close(&b->floor);
	netdev_close(&b->snd);
	rtnl_close(rtnl);
	for (unsigned i = 0; i < FLOOR_BATCH; i++)
		free(b->fl[i]);
	free(b->rd);
	free(b->cfg);
	free(b);
	return failures ? 1 : 0;
}
