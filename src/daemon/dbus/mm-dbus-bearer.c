/* SPDX-License-Identifier: MIT */
/*
 * Bearers: Bearer/N objects, one per mux. A bearer created over D-Bus gets a mux (the next
 * free id, the modem's default device name, client_managed) when it connects and loses it
 * when it disconnects; Connect answers once the session is up with its IP settings, or with
 * ModemManager's error for the modem's call-end reason.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "config.h"
#include "counters.h"
#include "datapath.h"
#include "log.h"
#include "manager.h"
#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "modem.h"
#include "session.h"

/*
 * libmm-glib's own a{sv} parsers and builder, exported by the library and used by
 * ModemManager and mmcli; its header shows them only to those (behind a macro that also pulls
 * in an uninstalled header). Declared here as libmm-glib 1.20 defines them.
 */
MMSimpleConnectProperties *mm_simple_connect_properties_new_from_dictionary(GVariant *dictionary,
									    GError **error);
MMBearerProperties *
mm_simple_connect_properties_get_bearer_properties(MMSimpleConnectProperties *self);
MMBearerProperties *mm_bearer_properties_new_from_dictionary(GVariant *dictionary, GError **error);
GVariant *mm_bearer_properties_get_dictionary(MMBearerProperties *self);

/* ---- settings ------------------------------------------------------------------------- */

static const char *auth_to_config(MMBearerAllowedAuth auth)
{
	if (auth == MM_BEARER_ALLOWED_AUTH_UNKNOWN || auth == MM_BEARER_ALLOWED_AUTH_NONE)
		return NULL;
	if ((auth & MM_BEARER_ALLOWED_AUTH_PAP) && (auth & MM_BEARER_ALLOWED_AUTH_CHAP))
		return "pap chap";
	if (auth & MM_BEARER_ALLOWED_AUTH_PAP)
		return "pap";
	if (auth & (MM_BEARER_ALLOWED_AUTH_CHAP | MM_BEARER_ALLOWED_AUTH_MSCHAPV2 |
		    MM_BEARER_ALLOWED_AUTH_MSCHAP))
		return "chap";
	return NULL;
}

static bool set_key(struct config_mux *cfg, const char *key, const char *value, GError **error)
{
	char err[256];

	if (config_mux_set(cfg, key, value, err, sizeof(err)) == 0)
		return true;
	g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS, "%s", err);
	return false;
}

/* The keys of Simple.Connect and CreateBearer (ModemManager's mm-bearer-properties.c,
 * mm-simple-connect-properties.c) with their D-Bus types. */
static const struct {
	const char *key;
	const char *type;
} key_types[] = {
	{ "apn", "s" },
	{ "ip-type", "u" },
	{ "allowed-auth", "u" },
	{ "user", "s" },
	{ "password", "s" },
	{ "allow-roaming", "b" },
	{ "rm-protocol", "u" },
	{ "number", "s" },
	{ "multiplex", "u" },
	{ "apn-type", "u" },
	{ "profile-id", "i" },
	{ "profile-name", "s" },
	{ "profile-enabled", "b" },
	{ "profile-source", "u" },
	{ "access-type-preference", "u" },
	{ "roaming-allowance", "u" },
	{ "pin", "s" },
	{ "operator-id", "s" },
};

static bool check_types(GVariant *dict, GError **error)
{
	GVariantIter it;
	const char *key;
	GVariant *value;

	g_variant_iter_init(&it, dict);
	while (g_variant_iter_loop(&it, "{&sv}", &key, &value))
		for (size_t i = 0; i < G_N_ELEMENTS(key_types); i++)
			if (strcmp(key, key_types[i].key) == 0 &&
			    !g_variant_is_of_type(value, G_VARIANT_TYPE(key_types[i].type))) {
				g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
					    "Invalid type for '%s': expected '%s', got '%s'", key,
					    key_types[i].type, g_variant_get_type_string(value));
				g_variant_unref(value);
				return false;
			}
	return true;
}

bool mmd_bearer_config(struct mmd_modem *mm, GVariant *dict, bool simple, struct config_mux *cfg,
		       bool *allow_roaming, GError **error)
{
	g_autoptr(MMBearerProperties) props = NULL;
	const char *ip = NULL;

	(void)mm;
	if (!g_variant_is_of_type(dict, G_VARIANT_TYPE("a{sv}"))) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			    "Expected a dictionary a{sv}");
		return false;
	}
	/* libmm-glib's parsers take each value's type on trust (a wrong one is a CRITICAL and
	 * an empty value): the types of ModemManager's introspection are checked first. */
	if (!check_types(dict, error))
		return false;
	/* ModemManager's own parsers: unknown keys are refused as it does. */
	if (simple) {
		g_autoptr(MMSimpleConnectProperties) sp =
			mm_simple_connect_properties_new_from_dictionary(dict, error);
		if (!sp)
			return false;
		props = mm_simple_connect_properties_get_bearer_properties(sp);
	} else {
		props = mm_bearer_properties_new_from_dictionary(dict, error);
	}
	if (!props)
		return false;

	config_mux_init_defaults(cfg, CONFIG_MUX_ID_MIN);
	/* NetworkManager's gsm.home-only; libmm-glib's default (absent) is allowed. */
	*allow_roaming = mm_bearer_properties_get_allow_roaming(props);
	cfg->client_managed = true;
	cfg->default_route = false;
	cfg->autoconnect = true;
	switch (mm_bearer_properties_get_ip_type(props)) {
	case MM_BEARER_IP_FAMILY_IPV4:
		ip = "ipv4";
		break;
	case MM_BEARER_IP_FAMILY_IPV6:
		ip = "ipv6";
		break;
	case MM_BEARER_IP_FAMILY_IPV4V6:
	case MM_BEARER_IP_FAMILY_NONE:
	case MM_BEARER_IP_FAMILY_ANY:
		ip = "ipv4v6";
		break;
	default:
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			    "Unsupported ip-type: qmapd connects ipv4, ipv6 or ipv4v6");
		return false;
	}
	if (!set_key(cfg, "ip-type", ip, error))
		return false;
	const char *apn = mm_bearer_properties_get_apn(props);
	if (apn && !set_key(cfg, "apn", apn, error))
		return false;
	const char *user = mm_bearer_properties_get_user(props);
	if (user && *user && !set_key(cfg, "user", user, error))
		return false;
	const char *password = mm_bearer_properties_get_password(props);
	if (password && *password && !set_key(cfg, "password", password, error))
		return false;
	const char *auth = auth_to_config(mm_bearer_properties_get_allowed_auth(props));
	if (auth && !set_key(cfg, "allowed-auth", auth, error))
		return false;
	if (mm_bearer_properties_get_multiplex(props) == MM_BEARER_MULTIPLEX_SUPPORT_NONE) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			    "qmapd connects every bearer as a multiplexed one (multiplex=none)");
		return false;
	}
	return true;
}

/* A full reference, not a floating one: libmm-glib's get_dictionary sinks what it built, so
 * the caller unrefs it (a setter of the skeleton only adds a reference of its own). */
static GVariant *properties_dict(const struct config_mux *cfg, bool allow_roaming)
{
	g_autoptr(MMBearerProperties) p = mm_bearer_properties_new();

	mm_bearer_properties_set_allow_roaming(p, allow_roaming);
	mm_bearer_properties_set_apn(p, cfg->apn);
	mm_bearer_properties_set_ip_type(
		p, cfg->ip_type == CONFIG_IP_TYPE_IPV4	 ? MM_BEARER_IP_FAMILY_IPV4
		   : cfg->ip_type == CONFIG_IP_TYPE_IPV6 ? MM_BEARER_IP_FAMILY_IPV6
							 : MM_BEARER_IP_FAMILY_IPV4V6);
	if (cfg->user[0])
		mm_bearer_properties_set_user(p, cfg->user);
	mm_bearer_properties_set_multiplex(p, MM_BEARER_MULTIPLEX_SUPPORT_REQUIRED);
	return mm_bearer_properties_get_dictionary(p);
}

/* ---- IP settings ---------------------------------------------------------------------- */

static void add_addr(GVariantBuilder *b, const char *key, const struct config_prefix *p)
{
	char text[INET6_ADDRSTRLEN];

	if (!p->family || !inet_ntop(p->family, &p->addr, text, sizeof(text)))
		return;
	g_variant_builder_add(b, "{sv}", key, g_variant_new_string(text));
}

static GVariant *ip_config(const struct session *s, int family)
{
	GVariantBuilder b;

	bool any = false;

	g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
	for (unsigned i = 0; s && s->state == SESSION_STATE_CONNECTED && i < s->n_fam; i++) {
		const struct session_family *f = &s->fam[i];
		const struct session_settings *st = &f->settings;
		if (f->family != family || !f->handle || !st->valid)
			continue;
		any = true;
		g_variant_builder_add(&b, "{sv}", "method",
				      g_variant_new_uint32(MM_BEARER_IP_METHOD_STATIC));
		add_addr(&b, "address", &st->address);
		g_variant_builder_add(&b, "{sv}", "prefix",
				      g_variant_new_uint32(st->address.prefixlen));
		add_addr(&b, "gateway", &st->gateway);
		add_addr(&b, "dns1", &st->dns[0]);
		add_addr(&b, "dns2", &st->dns[1]);
		if (st->mtu)
			g_variant_builder_add(&b, "{sv}", "mtu", g_variant_new_uint32(st->mtu));
	}
	/* Not connected on this family: ModemManager's empty config, a method and nothing. */
	if (!any)
		g_variant_builder_add(&b, "{sv}", "method",
				      g_variant_new_uint32(MM_BEARER_IP_METHOD_UNKNOWN));
	return g_variant_builder_end(&b);
}

/* ---- state ---------------------------------------------------------------------------- */

static GError *end_error(const struct session *s)
{
	GQuark domain;
	gint code;

	mmd_error_from_end(&s->last_end, &domain, &code);
	return g_error_new(domain, code, "%s", s->last_error[0] ? s->last_error : "failed");
}

static void set_connection_error(struct mmd_bearer *b, const GError *error)
{
	g_autofree char *name = error ? g_dbus_error_encode_gerror(error) : NULL;

	mm_gdbus_bearer_set_connection_error(
		b->iface, g_variant_new("(ss)", name ? name : "", error ? error->message : ""));
}

/* The pending Connect, if any, is answered from the session's state. */
static void finish_connect(struct mmd_bearer *b, const struct session *s, const char *state)
{
	struct mm_dbus *d = b->mm->bus;
	GDBusMethodInvocation *inv = b->connect;

	if (!inv)
		return;
	if (state && strcmp(state, "connected") == 0) {
		b->connect = NULL;
		if (b->connect_simple)
			mm_gdbus_modem_simple_complete_connect(b->mm->simple, inv, b->path);
		else
			mm_gdbus_bearer_complete_connect(b->iface, inv);
		return;
	}
	bool timed_out = g_get_monotonic_time() > b->connect_deadline;
	if (!timed_out && s && s->state != SESSION_STATE_FAILED &&
	    s->state != SESSION_STATE_DISCONNECTED)
		return; /* still connecting */
	g_autoptr(GError) error = s && !timed_out
					  ? end_error(s)
					  : g_error_new(MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
							"Connection attempt timed out after %d s",
							MMD_CONNECT_TIMEOUT_SECONDS);
	char err[256];
	b->connect = NULL;
	d->connect_failures++;
	b->failed_attempts++;
	set_connection_error(b, error);
	/* A failed start leaves no mux behind: the client decides what comes next. */
	mmd_bearer_disconnect(b, err, sizeof(err));
	log_info("dbus: %s: connect failed", b->path);
	mmd_return_error(d, inv, error);
}

void mmd_bearer_sync(struct mmd_bearer *b)
{
	struct modem *modem = b->mm->modem;
	const char *state = b->mux_id ? modem_mux_state(modem, b->mux_id) : NULL;
	const struct session *s = b->mux_id ? modem_mux_session(modem, b->mux_id) : NULL;
	const struct config_mux *cfg = b->mux_id ? modem_mux_config(modem, b->mux_id) : NULL;
	bool connected = state && strcmp(state, "connected") == 0;

	if (b->mux_id && !cfg) /* someone removed the mux (qmapctl mux del) */
		b->mux_id = 0;
	if (cfg && !b->from_dbus)
		b->cfg = *cfg;
	finish_connect(b, s, state);
	/* A failed connect removes its mux, and its session with it: look again. */
	state = b->mux_id ? modem_mux_state(modem, b->mux_id) : NULL;
	s = b->mux_id ? modem_mux_session(modem, b->mux_id) : NULL;
	connected = state && strcmp(state, "connected") == 0;
	/* A session that was up and is not: the network dropped it. */
	if (b->was_connected && !connected && s && s->last_end.dropped) {
		g_autoptr(GError) error = end_error(s);
		set_connection_error(b, error);
	}
	if (connected && !b->was_connected)
		set_connection_error(b, NULL);
	gint64 now = g_get_monotonic_time();
	if (connected && !b->was_connected)
		b->connected_since = now;
	else if (!connected && b->was_connected)
		b->connected_total += now - b->connected_since;
	b->was_connected = connected;

	MmGdbusBearer *i = b->iface;
	mm_gdbus_bearer_set_interface(i, b->mux_id ? modem_mux_interface(modem, b->mux_id) : "");
	mm_gdbus_bearer_set_connected(i, connected);
	mm_gdbus_bearer_set_ip4_config(i, ip_config(s, AF_INET));
	mm_gdbus_bearer_set_ip6_config(i, ip_config(s, AF_INET6));
	g_autoptr(GVariant) props = properties_dict(&b->cfg, b->allow_roaming);
	mm_gdbus_bearer_set_properties(i, props);

	GVariantBuilder st;
	g_variant_builder_init(&st, G_VARIANT_TYPE("a{sv}"));
	const struct mux_stats *ms = b->mux_id ? modem_mux_stats(modem, b->mux_id) : NULL;
	if (ms) {
		g_variant_builder_add(&st, "{sv}", "rx-bytes", g_variant_new_uint64(ms->rx_bytes));
		g_variant_builder_add(&st, "{sv}", "tx-bytes", g_variant_new_uint64(ms->tx_bytes));
	}
	/* Seconds connected now and in all; Connect calls and failures (D-Bus bearers). */
	gint64 current = connected ? now - b->connected_since : 0;
	g_variant_builder_add(&st, "{sv}", "duration",
			      g_variant_new_uint32((guint32)(current / G_USEC_PER_SEC)));
	g_variant_builder_add(
		&st, "{sv}", "total-duration",
		g_variant_new_uint32((guint32)((b->connected_total + current) / G_USEC_PER_SEC)));
	if (b->from_dbus) {
		g_variant_builder_add(&st, "{sv}", "attempts", g_variant_new_uint32(b->attempts));
		g_variant_builder_add(&st, "{sv}", "failed-attempts",
				      g_variant_new_uint32(b->failed_attempts));
	}
	mm_gdbus_bearer_set_stats(i, g_variant_builder_end(&st));
}

/* ---- connect and disconnect ----------------------------------------------------------- */

static unsigned free_mux_id(struct mmd_modem *mm)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		bool taken = modem_mux_config(mm->modem, id) != NULL;
		for (struct mmd_bearer *b = mm->bearers; b && !taken; b = b->next)
			taken = b->mux_id == id;
		if (!taken)
			return id;
	}
	return 0;
}

bool mmd_bearer_roaming_forbidden(const struct mmd_bearer *b)
{
	struct modem_view view;

	return b->from_dbus && !b->allow_roaming && modem_view(b->mm->modem, &view) &&
	       view.registration == MODEM_REGISTRATION_ROAMING;
}

void mmd_bearer_connect(struct mmd_bearer *b, GDBusMethodInvocation *inv, bool simple)
{
	struct mmd_modem *mm = b->mm;
	struct mm_dbus *d = mm->bus;
	char err[256];
	json_t *reply = NULL;
	int r;

	if (b->connect) {
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "%s is connecting already", b->path);
		return;
	}
	if (mm->disabled) { /* Simple.Connect enables first; Bearer.Connect does not */
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "The modem is disabled: enable it first");
		return;
	}
	if (mmd_sim_locked(mm)) { /* as Simple.Connect: SimPin / SimPuk, not a failed session */
		mmd_reject_locked(mm, inv);
		return;
	}
	if (mmd_bearer_roaming_forbidden(b)) {
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
			   "Not allowed to connect bearer in 3GPP network: 'Registered in roaming "
			   "network, and roaming not allowed'");
		return;
	}
	if (!b->from_dbus) {
		/* A mux of qmapd's configuration: qmapd connects it and keeps it connected. */
		const char *state = modem_mux_state(mm->modem, b->mux_id);
		if (state && strcmp(state, "connected") == 0) {
			if (simple)
				mm_gdbus_modem_simple_complete_connect(mm->simple, inv, b->path);
			else
				mm_gdbus_bearer_complete_connect(b->iface, inv);
			return;
		}
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "%s is mux %u of qmapd's configuration, which qmapd connects by itself "
			   "(now %s)",
			   b->path, b->mux_id, state ? state : "gone");
		return;
	}
	if (b->mux_id) {
		const char *state = modem_mux_state(mm->modem, b->mux_id);
		if (state && strcmp(state, "connected") == 0) {
			if (simple)
				mm_gdbus_modem_simple_complete_connect(mm->simple, inv, b->path);
			else
				mm_gdbus_bearer_complete_connect(b->iface, inv);
			return;
		}
		/* Dropped or failed before: a fresh session on a fresh mux. */
		mmd_bearer_disconnect(b, err, sizeof(err));
	}
	unsigned id = free_mux_id(mm);
	if (!id) {
		mmd_reject(d, inv, MM_CORE_ERROR, MM_CORE_ERROR_TOO_MANY,
			   "Every mux id of the modem is in use");
		return;
	}
	struct config_mux cfg = b->cfg;
	cfg.id = (uint8_t)id;
	/* The modem's default name for the id: qmap<N>, or <modem>.<N> (the manager's). */
	snprintf(cfg.interface, sizeof(cfg.interface), "qmap%u", id);
	cfg.interface_set = false;
	r = manager_mux_add(d->manager, modem_name(mm->modem), &cfg, &reply, err, sizeof(err));
	json_decref(reply);
	if (r < 0) {
		mmd_reject(d, inv, MM_CORE_ERROR,
			   r == -EEXIST ? MM_CORE_ERROR_EXISTS : MM_CORE_ERROR_FAILED,
			   "Cannot create mux %u: %s", id, err);
		return;
	}
	/* Recorded: a restart or a crash of qmapd brings this mux and bearer back. */
	(void)modem_mux_record_bearer(mm->modem, id, b->index, b->allow_roaming);
	d->connects++;
	b->attempts++;
	b->mux_id = id;
	b->connect = inv;
	b->connect_simple = simple;
	b->connect_deadline = g_get_monotonic_time() + MMD_CONNECT_TIMEOUT_SECONDS * G_USEC_PER_SEC;
	b->was_connected = false;
	log_info("dbus: %s: connecting on mux %u (%s), APN '%s'", b->path, id,
		 modem_mux_interface(mm->modem, id), b->cfg.apn);
	mmd_bearer_sync(b); /* the session may be up or failed already */
	mmd_schedule_sync(d);
}

int mmd_bearer_disconnect(struct mmd_bearer *b, char *err, size_t errlen)
{
	struct mmd_modem *mm = b->mm;
	json_t *reply = NULL;
	unsigned id = b->mux_id;
	int r;

	if (!b->from_dbus || !id)
		return 0;
	if (b->connect) {
		GDBusMethodInvocation *inv = b->connect;
		b->connect = NULL;
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
			   "Disconnected while connecting");
	}
	b->mux_id = 0;
	b->was_connected = false;
	r = manager_mux_del(mm->bus->manager, modem_name(mm->modem), id, &reply, err, errlen);
	json_decref(reply);
	if (r < 0 && r != -ENOENT && r != -ENODEV)
		return r;
	log_info("dbus: %s: disconnected (mux %u removed)", b->path, id);
	mmd_schedule_sync(mm->bus);
	return 0;
}

static gboolean handle_connect(MmGdbusBearer *iface, GDBusMethodInvocation *inv, gpointer user_data)
{
	struct mmd_bearer *b = user_data;

	(void)iface;
	b->mm->bus->calls++;
	mmd_bearer_connect(b, inv, false);
	return TRUE;
}

static gboolean handle_disconnect(MmGdbusBearer *iface, GDBusMethodInvocation *inv,
				  gpointer user_data)
{
	struct mmd_bearer *b = user_data;
	char err[256];

	b->mm->bus->calls++;
	if (!b->from_dbus) {
		mmd_reject(b->mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
			   "%s is mux %u of qmapd's configuration: qmapctl mux del stops it",
			   b->path, b->mux_id);
		return TRUE;
	}
	if (mmd_bearer_disconnect(b, err, sizeof(err)) < 0) {
		mmd_reject(b->mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "%s", err);
		return TRUE;
	}
	mmd_bearer_sync(b);
	mm_gdbus_bearer_complete_disconnect(iface, inv);
	return TRUE;
}

/* ---- life cycle ----------------------------------------------------------------------- */

struct mmd_bearer *mmd_bearer_find(struct mmd_modem *mm, const char *path)
{
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next)
		if (strcmp(b->path, path) == 0)
			return b;
	return NULL;
}

static bool index_used(const struct mm_dbus *d, unsigned index)
{
	for (const struct mmd_modem *mm = d->modems; mm; mm = mm->next)
		for (const struct mmd_bearer *b = mm->bearers; b; b = b->next)
			if (b->index == index)
				return true;
	return false;
}

struct mmd_bearer *mmd_bearer_new(struct mmd_modem *mm, bool from_dbus, unsigned mux_id,
				  const struct config_mux *cfg, int index)
{
	struct mmd_bearer *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->mm = mm;
	b->from_dbus = from_dbus;
	b->mux_id = mux_id;
	b->cfg = *cfg;
	b->allow_roaming = true;
	/* A new one skips the numbers of bearers a restart brought back (modem_mux_bearer()). */
	if (index < 0) {
		while (index_used(mm->bus, mm->bus->next_bearer_index))
			mm->bus->next_bearer_index++;
		index = (int)mm->bus->next_bearer_index++;
	}
	b->index = (unsigned)index;
	snprintf(b->path, sizeof(b->path), MMD_PATH "/Bearer/%u", b->index);
	b->iface = mm_gdbus_bearer_skeleton_new();
	MmGdbusBearer *i = b->iface;
	mm_gdbus_bearer_set_suspended(i, FALSE);
	mm_gdbus_bearer_set_multiplexed(i, TRUE);
	mm_gdbus_bearer_set_ip_timeout(i, 20);
	mm_gdbus_bearer_set_bearer_type(i, MM_BEARER_TYPE_DEFAULT);
	mm_gdbus_bearer_set_profile_id(i, MM_3GPP_PROFILE_ID_UNKNOWN);
	mm_gdbus_bearer_set_reload_stats_supported(i, FALSE);
	set_connection_error(b, NULL);
	g_signal_connect(i, "handle-connect", G_CALLBACK(handle_connect), b);
	g_signal_connect(i, "handle-disconnect", G_CALLBACK(handle_disconnect), b);
	mmd_answer_unsupported(mm->bus, i);
	mmd_auth_watch(mm->bus, i);
	mmd_bearer_sync(b);
	return b;
}

void mmd_bearer_export(struct mmd_bearer *b)
{
	g_autoptr(GError) error = NULL;
	GDBusConnection *conn = b->mm->bus->conn;

	if (b->exported || !conn)
		return;
	if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(b->iface), conn, b->path,
					      &error)) {
		log_error("dbus: cannot export %s: %s", b->path, error->message);
		return;
	}
	b->exported = true;
}

void mmd_bearer_unexport(struct mmd_bearer *b)
{
	if (!b->exported)
		return;
	g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(b->iface));
	b->exported = false;
}

void mmd_bearer_free(struct mmd_bearer *b, const char *why)
{
	if (!b)
		return;
	if (b->connect) {
		GDBusMethodInvocation *inv = b->connect;
		b->connect = NULL;
		mmd_reject(b->mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
			   "Bearer removed: %s", why);
	}
	if (b->exported)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(b->iface));
	g_signal_handlers_disconnect_by_data(b->iface, b);
	mmd_auth_unwatch(b->mm->bus, b->iface);
	g_clear_object(&b->iface);
	free(b);
}
