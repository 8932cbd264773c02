/* SPDX-License-Identifier: MIT */
/*
 * struct modem, for the files that make up one modem: modem.c (life cycle, muxes, reload,
 * the control plane's events) and modem-json.c (its status, mux list and counters as the
 * control socket and `qmapctl stats` show them). Nobody else sees it.
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
	bool stopping;
};

#endif
