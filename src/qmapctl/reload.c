/* SPDX-License-Identifier: MIT */
/* qmapctl reload: qmapd re-reads its configuration file and keeps the old one if it is bad. */
#include "output.h"
#include "qmapctl.h"
#include "verbs.h"

int qmapctl_reload(struct qmapctl *q, int argc, char **argv)
{
	json_auto_t *result = NULL;
	int r;

	r = qmapctl_verb_options(q, "reload", NULL, &argc, argv, NULL);
	if (r != QMAPCTL_PROCEED)
		return r;
	if (argc > 1)
		return qmapctl_usage_error(q, "reload takes no arguments, got '%s'", argv[1]);

	r = qmapctl_request(q, json_pack("{s:s}", "command", "reload"), &result);
	if (r != QMAPCTL_EXIT_OK)
		return r;
	/* Silent on success, like wg setconf; -j still gets the (empty) result. */
	if (q->json)
		qmapctl_print_json(q->out, result);
	return QMAPCTL_EXIT_OK;
}
