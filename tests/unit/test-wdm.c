/* SPDX-License-Identifier: MIT */
/*
 * wdm bridge: the pty itself with a client opening the link (whole messages both ways, stale bytes, partial messages of a client
 * that left, the bounded output queue, the link's life, MBIM fitted to a small
 * wMaxControlMessage). Needs /dev/ptmx only.
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "byteorder.h"
#include "macro.h"
#include "mbim-frag.h"
#include "qmux-util.h"
#include "test-case.h"
#include "wdm.h"

#define WAIT_NSEC (2 * 1000000000LL) /* every wait is bounded */

static long long now_nsec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Run the loop without blocking until expr holds; false after WAIT_NSEC. */
#define PUMP_UNTIL(loop, expr)                                   \
	({                                                       \
		long long _end = now_nsec() + WAIT_NSEC;         \
		bool _ok;                                        \
		for (;;) {                                       \
			ev_run((loop), EVRUN_NOWAIT);            \
			if ((_ok = (expr)) || now_nsec() > _end) \
				break;                           \
			usleep(500);                             \
		}                                                \
		_ok;                                             \
	})

/* Let the loop run for a while (for things that must NOT happen). */
static void pump_for(struct ev_loop *loop, long long msec)
{
	long long end = now_nsec() + msec * 1000000LL;
	while (now_nsec() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(500);
	}
}

/* Read from a non-blocking client fd while the loop runs, until `want` bytes or the wait
 * ends. Returns the bytes read. */
static size_t client_read(struct ev_loop *loop, int fd, uint8_t *buf, size_t want)
{
	size_t got = 0;
	long long end = now_nsec() + WAIT_NSEC;

	while (got < want && now_nsec() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		ssize_t n = read(fd, buf + got, want - got);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		poll(&p, 1, 1);
	}
	return got;
}

/* Nothing to read now (after the loop had its turn). */
static bool client_empty(int fd)
{
	uint8_t b;
	ssize_t n = read(fd, &b, 1);
	return n < 0 && errno == EAGAIN;
}

static int client_open(const char *path)
{
	return open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
}

static void check_messages(struct ev_loop *loop, struct wdm *w, struct test_sink *s)
{
	struct wdm_stats st;
	uint8_t buf[256];

	int c = client_open(wdm_link_path(w));
	EXPECT_TRUE(c >= 0);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));

	/* Two messages in one write, then one split over two writes. */
	memcpy(buf, ctl_alloc_cid, 16);
	memcpy(buf + 16, dms_get_ids, 13);
	EXPECT_EQ(write(c, buf, 29), 29);
	EXPECT_TRUE(PUMP_UNTIL(loop, s->n == 2));
	EXPECT_EQ(write(c, ctl_alloc_cid, 7), 7);
	pump_for(loop, 20);
	EXPECT_EQ(s->n, 2);
	EXPECT_EQ(write(c, ctl_alloc_cid + 7, 9), 9);
	EXPECT_TRUE(PUMP_UNTIL(loop, s->n == 3));
	EXPECT_EQ(s->n, 3);
	EXPECT_EQ(s->len[0], 16);
	EXPECT_MEM_EQ(s->msg[0], ctl_alloc_cid, 16);
	EXPECT_EQ(s->len[1], 13);
	EXPECT_MEM_EQ(s->msg[1], dms_get_ids, 13);
	EXPECT_EQ(s->len[2], 16);
	EXPECT_MEM_EQ(s->msg[2], ctl_alloc_cid, 16);

	/* A reply reaches the client whole. */
	static const uint8_t tlv[] = { 0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00 };
	uint8_t reply[64];
	size_t n = test_qmux(reply, 0x80, 2, 0x25, 1, tlv, sizeof(tlv));
	EXPECT_EQ(wdm_deliver(w, reply, n), 0);
	EXPECT_EQ(client_read(loop, c, buf, n), n);
	EXPECT_MEM_EQ(buf, reply, n);
	EXPECT_TRUE(client_empty(c));

	/* Not whole messages: refused, nothing written. */
	EXPECT_EQ(wdm_deliver(w, reply, n - 1), -EBADMSG);
	EXPECT_EQ(wdm_deliver(w, reply + 1, n - 1), -EBADMSG);
	EXPECT_EQ(wdm_deliver(w, reply, 0), -EBADMSG);
	memcpy(buf, reply, n);
	memcpy(buf + n, reply, n);
	EXPECT_EQ(wdm_deliver(w, buf, 2 * n), 0); /* two in one transfer is fine */
	EXPECT_EQ(client_read(loop, c, buf, 2 * n), 2 * n);
	EXPECT_MEM_EQ(buf + n, reply, n);
	EXPECT_TRUE(client_empty(c));

	/* The modem is absent: counted and dropped. */
	s->ret = -ENOTCONN;
	EXPECT_EQ(write(c, dms_get_ids, 13), 13);
	EXPECT_TRUE(PUMP_UNTIL(loop, (wdm_get_stats(w, &st), st.to_modem_errors == 1)));
	s->ret = 0;

	/* Garbage from a client is resynchronised on the next message. */
	EXPECT_EQ(write(c, "\x42\x43", 2), 2);
	EXPECT_EQ(write(c, dms_get_ids, 13), 13);
	EXPECT_TRUE(PUMP_UNTIL(loop, s->n == 4));
	EXPECT_MEM_EQ(s->msg[3], dms_get_ids, 13);

	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem, 4);
	EXPECT_EQ(st.to_modem_bytes, 16 + 13 + 16 + 13);
	EXPECT_EQ(st.to_modem_errors, 1);
	EXPECT_EQ(st.from_modem, 3);
	EXPECT_EQ(st.from_modem_invalid, 3);
	EXPECT_EQ(st.framing_errors, 1);
	EXPECT_EQ(st.resyncs, 1);
	EXPECT_EQ(st.client_opens, 1);
	EXPECT_EQ(st.client_closes, 1);
}

/*
 * The transport is busy (EAGAIN, ENOBUFS): requests wait, in order, and go out once it takes
 * them again; only beyond WDM_TO_MODEM_QUEUE_SIZE are they dropped, and counted.
 */
static void check_deferred(struct ev_loop *loop, struct wdm *w, struct test_sink *s)
{
	struct wdm_stats st0, st;
	unsigned written = 0;
	uint8_t buf[13 * 64];

	int c = client_open(wdm_link_path(w));
	EXPECT_TRUE(c >= 0);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));
	wdm_get_stats(w, &st0);
	s->n = 0;

	s->ret = -EAGAIN;
	EXPECT_EQ(write(c, ctl_alloc_cid, 16), 16);
	EXPECT_EQ(write(c, dms_get_ids, 13), 13);
	EXPECT_TRUE(PUMP_UNTIL(
		loop, (wdm_get_stats(w, &st), st.to_modem_deferred == st0.to_modem_deferred + 2)));
	pump_for(loop, 20);
	EXPECT_EQ(s->n, 0);
	s->ret = 0;
	EXPECT_TRUE(PUMP_UNTIL(loop, s->n == 2));
	EXPECT_MEM_EQ(s->msg[0], ctl_alloc_cid, 16);
	EXPECT_MEM_EQ(s->msg[1], dms_get_ids, 13);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem, st0.to_modem + 2);
	EXPECT_EQ(st.to_modem_errors, st0.to_modem_errors);
	EXPECT_EQ(st.to_modem_overflows, 0);

	/* More than the queue holds: the rest is dropped and counted, never silently. */
	s->ret = -ENOBUFS;
	for (size_t i = 0; i < 64; i++)
		memcpy(buf + 13 * i, dms_get_ids, 13);
	while (written * 17 < WDM_TO_MODEM_QUEUE_SIZE + 64 * 17) {
		ssize_t n = write(c, buf, sizeof(buf));
		if (n > 0)
			written += (unsigned)n / 13;
		pump_for(loop, 1);
	}
	EXPECT_TRUE(PUMP_UNTIL(
		loop, (wdm_get_stats(w, &st),
		       st.to_modem_deferred - st0.to_modem_deferred - 2 + st.to_modem_overflows ==
			       written)));
	EXPECT_GE(st.to_modem_overflows, 1);
	s->ret = 0;
	EXPECT_TRUE(PUMP_UNTIL(loop, s->n == 2 + written - st.to_modem_overflows));
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem, st0.to_modem + 2 + written - st.to_modem_overflows);
	EXPECT_EQ(st.to_modem_errors, st0.to_modem_errors);
	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
}

static void check_stale(struct ev_loop *loop, struct wdm *w, struct test_sink *s)
{
	struct wdm_stats st, before;
	uint8_t reply[64], buf[64];
	size_t n = test_qmux(reply, 0x80, 0, 0x22, 9, NULL, 0);

	/* Nobody attached: dropped, and the next opener reads nothing of it. */
	wdm_get_stats(w, &before);
	EXPECT_EQ(wdm_deliver(w, reply, n), -ENOTCONN);
	int c = client_open(wdm_link_path(w));
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));
	EXPECT_TRUE(client_empty(c));

	/* Delivered to a client that leaves without reading: the next one must not see it,
	 * even when it opens before qmapd noticed the first one leave. */
	EXPECT_EQ(wdm_deliver(w, reply, n), 0);
	EXPECT_EQ(wdm_deliver(w, reply, n), 0);
	close(c);
	c = client_open(wdm_link_path(w));
	EXPECT_TRUE(PUMP_UNTIL(
		loop, (wdm_get_stats(w, &st), st.client_opens == before.client_opens + 2)));
	EXPECT_EQ(wdm_clients(w), 1);
	EXPECT_TRUE(client_empty(c));
	EXPECT_EQ(st.stale_flushes, before.stale_flushes + 1);
	EXPECT_EQ(st.stale_bytes, before.stale_bytes + 2 * n);
	EXPECT_EQ(st.dropped_no_client, before.dropped_no_client + 1);

	/* The new client then gets exactly what comes next. */
	EXPECT_EQ(wdm_deliver(w, reply, n), 0);
	EXPECT_EQ(client_read(loop, c, buf, n), n);
	EXPECT_MEM_EQ(buf, reply, n);
	EXPECT_TRUE(client_empty(c));

	/* A client leaves in the middle of a message; the next one's message is not glued to
	 * the half. */
	unsigned sent = s->n;
	EXPECT_EQ(write(c, ctl_alloc_cid, 9), 9);
	pump_for(loop, 20);
	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
	c = client_open(wdm_link_path(w));
	EXPECT_EQ(write(c, dms_get_ids, 13), 13);
	EXPECT_TRUE(PUMP_UNTIL(loop, s->n == sent + 1));
	EXPECT_MEM_EQ(s->msg[sent < 8 ? sent : 7], dms_get_ids, 13);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.partial_discards, before.partial_discards + 1);
	EXPECT_EQ(st.framing_errors, before.framing_errors);
	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
}

/* A client that does not read: whole messages are dropped once the queue is full, and
 * what it reads afterwards is whole messages in order. */
static void check_backpressure(struct ev_loop *loop, struct wdm *w)
{
	enum { PAYLOAD = 3000, MAX_MSGS = 1000 };
	static uint8_t tlvs[3 + PAYLOAD], msg[PAYLOAD + 64];
	static uint8_t rx[WDM_OUT_QUEUE_SIZE + (1 << 20)];
	struct wdm_stats before, st;
	uint32_t seq = 0;

	wdm_get_stats(w, &before);
	int c = client_open(wdm_link_path(w));
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));

	tlvs[0] = 0x10;
	tlvs[1] = PAYLOAD & 0xff;
	tlvs[2] = PAYLOAD >> 8;
	unsigned accepted = 0, refused = 0;
	for (unsigned i = 0; i < MAX_MSGS && refused < 5; i++) {
		memcpy(tlvs + 3, &seq, sizeof(seq));
		memset(tlvs + 7, (int)(seq & 0xff), PAYLOAD - 4);
		size_t n = test_qmux(msg, 0x80, 2, 0x25, (uint16_t)seq, tlvs, sizeof(tlvs));
		int r = wdm_deliver(w, msg, n);
		seq++;
		if (r == 0)
			accepted++;
		else {
			EXPECT_EQ(r, -ENOBUFS);
			refused++;
		}
		ev_run(loop, EVRUN_NOWAIT);
	}
	wdm_get_stats(w, &st);
	EXPECT_GE(st.dropped_queue_full, 1);
	EXPECT_EQ(st.dropped_queue_full - before.dropped_queue_full, refused);
	EXPECT_TRUE(st.queue_high_water <= WDM_OUT_QUEUE_SIZE);
	EXPECT_GE(st.queue_high_water, WDM_OUT_QUEUE_SIZE - sizeof(msg));

	/* One more after the client caught up, to see the queue work again. */
	size_t total = (size_t)accepted * (13 + sizeof(tlvs));
	size_t got = client_read(loop, c, rx, total);
	EXPECT_EQ(got, total);
	memcpy(tlvs + 3, &seq, sizeof(seq));
	size_t n = test_qmux(msg, 0x80, 2, 0x25, (uint16_t)seq, tlvs, sizeof(tlvs));
	EXPECT_EQ(wdm_deliver(w, msg, n), 0);
	got += client_read(loop, c, rx + got, n);
	EXPECT_EQ(got, total + n);
	EXPECT_TRUE(client_empty(c));

	/* Every byte read belongs to a whole message; sequence numbers only rise, and the one
	 * after the drops is there. */
	size_t off = 0, count = 0;
	int64_t last = -1;
	while (off < got) {
		ssize_t m = wdm_frame_length(WDM_FRAMING_QMUX, rx + off, got - off);
		if (m <= 0)
			break;
		uint32_t v;
		memcpy(&v, rx + off + 16, sizeof(v));
		EXPECT_TRUE((int64_t)v > last);
		last = v;
		off += (size_t)m;
		count++;
	}
	EXPECT_EQ(off, got);
	EXPECT_EQ(count, accepted + 1);
	EXPECT_EQ(last, seq);

	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
}

static void check_link(struct ev_loop *loop, const char *dir)
{
	char path[PATH_MAX], target[PATH_MAX];
	struct wdm *w = NULL;
	struct test_sink s = {};

	/* Never named like the kernel's node, never relative. */
	snprintf(path, sizeof(path), "%s/cdc-wdm0", dir);
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_QMUX, path, test_sink_send, &s, &w), -EINVAL);
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_QMUX, "relative/qmi0", test_sink_send, &s, &w),
		  -EINVAL);
	EXPECT_PTR_EQ(w, NULL);

	/* Something that is not a symlink is not replaced. */
	snprintf(path, sizeof(path), "%s/plain", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	EXPECT_TRUE(fd >= 0);
	close(fd);
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_QMUX, path, test_sink_send, &s, &w), -EEXIST);
	unlink(path);

	/* A link that someone else took over is left alone by wdm_free. */
	snprintf(path, sizeof(path), "%s/taken", dir);
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_MBIM, path, test_sink_send, &s, &w), 0);
	unlink(path);
	EXPECT_EQ(symlink("/dev/null", path), 0);
	w = wdm_free(w);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	EXPECT_EQ(n, 9);
	unlink(path);

	/* No link at all: the slave path is the way in. */
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_QMUX, NULL, test_sink_send, &s, &w), 0);
	EXPECT_PTR_EQ(wdm_link_path(w), NULL);
	EXPECT_TRUE(strncmp(wdm_slave_path(w), "/dev/pts/", 9) == 0);
	w = wdm_free(w);
	EXPECT_PTR_EQ(wdm_free(NULL), NULL);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* An MBIM COMMAND fragment: headers, then n bytes of the body from `body + off`. */
static size_t mbim_command(uint8_t *m, uint32_t tid, uint32_t total, uint32_t cur,
			   const uint8_t *body, size_t off, size_t n)
{
	put32(m, MBIM_MSG_COMMAND);
	put32(m + 4, (uint32_t)(MBIM_FRAGMENT_HEADERS + n));
	put32(m + 8, tid);
	put32(m + 12, total);
	put32(m + 16, cur);
	memcpy(m + MBIM_FRAGMENT_HEADERS, body + off, n);
	return MBIM_FRAGMENT_HEADERS + n;
}

/* What reached the transport since the sink was reset: `frags` fragments of at most max
 * bytes numbered 0.. of frags for tid, whose bodies joined are body/blen. */
static void expect_fragments(const struct test_sink *s, uint32_t tid, unsigned frags, size_t max,
			     const uint8_t *body, size_t blen)
{
	uint8_t joined[2048];
	size_t jlen = 0;

	EXPECT_EQ(s->n, frags);
	for (unsigned i = 0; i < frags && i < s->n; i++) {
		const uint8_t *f = s->msg[i];
		EXPECT_TRUE(s->len[i] <= max && s->len[i] > MBIM_FRAGMENT_HEADERS);
		EXPECT_EQ(get_le32(f), MBIM_MSG_COMMAND);
		EXPECT_EQ(get_le32(f + 4), s->len[i]);
		EXPECT_EQ(get_le32(f + 8), tid);
		EXPECT_EQ(get_le32(f + 12), frags);
		EXPECT_EQ(get_le32(f + 16), i);
		size_t n = s->len[i] - MBIM_FRAGMENT_HEADERS;
		if (jlen + n <= sizeof(joined))
			memcpy(joined + jlen, f + MBIM_FRAGMENT_HEADERS, n);
		jlen += n;
	}
	EXPECT_EQ(jlen, blen);
	if (jlen == blen)
		EXPECT_MEM_EQ(joined, body, blen);
}

/*
 * MBIM toward a function with wMaxControlMessage 512 while the client, like libmbim on a pty,
 * assumes 4096: the OPEN is lowered, a 1300-byte COMMAND reaches the transport as 3
 * fragments, the client's own fragments are put together and cut again, and a broken
 * fragment run is dropped and counted while the bridge goes on.
 */
static void check_mbim_fit(struct ev_loop *loop)
{
	struct test_sink s = {};
	struct wdm *w = NULL;
	struct wdm_stats st;
	uint8_t body[1500], m[1600];
	size_t len;

	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 7);
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_MBIM, NULL, test_sink_send, &s, &w), 0);
	if (!w)
		return;
	wdm_set_max_message(w, 512);
	int c = client_open(wdm_slave_path(w));
	EXPECT_TRUE(c >= 0);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));

	/* OPEN with MaxControlTransfer 4096 arrives asking for 512, once the function said it
	 * is closed (check_mbim_open()). */
	uint8_t open_msg[16] = { 1, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0x00, 0x10, 0, 0 };
	EXPECT_EQ(write(c, open_msg, sizeof(open_msg)), 16);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 1));
	EXPECT_EQ(get_le32(s.msg[0]), MBIM_MSG_COMMAND);
	uint8_t closed[16];
	put32(closed, MBIM_MSG_FUNCTION_ERROR);
	put32(closed + 4, 16);
	put32(closed + 8, get_le32(s.msg[0] + 8));
	put32(closed + 12, 5); /* NOT_OPENED */
	EXPECT_EQ(wdm_deliver(w, closed, sizeof(closed)), 0);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 2));
	EXPECT_EQ(s.len[1], 16);
	EXPECT_EQ(get_le32(s.msg[1]), MBIM_MSG_OPEN);
	EXPECT_EQ(get_le32(s.msg[1] + 8), 1);
	EXPECT_EQ(get_le32(s.msg[1] + 12), 512);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem_open_clamped, 1);
	EXPECT_TRUE(client_empty(c)); /* the probe's answer was the bridge's own */

	/* A whole 1300-byte COMMAND: 3 fragments of 512, 512 and 316 bytes. */
	s.n = 0;
	len = mbim_command(m, 2, 1, 0, body, 0, 1280);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 3));
	pump_for(loop, 20);
	expect_fragments(&s, 2, 3, 512, body, 1280);
	EXPECT_EQ(s.len[2], 316);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem_split, 1);
	EXPECT_EQ(st.to_modem, 5); /* the probe, the OPEN, 3 fragments */

	/* The client's own 2 fragments (1000 + 428 body bytes) are cut again at 512: 3. */
	s.n = 0;
	len = mbim_command(m, 3, 2, 0, body, 0, 1000);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	len = mbim_command(m, 3, 2, 1, body, 1000, 428);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 3));
	pump_for(loop, 20);
	expect_fragments(&s, 3, 3, 512, body, 1428);

	/* Two small fragments of the client's become one message that fits. */
	s.n = 0;
	len = mbim_command(m, 4, 2, 0, body, 0, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	len = mbim_command(m, 4, 2, 1, body, 100, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 1));
	pump_for(loop, 20);
	expect_fragments(&s, 4, 1, 512, body, 200);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem_split, 2);
	EXPECT_EQ(st.to_modem_frag_errors, 0);

	/* A fragment that continues nothing, then one of another transaction: both dropped and
	 * counted, the bridge goes on with the next message. */
	s.n = 0;
	len = mbim_command(m, 5, 2, 1, body, 0, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	len = mbim_command(m, 6, 2, 0, body, 0, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	len = mbim_command(m, 7, 2, 1, body, 100, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	len = mbim_command(m, 8, 1, 0, body, 0, 40);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 1));
	expect_fragments(&s, 8, 1, 512, body, 40);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.to_modem_frag_errors, 2);

	/* A client that leaves amid its fragments: the partial command is dropped, counted. */
	s.n = 0;
	len = mbim_command(m, 9, 2, 0, body, 0, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	pump_for(loop, 20);
	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.partial_fragments, 1);
	EXPECT_EQ(s.n, 0);

	/* A new client's second fragment continues nothing. */
	c = client_open(wdm_slave_path(w));
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));
	len = mbim_command(m, 9, 2, 1, body, 100, 100);
	EXPECT_EQ(write(c, m, len), (ssize_t)len);
	EXPECT_TRUE(PUMP_UNTIL(loop, (wdm_get_stats(w, &st), st.to_modem_frag_errors == 3)));
	EXPECT_EQ(s.n, 0);
	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
	wdm_free(w);
}

/*
 * A client's OPEN toward an MBIM function: held while the bridge asks the function (a
 * RADIO_STATE query); open already (COMMAND_DONE, here in 2 fragments with an indication
 * between) answers the OPEN in the bridge, the function never sees it; a function that does
 * not answer gets the OPEN after WDM_PROBE_TIMEOUT, and the late answer goes nowhere.
 */
static void check_mbim_open(struct ev_loop *loop)
{
	struct test_sink s = {};
	struct wdm *w = NULL;
	struct wdm_stats st;
	uint8_t in[128], buf[64];

	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_MBIM, NULL, test_sink_send, &s, &w), 0);
	if (!w)
		return;
	wdm_set_max_message(w, 64);
	int c = client_open(wdm_slave_path(w));
	EXPECT_TRUE(c >= 0);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));

	uint8_t open_msg[16] = { 1, 0, 0, 0, 16, 0, 0, 0, 7, 0, 0, 0, 0x00, 0x10, 0, 0 };
	EXPECT_EQ(write(c, open_msg, sizeof(open_msg)), 16);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 1));
	EXPECT_EQ(s.len[0], MBIM_PROBE_SIZE);
	EXPECT_EQ(get_le32(s.msg[0]), MBIM_MSG_COMMAND);
	EXPECT_EQ(get_le32(s.msg[0] + 36), 3); /* RADIO_STATE */
	EXPECT_EQ(get_le32(s.msg[0] + 40), 0); /* query */
	uint32_t tid = get_le32(s.msg[0] + 8);
	EXPECT_TRUE(tid != 7);
	/* The client asks again meanwhile: still one probe. */
	EXPECT_EQ(write(c, open_msg, sizeof(open_msg)), 16);
	pump_for(loop, 20);
	EXPECT_EQ(s.n, 1);

	/* COMMAND_DONE fragment 1 of 2 (56 bytes), an indication, fragment 2 of 2 (24 bytes). */
	memset(in, 0, sizeof(in));
	put32(in, MBIM_MSG_COMMAND_DONE);
	put32(in + 4, 56);
	put32(in + 8, tid);
	put32(in + 12, 2);
	put32(in + 16, 0);
	put32(in + 56, 0x80000007); /* INDICATE_STATUS */
	put32(in + 60, 20);
	put32(in + 64, 0);
	put32(in + 68, 1);
	put32(in + 72, 0);
	put32(in + 76, MBIM_MSG_COMMAND_DONE);
	put32(in + 80, 24);
	put32(in + 84, tid);
	put32(in + 88, 2);
	put32(in + 92, 1);
	EXPECT_EQ(wdm_deliver(w, in, 100), 0);
	/* The client reads its OPEN_DONE (its transaction, success) and the indication only. */
	EXPECT_EQ(client_read(loop, c, buf, 36), 36);
	EXPECT_EQ(get_le32(buf), MBIM_MSG_OPEN_DONE);
	EXPECT_EQ(get_le32(buf + 4), 16);
	EXPECT_EQ(get_le32(buf + 8), 7);
	EXPECT_EQ(get_le32(buf + 12), 0);
	EXPECT_EQ(get_le32(buf + 16), 0x80000007);
	pump_for(loop, 20);
	EXPECT_TRUE(client_empty(c));
	EXPECT_EQ(s.n, 1); /* no OPEN reached the function */
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.open_probes, 1);
	EXPECT_EQ(st.open_answered, 1);

	/* No answer: the OPEN goes on after the timeout; the late answer is dropped. */
	s.n = 0;
	EXPECT_EQ(write(c, open_msg, sizeof(open_msg)), 16);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 1));
	tid = get_le32(s.msg[0] + 8);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 2));
	EXPECT_EQ(get_le32(s.msg[1]), MBIM_MSG_OPEN);
	EXPECT_EQ(get_le32(s.msg[1] + 12), 64); /* fitted as ever */
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.open_probe_timeouts, 1);
	put32(in, MBIM_MSG_COMMAND_DONE);
	put32(in + 4, 48);
	put32(in + 8, tid);
	put32(in + 12, 1);
	put32(in + 16, 0);
	EXPECT_EQ(wdm_deliver(w, in, 48), 0);
	pump_for(loop, 20);
	EXPECT_TRUE(client_empty(c));
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.open_answered, 1);

	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
	wdm_free(w);
}

static void count_call(void *userdata)
{
	(*(unsigned *)userdata)++;
}

/*
 * A function that answers a client's COMMANDs NOT_OPENED (reset while open): the client gets
 * each as UNKNOWN (mbim-proxy would close its device for good on NOT_OPENED), the bridge sends
 * one OPEN of its own (fitted), drops its OPEN_DONE and says so once; the next NOT_OPENED
 * after that is a new event, and an OPEN left unanswered lets the next one try again.
 */
static void check_mbim_not_opened(struct ev_loop *loop)
{
	struct test_sink s = {};
	struct wdm *w = NULL;
	struct wdm_stats st;
	unsigned reopened = 0;
	uint8_t in[64], buf[64];

	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_MBIM, NULL, test_sink_send, &s, &w), 0);
	if (!w)
		return;
	wdm_set_max_message(w, 512);
	wdm_set_on_reopened(w, count_call, &reopened);
	int c = client_open(wdm_slave_path(w));
	EXPECT_TRUE(c >= 0);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 1));

	/* Two of the client's transactions answered NOT_OPENED, in one transfer. */
	memset(in, 0, sizeof(in));
	for (unsigned i = 0; i < 2; i++) {
		put32(in + 16 * i, MBIM_MSG_FUNCTION_ERROR);
		put32(in + 16 * i + 4, 16);
		put32(in + 16 * i + 8, 21 + i);
		put32(in + 16 * i + 12, 5); /* NOT_OPENED */
	}
	EXPECT_EQ(wdm_deliver(w, in, 32), 0);
	EXPECT_EQ(client_read(loop, c, buf, 32), 32);
	for (unsigned i = 0; i < 2; i++) {
		EXPECT_EQ(get_le32(buf + 16 * i), MBIM_MSG_FUNCTION_ERROR);
		EXPECT_EQ(get_le32(buf + 16 * i + 8), 21 + i);
		EXPECT_EQ(get_le32(buf + 16 * i + 12), 6); /* UNKNOWN */
	}
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 1));
	pump_for(loop, 20);
	EXPECT_EQ(s.n, 1); /* one OPEN for both */
	EXPECT_EQ(s.len[0], 16);
	EXPECT_EQ(get_le32(s.msg[0]), MBIM_MSG_OPEN);
	EXPECT_EQ(get_le32(s.msg[0] + 12), 512);
	uint32_t tid = get_le32(s.msg[0] + 8);
	EXPECT_TRUE(tid != 21 && tid != 22);
	EXPECT_EQ(reopened, 0);

	/* Its OPEN_DONE is the bridge's; an indication beside it goes on. */
	put32(in, MBIM_MSG_OPEN_DONE);
	put32(in + 4, 16);
	put32(in + 8, tid);
	put32(in + 12, 0);
	put32(in + 16, 0x80000007); /* INDICATE_STATUS */
	put32(in + 20, 20);
	put32(in + 24, 0);
	put32(in + 28, 1);
	put32(in + 32, 0);
	EXPECT_EQ(wdm_deliver(w, in, 36), 0);
	EXPECT_EQ(client_read(loop, c, buf, 20), 20);
	EXPECT_EQ(get_le32(buf), 0x80000007);
	pump_for(loop, 20);
	EXPECT_TRUE(client_empty(c));
	EXPECT_EQ(reopened, 1);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.not_opened, 2);
	EXPECT_EQ(st.function_reopens, 1);

	/* Reset again: a new OPEN, with a new transaction id. */
	put32(in, MBIM_MSG_FUNCTION_ERROR);
	put32(in + 4, 16);
	put32(in + 8, 30);
	put32(in + 12, 5);
	EXPECT_EQ(wdm_deliver(w, in, 16), 0);
	EXPECT_EQ(client_read(loop, c, buf, 16), 16);
	EXPECT_EQ(get_le32(buf + 12), 6);
	EXPECT_TRUE(PUMP_UNTIL(loop, s.n == 2));
	EXPECT_EQ(get_le32(s.msg[1]), MBIM_MSG_OPEN);
	EXPECT_TRUE(get_le32(s.msg[1] + 8) != tid);
	wdm_get_stats(w, &st);
	EXPECT_EQ(st.function_reopens, 2);

	/* Another error than NOT_OPENED passes unchanged and opens nothing. */
	put32(in + 8, 31);
	put32(in + 12, 6);
	EXPECT_EQ(wdm_deliver(w, in, 16), 0);
	EXPECT_EQ(client_read(loop, c, buf, 16), 16);
	EXPECT_EQ(get_le32(buf + 8), 31);
	pump_for(loop, 20);
	EXPECT_EQ(s.n, 2);
	EXPECT_EQ(reopened, 1);

	close(c);
	EXPECT_TRUE(PUMP_UNTIL(loop, wdm_clients(w) == 0));
	wdm_free(w);
}

/* Every case gets a bridge of its own, in a directory the whole run shares. */
static struct ev_loop *the_loop;
static char the_dir[] = "/tmp/test-wdm.XXXXXX";
static char the_sub[PATH_MAX], the_link[PATH_MAX];
static struct test_sink sink;
static struct wdm *bridge;

static void dir_remove(void)
{
	rmdir(the_sub);
	rmdir(the_dir);
}

TEST_SETUP()
{
	if (access("/dev/ptmx", R_OK | W_OK) < 0)
		TEST_SKIP("no /dev/ptmx: %s", strerror(errno));
	if (!the_loop) {
		the_loop = ev_default_loop(0);
		if (!mkdtemp(the_dir))
			TEST_SKIP("mkdtemp: %s", strerror(errno));
		snprintf(the_sub, sizeof(the_sub), "%s/run", the_dir);
		snprintf(the_link, sizeof(the_link), "%s/run/qmi0", the_dir);
		atexit(dir_remove);
	}
	memset(&sink, 0, sizeof(sink));
	bridge = wdm_free(bridge);
}

static bool bridge_new(void)
{
	EXPECT_EQ(wdm_new(the_loop, WDM_FRAMING_QMUX, the_link, test_sink_send, &sink, &bridge), 0);
	return bridge != NULL;
}

/* The link names the slave, the slave is 0660, its directory was made 0755. */
TEST(new_bridge)
{
	char target[PATH_MAX];
	struct stat st;

	if (!bridge_new())
		return;
	ssize_t n = readlink(the_link, target, sizeof(target) - 1);
	EXPECT_GE(n, 1);
	target[n > 0 ? n : 0] = '\0';
	EXPECT_STR_EQ(target, wdm_slave_path(bridge));
	EXPECT_STR_EQ(wdm_link_path(bridge), the_link);
	EXPECT_EQ(stat(wdm_slave_path(bridge), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0660);
	EXPECT_EQ(stat(the_sub, &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0755);
	bridge = wdm_free(bridge);
}

TEST(messages)
{
	if (bridge_new())
		check_messages(the_loop, bridge, &sink);
	bridge = wdm_free(bridge);
}

TEST(deferred)
{
	if (bridge_new())
		check_deferred(the_loop, bridge, &sink);
	bridge = wdm_free(bridge);
}

TEST(stale)
{
	if (bridge_new())
		check_stale(the_loop, bridge, &sink);
	bridge = wdm_free(bridge);
}

TEST(backpressure)
{
	if (bridge_new())
		check_backpressure(the_loop, bridge);
	bridge = wdm_free(bridge);
}

/* A client still attached sees the device go away when the bridge does. */
TEST(hangup_on_free)
{
	struct stat st;

	if (!bridge_new())
		return;
	int c = client_open(the_link);
	EXPECT_TRUE(PUMP_UNTIL(the_loop, wdm_clients(bridge) == 1));
	bridge = wdm_free(bridge);
	EXPECT_PTR_EQ(bridge, NULL);
	struct pollfd p = { .fd = c, .events = POLLIN };
	EXPECT_EQ(poll(&p, 1, 2000), 1);
	EXPECT_TRUE(p.revents & POLLHUP);
	close(c);
	errno = 0;
	EXPECT_EQ(lstat(the_link, &st), -1);
	EXPECT_EQ(errno, ENOENT);
}

/* Replacing a stale link from an earlier run is atomic and fine. */
TEST(stale_link_replaced)
{
	char target[PATH_MAX];

	if (mkdir(the_sub, 0755) < 0 && errno != EEXIST)
		EXPECT_EQ(errno, EEXIST);
	EXPECT_EQ(symlink("/dev/pts/9999", the_link), 0);
	EXPECT_EQ(wdm_new(the_loop, WDM_FRAMING_QMUX, the_link, test_sink_send, &sink, &bridge), 0);
	ssize_t n = readlink(the_link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	EXPECT_STR_EQ(target, bridge ? wdm_slave_path(bridge) : "");
	bridge = wdm_free(bridge);
}

TEST(link)
{
	check_link(the_loop, the_dir);
}

TEST(mbim_fit)
{
	check_mbim_fit(the_loop);
}

TEST(mbim_open)
{
	check_mbim_open(the_loop);
}

TEST(mbim_not_opened)
{
	check_mbim_not_opened(the_loop);
}
