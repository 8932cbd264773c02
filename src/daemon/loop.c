/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loop.h"

struct loop_glib {
	struct ev_loop *loop;
	GMainContext *ctx;
	ev_prepare prepare;
	ev_check check;
	ev_timer timeout;
	gint priority;

	/* GLib's poll set: what it asked for last time, and one ev_io per entry. */
	GPollFD *fds;
	ev_io *ios;
	gint n_fds;
	gint capacity;
	/*
	 * GLib was active in the last iteration (an fd ready, a source dispatched): the next
	 * prepare sets every watcher again even if the set looks the same. A number in the set
	 * may name another file by now: libqmi and libmbim close their proxy socket and open a
	 * new one, which gets the lowest free number, often the old one. epoll dropped the old
	 * file when it was closed and libev only tells it about a watcher that is set again,
	 * so the new socket would never be polled and every QMI answer would wait in it. Such
	 * a change always shows as activity: GLib signals its wakeup fd (in the set) whenever
	 * its poll set changes.
	 */
	bool rearm;
};

static void loop_glib_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	GPollFD *pfd = w->data;
	(void)loop;

	if (revents & EV_READ)
		pfd->revents |= pfd->events & G_IO_IN;
	if (revents & EV_WRITE)
		pfd->revents |= pfd->events & G_IO_OUT;
}

static void loop_glib_on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	/* Nothing to do: waking up is enough, the check watcher runs GLib. */
	(void)loop;
	(void)w;
	(void)revents;
}

static int loop_glib_grow(struct loop_glib *lg, gint n)
{
	if (n <= lg->capacity)
		return 0;
	gint cap = lg->capacity ? lg->capacity : 8;
	while (cap < n)
		cap *= 2;
	GPollFD *fds = calloc(cap, sizeof(*fds));
	ev_io *ios = calloc(cap, sizeof(*ios));
	if (!fds || !ios) {
		free(fds);
		free(ios);
		return -ENOMEM;
	}
	/* ev_io watchers point into fds: drop them all; the caller re-arms from scratch. */
	for (gint i = 0; i < lg->n_fds; i++)
		ev_io_stop(lg->loop, &lg->ios[i]);
	free(lg->fds);
	free(lg->ios);
	lg->fds = fds;
	lg->ios = ios;
	lg->capacity = cap;
	lg->n_fds = 0; /* forces a full re-arm */
	return 0;
}

static int io_events(gushort events)
{
	return ((events & G_IO_IN) ? EV_READ : 0) | ((events & G_IO_OUT) ? EV_WRITE : 0);
}

static void loop_glib_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct loop_glib *lg = w->data;
	gint timeout_ms;
	(void)revents;

	g_main_context_prepare(lg->ctx, &lg->priority);

	GPollFD query[64]; /* GLib rarely asks for more than a handful */
	gint n = g_main_context_query(lg->ctx, lg->priority, &timeout_ms, query,
				      G_N_ELEMENTS(query));
	if (n > (gint)G_N_ELEMENTS(query)) {
		log_error_errno(E2BIG, "glib: %d poll fds wanted, at most %zu supported", n,
				G_N_ELEMENTS(query));
		n = G_N_ELEMENTS(query);
	}

	bool same = n == lg->n_fds && !lg->rearm;
	for (gint i = 0; same && i < n; i++)
		same = query[i].fd == lg->fds[i].fd && query[i].events == lg->fds[i].events;
	lg->rearm = false;
	if (!same) {
		for (gint i = 0; i < lg->n_fds; i++)
			ev_io_stop(loop, &lg->ios[i]);
		if (loop_glib_grow(lg, n) < 0) {
			log_error_errno(ENOMEM, "glib: cannot watch its fds");
			n = 0;
		}
		for (gint i = 0; i < n; i++) {
			lg->fds[i] = query[i];
			ev_io_init(&lg->ios[i], loop_glib_on_io, query[i].fd,
				   io_events(query[i].events));
			lg->ios[i].data = &lg->fds[i];
			if (io_events(query[i].events))
				ev_io_start(loop, &lg->ios[i]);
		}
		lg->n_fds = n;
	}
	for (gint i = 0; i < lg->n_fds; i++)
		lg->fds[i].revents = 0;

	ev_timer_stop(loop, &lg->timeout);
	if (timeout_ms >= 0) {
		ev_timer_set(&lg->timeout, timeout_ms / 1000.0, 0.);
		ev_timer_start(loop, &lg->timeout);
	}
}

static void loop_glib_on_check(struct ev_loop *loop, ev_check *w, int revents)
{
	struct loop_glib *lg = w->data;
	(void)loop;
	(void)revents;

	/*
	 * ev_io callbacks have not run yet: ask libev directly which fds are ready. libev says
	 * readable, not why, and GLib's query leaves G_IO_HUP and G_IO_ERR out of the events
	 * (poll(2) reports them unasked): a peer that hung up, a proxy that died, would read
	 * as end of file for ever, and libmbim notices only from G_IO_HUP. poll(2) without
	 * waiting tells the rest, for the few fds that are ready.
	 */
	struct pollfd ready[64]; /* n_fds is at most loop_glib_on_prepare()'s 64 */
	gint index[64], n_ready = 0;
	for (gint i = 0; i < lg->n_fds; i++) {
		int pending = ev_clear_pending(loop, &lg->ios[i]);
		if (pending & EV_READ)
			lg->fds[i].revents |= lg->fds[i].events & G_IO_IN;
		if (pending & EV_WRITE)
			lg->fds[i].revents |= lg->fds[i].events & G_IO_OUT;
		if (lg->fds[i].revents && n_ready < (gint)G_N_ELEMENTS(ready)) {
			ready[n_ready] = (struct pollfd){ .fd = lg->fds[i].fd };
			index[n_ready++] = i;
		}
		if (lg->fds[i].revents)
			lg->rearm = true;
	}
	if (n_ready > 0 && poll(ready, (nfds_t)n_ready, 0) > 0)
		for (gint j = 0; j < n_ready; j++)
			lg->fds[index[j]].revents |=
				ready[j].revents & (G_IO_HUP | G_IO_ERR | G_IO_NVAL);
	if (g_main_context_check(lg->ctx, lg->priority, lg->fds, lg->n_fds)) {
		g_main_context_dispatch(lg->ctx);
		lg->rearm = true;
	}
}

int loop_glib_attach(struct ev_loop *loop, struct loop_glib **ret)
{
	struct loop_glib *lg = calloc(1, sizeof(*lg));

	if (!lg)
		return -ENOMEM;
	lg->loop = loop;
	lg->ctx = g_main_context_default();
	if (!g_main_context_acquire(lg->ctx)) {
		free(lg);
		return -EBUSY;
	}
	ev_prepare_init(&lg->prepare, loop_glib_on_prepare);
	ev_check_init(&lg->check, loop_glib_on_check);
	ev_timer_init(&lg->timeout, loop_glib_on_timeout, 0., 0.);
	lg->prepare.data = lg->check.data = lg;
	/* Keep GLib's watchers from holding the loop alive on their own. */
	ev_prepare_start(loop, &lg->prepare);
	ev_check_start(loop, &lg->check);
	*ret = lg;
	return 0;
}

struct loop_glib *loop_glib_detach(struct loop_glib *lg)
{
	if (!lg)
		return NULL;
	ev_prepare_stop(lg->loop, &lg->prepare);
	ev_check_stop(lg->loop, &lg->check);
	ev_timer_stop(lg->loop, &lg->timeout);
	for (gint i = 0; i < lg->n_fds; i++)
		ev_io_stop(lg->loop, &lg->ios[i]);
	g_main_context_release(lg->ctx);
	free(lg->fds);
	free(lg->ios);
	free(lg);
	return NULL;
}
