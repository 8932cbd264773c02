/* SPDX-License-Identifier: MIT */
/* The record of a D-Bus client's connected bearer for the next qmapd (bearer-state.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bearer-state.h"
#include "macro.h"

/* A line's end, or NULL when it has none (a file must end each line). */
static const char *line_end(const char *p, const char *end)
{
	return memchr(p, '\n', (size_t)(end - p));
}

static bool prefix(const char **p, const char *e, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(e - *p) < n || memcmp(*p, word, n) != 0)
		return false;
	*p += n;
	return true;
}

/* A decimal in [0, max] filling [p, e) exactly. */
static int parse_uint(const char *p, const char *e, unsigned max, unsigned *ret)
{
	unsigned v = 0;

	if (p == e || e - p > 10 || (*p == '0' && e - p > 1))
		return -EINVAL;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned long long w = (unsigned long long)v * 10 + (unsigned)(*p - '0');
		if (w > max)
			return -EINVAL;
		v = (unsigned)w;
	}
	*ret = v;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool name_ok(const char *p, size_t n)
{
	if (n == 0 || n > BEARER_STATE_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '-'))
			return false;
	return true;
}

static bool value_ok(const char *v, size_t n)
{
	if (n > CONFIG_VALUE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] > 0x7e)
			return false;
	return true;
}

static int parse_key(const char *p, const char *e, struct bearer_state *b)
{
	const char *sp = memchr(p, ' ', (size_t)(e - p));

	if (!sp || !name_ok(p, (size_t)(sp - p)) || b->n_keys == BEARER_STATE_MAX_KEYS)
		return -EINVAL;
	struct bearer_state_key *k = &b->keys[b->n_keys];
	memcpy(k->name, p, (size_t)(sp - p));
	k->name[sp - p] = '\0';
	for (unsigned i = 0; i < b->n_keys; i++)
		if (strcmp(b->keys[i].name, k->name) == 0)
			return -EINVAL;
	const char *h = sp + 1;
	size_t hn = (size_t)(e - h);
	if (hn % 2 != 0 || hn / 2 > CONFIG_VALUE_MAX)
		return -EINVAL;
	for (size_t i = 0; i < hn / 2; i++) {
		int hi = hex_digit(h[2 * i]), lo = hex_digit(h[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		k->value[i] = (char)(hi << 4 | lo);
	}
	k->value[hn / 2] = '\0';
	if (!value_ok(k->value, hn / 2))
		return -EINVAL;
	b->n_keys++;
	return 0;
}

int bearer_state_parse(const char *text, size_t len, struct bearer_state *ret)
{
	const char *p = text, *end = text + len;
	struct bearer_state b = { 0 };
	bool have_bearer = false, have_roaming = false;

	while (p < end) {
		const char *e = line_end(p, end);
		unsigned v;
		if (!e)
			return -EINVAL;
		if (prefix(&p, e, "bearer ")) {
			if (have_bearer || parse_uint(p, e, BEARER_STATE_INDEX_MAX, &v) < 0)
				return -EINVAL;
			b.bearer = v;
			have_bearer = true;
		} else if (prefix(&p, e, "allow-roaming ")) {
			if (have_roaming || parse_uint(p, e, 1, &v) < 0)
				return -EINVAL;
			b.allow_roaming = v;
			have_roaming = true;
		} else if (prefix(&p, e, "key ")) {
			if (parse_key(p, e, &b) < 0)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		p = e + 1;
	}
	if (!have_bearer || !have_roaming)
		return -EINVAL;
	*ret = b;
	return 0;
}

int bearer_state_format(const struct bearer_state *b, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	int w = snprintf(buf, size, "bearer %u\nallow-roaming %u\n", b->bearer,
			 b->allow_roaming ? 1u : 0u);

	if (w < 0 || (size_t)w >= size)
		return -ENOSPC;
	n = (size_t)w;
	for (unsigned i = 0; i < b->n_keys; i++) {
		const struct bearer_state_key *k = &b->keys[i];
		size_t vl = strlen(k->value);
		w = snprintf(buf + n, size - n, "key %s ", k->name);
		if (w < 0 || (size_t)w >= size - n || size - n - (size_t)w < 2 * vl + 2)
			return -ENOSPC;
		n += (size_t)w;
		for (size_t j = 0; j < vl; j++) {
			buf[n++] = hex[(unsigned char)k->value[j] >> 4];
			buf[n++] = hex[(unsigned char)k->value[j] & 0xf];
		}
		buf[n++] = '\n';
		buf[n] = '\0';
	}
	return (int)n;
}

int bearer_state_add_key(struct bearer_state *b, const char *name, const char *value)
{
	if (!name_ok(name, strlen(name)) || !value_ok(value, strlen(value)))
		return -EINVAL;
	for (unsigned i = 0; i < b->n_keys; i++)
		if (strcmp(b->keys[i].name, name) == 0)
			return -EINVAL;
	if (b->n_keys == BEARER_STATE_MAX_KEYS)
		return -ENOSPC;
	struct bearer_state_key *k = &b->keys[b->n_keys++];
	snprintf(k->name, sizeof(k->name), "%s", name);
	snprintf(k->value, sizeof(k->value), "%s", value);
	return 0;
}

static int path_of(char *buf, size_t size, const char *link, unsigned mux_id)
{
	int n = snprintf(buf, size, "%s.bearer%u", link, mux_id);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int bearer_state_read(const char *link, unsigned mux_id, struct bearer_state *ret)
{
	char path[4096], buf[BEARER_STATE_FILE_MAX];
	int r = path_of(path, sizeof(path), link, mux_id);

	if (r < 0)
		return r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negative_errno();
	ssize_t n = read(fd, buf, sizeof(buf));
	r = n < 0 ? negative_errno() : 0;
	close(fd);
	if (r < 0)
		return r;
	if ((size_t)n == sizeof(buf))
		return -EFBIG;
	return bearer_state_parse(buf, (size_t)n, ret);
}

/* Written beside and renamed, as atomic_file_write() does, but 0600 whatever the umask: the
 * record may hold the bearer's password. */
int bearer_state_write(const char *link, unsigned mux_id, const struct bearer_state *b)
{
	char path[4096], tmp[4096 + 8], buf[BEARER_STATE_FILE_MAX];
	int r = path_of(path, sizeof(path), link, mux_id);

	if (r < 0)
		return r;
	int n = bearer_state_format(b, buf, sizeof(buf));
	if (n < 0)
		return n;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return negative_errno();
	ssize_t w = write(fd, buf, (size_t)n);
	r = w < 0 ? negative_errno() : w != n ? -EIO : 0;
	if (close(fd) < 0 && r == 0)
		r = negative_errno();
	if (r == 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0)
		(void)unlink(tmp);
	return r;
}

void bearer_state_remove(const char *link, unsigned mux_id)
{
	char path[4096];

	if (path_of(path, sizeof(path), link, mux_id) == 0)
		(void)unlink(path);
}
