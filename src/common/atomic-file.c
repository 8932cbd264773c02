/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "atomic-file.h"
#include "macro.h"

int atomic_file_write(const char *path, void (*print)(FILE *f, const void *userdata),
		      const void *userdata)
{
	_cleanup_free_ char *tmp = NULL;

	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		return -ENOMEM;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return negative_errno();
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int r = negative_errno();
		close(fd);
		unlink(tmp);
		return r;
	}

	print(f, userdata);
	bool failed = fflush(f) != 0 || ferror(f);
	int r = failed ? negative_errno() : 0;
	if (fclose(f) != 0 && !failed)
		r = negative_errno();
	if (r == 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0)
		unlink(tmp);
	return r;
}
