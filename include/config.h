/* SPDX-License-Identifier: MIT */
/*
 * qmapd.conf: an inih file with one [device] section, [mux.N] sections (N = 1..254), and
 * for several modems [modem.NAME] sections with their [modem.NAME.mux.N] sections.
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
#define CONFIG_DOWNLINK_BUFFER_DEFAULT	(2u << 20) /* downlink-buffer: 2 MiB */
#define CONFIG_MTU_DEFAULT		1500
#define CONFIG_CONTROL_LINK_DEFAULT	"/run/qmapd/qmi0"
#define CONFIG_CONTROL_SOCKET_DEFAULT	"/run/qmapd/control"
#define CONFIG_OPEN_TIMEOUT_DEFAULT	15 /* open-timeout: seconds */
#define CONFIG_OPEN_TIMEOUT_MIN		1
#define CONFIG_OPEN_TIMEOUT_MAX		300

enum config_ip_type {
	CONFIG_IP_TYPE_IPV4,
	CONFIG_IP_TYPE_IPV6,
	CONFIG_IP_TYPE_IPV4V6,
};

/* Where qmapd offers ModemManager's D-Bus API (org.freedesktop.ModemManager1). */
enum config_dbus {
	CONFIG_DBUS_SYSTEM, /* the system bus (the default) */
	CONFIG_DBUS_SESSION,
	CONFIG_DBUS_NONE, /* only as what the daemon decided: the API is off */
};

/* [dbus] enabled = */
enum config_dbus_enabled {
	CONFIG_DBUS_ENABLED_AUTO, /* on if the bus's socket exists at start, else quietly off */
	CONFIG_DBUS_ENABLED_YES,  /* on; no bus at start is an error and qmapd exits */
	CONFIG_DBUS_ENABLED_NO,
};

/* [dbus]: daemon-wide. */
struct config_dbus_settings {
	enum config_dbus_enabled enabled;
	enum config_dbus bus; /* SYSTEM or SESSION */
	/* The deprecated `[device] dbus =` set the above at this line (0: not used), so the
	 * daemon can warn; it maps system/session to enabled = auto with that bus, none to no. */
	unsigned legacy_line;
};

/* Who drives the modem's sessions. */

enum config_control {
	CONFIG_CONTROL_QMI,  /* qmapd talks QMI over control-link and gets the addresses */
	CONFIG_CONTROL_NONE, /* data plane only: sessions are up, addresses are static */
	CONFIG_CONTROL_MBIM, /* qmapd talks MBIM over control-link and gets the addresses */
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
	/* IFNAMSIZ (<net/if.h> clashes with <linux/if.h>); default "qmap<N>" for the single modem
	 * of device = SPEC, "<modem>.<N>" for the others */
	char interface[16];
	bool interface_set; /* interface = was given; otherwise the default of the modem's naming */
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
	/* Created over D-Bus (no key): the client (NetworkManager, mmcli) configures addresses
	 * and routes from the bearer's IP settings and decides on reconnects, as with
	 * ModemManager; the session connects once and puts nothing on the device. */
	bool client_managed;
};

struct config_device {
	char device[CONFIG_VALUE_MAX + 1]; /* "usb:VID:PID", "usb-path:...", "sim:/path" */
	enum qmap_version qmap_version;
	uint8_t ntb_format;	   /* MBIM: 16 or 32, asked for where the function offers it */
	uint32_t dl_max_size;	   /* bytes per downlink transfer */
	uint32_t rx_transfers;	   /* downlink transfers kept in flight, >= 16 */
	uint32_t ul_max_size;	   /* bytes per uplink aggregate */
	uint32_t ul_max_datagrams; /* frames per uplink aggregate */
	uint32_t max_packet_size;  /* bulk OUT wMaxPacketSize, for the ZLP rule */
	bool persist_devices;	   /* keep the network devices when qmapd exits */
	uint64_t uplink_rate;	   /* shaper, bits per second; 0 = off */
	bool uplink_rate_auto;	   /* uplink-rate = auto: the shaper follows the estimate */
	uint64_t downlink_rate;	   /* downlink shaper, bits per second; 0 = off */
	bool downlink_rate_auto;   /* downlink-rate = auto: follows the downlink's delay */
	uint32_t downlink_buffer;  /* bytes the downlink shaper holds at most */
	enum config_control
		control;   /* with control_auto: qmi until the modem's function is known */
	bool control_auto; /* control = auto (the default): qmi or mbim as the modem's function */
	char control_link[CONFIG_VALUE_MAX + 1]; /* the modem's control device (pty link) */
	/* control-link not given for a named modem: /run/qmapd/NAME.qmi, or NAME.mbim once
	 * control is mbim (config_modem_default_link()) */
	bool control_link_default;
	/* seconds the control plane waits for the modem to answer the open (QMI CTL, MBIM
	 * OPEN) before it fails and retries with backoff */
	uint32_t open_timeout;
	char control_socket[108]; /* sun_path: where qmapctl connects */
	char admin_group[33];	  /* may change muxes besides root; "" = root only */
};

#define CONFIG_MODEM_NAME_MAX	  11 /* "NAME.254" fits IFNAMSIZ */
#define CONFIG_MAX_MODEMS	  16
#define CONFIG_MAX_EXCLUDES	  16
#define CONFIG_MODEM_NAME_DEFAULT "modem0" /* the legacy single modem */

/*
 * The muxes are allocated as their sections are read, indexed by mux id ([0] unused), NULL
 * where the file has no such section: a config names a few of the 254, and 254 embedded ones
 * (some 800 bytes each) were 200 KB per modem that every parse wrote and every copy moved.
 * Every mux in the arrays below is present.
 */
struct config_modem {
	char name[CONFIG_MODEM_NAME_MAX + 1];
	/* [device] defaults overridden by [modem.NAME]; device.device is its spec */
	struct config_device device;
	/* [modem.NAME.mux.N], or the top-level [mux.N] for the legacy modem and the template;
	 * owned (config_modem_clear() frees them) */
	struct config_mux *mux[CONFIG_MUX_ID_MAX + 1];
};

struct config {
	char path[256];
	/* [device] as written: the per-modem defaults and the daemon-wide keys. For the legacy
	 * single-modem config also that modem's settings, device.device its spec. */
	struct config_device device;
	/* top-level [mux.N], indexed by mux id ([0] unused, NULL: no section): the template for
	 * discovered modems, the muxes of the legacy modem */
	struct config_mux *mux[CONFIG_MUX_ID_MAX + 1];
	/* [device] device unset or auto: claim every recognised modem (unless discovery = no:
	 * then only the [modem.NAME] sections). false: the single modem of device = SPEC,
	 * modem[0], as before there were several */
	bool discovery;
	char exclude[CONFIG_MAX_EXCLUDES][CONFIG_VALUE_MAX + 1]; /* specs never claimed */
	unsigned n_exclude;
	struct config_modem *modem; /* [modem.NAME] in file order, or the legacy one */
	unsigned n_modems;
	struct config_dbus_settings dbus; /* [dbus] */
};

/* Defaults for everything; no muxes, no modems (nothing to free yet). */
void config_init_defaults(struct config *c);
/* The [device] defaults alone (one modem's device config, e.g. for a test). */
void config_device_init_defaults(struct config_device *d);

/* [a-z0-9_-], 1..CONFIG_MODEM_NAME_MAX characters. */
bool config_modem_name_is_valid(const char *name);

/*
 * A mux of modem `modem` (not the single modem of device = SPEC, whose muxes keep "qmap<N>"):
 * its interface becomes "<modem>.<N>" unless interface = was given. For a mux added at run
 * time, after config_mux_finish(). The parser does the same for [modem.NAME.mux.N].
 */
void config_mux_name_for_modem(struct config_mux *m, const char *modem);

/*
 * A named modem's control link left at its default follows its control: /run/qmapd/NAME.mbim
 * for mbim, else NAME.qmi (call again once control = auto is resolved). Nothing otherwise.
 */
void config_modem_default_link(struct config_modem *m);

/*
 * The config for a discovered modem no section claims: the [device] defaults and copies of
 * the template muxes, default interface names "<name>.<N>", control-link
 * "/run/qmapd/<name>.qmi". Returns 0, or -EINVAL (invalid name or spec too long) or -ENOMEM
 * with *ret holding nothing to free. On success free its muxes with config_modem_clear().
 */
int config_modem_from_template(const struct config *c, const char *name, const char *device_spec,
			       struct config_modem *ret);

/*
 * *dst = *src with copies of src's muxes. 0, or -ENOMEM with *dst holding nothing to free.
 * Free dst's muxes with config_modem_clear().
 */
int config_modem_copy(struct config_modem *dst, const struct config_modem *src);
/* Frees the muxes of m (leaving NULL); the rest of m stays. NULL is fine. */
void config_modem_clear(struct config_modem *m);

/*
 * A new [mux.N] with every default (config_mux_init_defaults()) and present, at mux[id] of
 * an array above; NULL when it exists already or memory is short.
 */
struct config_mux *config_mux_add(struct config_mux *mux[static CONFIG_MUX_ID_MAX + 1],
				  unsigned id);
/* A copy of m, or NULL when memory is short. */
struct config_mux *config_mux_dup(const struct config_mux *m);

/*
 * Whether spec names USB devices the way `exclude =` takes them: usb:VID:PID[:IF],
 * usb-path:BUS-PORT[.PORT...][:IF] or usb-serial:SERIAL. 0, or -EINVAL with why in err.
 */
int config_usb_match_check(const char *spec, char *err, size_t errlen);
/* Whether spec is usb-serial:, which only the serial read from the device can match. */
bool config_spec_needs_serial(const char *spec);

/*
 * Whether spec (from the config: "usb:2c7c:0125[:IF]", "usb-path:1-2[:IF]",
 * "usb-serial:X", "sim:/p") matches a USB device with these identifiers. path is the
 * kernel's "BUS-PORT.PORT" name, serial "" or NULL when the device has none. VID and PID
 * compare as numbers, so case and leading zeros do not matter; an interface in the spec
 * is not compared. sim: never matches. Pure.
 */
bool config_spec_matches_usb(const char *spec, uint16_t vid, uint16_t pid, const char *path,
			     const char *serial);

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
/* "mbim", or "mbim (auto)" when control = auto resolved to it; into buf. */
const char *config_control_describe(const struct config_device *d, char *buf, size_t len);
const char *config_dbus_to_string(enum config_dbus d);
const char *config_dbus_enabled_to_string(enum config_dbus_enabled e);

/* "192.0.2.1/24" or "2001:db8::1/64"; without "/len" the full host length. 0 or -EINVAL. */
int config_parse_prefix(const char *s, struct config_prefix *ret);

#endif
