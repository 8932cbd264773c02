/* SPDX-License-Identifier: MIT */
/* Where the D-Bus buses are, without connecting (bus-address.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bus-address.h"

/* What GLib, libdbus and sd-bus use when $DBUS_SYSTEM_BUS_ADDRESS is not set. */
#define SYSTEM_BUS_DEFAULT "unix:path=/run/dbus/system_bus_socket"

char *bus_address(enum config_dbus bus)
{
	const char *env, *dir;
	char *a = NULL;

	switch (bus) {
	case CONFIG_DBUS_SYSTEM:
		env = getenv("DBUS_SYSTEM_BUS_ADDRESS");
		return strdup(env && *env ? env : SYSTEM_BUS_DEFAULT);
	case CONFIG_DBUS_SESSION:
		env = getenv("DBUS_SESSION_BUS_ADDRESS");
		if (env && *env)
			return strdup(env);
		dir = getenv("XDG_RUNTIME_DIR");
		if (dir && *dir && asprintf(&a, "unix:path=%s/bus", dir) < 0)
			a = NULL;
		return a;
	case CONFIG_DBUS_NONE:
		break;
	}
	return NULL;
}

/* The path= value of one "unix:k=v,k=v" entry, %-escapes undone; false if it has none. */
static bool unix_path(const char *entry, size_t n, char *path, size_t len)
{
	const char *p = entry + strlen("unix:"), *end = entry + n;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;

		if ((size_t)(stop - p) > 5 && strncmp(p, "path=", 5) == 0) {
			size_t o = 0;
			for (p += 5; p < stop && o + 1 < len; p++) {
				unsigned v;
				if (*p == '%' && stop - p >= 3 && sscanf(p + 1, "%2x", &v) == 1) {
					path[o++] = (char)v;
					p += 2;
				} else {
					path[o++] = *p;
				}
			}
			path[o] = '\0';
			return true;
		}
		p = stop + 1;
	}
	return false;
}

bool bus_address_present(const char *address, char *missing, size_t len)
{
	const char *p = address;
	char path[256];
	struct stat st;

	if (missing && len)
		missing[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, ";");

		if (n > 0) {
			if (strncmp(p, "unix:", 5) != 0 || !unix_path(p, n, path, sizeof(path)))
				return true; /* not a socket file: only connecting can tell */
			if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
				return true;
			if (missing && len)
				snprintf(missing, len, "%s", path);
		}
		p += n + (p[n] == ';');
	}
	return false;
}

bool bus_same_netns_as_init(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) < 0 || stat("/proc/1/ns/net", &init) < 0)
		return true;
	return self.st_ino == init.st_ino && self.st_dev == init.st_dev;
}
