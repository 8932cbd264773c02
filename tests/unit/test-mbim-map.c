/* SPDX-License-Identifier: MIT */
/*
 * MBIM control's pure mappings (mbim-modem.h): ip-type and allowed-auth to what CONNECT asks,
 * the granted IP type to families, refusals and drops to the session's reason (a 3GPP cause,
 * as QMI gives it, so D-Bus names it the same), and the values status shows.
 */
#include <string.h>

#include "mbim-modem.h"
#include "test-util.h"

static void test_connect_request(void)
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

static void test_end(void)
{
	struct session_end end;
	char text[128];

	/* A wrong APN: FAILURE with nw_error 27, a refusal (slow retries). */
	EXPECT_TRUE(mbim_map_end(MBIM_STATUS_ERROR_FAILURE, 27, false, &end, text, sizeof(text)));
	EXPECT_STR_EQ(text, "Failure, nw_error 27 (missing-or-unknown-apn)");
	EXPECT_TRUE(end.have_verbose);
	EXPECT_EQ(end.verbose_type, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP);
	EXPECT_EQ(end.verbose_reason, QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN);
	EXPECT_TRUE(!(end.dropped));

	/* Credentials: 29, a refusal too. */
	EXPECT_TRUE(mbim_map_end(MBIM_STATUS_ERROR_FAILURE, 29, false, &end, text, sizeof(text)));
	EXPECT_EQ(end.verbose_reason, QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);

	/* No room for another context: no nw_error, retried at the usual pace. */
	EXPECT_TRUE(!mbim_map_end(MBIM_STATUS_ERROR_MAX_ACTIVATED_CONTEXTS, 0, false, &end, text,
				  sizeof(text)));
	EXPECT_TRUE(!(end.have_verbose));
	EXPECT_TRUE(strstr(text, "status 13") != NULL);

	/* The network ends the session (regular deactivation): a drop, never a refusal. */
	EXPECT_TRUE(!(mbim_map_end(MBIM_STATUS_ERROR_NONE, 36, true, &end, text, sizeof(text))));
	/* libmbim 1.28 has no name for 36, later ones do. */
	EXPECT_TRUE(strncmp(text, "nw_error 36", 11) == 0);
	EXPECT_TRUE(end.dropped);
	EXPECT_EQ(end.verbose_reason, 36);
	EXPECT_TRUE(!mbim_map_end(MBIM_STATUS_ERROR_NONE, 0, true, &end, text, sizeof(text)));
	EXPECT_STR_EQ(text, "no reason given");
	EXPECT_TRUE(!end.have_verbose);
}

static void test_status_words(void)
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

int main(void)
{
	test_connect_request();
	test_end();
	test_status_words();
	return test_result("test-mbim-map");
}
