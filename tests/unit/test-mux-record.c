/* SPDX-License-Identifier: MIT */
/* mux-record.c: the lists of muxes (kept devices, MBIM sessions) left for the next qmapd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mux-record.h"
#include "test-case.h"

static struct mux_record rec, rec2;

static int parse(const char *text)
{
	return mux_record_parse(text, strlen(text), &rec);
}

TEST(round_trip)
{
	char text[MUX_RECORD_FILE_MAX];

	memset(&rec, 0, sizeof(rec));
	EXPECT_TRUE(mux_record_empty(&rec));
	EXPECT_EQ(mux_record_set(&rec, 2, "qmap2"), 0);
	EXPECT_EQ(mux_record_set(&rec, 1, "wwan0.1"), 0);
	EXPECT_EQ(mux_record_set(&rec, CONFIG_MUX_ID_MAX, "x"), 0);
	EXPECT_EQ(mux_record_set(&rec, 0, "qmap0"), -EINVAL);
	EXPECT_EQ(mux_record_set(&rec, CONFIG_MUX_ID_MAX + 1, "q"), -EINVAL);
	EXPECT_EQ(mux_record_set(&rec, 3, "a name"), -EINVAL);
	EXPECT_EQ(mux_record_set(&rec, 3, "sixteen-bytes-xx"), -EINVAL);
	EXPECT_TRUE(!mux_record_empty(&rec));
	size_t n = mux_record_format(&rec, text, sizeof(text));
	EXPECT_STR_EQ(text, "1 wwan0.1\n2 qmap2\n254 x\n");
	EXPECT_EQ(mux_record_parse(text, n, &rec2), 0);
	EXPECT_EQ(memcmp(&rec, &rec2, sizeof(rec)), 0);
	EXPECT_EQ(mux_record_set(&rec, 2, NULL), 0);
	EXPECT_STR_EQ(rec.name[2], "");
	/* Every mux with the longest name fits in MUX_RECORD_FILE_MAX. */
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++)
		EXPECT_EQ(mux_record_set(&rec, id, "fifteen-bytes-x"), 0);
	n = mux_record_format(&rec, text, sizeof(text));
	EXPECT_TRUE(n < sizeof(text) - 1);
	EXPECT_EQ(mux_record_parse(text, n, &rec2), 0);
	EXPECT_EQ(memcmp(&rec, &rec2, sizeof(rec)), 0);
}

TEST(refused)
{
	EXPECT_EQ(parse(""), 0);
	EXPECT_TRUE(mux_record_empty(&rec));
	EXPECT_EQ(parse("1 qmap1\n3 qmap3\n"), 0);
	EXPECT_STR_EQ(rec.name[3], "qmap3");
	static const char *const bad[] = {
		"1 qmap1",		/* no newline at the end */
		"0 qmap0\n",		/* mux 0 is no mux */
		"255 q\n",		/* over the limit */
		"01 qmap1\n",		/* leading zero */
		"1000 q\n",		/* too long a number */
		"2 qmap2\n1 qmap1\n",	/* not ascending */
		"1 qmap1\n1 qmap1\n",	/* twice */
		"1\n",			/* no name */
		"1 \n",			/* an empty name */
		"1  qmap1\n",		/* two blanks */
		"1 qmap 1\n",		/* a blank in the name */
		"1 ../etc\n",		/* a slash */
		"1 qmap%d\n",		/* kernel numbering */
		"1 sixteen-bytes-xx\n", /* too long a name */
		"x qmap1\n",		/* no number */
		"-1 qmap1\n",		/* a sign */
		"1 qmap1\n\n",		/* an empty line */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(parse(bad[i]), -EINVAL);
		EXPECT_TRUE(mux_record_empty(&rec)); /* nothing half-parsed */
	}
	/* A NUL is no name byte, and the length is what counts, not the NUL. */
	EXPECT_EQ(mux_record_parse("1 q\0\n", 5, &rec), -EINVAL);
	EXPECT_EQ(mux_record_parse("1 q\nX", 4, &rec), 0);
}

TEST(file)
{
	char dir[] = "/tmp/test-mux-record.XXXXXX", link[64], path[80];

	EXPECT_TRUE(mkdtemp(dir) != NULL);
	snprintf(link, sizeof(link), "%s/mbim0", dir);
	snprintf(path, sizeof(path), "%s.sessions", link);
	EXPECT_EQ(mux_record_read(link, "sessions", &rec), -ENOENT);
	EXPECT_EQ(mux_record_update(link, "sessions", 2, "qmap2"), 0);
	EXPECT_EQ(mux_record_update(link, "sessions", 1, "qmap1"), 0);
	EXPECT_EQ(mux_record_read(link, "sessions", &rec), 0);
	EXPECT_STR_EQ(rec.name[1], "qmap1");
	EXPECT_STR_EQ(rec.name[2], "qmap2");
	EXPECT_EQ(mux_record_update(link, "sessions", 1, NULL), 0);
	EXPECT_EQ(mux_record_update(link, "sessions", 2, NULL), 0);
	/* The empty list is no file. */
	EXPECT_EQ(access(path, F_OK), -1);
	EXPECT_EQ(mux_record_read(link, "sessions", &rec), -ENOENT);
	/* An unreadable file is started afresh by an update. */
	FILE *f = fopen(path, "w");
	EXPECT_TRUE(f != NULL);
	fputs("garbage\n", f);
	fclose(f);
	EXPECT_EQ(mux_record_read(link, "sessions", &rec), -EINVAL);
	EXPECT_EQ(mux_record_update(link, "sessions", 3, "qmap3"), 0);
	EXPECT_EQ(mux_record_read(link, "sessions", &rec), 0);
	EXPECT_STR_EQ(rec.name[3], "qmap3");
	EXPECT_EQ(mux_record_write(link, "sessions", &(struct mux_record){ 0 }), 0);
	EXPECT_EQ(access(path, F_OK), -1);
	rmdir(dir);
}
