/* SPDX-License-Identifier: MIT */
/*
 * A session (session.h) driven over MBIM: CONNECT activate on session id mux id - 1 with the
 * mux's APN, credentials and IP type, IP_CONFIGURATION for what the network assigned, the
 * device configured by the shared session code; CONNECT indications for drops. When the
 * modem becomes ready a CONNECT query comes first: a session an earlier qmapd left up (a
 * restart, a crash) is taken over as it is, as ModemManager's MBIM bearer reloads its
 * connection status, instead of activated again. Each session up is listed in
 * "<link>.sessions" (mux-record.h) until it ends, so that the next qmapd can end those it has
 * no mux for (mbim_session_end_unclaimed()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log-mux.h"
#include "mbim-modem.h"
#include "mux-record.h"

#define CONNECT_TIMEOUT_SECONDS	   60 /* the network may take long to answer an activation */
#define IP_CONFIG_TIMEOUT_SECONDS  10
#define DEACTIVATE_TIMEOUT_SECONDS 5

struct mbim_session {
	MbimDevice *device; /* borrowed from the modem while it is attached */
	GCancellable *cancellable;
	gulong indication_id;
	uint32_t session_id;
	char *link;  /* the control link: "<link>.sessions" lists the sessions up */
	bool active; /* the modem reported the context activated */
	bool kept;   /* connected, kept over a reopen of the control channel: to take over */
};

/* The session and its MBIM part in one allocation. */
struct mbim_session_block {
	struct session s;
	struct mbim_session m;
};

/* The session is up in the modem (or known not to be): listed for the next qmapd, or not. */
static void note_session(struct session *s, bool up)
{
	int r = mux_record_update(s->mbim->link, "sessions", s->cfg.id,
				  up ? mux_netdev(s->mux)->name : NULL);
	if (r < 0)
		log_mux_warning_errno(NULL, s->cfg.id, mux_netdev(s->mux)->name, r,
				      "cannot record the MBIM session for the next run");
}

static void mbim_session_set_families(struct session *s, unsigned families)
{
	for (unsigned i = 0; i < s->n_fam; i++) {
		unsigned bit = s->fam[i].family == AF_INET ? 1 : 2;
		s->fam[i].handle = families & bit ? 1 : 0;
	}
}

/* ---- IP configuration ------------------------------------------------------------------ */

static void set_v4(struct config_prefix *p, const MbimIPv4 *a, uint8_t len)
{
	p->family = AF_INET;
	memcpy(&p->addr.v4, a->addr, 4);
	p->prefixlen = len;
}

static void set_v6(struct config_prefix *p, const MbimIPv6 *a, uint8_t len)
{
	p->family = AF_INET6;
	memcpy(p->addr.v6.s6_addr, a->addr, 16);
	p->prefixlen = len;
}

static void deactivate_done(GObject *src, GAsyncResult *res, gpointer user_data)
{
	MbimMessage *resp = mbim_device_command_finish(MBIM_DEVICE(src), res, NULL);

	(void)user_data;
	if (resp) /* nothing to do with the answer: the session has moved on */
		mbim_message_unref(resp);
}

static void send_connect(struct session *s, MbimActivationCommand command, GAsyncReadyCallback cb,
			 void *userdata, GCancellable *cancellable);

static void connected(struct session *s)
{
	bool all = true;

	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		if (f->handle && !f->settings.valid) {
			session_set_error(s, f, "IP configuration", "no address assigned");
			f->handle = 0;
		}
		all &= f->handle != 0;
	}
	bool any = false;
	for (unsigned i = 0; i < s->n_fam; i++)
		any |= s->fam[i].handle != 0;
	if (!any) {
		/* Active on the modem but unusable here: let it go, or the retry is refused as
		 * a second activation. */
		if (s->mbim->active) {
			send_connect(s, MBIM_ACTIVATION_COMMAND_DEACTIVATE, deactivate_done, NULL,
				     NULL);
			note_session(s, false);
		}
		s->mbim->active = false;
		datapath_mux_set_link(s->dp, s->mux, false); /* on if kept over a reopen */
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	if (all)
		s->last_error[0] = '\0';
	s->refused = false;
	s->attempts = 0;
	session_apply(s);
	datapath_mux_set_link(s->dp, s->mux, true);
	session_set_state(s, SESSION_STATE_CONNECTED);
}

static void ip_configuration_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct session *s = user_data;
	MbimIPConfigurationAvailableFlag f4 = 0, f6 = 0;
	guint32 n4 = 0, n6 = 0, ndns4 = 0, ndns6 = 0, mtu4 = 0, mtu6 = 0;
	g_autoptr(MbimIPv4ElementArray) a4 = NULL;
	g_autoptr(MbimIPv6ElementArray) a6 = NULL;
	const MbimIPv4 *gw4 = NULL;
	const MbimIPv6 *gw6 = NULL;
	g_autofree MbimIPv4 *dns4 = NULL;
	g_autofree MbimIPv6 *dns6 = NULL;

	if (mbim_step_cancelled(error))
		return;
	if (!resp ||
	    !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error) ||
	    !mbim_message_ip_configuration_response_parse(resp, NULL, &f4, &f6, &n4, &a4, &n6, &a6,
							  &gw4, &gw6, &ndns4, &dns4, &ndns6, &dns6,
							  &mtu4, &mtu6, &error)) {
		/* Connected, but the addresses are unknown: nothing to configure, so the
		 * attempt failed; the context is deactivated before the retry. */
		session_set_error(s, NULL, "IP configuration", error->message);
		for (unsigned i = 0; i < s->n_fam; i++)
			s->fam[i].handle = 0;
		connected(s);
		return;
	}
	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		struct session_settings st = { 0 };

		if (!f->handle)
			continue;
		if (f->family == AF_INET) {
			if ((f4 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_ADDRESS) && n4 > 0) {
				set_v4(&st.address, &a4[0]->ipv4_address,
				       (uint8_t)(a4[0]->on_link_prefix_length > 32
							 ? 32
							 : a4[0]->on_link_prefix_length));
				st.valid = true;
			}
			if ((f4 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_GATEWAY) && gw4)
				set_v4(&st.gateway, gw4, 32);
			for (guint32 k = 0;
			     (f4 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_DNS) && k < ndns4 && k < 2;
			     k++)
				set_v4(&st.dns[k], &dns4[k], 32);
			if (f4 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_MTU)
				st.mtu = mtu4;
		} else {
			if ((f6 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_ADDRESS) && n6 > 0) {
				set_v6(&st.address, &a6[0]->ipv6_address,
				       (uint8_t)(a6[0]->on_link_prefix_length > 128
							 ? 128
							 : a6[0]->on_link_prefix_length));
				st.valid = true;
			}
			if ((f6 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_GATEWAY) && gw6)
				set_v6(&st.gateway, gw6, 128);
			for (guint32 k = 0;
			     (f6 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_DNS) && k < ndns6 && k < 2;
			     k++)
				set_v6(&st.dns[k], &dns6[k], 128);
			if (f6 & MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_MTU)
				st.mtu = mtu6;
		}
		f->settings = st;
	}
	connected(s);
}

static void query_ip_configuration(struct session *s)
{
	struct mbim_session *m = s->mbim;
	g_autoptr(MbimMessage) msg = mbim_message_ip_configuration_query_new(
		m->session_id, 0, 0, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, 0, NULL);

	mbim_device_command(m->device, msg, IP_CONFIG_TIMEOUT_SECONDS, m->cancellable,
			    ip_configuration_ready, s);
}

/* ---- connect ----------------------------------------------------------------------------- */

static void note_failure(struct session *s, MbimStatusError status, uint32_t nw_error, bool dropped,
			 const char *what)
{
	char why[120];

	if (mbim_map_end(status, nw_error, dropped, &s->last_end, why, sizeof(why)))
		s->refused = true;
	session_set_error(s, NULL, what, why);
}

static void connect_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct session *s = user_data;
	guint32 session_id = 0, nw_error = 0;
	MbimActivationState state = MBIM_ACTIVATION_STATE_UNKNOWN;
	MbimContextIpType ip_type = MBIM_CONTEXT_IP_TYPE_DEFAULT;

	/* Cancelled: the session may be gone already (GTask reports a cancelled command as
	 * G_IO_ERROR_CANCELLED whatever libmbim completed it with). */
	if (mbim_step_cancelled(error))
		return;
	struct mbim_session *m = s->mbim;
	if (!resp) {
		session_set_error(s, NULL, "connect", error->message);
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	gboolean ok =
		mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error);
	if (!ok && error->domain != MBIM_STATUS_ERROR) {
		/* No COMMAND_DONE (a function error, say): no status, no nw_error. */
		session_set_error(s, NULL, "connect", error->message);
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	MbimStatusError status = ok ? MBIM_STATUS_ERROR_NONE : (MbimStatusError)error->code;
	/* A refusal carries its CONNECT_INFO too: the nw_error says why (3GPP cause). */
	g_clear_error(&error);
	bool parsed = mbim_message_connect_response_parse(resp, &session_id, &state, NULL, &ip_type,
							  NULL, &nw_error, &error);
	if (!ok && parsed && state == MBIM_ACTIVATION_STATE_ACTIVATED &&
	    session_id == m->session_id) {
		/* Already active (qmapd restarted, the modem kept it): the session is up. */
		log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
			     "MBIM session %u was already active", m->session_id);
		ok = TRUE;
	}
	if (!ok || !parsed || state != MBIM_ACTIVATION_STATE_ACTIVATED) {
		note_failure(s, ok ? MBIM_STATUS_ERROR_FAILURE : status, parsed ? nw_error : 0,
			     false, "connect");
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	if (session_id != m->session_id) {
		char why[64];
		snprintf(why, sizeof(why), "the modem answered for session %u", session_id);
		session_set_error(s, NULL, "connect", why);
		session_set_state(s, SESSION_STATE_FAILED);
		session_schedule_retry(s);
		return;
	}
	m->active = true;
	note_session(s, true);
	unsigned families = mbim_map_granted_families(ip_type);
	if (families == 0) /* a modem that does not say: what was asked */
		families = mbim_map_granted_families(mbim_map_ip_type(s->cfg.ip_type));
	mbim_session_set_families(s, families);
	for (unsigned i = 0; i < s->n_fam; i++)
		if (!s->fam[i].handle)
			session_set_error(s, &s->fam[i], "connect",
					  "not granted by the network (IP type "
					  "differs)");
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
		     "MBIM session %u activated, IP type %s", m->session_id,
		     mbim_context_ip_type_get_string(ip_type) ?: "?");
	query_ip_configuration(s);
}

static void send_connect(struct session *s, MbimActivationCommand command, GAsyncReadyCallback cb,
			 void *userdata, GCancellable *cancellable)
{
	struct mbim_session *m = s->mbim;
	const struct config_mux *c = &s->cfg;
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) msg = mbim_message_connect_set_new(
		m->session_id, command, c->apn, c->user, c->password, MBIM_COMPRESSION_NONE,
		mbim_map_auth(c->allowed_auth, c->user[0] || c->password[0]),
		mbim_map_ip_type(c->ip_type),
		mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), &error);

	mbim_device_command(m->device, msg,
			    command == MBIM_ACTIVATION_COMMAND_ACTIVATE
				    ? CONNECT_TIMEOUT_SECONDS
				    : DEACTIVATE_TIMEOUT_SECONDS,
			    cancellable, cb, userdata);
}

static void mbim_session_connect(struct session *s)
{
	struct mbim_session *m = s->mbim;

	if (!m->device || !s->cfg.autoconnect)
		return;
	if (m->cancellable)
		g_cancellable_cancel(m->cancellable);
	g_clear_object(&m->cancellable);
	m->cancellable = g_cancellable_new();
	s->refused = false;
	m->active = false;
	mbim_session_set_families(s, 0);
	session_set_state(s, SESSION_STATE_CONNECTING);
	send_connect(s, MBIM_ACTIVATION_COMMAND_ACTIVATE, connect_ready, s, m->cancellable);
}

/* ---- take-over: a session the qmapd before us left up ------------------------------------ */

static void adopt_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct session *s = user_data;
	guint32 session_id = 0;
	MbimActivationState state = MBIM_ACTIVATION_STATE_UNKNOWN;
	MbimContextIpType ip_type = MBIM_CONTEXT_IP_TYPE_DEFAULT;

	if (mbim_step_cancelled(error))
		return;
	s->taking_over = false; /* active or not, known now: a stop can end it */
	struct mbim_session *m = s->mbim;
	if (!resp ||
	    !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error) ||
	    !mbim_message_connect_response_parse(resp, &session_id, &state, NULL, &ip_type, NULL,
						 NULL, &error) ||
	    session_id != m->session_id || state != MBIM_ACTIVATION_STATE_ACTIVATED) {
		/* Not up (or the modem cannot say, as some answer UNKNOWN before a first
		 * activation): activate as always. */
		if (error)
			log_mux_debug(NULL, s->cfg.id, mux_netdev(s->mux)->name,
				      "MBIM session %u status: %s", m->session_id, error->message);
		datapath_mux_set_link(s->dp, s->mux, false); /* on if kept over a reopen */
		if (resp && !error)
			note_session(s, false); /* known not up */
		mbim_session_connect(s);
		return;
	}
	/* Up since an earlier qmapd: its addresses are read again, nothing is activated. What
	 * the mux does not ask for is dropped by connected() (deactivated, then connected
	 * anew). */
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
		     "MBIM session %u of the last run taken over, IP type %s", m->session_id,
		     mbim_context_ip_type_get_string(ip_type) ?: "?");
	m->active = true;
	note_session(s, true);
	unsigned families = mbim_map_granted_families(ip_type);
	if (families == 0)
		families = mbim_map_granted_families(mbim_map_ip_type(s->cfg.ip_type));
	mbim_session_set_families(s, families);
	query_ip_configuration(s);
}

/* CONNECT query on our session id (MBIM 1.0 §10.5.12: the query names the session). */
static void mbim_session_adopt(struct session *s)
{
	struct mbim_session *m = s->mbim;

	if (m->cancellable)
		g_cancellable_cancel(m->cancellable);
	g_clear_object(&m->cancellable);
	m->cancellable = g_cancellable_new();
	m->active = false;
	/* Kept connected over a reopen of the control channel (mbim_session_control_reopen()):
	 * connected throughout, unless the query says otherwise. */
	if (!m->kept) {
		mbim_session_set_families(s, 0);
		session_set_state(s, SESSION_STATE_CONNECTING);
	}
	m->kept = false;
	g_autoptr(MbimMessage) msg = mbim_message_connect_query_new(
		m->session_id, MBIM_ACTIVATION_STATE_UNKNOWN, MBIM_VOICE_CALL_STATE_NONE,
		MBIM_CONTEXT_IP_TYPE_DEFAULT,
		mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), 0, NULL);
	mbim_device_command(m->device, msg, IP_CONFIG_TIMEOUT_SECONDS, m->cancellable, adopt_ready,
			    s);
}

/* ---- indications ------------------------------------------------------------------------ */

static void indicate_status(MbimDevice *device, MbimMessage *msg, gpointer user_data)
{
	struct session *s = user_data;
	struct mbim_session *m = s->mbim;
	guint32 session_id, nw_error = 0;
	MbimActivationState state;

	(void)device;
	if (mbim_message_indicate_status_get_service(msg) != MBIM_SERVICE_BASIC_CONNECT ||
	    mbim_message_indicate_status_get_cid(msg) != MBIM_CID_BASIC_CONNECT_CONNECT)
		return;
	if (!mbim_message_connect_notification_parse(msg, &session_id, &state, NULL, NULL, NULL,
						     &nw_error, NULL) ||
	    session_id != m->session_id || state != MBIM_ACTIVATION_STATE_DEACTIVATED || !m->active)
		return;

	note_failure(s, MBIM_STATUS_ERROR_NONE, nw_error, true, "disconnected by the network");
	m->active = false;
	note_session(s, false);
	if (m->cancellable) /* an IP configuration query may still be on its way */
		g_cancellable_cancel(m->cancellable);
	g_clear_object(&m->cancellable);
	mbim_session_set_families(s, 0);
	/* No carrier; the configuration stays for the reconnect. */
	datapath_mux_set_link(s->dp, s->mux, false);
	session_set_state(s, SESSION_STATE_DISCONNECTED);
	session_schedule_retry(s);
}

/* ---- modem events --------------------------------------------------------------------- */

static void mbim_session_release(struct session *s)
{
	struct mbim_session *m = s->mbim;

	if (m->cancellable)
		g_cancellable_cancel(m->cancellable);
	g_clear_object(&m->cancellable);
	if (m->indication_id && m->device)
		g_signal_handler_disconnect(m->device, m->indication_id);
	m->indication_id = 0;
	g_clear_object(&m->device);
}

void mbim_session_modem_ready(struct session *s, MbimDevice *device)
{
	struct mbim_session *m = s->mbim;

	mbim_session_release(s);
	m->device = g_object_ref(device);
	m->indication_id = g_signal_connect(device, MBIM_DEVICE_SIGNAL_INDICATE_STATUS,
					    G_CALLBACK(indicate_status), s);
	s->attempts = 0;
	if (!s->cfg.autoconnect) {
		session_set_state(s, SESSION_STATE_DISABLED);
		return;
	}
	mbim_session_adopt(s);
}

static void mbim_session_modem_lost(struct session *s)
{
	ev_timer_stop(s->loop, &s->retry);
	mbim_session_release(s);
	s->mbim->kept = false;
	s->mbim->active = false;
	mbim_session_set_families(s, 0);
	datapath_mux_set_link(s->dp, s->mux, false);
	session_set_state(s, s->cfg.autoconnect ? SESSION_STATE_WAITING : SESSION_STATE_DISABLED);
}

/* The control channel died (mbim-proxy went away), the function and this connected session
 * did not: carrier, addresses and state stay; the next modem ready queries the session and
 * takes it over (mbim_session_adopt()). */
static void mbim_session_control_reopen(struct session *s)
{
	ev_timer_stop(s->loop, &s->retry);
	mbim_session_release(s);
	s->mbim->kept = true;
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name,
		     "session kept up while the control channel is reopened");
}

/* ---- life cycle ------------------------------------------------------------------------- */

static void mbim_session_destroy(struct session *s)
{
	mbim_session_release(s);
	free(s->mbim->link);
	free((struct mbim_session_block *)s);
	session_stop_end();
}

static void deactivate_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct session *s = user_data;

	if (resp && !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error))
		log_mux_debug(NULL, s->cfg.id, NULL, "deactivate: %s", error->message);
	else if (!resp)
		log_mux_debug(NULL, s->cfg.id, NULL, "deactivate: %s", error->message);
	mbim_session_destroy(s);
}

static void mbim_session_free_async(struct session *s)
{
	struct mbim_session *m = s->mbim;

	if (m->cancellable)
		g_cancellable_cancel(m->cancellable);
	g_clear_object(&m->cancellable);
	ev_timer_stop(s->loop, &s->retry);
	s->cb.on_state = NULL;
	session_stop_begin();
	s->state = SESSION_STATE_DISCONNECTING;
	if (m->indication_id && m->device)
		g_signal_handler_disconnect(m->device, m->indication_id);
	m->indication_id = 0;
	/* A restart leaves the session up for the next qmapd (session_set_handover()). */
	if (!m->active || !m->device || s->handover) {
		mbim_session_destroy(s);
		return;
	}
	m->active = false;
	note_session(s, false);
	send_connect(s, MBIM_ACTIVATION_COMMAND_DEACTIVATE, deactivate_ready, s, NULL);
}

static const struct session_ops mbim_session_ops = {
	.connect = mbim_session_connect,
	.modem_lost = mbim_session_modem_lost,
	.control_reopen = mbim_session_control_reopen,
	.free_async = mbim_session_free_async,
};

int mbim_session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		     const char *link, const struct config_mux *cfg,
		     const struct session_callbacks *cb, void *userdata, struct session **ret)
{
	struct mbim_session_block *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->m.link = strdup(link);
	if (!b->m.link) {
		free(b);
		return -ENOMEM;
	}
	session_init(&b->s, loop, rtnl, dp, mux, cfg, cb, userdata, &mbim_session_ops);
	b->s.mbim = &b->m;
	b->m.session_id = cfg->id - 1; /* the data path carries session N as mux N + 1 */
	*ret = &b->s;
	return 0;
}

/* ---- sessions of the last run that no mux of this one has -------------------------------- */

struct end_unclaimed {
	char *link;
	unsigned mux_id;
};

static void end_unclaimed_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct end_unclaimed *e = user_data;

	/* Any answer says the session is down now (CONTEXT_NOT_ACTIVATED: it was already);
	 * none (the device went away meanwhile), and it stays listed for the next try. */
	if (resp) {
		if (!mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error))
			log_mux_debug(NULL, e->mux_id, NULL, "deactivate: %s", error->message);
		(void)mux_record_update(e->link, "sessions", e->mux_id, NULL);
	} else {
		log_mux_warning(NULL, e->mux_id, NULL,
				"the MBIM session of the last run was not deactivated: %s",
				error ? error->message : "no answer");
	}
	free(e->link);
	free(e);
}

void mbim_session_end_unclaimed(MbimDevice *device, const char *link, const uint64_t *with_session)
{
	struct mux_record *rec = calloc(1, sizeof(*rec));

	if (!rec || !device)
		goto out;
	int r = mux_record_read(link, "sessions", rec);
	if (r < 0) {
		if (r != -ENOENT)
			log_warning_errno(r,
					  "%s.sessions: ignoring the MBIM sessions the last run "
					  "left",
					  link);
		goto out;
	}
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		if (!rec->name[id][0] || modem_mux_set_has(with_session, id))
			continue;
		struct end_unclaimed *e = calloc(1, sizeof(*e));
		if (!e || !(e->link = strdup(link))) {
			free(e);
			break;
		}
		e->mux_id = id;
		/* A mux removed, or added at run time, before a crash or a restart: its session
		 * would stay activated in the modem for ever. Only the session ids listed: a
		 * session another host program started is not ours to end. */
		log_mux_info(NULL, id, rec->name[id],
			     "mux %u of the last run is not here now: ending its MBIM session %u",
			     id, id - 1);
		g_autoptr(MbimMessage) msg = mbim_message_connect_set_new(
			id - 1, MBIM_ACTIVATION_COMMAND_DEACTIVATE, "", "", "",
			MBIM_COMPRESSION_NONE, MBIM_AUTH_PROTOCOL_NONE,
			MBIM_CONTEXT_IP_TYPE_DEFAULT,
			mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), NULL);
		mbim_device_command(device, msg, DEACTIVATE_TIMEOUT_SECONDS, NULL,
				    end_unclaimed_ready, e);
	}
out:
	free(rec);
}
