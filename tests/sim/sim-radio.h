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
/* The modem buffer takes `bytes` more (an empty buffer takes anything). */
bool sim_radio_room(const struct sim_radio *r, uint32_t bytes);
/* Into the modem buffer; -ENOBUFS when the ring is full (counted as dropped by the caller). */
int sim_radio_push(struct sim_radio *r, uint8_t mux, uint8_t flags, const uint8_t *pkt, size_t len,
		   uint64_t now);
/*
 * Move packets through the radio up to `now` and deliver those due. Returns when to run
 * again (absolute ns), or 0 when nothing is left.
 */
uint64_t sim_radio_run(struct sim_radio *r, uint64_t now, sim_radio_deliver_fn deliver,
		       void *userdata);
uint32_t sim_radio_buffered(const struct sim_radio *r);
uint32_t sim_radio_buffered_max(const struct sim_radio *r);

#endif
