/* SPDX-License-Identifier: MIT */
#include <glib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log-glib.h"
#include "log.h"

/*
 * G_LOG_LEVEL_CRITICAL is LOG_ERR, not LOG_CRIT: g_critical() is a failed precondition (a
 * g_return_if_fail() in a library), an operation that went wrong, not the failing hardware
 * LOG_CRIT is for. GLib's own journal writer says 4 (warning) for it, which `journalctl -p
 * err` would not show.
 */
int log_glib_priority(int glib_flags)
{
	if (glib_flags & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		return LOG_ERR;
	if (glib_flags & G_LOG_LEVEL_WARNING)
		return LOG_WARNING;
	if (glib_flags & G_LOG_LEVEL_MESSAGE)
		return LOG_NOTICE;
	if (glib_flags & G_LOG_LEVEL_INFO)
		return LOG_INFO;
	if (glib_flags & G_LOG_LEVEL_DEBUG)
		return LOG_DEBUG;
	return LOG_NOTICE; /* a level of the library's own, as GLib's journal writer does */
}

/*
 * -v decides whether GLib's info and debug lines show: GLib hides both unless asked, and a
 * library's g_info() is its chatter, not qmapd's news (an info line keeps its priority 6).
 * G_MESSAGES_DEBUG, when set, narrows them to the domains it names ("all": every one), as
 * GLib would; it does not turn them on by itself.
 */
static bool domain_wanted(GLogLevelFlags flags, const char *domain)
{
	const char *e = getenv("G_MESSAGES_DEBUG");

	return !e || !*e || !g_log_writer_default_would_drop(flags, domain);
}

static GLogWriterOutput writer(GLogLevelFlags flags, const GLogField *fields, gsize n_fields,
			       gpointer user_data)
{
	const char *domain = NULL, *msg = "";
	gssize len = 0;
	int level = log_glib_priority((int)flags);

	(void)user_data;
	if ((flags & (G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG) ? LOG_DEBUG : level) >
	    log_get_max_level())
		return G_LOG_WRITER_HANDLED;
	for (gsize i = 0; i < n_fields; i++) {
		if (!fields[i].value)
			continue;
		if (strcmp(fields[i].key, "GLIB_DOMAIN") == 0) {
			domain = fields[i].value;
		} else if (strcmp(fields[i].key, "MESSAGE") == 0) {
			msg = fields[i].value;
			len = fields[i].length;
		}
	}
	if (!domain_wanted(flags, domain))
		return G_LOG_WRITER_HANDLED;
	if (len < 0)
		len = (gssize)strlen(msg);

	/*
	 * One log line per line of the message (libqmi's traces have many): a journal line
	 * without its own "<N>" would get the stream's default priority.
	 */
	for (;;) {
		const char *nl = memchr(msg, '\n', (size_t)len);
		int n = (int)(nl ? nl - msg : len);

		log_internal(level, 0, "%s%s%.*s", domain ?: "", domain ? ": " : "", n, msg);
		if (!nl || nl + 1 == msg + len)
			break;
		len -= n + 1;
		msg = nl + 1;
	}
	return G_LOG_WRITER_HANDLED;
}

void log_glib_init(void)
{
	static bool done; /* GLib takes one writer per process */

	if (done)
		return;
	done = true;
	g_log_set_writer_func(writer, NULL, NULL);
}
