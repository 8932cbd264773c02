/* SPDX-License-Identifier: MIT */
/*
 * The data plane: transport <-> QMAP codec <-> one network device per mux.
 *
 * Downlink: a completed bulk IN transfer is deaggregated in place and every packet is
 * written to its mux's device straight from the transfer buffer (one writev with the mux's
 * prebuilt Ethernet header in front), then the buffer goes back to the ring.
 * Uplink: a readable device is read with readv, the frame header into scratch and the IP
 * packet straight into the current OUT aggregate after room for the QMAP header, which is
 * then written in front. An aggregate leaves when full, or when no device has more to read
 * in this loop iteration (an ev_prepare watcher), so aggregation adds no latency.
 */
#ifndef QMAPD_DATAPATH_H
#define QMAPD_DATAPATH_H

#include <ev.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "netdev.h"
#include "ntb.h"
#include "qmap.h"
#include "transport.h"

struct rtnl;
/* Both opaque outside src/daemon/datapath/: the rest of the daemon uses the functions below. */
struct datapath;
struct mux;

/* Counters of one mux. rx = downlink (towards the host), tx = uplink, as the device sees it. */
struct mux_stats {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t rx_dropped_queue_full; /* device queue full (EAGAIN): dropped, never waited for */
	uint64_t rx_dropped_write_error;
	uint64_t rx_writes;	    /* writes into the device (one per GRO super-packet) */
	uint64_t rx_silent_drops;   /* written, yet not counted by the device (generic XDP) */
	uint64_t headroom_switches; /* XDP attached or detached by headroom = auto */
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t tx_dropped_not_ip;    /* frames the kernel sent that are neither IPv4 nor IPv6 */
	uint64_t tx_dropped_too_big;   /* larger than the room left for one frame (MTU raised?) */
	uint64_t tx_dropped_link_down; /* read while the modem or the session was down */
	uint64_t tx_dropped_bad_gso;   /* a virtio-net header that contradicts its packet */
	uint64_t tx_dropped_device;    /* dropped by the device's own queue (its tx_dropped) */

	uint64_t tx_gso_segments; /* segments cut from TSO/USO super-packets */
	uint64_t commands_rx;	  /* QMAP command frames addressed to this mux */
};

/* Counters of the modem's data interface. */
struct datapath_stats {
	uint64_t dl_aggregates;	   /* transfers that carried at least one frame */
	uint64_t dl_datagrams;	   /* data frames parsed */
	uint64_t dl_datagrams_max; /* most data frames in one aggregate */
	uint64_t dl_unknown_mux;
	uint64_t dl_commands;
	uint64_t dl_flow_disable; /* QMAP FLOW_DISABLE requests honoured */
	uint64_t dl_flow_enable;
	uint64_t dl_commands_unsupported; /* other commands: not answered, as rmnet does */
	uint64_t ul_command_acks;
	uint64_t ul_command_acks_dropped; /* no room to answer (all OUT transfers busy) */
	uint64_t dl_malformed[_QMAP_ERR_MAX];
	uint64_t dl_ntb_malformed[_NTB_ERR_MAX]; /* MBIM: keys "ntb_" + ntb_error_name() */
	uint64_t ul_aggregates;
	uint64_t ul_datagrams;
	uint64_t ul_submit_errors;
	uint64_t modem_disconnects;
};

/* What the rest of the daemon hears from the data plane. All optional. */
struct datapath_events {
	void (*on_modem_up)(void *userdata);
	void (*on_modem_down)(void *userdata);
	/* A control message from the modem (encapsulated response or indication). */
	void (*on_control)(void *userdata, const uint8_t *buf, size_t len);
	void *userdata;
};

/*
 * Create the transport for one modem's settings (dev->device names it); buffers are sized from
 * them (the most the modem may grant). No muxes yet. Returns 0 or -errno, logging the reason
 * once.
 */
int datapath_new(struct ev_loop *loop, struct rtnl *rtnl, const struct config_device *dev,
		 const struct datapath_events *events, struct datapath **ret);
/*
 * The same over a backend the caller names instead of the one dev->device's scheme picks
 * (tests and benchmarks replay aggregates through tests/support's in-memory transport);
 * dev->device is then the backend's address.
 */
int datapath_new_with_backend(struct ev_loop *loop, struct rtnl *rtnl,
			      const struct config_device *dev, const struct transport_ops *backend,
			      const struct datapath_events *events, struct datapath **ret);
/* Removes the devices unless they were created persistent. NULL-safe. */
struct datapath *datapath_free(struct datapath *dp);

int datapath_start(struct datapath *dp);
/* A restart: when freed, let go of the modem without ending its sessions (transport.h). */
void datapath_keep_modem(struct datapath *dp);

/*
 * Create the mux's device (and static addresses/routes from cfg) and start reading it.
 * link_up: carrier follows the modem alone (static configuration); otherwise the session
 * raises it with datapath_mux_set_link(). Returns 0 or -errno (-EEXIST for a used id).
 */
int datapath_mux_add(struct datapath *dp, const struct config_mux *cfg, bool persist, bool link_up,
		     struct mux **ret);
/* Remove the mux and its device. -ENOENT if there is none. */
int datapath_mux_del(struct datapath *dp, unsigned id);
/* Session state of a mux: carrier is on while the modem is there and the link is up. */
void datapath_mux_set_link(struct datapath *dp, struct mux *m, bool up);

/*
 * Apply the data format the modem granted: QMAP version, downlink transfer size (<= what
 * the receive buffers hold, datapath_dl_buffer_size()), uplink aggregate limits, downlink
 * minimum padding (<= QMAP_DL_PADDING_MAX). -EINVAL if larger.
 */
int datapath_set_data_format(struct datapath *dp, enum qmap_version version, uint32_t dl_max_size,
			     uint32_t ul_max_size, uint32_t ul_max_datagrams,
			     uint32_t dl_min_padding);
/* Room of each receive buffer: the largest downlink grant that can be used. */
uint32_t datapath_dl_buffer_size(const struct datapath *dp);
/* The modem's data interface number (USB bInterfaceNumber), -1 while unknown. */
int datapath_data_interface(const struct datapath *dp);

/*
 * Have an io_uring for the downlink writes (uring.h), or not. On by default where io_uring
 * works; each mux then writes through it or with one writev per packet, whichever it measures
 * cheaper (write-mode.h; tests/bench/RESULTS.md "Downlink: two regimes"), and every mux
 * measures again from this call. Returns 0, or -EOPNOTSUPP where it is unavailable (liburing
 * missing at build time, io_uring_setup refused): one write per packet.
 */
int datapath_set_batch_writes(struct datapath *dp, bool on);

/* Downlink entry point (the transport's on_bulk_in); public for tests and benchmarks. */
void datapath_bulk_in(void *userdata, uint8_t *buf, size_t len);

/* ---- what the rest of the daemon may read ---- */

/* The modem is there (the transport is connected): transfers flow. */
bool datapath_modem_up(const struct datapath *dp);
/* The mux with this id, or NULL. */
struct mux *datapath_mux(const struct datapath *dp, unsigned id);
const struct datapath_stats *datapath_get_stats(const struct datapath *dp);
struct transport *datapath_transport(const struct datapath *dp);
/* An encapsulated command to the modem's control channel. */
int datapath_control_send(struct datapath *dp, const uint8_t *buf, size_t len);

unsigned mux_id(const struct mux *m);
/* The mux's network device: name, ifindex, kind, headroom status. */
const struct netdev *mux_netdev(const struct mux *m);
/*
 * Keep the device while qmapd runs (IFF_PERSIST, netdev_keep()), so that it outlives a crash
 * with its addresses and routes for the next qmapd; a stop or removal drops it as before
 * (mux_unkeep_device()), a restart leaves it (mux_hand_over()).
 */
int mux_keep_device(struct mux *m);
/* Kept (mux_keep_device()) and not dropped since. */
bool mux_is_kept(const struct mux *m);
void mux_hand_over(struct mux *m);
void mux_unkeep_device(struct mux *m);
const struct mux_stats *mux_get_stats(const struct mux *m);

/* The framing in use and, for NTB, what was negotiated (NULL with QMAP or while absent). */
enum transport_framing datapath_framing(const struct datapath *dp);
const struct transport_ntb *datapath_ntb(const struct datapath *dp);

/* Human-readable counters, `key=value` per line (format documented in datapath.c). */
void datapath_print_stats(const struct datapath *dp, FILE *f, const char *prefix);

#endif
