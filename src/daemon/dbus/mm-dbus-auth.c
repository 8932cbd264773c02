/* SPDX-License-Identifier: MIT */
/*
 * Who may call what on ModemManager's API. The bus policy (conf/qmapd-dbus.conf) lets every
 * local user send to the name, because it cannot know qmapd.conf's admin-group; qmapd
 * decides here, with the rule of the control socket (admin-auth.h): reading is for everyone,
 * every method that changes state is for root and the admin group. A refusal is
 * Core.Unauthorized, what ModemManager answers when polkit says no.
 *
 * The caller's credentials come from the bus (GetConnectionCredentials: the uid and groups
 * the bus daemon recorded when the caller connected, SO_PEERCRED / SO_PEERGROUPS), never from
 * anything the caller says. The lookup is a synchronous call inside g-authorize-method,
 * whose answer GDBus needs before it returns: only state-changing calls pay it (a handful
 * per connection, not per packet), the bus daemon answers it from memory, and
 * MMD_AUTH_TIMEOUT_MS bounds the stall of the loop should the bus hang. No cache, so nothing
 * can go stale when a unique name goes away.
 */
#include <string.h>

#include "admin-auth.h"
#include "mm-dbus-internal.h"

#define MMD_AUTH_TIMEOUT_MS 1000

bool mmd_method_changes_state(const char *iface, const char *method)
{
	static const struct {
		const char *iface, *method;
	} read_only[] = {
		{ MM_DBUS_INTERFACE_MODEM, "ListBearers" },
		{ MM_DBUS_INTERFACE_MODEM_SIMPLE, "GetStatus" },
		{ MM_DBUS_INTERFACE_MODEM_MESSAGING, "List" },
	};

	if (!iface || !method)
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(read_only); i++)
		if (strcmp(iface, read_only[i].iface) == 0 &&
		    strcmp(method, read_only[i].method) == 0)
			return false;
	return true; /* anything new is a change until shown otherwise */
}

/* The caller's uid and groups as the bus recorded them (*groups NULL: the bus did not list
 * them; else the caller frees it); false with a reason in err. */
static bool caller_credentials(struct mm_dbus *d, const char *sender, uid_t *uid, gid_t **groups,
			       size_t *n_groups, char *err, size_t errlen)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) reply = NULL, dict = NULL, gids = NULL;
	guint32 u;

	reply = g_dbus_connection_call_sync(
		d->conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
		"GetConnectionCredentials", g_variant_new("(s)", sender), G_VARIANT_TYPE("(a{sv})"),
		G_DBUS_CALL_FLAGS_NONE, MMD_AUTH_TIMEOUT_MS, NULL, &error);
	if (!reply) {
		snprintf(err, errlen, "the bus did not tell the caller's credentials: %s",
			 error->message);
		return false;
	}
	dict = g_variant_get_child_value(reply, 0);
	if (!g_variant_lookup(dict, "UnixUserID", "u", &u)) {
		snprintf(err, errlen, "the bus did not tell the caller's user");
		return false;
	}
	*uid = u;
	*groups = NULL;
	*n_groups = 0;
	gids = g_variant_lookup_value(dict, "UnixGroupIDs", G_VARIANT_TYPE("au"));
	if (gids) {
		gsize n;
		const guint32 *g = g_variant_get_fixed_array(gids, &n, sizeof(guint32));

		*groups = g_new(gid_t, n + 1); /* not NULL when empty */
		for (gsize i = 0; i < n; i++)
			(*groups)[i] = g[i];
		*n_groups = n;
	}
	return true;
}

static gboolean on_authorize(GDBusInterfaceSkeleton *iface, GDBusMethodInvocation *inv,
			     gpointer user_data)
{
	struct mm_dbus *d = user_data;
	const char *name = g_dbus_method_invocation_get_interface_name(inv);
	const char *method = g_dbus_method_invocation_get_method_name(inv);
	const char *sender = g_dbus_method_invocation_get_sender(inv);
	g_autofree gid_t *groups = NULL;
	size_t n_groups = 0;
	gid_t admin = ADMIN_NO_GID;
	char err[256] = "";
	uid_t uid = 0;

	(void)iface;
	if (!mmd_method_changes_state(name, method))
		return TRUE;
	if (d->admin_group[0] && admin_group_lookup(d->admin_group, &admin) < 0)
		admin = ADMIN_NO_GID;
	if (sender && caller_credentials(d, sender, &uid, &groups, &n_groups, err, sizeof(err))) {
		/* UnixGroupIDs has the primary group too (dbus-daemon; e2e-dbus.sh checks a
		 * caller with no supplementary groups). Without the list (a bus too old to
		 * give it), the group database decides, as on the control socket. */
		if (groups ? admin_may_change(uid, ADMIN_NO_GID, groups, n_groups, admin)
			   : admin_may_change(uid, ADMIN_NO_GID, NULL, 0, admin) ||
				     (admin != ADMIN_NO_GID && admin_user_in_group_db(uid, admin)))
			return TRUE;
	} else if (!sender) {
		snprintf(err, sizeof(err), "no sender");
	}

	d->calls++;
	if (err[0])
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
			   "%s.%s is not allowed: %s", name, method, err);
	else if (d->admin_group[0])
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
			   "%s needs root or membership in group '%s' (qmapd.conf admin-group); "
			   "uid %u is neither",
			   method, d->admin_group, (unsigned)uid);
	else
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
			   "%s needs root (qmapd.conf sets no admin-group); uid %u is not", method,
			   (unsigned)uid);
	return FALSE;
}

void mmd_auth_watch(struct mm_dbus *d, gpointer skeleton)
{
	g_signal_connect(skeleton, "g-authorize-method", G_CALLBACK(on_authorize), d);
}

void mmd_auth_unwatch(struct mm_dbus *d, gpointer skeleton)
{
	g_signal_handlers_disconnect_by_func(skeleton, G_CALLBACK(on_authorize), d);
}
