/* SPDX-License-Identifier: MIT */
/*
 * The control socket: qmapctl's way into the daemon.
 *
 * Protocol: an AF_UNIX stream socket carrying newline-delimited JSON, one compact object per
 * line in both directions, one reply per request, in order.
 *   request:  {"command": "status" | "mux-list" | "stats" | "mux-add" | "mux-del" | "reload",
 *              "id": N (mux-add and mux-del only, 1..254),
 *              "settings": {"apn": "internet", "ip-type": "ipv4v6", ...} (mux-add only:
 *                           any [mux.N] key of qmapd.conf, every value a JSON string)}
 *   reply:    {"ok": true, "result": {...}}
 *             {"ok": false, "error": "human readable message", "code": "invalid-request" |
 *              "permission-denied" | "no-such-mux" | "exists" | "invalid-argument" | "failed"}
 * Results: status, mux-list and stats as manager.h describes them (stats gains a "control"
 * object with this server's counters); mux-add {"id": N, "interface": "qmapN"}; mux-del
 * {"id": N}; reload {}.
 *
 * A request line may be at most CONTROL_REQUEST_MAX bytes: a longer one gets an
 * invalid-request reply and the connection is closed, as there is no telling where the next
 * request starts. A line that is not valid JSON gets an invalid-request reply and the
 * connection stays usable. Blank lines are ignored. At end of input an unterminated last
 * line is still answered, so `printf '{"command":"status"}' | nc -U` works.
 *
 * Access: whoever can connect (the socket is 0660, its group the admin group if one is
 * configured) may read; mux-add, mux-del and reload need uid 0 or membership in admin_group,
 * judged from the credentials the kernel recorded at connect() time.
 *
 * The server reaches the daemon only through struct control_ops, so that it can be tested
 * against a stub. qmapd wires the manager into it:
 *
 *   static json_t *ops_status(void *m) { return manager_status(m); }
 *   ...
 *   static const struct control_ops manager_control_ops = { .status = ops_status, ... };
 *   control_new(loop, &manager_control_ops, manager, config->device.control_socket,
 *               config->device.admin_group, &control);
 */
#ifndef QMAPD_CONTROL_H
#define QMAPD_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Requests are a few hundred bytes; 64 KiB leaves room for every key at its longest. */
#define CONTROL_REQUEST_MAX (64 * 1024)
/* qmapctl opens one connection per command; 32 is plenty for people and scripts. */
#define CONTROL_CLIENTS_MAX 32
/* A status of 254 muxes is well under 1 MiB; a client that lets more pile up is dropped. */
#define CONTROL_OUTPUT_MAX (4 * 1024 * 1024)
/* A connection that neither sends nor receives for this long is closed (seconds). */
#define CONTROL_IDLE_TIMEOUT 60.0
/* Error messages in replies are cut to this. */
#define CONTROL_ERROR_MAX 512

enum control_command {
	CONTROL_COMMAND_STATUS,
	CONTROL_COMMAND_MUX_LIST,
	CONTROL_COMMAND_STATS,
	CONTROL_COMMAND_MUX_ADD,
	CONTROL_COMMAND_MUX_DEL,
	CONTROL_COMMAND_RELOAD,
	_CONTROL_COMMAND_MAX,
};

enum control_code {
	CONTROL_CODE_INVALID_REQUEST,
	CONTROL_CODE_PERMISSION_DENIED,
	CONTROL_CODE_NO_SUCH_MUX,
	CONTROL_CODE_EXISTS,
	CONTROL_CODE_INVALID_ARGUMENT,
	CONTROL_CODE_FAILED,
	_CONTROL_CODE_MAX,
};

const char *control_command_to_string(enum control_command c);
/* The command, or -EINVAL. */
int control_command_from_string(const char *s);
/* Whether the command changes the daemon (and needs root or the admin group). */
bool control_command_is_change(enum control_command c);
const char *control_code_to_string(enum control_code c);
/* The code, or -EINVAL. */
int control_code_from_string(const char *s);

/* What the daemon does for the control socket; every call is synchronous. */
struct control_ops {
	/* New references to the results manager.h describes; NULL on failure. */
	json_t *(*status)(void *userdata);
	json_t *(*mux_list)(void *userdata);
	json_t *(*stats)(void *userdata);
	/*
	 * 0, or -EEXIST (id or interface in use), -ENOENT (no such mux), -EINVAL (refused
	 * setting) or another -errno, with a message for the user in err (may be left empty).
	 */
	int (*mux_add)(void *userdata, const struct config_mux *cfg, char *err, size_t errlen);
	int (*mux_del)(void *userdata, unsigned id, char *err, size_t errlen);
	int (*reload)(void *userdata, char *err, size_t errlen);
};

/* A parsed request. */
struct control_request {
	enum control_command command;
	unsigned id;	       /* mux-add, mux-del */
	struct config_mux mux; /* mux-add: defaults, the settings, config_mux_finish()ed */
};

/*
 * Parse one request line (without its newline; need not be NUL-terminated). Pure: never
 * logs, never allocates beyond jansson's temporaries. Returns 0, or -EINVAL with *ret_code
 * and a message in err (*ret is then unspecified).
 */
int control_request_parse(const char *line, size_t len, struct control_request *ret,
			  enum control_code *ret_code, char *err, size_t errlen);

/* Who is on the other end of a connection, as the kernel recorded it at connect(). */
struct control_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary groups (SO_PEERGROUPS), owned by the server */
	size_t n_groups;
	bool groups_known; /* false: the kernel could not tell, the group database decides */
	int may_change;	   /* cached decision: -1 not asked yet, 0 no, 1 yes */
};

/*
 * Whether the peer may change the daemon: uid 0, or admin_group ("" = nobody else) is its
 * primary or a supplementary group. Looks the group up (NSS) on first use, then caches.
 */
bool control_peer_may_change(struct control_peer *peer, const char *admin_group);

/*
 * The reply to one request line: parse, check the peer for changes, call ops. Never NULL
 * unless out of memory; the caller owns the reference. No sockets involved, so the fuzz
 * target drives it directly.
 */
json_t *control_answer(const struct control_ops *ops, void *userdata, struct control_peer *peer,
		       const char *admin_group, const char *line, size_t len);

/* {"ok": false, "error": ..., "code": ...}; non-ASCII and control characters are escaped. */
json_t *control_error_reply(enum control_code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct control_stats {
	uint64_t requests;
	uint64_t errors;	    /* replies with "ok": false, the denials included */
	uint64_t permission_denied; /* changes refused to a peer */
	uint64_t clients_rejected;  /* connections refused: too many, no credentials */
	uint64_t clients_dropped;   /* closed for an oversize request or unread replies */
	unsigned clients;	    /* connected now */
};

struct ev_loop;
struct control;

/*
 * Listen on path, or on the AF_UNIX stream socket systemd passed (socket activation: the
 * first such listening fd from sd_listen_fds(); it is left open by control_free() as
 * systemd owns it). Otherwise creates path's directory (0755), replaces a stale socket
 * (but refuses, -EADDRINUSE, when something still listens there), binds, sets mode 0660 and
 * the admin group. ops and userdata must outlive the server. admin_group may be NULL or ""
 * for root only.
 */
int control_new(struct ev_loop *loop, const struct control_ops *ops, void *userdata,
		const char *path, const char *admin_group, struct control **ret);
/* Closes every connection and the socket, removes the socket file it created. NULL-safe. */
struct control *control_free(struct control *c);

void control_get_stats(const struct control *c, struct control_stats *ret);
/* Whether the socket came from systemd. */
bool control_is_activated(const struct control *c);

#endif
