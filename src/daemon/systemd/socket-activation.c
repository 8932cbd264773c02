/* SPDX-License-Identifier: MIT */
/*
 * sd_listen_fds(3) without libsystemd, for the reasons notify.c gives: LISTEN_PID and
 * LISTEN_FDS are a stable, documented interface of systemd, a few dozen lines to speak, and
 * qmapd then runs the same code with and without systemd.
 *
 * LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES stay in the environment, as sd_listen_fds(0)
 * leaves them: the control server leaves systemd's socket open when it is freed, so a server
 * created again in this process must find it again; a child cannot take them for its own
 * (LISTEN_PID); and changing the environment is unsafe in a process whose libraries (GLib)
 * may run threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "socket-activation.h"

/* A decimal number and nothing else: no sign, no blanks, at most INT_MAX. */
static int parse_int(const char *s, int *ret)
{
	long v;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE || v > INT_MAX)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

int socket_activation_listen_fds(void)
{
	const char *e = getenv("LISTEN_PID");
	int pid, n, r;

	if (!e)
		return 0;
	r = parse_int(e, &pid);
	if (r < 0)
		return r;
	if (pid == 0)
		return -EINVAL;
	if (pid != getpid())
		return 0;
	e = getenv("LISTEN_FDS");
	if (!e)
		return 0;
	r = parse_int(e, &n);
	if (r < 0)
		return r;
	if (n > INT_MAX - SOCKET_ACTIVATION_FDS_START)
		return -E2BIG;
	for (int fd = SOCKET_ACTIVATION_FDS_START; fd < SOCKET_ACTIVATION_FDS_START + n; fd++) {
		int flags = fcntl(fd, F_GETFD);

		if (flags < 0)
			return negative_errno();
		if (!(flags & FD_CLOEXEC) && fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
			return negative_errno();
	}
	return n;
}

bool socket_activation_is_unix_stream_listener(int fd)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(int), sa_len = sizeof(sa);
	int type = 0, domain = 0, accepting = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
		return false;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != AF_UNIX)
		return false;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0 || !accepting)
		return false;
	if (getsockname(fd, (struct sockaddr *)&sa, &sa_len) < 0 ||
	    sa_len < sizeof(sa.sun_family) || sa.sun_family != AF_UNIX)
		return false;
	return true;
}
