/* SPDX-License-Identifier: MIT */
/*
 * The modem as the rest of the daemon sees it, whatever speaks to it: QMI maps into these
 * types inside src/daemon/qmi/, MBIM inside src/daemon/mbim/; modem.c, the sessions, the
 * status JSON and the D-Bus side read only these. Names and values follow ModemManager's own
 * enums (ModemManager-enums.h: MMModemLock, MMModemStateFailedReason,
 * MMModem3gppRegistrationState, MMModemPowerState, MMModemAccessTechnology, MMModemCapability,
 * MMModemMode, MMModem3gppPacketServiceState, MMBearerIpFamily), so the D-Bus layer is a thin
 * map, and ModemManager's QMI and MBIM helpers are the reference for what maps to what.
 * Every fact has an "unknown" value: what the modem did not say stays unknown.
 */
#ifndef QMAPD_MODEM_MODEL_H
#define QMAPD_MODEM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* The control plane's state, as status shows it ("absent", "initializing", "ready", "failed"). */
enum modem_control_state {
	MODEM_CONTROL_CLOSED,  /* no modem, or not opened yet */
	MODEM_CONTROL_OPENING, /* open, identity, SIM, data format or attach under way */
	MODEM_CONTROL_READY,   /* sessions may connect */
	MODEM_CONTROL_FAILED,  /* a step failed (the control plane's last error); retried */
};

/* The lock the SIM puts the modem in (MMModemLock). */
enum modem_lock {
	MODEM_LOCK_UNKNOWN = 0,
	MODEM_LOCK_NONE = 1,
	MODEM_LOCK_SIM_PIN = 2,
	MODEM_LOCK_SIM_PIN2 = 3,
	MODEM_LOCK_SIM_PUK = 4,
	MODEM_LOCK_SIM_PUK2 = 5,
};

/* Why a modem cannot work (MMModemStateFailedReason). */
enum modem_failed_reason {
	MODEM_FAILED_NONE = 0,
	MODEM_FAILED_UNKNOWN = 1,
	MODEM_FAILED_SIM_MISSING = 2,
	MODEM_FAILED_SIM_ERROR = 3,
	MODEM_FAILED_UNKNOWN_CAPABILITIES = 4,
	MODEM_FAILED_ESIM_WITHOUT_PROFILES = 5,
};

/* The SIM card as the modem sees it. */
enum modem_sim_state {
	MODEM_SIM_UNKNOWN, /* not asked yet, or the modem cannot tell */
	MODEM_SIM_ABSENT,
	MODEM_SIM_PRESENT,
	MODEM_SIM_ERROR, /* present but unusable */
};

/* MMModem3gppRegistrationState (the ones qmapd tells apart). */
enum modem_registration {
	MODEM_REGISTRATION_IDLE = 0, /* not registered, not searching */
	MODEM_REGISTRATION_HOME = 1,
	MODEM_REGISTRATION_SEARCHING = 2,
	MODEM_REGISTRATION_DENIED = 3,
	MODEM_REGISTRATION_UNKNOWN = 4,
	MODEM_REGISTRATION_ROAMING = 5,
};

/* MMModemPowerState. */
enum modem_power_state {
	MODEM_POWER_UNKNOWN = 0,
	MODEM_POWER_OFF = 1,
	MODEM_POWER_LOW = 2,
	MODEM_POWER_ON = 3,
};

/* MMModem3gppPacketServiceState. */
enum modem_packet_service {
	MODEM_PACKET_SERVICE_UNKNOWN = 0,
	MODEM_PACKET_SERVICE_DETACHED = 1,
	MODEM_PACKET_SERVICE_ATTACHED = 2,
};

/* MMModemAccessTechnology: bits. */
enum modem_access_technology {
	MODEM_ACCESS_UNKNOWN = 0,
	MODEM_ACCESS_GSM = 1 << 1,
	MODEM_ACCESS_GPRS = 1 << 3,
	MODEM_ACCESS_EDGE = 1 << 4,
	MODEM_ACCESS_UMTS = 1 << 5,
	MODEM_ACCESS_HSDPA = 1 << 6,
	MODEM_ACCESS_HSUPA = 1 << 7,
	MODEM_ACCESS_HSPA = 1 << 8,
	MODEM_ACCESS_HSPA_PLUS = 1 << 9,
	MODEM_ACCESS_1XRTT = 1 << 10,
	MODEM_ACCESS_EVDO0 = 1 << 11,
	MODEM_ACCESS_LTE = 1 << 14,
	MODEM_ACCESS_5GNR = 1 << 15,
};

/* MMModemCapability: bits; NONE unknown. */
enum modem_capability {
	MODEM_CAPABILITY_NONE = 0,
	MODEM_CAPABILITY_CDMA_EVDO = 1 << 1,
	MODEM_CAPABILITY_GSM_UMTS = 1 << 2,
	MODEM_CAPABILITY_LTE = 1 << 3,
	MODEM_CAPABILITY_5GNR = 1 << 6,
	MODEM_CAPABILITY_TDS = 1 << 7,
};

/* MMModemMode: bits; NONE unknown. */
enum modem_mode {
	MODEM_MODE_NONE = 0,
	MODEM_MODE_2G = 1 << 1,
	MODEM_MODE_3G = 1 << 2,
	MODEM_MODE_4G = 1 << 3,
	MODEM_MODE_5G = 1 << 4,
};

/* MMBearerIpFamily (of what LTE attaches with); NONE unknown or not IP. */
enum modem_ip_family {
	MODEM_IP_FAMILY_NONE = 0,
	MODEM_IP_FAMILY_IPV4 = 1 << 0,
	MODEM_IP_FAMILY_IPV6 = 1 << 1,
	MODEM_IP_FAMILY_IPV4V6 = 1 << 2,
};

/* LTE bands 1..256, bit (band - 1). */
#define MODEM_LTE_BAND_WORDS 4

/*
 * What a modem says about itself and its SIM beyond identity, in neutral terms: filled by
 * the control plane (QMI: qmi-map.c from DMS, NAS, UIM and WDS; MBIM: mbim-control.c from
 * DEVICE_CAPS, SUBSCRIBER_READY_STATUS, REGISTER_STATE, PACKET_SERVICE). Strings are borrowed
 * from the control plane (valid until it next runs), NULL when unknown.
 */
struct modem_info {
	const char *hardware_revision;
	const char *own_number; /* MSISDN; NULL not provisioned or unknown */
	enum modem_capability capabilities;
	enum modem_mode modes;	       /* what the modem can use */
	enum modem_mode current_modes; /* what it may use now (its preference within modes) */
	uint64_t lte_bands[MODEM_LTE_BAND_WORDS];	  /* supported; all 0 unknown */
	uint64_t lte_bands_allowed[MODEM_LTE_BAND_WORDS]; /* all 0: no preference */
	enum modem_packet_service packet_service;
	enum modem_power_state power;

	/* The SIM. */
	enum modem_sim_state sim;
	enum modem_failed_reason failed_reason; /* why the modem cannot work, if so */
	bool tells_lock; /* the control plane reads the SIM's lock (QMI: UIM service) */
	enum modem_lock lock;
	bool sim_blocked;     /* for good: no code opens it (lock UNKNOWN) */
	bool sim_pin_enabled; /* PIN1 guards the SIM (ModemManager's SIM facility lock) */
	/* Tries left: QMI's card status tells both; MBIM's PIN query only the code it asks for. */
	bool have_pin_retries, have_puk_retries;
	unsigned pin_retries, puk_retries;
	const char *sim_operator_id;   /* MCC+MNC of the SIM's home network; NULL unknown */
	const char *sim_operator_name; /* EF_SPN (MBIM: HOME_PROVIDER); NULL unknown */

	/* The network's time: whether the modem tells it (QMI: NAS Get Network Time answered)
	 * and its zone, last heard. */
	bool tells_time;
	bool have_zone;
	int zone_offset_minutes, zone_dst_minutes;

	/* The default profile: what LTE attaches with. */
	const char *attach_apn; /* NULL unknown */
	enum modem_ip_family attach_ip_family;
};

/* The lock keeps the modem off the network until a PIN or PUK is given (or for good). */
static inline bool modem_info_sim_locked(const struct modem_info *info)
{
	return info->sim == MODEM_SIM_PRESENT &&
	       (info->lock == MODEM_LOCK_SIM_PIN || info->lock == MODEM_LOCK_SIM_PUK ||
		info->sim_blocked);
}

/*
 * Why a session's start failed or the network dropped it, as the modem said it: a 3GPP
 * cause (TS 24.008 / 24.301 session management; QMI's verbose 3GPP reasons and MBIM's
 * nw_error are those numbers), another reason 3GPP does not name, or none.
 */
enum session_end_kind {
	SESSION_END_NONE,
	SESSION_END_3GPP,
	SESSION_END_OTHER,
};

struct session_end {
	enum session_end_kind kind;
	int cause;	/* with SESSION_END_3GPP */
	bool dropped;	/* by the network after the session was up (else: the start failed) */
	char text[120]; /* the modem's reason in words, as last_error shows it; "" none */
};

/* Where a modem keeps a short message (MMSmsStorage). */
enum modem_sms_storage {
	MODEM_SMS_STORAGE_UNKNOWN = 0,
	MODEM_SMS_STORAGE_SM = 1, /* the SIM (QMI: UIM) */
	MODEM_SMS_STORAGE_ME = 2, /* the modem's own memory (QMI: NV) */
	MODEM_SMS_STORAGE_MT = 3,
	MODEM_SMS_STORAGE_SR = 4,
	MODEM_SMS_STORAGE_BM = 5,
	MODEM_SMS_STORAGE_TA = 6,
};

/* The longest PDU a modem stores: SMSC address and TPDU (sms-pdu.h's SMS_PDU_MAX). */
#define MODEM_SMS_PDU_MAX 176

/* A message the modem stores, as it stores it: the PDU is decoded by whoever shows it. */
struct modem_sms {
	enum modem_sms_storage storage;
	uint32_t index;
	bool received; /* mobile terminated (else one stored for sending) */
	uint8_t pdu[MODEM_SMS_PDU_MAX];
	size_t len;
};

/* The cell the modem is camped on, for the 3GPP LAC/CI location source. */
struct modem_cell {
	bool known; /* registered, and the modem told its cell */
	uint32_t cell_id;
	uint16_t lac; /* 0 unknown (LTE has a TAC instead) */
	uint32_t tac; /* 0 unknown */
};

/* What a network scan says of one network (MMModem3gppNetworkAvailability). */
enum modem_network_status {
	MODEM_NETWORK_UNKNOWN = 0,
	MODEM_NETWORK_AVAILABLE = 1,
	MODEM_NETWORK_CURRENT = 2,
	MODEM_NETWORK_FORBIDDEN = 3,
};

/* One network a scan found. */
struct modem_network {
	char operator_code[8];	/* MCC+MNC */
	char operator_long[48]; /* the network's name for itself; "" unknown */
	enum modem_network_status status;
	enum modem_access_technology access_technology; /* UNKNOWN when not said */
};

/*
 * The signal as the modem measured it, per radio (ModemManager's Signal interface):
 * NaN for what it did not say. dBm for powers, dB for ratios.
 */
struct modem_signal_values {
	bool valid;
	double rssi, rsrq, rsrp, snr; /* rsrq, rsrp, snr: LTE and 5G */
	double ecio;		      /* UMTS */
};

struct modem_signal {
	struct modem_signal_values gsm, umts, lte, nr5g;
};

/* The network's time (NITZ) as the modem last heard it. */
struct modem_network_time {
	int year, month, day, hour, minute, second; /* UTC */
	bool have_zone;				    /* the zone below is the network's */
	int offset_minutes;			    /* local time - UTC, DST included */
	int dst_minutes;			    /* of which daylight saving time */
};

/* The words status and the logs use ("home", "lte", ...), one table for QMI and MBIM. */
const char *modem_registration_to_string(enum modem_registration r);
enum modem_registration modem_registration_from_string(const char *s);
enum modem_access_technology modem_access_technology_from_string(const char *s);
const char *modem_control_state_to_string(enum modem_control_state s);

#endif
