/* SPDX-License-Identifier: MIT */
/* Who may change the daemon (admin-auth.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include "admin-auth.h"
#include "macro.h"

#define NSS_BUFFER_MAX (1024 * 1024)

bool admin_may_change(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, gid_t admin_gid)
{
	if (uid == 0)
		return true;
	if (admin_gid == ADMIN_NO_GID)
		return false;
	if (gid == admin_gid)
		return true;
	for (size_t i = 0; i < n_groups; i++)
		if (groups[i] == admin_gid)
			return true;
	return false;
}

int admin_group_lookup(const char *name, gid_t *ret)
{
	size_t size = 1024;

	for (;;) {
		_cleanup_free_ char *buf = malloc(size);
		struct group gr, *found = NULL;
		int r;

		if (!buf)
			return -ENOMEM;
		r = getgrnam_r(name, &gr, buf, size, &found);
		if (r == ERANGE && size < NSS_BUFFER_MAX) {
			size *= 2;
			continue;
		}
		if (r != 0)
			return -r;
		if (!found)
			return -ENOENT;
		*ret = gr.gr_gid;
		return 0;
	}
}

bool admin_user_in_group_db(uid_t uid, gid_t gid)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ gid_t *groups = NULL;
	struct passwd pw, *found = NULL;
	size_t size = 1024;
	int n = 64, r;

	for (;;) {
		free(buf);
		buf = malloc(size);
		if (!buf)
			return false;
		r = getpwuid_r(uid, &pw, buf, size, &found);
		if (r != ERANGE || size >= NSS_BUFFER_MAX)
			break;
		size *= 2;
	}
	if (r != 0 || !found)
		return false;

	for (int tries = 0; tries < 4; tries++) {
		int want = n;

		free(groups);
		groups = calloc((size_t)n, sizeof(gid_t));
		if (!groups)
			return false;
		if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &want) >= 0) {
			for (int i = 0; i < want; i++)
				if (groups[i] == gid)
					return true;
			return false;
		}
		n = want > n ? want : n * 2;
	}
	return false;
}
