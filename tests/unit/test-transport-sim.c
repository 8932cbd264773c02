/* SPDX-License-Identifier: MIT */
/*
 * The sim transport's side of an MBIM function: the class requests in cdc_ncm's order after
 * the descriptor message, what a STALL of each leaves in use, and on_connect only once the
 * data interface is set up. This test plays the sim on a SEQPACKET socket of its own.
 */
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "test-case.h"
#include "transport.h"

struct seen {
	unsigned connected;
	unsigned bulk_in;
	size_t last_len;
};

static void on_bulk_in(void *userdata, uint8_t *buf, size_t len)
{
	struct seen *s = userdata;
	(void)buf;
	s->bulk_in++;
	s->last_len = len;
}

static void on_connect(void *userdata)
{
	((struct seen *)userdata)->connected++;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

/* GET_NTB_PARAMETERS' 28 bytes (NCM 1.0 table 6-3). */
static void ntb_params(uint8_t p[NTB_PARAMS_SIZE], uint16_t formats, uint32_t in_max,
		       uint32_t out_max, uint16_t out_divisor, uint16_t out_align)
{
	memset(p, 0, NTB_PARAMS_SIZE);
	put16(p, NTB_PARAMS_SIZE);
	put16(p + 2, formats);
	put32(p + 4, in_max);
	put16(p + 8, 4);
	put16(p + 12, 4);
	put32(p + 16, out_max);
	put16(p + 20, out_divisor);
	put16(p + 24, out_align);
	put16(p + 26, 32);
}

struct sim_peer {
	struct ev_loop *loop;
	int listen_fd, fd;
	char path[108];
};

static void pump(struct ev_loop *loop)
{
	for (int i = 0; i < 20; i++)
		ev_run(loop, EVRUN_NOWAIT);
}

static void peer_listen(struct sim_peer *p, struct ev_loop *loop, const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	p->loop = loop;
	snprintf(p->path, sizeof(p->path), "/tmp/qmapd-test-transport-sim-%d-%s", getpid(), name);
	unlink(p->path);
	strcpy(a.sun_path, p->path);
	p->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	EXPECT_GE(p->listen_fd, 0);
	EXPECT_EQ(bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	EXPECT_EQ(listen(p->listen_fd, 1), 0);
}

static void peer_accept(struct sim_peer *p)
{
	p->fd = accept(p->listen_fd, NULL, NULL);
	EXPECT_GE(p->fd, 0);
}

static void peer_send(struct sim_peer *p, uint8_t ep, uint8_t flags, const void *buf, size_t len)
{
	struct transport_sim_header h = { .ep = ep, .flags = flags };
	uint8_t msg[256];

	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), buf, len);
	EXPECT_EQ(send(p->fd, msg, sizeof(h) + len, 0), (ssize_t)(sizeof(h) + len));
	pump(p->loop);
}

/* The next class request from the host: its setup packet and data. 0, or -1 if none came. */
static int peer_request(struct sim_peer *p, struct transport_sim_class_request *req, uint8_t *data,
			size_t *data_len)
{
	uint8_t msg[256];
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	pump(p->loop);
	if (poll(&pfd, 1, 1000) != 1)
		return -1;
	ssize_t n = recv(p->fd, msg, sizeof(msg), 0);
	if (n < (ssize_t)(sizeof(struct transport_sim_header) + sizeof(*req)) ||
	    msg[0] != TRANSPORT_EP_CLASS_REQUEST)
		return -1;
	memcpy(req, msg + sizeof(struct transport_sim_header), sizeof(*req));
	*data_len = (size_t)n - sizeof(struct transport_sim_header) - sizeof(*req);
	memcpy(data, msg + sizeof(struct transport_sim_header) + sizeof(*req), *data_len);
	return 0;
}

static void peer_answer(struct sim_peer *p, const struct transport_sim_class_request *req,
			bool stall, const uint8_t *data, size_t len)
{
	uint8_t msg[64];

	memcpy(msg, req, sizeof(*req));
	if (len)
		memcpy(msg + sizeof(*req), data, len);
	peer_send(p, TRANSPORT_EP_CLASS_REQUEST, stall ? TRANSPORT_SIM_FLAG_STALL : 0, msg,
		  sizeof(*req) + len);
}

static void peer_descriptor(struct sim_peer *p, uint8_t function, const uint8_t *params)
{
	uint8_t msg[sizeof(struct transport_sim_descriptor) +
		    sizeof(struct transport_sim_mbim_descriptor)] = { 0 };
	struct transport_sim_descriptor d = { .interface_number = 12, .function = function };
	struct transport_sim_mbim_descriptor md = { .max_control_message = htole16(4096),
						    .max_segment_size = htole16(1500),
						    .mtu = htole16(1428) };

	memcpy(msg, &d, sizeof(d));
	if (function == TRANSPORT_SIM_FUNCTION_QMI) {
		peer_send(p, TRANSPORT_EP_DESCRIPTOR, 0, msg, sizeof(d));
		return;
	}
	memcpy(md.ntb_parameters, params, NTB_PARAMS_SIZE);
	memcpy(msg + sizeof(d), &md, sizeof(md));
	peer_send(p, TRANSPORT_EP_DESCRIPTOR, 0, msg, sizeof(msg));
}

static struct transport *host_new(struct ev_loop *loop, struct sim_peer *p, struct seen *seen,
				  uint8_t ntb_format)
{
	struct transport_callbacks cb = { .on_bulk_in = on_bulk_in, .on_connect = on_connect };
	struct transport_params params = {
		.dl_max_size = 16384,
		.dl_buffer_size = 32768,
		.ul_max_size = 16384,
		.max_packet_size = 512,
		.ntb_format = ntb_format,
	};
	char spec[128];
	struct transport *t = NULL;

	snprintf(spec, sizeof(spec), "sim:%s", p->path);
	EXPECT_EQ(transport_new(loop, spec, &params, &cb, seen, &t), 0);
	EXPECT_EQ(transport_start(t), 0);
	peer_accept(p);
	return t;
}

/* NTB32 offered and wanted; the function STALLs SET_CRC_MODE and SET_NTB_INPUT_SIZE. */
TEST(mbim_ntb32_stalls)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct sim_peer p;
	struct seen seen = { 0 };
	struct transport_sim_class_request req;
	uint8_t params[NTB_PARAMS_SIZE], data[64];
	size_t len;

	peer_listen(&p, loop, "a");
	struct transport *t = host_new(loop, &p, &seen, 32);
	EXPECT_EQ(seen.connected, 0); /* connected, but nothing known about the function yet */

	ntb_params(params, NTB_FORMATS_16 | NTB_FORMATS_32, 20000, 8192, 8, 16);
	peer_descriptor(&p, TRANSPORT_SIM_FUNCTION_MBIM, params);
	EXPECT_EQ(t->data_interface, 12);
	EXPECT_EQ(t->params.dl_max_size, 20000); /* the function may send its largest NTBs */

	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request_type, 0xa1);
	EXPECT_EQ(req.request, 0x80); /* GET_NTB_PARAMETERS */
	EXPECT_EQ(le16toh(req.length), NTB_PARAMS_SIZE);
	EXPECT_EQ(len, 0);
	peer_answer(&p, &req, false, params, sizeof(params));

	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request_type, 0x21);
	EXPECT_EQ(req.request, 0x8a); /* SET_CRC_MODE, off */
	EXPECT_EQ(le16toh(req.value), 0);
	peer_answer(&p, &req, true, NULL, 0);

	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request, 0x84); /* SET_NTB_FORMAT NTB32 */
	EXPECT_EQ(le16toh(req.value), 1);
	EXPECT_EQ(seen.connected, 0);
	peer_answer(&p, &req, false, NULL, 0);
	EXPECT_EQ(t->ntb.format, NTB_FORMAT_32);

	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request, 0x86); /* SET_NTB_INPUT_SIZE: min(buffer 32768, the 20000) */
	EXPECT_EQ(len, 4);
	EXPECT_EQ(data[0] | data[1] << 8 | data[2] << 16 | (uint32_t)data[3] << 24, 20000);
	peer_answer(&p, &req, true, NULL, 0);

	EXPECT_EQ(seen.connected, 1);
	EXPECT_EQ(t->framing, TRANSPORT_FRAMING_NTB);
	EXPECT_TRUE(t->ntb.crc_refused);
	EXPECT_TRUE(!t->ntb.format_refused);
	EXPECT_TRUE(t->ntb.in_size_refused);
	EXPECT_EQ(t->ntb.in_size, 20000);
	EXPECT_EQ(t->params.dl_max_size, 20000);
	EXPECT_EQ(t->ntb.params.out_max_size, 8192);
	EXPECT_EQ(t->ntb.params.out_divisor, 8);
	EXPECT_EQ(t->ntb.params.out_alignment, 16);
	EXPECT_EQ(t->ntb.max_control_message, 4096);
	EXPECT_EQ(t->ntb.mtu, 1428);

	/* Data flows now. */
	uint8_t ntb[16] = { 'n', 'c', 'm', 'h' };
	peer_send(&p, TRANSPORT_EP_BULK_IN, 0, ntb, sizeof(ntb));
	EXPECT_EQ(seen.bulk_in, 1);
	EXPECT_EQ(seen.last_len, sizeof(ntb));

	transport_free(t);
	close(p.fd);
	close(p.listen_fd);
	unlink(p.path);
}

/*
 * NTB16 only, a buffer larger than the function's limit: no SET_NTB_FORMAT; a STALLed
 * GET_NTB_PARAMETERS leaves the descriptor's copy; the input size is the function's maximum.
 */
TEST(mbim_ntb16_only)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct sim_peer p;
	struct seen seen = { 0 };
	struct transport_sim_class_request req;
	uint8_t params[NTB_PARAMS_SIZE], data[64];
	size_t len;

	peer_listen(&p, loop, "b");
	struct transport *t = host_new(loop, &p, &seen, 32);
	ntb_params(params, NTB_FORMATS_16, 65536, 16384, 4, 4);
	peer_descriptor(&p, TRANSPORT_SIM_FUNCTION_MBIM, params);

	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request, 0x80);
	peer_answer(&p, &req, true, NULL, 0);
	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request, 0x8a);
	peer_answer(&p, &req, false, NULL, 0);
	EXPECT_EQ(peer_request(&p, &req, data, &len), 0);
	EXPECT_EQ(req.request, 0x86); /* no SET_NTB_FORMAT: NTB16 is the only one */
	EXPECT_EQ(data[0] | data[1] << 8 | data[2] << 16 | (uint32_t)data[3] << 24, 32768);
	peer_answer(&p, &req, false, NULL, 0);

	EXPECT_EQ(seen.connected, 1);
	EXPECT_TRUE(t->ntb.params_from_desc);
	EXPECT_TRUE(!t->ntb.crc_refused);
	EXPECT_EQ(t->ntb.format, NTB_FORMAT_16);
	EXPECT_EQ(t->ntb.in_size, 32768);
	EXPECT_EQ(t->params.dl_max_size, 32768);
	EXPECT_EQ(t->ntb.params.in_max_size, 65536);

	transport_free(t);
	close(p.fd);
	close(p.listen_fd);
	unlink(p.path);
}

/* A QMI function is announced as soon as its descriptor arrives, with QMAP framing. */
TEST(qmi)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct sim_peer p;
	struct seen seen = { 0 };

	peer_listen(&p, loop, "c");
	struct transport *t = host_new(loop, &p, &seen, 16);
	pump(loop);
	EXPECT_EQ(seen.connected, 0);
	peer_descriptor(&p, TRANSPORT_SIM_FUNCTION_QMI, NULL);
	EXPECT_EQ(seen.connected, 1);
	EXPECT_EQ(t->framing, TRANSPORT_FRAMING_QMAP);
	EXPECT_EQ(t->data_interface, 12);
	EXPECT_EQ(t->params.dl_max_size, 16384);

	transport_free(t);
	close(p.fd);
	close(p.listen_fd);
	unlink(p.path);
}
