/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's radio: what lies between the modem's USB function and the network.
 *
 *   bulk OUT transfer -> modem buffer (modem_buffer bytes) -> air interface (ul_rate) ->
 *   network delay -> TUN
 *
 * Uplink packets wait in the modem buffer, leave it one at a time at the air interface's rate
 * (bits of IP packet per second), then spend the round trip's network delay (twice the
 * one-way --network-delay: every flow crosses the sim both ways, so putting both halves on
 * one side gives every flow the same round trip) before they reach the TUN. While the buffer
 * cannot take the next transfer, the sim leaves it unread in the socket: to qmapd the OUT
 * transfer stays pending, as a USB OUT transfer the modem NAKs.
 *
 * Time is the caller's clock, read whenever the sim gets to run, which on a busy host is often
 * a millisecond or more after the radio needed it (a 32 KiB buffer drains in 1.3 ms at 200
 * Mbit/s). So nothing here depends on when the caller runs: the air interface sends back to
 * back on elapsed time (fractions of a nanosecond carried), and a transfer pending since
 * `since` enters the buffer at the instant room for it freed (sim_radio_take), not when the sim
 * came round to it. Otherwise the radio idles whenever the sim is late, and serves less than
 * its rate.
 *
 * One ring of packet records holds both stages in order: [head, mid) have left the radio and
 * wait for their delivery time, [mid, tail) are in the modem buffer. Pure: no I/O, no clock.
 */
#ifndef QMAPD_SIM_RADIO_H
#define QMAPD_SIM_RADIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_RADIO_RING_BYTES (32u << 20) /* 200 ms at 1 Gbit/s in flight on the network side */

struct sim_radio;

typedef void (*sim_radio_deliver_fn)(void *userdata, uint8_t mux, uint8_t flags, const uint8_t *pkt,
				     size_t len);

int sim_radio_new(uint32_t ring_bytes, struct sim_radio **ret);
struct sim_radio *sim_radio_free(struct sim_radio *r);

/* ul_rate 0: no limit; modem_buffer 0: no limit; delay_ns the round trip's network delay. */
void sim_radio_set(struct sim_radio *r, uint64_t ul_rate, uint32_t modem_buffer, uint64_t delay_ns);
/*
 * When the modem buffer has room for a transfer of `bytes` (an empty buffer takes anything):
 * the radio's present time if it has now, else the instant enough of it will have left.
 */
uint64_t sim_radio_room_at(const struct sim_radio *r, uint32_t bytes);
/*
 * An OUT transfer of `bytes`, pending since `since`: false while the buffer has no room for it
 * by `now` (it stays pending: there is no other queue). Else the radio moves on to the instant
 * the modem took it, max(since, sim_radio_room_at()), returned in *at: push its packets at it.
 */
bool sim_radio_take(struct sim_radio *r, uint32_t bytes, uint64_t since, uint64_t now,
		    uint64_t *at);
/*
 * Into the modem buffer at time `at` (not before the last take or run); -ENOBUFS when the
 * ring is full (counted as dropped by the caller).
 */
int sim_radio_push(struct sim_radio *r, uint8_t mux, uint8_t flags, const uint8_t *pkt, size_t len,
		   uint64_t at);
/*
 * Move packets through the radio up to `now` and deliver those due. Returns when the next one
 * is due (absolute ns), or 0 when nothing is left.
 */
uint64_t sim_radio_run(struct sim_radio *r, uint64_t now, sim_radio_deliver_fn deliver,
		       void *userdata);
uint32_t sim_radio_buffered(const struct sim_radio *r);
uint32_t sim_radio_buffered_max(const struct sim_radio *r);
/* IP bytes sent over the air so far. */
uint64_t sim_radio_sent(const struct sim_radio *r);

#endif
