/* SPDX-License-Identifier: MIT */
/*
 * Which USB devices an `exclude =` spec names: usb:VID:PID[:IF], usb-path:BUS-PORT[.PORT...]
 * [:IF] or usb-serial:SERIAL. The :IF suffix is accepted and ignored (a device is excluded
 * whole). Pure: never logs.
 */
#ifndef QMAPD_DISCOVERY_EXCLUDE_H
#define QMAPD_DISCOVERY_EXCLUDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXCLUDE_SCHEME_SERIAL "usb-serial:"

/* 0, or -EINVAL with the reason in err. */
int exclude_spec_check(const char *spec, char *err, size_t errlen);
/* Whether a usb-serial: spec: only the serial, read by opening the device, can tell. */
bool exclude_spec_needs_serial(const char *spec);
/*
 * Whether spec names the device vid:pid at path ("1-1.4") with that serial. serial NULL:
 * not read yet, so a usb-serial: spec does not match; "" (the device has none) never does.
 */
bool exclude_spec_matches(const char *spec, uint16_t vid, uint16_t pid, const char *path,
			  const char *serial);

#endif
