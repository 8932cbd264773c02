/* SPDX-License-Identifier: MIT */
/* Files that readers (tests, scripts) poll: written beside and renamed, never seen half done. */
#ifndef QMAPD_ATOMIC_FILE_H
#define QMAPD_ATOMIC_FILE_H

#include <stdio.h>

/*
 * print() writes the content into "<path>.tmp", which then replaces path. On failure the
 * temporary file is removed and path is left as it was. Returns 0 or -errno; never logs.
 */
int atomic_file_write(const char *path, void (*print)(FILE *f, const void *userdata),
		      const void *userdata);

#endif
