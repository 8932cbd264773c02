/* SPDX-License-Identifier: MIT */
/*
 * qmapctl: the command line client of qmapd's control socket, modelled on wg(8). Global
 * options and the verb table live in qmapctl.c, one verb per file (status.c, mux.c, ...:
 * verbs.h), what every verb needs in request.c, the rendering helpers in output.c, and
 * main.c is only main(). Output goes to the FILEs in struct qmapctl, and the renderers take
 * a json_t and a FILE, so that the tests can see everything qmapctl prints.
 */
#ifndef QMAPD_QMAPCTL_H
#define QMAPD_QMAPCTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* Exit statuses, as qmapctl(8) documents them. */
enum qmapctl_exit {
	QMAPCTL_EXIT_OK = 0,
	QMAPCTL_EXIT_FAILURE = 1,
	QMAPCTL_EXIT_USAGE = 2,
	QMAPCTL_EXIT_TIMEOUT = 3,
	QMAPCTL_EXIT_NOT_RUNNING = 8,
	QMAPCTL_EXIT_NO_SUCH_MUX = 10,
	QMAPCTL_EXIT_NO_SUCH_MODEM = 11,
};

/* Not an exit status: the options were fine, go on with the verb. */
#define QMAPCTL_PROCEED (-1)

#define QMAPCTL_TIMEOUT_DEFAULT	 30.0 /* seconds */
#define QMAPCTL_POLL_INTERVAL_MS 200  /* mux add polls the status this often */
/* A poll of mux add sent before the deadline may be answered this much after it. */
#define QMAPCTL_POLL_GRACE_MS 1000

struct control_client;

struct qmapctl {
	const char *socket_path;
	double timeout; /* seconds for the whole command, > 0 */
	bool json;
	const char *modem; /* -m: the modem every request names, NULL for none */
	FILE *out;
	FILE *err;
	unsigned poll_interval_ms;
	uint64_t deadline; /* CLOCK_MONOTONIC µs, set by qmapctl_dispatch() */
	struct control_client *client;
};

struct qmapctl_verb {
	const char *name;
	int (*fn)(struct qmapctl *q, int argc, char **argv); /* argv[0] is the verb */
	const char *help;
	const char *args;		  /* for the usage line, may be NULL */
	const struct qmapctl_verb *verbs; /* sub-verbs (mux list, ...), NULL-terminated */
};

void qmapctl_init(struct qmapctl *q, FILE *out, FILE *err);
void qmapctl_done(struct qmapctl *q);

/*
 * The global options before the verb. QMAPCTL_PROCEED with *ret_index at the verb (== argc
 * when there is none), or an exit status: 0 after --help or --version, 2 for a usage error
 * (message on q->err).
 */
int qmapctl_parse_options(struct qmapctl *q, int argc, char **argv, int *ret_index);
/* Run the verb argv[0] (status when argc is 0) from a table; returns the exit status. */
int qmapctl_dispatch(struct qmapctl *q, int argc, char **argv);
int qmapctl_dispatch_table(struct qmapctl *q, const struct qmapctl_verb *table, const char *prefix,
			   int argc, char **argv);
void qmapctl_help(FILE *f);

/*
 * Options after the verb: -j/--json, -h/--help (prints the verb's usage), --no-wait when
 * no_wait is not NULL, "--". Removes them from argv. QMAPCTL_PROCEED or an exit status.
 */
int qmapctl_verb_options(struct qmapctl *q, const char *verb, const char *usage, int *argc,
			 char **argv, bool *no_wait);
/* "qmapctl: <message>" and a hint on q->err; returns QMAPCTL_EXIT_USAGE. */
int qmapctl_usage_error(struct qmapctl *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "qmapctl: <message>" on q->err; returns status. */
int qmapctl_fail(struct qmapctl *q, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Send a request (connecting on first use; takes the reference, so json_pack() can be
 * passed directly, NULL reads as out of memory) and wait for the reply until q->deadline.
 * The request names q->modem unless it names a modem already. QMAPCTL_EXIT_OK with
 * *ret_result (a new reference, an empty object if the reply had none), or an exit status
 * after printing why: not running 8, timeout 3, no such mux 10, no such modem 11, several
 * modems and none named 2, anything else 1.
 */
int qmapctl_request(struct qmapctl *q, json_t *request, json_t **ret_result);
/*
 * A verb without arguments: its options, the request `command`, then the result as JSON
 * (-j) or through render (NULL: nothing on success). Returns the exit status.
 */
int qmapctl_show(struct qmapctl *q, int argc, char **argv, const char *verb, const char *command,
		 void (*render)(json_t *result, FILE *f));

#endif
