/* SPDX-License-Identifier: MIT */
/* The modem's MBIM side (mbim-modem.h): open through mbim-proxy, caps, SIM, radio, attach. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log-modem.h"
#include "mbim-modem.h"

#define MBIM_TIMEOUT_SECONDS	10
#define MBIM_ATTACH_TIMEOUT	60 /* the network may take long to attach */
#define MBIM_RADIO_POLL_SECONDS 30.0
#define MBIM_RETRY_MIN_SECONDS	1.0
#define MBIM_RETRY_MAX_SECONDS	30.0
/* A proxy lost again within this long after the last loss is not respawned at once. */
#define MBIM_PROXY_LOSS_PACE_SECONDS 10.0
/* Proxies lost by a reopen's own opens before the kept sessions are given up. */
#define MBIM_PROXY_REOPEN_TRIES 3
#define MBIM_SIM_POLL_SECONDS	5.0 /* a SIM that is not ready yet, with the device open */

const char *mbim_modem_state_to_string(enum mbim_modem_state state)
{
	switch (state) {
	case MBIM_MODEM_STATE_CLOSED:
		return "absent";
	case MBIM_MODEM_STATE_OPENING:
		return "initializing";
	case MBIM_MODEM_STATE_READY:
		return "ready";
	case MBIM_MODEM_STATE_FAILED:
		return "failed";
	}
	return "unknown";
}

static void replace_string(char **dst, const char *src)
{
	free(*dst);
	*dst = src && *src ? strdup(src) : NULL;
}

static void mbim_modem_reset(struct mbim_modem *mm)
{
	bool removed = mm->device && !mm->removed_id; /* device_removed() came */

	if (mm->removed_id)
		g_signal_handler_disconnect(mm->device, mm->removed_id);
	mm->removed_id = 0;
	if (mm->cancellable) {
		g_cancellable_cancel(mm->cancellable);
		g_clear_object(&mm->cancellable);
	}
	ev_timer_stop(mm->loop, &mm->radio_poll);
	mbim_sms_stop(mm);
	mbim_register_watch_stop(mm);
	if (mm->device && !removed && mbim_device_is_open(mm->device))
		/* Through the proxy this only lets go of our client: the function stays open for
		 * others (mbimcli -p) and is closed by the proxy when nobody is left. */
		mbim_device_close(mm->device, 1, NULL, NULL, NULL);
	g_clear_object(&mm->device);
	mm->state = MBIM_MODEM_STATE_CLOSED;
	mm->sim_wait = false;
}

/* The next open after a failure: capped exponential backoff (a modem that is still booting
 * answers later), from first_delay on the first attempt. */
static void mbim_modem_schedule_retry(struct mbim_modem *mm, double first_delay)
{
	double delay = MBIM_RETRY_MIN_SECONDS * (1u << (mm->attempts < 5 ? mm->attempts : 5));

	if (mm->attempts == 0)
		delay = first_delay;
	if (mm->retry_at_once)
		delay = 0.;
	mm->retry_at_once = false;
	if (delay > MBIM_RETRY_MAX_SECONDS)
		delay = MBIM_RETRY_MAX_SECONDS;
	mm->attempts++;
	ev_timer_stop(mm->loop, &mm->retry);
	ev_timer_set(&mm->retry, delay, 0.);
	ev_timer_start(mm->loop, &mm->retry);
}

static void mbim_modem_fail(struct mbim_modem *mm, const char *what, const char *why)
{
	snprintf(mm->last_error, sizeof(mm->last_error), "%s: %s", what, why);
	log_modem_warning(mm->path, "%s", mm->last_error);
	mbim_modem_reset(mm);
	mm->state = MBIM_MODEM_STATE_FAILED;
	mm->reopening = false; /* the sessions kept over a lost proxy are lost now */
	mbim_modem_schedule_retry(mm, MBIM_RETRY_MIN_SECONDS);
	if (mm->cb.on_lost)
		mm->cb.on_lost(mm->userdata);
}

/*
 * Open the control channel again from scratch after delay, with the modem and its sessions
 * still there: the sessions, told once (tell_sessions), stay up meanwhile and are taken over
 * on ready (on_reopen), or are lost (on_lost) where nobody takes them over.
 */
static void mbim_modem_reopen(struct mbim_modem *mm, double delay, bool tell_sessions)
{
	mbim_modem_reset(mm);
	mm->state = MBIM_MODEM_STATE_FAILED;
	mbim_modem_schedule_retry(mm, delay);
	if (!tell_sessions)
		return;
	mm->reopening = mm->cb.on_reopen != NULL;
	if (mm->cb.on_reopen)
		mm->cb.on_reopen(mm->userdata);
	else if (mm->cb.on_lost)
		mm->cb.on_lost(mm->userdata);
}

/*
 * mbim-proxy went away (killed, crashed, out of memory): libmbim says the device was
 * removed, and it is dead for good, though the function and its sessions are not. The next
 * open, at once, spawns a new proxy; its OPEN does not reach the function, which is open
 * (the wdm bridge answers it: wdm.h), and the sessions, kept up with their carrier
 * meanwhile (on_reopen), are queried and taken over on ready, not activated again.
 */
static void device_removed(MbimDevice *device, gpointer user_data)
{
	struct mbim_modem *mm = user_data;
	ev_tstamp now = ev_now(mm->loop);

	(void)device;
	g_signal_handler_disconnect(mm->device, mm->removed_id);
	mm->removed_id = 0; /* tells reset not to close it */
	mm->proxy_losses++;
	/* The reopen's own open lost its proxy too (it can reach the dying one before that is
	 * gone): the sessions stay kept, the open is tried again with backoff. */
	bool again = mm->state != MBIM_MODEM_STATE_READY && mm->reopening &&
		     mm->reopen_losses < MBIM_PROXY_REOPEN_TRIES;
	if (mm->state != MBIM_MODEM_STATE_READY && !again) {
		/* During an open, or with the SIM waited for, or a proxy that died at every
		 * start of a reopen: that attempt failed, retried with backoff, so that the
		 * proxy is not spawned again and again. */
		mbim_modem_fail(mm, "open through mbim-proxy",
				"mbim-proxy went away (killed or crashed)");
		return;
	}
	mm->reopen_losses = again ? mm->reopen_losses + 1 : 0;
	snprintf(mm->last_error, sizeof(mm->last_error), "%s",
		 again ? "mbim-proxy went away again while the control channel was reopened"
		       : "mbim-proxy went away (killed or crashed)");
	log_modem_warning(mm->path,
			  "%s, %u time%s now: reopening the control channel; the sessions stay "
			  "up in the modem and are taken over",
			  mm->last_error, mm->proxy_losses, mm->proxy_losses == 1 ? "" : "s");
	/* At once, unless the last one was lost just before: no respawning in a loop. */
	double delay = now - mm->last_proxy_loss < MBIM_PROXY_LOSS_PACE_SECONDS
			       ? MBIM_RETRY_MIN_SECONDS
			       : 0.;
	mm->last_proxy_loss = now;
	mbim_modem_reopen(mm, delay, !again); /* again: the sessions were told at the first loss */
}

static void mbim_modem_fail_error(struct mbim_modem *mm, const char *what, GError *error)
{
	mbim_modem_fail(mm, what, error ? error->message : "failed");
}

/* A command's response, or NULL with error set (a COMMAND_DONE with a failure status too). */
static MbimMessage *command_finish(MbimDevice *device, GAsyncResult *res, GError **error)
{
	MbimMessage *resp = mbim_device_command_finish(device, res, error);
	if (resp && !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, error))
		g_clear_pointer(&resp, mbim_message_unref);
	return resp;
}

static void command(struct mbim_modem *mm, MbimMessage *msg, guint timeout, GAsyncReadyCallback cb)
{
	mbim_device_command(mm->device, msg, timeout, mm->cancellable, cb, mm);
	mbim_message_unref(msg);
}

/* ---- registration (status only; also polled) --------------------------------------- */

bool mbim_modem_register_state(struct mbim_modem *mm, MbimMessage *msg, GError **error)
{
	MbimNwError nw_error;
	MbimRegisterState reg;
	MbimDataClass classes;
	g_autofree gchar *provider_id = NULL, *provider_name = NULL;
	/* The answer and the indication carry the same MBIM_REGISTRATION_STATE_INFO. */
	gboolean ok = mbim_message_get_message_type(msg) == MBIM_MESSAGE_TYPE_INDICATE_STATUS
			      ? mbim_message_register_state_notification_parse(
					msg, &nw_error, &reg, NULL, &classes, NULL, &provider_id,
					&provider_name, NULL, NULL, error)
			      : mbim_message_register_state_response_parse(
					msg, &nw_error, &reg, NULL, &classes, NULL, &provider_id,
					&provider_name, NULL, NULL, error);

	if (!ok)
		return false;
	snprintf(mm->registration, sizeof(mm->registration), "%s", mbim_map_registration(reg));
	snprintf(mm->access_technology, sizeof(mm->access_technology), "%s",
		 mbim_map_access_technology(classes));
	mm->operator_name[0] = mm->operator_code[0] = mm->operator_desc[0] = '\0';
	snprintf(mm->operator_desc, sizeof(mm->operator_desc), "%s",
		 provider_name ? provider_name : "");
	if (provider_id && *provider_id) {
		snprintf(mm->operator_code, sizeof(mm->operator_code), "%s", provider_id);
		snprintf(mm->operator_name, sizeof(mm->operator_name), "%s (%s)",
			 provider_name && *provider_name ? provider_name : "unnamed", provider_id);
	}
	return true;
}

static void register_state_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !mbim_modem_register_state(mm, resp, &error))
		log_modem_debug(mm->path, "register state: %s", error->message);
}

static void signal_state_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	guint32 rssi = 99;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !mbim_message_signal_state_response_parse(resp, &rssi, NULL, NULL, NULL, NULL,
							       &error)) {
		log_modem_debug(mm->path, "signal state: %s", error->message);
		return;
	}
	/* MBIM 1.0 10.5.10: 0 is -113 dBm or less, 31 -51 dBm or more, 99 unknown. */
	mm->have_signal = rssi <= 31;
	mm->rssi = mm->have_signal ? -113 + 2 * (int)rssi : 0;
}

/* The radio switches as power. false (error set) when the answer does not parse. */
static bool take_radio_state(struct mbim_modem *mm, MbimMessage *resp, GError **error)
{
	MbimRadioSwitchState hw, sw;

	if (!mbim_message_radio_state_response_parse(resp, &hw, &sw, error))
		return false;
	mm->power = mbim_map_power(hw, sw);
	mm->radio_hw_off = hw != MBIM_RADIO_SWITCH_STATE_ON;
	return true;
}

/* Polled: someone (mbimcli -p, a W_DISABLE line) may switch the radio behind qmapd's back. */
static void radio_poll_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;

	if (mbim_step_cancelled(error))
		return; /* mm may be gone */
	enum mbim_modem_power was = mm->power;
	if (!resp || !take_radio_state(mm, resp, &error)) {
		log_modem_debug(mm->path, "radio state: %s", error->message);
		return;
	}
	if (mm->power != was)
		log_modem_info(mm->path, "power %s (%s)", mbim_map_power_to_string(mm->power),
			       mm->power == MBIM_MODEM_POWER_ON ? "both radio switches on"
			       : mm->radio_hw_off		? "the hardware radio switch is off"
						  : "the software radio switch is off");
}

static void query_register_state(struct mbim_modem *mm)
{
	command(mm, mbim_message_register_state_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		register_state_ready);
	command(mm, mbim_message_signal_state_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		signal_state_ready);
}

void mbim_modem_query_signal(struct mbim_modem *mm)
{
	if (mm->state == MBIM_MODEM_STATE_READY)
		query_register_state(mm);
}

static void mbim_modem_on_radio_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct mbim_modem *mm = w->data;
	query_register_state(mm);
	command(mm, mbim_message_radio_state_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		radio_poll_ready);
}

/* ---- the open sequence ---------------------------------------------------------------- */

static void mbim_modem_ready(struct mbim_modem *mm)
{
	mm->state = MBIM_MODEM_STATE_READY;
	mm->attempts = 0;
	mm->last_error[0] = '\0';
	log_modem_info(mm->path,
		       "MBIM ready: %s, %s, packet service %s, SIM operator %s%s%s%s, "
		       "%u own number%s",
		       mm->firmware ? mm->firmware : "firmware unknown",
		       mm->registration[0] ? mm->registration : "registration unknown",
		       mm->packet_service, mm->sim_operator_id[0] ? mm->sim_operator_id : "unknown",
		       mm->sim_operator_name[0] ? " (" : "", mm->sim_operator_name,
		       mm->sim_operator_name[0] ? ")" : "", mm->n_own_numbers,
		       mm->n_own_numbers == 1 ? "" : "s");
	mm->retry_at_once = false;
	ev_timer_again(mm->loop, &mm->radio_poll);
	mbim_sms_start(mm);
	mbim_register_watch_start(mm);
	mm->reopening = false;
	if (mm->cb.on_ready)
		mm->cb.on_ready(mm->userdata);
}

static void device_services_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	guint32 n = 0;
	g_autoptr(MbimDeviceServiceElementArray) services = NULL;

	if (mbim_step_cancelled(error))
		return;
	/* Only for the log and status: a modem that does not answer still carries data. */
	if (!resp ||
	    !mbim_message_device_services_response_parse(resp, &n, NULL, &services, &error)) {
		log_modem_debug(mm->path, "device services: %s", error->message);
	} else {
		mm->services_known = true;
		mm->qmi_over_mbim = false;
		for (guint32 i = 0; i < n; i++)
			if (mbim_uuid_to_service(&services[i]->device_service_id) ==
			    MBIM_SERVICE_QMI)
				mm->qmi_over_mbim = true;
		log_modem_info(mm->path, "%u device services; QMI over MBIM %s", n,
			       mm->qmi_over_mbim
				       ? "offered, not used: qmapd controls the modem with "
					 "MBIM only"
				       : "not offered");
	}
	mbim_modem_ready(mm);
}

static void packet_service_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	guint32 nw_error = 0;
	MbimPacketServiceState state;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !mbim_message_packet_service_response_parse(resp, &nw_error, &state, NULL,
								 NULL, NULL, &error)) {
		mbim_modem_fail_error(mm, "packet service attach", error);
		return;
	}
	const char *t = mbim_packet_service_state_get_string(state);
	snprintf(mm->packet_service, sizeof(mm->packet_service), "%s", t ? t : "unknown");
	if (state != MBIM_PACKET_SERVICE_STATE_ATTACHED) {
		char why[96];
		snprintf(why, sizeof(why), "%s, nw_error %u (%s)", mm->packet_service, nw_error,
			 mbim_nw_error_get_string(nw_error) ?: "unknown");
		mbim_modem_fail(mm, "packet service attach", why);
		return;
	}
	command(mm, mbim_message_device_services_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		device_services_ready);
}

static void attach(struct mbim_modem *mm)
{
	query_register_state(mm);
	command(mm, mbim_message_packet_service_set_new(MBIM_PACKET_SERVICE_ACTION_ATTACH, NULL),
		MBIM_ATTACH_TIMEOUT, packet_service_ready);
}

static void radio_set_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;

	if (mbim_step_cancelled(error))
		return;
	if (!resp) {
		mbim_modem_fail_error(mm, "radio on", error);
		return;
	}
	/* The answer is the new RADIO_STATE_INFO. */
	if (!take_radio_state(mm, resp, &error))
		log_modem_debug(mm->path, "radio on: %s", error->message);
	log_modem_info(mm->path, "radio switched on");
	attach(mm);
}

static void radio_state_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !take_radio_state(mm, resp, &error)) {
		mbim_modem_fail_error(mm, "radio state", error);
		return;
	}
	if (mm->radio_hw_off) {
		mbim_modem_fail(mm, "radio state", "the hardware radio switch is off");
		return;
	}
	if (mm->power != MBIM_MODEM_POWER_ON) {
		command(mm, mbim_message_radio_state_set_new(MBIM_RADIO_SWITCH_STATE_ON, NULL),
			MBIM_TIMEOUT_SECONDS, radio_set_ready);
		return;
	}
	attach(mm);
}

/* ---- power: RADIO_STATE set ---------------------------------------------------------- */

struct power_ctx {
	struct mbim_modem *mm;
	bool on;
	modem_power_done done;
	void *userdata;
};

/* The answer is the new RADIO_STATE_INFO: that, not what was asked, is the power. */
static void power_set_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct power_ctx ctx = *(struct power_ctx *)user_data;

	g_free(user_data);
	if (mbim_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
		return;
	}
	struct mbim_modem *mm = ctx.mm;
	if (!resp) {
		log_modem_warning(mm->path, "radio %s: %s", ctx.on ? "on" : "off", error->message);
		ctx.done(ctx.userdata, -EIO, error->message);
		return;
	}
	if (!take_radio_state(mm, resp, &error))
		log_modem_debug(mm->path, "radio %s: %s", ctx.on ? "on" : "off", error->message);
	log_modem_info(mm->path, "radio switched %s: power %s", ctx.on ? "on" : "off",
		       mbim_map_power_to_string(mm->power));
	/* On again: attach as at open (registration follows); off: deregistered now. */
	if (ctx.on)
		attach(mm);
	else
		query_register_state(mm);
	ctx.done(ctx.userdata, 0, "");
}

void mbim_modem_set_power(struct mbim_modem *mm, bool on, modem_power_done done, void *userdata)
{
	if (mm->state != MBIM_MODEM_STATE_READY) {
		done(userdata, -EAGAIN, "the modem is not ready");
		return;
	}
	struct power_ctx *ctx = g_new(struct power_ctx, 1);
	MbimMessage *msg = mbim_message_radio_state_set_new(
		on ? MBIM_RADIO_SWITCH_STATE_ON : MBIM_RADIO_SWITCH_STATE_OFF, NULL);

	*ctx = (struct power_ctx){ .mm = mm, .on = on, .done = done, .userdata = userdata };
	mbim_device_command(mm->device, msg, MBIM_TIMEOUT_SECONDS, mm->cancellable, power_set_ready,
			    ctx);
	mbim_message_unref(msg);
}

static void home_provider_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	g_autoptr(MbimProvider) provider = NULL;

	if (mbim_step_cancelled(error))
		return;
	/* Status only, and a SIM may not say (READ_FAILURE when it has no home provider
	 * provisioned): the modem carries data without. */
	if (!resp || !mbim_message_home_provider_response_parse(resp, &provider, &error)) {
		log_modem_debug(mm->path, "home provider: %s", error->message);
	} else {
		snprintf(mm->sim_operator_id, sizeof(mm->sim_operator_id), "%s",
			 provider->provider_id ? provider->provider_id : "");
		snprintf(mm->sim_operator_name, sizeof(mm->sim_operator_name), "%s",
			 provider->provider_name ? provider->provider_name : "");
		log_modem_debug(mm->path, "home provider %s '%s'", mm->sim_operator_id,
				mm->sim_operator_name);
	}
	command(mm, mbim_message_radio_state_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		radio_state_ready);
}

/*
 * The SIM is not ready (locked, absent, bad, still starting): nothing to connect with, so
 * the modem has failed, but its device stays open: a PIN can be entered (mbim-pin.c) and
 * the SIM is asked again every MBIM_SIM_POLL_SECONDS (a SIM that is starting becomes ready,
 * one inserted is seen).
 */
static void mbim_modem_wait_sim(struct mbim_modem *mm)
{
	bool again = mm->sim_wait;

	snprintf(mm->last_error, sizeof(mm->last_error), "SIM not ready: %s", mm->subscriber);
	if (!again)
		log_modem_warning(mm->path, "%s", mm->last_error);
	mm->state = MBIM_MODEM_STATE_FAILED;
	mm->sim_wait = true;
	mm->reopening = false;
	ev_timer_stop(mm->loop, &mm->retry);
	ev_timer_set(&mm->retry, MBIM_SIM_POLL_SECONDS, 0.);
	ev_timer_start(mm->loop, &mm->retry);
	if (!again && mm->cb.on_lost)
		mm->cb.on_lost(mm->userdata);
}

static void subscriber_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	MbimSubscriberReadyState state;
	g_autofree gchar *imsi = NULL, *iccid = NULL;
	guint32 n_numbers = 0;
	g_auto(GStrv) numbers = NULL;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !mbim_message_subscriber_ready_status_response_parse(
			     resp, &state, &imsi, &iccid, NULL, &n_numbers, &numbers, &error)) {
		mbim_modem_fail_error(mm, "subscriber ready status", error);
		return;
	}
	snprintf(mm->subscriber, sizeof(mm->subscriber), "%s", mbim_map_subscriber(state));
	replace_string(&mm->imsi, imsi);
	replace_string(&mm->iccid, iccid);
	mm->n_own_numbers = mbim_map_own_numbers(numbers, n_numbers, mm->own_numbers);
	if (mm->n_own_numbers < n_numbers)
		log_modem_debug(mm->path,
				"%u of %u telephone numbers kept (empty or too long ones, or "
				"more than %d, left out)",
				mm->n_own_numbers, n_numbers, MBIM_MODEM_OWN_NUMBERS_MAX);
	/* Which code it waits for, and whether PIN1 guards it (also once it is ready). */
	if (state == MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED ||
	    state == MBIM_SUBSCRIBER_READY_STATE_INITIALIZED ||
	    state == MBIM_SUBSCRIBER_READY_STATE_BAD_SIM)
		mbim_pin_query(mm);
	/* Asked again while ready (a code was taken) and still initialized: the SIM's state
	 * was all there was to learn. */
	if (mm->state == MBIM_MODEM_STATE_READY && state == MBIM_SUBSCRIBER_READY_STATE_INITIALIZED)
		return;
	/* Read again below: the SIM may have changed since the last attempt. */
	mm->sim_operator_id[0] = mm->sim_operator_name[0] = '\0';
	if (state != MBIM_SUBSCRIBER_READY_STATE_INITIALIZED) {
		mbim_modem_wait_sim(mm);
		return;
	}
	if (mm->sim_wait) {
		log_modem_info(mm->path, "SIM ready: opening on");
		mm->sim_wait = false;
		mm->state = MBIM_MODEM_STATE_OPENING;
		mm->last_error[0] = '\0';
		ev_timer_stop(mm->loop, &mm->retry);
	}
	command(mm, mbim_message_home_provider_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		home_provider_ready);
}

static void query_subscriber(struct mbim_modem *mm)
{
	command(mm, mbim_message_subscriber_ready_status_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		subscriber_ready);
}

static void device_caps_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	guint32 max_sessions = 0;
	g_autofree gchar *device_id = NULL, *firmware = NULL, *hardware = NULL;

	if (mbim_step_cancelled(error))
		return;
	if (!resp || !mbim_message_device_caps_response_parse(
			     resp, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &max_sessions, NULL,
			     &device_id, &firmware, &hardware, &error)) {
		mbim_modem_fail_error(mm, "device caps", error);
		return;
	}
	replace_string(&mm->device_id, device_id);
	replace_string(&mm->firmware, firmware);
	replace_string(&mm->hardware, hardware);
	mm->max_sessions = max_sessions;
	query_subscriber(mm);
}

static void device_open_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	struct mbim_modem *mm = user_data;

	if (!mbim_device_open_full_finish(MBIM_DEVICE(src), res, &error)) {
		if (mbim_step_cancelled(error))
			return;
		if (g_error_matches(error, MBIM_CORE_ERROR, MBIM_CORE_ERROR_TIMEOUT)) {
			char why[256];
			snprintf(why, sizeof(why),
				 "the modem answered no MBIM OPEN within %u s: is the function "
				 "MBIM (not QMI)? (%s)",
				 mm->open_timeout, error->message);
			mbim_modem_fail(mm, "open", why);
			return;
		}
		mbim_modem_fail_error(mm, "open through mbim-proxy", error);
		return;
	}
	log_modem_debug(mm->path, "MBIM device open");
	command(mm, mbim_message_device_caps_query_new(NULL), MBIM_TIMEOUT_SECONDS,
		device_caps_ready);
}

static void device_new_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	MbimDevice *device = mbim_device_new_finish(res, &error);
	struct mbim_modem *mm = user_data;

	(void)src;
	if (mbim_step_cancelled(error)) {
		g_clear_object(&device);
		return;
	}
	if (!device) {
		mbim_modem_fail_error(mm, "create MBIM device", error);
		return;
	}
	mm->device = device;
	mm->removed_id = g_signal_connect(device, MBIM_DEVICE_SIGNAL_REMOVED,
					  G_CALLBACK(device_removed), mm);
	/* Always through mbim-proxy: mbimcli -p and qmapd then share the one control channel
	 * (one direct opener would take the others' responses). */
	mbim_device_open_full(mm->device, MBIM_DEVICE_OPEN_FLAGS_PROXY, mm->open_timeout,
			      mm->cancellable, device_open_ready, mm);
}

void mbim_modem_start(struct mbim_modem *mm)
{
	mbim_modem_reset(mm);
	ev_timer_stop(mm->loop, &mm->retry);
	mm->state = MBIM_MODEM_STATE_OPENING;
	mm->cancellable = g_cancellable_new();
	mm->have_pin = false;
	mm->pin1_enabled = -1;

	g_autoptr(GFile) file = g_file_new_for_path(mm->path);
	mbim_device_new(file, mm->cancellable, device_new_ready, mm);
}

void mbim_modem_stop(struct mbim_modem *mm)
{
	ev_timer_stop(mm->loop, &mm->retry);
	mbim_modem_reset(mm);
	mm->attempts = 0;
	mm->reopening = false;
	mm->power = MBIM_MODEM_POWER_UNKNOWN; /* gone: nothing to say */
}

void mbim_modem_function_reset(struct mbim_modem *mm)
{
	mm->function_resets++;
	if (mm->state == MBIM_MODEM_STATE_OPENING) {
		/* The step that met the closed function fails (or has failed: the retry waits)
		 * and is tried again at once, not after the backoff. */
		mm->retry_at_once = true;
		return;
	}
	if (mm->state == MBIM_MODEM_STATE_FAILED && !mm->sim_wait && ev_is_active(&mm->retry)) {
		ev_timer_stop(mm->loop, &mm->retry);
		ev_timer_set(&mm->retry, 0., 0.);
		ev_timer_start(mm->loop, &mm->retry);
		return;
	}
	if (mm->state != MBIM_MODEM_STATE_READY)
		return;
	snprintf(mm->last_error, sizeof(mm->last_error), "the MBIM function was reset");
	log_modem_debug(mm->path, "%s: opening the control channel again, the sessions kept",
			mm->last_error);
	mbim_modem_reopen(mm, 0., true);
}

void mbim_modem_check_sim(struct mbim_modem *mm)
{
	if (!mm->device || mm->state == MBIM_MODEM_STATE_OPENING)
		return; /* the open reads the SIM anyway */
	if (mm->sim_wait)
		ev_timer_stop(mm->loop, &mm->retry);
	query_subscriber(mm);
}

static void mbim_modem_on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mbim_modem *mm = w->data;

	(void)loop;
	(void)revents;
	if (mm->sim_wait && mm->device)
		query_subscriber(mm);
	else
		mbim_modem_start(mm);
}

int mbim_modem_new(struct ev_loop *loop, const char *path, unsigned open_timeout,
		   const struct mbim_modem_callbacks *cb, void *userdata, struct mbim_modem **ret)
{
	struct mbim_modem *mm = calloc(1, sizeof(*mm));

	if (!mm)
		return -ENOMEM;
	mm->path = strdup(path);
	if (!mm->path) {
		free(mm);
		return -ENOMEM;
	}
	mm->loop = loop;
	mm->open_timeout = open_timeout ? open_timeout : 1;
	mm->cb = *cb;
	mm->userdata = userdata;
	snprintf(mm->registration, sizeof(mm->registration), "unknown");
	snprintf(mm->packet_service, sizeof(mm->packet_service), "unknown");
	ev_timer_init(&mm->radio_poll, mbim_modem_on_radio_poll, 0., MBIM_RADIO_POLL_SECONDS);
	ev_timer_init(&mm->retry, mbim_modem_on_retry, 0., 0.);
	mm->radio_poll.data = mm->retry.data = mm;
	*ret = mm;
	return 0;
}

struct mbim_modem *mbim_modem_free(struct mbim_modem *mm)
{
	if (!mm)
		return NULL;
	mbim_modem_stop(mm);
	free(mm->device_id);
	free(mm->firmware);
	free(mm->hardware);
	free(mm->imsi);
	free(mm->iccid);
	free(mm->path);
	free(mm);
	return NULL;
}
