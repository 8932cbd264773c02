/* SPDX-License-Identifier: MIT */
/*
 * Uplink GSO: split a TSO/USO super-packet read from a TUN/TAP with IFF_VNET_HDR into
 * MSS-sized IP packets, written back to back into an output buffer (the UL aggregation buffer)
 * with `reserve` bytes left free in front of each for the caller's header (the QMAP header).
 * Packets without GSO that carry VIRTIO_NET_HDR_F_NEEDS_CSUM get their checksum completed.
 * Pure: no I/O, no allocation, no logging.
 *
 * Use:
 *   gso_parse(&vh, l2_len, pkt, len, &p)   validate once; p.n_segs segments will come out
 *   n = gso_write(&p, first, flags, out, room, reserve, segs, max)   as many as fit, from
 *       segment `first`; call again with first += n into the next buffer until p.n_segs.
 *
 * Output per segment (as Linux's tcp_gso_segment/__udp_gso_segment make them): IPv4 ID of the
 * super-packet plus the segment index, total/payload length and IPv4 header checksum of the
 * segment, TCP sequence number advanced by the MSS, FIN and PSH only on the last segment, CWR
 * only on the first, UDP length per datagram, and the TCP/UDP checksum computed, or with
 * GSO_F_L4_CSUM_OFFLOAD the pseudo-header sum left in the checksum field (not complemented,
 * the CHECKSUM_PARTIAL convention) for the modem to finish: the caller then sets the QMAPv5
 * checksum-offload bit for segments whose csum_offload is true.
 *
 * Buffers: pkt and out may be disjoint, or in place: out + reserve == pkt with first == 0
 * (the packet was read into the aggregation buffer after room for one QMAP header). In place,
 * segments are produced last to first so that no byte is overwritten before it is read, and
 * gso_write() only runs when every segment fits (else -ENOBUFS, nothing touched); the space
 * needed is gso_out_size(). Any other overlap is -EINVAL.
 */
#ifndef QMAPD_GSO_H
#define QMAPD_GSO_H

#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* Linux 4.18 UAPI; Debian 12's headers predate it */
#endif

/* gso_write() flags. */
#define GSO_F_L4_CSUM_OFFLOAD 0x01 /* leave TCP/UDP checksums to the modem (QMAPv5 UL offload) */

struct gso_packet {
	const uint8_t *pkt; /* the IP packet */
	size_t len;
	uint32_t n_segs;  /* segments gso_write() will produce in all (>= 1) */
	uint16_t mss;	  /* payload bytes per segment but the last (0 when n_segs == 1) */
	uint16_t l3_len;  /* IP header bytes (IPv4 options included) */
	uint16_t hdr_len; /* IP + TCP/UDP header bytes, 0 for a packet that is not split */
	uint8_t proto;	  /* 6, 17, or whatever a non-GSO packet carries */
	bool ipv6;
	bool split;	    /* a GSO packet: segments get rewritten headers */
	bool needs_csum;    /* a checksum must be completed at csum_at */
	uint32_t csum_from; /* non-split NEEDS_CSUM: sum from here (from the IP header) ... */
	uint32_t csum_at;   /* ... and store at this offset */
	bool offloadable;   /* the pending checksum is a TCP/UDP one the modem could do */
};

struct gso_segment {
	uint32_t offset;   /* where this segment's reserve bytes start in out */
	uint32_t len;	   /* IP packet length, which starts at out + offset + reserve */
	bool csum_offload; /* the L4 checksum was left for the modem: set the QMAPv5 flag */
};

/*
 * Check a packet as read from the device: vh its virtio-net header (native byte order, the
 * tun default), l2_len the bytes of L2 header the device put before pkt (14 for a TAP, 0 for
 * a TUN; csum_start counts them). Returns 0, -EINVAL for a header that contradicts the packet
 * (wrong IP version for the GSO type, lengths, offsets outside the packet), or -EPROTONOSUPPORT
 * (a GSO type other than TCPV4/TCPV6/UDP_L4, IPv6 extension headers or IPv4 fragments in a GSO
 * packet). pkt must stay valid until the last gso_write() for it.
 */
int gso_parse(const struct virtio_net_hdr *vh, size_t l2_len, const uint8_t *pkt, size_t len,
	      struct gso_packet *ret);

/* Bytes of output all segments from `first` on need with `reserve` bytes in front of each. */
size_t gso_out_size(const struct gso_packet *p, uint32_t first, size_t reserve);

/*
 * Write segments first, first + 1, ... into out (out_room bytes) while they fit and fewer than
 * max_segs; segs[i] describes the i-th written. Returns how many were written (>= 1),
 * -ENOBUFS if not even one fits (or, in place, not all of them), -EINVAL for bad arguments.
 */
int gso_write(const struct gso_packet *p, uint32_t first, unsigned flags, uint8_t *out,
	      size_t out_room, size_t reserve, struct gso_segment *segs, unsigned max_segs);

#endif
