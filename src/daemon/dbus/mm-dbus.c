/* SPDX-License-Identifier: MIT */
/* The bus: the name, the object manager, the Manager interface, the set of modems (mm-dbus.h). */
#include <ModemManager-version.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "bus-address.h"
#include "log.h"
#include "manager.h"
#include "mm-dbus-internal.h"
#include "modem.h"

#define MMD_POLL_SECONDS 2 /* how stale signal and registration may be on the bus */
/* Reconnection to a bus that went away: first after 250 ms, then doubling up to 2 s. */
#define MMD_RETRY_MIN_MS 250
#define MMD_RETRY_MAX_MS 2000
/* Start-up waits this long for the name before it says ready anyway (a bus that accepts
 * connections but does not answer must not hold up the boot until TimeoutStartSec=). */
#define MMD_READY_TIMEOUT_SECONDS 10
#define MMD_LOG_BURST		  20 /* refused calls logged at info per window */
#define MMD_LOG_WINDOW_SECONDS	  10

void mmd_return_error(struct mm_dbus *d, GDBusMethodInvocation *inv, const GError *error)
{
	char *name = g_dbus_error_encode_gerror(error);
	gpointer n = g_hash_table_lookup(d->errors, name);

	d->rejected++;
	/* Bad input from the caller, as opposed to a state or a network that said no. */
	if (g_error_matches(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS))
		d->invalid++;
	/* Any local user may call and be refused, as fast as the bus carries it (e2e-dbus-fuzz:
	 * 40000 refusals in 2 minutes, each a line): MMD_LOG_BURST lines at info per window,
	 * the rest at debug; qmapctl stats counts them all. */
	static gint64 window_start;
	static unsigned in_window;
	static unsigned long quiet;
	gint64 now = g_get_monotonic_time();
	if (now - window_start >= MMD_LOG_WINDOW_SECONDS * G_USEC_PER_SEC) {
		window_start = now;
		in_window = 0;
	}
	int level = in_window < MMD_LOG_BURST ? LOG_INFO : LOG_DEBUG;
	if (level == LOG_INFO) {
		in_window++;
		if (quiet)
			log_info("dbus: %lu more refused calls were logged at debug level only",
				 quiet);
		quiet = 0;
	} else {
		quiet++;
	}
	log_full(level, "dbus: %s.%s from %s: %s: %s",
		 g_dbus_method_invocation_get_interface_name(inv),
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

static void connect_bus(struct mm_dbus *d);

/* Start-up may say ready: the name is ours, someone else's, or there is no bus. Once. */
static void settle(struct mm_dbus *d)
{
	void (*ready)(void *) = d->ready;

	if (d->ready_id) {
		g_source_remove(d->ready_id);
		d->ready_id = 0;
	}
	d->ready = NULL;
	if (ready)
		ready(d->ready_data);
}

static gboolean on_ready_timeout(gpointer user_data)
{
	struct mm_dbus *d = user_data;

	d->ready_id = 0;
	log_warning("dbus: no answer from the bus within %d s; running without ModemManager's "
		    "API until it answers",
		    MMD_READY_TIMEOUT_SECONDS);
	settle(d);
	return G_SOURCE_REMOVE;
}

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

/* Every object off the dead connection; the modems, their sessions and the data path stay. */
static void unexport_all(struct mm_dbus *d)
{
	if (d->owner_id) {
		g_bus_unown_name(d->owner_id);
		d->owner_id = 0;
	}
	d->owned = false;
	mmd_auth_bus_down(d);
	for (struct mmd_modem *mm = d->modems; mm; mm = mm->next)
		mmd_modem_bus_lost(mm);
	g_dbus_object_manager_server_set_connection(d->om, NULL);
	g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(d->iface));
}

static void on_name_acquired(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	(void)conn;
	d->owned = true;
	log_info("dbus: owning %s: ModemManager clients can use qmapd", name);
	settle(d);
}

static void on_name_lost(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	/* A closed connection is on_closed()'s to report. */
	if (conn && g_dbus_connection_is_closed(conn))
		return;
	if (d->owned)
		log_warning("dbus: lost %s to another process; ModemManager's API is gone", name);
	else
		log_warning("dbus: %s is owned by another process (ModemManager?) or not allowed "
			    "to qmapd by the bus policy; ModemManager's API is not available",
			    name);
	d->owned = false;
	settle(d);
}

static gboolean on_retry(gpointer user_data)
{
	struct mm_dbus *d = user_data;

	d->retry_id = 0;
	connect_bus(d);
	return G_SOURCE_REMOVE;
}

/* Connecting to a socket that is not there costs nothing, so the delay stays short: the bus
 * is back within MMD_RETRY_MAX_MS of its socket reappearing. */
static void schedule_retry(struct mm_dbus *d)
{
	d->retry_ms = d->retry_ms ? MIN(d->retry_ms * 2, MMD_RETRY_MAX_MS) : MMD_RETRY_MIN_MS;
	d->retry_id = g_timeout_add(d->retry_ms, on_retry, d);
}

/*
 * The bus went away (dbus-daemon restarted or crashed). GLib's shared bus connection would
 * SIGTERM the whole process here (exit-on-close); this one is ours and exit-on-close is off,
 * so qmapd goes on carrying packets and connect again until the bus is back.
 */
static void on_closed(GDBusConnection *conn, gboolean remote_peer_vanished, GError *error,
		      gpointer user_data)
{
	struct mm_dbus *d = user_data;

	(void)remote_peer_vanished;
	log_warning("dbus: the bus at %s went away%s%s; sessions and the data path go on, "
		    "ModemManager's API is back when the bus is",
		    d->address, error ? ": " : "", error ? error->message : "");
	g_signal_handler_disconnect(conn, d->closed_id);
	d->closed_id = 0;
	unexport_all(d);
	g_clear_object(&d->conn);
	d->lost = true;
	d->retry_ms = 0;
	schedule_retry(d);
}

static void on_connection(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	GDBusConnection *conn = g_dbus_connection_new_for_address_finish(res, &error);
	struct mm_dbus *d = user_data;

	(void)src;
	if (!conn) {
		if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
			return;
		if (!d->lost)
			log_warning("dbus: cannot connect to the bus at %s: %s; trying again",
				    d->address, error->message);
		else
			log_debug("dbus: cannot connect to the bus at %s: %s", d->address,
				  error->message);
		d->lost = true;
		settle(d); /* no bus: ready without it */
		schedule_retry(d);
		return;
	}
	if (d->lost)
		log_info("dbus: the bus at %s is back", d->address);
	d->lost = false;
	d->retry_ms = 0;
	d->conn = conn;
	g_dbus_connection_set_exit_on_close(conn, FALSE);
	d->closed_id = g_signal_connect(conn, "closed", G_CALLBACK(on_closed), d);
	mmd_auth_bus_up(d);
	/* Export before the name is requested, so that a client that sees the name finds the
	 * objects. */
	export_all(d);
	d->owner_id =
		g_bus_own_name_on_connection(conn, MM_DBUS_SERVICE, G_BUS_NAME_OWNER_FLAGS_NONE,
					     on_name_acquired, on_name_lost, d, NULL);
}

static void connect_bus(struct mm_dbus *d)
{
	g_dbus_connection_new_for_address(d->address,
					  G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
						  G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
					  NULL, d->cancellable, on_connection, d);
}

int mm_dbus_new(struct manager *manager, enum config_dbus bus, const char *address,
		const char *admin_group, void (*ready)(void *userdata), void *userdata,
		struct mm_dbus **ret)
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
	/* Our own connection, never GLib's shared one (g_bus_get), which exits on close. */
	d->address = address ? strdup(address) : bus_address(bus);
	if (!d->address) {
		free(d);
		return -ENOMEM;
	}
	d->manager = manager;
	d->ready = ready;
	d->ready_data = userdata;
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
	if (d->ready)
		d->ready_id = g_timeout_add_seconds(MMD_READY_TIMEOUT_SECONDS, on_ready_timeout, d);

	log_info("dbus: connecting to %s", d->address);
	connect_bus(d);
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
	if (d->retry_id)
		g_source_remove(d->retry_id);
	if (d->ready_id)
		g_source_remove(d->ready_id);
	if (d->owner_id)
		g_bus_unown_name(d->owner_id);
	mmd_auth_bus_down(d);
	if (d->closed_id)
		g_signal_handler_disconnect(d->conn, d->closed_id);
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
	free(d->address);
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
