/* SPDX-License-Identifier: MIT */
/*
 * The control protocol (control-protocol.h): command and code names, request parsing and
 * error replies. Pure: shared by the daemon's server and by qmapctl, never logs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control-protocol.h"
#include "macro.h"

/* Peer input in a message: bounded, printable ASCII only, as the config parser quotes. */
#define QUOTE(s) CONFIG_QUOTE(s)
static const char *const command_names[_CONTROL_COMMAND_MAX] = {
	[CONTROL_COMMAND_STATUS] = "status",   [CONTROL_COMMAND_MUX_LIST] = "mux-list",
	[CONTROL_COMMAND_STATS] = "stats",     [CONTROL_COMMAND_MUX_ADD] = "mux-add",
	[CONTROL_COMMAND_MUX_DEL] = "mux-del", [CONTROL_COMMAND_RELOAD] = "reload",
};

static const char *const code_names[_CONTROL_CODE_MAX] = {
	[CONTROL_CODE_INVALID_REQUEST] = "invalid-request",
	[CONTROL_CODE_PERMISSION_DENIED] = "permission-denied",
	[CONTROL_CODE_NO_SUCH_MUX] = "no-such-mux",
	[CONTROL_CODE_EXISTS] = "exists",
	[CONTROL_CODE_INVALID_ARGUMENT] = "invalid-argument",
	[CONTROL_CODE_FAILED] = "failed",
	[CONTROL_CODE_NO_SUCH_MODEM] = "no-such-modem",
	[CONTROL_CODE_AMBIGUOUS_MODEM] = "ambiguous-modem",
};

const char *control_command_to_string(enum control_command c)
{
	return (unsigned)c < _CONTROL_COMMAND_MAX ? command_names[c] : NULL;
}

int control_command_from_string(const char *s)
{
	for (unsigned i = 0; s && i < _CONTROL_COMMAND_MAX; i++)
		if (strcmp(s, command_names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

bool control_command_is_change(enum control_command c)
{
	switch (c) {
	case CONTROL_COMMAND_STATUS:
	case CONTROL_COMMAND_MUX_LIST:
	case CONTROL_COMMAND_STATS:
		return false;
	case CONTROL_COMMAND_MUX_ADD:
	case CONTROL_COMMAND_MUX_DEL:
	case CONTROL_COMMAND_RELOAD:
		return true;
	case _CONTROL_COMMAND_MAX:
		break;
	}
	return true; /* unknown: the stricter answer */
}

const char *control_code_to_string(enum control_code c)
{
	return (unsigned)c < _CONTROL_CODE_MAX ? code_names[c] : NULL;
}

int control_code_from_string(const char *s)
{
	for (unsigned i = 0; s && i < _CONTROL_CODE_MAX; i++)
		if (strcmp(s, code_names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

/* Where control_request_parse() explains a refusal. */
struct parse_error {
	enum control_code code;
	char *buf;
	size_t len;
};

/* Always -EINVAL. */
_printf_(3, 4) static int request_error(struct parse_error *e, enum control_code code,
					const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	if (e->buf && e->len > 0) {
		va_start(ap, fmt);
		vsnprintf(e->buf, e->len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int parse_id(json_t *req, enum control_command command, unsigned *ret, struct parse_error *e)
{
	json_t *id = json_object_get(req, "id");
	json_int_t v;

	if (!id)
		return request_error(e, CONTROL_CODE_INVALID_REQUEST, "%s needs an \"id\"",
				     command_names[command]);
	if (!json_is_integer(id))
		return request_error(e, CONTROL_CODE_INVALID_REQUEST, "\"id\" must be an integer");
	v = json_integer_value(id);
	if (v < CONFIG_MUX_ID_MIN || v > CONFIG_MUX_ID_MAX)
		return request_error(e, CONTROL_CODE_INVALID_ARGUMENT,
				     "invalid mux id %lld: expected %d..%d", (long long)v,
				     CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX);
	*ret = (unsigned)v;
	return 0;
}

/* "modem": a name as [modem.NAME] spells it; absent leaves modem "". */
static int parse_modem(json_t *req, char modem[static CONFIG_MODEM_NAME_MAX + 1],
		       struct parse_error *e)
{
	json_t *name = json_object_get(req, "modem");

	if (!name)
		return 0;
	if (!json_is_string(name))
		return request_error(e, CONTROL_CODE_INVALID_REQUEST, "\"modem\" must be a string");
	if (!config_modem_name_is_valid(json_string_value(name)))
		return request_error(e, CONTROL_CODE_INVALID_ARGUMENT,
				     "invalid modem name %s: expected 1 to %d of a-z, 0-9, '_' "
				     "and '-'",
				     QUOTE(json_string_value(name)), CONFIG_MODEM_NAME_MAX);
	strcpy(modem, json_string_value(name));
	return 0;
}

static int parse_settings(json_t *req, struct config_mux *m, struct parse_error *e)
{
	json_t *settings = json_object_get(req, "settings");
	char err[CONTROL_ERROR_MAX];

	if (settings && !json_is_object(settings))
		return request_error(e, CONTROL_CODE_INVALID_REQUEST,
				     "\"settings\" must be an object");
	for (void *it = json_object_iter(settings); it; it = json_object_iter_next(settings, it)) {
		const char *key = json_object_iter_key(it);
		json_t *value = json_object_iter_value(it);

		/* Keys are checked by config_mux_set(); a non-string value says nothing yet. */
		if (!json_is_string(value))
			return request_error(e, CONTROL_CODE_INVALID_ARGUMENT,
					     "value of %s must be a string", QUOTE(key));
		if (config_mux_set(m, key, json_string_value(value), err, sizeof(err)) < 0)
			return request_error(e, CONTROL_CODE_INVALID_ARGUMENT, "%s", err);
	}
	if (config_mux_finish(m, err, sizeof(err)) < 0)
		return request_error(e, CONTROL_CODE_INVALID_ARGUMENT, "%s", err);
	return 0;
}

static int request_parse(const char *line, size_t len, struct control_request *ret,
			 struct parse_error *e)
{
	_cleanup_(json_decrefp) json_t *req = NULL;
	json_error_t jerr;
	json_t *command;
	int c, r;

	if (!line || !ret)
		return request_error(e, CONTROL_CODE_INVALID_REQUEST, "empty request");
	if (len > CONTROL_REQUEST_MAX)
		return request_error(e, CONTROL_CODE_INVALID_REQUEST,
				     "request longer than %d bytes", CONTROL_REQUEST_MAX);

	/* Duplicates are refused: which of two "id"s counts would be a guess. */
	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req)
		return request_error(e, CONTROL_CODE_INVALID_REQUEST, "invalid JSON at byte %d: %s",
				     jerr.position, jerr.text);
	if (!json_is_object(req))
		return request_error(e, CONTROL_CODE_INVALID_REQUEST,
				     "a request must be a JSON object");

	command = json_object_get(req, "command");
	if (!command)
		return request_error(e, CONTROL_CODE_INVALID_REQUEST, "missing \"command\"");
	if (!json_is_string(command))
		return request_error(e, CONTROL_CODE_INVALID_REQUEST,
				     "\"command\" must be a string");
	c = control_command_from_string(json_string_value(command));
	if (c < 0)
		return request_error(e, CONTROL_CODE_INVALID_REQUEST,
				     "unknown command %s: expected status, mux-list, stats, "
				     "mux-add, mux-del or reload",
				     QUOTE(json_string_value(command)));

	/* Members a command does not take are refused, so a typo is not silently ignored. */
	for (void *it = json_object_iter(req); it; it = json_object_iter_next(req, it)) {
		const char *key = json_object_iter_key(it);
		bool known = strcmp(key, "command") == 0 || strcmp(key, "modem") == 0 ||
			     (strcmp(key, "id") == 0 &&
			      (c == CONTROL_COMMAND_MUX_ADD || c == CONTROL_COMMAND_MUX_DEL)) ||
			     (strcmp(key, "settings") == 0 && c == CONTROL_COMMAND_MUX_ADD);

		if (!known)
			return request_error(e, CONTROL_CODE_INVALID_REQUEST,
					     "unexpected member %s in a %s request", QUOTE(key),
					     command_names[c]);
	}

	memset(ret, 0, sizeof(*ret));
	ret->command = (enum control_command)c;
	r = parse_modem(req, ret->modem, e);
	if (r < 0)
		return r;
	if (c == CONTROL_COMMAND_MUX_ADD || c == CONTROL_COMMAND_MUX_DEL) {
		r = parse_id(req, ret->command, &ret->id, e);
		if (r < 0)
			return r;
	}
	if (c == CONTROL_COMMAND_MUX_ADD) {
		config_mux_init_defaults(&ret->mux, ret->id);
		r = parse_settings(req, &ret->mux, e);
		if (r < 0)
			return r;
	}
	return 0;
}

int control_request_parse(const char *line, size_t len, struct control_request *ret,
			  enum control_code *ret_code, char *err, size_t errlen)
{
	struct parse_error e = { .code = CONTROL_CODE_INVALID_REQUEST, .buf = err, .len = errlen };
	int r;

	if (err && errlen > 0)
		err[0] = '\0';
	r = request_parse(line, len, ret, &e);
	if (r < 0 && ret_code)
		*ret_code = e.code;
	return r;
}

json_t *control_error_reply(enum control_code code, const char *fmt, ...)
{
	char msg[CONTROL_ERROR_MAX], clean[CONTROL_ERROR_MAX];
	json_t *reply;
	size_t o = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	/* jansson takes only UTF-8, and a message may carry what the daemon was told. */
	for (size_t i = 0; msg[i] && o + 5 < sizeof(clean); i++) {
		unsigned char ch = msg[i];

		if (ch < 0x20 || ch >= 0x7f)
			o += snprintf(clean + o, sizeof(clean) - o, "\\x%02x", ch);
		else
			clean[o++] = ch;
	}
	clean[o] = '\0';

	reply = json_object();
	if (!reply)
		return NULL;
	if (json_object_set_new(reply, "ok", json_false()) < 0 ||
	    json_object_set_new(reply, "error", json_string(clean)) < 0 ||
	    json_object_set_new(reply, "code",
				json_string(control_code_to_string(code) ?: "failed")) < 0) {
		json_decref(reply);
		return NULL;
	}
	return reply;
}
