/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
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
		fprintf(stderr, "<%d>%s: %s\n", level, msg, strerror(error < 0 ? -error : error));
	else
		fprintf(stderr, "<%d>%s\n", level, msg);
	return ret;
}
