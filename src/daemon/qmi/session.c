/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"
#include "log.h"
#include "qmi-modem.h"
#include "rtnl.h"
#include "session.h"

#define WDS_TIMEOUT_SECONDS	  10
#define START_NETWORK_TIMEOUT	  45 /* the network may take long to answer an attach */
#define SESSION_RETRY_MIN_SECONDS 1.0
#define SESSION_RETRY_MAX_SECONDS 60.0
/* A refusal that retrying soon cannot change (below): start slow, never storm. */
#define SESSION_REFUSED_MIN_SECONDS 30.0
#define SESSION_REFUSED_MAX_SECONDS 600.0
/* Packet data handle for "whatever this client has" (Stop Network). */
#define SESSION_HANDLE_ANY 0xffffffffu

static unsigned stops_pending;

unsigned session_stops_pending(void)
{
	return stops_pending;
}

const char *session_state_to_string(enum session_state state)
{
	switch (state) {
	case SESSION_STATE_DISABLED:
		return "disabled";
	case SESSION_STATE_WAITING:
		return "waiting";
	case SESSION_STATE_CONNECTING:
		return "connecting";
	case SESSION_STATE_CONNECTED:
		return "connected";
	case SESSION_STATE_DISCONNECTING:
		return "disconnecting";
	case SESSION_STATE_DISCONNECTED:
		return "disconnected";
	case SESSION_STATE_FAILED:
		return "failed";
	}
	return "unknown";
}

static const char *family_name(const struct session_family *f)
{
	return f->family == AF_INET ? "IPv4" : "IPv6";
}

static void session_set_state(struct session *s, enum session_state state)
{
	if (s->state == state)
		return;
	s->state = state;
	log_info("mux %u (%s): session %s", s->cfg.id, mux_netdev(s->mux)->name,
		 session_state_to_string(state));
	if (s->cb.on_state)
		s->cb.on_state(s->userdata, s);
}

static void session_set_error(struct session *s, const struct session_family *f, const char *what,
			      const char *why)
{
	snprintf(s->last_error, sizeof(s->last_error), "%s%s%s: %s", f ? family_name(f) : "",
		 f ? " " : "", what, why);
	log_warning(0, "mux %u (%s): %s", s->cfg.id, mux_netdev(s->mux)->name, s->last_error);
}

double session_retry_in(const struct session *s)
{
	if (!ev_is_active(&s->retry))
		return -1;
	return ev_timer_remaining(s->loop, (ev_timer *)&s->retry);
}

/* ---- device configuration from the network's settings ----------------------------- */

static bool prefix_equal(const struct config_prefix *a, const struct config_prefix *b)
{
	if (a->family != b->family || a->prefixlen != b->prefixlen)
		return false;
	size_t n = a->family == AF_INET ? sizeof(a->addr.v4) : sizeof(a->addr.v6);
	return a->family == 0 || memcmp(&a->addr, &b->addr, n) == 0;
}

/* The network's DNS servers, for systemd-resolved or resolvconf (dns.h). */
static void session_apply_dns(struct session *s, int ifindex)
{
	struct config_prefix servers[DNS_MAX_SERVERS];
	unsigned n = 0;

	for (unsigned i = 0; i < s->n_fam; i++)
		for (unsigned j = 0; j < 2 && s->fam[i].handle && s->fam[i].settings.valid; j++)
			if (s->fam[i].settings.dns[j].family && n < DNS_MAX_SERVERS)
				servers[n++] = s->fam[i].settings.dns[j];
	dns_link_set(ifindex, mux_netdev(s->mux)->name, servers, n, s->cfg.default_route);
}

static void session_apply(struct session *s)
{
	struct rtnl *rtnl = s->rtnl;
	int ifindex = mux_netdev(s->mux)->ifindex;
	char text[INET6_ADDRSTRLEN];
	uint32_t mtu = s->cfg.mtu;
	int r;

	if (s->cfg.client_managed) {
		/* The client puts the settings on the device; status shows what it was given. */
		for (unsigned i = 0; i < s->n_fam; i++)
			if (s->fam[i].handle && s->fam[i].settings.valid)
				s->fam[i].applied = s->fam[i].settings;
		return;
	}

	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		if (!f->handle || !f->settings.valid)
			continue;
		if (f->settings.mtu && f->settings.mtu < mtu)
			mtu = f->settings.mtu;
		if (f->applied.valid && prefix_equal(&f->applied.address, &f->settings.address))
			continue;
		/* A reconnect may bring a new address: the old one must not linger. */
		if (f->applied.valid)
			rtnl_addr_del(rtnl, ifindex, &f->applied.address);
		inet_ntop(f->family, &f->settings.address.addr, text, sizeof(text));
		r = rtnl_addr_add(rtnl, ifindex, &f->settings.address);
		if (r < 0) {
			log_err(r, "mux %u (%s): cannot add %s address %s/%u", s->cfg.id,
				mux_netdev(s->mux)->name, family_name(f), text,
				f->settings.address.prefixlen);
			continue;
		}
		log_info("mux %u (%s): %s address %s/%u", s->cfg.id, mux_netdev(s->mux)->name,
			 family_name(f), text, f->settings.address.prefixlen);
		f->applied = f->settings;
		if (s->cfg.default_route) {
			struct config_prefix any = { .family = f->family };
			r = rtnl_route_add(rtnl, ifindex, &any, s->cfg.route_metric);
			if (r < 0)
				log_err(r, "mux %u (%s): cannot add %s default route", s->cfg.id,
					mux_netdev(s->mux)->name, family_name(f));
		}
	}
	session_apply_dns(s, ifindex);
	if (mtu != s->cfg.mtu) {
		r = rtnl_link_set(rtnl, ifindex, mtu, true,
				  mux_netdev(s->mux)->kind == NETDEV_KIND_TAP_XDP);
		if (r < 0)
			log_warning(r, "mux %u (%s): cannot set MTU %u", s->cfg.id,
				    mux_netdev(s->mux)->name, mtu);
	}
}

/* ---- connect: per family allocate, bind, set family, start, get settings ------------- */

static void session_connect_family(struct session *s);
static void session_schedule_retry(struct session *s);

static void session_family_release(struct session *s, struct session_family *f, bool tell_modem)
{
	if (!f->client)
		return;
	if (f->indication_id)
		g_signal_handler_disconnect(f->client, f->indication_id);
	f->indication_id = 0;
	if (tell_modem && s->device)
		qmi_device_release_client(s->device, QMI_CLIENT(f->client),
					  QMI_DEVICE_RELEASE_CLIENT_FLAGS_RELEASE_CID, 1, NULL,
					  NULL, NULL);
	g_clear_object(&f->client);
	f->handle = 0;
}

/* The current family's attempt ended (connected or not): go on with the next one. */
static void session_family_done(struct session *s)
{
	s->step_family++;
	if (s->step_family < s->n_fam) {
		session_connect_family(s);
		return;
	}
	bool any = false, all = true;
	for (unsigned i = 0; i < s->n_fam; i++) {
		any |= s->fam[i].handle != 0;
		all &= s->fam[i].handle != 0;
	}
	if (all)
		s->last_error[0] = '\0';
	if (any)
		s->refused = false; /* a later drop is retried at the usual pace */
	if (!any) {
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	s->attempts = 0;
	session_apply(s);
	datapath_mux_set_link(s->dp, s->mux, true);
	session_set_state(s, SESSION_STATE_CONNECTED);
}

static void session_family_failed(struct session *s, struct session_family *f, const char *what,
				  const char *why)
{
	session_set_error(s, f, what, why);
	session_family_release(s, f, true);
	session_family_done(s);
}

static void prefix_from_v4(struct config_prefix *p, guint32 host_order, uint8_t len)
{
	p->family = AF_INET;
	p->addr.v4.s_addr = htonl(host_order);
	p->prefixlen = len;
}

static void prefix_from_v6(struct config_prefix *p, GArray *words, uint8_t len)
{
	if (!words || words->len != 8)
		return;
	p->family = AF_INET6;
	for (unsigned i = 0; i < 8; i++) {
		guint16 w = g_array_index(words, guint16, i);
		p->addr.v6.s6_addr[2 * i] = w >> 8;
		p->addr.v6.s6_addr[2 * i + 1] = w & 0xff;
	}
	p->prefixlen = len;
}

static void get_settings_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsGetCurrentSettingsOutput) out =
		qmi_client_wds_get_current_settings_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;

	if (qmi_step_cancelled(error))
		return;
	struct session_family *f = &s->fam[s->step_family];
	if (!out || !qmi_message_wds_get_current_settings_output_get_result(out, &error)) {
		session_family_failed(s, f, "get current settings", error->message);
		return;
	}
	struct session_settings st = { 0 };
	guint32 v4, mask, mtu;
	GArray *v6 = NULL;
	guint8 len;

	if (f->family == AF_INET) {
		if (qmi_message_wds_get_current_settings_output_get_ipv4_address(out, &v4, NULL)) {
			uint8_t plen = 32;
			if (qmi_message_wds_get_current_settings_output_get_ipv4_gateway_subnet_mask(
				    out, &mask, NULL))
				plen = __builtin_popcount(mask);
			prefix_from_v4(&st.address, v4, plen);
			st.valid = true;
		}
		if (qmi_message_wds_get_current_settings_output_get_ipv4_gateway_address(out, &v4,
											 NULL))
			prefix_from_v4(&st.gateway, v4, 32);
		if (qmi_message_wds_get_current_settings_output_get_primary_ipv4_dns_address(
			    out, &v4, NULL))
			prefix_from_v4(&st.dns[0], v4, 32);
		if (qmi_message_wds_get_current_settings_output_get_secondary_ipv4_dns_address(
			    out, &v4, NULL))
			prefix_from_v4(&st.dns[1], v4, 32);
	} else {
		if (qmi_message_wds_get_current_settings_output_get_ipv6_address(out, &v6, &len,
										 NULL)) {
			prefix_from_v6(&st.address, v6, len);
			st.valid = st.address.family == AF_INET6;
		}
		if (qmi_message_wds_get_current_settings_output_get_ipv6_gateway_address(
			    out, &v6, &len, NULL))
			prefix_from_v6(&st.gateway, v6, 128);
		if (qmi_message_wds_get_current_settings_output_get_ipv6_primary_dns_address(
			    out, &v6, NULL))
			prefix_from_v6(&st.dns[0], v6, 128);
		if (qmi_message_wds_get_current_settings_output_get_ipv6_secondary_dns_address(
			    out, &v6, NULL))
			prefix_from_v6(&st.dns[1], v6, 128);
	}
	if (qmi_message_wds_get_current_settings_output_get_mtu(out, &mtu, NULL))
		st.mtu = mtu;
	if (!st.valid) {
		session_family_failed(s, f, "get current settings", "no address assigned");
		return;
	}
	f->settings = st;
	session_family_done(s);
}

static void session_get_settings(struct session *s, struct session_family *f)
{
	g_autoptr(QmiMessageWdsGetCurrentSettingsInput) in =
		qmi_message_wds_get_current_settings_input_new();

	qmi_message_wds_get_current_settings_input_set_requested_settings(
		in,
		QMI_WDS_REQUESTED_SETTINGS_DNS_ADDRESS | QMI_WDS_REQUESTED_SETTINGS_IP_ADDRESS |
			QMI_WDS_REQUESTED_SETTINGS_GATEWAY_INFO | QMI_WDS_REQUESTED_SETTINGS_MTU |
			QMI_WDS_REQUESTED_SETTINGS_IP_FAMILY,
		NULL);
	qmi_client_wds_get_current_settings(f->client, in, WDS_TIMEOUT_SECONDS, s->cancellable,
					    get_settings_ready, s);
}

static void note_end(struct session *s, bool dropped, gboolean have_verbose,
		     QmiWdsVerboseCallEndReasonType vtype, gint16 vreason, gboolean have_cer,
		     QmiWdsCallEndReason cer)
{
	s->last_end = (struct session_end){ .have_verbose = have_verbose,
					    .verbose_type = have_verbose ? vtype : 0,
					    .verbose_reason = have_verbose ? vreason : 0,
					    .have_reason = have_cer,
					    .reason = have_cer ? cer : 0,
					    .dropped = dropped };
}

static void call_end_text(char *buf, size_t len, gboolean have_verbose,
			  QmiWdsVerboseCallEndReasonType vtype, gint16 vreason, gboolean have_cer,
			  QmiWdsCallEndReason cer)
{
	if (have_verbose) {
		const char *t = qmi_wds_verbose_call_end_reason_get_string(vtype, vreason);
		snprintf(buf, len, "%s (%s reason %d)", t ? t : "unknown",
			 qmi_wds_verbose_call_end_reason_type_get_string(vtype), vreason);
	} else if (have_cer) {
		const char *t = qmi_wds_call_end_reason_get_string(cer);
		snprintf(buf, len, "%s (call end reason %u)", t ? t : "unknown", cer);
	} else {
		snprintf(buf, len, "no reason given");
	}
}

/*
 * 3GPP refusals (TS 24.301 ESM causes) that no retry within seconds changes: the APN, the
 * credentials, or a second PDN to the same APN the network does not allow
 * (LongQT-sea/OpenStick-Builder#4). Retrying those quickly is a storm, not a recovery.
 */
static bool call_end_is_refusal(QmiWdsVerboseCallEndReasonType vtype, gint16 vreason)
{
	if (vtype != QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP)
		return false;
	switch (vreason) {
	case QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_OPERATOR_DETERMINED_BARRING:
	case QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN:
	case QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED:
	case QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_MULTIPLE_CONNECTION_TO_SAME_PDN_NOT_ALLOWED:
		return true;
	default:
		return false;
	}
}

static void packet_service_status(QmiClientWds *client,
				  QmiIndicationWdsPacketServiceStatusOutput *out,
				  gpointer user_data)
{
	struct session *s = user_data;
	QmiWdsConnectionStatus status;
	gboolean reconfig;
	struct session_family *f = NULL;

	for (unsigned i = 0; i < s->n_fam; i++)
		if (s->fam[i].client == client)
			f = &s->fam[i];
	if (!f || !qmi_indication_wds_packet_service_status_output_get_connection_status(
			  out, &status, &reconfig, NULL))
		return;
	if (status != QMI_WDS_CONNECTION_STATUS_DISCONNECTED || !f->handle)
		return;

	QmiWdsVerboseCallEndReasonType vtype;
	gint16 vreason;
	QmiWdsCallEndReason cer;
	char why[120];
	gboolean hv = qmi_indication_wds_packet_service_status_output_get_verbose_call_end_reason(
		out, &vtype, &vreason, NULL);
	gboolean hc = qmi_indication_wds_packet_service_status_output_get_call_end_reason(out, &cer,
											  NULL);
	call_end_text(why, sizeof(why), hv, vtype, vreason, hc, cer);
	note_end(s, true, hv, vtype, vreason, hc, cer);
	session_set_error(s, f, "disconnected by the network", why);
	f->handle = 0;

	for (unsigned i = 0; i < s->n_fam; i++)
		if (s->fam[i].handle)
			return; /* the other family still carries traffic */
	/* Whole session down: no carrier, configuration kept for the reconnect. */
	datapath_mux_set_link(s->dp, s->mux, false);
	for (unsigned i = 0; i < s->n_fam; i++)
		session_family_release(s, &s->fam[i], true);
	session_set_state(s, SESSION_STATE_DISCONNECTED);
	session_schedule_retry(s);
}

static void start_network_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsStartNetworkOutput) out =
		qmi_client_wds_start_network_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;
	guint32 handle;

	if (qmi_step_cancelled(error))
		return;
	struct session_family *f = &s->fam[s->step_family];
	if (!out || !qmi_message_wds_start_network_output_get_result(out, &error)) {
		if (g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_NO_EFFECT)) {
			/* Already connected on this client: real firmware says NO_EFFECT with
			 * handle 0 (ModemManager 0d53df68). The session is up; stop it later
			 * with the "any" handle. */
			log_info("mux %u (%s): %s session was already up (no effect)", s->cfg.id,
				 mux_netdev(s->mux)->name, family_name(f));
			f->handle = SESSION_HANDLE_ANY;
			f->indication_id = g_signal_connect(f->client, "packet-service-status",
							    G_CALLBACK(packet_service_status), s);
			session_get_settings(s, f);
			return;
		}
		/* Set only when the modem sent them; hv/hc say which, but the values are passed on. */
		QmiWdsVerboseCallEndReasonType vtype = 0;
		gint16 vreason = 0;
		QmiWdsCallEndReason cer = 0;
		char why[120];
		gboolean hv =
			out && qmi_message_wds_start_network_output_get_verbose_call_end_reason(
				       out, &vtype, &vreason, NULL);
		gboolean hc = out && qmi_message_wds_start_network_output_get_call_end_reason(
					     out, &cer, NULL);
		note_end(s, false, hv, vtype, vreason, hc, cer);
		if (hv || hc)
			call_end_text(why, sizeof(why), hv, vtype, vreason, hc, cer);
		else
			snprintf(why, sizeof(why), "%s", error->message);
		if (hv && call_end_is_refusal(vtype, vreason))
			s->refused = true;
		session_family_failed(s, f, "start network", why);
		return;
	}
	if (!qmi_message_wds_start_network_output_get_packet_data_handle(out, &handle, NULL)) {
		session_family_failed(s, f, "start network", "no packet data handle");
		return;
	}
	f->handle = handle;
	f->indication_id = g_signal_connect(f->client, "packet-service-status",
					    G_CALLBACK(packet_service_status), s);
	session_get_settings(s, f);
}

static QmiWdsAuthentication auth_from_config(const char *allowed)
{
	QmiWdsAuthentication auth = QMI_WDS_AUTHENTICATION_NONE;

	if (strstr(allowed, "pap"))
		auth |= QMI_WDS_AUTHENTICATION_PAP;
	if (strstr(allowed, "chap")) /* also matches mschapv2: CHAP is the closest QMI offers */
		auth |= QMI_WDS_AUTHENTICATION_CHAP;
	return auth;
}

static void session_start_network(struct session *s, struct session_family *f)
{
	g_autoptr(QmiMessageWdsStartNetworkInput) in = qmi_message_wds_start_network_input_new();

	qmi_message_wds_start_network_input_set_apn(in, s->cfg.apn, NULL);
	qmi_message_wds_start_network_input_set_ip_family_preference(
		in, f->family == AF_INET ? QMI_WDS_IP_FAMILY_IPV4 : QMI_WDS_IP_FAMILY_IPV6, NULL);
	if (s->cfg.user[0])
		qmi_message_wds_start_network_input_set_username(in, s->cfg.user, NULL);
	if (s->cfg.password[0])
		qmi_message_wds_start_network_input_set_password(in, s->cfg.password, NULL);
	if (s->cfg.allowed_auth[0])
		qmi_message_wds_start_network_input_set_authentication_preference(
			in, auth_from_config(s->cfg.allowed_auth), NULL);
	qmi_client_wds_start_network(f->client, in, START_NETWORK_TIMEOUT, s->cancellable,
				     start_network_ready, s);
}

static void set_ip_family_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsSetIpFamilyOutput) out =
		qmi_client_wds_set_ip_family_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;

	if (qmi_step_cancelled(error))
		return;
	struct session_family *f = &s->fam[s->step_family];
	if (!out || !qmi_message_wds_set_ip_family_output_get_result(out, &error)) {
		session_family_failed(s, f, "set IP family", error->message);
		return;
	}
	session_start_network(s, f);
}

static void bind_mux_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsBindMuxDataPortOutput) out =
		qmi_client_wds_bind_mux_data_port_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;

	if (qmi_step_cancelled(error))
		return;
	struct session_family *f = &s->fam[s->step_family];
	if (!out || !qmi_message_wds_bind_mux_data_port_output_get_result(out, &error)) {
		session_family_failed(s, f, "bind mux data port", error->message);
		return;
	}
	g_autoptr(QmiMessageWdsSetIpFamilyInput) in = qmi_message_wds_set_ip_family_input_new();
	qmi_message_wds_set_ip_family_input_set_preference(
		in, f->family == AF_INET ? QMI_WDS_IP_FAMILY_IPV4 : QMI_WDS_IP_FAMILY_IPV6, NULL);
	qmi_client_wds_set_ip_family(f->client, in, WDS_TIMEOUT_SECONDS, s->cancellable,
				     set_ip_family_ready, s);
}

static void allocate_wds_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	QmiClient *client = qmi_device_allocate_client_finish(QMI_DEVICE(src), res, &error);
	struct session *s = user_data;

	if (qmi_step_cancelled(error)) {
		g_clear_object(&client);
		return;
	}
	struct session_family *f = &s->fam[s->step_family];
	if (!client) {
		session_family_failed(s, f, "allocate WDS client", error->message);
		return;
	}
	f->client = QMI_CLIENT_WDS(client);

	g_autoptr(QmiMessageWdsBindMuxDataPortInput) in =
		qmi_message_wds_bind_mux_data_port_input_new();
	/* The data interface of a USB modem, its number from the descriptor (§2.3). A bind to
	 * another interface binds nothing that carries our data. */
	if (s->data_interface >= 0)
		qmi_message_wds_bind_mux_data_port_input_set_endpoint_info(
			in, QMI_DATA_ENDPOINT_TYPE_HSUSB, (guint32)s->data_interface, NULL);
	qmi_message_wds_bind_mux_data_port_input_set_mux_id(in, s->cfg.id, NULL);
	qmi_message_wds_bind_mux_data_port_input_set_client_type(in, QMI_WDS_CLIENT_TYPE_TETHERED,
								 NULL);
	qmi_client_wds_bind_mux_data_port(f->client, in, WDS_TIMEOUT_SECONDS, s->cancellable,
					  bind_mux_ready, s);
}

static void session_connect_family(struct session *s)
{
	qmi_device_allocate_client(s->device, QMI_SERVICE_WDS, QMI_CID_NONE, WDS_TIMEOUT_SECONDS,
				   s->cancellable, allocate_wds_ready, s);
}

static void session_connect(struct session *s)
{
	if (!s->device || !s->cfg.autoconnect)
		return;
	if (s->cancellable)
		g_cancellable_cancel(s->cancellable);
	g_clear_object(&s->cancellable);
	s->cancellable = g_cancellable_new();
	s->step_family = 0;
	s->refused = false; /* until a family of this attempt is refused */
	session_set_state(s, SESSION_STATE_CONNECTING);
	session_connect_family(s);
}

static void session_on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	session_connect(w->data);
}

static void session_schedule_retry(struct session *s)
{
	if (s->cfg.client_managed)
		return; /* its client decides whether and when to connect again */
	double base = s->refused ? SESSION_REFUSED_MIN_SECONDS : SESSION_RETRY_MIN_SECONDS;
	double max = s->refused ? SESSION_REFUSED_MAX_SECONDS : SESSION_RETRY_MAX_SECONDS;
	double delay = base * (1u << (s->attempts < 6 ? s->attempts : 6));
	if (delay > max)
		delay = max;
	s->attempts++;
	ev_timer_stop(s->loop, &s->retry);
	ev_timer_set(&s->retry, delay, 0.);
	ev_timer_start(s->loop, &s->retry);
	log_info("mux %u (%s): reconnecting in %.0f s", s->cfg.id, mux_netdev(s->mux)->name, delay);
}

/* ---- modem events ------------------------------------------------------------------ */

void session_modem_ready(struct session *s, QmiDevice *device, int data_interface)
{
	g_set_object(&s->device, device);
	s->data_interface = data_interface;
	s->attempts = 0;
	if (!s->cfg.autoconnect) {
		session_set_state(s, SESSION_STATE_DISABLED);
		return;
	}
	session_connect(s);
}

void session_modem_lost(struct session *s)
{
	if (s->cancellable)
		g_cancellable_cancel(s->cancellable);
	g_clear_object(&s->cancellable);
	ev_timer_stop(s->loop, &s->retry);
	/* The client ids died with the modem: nothing to release. */
	for (unsigned i = 0; i < s->n_fam; i++)
		session_family_release(s, &s->fam[i], false);
	g_clear_object(&s->device);
	datapath_mux_set_link(s->dp, s->mux, false);
	session_set_state(s, s->cfg.autoconnect ? SESSION_STATE_WAITING : SESSION_STATE_DISABLED);
}

/* ---- life cycle --------------------------------------------------------------------- */

int session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		const struct config_mux *cfg, const struct session_callbacks *cb, void *userdata,
		struct session **ret)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->rtnl = rtnl;
	s->dp = dp;
	s->mux = mux;
	s->cfg = *cfg;
	if (cb)
		s->cb = *cb;
	s->userdata = userdata;
	s->data_interface = -1;
	s->state = cfg->autoconnect ? SESSION_STATE_WAITING : SESSION_STATE_DISABLED;
	if (cfg->ip_type != CONFIG_IP_TYPE_IPV6)
		s->fam[s->n_fam++].family = AF_INET;
	if (cfg->ip_type != CONFIG_IP_TYPE_IPV4)
		s->fam[s->n_fam++].family = AF_INET6;
	ev_timer_init(&s->retry, session_on_retry, 0., 0.);
	s->retry.data = s;
	*ret = s;
	return 0;
}

static void session_destroy(struct session *s)
{
	for (unsigned i = 0; i < s->n_fam; i++)
		session_family_release(s, &s->fam[i], true);
	g_clear_object(&s->device);
	g_clear_object(&s->cancellable);
	free(s);
	stops_pending--;
}

static void stop_network_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsStopNetworkOutput) out =
		qmi_client_wds_stop_network_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;

	if (out && !qmi_message_wds_stop_network_output_get_result(out, &error))
		log_debug("mux %u: stop network: %s", s->cfg.id, error->message);
	if (--s->pending_stops == 0)
		session_destroy(s);
}

void session_free_async(struct session *s)
{
	if (!s)
		return;
	if (s->cancellable)
		g_cancellable_cancel(s->cancellable);
	g_clear_object(&s->cancellable);
	ev_timer_stop(s->loop, &s->retry);
	s->cb.on_state = NULL;
	if (!s->cfg.client_managed)
		dns_link_clear(mux_netdev(s->mux)->ifindex);
	stops_pending++;
	s->state = SESSION_STATE_DISCONNECTING;
	s->pending_stops = 0;
	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		if (!f->client || !f->handle || !s->device)
			continue;
		if (f->indication_id)
			g_signal_handler_disconnect(f->client, f->indication_id);
		f->indication_id = 0;
		g_autoptr(QmiMessageWdsStopNetworkInput) in =
			qmi_message_wds_stop_network_input_new();
		qmi_message_wds_stop_network_input_set_packet_data_handle(in, f->handle, NULL);
		s->pending_stops++;
		qmi_client_wds_stop_network(f->client, in, 5, NULL, stop_network_ready, s);
	}
	if (s->pending_stops == 0)
		session_destroy(s);
}
