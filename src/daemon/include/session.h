/* SPDX-License-Identifier: MIT */
/*
 * One data session per mux, as the rest of the daemon sees it: its state, per IP family what
 * the network assigned and what is on the device, the last error and the modem's reason, and
 * the reconnect timer. Two control planes fill it in: QMI (qmi-session.c: per family a WDS
 * client bound to the mux) and MBIM (mbim-session.c: one CONNECT per session id), each
 * keeping its own part behind a pointer of its own, so this header names neither. Both share
 * the code here: the state changes, the device configuration from the network's settings
 * (addresses, default routes, MTU), and the capped exponential backoff. Status, qmapctl and
 * D-Bus read only the common part (docs/ARCHITECTURE.md "Sessions").
 *
 * Network-initiated drops turn the carrier off and retry with capped exponential backoff;
 * the device and its configuration stay, and are brought up to date on reconnect. A
 * client-managed mux (config_mux) is connected once: its settings are only reported, and a
 * failure or drop is final.
 */
#ifndef QMAPD_SESSION_H
#define QMAPD_SESSION_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "datapath.h"
#include "modem-model.h"

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
	/* Nonzero while this family is connected: QMI's packet data handle; MBIM sets 1. */
	uint32_t handle;
	struct session_settings settings; /* last received */
	struct session_settings applied;  /* what is on the device now */
};

struct session;
struct qmi_session;
struct mbim_session;

struct session_callbacks {
	void (*on_state)(void *userdata, struct session *s);
};

/* What the control plane behind a session does (qmi-session.c, mbim-session.c). */
struct session_ops {
	void (*connect)(struct session *s); /* start an attempt (the retry timer calls it) */
	void (*modem_lost)(struct session *s);
	void (*control_reopen)(struct session *s);
	void (*free_async)(struct session *s);
};

struct session {
	struct ev_loop *loop;
	struct rtnl *rtnl; /* addresses, routes and MTU of the mux's device */
	struct datapath *dp;
	struct mux *mux;
	struct config_mux cfg;
	struct session_callbacks cb;
	void *userdata;
	const struct session_ops *ops;

	bool refused; /* the network refused the last attempt for a reason that retrying soon
			 will not change (slower retries) */
	enum session_state state;
	struct session_family fam[2]; /* [0] IPv4, [1] IPv6, used per ip-type */
	unsigned n_fam;
	char last_error[160];
	struct session_end last_end; /* the modem's reason (modem-model.h), for D-Bus errors */
	unsigned attempts;
	ev_timer retry;
	unsigned pending_stops;
	/* Freed for a restart: left up in the modem for the next qmapd (session_set_handover()). */
	bool handover;
	/* Kept over a reopen of the control channel and not taken over yet: nothing can stop it
	 * in the modem meanwhile, so a stop waits for it (session_taking_over()). */
	bool taking_over;

	/* The control plane's own part: one of them is set. */
	struct qmi_session *qmi;   /* qmi-session.c: device, WDS clients, cancellable */
	struct mbim_session *mbim; /* mbim-session.c */
};

/* Stop networks and release clients (asynchronously), then free. NULL-safe. */
void session_free_async(struct session *s);
/* The modem went away: clients are gone with it; carrier off, configuration kept. */
void session_modem_lost(struct session *s);
/* The modem's control channel is being reopened (its proxy went away), the modem is still
 * there: a connected session keeps its state, carrier and addresses, lets go of the dead
 * channel's objects (nothing can be released through it) and is taken over when the modem
 * is ready again; any other is lost as with session_modem_lost(). */
void session_control_reopen(struct session *s);
/* Kept over a reopen and not yet taken over through the new channel. NULL-safe. */
bool session_taking_over(const struct session *s);

/* Seconds until the next connection attempt, or -1. */
double session_retry_in(const struct session *s);
const char *session_state_to_string(enum session_state state);
/* Sessions still stopping (for a clean shutdown). */
unsigned session_stops_pending(void);

/*
 * A restart, not a stop (docs/ARCHITECTURE.md "Restart and crash"): from now on freeing a
 * session leaves it up in the modem, its client ids allocated and recorded for the next
 * qmapd to adopt. One flag per process: qmapd exits right after.
 */
void session_set_handover(bool on);
bool session_handover(void);

/* ---- for the control planes (session.c) ---- */

/* Fill the common part (families from cfg's ip-type, the retry timer calling ops->connect). */
void session_init(struct session *s, struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp,
		  struct mux *mux, const struct config_mux *cfg, const struct session_callbacks *cb,
		  void *userdata, const struct session_ops *ops);
void session_set_state(struct session *s, enum session_state state);
/* last_error = "[IPv4 |IPv6 ]what: why", logged. f may be NULL. */
void session_set_error(struct session *s, const struct session_family *f, const char *what,
		       const char *why);
const char *session_family_name(const struct session_family *f);
/* Put the connected families' settings on the mux's device (addresses, default routes, MTU);
 * a client-managed mux only records them. */
void session_apply(struct session *s);
/* Next attempt after the capped exponential backoff (slower after a refusal). */
void session_schedule_retry(struct session *s);
/* A session began / finished stopping (session_stops_pending()). */
void session_stop_begin(void);
void session_stop_end(void);

#endif
