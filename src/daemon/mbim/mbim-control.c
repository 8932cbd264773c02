/* SPDX-License-Identifier: MIT */
/* The MBIM control plane behind modem.c's neutral handle (modem-control.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "mbim-modem.h"

struct mbim_control {
	struct modem_control c; /* first: freed as one */
	struct modem_control_callbacks cb;
	void *userdata;
};

static struct mbim_modem *mbim(const struct modem_control *c)
{
	return c->impl;
}

static void on_ready(void *userdata)
{
	struct mbim_control *mc = userdata;

	/* The transport negotiated the NTB parameters: no data format to apply. */
	if (mc->cb.on_ready)
		mc->cb.on_ready(mc->userdata, NULL);
}

static void on_lost(void *userdata)
{
	struct mbim_control *mc = userdata;

	if (mc->cb.on_lost)
		mc->cb.on_lost(mc->userdata);
}

static void on_reopen(void *userdata)
{
	struct mbim_control *mc = userdata;

	if (mc->cb.on_reopen)
		mc->cb.on_reopen(mc->userdata);
	else if (mc->cb.on_lost)
		mc->cb.on_lost(mc->userdata);
}

static void control_start(struct modem_control *c)
{
	mbim_modem_start(mbim(c));
}

static void control_stop(struct modem_control *c)
{
	mbim_modem_stop(mbim(c));
}

static void control_free(struct modem_control *c)
{
	mbim_modem_free(mbim(c));
	free(c);
}

static enum modem_control_state control_state(const struct modem_control *c)
{
	switch (mbim(c)->state) {
	case MBIM_MODEM_STATE_OPENING:
		return MODEM_CONTROL_OPENING;
	case MBIM_MODEM_STATE_READY:
		return MODEM_CONTROL_READY;
	case MBIM_MODEM_STATE_FAILED:
		return MODEM_CONTROL_FAILED;
	default:
		return MODEM_CONTROL_CLOSED;
	}
}

static enum modem_power_state control_power(enum mbim_modem_power p)
{
	switch (p) {
	case MBIM_MODEM_POWER_UNKNOWN:
		return MODEM_POWER_UNKNOWN;
	case MBIM_MODEM_POWER_LOW:
		return MODEM_POWER_LOW;
	case MBIM_MODEM_POWER_ON:
		return MODEM_POWER_ON;
	}
	return MODEM_POWER_UNKNOWN;
}

static void control_view(const struct modem_control *c, struct modem_view *ret)
{
	const struct mbim_modem *mm = mbim(c);

	/*
	 * DEVICE_CAPS has no manufacturer or model: the hardware string is the closest to a
	 * model, and what ModemManager shows as the hardware revision; modem_view() puts the
	 * USB device's strings in front where the transport has them, as ModemManager does.
	 */
	*ret = (struct modem_view){
		.mbim = true,
		.state = control_state(c),
		.reopening = mm->reopening,
		.model = mm->hardware,
		.revision = mm->firmware,
		.imei = mm->device_id,
		.iccid = mm->iccid,
		.imsi = mm->imsi,
		.registration = modem_registration_from_string(mm->registration),
		.access_technology = modem_access_technology_from_string(mm->access_technology),
		.operator_code = mm->operator_code,
		.operator_desc = mm->operator_desc,
		.have_signal = mm->have_signal,
		.rssi = mm->rssi,
		.tells_registration = true,
		.tells_sms = mm->sms_ready,
		.sms_received = mm->sms_received,
		.info = { .hardware_revision = mm->hardware,
			  .own_number = mm->n_own_numbers ? mm->own_numbers[0] : NULL,
			  .sim_operator_id = mm->sim_operator_id[0] ? mm->sim_operator_id : NULL,
			  .sim_operator_name =
				  mm->sim_operator_name[0] ? mm->sim_operator_name : NULL,
			  .power = control_power(mm->power) },
	};
	mbim_map_sim(mm->subscriber, &ret->info);
	mbim_map_pin(mm->have_pin, mm->pin_type, mm->pin_state, mm->pin_attempts, mm->pin1_enabled,
		     &ret->info);
	mbim_map_signal(ret->access_technology, mm->have_signal, mm->rssi, &ret->signal);
	if (strcmp(mm->packet_service, "attached") == 0)
		ret->info.packet_service = MODEM_PACKET_SERVICE_ATTACHED;
	else if (strcmp(mm->packet_service, "detached") == 0)
		ret->info.packet_service = MODEM_PACKET_SERVICE_DETACHED;
}

static void set_string(json_t *o, const char *key, const char *value)
{
	if (value && *value)
		json_object_set_new(o, key, json_string(value));
}

/* What the MBIM side learnt, with the NTB parameters as data format. */
static void control_status(const struct modem_control *c, struct datapath *dp, json_t *modem)
{
	const struct mbim_modem *mm = mbim(c);

	json_object_set_new(modem, "state", json_string(mbim_modem_state_to_string(mm->state)));
	json_object_set_new(modem, "control", json_string("mbim"));
	json_object_set_new(modem, "control-path", json_string(mm->path));
	set_string(modem, "imei", mm->device_id);
	set_string(modem, "revision", mm->firmware);
	set_string(modem, "hardware", mm->hardware);
	set_string(modem, "last-error", mm->last_error);
	json_object_set_new(modem, "proxy-losses", json_integer(mm->proxy_losses));
	json_object_set_new(modem, "function-resets", json_integer(mm->function_resets));
	if (mm->subscriber[0])
		json_object_set_new(modem, "sim", json_string(mm->subscriber));
	if (mm->state != MBIM_MODEM_STATE_READY)
		return;
	json_t *df = counters_json_ntb_format(dp);
	if (df)
		json_object_set_new(modem, "data-format", df);
	set_string(modem, "registration", mm->registration);
	set_string(modem, "access-technology", mm->access_technology);
	set_string(modem, "operator", mm->operator_name);
	set_string(modem, "packet-service", mm->packet_service);
	json_object_set_new(modem, "max-sessions", json_integer(mm->max_sessions));
	if (mm->services_known)
		json_object_set_new(
			modem, "qmi-over-mbim",
			json_string(mm->qmi_over_mbim ? "offered, not used" : "not offered"));
}

static int control_session_new(struct modem_control *c, struct ev_loop *loop, struct rtnl *rtnl,
			       struct datapath *dp, struct mux *mux, const struct config_mux *cfg,
			       const struct session_callbacks *cb, void *userdata,
			       struct session **ret)
{
	return mbim_session_new(loop, rtnl, dp, mux, mbim(c)->path, cfg, cb, userdata, ret);
}

static void control_session_ready(struct modem_control *c, struct session *s)
{
	mbim_session_modem_ready(s, mbim(c)->device);
}

static void control_sessions_ready(struct modem_control *c, const uint64_t *with_session)
{
	mbim_session_end_unclaimed(mbim(c)->device, mbim(c)->path, with_session);
}

static void control_set_power(struct modem_control *c, bool on, modem_power_done done,
			      void *userdata)
{
	mbim_modem_set_power(mbim(c), on, done, userdata);
}

static void control_pin(struct modem_control *c, enum modem_pin_op op, const char *code,
			const char *new_code, modem_pin_done done, void *userdata)
{
	mbim_modem_pin(mbim(c), op, code, new_code, done, userdata);
}

static void control_sms_list(struct modem_control *c, modem_sms_list_done done, void *userdata)
{
	mbim_sms_list(mbim(c), done, userdata);
}

static void control_sms_send(struct modem_control *c, const uint8_t *pdu, size_t len,
			     modem_sms_done done, void *userdata)
{
	mbim_sms_send(mbim(c), pdu, len, done, userdata);
}

static void control_sms_delete(struct modem_control *c, enum modem_sms_storage storage,
			       uint32_t index, modem_sms_done done, void *userdata)
{
	mbim_sms_delete(mbim(c), storage, index, done, userdata);
}

static void control_scan(struct modem_control *c, modem_scan_done done, void *userdata)
{
	mbim_provider_scan(mbim(c), done, userdata);
}

static void control_register_network(struct modem_control *c, const char *operator_id,
				     modem_done done, void *userdata)
{
	mbim_provider_register(mbim(c), operator_id, done, userdata);
}

/* SIGNAL_STATE: RSSI only in MBIM 1.0 (no modes, bands or NITZ without extensions). */
static void control_refresh_signal(struct modem_control *c)
{
	mbim_modem_query_signal(mbim(c));
}

static void control_function_reset(struct modem_control *c)
{
	mbim_modem_function_reset(mbim(c));
}

static const struct modem_control_ops mbim_control_ops = {
	.start = control_start,
	.stop = control_stop,
	.free = control_free,
	.state = control_state,
	.view = control_view,
	.status = control_status,
	.session_new = control_session_new,
	.session_ready = control_session_ready,
	.sessions_ready = control_sessions_ready,
	.pin = control_pin,
	.set_power = control_set_power,
	.sms_list = control_sms_list,
	.sms_send = control_sms_send,
	.sms_delete = control_sms_delete,
	.refresh_signal = control_refresh_signal,
	.scan = control_scan,
	.register_network = control_register_network,
	.function_reset = control_function_reset,
};

int mbim_control_new(struct ev_loop *loop, const char *path,
		     const struct modem_control_request *request,
		     const struct modem_control_callbacks *cb, void *userdata,
		     struct modem_control **ret)
{
	struct mbim_control *mc = calloc(1, sizeof(*mc));
	struct mbim_modem_callbacks mcb = { .on_ready = on_ready,
					    .on_lost = on_lost,
					    .on_reopen = on_reopen };
	struct mbim_modem *mm;
	int r;

	if (!mc)
		return -ENOMEM;
	if (cb)
		mc->cb = *cb;
	mc->userdata = userdata;
	r = mbim_modem_new(loop, path, request->open_timeout, &mcb, mc, &mm);
	if (r < 0) {
		free(mc);
		return r;
	}
	mc->c = (struct modem_control){ .ops = &mbim_control_ops, .impl = mm };
	*ret = &mc->c;
	return 0;
}
