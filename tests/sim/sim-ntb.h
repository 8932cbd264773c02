/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's check of one uplink (OUT) NTB in MBIM mode, as a strict modem makes it: the
 * NTB is taken whole or not at all. Pure (no I/O, no state, no logging), so that sim.c only
 * counts the verdict and delivers the datagrams, and a fuzz target can reach it.
 *
 * In this order, the first that applies drops the NTB:
 *   longer than dwNtbOutMaxSize                           SIM_NTB_TOO_BIG
 *   any rejection by the codec (ntb.h), its reason kept  SIM_NTB_MALFORMED
 *   more than wNtbOutMaxDatagrams (when given) or than
 *   SIM_NTB_UL_MAX_DGRAMS datagrams                       SIM_NTB_TOO_MANY_DATAGRAMS
 *   an NDP not at a multiple of wNdpOutAlignment          SIM_NTB_MISALIGNED_NDP
 *   a datagram not at wNdpOutPayloadRemainder modulo
 *   wNdpOutDivisor (offsets from the start of the NTB)    SIM_NTB_MISALIGNED_DATAGRAM
 * An NTB without datagrams is SIM_NTB_OK with none, whatever its NDPs' alignment.
 */
#ifndef QMAPD_SIM_NTB_H
#define QMAPD_SIM_NTB_H

#include <stddef.h>
#include <stdint.h>

#include "ntb.h"

/* Most datagrams looked at in one OUT NTB: beyond any wNtbOutMaxDatagrams a modem announces. */
#define SIM_NTB_UL_MAX_DGRAMS 512

enum sim_ntb_verdict {
	SIM_NTB_OK,
	SIM_NTB_TOO_BIG,
	SIM_NTB_MALFORMED,
	SIM_NTB_TOO_MANY_DATAGRAMS,
	SIM_NTB_MISALIGNED_NDP,
	SIM_NTB_MISALIGNED_DATAGRAM,
};

/*
 * Check the OUT NTB in buf (len bytes, the whole transfer) against the function's own
 * parameters, read in the host's format. params must be valid as sim_options_validate()
 * wants them (divisor and alignment powers of two of at least 4, remainder below the
 * divisor). On SIM_NTB_OK, dgs[0..*ret_n) are its datagrams in the codec's order; on
 * SIM_NTB_MALFORMED, *ret_error is the codec's reason. dgs has room for
 * SIM_NTB_UL_MAX_DGRAMS entries.
 */
enum sim_ntb_verdict sim_ntb_check_out(const struct ntb_params *params, enum ntb_format format,
				       uint8_t *buf, size_t len, struct ntb_datagram *dgs,
				       unsigned *ret_n, enum ntb_error *ret_error);

#endif
