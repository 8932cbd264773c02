/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's QMI responder driven message by message, no sockets, no root: requests are
 * built with libqmi's message API (its generated request builders have no public
 * serialiser in 1.32), responses and indications are parsed back with libqmi and checked
 * TLV by TLV, byte-exact where the byte order matters. Also the option parsers that feed it.
 * As root, the wiring into qmapd-sim's data side too: control messages over the sim socket,
 * data gating by session, and the switch to a granted data format (in a private network
 * namespace; without root that part is skipped, the rest still runs).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <libqmi-glib.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "qmap.h"
#include "sim-card.h"
#include "sim-qmi.h"
#include "sim.h"
#include "test-loop.h"
#include "test-case.h"
#include "transport.h"

#define WDS_START_NETWORK	  0x0020
#define WDS_STOP_NETWORK	  0x0021
#define WDS_PACKET_SERVICE_STATUS 0x0022
#define WDS_GET_CURRENT_SETTINGS  0x002D
#define WDS_SET_IP_FAMILY	  0x004D
#define WDS_BIND_MUX_DATA_PORT	  0x00A2
#define WDA_SET_DATA_FORMAT	  0x0020
#define WDA_GET_DATA_FORMAT	  0x0021
#define CTL_GET_VERSION_INFO	  0x0021
#define CTL_ALLOCATE_CID	  0x0022
#define CTL_RELEASE_CID		  0x0023
#define CTL_SYNC		  0x0027

static struct sim_qmi_options opts;
static struct sim_qmi *q;
static GPtrArray *sent; /* QmiMessage *, everything the modem sent for the last request */
static uint16_t next_tid = 1;

static int format_calls;
static int format_ret;
static bool format_reset;   /* the callback resets the engine, as a broken socket would */
static bool format_restart; /* the callback tries sim_qmi_restart(): its result here */
static int format_restart_ret;
static struct sim_qmi_data_format last_format;

static void on_send(void *userdata, const uint8_t *buf, size_t len)
{
	g_autoptr(GByteArray) raw = g_byte_array_new();
	g_autoptr(GError) error = NULL;
	(void)userdata;

	g_byte_array_append(raw, buf, (guint)len);
	QmiMessage *m = qmi_message_new_from_raw(raw, &error);
	EXPECT_TRUE(m != NULL);
	EXPECT_EQ(raw->len, 0);
	if (!m)
		return;
	/* From the modem: the QMUX sender flag is set. */
	EXPECT_EQ(buf[3], 0x80);
	g_ptr_array_add(sent, m);
}

static int on_format(void *userdata, const struct sim_qmi_data_format *f)
{
	(void)userdata;
	format_calls++;
	last_format = *f;
	if (format_reset)
		sim_qmi_reset(q);
	if (format_restart)
		format_restart_ret = sim_qmi_restart(q, NULL);
	return format_ret;
}

static void prefix(struct config_prefix *p, const char *text)
{
	EXPECT_EQ(config_parse_prefix(text, p), 0);
}

static void base_options(void)
{
	char err[256];

	sim_qmi_options_init(&opts);
	opts.limits = (struct sim_qmi_data_format){
		.version = QMAP_V5,
		.dl_max_size = 16384,
		.dl_max_datagrams = 32,
		.ul_max_size = 16384,
		.ul_max_datagrams = 32,
	};
	opts.dl_min_size = 1628;
	EXPECT_EQ(sim_qmi_parse_apn("internet", &opts.apn[0], err, sizeof(err)), 0);
	EXPECT_EQ(sim_qmi_parse_apn("secure:alice:s3cret", &opts.apn[1], err, sizeof(err)), 0);
	opts.n_apn = 2;
	opts.mux[1].present = true;
	prefix(&opts.mux[1].ipv4, "192.0.2.2/24");
	prefix(&opts.mux[1].ipv6, "2001:db8:1::2/64");
	opts.mux[2].present = true;
	prefix(&opts.mux[2].ipv4, "203.0.113.2/32");
}

static void engine_new(void)
{
	static const struct sim_qmi_callbacks cb = { .send = on_send,
						     .set_data_format = on_format };

	q = sim_qmi_free(q);
	EXPECT_EQ(sim_qmi_new(&opts, &cb, NULL, &q), 0);
	format_calls = 0;
	format_ret = 0;
	format_reset = false;
	format_restart = false;
}

static void sent_clear(void)
{
	g_ptr_array_set_size(sent, 0);
}

/* Every case starts from the same options and nothing sent. */
TEST_SETUP()
{
	if (!sent)
		sent = g_ptr_array_new_with_free_func((GDestroyNotify)qmi_message_unref);
	sent_clear();
	base_options();
}

static QmiMessage *sent_at(unsigned i)
{
	return i < sent->len ? g_ptr_array_index(sent, i) : NULL;
}

static QmiMessage *request(uint8_t service, uint8_t cid, uint16_t message)
{
	uint16_t tid = next_tid++;

	if (service == QMI_SERVICE_CTL) /* 8-bit transaction ids */
		tid = (uint16_t)(tid % 255 + 1);
	return qmi_message_new((QmiService)service, cid, tid, message);
}

static void add_bytes(QmiMessage *m, uint8_t type, const void *data, size_t len)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	for (size_t i = 0; i < len; i++)
		qmi_message_tlv_write_guint8(m, ((const uint8_t *)data)[i], NULL);
	EXPECT_TRUE(qmi_message_tlv_write_complete(m, off, NULL));
}

static void add_u8(QmiMessage *m, uint8_t type, uint8_t v)
{
	add_bytes(m, type, &v, 1);
}

static void add_u32(QmiMessage *m, uint8_t type, uint32_t v)
{
	gsize off = qmi_message_tlv_write_init(m, type, NULL);
	qmi_message_tlv_write_guint32(m, QMI_ENDIAN_LITTLE, v, NULL);
	EXPECT_TRUE(qmi_message_tlv_write_complete(m, off, NULL));
}

static void add_string(QmiMessage *m, uint8_t type, const char *s)
{
	add_bytes(m, type, s, strlen(s));
}

/* Send a request (consumed); return the response, which must match it. */
static QmiMessage *exchange(QmiMessage *req)
{
	gsize len;
	const guint8 *raw = qmi_message_get_raw(req, &len, NULL);

	sent_clear();
	EXPECT_EQ(sim_qmi_handle(q, raw, len), 0);
	QmiMessage *resp = sent_at(0);
	EXPECT_TRUE(resp != NULL);
	if (resp) {
		EXPECT_TRUE(qmi_message_is_response(resp));
		EXPECT_EQ(qmi_message_get_service(resp), qmi_message_get_service(req));
		EXPECT_EQ(qmi_message_get_client_id(resp), qmi_message_get_client_id(req));
		EXPECT_EQ(qmi_message_get_transaction_id(resp),
			  qmi_message_get_transaction_id(req));
		EXPECT_EQ(qmi_message_get_message_id(resp), qmi_message_get_message_id(req));
	}
	qmi_message_unref(req);
	return resp;
}

/* The protocol error in the result TLV (0 = success), -1 when the TLV is missing. */
static int result_of(QmiMessage *m)
{
	guint16 len = 0;
	const guint8 *v = m ? qmi_message_get_raw_tlv(m, 0x02, &len) : NULL;

	if (!v || len != 4)
		return -1;
	int status = v[0] | v[1] << 8, error = v[2] | v[3] << 8;
	EXPECT_EQ(status, error != 0);
	return error;
}

static const guint8 *tlv(QmiMessage *m, uint8_t type, guint16 *len)
{
	*len = 0;
	return m ? qmi_message_get_raw_tlv(m, type, len) : NULL;
}

static int64_t tlv_u8(QmiMessage *m, uint8_t type)
{
	guint16 len;
	const guint8 *v = tlv(m, type, &len);
	return v && len == 1 ? v[0] : -1;
}

static int64_t tlv_u16(QmiMessage *m, uint8_t type)
{
	guint16 len;
	const guint8 *v = tlv(m, type, &len);
	return v && len == 2 ? (int64_t)(v[0] | v[1] << 8) : -1;
}

static int64_t tlv_u32(QmiMessage *m, uint8_t type)
{
	guint16 len = 0;
	gsize off = m ? qmi_message_tlv_read_init(m, type, &len, NULL) : 0;
	gsize pos = 0;
	guint32 v;

	if (!off || len != 4 ||
	    !qmi_message_tlv_read_guint32(m, off, &pos, QMI_ENDIAN_LITTLE, &v, NULL))
		return -1;
	return v;
}

static bool tlv_string_is(QmiMessage *m, uint8_t type, const char *s)
{
	guint16 len;
	const guint8 *v = tlv(m, type, &len);
	return v && len == strlen(s) && memcmp(v, s, len) == 0;
}

static uint8_t allocate(uint8_t service)
{
	QmiMessage *req = request(QMI_SERVICE_CTL, 0, CTL_ALLOCATE_CID);
	add_u8(req, 0x01, service);
	QmiMessage *resp = exchange(req);
	guint16 len;
	const guint8 *v = tlv(resp, 0x01, &len);

	EXPECT_EQ(result_of(resp), 0);
	EXPECT_TRUE(v && len == 2);
	if (!v || len != 2)
		return 0;
	EXPECT_EQ(v[0], service);
	return v[1];
}

static int simple(uint8_t service, uint8_t cid, uint16_t message)
{
	return result_of(exchange(request(service, cid, message)));
}

TEST(ctl)
{
	engine_new();

	QmiMessage *resp = exchange(request(QMI_SERVICE_CTL, 0, CTL_GET_VERSION_INFO));
	guint16 len;
	const guint8 *v = tlv(resp, 0x01, &len);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_TRUE(v && len == 1 + 7 * 5);
	if (v && len == 1 + 7 * 5) {
		bool seen[0x1b] = { false };
		EXPECT_EQ(v[0], 7);
		for (unsigned i = 0; i < 7; i++) {
			const guint8 *e = v + 1 + 5 * i;
			if (e[0] < sizeof(seen))
				seen[e[0]] = true;
			EXPECT_EQ(e[1] | e[2] << 8, 1); /* major */
		}
		EXPECT_TRUE(seen[QMI_SERVICE_CTL] && seen[QMI_SERVICE_WDS] &&
			    seen[QMI_SERVICE_DMS] && seen[QMI_SERVICE_NAS] &&
			    seen[QMI_SERVICE_WDA] && seen[QMI_SERVICE_UIM] &&
			    seen[QMI_SERVICE_WMS]);
	}

	uint8_t d1 = allocate(QMI_SERVICE_DMS), d2 = allocate(QMI_SERVICE_DMS);
	EXPECT_EQ(d1, 1);
	EXPECT_EQ(d2, 2);
	/* Client ids are per service. */
	EXPECT_EQ(allocate(QMI_SERVICE_NAS), 1);

	QmiMessage *req = request(QMI_SERVICE_CTL, 0, CTL_ALLOCATE_CID);
	add_u8(req, 0x01, QMI_SERVICE_VOICE);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_SERVICE_TYPE);
	EXPECT_EQ(result_of(exchange(request(QMI_SERVICE_CTL, 0, CTL_ALLOCATE_CID))),
		  QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	req = request(QMI_SERVICE_CTL, 0, CTL_ALLOCATE_CID);
	add_bytes(req, 0x01, "\x02\x00", 2);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);

	req = request(QMI_SERVICE_CTL, 0, CTL_RELEASE_CID);
	add_bytes(req, 0x01, (uint8_t[]){ QMI_SERVICE_DMS, d1 }, 2);
	resp = exchange(req);
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len == 2 && v[0] == QMI_SERVICE_DMS && v[1] == d1);
	req = request(QMI_SERVICE_CTL, 0, CTL_RELEASE_CID);
	add_bytes(req, 0x01, (uint8_t[]){ QMI_SERVICE_DMS, d1 }, 2);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);

	/* Requests on a released id, an id of another service, a never allocated one. */
	EXPECT_EQ(simple(QMI_SERVICE_DMS, d1, 0x0021), QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
	EXPECT_EQ(simple(QMI_SERVICE_WDS, d2, 0x0022), QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, 200, 0x0021), QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
	EXPECT_EQ(simple(QMI_SERVICE_UIM, 1, 0x0021), QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, d2, 0x0021), 0);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, d2, 0x0099), QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
	EXPECT_EQ(simple(QMI_SERVICE_CTL, 0, 0x0099), QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);

	/* Round robin: a released id is not the next one handed out. */
	EXPECT_EQ(allocate(QMI_SERVICE_DMS), 3);

	/* Sync releases everything. */
	EXPECT_EQ(simple(QMI_SERVICE_CTL, 0, CTL_SYNC), 0);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, d2, 0x0021), QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);

	const struct sim_qmi_stats *st = sim_qmi_get_stats(q);
	EXPECT_EQ(st->qmi_requests, st->qmi_responses);
	EXPECT_EQ(st->qmi_malformed, 0);
	EXPECT_EQ(st->qmi_errors, 11);
}

TEST(dms_nas)
{
	engine_new();
	uint8_t dms = allocate(QMI_SERVICE_DMS), nas = allocate(QMI_SERVICE_NAS);

	QmiMessage *resp = exchange(request(QMI_SERVICE_DMS, dms, 0x0025));
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_TRUE(tlv_string_is(resp, 0x11, SIM_QMI_IMEI));
	EXPECT_TRUE(tlv_string_is(resp, 0x11, "350000000000006"));
	resp = exchange(request(QMI_SERVICE_DMS, dms, 0x0021));
	EXPECT_TRUE(tlv_string_is(resp, 0x01, SIM_QMI_MANUFACTURER));
	resp = exchange(request(QMI_SERVICE_DMS, dms, 0x0022));
	EXPECT_TRUE(tlv_string_is(resp, 0x01, SIM_QMI_MODEL));
	resp = exchange(request(QMI_SERVICE_DMS, dms, 0x0020));
	guint16 len;
	const guint8 *v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len == 12 && v[8] == 2 && v[9] == 2 && v[10] == 1 && v[11] == 8);

	/* Serving system: registered, CS+PS attached, 3GPP, one radio interface: LTE. */
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0024));
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len == 6);
	if (v && len == 6)
		EXPECT_MEM_EQ(v, "\x01\x01\x01\x02\x01\x08", 6);
	v = tlv(resp, 0x12, &len);
	EXPECT_TRUE(v && len == 4 + 1 + 12);
	if (v && len == 17) {
		EXPECT_MEM_EQ(v, "\x01\x00\x01\x00\x0c", 5);
		EXPECT_MEM_EQ(v + 5, "Test Network", 12);
	}
	EXPECT_EQ(tlv_u8(resp, 0x10), 1); /* roaming off */

	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x004F));
	v = tlv(resp, 0x14, &len);
	EXPECT_TRUE(v && len == 6);
	if (v && len == 6) {
		EXPECT_EQ((int8_t)v[0], -65);
		EXPECT_EQ((int8_t)v[1], -9);
		EXPECT_EQ((int16_t)(v[2] | v[3] << 8), -95);
		EXPECT_EQ((int16_t)(v[4] | v[5] << 8), 130);
	}
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0020));
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len == 2 && (int8_t)v[0] == -65 && v[1] == 8);
}

/*
 * Serving System indications: only to a NAS client that asked (Register Indications, TLV 0x13
 * on), once per change of registration (the roaming switch), with the Get answer's TLVs; a
 * malformed on/off byte is refused.
 */
TEST(nas_serving_system_indication)
{
	char roam[] = "/tmp/test-sim-qmi-roam.XXXXXX";
	int fd = mkstemp(roam);

	EXPECT_TRUE(fd >= 0);
	close(fd);
	unlink(roam);
	snprintf(opts.quirks.roaming_file, sizeof(opts.quirks.roaming_file), "%s", roam);
	engine_new();
	uint8_t told = allocate(QMI_SERVICE_NAS), other = allocate(QMI_SERVICE_NAS);

	QmiMessage *req = request(QMI_SERVICE_NAS, told, 0x0003);
	add_bytes(req, 0x13, "\x01\x00", 2);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
	req = request(QMI_SERVICE_NAS, told, 0x0003);
	add_u8(req, 0x13, 1);
	EXPECT_EQ(result_of(exchange(req)), 0);

	sent_clear();
	sim_qmi_tick(q); /* the first look: nothing changed yet */
	sim_qmi_tick(q);
	EXPECT_EQ(sent->len, 0u);

	fd = open(roam, O_CREAT | O_WRONLY, 0600);
	EXPECT_TRUE(fd >= 0);
	close(fd);
	sim_qmi_tick(q);
	EXPECT_EQ(sent->len, 1u);
	QmiMessage *ind = sent_at(0);
	EXPECT_TRUE(ind && qmi_message_is_indication(ind));
	if (ind) {
		EXPECT_EQ(qmi_message_get_service(ind), QMI_SERVICE_NAS);
		EXPECT_EQ(qmi_message_get_client_id(ind), told);
		EXPECT_EQ(qmi_message_get_message_id(ind), 0x0024);
		EXPECT_EQ(tlv_u8(ind, 0x10), 0); /* roaming on */
	}
	sent_clear();
	sim_qmi_tick(q); /* no change, no indication */
	EXPECT_EQ(sent->len, 0u);
	unlink(roam);
	sim_qmi_tick(q);
	EXPECT_EQ(sent->len, 1u);
	EXPECT_EQ(tlv_u8(sent_at(0), 0x10), 1); /* home again */

	/* Turned off: no more. */
	req = request(QMI_SERVICE_NAS, told, 0x0003);
	add_u8(req, 0x13, 0);
	EXPECT_EQ(result_of(exchange(req)), 0);
	(void)other;
	fd = open(roam, O_CREAT | O_WRONLY, 0600);
	close(fd);
	sent_clear();
	sim_qmi_tick(q);
	EXPECT_EQ(sent->len, 0u);
	unlink(roam);
}

/* NAS system selection, scan and registration as libqmi defines the messages. */
TEST(nas_selection_scan_register)
{
	engine_new();
	uint8_t nas = allocate(QMI_SERVICE_NAS);
	guint16 len;
	const guint8 *v;

	/* Bands 3 and 20: set, then read back; band 2 (not this modem's) and GSM refused. */
	QmiMessage *req = request(QMI_SERVICE_NAS, nas, 0x0033);
	add_bytes(req, 0x15, "\x04\x00\x08\x00\x00\x00\x00\x00", 8);
	EXPECT_EQ(result_of(exchange(req)), 0);
	QmiMessage *resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0034));
	v = tlv(resp, 0x15, &len);
	EXPECT_TRUE(v && len == 8 && v[0] == 0x04 && v[2] == 0x08);
	EXPECT_EQ(tlv_u16(resp, 0x11), QMI_NAS_RAT_MODE_PREFERENCE_LTE);
	req = request(QMI_SERVICE_NAS, nas, 0x0033);
	add_bytes(req, 0x15, "\x02\x00\x00\x00\x00\x00\x00\x00", 8);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	req = request(QMI_SERVICE_NAS, nas, 0x0033);
	add_bytes(req, 0x11, "\x04\x00", 2); /* GSM */
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	req = request(QMI_SERVICE_NAS, nas, 0x0033);
	add_bytes(req, 0x11, "\x10", 1);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0034));
	v = tlv(resp, 0x15, &len);
	EXPECT_TRUE(v && len == 8 && v[0] == 0x04 && v[2] == 0x08); /* unchanged */

	/* Scan: three networks, the home one serving, all LTE. */
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0021));
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x10, &len);
	EXPECT_TRUE(v && len >= 2 && v[0] == 3 && v[1] == 0);
	if (v && len >= 2 + 6 + 12)
		EXPECT_MEM_EQ(v + 2, "\x01\x00\x01\x00\x05\x0cTest Network", 18);
	v = tlv(resp, 0x11, &len);
	EXPECT_TRUE(v && len == 2 + 3 * 5 && v[2 + 4] == QMI_NAS_RADIO_INTERFACE_LTE);

	/* Manual registration in 001/02, then in the barred 001/03, then automatic. */
	req = request(QMI_SERVICE_NAS, nas, 0x0022);
	add_u8(req, 0x01, QMI_NAS_NETWORK_REGISTER_TYPE_MANUAL);
	add_bytes(req, 0x10, "\x01\x00\x02\x00\xff", 5);
	EXPECT_EQ(result_of(exchange(req)), 0);
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0024));
	v = tlv(resp, 0x12, &len);
	EXPECT_TRUE(v && len > 4 && v[2] == 2);
	req = request(QMI_SERVICE_NAS, nas, 0x0022);
	add_u8(req, 0x01, QMI_NAS_NETWORK_REGISTER_TYPE_MANUAL);
	add_bytes(req, 0x10, "\x01\x00\x03\x00\xff", 5);
	EXPECT_EQ(result_of(exchange(req)), 0);
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0024));
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && v[0] == QMI_NAS_REGISTRATION_STATE_REGISTRATION_DENIED);
	req = request(QMI_SERVICE_NAS, nas, 0x0022);
	add_u8(req, 0x01, QMI_NAS_NETWORK_REGISTER_TYPE_MANUAL);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	EXPECT_EQ(result_of(exchange(request(QMI_SERVICE_NAS, nas, 0x0022))),
		  QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	req = request(QMI_SERVICE_NAS, nas, 0x0022);
	add_u8(req, 0x01, QMI_NAS_NETWORK_REGISTER_TYPE_AUTOMATIC);
	EXPECT_EQ(result_of(exchange(req)), 0);
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0024));
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && v[0] == QMI_NAS_REGISTRATION_STATE_REGISTERED);
	v = tlv(resp, 0x12, &len);
	EXPECT_TRUE(v && len > 4 && v[2] == 1);
	/* Network time: the 3GPP TLV, in the sim's zone, while registered. */
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x007D));
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x11, &len);
	EXPECT_TRUE(v && len == 11 && (int8_t)v[8] == SIM_QMI_TIME_ZONE_QUARTERS &&
		    v[10] == QMI_NAS_RADIO_INTERFACE_LTE);
	EXPECT_TRUE(v && len == 11 && v[2] >= 1 && v[2] <= 12 && (v[0] | v[1] << 8) >= 2024);
	/* Still strict: a NAS message it does not know. */
	EXPECT_EQ(simple(QMI_SERVICE_NAS, nas, 0x0099), QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
}

static QmiMessage *set_format(uint8_t cid, int32_t ul, int32_t dl, uint32_t dl_size,
			      uint32_t dl_dgrams, uint32_t ul_size, uint32_t ul_dgrams)
{
	QmiMessage *req = request(QMI_SERVICE_WDA, cid, WDA_SET_DATA_FORMAT);

	add_u8(req, 0x10, 0);
	add_u32(req, 0x11, QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP);
	if (ul >= 0)
		add_u32(req, 0x12, (uint32_t)ul);
	if (dl >= 0)
		add_u32(req, 0x13, (uint32_t)dl);
	if (dl_dgrams)
		add_u32(req, 0x15, dl_dgrams);
	if (dl_size)
		add_u32(req, 0x16, dl_size);
	add_bytes(req, 0x17, "\x02\x00\x00\x00\x04\x00\x00\x00", 8); /* HSUSB, interface 4 */
	if (ul_dgrams)
		add_u32(req, 0x1B, ul_dgrams);
	if (ul_size)
		add_u32(req, 0x1C, ul_size);
	return exchange(req);
}

TEST(wda)
{
	engine_new();
	uint8_t wda = allocate(QMI_SERVICE_WDA);

	/* Before any Set: the defaults, both protocol TLVs (ModemManager needs both). */
	QmiMessage *resp = exchange(request(QMI_SERVICE_WDA, wda, WDA_GET_DATA_FORMAT));
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u32(resp, 0x11), QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP);
	EXPECT_EQ(tlv_u32(resp, 0x12), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5);
	EXPECT_EQ(tlv_u32(resp, 0x13), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5);
	EXPECT_EQ(tlv_u32(resp, 0x15), 32);
	EXPECT_EQ(tlv_u32(resp, 0x16), 16384);

	/* Grant = min(requested, limit); UL values only when asked for. */
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5,
			  QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 32768, 16, 8192, 11);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u8(resp, 0x10), 0);
	EXPECT_EQ(tlv_u32(resp, 0x11), QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP);
	EXPECT_EQ(tlv_u32(resp, 0x12), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5);
	EXPECT_EQ(tlv_u32(resp, 0x13), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5);
	EXPECT_EQ(tlv_u32(resp, 0x15), 16);
	EXPECT_EQ(tlv_u32(resp, 0x16), 16384);
	EXPECT_EQ(tlv_u32(resp, 0x17), 11);
	EXPECT_EQ(tlv_u32(resp, 0x18), 8192);
	EXPECT_EQ(format_calls, 1);
	EXPECT_EQ(last_format.version, QMAP_V5);
	EXPECT_EQ(last_format.dl_max_size, 16384);
	EXPECT_EQ(last_format.dl_max_datagrams, 16);

	/* QMAPv1, smaller; no UL TLVs asked, none answered. */
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP, -1, 8192, 64, 0, 0);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u32(resp, 0x13), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	EXPECT_EQ(tlv_u32(resp, 0x15), 32);
	EXPECT_EQ(tlv_u32(resp, 0x16), 8192);
	EXPECT_EQ(tlv_u32(resp, 0x17), -1);
	EXPECT_EQ(tlv_u32(resp, 0x18), -1);
	EXPECT_EQ(last_format.version, QMAP_V1);
	resp = exchange(request(QMI_SERVICE_WDA, wda, WDA_GET_DATA_FORMAT));
	EXPECT_EQ(tlv_u32(resp, 0x12), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	EXPECT_EQ(tlv_u32(resp, 0x16), 8192);
	EXPECT_EQ(sim_qmi_get_data_format(q)->dl_max_size, 8192);

	/* Refusals leave the format alone and do not call the data side. */
	int calls = format_calls;
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP,
			  QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 0, 0, 0, 0);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV4,
			  QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV4, 0, 0, 0, 0);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_MBIM,
			  QMI_WDA_DATA_AGGREGATION_PROTOCOL_MBIM, 0, 0, 0, 0);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
	resp = set_format(wda, -1, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP, 1024, 0, 0, 0);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(format_calls, calls);
	EXPECT_EQ(sim_qmi_get_data_format(q)->version, QMAP_V1);

	/* The data side refusing turns the grant into an error. */
	format_ret = -EINVAL;
	resp = set_format(wda, -1, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 0, 0, 0, 0);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INTERNAL);
	EXPECT_EQ(sim_qmi_get_data_format(q)->version, QMAP_V1);
	EXPECT_EQ(sim_qmi_get_stats(q)->data_format_sets, 2);

	/* A modem without QMAPv5 refuses it and still grants QMAP. */
	opts.no_qmapv5 = true;
	engine_new();
	opts.no_qmapv5 = false;
	wda = allocate(QMI_SERVICE_WDA);
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5,
			  QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 16384, 32, 0, 0);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
	EXPECT_EQ(tlv_u32(resp, 0x13), -1);
	EXPECT_EQ(format_calls, 0);
	resp = set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP,
			  QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP, 16384, 32, 0, 0);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(last_format.version, QMAP_V1);

	/* The callback resetting the engine (socket gone): no reply, clients released. */
	format_reset = true;
	gsize len;
	QmiMessage *req = request(QMI_SERVICE_WDA, wda, WDA_SET_DATA_FORMAT);
	add_u32(req, 0x13, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	const guint8 *raw = qmi_message_get_raw(req, &len, NULL);
	sent_clear();
	EXPECT_EQ(sim_qmi_handle(q, raw, len), 0);
	qmi_message_unref(req);
	EXPECT_EQ(sent->len, 0);
	format_reset = false;
	EXPECT_EQ(simple(QMI_SERVICE_WDA, wda, WDA_GET_DATA_FORMAT),
		  QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);
}

static uint8_t wds_client(uint8_t mux, uint8_t family)
{
	uint8_t cid = allocate(QMI_SERVICE_WDS);

	if (mux) {
		QmiMessage *req = request(QMI_SERVICE_WDS, cid, WDS_BIND_MUX_DATA_PORT);
		add_bytes(req, 0x10, "\x02\x00\x00\x00\x04\x00\x00\x00", 8);
		add_u8(req, 0x11, mux);
		add_u32(req, 0x13, 1 /* tethered */);
		EXPECT_EQ(result_of(exchange(req)), 0);
	}
	if (family) {
		QmiMessage *req = request(QMI_SERVICE_WDS, cid, WDS_SET_IP_FAMILY);
		add_u8(req, 0x01, family);
		EXPECT_EQ(result_of(exchange(req)), 0);
	}
	return cid;
}

/* Start Network with optional APN / credentials; returns the response. */
static QmiMessage *start(uint8_t cid, const char *apn, const char *user, const char *password)
{
	QmiMessage *req = request(QMI_SERVICE_WDS, cid, WDS_START_NETWORK);

	if (apn)
		add_string(req, 0x14, apn);
	if (user || password)
		add_u8(req, 0x16, QMI_WDS_AUTHENTICATION_PAP | QMI_WDS_AUTHENTICATION_CHAP);
	if (user)
		add_string(req, 0x17, user);
	if (password)
		add_string(req, 0x18, password);
	return exchange(req);
}

static void expect_call_failed(QmiMessage *resp, uint16_t reason, int16_t verbose)
{
	guint16 len;
	const guint8 *v = tlv(resp, 0x11, &len);

	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_CALL_FAILED);
	EXPECT_EQ(tlv_u16(resp, 0x10), reason);
	EXPECT_TRUE(v && len == 4);
	if (v && len == 4) {
		EXPECT_EQ(v[0] | v[1] << 8, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP);
		EXPECT_EQ((int16_t)(v[2] | v[3] << 8), verbose);
	}
	EXPECT_EQ(tlv_u32(resp, 0x01), -1);
	EXPECT_EQ(sent->len, 1); /* no indication for a call that never came up */
}

/* Packet Service Status indication i of the last exchange. */
static void expect_status(unsigned i, uint8_t cid, uint8_t status, uint8_t family, int reason,
			  int vtype, int vreason)
{
	QmiMessage *ind = sent_at(i);
	EXPECT_TRUE(ind != NULL);
	if (!ind)
		return;
	EXPECT_TRUE(qmi_message_is_indication(ind));
	EXPECT_EQ(qmi_message_get_service(ind), QMI_SERVICE_WDS);
	EXPECT_EQ(qmi_message_get_client_id(ind), cid);
	EXPECT_EQ(qmi_message_get_message_id(ind), WDS_PACKET_SERVICE_STATUS);
	EXPECT_EQ(tlv_u16(ind, 0x01), status); /* {status, reconfiguration required = 0} */
	EXPECT_EQ(tlv_u8(ind, 0x12), family);
	EXPECT_EQ(tlv_u16(ind, 0x10), reason);
	guint16 len;
	const guint8 *v = tlv(ind, 0x11, &len);
	if (vtype < 0) {
		EXPECT_TRUE(v == NULL);
	} else {
		EXPECT_TRUE(v && len == 4);
		if (v && len == 4) {
			EXPECT_EQ(v[0] | v[1] << 8, vtype);
			EXPECT_EQ((int16_t)(v[2] | v[3] << 8), vreason);
		}
	}
}

TEST(session)
{
	engine_new();
	uint8_t c4 = wds_client(1, QMI_WDS_IP_FAMILY_IPV4);

	EXPECT_EQ(simple(QMI_SERVICE_WDS, c4, WDS_GET_CURRENT_SETTINGS),
		  QMI_PROTOCOL_ERROR_OUT_OF_CALL);
	EXPECT_TRUE(!sim_qmi_mux_connected(q, 1));

	QmiMessage *resp = start(c4, "internet", NULL, NULL);
	EXPECT_EQ(result_of(resp), 0);
	int64_t handle = tlv_u32(resp, 0x01);
	EXPECT_TRUE(handle > 0 && handle != 0xffffffff);
	EXPECT_EQ(sent->len, 2);
	expect_status(1, c4, QMI_WDS_CONNECTION_STATUS_CONNECTED, 4, -1, -1, 0);
	EXPECT_TRUE(sim_qmi_mux_connected(q, 1));
	EXPECT_TRUE(!sim_qmi_mux_connected(q, 2));

	/* Current settings: the --mux address with its prefix, gateway = first host. */
	QmiMessage *req = request(QMI_SERVICE_WDS, c4, WDS_GET_CURRENT_SETTINGS);
	add_u32(req, 0x10,
		QMI_WDS_REQUESTED_SETTINGS_DNS_ADDRESS | QMI_WDS_REQUESTED_SETTINGS_IP_ADDRESS |
			QMI_WDS_REQUESTED_SETTINGS_GATEWAY_INFO | QMI_WDS_REQUESTED_SETTINGS_MTU |
			QMI_WDS_REQUESTED_SETTINGS_IP_FAMILY);
	resp = exchange(req);
	EXPECT_EQ(result_of(resp), 0);
	guint16 len;
	const guint8 *v = tlv(resp, 0x1E, &len);
	/* le32 with the first octet most significant: 192.0.2.2 -> 02 02 00 c0. */
	EXPECT_TRUE(v && len == 4);
	if (v && len == 4)
		EXPECT_MEM_EQ(v, "\x02\x02\x00\xc0", 4);
	EXPECT_EQ(tlv_u32(resp, 0x1E), 0xc0000202);
	EXPECT_EQ(tlv_u32(resp, 0x20), 0xc0000201);
	EXPECT_EQ(tlv_u32(resp, 0x21), 0xffffff00);
	EXPECT_EQ(tlv_u32(resp, 0x15), 0xc6336435); /* 198.51.100.53 */
	EXPECT_EQ(tlv_u32(resp, 0x16), 0xc6336436);
	EXPECT_EQ(tlv_u32(resp, 0x29), 1500);
	EXPECT_EQ(tlv_u8(resp, 0x2B), 4);
	EXPECT_TRUE(tlv(resp, 0x25, &len) == NULL);
	EXPECT_TRUE(tlv(resp, 0x14, &len) == NULL); /* APN not asked for */

	resp = exchange(request(QMI_SERVICE_WDS, c4, WDS_PACKET_SERVICE_STATUS));
	EXPECT_EQ(tlv_u8(resp, 0x01), QMI_WDS_CONNECTION_STATUS_CONNECTED);
	EXPECT_EQ(result_of(start(c4, "internet", NULL, NULL)), QMI_PROTOCOL_ERROR_NO_EFFECT);

	/* IPv6 on the same mux, empty APN = the default one. */
	uint8_t c6 = wds_client(1, QMI_WDS_IP_FAMILY_IPV6);
	resp = start(c6, "", NULL, NULL);
	EXPECT_EQ(result_of(resp), 0);
	expect_status(1, c6, QMI_WDS_CONNECTION_STATUS_CONNECTED, 6, -1, -1, 0);
	req = request(QMI_SERVICE_WDS, c6, WDS_GET_CURRENT_SETTINGS);
	add_u32(req, 0x10, 0xffffffff);
	resp = exchange(req);
	struct in6_addr a6, gw6, dns6;
	inet_pton(AF_INET6, "2001:db8:1::2", &a6);
	inet_pton(AF_INET6, "2001:db8:1::1", &gw6);
	inet_pton(AF_INET6, "2001:db8:ff::53", &dns6);
	v = tlv(resp, 0x25, &len);
	EXPECT_TRUE(v && len == 17);
	if (v && len == 17) {
		EXPECT_MEM_EQ(v, a6.s6_addr, 16);
		EXPECT_EQ(v[16], 64);
	}
	v = tlv(resp, 0x26, &len);
	EXPECT_TRUE(v && len == 17);
	if (v && len == 17) {
		EXPECT_MEM_EQ(v, gw6.s6_addr, 16);
		EXPECT_EQ(v[16], 64);
	}
	v = tlv(resp, 0x27, &len);
	EXPECT_TRUE(v && len == 16);
	if (v && len == 16)
		EXPECT_MEM_EQ(v, dns6.s6_addr, 16);
	EXPECT_TRUE(tlv(resp, 0x28, &len) != NULL);
	EXPECT_EQ(tlv_u8(resp, 0x2B), 6);
	EXPECT_TRUE(tlv_string_is(resp, 0x14, "internet"));
	EXPECT_TRUE(tlv(resp, 0x1E, &len) == NULL);

	/* Stop: wrong handle refused; the right one answers, then DISCONNECTED. */
	req = request(QMI_SERVICE_WDS, c4, WDS_STOP_NETWORK);
	add_u32(req, 0x01, (uint32_t)handle + 1000);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_HANDLE);
	EXPECT_EQ(simple(QMI_SERVICE_WDS, c4, WDS_STOP_NETWORK),
		  QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	req = request(QMI_SERVICE_WDS, c4, WDS_STOP_NETWORK);
	add_u32(req, 0x01, (uint32_t)handle);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_EQ(sent->len, 2);
	expect_status(1, c4, QMI_WDS_CONNECTION_STATUS_DISCONNECTED, 4,
		      QMI_WDS_CALL_END_REASON_GENERIC_CLIENT_END,
		      QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_CM,
		      QMI_WDS_VERBOSE_CALL_END_REASON_CM_CLIENT_END);
	resp = exchange(request(QMI_SERVICE_WDS, c4, WDS_PACKET_SERVICE_STATUS));
	EXPECT_EQ(tlv_u8(resp, 0x01), QMI_WDS_CONNECTION_STATUS_DISCONNECTED);
	/* The IPv6 session keeps the mux open. */
	EXPECT_TRUE(sim_qmi_mux_connected(q, 1));
	/* "Stop whatever is there" on an idle client is fine. */
	req = request(QMI_SERVICE_WDS, c4, WDS_STOP_NETWORK);
	add_u32(req, 0x01, 0xffffffff);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_EQ(sent->len, 1);

	/* A network-initiated drop tells the owning client why. */
	EXPECT_EQ(result_of(start(c4, "INTERNET", NULL, NULL)), 0);
	sent_clear();
	EXPECT_EQ(sim_qmi_drop_all(q), 2);
	EXPECT_EQ(sent->len, 2);
	for (unsigned i = 0; i < 2 && i < sent->len; i++) {
		uint8_t cid = qmi_message_get_client_id(sent_at(i));
		EXPECT_TRUE(cid == c4 || cid == c6);
		expect_status(i, cid, QMI_WDS_CONNECTION_STATUS_DISCONNECTED, cid == c4 ? 4 : 6,
			      QMI_WDS_CALL_END_REASON_GSM_WCDMA_REGULAR_DEACTIVATION,
			      QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP,
			      QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_REGULAR_DEACTIVATION);
	}
	EXPECT_TRUE(!sim_qmi_mux_connected(q, 1));
	EXPECT_EQ(sim_qmi_drop_all(q), 0);

	/* Releasing the owning client ends its session without an indication. */
	EXPECT_EQ(result_of(start(c6, NULL, NULL, NULL)), 0);
	EXPECT_TRUE(sim_qmi_mux_connected(q, 1));
	req = request(QMI_SERVICE_CTL, 0, CTL_RELEASE_CID);
	add_bytes(req, 0x01, (uint8_t[]){ QMI_SERVICE_WDS, c6 }, 2);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_EQ(sent->len, 1);
	EXPECT_TRUE(!sim_qmi_mux_connected(q, 1));

	/* A new connection (sim_qmi_reset) ends everything, silently. */
	EXPECT_EQ(result_of(start(c4, NULL, NULL, NULL)), 0);
	sent_clear();
	sim_qmi_reset(q);
	EXPECT_EQ(sent->len, 0);
	EXPECT_TRUE(!sim_qmi_mux_connected(q, 1));
	EXPECT_EQ(simple(QMI_SERVICE_WDS, c4, WDS_PACKET_SERVICE_STATUS),
		  QMI_PROTOCOL_ERROR_INVALID_CLIENT_ID);

	const struct sim_qmi_stats *st = sim_qmi_get_stats(q);
	EXPECT_EQ(st->qmi_sessions_started, 5);
	EXPECT_EQ(st->qmi_sessions_dropped, 2);
	EXPECT_EQ(st->qmi_sessions_failed, 0);
	EXPECT_EQ(st->qmi_indications, 8);
}

static const struct sim_profile *profile(const char *name)
{
	for (const struct sim_profile *p = sim_profiles; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	EXPECT_TRUE(!"profile in the table");
	return &sim_profiles[0];
}

/* The engine with a profile's QMI behaviour, as qmapd-sim builds it from --profile. */
static void engine_profile(const char *name)
{
	const struct sim_profile *p = profile(name);

	base_options();
	opts.quirks = p->quirks;
	opts.no_qmapv5 = p->no_qmapv5;
	opts.limits.dl_max_size = p->dl_max_size;
	opts.limits.dl_max_datagrams = p->dl_max_datagrams;
	opts.limits.ul_max_size = p->ul_max_size;
	opts.limits.ul_max_datagrams = p->ul_max_datagrams;
	opts.dl_min_size = 1628 < p->dl_max_size ? 1628 : p->dl_max_size;
	engine_new();
}

/* WDA Set/Get and Bind with an explicit Endpoint Info (iface < 0: none). */
static QmiMessage *set_format_ep(uint8_t cid, uint32_t proto, int iface)
{
	QmiMessage *req = request(QMI_SERVICE_WDA, cid, WDA_SET_DATA_FORMAT);
	add_u32(req, 0x11, QMI_WDA_LINK_LAYER_PROTOCOL_RAW_IP);
	add_u32(req, 0x12, proto);
	add_u32(req, 0x13, proto);
	add_u32(req, 0x15, 32);
	add_u32(req, 0x16, 31744);
	add_u32(req, 0x1B, 11);
	add_u32(req, 0x1C, 4096);
	if (iface >= 0) {
		uint8_t ep[8] = { 2, 0, 0, 0, (uint8_t)iface, 0, 0, 0 };
		add_bytes(req, 0x17, ep, sizeof(ep));
	}
	return exchange(req);
}

static int get_format_ep(uint8_t cid, int iface)
{
	QmiMessage *req = request(QMI_SERVICE_WDA, cid, WDA_GET_DATA_FORMAT);
	if (iface >= 0) {
		uint8_t ep[8] = { 2, 0, 0, 0, (uint8_t)iface, 0, 0, 0 };
		add_bytes(req, 0x10, ep, sizeof(ep));
	}
	return result_of(exchange(req));
}

static int bind_ep(uint8_t cid, uint8_t mux, int iface)
{
	QmiMessage *req = request(QMI_SERVICE_WDS, cid, WDS_BIND_MUX_DATA_PORT);
	if (iface >= 0) {
		uint8_t ep[8] = { 2, 0, 0, 0, (uint8_t)iface, 0, 0, 0 };
		add_bytes(req, 0x10, ep, sizeof(ep));
	}
	add_u8(req, 0x11, mux);
	add_u32(req, 0x13, 1 /* tethered */);
	return result_of(exchange(req));
}

/* TLV types of a message in the order they travel. */
static unsigned tlv_order(QmiMessage *m, uint8_t *types, unsigned max)
{
	gsize len = 0;
	const guint8 *raw = qmi_message_get_raw(m, &len, NULL);
	size_t p = 1 + 5 + (raw[4] == 0 ? 6 : 7);
	unsigned n = 0;

	while (p + 3 <= len && n < max) {
		types[n++] = raw[p];
		p += 3 + (size_t)(raw[p + 1] | raw[p + 2] << 8);
	}
	return n;
}

TEST(profiles)
{
	/* Every answer: TLVs out of ascending order, an unknown one among them. */
	engine_profile("default");
	uint8_t wda = allocate(QMI_SERVICE_WDA);
	QmiMessage *resp = exchange(request(QMI_SERVICE_WDA, wda, WDA_GET_DATA_FORMAT));
	uint8_t types[32];
	unsigned n = tlv_order(resp, types, 32);
	bool descending = false, unknown = false;
	for (unsigned i = 0; i < n; i++) {
		descending |= i > 0 && types[i] < types[i - 1];
		unknown |= types[i] == 0xE1;
	}
	EXPECT_TRUE(n > 3);
	EXPECT_TRUE(descending);
	EXPECT_TRUE(unknown);
	EXPECT_EQ(result_of(resp), 0);

	/* strict: today's requests (no Endpoint Info, interface 0) are refused, the right
	 * interface is accepted. */
	engine_profile("strict");
	wda = allocate(QMI_SERVICE_WDA);
	EXPECT_EQ(result_of(set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, -1)),
		  QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	EXPECT_EQ(result_of(set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 0)),
		  QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(format_calls, 0);
	EXPECT_EQ(result_of(set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 4)), 0);
	EXPECT_EQ(get_format_ep(wda, -1), QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	EXPECT_EQ(get_format_ep(wda, 4), 0);
	uint8_t wds = allocate(QMI_SERVICE_WDS);
	EXPECT_EQ(bind_ep(wds, 1, -1), QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
	EXPECT_EQ(bind_ep(wds, 1, 0), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(bind_ep(wds, 1, 4), 0);
	EXPECT_EQ(sim_qmi_get_stats(q)->bind_interface, 4);
	EXPECT_EQ(sim_qmi_get_stats(q)->endpoint_missing, 3);
	EXPECT_EQ(sim_qmi_get_stats(q)->endpoint_wrong, 2);

	/* The default profile takes a request without Endpoint Info, but not a wrong one. */
	engine_profile("default");
	wds = allocate(QMI_SERVICE_WDS);
	EXPECT_EQ(bind_ep(wds, 1, -1), 0);
	EXPECT_EQ(bind_ep(wds, 1, 0), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);

	/* mdm9x07: v1 only, 4096 / 10 whatever was asked, UL datagrams as asked. */
	engine_profile("mdm9x07");
	wda = allocate(QMI_SERVICE_WDA);
	EXPECT_EQ(result_of(set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 4)),
		  QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
	EXPECT_EQ(result_of(set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV4, 4)),
		  QMI_PROTOCOL_ERROR_INVALID_DATA_FORMAT);
	resp = set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP, 4);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u32(resp, 0x13), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	EXPECT_EQ(tlv_u32(resp, 0x16), 4096);
	EXPECT_EQ(tlv_u32(resp, 0x15), 10);
	EXPECT_EQ(tlv_u32(resp, 0x17), 11);
	EXPECT_EQ(tlv_u32(resp, 0x18), 4096);
	EXPECT_EQ(tlv_u32(resp, 0x1A), -1);

	/* mdm9x07-pad16: the padding is granted and handed to the data side. */
	engine_profile("mdm9x07-pad16");
	wda = allocate(QMI_SERVICE_WDA);
	resp = set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP, 4);
	EXPECT_EQ(tlv_u32(resp, 0x1A), 16);
	EXPECT_EQ(last_format.dl_min_padding, 16);

	/* A success naming another protocol than asked. */
	engine_profile("default");
	opts.quirks.v5_granted_as_v1 = true;
	engine_new();
	wda = allocate(QMI_SERVICE_WDA);
	resp = set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 4);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u32(resp, 0x13), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	EXPECT_EQ(last_format.version, QMAP_V1);

	/* sdx55: UL datagrams and size granted above the request (11 -> 16, 4096 -> 8192). */
	engine_profile("sdx55");
	wda = allocate(QMI_SERVICE_WDA);
	resp = set_format_ep(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 4);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u32(resp, 0x13), QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5);
	EXPECT_EQ(tlv_u32(resp, 0x16), 16384);
	EXPECT_EQ(tlv_u32(resp, 0x17), 16);
	EXPECT_EQ(tlv_u32(resp, 0x18), 8192);

	/* telit: data interface 2, mux ids 112 and 113 only. */
	engine_profile("telit");
	wds = allocate(QMI_SERVICE_WDS);
	EXPECT_EQ(bind_ep(wds, 112, 4), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(bind_ep(wds, 1, 2), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(bind_ep(wds, 112, 2), 0);
	EXPECT_EQ(bind_ep(wds, 113, 2), 0);

	/* Every profile: Start Network on a connected client is NO_EFFECT with handle 0;
	 * Get Packet Statistics out of a call is OUT_OF_CALL with its counters; what is not
	 * implemented is INVALID_QMI_COMMAND. */
	engine_profile("sdx62");
	uint8_t c4 = allocate(QMI_SERVICE_WDS);
	EXPECT_EQ(bind_ep(c4, 1, 4), 0);
	resp = exchange(request(QMI_SERVICE_WDS, c4, 0x0024));
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_OUT_OF_CALL);
	guint16 len;
	EXPECT_TRUE(tlv(resp, 0x19, &len) && len == 8);
	EXPECT_TRUE(tlv(resp, 0x1A, &len) && len == 8);
	EXPECT_EQ(result_of(start(c4, "internet", NULL, NULL)), 0);
	resp = start(c4, "internet", NULL, NULL);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_NO_EFFECT);
	EXPECT_EQ(tlv_u32(resp, 0x01), 0);
	EXPECT_EQ(simple(QMI_SERVICE_WDS, c4, 0x0044), QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);

	/* A second PDN on the same APN refused with 3GPP 55, a third APN use on the same mux
	 * (the other family) is the same PDN and goes through. */
	engine_profile("default");
	opts.quirks.max_pdn_per_apn = 1;
	engine_new();
	c4 = wds_client(1, QMI_WDS_IP_FAMILY_IPV4);
	EXPECT_EQ(result_of(start(c4, "internet", NULL, NULL)), 0);
	uint8_t c6 = wds_client(1, QMI_WDS_IP_FAMILY_IPV6);
	EXPECT_EQ(result_of(start(c6, "internet", NULL, NULL)), 0);
	uint8_t other = wds_client(2, QMI_WDS_IP_FAMILY_IPV4);
	resp = start(other, "internet", NULL, NULL);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_CALL_FAILED);
	const guint8 *v = tlv(resp, 0x11, &len);
	EXPECT_TRUE(v && len == 4);
	if (v && len == 4) {
		EXPECT_EQ(v[0] | v[1] << 8, QMI_WDS_VERBOSE_CALL_END_REASON_TYPE_3GPP);
		EXPECT_EQ(
			v[2] | v[3] << 8,
			QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_MULTIPLE_CONNECTION_TO_SAME_PDN_NOT_ALLOWED);
	}
	EXPECT_TRUE(!sim_qmi_mux_connected(q, 2));

	/* silent: a modem in the wrong USB configuration answers nothing, not even CTL. */
	opts.quirks.max_pdn_per_apn = 0;
	opts.quirks.silent = true;
	engine_new();
	QmiMessage *req = request(QMI_SERVICE_CTL, 0, CTL_GET_VERSION_INFO);
	gsize rlen;
	const guint8 *raw = qmi_message_get_raw(req, &rlen, NULL);
	sent_clear();
	EXPECT_EQ(sim_qmi_handle(q, raw, rlen), 0);
	EXPECT_EQ(sent->len, 0);
	EXPECT_EQ(sim_qmi_get_stats(q)->qmi_silenced, 1);
	qmi_message_unref(req);
	base_options();
}

TEST(session_failures)
{
	engine_new();
	uint8_t c = wds_client(1, 0);

	expect_call_failed(start(c, "nope", NULL, NULL),
			   QMI_WDS_CALL_END_REASON_GSM_WCDMA_UNKNOWN_APN,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_UNKNOWN_APN);
	expect_call_failed(start(c, "secure", NULL, NULL),
			   QMI_WDS_CALL_END_REASON_GENERIC_AUTHENTICATION_FAILED,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);
	expect_call_failed(start(c, "secure", "alice", "wrong"),
			   QMI_WDS_CALL_END_REASON_GENERIC_AUTHENTICATION_FAILED,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);
	expect_call_failed(start(c, "secure", "alice", "s3cre"),
			   QMI_WDS_CALL_END_REASON_GENERIC_AUTHENTICATION_FAILED,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);
	/* Credentials with "no authentication" do not authenticate. */
	QmiMessage *req = request(QMI_SERVICE_WDS, c, WDS_START_NETWORK);
	add_string(req, 0x14, "secure");
	add_u8(req, 0x16, QMI_WDS_AUTHENTICATION_NONE);
	add_string(req, 0x17, "alice");
	add_string(req, 0x18, "s3cret");
	expect_call_failed(exchange(req), QMI_WDS_CALL_END_REASON_GENERIC_AUTHENTICATION_FAILED,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);
	/* Profile 2 is the second APN, which wants credentials; profile 9 does not exist. */
	req = request(QMI_SERVICE_WDS, c, WDS_START_NETWORK);
	add_u8(req, 0x31, 2);
	expect_call_failed(exchange(req), QMI_WDS_CALL_END_REASON_GENERIC_AUTHENTICATION_FAILED,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_AUTHENTICATION_FAILED);
	req = request(QMI_SERVICE_WDS, c, WDS_START_NETWORK);
	add_u8(req, 0x31, 9);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_PROFILE);

	/* Unbound client, mux without a --mux entry, mux without that family. */
	uint8_t unbound = wds_client(0, 0);
	expect_call_failed(start(unbound, NULL, NULL, NULL),
			   QMI_WDS_CALL_END_REASON_GSM_WCDMA_INSUFFICIENT_RESOURCES,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_INSUFFICIENT_RESOURCES);
	uint8_t nomux = wds_client(7, 0);
	expect_call_failed(start(nomux, NULL, NULL, NULL),
			   QMI_WDS_CALL_END_REASON_GSM_WCDMA_INSUFFICIENT_RESOURCES,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_INSUFFICIENT_RESOURCES);
	uint8_t v6only = wds_client(2, QMI_WDS_IP_FAMILY_IPV6);
	expect_call_failed(start(v6only, NULL, NULL, NULL),
			   QMI_WDS_CALL_END_REASON_GENERIC_UNSPECIFIED,
			   QMI_WDS_VERBOSE_CALL_END_REASON_3GPP_IPV4_ONLY_ALLOWED);

	/* Bad arguments. */
	req = request(QMI_SERVICE_WDS, c, WDS_SET_IP_FAMILY);
	add_u8(req, 0x01, 5);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_IP_FAMILY_PREFERENCE);
	req = request(QMI_SERVICE_WDS, c, WDS_BIND_MUX_DATA_PORT);
	add_u8(req, 0x11, 255);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	req = request(QMI_SERVICE_WDS, c, WDS_BIND_MUX_DATA_PORT);
	add_u32(req, 0x11, 1);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
	EXPECT_EQ(simple(QMI_SERVICE_WDS, c, WDS_BIND_MUX_DATA_PORT),
		  QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);

	/* The right credentials, and the family picked in Start Network itself. */
	req = request(QMI_SERVICE_WDS, c, WDS_START_NETWORK);
	add_string(req, 0x14, "Secure");
	add_string(req, 0x17, "alice");
	add_string(req, 0x18, "s3cret");
	add_u8(req, 0x19, QMI_WDS_IP_FAMILY_IPV6);
	QmiMessage *resp = exchange(req);
	EXPECT_EQ(result_of(resp), 0);
	expect_status(1, c, QMI_WDS_CONNECTION_STATUS_CONNECTED, 6, -1, -1, 0);
	/* No rebinding under a live session. */
	req = request(QMI_SERVICE_WDS, c, WDS_BIND_MUX_DATA_PORT);
	add_u8(req, 0x11, 2);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_OPERATION);

	const struct sim_qmi_stats *st = sim_qmi_get_stats(q);
	EXPECT_EQ(st->qmi_sessions_failed, 9);
	EXPECT_EQ(st->qmi_sessions_started, 1);
}

/* DMS Set Operating Mode: low power deregisters and ends the sessions, online registers
 * again (no --register-delay: at once); only those two modes are taken. */
TEST(operating_mode)
{
	engine_new();
	uint8_t dms = allocate(QMI_SERVICE_DMS), nas = allocate(QMI_SERVICE_NAS);
	uint8_t c = wds_client(1, 0);

	EXPECT_EQ(sim_qmi_muxes_connected(q), 0);
	EXPECT_EQ(result_of(start(c, NULL, NULL, NULL)), 0);
	EXPECT_EQ(sim_qmi_muxes_connected(q), 1);
	QmiMessage *req = request(QMI_SERVICE_DMS, dms, 0x002E);
	add_u8(req, 0x01, QMI_DMS_OPERATING_MODE_LOW_POWER);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_EQ(sim_qmi_muxes_connected(q), 0);
	EXPECT_EQ(sim_qmi_get_stats(q)->qmi_sessions_dropped, 1);
	EXPECT_EQ(sim_qmi_get_stats(q)->low_power, 1);
	EXPECT_EQ(tlv_u8(exchange(request(QMI_SERVICE_DMS, dms, 0x002D)), 0x01),
		  QMI_DMS_OPERATING_MODE_LOW_POWER);
	guint16 len;
	const guint8 *v = tlv(exchange(request(QMI_SERVICE_NAS, nas, 0x0024)), 0x01, &len);
	EXPECT_TRUE(v && len >= 1 && v[0] == QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED);
	QmiMessage *resp = start(c, NULL, NULL, NULL);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_CALL_FAILED);
	EXPECT_EQ(tlv_u16(resp, 0x10), QMI_WDS_CALL_END_REASON_GENERIC_NO_SERVICE);

	/* Offline, reset and the rest are not for a host to ask here. */
	req = request(QMI_SERVICE_DMS, dms, 0x002E);
	add_u8(req, 0x01, QMI_DMS_OPERATING_MODE_OFFLINE);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x002E), QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);

	req = request(QMI_SERVICE_DMS, dms, 0x002E);
	add_u8(req, 0x01, QMI_DMS_OPERATING_MODE_ONLINE);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_EQ(sim_qmi_get_stats(q)->low_power, 0);
	EXPECT_EQ(tlv_u8(exchange(request(QMI_SERVICE_DMS, dms, 0x002D)), 0x01),
		  QMI_DMS_OPERATING_MODE_ONLINE);
	v = tlv(exchange(request(QMI_SERVICE_NAS, nas, 0x0024)), 0x01, &len);
	EXPECT_TRUE(v && len >= 1 && v[0] == QMI_NAS_REGISTRATION_STATE_REGISTERED);
	EXPECT_EQ(result_of(start(c, NULL, NULL, NULL)), 0);
}

/* Each of these is not one well-formed host request: counted, never answered. */
TEST(malformed)
{
	engine_new();
	uint8_t dms = allocate(QMI_SERVICE_DMS);
	/* A valid DMS Get IDs on client dms, as a template. */
	uint8_t good[] = { 0x01, 0x0c, 0x00, 0x00, QMI_SERVICE_DMS, dms, 0x00, 0x07, 0x00,
			   0x25, 0x00, 0x00, 0x00 };
	static const uint8_t ctl_good[] = { 0x01, 0x0b, 0x00, 0x00, 0x00, 0x00,
					    0x00, 0x05, 0x21, 0x00, 0x00, 0x00 };
	uint8_t buf[64];
	uint64_t before = sim_qmi_get_stats(q)->qmi_malformed;
	unsigned cases = 0;

#define MALFORMED(data, n)                                           \
	do {                                                         \
		sent_clear();                                        \
		EXPECT_EQ(sim_qmi_handle(q, (data), (n)), -EBADMSG); \
		EXPECT_EQ(sent->len, 0);                             \
		cases++;                                             \
	} while (0)

	sent_clear();
	EXPECT_EQ(sim_qmi_handle(q, good, sizeof(good)), 0);
	EXPECT_EQ(sent->len, 1);
	sent_clear();
	EXPECT_EQ(sim_qmi_handle(q, ctl_good, sizeof(ctl_good)), 0);
	EXPECT_EQ(sent->len, 1);

	MALFORMED(good, 0);
	MALFORMED(good, 1);
	MALFORMED(good, 5);
	MALFORMED(good, sizeof(good) - 1); /* shorter than its length field */
	memcpy(buf, good, sizeof(good));
	buf[sizeof(good)] = 0;
	MALFORMED(buf, sizeof(good) + 1); /* trailing byte */
	memcpy(buf, good, sizeof(good));
	buf[0] = 0x02; /* marker */
	MALFORMED(buf, sizeof(good));
	memcpy(buf, good, sizeof(good));
	buf[3] = 0x80; /* sender flag of the modem */
	MALFORMED(buf, sizeof(good));
	memcpy(buf, good, sizeof(good));
	buf[6] = 0x02; /* a response */
	MALFORMED(buf, sizeof(good));
	memcpy(buf, good, sizeof(good));
	buf[6] = 0x04; /* an indication */
	MALFORMED(buf, sizeof(good));
	memcpy(buf, good, sizeof(good));
	buf[11] = 1; /* TLV length says 1, nothing follows */
	MALFORMED(buf, sizeof(good));
	/* A TLV whose value runs past the end. */
	static const uint8_t tlv_over[] = { 0x01, 0x10, 0x00, 0x00, QMI_SERVICE_DMS,
					    1,	  0x00, 0x08, 0x00, 0x25,
					    0x00, 0x04, 0x00, 0x10, 0x05,
					    0x00, 0xaa };
	MALFORMED(tlv_over, sizeof(tlv_over));
	/* Two bytes of TLV: less than a TLV header. */
	static const uint8_t tlv_short[] = { 0x01, 0x0e, 0x00, 0x00, QMI_SERVICE_DMS,
					     1,	   0x00, 0x09, 0x00, 0x25,
					     0x00, 0x02, 0x00, 0x10, 0x00 };
	MALFORMED(tlv_short, sizeof(tlv_short));
	/* CTL header cut short. */
	MALFORMED(ctl_good, 9);
	uint8_t ctl_cut[9];
	memcpy(ctl_cut, ctl_good, sizeof(ctl_cut));
	ctl_cut[1] = 8;
	MALFORMED(ctl_cut, sizeof(ctl_cut));

	EXPECT_EQ(sim_qmi_get_stats(q)->qmi_malformed, before + cases);
#undef MALFORMED
}

TEST(parsers)
{
	struct sim_qmi_apn apn;
	char err[256];
	static struct sim_options so;

	EXPECT_EQ(sim_qmi_parse_apn("internet", &apn, err, sizeof(err)), 0);
	EXPECT_STR_EQ(apn.name, "internet");
	EXPECT_TRUE(!apn.auth);
	EXPECT_EQ(sim_qmi_parse_apn("corp:bob:pa:ss", &apn, err, sizeof(err)), 0);
	EXPECT_STR_EQ(apn.name, "corp");
	EXPECT_STR_EQ(apn.user, "bob");
	EXPECT_STR_EQ(apn.password, "pa:ss");
	EXPECT_TRUE(apn.auth);
	EXPECT_EQ(sim_qmi_parse_apn("corp::", &apn, err, sizeof(err)), 0);
	EXPECT_TRUE(apn.auth && apn.user[0] == '\0' && apn.password[0] == '\0');
	EXPECT_EQ(sim_qmi_parse_apn("", &apn, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_qmi_parse_apn(":u:p", &apn, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_qmi_parse_apn("corp:bob", &apn, err, sizeof(err)), -EINVAL);
	EXPECT_TRUE(strstr(err, "'corp:bob'"));
	EXPECT_STR_EQ(apn.name, "corp"); /* untouched on failure */

	sim_options_init(&so);
	EXPECT_EQ(so.session_mtu, 1500);
	EXPECT_TRUE(!so.always_connected);
	EXPECT_EQ(sim_options_add_apn(&so, "internet", err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_add_apn(&so, "Internet:a:b", err, sizeof(err)), -EEXIST);
	EXPECT_EQ(so.n_apn, 1);

	/* --mux: routes are networks, the session address keeps its host bits. */
	EXPECT_EQ(sim_options_add_mux(&so, "1=192.0.2.2/24,2001:db8:1::2/64,198.51.100.0/24", err,
				      sizeof(err)),
		  0);
	EXPECT_EQ(ntohl(so.mux[1].prefix[0].addr.v4.s_addr), 0xc0000200);
	EXPECT_EQ(so.mux[1].prefix[1].addr.v6.s6_addr[15], 0);
	EXPECT_EQ(so.mux[1].host4.family, AF_INET);
	EXPECT_EQ(ntohl(so.mux[1].host4.addr.v4.s_addr), 0xc0000202);
	EXPECT_EQ(so.mux[1].host4.prefixlen, 24);
	EXPECT_EQ(so.mux[1].host6.family, AF_INET6);
	EXPECT_EQ(so.mux[1].host6.addr.v6.s6_addr[15], 2);
	EXPECT_EQ(so.mux[1].host6.prefixlen, 64);
	EXPECT_EQ(sim_options_add_mux(&so, "2=2001:db8:2::5/64", err, sizeof(err)), 0);
	EXPECT_EQ(so.mux[2].host4.family, 0);
	EXPECT_EQ(so.mux[2].host6.family, AF_INET6);
}

/* ---- the wiring into qmapd-sim (root) ---- */

#define HDR sizeof(struct transport_sim_header)

static struct ev_loop *loop;
static char sock_path[108];
static struct sim_options sim_opts; /* large: not on the stack */

struct sock_msg {
	int fd;
	uint8_t ep; /* wanted endpoint; others are skipped */
	uint8_t buf[HDR + TRANSPORT_MAX_TRANSFER];
	ssize_t len;
};

static bool sock_msg_arrived(void *data)
{
	struct sock_msg *m = data;

	for (;;) {
		m->len = recv(m->fd, m->buf, sizeof(m->buf), MSG_DONTWAIT);
		if (m->len < (ssize_t)HDR)
			return false;
		if (m->buf[0] == m->ep)
			return true;
	}
}

/* The next message on this endpoint from the sim, or NULL after 3 s. */
static struct sock_msg *sock_recv(int fd, uint8_t ep)
{
	static struct sock_msg m;

	m.fd = fd;
	m.ep = ep;
	return test_run_until(loop, sock_msg_arrived, &m) ? &m : NULL;
}

static bool sock_send(int fd, uint8_t ep, const void *data, size_t len)
{
	static uint8_t buf[HDR + TRANSPORT_MAX_TRANSFER];

	*(struct transport_sim_header *)buf = (struct transport_sim_header){ .ep = ep };
	memcpy(buf + HDR, data, len);
	return send(fd, buf, HDR + len, 0) == (ssize_t)(HDR + len);
}

/* A request over the socket; its response (and nothing else) parsed, or NULL. */
static QmiMessage *sock_exchange(int fd, QmiMessage *req)
{
	gsize len;
	const guint8 *raw = qmi_message_get_raw(req, &len, NULL);

	EXPECT_TRUE(sock_send(fd, TRANSPORT_EP_CONTROL, raw, len));
	qmi_message_unref(req);
	struct sock_msg *m = sock_recv(fd, TRANSPORT_EP_CONTROL);
	EXPECT_TRUE(m != NULL);
	if (!m)
		return NULL;
	g_autoptr(GByteArray) b = g_byte_array_new();
	g_byte_array_append(b, m->buf + HDR, (guint)(m->len - HDR));
	QmiMessage *resp = qmi_message_new_from_raw(b, NULL);
	EXPECT_TRUE(resp != NULL);
	if (resp)
		g_ptr_array_add(sent, resp); /* freed with the others */
	return resp;
}

static uint16_t csum16(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* IPv4/UDP 192.0.2.2:4000 -> 198.51.100.1:5000 (no UDP checksum); returns its length. */
static size_t udp4_packet(uint8_t *p, const char *payload)
{
	size_t plen = strlen(payload), len = 28 + plen;

	memset(p, 0, 28);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 17;
	memcpy(p + 12, "\xc0\x00\x02\x02", 4);
	memcpy(p + 16, "\xc6\x33\x64\x01", 4);
	uint16_t c = csum16(p, 20);
	p[10] = (uint8_t)(c >> 8);
	p[11] = (uint8_t)c;
	p[20] = 4000 >> 8;
	p[21] = 4000 & 0xff;
	p[22] = 5000 >> 8;
	p[23] = 5000 & 0xff;
	p[24] = (uint8_t)((len - 20) >> 8);
	p[25] = (uint8_t)(len - 20);
	memcpy(p + 28, payload, plen);
	return len;
}

static bool send_uplink(int fd, enum qmap_version v, const char *payload)
{
	uint8_t buf[256], pkt[128];
	size_t n = udp4_packet(pkt, payload);
	int h = qmap_write_data_header(buf, v, 1, n, 0, false);

	memcpy(buf + h, pkt, n);
	return sock_send(fd, TRANSPORT_EP_BULK_OUT, buf, (size_t)h + n);
}

static int udp_server(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(5000) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	inet_pton(AF_INET, "198.51.100.1", &sa.sin_addr);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "bind 198.51.100.1:5000: %m\n");
		close(fd);
		return -1;
	}
	return fd;
}

struct udp_wait {
	int fd;
	char buf[64];
	ssize_t len;
};

static bool udp_arrived(void *data)
{
	struct udp_wait *w = data;
	w->len = recv(w->fd, w->buf, sizeof(w->buf), MSG_DONTWAIT);
	return w->len >= 0;
}

static bool sim_connected(void *data)
{
	return sim_is_connected(data);
}

/* Downlink: a datagram from the network side to 192.0.2.2 (mux 1). */
static void send_downlink(int udp, const char *payload)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(6000) };

	inet_pton(AF_INET, "192.0.2.2", &to.sin_addr);
	EXPECT_EQ(sendto(udp, payload, strlen(payload), 0, (struct sockaddr *)&to, sizeof(to)),
		  (ssize_t)strlen(payload));
}

static void wiring_checks(void)
{
	char err[SIM_ERROR_MAX];
	struct sim *s = NULL;
	int client = -1, udp = -1;

	sim_options_init(&sim_opts);
	strcpy(sim_opts.socket_path, sock_path);
	strcpy(sim_opts.netdev, "simqmi0");
	EXPECT_EQ(sim_options_add_net_address(&sim_opts, "198.51.100.1/24", err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_add_mux(&sim_opts, "1=192.0.2.2/24", err, sizeof(err)), 0);
	sim_opts.flush_usec = 0;
	EXPECT_EQ(sim_new(loop, &sim_opts, &s), 0);
	if (!s)
		return;
	EXPECT_EQ(sim_start(s), 0);
	const struct sim_stats *st = sim_get_stats(s);

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	strcpy(sa.sun_path, sock_path);
	client = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	EXPECT_EQ(connect(client, (struct sockaddr *)&sa, sizeof(sa)), 0);
	EXPECT_TRUE(test_run_until(loop, sim_connected, s));
	udp = udp_server();
	EXPECT_TRUE(udp >= 0);
	if (udp < 0)
		goto out;

	/* No session: nothing passes, in either direction. */
	EXPECT_TRUE(send_uplink(client, QMAP_V5, "gated"));
	EXPECT_TRUE(test_wait_counter(loop, &st->ul_no_session, 1));
	send_downlink(udp, "gated");
	EXPECT_TRUE(test_wait_counter(loop, &st->dl_no_session, 1));

	/* Control messages travel as TRANSPORT_EP_CONTROL both ways. */
	QmiMessage *req = request(QMI_SERVICE_CTL, 0, CTL_ALLOCATE_CID);
	add_u8(req, 0x01, QMI_SERVICE_WDA);
	QmiMessage *resp = sock_exchange(client, req);
	EXPECT_EQ(result_of(resp), 0);
	guint16 len;
	const guint8 *v = tlv(resp, 0x01, &len);
	uint8_t wda = v && len == 2 ? v[1] : 0;
	req = request(QMI_SERVICE_CTL, 0, CTL_ALLOCATE_CID);
	add_u8(req, 0x01, QMI_SERVICE_WDS);
	resp = sock_exchange(client, req);
	v = tlv(resp, 0x01, &len);
	uint8_t wds = v && len == 2 ? v[1] : 0;

	/* The grant switches the data side to QMAPv1 and 8 KiB aggregates. */
	req = request(QMI_SERVICE_WDA, wda, WDA_SET_DATA_FORMAT);
	add_u32(req, 0x12, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	add_u32(req, 0x13, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP);
	add_u32(req, 0x16, 8192);
	resp = sock_exchange(client, req);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u32(resp, 0x16), 8192);

	req = request(QMI_SERVICE_WDS, wds, WDS_BIND_MUX_DATA_PORT);
	add_u8(req, 0x11, 1);
	EXPECT_EQ(result_of(sock_exchange(client, req)), 0);
	req = request(QMI_SERVICE_WDS, wds, WDS_START_NETWORK);
	add_string(req, 0x14, "internet");
	EXPECT_EQ(result_of(sock_exchange(client, req)), 0);
	struct sock_msg *m = sock_recv(client, TRANSPORT_EP_CONTROL);
	EXPECT_TRUE(m && m->len > (ssize_t)HDR + 7 && m->buf[HDR + 6] == 0x04); /* indication */

	/* Uplink in the granted format reaches the network. */
	struct udp_wait w = { .fd = udp };
	EXPECT_TRUE(send_uplink(client, QMAP_V1, "after-grant"));
	EXPECT_TRUE(test_run_until(loop, udp_arrived, &w));
	EXPECT_EQ(w.len, 11);
	EXPECT_MEM_EQ(w.buf, "after-grant", 11);
	EXPECT_EQ(st->mux[1].ul_packets, 1);

	/* Downlink arrives as QMAPv1. */
	send_downlink(udp, "down");
	m = sock_recv(client, TRANSPORT_EP_BULK_IN);
	EXPECT_TRUE(m != NULL);
	if (m) {
		struct qmap_iter it;
		struct qmap_frame f;
		enum qmap_error e;
		qmap_iter_init(&it, m->buf + HDR, (size_t)m->len - HDR, QMAP_V1);
		EXPECT_EQ(qmap_next(&it, &f, &e), 1);
		EXPECT_EQ(f.mux_id, 1);
		EXPECT_EQ(f.len, 28 + 4);
		EXPECT_EQ(m->buf[HDR] & QMAP_FLAG_NEXT_HEADER, 0);
	}

	/* The stats file shows the session on the mux line, and the QMI counters. */
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);
	sim_print_stats(s, f);
	fclose(f);
	EXPECT_TRUE(text && strstr(text, " dl_bytes=32 session=1\n"));
	EXPECT_TRUE(text && strstr(text, "\ndata_format_sets=1\n"));
	EXPECT_TRUE(text && strstr(text, "\nqmi_sessions_started=1\n"));
	free(text);

	/* The network drops the session: the client hears why, data stops again. */
	EXPECT_EQ(sim_drop_sessions(s), 1);
	m = sock_recv(client, TRANSPORT_EP_CONTROL);
	EXPECT_TRUE(m != NULL);
	EXPECT_TRUE(send_uplink(client, QMAP_V1, "gated-again"));
	EXPECT_TRUE(test_wait_counter(loop, &st->ul_no_session, 2));

	/* A malformed control message gets no answer. */
	EXPECT_TRUE(sock_send(client, TRANSPORT_EP_CONTROL, "\x01\x02", 2));
	EXPECT_TRUE(test_wait_counter(loop, &sim_get_qmi_stats(s)->qmi_malformed, 1));

out:
	if (udp >= 0)
		close(udp);
	if (client >= 0)
		close(client);
	sim_free(s);
}

TEST(sim_wiring)
{
	char dir[] = "/tmp/test-sim-qmi.XXXXXX";
	ev_timer tick;
	int fd;

	if (geteuid() != 0)
		TEST_SKIP("the qmapd-sim wiring part needs root");
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		TEST_SKIP("the qmapd-sim wiring part needs /dev/net/tun: %m");
	close(fd);
	/* Only this process moves: the TUN and the test traffic stay in here. */
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("the qmapd-sim wiring part cannot make a network namespace: %m");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "mkdtemp: %m\n");
		test_failures++;
		return;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/sim.sock", dir);
	loop = ev_loop_new(EVFLAG_AUTO);
	test_loop_tick(loop, &tick);

	wiring_checks();

	ev_timer_stop(loop, &tick);
	ev_loop_destroy(loop);
	unlink(sock_path);
	rmdir(dir);
}

/* Get Card Status TLV 0x10 as the daemon's libqmi reads it: indices (8), cards (1), card
 * {state, UPIN state, retries x2, error} (5), applications (1), application {type, state,
 * personalization x4} (6), AID (1 + 16), UPIN replaces PIN1 (1), then PIN1 state/retries. */
#define CARD_STATUS_PIN1 (8 + 1 + 5 + 1 + 6 + 1 + 16 + 1)

static void expect_pin1(uint8_t cid, QmiUimPinState state, guint8 retries)
{
	QmiMessage *resp = exchange(request(QMI_SERVICE_UIM, cid, 0x002F));
	guint16 len;
	const guint8 *v = tlv(resp, 0x10, &len);

	EXPECT_EQ(result_of(resp), 0);
	EXPECT_TRUE(v && len == CARD_STATUS_PIN1 + 6);
	if (!v || len != CARD_STATUS_PIN1 + 6)
		return;
	EXPECT_EQ(v[8], 1);
	EXPECT_EQ(v[9], QMI_UIM_CARD_STATE_PRESENT);
	EXPECT_EQ(v[14], 1);
	EXPECT_EQ(v[15], QMI_UIM_CARD_APPLICATION_TYPE_USIM);
	EXPECT_EQ(v[CARD_STATUS_PIN1], state);
	EXPECT_EQ(v[CARD_STATUS_PIN1 + 1], retries);
	EXPECT_EQ(v[CARD_STATUS_PIN1 + 2], SIM_QMI_PUK_RETRIES);
}

static QmiMessage *read_ef(uint8_t cid, uint8_t session, uint16_t id, const uint8_t *path,
			   uint8_t path_len)
{
	QmiMessage *req = request(QMI_SERVICE_UIM, cid, 0x0020);
	uint8_t file[3 + 8] = { (uint8_t)id, (uint8_t)(id >> 8), path_len };

	memcpy(file + 3, path, path_len);
	add_bytes(req, 0x01, (uint8_t[]){ session, 0 }, 2);
	add_bytes(req, 0x02, file, 3u + path_len);
	add_bytes(req, 0x03, (uint8_t[]){ 0, 0, 0, 0 }, 4);
	return exchange(req);
}

static QmiMessage *verify_pin(uint8_t cid, const char *pin)
{
	QmiMessage *req = request(QMI_SERVICE_UIM, cid, 0x0026);
	uint8_t info[2 + 8] = { QMI_UIM_PIN_ID_PIN1, (uint8_t)strlen(pin) };

	memcpy(info + 2, pin, strlen(pin));
	add_bytes(req, 0x01, (uint8_t[]){ QMI_UIM_SESSION_TYPE_CARD_SLOT_1, 0 }, 2);
	add_bytes(req, 0x02, info, 2 + strlen(pin));
	return exchange(req);
}

TEST(uim)
{
	static const uint8_t mf[] = { 0x00, 0x3F }, adf[] = { 0x00, 0x3F, 0xFF, 0x7F };
	struct sim_qmi_options saved = opts;
	guint16 len;

	snprintf(opts.quirks.sim_pin, sizeof(opts.quirks.sim_pin), "1234");
	opts.quirks.no_dms_uim = true;
	engine_new();
	uint8_t uim = allocate(QMI_SERVICE_UIM), dms = allocate(QMI_SERVICE_DMS);
	uint8_t nas = allocate(QMI_SERVICE_NAS);

	expect_pin1(uim, QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED, SIM_QMI_PIN_RETRIES);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x003C), QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x0024), QMI_PROTOCOL_ERROR_NOT_PROVISIONED);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x002C), 0);
	/* Locked: not registered. */
	QmiMessage *resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0024));
	const guint8 *v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len >= 1 && v[0] == QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED);

	/* ICCID is readable, IMSI is not, until PIN1 is verified. */
	resp = read_ef(uim, QMI_UIM_SESSION_TYPE_CARD_SLOT_1, 0x2FE2, mf, sizeof(mf));
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x11, &len);
	EXPECT_TRUE(v && len == 12 && v[2] == 0x98 && v[11] == 0xF6);
	resp = read_ef(uim, QMI_UIM_SESSION_TYPE_PRIMARY_GW_PROVISIONING, 0x6F07, adf, sizeof(adf));
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	v = tlv(resp, 0x10, &len);
	EXPECT_TRUE(v && len == 2 && v[0] == 0x69 && v[1] == 0x82);
	resp = read_ef(uim, QMI_UIM_SESSION_TYPE_PRIMARY_GW_PROVISIONING, 0x6F99, adf, sizeof(adf));
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_SIM_FILE_NOT_FOUND);

	/* A wrong PIN: ACCESS_DENIED with the tries left and 63 C2. */
	resp = verify_pin(uim, "0000");
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	v = tlv(resp, 0x10, &len);
	EXPECT_TRUE(v && len == 2 && v[0] == 2 && v[1] == SIM_QMI_PUK_RETRIES);
	v = tlv(resp, 0x13, &len);
	EXPECT_TRUE(v && len == 2 && v[0] == 0x63 && v[1] == 0xC2);
	expect_pin1(uim, QMI_UIM_PIN_STATE_ENABLED_NOT_VERIFIED, 2);
	EXPECT_EQ(result_of(verify_pin(uim, "12")), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);

	/* The right one: verified, retries back to 3, IMSI readable, registered. */
	EXPECT_EQ(result_of(verify_pin(uim, "1234")), 0);
	expect_pin1(uim, QMI_UIM_PIN_STATE_ENABLED_VERIFIED, SIM_QMI_PIN_RETRIES);
	resp = read_ef(uim, QMI_UIM_SESSION_TYPE_PRIMARY_GW_PROVISIONING, 0x6F07, adf, sizeof(adf));
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x11, &len);
	EXPECT_TRUE(v && len == 11 && v[2] == 8 && v[3] == 0x09);
	resp = exchange(request(QMI_SERVICE_NAS, nas, 0x0024));
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len >= 1 && v[0] == QMI_NAS_REGISTRATION_STATE_REGISTERED);

	/* Three wrong PINs block it. */
	EXPECT_EQ(result_of(verify_pin(uim, "0000")), QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	EXPECT_EQ(result_of(verify_pin(uim, "0000")), QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	EXPECT_EQ(result_of(verify_pin(uim, "0000")), QMI_PROTOCOL_ERROR_PIN_BLOCKED);
	expect_pin1(uim, QMI_UIM_PIN_STATE_BLOCKED, 0);
	EXPECT_EQ(result_of(verify_pin(uim, "1234")), QMI_PROTOCOL_ERROR_PIN_BLOCKED);

	opts = saved;
	engine_new();
	uim = allocate(QMI_SERVICE_UIM);
	dms = allocate(QMI_SERVICE_DMS);
	expect_pin1(uim, QMI_UIM_PIN_STATE_DISABLED, SIM_QMI_PIN_RETRIES);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x003C), 0);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x0043), 0);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x0045), 0);
	EXPECT_EQ(tlv_u8(exchange(request(QMI_SERVICE_DMS, dms, 0x002D)), 0x01),
		  QMI_DMS_OPERATING_MODE_ONLINE);
	EXPECT_EQ(simple(QMI_SERVICE_NAS, allocate(QMI_SERVICE_NAS), 0x0034), 0);
}

/* A UIM PIN command: 0x02 {PIN1, [flag,] length, a, [length, b]}. */
static QmiMessage *pin_command(uint8_t cid, uint16_t message, int flag, const char *a,
			       const char *b)
{
	QmiMessage *req = request(QMI_SERVICE_UIM, cid, message);
	uint8_t info[3 + 2 * 9];
	size_t n = 0;

	info[n++] = QMI_UIM_PIN_ID_PIN1;
	if (flag >= 0)
		info[n++] = (uint8_t)flag;
	info[n++] = (uint8_t)strlen(a);
	memcpy(info + n, a, strlen(a));
	n += strlen(a);
	if (b) {
		info[n++] = (uint8_t)strlen(b);
		memcpy(info + n, b, strlen(b));
		n += strlen(b);
	}
	add_bytes(req, 0x01, (uint8_t[]){ QMI_UIM_SESSION_TYPE_CARD_SLOT_1, 0 }, 2);
	add_bytes(req, 0x02, info, n);
	return exchange(req);
}

/* PIN1 state and PIN/PUK tries from Get Card Status. */
static void expect_codes(uint8_t cid, QmiUimPinState state, guint8 pin, guint8 puk)
{
	QmiMessage *resp = exchange(request(QMI_SERVICE_UIM, cid, 0x002F));
	guint16 len;
	const guint8 *v = tlv(resp, 0x10, &len);

	EXPECT_TRUE(v && len == CARD_STATUS_PIN1 + 6);
	if (!v || len != CARD_STATUS_PIN1 + 6)
		return;
	EXPECT_EQ(v[CARD_STATUS_PIN1], state);
	EXPECT_EQ(v[CARD_STATUS_PIN1 + 1], pin);
	EXPECT_EQ(v[CARD_STATUS_PIN1 + 2], puk);
}

/* Unblock PIN (0x27), Set PIN Protection (0x25), Change PIN (0x28) on the card, and a modem
 * without a card. */
TEST(uim_codes)
{
	struct sim_qmi_options saved = opts;
	guint16 len;

	snprintf(opts.quirks.sim_pin, sizeof(opts.quirks.sim_pin), "1234");
	engine_new();
	uint8_t uim = allocate(QMI_SERVICE_UIM);
	for (int i = 0; i < 3; i++)
		result_of(verify_pin(uim, "0000"));
	expect_codes(uim, QMI_UIM_PIN_STATE_BLOCKED, 0, SIM_QMI_PUK_RETRIES);
	/* A wrong PUK: ACCESS_DENIED, a PUK try less, 63 C9. */
	QmiMessage *resp = pin_command(uim, 0x0027, -1, "87654321", "5555");
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	const guint8 *v = tlv(resp, 0x10, &len);
	EXPECT_TRUE(v && len == 2 && v[0] == 0 && v[1] == SIM_QMI_PUK_RETRIES - 1);
	v = tlv(resp, 0x13, &len);
	EXPECT_TRUE(v && len == 2 && v[0] == 0x63 && v[1] == 0xC9);
	/* The right PUK with a new PIN: verified, both counters back. */
	EXPECT_EQ(result_of(pin_command(uim, 0x0027, -1, SIM_CARD_PUK_DEFAULT, "5555")), 0);
	expect_codes(uim, QMI_UIM_PIN_STATE_ENABLED_VERIFIED, SIM_QMI_PIN_RETRIES,
		     SIM_QMI_PUK_RETRIES);
	/* Protection off: the wrong PIN is INCORRECT_PIN (no card result in this answer). */
	resp = pin_command(uim, 0x0025, 0, "1234", NULL);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_INCORRECT_PIN);
	EXPECT_TRUE(tlv(resp, 0x13, &len) == NULL);
	EXPECT_EQ(result_of(pin_command(uim, 0x0025, 0, "5555", NULL)), 0);
	expect_codes(uim, QMI_UIM_PIN_STATE_DISABLED, SIM_QMI_PIN_RETRIES, SIM_QMI_PUK_RETRIES);
	EXPECT_EQ(result_of(pin_command(uim, 0x0025, 0, "5555", NULL)),
		  QMI_PROTOCOL_ERROR_NO_EFFECT);
	EXPECT_EQ(result_of(pin_command(uim, 0x0028, -1, "5555", "6666")),
		  QMI_PROTOCOL_ERROR_NO_EFFECT);
	EXPECT_EQ(result_of(pin_command(uim, 0x0025, 2, "5555", NULL)),
		  QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	EXPECT_EQ(result_of(pin_command(uim, 0x0025, 1, "5555", NULL)), 0);
	/* Change: the old PIN no longer works, the new one does. */
	EXPECT_EQ(result_of(pin_command(uim, 0x0028, -1, "1111", "6666")),
		  QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	EXPECT_EQ(result_of(pin_command(uim, 0x0028, -1, "5555", "6666")), 0);
	EXPECT_EQ(result_of(verify_pin(uim, "5555")), QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	EXPECT_EQ(result_of(verify_pin(uim, "6666")), 0);
	/* Malformed: a second code missing, a code of 9 digits. */
	EXPECT_EQ(result_of(pin_command(uim, 0x0028, -1, "6666", NULL)),
		  QMI_PROTOCOL_ERROR_MALFORMED_MESSAGE);
	EXPECT_EQ(result_of(pin_command(uim, 0x0026, -1, "123456789", NULL)),
		  QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);

	/* Ten wrong PUKs: blocked for good. */
	for (int i = 0; i < SIM_QMI_PUK_RETRIES - 1; i++)
		EXPECT_EQ(result_of(pin_command(uim, 0x0027, -1, "87654321", "5555")),
			  QMI_PROTOCOL_ERROR_ACCESS_DENIED);
	EXPECT_EQ(result_of(pin_command(uim, 0x0027, -1, "87654321", "5555")),
		  QMI_PROTOCOL_ERROR_PIN_ALWAYS_BLOCKED);
	expect_codes(uim, QMI_UIM_PIN_STATE_PERMANENTLY_BLOCKED, 0, 0);

	/* No card: absent, without applications; the rest UIM_UNINITIALIZED. */
	opts = saved;
	opts.quirks.no_sim = true;
	engine_new();
	uim = allocate(QMI_SERVICE_UIM);
	uint8_t dms = allocate(QMI_SERVICE_DMS);
	resp = exchange(request(QMI_SERVICE_UIM, uim, 0x002F));
	EXPECT_EQ(result_of(resp), 0);
	v = tlv(resp, 0x10, &len);
	EXPECT_TRUE(v && len == 15 && v[0] == 0xFF && v[1] == 0xFF && v[8] == 1 &&
		    v[9] == QMI_UIM_CARD_STATE_ABSENT && v[14] == 0);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x003C), QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
	EXPECT_EQ(simple(QMI_SERVICE_DMS, dms, 0x0043), QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
	EXPECT_EQ(result_of(verify_pin(uim, "1234")), QMI_PROTOCOL_ERROR_UIM_UNINITIALIZED);
	resp = exchange(request(QMI_SERVICE_NAS, allocate(QMI_SERVICE_NAS), 0x0024));
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len >= 1 && v[0] == QMI_NAS_REGISTRATION_STATE_NOT_REGISTERED);
	opts = saved;
}

static QmiMessage *profile_request(uint8_t cid, uint16_t message, uint8_t type, uint8_t second)
{
	QmiMessage *req = request(QMI_SERVICE_WDS, cid, message);

	add_bytes(req, 0x01, (uint8_t[]){ type, second }, 2);
	return exchange(req);
}

/* The default profile is 1; profile N is the Nth APN; others are refused as firmware does. */
TEST(profiles_wds)
{
	engine_new();
	uint8_t wds = allocate(QMI_SERVICE_WDS);

	QmiMessage *resp = profile_request(wds, 0x0049, QMI_WDS_PROFILE_TYPE_3GPP,
					   QMI_WDS_PROFILE_FAMILY_EMBEDDED);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u8(resp, 0x01), 1);
	resp = profile_request(wds, 0x002B, QMI_WDS_PROFILE_TYPE_3GPP, 1);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_TRUE(tlv_string_is(resp, 0x14, "internet"));
	EXPECT_EQ(tlv_u8(resp, 0x11), QMI_WDS_PDP_TYPE_IPV4_OR_IPV6);
	resp = profile_request(wds, 0x002B, QMI_WDS_PROFILE_TYPE_3GPP, 2);
	EXPECT_TRUE(tlv_string_is(resp, 0x14, "secure") && tlv_string_is(resp, 0x1B, "alice"));
	resp = profile_request(wds, 0x002B, QMI_WDS_PROFILE_TYPE_3GPP, 3);
	EXPECT_EQ(result_of(resp), QMI_PROTOCOL_ERROR_EXTENDED_INTERNAL);
	EXPECT_EQ(tlv_u16(resp, 0xE0), QMI_WDS_DS_PROFILE_ERROR_INVALID_PROFILE_NUMBER);
	resp = profile_request(wds, 0x0049, QMI_WDS_PROFILE_TYPE_3GPP2, 0);
	EXPECT_EQ(tlv_u16(resp, 0xE0), QMI_WDS_DS_PROFILE_ERROR_INVALID_PROFILE_TYPE);
	EXPECT_EQ(simple(QMI_SERVICE_WDS, wds, 0x002B), QMI_PROTOCOL_ERROR_MISSING_ARGUMENT);
}

TEST(wms)
{
	/* A published SMS-DELIVER with its SMSC address: from +31641600986. */
	static const uint8_t deliver[] = { 0x07, 0x91, 0x13, 0x26, 0x04, 0x00, 0x00,
					   0xF0, 0x04, 0x0B, 0x91, 0x13, 0x46, 0x61,
					   0x00, 0x89, 0xF6, 0x00, 0x00, 0x20, 0x80,
					   0x62, 0x91, 0x73, 0x14, 0x08, 0x01, 0xC8 };
	engine_new();
	uint8_t c = allocate(QMI_SERVICE_WMS);
	EXPECT_EQ(c, 1);

	/* Event reports asked: a message from the network is indicated with its index. */
	QmiMessage *req = request(QMI_SERVICE_WMS, c, 0x0001);
	add_u8(req, 0x10, 1);
	EXPECT_EQ(result_of(exchange(req)), 0);
	sent_clear();
	EXPECT_EQ(sim_qmi_deliver_sms(q, deliver, sizeof(deliver)), 0);
	QmiMessage *ind = sent_at(0);
	EXPECT_TRUE(ind && qmi_message_is_indication(ind) &&
		    qmi_message_get_message_id(ind) == 0x0001);
	guint16 len = 0;
	const guint8 *v = ind ? tlv(ind, 0x10, &len) : NULL;
	EXPECT_TRUE(v && len == 5 && v[0] == QMI_WMS_STORAGE_TYPE_NV && v[1] == 0);

	/* Listed (NV: one, not read; UIM: none), read back byte for byte. */
	req = request(QMI_SERVICE_WMS, c, 0x0031);
	add_u8(req, 0x01, QMI_WMS_STORAGE_TYPE_NV);
	QmiMessage *resp = exchange(req);
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len == 4 + 5 && v[0] == 1 && v[4] == 0 &&
		    v[8] == QMI_WMS_MESSAGE_TAG_TYPE_MT_NOT_READ);
	req = request(QMI_SERVICE_WMS, c, 0x0031);
	add_u8(req, 0x01, QMI_WMS_STORAGE_TYPE_UIM);
	resp = exchange(req);
	EXPECT_EQ(tlv_u32(resp, 0x01), 0);
	req = request(QMI_SERVICE_WMS, c, 0x0022);
	add_bytes(req, 0x01, "\x01\x00\x00\x00\x00", 5);
	resp = exchange(req);
	v = tlv(resp, 0x01, &len);
	EXPECT_TRUE(v && len == 4 + sizeof(deliver) && v[1] == 6 &&
		    memcmp(v + 4, deliver, sizeof(deliver)) == 0);
	/* 3GPP2 mode, an index not stored, a storage that does not exist. */
	req = request(QMI_SERVICE_WMS, c, 0x0022);
	add_bytes(req, 0x01, "\x01\x00\x00\x00\x00", 5);
	add_u8(req, 0x10, QMI_WMS_MESSAGE_MODE_CDMA);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);
	req = request(QMI_SERVICE_WMS, c, 0x0022);
	add_bytes(req, 0x01, "\x01\x05\x00\x00\x00", 5);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_INDEX);
	req = request(QMI_SERVICE_WMS, c, 0x0031);
	add_u8(req, 0x01, 7);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_ARGUMENT);

	/* Deleted: gone from the list, a second delete finds nothing. */
	req = request(QMI_SERVICE_WMS, c, 0x0024);
	add_u8(req, 0x01, QMI_WMS_STORAGE_TYPE_NV);
	add_u32(req, 0x10, 0);
	EXPECT_EQ(result_of(exchange(req)), 0);
	req = request(QMI_SERVICE_WMS, c, 0x0024);
	add_u8(req, 0x01, QMI_WMS_STORAGE_TYPE_NV);
	add_u32(req, 0x10, 0);
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_INVALID_INDEX);

	/* Raw Send: an SMS-SUBMIT is sent (message id), a DELIVER is refused. */
	static const uint8_t submit[] = { 6,	10,   0,    0x00, 0x01, 0x00, 0x01,
					  0x91, 0xF1, 0x00, 0x00, 0x01, 0x31 };
	req = request(QMI_SERVICE_WMS, c, 0x0020);
	add_bytes(req, 0x01, submit, sizeof(submit));
	resp = exchange(req);
	EXPECT_EQ(result_of(resp), 0);
	EXPECT_EQ(tlv_u16(resp, 0x01), 0);
	uint8_t bad[3 + sizeof(deliver)] = { 6, sizeof(deliver), 0 };
	memcpy(bad + 3, deliver, sizeof(deliver));
	req = request(QMI_SERVICE_WMS, c, 0x0020);
	add_bytes(req, 0x01, bad, sizeof(bad));
	EXPECT_EQ(result_of(exchange(req)), QMI_PROTOCOL_ERROR_WMS_ENCODING);
	/* Routes: ModemManager's (every class to NV, store and notify) are taken. */
	req = request(QMI_SERVICE_WMS, c, 0x0032);
	add_bytes(req, 0x01, "\x01\x00\x00\x04\x01\x01", 6);
	EXPECT_EQ(result_of(exchange(req)), 0);
	/* Unknown WMS messages stay unknown. */
	EXPECT_EQ(simple(QMI_SERVICE_WMS, c, 0x0042), QMI_PROTOCOL_ERROR_INVALID_QMI_COMMAND);
}

/*
 * What an engine keeps, as the host sees it: every byte it sends for a probe of requests on
 * client ids, the card's PIN1, the operating mode, the data format, the SMS storage, system
 * selection, registration and a session's handle. Transaction ids from 1 each time.
 */
static GByteArray *probe(void)
{
	GByteArray *out = g_byte_array_new();
	uint8_t id[6];
	static const uint8_t services[] = { QMI_SERVICE_DMS, QMI_SERVICE_NAS, QMI_SERVICE_UIM,
					    QMI_SERVICE_WDA, QMI_SERVICE_WMS, QMI_SERVICE_WDS };
	static const struct {
		unsigned service; /* index into services */
		uint16_t message;
	} asks[] = {
		{ 0, 0x002D }, /* DMS Get Operating Mode */
		{ 0, 0x0024 }, /* DMS Get MSISDN: PIN1 */
		{ 1, 0x0024 }, /* NAS Get Serving System */
		{ 1, 0x0034 }, /* NAS Get System Selection Preference */
		{ 2, 0x002F }, /* UIM Get Card Status */
		{ 3, WDA_GET_DATA_FORMAT },
	};

	next_tid = 1;
	for (size_t i = 0; i < ARRAY_SIZE(services); i++)
		id[i] = allocate(services[i]);
	for (size_t i = 0; i < ARRAY_SIZE(asks); i++) {
		QmiMessage *req =
			request(services[asks[i].service], id[asks[i].service], asks[i].message);
		QmiMessage *resp;
		gsize len;
		const guint8 *raw;

		resp = exchange(req);
		raw = resp ? qmi_message_get_raw(resp, &len, NULL) : NULL;
		if (raw)
			g_byte_array_append(out, raw, (guint)len);
	}
	QmiMessage *req = request(QMI_SERVICE_WMS, id[4], 0x0031); /* List Messages, NV */
	add_u8(req, 0x01, QMI_WMS_STORAGE_TYPE_NV);
	exchange(req);
	/* A session on mux 1: its handle, and the indication. */
	req = request(QMI_SERVICE_WDS, id[5], WDS_START_NETWORK);
	sent_clear();
	gsize len;
	const guint8 *raw = qmi_message_get_raw(req, &len, NULL);
	EXPECT_EQ(sim_qmi_handle(q, raw, len), 0);
	qmi_message_unref(req);
	for (unsigned i = 0; i < sent->len; i++) {
		raw = qmi_message_get_raw(sent_at(i), &len, NULL);
		g_byte_array_append(out, raw, (guint)len);
	}
	g_byte_array_append(out, id, sizeof(id));
	g_byte_array_append(out, (const guint8 *)sim_qmi_get_stats(q),
			    sizeof(struct sim_qmi_stats));
	return out;
}

/* Everything an engine keeps, changed from how it starts. */
static void use_up(void)
{
	static const uint8_t deliver[] = { 0x07, 0x91, 0x13, 0x26, 0x04, 0x00, 0x00,
					   0xF0, 0x04, 0x0B, 0x91, 0x13, 0x46, 0x61,
					   0x00, 0x89, 0xF6, 0x00, 0x00, 0x20, 0x80,
					   0x62, 0x91, 0x73, 0x14, 0x08, 0x01, 0xC8 };
	uint8_t dms = 0, uim = allocate(QMI_SERVICE_UIM), wda = allocate(QMI_SERVICE_WDA);
	uint8_t c = wds_client(1, 8), wms = allocate(QMI_SERVICE_WMS);

	for (unsigned i = 0; i < 3; i++) /* client ids go round: the next would be 4 */
		dms = allocate(QMI_SERVICE_DMS);
	result_of(verify_pin(uim, "0000")); /* a PIN try less, or verified if it is 0000 */
	result_of(verify_pin(uim, "1234"));
	EXPECT_EQ(result_of(start(c, NULL, NULL, NULL)), 0);
	EXPECT_EQ(result_of(set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP,
				       QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAP, 4096, 4, 0, 0)),
		  0);
	QmiMessage *req = request(QMI_SERVICE_NAS, allocate(QMI_SERVICE_NAS), 0x0033);
	add_bytes(req, 0x15, "\x01\x00\x00\x00\x00\x00\x00\x00", 8); /* LTE band 1 only */
	EXPECT_EQ(result_of(exchange(req)), 0);
	req = request(QMI_SERVICE_WMS, wms, 0x0001);
	add_u8(req, 0x10, 1);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_EQ(sim_qmi_deliver_sms(q, deliver, sizeof(deliver)), 0);
	req = request(QMI_SERVICE_DMS, dms, 0x002E);
	add_u8(req, 0x01, QMI_DMS_OPERATING_MODE_LOW_POWER);
	EXPECT_EQ(result_of(exchange(req)), 0);
	EXPECT_TRUE(sim_qmi_get_stats(q)->low_power == 1 && sim_qmi_get_stats(q)->qmi_clients > 0);
}

static bool same_bytes(const GByteArray *a, const GByteArray *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

TEST(restart)
{
	struct sim_qmi_options locked;
	g_autoptr(GByteArray) fresh = NULL, fresh_locked = NULL, again = NULL;

	/* The probe tells engines apart: a used one answers it differently. */
	engine_new();
	fresh = probe();
	engine_new();
	use_up();
	again = probe();
	EXPECT_TRUE(!same_bytes(fresh, again));
	g_clear_pointer(&again, g_byte_array_unref);

	/* Used, then restarted with its options: as new, byte for byte. */
	engine_new();
	use_up();
	EXPECT_EQ(sim_qmi_restart(q, NULL), 0);
	EXPECT_EQ(sim_qmi_get_stats(q)->qmi_requests, 0);
	again = probe();
	EXPECT_TRUE(same_bytes(fresh, again));
	g_clear_pointer(&again, g_byte_array_unref);

	/* With other options (a PIN-locked card): as a new engine with those, in both orders. */
	locked = opts;
	snprintf(locked.quirks.sim_pin, sizeof(locked.quirks.sim_pin), "1234");
	struct sim_qmi_options plain = opts;
	opts = locked;
	engine_new();
	fresh_locked = probe();
	EXPECT_TRUE(!same_bytes(fresh, fresh_locked));
	opts = plain;
	engine_new();
	use_up();
	EXPECT_EQ(sim_qmi_restart(q, &locked), 0);
	again = probe();
	EXPECT_TRUE(same_bytes(fresh_locked, again));
	g_clear_pointer(&again, g_byte_array_unref);
	use_up();
	EXPECT_EQ(sim_qmi_restart(q, &plain), 0);
	again = probe();
	EXPECT_TRUE(same_bytes(fresh, again));
	g_clear_pointer(&again, g_byte_array_unref);

	/* Not from inside a callback: the engine is in use. */
	uint8_t wda = allocate(QMI_SERVICE_WDA);
	format_restart = true;
	format_restart_ret = 0;
	set_format(wda, QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5,
		   QMI_WDA_DATA_AGGREGATION_PROTOCOL_QMAPV5, 8192, 8, 0, 0);
	EXPECT_EQ(format_restart_ret, -EBUSY);
	format_restart = false;
	EXPECT_EQ(sim_qmi_restart(NULL, NULL), -EINVAL);
	locked.n_apn = SIM_QMI_MAX_APNS + 1;
	EXPECT_EQ(sim_qmi_restart(q, &locked), -EINVAL);
}
