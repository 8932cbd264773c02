/* SPDX-License-Identifier: MIT */
/*
 * The sd_notify protocol for qmapd, spoken directly: no libsystemd. The notification
 * datagram on $NOTIFY_SOCKET (sd_notify(3)) and WATCHDOG_USEC/WATCHDOG_PID
 * (sd_watchdog_enabled(3)) are stable, documented interfaces of systemd ("Interface
 * Portability and Stability"), and speaking them takes a few dozen lines. The same code then
 * runs on systemd and on systems without it (OpenWrt and other routers), so there is one
 * path to test, and qmapd builds where libsystemd does not exist.
 *
 * We keep NOTIFY_SOCKET in the environment because a daemon that reloads sends READY=1 again
 * long after start-up. WATCHDOG_PID keeps a child that inherits WATCHDOG_USEC (libqmi may
 * spawn qmi-proxy) from feeding our watchdog.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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

/*
 * $NOTIFY_SOCKET as an address: a path, or an abstract name when it starts with '@'.
 * systemd >= 254 also knows "vsock:CID:PORT", but only for a virtual machine's own service
 * manager to reach its host, never for a service: -EAFNOSUPPORT.
 */
static int notify_address(const char *e, struct sockaddr_un *ret_sa, socklen_t *ret_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(e);

	if (e[0] != '/' && e[0] != '@')
		return -EAFNOSUPPORT;
	if (n < 2)
		return -EINVAL;
	if (e[0] == '@') {
		/* Abstract: a NUL first, then exactly the name; its length is the address's. */
		if (n > sizeof(sa.sun_path))
			return -EINVAL;
		memcpy(sa.sun_path + 1, e + 1, n - 1);
		*ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		if (n >= sizeof(sa.sun_path))
			return -EINVAL;
		memcpy(sa.sun_path, e, n);
		*ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	*ret_sa = sa;
	return 0;
}

/* One datagram to the service manager; 0 without NOTIFY_SOCKET, as sd_notify() does. */
static int notify_send_raw(const char *msg)
{
	const char *e = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t sa_len;
	size_t len = strlen(msg);
	ssize_t n;
	int fd, r;

	if (!e || !e[0])
		return 0;
	r = notify_address(e, &sa, &sa_len);
	if (r < 0)
		return r;
	/*
	 * A socket per message, as sd_notify() does: a keep-alive every few seconds costs
	 * nothing, and no fd stays open for a child to inherit. systemd learns our pid from the
	 * credentials the kernel attaches (it sets SO_PASSCRED), so none are sent.
	 */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	n = sendto(fd, msg, len, MSG_NOSIGNAL, (const struct sockaddr *)&sa, sa_len);
	r = n < 0 ? negative_errno() : ((size_t)n == len ? 0 : -EMSGSIZE);
	close(fd);
	return r;
}

static void notify_send(const char *msg)
{
	int key_len = (int)strcspn(msg, "=");
	int r = notify_send_raw(msg);

	if (r >= 0)
		return;
	/*
	 * A socket that refuses one message refuses them all, and the watchdog would repeat the
	 * warning every few seconds: warn once, then only at debug level.
	 */
	if (!send_failed_logged) {
		send_failed_logged = true;
		log_warning_errno(r, "cannot send %.*s to the service manager", key_len, msg);
	} else {
		log_debug_errno(r, "cannot send %.*s to the service manager", key_len, msg);
	}
}

/* A decimal number and nothing else: no sign, no blanks, no overflow. */
static int parse_u64(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

/*
 * sd_watchdog_enabled(3) without libsystemd: > 0 and the period in ret_usec when the
 * watchdog is on and ours; 0 when WATCHDOG_USEC is unset or WATCHDOG_PID names another
 * process; -EINVAL (or -ERANGE) for values that are not a period or a pid.
 */
static int watchdog_enabled(uint64_t *ret_usec)
{
	const char *e = getenv("WATCHDOG_USEC");
	uint64_t usec, pid;
	int r;

	if (!e)
		return 0;
	r = parse_u64(e, &usec);
	if (r < 0)
		return r;
	if (usec == 0 || usec == UINT64_MAX) /* systemd's "not set" and "infinity" */
		return -EINVAL;

	e = getenv("WATCHDOG_PID");
	if (e) {
		r = parse_u64(e, &pid);
		if (r < 0)
			return r;
		if (pid == 0 || pid > INT32_MAX)
			return -EINVAL;
		if ((pid_t)pid != getpid())
			return 0;
	}
	*ret_usec = usec;
	return 1;
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

	r = watchdog_enabled(&usec);
	if (r < 0) {
		/* Only a broken environment gets here; running on beats not starting at all. */
		log_warning_errno(r, "ignoring invalid WATCHDOG_USEC='%s' WATCHDOG_PID='%s'",
				  getenv("WATCHDOG_USEC") ?: "", getenv("WATCHDOG_PID") ?: "");
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

	/* The service manager takes a newline as the start of the next assignment. */
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
