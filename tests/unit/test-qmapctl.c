/* SPDX-License-Identifier: MIT */
/*
 * qmapctl: option and argument parsing with the exact messages and exit statuses, the
 * renderers on canned and on malformed replies, and every verb end to end against a control
 * server in a child process whose stub manager connects muxes after a few status polls
 * (or fails them, or never gets there).
 */
#include <errno.h>
#include <ev.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control-client.h"
#include "control-server.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "qmapctl.h"
#include "test-case.h"
#include "verbs.h"

#define NOBODY 65534

static char dir[] = "/tmp/test-qmapctl-XXXXXX";
static char sock_path[256];

static void remove_dir(void)
{
	rmdir(dir);
}

/* One directory for the sockets of whichever cases run, made by the first, gone at exit. */
TEST_SETUP()
{
	static bool made;

	signal(SIGPIPE, SIG_IGN);
	if (made)
		return;
	if (!mkdtemp(dir))
		TEST_SKIP("cannot make a temporary directory: %s", strerror(errno));
	made = true;
	atexit(remove_dir);
	chmod(dir, 0755);
	snprintf(sock_path, sizeof(sock_path), "%s/control", dir);
}

struct result {
	int status;
	char *out;
	char *err;
};

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
	*r = (struct result){};
}

/* Run qmapctl as main() would, with its output in memory. args ends with NULL. */
static struct result run(const char *const *args)
{
	struct result r = {};
	char *argv[64];
	size_t outlen, errlen;
	FILE *out = open_memstream(&r.out, &outlen);
	FILE *err = open_memstream(&r.err, &errlen);
	struct qmapctl q;
	int argc = 0, index;

	if (!out || !err)
		abort();
	argv[argc++] = (char *)"qmapctl";
	for (size_t i = 0; args[i] && argc < 63; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;

	qmapctl_init(&q, out, err);
	q.poll_interval_ms = 20;
	r.status = qmapctl_parse_options(&q, argc, argv, &index);
	if (r.status == QMAPCTL_PROCEED)
		r.status = qmapctl_dispatch(&q, argc - index, argv + index);
	qmapctl_done(&q);
	fclose(out);
	fclose(err);
	return r;
}

#define RUN(...) run((const char *const[]){ __VA_ARGS__, NULL })

static void expect_run_at(const char *file, int line, struct result r, int status, const char *out,
			  const char *err)
{
	if (r.status != status || (out && strcmp(r.out, out) != 0) ||
	    (err && strcmp(r.err, err) != 0)) {
		fprintf(stderr,
			"%s:%d: expected status %d, got %d\n--- stdout:\n%s--- stderr:\n%s---\n",
			file, line, status, r.status, r.out, r.err);
		if (out && strcmp(r.out, out) != 0)
			fprintf(stderr, "--- wanted stdout:\n%s---\n", out);
		if (err && strcmp(r.err, err) != 0)
			fprintf(stderr, "--- wanted stderr:\n%s---\n", err);
		test_failures++;
	}
}

/* out/err NULL: not compared. Frees r. */
#define EXPECT_RUN(r, status, out, err)                                        \
	do {                                                                   \
		struct result _r = (r);                                        \
		expect_run_at(__FILE__, __LINE__, _r, (status), (out), (err)); \
		result_free(&_r);                                              \
	} while (0)

static void expect_contains_at(const char *file, int line, const char *text, const char *needle)
{
	if (!strstr(text, needle)) {
		fprintf(stderr, "%s:%d: expected \"%s\" in:\n%s\n", file, line, needle, text);
		test_failures++;
	}
}

#define EXPECT_CONTAINS(text, needle) expect_contains_at(__FILE__, __LINE__, (text), (needle))

TEST(options)
{
	struct qmapctl q;
	struct result r;
	char *argv[] = { "qmapctl", "-j", "-s", "/x/y", "--timeout", "2.5", "mux", "-j", NULL };
	char *argv2[] = { "qmapctl", "--json", "--socket=/z", "-t0.25", NULL };
	int index;

	qmapctl_init(&q, stdout, stderr);
	EXPECT_STR_EQ(q.socket_path, "/run/qmapd/control");
	EXPECT_EQ(q.timeout, 30);
	EXPECT_EQ(q.json, false);
	EXPECT_EQ(qmapctl_parse_options(&q, 8, argv, &index), QMAPCTL_PROCEED);
	EXPECT_EQ(index, 6);
	EXPECT_EQ(q.json, true);
	EXPECT_STR_EQ(q.socket_path, "/x/y");
	EXPECT_EQ(q.timeout * 10, 25);

	qmapctl_init(&q, stdout, stderr);
	EXPECT_EQ(qmapctl_parse_options(&q, 4, argv2, &index), QMAPCTL_PROCEED);
	EXPECT_EQ(index, 4);
	EXPECT_STR_EQ(q.socket_path, "/z");
	EXPECT_EQ(q.timeout * 100, 25);
	EXPECT_TRUE(q.modem == NULL);

	{
		char *argv3[] = { "qmapctl", "-m", "modem1", "--modem=b_2-x", "mux", NULL };

		qmapctl_init(&q, stdout, stderr);
		EXPECT_EQ(qmapctl_parse_options(&q, 5, argv3, &index), QMAPCTL_PROCEED);
		EXPECT_EQ(index, 4);
		EXPECT_STR_EQ(q.modem, "b_2-x"); /* the last one counts, as for -s */
	}
	EXPECT_RUN(RUN("-m"), 2, "",
		   "qmapctl: option '-m' needs an argument\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("-m", "", "status"), 2, "",
		   "qmapctl: invalid modem name '': expected 1 to 11 of a-z, 0-9, '_' and '-'\n"
		   "Try 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("--modem", "modem1234567", "status"), 2, NULL, NULL);

	r = RUN("--help");
	EXPECT_EQ(r.status, 0);
	EXPECT_EQ(strncmp(r.out, "Usage: qmapctl [OPTIONS] [COMMAND] [ARGS...]\n", 45), 0);
	EXPECT_CONTAINS(r.out, "  mux add ID [--no-wait] [KEY=VALUE...] add a mux and wait");
	EXPECT_CONTAINS(r.out, "Exit status: 0 ok, 1 failure, 2 usage error (also: several modems, "
			       "none named),\n3 timeout, 8 qmapd");
	EXPECT_STR_EQ(r.err, "");
	result_free(&r);
	r = RUN("-h", "status");
	EXPECT_EQ(r.status, 0);
	EXPECT_EQ(strncmp(r.out, "Usage: qmapctl", 14), 0);
	result_free(&r);
	r = RUN("help");
	EXPECT_EQ(r.status, 0);
	EXPECT_EQ(strncmp(r.out, "Usage: qmapctl", 14), 0);
	result_free(&r);
	EXPECT_RUN(RUN("--version"), 0, "qmapctl " QMAPD_VERSION "\n", "");

	EXPECT_RUN(RUN("-x"), 2, "", "qmapctl: unknown option '-x'\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("--bogus"), 2, "",
		   "qmapctl: unknown option '--bogus'\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("-t"), 2, "",
		   "qmapctl: option '-t' needs an argument\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("--socket"), 2, "",
		   "qmapctl: option '--socket' needs an argument\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("-s", ""), 2, "", "qmapctl: empty socket path\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("-t", "0"), 2, "",
		   "qmapctl: invalid timeout '0': expected seconds, more than 0 and at most "
		   "86400\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("-t", "-1"), 2, "", NULL);
	EXPECT_RUN(RUN("-t", "1s"), 2, "", NULL);
	EXPECT_RUN(RUN("-t", "nan"), 2, "", NULL);
	EXPECT_RUN(RUN("-t", "inf"), 2, "", NULL);
	EXPECT_RUN(RUN("-t", "86401"), 2, "", NULL);
	EXPECT_RUN(RUN("-t", ""), 2, "", NULL);

	EXPECT_RUN(RUN("frob"), 2, "", "qmapctl: unknown command 'frob'\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("mux", "frob"), 2, "",
		   "qmapctl: unknown command 'mux frob'\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("status", "extra"), 2, "",
		   "qmapctl: status takes no arguments, got 'extra'\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("status", "--frob"), 2, "",
		   "qmapctl: unknown option '--frob' for status\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(RUN("stats", "x"), 2, "", NULL);
	EXPECT_RUN(RUN("reload", "x"), 2, "", NULL);
	EXPECT_RUN(RUN("help", "x"), 2, "", NULL);
	EXPECT_RUN(RUN("mux", "list", "x"), 2, "", NULL);
	EXPECT_RUN(RUN("status", "--no-wait"), 2, "", NULL);
	EXPECT_RUN(RUN("mux", "del", "--help"), 0, "Usage: qmapctl mux del ID\n", "");

	/* Nothing listens: exit 8, whichever verb, and "qmapctl" alone means status. */
	EXPECT_RUN(RUN("-s", "/nonexistent/control"), 8, "",
		   "qmapctl: qmapd is not running (cannot connect to /nonexistent/control: No "
		   "such file or directory)\n");
	EXPECT_RUN(RUN("-s", "/nonexistent/control", "-j", "mux", "list"), 8, "", NULL);
	EXPECT_RUN(RUN("-s", "/nonexistent/control", "reload"), 8, "", NULL);
	EXPECT_RUN(RUN("-s", "/nonexistent/control", "stats", "--json"), 8, "", NULL);
}

/* mux add and mux del check their arguments before connecting: exit 2 proves it. */
TEST(mux_arguments)
{
	struct config_mux m;
	json_t *settings = NULL;
	char err[CONFIG_ERROR_MAX];
	char *args[] = { "3", "apn=internet", "ip-type=ipv4", "password=a=b", "autoconnect=no" };

#define MUXRUN(...) RUN("-s", "/nonexistent/control", "mux", __VA_ARGS__)
	EXPECT_RUN(MUXRUN("add"), 2, "", "qmapctl: mux add needs a mux id (1..254)\n");
	EXPECT_RUN(MUXRUN("add", "0"), 2, "", "qmapctl: invalid mux id '0': expected 1..254\n");
	EXPECT_RUN(MUXRUN("add", "255"), 2, "", NULL);
	EXPECT_RUN(MUXRUN("add", "03"), 2, "", NULL);
	EXPECT_RUN(MUXRUN("add", "+3"), 2, "", NULL);
	EXPECT_RUN(MUXRUN("add", "3x"), 2, "", NULL);
	EXPECT_RUN(MUXRUN("add", "3", "apn"), 2, "", "qmapctl: expected KEY=VALUE, got 'apn'\n");
	EXPECT_RUN(MUXRUN("add", "3", "=x"), 2, "", "qmapctl: expected KEY=VALUE, got '=x'\n");
	EXPECT_RUN(MUXRUN("add", "3", "apn=a", "apn=b"), 2, "", "qmapctl: key 'apn' given twice\n");
	/* The messages the file gives, without file, line or section. */
	EXPECT_RUN(MUXRUN("add", "3", "ip-type=ipv5"), 2, "",
		   "qmapctl: invalid ip-type 'ipv5': expected ipv4, ipv6 or ipv4v6\n");
	EXPECT_RUN(MUXRUN("add", "3", "mtu=576"), 2, "",
		   "qmapctl: invalid mtu '576': ip-type 'ipv4v6' needs at least 1280\n");
	EXPECT_RUN(MUXRUN("add", "3", "bogus=1"), 2, "", "qmapctl: unknown key 'bogus'\n");
	EXPECT_RUN(MUXRUN("add", "3", "password=\x01"), 2, "",
		   "qmapctl: invalid password: only printable ASCII is allowed\n");
	EXPECT_RUN(MUXRUN("add", "3", "--frob"), 2, "",
		   "qmapctl: unknown option '--frob' for mux add\nTry 'qmapctl --help'.\n");
	/* Valid: only then does it try to connect. */
	EXPECT_RUN(MUXRUN("add", "3", "apn=internet", "default-route=yes", "--no-wait"), 8, "",
		   NULL);
	EXPECT_RUN(MUXRUN("add", "--", "3", "apn=internet"), 8, "", NULL);

	EXPECT_RUN(MUXRUN("del"), 2, "",
		   "qmapctl: mux del needs exactly one mux id\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(MUXRUN("del", "3", "4"), 2, "", NULL);
	EXPECT_RUN(MUXRUN("del", "x"), 2, "",
		   "qmapctl: invalid mux id 'x': expected 1..254\nTry 'qmapctl --help'.\n");
	EXPECT_RUN(MUXRUN("del", "3"), 8, "", NULL);
#undef MUXRUN

	/* What would be sent: the values as the user wrote them. */
	EXPECT_EQ(qmapctl_mux_parse_add(5, args, &m, &settings, err, sizeof(err)), 0);
	EXPECT_EQ(m.id, 3);
	EXPECT_TRUE(m.present);
	EXPECT_STR_EQ(m.apn, "internet");
	EXPECT_EQ(m.ip_type, CONFIG_IP_TYPE_IPV4);
	EXPECT_STR_EQ(m.password, "a=b");
	EXPECT_EQ(m.autoconnect, false);
	{
		char *s = json_dumps(settings, JSON_COMPACT);

		EXPECT_STR_EQ(s, "{\"apn\":\"internet\",\"ip-type\":\"ipv4\",\"password\":\"a=b\","
				 "\"autoconnect\":\"no\"}");
		free(s);
	}
	json_decref(settings);
}

static const char status_json[] =
	"{\"modems\":[{\"name\":\"modem0\",\"modem\":{\"state\":\"ready\",\"transport\":\"sim:/run/"
	"qmapd/sim.sock\","
	"\"control-path\":\"/run/qmapd/qmi0\",\"manufacturer\":\"ACME\\u001b[2J\","
	"\"model\":\"X55\",\"revision\":\"1.0\",\"imei\":\"490154203237518\","
	"\"data-format\":{\"protocol\":\"qmapv5\",\"dl-max-size\":16384,"
	"\"dl-max-datagrams\":32,\"ul-max-size\":16384,\"ul-max-datagrams\":32},"
	"\"registration\":\"home\",\"access-technology\":\"lte\","
	"\"signal\":{\"rssi\":-65,\"rsrq\":-10}},"
	"\"muxes\":[{\"id\":1,\"interface\":\"qmap1\",\"state\":\"connected\",\"apn\":\"internet\","
	"\"ip-type\":\"ipv4v6\",\"user\":\"alice\",\"password\":\"hunter2\","
	"\"allowed-auth\":\"pap|chap\",\"headroom\":\"tap+xdp\",\"mtu\":1500,"
	"\"ipv4\":{\"address\":\"192.0.2.2/30\",\"gateway\":\"192.0.2.1\","
	"\"dns\":[\"198.51.100.1\",\"198.51.100.2\"],\"mtu\":1430},"
	"\"ipv6\":{\"address\":\"2001:db8::2/64\"},"
	"\"counters\":{\"rx-packets\":12,\"rx-bytes\":3481,\"tx-packets\":10,"
	"\"tx-bytes\":1048576,\"rx-dropped\":0,\"tx-dropped\":1}},"
	"{\"id\":2,\"interface\":\"qmap2\",\"state\":\"failed\",\"apn\":\"ims\","
	"\"last-error\":\"unknown APN\",\"retry-in\":5}]},"
	"{\"name\":\"b\",\"modem\":{\"state\":\"absent\",\"transport\":\"usb-path:1-2\"},"
	"\"muxes\":[]}]}";

static const char status_text[] = "modem modem0\n"
				  "  state:               ready\n"
				  "  transport:           sim:/run/qmapd/sim.sock\n"
				  "  control:             /run/qmapd/qmi0\n"
				  "  manufacturer:        ACME?[2J\n"
				  "  model:               X55\n"
				  "  revision:            1.0\n"
				  "  IMEI:                490154203237518\n"
				  "  registration:        home\n"
				  "  access technology:   lte\n"
				  "  signal:              rssi -65 dBm, rsrq -10 dB\n"
				  "  data format:         qmapv5\n"
				  "  downlink:            16384 bytes, 32 datagrams\n"
				  "  uplink:              16384 bytes, 32 datagrams\n"
				  "\n"
				  "mux 1 (qmap1)\n"
				  "  state:               connected\n"
				  "  apn:                 internet\n"
				  "  ip type:             ipv4v6\n"
				  "  allowed auth:        pap|chap\n"
				  "  user:                alice\n"
				  "  password:            (hidden)\n"
				  "  ipv4:                192.0.2.2/30\n"
				  "  ipv4 gateway:        192.0.2.1\n"
				  "  ipv4 dns:            198.51.100.1, 198.51.100.2\n"
				  "  ipv4 mtu:            1430\n"
				  "  ipv6:                2001:db8::2/64\n"
				  "  mtu:                 1500\n"
				  "  headroom:            tap+xdp\n"
				  "  rx:                  12 packets, 3.40 KiB, 0 dropped\n"
				  "  tx:                  10 packets, 1.00 MiB, 1 dropped\n"
				  "\n"
				  "mux 2 (qmap2)\n"
				  "  state:               failed\n"
				  "  retry in:            5 s\n"
				  "  apn:                 ims\n"
				  "  last error:          unknown APN\n"
				  "\n"
				  "modem b\n"
				  "  state:               absent\n"
				  "  transport:           usb-path:1-2\n"
				  "\n"
				  "no muxes\n";

static char *render(void (*fn)(json_t *, FILE *), const char *json)
{
	json_t *j = json_loads(json, 0, NULL);
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	if (!j && strcmp(json, "null") != 0)
		fprintf(stderr, "bad test JSON: %s\n", json);
	fn(j, f);
	fclose(f);
	json_decref(j);
	return text;
}

static void expect_render_at(const char *file, int line, void (*fn)(json_t *, FILE *),
			     const char *json, const char *want)
{
	char *got = render(fn, json);

	if (strcmp(got, want) != 0) {
		fprintf(stderr, "%s:%d: rendering %s\n--- got:\n%s--- wanted:\n%s---\n", file, line,
			json, got, want);
		test_failures++;
	}
	free(got);
}

#define EXPECT_RENDER(fn, json, want) expect_render_at(__FILE__, __LINE__, (fn), (json), (want))

TEST(render)
{
	static const char *const odd[] = {
		"null",
		"[]",
		"{}",
		"{\"modem\":5,\"muxes\":{}}",
		"{\"modems\":5}",
		"{\"modems\":[5,null,[],{\"name\":7,\"modem\":5,\"muxes\":{}}]}",
		"{\"modems\":[{\"modem\":{\"state\":[],\"signal\":[],\"data-format\":7},"
		"\"muxes\":[5,null,[]]}]}",
		("{\"muxes\":[{\"id\":\"x\",\"ipv4\":[],\"counters\":{\"rx-packets\":-5,"
		 "\"rx-bytes\":\"lots\"},\"ipv6\":{\"dns\":[1,null,\"::1\"]}}]}"),
		"{\"device\":[],\"malformed\":{\"a\":{}},\"muxes\":[{}],\"control\":null}",
		"{\"modems\":[{\"device\":[],\"malformed\":{\"a\":{}},\"muxes\":[{}]}],"
		"\"control\":null}",
	};
	char buf[32];
	char *text;

	EXPECT_RENDER(qmapctl_status_render, status_json, status_text);
	/* The password never shows, whatever qmapd sent. */
	text = render(qmapctl_status_render, status_json);
	EXPECT_TRUE(!strstr(text, "hunter2"));
	free(text);

	/* Requested and granted side by side; the grant may exceed the request. */
	EXPECT_RENDER(qmapctl_status_render,
		      "{\"modems\":[{\"name\":\"a\",\"modem\":{\"data-format\":{\"protocol\":"
		      "\"qmap\",\"dl-max-size\":4096,"
		      "\"dl-max-datagrams\":10,\"ul-max-size\":4096,\"ul-max-datagrams\":16,"
		      "\"dl-min-padding\":16,\"data-interface\":4,"
		      "\"requested\":{\"protocol\":\"qmapv5\",\"dl-max-size\":16384,"
		      "\"dl-max-datagrams\":32,\"ul-max-size\":4096,\"ul-max-datagrams\":11},"
		      "\"granted\":{\"protocol\":\"qmap\",\"dl-max-size\":4096,"
		      "\"dl-max-datagrams\":10,\"ul-max-size\":4096,\"ul-max-datagrams\":16}}},"
		      "\"muxes\":[]}]}",
		      "modem a\n"
		      "  data format:         qmap (asked qmapv5, granted qmap)\n"
		      "  downlink:            4096 bytes, 10 datagrams (asked 16384 / 32, granted "
		      "4096 / 10)\n"
		      "  downlink padding:    16 bytes\n"
		      "  uplink:              4096 bytes, 16 datagrams (asked 4096 / 11, granted "
		      "4096 / 16)\n"
		      "  data interface:      4\n"
		      "\nno muxes\n");

	EXPECT_RENDER(qmapctl_status_render,
		      "{\"modems\":[{\"name\":\"a\",\"modem\":{\"state\":\"absent\"},"
		      "\"muxes\":[]}]}",
		      "modem a\n  state:               absent\n\nno muxes\n");
	/* Discovery and nothing plugged in. */
	EXPECT_RENDER(qmapctl_status_render, "{\"modems\":[]}", "no modems\n");
	/* The daemon's D-Bus side after the modems, a bad one skipped. */
	EXPECT_RENDER(qmapctl_status_render,
		      "{\"modems\":[],\"dbus\":{\"built\":false,\"state\":\"off: qmapd "
		      "was built without D-Bus ([dbus] enabled = auto)\"}}",
		      "no modems\n\nModemManager D-Bus API: off: qmapd was built without D-Bus "
		      "([dbus] enabled = auto)\n");
	EXPECT_RENDER(qmapctl_status_render, "{\"modems\":[],\"dbus\":{\"state\":7}}",
		      "no modems\n");

	EXPECT_RENDER(qmapctl_status_render,
		      "{\"modems\":[{\"name\":\"x\\u001b\",\"modem\":{\"state\":\"ready\","
		      "\"control\":\"none\"},"
		      "\"muxes\":[{\"id\":1,\"counters\":{\"rx-packets\":1}}]}]}",
		      "modem x?\n"
		      "  state:               ready\n"
		      "  control:             none\n"
		      "\n"
		      "mux 1\n"
		      "  rx:                  1 packet, 0 B, 0 dropped\n"
		      "  tx:                  0 packets, 0 B, 0 dropped\n");

	EXPECT_RENDER(qmapctl_mux_render_list,
		      "{\"muxes\":[{\"modem\":\"modem0\",\"id\":1,\"interface\":\"qmap1\","
		      "\"state\":\"connected\",\"apn\":\"internet\"},{\"modem\":\"b\",\"id\":254,"
		      "\"interface\":\"wwan-long\",\"state\":\"connecting\",\"apn\":\"\"}]}",
		      "MODEM   ID   INTERFACE  STATE       APN\n"
		      "modem0  1    qmap1      connected   internet\n"
		      "b       254  wwan-long  connecting  -\n");
	EXPECT_RENDER(qmapctl_mux_render_list, "{\"muxes\":[]}", "no muxes\n");

	EXPECT_RENDER(qmapctl_stats_render,
		      "{\"modems\":[{\"name\":\"modem0\",\"device\":{\"rx-transfers\":10,"
		      "\"rx-bytes\":4096,\"ul-reader-fifo\":\"wait-out\"},"
		      "\"malformed\":{\"short-header\":0,\"bad-length\":2},"
		      "\"muxes\":[{\"modem\":\"modem0\",\"id\":1,\"interface\":\"qmap1\","
		      "\"rx-packets\":5}],\"control-link\":{\"to-modem\":3}},"
		      "{\"name\":\"b\",\"muxes\":[]}],"
		      "\"control\":{\"clients\":1,\"requests\":3}}",
		      "modem modem0\n"
		      "device\n"
		      "  rx-transfers:   10\n"
		      "  rx-bytes:       4096\n"
		      "  ul-reader-fifo: wait-out\n"
		      "\n"
		      "malformed input\n"
		      "  bad-length: 2\n"
		      "\n"
		      "mux 1 (qmap1)\n"
		      "  rx-packets: 5\n"
		      "\n"
		      "control link (QMI)\n"
		      "  to-modem: 3\n"
		      "\n"
		      "modem b\n"
		      "\n"
		      "control socket\n"
		      "  clients:  1\n"
		      "  requests: 3\n");
	EXPECT_RENDER(qmapctl_stats_render,
		      "{\"modems\":[{\"name\":\"a\",\"malformed\":{\"short-header\":0}}]}",
		      "modem a\n\nmalformed input\n  none\n");
	/* ModemManager's D-Bus API: its counters, then one line per error name (long). */
	EXPECT_RENDER(qmapctl_stats_render,
		      "{\"modems\":[],\"control\":{\"clients\":1},\"dbus\":{\"calls\":7,"
		      "\"invalid\":1,\"errors\":{\"org.freedesktop.ModemManager1.Error."
		      "MobileEquipment.MissingOrUnknownApn\":2,\"bad\":\"x\"}}}",
		      "control socket\n"
		      "  clients: 1\n"
		      "\n"
		      "ModemManager D-Bus API\n"
		      "  calls:   7\n"
		      "  invalid: 1\n"
		      "  error 2 org.freedesktop.ModemManager1.Error.MobileEquipment."
		      "MissingOrUnknownApn\n");
	EXPECT_RENDER(qmapctl_stats_render, "{\"dbus\":{\"calls\":0,\"errors\":[1]}}",
		      "ModemManager D-Bus API\n  calls: 0\n");
	EXPECT_RENDER(qmapctl_stats_render,
		      "{\"modems\":[],\"dns\":{\"resolved-links\":2,\"files\":0},"
		      "\"control\":{\"clients\":1}}",
		      "DNS (systemd-resolved, files)\n"
		      "  resolved-links: 2\n"
		      "  files:          0\n"
		      "\n"
		      "control socket\n"
		      "  clients: 1\n");

	/* Whatever the shape, no crash; the sanitizers watch the rest. */
	for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
		free(render(qmapctl_status_render, odd[i]));
		free(render(qmapctl_mux_render_list, odd[i]));
		free(render(qmapctl_stats_render, odd[i]));
	}

	EXPECT_STR_EQ(qmapctl_format_bytes(buf, sizeof(buf), 0), "0 B");
	EXPECT_STR_EQ(qmapctl_format_bytes(buf, sizeof(buf), 1023), "1023 B");
	EXPECT_STR_EQ(qmapctl_format_bytes(buf, sizeof(buf), 1024), "1.00 KiB");
	EXPECT_STR_EQ(qmapctl_format_bytes(buf, sizeof(buf), 1536), "1.50 KiB");
	EXPECT_STR_EQ(qmapctl_format_bytes(buf, sizeof(buf), 5ull << 30), "5.00 GiB");
	EXPECT_STR_EQ(qmapctl_sanitize(buf, 6, "ab\ncdefgh"), "ab?cd");
	EXPECT_STR_EQ(qmapctl_sanitize(buf, sizeof(buf), NULL), "");
}

/*
 * The server child's stub manager: muxes that connect after two status polls, on "modem0"
 * (the old single-modem names, qmap<N>) and, with fake_two, also on "b" (named: b.<N>).
 * APN "slow" never connects; "late" neither, and a status naming it is answered 0.35 s late
 * from its second poll on (a busy machine).
 */
struct fake_mux {
	bool present;
	char interface[16];
	char apn[CONFIG_VALUE_MAX + 1];
	bool autoconnect;
	unsigned polls;
};

static const char *const fake_names[2] = { "modem0", "b" };
static struct fake_mux fake[2][CONFIG_MUX_ID_MAX + 1];
static bool fake_two;

static const char *fake_state(struct fake_mux *m)
{
	if (!m->autoconnect)
		return "disabled";
	if (strcmp(m->apn, "slow") == 0 || strcmp(m->apn, "late") == 0 || m->polls < 2)
		return "connecting";
	if (strcmp(m->apn, "fail") == 0)
		return "failed";
	return "connected";
}

/* The manager's routing: -1 (all), or the modem's index; < -1: an error in *r. */
static int fake_route(const char *modem, bool need_one, int *r, char *err, size_t errlen)
{
	unsigned n = fake_two ? 2 : 1;

	for (unsigned i = 0; modem && i < n; i++)
		if (strcmp(modem, fake_names[i]) == 0)
			return (int)i;
	if (modem) {
		snprintf(err, errlen, "no modem '%s'", modem);
		*r = -ENODEV;
		return -2;
	}
	if (need_one && n > 1) {
		snprintf(err, errlen, "%u modems: name one with -m (qmapctl -m NAME ...)", n);
		*r = -ENOTUNIQ;
		return -2;
	}
	return need_one ? 0 : -1;
}

static int fake_status(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	json_t *modems = json_array();
	int r = 0, only = fake_route(modem, false, &r, err, errlen);

	(void)userdata;
	if (only < -1)
		return r;
	for (int k = 0; k < (fake_two ? 2 : 1); k++) {
		json_t *muxes = json_array();

		if (only >= 0 && k != only)
			continue;
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
			struct fake_mux *m = &fake[k][id];
			const char *state;
			json_t *j;

			if (!m->present)
				continue;
			state = fake_state(m);
			if (strcmp(m->apn, "late") == 0 && m->polls >= 1)
				usleep(350000);
			m->polls++;
			j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s}", "modem", fake_names[k],
				      "id", (int)id, "interface", m->interface, "state", state,
				      "apn", m->apn, "ip-type", "ipv4v6");
			if (strcmp(state, "connected") == 0)
				json_object_set_new(j, "ipv4",
						    json_pack("{s:s}", "address", "192.0.2.2/30"));
			if (strcmp(state, "failed") == 0)
				json_object_set_new(j, "last-error", json_string("unknown APN"));
			json_array_append_new(muxes, j);
		}
		json_array_append_new(modems,
				      json_pack("{s:s, s:{s:s}, s:o}", "name", fake_names[k],
						"modem", "state", "ready", "muxes", muxes));
	}
	*ret = json_pack("{s:o}", "modems", modems);
	return 0;
}

static int fake_mux_list(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	json_t *muxes = json_array();
	int r = 0, only = fake_route(modem, false, &r, err, errlen);

	(void)userdata;
	if (only < -1)
		return r;
	for (int k = 0; k < (fake_two ? 2 : 1); k++)
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
			if ((only < 0 || k == only) && fake[k][id].present)
				json_array_append_new(
					muxes, json_pack("{s:s, s:i, s:s, s:s, s:s}", "modem",
							 fake_names[k], "id", (int)id, "interface",
							 fake[k][id].interface, "state",
							 fake_state(&fake[k][id]), "apn",
							 fake[k][id].apn));
	*ret = json_pack("{s:o}", "muxes", muxes);
	return 0;
}

static int fake_stats(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r = 0, only = fake_route(modem, false, &r, err, errlen);

	(void)userdata;
	if (only < -1)
		return r;
	*ret = json_pack("{s:[{s:s, s:{s:i}}]}", "modems", "name", "modem0", "device",
			 "rx-transfers", 1);
	return 0;
}

static int fake_mux_add(void *userdata, const char *modem, const struct config_mux *cfg,
			json_t **ret, char *err, size_t errlen)
{
	int r = 0, k = fake_route(modem, true, &r, err, errlen);
	struct fake_mux *m;

	(void)userdata;
	if (k < 0)
		return r;
	m = &fake[k][cfg->id];
	if (m->present) {
		snprintf(err, errlen, "mux %u exists", (unsigned)cfg->id);
		return -EEXIST;
	}
	*m = (struct fake_mux){ .present = true, .autoconnect = cfg->autoconnect };
	if (k == 1 && !cfg->interface_set)
		snprintf(m->interface, sizeof(m->interface), "b.%u", (unsigned)cfg->id);
	else
		snprintf(m->interface, sizeof(m->interface), "%s", cfg->interface);
	snprintf(m->apn, sizeof(m->apn), "%s", cfg->apn);
	*ret = json_pack("{s:s, s:i, s:s}", "modem", fake_names[k], "id", (int)cfg->id, "interface",
			 m->interface);
	return 0;
}

static int fake_mux_del(void *userdata, const char *modem, unsigned id, json_t **ret, char *err,
			size_t errlen)
{
	int r = 0, k = fake_route(modem, true, &r, err, errlen);

	(void)userdata;
	if (k < 0)
		return r;
	if (id > CONFIG_MUX_ID_MAX || !fake[k][id].present)
		return -ENOENT;
	fake[k][id].present = false;
	*ret = json_pack("{s:s, s:i}", "modem", fake_names[k], "id", (int)id);
	return 0;
}

static int fake_reload(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r = 0;

	(void)userdata;
	if (fake_route(modem, false, &r, err, errlen) < -1)
		return r;
	*ret = json_object();
	return 0;
}

static const struct control_ops fake_ops = {
	.status = fake_status,
	.mux_list = fake_mux_list,
	.stats = fake_stats,
	.mux_add = fake_mux_add,
	.mux_del = fake_mux_del,
	.reload = fake_reload,
};

static pid_t start_server(bool two)
{
	pid_t pid;

	fake_two = two;
	memset(fake, 0, sizeof(fake));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
		struct control *c = NULL;

		/* Quiet: the parent's output is what the test is about. */
		log_set_max_level(LOG_ERR);
		if (!loop || control_new(loop, &fake_ops, NULL, sock_path, "", &c) < 0)
			_exit(1);
		ev_run(loop, 0);
		_exit(0);
	}
	/* Ready once it answers. */
	for (int i = 0; i < 500; i++) {
		struct control_client *cl = NULL;

		if (control_client_new(sock_path, control_client_now() + 100000, &cl) == 0) {
			control_client_free(cl);
			return pid;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/*
 * One story per server: the muxes added early are listed, deleted and missed later, so the
 * steps stay one case.
 */
TEST(end_to_end)
{
	struct result r;
	pid_t server = start_server(false);
	uint64_t t0;
	json_t *j;

	if (server < 0) {
		fprintf(stderr, "%s:%d: the server did not start\n", __FILE__, __LINE__);
		test_failures++;
		return;
	}
#define CTL(...) RUN("-s", sock_path, __VA_ARGS__)
	EXPECT_RUN(RUN("-s", sock_path), 0,
		   "modem modem0\n  state:               ready\n\nno muxes\n", "");
	r = CTL("-j");
	EXPECT_EQ(r.status, 0);
	j = json_loads(r.out, 0, NULL);
	EXPECT_STR_EQ(json_string_value(json_object_get(
			      json_array_get(json_object_get(j, "modems"), 0), "name")),
		      "modem0");
	EXPECT_TRUE(strchr(r.out, '\n') != strrchr(r.out, '\n')); /* pretty, for people too */
	json_decref(j);
	result_free(&r);

	/* Waits through "connecting" and shows the connected mux. */
	EXPECT_RUN(CTL("mux", "add", "3", "apn=internet"), 0,
		   "mux 3 (qmap3)\n"
		   "  state:               connected\n"
		   "  apn:                 internet\n"
		   "  ip type:             ipv4v6\n"
		   "  ipv4:                192.0.2.2/30\n",
		   "");
	EXPECT_RUN(CTL("mux", "add", "3", "apn=internet"), 1, "", "qmapctl: mux 3 exists\n");
	r = CTL("-j", "mux", "add", "8", "interface=wwan8");
	EXPECT_EQ(r.status, 0);
	j = json_loads(r.out, 0, NULL);
	EXPECT_STR_EQ(json_string_value(json_object_get(j, "state")), "connected");
	EXPECT_STR_EQ(json_string_value(json_object_get(j, "interface")), "wwan8");
	json_decref(j);
	result_free(&r);

	EXPECT_RUN(CTL("mux", "add", "4", "apn=fail"), 1, "",
		   "qmapctl: mux 4 (qmap4) failed: unknown APN\n");

	t0 = control_client_now();
	EXPECT_RUN(CTL("-t", "0.3", "mux", "add", "5", "apn=slow"), 3, "",
		   "qmapctl: mux 5 (qmap5) is not connected after 0.3 s (state: connecting)\n");
	EXPECT_GE(control_client_now() - t0, 300000);
	EXPECT_LT(control_client_now() - t0, 3000000);

	/* A poll answered after the deadline still tells the state, not "waiting for qmapd". */
	t0 = control_client_now();
	EXPECT_RUN(CTL("-t", "0.3", "mux", "add", "10", "apn=late"), 3, "",
		   "qmapctl: mux 10 (qmap10) is not connected after 0.3 s (state: connecting)\n");
	EXPECT_GE(control_client_now() - t0, 300000);
	EXPECT_LT(control_client_now() - t0, 3000000);
	EXPECT_RUN(CTL("mux", "del", "10"), 0, "", "");

	EXPECT_RUN(CTL("mux", "add", "6", "apn=slow", "--no-wait"), 0,
		   "mux 6 (qmap6) added to modem0\n", "");
	EXPECT_RUN(CTL("mux", "add", "7", "autoconnect=no"), 0, "mux 7 (qmap7) added to modem0\n",
		   "");
	r = CTL("mux", "add", "9", "--no-wait", "-j");
	EXPECT_EQ(r.status, 0);
	EXPECT_STR_EQ(r.out,
		      "{\n  \"modem\": \"modem0\",\n  \"id\": 9,\n  \"interface\": \"qmap9\"\n}\n");
	result_free(&r);

	EXPECT_RUN(CTL("mux"), 0,
		   "MODEM   ID  INTERFACE  STATE       APN\n"
		   "modem0  3   qmap3      connected   internet\n"
		   "modem0  4   qmap4      failed      fail\n"
		   "modem0  5   qmap5      connecting  slow\n"
		   "modem0  6   qmap6      connecting  slow\n"
		   "modem0  7   qmap7      disabled    -\n"
		   "modem0  8   wwan8      connected   -\n"
		   "modem0  9   qmap9      connecting  -\n",
		   "");
	r = CTL("mux", "list", "--json");
	EXPECT_EQ(r.status, 0);
	j = json_loads(r.out, 0, NULL);
	EXPECT_EQ(json_array_size(json_object_get(j, "muxes")), 7);
	json_decref(j);
	result_free(&r);

	EXPECT_RUN(CTL("mux", "del", "3"), 0, "", "");
	EXPECT_RUN(CTL("mux", "del", "3"), 10, "", "qmapctl: no mux 3\n");
	EXPECT_RUN(CTL("-j", "mux", "del", "4"), 0, "{\n  \"modem\": \"modem0\",\n  \"id\": 4\n}\n",
		   "");
	/* One modem: -m may name it, and must name one that exists. */
	EXPECT_RUN(CTL("-m", "modem0", "mux", "del", "5"), 0, "", "");
	EXPECT_RUN(CTL("-m", "b", "mux", "del", "6"), 11, "", "qmapctl: no modem 'b'\n");
	EXPECT_RUN(CTL("-m", "b", "status"), 11, "", "qmapctl: no modem 'b'\n");
	EXPECT_RUN(CTL("reload"), 0, "", "");

	r = CTL("stats");
	EXPECT_EQ(r.status, 0);
	EXPECT_CONTAINS(r.out,
			"modem modem0\ndevice\n  rx-transfers: 1\n\ncontrol socket\n  clients:");
	result_free(&r);

	kill(server, SIGTERM);
	waitpid(server, NULL, 0);
	unlink(sock_path);

	/* Two modems: mux add and del need -m, listings cover both or the one named. */
	server = start_server(true);
	if (server < 0) {
		fprintf(stderr, "%s:%d: the server did not start\n", __FILE__, __LINE__);
		test_failures++;
		return;
	}
	EXPECT_RUN(CTL("mux", "add", "3", "apn=internet"), 2, "",
		   "qmapctl: 2 modems: name one with -m (qmapctl -m NAME ...)\n");
	EXPECT_RUN(CTL("mux", "del", "3"), 2, "",
		   "qmapctl: 2 modems: name one with -m (qmapctl -m NAME ...)\n");
	EXPECT_RUN(CTL("-m", "b", "mux", "add", "3", "apn=internet"), 0,
		   "mux 3 (b.3)\n"
		   "  state:               connected\n"
		   "  apn:                 internet\n"
		   "  ip type:             ipv4v6\n"
		   "  ipv4:                192.0.2.2/30\n",
		   "");
	EXPECT_RUN(CTL("-m", "modem0", "mux", "add", "3", "apn=ims", "--no-wait"), 0,
		   "mux 3 (qmap3) added to modem0\n", "");
	EXPECT_RUN(CTL("mux", "list"), 0,
		   "MODEM   ID  INTERFACE  STATE       APN\n"
		   "modem0  3   qmap3      connecting  ims\n"
		   "b       3   b.3        connected   internet\n",
		   "");
	EXPECT_RUN(CTL("--modem", "b", "mux"), 0,
		   "MODEM  ID  INTERFACE  STATE      APN\n"
		   "b      3   b.3        connected  internet\n",
		   "");
	r = CTL("-j", "status");
	EXPECT_EQ(r.status, 0);
	j = json_loads(r.out, 0, NULL);
	EXPECT_EQ(json_array_size(json_object_get(j, "modems")), 2);
	EXPECT_STR_EQ(
		json_string_value(json_object_get(
			json_array_get(
				json_object_get(json_array_get(json_object_get(j, "modems"), 1),
						"muxes"),
				0),
			"modem")),
		"b");
	json_decref(j);
	result_free(&r);
	r = CTL("-m", "b", "status");
	EXPECT_EQ(r.status, 0);
	EXPECT_TRUE(strncmp(r.out, "modem b\n", 8) == 0);
	EXPECT_TRUE(!strstr(r.out, "modem modem0"));
	result_free(&r);
	EXPECT_RUN(CTL("-m", "b", "mux", "del", "3"), 0, "", "");
	EXPECT_RUN(CTL("-m", "b", "mux", "del", "3"), 10, "", "qmapctl: no mux 3\n");
	EXPECT_RUN(CTL("-m", "B", "status"), 2, "",
		   "qmapctl: invalid modem name 'B': expected 1 to 11 of a-z, 0-9, '_' and '-'\n"
		   "Try 'qmapctl --help'.\n");
#undef CTL

	/* Someone who may not connect (root only: setuid). */
	if (geteuid() == 0) {
		pid_t pid;
		int status = -1;

		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
				_exit(3);
			test_failures = 0;
			r = RUN("-s", sock_path, "status");
			expect_run_at(__FILE__, __LINE__, r, 1, "", NULL);
			expect_contains_at(__FILE__, __LINE__, r.err, "Permission denied");
			_exit(test_failures ? 1 : 0);
		}
		waitpid(pid, &status, 0);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	kill(server, SIGTERM);
	waitpid(server, NULL, 0);
	unlink(sock_path);
}

/* A daemon that accepts and never answers: -t bounds the wait, exit 3. */
TEST(no_reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[sizeof(sa.sun_path)];
	uint64_t t0;
	int fd;

	snprintf(path, sizeof(path), "%s/mute", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, strerror(errno));
		test_failures++;
		return;
	}
	t0 = control_client_now();
	EXPECT_RUN(RUN("-s", path, "-t", "0.2", "status"), 3, "",
		   "qmapctl: timed out after 0.2 s waiting for qmapd\n");
	EXPECT_GE(control_client_now() - t0, 200000);
	close(fd);
	unlink(path);
}
