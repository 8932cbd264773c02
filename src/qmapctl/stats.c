/* SPDX-License-Identifier: MIT */
/*
 * qmapctl stats: per modem (a "modem NAME" line first) the counters of the device, of
 * malformed input by kind, of every mux and of the QMI link, then those of the DNS hand-over,
 * of the control socket and of ModemManager's D-Bus API (with the errors it answered, by
 * name), each as an aligned list under a heading.
 */
#include <inttypes.h>
#include <string.h>

#include "output.h"
#include "qmapctl.h"
#include "verbs.h"

/* The scalar members of obj, aligned; skip_zero leaves out counters that are 0. */
static void render_counters(json_t *obj, const char *const *skip, bool skip_zero, FILE *f)
{
	int width = 0;
	bool any = false;

	for (int pass = 0; pass < 2; pass++) {
		for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
			const char *key = json_object_iter_key(it);
			json_t *v = json_object_iter_value(it);
			char buf[64], clean[64];
			const char *text;
			bool skipped = false;

			for (size_t i = 0; skip && skip[i]; i++)
				skipped |= strcmp(key, skip[i]) == 0;
			if (skipped ||
			    (skip_zero && json_is_integer(v) && json_integer_value(v) == 0))
				continue;
			text = qmapctl_json_text(buf, sizeof(buf), obj, key);
			if (!text)
				continue;
			if (pass == 0) {
				int n = (int)strlen(key) + 1;

				width = n > width ? n : width;
				continue;
			}
			qmapctl_sanitize(clean, sizeof(clean), key);
			fprintf(f, "  %s:%*s %s\n", clean, width - (int)strlen(clean) - 1, "",
				qmapctl_sanitize(buf, sizeof(buf), text));
			any = true;
		}
	}
	if (!any)
		fprintf(f, "  none\n");
}

/* One modem's counters; *first: nothing printed yet (blank lines go between blocks). */
static void render_modem(json_t *stats, bool *first, FILE *f)
{
	static const char *const mux_skip[] = { "modem", "id", "interface", NULL };
	json_t *device = json_object_get(stats, "device");
	json_t *malformed = json_object_get(stats, "malformed");
	json_t *muxes = json_object_get(stats, "muxes");
	json_t *link = json_object_get(stats, "control-link");
	const char *name = json_string_value(json_object_get(stats, "name"));
	char clean[64];

	fprintf(f, "%smodem %s\n", *first ? "" : "\n",
		name ? qmapctl_sanitize(clean, sizeof(clean), name) : "?");
	*first = false;
	if (json_is_object(device)) {
		fprintf(f, "device\n");
		render_counters(device, NULL, false, f);
	}
	if (json_is_object(malformed)) {
		fprintf(f, "\nmalformed input\n");
		render_counters(malformed, NULL, true, f);
	}
	for (size_t i = 0; json_is_array(muxes) && i < json_array_size(muxes); i++) {
		json_t *mux = json_array_get(muxes, i);
		char id[32], ifname[64];
		const char *iface = qmapctl_json_text(ifname, sizeof(ifname), mux, "interface");

		if (!json_is_object(mux))
			continue;
		fprintf(f, "\nmux %s", qmapctl_json_text(id, sizeof(id), mux, "id") ?: "?");
		if (iface)
			fprintf(f, " (%s)", qmapctl_sanitize(ifname, sizeof(ifname), iface));
		fputc('\n', f);
		render_counters(mux, mux_skip, false, f);
	}
	if (json_is_object(link)) {
		fprintf(f, "\ncontrol link (QMI)\n");
		render_counters(link, NULL, false, f);
	}
}

void qmapctl_stats_render(json_t *stats, FILE *f)
{
	json_t *modems = json_object_get(stats, "modems");
	json_t *control = json_object_get(stats, "control");
	json_t *dbus = json_object_get(stats, "dbus");
	json_t *dns = json_object_get(stats, "dns");
	bool first = true;

	for (size_t i = 0; json_is_array(modems) && i < json_array_size(modems); i++) {
		json_t *entry = json_array_get(modems, i);

		if (json_is_object(entry))
			render_modem(entry, &first, f);
	}
	if (json_is_object(dns)) {
		fprintf(f, "%sDNS (systemd-resolved, files)\n", first ? "" : "\n");
		render_counters(dns, NULL, false, f);
		first = false;
	}
	if (json_is_object(control)) {
		fprintf(f, "%scontrol socket\n", first ? "" : "\n");
		render_counters(control, NULL, false, f);
		first = false;
	}
	if (json_is_object(dbus)) {
		static const char *const dbus_skip[] = { "errors", NULL };
		json_t *errors = json_object_get(dbus, "errors");
		const char *name;
		json_t *n;

		fprintf(f, "%sModemManager D-Bus API\n", first ? "" : "\n");
		render_counters(dbus, dbus_skip, false, f);
		/* Error names are long: one per line, the count first. */
		json_object_foreach(errors, name, n)
		{
			char clean[160];

			if (json_is_integer(n))
				fprintf(f, "  error %" JSON_INTEGER_FORMAT " %s\n",
					json_integer_value(n),
					qmapctl_sanitize(clean, sizeof(clean), name));
		}
	}
}

int qmapctl_stats(struct qmapctl *q, int argc, char **argv)
{
	return qmapctl_show(q, argc, argv, "stats", "stats", qmapctl_stats_render);
}
