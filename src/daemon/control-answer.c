/* SPDX-License-Identifier: MIT */
/*
 * The answer to one request line of the control protocol: parse it, check that the peer may
 * make a change, call the daemon through struct control_ops and turn what it returns into a
 * reply. Pure apart from the group lookup a change request needs: no sockets, no loop, so
 * the fuzz target and the unit test drive it directly; control-server.c does the I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admin-auth.h"
#include "control-answer.h"

static json_t *ok_reply(json_t *result)
{
	json_t *reply = json_object();

	if (!reply || !result) {
		json_decref(reply);
		json_decref(result);
		return NULL;
	}
	if (json_object_set_new(reply, "ok", json_true()) < 0 ||
	    json_object_set_new(reply, "result", result) < 0) {
		json_decref(reply);
		return NULL;
	}
	return reply;
}

/*
 * Membership is judged on the groups the kernel recorded when the peer connected
 * (SO_PEERGROUPS, Linux 4.13), taken atomically with SO_PEERCRED. The alternatives are
 * weaker: /proc/<pid>/status may describe another process once the peer has exited and its
 * pid is reused, and getgrouplist() tells what the user's login would get, not what this
 * process has (a sandboxed service drops groups, newgrp adds one). getgrouplist() is kept
 * only as the fallback for kernels without SO_PEERGROUPS.
 */
bool control_peer_may_change(struct control_peer *peer, const char *admin_group)
{
	gid_t gid = ADMIN_NO_GID;
	bool ok;

	if (!peer)
		return false;
	if (peer->may_change >= 0)
		return peer->may_change;

	if (peer->uid != 0 && admin_group && admin_group[0] &&
	    admin_group_lookup(admin_group, &gid) < 0)
		gid = ADMIN_NO_GID;
	if (peer->groups_known)
		ok = admin_may_change(peer->uid, peer->gid, peer->groups, peer->n_groups, gid);
	else
		ok = admin_may_change(peer->uid, peer->gid, NULL, 0, gid) ||
		     (gid != ADMIN_NO_GID && admin_user_in_group_db(peer->uid, gid));
	peer->may_change = ok;
	return ok;
}

/*
 * A failed request: the routing errnos of control_ops map to codes, and for mux-add and
 * mux-del (mux) those of the mux too; anything else is "failed".
 */
static json_t *errno_reply(int r, const char *err, const char *what, bool mux)
{
	enum control_code code;

	switch (!mux && r != -ENODEV && r != -ENOTUNIQ ? 0 : r) {
	case -ENODEV:
		code = CONTROL_CODE_NO_SUCH_MODEM;
		break;
	case -ENOTUNIQ:
		code = CONTROL_CODE_AMBIGUOUS_MODEM;
		break;
	case -EEXIST:
		code = CONTROL_CODE_EXISTS;
		break;
	case -ENOENT:
		code = CONTROL_CODE_NO_SUCH_MUX;
		break;
	case -EINVAL:
		code = CONTROL_CODE_INVALID_ARGUMENT;
		break;
	default:
		code = CONTROL_CODE_FAILED;
		break;
	}
	if (err[0])
		return control_error_reply(code, "%s", err);
	return control_error_reply(code, "%s failed: %s", what, strerror(r < 0 ? -r : EIO));
}

static json_t *dispatch(const struct control_ops *ops, void *userdata,
			const struct control_request *req)
{
	char err[CONTROL_ERROR_MAX] = "";
	const char *what = control_command_to_string(req->command);
	const char *modem = req->modem[0] ? req->modem : NULL;
	json_t *result = NULL;
	int r = -ENOTSUP;

	switch (req->command) {
	case CONTROL_COMMAND_STATUS:
		if (ops->status)
			r = ops->status(userdata, modem, &result, err, sizeof(err));
		break;
	case CONTROL_COMMAND_MUX_LIST:
		if (ops->mux_list)
			r = ops->mux_list(userdata, modem, &result, err, sizeof(err));
		break;
	case CONTROL_COMMAND_STATS:
		if (ops->stats)
			r = ops->stats(userdata, modem, &result, err, sizeof(err));
		break;
	case CONTROL_COMMAND_MUX_ADD:
		if (ops->mux_add)
			r = ops->mux_add(userdata, modem, &req->mux, &result, err, sizeof(err));
		break;
	case CONTROL_COMMAND_MUX_DEL:
		if (ops->mux_del)
			r = ops->mux_del(userdata, modem, req->id, &result, err, sizeof(err));
		if (r == -ENOENT && !err[0])
			snprintf(err, sizeof(err), "no mux %u", req->id);
		break;
	case CONTROL_COMMAND_RELOAD:
		if (ops->reload)
			r = ops->reload(userdata, modem, &result, err, sizeof(err));
		break;
	case _CONTROL_COMMAND_MAX:
		return control_error_reply(CONTROL_CODE_INVALID_REQUEST, "unknown command");
	}
	if (r < 0)
		return errno_reply(r, err, what,
				   req->command == CONTROL_COMMAND_MUX_ADD ||
					   req->command == CONTROL_COMMAND_MUX_DEL);
	if (!result)
		return control_error_reply(CONTROL_CODE_FAILED, "%s: no result (out of memory)",
					   what);
	return ok_reply(result);
}

json_t *control_answer_command(const struct control_ops *ops, void *userdata,
			       struct control_peer *peer, const char *admin_group, const char *line,
			       size_t len, int *ret_command)
{
	struct control_request req;
	enum control_code code;
	char err[CONTROL_ERROR_MAX];

	*ret_command = -1;
	if (control_request_parse(line, len, &req, &code, err, sizeof(err)) < 0)
		return control_error_reply(code, "%s", err);
	*ret_command = (int)req.command;

	if (control_command_is_change(req.command) && !control_peer_may_change(peer, admin_group)) {
		if (admin_group && admin_group[0])
			return control_error_reply(CONTROL_CODE_PERMISSION_DENIED,
						   "permission denied: %s needs root or "
						   "membership in group '%s'",
						   control_command_to_string(req.command),
						   admin_group);
		return control_error_reply(CONTROL_CODE_PERMISSION_DENIED,
					   "permission denied: %s needs root (no admin-group is "
					   "configured)",
					   control_command_to_string(req.command));
	}
	return dispatch(ops, userdata, &req);
}

json_t *control_answer(const struct control_ops *ops, void *userdata, struct control_peer *peer,
		       const char *admin_group, const char *line, size_t len)
{
	int command;

	return control_answer_command(ops, userdata, peer, admin_group, line, len, &command);
}
