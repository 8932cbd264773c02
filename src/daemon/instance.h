/* SPDX-License-Identifier: MIT */
/*
 * One qmapd per control socket, control link and modem. A second qmapd started with the same
 * configuration must not touch the first one's files or devices (it would rename the
 * control-link symlink over the live one and unlink it on its way out), so before anything
 * shared is created each of them is claimed with a lock file (flock(2), released by the
 * kernel however the process ends): `<control-socket>.lock` for the process's life, and per
 * modem while it exists `<control-link>.lock` with control = qmi and
 * `qmapd-device-<hash>.lock` in the control socket's directory for its `device` string. The
 * files stay; they hold the owner's pid.
 */
#ifndef QMAPD_INSTANCE_H
#define QMAPD_INSTANCE_H

#include "config.h"

struct instance;

/*
 * Whether the control socket's (and with control = qmi each configured modem's control
 * link's) directory exists or can be created, and can hold them; logs why not. Creates
 * nothing (qmapd -t uses it). instance_check_modem_paths(): the same for one modem.
 */
int instance_check_paths(const struct config *config);
int instance_check_modem_paths(const struct config_device *d);
/*
 * Take the control socket's lock (at start). -EBUSY: another qmapd holds it; the single
 * line that says which and its pid is logged here. Other -errno: a lock file cannot be made
 * (logged too).
 */
int instance_lock(const struct config *config, struct instance **ret);
/*
 * Take one modem's locks, its control link's and its device's (the device lock lives in
 * control_socket's directory), when the modem is created; released when it is freed.
 * Errors as instance_lock().
 */
int instance_lock_modem(const char *control_socket, const struct config_device *d,
			struct instance **ret);
/* Release (close) the locks. NULL-safe. */
struct instance *instance_unlock(struct instance *inst);

#endif
