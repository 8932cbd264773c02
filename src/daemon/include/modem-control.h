/* SPDX-License-Identifier: MIT */
/*
 * A modem's control plane as modem.c drives it, QMI or MBIM alike: one ops table per control
 * plane (src/daemon/qmi/qmi-control.c, src/daemon/mbim/mbim-control.c) behind a neutral
 * handle, so that nothing outside those folders sees libqmi or libmbim. The control plane
 * opens the modem through its proxy on the wdm bridge's pty link, tells modem.c when sessions
 * may connect and when the modem is lost, makes the sessions of its muxes (session.h), and
 * describes the modem in the neutral model (modem-model.h).
 */
#ifndef QMAPD_MODEM_CONTROL_H
#define QMAPD_MODEM_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "modem-model.h"
#include "qmap.h"

/* A set of mux ids, a bit each: MODEM_MUX_SET_WORDS words. */
#define MODEM_MUX_SET_WORDS ((CONFIG_MUX_ID_MAX + 64) / 64)
static inline bool modem_mux_set_has(const uint64_t *set, unsigned id)
{
	return id <= CONFIG_MUX_ID_MAX && (set[id / 64] & (UINT64_C(1) << (id % 64)));
}
static inline void modem_mux_set_add(uint64_t *set, unsigned id)
{
	if (id <= CONFIG_MUX_ID_MAX)
		set[id / 64] |= UINT64_C(1) << (id % 64);
}

struct ev_loop;
struct rtnl;
struct datapath;
struct mux;
struct session;
struct session_callbacks;

/* The data format the modem granted (QMI WDA; MBIM has NTB parameters from the transport). */
struct modem_data_format {
	enum qmap_version version;
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t ul_max_size;
	uint32_t ul_max_datagrams;
	uint32_t dl_min_padding; /* zero bytes the modem may put between downlink frames */
};

/* What modem.c asks of the control plane: how long an open may take (QMI and MBIM), and the
 * data format (QMI; MBIM ignores the rest). */
struct modem_control_request {
	/* seconds for the modem to answer the open (QMI CTL, MBIM OPEN): [device] open-timeout */
	uint32_t open_timeout;
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t ul_max_size; /* also the OUT buffers' size: no larger uplink grant is used */
	uint32_t ul_max_datagrams;
	uint32_t dl_buffer_size; /* receive buffers' room: no larger downlink grant is used */
	bool try_qmapv5;
};

struct modem_control_callbacks {
	/* Sessions can start. format: the granted data format to apply first (QMI), or NULL
	 * (MBIM: the transport negotiated it). */
	void (*on_ready)(void *userdata, const struct modem_data_format *format);
	/* Open or negotiation failed, or the device went away; the control plane retries. */
	void (*on_lost)(void *userdata);
	/* The control channel died under a modem that is still there (its proxy went away)
	 * and is being reopened at once: the sessions keep their state and carrier and are
	 * taken over at the next on_ready; on_lost follows instead if the reopen fails. NULL:
	 * on_lost is called. */
	void (*on_reopen)(void *userdata);
	/* The data interface's bInterfaceNumber, -1 if unknown (QMI's Endpoint Info). Asked
	 * when a request is built: the transport may learn it after the modem appeared. */
	int (*data_interface)(void *userdata);
};

/*
 * The modem as its control plane knows it, for D-Bus and the manager. Strings are NULL or ""
 * when unknown, borrowed from the control plane (valid until it next runs).
 */
struct modem_view {
	bool mbim; /* the control port speaks MBIM (else QMI) */
	enum modem_control_state state;
	bool reopening; /* on_reopen was called, on_ready or on_lost not yet: the modem is
			 * there as it was, its control channel is on its way back */
	const char *manufacturer, *model, *revision, *imei, *iccid, *imsi;
	enum modem_registration registration;
	enum modem_access_technology access_technology;
	const char *operator_code, *operator_desc;
	bool have_signal;
	int rssi;		 /* dBm */
	bool tells_registration; /* registration is queried (QMI: NAS client; MBIM: always) */
	struct modem_info info;
	uint16_t usb_vid, usb_pid; /* the USB device's; 0 unknown (the sim) */
	/* Messaging: the control plane reads and sends SMS (QMI: WMS client). sms_received
	 * counts the modem's "new message stored" indications: a change means list again. */
	bool tells_sms;
	unsigned sms_received;
	/* The serving cell: the control plane can tell it (QMI: NAS Get Serving System; basic
	 * MBIM cannot), and what it says now. */
	bool tells_cell;
	struct modem_cell cell;
	const char *control_port;   /* the kernel's cdc-wdm name for it; NULL unknown */
	struct modem_signal signal; /* the last detailed measurement; none valid unknown */
};

/* The outcome of a PIN verification, in the terms clients need. */
enum modem_pin_result {
	MODEM_PIN_OK,
	MODEM_PIN_WRONG,       /* retries left in retries */
	MODEM_PIN_BLOCKED,     /* PUK needed now */
	MODEM_PIN_NOT_NEEDED,  /* PIN1 disabled (verify, change), or already as asked */
	MODEM_PIN_SIM_BLOCKED, /* the PUK is used up too: no code opens the SIM again */
	MODEM_PIN_NO_SERVICE,  /* the modem cannot take a PIN now (not ready, no SIM service) */
	MODEM_PIN_FAILED,      /* anything else; the message says what */
};

/* What is done with a SIM code (ModemManager's SendPin, SendPuk, EnablePin, ChangePin). */
enum modem_pin_op {
	MODEM_PIN_OP_VERIFY,  /* code: PIN1 */
	MODEM_PIN_OP_UNBLOCK, /* code: PUK1, new_code: the new PIN1 */
	MODEM_PIN_OP_ENABLE,  /* code: PIN1; PIN1 guards the SIM from now on */
	MODEM_PIN_OP_DISABLE, /* code: PIN1 */
	MODEM_PIN_OP_CHANGE,  /* code: PIN1, new_code: the new PIN1 */
};

/* retries: what the modem says is left of the code that was wrong (PIN1, or PUK1 with
 * MODEM_PIN_OP_UNBLOCK), -1 unknown. */
typedef void (*modem_pin_done)(void *userdata, enum modem_pin_result result, int retries,
			       const char *message);

/* A power change done: r 0, or -errno with message saying why (the modem's words). */
typedef void (*modem_power_done)(void *userdata, int r, const char *message);

/* A message operation done: r 0, or -errno with message saying why (the modem's words). */
typedef void (*modem_sms_done)(void *userdata, int r, const char *message);
/* The messages the modem stores: n of them in msgs (valid during the call). */
typedef void (*modem_sms_list_done)(void *userdata, int r, const char *message,
				    const struct modem_sms *msgs, size_t n);
/* A request to the modem done: r 0, or -errno with message saying why (the modem's words);
 * -EOPNOTSUPP: the modem (or its control plane) cannot do it. */
typedef void (*modem_done)(void *userdata, int r, const char *message);

/* A network scan done: as modem_done, with the networks found (valid during the call). */
typedef void (*modem_scan_done)(void *userdata, int r, const char *message,
				const struct modem_network *networks, size_t n);

/* The network's time: as modem_done, t valid during the call when r is 0. */
typedef void (*modem_time_done)(void *userdata, int r, const char *message,
				const struct modem_network_time *t);

struct modem_control;

struct modem_control_ops {
	/* The transport says the modem is there / gone. */
	void (*start)(struct modem_control *c);
	void (*stop)(struct modem_control *c);
	void (*free)(struct modem_control *c);
	enum modem_control_state (*state)(const struct modem_control *c);
	void (*view)(const struct modem_control *c, struct modem_view *ret);
	/* Fill status's "modem" object (modem.h); dp for what the transport negotiated. */
	void (*status)(const struct modem_control *c, struct datapath *dp, json_t *modem);
	/* A session for a mux, and telling it the modem is ready (when it is, or becomes so). */
	int (*session_new)(struct modem_control *c, struct ev_loop *loop, struct rtnl *rtnl,
			   struct datapath *dp, struct mux *mux, const struct config_mux *cfg,
			   const struct session_callbacks *cb, void *userdata,
			   struct session **ret);
	void (*session_ready)(struct modem_control *c, struct session *s);
	/* Every session was told the modem is ready (session_ready): what an earlier qmapd
	 * left in the modem for muxes that are not here now is let go. with_session: the mux
	 * ids that have a session. NULL: nothing to do. */
	void (*sessions_ready)(struct modem_control *c, const uint64_t *with_session);
	/* A SIM code operation (enum modem_pin_op); done() is called exactly once (possibly at
	 * once). NULL: not supported. A SIM that opens up makes the control plane read the SIM
	 * and the radio again. */
	void (*pin)(struct modem_control *c, enum modem_pin_op op, const char *code,
		    const char *new_code, modem_pin_done done, void *userdata);
	/* Radio on (online) or off (low power: the modem deregisters, no session connects);
	 * done() is called exactly once (possibly at once). modem_info.power then follows
	 * what the modem reports (QMI: DMS Get Operating Mode; MBIM: RADIO_STATE). */
	void (*set_power)(struct modem_control *c, bool on, modem_power_done done, void *userdata);
	/* Messaging (NULL: not supported); each done() is called exactly once (possibly at
	 * once). The modem's messages in every storage it has, 3GPP only (QMI: WMS List
	 * Messages and Raw Read). */
	void (*sms_list)(struct modem_control *c, modem_sms_list_done done, void *userdata);
	/* Send one SMS-SUBMIT PDU (with its SMSC address in front) now (QMI: WMS Raw Send). */
	void (*sms_send)(struct modem_control *c, const uint8_t *pdu, size_t len,
			 modem_sms_done done, void *userdata);
	/* Delete one stored message (QMI: WMS Delete). */
	void (*sms_delete)(struct modem_control *c, enum modem_sms_storage storage, uint32_t index,
			   modem_sms_done done, void *userdata);
	/* The modes the modem may use (QMI: NAS System Selection Preference's mode
	 * preference); modem_info.current_modes then follows what the modem reports. preferred
	 * is MODEM_MODE_NONE or one of allowed. NULL: not supported. done() exactly once. */
	void (*set_modes)(struct modem_control *c, enum modem_mode allowed,
			  enum modem_mode preferred, modem_done done, void *userdata);
	/* The LTE bands it may use (bit band - 1, within modem_info.lte_bands). NULL: not
	 * supported. */
	void (*set_bands)(struct modem_control *c, const uint64_t lte_bands[MODEM_LTE_BAND_WORDS],
			  modem_done done, void *userdata);
	/* Scan for networks (minutes on a real modem). NULL: not supported. */
	void (*scan)(struct modem_control *c, modem_scan_done done, void *userdata);
	/* Register in the network operator_id (MCC+MNC), or "" to let the modem choose
	 * (automatic): -EACCES when the network denies it. NULL: not supported. */
	void (*register_network)(struct modem_control *c, const char *operator_id, modem_done done,
				 void *userdata);
	/* Measure the signal again now (modem_view.signal follows). NULL: not supported. */
	void (*refresh_signal)(struct modem_control *c);
	/* The network's time now (QMI: NAS Get Network Time); modem_info's zone follows. NULL:
	 * not supported. */
	void (*network_time)(struct modem_control *c, modem_time_done done, void *userdata);
	/* The modem's function was reset behind the control plane's back and opened again (the
	 * MBIM wdm bridge, wdm.h): what it held is gone; a ready control plane opens again with
	 * its sessions kept, to be taken over or started again (on_reopen). NULL: not needed. */
	void (*function_reset)(struct modem_control *c);
};

struct modem_control {
	const struct modem_control_ops *ops;
	void *impl; /* the control plane's own: struct qmi_modem, struct mbim_modem */
};

/* Make the control plane for a modem whose control link (the pty) is path; not started. */
int qmi_control_new(struct ev_loop *loop, const char *path,
		    const struct modem_control_request *request,
		    const struct modem_control_callbacks *cb, void *userdata,
		    struct modem_control **ret);
int mbim_control_new(struct ev_loop *loop, const char *path,
		     const struct modem_control_request *request,
		     const struct modem_control_callbacks *cb, void *userdata,
		     struct modem_control **ret);

#endif
