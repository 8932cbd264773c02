/* SPDX-License-Identifier: MIT */
/*
 * qmapd's state in ModemManager's terms: the modem state, registration, access technology,
 * signal quality, and the ModemManager error for a QMI call-end reason. Pure functions, no
 * D-Bus: unit tested (tests/unit/test-mm-dbus-map.c).
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
	bool locked;				       /* the SIM waits for a PIN or PUK */
};

MMModemState mmd_modem_state(const struct mmd_state_input *in);
MMModem3gppRegistrationState mmd_registration_state(const char *registration);
/* From libqmi's radio interface name ("lte", "5gnr", "umts", ...). */
MMModemAccessTechnology mmd_access_technology(const char *radio_interface);
/* 0..100 from an RSSI in dBm (-113 dBm and below 0, -51 and above 100). */
guint mmd_signal_quality(int rssi_dbm);
/* The capabilities the access technology proves; NONE when unknown. */
MMModemCapability mmd_capabilities(MMModemAccessTechnology act);

/* From DMS Get Capabilities' radio interfaces (bit per QmiDmsRadioInterface). */
MMModemCapability mmd_capabilities_from_radio(uint32_t radio_interfaces);
MMModemMode mmd_modes_from_radio(uint32_t radio_interfaces);
/* From NAS System Selection Preference's mode preference (QmiNasRatModePreference). */
MMModemMode mmd_modes_from_preference(uint16_t mode_preference);
/*
 * SupportedModes for a modem of these modes: every mode alone, and all of them together
 * when there are several (preferred NONE: qmapd sets no preference). Returns how many
 * combinations it wrote into allowed[], at most max.
 */
size_t mmd_supported_modes(MMModemMode modes, MMModemMode *allowed, size_t max);
/* LTE bands 1..256 (bit band - 1, as qmi_modem_info keeps them) to ModemManager's EUTRAN
 * bands, ascending; bands ModemManager has no name for are left out. Returns how many. */
size_t mmd_lte_bands(const uint64_t bits[4], MMModemBand *bands, size_t max);

/* The lock the SIM's PIN1 state puts the modem in (QmiUimPinState; have_pin1 false =
 * not known: UNKNOWN), and the facility locks it means. */
MMModemLock mmd_unlock_required(bool have_pin1, uint8_t pin1_state);
MMModem3gppFacility mmd_facility_locks(bool have_pin1, uint8_t pin1_state);
/* A profile's PDP type (QmiWdsPdpType; -1 unknown) as a bearer's IP family; NONE for PPP
 * and unknown. */
MMBearerIpFamily mmd_ip_family_from_pdp(int pdp_type);
/* DMS Get Operating Mode (QmiDmsOperatingMode, -1 unknown) as Modem.PowerState. */
MMModemPowerState mmd_power_state(int operating_mode);
/* PS attach state from NAS Get Serving System (1, 0, -1 unknown). */
MMModem3gppPacketServiceState mmd_packet_service_state(int ps_attached);

/*
 * The ModemManager error (domain and code of libmm-glib's registered error domains, so the
 * D-Bus name is ModemManager's) for a session's failed start or drop: 3GPP causes as
 * MobileEquipment errors, no reason at all as Core.Failed.
 */
void mmd_error_from_end(const struct session_end *end, GQuark *ret_domain, gint *ret_code);

#endif
