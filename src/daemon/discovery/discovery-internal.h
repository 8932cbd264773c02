/* SPDX-License-Identifier: MIT */
/* For white-box tests of discovery.c. */
#ifndef QMAPD_DISCOVERY_INTERNAL_H
#define QMAPD_DISCOVERY_INTERNAL_H

#include <stdbool.h>

struct discovery;

/*
 * Before discovery_start(): re-scan every rescan_seconds even where libusb has hotplug, as on
 * the systems whose libusb has none (every second there; the path the tests could not take
 * otherwise).
 */
void discovery_disable_hotplug(struct discovery *d, double rescan_seconds);

#endif
