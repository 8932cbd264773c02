/* SPDX-License-Identifier: MIT */
/*
 * The links' DNS servers to systemd-resolved, or to files (dns.h). Built without D-Bus
 * (QMAPD_DBUS=OFF), the resolved client is left out and every link gets a file.
 */
#include <errno.h>
#if QMAPD_DBUS
#include <gio/gio.h>
#endif
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dns-internal.h"
#include "log.h"

#define RESOLVE1_NAME	    "org.freedesktop.resolve1"
#define RESOLVE1_PATH	    "/org/freedesktop/resolve1"
#define RESOLVE1_MANAGER    "org.freedesktop.resolve1.Manager"
#define RESOLVE1_TIMEOUT_MS 10000

enum bus_state {
	BUS_NONE,	/* no address: files only */
	BUS_CONNECTING, /* links wait for the connection */
	BUS_READY,
	BUS_LOST, /* the bus went away: links wait until it is back */
};

/* Reconnection to a bus that went away: first after 250 ms, then doubling up to 2 s. */
#define DNS_RETRY_MIN_MS 250
#define DNS_RETRY_MAX_MS 2000

static struct {
	bool initialised;
	char *dir;
	enum bus_state bus;
	char *address;
#if QMAPD_DBUS
	GDBusConnection *conn;
	gulong closed_id;
	guint retry_id;
	unsigned retry_ms;
	GCancellable *cancellable;
#endif
	struct dns_link *links;
	bool warned; /* a failure was logged: later ones only counted */
	uint64_t resolved_links, resolved_failures, files, file_failures, reverts;
} dns;

static struct dns_link *link_find(int ifindex)
{
	for (struct dns_link *l = dns.links; l; l = l->next)
		if (l->ifindex == ifindex)
			return l;
	return NULL;
}

static void warn_once(int error, const char *what, const char *ifname, const char *why)
{
	if (dns.warned) {
		log_debug("dns: %s%s%s: %s", what, ifname ? " for " : "", ifname ?: "",
			  why ?: strerror(-error));
		return;
	}
	dns.warned = true;
	/* error is 0 when why says it all: systemd-resolved's own message. */
	log_full_errno_zerook(LOG_WARNING, error,
			      "dns: %s%s%s%s%s (further failures are only counted: qmapctl stats)",
			      what, ifname ? " for " : "", ifname ?: "", why ? ": " : "",
			      why ?: "");
}

static void link_write_file(struct dns_link *l)
{
	int r = dns_file_write(dns.dir, l);

	if (r < 0) {
		dns.file_failures++;
		warn_once(r, "cannot write the DNS file", l->ifname, NULL);
		return;
	}
	if (!l->file)
		log_info("dns: %s: DNS servers in %s/%s.conf", l->ifname, dns.dir, l->ifname);
	l->file = true;
	dns.files++;
}

#if QMAPD_DBUS
/* Whether resolved is simply not there: then the file is the answer, not a failure. */
static bool no_resolved(const GError *error)
{
	return g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
	       g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
	       g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD) ||
	       g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_OBJECT);
}

/* SetLinkDNS answered: resolved has the link, or the file must do. */
static void set_dns_done(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) ret =
		g_dbus_connection_call_finish(G_DBUS_CONNECTION(src), res, &error);
	struct dns_link *l;

	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		return;
	l = link_find(GPOINTER_TO_INT(user_data));
	if (!l)
		return; /* cleared meanwhile: RevertLink was sent after this call */
	if (ret) {
		if (l->file && dns_file_remove(dns.dir, l) == 0)
			l->file = false;
		dns.resolved_links++;
		log_info("dns: %s: DNS servers handed to systemd-resolved", l->ifname);
		return;
	}
	l->resolved = false;
	if (!no_resolved(error)) {
		dns.resolved_failures++;
		warn_once(0, "systemd-resolved refused the DNS servers", l->ifname, error->message);
	}
	link_write_file(l);
}

/* SetLinkDomains, SetLinkDefaultRoute: only failures matter, and only when resolved runs. */
static void call_done(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) ret =
		g_dbus_connection_call_finish(G_DBUS_CONNECTION(src), res, &error);

	if (ret || g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) || no_resolved(error))
		return;
	dns.resolved_failures++;
	warn_once(0, (const char *)user_data, NULL, error->message);
}

static void resolve1_call(const char *method, GVariant *args, GAsyncReadyCallback done,
			  gpointer user_data)
{
	/* NO_AUTO_START: "when it runs"; a disabled resolved is not started for us. */
	g_dbus_connection_call(dns.conn, RESOLVE1_NAME, RESOLVE1_PATH, RESOLVE1_MANAGER, method,
			       args, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, RESOLVE1_TIMEOUT_MS,
			       done ? dns.cancellable : NULL, done, user_data);
}

static void link_send_resolved(struct dns_link *l)
{
	GVariantBuilder servers, domains;

	g_variant_builder_init(&servers, G_VARIANT_TYPE("a(iay)"));
	for (unsigned i = 0; i < l->n_servers; i++) {
		const struct config_prefix *p = &l->servers[i];
		size_t n = p->family == AF_INET ? sizeof(p->addr.v4) : sizeof(p->addr.v6);
		g_variant_builder_add(
			&servers, "(i@ay)", p->family,
			g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, &p->addr, n, 1));
	}
	/* "~." routes every lookup without a better match here, as for the link with the
	 * default route; a mux with only specific routes gets no queries by default. */
	g_variant_builder_init(&domains, G_VARIANT_TYPE("a(sb)"));
	if (l->default_route)
		g_variant_builder_add(&domains, "(sb)", ".", TRUE);

	l->resolved = true;
	resolve1_call("SetLinkDNS", g_variant_new("(ia(iay))", l->ifindex, &servers), set_dns_done,
		      GINT_TO_POINTER(l->ifindex));
	resolve1_call("SetLinkDomains", g_variant_new("(ia(sb))", l->ifindex, &domains), call_done,
		      "systemd-resolved refused the search domains");
	resolve1_call("SetLinkDefaultRoute", g_variant_new("(ib)", l->ifindex, l->default_route),
		      call_done, "systemd-resolved refused the default-route setting");
}
#endif

static void link_push(struct dns_link *l)
{
	switch (dns.bus) {
	case BUS_CONNECTING:
	case BUS_LOST:
		break; /* on_connection() sends it */
	case BUS_READY:
#if QMAPD_DBUS
		link_send_resolved(l);
#endif
		break;
	case BUS_NONE:
		link_write_file(l);
		break;
	}
}

#if QMAPD_DBUS
static void connect_bus(void);

static gboolean on_retry(gpointer user_data)
{
	(void)user_data;
	dns.retry_id = 0;
	connect_bus();
	return G_SOURCE_REMOVE;
}

static void schedule_retry(void)
{
	dns.retry_ms = dns.retry_ms ? MIN(dns.retry_ms * 2, DNS_RETRY_MAX_MS) : DNS_RETRY_MIN_MS;
	dns.retry_id = g_timeout_add(dns.retry_ms, on_retry, NULL);
}

/* The bus went away: systemd-resolved keeps what it was given; links that change meanwhile
 * are sent when the bus is back. exit-on-close is off, so this is not the end of qmapd. */
static void on_closed(GDBusConnection *conn, gboolean remote_peer_vanished, GError *error,
		      gpointer user_data)
{
	(void)remote_peer_vanished;
	(void)user_data;
	log_info("dns: the bus went away%s%s; DNS servers go to systemd-resolved when it is back",
		 error ? ": " : "", error ? error->message : "");
	g_signal_handler_disconnect(conn, dns.closed_id);
	dns.closed_id = 0;
	g_clear_object(&dns.conn);
	dns.bus = BUS_LOST;
	dns.retry_ms = 0;
	schedule_retry();
}

static void on_connection(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	GDBusConnection *conn = g_dbus_connection_new_for_address_finish(res, &error);

	(void)src;
	(void)user_data;
	if (!conn) {
		if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
			return;
		if (dns.bus == BUS_LOST) {
			log_debug("dns: cannot connect to the bus again: %s", error->message);
			schedule_retry();
			return;
		}
		log_info("dns: no bus for systemd-resolved (%s): DNS servers go to %s",
			 error->message, dns.dir);
		dns.bus = BUS_NONE;
	} else {
		if (dns.bus == BUS_LOST)
			log_info("dns: the bus is back");
		dns.conn = conn;
		dns.bus = BUS_READY;
		dns.retry_ms = 0;
		g_dbus_connection_set_exit_on_close(conn, FALSE);
		dns.closed_id = g_signal_connect(conn, "closed", G_CALLBACK(on_closed), NULL);
	}
	for (struct dns_link *l = dns.links; l; l = l->next)
		link_push(l);
}

static void connect_bus(void)
{
	g_dbus_connection_new_for_address(dns.address,
					  G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
						  G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
					  NULL, dns.cancellable, on_connection, NULL);
}
#endif

int dns_init(const char *bus_address, const char *dir)
{
	memset(&dns, 0, sizeof(dns));
	dns.dir = strdup(dir);
	if (!dns.dir)
		return -ENOMEM;
	dns.initialised = true;
	dns.bus = BUS_NONE;
	if (!bus_address)
		return 0;
	dns.address = strdup(bus_address);
	if (!dns.address)
		return -ENOMEM;
#if QMAPD_DBUS
	dns.bus = BUS_CONNECTING;
	dns.cancellable = g_cancellable_new();
	connect_bus();
#endif
	return 0;
}

void dns_link_set(int ifindex, const char *ifname, const struct config_prefix *servers, unsigned n,
		  bool default_route)
{
	struct dns_link next = { .ifindex = ifindex, .default_route = default_route };
	struct dns_link *l;

	if (!dns.initialised || ifindex <= 0)
		return;
	snprintf(next.ifname, sizeof(next.ifname), "%s", ifname);
	for (unsigned i = 0; i < n && next.n_servers < DNS_MAX_SERVERS; i++)
		if (servers[i].family == AF_INET || servers[i].family == AF_INET6)
			next.servers[next.n_servers++] = servers[i];
	if (next.n_servers == 0)
		return; /* nothing to hand over; what an earlier session gave stays until the end */

	l = link_find(ifindex);
	if (l && l->n_servers == next.n_servers && l->default_route == default_route &&
	    strcmp(l->ifname, next.ifname) == 0 &&
	    memcmp(l->servers, next.servers, sizeof(next.servers[0]) * next.n_servers) == 0)
		return;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l) {
			warn_once(-ENOMEM, "out of memory", NULL, NULL);
			return;
		}
		l->next = dns.links;
		dns.links = l;
	}
	next.resolved = l->resolved;
	next.file = l->file;
	next.next = l->next;
	*l = next;
	link_push(l);
}

static void link_revert(struct dns_link *l)
{
#if QMAPD_DBUS
	if (l->resolved && dns.conn) {
		/* No reply wanted: also sent on the way out, when nobody would read it. */
		resolve1_call("RevertLink", g_variant_new("(i)", l->ifindex), NULL, NULL);
		dns.reverts++;
		log_info("dns: %s: reverted in systemd-resolved", l->ifname);
	}
#endif
	if (l->file) {
		int r = dns_file_remove(dns.dir, l);
		if (r < 0) {
			dns.file_failures++;
			warn_once(r, "cannot remove the DNS file", l->ifname, NULL);
		}
	}
}

void dns_link_clear(int ifindex)
{
	for (struct dns_link **p = &dns.links; *p; p = &(*p)->next) {
		struct dns_link *l = *p;
		if (l->ifindex != ifindex)
			continue;
		link_revert(l);
		*p = l->next;
		free(l);
		return;
	}
}

void dns_shutdown(void)
{
	if (!dns.initialised)
		return;
	while (dns.links)
		dns_link_clear(dns.links->ifindex);
#if QMAPD_DBUS
	if (dns.cancellable)
		g_cancellable_cancel(dns.cancellable);
	if (dns.retry_id)
		g_source_remove(dns.retry_id);
	if (dns.closed_id)
		g_signal_handler_disconnect(dns.conn, dns.closed_id);
	if (dns.conn)
		g_dbus_connection_flush_sync(dns.conn, NULL, NULL);
	g_clear_object(&dns.conn);
	g_clear_object(&dns.cancellable);
#endif
	free(dns.dir);
	dns.dir = NULL;
	free(dns.address);
	dns.address = NULL;
	dns.initialised = false;
}

void dns_print_stats(FILE *f, const char *prefix)
{
	if (!dns.initialised)
		return;
	fprintf(f,
		"%sdns: resolved-links=%" PRIu64 " resolved-failures=%" PRIu64 " files=%" PRIu64
		" file-failures=%" PRIu64 " reverts=%" PRIu64 "\n",
		prefix, dns.resolved_links, dns.resolved_failures, dns.files, dns.file_failures,
		dns.reverts);
}

json_t *dns_stats_json(void)
{
	if (!dns.initialised)
		return NULL;
	return json_pack("{sIsIsIsIsI}", "resolved-links", (json_int_t)dns.resolved_links,
			 "resolved-failures", (json_int_t)dns.resolved_failures, "files",
			 (json_int_t)dns.files, "file-failures", (json_int_t)dns.file_failures,
			 "reverts", (json_int_t)dns.reverts);
}
