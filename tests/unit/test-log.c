/* SPDX-License-Identifier: MIT */
/*
 * log: the "<N>" priority prefix only when stderr is the journal, that is when
 * JOURNAL_STREAM is "DEV:INO" of the file stderr is (systemd.exec(5)); plain lines
 * otherwise. stderr goes to a temporary file whose device and inode play the journal's.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

static void expect_plain(const char *journal_stream, int line)
{
	char buf[OUT_MAX];

	log_lines(journal_stream, false, buf);
	if (strcmp(buf, "mux 1 (qmap1): connected\nslow\nno modem: No such file or directory\n")) {
		fprintf(stderr, "%s:%d: JOURNAL_STREAM='%s': expected plain lines, got \"%s\"\n",
			__FILE__, line, journal_stream ?: "(unset)", buf);
		test_failures++;
	}
	EXPECT_TRUE(!log_to_journal());
	EXPECT_STR_EQ(log_stderr_prefix(LOG_INFO), "");
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

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "test_first_use: SKIP, fork: %s\n", strerror(errno));
		return;
	}
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
	EXPECT_STR_EQ(log_stderr_prefix(LOG_INFO), "<6>");
	EXPECT_STR_EQ(log_stderr_prefix(LOG_EMERG), "<0>");
	EXPECT_STR_EQ(log_stderr_prefix(LOG_DEBUG), "<7>");
	EXPECT_STR_EQ(log_stderr_prefix(-1), "");
	EXPECT_STR_EQ(log_stderr_prefix(8), "");

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

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "test_errno_zero: SKIP, fork: %s\n", strerror(errno));
		return;
	}
	if (pid == 0) {
		redirect_stderr(stream);
		unsetenv("JOURNAL_STREAM");
		log_init();
		int r = log_error_errno(zero, "no errno");
		restore_stderr(buf);
		_exit(r == -EIO && strcmp(buf, "no errno\n") == 0 ? 0 : 1);
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

	if (done)
		return;
	done = true;
	if (!mkdtemp(tmp_dir))
		TEST_SKIP("cannot make a temporary directory: %s", strerror(errno));
	saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved_stderr < 0)
		TEST_SKIP("cannot duplicate stderr: %s", strerror(errno));
	atexit(remove_tmp_dir);
}
