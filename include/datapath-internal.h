/* SPDX-License-Identifier: MIT */
/* Shared between datapath.c, datapath-dl.c and datapath-ul.c only. */
#ifndef QMAPD_DATAPATH_INTERNAL_H
#define QMAPD_DATAPATH_INTERNAL_H

#include "datapath.h"

#define ETH_HEADER_SIZE 14

/* Downlink (datapath-dl.c). */
void datapath_gro_flush(void *userdata);
void datapath_write_flush(struct datapath *dp);
void datapath_send_pending_acks(struct datapath *dp);

/* Uplink (datapath-ul.c). */
void datapath_ul_flush(struct datapath *dp);
struct transport_out *datapath_ul_room(struct datapath *dp, uint32_t need);
void datapath_ul_segment_resume(struct datapath *dp);
void mux_update_reading(struct datapath *dp, struct mux *m);
void datapath_set_reading(struct datapath *dp, bool on);
void mux_on_readable(struct ev_loop *loop, ev_io *w, int revents);

#endif
