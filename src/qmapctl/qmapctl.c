/* SPDX-License-Identifier: MIT */
/*
 * qmapctl: global options, the verb table and the dispatch to a verb's file.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "control-client.h"
#include "macro.h"
#include "qmapctl.h"
#include "verbs.h"

static int cmd_help(struct qmapctl *q, int argc, char **argv);

const struct qmapctl_verb qmapctl_verbs[] = {
	{ "status", qmapctl_status, "show every modem and its muxes (the default)" },
	{ "mux", qmapctl_mux, "list, add or remove muxes", NULL, qmapctl_mux_verbs },
	{ "stats", qmapctl_stats, "show the data plane counters" },
	{ "reload", qmapctl_reload, "make qmapd re-read its configuration file" },
	{ "help", cmd_help, "show this help" },
	{},
};

void qmapctl_init(struct qmapctl *q, FILE *out, FILE *err)
{
	*q = (struct qmapctl){
		.socket_path = CONFIG_CONTROL_SOCKET_DEFAULT,
		.timeout = QMAPCTL_TIMEOUT_DEFAULT,
		.out = out,
		.err = err,
		.poll_interval_ms = QMAPCTL_POLL_INTERVAL_MS,
	};
}

void qmapctl_done(struct qmapctl *q)
{
	q->client = control_client_free(q->client);
	fflush(q->out);
}

void qmapctl_help(FILE *f)
{
	fprintf(f, "Usage: qmapctl [OPTIONS] [COMMAND] [ARGS...]\n\n"
		   "Control qmapd, the QMAP data plane for Qualcomm modems.\n\n"
		   "Commands:\n");
	for (const struct qmapctl_verb *v = qmapctl_verbs; v->name; v++) {
		if (!v->verbs) {
			fprintf(f, "  %-37s %s\n", v->name, v->help);
			continue;
		}
		for (const struct qmapctl_verb *s = v->verbs; s->name; s++) {
			char usage[64];

			snprintf(usage, sizeof(usage), "%s %s%s%s", v->name, s->name,
				 s->args ? " " : "", s->args ?: "");
			fprintf(f, "  %-37s %s\n", usage, s->help);
		}
	}
	fprintf(f,
		"\nOptions:\n"
		"  -j, --json              print the result as JSON\n"
		"  -m, --modem NAME        the modem to show or change (needed by mux add and\n"
		"                          mux del when qmapd has several)\n"
		"  -s, --socket PATH       qmapd's control socket (default %s)\n"
		"  -t, --timeout SECONDS   how long to wait for qmapd and, for mux add, for the\n"
		"                          connection (default %.0f)\n"
		"      --no-wait           mux add: return once qmapd has accepted the mux\n"
		"  -h, --help              show this help\n"
		"      --version           show the version\n\n"
		"mux add takes the keys of a [mux.N] section of qmapd.conf as KEY=VALUE, e.g.\n"
		"  qmapctl mux add 3 apn=internet ip-type=ipv4v6 user=alice password=secret\n"
		"Keys: apn, ip-type (ipv4|ipv6|ipv4v6), user, password, allowed-auth, interface,\n"
		"mtu, headroom (auto|xdp|off), route-metric, routes, default-route (yes|no),\n"
		"autoconnect (yes|no), ipv4-address, ipv6-address, uplink-queue (fq-codel|fifo),\n"
		"codel-target, codel-interval.\n\n"
		"Exit status: 0 ok, 1 failure, 2 usage error (also: several modems, none named),\n"
		"3 timeout, 8 qmapd not running, 10 no such mux, 11 no such modem.\n",
		CONFIG_CONTROL_SOCKET_DEFAULT, QMAPCTL_TIMEOUT_DEFAULT);
}

static int cmd_help(struct qmapctl *q, int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return qmapctl_usage_error(q, "help takes no arguments");
	qmapctl_help(q->out);
	return QMAPCTL_EXIT_OK;
}

/* Seconds: a positive decimal number, fractions allowed, at most a day. */
static int parse_timeout(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 86400 || s[0] == ' ')
		return -EINVAL;
	*ret = v;
	return 0;
}

int qmapctl_parse_options(struct qmapctl *q, int argc, char **argv, int *ret_index)
{
	enum { OPT_VERSION = 0x100 };
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "modem", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{},
	};
	int c;

	/* '+': options end at the verb, whose own arguments may look like options. ':': we
	 * report a missing argument ourselves, on q->err. optind 0: start afresh (tests). */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:jm:s:t:h", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			q->json = true;
			break;
		case 'm':
			if (!config_modem_name_is_valid(optarg))
				return qmapctl_usage_error(q,
							   "invalid modem name '%s': expected 1 to "
							   "%d of a-z, 0-9, '_' "
							   "and '-'",
							   optarg, CONFIG_MODEM_NAME_MAX);
			q->modem = optarg;
			break;
		case 's':
			if (!optarg[0])
				return qmapctl_usage_error(q, "empty socket path");
			q->socket_path = optarg;
			break;
		case 't':
			if (parse_timeout(optarg, &q->timeout) < 0)
				return qmapctl_usage_error(
					q,
					"invalid timeout '%s': expected seconds, "
					"more than 0 and at most 86400",
					optarg);
			break;
		case 'h':
			qmapctl_help(q->out);
			return QMAPCTL_EXIT_OK;
		case OPT_VERSION:
			fprintf(q->out, "qmapctl " QMAPD_VERSION "\n");
			return QMAPCTL_EXIT_OK;
		case ':':
			return qmapctl_usage_error(q, "option '%s' needs an argument",
						   argv[optind - 1]);
		default:
			if (optopt && optopt < 0x100)
				return qmapctl_usage_error(q, "unknown option '-%c'", optopt);
			return qmapctl_usage_error(q, "unknown option '%s'", argv[optind - 1]);
		}
	}
	*ret_index = optind;
	return QMAPCTL_PROCEED;
}

int qmapctl_dispatch(struct qmapctl *q, int argc, char **argv)
{
	static char status[] = "status";
	char *default_argv[] = { status, NULL };

	q->deadline = control_client_now() + (uint64_t)(q->timeout * 1e6);
	if (argc <= 0)
		return qmapctl_status(q, 1, default_argv);
	return qmapctl_dispatch_table(q, qmapctl_verbs, "", argc, argv);
}
