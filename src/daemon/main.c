/* SPDX-License-Identifier: MIT */
/*
 * qmapd: the daemon. Loads the config, builds the data plane and the control plane, runs
 * one libev loop (GLib's context attached), answers qmapctl and talks to systemd.
 */
#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic-file.h"
#if QMAPD_DBUS
#include "bus-address.h"
#endif
#include "config.h"
#include "control-server.h"
#include "dns.h"
#include "instance.h"
#include "log-glib.h"
#include "log-mux.h"
#include "log.h"
#include "loop.h"
#include "manager.h"
#include "mm-dbus.h"
#include "modem.h"
#include "notify.h"
#include "session.h"
#include "rtnl.h"
#include "usb-device.h"
#include "usb-spec.h"

/* From the build: ${sysconfdir}/qmapd/qmapd.conf, where `cmake --install` puts the example. */
#ifndef QMAPD_DEFAULT_CONFIG
#define QMAPD_DEFAULT_CONFIG "/etc/qmapd/qmapd.conf"
#endif
#define QMAPD_STOP_TIMEOUT 5.0 /* seconds to stop networks and release clients on exit */
#define QMAPD_STOP_POLL	   0.05
/* Seconds a stop waits for a control channel being reopened (its proxy went away) to take
 * its sessions over, so that they can be ended in the modem: well within TimeoutStopSec=. */
#define QMAPD_STOP_REOPEN_WAIT 3.0

struct qmapd {
	struct ev_loop *loop;
	struct loop_glib *glib;
	struct rtnl *rtnl;
	struct manager *manager;
	struct control *control;
	struct mm_dbus *dbus;
	struct instance *instance;
	const char *stats_file;
	const char *dbus_address;
	const char *control_socket;
	const char *dbus_state; /* what start decided about D-Bus, for qmapctl status */
	ev_signal sig_term;
	ev_signal sig_int;
	ev_signal sig_hup;
	ev_signal sig_usr1;
	ev_signal sig_usr2;
	ev_timer stop_poll;
	ev_tstamp stop_deadline;
	bool stop_waits;      /* a clean stop waits for a reopen to take the sessions over */
	bool control_stopped; /* second stage of the stop begun (manager_stop_control()) */
};

static void qmapd_print_stats(FILE *f, const void *userdata)
{
	const struct qmapd *q = userdata;

	manager_print_stats(q->manager, f, "");
	mm_dbus_print_stats(q->dbus, f, "");
	dns_print_stats(f, "");
}

static void qmapd_write_stats(struct qmapd *q)
{
	char prefix[LOG_LINE_PREFIX_MAX];

	/* One prefix, so one time, for the whole dump. */
	manager_print_stats(q->manager, stderr, log_line_prefix(LOG_INFO, prefix));
	if (!q->stats_file)
		return;
	int r = atomic_file_write(q->stats_file, qmapd_print_stats, q);
	if (r < 0)
		log_warning_errno(r, "cannot write statistics to %s", q->stats_file);
}

static void on_stop_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct qmapd *q = w->data;
	(void)revents;

	if (q->stop_waits) {
		bool waiting = manager_taking_over(q->manager);
		if (waiting && ev_now(loop) < q->stop_deadline)
			return;
		if (waiting)
			log_warning(
				"the control channel is not back after %.0f s: sessions it kept "
				"stay up in the modem, for the next qmapd to end or take over",
				QMAPD_STOP_REOPEN_WAIT);
		q->stop_waits = false;
		manager_stop(q->manager);
		q->stop_deadline = ev_now(loop) + QMAPD_STOP_TIMEOUT;
		return;
	}
	if (ev_now(loop) >= q->stop_deadline) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	if (!manager_stopped(q->manager))
		return;
	if (q->control_stopped) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	/* Sessions down: now the control planes may give back their own client ids. */
	q->control_stopped = true;
	manager_stop_control(q->manager);
	if (manager_stopped(q->manager))
		ev_break(loop, EVBREAK_ALL);
}

static void on_terminate(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct qmapd *q = w->data;
	(void)revents;

	if (ev_is_active(&q->stop_poll)) {
		ev_break(loop, EVBREAK_ALL); /* second signal: do not wait any longer */
		return;
	}
	if (w->signum == SIGUSR2) {
		/* A restart (the unit's ExecStop= tells): leave the sessions up (session.h). */
		log_info("received %s, exiting for a restart: sessions stay up",
			 strsignal(w->signum));
		session_set_handover(true);
	} else {
		log_info("received %s, shutting down", strsignal(w->signum));
	}
	notify_stopping();
	/*
	 * A stop ends the sessions in the modem, which a control channel being reopened (its
	 * proxy went away) cannot do yet: wait for it to take them over first. A restart
	 * leaves them up anyway, and the next qmapd takes them over from the records.
	 */
	q->stop_waits = !session_handover() && manager_taking_over(q->manager);
	if (q->stop_waits) {
		log_info("a control channel is being reopened: the sessions end once it has "
			 "taken them over (at most %.0f s)",
			 QMAPD_STOP_REOPEN_WAIT);
		q->stop_deadline = ev_now(loop) + QMAPD_STOP_REOPEN_WAIT;
	} else {
		/* Stop the networks and release the client ids: the modem is clean for the next
		 * run. */
		manager_stop(q->manager);
		q->stop_deadline = ev_now(loop) + QMAPD_STOP_TIMEOUT;
	}
	ev_timer_start(loop, &q->stop_poll);
}

/*
 * SIGHUP and `qmapctl reload` (what ExecReload= runs, so that `systemctl reload` fails with
 * the reason when the file is refused): RELOADING=1 ... READY=1 either way, so a reload asked
 * for on the control socket by hand also shows in systemctl. Under ExecReload= systemd 252
 * ends the reload when qmapctl exits and takes the result from its status.
 */
static int qmapd_reload(struct qmapd *q, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r;

	notify_reloading();
	r = manager_reload(q->manager, modem, ret, err, errlen);
	notify_ready();
	return r;
}

static void on_reload(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct qmapd *q = w->data;
	char result[512];
	json_t *reply = NULL;
	(void)loop;
	(void)revents;

	log_info("received SIGHUP, reloading the configuration");
	qmapd_reload(q, NULL, &reply, result, sizeof(result));
	json_decref(reply);
}

/*
 * Ready means: configuration loaded and qmapctl can connect (not: the modem is up), and, with
 * D-Bus, the name owned or known to be unavailable. Not BusName= in the unit: for
 * Type=notify it does not delay readiness, and systemd refuses to load two units with the
 * same BusName=, which ModemManager.service has.
 */
static void qmapd_ready(void *userdata)
{
	struct qmapd *q = userdata;

	notify_ready();
	log_info("qmapd %s: running, control socket %s", QMAPD_VERSION, q->control_socket);
}

static void on_usr1(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	qmapd_write_stats(w->data);
}

static void help(void)
{
	printf("Usage: qmapd [OPTIONS]\n\n"
	       "Userspace QMAP data plane for Qualcomm-style cellular modems.\n\n"
	       "  -c, --config PATH      configuration file (default " QMAPD_DEFAULT_CONFIG ")\n"
	       "      --stats-file PATH  also write counters there on SIGUSR1 and at exit\n"
	       "      --dbus-address ADDRESS\n"
	       "                         offer ModemManager's D-Bus API on this bus, and look\n"
	       "                         for systemd-resolved there (overrides [dbus])\n"
	       "  -t, --check-config     parse the configuration, report errors, exit\n"
	       "  -v, --verbose          debug logging\n"
	       "  -h, --help             show this help\n"
	       "      --version          show the version\n\n"
	       "Signals: SIGTERM/SIGINT stop,\n"
	       "SIGUSR2 exits for a restart keeping the sessions, SIGHUP reloads the "
	       "configuration,\n"
	       "SIGUSR1 prints the counters. qmapctl(8) talks to the running daemon.\n");
}

static int parse_args(int argc, char **argv, const char **ret_config, const char **ret_stats,
		      const char **ret_dbus, bool *ret_check)
{
	enum { OPT_STATS = 0x100, OPT_VERSION, OPT_DBUS };
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "stats-file", required_argument, NULL, OPT_STATS },
		{ "dbus-address", required_argument, NULL, OPT_DBUS },
		{ "check-config", no_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:tvh", options, NULL)) >= 0) {
		switch (c) {
		case 'c':
			*ret_config = optarg;
			break;
		case OPT_STATS:
			*ret_stats = optarg;
			break;
		case OPT_DBUS:
			*ret_dbus = optarg;
			break;
		case 't':
			*ret_check = true;
			break;
		case 'v':
			log_set_max_level(LOG_DEBUG);
			break;
		case 'h':
			help();
			return 0;
		case OPT_VERSION:
			printf("qmapd " QMAPD_VERSION "\n");
			return 0;
		default:
			fprintf(stderr, "Try 'qmapd --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "qmapd: unexpected argument '%s'\nTry 'qmapd --help'.\n",
			argv[optind]);
		return -EINVAL;
	}
	return 1;
}

#if QMAPD_DBUS
/*
 * [dbus] at start: the bus to offer ModemManager's API on, or CONFIG_DBUS_NONE; what was
 * decided and why in text. -ENOENT: enabled = yes and the bus is not there.
 */
static int dbus_decide(const struct config *config, const char *address_opt, enum config_dbus *ret,
		       char *text, size_t len)
{
	const struct config_dbus_settings *s = &config->dbus;
	const char *name = config_dbus_to_string(s->bus);
	char missing[256] = "";

	*ret = CONFIG_DBUS_NONE;
	if (config->dbus.legacy_line)
		log_warning("%s:%u: 'dbus' in [device] is deprecated: use [dbus] enabled = and "
			    "bus = (qmapd.conf(5))",
			    config->path, config->dbus.legacy_line);
	if (address_opt) {
		*ret = s->bus; /* the address wins (tests) */
		snprintf(text, len, "on the bus at %s (--dbus-address)", address_opt);
		return 0;
	}
	if (s->enabled == CONFIG_DBUS_ENABLED_NO) {
		snprintf(text, len, "off ([dbus] enabled = no)");
		return 0;
	}
	char *address = bus_address(s->bus);
	bool present = address && bus_address_present(address, missing, sizeof(missing));
	if (present) {
		*ret = s->bus;
		snprintf(text, len, "on the %s bus at %s ([dbus] enabled = %s)", name, address,
			 config_dbus_enabled_to_string(s->enabled));
	} else {
		snprintf(text, len, "off: no %s bus%s%s ([dbus] enabled = %s)", name,
			 missing[0] ? " at " : "", missing,
			 config_dbus_enabled_to_string(s->enabled));
	}
	free(address);
	return !present && s->enabled == CONFIG_DBUS_ENABLED_YES ? -ENOENT : 0;
}

/*
 * Where systemd-resolved may be: the bus of --dbus-address (tests), else the system bus when
 * its socket exists and qmapd is in the network namespace it serves (a qmapd in another
 * namespace must not change the host's links of the same ifindex). NULL: files only.
 */
static char *dns_bus_address(const char *address_opt)
{
	if (address_opt)
		return strdup(address_opt);
	char *address = bus_address(CONFIG_DBUS_SYSTEM);
	if (address && bus_address_present(address, NULL, 0) && bus_same_netns_as_init())
		return address;
	free(address);
	return NULL;
}
#else
/*
 * Built without D-Bus (QMAPD_DBUS=OFF): auto and no are simply off; yes and --dbus-address
 * ask for what this qmapd cannot do, and it says so rather than running without it.
 */
static int dbus_decide(const struct config *config, const char *address_opt, enum config_dbus *ret,
		       char *text, size_t len)
{
	const struct config_dbus_settings *s = &config->dbus;

	*ret = CONFIG_DBUS_NONE;
	if (address_opt) {
		snprintf(text, len,
			 "qmapd was built without D-Bus (QMAPD_DBUS=OFF): --dbus-address %s "
			 "cannot be used",
			 address_opt);
		return -EOPNOTSUPP;
	}
	switch (s->enabled) {
	case CONFIG_DBUS_ENABLED_YES:
		snprintf(text, len,
			 "qmapd was built without D-Bus (QMAPD_DBUS=OFF): [dbus] enabled = yes in "
			 "%s cannot be honoured; set enabled = no or auto",
			 config->path);
		return -EOPNOTSUPP;
	case CONFIG_DBUS_ENABLED_AUTO:
	case CONFIG_DBUS_ENABLED_NO:
		break;
	}
	snprintf(text, len, "off: qmapd was built without D-Bus ([dbus] enabled = %s)",
		 config_dbus_enabled_to_string(s->enabled));
	return 0;
}

/* No D-Bus, no systemd-resolved: DNS servers always go to the files. */
static char *dns_bus_address(const char *address_opt)
{
	(void)address_opt;
	return NULL;
}
#endif

/* The per-link DNS files: "resolv" beside the control socket (/run/qmapd/resolv). */
static void dns_dir(const struct config *config, char *buf, size_t len)
{
	const char *sock = config->device.control_socket, *slash = strrchr(sock, '/');
	int n = slash && slash != sock ? (int)(slash - sock) : 0;

	snprintf(buf, len, "%.*s/resolv", n, sock);
}

/*
 * -t: everything start would refuse that can be known without starting, with the messages
 * start gives, and a line saying what only start can tell.
 */
static int check_config(const char *path, const struct config *config, const char *address_opt)
{
	struct rtnl *rtnl = NULL;
	char err[256];
	int r, failed = 0;

	if (instance_check_paths(config) < 0)
		failed++;
	r = rtnl_open(&rtnl);
	if (r < 0) {
		log_warning_errno(r, "cannot open rtnetlink; interface names not checked");
	} else {
		for (unsigned i = 0; i < config->n_modems; i++) {
			const struct config_modem *md = &config->modem[i];

			for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
				if (!md->mux[id])
					continue;
				if (modem_check_interface(rtnl, md->mux[id], err, sizeof(err)) <
				    0) {
					log_mux_error(md->name, id, NULL, "%s", err);
					failed++;
				}
			}
		}
		rtnl_close(rtnl);
	}
	enum config_dbus bus;
	char dbus_text[512], dir[sizeof(config->device.control_socket) + 8];
	if (dbus_decide(config, address_opt, &bus, dbus_text, sizeof(dbus_text)) < 0) {
		log_error("ModemManager's D-Bus API: %s", dbus_text);
		failed++;
	}
	if (failed)
		return -EINVAL;
	printf("%s: OK\n", path);
	dns_dir(config, dir, sizeof(dir));
	printf("ModemManager's D-Bus API: %s\n", dbus_text);
	char *dns_bus = dns_bus_address(address_opt);
	if (dns_bus)
		printf("DNS servers of configured muxes: to systemd-resolved if it runs on the bus "
		       "at %s, else in %s/IFNAME.conf\n",
		       dns_bus, dir);
	else
		printf("DNS servers of configured muxes: in %s/IFNAME.conf (no system bus, or not "
		       "in PID 1's network namespace)\n",
		       dir);
	free(dns_bus);
	for (unsigned i = 0; i < config->n_modems; i++) {
		const struct config_device *d = &config->modem[i].device;
		char ctl[32];
		bool mbim = false;

		/* control = auto: the descriptors of a configured USB device tell, if it is there. */
		if (!d->control_auto)
			printf("modem %s: control: %s\n", config->modem[i].name,
			       config_control_describe(d, ctl, sizeof(ctl)));
		else if (usb_spec_is_usb(d->device) && usb_function_probe(d->device, &mbim) == 0)
			printf("modem %s: control: %s (auto)\n", config->modem[i].name,
			       mbim ? "mbim" : "qmi");
		else
			printf("modem %s: control: auto (%s)\n", config->modem[i].name,
			       usb_spec_is_usb(d->device) ? "the device is not present now; qmi if "
							    "it is not when qmapd starts"
			       : strncmp(d->device, "usb-serial:", 11) == 0
				       ? "qmi or mbim, as discovery finds it"
				       : "qmi: a sim: device tells its function only once "
					 "connected");
	}
	printf("Not checked (only start can tell): whether the modem is there and what it "
	       "grants, whether BPF (XDP headroom) and the TUN offloads are available, %s%s%s"
	       "and whether another qmapd runs with this configuration. Interface names were "
	       "checked in this network namespace.\n",
	       config->device.admin_group[0] ? "whether group '" : "", config->device.admin_group,
	       config->device.admin_group[0] ? "' exists (it may be created later), " : "");
	return 0;
}

/* The control socket reaches the manager (and the D-Bus counters) through these (it is tested
 * against a stub); userdata is the struct qmapd. */
#define MANAGER(q) (((struct qmapd *)(q))->manager)
static int ops_status(void *q, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r = manager_status(MANAGER(q), modem, ret, err, errlen);
	const char *state = ((struct qmapd *)q)->dbus_state;

	/* The daemon's own D-Bus side, in the whole-daemon answer only (as stats does). */
	if (r == 0 && *ret && !modem && state)
		json_object_set_new(*ret, "dbus",
				    json_pack("{s:b, s:s}", "built", QMAPD_DBUS, "state", state));
	return r;
}

static int ops_mux_list(void *q, const char *modem, json_t **ret, char *err, size_t errlen)
{
	return manager_mux_list(MANAGER(q), modem, ret, err, errlen);
}

static int ops_stats(void *q, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r = manager_stats(MANAGER(q), modem, ret, err, errlen);
	json_t *dbus = r < 0 || modem ? NULL : mm_dbus_stats_json(((struct qmapd *)q)->dbus);
	json_t *dns = r == 0 && *ret ? dns_stats_json() : NULL;

	if (dbus)
		json_object_set_new(*ret, "dbus", dbus);
	if (dns)
		json_object_set_new(*ret, "dns", dns);
	return r;
}

static int ops_mux_add(void *q, const char *modem, const struct config_mux *cfg, json_t **ret,
		       char *err, size_t errlen)
{
	return manager_mux_add(MANAGER(q), modem, cfg, ret, err, errlen);
}

static int ops_mux_del(void *q, const char *modem, unsigned id, json_t **ret, char *err,
		       size_t errlen)
{
	return manager_mux_del(MANAGER(q), modem, id, ret, err, errlen);
}

static int ops_reload(void *q, const char *modem, json_t **ret, char *err, size_t errlen)
{
	return qmapd_reload(q, modem, ret, err, errlen);
}

static const struct control_ops control_ops = {
	.status = ops_status,
	.mux_list = ops_mux_list,
	.stats = ops_stats,
	.mux_add = ops_mux_add,
	.mux_del = ops_mux_del,
	.reload = ops_reload,
};

int main(int argc, char **argv)
{
	struct qmapd q = {};
	struct config *config = NULL;
	const char *config_path = QMAPD_DEFAULT_CONFIG;
	bool check_only = false;
	char err[CONFIG_ERROR_MAX];
	int r;

	/* libqmi's, libmbim's and GIO's messages are qmapd's lines too (log-glib.h). */
	log_glib_init();
	r = parse_args(argc, argv, &config_path, &q.stats_file, &q.dbus_address, &check_only);
	if (r <= 0)
		return r == 0 ? EXIT_SUCCESS : 2;
	/* -t is a command, run by hand or by a package script: it says what, not when. */
	if (check_only)
		log_set_time(false);

	r = config_load_file(config_path, &config, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return EXIT_FAILURE;
	}
	if (check_only) {
		r = check_config(config_path, config, q.dbus_address);
		config_free(config);
		return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}

	/* Before anything another qmapd could be using is touched: devices, links, sockets. */
	r = instance_check_paths(config);
	if (r >= 0)
		r = instance_lock(config, &q.instance);
	if (r < 0) {
		config_free(config);
		return EXIT_FAILURE;
	}

	/* The data path writes to devices and sockets that may go away: never die of SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);

	/*
	 * No EVFLAG_SIGNALFD: it blocks the signals, and children (qmi-proxy, spawned by libqmi)
	 * would inherit the mask and ignore SIGTERM from systemd or anyone else.
	 */
	q.loop = ev_default_loop(EVFLAG_AUTO);
	if (!q.loop) {
		log_error("cannot create the event loop");
		r = -ENOMEM;
		goto finish;
	}
	r = loop_glib_attach(q.loop, &q.glib);
	if (r < 0) {
		log_error_errno(r, "cannot attach GLib's main context");
		goto finish;
	}
	r = rtnl_open(&q.rtnl);
	if (r < 0) {
		log_error_errno(r, "cannot open rtnetlink");
		goto finish;
	}
	char control_socket[sizeof(config->device.control_socket)];
	char admin_group[sizeof(config->device.admin_group)];
	snprintf(control_socket, sizeof(control_socket), "%s", config->device.control_socket);
	snprintf(admin_group, sizeof(admin_group), "%s", config->device.admin_group);
	q.control_socket = control_socket;
	enum config_dbus dbus;
	char dbus_text[512], dir[sizeof(config->device.control_socket) + 8];
	r = dbus_decide(config, q.dbus_address, &dbus, dbus_text, sizeof(dbus_text));
	if (r < 0) {
		log_error("ModemManager's D-Bus API: %s", dbus_text);
		goto finish;
	}
	log_info("ModemManager's D-Bus API: %s", dbus_text);
	q.dbus_state = dbus_text;
	modem_bearers_set_dbus(dbus != CONFIG_DBUS_NONE);
	dns_dir(config, dir, sizeof(dir));
	char *dns_bus = dns_bus_address(q.dbus_address);
	r = dns_init(dns_bus, dir);
	free(dns_bus);
	if (r < 0)
		goto finish;

	r = manager_new(q.loop, q.rtnl, TAKE_PTR(config), &q.manager);
	if (r < 0)
		goto finish;
	r = control_new(q.loop, &control_ops, &q, control_socket, admin_group, &q.control);
	if (r < 0) {
		log_error_errno(r, "cannot listen on %s", control_socket);
		goto finish;
	}
	r = mm_dbus_new(q.manager, dbus, q.dbus_address, admin_group, qmapd_ready, &q, &q.dbus);
	if (r < 0) {
		log_error_errno(r, "cannot set up ModemManager's D-Bus API");
		goto finish;
	}

	ev_signal_init(&q.sig_term, on_terminate, SIGTERM);
	ev_signal_init(&q.sig_int, on_terminate, SIGINT);
	ev_signal_init(&q.sig_hup, on_reload, SIGHUP);
	ev_signal_init(&q.sig_usr1, on_usr1, SIGUSR1);
	ev_signal_init(&q.sig_usr2, on_terminate, SIGUSR2);
	ev_timer_init(&q.stop_poll, on_stop_poll, QMAPD_STOP_POLL, QMAPD_STOP_POLL);
	q.sig_term.data = q.sig_int.data = q.sig_hup.data = q.sig_usr1.data = q.sig_usr2.data =
		q.stop_poll.data = &q;
	ev_signal_start(q.loop, &q.sig_term);
	ev_signal_start(q.loop, &q.sig_int);
	ev_signal_start(q.loop, &q.sig_hup);
	ev_signal_start(q.loop, &q.sig_usr1);
	ev_signal_start(q.loop, &q.sig_usr2);

	r = manager_start(q.manager);
	if (r < 0)
		goto finish;
	r = notify_init(q.loop);
	if (r < 0)
		log_warning_errno(r, "cannot set up the systemd watchdog");
	/* With D-Bus, ready waits for the name (qmapd_ready() from the loop), so that a client
	 * ordered after qmapd finds ModemManager's API. */
	if (!q.dbus)
		qmapd_ready(&q);

	ev_run(q.loop, 0);
	qmapd_write_stats(&q);
	r = 0;

finish:
	if (q.loop)
		notify_exit(q.loop);
	q.control = control_free(q.control);
	q.dbus = mm_dbus_free(q.dbus);
	q.manager = manager_free(q.manager);
	dns_shutdown();
	q.rtnl = rtnl_close(q.rtnl);
	q.glib = loop_glib_detach(q.glib);
	q.instance = instance_unlock(q.instance);
	config_free(config);
	if (q.loop)
		ev_loop_destroy(q.loop);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
