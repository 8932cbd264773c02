/* SPDX-License-Identifier: MIT */
/*
 * One modem: its data path (transport, muxes), its control bridge (wdm) and control plane
 * (QMI or MBIM behind modem-control.h's ops table, seen in the neutral model of
 * modem-model.h), and the sessions of its muxes. The manager (manager.h) owns the modems and routes requests;
 * a modem knows nothing of the others, so one that fails touches no other's state.
 *
 * A modem that goes away stays: its devices lose carrier, its name and muxes are kept, and
 * its transport claims the device again when it comes back, the sessions with it.
 *
 * JSON results (jansson, keys in kebab-case as mmcli spells them; new references):
 *   status:   { "name": "modem0",
 *               "modem": { "state": "absent|initializing|ready|failed", "transport": "sim:/..",
 *                          "control-path": "/run/qmapd/qmi0", "manufacturer", "model",
 *                          "revision", "imei" (strings, may be absent),
 *                          "data-format": { "protocol": "qmapv5|qmap", "dl-max-size": N,
 *                                           "dl-max-datagrams": N, "ul-max-size": N,
 *                                           "ul-max-datagrams": N } (absent until granted),
 *                          "registration": "home|roaming|searching|denied|unknown|...",
 *                          "access-technology": "lte|...", "signal": { "rssi": dBm, ... } },
 *               "muxes": [ mux... ] }
 *   mux:      { "modem": "modem0", "id": N, "interface": "qmap1", "state": "disabled|
 *               connecting|connected|disconnecting|disconnected|failed", "apn", "ip-type",
 *               "user", "password": "(hidden)" (only when set), "allowed-auth", "headroom":
 *               device status ("tap+xdp" | "tun (...)"), "mtu": N,
 *               "ipv4": { "address": "a/len", "gateway", "dns": [..], "mtu": N } (when up),
 *               "ipv6": { same },
 *               "last-error": "call end reason text" (when one happened),
 *               "retry-in": seconds (while waiting to reconnect),
 *               "counters": { "rx-packets", "rx-bytes", "tx-packets", "tx-bytes",
 *                             "rx-dropped", "tx-dropped" } }
 *   mux list: modem_mux_list() appends { "modem", "id", "interface", "state", "apn" } per mux
 *   stats:    { "name": "modem0", "device": { kebab-case counters of struct
 *               datapath_stats/transport_stats }, "malformed": { "<qmap_error_name>": N },
 *               "muxes": [ { "modem", "id", "interface", kebab-case counters of struct
 *               mux_stats } ], "control-link": { QMI bridge counters } (control = qmi) }
 *             (device and mux counters: the tables in counters.c, shared with the text stats)
 */
#ifndef QMAPD_MODEM_H
#define QMAPD_MODEM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "modem-control.h"

struct modem;
struct rtnl;
struct ev_loop;
struct session;
struct mux_stats;

/* What the manager hears from a modem: something changed that STATUS= shows. */
struct modem_callbacks {
	void (*on_change)(void *userdata, struct modem *m);
};

/*
 * Build the data plane, the wdm bridge and the control plane (control = qmi or mbim) for cfg (copied;
 * cfg->name is the modem's name) and create its muxes. Returns 0 or -errno, logged.
 */
int modem_new(struct ev_loop *loop, struct rtnl *rtnl, const struct config_modem *cfg,
	      const struct modem_callbacks *cb, void *userdata, struct modem **ret);
int modem_start(struct modem *m);
/* Begin a clean stop: sessions stop their networks and release their clients. */
void modem_stop(struct modem *m);
/* True once everything modem_stop() began has finished (for every modem: sessions are
 * counted process-wide). */
bool modem_stopped(const struct modem *m);
/* After modem_stop() has finished: close the control plane (manager_stop_control()). */
void modem_stop_control(struct modem *m);
/* True from modem_stop() on: qmapd is exiting, whatever the modem's state says. */
bool modem_stopping(const struct modem *m);
/* Its control channel is being reopened (its proxy went away), or a session kept over that
 * is not taken over yet: the sessions cannot be stopped in the modem until it is done. */
bool modem_taking_over(const struct modem *m);
struct modem *modem_free(struct modem *m);

const char *modem_name(const struct modem *m);
/* The device spec it was created for ("usb:...", "usb-path:...", "sim:..."). */
const char *modem_device(const struct modem *m);
/* The settings it runs with ([device] defaults and its own keys; muxes not included). */
const struct config_device *modem_config_device(const struct modem *m);
/* "absent", "initializing", "ready", "failed", "reopening": as status shows it. */
const char *modem_state(const struct modem *m);
/* How many muxes it has and how many of them are connected. */
void modem_count_muxes(const struct modem *m, unsigned *ret_total, unsigned *ret_connected);

/* Counters in the stable text format of datapath_print_stats(), each line after prefix. */
void modem_print_stats(const struct modem *m, FILE *f, const char *prefix);

json_t *modem_status(struct modem *m);
/* Append this modem's muxes to the array muxes. 0 or -ENOMEM. */
int modem_mux_list(struct modem *m, json_t *muxes);
json_t *modem_stats(struct modem *m);

/*
 * Add a mux at runtime and start its session (autoconnect). Returns 0 once the device exists
 * and the session is starting; -EEXIST (mux id or interface in use), -EINVAL, or -errno, with
 * a message for the user in err. from_config: a mux of the config started again (Enable(true)
 * over D-Bus), which a reload treats as the file's; else it is kept on reload.
 */
int modem_mux_add(struct modem *m, const struct config_mux *cfg, bool from_config, char *err,
		  size_t errlen);
/* Stop the session, release its clients and remove the device. -ENOENT if no such mux. */
int modem_mux_del(struct modem *m, unsigned id, char *err, size_t errlen);
/*
 * The modem as its control plane knows it, QMI or MBIM alike, in the neutral model (for the
 * D-Bus side); false with control = none: no control plane to speak of.
 */
bool modem_view(const struct modem *m, struct modem_view *ret);
/* A SIM code operation (SendPin, SendPuk, EnablePin, ChangePin; modem_control_ops.pin);
 * done() is called exactly once, possibly at once. */
void modem_pin(struct modem *m, enum modem_pin_op op, const char *code, const char *new_code,
	       modem_pin_done done, void *userdata);
/* Whether the control plane takes SIM codes at all. */
bool modem_can_pin(const struct modem *m);
/* Radio on or low power through the control plane (modem_control_ops.set_power). */
void modem_set_power(struct modem *m, bool on, modem_power_done done, void *userdata);
bool modem_can_set_power(const struct modem *m);
/* Messaging through the control plane (modem_control_ops.sms_*): -EOPNOTSUPP without. */
void modem_sms_list(struct modem *m, modem_sms_list_done done, void *userdata);
void modem_sms_send(struct modem *m, const uint8_t *pdu, size_t len, modem_sms_done done,
		    void *userdata);
void modem_sms_delete(struct modem *m, enum modem_sms_storage storage, uint32_t index,
		      modem_sms_done done, void *userdata);
/* Modes, bands, scan, registration and signal through the control plane (modem_control_ops):
 * -EOPNOTSUPP to done() when it cannot; modem_can_* tell beforehand. */
void modem_set_modes(struct modem *m, enum modem_mode allowed, enum modem_mode preferred,
		     modem_done done, void *userdata);
void modem_set_bands(struct modem *m, const uint64_t lte_bands[MODEM_LTE_BAND_WORDS],
		     modem_done done, void *userdata);
void modem_scan(struct modem *m, modem_scan_done done, void *userdata);
void modem_register_network(struct modem *m, const char *operator_id, modem_done done,
			    void *userdata);
void modem_refresh_signal(struct modem *m);
void modem_network_time(struct modem *m, modem_time_done done, void *userdata);
bool modem_can_set_modes(const struct modem *m);
bool modem_can_set_bands(const struct modem *m);
bool modem_can_scan(const struct modem *m);
bool modem_can_register_network(const struct modem *m);
bool modem_can_refresh_signal(const struct modem *m);
/*
 * Read access for the D-Bus side (mm-dbus), per mux id: its settings, device name, session
 * (NULL with control = none) and counters; NULL when the modem has no such mux.
 */
const struct config_mux *modem_mux_config(const struct modem *m, unsigned id);
/* Whether mux id is the config's (false: added at runtime, or no such mux). */
bool modem_mux_from_config(const struct modem *m, unsigned id);
/*
 * A D-Bus client connected bearer number index (.../Bearer/<index>) on mux id, which it added
 * at run time: record it (bearer-state.h), so that a restart or a crash brings the mux back
 * with its session and the bearer with its path, and keep the device across a crash.
 */
int modem_mux_record_bearer(struct modem *m, unsigned id, unsigned index, bool allow_roaming);
/*
 * Whether this qmapd offers ModemManager's D-Bus API; called before any modem is created.
 * Without it the bearers the last run recorded are not restored: their sessions end.
 */
void modem_bearers_set_dbus(bool on);
/* Mux id carries a recorded D-Bus bearer (restored at start, or recorded since): its index
 * and allow-roaming. */
bool modem_mux_bearer(const struct modem *m, unsigned id, unsigned *ret_index,
		      bool *ret_allow_roaming);
const char *modem_mux_interface(const struct modem *m, unsigned id);
const struct session *modem_mux_session(const struct modem *m, unsigned id);
const struct mux_stats *modem_mux_stats(const struct modem *m, unsigned id);
/* "connected", "connecting", ...: as status shows it; NULL when there is no such mux. */
const char *modem_mux_state(const struct modem *m, unsigned id);

/* Whether the modem has a mux whose device is called ifname. */
bool modem_has_interface(const struct modem *m, const char *ifname);

/*
 * Apply the muxes of next (the same modem's new config) to the running ones: those from the
 * config that are gone are removed, changed ones re-created, new ones added; muxes added at
 * runtime stay. Checked as a whole first, then all or nothing. Changes outside the muxes are
 * the manager's (it re-creates the modem when its device changes). *ret_added, *ret_removed,
 * *ret_changed: counts (may be NULL). 0, or -errno with the reason in err.
 */
int modem_reload(struct modem *m, const struct config_modem *next, unsigned *ret_added,
		 unsigned *ret_removed, unsigned *ret_changed, char *err, size_t errlen);

/*
 * Whether cfg's interface may become a mux device: free, or a device qmapd created
 * (netdev_probe_name()). Otherwise -errno and the reason in err, as start and reload give it.
 */
int modem_check_interface(struct rtnl *rtnl, const struct config_mux *cfg, char *err,
			  size_t errlen);

#endif
