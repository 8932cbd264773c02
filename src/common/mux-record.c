/* SPDX-License-Identifier: MIT */
/* The lists of muxes one qmapd leaves for the next (mux-record.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic-file.h"
#include "macro.h"
#include "mux-record.h"

static bool name_byte_ok(char c)
{
	return c > ' ' && c <= '~' && c != '/' && c != '%';
}

static bool name_ok(const char *name, size_t len)
{
	if (len == 0 || len > MUX_RECORD_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_byte_ok(name[i]))
			return false;
	return true;
}

int mux_record_parse(const char *text, size_t len, struct mux_record *ret)
{
	const char *p = text, *end = text + len;
	unsigned last = 0;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		unsigned id = 0;
		const char *num = p;

		while (p < end && *p >= '0' && *p <= '9' && p - num < 4)
			id = id * 10 + (unsigned)(*p++ - '0');
		if (p == num || (*num == '0' && p - num > 1) || id < CONFIG_MUX_ID_MIN ||
		    id > CONFIG_MUX_ID_MAX || id <= last || p >= end || *p != ' ')
			goto fail;
		const char *name = ++p;
		while (p < end && *p != '\n')
			p++;
		if (p >= end || !name_ok(name, (size_t)(p - name)))
			goto fail;
		memcpy(ret->name[id], name, (size_t)(p - name));
		p++; /* the newline */
		last = id;
	}
	return 0;
fail:
	memset(ret, 0, sizeof(*ret));
	return -EINVAL;
}

size_t mux_record_format(const struct mux_record *r, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX && n < size; id++)
		if (r->name[id][0])
			n += (size_t)snprintf(buf + n, size - n, "%u %s\n", id, r->name[id]);
	return n < size ? n : size - 1;
}

int mux_record_set(struct mux_record *r, unsigned id, const char *name)
{
	if (id < CONFIG_MUX_ID_MIN || id > CONFIG_MUX_ID_MAX)
		return -EINVAL;
	if (!name) {
		r->name[id][0] = '\0';
		return 0;
	}
	if (!name_ok(name, strlen(name)))
		return -EINVAL;
	snprintf(r->name[id], sizeof(r->name[id]), "%s", name);
	return 0;
}

bool mux_record_empty(const struct mux_record *r)
{
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		if (r->name[id][0])
			return false;
	return true;
}

static void path_of(char *buf, size_t size, const char *link, const char *what)
{
	snprintf(buf, size, "%s.%s", link, what);
}

int mux_record_read(const char *link, const char *what, struct mux_record *ret)
{
	char path[4096], buf[MUX_RECORD_FILE_MAX];

	path_of(path, sizeof(path), link, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negative_errno();
	ssize_t n = read(fd, buf, sizeof(buf));
	int r = n < 0 ? negative_errno() : 0;
	close(fd);
	if (r < 0)
		return r;
	if ((size_t)n == sizeof(buf))
		return -EFBIG;
	return mux_record_parse(buf, (size_t)n, ret);
}

static void print_record(FILE *f, const void *userdata)
{
	char buf[MUX_RECORD_FILE_MAX];

	mux_record_format(userdata, buf, sizeof(buf));
	fputs(buf, f);
}

int mux_record_write(const char *link, const char *what, const struct mux_record *r)
{
	char path[4096];

	path_of(path, sizeof(path), link, what);
	if (mux_record_empty(r))
		return unlink(path) < 0 && errno != ENOENT ? negative_errno() : 0;
	return atomic_file_write(path, print_record, r);
}

int mux_record_update(const char *link, const char *what, unsigned id, const char *name)
{
	struct mux_record *r = malloc(sizeof(*r));
	int k;

	if (!r)
		return -ENOMEM;
	if (mux_record_read(link, what, r) < 0)
		memset(r, 0, sizeof(*r));
	k = mux_record_set(r, id, name);
	if (k == 0)
		k = mux_record_write(link, what, r);
	free(r);
	return k;
}
