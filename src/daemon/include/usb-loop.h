/* SPDX-License-Identifier: MIT */
/*
 * A libusb context inside qmapd's libev loop: its pollfds become ev_io watchers (set through
 * the pollfd notifiers), its next timeout an ev_timer, and a ready fd is served with a
 * zero-timeout libusb_handle_events_timeout_completed(). No thread of ours, no polling.
 * Each user (the usb transport of every modem, discovery) has its own context, so one
 * modem's events never run another's callbacks.
 */
#ifndef QMAPD_USB_LOOP_H
#define QMAPD_USB_LOOP_H

#include <libusb.h>
#include <stdbool.h>

struct ev_loop;
struct usb_loop;

/*
 * A new context driven by `loop`. after_events (optional) runs after every round of
 * libusb event handling, before the next timeout is armed. `name` prefixes log lines.
 * Returns 0 or -errno.
 */
int usb_loop_new(struct ev_loop *loop, const char *name, void (*after_events)(void *userdata),
		 void *userdata, struct usb_loop **ret);
/* Stops every watcher and exits the context: free transfers and deregister hotplug
 * callbacks first. NULL-safe. */
struct usb_loop *usb_loop_free(struct usb_loop *ul);

/*
 * True when libusb's hotplug events cannot come (usb_hotplug_unheard()) and sysfs shows a
 * device came or went since the context was made: its device list is stale, renew it
 * (logged once per context holder).
 */
bool usb_loop_missed_devices(struct usb_loop *ul);

/*
 * Exit the context and drive a new one in its place (usb-presence.h says why): its device
 * list is enumerated afresh. Only with nothing open in it: deregister hotplug callbacks
 * before and register them again after. Returns 0 or -errno (the old context kept).
 */
int usb_loop_renew(struct usb_loop *ul);

libusb_context *usb_loop_context(struct usb_loop *ul);
/* Arm the timer for libusb's next timeout (nothing to do where libusb has a timerfd): call
 * after submitting a transfer that has a timeout. */
void usb_loop_arm_timeout(struct usb_loop *ul);

/* A libusb error code as -errno. */
int usb_errno(int r);

#endif
