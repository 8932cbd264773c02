/* SPDX-License-Identifier: MIT */
/* qmapctl's verbs, one file each, and their renderers (the tests call these directly). */
#ifndef QMAPD_QMAPCTL_VERBS_H
#define QMAPD_QMAPCTL_VERBS_H

#include <jansson.h>
#include <stdio.h>

#include "config.h"
#include "qmapctl.h"

extern const struct qmapctl_verb qmapctl_verbs[];
extern const struct qmapctl_verb qmapctl_mux_verbs[];

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
