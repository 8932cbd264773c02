/* SPDX-License-Identifier: MIT */
/* One mux: its network device, addresses, routes, counters. Private to the datapath. */
#ifndef QMAPD_MUX_H
#define QMAPD_MUX_H

#include <ev.h>

#include "datapath.h"
#include "gro-auto.h"
#include "write-mode.h"

/* Bytes of L2 header in front of a downlink packet written into a TAP: Ethernet (14) and one
 * 802.1Q tag (4). Uplink frames the kernel gives us carry no tag (ETH_HEADER_SIZE). */
#define MUX_DL_L2_SIZE	18
#define MUX_DL_ETH_SIZE 14 /* the same without the tag */
/*
 * The largest lone frame (Ethernet + IP) written untagged while XDP is attached: tun builds a
 * frame with XDP's headroom only if it fits a page with it (tun_can_build_skb(): frame + 64 +
 * 256, aligned, + skb_shared_info <= 4096, 3456 bytes on x86-64); below that with margin for
 * architectures with a larger NET_SKB_PAD or skb_shared_info.
 */
#define MUX_DL_XDP_FRAME_MAX 3000

struct gro;
struct ulq_mux;

struct mux {
	struct datapath *dp;
	uint8_t id;
	uint32_t mtu;
	struct netdev nd;
	ev_io io;
	bool reading;
	bool link_up;	     /* the session is connected (or the addresses are static) */
	bool kept;	     /* IFF_PERSIST for a restart or crash (mux_keep_device()) */
	bool handed_over;    /* ...and left so at exit (mux_hand_over()) */
	bool flow_off;	     /* the modem sent FLOW_DISABLE: leave the device unread until ENABLE */
	struct gro *gro;     /* with a virtio-net header: downlink coalescing, else NULL */
	struct ulq_mux *ulq; /* uplink-queue = fq-codel: its flows; NULL: fifo */
	struct ulq_mux *dlq; /* its flows in the downlink shaper; NULL: no shaper */
	enum config_headroom headroom;
	struct {
		uint64_t last_packets, last_merged; /* GRO counters at the previous decision */
		uint64_t last_writes, last_rx_packets, last_tx_dropped;
		double merge_share; /* merged share of the last interval with traffic */
		double last_switch; /* ev_now() of the last switch (failed: later, slows retries) */
		bool primed;
	} hr;			  /* headroom.c's bookkeeping */
	struct gro_auto gro_auto; /* with GRO: skip the attempt while nothing merges */
	/* Downlink writes: writev or io_uring, by measured cost (write-mode.h). */
	struct write_mode wmode;
	/* This receive batch: the mux had downlink packets in it (flush GRO, check headroom),
	 * its writes take the ring, it is a probe sample (packets counted from dl_packets0). */
	bool dl_dirty;
	bool batch_uring;
	bool batch_measure;
	uint64_t dl_packets0;
	/* The L2 header we put in front of downlink packets on a TAP, [0] IPv4, [1] IPv6:
	 * Ethernet and an 802.1Q priority tag (VID 0) that buys headroom (mux.c). */
	uint8_t eth_header[2][MUX_DL_L2_SIZE];
	/* The same without the tag, for frames that get XDP's headroom (mux_update_dl_l2()). */
	uint8_t eth_plain[2][MUX_DL_ETH_SIZE];
	/* What a lone packet gets now: eth_plain while XDP is attached, else eth_header. */
	const uint8_t *dl_l2[2];
	uint8_t dl_l2_len;
	struct mux_stats stats;
};

/* Create the mux's device and apply the static configuration. Returns 0 or -errno. */
int mux_new(struct datapath *dp, const struct config_mux *cfg, bool persist, struct mux **ret);
/* Close the device (removed by the kernel unless persistent). NULL-safe. */
struct mux *mux_free(struct mux *m);

/*
 * Follow the device's generic-receive-offload feature: `ethtool -K DEV gro off` switches
 * qmapd's downlink merging off for this mux (each packet written alone), `gro on` back on.
 * Called from the datapath's periodic tick; a no-op for devices without GRO.
 */
void mux_sync_gro(struct mux *m);
/*
 * The L2 header of packets written alone (the per-packet path, GRO's lone packets): without
 * the priority tag while the device has XDP attached and such frames fit tun_build_skb()
 * (XDP's 256 bytes of headroom, the tag would only cost the receive path an untag), with it
 * otherwise. Call after the device's XDP program came or went.
 */
void mux_update_dl_l2(struct mux *m);
/* "on", "off" (switched off with ethtool) or "none" (a device without virtio-net header). */
const char *mux_gro_state(const struct mux *m);

#endif
