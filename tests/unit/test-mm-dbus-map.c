/* SPDX-License-Identifier: MIT */
/*
 * mm-dbus-map: qmapd's modem and session states as ModemManager's Modem.State, and the QMI
 * call-end reasons as the D-Bus error names NetworkManager translates (checked by name, through
 * libmm-glib's registered error domains, as a client receives them).
 */
#include <gio/gio.h>
#include <libmm-glib.h>

#include "mm-dbus-map.h"
#include "test-util.h"

static void test_state(void)
{
	struct mmd_state_input in = { .qmi = QMI_MODEM_STATE_READY, .registration = "home" };

	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_REGISTERED);
	in.registration = "roaming";
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_REGISTERED);
	in.registration = "searching";
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_SEARCHING);
	in.registration = "";
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLED);
	in.registration = "denied";
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLED);
	in.connecting = 1;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_CONNECTING);
	in.disconnecting = 1;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_DISCONNECTING);
	in.connected = 1; /* one connected mux is enough, whatever the others do */
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_CONNECTED);
	in.disabled = true; /* the file's sessions stay up while disabled */
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_CONNECTED);
	in.connected = in.connecting = in.disconnecting = 0;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_DISABLED);

	in = (struct mmd_state_input){ .qmi = QMI_MODEM_STATE_OPENING, .connected = 1 };
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLING);
	in.qmi = QMI_MODEM_STATE_FAILED;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_FAILED);
	in.qmi = QMI_MODEM_STATE_CLOSED;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_UNKNOWN);

	/* A SIM waiting for its PIN: LOCKED while ready, whatever the registration says. */
	in = (struct mmd_state_input){ .qmi = QMI_MODEM_STATE_READY,
				       .registration = "idle",
				       .locked = true };
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_LOCKED);
	in.qmi = QMI_MODEM_STATE_OPENING;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLING);
}

#define RADIO(r) (1u << (r))

static void test_capabilities_modes(void)
{
	uint32_t lte = RADIO(QMI_DMS_RADIO_INTERFACE_LTE);
	uint32_t world = RADIO(QMI_DMS_RADIO_INTERFACE_GSM) | RADIO(QMI_DMS_RADIO_INTERFACE_UMTS) |
			 lte | RADIO(QMI_DMS_RADIO_INTERFACE_5GNR);
	MMModemMode allowed[8];

	EXPECT_EQ(mmd_capabilities_from_radio(lte), MM_MODEM_CAPABILITY_LTE);
	EXPECT_EQ(mmd_capabilities_from_radio(world), MM_MODEM_CAPABILITY_GSM_UMTS |
							      MM_MODEM_CAPABILITY_LTE |
							      MM_MODEM_CAPABILITY_5GNR);
	EXPECT_EQ(mmd_capabilities_from_radio(RADIO(QMI_DMS_RADIO_INTERFACE_EVDO) |
					      RADIO(QMI_DMS_RADIO_INTERFACE_TDS)),
		  MM_MODEM_CAPABILITY_CDMA_EVDO | MM_MODEM_CAPABILITY_TDS);
	EXPECT_EQ(mmd_capabilities_from_radio(0), MM_MODEM_CAPABILITY_NONE);
	EXPECT_EQ(mmd_modes_from_radio(lte), MM_MODEM_MODE_4G);
	EXPECT_EQ(mmd_modes_from_radio(world),
		  MM_MODEM_MODE_2G | MM_MODEM_MODE_3G | MM_MODEM_MODE_4G | MM_MODEM_MODE_5G);
	EXPECT_EQ(mmd_modes_from_preference(QMI_NAS_RAT_MODE_PREFERENCE_LTE), MM_MODEM_MODE_4G);
	EXPECT_EQ(mmd_modes_from_preference(QMI_NAS_RAT_MODE_PREFERENCE_UMTS |
					    QMI_NAS_RAT_MODE_PREFERENCE_5GNR),
		  MM_MODEM_MODE_3G | MM_MODEM_MODE_5G);

	/* One mode: itself only; several: all together first, then each alone. */
	EXPECT_EQ(mmd_supported_modes(MM_MODEM_MODE_4G, allowed, 8), 1);
	EXPECT_EQ(allowed[0], MM_MODEM_MODE_4G);
	EXPECT_EQ(mmd_supported_modes(MM_MODEM_MODE_3G | MM_MODEM_MODE_4G, allowed, 8), 3);
	EXPECT_EQ(allowed[0], MM_MODEM_MODE_3G | MM_MODEM_MODE_4G);
	EXPECT_EQ(allowed[1], MM_MODEM_MODE_3G);
	EXPECT_EQ(allowed[2], MM_MODEM_MODE_4G);
	EXPECT_EQ(mmd_supported_modes(MM_MODEM_MODE_3G | MM_MODEM_MODE_4G, allowed, 2), 2);
	EXPECT_EQ(mmd_supported_modes(MM_MODEM_MODE_NONE, allowed, 8), 0);
}

static void test_bands(void)
{
	/* Bands 1, 3, 7, 8, 20, 28 (qmapd-sim's), 15 (no name in ModemManager), 85, 255. */
	uint64_t bits[4] = { (1ull << 0) | (1ull << 2) | (1ull << 6) | (1ull << 7) | (1ull << 14) |
				     (1ull << 19) | (1ull << 27),
			     1ull << (85 - 65), 0, 1ull << (255 - 193) };
	MMModemBand bands[16];

	EXPECT_EQ(mmd_lte_bands(bits, bands, 16), 7);
	EXPECT_EQ(bands[0], MM_MODEM_BAND_EUTRAN_1);
	EXPECT_EQ(bands[1], MM_MODEM_BAND_EUTRAN_3);
	EXPECT_EQ(bands[2], MM_MODEM_BAND_EUTRAN_7);
	EXPECT_EQ(bands[3], MM_MODEM_BAND_EUTRAN_8);
	EXPECT_EQ(bands[4], MM_MODEM_BAND_EUTRAN_20);
	EXPECT_EQ(bands[5], MM_MODEM_BAND_EUTRAN_28);
	EXPECT_EQ(bands[6], MM_MODEM_BAND_EUTRAN_85);
	EXPECT_EQ(mmd_lte_bands(bits, bands, 2), 2);
	/* Every band it names is one ModemManager knows by name. */
	uint64_t all[4] = { ~0ull, ~0ull, ~0ull, ~0ull };
	MMModemBand many[256];
	size_t n = mmd_lte_bands(all, many, 256);
	EXPECT_EQ(n, 70);
	for (size_t i = 0; i < n; i++)
		EXPECT_TRUE(mm_modem_band_get_string(many[i]) != NULL);
}

static void test_sim_locks(void)
{
	EXPECT_EQ(mmd_unlock_required(true, QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED),
		  MM_MODEM_LOCK_SIM_PIN);
	EXPECT_EQ(mmd_unlock_required(true, QMI_UIM_PIN_STATE_ENABLED_VERIFIED),
		  MM_MODEM_LOCK_NONE);
	EXPECT_EQ(mmd_unlock_required(true, QMI_UIM_PIN_STATE_DISABLED), MM_MODEM_LOCK_NONE);
	EXPECT_EQ(mmd_unlock_required(true, QMI_UIM_PIN_STATE_BLOCKED), MM_MODEM_LOCK_SIM_PUK);
	EXPECT_EQ(mmd_unlock_required(false, QMI_UIM_PIN_STATE_DISABLED), MM_MODEM_LOCK_UNKNOWN);
	EXPECT_EQ(mmd_facility_locks(true, QMI_UIM_PIN_STATE_ENABLED_VERIFIED),
		  MM_MODEM_3GPP_FACILITY_SIM);
	EXPECT_EQ(mmd_facility_locks(true, QMI_UIM_PIN_STATE_DISABLED),
		  MM_MODEM_3GPP_FACILITY_NONE);
	EXPECT_EQ(mmd_facility_locks(false, QMI_UIM_PIN_STATE_ENABLED_VERIFIED),
		  MM_MODEM_3GPP_FACILITY_NONE);
	EXPECT_EQ(mmd_packet_service_state(1), MM_MODEM_3GPP_PACKET_SERVICE_STATE_ATTACHED);
	EXPECT_EQ(mmd_packet_service_state(0), MM_MODEM_3GPP_PACKET_SERVICE_STATE_DETACHED);
	EXPECT_EQ(mmd_packet_service_state(-1), MM_MODEM_3GPP_PACKET_SERVICE_STATE_UNKNOWN);
	EXPECT_EQ(mmd_ip_family_from_pdp(QMI_WDS_PDP_TYPE_IPV4_OR_IPV6),
		  MM_BEARER_IP_FAMILY_IPV4V6);
	EXPECT_EQ(mmd_ip_family_from_pdp(QMI_WDS_PDP_TYPE_IPV6), MM_BEARER_IP_FAMILY_IPV6);
	EXPECT_EQ(mmd_ip_family_from_pdp(QMI_WDS_PDP_TYPE_IPV4), MM_BEARER_IP_FAMILY_IPV4);
	EXPECT_EQ(mmd_ip_family_from_pdp(QMI_WDS_PDP_TYPE_PPP), MM_BEARER_IP_FAMILY_NONE);
	EXPECT_EQ(mmd_ip_family_from_pdp(-1), MM_BEARER_IP_FAMILY_NONE);
	EXPECT_EQ(mmd_power_state(QMI_DMS_OPERATING_MODE_ONLINE), MM_MODEM_POWER_STATE_ON);
	EXPECT_EQ(mmd_power_state(QMI_DMS_OPERATING_MODE_PERSISTENT_LOW_POWER),
		  MM_MODEM_POWER_STATE_LOW);
	EXPECT_EQ(mmd_power_state(QMI_DMS_OPERATING_MODE_OFFLINE), MM_MODEM_POWER_STATE_OFF);
	EXPECT_EQ(mmd_power_state(QMI_DMS_OPERATING_MODE_RESET), MM_MODEM_POWER_STATE_UNKNOWN);
	EXPECT_EQ(mmd_power_state(-1), MM_MODEM_POWER_STATE_UNKNOWN);
}

static void test_radio(void)
{
	EXPECT_EQ(mmd_registration_state("home"), MM_MODEM_3GPP_REGISTRATION_STATE_HOME);
	EXPECT_EQ(mmd_registration_state("idle"), MM_MODEM_3GPP_REGISTRATION_STATE_IDLE);
	EXPECT_EQ(mmd_registration_state("unknown"), MM_MODEM_3GPP_REGISTRATION_STATE_UNKNOWN);
	EXPECT_EQ(mmd_registration_state(NULL), MM_MODEM_3GPP_REGISTRATION_STATE_UNKNOWN);
	EXPECT_EQ(mmd_access_technology("lte"), MM_MODEM_ACCESS_TECHNOLOGY_LTE);
	EXPECT_EQ(mmd_access_technology("5gnr"), MM_MODEM_ACCESS_TECHNOLOGY_5GNR);
	EXPECT_EQ(mmd_access_technology("none"), MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN);
	EXPECT_EQ(mmd_access_technology(""), MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN);
	EXPECT_EQ(mmd_capabilities(MM_MODEM_ACCESS_TECHNOLOGY_5GNR),
		  MM_MODEM_CAPABILITY_LTE | MM_MODEM_CAPABILITY_5GNR);
	EXPECT_EQ(mmd_capabilities(MM_MODEM_ACCESS_TECHNOLOGY_LTE), MM_MODEM_CAPABILITY_LTE);
	EXPECT_EQ(mmd_capabilities(MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN), MM_MODEM_CAPABILITY_NONE);
	EXPECT_EQ(mmd_signal_quality(-120), 0);
	EXPECT_EQ(mmd_signal_quality(-113), 0);
	EXPECT_EQ(mmd_signal_quality(-65), 77);
	EXPECT_EQ(mmd_signal_quality(-51), 100);
	EXPECT_EQ(mmd_signal_quality(-20), 100);
}

/* The D-Bus error name a client gets for end. */
static char *error_name(const struct session_end *end)
{
	GQuark domain;
	gint code;

	mmd_error_from_end(end, &domain, &code);
	g_autoptr(GError) e = g_error_new_literal(domain, code, "x");
	return g_dbus_error_encode_gerror(e);
}

static void expect_name(const struct session_end *end, const char *name)
{
	g_autofree char *got = error_name(end);
	EXPECT_STR_EQ(got, name);
}

static struct session_end cause(gint16 c)
{
	return (struct session_end){ .have_verbose = true,
				     .verbose_type = QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP,
				     .verbose_reason = c };
}

static void test_errors(void)
{
#define ME "org.freedesktop.ModemManager1.Error.MobileEquipment."
	struct session_end e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN);
	expect_name(&e, ME "MissingOrUnknownApn");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);
	expect_name(&e, ME "UserAuthenticationFailed");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_OPERATOR_DETERMINED_BARRING);
	expect_name(&e, ME "OperatorDeterminedBarring");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_REGULAR_DEACTIVATION);
	expect_name(&e, ME "RegularDeactivation");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_IPV4_ONLY_ALLOWED);
	expect_name(&e, ME "Ipv4OnlyAllowed");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_OPTION_UNSUBSCRIBED);
	expect_name(&e, ME "ServiceOptionNotSubscribed");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_INSUFFICIENT_RESOURCES);
	expect_name(&e, ME "InsufficientResources");
	e = cause(QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_MULTIPLE_CONNECTION_TO_SAME_PDN_NOT_ALLOWED);
	expect_name(&e, ME "MultipleAccessToPdnConnectionNotAllowed");
	e = cause(111); /* a 3GPP cause without a name of its own */
	expect_name(&e, ME "GprsUnknown");
	e = (struct session_end){ .have_verbose = true,
				  .verbose_type = QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_CM,
				  .verbose_reason = QMI_WDS_VERBOSE_CALL_END_REASON_CM_NO_SERVICE };
	expect_name(&e, "org.freedesktop.ModemManager1.Error.Connection.NoCarrier");
	e = (struct session_end){ .have_reason = true,
				  .reason = QMI_WDS_CALL_END_REASON_GENERIC_NO_SERVICE };
	expect_name(&e, "org.freedesktop.ModemManager1.Error.Connection.NoCarrier");
	e = (struct session_end){};
	expect_name(&e, "org.freedesktop.ModemManager1.Error.Core.Failed");
#undef ME
}

int main(void)
{
	test_state();
	test_radio();
	test_capabilities_modes();
	test_bands();
	test_sim_locks();
	test_errors();
	return test_result("test-mm-dbus-map");
}
