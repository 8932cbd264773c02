/* SPDX-License-Identifier: MIT */
/*
 * The control socket server (the protocol is control-protocol.h, shared with qmapctl).
 *
 * The server owns the sockets; what a request line is answered with is control-answer.c's.
 * It never blocks: every socket is non-blocking, input and output are buffered per client and
 * bounded, and a client that does not keep up is dropped instead of waited for.
 */
#include <assert.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin-auth.h"
#include "control-server.h"
#include "mkdir.h"
#include "log.h"
#include "macro.h"
#include "socket-activation.h"

#define READ_CHUNK	   4096
#define ACCEPTS_PER_WAKEUP 16  /* then let the loop run other watchers */
#define ACCEPT_RETRY	   1.0 /* seconds to wait when out of fds */
#define FALLBACK_REPLY	   "{\"ok\":false,\"error\":\"out of memory\",\"code\":\"failed\"}"

_Static_assert(CONTROL_LISTEN_FDS_START == SOCKET_ACTIVATION_FDS_START,
	       "control-server.h names the service manager's first fd for its tests");

struct client {
	struct control *control;
	struct client *prev, *next;
	int fd;
	ev_io io;
	int events; /* what io is started for */
	ev_timer deadline;
	ev_tstamp request_start; /* first byte of the incomplete request in `in`, or 0 */
	ev_tstamp reply_start;	 /* when `out` last went from empty to pending, or 0 */
	ev_tstamp last_active;	 /* connect, or the last complete request */
	uint64_t requests;	 /* complete requests answered */
	bool privileged;	 /* root or admin-group: may use the reserved slots */
	struct control_peer peer;
	char *in; /* at most CONTROL_REQUEST_MAX + 1: a line and its newline */
	size_t in_len, in_alloc;
	char *out;
	size_t out_off, out_len, out_alloc;
	bool closing; /* send what is queued, then close */
};

struct control {
	struct ev_loop *loop;
	const struct control_ops *ops;
	void *userdata;
	char *path;
	char *admin_group;
	int fd;
	bool activated;
	bool bound; /* we created path: remove it at the end if it is still ours */
	dev_t dev;
	ino_t ino;
	ev_io io;
	ev_timer accept_retry;
	struct client *clients;
	struct control_stats stats;
	double request_timeout, idle_timeout;
	bool full_logged;
};

static void client_free(struct client *cl)
{
	struct control *c;

	if (!cl)
		return;
	c = cl->control;
	ev_io_stop(c->loop, &cl->io);
	ev_timer_stop(c->loop, &cl->deadline);
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		c->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	c->stats.clients--;
	if (c->full_logged && c->stats.clients < CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED)
		c->full_logged = false;
	close(cl->fd);
	free(cl->peer.groups);
	free(cl->in);
	free(cl->out);
	free(cl);
}

static void client_update_events(struct client *cl)
{
	struct ev_loop *loop = cl->control->loop;
	int want = (cl->closing ? 0 : EV_READ) | (cl->out_len > cl->out_off ? EV_WRITE : 0);

	if (want == cl->events)
		return;
	ev_io_stop(loop, &cl->io);
	ev_io_set(&cl->io, cl->fd, want);
	if (want)
		ev_io_start(loop, &cl->io);
	cl->events = want;
}

/*
 * The one deadline that applies now: the pending request's, the pending reply's, or else the
 * idle one. Only a complete request moves it: bytes that do not finish one do not.
 */
static void client_arm(struct client *cl)
{
	struct control *c = cl->control;
	ev_tstamp at = cl->last_active + c->idle_timeout;

	if (cl->request_start > 0 && cl->request_start + c->request_timeout < at)
		at = cl->request_start + c->request_timeout;
	if (cl->reply_start > 0 && cl->reply_start + c->request_timeout < at)
		at = cl->reply_start + c->request_timeout;
	ev_timer_stop(c->loop, &cl->deadline);
	ev_timer_set(&cl->deadline, at > ev_now(c->loop) ? at - ev_now(c->loop) : 0., 0.);
	ev_timer_start(c->loop, &cl->deadline);
}

/* Send what can be sent now. < 0: the client is gone. */
static int client_flush(struct client *cl)
{
	while (cl->out_off < cl->out_len) {
		ssize_t n = send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			log_debug("control client pid %d: send: %s", (int)cl->peer.pid,
				  strerror(errno));
			client_free(cl);
			return -1;
		}
		cl->out_off += (size_t)n;
	}
	if (cl->out_off == cl->out_len) {
		cl->out_off = cl->out_len = 0;
		if (cl->reply_start > 0) {
			cl->reply_start = 0;
			client_arm(cl);
		}
	}
	if (cl->closing && cl->out_len == 0) {
		client_free(cl);
		return -1;
	}
	client_update_events(cl);
	return 0;
}

/* Queue one reply line (reply may be NULL: out of memory). < 0: the client is gone. */
static int client_queue(struct client *cl, json_t *reply)
{
	struct control *c = cl->control;
	_cleanup_free_ char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
	const char *line = text ?: FALLBACK_REPLY;
	size_t n = strlen(line), pending = cl->out_len - cl->out_off;

	if (pending + n + 1 > CONTROL_OUTPUT_MAX) {
		log_warning("control client pid %d: does not read its replies (%zu bytes "
			    "pending), dropped",
			    (int)cl->peer.pid, pending);
		c->stats.clients_dropped++;
		client_free(cl);
		return -1;
	}
	if (cl->out_off > 0) {
		memmove(cl->out, cl->out + cl->out_off, pending);
		cl->out_off = 0;
		cl->out_len = pending;
	}
	if (cl->out_alloc < pending + n + 1) {
		size_t alloc = cl->out_alloc ? cl->out_alloc : 4096;
		char *p;

		while (alloc < pending + n + 1)
			alloc *= 2;
		p = realloc(cl->out, alloc);
		if (!p) {
			log_warning_errno(ENOMEM, "control client pid %d: dropped",
					  (int)cl->peer.pid);
			client_free(cl);
			return -1;
		}
		cl->out = p;
		cl->out_alloc = alloc;
	}
	memcpy(cl->out + cl->out_len, line, n);
	cl->out[cl->out_len + n] = '\n';
	cl->out_len += n + 1;
	if (cl->reply_start == 0) {
		cl->reply_start = ev_now(c->loop);
		client_arm(cl);
	}
	return client_flush(cl);
}

static json_t *control_stats_json(const struct control *c)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "clients",
			 (json_int_t)c->stats.clients, "requests", (json_int_t)c->stats.requests,
			 "errors", (json_int_t)c->stats.errors, "permission-denied",
			 (json_int_t)c->stats.permission_denied, "clients-rejected",
			 (json_int_t)c->stats.clients_rejected, "clients-dropped",
			 (json_int_t)c->stats.clients_dropped, "clients-timed-out",
			 (json_int_t)c->stats.clients_timed_out, "clients-evicted",
			 (json_int_t)c->stats.clients_evicted);
}

/* Answer one line. < 0: the client is gone. */
static int client_handle_line(struct client *cl, const char *line, size_t len)
{
	struct control *c = cl->control;
	_cleanup_(json_decrefp) json_t *reply = NULL;
	json_t *ok, *result;
	int command;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	while (len > 0 && (line[0] == ' ' || line[0] == '\t')) {
		line++;
		len--;
	}
	if (len == 0)
		return 0;

	c->stats.requests++;
	cl->requests++;
	cl->last_active = ev_now(c->loop);
	reply = control_answer_command(c->ops, c->userdata, &cl->peer, c->admin_group, line, len,
				       &command);

	ok = json_object_get(reply, "ok");
	if (json_is_true(ok)) {
		result = json_object_get(reply, "result");
		if (command == CONTROL_COMMAND_STATS && json_is_object(result))
			json_object_set_new(result, "control", control_stats_json(c));
		if (command == CONTROL_COMMAND_RELOAD)
			log_info("control client pid %d (uid %u): reload done", (int)cl->peer.pid,
				 (unsigned)cl->peer.uid);
		else if (control_command_is_change((enum control_command)command))
			log_info("control client pid %d (uid %u): %s %s %lld done",
				 (int)cl->peer.pid, (unsigned)cl->peer.uid,
				 control_command_to_string(command),
				 json_string_value(json_object_get(result, "modem")) ?: "-",
				 (long long)json_integer_value(json_object_get(result, "id")));
		else
			log_debug("control client pid %d: %s", (int)cl->peer.pid,
				  control_command_to_string(command));
	} else {
		const char *code = json_string_value(json_object_get(reply, "code"));
		const char *error = json_string_value(json_object_get(reply, "error"));

		c->stats.errors++;
		if (code && strcmp(code, "permission-denied") == 0) {
			c->stats.permission_denied++;
			log_info("control client pid %d (uid %u): %s", (int)cl->peer.pid,
				 (unsigned)cl->peer.uid, error ?: "permission denied");
		} else if (command >= 0 &&
			   control_command_is_change((enum control_command)command)) {
			log_info("control client pid %d (uid %u): %s refused: %s",
				 (int)cl->peer.pid, (unsigned)cl->peer.uid,
				 control_command_to_string(command), error ?: "?");
		} else {
			log_debug("control client pid %d: %s", (int)cl->peer.pid, error ?: "?");
		}
	}
	return client_queue(cl, reply);
}

/* Answer every complete line in the input buffer. < 0: the client is gone. */
static int client_process_lines(struct client *cl, bool eof)
{
	size_t start = 0;
	char *nl;

	while (!cl->closing && (nl = memchr(cl->in + start, '\n', cl->in_len - start))) {
		size_t len = (size_t)(nl - (cl->in + start));

		if (client_handle_line(cl, cl->in + start, len) < 0)
			return -1;
		start += len + 1;
	}
	if (start > 0) {
		memmove(cl->in, cl->in + start, cl->in_len - start);
		cl->in_len -= start;
	}
	if (cl->closing)
		return 0;

	if (cl->in_len > CONTROL_REQUEST_MAX) {
		_cleanup_(json_decrefp) json_t *reply = NULL;

		log_warning("control client pid %d: request longer than %d bytes, closing",
			    (int)cl->peer.pid, CONTROL_REQUEST_MAX);
		cl->control->stats.requests++;
		cl->control->stats.errors++;
		cl->control->stats.clients_dropped++;
		reply = control_error_reply(CONTROL_CODE_INVALID_REQUEST,
					    "request longer than %d bytes", CONTROL_REQUEST_MAX);
		cl->closing = true;
		cl->in_len = 0;
		return client_queue(cl, reply);
	}
	if (eof) {
		/* The last request need not end in a newline. */
		if (cl->in_len > 0 && client_handle_line(cl, cl->in, cl->in_len) < 0)
			return -1;
		cl->in_len = 0;
		cl->closing = true;
		return client_flush(cl);
	}
	return 0;
}

static int client_process(struct client *cl, bool eof)
{
	uint64_t requests = cl->requests;

	if (client_process_lines(cl, eof) < 0)
		return -1;
	/* What is left starts the next request: its deadline runs from its first byte. */
	if (cl->in_len == 0)
		cl->request_start = 0;
	else if (cl->request_start == 0 || cl->requests != requests)
		cl->request_start = ev_now(cl->control->loop);
	client_arm(cl);
	return 0;
}

static void client_read(struct client *cl)
{
	size_t max = CONTROL_REQUEST_MAX + 1;
	ssize_t n;

	if (cl->in_alloc - cl->in_len < READ_CHUNK && cl->in_alloc < max) {
		size_t alloc = cl->in_alloc ? cl->in_alloc * 2 : READ_CHUNK;
		char *p;

		if (alloc > max)
			alloc = max;
		p = realloc(cl->in, alloc);
		if (!p) {
			log_warning_errno(ENOMEM, "control client pid %d: dropped",
					  (int)cl->peer.pid);
			client_free(cl);
			return;
		}
		cl->in = p;
		cl->in_alloc = alloc;
	}

	/* Not closing, so at most CONTROL_REQUEST_MAX bytes wait: recv() has room for one more,
	 * and its 0 is the peer's end, never a full buffer. */
	assert(cl->in_len < cl->in_alloc && cl->in_alloc <= max);
	n = recv(cl->fd, cl->in + cl->in_len, cl->in_alloc - cl->in_len, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		log_debug("control client pid %d: recv: %s", (int)cl->peer.pid, strerror(errno));
		client_free(cl);
		return;
	}
	if (n > 0)
		cl->in_len += (size_t)n;
	client_process(cl, n == 0);
}

static void client_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *cl = w->data;

	(void)loop;
	if ((revents & EV_WRITE) && client_flush(cl) < 0)
		return;
	if ((revents & EV_READ) && !cl->closing)
		client_read(cl);
}

static void client_on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct client *cl = w->data;
	struct control *c = cl->control;
	const char *why = "idle";

	(void)loop;
	(void)revents;
	if (cl->request_start > 0)
		why = "incomplete request";
	else if (cl->reply_start > 0)
		why = "unread reply";
	/* Debug only: whoever trickles bytes must not be able to fill the log either. */
	log_debug("control client pid %d (uid %u): %s past its deadline, closing",
		  (int)cl->peer.pid, (unsigned)cl->peer.uid, why);
	c->stats.clients_timed_out++;
	client_free(cl);
}

static int peer_credentials(int fd, struct control_peer *ret)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return negative_errno();
	if (len != sizeof(cred))
		return -EIO;
	*ret = (struct control_peer){
		.pid = cred.pid,
		.uid = cred.uid,
		.gid = cred.gid,
		.may_change = -1,
	};

#ifdef SO_PEERGROUPS
	for (socklen_t size = 32 * sizeof(gid_t); size <= 65536 * sizeof(gid_t);) {
		gid_t *groups = malloc(size ?: sizeof(gid_t));
		socklen_t got = size;

		if (!groups)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &got) == 0) {
			ret->groups = groups;
			ret->n_groups = got / sizeof(gid_t);
			ret->groups_known = true;
			break;
		}
		free(groups);
		/* The kernel says how much it needs. */
		if (errno != ERANGE || got <= size)
			break;
		size = got;
	}
#endif
	return 0;
}

static void control_reject(struct control *c, int fd, const char *why)
{
	_cleanup_(json_decrefp) json_t *reply = control_error_reply(CONTROL_CODE_FAILED, "%s", why);
	_cleanup_free_ char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;

	c->stats.clients_rejected++;
	if (text) {
		/* Best effort: a socket just accepted has room for one short line. */
		struct iovec iov[] = {
			{ .iov_base = text, .iov_len = strlen(text) },
			{ .iov_base = (char *)"\n", .iov_len = 1 },
		};
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = ARRAY_SIZE(iov) };

		(void)!sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	close(fd);
}

/*
 * The unprivileged client to close for a privileged one: one with nothing pending before
 * one in the middle of a request, the one quiet longest first. NULL: every client is
 * privileged.
 */
static struct client *control_eviction_victim(struct control *c)
{
	struct client *victim = NULL;
	bool victim_idle = false;

	for (struct client *cl = c->clients; cl; cl = cl->next) {
		bool idle = cl->request_start == 0 && cl->reply_start == 0;

		if (cl->privileged)
			continue;
		if (!victim || (idle && !victim_idle) ||
		    (idle == victim_idle && cl->last_active < victim->last_active)) {
			victim = cl;
			victim_idle = idle;
		}
	}
	return victim;
}

static void control_evict(struct control *c, struct client *cl)
{
	_cleanup_(json_decrefp) json_t *reply = control_error_reply(
		CONTROL_CODE_FAILED, "closed by qmapd to make room for a privileged client");
	_cleanup_free_ char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;

	log_debug("control client pid %d (uid %u): closed to make room for a privileged client",
		  (int)cl->peer.pid, (unsigned)cl->peer.uid);
	if (text && cl->out_len == cl->out_off) {
		/* Best effort, as for a rejected client; a reply half sent is not interrupted. */
		struct iovec iov[] = {
			{ .iov_base = text, .iov_len = strlen(text) },
			{ .iov_base = (char *)"\n", .iov_len = 1 },
		};
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = ARRAY_SIZE(iov) };

		(void)!sendmsg(cl->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	c->stats.clients_evicted++;
	client_free(cl);
}

/*
 * Whether a new peer may have a slot, evicting an unprivileged client for a privileged one
 * when every slot is taken. false: rejected (told why, counted).
 */
static bool control_admit(struct control *c, int fd, struct control_peer *peer, bool *ret_priv)
{
	unsigned same_uid = 0, unprivileged = 0;
	char why[128];
	bool priv;

	for (struct client *cl = c->clients; cl; cl = cl->next) {
		same_uid += cl->peer.uid == peer->uid;
		unprivileged += !cl->privileged;
	}
	if (peer->uid != 0 && same_uid >= CONTROL_CLIENTS_PER_UID) {
		snprintf(why, sizeof(why), "too many connections to qmapd from uid %u (limit %d)",
			 (unsigned)peer->uid, CONTROL_CLIENTS_PER_UID);
		control_reject(c, fd, why);
		return false;
	}
	/* The group lookup is cached in peer and decides its change requests later anyway. */
	priv = control_peer_may_change(peer, c->admin_group);
	if (!priv && (unprivileged >= CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED ||
		      c->stats.clients >= CONTROL_CLIENTS_MAX)) {
		if (!c->full_logged)
			log_warning("control socket %s: %d unprivileged clients connected, "
				    "refusing more (%d slots kept for root and admin-group)",
				    c->path, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED,
				    CONTROL_CLIENTS_RESERVED);
		c->full_logged = true;
		control_reject(c, fd, "too many connections to qmapd");
		return false;
	}
	if (c->stats.clients >= CONTROL_CLIENTS_MAX) {
		struct client *victim = control_eviction_victim(c);

		if (!victim) {
			control_reject(c, fd, "too many connections to qmapd");
			return false;
		}
		control_evict(c, victim);
	}
	*ret_priv = priv;
	return true;
}

static void control_add_client(struct control *c, int fd)
{
	struct client *cl;
	struct control_peer peer;
	bool priv;
	int r;

	r = peer_credentials(fd, &peer);
	if (r < 0) {
		log_warning_errno(r, "control socket %s: cannot get the credentials of a client",
				  c->path);
		control_reject(c, fd, "cannot tell who you are");
		return;
	}
	if (!control_admit(c, fd, &peer, &priv)) {
		free(peer.groups);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		free(peer.groups);
		control_reject(c, fd, "out of memory");
		return;
	}
	cl->control = c;
	cl->fd = fd;
	cl->peer = peer;
	cl->privileged = priv;
	cl->last_active = ev_now(c->loop);
	ev_io_init(&cl->io, client_on_io, fd, EV_READ);
	cl->io.data = cl;
	cl->events = EV_READ;
	ev_io_start(c->loop, &cl->io);
	ev_init(&cl->deadline, client_on_deadline);
	cl->deadline.data = cl;
	client_arm(cl);

	cl->next = c->clients;
	if (c->clients)
		c->clients->prev = cl;
	c->clients = cl;
	c->stats.clients++;
	log_debug("control client pid %d (uid %u gid %u%s): connected", (int)peer.pid,
		  (unsigned)peer.uid, (unsigned)peer.gid, priv ? ", privileged" : "");
}

static void control_on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control *c = w->data;

	(void)revents;
	for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd >= 0) {
			control_add_client(c, fd);
			continue;
		}
		switch (errno) {
		case EAGAIN:
		case EINTR:
			return;
		case ECONNABORTED:
		case EPROTO:
			continue;
		case EMFILE:
		case ENFILE:
		case ENOBUFS:
		case ENOMEM:
			/* The pending connection stays readable: retry later, not in a loop. */
			log_warning_errno(errno,
					  "control socket %s: cannot accept, retrying in %.0f s",
					  c->path, ACCEPT_RETRY);
			ev_io_stop(loop, &c->io);
			ev_timer_set(&c->accept_retry, ACCEPT_RETRY, 0.);
			ev_timer_start(loop, &c->accept_retry);
			return;
		default:
			log_warning_errno(errno, "control socket %s: accept", c->path);
			return;
		}
	}
}

static void control_on_accept_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct control *c = w->data;

	(void)revents;
	ev_io_start(loop, &c->io);
}

/* systemd's socket, if it passed one of ours. */
static int listen_fd_from_systemd(void)
{
	int n = socket_activation_listen_fds();

	if (n < 0) {
		log_warning_errno(
			n,
			"control socket: ignoring invalid LISTEN_PID='%s' LISTEN_FDS='%s' "
			"from the service manager",
			getenv("LISTEN_PID") ?: "", getenv("LISTEN_FDS") ?: "");
		return -ENOENT;
	}
	for (int fd = SOCKET_ACTIVATION_FDS_START; fd < SOCKET_ACTIVATION_FDS_START + n; fd++) {
		int flags;

		if (!socket_activation_is_unix_stream_listener(fd))
			continue;
		/* systemd passes them blocking unless the unit says NonBlocking=yes. */
		flags = fcntl(fd, F_GETFL);
		if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
			return log_error_errno(
				errno, "control socket: cannot set up fd %d from systemd", fd);
		return fd;
	}
	if (n > 0)
		log_warning("control socket: systemd passed %d fd(s), none a listening "
			    "AF_UNIX stream socket; binding one",
			    n);
	return -ENOENT;
}

/* Remove a socket nobody listens on any more; refuse to take over a live one. */
static int remove_stale_socket(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, r;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : negative_errno();
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return negative_errno();
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	if (r == 0 || errno == EAGAIN) {
		close(fd);
		return -EADDRINUSE;
	}
	close(fd);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return negative_errno();
	return 0;
}

/*
 * Let admin-group connect without taking the socket from its group: an ACL entry
 * (system.posix_acl_access, the kernel's format, so no libacl) next to the 0660 bits. A chown
 * to the admin group, as before, locked out the readers in the socket's group.
 */
static void control_grant_admin_group(struct control *c, const char *path)
{
	/* ACL_USER_OBJ, ACL_GROUP_OBJ (the socket's group), ACL_GROUP, ACL_MASK, ACL_OTHER. */
	static const uint16_t tags[] = { 0x01, 0x04, 0x08, 0x10, 0x20 };
	uint8_t buf[4 + ARRAY_SIZE(tags) * 8], *p = buf + 4;
	struct stat st;
	gid_t gid;
	int r;

	if (!c->admin_group[0])
		return;
	r = admin_group_lookup(c->admin_group, &gid);
	if (r < 0) {
		log_warning_errno(
			r,
			"control socket %s: admin group '%s' not found; its members cannot "
			"connect unless they are in the socket's group",
			path, c->admin_group);
		return;
	}
	if (stat(path, &st) == 0 && st.st_gid == gid)
		return; /* the socket's group already */
	/* The kernel's format is little endian: version 2, then tag, perm, id per entry. */
	memset(buf, 0, sizeof(buf));
	buf[0] = 2;
	for (size_t i = 0; i < ARRAY_SIZE(tags); i++, p += 8) {
		uint32_t id = tags[i] == 0x08 ? (uint32_t)gid : UINT32_MAX;

		p[0] = (uint8_t)tags[i];
		p[2] = tags[i] == 0x20 ? 0 : 6; /* rw, nothing for others */
		for (int b = 0; b < 4; b++)
			p[4 + b] = (uint8_t)(id >> (8 * b));
	}
	if (setxattr(path, "system.posix_acl_access", buf, sizeof(buf), 0) < 0)
		log_warning_errno(
			errno,
			"control socket %s: cannot grant group '%s' access (ACL); its members "
			"cannot connect unless they are in the socket's group",
			path, c->admin_group);
}

static int control_bind(struct control *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (strlen(c->path) >= sizeof(sa.sun_path))
		return log_error_errno(ENAMETOOLONG, "control socket %s", c->path);
	strcpy(sa.sun_path, c->path);

	r = mkdir_parents(c->path, 0755);
	if (r < 0)
		return log_error_errno(r, "control socket %s: cannot create its directory",
				       c->path);
	r = remove_stale_socket(&sa);
	if (r == -EADDRINUSE) {
		log_error("control socket %s: another process listens there (is qmapd already "
			  "running?)",
			  c->path);
		return r;
	}
	if (r == -EEXIST) {
		log_error("control socket %s: exists and is not a socket", c->path);
		return r;
	}
	if (r < 0)
		return log_error_errno(r, "control socket %s: cannot remove the stale socket",
				       c->path);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(errno, "control socket %s: socket", c->path);
	if (bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0)
		return log_error_errno(errno, "control socket %s: bind", c->path);
	c->bound = true;
	if (stat(c->path, &st) == 0) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
	/* Not yet listening, so nobody can connect before the mode is right. */
	if (chmod(c->path, 0660) < 0)
		return log_error_errno(errno, "control socket %s: chmod", c->path);
	control_grant_admin_group(c, c->path);
	if (listen(fd, SOMAXCONN) < 0)
		return log_error_errno(errno, "control socket %s: listen", c->path);
	return TAKE_FD(fd);
}

int control_new(struct ev_loop *loop, const struct control_ops *ops, void *userdata,
		const char *path, const char *admin_group, struct control **ret)
{
	struct control *c;
	int fd;

	if (!loop || !ops || !path || !path[0] || !ret)
		return -EINVAL;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->ops = ops;
	c->userdata = userdata;
	c->fd = -1;
	c->path = strdup(path);
	c->admin_group = strdup(admin_group ?: "");
	c->request_timeout = CONTROL_REQUEST_TIMEOUT;
	c->idle_timeout = CONTROL_IDLE_TIMEOUT;
	if (!c->path || !c->admin_group) {
		control_free(c);
		return -ENOMEM;
	}

	fd = listen_fd_from_systemd();
	if (fd >= 0) {
		c->activated = true;
	} else {
		fd = control_bind(c);
		if (fd < 0) {
			control_free(c);
			return fd;
		}
	}
	c->fd = fd;
	if (c->activated) {
		/* systemd's socket: the same ACL entry on the path it is bound to, if it has one. */
		struct sockaddr_un sa = { 0 };
		socklen_t len = sizeof(sa);

		if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 &&
		    sa.sun_family == AF_UNIX && len > offsetof(struct sockaddr_un, sun_path) &&
		    sa.sun_path[0] == '/') {
			sa.sun_path[sizeof(sa.sun_path) - 1] = '\0';
			control_grant_admin_group(c, sa.sun_path);
		}
	}

	ev_io_init(&c->io, control_on_accept, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_init(&c->accept_retry, control_on_accept_retry);
	c->accept_retry.data = c;

	if (c->activated)
		log_info("control socket: listening on fd %d from systemd", fd);
	else
		log_info("control socket %s: listening%s%s%s", path,
			 c->admin_group[0] ? " (admin group '" : "", c->admin_group,
			 c->admin_group[0] ? "')" : "");
	*ret = c;
	return 0;
}

struct control *control_free(struct control *c)
{
	struct stat st;

	if (!c)
		return NULL;
	while (c->clients)
		client_free(c->clients);
	if (c->fd >= 0) {
		ev_io_stop(c->loop, &c->io);
		ev_timer_stop(c->loop, &c->accept_retry);
		/* systemd keeps the socket for the next start; a restart must find it. */
		if (!c->activated)
			close(c->fd);
	}
	/* Only our own socket: another qmapd may have replaced it meanwhile. */
	if (c->bound && stat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlink(c->path);
	free(c->path);
	free(c->admin_group);
	free(c);
	return NULL;
}

void control_get_stats(const struct control *c, struct control_stats *ret)
{
	*ret = c->stats;
}

void control_set_timeouts(struct control *c, double request_timeout, double idle_timeout)
{
	c->request_timeout = request_timeout;
	c->idle_timeout = idle_timeout;
}

bool control_is_activated(const struct control *c)
{
	return c && c->activated;
}
