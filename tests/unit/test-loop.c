/* SPDX-License-Identifier: MIT */
/*
 * GLib's main context driven from the libev loop (src/daemon/loop.c): a GLib fd source is
 * dispatched when its fd becomes readable, also when its fd number was closed and opened
 * again for another file between two loop iterations, as libqmi and libmbim do when they
 * reconnect to their proxy (epoll forgets a closed file; the same number in GLib's poll set
 * must not keep the old watcher), and told G_IO_HUP when the peer hung up, as libmbim needs
 * to see its proxy die.
 */
#include <fcntl.h>
#include <glib-unix.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"
#include "test-case.h"
#include "test-loop.h"
#include "test-util.h"

static struct ev_loop *loop;
static ev_timer tick;
static struct loop_glib *lg;

TEST_SETUP()
{
	if (lg)
		lg = loop_glib_detach(lg);
	if (loop)
		ev_loop_destroy(loop);
	/* epoll, where a registration dies with its file (the daemon's backend on Linux). */
	loop = ev_loop_new(EVBACKEND_EPOLL);
	test_loop_tick(loop, &tick);
	loop_glib_attach(loop, &lg);
}

struct source {
	int fd;
	unsigned dispatched;
};

static gboolean on_readable(gint fd, GIOCondition cond, gpointer userdata)
{
	struct source *s = userdata;
	char c;

	(void)cond;
	if (read(fd, &c, 1) == 1)
		s->dispatched++;
	return G_SOURCE_CONTINUE;
}

static bool dispatched(void *data)
{
	return ((struct source *)data)->dispatched > 0;
}

/* A connected pair whose first end has the number want (or any, with -1). */
static void socket_pair(int want, int ret[2])
{
	EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ret), 0);
	if (want >= 0 && ret[0] != want) {
		EXPECT_EQ(dup3(ret[0], want, O_CLOEXEC), want);
		close(ret[0]);
		ret[0] = want;
	}
}

TEST(readable_fd_dispatched)
{
	int p[2];
	struct source s = { 0 };

	EXPECT_TRUE(lg != NULL);
	socket_pair(-1, p);
	guint id = g_unix_fd_add(p[0], G_IO_IN, on_readable, &s);
	test_run_for(loop, 0.02);
	EXPECT_EQ(s.dispatched, 0u);
	EXPECT_EQ(write(p[1], "x", 1), 1);
	EXPECT_TRUE(test_run_until(loop, dispatched, &s));
	g_source_remove(id);
	close(p[0]);
	close(p[1]);
}

/* The old source and its fd go, a new one with the same number comes: all between two
 * iterations, so GLib's poll set looks unchanged. */
static void replace(struct source *old, guint *id, struct source *new, int p[2])
{
	int fd = old->fd;

	g_source_remove(*id);
	close(p[0]);
	close(p[1]);
	socket_pair(fd, p);
	new->fd = p[0];
	*id = g_unix_fd_add(new->fd, G_IO_IN, on_readable, new);
}

TEST(fd_number_reused_between_iterations)
{
	int p[2];
	struct source a = { 0 }, b = { 0 };

	socket_pair(-1, p);
	a.fd = p[0];
	guint id = g_unix_fd_add(a.fd, G_IO_IN, on_readable, &a);
	test_run_for(loop, 0.02); /* the loop watches a's fd now */
	replace(&a, &id, &b, p);
	EXPECT_EQ(b.fd, a.fd);
	EXPECT_EQ(write(p[1], "x", 1), 1);
	EXPECT_TRUE(test_run_until(loop, dispatched, &b));
	g_source_remove(id);
	close(p[0]);
	close(p[1]);
}

/* The same from inside a GLib callback, where libqmi reconnects. */
struct reconnect {
	struct source *old, *new;
	guint *id;
	int *p;
};

static gboolean on_reconnect(gpointer data)
{
	struct reconnect *r = data;

	replace(r->old, r->id, r->new, r->p);
	EXPECT_EQ(write(r->p[1], "x", 1), 1);
	return G_SOURCE_REMOVE;
}

TEST(fd_number_reused_in_glib_callback)
{
	int p[2];
	struct source a = { 0 }, b = { 0 };

	socket_pair(-1, p);
	a.fd = p[0];
	guint id = g_unix_fd_add(a.fd, G_IO_IN, on_readable, &a);
	test_run_for(loop, 0.02);
	struct reconnect r = { &a, &b, &id, p };
	g_idle_add(on_reconnect, &r);
	EXPECT_TRUE(test_run_until(loop, dispatched, &b));
	EXPECT_EQ(b.fd, a.fd);
	g_source_remove(id);
	close(p[0]);
	close(p[1]);
}

struct hangup {
	unsigned hup, in;
};

static gboolean on_hangup(gint fd, GIOCondition cond, gpointer userdata)
{
	struct hangup *h = userdata;

	(void)fd;
	if (cond & G_IO_HUP) {
		h->hup++;
		return G_SOURCE_REMOVE;
	}
	h->in++; /* readable at end of file, without the hang-up: called again and again */
	return G_SOURCE_CONTINUE;
}

static bool hung_up(void *data)
{
	return ((struct hangup *)data)->hup > 0;
}

/* The peer goes (a proxy killed): the source asked for G_IO_HUP is told so, as GLib's own
 * poll would tell it, instead of a readable fd that reads nothing for ever. */
TEST(peer_hangup_reported)
{
	int p[2];
	struct hangup h = { 0 };

	socket_pair(-1, p);
	g_unix_fd_add(p[0], G_IO_IN | G_IO_HUP | G_IO_ERR, on_hangup, &h);
	test_run_for(loop, 0.02);
	close(p[1]);
	EXPECT_TRUE(test_run_until(loop, hung_up, &h));
	EXPECT_EQ(h.in, 0u);
	close(p[0]);
}
