/* SPDX-License-Identifier: MIT */
/*
 * log: the "<N>" priority prefix only when stderr is the journal, that is when
 * JOURNAL_STREAM is "DEV:INO" of the file stderr is (systemd.exec(5)); otherwise the time,
 * RFC 3339 UTC with milliseconds, unless QMAPD_LOG_TIME=0 or log_set_time(false). stderr
 * goes to a temporary file whose device and inode play the journal's. TZ is a zone half an
 * hour off UTC here, so a local time would show. GLib's messages come the same way through
 * log-glib.c's writer.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log-modem.h"
#include "log-mux.h"
#include "log.h"
#include "test-case.h"

/* Every line logged here is far shorter. */
#define OUT_MAX 1024

static char tmp_dir[] = "/tmp/qmapd-test-log.XXXXXX";
static unsigned n_files;
static int saved_stderr = -1;
static char out_path[64];

/* stderr to a new file; its "DEV:INO" in ret_stream. */
static void redirect_stderr(char ret_stream[static 64])
{
	struct stat st;
	int fd;

	/* The pid too: a forked case's child counts on in its own copy of n_files. */
	snprintf(out_path, sizeof(out_path), "%s/%d-%u", tmp_dir, (int)getpid(), n_files++);
	fflush(stderr);
	fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || fstat(fd, &st) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		fprintf(stderr, "%s:%d: cannot redirect stderr to %s: %s\n", __FILE__, __LINE__,
			out_path, strerror(errno));
		exit(1);
	}
	close(fd);
	snprintf(ret_stream, 64, "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
}

/* stderr back to the terminal (checks print there); what was logged in buf. */
static const char *restore_stderr(char buf[static OUT_MAX])
{
	FILE *f;
	size_t n = 0;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	f = fopen(out_path, "re");
	if (f) {
		n = fread(buf, 1, OUT_MAX - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	unlink(out_path);
	return buf;
}

static long long realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The rest of line after "YYYY-MM-DDTHH:MM:SS.mmmZ ", a UTC time from lo_ms to hi_ms (both
 * realtime_ms()); NULL if line does not start so.
 */
static const char *after_time(const char *line, long long lo_ms, long long hi_ms)
{
	static const char form[] = "dddd-dd-ddTdd:dd:dd.dddZ ";
	struct tm tm = { 0 };
	int ms;

	for (size_t i = 0; i < sizeof(form) - 1; i++)
		if (form[i] == 'd' ? !isdigit((unsigned char)line[i]) : line[i] != form[i])
			return NULL;
	if (sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
		return NULL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	long long t = (long long)timegm(&tm) * 1000 + ms;
	if (t < lo_ms || t > hi_ms) {
		fprintf(stderr, "%s:%d: time %.24s is %lld ms, not in %lld..%lld\n", __FILE__,
			__LINE__, line, t, lo_ms, hi_ms);
		return NULL;
	}
	return line + sizeof(form) - 1;
}

/* buf's lines without their times into out; false if a line has none (or a wrong one). */
static bool strip_times(const char *buf, long long lo_ms, long long hi_ms, char out[static OUT_MAX])
{
	size_t n = 0;

	out[0] = '\0';
	while (*buf) {
		const char *rest = after_time(buf, lo_ms, hi_ms), *nl;

		if (!rest) {
			fprintf(stderr, "%s:%d: no time in front of \"%s\"\n", __FILE__, __LINE__,
				buf);
			return false;
		}
		nl = strchrnul(rest, '\n');
		n += (size_t)snprintf(out + n, OUT_MAX - n, "%.*s%s", (int)(nl - rest), rest,
				      *nl ? "\n" : "");
		buf = *nl ? nl + 1 : nl;
	}
	return true;
}

/* One line at each of three levels and an error, logged with JOURNAL_STREAM as given. */
static const char *log_lines(const char *journal_stream, bool matching, char buf[static OUT_MAX])
{
	char stream[64];

	redirect_stderr(stream);
	if (matching)
		journal_stream = stream;
	if (journal_stream)
		setenv("JOURNAL_STREAM", journal_stream, 1);
	else
		unsetenv("JOURNAL_STREAM");
	log_init();
	log_info("mux %u (qmap%u): connected", 1u, 1u);
	log_warning("slow");
	EXPECT_EQ(log_error_errno(ENOENT, "no %s", "modem"), -ENOENT);
	return restore_stderr(buf);
}

/* Not the journal: each line is the time, a space and the message. */
static void expect_plain(const char *journal_stream, int line)
{
	char buf[OUT_MAX], plain[OUT_MAX], prefix[LOG_LINE_PREFIX_MAX];
	long long lo = realtime_ms();

	log_lines(journal_stream, false, buf);
	if (!strip_times(buf, lo, realtime_ms(), plain) ||
	    strcmp(plain,
		   "mux 1 (qmap1): connected\nslow\nno modem: No such file or directory\n")) {
		fprintf(stderr,
			"%s:%d: JOURNAL_STREAM='%s': expected timed plain lines, got \"%s\"\n",
			__FILE__, line, journal_stream ?: "(unset)", buf);
		test_failures++;
	}
	EXPECT_TRUE(!log_to_journal());
	const char *p = log_line_prefix(LOG_INFO, prefix);
	p = after_time(p, lo, realtime_ms());
	EXPECT_TRUE(p && *p == '\0');
}

/*
 * A child for a case whose state must not reach the others (log.c decides once per process).
 * Both streams flushed first, or the child writes the parent's buffered lines again; -1,
 * said as a skip, when fork() fails.
 */
static pid_t fork_case(const char *name)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		fprintf(stderr, "test_%s: SKIP, fork: %s\n", name, strerror(errno));
	return pid;
}

/*
 * Without log_init() the first line decides, and then it stays decided. The child must
 * inherit a log.c that has not decided yet: this case comes first in the file (cases run
 * in file order) and no setup logs.
 */
TEST(first_use)
{
	char buf[OUT_MAX], stream[64];
	pid_t pid;
	int status;

	pid = fork_case("first_use");
	if (pid < 0)
		return;
	if (pid == 0) {
		/* A fresh process: log.c has not decided yet. */
		redirect_stderr(stream);
		setenv("JOURNAL_STREAM", stream, 1);
		log_info("first");
		unsetenv("JOURNAL_STREAM");
		log_info("second");
		restore_stderr(buf);
		_exit(strcmp(buf, "<6>first\n<6>second\n") == 0 ? 0 : (fputs(buf, stderr), 1));
	}
	EXPECT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(journal)
{
	char buf[OUT_MAX];

	EXPECT_STR_EQ(
		log_lines(NULL, true, buf),
		"<6>mux 1 (qmap1): connected\n<4>slow\n<3>no modem: No such file or directory\n");
	EXPECT_TRUE(log_to_journal());
	/* The journal's time only: it stamps every line itself. */
	char p[LOG_LINE_PREFIX_MAX];
	EXPECT_STR_EQ(log_line_prefix(LOG_INFO, p), "<6>");
	EXPECT_STR_EQ(log_line_prefix(LOG_EMERG, p), "<0>");
	EXPECT_STR_EQ(log_line_prefix(LOG_DEBUG, p), "<7>");
	EXPECT_STR_EQ(log_line_prefix(-1, p), "");
	EXPECT_STR_EQ(log_line_prefix(8, p), "");

	/* Debug lines too, once asked for. */
	char stream[64];
	redirect_stderr(stream);
	setenv("JOURNAL_STREAM", stream, 1);
	log_init();
	log_set_max_level(LOG_DEBUG);
	log_debug("x=%d", 1);
	log_set_max_level(LOG_INFO);
	log_debug("not shown");
	EXPECT_STR_EQ(restore_stderr(buf), "<7>x=1\n");
}

/* Logs what fn logs with JOURNAL_STREAM matching (so with "<N>" prefixes) into buf. */
static const char *capture_journal(void (*fn)(void), char buf[static OUT_MAX])
{
	char stream[64];

	redirect_stderr(stream);
	setenv("JOURNAL_STREAM", stream, 1);
	log_init();
	fn();
	return restore_stderr(buf);
}

static int evaluated;

static int count_evaluation(void)
{
	return ++evaluated;
}

static void log_errno_lines(void)
{
	/* Either sign in, -errno out, ": strerror" appended. */
	EXPECT_EQ(log_error_errno(ENOENT, "open %s", "a"), -ENOENT);
	EXPECT_EQ(log_error_errno(-ENOENT, "open %s", "b"), -ENOENT);
	EXPECT_EQ(log_warning_errno(-EAGAIN, "busy"), -EAGAIN);
	/* Not logged at the default level, but the value is still returned... */
	EXPECT_EQ(log_debug_errno(-EPROTO, "quiet %d", count_evaluation()), -EPROTO);
	/* ... and zero-ok: 0 in, 0 out, no suffix. */
	EXPECT_EQ(log_full_errno_zerook(LOG_WARNING, 0, "no error"), 0);
	EXPECT_EQ(log_full_errno_zerook(LOG_WARNING, EPIPE, "pipe"), -EPIPE);
	log_error("plain %s", "error");
	log_info("info");
	log_debug("quiet %d", count_evaluation());
}

TEST(errno)
{
	char buf[OUT_MAX];

	evaluated = 0;
	EXPECT_STR_EQ(capture_journal(log_errno_lines, buf),
		      "<3>open a: No such file or directory\n"
		      "<3>open b: No such file or directory\n"
		      "<4>busy: Resource temporarily unavailable\n"
		      "<4>no error\n"
		      "<4>pipe: Broken pipe\n"
		      "<3>plain error\n"
		      "<6>info\n");
	/* A level that is not logged does not format, so its arguments are not evaluated. */
	EXPECT_EQ(evaluated, 0);

	log_set_max_level(LOG_DEBUG);
	EXPECT_STR_EQ(capture_journal(log_errno_lines, buf),
		      "<3>open a: No such file or directory\n"
		      "<3>open b: No such file or directory\n"
		      "<4>busy: Resource temporarily unavailable\n"
		      "<7>quiet 1: Protocol error\n"
		      "<4>no error\n"
		      "<4>pipe: Broken pipe\n"
		      "<3>plain error\n"
		      "<6>info\n"
		      "<7>quiet 2\n");
	log_set_max_level(LOG_INFO);
	EXPECT_EQ(evaluated, 2);
}

static void log_object_lines(void)
{
	log_modem_info("lte", "present");
	log_modem_warning("lte", "gone");
	EXPECT_EQ(log_modem_error_errno("lte", -ENODEV, "cannot open %s", "/dev/cdc-wdm0"),
		  -ENODEV);
	EXPECT_EQ(log_modem_warning_errno("lte", EIO, "reset"), -EIO);
	log_modem_error("lte", "failed");
	log_modem_debug("lte", "not shown");

	log_mux_info(NULL, 3, "qmap3", "connected, IP type %s", "ipv4");
	log_mux_debug(NULL, 3, "qmap3", "not shown");
	log_mux_warning(NULL, 3, NULL, "deactivate: %s", "timeout");
	log_mux_error("lte", 3, NULL, "cannot restore it");
	EXPECT_EQ(log_mux_error_errno("lte", 3, "lte.3", EEXIST, "cannot create network device"),
		  -EEXIST);
	EXPECT_EQ(log_mux_warning_errno(NULL, 254, "qmap254", -EINVAL, "cannot set MTU %u", 9000u),
		  -EINVAL);
	log_mux_error(NULL, 1, "qmap1", "session failed");
}

TEST(object)
{
	char buf[OUT_MAX];

	/* The prefixes are the ones qmapd has always written: scripts and tests grep them. */
	EXPECT_STR_EQ(capture_journal(log_object_lines, buf),
		      "<6>modem lte: present\n"
		      "<4>modem lte: gone\n"
		      "<3>modem lte: cannot open /dev/cdc-wdm0: No such device\n"
		      "<4>modem lte: reset: Input/output error\n"
		      "<3>modem lte: failed\n"
		      "<6>mux 3 (qmap3): connected, IP type ipv4\n"
		      "<4>mux 3: deactivate: timeout\n"
		      "<3>lte: mux 3: cannot restore it\n"
		      "<3>lte: mux 3 (lte.3): cannot create network device: File exists\n"
		      "<4>mux 254 (qmap254): cannot set MTU 9000: Invalid argument\n"
		      "<3>mux 1 (qmap1): session failed\n");

	log_set_max_level(LOG_DEBUG);
	EXPECT_STR_EQ(capture_journal(log_object_lines, buf),
		      "<6>modem lte: present\n"
		      "<4>modem lte: gone\n"
		      "<3>modem lte: cannot open /dev/cdc-wdm0: No such device\n"
		      "<4>modem lte: reset: Input/output error\n"
		      "<3>modem lte: failed\n"
		      "<7>modem lte: not shown\n"
		      "<6>mux 3 (qmap3): connected, IP type ipv4\n"
		      "<7>mux 3 (qmap3): not shown\n"
		      "<4>mux 3: deactivate: timeout\n"
		      "<3>lte: mux 3: cannot restore it\n"
		      "<3>lte: mux 3 (lte.3): cannot create network device: File exists\n"
		      "<4>mux 254 (qmap254): cannot set MTU 9000: Invalid argument\n"
		      "<3>mux 1 (qmap1): session failed\n");
	log_set_max_level(LOG_INFO);
}

/* log_warning() without an errno: the line alone, at warning level. */
static void log_warning_lines(void)
{
	log_warning("plain warning %d", 3);
}

TEST(warning)
{
	char buf[OUT_MAX];

	EXPECT_STR_EQ(capture_journal(log_warning_lines, buf), "<4>plain warning 3\n");
}

/*
 * log_*_errno(0, ...) is a bug: a debug build stops at the assert(), a release build
 * (NDEBUG) still returns a failure rather than 0.
 */
TEST(errno_zero)
{
	char buf[OUT_MAX], stream[64];
	volatile int zero = 0; /* not a constant the compiler could see through */
	pid_t pid;
	int status;

	pid = fork_case("errno_zero");
	if (pid < 0)
		return;
	if (pid == 0) {
		char plain[OUT_MAX];
		long long lo = realtime_ms();

		redirect_stderr(stream);
		unsetenv("JOURNAL_STREAM");
		log_init();
		int r = log_error_errno(zero, "no errno");
		restore_stderr(buf);
		_exit(r == -EIO && strip_times(buf, lo, realtime_ms(), plain) &&
				      strcmp(plain, "no errno\n") == 0
			      ? 0
			      : 1);
	}
	EXPECT_EQ(waitpid(pid, &status, 0), pid);
#ifdef NDEBUG
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#else
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
#endif
}

TEST(not_journal)
{
	char stream[64], other[96];
	unsigned long long dev, ino;

	expect_plain(NULL, __LINE__);
	expect_plain("", __LINE__);

	/* stderr is another file than the journal's: a child, or stderr redirected. */
	redirect_stderr(stream);
	restore_stderr((char[OUT_MAX]){ 0 });
	EXPECT_EQ(sscanf(stream, "%llu:%llu", &dev, &ino), 2);
	snprintf(other, sizeof(other), "%llu:%llu", dev, ino + 1000000);
	expect_plain(other, __LINE__);
	snprintf(other, sizeof(other), "%llu:%llu", dev + 1, ino);
	expect_plain(other, __LINE__);

	expect_plain("1:2:3", __LINE__);
	expect_plain("abc", __LINE__);
	expect_plain(":", __LINE__);
	expect_plain("12", __LINE__);
	expect_plain("12:", __LINE__);
	expect_plain(":12", __LINE__);
	expect_plain("-1:-1", __LINE__);
	expect_plain("99999999999999999999:1", __LINE__);
}

/* RFC 3339, UTC, milliseconds cut (not rounded), whatever TZ says. */
TEST(time_format)
{
	static const struct {
		struct timespec ts;
		const char *want;
	} cases[] = {
		{ { 0, 0 }, "1970-01-01T00:00:00.000Z" },
		{ { 1796294412, 345999999 }, "2026-12-03T10:40:12.345Z" },
		{ { 1796294412, 5000000 }, "2026-12-03T10:40:12.005Z" },
		{ { 1796294412, 40000000 }, "2026-12-03T10:40:12.040Z" },
		{ { 1709251199, 999999999 }, "2024-02-29T23:59:59.999Z" },
	};
	char buf[LOG_TIME_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_EQ(log_format_time(&cases[i].ts, buf), strlen(cases[i].want));
		EXPECT_STR_EQ(buf, cases[i].want);
	}
	/* Past 2038 where time_t can say it (not on 32-bit targets of Debian 12). */
	if (sizeof(time_t) > 4) {
		struct timespec ts = { (time_t)2147483648LL, 1000000 };
		EXPECT_EQ(log_format_time(&ts, buf), 24);
		EXPECT_STR_EQ(buf, "2038-01-19T03:14:08.001Z");
	}
}

/* Not the journal: every line written has the time, a line filtered out writes nothing. */
TEST(time_prefix)
{
	char buf[OUT_MAX], plain[OUT_MAX], stream[64];
	long long lo = realtime_ms();

	redirect_stderr(stream);
	unsetenv("JOURNAL_STREAM");
	log_init();
	log_modem_info("lte", "present");
	log_mux_warning(NULL, 1, "qmap1", "slow");
	log_debug("not shown");
	EXPECT_EQ(log_error_errno(-ENOENT, "open %s", "a"), -ENOENT);
	restore_stderr(buf);
	EXPECT_TRUE(strip_times(buf, lo, realtime_ms(), plain));
	EXPECT_STR_EQ(plain, "modem lte: present\n"
			     "mux 1 (qmap1): slow\n"
			     "open a: No such file or directory\n");
}

/* Logs "x" with QMAPD_LOG_TIME as given (NULL: unset) into buf, after log_init(). */
static const char *log_x(const char *journal_stream, const char *log_time, char buf[static OUT_MAX])
{
	char stream[64];

	redirect_stderr(stream);
	if (log_time)
		setenv("QMAPD_LOG_TIME", log_time, 1);
	else
		unsetenv("QMAPD_LOG_TIME");
	if (journal_stream)
		setenv("JOURNAL_STREAM", journal_stream[0] ? journal_stream : stream, 1);
	else
		unsetenv("JOURNAL_STREAM");
	log_init();
	log_info("x");
	unsetenv("QMAPD_LOG_TIME");
	return restore_stderr(buf);
}

static bool timed_x(const char *journal_stream, const char *log_time)
{
	char buf[OUT_MAX], plain[OUT_MAX];
	long long lo = realtime_ms();

	log_x(journal_stream, log_time, buf);
	return strip_times(buf, lo, realtime_ms(), plain) && strcmp(plain, "x\n") == 0;
}

/* QMAPD_LOG_TIME=0 (no, false, off) turns the time off; the journal never has it. */
TEST(time_switch)
{
	static const char *const off[] = { "0", "no", "false", "off" };
	static const char *const on[] = { "1", "yes", "" };
	char buf[OUT_MAX];

	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		EXPECT_STR_EQ(log_x(NULL, off[i], buf), "x\n");
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		EXPECT_TRUE(timed_x(NULL, on[i]));
	EXPECT_TRUE(timed_x(NULL, NULL));
	EXPECT_STR_EQ(log_x("", "1", buf), "<6>x\n");

	/* log_set_time() wins over QMAPD_LOG_TIME, not over the journal; in a child, as it
	 * cannot be undone. */
	pid_t pid;
	int status;

	pid = fork_case("time_switch");
	if (pid < 0)
		return;
	if (pid == 0) {
		log_set_time(false);
		bool ok = strcmp(log_x(NULL, NULL, buf), "x\n") == 0;
		log_set_time(true);
		ok = ok && timed_x(NULL, "0");
		ok = ok && strcmp(log_x("", NULL, buf), "<6>x\n") == 0;
		_exit(ok ? 0 : 1);
	}
	EXPECT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * GLib's messages through log.c (log-glib.c), where the build has GLib: the big-endian cross
 * build of tests/big-endian/ compiles this file without it.
 */
#ifdef QMAPD_TEST_GLIB
#include <glib.h>

#include "log-glib.h"

/* GLib's levels, two domains as libqmi and libmbim name theirs, and none. */
static void glib_lines(void)
{
	log_glib_init();
	g_log("Qmi", G_LOG_LEVEL_WARNING, "slow %d", 1);
	g_log("Qmi", G_LOG_LEVEL_CRITICAL, "assertion '%s' failed", "self != NULL");
	g_log("Mbim", G_LOG_LEVEL_MESSAGE, "message");
	g_log_structured("Mbim", G_LOG_LEVEL_INFO, "MESSAGE", "info %s", "structured");
	g_log("Qmi", G_LOG_LEVEL_DEBUG, "debug");
	g_log(NULL, G_LOG_LEVEL_WARNING, "no domain");
	g_log("Qmi", G_LOG_LEVEL_WARNING, "two\nlines\n");
}

TEST(glib_journal)
{
	char buf[OUT_MAX];

	EXPECT_EQ(log_glib_priority(G_LOG_LEVEL_ERROR | G_LOG_FLAG_FATAL), LOG_ERR);
	EXPECT_EQ(log_glib_priority(1 << G_LOG_LEVEL_USER_SHIFT), LOG_NOTICE);
	unsetenv("G_MESSAGES_DEBUG");
	EXPECT_STR_EQ(capture_journal(glib_lines, buf), "<4>Qmi: slow 1\n"
							"<3>Qmi: assertion 'self != NULL' failed\n"
							"<5>Mbim: message\n"
							"<4>no domain\n"
							"<4>Qmi: two\n"
							"<4>Qmi: lines\n");
	log_set_max_level(LOG_DEBUG); /* -v: GLib's info and debug lines too */
	EXPECT_STR_EQ(capture_journal(glib_lines, buf), "<4>Qmi: slow 1\n"
							"<3>Qmi: assertion 'self != NULL' failed\n"
							"<5>Mbim: message\n"
							"<6>Mbim: info structured\n"
							"<7>Qmi: debug\n"
							"<4>no domain\n"
							"<4>Qmi: two\n"
							"<4>Qmi: lines\n");
	log_set_max_level(LOG_WARNING);
	EXPECT_STR_EQ(capture_journal(glib_lines, buf),
		      "<4>Qmi: slow 1\n<3>Qmi: assertion 'self != NULL' failed\n<4>no domain\n"
		      "<4>Qmi: two\n<4>Qmi: lines\n");
	log_set_max_level(LOG_INFO);
}

/* Not the journal: log.c's time in front, as on every other line. */
TEST(glib_time)
{
	char buf[OUT_MAX], plain[OUT_MAX], stream[64];
	long long lo = realtime_ms();

	log_glib_init();
	redirect_stderr(stream);
	unsetenv("JOURNAL_STREAM");
	log_init();
	g_warning("from %s", "qmapd");
	g_log("Qmi", G_LOG_LEVEL_DEBUG, "not shown");
	g_log("GLib-GIO", G_LOG_LEVEL_MESSAGE, "gio");
	restore_stderr(buf);
	EXPECT_TRUE(strip_times(buf, lo, realtime_ms(), plain));
	EXPECT_STR_EQ(plain, "from qmapd\nGLib-GIO: gio\n");
}

static void glib_debug_lines(void)
{
	log_glib_init();
	g_log("Qmi", G_LOG_LEVEL_DEBUG, "qmi");
	g_log("Mbim", G_LOG_LEVEL_DEBUG, "mbim");
	g_log("Mbim", G_LOG_LEVEL_INFO, "info");
}

/* -v shows GLib's info and debug lines; G_MESSAGES_DEBUG narrows them to its domains, never
 * adds. */
TEST(glib_debug)
{
	char buf[OUT_MAX];

	unsetenv("G_MESSAGES_DEBUG");
	EXPECT_STR_EQ(capture_journal(glib_debug_lines, buf), "");
	setenv("G_MESSAGES_DEBUG", "all", 1);
	EXPECT_STR_EQ(capture_journal(glib_debug_lines, buf), "");

	log_set_max_level(LOG_DEBUG);
	unsetenv("G_MESSAGES_DEBUG");
	EXPECT_STR_EQ(capture_journal(glib_debug_lines, buf),
		      "<7>Qmi: qmi\n<7>Mbim: mbim\n<6>Mbim: info\n");
	setenv("G_MESSAGES_DEBUG", "all", 1);
	EXPECT_STR_EQ(capture_journal(glib_debug_lines, buf),
		      "<7>Qmi: qmi\n<7>Mbim: mbim\n<6>Mbim: info\n");
	setenv("G_MESSAGES_DEBUG", "Qmi", 1);
	EXPECT_STR_EQ(capture_journal(glib_debug_lines, buf), "<7>Qmi: qmi\n");
	setenv("G_MESSAGES_DEBUG", "", 1);
	EXPECT_STR_EQ(capture_journal(glib_debug_lines, buf),
		      "<7>Qmi: qmi\n<7>Mbim: mbim\n<6>Mbim: info\n");
	unsetenv("G_MESSAGES_DEBUG");
	log_set_max_level(LOG_INFO);
}

/*
 * GLib still aborts after the line is written: g_error() always, a warning when the fatal
 * mask says so (G_DEBUG=fatal-warnings sets g_log_always_fatal to this when GLib loads).
 */
static void expect_glib_abort(GLogLevelFlags level, const char *want)
{
	char buf[OUT_MAX], stream[64];
	pid_t pid;
	int status;

	pid = fork_case("glib_fatal");
	if (pid < 0)
		return;
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGTRAP, SIG_DFL);
		log_glib_init();
		redirect_stderr(stream);
		setenv("JOURNAL_STREAM", stream, 1);
		log_init();
		g_log_set_always_fatal(G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL |
				       G_LOG_LEVEL_WARNING);
		g_log("Qmi", level, "fatal");
		_exit(0);
	}
	EXPECT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFSIGNALED(status) &&
		    (WTERMSIG(status) == SIGTRAP || WTERMSIG(status) == SIGABRT));
	/* The child's stderr file: its own copy of n_files numbered it. */
	snprintf(out_path, sizeof(out_path), "%s/%d-%u", tmp_dir, (int)pid, n_files);
	EXPECT_STR_EQ(restore_stderr(buf), want);
}

TEST(glib_fatal)
{
	expect_glib_abort(G_LOG_LEVEL_WARNING, "<4>Qmi: fatal\n");
	expect_glib_abort(G_LOG_LEVEL_ERROR, "<3>Qmi: fatal\n");
}
#endif /* QMAPD_TEST_GLIB */

/* What a forked case's child left (it aborts on purpose before restoring stderr), then the
 * directory. */
static void remove_tmp_dir(void)
{
	DIR *d = opendir(tmp_dir);
	struct dirent *e;
	char path[sizeof(tmp_dir) + 1 + sizeof(e->d_name)];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp_dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(tmp_dir);
}

/* Once for the process: the cases share the temporary directory and the saved stderr. */
TEST_SETUP()
{
	static bool done;

	unsetenv("QMAPD_LOG_TIME");
	if (done)
		return;
	done = true;
	setenv("TZ", "<+0530>-5:30", 1);
	tzset();
	if (!mkdtemp(tmp_dir))
		TEST_SKIP("cannot make a temporary directory: %s", strerror(errno));
	saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved_stderr < 0)
		TEST_SKIP("cannot duplicate stderr: %s", strerror(errno));
	atexit(remove_tmp_dir);
}
