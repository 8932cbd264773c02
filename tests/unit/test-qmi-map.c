/* SPDX-License-Identifier: MIT */
/*
 * QMI in the neutral modem model (qmi-map.c): DMS radio interfaces and NAS mode preference as
 * capabilities and modes, UIM's PIN1 state as the SIM lock, operating mode as power state,
 * PDP type as IP family, what qmi_modem_info holds as modem_info, and WDS call ends as
 * session_end (3GPP causes by number, as MBIM gives them, so D-Bus names them the same).
 */
#include <errno.h>
#include <string.h>

#include "qmi-modem.h"
#include "test-case.h"

#define RADIO(r) (1u << (r))

TEST(capabilities_modes)
{
	uint32_t lte = RADIO(QMI_DMS_RADIO_INTERFACE_LTE);
	uint32_t world = RADIO(QMI_DMS_RADIO_INTERFACE_GSM) | RADIO(QMI_DMS_RADIO_INTERFACE_UMTS) |
			 lte | RADIO(QMI_DMS_RADIO_INTERFACE_5GNR);

	EXPECT_EQ(qmi_map_capabilities(lte), MODEM_CAPABILITY_LTE);
	EXPECT_EQ(qmi_map_capabilities(world),
		  MODEM_CAPABILITY_GSM_UMTS | MODEM_CAPABILITY_LTE | MODEM_CAPABILITY_5GNR);
	EXPECT_EQ(qmi_map_capabilities(RADIO(QMI_DMS_RADIO_INTERFACE_EVDO) |
				       RADIO(QMI_DMS_RADIO_INTERFACE_TDS)),
		  MODEM_CAPABILITY_CDMA_EVDO | MODEM_CAPABILITY_TDS);
	EXPECT_EQ(qmi_map_capabilities(0), MODEM_CAPABILITY_NONE);
	EXPECT_EQ(qmi_map_modes(lte), MODEM_MODE_4G);
	EXPECT_EQ(qmi_map_modes(world),
		  MODEM_MODE_2G | MODEM_MODE_3G | MODEM_MODE_4G | MODEM_MODE_5G);
	EXPECT_EQ(qmi_map_mode_preference(QMI_NAS_RAT_MODE_PREFERENCE_LTE), MODEM_MODE_4G);
	EXPECT_EQ(qmi_map_mode_preference(QMI_NAS_RAT_MODE_PREFERENCE_UMTS |
					  QMI_NAS_RAT_MODE_PREFERENCE_5GNR),
		  MODEM_MODE_3G | MODEM_MODE_5G);
}

TEST(sim_power_profile)
{
	EXPECT_EQ(qmi_map_lock(QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED), MODEM_LOCK_SIM_PIN);
	EXPECT_EQ(qmi_map_lock(QMI_UIM_PIN_STATE_ENABLED_VERIFIED), MODEM_LOCK_NONE);
	EXPECT_EQ(qmi_map_lock(QMI_UIM_PIN_STATE_DISABLED), MODEM_LOCK_NONE);
	EXPECT_EQ(qmi_map_lock(QMI_UIM_PIN_STATE_BLOCKED), MODEM_LOCK_SIM_PUK);
	EXPECT_EQ(qmi_map_lock(QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED), MODEM_LOCK_UNKNOWN);
	EXPECT_EQ(qmi_map_ip_family(QMI_WDS_PDP_TYPE_IPV4_OR_IPV6), MODEM_IP_FAMILY_IPV4V6);
	EXPECT_EQ(qmi_map_ip_family(QMI_WDS_PDP_TYPE_IPV6), MODEM_IP_FAMILY_IPV6);
	EXPECT_EQ(qmi_map_ip_family(QMI_WDS_PDP_TYPE_IPV4), MODEM_IP_FAMILY_IPV4);
	EXPECT_EQ(qmi_map_ip_family(QMI_WDS_PDP_TYPE_PPP), MODEM_IP_FAMILY_NONE);
	EXPECT_EQ(qmi_map_ip_family(-1), MODEM_IP_FAMILY_NONE);
	EXPECT_EQ(qmi_map_power(QMI_DMS_OPERATING_MODE_ONLINE), MODEM_POWER_ON);
	EXPECT_EQ(qmi_map_power(QMI_DMS_OPERATING_MODE_PERSISTENT_LOW_POWER), MODEM_POWER_LOW);
	EXPECT_EQ(qmi_map_power(QMI_DMS_OPERATING_MODE_OFFLINE), MODEM_POWER_OFF);
	EXPECT_EQ(qmi_map_power(QMI_DMS_OPERATING_MODE_RESET), MODEM_POWER_UNKNOWN);
	EXPECT_EQ(qmi_map_power(-1), MODEM_POWER_UNKNOWN);
}

TEST(info)
{
	struct qmi_modem_info q = { 0 };
	struct modem_info i;

	/* Nothing answered: everything unknown, no lock claimed. */
	qmi_info_clear(&q);
	qmi_map_info(&q, &i);
	EXPECT_EQ(i.power, MODEM_POWER_UNKNOWN);
	EXPECT_EQ(i.packet_service, MODEM_PACKET_SERVICE_UNKNOWN);
	EXPECT_EQ(i.sim, MODEM_SIM_UNKNOWN);
	EXPECT_EQ(i.lock, MODEM_LOCK_UNKNOWN);
	EXPECT_TRUE(!i.tells_lock && !i.have_pin_retries && !i.have_puk_retries &&
		    !i.sim_pin_enabled);
	EXPECT_TRUE(!i.sim_operator_id && !i.attach_apn && !i.own_number);
	EXPECT_EQ(i.attach_ip_family, MODEM_IP_FAMILY_NONE);
	EXPECT_TRUE(!modem_info_sim_locked(&i));

	/* A SIM waiting for PIN1, an LTE+5G modem that prefers LTE. */
	q.uim = true;
	q.card = QMI_CARD_PRESENT;
	q.have_pin1 = true;
	q.pin1_state = QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED;
	q.pin1_retries = 3;
	q.puk1_retries = 10;
	q.radio_interfaces =
		RADIO(QMI_DMS_RADIO_INTERFACE_LTE) | RADIO(QMI_DMS_RADIO_INTERFACE_5GNR);
	q.have_mode_preference = true;
	q.mode_preference = QMI_NAS_RAT_MODE_PREFERENCE_LTE | QMI_NAS_RAT_MODE_PREFERENCE_GSM;
	q.ps_attached = 1;
	snprintf(q.operator_id, sizeof(q.operator_id), "00101");
	qmi_map_info(&q, &i);
	EXPECT_TRUE(i.tells_lock && i.have_pin_retries && i.have_puk_retries && i.sim_pin_enabled);
	EXPECT_EQ(i.lock, MODEM_LOCK_SIM_PIN);
	EXPECT_EQ(i.pin_retries, 3);
	EXPECT_EQ(i.puk_retries, 10);
	EXPECT_TRUE(modem_info_sim_locked(&i));
	EXPECT_EQ(i.modes, MODEM_MODE_4G | MODEM_MODE_5G);
	EXPECT_EQ(i.current_modes, MODEM_MODE_4G); /* the preference within what it has */
	EXPECT_EQ(i.packet_service, MODEM_PACKET_SERVICE_ATTACHED);
	EXPECT_STR_EQ(i.sim_operator_id, "00101");
	EXPECT_EQ(i.failed_reason, MODEM_FAILED_NONE);

	/* A preference outside what it has: all it has. */
	q.mode_preference = QMI_NAS_RAT_MODE_PREFERENCE_GSM;
	qmi_map_info(&q, &i);
	EXPECT_EQ(i.current_modes, MODEM_MODE_4G | MODEM_MODE_5G);

	/* Blocked for good: locked, with no code to name. */
	q.pin1_state = QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED;
	qmi_map_info(&q, &i);
	EXPECT_EQ(i.lock, MODEM_LOCK_UNKNOWN);
	EXPECT_TRUE(modem_info_sim_locked(&i));

	/* No card. */
	q.card = QMI_CARD_ABSENT;
	q.have_pin1 = false;
	qmi_map_info(&q, &i);
	EXPECT_EQ(i.sim, MODEM_SIM_ABSENT);
	EXPECT_EQ(i.failed_reason, MODEM_FAILED_SIM_MISSING);
	EXPECT_TRUE(!modem_info_sim_locked(&i));
	q.card = QMI_CARD_UNKNOWN; /* nothing for qmi_info_clear() to free but the strings */
	qmi_info_clear(&q);
}

TEST(end)
{
	struct session_end e;

	/* A wrong APN: a 3GPP cause, a refusal (slow retries). */
	EXPECT_TRUE(qmi_map_end(true, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP,
				QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN, false, 0, false,
				&e));
	EXPECT_EQ(e.kind, SESSION_END_3GPP);
	EXPECT_EQ(e.cause, 27);
	EXPECT_TRUE(strstr(e.text, "3gpp reason 27") != NULL);
	EXPECT_TRUE(!e.dropped);
	/* The same cause as a drop: never a refusal. */
	EXPECT_TRUE(!qmi_map_end(true, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP,
				 QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN, false, 0, true,
				 &e));
	EXPECT_TRUE(e.dropped);
	/* Regular deactivation: a cause, not a refusal. */
	EXPECT_TRUE(!qmi_map_end(true, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP,
				 QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_REGULAR_DEACTIVATION, false,
				 0, false, &e));
	EXPECT_EQ(e.cause, 36);
	/* The call manager's reasons and the old call end reason: named, but not 3GPP. */
	EXPECT_TRUE(!qmi_map_end(true, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_CM,
				 QMI_WDS_VERBOSE_CALL_END_REASON_CM_NO_SERVICE, false, 0, false,
				 &e));
	EXPECT_EQ(e.kind, SESSION_END_OTHER);
	EXPECT_TRUE(!qmi_map_end(false, 0, 0, true, QMI_WDS_CALL_END_REASON_GENERIC_NO_SERVICE,
				 false, &e));
	EXPECT_EQ(e.kind, SESSION_END_OTHER);
	EXPECT_TRUE(strstr(e.text, "call end reason") != NULL);
	/* Nothing said. */
	EXPECT_TRUE(!qmi_map_end(false, 0, 0, false, 0, true, &e));
	EXPECT_EQ(e.kind, SESSION_END_NONE);
	EXPECT_STR_EQ(e.text, "");
}

/* SetCurrentModes into NAS's mode preference and back: 3GPP radios only. */
TEST(mode_to_preference)
{
	EXPECT_EQ(qmi_map_mode_to_preference(MODEM_MODE_4G), QMI_NAS_RAT_MODE_PREFERENCE_LTE);
	EXPECT_EQ(qmi_map_mode_to_preference(MODEM_MODE_2G | MODEM_MODE_3G | MODEM_MODE_5G),
		  QMI_NAS_RAT_MODE_PREFERENCE_GSM | QMI_NAS_RAT_MODE_PREFERENCE_UMTS |
			  QMI_NAS_RAT_MODE_PREFERENCE_5GNR);
	EXPECT_EQ(qmi_map_mode_to_preference(MODEM_MODE_NONE), 0);
	for (enum modem_mode m = MODEM_MODE_2G; m <= MODEM_MODE_5G; m <<= 1)
		EXPECT_EQ(qmi_map_mode_preference(qmi_map_mode_to_preference(m)), m);
}

/* A scan's network status and radio, as ModemManager reads them. */
TEST(scan)
{
	EXPECT_EQ(qmi_map_network_status(QMI_NAS_NETWORK_STATUS_CURRENT_SERVING |
					 QMI_NAS_NETWORK_STATUS_HOME),
		  MODEM_NETWORK_CURRENT);
	EXPECT_EQ(qmi_map_network_status(QMI_NAS_NETWORK_STATUS_AVAILABLE |
					 QMI_NAS_NETWORK_STATUS_ROAMING),
		  MODEM_NETWORK_AVAILABLE);
	EXPECT_EQ(qmi_map_network_status(QMI_NAS_NETWORK_STATUS_AVAILABLE |
					 QMI_NAS_NETWORK_STATUS_FORBIDDEN),
		  MODEM_NETWORK_FORBIDDEN);
	/* Forbidden but not available: ModemManager says unknown. */
	EXPECT_EQ(qmi_map_network_status(QMI_NAS_NETWORK_STATUS_FORBIDDEN), MODEM_NETWORK_UNKNOWN);
	EXPECT_EQ(qmi_map_network_status(0), MODEM_NETWORK_UNKNOWN);
	EXPECT_EQ(qmi_map_radio_interface(QMI_NAS_RADIO_INTERFACE_LTE), MODEM_ACCESS_LTE);
	EXPECT_EQ(qmi_map_radio_interface(QMI_NAS_RADIO_INTERFACE_GSM), MODEM_ACCESS_GSM);
	EXPECT_EQ(qmi_map_radio_interface(QMI_NAS_RADIO_INTERFACE_UMTS), MODEM_ACCESS_UMTS);
	EXPECT_EQ(qmi_map_radio_interface(QMI_NAS_RADIO_INTERFACE_5GNR), MODEM_ACCESS_5GNR);
	EXPECT_EQ(qmi_map_radio_interface(QMI_NAS_RADIO_INTERFACE_NONE), MODEM_ACCESS_UNKNOWN);
	EXPECT_EQ(qmi_map_radio_interface(-1), MODEM_ACCESS_UNKNOWN);
}

TEST(operator_code)
{
	char buf[8];
	uint16_t mcc, mnc;
	bool mnc3;

	qmi_map_operator_code(1, 1, buf, sizeof(buf));
	EXPECT_STR_EQ(buf, "00101");
	qmi_map_operator_code(310, 260, buf, sizeof(buf));
	EXPECT_STR_EQ(buf, "310260");
	qmi_map_operator_code(262, 2, buf, sizeof(buf));
	EXPECT_STR_EQ(buf, "26202");
	/* Out of range from the modem: still 6 digits at most. */
	qmi_map_operator_code(65535, 65535, buf, sizeof(buf));
	EXPECT_STR_EQ(buf, "535535");

	EXPECT_TRUE(qmi_map_parse_operator_id("26202", &mcc, &mnc, &mnc3));
	EXPECT_EQ(mcc, 262);
	EXPECT_EQ(mnc, 2);
	EXPECT_TRUE(!mnc3);
	EXPECT_TRUE(qmi_map_parse_operator_id("310026", &mcc, &mnc, &mnc3));
	EXPECT_EQ(mcc, 310);
	EXPECT_EQ(mnc, 26);
	EXPECT_TRUE(mnc3);
	EXPECT_TRUE(!qmi_map_parse_operator_id("", &mcc, &mnc, &mnc3));
	EXPECT_TRUE(!qmi_map_parse_operator_id("2620", &mcc, &mnc, &mnc3));
	EXPECT_TRUE(!qmi_map_parse_operator_id("2620211", &mcc, &mnc, &mnc3));
	EXPECT_TRUE(!qmi_map_parse_operator_id("2620a", &mcc, &mnc, &mnc3));
	EXPECT_TRUE(!qmi_map_parse_operator_id("-2620", &mcc, &mnc, &mnc3));
}

/* NAS Get Network Time read by hand (libqmi may be built without it). */
static QmiMessage *time_response(const void *result, const void *tlv11, size_t len11)
{
	/* The parser reads TLVs by type: a message of the same id carries them as well. */
	QmiMessage *m = qmi_message_new(QMI_SERVICE_NAS, 1, 1, 0x007D);

	qmi_message_add_raw_tlv(m, 0x02, result, 4, NULL);
	if (tlv11)
		qmi_message_add_raw_tlv(m, 0x11, tlv11, len11, NULL);
	return m;
}

TEST(network_time)
{
	static const guint8 ok[4] = { 0, 0, 0, 0 };
	static const guint8 invalid_command[4] = { 1, 0, 0x47, 0 };
	/* 2026-12-02 06:04:28 UTC, Wednesday, zone +8 quarters, DST 1 h, LTE. */
	static const guint8 t[11] = { 0xEA, 0x07, 12, 2, 6, 4, 28, 2, 8, 1, 8 };
	struct modem_network_time nt;
	int err;

	g_autoptr(QmiMessage) m = time_response(ok, t, sizeof(t));
	EXPECT_EQ(qmi_time_parse(m, &nt, &err), 0);
	EXPECT_EQ(nt.year, 2026);
	EXPECT_EQ(nt.month, 12);
	EXPECT_EQ(nt.day, 2);
	EXPECT_EQ(nt.hour, 6);
	EXPECT_EQ(nt.second, 28);
	EXPECT_TRUE(nt.have_zone);
	EXPECT_EQ(nt.offset_minutes, 120);
	EXPECT_EQ(nt.dst_minutes, 60);
	/* Negative zones are signed quarters. */
	guint8 west[11];
	memcpy(west, t, sizeof(west));
	west[8] = (guint8)-20;
	g_autoptr(QmiMessage) w = time_response(ok, west, sizeof(west));
	EXPECT_EQ(qmi_time_parse(w, &nt, &err), 0);
	EXPECT_EQ(nt.offset_minutes, -300);
	/* No time heard, a refusal, a short TLV, a 13th month. */
	g_autoptr(QmiMessage) none = time_response(ok, NULL, 0);
	EXPECT_EQ(qmi_time_parse(none, &nt, &err), -ENOMSG);
	g_autoptr(QmiMessage) refused = time_response(invalid_command, NULL, 0);
	EXPECT_EQ(qmi_time_parse(refused, &nt, &err), -EIO);
	EXPECT_EQ(err, QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
	g_autoptr(QmiMessage) shrt = time_response(ok, t, 10);
	EXPECT_EQ(qmi_time_parse(shrt, &nt, &err), -EPROTO);
	guint8 bad[11];
	memcpy(bad, t, sizeof(bad));
	bad[2] = 13;
	g_autoptr(QmiMessage) b = time_response(ok, bad, sizeof(bad));
	EXPECT_EQ(qmi_time_parse(b, &nt, &err), -EPROTO);
}
