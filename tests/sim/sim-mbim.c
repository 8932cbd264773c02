/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's MBIM responder (see sim-mbim.h for what it answers and how).
 * Layouts: MBIM 1.0 §9 (message headers) and §10 (BASIC_CONNECT information buffers), all
 * little-endian; an OL pair is {offset from the start of the information buffer, size}, and
 * each variable part starts at a multiple of 4.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmbim-glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

#include "byteorder.h"
#include "log.h"
#include "macro.h"
#include "sim-card.h"
#include "sim-mbim.h"

#define MSG_HDR	 12 /* MessageType, MessageLength, TransactionId */
#define FRAG_HDR 8  /* TotalFragments, CurrentFragment */
#define CMD_HDR	 (MSG_HDR + FRAG_HDR + 16 + 4 + 4 + 4) /* + service, CID, type/status, length */
#define IND_HDR	 (MSG_HDR + FRAG_HDR + 16 + 4 + 4)     /* + service, CID, length */
#define MSG_MAX	 (64 * 1024) /* a reassembled command: far above any real request */
#define INFO_MAX 1024	     /* the largest information buffer this modem answers */
#define STR_MAX	 (SIM_QMI_CREDENTIAL_MAX + 1)

#define MBIM_CID_DEVICE_CAPS		       1
#define MBIM_CID_SUBSCRIBER_READY_STATUS       2
#define MBIM_CID_RADIO_STATE		       3
#define MBIM_CID_PIN			       4
#define MBIM_CID_PIN_LIST		       5
#define MBIM_CID_HOME_PROVIDER		       6
#define MBIM_CID_VISIBLE_PROVIDERS	       8
#define MBIM_CID_REGISTER_STATE		       9
#define MBIM_CID_PACKET_SERVICE		       10
#define MBIM_CID_SIGNAL_STATE		       11
#define MBIM_CID_CONNECT		       12
#define MBIM_CID_IP_CONFIGURATION	       15
#define MBIM_CID_DEVICE_SERVICES	       16
#define MBIM_CID_DEVICE_SERVICE_SUBSCRIBE_LIST 19

#define IPCFG_FLAGS_ALL 0x0f /* ADDRESS | GATEWAY | DNS | MTU */

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

struct session {
	bool active;
	uint32_t ip_type; /* MbimContextIpType granted */
	uint8_t context_type[16];
};

struct sim_mbim {
	struct sim_mbim_options opts;
	struct sim_mbim_callbacks cb;
	void *userdata;
	bool open;
	uint32_t max_transfer; /* the host's MaxControlTransfer, clamped */
	bool radio_on;
	bool attached;
	struct sim_card card; /* PIN1 and PUK1 (sim-card.c) */
	struct session sessions[SIM_MBIM_SESSIONS];
	const struct sim_mbim_provider *provider; /* registered in by hand; NULL: home, automatic */
	bool register_denied;			  /* a manual choice the network refused */
	/* REGISTER_STATE's information buffer as the host last heard it (length 0: nothing
	 * since OPEN): a change becomes an indication (sim_mbim_tick). */
	uint8_t register_told[INFO_MAX];
	size_t register_told_len;

	/* Reassembly of a fragmented COMMAND. */
	uint8_t *frag;
	size_t frag_len;
	uint32_t frag_tid, frag_total, frag_next;

	/* SMS: the message store (index = position + 1), MBIM_SMS_SEND_INFO references. */
	struct sim_mbim_sms {
		bool used;
		uint32_t status; /* MbimSmsStatus */
		uint8_t pdu[SIM_MBIM_SMS_PDU_MAX];
		uint16_t len;
	} sms[SIM_MBIM_SMS_MAX];
	uint32_t next_message_reference;

	struct sim_mbim_stats stats;
};

static void mlog(struct sim_mbim *m, int priority, const char *fmt, ...) _printf_(3, 4);

static void mlog(struct sim_mbim *m, int priority, const char *fmt, ...)
{
	char msg[512]; /* one log line */
	va_list ap;

	if (!m->cb.log && priority >= LOG_DEBUG && log_get_max_level() < LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (m->cb.log)
		m->cb.log(m->userdata, priority, msg);
	else
		log_debug("%s", msg);
}

void sim_mbim_options_init(struct sim_mbim_options *o)
{
	*o = (struct sim_mbim_options){
		.max_control_message = SIM_MBIM_MAX_CONTROL_DEFAULT,
		.max_sessions = SIM_MBIM_MAX_SESSIONS_DEFAULT,
		.session_mtu = SIM_QMI_MTU_DEFAULT,
		.subscriber_state = MBIM_SUBSCRIBER_READY_STATE_INITIALIZED,
	};
}

int sim_mbim_parse_sim_state(const char *word, uint32_t *ret)
{
	static const MbimSubscriberReadyState states[] = {
		MBIM_SUBSCRIBER_READY_STATE_INITIALIZED,
		MBIM_SUBSCRIBER_READY_STATE_NOT_INITIALIZED,
		MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED,
		MBIM_SUBSCRIBER_READY_STATE_BAD_SIM,
		MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED,
	};

	for (size_t i = 0; i < ARRAY_SIZE(states); i++)
		if (strcmp(word, mbim_subscriber_ready_state_get_string(states[i])) == 0) {
			*ret = states[i];
			return 0;
		}
	return -EINVAL;
}

/*
 * SUBSCRIBER_READY_STATUS's ReadyState: no card SIM_NOT_INSERTED, PIN1 or PUK1 pending
 * DEVICE_LOCKED (MBIM 1.0 10.5.2: the PIN query then says which), a card blocked for good
 * BAD_SIM; --sim-state's not-initialized and bad-sim stay as they were asked.
 */
static uint32_t ready_state(const struct sim_mbim *m)
{
	if (!m->card.present)
		return MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED;
	if (m->opts.subscriber_state != MBIM_SUBSCRIBER_READY_STATE_INITIALIZED &&
	    m->opts.subscriber_state != MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED)
		return m->opts.subscriber_state;
	if (m->card.pin1 == SIM_CARD_PIN_PERMANENTLY_BLOCKED)
		return MBIM_SUBSCRIBER_READY_STATE_BAD_SIM;
	if (sim_card_locked(&m->card))
		return MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED;
	return MBIM_SUBSCRIBER_READY_STATE_INITIALIZED;
}

/* What a CID that needs the SIM answers while it is not initialized (NONE when it is). */
static uint32_t sim_status(const struct sim_mbim *m)
{
	switch (ready_state(m)) {
	case MBIM_SUBSCRIBER_READY_STATE_INITIALIZED:
		return MBIM_STATUS_ERROR_NONE;
	case MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED:
		return MBIM_STATUS_ERROR_SIM_NOT_INSERTED;
	case MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED:
		return MBIM_STATUS_ERROR_PIN_REQUIRED;
	case MBIM_SUBSCRIBER_READY_STATE_NOT_INITIALIZED:
		return MBIM_STATUS_ERROR_NOT_INITIALIZED;
	default:
		return MBIM_STATUS_ERROR_BAD_SIM;
	}
}

int sim_mbim_new(const struct sim_mbim_options *opts, const struct sim_mbim_callbacks *cb,
		 void *userdata, struct sim_mbim **ret)
{
	if (!cb || !cb->send || opts->max_control_message < SIM_MBIM_MAX_CONTROL_MIN ||
	    opts->max_control_message > 65535 || opts->max_sessions < 1 ||
	    opts->max_sessions > SIM_MBIM_SESSIONS || opts->n_apn > SIM_QMI_MAX_APNS)
		return -EINVAL;

	struct sim_mbim *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->frag = malloc(MSG_MAX);
	if (!m->frag) {
		free(m);
		return -ENOMEM;
	}
	m->opts = *opts;
	m->cb = *cb;
	m->userdata = userdata;
	m->radio_on = true;
	m->attached = true;
	/* --sim-state device-locked without --sim-pin: PIN1 enabled with the default PIN. */
	bool locked = opts->subscriber_state == MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED;
	sim_card_init(&m->card,
		      !opts->no_sim && opts->subscriber_state !=
					       MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED,
		      opts->sim_pin[0] ? opts->sim_pin
		      : locked	       ? SIM_CARD_PIN_DEFAULT
				       : "");
	*ret = m;
	return 0;
}

struct sim_mbim *sim_mbim_free(struct sim_mbim *m)
{
	if (m) {
		free(m->frag);
		free(m);
	}
	return NULL;
}

static unsigned end_sessions(struct sim_mbim *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SIM_MBIM_SESSIONS; i++) {
		n += m->sessions[i].active;
		m->sessions[i].active = false;
	}
	return n;
}

/* The host's CLOSE, or an OPEN while open (MBIM 1.0 §9.3.2: every context ends). */
static void close_function(struct sim_mbim *m, const char *why)
{
	unsigned n = end_sessions(m);

	m->stats.mbim_sessions_ended_by_host += n;
	m->frag_total = 0;
	m->open = false;
	mlog(m, LOG_INFO, "mbim: %s: closed, %u session%s ended", why, n, n == 1 ? "" : "s");
}

void sim_mbim_reset(struct sim_mbim *m)
{
	m->open = false;
	m->register_told_len = 0;
	m->frag_total = 0;
	end_sessions(m);
}

unsigned sim_mbim_function_reset(struct sim_mbim *m)
{
	unsigned n = end_sessions(m);

	m->stats.mbim_function_resets++;
	m->open = false;
	m->register_told_len = 0;
	m->frag_total = 0;
	mlog(m, LOG_INFO, "mbim: the function reset itself: closed, %u session%s gone", n,
	     n == 1 ? "" : "s");
	return n;
}

bool sim_mbim_session_active(const struct sim_mbim *m, unsigned session_id)
{
	return session_id < SIM_MBIM_SESSIONS && m->sessions[session_id].active;
}

bool sim_mbim_is_open(const struct sim_mbim *m)
{
	return m->open;
}

const struct sim_mbim_stats *sim_mbim_get_stats(const struct sim_mbim *m)
{
	return &m->stats;
}

/* ---- sending ---- */

static void send_libmbim(struct sim_mbim *m, MbimMessage *msg)
{
	guint32 len = 0;
	const guint8 *raw = mbim_message_get_raw(msg, &len, NULL);

	if (raw)
		m->cb.send(m->userdata, raw, len);
	mbim_message_unref(msg);
}

static void send_function_error(struct sim_mbim *m, uint32_t tid, MbimProtocolError e)
{
	mlog(m, LOG_DEBUG, "mbim: transaction %u: function error %s", tid,
	     mbim_protocol_error_get_string(e) ?: "?");
	send_libmbim(m, mbim_message_function_error_new(tid, e));
}

/*
 * A COMMAND_DONE (status given) or INDICATE_STATUS (is_indication) with this information
 * buffer, in as many fragments as the host's MaxControlTransfer needs.
 */
static void send_command_message(struct sim_mbim *m, bool is_indication, uint32_t tid,
				 const uint8_t *service, uint32_t cid, uint32_t status,
				 const uint8_t *info, size_t info_len)
{
	uint8_t out[65536];
	size_t first_hdr = is_indication ? IND_HDR : CMD_HDR;
	size_t max = m->max_transfer ? m->max_transfer : m->opts.max_control_message;
	size_t first_room = max - first_hdr, next_room = max - MSG_HDR - FRAG_HDR;
	uint32_t total = 1;

	if (info_len > first_room)
		total += (uint32_t)((info_len - first_room + next_room - 1) / next_room);

	size_t done = 0;
	for (uint32_t frag = 0; frag < total; frag++) {
		size_t hdr = frag == 0 ? first_hdr : MSG_HDR + FRAG_HDR;
		size_t room = frag == 0 ? first_room : next_room;
		size_t n = info_len - done < room ? info_len - done : room;

		put_le32(out, is_indication ? MBIM_MESSAGE_TYPE_INDICATE_STATUS
					    : MBIM_MESSAGE_TYPE_COMMAND_DONE);
		put_le32(out + 4, (uint32_t)(hdr + n));
		put_le32(out + 8, tid);
		put_le32(out + 12, total);
		put_le32(out + 16, frag);
		if (frag == 0) {
			size_t p = MSG_HDR + FRAG_HDR;
			memcpy(out + p, service, 16);
			put_le32(out + p + 16, cid);
			if (is_indication) {
				put_le32(out + p + 20, (uint32_t)info_len);
			} else {
				put_le32(out + p + 20, status);
				put_le32(out + p + 24, (uint32_t)info_len);
			}
		} else {
			m->stats.mbim_fragments_out++;
		}
		if (n)
			memcpy(out + hdr, info + done, n);
		done += n;
		m->cb.send(m->userdata, out, hdr + n);
	}
	if (is_indication)
		m->stats.mbim_indications++;
	else
		m->stats.mbim_responses++;
}

/* ---- information buffers ---- */

struct info {
	uint8_t b[INFO_MAX];
	size_t len; /* fixed part, then variable parts appended */
};

static void info_init(struct info *ib, size_t fixed)
{
	memset(ib->b, 0, sizeof(ib->b));
	ib->len = fixed;
}

/* Append bytes at the next multiple of 4; returns their offset. */
static uint32_t info_append(struct info *ib, const void *data, size_t len)
{
	size_t off = (ib->len + 3) & ~(size_t)3;

	if (off + len > sizeof(ib->b))
		return 0; /* never with the strings this modem sends */
	memcpy(ib->b + off, data, len);
	ib->len = off + len;
	return (uint32_t)off;
}

/* An ASCII string as UTF-16LE in the data buffer, its OL pair at pair_off. */
static void info_string(struct info *ib, size_t pair_off, const char *s)
{
	uint8_t u[256];
	size_t n = strlen(s);

	if (n > sizeof(u) / 2)
		n = sizeof(u) / 2;
	for (size_t i = 0; i < n; i++) {
		u[2 * i] = (uint8_t)s[i];
		u[2 * i + 1] = 0;
	}
	put_le32(ib->b + pair_off, n ? info_append(ib, u, 2 * n) : 0);
	put_le32(ib->b + pair_off + 4, (uint32_t)(2 * n));
}

static void info_u32(struct info *ib, size_t off, uint32_t v)
{
	put_le32(ib->b + off, v);
}

/* ---- requests ---- */

struct req {
	uint32_t tid;
	const uint8_t *service; /* 16 bytes */
	uint32_t cid;
	uint32_t type; /* MbimMessageCommandType */
	const uint8_t *info;
	uint32_t info_len;
};

static void respond(struct sim_mbim *m, const struct req *r, uint32_t status, const struct info *ib)
{
	if (status != MBIM_STATUS_ERROR_NONE) {
		m->stats.mbim_errors++;
		if (status == MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT)
			m->stats.mbim_unsupported++;
		mlog(m, LOG_DEBUG, "mbim: transaction %u CID %u: %s", r->tid, r->cid,
		     mbim_status_error_get_string(status) ?: "?");
	}
	send_command_message(m, false, r->tid, r->service, r->cid, status, ib ? ib->b : NULL,
			     ib ? ib->len : 0);
}

/* A UTF-16LE string from the request's OL pair at pair_off into ASCII. false when the pair
 * points outside the buffer. */
static bool req_string(const struct req *r, size_t pair_off, char *out, size_t outlen)
{
	uint32_t off = get_le32(r->info + pair_off), size = get_le32(r->info + pair_off + 4);

	out[0] = '\0';
	if (size == 0)
		return true;
	if (off > r->info_len || size > r->info_len - off || size % 2)
		return false;
	size_t n = size / 2;
	if (n >= outlen)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint16_t c = get_le16(r->info + off + 2 * i);
		out[i] = c < 0x80 && c != 0 ? (char)c : '?';
	}
	out[n] = '\0';
	return true;
}

static void answer_device_caps(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	info_init(&ib, 64);
	info_u32(&ib, 0, MBIM_DEVICE_TYPE_EMBEDDED);
	info_u32(&ib, 4, MBIM_CELLULAR_CLASS_GSM);
	info_u32(&ib, 8, MBIM_VOICE_CLASS_NO_VOICE);
	info_u32(&ib, 12, MBIM_SIM_CLASS_REMOVABLE);
	info_u32(&ib, 16,
		 MBIM_DATA_CLASS_UMTS | MBIM_DATA_CLASS_HSDPA | MBIM_DATA_CLASS_HSUPA |
			 MBIM_DATA_CLASS_LTE);
	info_u32(&ib, 20, 0); /* no SMS */
	info_u32(&ib, 24, MBIM_CTRL_CAPS_REG_MANUAL);
	info_u32(&ib, 28, m->opts.max_sessions);
	info_string(&ib, 32, "");		  /* custom data class */
	info_string(&ib, 40, SIM_MBIM_IMEI);	  /* device id */
	info_string(&ib, 48, "qmapd-sim MBIM 1"); /* firmware */
	info_string(&ib, 56, "qmapd-sim");	  /* hardware */
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void answer_subscriber_ready(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	uint32_t state = ready_state(m);
	bool ready = state == MBIM_SUBSCRIBER_READY_STATE_INITIALIZED;
	/* EF_MSISDN needs the SIM: no number until it is initialized. */
	unsigned n_numbers = ready && m->opts.msisdn[0] ? 1 : 0;

	/* ReadyState, SubscriberId, SimIccId, ReadyInfo, ElementCount, then an OL pair per
	 * telephone number. */
	info_init(&ib, 28 + 8 * n_numbers);
	info_u32(&ib, 0, state);
	info_string(&ib, 4, ready ? SIM_MBIM_IMSI : "");
	info_string(&ib, 12, ready ? SIM_MBIM_ICCID : "");
	info_u32(&ib, 20, MBIM_READY_INFO_FLAG_NONE);
	info_u32(&ib, 24, n_numbers);
	if (n_numbers)
		info_string(&ib, 28, m->opts.msisdn);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* The SIM's operator: the IMSI's MCC+MNC and EF_SPN's name, as the QMI side reads them. */
static void answer_home_provider(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (sim_status(m) != MBIM_STATUS_ERROR_NONE) {
		respond(m, r, sim_status(m), NULL);
		return;
	}
	/* MBIM_PROVIDER: ProviderId, ProviderState, ProviderName, CellularClass, Rssi,
	 * ErrorRate; the last two mean nothing for the home provider: unknown (99). */
	info_init(&ib, 32);
	info_string(&ib, 0, SIM_MBIM_HOME_PROVIDER_ID);
	info_u32(&ib, 8, MBIM_PROVIDER_STATE_HOME);
	info_string(&ib, 12, SIM_MBIM_HOME_PROVIDER_NAME);
	info_u32(&ib, 20, MBIM_CELLULAR_CLASS_GSM);
	info_u32(&ib, 24, 99);
	info_u32(&ib, 28, 99);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void connect_indication(struct sim_mbim *m, unsigned session, uint32_t nw_error);

/* The radio or packet service went away: every session ends, the host is told. */
static void end_sessions_indicated(struct sim_mbim *m, uint32_t nw_error)
{
	for (unsigned i = 0; i < SIM_MBIM_SESSIONS; i++)
		if (m->sessions[i].active) {
			m->sessions[i].active = false;
			connect_indication(m, i, nw_error);
		}
}

static void answer_radio_state(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type == MBIM_MESSAGE_COMMAND_TYPE_SET) {
		if (r->info_len < 4) {
			respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
			return;
		}
		uint32_t state = get_le32(r->info);
		if (state > MBIM_RADIO_SWITCH_STATE_ON) {
			respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
			return;
		}
		m->radio_on = state == MBIM_RADIO_SWITCH_STATE_ON;
		if (!m->radio_on)
			end_sessions_indicated(m, SIM_MBIM_NW_REGULAR_DEACTIVATION);
	}
	info_init(&ib, 8);
	info_u32(&ib, 0, MBIM_RADIO_SWITCH_STATE_ON);
	info_u32(&ib, 4, m->radio_on ? MBIM_RADIO_SWITCH_STATE_ON : MBIM_RADIO_SWITCH_STATE_OFF);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* The networks VISIBLE_PROVIDERS finds, the first the home one (as the QMI side's). */
static const struct sim_mbim_provider {
	const char *id, *name;
	uint32_t state; /* MbimProviderState */
} providers[] = {
	{ "00101", "Test Network", MBIM_PROVIDER_STATE_HOME | MBIM_PROVIDER_STATE_VISIBLE },
	{ "00102", "Other Network", MBIM_PROVIDER_STATE_VISIBLE },
	{ "00103", "Barred Network", MBIM_PROVIDER_STATE_FORBIDDEN | MBIM_PROVIDER_STATE_VISIBLE },
};

/*
 * VISIBLE_PROVIDERS (8) query, action u32 (0 full scan, 1 restricted): MBIM_PROVIDERS, an
 * element count and an OL pair per MBIM_PROVIDER {ProviderId OL, ProviderState, ProviderName
 * OL, CellularClass, Rssi, ErrorRate} whose offsets count from the element's start (MBIM 1.0
 * 10.5.8); the one registered in is REGISTERED. Radio off or SIM not ready: that status.
 */
static void answer_visible_providers(struct sim_mbim *m, const struct req *r)
{
	struct info ib;
	const size_t n = sizeof(providers) / sizeof(providers[0]);
	const struct sim_mbim_provider *cur = m->provider ? m->provider : &providers[0];

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY || r->info_len < 4 ||
	    get_le32(r->info) > 1) {
		respond(m, r,
			r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY
				? MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT
				: MBIM_STATUS_ERROR_INVALID_PARAMETERS,
			NULL);
		return;
	}
	if (!m->radio_on || sim_status(m) != MBIM_STATUS_ERROR_NONE) {
		respond(m, r, !m->radio_on ? MBIM_STATUS_ERROR_RADIO_POWER_OFF : sim_status(m),
			NULL);
		return;
	}
	info_init(&ib, 4 + 8 * n);
	info_u32(&ib, 0, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		struct info e;
		uint32_t state = providers[i].state;

		if (&providers[i] == cur && !m->register_denied)
			state |= MBIM_PROVIDER_STATE_REGISTERED;
		info_init(&e, 32);
		info_string(&e, 0, providers[i].id);
		info_u32(&e, 8, state);
		info_string(&e, 12, providers[i].name);
		info_u32(&e, 20, MBIM_CELLULAR_CLASS_GSM);
		info_u32(&e, 24, SIM_MBIM_RSSI);
		info_u32(&e, 28, 99);
		uint32_t off = info_append(&ib, e.b, e.len);
		info_u32(&ib, 4 + 8 * i, off);
		info_u32(&ib, 8 + 8 * i, (uint32_t)e.len);
	}
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/*
 * REGISTER_STATE (9) set: ProviderId OL, RegisterAction (0 automatic, 1 manual), DataClass
 * (MBIM 1.0 10.5.9). Automatic: home. Manual: the provider if VISIBLE_PROVIDERS lists it and
 * it is not forbidden, else the network denies it (DENIED, nw_error 11 PLMN not allowed, TS
 * 24.008). Answered with the state that follows; no public capture (libmbim's definition).
 */
static bool register_set(struct sim_mbim *m, const struct req *r)
{
	char id[8];

	if (r->info_len < 16 || !req_string(r, 0, id, sizeof(id)) || get_le32(r->info + 8) > 1) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return false;
	}
	m->provider = NULL;
	m->register_denied = false;
	if (get_le32(r->info + 8) == MBIM_REGISTER_ACTION_MANUAL) {
		m->register_denied = true;
		for (size_t i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
			if (strcmp(providers[i].id, id) == 0 &&
			    !(providers[i].state & MBIM_PROVIDER_STATE_FORBIDDEN)) {
				m->provider = &providers[i];
				m->register_denied = false;
			}
	}
	mlog(m, LOG_INFO, "mbim: register %s%s: %s",
	     get_le32(r->info + 8) == MBIM_REGISTER_ACTION_MANUAL ? "manually in "
								  : "automatically",
	     get_le32(r->info + 8) == MBIM_REGISTER_ACTION_MANUAL ? id : "",
	     m->register_denied ? "denied" : "registered");
	return true;
}

/* MBIM_REGISTRATION_STATE_INFO: what the REGISTER_STATE answer and indication carry. */
static void register_state_info(const struct sim_mbim *m, struct info *ib)
{
	bool registered = m->radio_on && sim_status(m) == MBIM_STATUS_ERROR_NONE;
	const struct sim_mbim_provider *cur = m->provider ? m->provider : &providers[0];
	bool denied = registered && m->register_denied;
	registered = registered && !denied;
	/* A visited network while the test's switch exists. */
	bool roaming = m->opts.roaming_file[0] && access(m->opts.roaming_file, F_OK) == 0;

	info_init(ib, 48);
	info_u32(ib, 0, denied ? 11 /* PLMN not allowed */ : MBIM_NW_ERROR_NONE);
	info_u32(ib, 4,
		 denied	       ? MBIM_REGISTER_STATE_DENIED
		 : !registered ? MBIM_REGISTER_STATE_DEREGISTERED
		 : roaming     ? MBIM_REGISTER_STATE_ROAMING
			       : MBIM_REGISTER_STATE_HOME);
	info_u32(ib, 8,
		 m->provider || m->register_denied ? MBIM_REGISTER_MODE_MANUAL
						   : MBIM_REGISTER_MODE_AUTOMATIC);
	info_u32(ib, 12, registered ? MBIM_DATA_CLASS_LTE : 0);
	info_u32(ib, 16, MBIM_CELLULAR_CLASS_GSM);
	info_string(ib, 20, registered ? cur->id : "");
	info_string(ib, 28, registered ? cur->name : "");
	info_string(ib, 36, "");
	info_u32(ib, 44, MBIM_REGISTRATION_FLAG_PACKET_SERVICE_AUTOMATIC_ATTACH);
}

/* Remember what the host was told (or answered) of REGISTER_STATE; true when it changed. */
static bool register_told_update(struct sim_mbim *m, const struct info *ib)
{
	bool same =
		ib->len == m->register_told_len && memcmp(ib->b, m->register_told, ib->len) == 0;

	memcpy(m->register_told, ib->b, ib->len);
	m->register_told_len = ib->len;
	return !same;
}

static void answer_register_state(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type == MBIM_MESSAGE_COMMAND_TYPE_SET && !register_set(m, r))
		return;
	register_state_info(m, &ib);
	register_told_update(m, &ib);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

void sim_mbim_tick(struct sim_mbim *m)
{
	struct info ib;

	if (!m->open)
		return;
	register_state_info(m, &ib);
	bool first = m->register_told_len == 0;
	if (!register_told_update(m, &ib) || first)
		return; /* unchanged, or the first look since OPEN: nothing new for the host */
	mlog(m, LOG_INFO, "mbim: registration changed: REGISTER_STATE indication");
	send_command_message(m, true, 0,
			     (const uint8_t *)mbim_uuid_from_service(MBIM_SERVICE_BASIC_CONNECT),
			     MBIM_CID_REGISTER_STATE, 0, ib.b, ib.len);
}

static void answer_packet_service(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type == MBIM_MESSAGE_COMMAND_TYPE_SET) {
		if (r->info_len < 4 || get_le32(r->info) > MBIM_PACKET_SERVICE_ACTION_DETACH) {
			respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
			return;
		}
		if (!m->radio_on) {
			respond(m, r, MBIM_STATUS_ERROR_RADIO_POWER_OFF, NULL);
			return;
		}
		if (sim_status(m) != MBIM_STATUS_ERROR_NONE) {
			respond(m, r, sim_status(m), NULL);
			return;
		}
		bool attach = get_le32(r->info) == MBIM_PACKET_SERVICE_ACTION_ATTACH;
		if (!attach && m->attached)
			end_sessions_indicated(m, SIM_MBIM_NW_REGULAR_DEACTIVATION);
		m->attached = attach;
	}
	bool up = m->radio_on && m->attached && sim_status(m) == MBIM_STATUS_ERROR_NONE;
	info_init(&ib, 28);
	info_u32(&ib, 0, MBIM_NW_ERROR_NONE);
	info_u32(&ib, 4,
		 up ? MBIM_PACKET_SERVICE_STATE_ATTACHED : MBIM_PACKET_SERVICE_STATE_DETACHED);
	info_u32(&ib, 8, up ? MBIM_DATA_CLASS_LTE : 0);
	/* Uplink and downlink speeds (u64, bits per second): an LTE Cat 4 cell. */
	put_le64(ib.b + 12, up ? 50000000ULL : 0);
	put_le64(ib.b + 20, up ? 150000000ULL : 0);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void answer_signal_state(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY) {
		/* Reporting thresholds are not simulated. */
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	/* MBIM_SIGNAL_STATE_INFO: Rssi (0-31, 99 unknown), ErrorRate (0-7, 99 unknown),
	 * SignalStrengthInterval, RssiThreshold, ErrorRateThreshold. */
	info_init(&ib, 20);
	info_u32(&ib, 0, m->radio_on ? SIM_MBIM_RSSI : 99);
	info_u32(&ib, 4, 99);
	info_u32(&ib, 8, 0);
	info_u32(&ib, 12, 0);
	info_u32(&ib, 16, 0);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* MBIM_CONNECT_INFO: what every CONNECT answer and indication carries. */
static void connect_info(struct info *ib, unsigned session, const struct session *st,
			 uint32_t state, uint32_t ip_type, uint32_t nw_error)
{
	info_init(ib, 36);
	info_u32(ib, 0, session);
	info_u32(ib, 4, state);
	info_u32(ib, 8, MBIM_VOICE_CALL_STATE_NONE);
	info_u32(ib, 12, ip_type);
	if (st)
		memcpy(ib->b + 16, st->context_type, 16);
	info_u32(ib, 32, nw_error);
}

static void connect_indication(struct sim_mbim *m, unsigned session, uint32_t nw_error)
{
	struct info ib;
	const struct session *st = &m->sessions[session];

	connect_info(&ib, session, st, MBIM_ACTIVATION_STATE_DEACTIVATED, st->ip_type, nw_error);
	send_command_message(m, true, 0,
			     (const uint8_t *)mbim_uuid_from_service(MBIM_SERVICE_BASIC_CONNECT),
			     MBIM_CID_CONNECT, 0, ib.b, ib.len);
}

static const struct sim_qmi_apn *find_apn(const struct sim_mbim *m, const char *name)
{
	static const struct sim_qmi_apn fallback = { .name = SIM_QMI_APN_DEFAULT };
	unsigned n = m->opts.n_apn;
	const struct sim_qmi_apn *list = n ? m->opts.apn : &fallback;

	if (name[0] == '\0')
		return &list[0];
	for (unsigned i = 0; i < (n ? n : 1); i++)
		if (strcasecmp(list[i].name, name) == 0)
			return &list[i];
	return NULL;
}

static void connect_fail(struct sim_mbim *m, const struct req *r, unsigned session, uint32_t status,
			 uint32_t ip_type, uint32_t nw_error)
{
	struct info ib;

	m->stats.mbim_sessions_failed++;
	connect_info(&ib, session, NULL, MBIM_ACTIVATION_STATE_DEACTIVATED, ip_type, nw_error);
	if (r->info_len >= 60)
		memcpy(ib.b + 16, r->info + 44, 16);
	mlog(m, LOG_INFO, "mbim session %u: activation refused: %s, nw_error %u", session,
	     mbim_status_error_get_string(status) ?: "?", nw_error);
	respond(m, r, status, &ib);
}

static void answer_connect_set(struct sim_mbim *m, const struct req *r)
{
	char apn_name[SIM_QMI_APN_MAX + 1], user[STR_MAX], password[STR_MAX];
	struct info ib;

	/* MBIM_SET_CONNECT: SessionId, ActivationCommand, AccessString, UserName, Password (OL
	 * pairs), Compression, AuthProtocol, IPType, ContextType (16 bytes). */
	if (r->info_len < 60 || !req_string(r, 8, apn_name, sizeof(apn_name)) ||
	    !req_string(r, 16, user, sizeof(user)) ||
	    !req_string(r, 24, password, sizeof(password))) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	uint32_t session = get_le32(r->info), command = get_le32(r->info + 4);
	uint32_t auth = get_le32(r->info + 36), ip_type = get_le32(r->info + 40);
	if (session >= SIM_MBIM_SESSIONS || command > MBIM_ACTIVATION_COMMAND_ACTIVATE ||
	    ip_type > MBIM_CONTEXT_IP_TYPE_IPV4_AND_IPV6 || auth > MBIM_AUTH_PROTOCOL_MSCHAPV2) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	struct session *st = &m->sessions[session];

	if (command == MBIM_ACTIVATION_COMMAND_DEACTIVATE) {
		if (!st->active) {
			connect_info(&ib, session, st, MBIM_ACTIVATION_STATE_DEACTIVATED, ip_type,
				     MBIM_NW_ERROR_NONE);
			respond(m, r, MBIM_STATUS_ERROR_CONTEXT_NOT_ACTIVATED, &ib);
			return;
		}
		st->active = false;
		m->stats.mbim_sessions_ended_by_host++;
		mlog(m, LOG_INFO, "mbim session %u: deactivated by the host", session);
		connect_info(&ib, session, st, MBIM_ACTIVATION_STATE_DEACTIVATED, st->ip_type,
			     MBIM_NW_ERROR_NONE);
		respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
		return;
	}

	if (!m->radio_on) {
		connect_fail(m, r, session, MBIM_STATUS_ERROR_RADIO_POWER_OFF, ip_type, 0);
		return;
	}
	if (sim_status(m) != MBIM_STATUS_ERROR_NONE) {
		connect_fail(m, r, session, sim_status(m), ip_type, 0);
		return;
	}
	if (!m->attached) {
		connect_fail(m, r, session, MBIM_STATUS_ERROR_PACKET_SERVICE_DETACHED, ip_type, 0);
		return;
	}
	if (st->active) {
		m->stats.mbim_sessions_failed++;
		connect_info(&ib, session, st, MBIM_ACTIVATION_STATE_ACTIVATED, st->ip_type,
			     MBIM_NW_ERROR_NONE);
		respond(m, r, MBIM_STATUS_ERROR_FAILURE, &ib);
		return;
	}
	unsigned active = 0;
	for (unsigned i = 0; i < SIM_MBIM_SESSIONS; i++)
		active += m->sessions[i].active;
	if (active >= m->opts.max_sessions) {
		connect_fail(m, r, session, MBIM_STATUS_ERROR_MAX_ACTIVATED_CONTEXTS, ip_type, 0);
		return;
	}
	const struct sim_qmi_apn *apn = find_apn(m, apn_name);
	if (!apn) {
		connect_fail(m, r, session, MBIM_STATUS_ERROR_FAILURE, ip_type,
			     MBIM_NW_ERROR_MISSING_OR_UNKNOWN_APN);
		return;
	}
	if (apn->auth && (auth == MBIM_AUTH_PROTOCOL_NONE || strcmp(user, apn->user) != 0 ||
			  strcmp(password, apn->password) != 0)) {
		connect_fail(m, r, session, MBIM_STATUS_ERROR_FAILURE, ip_type,
			     MBIM_NW_ERROR_USER_AUTHENTICATION_FAILED);
		return;
	}
	unsigned mux_id = session + 1;
	const struct sim_qmi_mux *mux = mux_id <= CONFIG_MUX_ID_MAX ? &m->opts.mux[mux_id] : NULL;
	bool has4 = mux && mux->present && mux->ipv4.family,
	     has6 = mux && mux->present && mux->ipv6.family;
	if (!has4 && !has6) {
		connect_fail(m, r, session, MBIM_STATUS_ERROR_FAILURE, ip_type,
			     MBIM_NW_ERROR_INSUFFICIENT_RESOURCES);
		return;
	}
	uint32_t granted;
	switch (ip_type) {
	case MBIM_CONTEXT_IP_TYPE_IPV4:
		if (!has4) {
			connect_fail(m, r, session, MBIM_STATUS_ERROR_FAILURE, ip_type,
				     MBIM_NW_ERROR_PDP_TYPE_IPV6_ONLY_ALLOWED);
			return;
		}
		granted = MBIM_CONTEXT_IP_TYPE_IPV4;
		break;
	case MBIM_CONTEXT_IP_TYPE_IPV6:
		if (!has6) {
			connect_fail(m, r, session, MBIM_STATUS_ERROR_FAILURE, ip_type,
				     MBIM_NW_ERROR_PDP_TYPE_IPV4_ONLY_ALLOWED);
			return;
		}
		granted = MBIM_CONTEXT_IP_TYPE_IPV6;
		break;
	default:
		granted = has4 && has6 ? MBIM_CONTEXT_IP_TYPE_IPV4V6
			  : has4       ? MBIM_CONTEXT_IP_TYPE_IPV4
				       : MBIM_CONTEXT_IP_TYPE_IPV6;
		break;
	}
	st->active = true;
	st->ip_type = granted;
	memcpy(st->context_type, r->info + 44, 16);
	m->stats.mbim_sessions_started++;
	mlog(m, LOG_INFO, "mbim session %u: activated on APN '%s', IP type %s (mux %u)", session,
	     apn->name, mbim_context_ip_type_get_string(granted) ?: "?", mux_id);
	connect_info(&ib, session, st, MBIM_ACTIVATION_STATE_ACTIVATED, granted,
		     MBIM_NW_ERROR_NONE);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void answer_connect(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type == MBIM_MESSAGE_COMMAND_TYPE_SET) {
		answer_connect_set(m, r);
		return;
	}
	/* A query names the session in its first field (libmbim sends a whole
	 * MBIM_CONNECT_INFO). */
	if (r->info_len < 4 || get_le32(r->info) >= SIM_MBIM_SESSIONS) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	uint32_t session = get_le32(r->info);
	const struct session *st = &m->sessions[session];
	connect_info(&ib, session, st,
		     st->active ? MBIM_ACTIVATION_STATE_ACTIVATED
				: MBIM_ACTIVATION_STATE_DEACTIVATED,
		     st->active ? st->ip_type : MBIM_CONTEXT_IP_TYPE_DEFAULT, MBIM_NW_ERROR_NONE);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void put_ip(struct info *ib, const struct config_prefix *p, uint32_t *ret_off, bool element)
{
	uint8_t el[20];
	size_t alen = p->family == AF_INET ? 4 : 16;
	size_t n = 0;

	if (element) {
		put_le32(el, p->prefixlen);
		n = 4;
	}
	memcpy(el + n, p->family == AF_INET ? (const void *)&p->addr.v4 : p->addr.v6.s6_addr, alen);
	*ret_off = info_append(ib, el, n + alen);
}

static void put_dns(struct info *ib, int family, const char *a, const char *b, uint32_t *ret_off)
{
	uint8_t buf[32];
	size_t alen = family == AF_INET ? 4 : 16;

	inet_pton(family, a, buf);
	inet_pton(family, b, buf + alen);
	*ret_off = info_append(ib, buf, 2 * alen);
}

static void answer_ip_configuration(struct sim_mbim *m, const struct req *r)
{
	struct info ib;
	uint32_t off;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	if (r->info_len < 4 || get_le32(r->info) >= SIM_MBIM_SESSIONS) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	uint32_t session = get_le32(r->info);
	const struct session *st = &m->sessions[session];
	if (!st->active) {
		respond(m, r, MBIM_STATUS_ERROR_CONTEXT_NOT_ACTIVATED, NULL);
		return;
	}
	const struct sim_qmi_mux *mux = &m->opts.mux[session + 1];
	bool v4 = st->ip_type != MBIM_CONTEXT_IP_TYPE_IPV6 && mux->ipv4.family;
	bool v6 = st->ip_type != MBIM_CONTEXT_IP_TYPE_IPV4 && mux->ipv6.family;
	struct config_prefix gw;

	/* MBIM_IP_CONFIGURATION_INFO: 15 u32 fields, then the data buffer. */
	info_init(&ib, 60);
	info_u32(&ib, 0, session);
	if (v4) {
		info_u32(&ib, 4, IPCFG_FLAGS_ALL);
		info_u32(&ib, 12, 1);
		put_ip(&ib, &mux->ipv4, &off, true);
		info_u32(&ib, 16, off);
		sim_qmi_gateway_of(&mux->ipv4, &gw);
		put_ip(&ib, &gw, &off, false);
		info_u32(&ib, 28, off);
		info_u32(&ib, 36, 2);
		put_dns(&ib, AF_INET, SIM_QMI_DNS4_PRIMARY, SIM_QMI_DNS4_SECONDARY, &off);
		info_u32(&ib, 40, off);
		info_u32(&ib, 52, m->opts.session_mtu);
	}
	if (v6) {
		info_u32(&ib, 8, IPCFG_FLAGS_ALL);
		info_u32(&ib, 20, 1);
		put_ip(&ib, &mux->ipv6, &off, true);
		info_u32(&ib, 24, off);
		sim_qmi_gateway_of(&mux->ipv6, &gw);
		put_ip(&ib, &gw, &off, false);
		info_u32(&ib, 32, off);
		info_u32(&ib, 44, 2);
		put_dns(&ib, AF_INET6, SIM_QMI_DNS6_PRIMARY, SIM_QMI_DNS6_SECONDARY, &off);
		info_u32(&ib, 48, off);
		info_u32(&ib, 56, m->opts.session_mtu);
	}
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* ---- SMS: one store of SIM_MBIM_SMS_MAX messages, PDU format only (sim-mbim.h) ---- */

static const uint32_t sms_cids[] = {
	MBIM_CID_SMS_CONFIGURATION,
	MBIM_CID_SMS_READ,
	MBIM_CID_SMS_SEND,
	MBIM_CID_SMS_DELETE,
	MBIM_CID_SMS_MESSAGE_STORE_STATUS,
};

static const uint8_t *sms_uuid(void)
{
	return (const uint8_t *)mbim_uuid_from_service(MBIM_SERVICE_SMS);
}

/* MBIM_SMS_CONFIGURATION_INFO: storage initialized, PDU format, the store's size, no SC. */
static void answer_sms_configuration(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	info_init(&ib, 24);
	info_u32(&ib, 0, MBIM_SMS_STORAGE_STATE_INITIALIZED);
	info_u32(&ib, 4, MBIM_SMS_FORMAT_PDU);
	info_u32(&ib, 8, SIM_MBIM_SMS_MAX);
	info_u32(&ib, 12, 0);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* MBIM_SMS_READ_REQ {format, flag, index} -> MBIM_SMS_READ_INFO with PDU records. */
static void answer_sms_read(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	if (r->info_len < 12) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	uint32_t format = get_le32(r->info), flag = get_le32(r->info + 4);
	uint32_t index = get_le32(r->info + 8);
	if (format != MBIM_SMS_FORMAT_PDU || flag > MBIM_SMS_FLAG_DRAFT) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	if (flag == MBIM_SMS_FLAG_INDEX &&
	    (index < 1 || index > SIM_MBIM_SMS_MAX || !m->sms[index - 1].used)) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_MEMORY_INDEX, NULL);
		return;
	}
	bool pick[SIM_MBIM_SMS_MAX];
	uint32_t n = 0;
	for (unsigned i = 0; i < SIM_MBIM_SMS_MAX; i++) {
		const struct sim_mbim_sms *s = &m->sms[i];
		pick[i] = s->used &&
			  (flag == MBIM_SMS_FLAG_ALL ||
			   (flag == MBIM_SMS_FLAG_INDEX && i + 1 == index) ||
			   (flag == MBIM_SMS_FLAG_NEW && s->status == MBIM_SMS_STATUS_NEW) ||
			   (flag == MBIM_SMS_FLAG_OLD && s->status == MBIM_SMS_STATUS_OLD));
		n += pick[i];
	}
	info_init(&ib, 8 + 8 * (size_t)n);
	info_u32(&ib, 0, MBIM_SMS_FORMAT_PDU);
	info_u32(&ib, 4, n);
	unsigned e = 0;
	for (unsigned i = 0; i < SIM_MBIM_SMS_MAX; i++) {
		if (!pick[i])
			continue;
		/* MBIM_SMS_PDU_RECORD: index, status, PduData (offset from the record). */
		uint8_t rec[16 + SIM_MBIM_SMS_PDU_MAX + 3];
		const struct sim_mbim_sms *s = &m->sms[i];
		put_le32(rec, i + 1);
		put_le32(rec + 4, s->status);
		put_le32(rec + 8, 16);
		put_le32(rec + 12, s->len);
		memcpy(rec + 16, s->pdu, s->len);
		size_t len = 16 + s->len;
		uint32_t off = info_append(&ib, rec, len);
		if (!off) {
			respond(m, r, MBIM_STATUS_ERROR_FAILURE, NULL);
			return;
		}
		info_u32(&ib, 8 + 8 * e, off);
		info_u32(&ib, 12 + 8 * e, (uint32_t)len);
		e++;
	}
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* MBIM_SMS_SEND {format, MBIM_SMS_SEND_PDU {OL to PduData}}: an SMS-SUBMIT after its
 * SMSC address, recorded in opts.sms_outbox; MBIM_SMS_SEND_INFO {message reference}. */
static void answer_sms_send(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_SET) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	if (r->info_len < 12 || get_le32(r->info) != MBIM_SMS_FORMAT_PDU) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	/* The MBIM_SMS_SEND_PDU follows the format inline, as libmbim (and so ModemManager)
	 * builds it: its PduData pair counts from the record's start. */
	const uint8_t *rec = r->info + 4;
	uint32_t rsize = r->info_len - 4;
	uint32_t poff = get_le32(rec), psize = get_le32(rec + 4);
	if (poff > rsize || psize > rsize - poff) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	const uint8_t *pdu = rec + poff;
	if (psize < 2 || pdu[0] > 11 || (size_t)pdu[0] + 2 > psize ||
	    (pdu[pdu[0] + 1] & 0x03) != 0x01 || psize > SIM_MBIM_SMS_PDU_MAX) {
		m->stats.sms_refused++;
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	if (m->opts.sms_outbox[0]) {
		FILE *f = fopen(m->opts.sms_outbox, "ae");
		if (f) {
			for (uint32_t i = 0; i < psize; i++)
				fprintf(f, "%02X", pdu[i]);
			fputc('\n', f);
			fclose(f);
		}
	}
	m->stats.sms_sent++;
	mlog(m, LOG_INFO, "mbim: message sent (%u bytes)", psize);
	info_init(&ib, 4);
	info_u32(&ib, 0, m->next_message_reference++);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* MBIM_SMS_DELETE {flag, index}: by index, or all. */
static void answer_sms_delete(struct sim_mbim *m, const struct req *r)
{
	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_SET) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	if (r->info_len < 8) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	uint32_t flag = get_le32(r->info), index = get_le32(r->info + 4);
	if (flag == MBIM_SMS_FLAG_INDEX) {
		if (index < 1 || index > SIM_MBIM_SMS_MAX || !m->sms[index - 1].used) {
			respond(m, r, MBIM_STATUS_ERROR_INVALID_MEMORY_INDEX, NULL);
			return;
		}
		m->sms[index - 1] = (struct sim_mbim_sms){ 0 };
	} else if (flag == MBIM_SMS_FLAG_ALL) {
		memset(m->sms, 0, sizeof(m->sms));
	} else {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	m->stats.sms_deleted++;
	respond(m, r, MBIM_STATUS_ERROR_NONE, NULL);
}

/* MBIM_SMS_STATUS_INFO {flags, index}: the store full or not, nothing new since asked. */
static void answer_sms_store_status(struct sim_mbim *m, const struct req *r)
{
	struct info ib;
	bool full = true;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_QUERY) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	for (unsigned i = 0; i < SIM_MBIM_SMS_MAX; i++)
		full &= m->sms[i].used;
	info_init(&ib, 8);
	info_u32(&ib, 0,
		 full ? MBIM_SMS_STATUS_FLAG_MESSAGE_STORE_FULL : MBIM_SMS_STATUS_FLAG_NONE);
	info_u32(&ib, 4, 0);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void handle_sms(struct sim_mbim *m, const struct req *r)
{
	switch (r->cid) {
	case MBIM_CID_SMS_CONFIGURATION:
		answer_sms_configuration(m, r);
		return;
	case MBIM_CID_SMS_READ:
		answer_sms_read(m, r);
		return;
	case MBIM_CID_SMS_SEND:
		answer_sms_send(m, r);
		return;
	case MBIM_CID_SMS_DELETE:
		answer_sms_delete(m, r);
		return;
	case MBIM_CID_SMS_MESSAGE_STORE_STATUS:
		answer_sms_store_status(m, r);
		return;
	default:
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
	}
}

int sim_mbim_deliver_sms(struct sim_mbim *m, const uint8_t *pdu, size_t len)
{
	unsigned i = 0;
	uint8_t info[8];

	if (len < 2 || len > SIM_MBIM_SMS_PDU_MAX)
		return -EINVAL;
	while (i < SIM_MBIM_SMS_MAX && m->sms[i].used)
		i++;
	if (i == SIM_MBIM_SMS_MAX)
		return -ENOSPC;
	m->sms[i] = (struct sim_mbim_sms){ .used = true,
					   .status = MBIM_SMS_STATUS_NEW,
					   .len = (uint16_t)len };
	memcpy(m->sms[i].pdu, pdu, len);
	m->stats.sms_received++;
	mlog(m, LOG_INFO, "mbim: message from the network stored at %u", i + 1);
	if (!m->open)
		return (int)(i + 1);
	put_le32(info, MBIM_SMS_STATUS_FLAG_NEW_MESSAGE);
	put_le32(info + 4, i + 1);
	send_command_message(m, true, 0, sms_uuid(), MBIM_CID_SMS_MESSAGE_STORE_STATUS, 0, info,
			     sizeof(info));
	return (int)(i + 1);
}

static const uint32_t basic_connect_cids[] = {
	MBIM_CID_DEVICE_CAPS,	  MBIM_CID_SUBSCRIBER_READY_STATUS,
	MBIM_CID_RADIO_STATE,	  MBIM_CID_REGISTER_STATE,
	MBIM_CID_PACKET_SERVICE,  MBIM_CID_SIGNAL_STATE,
	MBIM_CID_CONNECT,	  MBIM_CID_IP_CONFIGURATION,
	MBIM_CID_DEVICE_SERVICES, MBIM_CID_DEVICE_SERVICE_SUBSCRIBE_LIST,
	MBIM_CID_HOME_PROVIDER,	  MBIM_CID_PIN,
	MBIM_CID_PIN_LIST,	  MBIM_CID_VISIBLE_PROVIDERS,
};

/* One MBIM_DEVICE_SERVICE_ELEMENT; its OL pair at pair_off. */
static void put_service(struct info *ib, size_t pair_off, MbimService service, const uint32_t *cids,
			unsigned n_cids)
{
	uint8_t el[28 + 4 * ARRAY_SIZE(basic_connect_cids)];

	memcpy(el, (const uint8_t *)mbim_uuid_from_service(service), 16);
	put_le32(el + 16, 0); /* DssPayload: no device service streams */
	put_le32(el + 20, 0); /* MaxDssInstances */
	put_le32(el + 24, n_cids);
	for (unsigned i = 0; i < n_cids; i++)
		put_le32(el + 28 + 4 * i, cids[i]);
	size_t len = 28 + 4 * (size_t)n_cids;
	put_le32(ib->b + pair_off, info_append(ib, el, len));
	put_le32(ib->b + pair_off + 4, (uint32_t)len);
}

static void answer_device_services(struct sim_mbim *m, const struct req *r)
{
	static const uint32_t qmi_cids[] = { 1 }; /* MBIM_CID_QMI_MSG */
	struct info ib;
	unsigned n = m->opts.qmi_over_mbim ? 3 : 2;

	info_init(&ib, 8 + 8 * n);
	info_u32(&ib, 0, n);
	info_u32(&ib, 4, 0); /* MaxDssSessions */
	put_service(&ib, 8, MBIM_SERVICE_BASIC_CONNECT, basic_connect_cids,
		    ARRAY_SIZE(basic_connect_cids));
	put_service(&ib, 16, MBIM_SERVICE_SMS, sms_cids, ARRAY_SIZE(sms_cids));
	if (m->opts.qmi_over_mbim)
		put_service(&ib, 24, MBIM_SERVICE_QMI, qmi_cids, ARRAY_SIZE(qmi_cids));
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void answer_subscribe_list(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_SET || r->info_len > sizeof(ib.b)) {
		respond(m, r,
			r->info_len > sizeof(ib.b) ? MBIM_STATUS_ERROR_INVALID_PARAMETERS
						   : MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT,
			NULL);
		return;
	}
	info_init(&ib, r->info_len);
	memcpy(ib.b, r->info, r->info_len);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

/* MBIM_PIN_INFO: the code the card waits for (PIN1, PUK1; none, unlocked, when it waits
 * for none) and its tries left. */
static void pin_info(const struct sim_mbim *m, struct info *ib)
{
	const struct sim_card *c = &m->card;

	info_init(ib, 12);
	if (c->pin1 == SIM_CARD_PIN_ENABLED_NOT_VERIFIED) {
		info_u32(ib, 0, MBIM_PIN_TYPE_PIN1);
		info_u32(ib, 4, MBIM_PIN_STATE_LOCKED);
		info_u32(ib, 8, c->pin_retries);
	} else if (c->pin1 == SIM_CARD_PIN_BLOCKED || c->pin1 == SIM_CARD_PIN_PERMANENTLY_BLOCKED) {
		info_u32(ib, 0, MBIM_PIN_TYPE_PUK1);
		info_u32(ib, 4, MBIM_PIN_STATE_LOCKED);
		info_u32(ib, 8, c->puk_retries);
	} else {
		info_u32(ib, 0, MBIM_PIN_TYPE_UNKNOWN);
		info_u32(ib, 4, MBIM_PIN_STATE_UNLOCKED);
		info_u32(ib, 8, 0);
	}
}

/*
 * MBIM_CID_PIN. Query: pin_info(). Set {PinType, PinOperation, Pin, NewPin}: PIN1 enter,
 * enable, disable, change; PUK1 enter with the new PIN1. A wrong code is FAILURE with the
 * PIN_INFO of the code now waited for (PIN1 and its tries, PUK1 once blocked), as
 * ModemManager reads it; PIN1 disabled for enter, change or disable is PIN_DISABLED; enable
 * when enabled succeeds with nothing to do (MBIM 1.0 names no error for it). Only PIN1 and
 * PUK1 are simulated: another PIN type is INVALID_PARAMETERS.
 */
static void answer_pin(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (!m->card.present) {
		respond(m, r, MBIM_STATUS_ERROR_SIM_NOT_INSERTED, NULL);
		return;
	}
	if (r->type != MBIM_MESSAGE_COMMAND_TYPE_SET) {
		pin_info(m, &ib);
		respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
		return;
	}
	char code[SIM_CARD_PIN_MAX + 1], new_code[SIM_CARD_PIN_MAX + 1];
	if (r->info_len < 24 || !req_string(r, 8, code, sizeof(code)) ||
	    !req_string(r, 16, new_code, sizeof(new_code))) {
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		return;
	}
	uint32_t type = get_le32(r->info), op = get_le32(r->info + 4);
	enum sim_card_result res;
	if (type == MBIM_PIN_TYPE_PUK1 && op == MBIM_PIN_OPERATION_ENTER)
		res = sim_card_unblock(&m->card, code, new_code);
	else if (type != MBIM_PIN_TYPE_PIN1)
		res = SIM_CARD_INVALID_CODE;
	else if (op == MBIM_PIN_OPERATION_ENTER)
		res = sim_card_verify(&m->card, code);
	else if (op == MBIM_PIN_OPERATION_ENABLE || op == MBIM_PIN_OPERATION_DISABLE)
		res = sim_card_set_protection(&m->card, op == MBIM_PIN_OPERATION_ENABLE, code);
	else if (op == MBIM_PIN_OPERATION_CHANGE)
		res = sim_card_change(&m->card, code, new_code);
	else
		res = SIM_CARD_INVALID_CODE;
	mlog(m, LOG_INFO, "sim mbim: PIN type %u operation %u: %d (PIN %u, PUK %u tries left)",
	     type, op, res, m->card.pin_retries, m->card.puk_retries);
	pin_info(m, &ib);
	switch (res) {
	case SIM_CARD_OK:
		respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
		break;
	case SIM_CARD_WRONG:
		/* PIN1 verified or disabled and a wrong one given to change or disable it: the
		 * PIN_INFO names PIN1 with its tries all the same. */
		if (type == MBIM_PIN_TYPE_PIN1 &&
		    m->card.pin1 != SIM_CARD_PIN_ENABLED_NOT_VERIFIED) {
			info_u32(&ib, 0, MBIM_PIN_TYPE_PIN1);
			info_u32(&ib, 4, MBIM_PIN_STATE_UNLOCKED);
			info_u32(&ib, 8, m->card.pin_retries);
		}
		respond(m, r, MBIM_STATUS_ERROR_FAILURE, &ib);
		break;
	case SIM_CARD_BLOCKED:
	case SIM_CARD_DEAD:
		respond(m, r, MBIM_STATUS_ERROR_FAILURE, &ib);
		break;
	case SIM_CARD_NO_EFFECT:
		if (op == MBIM_PIN_OPERATION_ENABLE)
			respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
		else
			respond(m, r, MBIM_STATUS_ERROR_PIN_DISABLED, NULL);
		break;
	case SIM_CARD_NOT_INSERTED:
		respond(m, r, MBIM_STATUS_ERROR_SIM_NOT_INSERTED, NULL);
		break;
	case SIM_CARD_INVALID_CODE:
	default:
		respond(m, r, MBIM_STATUS_ERROR_INVALID_PARAMETERS, NULL);
		break;
	}
}

/* MBIM_CID_PIN_LIST: ten MBIM_PIN_DESC {PinMode, PinFormat, PinLengthMin, PinLengthMax};
 * only PIN1 is simulated, the others NOT_SUPPORTED. */
static void answer_pin_list(struct sim_mbim *m, const struct req *r)
{
	struct info ib;

	if (!m->card.present) {
		respond(m, r, MBIM_STATUS_ERROR_SIM_NOT_INSERTED, NULL);
		return;
	}
	info_init(&ib, 10 * 16);
	info_u32(&ib, 0,
		 sim_card_pin_enabled(&m->card) ? MBIM_PIN_MODE_ENABLED : MBIM_PIN_MODE_DISABLED);
	info_u32(&ib, 4, MBIM_PIN_FORMAT_NUMERIC);
	info_u32(&ib, 8, 4);
	info_u32(&ib, 12, SIM_CARD_PIN_MAX);
	respond(m, r, MBIM_STATUS_ERROR_NONE, &ib);
}

static void handle_command(struct sim_mbim *m, const struct req *r)
{
	bool query = r->type == MBIM_MESSAGE_COMMAND_TYPE_QUERY;

	m->stats.mbim_requests++;
	if (memcmp(r->service, sms_uuid(), 16) == 0) {
		handle_sms(m, r);
		return;
	}
	if (memcmp(r->service, (const uint8_t *)mbim_uuid_from_service(MBIM_SERVICE_BASIC_CONNECT),
		   16) != 0) {
		respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
		return;
	}
	switch (r->cid) {
	case MBIM_CID_DEVICE_CAPS:
		if (query) {
			answer_device_caps(m, r);
			return;
		}
		break;
	case MBIM_CID_SUBSCRIBER_READY_STATUS:
		if (query) {
			answer_subscriber_ready(m, r);
			return;
		}
		break;
	case MBIM_CID_RADIO_STATE:
		answer_radio_state(m, r);
		return;
	case MBIM_CID_PIN:
		answer_pin(m, r);
		return;
	case MBIM_CID_PIN_LIST:
		if (query) {
			answer_pin_list(m, r);
			return;
		}
		break;
	case MBIM_CID_VISIBLE_PROVIDERS:
		answer_visible_providers(m, r);
		return;
	case MBIM_CID_REGISTER_STATE:
		answer_register_state(m, r);
		return;
	case MBIM_CID_PACKET_SERVICE:
		answer_packet_service(m, r);
		return;
	case MBIM_CID_SIGNAL_STATE:
		answer_signal_state(m, r);
		return;
	case MBIM_CID_CONNECT:
		answer_connect(m, r);
		return;
	case MBIM_CID_IP_CONFIGURATION:
		answer_ip_configuration(m, r);
		return;
	case MBIM_CID_DEVICE_SERVICES:
		if (query) {
			answer_device_services(m, r);
			return;
		}
		break;
	case MBIM_CID_DEVICE_SERVICE_SUBSCRIBE_LIST:
		answer_subscribe_list(m, r);
		return;
	case MBIM_CID_HOME_PROVIDER:
		/* Setting the home provider (MVNO provisioning) is not simulated. */
		if (query) {
			answer_home_provider(m, r);
			return;
		}
		break;
	default:
		break;
	}
	respond(m, r, MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT, NULL);
}

/* A whole (single-fragment or reassembled) COMMAND message. */
static int command_whole(struct sim_mbim *m, const uint8_t *buf, size_t len)
{
	struct req r = {
		.tid = get_le32(buf + 8),
		.service = buf + MSG_HDR + FRAG_HDR,
		.cid = get_le32(buf + MSG_HDR + FRAG_HDR + 16),
		.type = get_le32(buf + MSG_HDR + FRAG_HDR + 20),
		.info_len = get_le32(buf + MSG_HDR + FRAG_HDR + 24),
		.info = buf + CMD_HDR,
	};

	if (r.info_len != len - CMD_HDR || (r.type != MBIM_MESSAGE_COMMAND_TYPE_QUERY &&
					    r.type != MBIM_MESSAGE_COMMAND_TYPE_SET)) {
		m->stats.mbim_malformed++;
		send_function_error(m, r.tid, MBIM_PROTOCOL_ERROR_LENGTH_MISMATCH);
		return -EBADMSG;
	}
	handle_command(m, &r);
	return 0;
}

static int malformed(struct sim_mbim *m, uint32_t tid, MbimProtocolError e)
{
	m->stats.mbim_malformed++;
	send_function_error(m, tid, e);
	return -EBADMSG;
}

static int handle_fragment(struct sim_mbim *m, const uint8_t *buf, size_t len, uint32_t tid)
{
	if (len < MSG_HDR + FRAG_HDR)
		return malformed(m, tid, MBIM_PROTOCOL_ERROR_LENGTH_MISMATCH);
	uint32_t total = get_le32(buf + 12), cur = get_le32(buf + 16);

	if (total == 0 || cur >= total)
		return malformed(m, tid, MBIM_PROTOCOL_ERROR_FRAGMENT_OUT_OF_SEQUENCE);
	if (cur == 0) {
		if (m->frag_total) {
			/* A new command while one was half in: the old one is lost. */
			m->frag_total = 0;
			return malformed(m, m->frag_tid,
					 MBIM_PROTOCOL_ERROR_FRAGMENT_OUT_OF_SEQUENCE);
		}
		if (len < CMD_HDR)
			return malformed(m, tid, MBIM_PROTOCOL_ERROR_LENGTH_MISMATCH);
		if (total == 1)
			return command_whole(m, buf, len);
		memcpy(m->frag, buf, len);
		m->frag_len = len;
		m->frag_tid = tid;
		m->frag_total = total;
		m->frag_next = 1;
		return 0;
	}
	if (!m->frag_total || tid != m->frag_tid || cur != m->frag_next || total != m->frag_total ||
	    m->frag_len + len - (MSG_HDR + FRAG_HDR) > MSG_MAX) {
		m->frag_total = 0;
		return malformed(m, tid, MBIM_PROTOCOL_ERROR_FRAGMENT_OUT_OF_SEQUENCE);
	}
	memcpy(m->frag + m->frag_len, buf + MSG_HDR + FRAG_HDR, len - (MSG_HDR + FRAG_HDR));
	m->frag_len += len - (MSG_HDR + FRAG_HDR);
	m->stats.mbim_fragments_in++;
	if (++m->frag_next < m->frag_total)
		return 0;
	m->frag_total = 0;
	put_le32(m->frag + 4, (uint32_t)m->frag_len);
	put_le32(m->frag + 12, 1);
	return command_whole(m, m->frag, m->frag_len);
}

int sim_mbim_handle(struct sim_mbim *m, const uint8_t *buf, size_t len)
{
	if (len < MSG_HDR) {
		m->stats.mbim_malformed++;
		return -EBADMSG;
	}
	uint32_t type = get_le32(buf), msg_len = get_le32(buf + 4), tid = get_le32(buf + 8);

	if (len > m->opts.max_control_message)
		return malformed(m, tid, MBIM_PROTOCOL_ERROR_MAX_TRANSFER);
	if (msg_len != len)
		return malformed(m, tid, MBIM_PROTOCOL_ERROR_LENGTH_MISMATCH);

	switch (type) {
	case MBIM_MESSAGE_TYPE_OPEN: {
		if (len < MSG_HDR + 4)
			return malformed(m, tid, MBIM_PROTOCOL_ERROR_LENGTH_MISMATCH);
		g_autoptr(MbimMessage) msg = mbim_message_new(buf, (guint32)len);
		uint32_t max = mbim_message_open_get_max_control_transfer(msg);
		/* The function sends no more than either side allows. */
		if (max > m->opts.max_control_message)
			max = m->opts.max_control_message;
		if (max < SIM_MBIM_MAX_CONTROL_MIN)
			max = SIM_MBIM_MAX_CONTROL_MIN;
		m->stats.mbim_requests++;
		m->stats.mbim_opens++;
		if (m->open) {
			/* Out of step with the host (MBIM 1.0 §9.3.1): close first, silently. */
			m->stats.mbim_reopens++;
			close_function(m, "OPEN while open");
		}
		m->open = true;
		m->register_told_len = 0;
		m->max_transfer = max;
		mlog(m, LOG_INFO, "mbim: opened, max control transfer %u", max);
		send_libmbim(m, mbim_message_open_done_new(tid, MBIM_STATUS_ERROR_NONE));
		m->stats.mbim_responses++;
		return 0;
	}
	case MBIM_MESSAGE_TYPE_CLOSE:
		m->stats.mbim_requests++;
		close_function(m, "CLOSE");
		send_libmbim(m, mbim_message_close_done_new(tid, MBIM_STATUS_ERROR_NONE));
		m->stats.mbim_responses++;
		return 0;
	case MBIM_MESSAGE_TYPE_COMMAND:
		if (!m->open) {
			m->stats.mbim_not_opened++;
			send_function_error(m, tid, MBIM_PROTOCOL_ERROR_NOT_OPENED);
			return -EBADMSG;
		}
		return handle_fragment(m, buf, len, tid);
	case MBIM_MESSAGE_TYPE_HOST_ERROR:
		/* The host gives up on a transaction: nothing to answer. */
		m->stats.mbim_requests++;
		m->frag_total = 0;
		return 0;
	default:
		return malformed(m, tid, MBIM_PROTOCOL_ERROR_UNKNOWN);
	}
}

unsigned sim_mbim_drop_all(struct sim_mbim *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SIM_MBIM_SESSIONS; i++) {
		if (!m->sessions[i].active)
			continue;
		m->sessions[i].active = false;
		m->stats.mbim_sessions_dropped++;
		n++;
		mlog(m, LOG_INFO, "mbim session %u: dropped by the network", i);
		if (m->open)
			connect_indication(m, i, SIM_MBIM_NW_REGULAR_DEACTIVATION);
	}
	return n;
}
