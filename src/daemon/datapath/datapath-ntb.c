/* SPDX-License-Identifier: MIT */
/*
 * NTB framing (MBIM functions), the uplink side: NTBs built in place in the OUT buffers with
 * ntb.c (datapath-ul.c fills them), the limits the function announced, and what the status
 * shows. Downlink NTBs are walked in datapath-dl.c, on the QMAP frames' delivery path. Which framing a modem uses is the transport's to say
 * (transport->framing, set when the function appears); the packet paths switch on it.
 *
 * Sessions: MBIM session id N is mux N + 1 (datapath_mux_session()).
 */

#include <errno.h>

#include "datapath-internal.h"
#include "datapath.h"
#include "log-mux.h"

int datapath_ntb_ul_start(struct datapath *dp)
{
	struct transport_out *out = dp->ul_out;
	size_t size = out->size < dp->ul_max_size ? out->size : dp->ul_max_size;

	int r = ntb_build_init(&dp->ul_ntb, out->data, size, &dp->transport->ntb.params,
			       dp->transport->ntb.format, dp->ul_ntb_sequence);
	if (r < 0)
		return r;
	dp->ul_ntb_sequence++;
	return 0;
}

void datapath_ntb_ul_finish(struct datapath *dp)
{
	size_t len = 0;

	if (ntb_build_finish(&dp->ul_ntb, &len) < 0)
		len = 0; /* no datagram: the caller puts the buffer back */
	dp->ul_out->len = len;
}

size_t datapath_ntb_ul_room_any(const struct datapath *dp)
{
	const struct ntb_builder *b = &dp->ul_ntb;
	uint8_t *ptr;

	/* A session id the NTB does not have yet costs a new NDP: the worst case. */
	for (unsigned id = 0; id <= b->n_sessions; id++) {
		bool used = false;
		for (unsigned i = 0; i < b->n_sessions; i++)
			used |= b->sessions[i].id == id;
		if (used)
			continue;
		int room = ntb_build_room(b, (uint8_t)id, &ptr);
		return room > 0 ? (size_t)room : 0;
	}
	return 0;
}

void datapath_ntb_connected(struct datapath *dp)
{
	const struct transport_ntb *n = &dp->transport->ntb;
	uint32_t max = dp->transport->params.ul_max_size;

	dp->ul_header_size = 0; /* NDP entries go at the end, not in front of each packet */
	dp->ul_max_size = n->params.out_max_size < max ? n->params.out_max_size : max;
	dp->ul_max_datagrams =
		n->params.out_max_datagrams && n->params.out_max_datagrams < NTB_BUILD_MAX_DATAGRAMS
			? n->params.out_max_datagrams
			: NTB_BUILD_MAX_DATAGRAMS;
	dp->dl_min_padding = 0;
	dp->ul_ntb_sequence = 0;
	/*
	 * The largest IP packet the function takes: the smaller of wMaxSegmentSize and the
	 * extended descriptor's wMTU, which is how cdc_mbim bounds its netdev. The devices
	 * exist before the modem is known, with the configured MTU, and keep it: say which
	 * value to configure instead of changing the MTU under running traffic.
	 */
	uint16_t bound = n->max_segment_size;
	if (n->mtu && (!bound || n->mtu < bound))
		bound = n->mtu;
	for (unsigned id = 0; bound && id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id] && dp->mux[id]->mtu > bound)
			log_mux_warning(NULL, id, dp->mux[id]->nd.name,
					"MTU %u is above the MBIM function's %u bytes "
					"(wMaxSegmentSize %u, wMTU %u): the modem may drop larger "
					"packets; set mtu = %u",
					dp->mux[id]->mtu, bound, n->max_segment_size, n->mtu,
					bound);
	/* A datagram larger than an NTB could ever hold cannot be sent: say so once. */
	for (unsigned id = 0; id < ARRAY_SIZE(dp->mux); id++)
		if (dp->mux[id] && dp->mux[id]->mtu + 64 > dp->ul_max_size)
			log_mux_warning(NULL, id, dp->mux[id]->nd.name,
					"MTU %u does not fit the modem's %u-byte uplink "
					"NTBs: larger packets are dropped",
					dp->mux[id]->mtu, dp->ul_max_size);
}

enum transport_framing datapath_framing(const struct datapath *dp)
{
	return dp->transport->framing;
}

const struct transport_ntb *datapath_ntb(const struct datapath *dp)
{
	return dp->modem_up && datapath_is_ntb(dp) ? &dp->transport->ntb : NULL;
}
