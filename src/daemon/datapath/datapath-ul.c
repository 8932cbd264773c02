/* SPDX-License-Identifier: MIT */
/*
 * Uplink: mux devices read straight into the aggregates, super-packets segmented into them,
 * aggregates sent when full or when no device has more.
 *
 * A mux with uplink-queue = fq-codel (ulq.h) is read whenever it has packets, so the kernel's
 * TUN/TAP ring never holds a standing queue. While nothing is queued, the bytes in flight are
 * under their limit and the shaper allows, a packet still goes straight into the aggregate
 * (the zero-copy path); otherwise it is read into a queue slot, and datapath_ulq_drain()
 * moves packets from the queue into aggregates (one copy) as far as the limit and the
 * shaper allow. A fifo mux is read only while OUT transfers are free and, where fq-codel muxes
 * share the modem, the bytes in flight are under their limit. Which devices are read at all
 * is the uplink reader's state (ul-reader.h).
 *
 * With NTB framing (MBIM) the same paths put each packet where the NTB builder wants the
 * session's next datagram instead of after a QMAP header; ntb_build_finish() writes the NTH
 * and the NDPs when the aggregate leaves.
 */

#include <assert.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>
#include <sys/uio.h>

#include "datapath-internal.h"
#include "datapath.h"
#include "gso.h"
#include "log-mux.h"

#define UL_READ_BUDGET 64 /* packets read from one device per wakeup: fairness between muxes */

static bool datapath_ul_may_send(struct datapath *dp, uint64_t now);
static void datapath_ntb_segment_resume(struct datapath *dp);
static bool mux_ul_read_ntb(struct datapath *dp, struct mux *m);
static void mux_ulq_queue_segments(struct datapath *dp, struct mux *m, const struct gso_packet *p,
				   uint32_t first, uint32_t slot, uint64_t now);

/* ---- uplink ------------------------------------------------------------------------ */

void datapath_ul_flush(struct datapath *dp)
{
	struct transport_out *out = dp->ul_out;

	if (!out)
		return;
	if (datapath_is_ntb(dp) && dp->ul_frames > 0)
		datapath_ntb_ul_finish(dp); /* the NTH and the NDPs around the datagrams */
	dp->ul_out = NULL;
	if (dp->ul_frames == 0) {
		transport_out_put(dp->transport, out);
		return;
	}
	dp->stats.ul_aggregates++;
	dp->stats.ul_datagrams += dp->ul_frames;
	dp->ul_frames = 0;
	ulq_dql_queued(&dp->dql, (uint32_t)out->len);
	if (transport_out_submit(dp->transport, out) < 0)
		dp->stats.ul_submit_errors++;
}

static struct transport_out *datapath_ul_room_keep(struct datapath *dp, uint32_t need,
						   uint32_t keep)
{
	bool ntb = datapath_is_ntb(dp);

	if (dp->ul_out &&
	    (ntb ? datapath_ntb_ul_room_any(dp) < need : dp->ul_max_size - dp->ul_out->len < need))
		datapath_ul_flush(dp);
	if (!dp->ul_out) {
		dp->ul_out = transport_out_get_keep(dp->transport, keep);
		if (!dp->ul_out)
			return NULL;
		dp->ul_frames = 0;
		if (ntb && datapath_ntb_ul_start(dp) < 0) {
			/* Cannot happen with parameters ntb_params_parse() corrected. */
			transport_out_put(dp->transport, dp->ul_out);
			dp->ul_out = NULL;
			return NULL;
		}
	}
	return dp->ul_out;
}

/*
 * The current aggregate, with room for `need` more bytes. Data never takes the last free OUT
 * buffer: a command ACK (FLOW_DISABLE's above all) must not wait behind a full uplink, or
 * the modem retries and, with 32 unanswered, ACKs are dropped.
 */
static uint32_t datapath_ul_keep(const struct datapath *dp)
{
	return dp->transport->n_out > 1 ? 1 : 0;
}

struct transport_out *datapath_ul_room(struct datapath *dp, uint32_t need)
{
	return datapath_ul_room_keep(dp, need, datapath_ul_keep(dp));
}

/* The same for command ACKs: every OUT buffer, the reserved one too. */
struct transport_out *datapath_ul_room_control(struct datapath *dp, uint32_t need)
{
	return datapath_ul_room_keep(dp, need, 0);
}

/* An IPv4/IPv6 packet, and with a TAP (eth != NULL) the Ethernet type that says so. */
static bool packet_is_ip(const uint8_t *eth, const uint8_t *ip, size_t len)
{
	if (len == 0)
		return false;
	unsigned version = ip[0] >> 4;
	if (!eth)
		return version == 4 || version == 6;
	if (eth[12] == 0x08 && eth[13] == 0x00)
		return version == 4;
	if (eth[12] == 0x86 && eth[13] == 0xdd)
		return version == 6;
	return false;
}

/*
 * Segments of one packet read with a virtio-net header (a TSO/USO super-packet, or a packet
 * whose checksum the kernel left to us) into the aggregates, as many as it takes.
 */
static void mux_ul_segment(struct datapath *dp, struct mux *m, const struct virtio_net_hdr *vh,
			   uint8_t *pkt, size_t len, bool in_place)
{
	struct gso_packet *p = &dp->ul_gso;
	size_t l2 = m->nd.kind == NETDEV_KIND_TAP_XDP ? ETH_HEADER_SIZE : 0;

	if (gso_parse(vh, l2, pkt, len, p) < 0) {
		m->stats.tx_dropped_bad_gso++;
		return;
	}
	/* In place works only if every segment fits the current aggregate at once. */
	if (in_place &&
	    (gso_out_size(p, 0, dp->ul_header_size) > dp->ul_max_size - dp->ul_out->len ||
	     p->n_segs > dp->ul_max_datagrams - dp->ul_frames)) {
		memcpy(dp->ul_scratch, pkt, len);
		if (gso_parse(vh, l2, dp->ul_scratch, len, p) < 0)
			return;
		in_place = false;
	}
	dp->ul_gso_mux = m;
	dp->ul_gso_first = 0;
	dp->ul_gso_in_place = in_place;
	datapath_ul_segment_resume(dp);
}

/*
 * Write the segments of the pending super-packet (dp->ul_gso, in scratch or in place) into
 * aggregates. Without a free OUT buffer it stays pending, reading stops, and on_out_ready
 * resumes here: a super-packet is never cut short.
 */
void datapath_ul_segment_resume(struct datapath *dp)
{
	struct gso_packet *p = &dp->ul_gso;
	struct mux *m = dp->ul_gso_mux;
	struct gso_segment segs[64];
	unsigned flags = datapath_ul_gso_flags(dp);

	if (datapath_is_ntb(dp)) {
		datapath_ntb_segment_resume(dp);
		return;
	}
	while (m && dp->ul_gso_first < p->n_segs) {
		struct transport_out *out = datapath_ul_room(dp, dp->ul_header_size + m->mtu);
		if (!out) {
			ul_reader_set_state(dp, UL_READER_FIFO, UL_READER_WAIT_OUT,
					    "a super-packet waits for an OUT transfer");
			return;
		}
		unsigned max = dp->ul_max_datagrams - dp->ul_frames;
		int n = gso_write(p, dp->ul_gso_first, flags, out->data + out->len,
				  dp->ul_max_size - out->len, dp->ul_header_size, segs,
				  max < ARRAY_SIZE(segs) ? max : ARRAY_SIZE(segs));
		if (n == -ENOBUFS && !dp->ul_gso_in_place && dp->ul_frames > 0) {
			datapath_ul_flush(dp);
			continue;
		}
		if (n < 0) {
			m->stats.tx_dropped_bad_gso += p->n_segs - dp->ul_gso_first;
			break;
		}
		dp->ul_gso_in_place = false; /* after the first call pkt is only read from */
		for (int i = 0; i < n; i++) {
			qmap_write_data_header(out->data + out->len + segs[i].offset, dp->version,
					       m->id, segs[i].len, 0, segs[i].csum_offload);
			m->stats.tx_packets++;
			m->stats.tx_bytes += segs[i].len;
		}
		out->len += segs[n - 1].offset + dp->ul_header_size + segs[n - 1].len;
		if (p->split)
			m->stats.tx_gso_segments += n;
		dp->ul_gso_first += n;
		dp->ul_frames += n;
		if (dp->ul_frames >= dp->ul_max_datagrams)
			datapath_ul_flush(dp);
	}
	dp->ul_gso_mux = NULL;
}

/*
 * Queue segments first.. of a parsed packet, one slot each; `slot` (reserved, or ULQ_NONE)
 * takes the first. The packet must not lie in a slot other than that one.
 */
static void mux_ulq_queue_segments(struct datapath *dp, struct mux *m, const struct gso_packet *p,
				   uint32_t first, uint32_t slot, uint64_t now)
{
	struct ulq *q = dp->ulq;
	unsigned flags = datapath_ul_gso_flags(dp);
	struct gso_segment seg;

	for (uint32_t i = first; i < p->n_segs; i++) {
		if ((i > first || slot == ULQ_NONE) && (slot = ulq_reserve(q)) == ULQ_NONE) {
			/* Cannot happen: the slots taken so far are committed (ulq.h). */
			assert(false && "ulq_reserve() found no slot to free");
			m->stats.tx_dropped_bad_gso += p->n_segs - i;
			return;
		}
		/* One segment, in place when it is the packet itself (out == pkt, reserve 0). */
		if (gso_write(p, i, flags, ulq_slot_data(q, slot), ULQ_SLOT_SIZE, 0, &seg, 1) !=
		    1) {
			m->stats.tx_dropped_bad_gso += p->n_segs - i;
			ulq_cancel(q, slot);
			return;
		}
		ulq_commit(m->ulq, slot, seg.len, seg.csum_offload, now);
		if (p->split)
			m->stats.tx_gso_segments++;
	}
}

/*
 * A super-packet read while nothing waits (pkt in the aggregate, or joined in ul_scratch):
 * its segments go straight into aggregates while the in-flight limit and the shaper allow,
 * in place when they all fit the current one, as a fifo mux does; the rest is queued per
 * segment behind them, so one 64 KiB burst cannot starve a small flow.
 */
static void mux_ulq_super_packet(struct datapath *dp, struct mux *m,
				 const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len)
{
	size_t l2 = m->nd.kind == NETDEV_KIND_TAP_XDP ? ETH_HEADER_SIZE : 0;
	unsigned flags = datapath_ul_gso_flags(dp);
	uint64_t now = datapath_now_ns(dp);
	struct transport_out *out = dp->ul_out;
	struct gso_segment segs[64];
	struct gso_packet p;
	uint32_t i = 0;

	if (gso_parse(vh, l2, pkt, len, &p) < 0) {
		m->stats.tx_dropped_bad_gso++;
		return;
	}
	bool in_place = pkt != dp->ul_scratch &&
			gso_out_size(&p, 0, dp->ul_header_size) <= dp->ul_max_size - out->len &&
			p.n_segs <= dp->ul_max_datagrams - dp->ul_frames;
	if (!in_place && pkt != dp->ul_scratch) {
		memcpy(dp->ul_scratch, pkt, len);
		if (gso_parse(vh, l2, dp->ul_scratch, len, &p) < 0)
			return;
	}
	while (i < p.n_segs && datapath_ul_may_send(dp, now)) {
		out = datapath_ul_room(dp, dp->ul_header_size + m->mtu);
		if (!out)
			break;
		unsigned max = dp->ul_max_datagrams - dp->ul_frames;
		int n = gso_write(&p, i, flags, out->data + out->len, dp->ul_max_size - out->len,
				  dp->ul_header_size, segs,
				  max < ARRAY_SIZE(segs) ? max : ARRAY_SIZE(segs));
		if (n == -ENOBUFS && !in_place && dp->ul_frames > 0) {
			datapath_ul_flush(dp);
			continue;
		}
		if (n < 0) {
			m->stats.tx_dropped_bad_gso += p.n_segs - i;
			return;
		}
		in_place = false;
		for (int k = 0; k < n; k++) {
			qmap_write_data_header(out->data + out->len + segs[k].offset, dp->version,
					       m->id, segs[k].len, 0, segs[k].csum_offload);
			m->stats.tx_packets++;
			m->stats.tx_bytes += segs[k].len;
			ulq_shaper_sent(&dp->shaper, (uint32_t)(dp->ul_header_size + segs[k].len),
					now);
		}
		out->len += segs[n - 1].offset + dp->ul_header_size + segs[n - 1].len;
		if (p.split)
			m->stats.tx_gso_segments += n;
		i += n;
		dp->ul_frames += n;
		if (dp->ul_frames >= dp->ul_max_datagrams)
			datapath_ul_flush(dp);
	}
	/* The source is the aggregate's free tail or ul_scratch: neither is a slot. */
	mux_ulq_queue_segments(dp, m, &p, i, ULQ_NONE, now);
}

/*
 * Queue a packet read with a virtio-net header (a super-packet, or a checksum left to us) as
 * its segments, one slot each, behind the mux's flows. `slot` is reserved and becomes the
 * first segment; pkt may lie in it (then len <= ULQ_SLOT_SIZE) or in ulq_scratch.
 */
static void mux_ulq_segments(struct datapath *dp, struct mux *m, const struct virtio_net_hdr *vh,
			     const uint8_t *pkt, size_t len, uint32_t slot, uint64_t now)
{
	struct ulq *q = dp->ulq;
	size_t l2 = m->nd.kind == NETDEV_KIND_TAP_XDP ? ETH_HEADER_SIZE : 0;
	struct gso_packet p;

	if (gso_parse(vh, l2, pkt, len, &p) < 0) {
		m->stats.tx_dropped_bad_gso++;
		ulq_cancel(q, slot);
		return;
	}
	if (p.n_segs > 1 && pkt == ulq_slot_data(q, slot)) {
		/* The segments are written into slots, the first into this one: move out. */
		memcpy(dp->ulq_scratch, pkt, len);
		if (gso_parse(vh, l2, dp->ulq_scratch, len, &p) < 0) {
			ulq_cancel(q, slot);
			return;
		}
	}
	mux_ulq_queue_segments(dp, m, &p, 0, slot, now);
}

enum ul_read {
	UL_READ_NONE,	 /* the device has no more (or failed: logged) */
	UL_READ_DROPPED, /* a packet that cannot go, counted */
	UL_READ_OK,
};

/*
 * Read one packet from m's device: its virtio-net header into *vh, a TAP's Ethernet header
 * into eth, the IP packet into ip[0..room) and, with a virtio-net header, the rest of a
 * super-packet into spill. What cannot be sent is dropped and counted here.
 */
static inline enum ul_read mux_ul_readv(struct datapath *dp, struct mux *m,
					struct virtio_net_hdr *vh, uint8_t *eth, uint8_t *ip,
					size_t room, uint8_t *spill, size_t spill_len,
					size_t *ret_len)
{
	bool tap = m->nd.kind == NETDEV_KIND_TAP_XDP;
	bool vnet = m->nd.vnet_hdr_len != 0;
	struct iovec iov[4];
	int iovcnt = 0;

	if (vnet)
		iov[iovcnt++] = (struct iovec){ vh, sizeof(*vh) };
	if (tap)
		iov[iovcnt++] = (struct iovec){ eth, ETH_HEADER_SIZE };
	iov[iovcnt++] = (struct iovec){ ip, room };
	if (vnet)
		iov[iovcnt++] = (struct iovec){ spill, spill_len };
	ssize_t n = readv(m->nd.fd, iov, iovcnt);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			log_mux_warning_errno(NULL, m->id, m->nd.name, errno, "read failed");
		return UL_READ_NONE;
	}
	size_t head = (vnet ? sizeof(*vh) : 0) + (tap ? ETH_HEADER_SIZE : 0);
	size_t len = (size_t)n > head ? (size_t)n - head : 0;
	if (_unlikely_(!vnet && len > room)) {
		m->stats.tx_dropped_too_big++;
		return UL_READ_DROPPED;
	}
	if (_unlikely_(!packet_is_ip(tap ? eth : NULL, ip, len))) {
		m->stats.tx_dropped_not_ip++;
		return UL_READ_DROPPED;
	}
	if (_unlikely_(!dp->modem_up || !m->link_up)) {
		m->stats.tx_dropped_link_down++;
		return UL_READ_DROPPED;
	}
	*ret_len = len;
	return UL_READ_OK;
}

/*
 * Read one packet into the aggregate: the IP packet lands right after room for its QMAP
 * header. With a virtio-net header, a super-packet longer than the room left spills into
 * scratch and is segmented from there (segmenting copies anyway); for an fq-codel mux its
 * segments are queued. Returns false when the device has no more.
 */
static bool mux_ul_read(struct datapath *dp, struct mux *m, struct transport_out *out)
{
	if (datapath_is_ntb(dp))
		return mux_ul_read_ntb(dp, m);
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	uint8_t eth[ETH_HEADER_SIZE];
	uint8_t *ip = out->data + out->len + dp->ul_header_size;
	size_t room = dp->ul_max_size - out->len - dp->ul_header_size;

	size_t len;
	enum ul_read rd = mux_ul_readv(dp, m, &vh, eth, ip, room, dp->ul_scratch + room,
				       DATAPATH_UL_SCRATCH - room, &len);
	if (rd != UL_READ_OK)
		return rd == UL_READ_DROPPED;
	if (len <= room && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
	    !(vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
		/* The common small packet: already in place, only the QMAP header is missing. */
		qmap_write_data_header(out->data + out->len, dp->version, m->id, len, 0, false);
		out->len += dp->ul_header_size + len;
		m->stats.tx_packets++;
		m->stats.tx_bytes += len;
		if (m->ulq)
			ulq_shaper_sent(&dp->shaper, (uint32_t)(dp->ul_header_size + len),
					datapath_now_ns(dp));
		if (++dp->ul_frames >= dp->ul_max_datagrams)
			datapath_ul_flush(dp);
		return true;
	}
	if (m->ulq && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE && len <= room) {
		/* One packet whose checksum the kernel left to us: completed in place. */
		mux_ul_segment(dp, m, &vh, ip, len, true);
		ulq_shaper_sent(&dp->shaper, (uint32_t)(dp->ul_header_size + len),
				datapath_now_ns(dp));
		return true;
	}
	if (m->ulq) {
		/* ul_scratch is free: no fifo super-packet is pending (mux_ulq_read). */
		if (len > room)
			memcpy(dp->ul_scratch, ip, room); /* join the two parts */
		mux_ulq_super_packet(dp, m, &vh, len > room ? dp->ul_scratch : ip, len);
		return true;
	}
	if (len <= room) {
		mux_ul_segment(dp, m, &vh, ip, len, true);
		return true;
	}
	memcpy(dp->ul_scratch, ip, room); /* join the two parts of the super-packet */
	mux_ul_segment(dp, m, &vh, dp->ul_scratch, len, false);
	return true;
}

/*
 * NTB framing: segments of the pending super-packet (dp->ul_gso, always in ul_scratch), one
 * datagram at a time where the builder wants each (the divisor and remainder leave gaps that
 * gso_write()'s back-to-back layout does not know). Waits like the QMAP path without buffers.
 */
static void datapath_ntb_segment_resume(struct datapath *dp)
{
	struct gso_packet *p = &dp->ul_gso;
	struct mux *m = dp->ul_gso_mux;

	while (m && dp->ul_gso_first < p->n_segs) {
		struct transport_out *out = datapath_ul_room(dp, m->mtu);
		if (!out) {
			ul_reader_set_state(dp, UL_READER_FIFO, UL_READER_WAIT_OUT,
					    "a super-packet waits for an OUT transfer");
			return;
		}
		uint8_t *dst;
		struct gso_segment seg;
		int room = ntb_build_room(&dp->ul_ntb, datapath_mux_session(m), &dst);
		int n = room > 0 ? gso_write(p, dp->ul_gso_first, 0, dst, (size_t)room, 0, &seg, 1)
				 : -ENOBUFS;
		if (n == -ENOBUFS && dp->ul_frames > 0) {
			datapath_ul_flush(dp);
			continue;
		}
		if (n != 1 || ntb_build_commit(&dp->ul_ntb, datapath_mux_session(m), seg.len) < 0) {
			m->stats.tx_dropped_bad_gso += p->n_segs - dp->ul_gso_first;
			break;
		}
		m->stats.tx_packets++;
		m->stats.tx_bytes += seg.len;
		if (m->ulq)
			ulq_shaper_sent(&dp->shaper, seg.len, datapath_now_ns(dp));
		if (p->split)
			m->stats.tx_gso_segments++;
		dp->ul_gso_first++;
		if (++dp->ul_frames >= dp->ul_max_datagrams || ntb_build_full(&dp->ul_ntb))
			datapath_ul_flush(dp);
	}
	dp->ul_gso_mux = NULL;
}

/*
 * mux_ul_read() for NTB framing: the IP packet lands where the builder puts the session's
 * next datagram, and is committed in place. A packet the kernel left work on (checksum,
 * segmentation) is finished in place when it is one packet, else segmented from ul_scratch:
 * straight into NTBs for a fifo mux, into the queue for an fq-codel one.
 */
static bool mux_ul_read_ntb(struct datapath *dp, struct mux *m)
{
	bool tap = m->nd.kind == NETDEV_KIND_TAP_XDP;
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	uint8_t eth[ETH_HEADER_SIZE];
	uint8_t session = datapath_mux_session(m);
	uint8_t *ip;
	int r = ntb_build_room(&dp->ul_ntb, session, &ip);
	size_t room = r > 0 ? (size_t)r : 0;

	if (room == 0) {
		/* The NTB has no NDP left for another session (datapath_ul_room() leaves room
		 * for any, so this is the session limit): send it, read next time. */
		datapath_ul_flush(dp);
		return true;
	}
	size_t len;
	enum ul_read rd = mux_ul_readv(dp, m, &vh, eth, ip, room, dp->ul_scratch + room,
				       DATAPATH_UL_SCRATCH - room, &len);
	if (rd != UL_READ_OK)
		return rd == UL_READ_DROPPED;
	size_t l2 = tap ? ETH_HEADER_SIZE : 0;
	struct gso_packet p;
	if (len <= room && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
	    (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
		/* One packet whose checksum the kernel left to us: completed in place. */
		struct gso_segment seg;
		if (gso_parse(&vh, l2, ip, len, &p) < 0 ||
		    gso_write(&p, 0, 0, ip, room, 0, &seg, 1) != 1) {
			m->stats.tx_dropped_bad_gso++;
			return true;
		}
		len = seg.len;
	} else if (len > room || vh.gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		/* A super-packet: joined in ul_scratch (free: no segmentation is pending). */
		if (len > room)
			memcpy(dp->ul_scratch, ip, room);
		else
			memcpy(dp->ul_scratch, ip, len);
		if (m->ulq) {
			if (gso_parse(&vh, l2, dp->ul_scratch, len, &p) < 0) {
				m->stats.tx_dropped_bad_gso++;
				return true;
			}
			mux_ulq_queue_segments(dp, m, &p, 0, ULQ_NONE, datapath_now_ns(dp));
			return true;
		}
		if (gso_parse(&vh, l2, dp->ul_scratch, len, &dp->ul_gso) < 0) {
			m->stats.tx_dropped_bad_gso++;
			return true;
		}
		dp->ul_gso_mux = m;
		dp->ul_gso_first = 0;
		dp->ul_gso_in_place = false;
		datapath_ntb_segment_resume(dp);
		return true;
	}
	/* The common small packet: already in place, the NDP entry comes at the end. */
	if (ntb_build_commit(&dp->ul_ntb, session, len) < 0) {
		m->stats.tx_dropped_too_big++;
		return true;
	}
	m->stats.tx_packets++;
	m->stats.tx_bytes += len;
	if (m->ulq)
		ulq_shaper_sent(&dp->shaper, (uint32_t)len, datapath_now_ns(dp));
	if (++dp->ul_frames >= dp->ul_max_datagrams || ntb_build_full(&dp->ul_ntb))
		datapath_ul_flush(dp);
	return true;
}

/* Read one packet of an fq-codel mux into a queue slot. Returns false when there is no more. */
static bool mux_ul_read_queued(struct datapath *dp, struct mux *m, uint64_t now)
{
	struct ulq *q = dp->ulq;
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	uint8_t eth[ETH_HEADER_SIZE];
	uint32_t slot = ulq_reserve(q);
	size_t len;

	/* A slot is always free or freeable: the loop holds no other slot across reads. */
	assert(slot != ULQ_NONE);
	if (slot == ULQ_NONE)
		return false;
	uint8_t *ip = ulq_slot_data(q, slot);
	enum ul_read rd =
		mux_ul_readv(dp, m, &vh, eth, ip, ULQ_SLOT_SIZE, dp->ulq_scratch + ULQ_SLOT_SIZE,
			     DATAPATH_UL_SCRATCH - ULQ_SLOT_SIZE, &len);
	if (rd != UL_READ_OK) {
		ulq_cancel(q, slot);
		return rd == UL_READ_DROPPED;
	}
	if (len <= ULQ_SLOT_SIZE && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
	    !(vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
		ulq_commit(m->ulq, slot, (uint32_t)len, 0, now);
		return true;
	}
	if (len <= ULQ_SLOT_SIZE) {
		mux_ulq_segments(dp, m, &vh, ip, len, slot, now);
		return true;
	}
	memcpy(dp->ulq_scratch, ip, ULQ_SLOT_SIZE); /* join the two parts of the super-packet */
	mux_ulq_segments(dp, m, &vh, dp->ulq_scratch, len, slot, now);
	return true;
}

/* Bytes in flight plus the aggregate being filled stay within the limit. */
static bool datapath_ul_inflight_ok(struct datapath *dp)
{
	datapath_ul_sync_completions(dp);
	int64_t filling = dp->ul_out ? (int64_t)dp->ul_out->len : 0;
	int64_t inflight = (int64_t)ulq_dql_inflight(&dp->dql) + filling;

	if ((int64_t)ulq_dql_avail(&dp->dql) - filling < 0)
		return false;
	return inflight == 0 ||
	       inflight < ulq_rate_cap(&dp->ul_rate, DATAPATH_INFLIGHT_NS, CONFIG_MTU_DEFAULT);
}

/* Within the in-flight limit, and the shaper allows. */
static bool datapath_ul_may_send(struct datapath *dp, uint64_t now)
{
	if (!datapath_ul_inflight_ok(dp))
		return false;
	uint64_t wait = ulq_shaper_wait(&dp->shaper, now);
	if (wait) {
		if (!ev_is_active(&dp->shaper_timer)) {
			ev_timer_set(&dp->shaper_timer, (double)wait / 1e9, 0.);
			ev_timer_start(dp->loop, &dp->shaper_timer);
		}
		return false;
	}
	return true;
}

/*
 * The queue reads eagerly (and takes what cannot go at once) unless the modem is faster than
 * DATAPATH_ULQ_MANAGED_MAX_BPS and no shaper is set; benchmarks may force it.
 */
static bool datapath_ulq_managed(const struct datapath *dp)
{
	return dp->shaper.rate_bps != 0 || dp->ul_rate.bps <= DATAPATH_ULQ_MANAGED_MAX_BPS ||
	       dp->ul_force_queue;
}

/* A packet read now could go straight into an aggregate. */
static bool datapath_ulq_direct(struct datapath *dp, uint64_t now)
{
	/* Packets of a mux the modem stopped wait, but must not stop the others' reads. */
	return (dp->ulq->packets == 0 || !ulq_sendable(dp->ulq)) && !dp->ul_gso_mux &&
	       datapath_ul_may_send(dp, now) &&
	       (dp->ul_out || dp->transport->n_out_free > datapath_ul_keep(dp));
}

enum ulq_read_result {
	ULQ_READ_MORE,	/* the budget ran out: the device may have more */
	ULQ_READ_EMPTY, /* the device has no more */
	ULQ_READ_STOP,	/* nothing more can go (paused) or the queue is full: devices wait */
};

static enum ulq_read_result mux_ulq_read(struct datapath *dp, struct mux *m, int budget);

static enum ulq_read_result mux_fifo_read(struct datapath *dp, struct mux *m, int budget);

/*
 * Reads resume after every mux of a kind (fq-codel passing through, or fifo) waited: one
 * packet from each in turn until nothing more can go, starting after the mux served last.
 * Resuming all devices at once would let the one the loop polls first take every freed
 * transfer and stop the others again, every time.
 */
static void datapath_ul_round_robin(struct datapath *dp, bool ulq)
{
	uint8_t ids[ARRAY_SIZE(dp->mux)];
	unsigned n = 0, first = 0;

	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++) {
		struct mux *m = dp->mux[id];
		if (!m || !m->ulq != !ulq || m->flow_off || !dp->modem_seen)
			continue;
		if (id < dp->ul_rr_next)
			first = n + 1;
		ids[n++] = (uint8_t)id;
	}
	for (unsigned i = first; n > 0; i++) {
		if (i >= n)
			i = 0;
		struct mux *m = dp->mux[ids[i]];
		enum ulq_read_result r = ulq ? mux_ulq_read(dp, m, 1) : mux_fifo_read(dp, m, 1);
		if (r == ULQ_READ_STOP)
			return;
		if (r == ULQ_READ_EMPTY) {
			memmove(&ids[i], &ids[i + 1], n - i - 1);
			n--;
			i--; /* the next one moved into i */
		} else {
			dp->ul_rr_next = ids[i] + 1u;
		}
	}
}

/*
 * Paused: read again once a packet can go straight in (or the queue is managed again), the
 * muxes in turn; a turn may pause the reader again at once.
 */
static void datapath_ulq_check_paused(struct datapath *dp)
{
	if (dp->ul_reader[UL_READER_FQ_CODEL] != UL_READER_PAUSED)
		return;
	bool managed = datapath_ulq_managed(dp);
	if (!managed && !datapath_ulq_direct(dp, datapath_now_ns(dp)))
		return;
	ul_reader_set_state(dp, UL_READER_FQ_CODEL, UL_READER_READING,
			    managed ? "queue managed again" : "a packet can go straight in");
	/* The check may have taken completions in: the estimate may say managed now. */
	if (!datapath_ulq_managed(dp))
		datapath_ul_round_robin(dp, true);
}

/*
 * Read the fq-codel devices again once the queue is half empty, or when what it holds
 * cannot leave anyway (muxes the modem stopped): then the byte limit drops, not the wait.
 */
static void datapath_ulq_check_full(struct datapath *dp)
{
	struct ulq *q = dp->ulq;

	if (dp->ul_reader[UL_READER_FQ_CODEL] != UL_READER_QUEUE_FULL)
		return;
	if (q->n_free > q->params.slots / 2 && q->backlog < q->params.limit_bytes / 2)
		ul_reader_set_state(dp, UL_READER_FQ_CODEL, UL_READER_READING, "queue half empty");
	else if (!ulq_sendable(q))
		ul_reader_set_state(dp, UL_READER_FQ_CODEL, UL_READER_READING,
				    "queued packets cannot leave");
}

static void datapath_ulq_drain(struct datapath *dp);

/* The queue: what the limits let go leaves; the fq-codel reader resumes when it may. */
static void datapath_ulq_drain_and_resume(struct datapath *dp)
{
	if (!dp->ulq)
		return;
	datapath_ulq_check_full(dp);
	datapath_ulq_drain(dp);
	datapath_ulq_check_paused(dp);
}

/*
 * Where the modem also carries fq-codel muxes, fifo packets wait in the kernel beyond the
 * in-flight limit: a fifo mux filling every OUT transfer kept the limit exceeded, so the
 * queue never drained (another mux's ping waited seconds), and even yielding only while
 * fq-codel packets waited left them behind every transfer the fifo had filled meanwhile. A
 * fifo mux may bloat its own latency (in its device's ring), never another mux's.
 */
static bool datapath_ul_fifo_yields(struct datapath *dp)
{
	return dp->ulq && !datapath_ul_inflight_ok(dp);
}

void datapath_ul_prepare(struct datapath *dp)
{
	bool resume = dp->ul_reader[UL_READER_FIFO] == UL_READER_RESUME;

	/*
	 * Both kinds want the room freed in flight: the queue's drain and the fifo turns go
	 * first in turn, or whichever always went first would take all of it.
	 */
	if (resume && dp->ulq && dp->ulq->packets > 0) {
		dp->ul_ulq_first = !dp->ul_ulq_first;
		if (dp->ul_ulq_first)
			datapath_ulq_drain_and_resume(dp);
	}
	if (resume) {
		/* Fifo muxes take turns before their devices are polled again; a turn may find
		 * every transfer in flight again (WAIT_OUT). */
		ul_reader_set_state(dp, UL_READER_FIFO, UL_READER_READING, "OUT transfers freed");
		datapath_ul_round_robin(dp, false);
	}
	datapath_ulq_drain_and_resume(dp);
}

/* Move queued packets into aggregates while the in-flight limit and the shaper allow. */
static void datapath_ulq_drain(struct datapath *dp)
{
	struct ulq *q = dp->ulq;

	if (q->packets == 0 || !dp->modem_up)
		return;
	uint64_t now = datapath_now_ns(dp);
	while (datapath_ul_may_send(dp, now)) {
		/* Room for the largest slot; on_out_ready brings us back when none is free. */
		struct transport_out *out =
			datapath_ul_room(dp, dp->ul_header_size + ULQ_SLOT_SIZE);
		if (!out)
			return;
		uint32_t slot = ulq_dequeue(q, now);
		if (slot == ULQ_NONE)
			return;
		uint32_t len = ulq_slot_len(q, slot);
		struct mux *m = dp->mux[ulq_slot_mux(q, slot)];
		if (datapath_is_ntb(dp)) {
			/* Room for a slot in any session was made above. */
			uint8_t *dst;
			if (ntb_build_reserve(&dp->ul_ntb, datapath_mux_session(m), len, &dst) <
			    0) {
				ulq_release(q, slot);
				m->stats.tx_dropped_too_big++;
				continue;
			}
			memcpy(dst, ulq_slot_data(q, slot), len);
		} else {
			qmap_write_data_header(out->data + out->len, dp->version, m->id, len, 0,
					       ulq_slot_flags(q, slot) != 0);
			memcpy(out->data + out->len + dp->ul_header_size, ulq_slot_data(q, slot),
			       len);
			out->len += dp->ul_header_size + len;
		}
		ulq_release(q, slot);
		m->stats.tx_packets++;
		m->stats.tx_bytes += len;
		ulq_shaper_sent(&dp->shaper, (uint32_t)(dp->ul_header_size + len), now);
		if (++dp->ul_frames >= dp->ul_max_datagrams ||
		    (datapath_is_ntb(dp) && ntb_build_full(&dp->ul_ntb)))
			datapath_ul_flush(dp);
		datapath_ulq_check_full(dp);
	}
}

/*
 * An fq-codel mux: straight into the aggregate while nothing waits, else into the queue; at
 * most budget packets.
 */
static enum ulq_read_result mux_ulq_read(struct datapath *dp, struct mux *m, int budget)
{
	struct ulq *q = dp->ulq;
	uint64_t now = datapath_now_ns(dp);

	for (; budget > 0; budget--) {
		bool ok;
		if (!datapath_ulq_managed(dp) && !datapath_ulq_direct(dp, now)) {
			/* Queued packets leave first; if still nothing can go, the kernel holds. */
			datapath_ulq_drain(dp);
			if (!datapath_ulq_direct(dp, now)) {
				ul_reader_set_state(dp, UL_READER_FQ_CODEL, UL_READER_PAUSED,
						    "passing through, nothing can go");
				return ULQ_READ_STOP;
			}
		}
		if ((q->packets == 0 || !ulq_sendable(q)) && !dp->ul_gso_mux &&
		    !dp->ul_force_queue && datapath_ul_may_send(dp, now)) {
			struct transport_out *out =
				datapath_ul_room(dp, dp->ul_header_size + m->mtu);
			ok = out ? mux_ul_read(dp, m, out) : mux_ul_read_queued(dp, m, now);
		} else {
			ok = mux_ul_read_queued(dp, m, now);
			/* What the limits let go leaves now, not after every device was read. */
			datapath_ulq_drain_and_resume(dp);
		}
		if (!ok)
			return ULQ_READ_EMPTY;
		/*
		 * A read may queue a 64 KiB super-packet (44 slots): with the queue three
		 * quarters full the devices wait until it is half empty again, so a burst of
		 * reads never overflows it by itself (the byte limit and its fattest-flow drops
		 * are for senders that do not slow down when CoDel drops).
		 */
		if (q->n_free < q->params.slots / 4 || q->backlog > q->params.limit_bytes / 4 * 3) {
			ul_reader_set_state(dp, UL_READER_FQ_CODEL, UL_READER_QUEUE_FULL,
					    "queue three quarters full");
			return ULQ_READ_STOP;
		}
	}
	return ULQ_READ_MORE;
}

/* A fifo mux: at most budget packets straight into the aggregates while transfers are free. */
static enum ulq_read_result mux_fifo_read(struct datapath *dp, struct mux *m, int budget)
{
	for (; budget > 0; budget--) {
		if (dp->ul_gso_mux)
			return ULQ_READ_STOP; /* a super-packet waits for transfers */
		if (datapath_ul_fifo_yields(dp)) {
			dp->ul_fifo_held = true;
			ul_reader_set_state(dp, UL_READER_FIFO, UL_READER_WAIT_OUT,
					    "in-flight limit (fq-codel muxes beside)");
			return ULQ_READ_STOP;
		}
		struct transport_out *out = datapath_ul_room(dp, dp->ul_header_size + m->mtu);
		if (!out) {
			dp->ul_fifo_held = true;
			/* Every OUT transfer is in flight: let the kernel queue until one frees. */
			ul_reader_set_state(dp, UL_READER_FIFO, UL_READER_WAIT_OUT,
					    "every OUT transfer in flight");
			return ULQ_READ_STOP;
		}
		if (!mux_ul_read(dp, m, out)) {
			dp->ul_fifo_held = false;
			return ULQ_READ_EMPTY;
		}
	}
	return ULQ_READ_MORE;
}

/*
 * Only a reader that waited resumes: one already reading has its devices polled anyway (and
 * a super-packet still pending keeps it waiting; on_out_ready tried it first).
 */
void datapath_ul_transfers_freed(struct datapath *dp)
{
	if (dp->ul_reader[UL_READER_FIFO] == UL_READER_WAIT_OUT && !dp->ul_gso_mux)
		ul_reader_set_state(dp, UL_READER_FIFO, UL_READER_RESUME, "OUT transfers freed");
}

void datapath_ul_on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mux *m = w->data;
	struct datapath *dp = m->dp;
	(void)loop;
	(void)revents;

	if (m->ulq)
		mux_ulq_read(dp, m, UL_READ_BUDGET);
	else
		mux_fifo_read(dp, m, UL_READ_BUDGET);
}
