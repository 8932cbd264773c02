/* SPDX-License-Identifier: MIT */
/* The data interface's class requests, in cdc_ncm's order, for every backend (ntb-setup.h). */
#include <endian.h>
#include <string.h>

#include "log.h"
#include "ntb-setup.h"

#define NTB16_BLOCK_MAX 65535u /* wBlockLength is 16 bits */

const char *ntb_setup_request_name(uint8_t request)
{
	switch (request) {
	case CDC_GET_NTB_PARAMETERS:
		return "GET_NTB_PARAMETERS";
	case CDC_SET_CRC_MODE:
		return "SET_CRC_MODE";
	case CDC_SET_NTB_FORMAT:
		return "SET_NTB_FORMAT";
	case CDC_SET_NTB_INPUT_SIZE:
		return "SET_NTB_INPUT_SIZE";
	}
	return "class request";
}

void ntb_setup_begin(struct ntb_setup *ns, struct transport *t, const char *name, bool caps_known,
		     uint8_t network_caps)
{
	*ns = (struct ntb_setup){
		.step = NTB_SETUP_IDLE,
		.caps_known = caps_known,
		.network_caps = network_caps,
		.name = name,
	};
	t->ntb.format = NTB_FORMAT_16;
	t->ntb.in_size = t->ntb.params.in_max_size;
	t->ntb.crc_refused = t->ntb.format_refused = t->ntb.in_size_refused = false;
	t->ntb.params_from_desc = false;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/*
 * The next request, skipping those the function does not need, as cdc_ncm does: SET_CRC_MODE
 * only where CRCs are offered (or the capabilities are unknown: a STALL then says there are
 * none), SET_NTB_FORMAT only where NTB32 is offered (NTB16 is the default, NCM 1.0 §6.2.5).
 */
bool ntb_setup_next(struct ntb_setup *ns, struct transport *t, struct ntb_setup_request *req)
{
	struct transport_ntb *n = &t->ntb;

	*req = (struct ntb_setup_request){ .request_type = CDC_REQ_TYPE_OUT };
	switch (ns->step) {
	case NTB_SETUP_IDLE:
		ns->step = NTB_SETUP_GET_NTB_PARAMETERS;
		req->request_type = CDC_REQ_TYPE_IN;
		req->request = CDC_GET_NTB_PARAMETERS;
		req->length = NTB_PARAMS_SIZE;
		return true;
	case NTB_SETUP_GET_NTB_PARAMETERS:
		if (!ns->caps_known || (ns->network_caps & CDC_NCAP_CRC_MODE)) {
			ns->step = NTB_SETUP_SET_CRC_MODE;
			req->request = CDC_SET_CRC_MODE;
			req->value = CDC_NCM_CRC_NOT_APPENDED;
			return true;
		}
		n->crc_refused = true; /* not offered: nothing to turn off */
		__attribute__((fallthrough));
	case NTB_SETUP_SET_CRC_MODE:
		if (n->params.formats & NTB_FORMATS_32) {
			ns->step = NTB_SETUP_SET_NTB_FORMAT;
			req->request = CDC_SET_NTB_FORMAT;
			req->value =
				t->params.ntb_format == 32 ? CDC_NTB32_FORMAT : CDC_NTB16_FORMAT;
			return true;
		}
		__attribute__((fallthrough));
	case NTB_SETUP_SET_NTB_FORMAT: {
		/* As much as a receive buffer holds, within the function's limit and the
		 * format's. */
		uint32_t size = t->rx_buf_size;
		if (size > n->params.in_max_size)
			size = n->params.in_max_size;
		if (n->format == NTB_FORMAT_16 && size > NTB16_BLOCK_MAX)
			size = NTB16_BLOCK_MAX;
		ns->step = NTB_SETUP_SET_NTB_INPUT_SIZE;
		n->in_size = size; /* until a STALL says otherwise */
		req->request = CDC_SET_NTB_INPUT_SIZE;
		put_le32(req->data, size);
		req->length = 4;
		/* The 8-byte form (NCM 1.0 §6.2.7) where the function says it takes it:
		 * wNtbInMaxDatagrams 0 (no limit) and a reserved u16. */
		if (ns->caps_known && (ns->network_caps & CDC_NCAP_NTB_INPUT_SIZE))
			req->length = 8;
		return true;
	}
	case NTB_SETUP_SET_NTB_INPUT_SIZE:
		ns->step = NTB_SETUP_DONE;
		return false;
	case NTB_SETUP_DONE:
		return false;
	}
	return false;
}

void ntb_setup_answer(struct ntb_setup *ns, struct transport *t, bool stall, const uint8_t *data,
		      size_t len)
{
	struct transport_ntb *n = &t->ntb;

	switch (ns->step) {
	case NTB_SETUP_GET_NTB_PARAMETERS: {
		struct ntb_params p;
		if (stall || ntb_params_parse(data, len, &p) < 0) {
			log_warning("%s: GET_NTB_PARAMETERS %s, using the descriptor's", ns->name,
				    stall ? "refused" : "malformed");
			n->params_from_desc = true;
		} else {
			n->params = p;
		}
		n->in_size = n->params.in_max_size;
		break;
	}
	case NTB_SETUP_SET_CRC_MODE:
		n->crc_refused = stall;
		break;
	case NTB_SETUP_SET_NTB_FORMAT:
		n->format_refused = stall;
		/* From this answer on the function uses the format; refused: still NTB16. */
		if (!stall && t->params.ntb_format == 32)
			n->format = NTB_FORMAT_32;
		if (stall)
			log_warning("%s: SET_NTB_FORMAT refused, NTB16 stays", ns->name);
		break;
	case NTB_SETUP_SET_NTB_INPUT_SIZE:
		n->in_size_refused = stall;
		if (stall) {
			log_warning(
				"%s: SET_NTB_INPUT_SIZE %u refused, the function sends up to %u",
				ns->name, n->in_size, n->params.in_max_size);
			n->in_size = n->params.in_max_size;
		}
		break;
	case NTB_SETUP_IDLE:
	case NTB_SETUP_DONE:
		break;
	}
}

void ntb_setup_finish(struct ntb_setup *ns, struct transport *t)
{
	struct transport_ntb *n = &t->ntb;
	uint32_t size = n->in_size < t->rx_buf_size ? n->in_size : t->rx_buf_size;

	ns->step = NTB_SETUP_DONE;
	if (n->in_size > t->rx_buf_size)
		log_warning("%s: the function sends NTBs of up to %u bytes, the receive buffers "
			    "hold %u: larger ones are dropped",
			    ns->name, n->in_size, t->rx_buf_size);
	transport_set_dl_size(t, size);
	t->framing = TRANSPORT_FRAMING_NTB;
	log_info("%s: MBIM data interface %d, NTB%s, input size %u, output up to %u bytes and %u "
		 "datagrams, divisor %u remainder %u alignment %u",
		 ns->name, t->data_interface, n->format == NTB_FORMAT_32 ? "32" : "16", n->in_size,
		 n->params.out_max_size, n->params.out_max_datagrams, n->params.out_divisor,
		 n->params.out_remainder, n->params.out_alignment);
}
