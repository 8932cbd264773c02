/* SPDX-License-Identifier: MIT */
/* qmapctl's rendering helpers (output.c), shared by the verbs. */
#ifndef QMAPD_QMAPCTL_OUTPUT_H
#define QMAPD_QMAPCTL_OUTPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* -j output: pretty JSON and a newline. */
void qmapctl_print_json(FILE *f, json_t *j);

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

#endif
