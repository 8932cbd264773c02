/* SPDX-License-Identifier: MIT */
/*
 * Downlink GRO: coalesce in-order TCP (and UDP) segments of one flow into one virtio-net GSO
 * super-packet that a TUN/TAP opened with IFF_VNET_HDR accepts in one writev. Pure: no I/O, no
 * allocation, no globals, no logging. Nothing is copied but headers: every emitted packet is an
 * iovec list whose first element is a small header block the module owns (virtio-net header,
 * the caller's L2 header, and for a super-packet the rewritten IP + TCP/UDP header of the first
 * segment) and whose other elements point into the caller's packets (the transfer buffers).
 *
 * Use, once per device (mux):
 *   gro_init(g, &cfg)             cfg.emit is the write: writev(fd, iov, iovcnt)
 *   for every packet of a batch:  gro_add(g, pkt, len, flags)   (may emit)
 *   at the end of the batch:      gro_flush(g)                  (emits everything held)
 * Every packet of the device goes through gro_add(), mergeable or not: one that cannot be held
 * is emitted at once, after any held packets of its own flow, so a flow is never reordered.
 *
 * Lifetime contract: gro_add() keeps pointers into pkt. The bytes must stay valid and unchanged
 * until the packet has been emitted, which is at the latest when the next gro_flush() returns;
 * so a transfer buffer may go back to the ring only after gro_flush(). The iovecs handed to
 * emit are valid only until emit returns; so is the header block of a super-packet (iovcnt
 * > 2), while a lone packet's (iovcnt == 2) is one of four built by gro_init() and lives as
 * long as g: a batched writer need not copy it.
 *
 * What merges (the kernel's tcp_gro_receive/udp_gro_receive rules, made a little stricter where
 * that costs nothing, see gro.c):
 *   TCP: same addresses and ports, seq exactly following, same ack, identical options bytes,
 *        flags ACK or ACK|PSH only (a PSH segment ends the super-packet), every segment the
 *        size of the first except the last, which may be shorter (and then ends it);
 *   UDP: same addresses and ports, same size except a shorter last one;
 *   IP:  IPv4 without options or fragmentation, same TOS, TTL and DF, IDs incrementing by one
 *        unless DF is set; IPv6 with TCP/UDP as next header (no extension headers), same
 *        traffic class, flow label and hop limit;
 *   at most max_segs segments and an IP packet of at most max_bytes (<= 65535).
 * Checksums: a segment with GRO_PKT_CSUM_VALID (the QMAPv5 valid bit) is trusted; any other
 * segment is verified in software before it is merged, and one that fails is emitted alone
 * with flags 0 so the kernel drops and counts it (TCP/UDP InCsumErrors). A super-packet is
 * emitted with VIRTIO_NET_HDR_F_NEEDS_CSUM and the pseudo-header sum in the L4 checksum field,
 * which is how the kernel's own GRO leaves one (CHECKSUM_PARTIAL): it is the only form that
 * virtio_net_hdr_to_skb() accepts for UDP_L4, local delivery treats it as verified, and
 * forwarding recomputes per-segment checksums when it segments.
 */
#ifndef QMAPD_GRO_H
#define QMAPD_GRO_H

#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "qmap.h"

#define GRO_MAX_FLOWS	 32 /* flows held at once; the oldest is emitted to make room */
#define GRO_MAX_SEGS	 64 /* segments per super-packet, as the kernel's UDP GRO limit */
#define GRO_MAX_L2_LEN	 24 /* an Ethernet header (14) and an 802.1Q tag (4), rounded */
#define GRO_MAX_VNET_HDR 12 /* struct virtio_net_hdr_mrg_rxbuf (TUNSETVNETHDRSZ 12) */
/* virtio-net + L2 + IPv6 (40, no extension headers) + TCP with the most options (60). */
#define GRO_HDR_ROOM (GRO_MAX_VNET_HDR + GRO_MAX_L2_LEN + 40 + 60)

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* Linux 4.18 UAPI; Debian 12's headers predate it */
#endif

/* Bits of gro_add()'s flags. */
#define GRO_PKT_CSUM_VALID 0x01 /* the modem verified the L4 checksum (QMAPv5 valid bit) */

enum gro_result {
	GRO_RESULT_HELD,    /* started a new flow; emitted later */
	GRO_RESULT_MERGED,  /* appended to a held flow (which may have been emitted just now) */
	GRO_RESULT_EMITTED, /* not mergeable: emitted alone before gro_add() returned */
};

/*
 * Why a packet was emitted alone at once (GRO_NM_*), or why a held flow ended before the
 * packet that arrived could join it (GRO_END_*; that packet then starts a new flow).
 */
enum gro_reason {
	GRO_NM_NOT_TCP_UDP, /* neither TCP nor UDP, or that protocol's merging is off */
	GRO_NM_MALFORMED,   /* lengths inconsistent with the buffer, truncated headers */
	GRO_NM_IP_OPTIONS,  /* IPv4 header longer than 20 bytes */
	GRO_NM_IPV6_EXT,    /* IPv6 extension header before the transport header */
	GRO_NM_FRAGMENT,    /* IPv4 fragment */
	GRO_NM_TCP_FLAGS,   /* flags other than ACK and PSH (SYN, FIN, RST, URG, ECE, CWR) */
	GRO_NM_NO_PAYLOAD,  /* no data (a pure ACK) */
	GRO_NM_BAD_CSUM,    /* failed software verification */
	GRO_NM_PSH_ALONE,   /* a PSH segment that no flow could take: nothing may follow it */
	GRO_NM_OFF,	    /* merging is switched off (ethtool -K DEV gro off) */
	GRO_NM_SKIPPED,	    /* not tried: the caller knows nothing merges (gro_alone_header) */
	GRO_END_SEQ,	    /* not the next sequence number (loss, reordering, retransmit) */
	GRO_END_HEADER,	    /* TTL/TOS/DF/ID/flow label, TCP options or ack differ */
	GRO_END_SIZE,	    /* larger than the flow's segment size */
	GRO_END_FULL,	    /* the super-packet has no room left for it */
	GRO_END_EVICT,	    /* table full: the oldest flow made room (counted per flow) */
	_GRO_REASON_MAX,
};

const char *gro_reason_name(enum gro_reason r);

struct gro_stats {
	uint64_t packets;	  /* given to gro_add() */
	uint64_t writes;	  /* emit calls */
	uint64_t super_packets;	  /* emit calls carrying two or more segments */
	uint64_t segments_merged; /* segments that went out inside a super-packet */
	uint64_t flows;		  /* flows started */
	uint64_t csum_verified;	  /* segments verified in software (no valid bit) */
	uint64_t reasons[_GRO_REASON_MAX];
};

typedef void (*gro_emit_fn)(void *userdata, const struct iovec *iov, int iovcnt);

struct gro_config {
	/* Bytes of virtio-net header the device expects: 10, or 12 after TUNSETVNETHDRSZ. */
	size_t vnet_hdr_len;
	/*
	 * L2 header put between the virtio-net header and the IP packet, up to GRO_MAX_L2_LEN:
	 * for a TAP Ethernet, qmapd's with an 802.1Q tag (l2_header[0] for IPv4 packets, [1] for
	 * IPv6, copied by gro_init), 0 for a TUN. The virtio-net csum_start/hdr_len count it, as
	 * the kernel expects.
	 */
	size_t l2_len;
	const uint8_t *l2_header[2];
	/*
	 * Optional, another L2 header for packets sent alone, selected by gro_set_alone_l2():
	 * qmapd's Ethernet header without the tag, for lone packets while XDP gives them
	 * headroom. 0: none (l2_header always).
	 */
	size_t l2_alone_len;
	const uint8_t *l2_alone_header[2];
	unsigned max_flows; /* 1..GRO_MAX_FLOWS; 0 = GRO_MAX_FLOWS */
	unsigned max_segs;  /* 2..GRO_MAX_SEGS; 0 = GRO_MAX_SEGS */
	uint32_t max_bytes; /* largest IP super-packet, 0 = 65535 */
	bool tcp;	    /* merge TCP: the device accepted TUN_F_CSUM|TUN_F_TSO4|TUN_F_TSO6 */
	bool udp;	  /* merge UDP: the device accepted TUN_F_USO4|TUN_F_USO6 (Linux >= 6.2) */
	gro_emit_fn emit; /* required */
	void *userdata;
};

struct gro_flow {
	uint8_t key[40]; /* addresses (16 + 16), ports (4), protocol, IPv6 flag, 2 zero bytes */
	uint8_t slot_in_use;
	uint8_t ipv6;
	uint8_t proto;
	uint8_t l3_len;	 /* 20 or 40 */
	uint8_t hdr_len; /* l3 + l4 header */
	uint8_t nseg;
	uint8_t first_ok;     /* first segment's checksum known good (valid bit or verified) */
	uint8_t hdr_built;    /* scratch holds the first segment's headers */
	uint16_t gso_size;    /* payload bytes of the first segment */
	uint16_t next_id;     /* IPv4: the ID the next segment must carry (unless DF) */
	uint32_t next_seq;    /* TCP: the sequence number the next segment must carry */
	uint32_t total;	      /* IP length of the super-packet so far */
	uint64_t age;	      /* creation order, for eviction and flush order */
	const uint8_t *first; /* the first segment, whole, for emitting it alone */
	uint16_t first_len;
	/* [0] = header block in scratch, [1..nseg] = payloads of the segments. */
	struct iovec iov[1 + GRO_MAX_SEGS];
	uint8_t scratch[GRO_HDR_ROOM] __attribute__((aligned(8)));
};

struct gro {
	struct gro_config cfg;
	uint8_t l2[2][GRO_MAX_L2_LEN];
	uint64_t next_age;
	unsigned n_active;
	int last; /* the flow the previous packet went to: bulk traffic hits it again */
	bool off; /* gro_set_off(): every packet goes out alone */
	/*
	 * gro_alone_header()'s per-packet path, kept short (callgrind: the lookup into single[]
	 * and three counters were 18 instructions a packet): the header blocks lone packets get
	 * now, [IPv6][checksum valid] into single[alone], and their length, set by
	 * gro_set_alone_l2(); the packets it gave a header since the last gro_flush(), which
	 * adds them to the counters.
	 */
	uint8_t *alone_blk[2][2];
	size_t alone_blk_len;
	uint64_t alone_pending;
	struct gro_flow flows[GRO_MAX_FLOWS];
	/*
	 * Header blocks for packets sent alone, [alone L2][IPv6][checksum valid]: built once,
	 * never change ([1]: with l2_alone_header). alone: which set lone packets get now.
	 */
	uint8_t single[2][2][2][GRO_MAX_VNET_HDR + GRO_MAX_L2_LEN];
	uint8_t alone;
	uint8_t single_len[2];
	struct gro_stats stats;
};

/* Set up g (which the caller allocates; it is about 40 KiB). Returns 0 or -EINVAL. */
int gro_init(struct gro *g, const struct gro_config *cfg);

/*
 * Offer one IP packet (pkt starts at the IP header; len is the packet without padding).
 * flags: GRO_PKT_*. Returns an enum gro_result; the packet is always consumed. May call emit,
 * for this packet or for held ones.
 */
enum gro_result gro_add(struct gro *g, const uint8_t *pkt, size_t len, unsigned flags);

/* The QMAP frame form: payload, len and the QMAPv5 valid bit. */
static inline enum gro_result gro_add_qmap(struct gro *g, const struct qmap_frame *f)
{
	return gro_add(g, f->payload, f->len,
		       (f->flags & QMAP_FRAME_CSUM_VALID) ? GRO_PKT_CSUM_VALID : 0);
}

/*
 * For a caller that measured that nothing merges and writes a packet alone itself, without
 * trying (counted as GRO_NM_SKIPPED, and as a packet and a write, by the next gro_flush()):
 * the header block gro_add() would put in front of it, one of the fixed ones (valid as long
 * as g). Nothing of the packet's flow may be held: use it only after a gro_flush(), for every
 * packet until the next, which must come before the counters are read.
 */
static inline struct iovec gro_alone_header(struct gro *g, bool ipv6, unsigned flags)
{
	_Static_assert(GRO_PKT_CSUM_VALID == 1, "the flag is alone_blk's index");
	g->alone_pending++;
	return (struct iovec){ .iov_base = g->alone_blk[ipv6][flags & GRO_PKT_CSUM_VALID],
			       .iov_len = g->alone_blk_len };
}

/*
 * Packets sent alone take l2_alone_header (on, if the config has one) or l2_header. The
 * blocks of both stay valid: writes queued before the switch keep theirs.
 */
static inline void gro_set_alone_l2(struct gro *g, bool on)
{
	g->alone = on && g->cfg.l2_alone_len;
	for (int v6 = 0; v6 < 2; v6++)
		for (int valid = 0; valid < 2; valid++)
			g->alone_blk[v6][valid] = g->single[g->alone][v6][valid];
	g->alone_blk_len = g->single_len[g->alone];
}

/*
 * Emit every held flow, oldest first, and count the packets gro_alone_header() gave a header
 * since the last call. Afterwards no pointer into any packet is kept.
 */
void gro_flush(struct gro *g);

/*
 * Switch merging off (every packet is then emitted alone, with the same virtio-net header a
 * non-mergeable packet gets, and counted as GRO_NM_OFF) or back on. Switching off emits what
 * is held first, so no packet is reordered by the switch.
 */
void gro_set_off(struct gro *g, bool off);

/* Flows held right now (0 after gro_flush()). */
static inline unsigned gro_pending(const struct gro *g)
{
	return g->n_active;
}

#endif
