/* SPDX-License-Identifier: MIT */
/* The usb transport's device spec parser and the well-known modem table. */
#include <errno.h>

#include "test-util.h"
#include "usb-spec.h"

static void test_accepted(void)
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

static void test_rejected(void)
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

static void test_format_path(void)
{
	const uint8_t ports[] = { 1, 4, 255 };
	char buf[USB_SPEC_PATH_MAX];

	EXPECT_STR_EQ(usb_spec_format_path(2, ports, 2, buf, sizeof(buf)), "2-1.4");
	EXPECT_STR_EQ(usb_spec_format_path(255, ports, 3, buf, sizeof(buf)), "255-1.4.255");
	EXPECT_STR_EQ(usb_spec_format_path(3, ports, 0, buf, sizeof(buf)), "3");
	EXPECT_STR_EQ(usb_spec_format_path(2, ports, 3, buf, 6), "");
}

static void test_ids(void)
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

int main(void)
{
	test_accepted();
	test_rejected();
	test_format_path();
	test_ids();
	if (test_failures)
		fprintf(stderr, "%d failure(s)\n", test_failures);
	return test_failures ? 1 : 0;
}
