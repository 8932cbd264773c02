/* SPDX-License-Identifier: MIT */
/*
 * The modem's QMI side as qmapd uses it: a QmiDevice opened through qmi-proxy on the wdm
 * bridge's pty link (so qmicli -p can share it), the identity and radio state for
 * `qmapctl status`, and the WDA data format negotiation (QMAPv5 first, then QMAPv1).
 */
#ifndef QMAPD_QMI_MODEM_H
#define QMAPD_QMI_MODEM_H

#include <ev.h>
#include <libqmi-glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "qmap.h"

enum qmi_modem_state {
	QMI_MODEM_STATE_CLOSED,	 /* no modem, or not opened yet */
	QMI_MODEM_STATE_OPENING, /* device open, clients, data format */
	QMI_MODEM_STATE_READY,	 /* data format granted: sessions may start */
	QMI_MODEM_STATE_FAILED,	 /* open or data format failed; retried */
};

struct qmi_data_format {
	enum qmap_version version;
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t ul_max_size;
	uint32_t ul_max_datagrams;
	uint32_t dl_min_padding; /* zero bytes the modem may put between downlink frames */
};

struct qmi_modem_request {
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t ul_max_size; /* also the OUT buffers' size: no larger uplink grant is used */
	uint32_t ul_max_datagrams;
	uint32_t dl_buffer_size; /* receive buffers' room: no larger downlink grant is used */
	bool try_qmapv5;
};

struct qmi_modem_callbacks {
	/* The data format was granted; sessions can start. */
	void (*on_ready)(void *userdata, const struct qmi_data_format *format);
	/* Open or negotiation failed, or the device went away; the modem retries. */
	void (*on_lost)(void *userdata);
	/* The data interface's bInterfaceNumber for Endpoint Info, -1 if unknown. Asked when
	 * a request is built: the transport may learn it after the modem appeared. */
	int (*data_interface)(void *userdata);
};

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

	/* The default 3GPP profile (WDS), what LTE attaches with. */
	char *attach_apn;    /* NULL unknown */
	int attach_pdp_type; /* QmiWdsPdpType; -1 unknown */
};

/* The outcome of a PIN verification, in the terms clients need. */
enum qmi_pin_result {
	QMI_PIN_OK,
	QMI_PIN_WRONG,	    /* retries left in *retries */
	QMI_PIN_BLOCKED,    /* PUK needed now */
	QMI_PIN_NOT_NEEDED, /* PIN1 disabled */
	QMI_PIN_NO_SERVICE, /* no UIM service or modem not ready */
	QMI_PIN_FAILED,	    /* anything else; the message says what */
};

typedef void (*qmi_pin_done)(void *userdata, enum qmi_pin_result result, int retries,
			     const char *message);

struct qmi_modem {
	struct ev_loop *loop;
	char *path; /* the pty link, e.g. /run/qmapd/qmi0 */
	struct qmi_modem_request request;
	struct qmi_modem_callbacks cb;
	void *userdata;

	enum qmi_modem_state state;
	QmiDevice *device;
	QmiClient *dms;
	QmiClient *nas;
	QmiClient *wda;
	QmiClient *uim; /* optional: allocated once ready, if the modem has the service */
	QmiClient *wds; /* the modem's own, for its profiles (sessions have theirs) */
	GCancellable *cancellable; /* cancels everything of the current open attempt */
	ev_timer radio_poll;
	ev_timer retry;
	unsigned attempts;
	char last_error[160];

	int data_interface;		  /* named in the last data format request; -1 none */
	struct qmi_data_format requested; /* the last Set Data Format request */
	struct qmi_data_format granted;	  /* what the modem answered (0 = not reported) */
	struct qmi_data_format format;	  /* in use: the grant within our buffers */
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
	int16_t snr; /* tenths of dB */
	struct qmi_modem_info info;
};

int qmi_modem_new(struct ev_loop *loop, const char *path, const struct qmi_modem_request *request,
		  const struct qmi_modem_callbacks *cb, void *userdata, struct qmi_modem **ret);
struct qmi_modem *qmi_modem_free(struct qmi_modem *qm);

/* The transport says the modem is there / gone. */
void qmi_modem_start(struct qmi_modem *qm);
void qmi_modem_stop(struct qmi_modem *qm);

const char *qmi_modem_state_to_string(enum qmi_modem_state state);

/* Registration and signal again now (after a PIN was verified: the modem registers). */
void qmi_modem_query_radio(struct qmi_modem *qm);

/* qmi-info.c: read the modem's facts and the SIM (on ready); forget them (on reset). */
void qmi_info_query(struct qmi_modem *qm);
void qmi_info_clear(struct qmi_modem_info *info);
/* The SIM's identity again (after a PIN was verified). */
void qmi_info_query_sim(struct qmi_modem *qm);
/* PIN1 locks the SIM now: the modem waits for it. */
bool qmi_info_sim_locked(const struct qmi_modem_info *info);
/* Verify PIN1 through UIM; done() is called exactly once, unless the attempt is cancelled
 * (the modem went away: then done() gets QMI_PIN_NO_SERVICE from the cancellation). */
void qmi_info_verify_pin(struct qmi_modem *qm, const char *pin, qmi_pin_done done, void *userdata);

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
