/* SPDX-License-Identifier: MIT */
/* QMI's values in the neutral modem model (qmi-modem.h, modem-model.h). */
#include <stdio.h>
#include <string.h>

#include "qmi-modem.h"

#define RADIO(r) (1u << (r))

_Static_assert(QMI_LTE_BAND_WORDS == MODEM_LTE_BAND_WORDS, "LTE band words are copied as they are");

enum modem_capability qmi_map_capabilities(uint32_t r)
{
	enum modem_capability caps = MODEM_CAPABILITY_NONE;

	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_GSM) | RADIO(QMI_DMS_RADIO_INTERFACE_UMTS)))
		caps |= MODEM_CAPABILITY_GSM_UMTS;
	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_CDMA20001X) | RADIO(QMI_DMS_RADIO_INTERFACE_EVDO)))
		caps |= MODEM_CAPABILITY_CDMA_EVDO;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_LTE))
		caps |= MODEM_CAPABILITY_LTE;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_5GNR))
		caps |= MODEM_CAPABILITY_5GNR;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_TDS))
		caps |= MODEM_CAPABILITY_TDS;
	return caps;
}

enum modem_mode qmi_map_modes(uint32_t r)
{
	enum modem_mode modes = MODEM_MODE_NONE;

	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_GSM) | RADIO(QMI_DMS_RADIO_INTERFACE_CDMA20001X)))
		modes |= MODEM_MODE_2G;
	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_UMTS) | RADIO(QMI_DMS_RADIO_INTERFACE_EVDO) |
		 RADIO(QMI_DMS_RADIO_INTERFACE_TDS)))
		modes |= MODEM_MODE_3G;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_LTE))
		modes |= MODEM_MODE_4G;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_5GNR))
		modes |= MODEM_MODE_5G;
	return modes;
}

enum modem_mode qmi_map_mode_preference(uint16_t p)
{
	enum modem_mode modes = MODEM_MODE_NONE;

	if (p & (QMI_NAS_RAT_MODE_PREFERENCE_GSM | QMI_NAS_RAT_MODE_PREFERENCE_CDMA_1X))
		modes |= MODEM_MODE_2G;
	if (p & (QMI_NAS_RAT_MODE_PREFERENCE_UMTS | QMI_NAS_RAT_MODE_PREFERENCE_CDMA_1XEVDO |
		 QMI_NAS_RAT_MODE_PREFERENCE_TD_SCDMA))
		modes |= MODEM_MODE_3G;
	if (p & QMI_NAS_RAT_MODE_PREFERENCE_LTE)
		modes |= MODEM_MODE_4G;
	if (p & QMI_NAS_RAT_MODE_PREFERENCE_5GNR)
		modes |= MODEM_MODE_5G;
	return modes;
}

enum modem_lock qmi_map_lock(QmiUimPinState pin1_state)
{
	switch (pin1_state) {
	case QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED:
		return MODEM_LOCK_SIM_PIN;
	case QMI_UIM_PIN_STATE_BLOCKED:
		return MODEM_LOCK_SIM_PUK;
	case QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED:
		return MODEM_LOCK_UNKNOWN; /* no code opens it: the SIM is unusable */
	default:
		return MODEM_LOCK_NONE;
	}
}

enum modem_power_state qmi_map_power(int operating_mode)
{
	switch (operating_mode) {
	case QMI_DMS_OPERATING_MODE_ONLINE:
		return MODEM_POWER_ON;
	case QMI_DMS_OPERATING_MODE_LOW_POWER:
	case QMI_DMS_OPERATING_MODE_PERSISTENT_LOW_POWER:
	case QMI_DMS_OPERATING_MODE_MODE_ONLY_LOW_POWER:
		return MODEM_POWER_LOW;
	case QMI_DMS_OPERATING_MODE_OFFLINE:
	case QMI_DMS_OPERATING_MODE_SHUTTING_DOWN:
		return MODEM_POWER_OFF;
	default:
		return MODEM_POWER_UNKNOWN; /* factory test, reset, unknown */
	}
}

enum modem_ip_family qmi_map_ip_family(int pdp_type)
{
	switch (pdp_type) {
	case QMI_WDS_PDP_TYPE_IPV4:
		return MODEM_IP_FAMILY_IPV4;
	case QMI_WDS_PDP_TYPE_IPV6:
		return MODEM_IP_FAMILY_IPV6;
	case QMI_WDS_PDP_TYPE_IPV4_OR_IPV6:
		return MODEM_IP_FAMILY_IPV4V6;
	default:
		return MODEM_IP_FAMILY_NONE;
	}
}

void qmi_map_info(const struct qmi_modem_info *info, struct modem_info *ret)
{
	enum modem_mode modes = qmi_map_modes(info->radio_interfaces);
	enum modem_mode preferred =
		info->have_mode_preference ? qmi_map_mode_preference(info->mode_preference) : 0;

	*ret = (struct modem_info){
		.hardware_revision = info->hardware_revision,
		.own_number = info->msisdn,
		.capabilities = qmi_map_capabilities(info->radio_interfaces),
		.modes = modes,
		/* What the modem may use now: its mode preference within what it has. */
		.current_modes = (preferred & modes) ? (preferred & modes) : modes,
		.packet_service = info->ps_attached > 0	   ? MODEM_PACKET_SERVICE_ATTACHED
				  : info->ps_attached == 0 ? MODEM_PACKET_SERVICE_DETACHED
							   : MODEM_PACKET_SERVICE_UNKNOWN,
		.power = qmi_map_power(info->operating_mode),
		.sim = info->card == QMI_CARD_PRESENT  ? MODEM_SIM_PRESENT
		       : info->card == QMI_CARD_ABSENT ? MODEM_SIM_ABSENT
		       : info->card == QMI_CARD_ERROR  ? MODEM_SIM_ERROR
						       : MODEM_SIM_UNKNOWN,
		.tells_lock = info->uim,
		.tells_time = info->network_time > 0,
		.have_zone = info->have_zone,
		.zone_offset_minutes = info->zone_quarters * 15,
		.zone_dst_minutes = info->zone_dst * 60,
		.lock = info->have_pin1 ? qmi_map_lock(info->pin1_state) : MODEM_LOCK_UNKNOWN,
		.sim_blocked = info->have_pin1 &&
			       info->pin1_state == QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED,
		.sim_pin_enabled = info->have_pin1 &&
				   (info->pin1_state == QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED ||
				    info->pin1_state == QMI_UIM_PIN_STATE_ENABLED_VERIFIED ||
				    info->pin1_state == QMI_UIM_PIN_STATE_BLOCKED ||
				    info->pin1_state == QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED),
		.have_pin_retries = info->have_pin1,
		.have_puk_retries = info->have_pin1,
		.pin_retries = info->pin1_retries,
		.puk_retries = info->puk1_retries,
		.sim_operator_id = info->operator_id[0] ? info->operator_id : NULL,
		.sim_operator_name = info->spn,
		.attach_apn = info->attach_apn,
		.attach_ip_family = qmi_map_ip_family(info->attach_pdp_type),
	};
	memcpy(ret->lte_bands, info->lte_bands, sizeof(ret->lte_bands));
	memcpy(ret->lte_bands_allowed, info->lte_bands_allowed, sizeof(ret->lte_bands_allowed));
	if (info->card == QMI_CARD_ABSENT)
		ret->failed_reason = MODEM_FAILED_SIM_MISSING;
	else if (info->card == QMI_CARD_ERROR)
		ret->failed_reason = MODEM_FAILED_SIM_ERROR;
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

bool qmi_map_end(bool have_verbose, QmiWdsVerboseCallEndReasonType vtype, gint16 vreason,
		 bool have_reason, QmiWdsCallEndReason reason, bool dropped,
		 struct session_end *ret)
{
	*ret = (struct session_end){ .dropped = dropped };
	if (have_verbose) {
		const char *t = qmi_wds_verbose_call_end_reason_get_string(vtype, vreason);
		snprintf(ret->text, sizeof(ret->text), "%s (%s reason %d)", t ? t : "unknown",
			 qmi_wds_verbose_call_end_reason_type_get_string(vtype), vreason);
		if (vtype == QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP) {
			ret->kind = SESSION_END_3GPP;
			ret->cause = vreason; /* libqmi's 3GPP verbose reasons are the causes */
		} else {
			ret->kind = SESSION_END_OTHER;
		}
	} else if (have_reason) {
		const char *t = qmi_wds_call_end_reason_get_string(reason);
		snprintf(ret->text, sizeof(ret->text), "%s (call end reason %u)", t ? t : "unknown",
			 reason);
		ret->kind = SESSION_END_OTHER;
	}
	return !dropped && have_verbose && call_end_is_refusal(vtype, vreason);
}

uint16_t qmi_map_mode_to_preference(enum modem_mode modes)
{
	uint16_t p = 0;

	if (modes & MODEM_MODE_2G)
		p |= QMI_NAS_RAT_MODE_PREFERENCE_GSM;
	if (modes & MODEM_MODE_3G)
		p |= QMI_NAS_RAT_MODE_PREFERENCE_UMTS;
	if (modes & MODEM_MODE_4G)
		p |= QMI_NAS_RAT_MODE_PREFERENCE_LTE;
	if (modes & MODEM_MODE_5G)
		p |= QMI_NAS_RAT_MODE_PREFERENCE_5GNR;
	return p;
}

enum modem_network_status qmi_map_network_status(uint8_t s)
{
	if (s & QMI_NAS_NETWORK_STATUS_CURRENT_SERVING)
		return MODEM_NETWORK_CURRENT;
	if (s & QMI_NAS_NETWORK_STATUS_AVAILABLE)
		return (s & QMI_NAS_NETWORK_STATUS_FORBIDDEN) ? MODEM_NETWORK_FORBIDDEN
							      : MODEM_NETWORK_AVAILABLE;
	return MODEM_NETWORK_UNKNOWN;
}

enum modem_access_technology qmi_map_radio_interface(int r)
{
	switch (r) {
	case QMI_NAS_RADIO_INTERFACE_GSM:
		return MODEM_ACCESS_GSM;
	case QMI_NAS_RADIO_INTERFACE_UMTS:
	case QMI_NAS_RADIO_INTERFACE_TD_SCDMA:
		return MODEM_ACCESS_UMTS;
	case QMI_NAS_RADIO_INTERFACE_LTE:
		return MODEM_ACCESS_LTE;
	case QMI_NAS_RADIO_INTERFACE_5GNR:
		return MODEM_ACCESS_5GNR;
	case QMI_NAS_RADIO_INTERFACE_CDMA_1X:
		return MODEM_ACCESS_1XRTT;
	case QMI_NAS_RADIO_INTERFACE_CDMA_1XEVDO:
		return MODEM_ACCESS_EVDO0;
	default:
		return MODEM_ACCESS_UNKNOWN;
	}
}

void qmi_map_operator_code(uint16_t mcc, uint16_t mnc, char *buf, size_t len)
{
	snprintf(buf, len, mnc >= 100 ? "%03u%03u" : "%03u%02u", mcc % 1000u, mnc % 1000u);
}

bool qmi_map_parse_operator_id(const char *id, uint16_t *mcc, uint16_t *mnc, bool *mnc3)
{
	size_t n = strlen(id);
	unsigned v = 0;

	if ((n != 5 && n != 6) || strspn(id, "0123456789") != n)
		return false;
	for (size_t i = 0; i < 3; i++)
		v = v * 10 + (unsigned)(id[i] - '0');
	*mcc = (uint16_t)v;
	v = 0;
	for (size_t i = 3; i < n; i++)
		v = v * 10 + (unsigned)(id[i] - '0');
	*mnc = (uint16_t)v;
	*mnc3 = n == 6;
	return true;
}
