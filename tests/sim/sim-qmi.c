/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's QMI responder (behaviour and error codes in sim-qmi.h).
 *
 * Every message is first checked against the QMUX/QMI framing by our own walk, so nothing
 * below trusts a length the host sent; only then does libqmi parse it (it asserts on some
 * inconsistencies instead of failing). Responses start from qmi_message_response_new(), so
 * the QMUX flags, SDU flags, transaction id and result TLV are exactly libqmi's.
 *
 * Re-entrancy: callbacks run inside sim_qmi_handle(). The caller may call sim_qmi_reset()
 * from one (its socket broke); that is deferred to the end of the message and suppresses
 * whatever this message would still have sent.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <libqmi-glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "sim-card.h"
#include "sim-qmi.h"

#ifndef QMAPD_VERSION
#define QMAPD_VERSION "0"
#endif

#define QMUX_MARKER	    0x01
#define QMUX_HEADER_SIZE    5 /* le16 length, flags, service, client id */
#define QMUX_FLAG_MODEM	    0x80
#define CTL_HEADER_SIZE	    6 /* flags, u8 transaction, le16 message, le16 TLV length */
#define SVC_HEADER_SIZE	    7 /* flags, le16 transaction, le16 message, le16 TLV length */
#define TLV_HEADER_SIZE	    3
#define SDU_OFFSET	    (1 + QMUX_HEADER_SIZE)
#define SVC_FLAG_INDICATION 0x04

#define TLV_RESULT 0x02
#define CID_MIN	   1
#define CID_MAX	   254 /* 255 is the broadcast id */

#define HANDLE_ANY 0xffffffffu /* Stop Network: whatever this client has */

/* Through cdc-wdm a QMUX message is at most 4096 bytes (docs/PROTOCOLS.md §2.1). */
#define SIM_QMI_MESSAGE_MAX 4096

#define WDS_PACKET_SERVICE_STATUS 0x0022 /* message and indication id */

/* WDA aggregation protocols and link layer (QmiWdaDataAggregationProtocol/...LinkLayer...). */
#define WDA_PROTO_QMAP	 QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP
#define WDA_PROTO_QMAPV5 QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5

enum svc {
	SVC_WDS,
	SVC_DMS,
	SVC_NAS,
	SVC_WDA,
	SVC_UIM,
	SVC_WMS,
	_SVC_MAX,
};

static const uint8_t svc_ids[_SVC_MAX] = {
	[SVC_WDS] = QMI_SERVICE_WDS, [SVC_DMS] = QMI_SERVICE_DMS, [SVC_NAS] = QMI_SERVICE_NAS,
	[SVC_WDA] = QMI_SERVICE_WDA, [SVC_UIM] = QMI_SERVICE_UIM, [SVC_WMS] = QMI_SERVICE_WMS,
};

static const char *const svc_names[_SVC_MAX] = {
	[SVC_WDS] = "wds", [SVC_DMS] = "dms", [SVC_NAS] = "nas",
	[SVC_WDA] = "wda", [SVC_UIM] = "uim", [SVC_WMS] = "wms",
};

/* What Get Version Info lists; plausible for a current Qualcomm firmware. */
static const struct {
	uint8_t service;
	uint16_t major, minor;
} versions[] = {
	{ QMI_SERVICE_CTL, 1, 5 },  { QMI_SERVICE_WDS, 1, 67 }, { QMI_SERVICE_DMS, 1, 14 },
	{ QMI_SERVICE_NAS, 1, 25 }, { QMI_SERVICE_WDA, 1, 16 }, { QMI_SERVICE_UIM, 1, 46 },
	{ QMI_SERVICE_WMS, 1, 10 },
};

struct wds_client {
	uint8_t mux_id; /* 0 = not bound */
	uint8_t family; /* Set IP Family: 4, 6 or 8 (unspecified = 4) */
	bool connected;
	uint8_t session_family;
	uint32_t handle;
	unsigned apn;
};

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

struct sim_qmi {
	struct sim_qmi_options opts;
	struct sim_qmi_callbacks cb;
	void *userdata;
	struct sim_qmi_data_format format;

	uint8_t cid_used[_SVC_MAX][32]; /* bit per client id */
	uint8_t next_cid[_SVC_MAX];	/* modems hand out ids round robin, not lowest free */
	struct wds_client wds[256];
	uint16_t mux_sessions[CONFIG_MUX_ID_MAX + 1];
	unsigned muxes_up; /* how many of mux_sessions are not 0 */
	uint32_t next_handle;

	/* The SIM card's PIN1: state (QmiUimPinState) and retries left. */
	struct sim_card card; /* PIN1 and PUK1 (sim-card.c) */

	bool in_handle;
	bool reset_pending;
	gint64 registered_at; /* g_get_monotonic_time() from which it is registered */
	bool low_power;	      /* DMS Set Operating Mode low power: radio off, deregistered */
	/* WMS: the messages in NV storage, and which clients asked for Event Reports. */
	struct sim_sms {
		bool used;
		uint8_t tag; /* QmiWmsMessageTagType */
		uint8_t pdu[SIM_QMI_SMS_PDU_MAX];
		uint16_t len;
	} sms[SIM_QMI_SMS_MAX];
	bool wms_report[256];
	/* NAS: the clients that asked for Serving System indications (Register Indications),
	 * and the registration they were last told about (sim_qmi_tick). */
	bool nas_serving_ind[256];
	int serving_told; /* serving_state() when last compared; -1 never */
	uint16_t next_message_id;
	/* NAS system selection: what Set System Selection Preference left. */
	uint16_t mode_pref;		       /* QmiNasRatModePreference */
	uint64_t lte_band_pref[4];	       /* bit band - 1 */
	const struct sim_qmi_network *network; /* registered in (manual), NULL: home, automatic */
	bool manual_denied;		       /* manual selection of a network not to be had */
	struct sim_qmi_stats stats;
};

/* One request being answered. */
struct req {
	QmiMessage *m;
	uint8_t service;
	uint8_t cid;
	int svc; /* enum svc, -1 for CTL */
};

static void qlog(struct sim_qmi *q, int priority, const char *fmt, ...) _printf_(3, 4);

static void qlog(struct sim_qmi *q, int priority, const char *fmt, ...)
{
	char msg[512]; /* one log line */
	va_list ap;

	if (!q->cb.log && priority >= LOG_DEBUG && log_get_max_level() < LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (q->cb.log)
		q->cb.log(q->userdata, priority, msg);
	else
		log_debug("%s", msg);
}

/* ---- options ---- */

void sim_qmi_options_init(struct sim_qmi_options *o)
{
	*o = (struct sim_qmi_options){
		.quirks.data_interface = SIM_QMI_DATA_INTERFACE_DEFAULT,
		.session_mtu = SIM_QMI_MTU_DEFAULT,
		.limits = {
			.version = QMAP_V5,
			.dl_max_size = CONFIG_DL_MAX_SIZE_DEFAULT,
			.dl_max_datagrams = 32,
			.ul_max_size = SIM_QMI_UL_MAX_SIZE,
			.ul_max_datagrams = SIM_QMI_UL_MAX_DGRAMS,
		},
		.dl_min_size = CONFIG_DL_MAX_SIZE_MIN,
	};
}

int sim_qmi_parse_apn(const char *arg, struct sim_qmi_apn *ret, char *errbuf, size_t errlen)
{
	struct sim_qmi_apn a = { 0 };
	const char *c1 = strchr(arg, ':');
	size_t n = c1 ? (size_t)(c1 - arg) : strlen(arg);

	if (n == 0 || n > SIM_QMI_APN_MAX) {
		snprintf(errbuf, errlen,
			 "invalid APN '%s': expected NAME[:USER:PASSWORD], NAME 1..%d bytes", arg,
			 SIM_QMI_APN_MAX);
		return -EINVAL;
	}
	memcpy(a.name, arg, n);
	a.name[n] = '\0';

	if (c1) {
		const char *c2 = strchr(c1 + 1, ':');
		if (!c2) {
			snprintf(errbuf, errlen,
				 "invalid APN '%s': expected NAME:USER:PASSWORD with credentials",
				 arg);
			return -EINVAL;
		}
		size_t ulen = (size_t)(c2 - c1 - 1), plen = strlen(c2 + 1);
		if (ulen > SIM_QMI_CREDENTIAL_MAX || plen > SIM_QMI_CREDENTIAL_MAX) {
			snprintf(errbuf, errlen,
				 "invalid APN '%s': user and password at most %d bytes", arg,
				 SIM_QMI_CREDENTIAL_MAX);
			return -EINVAL;
		}
		memcpy(a.user, c1 + 1, ulen);
		a.user[ulen] = '\0';
		memcpy(a.password, c2 + 1, plen + 1);
		a.auth = true;
	}

	*ret = a;
	return 0;
}

/* ---- addresses ---- */

static uint8_t *prefix_bytes(struct config_prefix *p, size_t *ret_len)
{
	*ret_len = p->family == AF_INET ? 4 : 16;
	return p->family == AF_INET ? (uint8_t *)&p->addr.v4 : p->addr.v6.s6_addr;
}

void sim_qmi_gateway_of(const struct config_prefix *host, struct config_prefix *ret)
{
	struct config_prefix gw = *host;
	size_t n;
	uint8_t *b = prefix_bytes(&gw, &n);

	for (size_t i = 0; i < n; i++) {
		unsigned bits = gw.prefixlen > 8 * i ? gw.prefixlen - 8 * i : 0;
		if (bits < 8)
			b[i] &= (uint8_t)(0xff00 >> bits);
	}
	for (int round = 0; round < 2; round++) {
		for (size_t i = n; i-- > 0;)
			if (++b[i] != 0)
				break;
		if (memcmp(&gw.addr, &host->addr, n) != 0)
			break;
	}
	*ret = gw;
}

static uint32_t ipv4_value(const struct in_addr *a)
{
	/* libqmi's convention: a le32 whose most significant byte is the first octet. */
	return ntohl(a->s_addr);
}

static uint32_t ipv4_mask(uint8_t prefixlen)
{
	return prefixlen == 0 ? 0 : 0xffffffffu << (32 - prefixlen);
}

/* ---- client ids ---- */

static bool cid_is_used(const struct sim_qmi *q, int svc, uint8_t cid)
{
	return q->cid_used[svc][cid / 8] & (1u << (cid % 8));
}

static void cid_set(struct sim_qmi *q, int svc, uint8_t cid, bool used)
{
	if (used == cid_is_used(q, svc, cid))
		return;
	if (used) {
		q->cid_used[svc][cid / 8] |= (uint8_t)(1u << (cid % 8));
		q->stats.qmi_clients++;
	} else {
		q->cid_used[svc][cid / 8] &= (uint8_t) ~(1u << (cid % 8));
		q->stats.qmi_clients--;
	}
}

static int svc_index(uint8_t service)
{
	for (int i = 0; i < _SVC_MAX; i++)
		if (svc_ids[i] == service)
			return i;
	return -1;
}

static void session_end(struct sim_qmi *q, uint8_t cid)
{
	struct wds_client *c = &q->wds[cid];

	if (!c->connected)
		return;
	c->connected = false;
	if (q->mux_sessions[c->mux_id] > 0 && --q->mux_sessions[c->mux_id] == 0)
		q->muxes_up--;
}

static void release_client(struct sim_qmi *q, int svc, uint8_t cid)
{
	if (svc == SVC_WDS) {
		if (q->wds[cid].connected)
			qlog(q, LOG_INFO,
			     "sim qmi wds client %u: released with a session up on mux %u", cid,
			     q->wds[cid].mux_id);
		session_end(q, cid);
		q->wds[cid] = (struct wds_client){ 0 };
	}
	if (svc == SVC_WMS)
		q->wms_report[cid] = false;
	if (svc == SVC_NAS)
		q->nas_serving_ind[cid] = false;
	cid_set(q, svc, cid, false);
}

/*
 * The client ids of a service in use, ascending, into ids; returns how many. A word of the
 * bitmap at a time: most are 0, and Sync, a reset and a network drop walk them all.
 */
static unsigned used_cids(const struct sim_qmi *q, int svc, uint8_t ids[static CID_MAX])
{
	unsigned n = 0;

	for (unsigned w = 0; w < sizeof(q->cid_used[svc]) / sizeof(uint64_t); w++) {
		uint64_t bits;

		memcpy(&bits, q->cid_used[svc] + w * sizeof(bits), sizeof(bits));
		bits = le64toh(bits); /* bit k of byte b is id 8b + k */
		while (bits) {
			unsigned cid = w * 64 + (unsigned)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (cid >= CID_MIN && cid <= CID_MAX)
				ids[n++] = (uint8_t)cid;
		}
	}
	return n;
}

static void release_all(struct sim_qmi *q)
{
	uint8_t ids[CID_MAX];

	for (int svc = 0; q->stats.qmi_clients && svc < _SVC_MAX; svc++)
		for (unsigned i = 0, n = used_cids(q, svc, ids); i < n; i++)
			release_client(q, svc, ids[i]);
	memset(q->mux_sessions, 0, sizeof(q->mux_sessions));
	q->muxes_up = 0;
}

/* ---- sending ---- */

/*
 * Real firmware lists TLVs in no particular order and adds TLVs no client knows (libqmi's
 * test vector for DMS Get IDs; libqmi 65e42b24, 83d6fb64): every message leaves with its
 * TLVs in reverse order and SIM_QMI_UNKNOWN_TLV after the first one, so a client that
 * expects ascending order or only known types fails here as it would on hardware.
 */
#define SIM_QMI_UNKNOWN_TLV 0xE1
static const uint8_t unknown_tlv_value[4] = { 'q', 's', 'i', 'm' };

static size_t scramble_tlvs(const guint8 *raw, size_t len, uint8_t *out, size_t room)
{
	size_t hdr = raw[4] == QMI_SERVICE_CTL ? CTL_HEADER_SIZE : SVC_HEADER_SIZE;
	size_t start = SDU_OFFSET + hdr;
	size_t extra = TLV_HEADER_SIZE + sizeof(unknown_tlv_value);
	size_t offs[64], n = 0;

	if (len < start || len + extra > room || len + extra - 1 > UINT16_MAX)
		return 0;
	for (size_t p = start; p < len; p += TLV_HEADER_SIZE + get_le16(raw + p + 1)) {
		if (n == ARRAY_SIZE(offs) || len - p < TLV_HEADER_SIZE ||
		    get_le16(raw + p + 1) > len - p - TLV_HEADER_SIZE)
			return 0;
		offs[n++] = p;
	}
	memcpy(out, raw, start);
	size_t w = start;
	for (size_t i = n; i-- > 0;) {
		size_t tl = TLV_HEADER_SIZE + get_le16(raw + offs[i] + 1);
		memcpy(out + w, raw + offs[i], tl);
		w += tl;
		if (i == n - 1) {
			out[w] = SIM_QMI_UNKNOWN_TLV;
			out[w + 1] = sizeof(unknown_tlv_value);
			out[w + 2] = 0;
			memcpy(out + w + TLV_HEADER_SIZE, unknown_tlv_value,
			       sizeof(unknown_tlv_value));
			w += extra;
		}
	}
	if (n == 0) {
		out[w] = SIM_QMI_UNKNOWN_TLV;
		out[w + 1] = sizeof(unknown_tlv_value);
		out[w + 2] = 0;
		memcpy(out + w + TLV_HEADER_SIZE, unknown_tlv_value, sizeof(unknown_tlv_value));
		w += extra;
	}
	put_le16(out + 1, (uint16_t)(w - 1));
	put_le16(out + start - 2, (uint16_t)(w - start));
	return w;
}

static void send_raw(struct sim_qmi *q, QmiMessage *m)
{
	uint8_t out[SIM_QMI_MESSAGE_MAX];
	gsize len = 0;
	const guint8 *raw;

	if (q->reset_pending)
		return;
	raw = qmi_message_get_raw(m, &len, NULL);
	if (!raw)
		return;
	size_t n = scramble_tlvs(raw, len, out, sizeof(out));
	if (n > 0)
		q->cb.send(q->userdata, out, n);
	else
		q->cb.send(q->userdata, raw, len);
}

static void send_response(struct sim_qmi *q, QmiMessage *resp)
{
	guint16 len = 0;
	const guint8 *result = qmi_message_get_raw_tlv(resp, TLV_RESULT, &len);

	q->stats.qmi_responses++;
	if (!result || len < 2 || (result[0] | result[1] << 8) != 0)
		q->stats.qmi_errors++;
	send_raw(q, resp);
}

static void reply_error(struct sim_qmi *q, const struct req *r, QmiProtocolError error)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, error);

	qlog(q, LOG_DEBUG, "sim qmi %s client %u: message 0x%04x: error %s (%d)",
	     r->svc >= 0 ? svc_names[r->svc] : "ctl", r->cid, qmi_message_get_message_id(r->m),
	     qmi_protocol_error_get_string(error) ?: "?", (int)error);
	send_response(q, resp);
}

/* TLV writers; false only if the message would pass 64 KiB, which ours never do. */
static bool put_u8(QmiMessage *m, uint8_t type, uint8_t v)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	if (!off)
		return false;
	if (!qmi_message_tlv_write_guint8(m, v, NULL)) {
		qmi_message_tlv_write_reset(m, off);
		return false;
	}
	return qmi_message_tlv_write_complete(m, off, NULL);
}

static bool put_u16(QmiMessage *m, uint8_t type, uint16_t v)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	if (!off)
		return false;
	if (!qmi_message_tlv_write_guint16(m, QMI_ENDIAN_LITTLE, v, NULL)) {
		qmi_message_tlv_write_reset(m, off);
		return false;
	}
	return qmi_message_tlv_write_complete(m, off, NULL);
}

static bool put_u32(QmiMessage *m, uint8_t type, uint32_t v)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	if (!off)
		return false;
	if (!qmi_message_tlv_write_guint32(m, QMI_ENDIAN_LITTLE, v, NULL)) {
		qmi_message_tlv_write_reset(m, off);
		return false;
	}
	return qmi_message_tlv_write_complete(m, off, NULL);
}

/* A string that is the whole TLV value: no length prefix (libqmi's rule for such TLVs). */
static bool put_string(QmiMessage *m, uint8_t type, const char *s)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	if (!off)
		return false;
	if (!qmi_message_tlv_write_string(m, 0, s, -1, NULL)) {
		qmi_message_tlv_write_reset(m, off);
		return false;
	}
	return qmi_message_tlv_write_complete(m, off, NULL);
}

/* 16 address bytes in network order, optionally followed by a prefix length. */
static bool put_ipv6(QmiMessage *m, uint8_t type, const struct in6_addr *a, int prefixlen)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	bool ok = off != 0;

	for (size_t i = 0; ok && i < sizeof(a->s6_addr); i++)
		ok = qmi_message_tlv_write_guint8(m, a->s6_addr[i], NULL);
	if (ok && prefixlen >= 0)
		ok = qmi_message_tlv_write_guint8(m, (guint8)prefixlen, NULL);
	if (!ok) {
		if (off)
			qmi_message_tlv_write_reset(m, off);
		return false;
	}
	return qmi_message_tlv_write_complete(m, off, NULL);
}

static void reply(struct sim_qmi *q, const struct req *r, QmiMessage *resp, bool ok)
{
	if (!ok) {
		/* Only a TLV overflow gets here: answer like a modem out of buffer space. */
		reply_error(q, r, QMI_PROTOCOL_ERROR_INTERNAL);
		return;
	}
	send_response(q, resp);
}

/* ---- reading requests ---- */

/* 1 and the value when present, 0 when absent, -EBADMSG when of the wrong size. */
static int get_u8(const struct req *r, uint8_t type, uint8_t *ret)
{
	guint16 len = 0;
	gsize off = qmi_message_tlv_read_init(r->m, type, &len, NULL);
	gsize pos = 0;
	guint8 v;

	if (!off)
		return 0;
	if (len != 1 || !qmi_message_tlv_read_guint8(r->m, off, &pos, &v, NULL))
		return -EBADMSG;
	*ret = v;
	return 1;
}

static int get_u32(const struct req *r, uint8_t type, uint32_t *ret)
{
	guint16 len = 0;
	gsize off = qmi_message_tlv_read_init(r->m, type, &len, NULL);
	gsize pos = 0;
	guint32 v;

	if (!off)
		return 0;
	if (len != 4 || !qmi_message_tlv_read_guint32(r->m, off, &pos, QMI_ENDIAN_LITTLE, &v, NULL))
		return -EBADMSG;
	*ret = v;
	return 1;
}

/* A TLV of exactly len bytes that we accept but ignore (endpoint info, client type). */
static int check_size(const struct req *r, uint8_t type, guint16 want)
{
	guint16 len = 0;

	if (!qmi_message_get_raw_tlv(r->m, type, &len))
		return 0;
	return len == want ? 1 : -EBADMSG;
}

/* Raw bytes of a string TLV: compared byte for byte, never converted. */
static const uint8_t *get_raw(const struct req *r, uint8_t type, uint16_t *ret_len)
{
	guint16 len = 0;
	const guint8 *v = qmi_message_get_raw_tlv(r->m, type, &len);

	*ret_len = v ? len : 0;
	return v;
}

static bool raw_equals(const uint8_t *raw, uint16_t len, const char *s, bool nocase)
{
	size_t n = strlen(s);

	if (!raw || len != n || memchr(raw, '\0', len))
		return false;
	return nocase ? strncasecmp((const char *)raw, s, n) == 0 : memcmp(raw, s, n) == 0;
}

/* ---- CTL ---- */

static void ctl_get_version_info(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	gsize off = qmi_message_tlv_write_init(resp, 0x01, NULL);
	bool ok = off && qmi_message_tlv_write_guint8(resp, ARRAY_SIZE(versions), NULL);

	for (size_t i = 0; ok && i < ARRAY_SIZE(versions); i++)
		ok = qmi_message_tlv_write_guint8(resp, versions[i].service, NULL) &&
		     qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, versions[i].major,
						   NULL) &&
		     qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, versions[i].minor,
						   NULL);
	if (ok)
		ok = qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

static bool put_service_cid(QmiMessage *m, uint8_t service, uint8_t cid)
{
	gsize off = qmi_message_tlv_write_init(m, 0x01, NULL);

	return off && qmi_message_tlv_write_guint8(m, service, NULL) &&
	       qmi_message_tlv_write_guint8(m, cid, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

static void ctl_allocate_cid(struct sim_qmi *q, const struct req *r)
{
	uint8_t service;
	int k = get_u8(r, 0x01, &service);

	if (k <= 0) {
		reply_error(q, r,
			    k == 0 ? QMI_PROTOCOL_ERROR_MISSING_ARGUMENT
				   : QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	int svc = svc_index(service);
	if (svc < 0) {
		qlog(q, LOG_DEBUG, "sim qmi ctl: no clients for service 0x%02x", service);
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_SERVICE_TYPE);
		return;
	}

	uint8_t cid = 0;
	for (unsigned n = 0; n < CID_MAX; n++) {
		uint8_t c = q->next_cid[svc];
		q->next_cid[svc] = c >= CID_MAX ? CID_MIN : (uint8_t)(c + 1);
		if (!cid_is_used(q, svc, c)) {
			cid = c;
			break;
		}
	}
	if (cid == 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_CLIENT_IDS_EXHAUSTED);
		return;
	}

	cid_set(q, svc, cid, true);
	if (svc == SVC_WDS)
		q->wds[cid] = (struct wds_client){ .family = QMI_WDS_IP_FAMILY_IPV4 };
	qlog(q, LOG_DEBUG, "sim qmi %s client %u: allocated", svc_names[svc], cid);

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_service_cid(resp, service, cid));
}

static void ctl_release_cid(struct sim_qmi *q, const struct req *r)
{
	uint16_t len;
	const uint8_t *v = get_raw(r, 0x01, &len);

	if (q->stats.qmi_releases_lost < q->opts.lose_releases) {
		q->stats.qmi_releases_lost++;
		qlog(q, LOG_INFO, "sim qmi ctl: release client id request lost (--lose-releases)");
		return;
	}
	if (!v || len != 2) {
		reply_error(q, r,
			    !v ? QMI_PROTOCOL_ERROR_MISSING_ARGUMENT
			       : QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	uint8_t service = v[0], cid = v[1];
	int svc = svc_index(service);
	if (svc < 0 || cid < CID_MIN || cid > CID_MAX || !cid_is_used(q, svc, cid)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
		return;
	}

	release_client(q, svc, cid);
	qlog(q, LOG_DEBUG, "sim qmi %s client %u: released", svc_names[svc], cid);

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_service_cid(resp, service, cid));
}

static void ctl_set_data_format(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	/* Only raw IP exists here; the host learns it from the mandatory protocol TLV. */
	reply(q, r, resp, put_u16(resp, 0x10, 2 /* QMI_CTL_DATA_LINK_PROTOCOL_RAW_IP */));
}

static void ctl_sync(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	release_all(q);
	qlog(q, LOG_INFO, "sim qmi ctl: sync, every client released");
	reply(q, r, resp, true);
}

/* ---- DMS ---- */

static void dms_string(struct sim_qmi *q, const struct req *r, const char *s)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_string(resp, 0x01, s));
}

static void dms_get_manufacturer(struct sim_qmi *q, const struct req *r)
{
	dms_string(q, r, SIM_QMI_MANUFACTURER);
}

static void dms_get_model(struct sim_qmi *q, const struct req *r)
{
	dms_string(q, r, SIM_QMI_MODEL);
}

static void dms_get_revision(struct sim_qmi *q, const struct req *r)
{
	dms_string(q, r, "QMAPD-SIM." QMAPD_VERSION);
}

static void dms_get_ids(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp,
	      put_string(resp, 0x11, SIM_QMI_IMEI) && put_string(resp, 0x13, SIM_QMI_IMEI_SV));
}

/* PIN1 is enabled and not verified (or blocked): the card's PIN-protected files are closed. */
static bool sim_locked(const struct sim_qmi *q)
{
	/* No card: nothing of it is readable either. */
	return !q->card.present || sim_card_locked(&q->card);
}

static void dms_uim_get_iccid(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	if (q->opts.quirks.no_dms_uim) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
		return;
	}
	/* No card: UIM_UNINITIALIZED, what ModemManager takes for "SIM not inserted" from
	 * DMS UIM. */
	if (!q->card.present) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
		return;
	}
	reply(q, r, resp, put_string(resp, 0x01, SIM_QMI_ICCID));
}

static void dms_uim_get_imsi(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	if (q->opts.quirks.no_dms_uim) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
		return;
	}
	if (!q->card.present) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
		return;
	}
	/* EF_IMSI needs PIN1 (TS 31.102); what DMS answers then is in no public capture:
	 * the strict choice, an error. */
	if (sim_locked(q)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_ACCESS_DENIED);
		return;
	}
	reply(q, r, resp, put_string(resp, 0x01, SIM_QMI_IMSI));
}

/* Online, or low power once asked (a locked SIM does not change that). */
static void dms_get_operating_mode(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp,
	      put_u8(resp, 0x01,
		     q->low_power ? QMI_DMS_OPERATING_MODE_LOW_POWER
				  : QMI_DMS_OPERATING_MODE_ONLINE));
}

/*
 * Low power switches the radio off: the modem deregisters at once. Online again, it
 * registers after quirks.register_delay_ms as when it started. Going low ends every
 * session as a network drop does (sim_qmi_drop_all). Only the two modes a host
 * switches between for airplane mode; the others (offline, reset, shutting down) would end
 * the sim, so they are refused as an invalid argument.
 */
static void dms_set_operating_mode(struct sim_qmi *q, const struct req *r)
{
	uint8_t mode;

	if (get_u8(r, 0x01, &mode) <= 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (mode != QMI_DMS_OPERATING_MODE_ONLINE && mode != QMI_DMS_OPERATING_MODE_LOW_POWER) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	bool low = mode == QMI_DMS_OPERATING_MODE_LOW_POWER;
	bool was = q->low_power;

	q->low_power = low;
	q->stats.low_power = low;
	if (!low && was)
		q->registered_at =
			g_get_monotonic_time() + (gint64)q->opts.quirks.register_delay_ms * 1000;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
	/* The radio is off: the network side of every data call is gone (after the answer,
	 * as firmware indicates it). */
	if (low && !was)
		sim_qmi_drop_all(q);
}

static void dms_get_hardware_revision(struct sim_qmi *q, const struct req *r)
{
	dms_string(q, r, SIM_QMI_HW_REVISION);
}

/* Many SIMs carry no MSISDN: NOT_PROVISIONED, as ModemManager sees on real modems. */
static void dms_get_msisdn(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	if (!q->opts.quirks.msisdn[0]) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_NOT_PROVISIONED);
		return;
	}
	/* EF_MSISDN needs PIN1 (TS 31.102): no public capture says what DMS answers then,
	 * the strict choice is an error. */
	if (sim_locked(q)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_ACCESS_DENIED);
		return;
	}
	reply(q, r, resp, put_string(resp, 0x01, q->opts.quirks.msisdn));
}

static bool put_u64(QmiMessage *m, uint8_t type, uint64_t v)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);

	return off && qmi_message_tlv_write_guint64(m, QMI_ENDIAN_LITTLE, v, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

/* An LTE-only modem (Get Capabilities lists LTE alone): no GSM/WCDMA band bits (TLV 0x01,
 * mandatory), LTE bands as a bit per band from band 1 (TLV 0x10). */
static void dms_get_band_capabilities(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_u64(resp, 0x01, 0) && put_u64(resp, 0x10, SIM_QMI_LTE_BANDS));
}

/* ---- UIM: one card in slot 1 with one USIM application ---- */

/* The USIM's AID (ETSI TS 101 220: RID A000000087, application code 1002). */
static const uint8_t usim_aid[] = { 0xA0, 0x00, 0x00, 0x00, 0x87, 0x10, 0x02, 0xFF,
				    0x33, 0xFF, 0xFF, 0x89, 0x06, 0x06, 0x00, 0x00 };

static uint8_t qmi_pin_state(const struct sim_card *c)
{
	switch (c->pin1) {
	case SIM_CARD_PIN_DISABLED:
		return QMI_UIM_PIN_STATE_DISABLED;
	case SIM_CARD_PIN_ENABLED_NOT_VERIFIED:
		return QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED;
	case SIM_CARD_PIN_ENABLED_VERIFIED:
		return QMI_UIM_PIN_STATE_ENABLED_VERIFIED;
	case SIM_CARD_PIN_BLOCKED:
		return QMI_UIM_PIN_STATE_BLOCKED;
	case SIM_CARD_PIN_PERMANENTLY_BLOCKED:
		return QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED;
	}
	return QMI_UIM_PIN_STATE_NOT_INITIALIZED;
}

/* No card in the slot: the slot listed absent, no application, no GW primary index
 * (0xFFFF), as ModemManager reads a modem without SIM. */
static void uim_card_status_absent(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	gsize off = qmi_message_tlv_write_init(resp, 0x10, NULL);
	bool ok = off && qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 1, NULL) /* cards */ &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_CARD_STATE_ABSENT, NULL) &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_PIN_STATE_NOT_INITIALIZED, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) /* UPIN retries */ &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) /* UPUK retries */ &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_CARD_ERROR_NO_ATR_RECEIVED, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) /* applications */ &&
		  qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

static void uim_get_card_status(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	uint8_t app_state;
	uint8_t pin1_state = qmi_pin_state(&q->card);

	if (!q->card.present) {
		uim_card_status_absent(q, r);
		return;
	}
	switch (q->card.pin1) {
	case SIM_CARD_PIN_ENABLED_NOT_VERIFIED:
		app_state = QMI_UIM_CARD_APPLICATION_STATE_PIN1_OR_UPIN_PIN_REQUIRED;
		break;
	case SIM_CARD_PIN_BLOCKED:
		app_state = QMI_UIM_CARD_APPLICATION_STATE_PUK1_OR_UPIN_PUK_REQUIRED;
		break;
	case SIM_CARD_PIN_PERMANENTLY_BLOCKED:
		app_state = QMI_UIM_CARD_APPLICATION_STATE_PIN1_BLOCKED;
		break;
	default:
		app_state = QMI_UIM_CARD_APPLICATION_STATE_READY;
		break;
	}
	/* Index of the GW primary application: slot 0, application 0; no 1x, no secondary. */
	gsize off = qmi_message_tlv_write_init(resp, 0x10, NULL);
	bool ok = off && qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0x0000, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, 0xFFFF, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 1, NULL) /* cards */ &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_CARD_STATE_PRESENT, NULL) &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_PIN_STATE_NOT_INITIALIZED, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) /* UPIN retries */ &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) /* UPUK retries */ &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_CARD_ERROR_UNKNOWN, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 1, NULL) /* applications */ &&
		  qmi_message_tlv_write_guint8(resp, QMI_UIM_CARD_APPLICATION_TYPE_USIM, NULL) &&
		  qmi_message_tlv_write_guint8(resp, app_state, NULL) &&
		  qmi_message_tlv_write_guint8(
			  resp, QMI_UIM_CARD_APPLICATION_PERSONALIZATION_STATE_READY, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) /* personalization feature */ &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 0, NULL) &&
		  qmi_message_tlv_write_guint8(resp, sizeof(usim_aid), NULL);
	for (size_t i = 0; ok && i < sizeof(usim_aid); i++)
		ok = qmi_message_tlv_write_guint8(resp, usim_aid[i], NULL);
	ok = ok && qmi_message_tlv_write_guint8(resp, 0, NULL) /* UPIN replaces PIN1: no */ &&
	     qmi_message_tlv_write_guint8(resp, pin1_state, NULL) &&
	     qmi_message_tlv_write_guint8(resp, (uint8_t)q->card.pin_retries, NULL) &&
	     qmi_message_tlv_write_guint8(resp, (uint8_t)q->card.puk_retries, NULL) &&
	     qmi_message_tlv_write_guint8(resp, QMI_UIM_PIN_STATE_DISABLED, NULL) /* PIN2 */ &&
	     qmi_message_tlv_write_guint8(resp, SIM_QMI_PIN_RETRIES, NULL) &&
	     qmi_message_tlv_write_guint8(resp, SIM_QMI_PUK_RETRIES, NULL) &&
	     qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

/* Session TLV 0x01 {u8 type, u8 AID length, AID}: the session type, or -1 if malformed. */
static int uim_session(const struct req *r)
{
	uint16_t len;
	const uint8_t *v = get_raw(r, 0x01, &len);

	if (!v || len < 2 || len != 2u + v[1])
		return -1;
	return v[0];
}

/* Card result {SW1, SW2}: TLV 0x10 in Read Transparent, 0x13 in Verify PIN (0x11 is the
 * encrypted PIN1 there, libqmi uim.json). */
static bool put_card_result(QmiMessage *m, uint8_t type, uint8_t sw1, uint8_t sw2)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);

	return off && qmi_message_tlv_write_guint8(m, sw1, NULL) &&
	       qmi_message_tlv_write_guint8(m, sw2, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

/* An error that still carries the card's status words, as firmware answers. */
static void uim_card_error(struct sim_qmi *q, const struct req *r, QmiProtocolError error,
			   uint8_t sw1, uint8_t sw2)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, error);

	reply(q, r, resp, put_card_result(resp, 0x10, sw1, sw2));
}

/* TS 102 221 BCD: two digits a byte, the first in the low nibble, 'F' padding. */
static void put_bcd(uint8_t *out, size_t room, const char *digits)
{
	memset(out, 0xFF, room);
	for (size_t i = 0; digits[i] && i / 2 < room; i++) {
		uint8_t d = (uint8_t)(digits[i] - '0');
		out[i / 2] = i % 2 ? (uint8_t)((out[i / 2] & 0x0F) | d << 4)
				   : (uint8_t)((out[i / 2] & 0xF0) | d);
	}
}

/*
 * Read Transparent: 0x01 session, 0x02 file {le16 id, u8 path length, path as le16
 * halves}, 0x03 read information {le16 offset, le16 length; 0 = to the end}. The files a
 * host reads for the SIM's identity; EF_IMSI needs PIN1 (TS 31.102 access conditions),
 * EF_ICCID, EF_AD and EF_SPN are always readable.
 */
static void uim_read_transparent(struct sim_qmi *q, const struct req *r)
{
	static const uint8_t mf[] = { 0x00, 0x3F }, adf[] = { 0x00, 0x3F, 0xFF, 0x7F };
	uint8_t content[32];
	size_t size = 0;
	bool needs_pin = false, in_adf;
	uint16_t flen, rlen;
	const uint8_t *file = get_raw(r, 0x02, &flen), *info = get_raw(r, 0x03, &rlen);
	int session = uim_session(r);

	if (!file || !info || session < 0) {
		reply_error(q, r,
			    file && info ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
					 : QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (!q->card.present) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
		return;
	}
	if (flen < 3 || flen != 3u + file[2] || rlen != 4) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	uint16_t id = get_le16(file), offset = get_le16(info), length = get_le16(info + 2);
	const uint8_t *path = file + 3;
	in_adf = file[2] == sizeof(adf) && memcmp(path, adf, sizeof(adf)) == 0;
	bool in_mf = file[2] == sizeof(mf) && memcmp(path, mf, sizeof(mf)) == 0;

	if (in_mf && id == 0x2FE2) { /* EF_ICCID */
		size = 10;
		put_bcd(content, size, SIM_QMI_ICCID);
	} else if (in_adf && id == 0x6F07) { /* EF_IMSI: length, then parity nibble 9 (odd) */
		size = 9;
		content[0] = 8;
		char digits[2 * 8 + 1];
		snprintf(digits, sizeof(digits), "9%s", SIM_QMI_IMSI);
		put_bcd(content + 1, 8, digits);
		needs_pin = true;
	} else if (in_adf && id == 0x6FAD) { /* EF_AD: normal operation, MNC of 2 digits */
		size = 4;
		memcpy(content, (const uint8_t[]){ 0x00, 0x00, 0x00, 0x02 }, 4);
	} else if (in_adf && id == 0x6F46) { /* EF_SPN: display condition, name, 0xFF padding */
		size = 17;
		memset(content, 0xFF, size);
		content[0] = 0x01;
		memcpy(content + 1, SIM_QMI_SPN, strlen(SIM_QMI_SPN));
	} else {
		uim_card_error(q, r, QMI_PROTOCOL_ERROR_SIM_FILE_NOT_FOUND, 0x6A, 0x82);
		return;
	}
	/* Application files through the GW provisioning session; the MF's through either. */
	if (in_adf && session != QMI_UIM_SESSION_TYPE_PRIMARY_GW_PROVISIONING) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	if (needs_pin && sim_locked(q)) {
		/* "Security status not satisfied"; how firmware wraps it is in no public
		 * capture: the strict choice, an error with the status words. */
		uim_card_error(q, r, QMI_PROTOCOL_ERROR_ACCESS_DENIED, 0x69, 0x82);
		return;
	}
	if (offset > size || (length && (size_t)offset + length > size)) {
		uim_card_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT, 0x6B, 0x00);
		return;
	}
	size_t n = length ? length : size - offset;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	gsize off = put_card_result(resp, 0x10, 0x90, 0x00)
			    ? qmi_message_tlv_write_init(resp, 0x11, NULL)
			    : 0;
	bool ok = off && qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, (guint16)n, NULL);
	for (size_t i = 0; ok && i < n; i++)
		ok = qmi_message_tlv_write_guint8(resp, content[offset + i], NULL);
	reply(q, r, resp, ok && qmi_message_tlv_write_complete(resp, off, NULL));
}

static bool put_retries(QmiMessage *m, uint8_t verify, uint8_t unblock)
{
	gsize off = qmi_message_tlv_write_init(m, 0x10, NULL);

	return off && qmi_message_tlv_write_guint8(m, verify, NULL) &&
	       qmi_message_tlv_write_guint8(m, unblock, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

/* A PIN TLV's code {u8 length, digits} at v (len bytes left) into out; the bytes it took,
 * or -1 when it does not fit. */
static int take_code(const uint8_t *v, size_t len, char *out, size_t outlen)
{
	if (len < 1 || len < 1u + v[0] || v[0] >= outlen)
		return -1;
	memcpy(out, v + 1, v[0]);
	out[v[0]] = '\0';
	return 1 + v[0];
}

/* What the card said, as UIM answers it: the result, the retries left (0x10: PIN1, PUK1)
 * and, where the message has it (card_result_type, 0 none), the card's status words. A
 * wrong code is ACCESS_DENIED with 63 Cx (ModemManager fc47fa7f); Set PIN Protection has no
 * card result TLV (libqmi uim.json), so it names the wrong PIN INCORRECT_PIN, the error
 * ModemManager reads the same way. A blocked PIN1 is PIN_BLOCKED with 69 83, a card blocked
 * for good PIN_ALWAYS_BLOCKED; no public capture shows the last two with status words:
 * those are TS 102 221's. */
static void uim_pin_answer(struct sim_qmi *q, const struct req *r, enum sim_card_result res,
			   bool unblock, uint8_t card_result_type)
{
	QmiProtocolError e;
	uint8_t sw1 = 0x90, sw2 = 0x00;
	unsigned left = unblock ? q->card.puk_retries : q->card.pin_retries;

	switch (res) {
	case SIM_CARD_OK:
		e = QMI_PROTOCOL_ERROR_NONE;
		break;
	case SIM_CARD_WRONG:
		e = card_result_type ? QMI_PROTOCOL_ERROR_ACCESS_DENIED
				     : QMI_PROTOCOL_ERROR_INCORRECT_PIN;
		sw1 = 0x63;
		sw2 = (uint8_t)(0xC0 | (left & 0x0F));
		break;
	case SIM_CARD_BLOCKED:
		e = QMI_PROTOCOL_ERROR_PIN_BLOCKED;
		sw1 = 0x69;
		sw2 = 0x83;
		break;
	case SIM_CARD_DEAD:
		e = QMI_PROTOCOL_ERROR_PIN_ALWAYS_BLOCKED;
		sw1 = 0x69;
		sw2 = 0x83;
		break;
	case SIM_CARD_NO_EFFECT:
		/* Nothing to do: the card answers that PIN1 is not as the command needs. */
		e = QMI_PROTOCOL_ERROR_NO_EFFECT;
		card_result_type = 0;
		break;
	case SIM_CARD_NOT_INSERTED:
		reply_error(q, r, QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
		return;
	case SIM_CARD_INVALID_CODE:
	default:
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, e);
	bool ok = put_retries(resp, (uint8_t)q->card.pin_retries, (uint8_t)q->card.puk_retries) &&
		  (!card_result_type || put_card_result(resp, card_result_type, sw1, sw2));
	reply(q, r, resp, ok);
}

/* The session and the info TLV 0x02 {u8 PIN id, codes...} of the four PIN commands: the
 * codes into a and b (b NULL: one code; extra: a u8 before the codes, Set PIN Protection's
 * "enabled"). false when answered already (malformed, missing, not PIN1). */
static bool uim_pin_request(struct sim_qmi *q, const struct req *r, bool extra, uint8_t *ret_extra,
			    char *a, char *b)
{
	uint16_t len;
	const uint8_t *info = get_raw(r, 0x02, &len);
	int session = uim_session(r);

	if (!info || session < 0) {
		reply_error(q, r,
			    info ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
				 : QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return false;
	}
	size_t at = extra ? 2 : 1;
	if (len < at + 1) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return false;
	}
	if (extra)
		*ret_extra = info[1];
	int n = take_code(info + at, len - at, a, SIM_CARD_PIN_MAX + 1);
	if (n >= 0) {
		at += (size_t)n;
		if (b) {
			n = at < len ? take_code(info + at, len - at, b, SIM_CARD_PIN_MAX + 1) : -1;
			at += n >= 0 ? (size_t)n : 0;
		}
	}
	if (n < 0 || at != len) {
		/* A code longer than 8 digits is an argument no card takes. */
		reply_error(q, r,
			    n < 0 && len > at ? QMI_PROTOCOL_ERROR_INVALID_ARGUMENT
					      : QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return false;
	}
	if (info[0] != QMI_UIM_PIN_ID_PIN1) {
		/* Only PIN1 is simulated. */
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return false;
	}
	return true;
}

/* Verify PIN: 0x01 session, 0x02 {u8 PIN id, u8 length, PIN}; card result in 0x13 (0x11 is
 * the encrypted PIN1 there, libqmi uim.json). */
static void uim_verify_pin(struct sim_qmi *q, const struct req *r)
{
	char pin[SIM_CARD_PIN_MAX + 1];

	if (!uim_pin_request(q, r, false, NULL, pin, NULL))
		return;
	enum sim_card_result res = sim_card_verify(&q->card, pin);
	qlog(q, LOG_INFO, "sim qmi uim: verify PIN1: %d, %u tries left", res, q->card.pin_retries);
	uim_pin_answer(q, r, res, false, 0x13);
}

/* Unblock PIN: 0x02 {u8 PIN id, u8 length, PUK, u8 length, new PIN}; card result 0x13. */
static void uim_unblock_pin(struct sim_qmi *q, const struct req *r)
{
	char puk[SIM_CARD_PIN_MAX + 1], pin[SIM_CARD_PIN_MAX + 1];

	if (!uim_pin_request(q, r, false, NULL, puk, pin))
		return;
	enum sim_card_result res = sim_card_unblock(&q->card, puk, pin);
	qlog(q, LOG_INFO, "sim qmi uim: unblock PIN1: %d, PUK %u tries left", res,
	     q->card.puk_retries);
	uim_pin_answer(q, r, res, true, 0x13);
}

/* Set PIN Protection: 0x02 {u8 PIN id, u8 enabled, u8 length, PIN}; no card result. */
static void uim_set_pin_protection(struct sim_qmi *q, const struct req *r)
{
	char pin[SIM_CARD_PIN_MAX + 1];
	uint8_t enable = 0;

	if (!uim_pin_request(q, r, true, &enable, pin, NULL))
		return;
	if (enable > 1) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	enum sim_card_result res = sim_card_set_protection(&q->card, enable, pin);
	qlog(q, LOG_INFO, "sim qmi uim: PIN1 protection %s: %d", enable ? "on" : "off", res);
	uim_pin_answer(q, r, res, false, 0);
}

/* Change PIN: 0x02 {u8 PIN id, u8 length, old PIN, u8 length, new PIN}; card result 0x13. */
static void uim_change_pin(struct sim_qmi *q, const struct req *r)
{
	char old[SIM_CARD_PIN_MAX + 1], pin[SIM_CARD_PIN_MAX + 1];

	if (!uim_pin_request(q, r, false, NULL, old, pin))
		return;
	enum sim_card_result res = sim_card_change(&q->card, old, pin);
	qlog(q, LOG_INFO, "sim qmi uim: change PIN1: %d", res);
	uim_pin_answer(q, r, res, false, 0x13);
}

static void dms_get_capabilities(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	gsize off = qmi_message_tlv_write_init(resp, 0x01, NULL);
	/* LTE category 4 rates, PS only, SIM supported, one radio: LTE. */
	bool ok = off && qmi_message_tlv_write_guint32(resp, QMI_ENDIAN_LITTLE, 50000000, NULL) &&
		  qmi_message_tlv_write_guint32(resp, QMI_ENDIAN_LITTLE, 150000000, NULL) &&
		  qmi_message_tlv_write_guint8(resp, QMI_DMS_DATA_SERVICE_CAPABILITY_PS, NULL) &&
		  qmi_message_tlv_write_guint8(resp, QMI_DMS_SIM_CAPABILITY_SUPPORTED, NULL) &&
		  qmi_message_tlv_write_guint8(resp, 1, NULL) &&
		  qmi_message_tlv_write_guint8(resp, QMI_DMS_RADIO_INTERFACE_LTE, NULL) &&
		  qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

/* ---- NAS ---- */

#define SIM_RSSI (-65) /* dBm */
#define SIM_RSRQ (-9)  /* dB */
#define SIM_RSRP (-95) /* dBm */
#define SIM_SNR	 130   /* 0.1 dB */

/* Registered in a visited network: the test's switch (quirks.roaming_file) exists. */
static bool roaming(const struct sim_qmi *q)
{
	return q->opts.quirks.roaming_file[0] && access(q->opts.quirks.roaming_file, F_OK) == 0;
}

static bool registered(const struct sim_qmi *q)
{
	return !q->low_power && g_get_monotonic_time() >= q->registered_at;
}

/*
 * Not registered, detached, no radio in service: a modem whose SIM waits for its PIN
 * (NOT_REGISTERED) or one still searching after power-up (--register-delay).
 */
static bool put_serving_unregistered(QmiMessage *m, QmiNasRegistrationState state)
{
	gsize off = qmi_message_tlv_write_init(m, 0x01, NULL);

	return off && qmi_message_tlv_write_guint8(m, (uint8_t)state, NULL) &&
	       qmi_message_tlv_write_guint8(m, QMI_NAS_ATTACH_STATE_DETACHED, NULL) &&
	       qmi_message_tlv_write_guint8(m, QMI_NAS_ATTACH_STATE_DETACHED, NULL) &&
	       qmi_message_tlv_write_guint8(m, QMI_NAS_NETWORK_TYPE_UNKNOWN, NULL) &&
	       qmi_message_tlv_write_guint8(m, 0, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

/* The registration as Get Serving System and its indication tell it. */
enum serving_state {
	SERVING_DENIED,
	SERVING_IDLE,
	SERVING_SEARCHING,
	SERVING_HOME,
	SERVING_ROAMING
};

static enum serving_state serving_state(const struct sim_qmi *q)
{
	if (!sim_locked(q) && registered(q) && q->manual_denied)
		return SERVING_DENIED;
	if (sim_locked(q) || !registered(q))
		return sim_locked(q) || q->low_power ? SERVING_IDLE : SERVING_SEARCHING;
	return roaming(q) ? SERVING_ROAMING : SERVING_HOME;
}

/* The Serving System TLVs: the same in the Get answer and in the indication. */
static bool put_serving_system(const struct sim_qmi *q, QmiMessage *m)
{
	enum serving_state st = serving_state(q);

	if (st == SERVING_DENIED)
		return put_serving_unregistered(m, QMI_NAS_REGISTRATION_STATE_REGISTRATION_DENIED);
	if (st == SERVING_IDLE)
		return put_serving_unregistered(m, QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED);
	if (st == SERVING_SEARCHING)
		return put_serving_unregistered(
			m, QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED_SEARCHING);

	const struct sim_qmi_network *net = q->network ? q->network : &sim_qmi_networks[0];
	gsize off = qmi_message_tlv_write_init(m, 0x01, NULL);
	bool ok = off &&
		  qmi_message_tlv_write_guint8(m, QMI_NAS_REGISTRATION_STATE_REGISTERED, NULL) &&
		  qmi_message_tlv_write_guint8(m, QMI_NAS_ATTACH_STATE_ATTACHED, NULL) &&
		  qmi_message_tlv_write_guint8(m, QMI_NAS_ATTACH_STATE_ATTACHED, NULL) &&
		  qmi_message_tlv_write_guint8(m, QMI_NAS_NETWORK_TYPE_3GPP, NULL) &&
		  qmi_message_tlv_write_guint8(m, 1, NULL) &&
		  qmi_message_tlv_write_gint8(m, QMI_NAS_RADIO_INTERFACE_LTE, NULL) &&
		  qmi_message_tlv_write_complete(m, off, NULL);

	ok = ok && put_u8(m, 0x10,
			  st == SERVING_ROAMING ? QMI_NAS_ROAMING_INDICATOR_STATUS_ON
						: QMI_NAS_ROAMING_INDICATOR_STATUS_OFF);

	off = ok ? qmi_message_tlv_write_init(m, 0x11, NULL) : 0;
	ok = off && qmi_message_tlv_write_guint8(m, 1, NULL) &&
	     qmi_message_tlv_write_guint8(m, QMI_NAS_DATA_CAPABILITY_LTE, NULL) &&
	     qmi_message_tlv_write_complete(m, off, NULL);

	/* PLMN 001/01, the 3GPP test network, or the one chosen by hand; the name inside a
	 * sequence has a u8 length. */
	off = ok ? qmi_message_tlv_write_init(m, 0x12, NULL) : 0;
	ok = off && qmi_message_tlv_write_guint16(m, QMI_ENDIAN_LITTLE, net->mcc, NULL) &&
	     qmi_message_tlv_write_guint16(m, QMI_ENDIAN_LITTLE, net->mnc, NULL) &&
	     qmi_message_tlv_write_string(m, 1, net->name, -1, NULL) &&
	     qmi_message_tlv_write_complete(m, off, NULL);

	return ok && put_u32(m, 0x1D, 0x0001a2d1) /* cell id */ &&
	       put_u16(m, 0x24, 0x0001) /* tracking area code */;
}

static void nas_get_serving_system(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	reply(q, r, resp, put_serving_system(q, resp));
}

/*
 * Register Indications: each TLV an on/off byte for one kind of NAS indication. Serving System
 * events (0x13) is the one the sim sends; the others are accepted and not sent, as a modem
 * does for a radio it does not have.
 */
static void nas_register_indications(struct sim_qmi *q, const struct req *r)
{
	uint8_t on = 0;
	int have = get_u8(r, 0x13, &on);

	if (have < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	if (have)
		q->nas_serving_ind[r->cid] = on != 0;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

void sim_qmi_tick(struct sim_qmi *q)
{
	int now = (int)serving_state(q);

	bool first = q->serving_told < 0;

	if (q->serving_told == now)
		return;
	q->serving_told = now;
	if (first)
		return; /* the first look: nothing changed for anyone yet */
	for (unsigned cid = CID_MIN; cid <= CID_MAX; cid++) {
		if (!q->nas_serving_ind[cid])
			continue;
		g_autoptr(QmiMessage) m = qmi_message_new(QMI_SERVICE_NAS, (guint8)cid, 0, 0x0024);
		m->data[3] = QMUX_FLAG_MODEM;
		m->data[SDU_OFFSET] = SVC_FLAG_INDICATION;
		if (!put_serving_system(q, m))
			continue;
		q->stats.qmi_indications++;
		send_raw(q, m);
	}
}

static bool put_strength(QmiMessage *m, uint8_t type, int8_t value)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);

	return off && qmi_message_tlv_write_gint8(m, value, NULL) &&
	       qmi_message_tlv_write_gint8(m, QMI_NAS_RADIO_INTERFACE_LTE, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

static bool put_i16(QmiMessage *m, uint8_t type, int16_t v)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);

	return off && qmi_message_tlv_write_gint16(m, QMI_ENDIAN_LITTLE, v, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

/* The LTE signal now: the defaults, or what quirks.signal_file says while it exists ("RSSI
 * RSRQ RSRP SNR": dBm, dB, dBm, tenths of dB; a test changes it at run time). */
struct lte_signal {
	int rssi, rsrq, rsrp, snr;
};

static struct lte_signal lte_signal(struct sim_qmi *q)
{
	struct lte_signal v = { SIM_RSSI, SIM_RSRQ, SIM_RSRP, SIM_SNR };
	struct lte_signal f;
	FILE *file;

	if (!q->opts.quirks.signal_file[0] || !(file = fopen(q->opts.quirks.signal_file, "re")))
		return v;
	if (fscanf(file, "%d %d %d %d", &f.rssi, &f.rsrq, &f.rsrp, &f.snr) == 4 &&
	    f.rssi >= INT8_MIN && f.rssi <= INT8_MAX && f.rsrq >= INT8_MIN && f.rsrq <= INT8_MAX &&
	    f.rsrp >= INT16_MIN && f.rsrp <= INT16_MAX && f.snr >= INT16_MIN && f.snr <= INT16_MAX)
		v = f;
	else
		qlog(q, LOG_WARNING, "%s: not \"RSSI RSRQ RSRP SNR\": default signal",
		     q->opts.quirks.signal_file);
	fclose(file);
	return v;
}

static void nas_get_signal_strength(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	struct lte_signal v = lte_signal(q);
	/* The request mask only asks for extras; a modem answers what it has. */
	bool ok = put_strength(resp, 0x01, (int8_t)v.rssi) &&
		  put_strength(resp, 0x16, (int8_t)v.rsrq) && put_i16(resp, 0x17, (int16_t)v.snr) &&
		  put_i16(resp, 0x18, (int16_t)v.rsrp);
	reply(q, r, resp, ok);
}

static void nas_get_signal_info(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	struct lte_signal v = lte_signal(q);
	gsize off = qmi_message_tlv_write_init(resp, 0x14, NULL);
	bool ok = off && qmi_message_tlv_write_gint8(resp, (int8_t)v.rssi, NULL) &&
		  qmi_message_tlv_write_gint8(resp, (int8_t)v.rsrq, NULL) &&
		  qmi_message_tlv_write_gint16(resp, QMI_ENDIAN_LITTLE, (int16_t)v.rsrp, NULL) &&
		  qmi_message_tlv_write_gint16(resp, QMI_ENDIAN_LITTLE, (int16_t)v.snr, NULL) &&
		  qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

/* Mode preference 0x11 and LTE band preference 0x15 as last set (at first: LTE, all this
 * modem has, and every band it supports, what a modem nobody restricted answers); the
 * extended preference 0x23 too once a band above 64 could be in it (never on this modem). */
static void nas_get_system_selection_preference(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp,
	      put_u8(resp, 0x10, 0) /* emergency mode off */ && put_u16(resp, 0x11, q->mode_pref) &&
		      put_u64(resp, 0x15, q->lte_band_pref[0]));
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * Set System Selection Preference: mode preference 0x11 (u16), LTE band preference 0x15
 * (u64) or extended 0x24 (4 x u64); the other TLVs are taken and ignored (libqmi's
 * definitions give their sizes; MODEMS.md has no capture). A mode or band this modem does
 * not have is INVALID_ARGUMENT, nothing changed (no public capture: the strict answer).
 */
static void nas_set_system_selection_preference(struct sim_qmi *q, const struct req *r)
{
	uint16_t len, mode = q->mode_pref;
	uint64_t bands[4];
	const uint8_t *v;

	memcpy(bands, q->lte_band_pref, sizeof(bands));
	if ((v = get_raw(r, 0x11, &len))) {
		if (len != 2) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
			return;
		}
		mode = get_le16(v);
	}
	if ((v = get_raw(r, 0x15, &len))) {
		if (len != 8) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
			return;
		}
		memset(bands, 0, sizeof(bands));
		bands[0] = le64_at(v);
	}
	if ((v = get_raw(r, 0x24, &len))) {
		if (len != 32) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
			return;
		}
		for (int i = 0; i < 4; i++)
			bands[i] = le64_at(v + 8 * i);
	}
	if (!(mode & QMI_NAS_RAT_MODE_PREFERENCE_LTE) ||
	    (mode & ~QMI_NAS_RAT_MODE_PREFERENCE_LTE) || !bands[0] ||
	    (bands[0] & ~SIM_QMI_LTE_BANDS) || bands[1] || bands[2] || bands[3]) {
		qlog(q, LOG_INFO, "NAS: system selection mode %#x bands %#" PRIx64 " refused", mode,
		     bands[0]);
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	q->mode_pref = mode;
	memcpy(q->lte_band_pref, bands, sizeof(bands));
	qlog(q, LOG_INFO, "NAS: system selection mode %#x LTE bands %#" PRIx64, mode, bands[0]);
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

const struct sim_qmi_network sim_qmi_networks[SIM_QMI_N_NETWORKS] = {
	{ 1, 1, "Test Network",
	  QMI_NAS_NETWORK_STATUS_CURRENT_SERVING | QMI_NAS_NETWORK_STATUS_HOME },
	{ 1, 2, "Other Network",
	  QMI_NAS_NETWORK_STATUS_AVAILABLE | QMI_NAS_NETWORK_STATUS_ROAMING },
	{ 1, 3, "Barred Network",
	  QMI_NAS_NETWORK_STATUS_AVAILABLE | QMI_NAS_NETWORK_STATUS_ROAMING |
		  QMI_NAS_NETWORK_STATUS_FORBIDDEN },
};

/*
 * Network Scan: the networks of sim_qmi_networks in TLV 0x10 (MCC, MNC, status, name with a
 * u8 length) and their radio (LTE) in 0x11, as libqmi defines them; the one registered in is
 * CURRENT_SERVING. Without radio (low power) or SIM: DEVICE_NOT_READY (no capture; strict).
 */
static void nas_network_scan(struct sim_qmi *q, const struct req *r)
{
	const struct sim_qmi_network *cur = q->network ? q->network : &sim_qmi_networks[0];

	if (q->low_power || sim_locked(q)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_DEVICE_NOT_READY);
		return;
	}
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	gsize off = qmi_message_tlv_write_init(resp, 0x10, NULL);
	bool ok = off &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, SIM_QMI_N_NETWORKS, NULL);
	for (size_t i = 0; ok && i < SIM_QMI_N_NETWORKS; i++) {
		const struct sim_qmi_network *n = &sim_qmi_networks[i];
		uint8_t status = n->status & ~QMI_NAS_NETWORK_STATUS_CURRENT_SERVING;

		if (n == cur && !q->manual_denied)
			status = (status & ~QMI_NAS_NETWORK_STATUS_AVAILABLE) |
				 QMI_NAS_NETWORK_STATUS_CURRENT_SERVING;
		ok = qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, n->mcc, NULL) &&
		     qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, n->mnc, NULL) &&
		     qmi_message_tlv_write_guint8(resp, status, NULL) &&
		     qmi_message_tlv_write_string(resp, 1, n->name, -1, NULL);
	}
	ok = ok && qmi_message_tlv_write_complete(resp, off, NULL);
	off = ok ? qmi_message_tlv_write_init(resp, 0x11, NULL) : 0;
	ok = off &&
	     qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, SIM_QMI_N_NETWORKS, NULL);
	for (size_t i = 0; ok && i < SIM_QMI_N_NETWORKS; i++)
		ok = qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, sim_qmi_networks[i].mcc,
						   NULL) &&
		     qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, sim_qmi_networks[i].mnc,
						   NULL) &&
		     qmi_message_tlv_write_gint8(resp, QMI_NAS_RADIO_INTERFACE_LTE, NULL);
	ok = ok && qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

/*
 * Initiate Network Register: action 0x01 (mandatory) automatic -> home, or manual with
 * 0x10 {MCC, MNC, radio}: registered there when the scan lists it and it is not forbidden,
 * else the modem tries and the network denies it (serving system REGISTRATION_DENIED, as
 * TS 24.301 has it for a barred PLMN chosen by hand). No public capture of the response;
 * libqmi's definition, success either way.
 */
static void nas_initiate_network_register(struct sim_qmi *q, const struct req *r)
{
	uint8_t action;
	uint16_t len;
	const uint8_t *v;
	int have = get_u8(r, 0x01, &action);

	if (have < 0 || (have && action != QMI_NAS_NETWORK_REGISTER_TYPE_AUTOMATIC &&
			 action != QMI_NAS_NETWORK_REGISTER_TYPE_MANUAL)) {
		reply_error(q, r,
			    have < 0 ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
				     : QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	if (!have) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (action == QMI_NAS_NETWORK_REGISTER_TYPE_AUTOMATIC) {
		q->network = NULL;
		q->manual_denied = false;
		qlog(q, LOG_INFO, "NAS: automatic registration: home network");
	} else {
		v = get_raw(r, 0x10, &len);
		if (!v) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
			return;
		}
		if (len != 5) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
			return;
		}
		uint16_t mcc = get_le16(v), mnc = get_le16(v + 2);
		q->network = NULL;
		q->manual_denied = true;
		for (size_t i = 0; i < SIM_QMI_N_NETWORKS; i++)
			if (sim_qmi_networks[i].mcc == mcc && sim_qmi_networks[i].mnc == mnc &&
			    !(sim_qmi_networks[i].status & QMI_NAS_NETWORK_STATUS_FORBIDDEN)) {
				q->network = &sim_qmi_networks[i];
				q->manual_denied = false;
			}
		qlog(q, LOG_INFO, "NAS: manual registration in %03u%02u: %s", mcc, mnc,
		     q->manual_denied ? "denied" : "registered");
	}
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

/*
 * Get Network Time (0x007D): the 3GPP time TLV 0x11 {UTC year u16, month, day, hour, minute,
 * second, day of week (0 Monday), zone i8 in 15 min, DST u8 hours, radio i8}, the host's
 * clock in SIM_QMI_TIME_ZONE_QUARTERS, while registered (the network's NITZ came with
 * registration); not registered: success without the TLV (nothing heard). libqmi's
 * definition; MODEMS.md has no capture.
 */
static void nas_get_network_time(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	bool ok = true;

	if (!sim_locked(q) && registered(q) && !q->manual_denied) {
		g_autoptr(GDateTime) now = g_date_time_new_now_utc();
		gsize off = qmi_message_tlv_write_init(resp, 0x11, NULL);
		ok = off &&
		     qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE,
						   (guint16)g_date_time_get_year(now), NULL) &&
		     qmi_message_tlv_write_guint8(resp, (guint8)g_date_time_get_month(now), NULL) &&
		     qmi_message_tlv_write_guint8(resp, (guint8)g_date_time_get_day_of_month(now),
						  NULL) &&
		     qmi_message_tlv_write_guint8(resp, (guint8)g_date_time_get_hour(now), NULL) &&
		     qmi_message_tlv_write_guint8(resp, (guint8)g_date_time_get_minute(now),
						  NULL) &&
		     qmi_message_tlv_write_guint8(resp, (guint8)g_date_time_get_second(now),
						  NULL) &&
		     qmi_message_tlv_write_guint8(
			     resp, (guint8)(g_date_time_get_day_of_week(now) - 1), NULL) &&
		     qmi_message_tlv_write_gint8(resp, SIM_QMI_TIME_ZONE_QUARTERS, NULL) &&
		     qmi_message_tlv_write_guint8(resp, 0, NULL) &&
		     qmi_message_tlv_write_gint8(resp, QMI_NAS_RADIO_INTERFACE_LTE, NULL) &&
		     qmi_message_tlv_write_complete(resp, off, NULL);
	}
	reply(q, r, resp, ok);
}

/* ---- WDA ---- */

static uint32_t wda_protocol(enum qmap_version v)
{
	return v == QMAP_V5 ? WDA_PROTO_QMAPV5 : WDA_PROTO_QMAP;
}

static const char *qmap_name(enum qmap_version v)
{
	return v == QMAP_V5 ? "QMAPv5" : "QMAP";
}

static bool put_format(QmiMessage *m, const struct sim_qmi_data_format *f, bool ul_count,
		       bool ul_size, bool padding)
{
	uint32_t proto = wda_protocol(f->version);

	return put_u8(m, 0x10, 0) && put_u32(m, 0x11, QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP) &&
	       put_u32(m, 0x12, proto) && put_u32(m, 0x13, proto) &&
	       put_u32(m, 0x15, f->dl_max_datagrams) && put_u32(m, 0x16, f->dl_max_size) &&
	       (!ul_count || put_u32(m, 0x17, f->ul_max_datagrams)) &&
	       (!ul_size || put_u32(m, 0x18, f->ul_max_size)) &&
	       (!padding || put_u32(m, 0x1A, f->dl_min_padding));
}

/* min(requested, limit); absent or 0 means "as much as you can". */
static uint32_t grant(int present, uint32_t requested, uint32_t limit)
{
	return present > 0 && requested > 0 && requested < limit ? requested : limit;
}

/* A grant raised to at least `floor` (within the limit): modems grant above the request. */
static uint32_t grant_at_least(uint32_t granted, uint32_t floor, uint32_t limit)
{
	if (granted < floor)
		granted = floor < limit ? floor : limit;
	return granted;
}

/*
 * Endpoint Info {type u32, interface u32}: 1 when it names our data interface over HSUSB,
 * 0 when absent and allowed, otherwise the error to answer with (negative). Newer firmware
 * answers MISSING_ARGUMENT without it (ModemManager a8fd33eb, libqmi 3702c264). What a modem
 * answers to another interface number is not in any public capture: we choose the strict
 * INVALID_ARGUMENT, for every profile.
 */
static int check_endpoint(struct sim_qmi *q, const struct req *r, uint8_t type, bool for_bind)
{
	guint16 len = 0;
	const guint8 *v = qmi_message_get_raw_tlv(r->m, type, &len);

	if (!v) {
		q->stats.endpoint_missing++;
		if (!q->opts.quirks.require_endpoint_info)
			return 0;
		qlog(q, LOG_INFO, "sim qmi %s client %u: message 0x%04x without Endpoint Info",
		     r->svc >= 0 ? svc_names[r->svc] : "ctl", r->cid,
		     qmi_message_get_message_id(r->m));
		return -QMI_PROTOCOL_ERROR_MISSING_ARGUMENT;
	}
	if (len != 8)
		return -QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE;
	uint32_t ep_type =
		(uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
	uint32_t iface =
		(uint32_t)v[4] | (uint32_t)v[5] << 8 | (uint32_t)v[6] << 16 | (uint32_t)v[7] << 24;
	if (for_bind) {
		q->stats.binds_with_endpoint++;
		q->stats.bind_interface = iface;
	}
	if (ep_type != QMI_DATA_ENDPOINT_TYPE_HSUSB || iface != q->opts.quirks.data_interface) {
		q->stats.endpoint_wrong++;
		qlog(q, LOG_INFO,
		     "sim qmi %s client %u: message 0x%04x names endpoint type %u interface %u; "
		     "the data interface is HSUSB (2) %u",
		     r->svc >= 0 ? svc_names[r->svc] : "ctl", r->cid,
		     qmi_message_get_message_id(r->m), ep_type, iface,
		     q->opts.quirks.data_interface);
		return -QMI_PROTOCOL_ERROR_INVALID_ARGUMENT;
	}
	return 1;
}

static void wda_set_data_format(struct sim_qmi *q, const struct req *r)
{
	const struct sim_qmi_data_format *lim = &q->opts.limits;
	uint8_t qos = 0;
	uint32_t llp = 0, ul = 0, dl = 0, dl_dgrams = 0, dl_size = 0, ul_dgrams = 0, ul_size = 0;
	uint32_t ignored;
	int k_qos = get_u8(r, 0x10, &qos);
	int k_llp = get_u32(r, 0x11, &llp);
	int k_ul = get_u32(r, 0x12, &ul);
	int k_dl = get_u32(r, 0x13, &dl);
	int k_ndp = get_u32(r, 0x14, &ignored);
	int k_dl_dgrams = get_u32(r, 0x15, &dl_dgrams);
	int k_dl_size = get_u32(r, 0x16, &dl_size);
	int k_ep = check_size(r, 0x17, 8);
	int k_pad = get_u32(r, 0x19, &ignored);
	int k_ul_dgrams = get_u32(r, 0x1B, &ul_dgrams);
	int k_ul_size = get_u32(r, 0x1C, &ul_size);

	if (k_qos < 0 || k_llp < 0 || k_ul < 0 || k_dl < 0 || k_ndp < 0 || k_dl_dgrams < 0 ||
	    k_dl_size < 0 || k_ep < 0 || k_pad < 0 || k_ul_dgrams < 0 || k_ul_size < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	int ep = check_endpoint(q, r, 0x17, false);
	if (ep < 0) {
		reply_error(q, r, (QmiProtocolError)-ep);
		return;
	}

	/* One protocol for both directions: the data side has one QMAP version. */
	uint32_t cur = wda_protocol(q->format.version);
	uint32_t ul_p = k_ul ? ul : (k_dl ? dl : cur);
	uint32_t dl_p = k_dl ? dl : (k_ul ? ul : cur);
	enum qmap_version version;
	if (ul_p != dl_p) {
		qlog(q, LOG_INFO,
		     "sim qmi wda client %u: refusing UL protocol %u with DL protocol %u", r->cid,
		     ul_p, dl_p);
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
		return;
	}
	if (dl_p == WDA_PROTO_QMAP) {
		version = QMAP_V1;
	} else if (dl_p == WDA_PROTO_QMAPV5 && q->opts.quirks.v5_granted_as_v1) {
		/* A success that names another protocol than asked: the answer decides. */
		qlog(q, LOG_INFO, "sim qmi wda client %u: QMAPv5 asked, granting QMAP (v1)",
		     r->cid);
		version = QMAP_V1;
	} else if (dl_p == WDA_PROTO_QMAPV5 && !q->opts.no_qmapv5) {
		version = QMAP_V5;
	} else {
		qlog(q, LOG_INFO, "sim qmi wda client %u: refusing aggregation protocol %u (%s)",
		     r->cid, dl_p, qmi_wda_data_aggregation_protocol_get_string(dl_p) ?: "unknown");
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
		return;
	}

	const struct sim_qmi_quirks *qk = &q->opts.quirks;
	struct sim_qmi_data_format f = {
		.version = version,
		.dl_max_size = qk->dl_grant_fixed ? lim->dl_max_size
						  : grant(k_dl_size, dl_size, lim->dl_max_size),
		.dl_max_datagrams = qk->dl_grant_fixed
					    ? lim->dl_max_datagrams
					    : grant(k_dl_dgrams, dl_dgrams, lim->dl_max_datagrams),
		.ul_max_size = grant_at_least(grant(k_ul_size, ul_size, lim->ul_max_size),
					      qk->ul_min_size, lim->ul_max_size),
		.ul_max_datagrams =
			grant_at_least(grant(k_ul_dgrams, ul_dgrams, lim->ul_max_datagrams),
				       qk->ul_min_datagrams, lim->ul_max_datagrams),
		.dl_min_padding = qk->dl_min_padding,
	};
	if (f.dl_max_size < q->opts.dl_min_size) {
		qlog(q, LOG_INFO,
		     "sim qmi wda client %u: refusing DL max size %u: the data side needs %u",
		     r->cid, f.dl_max_size, q->opts.dl_min_size);
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}

	if (q->cb.set_data_format && q->cb.set_data_format(q->userdata, &f) < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INTERNAL);
		return;
	}
	q->format = f;
	q->stats.data_format_sets++;
	qlog(q, LOG_INFO,
	     "sim qmi wda client %u: data format %s%s, DL %u bytes/%u datagrams, UL %u bytes/%u "
	     "datagrams",
	     r->cid, qmap_name(version),
	     k_llp && llp != QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP
		     ? " (raw IP instead of the requested link layer)"
		     : "",
	     f.dl_max_size, f.dl_max_datagrams, f.ul_max_size, f.ul_max_datagrams);

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp,
	      put_format(resp, &f, k_ul_dgrams > 0 || qk->ul_min_datagrams,
			 k_ul_size > 0 || qk->ul_min_size, k_pad > 0 || f.dl_min_padding));
}

static void wda_get_data_format(struct sim_qmi *q, const struct req *r)
{
	int ep = check_endpoint(q, r, 0x10, false);
	if (ep < 0) {
		reply_error(q, r, (QmiProtocolError)-ep);
		return;
	}
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	/* Always 0x10-0x16, zero-filled when aggregation is off (openwrt/openwrt#9664). */
	reply(q, r, resp, put_format(resp, &q->format, true, true, true));
}

/* ---- WDS ---- */

static const char *family_name(uint8_t family)
{
	return family == QMI_WDS_IP_FAMILY_IPV6 ? "IPv6" : "IPv4";
}

static void wds_bind_mux_data_port(struct sim_qmi *q, const struct req *r)
{
	struct wds_client *c = &q->wds[r->cid];
	uint8_t mux;
	int k_ep = check_size(r, 0x10, 8);
	int k_mux = get_u8(r, 0x11, &mux);
	int k_type = check_size(r, 0x13, 4);

	if (k_ep < 0 || k_mux < 0 || k_type < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	int ep = check_endpoint(q, r, 0x10, true);
	if (ep < 0) {
		reply_error(q, r, (QmiProtocolError)-ep);
		return;
	}
	if (k_mux == 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (mux < CONFIG_MUX_ID_MIN || mux > CONFIG_MUX_ID_MAX) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	/* Telit's script binds only 112 and 113; what the firmware answers to another id is
	 * not public: we choose the strict INVALID_ARGUMENT. */
	if (q->opts.quirks.mux_restricted &&
	    !(q->opts.quirks.mux_allowed[mux / 8] & (1u << (mux % 8)))) {
		qlog(q, LOG_INFO, "sim qmi wds client %u: mux id %u is not one this firmware binds",
		     r->cid, mux);
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	if (c->connected && c->mux_id != mux) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_OPERATION);
		return;
	}
	c->mux_id = mux;
	qlog(q, LOG_DEBUG, "sim qmi wds client %u: bound to mux %u", r->cid, mux);

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

static void wds_set_ip_family(struct sim_qmi *q, const struct req *r)
{
	uint8_t family;
	int k = get_u8(r, 0x01, &family);

	if (k <= 0) {
		reply_error(q, r,
			    k == 0 ? QMI_PROTOCOL_ERROR_MISSING_ARGUMENT
				   : QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	if (family != QMI_WDS_IP_FAMILY_IPV4 && family != QMI_WDS_IP_FAMILY_IPV6 &&
	    family != QMI_WDS_IP_FAMILY_UNSPECIFIED) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_IP_FAMILY_PREFERENCE);
		return;
	}
	q->wds[r->cid].family = family;
	qlog(q, LOG_DEBUG, "sim qmi wds client %u: IP family %u", r->cid, family);

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

static bool put_call_end(QmiMessage *m, uint16_t reason, uint16_t vtype, int16_t vreason)
{
	gsize off;

	if (!put_u16(m, 0x10, reason))
		return false;
	off = qmi_message_tlv_write_init(m, 0x11, NULL);
	return off && qmi_message_tlv_write_guint16(m, QMI_ENDIAN_LITTLE, vtype, NULL) &&
	       qmi_message_tlv_write_gint16(m, QMI_ENDIAN_LITTLE, vreason, NULL) &&
	       qmi_message_tlv_write_complete(m, off, NULL);
}

static void call_failed(struct sim_qmi *q, const struct req *r, uint16_t reason, int16_t vreason,
			const char *why)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_CALL_FAILED);

	q->stats.qmi_sessions_failed++;
	qlog(q, LOG_INFO, "sim qmi wds client %u: start network on mux %u failed: %s (3GPP %d)",
	     r->cid, q->wds[r->cid].mux_id, why, vreason);
	reply(q, r, resp,
	      put_call_end(resp, reason, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP, vreason));
}

static void indicate_status(struct sim_qmi *q, uint8_t cid, QmiWdsConnectionStatus status,
			    uint8_t family, bool with_reason, uint16_t reason, uint16_t vtype,
			    int16_t vreason)
{
	g_autoptr(QmiMessage) m =
		qmi_message_new(QMI_SERVICE_WDS, cid, 0, WDS_PACKET_SERVICE_STATUS);
	gsize off;
	bool ok;

	/* qmi_message_new() builds a host request: turn it into a modem indication. */
	m->data[3] = QMUX_FLAG_MODEM;
	m->data[SDU_OFFSET] = SVC_FLAG_INDICATION;

	off = qmi_message_tlv_write_init(m, 0x01, NULL);
	ok = off && qmi_message_tlv_write_guint8(m, status, NULL) &&
	     qmi_message_tlv_write_guint8(m, 0 /* reconfiguration required */, NULL) &&
	     qmi_message_tlv_write_complete(m, off, NULL);
	if (ok && with_reason)
		ok = put_call_end(m, reason, vtype, vreason);
	ok = ok && put_u8(m, 0x12, family);
	if (!ok)
		return;
	q->stats.qmi_indications++;
	send_raw(q, m);
}

static bool apn_select(const struct sim_qmi *q, const struct req *r, unsigned *ret,
		       bool *ret_profile_bad)
{
	uint16_t len;
	const uint8_t *apn = get_raw(r, 0x14, &len);
	uint8_t profile;

	*ret_profile_bad = false;
	if (apn && len > 0) {
		for (unsigned i = 0; i < q->opts.n_apn; i++)
			if (raw_equals(apn, len, q->opts.apn[i].name, true)) {
				*ret = i;
				return true;
			}
		return false;
	}
	if (get_u8(r, 0x31, &profile) > 0) {
		if (profile < 1 || profile > q->opts.n_apn) {
			*ret_profile_bad = true;
			return false;
		}
		*ret = profile - 1u;
		return true;
	}
	*ret = 0;
	return true;
}

static void wds_start_network(struct sim_qmi *q, const struct req *r)
{
	struct wds_client *c = &q->wds[r->cid];
	uint8_t family_pref = 0, auth = 0, profile;
	int k_family = get_u8(r, 0x19, &family_pref);
	int k_auth = get_u8(r, 0x16, &auth);
	int k_profile = get_u8(r, 0x31, &profile);

	if (k_family < 0 || k_auth < 0 || k_profile < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	if (sim_locked(q)) {
		/* Not attached: the call ends for lack of service. */
		g_autoptr(QmiMessage) resp =
			qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_CALL_FAILED);
		q->stats.qmi_sessions_failed++;
		reply(q, r, resp,
		      put_call_end(resp, QMI_WDS_CALL_END_REASON_GENERIC_NO_SERVICE,
				   QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_CM,
				   QMI_WDS_VERBOSE_CALL_END_REASON_CM_NO_SERVICE));
		return;
	}
	if (c->connected) {
		/* Real firmware: NO_EFFECT with packet data handle 0 (ModemManager 0d53df68,
		 * 068c7df4), an error that still carries a data TLV. */
		g_autoptr(QmiMessage) resp =
			qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NO_EFFECT);
		reply(q, r, resp, put_u32(resp, 0x01, 0));
		return;
	}

	if (!registered(q)) {
		/* No network yet: the generic reason only, no 3GPP cause (nothing was sent). */
		g_autoptr(QmiMessage) resp =
			qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_CALL_FAILED);
		q->stats.qmi_sessions_failed++;
		reply(q, r, resp, put_u16(resp, 0x10, QMI_WDS_CALL_END_REASON_GENERIC_NO_SERVICE));
		return;
	}
	uint8_t family = k_family > 0 ? family_pref : c->family;
	if (family == QMI_WDS_IP_FAMILY_UNSPECIFIED)
		family = c->family == QMI_WDS_IP_FAMILY_IPV6 ? QMI_WDS_IP_FAMILY_IPV6
							     : QMI_WDS_IP_FAMILY_IPV4;
	if (family != QMI_WDS_IP_FAMILY_IPV4 && family != QMI_WDS_IP_FAMILY_IPV6) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_IP_FAMILY_PREFERENCE);
		return;
	}

	unsigned a;
	bool profile_bad;
	if (!apn_select(q, r, &a, &profile_bad)) {
		if (profile_bad) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_PROFILE);
			return;
		}
		call_failed(q, r, QMI_WDS_CALL_END_REASON_GSM_WCDMA_UNKNOWN_APN,
			    QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN, "unknown APN");
		return;
	}

	const struct sim_qmi_apn *apn = &q->opts.apn[a];
	if (apn->auth) {
		uint16_t ulen, plen;
		const uint8_t *user = get_raw(r, 0x17, &ulen);
		const uint8_t *pass = get_raw(r, 0x18, &plen);
		if ((k_auth > 0 && auth == QMI_WDS_AUTHENTICATION_NONE) ||
		    !raw_equals(user, ulen, apn->user, false) ||
		    !raw_equals(pass, plen, apn->password, false)) {
			call_failed(q, r, QMI_WDS_CALL_END_REASON_GENERIC_AUTHENTICATION_FAILED,
				    QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED,
				    "user authentication failed");
			return;
		}
	}

	const struct sim_qmi_mux *mux = &q->opts.mux[c->mux_id];
	if (!mux->present || (mux->ipv4.family == 0 && mux->ipv6.family == 0)) {
		call_failed(q, r, QMI_WDS_CALL_END_REASON_GSM_WCDMA_INSUFFICIENT_RESOURCES,
			    QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_INSUFFICIENT_RESOURCES,
			    c->mux_id ? "no addresses for this mux" : "client not bound to a mux");
		return;
	}
	if (family == QMI_WDS_IP_FAMILY_IPV4 && mux->ipv4.family == 0) {
		call_failed(q, r, QMI_WDS_CALL_END_REASON_GENERIC_UNSPECIFIED,
			    QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_IPV6_ONLY_ALLOWED,
			    "no IPv4 address for this mux");
		return;
	}
	if (family == QMI_WDS_IP_FAMILY_IPV6 && mux->ipv6.family == 0) {
		call_failed(q, r, QMI_WDS_CALL_END_REASON_GENERIC_UNSPECIFIED,
			    QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_IPV4_ONLY_ALLOWED,
			    "no IPv6 address for this mux");
		return;
	}

	/* A second PDN on the same APN, refused by the network because of the default attach
	 * bearer (LongQT-sea/OpenStick-Builder#4). */
	if (q->opts.quirks.max_pdn_per_apn > 0) {
		unsigned pdns = 0;
		bool seen[CONFIG_MUX_ID_MAX + 1] = { false };
		for (unsigned cid = CID_MIN; cid <= CID_MAX; cid++) {
			const struct wds_client *o = &q->wds[cid];
			if (o->connected && o->apn == a && o->mux_id != c->mux_id &&
			    !seen[o->mux_id]) {
				seen[o->mux_id] = true;
				pdns++;
			}
		}
		if (pdns >= q->opts.quirks.max_pdn_per_apn) {
			call_failed(
				q, r, QMI_WDS_CALL_END_REASON_GENERIC_UNSPECIFIED,
				QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_MULTIPLE_CONNECTION_TO_SAME_PDN_NOT_ALLOWED,
				"multiple PDN connections to the same APN not allowed");
			return;
		}
	}

	/* Handles look like a modem's: opaque, never 0 and never the "any" value. */
	uint32_t handle = q->next_handle++;
	if (handle == 0 || handle == HANDLE_ANY)
		handle = q->next_handle = 0x10000001u;

	c->connected = true;
	c->session_family = family;
	c->handle = handle;
	c->apn = a;
	if (q->mux_sessions[c->mux_id]++ == 0)
		q->muxes_up++;
	q->stats.qmi_sessions_started++;

	char addr[INET6_ADDRSTRLEN] = "?";
	const struct config_prefix *p = family == QMI_WDS_IP_FAMILY_IPV4 ? &mux->ipv4 : &mux->ipv6;
	inet_ntop(p->family, &p->addr, addr, sizeof(addr));
	qlog(q, LOG_INFO,
	     "sim qmi wds client %u: session up on mux %u, %s %s/%u, APN '%s', handle %u", r->cid,
	     c->mux_id, family_name(family), addr, p->prefixlen, apn->name, handle);

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_u32(resp, 0x01, handle));
	indicate_status(q, r->cid, QMI_WDS_CONNECTION_STATUS_CONNECTED, family, false, 0, 0, 0);
}

static void wds_stop_network(struct sim_qmi *q, const struct req *r)
{
	struct wds_client *c = &q->wds[r->cid];
	uint32_t handle;
	uint8_t autoconnect;
	int k = get_u32(r, 0x01, &handle);
	int k_auto = get_u8(r, 0x10, &autoconnect);

	if (k < 0 || k_auto < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	if (k == 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}

	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	if (c->connected && (handle == c->handle || handle == HANDLE_ANY)) {
		uint8_t family = c->session_family;
		session_end(q, r->cid);
		qlog(q, LOG_INFO, "sim qmi wds client %u: session on mux %u stopped by the host",
		     r->cid, c->mux_id);
		reply(q, r, resp, true);
		indicate_status(q, r->cid, QMI_WDS_CONNECTION_STATUS_DISCONNECTED, family, true,
				QMI_WDS_CALL_END_REASON_GENERIC_CLIENT_END,
				QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_CM,
				QMI_WDS_VERBOSE_CALL_END_REASON_CM_CLIENT_END);
		return;
	}
	if (handle == HANDLE_ANY) {
		/* "Stop whatever is there" with nothing there: nothing to complain about. */
		reply(q, r, resp, true);
		return;
	}
	reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_HANDLE);
}

static void wds_get_packet_service_status(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);

	reply(q, r, resp,
	      put_u8(resp, 0x01,
		     q->wds[r->cid].connected ? QMI_WDS_CONNECTION_STATUS_CONNECTED
					      : QMI_WDS_CONNECTION_STATUS_DISCONNECTED));
}

/*
 * Get Packet Statistics: out of a call the answer is OUT_OF_CALL together with the last
 * call's byte counters (libqmi e44561e8), an error response that carries data TLVs. The
 * sim does not count per client: the counters are 0.
 */
/* Profile {u8 type, u8 index or family} (TLV 0x01 of both profile requests); -1 malformed or
 * missing (the answer is then sent). */
static int profile_key(struct sim_qmi *q, const struct req *r, uint8_t *ret_second)
{
	uint16_t len;
	const uint8_t *v = get_raw(r, 0x01, &len);

	if (!v || len != 2) {
		reply_error(q, r,
			    v ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
			      : QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return -1;
	}
	if (v[0] != QMI_WDS_PROFILE_TYPE_3GPP) {
		/* An LTE-only modem keeps no 3GPP2 profiles. */
		g_autoptr(QmiMessage) resp =
			qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_EXTENDED_INTERNAL);
		reply(q, r, resp,
		      put_u16(resp, 0xE0, QMI_WDS_DS_PROFILE_ERROR_INVALID_PROFILE_TYPE));
		return -1;
	}
	*ret_second = v[1];
	return 0;
}

/* The default profile (LTE attach, and Start Network without a profile): profile 1. */
static void wds_get_default_profile_number(struct sim_qmi *q, const struct req *r)
{
	uint8_t family;

	if (profile_key(q, r, &family) < 0)
		return;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_u8(resp, 0x01, 1));
}

/* Profile N is the Nth APN (as Start Network's profile index), PDP type IPv4v6. */
static void wds_get_profile_settings(struct sim_qmi *q, const struct req *r)
{
	uint8_t index;

	if (profile_key(q, r, &index) < 0)
		return;
	if (index < 1 || index > q->opts.n_apn) {
		g_autoptr(QmiMessage) resp =
			qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_EXTENDED_INTERNAL);
		reply(q, r, resp,
		      put_u16(resp, 0xE0, QMI_WDS_DS_PROFILE_ERROR_INVALID_PROFILE_NUMBER));
		return;
	}
	const struct sim_qmi_apn *a = &q->opts.apn[index - 1];
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	bool ok = put_string(resp, 0x10, a->name) &&
		  put_u8(resp, 0x11, QMI_WDS_PDP_TYPE_IPV4_OR_IPV6) &&
		  put_string(resp, 0x14, a->name);
	if (a->auth)
		ok = ok && put_string(resp, 0x1B, a->user) &&
		     put_u8(resp, 0x1D, QMI_WDS_AUTHENTICATION_PAP | QMI_WDS_AUTHENTICATION_CHAP);
	reply(q, r, resp, ok);
}

static void wds_get_packet_statistics(struct sim_qmi *q, const struct req *r)
{
	g_autoptr(QmiMessage) resp = qmi_message_response_new(
		r->m, q->wds[r->cid].connected ? QMI_PROTOCOL_ERROR_NONE
					       : QMI_PROTOCOL_ERROR_OUT_OF_CALL);
	gsize off1 = qmi_message_tlv_write_init(resp, 0x19, NULL);
	bool ok = off1 && qmi_message_tlv_write_guint64(resp, QMI_ENDIAN_LITTLE, 0, NULL) &&
		  qmi_message_tlv_write_complete(resp, off1, NULL);
	gsize off2 = ok ? qmi_message_tlv_write_init(resp, 0x1A, NULL) : 0;
	ok = off2 && qmi_message_tlv_write_guint64(resp, QMI_ENDIAN_LITTLE, 0, NULL) &&
	     qmi_message_tlv_write_complete(resp, off2, NULL);
	reply(q, r, resp, ok);
}

static bool put_ipv4(QmiMessage *m, uint8_t type, const char *text)
{
	struct in_addr a;

	return inet_pton(AF_INET, text, &a) == 1 && put_u32(m, type, ipv4_value(&a));
}

static bool put_ipv6_text(QmiMessage *m, uint8_t type, const char *text)
{
	struct in6_addr a;

	return inet_pton(AF_INET6, text, &a) == 1 && put_ipv6(m, type, &a, -1);
}

static void wds_get_current_settings(struct sim_qmi *q, const struct req *r)
{
	const struct wds_client *c = &q->wds[r->cid];
	uint32_t mask = 0;
	int k = get_u32(r, 0x10, &mask);

	if (k < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	if (!c->connected) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_OUT_OF_CALL);
		return;
	}
	if (mask == 0)
		mask = 0xffffffffu;

	const struct sim_qmi_mux *mux = &q->opts.mux[c->mux_id];
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	bool ok = true;

	if (mask & QMI_WDS_REQUESTED_SETTINGS_APN_NAME)
		ok = ok && put_string(resp, 0x14, q->opts.apn[c->apn].name);

	if (c->session_family == QMI_WDS_IP_FAMILY_IPV4) {
		struct config_prefix gw;
		sim_qmi_gateway_of(&mux->ipv4, &gw);
		if (mask & QMI_WDS_REQUESTED_SETTINGS_DNS_ADDRESS)
			ok = ok && put_ipv4(resp, 0x15, SIM_QMI_DNS4_PRIMARY) &&
			     put_ipv4(resp, 0x16, SIM_QMI_DNS4_SECONDARY);
		if (mask & QMI_WDS_REQUESTED_SETTINGS_IP_ADDRESS)
			ok = ok && put_u32(resp, 0x1E, ipv4_value(&mux->ipv4.addr.v4));
		if (mask & QMI_WDS_REQUESTED_SETTINGS_GATEWAY_INFO)
			ok = ok && put_u32(resp, 0x20, ipv4_value(&gw.addr.v4)) &&
			     put_u32(resp, 0x21, ipv4_mask(mux->ipv4.prefixlen));
	} else {
		struct config_prefix gw;
		sim_qmi_gateway_of(&mux->ipv6, &gw);
		if (mask & QMI_WDS_REQUESTED_SETTINGS_IP_ADDRESS)
			ok = ok && put_ipv6(resp, 0x25, &mux->ipv6.addr.v6, mux->ipv6.prefixlen);
		if (mask & QMI_WDS_REQUESTED_SETTINGS_GATEWAY_INFO)
			ok = ok && put_ipv6(resp, 0x26, &gw.addr.v6, gw.prefixlen);
		if (mask & QMI_WDS_REQUESTED_SETTINGS_DNS_ADDRESS)
			ok = ok && put_ipv6_text(resp, 0x27, SIM_QMI_DNS6_PRIMARY) &&
			     put_ipv6_text(resp, 0x28, SIM_QMI_DNS6_SECONDARY);
	}
	if (mask & QMI_WDS_REQUESTED_SETTINGS_MTU)
		ok = ok && put_u32(resp, 0x29, q->opts.session_mtu);
	if (mask & QMI_WDS_REQUESTED_SETTINGS_IP_FAMILY)
		ok = ok && put_u8(resp, 0x2B, c->session_family);
	reply(q, r, resp, ok);
}

/* ---- dispatch ---- */

struct handler {
	uint8_t service;
	uint16_t message;
	void (*fn)(struct sim_qmi *q, const struct req *r);
};

/* ---- WMS: messages in NV storage (sim-qmi.h) ---- */

/* Message Mode TLV: 3GPP only (3GPP2 INVALID_ARGUMENT); absent is 3GPP. */
static int wms_mode_ok(const struct req *r, uint8_t type)
{
	uint8_t mode = QMI_WMS_MESSAGE_MODE_GSM_WCDMA;
	int k = get_u8(r, type, &mode);

	return k < 0 ? -EBADMSG : mode == QMI_WMS_MESSAGE_MODE_GSM_WCDMA ? 0 : -EINVAL;
}

static bool wms_storage_known(uint8_t storage)
{
	return storage == QMI_WMS_STORAGE_TYPE_NV || storage == QMI_WMS_STORAGE_TYPE_UIM;
}

static void wms_set_event_report(struct sim_qmi *q, const struct req *r)
{
	uint8_t on = 0;

	if (get_u8(r, 0x10, &on) < 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	q->wms_report[r->cid] = on != 0;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

/* Routes: a list of {type, class, storage, receipt action}; accepted when every entry is
 * point-to-point with a known storage and action. */
static void wms_set_routes(struct sim_qmi *q, const struct req *r)
{
	uint16_t len;
	const uint8_t *v = get_raw(r, 0x01, &len);

	if (!v) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (len < 2 || len != 2 + 4 * get_le16(v)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	for (unsigned i = 0; i < get_le16(v); i++) {
		const uint8_t *e = v + 2 + 4 * i;
		if (e[0] != QMI_WMS_MESSAGE_TYPE_POINT_TO_POINT ||
		    e[1] > QMI_WMS_MESSAGE_CLASS_CDMA ||
		    (!wms_storage_known(e[2]) && e[2] != QMI_WMS_STORAGE_TYPE_NONE) ||
		    e[3] > QMI_WMS_RECEIPT_ACTION_TRANSFER_AND_ACK) {
			reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
			return;
		}
	}
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

static void wms_list_messages(struct sim_qmi *q, const struct req *r)
{
	uint8_t storage, tag = 0xFF;
	int m = wms_mode_ok(r, 0x12);

	if (get_u8(r, 0x01, &storage) <= 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (m < 0 || get_u8(r, 0x11, &tag) < 0 || !wms_storage_known(storage)) {
		reply_error(q, r,
			    m == -EBADMSG ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
					  : QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	bool nv = storage == QMI_WMS_STORAGE_TYPE_NV;
	uint32_t n = 0;
	/* The SIM card stores no messages here: its list is empty. */
	for (unsigned i = 0; nv && i < SIM_QMI_SMS_MAX; i++)
		n += q->sms[i].used && (tag == 0xFF || q->sms[i].tag == tag);
	gsize off = qmi_message_tlv_write_init(resp, 0x01, NULL);
	bool ok = off && qmi_message_tlv_write_guint32(resp, QMI_ENDIAN_LITTLE, n, NULL);
	for (unsigned i = 0; ok && nv && i < SIM_QMI_SMS_MAX; i++)
		if (q->sms[i].used && (tag == 0xFF || q->sms[i].tag == tag))
			ok = qmi_message_tlv_write_guint32(resp, QMI_ENDIAN_LITTLE, i, NULL) &&
			     qmi_message_tlv_write_guint8(resp, q->sms[i].tag, NULL);
	ok = ok && qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

/* The message at {storage, index}; replies the error itself when there is none. */
static struct sim_sms *wms_find(struct sim_qmi *q, const struct req *r, uint8_t storage,
				uint32_t index)
{
	if (!wms_storage_known(storage)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return NULL;
	}
	if (storage != QMI_WMS_STORAGE_TYPE_NV || index >= SIM_QMI_SMS_MAX || !q->sms[index].used) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_INDEX);
		return NULL;
	}
	return &q->sms[index];
}

static void wms_raw_read(struct sim_qmi *q, const struct req *r)
{
	uint16_t len;
	const uint8_t *v = get_raw(r, 0x01, &len);
	int m = wms_mode_ok(r, 0x10);

	if (!v) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (len != 5 || m < 0) {
		reply_error(q, r,
			    len != 5 || m == -EBADMSG ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
						      : QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	uint32_t index =
		(uint32_t)v[1] | (uint32_t)v[2] << 8 | (uint32_t)v[3] << 16 | (uint32_t)v[4] << 24;
	struct sim_sms *sms = wms_find(q, r, v[0], index);
	if (!sms)
		return;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	gsize off = qmi_message_tlv_write_init(resp, 0x01, NULL);
	bool ok = off && qmi_message_tlv_write_guint8(resp, sms->tag, NULL) &&
		  qmi_message_tlv_write_guint8(
			  resp, QMI_WMS_MESSAGE_FORMAT_GSM_WCDMA_POINT_TO_POINT, NULL) &&
		  qmi_message_tlv_write_guint16(resp, QMI_ENDIAN_LITTLE, sms->len, NULL);
	for (unsigned i = 0; ok && i < sms->len; i++)
		ok = qmi_message_tlv_write_guint8(resp, sms->pdu[i], NULL);
	ok = ok && qmi_message_tlv_write_complete(resp, off, NULL);
	reply(q, r, resp, ok);
}

static void wms_delete(struct sim_qmi *q, const struct req *r)
{
	uint8_t storage;
	uint32_t index = 0;
	int have_index = get_u32(r, 0x10, &index);
	int m = wms_mode_ok(r, 0x12);

	if (get_u8(r, 0x01, &storage) <= 0) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (have_index < 0 || m < 0) {
		reply_error(q, r,
			    have_index < 0 || m == -EBADMSG ? QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE
							    : QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	if (have_index) {
		struct sim_sms *sms = wms_find(q, r, storage, index);
		if (!sms)
			return;
		*sms = (struct sim_sms){ 0 };
	} else if (!wms_storage_known(storage)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	} else if (storage == QMI_WMS_STORAGE_TYPE_NV) {
		memset(q->sms, 0, sizeof(q->sms)); /* no index: the whole storage */
	}
	q->stats.sms_deleted++;
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, true);
}

/* Raw Send: an SMS-SUBMIT with its SMSC address, handed to the "network": recorded as a hex
 * line in quirks.sms_outbox for the test to read. */
static void wms_raw_send(struct sim_qmi *q, const struct req *r)
{
	uint16_t len;
	const uint8_t *v = get_raw(r, 0x01, &len);

	if (!v) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
		return;
	}
	if (len < 3 || len != 3 + get_le16(v + 1)) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
		return;
	}
	const uint8_t *pdu = v + 3;
	size_t n = len - 3u;
	if (v[0] != QMI_WMS_MESSAGE_FORMAT_GSM_WCDMA_POINT_TO_POINT) {
		reply_error(q, r, QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
		return;
	}
	/* The SMSC address, then the TPDU: an SMS-SUBMIT (TP-MTI 01), else the modem cannot
	 * send it (WMS_ENCODING, as firmware answers a PDU it cannot parse). */
	if (n < 2 || pdu[0] > 11 || (size_t)pdu[0] + 2 > n || (pdu[pdu[0] + 1] & 0x03) != 0x01 ||
	    n > SIM_QMI_SMS_PDU_MAX) {
		q->stats.sms_refused++;
		reply_error(q, r, QMI_PROTOCOL_ERROR_WMS_ENCODING);
		return;
	}
	if (q->opts.quirks.sms_outbox[0]) {
		FILE *f = fopen(q->opts.quirks.sms_outbox, "ae");
		if (f) {
			for (size_t i = 0; i < n; i++)
				fprintf(f, "%02X", pdu[i]);
			fputc('\n', f);
			fclose(f);
		}
	}
	q->stats.sms_sent++;
	qlog(q, LOG_INFO, "sim qmi wms client %u: message sent (%zu bytes)", r->cid, n);
	g_autoptr(QmiMessage) resp = qmi_message_response_new(r->m, QMI_PROTOCOL_ERROR_NONE);
	reply(q, r, resp, put_u16(resp, 0x01, q->next_message_id++));
}

int sim_qmi_deliver_sms(struct sim_qmi *q, const uint8_t *pdu, size_t len)
{
	unsigned i = 0;

	if (len < 2 || len > SIM_QMI_SMS_PDU_MAX)
		return -EINVAL;
	while (i < SIM_QMI_SMS_MAX && q->sms[i].used)
		i++;
	if (i == SIM_QMI_SMS_MAX)
		return -ENOSPC; /* memory full: the network keeps it */
	q->sms[i] = (struct sim_sms){ .used = true,
				      .tag = QMI_WMS_MESSAGE_TAG_TYPE_MT_NOT_READ,
				      .len = (uint16_t)len };
	memcpy(q->sms[i].pdu, pdu, len);
	q->stats.sms_received++;
	for (unsigned cid = CID_MIN; cid <= CID_MAX; cid++) {
		if (!q->wms_report[cid])
			continue;
		g_autoptr(QmiMessage) m = qmi_message_new(QMI_SERVICE_WMS, (guint8)cid, 0, 0x0001);
		m->data[3] = QMUX_FLAG_MODEM;
		m->data[SDU_OFFSET] = SVC_FLAG_INDICATION;
		gsize off = qmi_message_tlv_write_init(m, 0x10, NULL);
		bool ok = off && qmi_message_tlv_write_guint8(m, QMI_WMS_STORAGE_TYPE_NV, NULL) &&
			  qmi_message_tlv_write_guint32(m, QMI_ENDIAN_LITTLE, i, NULL) &&
			  qmi_message_tlv_write_complete(m, off, NULL) &&
			  put_u8(m, 0x12, QMI_WMS_MESSAGE_MODE_GSM_WCDMA);
		if (!ok)
			continue;
		q->stats.qmi_indications++;
		send_raw(q, m);
	}
	qlog(q, LOG_INFO, "sim qmi wms: message from the network stored at NV %u", i);
	return (int)i;
}

static const struct handler handlers[] = {
	{ QMI_SERVICE_CTL, 0x0021, ctl_get_version_info },
	{ QMI_SERVICE_CTL, 0x0022, ctl_allocate_cid },
	{ QMI_SERVICE_CTL, 0x0023, ctl_release_cid },
	{ QMI_SERVICE_CTL, 0x0026, ctl_set_data_format },
	{ QMI_SERVICE_CTL, 0x0027, ctl_sync },
	{ QMI_SERVICE_DMS, 0x0020, dms_get_capabilities },
	{ QMI_SERVICE_DMS, 0x0021, dms_get_manufacturer },
	{ QMI_SERVICE_DMS, 0x0022, dms_get_model },
	{ QMI_SERVICE_DMS, 0x0023, dms_get_revision },
	{ QMI_SERVICE_DMS, 0x0024, dms_get_msisdn },
	{ QMI_SERVICE_DMS, 0x0025, dms_get_ids },
	{ QMI_SERVICE_DMS, 0x002C, dms_get_hardware_revision },
	{ QMI_SERVICE_DMS, 0x002D, dms_get_operating_mode },
	{ QMI_SERVICE_DMS, 0x002E, dms_set_operating_mode },
	{ QMI_SERVICE_DMS, 0x003C, dms_uim_get_iccid },
	{ QMI_SERVICE_DMS, 0x0043, dms_uim_get_imsi },
	{ QMI_SERVICE_DMS, 0x0045, dms_get_band_capabilities },
	{ QMI_SERVICE_NAS, 0x0003, nas_register_indications },
	{ QMI_SERVICE_NAS, 0x0020, nas_get_signal_strength },
	{ QMI_SERVICE_NAS, 0x0021, nas_network_scan },
	{ QMI_SERVICE_NAS, 0x0022, nas_initiate_network_register },
	{ QMI_SERVICE_NAS, 0x0024, nas_get_serving_system },
	{ QMI_SERVICE_NAS, 0x0033, nas_set_system_selection_preference },
	{ QMI_SERVICE_NAS, 0x0034, nas_get_system_selection_preference },
	{ QMI_SERVICE_NAS, 0x004F, nas_get_signal_info },
	{ QMI_SERVICE_NAS, 0x007D, nas_get_network_time },
	{ QMI_SERVICE_UIM, 0x0020, uim_read_transparent },
	{ QMI_SERVICE_UIM, 0x0025, uim_set_pin_protection },
	{ QMI_SERVICE_UIM, 0x0026, uim_verify_pin },
	{ QMI_SERVICE_UIM, 0x0027, uim_unblock_pin },
	{ QMI_SERVICE_UIM, 0x0028, uim_change_pin },
	{ QMI_SERVICE_UIM, 0x002F, uim_get_card_status },
	{ QMI_SERVICE_WDA, 0x0020, wda_set_data_format },
	{ QMI_SERVICE_WDA, 0x0021, wda_get_data_format },
	{ QMI_SERVICE_WDS, 0x0020, wds_start_network },
	{ QMI_SERVICE_WDS, 0x0021, wds_stop_network },
	{ QMI_SERVICE_WDS, WDS_PACKET_SERVICE_STATUS, wds_get_packet_service_status },
	{ QMI_SERVICE_WDS, 0x0024, wds_get_packet_statistics },
	{ QMI_SERVICE_WDS, 0x002B, wds_get_profile_settings },
	{ QMI_SERVICE_WDS, 0x002D, wds_get_current_settings },
	{ QMI_SERVICE_WDS, 0x0049, wds_get_default_profile_number },
	{ QMI_SERVICE_WDS, 0x004D, wds_set_ip_family },
	{ QMI_SERVICE_WDS, 0x00A2, wds_bind_mux_data_port },
	{ QMI_SERVICE_WMS, 0x0001, wms_set_event_report },
	{ QMI_SERVICE_WMS, 0x0020, wms_raw_send },
	{ QMI_SERVICE_WMS, 0x0022, wms_raw_read },
	{ QMI_SERVICE_WMS, 0x0024, wms_delete },
	{ QMI_SERVICE_WMS, 0x0031, wms_list_messages },
	{ QMI_SERVICE_WMS, 0x0032, wms_set_routes },
};

/* Exactly one host request with consistent lengths and whole TLVs. */
static bool frame_valid(const uint8_t *buf, size_t len)
{
	if (len < SDU_OFFSET || buf[0] != QMUX_MARKER || get_le16(buf + 1) != len - 1)
		return false;
	if (buf[3] != 0) /* from the host: no sender flag */
		return false;

	size_t hdr = buf[4] == QMI_SERVICE_CTL ? CTL_HEADER_SIZE : SVC_HEADER_SIZE;
	if (len < SDU_OFFSET + hdr)
		return false;
	const uint8_t *sdu = buf + SDU_OFFSET;
	if (sdu[0] != 0) /* a response or an indication has no business here */
		return false;
	size_t tlv_len = get_le16(sdu + hdr - 2);
	if (tlv_len != len - SDU_OFFSET - hdr)
		return false;

	const uint8_t *p = sdu + hdr;
	while (tlv_len > 0) {
		if (tlv_len < TLV_HEADER_SIZE)
			return false;
		size_t l = get_le16(p + 1);
		if (l > tlv_len - TLV_HEADER_SIZE)
			return false;
		p += TLV_HEADER_SIZE + l;
		tlv_len -= TLV_HEADER_SIZE + l;
	}
	return true;
}

static void dispatch(struct sim_qmi *q, QmiMessage *m)
{
	struct req r = {
		.m = m,
		.service = (uint8_t)qmi_message_get_service(m),
		.cid = qmi_message_get_client_id(m),
		.svc = -1,
	};
	uint16_t id = qmi_message_get_message_id(m);

	q->stats.qmi_requests++;
	if (r.service != QMI_SERVICE_CTL) {
		r.svc = svc_index(r.service);
		if (r.svc < 0 || r.cid < CID_MIN || r.cid > CID_MAX ||
		    !cid_is_used(q, r.svc, r.cid)) {
			qlog(q, LOG_DEBUG,
			     "sim qmi service 0x%02x client %u: message 0x%04x for a client id not "
			     "allocated",
			     r.service, r.cid, id);
			reply_error(q, &r, QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
			return;
		}
	}

	for (size_t i = 0; i < ARRAY_SIZE(handlers); i++)
		if (handlers[i].service == r.service && handlers[i].message == id) {
			qlog(q, LOG_DEBUG, "sim qmi %s client %u: message 0x%04x",
			     r.svc >= 0 ? svc_names[r.svc] : "ctl", r.cid, id);
			handlers[i].fn(q, &r);
			return;
		}
	reply_error(q, &r, QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
}

int sim_qmi_handle(struct sim_qmi *q, const uint8_t *buf, size_t len)
{
	if (!frame_valid(buf, len)) {
		q->stats.qmi_malformed++;
		qlog(q, LOG_DEBUG, "sim qmi: malformed control message of %zu bytes", len);
		return -EBADMSG;
	}

	g_autoptr(GByteArray) raw = g_byte_array_sized_new((guint)len);
	g_byte_array_append(raw, buf, (guint)len);
	g_autoptr(GError) error = NULL;
	g_autoptr(QmiMessage) m = qmi_message_new_from_raw(raw, &error);
	if (!m || raw->len != 0) {
		/* Our own walk accepted it; libqmi disagreeing is worth knowing about. */
		q->stats.qmi_malformed++;
		qlog(q, LOG_DEBUG, "sim qmi: libqmi rejects a control message: %s",
		     error ? error->message : "incomplete");
		return -EBADMSG;
	}

	if (q->opts.quirks.silent) {
		/* A device in the wrong USB configuration never answers CTL at all (libmbim-devel
		 * 2015-07, Sierra EM7355): not even an error. */
		q->stats.qmi_silenced++;
		return 0;
	}
	q->in_handle = true;
	dispatch(q, m);
	q->in_handle = false;
	if (q->reset_pending) {
		release_all(q);
		q->reset_pending = false;
	}
	return 0;
}

/* ---- life cycle and the caller's view ---- */

/* Everything as a modem has it at power-up with opts: the whole engine is written anew. */
static void engine_init(struct sim_qmi *q, const struct sim_qmi_options *opts,
			const struct sim_qmi_callbacks *cb, void *userdata)
{
	memset(q, 0, sizeof(*q));
	q->opts = *opts;
	q->registered_at = g_get_monotonic_time() + (gint64)opts->quirks.register_delay_ms * 1000;
	q->mode_pref = QMI_NAS_RAT_MODE_PREFERENCE_LTE;
	q->lte_band_pref[0] = SIM_QMI_LTE_BANDS;
	q->serving_told = -1;
	q->cb = *cb;
	q->userdata = userdata;
	q->format = opts->limits;
	q->next_handle = 0x10000001u;
	if (q->opts.n_apn == 0) {
		strcpy(q->opts.apn[0].name, SIM_QMI_APN_DEFAULT);
		q->opts.n_apn = 1;
	}
	for (int svc = 0; svc < _SVC_MAX; svc++)
		q->next_cid[svc] = CID_MIN;
	sim_card_init(&q->card, !q->opts.quirks.no_sim, q->opts.quirks.sim_pin);
}

int sim_qmi_new(const struct sim_qmi_options *opts, const struct sim_qmi_callbacks *cb,
		void *userdata, struct sim_qmi **ret)
{
	if (!cb || !cb->send || opts->n_apn > SIM_QMI_MAX_APNS)
		return -EINVAL;

	struct sim_qmi *q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	engine_init(q, opts, cb, userdata);
	*ret = q;
	return 0;
}

int sim_qmi_restart(struct sim_qmi *q, const struct sim_qmi_options *opts)
{
	if (!q || (opts && opts->n_apn > SIM_QMI_MAX_APNS))
		return -EINVAL;
	/* A callback's caller still holds the engine's state (sim_qmi_handle()). */
	if (q->in_handle)
		return -EBUSY;

	struct sim_qmi_callbacks cb = q->cb;
	void *userdata = q->userdata;
	/* opts may be q's own: copied before the engine is cleared. */
	struct sim_qmi_options o = opts ? *opts : q->opts;
	engine_init(q, &o, &cb, userdata);
	return 0;
}

struct sim_qmi *sim_qmi_free(struct sim_qmi *q)
{
	free(q);
	return NULL;
}

void sim_qmi_reset(struct sim_qmi *q)
{
	if (!q)
		return;
	if (q->in_handle) {
		q->reset_pending = true;
		return;
	}
	release_all(q);
}

unsigned sim_qmi_drop_all(struct sim_qmi *q)
{
	uint8_t ids[CID_MAX];
	unsigned n = 0;

	/* A session is a WDS client's. */
	for (unsigned i = 0, n_ids = used_cids(q, SVC_WDS, ids); i < n_ids; i++) {
		unsigned cid = ids[i];
		struct wds_client *c = &q->wds[cid];
		if (!c->connected)
			continue;
		uint8_t family = c->session_family;
		session_end(q, (uint8_t)cid);
		q->stats.qmi_sessions_dropped++;
		n++;
		qlog(q, LOG_INFO,
		     "sim qmi wds client %u: network dropped the session on mux %u (3GPP 36 "
		     "regular deactivation)",
		     cid, c->mux_id);
		indicate_status(q, (uint8_t)cid, QMI_WDS_CONNECTION_STATUS_DISCONNECTED, family,
				true, QMI_WDS_CALL_END_REASON_GSM_WCDMA_REGULAR_DEACTIVATION,
				QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP,
				QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_REGULAR_DEACTIVATION);
	}
	return n;
}

bool sim_qmi_mux_connected(const struct sim_qmi *q, unsigned mux_id)
{
	return mux_id <= CONFIG_MUX_ID_MAX && q->mux_sessions[mux_id] > 0;
}

unsigned sim_qmi_muxes_connected(const struct sim_qmi *q)
{
	return q->muxes_up;
}

const struct sim_qmi_data_format *sim_qmi_get_data_format(const struct sim_qmi *q)
{
	return &q->format;
}

const struct sim_qmi_stats *sim_qmi_get_stats(const struct sim_qmi *q)
{
	return &q->stats;
}
