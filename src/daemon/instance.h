/* SPDX-License-Identifier: MIT */
/*
 * One qmapd per control socket, control link and modem. A second qmapd started with the same
 * configuration must not touch the first one's files or devices (it would rename the
 * control-link symlink over the live one and unlink it on its way out), so before anything
 * shared is created each of them is claimed with a lock file (flock(2), held for the
 * process's life, released by the kernel however it ends): `<control-socket>.lock`,
 * `<control-link>.lock` with control = qmi, and `qmapd-device-<hash>.lock` in the control
 * socket's directory for the `device` string. The files stay; they hold the owner's pid.
 */
#ifndef QMAPD_INSTANCE_H
#define QMAPD_INSTANCE_H

#include "config.h"

struct instance;

/*
 * Whether the control socket's (and with control = qmi the control link's) directory exists
 * or can be created, and can hold them; logs why not. Creates nothing (qmapd -t uses it).
 */
int instance_check_paths(const struct config *config);
/*
 * Take every lock. -EBUSY: another qmapd holds one; the single line that says which and its
 * pid is logged here. Other -errno: a lock file cannot be made (logged too).
 */
int instance_lock(const struct config *config, struct instance **ret);
/* Release (close) the locks. NULL-safe. */
struct instance *instance_unlock(struct instance *inst);

#endif
