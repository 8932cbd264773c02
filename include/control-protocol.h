/* SPDX-License-Identifier: MIT */
/*
 * The control socket: qmapctl's way into the daemon.
 *
 * Protocol: an AF_UNIX stream socket carrying newline-delimited JSON, one compact object per
 * line in both directions, one reply per request, in order.
 *   request:  {"command": "status" | "mux-list" | "stats" | "mux-add" | "mux-del" | "reload",
 *              "modem": "NAME" (optional, any command: the modem it is for, as [modem.NAME]
 *                       spells it; without it status, mux-list and stats cover every
 *                       modem, and mux-add and mux-del need it when there are several),
 *              "id": N (mux-add and mux-del only, 1..254),
 *              "settings": {"apn": "internet", "ip-type": "ipv4v6", ...} (mux-add only:
 *                           any [mux.N] key of qmapd.conf, every value a JSON string)}
 *   reply:    {"ok": true, "result": {...}}
 *             {"ok": false, "error": "human readable message", "code": "invalid-request" |
 *              "permission-denied" | "no-such-mux" | "exists" | "invalid-argument" | "failed" |
 *              "no-such-modem" | "ambiguous-modem"}
 * Results: status, mux-list and stats as manager.h describes them (stats gains a "control"
 * object with this server's counters; status without "modem" a "dbus" object {"built":
 * bool, "state": what start decided about ModemManager's D-Bus API}); mux-add {"modem": NAME, "id": N, "interface":
 * "NAME.N"}; mux-del {"modem": NAME, "id": N}; reload {"added", "removed", "changed",
 * "modems-added", "modems-removed", "modems-recreated"}.
 *
 * A request line may be at most CONTROL_REQUEST_MAX bytes: a longer one gets an
 * invalid-request reply and the connection is closed, as there is no telling where the next
 * request starts. A line that is not valid JSON gets an invalid-request reply and the
 * connection stays usable. Blank lines are ignored. At end of input an unterminated last
 * line is still answered, so `printf '{"command":"status"}' | nc -U` works.
 */
#ifndef QMAPD_CONTROL_PROTOCOL_H
#define QMAPD_CONTROL_PROTOCOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Requests are a few hundred bytes; 64 KiB leaves room for every key at its longest. */
#define CONTROL_REQUEST_MAX (64 * 1024)
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
	CONTROL_CODE_NO_SUCH_MODEM,   /* the request names a modem qmapd does not have */
	CONTROL_CODE_AMBIGUOUS_MODEM, /* mux-add or mux-del without a name, several modems */
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

/* A parsed request. */
struct control_request {
	enum control_command command;
	char modem[CONFIG_MODEM_NAME_MAX + 1]; /* "" when the request names none */
	unsigned id;			       /* mux-add, mux-del */
	struct config_mux mux; /* mux-add: defaults, the settings, config_mux_finish()ed */
};

/*
 * Parse one request line (without its newline; need not be NUL-terminated). Pure: never
 * logs, never allocates beyond jansson's temporaries. Returns 0, or -EINVAL with *ret_code
 * and a message in err (*ret is then unspecified).
 */
int control_request_parse(const char *line, size_t len, struct control_request *ret,
			  enum control_code *ret_code, char *err, size_t errlen);

/* {"ok": false, "error": ..., "code": ...}; non-ASCII and control characters are escaped. */
json_t *control_error_reply(enum control_code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
