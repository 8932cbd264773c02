/* SPDX-License-Identifier: MIT */
/* Noticing USB devices where libusb's hotplug cannot (usb-presence.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "usb-presence.h"

/* udevd's control socket: libudev's own test of whether udevd runs. */
#define UDEVD_CONTROL "/run/udev/control"

int usb_netns_same(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return -1;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

const char *usb_hotplug_unheard(void)
{
	static int libudev = -1, other_netns = -1;

	if (libudev < 0) {
		/* Loaded with libusb when libusb was built with udev; never loaded by us. */
		void *h = dlopen("libudev.so.1", RTLD_NOW | RTLD_NOLOAD);

		libudev = h != NULL;
		if (h)
			dlclose(h);
	}
	if (!libudev)
		return NULL;
	if (access(UDEVD_CONTROL, F_OK) < 0)
		return "udevd is not running";
	/* Neither namespace changes in our life: asked once. Not known (no access to PID 1's
	 * namespace): hotplug is trusted, as before this check. */
	if (other_netns < 0)
		other_netns = usb_netns_same("/proc/self/ns/net", "/proc/1/ns/net") == 0;
	return other_netns ? "udevd's messages stay in PID 1's network namespace, not this one"
			   : NULL;
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
