/* SPDX-License-Identifier: MIT */
/*
 * A session (session.h) driven over QMI: for each IP family of the mux's ip-type a WDS client
 * bound to the mux (bind mux data port, set IP family, start network, get current settings),
 * then the device configured from what the network assigned.
 */
#ifndef QMAPD_QMI_SESSION_H
#define QMAPD_QMI_SESSION_H

#include "session.h"

int qmi_session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		    const struct config_mux *cfg, const struct session_callbacks *cb,
		    void *userdata, struct session **ret);

/* The modem is ready (data format granted): connect, binding the mux to the data
 * interface (bInterfaceNumber, -1 unknown). */
void qmi_session_modem_ready(struct session *s, QmiDevice *device, int data_interface);

#endif
