/* SPDX-License-Identifier: MIT */
/*
 * One modem as JSON and text for the control socket: status (the modem, its control plane's
 * facts through its ops, each mux with its session), the mux list, and the counters of the
 * data path, the muxes and the control link (modem.h describes the keys).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "counters.h"
#include "datapath.h"
#include "macro.h"
#include "modem-internal.h"
#include "netdev.h"

static json_t *prefix_json(const struct config_prefix *p, bool with_len)
{
	char text[INET6_ADDRSTRLEN + 4];

	if (p->family == 0)
		return json_null();
	inet_ntop(p->family, &p->addr, text, INET6_ADDRSTRLEN);
	if (with_len)
		snprintf(text + strlen(text), 5, "/%u", p->prefixlen);
	return json_string(text);
}

static json_t *family_json(const struct session_family *f)
{
	json_t *dns = json_array();

	for (int i = 0; i < 2; i++)
		if (f->applied.dns[i].family)
			json_array_append_new(dns, prefix_json(&f->applied.dns[i], false));
	json_t *o = json_pack("{s:o, s:o}", "address", prefix_json(&f->applied.address, true),
			      "dns", dns);
	if (f->applied.gateway.family)
		json_object_set_new(o, "gateway", prefix_json(&f->applied.gateway, false));
	if (f->applied.mtu)
		json_object_set_new(o, "mtu", json_integer(f->applied.mtu));
	return o;
}

static json_t *mux_json(struct modem *m, unsigned id)
{
	const struct mux *mux = datapath_mux(m->dp, id);
	const struct config_mux *c = m->mux_cfg[id];
	const struct session *s = m->session[id];
	const struct mux_stats *st = mux_get_stats(mux);
	const char *state = modem_mux_state(m, id);

	json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:i}", "modem", m->name, "id",
			      id, "interface", mux_netdev(mux)->name, "state", state, "apn", c->apn,
			      "ip-type", config_ip_type_to_string(c->ip_type), "headroom",
			      mux_netdev(mux)->status, "mtu", c->mtu);
	if (c->user[0])
		json_object_set_new(o, "user", json_string(c->user));
	if (c->password[0])
		json_object_set_new(o, "password", json_string("(hidden)"));
	if (c->allowed_auth[0])
		json_object_set_new(o, "allowed-auth", json_string(c->allowed_auth));
	if (c->client_managed) /* a D-Bus bearer: its client configures the device */
		json_object_set_new(o, "managed-by", json_string("dbus"));
	if (s) {
		for (unsigned i = 0; i < s->n_fam; i++) {
			const struct session_family *f = &s->fam[i];
			if (f->handle && f->applied.valid)
				json_object_set_new(o, f->family == AF_INET ? "ipv4" : "ipv6",
						    family_json(f));
		}
		if (s->last_error[0])
			json_object_set_new(o, "last-error", json_string(s->last_error));
		double retry = session_retry_in(s);
		if (retry >= 0)
			json_object_set_new(o, "retry-in", json_real(retry));
	} else {
		/* Static configuration (control = none). */
		if (c->ipv4_address.family)
			json_object_set_new(
				o, "ipv4",
				json_pack("{s:o}", "address", prefix_json(&c->ipv4_address, true)));
		if (c->ipv6_address.family)
			json_object_set_new(
				o, "ipv6",
				json_pack("{s:o}", "address", prefix_json(&c->ipv6_address, true)));
	}
	json_object_set_new(
		o, "counters",
		json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "rx-packets",
			  (json_int_t)st->rx_packets, "rx-bytes", (json_int_t)st->rx_bytes,
			  "tx-packets", (json_int_t)st->tx_packets, "tx-bytes",
			  (json_int_t)st->tx_bytes, "rx-dropped",
			  (json_int_t)(st->rx_dropped_queue_full + st->rx_dropped_write_error),
			  "tx-dropped",
			  (json_int_t)(st->tx_dropped_not_ip + st->tx_dropped_too_big +
				       st->tx_dropped_link_down + st->tx_dropped_bad_gso +
				       st->tx_dropped_device)));
	return o;
}

json_t *modem_status(struct modem *m)
{
	json_t *modem = json_object();

	json_object_set_new(modem, "transport", json_string(m->device.device));
	json_object_set_new(modem, "control",
			    json_string(config_control_to_string(m->device.control)));
	if (m->device.control_auto) /* resolved from the function when the modem was made */
		json_object_set_new(modem, "control-auto", json_true());
	if (m->ctl) {
		m->ctl->ops->status(m->ctl, m->dp, modem);
	} else {
		json_object_set_new(modem, "control", json_string("none"));
		json_t *df = counters_json_ntb_format(m->dp); /* MBIM: what was negotiated */
		if (df)
			json_object_set_new(modem, "data-format", df);
	}
	/* The state as systemd's STATUS= names it too ("reopening" over the control plane's). */
	json_object_set_new(modem, "state", json_string(modem_state(m)));
	json_t *muxes = json_array();
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (datapath_mux(m->dp, id))
			json_array_append_new(muxes, mux_json(m, id));
	return json_pack("{s:s, s:o, s:o}", "name", m->name, "modem", modem, "muxes", muxes);
}

int modem_mux_list(struct modem *m, json_t *muxes)
{
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		if (!datapath_mux(m->dp, id))
			continue;
		if (json_array_append_new(muxes,
					  json_pack("{s:s, s:i, s:s, s:s, s:s}", "modem", m->name,
						    "id", id, "interface",
						    mux_netdev(datapath_mux(m->dp, id))->name,
						    "state", modem_mux_state(m, id), "apn",
						    m->mux_cfg[id]->apn)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The QMI bridge's counters: every loss on the control path (a request the transport could
 * not take even after waiting, a response nobody was attached for or that did not fit the
 * client's queue) is one of these. Text and JSON from one table.
 */
static const struct {
	const char *text, *json;
	size_t offset;
} wdm_counters[] = {
#define WDM_COUNTER(field, json)                                \
	{                                                       \
#field, json, offsetof(struct wdm_stats, field) \
	}
	WDM_COUNTER(to_modem, "to-modem"),
	WDM_COUNTER(to_modem_deferred, "to-modem-deferred"),
	WDM_COUNTER(to_modem_overflows, "to-modem-overflows"),
	WDM_COUNTER(to_modem_split, "to-modem-split"),
	WDM_COUNTER(to_modem_open_clamped, "to-modem-open-clamped"),
	WDM_COUNTER(open_probes, "open-probes"),
	WDM_COUNTER(open_answered, "open-answered"),
	WDM_COUNTER(open_probe_timeouts, "open-probe-timeouts"),
	WDM_COUNTER(not_opened, "not-opened"),
	WDM_COUNTER(function_reopens, "function-reopens"),
	WDM_COUNTER(function_reopen_timeouts, "function-reopen-timeouts"),
	WDM_COUNTER(to_modem_frag_errors, "to-modem-frag-errors"),
	WDM_COUNTER(partial_fragments, "partial-fragments"),
	WDM_COUNTER(to_modem_errors, "to-modem-errors"),
	WDM_COUNTER(from_modem, "from-modem"),
	WDM_COUNTER(from_modem_invalid, "from-modem-invalid"),
	WDM_COUNTER(dropped_no_client, "dropped-no-client"),
	WDM_COUNTER(dropped_queue_full, "dropped-queue-full"),
	WDM_COUNTER(framing_errors, "framing-errors"),
	WDM_COUNTER(discarded_bytes, "discarded-bytes"),
	WDM_COUNTER(stale_flushes, "stale-flushes"),
#undef WDM_COUNTER
};

static uint64_t wdm_counter(const struct wdm_stats *st, size_t i)
{
	return *(const uint64_t *)((const char *)st + wdm_counters[i].offset);
}

json_t *modem_stats(struct modem *m)
{
	json_t *malformed = counters_json_malformed(m->dp);
	json_t *device = json_object();

	if (device && counters_json_device(m->dp, device) < 0) {
		json_decref(device);
		device = NULL; /* the reply fails as a whole, as for any allocation */
	}
	json_t *muxes = json_array();
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct mux *mux = datapath_mux(m->dp, id);
		if (!mux)
			continue;
		json_t *o = json_pack("{s:s, s:i, s:s}", "modem", m->name, "id", id, "interface",
				      mux_netdev(mux)->name);
		if (o && counters_json_mux(mux, o) < 0) {
			json_decref(o);
			o = NULL;
		}
		json_array_append_new(muxes, o);
	}
	json_t *result = json_pack("{s:s, s:o, s:o, s:o}", "name", m->name, "device", device,
				   "malformed", malformed, "muxes", muxes);
	if (result && m->wdm) {
		struct wdm_stats st;
		json_t *link = json_object();

		wdm_get_stats(m->wdm, &st);
		for (size_t i = 0; link && i < ARRAY_SIZE(wdm_counters); i++)
			json_object_set_new(link, wdm_counters[i].json,
					    json_integer((json_int_t)wdm_counter(&st, i)));
		if (!link || json_object_set_new(result, "control-link", link) < 0) {
			json_decref(result);
			return NULL;
		}
	}
	return result;
}

void modem_print_stats(const struct modem *m, FILE *f, const char *prefix)
{
	datapath_print_stats(m->dp, f, prefix);
	if (m->wdm) {
		struct wdm_stats st;

		wdm_get_stats(m->wdm, &st);
		fprintf(f, "%scontrol-link:", prefix);
		for (size_t i = 0; i < ARRAY_SIZE(wdm_counters); i++)
			fprintf(f, " %s=%" PRIu64, wdm_counters[i].text, wdm_counter(&st, i));
		fputc('\n', f);
	}
}
