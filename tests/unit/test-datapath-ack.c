/* SPDX-License-Identifier: MIT */
/*
 * Command ACKs while the uplink is full: the modem holds every OUT transfer the data path sent
 * (a USB modem NAKing them), an upload keeps the mux busy, and a FLOW_DISABLE arrives. Its
 * ACK must leave at once in the OUT buffer the data path leaves free, not wait for the modem
 * to take a data transfer (with 32 unanswered commands, ACKs would be dropped). Checked for
 * a fifo and an fq-codel mux. Needs root for a TAP in a network namespace of its own; exits
 * 77 otherwise.
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
#include "datapath-fixture.h"
#include "datapath-internal.h"
#include "datapath.h"
#include "log.h"
#include "qmap.h"
#include "test-case.h"
#include "transport-mem.h"

#define DST_ADDR "198.51.100.9"
#define PAYLOAD	 1400

/* A QMAPv1 command frame for mux id: FLOW_DISABLE or FLOW_ENABLE, transaction tid. */
static size_t build_command(uint8_t *f, unsigned id, uint8_t name, uint32_t tid)
{
	const uint8_t frame[20] = {
		0x80, (uint8_t)id, 0x00, 0x10, name, 0x00, 0x00, 0x00, 0,    0,
		0,    0,	   0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
	};
	memcpy(f, frame, sizeof(frame));
	memcpy(f + 8, &tid, sizeof(tid)); /* opaque: qmap_command_parse keeps the wire bytes */
	return sizeof(frame);
}

/* Upload until the data path has taken every OUT buffer it may (the modem holds them). */
static void fill_uplink(struct datapath *dp, struct ev_loop *loop, int fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9000) };
	static uint8_t payload[PAYLOAD];

	inet_pton(AF_INET, DST_ADDR, &sa.sin_addr);
	for (int round = 0; round < 2000; round++) {
		for (int i = 0; i < 8; i++)
			sendto(fd, payload, sizeof(payload), MSG_DONTWAIT, (struct sockaddr *)&sa,
			       sizeof(sa));
		ev_run(loop, EVRUN_NOWAIT);
		if (transport_mem_held(dp->transport) && !dp->ul_out &&
		    dp->transport->n_out_free <= 1 && dp->transport->out_waiting)
			return;
	}
}

/* How many held transfers carry a command ACK for transaction tid. */
static unsigned held_acks(struct datapath *dp, uint32_t tid)
{
	unsigned n = 0;

	for (struct transport_out *o = transport_mem_held(dp->transport); o; o = o->next) {
		struct qmap_iter it;
		struct qmap_frame f;
		struct qmap_command cmd;
		enum qmap_error err;

		qmap_iter_init(&it, o->data, o->len, QMAP_V1);
		while (qmap_next(&it, &f, &err) > 0)
			if (f.kind == QMAP_FRAME_COMMAND &&
			    qmap_command_parse(f.payload, f.len, &cmd) == 0 &&
			    cmd.type == QMAP_COMMAND_ACK && cmd.transaction_id == tid)
				n++;
	}
	return n;
}

static void check_ack_under_load(struct datapath *dp, struct ev_loop *loop, int fd, unsigned id,
				 uint32_t tid)
{
	struct mux *m = dp->mux[id];
	uint8_t cmd[32];
	uint64_t acks = dp->stats.ul_command_acks;

	transport_mem_hold_out(dp->transport, true);
	fill_uplink(dp, loop, fd);
	/* The modem holds every data transfer; one buffer stays free, for control. */
	EXPECT_TRUE(transport_mem_held(dp->transport) != NULL);
	EXPECT_TRUE(m->stats.tx_packets > 0);
	EXPECT_EQ(dp->transport->n_out_free, 1);

	EXPECT_EQ(transport_mem_replay(dp->transport, cmd,
				       build_command(cmd, id, QMAP_COMMAND_FLOW_DISABLE, tid)),
		  0);
	EXPECT_TRUE(m->flow_off);
	/* Answered now, while the modem still holds every data transfer. */
	EXPECT_EQ(dp->stats.ul_command_acks - acks, 1);
	EXPECT_EQ(dp->stats.ul_command_acks_dropped, 0);
	EXPECT_EQ(dp->n_ack_pending, 0);
	EXPECT_EQ(held_acks(dp, tid), 1);

	EXPECT_EQ(transport_mem_replay(dp->transport, cmd,
				       build_command(cmd, id, QMAP_COMMAND_FLOW_ENABLE, tid + 1)),
		  0);
	EXPECT_TRUE(!m->flow_off);

	/* The modem takes everything: the uplink flows again. */
	transport_mem_hold_out(dp->transport, false);
	transport_mem_complete_held(dp->transport);
	for (int i = 0; i < 100; i++)
		ev_run(loop, EVRUN_NOWAIT);
	EXPECT_EQ(dp->stats.ul_command_acks - acks, 2);
	EXPECT_EQ(dp->n_ack_pending, 0);
}

/* Every case has a datapath of its own, in a network namespace of its own. */
static struct dp_fixture fx;
static struct datapath *fx_dp;
static int upload_fd = -1;

static void teardown(void)
{
	if (upload_fd >= 0)
		close(upload_fd);
	upload_fd = -1;
	fx_dp = datapath_free(fx_dp);
	dp_fixture_close(&fx);
}

/* The datapath, not started, and a socket that uploads to the destination mux 1 routes. */
TEST_SETUP()
{
	static bool registered;
	int size = 8 << 20;

	if (!registered) {
		atexit(teardown);
		registered = true;
	}
	teardown();
	dp_fixture_init(&fx, "ack");
	/* Only mux 1 is used; it routes the upload's destination. */
	dp_fixture_route(&fx.mux[1], DST_ADDR "/32");
	if (dp_fixture_datapath(&fx, &fx_dp) < 0) {
		fprintf(stderr, "cannot set up the datapath\n");
		exit(1);
	}
	upload_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	setsockopt(upload_fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
}

/* Mux 1 as a fifo, the datapath started, then the check. */
static void check_fifo(uint32_t tid)
{
	fx.mux[1].uplink_queue = CONFIG_UPLINK_QUEUE_FIFO;
	EXPECT_EQ(datapath_mux_add(fx_dp, &fx.mux[1], false, true, NULL), 0);
	EXPECT_EQ(datapath_start(fx_dp), 0);
	if (fx_dp->mux[1])
		check_ack_under_load(fx_dp, fx.loop, upload_fd, 1, tid);
}

TEST(fifo)
{
	check_fifo(0x1000);
}

/*
 * The same through an fq-codel mux, which reads its device even while nothing can go. One
 * case with the fifo run before it, on the same datapath: the fq-codel mux fills the uplink
 * only once the in-flight limit has grown, and it grows from the completions of the fifo
 * run (a new datapath starts at 0, and the modem completes nothing while the uplink fills).
 */
TEST(fq_codel_after_fifo)
{
	check_fifo(0x1000);
	EXPECT_EQ(datapath_mux_del(fx_dp, 1), 0);
	fx.mux[1].uplink_queue = CONFIG_UPLINK_QUEUE_FQ_CODEL;
	snprintf(fx.mux[1].interface, sizeof(fx.mux[1].interface), "ack3");
	int r = datapath_mux_add(fx_dp, &fx.mux[1], false, true, NULL);
	EXPECT_EQ(r, 0);
	if (r == 0)
		check_ack_under_load(fx_dp, fx.loop, upload_fd, 1, 0x2000);
}
