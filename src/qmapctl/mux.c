/* SPDX-License-Identifier: MIT */
/*
 * qmapctl mux list | add | del.
 *
 * mux add checks every KEY=VALUE with config_mux_set(), the code that reads [mux.N] in
 * qmapd.conf, before it sends anything: the user gets the message the file would give,
 * without a round trip, and qmapd checks again anyway. Then it waits for the session, by
 * polling the status, because a mux that was accepted but cannot connect is what the user
 * needs to hear about.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "control-client.h"
#include "output.h"
#include "qmapctl.h"
#include "verbs.h"

static int mux_list(struct qmapctl *q, int argc, char **argv);
static int mux_add(struct qmapctl *q, int argc, char **argv);
static int mux_del(struct qmapctl *q, int argc, char **argv);

#define MUX_ADD_ARGS "ID [--no-wait] [KEY=VALUE...]"

const struct qmapctl_verb qmapctl_mux_verbs[] = {
	{ "list", mux_list, "list the muxes" },
	{ "add", mux_add, "add a mux and wait until it is connected", MUX_ADD_ARGS },
	{ "del", mux_del, "remove a mux", "ID" },
	{},
};

/* The ids of [mux.N]: plain decimal 1..254. */
static int parse_mux_id(const char *s, unsigned *ret)
{
	unsigned v = 0;

	if (!s[0] || (s[0] == '0') || strlen(s) > 3)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v < CONFIG_MUX_ID_MIN || v > CONFIG_MUX_ID_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

static void render_ip(json_t *ip, const char *family, FILE *f)
{
	char label[32], buf[64], dns[256] = "";
	const char *address = qmapctl_json_text(buf, sizeof(buf), ip, "address");
	json_t *servers = json_object_get(ip, "dns");
	const char *v;
	size_t n = 0;

	snprintf(label, sizeof(label), "%s", family);
	qmapctl_print_field(f, label, "%s", address ?: "-");
	v = qmapctl_json_text(buf, sizeof(buf), ip, "gateway");
	if (v) {
		snprintf(label, sizeof(label), "%s gateway", family);
		qmapctl_print_field(f, label, "%s", v);
	}
	for (size_t i = 0; json_is_array(servers) && i < json_array_size(servers); i++) {
		const char *s = json_string_value(json_array_get(servers, i));

		if (s && n < sizeof(dns))
			n += (size_t)snprintf(dns + n, sizeof(dns) - n, "%s%s", n ? ", " : "", s);
	}
	if (dns[0]) {
		snprintf(label, sizeof(label), "%s dns", family);
		qmapctl_print_field(f, label, "%s", dns);
	}
	v = qmapctl_json_text(buf, sizeof(buf), ip, "mtu");
	if (v) {
		snprintf(label, sizeof(label), "%s mtu", family);
		qmapctl_print_field(f, label, "%s", v);
	}
}

static uint64_t counter(json_t *counters, const char *key)
{
	json_t *v = json_object_get(counters, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

static void render_direction(json_t *counters, const char *dir, FILE *f)
{
	char key[32], bytes[32];
	uint64_t packets, dropped;

	snprintf(key, sizeof(key), "%s-packets", dir);
	packets = counter(counters, key);
	snprintf(key, sizeof(key), "%s-dropped", dir);
	dropped = counter(counters, key);
	snprintf(key, sizeof(key), "%s-bytes", dir);
	qmapctl_print_field(f, dir, "%" PRIu64 " packet%s, %s, %" PRIu64 " dropped", packets,
			    packets == 1 ? "" : "s",
			    qmapctl_format_bytes(bytes, sizeof(bytes), counter(counters, key)),
			    dropped);
}

void qmapctl_mux_render(json_t *mux, FILE *f)
{
	static const struct {
		const char *key, *label;
	} fields[] = {
		{ "apn", "apn" },
		{ "ip-type", "ip type" },
		{ "allowed-auth", "allowed auth" },
		{ "user", "user" },
	};
	char id[32], ifname[64], clean[64], buf[256];
	const char *iface = qmapctl_json_text(ifname, sizeof(ifname), mux, "interface");
	const char *v;
	json_t *j;

	fprintf(f, "mux %s", qmapctl_json_text(id, sizeof(id), mux, "id") ?: "?");
	if (iface)
		fprintf(f, " (%s)", qmapctl_sanitize(clean, sizeof(clean), iface));
	fputc('\n', f);

	v = qmapctl_json_text(buf, sizeof(buf), mux, "state");
	if (v)
		qmapctl_print_field(f, "state", "%s", v);
	v = qmapctl_json_text(buf, sizeof(buf), mux, "retry-in");
	if (v)
		qmapctl_print_field(f, "retry in", "%s s", v);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		v = qmapctl_json_text(buf, sizeof(buf), mux, fields[i].key);
		if (v && v[0])
			qmapctl_print_field(f, fields[i].label, "%s", v);
	}
	/* Whatever qmapd sent in its place, a password is never printed. */
	if (json_object_get(mux, "password"))
		qmapctl_print_field(f, "password", "(hidden)");
	j = json_object_get(mux, "ipv4");
	if (json_is_object(j))
		render_ip(j, "ipv4", f);
	j = json_object_get(mux, "ipv6");
	if (json_is_object(j))
		render_ip(j, "ipv6", f);
	v = qmapctl_json_text(buf, sizeof(buf), mux, "mtu");
	if (v)
		qmapctl_print_field(f, "mtu", "%s", v);
	v = qmapctl_json_text(buf, sizeof(buf), mux, "headroom");
	if (v)
		qmapctl_print_field(f, "headroom", "%s", v);
	j = json_object_get(mux, "counters");
	if (json_is_object(j)) {
		render_direction(j, "rx", f);
		render_direction(j, "tx", f);
	}
	v = qmapctl_json_text(buf, sizeof(buf), mux, "last-error");
	if (v && v[0])
		qmapctl_print_field(f, "last error", "%s", v);
}

void qmapctl_mux_render_list(json_t *list, FILE *f)
{
	enum { N = 5 };
	static const char *const keys[N] = { "modem", "id", "interface", "state", "apn" };
	static const char *const heads[N] = { "MODEM", "ID", "INTERFACE", "STATE", "APN" };
	json_t *muxes = json_object_get(list, "muxes");
	int width[N];

	if (!json_is_array(muxes) || json_array_size(muxes) == 0) {
		fprintf(f, "no muxes\n");
		return;
	}
	for (size_t k = 0; k < N; k++)
		width[k] = (int)strlen(heads[k]);
	for (size_t i = 0; i < json_array_size(muxes); i++)
		for (size_t k = 0; k < N; k++) {
			char buf[CONFIG_VALUE_MAX + 1];
			const char *v = qmapctl_json_text(buf, sizeof(buf),
							  json_array_get(muxes, i), keys[k]);
			int n = v ? (int)strlen(v) : 1;

			width[k] = n > width[k] ? n : width[k];
		}

	fprintf(f, "%-*s  %-*s  %-*s  %-*s  %s\n", width[0], heads[0], width[1], heads[1], width[2],
		heads[2], width[3], heads[3], heads[4]);
	for (size_t i = 0; i < json_array_size(muxes); i++) {
		json_t *mux = json_array_get(muxes, i);
		char buf[N][CONFIG_VALUE_MAX + 1], clean[N][CONFIG_VALUE_MAX + 1];
		const char *v[N];

		for (size_t k = 0; k < N; k++) {
			v[k] = qmapctl_json_text(buf[k], sizeof(buf[k]), mux, keys[k]);
			v[k] = qmapctl_sanitize(clean[k], sizeof(clean[k]), v[k] ?: "-");
		}
		/* No padding after the last column: no trailing blanks. */
		fprintf(f, "%-*s  %-*s  %-*s  %-*s  %s\n", width[0], v[0], width[1], v[1], width[2],
			v[2], width[3], v[3], v[4][0] ? v[4] : "-");
	}
}

int qmapctl_mux_parse_add(int argc, char **argv, struct config_mux *ret_mux, json_t **ret_settings,
			  char *err, size_t errlen)
{
	json_auto_t *settings = NULL;
	struct config_mux m;
	unsigned id;

	if (argc < 1) {
		snprintf(err, errlen, "mux add needs a mux id (1..254)");
		return -EINVAL;
	}
	if (parse_mux_id(argv[0], &id) < 0) {
		snprintf(err, errlen, "invalid mux id '%s': expected %d..%d", argv[0],
			 CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
		return -EINVAL;
	}
	settings = json_object();
	if (!settings) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	config_mux_init_defaults(&m, id);

	for (int i = 1; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		char key[64];
		size_t n;

		if (!eq || eq == argv[i]) {
			snprintf(err, errlen, "expected KEY=VALUE, got '%s'", argv[i]);
			return -EINVAL;
		}
		n = (size_t)(eq - argv[i]);
		if (n >= sizeof(key)) {
			snprintf(err, errlen, "unknown key '%.*s...'", 32, argv[i]);
			return -EINVAL;
		}
		memcpy(key, argv[i], n);
		key[n] = '\0';
		/* Which of two values was meant is a guess, as in the file. */
		if (json_object_get(settings, key)) {
			snprintf(err, errlen, "key '%s' given twice", key);
			return -EINVAL;
		}
		if (config_mux_set(&m, key, eq + 1, err, errlen) < 0)
			return -EINVAL;
		/* config_mux_set() accepts printable ASCII only, so this is valid UTF-8. */
		if (json_object_set_new(settings, key, json_string(eq + 1)) < 0) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if (config_mux_finish(&m, err, errlen) < 0)
		return -EINVAL;

	*ret_mux = m;
	*ret_settings = json_incref(settings);
	return 0;
}

static int mux_list(struct qmapctl *q, int argc, char **argv)
{
	return qmapctl_show(q, argc, argv, "mux list", "mux-list", qmapctl_mux_render_list);
}

/* The mux of that modem (NULL: of any) in a status reply. */
static json_t *find_mux(json_t *status, const char *modem, unsigned id)
{
	json_t *modems = json_object_get(status, "modems");

	for (size_t m = 0; json_is_array(modems) && m < json_array_size(modems); m++) {
		json_t *muxes = json_object_get(json_array_get(modems, m), "muxes");

		for (size_t i = 0; json_is_array(muxes) && i < json_array_size(muxes); i++) {
			json_t *mux = json_array_get(muxes, i);
			json_t *mid = json_object_get(mux, "id");
			const char *name = json_string_value(json_object_get(mux, "modem"));

			if (json_is_integer(mid) && json_integer_value(mid) == (json_int_t)id &&
			    (!modem || (name && strcmp(name, modem) == 0)))
				return mux;
		}
	}
	return NULL;
}

static void sleep_until(uint64_t when)
{
	uint64_t now = control_client_now();
	struct timespec ts;

	if (when <= now)
		return;
	ts.tv_sec = (time_t)((when - now) / 1000000u);
	ts.tv_nsec = (long)((when - now) % 1000000u) * 1000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Poll the status of modem (the one qmapd added the mux to) until mux id is connected,
 * failed, gone, or the deadline passes. ifname: its interface, for the messages.
 */
static int wait_connected(struct qmapctl *q, const char *modem, unsigned id, const char *ifname)
{
	char state[64] = "unknown", buf[CONTROL_ERROR_MAX], clean[CONTROL_ERROR_MAX];
	const uint64_t deadline = q->deadline;
	bool answered = false;

	for (;;) {
		json_auto_t *status = NULL;
		const char *s, *error;
		json_t *mux;
		uint64_t next = control_client_now() + (uint64_t)q->poll_interval_ms * 1000u;
		int r;

		/*
		 * Once qmapd has answered, a poll sent before the deadline may be answered a
		 * little after it on a busy machine: that answer says how the mux stands, which
		 * is what the user waits for, not "timed out waiting for qmapd".
		 */
		if (answered)
			q->deadline = deadline + QMAPCTL_POLL_GRACE_MS * 1000u;
		r = qmapctl_request(
			q,
			modem ? json_pack("{s:s, s:s}", "command", "status", "modem", modem)
			      : json_pack("{s:s}", "command", "status"),
			&status);
		q->deadline = deadline;
		if (r != QMAPCTL_EXIT_OK)
			return r;
		answered = true;
		mux = find_mux(status, modem, id);
		if (!mux)
			return qmapctl_fail(q, QMAPCTL_EXIT_FAILURE,
					    "mux %u (%s) disappeared while connecting", id, ifname);
		s = qmapctl_json_text(buf, sizeof(buf), mux, "state") ?: "unknown";
		qmapctl_sanitize(state, sizeof(state), s);

		if (strcmp(state, "connected") == 0) {
			if (q->json)
				qmapctl_print_json(q->out, mux);
			else
				qmapctl_mux_render(mux, q->out);
			return QMAPCTL_EXIT_OK;
		}
		if (strcmp(state, "failed") == 0) {
			error = qmapctl_json_text(buf, sizeof(buf), mux, "last-error");
			return qmapctl_fail(
				q, QMAPCTL_EXIT_FAILURE, "mux %u (%s) failed: %s", id, ifname,
				qmapctl_sanitize(clean, sizeof(clean), error ?: "no reason given"));
		}
		if (next >= q->deadline || control_client_now() >= q->deadline) {
			sleep_until(q->deadline);
			return qmapctl_fail(q, QMAPCTL_EXIT_TIMEOUT,
					    "mux %u (%s) is not connected after %g s (state: %s)",
					    id, ifname, q->timeout, state);
		}
		sleep_until(next);
	}
}

static int mux_add(struct qmapctl *q, int argc, char **argv)
{
	json_auto_t *settings = NULL, *result = NULL;
	char err[CONFIG_ERROR_MAX];
	struct config_mux m;
	bool no_wait = false;
	int r;

	r = qmapctl_verb_options(q, "mux add", MUX_ADD_ARGS, &argc, argv, &no_wait);
	if (r != QMAPCTL_PROCEED)
		return r;
	/* The message names the key and quotes the value: no need for the --help hint. */
	if (qmapctl_mux_parse_add(argc - 1, argv + 1, &m, &settings, err, sizeof(err)) < 0)
		return qmapctl_fail(q, QMAPCTL_EXIT_USAGE, "%s", err);

	r = qmapctl_request(q,
			    json_pack("{s:s, s:i, s:O}", "command", "mux-add", "id", (int)m.id,
				      "settings", settings),
			    &result);
	if (r != QMAPCTL_EXIT_OK)
		return r;

	/* qmapd names the modem and the interface (a modem's default may differ from ours). */
	const char *modem = json_string_value(json_object_get(result, "modem"));
	const char *ifname = json_string_value(json_object_get(result, "interface")) ?: m.interface;
	char clean[CONFIG_VALUE_MAX + 1], cmodem[CONFIG_MODEM_NAME_MAX + 8];

	qmapctl_sanitize(clean, sizeof(clean), ifname);
	/* Nothing to wait for: the session starts later, by hand or never. */
	if (no_wait || !m.autoconnect) {
		if (q->json)
			qmapctl_print_json(q->out, result);
		else
			fprintf(q->out, "mux %u (%s) added%s%s\n", m.id, clean, modem ? " to " : "",
				modem ? qmapctl_sanitize(cmodem, sizeof(cmodem), modem) : "");
		return QMAPCTL_EXIT_OK;
	}
	return wait_connected(q, modem, m.id, clean);
}

static int mux_del(struct qmapctl *q, int argc, char **argv)
{
	json_auto_t *result = NULL;
	unsigned id;
	int r;

	r = qmapctl_verb_options(q, "mux del", "ID", &argc, argv, NULL);
	if (r != QMAPCTL_PROCEED)
		return r;
	if (argc != 2)
		return qmapctl_usage_error(q, "mux del needs exactly one mux id");
	if (parse_mux_id(argv[1], &id) < 0)
		return qmapctl_usage_error(q, "invalid mux id '%s': expected %d..%d", argv[1],
					   CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);

	r = qmapctl_request(q, json_pack("{s:s, s:i}", "command", "mux-del", "id", (int)id),
			    &result);
	if (r != QMAPCTL_EXIT_OK)
		return r;
	if (q->json)
		qmapctl_print_json(q->out, result);
	return QMAPCTL_EXIT_OK;
}

int qmapctl_mux(struct qmapctl *q, int argc, char **argv)
{
	/* "qmapctl mux" and "qmapctl mux -j" list, as "qmapctl" alone shows the status. */
	if (argc < 2 || argv[1][0] == '-')
		return mux_list(q, argc, argv);
	return qmapctl_dispatch_table(q, qmapctl_mux_verbs, "mux ", argc - 1, argv + 1);
}
