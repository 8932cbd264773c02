/* SPDX-License-Identifier: MIT */
/*
 * Who may change the daemon: the one rule for every way in (the control socket,
 * ModemManager's D-Bus API). Root, or a member of qmapd.conf's admin-group by its primary or
 * a supplementary group. Reading is for everyone and needs no check.
 *
 * admin_may_change() is the rule itself, pure, on credentials the caller already has (from
 * the kernel for the control socket, from the bus for D-Bus); the two lookups below are the
 * group database around it.
 */
#ifndef QMAPD_ADMIN_AUTH_H
#define QMAPD_ADMIN_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* "No group": no admin group configured or found, or a primary group nobody told us. */
#define ADMIN_NO_GID ((gid_t)-1)

/*
 * uid 0, or admin_gid (ADMIN_NO_GID: root only) is gid (the primary group, or ADMIN_NO_GID
 * when only the list is known) or one of groups[0..n_groups).
 */
bool admin_may_change(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, gid_t admin_gid);

/* The gid of group name by the group database (NSS): 0, or -ENOENT (no such group now: it
 * may be created later), or another -errno. */
int admin_group_lookup(const char *name, gid_t *ret);

/* Whether the group database puts uid in gid (getgrouplist()): what the user's login would
 * get, for when the kernel or the bus cannot tell the groups a process has. */
bool admin_user_in_group_db(uid_t uid, gid_t gid);

#endif
