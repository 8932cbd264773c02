/* SPDX-License-Identifier: MIT */
/*
 * Whether the mux devices are read: the uplink reader, private to the datapath.
 *
 * Two readers, one per uplink-queue kind, because they wait for different things and can
 * wait at the same time (a modem may carry fifo and fq-codel muxes together):
 *   fifo      STOPPED -> READING -> WAIT_OUT -> RESUME -> READING ...
 *             (RESUME -> WAIT_OUT: a super-packet found no transfer before the prepare)
 *   fq-codel  STOPPED -> READING -> QUEUE_FULL -> READING
 *                        READING -> PAUSED -> READING
 * A mux's device is read while its reader is READING, the modem has not stopped the mux
 * (FLOW_DISABLE) and the modem was seen once (struct datapath's modem_seen). Every change
 * goes through ul_reader_set_state(): the transitions the diagram does not show are
 * refused, each one is counted and logged at debug.
 */
#ifndef QMAPD_UL_READER_H
#define QMAPD_UL_READER_H

#include <stdbool.h>

struct datapath;
struct mux;

enum ul_reader {
	UL_READER_FIFO,	    /* the fifo muxes' devices, read straight into OUT transfers */
	UL_READER_FQ_CODEL, /* the fq-codel muxes' devices, read into the queue when need be */
	_UL_READER_MAX,
};

enum ul_reader_state {
	UL_READER_STOPPED, /* datapath_start() not called yet */
	UL_READER_READING,
	/* fifo: every OUT transfer is in flight, or a super-packet waits for one, or (beside
	 * fq-codel muxes) the bytes in flight are at their limit: the kernel queues until a
	 * transfer completes. */
	UL_READER_WAIT_OUT,
	/* fifo: a transfer freed while waiting; the loop's prepare gives each fifo mux a turn
	 * before the devices are read again (never from inside a read). */
	UL_READER_RESUME,
	/* fq-codel: the queue is three quarters full; read again once it is half empty. */
	UL_READER_QUEUE_FULL,
	/* fq-codel, passing through (above DATAPATH_ULQ_MANAGED_MAX_BPS, no shaper): nothing can
	 * go straight into an aggregate, so the kernel holds the packets. */
	UL_READER_PAUSED,
	_UL_READER_STATE_MAX,
};

/* "fifo", "fq-codel"; NULL out of range. */
const char *ul_reader_to_string(enum ul_reader reader);
/* "stopped", "reading", "wait-out", "resume", "queue-full", "paused"; NULL out of range. */
const char *ul_reader_state_to_string(enum ul_reader_state state);
/* Whether reader may go from `from` to `to` (a state to itself is no transition: false). */
bool ul_reader_transition_allowed(enum ul_reader reader, enum ul_reader_state from,
				  enum ul_reader_state to);

/*
 * Move reader to `next` because of `why` (for the debug log) and start or stop the devices
 * it gates. 0, also when it already is in `next` (nothing changes then); -EINVAL for a
 * transition ul_reader_transition_allowed() refuses: logged, the state stays.
 */
int ul_reader_set_state(struct datapath *dp, enum ul_reader reader, enum ul_reader_state next,
			const char *why);
/* Start or stop reading m's device as its reader's state, its flow and the modem say. */
void ul_reader_update_mux(struct datapath *dp, struct mux *m);
/* The same for every mux (the modem was seen for the first time). */
void ul_reader_update_all(struct datapath *dp);

#endif
