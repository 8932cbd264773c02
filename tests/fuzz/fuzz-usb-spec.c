/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the usb transport's device spec parser: arbitrary bytes as the
 * device value. Contract: success yields a spec whose fields are in range and whose path
 * formats; failure leaves the spec untouched and a terminated reason within errlen.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "usb-spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usb_spec spec, untouched;
	char err[USB_SPEC_ERROR_MAX + 1];
	char path[USB_SPEC_PATH_MAX];
	char *text;

	/* An exact-size heap copy lets ASan catch an overread past the terminator. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	memset(&spec, 0xa5, sizeof(spec));
	untouched = spec;
	memset(err, 'z', sizeof(err));
	int r = usb_spec_parse(text, &spec, err, USB_SPEC_ERROR_MAX);
	check(err[USB_SPEC_ERROR_MAX] == 'z');
	if (r == 0) {
		check(usb_spec_is_usb(text));
		check(spec.iface >= -1 && spec.iface <= 255);
		check(spec.kind == USB_SPEC_ID || spec.kind == USB_SPEC_PATH);
		if (spec.kind == USB_SPEC_PATH) {
			check(spec.bus >= 1 && spec.n_ports >= 1 &&
			      spec.n_ports <= USB_SPEC_MAX_PORTS);
			usb_spec_format_path(spec.bus, spec.ports, spec.n_ports, path,
					     sizeof(path));
			check(path[0] != '\0' && strlen(path) < sizeof(path));
		}
	} else {
		check(r == -EINVAL);
		check(memcmp(&spec, &untouched, sizeof(spec)) == 0);
		check(memchr(err, '\0', USB_SPEC_ERROR_MAX) != NULL && err[0] != '\0');
	}
	free(text);
	return 0;
}
