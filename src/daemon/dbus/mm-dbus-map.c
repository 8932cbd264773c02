/* SPDX-License-Identifier: MIT */
/* qmapd's state in ModemManager's terms (mm-dbus-map.h). */
#include <errno.h>
#include <libmm-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "mm-dbus-map.h"

/* The neutral model's values are ModemManager's: the map is a cast, checked here. */
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " is " #b)
SAME(MODEM_LOCK_UNKNOWN, MM_MODEM_LOCK_UNKNOWN);
SAME(MODEM_LOCK_NONE, MM_MODEM_LOCK_NONE);
SAME(MODEM_LOCK_SIM_PIN, MM_MODEM_LOCK_SIM_PIN);
SAME(MODEM_LOCK_SIM_PIN2, MM_MODEM_LOCK_SIM_PIN2);
SAME(MODEM_LOCK_SIM_PUK, MM_MODEM_LOCK_SIM_PUK);
SAME(MODEM_LOCK_SIM_PUK2, MM_MODEM_LOCK_SIM_PUK2);
SAME(MODEM_FAILED_NONE, MM_MODEM_STATE_FAILED_REASON_NONE);
SAME(MODEM_FAILED_UNKNOWN, MM_MODEM_STATE_FAILED_REASON_UNKNOWN);
SAME(MODEM_FAILED_SIM_MISSING, MM_MODEM_STATE_FAILED_REASON_SIM_MISSING);
SAME(MODEM_FAILED_SIM_ERROR, MM_MODEM_STATE_FAILED_REASON_SIM_ERROR);
SAME(MODEM_FAILED_UNKNOWN_CAPABILITIES, MM_MODEM_STATE_FAILED_REASON_UNKNOWN_CAPABILITIES);
SAME(MODEM_FAILED_ESIM_WITHOUT_PROFILES, MM_MODEM_STATE_FAILED_REASON_ESIM_WITHOUT_PROFILES);
SAME(MODEM_REGISTRATION_IDLE, MM_MODEM_3GPP_REGISTRATION_STATE_IDLE);
SAME(MODEM_REGISTRATION_HOME, MM_MODEM_3GPP_REGISTRATION_STATE_HOME);
SAME(MODEM_REGISTRATION_SEARCHING, MM_MODEM_3GPP_REGISTRATION_STATE_SEARCHING);
SAME(MODEM_REGISTRATION_DENIED, MM_MODEM_3GPP_REGISTRATION_STATE_DENIED);
SAME(MODEM_REGISTRATION_UNKNOWN, MM_MODEM_3GPP_REGISTRATION_STATE_UNKNOWN);
SAME(MODEM_REGISTRATION_ROAMING, MM_MODEM_3GPP_REGISTRATION_STATE_ROAMING);
SAME(MODEM_POWER_UNKNOWN, MM_MODEM_POWER_STATE_UNKNOWN);
SAME(MODEM_POWER_OFF, MM_MODEM_POWER_STATE_OFF);
SAME(MODEM_POWER_LOW, MM_MODEM_POWER_STATE_LOW);
SAME(MODEM_POWER_ON, MM_MODEM_POWER_STATE_ON);
SAME(MODEM_PACKET_SERVICE_UNKNOWN, MM_MODEM_3GPP_PACKET_SERVICE_STATE_UNKNOWN);
SAME(MODEM_PACKET_SERVICE_DETACHED, MM_MODEM_3GPP_PACKET_SERVICE_STATE_DETACHED);
SAME(MODEM_PACKET_SERVICE_ATTACHED, MM_MODEM_3GPP_PACKET_SERVICE_STATE_ATTACHED);
SAME(MODEM_ACCESS_GSM, MM_MODEM_ACCESS_TECHNOLOGY_GSM);
SAME(MODEM_ACCESS_GPRS, MM_MODEM_ACCESS_TECHNOLOGY_GPRS);
SAME(MODEM_ACCESS_EDGE, MM_MODEM_ACCESS_TECHNOLOGY_EDGE);
SAME(MODEM_ACCESS_UMTS, MM_MODEM_ACCESS_TECHNOLOGY_UMTS);
SAME(MODEM_ACCESS_HSDPA, MM_MODEM_ACCESS_TECHNOLOGY_HSDPA);
SAME(MODEM_ACCESS_HSUPA, MM_MODEM_ACCESS_TECHNOLOGY_HSUPA);
SAME(MODEM_ACCESS_HSPA, MM_MODEM_ACCESS_TECHNOLOGY_HSPA);
SAME(MODEM_ACCESS_HSPA_PLUS, MM_MODEM_ACCESS_TECHNOLOGY_HSPA_PLUS);
SAME(MODEM_ACCESS_1XRTT, MM_MODEM_ACCESS_TECHNOLOGY_1XRTT);
SAME(MODEM_ACCESS_EVDO0, MM_MODEM_ACCESS_TECHNOLOGY_EVDO0);
SAME(MODEM_ACCESS_LTE, MM_MODEM_ACCESS_TECHNOLOGY_LTE);
SAME(MODEM_ACCESS_5GNR, MM_MODEM_ACCESS_TECHNOLOGY_5GNR);
SAME(MODEM_CAPABILITY_CDMA_EVDO, MM_MODEM_CAPABILITY_CDMA_EVDO);
SAME(MODEM_CAPABILITY_GSM_UMTS, MM_MODEM_CAPABILITY_GSM_UMTS);
SAME(MODEM_CAPABILITY_LTE, MM_MODEM_CAPABILITY_LTE);
SAME(MODEM_CAPABILITY_5GNR, MM_MODEM_CAPABILITY_5GNR);
SAME(MODEM_CAPABILITY_TDS, MM_MODEM_CAPABILITY_TDS);
SAME(MODEM_NETWORK_UNKNOWN, MM_MODEM_3GPP_NETWORK_AVAILABILITY_UNKNOWN);
SAME(MODEM_NETWORK_AVAILABLE, MM_MODEM_3GPP_NETWORK_AVAILABILITY_AVAILABLE);
SAME(MODEM_NETWORK_CURRENT, MM_MODEM_3GPP_NETWORK_AVAILABILITY_CURRENT);
SAME(MODEM_NETWORK_FORBIDDEN, MM_MODEM_3GPP_NETWORK_AVAILABILITY_FORBIDDEN);
SAME(MODEM_MODE_2G, MM_MODEM_MODE_2G);
SAME(MODEM_MODE_3G, MM_MODEM_MODE_3G);
SAME(MODEM_MODE_4G, MM_MODEM_MODE_4G);
SAME(MODEM_MODE_5G, MM_MODEM_MODE_5G);
SAME(MODEM_IP_FAMILY_NONE, MM_BEARER_IP_FAMILY_NONE);
SAME(MODEM_IP_FAMILY_IPV4, MM_BEARER_IP_FAMILY_IPV4);
SAME(MODEM_IP_FAMILY_IPV6, MM_BEARER_IP_FAMILY_IPV6);
SAME(MODEM_IP_FAMILY_IPV4V6, MM_BEARER_IP_FAMILY_IPV4V6);
#undef SAME

MMModemState mmd_modem_state(const struct mmd_state_input *in)
{
	switch (in->control) {
	case MODEM_CONTROL_CLOSED:
		return MM_MODEM_STATE_UNKNOWN;
	case MODEM_CONTROL_OPENING:
		return MM_MODEM_STATE_ENABLING;
	case MODEM_CONTROL_FAILED:
		/* MBIM stops short of ready while the SIM waits for its code: LOCKED all the
		 * same, so that clients ask for it. */
		return in->locked ? MM_MODEM_STATE_LOCKED : MM_MODEM_STATE_FAILED;
	case MODEM_CONTROL_READY:
		break;
	}
	/* No SIM (or a broken one): ModemManager's FAILED with the reason, whatever the
	 * radio does (a QMI modem without SIM keeps searching for emergency service). */
	if (in->sim_failed)
		return MM_MODEM_STATE_FAILED;
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

MMModem3gppRegistrationState mmd_registration_state(enum modem_registration r)
{
	return (MMModem3gppRegistrationState)r;
}

MMModemAccessTechnology mmd_access_technology(enum modem_access_technology act)
{
	return (MMModemAccessTechnology)act;
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

unsigned mmd_lte_band_number(MMModemBand band)
{
	/* The EUTRAN bands are one run from band 1 (mmd_lte_bands names the same ones). */
	unsigned n = (unsigned)band - MM_MODEM_BAND_EUTRAN_1 + 1;

	if (band < MM_MODEM_BAND_EUTRAN_1 || band > MM_MODEM_BAND_EUTRAN_85)
		return 0;
	return (n <= 71 && n != 15 && n != 16) || n == 85 ? n : 0;
}

int mmd_bands_to_lte(const guint32 *bands, size_t n, const uint64_t supported[4], uint64_t ret[4],
		     guint32 *bad)
{
	memset(ret, 0, 4 * sizeof(ret[0]));
	*bad = MM_MODEM_BAND_UNKNOWN;
	if (n == 0)
		return -EINVAL;
	if (n == 1 && bands[0] == MM_MODEM_BAND_ANY) {
		memcpy(ret, supported, 4 * sizeof(ret[0]));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned b = mmd_lte_band_number((MMModemBand)bands[i]);

		*bad = bands[i];
		if (bands[i] == MM_MODEM_BAND_ANY || bands[i] == MM_MODEM_BAND_UNKNOWN)
			return -EINVAL;
		if (!b || !(supported[(b - 1) / 64] & (1ull << ((b - 1) % 64))))
			return -ENOTSUP;
		ret[(b - 1) / 64] |= 1ull << ((b - 1) % 64);
	}
	*bad = MM_MODEM_BAND_UNKNOWN;
	return 0;
}

MMModem3gppNetworkAvailability mmd_network_availability(enum modem_network_status s)
{
	return (MMModem3gppNetworkAvailability)s;
}

enum modem_mode mmd_modes_from_mm(MMModemMode modes)
{
	return (enum modem_mode)(modes & (MM_MODEM_MODE_2G | MM_MODEM_MODE_3G | MM_MODEM_MODE_4G |
					  MM_MODEM_MODE_5G));
}

GVariant *mmd_signal_dict(const struct modem_signal_values *v)
{
	GVariantBuilder b;
	const struct {
		const char *key;
		double value;
	} keys[] = { { "rssi", v->rssi },
		     { "rsrq", v->rsrq },
		     { "rsrp", v->rsrp },
		     { "snr", v->snr },
		     { "ecio", v->ecio } };

	g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
	for (size_t i = 0; v->valid && i < ARRAY_SIZE(keys); i++)
		if (!isnan(keys[i].value))
			g_variant_builder_add(&b, "{sv}", keys[i].key,
					      g_variant_new_double(keys[i].value));
	return g_variant_builder_end(&b);
}

char *mmd_network_time_iso8601(const struct modem_network_time *t)
{
	g_autoptr(GDateTime) utc =
		g_date_time_new_utc(t->year, t->month, t->day, t->hour, t->minute, t->second);

	if (!utc)
		return NULL;
	if (!t->have_zone)
		return g_date_time_format_iso8601(utc);
	g_autoptr(GTimeZone) tz = g_time_zone_new_offset(t->offset_minutes * 60);
	g_autoptr(GDateTime) local = g_date_time_to_timezone(utc, tz);
	return local ? g_date_time_format_iso8601(local) : NULL;
}

GVariant *mmd_network_timezone(int offset_minutes, int dst_minutes)
{
	GVariantBuilder b;

	g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
	g_variant_builder_add(&b, "{sv}", "offset", g_variant_new_int32(offset_minutes));
	g_variant_builder_add(&b, "{sv}", "dst-offset", g_variant_new_int32(dst_minutes));
	return g_variant_builder_end(&b);
}

MMModemCapability mmd_capability(enum modem_capability caps)
{
	return (MMModemCapability)caps;
}

MMModemMode mmd_modes(enum modem_mode modes)
{
	return (MMModemMode)modes;
}

MMModemLock mmd_lock(enum modem_lock lock)
{
	return (MMModemLock)lock;
}

MMModem3gppFacility mmd_facility_locks(bool sim_pin_enabled)
{
	return sim_pin_enabled ? MM_MODEM_3GPP_FACILITY_SIM : MM_MODEM_3GPP_FACILITY_NONE;
}

MMBearerIpFamily mmd_ip_family(enum modem_ip_family family)
{
	return (MMBearerIpFamily)family;
}

MMModemPowerState mmd_power_state(enum modem_power_state power)
{
	return (MMModemPowerState)power;
}

MMModemStateFailedReason mmd_failed_reason(enum modem_failed_reason reason)
{
	return (MMModemStateFailedReason)reason;
}

MMModem3gppPacketServiceState mmd_packet_service_state(enum modem_packet_service ps)
{
	return (MMModem3gppPacketServiceState)ps;
}

/*
 * 3GPP TS 24.008/24.301 session management causes (session_end's cause) to the TS 27.007 codes of ModemManager's MobileEquipment errors.
 */
static const struct {
	int cause;
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
	if (end->kind == SESSION_END_3GPP) {
		for (size_t i = 0; i < ARRAY_SIZE(cause_map); i++)
			if (cause_map[i].cause == end->cause) {
				*ret_domain = MM_MOBILE_EQUIPMENT_ERROR;
				*ret_code = cause_map[i].error;
				return;
			}
		*ret_domain = MM_MOBILE_EQUIPMENT_ERROR;
		*ret_code = MM_MOBILE_EQUIPMENT_ERROR_GPRS_UNKNOWN;
		return;
	}
	if (end->kind == SESSION_END_OTHER) {
		/* The network or the modem ended it for a reason 3GPP does not name: what
		 * ModemManager reports for a lost or refused call. */
		*ret_domain = MM_CONNECTION_ERROR;
		*ret_code = MM_CONNECTION_ERROR_NO_CARRIER;
		return;
	}
	*ret_domain = MM_CORE_ERROR;
	*ret_code = MM_CORE_ERROR_FAILED;
}

char *mmd_device_identifier(unsigned vid, unsigned pid, const char *imei, const char *revision,
			    const char *model, const char *manufacturer)
{
	/* ModemManager's QMI and MBIM modems pass "" for ATI and ATI1: what is left is
	 * EquipmentIdentifier, Revision, Model, Manufacturer, in that order. */
	const char *parts[] = { imei, revision, model, manufacturer };
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA1);
	bool any = false;
	char hex[9];

	for (size_t k = 0; k < G_N_ELEMENTS(parts); k++)
		any = any || (parts[k] && *parts[k]);
	if (!any)
		return NULL;
	/* Each ID as 8 lower-case hex digits, left out when 0. */
	if (vid) {
		snprintf(hex, sizeof(hex), "%08x", vid);
		g_checksum_update(sum, (const guchar *)hex, 8);
	}
	if (pid) {
		snprintf(hex, sizeof(hex), "%08x", pid);
		g_checksum_update(sum, (const guchar *)hex, 8);
	}
	/* The strings without white space and without bytes past ASCII. */
	for (size_t k = 0; k < G_N_ELEMENTS(parts); k++)
		for (const char *p = parts[k]; p && *p; p++) {
			unsigned char c = (unsigned char)*p;
			if (c < 0x80 && !g_ascii_isspace(c) && c != '\v')
				g_checksum_update(sum, &c, 1);
		}
	return g_strdup(g_checksum_get_string(sum));
}
