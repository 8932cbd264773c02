/* SPDX-License-Identifier: MIT */
/*
 * The `mem` transport, for tests and benchmarks only: no modem, the caller replays the
 * aggregates it built. Not in the daemon's backend table; pass transport_mem_ops to
 * datapath_new_with_backend() or transport_new_with_backend().
 */
#ifndef QMAPD_TRANSPORT_MEM_H
#define QMAPD_TRANSPORT_MEM_H

#include "transport.h"

extern const struct transport_ops transport_mem_ops;

/*
 * The `mem` backend replays aggregates the caller built (benchmarks, tests): the bytes
 * are copied into the next receive buffer, as a DMA would, and handed to on_bulk_in().
 * OUT transfers complete at once and are only counted.
 */
int transport_mem_replay(struct transport *t, const uint8_t *buf, size_t len);
/*
 * The same for n transfers completed together (as a USB or sim transport delivers several in
 * one wakeup): on_bulk_in() for each, then on_bulk_in_done() once, so GRO may merge across
 * them. n must not exceed the receive ring (n_rx); -EINVAL or -EMSGSIZE, nothing replayed.
 */
int transport_mem_replay_batch(struct transport *t, const uint8_t *const *bufs, const size_t *lens,
			       size_t n);
/*
 * The receive buffer the i-th next replayed transfer lands in (i < n_rx, else NULL). A caller
 * that builds its aggregates there and replays those very buffers skips the copy, which stands
 * for a DMA and costs a real host's CPU nothing.
 */
uint8_t *transport_mem_rx_buf(struct transport *t, uint32_t i);

/* OUT transfers stay pending (a modem NAKing them) while hold is set. */
void transport_mem_hold_out(struct transport *t, bool hold);
/* The pending transfers, oldest first (linked through ->next), or NULL. */
struct transport_out *transport_mem_held(struct transport *t);
/* Complete every pending transfer; how many. */
unsigned transport_mem_complete_held(struct transport *t);
/* Complete the oldest pending transfer only (a modem taking one at a time); false if none. */
bool transport_mem_complete_one(struct transport *t);

#endif
