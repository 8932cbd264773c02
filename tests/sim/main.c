/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim: plays the modem at the transport boundary for tests (sim.h).
 * Run it inside the network namespace that should hold its network side:
 *   ip netns exec sim qmapd-sim --socket /run/qmapd-sim.sock \
 *           --net-address 198.51.100.1/24 --mux 1=192.0.2.2/24,2001:db8:1::2/64
 * It answers QMI on the control channel (sim-qmi.h), or MBIM with --mbim (sim-mbim.h, data
 * in NTBs); SIGUSR2 makes the network drop every connected session; SIGHUP reads --rate-file
 * again (a user moving through the cell).
 */
#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic-file.h"
#include "log-glib.h"
#include "log.h"
#include "sim-ffs.h"
#include "sim-gadgetfs.h"
#include "sim.h"

enum {
	OPT_SOCKET = 0x100,
	OPT_NETDEV,
	OPT_MTU,
	OPT_NET_ADDRESS,
	OPT_MUX,
	OPT_QMAP_VERSION,
	OPT_DL_MAX_SIZE,
	OPT_DL_MAX_DATAGRAMS,
	OPT_FLUSH_USEC,
	OPT_CSUM_VALID,
	OPT_INJECT,
	OPT_INJECT_EVERY,
	OPT_STATS_FILE,
	OPT_APN,
	OPT_NO_QMAPV5,
	OPT_SESSION_MTU,
	OPT_ALWAYS_CONNECTED,
	OPT_KEEP_SESSIONS,
	OPT_LOSE_RELEASES,
	OPT_NO_OFFLOAD,
	OPT_PROFILE,
	OPT_DATA_INTERFACE,
	OPT_MAX_PDN_PER_APN,
	OPT_SILENT,
	OPT_IGNORE_DL_GRANT,
	OPT_GRANT_QMAPV1,
	OPT_UL_RATE,
	OPT_DL_RATE,
	OPT_MODEM_BUFFER,
	OPT_NETWORK_DELAY,
	OPT_RATE_FILE,
	OPT_DL_BUFFER,
	OPT_MBIM,
	OPT_FFS,
	OPT_FFS_FAULTS,
	OPT_GADGETFS,
	OPT_GADGETFS_SLOW_COMMANDS,
	OPT_NTB,
	OPT_NTB_IN_MAX_SIZE,
	OPT_NTB_OUT_MAX_SIZE,
	OPT_NTB_OUT_DIVISOR,
	OPT_NTB_OUT_REMAINDER,
	OPT_NTB_OUT_ALIGNMENT,
	OPT_NTB_OUT_MAX_DATAGRAMS,
	OPT_MAX_CONTROL_MESSAGE,
	OPT_MAX_SESSIONS,
	OPT_QMI_OVER_MBIM,
	OPT_REGISTER_DELAY,
	OPT_SIM_PIN,
	OPT_MSISDN,
	OPT_ROAMING_FILE,
	OPT_SMS_INBOX,
	OPT_SMS_OUTBOX,
	OPT_SIGNAL_FILE,
	OPT_NO_DMS_UIM,
	OPT_NO_SIM,
	OPT_SIM_STATE,
};

static const struct option options[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "netdev", required_argument, NULL, OPT_NETDEV },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "net-address", required_argument, NULL, OPT_NET_ADDRESS },
	{ "mux", required_argument, NULL, OPT_MUX },
	{ "qmap-version", required_argument, NULL, OPT_QMAP_VERSION },
	{ "dl-max-size", required_argument, NULL, OPT_DL_MAX_SIZE },
	{ "dl-max-datagrams", required_argument, NULL, OPT_DL_MAX_DATAGRAMS },
	{ "flush-usec", required_argument, NULL, OPT_FLUSH_USEC },
	{ "csum-valid", no_argument, NULL, OPT_CSUM_VALID },
	{ "inject", required_argument, NULL, OPT_INJECT },
	{ "inject-every", required_argument, NULL, OPT_INJECT_EVERY },
	{ "stats-file", required_argument, NULL, OPT_STATS_FILE },
	{ "apn", required_argument, NULL, OPT_APN },
	{ "no-qmapv5", no_argument, NULL, OPT_NO_QMAPV5 },
	{ "session-mtu", required_argument, NULL, OPT_SESSION_MTU },
	{ "always-connected", no_argument, NULL, OPT_ALWAYS_CONNECTED },
	{ "keep-sessions", no_argument, NULL, OPT_KEEP_SESSIONS },
	{ "lose-releases", required_argument, NULL, OPT_LOSE_RELEASES },
	{ "no-offload", no_argument, NULL, OPT_NO_OFFLOAD },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "data-interface", required_argument, NULL, OPT_DATA_INTERFACE },
	{ "max-pdn-per-apn", required_argument, NULL, OPT_MAX_PDN_PER_APN },
	{ "silent", no_argument, NULL, OPT_SILENT },
	{ "ignore-dl-grant", no_argument, NULL, OPT_IGNORE_DL_GRANT },
	{ "grant-qmapv1", no_argument, NULL, OPT_GRANT_QMAPV1 },
	{ "ul-rate", required_argument, NULL, OPT_UL_RATE },
	{ "dl-rate", required_argument, NULL, OPT_DL_RATE },
	{ "modem-buffer", required_argument, NULL, OPT_MODEM_BUFFER },
	{ "network-delay", required_argument, NULL, OPT_NETWORK_DELAY },
	{ "rate-file", required_argument, NULL, OPT_RATE_FILE },
	{ "dl-buffer", required_argument, NULL, OPT_DL_BUFFER },
	{ "mbim", no_argument, NULL, OPT_MBIM },
	{ "ffs", required_argument, NULL, OPT_FFS },
	{ "ffs-faults", required_argument, NULL, OPT_FFS_FAULTS },
	{ "gadgetfs", required_argument, NULL, OPT_GADGETFS },
	{ "gadgetfs-slow-commands", required_argument, NULL, OPT_GADGETFS_SLOW_COMMANDS },
	{ "ntb", required_argument, NULL, OPT_NTB },
	{ "ntb-in-max-size", required_argument, NULL, OPT_NTB_IN_MAX_SIZE },
	{ "ntb-out-max-size", required_argument, NULL, OPT_NTB_OUT_MAX_SIZE },
	{ "ntb-out-divisor", required_argument, NULL, OPT_NTB_OUT_DIVISOR },
	{ "ntb-out-remainder", required_argument, NULL, OPT_NTB_OUT_REMAINDER },
	{ "ntb-out-alignment", required_argument, NULL, OPT_NTB_OUT_ALIGNMENT },
	{ "ntb-out-max-datagrams", required_argument, NULL, OPT_NTB_OUT_MAX_DATAGRAMS },
	{ "max-control-message", required_argument, NULL, OPT_MAX_CONTROL_MESSAGE },
	{ "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
	{ "qmi-over-mbim", no_argument, NULL, OPT_QMI_OVER_MBIM },
	{ "register-delay", required_argument, NULL, OPT_REGISTER_DELAY },
	{ "sim-pin", required_argument, NULL, OPT_SIM_PIN },
	{ "msisdn", required_argument, NULL, OPT_MSISDN },
	{ "roaming-file", required_argument, NULL, OPT_ROAMING_FILE },
	{ "sms-inbox", required_argument, NULL, OPT_SMS_INBOX },
	{ "sms-outbox", required_argument, NULL, OPT_SMS_OUTBOX },
	{ "signal-file", required_argument, NULL, OPT_SIGNAL_FILE },
	{ "no-dms-uim", no_argument, NULL, OPT_NO_DMS_UIM },
	{ "no-sim", no_argument, NULL, OPT_NO_SIM },
	{ "sim-state", required_argument, NULL, OPT_SIM_STATE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static const char *stats_file;
static char sms_inbox[256]; /* --sms-inbox */
/* --ffs DIR: also play the modem as a USB device through FunctionFS (sim-ffs.h). */
static const char *ffs_dir;
static struct sim_ffs *ffs_front;
static const char *ffs_faults; /* --ffs-faults, read on SIGRTMIN+4 */
/* --gadgetfs DIR: also play the MBIM modem as a whole USB device (sim-gadgetfs.h). */
static const char *gadgetfs_dir;
static uint32_t gadgetfs_slow_us; /* --gadgetfs-slow-commands */
static struct sim_gadgetfs *gadgetfs_front;

/* "  NAME  summary" lines for --help. */
static const char *profile_list(void)
{
	static char buf[2048]; /* a few profiles of one line each */
	size_t n = 0;

	for (const struct sim_profile *p = sim_profiles; p->name && n < sizeof(buf); p++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "  %-14s %s\n", p->name,
				      p->summary);
	return buf;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: qmapd-sim --socket PATH [OPTIONS]\n"
		"Play a QMAP modem (QMI control and data), or with --mbim an MBIM modem (MBIM\n"
		"control, NTB data), for qmapd's `sim` transport.\n"
		"\n"
		"  --socket PATH              listen here (SOCK_SEQPACKET), required\n"
		"  --profile NAME             behave like a documented modem family (below);\n"
		"                             options after it override it\n"
		"  --data-interface N         the data interface's bInterfaceNumber (default %d):\n"
		"                             reported on connect, Endpoint Info must name it\n"
		"  --max-pdn-per-apn N        refuse a PDN on an APN that N other muxes use\n"
		"                             (3GPP 55); 0 = no limit (default)\n"
		"  --register-delay MS        search for the network MS after start before it\n"
		"                             registers (NAS); Start Network fails with no\n"
		"                             service until then\n"
		"  --silent                   answer no QMI at all, like a modem in the wrong USB\n"
		"                             configuration\n"
		"  --ignore-dl-grant          send downlink aggregates of --dl-max-size whatever\n"
		"                             WDA granted, like a modem that ignores the grant\n"
		"  --grant-qmapv1             answer a QMAPv5 request with success, granting\n"
		"                             QMAP (v1): another protocol than asked\n"
		"  --netdev NAME              network-side TUN device (default %s)\n"
		"  --mtu N                    its MTU (default %d)\n"
		"  --net-address PREFIX       address for the TUN, e.g. 198.51.100.1/24 "
		"(repeatable)\n"
		"  --mux ID=PREFIX[,PREFIX]   mux %d..%d owning these destinations; routed into "
		"the\n"
		"                             TUN (repeatable), e.g. "
		"1=192.0.2.2/24,2001:db8:1::2/64;\n"
		"                             the first IPv4 and IPv6 prefix, host bits kept, are\n"
		"                             the addresses a session on the mux gets\n"
		"  --apn NAME[:USER:PASSWORD] an APN the network knows (repeatable; default\n"
		"                             \"%s\" without credentials; the first is the "
		"default)\n"
		"  --no-qmapv5                refuse a QMAPv5 data format (WDA), like older "
		"modems\n"
		"  --session-mtu N            MTU handed to the host with a session (default %d)\n"
		"  --always-connected         carry data on every mux without a QMI session\n"
		"  --keep-sessions            qmapd going away (its socket closing) ends no\n"
		"                             session and keeps its client ids, as a USB modem\n"
		"                             whose host process died without dropping DTR\n"
		"  --lose-releases N          QMI: the first N Release Client ID requests are "
		"lost\n"
		"                             (neither done nor answered), as when the host died\n"
		"                             right after sending them\n"
		"  --qmap-version 1|5         QMAP version until WDA sets one (default 5)\n"
		"  --dl-max-size N            bytes per downlink aggregate, %d..%d (default %d);\n"
		"                             the most WDA grants\n"
		"  --dl-max-datagrams N       packets per downlink aggregate (default %d); the\n"
		"                             most WDA grants\n"
		"  --flush-usec N             send a partial aggregate after N us; 0 = as soon as\n"
		"                             the TUN is empty (default %d)\n"
		"  --csum-valid               QMAPv5: mark downlink checksums as verified\n"
		"  --no-offload               one packet per TUN read and write, no TSO/USO\n"
		"                             super-packets in nor coalesced ones out\n"
		"  --ul-rate BITS[k|M|G]      uplink air-interface rate, bits of IP per second\n"
		"                             (default 0: no limit)\n"
		"  --dl-rate BITS[k|M|G]      downlink rate: the TUN is read no faster\n"
		"  --modem-buffer BYTES       the modem's queue before the radio; while it is\n"
		"                             full, OUT transfers stay pending (NAKed)\n"
		"  --network-delay MS         one-way delay on the network side (both halves of\n"
		"                             the round trip are applied to the uplink)\n"
		"  --dl-buffer PACKETS        the network's downlink buffer in front of --dl-rate\n"
		"                             (a base station's; default the TUN's 500)\n"
		"  --rate-file PATH           'ul-rate=BITS dl-rate=BITS', read again on SIGHUP\n"
		"  --ffs DIR                  also be a USB device: an EC25-style QMI function\n"
		"                             on the functionfs mounted at DIR (QMI mode only)\n"
		"  --ffs-faults PATH          on SIGRTMIN+4, make the faults of PATH's 'KIND [N]'\n"
		"                             lines (stall, short, out-stall, out-timeout,\n"
		"                             cmd-stall, int-silent; sim-ffs.h), then remove it\n"
		"  --gadgetfs DIR             also be a USB device: an EM7455-style MBIM device\n"
		"                             on the gadgetfs mounted at DIR (--mbim only)\n"
		"  --gadgetfs-slow-commands US  take a command's data US microseconds after its\n"
		"                             request, so that the host's next control request\n"
		"                             aborts it (a lost command; see sim-gadgetfs.h)\n"
		"  --mbim                     an MBIM function: MBIM control, NTB data; session\n"
		"                             N carries mux N+1\n"
		"  --ntb 16|32                NTB formats offered: NTB16 only (default), or\n"
		"                             NTB16 and NTB32 (the host picks with "
		"SET_NTB_FORMAT)\n"
		"  --ntb-in-max-size N        dwNtbInMaxSize (default %d)\n"
		"  --ntb-out-max-size N       dwNtbOutMaxSize (default %d)\n"
		"  --ntb-out-divisor N        wNdpOutDivisor (default %d)\n"
		"  --ntb-out-remainder N      wNdpOutPayloadRemainder (default 0)\n"
		"  --ntb-out-alignment N      wNdpOutAlignment (default %d)\n"
		"  --ntb-out-max-datagrams N  wNtbOutMaxDatagrams, 0 = no limit (default %d);\n"
		"                             an OUT NTB breaking any of these is dropped\n"
		"  --max-control-message N    wMaxControlMessage (default %d)\n"
		"  --max-sessions N           MBIM sessions active at once (default %d)\n"
		"  --qmi-over-mbim            list the QMI-over-MBIM service (not served)\n"
		"  --sim-pin PIN              the SIM's PIN1 is enabled (locked at start) with\n"
		"                             this PIN, 3 tries, PUK 12345678 with 10 tries\n"
		"                             (without: PIN1 1234, disabled); QMI and MBIM;\n"
		"                             after --profile\n"
		"  --no-sim                   no SIM card in the slot, QMI and MBIM\n"
		"  --msisdn NUMBER            the SIM's own number, QMI and MBIM (default: not\n"
		"                             provisioned)\n"
		"  --sms-inbox PATH           SIGRTMIN+2 delivers the SMS-DELIVER PDUs in PATH "
		"(hex,\n"
		"                             one a line, SMSC address first), then removes "
		"it\n"
		"  --sms-outbox PATH          append every SMS-SUBMIT sent as a hex line\n"
		"  --roaming-file PATH        registered roaming while PATH exists (default:\n"
		"                             home), QMI and MBIM\n"
		"  --signal-file PATH         QMI LTE signal \"RSSI RSRQ RSRP SNR\" (dBm, dB,\n"
		"                             dBm, 0.1 dB) read from PATH while it exists\n"
		"  --no-dms-uim               firmware without DMS UIM messages: SIM via UIM only\n"
		"  --sim-state STATE          MBIM SIM: initialized (default), not-initialized,\n"
		"                             sim-not-inserted, bad-sim, device-locked (PIN)\n"
		"  --inject KIND[,KIND]       garbage, unknown-mux, command, oversize (QMI);\n"
		"                             bad-signature, bad-block-length, ndp-loop,\n"
		"                             datagram-outside (MBIM)\n"
		"  --inject-every N           inject into every Nth downlink aggregate (default "
		"%d)\n"
		"  --stats-file PATH          write counters here on SIGUSR1 and at exit\n"
		"  -v, --verbose              debug logging\n"
		"  -h, --help                 this help\n"
		"\n"
		"Profiles:\n%s"
		"\n"
		"Signals: SIGUSR1 writes the counters, SIGUSR2 makes the network drop every\n"
		"connected session, SIGRTMIN / SIGRTMIN+1 send QMAP FLOW_DISABLE / FLOW_ENABLE\n"
		"for every mux, SIGRTMIN+3 resets the MBIM function (closed, its sessions gone,\n"
		"as firmware after a crash), SIGRTMIN+4 makes the --ffs-faults, SIGHUP reads\n"
		"--rate-file again, SIGTERM/SIGINT exit.\n",
		SIM_QMI_DATA_INTERFACE_DEFAULT, SIM_NETDEV_DEFAULT, CONFIG_MTU_DEFAULT,
		CONFIG_MUX_ID_MIN, CONFIG_MUX_ID_MAX, SIM_QMI_APN_DEFAULT, SIM_QMI_MTU_DEFAULT,
		CONFIG_DL_MAX_SIZE_MIN, CONFIG_DL_MAX_SIZE_MAX, CONFIG_DL_MAX_SIZE_DEFAULT,
		SIM_DL_MAX_DATAGRAMS_DEFAULT, SIM_FLUSH_USEC_DEFAULT, SIM_NTB_IN_MAX_SIZE_DEFAULT,
		SIM_NTB_OUT_MAX_SIZE_DEFAULT, SIM_NTB_DIVISOR_DEFAULT, SIM_NTB_ALIGNMENT_DEFAULT,
		SIM_NTB_OUT_MAX_DGRAMS_DEFAULT, SIM_MBIM_MAX_CONTROL_DEFAULT,
		SIM_MBIM_MAX_SESSIONS_DEFAULT, SIM_INJECT_EVERY_DEFAULT, profile_list());
}

static int parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *ret)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || v < min || v > max) {
		fprintf(stderr, "qmapd-sim: invalid %s '%s': expected %u..%u\n", opt, arg, min,
			max);
		return -EINVAL;
	}
	*ret = (uint32_t)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct sim_options *o)
{
	char err[SIM_ERROR_MAX];
	uint32_t v;
	int c;

	while ((c = getopt_long(argc, argv, "hv", options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		case 'v':
			log_set_max_level(LOG_DEBUG);
			break;
		case OPT_SOCKET:
			if (optarg[0] == '\0' || strlen(optarg) >= sizeof(o->socket_path)) {
				fprintf(stderr, "qmapd-sim: invalid --socket '%s': 1..%zu bytes\n",
					optarg, sizeof(o->socket_path) - 1);
				return -EINVAL;
			}
			strcpy(o->socket_path, optarg);
			break;
		case OPT_NETDEV:
			if (optarg[0] == '\0' || strlen(optarg) >= sizeof(o->netdev)) {
				fprintf(stderr, "qmapd-sim: invalid --netdev '%s': 1..%zu bytes\n",
					optarg, sizeof(o->netdev) - 1);
				return -EINVAL;
			}
			strcpy(o->netdev, optarg);
			break;
		case OPT_MTU:
			if (parse_u32("--mtu", optarg, SIM_MTU_MIN, 65535, &o->mtu) < 0)
				return -EINVAL;
			break;
		case OPT_NET_ADDRESS:
			if (sim_options_add_net_address(o, optarg, err, sizeof(err)) < 0)
				goto bad;
			break;
		case OPT_MUX:
			if (sim_options_add_mux(o, optarg, err, sizeof(err)) < 0)
				goto bad;
			break;
		case OPT_QMAP_VERSION:
			if (strcmp(optarg, "1") == 0) {
				o->qmap_version = QMAP_V1;
			} else if (strcmp(optarg, "5") == 0) {
				o->qmap_version = QMAP_V5;
			} else {
				fprintf(stderr,
					"qmapd-sim: invalid --qmap-version '%s': expected 1 or 5\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_DL_MAX_SIZE:
			if (parse_u32("--dl-max-size", optarg, CONFIG_DL_MAX_SIZE_MIN,
				      CONFIG_DL_MAX_SIZE_MAX, &o->dl_max_size) < 0)
				return -EINVAL;
			break;
		case OPT_DL_MAX_DATAGRAMS:
			if (parse_u32("--dl-max-datagrams", optarg, 1, 65536,
				      &o->dl_max_datagrams) < 0)
				return -EINVAL;
			break;
		case OPT_FLUSH_USEC:
			if (parse_u32("--flush-usec", optarg, 0, SIM_FLUSH_USEC_MAX,
				      &o->flush_usec) < 0)
				return -EINVAL;
			break;
		case OPT_CSUM_VALID:
			o->csum_valid = true;
			break;
		case OPT_INJECT:
			if (sim_parse_inject(optarg, &o->inject, err, sizeof(err)) < 0)
				goto bad;
			break;
		case OPT_INJECT_EVERY:
			if (parse_u32("--inject-every", optarg, 1, UINT32_MAX, &v) < 0)
				return -EINVAL;
			o->inject_every = v;
			break;
		case OPT_STATS_FILE:
			stats_file = optarg;
			break;
		case OPT_APN:
			if (sim_options_add_apn(o, optarg, err, sizeof(err)) < 0)
				goto bad;
			break;
		case OPT_NO_QMAPV5:
			o->no_qmapv5 = true;
			break;
		case OPT_SESSION_MTU:
			if (parse_u32("--session-mtu", optarg, SIM_MTU_MIN, 65535,
				      &o->session_mtu) < 0)
				return -EINVAL;
			break;
		case OPT_ALWAYS_CONNECTED:
			o->always_connected = true;
			break;
		case OPT_KEEP_SESSIONS:
			o->keep_sessions = true;
			break;
		case OPT_LOSE_RELEASES:
			if (parse_u32("--lose-releases", optarg, 0, 255, &v) < 0)
				return -EINVAL;
			o->lose_releases = v;
			break;
		case OPT_NO_OFFLOAD:
			o->offload = false;
			break;
		case OPT_PROFILE:
			if (sim_options_apply_profile(o, optarg, err, sizeof(err)) < 0)
				goto bad;
			break;
		case OPT_DATA_INTERFACE:
			if (parse_u32("--data-interface", optarg, 0, 255, &v) < 0)
				return -EINVAL;
			o->quirks.data_interface = (uint8_t)v;
			break;
		case OPT_MAX_PDN_PER_APN:
			if (parse_u32("--max-pdn-per-apn", optarg, 0, CONFIG_MUX_ID_MAX, &v) < 0)
				return -EINVAL;
			o->quirks.max_pdn_per_apn = v;
			break;
		case OPT_REGISTER_DELAY:
			if (parse_u32("--register-delay", optarg, 0, 600000, &v) < 0)
				return -EINVAL;
			o->quirks.register_delay_ms = v;
			break;
		case OPT_SILENT:
			o->quirks.silent = true;
			break;
		case OPT_IGNORE_DL_GRANT:
			o->ignore_dl_grant = true;
			break;
		case OPT_GRANT_QMAPV1:
			o->quirks.v5_granted_as_v1 = true;
			break;
		case OPT_UL_RATE:
		case OPT_DL_RATE:
			if (sim_parse_rate(optarg, c == OPT_UL_RATE ? &o->ul_rate : &o->dl_rate) <
			    0) {
				fprintf(stderr,
					"qmapd-sim: invalid --%s '%s': expected BITS[k|M|G]\n",
					c == OPT_UL_RATE ? "ul-rate" : "dl-rate", optarg);
				return -EINVAL;
			}
			break;
		case OPT_MODEM_BUFFER:
			if (parse_u32("--modem-buffer", optarg, 0, 64u << 20, &o->modem_buffer) < 0)
				return -EINVAL;
			break;
		case OPT_NETWORK_DELAY:
			if (parse_u32("--network-delay", optarg, 0, 10000, &o->network_delay_ms) <
			    0)
				return -EINVAL;
			break;
		case OPT_DL_BUFFER:
			if (parse_u32("--dl-buffer", optarg, 1, 100000, &o->dl_buffer) < 0)
				return -EINVAL;
			break;
		case OPT_RATE_FILE:
			if (optarg[0] == '\0' || strlen(optarg) >= sizeof(o->rate_file)) {
				fprintf(stderr, "qmapd-sim: invalid --rate-file '%s'\n", optarg);
				return -EINVAL;
			}
			strcpy(o->rate_file, optarg);
			break;
		case OPT_MBIM:
			o->mbim = true;
			break;
		case OPT_FFS:
			ffs_dir = optarg;
			break;
		case OPT_FFS_FAULTS:
			ffs_faults = optarg;
			break;
		case OPT_GADGETFS:
			gadgetfs_dir = optarg;
			break;
		case OPT_GADGETFS_SLOW_COMMANDS:
			if (parse_u32("--gadgetfs-slow-commands", optarg, 0, 1000000,
				      &gadgetfs_slow_us) < 0)
				return -EINVAL;
			break;
		case OPT_NTB:
			if (strcmp(optarg, "16") == 0) {
				o->ntb.formats = NTB_FORMATS_16;
			} else if (strcmp(optarg, "32") == 0) {
				o->ntb.formats = NTB_FORMATS_16 | NTB_FORMATS_32;
			} else {
				fprintf(stderr,
					"qmapd-sim: invalid --ntb '%s': expected 16 or 32\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_NTB_IN_MAX_SIZE:
			if (parse_u32("--ntb-in-max-size", optarg, NTB_MIN_IN_SIZE, 65536,
				      &o->ntb.in_max_size) < 0)
				return -EINVAL;
			break;
		case OPT_NTB_OUT_MAX_SIZE:
			if (parse_u32("--ntb-out-max-size", optarg, NTB_MIN_OUT_SIZE, 65536,
				      &o->ntb.out_max_size) < 0)
				return -EINVAL;
			break;
		case OPT_NTB_OUT_DIVISOR:
		case OPT_NTB_OUT_REMAINDER:
		case OPT_NTB_OUT_ALIGNMENT:
		case OPT_NTB_OUT_MAX_DATAGRAMS:
		case OPT_MAX_CONTROL_MESSAGE: {
			static const char *const names[] = {
				[OPT_NTB_OUT_DIVISOR - OPT_NTB_OUT_DIVISOR] = "--ntb-out-divisor",
				[OPT_NTB_OUT_REMAINDER - OPT_NTB_OUT_DIVISOR] =
					"--ntb-out-remainder",
				[OPT_NTB_OUT_ALIGNMENT - OPT_NTB_OUT_DIVISOR] =
					"--ntb-out-alignment",
				[OPT_NTB_OUT_MAX_DATAGRAMS - OPT_NTB_OUT_DIVISOR] =
					"--ntb-out-max-datagrams",
				[OPT_MAX_CONTROL_MESSAGE - OPT_NTB_OUT_DIVISOR] =
					"--max-control-message",
			};
			if (parse_u32(names[c - OPT_NTB_OUT_DIVISOR], optarg, 0, 65535, &v) < 0)
				return -EINVAL;
			if (c == OPT_NTB_OUT_DIVISOR)
				o->ntb.out_divisor = (uint16_t)v;
			else if (c == OPT_NTB_OUT_REMAINDER)
				o->ntb.out_remainder = (uint16_t)v;
			else if (c == OPT_NTB_OUT_ALIGNMENT)
				o->ntb.out_alignment = (uint16_t)v;
			else if (c == OPT_NTB_OUT_MAX_DATAGRAMS)
				o->ntb.out_max_datagrams = (uint16_t)v;
			else
				o->mbim_max_control = (uint16_t)v;
			break;
		}
		case OPT_MAX_SESSIONS:
			if (parse_u32("--max-sessions", optarg, 1, SIM_MBIM_SESSIONS,
				      &o->mbim_max_sessions) < 0)
				return -EINVAL;
			break;
		case OPT_SIM_PIN:
			if (strlen(optarg) < 4 || strlen(optarg) > SIM_QMI_PIN_MAX ||
			    strspn(optarg, "0123456789") != strlen(optarg)) {
				fprintf(stderr, "qmapd-sim: invalid --sim-pin '%s': 4..%d digits\n",
					optarg, SIM_QMI_PIN_MAX);
				return -EINVAL;
			}
			snprintf(o->quirks.sim_pin, sizeof(o->quirks.sim_pin), "%s", optarg);
			break;
		case OPT_MSISDN:
			if (!*optarg || strlen(optarg) > SIM_QMI_MSISDN_MAX ||
			    strspn(optarg, "+0123456789") != strlen(optarg)) {
				fprintf(stderr, "qmapd-sim: invalid --msisdn '%s': 1..%d digits\n",
					optarg, SIM_QMI_MSISDN_MAX);
				return -EINVAL;
			}
			snprintf(o->quirks.msisdn, sizeof(o->quirks.msisdn), "%s", optarg);
			break;
		case OPT_ROAMING_FILE:
			if (!*optarg || strlen(optarg) >= sizeof(o->quirks.roaming_file)) {
				fprintf(stderr, "qmapd-sim: invalid --roaming-file '%s'\n", optarg);
				return -EINVAL;
			}
			snprintf(o->quirks.roaming_file, sizeof(o->quirks.roaming_file), "%s",
				 optarg);
			break;
		case OPT_SMS_INBOX:
			if (!*optarg || strlen(optarg) >= sizeof(sms_inbox)) {
				fprintf(stderr, "qmapd-sim: invalid --sms-inbox '%s'\n", optarg);
				return -EINVAL;
			}
			snprintf(sms_inbox, sizeof(sms_inbox), "%s", optarg);
			break;
		case OPT_SMS_OUTBOX:
			if (!*optarg || strlen(optarg) >= sizeof(o->quirks.sms_outbox)) {
				fprintf(stderr, "qmapd-sim: invalid --sms-outbox '%s'\n", optarg);
				return -EINVAL;
			}
			snprintf(o->quirks.sms_outbox, sizeof(o->quirks.sms_outbox), "%s", optarg);
			break;
		case OPT_SIGNAL_FILE:
			if (!*optarg || strlen(optarg) >= sizeof(o->quirks.signal_file)) {
				fprintf(stderr, "qmapd-sim: invalid --signal-file '%s'\n", optarg);
				return -EINVAL;
			}
			snprintf(o->quirks.signal_file, sizeof(o->quirks.signal_file), "%s",
				 optarg);
			break;
		case OPT_NO_DMS_UIM:
			o->quirks.no_dms_uim = true;
			break;
		case OPT_NO_SIM:
			o->quirks.no_sim = true;
			break;
		case OPT_QMI_OVER_MBIM:
			o->qmi_over_mbim = true;
			break;
		case OPT_SIM_STATE:
			if (sim_mbim_parse_sim_state(optarg, &o->mbim_sim_state) < 0) {
				fprintf(stderr,
					"qmapd-sim: --sim-state: expected initialized, "
					"not-initialized, sim-not-inserted, bad-sim or "
					"device-locked, not '%s'\n",
					optarg);
				return -EINVAL;
			}
			break;
		default:
			/* getopt_long already said what was wrong. */
			fprintf(stderr, "Try 'qmapd-sim --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "qmapd-sim: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (o->socket_path[0] == '\0') {
		fprintf(stderr, "qmapd-sim: --socket PATH is required\n");
		return -EINVAL;
	}
	if (sim_options_validate(o, err, sizeof(err)) < 0)
		goto bad;
	if (o->csum_valid && o->qmap_version != QMAP_V5 && o->no_qmapv5)
		fprintf(stderr, "qmapd-sim: --csum-valid has no effect without QMAPv5\n");
	return 0;

bad:
	fprintf(stderr, "qmapd-sim: %s\n", err);
	return -EINVAL;
}

static void print_stats_fronts(FILE *f, const void *userdata)
{
	sim_print_stats(userdata, f);
	if (ffs_front)
		sim_ffs_print_stats(ffs_front, f);
	if (gadgetfs_front)
		sim_gadgetfs_print_stats(gadgetfs_front, f);
}

static void write_stats(const struct sim *s)
{
	if (!stats_file)
		return;
	if (!ffs_front && !gadgetfs_front) {
		sim_write_stats_file(s, stats_file);
		return;
	}
	/* The front end's counters in the same file, which a reader takes whole. */
	int r = atomic_file_write(stats_file, print_stats_fronts, s);
	if (r < 0)
		log_error_errno(r, "qmapd-sim: cannot write stats to %s", stats_file);
}

static void on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	log_info("qmapd-sim: signal %d, exiting", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

static void on_usr1(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	write_stats(w->data);
}

static void on_usr2(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	unsigned n = sim_drop_sessions(w->data);
	log_info("qmapd-sim: SIGUSR2, the network dropped %u session%s", n, n == 1 ? "" : "s");
}

/* SIGRTMIN+2: the network delivers the SMS-DELIVER PDUs of --sms-inbox (one hex line each,
 * SMSC address first), then the file is removed. */
static void on_sms(struct ev_loop *loop, ev_signal *w, int revents)
{
	char line[2 * 176 + 2];
	(void)loop;
	(void)revents;
	FILE *f = sms_inbox[0] ? fopen(sms_inbox, "re") : NULL;

	if (!f) {
		log_warning("qmapd-sim: no --sms-inbox to deliver from");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		uint8_t pdu[176];
		size_t n = 0;
		line[strcspn(line, "\r\n")] = '\0';
		for (const char *p = line; p[0] && p[1] && n < sizeof(pdu); p += 2) {
			unsigned v;
			if (sscanf(p, "%2x", &v) != 1)
				break;
			pdu[n++] = (uint8_t)v;
		}
		int r = sim_deliver_sms(w->data, pdu, n);
		if (r < 0)
			log_warning_errno(r, "qmapd-sim: cannot deliver an SMS of %zu bytes", n);
	}
	fclose(f);
	unlink(sms_inbox);
}

static void on_hup(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	sim_reload_rates(w->data);
}

/* SIGRTMIN+3: the MBIM function resets itself (firmware crash): closed, sessions gone. */
static void on_function_reset(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	int r = sim_reset_function(w->data);
	if (r < 0)
		log_warning_errno(r, "qmapd-sim: SIGRTMIN+3: no MBIM function to reset");
	else
		log_info("qmapd-sim: SIGRTMIN+3, the MBIM function reset itself, %d session%s gone",
			 r, r == 1 ? "" : "s");
}

/* SIGRTMIN+4: the USB device makes the faults of --ffs-faults ("KIND [N]" lines, sim-ffs.h),
 * then the file is removed. */
static void on_ffs_faults(struct ev_loop *loop, ev_signal *w, int revents)
{
	char line[128], kind[32];
	(void)loop;
	(void)w;
	(void)revents;
	FILE *f = ffs_faults && ffs_front ? fopen(ffs_faults, "re") : NULL;

	if (!f) {
		log_warning("qmapd-sim: SIGRTMIN+4: no --ffs-faults to read (or no --ffs)");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned n = 1;
		int k = sscanf(line, "%31s %u", kind, &n);
		if (k < 1)
			continue;
		if (sim_ffs_inject(ffs_front, kind, n) < 0)
			log_warning("qmapd-sim: --ffs-faults: no fault '%s'", kind);
	}
	fclose(f);
	unlink(ffs_faults);
}

/* SIGRTMIN: the modem asks qmapd to stop sending on every mux; SIGRTMIN+1: to resume. */
static void on_flow(struct ev_loop *loop, ev_signal *w, int revents)
{
	bool enable = w->signum != SIGRTMIN;
	(void)loop;
	(void)revents;
	int r = sim_send_flow_control(w->data, enable);
	if (r < 0)
		log_warning_errno(r, "qmapd-sim: cannot send flow %s",
				  enable ? "enable" : "disable");
	else
		log_info("qmapd-sim: flow %s sent for %d mux(es)", enable ? "enable" : "disable",
			 r);
}

int main(int argc, char **argv)
{
	struct sim_options *opts = malloc(sizeof(*opts));
	struct sim *s = NULL;
	ev_signal sig_term, sig_int, sig_usr1, sig_usr2, sig_flow_off, sig_flow_on, sig_hup,
		sig_sms, sig_reset, sig_ffs_faults;
	int ret = EXIT_FAILURE;

	log_glib_init(); /* libqmi's and libmbim's messages as qmapd-sim's lines */
	if (!opts) {
		log_error_errno(ENOMEM, "qmapd-sim: cannot allocate");
		return EXIT_FAILURE;
	}
	sim_options_init(opts);
	if (parse_args(argc, argv, opts) < 0) {
		free(opts);
		return 2;
	}

	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		log_error("qmapd-sim: cannot create the event loop");
		goto cleanup;
	}
	/* Sends use MSG_NOSIGNAL; this covers anything else writing to a closed peer. */
	signal(SIGPIPE, SIG_IGN);

	if (sim_new(loop, opts, &s) < 0)
		goto cleanup;

	ev_signal_init(&sig_term, on_stop, SIGTERM);
	ev_signal_init(&sig_int, on_stop, SIGINT);
	ev_signal_init(&sig_usr1, on_usr1, SIGUSR1);
	ev_signal_init(&sig_usr2, on_usr2, SIGUSR2);
	sig_usr1.data = sig_usr2.data = s;
	ev_signal_start(loop, &sig_term);
	ev_signal_start(loop, &sig_int);
	ev_signal_start(loop, &sig_usr1);
	ev_signal_start(loop, &sig_usr2);
	ev_signal_init(&sig_flow_off, on_flow, SIGRTMIN);
	ev_signal_init(&sig_flow_on, on_flow, SIGRTMIN + 1);
	sig_flow_off.data = sig_flow_on.data = s;
	ev_signal_start(loop, &sig_flow_off);
	ev_signal_start(loop, &sig_flow_on);
	ev_signal_init(&sig_sms, on_sms, SIGRTMIN + 2);
	sig_sms.data = s;
	ev_signal_start(loop, &sig_sms);
	ev_signal_init(&sig_hup, on_hup, SIGHUP);
	sig_hup.data = s;
	ev_signal_start(loop, &sig_hup);
	ev_signal_init(&sig_reset, on_function_reset, SIGRTMIN + 3);
	sig_reset.data = s;
	ev_signal_start(loop, &sig_reset);
	ev_signal_init(&sig_ffs_faults, on_ffs_faults, SIGRTMIN + 4);
	ev_signal_start(loop, &sig_ffs_faults);

	if (sim_start(s) < 0)
		goto cleanup;
	if (ffs_dir) {
		if (opts->mbim) {
			log_error("qmapd-sim: --ffs plays a QMI function only, not with --mbim");
			goto cleanup;
		}
		/* The front end lives as long as the process: its threads block in the endpoints. */
		if (sim_ffs_start(ffs_dir, opts->socket_path, &ffs_front) < 0)
			goto cleanup;
	}
	if (gadgetfs_dir) {
		if (!opts->mbim) {
			log_error("qmapd-sim: --gadgetfs plays an MBIM function only: add --mbim");
			goto cleanup;
		}
		/* Like --ffs: the front end lives as long as the process. */
		if (sim_gadgetfs_start(gadgetfs_dir, opts->socket_path, gadgetfs_slow_us,
				       &gadgetfs_front) < 0)
			goto cleanup;
	}
	log_info("qmapd-sim: ready");

	ev_run(loop, 0);
	write_stats(s);
	ret = EXIT_SUCCESS;

cleanup:
	sim_free(s);
	free(opts);
	return ret;
}
