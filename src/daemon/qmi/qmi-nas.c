/* SPDX-License-Identifier: MIT */
/*
 * What clients ask of the modem's radio through NAS: the modes and LTE bands it may use
 * (Set System Selection Preference, then the preference read back: clients see what the
 * modem says, not what was asked), a network scan (Network Scan), registration in a chosen
 * network or automatic (Initiate Network Register), and the signal of every radio it measures
 * (Get Signal Info). ModemManager's mm-broadband-modem-qmi.c and mm-shared-qmi.c do the same
 * with the same messages; the values are read as they read them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log-modem.h"
#include "qmi-modem.h"

#define QMI_NAS_TIMEOUT_SECONDS 10
/* A scan takes minutes on a real modem (ModemManager waits 300 s). */
#define QMI_NAS_SCAN_TIMEOUT_SECONDS 300
/* Registration in a network may search for as long (ModemManager: 120 s). */
#define QMI_NAS_REGISTER_TIMEOUT_SECONDS 120

struct nas_ctx {
	struct qmi_modem *qm;
	modem_done done;
	modem_scan_done scan_done;
	void *userdata;
	const char *what; /* for the log: "modes", "bands", ... */
};

static struct nas_ctx *ctx_new(struct qmi_modem *qm, const char *what, modem_done done,
			       void *userdata)
{
	struct nas_ctx *ctx = g_new(struct nas_ctx, 1);

	*ctx = (struct nas_ctx){ .qm = qm, .done = done, .userdata = userdata, .what = what };
	return ctx;
}

static bool not_ready(struct qmi_modem *qm, modem_done done, void *userdata)
{
	if (qm->state == MODEM_CONTROL_READY && qm->nas)
		return false;
	done(userdata, -EAGAIN,
	     qm->state != MODEM_CONTROL_READY ? "the modem is not ready"
					      : "the modem has no NAS service");
	return true;
}

/* ---- modes and bands: set, then read back ----------------------------------------------- */

static void selection_read_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasGetSystemSelectionPreferenceOutput) out =
		qmi_client_nas_get_system_selection_preference_finish(QMI_CLIENT_NAS(src), res,
								      &error);
	struct nas_ctx ctx = *(struct nas_ctx *)user_data;

	g_free(user_data);
	if (qmi_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
		return;
	}
	if (out && qmi_message_nas_get_system_selection_preference_output_get_result(out, &error))
		qmi_info_selection_preference(ctx.qm, out);
	else
		log_modem_debug(ctx.qm->path, "system selection preference: %s", error->message);
	ctx.done(ctx.userdata, 0, "");
}

static void selection_set_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasSetSystemSelectionPreferenceOutput) out =
		qmi_client_nas_set_system_selection_preference_finish(QMI_CLIENT_NAS(src), res,
								      &error);
	struct nas_ctx *ctx = user_data;

	if (qmi_step_cancelled(error)) {
		ctx->done(ctx->userdata, -ENODEV, "the modem went away");
		g_free(ctx);
		return;
	}
	/* NO_EFFECT: the modem already had it (ModemManager takes it as success too). */
	if ((!out ||
	     !qmi_message_nas_set_system_selection_preference_output_get_result(out, &error)) &&
	    !g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_NO_EFFECT)) {
		log_modem_warning(ctx->qm->path, "%s not set: %s", ctx->what, error->message);
		ctx->done(ctx->userdata, -EIO, error->message);
		g_free(ctx);
		return;
	}
	log_modem_info(ctx->qm->path, "%s set", ctx->what);
	qmi_client_nas_get_system_selection_preference(
		QMI_CLIENT_NAS(ctx->qm->nas), NULL, QMI_NAS_TIMEOUT_SECONDS, ctx->qm->cancellable,
		selection_read_ready, ctx);
}

static void selection_set(struct qmi_modem *qm, QmiMessageNasSetSystemSelectionPreferenceInput *in,
			  struct nas_ctx *ctx)
{
	/* For good, as ModemManager sets it: a power cycle keeps the choice. */
	qmi_message_nas_set_system_selection_preference_input_set_change_duration(
		in, QMI_NAS_CHANGE_DURATION_PERMANENT, NULL);
	qmi_client_nas_set_system_selection_preference(QMI_CLIENT_NAS(qm->nas), in,
						       QMI_NAS_TIMEOUT_SECONDS, qm->cancellable,
						       selection_set_ready, ctx);
}

void qmi_nas_set_modes(struct qmi_modem *qm, enum modem_mode allowed, modem_done done,
		       void *userdata)
{
	if (not_ready(qm, done, userdata))
		return;
	uint16_t pref = qmi_map_mode_to_preference(allowed);
	if (!pref) {
		done(userdata, -EINVAL, "no 3GPP mode among those asked");
		return;
	}
	g_autoptr(QmiMessageNasSetSystemSelectionPreferenceInput) in =
		qmi_message_nas_set_system_selection_preference_input_new();
	qmi_message_nas_set_system_selection_preference_input_set_mode_preference(
		in, (QmiNasRatModePreference)pref, NULL);
	selection_set(qm, in, ctx_new(qm, "mode preference", done, userdata));
}

void qmi_nas_set_bands(struct qmi_modem *qm, const uint64_t lte_bands[QMI_LTE_BAND_WORDS],
		       modem_done done, void *userdata)
{
	if (not_ready(qm, done, userdata))
		return;
	g_autoptr(QmiMessageNasSetSystemSelectionPreferenceInput) in =
		qmi_message_nas_set_system_selection_preference_input_new();
	bool extended = lte_bands[1] || lte_bands[2] || lte_bands[3];
	/* Bands above 64 only fit the extended preference; the legacy one is what every
	 * firmware knows, so it is used when it can say it. */
	if (extended)
		qmi_message_nas_set_system_selection_preference_input_set_extended_lte_band_preference(
			in, lte_bands[0], lte_bands[1], lte_bands[2], lte_bands[3], NULL);
	else
		qmi_message_nas_set_system_selection_preference_input_set_lte_band_preference(
			in, (QmiNasLteBandPreference)lte_bands[0], NULL);
	selection_set(qm, in, ctx_new(qm, "LTE band preference", done, userdata));
}

/* ---- scan ------------------------------------------------------------------------------- */

static void scan_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasNetworkScanOutput) out =
		qmi_client_nas_network_scan_finish(QMI_CLIENT_NAS(src), res, &error);
	struct nas_ctx ctx = *(struct nas_ctx *)user_data;
	GArray *info = NULL, *rat = NULL;

	g_free(user_data);
	if (qmi_step_cancelled(error)) {
		ctx.scan_done(ctx.userdata, -ENODEV, "the modem went away", NULL, 0);
		return;
	}
	if (!out || !qmi_message_nas_network_scan_output_get_result(out, &error)) {
		log_modem_warning(ctx.qm->path, "network scan failed: %s", error->message);
		ctx.scan_done(ctx.userdata, -EIO, error->message, NULL, 0);
		return;
	}
	qmi_message_nas_network_scan_output_get_network_information(out, &info, NULL);
	qmi_message_nas_network_scan_output_get_radio_access_technology(out, &rat, NULL);
	size_t n = info ? info->len : 0;
	struct modem_network *nets = g_new0(struct modem_network, n ? n : 1);
	g_autofree bool *rat_used = g_new0(bool, rat && rat->len ? rat->len : 1);
	for (size_t i = 0; i < n; i++) {
		QmiMessageNasNetworkScanOutputNetworkInformationElement *e = &g_array_index(
			info, QmiMessageNasNetworkScanOutputNetworkInformationElement, i);
		struct modem_network *net = &nets[i];

		qmi_map_operator_code(e->mcc, e->mnc, net->operator_code,
				      sizeof(net->operator_code));
		snprintf(net->operator_long, sizeof(net->operator_long), "%s",
			 e->description ? e->description : "");
		net->status = qmi_map_network_status(e->network_status);
		/* The technologies come in a list of their own: the first unused entry of the
		 * same PLMN belongs to this network (a PLMN on two radios is listed twice). */
		for (guint k = 0; rat && k < rat->len; k++) {
			QmiMessageNasNetworkScanOutputRadioAccessTechnologyElement *t =
				&g_array_index(
					rat,
					QmiMessageNasNetworkScanOutputRadioAccessTechnologyElement,
					k);
			if (rat_used[k] || t->mcc != e->mcc || t->mnc != e->mnc)
				continue;
			rat_used[k] = true;
			net->access_technology = qmi_map_radio_interface(t->radio_interface);
			break;
		}
	}
	log_modem_info(ctx.qm->path, "network scan: %zu networks", n);
	ctx.scan_done(ctx.userdata, 0, "", nets, n);
	g_free(nets);
}

void qmi_nas_scan(struct qmi_modem *qm, modem_scan_done done, void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->nas) {
		done(userdata, -EAGAIN,
		     qm->state != MODEM_CONTROL_READY ? "the modem is not ready"
						      : "the modem has no NAS service",
		     NULL, 0);
		return;
	}
	struct nas_ctx *ctx = g_new(struct nas_ctx, 1);

	*ctx = (struct nas_ctx){ .qm = qm, .scan_done = done, .userdata = userdata };
	log_modem_info(qm->path, "scanning for networks");
	qmi_client_nas_network_scan(QMI_CLIENT_NAS(qm->nas), NULL, QMI_NAS_SCAN_TIMEOUT_SECONDS,
				    qm->cancellable, scan_ready, ctx);
}

/* ---- registration ----------------------------------------------------------------------- */

/* After the request, what the modem registered in: denied is the answer's failure (as
 * ModemManager reports a registration the network refused); searching is left to the polls. */
static void register_serving_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasGetServingSystemOutput) out =
		qmi_client_nas_get_serving_system_finish(QMI_CLIENT_NAS(src), res, &error);
	struct nas_ctx ctx = *(struct nas_ctx *)user_data;

	g_free(user_data);
	if (qmi_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
		return;
	}
	if (out && qmi_message_nas_get_serving_system_output_get_result(out, &error)) {
		struct qmi_serving sv;
		QMI_SERVING_READ(qmi_message_nas_get_serving_system_output, out, &sv);
		qmi_modem_serving_system(ctx.qm, &sv);
	}
	if (strcmp(ctx.qm->registration, "denied") == 0) {
		log_modem_warning(ctx.qm->path, "registration denied by the network");
		ctx.done(ctx.userdata, -EACCES, "registration denied by the network");
		return;
	}
	ctx.done(ctx.userdata, 0, "");
}

static void register_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasInitiateNetworkRegisterOutput) out =
		qmi_client_nas_initiate_network_register_finish(QMI_CLIENT_NAS(src), res, &error);
	struct nas_ctx *ctx = user_data;

	if (qmi_step_cancelled(error)) {
		ctx->done(ctx->userdata, -ENODEV, "the modem went away");
		g_free(ctx);
		return;
	}
	/* NO_EFFECT: registered there already (ModemManager's reading too). */
	if ((!out || !qmi_message_nas_initiate_network_register_output_get_result(out, &error)) &&
	    !g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_NO_EFFECT)) {
		log_modem_warning(ctx->qm->path, "network register failed: %s", error->message);
		ctx->done(ctx->userdata, -EIO, error->message);
		g_free(ctx);
		return;
	}
	qmi_client_nas_get_serving_system(QMI_CLIENT_NAS(ctx->qm->nas), NULL,
					  QMI_NAS_TIMEOUT_SECONDS, ctx->qm->cancellable,
					  register_serving_ready, ctx);
}

void qmi_nas_register(struct qmi_modem *qm, const char *operator_id, modem_done done,
		      void *userdata)
{
	uint16_t mcc = 0, mnc = 0;
	bool mnc3 = false;

	if (not_ready(qm, done, userdata))
		return;
	if (*operator_id && !qmi_map_parse_operator_id(operator_id, &mcc, &mnc, &mnc3)) {
		done(userdata, -EINVAL, "an operator id is 5 or 6 digits (MCC and MNC)");
		return;
	}
	g_autoptr(QmiMessageNasInitiateNetworkRegisterInput) in =
		qmi_message_nas_initiate_network_register_input_new();
	if (*operator_id) {
		qmi_message_nas_initiate_network_register_input_set_action(
			in, QMI_NAS_NETWORK_REGISTER_TYPE_MANUAL, NULL);
		/* The radio stays the modem's choice. */
		qmi_message_nas_initiate_network_register_input_set_manual_registration_info_3gpp(
			in, mcc, mnc, QMI_NAS_RADIO_INTERFACE_UNKNOWN, NULL);
		/* A 3-digit MNC below 100 ("001001") needs saying so. */
		if (mnc3 && mnc < 100)
			qmi_message_nas_initiate_network_register_input_set_mnc_pcs_digit_include_status(
				in, TRUE, NULL);
	} else
		qmi_message_nas_initiate_network_register_input_set_action(
			in, QMI_NAS_NETWORK_REGISTER_TYPE_AUTOMATIC, NULL);
	log_modem_info(qm->path, "registering %s%s", *operator_id ? "in " : "automatically",
		       operator_id);
	qmi_client_nas_initiate_network_register(
		QMI_CLIENT_NAS(qm->nas), in, QMI_NAS_REGISTER_TIMEOUT_SECONDS, qm->cancellable,
		register_ready, ctx_new(qm, "registration", done, userdata));
}

/* ---- signal ----------------------------------------------------------------------------- */

static struct modem_signal_values values_none(void)
{
	return (struct modem_signal_values){
		.rssi = NAN, .rsrq = NAN, .rsrp = NAN, .snr = NAN, .ecio = NAN
	};
}

static void signal_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasGetSignalInfoOutput) out =
		qmi_client_nas_get_signal_info_finish(QMI_CLIENT_NAS(src), res, &error);
	struct qmi_modem *qm = user_data;
	struct modem_signal s = { values_none(), values_none(), values_none(), values_none() };
	gint8 rssi, rsrq;
	gint16 rsrp, snr, ecio;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_nas_get_signal_info_output_get_result(out, &error)) {
		log_modem_debug(qm->path, "signal info: %s", error->message);
		return;
	}
	if (qmi_message_nas_get_signal_info_output_get_gsm_signal_strength(out, &rssi, NULL)) {
		s.gsm.valid = true;
		s.gsm.rssi = rssi;
	}
	/* Ec/Io comes in -0.5 dB steps (ModemManager reads it so). */
	if (qmi_message_nas_get_signal_info_output_get_wcdma_signal_strength(out, &rssi, &ecio,
									     NULL)) {
		s.umts.valid = true;
		s.umts.rssi = rssi;
		s.umts.ecio = -0.5 * ecio;
	}
	if (qmi_message_nas_get_signal_info_output_get_lte_signal_strength(out, &rssi, &rsrq, &rsrp,
									   &snr, NULL)) {
		s.lte.valid = true;
		s.lte.rssi = rssi;
		s.lte.rsrq = rsrq;
		s.lte.rsrp = rsrp;
		s.lte.snr = snr * 0.1;
		/* status and the D-Bus SignalQuality read these. */
		qm->have_signal = true;
		qm->rssi = rssi;
		qm->rsrq = rsrq;
		qm->rsrp = rsrp;
		qm->snr = snr;
	}
	if (qmi_message_nas_get_signal_info_output_get_5g_signal_strength(out, &rsrp, &snr, NULL)) {
		s.nr5g.valid = true;
		s.nr5g.rsrp = rsrp;
		s.nr5g.snr = snr * 0.1;
	}
	qm->signal = s;
}

void qmi_nas_query_signal(struct qmi_modem *qm)
{
	if (!qm->nas)
		return;
	qmi_client_nas_get_signal_info(QMI_CLIENT_NAS(qm->nas), NULL, QMI_NAS_TIMEOUT_SECONDS,
				       qm->cancellable, signal_ready, qm);
}
