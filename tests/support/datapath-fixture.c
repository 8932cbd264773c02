/* SPDX-License-Identifier: MIT */
#include "datapath-fixture.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "test-util.h"
#include "transport-mem.h"

void dp_fixture_init(struct dp_fixture *f, const char *interface_prefix)
{
	memset(f, 0, sizeof(*f));
	if (geteuid() != 0)
		TEST_SKIP("needs root (network namespace, TAP)");
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("unshare(CLONE_NEWNET): %s", strerror(errno));
	log_set_max_level(LOG_WARNING);
	if (rtnl_open(&f->rtnl) < 0 || rtnl_link_set(f->rtnl, 1, 0, true, false) < 0) {
		fprintf(stderr, "cannot set up rtnetlink\n");
		exit(1);
	}
	f->loop = ev_default_loop(0);

	config_device_init_defaults(&f->device);
	snprintf(f->device.device, sizeof(f->device.device), "mem:");
	f->device.qmap_version = QMAP_V1;
	for (unsigned id = 1; id <= 2; id++) {
		struct config_mux *m = &f->mux[id];
		char prefix[32];

		m->present = true;
		m->id = id;
		snprintf(m->interface, sizeof(m->interface), "%s%u", interface_prefix, id);
		m->mtu = 1500;
		m->headroom = CONFIG_HEADROOM_XDP;
		m->uplink_queue = CONFIG_UPLINK_QUEUE_FQ_CODEL;
		snprintf(prefix, sizeof(prefix), "203.0.113.%u/32", id);
		config_parse_prefix(prefix, &m->ipv4_address);
		m->route_metric = 100 * id;
	}
}

void dp_fixture_route(struct config_mux *m, const char *prefix)
{
	config_parse_prefix(prefix, &m->routes[0]);
	m->n_routes = 1;
}

int dp_fixture_datapath(struct dp_fixture *f, struct datapath **ret)
{
	return datapath_new_with_backend(f->loop, f->rtnl, &f->device, &transport_mem_ops, NULL,
					 ret);
}

void dp_fixture_close(struct dp_fixture *f)
{
	rtnl_close(f->rtnl);
	f->rtnl = NULL;
}
