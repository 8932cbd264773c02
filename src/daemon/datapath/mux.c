/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath-internal.h"
#include "log-mux.h"
#include "mux.h"
#include "rtnl.h"

/*
 * The frames we write into a TAP. Source MAC locally administered, the mux id in its last
 * byte so a capture shows which mux a frame came from. Then an 802.1Q priority tag (VID 0,
 * PCP 0), which the receive path strips and otherwise ignores (__netif_receive_skb_core: a
 * VID-0 tag without a VLAN device is "802.1P", the frame goes on untagged), and stripping
 * moves the packet 4 bytes further from the head: a TAP write gets NET_SKB_PAD (64) of
 * headroom before its Ethernet header unless tun_build_skb gives it XDP's (tun_alloc_skb's
 * tun->align; a master such as a bridge could raise it, nothing else), so its IP header
 * starts 78 bytes in, and forwarding into VXLAN over IPv4 needs 80 (ip_forward's skb_cow
 * for LL_RESERVED_SPACE of the tunnel): every GRO super-packet, too large for
 * tun_build_skb, was re-allocated once. With the tag: 82 (VXLAN over IPv6 wants 96: not
 * enough). (tests/bench/RESULTS.md, "Headroom into VXLAN, per mode".)
 */
static void mux_build_eth_headers(struct mux *m)
{
	static const uint16_t ethertype[2] = { 0x0800, 0x86dd };

	for (int i = 0; i < 2; i++) {
		uint8_t *h = m->eth_header[i];
		memcpy(h, m->nd.mac, 6);
		h[6] = 0x02;
		h[7] = 'Q';
		h[8] = 'M';
		h[9] = 'A';
		h[10] = 'P';
		h[11] = m->id;
		h[12] = 0x81; /* ETH_P_8021Q */
		h[13] = 0x00;
		h[14] = 0x00; /* PCP 0, DEI 0, VID 0 */
		h[15] = 0x00;
		h[16] = ethertype[i] >> 8;
		h[17] = ethertype[i] & 0xff;
		memcpy(m->eth_plain[i], h, 12);
		memcpy(m->eth_plain[i] + 12, h + 16, 2);
	}
}

/*
 * A lone frame that tun builds with XDP's headroom (256 + 64 bytes before it) has room for
 * any encapsulation without the tag, whose untag costs the receive path 10-24 ns per packet
 * (qmapd-bench-dl -s, RESULTS.md "Downlink: two regimes"); the tag stays for super-packets
 * (never built that way) and for every frame while XDP is off.
 */
void mux_update_dl_l2(struct mux *m)
{
	bool plain = m->nd.kind == NETDEV_KIND_TAP_XDP && !m->nd.xdp_detached &&
		     m->mtu + MUX_DL_L2_SIZE <= MUX_DL_XDP_FRAME_MAX;

	for (int i = 0; i < 2; i++)
		m->dl_l2[i] = plain ? m->eth_plain[i] : m->eth_header[i];
	m->dl_l2_len = plain ? MUX_DL_ETH_SIZE : MUX_DL_L2_SIZE;
	if (m->gro)
		gro_set_alone_l2(m->gro, plain);
}

static int mux_configure(struct mux *m, const struct config_mux *cfg)
{
	const struct config_prefix *addrs[] = { &cfg->ipv4_address, &cfg->ipv6_address };
	char text[INET6_ADDRSTRLEN];
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(addrs); i++) {
		if (addrs[i]->family == 0)
			continue;
		r = rtnl_addr_add(m->dp->rtnl, m->nd.ifindex, addrs[i]);
		if (r < 0) {
			inet_ntop(addrs[i]->family, &addrs[i]->addr, text, sizeof(text));
			return log_mux_error_errno(NULL, m->id, m->nd.name, r,
						   "cannot add address %s/%u", text,
						   addrs[i]->prefixlen);
		}
	}
	/* Static addresses (control = none): the default route goes with them at once. */
	for (size_t i = 0; cfg->default_route && i < ARRAY_SIZE(addrs); i++) {
		struct config_prefix any = { .family = addrs[i]->family };
		if (any.family == 0)
			continue;
		r = rtnl_route_add(m->dp->rtnl, m->nd.ifindex, &any, cfg->route_metric);
		if (r < 0)
			return log_mux_error_errno(NULL, m->id, m->nd.name, r,
						   "cannot add default route");
	}
	for (unsigned i = 0; i < cfg->n_routes; i++) {
		r = rtnl_route_add(m->dp->rtnl, m->nd.ifindex, &cfg->routes[i], cfg->route_metric);
		if (r < 0) {
			inet_ntop(cfg->routes[i].family, &cfg->routes[i].addr, text, sizeof(text));
			return log_mux_error_errno(NULL, m->id, m->nd.name, r,
						   "cannot add route %s/%u", text,
						   cfg->routes[i].prefixlen);
		}
	}
	return 0;
}

int mux_new(struct datapath *dp, const struct config_mux *cfg, bool persist, struct mux **ret)
{
	struct mux *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	m->dp = dp;
	m->id = cfg->id;
	m->mtu = cfg->mtu;
	m->headroom = cfg->headroom;
	m->nd.fd = -1;

	r = netdev_create(dp->rtnl, cfg->interface, cfg->headroom, cfg->mtu, persist,
			  dp->offload_devices, &m->nd);
	if (r < 0) {
		free(m);
		/* The caller reports it, with what it was doing. */
		return log_mux_debug_errno(NULL, cfg->id, cfg->interface, r,
					   "cannot create network device");
	}
	r = mux_configure(m, cfg);
	if (r < 0) {
		mux_free(m);
		return r;
	}
	mux_build_eth_headers(m);
	if (m->nd.vnet_hdr_len) {
		bool tap = m->nd.kind == NETDEV_KIND_TAP_XDP;
		struct gro_config gc = {
			.vnet_hdr_len = m->nd.vnet_hdr_len,
			.l2_len = tap ? sizeof(m->eth_header[0]) : 0,
			.l2_header = { m->eth_header[0], m->eth_header[1] },
			.l2_alone_len = tap ? sizeof(m->eth_plain[0]) : 0,
			.l2_alone_header = { m->eth_plain[0], m->eth_plain[1] },
			.max_flows = GRO_MAX_FLOWS,
			.max_segs = GRO_MAX_SEGS,
			.max_bytes = 65535,
			.tcp = true,
			.udp = m->nd.uso,
			.emit = datapath_dl_gro_emit,
			.userdata = m,
		};
		m->gro = calloc(1, sizeof(*m->gro));
		if (!m->gro || gro_init(m->gro, &gc) < 0) {
			mux_free(m);
			return log_mux_error_errno(NULL, cfg->id, cfg->interface, -ENOMEM,
						   "cannot set up GRO");
		}
	}
	mux_update_dl_l2(m);
	datapath_dl_modes_init(dp, m);
	if (cfg->uplink_queue == CONFIG_UPLINK_QUEUE_FQ_CODEL) {
		/* A config built without config_mux_init_defaults() gets RFC 8290's values. */
		struct ulq_codel_params cp = {
			.target_ns =
				(uint64_t)(cfg->codel_target_us ?: CONFIG_CODEL_TARGET_DEFAULT_US) *
				1000,
			.interval_ns = (uint64_t)(cfg->codel_interval_us
							  ?: CONFIG_CODEL_INTERVAL_DEFAULT_US) *
				       1000,
			.ecn = true,
		};
		if (cfg->mtu > ULQ_SLOT_SIZE) {
			log_mux_warning(
				NULL, m->id, m->nd.name,
				"mtu %u is above the queue's %u-byte slots, uplink-queue fifo",
				cfg->mtu, ULQ_SLOT_SIZE);
		} else if ((r = datapath_ulq_get(dp)) < 0 ||
			   (r = ulq_mux_new(dp->ulq, m->id, &cp, &m->ulq)) < 0) {
			mux_free(m);
			return log_mux_error_errno(NULL, cfg->id, cfg->interface, r,
						   "cannot set up the uplink queue");
		}
	}
	/* The downlink shaper's flows: CoDel as the uplink's (RFC 8290's values by default). */
	struct ulq_codel_params dcp = {
		.target_ns =
			(uint64_t)(cfg->codel_target_us ?: CONFIG_CODEL_TARGET_DEFAULT_US) * 1000,
		.interval_ns =
			(uint64_t)(cfg->codel_interval_us ?: CONFIG_CODEL_INTERVAL_DEFAULT_US) *
			1000,
		.ecn = true,
	};
	if ((r = datapath_dlq_mux_add(dp, m, &dcp)) < 0) {
		mux_free(m);
		return log_mux_error_errno(NULL, cfg->id, cfg->interface, r,
					   "cannot set up the downlink shaper");
	}
	log_mux_info(NULL, m->id, m->nd.name, "device ready, %s, mtu %u, uplink-queue %s",
		     m->nd.status, m->mtu, m->ulq ? "fq-codel" : "fifo");
	*ret = m;
	return 0;
}

struct mux *mux_free(struct mux *m)
{
	if (!m)
		return NULL;
	if (m->dp && m->dp->loop)
		ev_io_stop(m->dp->loop, &m->io);
	mux_unkeep_device(m);
	if (m->nd.fd >= 0)
		netdev_close(&m->nd);
	free(m->gro);
	m->ulq = ulq_mux_free(m->ulq); /* its queued packets are dropped (drops_flushed) */
	m->dlq = ulq_mux_free(m->dlq);
	free(m);
	return NULL;
}

void mux_sync_gro(struct mux *m)
{
	bool on;

	if (!m->gro || rtnl_link_get_gro(m->dp->rtnl, m->nd.name, &on) < 0)
		return;
	if (on == !m->gro->off)
		return;
	gro_set_off(m->gro, !on);
	log_mux_info(NULL, m->id, m->nd.name, "generic-receive-offload %s, downlink merging %s",
		     on ? "on" : "off", on ? "resumed" : "stopped");
}

const char *mux_gro_state(const struct mux *m)
{
	if (!m->gro)
		return "none";
	return m->gro->off ? "off" : "on";
}

unsigned mux_id(const struct mux *m)
{
	return m->id;
}

int mux_keep_device(struct mux *m)
{
	int r = netdev_keep(&m->nd, true);
	if (r >= 0)
		m->kept = true;
	return r;
}

bool mux_is_kept(const struct mux *m)
{
	return m->kept;
}

void mux_hand_over(struct mux *m)
{
	m->handed_over = true;
}

void mux_unkeep_device(struct mux *m)
{
	/* A stop (or a mux removed): the device goes with its fd, unless the config keeps it. */
	if (m->kept && !m->handed_over && !m->nd.persist && m->nd.fd >= 0)
		(void)netdev_keep(&m->nd, false);
	m->kept = false;
}

const struct netdev *mux_netdev(const struct mux *m)
{
	return &m->nd;
}

const struct mux_stats *mux_get_stats(const struct mux *m)
{
	return &m->stats;
}
