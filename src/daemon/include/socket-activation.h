/* SPDX-License-Identifier: MIT */
/*
 * Socket activation (sd_listen_fds(3)) spoken directly, as notify.h speaks sd_notify: the
 * LISTEN_PID / LISTEN_FDS protocol and the test sd_is_socket_unix(3) makes, without
 * libsystemd. LISTEN_FDNAMES is not read: qmapd takes one socket, the first that fits.
 */
#ifndef QMAPD_SOCKET_ACTIVATION_H
#define QMAPD_SOCKET_ACTIVATION_H

#include <stdbool.h>

/* The first fd a service manager passes (SD_LISTEN_FDS_START). */
#define SOCKET_ACTIVATION_FDS_START 3

/*
 * sd_listen_fds(0): the number of fds passed from SOCKET_ACTIVATION_FDS_START up, 0 when
 * none are meant for us (LISTEN_PID unset or another process's: a child that inherited the
 * environment), -EINVAL for values that are not a pid or a count, -E2BIG for a count past
 * the fd range. Each gets FD_CLOEXEC, so that no child of ours (qmi-proxy) holds systemd's
 * socket. The environment is left as it is (socket-activation.c says why).
 */
int socket_activation_listen_fds(void);

/* Whether fd is a listening AF_UNIX stream socket (sd_is_socket_unix(fd, SOCK_STREAM, 1)). */
bool socket_activation_is_unix_stream_listener(int fd);

#endif
