/* SPDX-License-Identifier: MIT */
/*
 * The data-plane counters of the device and of each mux, in their two renderings: the text
 * stats (`key=value`, datapath_print_stats(); tests and benchmark scripts parse them) and
 * the JSON of the control socket's "stats" (manager_stats(); qmapctl and jq read it). One
 * table per object in counters.c drives both, so the two cannot drift apart.
 */
#ifndef QMAPD_COUNTERS_H
#define QMAPD_COUNTERS_H

#include <jansson.h>
#include <stdio.h>

struct datapath;
struct mux;

/* " key=value" for every text counter, in table order: no line prefix, no newline. */
void counters_print_device(const struct datapath *dp, FILE *f);
void counters_print_mux(const struct mux *m, FILE *f);

/* Add the JSON counters to o, in table order. Returns 0 or -ENOMEM. */
int counters_json_device(const struct datapath *dp, json_t *o);
int counters_json_mux(const struct mux *m, json_t *o);

/* The malformed-input counters by kind: QMAP's names, then NTB's prefixed "ntb_". NULL on ENOMEM. */
json_t *counters_json_malformed(const struct datapath *dp);
/*
 * An MBIM modem's data format for the status: "protocol" mbim/ntb16 or mbim/ntb32, the sizes in
 * use with the keys of the QMI one, and the negotiated NTB parameters under "ntb". NULL when
 * the modem is not an MBIM function that is there (or on ENOMEM).
 */
json_t *counters_json_ntb_format(const struct datapath *dp);

#endif
