/* SPDX-License-Identifier: MIT */
/* qmapctl: the command line client of qmapd. Everything but main() is in the qmapctl library. */
#include "qmapctl.h"
#include "verbs.h"

int main(int argc, char **argv)
{
	struct qmapctl q;
	int index, r;

	qmapctl_init(&q, stdout, stderr);
	r = qmapctl_parse_options(&q, argc, argv, &index);
	if (r == QMAPCTL_PROCEED)
		r = qmapctl_dispatch(&q, argc - index, argv + index);
	qmapctl_done(&q);
	return r;
}
