/* SPDX-License-Identifier: MIT */
/* Directories for the files qmapd creates (control socket, control link, locks). */
#ifndef QMAPD_MKDIR_H
#define QMAPD_MKDIR_H

#include <sys/types.h>

/*
 * Create every directory above path's last component that does not exist yet, with mode.
 * 0 or -errno (-ENAMETOOLONG for a component longer than PATH_MAX).
 */
int mkdir_parents(const char *path, mode_t mode);

#endif
