/* SPDX-License-Identifier: MIT */
/*
 * qmapctl: global options, the verb table, the request helper every verb uses, and the
 * little formatting helpers the renderers share.
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

static int cmd_help(struct qmapctl *q, int argc, char **argv);

const struct qmapctl_verb qmapctl_verbs[] = {
	{ "status", qmapctl_status, "show the modem and every mux (the default)" },
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
		"  -s, --socket PATH       qmapd's control socket (default %s)\n"
		"  -t, --timeout SECONDS   how long to wait for qmapd and, for mux add, for the\n"
		"                          connection (default %.0f)\n"
		"      --no-wait           mux add: return once qmapd has accepted the mux\n"
		"  -h, --help              show this help\n"
		"      --version           show the version\n\n"
		"mux add takes the keys of a [mux.N] section of qmapd.conf as KEY=VALUE, e.g.\n"
		"  qmapctl mux add 3 apn=internet ip-type=ipv4v6 user=alice password=secret\n"
		"Keys: apn, ip-type (ipv4|ipv6|ipv4v6), user, password, allowed-auth, interface,\n"
		"mtu, headroom (xdp|off), route-metric, routes, default-route (yes|no),\n"
		"autoconnect (yes|no), ipv4-address, ipv6-address.\n\n"
		"Exit status: 0 ok, 1 failure, 2 usage error, 3 timeout, 8 qmapd not running,\n"
		"10 no such mux.\n",
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

int qmapctl_usage_error(struct qmapctl *q, const char *fmt, ...)
{
	va_list ap;

	fputs("qmapctl: ", q->err);
	va_start(ap, fmt);
	vfprintf(q->err, fmt, ap);
	va_end(ap);
	fputs("\nTry 'qmapctl --help'.\n", q->err);
	return QMAPCTL_EXIT_USAGE;
}

int qmapctl_fail(struct qmapctl *q, int status, const char *fmt, ...)
{
	va_list ap;

	fputs("qmapctl: ", q->err);
	va_start(ap, fmt);
	vfprintf(q->err, fmt, ap);
	va_end(ap);
	fputc('\n', q->err);
	return status;
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
	while ((c = getopt_long(argc, argv, "+:js:t:h", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			q->json = true;
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

int qmapctl_verb_options(struct qmapctl *q, const char *verb, const char *usage, int *argc,
			 char **argv, bool *no_wait)
{
	int o = 1, i;

	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			q->json = true;
		} else if (no_wait && strcmp(a, "--no-wait") == 0) {
			*no_wait = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fprintf(q->out, "Usage: qmapctl %s%s%s\n", verb, usage && *usage ? " " : "",
				usage ?: "");
			return QMAPCTL_EXIT_OK;
		} else if (a[0] == '-' && a[1]) {
			return qmapctl_usage_error(q, "unknown option '%s' for %s", a, verb);
		} else {
			argv[o++] = argv[i];
		}
	}
	for (; i < *argc; i++)
		argv[o++] = argv[i];
	argv[o] = NULL;
	*argc = o;
	return QMAPCTL_PROCEED;
}

int qmapctl_dispatch_table(struct qmapctl *q, const struct qmapctl_verb *table, const char *prefix,
			   int argc, char **argv)
{
	for (const struct qmapctl_verb *v = table; v->name; v++)
		if (strcmp(v->name, argv[0]) == 0)
			return v->fn(q, argc, argv);
	return qmapctl_usage_error(q, "unknown command '%s%s'", prefix, argv[0]);
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

static int connect_error(struct qmapctl *q, int r)
{
	switch (r) {
	case -ENOENT:
	case -ECONNREFUSED:
		return qmapctl_fail(q, QMAPCTL_EXIT_NOT_RUNNING,
				    "qmapd is not running (cannot connect to %s: %s)",
				    q->socket_path, strerror(-r));
	case -ETIMEDOUT:
		return qmapctl_fail(q, QMAPCTL_EXIT_TIMEOUT,
				    "timed out after %g s connecting to %s (qmapd is busy)",
				    q->timeout, q->socket_path);
	case -EACCES:
	case -EPERM:
		return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE,
				    "cannot connect to %s: %s (root or the socket's group may)",
				    q->socket_path, strerror(-r));
	default:
		return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE, "cannot connect to %s: %s",
				    q->socket_path, strerror(-r));
	}
}

int qmapctl_request(struct qmapctl *q, json_t *request_ref, json_t **ret_result)
{
	json_auto_t *request = request_ref, *reply = NULL;
	enum control_code code;
	const char *error;
	json_t *result;
	char clean[CONTROL_ERROR_MAX];
	int r;

	if (!request)
		return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE, "out of memory");
	if (!q->client) {
		r = control_client_new(q->socket_path, q->deadline, &q->client);
		if (r < 0)
			return connect_error(q, r);
	}

	r = control_client_call(q->client, request, q->deadline, &reply);
	if (r < 0) {
		q->client = control_client_free(q->client);
		switch (r) {
		case -ETIMEDOUT:
			return qmapctl_fail(q, QMAPCTL_EXIT_TIMEOUT,
					    "timed out after %g s waiting for qmapd", q->timeout);
		case -ECONNRESET:
		case -EPIPE:
			return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE,
					    "qmapd closed the connection without a reply");
		case -EBADMSG:
			return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE, "qmapd sent an invalid reply");
		default:
			return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE, "talking to qmapd: %s",
					    strerror(-r));
		}
	}

	r = control_client_reply(reply, &result, &code, &error);
	if (r > 0) {
		*ret_result = result ? json_incref(result) : json_object();
		return *ret_result ? QMAPCTL_EXIT_OK
				   : qmapctl_fail(q, QMAPCTL_EXIT_FAILURE, "out of memory");
	}
	if (r < 0)
		return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE, "qmapd sent an invalid reply");
	return qmapctl_fail(q,
			    code == CONTROL_CODE_NO_SUCH_MUX ? QMAPCTL_EXIT_NO_SUCH_MUX
							     : QMAPCTL_EXIT_FAILURE,
			    "%s", qmapctl_sanitize(clean, sizeof(clean), error));
}

void qmapctl_print_json(struct qmapctl *q, json_t *j)
{
	json_dumpf(j, q->out, JSON_INDENT(2));
	fputc('\n', q->out);
}

const char *qmapctl_sanitize(char *buf, size_t size, const char *s)
{
	size_t o = 0;

	if (size == 0)
		return "";
	for (; s && *s && o + 1 < size; s++) {
		unsigned char c = *s;

		/* A modem's strings and the daemon's messages must not drive the terminal. */
		buf[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[o] = '\0';
	return buf;
}

void qmapctl_print_field(FILE *f, const char *label, const char *fmt, ...)
{
	char value[512], clean[512], l[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	snprintf(l, sizeof(l), "%s:", label);
	fprintf(f, "  %-*s %s\n", QMAPCTL_LABEL_WIDTH, l,
		qmapctl_sanitize(clean, sizeof(clean), value));
}

const char *qmapctl_format_bytes(char *buf, size_t size, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", bytes);
		return buf;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.2f %s", v, units[u]);
	return buf;
}

const char *qmapctl_json_text(char *buf, size_t size, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, size, "%g", json_real_value(v));
		return buf;
	case JSON_TRUE:
		return "yes";
	case JSON_FALSE:
		return "no";
	default:
		return NULL;
	}
}
