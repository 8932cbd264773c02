/* SPDX-License-Identifier: MIT */
/*
 * The usb transport on MBIM functions, under umockdev (docs/ARCHITECTURE.md "Tests"):
 * usb-harness plays two MBIM modems whose URBs go to two qmapd-sim --mbim, and the transport
 * finds each function by class and sets its data interface up as cdc_ncm does. Checked: the
 * class requests and alternate settings in the order the harness recorded them (an EM7455-like
 * function with the 8-byte NTB input size and no CRC; a Telit-like one offering CRC and NTB32,
 * with 512-byte control messages and no extended descriptor), what the transport agreed on,
 * 16 bulk IN transfers of the agreed input size in flight, an MBIM OPEN and its OPEN_DONE
 * through encapsulated commands, GET_ENCAPSULATED_RESPONSE asking for wMaxControlMessage,
 * what the transport offers for fitting MBIM to it (ntb.max_control_message), a COMMAND in
 * fragments of that size (as the wdm bridge cuts them, test-wdm) reaching the function and
 * answered, messages larger than it refused; after the transport let go, requests a strict function
 * refuses (another interface, a format change in the data alternate setting, CRC where none
 * is offered) STALL. A STALLed SET_NTB_INPUT_SIZE leaves the function's maximum; a STALLed
 * GET_NTB_PARAMETERS fails the claim, which is tried again.
 *
 * The test re-runs itself under umockdev's preload once the harness has set up the testbed;
 * the sims run in a network namespace of the test's own (their TUN devices stay there).
 * Without usb-harness, umockdev-wrapper or root it exits 77.
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <libusb.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-case.h"
#include "usb-harness-client.h"
#include "transport.h"

#define WAIT 10.0 /* s for an expected event */

static const char *tmp_dir;

/* ---- under umockdev (the re-run child) ---- */

struct seen {
	unsigned connected;
	unsigned disconnected;
	uint8_t control[4096];
	size_t control_len;
	unsigned controls;
};

static void on_bulk_in(void *userdata, uint8_t *buf, size_t len)
{
	(void)userdata;
	(void)buf;
	(void)len;
}

static void on_control(void *userdata, const uint8_t *buf, size_t len)
{
	struct seen *s = userdata;

	s->controls++;
	s->control_len = len < sizeof(s->control) ? len : sizeof(s->control);
	memcpy(s->control, buf, s->control_len);
}

static void on_connect(void *userdata)
{
	((struct seen *)userdata)->connected++;
}

static void on_disconnect(void *userdata)
{
	((struct seen *)userdata)->disconnected++;
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Run the loop until *what is at least want or WAIT passed. */
static void run_until(struct ev_loop *loop, const unsigned *what, unsigned want)
{
	ev_timer t;
	ev_tstamp end = ev_time() + WAIT;

	ev_timer_init(&t, on_timeout, 0.1, 0.1);
	ev_timer_start(loop, &t);
	while (*what < want && ev_time() < end)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &t);
}

static void harness(const char *cmd)
{
	usb_harness_send(tmp_dir, cmd);
}

/* The harness's counter `key` (e.g. "1.class_sequence") as text, "" if absent. */
static const char *harness_stat(const char *key, char *buf, size_t len)
{
	usb_harness_stat(tmp_dir, key, buf, len);
	return buf;
}

static long harness_num(const char *key)
{
	char buf[64];

	return strtol(harness_stat(key, buf, sizeof(buf)), NULL, 10);
}

static struct transport *open_modem(struct ev_loop *loop, const char *spec, uint8_t ntb_format,
				    struct seen *seen)
{
	struct transport_callbacks cb = {
		.on_bulk_in = on_bulk_in,
		.on_control = on_control,
		.on_connect = on_connect,
		.on_disconnect = on_disconnect,
	};
	struct transport_params params = {
		.dl_max_size = 32768,
		.rx_transfers = 16,
		.ul_max_size = 16384,
		.max_packet_size = 512,
		.ntb_format = ntb_format,
	};
	struct transport *t = NULL;

	EXPECT_EQ(transport_new(loop, spec, &params, &cb, seen, &t), 0);
	if (!t)
		exit(1);
	EXPECT_EQ(transport_start(t), 0);
	run_until(loop, &seen->connected, 1);
	EXPECT_EQ(seen->connected, 1);
	return t;
}

/*
 * MBIM 1.0 §9.3.1: OPEN with MaxControlTransfer = the transport's max_control_message (what
 * the wdm bridge leaves of libmbim's 4096); the answer is OPEN_DONE with status 0.
 */
static void mbim_open(struct ev_loop *loop, struct transport *t, struct seen *seen, uint32_t tid)
{
	uint8_t open_msg[16] = { 0x01, 0, 0, 0, 16, 0, 0, 0 };
	const uint8_t done[16] = { 0x01, 0, 0, 0x80, 16, 0, 0, 0, (uint8_t)tid };

	open_msg[8] = (uint8_t)tid;
	open_msg[12] = (uint8_t)t->ntb.max_control_message;
	open_msg[13] = (uint8_t)(t->ntb.max_control_message >> 8);
	unsigned before = seen->controls;
	EXPECT_EQ(transport_control_send(t, open_msg, sizeof(open_msg)), 0);
	run_until(loop, &seen->controls, before + 1);
	EXPECT_EQ(seen->controls, before + 1);
	EXPECT_EQ(seen->control_len, sizeof(done));
	EXPECT_MEM_EQ(seen->control, done, sizeof(done));
}

/*
 * A Basic Connect DEVICE_CAPS query (MBIM 1.0 §10.5.1) with an information buffer of pad
 * bytes, in fragments of at most max bytes (as the wdm bridge cuts it, test-wdm): the
 * function must put it together and answer with a COMMAND_DONE of the transaction.
 */
static void mbim_big_command(struct ev_loop *loop, struct transport *t, struct seen *seen,
			     uint32_t tid, size_t pad, size_t max)
{
	static const uint8_t basic_connect[16] = { 0xa2, 0x89, 0xcc, 0x33, 0xbc, 0xbb, 0x8b, 0x4f,
						   0xb6, 0xb0, 0x13, 0x3e, 0xc2, 0xaa, 0xe6, 0xdf };
	uint8_t body[4096], msg[4096];
	size_t blen = 28 + pad;

	memcpy(body, basic_connect, 16);
	memset(body + 16, 0, blen - 16);
	body[16] = 1;		 /* CID DEVICE_CAPS */
	body[24] = (uint8_t)pad; /* InformationBufferLength */
	body[25] = (uint8_t)(pad >> 8);
	unsigned before = seen->controls;
	size_t per = max - 20;
	unsigned frags = (unsigned)((blen + per - 1) / per);
	for (unsigned i = 0; i < frags; i++) {
		size_t off = i * per, n = blen - off < per ? blen - off : per;
		uint32_t h[5] = { 3, (uint32_t)(20 + n), tid, frags, i };
		memcpy(msg, h, sizeof(h)); /* little-endian hosts: the test's build machines */
		memcpy(msg + 20, body + off, n);
		EXPECT_EQ(transport_control_send(t, msg, 20 + n), 0);
	}
	run_until(loop, &seen->controls, before + 1);
	EXPECT_GE(seen->controls, before + 1);
	EXPECT_GE(seen->control_len, 12);
	uint32_t type, got_tid;
	memcpy(&type, seen->control, 4);
	memcpy(&got_tid, seen->control + 8, 4);
	EXPECT_EQ(type, 0x80000003u); /* COMMAND_DONE: the function put it together */
	EXPECT_EQ(got_tid, tid);
}

/* A class request on EP0 from a handle of the test's own: 0, or the libusb error. */
static int class_request(libusb_device_handle *h, uint8_t type, uint8_t req, uint16_t value,
			 uint16_t index, uint8_t *data, uint16_t len)
{
	int r = libusb_control_transfer(h, type, req, value, index, data, len, 2000);
	return r < 0 ? r : 0;
}

static int child(void)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct seen s0 = { 0 }, s1 = { 0 };
	char buf[512];

	/* The EM7455-like function: no CRC, NTB16 only, the 8-byte input size. */
	struct transport *t0 = open_modem(loop, "usb:1199:9079", 32, &s0);
	EXPECT_EQ(t0->framing, TRANSPORT_FRAMING_NTB);
	EXPECT_EQ(t0->data_interface, 13);
	EXPECT_EQ(t0->ntb.control_interface, 12);
	EXPECT_EQ(t0->ntb.data_alt, 1);
	EXPECT_EQ(t0->ntb.format, NTB_FORMAT_16); /* NTB32 asked for, not offered */
	EXPECT_EQ(t0->ntb.max_control_message, 4096);
	EXPECT_EQ(t0->ntb.max_segment_size, 2048);
	EXPECT_EQ(t0->ntb.mtu, 1500);
	EXPECT_EQ(t0->ntb.network_capabilities, 0x20);
	EXPECT_TRUE(t0->ntb.crc_refused); /* not offered: not asked */
	EXPECT_TRUE(!t0->ntb.in_size_refused && !t0->ntb.params_from_desc);
	EXPECT_EQ(t0->ntb.in_size, 16384); /* the sim's dwNtbInMaxSize, below the buffers */
	EXPECT_EQ(t0->params.dl_max_size, 16384);
	EXPECT_GE(t0->n_rx, 16);
	EXPECT_STR_EQ(harness_stat("0.class_sequence", buf, sizeof(buf)),
		      "data-alt1,data-alt0,GET_NTB_PARAMETERS,SET_NTB_INPUT_SIZE/8,data-alt1");
	EXPECT_EQ(harness_num("0.bulk_in_urbs_pending"), 16);
	EXPECT_EQ(harness_num("0.claimed"), 2);
	EXPECT_EQ(harness_num("0.dtr_set"), 0);
	EXPECT_EQ(harness_num("0.bulk_without_alt"), 0);
	EXPECT_EQ(harness_num("0.sim_class_stalled"), 0);
	mbim_open(loop, t0, &s0, 1);
	EXPECT_EQ(harness_num("0.resp_wlength"), 4096);
	EXPECT_EQ(harness_num("0.open_max_transfer"), 4096);
	EXPECT_EQ(harness_num("0.ctrl_commands"), 1);

	/* The Telit-like function: CRC offered (turned off), NTB32 asked for and offered, the
	 * 4-byte input size, 512-byte control messages, no extended descriptor. */
	struct transport *t1 = open_modem(loop, "usb:1bc7:1071", 32, &s1);
	EXPECT_EQ(t1->framing, TRANSPORT_FRAMING_NTB);
	EXPECT_EQ(t1->data_interface, 3);
	EXPECT_EQ(t1->ntb.control_interface, 2);
	EXPECT_EQ(t1->ntb.format, NTB_FORMAT_32);
	EXPECT_TRUE(!t1->ntb.crc_refused && !t1->ntb.format_refused);
	EXPECT_EQ(t1->ntb.max_control_message, 512);
	EXPECT_EQ(t1->ntb.max_segment_size, 1500);
	EXPECT_EQ(t1->ntb.mtu, 0);
	EXPECT_STR_EQ(harness_stat("1.class_sequence", buf, sizeof(buf)),
		      "data-alt1,data-alt0,GET_NTB_PARAMETERS,SET_CRC_MODE,SET_NTB_FORMAT/32,"
		      "SET_NTB_INPUT_SIZE/4,data-alt1");
	EXPECT_EQ(harness_num("1.sim_class_stalled"), 0);
	mbim_open(loop, t1, &s1, 7);
	EXPECT_EQ(harness_num("1.resp_wlength"), 512);
	EXPECT_EQ(harness_num("1.open_max_transfer"), 512);
	/* 1300 bytes in 3 fragments that fit: each one encapsulated command, put together by
	 * the function; sent whole it does not fit and is refused (the bridge fits it). */
	long cmds = harness_num("1.ctrl_commands");
	mbim_big_command(loop, t1, &s1, 8, 1252, 512);
	EXPECT_EQ(harness_num("1.ctrl_commands"), cmds + 3);
	EXPECT_EQ(harness_num("1.cmd_wlength_max"), 512);
	uint8_t big[600] = { 0x03, 0, 0, 0, 0x58, 0x02, 0, 0, 9, 0, 0, 0, 1 }; /* COMMAND 1/1 */
	EXPECT_EQ(transport_control_send(t1, big, sizeof(big)), -EMSGSIZE);
	big[0] = 0x04; /* HOST_ERROR */
	EXPECT_EQ(transport_control_send(t1, big, sizeof(big)), -EMSGSIZE);
	EXPECT_EQ(harness_num("1.ctrl_commands"), cmds + 3);

	/* A STALLed SET_NTB_INPUT_SIZE leaves the function's dwNtbInMaxSize (65536 here), of
	 * which the receive buffers take what they hold. */
	EXPECT_EQ(t1->ntb.in_size, 32768);
	harness("@1 inject input-size-stall");
	harness("@1 unplug");
	run_until(loop, &s1.disconnected, 1);
	EXPECT_EQ(s1.disconnected, 1);
	harness("@1 plug");
	run_until(loop, &s1.connected, 2);
	EXPECT_EQ(s1.connected, 2);
	EXPECT_TRUE(t1->ntb.in_size_refused);
	EXPECT_EQ(t1->ntb.in_size, 65536);
	EXPECT_EQ(t1->params.dl_max_size, 32768);
	EXPECT_EQ(t1->framing, TRANSPORT_FRAMING_NTB);
	EXPECT_STR_EQ(harness_stat("1.class_sequence", buf, sizeof(buf)),
		      "data-alt1,data-alt0,GET_NTB_PARAMETERS,SET_CRC_MODE,SET_NTB_FORMAT/32,"
		      "SET_NTB_INPUT_SIZE/4!,data-alt1");
	/* A STALLed GET_NTB_PARAMETERS: USB has no other copy, the claim fails and is tried
	 * again (5 s later), from alternate setting 0 again. */
	harness("@1 inject class-stall");
	harness("@1 unplug");
	run_until(loop, &s1.disconnected, 2);
	harness("@1 plug");
	run_until(loop, &s1.connected, 3);
	EXPECT_EQ(s1.connected, 3);
	EXPECT_TRUE(!t1->ntb.in_size_refused);
	EXPECT_EQ(harness_num("1.injected_class_stall"), 1);
	EXPECT_STR_EQ(harness_stat("1.class_sequence", buf, sizeof(buf)),
		      "data-alt1,data-alt0,GET_NTB_PARAMETERS!,data-alt0,data-alt1,data-alt0,"
		      "GET_NTB_PARAMETERS,SET_CRC_MODE,SET_NTB_FORMAT/32,SET_NTB_INPUT_SIZE/4,"
		      "data-alt1");
	mbim_open(loop, t1, &s1, 10);

	/* Let go: the data interface back in alternate setting 0, the kernel driver back. */
	transport_stop(t0);
	transport_stop(t1);
	EXPECT_EQ(harness_num("0.data_alt"), 0);
	EXPECT_STR_EQ(harness_stat("0.driver", buf, sizeof(buf)), "cdc_mbim");
	t0 = transport_free(t0);
	t1 = transport_free(t1);

	/* A strict function STALLs requests out of place. */
	libusb_context *ctx = NULL;
	libusb_device_handle *h = NULL;
	EXPECT_EQ(libusb_init(&ctx), 0);
	h = libusb_open_device_with_vid_pid(ctx, 0x1199, 0x9079);
	EXPECT_TRUE(h != NULL);
	if (h) {
		uint8_t p[28];
		libusb_detach_kernel_driver(h, 12);
		EXPECT_EQ(libusb_claim_interface(h, 12), 0);
		EXPECT_EQ(libusb_claim_interface(h, 13), 0);
		/* GET_NTB_PARAMETERS on the data interface instead of the communications one. */
		EXPECT_EQ(class_request(h, 0xa1, 0x80, 0, 13, p, sizeof(p)), LIBUSB_ERROR_PIPE);
		EXPECT_EQ(class_request(h, 0xa1, 0x80, 0, 12, p, sizeof(p)), 0);
		EXPECT_EQ(p[0], 28);
		/* CRC where bmNetworkCapabilities offers none. */
		EXPECT_EQ(class_request(h, 0x21, 0x8a, 0, 12, NULL, 0), LIBUSB_ERROR_PIPE);
		/* The format in the data alternate setting (NCM 1.0 §6.2.5). */
		EXPECT_EQ(libusb_set_interface_alt_setting(h, 13, 1), 0);
		EXPECT_EQ(class_request(h, 0x21, 0x84, 0, 12, NULL, 0), LIBUSB_ERROR_PIPE);
		EXPECT_EQ(libusb_set_interface_alt_setting(h, 13, 0), 0);
		EXPECT_EQ(class_request(h, 0x21, 0x84, 0, 12, NULL, 0), 0);
		/* NTB32 where only NTB16 is offered; an input size below 2048. */
		EXPECT_EQ(class_request(h, 0x21, 0x84, 1, 12, NULL, 0), LIBUSB_ERROR_PIPE);
		uint8_t size[4] = { 0x00, 0x04, 0, 0 }; /* 1024 */
		EXPECT_EQ(class_request(h, 0x21, 0x86, 0, 12, size, 4), LIBUSB_ERROR_PIPE);
		EXPECT_STR_EQ(
			harness_stat("0.class_sequence", buf, sizeof(buf)),
			"data-alt1,data-alt0,GET_NTB_PARAMETERS,SET_NTB_INPUT_SIZE/8,data-alt1,"
			"data-alt0,GET_NTB_PARAMETERS!,GET_NTB_PARAMETERS,SET_CRC_MODE!,data-alt1,"
			"SET_NTB_FORMAT/16!,data-alt0,SET_NTB_FORMAT/16,SET_NTB_FORMAT/32!,"
			"SET_NTB_INPUT_SIZE/4!");
		libusb_release_interface(h, 13);
		libusb_release_interface(h, 12);
		libusb_attach_kernel_driver(h, 12);
		libusb_close(h);
	}
	libusb_exit(ctx);
	return test_result("test-transport-usb (umockdev)");
}

/* ---- the parent: sims and harness, then this program again under the preload ---- */

static pid_t pids[3];
static unsigned n_pids;
static char dir[] = "/tmp/qmapd-test-transport-usb.XXXXXX";

static void cleanup(void)
{
	char cmd[256];

	for (unsigned i = 0; i < n_pids; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			waitpid(pids[i], NULL, 0);
		}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static pid_t spawn(const char *log, char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	pids[n_pids++] = pid;
	return pid;
}

static bool wait_file(const char *path)
{
	for (int i = 0; i < 200; i++) {
		if (access(path, F_OK) == 0)
			return true;
		usleep(50000);
	}
	return false;
}

static void show(const char *path)
{
	char cmd[600];

	fprintf(stderr, "---- %s\n", path);
	snprintf(cmd, sizeof(cmd), "tail -n 30 '%s' >&2", path);
	if (system(cmd) != 0)
		fprintf(stderr, "(none)\n");
}

static int run_under_umockdev(const char *self)
{
	const char *harness_bin = QMAPD_BUILD_DIR "/usb-harness";
	const char *sim_bin = QMAPD_BUILD_DIR "/qmapd-sim";
	char ctl[256], dirfile[256], stats[256], hlog[256], sock[2][256], slog[2][256];
	char m0[400], m1[400], root[512] = "";
	int status;

	if (access(harness_bin, X_OK) < 0)
		TEST_SKIP("%s not built: libumockdev-dev was missing at configure time "
			  "(scripts/deps.sh installs it)",
			  harness_bin);
	if (system("command -v umockdev-wrapper >/dev/null") != 0)
		TEST_SKIP("umockdev-wrapper not installed (apt-get install umockdev)");
	if (access("/dev/ptmx", R_OK | W_OK) < 0)
		TEST_SKIP("no /dev/ptmx: the fake usbfs nodes are ptys");
	/* The sims' TUN devices in a namespace of our own: needs root. */
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("unshare(CLONE_NEWNET): %s (the sims need a namespace: run as root)",
			  strerror(errno));
	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	atexit(cleanup);
	snprintf(ctl, sizeof(ctl), "%s/usb.ctl", dir);
	snprintf(dirfile, sizeof(dirfile), "%s/umockdev.dir", dir);
	snprintf(stats, sizeof(stats), "%s/usb.stats", dir);
	snprintf(hlog, sizeof(hlog), "%s/usb-harness.log", dir);
	if (mkfifo(ctl, 0600) < 0)
		return perror("mkfifo"), 1;
	for (int k = 0; k < 2; k++) {
		snprintf(sock[k], sizeof(sock[k]), "%s/sim%d.sock", dir, k);
		snprintf(slog[k], sizeof(slog[k]), "%s/sim%d.log", dir, k);
		char netdev[16];
		snprintf(netdev, sizeof(netdev), "usbsim%d", k);
		/* The second offers NTB32 and 64 KiB NTBs, more than the receive buffers. */
		char *argv[] = { (char *)sim_bin,
				 "--socket",
				 sock[k],
				 "--netdev",
				 netdev,
				 "--mbim",
				 "--ntb",
				 k ? "32" : "16",
				 "--ntb-in-max-size",
				 k ? "65536" : "16384",
				 NULL };
		spawn(slog[k], argv);
		if (!wait_file(sock[k])) {
			show(slog[k]);
			return 1;
		}
	}
	snprintf(m0, sizeof(m0), "kind=mbim,sim=%s", sock[0]);
	snprintf(m1, sizeof(m1),
		 "kind=mbim,sim=%s,id=1bc7:1071,iface=2,caps=10,ctrl=512,segment=1500,mtu=0",
		 sock[1]);
	char *hargv[] = { "umockdev-wrapper",
			  (char *)harness_bin,
			  "--modem",
			  m0,
			  "--modem",
			  m1,
			  "--dir-file",
			  dirfile,
			  "--control",
			  ctl,
			  "--stats",
			  stats,
			  NULL };
	pid_t hpid = spawn(hlog, hargv);
	for (int i = 0; i < 200 && !root[0]; i++) {
		FILE *f = fopen(dirfile, "re");
		if (f) {
			if (!fgets(root, sizeof(root), f))
				root[0] = '\0';
			fclose(f);
			break;
		}
		if (waitpid(hpid, &status, WNOHANG) == hpid)
			break;
		usleep(50000);
	}
	if (!root[0]) {
		fprintf(stderr, "usb-harness did not set up the testbed\n");
		show(hlog);
		return 1;
	}
	setenv("UMOCKDEV_DIR", root, 1);
	setenv("LD_PRELOAD", "libumockdev-preload.so.0", 1);
	setenv("QMAPD_TEST_TRANSPORT_USB_TMP", dir, 1);
	/* Sanitizer builds: the preload comes first in the link order, which ASan must accept. */
	setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "mbim_functions", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return perror("fork"), 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		show(hlog);
		show(slog[0]);
		show(slog[1]);
		return 1;
	}
	return 0;
}

/*
 * One case: two MBIM functions, their replugs and then a strict function's STALLs, each step
 * checked against the class requests recorded since the start, so they cannot run apart.
 * Run again under the testbed (QMAPD_TEST_TRANSPORT_USB_TMP set), it is child().
 */
TEST(mbim_functions)
{
	char self[512];
	ssize_t n;

	tmp_dir = getenv("QMAPD_TEST_TRANSPORT_USB_TMP");
	if (tmp_dir) {
		EXPECT_EQ(child(), 0);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		perror("readlink /proc/self/exe");
		test_failures++;
		return;
	}
	self[n] = '\0';
	EXPECT_EQ(run_under_umockdev(self), 0);
}
