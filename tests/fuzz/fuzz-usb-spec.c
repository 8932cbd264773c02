/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the usb transport's device spec parser: arbitrary bytes as the
 * device value. Contract: success yields a spec whose fields are in range and whose path
 * formats; failure leaves the spec untouched and a terminated reason within errlen.
 *
 * Input starting with a NUL byte (which no device value has): the rest is an MBIM
 * function's class-specific descriptors for usb_mbim_desc_parse(). Contract: 0, -ENOENT or
 * -EINVAL; an MBIM descriptor found exactly when not -ENOENT; the control
 * size within [64, 4096]; the MTU never above a known segment size or wMTU.
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

static void mbim(const uint8_t *data, size_t size)
{
	struct usb_mbim_desc d;
	/* An exact-size heap copy: ASan sees a read past the last descriptor. */
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return;
	memcpy(buf, data, size);
	memset(&d, 0xa5, sizeof(d));
	int r = usb_mbim_desc_parse(buf, size, &d);
	check(r == 0 || r == -ENOENT || r == -EINVAL);
	check(r != 0 || d.have_mbim);
	check(r != -ENOENT || !d.have_mbim);
	uint16_t c = usb_mbim_control_size(&d);
	check(c >= USB_MBIM_CONTROL_MIN && c <= USB_MBIM_CONTROL_MAX);
	uint16_t mtu = usb_mbim_mtu(&d);
	if (d.have_mbim && d.max_segment_size)
		check(mtu <= d.max_segment_size);
	if (d.have_extended && d.mtu)
		check(mtu <= d.mtu);
	if (!d.have_mbim && !(d.have_extended && d.mtu))
		check(mtu == 0);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usb_spec spec, untouched;
	char err[USB_SPEC_ERROR_MAX + 1];
	char path[USB_SPEC_PATH_MAX];
	char *text;

	if (size > 0 && data[0] == 0) {
		mbim(data + 1, size - 1);
		return 0;
	}
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
