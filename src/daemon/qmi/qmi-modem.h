/* SPDX-License-Identifier: MIT */
/*
 * The modem's QMI side as qmapd uses it: a QmiDevice opened through qmi-proxy on the wdm
 * bridge's pty link (so qmicli -p can share it), the identity and radio state for
 * `qmapctl status`, and the WDA data format negotiation (QMAPv5 first, then QMAPv1).
 * Private to src/daemon/qmi/: the rest of the daemon reaches it through the ops table of
 * qmi-control.c (modem-control.h) and reads it in the neutral model (modem-model.h).
 */
#ifndef QMAPD_QMI_MODEM_H
#define QMAPD_QMI_MODEM_H

#include <ev.h>
#include <libqmi-glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "modem-control.h"
#include "qmap.h"
#include "qmi-state.h"
#include "session.h"

/* LTE bands 1..256, bit (band - 1). */
#define QMI_LTE_BAND_WORDS 4

enum qmi_card_state {
	QMI_CARD_UNKNOWN, /* not asked yet, or no UIM service */
	QMI_CARD_ABSENT,
	QMI_CARD_PRESENT,
	QMI_CARD_ERROR,
};

/*
 * What the modem says about itself and its SIM beyond identity (src/daemon/qmi/qmi-info.c):
 * read once the modem is ready, the SIM's part again after a PIN was verified. Every field
 * has an "unknown" value: what the modem did not answer stays unknown, nothing is made up.
 */
struct qmi_modem_info {
	char *hardware_revision; /* DMS Get Hardware Revision; NULL unknown */
	char *msisdn;		 /* DMS Get MSISDN; NULL not provisioned or unknown */
	uint32_t
		radio_interfaces; /* DMS Get Capabilities: bit per QmiDmsRadioInterface; 0 unknown */
	bool have_mode_preference;
	uint16_t mode_preference; /* NAS System Selection Preference: QmiNasRatModePreference */
	uint64_t lte_bands[QMI_LTE_BAND_WORDS];		/* DMS Get Band Capabilities */
	uint64_t lte_bands_allowed[QMI_LTE_BAND_WORDS]; /* NAS ... LTE band preference */
	int ps_attached;    /* NAS Get Serving System: 1 attached, 0 detached, -1 unknown */
	int operating_mode; /* DMS Get Operating Mode: QmiDmsOperatingMode, -1 unknown */

	/* The SIM through the UIM service (GW primary application). */
	bool uim; /* the modem has a UIM service */
	enum qmi_card_state card;
	bool have_pin1;
	uint8_t pin1_state; /* QmiUimPinState */
	uint8_t pin1_retries, puk1_retries;
	int mnc_length;	     /* EF_AD: 2 or 3; 0 unknown */
	char *spn;	     /* EF_SPN; NULL unknown */
	char operator_id[8]; /* MCC+MNC from EF_IMSI and EF_AD; "" unknown */

	/* NAS Get Network Time: 1 answered, 0 refused (not in the firmware), -1 not asked; the
	 * 3GPP zone of the last answer that had one. */
	int network_time;
	bool have_zone;
	int8_t zone_quarters; /* local - UTC in 15 minutes, DST included */
	uint8_t zone_dst;     /* hours of daylight saving time in it */

	/* The default 3GPP profile (WDS), what LTE attaches with. */
	char *attach_apn;    /* NULL unknown */
	int attach_pdp_type; /* QmiWdsPdpType; -1 unknown */
};

struct qmi_modem {
	struct ev_loop *loop;
	char *path; /* the pty link, e.g. /run/qmapd/qmi0 */
	struct modem_control_request request;
	struct modem_control_callbacks cb;
	void *userdata;

	enum modem_control_state state;
	QmiDevice *device;
	QmiClient *dms;
	QmiClient *nas;
	QmiClient *wda;
	QmiClient *uim;		/* optional: allocated once ready, if the modem has the service */
	QmiClient *wds;		/* the modem's own, for its profiles (sessions have theirs) */
	QmiClient *wms;		/* optional: messaging (qmi-sms.c), if the modem has the service */
	gulong wms_event_id;	/* its Event Report handler */
	unsigned sms_received;	/* Event Reports of a new stored message */
	struct modem_cell cell; /* NAS Get Serving System's cell id, LAC, TAC */
	GCancellable *cancellable; /* cancels everything of the current open attempt */
	gulong removed_id;	   /* the device's "device-removed" handler */
	unsigned proxy_losses;	   /* times qmi-proxy went away under an open device */
	bool reopening;		   /* since then: the sessions wait to be taken over */
	unsigned reopen_losses;	   /* proxies the reopen's own opens lost since */
	ev_tstamp last_proxy_loss; /* when; 0 never */
	ev_timer radio_poll;
	gulong nas_serving_id; /* the Serving System indication's handler (qmi-nas-watch.c) */
	ev_timer retry;
	unsigned attempts;
	char last_error[160];

	int data_interface;		    /* named in the last data format request; -1 none */
	struct modem_data_format requested; /* the last Set Data Format request */
	struct modem_data_format granted;   /* what the modem answered (0 = not reported) */
	struct modem_data_format format;    /* in use: the grant within our buffers */
	char *manufacturer, *model, *revision, *imei;
	char *iccid, *imsi; /* the SIM's, through DMS UIM; NULL unknown */
	char registration[32];
	char access_technology[32];
	char operator_name[64]; /* "name (MCCMNC)", as status shows it */
	char operator_code[8];	/* MCCMNC of the current PLMN; "" unknown */
	char operator_desc[48]; /* the network's name for itself; "" unknown */
	bool have_signal;
	int8_t rssi;
	int16_t rsrp;
	int8_t rsrq;
	int16_t snr;		    /* tenths of dB */
	struct modem_signal signal; /* NAS Get Signal Info, every radio it reported */
	struct qmi_modem_info info;
	/* The modem's own client ids whose release it has not answered yet: still recorded
	 * (qmi_modem_record_clients()), and the releases themselves (qmi-modem.c). */
	struct qmi_state_clients releasing;
	struct qmi_release *releases;
	struct qmi_modem *next_live; /* qmi-modem.c's list of modems alive */
};

/* Record the modem's own client ids (qmi-state.h): call after each allocation. */
void qmi_modem_record_clients(struct qmi_modem *qm);
/*
 * Finish the allocation of one of the modem's own clients (a qmi_device_allocate_client()
 * callback's src and res): the client goes into its field of qm (dms, nas, ... by its
 * service) and the ids are recorded, so that a crash does not leak it. 0; -ECANCELED: the
 * attempt was cancelled, the client is dropped and qm must not be touched (qmi_step_cancelled);
 * -EIO: the modem gave none, *error says why.
 */
int qmi_modem_allocate_finish(struct qmi_modem *qm, GObject *src, GAsyncResult *res,
			      GError **error);
/*
 * A session gives its WDS client back: released through the modem that owns device, its id
 * in "<link>.clients" until the modem answers (so the session may drop it from its own file
 * at once), or, with no such modem any more, released untracked.
 */
void qmi_modem_release_session_client(QmiDevice *device, QmiClient *client);
/* Every session was told the modem is ready (their state files are theirs to take over):
 * end the sessions and release the WDS clients the last run left for any mux not in
 * with_session (its state file "<link>.mux<N>"), which nobody would take over. */
void qmi_modem_release_unclaimed(struct qmi_modem *qm, const uint64_t *with_session);

int qmi_modem_new(struct ev_loop *loop, const char *path,
		  const struct modem_control_request *request,
		  const struct modem_control_callbacks *cb, void *userdata, struct qmi_modem **ret);
struct qmi_modem *qmi_modem_free(struct qmi_modem *qm);

/* The transport says the modem is there / gone. */
void qmi_modem_start(struct qmi_modem *qm);
void qmi_modem_stop(struct qmi_modem *qm);

/* Registration and signal again now (after a PIN was verified: the modem registers). */
void qmi_modem_query_radio(struct qmi_modem *qm);

/* What NAS Get Serving System answers and its indication tells: the same TLVs. */
struct qmi_serving {
	bool valid; /* the mandatory Serving System TLV was there */
	QmiNasRegistrationState reg;
	QmiNasAttachState ps;
	GArray *radio; /* QmiNasRadioInterface; owned by the message */
	bool have_roaming;
	QmiNasRoamingIndicatorStatus roaming;
	bool have_cid;
	guint32 cid;
	guint16 lac, tac; /* 0 unknown */
	bool have_plmn;
	guint16 mcc, mnc;
	const char *desc; /* owned by the message */
};

/* Fill *sv from a Get Serving System output or a Serving System indication (PREFIX names the
 * type's getters: libqmi gives the two the same TLVs under two types). */
#define QMI_SERVING_READ(PREFIX, out, sv)                                                          \
	do {                                                                                       \
		*(sv) = (struct qmi_serving){ 0 };                                                 \
		(sv)->valid = PREFIX##_get_serving_system(out, &(sv)->reg, NULL, &(sv)->ps, NULL,  \
							  &(sv)->radio, NULL);                     \
		(sv)->have_roaming = PREFIX##_get_roaming_indicator(out, &(sv)->roaming, NULL);    \
		(sv)->have_cid = PREFIX##_get_cid_3gpp(out, &(sv)->cid, NULL);                     \
		if (!PREFIX##_get_lac_3gpp(out, &(sv)->lac, NULL))                                 \
			(sv)->lac = 0;                                                             \
		if (!PREFIX##_get_lte_tac(out, &(sv)->tac, NULL))                                  \
			(sv)->tac = 0;                                                             \
		(sv)->have_plmn =                                                                  \
			PREFIX##_get_current_plmn(out, &(sv)->mcc, &(sv)->mnc, &(sv)->desc, NULL); \
	} while (0)

/* Registration, technology, cell and operator from what the modem said. */
void qmi_modem_serving_system(struct qmi_modem *qm, const struct qmi_serving *sv);

/* qmi-nas-watch.c: Serving System indications (registration as it changes, not at the next
 * poll); asked for once the modem is ready, forgotten with the NAS client. */
void qmi_nas_watch_start(struct qmi_modem *qm);
void qmi_nas_watch_stop(struct qmi_modem *qm);

/* qmi-info.c: read the modem's facts and the SIM (on ready); forget them (on reset). */
void qmi_info_query(struct qmi_modem *qm);
void qmi_info_clear(struct qmi_modem_info *info);
/* The SIM's identity again (after a PIN was verified). */
void qmi_info_query_sim(struct qmi_modem *qm);
/* PIN1 locks the SIM now: the modem waits for it. */
bool qmi_info_sim_locked(const struct qmi_modem_info *info);
/* PIN1 through UIM (Verify PIN, Unblock PIN, Set PIN Protection, Change PIN); done() is
 * called exactly once, unless the attempt is cancelled (the modem went away: then done()
 * gets MODEM_PIN_NO_SERVICE from the cancellation). */
void qmi_info_pin(struct qmi_modem *qm, enum modem_pin_op op, const char *code,
		  const char *new_code, modem_pin_done done, void *userdata);
/* DMS Set Operating Mode online or low power, then the mode read back; done() as for the
 * PIN (MODEM_CONTROL_READY needed; cancelled: -ENODEV). */
void qmi_info_set_power(struct qmi_modem *qm, bool on, modem_power_done done, void *userdata);

/* ---- messaging (qmi-sms.c): WMS as ModemManager sets it up (routes: store in NV and
 * notify; Event Report for new messages), list/read, send, delete ---- */

/* Allocate the WMS client and set it up (once ready); forget it (on reset, before the
 * clients are released). */
void qmi_sms_start(struct qmi_modem *qm);
void qmi_sms_stop(struct qmi_modem *qm);
void qmi_sms_list(struct qmi_modem *qm, modem_sms_list_done done, void *userdata);
void qmi_sms_send(struct qmi_modem *qm, const uint8_t *pdu, size_t len, modem_sms_done done,
		  void *userdata);
void qmi_sms_delete(struct qmi_modem *qm, enum modem_sms_storage storage, uint32_t index,
		    modem_sms_done done, void *userdata);
/* The mode and LTE band preference of a Get System Selection Preference answer. */
void qmi_info_selection_preference(struct qmi_modem *qm,
				   QmiMessageNasGetSystemSelectionPreferenceOutput *out);

/* ---- NAS requests (qmi-nas.c): modes, bands, scan, registration, signal; each calls done()
 * exactly once (cancelled: -ENODEV), the modem not ready: -EAGAIN at once ---- */

void qmi_nas_set_modes(struct qmi_modem *qm, enum modem_mode allowed, modem_done done,
		       void *userdata);
void qmi_nas_set_bands(struct qmi_modem *qm, const uint64_t lte_bands[QMI_LTE_BAND_WORDS],
		       modem_done done, void *userdata);
void qmi_nas_scan(struct qmi_modem *qm, modem_scan_done done, void *userdata);
void qmi_nas_register(struct qmi_modem *qm, const char *operator_id, modem_done done,
		      void *userdata);
/* NAS Get Signal Info into qm->signal. */
void qmi_nas_query_signal(struct qmi_modem *qm);

/* qmi-time.c: NAS Get Network Time (sent as a raw message: libqmi builds without it);
 * done() NULL: only learn whether the modem tells it and its zone. */
void qmi_time_query(struct qmi_modem *qm, modem_time_done done, void *userdata);
/* A Get Network Time response's result and 3GPP time TLV (0x11), else 3GPP2's (0x10):
 * 0, -ENOMSG (answered without a time), -EPROTO (malformed), or the QMI error as -EIO with
 * *qmi_error set. Pure: unit tested. */
int qmi_time_parse(QmiMessage *resp, struct modem_network_time *ret, int *qmi_error);

/* ---- sessions (qmi-session.c): per IP family of the mux's ip-type a WDS client bound to
 * the mux (bind mux data port, set IP family, start network, get current settings) ---- */

int qmi_session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		    const struct config_mux *cfg, const struct session_callbacks *cb,
		    void *userdata, struct session **ret);
/* The modem is ready (data format granted): connect, binding the mux to the data
 * interface (bInterfaceNumber, -1 unknown). */
void qmi_session_modem_ready(struct session *s, QmiDevice *device, int data_interface);

/* ---- QMI in the neutral model (qmi-map.c; pure, unit tested in tests/unit/test-qmi-map.c) ---- */

/* What DMS, NAS, UIM and WDS told (qmi_modem_info) as the neutral facts; strings borrowed. */
void qmi_map_info(const struct qmi_modem_info *info, struct modem_info *ret);
/* DMS Get Capabilities' radio interfaces (bit per QmiDmsRadioInterface). */
enum modem_capability qmi_map_capabilities(uint32_t radio_interfaces);
enum modem_mode qmi_map_modes(uint32_t radio_interfaces);
/* NAS System Selection Preference's mode preference (QmiNasRatModePreference). */
enum modem_mode qmi_map_mode_preference(uint16_t mode_preference);
/* SetCurrentModes' allowed modes as NAS's mode preference (3GPP radios; 0 none of them). */
uint16_t qmi_map_mode_to_preference(enum modem_mode modes);
/* A scanned network's status (QmiNasNetworkStatus bits), as ModemManager reads it. */
enum modem_network_status qmi_map_network_status(uint8_t status);
/* NAS's radio interface (QmiNasRadioInterface) as an access technology. */
enum modem_access_technology qmi_map_radio_interface(int radio_interface);
/* MCC and MNC as an operator code: 3 digits of MCC, MNC in 2 digits below 100 (as
 * ModemManager guesses: the scan does not say), else 3. */
void qmi_map_operator_code(uint16_t mcc, uint16_t mnc, char *buf, size_t len);
/* "MCCMNC" (5 or 6 digits) as MCC, MNC and whether the MNC has 3 digits; false if it is
 * not one. */
bool qmi_map_parse_operator_id(const char *id, uint16_t *mcc, uint16_t *mnc, bool *mnc3);
/* UIM's PIN1 state (QmiUimPinState) as the lock it puts the modem in. */
enum modem_lock qmi_map_lock(QmiUimPinState pin1_state);
/* DMS Get Operating Mode (QmiDmsOperatingMode, -1 unknown). */
enum modem_power_state qmi_map_power(int operating_mode);
/* A profile's PDP type (QmiWdsPdpType, -1 unknown); NONE for PPP and unknown. */
enum modem_ip_family qmi_map_ip_family(int pdp_type);
/*
 * A WDS call end (the verbose reason and the call end reason, each when the modem sent it)
 * as session_end, its text e.g. "unknown-apn (3gpp reason 27)" ("" when neither). Returns
 * whether retrying soon cannot help (APN, credentials, barring): slower retries.
 */
bool qmi_map_end(bool have_verbose, QmiWdsVerboseCallEndReasonType vtype, gint16 vreason,
		 bool have_reason, QmiWdsCallEndReason reason, bool dropped,
		 struct session_end *ret);

/*
 * Asynchronous QMI steps carry their owner as user data and the attempt's cancellable: a
 * step that ends cancelled must not touch anything (the attempt is over, the owner may be
 * onto the next one).
 */
static inline bool qmi_step_cancelled(GError *error)
{
	return error && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

#endif
