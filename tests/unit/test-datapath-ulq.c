/* SPDX-License-Identifier: MIT */
/*
 * The fq-codel queue in the data path above DATAPATH_ULQ_MANAGED_MAX_BPS: with every OUT
 * transfer held by the modem, a managed mux reads its device into the queue, a pass-through
 * one stops reading and leaves the packets to the kernel (as fifo does); and packets parked
 * for a mux the modem stopped (FLOW_DISABLE) do not keep another mux from being read; two
 * backlogged muxes (fq-codel passing through, then fifo) share the freed transfers. Each case
 * has a network namespace and a datapath of its own. Needs root for TAPs in a network
 * namespace; the cases are skipped otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "counters.h"
#include "datapath-fixture.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "log.h"
#include "qmap.h"
#include "test-case.h"
#include "transport-mem.h"

static const char *const dst[3] = { NULL, "198.51.100.9", "198.51.100.10" };

static void send_udp(int fd, unsigned id, unsigned n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9000) };
	static uint8_t payload[1400];

	inet_pton(AF_INET, dst[id], &sa.sin_addr);
	for (unsigned i = 0; i < n; i++)
		sendto(fd, payload, sizeof(payload), MSG_DONTWAIT, (struct sockaddr *)&sa,
		       sizeof(sa));
}

static void turn(struct ev_loop *loop, int n)
{
	for (int i = 0; i < n; i++)
		ev_run(loop, EVRUN_NOWAIT);
}

static void flow(struct datapath *dp, unsigned id, bool on)
{
	uint8_t f[20] = { 0x80, (uint8_t)id, 0x00, 0x10,
			  on ? QMAP_COMMAND_FLOW_ENABLE : QMAP_COMMAND_FLOW_DISABLE };

	EXPECT_EQ(transport_mem_replay(dp->transport, f, sizeof(f)), 0);
	EXPECT_EQ(dp->mux[id]->flow_off, !on);
}

/* The device counters' text shows the fq-codel reader in `state`, as qmapctl stats would. */
static void expect_fq_codel_reader(const struct datapath *dp, enum ul_reader_state state)
{
	char *text = NULL, want[64];
	size_t len;
	FILE *f = open_memstream(&text, &len);

	counters_print_device(dp, f);
	fclose(f);
	snprintf(want, sizeof(want), " ul_reader_fq_codel=%s ", ul_reader_state_to_string(state));
	EXPECT_EQ(dp->ul_reader[UL_READER_FQ_CODEL], state);
	if (!strstr(text, want)) {
		fprintf(stderr, "%s:%d: no '%s' in '%s'\n", __FILE__, __LINE__, want, text);
		test_failures++;
	}
	free(text);
}

/* Both devices carry packets first: on a loaded machine new ones may take a while. */
static void warm_up(struct ev_loop *loop, struct datapath *dp, int fd)
{
	struct mux *m1 = dp->mux[1], *m2 = dp->mux[2];
	uint64_t seen1 = m1->stats.tx_packets, seen2 = m2->stats.tx_packets;

	for (int i = 0; i < 200 && (m1->stats.tx_packets == seen1 || m2->stats.tx_packets == seen2);
	     i++) {
		send_udp(fd, 1, 1);
		send_udp(fd, 2, 1);
		turn(loop, 5);
		usleep(10000);
	}
	EXPECT_TRUE(m1->stats.tx_packets > seen1 && m2->stats.tx_packets > seen2);
	turn(loop, 50);
}

/*
 * Both muxes backlogged, the modem taking one transfer at a time: each gets at least a third
 * of what leaves, whichever device the loop happens to poll first.
 */
static void share(struct ev_loop *loop, struct datapath *dp, int fd, const char *what)
{
	struct mux *m1 = dp->mux[1], *m2 = dp->mux[2];

	warm_up(loop, dp, fd);
	transport_mem_hold_out(dp->transport, true);
	for (int i = 0; i < 3; i++) {
		transport_mem_complete_held(dp->transport);
		turn(loop, 50);
	}
	transport_mem_complete_held(dp->transport);
	uint64_t base1 = m1->stats.tx_packets, base2 = m2->stats.tx_packets;
	send_udp(fd, 1, 400);
	send_udp(fd, 2, 400);
	for (int i = 0; i < 40; i++) {
		turn(loop, 3);
		transport_mem_complete_one(dp->transport);
	}
	uint64_t got1 = m1->stats.tx_packets - base1, got2 = m2->stats.tx_packets - base2;
	fprintf(stderr, "%s, both backlogged: mux 1 sent %llu, mux 2 sent %llu packets\n", what,
		(unsigned long long)got1, (unsigned long long)got2);
	EXPECT_TRUE(got1 + got2 > 100);
	EXPECT_TRUE(got1 * 3 >= got1 + got2);
	EXPECT_TRUE(got2 * 3 >= got1 + got2);
	transport_mem_hold_out(dp->transport, false);
	transport_mem_complete_held(dp->transport);
	turn(loop, 200);
}

/*
 * A datapath on the in-memory transport, started, with muxes 1 and 2 (uplink-queue q1, q2) routing
 * dst[1] and dst[2], in a network namespace of its own; *ret_fd a UDP socket to send from.
 * NULL (a failed check) when it cannot be set up.
 */
static struct datapath *start_mixed(struct dp_fixture *f, enum config_uplink_queue q1,
				    enum config_uplink_queue q2, int *ret_fd)
{
	struct datapath *dp = NULL;

	dp_fixture_init(f, "ulq");
	/* No IPv6: router solicitations and MLD reports would add packets to the counts. */
	for (int i = 0; i < 2; i++) {
		FILE *fp = fopen(i ? "/proc/sys/net/ipv6/conf/default/disable_ipv6"
				   : "/proc/sys/net/ipv6/conf/all/disable_ipv6",
				 "w");
		if (fp) {
			fputs("1", fp);
			fclose(fp);
		}
	}
	int r = dp_fixture_datapath(f, &dp);
	for (unsigned id = 1; id <= 2 && r >= 0; id++) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "%s/32", dst[id]);
		dp_fixture_route(&f->mux[id], prefix);
		f->mux[id].uplink_queue = id == 1 ? q1 : q2;
		r = datapath_mux_add(dp, &f->mux[id], false, true, NULL);
	}
	if (r >= 0)
		r = datapath_start(dp);
	if (r < 0) {
		fprintf(stderr, "%s:%d: cannot set up the datapath: %s\n", __FILE__, __LINE__,
			strerror(-r));
		test_failures++;
		datapath_free(dp);
		dp_fixture_close(f);
		return NULL;
	}
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int size = 8 << 20;
	EXPECT_TRUE(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
	*ret_fd = fd;
	return dp;
}

static struct datapath *start(struct dp_fixture *f, enum config_uplink_queue q, int *ret_fd)
{
	return start_mixed(f, q, q, ret_fd);
}

static void stop(struct dp_fixture *f, struct datapath *dp, int fd)
{
	close(fd);
	datapath_free(dp);
	dp_fixture_close(f);
}

/*
 * One story, each step starting from where the one before left the queue: packets queued
 * while the modem holds every transfer, parked by FLOW_DISABLE, passed by while the queue
 * passes through, then not read at all, then all sent.
 */
TEST(fq_codel)
{
	struct dp_fixture f;
	int fd;
	struct datapath *dp = start(&f, CONFIG_UPLINK_QUEUE_FQ_CODEL, &fd);
	if (!dp)
		return;
	struct ev_loop *loop = f.loop;
	struct mux *m1 = dp->mux[1], *m2 = dp->mux[2];

	warm_up(loop, dp, fd);
	uint64_t tx1 = m1->stats.tx_packets;

	/* Managed (estimate far below the limit): the modem holds everything, read anyway. */
	transport_mem_hold_out(dp->transport, true);
	send_udp(fd, 1, 300);
	turn(loop, 50);
	EXPECT_TRUE(transport_mem_held(dp->transport) != NULL);
	EXPECT_TRUE(m1->ulq->stats.enqueued > 0);
	EXPECT_TRUE(dp->ulq->packets > 0);
	expect_fq_codel_reader(dp, UL_READER_READING);

	/* The modem stops mux 1; its queued packets stay parked. */
	flow(dp, 1, false);
	uint32_t parked = dp->ulq->packets;
	EXPECT_TRUE(parked > 0);

	/* A modem faster than the queue manages: pass-through. Mux 2 must still get out. */
	dp->ul_rate.bps = 2 * DATAPATH_ULQ_MANAGED_MAX_BPS;
	transport_mem_hold_out(dp->transport, false);
	transport_mem_complete_held(dp->transport);
	uint64_t tx2 = m2->stats.tx_packets;
	send_udp(fd, 2, 100);
	turn(loop, 50);
	EXPECT_EQ(m2->stats.tx_packets - tx2, 100);
	EXPECT_EQ(m2->ulq->stats.enqueued, 0); /* straight into the aggregates */
	EXPECT_EQ(dp->ulq->packets, parked);

	/* Every transfer held again (at most 15 x 16 KiB): mux 2 stops being read, nothing more
	 * is queued, the rest waits in the kernel. */
	transport_mem_hold_out(dp->transport, true);
	send_udp(fd, 2, 200);
	turn(loop, 50);
	expect_fq_codel_reader(dp, UL_READER_PAUSED);
	EXPECT_EQ(m2->ulq->stats.enqueued, 0);
	EXPECT_TRUE(m2->stats.tx_packets - tx2 < 300);

	/* The modem takes everything: mux 2's backlog follows, mux 1's once enabled. */
	transport_mem_hold_out(dp->transport, false);
	transport_mem_complete_held(dp->transport);
	turn(loop, 200);
	EXPECT_EQ(m2->stats.tx_packets - tx2, 300);
	flow(dp, 1, true);
	turn(loop, 200);
	EXPECT_EQ(dp->ulq->packets, 0);
	EXPECT_EQ(m1->stats.tx_packets - tx1 + m1->ulq->stats.drops_codel, 300);

	stop(&f, dp, fd);
}

/* Both fq-codel muxes backlogged while the queue passes through (a modem faster than
 * DATAPATH_ULQ_MANAGED_MAX_BPS). */
TEST(fq_codel_share)
{
	struct dp_fixture f;
	int fd;
	struct datapath *dp = start(&f, CONFIG_UPLINK_QUEUE_FQ_CODEL, &fd);
	if (!dp)
		return;

	dp->ul_rate.bps = 2 * DATAPATH_ULQ_MANAGED_MAX_BPS;
	share(f.loop, dp, fd, "fq-codel, pass-through");
	stop(&f, dp, fd);
}

/* The same with fifo muxes, which wait in the kernel whenever no transfer is free. */
TEST(fifo_share)
{
	struct dp_fixture f;
	int fd;
	struct datapath *dp = start(&f, CONFIG_UPLINK_QUEUE_FIFO, &fd);
	if (!dp)
		return;

	turn(f.loop, 50);
	share(f.loop, dp, fd, "fifo");
	stop(&f, dp, fd);
}

/*
 * Mux 1 fifo and backlogged, mux 2 fq-codel: a few packets of mux 2 wait behind what is in
 * flight when they arrive, not behind mux 1's backlog in the kernel (a fifo bloats its own
 * latency only), and mux 1 keeps no more in flight than the in-flight limit. The modem takes
 * one transfer at a time; before the fifo kept to the limit, it took every freed transfer
 * and mux 2's packets left after 93 of them.
 */
TEST(fifo_beside_fq_codel)
{
	struct dp_fixture f;
	int fd;
	struct datapath *dp =
		start_mixed(&f, CONFIG_UPLINK_QUEUE_FIFO, CONFIG_UPLINK_QUEUE_FQ_CODEL, &fd);
	if (!dp)
		return;
	struct ev_loop *loop = f.loop;
	struct mux *m1 = dp->mux[1], *m2 = dp->mux[2];

	warm_up(loop, dp, fd);
	transport_mem_hold_out(dp->transport, true);
	send_udp(fd, 1, 1500);
	turn(loop, 50);
	unsigned in_flight = dp->transport->n_out - dp->transport->n_out_free;
	uint64_t base1 = m1->stats.tx_packets, base2 = m2->stats.tx_packets;
	EXPECT_TRUE(in_flight >= 1);
	send_udp(fd, 2, 5);
	unsigned took = 0;
	for (; took < 100 && m2->stats.tx_packets - base2 < 5; took++) {
		turn(loop, 3);
		transport_mem_complete_one(dp->transport);
	}
	fprintf(stderr,
		"mux 2's 5 packets left after %u transfers completed (%u were in flight when they "
		"came; mux 1 sent %llu meanwhile)\n",
		took, in_flight, (unsigned long long)(m1->stats.tx_packets - base1));
	EXPECT_EQ(m2->stats.tx_packets - base2, 5);
	/* Behind what was in flight, then at least one packet for every transfer the modem
	 * takes (the queue and the fifo turns take the freed room first in turn). */
	EXPECT_TRUE(took <= in_flight + 5);
	/* At most the limit, give or take the aggregate being filled: not every transfer. */
	EXPECT_TRUE(in_flight < dp->transport->n_out - 2);
	/* Mux 1 goes on meanwhile: it yields room in flight, not its turn. */
	EXPECT_TRUE(m1->stats.tx_packets > base1);
	transport_mem_hold_out(dp->transport, false);
	transport_mem_complete_held(dp->transport);
	turn(loop, 500);
	stop(&f, dp, fd);
}
