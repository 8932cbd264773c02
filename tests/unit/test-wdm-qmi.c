/* SPDX-License-Identifier: MIT */
/*
 * The wdm bridge with real libqmi: `qmicli -p --device-open-qmi -d <link> --dms-get-ids`
 * through qmi-proxy, then once more opening the pty directly, against a tiny QMUX
 * responder in this process playing the modem (CTL Get Version Info, Allocate CID,
 * Release CID, DMS Get IDs; replies built by hand, byte for byte).
 *
 * qmi-proxy listens on an abstract socket, which belongs to the network namespace: the
 * test runs in a namespace of its own (root), starts the proxy itself and ends it, and
 * ends any other qmi-proxy in that namespace by pid (qmicli would spawn one if ours died).
 * qmicli runs as a child while this process's loop answers for the modem.
 */
#include <dirent.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "qmux-util.h"
#include "test-case.h"
#include "wdm.h"

#define QMI_PROXY	   "/usr/libexec/qmi-proxy"
#define QMI_PROXY_SOCKET   "qmi-proxy" /* abstract; libqmi's QMI_PROXY_SOCKET_PATH */
#define TEST_IMEI	   "490154203237518"
#define QMICLI_TIMEOUT_SEC 20

/* The modem: CIDs handed out per service, and what it was asked. */
struct modem {
	struct wdm *w;
	uint8_t next_cid;
	uint8_t allocated[256]; /* cid -> service + 1, 0 = free */
	unsigned version_info, alloc_cid, release_cid, get_ids, unknown, bad;
	bool release_matched;
};

static size_t put_tlv(uint8_t *b, uint8_t type, const void *v, uint16_t len)
{
	b[0] = type;
	b[1] = len & 0xff;
	b[2] = len >> 8;
	memcpy(b + 3, v, len);
	return 3 + (size_t)len;
}

static size_t put_result(uint8_t *b, uint16_t error)
{
	uint8_t v[4] = { error ? 1 : 0, 0, error & 0xff, error >> 8 };
	return put_tlv(b, 0x02, v, sizeof(v));
}

/* A response: QMUX flags 0x80 (from the service), QMI flags "response". */
static void reply(struct modem *m, uint8_t service, uint8_t cid, uint16_t tid, uint16_t msg_id,
		  const uint8_t *tlvs, size_t tlv_len)
{
	uint8_t b[512];
	size_t n = test_qmux_build(b, 0x80, service, cid, service == 0 ? 0x01 : 0x02, tid, msg_id,
				   tlvs, tlv_len);
	int r = wdm_deliver(m->w, b, n);
	EXPECT_EQ(r, 0);
}

/* TLV `type` of a request, or NULL. */
static const uint8_t *find_tlv(const uint8_t *tlvs, size_t len, uint8_t type, uint16_t *ret_len)
{
	for (size_t o = 0; o + 3 <= len;) {
		uint16_t l = (uint16_t)(tlvs[o + 1] | tlvs[o + 2] << 8);
		if (o + 3 + l > len)
			return NULL;
		if (tlvs[o] == type) {
			*ret_len = l;
			return tlvs + o + 3;
		}
		o += 3 + l;
	}
	return NULL;
}

static int modem_send(void *userdata, const uint8_t *msg, size_t len)
{
	struct modem *m = userdata;
	uint8_t t[256];
	size_t n = 0;
	uint16_t l;
	const uint8_t *v;

	/* The bridge hands over whole messages only. */
	if (wdm_frame_length(WDM_FRAMING_QMUX, msg, len) != (ssize_t)len || msg[3] != 0x00) {
		m->bad++;
		return 0;
	}
	uint8_t service = msg[4], cid = msg[5];

	if (service == 0) {
		uint8_t tid = msg[7];
		uint16_t id = (uint16_t)(msg[8] | msg[9] << 8);
		const uint8_t *tlvs = msg + 12;
		size_t tlv_len = len - 12;

		switch (id) {
		case 0x0021: { /* Get Version Info: CTL 1.5, DMS 1.14 */
			static const uint8_t list[] = { 2, 0x00, 1, 0, 5, 0, 0x02, 1, 0, 14, 0 };
			m->version_info++;
			n = put_result(t, 0);
			n += put_tlv(t + n, 0x01, list, sizeof(list));
			break;
		}
		case 0x0022: { /* Allocate CID: TLV 0x01 = service */
			m->alloc_cid++;
			v = find_tlv(tlvs, tlv_len, 0x01, &l);
			if (!v || l != 1 || m->next_cid == 0xff) {
				n = put_result(t, 0x0011); /* MissingArgument */
				break;
			}
			uint8_t alloc[2] = { v[0], ++m->next_cid };
			m->allocated[alloc[1]] = (uint8_t)(v[0] + 1);
			n = put_result(t, 0);
			n += put_tlv(t + n, 0x01, alloc, sizeof(alloc));
			break;
		}
		case 0x0023: /* Release CID: TLV 0x01 = service, cid */
			m->release_cid++;
			v = find_tlv(tlvs, tlv_len, 0x01, &l);
			if (!v || l != 2) {
				n = put_result(t, 0x0011);
				break;
			}
			m->release_matched = m->allocated[v[1]] == v[0] + 1;
			m->allocated[v[1]] = 0;
			n = put_result(t, m->release_matched ? 0 : 0x0007); /* InvalidClientId */
			n += put_tlv(t + n, 0x01, v, 2);
			break;
		default:
			m->unknown++;
			n = put_result(t, 0x0047); /* InvalidQmiCommand */
			break;
		}
		reply(m, 0, 0, tid, id, t, n);
		return 0;
	}

	uint16_t tid = (uint16_t)(msg[7] | msg[8] << 8);
	uint16_t id = (uint16_t)(msg[9] | msg[10] << 8);
	if (service == 0x02 && id == 0x0025 && m->allocated[cid] == 0x02 + 1) {
		/* DMS Get IDs: ESN 0x10, IMEI 0x11 (MEID 0x12 left out) */
		m->get_ids++;
		n = put_result(t, 0);
		n += put_tlv(t + n, 0x10, "0", 1);
		n += put_tlv(t + n, 0x11, TEST_IMEI, sizeof(TEST_IMEI) - 1);
	} else {
		m->unknown++;
		n = put_result(t, m->allocated[cid] == service + 1 ? 0x0047 : 0x0007);
	}
	reply(m, service, cid, tid, id, t, n);
	return 0;
}

static long long now_msec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static bool proxy_listening(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path + 1, QMI_PROXY_SOCKET, strlen(QMI_PROXY_SOCKET));
	socklen_t salen =
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(QMI_PROXY_SOCKET));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = connect(fd, (struct sockaddr *)&sa, salen) == 0;
	close(fd);
	return ok;
}

static pid_t start_proxy(const char *log_path)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	/* Exits by itself soon after its last client, should this test die first. */
	execl(QMI_PROXY, "qmi-proxy", "--empty-timeout=3", "--verbose", (char *)NULL);
	_exit(127);
}

/* Wait for pid, up to msec; then SIGKILL it. Returns its wait status, or -1. */
static int reap(pid_t pid, long long msec)
{
	long long end = now_msec() + msec;
	int status;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0)
			return -1;
		if (now_msec() > end) {
			kill(pid, SIGKILL);
			return waitpid(pid, &status, 0) == pid ? status : -1;
		}
		usleep(5000);
	}
}

/*
 * Every process holding the qmi-proxy socket of this namespace, found by the socket's
 * inode (/proc/net/unix is per namespace), into pids[]. Returns how many.
 */
static unsigned find_proxies(pid_t *pids, unsigned max)
{
	unsigned long inodes[16];
	unsigned n_inodes = 0, n = 0;
	char line[512];

	FILE *f = fopen("/proc/net/unix", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && n_inodes < ARRAY_SIZE(inodes)) {
		unsigned long inode;
		char path[256] = "";
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %255s", &inode, path) == 2 &&
		    strcmp(path, "@" QMI_PROXY_SOCKET) == 0)
			inodes[n_inodes++] = inode;
	}
	fclose(f);
	if (n_inodes == 0)
		return 0;

	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	struct dirent *de;
	while ((de = readdir(proc)) && n < max) {
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		struct dirent *fe;
		bool holds = false;
		while (!holds && (fe = readdir(fds))) {
			char p[384], target[64];
			snprintf(p, sizeof(p), "%s/%s", dir, fe->d_name);
			ssize_t l = readlink(p, target, sizeof(target) - 1);
			if (l <= 0)
				continue;
			target[l] = '\0';
			for (unsigned i = 0; i < n_inodes; i++) {
				char want[64];
				snprintf(want, sizeof(want), "socket:[%lu]", inodes[i]);
				if (strcmp(target, want) == 0)
					holds = true;
			}
		}
		closedir(fds);
		if (holds)
			pids[n++] = pid;
	}
	closedir(proc);
	return n;
}

/* Run qmicli with args while the loop answers; its output (stdout and stderr) into out. */
static int run_qmicli(struct ev_loop *loop, char *const argv[], char *out, size_t out_size)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);

	size_t got = 0;
	int status = -1;
	long long end = now_msec() + QMICLI_TIMEOUT_SEC * 1000LL;
	for (;;) {
		ev_run(loop, EVRUN_NOWAIT);
		ssize_t n = read(p[0], out + got, out_size - 1 - got);
		if (n > 0)
			got += (size_t)n;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now_msec() > end) {
			fprintf(stderr, "qmicli did not finish in %d s, killing it\n",
				QMICLI_TIMEOUT_SEC);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(1000);
	}
	ssize_t n;
	while (got < out_size - 1 && (n = read(p[0], out + got, out_size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(p[0]);
	return status;
}

static void dump_file(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

/*
 * One case: qmicli through qmi-proxy, the proxy ended, then qmicli directly (never both at
 * once on the port), with the bridge's counters and the modem's CIDs adding up over both.
 */
TEST(qmicli_proxy_then_direct)
{
	if (access("/dev/ptmx", R_OK | W_OK) < 0)
		TEST_SKIP("no /dev/ptmx: %s", strerror(errno));
	if (access(QMI_PROXY, X_OK) < 0)
		TEST_SKIP("no %s (package libqmi-proxy)", QMI_PROXY);
	if (system("command -v qmicli >/dev/null 2>&1") != 0)
		TEST_SKIP("no qmicli (package libqmi-utils)");
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("cannot make a network namespace for qmi-proxy (needs root): %s",
			  strerror(errno));
	/* A qmi-proxy that qmicli might spawn gets reparented to us, so we can reap it. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);

	/* Not the default loop: that one reaps every child on SIGCHLD. */
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	char dir[] = "/tmp/test-wdm-qmi.XXXXXX";
	if (!loop || !mkdtemp(dir))
		TEST_SKIP("no loop or temporary directory: %s", strerror(errno));
	char link[PATH_MAX], proxy_log[PATH_MAX];
	snprintf(link, sizeof(link), "%s/qmi0", dir);
	snprintf(proxy_log, sizeof(proxy_log), "%s/qmi-proxy.log", dir);

	struct modem m = {};
	EXPECT_EQ(wdm_new(loop, WDM_FRAMING_QMUX, link, modem_send, &m, &m.w), 0);
	if (!m.w)
		return;

	pid_t proxy = start_proxy(proxy_log);
	EXPECT_TRUE(proxy > 0);
	long long end = now_msec() + 5000;
	while (!proxy_listening() && now_msec() < end)
		usleep(10000);
	EXPECT_TRUE(proxy_listening());

	/* Through the proxy, as qmapd and its users share the channel. */
	static char out[16384];
	char *proxied[] = {
		"qmicli", "-p", "--device-open-qmi", "-d", link, "--dms-get-ids", NULL
	};
	int status = run_qmicli(loop, proxied, out, sizeof(out));
	printf("qmicli -p --device-open-qmi -d %s --dms-get-ids (exit %d):\n%s", link,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_TRUE(strstr(out, "IMEI: '" TEST_IMEI "'") != NULL);
	EXPECT_EQ(m.get_ids, 1);
	EXPECT_EQ(m.alloc_cid, 1);
	EXPECT_EQ(m.release_cid, 1);
	EXPECT_TRUE(m.release_matched);
	EXPECT_EQ(m.bad, 0);

	/* The proxy is still up (its empty timeout runs); the socket finds it, and only it. */
	pid_t strays[8];
	unsigned n_strays = find_proxies(strays, ARRAY_SIZE(strays));
	EXPECT_EQ(n_strays, 1);
	EXPECT_EQ(n_strays ? strays[0] : 0, proxy);

	/* End the proxy, and any other in this namespace. */
	kill(proxy, SIGTERM);
	int ps = reap(proxy, 3000);
	EXPECT_TRUE(ps != -1 && WIFEXITED(ps));
	n_strays = find_proxies(strays, ARRAY_SIZE(strays));
	EXPECT_EQ(n_strays, 0);
	for (unsigned i = 0; i < n_strays; i++) {
		kill(strays[i], SIGTERM);
		reap(strays[i], 3000);
	}
	end = now_msec() + 2000;
	while (wdm_clients(m.w) != 0 && now_msec() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	EXPECT_EQ(wdm_clients(m.w), 0);

	/* Directly, now that no proxy holds the port (never both at once). */
	char *direct[] = { "qmicli",
			   "--device-open-qmi",
			   "--device-open-version-info",
			   "-d",
			   link,
			   "--dms-get-ids",
			   NULL };
	status = run_qmicli(loop, direct, out, sizeof(out));
	printf("qmicli --device-open-qmi --device-open-version-info -d %s --dms-get-ids "
	       "(exit %d):\n%s",
	       link, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_TRUE(strstr(out, "IMEI: '" TEST_IMEI "'") != NULL);
	EXPECT_EQ(m.get_ids, 2);
	EXPECT_EQ(m.version_info, 1);
	EXPECT_EQ(m.release_cid, 2);
	EXPECT_EQ(m.bad, 0);

	struct wdm_stats st;
	wdm_get_stats(m.w, &st);
	printf("wdm: to_modem=%llu from_modem=%llu framing_errors=%llu stale_flushes=%llu "
	       "client_opens=%llu\n",
	       (unsigned long long)st.to_modem, (unsigned long long)st.from_modem,
	       (unsigned long long)st.framing_errors, (unsigned long long)st.stale_flushes,
	       (unsigned long long)st.client_opens);
	EXPECT_EQ(st.framing_errors, 0);
	EXPECT_EQ(st.to_modem_errors, 0);
	EXPECT_EQ(st.from_modem, st.to_modem);
	EXPECT_EQ(st.client_opens, 2); /* the proxy once, the direct qmicli once */

	if (test_failures)
		dump_file(proxy_log);

	/* Anything still alive that we started or inherited: none expected. */
	n_strays = find_proxies(strays, ARRAY_SIZE(strays));
	EXPECT_EQ(n_strays, 0);
	for (unsigned i = 0; i < n_strays; i++) {
		kill(strays[i], SIGTERM);
		reap(strays[i], 3000);
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	m.w = wdm_free(m.w);
	unlink(proxy_log);
	rmdir(dir);
	ev_loop_destroy(loop);
}
