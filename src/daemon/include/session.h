/* SPDX-License-Identifier: MIT */
/*
 * One data session per mux: for each IP family of the mux's ip-type a WDS client bound to
 * the mux (bind mux data port, set IP family, start network, get current settings), then the
 * network device configured from what the network assigned. Network-initiated drops turn the
 * carrier off and retry with capped exponential backoff; the device and its configuration
 * stay, and are brought up to date on reconnect. A client-managed mux (config_mux) is
 * connected once: its settings are only reported, and a failure or drop is final.
 */
#ifndef QMAPD_SESSION_H
#define QMAPD_SESSION_H

#include <ev.h>
#include <libqmi-glib.h>
#include <stdbool.h>

#include "config.h"
#include "datapath.h"

enum session_state {
	SESSION_STATE_DISABLED, /* autoconnect = no */
	SESSION_STATE_WAITING,	/* for the modem (absent or negotiating) */
	SESSION_STATE_CONNECTING,
	SESSION_STATE_CONNECTED,
	SESSION_STATE_DISCONNECTING,
	SESSION_STATE_DISCONNECTED, /* dropped by the network; a retry is scheduled */
	SESSION_STATE_FAILED,	    /* the last attempt failed (last_error); a retry is scheduled */
};

/* What the network assigned to one family. */
struct session_settings {
	bool valid;
	struct config_prefix address;
	struct config_prefix gateway; /* prefixlen = full host length; family 0 if none */
	struct config_prefix dns[2];
	uint32_t mtu; /* 0 = not given */
};

struct session_family {
	int family; /* AF_INET / AF_INET6 */
	QmiClientWds *client;
	guint32 handle; /* packet data handle; 0 = not connected */
	gulong indication_id;
	struct session_settings settings; /* last received */
	struct session_settings applied;  /* what is on the device now */
};

/* The modem's reason for the last failed start or network-side drop, as numbers (for
 * ModemManager's error names); have_* false when the modem gave none. */
struct session_end {
	bool have_verbose;
	QmiWdsVerboseCallEndReasonType verbose_type;
	gint16 verbose_reason;
	bool have_reason;
	QmiWdsCallEndReason reason;
	bool dropped; /* by the network after the session was up (else: the start failed) */
};

struct session;

struct session_callbacks {
	void (*on_state)(void *userdata, struct session *s);
};

struct session {
	struct ev_loop *loop;
	struct rtnl *rtnl; /* addresses, routes and MTU of the mux's device */
	struct datapath *dp;
	struct mux *mux;
	struct config_mux cfg;
	struct session_callbacks cb;
	void *userdata;

	QmiDevice *device;  /* borrowed from the modem while it is ready */
	int data_interface; /* bInterfaceNumber to bind the mux to; -1 unknown */
	bool refused;	    /* the network refused the last attempt for a reason that
			       retrying soon will not change (slower retries) */
	GCancellable *cancellable;
	enum session_state state;
	struct session_family fam[2]; /* [0] IPv4, [1] IPv6, used per ip-type */
	unsigned n_fam;
	unsigned step_family; /* family being connected */
	char last_error[160];
	struct session_end last_end;
	unsigned attempts;
	ev_timer retry;
	bool free_when_stopped;
	unsigned pending_stops;
};

int session_new(struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp, struct mux *mux,
		const struct config_mux *cfg, const struct session_callbacks *cb, void *userdata,
		struct session **ret);
/* Stop networks and release clients (asynchronously), then free. NULL-safe. */
void session_free_async(struct session *s);

/* The modem is ready (data format granted): connect, binding the mux to the data
 * interface (bInterfaceNumber, -1 unknown). */
void session_modem_ready(struct session *s, QmiDevice *device, int data_interface);
/* The modem went away: clients are gone with it; carrier off, configuration kept. */
void session_modem_lost(struct session *s);

/* Seconds until the next connection attempt, or -1. */
double session_retry_in(const struct session *s);
const char *session_state_to_string(enum session_state state);
/* Sessions still stopping (for a clean shutdown). */
unsigned session_stops_pending(void);

#endif
