/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim as an MBIM USB device (--gadgetfs DIR): a gadgetfs front end that carries the
 * sim's MBIM modem (--mbim) to a real USB host stack, so the kernel's cdc_mbim binds to it as
 * to a Sierra Wireless EM7455 in its MBIM composition (1199:9079): an interface association,
 * communications interface 12 (02/0e/00 with the CDC header, MBIM, MBIM extended and union
 * functional descriptors, interrupt IN) and data interface 13 (0a/00/02: alternate setting 0
 * without endpoints, 1 with bulk IN + bulk OUT), as the umockdev harness plays it
 * (tests/usb/usb-harness.c). DIR is a mounted gadgetfs (the gadgetfs module on a free UDC,
 * dummy_hcd in the tests).
 *
 * Why gadgetfs and not FunctionFS like sim-ffs.h: FunctionFS cannot express this function.
 * Its descriptor parser (f_fs.c, ffs_do_single_desc) accepts interface, endpoint, interface
 * association, SuperSpeed companion, OTG and HID class descriptors only, so the CDC functional
 * descriptors (CS_INTERFACE, 0x24) are refused with EINVAL, and cdc_mbim refuses a
 * communications interface without the MBIM functional descriptor. And Debian 12's f_fs
 * (Linux 6.1) has no get_alt(), so composite.c stalls SET_INTERFACE to any alternate setting
 * but 0: cdc_mbim could never select the data interface's setting 1. gadgetfs takes the whole
 * configuration descriptor verbatim and hands SET_INTERFACE to user space. What gadgetfs
 * cannot do: the configuration may not claim remote wakeup (the EM7455's bmAttributes 0xa0
 * becomes 0x80), and a control OUT request with a data stage cannot be stalled (the kernel
 * completes the data stage before user space sees it): such a request this function refuses
 * is acknowledged, logged and counted instead. For the same reason a command is lost when
 * the host has another control request queued right behind it: dummy_hcd completes an OUT
 * request's data stage and starts the next request in the same timer run, and gadgetfs
 * keeps only the newest unread SETUP (next_event() in its inode.c), so the command is gone
 * without an error on either side; and a SETUP that comes while the ep0 thread is between a
 * command's SETUP and its data aborts the command (EIDRM). qmapd has one encapsulated
 * transfer on EP0 at a time (transport-usb.c); cdc-wdm one command, but its
 * GET_ENCAPSULATED_RESPONSE can follow a command in the same run. After an abort the ep0
 * thread leaves gadgetfs' SETUP state without taking anything of the new request
 * (ep0_recover()) and goes on answering: the lost command is the host's to time out, as
 * with a function that lost a transfer. --gadgetfs-slow-commands US makes the thread take
 * each command's data US microseconds after its SETUP, so that a request queued behind a
 * command aborts it: lost commands on purpose, for the host's recovery.
 *
 * What goes where:
 *   SEND_ENCAPSULATED_COMMAND on ep0   -> CONTROL message to the sim
 *   CONTROL message from the sim       -> queued; RESPONSE_AVAILABLE on interrupt IN
 *   GET_ENCAPSULATED_RESPONSE on ep0   <- the oldest queued response (0 bytes if none)
 *   NCM/MBIM class requests 0x80-0x8a  -> CLASS_REQUEST to the sim, answered (or stalled)
 *                                         as it says; first refused here as the harness
 *                                         does (wrong interface, CRC mode the function does
 *                                         not offer, format or size changes while the data
 *                                         interface is in its data setting)
 *   other class and standard requests  stalled, except SET/GET_INTERFACE, SET_CONFIGURATION
 *                                      and the string descriptors; also MBIM's
 *                                      RESET_FUNCTION (0x05, MBIM 1.0 §6.2), which no host
 *                                      here sends and the sim's transport cannot carry
 *   bulk OUT                           -> BULK_OUT message, TRANSPORT_SIM_FLAG_ZLP where a
 *                                         zero-length packet ended it (a read of whole
 *                                         packets below dwNtbOutMaxSize: dummy_hcd ends a
 *                                         read only at a short packet or a full buffer)
 *   BULK_IN message                    -> bulk IN, with a zero-length packet after an NTB
 *                                         that ends on a packet boundary below the host's
 *                                         NTB input size
 * Bulk IN flows only in the data alternate setting. A new configuration, a bus reset and
 * alternate setting 0 drop what was queued for the host before (a function reset drops its
 * buffers); a response that was answered stays answered. FunctionFS' and gadgetfs'
 * endpoints block, so each endpoint has its own thread, as in sim-ffs.c; the threads touch
 * only their endpoint, the socket and the queues here, never the engine. What the front end
 * saw goes with the sim's counters (sim_gadgetfs_print_stats()), class_sequence under the
 * harness's name and in its form.
 */
#ifndef QMAPD_SIM_GADGETFS_H
#define QMAPD_SIM_GADGETFS_H

#include <stdint.h>
#include <stdio.h>

struct sim_gadgetfs;

/* What the front end saw and did, the gadgetfs_* lines of the sim's stats file (with
 * gadgetfs_class_sequence, what the host did to the data interface, in order). */
struct sim_gadgetfs_stats {
	uint64_t class_requests;     /* NCM/MBIM class requests (0x80-0x8a) */
	uint64_t class_stalled;	     /* class requests refused, these or others */
	uint64_t class_lost;	     /* of those: aborted by the host's next request */
	uint64_t unstallable;	     /* refused OUT requests with data: acknowledged */
	uint64_t bulk_in;	     /* NTBs the host took on bulk IN */
	uint64_t bulk_in_zlp;	     /* of those: followed by a zero-length packet */
	uint64_t bulk_out;	     /* transfers the host sent on bulk OUT */
	uint64_t bulk_out_bytes;     /* their bytes */
	uint64_t bulk_out_zlp;	     /* of those: ended by a zero-length packet */
	uint64_t bulk_out_zlp_alone; /* zero-length packets that ended no data */
	uint64_t dropped;	     /* messages for the host dropped: a queue was full */
};

/* Connect to the sim at socket_path (an MBIM sim), write the device to DIR's controller file,
 * and start the threads; slow_us: --gadgetfs-slow-commands (0: none). Returns 0 or -errno,
 * logged once. */
int sim_gadgetfs_start(const char *dir, const char *socket_path, uint32_t slow_us,
		       struct sim_gadgetfs **ret);

/* Its counters as "gadgetfs_KEY=VALUE" lines. */
void sim_gadgetfs_print_stats(struct sim_gadgetfs *g, FILE *out);

#endif
