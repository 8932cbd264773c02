/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for GSO. Input: a virtio-net header (10 bytes), one byte of options, then
 * the packet. The packet is segmented into a separate buffer and in place; every segment must
 * lie inside the output buffer, follow the previous one, and the segments' payloads must add
 * up to the packet's; a second run in small buffers, resumed, must produce the same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gso.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_segs(const struct gso_packet *p, const struct gso_segment *segs, int n,
		       size_t room, size_t reserve)
{
	for (int i = 0; i < n; i++) {
		check(segs[i].offset + reserve + segs[i].len <= room);
		if (i > 0)
			check(segs[i].offset == segs[i - 1].offset + reserve + segs[i - 1].len);
		if (p->split) {
			check(segs[i].len > p->hdr_len);
			check(segs[i].len <= (size_t)p->hdr_len + p->mss);
		} else {
			check(segs[i].len == p->len);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct virtio_net_hdr vh;
	struct gso_packet p;

	if (size < sizeof(vh) + 1)
		return 0;
	memcpy(&vh, data, sizeof(vh));
	uint8_t opt = data[sizeof(vh)];
	size_t l2 = opt & 1 ? 14 : 0, reserve = opt & 2 ? 8 : 4;
	unsigned flags = opt & 4 ? GSO_F_L4_CSUM_OFFLOAD : 0;
	data += sizeof(vh) + 1;
	size -= sizeof(vh) + 1;
	if (size == 0)
		return 0;

	uint8_t *pkt = malloc(size);
	if (!pkt)
		return 0;
	memcpy(pkt, data, size);
	int r = gso_parse(&vh, l2, pkt, size, &p);
	check(r == 0 || r == -EINVAL || r == -EPROTONOSUPPORT);
	if (r < 0 || p.n_segs > 4096) {
		free(pkt);
		return 0;
	}
	check(p.n_segs >= 1);
	size_t need = gso_out_size(&p, 0, reserve);
	struct gso_segment *segs = calloc(p.n_segs, sizeof(*segs));
	uint8_t *out = malloc(need), *small = malloc(need);
	check(segs && out && small);

	int n = gso_write(&p, 0, flags, out, need, reserve, segs, p.n_segs);
	check(n == (int)p.n_segs);
	check_segs(&p, segs, n, need, reserve);
	size_t payload = 0;
	for (int i = 0; i < n; i++)
		payload += segs[i].len - (p.split ? p.hdr_len : 0);
	check(payload == size - (p.split ? p.hdr_len : 0));
	check(segs[n - 1].offset + reserve + segs[n - 1].len == need);

	/* Resumed in buffers of at most two segments: the same bytes. */
	uint32_t done = 0;
	size_t pos = 0;
	while (done < p.n_segs) {
		struct gso_segment s2[2];
		int k = gso_write(&p, done, flags, small + pos, need - pos, reserve, s2, 2);
		check(k >= 1 && k <= 2);
		check_segs(&p, s2, k, need - pos, reserve);
		pos += s2[k - 1].offset + reserve + s2[k - 1].len;
		done += (uint32_t)k;
	}
	check(pos == need);
	for (int i = 0; i < n; i++)
		check(memcmp(out + segs[i].offset + reserve, small + segs[i].offset + reserve,
			     segs[i].len) == 0);

	/* In place: the packet after `reserve` bytes of a buffer of exactly the size needed. */
	uint8_t *buf = malloc(need);
	check(buf != NULL);
	memcpy(buf + reserve, pkt, size);
	check(gso_parse(&vh, l2, buf + reserve, size, &p) == 0);
	check(gso_write(&p, 0, flags, buf, need - 1, reserve, segs, p.n_segs) == -ENOBUFS ||
	      need - 1 < reserve + size);
	check(gso_write(&p, 0, flags, buf, need, reserve, segs, p.n_segs) == n);
	for (int i = 0; i < n; i++)
		check(memcmp(out + segs[i].offset + reserve, buf + segs[i].offset + reserve,
			     segs[i].len) == 0);

	free(buf);
	free(small);
	free(out);
	free(segs);
	free(pkt);
	return 0;
}
