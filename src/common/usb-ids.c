/* SPDX-License-Identifier: MIT */
/*
 * Well-known QMI modems whose QMI function is on a fixed interface number: public facts
 * from the Linux kernel's qmi_wwan device table (drivers/net/usb/qmi_wwan.c,
 * QMI_FIXED_INTF / QMI_QUIRK_SET_DTR entries). Modems that qmi_wwan matches by class
 * (QMI_MATCH_FF_FF_FF, e.g. Quectel EC25 2c7c:0125, EP06 2c7c:0306, RM500Q 2c7c:0800) need
 * no entry: the generic ff/ff/ff rule (src/daemon/usb/usb-device.c) finds their interface.
 */
#include <stddef.h>

#include "macro.h"
#include "usb-spec.h"

static const struct usb_known_modem usb_known_modems[] = {
	{ 0x05c6, 0x9215, 4, "Quectel EC20 Mini PCIe" },
	{ 0x1199, 0x68a2, 8, "Sierra Wireless MC7710" },
	{ 0x1199, 0x68c0, 8, "Sierra Wireless MC7304/MC7354" },
	{ 0x1199, 0x901f, 8, "Sierra Wireless EM7355" },
	{ 0x1199, 0x9041, 8, "Sierra Wireless MC7305/MC7355" },
	{ 0x1199, 0x9071, 8, "Sierra Wireless MC7430/MC7455" },
	{ 0x1199, 0x9071, 10, "Sierra Wireless MC7430/MC7455" },
	{ 0x1199, 0x9079, 8, "Sierra Wireless EM7455" },
	{ 0x1199, 0x9079, 10, "Sierra Wireless EM7455" },
	{ 0x1bc7, 0x1040, 2, "Telit LE922A" },
	{ 0x1bc7, 0x1201, 2, "Telit LE920, LE920A4" },
	{ 0x1e0e, 0x9001, 5, "SIMCom 7100E, 7230E, 7600E" },
	{ 0x1e2d, 0x0060, 4, "Cinterion PLxx" },
	{ 0x2c7c, 0x0121, 4, "Quectel EC21 Mini PCIe" },
	{ 0x2c7c, 0x0191, 4, "Quectel EG91" },
	{ 0x2c7c, 0x0195, 4, "Quectel EG95" },
	{ 0x2c7c, 0x0296, 4, "Quectel BG96" },
	{ 0x2cb7, 0x0104, 4, "Fibocom NL678" },
	{ 0x413c, 0x81a8, 8, "Dell Wireless 5808 Gobi 4G LTE" },
	{ 0x413c, 0x81b6, 8, "Dell Wireless 5811e" },
	{ 0x413c, 0x81b6, 10, "Dell Wireless 5811e" },
	{ 0x1546, 0x1342, 4, "u-blox LARA-L6" },
};

const struct usb_known_modem *usb_ids_lookup(uint16_t vid, uint16_t pid, unsigned idx)
{
	for (size_t i = 0; i < ARRAY_SIZE(usb_known_modems); i++) {
		const struct usb_known_modem *m = &usb_known_modems[i];

		if (m->vid == vid && m->pid == pid && idx-- == 0)
			return m;
	}
	return NULL;
}
