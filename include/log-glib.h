/* SPDX-License-Identifier: MIT */
/*
 * GLib's messages (libqmi-glib, libmbim-glib, GLib and GIO, g_warning() anywhere) as log.c's
 * lines: the "<N>" priority prefix in the journal, the time elsewhere, qmapd's level filter
 * (-v), "DOMAIN: " in front. GLib's fatal masks still abort (G_DEBUG=fatal-warnings).
 */
#ifndef QMAPD_LOG_GLIB_H
#define QMAPD_LOG_GLIB_H

/* Install the writer (g_log_set_writer_func()); early in main, before any GLib message. */
void log_glib_init(void);

/* The syslog level of a GLogLevelFlags: CRITICAL is LOG_ERR, MESSAGE LOG_NOTICE. */
int log_glib_priority(int glib_flags);

#endif
