/* SPDX-License-Identifier: MIT */
/*
 * The daemon's state as the control socket sees it: the modem, its data format, and the
 * muxes with their sessions. Requests from qmapctl arrive here through control-server.c.
 *
 * JSON results (jansson, keys in kebab-case as mmcli spells them; new references):
 *   status:   { "modem": { "state": "absent|initializing|ready|failed", "transport": "sim:/..",
 *                          "control-path": "/run/qmapd/qmi0", "manufacturer", "model",
 *                          "revision", "imei" (strings, may be absent),
 *                          "data-format": { "protocol": "qmapv5|qmap", "dl-max-size": N,
 *                                           "dl-max-datagrams": N, "ul-max-size": N,
 *                                           "ul-max-datagrams": N } (absent until granted),
 *                          "registration": "home|roaming|searching|denied|unknown|...",
 *                          "access-technology": "lte|...", "signal": { "rssi": dBm, ... } },
 *               "muxes": [ mux... ] }
 *   mux:      { "id": N, "interface": "qmap1", "state": "disabled|connecting|connected|
 *               disconnecting|disconnected|failed", "apn", "ip-type", "user",
 *               "password": "(hidden)" (only when set), "allowed-auth", "headroom": device
 *               status ("tap+xdp" | "tun (...)"), "mtu": N,
 *               "ipv4": { "address": "a/len", "gateway", "dns": [..], "mtu": N } (when up),
 *               "ipv6": { same },
 *               "last-error": "call end reason text" (when one happened),
 *               "retry-in": seconds (while waiting to reconnect),
 *               "counters": { "rx-packets", "rx-bytes", "tx-packets", "tx-bytes",
 *                             "rx-dropped", "tx-dropped" } }
 *   mux-list: { "muxes": [ { "id", "interface", "state", "apn" } ] }
 *   stats:    { "device": { kebab-case counters of struct datapath_stats/transport_stats },
 *               "malformed": { "<qmap_error_name>": N }, "muxes": [ { "id", "interface",
 *               kebab-case counters of struct mux_stats } ] }
 *             (device and mux counters: the tables in counters.c, shared with the text stats)
 */
#ifndef QMAPD_MANAGER_H
#define QMAPD_MANAGER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"

struct manager;
struct rtnl;
struct ev_loop;

/*
 * Build the data plane, the wdm bridge and the QMI side (control = qmi) for `config`, which
 * the manager takes over (freed by it). Muxes of the config are created. Returns 0 or -errno.
 */
int manager_new(struct ev_loop *loop, struct rtnl *rtnl, struct config *config,
		struct manager **ret);
int manager_start(struct manager *m);
/* Begin a clean stop: sessions stop their networks and release their clients. */
void manager_stop(struct manager *m);
/* True once everything manager_stop() began has finished. */
bool manager_stopped(const struct manager *m);
struct manager *manager_free(struct manager *m);

/* Counters in the stable text format of datapath_print_stats(). */
void manager_print_stats(const struct manager *m, FILE *f, const char *prefix);

json_t *manager_status(struct manager *m);
json_t *manager_mux_list(struct manager *m);
json_t *manager_stats(struct manager *m);

/*
 * Add a mux at runtime and start its session (autoconnect). Returns 0 once the device exists
 * and the session is starting; -EEXIST (mux id or interface in use), -EINVAL, or -errno, with
 * a message for the user in err.
 */
int manager_mux_add(struct manager *m, const struct config_mux *cfg, char *err, size_t errlen);
/* Stop the session, release its clients and remove the device. -ENOENT if no such mux. */
int manager_mux_del(struct manager *m, unsigned id, char *err, size_t errlen);
/* Re-read the config file and apply the difference; on error keep the old config. */
int manager_reload(struct manager *m, char *err, size_t errlen);
/*
 * Whether cfg's interface may become a mux device: free, or a device qmapd created
 * (netdev_probe_name()). Otherwise -errno and the reason in err, as start and reload give it.
 */
int manager_check_interface(struct rtnl *rtnl, const struct config_mux *cfg, char *err,
			    size_t errlen);

#endif
