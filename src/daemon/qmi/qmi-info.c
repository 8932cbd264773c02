/* SPDX-License-Identifier: MIT */
/*
 * What the modem says about itself and its SIM beyond identity (qmi-modem.h, struct
 * qmi_modem_info): hardware revision, capabilities, bands, mode preference, own number
 * (DMS, NAS), the default (LTE attach) profile (WDS), and the SIM through the UIM service: card and PIN1 state, EF_ICCID, EF_IMSI,
 * EF_AD, EF_SPN. Firmware without the old DMS UIM messages (Sierra MDM9x30) has only UIM;
 * firmware without UIM keeps the DMS UIM answers (qmi-modem.c). Every query is optional: a
 * failure leaves its fields unknown and costs nothing else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log-modem.h"
#include "qmi-modem.h"
#include "sim-ef.h"

#define QMI_INFO_TIMEOUT_SECONDS 10

static void set_string(char **dst, const char *src)
{
	free(*dst);
	*dst = src && *src ? strdup(src) : NULL;
}

void qmi_info_clear(struct qmi_modem_info *info)
{
	free(info->hardware_revision);
	free(info->msisdn);
	free(info->spn);
	free(info->attach_apn);
	*info = (struct qmi_modem_info){
		.ps_attached = -1, .attach_pdp_type = -1, .operating_mode = -1, .network_time = -1
	};
}

bool qmi_info_sim_locked(const struct qmi_modem_info *info)
{
	return info->card == QMI_CARD_PRESENT && info->have_pin1 &&
	       (info->pin1_state == QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED ||
		info->pin1_state == QMI_UIM_PIN_STATE_BLOCKED ||
		info->pin1_state == QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED);
}

static void band_set(uint64_t *bands, unsigned band)
{
	if (band >= 1 && band <= 64 * QMI_LTE_BAND_WORDS)
		bands[(band - 1) / 64] |= 1ull << ((band - 1) % 64);
}

/* ---- DMS ------------------------------------------------------------------------------- */

static void dms_hardware_revision_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsGetHardwareRevisionOutput) out =
		qmi_client_dms_get_hardware_revision_finish(QMI_CLIENT_DMS(src), res, &error);
	struct qmi_modem *qm = user_data;
	const char *value = NULL;

	if (qmi_step_cancelled(error))
		return;
	if (out && qmi_message_dms_get_hardware_revision_output_get_result(out, &error) &&
	    qmi_message_dms_get_hardware_revision_output_get_revision(out, &value, NULL))
		set_string(&qm->info.hardware_revision, value);
	else
		log_modem_debug(qm->path, "hardware revision: %s",
				error ? error->message : "not in the answer");
}

static void dms_operating_mode_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsGetOperatingModeOutput) out =
		qmi_client_dms_get_operating_mode_finish(QMI_CLIENT_DMS(src), res, &error);
	struct qmi_modem *qm = user_data;
	QmiDmsOperatingMode mode;

	if (qmi_step_cancelled(error))
		return;
	if (out && qmi_message_dms_get_operating_mode_output_get_result(out, &error) &&
	    qmi_message_dms_get_operating_mode_output_get_mode(out, &mode, NULL))
		qm->info.operating_mode = (int)mode;
	else
		log_modem_debug(qm->path, "operating mode: %s",
				error ? error->message : "not in the answer");
}

static void dms_msisdn_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsGetMsisdnOutput) out =
		qmi_client_dms_get_msisdn_finish(QMI_CLIENT_DMS(src), res, &error);
	struct qmi_modem *qm = user_data;
	const char *value = NULL;

	if (qmi_step_cancelled(error))
		return;
	/* NOT_PROVISIONED is what many SIMs answer: no number, not an error to report. */
	if (out && qmi_message_dms_get_msisdn_output_get_result(out, &error) &&
	    qmi_message_dms_get_msisdn_output_get_msisdn(out, &value, NULL))
		set_string(&qm->info.msisdn, value);
	else
		log_modem_debug(qm->path, "own number: %s",
				error ? error->message : "not in the answer");
}

static void dms_capabilities_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsGetCapabilitiesOutput) out =
		qmi_client_dms_get_capabilities_finish(QMI_CLIENT_DMS(src), res, &error);
	struct qmi_modem *qm = user_data;
	GArray *radios = NULL;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_dms_get_capabilities_output_get_result(out, &error) ||
	    !qmi_message_dms_get_capabilities_output_get_info(out, NULL, NULL, NULL, NULL, &radios,
							      NULL) ||
	    !radios) {
		log_modem_debug(qm->path, "capabilities: %s",
				error ? error->message : "not in the answer");
		return;
	}
	qm->info.radio_interfaces = 0;
	for (guint i = 0; i < radios->len; i++) {
		int r = g_array_index(radios, QmiDmsRadioInterface, i);
		if (r >= 0 && r < 32)
			qm->info.radio_interfaces |= 1u << r;
	}
}

static void dms_band_capabilities_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsGetBandCapabilitiesOutput) out =
		qmi_client_dms_get_band_capabilities_finish(QMI_CLIENT_DMS(src), res, &error);
	struct qmi_modem *qm = user_data;
	QmiDmsLteBandCapability lte = 0;
	GArray *ext = NULL;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_dms_get_band_capabilities_output_get_result(out, &error)) {
		log_modem_debug(qm->path, "band capabilities: %s", error->message);
		return;
	}
	memset(qm->info.lte_bands, 0, sizeof(qm->info.lte_bands));
	/* The extended list (band numbers) supersedes the 64-bit mask when present. */
	if (qmi_message_dms_get_band_capabilities_output_get_extended_lte_band_capability(out, &ext,
											  NULL) &&
	    ext) {
		for (guint i = 0; i < ext->len; i++)
			band_set(qm->info.lte_bands, g_array_index(ext, guint16, i));
	} else if (qmi_message_dms_get_band_capabilities_output_get_lte_band_capability(out, &lte,
											NULL)) {
		qm->info.lte_bands[0] = lte;
	}
}

/* ---- NAS ------------------------------------------------------------------------------- */

void qmi_info_selection_preference(struct qmi_modem *qm,
				   QmiMessageNasGetSystemSelectionPreferenceOutput *out)
{
	QmiNasRatModePreference mode;
	QmiNasLteBandPreference lte;
	guint64 ext[QMI_LTE_BAND_WORDS];

	if (qmi_message_nas_get_system_selection_preference_output_get_mode_preference(out, &mode,
										       NULL)) {
		qm->info.have_mode_preference = true;
		qm->info.mode_preference = (uint16_t)mode;
	}
	memset(qm->info.lte_bands_allowed, 0, sizeof(qm->info.lte_bands_allowed));
	if (qmi_message_nas_get_system_selection_preference_output_get_extended_lte_band_preference(
		    out, &ext[0], &ext[1], &ext[2], &ext[3], NULL))
		memcpy(qm->info.lte_bands_allowed, ext, sizeof(ext));
	else if (qmi_message_nas_get_system_selection_preference_output_get_lte_band_preference(
			 out, &lte, NULL))
		qm->info.lte_bands_allowed[0] = lte;
}

static void nas_selection_preference_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageNasGetSystemSelectionPreferenceOutput) out =
		qmi_client_nas_get_system_selection_preference_finish(QMI_CLIENT_NAS(src), res,
								      &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error))
		return;
	if (!out ||
	    !qmi_message_nas_get_system_selection_preference_output_get_result(out, &error)) {
		log_modem_debug(qm->path, "system selection preference: %s", error->message);
		return;
	}
	qmi_info_selection_preference(qm, out);
}

/* ---- UIM ------------------------------------------------------------------------------- */

/* The files the SIM's identity is in, and where (TS 31.102): EF_ICCID under the MF, the
 * others in the USIM application (ADF, 7FFF) through the GW provisioning session. */
enum sim_file { SIM_FILE_ICCID, SIM_FILE_IMSI, SIM_FILE_AD, SIM_FILE_SPN };

static const struct {
	uint16_t id;
	bool in_adf;
	const char *name;
} sim_files[] = {
	[SIM_FILE_ICCID] = { 0x2FE2, false, "EF_ICCID" },
	[SIM_FILE_IMSI] = { 0x6F07, true, "EF_IMSI" },
	[SIM_FILE_AD] = { 0x6FAD, true, "EF_AD" },
	[SIM_FILE_SPN] = { 0x6F46, true, "EF_SPN" },
};

struct read_ctx {
	struct qmi_modem *qm;
	enum sim_file file;
};

static void uim_read_file(struct qmi_modem *qm, enum sim_file file);

static void update_operator_id(struct qmi_modem *qm)
{
	qm->info.operator_id[0] = '\0';
	if (qm->imsi && qm->info.mnc_length)
		sim_operator_id(qm->imsi, qm->info.mnc_length, qm->info.operator_id,
				sizeof(qm->info.operator_id));
}

static void uim_read_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageUimReadTransparentOutput) out =
		qmi_client_uim_read_transparent_finish(QMI_CLIENT_UIM(src), res, &error);
	struct read_ctx ctx = *(struct read_ctx *)user_data;
	struct qmi_modem *qm = ctx.qm;
	guint8 sw1 = 0, sw2 = 0;
	GArray *data = NULL;
	char text[64];

	g_free(user_data);
	if (qmi_step_cancelled(error))
		return;
	bool ok = out && qmi_message_uim_read_transparent_output_get_result(out, &error);
	bool have_sw = out && qmi_message_uim_read_transparent_output_get_card_result(out, &sw1,
										      &sw2, NULL);
	/* Success needs the card's "normal ending" too (90 00, or 91 xx with more to say). */
	if (!ok || (have_sw && sw1 != 0x90 && sw1 != 0x91) ||
	    !qmi_message_uim_read_transparent_output_get_read_result(out, &data, NULL) || !data) {
		log_modem_debug(qm->path, "%s: %s (SW %02x %02x)", sim_files[ctx.file].name,
				error ? error->message : "no data", sw1, sw2);
		return;
	}
	const uint8_t *p = (const uint8_t *)data->data;
	int n;
	switch (ctx.file) {
	case SIM_FILE_ICCID:
		n = sim_ef_iccid(p, data->len, text, sizeof(text));
		if (n > 0) {
			free(qm->iccid);
			qm->iccid = strdup(text);
		}
		break;
	case SIM_FILE_IMSI:
		n = sim_ef_imsi(p, data->len, text, sizeof(text));
		if (n > 0) {
			free(qm->imsi);
			qm->imsi = strdup(text);
			update_operator_id(qm);
		}
		break;
	case SIM_FILE_AD:
		n = sim_ef_ad_mnc_length(p, data->len);
		if (n > 0) {
			qm->info.mnc_length = n;
			update_operator_id(qm);
		}
		break;
	case SIM_FILE_SPN:
		n = sim_ef_spn(p, data->len, text, sizeof(text));
		if (n >= 0)
			set_string(&qm->info.spn, text);
		break;
	default:
		n = -EINVAL;
		break;
	}
	if (n < 0)
		log_modem_info(qm->path, "%s of %u bytes unreadable: %s", sim_files[ctx.file].name,
			       data->len, strerror(-n));
}

static void uim_read_file(struct qmi_modem *qm, enum sim_file file)
{
	static const guint8 mf[] = { 0x00, 0x3F }, adf[] = { 0x00, 0x3F, 0xFF, 0x7F };
	g_autoptr(QmiMessageUimReadTransparentInput) in =
		qmi_message_uim_read_transparent_input_new();
	g_autoptr(GArray) aid = g_array_new(FALSE, FALSE, 1);
	g_autoptr(GArray) path = g_array_new(FALSE, FALSE, 1);
	bool in_adf = sim_files[file].in_adf;
	struct read_ctx *ctx = g_new(struct read_ctx, 1);

	*ctx = (struct read_ctx){ .qm = qm, .file = file };
	if (in_adf)
		g_array_append_vals(path, adf, sizeof(adf));
	else
		g_array_append_vals(path, mf, sizeof(mf));
	qmi_message_uim_read_transparent_input_set_session(
		in,
		in_adf ? QMI_UIM_SESSION_TYPE_PRIMARY_GW_PROVISIONING
		       : QMI_UIM_SESSION_TYPE_CARD_SLOT_1,
		aid, NULL);
	qmi_message_uim_read_transparent_input_set_file(in, sim_files[file].id, path, NULL);
	qmi_message_uim_read_transparent_input_set_read_information(in, 0, 0, NULL);
	qmi_client_uim_read_transparent(QMI_CLIENT_UIM(qm->uim), in, QMI_INFO_TIMEOUT_SECONDS,
					qm->cancellable, uim_read_ready, ctx);
}

void qmi_info_query_sim(struct qmi_modem *qm)
{
	if (!qm->uim || qm->info.card != QMI_CARD_PRESENT)
		return;
	uim_read_file(qm, SIM_FILE_ICCID);
	/* The application's files wait for PIN1 (EF_IMSI needs it; AD and SPN with it). */
	if (qmi_info_sim_locked(&qm->info))
		return;
	uim_read_file(qm, SIM_FILE_AD);
	uim_read_file(qm, SIM_FILE_IMSI);
	uim_read_file(qm, SIM_FILE_SPN);
	/* The own number is on the SIM too, behind PIN1. */
	if (!qm->info.msisdn)
		qmi_client_dms_get_msisdn(QMI_CLIENT_DMS(qm->dms), NULL, QMI_INFO_TIMEOUT_SECONDS,
					  qm->cancellable, dms_msisdn_ready, qm);
}

/* The GW primary application of the card status: where PIN1 lives. */
static void read_card_status(struct qmi_modem *qm, QmiMessageUimGetCardStatusOutput *out)
{
	guint16 gw = 0xFFFF;
	GArray *cards = NULL;

	qm->info.card = QMI_CARD_UNKNOWN;
	qm->info.have_pin1 = false;
	if (!qmi_message_uim_get_card_status_output_get_card_status(out, &gw, NULL, NULL, NULL,
								    &cards, NULL) ||
	    !cards)
		return;
	/* Index: slot in the high byte, application in the low byte; 0xFFFF none. */
	guint slot = gw == 0xFFFF ? 0 : gw >> 8, app = gw & 0xFF;
	if (slot >= cards->len) {
		qm->info.card = QMI_CARD_ABSENT;
		return;
	}
	QmiMessageUimGetCardStatusOutputCardStatusCardsElement *card =
		&g_array_index(cards, QmiMessageUimGetCardStatusOutputCardStatusCardsElement, slot);
	qm->info.card = card->card_state == QMI_UIM_CARD_STATE_PRESENT	? QMI_CARD_PRESENT
			: card->card_state == QMI_UIM_CARD_STATE_ABSENT ? QMI_CARD_ABSENT
									: QMI_CARD_ERROR;
	if (qm->info.card != QMI_CARD_PRESENT || gw == 0xFFFF || !card->applications ||
	    app >= card->applications->len)
		return;
	QmiMessageUimGetCardStatusOutputCardStatusCardsElementApplicationsElement *a =
		&g_array_index(
			card->applications,
			QmiMessageUimGetCardStatusOutputCardStatusCardsElementApplicationsElement,
			app);
	qm->info.have_pin1 = true;
	/* A UPIN that replaces PIN1 is the one that counts. */
	qm->info.pin1_state = a->upin_replaces_pin1 ? card->upin_state : a->pin1_state;
	qm->info.pin1_retries = a->upin_replaces_pin1 ? card->upin_retries : a->pin1_retries;
	qm->info.puk1_retries = a->upin_replaces_pin1 ? card->upuk_retries : a->puk1_retries;
}

static void uim_card_status_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageUimGetCardStatusOutput) out =
		qmi_client_uim_get_card_status_finish(QMI_CLIENT_UIM(src), res, &error);
	struct qmi_modem *qm = user_data;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_uim_get_card_status_output_get_result(out, &error)) {
		log_modem_info(qm->path, "SIM card status: %s", error->message);
		return;
	}
	read_card_status(qm, out);
	log_modem_info(qm->path, "SIM %s, PIN1 %s (%u tries, PUK %u)",
		       qm->info.card == QMI_CARD_PRESENT  ? "present"
		       : qm->info.card == QMI_CARD_ABSENT ? "absent"
							  : "in error",
		       qm->info.have_pin1 ? qmi_uim_pin_state_get_string(qm->info.pin1_state) ?: "?"
					  : "unknown",
		       qm->info.pin1_retries, qm->info.puk1_retries);
	qmi_info_query_sim(qm);
}

static void uim_card_status(struct qmi_modem *qm)
{
	qmi_client_uim_get_card_status(QMI_CLIENT_UIM(qm->uim), NULL, QMI_INFO_TIMEOUT_SECONDS,
				       qm->cancellable, uim_card_status_ready, qm);
}

static void uim_allocate_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct qmi_modem *qm = user_data;
	int r = qmi_modem_allocate_finish(qm, src, res, &error);

	if (r == -ECANCELED)
		return;
	if (r < 0) {
		/* Older firmware has no UIM: the SIM's identity then comes from DMS UIM. */
		log_modem_info(qm->path, "no UIM service (%s): SIM through DMS only",
			       error->message);
		return;
	}
	qm->info.uim = true;
	uim_card_status(qm);
}

/* ---- PIN: UIM Verify PIN, Unblock PIN, Set PIN Protection, Change PIN ---------------- */

struct pin_ctx {
	struct qmi_modem *qm;
	enum modem_pin_op op;
	modem_pin_done done;
	void *userdata;
};

/* What each of the four answers says, read alike. */
struct pin_answer {
	bool ok;
	bool have_left; /* retries remaining: PIN1 (verify), PUK1 (unblock) */
	guint8 left, unblock;
	bool have_sw;
	guint8 sw1, sw2;
};

static const char *pin_op_name(enum modem_pin_op op)
{
	switch (op) {
	case MODEM_PIN_OP_VERIFY:
		return "PIN1 verification";
	case MODEM_PIN_OP_UNBLOCK:
		return "PIN1 unblock";
	case MODEM_PIN_OP_ENABLE:
		return "PIN1 protection on";
	case MODEM_PIN_OP_DISABLE:
		return "PIN1 protection off";
	case MODEM_PIN_OP_CHANGE:
		return "PIN1 change";
	}
	return "PIN1";
}

static void pin_finish(struct pin_ctx ctx, const struct pin_answer *a, GError *error)
{
	struct qmi_modem *qm = ctx.qm;
	bool unblock = ctx.op == MODEM_PIN_OP_UNBLOCK;

	if (a->ok) {
		log_modem_info(qm->path, "%s done", pin_op_name(ctx.op));
		/* The card may have opened up: read what PIN1 kept closed, the network
		 * follows; the card status tells the new PIN1 state either way. */
		uim_card_status(qm);
		qmi_modem_query_radio(qm);
		ctx.done(ctx.userdata, MODEM_PIN_OK, -1, "");
		return;
	}
	if (a->have_left) {
		qm->info.pin1_retries = a->left;
		qm->info.puk1_retries = a->unblock;
	}
	int left = a->have_left ? (unblock ? a->unblock : a->left) : -1;
	/* A wrong code: INCORRECT_PIN, or ACCESS_DENIED with the card's 63 Cx (ModemManager
	 * fc47fa7f); the last wrong PIN blocks PIN1, the last wrong PUK the card. */
	enum modem_pin_result r = MODEM_PIN_FAILED;
	bool wrong =
		g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_INCORRECT_PIN) ||
		(g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_ACCESS_DENIED) &&
		 a->have_sw && a->sw1 == 0x63);
	if (wrong)
		r = MODEM_PIN_WRONG;
	else if (g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_PIN_ALWAYS_BLOCKED))
		r = MODEM_PIN_SIM_BLOCKED;
	else if (g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_PIN_BLOCKED))
		/* With a PUK: the PUK was the last one (the card answers PIN_ALWAYS_BLOCKED
		 * from then on); else the PIN is blocked and the PUK is needed. */
		r = unblock ? MODEM_PIN_SIM_BLOCKED : MODEM_PIN_BLOCKED;
	else if (g_error_matches(error, QMI_PROTOCOL_ERROR, QMI_PROTOCOL_ERROR_NO_EFFECT))
		r = MODEM_PIN_NOT_NEEDED;
	log_modem_info(qm->path, "%s refused: %s (%d tries left)", pin_op_name(ctx.op),
		       error ? error->message : "?", left);
	if (r == MODEM_PIN_WRONG || r == MODEM_PIN_BLOCKED || r == MODEM_PIN_SIM_BLOCKED)
		uim_card_status(qm);
	ctx.done(ctx.userdata, r, left, error ? error->message : "failed");
}

/* One ready callback per message: the outputs differ only in type. */
#define UIM_PIN_READY(name, Name, has_sw)                                                        \
	static void uim_##name##_ready(GObject *src, GAsyncResult *res, gpointer user_data)      \
	{                                                                                        \
		g_autoptr(GError) error = NULL;                                                  \
		g_autoptr(QmiMessageUim##Name##Output) out =                                     \
			qmi_client_uim_##name##_finish(QMI_CLIENT_UIM(src), res, &error);        \
		struct pin_ctx ctx = *(struct pin_ctx *)user_data;                               \
		struct pin_answer a = { 0 };                                                     \
                                                                                                 \
		g_free(user_data);                                                               \
		if (qmi_step_cancelled(error)) {                                                 \
			ctx.done(ctx.userdata, MODEM_PIN_NO_SERVICE, -1, "the modem went away"); \
			return;                                                                  \
		}                                                                                \
		a.have_left = out && qmi_message_uim_##name##_output_get_retries_remaining(      \
					     out, &a.left, &a.unblock, NULL);                    \
		a.have_sw = has_sw;                                                              \
		a.ok = out && qmi_message_uim_##name##_output_get_result(out, &error);           \
		pin_finish(ctx, &a, error);                                                      \
	}

#define UIM_PIN_SW(name) \
	(out && qmi_message_uim_##name##_output_get_card_result(out, &a.sw1, &a.sw2, NULL))
UIM_PIN_READY(verify_pin, VerifyPin, UIM_PIN_SW(verify_pin))
UIM_PIN_READY(unblock_pin, UnblockPin, UIM_PIN_SW(unblock_pin))
UIM_PIN_READY(change_pin, ChangePin, UIM_PIN_SW(change_pin))
/* Set PIN Protection carries no card result (libqmi uim.json). */
UIM_PIN_READY(set_pin_protection, SetPinProtection, false)
#undef UIM_PIN_SW
#undef UIM_PIN_READY

void qmi_info_pin(struct qmi_modem *qm, enum modem_pin_op op, const char *code,
		  const char *new_code, modem_pin_done done, void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->uim) {
		done(userdata, MODEM_PIN_NO_SERVICE, -1,
		     qm->state != MODEM_CONTROL_READY ? "the modem is not ready"
						      : "the modem has no UIM service");
		return;
	}
	g_autoptr(GArray) aid = g_array_new(FALSE, FALSE, 1);
	QmiClientUim *uim = QMI_CLIENT_UIM(qm->uim);
	struct pin_ctx *ctx = g_new(struct pin_ctx, 1);

	*ctx = (struct pin_ctx){ .qm = qm, .op = op, .done = done, .userdata = userdata };
	/* PIN1 is the card's (slot 1), as ModemManager's QMI SIM addresses it. */
	switch (op) {
	case MODEM_PIN_OP_VERIFY: {
		g_autoptr(QmiMessageUimVerifyPinInput) in = qmi_message_uim_verify_pin_input_new();
		qmi_message_uim_verify_pin_input_set_session(in, QMI_UIM_SESSION_TYPE_CARD_SLOT_1,
							     aid, NULL);
		qmi_message_uim_verify_pin_input_set_info(in, QMI_UIM_PIN_ID_PIN1, code, NULL);
		qmi_client_uim_verify_pin(uim, in, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					  uim_verify_pin_ready, ctx);
		break;
	}
	case MODEM_PIN_OP_UNBLOCK: {
		g_autoptr(QmiMessageUimUnblockPinInput) in =
			qmi_message_uim_unblock_pin_input_new();
		qmi_message_uim_unblock_pin_input_set_session(in, QMI_UIM_SESSION_TYPE_CARD_SLOT_1,
							      aid, NULL);
		qmi_message_uim_unblock_pin_input_set_info(in, QMI_UIM_PIN_ID_PIN1, code, new_code,
							   NULL);
		qmi_client_uim_unblock_pin(uim, in, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					   uim_unblock_pin_ready, ctx);
		break;
	}
	case MODEM_PIN_OP_ENABLE:
	case MODEM_PIN_OP_DISABLE: {
		g_autoptr(QmiMessageUimSetPinProtectionInput) in =
			qmi_message_uim_set_pin_protection_input_new();
		qmi_message_uim_set_pin_protection_input_set_session(
			in, QMI_UIM_SESSION_TYPE_CARD_SLOT_1, aid, NULL);
		qmi_message_uim_set_pin_protection_input_set_info(
			in, QMI_UIM_PIN_ID_PIN1, op == MODEM_PIN_OP_ENABLE, code, NULL);
		qmi_client_uim_set_pin_protection(uim, in, QMI_INFO_TIMEOUT_SECONDS,
						  qm->cancellable, uim_set_pin_protection_ready,
						  ctx);
		break;
	}
	case MODEM_PIN_OP_CHANGE: {
		g_autoptr(QmiMessageUimChangePinInput) in = qmi_message_uim_change_pin_input_new();
		qmi_message_uim_change_pin_input_set_session(in, QMI_UIM_SESSION_TYPE_CARD_SLOT_1,
							     aid, NULL);
		qmi_message_uim_change_pin_input_set_info(in, QMI_UIM_PIN_ID_PIN1, code, new_code,
							  NULL);
		qmi_client_uim_change_pin(uim, in, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					  uim_change_pin_ready, ctx);
		break;
	}
	}
}

/* ---- power: DMS Set Operating Mode ----------------------------------------------------- */

struct power_ctx {
	struct qmi_modem *qm;
	bool on;
	modem_power_done done;
	void *userdata;
};

/* What the modem says it is in now: that, not what was asked, is the power clients see. */
static void power_mode_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsGetOperatingModeOutput) out =
		qmi_client_dms_get_operating_mode_finish(QMI_CLIENT_DMS(src), res, &error);
	struct power_ctx ctx = *(struct power_ctx *)user_data;
	QmiDmsOperatingMode mode;

	g_free(user_data);
	if (qmi_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
		return;
	}
	struct qmi_modem *qm = ctx.qm;
	if (out && qmi_message_dms_get_operating_mode_output_get_result(out, &error) &&
	    qmi_message_dms_get_operating_mode_output_get_mode(out, &mode, NULL))
		qm->info.operating_mode = (int)mode;
	else
		log_modem_debug(qm->path, "operating mode: %s",
				error ? error->message : "not in the answer");
	/* Registration follows the radio: deregistered in low power, searching once on. */
	qmi_modem_query_radio(qm);
	ctx.done(ctx.userdata, 0, "");
}

static void power_set_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageDmsSetOperatingModeOutput) out =
		qmi_client_dms_set_operating_mode_finish(QMI_CLIENT_DMS(src), res, &error);
	struct power_ctx *ctx = user_data;

	if (qmi_step_cancelled(error)) {
		ctx->done(ctx->userdata, -ENODEV, "the modem went away");
		g_free(ctx);
		return;
	}
	struct qmi_modem *qm = ctx->qm;
	if (!out || !qmi_message_dms_set_operating_mode_output_get_result(out, &error)) {
		log_modem_warning(qm->path, "operating mode %s not set: %s",
				  ctx->on ? "online" : "low power", error->message);
		ctx->done(ctx->userdata, -EIO, error->message);
		g_free(ctx);
		return;
	}
	log_modem_info(qm->path, "operating mode %s set", ctx->on ? "online" : "low power");
	qmi_client_dms_get_operating_mode(QMI_CLIENT_DMS(qm->dms), NULL, QMI_INFO_TIMEOUT_SECONDS,
					  qm->cancellable, power_mode_ready, ctx);
}

void qmi_info_set_power(struct qmi_modem *qm, bool on, modem_power_done done, void *userdata)
{
	if (qm->state != MODEM_CONTROL_READY || !qm->dms) {
		done(userdata, -EAGAIN, "the modem is not ready");
		return;
	}
	g_autoptr(QmiMessageDmsSetOperatingModeInput) in =
		qmi_message_dms_set_operating_mode_input_new();
	struct power_ctx *ctx = g_new(struct power_ctx, 1);

	*ctx = (struct power_ctx){ .qm = qm, .on = on, .done = done, .userdata = userdata };
	qmi_message_dms_set_operating_mode_input_set_mode(
		in, on ? QMI_DMS_OPERATING_MODE_ONLINE : QMI_DMS_OPERATING_MODE_LOW_POWER, NULL);
	qmi_client_dms_set_operating_mode(QMI_CLIENT_DMS(qm->dms), in, QMI_INFO_TIMEOUT_SECONDS,
					  qm->cancellable, power_set_ready, ctx);
}

/* ---- WDS: the default profile ------------------------------------------------------- */

static void wds_profile_settings_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsGetProfileSettingsOutput) out =
		qmi_client_wds_get_profile_settings_finish(QMI_CLIENT_WDS(src), res, &error);
	struct qmi_modem *qm = user_data;
	QmiWdsPdpType pdp;
	const char *apn = NULL;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_wds_get_profile_settings_output_get_result(out, &error)) {
		log_modem_debug(qm->path, "default profile: %s", error->message);
		return;
	}
	/* An empty APN is the network's choice: known, and empty. */
	if (qmi_message_wds_get_profile_settings_output_get_apn_name(out, &apn, NULL)) {
		free(qm->info.attach_apn);
		qm->info.attach_apn = strdup(apn ? apn : "");
	}
	if (qmi_message_wds_get_profile_settings_output_get_pdp_type(out, &pdp, NULL))
		qm->info.attach_pdp_type = (int)pdp;
}

static void wds_default_profile_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessageWdsGetDefaultProfileNumberOutput) out =
		qmi_client_wds_get_default_profile_number_finish(QMI_CLIENT_WDS(src), res, &error);
	struct qmi_modem *qm = user_data;
	guint8 index;

	if (qmi_step_cancelled(error))
		return;
	if (!out || !qmi_message_wds_get_default_profile_number_output_get_result(out, &error) ||
	    !qmi_message_wds_get_default_profile_number_output_get_index(out, &index, NULL)) {
		log_modem_debug(qm->path, "default profile number: %s",
				error ? error->message : "not in the answer");
		return;
	}
	g_autoptr(QmiMessageWdsGetProfileSettingsInput) in =
		qmi_message_wds_get_profile_settings_input_new();
	qmi_message_wds_get_profile_settings_input_set_profile_id(in, QMI_WDS_PROFILE_TYPE_3GPP,
								  index, NULL);
	qmi_client_wds_get_profile_settings(QMI_CLIENT_WDS(qm->wds), in, QMI_INFO_TIMEOUT_SECONDS,
					    qm->cancellable, wds_profile_settings_ready, qm);
}

static void wds_allocate_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct qmi_modem *qm = user_data;
	int r = qmi_modem_allocate_finish(qm, src, res, &error);

	if (r == -ECANCELED)
		return;
	if (r < 0) {
		log_modem_debug(qm->path, "WDS client for profiles: %s", error->message);
		return;
	}
	g_autoptr(QmiMessageWdsGetDefaultProfileNumberInput) in =
		qmi_message_wds_get_default_profile_number_input_new();
	qmi_message_wds_get_default_profile_number_input_set_profile_type(
		in, QMI_WDS_PROFILE_TYPE_3GPP, QMI_WDS_PROFILE_FAMILY_EMBEDDED, NULL);
	qmi_client_wds_get_default_profile_number(QMI_CLIENT_WDS(qm->wds), in,
						  QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
						  wds_default_profile_ready, qm);
}

/* ---- all of it, once ready ------------------------------------------------------------- */

void qmi_info_query(struct qmi_modem *qm)
{
	QmiClientDms *dms = QMI_CLIENT_DMS(qm->dms);

	qmi_client_dms_get_hardware_revision(dms, NULL, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					     dms_hardware_revision_ready, qm);
	qmi_client_dms_get_capabilities(dms, NULL, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					dms_capabilities_ready, qm);
	qmi_client_dms_get_band_capabilities(dms, NULL, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					     dms_band_capabilities_ready, qm);
	qmi_client_dms_get_msisdn(dms, NULL, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
				  dms_msisdn_ready, qm);
	qmi_client_dms_get_operating_mode(dms, NULL, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					  dms_operating_mode_ready, qm);
	if (qm->nas)
		qmi_client_nas_get_system_selection_preference(
			QMI_CLIENT_NAS(qm->nas), NULL, QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
			nas_selection_preference_ready, qm);
	if (qm->nas)
		qmi_time_query(qm, NULL, NULL);
	if (!qm->wds)
		qmi_device_allocate_client(qm->device, QMI_SERVICE_WDS, QMI_CID_NONE,
					   QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					   wds_allocate_ready, qm);
	if (!qm->uim)
		qmi_device_allocate_client(qm->device, QMI_SERVICE_UIM, QMI_CID_NONE,
					   QMI_INFO_TIMEOUT_SECONDS, qm->cancellable,
					   uim_allocate_ready, qm);
	else
		uim_card_status(qm);
}
