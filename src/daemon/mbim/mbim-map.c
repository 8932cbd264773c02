/* SPDX-License-Identifier: MIT */
/* Pure mappings between MBIM values and what qmapd shows or asks (mbim-modem.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mbim-modem.h"

MbimContextIpType mbim_map_ip_type(enum config_ip_type t)
{
	switch (t) {
	case CONFIG_IP_TYPE_IPV4:
		return MBIM_CONTEXT_IP_TYPE_IPV4;
	case CONFIG_IP_TYPE_IPV6:
		return MBIM_CONTEXT_IP_TYPE_IPV6;
	case CONFIG_IP_TYPE_IPV4V6:
		return MBIM_CONTEXT_IP_TYPE_IPV4V6;
	}
	return MBIM_CONTEXT_IP_TYPE_DEFAULT;
}

unsigned mbim_map_granted_families(MbimContextIpType t)
{
	switch (t) {
	case MBIM_CONTEXT_IP_TYPE_IPV4:
		return 1;
	case MBIM_CONTEXT_IP_TYPE_IPV6:
		return 2;
	case MBIM_CONTEXT_IP_TYPE_IPV4V6:
	case MBIM_CONTEXT_IP_TYPE_IPV4_AND_IPV6:
		return 3;
	default:
		return 0;
	}
}

MbimAuthProtocol mbim_map_auth(const char *allowed_auth, bool have_credentials)
{
	if (strstr(allowed_auth, "mschapv2"))
		return MBIM_AUTH_PROTOCOL_MSCHAPV2;
	/* "chap" alone, not the tail of "mschapv2" */
	for (const char *p = allowed_auth; (p = strstr(p, "chap")); p += 4)
		if (p == allowed_auth || p[-1] != 's')
			return MBIM_AUTH_PROTOCOL_CHAP;
	if (strstr(allowed_auth, "pap"))
		return MBIM_AUTH_PROTOCOL_PAP;
	if (allowed_auth[0] == '\0' && have_credentials)
		return MBIM_AUTH_PROTOCOL_CHAP; /* credentials without a protocol: what ModemManager
						   asks then */
	return MBIM_AUTH_PROTOCOL_NONE;
}

/* 3GPP TS 24.008 / 24.301 causes retrying within seconds does not change. */
static bool nw_error_is_refusal(uint32_t nw_error)
{
	switch (nw_error) {
	case 8:	 /* operator determined barring */
	case 27: /* missing or unknown APN */
	case 29: /* user authentication failed */
	case 33: /* requested service option not subscribed */
	case 55: /* multiple PDN connections for a given APN not allowed */
		return true;
	default:
		return false;
	}
}

bool mbim_map_end(MbimStatusError status, uint32_t nw_error, bool dropped,
		  struct session_end *ret_end, char *text, size_t textlen)
{
	const char *st = mbim_status_error_get_string(status);
	const char *nw = nw_error ? mbim_nw_error_get_string((MbimNwError)nw_error) : NULL;

	*ret_end = (struct session_end){ .dropped = dropped };
	if (nw_error) {
		ret_end->kind = SESSION_END_3GPP;
		ret_end->cause = (int)nw_error;
	}
	/* libmbim names the causes it knows; the number is the 3GPP cause either way. */
	char cause[64] = "";
	if (nw_error)
		snprintf(cause, sizeof(cause), "nw_error %u%s%s%s", nw_error, nw ? " (" : "",
			 nw ? nw : "", nw ? ")" : "");
	if (dropped)
		snprintf(text, textlen, "%s", nw_error ? cause : "no reason given");
	else if (nw_error)
		snprintf(text, textlen, "%s, %s", st ? st : "unknown status", cause);
	else
		snprintf(text, textlen, "%s (status %u)", st ? st : "unknown status", status);
	snprintf(ret_end->text, sizeof(ret_end->text), "%s", text);
	return !dropped && nw_error_is_refusal(nw_error);
}

const char *mbim_map_subscriber(MbimSubscriberReadyState s)
{
	const char *t = mbim_subscriber_ready_state_get_string(s);
	return t ? t : "unknown";
}

const char *mbim_map_registration(MbimRegisterState s)
{
	switch (s) {
	case MBIM_REGISTER_STATE_HOME:
		return "home";
	case MBIM_REGISTER_STATE_ROAMING:
	case MBIM_REGISTER_STATE_PARTNER:
		return "roaming";
	case MBIM_REGISTER_STATE_SEARCHING:
		return "searching";
	case MBIM_REGISTER_STATE_DENIED:
		return "denied";
	case MBIM_REGISTER_STATE_DEREGISTERED:
		return "idle";
	default:
		return "unknown";
	}
}

const char *mbim_map_access_technology(MbimDataClass c)
{
	if (c & (MBIM_DATA_CLASS_5G_SA | MBIM_DATA_CLASS_5G_NSA))
		return "5gnr";
	if (c & MBIM_DATA_CLASS_LTE)
		return "lte";
	if (c & (MBIM_DATA_CLASS_HSDPA | MBIM_DATA_CLASS_HSUPA))
		return "hspa";
	if (c & MBIM_DATA_CLASS_UMTS)
		return "umts";
	if (c & MBIM_DATA_CLASS_EDGE)
		return "edge";
	if (c & MBIM_DATA_CLASS_GPRS)
		return "gprs";
	return "";
}

enum mbim_modem_power mbim_map_power(MbimRadioSwitchState hw, MbimRadioSwitchState sw)
{
	/* ModemManager does the same for MBIM (mm-broadband-modem-mbim.c, power state). */
	if (hw == MBIM_RADIO_SWITCH_STATE_ON && sw == MBIM_RADIO_SWITCH_STATE_ON)
		return MBIM_MODEM_POWER_ON;
	return MBIM_MODEM_POWER_LOW;
}

const char *mbim_map_power_to_string(enum mbim_modem_power p)
{
	switch (p) {
	case MBIM_MODEM_POWER_UNKNOWN:
		return "unknown";
	case MBIM_MODEM_POWER_LOW:
		return "low";
	case MBIM_MODEM_POWER_ON:
		return "on";
	}
	return "unknown";
}

unsigned mbim_map_own_numbers(char *const *numbers, uint32_t n,
			      char ret[MBIM_MODEM_OWN_NUMBERS_MAX][MBIM_MODEM_NUMBER_LEN])
{
	unsigned kept = 0;

	for (uint32_t i = 0; numbers && i < n && kept < MBIM_MODEM_OWN_NUMBERS_MAX; i++) {
		size_t len = numbers[i] ? strlen(numbers[i]) : 0;
		if (len == 0 || len >= MBIM_MODEM_NUMBER_LEN)
			continue;
		memcpy(ret[kept], numbers[i], len + 1);
		kept++;
	}
	return kept;
}

void mbim_map_sim(const char *subscriber, struct modem_info *info)
{
	/* libmbim's names of MbimSubscriberReadyState, as mbim_map_subscriber() gives them. */
	if (strcmp(subscriber, "initialized") == 0) {
		info->sim = MODEM_SIM_PRESENT;
		info->tells_lock = true;
		info->lock = MODEM_LOCK_NONE;
	} else if (strcmp(subscriber, "device-locked") == 0) {
		/* The card is there and waits for a code: PIN1 until MBIM_CID_PIN says which
		 * (mbim_map_pin). */
		info->sim = MODEM_SIM_PRESENT;
		info->tells_lock = true;
		info->lock = MODEM_LOCK_SIM_PIN;
		info->sim_pin_enabled = true;
	} else if (strcmp(subscriber, "sim-not-inserted") == 0) {
		info->sim = MODEM_SIM_ABSENT;
		info->failed_reason = MODEM_FAILED_SIM_MISSING;
	} else if (strcmp(subscriber, "bad-sim") == 0) {
		info->sim = MODEM_SIM_ERROR;
		info->failed_reason = MODEM_FAILED_SIM_ERROR;
	} else if (strcmp(subscriber, "no-esim-profile") == 0) {
		info->failed_reason = MODEM_FAILED_ESIM_WITHOUT_PROFILES;
	}
}

void mbim_map_pin(bool have, MbimPinType type, MbimPinState state, uint32_t attempts,
		  int pin1_enabled, struct modem_info *info)
{
	if (info->sim != MODEM_SIM_PRESENT)
		return;
	if (pin1_enabled >= 0)
		info->sim_pin_enabled = pin1_enabled > 0 || info->lock != MODEM_LOCK_NONE;
	if (!have)
		return;
	/* The answer names one code, PIN1 or PUK1, with its tries; the other's stay unknown. */
	if (type == MBIM_PIN_TYPE_PIN1) {
		info->have_pin_retries = true;
		info->pin_retries = attempts;
	} else if (type == MBIM_PIN_TYPE_PUK1) {
		info->have_puk_retries = true;
		info->puk_retries = attempts;
	}
	if (state == MBIM_PIN_STATE_UNLOCKED)
		return;
	info->tells_lock = true;
	if (type == MBIM_PIN_TYPE_PIN1)
		info->lock = MODEM_LOCK_SIM_PIN;
	else if (type == MBIM_PIN_TYPE_PUK1)
		info->lock = MODEM_LOCK_SIM_PUK;
	else if (type == MBIM_PIN_TYPE_PIN2)
		info->lock = MODEM_LOCK_SIM_PIN2;
	else if (type == MBIM_PIN_TYPE_PUK2)
		info->lock = MODEM_LOCK_SIM_PUK2;
}

enum modem_pin_result mbim_map_pin_result(bool ok, MbimStatusError status, bool parsed,
					  MbimPinType type, uint32_t attempts, enum modem_pin_op op,
					  int *ret_retries)
{
	*ret_retries = parsed ? (int)attempts : -1;
	if (ok)
		return MODEM_PIN_OK;
	switch (status) {
	case MBIM_STATUS_ERROR_PIN_DISABLED:
		return MODEM_PIN_NOT_NEEDED;
	case MBIM_STATUS_ERROR_SIM_NOT_INSERTED:
	case MBIM_STATUS_ERROR_NOT_INITIALIZED:
	case MBIM_STATUS_ERROR_BUSY:
		return MODEM_PIN_NO_SERVICE;
	case MBIM_STATUS_ERROR_FAILURE:
		/* A wrong code: the PIN_INFO names the code now waited for (ModemManager reads
		 * it so): PUK1 after a PIN means the PIN is blocked now; after a PUK, its tries
		 * left, none meaning the card is blocked for good. */
		if (!parsed)
			return MODEM_PIN_FAILED;
		if (type == MBIM_PIN_TYPE_PUK1) {
			if (op == MODEM_PIN_OP_UNBLOCK)
				return attempts == 0 ? MODEM_PIN_SIM_BLOCKED : MODEM_PIN_WRONG;
			return MODEM_PIN_BLOCKED;
		}
		if (type == MBIM_PIN_TYPE_PIN1)
			return op == MODEM_PIN_OP_UNBLOCK ? MODEM_PIN_FAILED : MODEM_PIN_WRONG;
		return MODEM_PIN_FAILED;
	default:
		return MODEM_PIN_FAILED;
	}
}

void mbim_map_signal(enum modem_access_technology act, bool have, int rssi_dbm,
		     struct modem_signal *ret)
{
	struct modem_signal_values *v = NULL;

	memset(ret, 0, sizeof(*ret));
	if (act & MODEM_ACCESS_5GNR)
		v = &ret->nr5g;
	else if (act & MODEM_ACCESS_LTE)
		v = &ret->lte;
	else if (act & (MODEM_ACCESS_UMTS | MODEM_ACCESS_HSDPA | MODEM_ACCESS_HSUPA |
			MODEM_ACCESS_HSPA | MODEM_ACCESS_HSPA_PLUS))
		v = &ret->umts;
	else if (act & (MODEM_ACCESS_GSM | MODEM_ACCESS_GPRS | MODEM_ACCESS_EDGE))
		v = &ret->gsm;
	if (!v || !have)
		return;
	*v = (struct modem_signal_values){
		.valid = true, .rssi = rssi_dbm, .rsrq = NAN, .rsrp = NAN, .snr = NAN, .ecio = NAN
	};
}

enum modem_network_status mbim_map_provider_state(uint32_t s)
{
	if (s & MBIM_PROVIDER_STATE_REGISTERED)
		return MODEM_NETWORK_CURRENT;
	if (s & MBIM_PROVIDER_STATE_FORBIDDEN)
		return MODEM_NETWORK_FORBIDDEN;
	if (s & MBIM_PROVIDER_STATE_VISIBLE)
		return MODEM_NETWORK_AVAILABLE;
	return MODEM_NETWORK_UNKNOWN;
}
