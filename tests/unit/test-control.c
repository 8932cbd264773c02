/* SPDX-License-Identifier: MIT */
/*
 * control: the request parser and control_answer() on their own, then a server on a socket
 * in a temporary directory with a stub in place of the manager: round trips, mux-add
 * settings reaching the stub as a struct config_mux, every kind of bad request, an
 * oversize request, pipelining, the peer checks from processes that dropped to nobody
 * (root only), a client that never reads, the client limit, clients that trickle bytes
 * or hold 1000 connections against root (reserved slots, per-uid limit, eviction), stale
 * sockets and socket activation. The server runs in this process; the test's clients pump its loop while they
 * wait.
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "control-server.h"
#include "macro.h"
#include "test-case.h"

#define NOBODY 65534

static struct ev_loop *loop;
static char dir[] = "/tmp/test-control-XXXXXX";
static char sock_path[256];
static char admin_group[64];
static gid_t admin_gid;

/* The manager, as far as the control socket can tell: modems "a" and, with two, "b". */
static struct stub {
	unsigned status_calls;
	size_t status_padding; /* bytes of filler in each status result */
	unsigned adds;
	struct config_mux added;
	char added_to[16]; /* the modem name the last mux-add was routed with, "" for none */
	unsigned dels, deleted;
	unsigned reloads;
	bool two_modems;
} stub;

/* The manager's routing: a known name, no name with one modem, or no name for a listing. */
static int stub_route(const struct stub *s, const char *modem, bool need_one, char *err,
		      size_t errlen)
{
	if (modem && strcmp(modem, "a") != 0 && !(s->two_modems && strcmp(modem, "b") == 0)) {
		snprintf(err, errlen, "no modem '%s'", modem);
		return -ENODEV;
	}
	if (!modem && need_one && s->two_modems) {
		snprintf(err, errlen, "2 modems: name one with -m");
		return -ENOTUNIQ;
	}
	return 0;
}

static int stub_status(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	struct stub *s = userdata;
	json_t *status;
	int r = stub_route(s, modem, false, err, errlen);

	if (r < 0)
		return r;
	s->status_calls++;
	status = json_pack("{s:[{s:s, s:{s:s}, s:[]}]}", "modems", "name", modem ?: "a", "modem",
			   "state", "ready", "muxes");
	if (status && s->status_padding) {
		char *pad = malloc(s->status_padding + 1);

		if (!pad) {
			json_decref(status);
			return -ENOMEM;
		}
		memset(pad, 'p', s->status_padding);
		pad[s->status_padding] = '\0';
		json_object_set_new(status, "padding", json_string(pad));
		free(pad);
	}
	*ret = status;
	return status ? 0 : -ENOMEM;
}

static int stub_mux_list(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r = stub_route(userdata, modem, false, err, errlen);

	if (r < 0)
		return r;
	*ret = json_pack("{s:[{s:s, s:i, s:s, s:s, s:s}]}", "muxes", "modem", "a", "id", 1,
			 "interface", "qmap1", "state", "connected", "apn", "internet");
	return 0;
}

static int stub_stats(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	int r = stub_route(userdata, modem, false, err, errlen);

	if (r < 0)
		return r;
	*ret = json_pack("{s:[{s:s, s:{s:i}}]}", "modems", "name", "a", "device", "rx-transfers",
			 42);
	return 0;
}

static int stub_mux_add(void *userdata, const char *modem, const struct config_mux *cfg,
			json_t **ret, char *err, size_t errlen)
{
	struct stub *s = userdata;
	int r = stub_route(s, modem, true, err, errlen);

	if (r < 0)
		return r;
	if (cfg->id == 9) {
		snprintf(err, errlen, "mux 9 exists");
		return -EEXIST;
	}
	if (cfg->id == 10)
		return -EIO; /* no message: the server says what failed */
	s->adds++;
	s->added = *cfg;
	snprintf(s->added_to, sizeof(s->added_to), "%s", modem ?: "");
	*ret = json_pack("{s:s, s:i, s:s}", "modem", modem ?: "a", "id", (int)cfg->id, "interface",
			 cfg->interface);
	return 0;
}

static int stub_mux_del(void *userdata, const char *modem, unsigned id, json_t **ret, char *err,
			size_t errlen)
{
	struct stub *s = userdata;
	int r = stub_route(s, modem, true, err, errlen);

	if (r < 0)
		return r;
	if (id == 7)
		return -ENOENT;
	s->dels++;
	s->deleted = id;
	*ret = json_pack("{s:s, s:i}", "modem", modem ?: "a", "id", (int)id);
	return 0;
}

static int stub_reload(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	struct stub *s = userdata;
	int r = stub_route(s, modem, false, err, errlen);

	if (r < 0)
		return r;
	s->reloads++;
	if (s->reloads == 2) {
		snprintf(err, errlen, "qmapd.conf:3: invalid ip-type 'ipv5' in [mux.1]");
		return -EINVAL;
	}
	*ret = json_object();
	return 0;
}

static const struct control_ops stub_ops = {
	.status = stub_status,
	.mux_list = stub_mux_list,
	.stats = stub_stats,
	.mux_add = stub_mux_add,
	.mux_del = stub_mux_del,
	.reload = stub_reload,
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A test client: a non-blocking socket and what it received. */
struct tclient {
	int fd;
	char *buf;
	size_t len, alloc;
	bool eof;
};

static int tc_connect(struct tclient *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	*c = (struct tclient){ .fd = -1 };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(c->fd);
		c->fd = -1;
		return r;
	}
	return 0;
}

static void tc_close(struct tclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	*c = (struct tclient){ .fd = -1 };
}

/* Run the server once, then take what arrived. */
static void tc_pump(struct tclient *c)
{
	struct pollfd p = { .fd = c ? c->fd : -1, .events = POLLIN };

	ev_run(loop, EVRUN_NOWAIT);
	if (!c || c->eof)
		return;
	if (poll(&p, 1, 2) <= 0)
		return;
	for (;;) {
		ssize_t n;

		if (c->alloc - c->len < 65536) {
			c->alloc = c->alloc ? c->alloc * 2 : 131072;
			c->buf = realloc(c->buf, c->alloc);
			if (!c->buf)
				abort();
		}
		n = recv(c->fd, c->buf + c->len, c->alloc - c->len, MSG_DONTWAIT);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->eof = true;
		return;
	}
}

static int tc_send(struct tclient *c, const char *data, size_t len)
{
	uint64_t end = now_ms() + 5000;

	while (len > 0 && now_ms() < end) {
		ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			data += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -errno;
		}
		tc_pump(c);
	}
	return len == 0 ? 0 : -ETIMEDOUT;
}

/* The next reply line as JSON; NULL on EOF or after 5 s. */
static json_t *tc_reply(struct tclient *c)
{
	uint64_t end = now_ms() + 5000;

	while (now_ms() < end) {
		char *nl = c->buf ? memchr(c->buf, '\n', c->len) : NULL;

		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			json_t *j = json_loadb(c->buf, n, 0, NULL);

			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			if (!j)
				fprintf(stderr, "unparsable reply line\n");
			return j;
		}
		if (c->eof)
			return NULL;
		tc_pump(c);
	}
	fprintf(stderr, "no reply within 5 s\n");
	return NULL;
}

static json_t *tc_rpc(struct tclient *c, const char *request)
{
	char line[4096];

	snprintf(line, sizeof(line), "%s\n", request);
	if (tc_send(c, line, strlen(line)) < 0)
		return NULL;
	return tc_reply(c);
}

/* True once the server has closed the connection (everything received is dropped). */
static bool tc_wait_eof(struct tclient *c)
{
	uint64_t end = now_ms() + 5000;

	while (!c->eof && now_ms() < end)
		tc_pump(c);
	return c->eof;
}

static bool reply_ok(json_t *reply)
{
	return json_is_true(json_object_get(reply, "ok")) &&
	       json_is_object(json_object_get(reply, "result"));
}

#define EXPECT_OK(reply)                                                                   \
	do {                                                                               \
		json_t *_r = (reply);                                                      \
		if (!reply_ok(_r)) {                                                       \
			char *_s = _r ? json_dumps(_r, JSON_COMPACT) : NULL;               \
			fprintf(stderr, "%s:%d: expected an ok reply, got %s\n", __FILE__, \
				__LINE__, _s ?: "nothing");                                \
			free(_s);                                                          \
			test_failures++;                                                   \
		}                                                                          \
	} while (0)

static void expect_error_at(const char *file, int line, json_t *reply, const char *code,
			    const char *needle)
{
	const char *c = json_string_value(json_object_get(reply, "code"));
	const char *e = json_string_value(json_object_get(reply, "error"));

	if (!json_is_false(json_object_get(reply, "ok")) || !c || strcmp(c, code) != 0 || !e ||
	    !strstr(e, needle) || json_object_size(reply) != 3) {
		char *s = reply ? json_dumps(reply, JSON_COMPACT) : NULL;

		fprintf(stderr, "%s:%d: expected a %s error with \"%s\", got %s\n", file, line,
			code, needle, s ?: "nothing");
		free(s);
		test_failures++;
	}
}

#define EXPECT_ERROR(reply, code, needle) expect_error_at(__FILE__, __LINE__, reply, code, needle)

static void dir_remove(void)
{
	char sub[300];

	if (loop)
		ev_loop_destroy(loop);
	unlink(sock_path);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	rmdir(sub);
	rmdir(dir);
}

/*
 * Once: the directory, the loop and fd 3 held for the activation case (a placeholder it
 * replaces, so that neither the loop nor a socket of another case takes that number). Every
 * case: a fresh stub, no LISTEN_* variables and our own primary group as the admin group:
 * then the test works as any user, and nobody (as root can become) is outside it.
 */
TEST_SETUP()
{
	struct group *gr;

	if (!loop) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && fd != CONTROL_LISTEN_FDS_START)
			close(fd);
		signal(SIGPIPE, SIG_IGN);
		if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
			TEST_SKIP("cannot make a temporary directory: %s", strerror(errno));
		snprintf(sock_path, sizeof(sock_path), "%s/control", dir);
		loop = ev_loop_new(EVFLAG_AUTO);
		if (!loop)
			TEST_SKIP("cannot create an event loop");
		atexit(dir_remove);
	}
	stub = (struct stub){};
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	admin_gid = getegid();
	gr = getgrgid(admin_gid);
	if (!gr)
		TEST_SKIP("gid %u has no name", (unsigned)admin_gid);
	snprintf(admin_group, sizeof(admin_group), "%s", gr->gr_name);
}

/* The parser alone: the messages a client sees. */
TEST(parse)
{
	static const struct {
		const char *line;
		enum control_code code;
		const char *message;
	} bad[] = {
		{ "", CONTROL_CODE_INVALID_REQUEST, "invalid JSON at byte 0: " },
		{ "{", CONTROL_CODE_INVALID_REQUEST, "invalid JSON" },
		{ "[]", CONTROL_CODE_INVALID_REQUEST, "a request must be a JSON object" },
		{ "{} {}", CONTROL_CODE_INVALID_REQUEST, "invalid JSON" },
		{ "{}", CONTROL_CODE_INVALID_REQUEST, "missing \"command\"" },
		{ "{\"command\":1}", CONTROL_CODE_INVALID_REQUEST, "\"command\" must be a string" },
		{ "{\"command\":\"halt\"}", CONTROL_CODE_INVALID_REQUEST,
		  "unknown command 'halt': expected status, mux-list, stats, mux-add, mux-del or "
		  "reload" },
		{ "{\"command\":\"status\",\"command\":\"reload\"}", CONTROL_CODE_INVALID_REQUEST,
		  "invalid JSON" },
		{ "{\"command\":\"status\",\"id\":1}", CONTROL_CODE_INVALID_REQUEST,
		  "unexpected member 'id' in a status request" },
		{ "{\"command\":\"mux-del\",\"id\":1,\"settings\":{}}",
		  CONTROL_CODE_INVALID_REQUEST,
		  "unexpected member 'settings' in a mux-del request" },
		{ "{\"command\":\"mux-del\"}", CONTROL_CODE_INVALID_REQUEST,
		  "mux-del needs an \"id\"" },
		{ "{\"command\":\"status\",\"modem\":1}", CONTROL_CODE_INVALID_REQUEST,
		  "\"modem\" must be a string" },
		{ "{\"command\":\"status\",\"modem\":\"\"}", CONTROL_CODE_INVALID_ARGUMENT,
		  "invalid modem name '': expected 1 to 11 of a-z, 0-9, '_' and '-'" },
		{ "{\"command\":\"mux-del\",\"id\":1,\"modem\":\"Modem0\"}",
		  CONTROL_CODE_INVALID_ARGUMENT, "invalid modem name 'Modem0'" },
		{ "{\"command\":\"stats\",\"modem\":\"twelve-chars\"}",
		  CONTROL_CODE_INVALID_ARGUMENT, "invalid modem name 'twelve-chars'" },
		{ "{\"command\":\"stats\",\"modem\":\"a/b\"}", CONTROL_CODE_INVALID_ARGUMENT,
		  "invalid modem name 'a/b'" },
		{ "{\"command\":\"mux-del\",\"id\":\"3\"}", CONTROL_CODE_INVALID_REQUEST,
		  "\"id\" must be an integer" },
		{ "{\"command\":\"mux-del\",\"id\":3.0}", CONTROL_CODE_INVALID_REQUEST,
		  "\"id\" must be an integer" },
		{ "{\"command\":\"mux-del\",\"id\":0}", CONTROL_CODE_INVALID_ARGUMENT,
		  "invalid mux id 0: expected 1..254" },
		{ "{\"command\":\"mux-add\",\"id\":255}", CONTROL_CODE_INVALID_ARGUMENT,
		  "invalid mux id 255: expected 1..254" },
		{ "{\"command\":\"mux-add\",\"id\":-9223372036854775807}",
		  CONTROL_CODE_INVALID_ARGUMENT, "invalid mux id -9223372036854775807" },
		{ "{\"command\":\"mux-add\",\"id\":1,\"settings\":[]}",
		  CONTROL_CODE_INVALID_REQUEST, "\"settings\" must be an object" },
		{ "{\"command\":\"mux-add\",\"id\":1,\"settings\":{\"bogus\":\"1\"}}",
		  CONTROL_CODE_INVALID_ARGUMENT, "unknown key 'bogus'" },
		{ "{\"command\":\"mux-add\",\"id\":1,\"settings\":{\"mtu\":1400}}",
		  CONTROL_CODE_INVALID_ARGUMENT, "value of 'mtu' must be a string" },
		{ "{\"command\":\"mux-add\",\"id\":1,\"settings\":{\"ip-type\":\"ipv5\"}}",
		  CONTROL_CODE_INVALID_ARGUMENT,
		  "invalid ip-type 'ipv5': expected ipv4, ipv6 or ipv4v6" },
		{ "{\"command\":\"mux-add\",\"id\":1,\"settings\":{\"mtu\":\"576\"}}",
		  CONTROL_CODE_INVALID_ARGUMENT,
		  "invalid mtu '576': ip-type 'ipv4v6' needs at least 1280" },
		{ "{\"command\":\"mux-add\",\"id\":1,\"settings\":{\"apn\":\"a\",\"apn\":\"b\"}}",
		  CONTROL_CODE_INVALID_REQUEST, "invalid JSON" },
		{ "{\"command\":\"status\\u0000\"}", CONTROL_CODE_INVALID_REQUEST, "invalid JSON" },
	};
	struct control_request req;
	enum control_code code;
	char err[CONTROL_ERROR_MAX];
	const char *add = "{\"command\":\"mux-add\",\"id\":4,\"settings\":{\"apn\":\"ims\","
			  "\"ip-type\":\"ipv6\",\"interface\":\"wwan4\",\"autoconnect\":\"no\"}}";

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		code = _CONTROL_CODE_MAX;
		if (control_request_parse(bad[i].line, strlen(bad[i].line), &req, &code, err,
					  sizeof(err)) != -EINVAL ||
		    code != bad[i].code || strncmp(err, bad[i].message, strlen(bad[i].message))) {
			fprintf(stderr, "%s:%d: case %zu (%s): got code %d, '%s'\n", __FILE__,
				__LINE__, i, bad[i].line, (int)code, err);
			test_failures++;
		}
	}

	/* A NUL byte inside the line is not the end of it. */
	EXPECT_EQ(control_request_parse("{\"command\":\"status\"}\0x", 22, &req, &code, err,
					sizeof(err)),
		  -EINVAL);
	/* Not NUL-terminated: only len bytes are looked at. */
	EXPECT_EQ(control_request_parse("{\"command\":\"status\"}garbage", 20, &req, &code, err,
					sizeof(err)),
		  0);
	EXPECT_EQ(req.command, CONTROL_COMMAND_STATUS);

	EXPECT_EQ(control_request_parse(add, strlen(add), &req, &code, err, sizeof(err)), 0);
	EXPECT_EQ(req.command, CONTROL_COMMAND_MUX_ADD);
	EXPECT_EQ(req.id, 4);
	EXPECT_EQ(req.mux.id, 4);
	EXPECT_TRUE(req.mux.present);
	EXPECT_STR_EQ(req.mux.apn, "ims");
	EXPECT_EQ(req.mux.ip_type, CONFIG_IP_TYPE_IPV6);
	EXPECT_STR_EQ(req.mux.interface, "wwan4");
	EXPECT_EQ(req.mux.autoconnect, false);
	EXPECT_EQ(req.mux.mtu, CONFIG_MTU_DEFAULT);

	EXPECT_EQ(control_request_parse("{\"command\":\"mux-add\",\"id\":254}", 30, &req, &code,
					err, sizeof(err)),
		  0);
	EXPECT_STR_EQ(req.mux.interface, "qmap254");
	EXPECT_STR_EQ(req.modem, "");

	/* "modem" in any command; the longest name fits. */
	EXPECT_EQ(control_request_parse("{\"command\":\"mux-add\",\"id\":3,\"modem\":\"b\"}", 40,
					&req, &code, err, sizeof(err)),
		  0);
	EXPECT_STR_EQ(req.modem, "b");
	EXPECT_EQ(req.id, 3);
	for (unsigned c = 0; c < _CONTROL_COMMAND_MAX; c++) {
		char line[128];

		snprintf(line, sizeof(line), "{\"command\":\"%s\",%s\"modem\":\"eleven_ch-1\"}",
			 control_command_to_string(c),
			 c == CONTROL_COMMAND_MUX_ADD || c == CONTROL_COMMAND_MUX_DEL ? "\"id\":2,"
										      : "");
		EXPECT_EQ(control_request_parse(line, strlen(line), &req, &code, err, sizeof(err)),
			  0);
		EXPECT_STR_EQ(req.modem, "eleven_ch-1");
	}
	EXPECT_STR_EQ(control_code_to_string(CONTROL_CODE_NO_SUCH_MODEM), "no-such-modem");
	EXPECT_STR_EQ(control_code_to_string(CONTROL_CODE_AMBIGUOUS_MODEM), "ambiguous-modem");
	EXPECT_EQ(control_request_parse(NULL, 0, &req, &code, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(control_request_parse("{}", 2, &req, NULL, NULL, 0), -EINVAL);

	for (unsigned c = 0; c < _CONTROL_COMMAND_MAX; c++)
		EXPECT_EQ(control_command_from_string(control_command_to_string(c)), (int)c);
	for (unsigned c = 0; c < _CONTROL_CODE_MAX; c++)
		EXPECT_EQ(control_code_from_string(control_code_to_string(c)), (int)c);
	EXPECT_EQ(control_command_from_string("Status"), -EINVAL);
	EXPECT_EQ(control_code_from_string(NULL), -EINVAL);
	EXPECT_TRUE(!control_command_is_change(CONTROL_COMMAND_STATS));
	EXPECT_TRUE(control_command_is_change(CONTROL_COMMAND_RELOAD));
}

/* control_answer() on a C string. */
static json_t *answer_line(const struct control_ops *ops, void *userdata, struct control_peer *peer,
			   const char *admin, const char *line)
{
	return control_answer(ops, userdata, peer, admin, line, strlen(line));
}

/* control_answer() without sockets: the permission check and the error codes. */
TEST(answer)
{
	struct control_peer root = { .pid = 1, .uid = 0, .gid = 0, .may_change = -1 };
	struct control_peer user = { .pid = 2, .uid = 1000, .gid = 1000, .may_change = -1 };
	const char *add = "{\"command\":\"mux-add\",\"id\":5}";
	json_t *r;

	r = answer_line(&stub_ops, &stub, &user, "", add);
	EXPECT_ERROR(r, "permission-denied",
		     "permission denied: mux-add needs root (no admin-group is configured)");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &user, NULL, "{\"command\":\"reload\"}");
	EXPECT_ERROR(r, "permission-denied", "reload needs root");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &user, "", "{\"command\":\"stats\"}");
	EXPECT_OK(r);
	json_decref(r);

	r = answer_line(&stub_ops, &stub, &root, "", add);
	EXPECT_OK(r);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(r, "result"), "id")), 5);
	EXPECT_STR_EQ(json_string_value(json_object_get(json_object_get(r, "result"), "interface")),
		      "qmap5");
	json_decref(r);

	/* The ops' errnos as codes; a missing message is made up from the errno. */
	r = answer_line(&stub_ops, &stub, &root, "", "{\"command\":\"mux-add\",\"id\":9}");
	EXPECT_ERROR(r, "exists", "mux 9 exists");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &root, "", "{\"command\":\"mux-add\",\"id\":10}");
	EXPECT_ERROR(r, "failed", "mux-add failed: Input/output error");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &root, "", "{\"command\":\"mux-del\",\"id\":7}");
	EXPECT_ERROR(r, "no-such-mux", "no mux 7");
	json_decref(r);

	/* Routing: the manager's -ENODEV and -ENOTUNIQ are their own codes. */
	stub.two_modems = true;
	r = answer_line(&stub_ops, &stub, &root, "", add);
	EXPECT_ERROR(r, "ambiguous-modem", "2 modems: name one with -m");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &root, "", "{\"command\":\"mux-del\",\"id\":5}");
	EXPECT_ERROR(r, "ambiguous-modem", "name one");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &root, "",
			"{\"command\":\"mux-add\",\"id\":6,\"modem\":\"b\"}");
	EXPECT_OK(r);
	EXPECT_STR_EQ(stub.added_to, "b");
	EXPECT_STR_EQ(json_string_value(json_object_get(json_object_get(r, "result"), "modem")),
		      "b");
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &user, "", "{\"command\":\"status\"}");
	EXPECT_OK(r); /* a listing covers every modem */
	json_decref(r);
	r = answer_line(&stub_ops, &stub, &user, "", "{\"command\":\"status\",\"modem\":\"c\"}");
	EXPECT_ERROR(r, "no-such-modem", "no modem 'c'");
	json_decref(r);
	/* A change is refused for permission before the name is looked at. */
	r = answer_line(&stub_ops, &stub, &user, "",
			"{\"command\":\"mux-del\",\"id\":5,\"modem\":\"c\"}");
	EXPECT_ERROR(r, "permission-denied", "permission denied");
	json_decref(r);
	stub.two_modems = false;
	r = answer_line(&stub_ops, &stub, &root, "", "{\"command\":\"mux-del\",\"id\":5}");
	EXPECT_OK(r); /* one modem: no name needed */
	json_decref(r);

	/* Missing ops are failures, not crashes. */
	{
		static const struct control_ops none = {};

		r = answer_line(&none, NULL, &root, "", "{\"command\":\"status\"}");
		EXPECT_ERROR(r, "failed", "status failed");
		json_decref(r);
		r = answer_line(&none, NULL, &root, "", add);
		EXPECT_ERROR(r, "failed", "mux-add failed");
		json_decref(r);
	}

	/* Messages stay ASCII whatever was in the input. */
	r = control_error_reply(CONTROL_CODE_FAILED, "bad \xff\n byte");
	EXPECT_STR_EQ(json_string_value(json_object_get(r, "error")), "bad \\xff\\x0a byte");
	json_decref(r);
	stub = (struct stub){};
}

static struct control *server_new(void)
{
	struct control *c = NULL;

	EXPECT_EQ(control_new(loop, &stub_ops, &stub, sock_path, admin_group, &c), 0);
	if (c)
		EXPECT_TRUE(!control_is_activated(c));
	return c;
}

TEST(round_trip)
{
	static const char pipelined[] = "\n \r\n{\"command\":\"mux-list\"}\r\n"
					"{\"command\":\"nope\"}\n{\"command\":\"stats\"}\n";
	struct control *c = server_new();
	struct control_stats st;
	struct tclient t;
	struct stat s;
	json_t *r, *result;

	if (!c)
		return;
	/* The socket as control_new() leaves it: mode 0660, group admin_group. */
	EXPECT_EQ(stat(sock_path, &s), 0);
	EXPECT_TRUE(S_ISSOCK(s.st_mode));
	EXPECT_EQ(s.st_mode & 07777, 0660);
	EXPECT_EQ(s.st_gid, admin_gid);

	EXPECT_EQ(tc_connect(&t, sock_path), 0);
	r = tc_rpc(&t, "{\"command\":\"status\"}");
	EXPECT_OK(r);
	result = json_array_get(json_object_get(json_object_get(r, "result"), "modems"), 0);
	EXPECT_STR_EQ(json_string_value(json_object_get(result, "name")), "a");
	EXPECT_STR_EQ(json_string_value(json_object_get(json_object_get(result, "modem"), "state")),
		      "ready");
	EXPECT_EQ(stub.status_calls, 1);
	json_decref(r);

	r = tc_rpc(&t, "{\"command\":\"mux-list\"}");
	EXPECT_OK(r);
	EXPECT_EQ(json_array_size(json_object_get(json_object_get(r, "result"), "muxes")), 1);
	json_decref(r);

	/* mux-add: the stub gets the settings as the file parser would have made them. */
	r = tc_rpc(&t, "{\"command\":\"mux-add\",\"id\":3,\"settings\":{\"apn\":\"internet\","
		       "\"ip-type\":\"ipv4\",\"default-route\":\"yes\",\"autoconnect\":\"no\","
		       "\"mtu\":\"1400\",\"password\":\"pw\",\"allowed-auth\":\"pap|chap\","
		       "\"routes\":\"10.0.0.0/8\",\"route-metric\":\"50\",\"headroom\":\"off\"}}");
	EXPECT_OK(r);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(r, "result"), "id")), 3);
	json_decref(r);
	EXPECT_EQ(stub.adds, 1);
	EXPECT_EQ(stub.added.id, 3);
	EXPECT_TRUE(stub.added.present);
	EXPECT_STR_EQ(stub.added.interface, "qmap3");
	EXPECT_STR_EQ(stub.added.apn, "internet");
	EXPECT_EQ(stub.added.ip_type, CONFIG_IP_TYPE_IPV4);
	EXPECT_EQ(stub.added.default_route, true);
	EXPECT_EQ(stub.added.autoconnect, false);
	EXPECT_EQ(stub.added.mtu, 1400);
	EXPECT_STR_EQ(stub.added.password, "pw");
	EXPECT_STR_EQ(stub.added.allowed_auth, "pap|chap");
	EXPECT_EQ(stub.added.n_routes, 1);
	EXPECT_EQ(stub.added.route_metric, 50);
	EXPECT_EQ(stub.added.headroom, CONFIG_HEADROOM_OFF);

	/* Refusals: the stub is not called, the connection goes on. */
	r = tc_rpc(&t, "{\"command\":\"mux-add\",\"id\":4,\"settings\":{\"bogus\":\"1\"}}");
	EXPECT_ERROR(r, "invalid-argument", "unknown key 'bogus'");
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"mux-add\",\"id\":4,\"settings\":{\"ip-type\":\"ipv5\"}}");
	EXPECT_ERROR(r, "invalid-argument", "invalid ip-type 'ipv5'");
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"mux-add\",\"id\":9}");
	EXPECT_ERROR(r, "exists", "mux 9 exists");
	json_decref(r);
	EXPECT_EQ(stub.adds, 1);

	r = tc_rpc(&t, "{\"command\":\"mux-del\",\"id\":3}");
	EXPECT_OK(r);
	json_decref(r);
	EXPECT_EQ(stub.deleted, 3);
	r = tc_rpc(&t, "{\"command\":\"mux-del\",\"id\":7}");
	EXPECT_ERROR(r, "no-such-mux", "no mux 7");
	json_decref(r);

	r = tc_rpc(&t, "{\"command\":\"reload\"}");
	EXPECT_OK(r);
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"reload\"}");
	EXPECT_ERROR(r, "failed", "qmapd.conf:3: invalid ip-type 'ipv5' in [mux.1]");
	json_decref(r);

	/* Bad input gets a reply and the connection stays usable. */
	r = tc_rpc(&t, "this is not json");
	EXPECT_ERROR(r, "invalid-request",
		     "invalid JSON at byte 4: '[' or '{' expected near 'this'");
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"status\"");
	EXPECT_ERROR(r, "invalid-request", "invalid JSON");
	json_decref(r);
	r = tc_rpc(&t, "[\"status\"]");
	EXPECT_ERROR(r, "invalid-request", "a request must be a JSON object");
	json_decref(r);
	EXPECT_EQ(tc_send(&t, "{\"command\":\"st\0tus\"}\n", 21), 0);
	r = tc_reply(&t);
	EXPECT_ERROR(r, "invalid-request", "invalid JSON");
	json_decref(r);
	EXPECT_EQ(tc_send(&t, "\xff\xfe\x01\n", 4), 0);
	r = tc_reply(&t);
	EXPECT_ERROR(r, "invalid-request", "invalid JSON");
	json_decref(r);

	/* Blank lines are skipped, CRLF is fine, three requests in one write get three
	 * replies in order. */
	EXPECT_EQ(tc_send(&t, pipelined, strlen(pipelined)), 0);
	r = tc_reply(&t);
	EXPECT_OK(r);
	EXPECT_TRUE(json_object_get(json_object_get(r, "result"), "muxes") != NULL);
	json_decref(r);
	r = tc_reply(&t);
	EXPECT_ERROR(r, "invalid-request", "unknown command 'nope'");
	json_decref(r);
	r = tc_reply(&t);
	EXPECT_OK(r);
	result = json_object_get(r, "result");
	/* stats carries the server's own counters. */
	EXPECT_EQ(json_integer_value(json_object_get(
			  json_object_get(json_array_get(json_object_get(result, "modems"), 0),
					  "device"),
			  "rx-transfers")),
		  42);
	EXPECT_EQ(
		json_integer_value(json_object_get(json_object_get(result, "control"), "requests")),
		18);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(result, "control"), "errors")),
		  11);
	EXPECT_EQ(
		json_integer_value(json_object_get(json_object_get(result, "control"), "clients")),
		1);
	json_decref(r);

	/* An unterminated last request is answered at end of input, then the server closes. */
	EXPECT_EQ(tc_send(&t, "{\"command\":\"status\"}", 20), 0);
	shutdown(t.fd, SHUT_WR);
	r = tc_reply(&t);
	EXPECT_OK(r);
	json_decref(r);
	EXPECT_TRUE(tc_wait_eof(&t));
	tc_close(&t);

	control_get_stats(c, &st);
	EXPECT_EQ(st.requests, 19);
	EXPECT_EQ(st.errors, 11);
	EXPECT_EQ(st.permission_denied, 0);
	EXPECT_EQ(st.clients, 0);

	EXPECT_PTR_EQ(control_free(c), NULL);
	/* The socket file goes with the server. */
	EXPECT_EQ(access(sock_path, F_OK), -1);
	EXPECT_PTR_EQ(control_free(NULL), NULL);
	stub = (struct stub){};
}

TEST(oversize)
{
	struct control *c = server_new();
	struct control_stats st;
	struct tclient t;
	char *big;
	json_t *r;

	if (!c)
		return;
	big = malloc(CONTROL_REQUEST_MAX + 100);
	if (!big)
		abort();

	/* Exactly CONTROL_REQUEST_MAX bytes is still a request. */
	EXPECT_EQ(tc_connect(&t, sock_path), 0);
	memset(big, ' ', CONTROL_REQUEST_MAX);
	memcpy(big, "{\"command\":\"status\"}", 20);
	big[CONTROL_REQUEST_MAX] = '\n';
	EXPECT_EQ(tc_send(&t, big, CONTROL_REQUEST_MAX + 1), 0);
	r = tc_reply(&t);
	EXPECT_OK(r);
	json_decref(r);

	/* One more byte and there is no telling where the next request starts: close. */
	memset(big, 'x', CONTROL_REQUEST_MAX + 100);
	EXPECT_EQ(tc_send(&t, big, CONTROL_REQUEST_MAX + 1), 0);
	r = tc_reply(&t);
	EXPECT_ERROR(r, "invalid-request", "request longer than 65536 bytes");
	json_decref(r);
	EXPECT_TRUE(tc_wait_eof(&t));
	tc_close(&t);
	free(big);

	control_get_stats(c, &st);
	EXPECT_EQ(st.clients_dropped, 1);
	EXPECT_EQ(st.clients, 0);
	control_free(c);
}

/* Run in a child that became someone else: the checks go to the exit status. */
static int child_requests(bool may_change)
{
	struct tclient t;
	json_t *r;

	/* Nobody cannot connect at all without the test's chmod 0666. */
	if (tc_connect(&t, sock_path) < 0) {
		fprintf(stderr, "%s:%d: child cannot connect: %s\n", __FILE__, __LINE__,
			strerror(errno));
		return 1;
	}
	r = tc_rpc(&t, "{\"command\":\"status\"}");
	EXPECT_OK(r);
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"mux-add\",\"id\":6,\"settings\":{\"apn\":\"x\"}}");
	if (may_change) {
		EXPECT_OK(r);
	} else {
		char want[128];

		snprintf(want, sizeof(want),
			 "permission denied: mux-add needs root or membership in group '%s'",
			 admin_group);
		EXPECT_ERROR(r, "permission-denied", want);
	}
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"mux-del\",\"id\":6}");
	if (may_change)
		EXPECT_OK(r);
	else
		EXPECT_ERROR(r, "permission-denied", "mux-del needs root");
	json_decref(r);
	r = tc_rpc(&t, "{\"command\":\"stats\"}");
	EXPECT_OK(r);
	json_decref(r);
	tc_close(&t);
	return test_failures ? 1 : 0;
}

/* Fork a client as uid nobody with the given groups; the parent serves until it exits. */
static void run_as_nobody(gid_t gid, const gid_t *groups, size_t n_groups, bool may_change)
{
	uint64_t end = now_ms() + 10000;
	pid_t pid;
	int status = -1;

	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s:%d: fork: %s\n", __FILE__, __LINE__, strerror(errno));
		test_failures++;
		return;
	}
	if (pid == 0) {
		if (setgroups(n_groups, groups) < 0 || setgid(gid) < 0 || setuid(NOBODY) < 0) {
			fprintf(stderr, "child: dropping privileges: %s\n", strerror(errno));
			_exit(2);
		}
		/* The child only sends and reads: it must not answer its own requests. */
		loop = ev_loop_new(EVFLAG_AUTO);
		test_failures = 0;
		_exit(child_requests(may_change));
	}
	while (now_ms() < end) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		tc_pump(NULL);
		usleep(1000);
	}
	if (now_ms() >= end) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s:%d: child (gid %u, %zu groups) failed: status %d\n", __FILE__,
			__LINE__, (unsigned)gid, n_groups, status);
		test_failures++;
	}
}

TEST(permissions)
{
	struct control *c;
	struct control_stats st;
	gid_t groups[] = { 4242, admin_gid };

	if (geteuid() != 0)
		TEST_SKIP("needs root to become nobody");
	c = server_new();
	if (!c)
		return;
	/* The gate for reading is the socket's mode and group; open it for this test. */
	EXPECT_EQ(chmod(sock_path, 0666), 0);

	/* Neither primary nor supplementary: read only. */
	run_as_nobody(NOBODY, NULL, 0, false);
	control_get_stats(c, &st);
	EXPECT_EQ(st.permission_denied, 2);
	EXPECT_EQ(stub.adds, 0);
	EXPECT_EQ(stub.dels, 0);

	/* A supplementary group (SO_PEERGROUPS) is enough, as is the primary group. */
	run_as_nobody(NOBODY, groups, ARRAY_SIZE(groups), true);
	EXPECT_EQ(stub.adds, 1);
	EXPECT_EQ(stub.added.id, 6);
	run_as_nobody(admin_gid, NULL, 0, true);
	EXPECT_EQ(stub.adds, 2);
	EXPECT_EQ(stub.dels, 2);

	control_get_stats(c, &st);
	EXPECT_EQ(st.permission_denied, 2);
	control_free(c);
	stub = (struct stub){};
}

/* A client that keeps asking and never reads is dropped; the others are served meanwhile. */
TEST(slow_reader)
{
	struct control *c = server_new();
	struct control_stats st;
	struct tclient slow, fast;
	uint64_t end = now_ms() + 20000;
	unsigned answered = 0;
	bool dropped = false;

	if (!c)
		return;
	stub.status_padding = 64 * 1024;
	EXPECT_EQ(tc_connect(&slow, sock_path), 0);
	EXPECT_EQ(tc_connect(&fast, sock_path), 0);

	while (!dropped && now_ms() < end) {
		ssize_t n = send(slow.fd, "{\"command\":\"status\"}\n", 21,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		json_t *r;

		if (n < 0 && errno != EAGAIN)
			dropped = true;
		ev_run(loop, EVRUN_NOWAIT);
		control_get_stats(c, &st);
		if (st.clients_dropped > 0)
			dropped = true;

		r = tc_rpc(&fast, "{\"command\":\"status\"}");
		if (!reply_ok(r)) {
			fprintf(stderr, "%s:%d: the fast client got no answer\n", __FILE__,
				__LINE__);
			test_failures++;
			json_decref(r);
			break;
		}
		answered++;
		json_decref(r);
	}
	EXPECT_TRUE(dropped);
	EXPECT_GE(answered, 1);
	control_get_stats(c, &st);
	EXPECT_EQ(st.clients_dropped, 1);
	EXPECT_EQ(st.clients, 1);
	/* The slow client sees the end of its connection. */
	{
		char buf[65536];
		uint64_t until = now_ms() + 5000;
		ssize_t n = 1;

		while (n != 0 && now_ms() < until) {
			n = recv(slow.fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN)
				break;
			ev_run(loop, EVRUN_NOWAIT);
		}
		EXPECT_TRUE(n <= 0 && (n == 0 || errno != EAGAIN));
	}
	tc_close(&slow);
	tc_close(&fast);
	control_free(c);
	stub = (struct stub){};
}

/*
 * A child that becomes uid (group gid, no supplementary groups) and opens n connections,
 * each sending "{" and then, with trickle, one more byte every 100 ms: a request that never
 * ends. It writes a byte to ready once connected, keeps at it for hold_ms, and exits with
 * the number of its connections qmapd has not closed by then.
 */
struct holder {
	pid_t pid;
	int ready; /* read end */
};

static int holder_child(unsigned n, bool trickle, unsigned hold_ms, int ready)
{
	int *fd = calloc(n, sizeof(int));
	bool *open_ = calloc(n, sizeof(bool));
	unsigned still = 0;
	uint64_t end;

	if (!fd || !open_)
		return 255;
	for (unsigned i = 0; i < n; i++) {
		struct tclient t;
		uint64_t until = now_ms() + 5000;
		int r;

		/* The backlog may be full until the server accepts: retry. */
		while ((r = tc_connect(&t, sock_path)) == -EAGAIN && now_ms() < until)
			usleep(1000);
		if (r < 0) {
			fprintf(stderr, "holder: connect %u: %s\n", i, strerror(-r));
			return 254;
		}
		fd[i] = t.fd;
		open_[i] = true;
		if (trickle)
			(void)!send(fd[i], "{", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	(void)!write(ready, "x", 1);
	end = now_ms() + hold_ms;
	while (now_ms() < end) {
		for (unsigned i = 0; i < n; i++) {
			char buf[512];
			ssize_t k;

			if (!open_[i])
				continue;
			while ((k = recv(fd[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				;
			if (k == 0 || (k < 0 && errno != EAGAIN)) {
				open_[i] = false;
				continue;
			}
			if (trickle)
				(void)!send(fd[i], " ", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		usleep(100 * 1000);
	}
	for (unsigned i = 0; i < n; i++)
		still += open_[i];
	return still > 253 ? 253 : (int)still;
}

static struct holder holder_start(uid_t uid, unsigned n, bool trickle, unsigned hold_ms)
{
	struct holder h = { .pid = -1, .ready = -1 };
	uint64_t end = now_ms() + 20000;
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		abort();
	fflush(stderr);
	h.pid = fork();
	if (h.pid < 0)
		abort();
	if (h.pid == 0) {
		/* Not the server's ends of earlier holders' connections: they must see EOF. */
		for (int fd = 3; fd < 4096; fd++)
			if (fd != p[1])
				close(fd);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(uid) < 0)
			_exit(252);
		loop = ev_loop_new(EVFLAG_AUTO);
		_exit(holder_child(n, trickle, hold_ms, p[1]));
	}
	close(p[1]);
	h.ready = p[0];
	/* Serve the connections until the child has them all. */
	for (;;) {
		struct pollfd pf = { .fd = h.ready, .events = POLLIN };

		tc_pump(NULL);
		if (poll(&pf, 1, 1) > 0 || now_ms() > end)
			break;
	}
	return h;
}

/* The child's exit status: how many of its connections were still open at its end. */
static int holder_wait(struct holder *h)
{
	uint64_t end = now_ms() + 30000;
	int status = -1;

	while (now_ms() < end) {
		if (waitpid(h->pid, &status, WNOHANG) == h->pid)
			break;
		tc_pump(NULL);
		usleep(1000);
	}
	if (now_ms() >= end) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, &status, 0);
	}
	close(h->ready);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void expect_root_served(void)
{
	struct tclient t;
	json_t *r;

	EXPECT_EQ(tc_connect(&t, sock_path), 0);
	r = tc_rpc(&t, "{\"command\":\"status\"}");
	EXPECT_OK(r);
	json_decref(r);
	tc_close(&t);
}

/*
 * 32 connections of one user, each trickling a byte every 100 ms into a request that never
 * ends: root is still served, the user gets CONTROL_CLIENTS_PER_UID of them, and those are
 * closed at the request deadline however many bytes they send.
 */
TEST(slow_clients)
{
	struct control *c;
	struct control_stats st;
	struct holder h;

	if (geteuid() != 0)
		TEST_SKIP("needs root to become nobody");
	c = server_new();
	if (!c)
		return;
	control_set_timeouts(c, 1.0, 60.0);
	EXPECT_EQ(chmod(sock_path, 0666), 0);

	h = holder_start(NOBODY, CONTROL_CLIENTS_MAX, true, 2500);
	expect_root_served();
	control_get_stats(c, &st);
	EXPECT_EQ(st.clients_rejected, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_PER_UID);
	/* Bytes every 100 ms for 2.5 s, deadline 1 s: none of them may still be open. */
	EXPECT_EQ(holder_wait(&h), 0);
	control_get_stats(c, &st);
	EXPECT_EQ(st.clients_timed_out, CONTROL_CLIENTS_PER_UID);
	EXPECT_EQ(st.clients, 0);
	control_free(c);
	stub = (struct stub){};
}

/*
 * 1000 silent connections from four users hold every unprivileged slot; root still gets in,
 * first into the reserved slots, then by evicting the unprivileged client quiet longest.
 */
TEST(many_clients)
{
	struct control *c;
	struct control_stats st;
	struct holder h[4];
	struct tclient t[CONTROL_CLIENTS_RESERVED + 1];
	unsigned open_total = 0;
	json_t *r;

	if (geteuid() != 0)
		TEST_SKIP("needs root to become nobody");
	c = server_new();
	if (!c)
		return;
	EXPECT_EQ(chmod(sock_path, 0666), 0);

	for (unsigned i = 0; i < ARRAY_SIZE(h); i++)
		h[i] = holder_start(NOBODY - i, 250, false, 4000);
	/* Connected is not yet accepted: serve until all 1000 are either. */
	for (uint64_t end = now_ms() + 5000; now_ms() < end;) {
		tc_pump(NULL);
		control_get_stats(c, &st);
		if (st.clients + st.clients_rejected >= 1000)
			break;
	}
	control_get_stats(c, &st);
	EXPECT_EQ(st.clients, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED);
	EXPECT_EQ(st.clients_rejected, 1000 - (CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED));

	/* Root, as many times as there are reserved slots, and once more. */
	for (unsigned i = 0; i < ARRAY_SIZE(t); i++) {
		EXPECT_EQ(tc_connect(&t[i], sock_path), 0);
		r = tc_rpc(&t[i], "{\"command\":\"status\"}");
		EXPECT_OK(r);
		json_decref(r);
	}
	control_get_stats(c, &st);
	EXPECT_EQ(st.clients, CONTROL_CLIENTS_MAX);
	EXPECT_EQ(st.clients_evicted, 1);
	for (unsigned i = 0; i < ARRAY_SIZE(t); i++)
		tc_close(&t[i]);
	for (unsigned i = 0; i < ARRAY_SIZE(h); i++)
		open_total += (unsigned)holder_wait(&h[i]);
	EXPECT_EQ(open_total, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED - 1);
	control_free(c);
	stub = (struct stub){};
}

/* A child as nobody in group gid alone must not even connect. */
static void expect_no_connect(gid_t gid)
{
	int status = -1;
	pid_t pid;

	fflush(stderr);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		struct tclient t;

		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(NOBODY) < 0)
			_exit(2);
		_exit(tc_connect(&t, sock_path) == -EACCES ? 0 : 1);
	}
	while (waitpid(pid, &status, WNOHANG) == 0)
		tc_pump(NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s:%d: gid %u could connect (status %d)\n", __FILE__, __LINE__,
			(unsigned)gid, status);
		test_failures++;
	}
}

/*
 * admin-group is granted access by an ACL entry: the socket keeps its group, so readers in
 * that group keep theirs (a chown to the admin group took it away), and admin-group members
 * outside it get in.
 */
TEST(admin_group_access)
{
	char saved[sizeof(admin_group)];
	struct group *gr = getgrgid(NOBODY);
	gid_t outside = 4242, admin[] = { NOBODY };
	struct control *c;
	struct stat st;

	if (geteuid() != 0 || !gr || getegid() == NOBODY)
		TEST_SKIP("needs root and group %u", NOBODY);
	snprintf(saved, sizeof(saved), "%s", admin_group);
	snprintf(admin_group, sizeof(admin_group), "%s", gr->gr_name);
	c = server_new();
	if (!c)
		goto out;
	EXPECT_EQ(stat(sock_path, &st), 0);
	EXPECT_EQ(st.st_gid, getegid());
	EXPECT_EQ(st.st_mode & 0777, 0660);

	/* In the socket's group: reads, may not change. */
	run_as_nobody(getegid(), NULL, 0, false);
	/* In admin-group only: connects through the ACL and may change. */
	run_as_nobody(outside, admin, ARRAY_SIZE(admin), true);
	/* In neither: no connection at all. */
	expect_no_connect(outside);
	control_free(c);
out:
	snprintf(admin_group, sizeof(admin_group), "%s", saved);
	stub = (struct stub){};
}

TEST(client_limit)
{
	struct control *c = server_new();
	struct tclient t[CONTROL_CLIENTS_MAX + 1];
	struct control_stats st;
	json_t *r;

	if (!c)
		return;
	/* Only root's connections are bounded by CONTROL_CLIENTS_MAX alone; any other uid meets
	 * CONTROL_CLIENTS_PER_UID first (slow_clients checks that one). */
	if (geteuid() != 0) {
		control_free(c);
		TEST_SKIP("the process-wide limit needs root's connections (run as root)");
	}
	for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		EXPECT_EQ(tc_connect(&t[i], sock_path), 0);
		ev_run(loop, EVRUN_NOWAIT);
	}
	for (int i = 0; i < 10; i++)
		ev_run(loop, EVRUN_NOWAIT);
	control_get_stats(c, &st);
	EXPECT_EQ(st.clients, CONTROL_CLIENTS_MAX);

	/* One too many: told why, then closed. */
	EXPECT_EQ(tc_connect(&t[CONTROL_CLIENTS_MAX], sock_path), 0);
	r = tc_reply(&t[CONTROL_CLIENTS_MAX]);
	EXPECT_ERROR(r, "failed", "too many connections");
	json_decref(r);
	EXPECT_TRUE(tc_wait_eof(&t[CONTROL_CLIENTS_MAX]));
	tc_close(&t[CONTROL_CLIENTS_MAX]);

	/* The others are still served, and a closed slot is free again. */
	r = tc_rpc(&t[0], "{\"command\":\"status\"}");
	EXPECT_OK(r);
	json_decref(r);
	tc_close(&t[1]);
	for (int i = 0; i < 10; i++)
		ev_run(loop, EVRUN_NOWAIT);
	EXPECT_EQ(tc_connect(&t[1], sock_path), 0);
	r = tc_rpc(&t[1], "{\"command\":\"status\"}");
	EXPECT_OK(r);
	json_decref(r);

	control_get_stats(c, &st);
	EXPECT_EQ(st.clients_rejected, 1);
	for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++)
		tc_close(&t[i]);
	control_free(c);
}

static int bind_unix(const char *path, bool do_listen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (do_listen && listen(fd, 4) < 0)) {
		fprintf(stderr, "%s:%d: bind %s: %s\n", __FILE__, __LINE__, path, strerror(errno));
		test_failures++;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

TEST(socket_file)
{
	struct control *c = NULL;
	char deep[300];
	int fd;

	/* A socket nobody listens on any more is replaced. */
	fd = bind_unix(sock_path, false);
	if (fd >= 0)
		close(fd);
	c = server_new();
	control_free(c);

	/* A live one is not. */
	fd = bind_unix(sock_path, true);
	c = NULL;
	EXPECT_EQ(control_new(loop, &stub_ops, &stub, sock_path, "", &c), -EADDRINUSE);
	EXPECT_PTR_EQ(c, NULL);
	if (fd >= 0)
		close(fd);
	unlink(sock_path);

	/* Nor is something that is not a socket. */
	fd = open(sock_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	EXPECT_EQ(control_new(loop, &stub_ops, &stub, sock_path, "", &c), -EEXIST);
	unlink(sock_path);

	/* Missing directories are made, 0755. */
	snprintf(deep, sizeof(deep), "%s/a/b/control", dir);
	EXPECT_EQ(control_new(loop, &stub_ops, &stub, deep, NULL, &c), 0);
	{
		struct stat s;
		char sub[300];

		snprintf(sub, sizeof(sub), "%s/a/b", dir);
		EXPECT_EQ(stat(sub, &s), 0);
		EXPECT_EQ(s.st_mode & 07777, 0755);
	}
	control_free(c);

	EXPECT_EQ(
		control_new(loop, &stub_ops, &stub,
			    "/tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
			    "", &c),
		-ENAMETOOLONG);
	EXPECT_EQ(control_new(loop, &stub_ops, &stub, "", "", &c), -EINVAL);
	EXPECT_EQ(control_new(NULL, &stub_ops, &stub, sock_path, "", &c), -EINVAL);
}

/*
 * Put fd where a service manager passes its first socket, and as it passes it: without
 * FD_CLOEXEC. False (and a note) if it cannot.
 */
static bool put_at_listen_fds_start(int fd)
{
	if (fd != CONTROL_LISTEN_FDS_START) {
		if (dup2(fd, CONTROL_LISTEN_FDS_START) < 0) {
			fprintf(stderr, "activation: SKIP, dup2: %s\n", strerror(errno));
			close(fd);
			return false;
		}
		close(fd);
	}
	return fcntl(CONTROL_LISTEN_FDS_START, F_SETFD, 0) == 0;
}

/* control_new() with LISTEN_PID and LISTEN_FDS as given: whether it took fd 3 or bound. */
static void expect_bound(const char *listen_pid, const char *listen_fds, const char *unused,
			 int line)
{
	struct control *c = NULL;
	int r;

	setenv("LISTEN_PID", listen_pid, 1);
	setenv("LISTEN_FDS", listen_fds, 1);
	r = control_new(loop, &stub_ops, &stub, unused, "", &c);
	if (r < 0 || control_is_activated(c) || access(unused, F_OK) < 0) {
		fprintf(stderr,
			"%s:%d: LISTEN_PID='%s' LISTEN_FDS='%s': expected a socket of our own, "
			"got %d, %s\n",
			__FILE__, line, listen_pid, listen_fds, r,
			r < 0 ? strerror(-r) : (control_is_activated(c) ? "fd 3" : "no file"));
		test_failures++;
	}
	control_free(c);
	EXPECT_EQ(access(unused, F_OK), -1); /* our own socket file goes with the server */
}

/*
 * systemd passes the socket as fd 3 with LISTEN_PID and LISTEN_FDS, read by our own code
 * (no libsystemd). The setup keeps fd 3 free for it.
 */
TEST(activation)
{
	char path[300], unused[300], other[300];
	struct control *c = NULL;
	struct tclient t;
	char pid[32], ppid[32];
	json_t *r;
	int fd;

	snprintf(path, sizeof(path), "%s/activated", dir);
	snprintf(unused, sizeof(unused), "%s/not-bound", dir);
	snprintf(other, sizeof(other), "%s/not-listening", dir);
	fd = bind_unix(path, true);
	if (fd < 0 || !put_at_listen_fds_start(fd))
		return;
	EXPECT_EQ(fcntl(CONTROL_LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC, 0);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(ppid, sizeof(ppid), "%d", (int)getppid());
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);

	/* With an admin group other than the socket's, systemd's socket gets its ACL entry. */
	struct group *gr = getgrgid(NOBODY);
	char nogroup[64] = "";
	if (gr && geteuid() == 0 && getegid() != NOBODY)
		snprintf(nogroup, sizeof(nogroup), "%s", gr->gr_name);
	EXPECT_EQ(control_new(loop, &stub_ops, &stub, unused, nogroup, &c), 0);
	EXPECT_TRUE(control_is_activated(c));
	EXPECT_EQ(access(unused, F_OK), -1);
	/* No child of ours (qmi-proxy) may hold systemd's socket. */
	EXPECT_EQ(fcntl(CONTROL_LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	if (nogroup[0])
		EXPECT_GE(getxattr(path, "system.posix_acl_access", NULL, 0), 12);

	EXPECT_EQ(tc_connect(&t, path), 0);
	r = tc_rpc(&t, "{\"command\":\"status\"}");
	EXPECT_OK(r);
	json_decref(r);
	tc_close(&t);

	control_free(c);
	/* systemd's socket stays open and in place, and so does the environment: a server
	 * created again finds the socket again. */
	EXPECT_GE(fcntl(CONTROL_LISTEN_FDS_START, F_GETFD), 0);
	EXPECT_EQ(access(path, F_OK), 0);
	EXPECT_STR_EQ(getenv("LISTEN_PID"), pid);
	c = NULL;
	EXPECT_EQ(control_new(loop, &stub_ops, &stub, unused, "", &c), 0);
	EXPECT_TRUE(control_is_activated(c));
	control_free(c);

	/* LISTEN_PID of another process (a child that inherited the environment): not ours. */
	expect_bound(ppid, "1", unused, __LINE__);
	/* Values that are not a pid or a count: a warning, and a socket of our own. */
	expect_bound("", "1", unused, __LINE__);
	expect_bound("x", "1", unused, __LINE__);
	expect_bound("0", "1", unused, __LINE__);
	expect_bound("-1", "1", unused, __LINE__);
	expect_bound(pid, "one", unused, __LINE__);
	expect_bound(pid, "-1", unused, __LINE__);
	expect_bound(pid, " 1", unused, __LINE__);
	expect_bound(pid, "2147483647", unused, __LINE__);
	expect_bound(pid, "99999999999999999999", unused, __LINE__);
	expect_bound(pid, "0", unused, __LINE__);
	close(CONTROL_LISTEN_FDS_START);

	/* A passed fd that is not a listening AF_UNIX stream socket is left alone. */
	fd = bind_unix(other, false);
	if (fd >= 0 && put_at_listen_fds_start(fd)) {
		expect_bound(pid, "1", unused, __LINE__);
		close(CONTROL_LISTEN_FDS_START);
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && put_at_listen_fds_start(fd)) {
		expect_bound(pid, "1", unused, __LINE__);
		close(CONTROL_LISTEN_FDS_START);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct sockaddr_in sin = { .sin_family = AF_INET }; /* any address, any port */

		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 1) < 0) {
			close(fd);
		} else if (put_at_listen_fds_start(fd)) {
			expect_bound(pid, "1", unused, __LINE__);
			close(CONTROL_LISTEN_FDS_START);
		}
	}
	/* LISTEN_FDS counting an fd that is not open. */
	expect_bound(pid, "1", unused, __LINE__);

	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unlink(path);
	unlink(other);
	stub = (struct stub){};
}
