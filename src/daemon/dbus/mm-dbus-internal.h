/* SPDX-License-Identifier: MIT */
/* What the files of the D-Bus component share: the bus, its modems and their bearers. */
#ifndef QMAPD_MM_DBUS_INTERNAL_H
#define QMAPD_MM_DBUS_INTERNAL_H

#include <gio/gio.h>
#include <libmm-glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "mm-dbus.h"
#include "modem-model.h"

#define MMD_PATH     "/org/freedesktop/ModemManager1"
#define MMD_PATH_MAX 80
/* How long a Connect waits for the session (it retries nothing: one attempt per family). */
#define MMD_CONNECT_TIMEOUT_SECONDS 60
/* How long Simple.Connect waits for a modem that is not registered yet (ModemManager waits
 * 60 s for a 3GPP modem to register), then MobileEquipment.NetworkTimeout. */
#define MMD_REGISTRATION_TIMEOUT_SECONDS 60

struct modem;
struct mmd_modem;

/* One bearer: a mux of the modem, or a bearer created over D-Bus waiting to be one. */
struct mmd_bearer {
	struct mmd_bearer *next;
	struct mmd_modem *mm;
	char path[MMD_PATH_MAX];
	unsigned index; /* path's number: MMD_PATH "/Bearer/<index>" */
	MmGdbusBearer *iface;
	bool exported;
	bool from_dbus;	       /* created over D-Bus: its mux comes and goes with Connect */
	unsigned mux_id;       /* 0 = no mux (a D-Bus bearer not connected) */
	struct config_mux cfg; /* what its mux is created with (from_dbus) */
	bool allow_roaming;    /* its allow-roaming (from_dbus; default true) */
	GDBusMethodInvocation *connect; /* a Connect waiting for the session */
	bool connect_simple;		/* ... from Simple.Connect: answers with the path */
	gint64 connect_deadline;	/* g_get_monotonic_time() at which it gives up */
	bool was_connected;
	/* Stats: Connect calls and their failures, time connected (monotonic, us). */
	unsigned attempts, failed_attempts;
	gint64 connected_since;
	gint64 connected_total;
};

/* A Simple.Connect waiting for the modem to register. */
struct mmd_wait {
	struct mmd_wait *next;
	GDBusMethodInvocation *inv;
	struct config_mux cfg;
	bool allow_roaming;
	gint64 deadline; /* g_get_monotonic_time() */
};

/*
 * A method call waiting for the modem (modes, bands, scan, registration); it outlives its
 * modem object if that goes first: mm is NULL then, and the call is answered Aborted.
 */
struct mmd_call {
	struct mmd_modem *mm;
	struct mm_dbus *bus;
	GDBusMethodInvocation *inv;
	struct mmd_call **slot; /* where the modem object keeps it */
};

/* A call for mm kept in *slot (which must be free), or NULL (inv answered: out of memory). */
struct mmd_call *mmd_call_new(struct mmd_modem *mm, GDBusMethodInvocation *inv,
			      struct mmd_call **slot);
/* The modem answered: the call leaves its slot. Returns whether its modem is still there
 * (else inv was answered Aborted and the caller only frees the call). */
bool mmd_call_done(struct mmd_call *c);
/* The modem object goes: its waiting call is left to the modem's answer. */
void mmd_call_orphan(struct mmd_call **slot);

struct mmd_modem {
	struct mmd_modem *next;
	struct mm_dbus *bus;
	struct modem *modem;
	char path[MMD_PATH_MAX]; /* "" while not exported */
	MmGdbusObjectSkeleton *object;
	MmGdbusModem *iface;
	MmGdbusModemSimple *simple;
	MmGdbusModem3gpp *m3gpp;
	MmGdbusSim *sim;
	char sim_path[MMD_PATH_MAX]; /* "" while the SIM is not on the bus */
	struct mmd_bearer *bearers;
	bool disabled; /* Enable(false) */
	/* The muxes of qmapd.conf and qmapctl that Enable(false) stopped: Enable(true) (or
	 * Simple.Connect, which enables) starts them again. */
	struct mmd_parked {
		struct config_mux cfg;
		bool from_config; /* qmapd.conf's (else qmapctl's): stays so for reload */
	} * parked;
	unsigned n_parked;
	struct mmd_wait *waiting;
	MMModemState state;
	struct mmd_pin_call *pin_call; /* a SIM code call waiting for the modem (mm-dbus-sim.c) */
	struct mmd_power_call *power_call; /* a power change waiting (mm-dbus-power.c) */
	struct mmd_messaging *messaging;   /* Messaging and its SMS objects (mm-dbus-messaging.c) */
	struct mmd_location *location;	   /* Location, 3GPP LAC/CI (mm-dbus-location.c) */
	struct mmd_call *modes_call;	   /* SetCurrentModes/Bands waiting (mm-dbus-modes.c) */
	struct mmd_call *m3gpp_call;	   /* Scan or Register waiting (mm-dbus-3gpp.c) */
	MmGdbusModemSignal *signal; /* exported where the modem measures (mm-dbus-signal.c) */
	guint signal_timer;	    /* Setup(rate): the polling */
	MmGdbusModemTime *time; /* on the object once the modem tells the time (mm-dbus-time.c) */
	bool time_exported;
	struct mmd_call *time_call; /* GetNetworkTime waiting */
};

struct mm_dbus {
	struct manager *manager;
	GDBusConnection *conn;
	char *address;	   /* where the bus is: connected to again after it went away */
	gulong closed_id;  /* the connection's "closed" handler */
	guint retry_id;	   /* the timeout of the next connection attempt */
	unsigned retry_ms; /* its delay, doubled per failure up to MMD_RETRY_MAX_MS */
	bool lost;	   /* the bus went away: connect failures until it is back are quiet */
	guint ready_id;	   /* the timeout after which ready does not wait for the bus */
	void (*ready)(void *userdata); /* once: the name owned, refused or not reachable */
	void *ready_data;
	guint owner_id;
	bool owned; /* the name was ours: losing it later is not "no bus" */
	GCancellable *cancellable;
	GDBusObjectManagerServer *om;
	MmGdbusOrgFreedesktopModemManager1 *iface;
	struct mmd_modem *modems;
	unsigned next_modem_index;
	unsigned next_bearer_index;
	unsigned next_sim_index;
	unsigned next_sms_index;
	guint sync_id; /* the idle source of a pending sync */
	guint poll_id; /* radio state (signal, registration) is polled, not signalled */
	uint64_t calls, rejected, invalid, connects, connect_failures;
	GHashTable *errors; /* error name -> count (GUINT_TO_POINTER) */
	guint polkit_watch; /* polkit's name on the bus */
	bool polkit;	    /* polkitd is on the bus: it authorizes (mm-dbus-auth.c) */
	bool polkit_failed; /* ... but failed to answer once (logged once) */
	char admin_group[sizeof(((struct config_device *)0)->admin_group)]; /* "" = root only */
};

/* Bring every modem object up to date, soon (from an idle source: never inside a callback
 * of the modem, whose muxes a sync may create or delete). */
void mmd_schedule_sync(struct mm_dbus *d);

/* mm-dbus-modem.c */
struct mmd_modem *mmd_modem_new(struct mm_dbus *d, struct modem *modem);
void mmd_modem_free(struct mmd_modem *mm);
void mmd_modem_sync(struct mmd_modem *mm);
/* The bus went away: its bearers and SIM leave the connection (the modem object goes with
 * the object manager's); the next sync exports them again. */
void mmd_modem_bus_lost(struct mmd_modem *mm);
/* Start the muxes Enable(false) stopped again: the modem is enabled. */
void mmd_modem_enable(struct mmd_modem *mm);

/* mm-dbus-bearer.c */
/* index: the object's number (a D-Bus bearer the last run recorded), or -1 for a new one. */
struct mmd_bearer *mmd_bearer_new(struct mmd_modem *mm, bool from_dbus, unsigned mux_id,
				  const struct config_mux *cfg, int index);
void mmd_bearer_free(struct mmd_bearer *b, const char *why);
void mmd_bearer_export(struct mmd_bearer *b);
void mmd_bearer_unexport(struct mmd_bearer *b);
void mmd_bearer_sync(struct mmd_bearer *b);
/* Connect a D-Bus bearer: its mux is created; inv is answered once the session is up or
 * has failed. Answers inv itself on an immediate error. */
void mmd_bearer_connect(struct mmd_bearer *b, GDBusMethodInvocation *inv, bool simple);
/* Remove a D-Bus bearer's mux (idempotent). 0, or -errno with a reason in err. */
int mmd_bearer_disconnect(struct mmd_bearer *b, char *err, size_t errlen);
struct mmd_bearer *mmd_bearer_find(struct mmd_modem *mm, const char *path);
/* A bearer's settings from a ModemManager a{sv} (CreateBearer, Simple.Connect); false with
 * an InvalidArgs error in *error. */
bool mmd_bearer_config(struct mmd_modem *mm, GVariant *dict, bool simple, struct config_mux *cfg,
		       bool *allow_roaming, GError **error);
/* A D-Bus bearer with allow-roaming=false on a modem registered roaming: it may not connect,
 * and is disconnected if it is (ModemManager's mm-base-bearer.c). */
bool mmd_bearer_roaming_forbidden(const struct mmd_bearer *b);

/* Answer with error and count it by its D-Bus name (takes nothing: error stays the caller's). */
void mmd_return_error(struct mm_dbus *d, GDBusMethodInvocation *inv, const GError *error);
/* mm-dbus-sim.c: the SIM's methods (SendPin). */
void mmd_sim_init(struct mmd_modem *mm);
void mmd_sim_free(struct mmd_modem *mm);
/* Whether the SIM waits for its PIN or PUK (what makes the modem LOCKED), read from the modem
 * now rather than from the last sync. */
bool mmd_sim_locked(const struct mmd_modem *mm);
/* Refuse a call that needs the SIM unlocked: SimPin / SimPuk, as ModemManager does. */
void mmd_reject_locked(struct mmd_modem *mm, GDBusMethodInvocation *inv);

/* mm-dbus-power.c: SetPowerState (low power / on through the control plane). */
void mmd_power_init(struct mmd_modem *mm);
void mmd_power_free(struct mmd_modem *mm);
/* The modem reports low power now. */
bool mmd_power_low(const struct mmd_modem *mm);
/* Power up, then enable and answer inv (Enable(true)); inv NULL: power up only, nobody to
 * answer (Simple.Connect, whose connect waits for registration). */
void mmd_power_up_enable(struct mmd_modem *mm, GDBusMethodInvocation *inv);

/* mm-dbus-messaging.c: Modem.Messaging, while the control plane reads and sends SMS. */
void mmd_messaging_init(struct mmd_modem *mm);
void mmd_messaging_free(struct mmd_modem *mm);
/* Put the interface on the modem object once the modem has messaging, list the modem's
 * messages when it said a new one arrived; mm->object exported. */
void mmd_messaging_sync(struct mmd_modem *mm);
/* The modem object leaves the bus: so do its SMS objects. */
void mmd_messaging_unexport(struct mmd_modem *mm);
/* The SMS object at path of this modem, or NULL. */
struct mmd_sms *mmd_messaging_find(struct mmd_modem *mm, const char *path);

/* mm-dbus-location.c: Modem.Location with the 3GPP LAC/CI source, while the control plane
 * tells the serving cell. */
void mmd_location_init(struct mmd_modem *mm);
void mmd_location_free(struct mmd_modem *mm);
/* Put the interface on the modem object once it can tell its cell; the Location property
 * follows the cell while signalled. mm->object exported. */
void mmd_location_sync(struct mmd_modem *mm);
void mmd_location_unexport(struct mmd_modem *mm);
/* MCC,MNC,LAC,CI,TAC (hex) as ModemManager writes the 3GPP location; NULL without a cell or
 * operator (pure; g_free() it). */
char *mmd_location_3gpp_string(const char *operator_code, const struct modem_cell *cell);

/* mm-dbus-sms.c: one SMS object (SMS/N), received (from the modem's storage) or created. */
struct mmd_sms {
	struct mmd_sms *next;
	struct mmd_modem *mm;
	char path[MMD_PATH_MAX]; /* "" while not on the bus */
	MmGdbusSms *iface;
	bool stored; /* in the modem's storage, at storage/index */
	enum modem_sms_storage storage;
	uint32_t index;
	bool busy; /* a Send or Delete waits for the modem */
};
/* A received message from the modem's storage, decoded; NULL (logged) when the PDU is not
 * an SMS-DELIVER qmapd can read. */
struct mmd_sms *mmd_sms_new_received(struct mmd_modem *mm, const struct modem_sms *m);
/* A message to send, from Messaging.Create's properties; NULL with *error set. */
struct mmd_sms *mmd_sms_new_created(struct mmd_modem *mm, GVariant *props, GError **error);
void mmd_sms_export(struct mmd_sms *s);
void mmd_sms_unexport(struct mmd_sms *s);
void mmd_sms_free(struct mmd_sms *s);

/* mm-dbus-auth.c: state-changing methods need polkit's authorization for ModemManager's
 * action (polkit on the bus), else root or qmapd.conf's admin-group. The action ids are
 * ModemManager's (data/org.freedesktop.ModemManager1.policy.in), shipped by qmapd in
 * polkit/org.freedesktop.ModemManager1.policy. */
#define MMD_AUTH_MANAGER_CONTROL "org.freedesktop.ModemManager1.Control"
#define MMD_AUTH_DEVICE_CONTROL	 "org.freedesktop.ModemManager1.Device.Control"
#define MMD_AUTH_MESSAGING	 "org.freedesktop.ModemManager1.Messaging"
#define MMD_AUTH_LOCATION	 "org.freedesktop.ModemManager1.Location"
#define MMD_AUTH_TIME		 "org.freedesktop.ModemManager1.Time"
#define MMD_AUTH_VOICE		 "org.freedesktop.ModemManager1.Voice"
#define MMD_AUTH_USSD		 "org.freedesktop.ModemManager1.USSD"
#define MMD_AUTH_FIRMWARE	 "org.freedesktop.ModemManager1.Firmware"
/* The polkit action a method of one of ModemManager's interfaces needs, NULL for a read-only
 * one (pure; anything not known to be read-only needs one). A new method needs nothing here
 * unless ModemManager asks another action than Device.Control for it. */
const char *mmd_auth_action(const char *iface, const char *method);

/* mm-dbus-modes.c: SetCurrentModes, SetCurrentBands (Modem). */
void mmd_modes_init(struct mmd_modem *mm);
void mmd_modes_free(struct mmd_modem *mm);

/* mm-dbus-3gpp.c: Scan, Register (Modem3gpp). */
void mmd_3gpp_init(struct mmd_modem *mm);
void mmd_3gpp_free(struct mmd_modem *mm);

/* mm-dbus-signal.c: the Signal interface, on modems whose control plane measures. */
void mmd_signal_init(struct mmd_modem *mm);
void mmd_signal_free(struct mmd_modem *mm);
/* Whether the modem object carries it. */
bool mmd_signal_exported(const struct mmd_modem *mm);
/* Its properties from the last measurement (with a rate set; else they stay empty). */
void mmd_signal_sync(struct mmd_modem *mm);
/* The modem left the bus: polling stops. */
void mmd_signal_stop(struct mmd_modem *mm);

/* mm-dbus-time.c: the Time interface, added to the modem object once the modem has shown it
 * tells the network's time (as ModemManager checks support first). */
void mmd_time_init(struct mmd_modem *mm);
void mmd_time_free(struct mmd_modem *mm);
void mmd_time_sync(struct mmd_modem *mm);

/* Check the callers of skeleton's state-changing methods / stop doing so before it goes:
 * every handler of a watched skeleton runs only once its caller is allowed. */
void mmd_auth_watch(struct mm_dbus *d, gpointer skeleton);
void mmd_auth_unwatch(struct mm_dbus *d, gpointer skeleton);
/* A connection to the bus is up (watch polkit's name on it) / gone. */
void mmd_auth_bus_up(struct mm_dbus *d);
void mmd_auth_bus_down(struct mm_dbus *d);

/* Connect every method of skeleton that has no handler yet to one that answers
 * Core.Unsupported; call once all of its handlers are connected. */
void mmd_answer_unsupported(struct mm_dbus *d, gpointer skeleton);

/* Answer with a ModemManager error and count it. */
void mmd_reject(struct mm_dbus *d, GDBusMethodInvocation *inv, GQuark domain, gint code,
		const char *fmt, ...) G_GNUC_PRINTF(5, 6);

#endif
