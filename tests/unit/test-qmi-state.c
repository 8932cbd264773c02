/* SPDX-License-Identifier: MIT */
/*
 * The state files one qmapd leaves for the next (qmi-state.c): what parses, what is refused
 * (a file from a crashed run may be cut short or damaged: nothing in it may be taken on
 * trust), and the round trip through the files beside a control link.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qmi-state.h"
#include "test-case.h"

#define PARSE_C(s, c) qmi_state_parse_clients(s, strlen(s), c)
#define PARSE_M(s, m) qmi_state_parse_mux(s, strlen(s), m)

TEST(clients)
{
	struct qmi_state_clients c;

	EXPECT_EQ(PARSE_C("", &c), 0);
	EXPECT_EQ(c.n, 0);
	EXPECT_EQ(PARSE_C("2 1\n26 4\n", &c), 0);
	EXPECT_EQ(c.n, 2);
	EXPECT_EQ(c.c[1].service, 26);
	EXPECT_EQ(c.c[1].cid, 4);
	EXPECT_EQ(PARSE_C("2 1", &c), -EINVAL);	    /* cut short */
	EXPECT_EQ(PARSE_C("2 0\n", &c), -EINVAL);   /* no client */
	EXPECT_EQ(PARSE_C("2 255\n", &c), -EINVAL); /* broadcast */
	EXPECT_EQ(PARSE_C("256 1\n", &c), -EINVAL); /* no such service */
	EXPECT_EQ(PARSE_C(" 2 1\n", &c), -EINVAL);  /* blanks */
	EXPECT_EQ(PARSE_C("2  1\n", &c), -EINVAL);
	EXPECT_EQ(PARSE_C("-2 1\n", &c), -EINVAL);
	EXPECT_EQ(PARSE_C("2 1\n\n", &c), -EINVAL);
	char many[256] = "";
	for (int i = 1; i <= QMI_STATE_MAX_CLIENTS + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "1 %d\n", i);
	EXPECT_EQ(PARSE_C(many, &c), -EINVAL);
}

TEST(mux)
{
	struct qmi_state_mux m;

	EXPECT_EQ(PARSE_M("v4 2 268435457\nv6 3 4294967295\n", &m), 0);
	EXPECT_TRUE(m.fam[0].present && m.fam[1].present);
	EXPECT_EQ(m.fam[0].cid, 2);
	EXPECT_EQ(m.fam[0].handle, 268435457u);
	EXPECT_EQ(m.fam[1].handle, 4294967295u);
	EXPECT_EQ(PARSE_M("v6 3 7\n", &m), 0);
	EXPECT_TRUE(!m.fam[0].present && m.fam[1].present);
	EXPECT_EQ(PARSE_M("v4 2 1\nv4 3 1\n", &m), -EINVAL); /* a family twice */
	EXPECT_EQ(PARSE_M("v4 2 0\n", &m), -EINVAL);	     /* no handle */
	EXPECT_EQ(PARSE_M("v4 2 4294967296\n", &m), -EINVAL);
	EXPECT_EQ(PARSE_M("v5 2 1\n", &m), -EINVAL);
	EXPECT_EQ(PARSE_M("v4 2 1", &m), -EINVAL);
}

TEST(files)
{
	char dir[] = "/tmp/test-qmi-state.XXXXXX", link[64], path[96];
	struct qmi_state_clients c = { 2, { { 2, 1 }, { 3, 9 } } }, c2;
	struct qmi_state_mux m = { { { true, 5, 77 }, { false, 0, 0 } } }, m2;

	EXPECT_TRUE(mkdtemp(dir) != NULL);
	snprintf(link, sizeof(link), "%s/qmi0", dir);
	EXPECT_EQ(qmi_state_read_mux(link, 1, &m2), -ENOENT);
	EXPECT_EQ(qmi_state_write_clients(link, &c), 0);
	EXPECT_EQ(qmi_state_read_clients(link, &c2), 0);
	EXPECT_EQ(c2.n, 2);
	EXPECT_EQ(c2.c[1].cid, 9);
	EXPECT_EQ(qmi_state_write_mux(link, 1, &m), 0);
	EXPECT_EQ(qmi_state_read_mux(link, 1, &m2), 0);
	EXPECT_TRUE(m2.fam[0].present && !m2.fam[1].present);
	EXPECT_EQ(m2.fam[0].handle, 77);
	qmi_state_remove_mux(link, 1);
	EXPECT_EQ(qmi_state_read_mux(link, 1, &m2), -ENOENT);
	snprintf(path, sizeof(path), "%s.clients", link);
	EXPECT_EQ(unlink(path), 0);
	EXPECT_EQ(rmdir(dir), 0);
}
