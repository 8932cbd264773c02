/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim data side (see sim.h for the behaviour and the stats format).
 *
 * What matters most is that the simulator never blocks the loop (every fd is non-blocking, a
 * full socket parks the downlink aggregate and stops reading the TUN until the socket drains,
 * with the rest of a super-packet kept for then) and that it counts everything it drops, so
 * tests can compare its counters with qmapd's. Its cost per byte matters too, since it limits
 * what a benchmark can drive through qmapd: hence the TUN offloads (sim-net.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rtnl.h"
#include "sim-net.h"
#include "sim-ntb.h"
#include "sim-radio.h"
#include "sim.h"
#include "transport.h"
#include "atomic-file.h"
#include "byteorder.h"
#include "csum.h"

/* Frames read from the TUN or the socket per wakeup, so neither direction starves the other. */
#define SIM_READ_BUDGET 256
#define SIM_SNDBUF	(4 * 1024 * 1024) /* a burst of 64 KiB aggregates while qmapd is slow */
#define SIM_BACKLOG	4
/* Uplink transfers received before their packets go to the TUN: with offload, the segments of
 * a flow in several transfers leave as one super-packet (a 64 KiB one from 16 KiB transfers). */
#define SIM_UL_BATCH 8
/* The downlink rate lets aggregates go in bursts this long: timers resolve ~1 ms. */
#define SIM_DL_BURST_NS 2000000ULL
/* The radio's deliveries to the TUN go in batches at most this often (one wakeup per packet
 * would be 80 000 a second at 1 Gbit/s); the air interface itself keeps exact time. */
#define SIM_RADIO_BATCH_NS 200000ULL

#define IPV4_HEADER  20
#define IPV6_HEADER  40
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17

/* A QMAP frame's payload is padded to this, as modems do. */
#define SIM_DL_ALIGN 4
/* DL minimum padding: "valid values 0-64, must be 4-bytes aligned" (Telit SDK wda.h). */
#define SIM_DL_PADDING_MAX 64

/* Scratch room for the segments of one super-packet cut for NTBs (64 KiB of payload plus
 * the headers every segment repeats). */
#define SIM_NTB_SEG_ROOM (128 * 1024)

static void ntb_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void ntb_put_le32(uint8_t *p, uint32_t v)
{
	ntb_put_le16(p, (uint16_t)v);
	ntb_put_le16(p + 2, (uint16_t)(v >> 16));
}

/* Control messages held while the socket is full. A host that stops reading its control
 * channel gets no more than this; a real exchange has a handful in flight. */
#define SIM_CTL_QUEUE_MAX 64

static const uint8_t garbage_payload[8] = { 0xde, 0xad, 0xbe, 0xef, 0x51, 0x4d, 0x00, 0x01 };

struct sim_route {
	struct config_prefix prefix;
	uint8_t mux_id;
};

/* A control message (transport header included) waiting for room in the socket. */
struct sim_ctl_msg {
	struct sim_ctl_msg *next;
	size_t len;
	uint8_t data[];
};

struct sim {
	struct ev_loop *loop;
	struct sim_options opts;
	size_t hdr_size;   /* QMAP data header incl. the v5 checksum header */
	uint32_t dl_pad;   /* granted DL minimum padding: zeros in front of every frame */
	size_t frame_room; /* hdr_size + dl_pad: what goes in front of every DL payload */
	uint8_t first_mux;

	struct sim_route *routes;
	unsigned n_routes;

	struct rtnl *rtnl;
	struct sim_net *net;
	const char *net_name; /* the TUN's name, once it exists */

	int listen_fd;
	int conn_fd;
	bool bound; /* we created the socket file, so we remove it */
	ev_io io_listen;
	ev_io io_conn_read;
	ev_io io_conn_write;
	ev_io io_tun;
	ev_timer flush_timer;
	ev_timer state_timer; /* registration changes become indications (sim_*_tick) */

	/* Uplink: SIM_UL_BATCH messages of ul_msg_size, headers included. */
	uint8_t *ul_buf;
	size_t ul_msg_size;

	/* Downlink: transport header followed by the aggregate being built. */
	uint8_t *dl_buf;
	size_t dl_len;		/* aggregate bytes so far, excluding the transport header */
	uint32_t dl_packets;	/* real packets in it */
	unsigned dl_inject;	/* injections in this aggregate */
	size_t dl_tail_reserve; /* room kept for the trailing oversize header */
	bool dl_begun;		/* leading injections (if any) are in */
	bool dl_sealed;		/* trailer written, waiting to be sent */
	bool dl_blocked;	/* socket full: waiting for EV_WRITE, TUN not read */
	uint8_t dl_mux;		/* the mux of the super-packet being segmented */

	uint32_t inject_txn;
	uint8_t unknown_mux_packet[32];

	/* Control side. */
	struct sim_qmi *qmi;
	uint32_t dl_alloc_size; /* dl_buf's room: the command line's dl_max_size */
	bool csum_valid_opt;	/* --csum-valid, in effect whenever the format is QMAPv5 */
	struct sim_ctl_msg *ctl_head;
	struct sim_ctl_msg **ctl_tail;
	unsigned ctl_queued;
	/* The parked aggregate was held back before the queued control messages: it goes
	 * first, so the host sees data and control in the order the modem produced them. */
	bool dl_before_ctl;

	/* The radio: NULL when the options ask for none. */
	struct sim_radio *radio;
	/* A timerfd, not an ev_timer: libev's epoll backend sleeps whole milliseconds, at least
	 * one, and a 32 KiB modem buffer drains in 1.3 ms at 200 Mbit/s. */
	int radio_timer_fd;
	ev_io io_radio_timer;
	uint64_t radio_armed;	  /* when the timerfd fires (CLOCK_MONOTONIC ns), 0: disarmed */
	uint64_t radio_last_run;  /* deliveries go in batches (SIM_RADIO_BATCH_NS) */
	uint64_t ul_take_ns;	  /* when the modem took the transfer being read */
	bool ul_stalled;	  /* the modem buffer is full: the socket is left unread */
	uint32_t ul_stall_bytes;  /* the size of the transfer it could not take */
	uint32_t ul_acks_pending; /* OUT transfers taken but not yet acknowledged */
	uint64_t dl_next_ns;	  /* the downlink rate lets the next aggregate go then */
	bool dl_paused;		  /* the TUN is left unread until dl_next_ns */
	ev_timer dl_pace_timer;

	/* MBIM: the control engine and the NTB data side. */
	struct sim_mbim *mbim;
	enum ntb_format ntb_format; /* SET_NTB_FORMAT: NTB16 on every new connection */
	uint32_t ntb_in_size;	    /* SET_NTB_INPUT_SIZE: dwNtbInMaxSize until then */
	uint16_t ntb_in_max_dgrams; /* its 8-byte form; 0 = none given */
	uint16_t ntb_sequence;	    /* wSequence of the next IN NTB */
	struct ntb_builder dl_ntb;  /* the IN NTB in dl_buf, valid while dl_ntb_open */
	bool dl_ntb_open;
	uint8_t *ntb_rx;	     /* a packet read from the TUN (no offload) */
	uint8_t *ntb_seg;	     /* segments of a super-packet (offload) */
	struct gso_segment held[64]; /* read but not yet in an NTB: the socket was full */
	unsigned held_n, held_next;
	uint8_t held_session;

	struct sim_stats stats;
};

static uint64_t now_ns(const struct sim *s)
{
	return (uint64_t)(ev_now(s->loop) * 1e9);
}

/* The radio's clock: read when needed, not the loop's cached time. */
static uint64_t radio_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *const inject_names[_SIM_INJECT_MAX] = {
	[SIM_INJECT_GARBAGE] = "garbage",
	[SIM_INJECT_UNKNOWN_MUX] = "unknown-mux",
	[SIM_INJECT_COMMAND] = "command",
	[SIM_INJECT_OVERSIZE] = "oversize",
	[SIM_INJECT_BAD_SIGNATURE] = "bad-signature",
	[SIM_INJECT_BAD_BLOCK_LENGTH] = "bad-block-length",
	[SIM_INJECT_NDP_LOOP] = "ndp-loop",
	[SIM_INJECT_DATAGRAM_OUTSIDE] = "datagram-outside",
};

/* Stats keys may not contain '-', so they have their own spelling. */
static const char *const inject_keys[_SIM_INJECT_MAX] = {
	[SIM_INJECT_GARBAGE] = "garbage",
	[SIM_INJECT_UNKNOWN_MUX] = "unknown_mux",
	[SIM_INJECT_COMMAND] = "command",
	[SIM_INJECT_OVERSIZE] = "oversize",
	[SIM_INJECT_BAD_SIGNATURE] = "bad_signature",
	[SIM_INJECT_BAD_BLOCK_LENGTH] = "bad_block_length",
	[SIM_INJECT_NDP_LOOP] = "ndp_loop",
	[SIM_INJECT_DATAGRAM_OUTSIDE] = "datagram_outside",
};

static const char *const command_type_keys[4] = {
	[QMAP_COMMAND_REQUEST] = "request",
	[QMAP_COMMAND_ACK] = "ack",
	[QMAP_COMMAND_UNSUPPORTED] = "unsupported",
	[QMAP_COMMAND_INVALID] = "invalid",
};

/*
 * The modem families of docs/PROTOCOLS.md §5. Where the public record says nothing (marked
 * "unknown" there) the profile is strict: that is what a client must survive.
 */
const struct sim_profile sim_profiles[] = {
	{
		.name = "default",
		.summary = "qmapd-sim's own: QMAPv5, grants min(request, limit), lenient checks",
		.dl_max_size = CONFIG_DL_MAX_SIZE_DEFAULT,
		.dl_max_datagrams = SIM_DL_MAX_DATAGRAMS_DEFAULT,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = SIM_QMI_DATA_INTERFACE_DEFAULT },
	},
	{
		/* Quectel EC25-E EC25EFAR06A11M4G, EC20, AG35, SIMCom SIM7600E: v1 only, 4096 /
		 * 10 whatever was asked, UL 11-16 / 4096, raw IP only. */
		.name = "mdm9x07",
		.summary = "MDM9x07 LTE Cat 4 (EC25-E, SIM7600E): QMAP v1, DL 4096/10 fixed",
		.no_qmapv5 = true,
		.dl_max_size = 4096,
		.dl_max_datagrams = 10,
		.ul_max_size = 4096,
		.ul_max_datagrams = 16,
		.quirks = { .data_interface = 4, .dl_grant_fixed = true },
	},
	{
		/* Quectel EC20 CEHCLGR06A03M1G: the same with 16 bytes of DL minimum padding. */
		.name = "mdm9x07-pad16",
		.summary = "MDM9x07 (EC20 CEHCLGR06A03M1G): as mdm9x07, DL minimum padding 16",
		.no_qmapv5 = true,
		.dl_max_size = 4096,
		.dl_max_datagrams = 10,
		.ul_max_size = 4096,
		.ul_max_datagrams = 16,
		.quirks = { .data_interface = 4, .dl_grant_fixed = true, .dl_min_padding = 16 },
	},
	{
		/* Quectel RM500Q GLABR10A03M4G / GLABR11A01M4G: QMAPv5, 16384 as asked, UL
		 * datagrams 16 when 11 were asked, UL size at least 8192. */
		.name = "sdx55",
		.summary = "SDX55 5G (RM500Q): QMAPv5, DL up to 16384, UL grants above the request",
		.dl_max_size = 16384,
		.dl_max_datagrams = 32,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = 4, .ul_min_datagrams = 16, .ul_min_size = 8192 },
	},
	{
		/* Quectel RM520N-CN RM520NCNAAR05A02M4G: 31744 bytes down, whatever was asked. */
		.name = "sdx62",
		.summary = "SDX62 5G (RM520N): QMAPv5, DL 31744 fixed, UL at least 11 / 8192",
		.dl_max_size = 31744,
		.dl_max_datagrams = 32,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = 4,
			    .dl_grant_fixed = true,
			    .ul_min_datagrams = 11,
			    .ul_min_size = 8192 },
	},
	{
		/* Fibocom FM150-AE (SDX55): 32768 bytes down whatever was asked (netdev
		 * 2021-08-01, libqmi issue 71). Its protocol and uplink grant are not public: an
		 * SDX55's QMAPv5 and the request's uplink limits. */
		.name = "fm150",
		.summary = "Fibocom FM150-AE (SDX55): QMAPv5, DL 32768 fixed",
		.dl_max_size = 32768,
		.dl_max_datagrams = 32,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = 4, .dl_grant_fixed = true },
	},
	{
		/* telit/tqmi-connect: QMAP (v1), 16384, data interface 2, mux ids 112 and 113.
		 * Whether the firmware refuses QMAPv5 is unknown: strict, it does. */
		.name = "telit",
		.summary = "Telit (tqmi-connect): QMAP v1, 16384, interface 2, mux ids 112/113",
		.no_qmapv5 = true,
		.dl_max_size = 16384,
		.dl_max_datagrams = 32,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = 2,
			    .mux_restricted = true,
			    .mux_allowed = { [112 / 8] = 1u << (112 % 8) | 1u << (113 % 8) } },
	},
	{
		/* Newer firmware: WDA and bind without Endpoint Info are MISSING_ARGUMENT
		 * (ModemManager a8fd33eb; libqmi 3702c264). */
		.name = "strict",
		.summary = "newer firmware: Endpoint Info required, the right interface only",
		.dl_max_size = CONFIG_DL_MAX_SIZE_DEFAULT,
		.dl_max_datagrams = SIM_DL_MAX_DATAGRAMS_DEFAULT,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = SIM_QMI_DATA_INTERFACE_DEFAULT,
			    .require_endpoint_info = true },
	},
	{
		/* Sierra MDM9x30 (EM7455; qmi_wwan: interface 8): the old DMS UIM messages are
		 * InvalidQmiCommand (libqmi-devel 2015-11, openwrt/packages#10565), the SIM is
		 * only reachable through UIM. Its data format grant is not public: the default's. */
		.name = "mdm9x30",
		.summary = "Sierra MDM9x30 (EM7455): no DMS UIM messages, SIM through UIM only",
		.dl_max_size = CONFIG_DL_MAX_SIZE_DEFAULT,
		.dl_max_datagrams = SIM_DL_MAX_DATAGRAMS_DEFAULT,
		.ul_max_size = SIM_QMI_UL_MAX_SIZE,
		.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		.quirks = { .data_interface = 8, .no_dms_uim = true },
	},
	{ .name = NULL },
};

int sim_options_apply_profile(struct sim_options *o, const char *name, char *errbuf, size_t errlen)
{
	for (const struct sim_profile *p = sim_profiles; p->name; p++) {
		if (strcmp(p->name, name) != 0)
			continue;
		o->profile = p->name;
		o->no_qmapv5 = p->no_qmapv5;
		o->qmap_version = p->no_qmapv5 ? QMAP_V1 : QMAP_V5;
		o->dl_max_size = p->dl_max_size;
		o->dl_max_datagrams = p->dl_max_datagrams;
		o->ul_max_size = p->ul_max_size;
		o->ul_max_datagrams = p->ul_max_datagrams;
		o->quirks = p->quirks;
		return 0;
	}
	if (!errbuf || errlen == 0)
		return -EINVAL;
	size_t n = (size_t)snprintf(errbuf, errlen, "unknown profile '%s': expected", name);
	for (const struct sim_profile *p = sim_profiles; p->name && n < errlen; p++)
		n += (size_t)snprintf(errbuf + n, errlen - n, " %s", p->name);
	return -EINVAL;
}

const char *sim_inject_to_string(enum sim_inject kind)
{
	if ((unsigned)kind >= _SIM_INJECT_MAX)
		return NULL;
	return inject_names[kind];
}

void sim_options_init(struct sim_options *o)
{
	*o = (struct sim_options){
		.mtu = CONFIG_MTU_DEFAULT,
		/* What qmapd's config defaults to, until the QMI side negotiates it (WDA). */
		.qmap_version = QMAP_V5,
		.dl_max_size = CONFIG_DL_MAX_SIZE_DEFAULT,
		.dl_max_datagrams = SIM_DL_MAX_DATAGRAMS_DEFAULT,
		.flush_usec = SIM_FLUSH_USEC_DEFAULT,
		.inject_every = SIM_INJECT_EVERY_DEFAULT,
		.session_mtu = SIM_QMI_MTU_DEFAULT,
		.offload = true,
		.ntb = {
			.formats = NTB_FORMATS_16,
			.in_max_size = SIM_NTB_IN_MAX_SIZE_DEFAULT,
			.in_divisor = SIM_NTB_DIVISOR_DEFAULT,
			.in_alignment = SIM_NTB_ALIGNMENT_DEFAULT,
			.out_max_size = SIM_NTB_OUT_MAX_SIZE_DEFAULT,
			.out_divisor = SIM_NTB_DIVISOR_DEFAULT,
			.out_alignment = SIM_NTB_ALIGNMENT_DEFAULT,
			.out_max_datagrams = SIM_NTB_OUT_MAX_DGRAMS_DEFAULT,
		},
		.mbim_max_control = SIM_MBIM_MAX_CONTROL_DEFAULT,
		.mbim_sim_state = 1, /* MBIM_SUBSCRIBER_READY_STATE_INITIALIZED */
		.mbim_max_segment = SIM_MBIM_MAX_SEGMENT_DEFAULT,
		.mbim_max_sessions = SIM_MBIM_MAX_SESSIONS_DEFAULT,
	};
	strcpy(o->netdev, SIM_NETDEV_DEFAULT);
	sim_options_apply_profile(o, "default", NULL, 0);
}

static const uint8_t *prefix_bytes(const struct config_prefix *p)
{
	return p->family == AF_INET ? (const uint8_t *)&p->addr.v4 : p->addr.v6.s6_addr;
}

static void prefix_mask(struct config_prefix *p)
{
	uint8_t *b = p->family == AF_INET ? (uint8_t *)&p->addr.v4 : p->addr.v6.s6_addr;
	size_t n = p->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < n; i++) {
		unsigned bits = p->prefixlen > 8 * i ? p->prefixlen - 8 * i : 0;
		if (bits < 8)
			b[i] &= (uint8_t)(0xff00 >> bits);
	}
}

static bool prefix_contains(const struct config_prefix *p, int family, const uint8_t *addr)
{
	if (p->family != family)
		return false;

	const uint8_t *net = prefix_bytes(p);
	unsigned full = p->prefixlen / 8, rest = p->prefixlen % 8;
	if (memcmp(net, addr, full) != 0)
		return false;
	return rest == 0 || ((net[full] ^ addr[full]) & (uint8_t)(0xff00 >> rest)) == 0;
}

static bool prefix_overlaps(const struct config_prefix *a, const struct config_prefix *b)
{
	const struct config_prefix *shorter = a->prefixlen <= b->prefixlen ? a : b;
	const struct config_prefix *longer = shorter == a ? b : a;

	return prefix_contains(shorter, longer->family, prefix_bytes(longer));
}

static const char *prefix_to_string(const struct config_prefix *p, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	if (!inet_ntop(p->family, prefix_bytes(p), addr, sizeof(addr)))
		strcpy(addr, "?");
	snprintf(buf, len, "%s/%u", addr, p->prefixlen);
	return buf;
}

int sim_options_add_mux(struct sim_options *o, const char *arg, char *errbuf, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg) {
		snprintf(errbuf, errlen, "invalid mux '%s': expected ID=PREFIX[,PREFIX...]", arg);
		return -EINVAL;
	}

	char *end;
	errno = 0;
	unsigned long id = strtoul(arg, &end, 10);
	if (end != eq || errno != 0 || arg[0] == '-' || arg[0] == '+' || id < CONFIG_MUX_ID_MIN ||
	    id > CONFIG_MUX_ID_MAX) {
		snprintf(errbuf, errlen, "invalid mux id '%.*s' in '%s': expected %d..%d",
			 (int)(eq - arg), arg, arg, CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
		return -EINVAL;
	}
	if (o->mux[id].present) {
		snprintf(errbuf, errlen, "mux %lu given twice in '%s'", id, arg);
		return -EEXIST;
	}

	struct sim_mux_options m = { .present = true };
	const char *p = eq + 1;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char one[INET6_ADDRSTRLEN + 8];

		if (n == 0 || n >= sizeof(one)) {
			snprintf(errbuf, errlen, "invalid prefix '%.*s' in '%s'", (int)n, p, arg);
			return -EINVAL;
		}
		if (m.n_prefix >= SIM_MUX_MAX_PREFIXES) {
			snprintf(errbuf, errlen, "too many prefixes in '%s': at most %d", arg,
				 SIM_MUX_MAX_PREFIXES);
			return -EINVAL;
		}
		memcpy(one, p, n);
		one[n] = '\0';
		struct config_prefix *pfx = &m.prefix[m.n_prefix];
		if (config_parse_prefix(one, pfx) < 0) {
			snprintf(errbuf, errlen, "invalid prefix '%s' in '%s'", one, arg);
			return -EINVAL;
		}
		/* The first of each family, as given, is what a session hands to the host. */
		if (pfx->family == AF_INET && m.host4.family == 0)
			m.host4 = *pfx;
		else if (pfx->family == AF_INET6 && m.host6.family == 0)
			m.host6 = *pfx;
		/* A mux prefix names a network; the kernel refuses routes with host bits. */
		prefix_mask(pfx);
		m.n_prefix++;
		if (!comma)
			break;
		p = comma + 1;
	}

	o->mux[id] = m;
	return 0;
}

int sim_options_add_net_address(struct sim_options *o, const char *arg, char *errbuf, size_t errlen)
{
	struct config_prefix pfx;

	if (o->n_net_address >= SIM_MAX_NET_ADDRESSES) {
		snprintf(errbuf, errlen, "too many net addresses at '%s': at most %d", arg,
			 SIM_MAX_NET_ADDRESSES);
		return -EINVAL;
	}
	if (config_parse_prefix(arg, &pfx) < 0) {
		snprintf(errbuf, errlen, "invalid net address '%s': expected ADDRESS/LEN", arg);
		return -EINVAL;
	}
	o->net_address[o->n_net_address++] = pfx;
	return 0;
}

int sim_options_add_apn(struct sim_options *o, const char *arg, char *errbuf, size_t errlen)
{
	struct sim_qmi_apn apn;
	int r;

	if (o->n_apn >= SIM_QMI_MAX_APNS) {
		snprintf(errbuf, errlen, "too many APNs at '%s': at most %d", arg,
			 SIM_QMI_MAX_APNS);
		return -EINVAL;
	}
	r = sim_qmi_parse_apn(arg, &apn, errbuf, errlen);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < o->n_apn; i++)
		if (strcasecmp(o->apn[i].name, apn.name) == 0) {
			snprintf(errbuf, errlen, "APN '%s' given twice", apn.name);
			return -EEXIST;
		}
	o->apn[o->n_apn++] = apn;
	return 0;
}

int sim_parse_inject(const char *arg, unsigned *ret_mask, char *errbuf, size_t errlen)
{
	unsigned mask = 0;
	const char *p = arg;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		unsigned k;

		for (k = 0; k < _SIM_INJECT_MAX; k++)
			if (strlen(inject_names[k]) == n && strncmp(inject_names[k], p, n) == 0)
				break;
		if (k == _SIM_INJECT_MAX) {
			snprintf(errbuf, errlen,
				 "unknown injection '%.*s' in '%s': expected garbage, unknown-mux, "
				 "command, oversize (QMI) or bad-signature, bad-block-length, "
				 "ndp-loop, datagram-outside (MBIM)",
				 (int)n, p, arg);
			return -EINVAL;
		}
		mask |= 1u << k;
		if (!comma)
			break;
		p = comma + 1;
	}

	*ret_mask = mask;
	return 0;
}

static bool pow2_at_least4(uint32_t v)
{
	return v >= 4 && (v & (v - 1)) == 0;
}

/* The NTB parameters a strict host would not have to correct (ntb_params_parse()). */
static int sim_options_validate_mbim(const struct sim_options *o, char *errbuf, size_t errlen)
{
	const struct ntb_params *p = &o->ntb;
	uint32_t in_limit = (p->formats & NTB_FORMATS_32) ? TRANSPORT_MAX_TRANSFER : 65535;

	if (p->in_max_size < NTB_MIN_IN_SIZE || p->in_max_size > in_limit) {
		snprintf(errbuf, errlen, "invalid NTB in max size %u: expected %d..%u",
			 p->in_max_size, NTB_MIN_IN_SIZE, in_limit);
		return -EINVAL;
	}
	if (p->out_max_size < NTB_MIN_OUT_SIZE || p->out_max_size > in_limit) {
		snprintf(errbuf, errlen, "invalid NTB out max size %u: expected %d..%u",
			 p->out_max_size, NTB_MIN_OUT_SIZE, in_limit);
		return -EINVAL;
	}
	if (!pow2_at_least4(p->out_divisor) || p->out_divisor >= p->out_max_size ||
	    !pow2_at_least4(p->out_alignment) || p->out_alignment >= p->out_max_size) {
		snprintf(errbuf, errlen,
			 "invalid NTB out divisor %u / alignment %u: expected powers of two, at "
			 "least 4 and below the out max size",
			 p->out_divisor, p->out_alignment);
		return -EINVAL;
	}
	if (p->out_remainder >= p->out_divisor) {
		snprintf(errbuf, errlen, "invalid NTB out remainder %u: expected below %u",
			 p->out_remainder, p->out_divisor);
		return -EINVAL;
	}
	if (o->mtu < SIM_MTU_MIN || o->mtu > p->in_max_size - SIM_NTB_RESERVED ||
	    o->mtu > p->out_max_size - SIM_NTB_RESERVED) {
		snprintf(errbuf, errlen,
			 "invalid MTU %u: expected %d..%u (the smaller NTB max size less %d)",
			 o->mtu, SIM_MTU_MIN,
			 (p->in_max_size < p->out_max_size ? p->in_max_size : p->out_max_size) -
				 SIM_NTB_RESERVED,
			 SIM_NTB_RESERVED);
		return -EINVAL;
	}
	if (o->mbim_max_control < SIM_MBIM_MAX_CONTROL_MIN) {
		snprintf(errbuf, errlen, "invalid wMaxControlMessage %u: expected at least %d",
			 o->mbim_max_control, SIM_MBIM_MAX_CONTROL_MIN);
		return -EINVAL;
	}
	if (o->mbim_max_sessions < 1 || o->mbim_max_sessions > SIM_MBIM_SESSIONS) {
		snprintf(errbuf, errlen, "invalid max sessions %u: expected 1..%d",
			 o->mbim_max_sessions, SIM_MBIM_SESSIONS);
		return -EINVAL;
	}
	return 0;
}

int sim_options_validate(const struct sim_options *o, char *errbuf, size_t errlen)
{
	if (o->socket_path[0] == '\0') {
		snprintf(errbuf, errlen, "no socket path");
		return -EINVAL;
	}
	if (o->netdev[0] == '\0') {
		snprintf(errbuf, errlen, "no network device name");
		return -EINVAL;
	}
	if (o->qmap_version != QMAP_V1 && o->qmap_version != QMAP_V5) {
		snprintf(errbuf, errlen, "invalid QMAP version %d: expected 1 or 5",
			 (int)o->qmap_version);
		return -EINVAL;
	}
	if (o->dl_max_size < CONFIG_DL_MAX_SIZE_MIN || o->dl_max_size > CONFIG_DL_MAX_SIZE_MAX) {
		snprintf(errbuf, errlen, "invalid downlink max size %u: expected %d..%d",
			 o->dl_max_size, CONFIG_DL_MAX_SIZE_MIN, CONFIG_DL_MAX_SIZE_MAX);
		return -EINVAL;
	}
	if (o->mbim) {
		if (sim_options_validate_mbim(o, errbuf, errlen) < 0)
			return -EINVAL;
	} else if (o->mtu < SIM_MTU_MIN || o->mtu > o->dl_max_size - SIM_DL_RESERVED) {
		snprintf(errbuf, errlen,
			 "invalid MTU %u: expected %d..%u (downlink max size %u less %d)", o->mtu,
			 SIM_MTU_MIN, o->dl_max_size - SIM_DL_RESERVED, o->dl_max_size,
			 SIM_DL_RESERVED);
		return -EINVAL;
	}
	if (o->dl_max_datagrams < 1) {
		snprintf(errbuf, errlen, "invalid downlink max datagrams 0: expected at least 1");
		return -EINVAL;
	}
	if (o->flush_usec > SIM_FLUSH_USEC_MAX) {
		snprintf(errbuf, errlen, "invalid flush interval %u us: expected 0..%d",
			 o->flush_usec, SIM_FLUSH_USEC_MAX);
		return -EINVAL;
	}
	if (o->inject_every < 1) {
		snprintf(errbuf, errlen, "invalid injection interval 0: expected at least 1");
		return -EINVAL;
	}
	if (o->session_mtu < SIM_MTU_MIN || o->session_mtu > 65535) {
		snprintf(errbuf, errlen, "invalid session MTU %u: expected %d..65535",
			 o->session_mtu, SIM_MTU_MIN);
		return -EINVAL;
	}
	if (o->n_apn > SIM_QMI_MAX_APNS) {
		snprintf(errbuf, errlen, "too many APNs: at most %d", SIM_QMI_MAX_APNS);
		return -EINVAL;
	}

	bool any_mux = false;
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		if (!o->mux[id].present)
			continue;
		any_mux = true;
		/* Two muxes owning the same addresses would make the downlink choice arbitrary
		 * beyond longest-prefix; equal prefixes are always a configuration mistake. */
		for (unsigned other = id + 1; other <= CONFIG_MUX_ID_MAX; other++) {
			if (!o->mux[other].present)
				continue;
			for (unsigned i = 0; i < o->mux[id].n_prefix; i++)
				for (unsigned j = 0; j < o->mux[other].n_prefix; j++) {
					const struct config_prefix *a = &o->mux[id].prefix[i];
					const struct config_prefix *b = &o->mux[other].prefix[j];
					char s[INET6_ADDRSTRLEN + 8];
					if (a->family != b->family ||
					    a->prefixlen != b->prefixlen || !prefix_overlaps(a, b))
						continue;
					snprintf(errbuf, errlen, "mux %u and mux %u both own %s",
						 id, other, prefix_to_string(a, s, sizeof(s)));
					return -EINVAL;
				}
		}
	}
	unsigned other_mode = o->mbim ? SIM_INJECT_QMAP_MASK : SIM_INJECT_NTB_MASK;
	for (unsigned k = 0; k < _SIM_INJECT_MAX; k++)
		if (o->inject & other_mode & (1u << k)) {
			snprintf(errbuf, errlen, "injection '%s' is for %s mode", inject_names[k],
				 o->mbim ? "QMI" : "MBIM");
			return -EINVAL;
		}
	/* The injected NTBs carry their datagram on the session of the unknown mux. */
	for (unsigned k = 0; k < _SIM_INJECT_MAX && !any_mux; k++)
		if (k != SIM_INJECT_UNKNOWN_MUX && !(SIM_INJECT_NTB_MASK & (1u << k)) &&
		    (o->inject & (1u << k))) {
			snprintf(errbuf, errlen, "injection '%s' needs a configured mux",
				 inject_names[k]);
			return -EINVAL;
		}
	if (o->mux[SIM_INJECT_UNKNOWN_MUX_ID].present &&
	    (o->inject & ((1u << SIM_INJECT_UNKNOWN_MUX) | SIM_INJECT_NTB_MASK))) {
		snprintf(errbuf, errlen, "unknown-mux injection uses mux %d, which is configured",
			 SIM_INJECT_UNKNOWN_MUX_ID);
		return -EINVAL;
	}
	return 0;
}

/* One's complement sum of big-endian 16-bit words (RFC 1071). */
/*
 * The host asked the modem (QMAPv5 UL "compute checksum") to fill in the TCP/UDP checksum.
 * Mainline passes no offsets with v5, so the modem parses the IP header itself; we do the
 * same and compute the checksum from scratch. Returns true if one was written.
 */
static bool l4_checksum_fill(uint8_t *pkt, size_t len)
{
	const uint8_t *addrs;
	size_t alen;
	uint8_t *l4;
	size_t l4_len;
	uint8_t proto;

	if (len >= IPV4_HEADER && pkt[0] >> 4 == 4) {
		size_t ihl = (pkt[0] & 0x0f) * 4u;
		size_t tot = get_be16(pkt + 2);
		/* Fragments carry a checksum over the whole datagram: not ours to compute. */
		if (ihl < IPV4_HEADER || tot < ihl || tot > len || (get_be16(pkt + 6) & 0x3fff))
			return false;
		proto = pkt[9];
		l4 = pkt + ihl;
		l4_len = tot - ihl;
		addrs = pkt + 12;
		alen = 4;
	} else if (len >= IPV6_HEADER && pkt[0] >> 4 == 6) {
		size_t plen = get_be16(pkt + 4);
		if (plen > len - IPV6_HEADER)
			return false;
		/* Like mainline rmnet: no extension headers. */
		proto = pkt[6];
		l4 = pkt + IPV6_HEADER;
		l4_len = plen;
		addrs = pkt + 8;
		alen = 16;
	} else {
		return false;
	}

	size_t off;
	if (proto == IPPROTO_TCP_ && l4_len >= 20)
		off = 16;
	else if (proto == IPPROTO_UDP_ && l4_len >= 8)
		off = 6;
	else
		return false;

	put_be16(l4 + off, 0);
	uint32_t sum = csum_partial(l4, l4_len, csum_pseudo(addrs, alen, proto, (uint32_t)l4_len));
	uint16_t c = (uint16_t)~csum_fold(sum);
	/* UDP sends a computed zero as all ones: zero means "no checksum". */
	if (proto == IPPROTO_UDP_ && c == 0)
		c = 0xffff;
	csum_store(l4 + off, c);
	return true;
}

/* A valid IPv4/UDP packet for the unknown-mux injection: 198.51.100.200:9 -> 192.0.2.1:9. */
static void build_unknown_mux_packet(uint8_t *p, size_t len)
{
	static const uint8_t payload[4] = { 's', 'i', 'm', '!' };
	static const uint8_t src[4] = { 198, 51, 100, 200 };
	static const uint8_t dst[4] = { 192, 0, 2, 1 };

	memset(p, 0, len);
	p[0] = 0x45;
	put_be16(p + 2, (uint16_t)len);
	p[8] = 64;
	p[9] = IPPROTO_UDP_;
	memcpy(p + 12, src, sizeof(src));
	memcpy(p + 16, dst, sizeof(dst));
	csum_store(p + 10, (uint16_t)~csum_fold(csum_partial(p, IPV4_HEADER, 0)));
	put_be16(p + 20, 9);
	put_be16(p + 22, 9);
	put_be16(p + 24, (uint16_t)(len - IPV4_HEADER));
	memcpy(p + 28, payload, sizeof(payload));
	l4_checksum_fill(p, len);
}

static uint8_t route_lookup(const struct sim *s, int family, const uint8_t *addr)
{
	int best_len = -1;
	uint8_t best = 0;

	for (unsigned i = 0; i < s->n_routes; i++) {
		const struct sim_route *r = &s->routes[i];
		if (r->prefix.prefixlen > best_len && prefix_contains(&r->prefix, family, addr)) {
			best_len = r->prefix.prefixlen;
			best = r->mux_id;
		}
	}
	return best;
}

static uint8_t *dl_agg(const struct sim *s)
{
	return s->dl_buf + sizeof(struct transport_sim_header);
}

static void dl_reset(struct sim *s)
{
	s->dl_len = 0;
	s->dl_packets = 0;
	s->dl_inject = 0;
	s->dl_tail_reserve = 0;
	s->dl_sealed = false;
	s->dl_begun = false;
	s->dl_ntb_open = false;
	ev_timer_stop(s->loop, &s->flush_timer);
}

static void ctl_clear(struct sim *s)
{
	while (s->ctl_head) {
		struct sim_ctl_msg *m = s->ctl_head;
		s->ctl_head = m->next;
		free(m);
	}
	s->ctl_tail = &s->ctl_head;
	s->ctl_queued = 0;
	s->dl_before_ctl = false;
}

/* Watch for room in the socket exactly while something is held back. */
static void ul_ack_flush(struct sim *s);

static void conn_update_write_watch(struct sim *s)
{
	if (s->conn_fd >= 0 && (s->dl_blocked || s->ctl_head || s->ul_acks_pending))
		ev_io_start(s->loop, &s->io_conn_write);
	else
		ev_io_stop(s->loop, &s->io_conn_write);
}

/* A session (QMI or MBIM) is up on the mux. */
static bool mux_session(const struct sim *s, unsigned mux_id)
{
	if (s->mbim)
		return mux_id >= 1 && sim_mbim_session_active(s->mbim, mux_id - 1);
	return sim_qmi_mux_connected(s->qmi, mux_id);
}

static bool mux_open(const struct sim *s, uint8_t mux_id)
{
	return s->opts.always_connected || mux_session(s, mux_id);
}

static void sim_disconnect(struct sim *s)
{
	if (s->conn_fd < 0)
		return;

	ev_io_stop(s->loop, &s->io_conn_read);
	ev_io_stop(s->loop, &s->io_conn_write);
	s->ul_stalled = false;
	s->ul_acks_pending = 0;
	close(s->conn_fd);
	s->conn_fd = -1;
	s->stats.disconnects++;
	s->stats.dl_dropped_disconnected += s->dl_packets;
	dl_reset(s);
	s->dl_blocked = false;
	ctl_clear(s);
	/*
	 * The host's clients and sessions end with it, as when a modem sees DTR drop; or, with
	 * keep_sessions, they stay, as when the host's process died and nobody dropped DTR:
	 * the next qmapd finds them (docs/ARCHITECTURE.md "Restart and crash").
	 */
	if (!s->opts.keep_sessions) {
		sim_qmi_reset(s->qmi);
		if (s->mbim)
			sim_mbim_reset(s->mbim);
	}
	s->held_n = s->held_next = 0;
	if (s->net) {
		s->stats.dl_dropped_disconnected += sim_net_discard(s->net);
		ev_io_start(s->loop, &s->io_tun);
	}
	log_info("sim %s: qmapd disconnected", s->opts.socket_path);
}

/* Put the injected frames that go before the real ones into a fresh aggregate. */
static void dl_begin(struct sim *s)
{
	uint8_t *agg = dl_agg(s);
	unsigned inject = s->opts.inject;

	if (s->dl_begun)
		return;
	s->dl_begun = true;
	if (!inject || (s->stats.dl_aggregates + 1) % s->opts.inject_every != 0)
		return;

	s->dl_len = 0;
	if (inject & (1u << SIM_INJECT_GARBAGE)) {
		int h = qmap_write_data_header(agg, s->opts.qmap_version, s->first_mux,
					       sizeof(garbage_payload), 0, false);
		memcpy(agg + h, garbage_payload, sizeof(garbage_payload));
		s->dl_len += h + sizeof(garbage_payload);
	}
	if (inject & (1u << SIM_INJECT_UNKNOWN_MUX)) {
		int h = qmap_write_data_header(agg + s->dl_len, s->opts.qmap_version,
					       SIM_INJECT_UNKNOWN_MUX_ID,
					       sizeof(s->unknown_mux_packet), 0, false);
		memcpy(agg + s->dl_len + h, s->unknown_mux_packet, sizeof(s->unknown_mux_packet));
		s->dl_len += h + sizeof(s->unknown_mux_packet);
	}
	if (inject & (1u << SIM_INJECT_COMMAND)) {
		struct qmap_command cmd = {
			.name = QMAP_COMMAND_FLOW_ENABLE,
			.type = QMAP_COMMAND_REQUEST,
			.transaction_id = ++s->inject_txn,
		};
		qmap_write_command(agg + s->dl_len, s->first_mux, &cmd);
		s->dl_len += QMAP_HEADER_SIZE + QMAP_COMMAND_SIZE;
	}
	if (inject & (1u << SIM_INJECT_OVERSIZE))
		s->dl_tail_reserve = s->hdr_size;
	s->dl_inject = inject;
}

/*
 * The downlink rate: an aggregate of dl_len bytes just left; the next may go when the air
 * interface has carried it. Until then (beyond a 2 ms burst, which timers cannot resolve
 * anyway) the TUN is left unread and the network's queue is the kernel's TUN queue.
 */
static void dl_pace(struct sim *s)
{
	if (!s->opts.dl_rate)
		return;
	uint64_t now = now_ns(s);
	if (s->dl_next_ns < now)
		s->dl_next_ns = now;
	s->dl_next_ns += (uint64_t)s->dl_len * 8 * 1000000000ULL / s->opts.dl_rate;
	if (s->dl_next_ns <= now + SIM_DL_BURST_NS || s->dl_paused)
		return;
	s->dl_paused = true;
	s->stats.dl_paced++;
	ev_io_stop(s->loop, &s->io_tun);
	ev_timer_set(&s->dl_pace_timer, (double)(s->dl_next_ns - now - SIM_DL_BURST_NS) / 1e9, 0.);
	ev_timer_start(s->loop, &s->dl_pace_timer);
}

static void on_dl_pace_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sim *s = w->data;
	(void)revents;

	s->dl_paused = false;
	if (s->dl_blocked)
		return; /* dl_flush starts the TUN again once the socket takes the aggregate */
	ev_io_start(loop, &s->io_tun);
	if (sim_net_pending(s->net) || s->held_next < s->held_n)
		ev_feed_event(loop, &s->io_tun, EV_READ);
}

static void ntb_inject(struct sim *s);

/* Send the aggregate. Returns 0 (sent or nothing to send), -EAGAIN (parked) or -errno. */
static int dl_flush(struct sim *s)
{
	uint8_t *agg = dl_agg(s);

	if (s->dl_packets == 0)
		return 0;

	if (!s->dl_sealed && s->mbim) {
		size_t len = 0;
		if (ntb_build_finish(&s->dl_ntb, &len) < 0)
			return 0; /* cannot happen: dl_packets > 0 */
		s->dl_len = len;
		s->ntb_sequence++;
		s->dl_sealed = true;
		ev_timer_stop(s->loop, &s->flush_timer);
	}
	if (!s->dl_sealed) {
		if (s->dl_inject & (1u << SIM_INJECT_OVERSIZE)) {
			/* pkt_len 1500 with nothing after the header: runs past the end. */
			int h = qmap_write_data_header(agg + s->dl_len, s->opts.qmap_version,
						       s->first_mux, 1500, 0, false);
			s->dl_len += h;
		}
		s->dl_sealed = true;
		ev_timer_stop(s->loop, &s->flush_timer);
	}

	/* Queued control messages were held back first: the aggregate waits behind them. */
	ssize_t n;
	if (s->ctl_head && !s->dl_before_ctl) {
		n = -1;
		errno = EAGAIN;
	} else {
		n = send(s->conn_fd, s->dl_buf, sizeof(struct transport_sim_header) + s->dl_len,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR) {
			if (!s->dl_blocked) {
				/* Keep the aggregate and let the kernel queue (and eventually drop)
				 * in the TUN until qmapd reads again. */
				s->stats.dl_send_blocked++;
				s->dl_blocked = true;
				ev_io_stop(s->loop, &s->io_tun);
				ev_io_start(s->loop, &s->io_conn_write);
			}
			return -EAGAIN;
		}
		int r = log_warning_errno(errno, "sim %s: sending a downlink aggregate failed",
					  s->opts.socket_path);
		sim_disconnect(s);
		return r;
	}

	s->stats.dl_aggregates++;
	s->stats.dl_datagrams += s->dl_packets;
	s->stats.dl_bytes += s->dl_len;
	for (unsigned k = 0; k < _SIM_INJECT_MAX; k++)
		if (s->dl_inject & (1u << k))
			s->stats.injected[k]++;
	if (s->mbim)
		ntb_inject(s);
	dl_pace(s);
	if (s->dl_blocked) {
		s->dl_blocked = false;
		s->dl_before_ctl = false;
		conn_update_write_watch(s);
		if (!s->dl_paused)
			ev_io_start(s->loop, &s->io_tun);
		/* The rest of a super-packet read before the block is not the TUN's to signal. */
		if (sim_net_pending(s->net) || s->held_next < s->held_n)
			ev_feed_event(s->loop, &s->io_tun, EV_READ);
	}
	dl_reset(s);
	return 0;
}

int sim_send_flow_control(struct sim *s, bool enable)
{
	/* Room for a command to every possible mux in one transfer. */
	uint8_t buf[sizeof(struct transport_sim_header) +
		    CONFIG_MUX_ID_MAX * (QMAP_HEADER_SIZE + QMAP_COMMAND_SIZE)];
	struct transport_sim_header *h = (struct transport_sim_header *)buf;
	size_t len = sizeof(*h);
	int n = 0;

	if (s->conn_fd < 0)
		return -ENOTCONN;
	if (s->mbim)
		return -EOPNOTSUPP; /* MBIM has no in-band flow control */
	*h = (struct transport_sim_header){ .ep = TRANSPORT_EP_BULK_IN };
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		if (!s->opts.mux[id].present)
			continue;
		struct qmap_command cmd = {
			.name = enable ? QMAP_COMMAND_FLOW_ENABLE : QMAP_COMMAND_FLOW_DISABLE,
			.type = QMAP_COMMAND_REQUEST,
			.transaction_id = ++s->inject_txn,
		};
		qmap_write_command(buf + len, id, &cmd);
		len += QMAP_HEADER_SIZE + QMAP_COMMAND_SIZE;
		n++;
	}
	if (send(s->conn_fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return negative_errno();
	s->stats.flow_commands_sent += n;
	return n;
}

static void dl_read_failed(struct sim *s, int error)
{
	s->stats.dl_tun_errors++;
	log_debug_errno(error, "sim %s: read failed", s->net_name);
}

/* Without qmapd the modem has nowhere to send: drain the TUN so the kernel does not queue. */
static void dl_drain_disconnected(struct sim *s)
{
	uint8_t *buf = dl_agg(s) + s->hdr_size;
	const uint8_t *pkt;
	size_t len;

	for (unsigned i = 0; i < SIM_READ_BUDGET; i++) {
		/* dl_alloc_size: the buffer's room in either mode (MBIM's is the NTB size). */
		int r = sim_net_read(s->net, buf, s->dl_alloc_size - s->hdr_size, &pkt, &len);
		if (r == -EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				dl_read_failed(s, r);
			return;
		}
		s->stats.dl_dropped_disconnected +=
			r == SIM_NET_RX_SEGMENTS ? sim_net_discard(s->net) : 1;
	}
}

/* The mux a downlink packet (of `count` segments) goes to, or 0, counted, for none. */
static uint8_t dl_route(struct sim *s, const uint8_t *pkt, size_t len, uint32_t count)
{
	int family;
	const uint8_t *dst;

	if (len >= IPV4_HEADER && pkt[0] >> 4 == 4) {
		family = AF_INET;
		dst = pkt + 16;
	} else if (len >= IPV6_HEADER && pkt[0] >> 4 == 6) {
		family = AF_INET6;
		dst = pkt + 24;
	} else {
		s->stats.dl_not_ip += count;
		return 0;
	}
	uint8_t mux = route_lookup(s, family, dst);
	if (mux == 0) {
		s->stats.dl_no_route += count;
		return 0;
	}
	if (!mux_open(s, mux)) {
		s->stats.dl_no_session += count;
		return 0;
	}
	return mux;
}

/* The n-byte IP packet behind room for its header at the aggregate's end joins it: padding,
 * QMAP header, counters, flush timer. */
static void dl_commit(struct sim *s, uint8_t mux, size_t n)
{
	uint8_t *frame = dl_agg(s) + s->dl_len;
	unsigned pad = (SIM_DL_ALIGN - n % SIM_DL_ALIGN) % SIM_DL_ALIGN;

	/* The granted minimum padding: zeros between frames, here in front of each. */
	memset(frame, 0, s->dl_pad);
	memset(frame + s->frame_room + n, 0, pad);
	/* n <= dl_max_size <= 65536 - 128, so the header always fits the 16-bit length. */
	qmap_write_data_header(frame + s->dl_pad, s->opts.qmap_version, mux, n, pad,
			       s->opts.csum_valid);
	s->dl_len += s->frame_room + n + pad;
	s->dl_packets++;
	s->stats.mux[mux].dl_packets++;
	s->stats.mux[mux].dl_bytes += (uint64_t)n;

	if (s->dl_packets == 1 && s->opts.flush_usec > 0) {
		ev_timer_set(&s->flush_timer, s->opts.flush_usec / 1e6, 0.);
		ev_timer_start(s->loop, &s->flush_timer);
	}
}

/*
 * Cut the pending super-packet (or finish the checksum of a single one) into aggregates, as
 * many as it takes. Returns 0 when it is all in, -EAGAIN when the socket is full (the rest
 * waits, see dl_flush) or qmapd went away.
 */
static int dl_segments(struct sim *s)
{
	struct gso_segment segs[64];

	while (sim_net_pending(s->net)) {
		if (s->dl_paused)
			return -EAGAIN;
		dl_begin(s);
		if (s->dl_packets >= s->opts.dl_max_datagrams) {
			if (dl_flush(s) < 0)
				return -EAGAIN;
			continue;
		}
		size_t room = s->opts.dl_max_size - s->dl_len - s->dl_tail_reserve;
		unsigned max = s->opts.dl_max_datagrams - s->dl_packets;
		/* The padding of the last segment written needs room too. */
		int n = sim_net_segments(s->net, dl_agg(s) + s->dl_len,
					 room >= SIM_DL_ALIGN ? room - (SIM_DL_ALIGN - 1) : 0,
					 s->frame_room, SIM_DL_ALIGN, segs,
					 max < ARRAY_SIZE(segs) ? max : ARRAY_SIZE(segs));
		if (n == -ENOBUFS && s->dl_packets > 0) {
			if (dl_flush(s) < 0)
				return -EAGAIN;
			continue;
		}
		if (n < 0) {
			/* Not even an empty aggregate holds a segment: larger than the MTU. */
			s->stats.dl_tun_errors++;
			log_debug("sim %s: a segment does not fit an aggregate, %u dropped",
				  s->net_name, sim_net_discard(s->net));
			return 0;
		}
		/* Segments lie back to back: only the last one written can need padding. */
		for (int i = 0; i < n; i++)
			dl_commit(s, s->dl_mux, segs[i].len);
		if (s->dl_packets >= s->opts.dl_max_datagrams && dl_flush(s) < 0)
			return -EAGAIN;
	}
	return 0;
}

/* ---- MBIM downlink: IN NTBs ---- */

/* The IN NTB's layout: the function's own IN values within the host's input size. */
static void ntb_in_params(const struct sim *s, struct ntb_params *p, uint32_t max_size)
{
	const struct ntb_params *o = &s->opts.ntb;
	uint32_t dgrams = s->opts.dl_max_datagrams;

	if (s->ntb_in_max_dgrams && s->ntb_in_max_dgrams < dgrams)
		dgrams = s->ntb_in_max_dgrams;
	if (dgrams > NTB_BUILD_MAX_DATAGRAMS)
		dgrams = NTB_BUILD_MAX_DATAGRAMS;
	*p = (struct ntb_params){
		.formats = o->formats,
		.out_max_size = max_size,
		.out_divisor = o->in_divisor,
		.out_remainder = o->in_remainder,
		.out_alignment = o->in_alignment,
		.out_max_datagrams = (uint16_t)dgrams,
	};
}

/*
 * One packet for mux into the IN NTB, sending the NTB first when it has no room. Returns 0
 * when the packet is in (or dropped, counted), -EAGAIN when the socket is full and the packet
 * must be kept for later.
 */
static int ntb_dl_add(struct sim *s, uint8_t mux, const uint8_t *pkt, size_t len)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		/* A sealed NTB still waits for the socket. */
		if (s->dl_sealed && dl_flush(s) < 0)
			return -EAGAIN;
		if (!s->dl_ntb_open) {
			struct ntb_params p;
			ntb_in_params(s, &p, s->ntb_in_size);
			if (ntb_build_init(&s->dl_ntb, dl_agg(s), s->dl_alloc_size, &p,
					   s->ntb_format, s->ntb_sequence) < 0)
				break;
			s->dl_ntb_open = true;
		}
		uint8_t *dst;
		if (ntb_build_reserve(&s->dl_ntb, (uint8_t)(mux - 1), len, &dst) == 0) {
			memcpy(dst, pkt, len);
			s->dl_packets++;
			s->stats.mux[mux].dl_packets++;
			s->stats.mux[mux].dl_bytes += (uint64_t)len;
			if (s->dl_packets == 1 && s->opts.flush_usec > 0) {
				ev_timer_set(&s->flush_timer, s->opts.flush_usec / 1e6, 0.);
				ev_timer_start(s->loop, &s->flush_timer);
			}
			/* Sent now or parked: either way the packet is in. */
			if (ntb_build_full(&s->dl_ntb))
				dl_flush(s);
			return 0;
		}
		if (s->dl_packets == 0)
			break;
		if (dl_flush(s) < 0)
			return -EAGAIN;
	}
	s->stats.dl_tun_errors++;
	log_debug("sim %s: a %zu-byte packet does not fit an NTB of %u bytes, dropped", s->net_name,
		  len, s->ntb_in_size);
	return 0;
}

/* Packets read but not yet in an NTB (the socket was full) go first. 0 or -EAGAIN. */
static int ntb_dl_held(struct sim *s)
{
	const uint8_t *base = s->opts.offload ? s->ntb_seg : s->ntb_rx;

	while (s->held_next < s->held_n) {
		const struct gso_segment *g = &s->held[s->held_next];
		if (ntb_dl_add(s, s->held_session, base + g->offset, g->len) < 0)
			return -EAGAIN;
		s->held_next++;
	}
	s->held_n = s->held_next = 0;
	return 0;
}

/* Cut the pending super-packet into the scratch buffer and add the segments. */
static int ntb_dl_segments(struct sim *s)
{
	while (sim_net_pending(s->net)) {
		int n = sim_net_segments(s->net, s->ntb_seg, SIM_NTB_SEG_ROOM, 0, 1, s->held,
					 ARRAY_SIZE(s->held));
		if (n < 0) {
			s->stats.dl_tun_errors++;
			log_debug("sim %s: a segment does not fit, %u dropped", s->net_name,
				  sim_net_discard(s->net));
			return 0;
		}
		s->held_n = (unsigned)n;
		s->held_next = 0;
		if (ntb_dl_held(s) < 0)
			return -EAGAIN;
	}
	return 0;
}

static void ntb_tun_readable(struct sim *s)
{
	const uint8_t *pkt;
	size_t len;

	if (s->dl_blocked || ntb_dl_held(s) < 0 || ntb_dl_segments(s) < 0 || s->dl_paused)
		return;

	for (unsigned i = 0; i < SIM_READ_BUDGET && !s->dl_paused && !s->dl_blocked; i++) {
		int r = sim_net_read(s->net, s->ntb_rx, TRANSPORT_MAX_TRANSFER, &pkt, &len);
		if (r == -EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				dl_read_failed(s, r);
			if (s->opts.flush_usec == 0)
				dl_flush(s);
			return;
		}
		if (r == SIM_NET_RX_INVALID) {
			s->stats.dl_tun_errors++;
			continue;
		}
		uint32_t count = r == SIM_NET_RX_SEGMENTS ? sim_net_pending(s->net) : 1;
		uint8_t mux = dl_route(s, pkt, len, count);
		if (mux == 0) {
			sim_net_discard(s->net);
			continue;
		}
		s->held_session = mux;
		if (r == SIM_NET_RX_PACKET) {
			if (ntb_dl_add(s, mux, pkt, len) < 0) {
				s->held[0] =
					(struct gso_segment){ .offset = 0, .len = (uint32_t)len };
				s->held_n = 1;
				s->held_next = 0;
				return;
			}
			continue;
		}
		if (ntb_dl_segments(s) < 0)
			return;
	}
}

/*
 * A malformed IN NTB of each asked-for kind, each its own transfer after a real NTB. Each
 * starts as a valid NTB with one IPv4/UDP datagram on the session of the unknown mux (so a
 * host that wrongly accepts it still delivers nothing), then is broken as its kind says.
 */
static void ntb_inject(struct sim *s)
{
	uint8_t buf[sizeof(struct transport_sim_header) + 256];
	uint8_t *ntb = buf + sizeof(struct transport_sim_header);
	bool is32 = s->ntb_format == NTB_FORMAT_32;
	struct ntb_builder b;
	struct ntb_params p;
	uint8_t *dst;
	size_t len;

	if (!(s->opts.inject & SIM_INJECT_NTB_MASK) ||
	    s->stats.dl_aggregates % s->opts.inject_every != 0)
		return;
	*(struct transport_sim_header *)buf =
		(struct transport_sim_header){ .ep = TRANSPORT_EP_BULK_IN };
	ntb_in_params(s, &p, NTB_MIN_IN_SIZE);
	for (unsigned k = SIM_INJECT_BAD_SIGNATURE; k < _SIM_INJECT_MAX; k++) {
		if (!(s->opts.inject & (1u << k)))
			continue;
		if (ntb_build_init(&b, ntb, sizeof(buf) - sizeof(struct transport_sim_header), &p,
				   s->ntb_format, s->ntb_sequence) < 0 ||
		    ntb_build_reserve(&b, SIM_INJECT_UNKNOWN_MUX_ID - 1,
				      sizeof(s->unknown_mux_packet), &dst) < 0)
			return;
		memcpy(dst, s->unknown_mux_packet, sizeof(s->unknown_mux_packet));
		if (ntb_build_finish(&b, &len) < 0)
			return;
		size_t ndp = is32 ? get_le32(ntb + 12) : get_le16(ntb + 10);
		switch (k) {
		case SIM_INJECT_BAD_SIGNATURE:
			ntb[0] ^= 0x20; /* "NCMH" -> "nCMH" */
			break;
		case SIM_INJECT_BAD_BLOCK_LENGTH:
			/* Four bytes more than the transfer carries. */
			if (is32)
				ntb_put_le32(ntb + 8, (uint32_t)len + 4);
			else
				ntb_put_le16(ntb + 8, (uint16_t)(len + 4));
			break;
		case SIM_INJECT_NDP_LOOP:
			/* The NDP names itself as the next one. */
			if (is32)
				ntb_put_le32(ntb + ndp + 8, (uint32_t)ndp);
			else
				ntb_put_le16(ntb + ndp + 6, (uint16_t)ndp);
			break;
		case SIM_INJECT_DATAGRAM_OUTSIDE:
			/* The datagram runs past the end of the block. */
			if (is32)
				ntb_put_le32(ntb + ndp + 20, (uint32_t)len);
			else
				ntb_put_le16(ntb + ndp + 10, (uint16_t)len);
			break;
		default:
			break;
		}
		s->ntb_sequence++;
		if (send(s->conn_fd, buf, sizeof(struct transport_sim_header) + len,
			 MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			return; /* the socket is full: not injected this time */
		s->stats.injected[k]++;
		s->stats.dl_bytes += len;
	}
}

static void on_tun_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sim *s = w->data;
	uint8_t *agg = dl_agg(s);
	const uint8_t *pkt;
	size_t len;
	(void)loop;
	(void)revents;

	if (s->conn_fd < 0) {
		dl_drain_disconnected(s);
		return;
	}
	if (s->mbim) {
		ntb_tun_readable(s);
		return;
	}
	/* What a full socket (or the downlink rate) left of the last super-packet goes first. */
	if (dl_segments(s) < 0 || s->dl_paused)
		return;

	for (unsigned i = 0; i < SIM_READ_BUDGET && !s->dl_paused; i++) {
		dl_begin(s);

		/* Room for one more MTU-sized packet with its header and padding? */
		size_t need = s->frame_room + s->opts.mtu + (SIM_DL_ALIGN - 1);
		size_t room = s->opts.dl_max_size - s->dl_len - s->dl_tail_reserve;
		if (room < need) {
			if (dl_flush(s) < 0)
				return;
			continue;
		}

		/* Without offload the packet lands in the aggregate, behind room for its header. */
		int r = sim_net_read(s->net, agg + s->dl_len + s->frame_room,
				     room - s->frame_room - (SIM_DL_ALIGN - 1), &pkt, &len);
		if (r == -EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				dl_read_failed(s, r);
			if (s->opts.flush_usec == 0)
				dl_flush(s);
			return;
		}
		if (r == SIM_NET_RX_INVALID) {
			s->stats.dl_tun_errors++;
			log_debug("sim %s: a virtio-net header gso cannot follow, dropped",
				  s->net_name);
			continue;
		}

		uint32_t count = r == SIM_NET_RX_SEGMENTS ? sim_net_pending(s->net) : 1;
		uint8_t mux = dl_route(s, pkt, len, count);
		if (mux == 0) {
			sim_net_discard(s->net);
			continue;
		}
		if (r == SIM_NET_RX_PACKET) {
			dl_commit(s, mux, len);
			if (s->dl_packets >= s->opts.dl_max_datagrams && dl_flush(s) < 0)
				return;
			continue;
		}
		s->dl_mux = mux;
		if (dl_segments(s) < 0)
			return;
	}
}

/* A real modem tells its registration as it changes; the sim looks a few times a second. */
#define SIM_STATE_TICK_SECONDS 0.2

static void on_state_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sim *s = w->data;

	(void)loop;
	(void)revents;
	if (s->mbim)
		sim_mbim_tick(s->mbim);
	else
		sim_qmi_tick(s->qmi);
}

static void on_flush_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sim *s = w->data;
	(void)loop;
	(void)revents;

	if (!s->dl_blocked)
		dl_flush(s);
}

/* Send what the control queue holds. 0 when empty, -EAGAIN when still full, -errno after a
 * disconnect. */
static int ctl_flush(struct sim *s)
{
	while (s->ctl_head) {
		struct sim_ctl_msg *m = s->ctl_head;
		if (send(s->conn_fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return -EAGAIN;
			int r = log_warning_errno(errno, "sim %s: sending a control message failed",
						  s->opts.socket_path);
			sim_disconnect(s);
			return r;
		}
		s->ctl_head = m->next;
		if (!s->ctl_head)
			s->ctl_tail = &s->ctl_head;
		s->ctl_queued--;
		free(m);
	}
	s->dl_before_ctl = false;
	return 0;
}

static void on_conn_writable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sim *s = w->data;
	(void)loop;
	(void)revents;

	if (s->dl_blocked && s->dl_before_ctl && dl_flush(s) < 0)
		return;
	if (ctl_flush(s) < 0)
		return;
	if (s->dl_blocked && dl_flush(s) < 0)
		return;
	ul_ack_flush(s);
	conn_update_write_watch(s);
}

/*
 * A control-pipe message for the host (a response or indication, a class request's answer),
 * in order with the downlink. Called inside the engines' handlers: never disconnects here
 * (the engine would be reset under its feet); a broken socket shows up on the next read.
 */
static void ctl_send(struct sim *s, uint8_t ep, uint8_t flags, const uint8_t *buf, size_t len)
{
	struct transport_sim_header h = { .ep = ep, .flags = flags };
	const size_t hdr = sizeof(h);

	if (s->conn_fd < 0)
		return;
	if (!s->ctl_head && !s->dl_blocked) {
		struct iovec iov[2] = { { &h, hdr }, { (void *)buf, len } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		if (sendmsg(s->conn_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return;
		if (errno != EAGAIN && errno != EINTR) {
			s->stats.qmi_send_dropped++;
			log_debug_errno(errno, "sim %s: sending a control message failed",
					s->opts.socket_path);
			return;
		}
	}

	struct sim_ctl_msg *m;
	if (s->ctl_queued >= SIM_CTL_QUEUE_MAX || !(m = malloc(sizeof(*m) + hdr + len))) {
		s->stats.qmi_send_dropped++;
		log_debug("sim %s: control queue full, message dropped", s->opts.socket_path);
		return;
	}
	m->next = NULL;
	m->len = hdr + len;
	memcpy(m->data, &h, hdr);
	memcpy(m->data + hdr, buf, len);
	if (!s->ctl_head)
		s->dl_before_ctl = s->dl_blocked;
	*s->ctl_tail = m;
	s->ctl_tail = &m->next;
	s->ctl_queued++;
	conn_update_write_watch(s);
}

static void on_qmi_send(void *userdata, const uint8_t *buf, size_t len)
{
	ctl_send(userdata, TRANSPORT_EP_CONTROL, 0, buf, len);
}

static int on_qmi_data_format(void *userdata, const struct sim_qmi_data_format *f)
{
	return sim_set_data_format(userdata, f->version, f->dl_max_size, f->dl_max_datagrams,
				   f->dl_min_padding);
}

static void on_mbim_send(void *userdata, const uint8_t *buf, size_t len)
{
	ctl_send(userdata, TRANSPORT_EP_CONTROL, 0, buf, len);
}

static void on_qmi_log(void *userdata, int priority, const char *msg)
{
	(void)userdata;
	log_full(priority < LOG_DEBUG ? priority : LOG_DEBUG, "%s", msg);
}

static void radio_deliver(void *userdata, uint8_t mux, uint8_t flags, const uint8_t *pkt,
			  size_t len)
{
	struct sim *s = userdata;

	sim_net_write(s->net, mux, pkt, len, flags & 1);
}

static void radio_arm(struct sim *s, uint64_t at)
{
	struct itimerspec it = { 0 };

	if (at == s->radio_armed)
		return;
	/* An instant already past fires at once; 0 disarms. */
	it.it_value.tv_sec = (time_t)(at / 1000000000ULL);
	it.it_value.tv_nsec = (long)(at % 1000000000ULL);
	if (timerfd_settime(s->radio_timer_fd, TFD_TIMER_ABSTIME, &it, NULL) < 0) {
		log_warning_errno(errno, "sim %s: cannot arm the radio's timer",
				  s->opts.socket_path);
		return;
	}
	s->radio_armed = at;
}

/* Move the radio on to now, deliver what is due, and come back when something is. */
static void radio_run(struct sim *s)
{
	uint64_t now = radio_now();
	uint64_t wake = sim_radio_run(s->radio, now, radio_deliver, s);

	/* GRO holds pointers into the radio's ring: out with them before the next push. */
	sim_net_flush(s->net);
	if (sim_radio_buffered_max(s->radio) > s->stats.ul_modem_buffer_max)
		s->stats.ul_modem_buffer_max = sim_radio_buffered_max(s->radio);
	if (wake && wake < s->radio_last_run + SIM_RADIO_BATCH_NS)
		wake = s->radio_last_run + SIM_RADIO_BATCH_NS;
	s->radio_last_run = now;
	/* The waiting transfer (peeked, not read): read it once the buffer has room, and come
	 * back at the very instant it will have. */
	if (s->ul_stalled && s->conn_fd >= 0) {
		uint64_t room = sim_radio_room_at(s->radio, s->ul_stall_bytes);
		if (room <= now) {
			s->ul_stalled = false;
			ev_io_start(s->loop, &s->io_conn_read);
		} else if (wake == 0 || room < wake) {
			wake = room;
		}
	}
	radio_arm(s, wake);
}

static void on_radio_timer(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sim *s = w->data;
	uint64_t expirations;
	(void)loop;
	(void)revents;

	if (read(s->radio_timer_fd, &expirations, sizeof(expirations)) < 0 && errno == EAGAIN)
		return;
	s->radio_armed = 0;
	radio_run(s);
}

/* One uplink IP packet of a mux with a session towards the network: through the radio if
 * there is one. Counted when written (on_net_written). */
static void ul_deliver(struct sim *s, uint8_t mux_id, const uint8_t *pkt, size_t len, bool computed)
{
	if (s->radio) {
		if (sim_radio_push(s->radio, mux_id, computed, pkt, len, s->ul_take_ns) < 0)
			s->stats.ul_radio_dropped++;
		return;
	}
	sim_net_write(s->net, mux_id, pkt, len, computed);
}

static void ul_frame(struct sim *s, struct qmap_frame *f)
{
	if (f->kind == QMAP_FRAME_COMMAND) {
		struct qmap_command cmd;
		if (qmap_command_parse(f->payload, f->len, &cmd) < 0) {
			s->stats.commands_short++;
			return;
		}
		s->stats.commands[cmd.type & 0x03]++;
		log_debug("sim mux %u: command %u type %u transaction %u", f->mux_id, cmd.name,
			  cmd.type, cmd.transaction_id);
		return;
	}

	if (f->mux_id < CONFIG_MUX_ID_MIN || f->mux_id > CONFIG_MUX_ID_MAX ||
	    !s->opts.mux[f->mux_id].present) {
		s->stats.ul_unknown_mux++;
		return;
	}
	if (!mux_open(s, f->mux_id)) {
		s->stats.ul_no_session++;
		return;
	}

	bool computed = s->opts.qmap_version == QMAP_V5 && (f->flags & QMAP_FRAME_CSUM_VALID) &&
			l4_checksum_fill(f->payload, f->len);
	if (computed)
		s->stats.ul_csum_computed++;
	ul_deliver(s, f->mux_id, f->payload, f->len, computed);
}

/* sim_net's report of uplink writes. */
static void on_net_written(void *userdata, uint8_t mux_id, unsigned packets, uint64_t bytes,
			   int error)
{
	struct sim *s = userdata;

	if (error == 0) {
		s->stats.mux[mux_id].ul_packets += packets;
		s->stats.mux[mux_id].ul_bytes += bytes;
	} else if (error == -EAGAIN) {
		s->stats.ul_tun_dropped += packets;
	} else {
		s->stats.ul_tun_errors += packets;
		log_debug_errno(error, "sim mux %u: write to %s failed", mux_id, s->net_name);
	}
}

/* ---- MBIM uplink: OUT NTBs ---- */

/*
 * One OUT NTB, checked whole first (sim-ntb.h): a strict modem drops it entirely
 * (ul_ntb_dropped and the reason) or delivers every datagram.
 */
static void ul_ntb(struct sim *s, uint8_t *data, size_t len)
{
	static struct ntb_datagram dgs[SIM_NTB_UL_MAX_DGRAMS];
	enum ntb_error error = _NTB_ERR_MAX;
	unsigned n = 0;

	switch (sim_ntb_check_out(&s->opts.ntb, s->ntb_format, data, len, dgs, &n, &error)) {
	case SIM_NTB_OK:
		break;
	case SIM_NTB_TOO_BIG:
		s->stats.ul_ntb_too_big++;
		goto drop;
	case SIM_NTB_MALFORMED:
		s->stats.ul_ntb_malformed[error]++;
		log_debug("sim %s: uplink NTB dropped: %s", s->opts.socket_path,
			  ntb_error_name(error) ?: "?");
		goto drop;
	case SIM_NTB_TOO_MANY_DATAGRAMS:
		s->stats.ul_ntb_too_many_datagrams++;
		goto drop;
	case SIM_NTB_MISALIGNED_NDP:
		s->stats.ul_ntb_misaligned_ndp++;
		goto drop;
	case SIM_NTB_MISALIGNED_DATAGRAM:
		s->stats.ul_ntb_misaligned_datagram++;
		goto drop;
	}

	for (unsigned i = 0; i < n; i++) {
		unsigned mux = dgs[i].session + 1u;
		if (mux > CONFIG_MUX_ID_MAX || !s->opts.mux[mux].present) {
			s->stats.ul_unknown_mux++;
			continue;
		}
		if (!mux_open(s, (uint8_t)mux)) {
			s->stats.ul_no_session++;
			continue;
		}
		ul_deliver(s, (uint8_t)mux, dgs[i].data, dgs[i].len, false);
	}
	return;

drop:
	s->stats.ul_ntb_dropped++;
}

static void ul_transfer(struct sim *s, uint8_t flags, uint8_t *data, size_t len)
{
	struct qmap_iter it;
	struct qmap_frame f;
	enum qmap_error err;
	int r;

	s->stats.ul_transfers++;
	s->stats.ul_bytes += len;
	if (flags & TRANSPORT_SIM_FLAG_ZLP)
		s->stats.ul_zlp++;
	if (s->mbim) {
		ul_ntb(s, data, len);
		return;
	}

	qmap_iter_init(&it, data, len, s->opts.qmap_version);
	while ((r = qmap_next(&it, &f, &err)) != 0) {
		if (r < 0) {
			if ((unsigned)err < _QMAP_ERR_MAX)
				s->stats.malformed[err]++;
			log_debug("sim %s: malformed uplink frame: %s", s->opts.socket_path,
				  qmap_error_name(err) ?: "?");
			continue;
		}
		ul_frame(s, &f);
	}
}

/* Acknowledge the OUT transfers taken (TRANSPORT_SIM_FLAG_ACK): one message for all. */
static void ul_ack_flush(struct sim *s)
{
	struct transport_sim_header h = { .ep = TRANSPORT_EP_BULK_OUT };
	uint32_t n = s->ul_acks_pending;
	struct iovec iov[2] = { { &h, sizeof(h) }, { &n, sizeof(n) } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (n == 0 || s->conn_fd < 0)
		return;
	if (sendmsg(s->conn_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
		s->ul_acks_pending = 0;
	/* Still owed (socket full): on_conn_writable tries again. */
	conn_update_write_watch(s);
}

/* bRequest values of the NCM class requests (cdc.h; NCM 1.0 §6.2). */
#define NCM_GET_NTB_PARAMETERS 0x80
#define NCM_GET_NTB_FORMAT     0x83
#define NCM_SET_NTB_FORMAT     0x84
#define NCM_GET_NTB_INPUT_SIZE 0x85
#define NCM_SET_NTB_INPUT_SIZE 0x86
#define NCM_GET_CRC_MODE       0x89
#define NCM_SET_CRC_MODE       0x8a

/* GET_NTB_PARAMETERS as the function answers it (NCM 1.0 §6.2.1). */
static void ntb_params_write(const struct ntb_params *p, uint8_t out[NTB_PARAMS_SIZE])
{
	ntb_put_le16(out, NTB_PARAMS_SIZE);
	ntb_put_le16(out + 2, p->formats);
	ntb_put_le32(out + 4, p->in_max_size);
	ntb_put_le16(out + 8, p->in_divisor);
	ntb_put_le16(out + 10, p->in_remainder);
	ntb_put_le16(out + 12, p->in_alignment);
	ntb_put_le16(out + 14, 0);
	ntb_put_le32(out + 16, p->out_max_size);
	ntb_put_le16(out + 20, p->out_divisor);
	ntb_put_le16(out + 22, p->out_remainder);
	ntb_put_le16(out + 24, p->out_alignment);
	ntb_put_le16(out + 26, p->out_max_datagrams);
}

static bool any_session(const struct sim *s)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		if (s->opts.mux[id].present && mux_session(s, id))
			return true;
	return false;
}

/*
 * A class request from the host (transport.h, TRANSPORT_EP_CLASS_REQUEST): answered with the
 * same setup packet, the data of an IN request, and the STALL flag when refused.
 */
static void class_request(struct sim *s, const uint8_t *buf, size_t len)
{
	struct transport_sim_class_request rq;
	uint8_t out[sizeof(rq) + NTB_PARAMS_SIZE];
	size_t n = 0;
	bool ok = false;

	s->stats.class_requests++;
	if (len < sizeof(rq)) {
		s->stats.short_messages++;
		return;
	}
	memcpy(&rq, buf, sizeof(rq));
	const uint8_t *data = buf + sizeof(rq);
	size_t dlen = len - sizeof(rq);
	uint16_t value = get_le16((const uint8_t *)&rq.value);
	uint16_t want = get_le16((const uint8_t *)&rq.length);
	uint8_t *in = out + sizeof(rq);
	bool is_in = rq.request_type == 0xa1, is_out = rq.request_type == 0x21;

	if (s->mbim && is_in) {
		switch (rq.request) {
		case NCM_GET_NTB_PARAMETERS:
			ntb_params_write(&s->opts.ntb, in);
			n = NTB_PARAMS_SIZE;
			ok = true;
			break;
		case NCM_GET_NTB_FORMAT:
			ntb_put_le16(in, s->ntb_format == NTB_FORMAT_32 ? 1 : 0);
			n = 2;
			ok = true;
			break;
		case NCM_GET_NTB_INPUT_SIZE:
			ntb_put_le32(in, s->ntb_in_size);
			n = 4;
			if (s->ntb_in_max_dgrams) {
				ntb_put_le16(in + 4, s->ntb_in_max_dgrams);
				ntb_put_le16(in + 6, 0);
				n = 8;
			}
			ok = true;
			break;
		case NCM_GET_CRC_MODE:
			ntb_put_le16(in, 0);
			n = 2;
			ok = true;
			break;
		default:
			break;
		}
		if (n > want)
			n = want;
	} else if (s->mbim && is_out && dlen == want) {
		/* The data alternate setting is in use while a session carries data. */
		bool idle = !any_session(s);
		switch (rq.request) {
		case NCM_SET_NTB_FORMAT:
			if (idle && dlen == 0 &&
			    (value == 0 ||
			     (value == 1 && (s->opts.ntb.formats & NTB_FORMATS_32)))) {
				if (s->dl_packets > 0 && !s->dl_sealed)
					dl_flush(s);
				s->ntb_format = value == 1 ? NTB_FORMAT_32 : NTB_FORMAT_16;
				ok = true;
			}
			break;
		case NCM_SET_NTB_INPUT_SIZE:
			if (idle && (dlen == 4 || dlen == 8)) {
				uint32_t size = get_le32(data);
				if (size >= NTB_MIN_IN_SIZE && size <= s->opts.ntb.in_max_size &&
				    size >= s->opts.mtu + SIM_NTB_RESERVED) {
					if (s->dl_packets > 0 && !s->dl_sealed)
						dl_flush(s);
					s->ntb_in_size = size;
					s->ntb_in_max_dgrams = dlen == 8 ? get_le16(data + 4) : 0;
					ok = true;
				}
			}
			break;
		case NCM_SET_CRC_MODE:
			ok = dlen == 0 && value == 0;
			break;
		default:
			break;
		}
	}
	if (!ok) {
		s->stats.class_stalled++;
		n = 0;
	}
	log_debug("sim %s: class request %02x/%02x value %u: %s", s->opts.socket_path,
		  rq.request_type, rq.request, value, ok ? "done" : "stalled");
	memcpy(out, &rq, sizeof(rq));
	ctl_send(s, TRANSPORT_EP_CLASS_REQUEST, ok ? 0 : TRANSPORT_SIM_FLAG_STALL, out,
		 sizeof(rq) + n);
}

/*
 * Peek at the next message's header and length, and when it was sent: the kernel's receive
 * timestamp (CLOCK_REALTIME, SO_TIMESTAMPNS), on the radio's clock, never after now.
 */
static ssize_t peek_message(struct sim *s, struct transport_sim_header *h, uint64_t now,
			    uint64_t *since)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct timespec))];
	} control;
	struct iovec iov = { h, sizeof(*h) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf) };
	ssize_t n = recvmsg(s->conn_fd, &mh, MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC);

	*since = now;
	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		struct timespec sent, real;
		memcpy(&sent, CMSG_DATA(c), sizeof(sent));
		clock_gettime(CLOCK_REALTIME, &real);
		int64_t ago = ((int64_t)real.tv_sec - sent.tv_sec) * 1000000000LL +
			      (real.tv_nsec - sent.tv_nsec);
		if (ago > 0 && (uint64_t)ago < now)
			*since = now - (uint64_t)ago;
	}
	return n;
}

static void on_conn_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sim *s = w->data;
	const size_t hdr = sizeof(struct transport_sim_header);
	unsigned slot = 0;
	(void)loop;
	(void)revents;

	for (unsigned i = 0; i < SIM_READ_BUDGET && s->conn_fd >= 0; i++) {
		uint8_t *msg = s->ul_buf + slot * s->ul_msg_size;
		if (s->radio && s->opts.modem_buffer) {
			/* A transfer the modem buffer cannot take stays in the socket, pending
			 * to qmapd like a NAKed OUT transfer; control messages still pass. */
			struct transport_sim_header ph;
			uint64_t since, now = radio_now();
			ssize_t pn = peek_message(s, &ph, now, &since);
			if (pn >= (ssize_t)hdr && ph.ep == TRANSPORT_EP_BULK_OUT) {
				uint32_t bytes = (uint32_t)(pn - (ssize_t)hdr);
				uint64_t at;
				if (!sim_radio_take(s->radio, bytes, since, now, &at)) {
					s->ul_stalled = true;
					s->ul_stall_bytes = bytes;
					s->stats.ul_modem_stalls++;
					ev_io_stop(s->loop, &s->io_conn_read);
					break;
				}
				/* Taken when the modem would have: pending since `since`, into
				 * the buffer the instant it had room, however late we are. */
				s->ul_take_ns = at;
				if (now - at >= SIM_RADIO_BATCH_NS) {
					s->stats.ul_modem_late_takes++;
					s->stats.ul_modem_late_us += (now - at) / 1000;
				}
			}
		} else if (s->radio) {
			s->ul_take_ns = radio_now();
		}
		/* MSG_TRUNC: the real length even when the message did not fit. */
		ssize_t n = recv(s->conn_fd, msg, s->ul_msg_size, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				log_warning_errno(errno, "sim %s: receive failed",
						  s->opts.socket_path);
				sim_disconnect(s);
			}
			break;
		}
		/* Every message carries a header, so zero bytes is the end of the stream. */
		if (n == 0) {
			sim_disconnect(s);
			break;
		}
		if ((size_t)n > s->ul_msg_size) {
			s->stats.truncated++;
			continue;
		}
		if ((size_t)n < hdr) {
			s->stats.short_messages++;
			continue;
		}

		struct transport_sim_header h;
		memcpy(&h, msg, hdr);
		switch (h.ep) {
		case TRANSPORT_EP_BULK_OUT:
			ul_transfer(s, h.flags, msg + hdr, (size_t)n - hdr);
			/* Taken into the modem: the host's transfer completes. */
			if (h.flags & TRANSPORT_SIM_FLAG_ACK)
				s->ul_acks_pending++;
			/* Its packets may be held by reference until sim_net_flush(). */
			if (++slot == SIM_UL_BATCH) {
				sim_net_flush(s->net);
				slot = 0;
			}
			break;
		case TRANSPORT_EP_CONTROL:
			s->stats.control_messages++;
			/* Malformed ones are counted by the engine (and answered as it says). */
			if (s->mbim)
				sim_mbim_handle(s->mbim, msg + hdr, (size_t)n - hdr);
			else
				sim_qmi_handle(s->qmi, msg + hdr, (size_t)n - hdr);
			break;
		case TRANSPORT_EP_CLASS_REQUEST:
			class_request(s, msg + hdr, (size_t)n - hdr);
			break;
		case TRANSPORT_EP_INTERRUPT:
			s->stats.interrupt_messages++;
			break;
		default:
			s->stats.unknown_ep++;
			break;
		}
	}
	sim_net_flush(s->net);
	ul_ack_flush(s);
	if (s->radio)
		radio_run(s);
}

static void set_sndbuf(struct sim *s, int fd)
{
	int size = SIM_SNDBUF;

	/* SO_SNDBUFFORCE ignores wmem_max but needs CAP_NET_ADMIN; the plain one is capped. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) == 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)) < 0)
		log_warning_errno(errno, "sim %s: cannot raise the send buffer",
				  s->opts.socket_path);
}

static void on_listen_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sim *s = w->data;
	(void)revents;

	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				log_warning_errno(errno, "sim %s: accept failed",
						  s->opts.socket_path);
			return;
		}
		if (s->conn_fd >= 0) {
			s->stats.connections_rejected++;
			log_warning("sim %s: refusing a second connection while qmapd is connected",
				    s->opts.socket_path);
			close(fd);
			continue;
		}

		set_sndbuf(s, fd);
		/* When each transfer was sent: the radio takes it from then on (peek_message). */
		int on = 1;
		if (s->radio && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0)
			log_warning_errno(errno, "sim %s: no receive timestamps",
					  s->opts.socket_path);
		/* What qmapd would read from the USB descriptors: the data interface, and for
		 * MBIM the functional descriptor and NTB parameters. A fresh socket has room. */
		struct {
			struct transport_sim_header h;
			struct transport_sim_descriptor d;
			struct transport_sim_mbim_descriptor mbim;
		} __attribute__((packed)) desc = {
			.h = { .ep = TRANSPORT_EP_DESCRIPTOR },
			.d = { .interface_number = s->opts.quirks.data_interface,
			       .function = s->mbim ? TRANSPORT_SIM_FUNCTION_MBIM
						   : TRANSPORT_SIM_FUNCTION_QMI },
		};
		size_t desc_len = sizeof(desc.h) + sizeof(desc.d);
		if (s->mbim) {
			ntb_params_write(&s->opts.ntb, desc.mbim.ntb_parameters);
			ntb_put_le16((uint8_t *)&desc.mbim.max_control_message,
				     s->opts.mbim_max_control);
			ntb_put_le16((uint8_t *)&desc.mbim.max_segment_size,
				     s->opts.mbim_max_segment);
			ntb_put_le16((uint8_t *)&desc.mbim.mtu, (uint16_t)s->opts.session_mtu);
			desc_len = sizeof(desc);
			/* A new USB enumeration: the NTB defaults again (NCM 1.0 §6.2.5, 6.2.7). */
			s->ntb_format = NTB_FORMAT_16;
			s->ntb_in_size = s->opts.ntb.in_max_size;
			s->ntb_in_max_dgrams = 0;
		}
		if (send(fd, &desc, desc_len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			log_warning_errno(errno, "sim %s: cannot send the descriptor message",
					  s->opts.socket_path);
			close(fd);
			continue;
		}
		s->conn_fd = fd;
		s->stats.connections++;
		ev_io_set(&s->io_conn_read, fd, EV_READ);
		ev_io_set(&s->io_conn_write, fd, EV_WRITE);
		ev_io_start(loop, &s->io_conn_read);
		log_info("sim %s: qmapd connected", s->opts.socket_path);
	}
}

/* The QMI side answers with the data side's command-line values as its defaults and limits. */
static int sim_new_qmi(struct sim *s)
{
	const struct sim_options *o = &s->opts;
	_cleanup_free_ struct sim_qmi_options *q = malloc(sizeof(*q)); /* ~12 KiB */
	if (!q)
		return -ENOMEM;

	sim_qmi_options_init(q);
	q->no_qmapv5 = o->no_qmapv5;
	q->lose_releases = o->lose_releases;
	q->quirks = o->quirks;
	q->limits.ul_max_size = o->ul_max_size;
	q->limits.ul_max_datagrams = o->ul_max_datagrams;
	q->session_mtu = o->session_mtu;
	memcpy(q->apn, o->apn, sizeof(q->apn));
	q->n_apn = o->n_apn;
	q->limits.version = o->qmap_version;
	q->limits.dl_max_size = o->dl_max_size;
	q->limits.dl_max_datagrams = o->dl_max_datagrams;
	q->dl_min_size = o->mtu + SIM_DL_RESERVED;
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct sim_mux_options *m = &o->mux[id];
		q->mux[id] = (struct sim_qmi_mux){
			.present = m->present,
			.ipv4 = m->host4,
			.ipv6 = m->host6,
		};
	}

	static const struct sim_qmi_callbacks cb = {
		.send = on_qmi_send,
		.set_data_format = on_qmi_data_format,
		.log = on_qmi_log,
	};
	return sim_qmi_new(q, &cb, s, &s->qmi);
}

/* The MBIM side answers with the sessions' addresses, APNs and MTU of the command line. */
static int sim_new_mbim(struct sim *s)
{
	const struct sim_options *o = &s->opts;
	_cleanup_free_ struct sim_mbim_options *m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;

	sim_mbim_options_init(m);
	m->max_control_message = o->mbim_max_control;
	m->max_sessions = o->mbim_max_sessions;
	m->session_mtu = o->session_mtu;
	m->qmi_over_mbim = o->qmi_over_mbim;
	m->subscriber_state = o->mbim_sim_state;
	snprintf(m->sim_pin, sizeof(m->sim_pin), "%s", o->quirks.sim_pin);
	m->no_sim = o->quirks.no_sim;
	snprintf(m->msisdn, sizeof(m->msisdn), "%s", o->quirks.msisdn);
	snprintf(m->roaming_file, sizeof(m->roaming_file), "%s", o->quirks.roaming_file);
	snprintf(m->sms_outbox, sizeof(m->sms_outbox), "%s", o->quirks.sms_outbox);
	memcpy(m->apn, o->apn, sizeof(m->apn));
	m->n_apn = o->n_apn;
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct sim_mux_options *mx = &o->mux[id];
		m->mux[id] = (struct sim_qmi_mux){
			.present = mx->present,
			.ipv4 = mx->host4,
			.ipv6 = mx->host6,
		};
	}

	static const struct sim_mbim_callbacks cb = {
		.send = on_mbim_send,
		.log = on_qmi_log,
	};
	return sim_mbim_new(m, &cb, s, &s->mbim);
}

int sim_new(struct ev_loop *loop, const struct sim_options *opts, struct sim **ret)
{
	char err[SIM_ERROR_MAX];

	if (sim_options_validate(opts, err, sizeof(err)) < 0)
		return log_error_errno(EINVAL, "sim: %s", err);

	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return log_error_errno(ENOMEM, "sim: cannot allocate");
	s->loop = loop;
	s->opts = *opts;
	s->listen_fd = s->conn_fd = s->radio_timer_fd = -1;
	s->hdr_size = qmap_ul_header_size(opts->qmap_version);
	s->frame_room = s->hdr_size;
	s->csum_valid_opt = opts->csum_valid;
	if (opts->qmap_version != QMAP_V5)
		s->opts.csum_valid = false;
	s->dl_alloc_size = opts->mbim ? opts->ntb.in_max_size : opts->dl_max_size;
	s->ctl_tail = &s->ctl_head;
	s->ntb_in_size = opts->ntb.in_max_size;

	ev_io_init(&s->io_listen, on_listen_readable, -1, EV_READ);
	ev_io_init(&s->io_conn_read, on_conn_readable, -1, EV_READ);
	ev_io_init(&s->io_conn_write, on_conn_writable, -1, EV_WRITE);
	ev_io_init(&s->io_tun, on_tun_readable, -1, EV_READ);
	ev_timer_init(&s->flush_timer, on_flush_timer, 0., 0.);
	ev_timer_init(&s->state_timer, on_state_timer, SIM_STATE_TICK_SECONDS,
		      SIM_STATE_TICK_SECONDS);
	s->state_timer.data = s;
	ev_io_init(&s->io_radio_timer, on_radio_timer, -1, EV_READ);
	ev_timer_init(&s->dl_pace_timer, on_dl_pace_timer, 0., 0.);
	s->io_radio_timer.data = s->dl_pace_timer.data = s;
	s->io_listen.data = s->io_conn_read.data = s->io_conn_write.data = s->io_tun.data = s;
	s->flush_timer.data = s;

	s->ul_msg_size = sizeof(struct transport_sim_header) + TRANSPORT_MAX_TRANSFER;
	s->ul_buf = malloc(SIM_UL_BATCH * s->ul_msg_size);
	s->dl_buf = calloc(1, sizeof(struct transport_sim_header) + s->dl_alloc_size);
	s->routes = calloc(CONFIG_MUX_ID_MAX * SIM_MUX_MAX_PREFIXES, sizeof(*s->routes));
	if (!s->ul_buf || !s->dl_buf || !s->routes) {
		sim_free(s);
		return log_error_errno(ENOMEM, "sim: cannot allocate buffers");
	}
	*(struct transport_sim_header *)s->dl_buf =
		(struct transport_sim_header){ .ep = TRANSPORT_EP_BULK_IN };

	for (unsigned id = CONFIG_MUX_ID_MAX; id >= CONFIG_MUX_ID_MIN; id--) {
		const struct sim_mux_options *m = &opts->mux[id];
		if (!m->present)
			continue;
		s->first_mux = (uint8_t)id;
		for (unsigned i = 0; i < m->n_prefix; i++)
			s->routes[s->n_routes++] = (struct sim_route){ m->prefix[i], (uint8_t)id };
	}
	build_unknown_mux_packet(s->unknown_mux_packet, sizeof(s->unknown_mux_packet));

	if (opts->ul_rate || opts->modem_buffer || opts->network_delay_ms || opts->rate_file[0]) {
		int r = sim_radio_new(SIM_RADIO_RING_BYTES, &s->radio);
		if (r < 0) {
			sim_free(s);
			return log_error_errno(r, "sim: cannot allocate the radio");
		}
		sim_radio_set(s->radio, opts->ul_rate, opts->modem_buffer,
			      2ULL * opts->network_delay_ms * 1000000ULL);
		s->radio_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (s->radio_timer_fd < 0) {
			r = -errno;
			sim_free(s);
			return log_error_errno(r, "sim: cannot create the radio's timer");
		}
		ev_io_set(&s->io_radio_timer, s->radio_timer_fd, EV_READ);
		ev_io_start(loop, &s->io_radio_timer);
	}

	int r = sim_new_qmi(s);
	if (r < 0) {
		sim_free(s);
		return log_error_errno(r, "sim: cannot create the QMI side");
	}
	if (opts->mbim) {
		s->ntb_rx = malloc(TRANSPORT_MAX_TRANSFER);
		s->ntb_seg = malloc(SIM_NTB_SEG_ROOM);
		r = !s->ntb_rx || !s->ntb_seg ? -ENOMEM : sim_new_mbim(s);
		if (r < 0) {
			sim_free(s);
			return log_error_errno(r, "sim: cannot create the MBIM side");
		}
	}

	*ret = s;
	return 0;
}

static int sim_listen(struct sim *s)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	const char *path = s->opts.socket_path;

	if (strlen(path) >= sizeof(addr.sun_path))
		return log_error_errno(ENAMETOOLONG, "sim %s: socket path too long", path);

	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(errno, "sim %s: cannot create the socket", path);

	if (lstat(path, &st) == 0) {
		/* Only ever replace a stale socket, never someone's file. */
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(EEXIST, "sim %s: exists and is not a socket", path);
		if (unlink(path) < 0 && errno != ENOENT)
			return log_error_errno(errno, "sim %s: cannot remove the stale socket",
					       path);
	}

	/* Bind and listen under a temporary name, then rename: the socket file appearing
	 * means connect() works, so tests can simply wait for it. */
	char tmp[sizeof(addr.sun_path)];
	bool use_tmp = snprintf(tmp, sizeof(tmp), "%s.tmp", path) < (int)sizeof(tmp);
	if (use_tmp)
		unlink(tmp);
	strcpy(addr.sun_path, use_tmp ? tmp : path);

	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		return log_error_errno(errno, "sim %s: cannot bind", addr.sun_path);
	if (listen(fd, SIM_BACKLOG) < 0) {
		int r = log_error_errno(errno, "sim %s: cannot listen", addr.sun_path);
		unlink(addr.sun_path);
		return r;
	}
	if (use_tmp && rename(tmp, path) < 0) {
		int r = log_error_errno(errno, "sim %s: cannot rename %s", path, tmp);
		unlink(tmp);
		return r;
	}

	s->bound = true;
	s->listen_fd = TAKE_FD(fd);
	return 0;
}

int sim_start(struct sim *s)
{
	char buf[INET6_ADDRSTRLEN + 8];
	int r;

	r = rtnl_open(&s->rtnl);
	if (r < 0)
		return log_error_errno(r, "sim: cannot open rtnetlink");

	r = sim_net_new(s->rtnl, s->opts.netdev, s->opts.mtu, s->opts.offload, on_net_written, s,
			&s->net);
	if (r < 0)
		return log_error_errno(r, "sim %s: cannot create the network device%s",
				       s->opts.netdev,
				       s->opts.offload ? " with offloads (try --no-offload)" : "");
	const struct netdev *nd = sim_net_device(s->net);
	s->net_name = nd->name;
	if (s->opts.dl_buffer && (r = sim_net_set_queue_len(s->net, s->opts.dl_buffer)) < 0)
		return log_error_errno(r, "sim %s: cannot set the downlink buffer to %u packets",
				       s->net_name, s->opts.dl_buffer);

	for (unsigned i = 0; i < s->opts.n_net_address; i++) {
		const struct config_prefix *a = &s->opts.net_address[i];
		r = rtnl_addr_add(s->rtnl, nd->ifindex, a);
		if (r < 0)
			return log_error_errno(r, "sim %s: cannot add address %s", s->net_name,
					       prefix_to_string(a, buf, sizeof(buf)));
	}
	for (unsigned i = 0; i < s->n_routes; i++) {
		const struct sim_route *rt = &s->routes[i];
		r = rtnl_route_add(s->rtnl, nd->ifindex, &rt->prefix, 0);
		if (r < 0)
			return log_error_errno(
				r, "sim mux %u: cannot add route %s via %s", rt->mux_id,
				prefix_to_string(&rt->prefix, buf, sizeof(buf)), s->net_name);
	}

	r = sim_listen(s);
	if (r < 0)
		return r;

	ev_io_set(&s->io_tun, nd->fd, EV_READ);
	ev_io_start(s->loop, &s->io_tun);
	ev_io_set(&s->io_listen, s->listen_fd, EV_READ);
	ev_io_start(s->loop, &s->io_listen);
	ev_timer_start(s->loop, &s->state_timer);
	const char *offload = !s->opts.offload ? "no offload"
			      : nd->uso	       ? "checksum, TSO and USO offload"
					       : "checksum and TSO offload";
	if (s->mbim)
		log_info("sim %s: listening, network side %s (%s), MBIM, NTB16%s, in max %u, out "
			 "max %u/%u datagrams, divisor %u remainder %u alignment %u",
			 s->opts.socket_path, s->net_name, offload,
			 (s->opts.ntb.formats & NTB_FORMATS_32) ? " and NTB32" : "",
			 s->opts.ntb.in_max_size, s->opts.ntb.out_max_size,
			 s->opts.ntb.out_max_datagrams, s->opts.ntb.out_divisor,
			 s->opts.ntb.out_remainder, s->opts.ntb.out_alignment);
	else
		log_info("sim %s: listening, network side %s (%s), QMAPv%d, dl max %u bytes/%u "
			 "datagrams",
			 s->opts.socket_path, s->net_name, offload, (int)s->opts.qmap_version,
			 s->opts.dl_max_size, s->opts.dl_max_datagrams);
	return 0;
}

struct sim *sim_free(struct sim *s)
{
	if (!s)
		return NULL;

	sim_disconnect(s);
	ev_io_stop(s->loop, &s->io_listen);
	ev_io_stop(s->loop, &s->io_tun);
	ev_timer_stop(s->loop, &s->flush_timer);
	ev_timer_stop(s->loop, &s->state_timer);
	ev_io_stop(s->loop, &s->io_radio_timer);
	ev_timer_stop(s->loop, &s->dl_pace_timer);
	s->radio = sim_radio_free(s->radio);
	if (s->radio_timer_fd >= 0)
		close(s->radio_timer_fd);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->bound)
		unlink(s->opts.socket_path);
	s->net = sim_net_free(s->net);
	rtnl_close(s->rtnl);
	ctl_clear(s);
	sim_qmi_free(s->qmi);
	sim_mbim_free(s->mbim);
	free(s->ntb_rx);
	free(s->ntb_seg);
	free(s->routes);
	free(s->ul_buf);
	free(s->dl_buf);
	free(s);
	return NULL;
}

bool sim_is_connected(const struct sim *s)
{
	return s->conn_fd >= 0;
}

int sim_set_data_format(struct sim *s, enum qmap_version version, uint32_t dl_max_size,
			uint32_t dl_max_datagrams, uint32_t dl_min_padding)
{
	uint32_t min_size = s->opts.mtu + SIM_DL_RESERVED;

	if ((version != QMAP_V1 && version != QMAP_V5) || dl_max_size < min_size ||
	    dl_max_size > s->dl_alloc_size || dl_max_datagrams < 1 ||
	    dl_min_padding > SIM_DL_PADDING_MAX || dl_min_padding % SIM_DL_ALIGN) {
		log_debug("sim %s: data format QMAPv%d %u bytes/%u datagrams out of range",
			  s->opts.socket_path, (int)version, dl_max_size, dl_max_datagrams);
		return -EINVAL;
	}

	/* Frames already in the aggregate are in the old format: send them (or park them,
	 * ahead of the grant) before anything is built in the new one. Leading injections
	 * alone are simply built again. */
	if (s->dl_packets > 0 && !s->dl_sealed)
		dl_flush(s);
	else if (!s->dl_blocked)
		dl_reset(s);

	s->opts.qmap_version = version;
	s->hdr_size = qmap_ul_header_size(version);
	s->frame_room = s->hdr_size + s->dl_pad;
	s->opts.csum_valid = s->csum_valid_opt && version == QMAP_V5;
	/* A modem that ignores the grant keeps sending what it can (--ignore-dl-grant). */
	s->opts.dl_max_size = s->opts.ignore_dl_grant ? s->dl_alloc_size : dl_max_size;
	s->opts.dl_max_datagrams = dl_max_datagrams;
	s->dl_pad = dl_min_padding;
	s->frame_room = s->hdr_size + s->dl_pad;
	log_info("sim %s: data format QMAPv%d, dl max %u bytes/%u datagrams, padding %u%s",
		 s->opts.socket_path, (int)version, dl_max_size, dl_max_datagrams, dl_min_padding,
		 s->opts.ignore_dl_grant ? " (ignored: sending larger aggregates)" : "");
	return 0;
}

static int parse_rate(const char *v, uint64_t *ret)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (end == v || errno != 0 || d < 0)
		return -EINVAL;
	switch (*end) {
	case 'k':
		d *= 1e3, end++;
		break;
	case 'M':
		d *= 1e6, end++;
		break;
	case 'G':
		d *= 1e9, end++;
		break;
	default:
		break;
	}
	if (*end != '\0' && *end != '\n' && *end != ' ')
		return -EINVAL;
	*ret = (uint64_t)d;
	return 0;
}

int sim_parse_rate(const char *arg, uint64_t *ret)
{
	return parse_rate(arg, ret);
}

int sim_reload_rates(struct sim *s)
{
	char buf[256], *save = NULL;
	uint64_t ul = s->opts.ul_rate, dl = s->opts.dl_rate;

	if (!s->opts.rate_file[0])
		return -ENOENT;
	FILE *f = fopen(s->opts.rate_file, "re");
	if (!f)
		return log_warning_errno(errno, "sim: cannot read %s", s->opts.rate_file);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		int r = -EINVAL;
		if (strncmp(tok, "ul-rate=", 8) == 0)
			r = parse_rate(tok + 8, &ul);
		else if (strncmp(tok, "dl-rate=", 8) == 0)
			r = parse_rate(tok + 8, &dl);
		if (r < 0)
			return log_warning_errno(EINVAL, "sim: invalid '%s' in %s", tok,
						 s->opts.rate_file);
	}
	s->opts.ul_rate = ul;
	s->opts.dl_rate = dl;
	if (s->radio) {
		sim_radio_set(s->radio, ul, s->opts.modem_buffer,
			      2ULL * s->opts.network_delay_ms * 1000000ULL);
		radio_run(s); /* a waiting transfer may fit sooner or later now */
	}
	log_info("sim: ul-rate %" PRIu64 " dl-rate %" PRIu64 " bit/s", ul, dl);
	return 0;
}

int sim_deliver_sms(struct sim *s, const uint8_t *pdu, size_t len)
{
	if (s->mbim)
		return sim_mbim_deliver_sms(s->mbim, pdu, len);
	return sim_qmi_deliver_sms(s->qmi, pdu, len);
}

unsigned sim_drop_sessions(struct sim *s)
{
	if (s->mbim)
		return sim_mbim_drop_all(s->mbim);
	return sim_qmi_drop_all(s->qmi);
}

int sim_reset_function(struct sim *s)
{
	return s->mbim ? (int)sim_mbim_function_reset(s->mbim) : -EOPNOTSUPP;
}

const struct sim_mbim_stats *sim_get_mbim_stats(const struct sim *s)
{
	return s->mbim ? sim_mbim_get_stats(s->mbim) : NULL;
}

enum ntb_format sim_get_ntb_format(const struct sim *s)
{
	return s->ntb_format;
}

uint32_t sim_get_ntb_in_size(const struct sim *s)
{
	return s->ntb_in_size;
}

const struct sim_stats *sim_get_stats(const struct sim *s)
{
	return &s->stats;
}

const struct sim_qmi_stats *sim_get_qmi_stats(const struct sim *s)
{
	return sim_qmi_get_stats(s->qmi);
}

void sim_print_stats(const struct sim *s, FILE *f)
{
	const struct sim_stats *st = &s->stats;

#define P(key) fprintf(f, #key "=%" PRIu64 "\n", st->key)
	P(connections);
	P(connections_rejected);
	P(disconnects);
	P(ul_transfers);
	P(ul_bytes);
	P(ul_zlp);
	P(truncated);
	P(short_messages);
	P(ul_unknown_mux);
	P(ul_tun_dropped);
	P(ul_tun_errors);
	P(ul_csum_computed);
	P(control_messages);
	P(interrupt_messages);
	P(unknown_ep);
	P(dl_aggregates);
	P(dl_datagrams);
	P(dl_bytes);
	P(dl_no_route);
	P(dl_not_ip);
	P(dl_dropped_disconnected);
	P(dl_send_blocked);
	P(dl_tun_errors);
	P(ul_no_session);
	P(dl_no_session);
	P(qmi_send_dropped);
	P(ul_radio_dropped);
	P(ul_modem_stalls);
	P(ul_modem_buffer_max);
	P(ul_modem_late_takes);
	P(ul_modem_late_us);
	P(dl_paced);
	P(ul_ntb_dropped);
	P(ul_ntb_too_big);
	P(ul_ntb_too_many_datagrams);
	P(ul_ntb_misaligned_ndp);
	P(ul_ntb_misaligned_datagram);
	P(class_requests);
	P(class_stalled);
#undef P
	const struct sim_qmi_stats *qs = sim_qmi_get_stats(s->qmi);
#define Q(key) fprintf(f, #key "=%" PRIu64 "\n", qs->key)
	Q(qmi_requests);
	Q(qmi_responses);
	Q(qmi_indications);
	Q(sms_received);
	Q(sms_sent);
	Q(sms_refused);
	Q(sms_deleted);
	Q(qmi_malformed);
	Q(qmi_errors);
	Q(qmi_sessions_started);
	Q(qmi_sessions_failed);
	Q(qmi_sessions_dropped);
	Q(data_format_sets);
	Q(qmi_silenced);
	Q(endpoint_missing);
	Q(endpoint_wrong);
	Q(binds_with_endpoint);
	Q(bind_interface);
	Q(qmi_clients);
	Q(qmi_releases_lost);
	Q(low_power);
#undef Q
	/* A gauge: the muxes with a QMI session up now (what the network sees of the host). */
	unsigned muxes_connected = 0;
	for (unsigned id = CONFIG_MUX_ID_MIN; s->qmi && id <= CONFIG_MUX_ID_MAX; id++)
		muxes_connected += sim_qmi_mux_connected(s->qmi, id);
	fprintf(f, "qmi_muxes_connected=%u\n", muxes_connected);
	/* The MBIM side's (struct sim_mbim_stats), zero in QMI mode. */
	static const struct sim_mbim_stats no_mbim;
	const struct sim_mbim_stats *ms = s->mbim ? sim_mbim_get_stats(s->mbim) : &no_mbim;
#define M(key) fprintf(f, #key "=%" PRIu64 "\n", ms->key)
	M(mbim_requests);
	M(mbim_responses);
	M(mbim_indications);
	M(sms_received);
	M(sms_sent);
	M(sms_refused);
	M(sms_deleted);
	M(mbim_malformed);
	M(mbim_not_opened);
	M(mbim_opens);
	M(mbim_reopens);
	M(mbim_sessions_ended_by_host);
	M(mbim_errors);
	M(mbim_unsupported);
	M(mbim_fragments_in);
	M(mbim_fragments_out);
	M(mbim_sessions_started);
	M(mbim_sessions_failed);
	M(mbim_sessions_dropped);
	M(mbim_function_resets);
#undef M
	for (unsigned e = 0; e < _QMAP_ERR_MAX; e++)
		fprintf(f, "malformed_%s=%" PRIu64 "\n", qmap_error_name(e), st->malformed[e]);
	for (unsigned e = 0; e < _NTB_ERR_MAX; e++)
		fprintf(f, "ul_ntb_malformed_%s=%" PRIu64 "\n", ntb_error_name(e),
			st->ul_ntb_malformed[e]);
	for (unsigned t = 0; t < ARRAY_SIZE(command_type_keys); t++)
		fprintf(f, "commands_%s=%" PRIu64 "\n", command_type_keys[t], st->commands[t]);
	fprintf(f, "commands_short=%" PRIu64 "\n", st->commands_short);
	fprintf(f, "flow_commands_sent=%" PRIu64 "\n", st->flow_commands_sent);
	for (unsigned k = 0; k < _SIM_INJECT_MAX; k++)
		fprintf(f, "injected_%s=%" PRIu64 "\n", inject_keys[k], st->injected[k]);
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct sim_mux_stats *m = &st->mux[id];
		if (!s->opts.mux[id].present)
			continue;
		fprintf(f,
			"mux %u: ul_packets=%" PRIu64 " ul_bytes=%" PRIu64 " dl_packets=%" PRIu64
			" dl_bytes=%" PRIu64 " session=%d\n",
			id, m->ul_packets, m->ul_bytes, m->dl_packets, m->dl_bytes,
			mux_session(s, id) ? 1 : 0);
	}
}

static void sim_print_stats_cb(FILE *f, const void *userdata)
{
	sim_print_stats(userdata, f);
}

int sim_write_stats_file(const struct sim *s, const char *path)
{
	int r = atomic_file_write(path, sim_print_stats_cb, s);
	if (r < 0)
		return log_error_errno(r, "sim: cannot write stats to %s", path);
	return 0;
}
