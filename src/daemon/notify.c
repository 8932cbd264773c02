/* SPDX-License-Identifier: MIT */
/*
 * sd_notify() for qmapd. We keep NOTIFY_SOCKET in the environment (unset_environment = 0)
 * because a daemon that reloads sends READY=1 again long after start-up. WATCHDOG_PID keeps
 * a child that inherits WATCHDOG_USEC (libqmi may spawn qmi-proxy) from feeding our watchdog.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "log.h"
#include "notify.h"

/*
 * systemd reads the status as one line and shows it in `systemctl status`, which a terminal
 * cuts at its width anyway; 256 bytes hold any session summary we compose.
 */
#define STATUS_MAX 256

/* libev clamps nothing: a watchdog below 2 ms cannot be served by a loop that also does I/O. */
#define WATCHDOG_USEC_MIN 2000

static ev_timer watchdog_timer;
static bool watchdog_started;
static bool send_failed_logged;

static void notify_send(const char *msg)
{
	int key_len = (int)strcspn(msg, "=");
	int r = sd_notify(0, msg);

	if (r >= 0)
		return;
	/*
	 * A socket that refuses one message refuses them all, and the watchdog would repeat the
	 * warning every few seconds: warn once, then only at debug level.
	 */
	if (!send_failed_logged) {
		send_failed_logged = true;
		log_warning(r, "cannot send %.*s to the service manager", key_len, msg);
	} else {
		log_debug("cannot send %.*s to the service manager: %s", key_len, msg,
			  strerror(-r));
	}
}

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	notify_send("WATCHDOG=1");
}

int notify_init(struct ev_loop *loop)
{
	uint64_t usec = 0;
	int r;

	if (!loop)
		return -EINVAL;
	if (watchdog_started)
		return -EALREADY;

	r = sd_watchdog_enabled(0, &usec);
	if (r < 0) {
		/* Only a broken environment gets here; running on beats not starting at all. */
		log_warning(r, "ignoring invalid WATCHDOG_USEC/WATCHDOG_PID");
		return 0;
	}
	if (r == 0)
		return 0;
	if (usec < WATCHDOG_USEC_MIN)
		usec = WATCHDOG_USEC_MIN;

	/* Half the period, as sd_watchdog_enabled(3) advises: one late tick is not fatal. */
	ev_tstamp period = (ev_tstamp)(usec / 2) / 1e6;
	ev_timer_init(&watchdog_timer, on_watchdog, period, period);
	ev_timer_start(loop, &watchdog_timer);
	watchdog_started = true;
	log_debug("watchdog: WATCHDOG=1 every %.3f s", period);
	return 0;
}

void notify_ready(void)
{
	notify_send("READY=1");
}

void notify_status(const char *fmt, ...)
{
	char msg[sizeof("STATUS=") + STATUS_MAX];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);

	/* sd_notify() takes a newline as the start of the next assignment. */
	for (char *s = msg + n; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
	notify_send(msg);
}

void notify_reloading(void)
{
	char msg[sizeof("RELOADING=1\nMONOTONIC_USEC=") + 20]; /* 20 digits: UINT64_MAX */
	struct timespec ts;
	uint64_t now = 0;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)now);
	notify_send(msg);
}

void notify_stopping(void)
{
	notify_send("STOPPING=1");
}

void notify_exit(struct ev_loop *loop)
{
	if (!watchdog_started || !loop)
		return;
	ev_timer_stop(loop, &watchdog_timer);
	watchdog_started = false;
}
