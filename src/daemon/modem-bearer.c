/* SPDX-License-Identifier: MIT */
/*
 * A D-Bus client's connected bearers, recorded for the next qmapd (bearer-state.h): their
 * muxes are not in the config, so without the record a restart would end their sessions
 * and the client would lose the bearer object it holds. docs/ARCHITECTURE.md "Restart and
 * crash".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bearer-state.h"
#include "datapath.h"
#include "log-mux.h"
#include "modem-internal.h"

const char *modem_state_link(const struct modem *m)
{
	/* The records sit beside the control link, as the control plane's own state. */
	return m->device.control != CONFIG_CONTROL_NONE && m->device.control_link[0]
		       ? m->device.control_link
		       : NULL;
}

int modem_mux_record_bearer(struct modem *m, unsigned id, unsigned index, bool allow_roaming)
{
	const struct config_mux *c = modem_mux_config(m, id);
	const char *link = modem_state_link(m);
	struct bearer_state b = { .bearer = index, .allow_roaming = allow_roaming };
	int r = 0;

	if (!c || !link || index > BEARER_STATE_INDEX_MAX)
		return -EINVAL;
	/* The keys a D-Bus client sets (mmd_bearer_config()) and the device's name. */
	r = bearer_state_add_key(&b, "interface", c->interface);
	if (r == 0)
		r = bearer_state_add_key(&b, "ip-type", config_ip_type_to_string(c->ip_type));
	if (r == 0 && c->apn[0])
		r = bearer_state_add_key(&b, "apn", c->apn);
	if (r == 0 && c->allowed_auth[0])
		r = bearer_state_add_key(&b, "allowed-auth", c->allowed_auth);
	if (r == 0 && c->user[0])
		r = bearer_state_add_key(&b, "user", c->user);
	if (r == 0 && c->password[0])
		r = bearer_state_add_key(&b, "password", c->password);
	if (r == 0)
		r = bearer_state_add_key(&b, "default-route", c->default_route ? "yes" : "no");
	if (r == 0)
		r = bearer_state_add_key(&b, "autoconnect", c->autoconnect ? "yes" : "no");
	if (r == 0)
		r = bearer_state_write(link, id, &b);
	if (r < 0)
		return log_mux_warning_errno(m->name, id, c->interface, r,
					     "cannot record the D-Bus bearer for a restart");
	m->bearer[id] = (struct modem_bearer){ true, index, allow_roaming };
	/* Its device outlives a crash too, for the next qmapd to take the session over. */
	struct mux *mux = datapath_mux(m->dp, id);
	r = mux ? mux_keep_device(mux) : 0;
	if (r < 0)
		log_mux_warning_errno(m->name, id, c->interface, r,
				      "cannot keep the device across a crash");
	modem_record_devices(m);
	return 0;
}

bool modem_mux_bearer(const struct modem *m, unsigned id, unsigned *ret_index,
		      bool *ret_allow_roaming)
{
	if (id > CONFIG_MUX_ID_MAX || !m->bearer[id].set)
		return false;
	*ret_index = m->bearer[id].index;
	*ret_allow_roaming = m->bearer[id].allow_roaming;
	return true;
}

void modem_bearer_forget(struct modem *m, unsigned id)
{
	const char *link = modem_state_link(m);

	if (id > CONFIG_MUX_ID_MAX || !m->bearer[id].set)
		return;
	m->bearer[id].set = false;
	if (link)
		bearer_state_remove(link, id);
}

/* One record back as a mux; err says why not. */
static int restore_one(struct modem *m, unsigned id, const struct bearer_state *b, char *err,
		       size_t errlen)
{
	struct config_mux c;
	int r;

	config_mux_init_defaults(&c, id);
	for (unsigned i = 0; i < b->n_keys; i++) {
		/* Only the keys modem_mux_record_bearer() writes: a record is no config file. */
		static const char *const allowed[] = { "interface",	"ip-type",    "apn",
						       "allowed-auth",	"user",	      "password",
						       "default-route", "autoconnect" };
		bool ok = false;
		for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++)
			ok |= strcmp(b->keys[i].name, allowed[k]) == 0;
		if (!ok) {
			snprintf(err, errlen, "key '%s' has no place in a bearer record",
				 b->keys[i].name);
			return -EINVAL;
		}
		r = config_mux_set(&c, b->keys[i].name, b->keys[i].value, err, errlen);
		if (r < 0)
			return r;
	}
	r = config_mux_finish(&c, err, errlen);
	if (r < 0)
		return r;
	c.client_managed = true; /* as every D-Bus bearer's (mmd_bearer_config()) */
	r = modem_add(m, &c, false, err, errlen);
	if (r < 0)
		return r;
	m->bearer[id] = (struct modem_bearer){ true, b->bearer, b->allow_roaming };
	/* Kept again: attaching to the kept device cleared IFF_PERSIST (persist-devices off),
	 * and the next crash would take it with its addresses. */
	struct mux *mux = datapath_mux(m->dp, id);
	r = mux ? mux_keep_device(mux) : 0;
	if (r < 0)
		log_mux_warning_errno(m->name, id, c.interface, r,
				      "cannot keep the device across a crash");
	return 0;
}

/* Whether this qmapd offers ModemManager's D-Bus API (main.c says so before any modem). */
static bool bearers_on_dbus = true;

void modem_bearers_set_dbus(bool on)
{
	bearers_on_dbus = on;
}

void modem_bearers_restore(struct modem *m)
{
	const char *link = modem_state_link(m);

	for (unsigned id = CONFIG_MUX_ID_MIN; link && id <= CONFIG_MUX_ID_MAX; id++) {
		struct bearer_state b;
		char err[256] = "";
		int r = bearer_state_read(link, id, &b);

		if (r == -ENOENT)
			continue;
		if (r == 0 && !bearers_on_dbus) {
			/* Nobody could see the bearer, let alone disconnect it: its mux is not
			 * added, so its session ends as that of any mux the last run had and
			 * this one lacks (modem_control_ops.sessions_ready), and its kept
			 * device goes (modem_new()). */
			log_mux_warning(m->name, id, NULL,
					"ending the D-Bus bearer %u the last run left: this run "
					"offers no D-Bus API to see or disconnect it",
					b.bearer);
			bearer_state_remove(link, id);
			continue;
		}
		if (r == 0 && datapath_mux(m->dp, id)) {
			r = -EEXIST;
			snprintf(err, sizeof(err), "the config has mux %u now", id);
		} else if (r == 0) {
			r = restore_one(m, id, &b, err, sizeof(err));
		} else {
			snprintf(err, sizeof(err), "%s", strerror(-r));
		}
		if (r < 0) {
			log_mux_warning(m->name, id, NULL,
					"dropping the D-Bus bearer the last run left: %s", err);
			bearer_state_remove(link, id);
			continue;
		}
		log_mux_info(m->name, id, m->mux_cfg[id]->interface,
			     "the D-Bus bearer %u of the last run is back", b.bearer);
	}
}
