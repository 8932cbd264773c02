/* SPDX-License-Identifier: MIT */
/*
 * Downlink: transfers deaggregated in place, packets written to the mux devices (through GRO
 * and io_uring batches), QMAP commands answered. NTBs (MBIM) are walked in datapath-ntb.c and
 * delivered here the same way.
 */

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "datapath-internal.h"
#include "datapath.h"
#include "headroom.h"
#include "log-mux.h"
#include "transport.h"
#include "uring.h"

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

/* A write that failed or was short: out of the per-packet path. */
static __attribute__((noinline, cold)) void mux_write_failed(struct mux *m, unsigned segments,
							     ssize_t res, size_t len)
{
	mux_write_result(m, segments, res, len);
}

/*
 * A lone packet written now (this batch's mode for the mux is writev): inline in the receive
 * loop, where a call into mux_write() cost ~20 instructions of its own per packet
 * (callgrind, RESULTS.md "Downlink: two regimes").
 */
static inline __attribute__((always_inline)) void
mux_writev_now(struct mux *m, const struct iovec *iov, int iovcnt, size_t len)
{
	ssize_t n =
		iovcnt == 1 ? write(m->nd.fd, iov[0].iov_base, len) : writev(m->nd.fd, iov, iovcnt);
	if (_likely_(n == (ssize_t)len)) {
		m->stats.rx_writes++;
		return;
	}
	mux_write_failed(m, 1, n < 0 ? -errno : n, len);
}

/* The most header bytes put in front of a packet: GRO's lone block is the largest. */
#define DL_IN_PLACE_MAX 48
_Static_assert(DL_IN_PLACE_MAX <= TRANSPORT_RX_HEADROOM, "in front of a transfer's first packet");
_Static_assert(GRO_MAX_VNET_HDR + GRO_MAX_L2_LEN <= DL_IN_PLACE_MAX, "GRO's lone block fits");

/*
 * A lone packet of a receive buffer and its device header written with one write(): the
 * header goes into the bytes in front of the packet (its QMAP header, the previous packet's
 * tail, an NDP or the transfer's headroom, transport.h) and they are put back after the
 * write, since GRO, the ring or the NTB walk may still read them. One write() of one buffer
 * costs 9-11 % less than writev() of [header, packet] (RESULTS.md "One write per packet").
 */
static inline __attribute__((always_inline)) void
mux_write_in_place(struct mux *m, const void *hdr, size_t hdr_len, uint8_t *pkt, size_t len)
{
	uint8_t saved[DL_IN_PLACE_MAX];
	uint8_t *front = pkt - DL_IN_PLACE_MAX;
	size_t total = hdr_len + len;

	memcpy(saved, front, DL_IN_PLACE_MAX);
	memcpy(pkt - hdr_len, hdr, hdr_len);
	ssize_t n = write(m->nd.fd, pkt - hdr_len, total);
	memcpy(front, saved, DL_IN_PLACE_MAX);
	if (_likely_(n == (ssize_t)total)) {
		m->stats.rx_writes++;
		return;
	}
	mux_write_failed(m, 1, n < 0 ? -errno : n, total);
}

static void mux_write_done(void *tag, uint32_t segments, int res, size_t len)
{
	mux_write_result(tag, segments, res, len);
}

/* Out of line: keeping r for the warning would cost the per-batch path a saved register. */
static __attribute__((noinline, cold)) void datapath_uring_failed(struct datapath *dp, int r)
{
	log_warning_errno(r, "datapath: io_uring submit failed, writing directly from now on");
	dp->uring = uring_free(dp->uring);
	for (size_t i = 0; i < ARRAY_SIZE(dp->mux); i++)
		if (dp->mux[i])
			write_mode_force(&dp->mux[i]->wmode, WRITE_MODE_WRITEV,
					 WRITE_MODE_WHY_NO_URING);
}

/* Submit the batched writes and wait for them: the transfer buffers are about to be reused. */
void datapath_write_flush(struct datapath *dp)
{
	int r;

	/* A batch written with writev queued nothing: no call into the ring at all. */
	if (!dp->uring_queued)
		return;
	dp->uring_queued = false;
	if (!dp->uring || (r = uring_flush(dp->uring)) >= 0)
		return;
	datapath_uring_failed(dp, r);
}

/*
 * One downlink write into the mux's device: queued on the ring when this batch's mode for the
 * mux says so (submitted when the receive batch ends), else writev now. len: the iovecs'
 * total. copy_head: iov[0] is a header block the caller reuses after returning (GRO's), so the
 * ring keeps a copy.
 */
static void mux_write(struct mux *m, const struct iovec *iov, int iovcnt, size_t len,
		      bool copy_head, unsigned segments)
{
	struct datapath *dp = m->dp;

	if (m->batch_uring && dp->uring) {
		if (_likely_(uring_writev(dp->uring, m->nd.fd, iov, iovcnt, len, copy_head, m,
					  segments) == 0)) {
			dp->uring_queued = true;
			return;
		}
		/* Not queued: what is queued goes first, so the device sees its packets in order. */
		datapath_write_flush(dp);
	}
	ssize_t n =
		iovcnt == 1 ? write(m->nd.fd, iov[0].iov_base, len) : writev(m->nd.fd, iov, iovcnt);
	mux_write_result(m, segments, n < 0 ? -errno : n, len);
}

/* GRO's output: one write per super-packet or lone packet, from the transfer buffers. */
void datapath_dl_gro_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	/*
	 * iov[0] holds the headers, every further iovec one segment's bytes. A lone packet's
	 * header block is one of GRO's fixed ones (gro.h): only a super-packet's needs a copy.
	 */
	size_t len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	mux_write(userdata, iov, iovcnt, len, iovcnt > 2, iovcnt > 1 ? (unsigned)iovcnt - 1 : 1);
}

int datapath_set_batch_writes(struct datapath *dp, bool on)
{
	int r = 0;

	if (!on) {
		datapath_write_flush(dp);
		dp->uring = uring_free(dp->uring);
	} else if (!dp->uring) {
		r = uring_new(mux_write_done, &dp->uring);
	}
	for (size_t i = 0; i < ARRAY_SIZE(dp->mux); i++)
		if (dp->mux[i])
			datapath_dl_modes_init(dp, dp->mux[i]);
	return r;
}

void datapath_dl_modes_init(struct datapath *dp, struct mux *m)
{
	if (!dp->uring)
		write_mode_init(&m->wmode, false);
	else if (dp->write_mode_forced > 0)
		write_mode_force(&m->wmode, (enum write_mode_kind)(dp->write_mode_forced - 1),
				 WRITE_MODE_WHY_FORCED);
	else
		write_mode_init(&m->wmode, true);
	/* Between batches: GRO holds nothing, the next packet may take either path. */
	gro_auto_init(&m->gro_auto);
}

void datapath_force_dl_modes(struct datapath *dp, int write_mode, bool always_try_gro)
{
	dp->write_mode_measured = -1;
	dp->write_mode_forced = write_mode < 0 ? 0 : write_mode + 1;
	dp->gro_always_try = always_try_gro;
	for (size_t i = 0; i < ARRAY_SIZE(dp->mux); i++)
		if (dp->mux[i])
			datapath_dl_modes_init(dp, dp->mux[i]);
}

/* Packets of the mux written (or dropped at the write) so far: a probe's count. */
static uint64_t mux_dl_packets(const struct mux *m)
{
	if (m->gro)
		return m->gro->stats.packets;
	return m->stats.rx_writes + m->stats.rx_dropped_queue_full +
	       m->stats.rx_dropped_write_error;
}

/* The mux's first packet of a receive batch: its write mode for the batch. */
static __attribute__((noinline)) void mux_batch_begin(struct datapath *dp, struct mux *m)
{
	bool measure;

	write_mode_set_hint(&m->wmode, dp->write_mode_measured);
	m->batch_uring = write_mode_batch_begin(&m->wmode, &measure) == WRITE_MODE_URING;
	m->batch_measure = measure;
	if (_unlikely_(measure)) {
		m->dl_packets0 = mux_dl_packets(m);
		/* Only a batch the mux starts can be its alone (checked at the end). */
		if (dp->n_dl_dirty == 0)
			dp->batch_t0 = datapath_clock_ns();
	}
	m->dl_dirty = true;
	dp->dl_dirty[dp->n_dl_dirty++] = m->id;
}

/* A probe batch ended: its time per packet is the mux's sample if the batch was its alone. */
static __attribute__((noinline)) void mux_batch_measured(struct datapath *dp, struct mux *m,
							 unsigned n_muxes)
{
	m->batch_measure = false;
	if (n_muxes != 1) {
		write_mode_batch_skip(&m->wmode);
		return;
	}
	uint64_t probes = m->wmode.probes;
	write_mode_batch_end(&m->wmode, m->batch_uring ? WRITE_MODE_URING : WRITE_MODE_WRITEV,
			     datapath_clock_ns() - dp->batch_t0,
			     mux_dl_packets(m) - m->dl_packets0);
	/* A probe ended: a hint for muxes that never carry a batch alone. */
	if (m->wmode.probes != probes)
		dp->write_mode_measured = (int)m->wmode.mode;
}

void datapath_dl_batch_flush(struct datapath *dp)
{
	unsigned n = dp->n_dl_dirty;

	for (unsigned i = 0; i < n; i++) {
		struct mux *m = dp->mux[dp->dl_dirty[i]];
		if (m && m->gro)
			gro_flush(m->gro);
	}
	dp->n_dl_dirty = 0;
	datapath_write_flush(dp);
	/* headroom = auto decides per window of segments; after the writes, which it may not delay. */
	for (unsigned i = 0; i < n; i++) {
		struct mux *m = dp->mux[dp->dl_dirty[i]];
		if (!m)
			continue;
		if (_unlikely_(m->batch_measure))
			mux_batch_measured(dp, m, n);
		m->dl_dirty = false;
		m->batch_uring = false;
		if (m->gro)
			headroom_batch_done(dp, m);
	}
}

/* Flush the flows GRO holds: before any transfer buffer goes back to the ring. */
void datapath_gro_flush(void *userdata)
{
	struct datapath *dp = userdata;

	datapath_dl_batch_flush(dp);
	/* What the batch queued in the shaper may go at once, as far as the rate allows. */
	if (_unlikely_(dp->dlq != NULL) && dp->dlq->packets > 0)
		datapath_dlq_release(dp);
}

/*
 * Hand a downlink IP packet of the mux to GRO or write it. in_place: pkt lies in a receive
 * buffer, whose bytes in front of it may take the device header (mux_write_in_place()); not a
 * packet the shaper kept.
 */
static inline __attribute__((always_inline)) void dl_write(struct datapath *dp, struct mux *m,
							   uint8_t *pkt, size_t len, bool ipv6,
							   unsigned gro_flags, const bool in_place)
{
	/* Also with GRO when nothing is held: the batch's end checks headroom's window too. */
	if (_unlikely_(!m->dl_dirty))
		mux_batch_begin(dp, m);
	if (m->gro) {
		if (_likely_(!m->gro_auto.skip)) {
			gro_add(m->gro, pkt, len, gro_flags);
			return;
		}
		/* Nothing merges (gro-auto.h): written alone with GRO's fixed header, no copy. */
		struct iovec iov[2] = { gro_alone_header(m->gro, ipv6, gro_flags),
					{ .iov_base = pkt, .iov_len = len } };
		if (_likely_(!m->batch_uring) && in_place)
			mux_write_in_place(m, iov[0].iov_base, iov[0].iov_len, pkt, len);
		else if (!m->batch_uring)
			mux_writev_now(m, iov, 2, iov[0].iov_len + len);
		else
			mux_write(m, iov, 2, iov[0].iov_len + len, false, 1);
		return;
	}

	bool tap = m->nd.kind == NETDEV_KIND_TAP_XDP;
	if (_likely_(!m->batch_uring) && tap && in_place) {
		mux_write_in_place(m, m->dl_l2[ipv6 ? 1 : 0], m->dl_l2_len, pkt, len);
		return;
	}
	/* The Ethernet header is the mux's own and outlives the batch: no copy. */
	struct iovec iov[2] = {
		{ .iov_base = (void *)m->dl_l2[ipv6 ? 1 : 0], .iov_len = m->dl_l2_len },
		{ .iov_base = pkt, .iov_len = len },
	};
	/* The length is at hand: mux_write need not sum the iovecs. */
	const struct iovec *v = tap ? iov : iov + 1;
	int n = tap ? 2 : 1;
	size_t total = tap ? m->dl_l2_len + len : len;
	if (_likely_(!m->batch_uring))
		mux_writev_now(m, v, n, total);
	else
		mux_write(m, v, n, total, false, 1);
}

void datapath_dl_write(struct datapath *dp, struct mux *m, uint8_t *pkt, size_t len, bool ipv6,
		       unsigned gro_flags)
{
	dl_write(dp, m, pkt, len, ipv6, gro_flags, false);
}

/*
 * Count a downlink IP packet of the mux and write it, or queue it in the shaper: QMAP's and
 * NTB's. shaped is a constant in each copy of the receive loops (one test per transfer), so
 * without a shaper the loop is what it was before there was one.
 */
static inline __attribute__((always_inline)) void dl_deliver(struct datapath *dp, struct mux *m,
							     uint8_t *pkt, size_t len, bool ipv6,
							     unsigned gro_flags, const bool shaped)
{
	/* Counted as received from the modem; drops are counted where the write fails. */
	m->stats.rx_packets++;
	m->stats.rx_bytes += len;
	if (shaped && datapath_dlq_enqueue(dp, m, pkt, len, ipv6, gro_flags))
		return;
	dl_write(dp, m, pkt, len, ipv6, gro_flags, true);
}

static inline __attribute__((always_inline)) void
mux_deliver(struct datapath *dp, struct mux *m, const struct qmap_frame *f, const bool shaped)
{
	dl_deliver(dp, m, f->payload, f->len, f->flags & QMAP_FRAME_IPV6,
		   (f->flags & QMAP_FRAME_CSUM_VALID) ? GRO_PKT_CSUM_VALID : 0, shaped);
}

/* Put one ACK frame into the uplink aggregate; false if no OUT buffer is free. */
static bool datapath_ack_put(struct datapath *dp, const uint8_t *frame, size_t len)
{
	struct transport_out *out = datapath_ul_room_control(dp, len);
	if (!out)
		return false;
	memcpy(out->data + out->len, frame, len);
	out->len += len;
	dp->ul_frames++;
	dp->stats.ul_command_acks++;
	return true;
}

void datapath_send_pending_acks(struct datapath *dp)
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
		log_mux_debug(NULL, m->id, m->nd.name, "flow %s by the modem",
			      off ? "disabled" : "enabled");
	m->flow_off = off;
	/* Queued packets of the mux stay; the scheduler passes its flows over until ENABLE. */
	if (m->ulq)
		ulq_mux_set_flow(m->ulq, !off);
	/* Not reading lets the device's queue fill: the kernel backpressures the senders. */
	ul_reader_update_mux(dp, m);
	datapath_command_ack(dp, f);
}

/* An NTB (MBIM function): walked in place, each datagram on QMAP's path to its mux. */
static inline __attribute__((always_inline)) void
datapath_ntb_bulk_in(struct datapath *dp, uint8_t *buf, size_t len, const bool shaped)
{
	struct ntb_parser p;
	struct ntb_datagram d;
	uint64_t datagrams = 0;
	int r;

	ntb_parse_init(&p, buf, len, dp->transport->ntb.format);
	while ((r = ntb_parse_next_inline(&p, &d)) != 0) {
		if (_unlikely_(r < 0)) {
			/* Counted per kind; the parser goes on where the structure allows. */
			dp->stats.dl_ntb_malformed[p.error]++;
			continue;
		}
		datagrams++;
		/* Session N is mux N + 1 (datapath_mux_session()). */
		unsigned id = (unsigned)d.session + 1;
		struct mux *m = id < ARRAY_SIZE(dp->mux) ? dp->mux[id] : NULL;
		if (_unlikely_(!m)) {
			dp->stats.dl_unknown_mux++;
			continue;
		}
		/* MBIM carries no checksum-valid hint: GRO checks what it merges. */
		dl_deliver(dp, m, d.data, d.len, d.flags & NTB_DATAGRAM_IPV6, 0, shaped);
	}
	if (datagrams) {
		dp->stats.dl_aggregates++;
		dp->stats.dl_datagrams += datagrams;
		if (datagrams > dp->stats.dl_datagrams_max)
			dp->stats.dl_datagrams_max = datagrams;
	}
}

static inline __attribute__((always_inline)) void
datapath_qmap_bulk_in(struct datapath *dp, uint8_t *buf, size_t len, const bool shaped)
{
	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	uint64_t datagrams = 0;
	int r;

	qmap_iter_init(&it, buf, len, dp->version);
	it.min_padding = dp->dl_min_padding;
	while ((r = qmap_next_inline(&it, &f, &err)) != 0) {
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
		mux_deliver(dp, m, &f, shaped);
	}
	if (datagrams) {
		dp->stats.dl_aggregates++;
		dp->stats.dl_datagrams += datagrams;
		if (datagrams > dp->stats.dl_datagrams_max)
			dp->stats.dl_datagrams_max = datagrams;
	}
}

void datapath_bulk_in(void *userdata, uint8_t *buf, size_t len)
{
	struct datapath *dp = userdata;

	if (_unlikely_(dp->dl_auto != NULL))
		dp->dl_auto_now = datapath_clock_ns();
	if (datapath_is_ntb(dp)) {
		if (_unlikely_(dp->dlq != NULL))
			datapath_ntb_bulk_in(dp, buf, len, true);
		else
			datapath_ntb_bulk_in(dp, buf, len, false);
		return;
	}
	if (_unlikely_(dp->dlq != NULL))
		datapath_qmap_bulk_in(dp, buf, len, true);
	else
		datapath_qmap_bulk_in(dp, buf, len, false);
}
