/* SPDX-License-Identifier: MIT */
/*
 * qmapd.conf: an inih file with one [device] section and [mux.N] sections (N = 1..254).
 * Parsing is pure: it never logs; every error is returned as text naming file:line
 * and the offending key or value, for the caller to log once.
 */
#ifndef QMAPD_CONFIG_H
#define QMAPD_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmap.h"

#define CONFIG_MUX_ID_MIN 1
#define CONFIG_MUX_ID_MAX 254
#define CONFIG_MAX_ROUTES 8
#define CONFIG_VALUE_MAX  160 /* inih cuts lines at 200 bytes; longer values are rejected */
#define CONFIG_ERROR_MAX  512

#define CONFIG_DL_MAX_SIZE_DEFAULT	16384
#define CONFIG_DL_MAX_SIZE_MIN		2048
#define CONFIG_DL_MAX_SIZE_MAX		65536
#define CONFIG_RX_TRANSFERS_MIN		16 /* docs/ARCHITECTURE.md lesson 2: never fewer */
#define CONFIG_RX_TRANSFERS_MAX		256
#define CONFIG_UL_MAX_SIZE_DEFAULT	16384
#define CONFIG_UL_MAX_DATAGRAMS_DEFAULT 32
#define CONFIG_MAX_PACKET_SIZE_DEFAULT	512
#define CONFIG_MTU_DEFAULT		1500
#define CONFIG_CONTROL_LINK_DEFAULT	"/run/qmapd/qmi0"
#define CONFIG_CONTROL_SOCKET_DEFAULT	"/run/qmapd/control"

enum config_ip_type {
	CONFIG_IP_TYPE_IPV4,
	CONFIG_IP_TYPE_IPV6,
	CONFIG_IP_TYPE_IPV4V6,
};

/* Who drives the modem's sessions. */
enum config_control {
	CONFIG_CONTROL_QMI,  /* qmapd talks QMI over control-link and gets the addresses */
	CONFIG_CONTROL_NONE, /* data plane only: sessions are up, addresses are static */
};

/* Where the headroom of forwarded packets comes from (docs/ARCHITECTURE.md, lesson 1). */
enum config_headroom {
	CONFIG_HEADROOM_XDP, /* TAP + XDP_PASS program: 256 bytes reserved by the kernel */
	CONFIG_HEADROOM_OFF, /* plain TUN: NET_SKB_PAD only */
	/*
	 * TAP; the XDP program is attached while most segments are written one per packet and
	 * detached while most leave in GRO super-packets, which generic XDP would linearize.
	 */
	CONFIG_HEADROOM_AUTO,
};

/* The uplink queue of a mux (qmapd.conf(5), docs/ARCHITECTURE.md "Uplink queue"). */
enum config_uplink_queue {
	CONFIG_UPLINK_QUEUE_FQ_CODEL, /* read eagerly into flow queues, CoDel, bounded in flight */
	CONFIG_UPLINK_QUEUE_FIFO, /* read only while OUT transfers are free: the kernel queues */
};

#define CONFIG_CODEL_TARGET_DEFAULT_US	 5000	/* RFC 8290 */
#define CONFIG_CODEL_INTERVAL_DEFAULT_US 100000 /* RFC 8290 */

struct config_prefix {
	int family; /* AF_INET or AF_INET6, 0 = unset */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;
	uint8_t prefixlen;
};

struct config_mux {
	bool present;
	uint8_t id;
	char interface[16]; /* IFNAMSIZ (<net/if.h> clashes with <linux/if.h>); default "qmap<N>" */
	char apn[CONFIG_VALUE_MAX + 1];
	enum config_ip_type ip_type;
	char allowed_auth[32];
	char user[CONFIG_VALUE_MAX + 1];
	char password[CONFIG_VALUE_MAX + 1];
	uint32_t mtu;
	enum config_headroom headroom;
	enum config_uplink_queue uplink_queue;
	uint32_t codel_target_us;
	uint32_t codel_interval_us;
	struct config_prefix ipv4_address; /* static: with control = none the only ones */
	struct config_prefix ipv6_address;
	struct config_prefix routes[CONFIG_MAX_ROUTES];
	unsigned n_routes;
	uint32_t route_metric;
	bool default_route; /* install default routes through this mux */
	bool autoconnect;   /* start the session when the mux is created */
};

struct config_device {
	char device[CONFIG_VALUE_MAX + 1]; /* "usb:VID:PID", "usb-path:...", "sim:/path" */
	enum qmap_version qmap_version;
	uint32_t dl_max_size;	   /* bytes per downlink transfer */
	uint32_t rx_transfers;	   /* downlink transfers kept in flight, >= 16 */
	uint32_t ul_max_size;	   /* bytes per uplink aggregate */
	uint32_t ul_max_datagrams; /* frames per uplink aggregate */
	uint32_t max_packet_size;  /* bulk OUT wMaxPacketSize, for the ZLP rule */
	bool persist_devices;	   /* keep the network devices when qmapd exits */
	uint64_t uplink_rate;	   /* shaper, bits per second; 0 = off */
	bool uplink_rate_auto;	   /* uplink-rate = auto: the shaper follows the estimate */
	enum config_control control;
	char control_link[CONFIG_VALUE_MAX + 1]; /* the modem's QMI control device */
	char control_socket[108];		 /* sun_path: where qmapctl connects */
	char admin_group[33];			 /* may change muxes besides root; "" = root only */
};

struct config {
	char path[256];
	struct config_device device;
	struct config_mux mux[CONFIG_MUX_ID_MAX + 1]; /* indexed by mux id; [0] unused */
};

/* Defaults for everything; no muxes. */
void config_init_defaults(struct config *c);

/*
 * One mux outside a file, e.g. from qmapctl mux add or the control socket, judged by the
 * same code as a [mux.N] section:
 *   config_mux_init_defaults(&m, id);
 *   config_mux_set(&m, "apn", "internet", err, sizeof(err));   for each key
 *   config_mux_finish(&m, err, sizeof(err));                     the cross-key checks
 * config_mux_set() returns 0 or -EINVAL with a message naming the key and quoting the value
 * ("invalid ip-type 'ipv5': expected ipv4, ipv6 or ipv4v6", "unknown key 'foo'"), without a
 * file, line or section; the mux is unchanged on failure. A key given twice is the caller's
 * to refuse. config_mux_finish() checks the id and the keys against each other and marks
 * the mux present; whether its interface is free is for the daemon to decide.
 */
void config_mux_init_defaults(struct config_mux *m, unsigned id);
int config_mux_set(struct config_mux *m, const char *key, const char *value, char *err,
		   size_t errlen);
int config_mux_finish(struct config_mux *m, char *err, size_t errlen);

/*
 * Parse a file or a string (name is used in error messages). On failure returns -EINVAL
 * (or -errno for I/O) and writes "<name>:<line>: <what>" into errbuf; *ret_config is
 * untouched. On success the caller owns *ret_config (free with config_free()).
 */
int config_load_file(const char *path, struct config **ret_config, char *errbuf, size_t errlen);
int config_load_string(const char *text, const char *name, struct config **ret_config, char *errbuf,
		       size_t errlen);

struct config *config_free(struct config *c);

/*
 * Quote untrusted input for an error message: at most CONFIG_QUOTE_INPUT_MAX bytes, only
 * printable ASCII (the rest as \xNN), in single quotes, "..." when cut. Returns buf.
 */
#define CONFIG_QUOTE_INPUT_MAX 64
#define CONFIG_QUOTE_MAX       (CONFIG_QUOTE_INPUT_MAX * 4 + sizeof("''..."))
#define CONFIG_QUOTE(s)	       config_quote((char[CONFIG_QUOTE_MAX]){ 0 }, (s))
const char *config_quote(char buf[static CONFIG_QUOTE_MAX], const char *s);

const char *config_ip_type_to_string(enum config_ip_type t);
const char *config_headroom_to_string(enum config_headroom h);
const char *config_uplink_queue_to_string(enum config_uplink_queue q);
const char *config_control_to_string(enum config_control c);

/* "192.0.2.1/24" or "2001:db8::1/64"; without "/len" the full host length. 0 or -EINVAL. */
int config_parse_prefix(const char *s, struct config_prefix *ret);

#endif
