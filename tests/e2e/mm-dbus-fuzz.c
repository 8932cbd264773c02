/* SPDX-License-Identifier: MIT */
/*
 * mm-dbus-fuzz: calls the ModemManager methods qmapd exports on the system bus
 * (DBUS_SYSTEM_BUS_ADDRESS) with generated arguments, as the live introspection declares
 * them: every interface org.freedesktop.ModemManager1* on every object under
 * /org/freedesktop/ModemManager1, so methods added later are covered without a list here.
 * The arguments: values of the right signature (empty, huge and random strings, extreme
 * numbers, dicts with known and unknown keys and values of the wrong type, random object
 * paths), a wrong signature, or a call to a random object path. A test helper of
 * e2e-dbus-fuzz.sh, a C program with GDBus rather than a script around gdbus because one
 * process making the calls gives thousands of executions a second instead of tens.
 *
 * Every answer must be one of:
 *   - a reply;
 *   - an error named org.freedesktop.ModemManager1.Error.* (qmapd's own refusals);
 *   - org.freedesktop.DBus.Error.InvalidArgs for a call of the wrong signature: GDBus
 *     checks the arguments against the introspection before qmapd's handler runs, so that
 *     is the library's answer, the same as from ModemManager;
 *   - org.freedesktop.DBus.Error.UnknownMethod/UnknownObject/UnknownInterface for a call to
 *     an object or interface that is not exported (a random path, or an object that has
 *     gone since it was introspected, such as a deleted bearer: checked by introspecting
 *     the path again);
 *   - with --unprivileged, org.freedesktop.DBus.Error.AccessDenied: the bus's policy
 *     (conf/qmapd-dbus.conf) lets other users send only to some interfaces.
 * Anything else (a timeout, the connection lost, another error name) fails the run, except
 * that the calls that wait for the network by design (Modem3gpp.Scan and Register, Bearer and
 * Simple Connect: a real modem takes up to minutes, and qmapd waits as long as ModemManager
 * does) may outlive the fuzzer's own timeout; those are counted and printed as "slow".
 *
 * The sequence of calls is a function of the seed and of the objects discovered, so a
 * failing run is repeated with the same --seed (and --verbose prints every call).
 *
 *   mm-dbus-fuzz [--seed N] [--count N] [--seconds S] [--timeout-ms MS] [--unprivileged]
 *                [--verbose] [--send-unreadable]
 *
 * Prints the executions, executions per second, methods exported and reached, and the
 * answers by name; exits 1 if any answer was not allowed, 2 on a usage error.
 */
#include <gio/gio.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEST	  "org.freedesktop.ModemManager1"
#define ROOT_PATH "/org/freedesktop/ModemManager1"
#define MM_ERROR  "org.freedesktop.ModemManager1.Error."
#define MAX_DEPTH 3

struct method {
	char *path;
	char *iface;
	char *name;
	char *in_sig; /* "(...)" of the in arguments */
	uint64_t calls;
	uint64_t replies;
};

static uint64_t rng_state;
static GPtrArray *methods;   /* struct method *, the latest discovery */
static GHashTable *reached;  /* "iface.name" -> NULL: the methods called at least once */
static GHashTable *exported; /* "iface.name" -> NULL: every method ever discovered */
static GHashTable *answers;  /* answer name -> count */
static GPtrArray *paths;     /* the exported object paths, for arguments */
static int verbose;
static int huge_left; /* huge strings the current call may still get */

/* splitmix64: small, seeded, and the same sequence everywhere */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static void method_free(gpointer p)
{
	struct method *m = p;

	g_free(m->path);
	g_free(m->iface);
	g_free(m->name);
	g_free(m->in_sig);
	g_free(m);
}

static GDBusNodeInfo *introspect(GDBusConnection *bus, const char *path)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(GVariant) r = g_dbus_connection_call_sync(
		bus, DEST, path, "org.freedesktop.DBus.Introspectable", "Introspect", NULL,
		G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &err);
	const char *xml;

	if (!r)
		return NULL;
	g_variant_get(r, "(&s)", &xml);
	return g_dbus_node_info_new_for_xml(xml, NULL);
}

static void discover_path(GDBusConnection *bus, const char *path)
{
	g_autoptr(GDBusNodeInfo) node = introspect(bus, path);

	if (!node)
		return;
	if (node->interfaces && node->interfaces[0])
		g_ptr_array_add(paths, g_strdup(path));
	for (GDBusInterfaceInfo **i = node->interfaces; i && *i; i++) {
		if (!g_str_has_prefix((*i)->name, DEST))
			continue;
		for (GDBusMethodInfo **mi = (*i)->methods; mi && *mi; mi++) {
			struct method *m = g_new0(struct method, 1);
			GString *sig = g_string_new("(");

			for (GDBusArgInfo **a = (*mi)->in_args; a && *a; a++)
				g_string_append(sig, (*a)->signature);
			g_string_append_c(sig, ')');
			m->path = g_strdup(path);
			m->iface = g_strdup((*i)->name);
			m->name = g_strdup((*mi)->name);
			m->in_sig = g_string_free(sig, FALSE);
			g_ptr_array_add(methods, m);
			g_hash_table_add(exported, g_strdup_printf("%s.%s", m->iface, m->name));
		}
	}
	for (GDBusNodeInfo **c = node->nodes; c && *c; c++) {
		g_autofree char *child =
			g_strdup_printf("%s/%s", strcmp(path, "/") ? path : "", (*c)->path);
		discover_path(bus, child);
	}
}

static void discover(GDBusConnection *bus)
{
	g_ptr_array_set_size(methods, 0);
	g_ptr_array_set_size(paths, 0);
	discover_path(bus, ROOT_PATH);
}

/* Is IFACE.NAME exported at PATH right now? */
/* The calls that wait for the network by design (see the header). */
static gboolean waits_for_network(const struct method *m)
{
	static const char *const names[][2] = {
		{ "org.freedesktop.ModemManager1.Modem.Modem3gpp", "Scan" },
		{ "org.freedesktop.ModemManager1.Modem.Modem3gpp", "Register" },
		{ "org.freedesktop.ModemManager1.Modem.Simple", "Connect" },
		{ "org.freedesktop.ModemManager1.Bearer", "Connect" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
		if (!strcmp(m->iface, names[i][0]) && !strcmp(m->name, names[i][1]))
			return TRUE;
	return FALSE;
}

static gboolean still_exported(GDBusConnection *bus, const struct method *m)
{
	g_autoptr(GDBusNodeInfo) node = introspect(bus, m->path);
	GDBusInterfaceInfo *i;

	if (!node)
		return FALSE;
	i = g_dbus_node_info_lookup_interface(node, m->iface);
	return i && g_dbus_interface_info_lookup_method(i, m->name);
}

/* Names ModemManager's dictionaries use (Simple.Connect, CreateBearer, CreateSms, ...),
 * so a dict reaches the code that reads a key, with a value of the right type or not. */
static const char *const known_keys[] = {
	"apn",
	"ip-type",
	"allowed-auth",
	"user",
	"password",
	"allow-roaming",
	"rm-protocol",
	"number",
	"operator-id",
	"pin",
	"profile-id",
	"multiplex",
	"text",
	"data",
	"smsc",
	"validity",
	"class",
	"delivery-report-request",
	"storage",
	"apn-type",
	"access-type-preference",
	"roaming-allowance",
	"profile-name",
	"profile-source",
	"force",
	"teleservice-id",
	"service-category",
	"enabled",
	"rate",
	"sources",
	"supl-server",
	"gps-refresh-rate",
};

static char *gen_ascii(size_t len)
{
	char *s = g_malloc(len + 1);

	for (size_t k = 0; k < len; k++)
		s[k] = (char)(0x20 + below(0x5f));
	s[len] = '\0';
	return s;
}

static char *gen_string(void)
{
	static const char *const words[] = {
		"",	     "internet",
		"ims",	     "ipv4",
		"ipv6",	     "ipv4v6",
		"1234",	     "0000",
		"12345678",  "+15555550100",
		"310260",    "%s%n%x",
		"../../etc", "\xc3\xa9\xe2\x82\xac",
		"none",	     "any",
		"2g|3g|4g",  "/",
		"0",	     "-1",
	};
	switch (below(10)) {
	case 0:
		return g_strdup("");
	case 1:
		/* one huge string a call at most: a message stays far below the bus's limit */
		if (huge_left == 0)
			return gen_ascii(below(40));
		huge_left--;
		return gen_ascii(below(8) ? 1000 + below(64000) : 256 * 1024 + below(768 * 1024));
	case 2:
	case 3:
		return gen_ascii(below(40));
	case 4: {
		/* random valid UTF-8 code points, some outside the BMP */
		GString *s = g_string_new(NULL);
		for (uint32_t k = below(20); k > 0; k--) {
			gunichar c = below(2) ? 1 + below(0xd7ff) : 0x10000 + below(0xfffff);
			g_string_append_unichar(s, c);
		}
		return g_string_free(s, FALSE);
	}
	default:
		return g_strdup(words[below(G_N_ELEMENTS(words))]);
	}
}

static char *gen_path(void)
{
	GString *s;

	if (paths->len && below(2))
		return g_strdup(g_ptr_array_index(paths, below(paths->len)));
	switch (below(4)) {
	case 0:
		return g_strdup("/");
	case 1:
		return g_strdup_printf(
			ROOT_PATH "/%s/%u",
			(const char *[]){ "Bearer", "SIM", "Modem", "SMS", "Call" }[below(5)],
			below(3) ? below(4) : (uint32_t)rnd());
	default:
		s = g_string_new(NULL);
		for (uint32_t k = 1 + below(6); k > 0; k--) {
			g_string_append_c(s, '/');
			for (uint32_t n = 1 + below(12); n > 0; n--)
				g_string_append_c(s, "abcXYZ019_"[below(10)]);
		}
		return g_string_free(s, FALSE);
	}
}

static const char basic_types[] = "ybnqiuxtdsog";

static void gen_type(GString *t, int depth)
{
	uint32_t r = below(depth < MAX_DEPTH ? 18 : 12);

	if (r < 12) {
		g_string_append_c(t, basic_types[r]);
	} else if (r < 14) {
		g_string_append_c(t, 'v');
	} else if (r < 15) {
		g_string_append_c(t, 'a');
		gen_type(t, depth + 1);
	} else if (r < 17) {
		g_string_append(t, "a{");
		g_string_append_c(t, basic_types[below(12)]);
		gen_type(t, depth + 1);
		g_string_append_c(t, '}');
	} else {
		g_string_append_c(t, '(');
		for (uint32_t k = 1 + below(3); k > 0; k--)
			gen_type(t, depth + 1);
		g_string_append_c(t, ')');
	}
}

static GVariant *gen_value(const GVariantType *type, int depth);

static GVariant *gen_variant_content(int depth)
{
	GString *t = g_string_new(NULL);
	GVariant *v;

	/* mostly basic types: the wrong-type value of a known key */
	if (depth >= MAX_DEPTH || below(3))
		g_string_append_c(t, basic_types[below(12)]);
	else
		gen_type(t, depth + 1);
	v = gen_value(G_VARIANT_TYPE(t->str), depth + 1);
	g_string_free(t, TRUE);
	return v;
}

static GVariant *gen_dict_sv(const GVariantType *type, int depth)
{
	GVariantBuilder b;
	uint32_t n = below(4) ? below(6) : below(40);

	g_variant_builder_init(&b, type);
	for (; n > 0; n--) {
		g_autofree char *key =
			below(4) ? g_strdup(known_keys[below(G_N_ELEMENTS(known_keys))])
				 : gen_string();
		g_variant_builder_add(&b, "{sv}", key, gen_variant_content(depth));
	}
	return g_variant_builder_end(&b);
}

static GVariant *gen_value(const GVariantType *type, int depth)
{
	static const int64_t ints[] = { 0,
					1,
					-1,
					2,
					255,
					256,
					65535,
					65536,
					INT32_MAX,
					INT32_MIN,
					(int64_t)UINT32_MAX,
					INT64_MAX,
					INT64_MIN };
	int64_t n = below(3) ? ints[below(G_N_ELEMENTS(ints))] : (int64_t)rnd();

	if (g_variant_type_equal(type, G_VARIANT_TYPE("a{sv}")))
		return gen_dict_sv(type, depth);
	switch (g_variant_type_peek_string(type)[0]) {
	case 'y':
		return g_variant_new_byte((guchar)n);
	case 'b':
		return g_variant_new_boolean(n & 1);
	case 'n':
		return g_variant_new_int16((gint16)n);
	case 'q':
		return g_variant_new_uint16((guint16)n);
	case 'i':
		return g_variant_new_int32((gint32)n);
	case 'u':
		return g_variant_new_uint32((guint32)n);
	case 'x':
		return g_variant_new_int64(n);
	case 't':
		return g_variant_new_uint64((guint64)n);
	case 'h':
		return g_variant_new_handle(0); /* no fd is sent: a bad index for the callee */
	case 'd': {
		static const double ds[] = { 0.0, -1.0, 1e308, -1e308, 5e-324, INFINITY, NAN };
		return g_variant_new_double(below(2) ? ds[below(G_N_ELEMENTS(ds))]
						     : (double)n / 1000.0);
	}
	case 's': {
		g_autofree char *s = gen_string();
		return g_variant_new_string(s);
	}
	case 'o': {
		g_autofree char *s = gen_path();
		return g_variant_new_object_path(s);
	}
	case 'g': {
		GString *t = g_string_new(NULL);
		GVariant *v;
		for (uint32_t k = below(4); k > 0; k--)
			gen_type(t, 1);
		v = g_variant_new_signature(t->str);
		g_string_free(t, TRUE);
		return v;
	}
	case 'v':
		return g_variant_new_variant(gen_variant_content(depth));
	case 'm':
		return g_variant_new_maybe(
			g_variant_type_element(type),
			below(2) ? gen_value(g_variant_type_element(type), depth + 1) : NULL);
	case 'a': {
		const GVariantType *el = g_variant_type_element(type);
		GVariantBuilder b;
		uint32_t count = depth >= MAX_DEPTH ? below(2) : below(4) ? below(5) : below(64);

		g_variant_builder_init(&b, type);
		for (; count > 0; count--)
			g_variant_builder_add_value(&b, gen_value(el, depth + 1));
		return g_variant_builder_end(&b);
	}
	case '{': {
		const GVariantType *k = g_variant_type_key(type);
		GVariant *kv = gen_value(k, depth + 1);
		return g_variant_new_dict_entry(kv,
						gen_value(g_variant_type_value(type), depth + 1));
	}
	case '(': {
		GVariantBuilder b;
		g_variant_builder_init(&b, G_VARIANT_TYPE_TUPLE);
		for (const GVariantType *t = g_variant_type_first(type); t;
		     t = g_variant_type_next(t))
			g_variant_builder_add_value(&b, gen_value(t, depth + 1));
		return g_variant_builder_end(&b);
	}
	default:
		g_error("no generator for type %s", g_variant_type_peek_string(type));
	}
}

/*
 * Does GLib read back the message it writes for these arguments? GLib 2.74's GDBusMessage
 * does not for some values (seen: a dict with signature keys in a variant, at some
 * offsets: "Parsed value '' for variant is not a valid D-Bus signature", "Encountered
 * array of length 4294901760"), and a message qmapd's GDBus cannot read closes its bus
 * connection: GDBus drops a connection on bytes it cannot parse, qmapd reconnects (its
 * bus-restart path) and clients get ServiceUnknown meanwhile. That is GLib's, the same for
 * ModemManager, so such arguments are counted and not sent unless --send-unreadable.
 */
static gboolean glib_reads_back(const char *path, const struct method *m, GVariant *args)
{
	g_autoptr(GDBusMessage) msg = g_dbus_message_new_method_call(DEST, path, m->iface, m->name);
	g_autoptr(GDBusMessage) back = NULL;
	g_autofree guchar *blob = NULL;
	gsize len;

	g_dbus_message_set_body(msg, args);
	blob = g_dbus_message_to_blob(msg, &len, G_DBUS_CAPABILITY_FLAGS_NONE, NULL);
	if (!blob)
		return FALSE;
	back = g_dbus_message_new_from_blob(blob, len, G_DBUS_CAPABILITY_FLAGS_NONE, NULL);
	return back != NULL;
}

enum mode { RIGHT, WRONG_SIGNATURE, WRONG_PATH };

static void count_answer(const char *name)
{
	gpointer old = g_hash_table_lookup(answers, name);

	g_hash_table_insert(answers, g_strdup(name), GSIZE_TO_POINTER(GPOINTER_TO_SIZE(old) + 1));
}

static int print_answer(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
	guint64 seed = 1, count = 10000;
	double seconds = 60;
	int timeout_ms = 25000, unprivileged = 0, send_unreadable = 0;
	GOptionEntry entries[] = {
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "seed of the generator", "N" },
		{ "count", 0, 0, G_OPTION_ARG_INT64, &count, "stop after N calls", "N" },
		{ "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "stop after S seconds", "S" },
		{ "timeout-ms", 0, 0, G_OPTION_ARG_INT, &timeout_ms, "a call's timeout", "MS" },
		{ "unprivileged", 0, 0, G_OPTION_ARG_NONE, &unprivileged,
		  "accept the bus's AccessDenied", NULL },
		{ "verbose", 0, 0, G_OPTION_ARG_NONE, &verbose, "print every call", NULL },
		{ "send-unreadable", 0, 0, G_OPTION_ARG_NONE, &send_unreadable,
		  "also send arguments GLib cannot read back", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- fuzz qmapd's D-Bus API");
	g_autoptr(GError) err = NULL;
	g_autoptr(GDBusConnection) bus = NULL;
	g_autoptr(GTimer) timer = g_timer_new();
	guint64 execs = 0, bad = 0, unreadable = 0, slow = 0;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
		fprintf(stderr, "mm-dbus-fuzz: %s\n", err->message);
		return 2;
	}
	rng_state = seed;
	bus = g_bus_get_sync(G_BUS_TYPE_SYSTEM, NULL, &err);
	if (!bus) {
		fprintf(stderr, "mm-dbus-fuzz: system bus: %s\n", err->message);
		return 1;
	}
	/* a lost connection must be reported, not end the process with SIGTERM */
	g_dbus_connection_set_exit_on_close(bus, FALSE);
	methods = g_ptr_array_new_with_free_func(method_free);
	paths = g_ptr_array_new_with_free_func(g_free);
	reached = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	exported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	answers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	discover(bus);
	if (methods->len == 0) {
		fprintf(stderr, "mm-dbus-fuzz: no ModemManager method under %s\n", ROOT_PATH);
		return 1;
	}

	while (execs < count && g_timer_elapsed(timer, NULL) < seconds) {
		/* objects come and go (CreateBearer, DeleteBearer, Enable): look again now and then */
		if (execs % 200 == 199 || methods->len == 0)
			discover(bus);
		if (methods->len == 0) {
			fprintf(stderr, "mm-dbus-fuzz: every ModemManager object has gone\n");
			bad++;
			break;
		}
		struct method *m = g_ptr_array_index(methods, below(methods->len));
		uint32_t r = below(100);
		enum mode mode = r < 80 ? RIGHT : r < 92 ? WRONG_SIGNATURE : WRONG_PATH;
		g_autofree char *path = mode == WRONG_PATH ? gen_path() : g_strdup(m->path);
		g_autoptr(GString) sig = g_string_new(m->in_sig);
		g_autoptr(GError) e = NULL;
		g_autoptr(GVariant) reply = NULL;
		g_autofree char *remote = NULL;
		GVariant *args;
		const char *answer;
		gboolean ok;

		if (mode == WRONG_SIGNATURE) {
			while (strcmp(sig->str, m->in_sig) == 0) {
				g_string_assign(sig, "(");
				for (uint32_t k = below(4); k > 0; k--)
					gen_type(sig, 1);
				g_string_append_c(sig, ')');
			}
		}
		huge_left = 1;
		args = gen_value(G_VARIANT_TYPE(sig->str), 0);
		g_variant_ref_sink(args);
		if (verbose) {
			g_autofree char *printed = g_variant_print(args, TRUE);
			if (strlen(printed) > 300)
				strcpy(printed + 297, "...");
			printf("%" G_GUINT64_FORMAT " %s %s.%s %s\n", execs, path, m->iface,
			       m->name, printed);
			fflush(stdout);
		}
		if (!send_unreadable && !glib_reads_back(path, m, args)) {
			unreadable++;
			g_variant_unref(args);
			continue;
		}
		reply = g_dbus_connection_call_sync(bus, DEST, path, m->iface, m->name, args, NULL,
						    G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &e);
		execs++;
		m->calls++;
		if (mode == RIGHT)
			g_hash_table_add(reached, g_strdup_printf("%s.%s", m->iface, m->name));
		if (reply) {
			answer = "(reply)";
			ok = TRUE;
			m->replies++;
		} else {
			remote = g_dbus_error_get_remote_error(e);
			answer = remote ? remote : g_quark_to_string(e->domain);
			ok = FALSE;
			if (remote && g_str_has_prefix(remote, MM_ERROR))
				ok = TRUE;
			else if (remote && mode == WRONG_SIGNATURE &&
				 !strcmp(remote, "org.freedesktop.DBus.Error.InvalidArgs"))
				ok = TRUE;
			else if (!remote && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) &&
				 waits_for_network(m)) {
				ok = TRUE;
				slow++;
			} else if (remote && unprivileged &&
				   !strcmp(remote, "org.freedesktop.DBus.Error.AccessDenied"))
				ok = TRUE;
			else if (remote &&
				 (!strcmp(remote, "org.freedesktop.DBus.Error.UnknownMethod") ||
				  !strcmp(remote, "org.freedesktop.DBus.Error.UnknownObject") ||
				  !strcmp(remote, "org.freedesktop.DBus.Error.UnknownInterface"))) {
				/* fine if it is not (or no longer) there */
				struct method probe = *m;

				probe.path = path;
				ok = !still_exported(bus, &probe);
			}
		}
		count_answer(answer);
		if (!ok) {
			g_autofree char *printed = g_variant_print(args, TRUE);
			if (strlen(printed) > 300)
				strcpy(printed + 297, "...");
			bad++;
			if (bad <= 20)
				fprintf(stderr,
					"FAIL: call %" G_GUINT64_FORMAT " (seed %" G_GUINT64_FORMAT
					"): %s %s.%s %s: %s\n",
					execs - 1, seed, path, m->iface, m->name, printed,
					e->message);
		}
		g_variant_unref(args);
		if (g_dbus_connection_is_closed(bus)) {
			fprintf(stderr, "FAIL: the bus connection closed\n");
			bad++;
			break;
		}
	}

	double elapsed = g_timer_elapsed(timer, NULL);
	printf("mm-dbus-fuzz: seed %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
	       " executions in %.1f s (%.0f/s), %u methods exported, %u reached, %" G_GUINT64_FORMAT
	       " not allowed, %" G_GUINT64_FORMAT " not sent (GLib cannot read them back)\n",
	       seed, execs, elapsed, execs / (elapsed > 0 ? elapsed : 1),
	       g_hash_table_size(exported), g_hash_table_size(reached), bad, unreadable);
	if (slow)
		printf("mm-dbus-fuzz: %" G_GUINT64_FORMAT " calls that wait for the network (Scan, "
		       "Register, Connect) outlived the %d ms timeout (slow)\n",
		       slow, timeout_ms);
	guint n_names = 0;
	g_autofree gpointer *names = g_hash_table_get_keys_as_array(answers, &n_names);
	qsort(names, n_names, sizeof(*names), print_answer);
	for (guint k = 0; k < n_names; k++) {
		const char *n = names[k];
		printf("  %8zu %s\n", GPOINTER_TO_SIZE(g_hash_table_lookup(answers, n)), n);
	}
	GHashTableIter it;
	gpointer key;
	g_hash_table_iter_init(&it, exported);
	while (g_hash_table_iter_next(&it, &key, NULL))
		if (!g_hash_table_contains(reached, key))
			printf("  not reached: %s\n", (const char *)key);
	g_ptr_array_unref(methods);
	g_ptr_array_unref(paths);
	g_hash_table_unref(reached);
	g_hash_table_unref(exported);
	g_hash_table_unref(answers);
	return bad ? 1 : 0;
}
