/* SPDX-License-Identifier: MIT */
/* The usb transport's device spec parser and the well-known modem table. */
#include <errno.h>
#include <string.h>

#include "test-case.h"
#include "usb-spec.h"

TEST(accepted)
{
	struct usb_spec s;
	char err[USB_SPEC_ERROR_MAX] = "";

	EXPECT_EQ(usb_spec_parse("usb:2c7c:0125", &s, err, sizeof(err)), 0);
	EXPECT_EQ(s.kind, USB_SPEC_ID);
	EXPECT_EQ(s.vid, 0x2c7c);
	EXPECT_EQ(s.pid, 0x0125);
	EXPECT_EQ(s.iface, -1);

	EXPECT_EQ(usb_spec_parse("usb:1199:9071:8", &s, err, sizeof(err)), 0);
	EXPECT_EQ(s.vid, 0x1199);
	EXPECT_EQ(s.pid, 0x9071);
	EXPECT_EQ(s.iface, 8);

	EXPECT_EQ(usb_spec_parse("usb:A:fFfF:0", &s, err, sizeof(err)), 0);
	EXPECT_EQ(s.vid, 0xa);
	EXPECT_EQ(s.pid, 0xffff);
	EXPECT_EQ(s.iface, 0);

	EXPECT_EQ(usb_spec_parse("usb-path:2-1.4", &s, err, sizeof(err)), 0);
	EXPECT_EQ(s.kind, USB_SPEC_PATH);
	EXPECT_EQ(s.bus, 2);
	EXPECT_EQ(s.n_ports, 2);
	EXPECT_EQ(s.ports[0], 1);
	EXPECT_EQ(s.ports[1], 4);
	EXPECT_EQ(s.iface, -1);

	EXPECT_EQ(usb_spec_parse("usb-path:255-1.2.3.4.5.6.255:255", &s, err, sizeof(err)), 0);
	EXPECT_EQ(s.bus, 255);
	EXPECT_EQ(s.n_ports, 7);
	EXPECT_EQ(s.ports[6], 255);
	EXPECT_EQ(s.iface, 255);

	EXPECT_EQ(usb_spec_parse("usb-path:1-3:4", &s, err, sizeof(err)), 0);
	EXPECT_EQ(s.n_ports, 1);
	EXPECT_EQ(s.iface, 4);
	EXPECT_TRUE(usb_spec_is_usb("usb:1:2"));
	EXPECT_TRUE(usb_spec_is_usb("usb-path:1-2"));
	EXPECT_TRUE(!usb_spec_is_usb("sim:/x"));
	EXPECT_TRUE(!usb_spec_is_usb("usbx:1:2"));
}

TEST(rejected)
{
	static const char *const bad[] = {
		"usb:",
		"usb:2c7c",
		"usb:2c7c:",
		"usb:12345:1",
		"usb:2c7g:0125",
		"usb:2c7c:0125:",
		"usb:2c7c:0125:04",
		"usb:2c7c:0125:256",
		"usb:2c7c:0125:4:5",
		"usb:2c7c:0125:-1",
		"usb::0125",
		"usb:1-1.2",
		"usb-path:",
		"usb-path:1",
		"usb-path:1-",
		"usb-path:0-1",
		"usb-path:01-1",
		"usb-path:1-0",
		"usb-path:1-1.",
		"usb-path:1-1..2",
		"usb-path:1-256",
		"usb-path:1-1.2.3.4.5.6.7.8",
		"usb-path:1-1:",
		"usb-path:1-1:x",
		"usb-path:/sys/bus/usb/devices/1-1",
		"usb-path:1-1 ",
		"sim:/x",
		"",
	};
	struct usb_spec s = { .vid = 0x1234 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[USB_SPEC_ERROR_MAX] = "";

		if (usb_spec_parse(bad[i], &s, err, sizeof(err)) != -EINVAL) {
			fprintf(stderr, "%s:%d: '%s' accepted\n", __FILE__, __LINE__, bad[i]);
			test_failures++;
		}
		if (!err[0]) {
			fprintf(stderr, "%s:%d: '%s' without a reason\n", __FILE__, __LINE__,
				bad[i]);
			test_failures++;
		}
	}
	EXPECT_EQ(s.vid, 0x1234); /* untouched on failure */
}

TEST(format_path)
{
	const uint8_t ports[] = { 1, 4, 255 };
	char buf[USB_SPEC_PATH_MAX];

	EXPECT_STR_EQ(usb_spec_format_path(2, ports, 2, buf, sizeof(buf)), "2-1.4");
	EXPECT_STR_EQ(usb_spec_format_path(255, ports, 3, buf, sizeof(buf)), "255-1.4.255");
	EXPECT_STR_EQ(usb_spec_format_path(3, ports, 0, buf, sizeof(buf)), "3");
	EXPECT_STR_EQ(usb_spec_format_path(2, ports, 3, buf, 6), "");
}

TEST(ids)
{
	const struct usb_known_modem *m = usb_ids_lookup(0x1199, 0x9071, 0);

	EXPECT_TRUE(m != NULL);
	if (m)
		EXPECT_EQ(m->iface, 8);
	m = usb_ids_lookup(0x1199, 0x9071, 1);
	EXPECT_TRUE(m != NULL);
	if (m)
		EXPECT_EQ(m->iface, 10);
	EXPECT_PTR_EQ(usb_ids_lookup(0x1199, 0x9071, 2), NULL);
	m = usb_ids_lookup(0x05c6, 0x9215, 0);
	EXPECT_TRUE(m != NULL && m->iface == 4);
	/* Matched by class, like qmi_wwan's QMI_MATCH_FF_FF_FF: no entry. */
	EXPECT_PTR_EQ(usb_ids_lookup(0x2c7c, 0x0125, 0), NULL);
}

/* A Sierra EM7455-style MBIM function (composition 9): CDC 1.10 header, union 12 -> 13,
 * MBIM 1.00 with 4096-byte control messages, 2048-byte segments, the 8-byte NTB input size,
 * and the extended descriptor's MTU 1500. */
static const uint8_t mbim_extra[] = {
	0x05, 0x24, 0x00, 0x10, 0x01,						/* header */
	0x05, 0x24, 0x06, 0x0c, 0x0d,						/* union */
	0x0c, 0x24, 0x1b, 0x00, 0x01, 0x00, 0x10, 0x20, 0x80, 0x00, 0x08, 0x20, /* MBIM */
	0x08, 0x24, 0x1c, 0x00, 0x01, 0x40, 0xdc, 0x05,				/* MBIM extended */
};

TEST(mbim_desc)
{
	struct usb_mbim_desc d;
	uint8_t b[64];

	EXPECT_EQ(usb_mbim_desc_parse(mbim_extra, sizeof(mbim_extra), &d), 0);
	EXPECT_TRUE(d.have_header && d.have_union && d.have_mbim && d.have_extended);
	EXPECT_EQ(d.bcd_cdc, 0x0110);
	EXPECT_EQ(d.control_interface, 12);
	EXPECT_EQ(d.data_interface, 13);
	EXPECT_EQ(d.bcd_mbim, 0x0100);
	EXPECT_EQ(d.max_control_message, 4096);
	EXPECT_EQ(d.number_filters, 32);
	EXPECT_EQ(d.max_filter_size, 128);
	EXPECT_EQ(d.max_segment_size, 2048);
	EXPECT_EQ(d.network_capabilities, 0x20);
	EXPECT_EQ(d.bcd_mbim_extended, 0x0100);
	EXPECT_EQ(d.max_outstanding_commands, 64);
	EXPECT_EQ(d.mtu, 1500);
	EXPECT_EQ(usb_mbim_control_size(&d), 4096);
	EXPECT_EQ(usb_mbim_mtu(&d), 1500);

	/* Without the extended descriptor the segment size bounds the MTU. */
	EXPECT_EQ(usb_mbim_desc_parse(mbim_extra, sizeof(mbim_extra) - 8, &d), 0);
	EXPECT_TRUE(!d.have_extended);
	EXPECT_EQ(usb_mbim_mtu(&d), 2048);
	/* An extended wMTU of 0 says nothing; one above the segment size does not raise it. */
	memcpy(b, mbim_extra, sizeof(mbim_extra));
	b[sizeof(mbim_extra) - 2] = 0;
	b[sizeof(mbim_extra) - 1] = 0;
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), 0);
	EXPECT_EQ(usb_mbim_mtu(&d), 2048);
	b[sizeof(mbim_extra) - 1] = 0x10; /* 4096 */
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), 0);
	EXPECT_EQ(usb_mbim_mtu(&d), 2048);

	/* wMaxControlMessage outside [64, 4096] is brought inside; 0 means cdc-wdm's 4096. */
	memcpy(b, mbim_extra, sizeof(mbim_extra));
	b[15] = 0x00, b[16] = 0x00;
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), 0);
	EXPECT_EQ(usb_mbim_control_size(&d), 4096);
	b[15] = 0x10, b[16] = 0x00; /* 16 */
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), 0);
	EXPECT_EQ(usb_mbim_control_size(&d), 64);
	b[15] = 0x00, b[16] = 0x02; /* 512 */
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), 0);
	EXPECT_EQ(usb_mbim_control_size(&d), 512);
	b[15] = 0xff, b[16] = 0xff;
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), 0);
	EXPECT_EQ(usb_mbim_control_size(&d), 4096);

	/* No MBIM descriptor (a plain NCM or ECM function): -ENOENT, the rest still read. */
	EXPECT_EQ(usb_mbim_desc_parse(mbim_extra, 10, &d), -ENOENT);
	EXPECT_TRUE(d.have_header && d.have_union && !d.have_mbim);
	EXPECT_EQ(usb_mbim_desc_parse(mbim_extra, 0, &d), -ENOENT);

	/* A truncated chain: what came before is kept, the chain is refused. */
	EXPECT_EQ(usb_mbim_desc_parse(mbim_extra, sizeof(mbim_extra) - 1, &d), -EINVAL);
	EXPECT_TRUE(d.have_mbim && !d.have_extended);
	memcpy(b, mbim_extra, sizeof(mbim_extra));
	b[5] = 0; /* a zero bLength would loop forever if it were skipped over */
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), -EINVAL);
	EXPECT_TRUE(d.have_header && !d.have_union);
	b[5] = 1;
	EXPECT_EQ(usb_mbim_desc_parse(b, sizeof(mbim_extra), &d), -EINVAL);

	/* An MBIM descriptor too short for its fields is ignored, not read past its end; an
	 * endpoint descriptor (not class-specific) in between is skipped; the first of two
	 * MBIM descriptors counts. */
	const uint8_t odd[] = {
		0x0b, 0x24, 0x1b, 0x00, 0x01, 0x00, 0x02, 0x20, 0x80, 0x00, 0x08, 0x07, 0x05, 0x81,
		0x03, 0x40, 0x00, 0x09, 0x0c, 0x24, 0x1b, 0x00, 0x01, 0x00, 0x02, 0x20, 0x80, 0xdc,
		0x05, 0x00, 0x0c, 0x24, 0x1b, 0x00, 0x01, 0x00, 0x10, 0x20, 0x80, 0x00, 0x08, 0x20,
	};
	EXPECT_EQ(usb_mbim_desc_parse(odd, sizeof(odd), &d), 0);
	EXPECT_TRUE(!d.have_union && !d.have_header);
	EXPECT_EQ(d.max_control_message, 512);
	EXPECT_EQ(d.max_segment_size, 1500);
	EXPECT_EQ(d.network_capabilities, 0);
	EXPECT_EQ(usb_mbim_mtu(&d), 1500);
}
