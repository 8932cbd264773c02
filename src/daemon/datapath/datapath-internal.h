/* SPDX-License-Identifier: MIT */
/* struct datapath and what datapath.c, datapath-dl.c and datapath-ul.c share; private. */
#ifndef QMAPD_DATAPATH_INTERNAL_H
#define QMAPD_DATAPATH_INTERNAL_H

#include <ev.h>

#include "datapath.h"
#include "dl-auto.h"
#include "gro.h"
#include "gso.h"
#include "mux.h"
#include "ul-reader.h"
#include "ulq.h"

struct uring;

#define DATAPATH_ACKS_PENDING 32
/* A TSO/USO super-packet is at most 64 KiB of IP; room for its headers too. */
#define DATAPATH_UL_SCRATCH (65536 + 256)
/* Receive buffer room under QMI: the largest downlink grant reported publicly (Fibocom
 * FM150, 32768 bytes, docs/PROTOCOLS.md §5), so a grant above the request is usable. */
#define DATAPATH_DL_GRANT_ROOM 32768
#define DATAPATH_ACK_MAX       64 /* a command frame is 20 bytes; modems pad at most a little */
/*
 * The managed uplink queue (ulq.h), allocated with the first fq-codel mux: 2048 slots of 2 KiB
 * (4 MiB) and at most 2 MiB of packets, 80 ms at 200 Mbit/s, 1.7 s at 10 Mbit/s: CoDel keeps
 * the standing queue near its target long before; the limit only catches unresponsive floods.
 */
#define DATAPATH_ULQ_SLOTS	 2048
#define DATAPATH_ULQ_LIMIT	 (2u << 20)
#define DATAPATH_SHAPER_BURST_NS 2000000ULL    /* timers resolve ~1 ms: a burst of two */
#define DATAPATH_DQL_HOLD_NS	 1000000000ULL /* lib/dynamic_queue_limits.c: HZ */
/* In flight at most this long at the modem's rate (ulq.h "the modem's rate"): CoDel's target. */
#define DATAPATH_INFLIGHT_NS 5000000ULL
/*
 * Above this rate (the estimate, no shaper) the queue stops reading eagerly: a device is read
 * only while a packet can go straight into an aggregate, and the kernel holds the rest, as
 * with fifo. Copying every packet through the queue costs more CPU than the rate leaves
 * (qmapd at multi-Gbit/s is CPU-bound), and the kernel's ring drains in a few ms at such a
 * rate anyway. Cellular uplinks (<= a few hundred Mbit/s) stay managed.
 */
#define DATAPATH_ULQ_MANAGED_MAX_BPS 1000000000ULL

struct datapath {
	struct ev_loop *loop;
	struct rtnl *rtnl;
	struct transport *transport;
	struct datapath_events events;
	enum qmap_version version;
	size_t ul_header_size;
	uint32_t ul_max_size; /* bytes of an OUT buffer the modem accepts (<= buffer size) */
	uint32_t ul_max_datagrams;
	uint32_t dl_min_padding; /* granted: zero words skipped between downlink frames */
	bool modem_up;
	/*
	 * The modem appeared once. Before that no device is read: what the kernel sends as the
	 * devices come up (router solicitations, MLD reports) waits in their queues rather than
	 * being dropped as link down while the function is set up (an MBIM function takes a few
	 * class requests). Later absences drop and count as before.
	 */
	bool modem_seen;
	bool offload_devices; /* new mux devices get a virtio-net header (GRO/GSO); default on */
	/*
	 * Downlink writes of a receive batch go through io_uring, submitted together when the
	 * batch ends (or 64 are queued); NULL = one writev per packet. datapath_set_batch_writes.
	 */
	struct uring *uring;
	bool uring_queued; /* writes were queued since the last flush */

	struct mux *mux[256]; /* by mux id; NULL = not configured */
	unsigned n_mux;

	/* Whether the devices are read, per uplink-queue kind: ul-reader.h. */
	enum ul_reader_state ul_reader[_UL_READER_MAX];
	uint64_t ul_reader_transitions;
	uint8_t *ul_scratch; /* DATAPATH_UL_SCRATCH bytes for super-packets that do not fit */
	/* A super-packet being segmented; waits here while no OUT buffer is free (the fifo reader
	 * is WAIT_OUT meanwhile). */
	struct gso_packet ul_gso;
	struct mux *ul_gso_mux; /* NULL: none pending */
	uint32_t ul_gso_first;
	bool ul_gso_in_place;

	/* Muxes with downlink packets in this receive batch, flushed when the transport ends it. */
	uint8_t dl_dirty[256];
	unsigned n_dl_dirty;
	uint64_t batch_t0;	 /* CLOCK_MONOTONIC ns at its first packet, when a probe times it */
	int write_mode_measured; /* the mode the last probe of any mux chose, -1: none */
	int write_mode_forced; /* 0: each mux measures (write-mode.h); else 1 + enum write_mode_kind */
	bool gro_always_try; /* benchmarks: no gro-auto.h skipping */

	/* Command ACKs waiting for an OUT buffer; a modem retries unanswered commands. */
	uint8_t ack_pending[DATAPATH_ACKS_PENDING][DATAPATH_ACK_MAX];
	uint8_t ack_pending_len[DATAPATH_ACKS_PENDING];
	unsigned n_ack_pending;

	/*
	 * Managed uplink (fq-codel muxes): the queue, the bytes in flight to the modem and their
	 * limit, the optional shaper (uplink-rate) and its timer. ulq_scratch joins super-packets
	 * read for the queue (ul_scratch may hold a fifo mux's pending one).
	 */
	struct ulq *ulq;
	uint8_t *ulq_scratch;
	struct ulq_dql dql;
	struct ulq_rate ul_rate; /* the modem's rate while we hold back, from completions */
	uint32_t ul_completed;	 /* OUT bytes completed since the in-flight limit last saw them */
	bool ul_force_queue;	 /* benchmarks: always the queued path, never straight in */
	unsigned ul_rr_next;	 /* the mux id whose turn is next when reads resume */
	/* Fifo turns and the queue's drain take the freed in-flight room first in turn. */
	bool ul_ulq_first;
	/* A fifo mux's packets waited in the kernel for room in flight or a transfer since a
	 * fifo device was last read empty: completions then come at the modem's rate. */
	bool ul_fifo_held;
	struct ulq_shaper shaper;
	ev_timer shaper_timer;
	bool shaper_auto; /* uplink-rate = auto: ul_auto sets the shaper's rate */
	struct ulq_auto ul_auto;

	/*
	 * Downlink shaper (downlink-rate, dl-shaper.c): NULL = off, and then the downlink costs
	 * one test of this pointer per packet. Packets wait in dlq's slots (FQ-CoDel, the uplink's
	 * queue code) and dl_shaper_timer releases them at dl_shaper's rate, set by dl_auto with
	 * downlink-rate = auto.
	 */
	struct ulq *dlq;
	struct ulq_shaper dl_shaper;
	ev_timer dl_shaper_timer;
	struct dl_auto *dl_auto;
	/*
	 * dl_auto's clock, read once per IN transfer: the loop's time is the time the loop woke,
	 * and a packet handled later in the same turn (the host preempted qmapd, a long batch)
	 * would read as sent later than it was; dl_auto's per-flow minimum takes such an early
	 * reading as the empty path's delay and sees a queue that is not there ever after.
	 */
	uint64_t dl_auto_now;
	uint64_t dl_shaper_fixed; /* the configured rate; 0 with auto */

	/* The uplink aggregate being filled; with NTB framing ul_ntb builds it. */
	struct transport_out *ul_out;
	struct ntb_builder ul_ntb;
	uint16_t ul_ntb_sequence; /* wSequence of the next uplink NTB */
	/* The uplink limits are an MBIM function's: the QMAP ones to go back to if a QMI
	 * function comes next (the same sim socket may play either). */
	bool ntb_limits;
	uint32_t qmap_ul_max_size, qmap_ul_max_datagrams;
	uint32_t ul_frames;
	ev_prepare ul_flush;
	ev_timer headroom_timer;

	struct datapath_stats stats;
};

/* GRO's emit callback for a mux (mux.c sets it up). */
void datapath_dl_gro_emit(void *userdata, const struct iovec *iov, int iovcnt);

#define ETH_HEADER_SIZE 14

/* The function is MBIM: NTBs both ways (datapath-ntb.c) instead of QMAP. */
static inline bool datapath_is_ntb(const struct datapath *dp)
{
	return dp->transport->framing == TRANSPORT_FRAMING_NTB;
}

/* Where a mux's packets go in an NTB: MBIM session id = mux id - 1 (mux 1 carries session 0,
 * the default connection; qmapd-sim maps them the same way). */
static inline uint8_t datapath_mux_session(const struct mux *m)
{
	return (uint8_t)(m->id - 1);
}

/* Downlink (datapath-dl.c). */
void datapath_gro_flush(void *userdata);
/* Write one downlink packet of the mux (through GRO): the shaper's release. */
void datapath_dl_write(struct datapath *dp, struct mux *m, uint8_t *pkt, size_t len, bool ipv6,
		       unsigned gro_flags);
/* End a batch of downlink writes: flush GRO and the ring, headroom's per-batch check. */
void datapath_dl_batch_flush(struct datapath *dp);

/* Downlink shaper (dl-shaper.c). */
#define DATAPATH_DLQ_BURST_NS	   2000000ULL /* timers resolve ~1 ms: a burst of two */
#define DATAPATH_DLQ_RELEASE_BATCH 64
#define DATAPATH_DLQ_F_IPV6	   1
#define DATAPATH_DLQ_F_CSUM_VALID  2
/* Set up the shaper if the device asks for one (downlink-rate). 0 or -ENOMEM. */
int datapath_dlq_new(struct datapath *dp, const struct config_device *dev);
void datapath_dlq_free(struct datapath *dp);
/* The mux's flows in the shaper (no-op when off). 0 or -ENOMEM. */
int datapath_dlq_mux_add(struct datapath *dp, struct mux *m, const struct ulq_codel_params *cp);
/* Take a downlink packet into the shaper: true when it is queued (or dropped, counted). */
bool datapath_dlq_enqueue(struct datapath *dp, struct mux *m, const uint8_t *pkt, size_t len,
			  bool ipv6, unsigned gro_flags);
/* Write what the rate allows now; arm the timer for the rest. */
void datapath_dlq_release(struct datapath *dp);
void datapath_write_flush(struct datapath *dp);
/*
 * Benchmarks and tests: every mux's downlink writes in one mode (enum write_mode_kind), or each
 * mux measuring again from now (-1, the default). always_try_gro: never skip GRO
 * (gro-auto.h); false: each mux decides again from now.
 */
void datapath_force_dl_modes(struct datapath *dp, int write_mode, bool always_try_gro);
/* A mux's downlink write and GRO state, as a new mux starts (mux_new). */
void datapath_dl_modes_init(struct datapath *dp, struct mux *m);
void datapath_send_pending_acks(struct datapath *dp);

/* NTB framing, uplink (datapath-ntb.c). */
/* Start an uplink NTB in dp->ul_out. 0 or -EINVAL (parameters the builder refuses). */
int datapath_ntb_ul_start(struct datapath *dp);
/* Close the NTB in dp->ul_out: out->len is its block length. */
void datapath_ntb_ul_finish(struct datapath *dp);
/* Room for one more datagram of any session, even one not in the NTB yet (0: none). */
size_t datapath_ntb_ul_room_any(const struct datapath *dp);
/* Apply the negotiated parameters to the uplink limits, when the function appears. */
void datapath_ntb_connected(struct datapath *dp);

/* Checksums the modem completes (QMAPv5 offload): GSO leaves them; else GSO computes them. */
static inline unsigned datapath_ul_gso_flags(const struct datapath *dp)
{
	return !datapath_is_ntb(dp) && dp->version == QMAP_V5 ? GSO_F_L4_CSUM_OFFLOAD : 0;
}

/* Uplink (datapath-ul.c). */
void datapath_ul_flush(struct datapath *dp);
struct transport_out *datapath_ul_room(struct datapath *dp, uint32_t need);
struct transport_out *datapath_ul_room_control(struct datapath *dp, uint32_t need);
void datapath_ul_segment_resume(struct datapath *dp);
void datapath_ul_on_readable(struct ev_loop *loop, ev_io *w, int revents);
/*
 * The uplink's part of the loop's prepare, and only there (the reads it resumes must not
 * nest in a read): the reads that waited resume, the muxes in turn, and queued packets move
 * into aggregates while the in-flight limit and the shaper allow.
 */
void datapath_ul_prepare(struct datapath *dp);
/* OUT transfers are free again: a fifo reader that waited for them resumes at the prepare. */
void datapath_ul_transfers_freed(struct datapath *dp);
/* The queue for fq-codel muxes, allocated once with the first. 0 or -ENOMEM. */
int datapath_ulq_get(struct datapath *dp);
uint64_t datapath_now_ns(const struct datapath *dp);
/* CLOCK_MONOTONIC now, nanoseconds (a vDSO read, not the loop's cached time). */
uint64_t datapath_clock_ns(void);
/* Hand the OUT completions since the last call to the in-flight limit, as one batch. */
void datapath_ul_sync_completions(struct datapath *dp);

#endif
