/* SPDX-License-Identifier: MIT */
/*
 * Messaging over QMI WMS, set up as ModemManager's QMI modem does: every class of
 * point-to-point message is routed to NV storage with store-and-notify, and Event Report is
 * asked for new MT messages (each one counted in sms_received: the D-Bus side lists again).
 * Listing is List Messages (3GPP mode) in NV, then UIM, and Raw Read of each; sending is Raw
 * Send of the whole PDU; deleting is Delete by storage and index. A modem without WMS (the
 * allocation fails) has no messaging: tells_sms stays false.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log-modem.h"
#include "qmi-modem.h"

#define QMI_SMS_TIMEOUT_SECONDS 10
/* More messages in one storage than this are not read (a SIM holds tens, NV a few hundred). */
#define QMI_SMS_LIST_MAX 255

static QmiWmsStorageType storage_to_qmi(enum modem_sms_storage s)
{
	return s == MODEM_SMS_STORAGE_SM ? QMI_WMS_STORAGE_TYPE_UIM : QMI_WMS_STORAGE_TYPE_NV;
}

static enum modem_sms_storage storage_from_qmi(QmiWmsStorageType s)
{
	return s == QMI_WMS_STORAGE_TYPE_UIM ? MODEM_SMS_STORAGE_SM : MODEM_SMS_STORAGE_ME;
}

/* ---- set up: routes, then event report --------------------------------------------------- */

static void on_event_report(QmiClientWms *client, QmiIndicationWmsEventReportOutput *out,
			    gpointer user_data)
{
	struct qmi_modem *qm = user_data;
	QmiWmsStorageType storage;
	guint32 index;

	(void)client;
	if (!qmi_indication_wms_event_report_output_get_mt_message(out, &storage, &index, NULL))
		return;
	qm->sms_received++;
	log_modem_info(qm->path, "new message stored (%s %u)",
		       qmi_wms_storage_type_get_string(storage) ?: "?", index);
}

static void event_report_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWmsSetEventReportOutput) out =
		qmi_client_wms_set_event_report_finish(QMI_CLIENT_WMS(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error))
		return;
	/* Without indications, messages are still listed when a client asks. */
	if (!out || !qmi_message_wms_set_event_report_output_get_result(out, &error))
		log_modem_warning(qm->path, "WMS event report: %s", error->message);
}

static void routes_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWmsSetRoutesOutput) out =
		qmi_client_wms_set_routes_finish(QMI_CLIENT_WMS(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_wms_set_routes_output_get_result(out, &error))
		log_modem_warning(qm->path, "WMS routes: %s", error->message);
	g_autoptr(QmiMessageWmsSetEventReportInput) in =
		qmi_message_wms_set_event_report_input_new();
	qmi_message_wms_set_event_report_input_set_new_mt_message_indicator(in, TRUE, NULL);
	qmi_client_wms_set_event_report(QMI_CLIENT_WMS(qm->wms), in, QMI_SMS_TIMEOUT_SECONDS,
					qm->cancellable, event_report_ready, qm);
}

static void wms_allocate_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct qmi_modem *qm = user_data;
	int r = qmi_modem_allocate_finish(qm, src, res, &error);

	if (r == -ECANCELED)
		return;
	if (r < 0) {
		log_modem_info(qm->path, "no messaging: %s", error->message);
		return;
	}
	qm->wms_event_id =
		g_signal_connect(qm->wms, "event-report", G_CALLBACK(on_event_report), qm);

	g_autoptr(QmiMessageWmsSetRoutesInput) in = qmi_message_wms_set_routes_input_new();
	g_autoptr(GArray) routes =
		g_array_new(FALSE, FALSE, sizeof(QmiMessageWmsSetRoutesInputRouteListElement));
	static const QmiWmsMessageClass classes[] = {
		QMI_WMS_MESSAGE_CLASS_0, QMI_WMS_MESSAGE_CLASS_1, QMI_WMS_MESSAGE_CLASS_2,
		QMI_WMS_MESSAGE_CLASS_3, QMI_WMS_MESSAGE_CLASS_NONE
	};
	for (size_t i = 0; i < G_N_ELEMENTS(classes); i++) {
		QmiMessageWmsSetRoutesInputRouteListElement e = {
			.message_type = QMI_WMS_MESSAGE_TYPE_POINT_TO_POINT,
			.message_class = classes[i],
			.storage = QMI_WMS_STORAGE_TYPE_NV,
			.receipt_action = QMI_WMS_RECEIPT_ACTION_STORE_AND_NOTIFY,
		};
		g_array_append_val(routes, e);
	}
	qmi_message_wms_set_routes_input_set_route_list(in, routes, NULL);
	qmi_client_wms_set_routes(QMI_CLIENT_WMS(qm->wms), in, QMI_SMS_TIMEOUT_SECONDS,
				  qm->cancellable, routes_ready, qm);
}

void qmi_sms_start(struct qmi_modem *qm)
{
	if (qm->wms)
		return;
	qmi_device_allocate_client(qm->device, QMI_SERVICE_WMS, QMI_CID_NONE,
				   QMI_SMS_TIMEOUT_SECONDS, qm->cancellable, wms_allocate_ready,
				   qm);
}

void qmi_sms_stop(struct qmi_modem *qm)
{
	if (qm->wms && qm->wms_event_id)
		g_signal_handler_disconnect(qm->wms, qm->wms_event_id);
	qm->wms_event_id = 0;
}

/* ---- list: List Messages per storage, Raw Read per message -------------------------------- */

struct list_ctx {
	struct qmi_modem *qm;
	modem_sms_list_done done;
	void *userdata;
	unsigned storage; /* index into list_storages */
	GArray *pending;  /* QmiMessageWmsListMessagesOutputMessageListElement of this storage */
	guint next;	  /* the next of pending to read */
	struct modem_sms *msgs;
	size_t n, alloc;
};

static const QmiWmsStorageType list_storages[] = { QMI_WMS_STORAGE_TYPE_NV,
						   QMI_WMS_STORAGE_TYPE_UIM };

static void list_storage(struct list_ctx *ctx);

static void list_end(struct list_ctx *ctx, int r, const char *message)
{
	ctx->done(ctx->userdata, r, message, ctx->msgs, r < 0 ? 0 : ctx->n);
	if (ctx->pending)
		g_array_unref(ctx->pending);
	free(ctx->msgs);
	free(ctx);
}

static void read_next(struct list_ctx *ctx);

static void raw_read_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWmsRawReadOutput) out =
		qmi_client_wms_raw_read_finish(QMI_CLIENT_WMS(src), res, &error);
	struct list_ctx *ctx = user_data;
	QmiWmsMessageTagType tag;
	QmiWmsMessageFormat format;
	GArray *data = NULL;

	if (qmi_step_cancelled(error)) {
		list_end(ctx, -ENODEV, "the modem went away");
		return;
	}
	QmiMessageWmsListMessagesOutputMessageListElement *e = &g_array_index(
		ctx->pending, QmiMessageWmsListMessagesOutputMessageListElement, ctx->next - 1);
	if (!out || !qmi_message_wms_raw_read_output_get_result(out, &error) ||
	    !qmi_message_wms_raw_read_output_get_raw_message_data(out, &tag, &format, &data,
								  &error)) {
		/* One unreadable message does not hide the others. */
		log_modem_warning(ctx->qm->path, "message %u unreadable: %s", e->memory_index,
				  error ? error->message : "?");
		read_next(ctx);
		return;
	}
	if (format != QMI_WMS_MESSAGE_FORMAT_GSM_WCDMA_POINT_TO_POINT ||
	    data->len > MODEM_SMS_PDU_MAX) {
		log_modem_warning(ctx->qm->path, "message %u: format %d, %u bytes: not used",
				  e->memory_index, (int)format, data->len);
		read_next(ctx);
		return;
	}
	if (ctx->n == ctx->alloc) {
		size_t alloc = ctx->alloc ? ctx->alloc * 2 : 8;
		struct modem_sms *m = realloc(ctx->msgs, alloc * sizeof(*m));
		if (!m) {
			list_end(ctx, -ENOMEM, "out of memory");
			return;
		}
		ctx->msgs = m;
		ctx->alloc = alloc;
	}
	struct modem_sms *m = &ctx->msgs[ctx->n++];
	*m = (struct modem_sms){
		.storage = storage_from_qmi(list_storages[ctx->storage]),
		.index = e->memory_index,
		.received = tag == QMI_WMS_MESSAGE_TAG_TYPE_MT_READ ||
			    tag == QMI_WMS_MESSAGE_TAG_TYPE_MT_NOT_READ,
		.len = data->len,
	};
	memcpy(m->pdu, data->data, data->len);
	read_next(ctx);
}

static void read_next(struct list_ctx *ctx)
{
	if (ctx->next >= ctx->pending->len || ctx->next >= QMI_SMS_LIST_MAX) {
		g_clear_pointer(&ctx->pending, g_array_unref);
		ctx->storage++;
		list_storage(ctx);
		return;
	}
	QmiMessageWmsListMessagesOutputMessageListElement *e = &g_array_index(
		ctx->pending, QmiMessageWmsListMessagesOutputMessageListElement, ctx->next++);
	g_autoptr(QmiMessageWmsRawReadInput) in = qmi_message_wms_raw_read_input_new();
	qmi_message_wms_raw_read_input_set_message_memory_storage_id(
		in, list_storages[ctx->storage], e->memory_index, NULL);
	qmi_message_wms_raw_read_input_set_message_mode(in, QMI_WMS_MESSAGE_MODE_GSM_WCDMA, NULL);
	qmi_client_wms_raw_read(QMI_CLIENT_WMS(ctx->qm->wms), in, QMI_SMS_TIMEOUT_SECONDS,
				ctx->qm->cancellable, raw_read_ready, ctx);
}

static void list_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWmsListMessagesOutput) out =
		qmi_client_wms_list_messages_finish(QMI_CLIENT_WMS(src), res, &error);
	struct list_ctx *ctx = user_data;
	GArray *list = NULL;

	if (qmi_step_cancelled(error)) {
		list_end(ctx, -ENODEV, "the modem went away");
		return;
	}
	if (!out || !qmi_message_wms_list_messages_output_get_result(out, &error) ||
	    !qmi_message_wms_list_messages_output_get_message_list(out, &list, &error)) {
		/* A storage the modem does not have (no SIM storage): the next one. */
		log_modem_debug(ctx->qm->path, "messages in %s: %s",
				qmi_wms_storage_type_get_string(list_storages[ctx->storage]),
				error ? error->message : "?");
		ctx->storage++;
		list_storage(ctx);
		return;
	}
	ctx->pending = g_array_ref(list);
	ctx->next = 0;
	read_next(ctx);
}

static void list_storage(struct list_ctx *ctx)
{
	if (ctx->storage >= G_N_ELEMENTS(list_storages)) {
		list_end(ctx, 0, "");
		return;
	}
	g_autoptr(QmiMessageWmsListMessagesInput) in = qmi_message_wms_list_messages_input_new();
	qmi_message_wms_list_messages_input_set_storage_type(in, list_storages[ctx->storage], NULL);
	qmi_message_wms_list_messages_input_set_message_mode(in, QMI_WMS_MESSAGE_MODE_GSM_WCDMA,
							     NULL);
	qmi_client_wms_list_messages(QMI_CLIENT_WMS(ctx->qm->wms), in, QMI_SMS_TIMEOUT_SECONDS,
				     ctx->qm->cancellable, list_ready, ctx);
}

void qmi_sms_list(struct qmi_modem *qm, modem_sms_list_done done, void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->wms) {
		done(userdata, -EAGAIN, "the modem has no messaging now", NULL, 0);
		return;
	}
	struct list_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		done(userdata, -ENOMEM, "out of memory", NULL, 0);
		return;
	}
	*ctx = (struct list_ctx){ .qm = qm, .done = done, .userdata = userdata };
	list_storage(ctx);
}

/* ---- send and delete ----------------------------------------------------------------------- */

struct op_ctx {
	modem_sms_done done;
	void *userdata;
};

static void raw_send_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWmsRawSendOutput) out =
		qmi_client_wms_raw_send_finish(QMI_CLIENT_WMS(src), res, &error);
	struct op_ctx ctx = *(struct op_ctx *)user_data;
	QmiWmsGsmUmtsRpCause rp;
	QmiWmsGsmUmtsTpCause tp;

	g_free(user_data);
	if (qmi_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
		return;
	}
	if (!out || !qmi_message_wms_raw_send_output_get_result(out, &error)) {
		char msg[160];
		if (out &&
		    qmi_message_wms_raw_send_output_get_gsm_wcdma_cause_info(out, &rp, &tp, NULL))
			snprintf(msg, sizeof(msg), "%s (RP cause %s, TP cause %s)", error->message,
				 qmi_wms_gsm_umts_rp_cause_get_string(rp) ?: "?",
				 qmi_wms_gsm_umts_tp_cause_get_string(tp) ?: "?");
		else
			snprintf(msg, sizeof(msg), "%s", error->message);
		ctx.done(ctx.userdata, -EIO, msg);
		return;
	}
	ctx.done(ctx.userdata, 0, "");
}

void qmi_sms_send(struct qmi_modem *qm, const uint8_t *pdu, size_t len, modem_sms_done done,
		  void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->wms) {
		done(userdata, -EAGAIN, "the modem has no messaging now");
		return;
	}
	g_autoptr(QmiMessageWmsRawSendInput) in = qmi_message_wms_raw_send_input_new();
	g_autoptr(GArray) data = g_array_sized_new(FALSE, FALSE, 1, (guint)len);
	struct op_ctx *ctx = g_new(struct op_ctx, 1);

	*ctx = (struct op_ctx){ .done = done, .userdata = userdata };
	g_array_append_vals(data, pdu, (guint)len);
	qmi_message_wms_raw_send_input_set_raw_message_data(
		in, QMI_WMS_MESSAGE_FORMAT_GSM_WCDMA_POINT_TO_POINT, data, NULL);
	qmi_client_wms_raw_send(QMI_CLIENT_WMS(qm->wms), in, QMI_SMS_TIMEOUT_SECONDS,
				qm->cancellable, raw_send_ready, ctx);
}

static void delete_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWmsDeleteOutput) out =
		qmi_client_wms_delete_finish(QMI_CLIENT_WMS(src), res, &error);
	struct op_ctx ctx = *(struct op_ctx *)user_data;

	g_free(user_data);
	if (qmi_step_cancelled(error))
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
	else if (!out || !qmi_message_wms_delete_output_get_result(out, &error))
		ctx.done(ctx.userdata, -EIO, error->message);
	else
		ctx.done(ctx.userdata, 0, "");
}

void qmi_sms_delete(struct qmi_modem *qm, enum modem_sms_storage storage, uint32_t index,
		    modem_sms_done done, void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->wms) {
		done(userdata, -EAGAIN, "the modem has no messaging now");
		return;
	}
	g_autoptr(QmiMessageWmsDeleteInput) in = qmi_message_wms_delete_input_new();
	struct op_ctx *ctx = g_new(struct op_ctx, 1);

	*ctx = (struct op_ctx){ .done = done, .userdata = userdata };
	qmi_message_wms_delete_input_set_memory_storage(in, storage_to_qmi(storage), NULL);
	qmi_message_wms_delete_input_set_memory_index(in, index, NULL);
	qmi_message_wms_delete_input_set_message_mode(in, QMI_WMS_MESSAGE_MODE_GSM_WCDMA, NULL);
	qmi_client_wms_delete(QMI_CLIENT_WMS(qm->wms), in, QMI_SMS_TIMEOUT_SECONDS, qm->cancellable,
			      delete_ready, ctx);
}
