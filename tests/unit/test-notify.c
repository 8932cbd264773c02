/* SPDX-License-Identifier: MIT */
/*
 * notify.c, which speaks the sd_notify protocol itself, against a NOTIFY_SOCKET of our own
 * (a path and an abstract '@' name): the messages and their format, the watchdog timer at
 * half of WATCHDOG_USEC, WATCHDOG_PID of another process, malformed WATCHDOG_USEC,
 * WATCHDOG_PID and NOTIFY_SOCKET (a warning, no crash), no-ops without systemd.
 */
#include <errno.h>
#include <ev.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "notify.h"
#include "test-case.h"

/* Every message notify.c builds is far shorter; a longer one would be a bug worth seeing. */
#define MSG_MAX 1024

static int listener_open(char dir[static 64], struct sockaddr_un *ret_sa)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(dir, 64, "/tmp/qmapd-test-notify.XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_sa = sa;
	return fd;
}

/* A datagram socket on the abstract name "@name" (the '@' is a NUL on the wire). */
static int abstract_listener_open(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd;

	if (n + 1 > sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path + 1, name, n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* What notify.c logs between capture_start() and capture_end() (stderr to a file). */
static int captured_stderr = -1;
static FILE *capture_file;

static void capture_start(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	captured_stderr = dup(STDERR_FILENO);
	if (!capture_file || captured_stderr < 0 || dup2(fileno(capture_file), STDERR_FILENO) < 0) {
		fprintf(stderr, "%s:%d: cannot redirect stderr: %s\n", __FILE__, __LINE__,
			strerror(errno));
		exit(1);
	}
}

static const char *capture_end(char buf[static MSG_MAX])
{
	size_t n;

	fflush(stderr);
	dup2(captured_stderr, STDERR_FILENO);
	close(captured_stderr);
	rewind(capture_file);
	n = fread(buf, 1, MSG_MAX - 1, capture_file);
	buf[n] = '\0';
	fclose(capture_file);
	/* Echo it, so the test's own output still shows what qmapd would have logged. */
	fputs(buf, stderr);
	return buf;
}

#define EXPECT_CONTAINS(hay, needle)                                                            \
	do {                                                                                    \
		const char *_h = (hay), *_n = (needle);                                         \
		if (!strstr(_h, _n)) {                                                          \
			fprintf(stderr, "%s:%d: expected \"%s\" in %s, got \"%s\"\n", __FILE__, \
				__LINE__, _n, #hay, _h);                                        \
			test_failures++;                                                        \
		}                                                                               \
	} while (0)

/* The next queued message, "" if there is none. */
static const char *next_msg(int fd, char buf[static MSG_MAX])
{
	ssize_t n = recv(fd, buf, MSG_MAX - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static unsigned count_msgs(int fd, const char *want)
{
	char buf[MSG_MAX];
	unsigned n = 0;

	while (*next_msg(fd, buf))
		n += strcmp(buf, want) == 0;
	return n;
}

static struct ev_loop *the_loop;
/* The NOTIFY_SOCKET of every case (one for the whole run: the cases drain it). */
static int listener = -1;
static char listener_dir[64];
static struct sockaddr_un listener_sa;

static void listener_remove(void)
{
	close(listener);
	unlink(listener_sa.sun_path);
	rmdir(listener_dir);
}

/* Every case starts with no watchdog, an empty socket and NOTIFY_SOCKET naming it. */
TEST_SETUP()
{
	if (!the_loop) {
		the_loop = ev_default_loop(0);
		if (!the_loop)
			TEST_SKIP("cannot create an event loop");
	}
	if (listener < 0) {
		listener = listener_open(listener_dir, &listener_sa);
		if (listener < 0)
			TEST_SKIP("cannot bind a datagram socket in /tmp: %s", strerror(-listener));
		atexit(listener_remove);
	}
	notify_exit(the_loop);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	setenv("NOTIFY_SOCKET", listener_sa.sun_path, 1);
	count_msgs(listener, "");
}

/*
 * A NOTIFY_SOCKET that cannot be sent to: the first failure is a warning, later ones are
 * debug (the watchdog would repeat it every few seconds); nothing crashes or overflows.
 * notify.c warns once per process: the first case, so that it runs before anything else fails
 * to send.
 */
TEST(bad_socket)
{
	char log[MSG_MAX], long_name[200];

	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[0] = '/';
	long_name[sizeof(long_name) - 1] = '\0';

	capture_start();
	setenv("NOTIFY_SOCKET", "relative/notify", 1);
	notify_ready();
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	notify_stopping();
	setenv("NOTIFY_SOCKET", "@", 1);
	notify_stopping();
	setenv("NOTIFY_SOCKET", long_name, 1);
	notify_stopping();
	long_name[0] = '@';
	setenv("NOTIFY_SOCKET", long_name, 1);
	notify_stopping();
	setenv("NOTIFY_SOCKET", "/nonexistent/qmapd-test-notify", 1);
	notify_stopping();
	setenv("NOTIFY_SOCKET", "@qmapd-test-notify-nobody-listens", 1);
	notify_stopping();
	capture_end(log);
	EXPECT_CONTAINS(log, "cannot send READY to the service manager");
	EXPECT_TRUE(strstr(log, "STOPPING") == NULL); /* only once at warning level */
}

static void on_stop(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Run the loop for `seconds`; the watchdog timer (if any) fires meanwhile. */
static void run_for(struct ev_loop *loop, double seconds)
{
	ev_timer stop;

	ev_timer_init(&stop, on_stop, seconds, 0);
	ev_timer_start(loop, &stop);
	ev_run(loop, 0);
	ev_timer_stop(loop, &stop);
}

TEST(messages)
{
	char buf[MSG_MAX];
	unsigned long long usec = 0;

	notify_ready();
	EXPECT_STR_EQ(next_msg(listener, buf), "READY=1");

	notify_stopping();
	EXPECT_STR_EQ(next_msg(listener, buf), "STOPPING=1");

	/* A newline would start a second assignment that systemd then takes at its word. */
	notify_status("mux %u: %s", 3u, "connected\nREADY=1");
	EXPECT_STR_EQ(next_msg(listener, buf), "STATUS=mux 3: connected READY=1");

	/* Cut, not split, and never past the buffer. */
	char long_text[600];
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	notify_status("%s", long_text);
	next_msg(listener, buf);
	EXPECT_EQ(strncmp(buf, "STATUS=xxx", 10), 0);
	EXPECT_EQ(strlen(buf), strlen("STATUS=") + 256);

	notify_reloading();
	next_msg(listener, buf);
	EXPECT_EQ(sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%llu", &usec), 1);
	EXPECT_TRUE(usec > 0);

	EXPECT_STR_EQ(next_msg(listener, buf), "");
}

TEST(watchdog)
{
	/* 100 ms asked for: a keep-alive every 50 ms, so about 8 in 0.4 s. */
	setenv("WATCHDOG_USEC", "100000", 1);
	unsetenv("WATCHDOG_PID");
	EXPECT_EQ(notify_init(the_loop), 0);
	EXPECT_EQ(notify_init(the_loop), -EALREADY);
	run_for(the_loop, 0.4);
	unsigned n = count_msgs(listener, "WATCHDOG=1");
	EXPECT_GE(n, 4); /* 8 expected; a loaded CI machine may be late */
	EXPECT_LT(n, 10);

	/* After notify_exit() the timer is gone: no more keep-alives, and the loop has nothing
	 * left to wait for but our stop timer. */
	notify_exit(the_loop);
	notify_exit(the_loop);
	run_for(the_loop, 0.2);
	EXPECT_EQ(count_msgs(listener, "WATCHDOG=1"), 0);

	/* WATCHDOG_PID of another process (a child that inherited the environment). */
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)getppid());
	setenv("WATCHDOG_PID", pid, 1);
	EXPECT_EQ(notify_init(the_loop), 0);
	run_for(the_loop, 0.2);
	EXPECT_EQ(count_msgs(listener, "WATCHDOG=1"), 0);
	notify_exit(the_loop);

	/* Our own pid is fine. */
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	EXPECT_EQ(notify_init(the_loop), 0);
	run_for(the_loop, 0.2);
	EXPECT_GE(count_msgs(listener, "WATCHDOG=1"), 2);
	notify_exit(the_loop);

	/* WATCHDOG_PID without WATCHDOG_USEC: no watchdog asked for. */
	unsetenv("WATCHDOG_USEC");
	EXPECT_EQ(notify_init(the_loop), 0);
	run_for(the_loop, 0.1);
	EXPECT_EQ(count_msgs(listener, "WATCHDOG=1"), 0);
	notify_exit(the_loop);
}

/*
 * A broken WATCHDOG_USEC or WATCHDOG_PID is reported, quoting it, and ignored: qmapd runs
 * on without a watchdog.
 */
static void expect_invalid_watchdog(struct ev_loop *loop, int fd, const char *usec, const char *pid)
{
	char log[MSG_MAX], want[128];

	setenv("WATCHDOG_USEC", usec, 1);
	if (pid)
		setenv("WATCHDOG_PID", pid, 1);
	else
		unsetenv("WATCHDOG_PID");
	capture_start();
	EXPECT_EQ(notify_init(loop), 0);
	capture_end(log);
	snprintf(want, sizeof(want), "ignoring invalid WATCHDOG_USEC='%s' WATCHDOG_PID='%s'", usec,
		 pid ?: "");
	EXPECT_CONTAINS(log, want);
	run_for(loop, 0.05);
	EXPECT_EQ(count_msgs(fd, "WATCHDOG=1"), 0);
	notify_exit(loop);
}

TEST(watchdog_invalid)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	expect_invalid_watchdog(the_loop, listener, "soon", NULL);
	expect_invalid_watchdog(the_loop, listener, "", NULL);
	expect_invalid_watchdog(the_loop, listener, "0", NULL);
	expect_invalid_watchdog(the_loop, listener, "-100000", NULL);
	expect_invalid_watchdog(the_loop, listener, " 100000", NULL);
	expect_invalid_watchdog(the_loop, listener, "100000x", NULL);
	expect_invalid_watchdog(the_loop, listener, "18446744073709551615", NULL); /* "infinity" */
	expect_invalid_watchdog(the_loop, listener, "99999999999999999999", NULL); /* overflows */
	expect_invalid_watchdog(the_loop, listener, "100000", "");
	expect_invalid_watchdog(the_loop, listener, "100000", "qmapd");
	expect_invalid_watchdog(the_loop, listener, "100000", "0");
	expect_invalid_watchdog(the_loop, listener, "100000", "-1");
	expect_invalid_watchdog(the_loop, listener, "100000", "99999999999");
	expect_invalid_watchdog(the_loop, listener, "soon", pid);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

/* The same messages on an abstract socket: NOTIFY_SOCKET="@name". */
TEST(abstract)
{
	char name[64], env[80], buf[MSG_MAX];
	int fd;

	snprintf(name, sizeof(name), "qmapd-test-notify-%d", (int)getpid());
	fd = abstract_listener_open(name);
	if (fd < 0)
		TEST_SKIP("cannot bind @%s: %s", name, strerror(-fd));
	snprintf(env, sizeof(env), "@%s", name);
	setenv("NOTIFY_SOCKET", env, 1);
	notify_ready();
	EXPECT_STR_EQ(next_msg(fd, buf), "READY=1");
	notify_status("on an abstract socket");
	EXPECT_STR_EQ(next_msg(fd, buf), "STATUS=on an abstract socket");
	EXPECT_STR_EQ(next_msg(fd, buf), "");
	close(fd);
}

TEST(without_systemd)
{
	unsetenv("NOTIFY_SOCKET");
	setenv("WATCHDOG_USEC", "100000", 1);
	EXPECT_EQ(notify_init(the_loop), 0);
	notify_ready();
	notify_status("nobody listens");
	notify_reloading();
	notify_stopping();
	run_for(the_loop, 0.15);
	notify_exit(the_loop);
	unsetenv("WATCHDOG_USEC");
	EXPECT_EQ(count_msgs(listener, "WATCHDOG=1"), 0);
	char buf[MSG_MAX];
	EXPECT_STR_EQ(next_msg(listener, buf), "");

	EXPECT_EQ(notify_init(NULL), -EINVAL);
	notify_exit(NULL);
}
