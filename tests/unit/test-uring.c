/* SPDX-License-Identifier: MIT */
/*
 * Downlink writes against the real kernel. Batched (uring.c through the datapath): a numbered
 * UDP sequence written through io_uring arrives in order at a local socket, on the per-packet
 * path and through GRO (a flow per packet, so each is written alone); a full device queue
 * (EAGAIN) is counted as rx_dropped_queue_full, batched or not; and where io_uring_setup is
 * refused (a seccomp filter here, as a sandbox or kernel.io_uring_disabled would) the datapath
 * falls back to plain writes that deliver the same. Also: each mux's measured choice between
 * the two (write-mode.h), and GRO skipped while nothing merges (gro-auto.h), keep the order. Plain:
 * a packet written with its device header put in front of it in the receive buffer (one
 * write(), mux_write_in_place()) arrives whole, and the buffer is as it was after the
 * transfer, also where GRO still held a packet whose tail the next write borrowed. Needs root
 * for a TAP in a network namespace of its own; exits 77 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "csum.h"
#include "config.h"
#include "datapath-fixture.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "headroom.h"
#include "log.h"
#include "qmap.h"
#include "test-case.h"
#include "transport-mem.h"
#include "uring.h"

#define SRC_ADDR "198.51.100.1"
#define PORT	 9000
#define PKT_LEN	 64
#define N_PKTS	 150 /* more than URING_SLOTS in one aggregate: a flush when full, too */

static const char *const mux_addr[3] = { NULL, "203.0.113.1", "203.0.113.65" };

/* IPv4/UDP, checksum 0, the sequence number in the payload and a source port per packet. */
static void build_packet(uint8_t *p, const char *dst, uint32_t seq)
{
	memset(p, 0, PKT_LEN);
	p[0] = 0x45;
	p[3] = PKT_LEN;
	p[4] = seq >> 8;
	p[5] = seq & 0xff;
	p[8] = 64;
	p[9] = IPPROTO_UDP;
	inet_pton(AF_INET, SRC_ADDR, p + 12);
	inet_pton(AF_INET, dst, p + 16);
	csum_store(p + 10, (uint16_t)~csum_fold(csum_partial(p, 20, 0)));
	p[20] = 0x80 | (seq >> 8);
	p[21] = seq & 0xff;
	p[22] = PORT >> 8;
	p[23] = PORT & 0xff;
	p[25] = PKT_LEN - 20;
	memcpy(p + 28, &seq, sizeof(seq));
	/* Checked on arrival: UDP checksum 0 would let damaged bytes through. */
	for (unsigned i = 32; i < PKT_LEN; i++)
		p[i] = (uint8_t)(seq * 7 + i);
}

/* One QMAPv1 aggregate of packets first..first+n-1 for mux id. */
static size_t build_aggregate(uint8_t *agg, unsigned id, uint32_t first, unsigned n)
{
	size_t len = 0;
	for (unsigned i = 0; i < n; i++) {
		qmap_write_data_header(agg + len, QMAP_V1, id, PKT_LEN, 0, false);
		build_packet(agg + len + QMAP_HEADER_SIZE, mux_addr[id], first + i);
		len += QMAP_HEADER_SIZE + PKT_LEN;
	}
	return len;
}

static int bind_sink(const char *addr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int size = 4 << 20;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		exit(1);
	}
	return fd;
}

/* Read everything queued; every datagram must carry the next number. Returns how many. */
static unsigned drain_in_order(int fd, uint32_t first)
{
	uint8_t buf[256];
	unsigned n = 0, misordered = 0;
	ssize_t r;

	while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
		uint32_t seq;
		memcpy(&seq, buf, sizeof(seq));
		if (r != PKT_LEN - 28 || seq != first + n)
			misordered++;
		for (unsigned i = 32; r == PKT_LEN - 28 && i < PKT_LEN; i++)
			if (buf[i - 28] != (uint8_t)(seq * 7 + i)) {
				fprintf(stderr, "packet %u: byte %u damaged\n", seq, i);
				misordered++;
				break;
			}
		n++;
	}
	EXPECT_EQ(misordered, 0);
	return n;
}

/* Deliver N_PKTS numbered packets to mux id in one transfer and check they arrive in order. */
static void check_sequence(struct datapath *dp, int sink, unsigned id, uint32_t first)
{
	static uint8_t agg[N_PKTS * (QMAP_HEADER_SIZE + PKT_LEN)];
	struct mux *m = dp->mux[id];
	struct mux_stats before = m->stats;

	size_t len = build_aggregate(agg, id, first, N_PKTS);
	EXPECT_EQ(transport_mem_replay(dp->transport, agg, len), 0);
	EXPECT_EQ(m->stats.rx_writes - before.rx_writes, N_PKTS);
	EXPECT_EQ(m->stats.rx_dropped_queue_full - before.rx_dropped_queue_full, 0);
	EXPECT_EQ(m->stats.rx_dropped_write_error - before.rx_dropped_write_error, 0);
	EXPECT_EQ(drain_in_order(sink, first), N_PKTS);
}

/*
 * A full queue: the mux's fd number made to point at a full non-blocking pipe for a moment
 * (the TAP stays alive through the saved descriptor). Every packet must be counted as a
 * queue-full drop, never waited for.
 */
static void check_eagain(struct datapath *dp, unsigned id)
{
	static uint8_t agg[N_PKTS * (QMAP_HEADER_SIZE + PKT_LEN)];
	struct mux *m = dp->mux[id];
	uint8_t junk[4096] = { 0 };
	int p[2];

	EXPECT_EQ(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	int saved = dup(m->nd.fd);
	EXPECT_GE(saved, 0);
	EXPECT_GE(dup2(p[1], m->nd.fd), 0);

	struct mux_stats before = m->stats;
	size_t len = build_aggregate(agg, id, 0, N_PKTS);
	EXPECT_EQ(transport_mem_replay(dp->transport, agg, len), 0);
	EXPECT_EQ(m->stats.rx_dropped_queue_full - before.rx_dropped_queue_full, N_PKTS);
	EXPECT_EQ(m->stats.rx_dropped_write_error - before.rx_dropped_write_error, 0);
	EXPECT_EQ(m->stats.rx_writes - before.rx_writes, 0);

	EXPECT_GE(dup2(saved, m->nd.fd), 0);
	close(saved);
	close(p[0]);
	close(p[1]);
}

/* io_uring_setup fails with EPERM from now on in this process, as under a sandbox. */
static int refuse_io_uring(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(filter), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

/* Every case has a datapath of its own, in a network namespace of its own. */
static struct dp_fixture fx;
static struct datapath *fx_dp;
static int sink[3] = { -1, -1, -1 };

static void teardown(void)
{
	for (unsigned id = 1; id <= 2; id++) {
		if (sink[id] >= 0)
			close(sink[id]);
		sink[id] = -1;
	}
	fx_dp = datapath_free(fx_dp);
	dp_fixture_close(&fx);
}

/* Mux 1 writes packet by packet (no virtio-net header), mux 2 through GRO; a sink on each. */
TEST_SETUP()
{
	static bool registered;

	if (!registered) {
		atexit(teardown);
		registered = true;
	}
	teardown();
	dp_fixture_init(&fx, "uring");
	struct config_mux *mc = fx.mux;
	for (unsigned id = 1; id <= 2; id++) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "%s/32", mux_addr[id]);
		config_parse_prefix(prefix, &mc[id].ipv4_address);
		dp_fixture_route(&mc[id], "198.51.100.0/24");
	}
	int r = dp_fixture_datapath(&fx, &fx_dp);
	if (r >= 0) {
		fx_dp->offload_devices = false;
		r = datapath_mux_add(fx_dp, &mc[1], false, true, NULL);
		fx_dp->offload_devices = true;
	}
	if (r >= 0)
		r = datapath_mux_add(fx_dp, &mc[2], false, true, NULL);
	if (r < 0 || datapath_start(fx_dp) < 0) {
		fprintf(stderr, "cannot set up the datapath\n");
		exit(1);
	}
	for (unsigned id = 1; id <= 2; id++)
		sink[id] = bind_sink(mux_addr[id]);
}

/* Batched writes on; a build without liburing has none (the case skips). */
static bool batch_on(void)
{
	int r = datapath_set_batch_writes(fx_dp, true);

#ifndef QMAPD_HAVE_LIBURING
	if (r == -EOPNOTSUPP)
		TEST_SKIP("built without liburing: no batched writes");
#endif
	EXPECT_EQ(r, 0);
	/* Every write through the ring: no probe's writev batches among them. */
	datapath_force_dl_modes(fx_dp, WRITE_MODE_URING, true);
	return r == 0;
}

/* Plain writes: the reference. */
TEST(plain)
{
	EXPECT_EQ(datapath_set_batch_writes(fx_dp, false), 0);
	EXPECT_PTR_EQ(fx_dp->uring, NULL);
	for (unsigned id = 1; id <= 2; id++)
		check_sequence(fx_dp, sink[id], id, 1000);
}

/* Batched by default where io_uring works: 2 x 150 writes, each transfer in submits of at
 * most 64, so 3 submits per transfer. */
TEST(batched)
{
#ifdef QMAPD_HAVE_LIBURING
	EXPECT_TRUE(fx_dp->uring != NULL);
#endif
	if (!batch_on())
		return;
	for (unsigned id = 1; id <= 2; id++)
		check_sequence(fx_dp, sink[id], id, 2000 * id);
	const struct uring_stats *us = uring_get_stats(fx_dp->uring);
	EXPECT_EQ(us->writes, 2 * N_PKTS);
	EXPECT_EQ(us->submits, 2 * ((N_PKTS + URING_SLOTS - 1) / URING_SLOTS));
	EXPECT_EQ(uring_pending(fx_dp->uring), 0);
}

/*
 * One write per packet with the header in place: an aggregate built in the receive ring with
 * the two muxes' packets in turns, so that each write into mux 1's TAP borrows the tail of a
 * packet GRO holds for mux 2 (GRO trying, and then skipping, so written in place too). Every
 * packet arrives whole and in order; the ring's buffer is unchanged, byte for byte.
 */
TEST(in_place)
{
	static uint8_t saved[N_PKTS * (QMAP_HEADER_SIZE + PKT_LEN)];
	struct transport *t = fx_dp->transport;

	EXPECT_EQ(datapath_set_batch_writes(fx_dp, false), 0);
	for (unsigned round = 0; round < 2; round++) {
		struct mux *m2 = fx_dp->mux[2];
		m2->gro_auto.skip = round == 1;
		m2->gro_auto.left = UINT32_MAX;
		uint8_t *rx = transport_mem_rx_buf(t, 0);
		uint32_t first = 30000 + round * N_PKTS;
		size_t len = 0;
		for (unsigned i = 0; i < N_PKTS; i++) {
			unsigned id = 1 + (i & 1);
			qmap_write_data_header(rx + len, QMAP_V1, id, PKT_LEN, 0, false);
			build_packet(rx + len + QMAP_HEADER_SIZE, mux_addr[id], first + i / 2);
			len += QMAP_HEADER_SIZE + PKT_LEN;
		}
		memcpy(saved, rx, len);
		uint64_t skipped = m2->gro->stats.reasons[GRO_NM_SKIPPED];
		EXPECT_EQ(transport_mem_replay(t, rx, len), 0);
		EXPECT_TRUE(memcmp(saved, rx, len) == 0);
		EXPECT_EQ(m2->gro->stats.reasons[GRO_NM_SKIPPED] - skipped,
			  round == 1 ? N_PKTS / 2 : 0);
		for (unsigned id = 1; id <= 2; id++)
			EXPECT_EQ(drain_in_order(sink[id], first), N_PKTS / 2);
	}
}

/* A full queue, batched: counted, and the devices still work after the drops. */
TEST(batched_queue_full)
{
	if (!batch_on())
		return;
	for (unsigned id = 1; id <= 2; id++)
		check_eagain(fx_dp, id);
	for (unsigned id = 1; id <= 2; id++)
		check_sequence(fx_dp, sink[id], id, 5000);
}

/* Without batching, a full queue is counted the same way. */
TEST(plain_queue_full)
{
	EXPECT_EQ(datapath_set_batch_writes(fx_dp, false), 0);
	EXPECT_PTR_EQ(fx_dp->uring, NULL);
	for (unsigned id = 1; id <= 2; id++)
		check_eagain(fx_dp, id);
}

/*
 * Production: each mux probes both write modes on its own batches (write-mode.h), and the
 * packets arrive in order across the switches between them.
 */
TEST(auto_mode)
{
	if (!batch_on())
		return;
	datapath_force_dl_modes(fx_dp, -1, false);
	for (unsigned id = 1; id <= 2; id++) {
		struct mux *m = fx_dp->mux[id];
		EXPECT_STR_EQ(write_mode_why_name(m->wmode.why), "unmeasured");
		/* A probe: PROBE_BATCHES batches of the mux alone in each mode. */
		for (unsigned k = 0; k < 2 * WRITE_MODE_PROBE_BATCHES; k++)
			check_sequence(fx_dp, sink[id], id, 10000 + k * N_PKTS);
		EXPECT_EQ(m->wmode.probes, 1);
		EXPECT_STR_EQ(write_mode_why_name(m->wmode.why), "measured");
		EXPECT_TRUE(m->wmode.ns[WRITE_MODE_WRITEV] > 0);
		EXPECT_TRUE(m->wmode.ns[WRITE_MODE_URING] > 0);
		EXPECT_TRUE(!m->batch_uring && !m->batch_measure && !m->dl_dirty);
	}
}

/*
 * GRO on a flow per packet merges nothing: after a window the mux skips the attempt
 * (gro-auto.h), and the packets still arrive in order, before and after.
 */
TEST(gro_skipped)
{
	struct mux *m = fx_dp->mux[2];
	unsigned k = 0;

	datapath_force_dl_modes(fx_dp, -1, false);
	EXPECT_TRUE(!m->gro_auto.skip);
	while (!m->gro_auto.skip && k < 2 * HEADROOM_WINDOW_PACKETS / N_PKTS)
		check_sequence(fx_dp, sink[2], 2, 20000 + N_PKTS * k++);
	EXPECT_TRUE(m->gro_auto.skip);
	EXPECT_EQ(m->gro_auto.skips, 1);
	EXPECT_EQ(m->gro->stats.reasons[GRO_NM_SKIPPED], 0);
	for (unsigned i = 0; i < 4; i++)
		check_sequence(fx_dp, sink[2], 2, 20000 + N_PKTS * k++);
	EXPECT_EQ(m->gro->stats.reasons[GRO_NM_SKIPPED], 4 * N_PKTS);
	EXPECT_EQ(m->gro->stats.segments_merged, 0);
}

/*
 * io_uring refused at run time: the request fails, plain writes carry on. The filter stays
 * for the life of the process: this case must stay the last in the file (cases run in file
 * order), so that it is the last whichever cases run.
 */
TEST(refused)
{
	EXPECT_EQ(datapath_set_batch_writes(fx_dp, false), 0);
	if (refuse_io_uring() < 0)
		TEST_SKIP("cannot install the seccomp filter");
	EXPECT_EQ(datapath_set_batch_writes(fx_dp, true), -EOPNOTSUPP);
	EXPECT_PTR_EQ(fx_dp->uring, NULL);
	for (unsigned id = 1; id <= 2; id++)
		EXPECT_STR_EQ(write_mode_why_name(fx_dp->mux[id]->wmode.why), "no-io-uring");
	for (unsigned id = 1; id <= 2; id++)
		check_sequence(fx_dp, sink[id], id, 7000);
}
