/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "log-modem.h"
#include "log-mux.h"

/* "modem NAME: " or "MODEM: mux ID (IFNAME): "; a name is a config name, an ifname or a
 * device path, and a longer one is cut, not the message. */
#define LOG_PREFIX_MAX 256

static int max_level = LOG_INFO;
static int to_journal = -1;  /* -1: not decided yet */
static bool time_from_env;   /* QMAPD_LOG_TIME, read by log_init() */
static int time_wanted = -1; /* log_set_time(); -1: QMAPD_LOG_TIME decides */

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

/* A decimal number and nothing else, up to the separator sep. */
static bool parse_ull(const char *s, char sep, unsigned long long *ret, const char **ret_end)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	if (errno != 0 || *end != sep)
		return false;
	*ret_end = end;
	return true;
}

/*
 * systemd.exec(5): a service whose stdout or stderr is connected to the journal gets
 * JOURNAL_STREAM=DEV:INO of that stream. It counts only if stderr is still that stream: a
 * child of the service, or a shell that redirected stderr, inherits the variable but not
 * the journal.
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || !parse_ull(e, ':', &dev, &e) || !parse_ull(e + 1, '\0', &ino, &e))
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* QMAPD_LOG_TIME=0 (or no, false, off): a logger that stamps lines itself reads stderr. */
static bool time_env(void)
{
	const char *e = getenv("QMAPD_LOG_TIME");

	return !e || (strcmp(e, "0") != 0 && strcmp(e, "no") != 0 && strcmp(e, "false") != 0 &&
		      strcmp(e, "off") != 0);
}

void log_init(void)
{
	to_journal = stderr_is_journal();
	time_from_env = time_env();
}

bool log_to_journal(void)
{
	if (to_journal < 0)
		log_init();
	return to_journal;
}

void log_set_time(bool on)
{
	time_wanted = on;
}

/*
 * RFC 3339 in UTC with milliseconds, "2026-12-03T10:40:12.345Z": one width, sorts as text,
 * and says its zone, so lines of qmapd, the simulator and a VM's guest can be put side by
 * side whatever TZ each had (and no time zone file is read). Milliseconds are cut, not
 * rounded: a line never shows a second it was not written in.
 */
size_t log_format_time(const struct timespec *ts, char buf[static LOG_TIME_MAX])
{
	struct tm tm;
	size_t n;

	if (!gmtime_r(&ts->tv_sec, &tm))
		return 0;
	n = strftime(buf, LOG_TIME_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n == 0 || n + sizeof(".000Z") > LOG_TIME_MAX)
		return 0;
	unsigned ms = (unsigned)(ts->tv_nsec / 1000000) % 1000;
	buf[n++] = '.';
	buf[n++] = (char)('0' + ms / 100);
	buf[n++] = (char)('0' + ms / 10 % 10);
	buf[n++] = (char)('0' + ms % 10);
	buf[n++] = 'Z';
	buf[n] = '\0';
	return n;
}

const char *log_line_prefix(int level, char buf[static LOG_LINE_PREFIX_MAX])
{
	static const char *const prefix[] = {
		"<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>", "<7>"
	};
	struct timespec ts;
	size_t n;

	buf[0] = '\0';
	if (log_to_journal()) /* the journal has its own time, per line */
		return level < LOG_EMERG || level > LOG_DEBUG ? buf : prefix[level];
	if (!(time_wanted >= 0 ? time_wanted : time_from_env) ||
	    clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return buf;
	n = log_format_time(&ts, buf);
	if (n > 0) {
		buf[n++] = ' ';
		buf[n] = '\0';
	}
	return buf;
}

/*
 * The one place a line is written: priority or time, object prefix, message, error, in one
 * fprintf() so that a line is one write(2) to the unbuffered stderr.
 */
static _printf_(4, 0) int log_dispatch(int level, int error, const char *prefix, const char *fmt,
				       va_list ap)
{
	int ret = error != 0 ? -abs(error) : 0;

	if (level > max_level)
		return ret;

	char msg[1024]; /* one journald line; longer messages are cut, not split */
	vsnprintf(msg, sizeof(msg), fmt, ap);

	char line_prefix[LOG_LINE_PREFIX_MAX];
	fprintf(stderr, "%s%s%s%s%s\n", log_line_prefix(level, line_prefix), prefix, msg,
		error != 0 ? ": " : "", error != 0 ? strerror(abs(error)) : "");
	return ret;
}

int log_internal(int level, int error, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = log_dispatch(level, error, "", fmt, ap);
	va_end(ap);
	return r;
}

int log_modem_internal(int level, int error, const char *modem, const char *fmt, ...)
{
	char prefix[LOG_PREFIX_MAX];
	va_list ap;
	int r;

	snprintf(prefix, sizeof(prefix), "modem %s: ", modem ?: "?");
	va_start(ap, fmt);
	r = log_dispatch(level, error, prefix, fmt, ap);
	va_end(ap);
	return r;
}

int log_mux_internal(int level, int error, const char *modem, unsigned id, const char *ifname,
		     const char *fmt, ...)
{
	char prefix[LOG_PREFIX_MAX];
	va_list ap;
	int r;

	snprintf(prefix, sizeof(prefix), "%s%smux %u%s%s%s: ", modem ?: "", modem ? ": " : "", id,
		 ifname ? " (" : "", ifname ?: "", ifname ? ")" : "");
	va_start(ap, fmt);
	r = log_dispatch(level, error, prefix, fmt, ap);
	va_end(ap);
	return r;
}
