/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's strict check of uplink NTBs (see sim-ntb.h).
 */
#include <stdbool.h>

#include "byteorder.h"
#include "sim-ntb.h"

/* Every NDP of an NTB the codec accepted lies at the announced alignment. */
static bool ndps_aligned(const struct ntb_params *params, enum ntb_format format,
			 const uint8_t *buf)
{
	bool is32 = format == NTB_FORMAT_32;
	size_t ndp = is32 ? get_le32(buf + 12) : get_le16(buf + 10);

	/* The codec followed this chain without a loop: it ends within NTB_MAX_NDPS. */
	for (unsigned i = 0; ndp && i < NTB_MAX_NDPS; i++) {
		if (ndp % params->out_alignment)
			return false;
		ndp = is32 ? get_le32(buf + ndp + 8) : get_le16(buf + ndp + 6);
	}
	return true;
}

enum sim_ntb_verdict sim_ntb_check_out(const struct ntb_params *params, enum ntb_format format,
				       uint8_t *buf, size_t len, struct ntb_datagram *dgs,
				       unsigned *ret_n, enum ntb_error *ret_error)
{
	struct ntb_parser p;
	unsigned n = 0;
	int r;

	*ret_n = 0;
	if (len > params->out_max_size)
		return SIM_NTB_TOO_BIG;
	ntb_parse_init(&p, buf, len, format);
	/* Past the array's room the datagrams are only counted: the NTB is dropped anyway. */
	while ((r = ntb_parse_next(&p, &dgs[n < SIM_NTB_UL_MAX_DGRAMS ? n : 0])) != 0) {
		if (r < 0) {
			*ret_error = p.error;
			return SIM_NTB_MALFORMED;
		}
		n++;
	}
	if ((params->out_max_datagrams && n > params->out_max_datagrams) ||
	    n > SIM_NTB_UL_MAX_DGRAMS)
		return SIM_NTB_TOO_MANY_DATAGRAMS;
	if (n == 0)
		return SIM_NTB_OK;
	if (!ndps_aligned(params, format, buf))
		return SIM_NTB_MISALIGNED_NDP;
	for (unsigned i = 0; i < n; i++)
		if ((size_t)(dgs[i].data - buf) % params->out_divisor != params->out_remainder)
			return SIM_NTB_MISALIGNED_DATAGRAM;
	*ret_n = n;
	return SIM_NTB_OK;
}
