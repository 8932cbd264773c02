/* SPDX-License-Identifier: MIT */
/*
 * The class requests that set up an MBIM function's data interface before data flows, in
 * cdc_ncm's order (cdc_ncm_init(), docs/PROTOCOLS.md §3.3): GET_NTB_PARAMETERS, SET_CRC_MODE
 * (off) when the function offers CRCs, SET_NTB_FORMAT when it offers NTB32, SET_NTB_INPUT_SIZE.
 * One state machine for every backend: the sim sends each request as a message, the usb
 * transport as a control transfer on EP0; both feed the answers back here, which fills
 * t->ntb. Needs t->ntb's descriptor fields and params (the descriptor's copy) set first.
 */
#ifndef QMAPD_NTB_SETUP_H
#define QMAPD_NTB_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport.h"

/* bRequest values (cdc.h; NCM 1.0 §6.2) and bmRequestType of class requests. */
#define CDC_REQ_TYPE_OUT	 0x21
#define CDC_REQ_TYPE_IN		 0xa1
#define CDC_GET_NTB_PARAMETERS	 0x80
#define CDC_SET_NTB_FORMAT	 0x84
#define CDC_SET_NTB_INPUT_SIZE	 0x86
#define CDC_SET_CRC_MODE	 0x8a
#define CDC_NTB16_FORMAT	 0x0000
#define CDC_NTB32_FORMAT	 0x0001
#define CDC_NCM_CRC_NOT_APPENDED 0x0000

/* bmNetworkCapabilities of the MBIM functional descriptor (cdc.h USB_CDC_NCM_NCAP_*). */
#define CDC_NCAP_CRC_MODE	0x10
#define CDC_NCAP_NTB_INPUT_SIZE 0x20

enum ntb_setup_step {
	NTB_SETUP_IDLE,
	NTB_SETUP_GET_NTB_PARAMETERS,
	NTB_SETUP_SET_CRC_MODE,
	NTB_SETUP_SET_NTB_FORMAT,
	NTB_SETUP_SET_NTB_INPUT_SIZE,
	NTB_SETUP_DONE,
};

/* One class request: the setup packet's fields and, host to device, its data. */
struct ntb_setup_request {
	uint8_t request_type;
	uint8_t request;
	uint16_t value;
	uint16_t length;
	uint8_t data[8];
};

struct ntb_setup {
	enum ntb_setup_step step; /* the request awaiting its answer */
	/* Whether the function's bmNetworkCapabilities are known (USB descriptor); the sim
	 * does not carry them, so SET_CRC_MODE is asked and a STALL accepted. */
	bool caps_known;
	uint8_t network_caps;
	const char *name; /* for log lines */
};

/* Start over: t->ntb keeps the descriptor's fields, the format goes back to NTB16. */
void ntb_setup_begin(struct ntb_setup *ns, struct transport *t, const char *name, bool caps_known,
		     uint8_t network_caps);
/* The next request to send, or false when the sequence is done (see ntb_setup_finish()). */
bool ntb_setup_next(struct ntb_setup *ns, struct transport *t, struct ntb_setup_request *req);
/* The answer to the request in flight: STALLed, or its data (device to host). */
void ntb_setup_answer(struct ntb_setup *ns, struct transport *t, bool stall, const uint8_t *data,
		      size_t len);
/* Done: the receive size follows the agreed input size, framing NTB; logs what was agreed. */
void ntb_setup_finish(struct ntb_setup *ns, struct transport *t);
const char *ntb_setup_request_name(uint8_t request);

#endif
