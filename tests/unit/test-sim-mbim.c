/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's MBIM side. First the responder alone, message by message, no sockets, no root:
 * requests built with libmbim's request builders, every answer parsed back with libmbim's
 * response and notification parsers (so the layouts are what libmbim, and so mbimcli and
 * ModemManager, read). Then, as root in a private network namespace, the sim over its socket:
 * the descriptor message and the class requests, control, NTB16 and NTB32 data both ways
 * with two sessions in one NTB, a strict modem dropping an out-of-rule uplink NTB, the
 * network dropping sessions, and the malformed downlink NTBs it injects as the codec sees
 * them.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <libmbim-glib.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "byteorder.h"
#include "macro.h"
#include "ntb.h"
#include "sim-mbim.h"
#include "sim.h"
#include "test-loop.h"
#include "test-case.h"
#include "transport.h"

#define HDR sizeof(struct transport_sim_header)

/* ---- the responder alone ---- */

static struct sim_mbim_options opts;
static struct sim_mbim *m;
static GPtrArray *sent; /* MbimMessage *, everything the modem sent for the last request */
static uint32_t next_tid = 1;

static void on_send(void *userdata, const uint8_t *buf, size_t len)
{
	(void)userdata;
	g_ptr_array_add(sent, mbim_message_new(buf, (guint32)len));
}

static const struct sim_mbim_callbacks callbacks = { .send = on_send };

static void engine_new(void)
{
	m = sim_mbim_free(m);
	EXPECT_EQ(sim_mbim_new(&opts, &callbacks, NULL, &m), 0);
}

static void base_options(void)
{
	char err[SIM_ERROR_MAX];

	sim_mbim_options_init(&opts);
	opts.max_sessions = 3;
	EXPECT_EQ(sim_qmi_parse_apn("internet", &opts.apn[0], err, sizeof(err)), 0);
	EXPECT_EQ(sim_qmi_parse_apn("corp:alice:s3cret", &opts.apn[1], err, sizeof(err)), 0);
	opts.n_apn = 2;
	/* mux 1 (session 0) dual stack, mux 2 (session 1) dual stack, mux 3 IPv4 only */
	opts.mux[1] = (struct sim_qmi_mux){ .present = true };
	EXPECT_EQ(config_parse_prefix("192.0.2.2/24", &opts.mux[1].ipv4), 0);
	EXPECT_EQ(config_parse_prefix("2001:db8:1::2/64", &opts.mux[1].ipv6), 0);
	opts.mux[2] = (struct sim_qmi_mux){ .present = true };
	EXPECT_EQ(config_parse_prefix("203.0.113.10/28", &opts.mux[2].ipv4), 0);
	EXPECT_EQ(config_parse_prefix("2001:db8:2::10/64", &opts.mux[2].ipv6), 0);
	opts.mux[3] = (struct sim_qmi_mux){ .present = true };
	EXPECT_EQ(config_parse_prefix("198.51.100.66/26", &opts.mux[3].ipv4), 0);
	opts.session_mtu = 1428;
}

/* Hand a libmbim-built message to the engine; what it sent is in `sent`. */
static int feed(MbimMessage *msg)
{
	guint32 len = 0;
	const guint8 *raw = mbim_message_get_raw(msg, &len, NULL);

	g_ptr_array_set_size(sent, 0);
	int r = sim_mbim_handle(m, raw, len);
	mbim_message_unref(msg);
	return r;
}

/* A request with a fresh transaction id; its single answer (which must carry the same id). */
static MbimMessage *exchange(MbimMessage *req)
{
	uint32_t tid = next_tid++;

	mbim_message_set_transaction_id(req, tid);
	feed(req);
	EXPECT_EQ(sent->len, 1);
	if (sent->len < 1)
		return NULL;
	MbimMessage *resp = g_ptr_array_index(sent, 0);
	EXPECT_EQ(mbim_message_get_transaction_id(resp), tid);
	return resp;
}

static uint32_t status_of(MbimMessage *resp)
{
	if (!resp || mbim_message_get_message_type(resp) != MBIM_MESSAGE_TYPE_COMMAND_DONE)
		return 0xffffffff;
	return mbim_message_command_done_get_status_code(resp);
}

static MbimMessage *open_device(uint32_t max_transfer)
{
	return exchange(mbim_message_open_new(0, max_transfer));
}

/*
 * Every case starts from the base options and a fresh engine that was opened; the sim cases
 * (which start their own) run in the network namespace sim_setup() makes.
 */
static void responder_free(void)
{
	m = sim_mbim_free(m);
	g_ptr_array_unref(sent);
}

TEST_SETUP()
{
	if (!sent) {
		sent = g_ptr_array_new_with_free_func((GDestroyNotify)mbim_message_unref);
		atexit(responder_free);
	}
	base_options();
	engine_new();
	open_device(4096);
}

TEST(open)
{
	engine_new();
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);

	/* Before OPEN: a function error, no command done. */
	MbimMessage *resp = exchange(mbim_message_device_caps_query_new(NULL));
	EXPECT_EQ(mbim_message_get_message_type(resp), MBIM_MESSAGE_TYPE_FUNCTION_ERROR);
	EXPECT_EQ(mbim_message_error_get_error_status_code(resp), MBIM_PROTOCOL_ERROR_NOT_OPENED);
	EXPECT_EQ(st->mbim_not_opened, 1);

	resp = open_device(4096);
	EXPECT_EQ(mbim_message_get_message_type(resp), MBIM_MESSAGE_TYPE_OPEN_DONE);
	EXPECT_TRUE(mbim_message_open_done_get_result(resp, NULL));
	EXPECT_TRUE(sim_mbim_is_open(m));

	/* CLOSE, then OPEN again. */
	resp = exchange(mbim_message_close_new(0));
	EXPECT_EQ(mbim_message_get_message_type(resp), MBIM_MESSAGE_TYPE_CLOSE_DONE);
	EXPECT_TRUE(mbim_message_close_done_get_result(resp, NULL));
	EXPECT_TRUE(!sim_mbim_is_open(m));
	resp = open_device(4096);
	EXPECT_TRUE(mbim_message_open_done_get_result(resp, NULL));
}

TEST(caps)
{
	g_autofree gchar *device_id = NULL, *firmware = NULL, *imsi = NULL, *iccid = NULL;
	g_autofree gchar *provider_id = NULL, *provider_name = NULL;
	MbimDeviceType type = 0;
	MbimDataClass data_class = 0;
	guint32 max_sessions = 0;

	MbimMessage *resp = exchange(mbim_message_device_caps_query_new(NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	EXPECT_TRUE(mbim_message_device_caps_response_parse(
		resp, &type, NULL, NULL, NULL, &data_class, NULL, NULL, &max_sessions, NULL,
		&device_id, &firmware, NULL, NULL));
	EXPECT_EQ(type, MBIM_DEVICE_TYPE_EMBEDDED);
	EXPECT_TRUE(data_class & MBIM_DATA_CLASS_LTE);
	EXPECT_EQ(max_sessions, 3);
	EXPECT_STR_EQ(device_id, SIM_MBIM_IMEI);
	EXPECT_TRUE(firmware && firmware[0]);

	MbimSubscriberReadyState ready = 0;
	guint32 n_numbers = 99;
	g_auto(GStrv) numbers = NULL;
	resp = exchange(mbim_message_subscriber_ready_status_query_new(NULL));
	EXPECT_TRUE(mbim_message_subscriber_ready_status_response_parse(
		resp, &ready, &imsi, &iccid, NULL, &n_numbers, &numbers, NULL));
	EXPECT_EQ(ready, MBIM_SUBSCRIBER_READY_STATE_INITIALIZED);
	EXPECT_STR_EQ(imsi, SIM_MBIM_IMSI);
	EXPECT_STR_EQ(iccid, SIM_MBIM_ICCID);
	EXPECT_EQ(n_numbers, 0); /* no --msisdn: none, as on many SIMs */

	/* The SIM's operator: the IMSI's MCC+MNC, the SPN as name, state home. */
	g_autoptr(MbimProvider) home = NULL;
	resp = exchange(mbim_message_home_provider_query_new(NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	EXPECT_TRUE(mbim_message_home_provider_response_parse(resp, &home, NULL));
	if (home) {
		EXPECT_STR_EQ(home->provider_id, "00101");
		EXPECT_TRUE(strncmp(SIM_MBIM_IMSI, home->provider_id, 5) == 0);
		EXPECT_STR_EQ(home->provider_name, SIM_QMI_SPN);
		EXPECT_EQ(home->provider_state, MBIM_PROVIDER_STATE_HOME);
	}
	/* Provisioning a home provider is not simulated. */
	MbimProvider want = { .provider_id = "00102", .provider_name = "Other" };
	resp = exchange(mbim_message_home_provider_set_new(&want, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT);

	MbimRadioSwitchState hw = 0, sw = 0;
	resp = exchange(mbim_message_radio_state_query_new(NULL));
	EXPECT_TRUE(mbim_message_radio_state_response_parse(resp, &hw, &sw, NULL));
	EXPECT_EQ(hw, MBIM_RADIO_SWITCH_STATE_ON);
	EXPECT_EQ(sw, MBIM_RADIO_SWITCH_STATE_ON);

	MbimRegisterState reg = 0;
	resp = exchange(mbim_message_register_state_query_new(NULL));
	EXPECT_TRUE(mbim_message_register_state_response_parse(resp, NULL, &reg, NULL, NULL, NULL,
							       &provider_id, &provider_name, NULL,
							       NULL, NULL));
	EXPECT_EQ(reg, MBIM_REGISTER_STATE_HOME);
	EXPECT_STR_EQ(provider_id, "00101");
	EXPECT_STR_EQ(provider_name, "Test Network");

	/* Attach (already attached: a modem that attached on its own says so again). */
	MbimPacketServiceState ps = 0;
	guint64 dl_speed = 0;
	resp = exchange(
		mbim_message_packet_service_set_new(MBIM_PACKET_SERVICE_ACTION_ATTACH, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	EXPECT_TRUE(mbim_message_packet_service_response_parse(resp, NULL, &ps, NULL, NULL,
							       &dl_speed, NULL));
	EXPECT_EQ(ps, MBIM_PACKET_SERVICE_STATE_ATTACHED);
	EXPECT_TRUE(dl_speed > 0);

	/* DEVICE_SERVICES: basic connect with CONNECT, SMS, no QMI-over-MBIM. */
	g_autoptr(MbimDeviceServiceElementArray) services = NULL;
	guint32 n = 0;
	resp = exchange(mbim_message_device_services_query_new(NULL));
	EXPECT_TRUE(mbim_message_device_services_response_parse(resp, &n, NULL, &services, NULL));
	EXPECT_EQ(n, 2);
	if (services && n == 2) {
		EXPECT_EQ(mbim_uuid_to_service(&services[1]->device_service_id), MBIM_SERVICE_SMS);
		EXPECT_EQ(services[1]->cids_count, 5u);
		EXPECT_EQ(mbim_uuid_to_service(&services[0]->device_service_id),
			  MBIM_SERVICE_BASIC_CONNECT);
		bool has_connect = false, has_home_provider = false;
		for (guint32 i = 0; i < services[0]->cids_count; i++) {
			has_connect |= services[0]->cids[i] == MBIM_CID_BASIC_CONNECT_CONNECT;
			has_home_provider |=
				services[0]->cids[i] == MBIM_CID_BASIC_CONNECT_HOME_PROVIDER;
		}
		EXPECT_TRUE(has_connect);
		EXPECT_TRUE(has_home_provider);
	}

	/* Unknown CIDs and services: NO_DEVICE_SUPPORT, as real modems answer. */
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);
	uint64_t unsupported = st->mbim_unsupported;
	resp = exchange(mbim_message_preferred_providers_query_new(NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT);
	resp = exchange(mbim_message_phonebook_configuration_query_new(NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NO_DEVICE_SUPPORT);
	EXPECT_EQ(st->mbim_unsupported, unsupported + 2);
}

/* --msisdn: the one telephone number of SUBSCRIBER_READY_STATUS, once the SIM is up. */
/* VISIBLE_PROVIDERS and REGISTER_STATE set, parsed by libmbim as a host does. */
TEST(providers_register)
{
	g_autoptr(MbimProviderArray) providers = NULL;
	guint32 n = 0;
	MbimRegisterState reg = 0;
	MbimNwError nw = 0;

	MbimMessage *resp = exchange(mbim_message_visible_providers_query_new(
		MBIM_VISIBLE_PROVIDERS_ACTION_FULL_SCAN, NULL));
	EXPECT_TRUE(mbim_message_visible_providers_response_parse(resp, &n, &providers, NULL));
	EXPECT_EQ(n, 3);
	if (n == 3) {
		EXPECT_STR_EQ(providers[0]->provider_id, "00101");
		EXPECT_TRUE(providers[0]->provider_state & MBIM_PROVIDER_STATE_REGISTERED);
		EXPECT_STR_EQ(providers[1]->provider_name, "Other Network");
		EXPECT_TRUE(!(providers[1]->provider_state & MBIM_PROVIDER_STATE_REGISTERED));
		EXPECT_TRUE(providers[2]->provider_state & MBIM_PROVIDER_STATE_FORBIDDEN);
	}
	g_autofree gchar *id = NULL;
	resp = exchange(
		mbim_message_register_state_set_new("00102", MBIM_REGISTER_ACTION_MANUAL, 0, NULL));
	EXPECT_TRUE(mbim_message_register_state_response_parse(resp, &nw, &reg, NULL, NULL, NULL,
							       &id, NULL, NULL, NULL, NULL));
	EXPECT_EQ(reg, MBIM_REGISTER_STATE_HOME);
	EXPECT_STR_EQ(id, "00102");
	resp = exchange(
		mbim_message_register_state_set_new("00103", MBIM_REGISTER_ACTION_MANUAL, 0, NULL));
	EXPECT_TRUE(mbim_message_register_state_response_parse(resp, &nw, &reg, NULL, NULL, NULL,
							       NULL, NULL, NULL, NULL, NULL));
	EXPECT_EQ(reg, MBIM_REGISTER_STATE_DENIED);
	EXPECT_EQ(nw, 11);
	resp = exchange(
		mbim_message_register_state_set_new("", MBIM_REGISTER_ACTION_AUTOMATIC, 0, NULL));
	g_autofree gchar *home = NULL;
	EXPECT_TRUE(mbim_message_register_state_response_parse(resp, &nw, &reg, NULL, NULL, NULL,
							       &home, NULL, NULL, NULL, NULL));
	EXPECT_EQ(reg, MBIM_REGISTER_STATE_HOME);
	EXPECT_STR_EQ(home, "00101");
	/* Radio off: no scan. */
	exchange(mbim_message_radio_state_set_new(MBIM_RADIO_SWITCH_STATE_OFF, NULL));
	resp = exchange(mbim_message_visible_providers_query_new(
		MBIM_VISIBLE_PROVIDERS_ACTION_FULL_SCAN, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_RADIO_POWER_OFF);
}

TEST(own_number)
{
	static const char number[] = "+15555550123";

	for (int locked = 0; locked <= 1; locked++) {
		MbimSubscriberReadyState ready = 0;
		guint32 n = 99;
		g_auto(GStrv) numbers = NULL;

		snprintf(opts.msisdn, sizeof(opts.msisdn), "%s", number);
		opts.subscriber_state = locked ? MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED
					       : MBIM_SUBSCRIBER_READY_STATE_INITIALIZED;
		engine_new();
		open_device(4096);
		MbimMessage *resp = exchange(mbim_message_subscriber_ready_status_query_new(NULL));
		EXPECT_TRUE(mbim_message_subscriber_ready_status_response_parse(
			resp, &ready, NULL, NULL, NULL, &n, &numbers, NULL));
		EXPECT_EQ(ready, opts.subscriber_state);
		EXPECT_EQ(n, locked ? 0 : 1);
		if (!locked && n == 1 && numbers)
			EXPECT_STR_EQ(numbers[0], number);
	}
	opts.msisdn[0] = '\0';
	opts.subscriber_state = MBIM_SUBSCRIBER_READY_STATE_INITIALIZED;
	engine_new();
	open_device(4096);
}

static void expect_pin(MbimMessage *resp, MbimPinType type, MbimPinState state, guint32 left)
{
	MbimPinType t = 99;
	MbimPinState st = 99;
	guint32 n = 99;

	EXPECT_TRUE(mbim_message_pin_response_parse(resp, &t, &st, &n, NULL));
	EXPECT_EQ(t, type);
	EXPECT_EQ(st, state);
	EXPECT_EQ(n, left);
}

static MbimMessage *pin_set(MbimPinType type, MbimPinOperation op, const char *a, const char *b)
{
	return exchange(mbim_message_pin_set_new(type, op, a, b, NULL));
}

static MbimSubscriberReadyState ready_state(void)
{
	MbimSubscriberReadyState ready = 99;

	EXPECT_TRUE(mbim_message_subscriber_ready_status_response_parse(
		exchange(mbim_message_subscriber_ready_status_query_new(NULL)), &ready, NULL, NULL,
		NULL, NULL, NULL, NULL));
	return ready;
}

static bool pin1_enabled(void)
{
	g_autoptr(MbimPinDesc) pin1 = NULL;

	EXPECT_TRUE(mbim_message_pin_list_response_parse(
		exchange(mbim_message_pin_list_query_new(NULL)), &pin1, NULL, NULL, NULL, NULL,
		NULL, NULL, NULL, NULL, NULL, NULL));
	return pin1 && pin1->pin_mode == MBIM_PIN_MODE_ENABLED;
}

/* MBIM_CID_PIN and PIN_LIST on a PIN-locked card: enter, block, PUK, enable, change. */
TEST(pin)
{
	snprintf(opts.sim_pin, sizeof(opts.sim_pin), "1234");
	engine_new();
	open_device(4096);
	EXPECT_EQ(ready_state(), MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED);
	expect_pin(exchange(mbim_message_pin_query_new(NULL)), MBIM_PIN_TYPE_PIN1,
		   MBIM_PIN_STATE_LOCKED, 3);
	EXPECT_TRUE(pin1_enabled());
	/* Wrong: FAILURE with the PIN_INFO and a try less; right: initialized. */
	MbimMessage *resp = pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_ENTER, "0000", "");
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_FAILURE);
	expect_pin(resp, MBIM_PIN_TYPE_PIN1, MBIM_PIN_STATE_LOCKED, 2);
	resp = pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_ENTER, "1234", "");
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	expect_pin(resp, MBIM_PIN_TYPE_UNKNOWN, MBIM_PIN_STATE_UNLOCKED, 0);
	EXPECT_EQ(ready_state(), MBIM_SUBSCRIBER_READY_STATE_INITIALIZED);
	/* Three wrong PINs (to change): PUK1 locked, the SIM device-locked again. */
	pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_CHANGE, "0000", "1111");
	pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_CHANGE, "0000", "1111");
	resp = pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_CHANGE, "0000", "1111");
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_FAILURE);
	expect_pin(resp, MBIM_PIN_TYPE_PUK1, MBIM_PIN_STATE_LOCKED, 10);
	EXPECT_EQ(ready_state(), MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED);
	resp = pin_set(MBIM_PIN_TYPE_PUK1, MBIM_PIN_OPERATION_ENTER, "87654321", "5555");
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_FAILURE);
	expect_pin(resp, MBIM_PIN_TYPE_PUK1, MBIM_PIN_STATE_LOCKED, 9);
	resp = pin_set(MBIM_PIN_TYPE_PUK1, MBIM_PIN_OPERATION_ENTER, "12345678", "5555");
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	EXPECT_EQ(ready_state(), MBIM_SUBSCRIBER_READY_STATE_INITIALIZED);
	/* Disable, enable, change. */
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_DISABLE, "5555", "")),
		  MBIM_STATUS_ERROR_NONE);
	EXPECT_TRUE(!pin1_enabled());
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_DISABLE, "5555", "")),
		  MBIM_STATUS_ERROR_PIN_DISABLED);
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_ENABLE, "5555", "")),
		  MBIM_STATUS_ERROR_NONE);
	EXPECT_TRUE(pin1_enabled());
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_CHANGE, "5555", "6666")),
		  MBIM_STATUS_ERROR_NONE);
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_DISABLE, "5555", "")),
		  MBIM_STATUS_ERROR_FAILURE);
	/* Only PIN1 and PUK1 are simulated; a code of 9 digits never reaches the card. */
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN2, MBIM_PIN_OPERATION_ENTER, "6666", "")),
		  MBIM_STATUS_ERROR_INVALID_PARAMETERS);
	EXPECT_EQ(status_of(pin_set(MBIM_PIN_TYPE_PIN1, MBIM_PIN_OPERATION_ENTER, "123456789", "")),
		  MBIM_STATUS_ERROR_INVALID_PARAMETERS);

	/* No card: SIM_NOT_INSERTED for the state and both CIDs. */
	opts.sim_pin[0] = '\0';
	opts.no_sim = true;
	engine_new();
	open_device(4096);
	EXPECT_EQ(ready_state(), MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED);
	EXPECT_EQ(status_of(exchange(mbim_message_pin_query_new(NULL))),
		  MBIM_STATUS_ERROR_SIM_NOT_INSERTED);
	EXPECT_EQ(status_of(exchange(mbim_message_pin_list_query_new(NULL))),
		  MBIM_STATUS_ERROR_SIM_NOT_INSERTED);
	opts.no_sim = false;
	engine_new();
	open_device(4096);
}

TEST(qmi_over_mbim_listed)
{
	g_autoptr(MbimDeviceServiceElementArray) services = NULL;
	guint32 n = 0;

	opts.qmi_over_mbim = true;
	engine_new();
	open_device(4096);
	MbimMessage *resp = exchange(mbim_message_device_services_query_new(NULL));
	EXPECT_TRUE(mbim_message_device_services_response_parse(resp, &n, NULL, &services, NULL));
	EXPECT_EQ(n, 3);
	if (services && n == 3)
		EXPECT_EQ(mbim_uuid_to_service(&services[2]->device_service_id), MBIM_SERVICE_QMI);
	opts.qmi_over_mbim = false;
	engine_new();
	open_device(4096);
}

/* SMS: configuration, a message from the network indicated, read, deleted; a SUBMIT sent,
 * a DELIVER refused. */
TEST(sms)
{
	static const uint8_t deliver[] = { 0x00, 0x04, 0x0B, 0x91, 0x13, 0x46, 0x61,
					   0x00, 0x89, 0xF6, 0x00, 0x00, 0x20, 0x80,
					   0x62, 0x91, 0x73, 0x14, 0x08, 0x01, 0x31 };
	MbimSmsStorageState state;
	MbimSmsFormat format;
	guint32 max = 0, n = 0, ref = 0, index = 0;
	MbimSmsStatusFlag flag = MBIM_SMS_STATUS_FLAG_NONE;

	MbimMessage *resp = exchange(mbim_message_sms_configuration_query_new(NULL));
	EXPECT_TRUE(mbim_message_sms_configuration_response_parse(resp, &state, &format, &max, NULL,
								  NULL, NULL));
	EXPECT_EQ(state, MBIM_SMS_STORAGE_STATE_INITIALIZED);
	EXPECT_EQ(format, MBIM_SMS_FORMAT_PDU);
	EXPECT_EQ(max, SIM_MBIM_SMS_MAX);

	g_ptr_array_set_size(sent, 0);
	EXPECT_EQ(sim_mbim_deliver_sms(m, deliver, sizeof(deliver)), 1);
	EXPECT_EQ(sent->len, 1);
	MbimMessage *ind = sent->len ? g_ptr_array_index(sent, 0) : NULL;
	EXPECT_TRUE(ind && mbim_message_sms_message_store_status_notification_parse(ind, &flag,
										    &index, NULL));
	EXPECT_EQ(flag, MBIM_SMS_STATUS_FLAG_NEW_MESSAGE);
	EXPECT_EQ(index, 1u);

	MbimSmsPduReadRecordArray *records = NULL;
	resp = exchange(
		mbim_message_sms_read_query_new(MBIM_SMS_FORMAT_PDU, MBIM_SMS_FLAG_ALL, 0, NULL));
	EXPECT_TRUE(mbim_message_sms_read_response_parse(resp, NULL, &n, &records, NULL, NULL));
	EXPECT_EQ(n, 1u);
	if (records && n == 1) {
		EXPECT_EQ(records[0]->message_index, 1u);
		EXPECT_EQ(records[0]->message_status, MBIM_SMS_STATUS_NEW);
		EXPECT_EQ(records[0]->pdu_data_size, sizeof(deliver));
		EXPECT_TRUE(memcmp(records[0]->pdu_data, deliver, sizeof(deliver)) == 0);
	}
	if (records)
		mbim_sms_pdu_read_record_array_free(records);
	resp = exchange(
		mbim_message_sms_read_query_new(MBIM_SMS_FORMAT_CDMA, MBIM_SMS_FLAG_ALL, 0, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_INVALID_PARAMETERS);

	resp = exchange(mbim_message_sms_delete_set_new(MBIM_SMS_FLAG_INDEX, 1, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	resp = exchange(mbim_message_sms_delete_set_new(MBIM_SMS_FLAG_INDEX, 1, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_INVALID_MEMORY_INDEX);

	uint8_t submit[] = { 0x00, 0x01, 0x00, 0x01, 0x91, 0xF1, 0x00, 0x00, 0x01, 0x31 };
	MbimSmsPduSendRecord rec = { .pdu_data_size = sizeof(submit), .pdu_data = submit };
	resp = exchange(mbim_message_sms_send_set_new(MBIM_SMS_FORMAT_PDU, &rec, NULL, NULL));
	EXPECT_TRUE(mbim_message_sms_send_response_parse(resp, &ref, NULL));
	uint8_t bad[sizeof(deliver)];
	memcpy(bad, deliver, sizeof(bad));
	rec = (MbimSmsPduSendRecord){ .pdu_data_size = sizeof(bad), .pdu_data = bad };
	resp = exchange(mbim_message_sms_send_set_new(MBIM_SMS_FORMAT_PDU, &rec, NULL, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_INVALID_PARAMETERS);
	EXPECT_EQ(sim_mbim_get_stats(m)->sms_sent, 1u);
}

static MbimMessage *connect_set(uint32_t session, MbimActivationCommand cmd, const char *apn,
				const char *user, const char *password, MbimAuthProtocol auth,
				MbimContextIpType ip_type)
{
	return exchange(mbim_message_connect_set_new(
		session, cmd, apn, user, password, MBIM_COMPRESSION_NONE, auth, ip_type,
		mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), NULL));
}

/* A CONNECT answer: status, and what its MBIM_CONNECT_INFO says. */
static void expect_connect(MbimMessage *resp, uint32_t status, uint32_t session,
			   MbimActivationState state, MbimContextIpType ip_type, uint32_t nw_error)
{
	guint32 sid = 99, nw = 99;
	MbimActivationState st = 99;
	MbimContextIpType ipt = 99;

	EXPECT_EQ(status_of(resp), status);
	EXPECT_TRUE(
		mbim_message_connect_response_parse(resp, &sid, &st, NULL, &ipt, NULL, &nw, NULL));
	EXPECT_EQ(sid, session);
	EXPECT_EQ(st, state);
	EXPECT_EQ(ipt, ip_type);
	EXPECT_EQ(nw, nw_error);
}

static void expect_ip_configuration(uint32_t session, const char *v4, unsigned v4len,
				    const char *gw4, const char *v6, unsigned v6len,
				    const char *gw6)
{
	g_autoptr(MbimIPv4ElementArray) a4 = NULL;
	g_autoptr(MbimIPv6ElementArray) a6 = NULL;
	g_autofree MbimIPv4 *dns4 = NULL;
	g_autofree MbimIPv6 *dns6 = NULL;
	const MbimIPv4 *g4 = NULL;
	const MbimIPv6 *g6 = NULL;
	MbimIPConfigurationAvailableFlag f4 = 0, f6 = 0;
	guint32 sid = 99, n4 = 0, n6 = 0, nd4 = 0, nd6 = 0, mtu4 = 0, mtu6 = 0;
	char buf[INET6_ADDRSTRLEN];

	MbimMessage *resp = exchange(mbim_message_ip_configuration_query_new(
		session, 0, 0, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, 0, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	EXPECT_TRUE(mbim_message_ip_configuration_response_parse(resp, &sid, &f4, &f6, &n4, &a4,
								 &n6, &a6, &g4, &g6, &nd4, &dns4,
								 &nd6, &dns6, &mtu4, &mtu6, NULL));
	EXPECT_EQ(sid, session);
	if (v4) {
		EXPECT_EQ(f4, MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_ADDRESS |
				      MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_GATEWAY |
				      MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_DNS |
				      MBIM_IP_CONFIGURATION_AVAILABLE_FLAG_MTU);
		EXPECT_EQ(n4, 1);
		if (a4 && n4 == 1) {
			EXPECT_EQ(a4[0]->on_link_prefix_length, v4len);
			EXPECT_STR_EQ(
				inet_ntop(AF_INET, a4[0]->ipv4_address.addr, buf, sizeof(buf)), v4);
		}
		EXPECT_TRUE(g4 != NULL);
		if (g4)
			EXPECT_STR_EQ(inet_ntop(AF_INET, g4->addr, buf, sizeof(buf)), gw4);
		EXPECT_EQ(nd4, 2);
		if (dns4 && nd4 == 2)
			EXPECT_STR_EQ(inet_ntop(AF_INET, dns4[0].addr, buf, sizeof(buf)),
				      SIM_QMI_DNS4_PRIMARY);
		EXPECT_EQ(mtu4, 1428);
	} else {
		EXPECT_EQ(f4, 0);
		EXPECT_EQ(n4, 0);
		EXPECT_EQ(mtu4, 0);
	}
	if (v6) {
		EXPECT_EQ(f6, 0x0f);
		EXPECT_EQ(n6, 1);
		if (a6 && n6 == 1) {
			EXPECT_EQ(a6[0]->on_link_prefix_length, v6len);
			EXPECT_STR_EQ(
				inet_ntop(AF_INET6, a6[0]->ipv6_address.addr, buf, sizeof(buf)),
				v6);
		}
		EXPECT_TRUE(g6 != NULL);
		if (g6)
			EXPECT_STR_EQ(inet_ntop(AF_INET6, g6->addr, buf, sizeof(buf)), gw6);
		EXPECT_EQ(nd6, 2);
		if (dns6 && nd6 == 2)
			EXPECT_STR_EQ(inet_ntop(AF_INET6, dns6[1].addr, buf, sizeof(buf)),
				      SIM_QMI_DNS6_SECONDARY);
		EXPECT_EQ(mtu6, 1428);
	} else {
		EXPECT_EQ(f6, 0);
		EXPECT_EQ(n6, 0);
	}
}

TEST(connect)
{
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);
	MbimMessage *resp;

	/* Session 0 (mux 1) IPv4, session 1 (mux 2) IPv6. */
	resp = connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 0, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	resp = connect_set(1, MBIM_ACTIVATION_COMMAND_ACTIVATE, "", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV6);
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 1, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV6, 0);
	EXPECT_TRUE(sim_mbim_session_active(m, 0));
	EXPECT_TRUE(sim_mbim_session_active(m, 1));
	EXPECT_TRUE(!sim_mbim_session_active(m, 2));
	EXPECT_EQ(st->mbim_sessions_started, 2);

	/* CONNECT query per session. */
	resp = exchange(mbim_message_connect_query_new(1, 0, 0, 0, MBIM_UUID_INVALID, 0, NULL));
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 1, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV6, 0);
	resp = exchange(mbim_message_connect_query_new(5, 0, 0, 0, MBIM_UUID_INVALID, 0, NULL));
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 5, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_DEFAULT, 0);

	/* IP_CONFIGURATION: the mux's addresses, gateways, DNS, MTU; only the session's family. */
	expect_ip_configuration(0, "192.0.2.2", 24, "192.0.2.1", NULL, 0, NULL);
	expect_ip_configuration(1, NULL, 0, NULL, "2001:db8:2::10", 64, "2001:db8:2::1");
	resp = exchange(mbim_message_ip_configuration_query_new(
		2, 0, 0, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, 0, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_CONTEXT_NOT_ACTIVATED);

	/* The same session again: refused, the context stays. */
	resp = connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	expect_connect(resp, MBIM_STATUS_ERROR_FAILURE, 0, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	EXPECT_TRUE(sim_mbim_session_active(m, 0));

	/* Wrong APN: FAILURE with nw_error 27; wrong credentials: 29; both on session 2. */
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_ACTIVATE, "nosuchapn", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	expect_connect(resp, MBIM_STATUS_ERROR_FAILURE, 2, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, MBIM_NW_ERROR_MISSING_OR_UNKNOWN_APN);
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_ACTIVATE, "corp", "alice", "wrong",
			   MBIM_AUTH_PROTOCOL_CHAP, MBIM_CONTEXT_IP_TYPE_IPV4);
	expect_connect(resp, MBIM_STATUS_ERROR_FAILURE, 2, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, MBIM_NW_ERROR_USER_AUTHENTICATION_FAILED);
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_ACTIVATE, "CORP", "alice", "s3cret",
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	expect_connect(resp, MBIM_STATUS_ERROR_FAILURE, 2, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, MBIM_NW_ERROR_USER_AUTHENTICATION_FAILED);
	/* Mux 3 has IPv4 only. */
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV6);
	expect_connect(resp, MBIM_STATUS_ERROR_FAILURE, 2, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV6, MBIM_NW_ERROR_PDP_TYPE_IPV4_ONLY_ALLOWED);
	/* No mux 9 for session 8. */
	resp = connect_set(8, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	expect_connect(resp, MBIM_STATUS_ERROR_FAILURE, 8, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, MBIM_NW_ERROR_INSUFFICIENT_RESOURCES);
	EXPECT_EQ(st->mbim_sessions_failed, 6);

	/* The right credentials, dual stack asked: what mux 3 has. */
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_ACTIVATE, "corp", "alice", "s3cret",
			   MBIM_AUTH_PROTOCOL_PAP, MBIM_CONTEXT_IP_TYPE_IPV4V6);
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 2, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	expect_ip_configuration(2, "198.51.100.66", 26, "198.51.100.65", NULL, 0, NULL);

	/* Three active of three: the fourth is MAX_ACTIVATED_CONTEXTS. */
	resp = connect_set(3, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_MAX_ACTIVATED_CONTEXTS);

	/* Deactivate session 2, and again: CONTEXT_NOT_ACTIVATED. */
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_DEACTIVATE, NULL, NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_DEFAULT);
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 2, MBIM_ACTIVATION_STATE_DEACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	resp = connect_set(2, MBIM_ACTIVATION_COMMAND_DEACTIVATE, NULL, NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_DEFAULT);
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_CONTEXT_NOT_ACTIVATED);

	/* The network drops sessions 0 and 1: an INDICATE_STATUS CONNECT each. */
	g_ptr_array_set_size(sent, 0);
	EXPECT_EQ(sim_mbim_drop_all(m), 2);
	EXPECT_EQ(sent->len, 2);
	for (guint i = 0; i < sent->len; i++) {
		MbimMessage *ind = g_ptr_array_index(sent, i);
		guint32 sid = 99, nw = 0;
		MbimActivationState state = 0;
		EXPECT_EQ(mbim_message_get_message_type(ind), MBIM_MESSAGE_TYPE_INDICATE_STATUS);
		EXPECT_EQ(mbim_message_indicate_status_get_service(ind),
			  MBIM_SERVICE_BASIC_CONNECT);
		EXPECT_EQ(mbim_message_indicate_status_get_cid(ind),
			  MBIM_CID_BASIC_CONNECT_CONNECT);
		EXPECT_TRUE(mbim_message_connect_notification_parse(ind, &sid, &state, NULL, NULL,
								    NULL, &nw, NULL));
		EXPECT_EQ(sid, i);
		EXPECT_EQ(state, MBIM_ACTIVATION_STATE_DEACTIVATED);
		EXPECT_EQ(nw, SIM_MBIM_NW_REGULAR_DEACTIVATION);
	}
	EXPECT_EQ(st->mbim_sessions_dropped, 2);
	EXPECT_TRUE(!sim_mbim_session_active(m, 0));

	/* Detach: a CONNECT is then PACKET_SERVICE_DETACHED; radio off: RADIO_POWER_OFF. */
	resp = exchange(
		mbim_message_packet_service_set_new(MBIM_PACKET_SERVICE_ACTION_DETACH, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	resp = connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_PACKET_SERVICE_DETACHED);
	exchange(mbim_message_packet_service_set_new(MBIM_PACKET_SERVICE_ACTION_ATTACH, NULL));
	resp = exchange(mbim_message_radio_state_set_new(MBIM_RADIO_SWITCH_STATE_OFF, NULL));
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_NONE);
	resp = connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
	EXPECT_EQ(status_of(resp), MBIM_STATUS_ERROR_RADIO_POWER_OFF);
	exchange(mbim_message_radio_state_set_new(MBIM_RADIO_SWITCH_STATE_ON, NULL));
	resp = connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_DEFAULT);
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 0, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4V6, 0);
	expect_ip_configuration(0, "192.0.2.2", 24, "192.0.2.1", "2001:db8:1::2", 64,
				"2001:db8:1::1");
}

/* Raw bytes to the engine. */
static int feed_raw(const uint8_t *buf, size_t len)
{
	g_ptr_array_set_size(sent, 0);
	return sim_mbim_handle(m, buf, len);
}

static MbimProtocolError function_error(void)
{
	if (sent->len != 1)
		return 0xff;
	MbimMessage *e = g_ptr_array_index(sent, 0);
	if (mbim_message_get_message_type(e) != MBIM_MESSAGE_TYPE_FUNCTION_ERROR)
		return 0xfe;
	return mbim_message_error_get_error_status_code(e);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static MbimMessage *connect_query(uint32_t session)
{
	return exchange(mbim_message_connect_query_new(
		session, MBIM_ACTIVATION_STATE_UNKNOWN, MBIM_VOICE_CALL_STATE_NONE,
		MBIM_CONTEXT_IP_TYPE_DEFAULT,
		mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), 0, NULL));
}

/*
 * A host that lost track of an open function (its process restarted) finds its sessions by
 * asking, while a second OPEN closes the function first and ends them (MBIM 1.0 §9.3.1): only
 * OPEN_DONE is sent, no CLOSE_DONE and no indication.
 */
TEST(reopen)
{
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);

	expect_connect(connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", "", "",
				   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4),
		       MBIM_STATUS_ERROR_NONE, 0, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	/* Still open: a query is answered, the session is there. */
	expect_connect(connect_query(0), MBIM_STATUS_ERROR_NONE, 0, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	EXPECT_EQ(st->mbim_opens, 1);
	EXPECT_EQ(st->mbim_reopens, 0);

	MbimMessage *resp = open_device(4096);
	EXPECT_EQ(mbim_message_get_message_type(resp), MBIM_MESSAGE_TYPE_OPEN_DONE);
	EXPECT_TRUE(mbim_message_open_done_get_result(resp, NULL));
	EXPECT_EQ(st->mbim_opens, 2);
	EXPECT_EQ(st->mbim_reopens, 1);
	EXPECT_EQ(st->mbim_sessions_ended_by_host, 1);
	EXPECT_TRUE(!sim_mbim_session_active(m, 0));
	expect_connect(connect_query(0), MBIM_STATUS_ERROR_NONE, 0,
		       MBIM_ACTIVATION_STATE_DEACTIVATED, MBIM_CONTEXT_IP_TYPE_DEFAULT, 0);

	/* CLOSE ends them as well, and the function answers no command until opened. */
	expect_connect(connect_set(1, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", "", "",
				   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4V6),
		       MBIM_STATUS_ERROR_NONE, 1, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4V6, 0);
	resp = exchange(mbim_message_close_new(0));
	EXPECT_EQ(mbim_message_get_message_type(resp), MBIM_MESSAGE_TYPE_CLOSE_DONE);
	EXPECT_EQ(st->mbim_sessions_ended_by_host, 2);
	resp = exchange(mbim_message_radio_state_query_new(NULL));
	EXPECT_EQ(mbim_message_get_message_type(resp), MBIM_MESSAGE_TYPE_FUNCTION_ERROR);
	EXPECT_EQ(mbim_message_error_get_error_status_code(resp), MBIM_PROTOCOL_ERROR_NOT_OPENED);
	resp = open_device(4096);
	EXPECT_EQ(st->mbim_reopens, 1); /* closed before: no out-of-step OPEN */
}

TEST(malformed)
{
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);
	uint64_t malformed = st->mbim_malformed;
	uint8_t buf[256];
	guint32 len = 0;

	/* Too short for a header: counted, not answered. */
	EXPECT_EQ(feed_raw((const uint8_t *)"\x03\x00\x00\x00", 4), -EBADMSG);
	EXPECT_EQ(sent->len, 0);

	/* A COMMAND whose MessageLength lies. */
	MbimMessage *req = mbim_message_device_caps_query_new(NULL);
	mbim_message_set_transaction_id(req, 77);
	const guint8 *raw = mbim_message_get_raw(req, &len, NULL);
	memcpy(buf, raw, len);
	mbim_message_unref(req);
	put32(buf + 4, len + 4);
	EXPECT_EQ(feed_raw(buf, len), -EBADMSG);
	EXPECT_EQ(function_error(), MBIM_PROTOCOL_ERROR_LENGTH_MISMATCH);
	EXPECT_EQ(mbim_message_get_transaction_id(g_ptr_array_index(sent, 0)), 77);

	/* An unknown message type. */
	put32(buf, 0x00000009);
	put32(buf + 4, len);
	EXPECT_EQ(feed_raw(buf, len), -EBADMSG);
	EXPECT_EQ(function_error(), MBIM_PROTOCOL_ERROR_UNKNOWN);

	/* A second fragment with no first one. */
	put32(buf, MBIM_MESSAGE_TYPE_COMMAND);
	put32(buf + 12, 2);
	put32(buf + 16, 1);
	EXPECT_EQ(feed_raw(buf, len), -EBADMSG);
	EXPECT_EQ(function_error(), MBIM_PROTOCOL_ERROR_FRAGMENT_OUT_OF_SEQUENCE);

	/* CONNECT set with an information buffer shorter than its fixed part. */
	req = mbim_message_command_new(78, MBIM_SERVICE_BASIC_CONNECT,
				       MBIM_CID_BASIC_CONNECT_CONNECT,
				       MBIM_MESSAGE_COMMAND_TYPE_SET);
	mbim_message_command_append(req, (const guint8 *)"\0\0\0\0\1\0\0\0", 8);
	EXPECT_EQ(status_of(exchange(req)), MBIM_STATUS_ERROR_INVALID_PARAMETERS);

	EXPECT_EQ(st->mbim_malformed, malformed + 4);
}

/* The host's MaxControlTransfer of 64: answers come in fragments, commands may be sent so. */
TEST(fragments)
{
	const struct sim_mbim_stats *st = sim_mbim_get_stats(m);
	uint8_t whole[1024];
	size_t whole_len = 0;
	guint32 len = 0;

	EXPECT_TRUE(mbim_message_open_done_get_result(open_device(64), NULL));

	/* A CONNECT set of ~100 bytes in three fragments of at most 64. */
	MbimMessage *req = mbim_message_connect_set_new(
		0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "corp", "alice", "s3cret",
		MBIM_COMPRESSION_NONE, MBIM_AUTH_PROTOCOL_CHAP, MBIM_CONTEXT_IP_TYPE_IPV4,
		mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), NULL);
	mbim_message_set_transaction_id(req, 500);
	const guint8 *raw = mbim_message_get_raw(req, &len, NULL);
	const size_t first = 64, next = 64 - 20;
	uint32_t total = 1 + (uint32_t)((len - first + next - 1) / next);
	EXPECT_TRUE(total >= 2);
	size_t off = 0;
	for (uint32_t i = 0; i < total; i++) {
		uint8_t frag[64];
		size_t hdr = i == 0 ? 0 : 20, n = i == 0 ? first : next;
		if (off + n > len)
			n = len - off;
		memcpy(frag, raw, 20);
		memcpy(frag + hdr, raw + off, n);
		put32(frag + 4, (uint32_t)(hdr + n));
		put32(frag + 12, total);
		put32(frag + 16, i);
		off += n;
		EXPECT_EQ(feed_raw(frag, hdr + n), 0);
		if (i + 1 < total)
			EXPECT_EQ(sent->len, 0);
	}
	mbim_message_unref(req);

	/* The answer (36 bytes of MBIM_CONNECT_INFO behind 48 of headers) in two fragments;
	 * put together, libmbim parses it. */
	EXPECT_EQ(sent->len, 2);
	for (guint i = 0; i < sent->len; i++) {
		MbimMessage *f = g_ptr_array_index(sent, i);
		const guint8 *b = mbim_message_get_raw(f, &len, NULL);
		EXPECT_TRUE(len <= 64);
		EXPECT_EQ(b[12], sent->len);
		EXPECT_EQ(b[16], i);
		EXPECT_EQ(mbim_message_get_transaction_id(f), 500);
		size_t skip = i == 0 ? 0 : 20;
		memcpy(whole + whole_len, b + skip, len - skip);
		whole_len += len - skip;
	}
	put32(whole + 4, (uint32_t)whole_len);
	put32(whole + 12, 1);
	MbimMessage *resp = mbim_message_new(whole, (guint32)whole_len);
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, 0, MBIM_ACTIVATION_STATE_ACTIVATED,
		       MBIM_CONTEXT_IP_TYPE_IPV4, 0);
	mbim_message_unref(resp);
	EXPECT_TRUE(st->mbim_fragments_in >= 1);
	EXPECT_EQ(st->mbim_fragments_out, 1);

	/* OPEN clears the sessions, as a function reset does. */
	EXPECT_TRUE(mbim_message_open_done_get_result(open_device(4096), NULL));
	EXPECT_TRUE(!sim_mbim_session_active(m, 0));
}

/* ---- the sim over its socket ---- */

static struct ev_loop *loop;
static char sock_path[108];
static struct sim_options sim_opts; /* large: not on the stack */

struct sock_msg {
	int fd;
	uint8_t ep; /* wanted endpoint; others are skipped (kept in `skipped`) */
	uint8_t buf[HDR + TRANSPORT_MAX_TRANSFER];
	ssize_t len;
};

static bool sock_msg_arrived(void *data)
{
	struct sock_msg *msg = data;

	for (;;) {
		msg->len = recv(msg->fd, msg->buf, sizeof(msg->buf), MSG_DONTWAIT);
		if (msg->len < (ssize_t)HDR)
			return false;
		if (msg->buf[0] == msg->ep)
			return true;
	}
}

static struct sock_msg *sock_recv(int fd, uint8_t ep)
{
	static struct sock_msg msg;

	msg.fd = fd;
	msg.ep = ep;
	return test_run_until(loop, sock_msg_arrived, &msg) ? &msg : NULL;
}

static bool sock_send(int fd, uint8_t ep, const void *data, size_t len)
{
	static uint8_t buf[HDR + TRANSPORT_MAX_TRANSFER];

	*(struct transport_sim_header *)buf = (struct transport_sim_header){ .ep = ep };
	memcpy(buf + HDR, data, len);
	return send(fd, buf, HDR + len, 0) == (ssize_t)(HDR + len);
}

/* A control request over the socket and its answer, or NULL. */
static MbimMessage *sock_exchange(int fd, MbimMessage *req)
{
	guint32 len = 0;

	mbim_message_set_transaction_id(req, next_tid++);
	const guint8 *raw = mbim_message_get_raw(req, &len, NULL);
	EXPECT_TRUE(sock_send(fd, TRANSPORT_EP_CONTROL, raw, len));
	mbim_message_unref(req);
	struct sock_msg *msg = sock_recv(fd, TRANSPORT_EP_CONTROL);
	EXPECT_TRUE(msg != NULL);
	if (!msg)
		return NULL;
	MbimMessage *resp = mbim_message_new(msg->buf + HDR, (guint32)(msg->len - HDR));
	g_ptr_array_add(sent, resp); /* freed with the others */
	return resp;
}

/* A class request and its answer's flags (or -1); IN data into in (at most 64 bytes). */
static int class_request(int fd, uint8_t type, uint8_t request, uint16_t value, const void *data,
			 uint16_t len, uint8_t *in)
{
	uint8_t buf[sizeof(struct transport_sim_class_request) + 64];
	struct transport_sim_class_request rq = {
		.request_type = type,
		.request = request,
		.value = htole16(value),
		.length = htole16(type == 0xa1 ? 64 : len),
	};

	memcpy(buf, &rq, sizeof(rq));
	if (type == 0x21 && len)
		memcpy(buf + sizeof(rq), data, len);
	EXPECT_TRUE(sock_send(fd, TRANSPORT_EP_CLASS_REQUEST, buf,
			      sizeof(rq) + (type == 0x21 ? len : 0)));
	struct sock_msg *msg = sock_recv(fd, TRANSPORT_EP_CLASS_REQUEST);
	if (!msg || msg->len < (ssize_t)(HDR + sizeof(rq)))
		return -1;
	EXPECT_EQ(msg->buf[HDR + 1], request);
	if (in)
		memcpy(in, msg->buf + HDR + sizeof(rq), (size_t)msg->len - HDR - sizeof(rq));
	return msg->buf[1];
}

static uint16_t csum16(const uint8_t *p, size_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* IPv4/UDP src -> 198.51.100.1:5000, no UDP checksum; returns its length. */
static size_t udp4_packet(uint8_t *p, const char *src, const char *payload)
{
	size_t plen = strlen(payload), len = 28 + plen;

	memset(p, 0, 28);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 17;
	inet_pton(AF_INET, src, p + 12);
	inet_pton(AF_INET, "198.51.100.1", p + 16);
	uint16_t c = csum16(p, 20, 0);
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

/* IPv6/UDP src -> 2001:db8:ff::1 port 5000 with its (mandatory) checksum. */
static size_t udp6_packet(uint8_t *p, const char *src, const char *payload)
{
	size_t plen = strlen(payload), ulen = 8 + plen;
	uint32_t sum = 0;

	memset(p, 0, 48);
	p[0] = 0x60;
	p[4] = (uint8_t)(ulen >> 8);
	p[5] = (uint8_t)ulen;
	p[6] = 17;
	p[7] = 64;
	inet_pton(AF_INET6, src, p + 8);
	inet_pton(AF_INET6, "2001:db8:ff::1", p + 24);
	p[40] = 4000 >> 8;
	p[41] = 4000 & 0xff;
	p[42] = 5000 >> 8;
	p[43] = 5000 & 0xff;
	p[44] = (uint8_t)(ulen >> 8);
	p[45] = (uint8_t)ulen;
	memcpy(p + 48, payload, plen);
	/* Pseudo-header: addresses, length, next header. */
	for (size_t i = 8; i < 40; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	sum += (uint32_t)ulen + 17;
	uint16_t c = csum16(p + 40, ulen, sum);
	p[46] = (uint8_t)(c >> 8);
	p[47] = (uint8_t)c;
	return 40 + ulen;
}

static int udp_server(int family, const char *addr)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
		sa->sin_family = AF_INET;
		sa->sin_port = htons(5000);
		inet_pton(AF_INET, addr, &sa->sin_addr);
		sl = sizeof(*sa);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
		sa->sin6_family = AF_INET6;
		sa->sin6_port = htons(5000);
		inet_pton(AF_INET6, addr, &sa->sin6_addr);
		sl = sizeof(*sa);
	}
	if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, sl) < 0) {
		fprintf(stderr, "bind %s: %m\n", addr);
		close(fd);
		return -1;
	}
	return fd;
}

static void send_to(int fd, int family, const char *addr, const char *payload)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;

	if (family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
		sa->sin_family = AF_INET;
		sa->sin_port = htons(6000);
		inet_pton(AF_INET, addr, &sa->sin_addr);
		sl = sizeof(*sa);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
		sa->sin6_family = AF_INET6;
		sa->sin6_port = htons(6000);
		inet_pton(AF_INET6, addr, &sa->sin6_addr);
		sl = sizeof(*sa);
	}
	EXPECT_EQ(sendto(fd, payload, strlen(payload), 0, (struct sockaddr *)&ss, sl),
		  (ssize_t)strlen(payload));
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

static int sim_connect(struct sim *s, struct ntb_params *ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	strcpy(sa.sun_path, sock_path);
	EXPECT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	EXPECT_TRUE(test_run_until(loop, sim_connected, s));

	/* The descriptor: MBIM, and what GET_NTB_PARAMETERS says. */
	struct sock_msg *msg = sock_recv(fd, TRANSPORT_EP_DESCRIPTOR);
	EXPECT_TRUE(msg != NULL);
	size_t want = HDR + sizeof(struct transport_sim_descriptor) +
		      sizeof(struct transport_sim_mbim_descriptor);
	EXPECT_EQ(msg ? (size_t)msg->len : 0, want);
	if (msg && (size_t)msg->len == want) {
		struct transport_sim_descriptor d;
		struct transport_sim_mbim_descriptor md;
		memcpy(&d, msg->buf + HDR, sizeof(d));
		memcpy(&md, msg->buf + HDR + sizeof(d), sizeof(md));
		EXPECT_EQ(d.interface_number, sim_opts.quirks.data_interface);
		EXPECT_EQ(d.function, TRANSPORT_SIM_FUNCTION_MBIM);
		EXPECT_EQ(le16toh(md.max_control_message), SIM_MBIM_MAX_CONTROL_DEFAULT);
		EXPECT_EQ(le16toh(md.max_segment_size), SIM_MBIM_MAX_SEGMENT_DEFAULT);
		EXPECT_EQ(ntb_params_parse(md.ntb_parameters, sizeof(md.ntb_parameters), ret), 0);
		EXPECT_EQ(ret->fixed, 0);
	}
	return fd;
}

/* Every datagram of one IN NTB: (session, first payload byte) pairs; the count, -1 on error. */
static int parse_in(const uint8_t *buf, size_t len, enum ntb_format format, uint8_t *sessions,
		    size_t *lens, enum ntb_error *err)
{
	static uint8_t copy[TRANSPORT_MAX_TRANSFER];
	struct ntb_parser p;
	struct ntb_datagram d;
	int n = 0, r;

	memcpy(copy, buf, len);
	ntb_parse_init(&p, copy, len, format);
	while ((r = ntb_parse_next(&p, &d)) != 0) {
		if (r < 0) {
			if (err)
				*err = p.error;
			return -1;
		}
		if (n < 8) {
			sessions[n] = d.session;
			lens[n] = d.len;
		}
		n++;
	}
	return n;
}

/* An OUT NTB from the builder with these datagrams; sent as one bulk OUT transfer. */
static bool send_out_ntb(int fd, const struct ntb_params *params, enum ntb_format format,
			 const uint8_t *sessions, uint8_t *const *pkts, const size_t *lens,
			 unsigned n)
{
	static uint8_t buf[TRANSPORT_MAX_TRANSFER];
	struct ntb_builder b;
	size_t len = 0;

	if (ntb_build_init(&b, buf, sizeof(buf), params, format, 7) < 0)
		return false;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *dst;
		if (ntb_build_reserve(&b, sessions[i], lens[i], &dst) < 0)
			return false;
		memcpy(dst, pkts[i], lens[i]);
	}
	if (ntb_build_finish(&b, &len) < 0)
		return false;
	return sock_send(fd, TRANSPORT_EP_BULK_OUT, buf, len);
}

static void activate(int fd, uint32_t session, MbimContextIpType ip_type)
{
	MbimMessage *resp = sock_exchange(
		fd, mbim_message_connect_set_new(
			    session, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
			    MBIM_COMPRESSION_NONE, MBIM_AUTH_PROTOCOL_NONE, ip_type,
			    mbim_uuid_from_context_type(MBIM_CONTEXT_TYPE_INTERNET), NULL));
	expect_connect(resp, MBIM_STATUS_ERROR_NONE, session, MBIM_ACTIVATION_STATE_ACTIVATED,
		       ip_type, 0);
}

/*
 * One connection in one NTB format: class requests, control, data both ways with two
 * sessions, the strict uplink rules, a network drop.
 */
static void data_round(struct sim *s, enum ntb_format format)
{
	const struct sim_stats *st = sim_get_stats(s);
	struct ntb_params params;
	uint8_t in[64];
	int udp4 = -1, udp6 = -1;

	int fd = sim_connect(s, &params);
	EXPECT_EQ(params.formats, NTB_FORMATS_16 | NTB_FORMATS_32);
	EXPECT_EQ(params.out_remainder, 2);
	EXPECT_EQ(params.out_max_datagrams, 4);

	/* What cdc_ncm does before the data alternate setting. */
	uint64_t stalled = st->class_stalled;
	EXPECT_EQ(class_request(fd, 0xa1, 0x80, 0, NULL, 0, in), 0);
	struct ntb_params again;
	EXPECT_EQ(ntb_params_parse(in, NTB_PARAMS_SIZE, &again), 0);
	EXPECT_EQ(again.in_max_size, params.in_max_size);
	EXPECT_EQ(class_request(fd, 0x21, 0x8a, 0, NULL, 0, NULL), 0); /* CRC off */
	EXPECT_EQ(class_request(fd, 0x21, 0x8a, 1, NULL, 0, NULL), TRANSPORT_SIM_FLAG_STALL);
	EXPECT_EQ(class_request(fd, 0x21, 0x84, 2, NULL, 0, NULL), TRANSPORT_SIM_FLAG_STALL);
	EXPECT_EQ(class_request(fd, 0x21, 0x84, format == NTB_FORMAT_32, NULL, 0, NULL), 0);
	uint8_t size[4] = { 0x00, 0x01, 0x00, 0x00 }; /* 256: below 2048 */
	EXPECT_EQ(class_request(fd, 0x21, 0x86, 0, size, 4, NULL), TRANSPORT_SIM_FLAG_STALL);
	uint8_t size8[8] = { 0x00, 0x20, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00 }; /* 8192, 2 */
	EXPECT_EQ(class_request(fd, 0x21, 0x86, 0, size8, 8, NULL), 0);
	EXPECT_EQ(class_request(fd, 0xa1, 0x85, 0, NULL, 0, in), 0);
	EXPECT_EQ(in[0] | in[1] << 8, 8192);
	EXPECT_EQ(st->class_stalled, stalled + 3);
	EXPECT_EQ(sim_get_ntb_format(s), format);
	EXPECT_EQ(sim_get_ntb_in_size(s), 8192);

	/* OPEN and two sessions: 0 (mux 1) IPv4, 1 (mux 2) IPv6. */
	MbimMessage *resp = sock_exchange(fd, mbim_message_open_new(0, 4096));
	EXPECT_TRUE(resp && mbim_message_open_done_get_result(resp, NULL));
	activate(fd, 0, MBIM_CONTEXT_IP_TYPE_IPV4);
	activate(fd, 1, MBIM_CONTEXT_IP_TYPE_IPV6);
	/* Sessions up: the format can no longer change. */
	EXPECT_EQ(class_request(fd, 0x21, 0x84, 0, NULL, 0, NULL), TRANSPORT_SIM_FLAG_STALL);

	udp4 = udp_server(AF_INET, "198.51.100.1");
	udp6 = udp_server(AF_INET6, "2001:db8:ff::1");
	EXPECT_TRUE(udp4 >= 0 && udp6 >= 0);
	if (udp4 < 0 || udp6 < 0)
		goto out;

	/* Downlink: one packet for each session, within the flush interval: one NTB. */
	uint64_t ntbs = st->dl_aggregates, dl1 = st->mux[1].dl_packets, dl2 = st->mux[2].dl_packets;
	send_to(udp4, AF_INET, "192.0.2.2", "to-session-0");
	send_to(udp6, AF_INET6, "2001:db8:2::10", "to-session-1");
	struct sock_msg *msg = sock_recv(fd, TRANSPORT_EP_BULK_IN);
	EXPECT_TRUE(msg != NULL);
	if (msg) {
		uint8_t sessions[8] = { 0 };
		size_t lens[8] = { 0 };
		size_t len = (size_t)msg->len - HDR;
		EXPECT_TRUE(len <= 8192);
		EXPECT_EQ(get_le32(msg->buf + HDR),
			  format == NTB_FORMAT_32 ? NTB_NTH32_SIGN : NTB_NTH16_SIGN);
		EXPECT_EQ(parse_in(msg->buf + HDR, len, format, sessions, lens, NULL), 2);
		EXPECT_EQ(sessions[0], 0);
		EXPECT_EQ(lens[0], 28 + 12);
		EXPECT_EQ(sessions[1], 1);
		EXPECT_EQ(lens[1], 48 + 12);
	}
	EXPECT_EQ(st->dl_aggregates, ntbs + 1);
	EXPECT_EQ(st->mux[1].dl_packets, dl1 + 1);
	EXPECT_EQ(st->mux[2].dl_packets, dl2 + 1);

	/* The 8-byte SET_NTB_INPUT_SIZE said 2 datagrams per NTB: three packets, two NTBs. */
	ntbs = st->dl_aggregates;
	send_to(udp4, AF_INET, "192.0.2.2", "a");
	send_to(udp4, AF_INET, "192.0.2.2", "b");
	send_to(udp4, AF_INET, "192.0.2.2", "c");
	EXPECT_TRUE(test_wait_counter(loop, &st->dl_aggregates, ntbs + 2));
	msg = sock_recv(fd, TRANSPORT_EP_BULK_IN);
	if (msg) {
		uint8_t sessions[8];
		size_t lens[8];
		EXPECT_EQ(parse_in(msg->buf + HDR, (size_t)msg->len - HDR, format, sessions, lens,
				   NULL),
			  2);
	}

	/* Uplink: an NTB with both sessions, laid out as the descriptor says. */
	uint8_t p4[128], p6[128];
	uint8_t *pkts[5] = { p4, p6, p4, p4, p4 };
	size_t lens[5] = { udp4_packet(p4, "192.0.2.2", "up-session-0"),
			   udp6_packet(p6, "2001:db8:2::10", "up-session-1") };
	lens[2] = lens[3] = lens[4] = lens[0];
	uint8_t sess[5] = { 0, 1, 0, 0, 0 };
	struct udp_wait w4 = { .fd = udp4 }, w6 = { .fd = udp6 };
	EXPECT_TRUE(send_out_ntb(fd, &params, format, sess, pkts, lens, 2));
	EXPECT_TRUE(test_run_until(loop, udp_arrived, &w4));
	EXPECT_EQ(w4.len, 12);
	EXPECT_MEM_EQ(w4.buf, "up-session-0", 12);
	EXPECT_TRUE(test_run_until(loop, udp_arrived, &w6));
	EXPECT_EQ(w6.len, 12);
	EXPECT_MEM_EQ(w6.buf, "up-session-1", 12);

	/* Out of rule: a builder ignoring the remainder (2), and five datagrams of four. */
	uint64_t dropped = st->ul_ntb_dropped, ul0 = st->mux[1].ul_packets;
	uint64_t misaligned = st->ul_ntb_misaligned_datagram,
		 too_many = st->ul_ntb_too_many_datagrams;
	uint64_t bad_sign = st->ul_ntb_malformed[NTB_ERR_BAD_SIGNATURE];
	struct ntb_params lax = params;
	lax.out_remainder = 0;
	EXPECT_TRUE(send_out_ntb(fd, &lax, format, sess, pkts, lens, 2));
	EXPECT_TRUE(test_wait_counter(loop, &st->ul_ntb_misaligned_datagram, misaligned + 1));
	lax = params;
	lax.out_max_datagrams = 0;
	EXPECT_TRUE(send_out_ntb(fd, &lax, format, sess, pkts, lens, 5));
	EXPECT_TRUE(test_wait_counter(loop, &st->ul_ntb_too_many_datagrams, too_many + 1));
	/* The other format's NTB: a bad signature to this connection. */
	EXPECT_TRUE(send_out_ntb(fd, &params,
				 format == NTB_FORMAT_32 ? NTB_FORMAT_16 : NTB_FORMAT_32, sess,
				 pkts, lens, 1));
	EXPECT_TRUE(test_wait_counter(loop, &st->ul_ntb_malformed[NTB_ERR_BAD_SIGNATURE],
				      bad_sign + 1));
	EXPECT_EQ(st->ul_ntb_dropped, dropped + 3);
	EXPECT_EQ(st->mux[1].ul_packets, ul0);

	/* The network drops both sessions: an indication each, data stops. */
	EXPECT_EQ(sim_drop_sessions(s), 2);
	for (int i = 0; i < 2; i++) {
		msg = sock_recv(fd, TRANSPORT_EP_CONTROL);
		EXPECT_TRUE(msg != NULL);
		if (!msg)
			break;
		g_autoptr(MbimMessage) ind =
			mbim_message_new(msg->buf + HDR, (guint32)(msg->len - HDR));
		guint32 sid = 99, nw = 0;
		EXPECT_EQ(mbim_message_get_message_type(ind), MBIM_MESSAGE_TYPE_INDICATE_STATUS);
		EXPECT_TRUE(mbim_message_connect_notification_parse(ind, &sid, NULL, NULL, NULL,
								    NULL, &nw, NULL));
		EXPECT_EQ(sid, (guint32)i);
		EXPECT_EQ(nw, SIM_MBIM_NW_REGULAR_DEACTIVATION);
	}
	uint64_t gated = st->ul_no_session;
	EXPECT_TRUE(send_out_ntb(fd, &params, format, sess, pkts, lens, 1));
	EXPECT_TRUE(test_wait_counter(loop, &st->ul_no_session, gated + 1));

	/* The stats file names the MBIM counters. */
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);
	sim_print_stats(s, f);
	fclose(f);
	EXPECT_TRUE(text && strstr(text, "\nmbim_sessions_dropped="));
	EXPECT_TRUE(text && strstr(text, "\nul_ntb_malformed_bad_signature="));
	free(text);

out:
	if (udp4 >= 0)
		close(udp4);
	if (udp6 >= 0)
		close(udp6);
	close(fd);
}

static bool sim_disconnected(void *data)
{
	return !sim_is_connected(data);
}

static void sim_base_options(void)
{
	char err[SIM_ERROR_MAX];

	sim_options_init(&sim_opts);
	strcpy(sim_opts.socket_path, sock_path);
	strcpy(sim_opts.netdev, "simmbim0");
	sim_opts.mbim = true;
	sim_opts.ntb.formats = NTB_FORMATS_16 | NTB_FORMATS_32;
	sim_opts.ntb.out_remainder = 2;
	sim_opts.ntb.out_max_datagrams = 4;
	sim_opts.flush_usec = 50000; /* both downlink packets land in one NTB */
	EXPECT_EQ(sim_options_add_net_address(&sim_opts, "198.51.100.1/24", err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_add_net_address(&sim_opts, "2001:db8:ff::1/64", err, sizeof(err)), 0);
	EXPECT_EQ(
		sim_options_add_mux(&sim_opts, "1=192.0.2.2/24,2001:db8:1::2/64", err, sizeof(err)),
		0);
	EXPECT_EQ(sim_options_add_mux(&sim_opts, "2=203.0.113.10/28,2001:db8:2::10/64", err,
				      sizeof(err)),
		  0);
}

static void check_sim_data(void)
{
	struct sim *s = NULL;

	sim_base_options();
	EXPECT_EQ(sim_new(loop, &sim_opts, &s), 0);
	if (!s)
		return;
	EXPECT_EQ(sim_start(s), 0);
	data_round(s, NTB_FORMAT_16);
	EXPECT_TRUE(test_run_until(loop, sim_disconnected, s));
	data_round(s, NTB_FORMAT_32);
	EXPECT_TRUE(test_run_until(loop, sim_disconnected, s));
	EXPECT_TRUE(sim_get_mbim_stats(s)->mbim_sessions_started == 4);
	sim_free(s);
}

/* The injected NTBs, each after a real one, as the codec sees them; with the TUN's offloads
 * (segments cut into a scratch buffer) or without (one packet per read). */
static void check_sim_injection(enum ntb_format format, bool offload)
{
	char err[SIM_ERROR_MAX];
	struct sim *s = NULL;
	struct ntb_params params;
	int udp4 = -1;

	sim_base_options();
	sim_opts.flush_usec = 0;
	sim_opts.offload = offload;
	sim_opts.inject_every = 1;
	EXPECT_EQ(sim_parse_inject("bad-signature,bad-block-length,ndp-loop,datagram-outside",
				   &sim_opts.inject, err, sizeof(err)),
		  0);
	EXPECT_EQ(sim_new(loop, &sim_opts, &s), 0);
	if (!s)
		return;
	EXPECT_EQ(sim_start(s), 0);
	const struct sim_stats *st = sim_get_stats(s);
	int fd = sim_connect(s, &params);
	EXPECT_EQ(class_request(fd, 0x21, 0x84, format == NTB_FORMAT_32, NULL, 0, NULL), 0);
	MbimMessage *resp = sock_exchange(fd, mbim_message_open_new(0, 4096));
	EXPECT_TRUE(resp && mbim_message_open_done_get_result(resp, NULL));
	activate(fd, 0, MBIM_CONTEXT_IP_TYPE_IPV4);
	udp4 = udp_server(AF_INET, "198.51.100.1");
	if (udp4 < 0)
		goto out;

	send_to(udp4, AF_INET, "192.0.2.2", "real");
	static const enum ntb_error expect[] = {
		_NTB_ERR_MAX, /* the real NTB */
		NTB_ERR_BAD_SIGNATURE, NTB_ERR_BAD_BLOCK_LENGTH,
		NTB_ERR_NDP_LOOP,      NTB_ERR_DATAGRAM_OUT_OF_RANGE,
	};
	for (unsigned i = 0; i < ARRAY_SIZE(expect); i++) {
		struct sock_msg *msg = sock_recv(fd, TRANSPORT_EP_BULK_IN);
		EXPECT_TRUE(msg != NULL);
		if (!msg)
			break;
		uint8_t sessions[8];
		size_t lens[8];
		enum ntb_error e = _NTB_ERR_MAX;
		int n = parse_in(msg->buf + HDR, (size_t)msg->len - HDR, format, sessions, lens,
				 &e);
		if (expect[i] == _NTB_ERR_MAX) {
			EXPECT_EQ(n, 1);
			EXPECT_EQ(sessions[0], 0);
			EXPECT_EQ(lens[0], 28 + 4);
		} else {
			EXPECT_EQ(n, -1);
			EXPECT_EQ(e, expect[i]);
		}
	}
	for (unsigned k = SIM_INJECT_BAD_SIGNATURE; k < _SIM_INJECT_MAX; k++)
		EXPECT_EQ(st->injected[k], 1);

out:
	if (udp4 >= 0)
		close(udp4);
	close(fd);
	test_run_until(loop, sim_disconnected, s);
	sim_free(s);
}

static void run_for(double seconds)
{
	double end = test_now() + seconds;
	while (test_now() < end)
		ev_run(loop, EVRUN_ONCE);
}

/*
 * A host that stops reading: the NTB being sent is parked, the packet read meanwhile waits
 * outside any NTB, the TUN is left alone; once the host reads again every NTB the sim
 * counted arrives whole, and traffic goes on (the marker).
 */
static void check_sim_backpressure(bool offload)
{
	static struct sock_msg msg;
	static char big[1401];
	struct sim *s = NULL;
	struct ntb_params params;
	int udp4 = -1;

	sim_base_options();
	sim_opts.flush_usec = 0;
	sim_opts.offload = offload;
	sim_opts.dl_max_datagrams = 3;
	EXPECT_EQ(sim_new(loop, &sim_opts, &s), 0);
	if (!s)
		return;
	EXPECT_EQ(sim_start(s), 0);
	const struct sim_stats *st = sim_get_stats(s);
	int fd = sim_connect(s, &params);
	MbimMessage *resp = sock_exchange(fd, mbim_message_open_new(0, 4096));
	EXPECT_TRUE(resp && mbim_message_open_done_get_result(resp, NULL));
	activate(fd, 0, MBIM_CONTEXT_IP_TYPE_IPV4);
	udp4 = udp_server(AF_INET, "198.51.100.1");
	if (udp4 < 0)
		goto out;

	memset(big, 'x', sizeof(big) - 1);
	double deadline = test_now() + TEST_WAIT_SECONDS;
	while (st->dl_send_blocked == 0 && test_now() < deadline) {
		for (int i = 0; i < 64; i++)
			send_to(udp4, AF_INET, "192.0.2.30", big);
		ev_run(loop, EVRUN_NOWAIT);
	}
	EXPECT_EQ(st->dl_send_blocked, 1);
	uint64_t ntbs = st->dl_aggregates;
	for (int i = 0; i < 16; i++)
		send_to(udp4, AF_INET, "192.0.2.30", big);
	run_for(0.02);
	EXPECT_EQ(st->dl_aggregates, ntbs);

	uint64_t datagrams = 0, messages = 0;
	bool marker = false, sent_marker = false;
	deadline = test_now() + TEST_WAIT_SECONDS;
	while (!marker && test_now() < deadline) {
		for (;;) {
			msg.len = recv(fd, msg.buf, sizeof(msg.buf), MSG_DONTWAIT);
			if (msg.len < 0)
				break;
			if (msg.buf[0] != TRANSPORT_EP_BULK_IN)
				continue;
			static uint8_t copy[TRANSPORT_MAX_TRANSFER];
			struct ntb_parser p;
			struct ntb_datagram d;
			int r, n = 0;
			memcpy(copy, msg.buf + HDR, (size_t)msg.len - HDR);
			ntb_parse_init(&p, copy, (size_t)msg.len - HDR, NTB_FORMAT_16);
			while ((r = ntb_parse_next(&p, &d)) == 1) {
				n++;
				marker |= d.len == 28 + 6 && memcmp(d.data + 28, "marker", 6) == 0;
			}
			EXPECT_EQ(r, 0);
			EXPECT_TRUE(n > 0 && n <= 3);
			datagrams += (uint64_t)n;
			messages++;
		}
		if (!sent_marker && messages > ntbs) {
			send_to(udp4, AF_INET, "192.0.2.31", "marker");
			sent_marker = true;
		}
		ev_run(loop, EVRUN_NOWAIT);
	}
	EXPECT_TRUE(marker);
	EXPECT_EQ(messages, st->dl_aggregates);
	EXPECT_EQ(datagrams, st->dl_datagrams);
	EXPECT_EQ(st->mux[1].dl_packets, st->dl_datagrams);

out:
	if (udp4 >= 0)
		close(udp4);
	close(fd);
	test_run_until(loop, sim_disconnected, s);
	sim_free(s);
}

static void check_sim_options(void)
{
	char err[SIM_ERROR_MAX];

	sim_base_options();
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), 0);
	sim_opts.ntb.out_divisor = 6;
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), -EINVAL);
	sim_opts.ntb.out_divisor = 4;
	sim_opts.ntb.out_remainder = 4;
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), -EINVAL);
	sim_opts.ntb.out_remainder = 0;
	sim_opts.ntb.in_max_size = 1024;
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), -EINVAL);
	sim_opts.ntb.in_max_size = 16384;
	/* QMAP injections are for QMI mode, NTB ones for MBIM mode. */
	EXPECT_EQ(sim_parse_inject("garbage", &sim_opts.inject, err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_parse_inject("ndp-loop", &sim_opts.inject, err, sizeof(err)), 0);
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), 0);
	sim_opts.mbim = false;
	EXPECT_EQ(sim_options_validate(&sim_opts, err, sizeof(err)), -EINVAL);
}

/*
 * The sim's cases run as root in a network namespace of their own, made by the first of them
 * (one for the process), with the sim's socket in a temporary directory.
 */
static char sim_dir[] = "/tmp/test-sim-mbim.XXXXXX";
static ev_timer tick;

static void sim_teardown(void)
{
	ev_timer_stop(loop, &tick);
	ev_loop_destroy(loop);
	unlink(sock_path);
	rmdir(sim_dir);
}

/* False (a failed check) if the environment cannot be made; skips without root. */
static bool sim_setup(void)
{
	int fd;

	if (loop)
		return true;
	if (geteuid() != 0)
		TEST_SKIP("the qmapd-sim part needs root");
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		TEST_SKIP("the qmapd-sim part needs /dev/net/tun: %s", strerror(errno));
	close(fd);
	if (unshare(CLONE_NEWNET) < 0)
		TEST_SKIP("the qmapd-sim part needs a network namespace: unshare: %s",
			  strerror(errno));
	if (!mkdtemp(sim_dir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		test_failures++;
		return false;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/sim.sock", sim_dir);
	loop = ev_loop_new(EVFLAG_AUTO);
	test_loop_tick(loop, &tick);
	atexit(sim_teardown);
	return true;
}

TEST(sim_options)
{
	if (sim_setup())
		check_sim_options();
}

TEST(sim_data)
{
	if (sim_setup())
		check_sim_data();
}

TEST(sim_injection_ntb16_offload)
{
	if (sim_setup())
		check_sim_injection(NTB_FORMAT_16, true);
}

TEST(sim_injection_ntb32)
{
	if (sim_setup())
		check_sim_injection(NTB_FORMAT_32, false);
}

TEST(sim_backpressure_offload)
{
	if (sim_setup())
		check_sim_backpressure(true);
}

TEST(sim_backpressure)
{
	if (sim_setup())
		check_sim_backpressure(false);
}

TEST(signal_state)
{
	guint32 rssi = 0, error_rate = 0;

	engine_new();
	open_device(4096);
	MbimMessage *resp = exchange(mbim_message_signal_state_query_new(NULL));
	EXPECT_TRUE(mbim_message_signal_state_response_parse(resp, &rssi, &error_rate, NULL, NULL,
							     NULL, NULL));
	EXPECT_EQ(rssi, SIM_MBIM_RSSI);
	EXPECT_EQ(error_rate, 99);
}

/* A SIM that is not initialized: its state answered, no identity, deregistered, and attach,
 * HOME_PROVIDER and CONNECT refused with the status modems give for it. */
TEST(sim_states)
{
	static const struct {
		const char *word;
		MbimSubscriberReadyState state;
		MbimStatusError status;
	} cases[] = {
		{ "sim-not-inserted", MBIM_SUBSCRIBER_READY_STATE_SIM_NOT_INSERTED,
		  MBIM_STATUS_ERROR_SIM_NOT_INSERTED },
		{ "device-locked", MBIM_SUBSCRIBER_READY_STATE_DEVICE_LOCKED,
		  MBIM_STATUS_ERROR_PIN_REQUIRED },
		{ "bad-sim", MBIM_SUBSCRIBER_READY_STATE_BAD_SIM, MBIM_STATUS_ERROR_BAD_SIM },
		{ "not-initialized", MBIM_SUBSCRIBER_READY_STATE_NOT_INITIALIZED,
		  MBIM_STATUS_ERROR_NOT_INITIALIZED },
	};
	uint32_t v = 0;

	EXPECT_EQ(sim_mbim_parse_sim_state("initialized", &v), 0);
	EXPECT_EQ(v, MBIM_SUBSCRIBER_READY_STATE_INITIALIZED);
	EXPECT_EQ(sim_mbim_parse_sim_state("locked", &v), -EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		MbimSubscriberReadyState ready;
		MbimRegisterState reg;
		g_autofree gchar *imsi = NULL, *iccid = NULL;

		EXPECT_EQ(sim_mbim_parse_sim_state(cases[i].word, &opts.subscriber_state), 0);
		engine_new();
		open_device(4096);
		MbimMessage *resp = exchange(mbim_message_subscriber_ready_status_query_new(NULL));
		EXPECT_TRUE(mbim_message_subscriber_ready_status_response_parse(
			resp, &ready, &imsi, &iccid, NULL, NULL, NULL, NULL));
		EXPECT_EQ(ready, cases[i].state);
		EXPECT_TRUE(imsi == NULL || imsi[0] == '\0');
		resp = exchange(mbim_message_register_state_query_new(NULL));
		EXPECT_TRUE(mbim_message_register_state_response_parse(
			resp, NULL, &reg, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
		EXPECT_EQ(reg, MBIM_REGISTER_STATE_DEREGISTERED);
		resp = exchange(mbim_message_home_provider_query_new(NULL));
		EXPECT_EQ(status_of(resp), cases[i].status);
		resp = exchange(mbim_message_packet_service_set_new(
			MBIM_PACKET_SERVICE_ACTION_ATTACH, NULL));
		EXPECT_EQ(status_of(resp), cases[i].status);
		resp = connect_set(0, MBIM_ACTIVATION_COMMAND_ACTIVATE, "internet", NULL, NULL,
				   MBIM_AUTH_PROTOCOL_NONE, MBIM_CONTEXT_IP_TYPE_IPV4);
		EXPECT_EQ(status_of(resp), cases[i].status);
		EXPECT_TRUE(!sim_mbim_session_active(m, 0));
	}
	opts.subscriber_state = MBIM_SUBSCRIBER_READY_STATE_INITIALIZED;
	engine_new();
	open_device(4096);
}
