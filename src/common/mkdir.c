/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "mkdir.h"

int mkdir_parents(const char *path, mode_t mode)
{
	char dir[PATH_MAX];
	const char *p = path;

	/* Every proper prefix ending before a '/', then stop at the last component. */
	while ((p = strchr(p + 1, '/'))) {
		size_t n = (size_t)(p - path);

		if (n >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, n);
		dir[n] = '\0';
		if (mkdir(dir, mode) < 0 && errno != EEXIST)
			return negative_errno();
	}
	return 0;
}
