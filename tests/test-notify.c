/* SPDX-License-Identifier: MIT */
/*
 * notify.c against a NOTIFY_SOCKET of our own: the messages and their format, the watchdog
 * timer at half of WATCHDOG_USEC, WATCHDOG_PID of another process, no-ops without systemd.
 */
#include <errno.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "notify.h"
#include "test-util.h"

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

static void test_messages(int fd)
{
	char buf[MSG_MAX];
	unsigned long long usec = 0;

	notify_ready();
	EXPECT_STR_EQ(next_msg(fd, buf), "READY=1");

	notify_stopping();
	EXPECT_STR_EQ(next_msg(fd, buf), "STOPPING=1");

	/* A newline would start a second assignment that systemd then takes at its word. */
	notify_status("mux %u: %s", 3u, "connected\nREADY=1");
	EXPECT_STR_EQ(next_msg(fd, buf), "STATUS=mux 3: connected READY=1");

	/* Cut, not split, and never past the buffer. */
	char long_text[600];
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	notify_status("%s", long_text);
	next_msg(fd, buf);
	EXPECT_EQ(strncmp(buf, "STATUS=xxx", 10), 0);
	EXPECT_EQ(strlen(buf), strlen("STATUS=") + 256);

	notify_reloading();
	next_msg(fd, buf);
	EXPECT_EQ(sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%llu", &usec), 1);
	EXPECT_TRUE(usec > 0);

	EXPECT_STR_EQ(next_msg(fd, buf), "");
}

static void test_watchdog(struct ev_loop *loop, int fd)
{
	/* 100 ms asked for: a keep-alive every 50 ms, so about 8 in 0.4 s. */
	setenv("WATCHDOG_USEC", "100000", 1);
	unsetenv("WATCHDOG_PID");
	EXPECT_EQ(notify_init(loop), 0);
	EXPECT_EQ(notify_init(loop), -EALREADY);
	run_for(loop, 0.4);
	unsigned n = count_msgs(fd, "WATCHDOG=1");
	EXPECT_GE(n, 4); /* 8 expected; a loaded CI machine may be late */
	EXPECT_LT(n, 10);

	/* After notify_exit() the timer is gone: no more keep-alives, and the loop has nothing
	 * left to wait for but our stop timer. */
	notify_exit(loop);
	notify_exit(loop);
	run_for(loop, 0.2);
	EXPECT_EQ(count_msgs(fd, "WATCHDOG=1"), 0);

	/* WATCHDOG_PID of another process (a child that inherited the environment). */
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)getppid());
	setenv("WATCHDOG_PID", pid, 1);
	EXPECT_EQ(notify_init(loop), 0);
	run_for(loop, 0.2);
	EXPECT_EQ(count_msgs(fd, "WATCHDOG=1"), 0);
	notify_exit(loop);

	/* Our own pid is fine. */
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	EXPECT_EQ(notify_init(loop), 0);
	run_for(loop, 0.2);
	EXPECT_GE(count_msgs(fd, "WATCHDOG=1"), 2);
	notify_exit(loop);

	/* A broken WATCHDOG_USEC is reported and ignored: qmapd runs on without a watchdog. */
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "soon", 1);
	EXPECT_EQ(notify_init(loop), 0);
	run_for(loop, 0.1);
	EXPECT_EQ(count_msgs(fd, "WATCHDOG=1"), 0);
	notify_exit(loop);
	unsetenv("WATCHDOG_USEC");
}

static void test_without_systemd(struct ev_loop *loop, int fd)
{
	unsetenv("NOTIFY_SOCKET");
	setenv("WATCHDOG_USEC", "100000", 1);
	EXPECT_EQ(notify_init(loop), 0);
	notify_ready();
	notify_status("nobody listens");
	notify_reloading();
	notify_stopping();
	run_for(loop, 0.15);
	notify_exit(loop);
	unsetenv("WATCHDOG_USEC");
	EXPECT_EQ(count_msgs(fd, "WATCHDOG=1"), 0);
	char buf[MSG_MAX];
	EXPECT_STR_EQ(next_msg(fd, buf), "");

	EXPECT_EQ(notify_init(NULL), -EINVAL);
	notify_exit(NULL);
}

int main(void)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct sockaddr_un sa;
	char dir[64];
	int fd;

	if (!loop)
		TEST_SKIP("cannot create an event loop");
	fd = listener_open(dir, &sa);
	if (fd < 0)
		TEST_SKIP("cannot bind a datagram socket in /tmp: %s", strerror(-fd));
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);

	test_messages(fd);
	test_watchdog(loop, fd);
	test_without_systemd(loop, fd);

	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
	ev_loop_destroy(loop);
	return test_result("test-notify");
}
