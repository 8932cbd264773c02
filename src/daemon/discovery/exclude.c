/* SPDX-License-Identifier: MIT */
/* Matching USB devices against `exclude =` specs (exclude.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exclude.h"
#include "usb-spec.h"

bool exclude_spec_needs_serial(const char *spec)
{
	return strncmp(spec, EXCLUDE_SCHEME_SERIAL, strlen(EXCLUDE_SCHEME_SERIAL)) == 0;
}

int exclude_spec_check(const char *spec, char *err, size_t errlen)
{
	struct usb_spec u;

	if (exclude_spec_needs_serial(spec)) {
		if (spec[strlen(EXCLUDE_SCHEME_SERIAL)] == '\0') {
			snprintf(err, errlen, "usb-serial: needs the serial number");
			return -EINVAL;
		}
		return 0;
	}
	if (!usb_spec_is_usb(spec)) {
		snprintf(err, errlen,
			 "expected usb:VID:PID, usb-path:BUS-PORT or usb-serial:SERIAL");
		return -EINVAL;
	}
	return usb_spec_parse(spec, &u, err, errlen);
}

bool exclude_spec_matches(const char *spec, uint16_t vid, uint16_t pid, const char *path,
			  const char *serial)
{
	struct usb_spec u;
	char p[USB_SPEC_PATH_MAX];

	if (exclude_spec_needs_serial(spec))
		return serial && serial[0] &&
		       strcmp(spec + strlen(EXCLUDE_SCHEME_SERIAL), serial) == 0;
	if (usb_spec_parse(spec, &u, NULL, 0) < 0)
		return false;
	if (u.kind == USB_SPEC_ID)
		return u.vid == vid && u.pid == pid;
	usb_spec_format_path(u.bus, u.ports, u.n_ports, p, sizeof(p));
	return p[0] && strcmp(p, path) == 0;
}
