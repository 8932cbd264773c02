/* SPDX-License-Identifier: MIT */
/* The bus: the name, the object manager, the Manager interface, the set of modems (mm-dbus.h). */
#include <ModemManager-version.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "manager.h"
#include "mm-dbus-internal.h"
#include "modem.h"

#define MMD_POLL_SECONDS 2 /* how stale signal and registration may be on the bus */

void mmd_return_error(struct mm_dbus *d, GDBusMethodInvocation *inv, const GError *error)
{
	char *name = g_dbus_error_encode_gerror(error);
	gpointer n = g_hash_table_lookup(d->errors, name);

	d->rejected++;
	/* Bad input from the caller, as opposed to a state or a network that said no. */
	if (g_error_matches(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS))
		d->invalid++;
	log_info("dbus: %s.%s from %s: %s: %s", g_dbus_method_invocation_get_interface_name(inv),
		 g_dbus_method_invocation_get_method_name(inv),
		 g_dbus_method_invocation_get_sender(inv) ?: "?", name, error->message);
	g_hash_table_replace(d->errors, name, GUINT_TO_POINTER(GPOINTER_TO_UINT(n) + 1));
	g_dbus_method_invocation_return_gerror(inv, error);
}

void mmd_reject(struct mm_dbus *d, GDBusMethodInvocation *inv, GQuark domain, gint code,
		const char *fmt, ...)
{
	va_list ap;
	char msg[256];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	g_autoptr(GError) error = g_error_new_literal(domain, code, msg);
	mmd_return_error(d, inv, error);
}

static struct mmd_modem *find_modem(struct mm_dbus *d, const struct modem *modem)
{
	for (struct mmd_modem *mm = d->modems; mm; mm = mm->next)
		if (mm->modem == modem)
			return mm;
	return NULL;
}

/* ---- keeping up with the manager ------------------------------------------------------ */

static gboolean on_sync(gpointer user_data)
{
	struct mm_dbus *d = user_data;

	d->sync_id = 0;
	/* Modems the manager has that we do not know yet (created before us or just now). */
	for (struct modem *m = manager_next_modem(d->manager, NULL); m;
	     m = manager_next_modem(d->manager, m)) {
		struct mmd_modem *mm = find_modem(d, m);
		if (!mm) {
			mm = mmd_modem_new(d, m);
			if (!mm)
				continue;
			mm->next = d->modems;
			d->modems = mm;
		}
	}
	for (struct mmd_modem *mm = d->modems; mm; mm = mm->next)
		mmd_modem_sync(mm);
	return G_SOURCE_REMOVE;
}

void mmd_schedule_sync(struct mm_dbus *d)
{
	if (!d->sync_id)
		d->sync_id = g_idle_add(on_sync, d);
}

static gboolean on_poll(gpointer user_data)
{
	mmd_schedule_sync(user_data);
	return G_SOURCE_CONTINUE;
}

static void on_added(void *userdata, struct modem *modem)
{
	(void)modem;
	mmd_schedule_sync(userdata);
}

static void on_change(void *userdata, struct modem *modem)
{
	(void)modem;
	mmd_schedule_sync(userdata);
}

/* Before the manager frees it: nothing may point at it afterwards. */
static void on_removed(void *userdata, struct modem *modem)
{
	struct mm_dbus *d = userdata;

	for (struct mmd_modem **p = &d->modems; *p; p = &(*p)->next)
		if ((*p)->modem == modem) {
			struct mmd_modem *mm = *p;
			*p = mm->next;
			mmd_modem_free(mm);
			return;
		}
}

/* ---- the Manager interface ------------------------------------------------------------ */

static gboolean handle_scan_devices(MmGdbusOrgFreedesktopModemManager1 *iface,
				    GDBusMethodInvocation *inv, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	d->calls++;
	/* Discovery follows USB hotplug as it happens; the modems of the file are always
	 * there. What a scan could find is already known: bring the bus up to date. */
	mmd_schedule_sync(d);
	mm_gdbus_org_freedesktop_modem_manager1_complete_scan_devices(iface, inv);
	return TRUE;
}

static gboolean handle_set_logging(MmGdbusOrgFreedesktopModemManager1 *iface,
				   GDBusMethodInvocation *inv, const gchar *level,
				   gpointer user_data)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = { { "ERR", LOG_ERR },   { "WARN", LOG_WARNING }, { "MSG", LOG_NOTICE },
		       { "INFO", LOG_INFO }, { "DEBUG", LOG_DEBUG },  { "TRACE", LOG_DEBUG } };
	struct mm_dbus *d = user_data;

	d->calls++;
	for (size_t i = 0; i < G_N_ELEMENTS(levels); i++)
		if (g_ascii_strcasecmp(level, levels[i].name) == 0) {
			log_set_max_level(levels[i].level);
			log_info("dbus: log level %s", levels[i].name);
			mm_gdbus_org_freedesktop_modem_manager1_complete_set_logging(iface, inv);
			return TRUE;
		}
	mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
		   "Invalid log level: expected ERR, WARN, MSG, INFO, DEBUG or TRACE");
	return TRUE;
}

/* ---- the bus -------------------------------------------------------------------------- */

static void export_all(struct mm_dbus *d)
{
	g_autoptr(GError) error = NULL;

	if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(d->iface), d->conn,
					      MMD_PATH, &error))
		log_error("dbus: cannot export %s: %s", MMD_PATH, error->message);
	g_dbus_object_manager_server_set_connection(d->om, d->conn);
	for (struct mmd_modem *mm = d->modems; mm; mm = mm->next)
		for (struct mmd_bearer *b = mm->bearers; b; b = b->next)
			mmd_bearer_export(b);
	mmd_schedule_sync(d); /* the SIM objects wait for the connection */
}

static void on_name_acquired(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	(void)conn;
	d->owned = true;
	log_info("dbus: owning %s: ModemManager clients can use qmapd", name);
}

static void on_name_lost(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	if (d->owned)
		log_warning("dbus: lost %s (the bus went away?); ModemManager's API is gone", name);
	else if (!conn)
		log_info("dbus: no bus to offer %s on; ModemManager's API is not available", name);
	else
		log_warning("dbus: %s is owned by another process (ModemManager?) or not allowed "
			    "to qmapd by the bus policy; ModemManager's API is not available",
			    name);
	d->owned = false;
}

/* The connection exists: export before the name is requested, so that a client that sees
 * the name finds the objects. */
static void on_bus_acquired(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	(void)name;
	if (!d->conn)
		d->conn = g_object_ref(conn);
	export_all(d);
}

static void on_connection(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	GDBusConnection *conn = g_dbus_connection_new_for_address_finish(res, &error);
	struct mm_dbus *d = user_data;

	(void)src;
	if (!conn) {
		if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
			log_warning("dbus: cannot connect to the bus: %s", error->message);
		return;
	}
	d->conn = conn;
	export_all(d);
	d->owner_id =
		g_bus_own_name_on_connection(conn, MM_DBUS_SERVICE, G_BUS_NAME_OWNER_FLAGS_NONE,
					     on_name_acquired, on_name_lost, d, NULL);
}

int mm_dbus_new(struct manager *manager, enum config_dbus bus, const char *address,
		const char *admin_group, struct mm_dbus **ret)
{
	struct mm_dbus *d;
	static const struct manager_observer observer = { .on_added = on_added,
							  .on_removed = on_removed,
							  .on_change = on_change };

	*ret = NULL;
	if (bus == CONFIG_DBUS_NONE && !address)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->manager = manager;
	snprintf(d->admin_group, sizeof(d->admin_group), "%s", admin_group ?: "");
	d->errors = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	d->cancellable = g_cancellable_new();
	d->om = g_dbus_object_manager_server_new(MMD_PATH);
	d->iface = mm_gdbus_org_freedesktop_modem_manager1_skeleton_new();
	/* The ModemManager API qmapd was built against and answers. */
	char version[32];
	snprintf(version, sizeof(version), "%d.%d.%d", MM_MAJOR_VERSION, MM_MINOR_VERSION,
		 MM_MICRO_VERSION);
	mm_gdbus_org_freedesktop_modem_manager1_set_version(d->iface, version);
	g_signal_connect(d->iface, "handle-scan-devices", G_CALLBACK(handle_scan_devices), d);
	g_signal_connect(d->iface, "handle-set-logging", G_CALLBACK(handle_set_logging), d);
	mmd_answer_unsupported(d, d->iface);
	mmd_auth_watch(d, d->iface);
	manager_set_observer(manager, &observer, d);
	on_sync(d); /* the modems that exist: their objects, before the bus sees any */
	d->poll_id = g_timeout_add_seconds(MMD_POLL_SECONDS, on_poll, d);

	if (address) {
		log_info("dbus: connecting to %s", address);
		g_dbus_connection_new_for_address(
			address,
			G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
				G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
			NULL, d->cancellable, on_connection, d);
	} else {
		d->owner_id = g_bus_own_name(
			bus == CONFIG_DBUS_SESSION ? G_BUS_TYPE_SESSION : G_BUS_TYPE_SYSTEM,
			MM_DBUS_SERVICE, G_BUS_NAME_OWNER_FLAGS_NONE, on_bus_acquired,
			on_name_acquired, on_name_lost, d, NULL);
	}
	*ret = d;
	return 0;
}

struct mm_dbus *mm_dbus_free(struct mm_dbus *d)
{
	if (!d)
		return NULL;
	manager_set_observer(d->manager, NULL, NULL);
	g_cancellable_cancel(d->cancellable);
	if (d->sync_id)
		g_source_remove(d->sync_id);
	if (d->poll_id)
		g_source_remove(d->poll_id);
	while (d->modems) {
		struct mmd_modem *mm = d->modems;
		d->modems = mm->next;
		mmd_modem_free(mm);
	}
	if (d->owner_id)
		g_bus_unown_name(d->owner_id);
	if (d->conn)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(d->iface));
	mmd_auth_unwatch(d, d->iface);
	g_clear_object(&d->iface);
	g_clear_object(&d->om);
	if (d->conn)
		g_dbus_connection_flush_sync(d->conn, NULL, NULL);
	g_clear_object(&d->conn);
	g_clear_object(&d->cancellable);
	g_hash_table_destroy(d->errors);
	free(d);
	return NULL;
}

void mm_dbus_print_stats(const struct mm_dbus *d, FILE *f, const char *prefix)
{
	if (!d)
		return;
	fprintf(f,
		"%sdbus: calls=%" PRIu64 " rejected=%" PRIu64 " invalid=%" PRIu64
		" connects=%" PRIu64 " connect-failures=%" PRIu64 "\n",
		prefix, d->calls, d->rejected, d->invalid, d->connects, d->connect_failures);
	GHashTableIter it;
	gpointer name, n;
	g_hash_table_iter_init(&it, d->errors);
	while (g_hash_table_iter_next(&it, &name, &n))
		fprintf(f, "%sdbus-error: %s=%u\n", prefix, (const char *)name,
			GPOINTER_TO_UINT(n));
}

json_t *mm_dbus_stats_json(const struct mm_dbus *d)
{
	GHashTableIter it;
	gpointer name, n;
	json_t *errors;

	if (!d)
		return NULL;
	errors = json_object();
	g_hash_table_iter_init(&it, d->errors);
	while (errors && g_hash_table_iter_next(&it, &name, &n))
		json_object_set_new(errors, name, json_integer(GPOINTER_TO_UINT(n)));
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:o*}", "calls", (json_int_t)d->calls,
			 "rejected", (json_int_t)d->rejected, "invalid", (json_int_t)d->invalid,
			 "connects", (json_int_t)d->connects, "connect-failures",
			 (json_int_t)d->connect_failures, "errors", errors);
}
