/* SPDX-License-Identifier: MIT */
/*
 * admin-auth: the one "may change" rule of the control socket and the D-Bus API (root, the
 * admin group as primary or supplementary group, nobody else; no admin group = root only),
 * the group lookup of a group that exists and one that does not, and which of ModemManager's
 * methods qmapd counts as changing state (everything but the read-only ones).
 */
#include <errno.h>
#include <grp.h>
#include <libmm-glib.h>
#include <string.h>
#include <unistd.h>

#include "admin-auth.h"
#include "mm-dbus-internal.h"
#include "test-case.h"

TEST(rule)
{
	const gid_t admin = 4242, other[] = { 100, 200 }, with_admin[] = { 100, 4242, 200 };

	/* Root, with or without an admin group, whatever its groups. */
	EXPECT_TRUE(admin_may_change(0, 0, NULL, 0, ADMIN_NO_GID));
	EXPECT_TRUE(admin_may_change(0, ADMIN_NO_GID, NULL, 0, admin));
	/* No admin group: nobody else, not even a user whose group is -1 by mistake. */
	EXPECT_TRUE(!admin_may_change(1000, 1000, with_admin, 3, ADMIN_NO_GID));
	EXPECT_TRUE(!admin_may_change(1000, ADMIN_NO_GID, NULL, 0, ADMIN_NO_GID));
	/* The admin group as the primary group. */
	EXPECT_TRUE(admin_may_change(1000, admin, NULL, 0, admin));
	EXPECT_TRUE(admin_may_change(1000, admin, other, 2, admin));
	/* ... as a supplementary group, anywhere in the list, with or without a primary. */
	EXPECT_TRUE(admin_may_change(1000, 1000, with_admin, 3, admin));
	EXPECT_TRUE(admin_may_change(1000, ADMIN_NO_GID, with_admin, 3, admin));
	EXPECT_TRUE(admin_may_change(1000, ADMIN_NO_GID, &with_admin[1], 1, admin));
	/* Not a member: refused, and the list is read only as far as n_groups says. */
	EXPECT_TRUE(!admin_may_change(1000, 1000, other, 2, admin));
	EXPECT_TRUE(!admin_may_change(1000, 1000, with_admin, 1, admin));
	EXPECT_TRUE(!admin_may_change(1000, ADMIN_NO_GID, NULL, 0, admin));
	EXPECT_TRUE(!admin_may_change(65534, 65534, NULL, 0, admin));
}

TEST(lookup)
{
	struct group *root = getgrgid(0);
	gid_t gid = 12345;

	if (root) {
		EXPECT_EQ(admin_group_lookup(root->gr_name, &gid), 0);
		EXPECT_EQ(gid, 0);
	}
	gid = 12345;
	EXPECT_EQ(admin_group_lookup("qmapd-no-such-group-here", &gid), -ENOENT);
	EXPECT_EQ(gid, 12345);
	/* root (uid 0) is in group 0 by the group database on every system. */
	if (root)
		EXPECT_TRUE(admin_user_in_group_db(0, 0));
}

TEST(methods)
{
	/* Read-only: what the bus policy also lets everyone call. */
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "ListBearers") == NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM_SIMPLE, "GetStatus") == NULL);
	/* Changing state: every other method of every interface qmapd exports. */
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM_SIMPLE, "Connect") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM_SIMPLE, "Disconnect") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "Enable") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "CreateBearer") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "DeleteBearer") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "SetPowerState") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_BEARER, "Connect") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_BEARER, "Disconnect") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_SIM, "SendPin") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM_MODEM3GPP, "Register") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE, "SetLogging") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE, "ScanDevices") != NULL);
	/* A read-only name on another interface is not read-only there. */
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_SIM, "GetStatus") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "GetStatus") != NULL);
	EXPECT_TRUE(mmd_auth_action(NULL, "GetStatus") != NULL);
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, NULL) != NULL);
}

static bool action_is(const char *iface, const char *method, const char *want)
{
	const char *got = mmd_auth_action(iface, method);

	return got && strcmp(got, want) == 0;
}

TEST(polkit_actions)
{
	/* ModemManager's ids: SIM and PIN management, power, connect are the device's control. */
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_SIM, "SendPin", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_SIM, "SendPuk", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_SIM, "EnablePin", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_SIM, "ChangePin", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM, "Enable", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM, "SetPowerState", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_SIMPLE, "Connect", MMD_AUTH_DEVICE_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_BEARER, "Disconnect", MMD_AUTH_DEVICE_CONTROL));
	/* The daemon's own methods, and the interfaces with their own action. */
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE, "ScanDevices", MMD_AUTH_MANAGER_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE, "SetLogging", MMD_AUTH_MANAGER_CONTROL));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_MESSAGING, "Create", MMD_AUTH_MESSAGING));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_SMS, "Send", MMD_AUTH_MESSAGING));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_LOCATION, "GetLocation", MMD_AUTH_LOCATION));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_TIME, "GetNetworkTime", MMD_AUTH_TIME));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_VOICE, "CreateCall", MMD_AUTH_VOICE));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_MODEM3GPP_USSD, "Initiate", MMD_AUTH_USSD));
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_FIRMWARE, "Select", MMD_AUTH_FIRMWARE));
	EXPECT_TRUE(mmd_auth_action(MM_DBUS_INTERFACE_MODEM, "ListBearers") == NULL);
	/* An interface whose name starts like one with its own action is not that one. */
	EXPECT_TRUE(action_is(MM_DBUS_INTERFACE_MODEM_MODEM3GPP, "Scan", MMD_AUTH_DEVICE_CONTROL));
}
