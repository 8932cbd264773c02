/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the state files one qmapd leaves for the next (qmi-state.h,
 * bearer-state.h's D-Bus bearer records and mux-record.h's lists of kept devices and MBIM
 * sessions): the input is a file's content, read as each kind. Checked besides what the
 * sanitizers see: what parses is within its limits (at most 16 clients, no client id 0 or
 * 0xff, no handle 0, no mux 0), and formatting it gives text that parses back to the same
 * thing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bearer-state.h"
#include "mux-record.h"
#include "qmi-state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qmi_state_clients c, c2;
	struct qmi_state_mux m, m2;
	char text[1024];
	size_t n;

	if (qmi_state_parse_clients((const char *)data, size, &c) == 0) {
		check(c.n <= QMI_STATE_MAX_CLIENTS);
		for (unsigned i = 0; i < c.n; i++)
			check(c.c[i].cid != 0 && c.c[i].cid != 0xff);
		n = qmi_state_format_clients(&c, text, sizeof(text));
		check(qmi_state_parse_clients(text, n, &c2) == 0);
		check(c2.n == c.n && memcmp(c2.c, c.c, c.n * sizeof(c.c[0])) == 0);
	}
	if (qmi_state_parse_mux((const char *)data, size, &m) == 0) {
		for (unsigned i = 0; i < 2; i++)
			check(!m.fam[i].present ||
			      (m.fam[i].cid != 0 && m.fam[i].cid != 0xff && m.fam[i].handle != 0));
		n = qmi_state_format_mux(&m, text, sizeof(text));
		check(qmi_state_parse_mux(text, n, &m2) == 0);
		for (unsigned i = 0; i < 2; i++) {
			check(m2.fam[i].present == m.fam[i].present);
			if (m.fam[i].present)
				check(m2.fam[i].cid == m.fam[i].cid &&
				      m2.fam[i].handle == m.fam[i].handle);
		}
	}
	/* A bearer record: within its limits, and its text parses back to the same. */
	static struct bearer_state b, b2;
	static char btext[BEARER_STATE_FILE_MAX];
	if (bearer_state_parse((const char *)data, size, &b) == 0) {
		check(b.bearer <= BEARER_STATE_INDEX_MAX && b.n_keys <= BEARER_STATE_MAX_KEYS);
		int bn = bearer_state_format(&b, btext, sizeof(btext));
		check(bn > 0);
		check(bearer_state_parse(btext, (size_t)bn, &b2) == 0);
		check(b2.bearer == b.bearer && b2.allow_roaming == b.allow_roaming &&
		      b2.n_keys == b.n_keys);
		for (unsigned i = 0; i < b.n_keys; i++)
			check(strcmp(b2.keys[i].name, b.keys[i].name) == 0 &&
			      strcmp(b2.keys[i].value, b.keys[i].value) == 0);
	}
	/* A list of muxes: valid ids and names only, and its text parses back to the same. */
	static struct mux_record r, r2;
	static char rtext[MUX_RECORD_FILE_MAX];
	if (mux_record_parse((const char *)data, size, &r) == 0) {
		check(r.name[0][0] == '\0');
		size_t rn = mux_record_format(&r, rtext, sizeof(rtext));
		check(rn < sizeof(rtext) - 1);
		check(mux_record_parse(rtext, rn, &r2) == 0);
		check(memcmp(&r, &r2, sizeof(r)) == 0);
	}
	return 0;
}
