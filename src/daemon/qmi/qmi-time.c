/* SPDX-License-Identifier: MIT */
/*
 * The network's time (NITZ) through NAS Get Network Time (0x007D), what ModemManager's QMI
 * modem reads for its Time interface (mm-broadband-modem-qmi.c: the 3GPP time, its zone in
 * quarter hours). libqmi as distributions build it may leave this message out of its
 * collection, so the request is sent as a raw message and the answer read by hand, after
 * libqmi's definition (qmi-service-nas.json): TLV 0x10 3GPP2 time, 0x11 3GPP time, each
 * {year u16, month, day, hour, minute, second, day of week u8, zone offset i8 (15 min), DST
 * u8 (hours), radio interface i8}, the time universal (UTC).
 */
#include <errno.h>
#include <string.h>

#include "log-modem.h"
#include "qmi-modem.h"

#define QMI_NAS_GET_NETWORK_TIME 0x007D
#define QMI_TIME_TIMEOUT_SECONDS 10
#define TIME_TLV_LEN		 11

static uint16_t le16(const guint8 *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int qmi_time_parse(QmiMessage *resp, struct modem_network_time *ret, int *qmi_error)
{
	guint16 len = 0;
	const guint8 *r = qmi_message_get_raw_tlv(resp, 0x02, &len);

	*qmi_error = 0;
	if (!r || len != 4)
		return -EPROTO;
	if (le16(r) != 0) {
		*qmi_error = le16(r + 2);
		return -EIO;
	}
	const guint8 *t = qmi_message_get_raw_tlv(resp, 0x11, &len);
	if (!t)
		t = qmi_message_get_raw_tlv(resp, 0x10, &len);
	if (!t)
		return -ENOMSG;
	if (len != TIME_TLV_LEN)
		return -EPROTO;
	*ret = (struct modem_network_time){
		.year = le16(t),
		.month = t[2],
		.day = t[3],
		.hour = t[4],
		.minute = t[5],
		.second = t[6],
		.have_zone = true,
		.offset_minutes = (int8_t)t[8] * 15,
		.dst_minutes = t[9] * 60,
	};
	/* A date no calendar has is not the network's time (seconds up to 60: a leap one). */
	if (ret->month < 1 || ret->month > 12 || ret->day < 1 || ret->day > 31 || ret->hour > 23 ||
	    ret->minute > 59 || ret->second > 60 || ret->offset_minutes < -12 * 60 - 60 ||
	    ret->offset_minutes > 14 * 60 || t[9] > 2)
		return -EPROTO;
	return 0;
}

struct time_ctx {
	struct qmi_modem *qm;
	GCancellable *cancellable; /* the attempt's: cancelled, qm may be onto another */
	modem_time_done done;
	void *userdata;
};

static void time_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessage) resp = qmi_device_command_full_finish(QMI_DEVICE(src), res, &error);
	struct time_ctx ctx = *(struct time_ctx *)user_data;
	struct modem_network_time t;
	int qmi_error = 0, r;
	char why[96];

	g_free(user_data);
	/* libqmi reports a cancelled command as ABORTED: the cancellable tells. */
	if (g_cancellable_is_cancelled(ctx.cancellable)) {
		g_object_unref(ctx.cancellable);
		if (ctx.done)
			ctx.done(ctx.userdata, -ENODEV, "the modem went away", NULL);
		return;
	}
	g_object_unref(ctx.cancellable);
	struct qmi_modem *qm = ctx.qm;
	r = resp ? qmi_time_parse(resp, &t, &qmi_error) : -EIO;
	if (!resp)
		snprintf(why, sizeof(why), "%s", error->message);
	else if (r == -EIO)
		snprintf(why, sizeof(why), "%s",
			 qmi_protocol_error_get_string((QmiProtocolError)qmi_error) ?: "QMI error");
	else if (r == -ENOMSG)
		snprintf(why, sizeof(why), "the network has not told the time");
	else if (r < 0)
		snprintf(why, sizeof(why), "malformed answer");
	/* Firmware without the message, as ModemManager's support check reads it: no time. */
	if (r == -EIO && (qmi_error == QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND ||
			  qmi_error == QMI_PROTOCOL_ERROR_NOT_SUPPORTED))
		qm->info.network_time = 0;
	else if (resp && r != -EPROTO)
		qm->info.network_time = 1;
	if (r == 0) {
		qm->info.have_zone = true;
		qm->info.zone_quarters = (int8_t)(t.offset_minutes / 15);
		qm->info.zone_dst = (uint8_t)(t.dst_minutes / 60);
	} else
		log_modem_debug(qm->path, "network time: %s", why);
	if (ctx.done)
		ctx.done(ctx.userdata, r == -ENOMSG ? -EAGAIN : r, r ? why : "", r ? NULL : &t);
}

void qmi_time_query(struct qmi_modem *qm, modem_time_done done, void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->nas) {
		if (done)
			done(userdata, -EAGAIN,
			     qm->state != MODEM_CONTROL_READY ? "the modem is not ready"
							      : "the modem has no NAS service",
			     NULL);
		return;
	}
	if (qm->info.network_time == 0) {
		if (done)
			done(userdata, -EOPNOTSUPP, "the modem does not tell the network's time",
			     NULL);
		return;
	}
	QmiClient *nas = qm->nas;
	g_autoptr(QmiMessage) req =
		qmi_message_new(QMI_SERVICE_NAS, qmi_client_get_cid(nas),
				qmi_client_get_next_transaction_id(nas), QMI_NAS_GET_NETWORK_TIME);
	struct time_ctx *ctx = g_new(struct time_ctx, 1);

	*ctx = (struct time_ctx){ .qm = qm,
				  .cancellable = g_object_ref(qm->cancellable),
				  .done = done,
				  .userdata = userdata };
	qmi_device_command_full(qm->device, req, NULL, QMI_TIME_TIMEOUT_SECONDS, qm->cancellable,
				time_ready, ctx);
}
