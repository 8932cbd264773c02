/* SPDX-License-Identifier: MIT */
/*
 * One libev loop runs everything. GLib's main context (libqmi, libmbim) is driven from it:
 * an ev_prepare watcher asks GLib which fds and timeout it wants, an ev_check watcher hands
 * back what became ready and dispatches. Watchers are set again only after an iteration in
 * which GLib was active (loop.c says why), so an idle GLib costs no syscalls per loop
 * iteration.
 */
#ifndef QMAPD_LOOP_H
#define QMAPD_LOOP_H

#include <ev.h>
#include <glib.h>

struct loop_glib;

/* Attach the default GLib main context to the libev loop. Returns 0 or -errno. */
int loop_glib_attach(struct ev_loop *loop, struct loop_glib **ret);
/* NULL-safe. */
struct loop_glib *loop_glib_detach(struct loop_glib *lg);

#endif
