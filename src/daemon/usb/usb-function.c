/* SPDX-License-Identifier: MIT */
/*
 * Which function a configured usb: or usb-path: device has, for control = auto (usb-device.h).
 * A short-lived libusb context of its own: it runs once per modem created, before the
 * transport's context exists, and reads descriptors only.
 */
#include <errno.h>

#include "usb-device.h"
#include "usb-loop.h"
#include "usb-spec.h"

static bool usb_function_matches(libusb_device *dev, const struct libusb_device_descriptor *dd,
				 const struct usb_spec *spec)
{
	if (spec->kind == USB_SPEC_ID)
		return dd->idVendor == spec->vid && dd->idProduct == spec->pid;
	return usb_device_path_matches(dev, spec->bus, spec->ports, spec->n_ports);
}

int usb_function_probe(const char *spec_text, bool *mbim)
{
	struct usb_spec spec;
	libusb_context *ctx;
	libusb_device **list;
	char err[USB_SPEC_ERROR_MAX];
	ssize_t n;
	int r = -ENODEV;

	if (!usb_spec_is_usb(spec_text) || usb_spec_parse(spec_text, &spec, err, sizeof(err)) < 0)
		return -EINVAL;
	r = libusb_init(&ctx);
	if (r < 0)
		return usb_errno(r);
	n = libusb_get_device_list(ctx, &list);
	if (n < 0) {
		libusb_exit(ctx);
		return usb_errno((int)n);
	}
	r = -ENODEV;
	/* The first matching device with a function decides, as the transport's scan would. */
	for (ssize_t i = 0; i < n && r < 0; i++) {
		struct libusb_device_descriptor dd;
		struct usb_qmi_iface q;
		struct usb_mbim_iface m;

		if (libusb_get_device_descriptor(list[i], &dd) < 0 ||
		    !usb_function_matches(list[i], &dd, &spec))
			continue;
		if (usb_qmi_find(list[i], &dd, spec.iface, &q) == 0)
			*mbim = false, r = 0;
		else if (usb_mbim_find(list[i], spec.iface, &m) == 0)
			*mbim = true, r = 0;
	}
	libusb_free_device_list(list, 1);
	libusb_exit(ctx);
	return r;
}
