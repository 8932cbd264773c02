/* SPDX-License-Identifier: MIT */
/*
 * Where the D-Bus buses are, found without connecting and without starting anything (GLib's
 * session-bus lookup may autolaunch a bus; this never does): [dbus] enabled = auto and yes
 * decide at start from whether the bus's socket exists, and the DNS hand-over finds
 * systemd-resolved's bus the same way.
 */
#ifndef QMAPD_BUS_ADDRESS_H
#define QMAPD_BUS_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/*
 * The address of bus: system: $DBUS_SYSTEM_BUS_ADDRESS or the standard socket; session:
 * $DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR/bus. NULL if none is known; free() it.
 */
char *bus_address(enum config_dbus bus);

/*
 * Whether something may listen at address: false when every entry is a unix:path= socket
 * that does not exist (its path is copied to missing). Other transports (abstract sockets,
 * tcp) cannot be checked without connecting and count as present.
 */
bool bus_address_present(const char *address, char *missing, size_t len);

/*
 * Whether qmapd shares PID 1's network namespace, i.e. the one the system bus's services
 * (systemd-resolved) serve. true when that cannot be read (a sandbox without
 * CAP_SYS_PTRACE): the service unit runs in the host's namespace.
 */
bool bus_same_netns_as_init(void);

#endif
