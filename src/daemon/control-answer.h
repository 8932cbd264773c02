/* SPDX-License-Identifier: MIT */
/*
 * Answering one request line of the control protocol (control-protocol.h), apart from the
 * socket that carried it (control-server.h). The daemon is reached only through struct
 * control_ops, so that the answer can be tested and fuzzed against a stub.
 */
#ifndef QMAPD_CONTROL_ANSWER_H
#define QMAPD_CONTROL_ANSWER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "control-protocol.h"

/*
 * What the daemon does for the control socket; every call is synchronous. modem is the name
 * the request gave, NULL when it gave none. Each returns 0 with *ret (a new reference: the
 * result manager.h describes), or -errno with a message for the user in err (may be left
 * empty): -ENODEV (no such modem), -ENOTUNIQ (several modems and no name), -EEXIST (id or
 * interface in use), -ENOENT (no such mux), -EINVAL (refused setting), another -errno.
 */
struct control_ops {
	int (*status)(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen);
	int (*mux_list)(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen);
	int (*stats)(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen);
	int (*mux_add)(void *userdata, const char *modem, const struct config_mux *cfg,
		       json_t **ret, char *err, size_t errlen);
	int (*mux_del)(void *userdata, const char *modem, unsigned id, json_t **ret, char *err,
		       size_t errlen);
	int (*reload)(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen);
};

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
/* control_answer(), and which command the line held (-1: none could be parsed). */
json_t *control_answer_command(const struct control_ops *ops, void *userdata,
			       struct control_peer *peer, const char *admin_group, const char *line,
			       size_t len, int *ret_command);

#endif
