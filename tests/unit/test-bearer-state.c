/* SPDX-License-Identifier: MIT */
/* bearer-state.c: the record of a D-Bus client's bearer for the next qmapd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bearer-state.h"
#include "test-case.h"

static int parse(const char *text, struct bearer_state *b)
{
	return bearer_state_parse(text, strlen(text), b);
}

TEST(round_trip)
{
	struct bearer_state b = { .bearer = 7, .allow_roaming = true }, b2;
	char text[BEARER_STATE_FILE_MAX];

	EXPECT_EQ(bearer_state_add_key(&b, "apn", "internet"), 0);
	EXPECT_EQ(bearer_state_add_key(&b, "password", "s3cret with space"), 0);
	EXPECT_EQ(bearer_state_add_key(&b, "ip-type", "ipv4v6"), 0);
	EXPECT_EQ(bearer_state_add_key(&b, "apn", "again"), -EINVAL);
	EXPECT_EQ(bearer_state_add_key(&b, "Apn", "x"), -EINVAL);
	EXPECT_EQ(bearer_state_add_key(&b, "user", "tab\there"), -EINVAL);
	int n = bearer_state_format(&b, text, sizeof(text));
	EXPECT_TRUE(n > 0);
	EXPECT_STR_EQ(text, "bearer 7\nallow-roaming 1\nkey apn 696e7465726e6574\n"
			    "key password 7333637265742077697468207370616365\n"
			    "key ip-type 697076347636\n");
	EXPECT_EQ(bearer_state_parse(text, (size_t)n, &b2), 0);
	EXPECT_EQ(b2.bearer, 7);
	EXPECT_TRUE(b2.allow_roaming);
	EXPECT_EQ(b2.n_keys, 3);
	EXPECT_STR_EQ(b2.keys[1].name, "password");
	EXPECT_STR_EQ(b2.keys[1].value, "s3cret with space");
	/* Too small a buffer: refused, not cut. */
	EXPECT_EQ(bearer_state_format(&b, text, 30), -ENOSPC);
}

TEST(refused)
{
	struct bearer_state b;

	EXPECT_EQ(parse("bearer 1\nallow-roaming 0\n", &b), 0);
	EXPECT_EQ(b.n_keys, 0);
	static const char *const bad[] = {
		"",						   /* no bearer */
		"bearer 1\n",					   /* no allow-roaming */
		"bearer 1\nallow-roaming 0",			   /* no newline at the end */
		"bearer 1\nallow-roaming 2\n",			   /* not 0 or 1 */
		"bearer 01\nallow-roaming 0\n",			   /* leading zero */
		"bearer 65536\nallow-roaming 0\n",		   /* over the limit */
		"bearer 1\nbearer 2\nallow-roaming 0\n",	   /* twice */
		"bearer 1\nallow-roaming 0\nkey apn 6\n",	   /* odd hex */
		"bearer 1\nallow-roaming 0\nkey apn 0a\n",	   /* a newline in a value */
		"bearer 1\nallow-roaming 0\nkey apn 4A\n",	   /* upper-case hex */
		"bearer 1\nallow-roaming 0\nkey APN 41\n",	   /* name */
		"bearer 1\nallow-roaming 0\nkey apn\n",		   /* no value */
		"bearer 1\nallow-roaming 0\nkey a 41\nkey a 41\n", /* a key twice */
		"bearer 1\nallow-roaming 0\nother 1\n",		   /* unknown line */
		"bearer 1\nallow-roaming 0\n\n",		   /* empty line */
		"bearer -1\nallow-roaming 0\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(parse(bad[i], &b), -EINVAL);
}

TEST(file)
{
	char dir[] = "/tmp/test-bearer-state.XXXXXX", link[64], path[80];
	struct bearer_state b = { .bearer = 3 }, b2;
	struct stat st;

	EXPECT_TRUE(mkdtemp(dir) != NULL);
	snprintf(link, sizeof(link), "%s/qmi0", dir);
	snprintf(path, sizeof(path), "%s.bearer2", link);
	EXPECT_EQ(bearer_state_read(link, 2, &b2), -ENOENT);
	EXPECT_EQ(bearer_state_add_key(&b, "password", "secret"), 0);
	EXPECT_EQ(bearer_state_write(link, 2, &b), 0);
	/* It may hold a password: for the owner only, whatever the umask. */
	EXPECT_EQ(stat(path, &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0600);
	EXPECT_EQ(bearer_state_read(link, 2, &b2), 0);
	EXPECT_EQ(b2.bearer, 3);
	EXPECT_STR_EQ(b2.keys[0].value, "secret");
	bearer_state_remove(link, 2);
	EXPECT_EQ(bearer_state_read(link, 2, &b2), -ENOENT);
	rmdir(dir);
}
