/* SPDX-License-Identifier: MIT */
/*
 * What every datapath unit test starts with: a network namespace of its own (the test is
 * skipped, exit 77, unless it is root and can have one), rtnetlink with lo up, the config of
 * a `mem:` device and of muxes 1 and 2 ("<prefix>1", "<prefix>2": MTU 1500, XDP headroom,
 * 203.0.113.N/32, route metric 100·N, no routes). A test changes what it needs in the
 * fixture, then creates the datapath with dp_fixture_datapath().
 */
#ifndef QMAPD_TEST_DATAPATH_FIXTURE_H
#define QMAPD_TEST_DATAPATH_FIXTURE_H

#include <ev.h>

#include "config.h"
#include "datapath.h"
#include "rtnl.h"

struct dp_fixture {
	struct ev_loop *loop;
	struct rtnl *rtnl;
	struct config_device device;
	struct config_mux mux[3]; /* [1] and [2] */
};

/* Exits 77 (skip) without root or a new network namespace, 1 if rtnetlink fails. */
void dp_fixture_init(struct dp_fixture *f, const char *interface_prefix);
/* The mux routes one prefix ("198.51.100.9/32") through its device. */
void dp_fixture_route(struct config_mux *m, const char *prefix);
/* datapath_new_with_backend() on the in-memory transport; its return value. */
int dp_fixture_datapath(struct dp_fixture *f, struct datapath **ret);
void dp_fixture_close(struct dp_fixture *f);

#endif
