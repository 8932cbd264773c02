/* SPDX-License-Identifier: MIT */
/* qmapctl reload: qmapd re-reads its configuration file and keeps the old one if it is bad. */
#include "qmapctl.h"
#include "verbs.h"

int qmapctl_reload(struct qmapctl *q, int argc, char **argv)
{
	/* Silent on success, like wg setconf; -j still gets the (empty) result. */
	return qmapctl_show(q, argc, argv, "reload", "reload", NULL);
}
