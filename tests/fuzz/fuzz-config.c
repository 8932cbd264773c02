/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the qmapd.conf parser: arbitrary bytes as a config file. Besides
 * what the sanitizers see, the contract is checked: success yields a config with a device,
 * failure leaves *ret_config alone and always leaves a terminated "name:..." message.
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
		check(c->device.device[0] != '\0');
		for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
			const struct config_mux *m = &c->mux[id];

			if (!m->present)
				continue;
			check(m->id == id);
			check(m->interface[0] != '\0');
			check(m->n_routes <= CONFIG_MAX_ROUTES);
		}
		config_free(c);
	} else {
		check(r == -EINVAL);
		check(c == untouched);
		check(strncmp(err, "fuzz.conf", strlen("fuzz.conf")) == 0);
	}

	free(text);
	return 0;
}
