/* SPDX-License-Identifier: MIT */
/*
 * mm-dbus.h in a build without D-Bus (QMAPD_DBUS=OFF): there is never a D-Bus side. main.c
 * refuses a configuration that asks for one before it gets here, so a bus here is a bug.
 */
#include <errno.h>
#include <stddef.h>

#include "mm-dbus.h"

int mm_dbus_new(struct manager *manager, enum config_dbus bus, const char *address,
		const char *admin_group, void (*ready)(void *userdata), void *userdata,
		struct mm_dbus **ret)
{
	(void)manager;
	(void)admin_group;
	(void)ready;
	(void)userdata;
	*ret = NULL;
	return bus == CONFIG_DBUS_NONE && !address ? 0 : -EOPNOTSUPP;
}

struct mm_dbus *mm_dbus_free(struct mm_dbus *d)
{
	(void)d;
	return NULL;
}

void mm_dbus_print_stats(const struct mm_dbus *d, FILE *f, const char *prefix)
{
	(void)d;
	(void)f;
	(void)prefix;
}

json_t *mm_dbus_stats_json(const struct mm_dbus *d)
{
	(void)d;
	return NULL;
}
