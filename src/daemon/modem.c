/* SPDX-License-Identifier: MIT */
/* One modem: data path, control bridge and plane, the sessions of its muxes (modem.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "datapath.h"
#include "control-protocol.h"
#include "log-modem.h"
#include "log-mux.h"
#include "log.h"
#include "macro.h"
#include "modem-control.h"
#include "modem-internal.h"
#include "mux-record.h"
#include "netdev.h"
#include "session.h"
#include "wdm.h"

static bool control_qmi(const struct modem *m)
{
	return m->device.control == CONFIG_CONTROL_QMI;
}

static bool control_mbim(const struct modem *m)
{
	return m->device.control == CONFIG_CONTROL_MBIM;
}

/* Sessions (QMI or MBIM) give the muxes their state and addresses. */
static bool has_sessions(const struct modem *m)
{
	return m->device.control != CONFIG_CONTROL_NONE;
}

/* A mux's state as qmapctl shows it: its session's, or with static addresses the modem's. */
static const char *mux_state(const struct modem *m, unsigned id)
{
	if (m->session[id])
		return session_state_to_string(m->session[id]->state);
	return datapath_modem_up(m->dp) ? "connected" : "disconnected";
}

/* The manager shows it in STATUS=. */
static void modem_changed(struct modem *m)
{
	if (m->cb.on_change)
		m->cb.on_change(m->userdata, m);
}

/* Its control channel is being opened again, its sessions kept up meanwhile. */
static bool modem_reopening(const struct modem *m)
{
	struct modem_view v;

	return modem_view(m, &v) && v.reopening;
}

const char *modem_state(const struct modem *m)
{
	if (modem_reopening(m))
		return "reopening";
	if (m->ctl)
		return modem_control_state_to_string(m->ctl->ops->state(m->ctl));
	return datapath_modem_up(m->dp) ? "ready" : "absent";
}

void modem_count_muxes(const struct modem *m, unsigned *ret_total, unsigned *ret_connected)
{
	unsigned total = 0, connected = 0;

	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		if (!datapath_mux(m->dp, id))
			continue;
		total++;
		if (strcmp(mux_state(m, id), "connected") == 0)
			connected++;
	}
	*ret_total = total;
	*ret_connected = connected;
}

const char *modem_name(const struct modem *m)
{
	return m->name;
}

const char *modem_device(const struct modem *m)
{
	return m->device.device;
}

const struct config_device *modem_config_device(const struct modem *m)
{
	return &m->device;
}

static void on_session_state(void *userdata, struct session *s)
{
	(void)s;
	modem_changed(userdata);
}

/* ---- modem events ------------------------------------------------------------------- */

static void on_control_ready(void *userdata, const struct modem_data_format *f)
{
	struct modem *m = userdata;

	if (f) {
		int r = datapath_set_data_format(m->dp, f->version, f->dl_max_size, f->ul_max_size,
						 f->ul_max_datagrams, f->dl_min_padding);
		if (r < 0) {
			log_error_errno(r, "%s: cannot apply the granted data format", m->name);
			return;
		}
	}
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (m->session[id])
			m->ctl->ops->session_ready(m->ctl, m->session[id]);
	if (m->ctl->ops->sessions_ready) {
		uint64_t with_session[MODEM_MUX_SET_WORDS] = { 0 };
		for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
			if (m->session[id])
				modem_mux_set_add(with_session, id);
		m->ctl->ops->sessions_ready(m->ctl, with_session);
	}
	modem_changed(m);
}

static void on_control_lost(void *userdata)
{
	struct modem *m = userdata;

	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (m->session[id])
			session_modem_lost(m->session[id]);
	modem_changed(m);
}

static void on_control_reopen(void *userdata)
{
	struct modem *m = userdata;

	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (m->session[id])
			session_control_reopen(m->session[id]);
	modem_changed(m);
}

/* The wdm bridge opened again an MBIM function that had been reset (wdm.h). */
static void on_function_reset(void *userdata)
{
	struct modem *m = userdata;

	if (m->ctl && m->ctl->ops->function_reset)
		m->ctl->ops->function_reset(m->ctl);
}

static int control_data_interface(void *userdata)
{
	struct modem *m = userdata;

	return datapath_data_interface(m->dp);
}

static void on_modem_up(void *userdata)
{
	struct modem *m = userdata;

	log_info("modem %s (%s): present", m->name, m->device.device);
	if (control_qmi(m) && datapath_framing(m->dp) == TRANSPORT_FRAMING_NTB)
		log_modem_warning(
			m->name,
			m->device.control_auto
				? "the function is MBIM, but control = auto chose qmi "
				  "(the modem was not there to look at): restart qmapd or set "
				  "control = mbim"
				: "the function is MBIM, but control = qmi: set control = mbim "
				  "(or none)");
	if (control_mbim(m) && m->wdm) {
		const struct transport_ntb *ntb = datapath_ntb(m->dp);
		wdm_set_max_message(m->wdm, ntb ? ntb->max_control_message : 0);
	}
	if (m->ctl && !m->stopping)
		m->ctl->ops->start(m->ctl);
	modem_changed(m);
}

static void on_modem_down(void *userdata)
{
	struct modem *m = userdata;

	log_warning("modem %s (%s): gone; devices kept without carrier", m->name, m->device.device);
	if (m->ctl) {
		m->ctl->ops->stop(m->ctl);
		on_control_lost(m);
	}
	modem_changed(m);
}

static void on_control(void *userdata, const uint8_t *buf, size_t len)
{
	struct modem *m = userdata;

	if (m->wdm)
		wdm_deliver(m->wdm, buf, len);
}

static int wdm_to_modem(void *userdata, const uint8_t *msg, size_t len)
{
	struct modem *m = userdata;

	return datapath_control_send(m->dp, msg, len);
}

/* ---- muxes -------------------------------------------------------------------------- */

/* Whether cfg's interface may become a mux device: free, or a device qmapd made. */
int modem_check_interface(struct rtnl *rtnl, const struct config_mux *cfg, char *err, size_t errlen)
{
	int r = netdev_probe_name(rtnl, cfg->interface);

	switch (r) {
	case 0:
	case 1:
		return 0;
	case -EEXIST:
		snprintf(err, errlen,
			 "interface %s exists and was not created by qmapd; refusing to take it "
			 "over",
			 cfg->interface);
		return r;
	case -EINVAL:
		snprintf(err, errlen, "invalid interface name '%s'", cfg->interface);
		return r;
	default:
		snprintf(err, errlen, "cannot look up interface %s: %s", cfg->interface,
			 strerror(-r));
		return r;
	}
}

int modem_add(struct modem *m, const struct config_mux *cfg, bool from_config, char *err,
	      size_t errlen)
{
	_cleanup_free_ struct config_mux *copy = NULL;
	struct mux *mux;
	int r;

	if (datapath_mux(m->dp, cfg->id)) {
		snprintf(err, errlen, "mux %u exists", cfg->id);
		return -EEXIST;
	}
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (datapath_mux(m->dp, id) &&
		    strcmp(mux_netdev(datapath_mux(m->dp, id))->name, cfg->interface) == 0) {
			snprintf(err, errlen, "interface %s is used by mux %u", cfg->interface, id);
			return -EEXIST;
		}
	r = modem_check_interface(m->rtnl, cfg, err, errlen);
	if (r < 0)
		return r;
	/* Before anything is created: nothing to undo when memory is short. */
	copy = config_mux_dup(cfg);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = datapath_mux_add(m->dp, cfg, m->device.persist_devices, !has_sessions(m), &mux);
	if (r < 0) {
		snprintf(err, errlen, "cannot create device %s: %s", cfg->interface, strerror(-r));
		return r;
	}
	/* From here on the mux exists for everyone asking (a session's callbacks too). */
	free(m->mux_cfg[cfg->id]);
	m->mux_cfg[cfg->id] = TAKE_PTR(copy);
	if (has_sessions(m)) {
		struct session_callbacks cb = { .on_state = on_session_state };
		struct session **s = &m->session[cfg->id];
		r = m->ctl->ops->session_new(m->ctl, m->loop, m->rtnl, m->dp, mux, cfg, &cb, m, s);
		if (r < 0) {
			datapath_mux_del(m->dp, cfg->id);
			free(m->mux_cfg[cfg->id]);
			m->mux_cfg[cfg->id] = NULL;
			snprintf(err, errlen, "out of memory");
			return r;
		}
		if (m->ctl->ops->state(m->ctl) == MODEM_CONTROL_READY)
			m->ctl->ops->session_ready(m->ctl, *s);
	}
	/* Its device outlives a crash, for the next qmapd to take the session over. */
	if (has_sessions(m) && from_config) {
		r = mux_keep_device(mux);
		if (r < 0)
			log_mux_warning_errno(m->name, cfg->id, cfg->interface, r,
					      "cannot keep the device across a crash");
		modem_record_devices(m);
	}
	m->from_config[cfg->id] = from_config;
	modem_changed(m);
	return 0;
}

static int modem_del(struct modem *m, unsigned id)
{
	if (id > CONFIG_MUX_ID_MAX || !datapath_mux(m->dp, id))
		return -ENOENT;
	session_free_async(m->session[id]);
	m->session[id] = NULL;
	datapath_mux_del(m->dp, id);
	m->from_config[id] = false;
	modem_bearer_forget(m, id);
	modem_record_devices(m);
	free(m->mux_cfg[id]);
	m->mux_cfg[id] = NULL;
	log_mux_info(m->name, id, NULL, "removed");
	modem_changed(m);
	return 0;
}

int modem_mux_add(struct modem *m, const struct config_mux *cfg, bool from_config, char *err,
		  size_t errlen)
{
	int r = modem_add(m, cfg, from_config, err, errlen);
	if (r == 0)
		log_mux_info(m->name, cfg->id, cfg->interface, "%s",
			     from_config ? "the config's, started again" : "added at runtime");
	return r;
}

int modem_mux_del(struct modem *m, unsigned id, char *err, size_t errlen)
{
	int r = modem_del(m, id);
	if (r == -ENOENT)
		snprintf(err, errlen, "no mux %u on %s", id, m->name);
	return r;
}

bool modem_view(const struct modem *m, struct modem_view *ret)
{
	*ret = (struct modem_view){ 0 };
	if (!m->ctl)
		return false;
	m->ctl->ops->view(m->ctl, ret);

	/* What the USB device says of itself where the control plane does not (MBIM has no
	 * manufacturer or model): ModemManager names such modems by these strings too. */
	const struct transport *t = datapath_transport(m->dp);
	if (t && (!ret->manufacturer || !*ret->manufacturer) && t->manufacturer[0])
		ret->manufacturer = t->manufacturer;
	if (t && ret->mbim && t->product[0])
		ret->model = t->product;
	if (t) {
		ret->usb_vid = t->vid;
		ret->usb_pid = t->pid;
		ret->control_port = t->control_port[0] ? t->control_port : NULL;
	}
	return true;
}

void modem_pin(struct modem *m, enum modem_pin_op op, const char *code, const char *new_code,
	       modem_pin_done done, void *userdata)
{
	if (!m->ctl || !m->ctl->ops->pin) {
		done(userdata, MODEM_PIN_NO_SERVICE, -1, "not supported by this control plane");
		return;
	}
	m->ctl->ops->pin(m->ctl, op, code, new_code, done, userdata);
}

void modem_set_power(struct modem *m, bool on, modem_power_done done, void *userdata)
{
	if (!m->ctl || !m->ctl->ops->set_power) {
		done(userdata, -EOPNOTSUPP, "not supported by this control plane");
		return;
	}
	m->ctl->ops->set_power(m->ctl, on, done, userdata);
}

void modem_sms_list(struct modem *m, modem_sms_list_done done, void *userdata)
{
	if (!m->ctl || !m->ctl->ops->sms_list) {
		done(userdata, -EOPNOTSUPP, "not supported by this control plane", NULL, 0);
		return;
	}
	m->ctl->ops->sms_list(m->ctl, done, userdata);
}

void modem_sms_send(struct modem *m, const uint8_t *pdu, size_t len, modem_sms_done done,
		    void *userdata)
{
	if (!m->ctl || !m->ctl->ops->sms_send) {
		done(userdata, -EOPNOTSUPP, "not supported by this control plane");
		return;
	}
	m->ctl->ops->sms_send(m->ctl, pdu, len, done, userdata);
}

void modem_sms_delete(struct modem *m, enum modem_sms_storage storage, uint32_t index,
		      modem_sms_done done, void *userdata)
{
	if (!m->ctl || !m->ctl->ops->sms_delete) {
		done(userdata, -EOPNOTSUPP, "not supported by this control plane");
		return;
	}
	m->ctl->ops->sms_delete(m->ctl, storage, index, done, userdata);
}

bool modem_can_set_power(const struct modem *m)
{
	return m->ctl && m->ctl->ops->set_power;
}

bool modem_can_pin(const struct modem *m)
{
	return m->ctl && m->ctl->ops->pin;
}

#define NOT_SUPPORTED "not supported by this control plane"

void modem_set_modes(struct modem *m, enum modem_mode allowed, enum modem_mode preferred,
		     modem_done done, void *userdata)
{
	if (!modem_can_set_modes(m)) {
		done(userdata, -EOPNOTSUPP, NOT_SUPPORTED);
		return;
	}
	m->ctl->ops->set_modes(m->ctl, allowed, preferred, done, userdata);
}

void modem_set_bands(struct modem *m, const uint64_t lte_bands[MODEM_LTE_BAND_WORDS],
		     modem_done done, void *userdata)
{
	if (!modem_can_set_bands(m)) {
		done(userdata, -EOPNOTSUPP, NOT_SUPPORTED);
		return;
	}
	m->ctl->ops->set_bands(m->ctl, lte_bands, done, userdata);
}

void modem_scan(struct modem *m, modem_scan_done done, void *userdata)
{
	if (!modem_can_scan(m)) {
		done(userdata, -EOPNOTSUPP, NOT_SUPPORTED, NULL, 0);
		return;
	}
	m->ctl->ops->scan(m->ctl, done, userdata);
}

void modem_register_network(struct modem *m, const char *operator_id, modem_done done,
			    void *userdata)
{
	if (!modem_can_register_network(m)) {
		done(userdata, -EOPNOTSUPP, NOT_SUPPORTED);
		return;
	}
	m->ctl->ops->register_network(m->ctl, operator_id, done, userdata);
}

void modem_refresh_signal(struct modem *m)
{
	if (modem_can_refresh_signal(m))
		m->ctl->ops->refresh_signal(m->ctl);
}

void modem_network_time(struct modem *m, modem_time_done done, void *userdata)
{
	if (!m->ctl || !m->ctl->ops->network_time) {
		done(userdata, -EOPNOTSUPP, NOT_SUPPORTED, NULL);
		return;
	}
	m->ctl->ops->network_time(m->ctl, done, userdata);
}

bool modem_can_set_modes(const struct modem *m)
{
	return m->ctl && m->ctl->ops->set_modes;
}

bool modem_can_set_bands(const struct modem *m)
{
	return m->ctl && m->ctl->ops->set_bands;
}

bool modem_can_scan(const struct modem *m)
{
	return m->ctl && m->ctl->ops->scan;
}

bool modem_can_register_network(const struct modem *m)
{
	return m->ctl && m->ctl->ops->register_network;
}

bool modem_can_refresh_signal(const struct modem *m)
{
	return m->ctl && m->ctl->ops->refresh_signal;
}

const struct config_mux *modem_mux_config(const struct modem *m, unsigned id)
{
	if (id > CONFIG_MUX_ID_MAX || !datapath_mux(m->dp, id))
		return NULL;
	return m->mux_cfg[id];
}

bool modem_mux_from_config(const struct modem *m, unsigned id)
{
	return id <= CONFIG_MUX_ID_MAX && datapath_mux(m->dp, id) && m->from_config[id];
}

const char *modem_mux_interface(const struct modem *m, unsigned id)
{
	if (id > CONFIG_MUX_ID_MAX || !datapath_mux(m->dp, id))
		return NULL;
	return mux_netdev(datapath_mux(m->dp, id))->name;
}

const struct session *modem_mux_session(const struct modem *m, unsigned id)
{
	if (id > CONFIG_MUX_ID_MAX || !datapath_mux(m->dp, id))
		return NULL;
	return m->session[id];
}

const struct mux_stats *modem_mux_stats(const struct modem *m, unsigned id)
{
	if (id > CONFIG_MUX_ID_MAX || !datapath_mux(m->dp, id))
		return NULL;
	return mux_get_stats(datapath_mux(m->dp, id));
}

const char *modem_mux_state(const struct modem *m, unsigned id)
{
	if (id > CONFIG_MUX_ID_MAX || !datapath_mux(m->dp, id))
		return NULL;
	return mux_state(m, id);
}

bool modem_has_interface(const struct modem *m, const char *ifname)
{
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (datapath_mux(m->dp, id) &&
		    strcmp(mux_netdev(datapath_mux(m->dp, id))->name, ifname) == 0)
			return true;
	return false;
}

/* Same settings? Compared key by key: struct padding may hold anything. */
static bool mux_cfg_equal(const struct config_mux *a, const struct config_mux *b)
{
	if (a->n_routes != b->n_routes)
		return false;
	for (unsigned i = 0; i < a->n_routes; i++)
		if (memcmp(&a->routes[i], &b->routes[i], sizeof(a->routes[i])) != 0)
			return false;
	return a->id == b->id && strcmp(a->interface, b->interface) == 0 &&
	       strcmp(a->apn, b->apn) == 0 && a->ip_type == b->ip_type &&
	       strcmp(a->allowed_auth, b->allowed_auth) == 0 && strcmp(a->user, b->user) == 0 &&
	       strcmp(a->password, b->password) == 0 && a->mtu == b->mtu &&
	       a->headroom == b->headroom &&
	       memcmp(&a->ipv4_address, &b->ipv4_address, sizeof(a->ipv4_address)) == 0 &&
	       memcmp(&a->ipv6_address, &b->ipv6_address, sizeof(a->ipv6_address)) == 0 &&
	       a->route_metric == b->route_metric && a->default_route == b->default_route &&
	       a->autoconnect == b->autoconnect;
}

enum reload_action {
	RELOAD_NONE,   /* no mux, none in the file */
	RELOAD_KEEP,   /* running as it is: added at runtime, or the file says the same */
	RELOAD_REMOVE, /* from the file, gone from it */
	RELOAD_CHANGE, /* settings differ: torn down, created again */
	RELOAD_ADD,    /* new in the file */
};

/*
 * Everything that can be known before anything is torn down: the interface names the
 * reload would leave (kept muxes with theirs, added and changed ones with the file's) are
 * distinct, and each new one is free or a device qmapd made. Swaps are fine: both muxes are
 * torn down before either is created.
 */
static int reload_validate(struct modem *m, struct config_mux *const *next,
			   const enum reload_action *action, char *err, size_t errlen)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct config_mux *n = next[id];
		char e[256];
		int r;

		if (action[id] != RELOAD_ADD && action[id] != RELOAD_CHANGE)
			continue;
		for (unsigned o = CONFIG_MUX_ID_MIN; o <= CONFIG_MUX_ID_MAX; o++) {
			if (o == id || action[o] != RELOAD_KEEP)
				continue;
			if (strcmp(mux_netdev(datapath_mux(m->dp, o))->name, n->interface) == 0) {
				snprintf(err, errlen,
					 "[mux.%u]: interface %s is used by mux %u, which stays",
					 id, n->interface, o);
				return -EEXIST;
			}
		}
		/* A name one of our muxes holds now is ours; anything else must be free or ours. */
		bool ours = false;
		for (unsigned o = CONFIG_MUX_ID_MIN; o <= CONFIG_MUX_ID_MAX && !ours; o++)
			ours = (action[o] == RELOAD_REMOVE || action[o] == RELOAD_CHANGE) &&
			       strcmp(mux_netdev(datapath_mux(m->dp, o))->name, n->interface) == 0;
		if (ours)
			continue;
		r = modem_check_interface(m->rtnl, n, e, sizeof(e));
		if (r < 0) {
			snprintf(err, errlen, "[mux.%u]: %s", id, e);
			return r;
		}
	}
	return 0;
}

/*
 * Apply a validated plan: tear down what is removed or changed, then create what is added or
 * changed. If a creation fails anyway (the kernel said no), undo: delete what this reload
 * created and create the torn-down muxes again with their old settings.
 */
static int reload_apply(struct modem *m, struct config_mux *const *next,
			const enum reload_action *action, char *err, size_t errlen)
{
	/* The settings of the muxes torn down, taken from them: to go back if need be. */
	struct config_mux *old[CONFIG_MUX_ID_MAX + 1] = {};
	bool old_from_config[CONFIG_MUX_ID_MAX + 1];
	unsigned failed = 0;
	char e[CONTROL_ERROR_MAX];
	int r = 0;

	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		if (action[id] != RELOAD_REMOVE && action[id] != RELOAD_CHANGE)
			continue;
		old[id] = TAKE_PTR(m->mux_cfg[id]);
		old_from_config[id] = m->from_config[id];
		modem_del(m, id);
	}
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		if (action[id] != RELOAD_ADD && action[id] != RELOAD_CHANGE)
			continue;
		r = modem_add(m, next[id], true, e, sizeof(e));
		if (r < 0) {
			failed = id;
			break;
		}
	}
	if (r == 0)
		goto out;

	log_error_errno(r, "reload: %s: mux %u: %s; going back to the running configuration",
			m->name, failed, e);
	snprintf(err, errlen, "%s: mux %u: %s; the previous configuration is running again",
		 m->name, failed, e);
	for (unsigned id = CONFIG_MUX_ID_MIN; id < failed; id++)
		if (action[id] == RELOAD_ADD || action[id] == RELOAD_CHANGE)
			modem_del(m, id);
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		char e2[CONTROL_ERROR_MAX];

		if (action[id] != RELOAD_REMOVE && action[id] != RELOAD_CHANGE)
			continue;
		if (modem_add(m, old[id], old_from_config[id], e2, sizeof(e2)) < 0) {
			log_error("reload: %s: mux %u: cannot restore it: %s", m->name, id, e2);
			snprintf(err, errlen, "%s: mux %u: %s; mux %u could not be restored: %s",
				 m->name, failed, e, id, e2);
		}
	}
out:
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		free(old[id]);
	return r;
}

int modem_reload(struct modem *m, const struct config_modem *next, unsigned *ret_added,
		 unsigned *ret_removed, unsigned *ret_changed, char *err, size_t errlen)
{
	enum reload_action action[CONFIG_MUX_ID_MAX + 1] = {};
	char verr[CONTROL_ERROR_MAX];
	unsigned added = 0, removed = 0, changed = 0;
	int r;

	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct config_mux *n = next->mux[id];
		bool have = datapath_mux(m->dp, id) != NULL;

		if (have && m->from_config[id] && !n)
			action[id] = RELOAD_REMOVE, removed++;
		else if (have && n && !mux_cfg_equal(m->mux_cfg[id], n))
			action[id] = RELOAD_CHANGE, changed++;
		else if (!have && n)
			action[id] = RELOAD_ADD, added++;
		else if (have)
			action[id] = RELOAD_KEEP;
	}
	r = reload_validate(m, next->mux, action, verr, sizeof(verr));
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", m->name, verr);
		return r;
	}
	/* control = auto was resolved when the modem was created: the same auto is no change. */
	struct config_device nd = next->device;
	if (nd.control_auto && m->device.control_auto) {
		nd.control = m->device.control;
		if (nd.control_link_default && m->device.control_link_default)
			memcpy(nd.control_link, m->device.control_link, sizeof(nd.control_link));
	}
	if (memcmp(&nd, &m->device, sizeof(nd)) != 0)
		log_warning("reload: %s: changes of its settings other than muxes and device "
			    "take effect after a restart",
			    m->name);
	r = reload_apply(m, next->mux, action, err, errlen);
	if (r < 0)
		return r;

	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		if (action[id] == RELOAD_KEEP && next->mux[id])
			m->from_config[id] = true;
	if (added || removed || changed)
		log_info("reload: %s: %u mux(es) added, %u removed, %u changed", m->name, added,
			 removed, changed);
	if (ret_added)
		*ret_added = added;
	if (ret_removed)
		*ret_removed = removed;
	if (ret_changed)
		*ret_changed = changed;
	return 0;
}

/* ---- the devices kept across a crash ----------------------------------------------- */

void modem_record_devices(struct modem *m)
{
	const char *link = modem_state_link(m);
	struct mux_record *rec;

	if (!link || !m->devices_recorded)
		return;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return;
	/* Not those persist-devices keeps: they stay by the config's wish, not for a crash. */
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		struct mux *mux = datapath_mux(m->dp, id);
		if (mux && mux_is_kept(mux) && !m->device.persist_devices)
			(void)mux_record_set(rec, id, mux_netdev(mux)->name);
	}
	int r = mux_record_write(link, "devices", rec);
	if (r < 0)
		log_modem_warning_errno(m->name, r,
					"cannot record the devices kept across a crash");
	free(rec);
}

static bool device_in_use(const struct modem *m, const char *name)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		struct mux *mux = datapath_mux(m->dp, id);
		if (mux && strcmp(mux_netdev(mux)->name, name) == 0)
			return true;
	}
	return false;
}

/*
 * The devices the last run kept (IFF_PERSIST) for a crash, listed in "<link>.devices", that
 * no mux of this run took again (a mux removed from the config, a D-Bus bearer not restored,
 * a device renamed): they would stay for ever with their addresses and routes. Removed, as
 * long as the device by that name is still a persistent tun/tap marked as ours that nobody
 * holds (netdev_remove_kept()); anything else of that name is left alone.
 */
static void modem_remove_stale_devices(struct modem *m, const struct mux_record *stale)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const char *name = stale->name[id];
		if (!name[0] || device_in_use(m, name))
			continue;
		int r = netdev_remove_kept(m->rtnl, name);
		if (r == 0)
			log_mux_info(m->name, id, name,
				     "the device the last run kept is removed: no mux has it now");
		else if (r != -ENODEV)
			log_mux_warning_errno(m->name, id, name, r,
					      "leaving the device the last run kept: %s",
					      r == -EEXIST  ? "not a device of qmapd's"
					      : r == -EBUSY ? "in use"
							    : "cannot remove it");
	}
}

/* ---- life cycle --------------------------------------------------------------------- */

int modem_new(struct ev_loop *loop, struct rtnl *rtnl, const struct config_modem *cfg,
	      const struct modem_callbacks *cb, void *userdata, struct modem **ret)
{
	struct modem *m = calloc(1, sizeof(*m));
	char err[256];
	int r;

	if (!m)
		return log_modem_error_errno(cfg->name, ENOMEM, "out of memory");
	m->loop = loop;
	m->rtnl = rtnl;
	snprintf(m->name, sizeof(m->name), "%s", cfg->name);
	m->device = cfg->device;
	if (cb)
		m->cb = *cb;
	m->userdata = userdata;

	struct datapath_events events = {
		.on_modem_up = on_modem_up,
		.on_modem_down = on_modem_down,
		.on_control = on_control,
		.userdata = m,
	};
	r = datapath_new(loop, rtnl, &cfg->device, &events, &m->dp);
	if (r < 0)
		goto fail;

	if (control_mbim(m)) {
		const struct config_device *d = &m->device;
		r = wdm_new(loop, WDM_FRAMING_MBIM, d->control_link, wdm_to_modem, m, &m->wdm);
		if (r < 0) {
			log_modem_error_errno(m->name, r,
					      "cannot create the MBIM control bridge %s",
					      d->control_link);
			goto fail;
		}
		struct modem_control_callbacks mcb = { .on_ready = on_control_ready,
						       .on_lost = on_control_lost,
						       .on_reopen = on_control_reopen };
		struct modem_control_request req = { .open_timeout = d->open_timeout };
		r = mbim_control_new(loop, d->control_link, &req, &mcb, m, &m->ctl);
		if (r < 0)
			goto fail;
		wdm_set_on_reopened(m->wdm, on_function_reset, m);
	}
	if (control_qmi(m)) {
		const struct config_device *d = &m->device;
		r = wdm_new(loop, WDM_FRAMING_QMUX, d->control_link, wdm_to_modem, m, &m->wdm);
		if (r < 0) {
			log_modem_error_errno(m->name, r, "cannot create the QMI control bridge %s",
					      d->control_link);
			goto fail;
		}
		struct modem_control_request req = {
			.open_timeout = d->open_timeout,
			.dl_max_size = d->dl_max_size,
			.dl_max_datagrams = CONFIG_UL_MAX_DATAGRAMS_DEFAULT,
			.ul_max_size = d->ul_max_size,
			.ul_max_datagrams = d->ul_max_datagrams,
			.dl_buffer_size = datapath_dl_buffer_size(m->dp),
			.try_qmapv5 = d->qmap_version == QMAP_V5,
		};
		struct modem_control_callbacks qcb = { .on_ready = on_control_ready,
						       .on_lost = on_control_lost,
						       .on_reopen = on_control_reopen,
						       .data_interface = control_data_interface };
		r = qmi_control_new(loop, d->control_link, &req, &qcb, m, &m->ctl);
		if (r < 0)
			goto fail;
	}

	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		if (!cfg->mux[id])
			continue;
		r = modem_add(m, cfg->mux[id], true, err, sizeof(err));
		if (r < 0) {
			log_mux_error(m->name, id, NULL, "%s", err); /* err has the reason */
			goto fail;
		}
	}
	modem_bearers_restore(m);
	/* Read before this run writes it (modem_record_devices()); a bad file lists nothing. */
	struct mux_record *stale = calloc(1, sizeof(*stale));
	const char *link = modem_state_link(m);
	if (stale && link) {
		r = mux_record_read(link, "devices", stale);
		if (r < 0 && r != -ENOENT)
			log_modem_warning_errno(m->name, r,
						"ignoring the list of devices the last run kept");
		if (r == 0)
			modem_remove_stale_devices(m, stale);
	}
	free(stale);
	m->devices_recorded = true;
	modem_record_devices(m);
	*ret = m;
	return 0;
fail:
	modem_free(m);
	return r;
}

int modem_start(struct modem *m)
{
	int r = datapath_start(m->dp);
	if (r < 0)
		return r;
	modem_changed(m);
	return 0;
}

void modem_stop(struct modem *m)
{
	m->stopping = true;
	/* A restart: the modem keeps its sessions, the devices their addresses. */
	bool handover = session_handover() && has_sessions(m);
	if (handover)
		datapath_keep_modem(m->dp);
	for (unsigned id = 0; handover && id <= CONFIG_MUX_ID_MAX; id++) {
		struct mux *mux = datapath_mux(m->dp, id);
		/*
		 * Only the config's muxes and the recorded D-Bus bearers': the next qmapd has
		 * those (and their devices are kept, modem_add(), modem_mux_record_bearer()).
		 * A mux qmapctl added is not there after a restart: its session ends.
		 */
		if (!mux || !m->session[id] || (!m->from_config[id] && !m->bearer[id].set))
			continue;
		m->session[id]->handover = true;
		mux_hand_over(mux);
	}
	/* A stop: the devices go with the muxes (mux_unkeep_device()), nothing to list. */
	if (!handover && m->devices_recorded) {
		const char *link = modem_state_link(m);
		m->devices_recorded = false;
		if (link)
			(void)mux_record_write(link, "devices", &(struct mux_record){ 0 });
	}
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		/* A stop ends the D-Bus bearers' sessions: nothing left to bring back. */
		if (!handover)
			modem_bearer_forget(m, id);
		session_free_async(m->session[id]);
		m->session[id] = NULL;
	}
}

void modem_stop_control(struct modem *m)
{
	if (m->ctl)
		m->ctl->ops->stop(m->ctl);
	modem_changed(m); /* its control plane is closed: status and the bus show it */
}

bool modem_stopped(const struct modem *m)
{
	(void)m;
	return session_stops_pending() == 0;
}

bool modem_stopping(const struct modem *m)
{
	return m->stopping;
}

bool modem_taking_over(const struct modem *m)
{
	if (modem_reopening(m))
		return true;
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (session_taking_over(m->session[id]))
			return true;
	return false;
}

struct modem *modem_free(struct modem *m)
{
	if (!m)
		return NULL;
	/* Nobody to tell any more: the manager is letting go of it. */
	m->cb.on_change = NULL;
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		session_free_async(m->session[id]);
		m->session[id] = NULL;
		free(m->mux_cfg[id]);
		m->mux_cfg[id] = NULL;
	}
	if (m->ctl)
		m->ctl->ops->free(m->ctl);
	m->ctl = NULL;
	m->dp = datapath_free(m->dp);
	m->wdm = wdm_free(m->wdm);
	free(m);
	return NULL;
}
