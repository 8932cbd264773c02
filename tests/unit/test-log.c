/* SPDX-License-Identifier: MIT */
/*
 * log: the "<N>" priority prefix only when stderr is the journal, that is when
 * JOURNAL_STREAM is "DEV:INO" of the file stderr is (systemd.exec(5)); plain lines
 * otherwise. stderr goes to a temporary file whose device and inode play the journal's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "test-util.h"

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

	snprintf(out_path, sizeof(out_path), "%s/%u", tmp_dir, n_files++);
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
	log_warning(0, "slow");
	EXPECT_EQ(log_err(ENOENT, "no %s", "modem"), -ENOENT);
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

static void test_journal(void)
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

static void test_not_journal(void)
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

/* Without log_init() the first line decides, and then it stays decided. */
static void test_first_use(void)
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

int main(void)
{
	if (!mkdtemp(tmp_dir))
		TEST_SKIP("cannot make a temporary directory: %s", strerror(errno));
	saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved_stderr < 0)
		TEST_SKIP("cannot duplicate stderr: %s", strerror(errno));

	test_first_use();
	test_journal();
	test_not_journal();

	rmdir(tmp_dir);
	unsetenv("JOURNAL_STREAM");
	return test_result("test-log");
}
