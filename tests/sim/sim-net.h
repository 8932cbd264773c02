/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's network side: its TUN device and the format of what goes through it. The QMAP
 * side (sim.c) decides what to read, where it goes and what it counts; this module moves the
 * bytes.
 *
 * With offload (the default) the device carries a virtio-net header and takes checksum, TSO
 * and (Linux >= 6.2) USO offloads, as qmapd's own mux devices do:
 *  - reads: the kernel hands over TSO/USO super-packets of up to 64 KiB, read into a scratch
 *    buffer and cut into MTU-sized IP packets (gso.c) straight into the caller's downlink
 *    aggregate, TCP/UDP checksums completed;
 *  - writes: the uplink packets of one batch are coalesced per mux (gro.c) into super-packets,
 *    one writev each; what cannot merge goes alone behind a zero virtio-net header.
 * Without offload: one packet per read() (into the caller's buffer) and per write().
 */
#ifndef QMAPD_SIM_NET_H
#define QMAPD_SIM_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gso.h"
#include "netdev.h"

struct rtnl;
struct sim_net;

/*
 * The outcome of uplink writes, for the caller's counters: `packets` IP packets of mux_id
 * carrying `bytes` IP bytes (a super-packet counts its segments), error 0 when written,
 * -EAGAIN when the device queue was full, another -errno when the write failed.
 */
typedef void (*sim_net_written_fn)(void *userdata, uint8_t mux_id, unsigned packets, uint64_t bytes,
				   int error);

/* Create the TUN device `name` (up, with this MTU). Returns 0 or -errno (not logged). */
int sim_net_new(struct rtnl *rtnl, const char *name, uint32_t mtu, bool offload,
		sim_net_written_fn written, void *userdata, struct sim_net **ret);
/*
 * The network's downlink buffer (a base station's, in front of --dl-rate): the TUN's queue of
 * `packets` (its transmit queue length; the kernel's default is 500). 0 or -errno.
 */
int sim_net_set_queue_len(struct sim_net *n, uint32_t packets);
/* Close the device (the kernel removes it). Held uplink packets are dropped. NULL-safe. */
struct sim_net *sim_net_free(struct sim_net *n);

const struct netdev *sim_net_device(const struct sim_net *n);
bool sim_net_offload(const struct sim_net *n);

/* What sim_net_read() found. */
enum sim_net_rx {
	SIM_NET_RX_NONE,     /* the device has nothing more */
	SIM_NET_RX_PACKET,   /* one IP packet, complete, in the caller's buffer (no offload) */
	SIM_NET_RX_SEGMENTS, /* a packet to be cut (or finished) with sim_net_segments() */
	SIM_NET_RX_INVALID,  /* a virtio-net header gso.c refuses: dropped */
};

/*
 * Read one packet. Without offload it lands in buf (room bytes); with offload in the module's
 * scratch buffer, pending until every segment is written or sim_net_discard(). Only called
 * while nothing is pending. *ret_pkt / *ret_len: the IP packet as read (for routing on its
 * addresses). Returns an enum sim_net_rx or -errno from the read.
 */
int sim_net_read(struct sim_net *n, uint8_t *buf, size_t room, const uint8_t **ret_pkt,
		 size_t *ret_len);

/* Segments of the pending packet not written yet (0: nothing pending). */
uint32_t sim_net_pending(const struct sim_net *n);

/*
 * Write the next segments of the pending packet into out (out_room bytes), `reserve` bytes in
 * front of each for the caller's header, at most max_segs; segs[i] describes the i-th. Every
 * segment but the last one written by a call is a multiple of `align` bytes long, so the
 * caller only pads the last (and keeps the room for it). Returns how many were written,
 * -ENOBUFS if not even one fits.
 */
int sim_net_segments(struct sim_net *n, uint8_t *out, size_t out_room, size_t reserve,
		     unsigned align, struct gso_segment *segs, unsigned max_segs);

/* Drop the pending packet. Returns how many segments it still had. */
uint32_t sim_net_discard(struct sim_net *n);

/*
 * Send one IP packet (len bytes at pkt) of mux_id towards the network. With offload the bytes
 * are held by reference until sim_net_flush(): they must stay valid and unchanged until then.
 * csum_valid: its TCP/UDP checksum is known to be right (the sim computed it).
 */
void sim_net_write(struct sim_net *n, uint8_t mux_id, const uint8_t *pkt, size_t len,
		   bool csum_valid);
/* Write everything held. Afterwards no pointer into the caller's packets is kept. */
void sim_net_flush(struct sim_net *n);

#endif
