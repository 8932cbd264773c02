/* SPDX-License-Identifier: MIT */
/*
 * ul-reader: the uplink reader's names, the transitions it allows and refuses, and that a
 * transition starts or stops exactly the devices of its reader (two muxes on pipes, one fifo
 * and one fq-codel, in a datapath that has nothing else).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath-internal.h"
#include "macro.h"
#include "mux.h"
#include "test-case.h"
#include "ul-reader.h"

TEST(names)
{
	static const char *const want[] = { "stopped", "reading",    "wait-out",
					    "resume",  "queue-full", "paused" };

	EXPECT_EQ(ARRAY_SIZE(want), _UL_READER_STATE_MAX);
	for (unsigned s = 0; s < ARRAY_SIZE(want); s++)
		EXPECT_STR_EQ(ul_reader_state_to_string(s), want[s]);
	EXPECT_PTR_EQ(ul_reader_state_to_string(_UL_READER_STATE_MAX), NULL);
	EXPECT_PTR_EQ(ul_reader_state_to_string((enum ul_reader_state) - 1), NULL);
	EXPECT_STR_EQ(ul_reader_to_string(UL_READER_FIFO), "fifo");
	EXPECT_STR_EQ(ul_reader_to_string(UL_READER_FQ_CODEL), "fq-codel");
	EXPECT_PTR_EQ(ul_reader_to_string(_UL_READER_MAX), NULL);
}

/* Every (from, to) pair against the diagrams in ul-reader.h, written out once more here. */
TEST(allowed)
{
	static const struct {
		enum ul_reader reader;
		enum ul_reader_state from, to;
	} legal[] = {
		{ UL_READER_FIFO, UL_READER_STOPPED, UL_READER_READING },
		{ UL_READER_FIFO, UL_READER_READING, UL_READER_WAIT_OUT },
		{ UL_READER_FIFO, UL_READER_WAIT_OUT, UL_READER_RESUME },
		{ UL_READER_FIFO, UL_READER_RESUME, UL_READER_READING },
		{ UL_READER_FIFO, UL_READER_RESUME, UL_READER_WAIT_OUT },
		{ UL_READER_FQ_CODEL, UL_READER_STOPPED, UL_READER_READING },
		{ UL_READER_FQ_CODEL, UL_READER_READING, UL_READER_QUEUE_FULL },
		{ UL_READER_FQ_CODEL, UL_READER_READING, UL_READER_PAUSED },
		{ UL_READER_FQ_CODEL, UL_READER_QUEUE_FULL, UL_READER_READING },
		{ UL_READER_FQ_CODEL, UL_READER_PAUSED, UL_READER_READING },
	};
	unsigned n = 0;

	for (unsigned r = 0; r < _UL_READER_MAX; r++)
		for (unsigned from = 0; from < _UL_READER_STATE_MAX; from++)
			for (unsigned to = 0; to < _UL_READER_STATE_MAX; to++) {
				bool want = false;

				for (size_t i = 0; i < ARRAY_SIZE(legal); i++)
					want |= legal[i].reader == r && legal[i].from == from &&
						legal[i].to == to;
				if (ul_reader_transition_allowed(r, from, to) != want) {
					fprintf(stderr, "%s reader %s -> %s: %s, expected %s\n",
						ul_reader_to_string(r),
						ul_reader_state_to_string(from),
						ul_reader_state_to_string(to),
						want ? "refused" : "allowed",
						want ? "allowed" : "refused");
					test_failures++;
				}
				n += want;
			}
	EXPECT_EQ(n, ARRAY_SIZE(legal));
	EXPECT_TRUE(!ul_reader_transition_allowed(_UL_READER_MAX, UL_READER_STOPPED,
						  UL_READER_READING));
	EXPECT_TRUE(!ul_reader_transition_allowed(UL_READER_FIFO, _UL_READER_STATE_MAX,
						  UL_READER_READING));
}

static int pipe_fd[2][2];

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static void mux_init(struct datapath *dp, struct mux *m, unsigned id, struct ulq_mux *ulq)
{
	EXPECT_EQ(pipe2(pipe_fd[id - 1], O_CLOEXEC | O_NONBLOCK), 0);
	m->dp = dp;
	m->id = (uint8_t)id;
	m->ulq = ulq;
	ev_io_init(&m->io, on_readable, pipe_fd[id - 1][0], EV_READ);
	dp->mux[id] = m;
	dp->n_mux++;
	ul_reader_update_mux(dp, m);
}

TEST(set_state)
{
	static struct datapath dp; /* large: not on the stack */
	struct mux fifo = { 0 }, fq = { 0 };
	static char stub;
	struct ulq_mux *some_queue = (struct ulq_mux *)&stub; /* m->ulq is only tested for NULL */

	memset(&dp, 0, sizeof(dp)); /* the case starts from nothing however often it runs */
	dp.loop = ev_loop_new(EVFLAG_AUTO);
	EXPECT_TRUE(dp.loop != NULL);
	mux_init(&dp, &fifo, 1, NULL);
	mux_init(&dp, &fq, 2, some_queue);

	/* Not started: nothing read, and a wait cannot come before the start. */
	EXPECT_TRUE(!fifo.reading && !fq.reading);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_WAIT_OUT, "test"), -EINVAL);
	EXPECT_EQ(dp.ul_reader[UL_READER_FIFO], UL_READER_STOPPED);
	EXPECT_EQ(dp.ul_reader_transitions, 0);

	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_READING, "test"), 0);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FQ_CODEL, UL_READER_READING, "test"), 0);
	EXPECT_EQ(dp.ul_reader_transitions, 2);
	/* The modem was not seen yet: still nothing read. */
	EXPECT_TRUE(!fifo.reading && !fq.reading);
	dp.modem_seen = true;
	ul_reader_update_all(&dp);
	EXPECT_TRUE(fifo.reading && fq.reading && ev_is_active(&fifo.io) && ev_is_active(&fq.io));

	/* Each reader gates its own devices only. */
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_WAIT_OUT, "test"), 0);
	EXPECT_TRUE(!fifo.reading && !ev_is_active(&fifo.io) && fq.reading);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FQ_CODEL, UL_READER_PAUSED, "test"), 0);
	EXPECT_TRUE(!fifo.reading && !fq.reading && !ev_is_active(&fq.io));

	/* The same state again is no transition. */
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_WAIT_OUT, "test"), 0);
	EXPECT_EQ(dp.ul_reader_transitions, 4);

	/* Refused: a waiting fifo reader reads again only through RESUME; a paused queue is
	 * not full without reading first; no reader waits for the other's reasons. */
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_READING, "test"), -EINVAL);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FQ_CODEL, UL_READER_QUEUE_FULL, "test"),
		  -EINVAL);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FQ_CODEL, UL_READER_WAIT_OUT, "test"),
		  -EINVAL);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_STOPPED, "test"), -EINVAL);
	EXPECT_EQ(ul_reader_set_state(&dp, _UL_READER_MAX, UL_READER_READING, "test"), -EINVAL);
	EXPECT_EQ(dp.ul_reader[UL_READER_FIFO], UL_READER_WAIT_OUT);
	EXPECT_EQ(dp.ul_reader[UL_READER_FQ_CODEL], UL_READER_PAUSED);
	EXPECT_EQ(dp.ul_reader_transitions, 4);
	EXPECT_TRUE(!fifo.reading && !fq.reading);

	/* Transfers freed: the fifo reader resumes through RESUME; its devices stay unread until
	 * the prepare moves it on. */
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_RESUME, "test"), 0);
	EXPECT_TRUE(!fifo.reading);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FIFO, UL_READER_READING, "test"), 0);
	EXPECT_TRUE(fifo.reading && !fq.reading);
	EXPECT_EQ(ul_reader_set_state(&dp, UL_READER_FQ_CODEL, UL_READER_READING, "test"), 0);
	EXPECT_TRUE(fifo.reading && fq.reading);
	EXPECT_EQ(dp.ul_reader_transitions, 7);

	/* FLOW_DISABLE leaves that device unread whatever the reader says. */
	fq.flow_off = true;
	ul_reader_update_mux(&dp, &fq);
	EXPECT_TRUE(!fq.reading && !ev_is_active(&fq.io));

	ev_io_stop(dp.loop, &fifo.io);
	ev_io_stop(dp.loop, &fq.io);
	ev_loop_destroy(dp.loop);
	for (unsigned i = 0; i < 2; i++) {
		close(pipe_fd[i][0]);
		close(pipe_fd[i][1]);
	}
}
