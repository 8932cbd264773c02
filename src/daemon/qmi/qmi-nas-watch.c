/* SPDX-License-Identifier: MIT */
/*
 * Registration as it changes: NAS Register Indications asks the modem for Serving System
 * indications (ModemManager asks for the same in mm-broadband-modem-qmi.c), which carry the
 * TLVs of a Get Serving System answer. Without them a change (roaming starts, the network
 * drops us) waits for the next poll, up to 30 s; the poll stays, for modems that refuse.
 */
#include <string.h>

#include "log-modem.h"
#include "qmi-modem.h"

#define QMI_NAS_WATCH_TIMEOUT_SECONDS 10

static void on_serving_system(QmiClientNas *client, QmiIndicationNasServingSystemOutput *out,
			      gpointer user_data)
{
	struct qmi_modem *qm = user_data;
	struct qmi_serving sv;
	char before[sizeof(qm->registration)];

	(void)client;
	memcpy(before, qm->registration, sizeof(before));
	QMI_SERVING_READ(qmi_indication_nas_serving_system_output, out, &sv);
	if (!sv.valid) {
		log_modem_debug(qm->path, "serving system indication without its state: ignored");
		return;
	}
	qmi_modem_serving_system(qm, &sv);
	if (strcmp(before, qm->registration) != 0)
		log_modem_info(qm->path, "registration %s (indication)", qm->registration);
}

static void register_indications_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasRegisterIndicationsOutput) out =
		qmi_client_nas_register_indications_finish(QMI_CLIENT_NAS(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_nas_register_indications_output_get_result(out, &error)) {
		log_modem_info(qm->path, "no serving system indications (%s): polling registration",
			       error->message);
		return;
	}
	if (!qm->nas_serving_id)
		qm->nas_serving_id = g_signal_connect(qm->nas, "serving-system",
						      G_CALLBACK(on_serving_system), qm);
}

void qmi_nas_watch_start(struct qmi_modem *qm)
{
	g_autoptr(QmiMessageNasRegisterIndicationsInput) in = NULL;

	if (!qm->nas)
		return;
	in = qmi_message_nas_register_indications_input_new();
	qmi_message_nas_register_indications_input_set_serving_system_events(in, TRUE, NULL);
	qmi_client_nas_register_indications(QMI_CLIENT_NAS(qm->nas), in,
					    QMI_NAS_WATCH_TIMEOUT_SECONDS, qm->cancellable,
					    register_indications_ready, qm);
}

void qmi_nas_watch_stop(struct qmi_modem *qm)
{
	if (qm->nas && qm->nas_serving_id)
		g_signal_handler_disconnect(qm->nas, qm->nas_serving_id);
	qm->nas_serving_id = 0;
}
