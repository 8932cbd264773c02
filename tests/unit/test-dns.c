/* SPDX-License-Identifier: MIT */
/* The DNS hand-over without a bus: per-link resolv.conf files (dns.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dns.h"
#include "test-case.h"

static char dir[64];

static struct config_prefix server(int family, const char *text)
{
	struct config_prefix p = { .family = family, .prefixlen = family == AF_INET ? 32 : 128 };
	if (inet_pton(family, text, &p.addr) != 1)
		abort();
	return p;
}

/* The whole file, or "" when there is none. */
static const char *file_of(const char *ifname)
{
	static char buf[1024];
	char path[128];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/resolv/%s.conf", dir, ifname);
	f = fopen(path, "r");
	if (!f)
		return "";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static const char *stats(void)
{
	static char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	dns_print_stats(f, "");
	fclose(f);
	return buf;
}

static struct config_prefix servers[4];

TEST_SETUP()
{
	servers[0] = server(AF_INET, "198.51.100.53");
	servers[1] = (struct config_prefix){ 0 }; /* a family without a secondary server */
	servers[2] = server(AF_INET6, "2001:db8:ff::53");
	servers[3] = server(AF_INET6, "2001:db8:ff::54");
}

TEST(before_init)
{
	/* Before dns_init() (what the other unit tests see): nothing happens. */
	dns_link_set(7, "qmap1", servers, 4, true);
	dns_link_clear(7);
	EXPECT_STR_EQ(stats(), "");
}

TEST(files)
{
	char resolv[128];
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/test-dns.XXXXXX");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "mkdtemp: %m\n");
		test_failures++;
		return;
	}
	snprintf(resolv, sizeof(resolv), "%s/resolv", dir);
	umask(0077); /* the service's: the files must still be readable by dnsmasq */
	EXPECT_EQ(dns_init(NULL, resolv), 0);

	dns_link_set(7, "qmap1", servers, 4, true);
	EXPECT_STR_EQ(file_of("qmap1"),
		      "# DNS servers the network gave qmap1 (qmapd); removed when its session "
		      "ends.\nnameserver 198.51.100.53\nnameserver 2001:db8:ff::53\n"
		      "nameserver 2001:db8:ff::54\n");
	EXPECT_EQ(stat(resolv, &st), 0);
	EXPECT_EQ(st.st_mode & 07777, 0755);
	char path[160];
	snprintf(path, sizeof(path), "%s/qmap1.conf", resolv);
	EXPECT_EQ(stat(path, &st), 0);
	EXPECT_EQ(st.st_mode & 07777, 0644);

	/* The same again writes nothing; a change rewrites. */
	dns_link_set(7, "qmap1", servers, 4, true);
	EXPECT_STR_EQ(
		stats(),
		"dns: resolved-links=0 resolved-failures=0 files=1 file-failures=0 reverts=0\n");
	dns_link_set(7, "qmap1", servers, 1, true);
	EXPECT_STR_EQ(file_of("qmap1"), "# DNS servers the network gave qmap1 (qmapd); removed "
					"when its session ends.\nnameserver 198.51.100.53\n");

	/* No servers: nothing to write, the last ones stay until the session ends. */
	dns_link_set(8, "qmap2", servers + 1, 1, false);
	EXPECT_STR_EQ(file_of("qmap2"), "");

	dns_link_set(8, "qmap2", servers + 2, 1, false);
	EXPECT_TRUE(strstr(file_of("qmap2"), "nameserver 2001:db8:ff::53\n") != NULL);
	dns_link_clear(7);
	EXPECT_STR_EQ(file_of("qmap1"), "");
	EXPECT_TRUE(file_of("qmap2")[0] != '\0');
	dns_link_clear(99); /* unknown: nothing */

	/* Shutting down removes what is left. */
	dns_shutdown();
	EXPECT_STR_EQ(file_of("qmap2"), "");
	rmdir(resolv);
	rmdir(dir);
}

TEST(unwritable_dir)
{
	/* A directory that cannot be made is counted, never fatal. */
	EXPECT_EQ(dns_init(NULL, "/proc/qmapd-test/resolv"), 0);
	dns_link_set(9, "qmap3", servers, 1, true);
	EXPECT_STR_EQ(
		stats(),
		"dns: resolved-links=0 resolved-failures=0 files=0 file-failures=1 reverts=0\n");
	dns_shutdown();
}
