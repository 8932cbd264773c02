/* SPDX-License-Identifier: MIT */
/*
 * The service manager's side channel (sd_notify): readiness, status text, reload and stop
 * announcements, and the watchdog keep-alive. Without NOTIFY_SOCKET (not started by systemd,
 * or a test) every call is a cheap no-op, so main calls them unconditionally.
 *
 * Order in qmapd's main: notify_init() once the loop exists; notify_ready() once the config
 * is loaded and the control socket listens (not when the modem connects: a modem may take
 * minutes or never appear, and nothing ordered after qmapd needs it); notify_status() on
 * every session state change; notify_reloading() ... notify_ready() around a SIGHUP reload;
 * notify_stopping() on SIGTERM; notify_exit() before the loop is destroyed.
 */
#ifndef QMAPD_NOTIFY_H
#define QMAPD_NOTIFY_H

#include <ev.h>

#include "macro.h"

/*
 * If the service manager asks for a watchdog (WATCHDOG_USEC, and WATCHDOG_PID unset or
 * ours), start a timer in loop that sends WATCHDOG=1 every half period. A timer in the main
 * loop rather than a thread: a loop that hangs must stop the keep-alives. Returns 0, also
 * when not run by systemd; -EINVAL without a loop; -EALREADY if called twice.
 */
int notify_init(struct ev_loop *loop);

/* READY=1: initial start-up finished, or a reload finished (successfully or not). */
void notify_ready(void);

/* STATUS=: one line for `systemctl status`; newlines are replaced by blanks. */
void notify_status(const char *fmt, ...) _printf_(1, 2);

/* RELOADING=1 with MONOTONIC_USEC= (systemd >= 253 matches it to the reload request). */
void notify_reloading(void);

/* STOPPING=1: shutdown has begun, so systemd does not mistake it for a crash or a hang. */
void notify_stopping(void);

/* Stop the watchdog timer. Safe without notify_init() and when called twice. */
void notify_exit(struct ev_loop *loop);

#endif
