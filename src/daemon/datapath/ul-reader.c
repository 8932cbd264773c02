/* SPDX-License-Identifier: MIT */
/*
 * The uplink reader's states (ul-reader.h): the one place they change, and what they mean
 * for each mux device's watcher.
 */
#include <errno.h>

#include "datapath-internal.h"
#include "log.h"
#include "macro.h"
#include "mux.h"
#include "ul-reader.h"

static const char *const reader_names[_UL_READER_MAX] = {
	[UL_READER_FIFO] = "fifo",
	[UL_READER_FQ_CODEL] = "fq-codel",
};

static const char *const state_names[_UL_READER_STATE_MAX] = {
	[UL_READER_STOPPED] = "stopped",       [UL_READER_READING] = "reading",
	[UL_READER_WAIT_OUT] = "wait-out",     [UL_READER_RESUME] = "resume",
	[UL_READER_QUEUE_FULL] = "queue-full", [UL_READER_PAUSED] = "paused",
};

#define TO(state) (1u << (state))

/* Per reader and state, the states it may go to next (the diagrams in ul-reader.h). */
static const unsigned allowed[_UL_READER_MAX][_UL_READER_STATE_MAX] = {
	[UL_READER_FIFO] = {
		[UL_READER_STOPPED] = TO(UL_READER_READING),
		[UL_READER_READING] = TO(UL_READER_WAIT_OUT),
		[UL_READER_WAIT_OUT] = TO(UL_READER_RESUME),
		[UL_READER_RESUME] = TO(UL_READER_READING) | TO(UL_READER_WAIT_OUT),
	},
	[UL_READER_FQ_CODEL] = {
		[UL_READER_STOPPED] = TO(UL_READER_READING),
		[UL_READER_READING] = TO(UL_READER_QUEUE_FULL) | TO(UL_READER_PAUSED),
		[UL_READER_QUEUE_FULL] = TO(UL_READER_READING),
		[UL_READER_PAUSED] = TO(UL_READER_READING),
	},
};

const char *ul_reader_to_string(enum ul_reader reader)
{
	return (unsigned)reader < ARRAY_SIZE(reader_names) ? reader_names[reader] : NULL;
}

const char *ul_reader_state_to_string(enum ul_reader_state state)
{
	return (unsigned)state < ARRAY_SIZE(state_names) ? state_names[state] : NULL;
}

bool ul_reader_transition_allowed(enum ul_reader reader, enum ul_reader_state from,
				  enum ul_reader_state to)
{
	if ((unsigned)reader >= _UL_READER_MAX || (unsigned)from >= _UL_READER_STATE_MAX ||
	    (unsigned)to >= _UL_READER_STATE_MAX)
		return false;
	return allowed[reader][from] & TO(to);
}

int ul_reader_set_state(struct datapath *dp, enum ul_reader reader, enum ul_reader_state next,
			const char *why)
{
	if ((unsigned)reader >= _UL_READER_MAX)
		return -EINVAL;
	enum ul_reader_state from = dp->ul_reader[reader];
	if (from == next)
		return 0;
	if (!ul_reader_transition_allowed(reader, from, next)) {
		/* A bug in a caller: the devices stay as they are rather than follow it. */
		log_warning("uplink %s reader: refused %s -> %s (%s)", ul_reader_to_string(reader),
			    ul_reader_state_to_string(from) ?: "?",
			    ul_reader_state_to_string(next) ?: "?", why);
		return -EINVAL;
	}
	log_debug("uplink %s reader: %s -> %s (%s)", ul_reader_to_string(reader),
		  ul_reader_state_to_string(from), ul_reader_state_to_string(next), why);
	dp->ul_reader[reader] = next;
	dp->ul_reader_transitions++;
	/* Only READING reads: from one waiting state to another no device changes. */
	if (from == UL_READER_READING || next == UL_READER_READING)
		ul_reader_update_all(dp);
	return 0;
}

void ul_reader_update_mux(struct datapath *dp, struct mux *m)
{
	enum ul_reader reader = m->ulq ? UL_READER_FQ_CODEL : UL_READER_FIFO;
	bool on = dp->ul_reader[reader] == UL_READER_READING && !m->flow_off && dp->modem_seen;

	if (m->reading == on)
		return;
	if (on)
		ev_io_start(dp->loop, &m->io);
	else
		ev_io_stop(dp->loop, &m->io);
	m->reading = on;
}

void ul_reader_update_all(struct datapath *dp)
{
	/* Muxes are sparse by id; the count says when the last one was seen. */
	for (unsigned id = 0, seen = 0; id < ARRAY_SIZE(dp->mux) && seen < dp->n_mux; id++)
		if (dp->mux[id]) {
			ul_reader_update_mux(dp, dp->mux[id]);
			seen++;
		}
}
