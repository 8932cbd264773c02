/* SPDX-License-Identifier: MIT */
/*
 * Is the SIGTERM we got the first half of a restart? systemd sends SIGTERM for a stop and a
 * restart alike; what differs is the unit's job, which stays of type "restart" until the
 * stop half is done (then systemd turns it into a start). So qmapd asks systemd itself, over
 * its private socket: no dbus-daemon is needed, which matters on the way down at shutdown,
 * when the bus may already be gone (and at shutdown the job is a stop anyway). Any failure
 * means "stop": ending the sessions is always safe, keeping them only when asked for.
 * Synchronous, with a short timeout: it runs once, on the way out, never on the data path.
 */
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "restart-job.h"

#define SYSTEMD_PRIVATE	   "unix:path=/run/systemd/private"
#define SYSTEMD_TIMEOUT_MS 1000

static GVariant *call(GDBusConnection *c, const char *path, const char *iface, const char *method,
		      GVariant *args, const char *type, GError **error)
{
	return g_dbus_connection_call_sync(c, NULL, path, iface, method, args, G_VARIANT_TYPE(type),
					   G_DBUS_CALL_FLAGS_NONE, SYSTEMD_TIMEOUT_MS, NULL, error);
}

static bool job_is_restart(GDBusConnection *c, GError **error)
{
	g_autoptr(GVariant) unit =
		call(c, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
		     "GetUnitByPID", g_variant_new("(u)", (guint32)getpid()), "(o)", error);
	if (!unit)
		return false;
	const char *unit_path;
	g_variant_get(unit, "(&o)", &unit_path);
	g_autoptr(GVariant) job =
		call(c, unit_path, "org.freedesktop.DBus.Properties", "Get",
		     g_variant_new("(ss)", "org.freedesktop.systemd1.Unit", "Job"), "(v)", error);
	if (!job)
		return false;
	g_autoptr(GVariant) jv = NULL;
	g_variant_get(job, "(v)", &jv);
	guint32 id = 0;
	const char *job_path = NULL;
	if (!g_variant_is_of_type(jv, G_VARIANT_TYPE("(uo)")))
		return false;
	g_variant_get(jv, "(u&o)", &id, &job_path);
	if (id == 0)
		return false; /* no job: someone sent SIGTERM by hand */
	g_autoptr(GVariant) type = call(
		c, job_path, "org.freedesktop.DBus.Properties", "Get",
		g_variant_new("(ss)", "org.freedesktop.systemd1.Job", "JobType"), "(v)", error);
	if (!type)
		return false;
	g_autoptr(GVariant) tv = NULL;
	g_variant_get(type, "(v)", &tv);
	if (!g_variant_is_of_type(tv, G_VARIANT_TYPE_STRING))
		return false;
	const char *t = g_variant_get_string(tv, NULL);
	log_debug("systemd job %u of this unit: %s", id, t);
	return strcmp(t, "restart") == 0 || strcmp(t, "try-restart") == 0;
}

bool restart_job_pending(void)
{
	g_autoptr(GError) error = NULL;

	/* Set by systemd for every service it starts; without it nobody will restart us. */
	if (!getenv("INVOCATION_ID"))
		return false;
	g_autoptr(GDBusConnection) c = g_dbus_connection_new_for_address_sync(
		SYSTEMD_PRIVATE, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, NULL, &error);
	if (!c) {
		log_warning("cannot ask systemd whether this is a restart (%s): stopping the "
			    "sessions",
			    error->message);
		return false;
	}
	bool restart = job_is_restart(c, &error);
	if (error)
		log_warning("cannot ask systemd whether this is a restart (%s): stopping the "
			    "sessions",
			    error->message);
	g_dbus_connection_close_sync(c, NULL, NULL);
	return restart;
}
