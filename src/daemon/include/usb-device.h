/* SPDX-License-Identifier: MIT */
/*
 * What a USB device is to qmapd, the one definition the usb transport (which claims a modem)
 * and discovery (which reports modems) share: its QMI interface, chosen like qmi_wwan does
 * (the configured one, a well-known modem's from usb-ids.c, else the first vendor-specific
 * ff/ff/ff interface with interrupt IN + bulk IN + bulk OUT), its port path in kernel
 * naming and its serial number.
 */
#ifndef QMAPD_USB_DEVICE_H
#define QMAPD_USB_DEVICE_H

#include <libusb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usb-spec.h"

struct usb_qmi_iface {
	uint8_t ifnum;
	uint8_t ep_int, ep_in, ep_out;
	uint16_t mps_in;  /* wMaxPacketSize of bulk IN (512 if the descriptor says 0) */
	uint16_t mps_out; /* of bulk OUT, 0 if the descriptor says 0 */
	const char *how;  /* "as configured", the table entry's name, or the class rule */
};

/* What usb_qmi_find() says when the class rule chose the interface. */
#define USB_QMI_HOW_CLASS "vendor class ff/ff/ff with 3 endpoints"

/*
 * The QMI interface of dev, from its active configuration. iface >= 0: only that interface
 * number is considered. Reads descriptors only (no open, nothing claimed). Returns 0,
 * -ENOENT when the device has none, or another -errno from libusb.
 */
int usb_qmi_find(libusb_device *dev, const struct libusb_device_descriptor *dd, int iface,
		 struct usb_qmi_iface *ret);

/*
 * An MBIM function (MBIM 1.0 §6): a communications interface 02/0e/00 with an interrupt IN
 * endpoint and the MBIM functional descriptor, and the data interface its CDC union names,
 * whose data alternate setting 0a/00/02 (NTB) has bulk IN + bulk OUT. As cdc_mbim finds it,
 * also where the communications interface is MBIM only in an alternate setting (NCM/MBIM
 * functions).
 */
struct usb_mbim_iface {
	uint8_t comm_ifnum, comm_alt; /* the alternate setting that is 02/0e */
	uint8_t data_ifnum, data_alt;
	uint8_t ep_int, ep_in, ep_out;
	uint16_t mps_in;  /* 512 if the descriptor says 0 */
	uint16_t mps_out; /* 0 if the descriptor says 0 */
	struct usb_mbim_desc desc;
	const char *how;
};

#define USB_MBIM_HOW_CLASS "MBIM class 02/0e with data interface 0a/00/02"

/*
 * The MBIM function of dev, from its active configuration; iface >= 0: only the function
 * whose communications or data interface has that number. Reads descriptors only. Returns
 * 0, -ENOENT when there is none, or another -errno from libusb.
 */
int usb_mbim_find(libusb_device *dev, int iface, struct usb_mbim_iface *ret);

/*
 * control = auto for a configured usb:VID:PID[:IF] or usb-path:... device: whether the
 * first such device present has an MBIM function and no QMI interface (*mbim), as the usb
 * transport would choose. Reads descriptors only. 0, -ENODEV when no such device is present
 * (or none has either function), -EINVAL for another spec, or -errno from libusb.
 */
int usb_function_probe(const char *spec, bool *mbim);

/*
 * The name the kernel's cdc-wdm gave interface ifnum of configuration cfg of the device at
 * path ("BUS-PORT.PORT...") while qmi_wwan or cdc_mbim holds it: the cdc-wdm* entry of
 * SYSFS/bus/usb/devices/PATH:CFG.IFNUM/usbmisc/, into buf (left alone on failure). 0,
 * -ENOENT when there is none (no driver bound, or no such interface), -ENAMETOOLONG when it
 * does not fit, or another -errno.
 */
int usb_wdm_name(const char *sysfs, const char *path, unsigned cfg, unsigned ifnum, char *buf,
		 size_t len);

/* "BUS-PORT.PORT..." as the kernel names dev; "" if it does not fit. Returns buf. */
const char *usb_device_path(libusb_device *dev, char *buf, size_t len);
/* Whether dev sits on this bus and port chain. */
bool usb_device_path_matches(libusb_device *dev, uint8_t bus, const uint8_t *ports, uint8_t n);
/* The serial number string of an opened device, "" when it has none or it cannot be read. */
void usb_device_serial(libusb_device_handle *h, const struct libusb_device_descriptor *dd,
		       char *buf, size_t len);
/* Its manufacturer and product strings (iManufacturer, iProduct: what udev shows as the
 * device's manufacturer and product), each "" when it has none or it cannot be read. */
void usb_device_names(libusb_device_handle *h, const struct libusb_device_descriptor *dd,
		      char *manufacturer, size_t manufacturer_len, char *product,
		      size_t product_len);

#endif
