/* SPDX-License-Identifier: MIT */
/*
 * qmapd's state in ModemManager's terms: the modem state, registration, access technology,
 * signal quality, and the ModemManager error for a QMI call-end reason. Pure functions, no
 * D-Bus: unit tested (tests/test-mm-dbus-map.c).
 */
#ifndef QMAPD_MM_DBUS_MAP_H
#define QMAPD_MM_DBUS_MAP_H

#include <ModemManager.h>
#include <glib.h>
#include <stdbool.h>

#include "qmi-modem.h"
#include "session.h"

/* What Modem.State is made of. */
struct mmd_state_input {
	enum qmi_modem_state qmi;
	const char *registration; /* qmi_modem's: "home", "roaming", "searching", "" ... */
	unsigned connected, connecting, disconnecting; /* muxes by session state */
	bool disabled;				       /* Enable(false) was called */
};

MMModemState mmd_modem_state(const struct mmd_state_input *in);
MMModem3gppRegistrationState mmd_registration_state(const char *registration);
/* From libqmi's radio interface name ("lte", "5gnr", "umts", ...). */
MMModemAccessTechnology mmd_access_technology(const char *radio_interface);
/* 0..100 from an RSSI in dBm (-113 dBm and below 0, -51 and above 100). */
guint mmd_signal_quality(int rssi_dbm);
/* The capabilities the access technology proves; NONE when unknown. */
MMModemCapability mmd_capabilities(MMModemAccessTechnology act);

/*
 * The ModemManager error (domain and code of libmm-glib's registered error domains, so the
 * D-Bus name is ModemManager's) for a session's failed start or drop: 3GPP causes as
 * MobileEquipment errors, no reason at all as Core.Failed.
 */
void mmd_error_from_end(const struct session_end *end, GQuark *ret_domain, gint *ret_code);

#endif
