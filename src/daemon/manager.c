/* SPDX-License-Identifier: MIT */
/* The set of modems: creation, naming, routing by name, reload across them (manager.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery.h"
#include "instance.h"
#include "log-modem.h"
#include "log-mux.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "modem.h"
#include "notify.h"
#include "usb-device.h"
#include "usb-spec.h"

/* One modem as the manager holds it: the modem, its locks, where its config came from. */
struct entry {
	struct entry *next;
	struct manager *manager;
	struct modem *modem;
	struct instance *lock;
	bool from_section; /* a [modem.NAME] section or the old single-modem form; else template */
	char spec[CONFIG_VALUE_MAX + 1]; /* the device its config names (usb-serial: included) */
};

/* A discovered modem's identity and the name it got: the same name for the daemon's life. */
struct name {
	char identity[sizeof(((struct discovery_device *)0)->serial) + 16];
	char name[CONFIG_MODEM_NAME_MAX + 1];
};

struct manager {
	struct ev_loop *loop;
	struct rtnl *rtnl;
	struct config *config;
	struct entry *entries; /* in the order they were created */
	bool legacy;	       /* [device] device = SPEC: one modem, the old names (qmap<N>) */
	bool stopping;
	struct discovery *discovery;
	struct name *names; /* the registry of discovered modems */
	size_t n_names;
	struct manager_observer observer;
	void *observer_data;
	/* Why the last reload's file was refused, "" after one that was taken: STATUS= says it
	 * until then, so `systemctl status` shows that the file on disk is not what runs. */
	char refused[sizeof(((struct config *)0)->path) + sizeof(": ") + CONFIG_ERROR_MAX];
};

static void config_freep(struct config **c)
{
	config_free(*c);
}

static unsigned manager_count(const struct manager *m)
{
	unsigned n = 0;

	for (const struct entry *e = m->entries; e; e = e->next)
		n++;
	return n;
}

static struct entry *manager_find(const struct manager *m, const char *name)
{
	for (struct entry *e = m->entries; e; e = e->next)
		if (strcmp(modem_name(e->modem), name) == 0)
			return e;
	return NULL;
}

/* STATUS= for systemd: one line a person can read in `systemctl status qmapd`. */
static void manager_update_status(struct manager *m)
{
	unsigned n = manager_count(m), total = 0, connected = 0;
	char line[512] = "", status[768];
	size_t o = 0;

	if (n == 0) {
		snprintf(status, sizeof(status), "no modem%s",
			 m->config->discovery ? " yet (discovery)" : "");
	} else if (n == 1) {
		modem_count_muxes(m->entries->modem, &total, &connected);
		snprintf(status, sizeof(status), "modem %s %s, %u of %u mux(es) connected",
			 modem_name(m->entries->modem), modem_state(m->entries->modem), connected,
			 total);
	} else {
		for (const struct entry *e = m->entries; e; e = e->next) {
			unsigned t, c;

			modem_count_muxes(e->modem, &t, &c);
			total += t;
			connected += c;
			if (o < sizeof(line))
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s %s %u/%u",
						      o ? ", " : "", modem_name(e->modem),
						      modem_state(e->modem), c, t);
		}
		snprintf(status, sizeof(status), "%u modems, %u of %u mux(es) connected: %s", n,
			 connected, total, line);
	}
	if (m->refused[0])
		notify_status("reload refused: %s; running with the previous configuration; %s",
			      m->refused, status);
	else
		notify_status("%s", status);
}

static void on_modem_change(void *userdata, struct modem *modem)
{
	struct manager *m = userdata;

	manager_update_status(m);
	if (m->observer.on_change)
		m->observer.on_change(m->observer_data, modem);
}

void manager_set_observer(struct manager *m, const struct manager_observer *ob, void *userdata)
{
	m->observer = ob ? *ob : (struct manager_observer){};
	m->observer_data = userdata;
}

struct modem *manager_next_modem(const struct manager *m, const struct modem *prev)
{
	const struct entry *e = m->entries;

	if (prev) {
		while (e && e->modem != prev)
			e = e->next;
		e = e ? e->next : NULL;
	}
	return e ? e->modem : NULL;
}

/* An interface one modem would take that another one has: refused, not taken over. */
static const char *interface_owner(const struct manager *m, const struct entry *self,
				   const char *ifname)
{
	for (const struct entry *e = m->entries; e; e = e->next)
		if (e != self && modem_has_interface(e->modem, ifname))
			return modem_name(e->modem);
	return NULL;
}

/* A section that names its modem by serial: created when discovery finds that modem. */
static bool spec_is_serial(const char *spec)
{
	return strncmp(spec, "usb-serial:", strlen("usb-serial:")) == 0;
}

/*
 * control = auto: mbim for an MBIM function, else qmi. mbim < 0: not known yet (a configured
 * device), its descriptors tell if it is present; absent, or a sim: device (whose function is
 * known only once connected), qmi.
 */
static void control_resolve(struct config_modem *c, int mbim)
{
	bool is_mbim = false;
	char buf[32];
	int r;

	if (!c->device.control_auto)
		return;
	if (mbim >= 0) {
		is_mbim = mbim;
	} else if (usb_spec_is_usb(c->device.device) &&
		   (r = usb_function_probe(c->device.device, &is_mbim)) < 0) {
		is_mbim = false;
		log_modem_info(c->name, "%s: %s; control = auto means qmi until a restart",
			       c->device.device,
			       r == -ENODEV ? "not present (or neither QMI nor MBIM)"
					    : strerror(-r));
	}
	c->device.control = is_mbim ? CONFIG_CONTROL_MBIM : CONFIG_CONTROL_QMI;
	config_modem_default_link(c);
	log_modem_info(c->name, "control: %s",
		       config_control_describe(&c->device, buf, sizeof(buf)));
}

/*
 * Create, lock and (once the manager runs) start a modem for cfg, on device (NULL: cfg's;
 * a discovered modem's usb-path: spec otherwise). mbim: whether discovery found an MBIM
 * function, -1 when it is not known (control = auto looks). Muxes whose interface another
 * modem has are left out, with an error logged, rather than taken from it.
 */
static int manager_create(struct manager *m, const struct config_modem *cfg, bool from_section,
			  bool start, const char *device, int mbim)
{
	const struct modem_callbacks cb = { .on_change = on_modem_change };
	struct config_modem *c;
	struct entry *e, **tail;
	int r;

	if (manager_find(m, cfg->name)) {
		log_modem_error(cfg->name, "exists already");
		return -EEXIST;
	}
	e = calloc(1, sizeof(*e));
	c = malloc(sizeof(*c));
	if (!e || !c || config_modem_copy(c, cfg) < 0) {
		free(e);
		free(c);
		return log_error_errno(ENOMEM, "modem %s", cfg->name);
	}
	if (device)
		snprintf(c->device.device, sizeof(c->device.device), "%s", device);
	control_resolve(c, mbim);
	snprintf(e->spec, sizeof(e->spec), "%s", cfg->device.device);
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const char *owner;

		if (!c->mux[id])
			continue;
		owner = interface_owner(m, NULL, c->mux[id]->interface);
		if (owner) {
			log_mux_error(c->name, id, NULL,
				      "interface %s is used by modem %s; mux left out",
				      c->mux[id]->interface, owner);
			free(c->mux[id]);
			c->mux[id] = NULL;
		}
	}
	e->manager = m;
	e->from_section = from_section;
	r = instance_check_modem_paths(&c->device);
	if (r >= 0)
		r = instance_lock_modem(m->config->device.control_socket, &c->device, &e->lock);
	if (r >= 0)
		r = modem_new(m->loop, m->rtnl, c, &cb, m, &e->modem);
	config_modem_clear(c);
	free(c);
	if (r >= 0 && start)
		r = modem_start(e->modem);
	if (r < 0) {
		e->modem = modem_free(e->modem);
		e->lock = instance_unlock(e->lock);
		free(e);
		return r;
	}
	for (tail = &m->entries; *tail; tail = &(*tail)->next)
		;
	*tail = e;
	log_modem_info(modem_name(e->modem), "%s", modem_device(e->modem));
	manager_update_status(m);
	if (m->observer.on_added)
		m->observer.on_added(m->observer_data, e->modem);
	return 0;
}

static void manager_remove(struct manager *m, struct entry *e)
{
	for (struct entry **p = &m->entries; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			break;
		}
	log_modem_info(modem_name(e->modem), "removed");
	if (m->observer.on_removed)
		m->observer.on_removed(m->observer_data, e->modem);
	e->modem = modem_free(e->modem);
	e->lock = instance_unlock(e->lock);
	free(e);
	manager_update_status(m);
}

/*
 * The modem a request is for: the named one, or the only one. need_one: without a name and
 * with several modems, the request is ambiguous (mux-add, mux-del). *ret NULL: all of them.
 */
static int manager_route(struct manager *m, const char *name, bool need_one, struct entry **ret,
			 char *err, size_t errlen)
{
	unsigned n = manager_count(m);

	*ret = NULL;
	if (name) {
		*ret = manager_find(m, name);
		if (!*ret) {
			snprintf(err, errlen, "no modem '%s'%s", name,
				 n ? "" : " (no modem is present)");
			return -ENODEV;
		}
		return 0;
	}
	if (!need_one)
		return 0;
	if (n == 0) {
		snprintf(err, errlen, "no modem is present");
		return -ENODEV;
	}
	if (n > 1) {
		snprintf(err, errlen, "%u modems: name one with -m (qmapctl -m NAME ...)", n);
		return -ENOTUNIQ;
	}
	*ret = m->entries;
	return 0;
}

/* ---- requests ----------------------------------------------------------------------- */

static int manager_collect(struct manager *m, const char *name, json_t *(*fn)(struct modem *),
			   const char *key, json_t **ret, char *err, size_t errlen)
{
	struct entry *only;
	json_t *list;
	int r;

	r = manager_route(m, name, false, &only, err, errlen);
	if (r < 0)
		return r;
	list = json_array();
	for (struct entry *e = m->entries; list && e; e = e->next)
		if ((!only || e == only) && json_array_append_new(list, fn(e->modem)) < 0)
			list = (json_decref(list), NULL);
	*ret = list ? json_pack("{s:o}", key, list) : NULL;
	if (!*ret) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int manager_status(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen)
{
	return manager_collect(m, modem, modem_status, "modems", ret, err, errlen);
}

int manager_stats(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen)
{
	return manager_collect(m, modem, modem_stats, "modems", ret, err, errlen);
}

int manager_mux_list(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen)
{
	struct entry *only;
	json_t *list;
	int r;

	r = manager_route(m, modem, false, &only, err, errlen);
	if (r < 0)
		return r;
	list = json_array();
	for (struct entry *e = m->entries; list && e; e = e->next)
		if ((!only || e == only) && modem_mux_list(e->modem, list) < 0)
			list = (json_decref(list), NULL);
	*ret = list ? json_pack("{s:o}", "muxes", list) : NULL;
	if (!*ret) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Routing errors are -ENODEV and -ENOTUNIQ only (manager.h): a modem's own become -EIO. */
static int not_routing(int r)
{
	return r == -ENODEV || r == -ENOTUNIQ ? -EIO : r;
}

static int mux_add(struct manager *m, const char *modem, const struct config_mux *cfg,
		   bool from_config, json_t **ret, char *err, size_t errlen)
{
	struct config_mux c = *cfg;
	struct entry *e;
	const char *owner;
	int r;

	r = manager_route(m, modem, true, &e, err, errlen);
	if (r < 0)
		return r;
	if (!m->legacy)
		config_mux_name_for_modem(&c, modem_name(e->modem));
	owner = interface_owner(m, e, c.interface);
	if (owner) {
		snprintf(err, errlen, "interface %s is used by modem %s", c.interface, owner);
		return -EEXIST;
	}
	r = modem_mux_add(e->modem, &c, from_config, err, errlen);
	if (r < 0)
		return not_routing(r);
	*ret = json_pack("{s:s, s:i, s:s}", "modem", modem_name(e->modem), "id", (int)c.id,
			 "interface", c.interface);
	return *ret ? 0 : -ENOMEM;
}

int manager_mux_add(struct manager *m, const char *modem, const struct config_mux *cfg,
		    json_t **ret, char *err, size_t errlen)
{
	return mux_add(m, modem, cfg, false, ret, err, errlen);
}

int manager_mux_restore(struct manager *m, const char *modem, const struct config_mux *cfg,
			bool from_config, json_t **ret, char *err, size_t errlen)
{
	return mux_add(m, modem, cfg, from_config, ret, err, errlen);
}

int manager_mux_del(struct manager *m, const char *modem, unsigned id, json_t **ret, char *err,
		    size_t errlen)
{
	struct entry *e;
	int r;

	r = manager_route(m, modem, true, &e, err, errlen);
	if (r < 0)
		return r;
	r = modem_mux_del(e->modem, id, err, errlen);
	if (r < 0)
		return not_routing(r);
	*ret = json_pack("{s:s, s:i}", "modem", modem_name(e->modem), "id", (int)id);
	return *ret ? 0 : -ENOMEM;
}

/* ---- reload ------------------------------------------------------------------------- */

static const struct config_modem *config_find_modem(const struct config *c, const char *name)
{
	for (unsigned i = 0; i < c->n_modems; i++)
		if (strcmp(c->modem[i].name, name) == 0)
			return &c->modem[i];
	return NULL;
}

/* What a running modem becomes under the new config. */
enum modem_plan {
	PLAN_KEEP,     /* same device: its muxes are reloaded */
	PLAN_RECREATE, /* its device changed */
	PLAN_REMOVE,   /* its section is gone */
};

/*
 * The config a running modem gets from next: its section, or the template; NULL when its
 * section is gone. *buf for the template's: zeroed before the first call, its muxes freed by
 * the next call or config_modem_clear(). 0, or -ENOMEM: the reload cannot tell.
 */
static int next_config_of(const struct config *next, const struct entry *e,
			  struct config_modem *buf, const struct config_modem **ret)
{
	const struct config_modem *c = config_find_modem(next, modem_name(e->modem));
	int r;

	config_modem_clear(buf);
	*ret = c;
	if (c || e->from_section)
		return 0;
	/* The name is the running modem's, valid: only memory can be short. */
	r = config_modem_from_template(next, modem_name(e->modem), modem_device(e->modem), buf);
	if (r < 0)
		return r;
	*ret = buf;
	return 0;
}

/*
 * Interfaces the reload would give two modems: refused before anything changes. Checked over
 * the muxes of the file (runtime muxes are checked by each modem and the kernel).
 */
static int reload_check_names(struct manager *m, const struct config *next, char *err,
			      size_t errlen)
{
	struct config_modem *buf = calloc(2, sizeof(*buf));
	int r = 0;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (struct entry *e = m->entries; e && r == 0; e = e->next) {
		const struct config_modem *a;

		r = next_config_of(next, e, &buf[0], &a);
		if (r < 0 || !a)
			continue;
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX && r == 0; id++) {
			const char *ifname;

			if (!a->mux[id])
				continue;
			ifname = a->mux[id]->interface;
			for (struct entry *o = m->entries; o && r == 0; o = o->next) {
				const struct config_modem *b;

				if (o == e || !modem_has_interface(o->modem, ifname))
					continue;
				r = next_config_of(next, o, &buf[1], &b);
				for (unsigned j = CONFIG_MUX_ID_MIN; b && j <= CONFIG_MUX_ID_MAX;
				     j++)
					if (b->mux[j] &&
					    strcmp(b->mux[j]->interface, ifname) == 0) {
						snprintf(err, errlen,
							 "%s: mux %u: interface %s stays with "
							 "modem %s",
							 a->name, id, ifname, modem_name(o->modem));
						r = -EEXIST;
						break;
					}
			}
		}
	}
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	config_modem_clear(&buf[0]);
	config_modem_clear(&buf[1]);
	free(buf);
	return r;
}

int manager_reload(struct manager *m, const char *modem, json_t **ret, char *err, size_t errlen)
{
	_cleanup_(config_freep) struct config *next = NULL;
	struct config_modem *buf = NULL;
	char perr[CONFIG_ERROR_MAX], e2[CONFIG_ERROR_MAX];
	unsigned added = 0, removed = 0, changed = 0, failed = 0;
	unsigned m_added = 0, m_removed = 0, m_recreated = 0; /* modems */
	struct entry *only;
	int r, first_error = 0;

	/* The whole file is reloaded; a name only has to be right. */
	r = manager_route(m, modem, false, &only, err, errlen);
	if (r < 0)
		return r;
	r = config_load_file(m->config->path, &next, perr, sizeof(perr));
	if (r < 0) {
		snprintf(err, errlen, "%s; keeping the running configuration", perr);
		log_error("reload: %s", err);
		snprintf(m->refused, sizeof(m->refused), "%s", perr);
		manager_update_status(m);
		return not_routing(r);
	}
	r = reload_check_names(m, next, perr, sizeof(perr));
	if (r < 0) {
		snprintf(err, errlen, "%s: %s; keeping the running configuration", m->config->path,
			 perr);
		log_error("reload: %s", err);
		snprintf(m->refused, sizeof(m->refused), "%s: %s", m->config->path, perr);
		manager_update_status(m);
		return r;
	}
	m->refused[0] = '\0';
	if (strcmp(next->device.control_socket, m->config->device.control_socket) != 0 ||
	    strcmp(next->device.admin_group, m->config->device.admin_group) != 0 ||
	    next->discovery != m->config->discovery || next->n_exclude != m->config->n_exclude ||
	    memcmp(next->exclude, m->config->exclude, sizeof(next->exclude)) != 0 ||
	    next->dbus.enabled != m->config->dbus.enabled || next->dbus.bus != m->config->dbus.bus)
		log_warning("reload: control-socket, admin-group, exclude, discovery and [dbus] "
			    "take effect after a restart");
	buf = calloc(1, sizeof(*buf));
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	err[0] = '\0';

	/* Running modems: removed, re-created or reloaded, each on its own. */
	for (struct entry *e = m->entries, *n; e; e = n) {
		const struct config_modem *c;
		unsigned a = 0, d = 0, ch = 0;

		n = e->next;
		r = next_config_of(next, e, buf, &c);
		if (r < 0) {
			/* Left as it runs: removing it for want of memory would be worse. */
			failed++;
			first_error = first_error ?: r;
			if (!err[0])
				snprintf(err, errlen, "modem %s: out of memory",
					 modem_name(e->modem));
			continue;
		}
		if (!c) {
			manager_remove(m, e);
			m_removed++;
			continue;
		}
		if (strcmp(c->device.device, e->from_section ? e->spec : modem_device(e->modem)) !=
		    0) {
			bool section = e->from_section;

			log_info("reload: modem %s: device %s -> %s: re-created", c->name, e->spec,
				 c->device.device);
			manager_remove(m, e);
			if (spec_is_serial(c->device.device)) {
				/* Discovery finds it again when it is plugged in next. */
				m_removed++;
				continue;
			}
			r = manager_create(m, c, section, true, NULL, -1);
			if (r < 0) {
				failed++;
				first_error = first_error ?: r;
				if (!err[0])
					snprintf(err, errlen, "modem %s: cannot create it: %s",
						 c->name, strerror(-r));
			}
			m_recreated++;
			continue;
		}
		r = modem_reload(e->modem, c, &a, &d, &ch, e2, sizeof(e2));
		if (r < 0) {
			failed++;
			first_error = first_error ?: r;
			log_error("reload: %s", e2);
		}
		added += a, removed += d, changed += ch;
		if (r < 0 && !err[0])
			snprintf(err, errlen, "%s", e2);
	}
	/* New sections; those naming a serial wait for discovery to find their modem. */
	for (unsigned i = 0; i < next->n_modems; i++) {
		if (manager_find(m, next->modem[i].name) ||
		    spec_is_serial(next->modem[i].device.device))
			continue;
		r = manager_create(m, &next->modem[i], true, true, NULL, -1);
		if (r < 0) {
			failed++;
			first_error = first_error ?: r;
			if (!err[0])
				snprintf(err, errlen, "modem %s: cannot create it: %s",
					 next->modem[i].name, strerror(-r));
			continue;
		}
		m_added++;
	}
	config_modem_clear(buf);
	free(buf);

	/* Daemon-wide keys stay as they are until a restart; the rest is the new file's. */
	snprintf(next->device.control_socket, sizeof(next->device.control_socket), "%s",
		 m->config->device.control_socket);
	snprintf(next->device.admin_group, sizeof(next->device.admin_group), "%s",
		 m->config->device.admin_group);
	next->discovery = m->config->discovery;
	next->dbus = m->config->dbus;
	config_free(m->config);
	m->config = TAKE_PTR(next);
	manager_update_status(m);
	if (failed)
		return not_routing(first_error);
	log_info("reload: muxes: %u added, %u removed, %u changed; modems: %u added, %u removed, "
		 "%u re-created",
		 added, removed, changed, m_added, m_removed, m_recreated);
	snprintf(err, errlen, "%u added, %u removed, %u changed", added, removed, changed);
	*ret = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "added", (int)added, "removed",
			 (int)removed, "changed", (int)changed, "modems-added", (int)m_added,
			 "modems-removed", (int)m_removed, "modems-recreated", (int)m_recreated);
	return *ret ? 0 : -ENOMEM;
}

/* ---- stats -------------------------------------------------------------------------- */

void manager_print_stats(const struct manager *m, FILE *f, const char *prefix)
{
	for (const struct entry *e = m->entries; e; e = e->next) {
		char p[256];

		snprintf(p, sizeof(p), "%s%s ", prefix, modem_name(e->modem));
		modem_print_stats(e->modem, f, p);
	}
}

/* ---- discovery ---------------------------------------------------------------------- */

static const char *registry_find(const struct manager *m, const char *identity)
{
	for (size_t i = 0; i < m->n_names; i++)
		if (strcmp(m->names[i].identity, identity) == 0)
			return m->names[i].name;
	return NULL;
}

static bool name_taken(const struct manager *m, const char *name)
{
	if (manager_find(m, name) || config_find_modem(m->config, name))
		return true;
	for (size_t i = 0; i < m->n_names; i++)
		if (strcmp(m->names[i].name, name) == 0)
			return true;
	return false;
}

static int registry_add(struct manager *m, const char *identity, const char *name)
{
	struct name *n = realloc(m->names, (m->n_names + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	m->names = n;
	n = &m->names[m->n_names++];
	snprintf(n->identity, sizeof(n->identity), "%s", identity);
	snprintf(n->name, sizeof(n->name), "%s", name);
	return 0;
}

/*
 * A recognised modem is there. One whose modem object exists is left to its transport, which
 * claims it again by itself (a serial seen on another port re-creates it there); a section
 * whose device matches gives name and settings; anything else gets the next free modem<K>
 * and the template.
 */
static bool on_arrive(void *userdata, const struct discovery_device *d)
{
	struct manager *m = userdata;
	struct config_modem *cfg = NULL;
	const struct config_modem *section = NULL;
	char identity[sizeof(((struct name *)0)->identity)], name[CONFIG_MODEM_NAME_MAX + 1] = "";
	const char *known;
	struct entry *e;
	int r;

	if (m->stopping)
		return false;
	if (d->serial[0])
		snprintf(identity, sizeof(identity), "usb-serial:%s", d->serial);
	else
		snprintf(identity, sizeof(identity), "usb-path:%s", d->path);
	known = registry_find(m, identity);
	if (known)
		section = config_find_modem(m->config, known);
	for (unsigned i = 0; !known && !section && i < m->config->n_modems; i++)
		if (config_spec_matches_usb(m->config->modem[i].device.device, d->vid, d->pid,
					    d->path, d->serial))
			section = &m->config->modem[i];
	if (!known && !section && !m->config->discovery) {
		log_debug("discovery: %04x:%04x at %s: no [modem.NAME] names it (discovery = no)",
			  d->vid, d->pid, d->path);
		return false;
	}
	if (known)
		snprintf(name, sizeof(name), "%s", known);
	else if (section)
		snprintf(name, sizeof(name), "%s", section->name);

	/* Its transport has it: the same port, or a section that pins it itself. */
	e = name[0] ? manager_find(m, name) : NULL;
	if (e && (strcmp(modem_device(e->modem), d->spec) == 0 ||
		  (section && !spec_is_serial(section->device.device))))
		return true;
	if (manager_count(m) >= CONFIG_MAX_MODEMS && !e) {
		log_warning("modem %04x:%04x at %s: already %d modems; not taking it", d->vid,
			    d->pid, d->path, CONFIG_MAX_MODEMS);
		return false;
	}
	for (unsigned k = 0; !name[0] && k < 1000; k++) {
		snprintf(name, sizeof(name), "modem%u", k);
		if (name_taken(m, name))
			name[0] = '\0';
	}
	if (!name[0])
		return false;
	if (!section) {
		cfg = malloc(sizeof(*cfg));
		if (!cfg || config_modem_from_template(m->config, name, d->spec, cfg) < 0) {
			log_modem_error(name, "cannot make its configuration for %s", d->spec);
			free(cfg);
			return false;
		}
	}
	log_modem_info(name, "found %04x:%04x at %s%s%s (%s)", d->vid, d->pid, d->path,
		       d->serial[0] ? ", serial " : "", d->serial, d->how ?: "?");
	if (e) {
		log_modem_info(name, "now at %s", d->spec);
		manager_remove(m, e);
	}
	r = manager_create(m, section ?: cfg, !!section, true, d->spec, d->mbim);
	config_modem_clear(cfg);
	free(cfg);
	if (r < 0)
		return false;
	if (!known && registry_add(m, identity, name) < 0)
		log_modem_warning_errno(name, ENOMEM, "its name is not kept for a replug");
	return true;
}

static void on_leave(void *userdata, const struct discovery_device *d)
{
	(void)userdata;
	log_debug("discovery: %04x:%04x at %s is gone", d->vid, d->pid, d->path);
}

/* Discovery with the configured excludes and, implicitly, the modems the file pins. */
static int manager_start_discovery(struct manager *m)
{
	static const struct discovery_callbacks cb = { .on_arrive = on_arrive,
						       .on_leave = on_leave };
	const char *excludes[CONFIG_MAX_EXCLUDES + CONFIG_MAX_MODEMS];
	unsigned n = 0;
	int r;

	for (unsigned i = 0; i < m->config->n_exclude; i++)
		excludes[n++] = m->config->exclude[i];
	for (unsigned i = 0; i < m->config->n_modems; i++) {
		const char *spec = m->config->modem[i].device.device;

		/* A serial section is matched on arrival instead: its modem is found, not pinned. */
		if (strncmp(spec, "usb:", 4) == 0 || strncmp(spec, "usb-path:", 9) == 0)
			excludes[n++] = spec;
	}
	r = discovery_new(m->loop, excludes, n, &cb, m, &m->discovery);
	if (r >= 0)
		r = discovery_start(m->discovery);
	if (r < 0) {
		m->discovery = discovery_free(m->discovery);
		log_warning_errno(
			r, "discovery: cannot watch USB; only the configured modems are served");
	}
	return 0;
}

/* ---- life cycle --------------------------------------------------------------------- */

int manager_new(struct ev_loop *loop, struct rtnl *rtnl, struct config *config,
		struct manager **ret)
{
	struct manager *m = calloc(1, sizeof(*m));
	int r;

	if (!m) {
		config_free(config);
		return -ENOMEM;
	}
	m->loop = loop;
	m->rtnl = rtnl;
	m->config = config;
	m->legacy = !config->discovery && config->device.device[0];

	for (unsigned i = 0; i < config->n_modems; i++) {
		if (spec_is_serial(config->modem[i].device.device))
			continue; /* created when discovery finds it */
		r = manager_create(m, &config->modem[i], true, false, NULL, -1);
		if (r < 0) {
			manager_free(m);
			return r;
		}
	}
	*ret = m;
	return 0;
}

int manager_start(struct manager *m)
{
	for (struct entry *e = m->entries; e; e = e->next) {
		int r = modem_start(e->modem);
		if (r < 0)
			return r;
	}
	/* With discovery = no, still watched for the sections that name a modem by serial. */
	bool serial_sections = false;
	for (unsigned i = 0; i < m->config->n_modems; i++)
		serial_sections |= spec_is_serial(m->config->modem[i].device.device);
	if (m->config->discovery || serial_sections)
		manager_start_discovery(m);
	/* The first scan has reported what is plugged in. Without a modem qmapd waits for one
	 * (hotplug); said once here, as a host without a modem yet is a state, not an error. */
	if (m->discovery && !m->entries)
		log_info("no modem found; waiting for one to be plugged in");
	manager_update_status(m);
	return 0;
}

bool manager_taking_over(const struct manager *m)
{
	for (const struct entry *e = m->entries; e; e = e->next)
		if (modem_taking_over(e->modem))
			return true;
	return false;
}

void manager_stop(struct manager *m)
{
	m->stopping = true;
	m->discovery = discovery_free(m->discovery);
	for (struct entry *e = m->entries; e; e = e->next)
		modem_stop(e->modem);
}

void manager_stop_control(struct manager *m)
{
	for (struct entry *e = m->entries; e; e = e->next)
		modem_stop_control(e->modem);
}

bool manager_stopped(const struct manager *m)
{
	for (const struct entry *e = m->entries; e; e = e->next)
		if (!modem_stopped(e->modem))
			return false;
	return true;
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	m->discovery = discovery_free(m->discovery);
	while (m->entries) {
		struct entry *e = m->entries;

		m->entries = e->next;
		if (m->observer.on_removed)
			m->observer.on_removed(m->observer_data, e->modem);
		e->modem = modem_free(e->modem);
		e->lock = instance_unlock(e->lock);
		free(e);
	}
	config_free(m->config);
	free(m->names);
	free(m);
	return NULL;
}
