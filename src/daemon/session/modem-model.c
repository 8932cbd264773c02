/* SPDX-License-Identifier: MIT */
/* The words of the neutral modem model (modem-model.h), one table for QMI and MBIM. */
#include <string.h>

#include "macro.h"
#include "modem-model.h"

static const struct {
	const char *name;
	enum modem_registration r;
} registrations[] = {
	{ "home", MODEM_REGISTRATION_HOME },	       { "roaming", MODEM_REGISTRATION_ROAMING },
	{ "searching", MODEM_REGISTRATION_SEARCHING }, { "denied", MODEM_REGISTRATION_DENIED },
	{ "idle", MODEM_REGISTRATION_IDLE },
};

const char *modem_registration_to_string(enum modem_registration r)
{
	for (size_t i = 0; i < ARRAY_SIZE(registrations); i++)
		if (registrations[i].r == r)
			return registrations[i].name;
	return "unknown";
}

enum modem_registration modem_registration_from_string(const char *s)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(registrations); i++)
		if (strcmp(s, registrations[i].name) == 0)
			return registrations[i].r;
	return MODEM_REGISTRATION_UNKNOWN;
}

enum modem_access_technology modem_access_technology_from_string(const char *s)
{
	/* libqmi's radio interface names, and the words mbim_map_access_technology() gives. */
	static const struct {
		const char *name;
		enum modem_access_technology act;
	} map[] = {
		{ "gsm", MODEM_ACCESS_GSM },	       { "gprs", MODEM_ACCESS_GPRS },
		{ "edge", MODEM_ACCESS_EDGE },	       { "umts", MODEM_ACCESS_UMTS },
		{ "hspa", MODEM_ACCESS_HSPA },	       { "lte", MODEM_ACCESS_LTE },
		{ "5gnr", MODEM_ACCESS_5GNR },	       { "cdma-1x", MODEM_ACCESS_1XRTT },
		{ "cdma-1xevdo", MODEM_ACCESS_EVDO0 },
	};

	for (size_t i = 0; s && i < ARRAY_SIZE(map); i++)
		if (strcmp(s, map[i].name) == 0)
			return map[i].act;
	return MODEM_ACCESS_UNKNOWN;
}

const char *modem_control_state_to_string(enum modem_control_state s)
{
	switch (s) {
	case MODEM_CONTROL_CLOSED:
		return "absent";
	case MODEM_CONTROL_OPENING:
		return "initializing";
	case MODEM_CONTROL_READY:
		return "ready";
	case MODEM_CONTROL_FAILED:
		return "failed";
	}
	return "unknown";
}
