/* SPDX-License-Identifier: MIT */
/*
 * MBIM control's pure mappings (mbim-modem.h): ip-type and allowed-auth to what CONNECT asks,
 * the granted IP type to families, refusals and drops to the session's reason (a 3GPP cause,
 * as QMI gives it, so D-Bus names it the same), the subscriber state as the neutral SIM
 * facts, the values status shows, RADIO_STATE as power and the telephone numbers kept as
 * own numbers.
 */
#include <math.h>
#include <string.h>

#include "mbim-modem.h"
#include "test-case.h"

TEST(connect_request)
{
	EXPECT_EQ(mbim_map_ip_type(CONFIG_IP_TYPE_IPV4), MBIM_CONTEXT_IP_TYPE_IPV4);
	EXPECT_EQ(mbim_map_ip_type(CONFIG_IP_TYPE_IPV6), MBIM_CONTEXT_IP_TYPE_IPV6);
	EXPECT_EQ(mbim_map_ip_type(CONFIG_IP_TYPE_IPV4V6), MBIM_CONTEXT_IP_TYPE_IPV4V6);

	EXPECT_EQ(mbim_map_granted_families(MBIM_CONTEXT_IP_TYPE_IPV4), 1);
	EXPECT_EQ(mbim_map_granted_families(MBIM_CONTEXT_IP_TYPE_IPV6), 2);
	EXPECT_EQ(mbim_map_granted_families(MBIM_CONTEXT_IP_TYPE_IPV4V6), 3);
	EXPECT_EQ(mbim_map_granted_families(MBIM_CONTEXT_IP_TYPE_IPV4_AND_IPV6), 3);
	EXPECT_EQ(mbim_map_granted_families(MBIM_CONTEXT_IP_TYPE_DEFAULT), 0);

	EXPECT_EQ(mbim_map_auth("", false), MBIM_AUTH_PROTOCOL_NONE);
	EXPECT_EQ(mbim_map_auth("", true), MBIM_AUTH_PROTOCOL_CHAP);
	EXPECT_EQ(mbim_map_auth("pap", true), MBIM_AUTH_PROTOCOL_PAP);
	EXPECT_EQ(mbim_map_auth("chap", true), MBIM_AUTH_PROTOCOL_CHAP);
	EXPECT_EQ(mbim_map_auth("pap chap", true), MBIM_AUTH_PROTOCOL_CHAP);
	EXPECT_EQ(mbim_map_auth("mschapv2", true), MBIM_AUTH_PROTOCOL_MSCHAPV2);
	EXPECT_EQ(mbim_map_auth("pap mschapv2", true), MBIM_AUTH_PROTOCOL_MSCHAPV2);
}

TEST(end)
{
	struct session_end end;
	char text[128];

	/* A wrong APN: FAILURE with nw_error 27, a refusal (slow retries). */
	EXPECT_TRUE(mbim_map_end(MBIM_STATUS_ERROR_FAILURE, 27, false, &end, text, sizeof(text)));
	EXPECT_STR_EQ(text, "Failure, nw_error 27 (missing-or-unknown-apn)");
	EXPECT_EQ(end.kind, SESSION_END_3GPP);
	EXPECT_EQ(end.cause, 27);
	EXPECT_STR_EQ(end.text, text);
	EXPECT_TRUE(!(end.dropped));

	/* Credentials: 29, a refusal too. */
	EXPECT_TRUE(mbim_map_end(MBIM_STATUS_ERROR_FAILURE, 29, false, &end, text, sizeof(text)));
	EXPECT_EQ(end.cause, 29);

	/* No room for another context: no nw_error, retried at the usual pace. */
	EXPECT_TRUE(!mbim_map_end(MBIM_STATUS_ERROR_MAX_ACTIVATED_CONTEXTS, 0, false, &end, text,
				  sizeof(text)));
	EXPECT_EQ(end.kind, SESSION_END_NONE);
	EXPECT_TRUE(strstr(text, "status 13") != NULL);

	/* The network ends the session (regular deactivation): a drop, never a refusal. */
	EXPECT_TRUE(!(mbim_map_end(MBIM_STATUS_ERROR_NONE, 36, true, &end, text, sizeof(text))));
	/* libmbim 1.28 has no name for 36, later ones do. */
	EXPECT_TRUE(strncmp(text, "nw_error 36", 11) == 0);
	EXPECT_TRUE(end.dropped);
	EXPECT_EQ(end.cause, 36);
	EXPECT_TRUE(!mbim_map_end(MBIM_STATUS_ERROR_NONE, 0, true, &end, text, sizeof(text)));
	EXPECT_STR_EQ(text, "no reason given");
	EXPECT_EQ(end.kind, SESSION_END_NONE);
}

TEST(sim)
{
	struct modem_info i = { 0 };

	mbim_map_sim(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_INITIALIZED), &i);
	EXPECT_EQ(i.sim, MODEM_SIM_PRESENT);
	EXPECT_TRUE(i.tells_lock);
	EXPECT_EQ(i.lock, MODEM_LOCK_NONE);
	EXPECT_EQ(i.failed_reason, MODEM_FAILED_NONE);
	i = (struct modem_info){ 0 };
	mbim_map_sim(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED), &i);
	EXPECT_EQ(i.sim, MODEM_SIM_ABSENT);
	EXPECT_EQ(i.failed_reason, MODEM_FAILED_SIM_MISSING);
	i = (struct modem_info){ 0 };
	mbim_map_sim(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_BAD_SIM), &i);
	EXPECT_EQ(i.sim, MODEM_SIM_ERROR);
	EXPECT_EQ(i.failed_reason, MODEM_FAILED_SIM_ERROR);
	i = (struct modem_info){ 0 };
	mbim_map_sim(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED), &i);
	EXPECT_EQ(i.lock, MODEM_LOCK_SIM_PIN);
	EXPECT_EQ(i.sim, MODEM_SIM_PRESENT);
	EXPECT_TRUE(i.sim_pin_enabled && modem_info_sim_locked(&i));
	i = (struct modem_info){ 0 };
	mbim_map_sim(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_NOT_INITIALIZED), &i);
	EXPECT_EQ(i.sim, MODEM_SIM_UNKNOWN);
	EXPECT_TRUE(!i.tells_lock);
}

/* MBIM_CID_PIN's answer refines the lock and gives the tries of the code it names. */
TEST(pin)
{
	struct modem_info i = { 0 };

	mbim_map_sim("device-locked", &i);
	mbim_map_pin(true, MBIM_PIN_TYPE_PIN1, MBIM_PIN_STATE_LOCKED, 2, -1, &i);
	EXPECT_EQ(i.lock, MODEM_LOCK_SIM_PIN);
	EXPECT_TRUE(i.have_pin_retries && !i.have_puk_retries);
	EXPECT_EQ(i.pin_retries, 2);
	i = (struct modem_info){ 0 };
	mbim_map_sim("device-locked", &i);
	mbim_map_pin(true, MBIM_PIN_TYPE_PUK1, MBIM_PIN_STATE_LOCKED, 10, 1, &i);
	EXPECT_EQ(i.lock, MODEM_LOCK_SIM_PUK);
	EXPECT_TRUE(!i.have_pin_retries && i.have_puk_retries);
	EXPECT_EQ(i.puk_retries, 10);
	EXPECT_TRUE(modem_info_sim_locked(&i));
	/* Unlocked, PIN1 enabled (PIN_LIST): no lock, the facility lock on. */
	i = (struct modem_info){ 0 };
	mbim_map_sim("initialized", &i);
	mbim_map_pin(true, MBIM_PIN_TYPE_UNKNOWN, MBIM_PIN_STATE_UNLOCKED, 0, 1, &i);
	EXPECT_EQ(i.lock, MODEM_LOCK_NONE);
	EXPECT_TRUE(i.sim_pin_enabled && !i.have_pin_retries && !i.have_puk_retries);
	mbim_map_pin(true, MBIM_PIN_TYPE_UNKNOWN, MBIM_PIN_STATE_UNLOCKED, 0, 0, &i);
	EXPECT_TRUE(!i.sim_pin_enabled);
	/* No SIM: nothing to say about codes. */
	i = (struct modem_info){ 0 };
	mbim_map_sim("sim-not-inserted", &i);
	mbim_map_pin(true, MBIM_PIN_TYPE_PIN1, MBIM_PIN_STATE_LOCKED, 3, 1, &i);
	EXPECT_TRUE(!i.tells_lock && !i.have_pin_retries && !i.sim_pin_enabled);
}

TEST(pin_result)
{
	int left;

	EXPECT_EQ(mbim_map_pin_result(true, MBIM_STATUS_ERROR_NONE, true, MBIM_PIN_TYPE_UNKNOWN, 0,
				      MODEM_PIN_OP_VERIFY, &left),
		  MODEM_PIN_OK);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_FAILURE, true, MBIM_PIN_TYPE_PIN1, 2,
				      MODEM_PIN_OP_VERIFY, &left),
		  MODEM_PIN_WRONG);
	EXPECT_EQ(left, 2);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_FAILURE, true, MBIM_PIN_TYPE_PUK1,
				      10, MODEM_PIN_OP_VERIFY, &left),
		  MODEM_PIN_BLOCKED);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_FAILURE, true, MBIM_PIN_TYPE_PUK1, 9,
				      MODEM_PIN_OP_UNBLOCK, &left),
		  MODEM_PIN_WRONG);
	EXPECT_EQ(left, 9);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_FAILURE, true, MBIM_PIN_TYPE_PUK1, 0,
				      MODEM_PIN_OP_UNBLOCK, &left),
		  MODEM_PIN_SIM_BLOCKED);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_FAILURE, false, 0, 0,
				      MODEM_PIN_OP_VERIFY, &left),
		  MODEM_PIN_FAILED);
	EXPECT_EQ(left, -1);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_PIN_DISABLED, false, 0, 0,
				      MODEM_PIN_OP_DISABLE, &left),
		  MODEM_PIN_NOT_NEEDED);
	EXPECT_EQ(mbim_map_pin_result(false, MBIM_STATUS_ERROR_SIM_NOT_INSERTED, false, 0, 0,
				      MODEM_PIN_OP_VERIFY, &left),
		  MODEM_PIN_NO_SERVICE);
}

TEST(status_words)
{
	EXPECT_STR_EQ(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_INITIALIZED), "initialized");
	EXPECT_STR_EQ(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED),
		      "sim-not-inserted");
	EXPECT_STR_EQ(mbim_map_subscriber(MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED),
		      "device-locked");
	EXPECT_STR_EQ(mbim_map_subscriber((MbimSubscriberReadyState)99), "unknown");

	EXPECT_STR_EQ(mbim_map_registration(MBIM_REGISTER_STATE_HOME), "home");
	EXPECT_STR_EQ(mbim_map_registration(MBIM_REGISTER_STATE_ROAMING), "roaming");
	EXPECT_STR_EQ(mbim_map_registration(MBIM_REGISTER_STATE_PARTNER), "roaming");
	EXPECT_STR_EQ(mbim_map_registration(MBIM_REGISTER_STATE_SEARCHING), "searching");
	EXPECT_STR_EQ(mbim_map_registration(MBIM_REGISTER_STATE_DENIED), "denied");
	EXPECT_STR_EQ(mbim_map_registration(MBIM_REGISTER_STATE_UNKNOWN), "unknown");

	EXPECT_STR_EQ(mbim_map_access_technology(MBIM_DATA_CLASS_LTE | MBIM_DATA_CLASS_UMTS),
		      "lte");
	EXPECT_STR_EQ(mbim_map_access_technology(MBIM_DATA_CLASS_5G_NSA | MBIM_DATA_CLASS_LTE),
		      "5gnr");
	EXPECT_STR_EQ(mbim_map_access_technology(MBIM_DATA_CLASS_HSDPA), "hspa");
	EXPECT_STR_EQ(mbim_map_access_technology(0), "");
}

/* RADIO_STATE as power: as ModemManager reads it, either switch off is low power. */
TEST(power)
{
	EXPECT_EQ(mbim_map_power(MBIM_RADIO_SWITCH_STATE_ON, MBIM_RADIO_SWITCH_STATE_ON),
		  MBIM_MODEM_POWER_ON);
	EXPECT_EQ(mbim_map_power(MBIM_RADIO_SWITCH_STATE_ON, MBIM_RADIO_SWITCH_STATE_OFF),
		  MBIM_MODEM_POWER_LOW);
	EXPECT_EQ(mbim_map_power(MBIM_RADIO_SWITCH_STATE_OFF, MBIM_RADIO_SWITCH_STATE_ON),
		  MBIM_MODEM_POWER_LOW);
	EXPECT_EQ(mbim_map_power(MBIM_RADIO_SWITCH_STATE_OFF, MBIM_RADIO_SWITCH_STATE_OFF),
		  MBIM_MODEM_POWER_LOW);
	EXPECT_STR_EQ(mbim_map_power_to_string(MBIM_MODEM_POWER_ON), "on");
	EXPECT_STR_EQ(mbim_map_power_to_string(MBIM_MODEM_POWER_LOW), "low");
	EXPECT_STR_EQ(mbim_map_power_to_string(MBIM_MODEM_POWER_UNKNOWN), "unknown");
}

TEST(own_numbers)
{
	char kept[MBIM_MODEM_OWN_NUMBERS_MAX][MBIM_MODEM_NUMBER_LEN];
	char too_long[MBIM_MODEM_NUMBER_LEN + 1];

	memset(kept, 'x', sizeof(kept));
	EXPECT_EQ(mbim_map_own_numbers(NULL, 0, kept), 0);
	EXPECT_EQ(mbim_map_own_numbers(NULL, 3, kept), 0); /* a count without numbers */

	/* In order; empty and oversized ones left out (31 characters still fit). */
	memset(too_long, '1', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	char fits[MBIM_MODEM_NUMBER_LEN];
	memset(fits, '2', sizeof(fits) - 1);
	fits[sizeof(fits) - 1] = '\0';
	char *some[] = { "+491701234567", "", too_long, fits, "0170 7654321", NULL };
	EXPECT_EQ(mbim_map_own_numbers(some, 5, kept), 3);
	EXPECT_STR_EQ(kept[0], "+491701234567");
	EXPECT_STR_EQ(kept[1], fits);
	EXPECT_STR_EQ(kept[2], "0170 7654321");

	/* Only the count given is read, at most MBIM_MODEM_OWN_NUMBERS_MAX kept. */
	EXPECT_EQ(mbim_map_own_numbers(some, 1, kept), 1);
	char *many[] = { "1", "2", "3", "4", "5", "6" };
	EXPECT_EQ(mbim_map_own_numbers(many, 6, kept), MBIM_MODEM_OWN_NUMBERS_MAX);
	EXPECT_STR_EQ(kept[MBIM_MODEM_OWN_NUMBERS_MAX - 1], "4");
}

/* SIGNAL_STATE's RSSI goes to the dict of the radio in use, nowhere when that is unknown. */
TEST(signal)
{
	struct modem_signal s;

	mbim_map_signal(MODEM_ACCESS_LTE, true, -73, &s);
	EXPECT_TRUE(s.lte.valid && s.lte.rssi == -73 && isnan(s.lte.rsrp));
	EXPECT_TRUE(!s.umts.valid && !s.gsm.valid && !s.nr5g.valid);
	mbim_map_signal(MODEM_ACCESS_HSPA, true, -90, &s);
	EXPECT_TRUE(s.umts.valid && s.umts.rssi == -90 && !s.lte.valid);
	mbim_map_signal(MODEM_ACCESS_EDGE, true, -100, &s);
	EXPECT_TRUE(s.gsm.valid && !s.umts.valid);
	mbim_map_signal(MODEM_ACCESS_LTE | MODEM_ACCESS_5GNR, true, -80, &s);
	EXPECT_TRUE(s.nr5g.valid && !s.lte.valid);
	mbim_map_signal(MODEM_ACCESS_UNKNOWN, true, -73, &s);
	EXPECT_TRUE(!s.lte.valid && !s.umts.valid && !s.gsm.valid && !s.nr5g.valid);
	mbim_map_signal(MODEM_ACCESS_LTE, false, 0, &s);
	EXPECT_TRUE(!s.lte.valid);
}

/* A visible provider's state, as ModemManager reads it. */
TEST(provider_state)
{
	EXPECT_EQ(mbim_map_provider_state(MBIM_PROVIDER_STATE_HOME | MBIM_PROVIDER_STATE_VISIBLE |
					  MBIM_PROVIDER_STATE_REGISTERED),
		  MODEM_NETWORK_CURRENT);
	EXPECT_EQ(mbim_map_provider_state(MBIM_PROVIDER_STATE_VISIBLE), MODEM_NETWORK_AVAILABLE);
	EXPECT_EQ(mbim_map_provider_state(MBIM_PROVIDER_STATE_VISIBLE |
					  MBIM_PROVIDER_STATE_FORBIDDEN),
		  MODEM_NETWORK_FORBIDDEN);
	EXPECT_EQ(mbim_map_provider_state(MBIM_PROVIDER_STATE_FORBIDDEN), MODEM_NETWORK_FORBIDDEN);
	EXPECT_EQ(mbim_map_provider_state(MBIM_PROVIDER_STATE_HOME), MODEM_NETWORK_UNKNOWN);
}
