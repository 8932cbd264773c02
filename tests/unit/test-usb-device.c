/* SPDX-License-Identifier: MIT */
/* usb-device: the kernel's cdc-wdm name for an interface, read from a sysfs-like tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-case.h"
#include "usb-device.h"

static void mkdirs(const char *root, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

TEST(wdm_name)
{
	char root[] = "/tmp/test-usb-device-XXXXXX";
	char buf[32] = "unchanged";
	char tiny[8] = "same";

	EXPECT_TRUE(mkdtemp(root) != NULL);
	mkdirs(root, "bus/usb/devices/2-1.4:1.4/usbmisc/cdc-wdm3");
	/* An interface whose driver let go: the folder without an entry. */
	mkdirs(root, "bus/usb/devices/2-1.4:1.5/usbmisc");

	EXPECT_EQ(usb_wdm_name(root, "2-1.4", 1, 4, buf, sizeof(buf)), 0);
	EXPECT_STR_EQ(buf, "cdc-wdm3");
	snprintf(buf, sizeof(buf), "unchanged");
	EXPECT_EQ(usb_wdm_name(root, "2-1.4", 1, 5, buf, sizeof(buf)), -ENOENT);
	EXPECT_EQ(usb_wdm_name(root, "2-1.4", 2, 4, buf, sizeof(buf)), -ENOENT);
	EXPECT_EQ(usb_wdm_name(root, "3-1", 1, 4, buf, sizeof(buf)), -ENOENT);
	EXPECT_STR_EQ(buf, "unchanged");
	EXPECT_EQ(usb_wdm_name(root, "2-1.4", 1, 4, tiny, sizeof(tiny)), -ENAMETOOLONG);
	EXPECT_STR_EQ(tiny, "same");

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	EXPECT_EQ(system(cmd), 0);
}
