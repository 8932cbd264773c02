/* SPDX-License-Identifier: MIT */
/*
 * The client end of the control socket. The socket is non-blocking after connect() and
 * every wait is a poll() bounded by the caller's deadline, so qmapctl -t holds for a daemon
 * that is stuck, not only for one that is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control-client.h"
#include "macro.h"

struct control_client {
	int fd;
	char *buf; /* received, not yet returned */
	size_t len, alloc;
};

uint64_t control_client_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Milliseconds left for poll(), rounded up so that we never wake up early and spin. */
static int remaining_ms(uint64_t deadline)
{
	uint64_t now = control_client_now(), ms;

	if (now >= deadline)
		return 0;
	ms = (deadline - now + 999) / 1000;
	return ms > 60 * 60 * 1000 ? 60 * 60 * 1000 : (int)ms;
}

int control_client_new(const char *path, uint64_t deadline, struct control_client **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct control_client *c;
	uint64_t left;
	struct timeval tv;
	int flags;

	if (!path || !ret)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();

	/* A blocking connect() waits while the listen queue is full, at most SO_SNDTIMEO. */
	left = deadline > control_client_now() ? deadline - control_client_now() : 1;
	tv.tv_sec = (time_t)(left / 1000000u);
	tv.tv_usec = (suseconds_t)(left % 1000000u);
	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		tv.tv_usec = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : negative_errno();

	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return negative_errno();

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = TAKE_FD(fd);
	*ret = c;
	return 0;
}

struct control_client *control_client_free(struct control_client *c)
{
	if (!c)
		return NULL;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c);
	return NULL;
}

static int send_all(int fd, const char *data, size_t len, uint64_t deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n >= 0) {
			data += n;
			len -= (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return negative_errno();

		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int r = poll(&p, 1, remaining_ms(deadline));

		if (r < 0 && errno != EINTR)
			return negative_errno();
		if (r == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Read until a whole line is buffered; its length without the newline in *ret_len. */
static int read_line(struct control_client *c, uint64_t deadline, size_t *ret_len)
{
	size_t scanned = 0;

	for (;;) {
		char *nl =
			c->len > scanned ? memchr(c->buf + scanned, '\n', c->len - scanned) : NULL;
		ssize_t n;

		if (nl) {
			*ret_len = (size_t)(nl - c->buf);
			return 0;
		}
		scanned = c->len;
		if (c->len >= CONTROL_CLIENT_REPLY_MAX)
			return -EBADMSG;
		if (c->alloc - c->len < 4096) {
			size_t alloc = c->alloc ? c->alloc * 2 : 16384;
			char *p;

			if (alloc > CONTROL_CLIENT_REPLY_MAX + 1)
				alloc = CONTROL_CLIENT_REPLY_MAX + 1;
			p = realloc(c->buf, alloc);
			if (!p)
				return -ENOMEM;
			c->buf = p;
			c->alloc = alloc;
		}

		n = recv(c->fd, c->buf + c->len, c->alloc - c->len, MSG_DONTWAIT);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return negative_errno();

		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int r = poll(&p, 1, remaining_ms(deadline));

		if (r < 0 && errno != EINTR)
			return negative_errno();
		if (r == 0)
			return -ETIMEDOUT;
	}
}

int control_client_call(struct control_client *c, json_t *request, uint64_t deadline,
			json_t **ret_reply)
{
	_cleanup_free_ char *text = NULL;
	json_t *reply;
	size_t len;
	int r, send_r;

	if (!c || !json_is_object(request) || !ret_reply)
		return -EINVAL;
	text = json_dumps(request, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	len = strlen(text);

	send_r = send_all(c->fd, text, len, deadline);
	if (send_r == 0)
		send_r = send_all(c->fd, "\n", 1, deadline);
	if (send_r == -ETIMEDOUT)
		return send_r;
	/* Even when the send failed, qmapd may have said why before it closed (too many
	 * clients): the reply is what the user needs to see. */
	r = read_line(c, deadline, &len);
	if (r < 0)
		return send_r < 0 && r == -ECONNRESET ? send_r : r;

	reply = json_loadb(c->buf, len, 0, NULL);
	memmove(c->buf, c->buf + len + 1, c->len - len - 1);
	c->len -= len + 1;
	if (!json_is_object(reply)) {
		json_decref(reply);
		return -EBADMSG;
	}
	*ret_reply = reply;
	return 0;
}

int control_client_reply(json_t *reply, json_t **ret_result, enum control_code *ret_code,
			 const char **ret_error)
{
	json_t *ok = json_object_get(reply, "ok");
	const char *error;
	int code;

	if (json_is_true(ok)) {
		if (ret_result)
			*ret_result = json_object_get(reply, "result");
		return 1;
	}
	if (!json_is_false(ok))
		return -EBADMSG;
	error = json_string_value(json_object_get(reply, "error"));
	code = control_code_from_string(json_string_value(json_object_get(reply, "code")));
	if (ret_code)
		*ret_code = code < 0 ? CONTROL_CODE_FAILED : (enum control_code)code;
	if (ret_error)
		*ret_error = error ?: "unknown error";
	return 0;
}
