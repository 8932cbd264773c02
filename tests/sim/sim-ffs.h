/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim as a USB device (--ffs DIR): a FunctionFS front end that carries the sim's
 * modem to a real USB host stack. DIR is a mounted functionfs instance (usb_f_fs) of a
 * configfs gadget; this writes a Quectel EC25-style QMI function's descriptors (vendor
 * interface ff/ff/ff, interrupt IN, bulk IN, bulk OUT; the gadget puts it at interface 4
 * behind four serial functions) and serves it:
 *   SEND_ENCAPSULATED_COMMAND on ep0   -> CONTROL message to the sim
 *   CONTROL message from the sim       -> queued; RESPONSE_AVAILABLE on interrupt IN
 *   GET_ENCAPSULATED_RESPONSE on ep0   <- the oldest queued response (0 bytes if none)
 *   SET_CONTROL_LINE_STATE             acknowledged (qmi_wwan raises DTR on Quectel)
 *   other class requests               stalled
 *   bulk OUT                           -> BULK_OUT message; BULK_IN message -> bulk IN
 * It reaches the sim's engine through the sim's own socket, as a host transport does
 * (struct transport_sim_header messages), so the engine is the same one every other test
 * drives. FunctionFS endpoints block; each one gets its own thread, which touches only its
 * endpoint, the socket and the two queues here (never the engine or the event loop).
 *
 * Faults on request (sim_ffs_inject()), made at the USB level as a modem makes them, so
 * that the host's real USB stack carries them (the umockdev harness's names, usb-harness.c):
 *   stall        bulk IN halted now (FunctionFS halts an endpoint on an I/O in the wrong
 *                direction): every host transfer on it fails with -EPIPE until the host
 *                clears the halt (CLEAR_FEATURE(ENDPOINT_HALT), answered by the UDC); the
 *                next aggregate waits for that
 *   short        a 2-byte transfer on bulk IN, shorter than any QMAP header
 *   out-stall    bulk OUT halted now: the host's next transfer fails with -EPIPE until it
 *                clears the halt
 *   out-timeout  bulk OUT not read for FFS_OUT_PAUSE_MS from now (a wedged modem NAKs): the
 *                host's transfers sent meanwhile time out if their timeout is shorter
 *   cmd-stall    the next SEND_ENCAPSULATED_COMMAND stalled, its data not taken
 *   int-silent   the next response queued without RESPONSE_AVAILABLE
 *   cmd-hold     the next SEND_ENCAPSULATED_COMMAND held: its data not taken, no answer,
 *                so the host's control transfer stays in flight (counted when the hold
 *                begins), until the host disables the function (the cable pulled: then
 *                FunctionFS cancels the request, counted as cmd_hold_dropped) or for
 *                FFS_CMD_HOLD_MS (then the command is taken late, or was already cancelled
 *                by the host's next request)
 * -EPROTO and -EOVERFLOW have no counterpart here: dummy_hcd has no wire to corrupt, and
 * never babbles into a transfer whose length is whole packets (tests/README.md).
 */
#ifndef QMAPD_SIM_FFS_H
#define QMAPD_SIM_FFS_H

#include <stdint.h>
#include <stdio.h>

struct sim_ffs;

#define SIM_FFS_FAULTS 7 /* the kinds above */

/* What the front end saw and did, the ffs_* lines of the sim's stats file. */
struct sim_ffs_stats {
	uint64_t enables, disables; /* FUNCTIONFS_ENABLE / DISABLE events */
	uint64_t unbinds;	    /* FUNCTIONFS_UNBIND: the gadget left the UDC (a DISABLE too) */
	uint64_t responses_purged;  /* queued responses dropped when the host disabled us */
	uint64_t responses_dropped; /* ... when the queue was full */
	uint64_t notify_failed;	    /* RESPONSE_AVAILABLE writes that failed */
	uint64_t get_empty;	    /* GET_ENCAPSULATED_RESPONSE with nothing queued */
	uint64_t bulk_in;	    /* aggregates the host took on bulk IN */
	uint64_t bulk_in_zlp;	    /* of those: followed by a zero-length packet */
	uint64_t bulk_in_dropped;   /* aggregates dropped: queue full, disabled, failed */
	uint64_t bulk_out;	    /* transfers the host sent on bulk OUT */
	uint64_t bulk_out_zlp;	    /* of those: ended by a zero-length packet */
	uint64_t dtr_set;	    /* SET_CONTROL_LINE_STATE with DTR (wValue bit 0) set */
	uint64_t dtr_clear;	    /* ... with DTR clear */
	uint64_t line_state;	    /* the last SET_CONTROL_LINE_STATE's wValue */
	uint64_t cmd_hold_dropped;  /* held commands the host took back (cmd-hold) */
	/* Faults made, by kind (sim_ffs_inject()). */
	uint64_t injected[SIM_FFS_FAULTS];
};

/* How long out-timeout leaves bulk OUT unread: longer than qmapd's 5 s OUT timeout. */
#define FFS_OUT_PAUSE_MS 7000
/* How long cmd-hold holds a command at most: longer than qmapd's 5 s control timeout. */
#define FFS_CMD_HOLD_MS 20000

/* Make the fault KIND (a name above) the next n times it can be made. Returns 0 or -EINVAL
 * for an unknown kind. Thread-safe. */
int sim_ffs_inject(struct sim_ffs *f, const char *kind, unsigned n);

/* Write the descriptors and strings to DIR/ep0, open the endpoints, connect to the sim at
 * socket_path and start the threads. Returns 0 or -errno, logged once. */
int sim_ffs_start(const char *dir, const char *socket_path, struct sim_ffs **ret);

/* Its counters as "ffs_KEY=VALUE" lines. */
void sim_ffs_print_stats(struct sim_ffs *f, FILE *out);

#endif
