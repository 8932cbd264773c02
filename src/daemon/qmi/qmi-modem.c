/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log-modem.h"
#include "qmi-modem.h"
#include "qmi-state.h"

#define QMI_TIMEOUT_SECONDS    10
#define QMI_RADIO_POLL_SECONDS 30.0
#define QMI_RETRY_MIN_SECONDS  1.0
#define QMI_RETRY_MAX_SECONDS  30.0
/* A proxy lost again within this long after the last loss is not respawned at once. */
#define QMI_PROXY_LOSS_PACE_SECONDS 10.0
/* Proxies lost by a reopen's own opens before the kept sessions are given up. */
#define QMI_PROXY_REOPEN_TRIES 3

/* Every qmi_modem alive, for the sessions' releases (qmi_modem_release_session_client()),
 * which may come after their modem is gone. One thread: a plain list. */
static struct qmi_modem *live_modems;

static bool same_client(struct qmi_state_client a, struct qmi_state_client b)
{
	return a.service == b.service && a.cid == b.cid;
}

static bool releasing_has(const struct qmi_modem *qm, struct qmi_state_client id)
{
	for (unsigned i = 0; i < qm->releasing.n; i++)
		if (same_client(qm->releasing.c[i], id))
			return true;
	return false;
}

static void releasing_add(struct qmi_modem *qm, struct qmi_state_client id)
{
	if (!releasing_has(qm, id) && qm->releasing.n < QMI_STATE_MAX_CLIENTS)
		qm->releasing.c[qm->releasing.n++] = id;
}

static void releasing_del(struct qmi_modem *qm, struct qmi_state_client id)
{
	for (unsigned i = 0; i < qm->releasing.n; i++)
		if (same_client(qm->releasing.c[i], id)) {
			qm->releasing.c[i] = qm->releasing.c[--qm->releasing.n];
			return;
		}
}

static struct qmi_state_client client_id(QmiClient *client)
{
	return (struct qmi_state_client){ (uint8_t)qmi_client_get_service(client),
					  qmi_client_get_cid(client) };
}

/*
 * The modem's own clients (not the sessions'), for the next qmapd after a crash (qmi-state.h):
 * those allocated, and those whose release the modem has not answered yet, so that a crash
 * before the answer leaves them listed, not leaked.
 */
void qmi_modem_record_clients(struct qmi_modem *qm)
{
	QmiClient *clients[] = { qm->dms, qm->nas, qm->wda, qm->uim, qm->wds, qm->wms };
	struct qmi_state_clients c = qm->releasing;

	for (size_t i = 0; i < G_N_ELEMENTS(clients); i++)
		if (clients[i] && c.n < QMI_STATE_MAX_CLIENTS)
			c.c[c.n++] = client_id(clients[i]);
	int r = qmi_state_write_clients(qm->path, &c);
	if (r < 0)
		log_modem_warning_errno(qm->path, r, "cannot record the QMI client ids");
}

/* Where the modem keeps its own client of a service; NULL for one it has none of. */
static QmiClient **client_slot(struct qmi_modem *qm, QmiService service)
{
	switch (service) {
	case QMI_SERVICE_DMS:
		return &qm->dms;
	case QMI_SERVICE_NAS:
		return &qm->nas;
	case QMI_SERVICE_WDA:
		return &qm->wda;
	case QMI_SERVICE_UIM:
		return &qm->uim;
	case QMI_SERVICE_WDS:
		return &qm->wds;
	case QMI_SERVICE_WMS:
		return &qm->wms;
	default:
		return NULL;
	}
}

int qmi_modem_allocate_finish(struct qmi_modem *qm, GObject *src, GAsyncResult *res, GError **error)
{
	QmiClient *client = qmi_device_allocate_client_finish(QMI_DEVICE(src), res, error);

	if (qmi_step_cancelled(*error)) {
		g_clear_object(&client);
		return -ECANCELED;
	}
	if (!client)
		return -EIO;
	QmiClient **slot = client_slot(qm, qmi_client_get_service(client));
	if (slot)
		*slot = client;
	else
		g_object_unref(client); /* none of the modem's own: nobody asked for it */
	qmi_modem_record_clients(qm);
	return 0;
}

/*
 * The releases of one reset, in flight: the device is closed when the last one is answered
 * (closing first would drop them), and each counts as a stop pending (session.h), so that
 * qmapd's exit waits for them instead of leaking the ids in the modem at every stop.
 */
struct release_ctx {
	QmiDevice *device;
	unsigned pending;
};

/* One release in flight; its id stays in qm->releasing (and the file) until answered. */
struct qmi_release {
	struct qmi_modem *qm;	/* NULL once the modem is freed */
	struct release_ctx *rc; /* the reset's, or NULL: an id the last run left */
	struct qmi_state_client id;
	struct qmi_release *next;
};

static void release_ctx_done(struct release_ctx *rc)
{
	if (--rc->pending > 0)
		return;
	qmi_device_close_async(rc->device, 1, NULL, NULL, NULL);
	g_object_unref(rc->device);
	free(rc);
}

static void release_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct qmi_release *rel = user_data;
	bool ok = qmi_device_release_client_finish(QMI_DEVICE(src), res, &error);

	if (!ok)
		log_debug("release client %u of service %u: %s", rel->id.cid, rel->id.service,
			  error->message);
	/* Released, or the modem says it is no client (a protocol error): off the list. No
	 * answer (a timeout, the device gone): it may still be allocated, so it stays listed
	 * for the next open to release. */
	struct qmi_modem *qm = rel->qm;
	if (qm) {
		for (struct qmi_release **p = &qm->releases; *p; p = &(*p)->next)
			if (*p == rel) {
				*p = rel->next;
				break;
			}
		if (ok || error->domain == QMI_PROTOCOL_ERROR) {
			releasing_del(qm, rel->id);
			qmi_modem_record_clients(qm);
		}
	}
	session_stop_end();
	if (rel->rc)
		release_ctx_done(rel->rc);
	free(rel);
}

/* Release client (listed in qm->releasing meanwhile); rc: the reset's, or NULL. */
static void release_tracked(struct qmi_modem *qm, QmiClient *client, struct release_ctx *rc,
			    guint timeout)
{
	struct qmi_release *rel = calloc(1, sizeof(*rel));

	if (!rel) {
		/* Untracked: the file keeps listing it, the next open releases it again. */
		qmi_device_release_client(qm->device, client,
					  QMI_DEVICE_RELEASE_CLIENT_FLAGS_RELEASE_CID, timeout,
					  NULL, NULL, NULL);
		if (rc)
			release_ctx_done(rc);
		return;
	}
	*rel = (struct qmi_release){ .qm = qm, .rc = rc, .id = client_id(client) };
	rel->next = qm->releases;
	qm->releases = rel;
	releasing_add(qm, rel->id);
	session_stop_begin();
	qmi_device_release_client(qm->device, client, QMI_DEVICE_RELEASE_CLIENT_FLAGS_RELEASE_CID,
				  timeout, NULL, release_ready, rel);
}

static bool release_clients(struct qmi_modem *qm)
{
	QmiClient *clients[] = { qm->dms, qm->nas, qm->wda, qm->uim, qm->wds, qm->wms };
	struct release_ctx *rc = calloc(1, sizeof(*rc));

	if (!rc)
		return false;
	rc->device = g_object_ref(qm->device);
	for (size_t i = 0; i < G_N_ELEMENTS(clients); i++)
		if (clients[i])
			rc->pending++;
	if (rc->pending == 0) {
		g_object_unref(rc->device);
		free(rc);
		return false;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(clients); i++)
		if (clients[i])
			release_tracked(qm, clients[i], rc, 1);
	return true;
}

static void qmi_modem_reset(struct qmi_modem *qm)
{
	bool releasing = false;

	if (qm->device && qm->removed_id)
		g_signal_handler_disconnect(qm->device, qm->removed_id);
	qm->removed_id = 0;
	if (qm->cancellable) {
		g_cancellable_cancel(qm->cancellable);
		g_clear_object(&qm->cancellable);
	}
	ev_timer_stop(qm->loop, &qm->radio_poll);
	qmi_sms_stop(qm);
	qmi_nas_watch_stop(qm);
	qm->cell = (struct modem_cell){ 0 };
	/* Give the client ids back so the modem does not run out of them. */
	if (qm->device && qm->state == MODEM_CONTROL_READY)
		releasing = release_clients(qm);
	g_clear_object(&qm->dms);
	g_clear_object(&qm->nas);
	g_clear_object(&qm->wda);
	g_clear_object(&qm->uim);
	g_clear_object(&qm->wds);
	g_clear_object(&qm->wms);
	if (qm->device && qm->state == MODEM_CONTROL_READY)
		qmi_modem_record_clients(qm); /* being released: listed until the modem answers */
	qmi_info_clear(&qm->info);
	memset(&qm->signal, 0, sizeof(qm->signal));
	if (qm->device && !releasing)
		qmi_device_close_async(qm->device, 1, NULL, NULL, NULL);
	g_clear_object(&qm->device);
	qm->state = MODEM_CONTROL_CLOSED;
}

/* The next open after a failure: capped exponential backoff (a modem that is still booting
 * answers later), from first_delay on the first attempt. */
static void qmi_modem_schedule_retry(struct qmi_modem *qm, double first_delay)
{
	double delay = QMI_RETRY_MIN_SECONDS * (1u << (qm->attempts < 5 ? qm->attempts : 5));

	if (qm->attempts == 0)
		delay = first_delay;
	if (delay > QMI_RETRY_MAX_SECONDS)
		delay = QMI_RETRY_MAX_SECONDS;
	qm->attempts++;
	ev_timer_stop(qm->loop, &qm->retry);
	ev_timer_set(&qm->retry, delay, 0.);
	ev_timer_start(qm->loop, &qm->retry);
}

static void qmi_modem_fail(struct qmi_modem *qm, const char *what, GError *error)
{
	snprintf(qm->last_error, sizeof(qm->last_error), "%s: %s", what,
		 error ? error->message : "failed");
	log_modem_warning(qm->path, "%s", qm->last_error);
	qmi_modem_reset(qm);
	qm->state = MODEM_CONTROL_FAILED;
	qm->reopening = false; /* the sessions kept over a lost proxy are lost now */
	qmi_modem_schedule_retry(qm, QMI_RETRY_MIN_SECONDS);
	if (qm->cb.on_lost)
		qm->cb.on_lost(qm->userdata);
}

/*
 * qmi-proxy went away (killed, crashed, out of memory): libqmi says the device was removed,
 * and the device is dead for good, though the modem and its sessions are not. Nothing can
 * be released through it: the modem's own client ids stay listed in "<link>.clients" (as
 * after a crash of qmapd) and so do releases that were on their way, for the next open to
 * release; the sessions' ids stay in their "<link>.mux<N>" files and the sessions, kept up
 * with their carrier meanwhile (on_reopen), are taken over on ready, not started again. The
 * next open spawns a new proxy, at once.
 */
static void device_removed(QmiDevice *device, gpointer user_data)
{
	struct qmi_modem *qm = user_data;
	QmiClient *clients[] = { qm->dms, qm->nas, qm->wda, qm->uim, qm->wds, qm->wms };
	ev_tstamp now = ev_now(qm->loop);
	bool ready = qm->state == MODEM_CONTROL_READY;

	(void)device;
	qm->proxy_losses++;
	/* Answers that will never come: the ids stay listed, the next open releases them. */
	for (struct qmi_release *rel = qm->releases; rel; rel = rel->next)
		rel->qm = NULL;
	qm->releases = NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(clients); i++)
		if (clients[i])
			releasing_add(qm, client_id(clients[i]));
	qmi_modem_record_clients(qm);
	/* Off the dead device's books only (no CTL release can reach the modem), so that its
	 * last unref does not warn of clients never released. This zeroes their ids: listed
	 * above, before. */
	for (size_t i = 0; i < G_N_ELEMENTS(clients); i++)
		if (clients[i])
			qmi_device_release_client(qm->device, clients[i],
						  QMI_DEVICE_RELEASE_CLIENT_FLAGS_NONE, 1, NULL,
						  NULL, NULL);
	qm->state = MODEM_CONTROL_FAILED; /* not READY: reset releases nothing through it */
	/* The reopen's own open lost its proxy too (it can reach the dying one before that is
	 * gone): the sessions stay kept, the open is tried again with backoff. */
	bool again = !ready && qm->reopening && qm->reopen_losses < QMI_PROXY_REOPEN_TRIES;
	if (!ready && !again) {
		/* During an open, or a proxy that died at every start of a reopen: that open
		 * failed, retried with backoff, so that the proxy is not spawned again and
		 * again. */
		g_autoptr(GError) e =
			g_error_new_literal(G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE,
					    "qmi-proxy went away (killed or crashed)");
		qmi_modem_fail(qm, "open through qmi-proxy", e);
		return;
	}
	qm->reopen_losses = again ? qm->reopen_losses + 1 : 0;
	snprintf(qm->last_error, sizeof(qm->last_error), "%s",
		 again ? "qmi-proxy went away again while the control channel was reopened"
		       : "qmi-proxy went away (killed or crashed)");
	log_modem_warning(qm->path,
			  "%s, %u time%s now: reopening the control channel; the sessions stay "
			  "up in the modem and are taken over",
			  qm->last_error, qm->proxy_losses, qm->proxy_losses == 1 ? "" : "s");
	qmi_modem_reset(qm);
	qm->state = MODEM_CONTROL_FAILED;
	/* At once, unless the last one was lost just before: no respawning in a loop. */
	qmi_modem_schedule_retry(qm, now - qm->last_proxy_loss < QMI_PROXY_LOSS_PACE_SECONDS
					     ? QMI_RETRY_MIN_SECONDS
					     : 0.);
	qm->last_proxy_loss = now;
	if (again)
		return; /* the sessions were told at the first loss */
	qm->reopening = qm->cb.on_reopen != NULL;
	if (qm->cb.on_reopen)
		qm->cb.on_reopen(qm->userdata);
	else if (qm->cb.on_lost)
		qm->cb.on_lost(qm->userdata);
}

/* ---- identity and radio state (for status only; failures are not fatal) ---------- */

static void replace_string(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? strdup(src) : NULL;
}

/*
 * The four DMS string queries differ only in libqmi's names and types: one macro makes
 * their callbacks. The answer replaces the modem's string `member`; a failure keeps it.
 */
#define DMS_STRING_READY(query, Query, getter, member)                                         \
	static void dms_##query##_ready(GObject *src, GAsyncResult *res, gpointer user_data)   \
	{                                                                                      \
		g_autoptr(GError) error = NULL;                                                \
		g_autoptr(QmiMessageDmsGet##Query##Output) out =                               \
			qmi_client_dms_get_##query##_finish(QMI_CLIENT_DMS(src), res, &error); \
		struct qmi_modem *qm = user_data;                                              \
		const char *value = NULL;                                                      \
                                                                                               \
		if (qmi_step_cancelled(error))                                                 \
			return;                                                                \
		if (out && qmi_message_dms_get_##query##_output_get_result(out, &error) &&     \
		    qmi_message_dms_get_##query##_output_get_##getter(out, &value, NULL))      \
			replace_string(&qm->member, value);                                    \
	}

DMS_STRING_READY(manufacturer, Manufacturer, manufacturer, manufacturer)
DMS_STRING_READY(model, Model, model, model)
DMS_STRING_READY(revision, Revision, revision, revision)
DMS_STRING_READY(ids, Ids, imei, imei)
#undef DMS_STRING_READY

/* The SIM's identity (DMS UIM Get ICCID / IMSI): same pattern, uim_ in libqmi's names. */
#define DMS_UIM_READY(query, Query, member)                                                        \
	static void dms_uim_##query##_ready(GObject *src, GAsyncResult *res, gpointer user_data)   \
	{                                                                                          \
		g_autoptr(GError) error = NULL;                                                    \
		g_autoptr(QmiMessageDmsUimGet##Query##Output) out =                                \
			qmi_client_dms_uim_get_##query##_finish(QMI_CLIENT_DMS(src), res, &error); \
		struct qmi_modem *qm = user_data;                                                  \
		const char *value = NULL;                                                          \
                                                                                                   \
		if (qmi_step_cancelled(error))                                                     \
			return;                                                                    \
		if (out && qmi_message_dms_uim_get_##query##_output_get_result(out, &error) &&     \
		    qmi_message_dms_uim_get_##query##_output_get_##query(out, &value, NULL))       \
			replace_string(&qm->member, value);                                        \
	}

DMS_UIM_READY(iccid, Iccid, iccid)
DMS_UIM_READY(imsi, Imsi, imsi)
#undef DMS_UIM_READY

/* While not registered the radio is asked more often: a modem registers within seconds. */
#define QMI_RADIO_SEARCH_POLL_SECONDS 2.0

static void nas_serving_system_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasGetServingSystemOutput) out =
		qmi_client_nas_get_serving_system_finish(QMI_CLIENT_NAS(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_nas_get_serving_system_output_get_result(out, &error)) {
		log_modem_debug(qm->path, "serving system: %s", error->message);
		return;
	}
	struct qmi_serving sv;
	QMI_SERVING_READ(qmi_message_nas_get_serving_system_output, out, &sv);
	qmi_modem_serving_system(qm, &sv);
}

void qmi_modem_serving_system(struct qmi_modem *qm, const struct qmi_serving *sv)
{
	if (!sv->valid)
		return;
	QmiNasRegistrationState reg = sv->reg;
	qm->info.ps_attached = sv->ps == QMI_NAS_ATTACH_STATE_ATTACHED	 ? 1
			       : sv->ps == QMI_NAS_ATTACH_STATE_DETACHED ? 0
									 : -1;
	const char *state = "unknown";
	switch (reg) {
	case QMI_NAS_REGISTRATION_STATE_REGISTERED:
		state = "home";
		if (sv->have_roaming && sv->roaming == QMI_NAS_ROAMING_INDICATOR_STATUS_ON)
			state = "roaming";
		break;
	case QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED_SEARCHING:
		state = "searching";
		break;
	case QMI_NAS_REGISTRATION_STATE_REGISTRATION_DENIED:
		state = "denied";
		break;
	case QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED:
		state = "idle";
		break;
	default:
		break;
	}
	snprintf(qm->registration, sizeof(qm->registration), "%s", state);
	/* The cell, for the 3GPP location source (ModemManager reads the same TLVs). */
	qm->cell = (struct modem_cell){ .known = reg == QMI_NAS_REGISTRATION_STATE_REGISTERED &&
						 sv->have_cid,
					.cell_id = sv->cid,
					.lac = sv->lac,
					.tac = sv->tac };
	qm->radio_poll.repeat = reg == QMI_NAS_REGISTRATION_STATE_REGISTERED
					? QMI_RADIO_POLL_SECONDS
					: QMI_RADIO_SEARCH_POLL_SECONDS;
	ev_timer_again(qm->loop, &qm->radio_poll);
	qm->access_technology[0] = '\0';
	if (sv->radio && sv->radio->len > 0) {
		const char *s = qmi_nas_radio_interface_get_string(
			g_array_index(sv->radio, QmiNasRadioInterface, 0));
		snprintf(qm->access_technology, sizeof(qm->access_technology), "%s",
			 s ? s : "unknown");
	}
	if (sv->have_plmn) {
		const char *desc = sv->desc;
		snprintf(qm->operator_name, sizeof(qm->operator_name), "%s (%03u%02u)",
			 desc && *desc ? desc : "unnamed", sv->mcc, sv->mnc);
		snprintf(qm->operator_code, sizeof(qm->operator_code), "%03u%02u", sv->mcc % 1000,
			 sv->mnc % 1000);
		snprintf(qm->operator_desc, sizeof(qm->operator_desc), "%s", desc ? desc : "");
	}
}

void qmi_modem_query_radio(struct qmi_modem *qm)
{
	if (qm->nas) {
		qmi_client_nas_get_serving_system(QMI_CLIENT_NAS(qm->nas), NULL,
						  QMI_TIMEOUT_SECONDS, qm->cancellable,
						  nas_serving_system_ready, qm);
		qmi_nas_query_signal(qm);
	}
}

static void qmi_modem_on_radio_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	qmi_modem_query_radio(w->data);
}

static void qmi_modem_query_identity(struct qmi_modem *qm)
{
	QmiClientDms *dms = QMI_CLIENT_DMS(qm->dms);

	qmi_client_dms_get_manufacturer(dms, NULL, QMI_TIMEOUT_SECONDS, qm->cancellable,
					dms_manufacturer_ready, qm);
	qmi_client_dms_get_model(dms, NULL, QMI_TIMEOUT_SECONDS, qm->cancellable, dms_model_ready,
				 qm);
	qmi_client_dms_get_revision(dms, NULL, QMI_TIMEOUT_SECONDS, qm->cancellable,
				    dms_revision_ready, qm);
	qmi_client_dms_get_ids(dms, NULL, QMI_TIMEOUT_SECONDS, qm->cancellable, dms_ids_ready, qm);
	qmi_client_dms_uim_get_iccid(dms, NULL, QMI_TIMEOUT_SECONDS, qm->cancellable,
				     dms_uim_iccid_ready, qm);
	qmi_client_dms_uim_get_imsi(dms, NULL, QMI_TIMEOUT_SECONDS, qm->cancellable,
				    dms_uim_imsi_ready, qm);
}

/* ---- data format ------------------------------------------------------------------- */

static void wda_set_data_format(struct qmi_modem *qm, bool qmapv5);

static const char *protocol_name(enum qmap_version v)
{
	return v == QMAP_V5 ? "QMAPv5" : "QMAPv1";
}

/*
 * What the modem granted, every TLV of it (docs/PROTOCOLS.md §2.2), from a Set or a Get
 * Data Format response: both carry the same output TLVs. Fields the response lacks stay as
 * they are. Returns 0, or -EPROTO with the reason in `why` for a grant qmapd cannot use.
 */
#define READ_GRANT(Kind, kind)                                                                               \
	static int read_grant_##kind(QmiMessageWda##Kind##DataFormatOutput *out,                             \
				     struct modem_data_format *g, char *why, size_t whylen)                  \
	{                                                                                                    \
		QmiWdaDataAggregationProtocol proto;                                                         \
		QmiWdaLinkLayerProtocol llp;                                                                 \
		guint32 v;                                                                                   \
                                                                                                             \
		if (qmi_message_wda_##kind##_data_format_output_get_link_layer_protocol(out, &llp,           \
											NULL) &&             \
		    llp != QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP) {                                             \
			snprintf(why, whylen, "modem granted link layer %s, qmapd needs raw IP",             \
				 qmi_wda_link_layer_protocol_get_string(llp) ?: "?");                        \
			return -EPROTO;                                                                      \
		}                                                                                            \
		if (qmi_message_wda_##kind##_data_format_output_get_downlink_data_aggregation_protocol(      \
			    out, &proto, NULL)) {                                                            \
			if (proto == QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5)                               \
				g->version = QMAP_V5;                                                        \
			else if (proto == QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP)                            \
				g->version = QMAP_V1;                                                        \
			else {                                                                               \
				snprintf(why, whylen,                                                        \
					 "modem granted aggregation protocol %s (%u), not QMAP",             \
					 qmi_wda_data_aggregation_protocol_get_string(proto)                 \
						 ?: "?",                                                     \
					 proto);                                                             \
				return -EPROTO;                                                              \
			}                                                                                    \
		}                                                                                            \
		if (qmi_message_wda_##kind##_data_format_output_get_downlink_data_aggregation_max_size(      \
			    out, &v, NULL))                                                                  \
			g->dl_max_size = v;                                                                  \
		if (qmi_message_wda_##kind##_data_format_output_get_downlink_data_aggregation_max_datagrams( \
			    out, &v, NULL))                                                                  \
			g->dl_max_datagrams = v;                                                             \
		if (qmi_message_wda_##kind##_data_format_output_get_uplink_data_aggregation_max_size(        \
			    out, &v, NULL))                                                                  \
			g->ul_max_size = v;                                                                  \
		if (qmi_message_wda_##kind##_data_format_output_get_uplink_data_aggregation_max_datagrams(   \
			    out, &v, NULL))                                                                  \
			g->ul_max_datagrams = v;                                                             \
		if (qmi_message_wda_##kind##_data_format_output_get_download_minimum_padding(                \
			    out, &v, NULL))                                                                  \
			g->dl_min_padding = v;                                                               \
		return 0;                                                                                    \
	}

READ_GRANT(Set, set)
READ_GRANT(Get, get)

/* The grant within what our buffers hold: what the data path uses. */
static void qmi_modem_apply_grant(struct qmi_modem *qm)
{
	const struct modem_data_format *g = &qm->granted;
	const struct modem_control_request *rq = &qm->request;
	struct modem_data_format *f = &qm->format;

	f->version = g->version;
	/* The modem sends aggregates up to the granted size, larger than asked or not. */
	uint32_t room = rq->dl_buffer_size ? rq->dl_buffer_size : rq->dl_max_size;
	f->dl_max_size = g->dl_max_size ? g->dl_max_size : rq->dl_max_size;
	if (f->dl_max_size > room) {
		log_modem_warning(qm->path,
				  "granted downlink aggregates of %u bytes, the receive "
				  "buffers hold %u: larger ones are counted as overflows",
				  f->dl_max_size, room);
		f->dl_max_size = room;
	}
	f->dl_max_datagrams = g->dl_max_datagrams ? g->dl_max_datagrams : rq->dl_max_datagrams;
	/* Uplink limits are maxima: a smaller aggregate than granted is always allowed, so
	 * only the OUT buffers bound the size. A grant above the request is used as it is. */
	f->ul_max_size = g->ul_max_size && g->ul_max_size < rq->ul_max_size ? g->ul_max_size
									    : rq->ul_max_size;
	/*
	 * A modem that does not report uplink limits gets one datagram per transfer: that is
	 * what works with every QMAP modem (qmimux never aggregates uplink).
	 */
	f->ul_max_datagrams = g->ul_max_datagrams ? g->ul_max_datagrams : 1;
	/* "valid values 0-64, must be 4-bytes aligned" (Telit SDK): anything else is clamped. */
	f->dl_min_padding =
		g->dl_min_padding > QMAP_DL_PADDING_MAX ? QMAP_DL_PADDING_MAX : g->dl_min_padding;
}

static void qmi_modem_ready(struct qmi_modem *qm)
{
	struct modem_data_format *f = &qm->format;

	qmi_modem_apply_grant(qm);
	qm->state = MODEM_CONTROL_READY;
	qm->attempts = 0;
	qm->last_error[0] = '\0';
	log_modem_info(qm->path,
		       "data format %s, downlink %u bytes / %u datagrams / padding %u, "
		       "uplink %u bytes / %u datagrams (asked %s %u / %u, %u / %u)",
		       protocol_name(f->version), f->dl_max_size, f->dl_max_datagrams,
		       f->dl_min_padding, f->ul_max_size, f->ul_max_datagrams,
		       protocol_name(qm->requested.version), qm->requested.dl_max_size,
		       qm->requested.dl_max_datagrams, qm->requested.ul_max_size,
		       qm->requested.ul_max_datagrams);
	qmi_modem_query_identity(qm);
	qmi_info_query(qm);
	qmi_sms_start(qm);
	qmi_nas_watch_start(qm);
	qmi_modem_query_radio(qm);
	ev_timer_again(qm->loop, &qm->radio_poll);
	qm->reopening = false;
	if (qm->cb.on_ready)
		qm->cb.on_ready(qm->userdata, f);
}

static void wda_get_data_format_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdaGetDataFormatOutput) out =
		qmi_client_wda_get_data_format_finish(QMI_CLIENT_WDA(src), res, &error);
	struct qmi_modem *qm = user_data;
	char why[128];

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_wda_get_data_format_output_get_result(out, &error)) {
		/* Older firmware may lack it: the Set response's grant stands. */
		log_modem_debug(qm->path, "get data format: %s", error->message);
	} else {
		struct modem_data_format g = qm->granted;
		if (read_grant_get(out, &g, why, sizeof(why)) < 0) {
			g_autoptr(GError) e =
				g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", why);
			qmi_modem_fail(qm, "get data format", e);
			return;
		}
		if (memcmp(&g, &qm->granted, sizeof(g)) != 0)
			log_modem_info(qm->path,
				       "the data format in effect differs from the grant; "
				       "using what is in effect");
		qm->granted = g;
	}
	qmi_modem_ready(qm);
}

/* Endpoint Info names the data interface: HSUSB and its bInterfaceNumber (§2.2). */
static bool qmi_modem_endpoint(struct qmi_modem *qm, guint32 *ret_iface)
{
	qm->data_interface = qm->cb.data_interface ? qm->cb.data_interface(qm->userdata) : -1;
	if (qm->data_interface < 0)
		return false;
	*ret_iface = (guint32)qm->data_interface;
	return true;
}

static void wda_get_data_format(struct qmi_modem *qm)
{
	g_autoptr(QmiMessageWdaGetDataFormatInput) in = qmi_message_wda_get_data_format_input_new();
	guint32 iface;

	if (qmi_modem_endpoint(qm, &iface))
		qmi_message_wda_get_data_format_input_set_endpoint_info(
			in, QMI_DATA_ENDPOINT_TYPE_HSUSB, iface, NULL);
	qmi_client_wda_get_data_format(QMI_CLIENT_WDA(qm->wda), in, QMI_TIMEOUT_SECONDS,
				       qm->cancellable, wda_get_data_format_ready, qm);
}

static void wda_set_data_format_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdaSetDataFormatOutput) out =
		qmi_client_wda_set_data_format_finish(QMI_CLIENT_WDA(src), res, &error);
	struct qmi_modem *qm = user_data;
	char why[128];

	if (qmi_step_cancelled(error))
		return;
	bool asked_v5 = qm->requested.version == QMAP_V5;
	if (!out || !qmi_message_wda_set_data_format_output_get_result(out, &error)) {
		if (asked_v5 && !g_error_matches(error, QMI_CORE_ERROR, QMI_CORE_ERROR_TIMEOUT)) {
			log_modem_info(qm->path, "QMAPv5 refused (%s), falling back to QMAPv1",
				       error->message);
			wda_set_data_format(qm, false);
			return;
		}
		qmi_modem_fail(qm, "set data format", error);
		return;
	}
	/* Every TLV of the answer counts; the protocol may differ from the one asked. */
	qm->granted = (struct modem_data_format){ .version = qm->requested.version };
	if (read_grant_set(out, &qm->granted, why, sizeof(why)) < 0) {
		if (asked_v5) {
			log_modem_info(qm->path, "%s; asking for QMAPv1", why);
			wda_set_data_format(qm, false);
			return;
		}
		g_autoptr(GError) e = g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", why);
		qmi_modem_fail(qm, "set data format", e);
		return;
	}
	if (qm->granted.version != qm->requested.version)
		log_modem_info(qm->path, "asked for %s, granted %s",
			       protocol_name(qm->requested.version),
			       protocol_name(qm->granted.version));
	wda_get_data_format(qm);
}

static void wda_set_data_format(struct qmi_modem *qm, bool qmapv5)
{
	g_autoptr(QmiMessageWdaSetDataFormatInput) in = qmi_message_wda_set_data_format_input_new();
	QmiWdaDataAggregationProtocol proto = qmapv5 ? QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5
						     : QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP;
	guint32 iface;

	qm->requested = (struct modem_data_format){
		.version = qmapv5 ? QMAP_V5 : QMAP_V1,
		.dl_max_size = qm->request.dl_max_size,
		.dl_max_datagrams = qm->request.dl_max_datagrams,
		.ul_max_size = qm->request.ul_max_size,
		.ul_max_datagrams = qm->request.ul_max_datagrams,
	};
	qmi_message_wda_set_data_format_input_set_link_layer_protocol(
		in, QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP, NULL);
	qmi_message_wda_set_data_format_input_set_uplink_data_aggregation_protocol(in, proto, NULL);
	qmi_message_wda_set_data_format_input_set_downlink_data_aggregation_protocol(in, proto,
										     NULL);
	qmi_message_wda_set_data_format_input_set_downlink_data_aggregation_max_datagrams(
		in, qm->request.dl_max_datagrams, NULL);
	qmi_message_wda_set_data_format_input_set_downlink_data_aggregation_max_size(
		in, qm->request.dl_max_size, NULL);
	qmi_message_wda_set_data_format_input_set_uplink_data_aggregation_max_datagrams(
		in, qm->request.ul_max_datagrams, NULL);
	qmi_message_wda_set_data_format_input_set_uplink_data_aggregation_max_size(
		in, qm->request.ul_max_size, NULL);
	/* Newer firmware refuses the request without it (MISSING_ARGUMENT, §2.2). */
	if (qmi_modem_endpoint(qm, &iface))
		qmi_message_wda_set_data_format_input_set_endpoint_info(
			in, QMI_DATA_ENDPOINT_TYPE_HSUSB, iface, NULL);
	else
		log_modem_warning(qm->path, "data interface unknown: asking without Endpoint Info");
	qmi_client_wda_set_data_format(QMI_CLIENT_WDA(qm->wda), in, QMI_TIMEOUT_SECONDS,
				       qm->cancellable, wda_set_data_format_ready, qm);
}

/* ---- open: device, then DMS, NAS, WDA clients, then the data format ----------------- */

static void allocate_next_client(struct qmi_modem *qm);

static void allocate_client_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct qmi_modem *qm = user_data;
	int r = qmi_modem_allocate_finish(qm, src, res, &error);

	if (r == -ECANCELED)
		return;
	if (r < 0) {
		qmi_modem_fail(qm, "allocate client", error);
		return;
	}
	allocate_next_client(qm);
}

static void allocate_next_client(struct qmi_modem *qm)
{
	QmiService service;

	if (!qm->dms)
		service = QMI_SERVICE_DMS;
	else if (!qm->nas)
		service = QMI_SERVICE_NAS;
	else if (!qm->wda)
		service = QMI_SERVICE_WDA;
	else {
		wda_set_data_format(qm, qm->request.try_qmapv5);
		return;
	}
	qmi_device_allocate_client(qm->device, service, QMI_CID_NONE, QMI_TIMEOUT_SECONDS,
				   qm->cancellable, allocate_client_ready, qm);
}

/*
 * A qmapd killed before it could release its clients left their ids in the modem (and in
 * "<link>.clients"): give them back, so that crashes do not exhaust the modem's ids. All at
 * once and without waiting: the modem gives new clients other ids meanwhile, and the
 * sessions, which wait for the data format, come back sooner. Each id stays listed until
 * the modem has answered its release (release_ready()). The sessions' WDS clients are not
 * among them: those are taken over (qmi-session.c).
 */
static void stale_client_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	QmiClient *client = qmi_device_allocate_client_finish(QMI_DEVICE(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error)) {
		g_clear_object(&client);
		return;
	}
	if (!client)
		return;
	log_modem_info(qm->path,
		       "releasing %s client %u left allocated (by the last run, or a "
		       "qmi-proxy that went away)",
		       qmi_service_get_string(qmi_client_get_service(client)),
		       qmi_client_get_cid(client));
	release_tracked(qm, client, NULL, QMI_TIMEOUT_SECONDS);
	g_object_unref(client);
}

void qmi_modem_release_session_client(QmiDevice *device, QmiClient *client)
{
	for (struct qmi_modem *qm = live_modems; qm; qm = qm->next_live)
		if (qm->device == device) {
			/* Listed in <link>.clients (written now) until the modem answers. */
			release_tracked(qm, client, NULL, 1);
			qmi_modem_record_clients(qm);
			return;
		}
	qmi_device_release_client(device, client, QMI_DEVICE_RELEASE_CLIENT_FLAGS_RELEASE_CID, 1,
				  NULL, NULL, NULL);
}

/* Release the id recorded for service (listed in qm->releasing until answered). */
static void release_recorded(struct qmi_modem *qm, struct qmi_state_client id)
{
	if (releasing_has(qm, id))
		return;
	releasing_add(qm, id);
	qmi_device_allocate_client(qm->device, (QmiService)id.service, id.cid, QMI_TIMEOUT_SECONDS,
				   qm->cancellable, stale_client_ready, qm);
}

void qmi_modem_release_unclaimed(struct qmi_modem *qm, const uint64_t *with_session)
{
	if (!qm->device || qm->state != MODEM_CONTROL_READY)
		return;
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		struct qmi_state_mux mx;

		if (modem_mux_set_has(with_session, id))
			continue;
		int r = qmi_state_read_mux(qm->path, id, &mx);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			log_modem_warning_errno(qm->path, r,
						"removing the unreadable state of mux %u the last "
						"run left",
						id);
			qmi_state_remove_mux(qm->path, id);
			continue;
		}
		/* A mux removed, or added at run time, before a crash or a restart: its
		 * session would stay up in the modem and its clients allocated for ever.
		 * Releasing the client that started the network ends it. The ids go into
		 * "<link>.clients" before the file goes, so a crash meanwhile loses none. */
		log_modem_info(qm->path,
			       "mux %u of the last run is not here now: ending its session", id);
		for (unsigned i = 0; i < 2; i++)
			if (mx.fam[i].present)
				release_recorded(qm, (struct qmi_state_client){ QMI_SERVICE_WDS,
										mx.fam[i].cid });
		qmi_modem_record_clients(qm);
		qmi_state_remove_mux(qm->path, id);
	}
}

/* A release of id was sent and is not answered yet. An id listed in qm->releasing without
 * one (its release went unanswered, or through a device that died) is released again. */
static bool release_in_flight(const struct qmi_modem *qm, struct qmi_state_client id)
{
	for (const struct qmi_release *rel = qm->releases; rel; rel = rel->next)
		if (same_client(rel->id, id))
			return true;
	return false;
}

static void release_stale_clients(struct qmi_modem *qm)
{
	struct qmi_state_clients stale;
	int r = qmi_state_read_clients(qm->path, &stale);

	if (r < 0 && r != -ENOENT)
		log_modem_warning_errno(qm->path, r, "ignoring the client ids the last run left");
	for (unsigned i = 0; r >= 0 && i < stale.n; i++) {
		if (release_in_flight(qm, stale.c[i]))
			continue;	       /* ours, its release under way */
		releasing_add(qm, stale.c[i]); /* listed until its release is answered */
		qmi_device_allocate_client(qm->device, (QmiService)stale.c[i].service,
					   stale.c[i].cid, QMI_TIMEOUT_SECONDS, qm->cancellable,
					   stale_client_ready, qm);
	}
	qmi_modem_record_clients(qm); /* only the releases under way */
	allocate_next_client(qm);
}

static void device_open_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct qmi_modem *qm = user_data;

	if (!qmi_device_open_finish(QMI_DEVICE(src), res, &error)) {
		if (qmi_step_cancelled(error))
			return;
		if (g_error_matches(error, QMI_CORE_ERROR, QMI_CORE_ERROR_TIMEOUT)) {
			/* A modem in the wrong USB configuration never answers CTL at all
			 * (docs/PROTOCOLS.md §5): say so instead of just "timeout". */
			g_autoptr(GError) e = g_error_new(
				QMI_CORE_ERROR, QMI_CORE_ERROR_TIMEOUT,
				"the modem answered no QMI (CTL) within %u s: is the interface in "
				"QMI mode, the USB configuration the QMI one (not MBIM)? (%s)",
				qm->request.open_timeout, error->message);
			qmi_modem_fail(qm, "open", e);
			return;
		}
		qmi_modem_fail(qm, "open through qmi-proxy", error);
		return;
	}
	log_modem_debug(qm->path, "QMI device open");
	release_stale_clients(qm);
}

static void device_new_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	GObject *obj = g_async_initable_new_finish(G_ASYNC_INITABLE(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error)) {
		g_clear_object(&obj);
		return;
	}
	if (!obj) {
		qmi_modem_fail(qm, "create QMI device", error);
		return;
	}
	qm->device = QMI_DEVICE(obj);
	qm->removed_id = g_signal_connect(qm->device, QMI_DEVICE_SIGNAL_REMOVED,
					  G_CALLBACK(device_removed), qm);
	/*
	 * Always through qmi-proxy: qmicli -p and qmapd then share the one control channel.
	 * Mixing proxied and direct openers on one port loses responses (docs/PROTOCOLS.md §4.3).
	 */
	qmi_device_open(qm->device,
			QMI_DEVICE_OPEN_FLAGS_PROXY | QMI_DEVICE_OPEN_FLAGS_VERSION_INFO,
			qm->request.open_timeout, qm->cancellable, device_open_ready, qm);
}

void qmi_modem_start(struct qmi_modem *qm)
{
	qmi_modem_reset(qm);
	ev_timer_stop(qm->loop, &qm->retry);
	qm->state = MODEM_CONTROL_OPENING;
	qm->cancellable = g_cancellable_new();

	g_autoptr(GFile) file = g_file_new_for_path(qm->path);
	/* The pty is no cdc-wdm character device: skip libqmi's file type check. */
	g_async_initable_new_async(QMI_TYPE_DEVICE, G_PRIORITY_DEFAULT, qm->cancellable,
				   device_new_ready, qm, QMI_DEVICE_FILE, file,
				   QMI_DEVICE_NO_FILE_CHECK, TRUE, NULL);
}

void qmi_modem_stop(struct qmi_modem *qm)
{
	ev_timer_stop(qm->loop, &qm->retry);
	qmi_modem_reset(qm);
	qm->attempts = 0;
	qm->reopening = false;
}

static void qmi_modem_on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	qmi_modem_start(w->data);
}

int qmi_modem_new(struct ev_loop *loop, const char *path,
		  const struct modem_control_request *request,
		  const struct modem_control_callbacks *cb, void *userdata, struct qmi_modem **ret)
{
	struct qmi_modem *qm = calloc(1, sizeof(*qm));

	if (!qm)
		return -ENOMEM;
	qm->path = strdup(path);
	if (!qm->path) {
		free(qm);
		return -ENOMEM;
	}
	qm->loop = loop;
	qm->request = *request;
	if (qm->request.open_timeout == 0) /* never 0 s: the config's minimum is 1 s */
		qm->request.open_timeout = 1;
	qm->cb = *cb;
	qm->userdata = userdata;
	qm->data_interface = -1;
	qm->info.ps_attached = -1;
	qm->info.attach_pdp_type = -1;
	qm->info.operating_mode = -1;
	snprintf(qm->registration, sizeof(qm->registration), "unknown");
	ev_timer_init(&qm->radio_poll, qmi_modem_on_radio_poll, 0., QMI_RADIO_POLL_SECONDS);
	ev_timer_init(&qm->retry, qmi_modem_on_retry, 0., 0.);
	qm->radio_poll.data = qm->retry.data = qm;
	qm->next_live = live_modems;
	live_modems = qm;
	*ret = qm;
	return 0;
}

struct qmi_modem *qmi_modem_free(struct qmi_modem *qm)
{
	if (!qm)
		return NULL;
	qmi_modem_stop(qm);
	/* Releases still unanswered (past the exit's deadline) find no modem: their ids stay
	 * in the file for the next qmapd. */
	for (struct qmi_release *rel = qm->releases; rel; rel = rel->next)
		rel->qm = NULL;
	for (struct qmi_modem **p = &live_modems; *p; p = &(*p)->next_live)
		if (*p == qm) {
			*p = qm->next_live;
			break;
		}
	free(qm->manufacturer);
	free(qm->iccid);
	free(qm->imsi);
	free(qm->model);
	free(qm->revision);
	free(qm->imei);
	qmi_info_clear(&qm->info);
	free(qm->path);
	free(qm);
	return NULL;
}
