/* SPDX-License-Identifier: MIT */
/* Small helpers used everywhere: ownership attributes, array sizes, errno returns. */
#ifndef QMAPD_MACRO_H
#define QMAPD_MACRO_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _likely_(x)    __builtin_expect(!!(x), 1)
#define _unlikely_(x)  __builtin_expect(!!(x), 0)
#define _printf_(a, b) __attribute__((format(printf, a, b)))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define _cleanup_free_	_cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership out of a cleanup-scoped variable. */
#define TAKE_PTR(p)                        \
	({                                 \
		__typeof__(p) *_pp = &(p); \
		__typeof__(p) _tmp = *_pp; \
		*_pp = NULL;               \
		_tmp;                      \
	})

#define TAKE_FD(fd)                \
	({                         \
		int *_pfd = &(fd); \
		int _tmp = *_pfd;  \
		*_pfd = -1;        \
		_tmp;              \
	})

/* Negative errno of the last failed libc call, never 0. */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#endif
