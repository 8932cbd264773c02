/* SPDX-License-Identifier: MIT */
/*
 * Discovery: the exclude matcher (pure), then discovery itself against usb-harness playing
 * seven devices on one umockdev testbed (docs/ARCHITECTURE.md "Tests"): two modems (one
 * found by the class rule, one by the table) arrive at start in port order; one unplugged
 * leaves alone and arrives again on replug; a modem declined is reported again on its next
 * arrival only; modems excluded by usb:, usb-path: and usb-serial: and a DIAG-only device are
 * never reported; an MBIM function is found (its communications interface named), and a device
 * with both QMI and MBIM is found as QMI, as the usb transport chooses; no device is claimed
 * or has its kernel driver detached.
 *
 * All of it twice: with libusb's hotplug callbacks, then re-scanning every second as where
 * libusb has none.
 *
 * The test re-runs itself under umockdev's preload once usb-harness has set up the testbed;
 * without usb-harness (libumockdev-dev missing at configure time) or umockdev-wrapper only
 * the pure part runs, and the test exits 77.
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "discovery-internal.h"
#include "discovery.h"
#include "config.h"
#include "log.h"
#include "test-case.h"
#include "usb-harness-client.h"

#define EVENTS_MAX 32
#define WAIT	   10.0 /* s for an expected event */
#define SETTLE	   0.5	/* s in which no unexpected event may come */
#define RESCAN	   0.1	/* s between re-scans without hotplug: 5 in every SETTLE */

TEST(exclude_specs)
{
	char err[128];

	EXPECT_EQ(config_usb_match_check("usb:2c7c:0125", err, sizeof(err)), 0);
	EXPECT_EQ(config_usb_match_check("usb:2c7c:0125:4", err, sizeof(err)), 0);
	EXPECT_EQ(config_usb_match_check("usb-path:1-1.4", err, sizeof(err)), 0);
	EXPECT_EQ(config_usb_match_check("usb-serial:ABC-1", err, sizeof(err)), 0);
	/* exclude = separates specs by blanks: a serial cannot hold one */
	EXPECT_EQ(config_usb_match_check("usb-serial:ABC 1", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_usb_match_check("usb-serial:", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_usb_match_check("sim:/run/sim", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_usb_match_check("usb:2c7c", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_usb_match_check("usb-path:0-1", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_usb_match_check("", err, sizeof(err)), -EINVAL);

	EXPECT_TRUE(config_spec_matches_usb("usb:2c7c:125", 0x2c7c, 0x0125, "1-1", "S"));
	EXPECT_TRUE(config_spec_matches_usb("usb:2C7C:0125:9", 0x2c7c, 0x0125, "1-1", NULL));
	EXPECT_TRUE(!config_spec_matches_usb("usb:2c7c:0125", 0x2c7c, 0x0126, "1-1", "S"));
	EXPECT_TRUE(!config_spec_matches_usb("usb:2c7c:0125", 0x1199, 0x0125, "1-1", "S"));
	EXPECT_TRUE(config_spec_matches_usb("usb-path:1-1.4", 1, 2, "1-1.4", "S"));
	EXPECT_TRUE(config_spec_matches_usb("usb-path:1-1.4:3", 1, 2, "1-1.4", NULL));
	EXPECT_TRUE(!config_spec_matches_usb("usb-path:1-1.4", 1, 2, "1-1.4.1", "S"));
	EXPECT_TRUE(!config_spec_matches_usb("usb-path:1-1", 1, 2, "1-1.4", "S"));
	EXPECT_TRUE(!config_spec_matches_usb("usb-path:2-1.4", 1, 2, "1-1.4", "S"));
	EXPECT_TRUE(config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-1", "ABC"));
	EXPECT_TRUE(!config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-1", "ABCD"));
	EXPECT_TRUE(!config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-1", "abc"));
	EXPECT_TRUE(!config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-1", NULL));
	EXPECT_TRUE(!config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-1", ""));
	EXPECT_TRUE(config_spec_needs_serial("usb-serial:X"));
	EXPECT_TRUE(!config_spec_needs_serial("usb:1:2"));
	EXPECT_TRUE(!config_spec_matches_usb("sim:/x", 1, 2, "1-1", "S"));

	/* An invalid exclude is refused before anything is set up. */
	static const struct discovery_callbacks cb = { 0 };
	const char *const bad[] = { "usb:2c7c:0125", "usb-serial:" };
	struct discovery *d = NULL;
	EXPECT_EQ(discovery_new(EV_DEFAULT, bad, 2, &cb, NULL, &d), -EINVAL);
	EXPECT_PTR_EQ(d, NULL);
}

/* ---- under umockdev (the re-run child) ---- */

struct events {
	char line[EVENTS_MAX][320];
	unsigned n;
	bool decline_next; /* on_arrive returns false once */
};

static struct events E;
static const char *tmp_dir;

static void event(const char *fmt, ...) _printf_(1, 2);
static void event(const char *fmt, ...)
{
	va_list ap;

	if (E.n == EVENTS_MAX) {
		fprintf(stderr, "more than %d events\n", EVENTS_MAX);
		test_failures++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(E.line[E.n++], sizeof(E.line[0]), fmt, ap);
	va_end(ap);
	printf("event: %s\n", E.line[E.n - 1]);
}

static bool on_arrive(void *userdata, const struct discovery_device *d)
{
	bool take = !E.decline_next;

	(void)userdata;
	E.decline_next = false;
	event("arrive %s %04x:%04x if%d%s serial=%s spec=%s how=%s%s", d->path, d->vid, d->pid,
	      d->iface, d->mbim ? " mbim" : "", d->serial, d->spec, d->how,
	      take ? "" : " (declined)");
	return take;
}

static void on_leave(void *userdata, const struct discovery_device *d)
{
	(void)userdata;
	event("leave %s serial=%s", d->path, d->serial);
}

static void on_wait_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ONE);
}

/* Run the loop until `want` events in all (or WAIT s), then SETTLE s for unexpected ones. */
static void wait_events(unsigned want)
{
	struct ev_loop *loop = EV_DEFAULT;
	ev_timer t;
	ev_tstamp end = ev_time() + WAIT;

	ev_timer_init(&t, on_wait_timer, 0.05, 0.05);
	ev_timer_start(loop, &t);
	while (E.n < want && ev_time() < end)
		ev_run(loop, EVRUN_ONCE);
	end = ev_time() + SETTLE;
	while (ev_time() < end)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &t);
	if (E.n != want) {
		fprintf(stderr, "expected %u events so far, got %u\n", want, E.n);
		test_failures++;
	}
}

static void harness(const char *cmd)
{
	usb_harness_send(tmp_dir, cmd);
}

/* The harness's counter `key` (e.g. "2.claimed"), or -1. */
static long long harness_stat(const char *key)
{
	char buf[64];

	return usb_harness_stat(tmp_dir, key, buf, sizeof(buf)) ? strtoll(buf, NULL, 10) : -1;
}

static bool harness_driver_is(unsigned k, const char *driver)
{
	char path[512], line[256], key[32];
	bool ok = false;
	FILE *f;

	harness_stat("modems"); /* fresh counters */
	snprintf(path, sizeof(path), "%s/usb.stats", tmp_dir);
	snprintf(key, sizeof(key), "%u.driver=", k);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			line[strcspn(line, "\n")] = '\0';
			ok = !strcmp(line + strlen(key), driver);
			if (!ok)
				fprintf(stderr, "modem %u: driver %s, expected %s\n", k,
					line + strlen(key), driver);
		}
	if (f)
		fclose(f);
	return ok;
}

#define CLASS "vendor class ff/ff/ff with 3 endpoints"

static int child(bool hotplug)
{
	static const struct discovery_callbacks cb = { .on_arrive = on_arrive,
						       .on_leave = on_leave };
	const char *const excludes[] = { "usb:2c7c:0296", "usb-path:1-4", "usb-serial:EXCLUDEME" };
	struct ev_loop *loop = EV_DEFAULT;
	struct discovery *d;
	char key[32];

	EXPECT_EQ(discovery_new(loop, excludes, 3, &cb, NULL, &d), 0);
	if (test_failures)
		return 1;
	if (!hotplug)
		discovery_disable_hotplug(d, RESCAN);
	EXPECT_EQ(discovery_start(d), 0);
	/* At start: the two modems, in port order; the excluded ones and the DIAG device not. */
	wait_events(2);
	EXPECT_STR_EQ(E.line[0], "arrive 1-1 2c7c:0125 if4 serial=qmapdsim0001 "
				 "spec=usb-path:1-1:4 how=" CLASS);
	EXPECT_STR_EQ(E.line[1], "arrive 1-2 1199:9071 if8 serial=qmapdsim0002 "
				 "spec=usb-path:1-2:8 how=Sierra Wireless MC7430/MC7455");

	/* Unplug one: it leaves, alone; replug: it arrives again. */
	harness("@0 unplug");
	wait_events(3);
	EXPECT_STR_EQ(E.line[2], "leave 1-1 serial=qmapdsim0001");
	harness("@0 plug");
	wait_events(4);
	EXPECT_STR_EQ(E.line[3], "arrive 1-1 2c7c:0125 if4 serial=qmapdsim0001 "
				 "spec=usb-path:1-1:4 how=" CLASS);

	/* A modem plugged in later, declined: not reported again while it stays, even when other
	 * devices come and go; no leave for it; reported again when it next arrives. */
	E.decline_next = true;
	harness("@6 plug");
	wait_events(5);
	EXPECT_STR_EQ(E.line[4], "arrive 1-7 2c7c:0125 if4 serial=qmapdsim0007 "
				 "spec=usb-path:1-7:4 how=" CLASS " (declined)");
	harness("@5 unplug");
	harness("@5 plug");
	harness("@2 unplug");
	harness("@2 plug");
	harness("@4 unplug");
	harness("@4 plug");
	wait_events(5);
	harness("@6 unplug");
	wait_events(5);
	harness("@6 plug");
	wait_events(6);
	EXPECT_STR_EQ(E.line[5], "arrive 1-7 2c7c:0125 if4 serial=qmapdsim0007 "
				 "spec=usb-path:1-7:4 how=" CLASS);
	harness("@6 unplug");
	wait_events(7);
	EXPECT_STR_EQ(E.line[6], "leave 1-7 serial=qmapdsim0007");

	/* An MBIM function: found by class, named by its communications interface. A device with
	 * both: QMI (here by the table), what the usb transport would claim. */
	harness("@7 plug");
	wait_events(8);
	EXPECT_STR_EQ(E.line[7], "arrive 1-8 1199:9079 if12 mbim serial=qmapdsim0008 "
				 "spec=usb-path:1-8:12 how=MBIM class 02/0e with data interface "
				 "0a/00/02");
	harness("@8 plug");
	wait_events(9);
	EXPECT_STR_EQ(E.line[8], "arrive 1-9 1199:9079 if8 serial=qmapdsim0009 "
				 "spec=usb-path:1-9:8 how=Sierra Wireless EM7455");
	harness("@7 unplug");
	wait_events(10);
	EXPECT_STR_EQ(E.line[9], "leave 1-8 serial=qmapdsim0008");
	harness("@8 unplug");
	wait_events(11);
	EXPECT_STR_EQ(E.line[10], "leave 1-9 serial=qmapdsim0009");

	/* Nothing was claimed or detached; excluded by id or port: not even opened. */
	for (unsigned k = 0; k <= 8; k++) {
		snprintf(key, sizeof(key), "%u.claimed", k);
		EXPECT_EQ(harness_stat(key), 0);
		snprintf(key, sizeof(key), "%u.driver_detached", k);
		EXPECT_EQ(harness_stat(key), 0);
	}
	EXPECT_EQ(harness_stat("2.ioctls"), 0);
	EXPECT_EQ(harness_stat("3.ioctls"), 0);
	EXPECT_EQ(harness_stat("5.ioctls"), 0);
	EXPECT_GE(harness_stat("4.ioctls"), 1); /* opened for its serial, nothing more */
	for (unsigned k = 0; k <= 4; k++)
		EXPECT_TRUE(harness_driver_is(k, "qmi_wwan"));
	EXPECT_TRUE(harness_driver_is(5, "option"));
	EXPECT_TRUE(harness_driver_is(7, "cdc_mbim"));
	EXPECT_TRUE(harness_driver_is(8, "cdc_mbim"));

	discovery_free(d);
	return test_result(hotplug ? "test-discovery (umockdev, hotplug)"
				   : "test-discovery (umockdev, re-scan)");
}

/* ---- the parent: the harness, then this program again under the preload ---- */

static pid_t harness_pid = -1;
static char dir[] = "/tmp/qmapd-test-discovery.XXXXXX";

static void cleanup(void)
{
	char cmd[256];

	if (harness_pid > 0) {
		kill(harness_pid, SIGTERM);
		waitpid(harness_pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

/* The testbed, started by the first case that needs it and shared by the next: each run
 * leaves the devices as it found them. */
static int harness_start(void)
{
	const char *harness_bin = QMAPD_BUILD_DIR "/usb-harness";
	char ctl[256], dirfile[256], stats[256], log[256], root[512] = "";
	int status;

	if (harness_pid > 0)
		return 0;
	if (access(harness_bin, X_OK) < 0)
		TEST_SKIP("%s not built: libumockdev-dev was missing at configure time "
			  "(scripts/deps.sh installs it)",
			  harness_bin);
	if (system("command -v umockdev-wrapper >/dev/null") != 0)
		TEST_SKIP("umockdev-wrapper not installed (apt-get install umockdev)");
	if (access("/dev/ptmx", R_OK | W_OK) < 0)
		TEST_SKIP("no /dev/ptmx: the fake usbfs nodes are ptys");
	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	atexit(cleanup);
	snprintf(ctl, sizeof(ctl), "%s/usb.ctl", dir);
	snprintf(dirfile, sizeof(dirfile), "%s/umockdev.dir", dir);
	snprintf(stats, sizeof(stats), "%s/usb.stats", dir);
	snprintf(log, sizeof(log), "%s/usb-harness.log", dir);
	if (mkfifo(ctl, 0600) < 0)
		return perror("mkfifo"), 1;

	harness_pid = fork();
	if (harness_pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execlp("umockdev-wrapper", "umockdev-wrapper", harness_bin, "--modem",
		       "serial=qmapdsim0001", "--modem", "id=1199:9071,iface=8", "--modem",
		       "id=2c7c:0296", "--modem", "port=4", "--modem", "serial=EXCLUDEME",
		       "--modem", "kind=diag", "--modem", "plugged=0", "--modem",
		       "kind=mbim,plugged=0", "--modem", "kind=mbim,qmi=8,plugged=0", "--dir-file",
		       dirfile, "--control", ctl, "--stats", stats, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(dirfile, "re");
		if (f) {
			if (!fgets(root, sizeof(root), f))
				root[0] = '\0';
			fclose(f);
			break;
		}
		if (waitpid(harness_pid, &status, WNOHANG) == harness_pid) {
			harness_pid = -1;
			break;
		}
		usleep(50000);
	}
	if (!root[0]) {
		char cmd[300];
		fprintf(stderr, "usb-harness did not set up the testbed:\n");
		snprintf(cmd, sizeof(cmd), "cat '%s' >&2", log);
		if (system(cmd) != 0)
			fprintf(stderr, "(no log)\n");
		return 1;
	}
	setenv("UMOCKDEV_DIR", root, 1);
	setenv("LD_PRELOAD", "libumockdev-preload.so.0", 1);
	setenv("QMAPD_TEST_DISCOVERY_TMP", dir, 1);
	/* Sanitizer builds: the preload comes first in the link order, which ASan must accept. */
	setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
	return 0;
}

/* Runs this program again under the testbed, as the case of that name (which then calls
 * child()); returns its exit status. */
static int run_child(const char *name)
{
	char self[512], log[256];
	int status;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return perror("readlink /proc/self/exe"), 1;
	self[n] = '\0';
	snprintf(log, sizeof(log), "%s/usb-harness.log", dir);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, name, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return perror("fork"), 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char cmd[300];
		fprintf(stderr, "---- usb-harness log\n");
		snprintf(cmd, sizeof(cmd), "tail -n 40 '%s' >&2", log);
		if (system(cmd) != 0)
			fprintf(stderr, "(no log)\n");
		return 1;
	}
	return 0;
}

/* In the program run again under the testbed, tmp_dir is set and the case runs child().
 * Read before the first case: harness_start() sets it in this process's environment too. */
TEST_SETUP()
{
	static bool read;

	if (!read)
		tmp_dir = getenv("QMAPD_TEST_DISCOVERY_TMP");
	read = true;
}

/* The same scenario with hotplug and with the re-scan timer. */
TEST(hotplug)
{
	if (tmp_dir) {
		EXPECT_EQ(child(true), 0);
		return;
	}
	EXPECT_EQ(harness_start(), 0);
	if (harness_pid > 0)
		EXPECT_EQ(run_child("hotplug"), 0);
}

TEST(rescan)
{
	if (tmp_dir) {
		EXPECT_EQ(child(false), 0);
		return;
	}
	EXPECT_EQ(harness_start(), 0);
	if (harness_pid > 0)
		EXPECT_EQ(run_child("rescan"), 0);
}
