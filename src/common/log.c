/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;
static int to_journal = -1; /* -1: not decided yet */

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

void log_init(void)
{
	to_journal = stderr_is_journal();
}

bool log_to_journal(void)
{
	if (to_journal < 0)
		log_init();
	return to_journal;
}

const char *log_stderr_prefix(int level)
{
	static const char *const prefix[] = {
		"<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>", "<7>"
	};

	if (level < LOG_EMERG || level > LOG_DEBUG || !log_to_journal())
		return "";
	return prefix[level];
}

int log_full(int level, int error, const char *fmt, ...)
{
	int ret = error > 0 ? -error : (error < 0 ? error : -EIO);

	if (level > max_level)
		return ret;

	char msg[1024]; /* one journald line; longer messages are cut, not split */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (error != 0)
		fprintf(stderr, "%s%s: %s\n", log_stderr_prefix(level), msg,
			strerror(error < 0 ? -error : error));
	else
		fprintf(stderr, "%s%s\n", log_stderr_prefix(level), msg);
	return ret;
}
