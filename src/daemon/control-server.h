/* SPDX-License-Identifier: MIT */
/*
 * The control socket server: qmapctl's way into the daemon (protocol: control-protocol.h).
 *
 * Access: whoever can connect (the socket is 0660 in qmapd's group, and an ACL entry lets the
 * admin group in too) may read; mux-add, mux-del and reload need uid 0 or membership in
 * admin_group, judged from the credentials the kernel recorded at connect() time.
 *
 * The server reaches the daemon only through struct control_ops, so that it can be tested
 * against a stub. qmapd wires the manager into it:
 *
 *   static int ops_status(void *m, const char *modem, json_t **ret, char *err, size_t len)
 *   { return manager_status(m, modem, ret, err, len); }
 *   ...
 *   static const struct control_ops manager_control_ops = { .status = ops_status, ... };
 *   control_new(loop, &manager_control_ops, manager, config->device.control_socket,
 *               config->device.admin_group, &control);
 */
#ifndef QMAPD_CONTROL_SERVER_H
#define QMAPD_CONTROL_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control-answer.h"
#include "control-protocol.h"

/*
 * qmapctl opens one connection per command; 32 is plenty for people and scripts. Nobody can
 * lock root out: the last CONTROL_CLIENTS_RESERVED slots are for privileged peers (root or
 * admin-group), one uid other than root holds at most CONTROL_CLIENTS_PER_UID, and a
 * privileged peer that finds every slot taken evicts the unprivileged client that has been
 * quiet longest.
 */
#define CONTROL_CLIENTS_MAX	 32
#define CONTROL_CLIENTS_RESERVED 4
#define CONTROL_CLIENTS_PER_UID	 8
/* A status of 254 muxes is well under 1 MiB; a client that lets more pile up is dropped. */
#define CONTROL_OUTPUT_MAX (4 * 1024 * 1024)
/*
 * Deadlines that trickling bytes cannot renew (seconds): a request must arrive whole within
 * CONTROL_REQUEST_TIMEOUT of its first byte, and a reply be read whole within as long of being
 * queued; a connection with neither pending is closed CONTROL_IDLE_TIMEOUT after its last
 * complete request.
 */
#define CONTROL_REQUEST_TIMEOUT 10.0
#define CONTROL_IDLE_TIMEOUT	60.0
/* The first fd a service manager passes (sd_listen_fds(3): SD_LISTEN_FDS_START). */
#define CONTROL_LISTEN_FDS_START 3

struct control_stats {
	uint64_t requests;
	uint64_t errors;	    /* replies with "ok": false, the denials included */
	uint64_t permission_denied; /* changes refused to a peer */
	uint64_t clients_rejected;  /* connections refused: too many, no credentials */
	uint64_t clients_dropped;   /* closed for an oversize request or unread replies */
	uint64_t clients_timed_out; /* closed at a request or idle deadline */
	uint64_t clients_evicted;   /* unprivileged, closed to make room for a privileged peer */
	unsigned clients;	    /* connected now */
};

struct ev_loop;
struct control;

/*
 * Listen on path, or on the AF_UNIX stream socket systemd passed (socket activation: the
 * first listening one among LISTEN_FDS, for LISTEN_PID ours; it is left open by
 * control_free() as systemd owns it). Otherwise creates path's directory (0755), replaces a
 * stale socket (but refuses, -EADDRINUSE, when something still listens there), binds, sets
 * mode 0660 and grants the admin group rw by an ACL entry (the socket keeps its group). ops
 * and userdata must outlive the server. admin_group may be NULL or "" for root only.
 */
int control_new(struct ev_loop *loop, const struct control_ops *ops, void *userdata,
		const char *path, const char *admin_group, struct control **ret);
/* Closes every connection and the socket, removes the socket file it created. NULL-safe. */
struct control *control_free(struct control *c);

void control_get_stats(const struct control *c, struct control_stats *ret);
/* Change the two deadlines (tests use short ones); applies to later connections. */
void control_set_timeouts(struct control *c, double request_timeout, double idle_timeout);
/* Whether the socket came from systemd. */
bool control_is_activated(const struct control *c);

#endif
