/* SPDX-License-Identifier: MIT */
/*
 * Whether libusb will hear of a modem plugged in, and how to notice one when it will not.
 * A libusb built with udev support (Debian's) learns of new devices only from udevd's
 * netlink messages, and libusb_get_device_list() returns the list those messages built; so
 * where udevd does not run (a container, an initramfs, a minimal system) a replugged modem
 * is never listed and no hotplug callback comes. Nor where qmapd runs in a network namespace
 * of its own (NetworkNamespacePath=, ip netns exec): udevd sends its messages on a netlink
 * socket, which reaches only sockets of udevd's namespace. There, libusb's users (the usb transport
 * while its modem is away, discovery) look at sysfs instead: a fingerprint of
 * /sys/bus/usb/devices (each entry's name and inode: a device added again is a new sysfs
 * node) read every second (usb_loop_missed_devices()), and when it changed the libusb context
 * is made anew (usb_loop_renew()), whose first enumeration reads sysfs itself.
 */
#ifndef QMAPD_USB_PRESENCE_H
#define QMAPD_USB_PRESENCE_H

#include <stdint.h>

#define USB_SYSFS_DEVICES "/sys/bus/usb/devices"

/*
 * Why libusb's hotplug callbacks will never be called, or NULL when they will: libusb has
 * hotplug through udev (libudev is in this process) but udevd is not running (no
 * /run/udev/control), or this process is not in PID 1's network namespace, where systemd
 * runs udevd. Asked at every look, so a udevd started later is noticed.
 */
const char *usb_hotplug_unheard(void);

/* Whether the namespace files a and b (/proc/PID/ns/net) are the same namespace: 1 or 0, or
 * -1 when either cannot be looked at (another user's process). */
int usb_netns_same(const char *a, const char *b);

/* The fingerprint of the device directory `dir` (USB_SYSFS_DEVICES); 0 if it cannot be read. */
uint64_t usb_sysfs_fingerprint(const char *dir);

#endif
