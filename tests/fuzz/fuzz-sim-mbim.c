/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for qmapd-sim's MBIM side. The first byte's low bit picks what the rest is:
 *  - 0, control: a sequence of host->modem control messages for one fresh responder
 *    (sim-mbim.h), each [le16: fixup << 15 | drop << 14 | reset << 13 | length][length bytes].
 *    drop and reset call sim_mbim_drop_all() / sim_mbim_reset() before the message; fixup
 *    makes MessageLength (and an unfragmented COMMAND's InformationBufferLength) agree with
 *    the bytes, which random bytes seldom do. The first byte's other bits pick the options
 *    and whether a valid OPEN comes first, so short inputs reach the commands. Besides what
 *    ASan/UBSan see: every message sent is a whole modem->host message libmbim validates,
 *    no larger than the host's MaxControlTransfer, an answer in its request's transaction
 *    and an indication in none; the fragments of one answer come in order, in one go, and
 *    add up to its information buffer; a message is either handled or counted as malformed
 *    (or not opened) and then answered by exactly one FUNCTION_ERROR; sessions exist only
 *    while open, on a configured mux, no more than max_sessions.
 *  - 1, uplink: one OUT NTB for the strict check of the MBIM data path (sim-ntb.h), with the
 *    function's parameters from the next bytes. Accepted means: within dwNtbOutMaxSize and
 *    the datagram limit, every datagram a whole IP header inside the block at the divisor
 *    and remainder, every NDP at the alignment, and the codec yields the same datagrams.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmbim-glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim-mbim.h"
#include "sim-ntb.h"
#include "transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MSG_HDR	 12
#define FRAG_HDR 8
#define CMD_HDR	 48 /* header, fragment header, service, CID, command type, length */
#define IND_HDR	 44 /* the same without the command type / status */

static void check(int ok)
{
	if (!ok)
		abort();
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/*
 * Inputs are copied to the end of this array, so ASan's redzone after it catches a read one
 * byte past them, as an exact-size heap copy would, without an allocation per message.
 */
static uint8_t arena[TRANSPORT_MAX_TRANSFER + 1];

static uint8_t *arena_copy(const uint8_t *data, size_t size)
{
	uint8_t *p = arena + sizeof(arena) - size;

	memcpy(p, data, size);
	return p;
}

/* ---- control ---- */

static struct sim_mbim_options opts;
static unsigned replies, errors;
/* The most the function may send: wMaxControlMessage, then what the last OPEN asked for
 * (MBIM 1.0 §9.3.1: MaxControlTransfer, at least 64). */
static size_t limit;
static uint32_t request_tid; /* of the message being handled */

/* The answer being received in fragments: its first fragment's fields and what came so far. */
static struct {
	uint32_t type, tid, total, next;
	size_t info_len; /* the first fragment's InformationBufferLength */
	size_t len;	 /* reassembled: headers of the first fragment, then the payloads */
	uint8_t buf[64 * 1024 + 64];
} frag;

static void validate(const uint8_t *buf, size_t len)
{
	g_autoptr(MbimMessage) msg = mbim_message_new(buf, (guint32)len);
	check(mbim_message_validate(msg, NULL));
}

static void on_send(void *userdata, const uint8_t *buf, size_t len)
{
	(void)userdata;
	check(len >= MSG_HDR && len <= limit);
	check(le32(buf + 4) == len);
	uint32_t type = le32(buf), tid = le32(buf + 8);
	replies++;

	switch (type) {
	case MBIM_MESSAGE_TYPE_OPEN_DONE:
	case MBIM_MESSAGE_TYPE_CLOSE_DONE:
		check(frag.total == 0);
		check(len == MSG_HDR + 4);
		validate(buf, len);
		return;
	case MBIM_MESSAGE_TYPE_FUNCTION_ERROR:
		check(frag.total == 0);
		check(len == MSG_HDR + 4);
		errors++;
		validate(buf, len);
		return;
	case MBIM_MESSAGE_TYPE_COMMAND_DONE:
	case MBIM_MESSAGE_TYPE_INDICATE_STATUS:
		break;
	default:
		check(0);
	}

	/* An answer carries its request's transaction, an indication none. */
	check(tid == (type == MBIM_MESSAGE_TYPE_COMMAND_DONE ? request_tid : 0));
	size_t hdr = type == MBIM_MESSAGE_TYPE_COMMAND_DONE ? CMD_HDR : IND_HDR;
	check(len >= MSG_HDR + FRAG_HDR);
	uint32_t total = le32(buf + 12), cur = le32(buf + 16);
	check(total >= 1 && cur < total);
	if (cur == 0) {
		check(frag.total == 0);
		check(len >= hdr);
		frag.type = type;
		frag.tid = tid;
		frag.total = total;
		frag.next = 1;
		frag.info_len = le32(buf + hdr - 4);
		frag.len = len;
		memcpy(frag.buf, buf, len);
	} else {
		check(frag.total && type == frag.type && tid == frag.tid && total == frag.total &&
		      cur == frag.next);
		check(len > MSG_HDR + FRAG_HDR);
		size_t n = len - MSG_HDR - FRAG_HDR;
		check(frag.len + n <= sizeof(frag.buf));
		memcpy(frag.buf + frag.len, buf + MSG_HDR + FRAG_HDR, n);
		frag.len += n;
		frag.next++;
	}
	if (frag.next < frag.total)
		return;
	/* Whole: the information buffer is all there, and libmbim reads the message. */
	check(frag.len == hdr + frag.info_len);
	put_le32(frag.buf + 4, (uint32_t)frag.len);
	put_le32(frag.buf + 12, 1);
	validate(frag.buf, frag.len);
	frag.total = 0;
}

/* Sessions only while open, only on a configured mux, no more than max_sessions. Every id,
 * once per input: for each message it would take most of the run time (the harness's
 * compares are instrumented too). */
static void check_all_sessions(const struct sim_mbim *m)
{
	unsigned active = 0;

	for (unsigned i = 0; i < SIM_MBIM_SESSIONS; i++) {
		if (!sim_mbim_session_active(m, i))
			continue;
		active++;
		check(i + 1 <= CONFIG_MUX_ID_MAX && opts.mux[i + 1].present);
	}
	check(!sim_mbim_session_active(m, SIM_MBIM_SESSIONS));
	check(active <= opts.max_sessions);
	check(sim_mbim_is_open(m) || active == 0);
}

/* The same after each message: the session ids with a mux, and the one a COMMAND named. */
static void check_sessions(const struct sim_mbim *m, const uint8_t *msg, size_t n)
{
	static const unsigned with_mux[] = { 0, 1, 2, CONFIG_MUX_ID_MAX - 1 };
	unsigned active = 0;

	for (unsigned i = 0; i < 4; i++)
		active += sim_mbim_session_active(m, with_mux[i]);
	check(active <= opts.max_sessions);
	check(sim_mbim_is_open(m) || active == 0);
	if (n >= CMD_HDR + 4 && le32(msg + CMD_HDR) < SIM_MBIM_SESSIONS) {
		uint32_t id = le32(msg + CMD_HDR);
		check(!sim_mbim_session_active(m, id) ||
		      (id + 1 <= CONFIG_MUX_ID_MAX && opts.mux[id + 1].present));
	}
}

static void set_mux(unsigned id, uint32_t v4, uint8_t v6)
{
	struct sim_qmi_mux *x = &opts.mux[id];

	*x = (struct sim_qmi_mux){ .present = true };
	if (v4) {
		x->ipv4.family = AF_INET;
		x->ipv4.addr.v4.s_addr = htonl(v4);
		x->ipv4.prefixlen = 24;
	}
	if (v6) {
		x->ipv6.family = AF_INET6;
		x->ipv6.addr.v6.s6_addr[0] = 0x20;
		x->ipv6.addr.v6.s6_addr[1] = 0x01;
		x->ipv6.addr.v6.s6_addr[2] = 0x0d;
		x->ipv6.addr.v6.s6_addr[3] = 0xb8;
		x->ipv6.addr.v6.s6_addr[5] = v6;
		x->ipv6.addr.v6.s6_addr[15] = 2;
		x->ipv6.prefixlen = 64;
	}
}

static int handle(struct sim_mbim *m, const uint8_t *msg, size_t n)
{
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);
	uint64_t bad = st->mbim_malformed + st->mbim_not_opened;
	unsigned before = replies, errors_before = errors;
	request_tid = n >= MSG_HDR ? le32(msg + 8) : 0;
	int r = sim_mbim_handle(m, msg, n);

	check(frag.total == 0);
	if (r < 0) {
		check(r == -EBADMSG);
		check(st->mbim_malformed + st->mbim_not_opened == bad + 1);
		/* Too short to name a transaction: not answered; else one FUNCTION_ERROR. */
		check(replies - before == (n >= MSG_HDR ? 1u : 0u));
		check(errors - errors_before == replies - before);
	} else {
		check(r == 0);
		check(st->mbim_malformed + st->mbim_not_opened == bad);
		check(errors == errors_before);
		if (le32(msg) == MBIM_MESSAGE_TYPE_OPEN) {
			uint32_t max = le32(msg + MSG_HDR);
			limit = max < SIM_MBIM_MAX_CONTROL_MIN	 ? SIM_MBIM_MAX_CONTROL_MIN
				: max > opts.max_control_message ? opts.max_control_message
								 : max;
		}
	}
	check_sessions(m, msg, n);
	return r;
}

static void fuzz_control(uint8_t cfg, const uint8_t *data, size_t size)
{
	static const struct sim_mbim_callbacks cb = { .send = on_send };
	static const uint32_t transfers[] = { 4096, 64, 256, 1024 };
	struct sim_mbim *m = NULL;

	sim_mbim_options_init(&opts);
	opts.qmi_over_mbim = cfg & 0x10;
	/* The same bit a PIN-locked SIM (MBIM_CID_PIN reachable), two others together no SIM. */
	if (cfg & 0x10)
		memcpy(opts.sim_pin, "1234", 5);
	opts.no_sim = (cfg & 0x60) == 0x60;
	opts.max_sessions = cfg & 0x20 ? 1 : 3;
	opts.max_control_message = cfg & 0x40 ? 65535 : SIM_MBIM_MAX_CONTROL_DEFAULT;
	if (cfg & 0x80) {
		char err[128];
		check(sim_qmi_parse_apn("internet", &opts.apn[0], err, sizeof(err)) == 0);
		check(sim_qmi_parse_apn("corp:alice:s3cret", &opts.apn[1], err, sizeof(err)) == 0);
		opts.n_apn = 2;
	}
	/* Session 0 dual stack, 1 IPv4 only, 2 IPv6 only, and the last session id with a mux:
	 * 253 (mux CONFIG_MUX_ID_MAX). */
	set_mux(1, 0xc0000202, 1);
	set_mux(2, 0xc6336402, 0);
	set_mux(3, 0, 3);
	set_mux(CONFIG_MUX_ID_MAX, 0xcb00710a, 4);
	frag.total = 0;
	limit = opts.max_control_message;
	if (sim_mbim_new(&opts, &cb, NULL, &m) < 0)
		abort();

	if (cfg & 0x02) {
		uint8_t open[MSG_HDR + 4];
		put_le32(open, MBIM_MESSAGE_TYPE_OPEN);
		put_le32(open + 4, sizeof(open));
		put_le32(open + 8, 1);
		put_le32(open + 12, transfers[(cfg >> 2) & 3]);
		check(handle(m, open, sizeof(open)) == 0);
		check(sim_mbim_is_open(m));
	}

	size_t off = 0;
	while (size - off >= 2) {
		uint16_t h = le16(data + off);
		size_t n = h & 0x1fff;
		off += 2;
		if (n > size - off)
			n = size - off;
		request_tid = 0;
		if (h & 0x4000)
			sim_mbim_drop_all(m);
		if (h & 0x2000)
			sim_mbim_reset(m);

		uint8_t *msg = arena_copy(data + off, n);
		off += n;
		if ((h & 0x8000) && n >= MSG_HDR) {
			put_le32(msg + 4, (uint32_t)n);
			if (n >= CMD_HDR && le32(msg) == MBIM_MESSAGE_TYPE_COMMAND &&
			    le32(msg + 16) == 0 && le32(msg + 12) <= 1) {
				put_le32(msg + 12, 1);
				put_le32(msg + 44, (uint32_t)(n - CMD_HDR));
			}
		}
		handle(m, msg, n);
	}
	check_all_sessions(m);
	request_tid = 0;
	if (size & 1)
		sim_mbim_drop_all(m);
	sim_mbim_reset(m);
	check(!sim_mbim_is_open(m));
	check_sessions(m, NULL, 0);
	sim_mbim_free(m);
}

/* ---- uplink NTBs ---- */

/* Give the NTH its signature and header length, and the first NDPs of the chain an IP
 * session signature (keeping their session byte): random bytes seldom have them. */
static void repair(uint8_t *buf, size_t size, enum ntb_format format, uint8_t what)
{
	bool n32 = format == NTB_FORMAT_32;
	size_t hdr = n32 ? NTB_NDP32_HDR_SIZE : NTB_NDP16_HDR_SIZE;

	if (size < (n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE))
		return;
	if (what & 1) {
		memcpy(buf, n32 ? "ncmh" : "NCMH", 4);
		buf[4] = n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE;
		buf[5] = 0;
	}
	if (!(what & 2))
		return;
	size_t ndp = n32 ? le32(buf + 12) : le16(buf + 10);
	for (int i = 0; i < 8 && ndp && size >= hdr && ndp <= size - hdr; i++) {
		memcpy(buf + ndp, n32 ? "ips" : "IPS", 3);
		ndp = n32 ? le32(buf + ndp + 8) : le16(buf + ndp + 6);
	}
}

static void fuzz_uplink(uint8_t cfg, const uint8_t *data, size_t size)
{
	static struct ntb_datagram dgs[SIM_NTB_UL_MAX_DGRAMS];
	static const uint32_t max_sizes[] = { 16384, NTB_MIN_OUT_SIZE, 65535,
					      TRANSPORT_MAX_TRANSFER };
	enum ntb_format format = cfg & 0x02 ? NTB_FORMAT_32 : NTB_FORMAT_16;
	bool n32 = format == NTB_FORMAT_32;

	if (size < 2)
		return;
	/* The parameters, within what sim_options_validate() lets through. */
	struct ntb_params pa = {
		.formats = NTB_FORMATS_16 | NTB_FORMATS_32,
		.out_max_size = max_sizes[(cfg >> 4) & 3],
		.out_divisor = (uint16_t)(4u << (data[0] & 3)),
		.out_alignment = (uint16_t)(4u << ((data[0] >> 2) & 3)),
		.out_max_datagrams = data[1],
	};
	pa.out_remainder = (uint16_t)((data[0] >> 4) & (pa.out_divisor - 1));
	data += 2;
	size -= 2;
	uint8_t *buf = arena_copy(data, size);
	repair(buf, size, format, (uint8_t)(cfg >> 2));

	unsigned n = 12345;
	enum ntb_error error = _NTB_ERR_MAX;
	enum sim_ntb_verdict v = sim_ntb_check_out(&pa, format, buf, size, dgs, &n, &error);
	check((v == SIM_NTB_TOO_BIG) == (size > pa.out_max_size));
	if (v == SIM_NTB_MALFORMED)
		check(error < _NTB_ERR_MAX && ntb_error_name(error));
	if (v != SIM_NTB_OK) {
		check(n == 0);
		return;
	}
	check(n <= SIM_NTB_UL_MAX_DGRAMS);
	check(!pa.out_max_datagrams || n <= pa.out_max_datagrams);
	if (n == 0)
		return;

	/* The same walk again: the same datagrams, each a whole IP header where the function
	 * wants it. */
	size_t nth = n32 ? NTB_NTH32_SIZE : NTB_NTH16_SIZE;
	struct ntb_parser p;
	struct ntb_datagram d;
	ntb_parse_init(&p, buf, size, format);
	for (unsigned i = 0; i < n; i++) {
		check(ntb_parse_next(&p, &d) == 1);
		check(d.data == dgs[i].data && d.len == dgs[i].len && d.session == dgs[i].session);
		check(d.data >= buf + nth && d.len <= p.block_len &&
		      d.data <= buf + p.block_len - d.len);
		check(d.len >= 20 && (d.data[0] >> 4 == 4 || d.data[0] >> 4 == 6));
		check((size_t)(d.data - buf) % pa.out_divisor == pa.out_remainder);
	}
	check(ntb_parse_next(&p, &d) == 0);
	size_t ndp = n32 ? le32(buf + 12) : le16(buf + 10);
	for (unsigned i = 0; ndp; i++) {
		check(i < NTB_MAX_NDPS);
		check(ndp % pa.out_alignment == 0 && ndp + (n32 ? 16 : 8) <= size);
		ndp = n32 ? le32(buf + ndp + 8) : le16(buf + ndp + 6);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > TRANSPORT_MAX_TRANSFER)
		return 0;
	if (data[0] & 1)
		fuzz_uplink(data[0], data + 1, size - 1);
	else
		fuzz_control(data[0], data + 1, size - 1);
	return 0;
}
