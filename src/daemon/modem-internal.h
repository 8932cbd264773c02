/* SPDX-License-Identifier: MIT */
/*
 * struct modem, for the files that make up one modem: modem.c (life cycle, muxes, reload,
 * the control plane's events), modem-json.c (its status, mux list and counters as the
 * control socket and `qmapctl stats` show them) and modem-bearer.c (a D-Bus client's
 * bearers recorded for the next qmapd). Nobody else sees it.
 */
#ifndef QMAPD_MODEM_INTERNAL_H
#define QMAPD_MODEM_INTERNAL_H

#include "modem-control.h"
#include "modem.h"
#include "session.h"
#include "wdm.h"

struct modem {
	struct ev_loop *loop;
	struct rtnl *rtnl;
	char name[CONFIG_MODEM_NAME_MAX + 1];
	struct config_device device;
	struct modem_callbacks cb;
	void *userdata;
	struct datapath *dp;
	struct wdm *wdm;
	struct modem_control *ctl; /* QMI or MBIM (modem-control.h); NULL with control = none */
	struct session *session[CONFIG_MUX_ID_MAX + 1];
	bool from_config[CONFIG_MUX_ID_MAX + 1]; /* else added at runtime (kept on reload) */
	struct config_mux *mux_cfg[CONFIG_MUX_ID_MAX + 1]; /* each mux's, owned; NULL: none */
	/* A D-Bus client's connected bearer on the mux, recorded in "<link>.bearer<N>" for the
	 * next qmapd (bearer-state.h): a restart keeps its session and device as the config's. */
	struct modem_bearer {
		bool set;
		unsigned index; /* .../Bearer/<index> */
		bool allow_roaming;
	} bearer[CONFIG_MUX_ID_MAX + 1];
	bool stopping;
	/* "<link>.devices" (mux-record.h) is written: not before the last run's devices that
	 * no mux of this one has were removed (modem_new()). */
	bool devices_recorded;
};

/* modem.c: add a mux (its session, its device); err says why not. */
int modem_add(struct modem *m, const struct config_mux *cfg, bool from_config, char *err,
	      size_t errlen);

/* modem.c: "<link>.devices" written anew from the muxes whose device is kept. */
void modem_record_devices(struct modem *m);

/* modem-bearer.c */
/* Where a modem's records for the next qmapd go (beside the control link), or NULL. */
const char *modem_state_link(const struct modem *m);
/* The recorded bearers' muxes added again (at modem_new(), before the control plane runs). */
void modem_bearers_restore(struct modem *m);
/* Mux id's record gone (its mux removed, or a stop that ends its session). */
void modem_bearer_forget(struct modem *m, unsigned id);

#endif
