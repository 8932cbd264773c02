/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the qmapd.conf parser: arbitrary bytes as a config file. Besides
 * what the sanitizers see, the contract is checked: success yields the one modem of a
 * device, or discovery, or (discovery = off) the modems of [modem.NAME] sections; modems
 * with valid names, devices and unique interface names; failure leaves *ret_config alone and
 * always leaves a terminated "name:..." message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_muxes(struct config_mux *const *mux)
{
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct config_mux *m = mux[id];

		if (!m)
			continue;
		check(id >= CONFIG_MUX_ID_MIN);
		check(m->present);
		check(m->id == id);
		check(m->interface[0] != '\0');
		check(memchr(m->interface, '\0', sizeof(m->interface)) != NULL);
		check(m->n_routes <= CONFIG_MAX_ROUTES);
	}
}

static void check_config(const struct config *c)
{
	/* Every mux of every modem, to compare their interface names pairwise. */
	static const struct config_mux *all[CONFIG_MAX_MODEMS * CONFIG_MUX_ID_MAX];
	size_t n = 0;

	check(c->n_exclude <= CONFIG_MAX_EXCLUDES);
	/* the control planes take it as is: never 0 s (no wait at all) or hours */
	check(c->device.open_timeout >= CONFIG_OPEN_TIMEOUT_MIN &&
	      c->device.open_timeout <= CONFIG_OPEN_TIMEOUT_MAX);
	check(c->n_modems <= CONFIG_MAX_MODEMS);
	check(c->n_modems == 0 || c->modem != NULL);
	if (c->device.device[0]) {
		/* [device] names a device: the one modem of old, no discovery */
		check(!c->discovery);
		check(c->n_modems == 1);
		check(strcmp(c->modem[0].device.device, c->device.device) == 0);
	} else {
		/* discovery, or with discovery = off at least one [modem.NAME] to serve */
		check(c->discovery || c->n_modems > 0);
	}
	check_muxes(c->mux);
	for (unsigned i = 0; i < c->n_modems; i++) {
		const struct config_modem *m = &c->modem[i];

		check(config_modem_name_is_valid(m->name));
		check(m->device.device[0] != '\0');
		check(m->device.open_timeout >= CONFIG_OPEN_TIMEOUT_MIN &&
		      m->device.open_timeout <= CONFIG_OPEN_TIMEOUT_MAX);
		check_muxes(m->mux);
		for (unsigned j = 0; j < i; j++) {
			check(strcmp(c->modem[j].name, m->name) != 0);
			check(strcmp(c->modem[j].device.control_link, m->device.control_link) != 0);
		}
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
			if (m->mux[id])
				all[n++] = m->mux[id];
	}
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < j; i++)
			check(strcmp(all[i]->interface, all[j]->interface) != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int sentinel;
	struct config *const untouched = (struct config *)&sentinel;
	struct config *c = untouched;
	char err[CONFIG_ERROR_MAX + 1];
	char *text;
	int r;

	/* The API takes a C string; an exact-size heap copy lets ASan catch an overread. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	/* One guard byte past the size we pass: the parser must never write there. */
	memset(err, 'z', sizeof(err));
	r = config_load_string(text, "fuzz.conf", &c, err, CONFIG_ERROR_MAX);
	check(err[CONFIG_ERROR_MAX] == 'z');
	check(memchr(err, '\0', CONFIG_ERROR_MAX) != NULL);
	if (r == 0) {
		check(c != untouched && c != NULL);
		check(err[0] == '\0');
		check_config(c);
		config_free(c);
	} else {
		check(r == -EINVAL || r == -ENOMEM);
		check(c == untouched);
		check(strncmp(err, "fuzz.conf", strlen("fuzz.conf")) == 0);
	}

	free(text);
	return 0;
}
