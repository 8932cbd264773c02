/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's MBIM side: the simulated modem answering MBIM control messages (MBIM 1.0 §9)
 * from the `sim` transport's control channel (the encapsulated commands of a cdc-wdm), with
 * the state a real modem keeps (open, radio, attach, one IP context per session id). Pure
 * over messages like sim-qmi.h: the caller hands in each host->modem message and gets
 * responses and indications back through callbacks, synchronously. Incoming messages are
 * wrapped and read with libmbim's message API; OPEN_DONE, CLOSE_DONE and FUNCTION_ERROR are
 * built with it too; COMMAND_DONE and INDICATE_STATUS are laid out here (libmbim 1.28 has no
 * public builder for device-side messages), and the tests parse them back with libmbim's
 * response parsers.
 *
 * Framing: every message starts {MessageType, MessageLength, TransactionId} (le32 each).
 *   - A message shorter than 12 bytes is counted (mbim_malformed) and not answered.
 *   - MessageLength other than the bytes received: FUNCTION_ERROR LENGTH_MISMATCH (3).
 *   - More bytes than wMaxControlMessage: FUNCTION_ERROR MAX_TRANSFER (8).
 *   - COMMAND before OPEN (or after CLOSE): FUNCTION_ERROR NOT_OPENED (5).
 *   - A message type a host does not send: FUNCTION_ERROR UNKNOWN (6).
 *   - COMMAND fragments {TotalFragments, CurrentFragment} are reassembled; one out of
 *     sequence (another transaction, a gap, a new first fragment) drops what was collected:
 *     FUNCTION_ERROR FRAGMENT_OUT_OF_SEQUENCE (2). Responses longer than the host's
 *     MaxControlTransfer (from OPEN, at least 64, at most wMaxControlMessage) go out in
 *     fragments, as the specification wants.
 *   All of these count in mbim_malformed, except NOT_OPENED (mbim_not_opened).
 *
 * OPEN answers OPEN_DONE success. An OPEN while the function is open means host and function
 * are out of step (MBIM 1.0 §9.3.1): the function does what a CLOSE does first, ending every
 * session (no indication, no CLOSE_DONE), counted in mbim_reopens. CLOSE answers CLOSE_DONE
 * and ends every session (§9.3.2). A host that wants to keep the sessions of a function that
 * is still open (qmapd after a restart or a crash) must not OPEN it again: a COMMAND is
 * answered COMMAND_DONE while open, FUNCTION_ERROR NOT_OPENED while closed.
 *
 * Answered (service BASIC_CONNECT; any other CID, command type or service:
 * COMMAND_DONE NO_DEVICE_SUPPORT (9), counted in mbim_unsupported):
 *   DEVICE_CAPS (1) query: embedded, GSM class, LTE data class, max sessions, device id
 *     SIM_MBIM_IMEI, firmware and hardware strings.
 *   SUBSCRIBER_READY_STATUS (2) query: opts.subscriber_state (initialized unless set), the
 *     IMSI/ICCID of a test SIM and opts.msisdn as its one telephone number (none when "")
 *     when initialized. A SIM that is not initialized leaves the modem deregistered, and
 *     PACKET_SERVICE attach, HOME_PROVIDER and CONNECT activate fail as modems answer then:
 *     SIM_NOT_INSERTED (3), BAD_SIM (4), PIN_REQUIRED (5) for a locked one,
 *     NOT_INITIALIZED (14) while it is starting (Microsoft's MBIM implementation
 *     guidelines name the first three for a HOME_PROVIDER query).
 *     The ready state follows the card (sim-card.c): DEVICE_LOCKED while PIN1 or PUK1 is
 *     pending (opts.sim_pin), SIM_NOT_INSERTED with opts.no_sim, BAD_SIM once the PUK is
 *     used up.
 *   RADIO_STATE (3) query/set: hardware and software radio on; set switches the software
 *     state (off: every session ends, with an indication).
 *   PIN (4) query: the code waited for (PIN1 or PUK1, locked, tries left; none, unlocked);
 *     set: PIN1 enter, enable, disable, change, PUK1 enter with a new PIN1; a wrong code
 *     FAILURE (2) with the PIN_INFO, PIN1 disabled PIN_DISABLED (6), no card
 *     SIM_NOT_INSERTED (3).
 *   PIN_LIST (5) query: PIN1 enabled or disabled, numeric, 4..8 digits; the other nine
 *     NOT_SUPPORTED.
 *   HOME_PROVIDER (6) query: the SIM's operator, SIM_MBIM_HOME_PROVIDER_ID (the IMSI's
 *     MCC+MNC) named SIM_MBIM_HOME_PROVIDER_NAME (the SPN the QMI side reads), state home;
 *     set (provisioning a home provider) is NO_DEVICE_SUPPORT.
 *   VISIBLE_PROVIDERS (8) query: 00101 "Test Network" home, 00102 "Other Network" visible,
 *     00103 "Barred Network" forbidden, the one registered in REGISTERED; radio off or SIM
 *     not ready: that status.
 *   REGISTER_STATE (9) query: registered home (roaming while opts.roaming_file exists),
 *     automatic, LTE, provider 00101 "Test Network"; set: automatic (home) or manual (a
 *     listed, not forbidden provider; else DENIED, nw_error 11), answered with the state
 *     that follows. MODEMS.md has no capture of these: libmbim's definitions.
 *   SIGNAL_STATE (11) query: RSSI SIM_MBIM_RSSI (99, unknown, with the radio off), error
 *     rate unknown; set (reporting thresholds) is NO_DEVICE_SUPPORT.
 *   PACKET_SERVICE (10) query/set: attach/detach (detach ends every session, with an
 *     indication); starts attached, as a modem that attaches on its own.
 *   CONNECT (12) set/query per session id, see below.
 *   IP_CONFIGURATION (15) query per session id: see below.
 *   DEVICE_SERVICES (16) query: BASIC_CONNECT with the CIDs above, SMS with its five, and, when
 *     opts.qmi_over_mbim, the QMI-over-MBIM service (which is otherwise absent; its messages
 *     get NO_DEVICE_SUPPORT either way: the sim does not tunnel QMI).
 *   DEVICE_SERVICE_SUBSCRIBE_LIST (19) set: accepted, answered with the list as sent.
 * Service SMS (one store of SIM_MBIM_SMS_MAX messages, index from 1; PDU format only, CDMA
 * INVALID_PARAMETERS): CONFIGURATION (1) query (initialized, PDU, the store's size, no SC
 * address), READ (2) query (all, by index, new, old: PDU records with their status; an
 * index not stored INVALID_MEMORY_INDEX), SEND (3) set (an SMS-SUBMIT after its SMSC
 * address, recorded in opts.sms_outbox; else INVALID_PARAMETERS; answers a message
 * reference), DELETE (4) set (by index or all), MESSAGE_STORE_STATUS (5) query (store full
 * or not); sim_mbim_deliver_sms() stores a message from the network as new and indicates
 * MESSAGE_STORE_STATUS with the new-message flag and its index.
 * A request whose information buffer is shorter than its fixed part, or whose OL pairs point
 * outside it: INVALID_PARAMETERS (21).
 *
 * Sessions: session id N carries mux N+1 (`--mux N+1=...` gives its addresses), so session 0,
 * the default one, is mux 1. CONNECT set ACTIVATE checks, in this order:
 *   session id > 255                                  INVALID_PARAMETERS
 *   radio off                                         RADIO_POWER_OFF (20)
 *   SIM not initialized                               its status (see above)
 *   detached                                          PACKET_SERVICE_DETACHED (12)
 *   session already active                            FAILURE (2), the answer showing the
 *     session as activated (no public capture found: strict, the context stays)
 *   opts.max_sessions active already                  MAX_ACTIVATED_CONTEXTS (13)
 *   access string unknown (empty = the first APN)     FAILURE + nw_error 27 missing or unknown
 *     APN (what modems answer: the libmbim maintainer, MicrosoftDocs/windows-driver-docs#3776)
 *   APN with credentials: auth protocol NONE, or user/password differ
 *                                                     FAILURE + nw_error 29 user
 *                                                     authentication failed
 *   no mux for the session (mux N+1 not configured or without addresses)
 *                                                     FAILURE + nw_error 26 insufficient
 *                                                     resources
 *   IPv6 asked on a mux with only IPv4 (51 likewise)  FAILURE + nw_error 50 IPv4 only allowed
 * IPV4V6 / IPV4_AND_IPV6 / DEFAULT get what the mux has (the answer's IPType says which).
 * Every CONNECT answer, failures included, carries MBIM_CONNECT_INFO {session id, activation
 * state, voice call state none, IP type, context type, nw_error}.
 * DEACTIVATE on an inactive session: CONTEXT_NOT_ACTIVATED (16).
 * sim_mbim_drop_all(): every active session ends with an INDICATE_STATUS CONNECT
 * {deactivated, nw_error 36 regular deactivation}.
 *
 * IP_CONFIGURATION of an active session: for each family the session has, the address with
 * its prefix length, the gateway (the network's first host, the second when the first is the
 * host's own address), two DNS servers (SIM_QMI_DNS*) and the MTU (opts.session_mtu), and
 * availability flags ADDRESS|GATEWAY|DNS|MTU; all zero for a family it has not. An inactive
 * session: CONTEXT_NOT_ACTIVATED.
 */
#ifndef QMAPD_SIM_MBIM_H
#define QMAPD_SIM_MBIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sim-qmi.h"

/* wMaxControlMessage: libmbim's own MaxControlTransfer when it cannot read the descriptor
 * (mbim-device.c MAX_CONTROL_TRANSFER). */
#define SIM_MBIM_MAX_CONTROL_DEFAULT	 4096
#define SIM_MBIM_MAX_CONTROL_MIN	 64 /* MBIM 1.0: the least a function may declare */
#define SIM_MBIM_MAX_SESSIONS_DEFAULT	 8
#define SIM_MBIM_SESSIONS		 256 /* session ids 0-255 */
#define SIM_MBIM_IMEI			 SIM_QMI_IMEI
#define SIM_MBIM_IMSI			 "001010000000001"
#define SIM_MBIM_ICCID			 "8900100000000000001"
#define SIM_MBIM_HOME_PROVIDER_ID	 "00101" /* SIM_MBIM_IMSI's MCC and MNC */
#define SIM_MBIM_HOME_PROVIDER_NAME	 SIM_QMI_SPN
#define SIM_MBIM_NW_REGULAR_DEACTIVATION 36 /* 3GPP TS 24.008 cause 36 */
#define SIM_MBIM_SMS_MAX		 32 /* the SMS store */
#define SIM_MBIM_SMS_PDU_MAX		 176
#define SIM_MBIM_RSSI			 20 /* SIGNAL_STATE: -113 + 2 * 20 = -73 dBm */

struct sim_mbim_options {
	uint32_t max_control_message; /* wMaxControlMessage */
	uint32_t max_sessions;	      /* DEVICE_CAPS MaxSessions, and the limit */
	uint32_t session_mtu;
	bool qmi_over_mbim;		   /* DEVICE_SERVICES lists the QMI-over-MBIM service */
	uint32_t subscriber_state;	   /* MbimSubscriberReadyState; 0 from _init: INITIALIZED */
	char sim_pin[SIM_QMI_PIN_MAX + 1]; /* PIN1 enabled (locked at start) with it; "" off */
	bool no_sim;			   /* no card (SIM_NOT_INSERTED) */
	char msisdn[SIM_QMI_MSISDN_MAX + 1]; /* the SIM's own number; "" none (as many SIMs) */
	char roaming_file[256]; /* registered roaming while it exists ("" = always home) */
	char sms_outbox[256];	/* every SMS-SUBMIT sent, a hex line each ("" = not kept) */
	struct sim_qmi_apn apn[SIM_QMI_MAX_APNS];
	unsigned n_apn; /* 0: one APN SIM_QMI_APN_DEFAULT without credentials */
	/* By mux id; session id = mux id - 1. */
	struct sim_qmi_mux mux[CONFIG_MUX_ID_MAX + 1];
};

struct sim_mbim_stats {
	uint64_t mbim_requests;	   /* well-formed messages handled (OPEN, CLOSE, COMMAND) */
	uint64_t mbim_responses;   /* OPEN_DONE, CLOSE_DONE, COMMAND_DONE sent */
	uint64_t mbim_indications; /* INDICATE_STATUS sent */
	uint64_t sms_received, sms_sent, sms_refused, sms_deleted; /* the SMS service */
	uint64_t mbim_malformed;				   /* see the framing rules above */
	uint64_t mbim_not_opened;				   /* COMMAND before OPEN */
	uint64_t mbim_opens;					   /* OPEN messages */
	uint64_t mbim_reopens;		      /* ... that found the function open: a CLOSE first */
	uint64_t mbim_sessions_ended_by_host; /* by DEACTIVATE, CLOSE or an OPEN while open */
	uint64_t mbim_errors;		      /* COMMAND_DONE with a status other than success */
	uint64_t mbim_unsupported;	      /* of those: NO_DEVICE_SUPPORT */
	uint64_t mbim_fragments_in;	      /* COMMAND fragments reassembled (beyond the first) */
	uint64_t mbim_fragments_out; /* fragments sent (beyond the first of each message) */
	uint64_t mbim_sessions_started;
	uint64_t mbim_sessions_failed;	/* CONNECT ACTIVATE refused */
	uint64_t mbim_sessions_dropped; /* by the network (sim_mbim_drop_all) */
	uint64_t mbim_function_resets;	/* the function reset itself (sim_mbim_function_reset) */
};

struct sim_mbim_callbacks {
	/* One whole MBIM message (or fragment) for the host. */
	void (*send)(void *userdata, const uint8_t *buf, size_t len);
	/* A line for the log; priority as in <syslog.h>. Optional. */
	void (*log)(void *userdata, int priority, const char *msg);
};

struct sim_mbim;

/* Defaults: wMaxControlMessage 4096, 8 sessions, MTU 1500, no QMI-over-MBIM, no muxes, the
 * SIM initialized. */
void sim_mbim_options_init(struct sim_mbim_options *o);
/* A --sim-state word to an MbimSubscriberReadyState. 0 or -EINVAL. */
int sim_mbim_parse_sim_state(const char *word, uint32_t *ret);

/* Copies the options. 0, -ENOMEM, or -EINVAL (no send callback, a limit out of range). */
int sim_mbim_new(const struct sim_mbim_options *opts, const struct sim_mbim_callbacks *cb,
		 void *userdata, struct sim_mbim **ret);
struct sim_mbim *sim_mbim_free(struct sim_mbim *m);

/* One host->modem control message. Replies go out through cb->send before this returns.
 * Returns 0 when handled, -EBADMSG when counted as malformed (answered or not, as above). */
int sim_mbim_handle(struct sim_mbim *m, const uint8_t *buf, size_t len);

/* The host went away: closed, every session ended without indications. The radio and attach
 * state stay, as on a modem that keeps running. */
void sim_mbim_reset(struct sim_mbim *m);

/* The function resets itself while open, as firmware after a crash or a watchdog: closed,
 * every session gone, nothing said to the host, which learns it from the NOT_OPENED its
 * next COMMAND gets. Returns the sessions that ended. */
unsigned sim_mbim_function_reset(struct sim_mbim *m);
/* The network ends every active session (INDICATE_STATUS CONNECT). Returns how many. */
unsigned sim_mbim_drop_all(struct sim_mbim *m);
/* An SMS-DELIVER (SMSC address first) from the network: stored as new, indicated with
 * SMS_MESSAGE_STORE_STATUS (new message, its index) while the function is open. Returns its
 * index (from 1), -ENOSPC (store full) or -EINVAL. */
int sim_mbim_deliver_sms(struct sim_mbim *m, const uint8_t *pdu, size_t len);

/* An IP context is active on this session id: the data side may carry its traffic. */
bool sim_mbim_session_active(const struct sim_mbim *m, unsigned session_id);
/* Called a few times a second while open: a change of registration (roaming file, radio,
 * PIN, a network chosen) becomes a REGISTER_STATE indication, as real devices send it. */
void sim_mbim_tick(struct sim_mbim *m);
bool sim_mbim_is_open(const struct sim_mbim *m);

const struct sim_mbim_stats *sim_mbim_get_stats(const struct sim_mbim *m);

#endif
