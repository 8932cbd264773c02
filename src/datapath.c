/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <linux/virtio_net.h>

#include "datapath.h"
#include "gso.h"
#include "headroom.h"
#include "log.h"
#include "mux.h"
#include "uring.h"

#define ETH_HEADER_SIZE 14
#define UL_READ_BUDGET	64 /* packets read from one device per wakeup: fairness between muxes */

/* ---- downlink ---------------------------------------------------------------------- */

/* A downlink write's outcome in the mux counters; segments: packets it carried. */
static void mux_write_result(struct mux *m, unsigned segments, ssize_t res, size_t len)
{
	if (_likely_(res >= 0 && (size_t)res == len)) {
		m->stats.rx_writes++;
		return;
	}
	/* Never wait for the device: a full queue drops, as a NIC ring would. */
	if (res == -EAGAIN)
		m->stats.rx_dropped_queue_full += segments;
	else
		m->stats.rx_dropped_write_error += segments;
}

static void mux_write_done(void *tag, uint32_t segments, int res, size_t len)
{
	mux_write_result(tag, segments, res, len);
}

/* Submit the batched writes and wait for them: the transfer buffers are about to be reused. */
static void datapath_write_flush(struct datapath *dp)
{
	if (!dp->uring || uring_flush(dp->uring) >= 0)
		return;
	log_warning(EIO, "datapath: io_uring submit failed, writing directly from now on");
	dp->uring = uring_free(dp->uring);
}

/*
 * One downlink write into the mux's device: queued on the ring when batching (submitted when
 * the receive batch ends), else writev now. copy_head: iov[0] is a header block the caller
 * reuses after returning (GRO's), so the ring keeps a copy.
 */
static void mux_write(struct mux *m, const struct iovec *iov, int iovcnt, bool copy_head,
		      unsigned segments)
{
	struct datapath *dp = m->dp;

	if (dp->uring) {
		if (_likely_(uring_writev(dp->uring, m->nd.fd, iov, iovcnt, copy_head, m,
					  segments) == 0))
			return;
		/* Not queued: what is queued goes first, so the device sees its packets in order. */
		datapath_write_flush(dp);
	}
	size_t len = 0;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	ssize_t n =
		iovcnt == 1 ? write(m->nd.fd, iov[0].iov_base, len) : writev(m->nd.fd, iov, iovcnt);
	mux_write_result(m, segments, n < 0 ? -errno : n, len);
}

/* GRO's output: one write per super-packet or lone packet, from the transfer buffers. */
void mux_gro_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	/* iov[0] holds the headers, every further iovec one segment's bytes. */
	mux_write(userdata, iov, iovcnt, true, iovcnt > 1 ? (unsigned)iovcnt - 1 : 1);
}

int datapath_set_batch_writes(struct datapath *dp, bool on)
{
	if (!on) {
		datapath_write_flush(dp);
		dp->uring = uring_free(dp->uring);
		return 0;
	}
	if (dp->uring)
		return 0;
	return uring_new(mux_write_done, &dp->uring);
}

/* Flush the flows GRO holds: before any transfer buffer goes back to the ring. */
static void datapath_gro_flush(void *userdata)
{
	struct datapath *dp = userdata;

	for (unsigned i = 0; i < dp->n_gro_dirty; i++) {
		struct mux *m = dp->mux[dp->gro_dirty[i]];
		if (m) {
			gro_flush(m->gro);
			m->gro_dirty = false;
		}
	}
	dp->n_gro_dirty = 0;
	datapath_write_flush(dp);
}

static void mux_deliver(struct datapath *dp, struct mux *m, const struct qmap_frame *f)
{
	/* Counted as received from the modem; drops are counted where the write fails. */
	m->stats.rx_packets++;
	m->stats.rx_bytes += f->len;
	if (m->gro) {
		gro_add_qmap(m->gro, f);
		if (!m->gro_dirty && gro_pending(m->gro)) {
			m->gro_dirty = true;
			dp->gro_dirty[dp->n_gro_dirty++] = m->id;
		}
		return;
	}

	/* The Ethernet header is the mux's own and outlives the batch: no copy. */
	struct iovec iov[2] = {
		{ .iov_base = m->eth_header[(f->flags & QMAP_FRAME_IPV6) ? 1 : 0],
		  .iov_len = ETH_HEADER_SIZE },
		{ .iov_base = f->payload, .iov_len = f->len },
	};
	if (m->nd.kind == NETDEV_KIND_TAP_XDP)
		mux_write(m, iov, 2, false, 1);
	else
		mux_write(m, iov + 1, 1, false, 1);
}

static void datapath_ul_flush(struct datapath *dp);
static struct transport_out *datapath_ul_room(struct datapath *dp, uint32_t need);
static void datapath_ul_segment_resume(struct datapath *dp);
static void mux_update_reading(struct datapath *dp, struct mux *m);

/* Put one ACK frame into the uplink aggregate; false if no OUT buffer is free. */
static bool datapath_ack_put(struct datapath *dp, const uint8_t *frame, size_t len)
{
	struct transport_out *out = datapath_ul_room(dp, len);
	if (!out)
		return false;
	memcpy(out->data + out->len, frame, len);
	out->len += len;
	dp->ul_frames++;
	dp->stats.ul_command_acks++;
	return true;
}

static void datapath_send_pending_acks(struct datapath *dp)
{
	unsigned sent = 0;

	while (sent < dp->n_ack_pending &&
	       datapath_ack_put(dp, dp->ack_pending[sent], dp->ack_pending_len[sent]))
		sent++;
	if (sent == 0)
		return;
	memmove(dp->ack_pending, dp->ack_pending[sent],
		(dp->n_ack_pending - sent) * sizeof(dp->ack_pending[0]));
	memmove(dp->ack_pending_len, dp->ack_pending_len + sent, dp->n_ack_pending - sent);
	dp->n_ack_pending -= sent;
	datapath_ul_flush(dp);
}

/* rmnet's answer to a command: the same frame sent back with the type set to ACK. */
static void datapath_command_ack(struct datapath *dp, const struct qmap_frame *f)
{
	if (f->wire_len > DATAPATH_ACK_MAX || dp->n_ack_pending == DATAPATH_ACKS_PENDING) {
		dp->stats.ul_command_acks_dropped++;
		return;
	}
	uint8_t *ack = dp->ack_pending[dp->n_ack_pending];
	memcpy(ack, f->header, f->wire_len);
	qmap_command_make_ack(ack + (f->payload - f->header));
	dp->ack_pending_len[dp->n_ack_pending++] = f->wire_len;
	/* The modem waits for it: send now, or as soon as an OUT buffer frees. */
	datapath_send_pending_acks(dp);
}

static void datapath_command(struct datapath *dp, const struct qmap_frame *f)
{
	struct mux *m = dp->mux[f->mux_id];
	struct qmap_command cmd;

	dp->stats.dl_commands++;
	if (m)
		m->stats.commands_rx++;
	if (qmap_command_parse(f->payload, f->len, &cmd) < 0 || cmd.type != QMAP_COMMAND_REQUEST)
		return;
	/* Like rmnet: commands for a mux we do not have, and unknown commands, get no reply. */
	if (!m || (cmd.name != QMAP_COMMAND_FLOW_DISABLE && cmd.name != QMAP_COMMAND_FLOW_ENABLE)) {
		dp->stats.dl_commands_unsupported++;
		return;
	}
	bool off = cmd.name == QMAP_COMMAND_FLOW_DISABLE;
	if (off)
		dp->stats.dl_flow_disable++;
	else
		dp->stats.dl_flow_enable++;
	if (m->flow_off != off)
		log_debug("mux %u (%s): flow %s by the modem", m->id, m->nd.name,
			  off ? "disabled" : "enabled");
	m->flow_off = off;
	/* Not reading lets the device's queue fill: the kernel backpressures the senders. */
	mux_update_reading(dp, m);
	datapath_command_ack(dp, f);
}

void datapath_bulk_in(void *userdata, uint8_t *buf, size_t len)
{
	struct datapath *dp = userdata;
	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	uint64_t datagrams = 0;
	int r;

	qmap_iter_init(&it, buf, len, dp->version);
	while ((r = qmap_next(&it, &f, &err)) != 0) {
		if (_unlikely_(r < 0)) {
			dp->stats.dl_malformed[err]++;
			continue;
		}
		if (_unlikely_(f.kind == QMAP_FRAME_COMMAND)) {
			datapath_command(dp, &f);
			continue;
		}
		datagrams++;
		struct mux *m = dp->mux[f.mux_id];
		if (_unlikely_(!m)) {
			dp->stats.dl_unknown_mux++;
			continue;
		}
		mux_deliver(dp, m, &f);
	}
	if (datagrams) {
		dp->stats.dl_aggregates++;
		dp->stats.dl_datagrams += datagrams;
		if (datagrams > dp->stats.dl_datagrams_max)
			dp->stats.dl_datagrams_max = datagrams;
	}
}

/* ---- uplink ------------------------------------------------------------------------ */

/* Read a mux's device while uplink buffers are free and the modem has not said stop. */
static void mux_update_reading(struct datapath *dp, struct mux *m)
{
	bool on = dp->ul_reading && !m->flow_off;

	if (m->reading == on)
		return;
	if (on)
		ev_io_start(dp->loop, &m->io);
	else
		ev_io_stop(dp->loop, &m->io);
	m->reading = on;
}

static void datapath_set_reading(struct datapath *dp, bool on)
{
	dp->ul_reading = on;
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id])
			mux_update_reading(dp, dp->mux[id]);
}

static void datapath_ul_flush(struct datapath *dp)
{
	struct transport_out *out = dp->ul_out;

	if (!out)
		return;
	dp->ul_out = NULL;
	if (dp->ul_frames == 0) {
		transport_out_put(dp->transport, out);
		return;
	}
	dp->stats.ul_aggregates++;
	dp->stats.ul_datagrams += dp->ul_frames;
	dp->ul_frames = 0;
	if (transport_out_submit(dp->transport, out) < 0)
		dp->stats.ul_submit_errors++;
}

/* The current aggregate, with room for `need` more bytes. */
static struct transport_out *datapath_ul_room(struct datapath *dp, uint32_t need)
{
	if (dp->ul_out && dp->ul_max_size - dp->ul_out->len < need)
		datapath_ul_flush(dp);
	if (!dp->ul_out) {
		dp->ul_out = transport_out_get(dp->transport);
		if (!dp->ul_out)
			return NULL;
		dp->ul_frames = 0;
	}
	return dp->ul_out;
}

static bool payload_matches_ethertype(const uint8_t *eth, const uint8_t *ip, size_t len)
{
	if (len == 0)
		return false;
	if (eth[12] == 0x08 && eth[13] == 0x00)
		return (ip[0] >> 4) == 4;
	if (eth[12] == 0x86 && eth[13] == 0xdd)
		return (ip[0] >> 4) == 6;
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
static void datapath_ul_segment_resume(struct datapath *dp)
{
	struct gso_packet *p = &dp->ul_gso;
	struct mux *m = dp->ul_gso_mux;
	struct gso_segment segs[64];
	unsigned flags = dp->version == QMAP_V5 ? GSO_F_L4_CSUM_OFFLOAD : 0;

	while (m && dp->ul_gso_first < p->n_segs) {
		struct transport_out *out = datapath_ul_room(dp, dp->ul_header_size + m->mtu);
		if (!out) {
			datapath_set_reading(dp, false);
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
 * Read one packet from a device with a virtio-net header. The IP packet goes straight into the
 * aggregate; a super-packet longer than the room left spills into scratch and is segmented
 * from there (segmenting copies anyway). Returns false when the device has no more.
 */
static bool mux_ul_read_vnet(struct datapath *dp, struct mux *m, struct transport_out *out)
{
	bool tap = m->nd.kind == NETDEV_KIND_TAP_XDP;
	struct virtio_net_hdr vh;
	uint8_t eth[ETH_HEADER_SIZE];
	uint8_t *ip = out->data + out->len + dp->ul_header_size;
	size_t room = dp->ul_max_size - out->len - dp->ul_header_size;
	struct iovec iov[4] = {
		{ .iov_base = &vh, .iov_len = sizeof(vh) },
		{ .iov_base = eth, .iov_len = sizeof(eth) },
		{ .iov_base = ip, .iov_len = room },
		{ .iov_base = dp->ul_scratch + room, .iov_len = DATAPATH_UL_SCRATCH - room },
	};
	struct iovec *v = tap ? iov : iov + 1;
	if (!tap)
		v[0] = iov[0];
	ssize_t n = readv(m->nd.fd, v, tap ? 4 : 3);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			log_warning(errno, "mux %u (%s): read failed", m->id, m->nd.name);
		return false;
	}
	size_t head = sizeof(vh) + (tap ? sizeof(eth) : 0);
	size_t len = (size_t)n > head ? (size_t)n - head : 0;
	if (_unlikely_(len == 0 || len > DATAPATH_UL_SCRATCH ||
		       (tap ? !payload_matches_ethertype(eth, ip, len)
			    : ((ip[0] >> 4) != 4 && (ip[0] >> 4) != 6)))) {
		m->stats.tx_dropped_not_ip++;
		return true;
	}
	if (_unlikely_(!dp->modem_up || !m->link_up)) {
		m->stats.tx_dropped_link_down++;
		return true;
	}
	if (len <= room && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
	    !(vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
		/* The common small packet: already in place, only the QMAP header is missing. */
		qmap_write_data_header(out->data + out->len, dp->version, m->id, len, 0, false);
		out->len += dp->ul_header_size + len;
		m->stats.tx_packets++;
		m->stats.tx_bytes += len;
		if (++dp->ul_frames >= dp->ul_max_datagrams)
			datapath_ul_flush(dp);
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

static void mux_on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mux *m = w->data;
	struct datapath *dp = m->dp;
	bool tap = m->nd.kind == NETDEV_KIND_TAP_XDP;
	uint8_t eth[ETH_HEADER_SIZE];
	(void)loop;
	(void)revents;

	for (int budget = UL_READ_BUDGET; budget > 0 && !dp->ul_gso_mux; budget--) {
		struct transport_out *out = datapath_ul_room(dp, dp->ul_header_size + m->mtu);
		if (!out) {
			/* Every OUT transfer is in flight: let the kernel queue until one frees. */
			datapath_set_reading(dp, false);
			return;
		}
		if (m->nd.vnet_hdr_len) {
			if (!mux_ul_read_vnet(dp, m, out))
				return;
			continue;
		}
		uint8_t *ip = out->data + out->len + dp->ul_header_size;
		size_t room = dp->ul_max_size - out->len - dp->ul_header_size;
		struct iovec iov[2] = {
			{ .iov_base = eth, .iov_len = sizeof(eth) },
			{ .iov_base = ip, .iov_len = room },
		};
		ssize_t n = tap ? readv(m->nd.fd, iov, 2) : readv(m->nd.fd, iov + 1, 1);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warning(errno, "mux %u (%s): read failed", m->id, m->nd.name);
			return;
		}
		size_t len =
			tap ? (n >= ETH_HEADER_SIZE ? (size_t)n - ETH_HEADER_SIZE : 0) : (size_t)n;
		if (_unlikely_(len > room)) {
			m->stats.tx_dropped_too_big++;
			continue;
		}
		if (_unlikely_(tap ? !payload_matches_ethertype(eth, ip, len)
				   : len == 0 || ((ip[0] >> 4) != 4 && (ip[0] >> 4) != 6))) {
			m->stats.tx_dropped_not_ip++;
			continue;
		}
		if (_unlikely_(!dp->modem_up || !m->link_up)) {
			m->stats.tx_dropped_link_down++;
			continue;
		}
		qmap_write_data_header(out->data + out->len, dp->version, m->id, len, 0, false);
		out->len += dp->ul_header_size + len;
		m->stats.tx_packets++;
		m->stats.tx_bytes += len;
		if (++dp->ul_frames >= dp->ul_max_datagrams)
			datapath_ul_flush(dp);
	}
}

static void datapath_on_headroom_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	headroom_tick(w->data);
}

/* Runs once per loop iteration after all ready devices were read: send what we have. */
static void datapath_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	datapath_ul_flush(w->data);
}

static void datapath_on_out_ready(void *userdata)
{
	struct datapath *dp = userdata;

	datapath_send_pending_acks(dp);
	datapath_ul_segment_resume(dp);
	if (!dp->ul_gso_mux)
		datapath_set_reading(dp, true);
}

static void mux_update_carrier(struct datapath *dp, struct mux *m)
{
	int r = netdev_set_carrier(&m->nd, dp->modem_up && m->link_up);
	if (r < 0)
		log_warning(r, "mux %u (%s): cannot set carrier", m->id, m->nd.name);
}

static void datapath_on_connect(void *userdata)
{
	struct datapath *dp = userdata;

	dp->modem_up = true;
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id])
			mux_update_carrier(dp, dp->mux[id]);
	if (dp->events.on_modem_up)
		dp->events.on_modem_up(dp->events.userdata);
}

static void datapath_on_control(void *userdata, const uint8_t *buf, size_t len)
{
	struct datapath *dp = userdata;

	if (dp->events.on_control)
		dp->events.on_control(dp->events.userdata, buf, len);
}

static void datapath_on_disconnect(void *userdata)
{
	struct datapath *dp = userdata;

	dp->stats.modem_disconnects++;
	dp->modem_up = false;
	dp->n_ack_pending = 0; /* answers to a modem that is gone */
	dp->ul_gso_mux = NULL;
	if (dp->ul_out) {
		transport_out_put(dp->transport, dp->ul_out);
		dp->ul_out = NULL;
		dp->ul_frames = 0;
	}
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id])
			mux_update_carrier(dp, dp->mux[id]);
	if (dp->events.on_modem_down)
		dp->events.on_modem_down(dp->events.userdata);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int datapath_new(struct ev_loop *loop, struct rtnl *rtnl, const struct config *config,
		 const struct datapath_events *events, struct datapath **ret)
{
	const struct config_device *dev = &config->device;
	struct datapath *dp = calloc(1, sizeof(*dp));
	int r;

	if (!dp)
		return log_err(ENOMEM, "datapath: out of memory");
	dp->loop = loop;
	dp->rtnl = rtnl;
	dp->offload_devices = true;
	if (events)
		dp->events = *events;
	dp->version = dev->qmap_version;
	dp->ul_header_size = qmap_ul_header_size(dp->version);
	dp->ul_max_size = dev->ul_max_size;
	dp->ul_max_datagrams = dev->ul_max_datagrams;
	ev_prepare_init(&dp->ul_flush, datapath_on_prepare);
	dp->ul_flush.data = dp;
	ev_timer_init(&dp->headroom_timer, datapath_on_headroom_tick, HEADROOM_INTERVAL_SECONDS,
		      HEADROOM_INTERVAL_SECONDS);
	dp->headroom_timer.data = dp;

	struct transport_params params = {
		.dl_max_size = dev->dl_max_size,
		.rx_transfers = dev->rx_transfers,
		.ul_max_size = dev->ul_max_size,
		.max_packet_size = dev->max_packet_size,
	};
	dp->ul_scratch = malloc(DATAPATH_UL_SCRATCH);
	if (!dp->ul_scratch) {
		datapath_free(dp);
		return log_err(ENOMEM, "datapath: out of memory");
	}
	struct transport_callbacks cb = {
		.on_bulk_in = datapath_bulk_in,
		.on_bulk_in_done = datapath_gro_flush,
		.on_control = datapath_on_control,
		.on_out_ready = datapath_on_out_ready,
		.on_connect = datapath_on_connect,
		.on_disconnect = datapath_on_disconnect,
	};
	r = transport_new(loop, dev->device, &params, &cb, dp, &dp->transport);
	if (r < 0) {
		datapath_free(dp);
		return log_err(r, "device %s: cannot set up transport", dev->device);
	}
	/*
	 * Batched downlink writes are the default: 0.30-0.40x the ns per packet of one write per
	 * packet on 6.18 (tests/bench/RESULTS.md). Without io_uring, plain writes, same counters.
	 */
	r = datapath_set_batch_writes(dp, true);
	if (r < 0)
		log_info("datapath: io_uring unavailable (%s), one write per packet", strerror(-r));
	*ret = dp;
	return 0;
}

int datapath_mux_add(struct datapath *dp, const struct config_mux *cfg, bool persist, bool link_up,
		     struct mux **ret)
{
	struct mux *m;
	int r;

	if (dp->mux[cfg->id])
		return -EEXIST;
	r = mux_new(dp, cfg, persist, &m);
	if (r < 0)
		return r;
	ev_io_init(&m->io, mux_on_readable, m->nd.fd, EV_READ);
	m->io.data = m;
	m->link_up = link_up;
	dp->mux[cfg->id] = m;
	dp->n_mux++;
	mux_update_carrier(dp, m);
	mux_update_reading(dp, m);
	if (ret)
		*ret = m;
	return 0;
}

int datapath_mux_del(struct datapath *dp, unsigned id)
{
	if (id >= ARRAY_SIZE(dp->mux) || !dp->mux[id])
		return -ENOENT;
	/* Queued writes point at the mux: out with them first. */
	datapath_write_flush(dp);
	/* Frames of this mux already in the uplink aggregate still go out: they are valid. */
	dp->mux[id] = mux_free(dp->mux[id]);
	dp->n_mux--;
	return 0;
}

void datapath_mux_set_link(struct datapath *dp, struct mux *m, bool up)
{
	m->link_up = up;
	mux_update_carrier(dp, m);
}

int datapath_set_data_format(struct datapath *dp, enum qmap_version version, uint32_t dl_max_size,
			     uint32_t ul_max_size, uint32_t ul_max_datagrams)
{
	int r = transport_set_dl_size(dp->transport, dl_max_size);
	if (r < 0)
		return r;
	if (ul_max_size == 0 || ul_max_size > dp->transport->params.ul_max_size ||
	    ul_max_datagrams == 0)
		return -EINVAL;
	/* A half-built aggregate was framed for the old version: send it first. */
	datapath_ul_flush(dp);
	dp->version = version;
	dp->ul_header_size = qmap_ul_header_size(version);
	dp->ul_max_size = ul_max_size;
	dp->ul_max_datagrams = ul_max_datagrams;
	return 0;
}

struct datapath *datapath_free(struct datapath *dp)
{
	if (!dp)
		return NULL;
	if (dp->loop) {
		ev_prepare_stop(dp->loop, &dp->ul_flush);
		ev_timer_stop(dp->loop, &dp->headroom_timer);
	}
	if (dp->transport) {
		if (dp->ul_out)
			transport_out_put(dp->transport, dp->ul_out);
		transport_stop(dp->transport);
	}
	dp->uring = uring_free(dp->uring);
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		dp->mux[id] = mux_free(dp->mux[id]);
	transport_free(dp->transport);
	free(dp->ul_scratch);
	free(dp);
	return NULL;
}

int datapath_start(struct datapath *dp)
{
	int r = transport_start(dp->transport);
	if (r < 0)
		return log_err(r, "datapath: cannot start transport");
	ev_prepare_start(dp->loop, &dp->ul_flush);
	ev_timer_start(dp->loop, &dp->headroom_timer);
	datapath_set_reading(dp, true);
	return 0;
}

/* ---- counters ----------------------------------------------------------------------- */

/*
 * Format (stable, tests parse it):
 * Every line starts with `prefix` (a journald priority such as "<6>" for stderr, or "").
 *   device: key=value ...
 *   malformed: <qmap_error_name>=N ...
 *   mux <id> (<ifname>): mode=<status> key=value ...
 */
void datapath_print_stats(const struct datapath *dp, FILE *f, const char *prefix)
{
	const struct transport_stats *ts = &dp->transport->stats;
	const struct datapath_stats *s = &dp->stats;

	fprintf(f,
		"%sdevice: transport=%s rx_transfers_posted=%u transfers=%" PRIu64 " bytes=%" PRIu64
		" transfer_errors=%" PRIu64 " batch_max=%" PRIu64 " aggregates=%" PRIu64
		" datagrams=%" PRIu64 " datagrams_per_aggregate=%.2f datagrams_max=%" PRIu64
		" unknown_mux=%" PRIu64 " commands=%" PRIu64 " flow_disable=%" PRIu64
		" flow_enable=%" PRIu64 " commands_unsupported=%" PRIu64 " command_acks=%" PRIu64
		" command_acks_dropped=%" PRIu64 " ul_aggregates=%" PRIu64 " ul_datagrams=%" PRIu64
		" ul_datagrams_per_aggregate=%.2f ul_bytes=%" PRIu64 " ul_zlp=%" PRIu64
		" ul_errors=%" PRIu64 " ul_busy=%" PRIu64 " disconnects=%" PRIu64 "\n",
		prefix, dp->transport->ops->scheme, dp->transport->n_rx, ts->in_transfers,
		ts->in_bytes, ts->in_errors, ts->in_batch_max, s->dl_aggregates, s->dl_datagrams,
		s->dl_aggregates ? (double)s->dl_datagrams / s->dl_aggregates : 0.0,
		s->dl_datagrams_max, s->dl_unknown_mux, s->dl_commands, s->dl_flow_disable,
		s->dl_flow_enable, s->dl_commands_unsupported, s->ul_command_acks,
		s->ul_command_acks_dropped, s->ul_aggregates, s->ul_datagrams,
		s->ul_aggregates ? (double)s->ul_datagrams / s->ul_aggregates : 0.0, ts->out_bytes,
		ts->out_zlp, ts->out_errors + s->ul_submit_errors, ts->out_busy,
		s->modem_disconnects);
	fprintf(f, "%smalformed:", prefix);
	for (int e = 0; e < _QMAP_ERR_MAX; e++)
		fprintf(f, " %s=%" PRIu64, qmap_error_name(e), s->dl_malformed[e]);
	fputc('\n', f);
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++) {
		const struct mux *m = dp->mux[id];
		if (!m)
			continue;
		const struct mux_stats *ms = &m->stats;
		const struct gro_stats *gs = m->gro ? &m->gro->stats : NULL;
		fprintf(f,
			"%smux %u (%s): mode=%s rx_packets=%" PRIu64 " rx_bytes=%" PRIu64
			" rx_dropped_queue_full=%" PRIu64 " rx_dropped_write_error=%" PRIu64
			" tx_packets=%" PRIu64 " tx_bytes=%" PRIu64 " tx_dropped_not_ip=%" PRIu64
			" tx_dropped_too_big=%" PRIu64 " tx_dropped_link_down=%" PRIu64
			" commands=%" PRIu64 " flow=%s rx_writes=%" PRIu64 " gro_merged=%" PRIu64
			" gro_super_packets=%" PRIu64 " merge_ratio=%.2f tx_gso_segments=%" PRIu64
			" tx_dropped_bad_gso=%" PRIu64 " rx_silent_drops=%" PRIu64
			" headroom=%s headroom_switches=%" PRIu64 "\n",
			prefix, m->id, m->nd.name, m->nd.status, ms->rx_packets, ms->rx_bytes,
			ms->rx_dropped_queue_full, ms->rx_dropped_write_error, ms->tx_packets,
			ms->tx_bytes, ms->tx_dropped_not_ip, ms->tx_dropped_too_big,
			ms->tx_dropped_link_down, ms->commands_rx, m->flow_off ? "off" : "on",
			ms->rx_writes, gs ? gs->segments_merged : 0, gs ? gs->super_packets : 0,
			gs && gs->packets ? (double)gs->segments_merged / gs->packets : 0.0,
			ms->tx_gso_segments, ms->tx_dropped_bad_gso, ms->rx_silent_drops,
			config_headroom_to_string(m->headroom), ms->headroom_switches);
	}
	fflush(f);
}
