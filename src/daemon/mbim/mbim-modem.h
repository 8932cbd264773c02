/* SPDX-License-Identifier: MIT */
/*
 * The modem's MBIM side as qmapd uses it (control = mbim): an MbimDevice opened through
 * mbim-proxy on the wdm bridge's pty link (so mbimcli -p can share it), then
 *   DEVICE_CAPS (identity), SUBSCRIBER_READY_STATUS (a SIM that is not initialized stops
 *   here, its state named; the SIM's own numbers), HOME_PROVIDER (the SIM's operator; a
 *   modem that cannot say goes on without it), RADIO_STATE (power; switched on if the
 *   software switch is off, polled with registration),
 *   REGISTER_STATE (for status), PACKET_SERVICE attach, DEVICE_SERVICES (whether the
 *   QMI-over-MBIM service is offered: qmapd does not use it, status and log say so),
 * and sessions start: one CONNECT per mux, session id = mux id - 1 (the data path carries
 * session N as mux N + 1), IP_CONFIGURATION for addresses, gateways, DNS and MTU, CONNECT
 * indications for network drops. Failures retry with capped exponential backoff.
 * Private to src/daemon/mbim/: the rest of the daemon reaches it through the ops table of
 * mbim-control.c (modem-control.h) and reads it in the neutral model (modem-model.h).
 */
#ifndef QMAPD_MBIM_MODEM_H
#define QMAPD_MBIM_MODEM_H

#include <ev.h>
#include <libmbim-glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "modem-control.h"
#include "session.h"

enum mbim_modem_state {
	MBIM_MODEM_STATE_CLOSED,  /* no modem, or not opened yet */
	MBIM_MODEM_STATE_OPENING, /* open, caps, SIM, radio, attach */
	MBIM_MODEM_STATE_READY,	  /* attached: sessions may connect */
	MBIM_MODEM_STATE_FAILED,  /* a step failed (last_error); retried */
};

/*
 * Power as RADIO_STATE tells it, in the terms ModemManager gives MBIM modems: either radio
 * switch off is low power. There is no "off": a function that answers MBIM is powered.
 */
enum mbim_modem_power {
	MBIM_MODEM_POWER_UNKNOWN, /* not read (yet): the modem is gone or its SIM stopped the open */
	MBIM_MODEM_POWER_LOW,	  /* the hardware (W_DISABLE) or the software radio switch is off */
	MBIM_MODEM_POWER_ON,	  /* both switches on */
};

/* Own numbers kept: SIMs carry one or two EF_MSISDN records; E.164 is at most 15 digits and
 * a '+', so 32 leaves room for the odd formatting without keeping garbage. */
#define MBIM_MODEM_OWN_NUMBERS_MAX 4
#define MBIM_MODEM_NUMBER_LEN	   32

struct mbim_modem_callbacks {
	void (*on_ready)(void *userdata); /* attached: sessions can start */
	void (*on_lost)(void *userdata);  /* failed or gone; the modem retries */
	/* mbim-proxy went away: reopening at once, the sessions kept (modem-control.h) */
	void (*on_reopen)(void *userdata);
};

struct mbim_modem {
	struct ev_loop *loop;
	char *path;	       /* the pty link, e.g. /run/qmapd/mbim0 */
	unsigned open_timeout; /* seconds for the OPEN ([device] open-timeout) */
	struct mbim_modem_callbacks cb;
	void *userdata;

	enum mbim_modem_state state;
	MbimDevice *device;
	GCancellable *cancellable; /* cancels everything of the current attempt */
	gulong removed_id;	   /* the device's "device-removed" handler */
	unsigned proxy_losses;	   /* times mbim-proxy went away under an open device */
	bool reopening;		   /* since then: the sessions wait to be taken over */
	unsigned reopen_losses;	   /* proxies the reopen's own opens lost since */
	ev_tstamp last_proxy_loss; /* when; 0 never */
	unsigned function_resets;  /* the function was found closed and opened again (wdm.h) */
	bool retry_at_once;	   /* ... during an open: its failed step is retried at once */
	ev_timer retry;
	ev_timer radio_poll;
	unsigned attempts;
	char last_error[160];

	/* DEVICE_CAPS */
	char *device_id; /* the IMEI on 3GPP modems */
	char *firmware, *hardware;
	uint32_t max_sessions;
	/* SUBSCRIBER_READY_STATUS */
	char subscriber[32]; /* "initialized", "sim-not-inserted", "device-locked", ... */
	char *imsi, *iccid;
	bool sim_wait; /* stopped at the SIM (locked, absent, starting), the device kept open:
			* the SIM is polled, and a PIN can be entered (mbim-pin.c) */
	/* MBIM_CID_PIN: the code the SIM waits for (mbim-pin.c) */
	bool have_pin;
	uint32_t pin_type;  /* MbimPinType; UNKNOWN: none */
	uint32_t pin_state; /* MbimPinState */
	uint32_t pin_attempts;
	int pin1_enabled; /* PIN_LIST: 1 enabled, 0 disabled, -1 unknown */
	/* its TelephoneNumbers: the SIM's own numbers (MSISDN), the first is the one to show */
	char own_numbers[MBIM_MODEM_OWN_NUMBERS_MAX][MBIM_MODEM_NUMBER_LEN];
	unsigned n_own_numbers;
	/* HOME_PROVIDER: the SIM's operator, as QMI reads it from EF_IMSI/EF_AD and EF_SPN;
	 * "" unknown (the query failed, or the SIM is not initialized) */
	char sim_operator_id[8];    /* MCCMNC */
	char sim_operator_name[64]; /* the provider name the SIM gives */
	/* RADIO_STATE, at open and with every registration poll */
	enum mbim_modem_power power;
	bool radio_hw_off; /* the hardware switch is off: why power is low, and fatal */
	/* REGISTER_STATE, PACKET_SERVICE */
	char registration[32]; /* "home", "roaming", "searching", "denied", ... */
	char access_technology[32];
	char operator_name[64]; /* "name (MCCMNC)" */
	char operator_code[8];
	char operator_desc[48]; /* the provider's name; "" unknown */
	/* SIGNAL_STATE */
	bool have_signal;
	int rssi;		 /* dBm */
	char packet_service[16]; /* "attached", "detached", ... */
	/* DEVICE_SERVICES */
	bool services_known;
	bool qmi_over_mbim; /* the QMI-over-MBIM service is offered (and not used) */
	/* SMS (mbim-sms.c): storage initialized (SMS_CONFIGURATION), new-message indications */
	bool sms_ready;
	unsigned sms_received;
	gulong indicate_id;	     /* the device's indicate-status handler */
	gulong register_indicate_id; /* the same, for REGISTER_STATE (mbim-register-watch.c) */
};

/* open_timeout: seconds the device has to answer the OPEN (1 or more). */
int mbim_modem_new(struct ev_loop *loop, const char *path, unsigned open_timeout,
		   const struct mbim_modem_callbacks *cb, void *userdata, struct mbim_modem **ret);
struct mbim_modem *mbim_modem_free(struct mbim_modem *mm);

/* The transport says the modem is there / gone. */
void mbim_modem_start(struct mbim_modem *mm);
/* A REGISTER_STATE answer or indication read into registration, technology and provider;
 * false (error set) when it does not parse. */
bool mbim_modem_register_state(struct mbim_modem *mm, MbimMessage *msg, GError **error);

/* mbim-register-watch.c: REGISTER_STATE indications (registration as it changes, not at the
 * next poll), from ready until the modem is reset. */
void mbim_register_watch_start(struct mbim_modem *mm);
void mbim_register_watch_stop(struct mbim_modem *mm);
/* mbim-provider.c: VISIBLE_PROVIDERS (scan) and REGISTER_STATE set (manual or automatic
 * registration); done() exactly once (cancelled: -ENODEV; denied: -EACCES). */
void mbim_provider_scan(struct mbim_modem *mm, modem_scan_done done, void *userdata);
void mbim_provider_register(struct mbim_modem *mm, const char *operator_id, modem_done done,
			    void *userdata);
/* SIGNAL_STATE and REGISTER_STATE again now (the Signal interface's polling). */
void mbim_modem_query_signal(struct mbim_modem *mm);
void mbim_modem_stop(struct mbim_modem *mm);
/* The function was reset and the wdm bridge opened it again (wdm.h): ready, the device is
 * opened again at once and the sessions kept for the take-over (on_reopen), which finds
 * them deactivated and connects them again; during an open, the step that met the closed
 * function is retried at once instead of after the backoff. */
void mbim_modem_function_reset(struct mbim_modem *mm);
/* RADIO_STATE set on or off; done() exactly once (MBIM_MODEM_STATE_READY needed; cancelled:
 * -ENODEV). Power then is what the modem answered. */
void mbim_modem_set_power(struct mbim_modem *mm, bool on, modem_power_done done, void *userdata);

const char *mbim_modem_state_to_string(enum mbim_modem_state state);
/* The SIM may have changed (a code was taken): read its state and codes again, and go on
 * with the open if it waited for the SIM. */
void mbim_modem_check_sim(struct mbim_modem *mm);

/* ---- the SIM's codes (mbim-pin.c) ---- */

/* MBIM_CID_PIN and PIN_LIST queries into have_pin, pin_* and pin1_enabled (status only). */
void mbim_pin_query(struct mbim_modem *mm);
/* MBIM_CID_PIN set; done() exactly once (cancelled: MODEM_PIN_NO_SERVICE). Needs the device
 * open: ready, or stopped at the SIM. */
void mbim_modem_pin(struct mbim_modem *mm, enum modem_pin_op op, const char *code,
		    const char *new_code, modem_pin_done done, void *userdata);

/* ---- SMS (mbim-sms.c): SMS_CONFIGURATION once ready, SMS_READ (PDU, all), SMS_SEND (PDU),
 * SMS_DELETE (by index); SMS_MESSAGE_STORE_STATUS indications count new messages ---- */
void mbim_sms_start(struct mbim_modem *mm);
void mbim_sms_stop(struct mbim_modem *mm);
void mbim_sms_list(struct mbim_modem *mm, modem_sms_list_done done, void *userdata);
void mbim_sms_send(struct mbim_modem *mm, const uint8_t *pdu, size_t len, modem_sms_done done,
		   void *userdata);
void mbim_sms_delete(struct mbim_modem *mm, enum modem_sms_storage storage, uint32_t index,
		     modem_sms_done done, void *userdata);

/* ---- sessions (mbim-session.c) ---- */

/* link: the control link, beside which "<link>.sessions" lists the sessions up. */
int mbim_session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		     const char *link, const struct config_mux *cfg,
		     const struct session_callbacks *cb, void *userdata, struct session **ret);
/* The modem is attached: connect (session id = mux id - 1). */
void mbim_session_modem_ready(struct session *s, MbimDevice *device);
/*
 * Every session was told the modem is ready: deactivate the sessions "<link>.sessions" lists
 * for muxes without a session in this run (with_session: a set of mux ids, modem-control.h),
 * as a mux the last run had and this one lacks would leave its session activated for ever.
 */
void mbim_session_end_unclaimed(MbimDevice *device, const char *link, const uint64_t *with_session);

/*
 * Asynchronous MBIM steps carry their owner as user data and the attempt's cancellable: a
 * step that ends cancelled must not touch anything (the attempt is over, the owner may be
 * onto the next one).
 */
static inline bool mbim_step_cancelled(GError *error)
{
	return error && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

/* ---- pure mappings (mbim-map.c) ---- */

/* The MBIM context IP type asked for a mux's ip-type. */
MbimContextIpType mbim_map_ip_type(enum config_ip_type t);
/* Which families (bit 0 IPv4, bit 1 IPv6) a granted IP type carries; 0 for DEFAULT. */
unsigned mbim_map_granted_families(MbimContextIpType t);
/* The auth protocol for allowed-auth ("" = none; MBIM takes one: the strongest listed). */
MbimAuthProtocol mbim_map_auth(const char *allowed_auth, bool have_credentials);
/*
 * A failed CONNECT (status, nw_error from its CONNECT_INFO; 0 = none) or a network-side
 * deactivation (dropped): the reason as session_end (nw_error is a 3GPP cause) and as text,
 * e.g. "failure, nw_error 27 (missing-or-unknown-apn)" (also in session_end's text).
 * Returns whether retrying soon cannot help (wrong APN, credentials, barring): slower
 * retries.
 */
bool mbim_map_end(MbimStatusError status, uint32_t nw_error, bool dropped,
		  struct session_end *ret_end, char *text, size_t textlen);
/* SUBSCRIBER_READY_STATUS as status shows it: "initialized", "sim-not-inserted", ... */
const char *mbim_map_subscriber(MbimSubscriberReadyState s);
/* What that word (mbim_map_subscriber()'s) says of the SIM: card state, lock, failed
 * reason in info; what it does not say is left as it is. */
void mbim_map_sim(const char *subscriber, struct modem_info *info);
/* MBIM_CID_PIN's answer (have: one was read) in info: the lock and its tries, for a SIM
 * that is there (info->sim PRESENT); pin1_enabled from PIN_LIST (-1 unknown). */
void mbim_map_pin(bool have, MbimPinType type, MbimPinState state, uint32_t attempts,
		  int pin1_enabled, struct modem_info *info);
/* A PIN set's outcome: ok, or the status (FAILURE when not an MBIM status) and the
 * PIN_INFO it carried (parsed); the tries left of the code asked into ret_retries (-1
 * unknown). */
enum modem_pin_result mbim_map_pin_result(bool ok, MbimStatusError status, bool parsed,
					  MbimPinType type, uint32_t attempts, enum modem_pin_op op,
					  int *ret_retries);
/* REGISTER_STATE as status shows it (the words QMI sessions use): "home", "roaming", ... */
const char *mbim_map_registration(MbimRegisterState s);
/* The fastest data class in a set, as access technology: "lte", "umts", ... ("" none). */
const char *mbim_map_access_technology(MbimDataClass c);
/* SIGNAL_STATE's RSSI (dBm, have false: 99 unknown) as the Signal interface's dict of the
 * radio in use, as ModemManager's generic MBIM modem puts it (MBIM 1.0 says nothing of the
 * radio: the access technology decides; none known, no dict). */
/* A visible provider's state (MbimProviderState bits), as ModemManager reads it. */
enum modem_network_status mbim_map_provider_state(uint32_t state);
void mbim_map_signal(enum modem_access_technology act, bool have, int rssi_dbm,
		     struct modem_signal *ret);
/* RADIO_STATE's hardware and software switches as power. */
enum mbim_modem_power mbim_map_power(MbimRadioSwitchState hw, MbimRadioSwitchState sw);
/* "unknown", "low", "on". */
const char *mbim_map_power_to_string(enum mbim_modem_power p);
/*
 * SUBSCRIBER_READY_STATUS's telephone numbers (n of them; numbers may be NULL when n is 0)
 * into ret: empty ones and ones that do not fit MBIM_MODEM_NUMBER_LEN skipped, at most
 * MBIM_MODEM_OWN_NUMBERS_MAX kept in order. Returns how many were kept.
 */
unsigned mbim_map_own_numbers(char *const *numbers, uint32_t n,
			      char ret[MBIM_MODEM_OWN_NUMBERS_MAX][MBIM_MODEM_NUMBER_LEN]);

#endif
