/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for systemd-resolved on a private bus, for e2e-dns.sh: owns
 * org.freedesktop.resolve1 and answers the four link methods qmapd calls (signatures as in
 * systemd's org.freedesktop.resolve1(5)), writing one line per call to a file:
 *   SetLinkDNS IFINDEX ADDR...          SetLinkDomains IFINDEX [~]DOMAIN...
 *   SetLinkDefaultRoute IFINDEX yes|no  RevertLink IFINDEX
 * "ready" once the name is owned. --refuse answers SetLinkDNS with AccessDenied, as
 * resolved does for a caller polkit turns away.
 *   fake-resolved --address ADDRESS --record FILE [--refuse]
 */
#include <arpa/inet.h>
#include <gio/gio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const char introspection[] =
	"<node><interface name='org.freedesktop.resolve1.Manager'>"
	"<method name='SetLinkDNS'><arg type='i' direction='in'/>"
	"<arg type='a(iay)' direction='in'/></method>"
	"<method name='SetLinkDomains'><arg type='i' direction='in'/>"
	"<arg type='a(sb)' direction='in'/></method>"
	"<method name='SetLinkDefaultRoute'><arg type='i' direction='in'/>"
	"<arg type='b' direction='in'/></method>"
	"<method name='RevertLink'><arg type='i' direction='in'/></method>"
	"</interface></node>";

static FILE *record;
static gboolean refuse;

static void set_link_dns(GVariant *params, GString *line)
{
	g_autoptr(GVariantIter) iter = NULL;
	gint32 ifindex, family;
	GVariant *bytes;

	g_variant_get(params, "(ia(iay))", &ifindex, &iter);
	g_string_append_printf(line, " %d", ifindex);
	while (g_variant_iter_next(iter, "(i@ay)", &family, &bytes)) {
		char text[INET6_ADDRSTRLEN] = "?";
		gsize n;
		const void *a = g_variant_get_fixed_array(bytes, &n, 1);
		if ((family == AF_INET && n == 4) || (family == AF_INET6 && n == 16))
			inet_ntop(family, a, text, sizeof(text));
		g_string_append_printf(line, " %s", text);
		g_variant_unref(bytes);
	}
}

static void on_call(GDBusConnection *conn, const gchar *sender, const gchar *path,
		    const gchar *iface, const gchar *method, GVariant *params,
		    GDBusMethodInvocation *inv, gpointer user_data)
{
	g_autoptr(GString) line = g_string_new(method);
	gint32 ifindex;

	(void)conn, (void)sender, (void)path, (void)iface, (void)user_data;
	if (strcmp(method, "SetLinkDNS") == 0) {
		set_link_dns(params, line);
	} else if (strcmp(method, "SetLinkDomains") == 0) {
		g_autoptr(GVariantIter) iter = NULL;
		const gchar *domain;
		gboolean route_only;
		g_variant_get(params, "(ia(sb))", &ifindex, &iter);
		g_string_append_printf(line, " %d", ifindex);
		while (g_variant_iter_next(iter, "(&sb)", &domain, &route_only))
			g_string_append_printf(line, " %s%s", route_only ? "~" : "", domain);
	} else if (strcmp(method, "SetLinkDefaultRoute") == 0) {
		gboolean on;
		g_variant_get(params, "(ib)", &ifindex, &on);
		g_string_append_printf(line, " %d %s", ifindex, on ? "yes" : "no");
	} else {
		g_variant_get(params, "(i)", &ifindex);
		g_string_append_printf(line, " %d", ifindex);
	}
	if (refuse && strcmp(method, "SetLinkDNS") == 0) {
		g_string_append(line, " refused");
		g_dbus_method_invocation_return_dbus_error(
			inv, "org.freedesktop.DBus.Error.AccessDenied", "fake-resolved --refuse");
	} else {
		g_dbus_method_invocation_return_value(inv, NULL);
	}
	fprintf(record, "%s\n", line->str);
	fflush(record);
}

static void on_acquired(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	(void)conn, (void)name, (void)user_data;
	fprintf(record, "ready\n");
	fflush(record);
}

static void on_lost(GDBusConnection *conn, const gchar *name, gpointer user_data)
{
	(void)conn, (void)user_data;
	fprintf(stderr, "fake-resolved: cannot own %s\n", name);
	exit(1);
}

int main(int argc, char **argv)
{
	g_autofree gchar *address = NULL, *record_path = NULL;
	g_autoptr(GError) error = NULL;
	GOptionEntry entries[] = {
		{ "address", 0, 0, G_OPTION_ARG_STRING, &address, "the bus", "ADDRESS" },
		{ "record", 0, 0, G_OPTION_ARG_FILENAME, &record_path, "calls go here", "FILE" },
		{ "refuse", 0, 0, G_OPTION_ARG_NONE, &refuse, "SetLinkDNS: AccessDenied", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- a fake systemd-resolved");

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error) || !address || !record_path) {
		fprintf(stderr, "fake-resolved: %s\n",
			error ? error->message : "--address and --record are needed");
		return 2;
	}
	record = fopen(record_path, "a");
	if (!record) {
		perror(record_path);
		return 1;
	}
	GDBusConnection *conn = g_dbus_connection_new_for_address_sync(
		address,
		G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
			G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
		NULL, NULL, &error);
	if (!conn) {
		fprintf(stderr, "fake-resolved: %s\n", error->message);
		return 1;
	}
	GDBusNodeInfo *node = g_dbus_node_info_new_for_xml(introspection, &error);
	static const GDBusInterfaceVTable vtable = { .method_call = on_call };
	if (!node ||
	    !g_dbus_connection_register_object(conn, "/org/freedesktop/resolve1",
					       node->interfaces[0], &vtable, NULL, NULL, &error)) {
		fprintf(stderr, "fake-resolved: %s\n", error->message);
		return 1;
	}
	g_bus_own_name_on_connection(conn, "org.freedesktop.resolve1",
				     G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE, on_acquired, on_lost,
				     NULL, NULL);
	g_main_loop_run(g_main_loop_new(NULL, FALSE));
	return 0;
}
