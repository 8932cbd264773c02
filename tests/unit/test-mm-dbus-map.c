/* SPDX-License-Identifier: MIT */
/*
 * mm-dbus-map: qmapd's neutral modem model (modem-model.h) as ModemManager's Modem.State and
 * properties, and session ends as the D-Bus error names NetworkManager translates (checked by name, through
 * libmm-glib's registered error domains, as a client receives them).
 */
#include <errno.h>
#include <gio/gio.h>
#include <libmm-glib.h>
#include <math.h>
#include <string.h>

#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "test-case.h"

TEST(state)
{
	struct mmd_state_input in = { .control = MODEM_CONTROL_READY,
				      .registration = MODEM_REGISTRATION_HOME };

	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_REGISTERED);
	in.registration = MODEM_REGISTRATION_ROAMING;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_REGISTERED);
	in.registration = MODEM_REGISTRATION_SEARCHING;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_SEARCHING);
	in.registration = MODEM_REGISTRATION_UNKNOWN;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLED);
	in.registration = MODEM_REGISTRATION_DENIED;
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

	in = (struct mmd_state_input){ .control = MODEM_CONTROL_OPENING, .connected = 1 };
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLING);
	in.control = MODEM_CONTROL_FAILED;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_FAILED);
	in.control = MODEM_CONTROL_CLOSED;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_UNKNOWN);

	/* A SIM waiting for its PIN: LOCKED while ready, whatever the registration says. */
	in = (struct mmd_state_input){ .control = MODEM_CONTROL_READY,
				       .registration = MODEM_REGISTRATION_IDLE,
				       .locked = true };
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_LOCKED);
	in.control = MODEM_CONTROL_OPENING;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_ENABLING);
	/* MBIM stops at a locked SIM (failed, device open): LOCKED, so clients ask for it. */
	in.control = MODEM_CONTROL_FAILED;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_LOCKED);

	/* No SIM: FAILED though ready and searching (QMI), and when failed (MBIM). */
	in = (struct mmd_state_input){ .control = MODEM_CONTROL_READY,
				       .registration = MODEM_REGISTRATION_SEARCHING,
				       .sim_failed = true };
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_FAILED);
	in.control = MODEM_CONTROL_FAILED;
	EXPECT_EQ(mmd_modem_state(&in), MM_MODEM_STATE_FAILED);
	EXPECT_EQ(mmd_failed_reason(MODEM_FAILED_SIM_MISSING),
		  MM_MODEM_STATE_FAILED_REASON_SIM_MISSING);
	EXPECT_EQ(mmd_failed_reason(MODEM_FAILED_SIM_ERROR),
		  MM_MODEM_STATE_FAILED_REASON_SIM_ERROR);
}

TEST(modes)
{
	MMModemMode allowed[8];

	EXPECT_EQ(mmd_modes(MODEM_MODE_3G | MODEM_MODE_4G), MM_MODEM_MODE_3G | MM_MODEM_MODE_4G);
	EXPECT_EQ(mmd_capability(MODEM_CAPABILITY_LTE | MODEM_CAPABILITY_5GNR),
		  MM_MODEM_CAPABILITY_LTE | MM_MODEM_CAPABILITY_5GNR);

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

TEST(bands)
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

/* SetCurrentBands' list into LTE bits, as ModemManager checks it. */
TEST(bands_to_lte)
{
	uint64_t supported[4] = { (1ull << 0) | (1ull << 2) | (1ull << 19), 1ull << (85 - 65), 0,
				  0 };
	uint64_t lte[4];
	guint32 bad;

	guint32 two[] = { MM_MODEM_BAND_EUTRAN_3, MM_MODEM_BAND_EUTRAN_85 };
	EXPECT_EQ(mmd_bands_to_lte(two, 2, supported, lte, &bad), 0);
	EXPECT_EQ(lte[0], 1ull << 2);
	EXPECT_EQ(lte[1], 1ull << (85 - 65));
	EXPECT_EQ(lte[2] | lte[3], 0);
	guint32 any[] = { MM_MODEM_BAND_ANY };
	EXPECT_EQ(mmd_bands_to_lte(any, 1, supported, lte, &bad), 0);
	EXPECT_TRUE(memcmp(lte, supported, sizeof(lte)) == 0);
	/* A band the modem lacks, a band that is not LTE: unsupported, named. */
	guint32 missing[] = { MM_MODEM_BAND_EUTRAN_1, MM_MODEM_BAND_EUTRAN_7 };
	EXPECT_EQ(mmd_bands_to_lte(missing, 2, supported, lte, &bad), -ENOTSUP);
	EXPECT_EQ(bad, MM_MODEM_BAND_EUTRAN_7);
	guint32 gsm[] = { MM_MODEM_BAND_EGSM };
	EXPECT_EQ(mmd_bands_to_lte(gsm, 1, supported, lte, &bad), -ENOTSUP);
	EXPECT_EQ(bad, MM_MODEM_BAND_EGSM);
	/* ANY with others, UNKNOWN, nothing: invalid. */
	guint32 mixed[] = { MM_MODEM_BAND_EUTRAN_1, MM_MODEM_BAND_ANY };
	EXPECT_EQ(mmd_bands_to_lte(mixed, 2, supported, lte, &bad), -EINVAL);
	guint32 unknown[] = { MM_MODEM_BAND_UNKNOWN };
	EXPECT_EQ(mmd_bands_to_lte(unknown, 1, supported, lte, &bad), -EINVAL);
	EXPECT_EQ(mmd_bands_to_lte(NULL, 0, supported, lte, &bad), -EINVAL);
	/* Band numbers both ways agree on every band ModemManager names. */
	EXPECT_EQ(mmd_lte_band_number(MM_MODEM_BAND_EUTRAN_1), 1);
	EXPECT_EQ(mmd_lte_band_number(MM_MODEM_BAND_EUTRAN_71), 71);
	EXPECT_EQ(mmd_lte_band_number(MM_MODEM_BAND_EUTRAN_85), 85);
	EXPECT_EQ(mmd_lte_band_number(MM_MODEM_BAND_UTRAN_1), 0);
	uint64_t all[4] = { ~0ull, ~0ull, ~0ull, ~0ull };
	MMModemBand named[256];
	size_t n = mmd_lte_bands(all, named, 256);
	for (size_t i = 0; i < n; i++)
		EXPECT_TRUE(mmd_lte_band_number(named[i]) != 0);
}

/* The Signal interface's dict: only what was measured, as doubles. */
TEST(signal_dict)
{
	struct modem_signal_values v = {
		.valid = true, .rssi = -65, .rsrq = -9, .rsrp = -95, .snr = 13.5, .ecio = NAN
	};
	g_autoptr(GVariant) d = g_variant_ref_sink(mmd_signal_dict(&v));
	double x;

	EXPECT_EQ(g_variant_n_children(d), 4);
	EXPECT_TRUE(g_variant_lookup(d, "rssi", "d", &x) && x == -65);
	EXPECT_TRUE(g_variant_lookup(d, "snr", "d", &x) && x == 13.5);
	EXPECT_TRUE(!g_variant_lookup(d, "ecio", "d", &x));
	v.valid = false;
	g_autoptr(GVariant) none = g_variant_ref_sink(mmd_signal_dict(&v));
	EXPECT_EQ(g_variant_n_children(none), 0);
	EXPECT_EQ(mmd_network_availability(MODEM_NETWORK_FORBIDDEN),
		  MM_MODEM_3GPP_NETWORK_AVAILABILITY_FORBIDDEN);
	EXPECT_EQ(mmd_modes_from_mm(MM_MODEM_MODE_ANY),
		  MODEM_MODE_2G | MODEM_MODE_3G | MODEM_MODE_4G | MODEM_MODE_5G);
}

/* GetNetworkTime's string and NetworkTimezone. */
TEST(network_time)
{
	struct modem_network_time t = { .year = 2026,
					.month = 12,
					.day = 2,
					.hour = 23,
					.minute = 4,
					.second = 28,
					.have_zone = true,
					.offset_minutes = 60 };
	g_autofree char *local = mmd_network_time_iso8601(&t);
	EXPECT_STR_EQ(local, "2026-12-03T00:04:28+01");
	t.offset_minutes = -210;
	g_autofree char *west = mmd_network_time_iso8601(&t);
	EXPECT_STR_EQ(west, "2026-12-02T19:34:28-03:30");
	t.have_zone = false;
	g_autofree char *utc = mmd_network_time_iso8601(&t);
	EXPECT_STR_EQ(utc, "2026-12-02T23:04:28Z");
	t.day = 31;
	t.month = 11;
	EXPECT_TRUE(mmd_network_time_iso8601(&t) == NULL);
	g_autoptr(GVariant) tz = g_variant_ref_sink(mmd_network_timezone(120, 60));
	gint32 v;
	EXPECT_TRUE(g_variant_lookup(tz, "offset", "i", &v) && v == 120);
	EXPECT_TRUE(g_variant_lookup(tz, "dst-offset", "i", &v) && v == 60);
}

TEST(sim_locks)
{
	EXPECT_EQ(mmd_lock(MODEM_LOCK_SIM_PIN), MM_MODEM_LOCK_SIM_PIN);
	EXPECT_EQ(mmd_lock(MODEM_LOCK_SIM_PUK), MM_MODEM_LOCK_SIM_PUK);
	EXPECT_EQ(mmd_lock(MODEM_LOCK_NONE), MM_MODEM_LOCK_NONE);
	EXPECT_EQ(mmd_lock(MODEM_LOCK_UNKNOWN), MM_MODEM_LOCK_UNKNOWN);
	EXPECT_EQ(mmd_facility_locks(true), MM_MODEM_3GPP_FACILITY_SIM);
	EXPECT_EQ(mmd_facility_locks(false), MM_MODEM_3GPP_FACILITY_NONE);
	EXPECT_EQ(mmd_failed_reason(MODEM_FAILED_SIM_MISSING),
		  MM_MODEM_STATE_FAILED_REASON_SIM_MISSING);
	EXPECT_EQ(mmd_packet_service_state(MODEM_PACKET_SERVICE_ATTACHED),
		  MM_MODEM_3GPP_PACKET_SERVICE_STATE_ATTACHED);
	EXPECT_EQ(mmd_packet_service_state(MODEM_PACKET_SERVICE_DETACHED),
		  MM_MODEM_3GPP_PACKET_SERVICE_STATE_DETACHED);
	EXPECT_EQ(mmd_packet_service_state(MODEM_PACKET_SERVICE_UNKNOWN),
		  MM_MODEM_3GPP_PACKET_SERVICE_STATE_UNKNOWN);
	EXPECT_EQ(mmd_ip_family(MODEM_IP_FAMILY_IPV4V6), MM_BEARER_IP_FAMILY_IPV4V6);
	EXPECT_EQ(mmd_ip_family(MODEM_IP_FAMILY_NONE), MM_BEARER_IP_FAMILY_NONE);
	EXPECT_EQ(mmd_power_state(MODEM_POWER_ON), MM_MODEM_POWER_STATE_ON);
	EXPECT_EQ(mmd_power_state(MODEM_POWER_LOW), MM_MODEM_POWER_STATE_LOW);
	EXPECT_EQ(mmd_power_state(MODEM_POWER_UNKNOWN), MM_MODEM_POWER_STATE_UNKNOWN);
}

TEST(radio)
{
	/* The words QMI and MBIM status use, through the model, to ModemManager's values. */
	EXPECT_EQ(mmd_registration_state(modem_registration_from_string("home")),
		  MM_MODEM_3GPP_REGISTRATION_STATE_HOME);
	EXPECT_EQ(mmd_registration_state(modem_registration_from_string("roaming")),
		  MM_MODEM_3GPP_REGISTRATION_STATE_ROAMING);
	EXPECT_EQ(mmd_registration_state(modem_registration_from_string("idle")),
		  MM_MODEM_3GPP_REGISTRATION_STATE_IDLE);
	EXPECT_EQ(mmd_registration_state(modem_registration_from_string("unknown")),
		  MM_MODEM_3GPP_REGISTRATION_STATE_UNKNOWN);
	EXPECT_EQ(mmd_registration_state(modem_registration_from_string(NULL)),
		  MM_MODEM_3GPP_REGISTRATION_STATE_UNKNOWN);
	EXPECT_STR_EQ(modem_registration_to_string(MODEM_REGISTRATION_DENIED), "denied");
	EXPECT_EQ(mmd_access_technology(modem_access_technology_from_string("lte")),
		  MM_MODEM_ACCESS_TECHNOLOGY_LTE);
	EXPECT_EQ(mmd_access_technology(modem_access_technology_from_string("5gnr")),
		  MM_MODEM_ACCESS_TECHNOLOGY_5GNR);
	EXPECT_EQ(mmd_access_technology(modem_access_technology_from_string("hspa")),
		  MM_MODEM_ACCESS_TECHNOLOGY_HSPA);
	EXPECT_EQ(mmd_access_technology(modem_access_technology_from_string("none")),
		  MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN);
	EXPECT_EQ(mmd_access_technology(modem_access_technology_from_string("")),
		  MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN);
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

static struct session_end cause(int c)
{
	return (struct session_end){ .kind = SESSION_END_3GPP, .cause = c };
}

TEST(errors)
{
#define ME "org.freedesktop.ModemManager1.Error.MobileEquipment."
	struct session_end e = cause(27);
	expect_name(&e, ME "MissingOrUnknownApn");
	e = cause(29);
	expect_name(&e, ME "UserAuthenticationFailed");
	e = cause(8);
	expect_name(&e, ME "OperatorDeterminedBarring");
	e = cause(36);
	expect_name(&e, ME "RegularDeactivation");
	e = cause(50);
	expect_name(&e, ME "Ipv4OnlyAllowed");
	e = cause(33);
	expect_name(&e, ME "ServiceOptionNotSubscribed");
	e = cause(26);
	expect_name(&e, ME "InsufficientResources");
	e = cause(55);
	expect_name(&e, ME "MultipleAccessToPdnConnectionNotAllowed");
	e = cause(111); /* a 3GPP cause without a name of its own */
	expect_name(&e, ME "GprsUnknown");
	/* A reason 3GPP does not name (QMI's call manager, its old call end reason). */
	e = (struct session_end){ .kind = SESSION_END_OTHER };
	expect_name(&e, "org.freedesktop.ModemManager1.Error.Connection.NoCarrier");
	e = (struct session_end){};
	expect_name(&e, "org.freedesktop.ModemManager1.Error.Core.Failed");
#undef ME
}

/*
 * Expected values from an independent reimplementation of ModemManager's
 * mm_create_device_identifier() (ATI and ATI1 "", as its QMI and MBIM modems pass them):
 *
 *   import hashlib
 *   def mm(vid, pid, parts):
 *       h = hashlib.sha1()
 *       if vid: h.update(b"%08x" % vid)
 *       if pid: h.update(b"%08x" % pid)
 *       for s in parts:
 *           if s: h.update(bytes(c for c in s.encode()
 *                                if c < 0x80 and c not in b" \t\n\v\f\r"))
 *       return h.hexdigest()
 */
static void expect_ident(unsigned vid, unsigned pid, const char *imei, const char *revision,
			 const char *model, const char *manufacturer, const char *want)
{
	g_autofree char *got = mmd_device_identifier(vid, pid, imei, revision, model, manufacturer);

	EXPECT_STR_EQ(got ? got : "(null)", want ? want : "(null)");
}

TEST(device_identifier)
{
	expect_ident(0x2c7c, 0x0125, "867698040123456", "EG25GGBR07A08M2G", "EG25",
		     "QUALCOMM INCORPORATED", "f96c6446c08cc7d3f72c04c623c36b26d88262e9");
	/* The sim has no USB IDs: both left out. */
	expect_ident(0, 0, "867698040123456", "EG25GGBR07A08M2G", "EG25", "QUALCOMM INCORPORATED",
		     "8bd0620fb22712e5c1291002725f7b4421e75da5");
	/* No IMEI, pid 0, spaces stripped. */
	expect_ident(0x1199, 0, NULL,
		     "SWI9X30C_02.33.03.00 r8209 CARMD-EV-FRMWR2 2019/08/21 23:16:12", "EM7455",
		     "Sierra Wireless, Incorporated", "b1bc8c89b82bfde70c5c63db3b0444353111ff6d");
	/* Non-ASCII bytes and white space (a tab) dropped. */
	expect_ident(0, 0, "35", "\xc3\xa9\tx", NULL, NULL,
		     "fb9febde9321f6ff5fe0b25b027eb18f081a027e");
	/* Nothing to hash: ModemManager has no identifier either. */
	expect_ident(0x2c7c, 0x0125, NULL, "", "", NULL, NULL);
}

static void expect_location(const char *op, struct modem_cell cell, const char *want)
{
	g_autofree char *got = mmd_location_3gpp_string(op, &cell);

	EXPECT_STR_EQ(got ? got : "(null)", want ? want : "(null)");
}

TEST(location_3gpp_string)
{
	/* ModemManager's "MCC,MNC,LAC,CI,TAC", hex upper case without padding. */
	expect_location("00101", (struct modem_cell){ true, 0x1a2d1, 0, 1 }, "001,01,0,1A2D1,1");
	expect_location("310410", (struct modem_cell){ true, 0x0ABCDEF, 0x2B, 0 },
			"310,410,2B,ABCDEF,0");
	/* Not registered, no cell id, neither LAC nor TAC, no or a bad operator: none. */
	expect_location("00101", (struct modem_cell){ false, 0x1a2d1, 0, 1 }, NULL);
	expect_location("00101", (struct modem_cell){ true, 0, 0, 1 }, NULL);
	expect_location("00101", (struct modem_cell){ true, 5, 0, 0 }, NULL);
	expect_location(NULL, (struct modem_cell){ true, 5, 0, 1 }, NULL);
	expect_location("0010", (struct modem_cell){ true, 5, 0, 1 }, NULL);
	expect_location("0010x", (struct modem_cell){ true, 5, 0, 1 }, NULL);
}
