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
};

int qmi_modem_new(struct ev_loop *loop, const char *path, const struct qmi_modem_request *request,
		  const struct qmi_modem_callbacks *cb, void *userdata, struct qmi_modem **ret);
struct qmi_modem *qmi_modem_free(struct qmi_modem *qm);

/* The transport says the modem is there / gone. */
void qmi_modem_start(struct qmi_modem *qm);
void qmi_modem_stop(struct qmi_modem *qm);

const char *qmi_modem_state_to_string(enum qmi_modem_state state);

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
