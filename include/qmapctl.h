/* SPDX-License-Identifier: MIT */
/*
 * qmapctl: the command line client of qmapd's control socket, modelled on wg(8). Global
 * options and the verb table live in qmapctl.c, one verb per file in qmapctl-<verb>.c, and
 * src/bin/qmapctl.c is only main(). Output goes to the FILEs in struct qmapctl, and the
 * renderers take a json_t and a FILE, so that the tests can see everything qmapctl prints.
 */
#ifndef QMAPD_QMAPCTL_H
#define QMAPD_QMAPCTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* Exit statuses, as STYLE.md fixes them. */
enum qmapctl_exit {
	QMAPCTL_EXIT_OK = 0,
	QMAPCTL_EXIT_FAILURE = 1,
	QMAPCTL_EXIT_USAGE = 2,
	QMAPCTL_EXIT_TIMEOUT = 3,
	QMAPCTL_EXIT_NOT_RUNNING = 8,
	QMAPCTL_EXIT_NO_SUCH_MUX = 10,
};

/* Not an exit status: the options were fine, go on with the verb. */
#define QMAPCTL_PROCEED (-1)

#define QMAPCTL_TIMEOUT_DEFAULT	 30.0 /* seconds */
#define QMAPCTL_POLL_INTERVAL_MS 200  /* mux add polls the status this often */

struct control_client;

struct qmapctl {
	const char *socket_path;
	double timeout; /* seconds for the whole command, > 0 */
	bool json;
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

extern const struct qmapctl_verb qmapctl_verbs[];
extern const struct qmapctl_verb qmapctl_mux_verbs[];

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
 * QMAPCTL_EXIT_OK with *ret_result (a new reference, an empty object if the reply had
 * none), or an exit status after printing why: not running 8, timeout 3, no such mux 10,
 * anything else 1.
 */
int qmapctl_request(struct qmapctl *q, json_t *request, json_t **ret_result);
/* -j output: pretty JSON and a newline. */
void qmapctl_print_json(struct qmapctl *q, json_t *j);

/* Rendering helpers shared by the verbs. */
#define QMAPCTL_LABEL_WIDTH 20
/* "  label:   value" with the value's control and non-ASCII bytes shown as '?'. */
void qmapctl_print_field(FILE *f, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* s with control characters and non-ASCII replaced by '?', into buf. */
const char *qmapctl_sanitize(char *buf, size_t size, const char *s);
/* "1.50 MiB" */
const char *qmapctl_format_bytes(char *buf, size_t size, uint64_t bytes);
/* A member as a string: strings as they are, numbers and booleans formatted, else NULL. */
const char *qmapctl_json_text(char *buf, size_t size, json_t *obj, const char *key);

/* Verbs and their renderers. */
int qmapctl_status(struct qmapctl *q, int argc, char **argv);
void qmapctl_status_render(json_t *status, FILE *f);

int qmapctl_mux(struct qmapctl *q, int argc, char **argv);
void qmapctl_mux_render(json_t *mux, FILE *f);
void qmapctl_mux_render_list(json_t *list, FILE *f);
/*
 * "ID KEY=VALUE..." of mux add into a checked mux (the file's rules, config_mux_set()) and
 * the settings object to send. 0, or -EINVAL with the message in err.
 */
int qmapctl_mux_parse_add(int argc, char **argv, struct config_mux *ret_mux, json_t **ret_settings,
			  char *err, size_t errlen);

int qmapctl_stats(struct qmapctl *q, int argc, char **argv);
void qmapctl_stats_render(json_t *stats, FILE *f);

int qmapctl_reload(struct qmapctl *q, int argc, char **argv);

#endif
