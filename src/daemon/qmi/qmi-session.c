/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log-mux.h"
#include "qmi-modem.h"
#include "qmi-state.h"
#include "rtnl.h"

#define WDS_TIMEOUT_SECONDS   10
#define START_NETWORK_TIMEOUT 45 /* the network may take long to answer an attach */
/* Packet data handle for "whatever this client has" (Stop Network). */
#define SESSION_HANDLE_ANY 0xffffffffu

/* QMI's own part of a session (session.h keeps only a pointer to it). */
struct qmi_session {
	QmiDevice *device;  /* borrowed from the modem while it is ready */
	int data_interface; /* bInterfaceNumber to bind the mux to; -1 unknown */
	GCancellable *cancellable;
	unsigned step_family; /* family being connected */
	bool kept; /* connected, kept over a reopen of the control channel: to take over */
	struct qmi_state_mux adopt; /* left by the qmapd before us: families to take over */
	struct qmi_session_family {
		QmiClientWds *client;
		gulong indication_id;
	} fam[2]; /* as the session's fam[] */
};

/* Allocated together: freeing the session frees its QMI part. */
struct qmi_session_block {
	struct session s;
	struct qmi_session q;
};

static struct qmi_session_family *qfam(struct session *s, const struct session_family *f)
{
	return &s->qmi->fam[f - s->fam];
}

/* ---- connect: per family allocate, bind, set family, start, get settings ------------- */

static void session_connect_family(struct session *s);

static unsigned state_index(const struct session_family *f)
{
	return f->family == AF_INET ? 0 : 1;
}

/* What the next qmapd needs to take this mux's connected families over (qmi-state.h). */
static void session_record(struct session *s)
{
	struct qmi_state_mux m = { 0 };
	bool any = false;

	if (!s->qmi->device)
		return;
	const char *link = qmi_device_get_path(s->qmi->device);
	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		if (!qfam(s, f)->client || !f->handle)
			continue;
		m.fam[state_index(f)] = (struct qmi_state_family){
			true, qmi_client_get_cid(QMI_CLIENT(qfam(s, f)->client)), f->handle
		};
		any = true;
	}
	if (!any) {
		qmi_state_remove_mux(link, s->cfg.id);
		return;
	}
	int r = qmi_state_write_mux(link, s->cfg.id, &m);
	if (r < 0)
		log_mux_warning_errno(NULL, s->cfg.id, mux_netdev(s->mux)->name, r,
				      "cannot record the session for a restart");
}

static void session_family_release(struct session *s, struct session_family *f, bool tell_modem)
{
	if (!qfam(s, f)->client)
		return;
	if (qfam(s, f)->indication_id)
		g_signal_handler_disconnect(qfam(s, f)->client, qfam(s, f)->indication_id);
	qfam(s, f)->indication_id = 0;
	if (tell_modem && s->qmi->device)
		qmi_modem_release_session_client(s->qmi->device, QMI_CLIENT(qfam(s, f)->client));
	g_clear_object(&qfam(s, f)->client);
	f->handle = 0;
	if (tell_modem)
		session_record(s); /* the others, or nothing left to take over */
}

/* The current family's attempt ended (connected or not): go on with the next one. */
static void session_family_done(struct session *s)
{
	s->qmi->step_family++;
	if (s->qmi->step_family < s->n_fam) {
		session_connect_family(s);
		return;
	}
	s->taking_over = false; /* each family taken over, or known down */
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
		datapath_mux_set_link(s->dp, s->mux, false); /* on if kept over a reopen */
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	s->attempts = 0;
	session_record(s);
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
	struct session_family *f = &s->fam[s->qmi->step_family];
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
	qmi_client_wds_get_current_settings(qfam(s, f)->client, in, WDS_TIMEOUT_SECONDS,
					    s->qmi->cancellable, get_settings_ready, s);
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
		if (s->qmi->fam[i].client == client)
			f = &s->fam[i];
	if (!f || !qmi_indication_wds_packet_service_status_output_get_connection_status(
			  out, &status, &reconfig, NULL))
		return;
	if (status != QMI_WDS_CONNECTION_STATUS_DISCONNECTED || !f->handle)
		return;

	QmiWdsVerboseCallEndReasonType vtype;
	gint16 vreason;
	QmiWdsCallEndReason cer;
	gboolean hv = qmi_indication_wds_packet_service_status_output_get_verbose_call_end_reason(
		out, &vtype, &vreason, NULL);
	gboolean hc = qmi_indication_wds_packet_service_status_output_get_call_end_reason(out, &cer,
											  NULL);
	qmi_map_end(hv, vtype, vreason, hc, cer, true, &s->last_end);
	session_set_error(s, f, "disconnected by the network",
			  s->last_end.text[0] ? s->last_end.text : "no reason given");
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
	struct session_family *f = &s->fam[s->qmi->step_family];
	if (!out || !qmi_message_wds_start_network_output_get_result(out, &error)) {
		if (g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_NO_EFFECT)) {
			/* Already connected on this client: real firmware says NO_EFFECT with
			 * handle 0 (ModemManager 0d53df68). The session is up; stop it later
			 * with the "any" handle. */
			log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
				     "%s session was already up (no effect)",
				     session_family_name(f));
			f->handle = SESSION_HANDLE_ANY;
			qfam(s, f)->indication_id =
				g_signal_connect(qfam(s, f)->client, "packet-service-status",
						 G_CALLBACK(packet_service_status), s);
			session_get_settings(s, f);
			return;
		}
		/* Set only when the modem sent them; hv/hc say which, but the values are passed on. */
		QmiWdsVerboseCallEndReasonType vtype = 0;
		gint16 vreason = 0;
		QmiWdsCallEndReason cer = 0;
		gboolean hv =
			out && qmi_message_wds_start_network_output_get_verbose_call_end_reason(
				       out, &vtype, &vreason, NULL);
		gboolean hc = out && qmi_message_wds_start_network_output_get_call_end_reason(
					     out, &cer, NULL);
		if (qmi_map_end(hv, vtype, vreason, hc, cer, false, &s->last_end))
			s->refused = true;
		session_family_failed(s, f, "start network",
				      s->last_end.text[0] ? s->last_end.text : error->message);
		return;
	}
	if (!qmi_message_wds_start_network_output_get_packet_data_handle(out, &handle, NULL)) {
		session_family_failed(s, f, "start network", "no packet data handle");
		return;
	}
	f->handle = handle;
	qfam(s, f)->indication_id = g_signal_connect(qfam(s, f)->client, "packet-service-status",
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
	qmi_client_wds_start_network(qfam(s, f)->client, in, START_NETWORK_TIMEOUT,
				     s->qmi->cancellable, start_network_ready, s);
}

static void set_ip_family_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsSetIpFamilyOutput) out =
		qmi_client_wds_set_ip_family_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;

	if (qmi_step_cancelled(error))
		return;
	struct session_family *f = &s->fam[s->qmi->step_family];
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
	struct session_family *f = &s->fam[s->qmi->step_family];
	if (!out || !qmi_message_wds_bind_mux_data_port_output_get_result(out, &error)) {
		session_family_failed(s, f, "bind mux data port", error->message);
		return;
	}
	g_autoptr(QmiMessageWdsSetIpFamilyInput) in = qmi_message_wds_set_ip_family_input_new();
	qmi_message_wds_set_ip_family_input_set_preference(
		in, f->family == AF_INET ? QMI_WDS_IP_FAMILY_IPV4 : QMI_WDS_IP_FAMILY_IPV6, NULL);
	qmi_client_wds_set_ip_family(qfam(s, f)->client, in, WDS_TIMEOUT_SECONDS,
				     s->qmi->cancellable, set_ip_family_ready, s);
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
	struct session_family *f = &s->fam[s->qmi->step_family];
	if (!client) {
		session_family_failed(s, f, "allocate WDS client", error->message);
		return;
	}
	qfam(s, f)->client = QMI_CLIENT_WDS(client);

	g_autoptr(QmiMessageWdsBindMuxDataPortInput) in =
		qmi_message_wds_bind_mux_data_port_input_new();
	/* The data interface of a USB modem, its number from the descriptor (§2.3). A bind to
	 * another interface binds nothing that carries our data. */
	if (s->qmi->data_interface >= 0)
		qmi_message_wds_bind_mux_data_port_input_set_endpoint_info(
			in, QMI_DATA_ENDPOINT_TYPE_HSUSB, (guint32)s->qmi->data_interface, NULL);
	qmi_message_wds_bind_mux_data_port_input_set_mux_id(in, s->cfg.id, NULL);
	qmi_message_wds_bind_mux_data_port_input_set_client_type(in, QMI_WDS_CLIENT_TYPE_TETHERED,
								 NULL);
	qmi_client_wds_bind_mux_data_port(qfam(s, f)->client, in, WDS_TIMEOUT_SECONDS,
					  s->qmi->cancellable, bind_mux_ready, s);
}

/* ---- adopt: a family the qmapd before us left connected (qmi-state.h) ---------------- */

static void adopt_status_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsGetPacketServiceStatusOutput) out =
		qmi_client_wds_get_packet_service_status_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;
	QmiWdsConnectionStatus status = QMI_WDS_CONNECTION_STATUS_UNKNOWN;

	if (qmi_step_cancelled(error))
		return;
	struct session_family *f = &s->fam[s->qmi->step_family];
	struct qmi_state_family *a = &s->qmi->adopt.fam[state_index(f)];
	if (out && qmi_message_wds_get_packet_service_status_output_get_result(out, &error))
		qmi_message_wds_get_packet_service_status_output_get_connection_status(out, &status,
										       NULL);
	if (status != QMI_WDS_CONNECTION_STATUS_CONNECTED) {
		/* Gone meanwhile (or the modem reset): give the id back, connect afresh. */
		log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
			     "%s session of the last run is gone (%s): connecting anew",
			     session_family_name(f),
			     error ? error->message : qmi_wds_connection_status_get_string(status));
		a->present = false;
		session_family_release(s, f, true);
		bool up = false; /* the other family, taken over already */
		for (unsigned i = 0; i < s->n_fam; i++)
			up |= s->fam[i].handle != 0;
		if (!up) { /* was kept connected over a reopen: it is not */
			datapath_mux_set_link(s->dp, s->mux, false);
			session_set_state(s, SESSION_STATE_CONNECTING);
		}
		session_connect_family(s);
		return;
	}
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
		     "%s session of the last run taken over (client %u, handle %u)",
		     session_family_name(f), a->cid, a->handle);
	f->handle = a->handle;
	a->present = false;
	/*
	 * The session carries traffic already, and after a restart the device still has its
	 * addresses: carrier on now rather than after Get Current Settings, one round trip
	 * less of the restart's gap.
	 */
	datapath_mux_set_link(s->dp, s->mux, true);
	qfam(s, f)->indication_id = g_signal_connect(qfam(s, f)->client, "packet-service-status",
						     G_CALLBACK(packet_service_status), s);
	session_get_settings(s, f);
}

static void adopt_client_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	QmiClient *client = qmi_device_allocate_client_finish(QMI_DEVICE(src), res, &error);
	struct session *s = user_data;

	if (qmi_step_cancelled(error)) {
		g_clear_object(&client);
		return;
	}
	struct session_family *f = &s->fam[s->qmi->step_family];
	if (!client) {
		s->qmi->adopt.fam[state_index(f)].present = false;
		session_connect_family(s);
		return;
	}
	qfam(s, f)->client = QMI_CLIENT_WDS(client);
	qmi_client_wds_get_packet_service_status(qfam(s, f)->client, NULL, WDS_TIMEOUT_SECONDS,
						 s->qmi->cancellable, adopt_status_ready, s);
}

static void session_connect_family(struct session *s)
{
	struct session_family *f = &s->fam[s->qmi->step_family];
	const struct qmi_state_family *a = &s->qmi->adopt.fam[state_index(f)];

	if (a->present) {
		/* The same client id, not a new one: libqmi sends nothing to the modem for it. */
		qmi_device_allocate_client(s->qmi->device, QMI_SERVICE_WDS, a->cid,
					   WDS_TIMEOUT_SECONDS, s->qmi->cancellable,
					   adopt_client_ready, s);
		return;
	}
	qmi_device_allocate_client(s->qmi->device, QMI_SERVICE_WDS, QMI_CID_NONE,
				   WDS_TIMEOUT_SECONDS, s->qmi->cancellable, allocate_wds_ready, s);
}

static void session_connect(struct session *s)
{
	if (!s->qmi->device || !s->cfg.autoconnect)
		return;
	if (s->qmi->cancellable)
		g_cancellable_cancel(s->qmi->cancellable);
	g_clear_object(&s->qmi->cancellable);
	s->qmi->cancellable = g_cancellable_new();
	s->qmi->step_family = 0;
	s->refused = false; /* until a family of this attempt is refused */
	/* Kept connected over a reopen of the control channel (qmi_session_control_reopen())
	 * and recorded: taken over as it is, connected throughout. */
	bool adopting = s->qmi->adopt.fam[0].present || s->qmi->adopt.fam[1].present;
	bool kept = s->qmi->kept;
	s->qmi->kept = false;
	for (unsigned i = 0; kept && i < s->n_fam; i++)
		s->fam[i].handle = 0; /* each set again as its family is taken over */
	if (!kept || !adopting) {
		if (kept)
			datapath_mux_set_link(s->dp, s->mux, false);
		session_set_state(s, SESSION_STATE_CONNECTING);
	}
	session_connect_family(s);
}

/* ---- modem events ------------------------------------------------------------------ */

void qmi_session_modem_ready(struct session *s, QmiDevice *device, int data_interface)
{
	g_set_object(&s->qmi->device, device);
	s->qmi->data_interface = data_interface;
	s->attempts = 0;
	/* Once per modem start: what a restart or crash left up is taken over, not doubled. */
	int r = qmi_state_read_mux(qmi_device_get_path(device), s->cfg.id, &s->qmi->adopt);
	if (r < 0 && r != -ENOENT)
		log_mux_warning_errno(NULL, s->cfg.id, mux_netdev(s->mux)->name, r,
				      "ignoring the state the last run left");
	if (r < 0)
		s->qmi->adopt = (struct qmi_state_mux){ 0 };
	if (!s->cfg.autoconnect) {
		session_set_state(s, SESSION_STATE_DISABLED);
		return;
	}
	session_connect(s);
}

static void qmi_session_modem_lost(struct session *s)
{
	if (s->qmi->cancellable)
		g_cancellable_cancel(s->qmi->cancellable);
	g_clear_object(&s->qmi->cancellable);
	ev_timer_stop(s->loop, &s->retry);
	s->qmi->kept = false;
	/* The client ids died with the modem: nothing to release. */
	for (unsigned i = 0; i < s->n_fam; i++) {
		session_family_release(s, &s->fam[i], false);
		s->fam[i].handle = 0; /* also one kept over a reopen, without its client */
	}
	g_clear_object(&s->qmi->device);
	datapath_mux_set_link(s->dp, s->mux, false);
	session_set_state(s, s->cfg.autoconnect ? SESSION_STATE_WAITING : SESSION_STATE_DISABLED);
}

/*
 * The control channel died (qmi-proxy went away), the modem and this connected session did
 * not: the WDS clients go without a release (the channel is dead; their ids stay in the
 * mux's state file), carrier, addresses and state stay, and the next modem ready takes the
 * families over from that file.
 */
static void qmi_session_control_reopen(struct session *s)
{
	if (s->qmi->cancellable)
		g_cancellable_cancel(s->qmi->cancellable);
	g_clear_object(&s->qmi->cancellable);
	ev_timer_stop(s->loop, &s->retry);
	for (unsigned i = 0; i < s->n_fam; i++) {
		struct qmi_session_family *q = qfam(s, &s->fam[i]);

		if (!q->client)
			continue;
		if (q->indication_id)
			g_signal_handler_disconnect(q->client, q->indication_id);
		q->indication_id = 0;
		/* Off the dead device's books only (no CTL release), so that its last unref
		 * does not warn of clients never released. */
		if (s->qmi->device)
			qmi_device_release_client(s->qmi->device, QMI_CLIENT(q->client),
						  QMI_DEVICE_RELEASE_CLIENT_FLAGS_NONE, 1, NULL,
						  NULL, NULL);
		g_clear_object(&q->client);
		/* The handle stays: the family is connected still (status, D-Bus). */
	}
	g_clear_object(&s->qmi->device);
	s->qmi->kept = true;
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
		     "session kept up while the control channel is reopened");
}

/* ---- life cycle --------------------------------------------------------------------- */

static void session_destroy(struct session *s)
{
	/* A handover leaves the clients to the next qmapd, recorded as they are. */
	for (unsigned i = 0; i < s->n_fam; i++)
		session_family_release(s, &s->fam[i], !s->handover);
	g_clear_object(&s->qmi->device);
	g_clear_object(&s->qmi->cancellable);
	free(s);
	session_stop_end();
}

static void stop_network_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsStopNetworkOutput) out =
		qmi_client_wds_stop_network_finish(QMI_CLIENT_WDS(src), res, &error);
	struct session *s = user_data;

	if (out && !qmi_message_wds_stop_network_output_get_result(out, &error))
		log_mux_debug(NULL, s->cfg.id, NULL, "stop network: %s", error->message);
	assert(s->pending_stops > 0); /* one answer per Stop Network sent */
	if (--s->pending_stops == 0)
		session_destroy(s);
}

static void qmi_session_free_async(struct session *s)
{
	if (s->qmi->cancellable)
		g_cancellable_cancel(s->qmi->cancellable);
	g_clear_object(&s->qmi->cancellable);
	ev_timer_stop(s->loop, &s->retry);
	s->cb.on_state = NULL;
	session_stop_begin();
	s->state = SESSION_STATE_DISCONNECTING;
	s->pending_stops = 0;
	if (s->handover) {
		session_destroy(s);
		return;
	}
	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		if (!qfam(s, f)->client || !f->handle || !s->qmi->device)
			continue;
		if (qfam(s, f)->indication_id)
			g_signal_handler_disconnect(qfam(s, f)->client, qfam(s, f)->indication_id);
		qfam(s, f)->indication_id = 0;
		g_autoptr(QmiMessageWdsStopNetworkInput) in =
			qmi_message_wds_stop_network_input_new();
		qmi_message_wds_stop_network_input_set_packet_data_handle(in, f->handle, NULL);
		s->pending_stops++;
		qmi_client_wds_stop_network(qfam(s, f)->client, in, 5, NULL, stop_network_ready, s);
	}
	if (s->pending_stops == 0)
		session_destroy(s);
}

static const struct session_ops qmi_session_ops = {
	.connect = session_connect,
	.modem_lost = qmi_session_modem_lost,
	.control_reopen = qmi_session_control_reopen,
	.free_async = qmi_session_free_async,
};

int qmi_session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		    const struct config_mux *cfg, const struct session_callbacks *cb,
		    void *userdata, struct session **ret)
{
	struct qmi_session_block *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	session_init(&b->s, loop, rtnl, dp, mux, cfg, cb, userdata, &qmi_session_ops);
	b->s.qmi = &b->q;
	b->q.data_interface = -1;
	*ret = &b->s;
	return 0;
}
