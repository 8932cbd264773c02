/* SPDX-License-Identifier: MIT */
/* The QMI control plane behind modem.c's neutral handle (modem-control.h). */
#include <errno.h>
#include <stdlib.h>

#include "qmi-modem.h"

static struct qmi_modem *qmi(const struct modem_control *c)
{
	return c->impl;
}

static void control_start(struct modem_control *c)
{
	qmi_modem_start(qmi(c));
}

static void control_stop(struct modem_control *c)
{
	qmi_modem_stop(qmi(c));
}

static void control_free(struct modem_control *c)
{
	qmi_modem_free(qmi(c));
	free(c);
}

static enum modem_control_state control_state(const struct modem_control *c)
{
	return qmi(c)->state;
}

static void control_view(const struct modem_control *c, struct modem_view *ret)
{
	const struct qmi_modem *qm = qmi(c);

	*ret = (struct modem_view){
		.state = qm->state,
		.reopening = qm->reopening,
		.manufacturer = qm->manufacturer,
		.model = qm->model,
		.revision = qm->revision,
		.imei = qm->imei,
		.iccid = qm->iccid,
		.imsi = qm->imsi,
		.registration = modem_registration_from_string(qm->registration),
		.access_technology = modem_access_technology_from_string(qm->access_technology),
		.operator_code = qm->operator_code,
		.operator_desc = qm->operator_desc,
		.have_signal = qm->have_signal,
		.rssi = qm->rssi,
		.tells_registration = qm->nas != NULL,
		.tells_sms = qm->wms != NULL,
		.sms_received = qm->sms_received,
		.tells_cell = qm->nas != NULL,
		.cell = qm->cell,
		.signal = qm->signal,
	};
	qmi_map_info(&qm->info, &ret->info);
}

static void set_string(json_t *o, const char *key, const char *value)
{
	if (value && *value)
		json_object_set_new(o, key, json_string(value));
}

/* 0 in `granted` means the modem did not report that value. */
static json_t *data_format_json(const struct modem_data_format *f)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "protocol",
			 f->version == QMAP_V5 ? "qmapv5" : "qmap", "dl-max-size",
			 (json_int_t)f->dl_max_size, "dl-max-datagrams",
			 (json_int_t)f->dl_max_datagrams, "ul-max-size", (json_int_t)f->ul_max_size,
			 "ul-max-datagrams", (json_int_t)f->ul_max_datagrams, "dl-min-padding",
			 (json_int_t)f->dl_min_padding);
}

static void control_status(const struct modem_control *c, struct datapath *dp, json_t *modem)
{
	const struct qmi_modem *qm = qmi(c);

	(void)dp;
	json_object_set_new(modem, "state", json_string(modem_control_state_to_string(qm->state)));
	json_object_set_new(modem, "control-path", json_string(qm->path));
	set_string(modem, "manufacturer", qm->manufacturer);
	set_string(modem, "model", qm->model);
	set_string(modem, "revision", qm->revision);
	set_string(modem, "imei", qm->imei);
	set_string(modem, "last-error", qm->last_error);
	json_object_set_new(modem, "proxy-losses", json_integer(qm->proxy_losses));
	if (qm->state != MODEM_CONTROL_READY)
		return;
	/* In use at the top (the keys as before), then what was asked and what the modem
	 * answered, side by side. */
	json_t *df = data_format_json(&qm->format);
	json_object_set_new(df, "requested", data_format_json(&qm->requested));
	json_object_set_new(df, "granted", data_format_json(&qm->granted));
	json_object_set_new(df, "data-interface", json_integer(qm->data_interface));
	json_object_set_new(modem, "data-format", df);
	set_string(modem, "registration", qm->registration);
	set_string(modem, "access-technology", qm->access_technology);
	set_string(modem, "operator", qm->operator_name);
	if (qm->have_signal)
		json_object_set_new(modem, "signal",
				    json_pack("{s:i, s:i, s:i, s:f}", "rssi", qm->rssi, "rsrp",
					      qm->rsrp, "rsrq", qm->rsrq, "snr", qm->snr / 10.0));
}

static int control_session_new(struct modem_control *c, struct ev_loop *loop, struct rtnl *rtnl,
			       struct datapath *dp, struct mux *mux, const struct config_mux *cfg,
			       const struct session_callbacks *cb, void *userdata,
			       struct session **ret)
{
	(void)c;
	return qmi_session_new(loop, rtnl, dp, mux, cfg, cb, userdata, ret);
}

static void control_session_ready(struct modem_control *c, struct session *s)
{
	qmi_session_modem_ready(s, qmi(c)->device, qmi(c)->data_interface);
}

static void control_sessions_ready(struct modem_control *c, const uint64_t *with_session)
{
	qmi_modem_release_unclaimed(qmi(c), with_session);
}

static void control_pin(struct modem_control *c, enum modem_pin_op op, const char *code,
			const char *new_code, modem_pin_done done, void *userdata)
{
	qmi_info_pin(qmi(c), op, code, new_code, done, userdata);
}

static void control_set_power(struct modem_control *c, bool on, modem_power_done done,
			      void *userdata)
{
	qmi_info_set_power(qmi(c), on, done, userdata);
}

static void control_sms_list(struct modem_control *c, modem_sms_list_done done, void *userdata)
{
	qmi_sms_list(qmi(c), done, userdata);
}

static void control_sms_send(struct modem_control *c, const uint8_t *pdu, size_t len,
			     modem_sms_done done, void *userdata)
{
	qmi_sms_send(qmi(c), pdu, len, done, userdata);
}

static void control_sms_delete(struct modem_control *c, enum modem_sms_storage storage,
			       uint32_t index, modem_sms_done done, void *userdata)
{
	qmi_sms_delete(qmi(c), storage, index, done, userdata);
}

static void control_set_modes(struct modem_control *c, enum modem_mode allowed,
			      enum modem_mode preferred, modem_done done, void *userdata)
{
	/* The preference among allowed modes (acquisition order) is not set: the D-Bus side
	 * offers no combination with one. */
	(void)preferred;
	qmi_nas_set_modes(qmi(c), allowed, done, userdata);
}

static void control_set_bands(struct modem_control *c,
			      const uint64_t lte_bands[MODEM_LTE_BAND_WORDS], modem_done done,
			      void *userdata)
{
	qmi_nas_set_bands(qmi(c), lte_bands, done, userdata);
}

static void control_scan(struct modem_control *c, modem_scan_done done, void *userdata)
{
	qmi_nas_scan(qmi(c), done, userdata);
}

static void control_register_network(struct modem_control *c, const char *operator_id,
				     modem_done done, void *userdata)
{
	qmi_nas_register(qmi(c), operator_id, done, userdata);
}

static void control_refresh_signal(struct modem_control *c)
{
	qmi_nas_query_signal(qmi(c));
}

static void control_network_time(struct modem_control *c, modem_time_done done, void *userdata)
{
	qmi_time_query(qmi(c), done, userdata);
}

static const struct modem_control_ops qmi_control_ops = {
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
	.set_modes = control_set_modes,
	.set_bands = control_set_bands,
	.scan = control_scan,
	.register_network = control_register_network,
	.refresh_signal = control_refresh_signal,
	.network_time = control_network_time,
};

int qmi_control_new(struct ev_loop *loop, const char *path,
		    const struct modem_control_request *request,
		    const struct modem_control_callbacks *cb, void *userdata,
		    struct modem_control **ret)
{
	struct modem_control *c = calloc(1, sizeof(*c));
	struct qmi_modem *qm;
	int r;

	if (!c)
		return -ENOMEM;
	r = qmi_modem_new(loop, path, request, cb, userdata, &qm);
	if (r < 0) {
		free(c);
		return r;
	}
	*c = (struct modem_control){ .ops = &qmi_control_ops, .impl = qm };
	*ret = c;
	return 0;
}
