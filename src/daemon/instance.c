/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mkdir.h"
#include "instance.h"
#include "log.h"
#include "macro.h"

#define INSTANCE_LOCKS 2

struct instance {
	int fd[INSTANCE_LOCKS];
	size_t n;
};

/* The pid the holder wrote, 0 if unreadable. */
static long lock_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

static int lock_one(const char *path, const char *what, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	char pid[32];
	int r, n;

	r = mkdir_parents(path, 0755);
	if (r < 0)
		return log_error_errno(r, "cannot create the directory of %s", path);
	/* O_NOFOLLOW: a symlink planted there must not make us truncate another file. */
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return log_error_errno(errno, "cannot open lock file %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		long holder;

		if (errno != EWOULDBLOCK)
			return log_error_errno(errno, "cannot lock %s", path);
		holder = lock_holder(fd);
		if (holder > 0)
			log_error("another qmapd (pid %ld) is running with %s; not starting",
				  holder, what);
		else
			log_error("another qmapd is running with %s (lock %s); not starting", what,
				  path);
		return -EBUSY;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		log_warning_errno(errno, "lock file %s: cannot record our pid", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* FNV-1a: a fixed-length file name for any device string. */
static uint64_t hash_string(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* File systems where nobody creates directories, sockets or symlinks (statfs(2) f_type). */
static const char *virtual_fs(long type)
{
	switch (type) {
	case 0x9fa0: /* PROC_SUPER_MAGIC */
		return "proc";
	case 0x62656572: /* SYSFS_MAGIC */
		return "sysfs";
	case 0x27e0eb:	 /* CGROUP_SUPER_MAGIC */
	case 0x63677270: /* CGROUP2_SUPER_MAGIC */
		return "cgroup";
	case 0x64626720: /* DEBUGFS_MAGIC */
		return "debugfs";
	case 0x74726163: /* TRACEFS_MAGIC */
		return "tracefs";
	default:
		return NULL;
	}
}

/* dir becomes its parent: "." for a bare name, "/" for a child of the root. */
static void cut_last_component(char *dir)
{
	char *slash = strrchr(dir, '/');

	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

/*
 * Whether path's directory exists or can be made, and an entry created in it: the nearest
 * existing ancestor is a directory, writable, on a writable file system that is not one of
 * the kernel's virtual ones. Nothing is created.
 */
static int check_parent(const char *what, const char *path)
{
	char dir[PATH_MAX];
	struct statfs sfs;
	struct statvfs svfs;
	struct stat st;
	const char *fs;

	if (strlen(path) >= sizeof(dir))
		return log_error_errno(ENAMETOOLONG, "%s %s", what, path);
	strcpy(dir, path);
	cut_last_component(dir);
	/* The nearest ancestor that exists is where the first mkdir() or bind() happens. */
	while (stat(dir, &st) < 0) {
		if (errno != ENOENT)
			return log_error_errno(errno, "%s %s: cannot create its directory", what,
					       path);
		cut_last_component(dir);
	}
	if (!S_ISDIR(st.st_mode))
		return log_error_errno(ENOTDIR, "%s %s: cannot create its directory (%s)", what,
				       path, dir);
	if (statfs(dir, &sfs) == 0 && (fs = virtual_fs((long)sfs.f_type))) {
		log_error("%s %s: cannot create its directory: %s is on a %s file system", what,
			  path, dir, fs);
		return -EPERM;
	}
	if (statvfs(dir, &svfs) == 0 && (svfs.f_flag & ST_RDONLY))
		return log_error_errno(EROFS, "%s %s: cannot create its directory (%s)", what, path,
				       dir);
	if (access(dir, W_OK | X_OK) < 0)
		return log_error_errno(errno, "%s %s: cannot create its directory (%s)", what, path,
				       dir);
	return 0;
}

int instance_check_modem_paths(const struct config_device *d)
{
	if (d->control == CONFIG_CONTROL_NONE)
		return 0;
	return check_parent("control link", d->control_link);
}

int instance_check_paths(const struct config *config)
{
	int r = check_parent("control socket", config->device.control_socket);

	for (unsigned i = 0; r == 0 && i < config->n_modems; i++)
		r = instance_check_modem_paths(&config->modem[i].device);
	return r;
}

static int instance_new(struct instance **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

int instance_lock(const struct config *config, struct instance **ret)
{
	const char *socket = config->device.control_socket;
	struct instance *inst;
	char path[PATH_MAX], what[PATH_MAX + 32];
	int r;

	r = instance_new(&inst);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s.lock", socket);
	snprintf(what, sizeof(what), "control socket %s", socket);
	r = lock_one(path, what, &inst->fd[inst->n]);
	if (r < 0)
		goto fail;
	inst->n++;
	*ret = inst;
	return 0;
fail:
	instance_unlock(inst);
	return r;
}

int instance_lock_modem(const char *control_socket, const struct config_device *d,
			struct instance **ret)
{
	struct instance *inst;
	char path[PATH_MAX], what[PATH_MAX + 32];
	const char *slash;
	int r;

	r = instance_new(&inst);
	if (r < 0)
		return r;
	if (d->control != CONFIG_CONTROL_NONE) {
		snprintf(path, sizeof(path), "%s.lock", d->control_link);
		snprintf(what, sizeof(what), "control link %s", d->control_link);
		r = lock_one(path, what, &inst->fd[inst->n]);
		if (r < 0)
			goto fail;
		inst->n++;
	}

	slash = strrchr(control_socket, '/');
	snprintf(path, sizeof(path), "%.*s/qmapd-device-%016" PRIx64 ".lock",
		 slash ? (int)(slash - control_socket) : 1, slash ? control_socket : ".",
		 hash_string(d->device));
	snprintf(what, sizeof(what), "device %s", d->device);
	r = lock_one(path, what, &inst->fd[inst->n]);
	if (r < 0)
		goto fail;
	inst->n++;

	*ret = inst;
	return 0;
fail:
	instance_unlock(inst);
	return r;
}

struct instance *instance_unlock(struct instance *inst)
{
	if (!inst)
		return NULL;
	for (size_t i = 0; i < inst->n; i++)
		close(inst->fd[i]);
	free(inst);
	return NULL;
}
