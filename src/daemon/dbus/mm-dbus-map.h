/* SPDX-License-Identifier: MIT */
/*
 * qmapd's neutral modem model (modem-model.h) in ModemManager's terms: the modem state,
 * registration, access technology, signal quality, SIM lock, and the ModemManager error for a
 * session's end. The model's values are ModemManager's (checked at compile time), so most of
 * this is a cast. Pure functions, no D-Bus: unit tested (tests/unit/test-mm-dbus-map.c).
 */
#ifndef QMAPD_MM_DBUS_MAP_H
#define QMAPD_MM_DBUS_MAP_H

#include <ModemManager.h>
#include <glib.h>
#include <stdbool.h>

#include "modem-model.h"

/* What Modem.State is made of. */
struct mmd_state_input {
	enum modem_control_state control;
	enum modem_registration registration;
	unsigned connected, connecting, disconnecting; /* muxes by session state */
	bool disabled;				       /* Enable(false) was called */
	bool locked;				       /* the SIM waits for a PIN or PUK */
	bool sim_failed; /* no SIM, or one the modem cannot use (a failed reason) */
};

MMModemState mmd_modem_state(const struct mmd_state_input *in);
MMModem3gppRegistrationState mmd_registration_state(enum modem_registration r);
MMModemAccessTechnology mmd_access_technology(enum modem_access_technology act);
/* 0..100 from an RSSI in dBm (-113 dBm and below 0, -51 and above 100). */
guint mmd_signal_quality(int rssi_dbm);
/* The capabilities the access technology proves; NONE when unknown. */
MMModemCapability mmd_capabilities(MMModemAccessTechnology act);

/*
 * SupportedModes for a modem of these modes: every mode alone, and all of them together
 * when there are several (preferred NONE: qmapd sets no preference). Returns how many
 * combinations it wrote into allowed[], at most max.
 */
size_t mmd_supported_modes(MMModemMode modes, MMModemMode *allowed, size_t max);
/* LTE bands 1..256 (bit band - 1, as modem_info keeps them) to ModemManager's EUTRAN
 * bands, ascending; bands ModemManager has no name for are left out. Returns how many. */
size_t mmd_lte_bands(const uint64_t bits[4], MMModemBand *bands, size_t max);

/* The LTE band number of an EUTRAN band (1..256), 0 for any other band. */
unsigned mmd_lte_band_number(MMModemBand band);
/*
 * SetCurrentBands' list as LTE band bits (bit band - 1), within what the modem supports
 * (supported, same layout): ANY alone is all of them. Returns 0, or -EINVAL (ANY with others,
 * UNKNOWN, an empty list) / -ENOTSUP (a band that is not LTE or not supported) with the
 * offending band in *bad.
 */
int mmd_bands_to_lte(const guint32 *bands, size_t n, const uint64_t supported[4], uint64_t ret[4],
		     guint32 *bad);
/* A scanned network's status. */
MMModem3gppNetworkAvailability mmd_network_availability(enum modem_network_status s);
/* ModemManager's MMModemMode as the model's. */
enum modem_mode mmd_modes_from_mm(MMModemMode modes);
/* One radio's dict of the Signal interface (rssi, rsrq, rsrp, snr, ecio: doubles, only
 * those measured), or an empty dict when the radio was not measured. Floating. */
GVariant *mmd_signal_dict(const struct modem_signal_values *v);

/* GetNetworkTime's answer: ISO 8601 in the network's zone ("2026-12-02T07:04:28+01", GLib's form; "Z"
 * for UTC, and without a zone), as ModemManager's mm_new_iso8601_time() writes it (with the
 * time read as UTC, which 3GPP's is). NULL for a date that does not exist. g_free. */
char *mmd_network_time_iso8601(const struct modem_network_time *t);
/* NetworkTimezone: offset and dst-offset in minutes. Floating. */
GVariant *mmd_network_timezone(int offset_minutes, int dst_minutes);

MMModemCapability mmd_capability(enum modem_capability caps);
MMModemMode mmd_modes(enum modem_mode modes);
MMModemLock mmd_lock(enum modem_lock lock);
/* The facility locks a SIM with PIN1 enabled means. */
MMModem3gppFacility mmd_facility_locks(bool sim_pin_enabled);
MMBearerIpFamily mmd_ip_family(enum modem_ip_family family);
MMModemPowerState mmd_power_state(enum modem_power_state power);
MMModemStateFailedReason mmd_failed_reason(enum modem_failed_reason reason);
MMModem3gppPacketServiceState mmd_packet_service_state(enum modem_packet_service ps);

/*
 * Modem.DeviceIdentifier as ModemManager 1.20 computes it for a QMI or MBIM modem
 * (mm_create_device_identifier() with "" for ATI and ATI1): the SHA-1, in hex, of the
 * USB vendor and product IDs as "%08x" each (one left out when 0), then the IMEI, revision,
 * model and manufacturer strings without white space and without non-ASCII bytes. So a
 * NetworkManager profile bound to a modem's identifier under ModemManager still matches.
 * NULL (g_free the rest) when every string is NULL or empty: ModemManager has none then.
 */
char *mmd_device_identifier(unsigned vid, unsigned pid, const char *imei, const char *revision,
			    const char *model, const char *manufacturer);

/*
 * The ModemManager error (domain and code of libmm-glib's registered error domains, so the
 * D-Bus name is ModemManager's) for a session's failed start or drop: 3GPP causes as
 * MobileEquipment errors, no reason at all as Core.Failed.
 */
void mmd_error_from_end(const struct session_end *end, GQuark *ret_domain, gint *ret_code);

#endif
