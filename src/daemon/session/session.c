/* SPDX-License-Identifier: MIT */
/* What QMI and MBIM sessions share (session.h): state, device configuration, backoff. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"
#include "log-mux.h"
#include "rtnl.h"
#include "session.h"

#define SESSION_RETRY_MIN_SECONDS 1.0
#define SESSION_RETRY_MAX_SECONDS 60.0
/* A refusal that retrying soon cannot change: start slow, never storm. */
#define SESSION_REFUSED_MIN_SECONDS 30.0
#define SESSION_REFUSED_MAX_SECONDS 600.0

static unsigned stops_pending;
static bool handover;

void session_set_handover(bool on)
{
	handover = on;
}

bool session_handover(void)
{
	return handover;
}

unsigned session_stops_pending(void)
{
	return stops_pending;
}

void session_stop_begin(void)
{
	stops_pending++;
}

void session_stop_end(void)
{
	stops_pending--;
}

const char *session_state_to_string(enum session_state state)
{
	switch (state) {
	case SESSION_STATE_DISABLED:
		return "disabled";
	case SESSION_STATE_WAITING:
		return "waiting";
	case SESSION_STATE_CONNECTING:
		return "connecting";
	case SESSION_STATE_CONNECTED:
		return "connected";
	case SESSION_STATE_DISCONNECTING:
		return "disconnecting";
	case SESSION_STATE_DISCONNECTED:
		return "disconnected";
	case SESSION_STATE_FAILED:
		return "failed";
	}
	return "unknown";
}

const char *session_family_name(const struct session_family *f)
{
	return f->family == AF_INET ? "IPv4" : "IPv6";
}

void session_set_state(struct session *s, enum session_state state)
{
	if (s->state == state)
		return;
	s->state = state;
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name, "session %s",
		     session_state_to_string(state));
	if (s->cb.on_state)
		s->cb.on_state(s->userdata, s);
}

void session_set_error(struct session *s, const struct session_family *f, const char *what,
		       const char *why)
{
	snprintf(s->last_error, sizeof(s->last_error), "%s%s%s: %s",
		 f ? session_family_name(f) : "", f ? " " : "", what, why);
	log_mux_warning(NULL, s->cfg.id, mux_netdev(s->mux)->name, "%s", s->last_error);
}

double session_retry_in(const struct session *s)
{
	if (!ev_is_active(&s->retry))
		return -1;
	return ev_timer_remaining(s->loop, (ev_timer *)&s->retry);
}

/* ---- device configuration from the network's settings ----------------------------- */

static bool prefix_equal(const struct config_prefix *a, const struct config_prefix *b)
{
	if (a->family != b->family || a->prefixlen != b->prefixlen)
		return false;
	size_t n = a->family == AF_INET ? sizeof(a->addr.v4) : sizeof(a->addr.v6);
	return a->family == 0 || memcmp(&a->addr, &b->addr, n) == 0;
}

/* The network's DNS servers, for systemd-resolved or resolvconf (dns.h). */
static void session_apply_dns(struct session *s, int ifindex)
{
	struct config_prefix servers[DNS_MAX_SERVERS];
	unsigned n = 0;

	for (unsigned i = 0; i < s->n_fam; i++)
		for (unsigned j = 0; j < 2 && s->fam[i].handle && s->fam[i].settings.valid; j++)
			if (s->fam[i].settings.dns[j].family && n < DNS_MAX_SERVERS)
				servers[n++] = s->fam[i].settings.dns[j];
	dns_link_set(ifindex, mux_netdev(s->mux)->name, servers, n, s->cfg.default_route);
}

void session_apply(struct session *s)
{
	struct rtnl *rtnl = s->rtnl;
	int ifindex = mux_netdev(s->mux)->ifindex;
	char text[INET6_ADDRSTRLEN];
	uint32_t mtu = s->cfg.mtu;
	int r;

	if (s->cfg.client_managed) {
		/* The client puts the settings on the device; status shows what it was given. */
		for (unsigned i = 0; i < s->n_fam; i++)
			if (s->fam[i].handle && s->fam[i].settings.valid)
				s->fam[i].applied = s->fam[i].settings;
		return;
	}

	for (unsigned i = 0; i < s->n_fam; i++) {
		struct session_family *f = &s->fam[i];
		if (!f->handle || !f->settings.valid)
			continue;
		if (f->settings.mtu && f->settings.mtu < mtu)
			mtu = f->settings.mtu;
		if (f->applied.valid && prefix_equal(&f->applied.address, &f->settings.address)) {
			f->applied = f->settings; /* DNS or MTU may have changed */
			continue;
		}
		/* A reconnect may bring a new address: the old one must not linger. */
		if (f->applied.valid)
			rtnl_addr_del(rtnl, ifindex, &f->applied.address);
		inet_ntop(f->family, &f->settings.address.addr, text, sizeof(text));
		r = rtnl_addr_add(rtnl, ifindex, &f->settings.address);
		if (r < 0) {
			log_mux_error_errno(NULL, s->cfg.id, mux_netdev(s->mux)->name, r,
					    "cannot add %s address %s/%u", session_family_name(f),
					    text, f->settings.address.prefixlen);
			continue;
		}
		log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name, "%s address %s/%u",
			     session_family_name(f), text, f->settings.address.prefixlen);
		f->applied = f->settings;
		if (s->cfg.default_route) {
			struct config_prefix any = { .family = f->family };
			r = rtnl_route_add(rtnl, ifindex, &any, s->cfg.route_metric);
			if (r < 0)
				log_mux_error_errno(NULL, s->cfg.id, mux_netdev(s->mux)->name, r,
						    "cannot add %s default route",
						    session_family_name(f));
		}
	}
	session_apply_dns(s, ifindex);
	if (mtu != s->cfg.mtu) {
		r = rtnl_link_set(rtnl, ifindex, mtu, true,
				  mux_netdev(s->mux)->kind == NETDEV_KIND_TAP_XDP);
		if (r < 0)
			log_mux_warning_errno(NULL, s->cfg.id, mux_netdev(s->mux)->name, r,
					      "cannot set MTU %u", mtu);
	}
}

/* ---- reconnecting ------------------------------------------------------------------ */

static void session_on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct session *s = w->data;

	(void)loop;
	(void)revents;
	s->ops->connect(s);
}

void session_schedule_retry(struct session *s)
{
	if (s->cfg.client_managed)
		return; /* its client decides whether and when to connect again */
	double base = s->refused ? SESSION_REFUSED_MIN_SECONDS : SESSION_RETRY_MIN_SECONDS;
	double max = s->refused ? SESSION_REFUSED_MAX_SECONDS : SESSION_RETRY_MAX_SECONDS;
	double delay = base * (1u << (s->attempts < 6 ? s->attempts : 6));
	if (delay > max)
		delay = max;
	s->attempts++;
	ev_timer_stop(s->loop, &s->retry);
	ev_timer_set(&s->retry, delay, 0.);
	ev_timer_start(s->loop, &s->retry);
	log_mux_info(NULL, s->cfg.id, mux_netdev(s->mux)->name, "reconnecting in %.0f s", delay);
}

/* ---- life cycle --------------------------------------------------------------------- */

void session_init(struct session *s, struct ev_loop *loop, struct rtnl *rtnl, struct datapath *dp,
		  struct mux *mux, const struct config_mux *cfg, const struct session_callbacks *cb,
		  void *userdata, const struct session_ops *ops)
{
	s->loop = loop;
	s->rtnl = rtnl;
	s->dp = dp;
	s->mux = mux;
	s->cfg = *cfg;
	if (cb)
		s->cb = *cb;
	s->userdata = userdata;
	s->ops = ops;
	s->state = cfg->autoconnect ? SESSION_STATE_WAITING : SESSION_STATE_DISABLED;
	if (cfg->ip_type != CONFIG_IP_TYPE_IPV6)
		s->fam[s->n_fam++].family = AF_INET;
	if (cfg->ip_type != CONFIG_IP_TYPE_IPV4)
		s->fam[s->n_fam++].family = AF_INET6;
	ev_timer_init(&s->retry, session_on_retry, 0., 0.);
	s->retry.data = s;
}

void session_free_async(struct session *s)
{
	if (!s)
		return;
	if (!s->cfg.client_managed)
		dns_link_clear(mux_netdev(s->mux)->ifindex);
	s->ops->free_async(s);
}

void session_modem_lost(struct session *s)
{
	s->taking_over = false;
	s->ops->modem_lost(s);
}

void session_control_reopen(struct session *s)
{
	s->taking_over = s->state == SESSION_STATE_CONNECTED && s->cfg.autoconnect;
	if (s->taking_over)
		s->ops->control_reopen(s);
	else
		s->ops->modem_lost(s);
}

bool session_taking_over(const struct session *s)
{
	return s && s->taking_over;
}
