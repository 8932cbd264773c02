/* SPDX-License-Identifier: MIT */
/*
 * Messaging over MBIM's SMS service, as ModemManager's MBIM modem does it: SMS_CONFIGURATION
 * says whether the modem's storage is initialized (else no messaging), SMS_READ in PDU format
 * lists every stored message, SMS_SEND hands over one PDU, SMS_DELETE removes one by index,
 * and an SMS_MESSAGE_STORE_STATUS indication with the new-message flag counts in
 * sms_received (the D-Bus side lists again). MBIM has one message store: it is shown as MT
 * storage, and the PDUs carry the SMSC address first as over QMI.
 */
#include <errno.h>
#include <string.h>

#include "log-modem.h"
#include "mbim-modem.h"

#define MBIM_SMS_TIMEOUT_SECONDS 10

static MbimMessage *sms_finish(GObject *src, GAsyncResult *res, GError **error)
{
	MbimMessage *resp = mbim_device_command_finish(MBIM_DEVICE(src), res, error);
	if (resp && !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, error))
		g_clear_pointer(&resp, mbim_message_unref);
	return resp;
}

static void on_indicate_status(MbimDevice *device, MbimMessage *msg, gpointer user_data)
{
	struct mbim_modem *mm = user_data;
	MbimSmsStatusFlag flag;
	guint32 index;

	(void)device;
	if (mbim_message_indicate_status_get_service(msg) != MBIM_SERVICE_SMS ||
	    mbim_message_indicate_status_get_cid(msg) != MBIM_CID_SMS_MESSAGE_STORE_STATUS)
		return;
	if (!mbim_message_sms_message_store_status_notification_parse(msg, &flag, &index, NULL)) {
		log_modem_warning(mm->path, "malformed SMS store status indication");
		return;
	}
	if (flag & MBIM_SMS_STATUS_FLAG_NEW_MESSAGE) {
		mm->sms_received++;
		log_modem_info(mm->path, "new message stored (%u)", index);
	}
}

static void configuration_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = sms_finish(src, res, &error);
	struct mbim_modem *mm = user_data;
	MbimSmsStorageState state;
	MbimSmsFormat format;
	g_autofree char *sc = NULL;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !mbim_message_sms_configuration_response_parse(resp, &state, &format, NULL,
								    NULL, &sc, &error)) {
		log_modem_info(mm->path, "no messaging: %s", error->message);
		return;
	}
	if (state != MBIM_SMS_STORAGE_STATE_INITIALIZED) {
		log_modem_info(mm->path, "no messaging: SMS storage not initialized");
		return;
	}
	mm->sms_ready = true;
}

void mbim_sms_start(struct mbim_modem *mm)
{
	if (!mm->indicate_id)
		mm->indicate_id = g_signal_connect(mm->device, MBIM_DEVICE_SIGNAL_INDICATE_STATUS,
						   G_CALLBACK(on_indicate_status), mm);
	MbimMessage *msg = mbim_message_sms_configuration_query_new(NULL);
	mbim_device_command(mm->device, msg, MBIM_SMS_TIMEOUT_SECONDS, mm->cancellable,
			    configuration_ready, mm);
	mbim_message_unref(msg);
}

void mbim_sms_stop(struct mbim_modem *mm)
{
	if (mm->device && mm->indicate_id)
		g_signal_handler_disconnect(mm->device, mm->indicate_id);
	mm->indicate_id = 0;
	mm->sms_ready = false;
}

/* ---- list ---------------------------------------------------------------------------------- */

struct list_ctx {
	struct mbim_modem *mm;
	modem_sms_list_done done;
	void *userdata;
};

static void read_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = sms_finish(src, res, &error);
	struct list_ctx ctx = *(struct list_ctx *)user_data;
	MbimSmsPduReadRecordArray *records = NULL;
	guint32 n = 0;

	g_free(user_data);
	if (mbim_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away", NULL, 0);
		return;
	}
	if (!resp ||
	    !mbim_message_sms_read_response_parse(resp, NULL, &n, &records, NULL, &error)) {
		ctx.done(ctx.userdata, -EIO, error->message, NULL, 0);
		return;
	}
	struct modem_sms *msgs = g_new0(struct modem_sms, n ? n : 1);
	size_t k = 0;
	for (guint32 i = 0; records && i < n; i++) {
		const MbimSmsPduReadRecord *r = records[i];
		if (r->pdu_data_size > MODEM_SMS_PDU_MAX) {
			log_modem_warning(ctx.mm->path, "message %u: %u bytes: not used",
					  r->message_index, r->pdu_data_size);
			continue;
		}
		msgs[k] = (struct modem_sms){
			.storage = MODEM_SMS_STORAGE_MT,
			.index = r->message_index,
			.received = r->message_status == MBIM_SMS_STATUS_NEW ||
				    r->message_status == MBIM_SMS_STATUS_OLD,
			.len = r->pdu_data_size,
		};
		memcpy(msgs[k].pdu, r->pdu_data, r->pdu_data_size);
		k++;
	}
	if (records)
		mbim_sms_pdu_read_record_array_free(records);
	ctx.done(ctx.userdata, 0, "", msgs, k);
	g_free(msgs);
}

void mbim_sms_list(struct mbim_modem *mm, modem_sms_list_done done, void *userdata)
{
	if (mm->state != MBIM_MODEM_STATE_READY || !mm->sms_ready) {
		done(userdata, -EAGAIN, "the modem has no messaging now", NULL, 0);
		return;
	}
	struct list_ctx *ctx = g_new(struct list_ctx, 1);
	*ctx = (struct list_ctx){ .mm = mm, .done = done, .userdata = userdata };
	MbimMessage *msg =
		mbim_message_sms_read_query_new(MBIM_SMS_FORMAT_PDU, MBIM_SMS_FLAG_ALL, 0, NULL);
	mbim_device_command(mm->device, msg, MBIM_SMS_TIMEOUT_SECONDS, mm->cancellable, read_ready,
			    ctx);
	mbim_message_unref(msg);
}

/* ---- send and delete ----------------------------------------------------------------------- */

struct op_ctx {
	modem_sms_done done;
	void *userdata;
};

static void op_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = sms_finish(src, res, &error);
	struct op_ctx ctx = *(struct op_ctx *)user_data;

	g_free(user_data);
	if (mbim_step_cancelled(error))
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
	else if (!resp)
		ctx.done(ctx.userdata, -EIO, error->message);
	else
		ctx.done(ctx.userdata, 0, "");
}

static void op_start(struct mbim_modem *mm, MbimMessage *msg, modem_sms_done done, void *userdata)
{
	struct op_ctx *ctx = g_new(struct op_ctx, 1);

	*ctx = (struct op_ctx){ .done = done, .userdata = userdata };
	mbim_device_command(mm->device, msg, MBIM_SMS_TIMEOUT_SECONDS, mm->cancellable, op_ready,
			    ctx);
	mbim_message_unref(msg);
}

void mbim_sms_send(struct mbim_modem *mm, const uint8_t *pdu, size_t len, modem_sms_done done,
		   void *userdata)
{
	if (mm->state != MBIM_MODEM_STATE_READY || !mm->sms_ready) {
		done(userdata, -EAGAIN, "the modem has no messaging now");
		return;
	}
	uint8_t copy[MODEM_SMS_PDU_MAX];
	MbimSmsPduSendRecord record = { .pdu_data_size = (guint32)len, .pdu_data = copy };
	memcpy(copy, pdu, len < sizeof(copy) ? len : sizeof(copy));
	g_autoptr(GError) error = NULL;
	MbimMessage *msg =
		mbim_message_sms_send_set_new(MBIM_SMS_FORMAT_PDU, &record, NULL, &error);
	if (!msg) {
		done(userdata, -EINVAL, error->message);
		return;
	}
	op_start(mm, msg, done, userdata);
}

void mbim_sms_delete(struct mbim_modem *mm, enum modem_sms_storage storage, uint32_t index,
		     modem_sms_done done, void *userdata)
{
	(void)storage; /* one store */
	if (mm->state != MBIM_MODEM_STATE_READY || !mm->sms_ready) {
		done(userdata, -EAGAIN, "the modem has no messaging now");
		return;
	}
	op_start(mm, mbim_message_sms_delete_set_new(MBIM_SMS_FLAG_INDEX, index, NULL), done,
		 userdata);
}
