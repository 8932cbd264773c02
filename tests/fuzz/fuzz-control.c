/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the control protocol: arbitrary bytes as one request line, answered
 * by control_answer() against a stub manager, no sockets. The first byte picks the peer
 * (root or an unprivileged user), the rest is the line. Besides what the sanitizers see,
 * the contract is checked: every input gets exactly one reply object, "ok" true with a
 * result or false with a message and a known code, and the reply encodes to one line.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

/* Every modem name reaching the daemon must be one a [modem.NAME] section could have. */
static void check_modem(const char *modem)
{
	check(!modem || config_modem_name_is_valid(modem));
}

static int stub_status(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	(void)userdata;
	check_modem(modem);
	if (modem && strcmp(modem, "x") == 0) {
		snprintf(err, errlen, "no modem 'x'");
		return -ENODEV;
	}
	*ret = json_pack("{s:[{s:s, s:{s:s}, s:[]}]}", "modems", "name", "a", "modem", "state",
			 "ready", "muxes");
	return 0;
}

static int stub_stats(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	(void)userdata;
	(void)err;
	(void)errlen;
	check_modem(modem);
	*ret = json_object();
	return 0;
}

/* Every mux reaching the daemon must be one the file parser would have accepted. */
static int stub_mux_add(void *userdata, const char *modem, const struct config_mux *cfg,
			json_t **ret, char *err, size_t errlen)
{
	(void)userdata;
	check_modem(modem);
	check(cfg->present);
	check(cfg->id >= CONFIG_MUX_ID_MIN && cfg->id <= CONFIG_MUX_ID_MAX);
	check(cfg->interface[0] != '\0');
	check(memchr(cfg->interface, '\0', sizeof(cfg->interface)) != NULL);
	check(cfg->n_routes <= CONFIG_MAX_ROUTES);
	if (cfg->id == 1) {
		snprintf(err, errlen, "mux 1 exists");
		return -EEXIST;
	}
	if (!modem)
		return -ENOTUNIQ;
	*ret = json_object();
	return 0;
}

static int stub_mux_del(void *userdata, const char *modem, unsigned id, json_t **ret, char *err,
			size_t errlen)
{
	(void)userdata;
	(void)err;
	(void)errlen;
	check_modem(modem);
	check(id >= CONFIG_MUX_ID_MIN && id <= CONFIG_MUX_ID_MAX);
	if (id % 2)
		return -ENOENT;
	*ret = json_object();
	return 0;
}

static int stub_reload(void *userdata, const char *modem, json_t **ret, char *err, size_t errlen)
{
	(void)userdata;
	(void)err;
	(void)errlen;
	check_modem(modem);
	*ret = json_object();
	return 0;
}

static const struct control_ops ops = {
	.status = stub_status,
	.mux_list = stub_status,
	.stats = stub_stats,
	.mux_add = stub_mux_add,
	.mux_del = stub_mux_del,
	.reload = stub_reload,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct control_peer peer = { .pid = 1, .may_change = -1 };
	struct control_request req;
	enum control_code code;
	char err[CONTROL_ERROR_MAX + 1];
	const char *s;
	json_t *reply, *ok;
	char *line, *text;
	int r;

	if (size < 1)
		return 0;
	peer.uid = data[0] & 1 ? 0 : 65534;
	peer.gid = peer.uid;
	data++;
	size--;

	/* An exact-size heap copy without a terminator: an overread is ASan's to see. */
	line = malloc(size ? size : 1);
	if (!line)
		return 0;
	memcpy(line, data, size);

	memset(err, 'z', sizeof(err));
	r = control_request_parse(line, size, &req, &code, err, CONTROL_ERROR_MAX);
	check(err[CONTROL_ERROR_MAX] == 'z');
	check(memchr(err, '\0', CONTROL_ERROR_MAX) != NULL);
	if (r == 0) {
		check(err[0] == '\0');
		check((unsigned)req.command < _CONTROL_COMMAND_MAX);
	} else {
		check(r == -EINVAL);
		check((unsigned)code < _CONTROL_CODE_MAX);
		check(err[0] != '\0');
	}

	reply = control_answer(&ops, NULL, &peer, "", line, size);
	check(reply != NULL);
	ok = json_object_get(reply, "ok");
	check(json_is_boolean(ok));
	if (json_is_true(ok)) {
		check(r == 0);
		check(json_object_get(reply, "result") != NULL);
		/* Changes are for root only when no admin group is configured. */
		check(peer.uid == 0 || !control_command_is_change(req.command));
	} else {
		s = json_string_value(json_object_get(reply, "error"));
		check(s && s[0]);
		check(control_code_from_string(json_string_value(json_object_get(reply, "code"))) >=
		      0);
	}
	text = json_dumps(reply, JSON_COMPACT);
	check(text && !strchr(text, '\n'));

	free(text);
	json_decref(reply);
	free(line);
	return 0;
}
