/* SPDX-License-Identifier: MIT */
/*
 * qmapctl status: every modem, each followed by its muxes, as aligned "label: value" blocks
 * the way wg show and mmcli print them. The renderer trusts nothing about the reply's shape:
 * a member that is missing or of another type is skipped, never dereferenced.
 */
#include <inttypes.h>
#include <string.h>

#include "output.h"
#include "qmapctl.h"
#include "verbs.h"

/* Units of the signal values qmapd reports (the names QMI NAS uses). */
static const char *signal_unit(const char *key)
{
	static const char *const dbm[] = { "rssi", "rsrp", "rscp", "rx-power" };
	static const char *const db[] = { "rsrq", "snr", "sinr", "ecio", "io" };

	for (size_t i = 0; i < sizeof(dbm) / sizeof(dbm[0]); i++)
		if (strcmp(key, dbm[i]) == 0)
			return " dBm";
	for (size_t i = 0; i < sizeof(db) / sizeof(db[0]); i++)
		if (strcmp(key, db[i]) == 0)
			return " dB";
	return "";
}

static void render_signal(json_t *signal, FILE *f)
{
	char line[256] = "", num[32];
	size_t n = 0;

	for (void *it = json_object_iter(signal); it; it = json_object_iter_next(signal, it)) {
		const char *key = json_object_iter_key(it);
		const char *v = qmapctl_json_text(num, sizeof(num), signal, key);

		if (!v || n >= sizeof(line))
			continue;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %s%s", n ? ", " : "", key,
				      v, signal_unit(key));
	}
	if (line[0])
		qmapctl_print_field(f, "signal", "%s", line);
}

/* " (asked A, granted G)" for one pair of keys, or "" without both objects. */
static const char *asked_granted(char *buf, size_t len, json_t *df, const char *key1,
				 const char *key2)
{
	json_t *rq = json_object_get(df, "requested");
	json_t *gr = json_object_get(df, "granted");
	char a1[32], a2[32], g1[32], g2[32];

	buf[0] = '\0';
	if (!json_is_object(rq) || !json_is_object(gr))
		return buf;
	const char *ra = qmapctl_json_text(a1, sizeof(a1), rq, key1);
	const char *ga = qmapctl_json_text(g1, sizeof(g1), gr, key1);
	if (!key2) {
		snprintf(buf, len, " (asked %s, granted %s)", ra ?: "?", ga ?: "?");
		return buf;
	}
	const char *rb = qmapctl_json_text(a2, sizeof(a2), rq, key2);
	const char *gb = qmapctl_json_text(g2, sizeof(g2), gr, key2);
	snprintf(buf, len, " (asked %s / %s, granted %s / %s)", ra ?: "?", rb ?: "?", ga ?: "?",
		 gb ?: "?");
	return buf;
}

/*
 * What is in use, and after it what qmapd asked and what the modem granted, side by side
 * (a granted 0 is a value the modem did not report).
 */
static void render_data_format(json_t *df, FILE *f)
{
	char p[64], dls[32], dld[32], uls[32], uld[32], pad[32], iface[32], ag[128];
	const char *protocol = qmapctl_json_text(p, sizeof(p), df, "protocol");
	const char *dl_size = qmapctl_json_text(dls, sizeof(dls), df, "dl-max-size");
	const char *dl_dgrams = qmapctl_json_text(dld, sizeof(dld), df, "dl-max-datagrams");
	const char *ul_size = qmapctl_json_text(uls, sizeof(uls), df, "ul-max-size");
	const char *ul_dgrams = qmapctl_json_text(uld, sizeof(uld), df, "ul-max-datagrams");
	const char *padding = qmapctl_json_text(pad, sizeof(pad), df, "dl-min-padding");
	const char *data_if = qmapctl_json_text(iface, sizeof(iface), df, "data-interface");

	qmapctl_print_field(f, "data format", "%s%s", protocol ?: "?",
			    asked_granted(ag, sizeof(ag), df, "protocol", NULL));
	if (dl_size || dl_dgrams)
		qmapctl_print_field(
			f, "downlink", "%s bytes, %s datagrams%s", dl_size ?: "?", dl_dgrams ?: "?",
			asked_granted(ag, sizeof(ag), df, "dl-max-size", "dl-max-datagrams"));
	if (padding && strcmp(padding, "0") != 0)
		qmapctl_print_field(f, "downlink padding", "%s bytes", padding);
	if (ul_size || ul_dgrams)
		qmapctl_print_field(
			f, "uplink", "%s bytes, %s datagrams%s", ul_size ?: "?", ul_dgrams ?: "?",
			asked_granted(ag, sizeof(ag), df, "ul-max-size", "ul-max-datagrams"));
	if (data_if && strcmp(data_if, "-1") != 0)
		qmapctl_print_field(f, "data interface", "%s", data_if);

	/* MBIM: what GET_NTB_PARAMETERS said and the class requests settled. */
	json_t *ntb = json_object_get(df, "ntb");
	if (!json_is_object(ntb))
		return;
	char v[12][32];
	static const char *const keys[] = {
		"formats",     "in-max-size",	"out-max-size",	 "out-max-datagrams",
		"out-divisor", "out-remainder", "out-alignment", "crc",
		"in-divisor",  "in-remainder",	"in-alignment",	 "max-control-message"
	};
	const char *t[12];
	for (size_t i = 0; i < 12; i++)
		t[i] = qmapctl_json_text(v[i], sizeof(v[i]), ntb, keys[i]) ?: "?";
	qmapctl_print_field(f, "NTB formats", "%s offered, CRC %s", t[0], t[7]);
	qmapctl_print_field(f, "NTB in", "up to %s bytes, divisor %s remainder %s alignment %s",
			    t[1], t[8], t[9], t[10]);
	qmapctl_print_field(f, "NTB out",
			    "up to %s bytes and %s datagrams, divisor %s remainder %s alignment %s",
			    t[2], t[3], t[4], t[5], t[6]);
	qmapctl_print_field(f, "MBIM control", "messages up to %s bytes", t[11]);
	char seg[32], mtu[32], ci[32], alt[32];
	if (qmapctl_json_text(seg, sizeof(seg), ntb, "max-segment-size") &&
	    qmapctl_json_text(mtu, sizeof(mtu), ntb, "mtu"))
		qmapctl_print_field(f, "MBIM segments", "up to %s bytes, MTU %s", seg,
				    strcmp(mtu, "0") ? mtu : "not given");
	if (qmapctl_json_text(ci, sizeof(ci), ntb, "control-interface") &&
	    qmapctl_json_text(alt, sizeof(alt), ntb, "data-alt-setting"))
		qmapctl_print_field(f, "USB MBIM function",
				    "communications interface %s, data alternate setting %s", ci,
				    alt);
}

static void render_modem(const char *name, json_t *modem, FILE *f)
{
	static const struct {
		const char *key, *label;
	} fields[] = {
		{ "state", "state" },
		{ "transport", "transport" },
		{ "control", "control" }, /* "qmi", "mbim", "none": data plane only */
		{ "control-path", "control" },
		{ "last-error", "last error" },
		{ "sim", "SIM" },
		{ "manufacturer", "manufacturer" },
		{ "model", "model" },
		{ "revision", "revision" },
		{ "imei", "IMEI" },
		{ "registration", "registration" },
		{ "access-technology", "access technology" },
		{ "operator", "operator" },
		{ "packet-service", "packet service" },
		{ "qmi-over-mbim", "QMI over MBIM" },
	};
	char buf[192], clean[64];
	json_t *j;

	fprintf(f, "modem %s\n", name ? qmapctl_sanitize(clean, sizeof(clean), name) : "?");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *v = qmapctl_json_text(buf, sizeof(buf), modem, fields[i].key);

		if (!v)
			continue;
		/* control = auto: what it resolved to, "mbim (auto)". */
		bool autom = strcmp(fields[i].key, "control") == 0 &&
			     json_is_true(json_object_get(modem, "control-auto"));
		qmapctl_print_field(f, fields[i].label, "%s%s", v, autom ? " (auto)" : "");
	}
	j = json_object_get(modem, "signal");
	if (json_is_object(j))
		render_signal(j, f);
	j = json_object_get(modem, "data-format");
	if (json_is_object(j))
		render_data_format(j, f);
}

/* One modem and its muxes; *first: nothing printed yet (blank lines go between blocks). */
static void render_one(json_t *entry, bool *first, FILE *f)
{
	json_t *modem = json_object_get(entry, "modem");
	json_t *muxes = json_object_get(entry, "muxes");
	const char *name = json_string_value(json_object_get(entry, "name"));

	if (!*first)
		fputc('\n', f);
	render_modem(name, json_is_object(modem) ? modem : NULL, f);
	*first = false;
	for (size_t i = 0; json_is_array(muxes) && i < json_array_size(muxes); i++) {
		json_t *mux = json_array_get(muxes, i);

		if (!json_is_object(mux))
			continue;
		fputc('\n', f);
		qmapctl_mux_render(mux, f);
	}
	if (!json_is_array(muxes) || json_array_size(muxes) == 0)
		fprintf(f, "\nno muxes\n");
}

void qmapctl_status_render(json_t *status, FILE *f)
{
	json_t *modems = json_object_get(status, "modems");
	bool first = true;

	for (size_t i = 0; json_is_array(modems) && i < json_array_size(modems); i++) {
		json_t *entry = json_array_get(modems, i);

		if (json_is_object(entry))
			render_one(entry, &first, f);
	}
	if (first)
		fprintf(f, "no modems\n");

	/* Last, so that the modems stay first as scripts expect. */
	json_t *dbus = json_object_get(status, "dbus");
	const char *state = json_string_value(json_object_get(dbus, "state"));
	char clean[512];
	if (state)
		fprintf(f, "\nModemManager D-Bus API: %s\n",
			qmapctl_sanitize(clean, sizeof(clean), state));
}

int qmapctl_status(struct qmapctl *q, int argc, char **argv)
{
	return qmapctl_show(q, argc, argv, "status", "status", qmapctl_status_render);
}
