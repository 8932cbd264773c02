/* SPDX-License-Identifier: MIT */
/* usb-presence: the fingerprint that tells a device came or went without udevd, and the
 * network namespace test that tells udevd's messages do not reach us. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-case.h"
#include "usb-presence.h"

/* A sysfs device entry (there a symlink; here a folder does as well). */
static void add(const char *root, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	EXPECT_EQ(mkdir(path, 0755), 0);
}

static void del(const char *root, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	EXPECT_EQ(rmdir(path), 0);
}

TEST(fingerprint)
{
	char root[] = "/tmp/test-usb-presence-XXXXXX";
	char from[600], to[600];

	EXPECT_TRUE(mkdtemp(root) != NULL);
	EXPECT_EQ(usb_sysfs_fingerprint("/nonexistent/bus/usb/devices"), 0);
	uint64_t empty = usb_sysfs_fingerprint(root);
	EXPECT_TRUE(empty != 0); /* readable, so never "unreadable" */

	add(root, "usb1");
	add(root, "1-1");
	uint64_t two = usb_sysfs_fingerprint(root);
	EXPECT_TRUE(two != empty);
	EXPECT_EQ(usb_sysfs_fingerprint(root), two); /* nothing changed: the same */

	/* Unplugged: an entry less. */
	del(root, "1-1");
	uint64_t one = usb_sysfs_fingerprint(root);
	EXPECT_TRUE(one != two);

	/* Replugged between two looks: the same name, a new node. Made beside the old one
	 * so the file system cannot give the new entry the old inode back. */
	add(root, "1-1");
	uint64_t again = usb_sysfs_fingerprint(root);
	add(root, "1-1.new");
	del(root, "1-1");
	snprintf(from, sizeof(from), "%s/1-1.new", root);
	snprintf(to, sizeof(to), "%s/1-1", root);
	EXPECT_EQ(rename(from, to), 0);
	EXPECT_TRUE(usb_sysfs_fingerprint(root) != again);

	del(root, "1-1");
	del(root, "usb1");
	EXPECT_EQ(usb_sysfs_fingerprint(root), empty);
	EXPECT_EQ(rmdir(root), 0);
}

TEST(netns_same)
{
	char parent[64];

	EXPECT_EQ(usb_netns_same("/proc/self/ns/net", "/proc/self/ns/net"), 1);
	EXPECT_EQ(usb_netns_same("/proc/self/ns/net", "/nonexistent/ns/net"), -1);
	snprintf(parent, sizeof(parent), "/proc/%d/ns/net", (int)getpid());
	/* A child in a namespace of its own (ip netns exec, NetworkNamespacePath=) against
	 * ours; it answers by its exit status: 10 + the answer, or 2 when it cannot unshare. */
	pid_t pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) < 0)
			_exit(errno == EPERM ? 2 : 3);
		_exit(10 + usb_netns_same("/proc/self/ns/net", parent));
	}
	int status = 0;
	EXPECT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2)
		TEST_SKIP("no CLONE_NEWNET without CAP_SYS_ADMIN");
	EXPECT_EQ(WEXITSTATUS(status), 10);
}
