/* SPDX-License-Identifier: MIT */
/*
 * What every verb does: options after the verb, dispatch to a sub-verb, usage errors and
 * failures with their exit statuses, and one request/reply over the control socket.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "control-client.h"
#include "output.h"
#include "qmapctl.h"

int qmapctl_dispatch_table(struct qmapctl *q, const struct qmapctl_verb *table, const char *prefix,
			   int argc, char **argv)
{
	for (const struct qmapctl_verb *v = table; v->name; v++)
		if (strcmp(v->name, argv[0]) == 0)
			return v->fn(q, argc, argv);
	return qmapctl_usage_error(q, "unknown command '%s%s'", prefix, argv[0]);
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
	if (q->modem && !json_object_get(request, "modem") &&
	    json_object_set_new(request, "modem", json_string(q->modem)) < 0)
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
	switch (code) {
	case CONTROL_CODE_NO_SUCH_MUX:
		r = QMAPCTL_EXIT_NO_SUCH_MUX;
		break;
	case CONTROL_CODE_NO_SUCH_MODEM:
		r = QMAPCTL_EXIT_NO_SUCH_MODEM;
		break;
	case CONTROL_CODE_AMBIGUOUS_MODEM:
		r = QMAPCTL_EXIT_USAGE;
		break;
	default:
		r = QMAPCTL_EXIT_FAILURE;
		break;
	}
	return qmapctl_fail(q, r, "%s", qmapctl_sanitize(clean, sizeof(clean), error));
}

int qmapctl_show(struct qmapctl *q, int argc, char **argv, const char *verb, const char *command,
		 void (*render)(json_t *result, FILE *f))
{
	json_auto_t *result = NULL;
	int r;

	r = qmapctl_verb_options(q, verb, NULL, &argc, argv, NULL);
	if (r != QMAPCTL_PROCEED)
		return r;
	if (argc > 1)
		return qmapctl_usage_error(q, "%s takes no arguments, got '%s'", verb, argv[1]);

	r = qmapctl_request(q, json_pack("{s:s}", "command", command), &result);
	if (r != QMAPCTL_EXIT_OK)
		return r;
	if (q->json)
		qmapctl_print_json(q->out, result);
	else if (render)
		render(result, q->out);
	return QMAPCTL_EXIT_OK;
}
