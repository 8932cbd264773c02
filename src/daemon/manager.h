/* SPDX-License-Identifier: MIT */
/*
 * The daemon's modems (modem.h), as the control socket and the signals see them: the list of
 * modems, their creation from the config at start (and from discovery when a modem is
 * plugged in), the name registry, the routing of requests by modem name, reload across
 * modems, the STATUS= line and the counters of all of them.
 *
 * Routing: a request may name a modem. Without a name, status, mux-list and stats cover
 * every modem; mux-add and mux-del go to the only modem, and fail with -ENOTUNIQ when there
 * are several. A name no modem has fails with -ENODEV (also when there is no modem at all).
 * No other error of these calls is -ENODEV or -ENOTUNIQ, so the control server can tell
 * them apart.
 *
 * JSON results (new references; the objects of one modem as modem.h describes them):
 *   status:   { "modems": [ modem status... ] }
 *   mux-list: { "muxes": [ { "modem", "id", "interface", "state", "apn" }... ] }
 *   stats:    { "modems": [ modem stats... ] }
 *   mux-add:  { "modem": NAME, "id": N, "interface": IFNAME }
 *   mux-del:  { "modem": NAME, "id": N }
 *   reload:   { "added": N, "removed": N, "changed": N } (muxes of the modems that stay),
 *             { "modems-added": N, "modems-removed": N, "modems-recreated": N }
 */
#ifndef QMAPD_MANAGER_H
#define QMAPD_MANAGER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"

struct manager;
struct modem;
struct rtnl;
struct ev_loop;

/*
 * Create the modems of config, which the manager takes over (freed by it), each with its
 * locks (instance.h) and muxes. Returns 0 or -errno (logged).
 */
int manager_new(struct ev_loop *loop, struct rtnl *rtnl, struct config *config,
		struct manager **ret);
/* Start every modem, and discovery when the config asks for it. */
int manager_start(struct manager *m);
/* A modem's control channel is being reopened and its sessions taken over (modem.h): a
 * clean stop waits for that, or the sessions could not be stopped in the modem. */
bool manager_taking_over(const struct manager *m);
/* Begin a clean stop: sessions stop their networks and release their clients. */
void manager_stop(struct manager *m);
/* True once everything manager_stop() began has finished. */
bool manager_stopped(const struct manager *m);
/* Then, once the sessions are down: close the control planes, releasing their own client ids
 * (counted like the sessions' stops, so manager_stopped() waits for them too). */
void manager_stop_control(struct manager *m);
struct manager *manager_free(struct manager *m);

/*
 * Who else follows the modems (the D-Bus side, mm-dbus.h): told after a modem was created,
 * before one is freed, and whenever one changes (what changes STATUS=). One observer.
 */
struct manager_observer {
	void (*on_added)(void *userdata, struct modem *modem);
	void (*on_removed)(void *userdata, struct modem *modem);
	void (*on_change)(void *userdata, struct modem *modem);
};
/* ob NULL: none any more. */
void manager_set_observer(struct manager *m, const struct manager_observer *ob, void *userdata);
/* The modems in creation order: prev NULL gives the first, NULL after the last. */
struct modem *manager_next_modem(const struct manager *m, const struct modem *prev);

/* Every modem's counters in the stable text format, each line after "<prefix><name> ". */
void manager_print_stats(const struct manager *m, FILE *f, const char *prefix);

/* The results above into *ret; 0 or -errno with a message in err. modem may be NULL. */
int manager_status(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen);
int manager_mux_list(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen);
int manager_stats(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen);

/*
 * Add a mux at runtime to a modem and start its session (autoconnect). A mux without an
 * explicit interface gets the modem's default name ("<modem>.<N>", "qmap<N>" in a
 * single-modem config of the old form). -EEXIST (id or interface in use, also by another
 * modem), -EINVAL, or -errno, with a message in err.
 */
int manager_mux_add(struct manager *m, const char *modem, const struct config_mux *cfg,
		    json_t **ret, char *err, size_t errlen);
/* The same for a mux that was stopped (Enable(false) over D-Bus) and starts again: one of the
 * config (from_config) stays the config's for reload. */
int manager_mux_restore(struct manager *m, const char *modem, const struct config_mux *cfg,
			bool from_config, json_t **ret, char *err, size_t errlen);
/* -ENOENT if the modem has no such mux. */
int manager_mux_del(struct manager *m, const char *modem, unsigned id, json_t **ret, char *err,
		    size_t errlen);
/*
 * Re-read the config file and apply the difference: new [modem.NAME] sections are created,
 * removed ones freed, a modem whose device changed is re-created, the muxes of the others are
 * reloaded (modem_reload()). On a parse error nothing changes. modem, when given, must name
 * a modem; the whole file is reloaded anyway.
 */
int manager_reload(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen);

#endif
