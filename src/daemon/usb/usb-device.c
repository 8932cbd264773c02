/* SPDX-License-Identifier: MIT */
/* Recognising a QMI modem's interface or an MBIM function, and a device's path and serial (usb-device.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "usb-device.h"
#include "usb-loop.h"
#include "usb-spec.h"

/* The QMI function: interrupt IN + bulk IN + bulk OUT. Fills ret when it is. */
static bool usb_iface_is_qmi(const struct libusb_interface_descriptor *id,
			     struct usb_qmi_iface *ret)
{
	struct usb_qmi_iface q = { .ifnum = id->bInterfaceNumber };

	/* qmi_wwan rejects two-endpoint ff/ff/ff interfaces: that is DIAG. */
	if (id->bNumEndpoints != 3)
		return false;
	for (int e = 0; e < id->bNumEndpoints; e++) {
		const struct libusb_endpoint_descriptor *ep = &id->endpoint[e];
		uint8_t type = ep->bmAttributes & LIBUSB_TRANSFER_TYPE_MASK;
		bool in = ep->bEndpointAddress & LIBUSB_ENDPOINT_IN;

		if (type == LIBUSB_TRANSFER_TYPE_INTERRUPT && in) {
			q.ep_int = ep->bEndpointAddress;
		} else if (type == LIBUSB_TRANSFER_TYPE_BULK && in) {
			q.ep_in = ep->bEndpointAddress;
			q.mps_in = ep->wMaxPacketSize;
		} else if (type == LIBUSB_TRANSFER_TYPE_BULK && !in) {
			q.ep_out = ep->bEndpointAddress;
			q.mps_out = ep->wMaxPacketSize;
		}
	}
	if (!q.ep_int || !q.ep_in || !q.ep_out)
		return false;
	if (!q.mps_in)
		q.mps_in = 512;
	*ret = q;
	return true;
}

static const struct libusb_interface_descriptor *
usb_find_iface(const struct libusb_config_descriptor *cd, int ifnum)
{
	for (int i = 0; i < cd->bNumInterfaces; i++) {
		const struct libusb_interface *in = &cd->interface[i];
		if (in->num_altsetting > 0 && in->altsetting[0].bInterfaceNumber == ifnum)
			return &in->altsetting[0];
	}
	return NULL;
}

static int usb_qmi_choose(const struct libusb_config_descriptor *cd,
			  const struct libusb_device_descriptor *dd, int iface,
			  struct usb_qmi_iface *ret)
{
	const struct libusb_interface_descriptor *id;

	if (iface >= 0) {
		id = usb_find_iface(cd, iface);
		if (!id || !usb_iface_is_qmi(id, ret))
			return -ENOENT;
		ret->how = "as configured";
		return 0;
	}
	for (unsigned k = 0;; k++) {
		const struct usb_known_modem *m = usb_ids_lookup(dd->idVendor, dd->idProduct, k);
		if (!m)
			break;
		id = usb_find_iface(cd, m->iface);
		if (id && usb_iface_is_qmi(id, ret)) {
			ret->how = m->name;
			return 0;
		}
	}
	for (int i = 0; i < cd->bNumInterfaces; i++) {
		const struct libusb_interface *in = &cd->interface[i];
		if (in->num_altsetting < 1)
			continue;
		id = &in->altsetting[0];
		if (id->bInterfaceClass == LIBUSB_CLASS_VENDOR_SPEC &&
		    id->bInterfaceSubClass == 0xff && id->bInterfaceProtocol == 0xff &&
		    usb_iface_is_qmi(id, ret)) {
			ret->how = USB_QMI_HOW_CLASS;
			return 0;
		}
	}
	return -ENOENT;
}

int usb_qmi_find(libusb_device *dev, const struct libusb_device_descriptor *dd, int iface,
		 struct usb_qmi_iface *ret)
{
	struct libusb_config_descriptor *cd;
	int r = libusb_get_active_config_descriptor(dev, &cd);

	if (r < 0)
		return usb_errno(r);
	r = usb_qmi_choose(cd, dd, iface, ret);
	libusb_free_config_descriptor(cd);
	return r;
}

static const struct libusb_interface *usb_find_interface(const struct libusb_config_descriptor *cd,
							 int ifnum)
{
	for (int i = 0; i < cd->bNumInterfaces; i++) {
		const struct libusb_interface *in = &cd->interface[i];
		if (in->num_altsetting > 0 && in->altsetting[0].bInterfaceNumber == ifnum)
			return in;
	}
	return NULL;
}

/* The data interface's NTB alternate setting: 0a/00/02 with bulk IN + bulk OUT. */
static bool usb_mbim_data_alt(const struct libusb_interface *in, struct usb_mbim_iface *m)
{
	for (int a = 0; a < in->num_altsetting; a++) {
		const struct libusb_interface_descriptor *id = &in->altsetting[a];
		uint8_t ep_in = 0, ep_out = 0;
		uint16_t mps_in = 0, mps_out = 0;

		if (id->bInterfaceClass != LIBUSB_CLASS_DATA || id->bInterfaceSubClass != 0 ||
		    id->bInterfaceProtocol != 0x02)
			continue;
		for (int e = 0; e < id->bNumEndpoints; e++) {
			const struct libusb_endpoint_descriptor *ep = &id->endpoint[e];
			if ((ep->bmAttributes & LIBUSB_TRANSFER_TYPE_MASK) !=
			    LIBUSB_TRANSFER_TYPE_BULK)
				continue;
			if (ep->bEndpointAddress & LIBUSB_ENDPOINT_IN) {
				ep_in = ep->bEndpointAddress;
				mps_in = ep->wMaxPacketSize;
			} else {
				ep_out = ep->bEndpointAddress;
				mps_out = ep->wMaxPacketSize;
			}
		}
		if (!ep_in || !ep_out)
			continue;
		m->data_alt = id->bAlternateSetting;
		m->ep_in = ep_in;
		m->ep_out = ep_out;
		m->mps_in = mps_in ? mps_in : 512;
		m->mps_out = mps_out;
		return true;
	}
	return false;
}

/* Whether altsetting id is an MBIM communications interface with a usable data interface. */
static bool usb_iface_is_mbim(const struct libusb_config_descriptor *cd,
			      const struct libusb_interface_descriptor *id,
			      struct usb_mbim_iface *ret)
{
	struct usb_mbim_iface m = { .comm_ifnum = id->bInterfaceNumber,
				    .comm_alt = id->bAlternateSetting };

	if (id->bInterfaceClass != LIBUSB_CLASS_COMM || id->bInterfaceSubClass != 0x0e ||
	    id->bInterfaceProtocol != 0)
		return false;
	/* A broken chain still counts when the MBIM descriptor came before the break. */
	usb_mbim_desc_parse(id->extra, id->extra_length > 0 ? (size_t)id->extra_length : 0,
			    &m.desc);
	if (!m.desc.have_mbim)
		return false;
	for (int e = 0; e < id->bNumEndpoints; e++) {
		const struct libusb_endpoint_descriptor *ep = &id->endpoint[e];
		if ((ep->bmAttributes & LIBUSB_TRANSFER_TYPE_MASK) ==
			    LIBUSB_TRANSFER_TYPE_INTERRUPT &&
		    (ep->bEndpointAddress & LIBUSB_ENDPOINT_IN))
			m.ep_int = ep->bEndpointAddress;
	}
	if (!m.ep_int)
		return false;
	/* The union names the data interface; without one, the next interface. */
	m.data_ifnum = m.desc.have_union ? m.desc.data_interface : (uint8_t)(m.comm_ifnum + 1);
	const struct libusb_interface *data = usb_find_interface(cd, m.data_ifnum);
	if (!data || m.data_ifnum == m.comm_ifnum || !usb_mbim_data_alt(data, &m) ||
	    m.data_alt == 0)
		return false;
	m.how = USB_MBIM_HOW_CLASS;
	*ret = m;
	return true;
}

static int usb_mbim_choose(const struct libusb_config_descriptor *cd, int iface,
			   struct usb_mbim_iface *ret)
{
	for (int i = 0; i < cd->bNumInterfaces; i++) {
		const struct libusb_interface *in = &cd->interface[i];
		for (int a = 0; a < in->num_altsetting; a++) {
			struct usb_mbim_iface m;
			if (!usb_iface_is_mbim(cd, &in->altsetting[a], &m))
				continue;
			if (iface >= 0 && iface != m.comm_ifnum && iface != m.data_ifnum)
				continue;
			if (iface >= 0)
				m.how = "as configured";
			*ret = m;
			return 0;
		}
	}
	return -ENOENT;
}

int usb_mbim_find(libusb_device *dev, int iface, struct usb_mbim_iface *ret)
{
	struct libusb_config_descriptor *cd;
	int r = libusb_get_active_config_descriptor(dev, &cd);

	if (r < 0)
		return usb_errno(r);
	r = usb_mbim_choose(cd, iface, ret);
	libusb_free_config_descriptor(cd);
	return r;
}

const char *usb_device_path(libusb_device *dev, char *buf, size_t len)
{
	uint8_t p[USB_SPEC_MAX_PORTS];
	int n = libusb_get_port_numbers(dev, p, sizeof(p));

	return usb_spec_format_path(libusb_get_bus_number(dev), p, n < 0 ? 0 : (unsigned)n, buf,
				    len);
}

bool usb_device_path_matches(libusb_device *dev, uint8_t bus, const uint8_t *ports, uint8_t n)
{
	uint8_t p[USB_SPEC_MAX_PORTS];
	int k = libusb_get_port_numbers(dev, p, sizeof(p));

	return libusb_get_bus_number(dev) == bus && k == n && memcmp(p, ports, n) == 0;
}

static void usb_device_string(libusb_device_handle *h, uint8_t index, char *buf, size_t len)
{
	buf[0] = '\0';
	if (index &&
	    libusb_get_string_descriptor_ascii(h, index, (unsigned char *)buf, (int)len) < 0)
		buf[0] = '\0';
}

void usb_device_serial(libusb_device_handle *h, const struct libusb_device_descriptor *dd,
		       char *buf, size_t len)
{
	usb_device_string(h, dd->iSerialNumber, buf, len);
}

void usb_device_names(libusb_device_handle *h, const struct libusb_device_descriptor *dd,
		      char *manufacturer, size_t manufacturer_len, char *product,
		      size_t product_len)
{
	usb_device_string(h, dd->iManufacturer, manufacturer, manufacturer_len);
	usb_device_string(h, dd->iProduct, product, product_len);
}

int usb_wdm_name(const char *sysfs, const char *path, unsigned cfg, unsigned ifnum, char *buf,
		 size_t len)
{
	char dir[256];
	int r = -ENOENT;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/bus/usb/devices/%s:%u.%u/usbmisc", sysfs, path,
			     cfg, ifnum) >= sizeof(dir))
		return -ENAMETOOLONG;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, "cdc-wdm", 7) != 0)
			continue;
		if (strlen(e->d_name) >= len) {
			r = -ENAMETOOLONG;
			break;
		}
		snprintf(buf, len, "%s", e->d_name);
		r = 0;
		break;
	}
	closedir(d);
	return r;
}
