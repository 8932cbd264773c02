/* SPDX-License-Identifier: MIT */
/* Setting up and tearing down one mux: its network device, addresses, routes. */
#ifndef QMAPD_MUX_H
#define QMAPD_MUX_H

#include "datapath.h"

/* Create the mux's device and apply the static configuration. Returns 0 or -errno. */
int mux_new(struct datapath *dp, const struct config_mux *cfg, bool persist, struct mux **ret);
/* Close the device (removed by the kernel unless persistent). NULL-safe. */
struct mux *mux_free(struct mux *m);

#endif
