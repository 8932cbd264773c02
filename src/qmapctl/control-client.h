/* SPDX-License-Identifier: MIT */
/*
 * The client end of the control socket (protocol in control-protocol.h): one connection, one request
 * at a time, every wait bounded by a deadline on CLOCK_MONOTONIC. Pure I/O: never prints.
 */
#ifndef QMAPD_CONTROL_CLIENT_H
#define QMAPD_CONTROL_CLIENT_H

#include <jansson.h>
#include <stdint.h>

#include "control-protocol.h"

/* A reply larger than this is not from qmapd (a status of 254 muxes is < 1 MiB). */
#define CONTROL_CLIENT_REPLY_MAX (16 * 1024 * 1024)

struct control_client;

/* Microseconds on CLOCK_MONOTONIC, the clock of every deadline here. */
uint64_t control_client_now(void);

/*
 * Connect to path. -ENOENT or -ECONNREFUSED: nothing listens there (qmapd is not running);
 * -EACCES: the socket's mode or group keeps us out; -ETIMEDOUT: the listen queue stayed
 * full until the deadline.
 */
int control_client_new(const char *path, uint64_t deadline, struct control_client **ret);
struct control_client *control_client_free(struct control_client *c);

/*
 * Send request (a JSON object) and wait for the reply line. 0 with *ret_reply (a new
 * reference, always an object); -ETIMEDOUT; -ECONNRESET if qmapd closed the connection
 * without a reply; -EBADMSG if the reply is not one JSON object or is too large.
 */
int control_client_call(struct control_client *c, json_t *request, uint64_t deadline,
			json_t **ret_reply);

/*
 * Take a reply apart. 1: "ok" is true, *ret_result borrowed from reply (may be NULL when
 * absent). 0: an error reply, *ret_code and *ret_error (borrowed) set; an unknown code
 * reads as CONTROL_CODE_FAILED. -EBADMSG: neither. Out parameters may be NULL.
 */
int control_client_reply(json_t *reply, json_t **ret_result, enum control_code *ret_code,
			 const char **ret_error);

#endif
