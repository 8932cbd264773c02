/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's QMI side: the simulated modem answering QMUX messages from the `sim`
 * transport's control channel, with the state a real modem keeps (client ids, data format,
 * one packet data session per WDS client). Pure over messages: no sockets, no timers; the
 * caller hands in each host->modem message and gets responses and indications back through
 * callbacks, synchronously. Messages are parsed and built with libqmi's message/TLV API so
 * they are byte-exact with what libqmi expects (docs/PROTOCOLS.md §2).
 *
 * Framing: 0x01, le16 length (everything after the marker), flags (0x00 from the host, 0x80
 * from the modem), service, client id, then the QMI SDU (CTL: flags, u8 transaction,
 * le16 message, le16 TLV length; services: flags, le16 transaction, ...). A message that is
 * not exactly one well-formed host request is counted in qmi_malformed and not answered.
 *
 * Answered (anything else on a known service: error INVALID_QMI_COMMAND):
 *   CTL 0x0021 Get Version Info (CTL 1.5, WDS 1.67, DMS 1.14, NAS 1.25, WDA 1.16,
 *       UIM 1.46, WMS 1.10),
 *       0x0022 Allocate CID (WDS, DMS, NAS, WDA, UIM, WMS; others INVALID_SERVICE_TYPE),
 *       0x0023 Release CID, 0x0026 Set Data Format (raw IP), 0x0027 Sync (releases every
 *       client and ends every session, without indications, as a modem reset does).
 *   DMS 0x0020 Get Capabilities (LTE only), 0x0021 Get Manufacturer, 0x0022 Get Model,
 *       0x0023 Get Revision, 0x0024 Get MSISDN (quirks.msisdn; NOT_PROVISIONED (16)
 *       without; ACCESS_DENIED while PIN1 is not verified), 0x0025 Get IDs (IMEI SIM_QMI_IMEI), 0x002C Get Hardware Revision
 *       (SIM_QMI_HW_REVISION), 0x002D Get Operating Mode (online, or low power), 0x002E Set
 *       Operating Mode (online or low power only: low power deregisters and
 *       ends the sessions), 0x003C UIM Get ICCID (SIM_QMI_ICCID), 0x0043 UIM Get IMSI
 *       (SIM_QMI_IMSI; ACCESS_DENIED while PIN1 is not verified), 0x0045 Get Band
 *       Capabilities (no GSM/WCDMA bands, LTE SIM_QMI_LTE_BANDS). quirks.no_dms_uim: the
 *       DMS UIM messages are INVALID_QMI_COMMAND (71), as on Sierra MDM9x30.
  *   NAS 0x0020 Get Signal Strength, 0x0021 Network Scan (sim_qmi_networks: 001/01 "Test
 *       Network" home, 001/02 "Other Network" available, 001/03 "Barred Network"
 *       forbidden, all LTE; the one registered in CURRENT_SERVING; low power or SIM locked:
 *       DEVICE_NOT_READY), 0x0022 Initiate Network Register (automatic: home; manual: the
 *       network if listed and not forbidden, else REGISTRATION_DENIED in the serving system),
 *       0x0024 Get Serving System (registered, home (roaming while
 *       quirks.roaming_file exists), LTE, PS
 *       attached, the PLMN registered in, 001/01 "Test Network" at first; while the SIM waits
 *       for its PIN: not registered, detached, no radio), 0x0033 Set System Selection
 *       Preference (mode 0x11, LTE bands 0x15 or extended 0x24; anything but LTE, or a band
 *       outside SIM_QMI_LTE_BANDS: INVALID_ARGUMENT), 0x0034 Get System Selection
 *       Preference (mode and LTE bands as last set: LTE, SIM_QMI_LTE_BANDS at first),
 *       0x004F Get Signal Info (LTE RSSI -65 dBm, RSRQ -9 dB, RSRP -95 dBm, SNR 13.0 dB, or
 *       quirks.signal_file's values while it exists), 0x007D Get Network Time (3GPP time
 *       0x11: the host's UTC clock, zone SIM_QMI_TIME_ZONE_QUARTERS, no DST, LTE; only while
 *       registered, else no time TLV).
 *       MODEMS.md has no capture of these: TLVs as libqmi's qmi-service-nas.json defines them.
 *   UIM (one card, one USIM application, PIN1 enabled with quirks.sim_pin, else disabled;
 *       3 PIN tries, 10 PUK tries):
 *       0x002F Get Card Status (TLV 0x10: card present, application state, PIN1 state
 *       and retries), 0x0020 Read Transparent (EF_ICCID 3F00/2FE2, and through the GW
 *       provisioning session EF_IMSI 3F00/7FFF/6F07, EF_AD 6FAD (MNC length 2), EF_SPN
 *       6F46 (SIM_QMI_SPN); card result TLV 0x10, data 0x11; an unknown file
 *       SIM_FILE_NOT_FOUND + 6A 82; EF_IMSI before PIN1 is verified ACCESS_DENIED + 69 82;
 *       beyond the file INVALID_ARGUMENT + 6B 00),
 *       0x0026 Verify PIN (PIN1: right -> verified, retries 0x10, 90 00 in 0x13; wrong ->
 *       ACCESS_DENIED (82) + retries left + 63 Cx, the last try -> PIN_BLOCKED (35) +
 *       69 83; PIN1 disabled -> NO_EFFECT), 0x0027 Unblock PIN (PUK SIM_CARD_PUK_DEFAULT
 *       and a new PIN; the answer as Verify PIN's with the PUK tries, the tenth wrong PUK ->
 *       PIN_ALWAYS_BLOCKED), 0x0025 Set PIN Protection (a wrong PIN INCORRECT_PIN: the
 *       answer has no card result; already so -> NO_EFFECT), 0x0028 Change PIN (as Verify
 *       PIN). While PIN1 is not verified the modem does not register and Start Network
 *       fails (CALL_FAILED, no service, CM 2001). quirks.no_sim: the card is absent (Get
 *       Card Status lists it ABSENT without applications; DMS UIM, Read Transparent and the
 *       PIN commands UIM_UNINITIALIZED), the modem never registers.
 *   WDA 0x0020 Set Data Format, 0x0021 Get Data Format.
 *   WDS 0x0020 Start Network, 0x0021 Stop Network, 0x0022 Get Packet Service Status,
 *       0x0024 Get Packet Statistics (byte counters 0x19/0x1A, 0; OUT_OF_CALL without a
 *       session, the counters still in the answer), 0x002B Get Profile Settings (3GPP
 *       profile N = the Nth APN: name, PDP type IPv4v6, APN, user and PAP|CHAP when it has
 *       credentials; another index EXTENDED_INTERNAL + 0xE0 invalid profile number (5),
 *       3GPP2 + invalid profile type (4)), 0x0049 Get Default Profile Number (1),
 *       0x002D Get Current Settings,
 *       0x004D Set IP Family, 0x00A2 Bind Mux Data Port;
 *       indication 0x0022 Packet Service Status to the client owning the session.
 *   WMS (3GPP mode only; messages in NV storage, SIM_QMI_SMS_MAX of them; the SIM's
 *       storage (UIM) is empty): 0x0001 Set Event Report (TLV 0x10: new MT message
 *       indications), 0x0020 Raw Send (an SMS-SUBMIT after its SMSC address, else
 *       WMS_ENCODING; recorded in quirks.sms_outbox; message id TLV 0x01), 0x0022 Raw Read
 *       (tag, format 6, PDU), 0x0024 Delete (by index; without one the whole storage),
 *       0x0031 List Messages (optionally by tag), 0x0032 Set Routes (point-to-point routes
 *       with a known storage and action); an unknown index INVALID_INDEX, 3GPP2 mode
 *       INVALID_ARGUMENT. sim_qmi_deliver_sms() stores a message from the network and sends
 *       indication 0x0001 Event Report (TLV 0x10 storage NV + index, 0x12 mode) to each
 *       client that asked.
 *
 * Error responses (result TLV 0x02 = {1, error}):
 *   client id not allocated for that service     INVALID_CLIENT_ID (7)
 *   Allocate CID for a service we do not serve    INVALID_SERVICE_TYPE (31)
 *   no free client id                             CLIENT_IDS_EXHAUSTED (5)
 *   TLV of the wrong size, bad string             MALFORMED_MESSAGE (1)
 *   mandatory TLV missing                         MISSING_ARGUMENT (17)
 *   Endpoint Info missing (quirks.require_endpoint_info) on WDA Set/Get or Bind
 *                                                 MISSING_ARGUMENT (17)
 *   Endpoint Info not {HSUSB, quirks.data_interface}, or a mux id outside
 *     quirks.mux_allowed                          INVALID_ARGUMENT (48)
 *   value out of range (mux id, DL max size)      INVALID_ARGUMENT (48)
 *   IP family other than 4, 6 or 8                INVALID_IP_FAMILY_PREFERENCE (64)
 *   Bind Mux Data Port to another mux while the
 *     client's session is up                      INVALID_OPERATION (70)
 *   WDA protocol other than QMAP/QMAPv5, QMAPv5
 *     with no_qmapv5, or UL != DL protocol         INVALID_DATA_FORMAT (45)
 *   Start Network on a client already connected   NO_EFFECT (26) + handle 0 (TLV 0x01)
 *   Start Network on an APN that quirks.max_pdn_per_apn other muxes use
 *                                                 CALL_FAILED, 3GPP 55
 *   Start Network with an unknown profile index   INVALID_PROFILE (10)
 *   Start Network refused by the "network"        CALL_FAILED (14) + TLV 0x10 call end
 *                                                 reason + TLV 0x11 verbose {type, reason}
 *   Stop Network with a handle not of the client  INVALID_HANDLE (9)
 *   Get Current Settings without a session        OUT_OF_CALL (15)
 *
 * Sessions. A WDS client binds a mux (Bind Mux Data Port; unbound = mux 0, which has no
 * addresses) and picks a family (Set IP Family, default IPv4; Start Network TLV 0x19
 * overrides it, 8 = the client's family). Start Network checks, in this order:
 *   APN (TLV 0x14; absent or empty = the first APN; else profile index TLV 0x31 selects the
 *     Nth APN; names compare case-insensitively) unknown -> 3GPP 27 unknown APN (1013)
 *   APN with credentials and user/password differ, or auth preference NONE
 *     -> 3GPP 29 user authentication failed (10)
 *   mux without addresses -> 3GPP 26 insufficient resources (1005)
 *   IPv6 asked on a mux with only IPv4 -> 3GPP 50 IPv4 only allowed (1); IPv4 asked on a
 *     mux with only IPv6 -> 3GPP 51 IPv6 only allowed (1)
 * (verbose type 3GPP = 6; the legacy call end reason in parentheses). On success the
 * response carries the packet data handle (TLV 0x01) and the client gets a Packet Service
 * Status indication CONNECTED {2, 0} with IP family (TLV 0x12). Stop Network (handle, or
 * 0xffffffff for "whatever this client has") answers and indicates DISCONNECTED with call end
 * reason client end (2) + verbose CM 2000; sim_qmi_drop_all() indicates DISCONNECTED with
 * regular deactivation (1008) + verbose 3GPP 36. Releasing the client ends its session
 * without an indication (the client is gone).
 *
 * Get Current Settings returns what applies to the session's family, filtered loosely by the
 * requested-settings mask (0 or absent = everything): IPv4 address 0x1E, gateway 0x20 and
 * subnet mask 0x21, DNS 0x15/0x16 (SIM_QMI_DNS4_*), IPv6 address 0x25 and gateway 0x26 (each
 * 16 bytes + prefix length), DNS 0x27/0x28 (SIM_QMI_DNS6_*), MTU 0x29, IP family 0x2B,
 * APN 0x14. IPv4 values are le32 whose most significant byte is the first octet (libqmi's
 * convention). The host address is the mux's address as configured (host bits kept) with
 * its prefix length; the gateway is the network's first host (the second when the first is
 * the host's own address).
 *
 * Every message the engine sends lists its TLVs in reverse order with an unknown TLV (0xE1,
 * 4 bytes) after the first, as real firmware may (docs/PROTOCOLS.md §5.1). With
 * quirks.silent nothing is answered at all, not even CTL.
 *
 * Data format. Until a WDA Set Data Format arrives the modem reports the defaults it was
 * given. A grant is min(requested, limit) for DL max size and datagrams and UL max size and
 * datagrams (absent or 0 = the limit); link layer is always raw IP (a request for 802.3 is
 * answered with raw IP, as modems that insist on it do); a DL max size below dl_min_size is
 * refused (INVALID_ARGUMENT). quirks.dl_grant_fixed grants the DL limits whatever was asked;
 * quirks.ul_min_datagrams / ul_min_size raise the UL grant above the request. The response carries QoS format 0x10 (0), link layer 0x11,
 * UL/DL protocol 0x12/0x13, DL max datagrams 0x15, DL max size 0x16 and, when the request
 * had them (or a quirk raised them), UL max datagrams 0x17 and UL max size 0x18, and DL
 * minimum padding 0x1A when asked (0x19) or granted. Get Data Format always answers every
 * output TLV. Before responding the engine calls
 * set_data_format() so the data side switches before the host reads the grant.
 */
#ifndef QMAPD_SIM_QMI_H
#define QMAPD_SIM_QMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "qmap.h"

#define SIM_QMI_SMS_MAX	       32 /* messages in NV storage */
#define SIM_QMI_SMS_PDU_MAX    176
#define SIM_QMI_MAX_APNS       8
#define SIM_QMI_APN_MAX	       100 /* 3GPP TS 23.003: an APN is at most 100 octets */
#define SIM_QMI_CREDENTIAL_MAX 127 /* what fits a PAP/CHAP field with room to spare */
#define SIM_QMI_APN_DEFAULT    "internet"
#define SIM_QMI_MTU_DEFAULT    1500
#define SIM_QMI_UL_MAX_SIZE    16384 /* what the sim's uplink side accepts per transfer */
#define SIM_QMI_UL_MAX_DGRAMS  32
/* The data interface's bInterfaceNumber on Quectel modems, USB and PCIe (qmi_wwan's table;
 * quectel-CM): the default, and what tests/usb/usb-harness.c's descriptor says. */
#define SIM_QMI_DATA_INTERFACE_DEFAULT 4

#define SIM_QMI_PIN_MAX	    8 /* TS 31.102: PINs are 4..8 digits */
#define SIM_QMI_MSISDN_MAX  20
#define SIM_QMI_PIN_RETRIES 3 /* what a fresh card allows, PUK 10 */
#define SIM_QMI_PUK_RETRIES 10

#define SIM_QMI_MANUFACTURER "qmapd-sim"
#define SIM_QMI_MODEL	     "Simulated QMAP modem"
#define SIM_QMI_IMEI	     "350000000000006" /* clearly fake, Luhn-valid */
#define SIM_QMI_IMEI_SV	     "01"
#define SIM_QMI_ICCID	     "8999001000000000006" /* test ranges: fake issuer 99 */
#define SIM_QMI_IMSI	     "001010000000006"	   /* test PLMN 001/01 */
#define SIM_QMI_SPN	     "qmapd test"	   /* EF_SPN: the home operator's name */
#define SIM_QMI_HW_REVISION  "10000"		   /* DMS Get Hardware Revision */
#define SIM_QMI_LTE_BANDS \
	((1ull << 0) | (1ull << 2) | (1ull << 6) | (1ull << 7) | (1ull << 19) | (1ull << 27))
#define SIM_QMI_TIME_ZONE_QUARTERS 4 /* the network's zone: UTC+01:00 */
#define SIM_QMI_DNS4_PRIMARY	   "198.51.100.53"
#define SIM_QMI_DNS4_SECONDARY	   "198.51.100.54"
#define SIM_QMI_DNS6_PRIMARY	   "2001:db8:ff::53"
#define SIM_QMI_DNS6_SECONDARY	   "2001:db8:ff::54"

struct sim_qmi_apn {
	char name[SIM_QMI_APN_MAX + 1];
	bool auth; /* credentials configured: the request must carry exactly these */
	char user[SIM_QMI_CREDENTIAL_MAX + 1];
	char password[SIM_QMI_CREDENTIAL_MAX + 1];
};

/* What a session on a mux gets; family 0 = no address of that family. */
struct sim_qmi_mux {
	bool present;
	struct config_prefix ipv4; /* host address with its prefix length */
	struct config_prefix ipv6;
};

struct sim_qmi_data_format {
	enum qmap_version version;
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t ul_max_size;
	uint32_t ul_max_datagrams;
	uint32_t dl_min_padding;
};

/*
 * How the modem grants and checks (one documented modem family each: sim.h's profiles).
 * Zero values are today's lenient defaults.
 */
struct sim_qmi_quirks {
	uint8_t data_interface;	    /* bInterfaceNumber that Endpoint Info must name */
	bool require_endpoint_info; /* WDA Set/Get and Bind without it: MISSING_ARGUMENT */
	bool dl_grant_fixed;	    /* DL size and datagrams = the limits, whatever asked */
	uint32_t ul_min_datagrams;  /* UL datagrams granted at least this (above the request) */
	uint32_t ul_min_size;	    /* UL size granted at least this */
	uint32_t dl_min_padding;    /* bytes of zeros in front of every downlink frame */
	bool mux_restricted;	    /* only the ids in mux_allowed bind */
	uint8_t mux_allowed[(CONFIG_MUX_ID_MAX + 8) / 8]; /* bit per mux id */
	unsigned max_pdn_per_apn;			  /* 0 = any number of PDNs per APN */
	bool silent;					  /* answers nothing at all */
	bool v5_granted_as_v1; /* a QMAPv5 request succeeds, granting QMAP (v1) */
	/* Searching for a network this long after power-up (Start Network fails: no service). */
	uint32_t register_delay_ms;
	/* Firmware without the old DMS UIM messages (Sierra MDM9x30): INVALID_QMI_COMMAND,
	 * the SIM only through the UIM service. */
	bool no_dms_uim;
	/* The SIM card: PIN1 enabled with this PIN ("" = PIN1 disabled), locked at start. */
	char sim_pin[SIM_QMI_PIN_MAX + 1];
	bool no_sim; /* no card in the slot (QMI: UIM card absent; MBIM: SIM_NOT_INSERTED) */
	char msisdn[SIM_QMI_MSISDN_MAX + 1]; /* "" = not provisioned, as on many SIMs */
	/* While this file exists the modem is registered roaming (a visited network), not
	 * home: a test switches it at run time. "" = always home. */
	char roaming_file[256];
	/* Every SMS-SUBMIT sent (WMS Raw Send) is appended here as a line of hex ("" = not
	 * recorded). */
	char sms_outbox[256];
	/* While this file exists its "RSSI RSRQ RSRP SNR" (dBm, dB, dBm, 0.1 dB) are the LTE
	 * signal NAS reports: a test changes it at run time. "" = the defaults. */
	char signal_file[256];
};

struct sim_qmi_options {
	struct sim_qmi_quirks quirks;
	bool no_qmapv5;	      /* refuse QMAPv5 like a modem without it */
	uint32_t session_mtu; /* MTU in Get Current Settings */
	struct sim_qmi_apn apn[SIM_QMI_MAX_APNS];
	unsigned n_apn; /* 0: one APN SIM_QMI_APN_DEFAULT without credentials */
	/* Reported before any Set Data Format, and the largest values ever granted. */
	struct sim_qmi_data_format limits;
	uint32_t dl_min_size; /* smallest DL aggregate the data side can fill */
	struct sim_qmi_mux mux[CONFIG_MUX_ID_MAX + 1];
	/* The first this many CTL Release Client ID requests are lost on their way: neither
	 * done nor answered, as for a host that died right after sending them. */
	unsigned lose_releases;
};

/* A network the modem's scan finds (NAS Network Scan), the first the home network. */
struct sim_qmi_network {
	uint16_t mcc, mnc;
	const char *name;
	uint8_t status; /* QmiNasNetworkStatus, CURRENT_SERVING where registered */
};

#define SIM_QMI_N_NETWORKS 3
extern const struct sim_qmi_network sim_qmi_networks[SIM_QMI_N_NETWORKS];

struct sim_qmi_stats {
	uint64_t qmi_requests;	/* well-formed requests */
	uint64_t qmi_responses; /* responses sent, errors included */
	uint64_t qmi_indications;
	uint64_t sms_received, sms_sent, sms_refused, sms_deleted; /* WMS */
	uint64_t qmi_malformed;					   /* messages not answered */
	uint64_t qmi_errors;					   /* error responses sent */
	uint64_t qmi_sessions_started;
	uint64_t qmi_sessions_failed;  /* CALL_FAILED responses */
	uint64_t qmi_sessions_dropped; /* network-initiated (sim_qmi_drop_all) */
	uint64_t data_format_sets;     /* Set Data Format requests granted */
	uint64_t qmi_silenced;	       /* requests not answered (quirks.silent) */
	uint64_t endpoint_missing;     /* WDA/bind requests without Endpoint Info */
	uint64_t endpoint_wrong;       /* ... naming another interface or endpoint type */
	uint64_t binds_with_endpoint;  /* Bind Mux Data Port requests with Endpoint Info */
	uint64_t bind_interface;       /* the interface number the last of them named */
	uint64_t qmi_clients;	       /* client ids allocated now, all services (a gauge) */
	uint64_t qmi_releases_lost;    /* Release Client ID requests lost (lose_releases) */
	uint64_t low_power;	       /* 1 while DMS says low power (a gauge) */
};

struct sim_qmi_callbacks {
	/* One whole QMUX message for the host: a response or an indication. */
	void (*send)(void *userdata, const uint8_t *buf, size_t len);
	/* Switch the data side to a granted format; < 0 turns the grant into an error. */
	int (*set_data_format)(void *userdata, const struct sim_qmi_data_format *format);
	/* A line for the log, carrying its object; priority as in <syslog.h>. Optional. */
	void (*log)(void *userdata, int priority, const char *msg);
};

struct sim_qmi;

/* Defaults: no APNs (= SIM_QMI_APN_DEFAULT), MTU 1500, QMAPv5 16384/32, no muxes. */
void sim_qmi_options_init(struct sim_qmi_options *o);

/*
 * Parse "NAME[:USER:PASSWORD]" (split at the first two colons; the password may hold more).
 * Returns 0, or -EINVAL with a message quoting the input in errbuf and *ret untouched.
 */
int sim_qmi_parse_apn(const char *arg, struct sim_qmi_apn *ret, char *errbuf, size_t errlen);

/* Copies the options. Returns 0 or -ENOMEM / -EINVAL (no send callback). */
int sim_qmi_new(const struct sim_qmi_options *opts, const struct sim_qmi_callbacks *cb,
		void *userdata, struct sim_qmi **ret);
struct sim_qmi *sim_qmi_free(struct sim_qmi *q);

/*
 * One host->modem control message (one whole QMUX message). Replies go out through
 * cb->send before this returns. Returns 0 when answered, -EBADMSG when malformed (counted,
 * not answered).
 */
int sim_qmi_handle(struct sim_qmi *q, const uint8_t *buf, size_t len);

/*
 * The host went away (or reset us): release every client and end every session without
 * indications. The data format stays, as on a modem that keeps its configuration. Safe to
 * call from inside a callback: it then takes effect when sim_qmi_handle() returns and
 * nothing more is sent for the current message.
 */
void sim_qmi_reset(struct sim_qmi *q);
/* Called a few times a second: a change of registration (roaming file, register delay, PIN,
 * low power, a network chosen) becomes a Serving System indication to the NAS clients that
 * asked for one (Register Indications). */
void sim_qmi_tick(struct sim_qmi *q);

/*
 * A power cycle with a new card: everything back to as sim_qmi_new() left it, with opts
 * (NULL: the options it had), the callbacks kept. No client, no session, the data format the
 * limits, the SIM card as inserted (PIN1 locked again, tries restored), radio on, SMS storage
 * and system selection as at power-up, client ids, handles and message ids from the start,
 * counters zero. Nothing is sent. One engine can so serve input after input (the fuzz
 * target). 0, -EINVAL as sim_qmi_new(), or -EBUSY from inside a callback.
 */
int sim_qmi_restart(struct sim_qmi *q, const struct sim_qmi_options *opts);

/* The network ends every connected session (indication with a call end reason). Returns
 * how many ended. */
unsigned sim_qmi_drop_all(struct sim_qmi *q);

/* An SMS-DELIVER (with its SMSC address) from the network: stored in NV as not read, an
 * Event Report to every WMS client that asked. Returns its index, -ENOSPC (storage full) or
 * -EINVAL (not a PDU). */
int sim_qmi_deliver_sms(struct sim_qmi *q, const uint8_t *pdu, size_t len);

/* A session of either family is up on this mux: the data side may carry its traffic. */
bool sim_qmi_mux_connected(const struct sim_qmi *q, unsigned mux_id);
/* On how many muxes a session of either family is up. */
unsigned sim_qmi_muxes_connected(const struct sim_qmi *q);

/* The gateway a session with this host address gets: the network's first host, or the second
 * when the first is the host itself (the MBIM side hands out the same). */
void sim_qmi_gateway_of(const struct config_prefix *host, struct config_prefix *ret);

const struct sim_qmi_data_format *sim_qmi_get_data_format(const struct sim_qmi *q);
const struct sim_qmi_stats *sim_qmi_get_stats(const struct sim_qmi *q);

#endif
