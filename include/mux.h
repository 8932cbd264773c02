/* SPDX-License-Identifier: MIT */
/* Setting up and tearing down one mux: its network device, addresses, routes. */
#ifndef QMAPD_MUX_H
#define QMAPD_MUX_H

#include "datapath.h"

/* Create the mux's device and apply the static configuration. Returns 0 or -errno. */
int mux_new(struct datapath *dp, const struct config_mux *cfg, bool persist, struct mux **ret);
/* Close the device (removed by the kernel unless persistent). NULL-safe. */
struct mux *mux_free(struct mux *m);

/*
 * Follow the device's generic-receive-offload feature: `ethtool -K DEV gro off` switches
 * qmapd's downlink merging off for this mux (each packet written alone), `gro on` back on.
 * Called from the datapath's periodic tick; a no-op for devices without GRO.
 */
void mux_sync_gro(struct mux *m);
/* "on", "off" (switched off with ethtool) or "none" (a device without virtio-net header). */
const char *mux_gro_state(const struct mux *m);

#endif
