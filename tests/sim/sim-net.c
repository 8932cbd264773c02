/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's network side (see sim-net.h). The simulator stands in for a modem, so its own
 * cost per byte decides how fast a benchmark can drive qmapd: with offload a downlink read
 * brings up to 64 KiB (one syscall where there were ~45) and an uplink write takes as much.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "config.h"
#include "gro.h"
#include "macro.h"
#include "sim-net.h"

/* The largest IP packet, and so the largest TSO/USO super-packet the kernel hands over. */
#define SIM_NET_RX_SIZE 65536

/* One mux's uplink coalescing: GRO's emit needs to know whose packets it writes. */
struct sim_net_mux {
	struct sim_net *net;
	uint8_t id;
	bool dirty; /* holds packets: in net->dirty */
	struct gro gro;
};

struct sim_net {
	struct netdev nd;
	sim_net_written_fn written;
	void *userdata;

	/* Downlink (offload only): the packet read last, and its next segment to write. */
	uint8_t *rx;
	struct gso_packet gso;
	uint32_t next_seg;
	bool pending;

	/* Uplink (offload only): a GRO per mux, allocated with its first packet. */
	struct sim_net_mux *mux[CONFIG_MUX_ID_MAX + 1];
	uint8_t dirty[CONFIG_MUX_ID_MAX + 1];
	unsigned n_dirty;
};

int sim_net_new(struct rtnl *rtnl, const char *name, uint32_t mtu, bool offload,
		sim_net_written_fn written, void *userdata, struct sim_net **ret)
{
	struct sim_net *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	n->nd.fd = -1;
	n->written = written;
	n->userdata = userdata;
	if (offload && !(n->rx = malloc(SIM_NET_RX_SIZE))) {
		sim_net_free(n);
		return -ENOMEM;
	}
	r = netdev_create(rtnl, name, CONFIG_HEADROOM_OFF, mtu, false, offload, &n->nd);
	if (r < 0) {
		sim_net_free(n);
		return r;
	}
	*ret = n;
	return 0;
}

int sim_net_set_queue_len(struct sim_net *n, uint32_t packets)
{
	struct ifreq ifr = { .ifr_qlen = (int)packets };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int r = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", n->nd.name);
	/* The TUN's ring follows the queue length (NETDEV_CHANGE_TX_QUEUE_LEN). */
	if (ioctl(fd, SIOCSIFTXQLEN, &ifr) < 0)
		r = -errno;
	close(fd);
	return r;
}

struct sim_net *sim_net_free(struct sim_net *n)
{
	if (!n)
		return NULL;
	netdev_close(&n->nd);
	for (unsigned id = 0; id < ARRAY_SIZE(n->mux); id++)
		free(n->mux[id]);
	free(n->rx);
	free(n);
	return NULL;
}

const struct netdev *sim_net_device(const struct sim_net *n)
{
	return &n->nd;
}

bool sim_net_offload(const struct sim_net *n)
{
	return n->rx != NULL;
}

int sim_net_read(struct sim_net *n, uint8_t *buf, size_t room, const uint8_t **ret_pkt,
		 size_t *ret_len)
{
	struct virtio_net_hdr vh;
	ssize_t len;

	if (!n->rx) {
		len = read(n->nd.fd, buf, room);
		if (len < 0)
			return errno == EAGAIN ? SIM_NET_RX_NONE : negative_errno();
		*ret_pkt = buf;
		*ret_len = (size_t)len;
		return SIM_NET_RX_PACKET;
	}

	struct iovec iov[2] = { { &vh, sizeof(vh) }, { n->rx, SIM_NET_RX_SIZE } };
	len = readv(n->nd.fd, iov, 2);
	if (len < 0)
		return errno == EAGAIN ? SIM_NET_RX_NONE : negative_errno();
	size_t plen = (size_t)len > sizeof(vh) ? (size_t)len - sizeof(vh) : 0;
	if (gso_parse(&vh, 0, n->rx, plen, &n->gso) < 0)
		return SIM_NET_RX_INVALID;
	n->next_seg = 0;
	n->pending = true;
	*ret_pkt = n->rx;
	*ret_len = plen;
	return SIM_NET_RX_SEGMENTS;
}

uint32_t sim_net_pending(const struct sim_net *n)
{
	return n->pending ? n->gso.n_segs - n->next_seg : 0;
}

int sim_net_segments(struct sim_net *n, uint8_t *out, size_t out_room, size_t reserve,
		     unsigned align, struct gso_segment *segs, unsigned max_segs)
{
	const struct gso_packet *p = &n->gso;

	if (!n->pending || align == 0)
		return -EINVAL;
	/* gso_write() puts segments back to back, so it may write several at once only when a
	 * full one needs no padding; the last (shorter) one is always last in its call. */
	if (p->split && (p->hdr_len + p->mss) % align != 0)
		max_segs = 1;
	int r = gso_write(p, n->next_seg, 0, out, out_room, reserve, segs, max_segs);
	if (r < 0)
		return r;
	n->next_seg += (uint32_t)r;
	n->pending = n->next_seg < p->n_segs;
	return r;
}

uint32_t sim_net_discard(struct sim_net *n)
{
	uint32_t left = sim_net_pending(n);

	n->pending = false;
	return left;
}

/*
 * One write into the device. iov[0] holds the virtio-net header (if any) and, for a
 * super-packet, the headers every segment repeats; every further iovec one segment's payload
 * (GRO's layout; a plain packet is iov[0] alone).
 */
static void net_writev(struct sim_net *n, uint8_t mux_id, const struct iovec *iov, int iovcnt)
{
	size_t hdr = iov[0].iov_len - n->nd.vnet_hdr_len, len = iov[0].iov_len;
	unsigned packets = iovcnt > 1 ? (unsigned)iovcnt - 1 : 1;
	uint64_t bytes = (uint64_t)packets * hdr;
	ssize_t w;
	int err = 0;

	for (int i = 1; i < iovcnt; i++) {
		len += iov[i].iov_len;
		bytes += iov[i].iov_len;
	}
	w = iovcnt == 1 ? write(n->nd.fd, iov[0].iov_base, len) : writev(n->nd.fd, iov, iovcnt);
	if (w < 0)
		err = negative_errno();
	else if ((size_t)w != len)
		err = -EIO;
	n->written(n->userdata, mux_id, packets, bytes, err);
}

static void net_gro_emit(void *userdata, const struct iovec *iov, int iovcnt)
{
	struct sim_net_mux *m = userdata;

	net_writev(m->net, m->id, iov, iovcnt);
}

static struct sim_net_mux *net_mux(struct sim_net *n, uint8_t id)
{
	struct sim_net_mux *m = n->mux[id];

	if (m)
		return m;
	m = malloc(sizeof(*m)); /* ~40 KiB, most of it GRO's flow table */
	if (!m)
		return NULL;
	*m = (struct sim_net_mux){ .net = n, .id = id };
	struct gro_config cfg = {
		.vnet_hdr_len = n->nd.vnet_hdr_len,
		.tcp = true, /* netdev_create() fails without TUN_F_CSUM|TUN_F_TSO4|TUN_F_TSO6 */
		.udp = n->nd.uso,
		.emit = net_gro_emit,
		.userdata = m,
	};
	if (gro_init(&m->gro, &cfg) < 0) {
		free(m);
		return NULL;
	}
	n->mux[id] = m;
	return m;
}

void sim_net_write(struct sim_net *n, uint8_t mux_id, const uint8_t *pkt, size_t len,
		   bool csum_valid)
{
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	struct iovec iov[2] = { { &vh, sizeof(vh) }, { (void *)pkt, len } };
	struct sim_net_mux *m;

	if (!n->rx) {
		net_writev(n, mux_id, iov + 1, 1);
		return;
	}
	m = net_mux(n, mux_id);
	if (!m) {
		/* No memory for coalescing: the packet goes alone. */
		net_writev(n, mux_id, iov, 2);
		return;
	}
	gro_add(&m->gro, pkt, len, csum_valid ? GRO_PKT_CSUM_VALID : 0);
	if (!m->dirty && gro_pending(&m->gro)) {
		m->dirty = true;
		n->dirty[n->n_dirty++] = mux_id;
	}
}

void sim_net_flush(struct sim_net *n)
{
	for (unsigned i = 0; i < n->n_dirty; i++) {
		struct sim_net_mux *m = n->mux[n->dirty[i]];
		gro_flush(&m->gro);
		m->dirty = false;
	}
	n->n_dirty = 0;
}
