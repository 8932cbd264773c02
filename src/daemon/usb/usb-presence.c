/* SPDX-License-Identifier: MIT */
/* Noticing USB devices where libusb's hotplug cannot (usb-presence.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "usb-presence.h"

/* udevd's control socket: libudev's own test of whether udevd runs. */
#define UDEVD_CONTROL "/run/udev/control"

bool usb_hotplug_unheard(void)
{
	static int libudev = -1;

	if (libudev < 0) {
		/* Loaded with libusb when libusb was built with udev; never loaded by us. */
		void *h = dlopen("libudev.so.1", RTLD_NOW | RTLD_NOLOAD);

		libudev = h != NULL;
		if (h)
			dlclose(h);
	}
	return libudev && access(UDEVD_CONTROL, F_OK) < 0;
}

/* FNV-1a over each entry's name and inode, order-independent (sum of per-entry hashes). */
uint64_t usb_sysfs_fingerprint(const char *dir)
{
	DIR *d = opendir(dir);
	uint64_t sum = 0;
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		uint64_t h = 14695981039346656037ULL;
		uint64_t ino = (uint64_t)e->d_ino;

		if (e->d_name[0] == '.')
			continue;
		for (const char *p = e->d_name; *p; p++)
			h = (h ^ (uint8_t)*p) * 1099511628211ULL;
		for (int i = 0; i < 8; i++, ino >>= 8)
			h = (h ^ (ino & 0xff)) * 1099511628211ULL;
		sum += h;
	}
	closedir(d);
	return sum ? sum : 1;
}
