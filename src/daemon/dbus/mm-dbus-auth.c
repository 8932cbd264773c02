/* SPDX-License-Identifier: MIT */
/*
 * Who may call what on ModemManager's API. The bus policy (conf/qmapd-dbus.conf) lets every
 * local user send to the name; qmapd decides here. Reading is for everyone. Every method that
 * changes state needs ModemManager's polkit action for it (mmd_auth_action()) when polkit is
 * on the bus, as ModemManager asks it, so the active desktop user may unlock a SIM; without
 * polkit the rule of the control socket decides (admin-auth.h: root and qmapd.conf's
 * admin-group). A refusal is Core.Unauthorized, what ModemManager answers.
 *
 * Nothing here waits for the bus on the loop that carries packets. GDBus emits
 * g-authorize-method in a worker thread and needs its answer there; the handler only hands
 * the call to the loop and answers "not yet" (FALSE: the invocation is then ours). On the
 * loop the question goes to polkit (CheckAuthorization, the caller's unique name as subject)
 * or to the bus (GetConnectionCredentials: the uid and groups the bus daemon recorded when
 * the caller connected, never anything the caller says) asynchronously; once allowed, the
 * method is dispatched to the skeleton's own handler as GDBus would have. A stalled bus
 * delays only the calls waiting for their answer. No cache, so nothing can go stale when a
 * unique name goes away or polkit's rules change.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "admin-auth.h"
#include "log.h"
#include "mm-dbus-internal.h"

#define POLKIT_NAME	 "org.freedesktop.PolicyKit1"
#define POLKIT_PATH	 "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"
/* CheckAuthorization's AllowUserInteraction: an agent of the caller's session may ask for a
 * password (auth_self_keep), as ModemManager allows. */
#define POLKIT_ALLOW_USER_INTERACTION 1u

const char *mmd_auth_action(const char *iface, const char *method)
{
	/* ModemManager's src/mm-auth-provider.h and the handlers that use each id; a NULL
	 * method is every method of the interface, a NULL action is read-only. */
	static const struct {
		const char *iface, *method, *action;
	} rules[] = {
		{ MM_DBUS_INTERFACE_MODEM, "ListBearers", NULL },
		{ MM_DBUS_INTERFACE_MODEM_SIMPLE, "GetStatus", NULL },
		{ MM_DBUS_INTERFACE_MODEM_MESSAGING, "List", NULL },
		{ MM_DBUS_INTERFACE, NULL, MMD_AUTH_MANAGER_CONTROL },
		{ MM_DBUS_INTERFACE_MODEM_MESSAGING, NULL, MMD_AUTH_MESSAGING },
		{ MM_DBUS_INTERFACE_SMS, NULL, MMD_AUTH_MESSAGING },
		{ MM_DBUS_INTERFACE_MODEM_LOCATION, NULL, MMD_AUTH_LOCATION },
		{ MM_DBUS_INTERFACE_MODEM_TIME, NULL, MMD_AUTH_TIME },
		{ MM_DBUS_INTERFACE_MODEM_VOICE, NULL, MMD_AUTH_VOICE },
		{ MM_DBUS_INTERFACE_CALL, NULL, MMD_AUTH_VOICE },
		{ MM_DBUS_INTERFACE_MODEM_MODEM3GPP_USSD, NULL, MMD_AUTH_USSD },
		{ MM_DBUS_INTERFACE_MODEM_FIRMWARE, NULL, MMD_AUTH_FIRMWARE },
	};

	if (!iface || !method)
		return MMD_AUTH_DEVICE_CONTROL;
	for (size_t i = 0; i < G_N_ELEMENTS(rules); i++)
		if (strcmp(iface, rules[i].iface) == 0 &&
		    (!rules[i].method || strcmp(method, rules[i].method) == 0))
			return rules[i].action;
	/* Everything else (Modem, Simple, 3gpp, Sim, Bearer, Signal, Time, ...) is a change
	 * until shown otherwise: the device's control. */
	return MMD_AUTH_DEVICE_CONTROL;
}

/* One state-changing call between g-authorize-method and its handler (or refusal). */
struct auth_call {
	struct mm_dbus *d; /* only compared until call_alive() says the skeleton is watched */
	GDBusInterfaceSkeleton *skeleton; /* a reference: the handler's user data */
	GDBusMethodInvocation *inv;	  /* ours: dispatched or answered exactly once */
	const char *action;
};

static gboolean on_authorize(GDBusInterfaceSkeleton *iface, GDBusMethodInvocation *inv,
			     gpointer user_data);

static void call_free(struct auth_call *c)
{
	g_object_unref(c->skeleton);
	g_free(c);
}

/* Whether the skeleton is still watched by c->d: mmd_auth_unwatch() runs before its modem,
 * bearer or the bus's state goes, so a call whose skeleton was unwatched meanwhile must not
 * reach its handler (whose user data may be gone) nor touch d. */
static bool call_alive(const struct auth_call *c)
{
	return g_signal_handler_find(c->skeleton, G_SIGNAL_MATCH_FUNC | G_SIGNAL_MATCH_DATA, 0, 0,
				     NULL, (gpointer)on_authorize, c->d) != 0;
}

/* The object went away while the call waited; nothing of d may be used. */
static void call_gone(struct auth_call *c)
{
	g_dbus_method_invocation_return_error(c->inv, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_OBJECT,
					      "%s went away",
					      g_dbus_method_invocation_get_object_path(c->inv));
	call_free(c);
}

/* Allowed: to the skeleton's handler, as GDBus dispatches it (which takes the invocation). */
static void call_dispatch(struct auth_call *c)
{
	GDBusMethodInvocation *inv = c->inv;
	const GDBusInterfaceVTable *vtable = g_dbus_interface_skeleton_get_vtable(c->skeleton);

	vtable->method_call(g_dbus_method_invocation_get_connection(inv),
			    g_dbus_method_invocation_get_sender(inv),
			    g_dbus_method_invocation_get_object_path(inv),
			    g_dbus_method_invocation_get_interface_name(inv),
			    g_dbus_method_invocation_get_method_name(inv),
			    g_dbus_method_invocation_get_parameters(inv), inv,
			    g_dbus_method_invocation_get_user_data(inv));
	call_free(c);
}

static void call_refuse(struct auth_call *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void call_refuse(struct auth_call *c, const char *fmt, ...)
{
	char why[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	c->d->calls++;
	mmd_reject(c->d, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED, "%s.%s %s",
		   g_dbus_method_invocation_get_interface_name(c->inv),
		   g_dbus_method_invocation_get_method_name(c->inv), why);
	call_free(c);
}

/* Without polkit: root or the admin group by the caller's credentials as the bus tells. */
static void on_credentials(GObject *src, GAsyncResult *res, gpointer user_data)
{
	struct auth_call *c = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) reply =
		g_dbus_connection_call_finish(G_DBUS_CONNECTION(src), res, &error);
	g_autoptr(GVariant) dict = NULL, gids = NULL;
	gid_t admin = ADMIN_NO_GID;
	guint32 uid;
	bool ok;

	if (!call_alive(c)) {
		call_gone(c);
		return;
	}
	if (!reply) {
		call_refuse(c, "is not allowed: the bus did not tell the caller's credentials: %s",
			    error->message);
		return;
	}
	dict = g_variant_get_child_value(reply, 0);
	if (!g_variant_lookup(dict, "UnixUserID", "u", &uid)) {
		call_refuse(c, "is not allowed: the bus did not tell the caller's user");
		return;
	}
	if (c->d->admin_group[0] && admin_group_lookup(c->d->admin_group, &admin) < 0)
		admin = ADMIN_NO_GID;
	gids = g_variant_lookup_value(dict, "UnixGroupIDs", G_VARIANT_TYPE("au"));
	if (gids) {
		/* UnixGroupIDs has the primary group too (dbus-daemon; e2e-dbus.sh checks a
		 * caller with no supplementary groups). */
		gsize n;
		const guint32 *g = g_variant_get_fixed_array(gids, &n, sizeof(guint32));
		g_autofree gid_t *groups = g_new(gid_t, n + 1); /* not NULL when empty */

		for (gsize i = 0; i < n; i++)
			groups[i] = g[i];
		ok = admin_may_change(uid, ADMIN_NO_GID, groups, n, admin);
	} else {
		/* A bus too old to list them: the group database decides, as on the control
		 * socket. */
		ok = admin_may_change(uid, ADMIN_NO_GID, NULL, 0, admin) ||
		     (admin != ADMIN_NO_GID && admin_user_in_group_db(uid, admin));
	}
	if (ok)
		call_dispatch(c);
	else if (c->d->admin_group[0])
		call_refuse(c,
			    "needs root or membership in group '%s' (qmapd.conf admin-group); "
			    "uid %u is neither",
			    c->d->admin_group, (unsigned)uid);
	else
		call_refuse(c, "needs root (qmapd.conf sets no admin-group); uid %u is not",
			    (unsigned)uid);
}

static void ask_bus(struct auth_call *c)
{
	g_dbus_connection_call(
		g_dbus_method_invocation_get_connection(c->inv), "org.freedesktop.DBus",
		"/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionCredentials",
		g_variant_new("(s)", g_dbus_method_invocation_get_sender(c->inv)),
		G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, on_credentials, c);
}

static void on_polkit(GObject *src, GAsyncResult *res, gpointer user_data)
{
	struct auth_call *c = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) reply =
		g_dbus_connection_call_finish(G_DBUS_CONNECTION(src), res, &error);
	gboolean authorized = FALSE, challenge = FALSE;

	if (!call_alive(c)) {
		call_gone(c);
		return;
	}
	if (!reply) {
		/* polkitd left between the watch and the call, or cannot decide (an action it
		 * does not know: ModemManager's file is not installed): the rule without it,
		 * as if polkit were not there, so root (NetworkManager) is never locked out. */
		if (!c->d->polkit_failed)
			log_warning("dbus: polkit cannot decide %s (%s); the admin-group rule "
				    "decides instead",
				    c->action, error->message);
		c->d->polkit_failed = true;
		ask_bus(c);
		return;
	}
	g_variant_get(reply, "((bb@a{ss}))", &authorized, &challenge, NULL);
	if (authorized) {
		call_dispatch(c);
		return;
	}
	call_refuse(c, "is not allowed: polkit refuses %s to the caller%s", c->action,
		    challenge ? " without authentication" : "");
}

/* CheckAuthorization for the caller's unique name, as ModemManager's mm-auth-provider. */
static void ask_polkit(struct auth_call *c)
{
	GVariantBuilder subject, details;

	g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
	g_variant_builder_add(&subject, "{sv}", "name",
			      g_variant_new_string(g_dbus_method_invocation_get_sender(c->inv)));
	g_variant_builder_init(&details, G_VARIANT_TYPE("a{ss}"));
	/* No timeout: an agent may be waiting for the user's password; a qmapd that stops
	 * cancels the call (d->cancellable), the caller's own timeout bounds its wait. */
	g_dbus_connection_call(g_dbus_method_invocation_get_connection(c->inv), POLKIT_NAME,
			       POLKIT_PATH, POLKIT_INTERFACE, "CheckAuthorization",
			       g_variant_new("((sa{sv})sa{ss}us)", "system-bus-name", &subject,
					     c->action, &details, POLKIT_ALLOW_USER_INTERACTION,
					     ""),
			       G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, G_MAXINT,
			       c->d->cancellable, on_polkit, c);
}

/* On the loop: the call from the worker thread. */
static gboolean on_call(gpointer user_data)
{
	struct auth_call *c = user_data;

	if (!call_alive(c)) {
		call_gone(c);
		return G_SOURCE_REMOVE;
	}
	if (!g_dbus_method_invocation_get_sender(c->inv))
		call_refuse(c, "is not allowed: no sender");
	else if (c->d->polkit)
		ask_polkit(c);
	else
		ask_bus(c);
	return G_SOURCE_REMOVE;
}

/* In a GDBus worker thread: nothing of d is read here. */
static gboolean on_authorize(GDBusInterfaceSkeleton *iface, GDBusMethodInvocation *inv,
			     gpointer user_data)
{
	const char *action = mmd_auth_action(g_dbus_method_invocation_get_interface_name(inv),
					     g_dbus_method_invocation_get_method_name(inv));
	struct auth_call *c;

	if (!action)
		return TRUE;
	c = g_new0(struct auth_call, 1);
	c->d = user_data;
	c->skeleton = g_object_ref(iface);
	c->inv = inv;
	c->action = action;
	/* An idle source, not g_main_context_invoke(), which would run on_call() right here
	 * should the loop not hold the context at that moment. */
	GSource *idle = g_idle_source_new();
	g_source_set_callback(idle, on_call, c, NULL);
	g_source_attach(idle, g_main_context_default());
	g_source_unref(idle);
	return FALSE; /* GDBus dispatches nothing: on_call() does, or answers */
}

void mmd_auth_watch(struct mm_dbus *d, gpointer skeleton)
{
	g_signal_connect(skeleton, "g-authorize-method", G_CALLBACK(on_authorize), d);
}

void mmd_auth_unwatch(struct mm_dbus *d, gpointer skeleton)
{
	g_signal_handlers_disconnect_by_func(skeleton, G_CALLBACK(on_authorize), d);
}

static void on_polkit_appeared(GDBusConnection *conn, const gchar *name, const gchar *owner,
			       gpointer user_data)
{
	struct mm_dbus *d = user_data;

	(void)conn;
	(void)owner;
	if (!d->polkit)
		log_info("dbus: %s is on the bus: it authorizes state-changing calls", name);
	d->polkit = true;
	d->polkit_failed = false;
}

static void on_polkit_vanished(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	struct mm_dbus *d = user_data;

	(void)conn;
	if (d->polkit)
		log_info("dbus: %s left the bus: state-changing calls are for root and the "
			 "admin group",
			 name);
	d->polkit = false;
}

void mmd_auth_bus_up(struct mm_dbus *d)
{
	/* AUTO_START: polkitd is usually started by bus activation on its first use. */
	d->polkit_watch = g_bus_watch_name_on_connection(
		d->conn, POLKIT_NAME, G_BUS_NAME_WATCHER_FLAGS_AUTO_START, on_polkit_appeared,
		on_polkit_vanished, d, NULL);
}

void mmd_auth_bus_down(struct mm_dbus *d)
{
	if (d->polkit_watch)
		g_bus_unwatch_name(d->polkit_watch);
	d->polkit_watch = 0;
	d->polkit = false;
}
