/* SPDX-License-Identifier: MIT */
/* The rendering helpers the verbs share: JSON, aligned fields, safe strings, byte counts. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "macro.h"
#include "output.h"

void qmapctl_print_json(FILE *f, json_t *j)
{
	json_dumpf(j, f, JSON_INDENT(2));
	fputc('\n', f);
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
