/* SPDX-License-Identifier: MIT */
/* The QMI state files a qmapd leaves for the next one (qmi-state.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic-file.h"
#include "macro.h"
#include "qmi-state.h"

#define STATE_FILE_MAX 1024 /* far more than 16 short lines */

/* A decimal number in [0, max], and where it ended; -EINVAL otherwise. */
static int parse_num(const char **p, const char *end, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	while (s < end && *s >= '0' && *s <= '9') {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -EINVAL;
		s++;
	}
	*p = s;
	*ret = v;
	return 0;
}

static int expect_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

int qmi_state_parse_clients(const char *text, size_t len, struct qmi_state_clients *ret)
{
	const char *p = text, *end = text + len;
	struct qmi_state_clients c = { 0 };

	while (p < end) {
		uint64_t svc = 0, cid = 0;
		if (c.n == QMI_STATE_MAX_CLIENTS)
			return -EINVAL;
		if (parse_num(&p, end, UINT8_MAX, &svc) < 0 || expect_char(&p, end, ' ') < 0 ||
		    parse_num(&p, end, UINT8_MAX, &cid) < 0 || expect_char(&p, end, '\n') < 0)
			return -EINVAL;
		/* CID 0 is no client and 0xff the broadcast id: never ours. */
		if (cid == 0 || cid == 0xff)
			return -EINVAL;
		c.c[c.n++] = (struct qmi_state_client){ (uint8_t)svc, (uint8_t)cid };
	}
	*ret = c;
	return 0;
}

int qmi_state_parse_mux(const char *text, size_t len, struct qmi_state_mux *ret)
{
	const char *p = text, *end = text + len;
	struct qmi_state_mux m = { 0 };

	while (p < end) {
		uint64_t cid = 0, handle = 0;
		unsigned i;
		if (end - p >= 3 && memcmp(p, "v4 ", 3) == 0)
			i = 0;
		else if (end - p >= 3 && memcmp(p, "v6 ", 3) == 0)
			i = 1;
		else
			return -EINVAL;
		p += 3;
		if (m.fam[i].present || parse_num(&p, end, UINT8_MAX, &cid) < 0 ||
		    expect_char(&p, end, ' ') < 0 || parse_num(&p, end, UINT32_MAX, &handle) < 0 ||
		    expect_char(&p, end, '\n') < 0)
			return -EINVAL;
		if (cid == 0 || cid == 0xff || handle == 0)
			return -EINVAL;
		m.fam[i] = (struct qmi_state_family){ true, (uint8_t)cid, (uint32_t)handle };
	}
	*ret = m;
	return 0;
}

static int read_small(const char *path, char *buf, size_t size, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negative_errno();
	ssize_t n = read(fd, buf, size);
	int r = n < 0 ? negative_errno() : 0;
	close(fd);
	if (r < 0)
		return r;
	if ((size_t)n == size)
		return -EFBIG;
	*ret_len = (size_t)n;
	return 0;
}

static void path_of(char *buf, size_t size, const char *link, const char *suffix, unsigned id)
{
	if (suffix)
		snprintf(buf, size, "%s.%s", link, suffix);
	else
		snprintf(buf, size, "%s.mux%u", link, id);
}

int qmi_state_read_clients(const char *link, struct qmi_state_clients *ret)
{
	char path[4096], buf[STATE_FILE_MAX];
	size_t len;

	path_of(path, sizeof(path), link, "clients", 0);
	int r = read_small(path, buf, sizeof(buf), &len);
	if (r < 0)
		return r;
	return qmi_state_parse_clients(buf, len, ret);
}

size_t qmi_state_format_clients(const struct qmi_state_clients *c, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < c->n && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%u %u\n", c->c[i].service, c->c[i].cid);
	return n < size ? n : size - 1;
}

static void print_clients(FILE *f, const void *userdata)
{
	char buf[STATE_FILE_MAX];

	qmi_state_format_clients(userdata, buf, sizeof(buf));
	fputs(buf, f);
}

int qmi_state_write_clients(const char *link, const struct qmi_state_clients *c)
{
	char path[4096];

	path_of(path, sizeof(path), link, "clients", 0);
	return atomic_file_write(path, print_clients, c);
}

int qmi_state_read_mux(const char *link, unsigned mux_id, struct qmi_state_mux *ret)
{
	char path[4096], buf[STATE_FILE_MAX];
	size_t len;

	path_of(path, sizeof(path), link, NULL, mux_id);
	int r = read_small(path, buf, sizeof(buf), &len);
	if (r < 0)
		return r;
	return qmi_state_parse_mux(buf, len, ret);
}

size_t qmi_state_format_mux(const struct qmi_state_mux *m, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < 2 && n < size; i++)
		if (m->fam[i].present)
			n += (size_t)snprintf(buf + n, size - n, "v%c %u %" PRIu32 "\n",
					      i ? '6' : '4', m->fam[i].cid, m->fam[i].handle);
	return n < size ? n : size - 1;
}

static void print_mux(FILE *f, const void *userdata)
{
	char buf[STATE_FILE_MAX];

	qmi_state_format_mux(userdata, buf, sizeof(buf));
	fputs(buf, f);
}

int qmi_state_write_mux(const char *link, unsigned mux_id, const struct qmi_state_mux *m)
{
	char path[4096];

	path_of(path, sizeof(path), link, NULL, mux_id);
	return atomic_file_write(path, print_mux, m);
}

void qmi_state_remove_mux(const char *link, unsigned mux_id)
{
	char path[4096];

	path_of(path, sizeof(path), link, NULL, mux_id);
	(void)unlink(path);
}
