/* SPDX-License-Identifier: MIT */
/* qmapd's state in ModemManager's terms (mm-dbus-map.h). */
#include <libmm-glib.h>
#include <string.h>

#include "macro.h"
#include "mm-dbus-map.h"

MMModemState mmd_modem_state(const struct mmd_state_input *in)
{
	switch (in->qmi) {
	case QMI_MODEM_STATE_CLOSED:
		return MM_MODEM_STATE_UNKNOWN;
	case QMI_MODEM_STATE_OPENING:
		return MM_MODEM_STATE_ENABLING;
	case QMI_MODEM_STATE_FAILED:
		return MM_MODEM_STATE_FAILED;
	case QMI_MODEM_STATE_READY:
		break;
	}
	/* A SIM waiting for its PIN keeps the modem off the network (ModemManager: LOCKED). */
	if (in->locked)
		return MM_MODEM_STATE_LOCKED;
	/* A session still up (a disable that could not stop a mux) counts first. */
	if (in->connected)
		return MM_MODEM_STATE_CONNECTED;
	if (in->disabled)
		return MM_MODEM_STATE_DISABLED;
	if (in->disconnecting)
		return MM_MODEM_STATE_DISCONNECTING;
	if (in->connecting)
		return MM_MODEM_STATE_CONNECTING;
	switch (mmd_registration_state(in->registration)) {
	case MM_MODEM_3GPP_REGISTRATION_STATE_HOME:
	case MM_MODEM_3GPP_REGISTRATION_STATE_ROAMING:
		return MM_MODEM_STATE_REGISTERED;
	case MM_MODEM_3GPP_REGISTRATION_STATE_SEARCHING:
		return MM_MODEM_STATE_SEARCHING;
	default:
		return MM_MODEM_STATE_ENABLED;
	}
}

MMModem3gppRegistrationState mmd_registration_state(const char *registration)
{
	static const struct {
		const char *qmapd;
		MMModem3gppRegistrationState mm;
	} map[] = {
		{ "home", MM_MODEM_3GPP_REGISTRATION_STATE_HOME },
		{ "roaming", MM_MODEM_3GPP_REGISTRATION_STATE_ROAMING },
		{ "searching", MM_MODEM_3GPP_REGISTRATION_STATE_SEARCHING },
		{ "denied", MM_MODEM_3GPP_REGISTRATION_STATE_DENIED },
		{ "idle", MM_MODEM_3GPP_REGISTRATION_STATE_IDLE },
	};

	for (size_t i = 0; registration && i < ARRAY_SIZE(map); i++)
		if (strcmp(registration, map[i].qmapd) == 0)
			return map[i].mm;
	return MM_MODEM_3GPP_REGISTRATION_STATE_UNKNOWN;
}

MMModemAccessTechnology mmd_access_technology(const char *radio_interface)
{
	static const struct {
		const char *qmi;
		MMModemAccessTechnology mm;
	} map[] = {
		{ "gsm", MM_MODEM_ACCESS_TECHNOLOGY_GSM },
		{ "umts", MM_MODEM_ACCESS_TECHNOLOGY_UMTS },
		{ "lte", MM_MODEM_ACCESS_TECHNOLOGY_LTE },
		{ "5gnr", MM_MODEM_ACCESS_TECHNOLOGY_5GNR },
		{ "cdma-1x", MM_MODEM_ACCESS_TECHNOLOGY_1XRTT },
		{ "cdma-1xevdo", MM_MODEM_ACCESS_TECHNOLOGY_EVDO0 },
	};

	for (size_t i = 0; radio_interface && i < ARRAY_SIZE(map); i++)
		if (strcmp(radio_interface, map[i].qmi) == 0)
			return map[i].mm;
	return MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN;
}

guint mmd_signal_quality(int rssi_dbm)
{
	/* The linear scale ModemManager's QMI modems use between -113 and -51 dBm. */
	if (rssi_dbm <= -113)
		return 0;
	if (rssi_dbm >= -51)
		return 100;
	return (guint)((rssi_dbm + 113) * 100 / 62);
}

MMModemCapability mmd_capabilities(MMModemAccessTechnology act)
{
	if (act & MM_MODEM_ACCESS_TECHNOLOGY_5GNR)
		return MM_MODEM_CAPABILITY_LTE | MM_MODEM_CAPABILITY_5GNR;
	if (act & MM_MODEM_ACCESS_TECHNOLOGY_LTE)
		return MM_MODEM_CAPABILITY_LTE;
	if (act & (MM_MODEM_ACCESS_TECHNOLOGY_GSM | MM_MODEM_ACCESS_TECHNOLOGY_UMTS))
		return MM_MODEM_CAPABILITY_GSM_UMTS;
	return MM_MODEM_CAPABILITY_NONE;
}

#define RADIO(r) (1u << (r))

MMModemCapability mmd_capabilities_from_radio(uint32_t r)
{
	MMModemCapability caps = MM_MODEM_CAPABILITY_NONE;

	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_GSM) | RADIO(QMI_DMS_RADIO_INTERFACE_UMTS)))
		caps |= MM_MODEM_CAPABILITY_GSM_UMTS;
	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_CDMA20001X) | RADIO(QMI_DMS_RADIO_INTERFACE_EVDO)))
		caps |= MM_MODEM_CAPABILITY_CDMA_EVDO;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_LTE))
		caps |= MM_MODEM_CAPABILITY_LTE;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_5GNR))
		caps |= MM_MODEM_CAPABILITY_5GNR;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_TDS))
		caps |= MM_MODEM_CAPABILITY_TDS;
	return caps;
}

MMModemMode mmd_modes_from_radio(uint32_t r)
{
	MMModemMode modes = MM_MODEM_MODE_NONE;

	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_GSM) | RADIO(QMI_DMS_RADIO_INTERFACE_CDMA20001X)))
		modes |= MM_MODEM_MODE_2G;
	if (r & (RADIO(QMI_DMS_RADIO_INTERFACE_UMTS) | RADIO(QMI_DMS_RADIO_INTERFACE_EVDO) |
		 RADIO(QMI_DMS_RADIO_INTERFACE_TDS)))
		modes |= MM_MODEM_MODE_3G;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_LTE))
		modes |= MM_MODEM_MODE_4G;
	if (r & RADIO(QMI_DMS_RADIO_INTERFACE_5GNR))
		modes |= MM_MODEM_MODE_5G;
	return modes;
}

MMModemMode mmd_modes_from_preference(uint16_t p)
{
	MMModemMode modes = MM_MODEM_MODE_NONE;

	if (p & (QMI_NAS_RAT_MODE_PREFERENCE_GSM | QMI_NAS_RAT_MODE_PREFERENCE_CDMA_1X))
		modes |= MM_MODEM_MODE_2G;
	if (p & (QMI_NAS_RAT_MODE_PREFERENCE_UMTS | QMI_NAS_RAT_MODE_PREFERENCE_CDMA_1XEVDO |
		 QMI_NAS_RAT_MODE_PREFERENCE_TD_SCDMA))
		modes |= MM_MODEM_MODE_3G;
	if (p & QMI_NAS_RAT_MODE_PREFERENCE_LTE)
		modes |= MM_MODEM_MODE_4G;
	if (p & QMI_NAS_RAT_MODE_PREFERENCE_5GNR)
		modes |= MM_MODEM_MODE_5G;
	return modes;
}

size_t mmd_supported_modes(MMModemMode modes, MMModemMode *allowed, size_t max)
{
	static const MMModemMode each[] = { MM_MODEM_MODE_2G, MM_MODEM_MODE_3G, MM_MODEM_MODE_4G,
					    MM_MODEM_MODE_5G };
	size_t n = 0, singles = 0;

	for (size_t i = 0; i < ARRAY_SIZE(each); i++)
		singles += (modes & each[i]) != 0;
	if (singles > 1 && n < max)
		allowed[n++] = modes & (MM_MODEM_MODE_2G | MM_MODEM_MODE_3G | MM_MODEM_MODE_4G |
					MM_MODEM_MODE_5G);
	for (size_t i = 0; i < ARRAY_SIZE(each) && n < max; i++)
		if (modes & each[i])
			allowed[n++] = each[i];
	return n;
}

size_t mmd_lte_bands(const uint64_t bits[4], MMModemBand *bands, size_t max)
{
	size_t n = 0;

	for (unsigned band = 1; band <= 256 && n < max; band++) {
		if (!(bits[(band - 1) / 64] & (1ull << ((band - 1) % 64))))
			continue;
		/* EUTRAN_n is 30 + n for the bands ModemManager names: 1..71 but 15 and 16
		 * (reserved in TS 36.101), and 85. */
		if ((band <= 71 && band != 15 && band != 16) || band == 85)
			bands[n++] = (MMModemBand)(MM_MODEM_BAND_EUTRAN_1 + band - 1);
	}
	return n;
}

MMModemLock mmd_unlock_required(bool have_pin1, uint8_t pin1_state)
{
	if (!have_pin1)
		return MM_MODEM_LOCK_UNKNOWN;
	switch (pin1_state) {
	case QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED:
		return MM_MODEM_LOCK_SIM_PIN;
	case QMI_UIM_PIN_STATE_BLOCKED:
		return MM_MODEM_LOCK_SIM_PUK;
	case QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED:
		return MM_MODEM_LOCK_UNKNOWN; /* no code opens it: the SIM is unusable */
	default:
		return MM_MODEM_LOCK_NONE;
	}
}

MMModem3gppFacility mmd_facility_locks(bool have_pin1, uint8_t pin1_state)
{
	if (!have_pin1)
		return MM_MODEM_3GPP_FACILITY_NONE;
	switch (pin1_state) {
	case QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED:
	case QMI_UIM_PIN_STATE_ENABLED_VERIFIED:
	case QMI_UIM_PIN_STATE_BLOCKED:
	case QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED:
		return MM_MODEM_3GPP_FACILITY_SIM;
	default:
		return MM_MODEM_3GPP_FACILITY_NONE;
	}
}

MMBearerIpFamily mmd_ip_family_from_pdp(int pdp_type)
{
	switch (pdp_type) {
	case QMI_WDS_PDP_TYPE_IPV4:
		return MM_BEARER_IP_FAMILY_IPV4;
	case QMI_WDS_PDP_TYPE_IPV6:
		return MM_BEARER_IP_FAMILY_IPV6;
	case QMI_WDS_PDP_TYPE_IPV4_OR_IPV6:
		return MM_BEARER_IP_FAMILY_IPV4V6;
	default:
		return MM_BEARER_IP_FAMILY_NONE;
	}
}

MMModemPowerState mmd_power_state(int operating_mode)
{
	switch (operating_mode) {
	case QMI_DMS_OPERATING_MODE_ONLINE:
		return MM_MODEM_POWER_STATE_ON;
	case QMI_DMS_OPERATING_MODE_LOW_POWER:
	case QMI_DMS_OPERATING_MODE_PERSISTENT_LOW_POWER:
	case QMI_DMS_OPERATING_MODE_MODE_ONLY_LOW_POWER:
		return MM_MODEM_POWER_STATE_LOW;
	case QMI_DMS_OPERATING_MODE_OFFLINE:
	case QMI_DMS_OPERATING_MODE_SHUTTING_DOWN:
		return MM_MODEM_POWER_STATE_OFF;
	default:
		return MM_MODEM_POWER_STATE_UNKNOWN; /* factory test, reset, unknown */
	}
}

MMModem3gppPacketServiceState mmd_packet_service_state(int ps_attached)
{
	if (ps_attached > 0)
		return MM_MODEM_3GPP_PACKET_SERVICE_STATE_ATTACHED;
	if (ps_attached == 0)
		return MM_MODEM_3GPP_PACKET_SERVICE_STATE_DETACHED;
	return MM_MODEM_3GPP_PACKET_SERVICE_STATE_UNKNOWN;
}

/*
 * 3GPP TS 24.008/24.301 session management causes (libqmi's 3GPP verbose reasons are those
 * numbers) to the TS 27.007 codes of ModemManager's MobileEquipment errors.
 */
static const struct {
	gint16 cause;
	MMMobileEquipmentError error;
} cause_map[] = {
	{ 8, MM_MOBILE_EQUIPMENT_ERROR_OPERATOR_DETERMINED_BARRING },
	{ 26, MM_MOBILE_EQUIPMENT_ERROR_INSUFFICIENT_RESOURCES },
	{ 27, MM_MOBILE_EQUIPMENT_ERROR_MISSING_OR_UNKNOWN_APN },
	{ 28, MM_MOBILE_EQUIPMENT_ERROR_UNKNOWN_PDP_ADDRESS_OR_TYPE },
	{ 29, MM_MOBILE_EQUIPMENT_ERROR_USER_AUTHENTICATION_FAILED },
	{ 30, MM_MOBILE_EQUIPMENT_ERROR_ACTIVATION_REJECTED_BY_GGSN_OR_GW },
	{ 31, MM_MOBILE_EQUIPMENT_ERROR_ACTIVATION_REJECTED_UNSPECIFIED },
	{ 32, MM_MOBILE_EQUIPMENT_ERROR_SERVICE_OPTION_NOT_SUPPORTED },
	{ 33, MM_MOBILE_EQUIPMENT_ERROR_SERVICE_OPTION_NOT_SUBSCRIBED },
	{ 34, MM_MOBILE_EQUIPMENT_ERROR_SERVICE_OPTION_OUT_OF_ORDER },
	{ 36, MM_MOBILE_EQUIPMENT_ERROR_REGULAR_DEACTIVATION },
	{ 50, MM_MOBILE_EQUIPMENT_ERROR_IPV4_ONLY_ALLOWED },
	{ 51, MM_MOBILE_EQUIPMENT_ERROR_IPV6_ONLY_ALLOWED },
	{ 52, MM_MOBILE_EQUIPMENT_ERROR_SINGLE_ADDRESS_BEARERS_ONLY_ALLOWED },
	{ 55, MM_MOBILE_EQUIPMENT_ERROR_MULTIPLE_ACCESS_TO_PDN_CONNECTION_NOT_ALLOWED },
	{ 65, MM_MOBILE_EQUIPMENT_ERROR_MAXIMUM_NUMBER_OF_BEARERS_REACHED },
	{ 66, MM_MOBILE_EQUIPMENT_ERROR_REQUESTED_APN_NOT_SUPPORTED },
};

void mmd_error_from_end(const struct session_end *end, GQuark *ret_domain, gint *ret_code)
{
	if (end->have_verbose && end->verbose_type == QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP) {
		for (size_t i = 0; i < ARRAY_SIZE(cause_map); i++)
			if (cause_map[i].cause == end->verbose_reason) {
				*ret_domain = MM_MOBILE_EQUIPMENT_ERROR;
				*ret_code = cause_map[i].error;
				return;
			}
		*ret_domain = MM_MOBILE_EQUIPMENT_ERROR;
		*ret_code = MM_MOBILE_EQUIPMENT_ERROR_GPRS_UNKNOWN;
		return;
	}
	if (end->have_verbose || end->have_reason) {
		/* The network or the modem ended it for a reason 3GPP does not name: what
		 * ModemManager reports for a lost or refused call. */
		*ret_domain = MM_CONNECTION_ERROR;
		*ret_code = MM_CONNECTION_ERROR_NO_CARRIER;
		return;
	}
	*ret_domain = MM_CORE_ERROR;
	*ret_code = MM_CORE_ERROR_FAILED;
}
