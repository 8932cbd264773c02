/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's data side: the modem at the transport boundary (docs/ARCHITECTURE.md "qmapd-sim").
 *
 * Modem side: an AF_UNIX SOCK_SEQPACKET listener speaking the `sim` transport's wire format
 * (struct transport_sim_header + one transfer per message); one qmapd at a time.
 * Network side: a TUN device in the sim's own namespace. Bulk OUT aggregates from qmapd are
 * deaggregated and each IP packet is written to the TUN; packets the kernel routes into the
 * TUN are QMAP-aggregated on the mux whose prefix holds their destination (longest prefix)
 * and sent as bulk IN messages.
 *
 * Network side (sim-net.h): with offload (the default; --no-offload turns it off) the TUN
 * carries a virtio-net header with checksum, TSO and USO offloads, so the kernel hands over
 * super-packets of up to 64 KiB and takes coalesced ones; without, one packet per read/write.
 *
 * Downlink aggregation: each IP packet lies in the aggregate behind room for its QMAP header,
 * payload padded with zeros to a multiple of 4. Without offload packets are read straight
 * there; with offload a super-packet is cut there into MTU-sized segments with their
 * checksums computed (each one a frame and a packet in every counter below), continuing in
 * the next aggregate when one fills. An aggregate leaves when the next packet might not fit,
 * when dl_max_datagrams real packets are in it, when flush_usec passed since its first
 * packet, or (flush_usec 0) as soon as the TUN has nothing more.
 *
 * Fault injection: in every inject_every-th downlink aggregate, in this order before the
 * real frames: `garbage` (an 8-byte non-IP payload starting 0xde on the first configured
 * mux), `unknown-mux` (a valid 32-byte IPv4/UDP packet on mux SIM_INJECT_UNKNOWN_MUX_ID),
 * `command` (a FLOW_ENABLE REQUEST on the first configured mux, transaction ids 1, 2, ...);
 * and after the real frames `oversize` (a data header whose pkt_len runs past the end of
 * the transfer). Injected frames do not count towards dl_max_datagrams.
 *
 * Uplink checksums: a QMAPv5 frame with the "compute checksum" bit gets its TCP/UDP
 * checksum computed before it is written to the TUN, as a modem would
 * (counter ul_csum_computed). With offload, the packets of up to SIM_UL_BATCH transfers read
 * in one go are coalesced per mux and flow (gro.c) before they are written; per-mux ul_*
 * count packets once written, a super-packet as its segments.
 *
 * The first message of every connection is a TRANSPORT_EP_DESCRIPTOR naming the data
 * interface (quirks.data_interface), as qmapd would read it from a USB descriptor.
 *
 * Profiles (struct sim_profile, sim_profiles[]): a documented modem family's limits and QMI
 * quirks. A granted DL minimum padding puts that many zero bytes in front of every downlink
 * frame; ignore_dl_grant keeps the command line's DL size whatever was granted.
 *
 * Radio (sim-radio.h; --ul-rate, --dl-rate, --modem-buffer, --network-delay, --rate-file):
 * uplink packets go through a modem buffer, an air interface at ul_rate and the network delay
 * before the TUN; while the buffer cannot take the next OUT transfer the socket is left unread
 * (ul_modem_stalls), so the transfer stays pending in qmapd. Downlink, the TUN is read no
 * faster than dl_rate (dl_paced), so the network's queue is the TUN's: a base station's buffer
 * of dl_buffer packets (--dl-buffer; the kernel's 500 by default), where a download's standing
 * queue forms unless qmapd's downlink shaper keeps it. SIGHUP re-reads the rate file.
 *
 * Control side (sim-qmi.h): every TRANSPORT_EP_CONTROL message is one QMUX message for the
 * QMI responder; its responses and indications go back as TRANSPORT_EP_CONTROL messages,
 * in the order the modem produced them relative to downlink aggregates (held in a small
 * queue while the socket is full; qmi_send_dropped counts what even that could not hold,
 * or a send that failed outright). A granted WDA data format switches the data
 * side (QMAP version, DL max size and datagrams) before the host reads the grant; until
 * then the command line's values apply, and a new qmapd connection keeps the last grant
 * (clients and sessions end with the connection, as with a modem whose DTR drops).
 *
 * MBIM mode (opts.mbim, --mbim): the control side is sim-mbim.h (session id N = mux N+1) and
 * the data travels in NTBs (ntb.h) instead of QMAP aggregates:
 *  - the descriptor message says TRANSPORT_SIM_FUNCTION_MBIM and carries opts.ntb as
 *    GET_NTB_PARAMETERS would, wMaxControlMessage, wMaxSegmentSize and the session MTU as wMTU;
 *    TRANSPORT_EP_CLASS_REQUEST messages set the NTB format and input size (transport.h), back
 *    to NTB16 and opts.ntb.in_max_size on every new connection;
 *  - downlink: each packet is read into a scratch buffer (with offload: cut into segments
 *    there), routed, and copied into the IN NTB with the codec's builder (one NDP per session,
 *    the function's IN divisor/remainder/alignment, at most the host's input size and
 *    dl_max_datagrams, or the 8-byte SET_NTB_INPUT_SIZE's limit if lower). An NTB leaves when
 *    the next packet does not fit, when it is full, or as flush_usec says. What was read while
 *    the socket is full waits (held) outside any NTB;
 *  - uplink: each OUT NTB is checked whole (sim-ntb.h) before any datagram goes on (strict:
 *    longer than out_max_size, any codec error, more than out_max_datagrams, an NDP off
 *    out_alignment or a datagram off out_divisor/out_remainder drops it; ul_ntb_dropped plus
 *    the reason);
 *  - injections: the NTB kinds, each its own transfer after every inject_every-th real NTB,
 *    a valid NTB with one IPv4 packet on session SIM_INJECT_UNKNOWN_MUX_ID - 1 broken as its
 *    name says (bad NTH signature, block length past the transfer, NDP naming itself as the
 *    next one, datagram past the block);
 *  - no QMAP flow control (sim_send_flow_control() is -EOPNOTSUPP).
 *
 * Mux addresses: `--mux ID=PREFIX[,PREFIX...]`. Downlink routing uses each prefix as a
 * network (host bits cleared). The first IPv4 and the first IPv6 prefix, host bits kept,
 * are the addresses a session on that mux hands to the host (192.0.2.2/24 -> host
 * 192.0.2.2/24, gateway 192.0.2.1).
 *
 * Data gating: like a modem, the sim carries a mux's traffic only while a QMI session
 * (either family) is up on it; other uplink frames and downlink packets are dropped and
 * counted (ul_no_session, dl_no_session). always_connected (--always-connected) turns this
 * off for data-plane tests that run qmapd without a control plane.
 *
 * Stats format (sim_print_stats(), also the --stats-file content), one item per line,
 * stable, every key always present:
 *   <key>=<u64>                        global counters, keys as in struct sim_stats:
 *     connections, connections_rejected, disconnects, ul_transfers, ul_bytes, ul_zlp,
 *     truncated, short_messages, ul_unknown_mux, ul_tun_dropped, ul_tun_errors,
 *     ul_csum_computed, control_messages, interrupt_messages, unknown_ep,
 *     dl_aggregates, dl_datagrams, dl_bytes, dl_no_route, dl_not_ip,
 *     dl_dropped_disconnected, dl_send_blocked, dl_tun_errors,
 *     ul_no_session, dl_no_session, qmi_send_dropped, ul_radio_dropped, ul_modem_stalls,
 *     ul_modem_buffer_max, ul_modem_late_takes, ul_modem_late_us, dl_paced, ul_ntb_dropped,
 *     ul_ntb_too_big,
 *     ul_ntb_too_many_datagrams, ul_ntb_misaligned_ndp, ul_ntb_misaligned_datagram,
 *     class_requests, class_stalled,
 *     then the QMI side's (struct sim_qmi_stats): qmi_requests, qmi_responses,
 *     qmi_indications, qmi_malformed, qmi_errors, qmi_sessions_started,
 *     qmi_sessions_failed, qmi_sessions_dropped, data_format_sets, qmi_silenced,
 *     endpoint_missing, endpoint_wrong, binds_with_endpoint, bind_interface, qmi_clients,
 *     low_power (a gauge: 1 while DMS is in low power),
 *     qmi_muxes_connected (a gauge), then the MBIM side's (struct sim_mbim_stats, 0 in QMI mode): mbim_requests,
 *     mbim_responses, mbim_indications, mbim_malformed, mbim_not_opened, mbim_errors,
 *     mbim_unsupported, mbim_fragments_in, mbim_fragments_out, mbim_sessions_started,
 *     mbim_sessions_failed, mbim_sessions_dropped
 *   malformed_<reason>=<u64>           one per enum qmap_error, reason = qmap_error_name()
 *   ul_ntb_malformed_<reason>=<u64>    one per enum ntb_error, reason = ntb_error_name()
 *   commands_<type>=<u64>              type: request, ack, unsupported, invalid, short
 *   injected_<kind>=<u64>              kind: garbage, unknown_mux, command, oversize,
 *                                      bad_signature, bad_block_length, ndp_loop,
 *                                      datagram_outside
 *   mux <id>: ul_packets=<u64> ul_bytes=<u64> dl_packets=<u64> dl_bytes=<u64> session=<0|1>
 *                                      one line per configured mux, ascending id; session:
 *                                      a QMI (MBIM) session is up (0 under always_connected
 *                                      unless one is)
 * Global ul_bytes/dl_bytes are transfer bytes (QMAP/NTB headers, padding, injections
 * included); in MBIM mode dl_aggregates/dl_datagrams count real NTBs and their datagrams;
 * per-mux *_bytes are IP bytes. Per-mux dl_* count packets put into an aggregate (lost again
 * only by a disconnect, which also counts them in dl_dropped_disconnected); dl_datagrams
 * counts those in sent aggregates. While qmapd is not connected everything the TUN emits
 * (including the kernel's own IPv6 RS/MLD) counts as dl_dropped_disconnected, while it is
 * connected such packets count as dl_no_route.
 */
#ifndef QMAPD_SIM_H
#define QMAPD_SIM_H

#include <ev.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "ntb.h"
#include "qmap.h"
#include "sim-mbim.h"
#include "sim-qmi.h"

#define SIM_NETDEV_DEFAULT	     "simnet0"
#define SIM_MAX_NET_ADDRESSES	     16
#define SIM_MUX_MAX_PREFIXES	     8
#define SIM_DL_MAX_DATAGRAMS_DEFAULT 32
#define SIM_FLUSH_USEC_DEFAULT	     500
#define SIM_FLUSH_USEC_MAX	     1000000
#define SIM_INJECT_EVERY_DEFAULT     100
#define SIM_INJECT_UNKNOWN_MUX_ID    200
#define SIM_MTU_MIN		     576
/* The MTU must leave room in an aggregate for the injected frames and both headers. */
#define SIM_DL_RESERVED 128
#define SIM_ERROR_MAX	256

/* MBIM defaults (no public capture of a module's GET_NTB_PARAMETERS was found): 16 KiB both
 * ways, Linux cdc_ncm's own NTB size (docs/PROTOCOLS.md §3.4); divisor and alignment 4, the
 * smallest a function may declare; no remainder; a datagram limit given (strict: 32, what the
 * QMI side grants uplink); wMaxSegmentSize 1500, the usual Ethernet-sized segment. */
#define SIM_NTB_IN_MAX_SIZE_DEFAULT    16384
#define SIM_NTB_OUT_MAX_SIZE_DEFAULT   16384
#define SIM_NTB_DIVISOR_DEFAULT	       4
#define SIM_NTB_ALIGNMENT_DEFAULT      4
#define SIM_NTB_OUT_MAX_DGRAMS_DEFAULT 32
#define SIM_MBIM_MAX_SEGMENT_DEFAULT   1500
/* Room an MTU-sized packet needs in an NTB beyond itself: NTH32, NDP32 with its entry and
 * the null one, alignment and divisor slack. */
#define SIM_NTB_RESERVED 128

enum sim_inject {
	/* QMAP (QMI mode) */
	SIM_INJECT_GARBAGE,
	SIM_INJECT_UNKNOWN_MUX,
	SIM_INJECT_COMMAND,
	SIM_INJECT_OVERSIZE,
	/* NTB (MBIM mode): each its own transfer, between two real NTBs */
	SIM_INJECT_BAD_SIGNATURE,
	SIM_INJECT_BAD_BLOCK_LENGTH,
	SIM_INJECT_NDP_LOOP,
	SIM_INJECT_DATAGRAM_OUTSIDE,
	_SIM_INJECT_MAX,
};
#define SIM_INJECT_QMAP_MASK 0x0fu
#define SIM_INJECT_NTB_MASK  0xf0u

struct sim_mux_options {
	bool present;
	struct config_prefix prefix[SIM_MUX_MAX_PREFIXES]; /* networks: host bits cleared */
	unsigned n_prefix;
	/* The first IPv4/IPv6 prefix as given (host bits kept): the session's address.
	 * family 0 = none given. */
	struct config_prefix host4;
	struct config_prefix host6;
};

/*
 * A documented modem family (docs/PROTOCOLS.md §5, each row with its public source): the
 * data format limits it grants and how its QMI side checks requests. --profile NAME sets
 * these; options given after it override them.
 */
struct sim_profile {
	const char *name;
	const char *summary; /* modem family and firmware it reproduces */
	bool no_qmapv5;	     /* QMAP v1 only (refuses protocols 9 and 8) */
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t ul_max_size;
	uint32_t ul_max_datagrams;
	struct sim_qmi_quirks quirks;
};

/* The profile table, ended by an entry with name NULL. */
extern const struct sim_profile sim_profiles[];

struct sim_options {
	char socket_path[108]; /* sizeof(sockaddr_un.sun_path) */
	const char *profile;   /* name of the profile applied, "default" without one */
	char netdev[IFNAMSIZ];
	uint32_t mtu;
	struct config_prefix net_address[SIM_MAX_NET_ADDRESSES];
	unsigned n_net_address;
	struct sim_mux_options mux[CONFIG_MUX_ID_MAX + 1]; /* by mux id; [0] unused */
	enum qmap_version qmap_version;
	uint32_t dl_max_size;
	uint32_t dl_max_datagrams;
	uint32_t flush_usec; /* 0: flush when the TUN has nothing more to read */
	bool csum_valid;     /* QMAPv5: set the "checksum valid" bit on downlink frames */
	bool offload;	     /* TUN with virtio-net header, TSO/USO in, GRO out (default) */
	unsigned inject;     /* bit set of 1 << enum sim_inject */
	uint32_t inject_every;

	/* The radio (sim-radio.h); all 0: none, transfers go to the TUN as they come. */
	uint64_t ul_rate;	   /* bits of IP packet per second at the air interface */
	uint64_t dl_rate;	   /* the same downlink: the TUN is read no faster */
	uint32_t modem_buffer;	   /* bytes the modem takes before it NAKs OUT transfers */
	uint32_t network_delay_ms; /* one way, on the network side */
	uint32_t dl_buffer;	   /* packets the network's downlink queue holds; 0: the kernel's */
	char rate_file[256];	   /* "ul-rate=BITS dl-rate=BITS", read again on SIGHUP */

	/* Control side. */
	bool always_connected;	/* carry data without a QMI session */
	bool keep_sessions;	/* a disconnect keeps clients and sessions (a host crash) */
	unsigned lose_releases; /* QMI: lose the first N Release Client ID requests */
	bool no_qmapv5;		/* refuse a QMAPv5 data format */
	uint32_t ul_max_size;	/* the most WDA grants uplink */
	uint32_t ul_max_datagrams;
	struct sim_qmi_quirks quirks;
	bool ignore_dl_grant; /* send aggregates of dl_max_size whatever was granted */
	uint32_t session_mtu;
	struct sim_qmi_apn apn[SIM_QMI_MAX_APNS];
	unsigned n_apn; /* 0: the default APN "internet" without credentials */

	/* MBIM (--mbim): control by sim-mbim.h, data in NTBs. ntb holds what GET_NTB_PARAMETERS
	 * answers (formats: NTB16, or NTB16 and NTB32 with --ntb 32). */
	bool mbim;
	struct ntb_params ntb;
	uint16_t mbim_max_control; /* wMaxControlMessage */
	uint16_t mbim_max_segment; /* wMaxSegmentSize */
	uint32_t mbim_max_sessions;
	bool qmi_over_mbim;
	uint32_t mbim_sim_state; /* MbimSubscriberReadyState answered (--sim-state) */
};

struct sim_mux_stats {
	uint64_t ul_packets;
	uint64_t ul_bytes;
	uint64_t dl_packets;
	uint64_t dl_bytes;
};

struct sim_stats {
	uint64_t connections;
	uint64_t connections_rejected; /* a second qmapd while one was connected */
	uint64_t disconnects;

	uint64_t ul_transfers; /* bulk OUT messages */
	uint64_t ul_bytes;     /* their transfer bytes */
	uint64_t ul_zlp;
	uint64_t truncated;	 /* messages longer than TRANSPORT_MAX_TRANSFER, dropped */
	uint64_t short_messages; /* messages without a whole header, dropped */
	uint64_t ul_unknown_mux;
	uint64_t ul_tun_dropped; /* TUN write would block */
	uint64_t ul_tun_errors;
	uint64_t ul_csum_computed;
	uint64_t malformed[_QMAP_ERR_MAX];
	uint64_t commands[4]; /* by enum qmap_command_type */
	uint64_t commands_short;
	uint64_t flow_commands_sent; /* FLOW_DISABLE/ENABLE requests sent on request */
	uint64_t control_messages;
	uint64_t interrupt_messages;
	uint64_t unknown_ep;

	uint64_t dl_aggregates;
	uint64_t dl_datagrams; /* real packets in sent aggregates */
	uint64_t dl_bytes;
	uint64_t dl_no_route;
	uint64_t dl_not_ip;
	uint64_t dl_dropped_disconnected;
	uint64_t dl_send_blocked; /* sends that found the socket full */
	uint64_t dl_tun_errors;
	uint64_t injected[_SIM_INJECT_MAX];

	uint64_t ul_no_session;	      /* uplink frames for a mux without a session */
	uint64_t dl_no_session;	      /* downlink packets for a mux without a session */
	uint64_t qmi_send_dropped;    /* control messages lost: queue full or socket error */
	uint64_t ul_radio_dropped;    /* no room on the network side (the radio's ring) */
	uint64_t ul_modem_stalls;     /* times the modem buffer left a transfer unread */
	uint64_t ul_modem_buffer_max; /* most bytes in the modem buffer */
	/* Transfers the sim read SIM_RADIO_BATCH_NS or more after the modem took them (the loop
	 * ran late), and how late in all: the capacity a radio on the sim's timing would lose. */
	uint64_t ul_modem_late_takes;
	uint64_t ul_modem_late_us;
	uint64_t dl_paced; /* times the downlink rate held the TUN unread */

	/* MBIM: uplink NTBs dropped whole (each also counted by reason) and why. */
	uint64_t ul_ntb_dropped;
	uint64_t ul_ntb_malformed[_NTB_ERR_MAX]; /* the codec's reasons */
	uint64_t ul_ntb_too_big;		 /* longer than dwNtbOutMaxSize */
	uint64_t ul_ntb_too_many_datagrams;	 /* more than wNtbOutMaxDatagrams */
	uint64_t ul_ntb_misaligned_ndp;		 /* an NDP not at wNdpOutAlignment */
	uint64_t ul_ntb_misaligned_datagram;	 /* not at wNdpOutPayloadRemainder (mod divisor) */
	uint64_t class_requests;		 /* TRANSPORT_EP_CLASS_REQUEST messages */
	uint64_t class_stalled;			 /* ... refused */

	struct sim_mux_stats mux[CONFIG_MUX_ID_MAX + 1];
};

struct sim;

/* Defaults for everything; no socket path, no addresses, no muxes. */
void sim_options_init(struct sim_options *o);

/*
 * Pure parsers for the command line. On failure return -EINVAL (or -EEXIST for a mux given
 * twice), write a message quoting the offending part into errbuf and leave *o untouched.
 */
int sim_options_add_mux(struct sim_options *o, const char *arg, char *errbuf, size_t errlen);
int sim_options_add_net_address(struct sim_options *o, const char *arg, char *errbuf,
				size_t errlen);
int sim_parse_inject(const char *arg, unsigned *ret_mask, char *errbuf, size_t errlen);
/* --apn NAME[:USER:PASSWORD]; -EEXIST for a name given twice (case-insensitive). */
int sim_options_add_apn(struct sim_options *o, const char *arg, char *errbuf, size_t errlen);
/* --profile NAME: the profile's limits and quirks replace the current ones. -EINVAL (with
 * the known names in errbuf) for an unknown name. */
int sim_options_apply_profile(struct sim_options *o, const char *name, char *errbuf, size_t errlen);
const char *sim_inject_to_string(enum sim_inject kind);
/* Consistency of the whole set (ranges, MTU vs aggregate size, muxes). 0 or -EINVAL. */
int sim_options_validate(const struct sim_options *o, char *errbuf, size_t errlen);

/* Validates the options (logging why not) and allocates; no I/O yet. Returns 0 or -errno. */
int sim_new(struct ev_loop *loop, const struct sim_options *opts, struct sim **ret);
/* Stops, closes the TUN (the kernel removes it) and unlinks the socket. NULL-safe. */
struct sim *sim_free(struct sim *s);

/*
 * Create and configure the TUN, then bind the socket (so the socket file appearing means
 * the network side is ready) and start listening. Returns 0 or -errno, logged once.
 */
int sim_start(struct sim *s);

bool sim_is_connected(const struct sim *s);

/*
 * Switch the data side to a granted data format (the QMI side calls this on WDA Set Data
 * Format): the aggregate being built is sent first, in the old format. dl_max_size must lie
 * between what one MTU-sized packet needs and the command line's value. 0 or -EINVAL.
 */
int sim_set_data_format(struct sim *s, enum qmap_version version, uint32_t dl_max_size,
			uint32_t dl_max_datagrams, uint32_t dl_min_padding);
/* BITS[k|M|G] per second. 0 or -EINVAL. */
int sim_parse_rate(const char *arg, uint64_t *ret);
/* Read opts.rate_file again and apply its rates (SIGHUP). 0 or -errno, logged. */
int sim_reload_rates(struct sim *s);
/* The network drops every connected session (SIGUSR2 in qmapd-sim). Returns how many. */
unsigned sim_drop_sessions(struct sim *s);
/* The MBIM function resets itself (SIGRTMIN+3 in qmapd-sim): sim_mbim_function_reset().
 * Returns the sessions that ended, -EOPNOTSUPP for a QMI modem. */
int sim_reset_function(struct sim *s);
/* An SMS from the network (SMS-DELIVER PDU with SMSC address): sim_qmi_deliver_sms(). */
int sim_deliver_sms(struct sim *s, const uint8_t *pdu, size_t len);
/*
 * Flow control as a modem does it: one transfer with a FLOW_DISABLE (enable false) or
 * FLOW_ENABLE REQUEST command frame for every configured mux. Returns the number of commands
 * sent, -ENOTCONN without qmapd, -EAGAIN when the socket is full (nothing sent).
 */
int sim_send_flow_control(struct sim *s, bool enable);

const struct sim_stats *sim_get_stats(const struct sim *s);
const struct sim_qmi_stats *sim_get_qmi_stats(const struct sim *s);
/* NULL unless opts.mbim. */
const struct sim_mbim_stats *sim_get_mbim_stats(const struct sim *s);
/* The NTB format and input size the host chose for this connection (MBIM). */
enum ntb_format sim_get_ntb_format(const struct sim *s);
uint32_t sim_get_ntb_in_size(const struct sim *s);
void sim_print_stats(const struct sim *s, FILE *f);
/* Write the stats to path atomically (temp file + rename). Returns 0 or -errno. */
int sim_write_stats_file(const struct sim *s, const char *path);

#endif
