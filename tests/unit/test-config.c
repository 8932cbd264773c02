/* SPDX-License-Identifier: MIT */
/*
 * config: a full file with every key, the defaults, each error (return value, file:line and
 * the quoted input in the message), config_parse_prefix(), files on disk, truncated input
 * that must fail cleanly rather than crash, and the run-time mux helpers (config_mux_set()
 * and config_mux_finish()), which must judge a value exactly as the file parser does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "test-case.h"

#define NAME "test.conf"

/* Any non-NULL value that a failed load must leave alone. */
static struct config *const untouched = (struct config *)&test_failures;

static const char full[] = "# a comment\n"
			   "; another\n"
			   "[device]\n"
			   "device = usb-path:1-1.2:4\n"
			   "qmap-version = 1\n"
			   "dl-max-size = 32768\n"
			   "rx-transfers = 64\n"
			   "ul-max-size = 8192\n"
			   "ul-max-datagrams = 16\n"
			   "max-packet-size = 1024\n"
			   "persist-devices = yes\n"
			   "uplink-rate = 19M\n"
			   "downlink-rate = 7600k\n"
			   "downlink-buffer = 1048576\n"
			   "control = none\n"
			   "control-link = /dev/cdc-wdm0\n"
			   "open-timeout = 40\n"
			   "control-socket = /run/qmapd/ctl.sock\n"
			   "admin-group = netdev\n"
			   "\n"
			   "[dbus]\n"
			   "enabled = yes\n"
			   "bus = session\n"
			   "\n"
			   "[mux.7]\n"
			   "interface = wwan7\n"
			   "apn = internet.example-1.com\n"
			   "ip-type = ipv6\n"
			   "allowed-auth = pap|chap\n"
			   "user = alice\n"
			   "password = s3cret !x\n"
			   "mtu = 1280\n"
			   "headroom = off\n"
			   "uplink-queue = fifo\n"
			   "codel-target = 500us\n"
			   "codel-interval = 1s\n"
			   "ipv6-address = 2001:db8:7::2/64\n"
			   "routes = 2001:db8:ff::/48, ::/0 64:ff9b::/96\n"
			   "route-metric = 4294967295\n"
			   "default-route = off\n"
			   "autoconnect = no\n"
			   "[mux.254]\n"
			   "ip-type = ipv4\n"
			   "mtu = 576\n"
			   "ipv4-address = 10.1.2.3\n"
			   "routes = 0.0.0.0/0\n";

static bool is_prefix(const struct config_prefix *p, int family, const char *addr,
		      unsigned prefixlen)
{
	uint8_t buf[16];

	if (p->family != family || p->prefixlen != prefixlen)
		return false;
	if (inet_pton(family, addr, buf) != 1)
		return false;
	return memcmp(&p->addr, buf, family == AF_INET ? 4 : 16) == 0;
}

/* The same muxes, byte for byte (each its own allocation). */
static bool muxes_equal(struct config_mux *const *a, struct config_mux *const *b)
{
	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		if (!a[id] != !b[id] || (a[id] && memcmp(a[id], b[id], sizeof(*a[id])) != 0))
			return false;
	return true;
}

static bool modems_equal(const struct config_modem *a, const struct config_modem *b)
{
	return memcmp(a->name, b->name, sizeof(a->name)) == 0 &&
	       memcmp(&a->device, &b->device, sizeof(a->device)) == 0 &&
	       muxes_equal(a->mux, b->mux);
}

static unsigned count_muxes(const struct config *c)
{
	unsigned n = 0;

	for (unsigned id = 0; id <= CONFIG_MUX_ID_MAX; id++)
		n += c->mux[id] != NULL;
	return n;
}

TEST(full)
{
	struct config *c = NULL;
	char err[CONFIG_ERROR_MAX] = "x";
	const struct config_mux *m;

	EXPECT_EQ(config_load_string(full, NAME, &c, err, sizeof(err)), 0);
	if (!c) {
		fprintf(stderr, "full config failed: %s\n", err);
		test_failures++;
		return;
	}
	EXPECT_STR_EQ(err, "");
	EXPECT_STR_EQ(c->path, NAME);

	EXPECT_STR_EQ(c->device.device, "usb-path:1-1.2:4");
	EXPECT_EQ(c->device.qmap_version, QMAP_V1);
	EXPECT_EQ(c->device.dl_max_size, 32768);
	EXPECT_EQ(c->device.rx_transfers, 64);
	EXPECT_EQ(c->device.ul_max_size, 8192);
	EXPECT_EQ(c->device.ul_max_datagrams, 16);
	EXPECT_EQ(c->device.max_packet_size, 1024);
	EXPECT_EQ(c->device.persist_devices, true);
	EXPECT_EQ(c->device.control, CONFIG_CONTROL_NONE);
	EXPECT_STR_EQ(c->device.control_link, "/dev/cdc-wdm0");
	EXPECT_STR_EQ(c->device.control_socket, "/run/qmapd/ctl.sock");
	EXPECT_STR_EQ(c->device.admin_group, "netdev");
	EXPECT_EQ(c->dbus.enabled, CONFIG_DBUS_ENABLED_YES);
	EXPECT_EQ(c->dbus.bus, CONFIG_DBUS_SESSION);
	EXPECT_EQ(c->dbus.legacy_line, 0);

	EXPECT_EQ(count_muxes(c), 2);
	m = c->mux[7];
	EXPECT_TRUE(m->present);
	EXPECT_EQ(m->id, 7);
	EXPECT_STR_EQ(m->interface, "wwan7");
	EXPECT_STR_EQ(m->apn, "internet.example-1.com");
	EXPECT_EQ(m->ip_type, CONFIG_IP_TYPE_IPV6);
	EXPECT_STR_EQ(m->allowed_auth, "pap|chap");
	EXPECT_STR_EQ(m->user, "alice");
	EXPECT_STR_EQ(m->password, "s3cret !x");
	EXPECT_EQ(m->mtu, 1280);
	EXPECT_EQ(m->headroom, CONFIG_HEADROOM_OFF);
	EXPECT_EQ(m->uplink_queue, CONFIG_UPLINK_QUEUE_FIFO);
	EXPECT_EQ(m->codel_target_us, 500);
	EXPECT_EQ(m->codel_interval_us, 1000000);
	EXPECT_EQ(c->device.uplink_rate, 19000000);
	EXPECT_EQ(c->device.downlink_rate, 7600000);
	EXPECT_EQ(c->device.downlink_rate_auto, false);
	EXPECT_EQ(c->device.downlink_buffer, 1048576);
	EXPECT_EQ(c->device.open_timeout, 40);
	EXPECT_EQ(m->ipv4_address.family, 0);
	EXPECT_TRUE(is_prefix(&m->ipv6_address, AF_INET6, "2001:db8:7::2", 64));
	EXPECT_EQ(m->n_routes, 3);
	EXPECT_TRUE(is_prefix(&m->routes[0], AF_INET6, "2001:db8:ff::", 48));
	EXPECT_TRUE(is_prefix(&m->routes[1], AF_INET6, "::", 0));
	EXPECT_TRUE(is_prefix(&m->routes[2], AF_INET6, "64:ff9b::", 96));
	EXPECT_EQ(m->route_metric, 4294967295u);
	EXPECT_EQ(m->default_route, false);
	EXPECT_EQ(m->autoconnect, false);

	m = c->mux[254];
	EXPECT_TRUE(m->present);
	EXPECT_EQ(m->id, 254);
	EXPECT_STR_EQ(m->interface, "qmap254");
	EXPECT_EQ(m->ip_type, CONFIG_IP_TYPE_IPV4);
	EXPECT_EQ(m->mtu, 576);
	EXPECT_TRUE(is_prefix(&m->ipv4_address, AF_INET, "10.1.2.3", 32));
	EXPECT_EQ(m->n_routes, 1);
	EXPECT_TRUE(is_prefix(&m->routes[0], AF_INET, "0.0.0.0", 0));
	EXPECT_EQ(m->autoconnect, true);

	EXPECT_PTR_EQ(config_free(c), NULL);
}

TEST(defaults)
{
	struct config *c = NULL;
	struct config d;
	char err[CONFIG_ERROR_MAX];
	const struct config_mux *m;

	config_init_defaults(&d);
	EXPECT_STR_EQ(d.device.device, "");
	EXPECT_EQ(count_muxes(&d), 0);
	EXPECT_EQ(d.discovery, false);
	EXPECT_EQ(d.n_exclude, 0);
	EXPECT_EQ(d.n_modems, 0);
	EXPECT_PTR_EQ(d.modem, NULL);
	EXPECT_EQ(d.device.downlink_rate, 0); /* off until the figures say otherwise */
	EXPECT_EQ(d.device.downlink_rate_auto, false);
	EXPECT_EQ(d.device.downlink_buffer, CONFIG_DOWNLINK_BUFFER_DEFAULT);
	EXPECT_EQ(d.device.open_timeout, 15); /* the wait before there was a key */

	EXPECT_EQ(config_load_string("[device]\ndevice=sim:/run/qmapd/sim.sock\n[mux.3]\n", NAME,
				     &c, err, sizeof(err)),
		  0);
	if (!c) {
		fprintf(stderr, "defaults config failed: %s\n", err);
		test_failures++;
		return;
	}
	EXPECT_STR_EQ(c->device.device, "sim:/run/qmapd/sim.sock");
	EXPECT_EQ(c->device.qmap_version, QMAP_V5);
	EXPECT_EQ(c->device.dl_max_size, CONFIG_DL_MAX_SIZE_DEFAULT);
	EXPECT_EQ(c->device.rx_transfers, CONFIG_RX_TRANSFERS_MIN);
	EXPECT_EQ(c->device.ul_max_size, CONFIG_UL_MAX_SIZE_DEFAULT);
	EXPECT_EQ(c->device.ul_max_datagrams, CONFIG_UL_MAX_DATAGRAMS_DEFAULT);
	EXPECT_EQ(c->device.max_packet_size, CONFIG_MAX_PACKET_SIZE_DEFAULT);
	EXPECT_EQ(c->device.persist_devices, false);
	EXPECT_EQ(c->device.control, CONFIG_CONTROL_QMI);
	EXPECT_STR_EQ(c->device.control_link, "/run/qmapd/qmi0");
	EXPECT_STR_EQ(c->device.control_socket, "/run/qmapd/control");
	EXPECT_STR_EQ(c->device.admin_group, "");
	EXPECT_EQ(c->dbus.enabled, CONFIG_DBUS_ENABLED_AUTO);
	EXPECT_EQ(c->dbus.bus, CONFIG_DBUS_SYSTEM);
	EXPECT_EQ(c->dbus.legacy_line, 0);

	/* An empty [mux.N] is a mux with every default. */
	EXPECT_EQ(count_muxes(c), 1);
	m = c->mux[3];
	EXPECT_TRUE(m->present);
	EXPECT_EQ(m->id, 3);
	EXPECT_STR_EQ(m->interface, "qmap3");
	EXPECT_STR_EQ(m->apn, "");
	EXPECT_EQ(m->ip_type, CONFIG_IP_TYPE_IPV4V6);
	EXPECT_STR_EQ(m->allowed_auth, "");
	EXPECT_STR_EQ(m->user, "");
	EXPECT_STR_EQ(m->password, "");
	EXPECT_EQ(m->mtu, CONFIG_MTU_DEFAULT);
	EXPECT_EQ(m->headroom, CONFIG_HEADROOM_AUTO);
	EXPECT_EQ(m->uplink_queue, CONFIG_UPLINK_QUEUE_FQ_CODEL);
	EXPECT_EQ(m->codel_target_us, 5000);
	EXPECT_EQ(m->codel_interval_us, 100000);
	EXPECT_EQ(m->ipv4_address.family, 0);
	EXPECT_EQ(m->ipv6_address.family, 0);
	EXPECT_EQ(m->n_routes, 0);
	EXPECT_EQ(m->route_metric, 0);
	EXPECT_EQ(m->default_route, false);
	EXPECT_EQ(m->autoconnect, true);
	config_free(c);

	EXPECT_STR_EQ(config_ip_type_to_string(CONFIG_IP_TYPE_IPV4), "ipv4");
	EXPECT_STR_EQ(config_ip_type_to_string(CONFIG_IP_TYPE_IPV6), "ipv6");
	EXPECT_STR_EQ(config_ip_type_to_string(CONFIG_IP_TYPE_IPV4V6), "ipv4v6");
	EXPECT_STR_EQ(config_headroom_to_string(CONFIG_HEADROOM_XDP), "xdp");
	EXPECT_STR_EQ(config_headroom_to_string(CONFIG_HEADROOM_OFF), "off");
	EXPECT_STR_EQ(config_headroom_to_string(CONFIG_HEADROOM_AUTO), "auto");
	EXPECT_STR_EQ(config_control_to_string(CONFIG_CONTROL_QMI), "qmi");
	EXPECT_STR_EQ(config_control_to_string(CONFIG_CONTROL_NONE), "none");
	EXPECT_STR_EQ(config_control_to_string(CONFIG_CONTROL_MBIM), "mbim");
	EXPECT_PTR_EQ(config_free(NULL), NULL);
}

/* Syntax inih accepts in ways that are easy to get wrong. */
TEST(syntax)
{
	static const char *const good[] = {
		/* CRLF, a UTF-8 BOM, indentation, ':' as separator, inline comments */
		"\xef\xbb\xbf[device]\r\ndevice = sim:/s\r\n",
		"  [device]  ; comment\n\tdevice : sim:/s ; comment\n",
		"[device]\ndevice = sim:/s\n[mux.1]\n  apn = a\n  user = b\n",
		"[device]\ndevice = sim:/s\npersist-devices = On\n",
	};
	struct config *c;
	char err[CONFIG_ERROR_MAX];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		c = NULL;
		EXPECT_EQ(config_load_string(good[i], NAME, &c, err, sizeof(err)), 0);
		if (!c) {
			fprintf(stderr, "good[%zu] failed: %s\n", i, err);
			continue;
		}
		EXPECT_STR_EQ(c->device.device, "sim:/s");
		if (i == 2) {
			/* indented lines are keys of their own, not continuations */
			EXPECT_STR_EQ(c->mux[1]->apn, "a");
			EXPECT_STR_EQ(c->mux[1]->user, "b");
		}
		if (i == 3)
			EXPECT_EQ(c->device.persist_devices, true);
		config_free(c);
	}

	/* A line of exactly 199 bytes fits inih's buffer; the value is checked on its own. */
	{
		char text[512];
		int n = snprintf(text, sizeof(text), "[device]\ndevice = sim:/%0*d\n", 199 - 14, 0);

		EXPECT_EQ(n, 9 + 199 + 1);
		c = untouched;
		EXPECT_EQ(config_load_string(text, NAME, &c, err, sizeof(err)), -EINVAL);
		EXPECT_PTR_EQ(c, untouched);
		EXPECT_TRUE(strstr(err, NAME ":2: value of 'device' in [device] too long"));
	}
}

/* Edges of what is accepted, each in a [mux.1] or [device] of its own. */
TEST(accepted)
{
	static const struct {
		const char *line;
		const char *key; /* a string field to compare, or NULL */
		const char *want;
	} cases[] = {
		{ "[mux.1]\nallowed-auth = none", "allowed-auth", "none" },
		{ "[mux.1]\nallowed-auth = chap|pap|mschapv2", "allowed-auth",
		  "chap|pap|mschapv2" },
		{ "[mux.1]\nallowed-auth =", "allowed-auth", "" },
		{ "[mux.1]\napn =", "apn", "" },
		{ "[mux.1]\napn = A-1.b2.C3", "apn", "A-1.b2.C3" },
		{ "[mux.1]\napn = "
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaa"
		  "aaaaaaaaaaaaaaaa",
		  "apn",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaa"
		  "aaaaaaaaaaaaaaaa" },
		{ "[mux.1]\ninterface = abcdefghijklmno", "interface", "abcdefghijklmno" },
		{ "[mux.1]\npassword = a=b;c#d", "password", "a=b;c#d" },
		{ "[mux.1]\nuser = a b", "user", "a b" },
		{ "[mux.1]\nip-type = ipv4\nmtu = 68", NULL, NULL },
		{ "[mux.1]\nroute-metric = 0", NULL, NULL },
		{ "[mux.1]\nroutes =", NULL, NULL },
		{ "[mux.1]\nroutes = 10.0.0.0/8,\t2001:db8::/32 ,192.0.2.0/24", NULL, NULL },
		{ "[mux.1]\ninterface = a\n[mux.2]\ninterface = b\n[mux.3]\ninterface = qmap4",
		  NULL, NULL },
		{ "device = usb:2c7c:0125", "device", "usb:2c7c:0125" },
		{ "qmap-version = 5\ndl-max-size = 65536\nrx-transfers = 256\nul-max-size = 2048\n"
		  "ul-max-datagrams = 1\nmax-packet-size = 64\npersist-devices = off",
		  NULL, NULL },
		{ "admin-group = _qmap-admins.x", "admin-group", "_qmap-admins.x" },
		{ "admin-group = host$", "admin-group", "host$" },
		{ "admin-group = abcdefghijklmnopqrstuvwxyz12345$", "admin-group",
		  "abcdefghijklmnopqrstuvwxyz12345$" },
		{ "admin-group =", "admin-group", "" },
		{ "control = qmi\ncontrol-link = /dev/wwan0qmi0", "control-link",
		  "/dev/wwan0qmi0" },
		/* 107 bytes: sun_path with its NUL */
		{ "control-socket = /"
		  "ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss"
		  "ssssssssssssssssssssssssss",
		  "control-socket",
		  "/sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss"
		  "s"
		  "ssssssssssssssssssssssssss" },
		{ "[mux.1]\nip-type = ipv4\ndefault-route = yes\nroutes = 10.0.0.0/8", NULL, NULL },
		{ "[mux.1]\ndefault-route = True\nautoconnect = 0", NULL, NULL },
		{ "device = usb-path:2-1.4", "device", "usb-path:2-1.4" },
	};
	char text[1024], err[CONFIG_ERROR_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c = NULL;
		const char *got = NULL;
		bool own_device = strncmp(cases[i].line, "device", 6) == 0;

		snprintf(text, sizeof(text), "[device]\n%s%s\n",
			 own_device ? "" : "device = sim:/s\n", cases[i].line);
		if (config_load_string(text, NAME, &c, err, sizeof(err)) != 0 || !c) {
			fprintf(stderr, "%s:%d: accepted case %zu failed: %s\n", __FILE__, __LINE__,
				i, err);
			test_failures++;
			continue;
		}
		if (cases[i].key) {
			const struct config_mux *m = c->mux[1];

			if (strcmp(cases[i].key, "allowed-auth") == 0)
				got = m->allowed_auth;
			else if (strcmp(cases[i].key, "apn") == 0)
				got = m->apn;
			else if (strcmp(cases[i].key, "interface") == 0)
				got = m->interface;
			else if (strcmp(cases[i].key, "password") == 0)
				got = m->password;
			else if (strcmp(cases[i].key, "user") == 0)
				got = m->user;
			else if (strcmp(cases[i].key, "device") == 0)
				got = c->device.device;
			else if (strcmp(cases[i].key, "admin-group") == 0)
				got = c->device.admin_group;
			else if (strcmp(cases[i].key, "control-link") == 0)
				got = c->device.control_link;
			else if (strcmp(cases[i].key, "control-socket") == 0)
				got = c->device.control_socket;
			EXPECT_STR_EQ(got, cases[i].want);
		}
		if (i == 12) {
			EXPECT_EQ(c->mux[1]->n_routes, 3);
			EXPECT_TRUE(is_prefix(&c->mux[1]->routes[2], AF_INET, "192.0.2.0", 24));
		}
		if (i == 15) {
			EXPECT_EQ(c->device.qmap_version, QMAP_V5);
			EXPECT_EQ(c->device.dl_max_size, 65536);
			EXPECT_EQ(c->device.rx_transfers, 256);
			EXPECT_EQ(c->device.ul_max_size, 2048);
			EXPECT_EQ(c->device.ul_max_datagrams, 1);
			EXPECT_EQ(c->device.max_packet_size, 64);
			EXPECT_EQ(c->device.persist_devices, false);
		}
		if (i == 22) {
			EXPECT_EQ(c->mux[1]->default_route, true);
			EXPECT_EQ(c->mux[1]->autoconnect, true);
		}
		if (i == 23) {
			EXPECT_EQ(c->mux[1]->default_route, true);
			EXPECT_EQ(c->mux[1]->autoconnect, false);
		}
		config_free(c);
	}
}

struct error_case {
	const char *text;
	const char *prefix; /* the message starts with this */
	const char *needle; /* and contains this */
};

#define DEV "[device]\ndevice = sim:/s\n"

static const struct error_case error_cases[] = {
	/* the style guide's example */
	{ DEV "[mux.2]\nip-type = ipv5\n", NAME ":4: ", "invalid ip-type 'ipv5' in [mux.2]" },
	/* structure */
	{ "device = sim:/s\n", NAME ":1: ", "key 'device' outside any section" },
	{ DEV "foo = bar\n", NAME ":3: ", "unknown key 'foo' in [device]" },
	{ DEV "apn = x\n", NAME ":3: ", "unknown key 'apn' in [device] (it belongs in [mux.N])" },
	{ DEV "[mux.1]\nmtu = 1500\nqmap-version = 1\n",
	  NAME ":5: ", "unknown key 'qmap-version' in [mux.1] (it belongs in [device])" },
	{ DEV "[mux.1]\nApn = x\n", NAME ":4: ", "unknown key 'Apn'" },
	{ DEV "[mux.1]\n= x\n", NAME ":4: ", "unknown key ''" },
	{ DEV "[mux.1]\napn = a\napn = b\n",
	  NAME ":5: ", "repeated key 'apn' in [mux.1] (first at line 4)" },
	{ "[device]\ndevice = sim:/a\ndevice = sim:/b\n", NAME ":3: ", "repeated key 'device'" },
	{ DEV "[foo]\n", NAME ":3: ", "unknown section 'foo'" },
	{ DEV "[]\n", NAME ":3: ", "unknown section ''" },
	{ DEV "[Device]\n", NAME ":3: ", "unknown section 'Device'" },
	{ DEV "[mux.0]\n", NAME ":3: ", "invalid section 'mux.0'" },
	{ DEV "[mux.255]\n", NAME ":3: ", "invalid section 'mux.255'" },
	{ DEV "[mux.x]\n", NAME ":3: ", "invalid section 'mux.x'" },
	{ DEV "[mux.01]\n", NAME ":3: ", "invalid section 'mux.01'" },
	{ DEV "[mux.]\n", NAME ":3: ", "invalid section 'mux.'" },
	{ DEV "[mux.1x]\n", NAME ":3: ", "invalid section 'mux.1x'" },
	{ DEV "[mux.+1]\n", NAME ":3: ", "invalid section 'mux.+1'" },
	{ DEV "[ mux.1 ]\n", NAME ":3: ", "unknown section ' mux.1 '" },
	{ DEV "[mux.3]\n[mux.4]\n[mux.3]\n",
	  NAME ":5: ", "repeated section [mux.3] (first at line 3)" },
	{ DEV "[device]\n", NAME ":3: ", "repeated section [device] (first at line 1)" },
	{ DEV "[mux.1\n", NAME ":3: ", "missing ']' in section header '[mux.1'" },
	{ DEV "[mux.1] apn = x\n", NAME ":3: ", "unexpected 'apn = x' after section header" },
	{ DEV "[mux.1]\napn internet\n",
	  NAME ":4: ", "expected 'key = value', got 'apn internet'" },
	{ DEV "[mux.1]\napn ; = x\n", NAME ":4: ", "expected 'key = value', got 'apn ; = x'" },
	/* an indented line is not a continuation of the previous value */
	{ DEV "[mux.1]\napn = a\n  b\n", NAME ":5: ", "expected 'key = value', got 'b'" },
	/* [device] */
	{ "[device]\ndevice = foo:/x\n", NAME ":2: ", "invalid device 'foo:/x' in [device]" },
	{ "[device]\ndevice = sim:\n", NAME ":2: ", "invalid device 'sim:' in [device]" },
	{ "[device]\ndevice =\n", NAME ":2: ", "invalid device '' in [device]" },
	{ "[device]\ndevice = sim:/a b\n", NAME ":2: ", "invalid device 'sim:/a b' in [device]" },
	{ "[device]\ndevice = usb:1-1.2\n",
	  NAME ":2: ", "invalid device 'usb:1-1.2' in [device]: expected usb:VID:PID[:IFACE]" },
	{ "[device]\ndevice = usb-path:/sys/bus/usb/devices/1-1\n", NAME ":2: ",
	  "invalid device 'usb-path:/sys/bus/usb/devices/1-1' in [device]: expected "
	  "usb-path:BUS-PORT" },
	{ "[device]\ndevice = usb:2c7c:0125:256\n", NAME ":2: ",
	  "invalid device 'usb:2c7c:0125:256' in [device]: expected an interface number" },
	{ DEV "qmap-version = 2\n", NAME ":3: ", "invalid qmap-version '2' in [device]" },
	{ DEV "qmap-version = 05\n", NAME ":3: ", "invalid qmap-version '05' in [device]" },
	{ DEV "dl-max-size = 1000\n",
	  NAME ":3: ", "invalid dl-max-size '1000' in [device]: must be 2048..65536" },
	{ DEV "dl-max-size = 65537\n", NAME ":3: ", "invalid dl-max-size '65537'" },
	{ DEV "dl-max-size = 16k\n", NAME ":3: ", "invalid dl-max-size '16k'" },
	{ DEV "dl-max-size = 016384\n", NAME ":3: ", "invalid dl-max-size '016384'" },
	{ DEV "dl-max-size = -1\n", NAME ":3: ", "invalid dl-max-size '-1'" },
	{ DEV "dl-max-size = +4096\n", NAME ":3: ", "invalid dl-max-size '+4096'" },
	{ DEV "dl-max-size =\n", NAME ":3: ", "invalid dl-max-size ''" },
	{ DEV "dl-max-size = 99999999999999999999\n",
	  NAME ":3: ", "invalid dl-max-size '99999999999999999999'" },
	{ DEV "rx-transfers = 8\n", NAME ":3: ",
	  "invalid rx-transfers '8' in [device]: at least 16 transfers are always kept in "
	  "flight" },
	{ DEV "rx-transfers = 0\n", NAME ":3: ", "at least 16 transfers are always kept" },
	{ DEV "rx-transfers = 257\n", NAME ":3: ",
	  "invalid rx-transfers '257' in [device]: must "
	  "be 16..256" },
	{ DEV "ul-max-size = 2047\n", NAME ":3: ", "invalid ul-max-size '2047'" },
	{ DEV "ul-max-size = 65537\n", NAME ":3: ", "invalid ul-max-size '65537'" },
	{ DEV "ul-max-datagrams = 0\n", NAME ":3: ", "invalid ul-max-datagrams '0'" },
	{ DEV "ul-max-datagrams = 65\n", NAME ":3: ", "invalid ul-max-datagrams '65'" },
	{ DEV "max-packet-size = 256\n", NAME ":3: ", "invalid max-packet-size '256'" },
	{ DEV "persist-devices = maybe\n", NAME ":3: ", "invalid persist-devices 'maybe'" },
	/* [mux.N] */
	{ DEV "[mux.1]\ninterface =\n", NAME ":4: ", "invalid interface '' in [mux.1]" },
	{ DEV "[mux.1]\ninterface = a/b\n", NAME ":4: ", "invalid interface 'a/b'" },
	{ DEV "[mux.1]\ninterface = a:b\n", NAME ":4: ", "invalid interface 'a:b'" },
	{ DEV "[mux.1]\ninterface = a b\n", NAME ":4: ", "invalid interface 'a b'" },
	{ DEV "[mux.1]\ninterface = qmap%d\n", NAME ":4: ",
	  "invalid interface 'qmap%d' in [mux.1]: 1 to 15 printable characters without blanks, "
	  "'/', ':' or '%'" },
	{ DEV "[mux.1]\ninterface = .\n", NAME ":4: ", "invalid interface '.'" },
	{ DEV "[mux.1]\ninterface = ..\n", NAME ":4: ", "invalid interface '..'" },
	{ DEV "[mux.1]\ninterface = abcdefghijklmnop\n",
	  NAME ":4: ", "invalid interface 'abcdefghijklmnop'" },
	{ DEV "[mux.1]\napn = inter net\n", NAME ":4: ", "invalid apn 'inter net' in [mux.1]" },
	{ DEV "[mux.1]\napn = a_b\n", NAME ":4: ", "invalid apn 'a_b'" },
	{ DEV "[mux.1]\napn = a..b\n", NAME ":4: ", "invalid apn 'a..b' in [mux.1]: empty label" },
	{ DEV "[mux.1]\napn = .a\n", NAME ":4: ", "invalid apn '.a'" },
	{ DEV "[mux.1]\napn = a.\n", NAME ":4: ", "invalid apn 'a.'" },
	{ DEV "[mux.1]\napn = "
	      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	      "aaaaaaaaaaaaaaaaaa\n",
	  NAME ":4: ", "longer than 100 characters" },
	{ DEV "[mux.1]\nip-type = IPv4\n", NAME ":4: ", "invalid ip-type 'IPv4'" },
	{ DEV "[mux.1]\nallowed-auth = eap\n",
	  NAME ":4: ", "invalid allowed-auth 'eap' in [mux.1]" },
	{ DEV "[mux.1]\nallowed-auth = pap|\n",
	  NAME ":4: ", "invalid allowed-auth 'pap|' in [mux.1]: empty method after '|'" },
	{ DEV "[mux.1]\nallowed-auth = |pap\n", NAME ":4: ", "invalid allowed-auth '|pap'" },
	{ DEV "[mux.1]\nallowed-auth = pap | chap\n",
	  NAME ":4: ", "invalid allowed-auth 'pap | chap'" },
	{ DEV "[mux.1]\nallowed-auth = pap|pap\n", NAME ":4: ", "method listed twice" },
	{ DEV "[mux.1]\nallowed-auth = none|pap\n",
	  NAME ":4: ", "'none' cannot be combined with other methods" },
	{ DEV "[mux.1]\nuser = a\x01z\n", NAME ":4: ", "invalid user 'a\\x01z' in [mux.1]" },
	{ DEV "[mux.1]\nuser = caf\xc3\xa9\n", NAME ":4: ", "invalid user 'caf\\xc3\\xa9'" },
	{ DEV "[mux.1]\nmtu = 67\n",
	  NAME ":4: ", "invalid mtu '67' in [mux.1]: must be 68..65535" },
	{ DEV "[mux.1]\nmtu = 65536\n", NAME ":4: ", "invalid mtu '65536'" },
	{ DEV "[mux.1]\nmtu = 1279\n",
	  NAME ":4: ", "invalid mtu '1279' in [mux.1]: ip-type 'ipv4v6' needs at least 1280" },
	/* the ip-type may come after the mtu: the error is still at the mtu */
	{ DEV "[mux.1]\nmtu = 1000\nip-type = ipv6\n[mux.2]\n",
	  NAME ":4: ", "invalid mtu '1000' in [mux.1]: ip-type 'ipv6' needs at least 1280" },
	{ DEV "[mux.1]\nheadroom = on\n", NAME ":4: ", "invalid headroom 'on' in [mux.1]" },
	{ DEV "[mux.1]\nuplink-queue = codel\n",
	  NAME ":4: ", "invalid uplink-queue 'codel' in [mux.1]: expected fq-codel or fifo" },
	{ DEV "[mux.1]\ncodel-target = 5\n",
	  NAME ":4: ", "invalid codel-target '5' in [mux.1]: expected a duration" },
	{ DEV "[mux.1]\ncodel-target = 2s\n",
	  NAME ":4: ", "invalid codel-target '2s' in [mux.1]: must be 100us..1000ms" },
	{ DEV "[mux.1]\ncodel-interval = 10ms\ncodel-target = 20ms\n",
	  NAME ":4: ", "codel-interval 10000us in [mux.1] is shorter than codel-target 20000us" },
	{ DEV "uplink-rate = 20Mbit\n",
	  NAME ":3: ", "invalid uplink-rate '20Mbit' in [device]: expected bits per second" },
	{ DEV "uplink-rate = 1k\n", NAME ":3: ", "invalid uplink-rate '1k' in [device]: must be" },
	{ DEV "downlink-rate = fast\n",
	  NAME ":3: ", "invalid downlink-rate 'fast' in [device]: expected bits per second" },
	{ DEV "downlink-rate = 200G\n",
	  NAME ":3: ", "invalid downlink-rate '200G' in [device]: must be 0 or 64k..100G" },
	{ DEV "downlink-buffer = 1000\n",
	  NAME ":3: ", "invalid downlink-buffer '1000' in [device]" },
	{ DEV "open-timeout = 0\n",
	  NAME ":3: ", "invalid open-timeout '0' in [device]: must be 1..300" },
	{ DEV "open-timeout = 301\n",
	  NAME ":3: ", "invalid open-timeout '301' in [device]: must be 1..300" },
	{ DEV "open-timeout = 3s\n", NAME ":3: ", "invalid open-timeout '3s' in [device]" },
	{ DEV "open-timeout = 03\n", NAME ":3: ", "invalid open-timeout '03' in [device]" },
	{ DEV "open-timeout = -1\n", NAME ":3: ", "invalid open-timeout '-1' in [device]" },
	{ DEV "open-timeout =\n", NAME ":3: ", "invalid open-timeout '' in [device]" },
	{ DEV "[mux.1]\nopen-timeout = 3\n",
	  NAME ":4: ", "unknown key 'open-timeout' in [mux.1] (it belongs in [device])" },
	{ DEV "[mux.1]\nipv4-address = 2001:db8::1\n",
	  NAME ":4: ", "invalid ipv4-address '2001:db8::1' in [mux.1]" },
	{ DEV "[mux.1]\nipv4-address = 192.0.2.1/33\n",
	  NAME ":4: ", "invalid ipv4-address '192.0.2.1/33'" },
	{ DEV "[mux.1]\nipv4-address = 192.0.2.1/\n",
	  NAME ":4: ", "invalid ipv4-address '192.0.2.1/'" },
	{ DEV "[mux.1]\nipv4-address = 192.0.2.1/24x\n",
	  NAME ":4: ", "invalid ipv4-address '192.0.2.1/24x'" },
	{ DEV "[mux.1]\nipv4-address = 192.0.2\n", NAME ":4: ", "invalid ipv4-address '192.0.2'" },
	{ DEV "[mux.1]\nipv6-address = 192.0.2.1\n",
	  NAME ":4: ", "invalid ipv6-address '192.0.2.1' in [mux.1]" },
	{ DEV "[mux.1]\nipv6-address = 2001:db8::1/129\n",
	  NAME ":4: ", "invalid ipv6-address '2001:db8::1/129'" },
	{ DEV "[mux.1]\nip-type = ipv6\nipv4-address = 192.0.2.1\n",
	  NAME ":5: ", "ipv4-address in [mux.1] needs ip-type ipv4 or ipv4v6, not 'ipv6'" },
	{ DEV "[mux.1]\nipv6-address = 2001:db8::1\nip-type = ipv4\n",
	  NAME ":4: ", "ipv6-address in [mux.1] needs ip-type ipv6 or ipv4v6, not 'ipv4'" },
	{ DEV "[mux.1]\nroutes = 10.0.0.0/8,,10.1.0.0/16\n",
	  NAME ":4: ", "invalid routes '10.0.0.0/8,,10.1.0.0/16' in [mux.1]: empty entry" },
	{ DEV "[mux.1]\nroutes = ,10.0.0.0/8\n", NAME ":4: ", "empty entry" },
	{ DEV "[mux.1]\nroutes = 10.0.0.0/8,\n", NAME ":4: ", "empty entry" },
	{ DEV "[mux.1]\nroutes = 10.0.0.0/8 bogus\n",
	  NAME ":4: ", "invalid route 'bogus' in [mux.1]" },
	{ DEV "[mux.1]\nroutes = 10.0.0.1/8\n",
	  NAME ":4: ", "invalid route '10.0.0.1/8' in [mux.1]: bits set after the prefix length" },
	{ DEV "[mux.1]\nroutes = 2001:db8::1/32\n", NAME ":4: ", "invalid route '2001:db8::1/32'" },
	{ DEV "[mux.1]\nroutes = 10.0.0.0/8 10.0.0.0/8\n",
	  NAME ":4: ", "route '10.0.0.0/8' listed twice in [mux.1]" },
	{ DEV "[mux.1]\nroutes = 10.1.0.0/16 10.2.0.0/16 10.3.0.0/16 10.4.0.0/16 10.5.0.0/16 "
	      "10.6.0.0/16 10.7.0.0/16 10.8.0.0/16 10.9.0.0/16\n",
	  NAME ":4: ", "too many routes in [mux.1] (at most 8)" },
	{ DEV "[mux.1]\nip-type = ipv4\nroutes = 10.0.0.0/8 2001:db8::/32\n",
	  NAME ":5: ", "IPv6 route in [mux.1] but ip-type is 'ipv4'" },
	{ DEV "[mux.1]\nroute-metric = 4294967296\n",
	  NAME ":4: ", "invalid route-metric '4294967296' in [mux.1]" },
	{ DEV "[mux.1]\nroute-metric = -1\n", NAME ":4: ", "invalid route-metric '-1'" },
	/* control plane keys */
	{ DEV "control = QMI\n",
	  NAME ":3: ", "invalid control 'QMI' in [device]: expected auto, qmi, mbim or none" },
	{ DEV "control-link = dev/cdc-wdm0\n", NAME ":3: ",
	  "invalid control-link 'dev/cdc-wdm0' in [device]: expected an absolute path" },
	{ DEV "control-link =\n", NAME ":3: ", "invalid control-link '' in [device]" },
	{ DEV "control-link = /dev/a b\n",
	  NAME ":3: ", "invalid control-link '/dev/a b' in [device]: blanks and control" },
	{ DEV "control-socket = /run/qmapd/\n",
	  NAME ":3: ", "invalid control-socket '/run/qmapd/' in [device]: expected a file" },
	{ DEV "control-socket = /"
	      "ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss"
	      "sssssssssssssssssssssssssss\n",
	  NAME ":3: ", "in [device]: longer than 107 bytes" },
	{ DEV "control-socket = /run/x\ncontrol-link = /run/x\n", NAME ": ",
	  "control-link and control-socket in [device] are both '/run/x'" },
	{ DEV "admin-group = 1234\n", NAME ":3: ", "invalid admin-group '1234' in [device]" },
	{ DEV "dbus = yes\n",
	  NAME ":3: ", "invalid dbus 'yes' in [device]: expected system, session or none" },
	/* [dbus], and the deprecated [device] dbus = beside it */
	{ DEV "[dbus]\nenabled = maybe\n",
	  NAME ":4: ", "invalid enabled 'maybe' in [dbus]: expected auto, yes or no" },
	{ DEV "[dbus]\nenabled =\n", NAME ":4: ", "invalid enabled '' in [dbus]" },
	{ DEV "[dbus]\nbus = none\n",
	  NAME ":4: ", "invalid bus 'none' in [dbus]: expected system or session" },
	{ DEV "[dbus]\nbus = System\n", NAME ":4: ", "invalid bus 'System' in [dbus]" },
	{ DEV "[dbus]\nfoo = 1\n", NAME ":4: ", "unknown key 'foo' in [dbus]" },
	{ DEV "[dbus]\ndevice = sim:/t\n",
	  NAME ":4: ", "unknown key 'device' in [dbus] (it belongs in [device])" },
	{ DEV "enabled = yes\n",
	  NAME ":3: ", "unknown key 'enabled' in [device] (it belongs in [dbus])" },
	{ DEV "[mux.1]\nbus = system\n",
	  NAME ":4: ", "unknown key 'bus' in [mux.1] (it belongs in [dbus])" },
	{ DEV "[dbus]\nenabled = yes\nenabled = no\n",
	  NAME ":5: ", "repeated key 'enabled' in [dbus] (first at line 4)" },
	{ DEV "[dbus]\nenabled = yes\n[dbus]\n",
	  NAME ":5: ", "repeated section [dbus] (first at line 3)" },
	{ DEV "dbus = none\n[dbus]\nenabled = no\n", NAME ":3: ",
	  "dbus in [device] is the deprecated form of [dbus] (line 4): keep only [dbus]" },
	{ "[dbus]\nenabled = no\n" DEV "dbus = session\n", NAME ":5: ",
	  "dbus in [device] is the deprecated form of [dbus] (line 1): keep only [dbus]" },
	{ "[dbus]\nenabled = no\n[modem.a]\ndevice = sim:/a\nenabled = yes\n",
	  NAME ":5: ", "unknown key 'enabled' in [modem.a] (it belongs in [dbus])" },
	{ DEV "admin-group = -wheel\n", NAME ":3: ", "invalid admin-group '-wheel'" },
	{ DEV "admin-group = a b\n", NAME ":3: ", "invalid admin-group 'a b'" },
	{ DEV "admin-group = a$b\n", NAME ":3: ", "invalid admin-group 'a$b'" },
	{ DEV "admin-group = abcdefghijklmnopqrstuvwxyz123456\n",
	  NAME ":3: ", "invalid admin-group 'abcdefghijklmnopqrstuvwxyz123456'" },
	{ DEV "admin-group = gr\xc3\xbcn\n", NAME ":3: ", "invalid admin-group 'gr\\xc3\\xbcn'" },
	{ DEV "[mux.1]\ndefault-route = maybe\n",
	  NAME ":4: ", "invalid default-route 'maybe' in [mux.1]: expected yes or no" },
	{ DEV "[mux.1]\nautoconnect =\n", NAME ":4: ", "invalid autoconnect '' in [mux.1]" },
	{ DEV "[mux.1]\ncontrol = none\n",
	  NAME ":4: ", "unknown key 'control' in [mux.1] (it belongs in [device])" },
	{ DEV "autoconnect = no\n",
	  NAME ":3: ", "unknown key 'autoconnect' in [device] (it belongs in [mux.N])" },
	/* reported at the default-route line, whichever comes first */
	{ DEV "[mux.1]\nroutes = 10.0.0.0/8 ::/0\nmtu = 1400\ndefault-route = yes\n",
	  NAME ":6: ", "default-route in [mux.1] duplicates the IPv6 default route in routes" },
	{ DEV "[mux.1]\ndefault-route = yes\nroutes = 0.0.0.0/0\n",
	  NAME ":4: ", "default-route in [mux.1] duplicates the IPv4 default route in routes" },
	/* interface names across muxes: reported at the later mux */
	{ DEV "[mux.1]\ninterface = qmap2\n[mux.2]\napn = x\n",
	  NAME ":5: ", "interface 'qmap2' in [mux.2] is already used by [mux.1]" },
	{ DEV "[mux.9]\ninterface = wwan\n[mux.5]\napn = x\ninterface = wwan\n",
	  NAME ":7: ", "interface 'wwan' in [mux.5] is already used by [mux.9]" },
	/* lengths: inih would silently cut these */
	{ DEV "[mux.1]\nuser = "
	      "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"
	      "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"
	      "u\n",
	  NAME ":4: ", "value of 'user' in [mux.1] too long (165 bytes, at most 160)" },
};

static void expect_error(unsigned index, const struct error_case *e)
{
	struct config *c = untouched;
	char err[CONFIG_ERROR_MAX];
	int r;

	memset(err, 'z', sizeof(err));
	r = config_load_string(e->text, NAME, &c, err, sizeof(err));
	if (r != -EINVAL || c != untouched || strncmp(err, e->prefix, strlen(e->prefix)) != 0 ||
	    !strstr(err, e->needle)) {
		fprintf(stderr,
			"error case %u: got %d, config %s\n  message: %s\n  expected: %s...%s\n",
			index, r, c == untouched ? "untouched" : "CHANGED",
			memchr(err, '\0', sizeof(err)) ? err : "(not terminated)", e->prefix,
			e->needle);
		test_failures++;
	}
}

TEST(errors)
{
	char text[1024], err[CONFIG_ERROR_MAX];
	struct config *c;

	for (unsigned i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++)
		expect_error(i, &error_cases[i]);

	/* A line over inih's 200-byte buffer. */
	snprintf(text, sizeof(text), DEV "[mux.1]\napn = %0250d\n", 0);
	c = untouched;
	EXPECT_EQ(config_load_string(text, NAME, &c, err, sizeof(err)), -EINVAL);
	EXPECT_PTR_EQ(c, untouched);
	EXPECT_STR_EQ(err, NAME ":4: line too long (256 bytes, at most 199)");

	/* The password is a secret: never in a message. */
	c = untouched;
	EXPECT_EQ(config_load_string(DEV "[mux.1]\npassword = hunter\x02\n", NAME, &c, err,
				     sizeof(err)),
		  -EINVAL);
	EXPECT_STR_EQ(err, NAME ":4: invalid password in [mux.1]: only printable ASCII is allowed");

	/* Small or missing error buffers: no overflow, always terminated. */
	for (size_t len = 0; len < 24; len++) {
		memset(err, 'z', sizeof(err));
		c = untouched;
		EXPECT_EQ(config_load_string(DEV "[mux.1]\nip-type = ipv5\n", NAME, &c, err, len),
			  -EINVAL);
		EXPECT_PTR_EQ(c, untouched);
		EXPECT_EQ(err[len], 'z');
		if (len > 0)
			EXPECT_EQ(strlen(err), len - 1);
	}
	c = untouched;
	EXPECT_EQ(config_load_string("[x]\n", NAME, &c, NULL, 0), -EINVAL);
	EXPECT_EQ(config_load_string(NULL, NAME, &c, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_load_string(DEV, NAME, NULL, err, sizeof(err)), -EINVAL);
	EXPECT_PTR_EQ(c, untouched);

	/* Long values are quoted with a bound, control characters escaped. */
	c = untouched;
	EXPECT_EQ(config_load_string(DEV "[mux.1]\nip-type = "
					 "'\\abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
					 "abcdefghijklmnopqrstuvwxyz\n",
				     NAME, &c, err, sizeof(err)),
		  -EINVAL);
	EXPECT_TRUE(strstr(err, "invalid ip-type '\\'\\\\abcdefghijklmnopqrstuvwxyz"
				"abcdefghijklmnopqrstuvwxyzabcdefghij'... in [mux.1]"));
}

/* Loads text that must be valid; NULL (and a counted failure) if it is not. */
static struct config *load_ok(const char *text, int line)
{
	struct config *c = NULL;
	char err[CONFIG_ERROR_MAX];

	if (config_load_string(text, NAME, &c, err, sizeof(err)) != 0 || !c) {
		fprintf(stderr, "%s:%d: config failed: %s\n", __FILE__, line, err);
		test_failures++;
		return NULL;
	}
	return c;
}

/* Today's single-modem file means exactly what it meant before there were several modems. */
TEST(legacy)
{
	struct config *c;

	/* control = auto is the default; an explicit mode is kept as it is. */
	c = load_ok("[device]\ndevice = sim:/s\n", __LINE__);
	if (c) {
		char buf[32];
		EXPECT_EQ(c->modem[0].device.control, CONFIG_CONTROL_QMI);
		EXPECT_EQ(c->modem[0].device.control_auto, true);
		EXPECT_STR_EQ(config_control_describe(&c->modem[0].device, buf, sizeof(buf)),
			      "qmi (auto)");
		config_free(c);
	}
	c = load_ok("[device]\ndevice = sim:/s\ncontrol = qmi\n", __LINE__);
	if (c) {
		char buf[32];
		EXPECT_EQ(c->modem[0].device.control_auto, false);
		EXPECT_STR_EQ(config_control_describe(&c->modem[0].device, buf, sizeof(buf)),
			      "qmi");
		config_free(c);
	}
	c = load_ok("[device]\ncontrol = none\n[modem.a]\ndevice = sim:/a\n"
		    "control = auto\n",
		    __LINE__);
	if (c) {
		EXPECT_EQ(c->n_modems, 1);
		EXPECT_EQ(c->modem[0].device.control, CONFIG_CONTROL_QMI);
		EXPECT_EQ(c->modem[0].device.control_auto, true);
		config_free(c);
	}

	/* MBIM control: the same control-link and [mux.N] keys. */
	c = load_ok("[device]\ndevice = sim:/s\ncontrol = mbim\ncontrol-link = /run/qmapd/mbim0\n"
		    "[mux.1]\napn = internet\nip-type = ipv6\n",
		    __LINE__);
	if (c) {
		EXPECT_EQ(c->modem[0].device.control, CONFIG_CONTROL_MBIM);
		EXPECT_EQ(c->modem[0].device.control_auto, false);
		EXPECT_STR_EQ(c->modem[0].device.control_link, "/run/qmapd/mbim0");
		EXPECT_STR_EQ(c->modem[0].mux[1]->apn, "internet");
		config_free(c);
	}

	c = load_ok("[device]\ndevice = usb:2c7c:0125\n[mux.1]\n[mux.7]\ninterface = wwan7\n",
		    __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->discovery, false);
	EXPECT_EQ(c->n_exclude, 0);
	EXPECT_EQ(c->n_modems, 1);
	EXPECT_STR_EQ(c->modem[0].name, "modem0");
	EXPECT_STR_EQ(c->device.device, "usb:2c7c:0125");
	EXPECT_STR_EQ(c->device.control_link, "/run/qmapd/qmi0");
	EXPECT_STR_EQ(c->mux[1]->interface, "qmap1");
	EXPECT_EQ(c->mux[1]->interface_set, false);
	EXPECT_STR_EQ(c->mux[7]->interface, "wwan7");
	EXPECT_EQ(c->mux[7]->interface_set, true);
	/* The modem is [device] and the top-level muxes, byte for byte. */
	EXPECT_MEM_EQ(&c->modem[0].device, &c->device, sizeof(c->device));
	EXPECT_TRUE(muxes_equal(c->modem[0].mux, c->mux));
	EXPECT_TRUE(c->modem[0].mux[1] != c->mux[1]); /* copies */
	EXPECT_STR_EQ(c->modem[0].device.control_link, CONFIG_CONTROL_LINK_DEFAULT);
	EXPECT_STR_EQ(c->modem[0].mux[1]->interface, "qmap1");
	config_free(c);

	/* name = only names it; the devices keep qmap<N>. */
	c = load_ok("[mux.2]\n[device]\nname = lte_1\ndevice = sim:/s\nexclude = usb:1199:9071\n",
		    __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->n_modems, 1);
	EXPECT_STR_EQ(c->modem[0].name, "lte_1");
	EXPECT_STR_EQ(c->modem[0].device.device, "sim:/s");
	EXPECT_STR_EQ(c->modem[0].mux[2]->interface, "qmap2");
	EXPECT_STR_EQ(c->modem[0].device.control_link, "/run/qmapd/qmi0");
	EXPECT_EQ(c->n_exclude, 1);
	config_free(c);
}

/* [dbus], and the deprecated [device] dbus = that maps onto it. */
TEST(dbus)
{
	static const struct {
		const char *text;
		enum config_dbus_enabled enabled;
		enum config_dbus bus;
		unsigned legacy_line;
	} cases[] = {
		{ DEV, CONFIG_DBUS_ENABLED_AUTO, CONFIG_DBUS_SYSTEM, 0 },
		{ DEV "[dbus]\n", CONFIG_DBUS_ENABLED_AUTO, CONFIG_DBUS_SYSTEM, 0 },
		{ DEV "[dbus]\nenabled = no\n", CONFIG_DBUS_ENABLED_NO, CONFIG_DBUS_SYSTEM, 0 },
		{ "[dbus]\nbus = session\nenabled = auto\n" DEV, CONFIG_DBUS_ENABLED_AUTO,
		  CONFIG_DBUS_SESSION, 0 },
		{ DEV "[dbus]\nenabled = yes\nbus = system\n", CONFIG_DBUS_ENABLED_YES,
		  CONFIG_DBUS_SYSTEM, 0 },
		/* the old key: "system" was "when there is one", which is auto */
		{ DEV "dbus = system\n", CONFIG_DBUS_ENABLED_AUTO, CONFIG_DBUS_SYSTEM, 3 },
		{ DEV "dbus = session\n", CONFIG_DBUS_ENABLED_AUTO, CONFIG_DBUS_SESSION, 3 },
		{ DEV "control = qmi\ndbus = none\n", CONFIG_DBUS_ENABLED_NO, CONFIG_DBUS_SYSTEM,
		  4 },
		{ "[modem.a]\ndevice = sim:/a\n[device]\ndbus = none\n", CONFIG_DBUS_ENABLED_NO,
		  CONFIG_DBUS_SYSTEM, 4 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct config *c = load_ok(cases[i].text, __LINE__);
		if (!c)
			continue;
		EXPECT_EQ(c->dbus.enabled, cases[i].enabled);
		EXPECT_EQ(c->dbus.bus, cases[i].bus);
		EXPECT_EQ(c->dbus.legacy_line, cases[i].legacy_line);
		config_free(c);
	}
	EXPECT_STR_EQ(config_dbus_enabled_to_string(CONFIG_DBUS_ENABLED_AUTO), "auto");
	EXPECT_STR_EQ(config_dbus_enabled_to_string(CONFIG_DBUS_ENABLED_YES), "yes");
	EXPECT_STR_EQ(config_dbus_enabled_to_string(CONFIG_DBUS_ENABLED_NO), "no");
}

/*
 * ntb-format: the one key stored in a byte (uint8_t), in [device] and over it in
 * [modem.NAME]; its neighbours in struct config_device must keep their values.
 */
TEST(ntb_format)
{
	static const struct error_case bad[] = {
		{ DEV "ntb-format = 24\n",
		  NAME ":3: ", "invalid ntb-format '24' in [device]: expected 16 or 32" },
		{ DEV "ntb-format = 032\n", NAME ":3: ", "invalid ntb-format '032'" },
		{ DEV "ntb-format =\n", NAME ":3: ", "invalid ntb-format ''" },
		{ "[modem.a]\ndevice = sim:/a\nntb-format = 64\n",
		  NAME ":3: ", "invalid ntb-format '64' in [modem.a]: expected 16 or 32" },
	};
	struct config *c;

	c = load_ok(DEV, __LINE__);
	if (c) {
		EXPECT_EQ(c->device.ntb_format, 16);
		config_free(c);
	}
	c = load_ok(DEV "ntb-format = 32\nqmap-version = 1\ndl-max-size = 4096\n", __LINE__);
	if (c) {
		EXPECT_EQ(c->device.ntb_format, 32);
		EXPECT_EQ(c->device.qmap_version, QMAP_V1);
		EXPECT_EQ(c->device.dl_max_size, 4096);
		EXPECT_EQ(c->modem[0].device.ntb_format, 32);
		config_free(c);
	}
	c = load_ok("[device]\nntb-format = 32\n[modem.a]\ndevice = sim:/a\nntb-format = 16\n"
		    "[modem.b]\ndevice = sim:/b\n",
		    __LINE__);
	if (c && c->n_modems == 2) {
		EXPECT_EQ(c->device.ntb_format, 32);
		EXPECT_EQ(c->modem[0].device.ntb_format, 16);
		EXPECT_EQ(c->modem[1].device.ntb_format, 32);
		EXPECT_EQ(c->modem[0].device.qmap_version, QMAP_V5);
	} else if (c) {
		fprintf(stderr, "%s:%d: %u modems, expected 2\n", __FILE__, __LINE__, c->n_modems);
		test_failures++;
	}
	config_free(c);
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++)
		expect_error(2000 + i, &bad[i]);
}

/*
 * open-timeout: seconds in [device], over it in [modem.NAME], and into the modems that
 * discovery makes from the template; the default is the 15 s qmapd always waited.
 */
TEST(open_timeout)
{
	static const struct error_case bad[] = {
		{ "[modem.a]\ndevice = sim:/a\nopen-timeout = 0\n",
		  NAME ":3: ", "invalid open-timeout '0' in [modem.a]: must be 1..300" },
		{ "[modem.a]\ndevice = sim:/a\nopen-timeout = 1000\n",
		  NAME ":3: ", "invalid open-timeout '1000' in [modem.a]: must be 1..300" },
		{ "[device]\nopen-timeout = 3\nopen-timeout = 4\n",
		  NAME ":3: ", "repeated key 'open-timeout' in [device] (first at line 2)" },
	};
	struct config_modem *m;
	struct config *c;

	c = load_ok(DEV "open-timeout = 1\n", __LINE__);
	if (c) {
		EXPECT_EQ(c->device.open_timeout, 1);
		EXPECT_EQ(c->modem[0].device.open_timeout, 1);
		config_free(c);
	}
	c = load_ok(DEV "open-timeout = 300\n", __LINE__);
	if (c) {
		EXPECT_EQ(c->modem[0].device.open_timeout, 300);
		config_free(c);
	}
	/* [device] comes last: its value is the default of b, not a's, whatever the order. */
	c = load_ok("[modem.a]\ndevice = sim:/a\nopen-timeout = 3\n[modem.b]\ndevice = sim:/b\n"
		    "[device]\nopen-timeout = 60\n",
		    __LINE__);
	if (c && c->n_modems == 2) {
		EXPECT_EQ(c->device.open_timeout, 60);
		EXPECT_EQ(c->modem[0].device.open_timeout, 3);
		EXPECT_EQ(c->modem[1].device.open_timeout, 60);
	} else if (c) {
		fprintf(stderr, "%s:%d: %u modems, expected 2\n", __FILE__, __LINE__, c->n_modems);
		test_failures++;
	}
	config_free(c);

	c = load_ok("[device]\nopen-timeout = 5\n", __LINE__);
	m = malloc(sizeof(*m));
	if (c && m) {
		EXPECT_EQ(config_modem_from_template(c, "modem0", "usb:2c7c:0125", m), 0);
		EXPECT_EQ(m->device.open_timeout, 5);
		config_modem_clear(m);
	} else {
		test_failures++;
	}
	free(m);
	config_free(c);
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++)
		expect_error(3000 + i, &bad[i]);
}

/* No device, or device = auto: every recognised modem, each from the template. */
TEST(discovery)
{
	static const char *const texts[] = { "", "[mux.1]\n", "[device]\nqmap-version = 5\n",
					     "[device]\ndevice = auto\n" };
	struct config_modem *m;
	struct config *c;

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		c = load_ok(texts[i], __LINE__);
		if (!c)
			continue;
		EXPECT_EQ(c->discovery, true);
		EXPECT_EQ(c->n_modems, 0);
		EXPECT_STR_EQ(c->device.device, "");
		config_free(c);
	}

	/* discovery = no: only the sections' modems */
	c = load_ok("[device]\ndiscovery = no\n[modem.a]\ndevice = sim:/a\n", __LINE__);
	if (c) {
		EXPECT_EQ(c->discovery, false);
		EXPECT_EQ(c->n_modems, 1);
		config_free(c);
	}
	c = load_ok("[modem.a]\ndevice = sim:/a\n[device]\ndiscovery = yes\n", __LINE__);
	if (c) {
		EXPECT_EQ(c->discovery, true);
		config_free(c);
	}

	/* blanks or tabs between specs; each exclude = adds to the list */
	c = load_ok("[device]\nexclude = usb:1199:9071\tusb-path:3-1.2  usb:2c7c:125\n"
		    "exclude = usb-serial:XYZ-1\n",
		    __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->discovery, true);
	EXPECT_EQ(c->n_exclude, 4);
	EXPECT_STR_EQ(c->exclude[0], "usb:1199:9071");
	EXPECT_STR_EQ(c->exclude[1], "usb-path:3-1.2");
	EXPECT_STR_EQ(c->exclude[2], "usb:2c7c:125");
	EXPECT_STR_EQ(c->exclude[3], "usb-serial:XYZ-1");
	config_free(c);

	c = load_ok("[device]\ndevice = auto\ndl-max-size = 32768\n"
		    "exclude = usb:1199:9071 usb-path:3-1.2\n"
		    "[mux.1]\napn = internet\n[mux.2]\ninterface = wwan0\n[mux.254]\n",
		    __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->n_exclude, 2);
	/* The template as written: qmap<N> until a modem's name is known. */
	EXPECT_STR_EQ(c->mux[1]->interface, "qmap1");

	m = malloc(sizeof(*m));
	if (!m) {
		test_failures++;
		config_free(c);
		return;
	}
	EXPECT_EQ(config_modem_from_template(c, "modem3", "usb-path:1-2:4", m), 0);
	EXPECT_STR_EQ(m->name, "modem3");
	EXPECT_STR_EQ(m->device.device, "usb-path:1-2:4");
	EXPECT_EQ(m->device.dl_max_size, 32768);
	EXPECT_STR_EQ(m->device.control_link, "/run/qmapd/modem3.qmi");
	EXPECT_STR_EQ(m->device.control_socket, CONFIG_CONTROL_SOCKET_DEFAULT);
	EXPECT_TRUE(m->mux[1] != NULL);
	EXPECT_STR_EQ(m->mux[1]->interface, "modem3.1");
	EXPECT_STR_EQ(m->mux[1]->apn, "internet");
	EXPECT_STR_EQ(m->mux[2]->interface, "wwan0");
	EXPECT_TRUE(!m->mux[3]);
	EXPECT_STR_EQ(m->mux[254]->interface, "modem3.254");
	/* Copies: the template keeps its names, and the modem's live on without it. */
	EXPECT_TRUE(m->mux[1] != c->mux[1]);
	EXPECT_STR_EQ(c->mux[254]->interface, "qmap254");
	config_modem_clear(m);
	EXPECT_PTR_EQ(m->mux[1], NULL);
	/* The longest name still fits IFNAMSIZ with the largest mux id. */
	EXPECT_EQ(config_modem_from_template(c, "abcdefghijk", "sim:/x", m), 0);
	EXPECT_STR_EQ(m->mux[254]->interface, "abcdefghijk.254");
	EXPECT_STR_EQ(m->device.control_link, "/run/qmapd/abcdefghijk.qmi");
	config_modem_clear(m);

	{
		static const char *const bad[] = { "",	  "Modem0", "abcdefghijkl", "a.b", "a b",
						   "a/b", "é" };
		char long_spec[CONFIG_VALUE_MAX + 2];

		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			EXPECT_EQ(config_modem_name_is_valid(bad[i]), false);
			EXPECT_EQ(config_modem_from_template(c, bad[i], "sim:/x", m), -EINVAL);
		}
		EXPECT_EQ(config_modem_name_is_valid(NULL), false);
		EXPECT_EQ(config_modem_name_is_valid("a"), true);
		EXPECT_EQ(config_modem_name_is_valid("0_-z"), true);
		memset(long_spec, 's', sizeof(long_spec) - 1);
		long_spec[sizeof(long_spec) - 1] = '\0';
		EXPECT_EQ(config_modem_from_template(c, "a", long_spec, m), -EINVAL);
		EXPECT_EQ(config_modem_from_template(c, "a", NULL, m), -EINVAL);
		EXPECT_EQ(config_modem_from_template(NULL, "a", "sim:/x", m), -EINVAL);
		EXPECT_EQ(config_modem_from_template(c, "a", "sim:/x", NULL), -EINVAL);
	}
	free(m);
	config_free(c);
}

/* [device] comes last here: its keys are still only defaults under [modem.NAME]. */
static const char modems[] = "[modem.b.mux.2]\n"
			     "apn = b2\n"
			     "[modem.a]\n"
			     "device = usb:2C7C:0125\n"
			     "qmap-version = 1\n"
			     "[modem.a.mux.1]\n"
			     "apn = a1\n"
			     "[modem.a.mux.3]\n"
			     "interface = wwan-a3\n"
			     "[modem.b]\n"
			     "device = usb-serial:ABC123\n"
			     "control-link = /dev/cdc-wdm1\n"
			     "persist-devices = no\n"
			     "[device]\n"
			     "dl-max-size = 32768\n"
			     "qmap-version = 5\n"
			     "persist-devices = yes\n"
			     "control-socket = /run/q/ctl\n"
			     "[mux.1]\n"
			     "apn = template\n";

/* The same, [device] first. */
static const char modems_device_first[] = "[device]\n"
					  "dl-max-size = 32768\n"
					  "qmap-version = 5\n"
					  "persist-devices = yes\n"
					  "control-socket = /run/q/ctl\n"
					  "[modem.b.mux.2]\n"
					  "apn = b2\n"
					  "[modem.a]\n"
					  "device = usb:2C7C:0125\n"
					  "qmap-version = 1\n"
					  "[modem.a.mux.1]\n"
					  "apn = a1\n"
					  "[modem.a.mux.3]\n"
					  "interface = wwan-a3\n"
					  "[modem.b]\n"
					  "device = usb-serial:ABC123\n"
					  "control-link = /dev/cdc-wdm1\n"
					  "persist-devices = no\n"
					  "[mux.1]\n"
					  "apn = template\n";

/* The second multi-modem example of qmapd.conf(5). */
static const char man_example[] = "[device]\n"
				  "admin-group = netdev\n"
				  "\n"
				  "[modem.lte]\n"
				  "device = usb-path:1-1.4\n"
				  "qmap-version = 1\n"
				  "\n"
				  "[modem.lte.mux.129]\n"
				  "apn = internet\n"
				  "default-route = yes\n"
				  "\n"
				  "[modem.lte.mux.130]\n"
				  "interface = ims0\n"
				  "apn = ims\n"
				  "ip-type = ipv6\n"
				  "\n"
				  "[modem.backup]\n"
				  "device = usb-serial:0123456789AB\n"
				  "rx-transfers = 32\n"
				  "\n"
				  "[modem.backup.mux.129]\n"
				  "apn = backup.example\n"
				  "route-metric = 100\n"
				  "default-route = yes\n"
				  "\n"
				  "[mux.129]\n"
				  "apn = internet\n";

TEST(modems)
{
	struct config *c, *d;
	const struct config_modem *a, *b;

	/* what the manual says of its example */
	c = load_ok(man_example, __LINE__);
	if (c) {
		EXPECT_EQ(c->n_modems, 2);
		EXPECT_STR_EQ(c->modem[0].mux[129]->interface, "lte.129");
		EXPECT_STR_EQ(c->modem[0].mux[130]->interface, "ims0");
		EXPECT_STR_EQ(c->modem[1].mux[129]->interface, "backup.129");
		EXPECT_STR_EQ(c->modem[0].device.control_link, "/run/qmapd/lte.qmi");
		EXPECT_STR_EQ(c->modem[1].device.control_link, "/run/qmapd/backup.qmi");
		EXPECT_EQ(c->modem[1].device.rx_transfers, 32);
		EXPECT_EQ(c->modem[0].device.rx_transfers, CONFIG_RX_TRANSFERS_MIN);
		config_free(c);
	}

	/* The default control link says what it speaks: NAME.mbim for control = mbim, also once
	 * control = auto is resolved to mbim; a given link is kept. */
	c = load_ok("[modem.m]\ndevice = sim:/tmp/m.sock\ncontrol = mbim\n"
		    "[modem.q]\ndevice = sim:/tmp/q.sock\n"
		    "[modem.g]\ndevice = sim:/tmp/g.sock\ncontrol = mbim\ncontrol-link = /tmp/g\n",
		    __LINE__);
	if (c) {
		EXPECT_STR_EQ(c->modem[0].device.control_link, "/run/qmapd/m.mbim");
		EXPECT_STR_EQ(c->modem[1].device.control_link, "/run/qmapd/q.qmi");
		c->modem[1].device.control = CONFIG_CONTROL_MBIM; /* what auto resolved */
		config_modem_default_link(&c->modem[1]);
		EXPECT_STR_EQ(c->modem[1].device.control_link, "/run/qmapd/q.mbim");
		config_modem_default_link(&c->modem[2]);
		EXPECT_STR_EQ(c->modem[2].device.control_link, "/tmp/g");
		config_free(c);
	}

	c = load_ok(modems, __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->discovery, true);
	EXPECT_EQ(c->n_modems, 2);
	EXPECT_STR_EQ(c->device.device, "");
	/* in the order the file first names them */
	b = &c->modem[0];
	a = &c->modem[1];
	EXPECT_STR_EQ(b->name, "b");
	EXPECT_STR_EQ(a->name, "a");

	EXPECT_STR_EQ(a->device.device, "usb:2C7C:0125");
	EXPECT_EQ(a->device.qmap_version, QMAP_V1); /* its own, over [device] */
	EXPECT_EQ(a->device.dl_max_size, 32768);    /* [device]'s, from later in the file */
	EXPECT_EQ(a->device.persist_devices, true); /* [device]'s */
	EXPECT_EQ(a->device.rx_transfers, CONFIG_RX_TRANSFERS_MIN);
	EXPECT_STR_EQ(a->device.control_link, "/run/qmapd/a.qmi");
	EXPECT_STR_EQ(a->device.control_socket, "/run/q/ctl");
	EXPECT_TRUE(a->mux[1] != NULL);
	EXPECT_STR_EQ(a->mux[1]->interface, "a.1");
	EXPECT_STR_EQ(a->mux[1]->apn, "a1");
	EXPECT_TRUE(!a->mux[2]);
	EXPECT_TRUE(a->mux[3] != NULL);
	EXPECT_STR_EQ(a->mux[3]->interface, "wwan-a3");

	EXPECT_STR_EQ(b->device.device, "usb-serial:ABC123");
	EXPECT_EQ(b->device.qmap_version, QMAP_V5);
	EXPECT_EQ(b->device.dl_max_size, 32768);
	EXPECT_EQ(b->device.persist_devices, false);
	EXPECT_STR_EQ(b->device.control_link, "/dev/cdc-wdm1");
	EXPECT_TRUE(!b->mux[1]);
	EXPECT_TRUE(b->mux[2] != NULL);
	EXPECT_STR_EQ(b->mux[2]->interface, "b.2");
	EXPECT_STR_EQ(b->mux[2]->apn, "b2");

	/* The template stays as written. */
	EXPECT_EQ(count_muxes(c), 1);
	EXPECT_STR_EQ(c->mux[1]->apn, "template");
	EXPECT_EQ(c->device.qmap_version, QMAP_V5);

	d = load_ok(modems_device_first, __LINE__);
	if (d) {
		EXPECT_EQ(d->n_modems, 2);
		EXPECT_TRUE(d->n_modems == 2 && modems_equal(&d->modem[0], &c->modem[0]) &&
			    modems_equal(&d->modem[1], &c->modem[1]));
		EXPECT_MEM_EQ(&d->device, &c->device, sizeof(c->device));
		config_free(d);
	}
	config_free(c);

	/* sim: in a section too, and the most modems there may be */
	{
		char text[4096];
		size_t n = 0;

		for (unsigned i = 0; i < CONFIG_MAX_MODEMS; i++)
			n += (size_t)snprintf(
				text + n, sizeof(text) - n,
				"[modem.m%u]\ndevice = sim:/run/sim%u\n[modem.m%u.mux.%u]\n", i, i,
				i, i + 1);
		c = load_ok(text, __LINE__);
		if (c) {
			EXPECT_EQ(c->n_modems, CONFIG_MAX_MODEMS);
			EXPECT_STR_EQ(c->modem[15].name, "m15");
			EXPECT_STR_EQ(c->modem[15].mux[16]->interface, "m15.16");
			EXPECT_STR_EQ(c->modem[15].device.control_link, "/run/qmapd/m15.qmi");
			config_free(c);
		}
		snprintf(text + n, sizeof(text) - n, "[modem.x]\ndevice = sim:/x\n");
		{
			struct error_case e = { text, NAME ":49: ", "too many modems: at most 16" };

			expect_error(0, &e);
		}
	}
}

#define MA "[modem.a]\ndevice = sim:/a\n"

static const struct error_case modem_error_cases[] = {
	{ "[device]\ndiscovery = no\n", NAME ":2: ",
	  "discovery is off and no [modem.NAME] section names a modem: nothing to serve" },
	{ "[device]\ndevice = sim:/a\ndiscovery = yes\n",
	  NAME ":3: ", "discovery in [device] is for configs without 'device = SPEC' there" },
	{ "[modem.a]\ndevice = sim:/a\ndiscovery = no\n", NAME ":3: ", "discovery" },
	{ "[device]\ndiscovery = maybe\n", NAME ":2: ", "discovery" },
	{ "[device]\ndevice = usb:1:2\n[modem.a]\ndevice = usb:3:4\n", NAME ":2: ",
	  "device 'usb:1:2' in [device] cannot be used with [modem.NAME] sections: put device = "
	  "in each [modem.NAME]" },
	{ "[modem.a]\ndevice = sim:/a\n[device]\ndevice = sim:/b\n",
	  NAME ":4: ", "device 'sim:/b' in [device] cannot be used with [modem.NAME] sections" },
	/* the same modem spelled twice */
	{ "[modem.a]\ndevice = usb:2c7c:0125\n[modem.b]\ndevice = usb:2C7C:125:4\n",
	  NAME ":4: ", "device 'usb:2C7C:125:4' in [modem.b] is already the device of [modem.a]" },
	{ "[modem.a]\ndevice = usb-path:1-2\n[modem.b]\ndevice = usb-path:1-2:5\n",
	  NAME ":4: ", "device 'usb-path:1-2:5' in [modem.b] is already the device of [modem.a]" },
	{ "[modem.a]\ndevice = usb-serial:X\n[modem.b]\ndevice = usb-serial:X\n",
	  NAME ":4: ", "device 'usb-serial:X' in [modem.b] is already the device of [modem.a]" },
	/* interface names: defaults and explicit, across modems and the template */
	{ MA "[modem.a.mux.1]\n[modem.b]\ndevice = sim:/b\n[modem.b.mux.1]\ninterface = a.1\n",
	  NAME ":7: ", "interface 'a.1' in [modem.b.mux.1] is already used by [modem.a.mux.1]" },
	{ MA "[modem.a.mux.1]\ninterface = a.2\n[modem.a.mux.2]\n",
	  NAME ":5: ", "interface 'a.2' in [modem.a.mux.2] is already used by [modem.a.mux.1]" },
	{ MA "[modem.a.mux.1]\ninterface = wwan0\n[modem.b]\ndevice = sim:/b\n[modem.b.mux.9]\n"
	     "interface = wwan0\n",
	  NAME ":8: ", "interface 'wwan0' in [modem.b.mux.9] is already used by [modem.a.mux.1]" },
	{ "[mux.1]\ninterface = wwan0\n" MA "[modem.a.mux.4]\ninterface = wwan0\n",
	  NAME ":6: ", "interface 'wwan0' in [modem.a.mux.4] is already used by [mux.1]" },
	{ "[mux.1]\ninterface = wwan0\n[mux.2]\ninterface = wwan0\n",
	  NAME ":4: ", "interface 'wwan0' in [mux.2] is already used by [mux.1]" },
	/* sections */
	{ MA "[modem.a]\n", NAME ":3: ", "repeated section [modem.a] (first at line 1)" },
	{ MA "[modem.a.mux.1]\n[modem.a.mux.1]\n",
	  NAME ":4: ", "repeated section [modem.a.mux.1] (first at line 3)" },
	{ MA "[modem.x.mux.1]\n", NAME ":3: ", "no [modem.x] section for this [modem.x.mux.N]" },
	{ "[modem.a]\nqmap-version = 1\n", NAME ":1: ", "missing 'device' in [modem.a]" },
	{ "[modem.A]\n", NAME ":1: ",
	  "invalid section 'modem.A': expected modem.NAME, NAME 1 to 11 of a-z, 0-9, '_' and "
	  "'-'" },
	{ "[modem.]\n", NAME ":1: ", "invalid section 'modem.'" },
	{ "[modem.abcdefghijkl]\n", NAME ":1: ", "invalid section 'modem.abcdefghijkl'" },
	{ "[modem.a b]\n", NAME ":1: ", "invalid section 'modem.a b'" },
	{ "[modem..mux.1]\n", NAME ":1: ", "invalid section 'modem..mux.1'" },
	{ "[modem.a.mux.0]\n", NAME ":1: ",
	  "invalid section 'modem.a.mux.0': expected modem.NAME.mux.N with N = 1..254" },
	{ "[modem.a.mux.255]\n", NAME ":1: ", "invalid section 'modem.a.mux.255'" },
	{ "[modem.a.mux]\n", NAME ":1: ", "invalid section 'modem.a.mux'" },
	{ "[modem.a.mux.]\n", NAME ":1: ", "invalid section 'modem.a.mux.'" },
	{ "[modem.a.foo.1]\n", NAME ":1: ", "invalid section 'modem.a.foo.1'" },
	{ "[modem]\n", NAME ":1: ",
	  "unknown section 'modem': expected device, dbus, mux.N, modem.NAME or modem.NAME.mux.N" },
	/* keys */
	{ MA "control-socket = /run/x\n", NAME ":3: ",
	  "unknown key 'control-socket' in [modem.a] (it is for the whole daemon: it belongs in "
	  "[device])" },
	{ MA "admin-group = wheel\n", NAME ":3: ",
	  "unknown key 'admin-group' in [modem.a] (it is "
	  "for the whole daemon" },
	{ MA "exclude = usb:1:2\n",
	  NAME ":3: ", "unknown key 'exclude' in [modem.a] (it is for the whole daemon" },
	{ MA "name = b\n", NAME ":3: ",
	  "unknown key 'name' in [modem.a] (the modem's name is the one in the section header)" },
	{ MA "apn = x\n",
	  NAME ":3: ", "unknown key 'apn' in [modem.a] (it belongs in [modem.NAME.mux.N])" },
	{ MA "[modem.a.mux.1]\nqmap-version = 1\n", NAME ":4: ",
	  "unknown key 'qmap-version' in [modem.a.mux.1] (it belongs in [modem.NAME])" },
	{ MA "qmap-version = 1\nqmap-version = 5\n",
	  NAME ":4: ", "repeated key 'qmap-version' in [modem.a] (first at line 3)" },
	{ MA "qmap-version = 2\n", NAME ":3: ", "invalid qmap-version '2' in [modem.a]" },
	{ "[modem.a]\ndevice = auto\n", NAME ":2: ",
	  "invalid device 'auto' in [modem.a]: expected sim:, usb:, usb-path: or usb-serial: and "
	  "the device" },
	{ "[modem.a]\ndevice = usb-serial:\n",
	  NAME ":2: ", "invalid device 'usb-serial:' in [modem.a]: nothing after the scheme" },
	{ "[modem.a]\ndevice = usb-serial:a b\n",
	  NAME ":2: ", "invalid device 'usb-serial:a b' in [modem.a]: blanks" },
	{ "[device]\ndevice = usb-serial:X\n", NAME ":2: ",
	  "invalid device 'usb-serial:X' in [device]: usb-serial: needs discovery: name the modem "
	  "in a [modem.NAME] section" },
	{ MA "[modem.a.mux.1]\nmtu = 576\n", NAME ":4: ",
	  "invalid mtu '576' in [modem.a.mux.1]: ip-type 'ipv4v6' needs at least 1280" },
	{ MA "[modem.a.mux.1]\napn = a\napn = b\n",
	  NAME ":5: ", "repeated key 'apn' in [modem.a.mux.1] (first at line 4)" },
	/* control links */
	{ MA "control-link = /dev/x\n[modem.b]\ndevice = sim:/b\ncontrol-link = /dev/x\n",
	  NAME ":6: ", "control-link '/dev/x' of [modem.b] is already the one of [modem.a]" },
	{ "[modem.a]\ndevice = sim:/a\n[modem.b]\ndevice = sim:/b\ncontrol-link = "
	  "/run/qmapd/a.qmi\n",
	  NAME ":5: ",
	  "control-link '/run/qmapd/a.qmi' of [modem.b] is already the one of [modem.a]" },
	{ "[device]\ncontrol-socket = /run/x\n" MA "control-link = /run/x\n",
	  NAME ":5: ", "control-link '/run/x' of [modem.a] is the control-socket" },
	{ "[device]\ncontrol-socket = /run/qmapd/a.qmi\n" MA,
	  NAME ":3: ", "control-link '/run/qmapd/a.qmi' of [modem.a] is the control-socket" },
	{ "[device]\ncontrol-link = /dev/x\n", NAME ":2: ",
	  "control-link in [device] is for the one modem of 'device = SPEC'; set it in each "
	  "[modem.NAME] (default /run/qmapd/NAME.qmi)" },
	{ "[device]\ndevice = auto\ncontrol-link = /dev/x\n" MA,
	  NAME ":3: ", "control-link in [device] is for the one modem" },
	/* name and exclude in [device] */
	{ "[device]\nname = lte\n", NAME ":2: ",
	  "name in [device] names the one modem of 'device = SPEC'; without it, name modems with "
	  "[modem.NAME] sections" },
	{ "[device]\ndevice = sim:/s\nname = LTE\n", NAME ":3: ",
	  "invalid name 'LTE' in [device]: expected 1 to 11 of a-z, 0-9, '_' and '-'" },
	{ "[device]\ndevice = sim:/s\nname =\n", NAME ":3: ", "invalid name '' in [device]" },
	{ "[device]\ndevice = sim:/s\nname = a\nname = b\n",
	  NAME ":4: ", "repeated key 'name' in [device] (first at line 3)" },
	{ "[device]\nexclude = usb:zz:1\n",
	  NAME ":2: ", "invalid exclude 'usb:zz:1' in [device]: expected usb:VID:PID" },
	{ "[device]\nexclude = usb:1:2 sim:/x\n", NAME ":2: ",
	  "invalid exclude 'sim:/x' in [device]: expected usb:VID:PID, usb-path:BUS-PORT or "
	  "usb-serial:SERIAL" },
	{ "[device]\nexclude = usb-path:1\n", NAME ":2: ", "invalid exclude 'usb-path:1'" },
	{ "[device]\nexclude = usb-serial:\n",
	  NAME ":2: ", "invalid exclude 'usb-serial:' in [device]: nothing after the scheme" },
	{ "[device]\nexclude = usb-serial:\x01\n", NAME ":2: ",
	  "invalid exclude 'usb-serial:\\x01' in [device]: blanks and control characters" },
	{ "[device]\nexclude =\n", NAME ":2: ",
	  "invalid exclude '' in [device]: expected usb:VID:PID, usb-path:BUS-PORT or "
	  "usb-serial:SERIAL" },
	{ "[device]\nexclude = usb:1:1 usb:1:2 usb:1:3 usb:1:4 usb:1:5 usb:1:6 usb:1:7 usb:1:8\n"
	  "exclude = usb:2:1 usb:2:2 usb:2:3 usb:2:4 usb:2:5 usb:2:6 usb:2:7 usb:2:8\n"
	  "exclude = usb:3:1\n",
	  NAME ":4: ", "too many excludes in [device] (at most 16)" },
};

TEST(modem_errors)
{
	for (unsigned i = 0; i < ARRAY_SIZE(modem_error_cases); i++)
		expect_error(1000 + i, &modem_error_cases[i]);
}

TEST(spec_matches)
{
	EXPECT_EQ(config_spec_matches_usb("usb:2c7c:0125", 0x2c7c, 0x0125, "1-2", ""), true);
	EXPECT_EQ(config_spec_matches_usb("usb:2C7C:125", 0x2c7c, 0x0125, "1-2", NULL), true);
	EXPECT_EQ(config_spec_matches_usb("usb:2c7c:0125:4", 0x2c7c, 0x0125, "1-2", ""), true);
	EXPECT_EQ(config_spec_matches_usb("usb:2c7c:0126", 0x2c7c, 0x0125, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb:2c7d:0125", 0x2c7c, 0x0125, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb-path:1-2", 0x2c7c, 0x0125, "1-2", ""), true);
	EXPECT_EQ(config_spec_matches_usb("usb-path:1-2:4", 1, 2, "1-2", ""), true);
	EXPECT_EQ(config_spec_matches_usb("usb-path:1-2.3", 1, 2, "1-2.3", ""), true);
	EXPECT_EQ(config_spec_matches_usb("usb-path:1-2", 1, 2, "1-2.3", ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb-path:1-2.3", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb-path:2-2", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb-path:1-2", 1, 2, NULL, ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-2", "ABC"), true);
	EXPECT_EQ(config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-2", "abc"), false);
	EXPECT_EQ(config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-2", "ABCD"), false);
	EXPECT_EQ(config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("usb-serial:ABC", 1, 2, "1-2", NULL), false);
	EXPECT_EQ(config_spec_matches_usb("usb-serial:", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("sim:/run/sim", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("sim:1-2", 1, 2, "1-2", "1-2"), false);
	EXPECT_EQ(config_spec_matches_usb("usb:zz:1", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb("", 1, 2, "1-2", ""), false);
	EXPECT_EQ(config_spec_matches_usb(NULL, 1, 2, "1-2", ""), false);
}

/* Every truncation of a valid file must parse or fail cleanly, with a terminated message. */
TEST(truncated)
{
	size_t len = strlen(full);
	char *text = malloc(len + 1);

	if (!text) {
		test_failures++;
		return;
	}
	for (size_t n = 0; n <= len; n++) {
		struct config *c = NULL;
		char err[CONFIG_ERROR_MAX];
		int r;

		memcpy(text, full, n);
		text[n] = '\0';
		r = config_load_string(text, NAME, &c, err, sizeof(err));
		if (r == 0) {
			EXPECT_TRUE(c != NULL);
			EXPECT_STR_EQ(err, "");
			config_free(c);
		} else {
			EXPECT_EQ(r, -EINVAL);
			EXPECT_PTR_EQ(c, NULL);
			EXPECT_EQ(strncmp(err, NAME ":", strlen(NAME ":")), 0);
		}
	}
	free(text);
}

TEST(prefix)
{
	static const char *const bad[] = {
		"",
		"/24",
		"192.0.2.1/",
		"192.0.2.1/33",
		"192.0.2.1/024",
		"192.0.2.1/24/",
		"192.0.2.1/24 ",
		"192.0.2.1 /24",
		" 192.0.2.1",
		"192.0.2.01",
		"192.0.2",
		"192.0.2.256",
		"0x1.2.3.4",
		"192.0.2.1/-1",
		"192.0.2.1/+8",
		"192.0.2.1/4294967328",
		"fe80::1%eth0",
		"2001:db8::/129",
		"2001:db8:::1",
		"2001:db8::/64x",
		":",
		"[2001:db8::1]",
		"1111:2222:3333:4444:5555:6666:7777:8888:9999",
		"0000:0000:0000:0000:0000:0000:255.255.255.255x/1",
	};
	struct config_prefix p, saved;

	EXPECT_EQ(config_parse_prefix("192.0.2.1", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET, "192.0.2.1", 32));
	EXPECT_EQ(config_parse_prefix("192.0.2.0/24", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET, "192.0.2.0", 24));
	EXPECT_EQ(config_parse_prefix("0.0.0.0/0", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET, "0.0.0.0", 0));
	EXPECT_EQ(config_parse_prefix("2001:db8::1", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET6, "2001:db8::1", 128));
	EXPECT_EQ(config_parse_prefix("::/0", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET6, "::", 0));
	EXPECT_EQ(config_parse_prefix("::ffff:192.0.2.1/96", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET6, "::ffff:192.0.2.1", 96));
	EXPECT_EQ(config_parse_prefix("0000:0000:0000:0000:0000:0000:255.255.255.255/128", &p), 0);
	EXPECT_TRUE(is_prefix(&p, AF_INET6, "::255.255.255.255", 128));

	memset(&saved, 0x5a, sizeof(saved));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = saved;
		if (config_parse_prefix(bad[i], &p) != -EINVAL) {
			fprintf(stderr, "%s:%d: prefix '%s' accepted\n", __FILE__, __LINE__,
				bad[i]);
			test_failures++;
		}
		EXPECT_MEM_EQ(&p, &saved, sizeof(p));
	}
	EXPECT_EQ(config_parse_prefix(NULL, &p), -EINVAL);
	EXPECT_EQ(config_parse_prefix("192.0.2.1", NULL), -EINVAL);
}

static int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -errno;
}

TEST(files)
{
	char dir[] = "/tmp/test-config-XXXXXX", path[512], err[CONFIG_ERROR_MAX];
	struct config *c;
	char *big;

	if (!mkdtemp(dir)) {
		fprintf(stderr, "%s:%d: mkdtemp: %s\n", __FILE__, __LINE__, strerror(errno));
		test_failures++;
		return;
	}

	snprintf(path, sizeof(path), "%s/good.conf", dir);
	EXPECT_EQ(write_file(path, full, strlen(full)), 0);
	c = NULL;
	EXPECT_EQ(config_load_file(path, &c, err, sizeof(err)), 0);
	if (c) {
		EXPECT_STR_EQ(c->path, path);
		EXPECT_STR_EQ(c->mux[7]->interface, "wwan7");
		config_free(c);
	}

	/* A NUL would hide the rest of the file from inih. */
	snprintf(path, sizeof(path), "%s/nul.conf", dir);
	EXPECT_EQ(write_file(path, DEV "#\0x\n", sizeof(DEV "#\0x\n") - 1), 0);
	c = untouched;
	EXPECT_EQ(config_load_file(path, &c, err, sizeof(err)), -EINVAL);
	EXPECT_PTR_EQ(c, untouched);
	EXPECT_TRUE(strstr(err, "nul.conf:3: NUL byte"));

	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	EXPECT_EQ(write_file(path, DEV "[mux.2]\nip-type = ipv5\n",
			     strlen(DEV "[mux.2]\nip-type = ipv5\n")),
		  0);
	EXPECT_EQ(config_load_file(path, &c, err, sizeof(err)), -EINVAL);
	EXPECT_PTR_EQ(c, untouched);
	{
		char want[600];

		snprintf(want, sizeof(want), "%s:4: invalid ip-type 'ipv5' in [mux.2]: ", path);
		EXPECT_EQ(strncmp(err, want, strlen(want)), 0);
	}

	/* Larger than any config can be. */
	big = malloc(2 * 1024 * 1024);
	if (big) {
		memset(big, '#', 2 * 1024 * 1024);
		snprintf(path, sizeof(path), "%s/big.conf", dir);
		EXPECT_EQ(write_file(path, big, 2 * 1024 * 1024), 0);
		EXPECT_EQ(config_load_file(path, &c, err, sizeof(err)), -EFBIG);
		EXPECT_TRUE(strstr(err, "file too large"));
		unlink(path);
		free(big);
	}

	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	EXPECT_EQ(config_load_file(path, &c, err, sizeof(err)), -ENOENT);
	EXPECT_TRUE(strstr(err, "missing.conf: "));
	EXPECT_EQ(config_load_file(dir, &c, err, sizeof(err)), -EISDIR);
	{
		char longpath[300];

		memset(longpath, 'a', sizeof(longpath) - 1);
		longpath[sizeof(longpath) - 1] = '\0';
		EXPECT_EQ(config_load_file(longpath, &c, err, sizeof(err)), -ENAMETOOLONG);
	}
	EXPECT_EQ(config_load_file(NULL, &c, err, sizeof(err)), -EINVAL);
	EXPECT_PTR_EQ(c, untouched);

	snprintf(path, sizeof(path), "%s/good.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nul.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	unlink(path);
	rmdir(dir);
}

/* A mux from qmapctl or the control socket, key by key. */
TEST(mux_helpers)
{
	struct config_mux m, saved;
	char err[CONFIG_ERROR_MAX], big[CONFIG_VALUE_MAX + 2];

	config_mux_init_defaults(&m, 5);
	EXPECT_EQ(m.id, 5);
	EXPECT_EQ(m.present, false);
	EXPECT_STR_EQ(m.interface, "qmap5");
	EXPECT_EQ(m.ip_type, CONFIG_IP_TYPE_IPV4V6);
	EXPECT_EQ(m.mtu, CONFIG_MTU_DEFAULT);
	EXPECT_EQ(m.headroom, CONFIG_HEADROOM_AUTO);
	EXPECT_EQ(m.default_route, false);
	EXPECT_EQ(m.autoconnect, true);

	EXPECT_EQ(config_mux_set(&m, "apn", "internet", err, sizeof(err)), 0);
	EXPECT_STR_EQ(err, "");
	EXPECT_EQ(config_mux_set(&m, "ip-type", "ipv6", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_set(&m, "password", "s3cret", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_set(&m, "default-route", "yes", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_set(&m, "autoconnect", "no", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_set(&m, "interface", "wwan5", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_set(&m, "routes", "2001:db8::/32", err, sizeof(err)), 0);
	EXPECT_STR_EQ(m.apn, "internet");
	EXPECT_EQ(m.ip_type, CONFIG_IP_TYPE_IPV6);
	EXPECT_STR_EQ(m.password, "s3cret");
	EXPECT_EQ(m.default_route, true);
	EXPECT_EQ(m.autoconnect, false);
	EXPECT_STR_EQ(m.interface, "wwan5");
	EXPECT_EQ(m.n_routes, 1);

	/* Failures leave the mux alone and say what was wrong, without a file or section. */
	saved = m;
	EXPECT_EQ(config_mux_set(&m, "ip-type", "ipv5", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "invalid ip-type 'ipv5': expected ipv4, ipv6 or ipv4v6");
	EXPECT_EQ(config_mux_set(&m, "foo", "bar", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "unknown key 'foo'");
	EXPECT_EQ(config_mux_set(&m, "qmap-version", "5", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "unknown key 'qmap-version' (it belongs in [device])");
	EXPECT_EQ(config_mux_set(&m, "id", "5", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "unknown key 'id'");
	EXPECT_EQ(config_mux_set(&m, "password", "a\nb", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "invalid password: only printable ASCII is allowed");
	EXPECT_EQ(config_mux_set(&m, "routes", "10.0.0.1/8", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "invalid route '10.0.0.1/8': bits set after the prefix length");
	EXPECT_EQ(config_mux_set(&m, "mtu", "67", err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "invalid mtu '67': must be 68..65535");
	/* The file cannot carry values this long, the control socket can. */
	memset(big, 'u', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	EXPECT_EQ(config_mux_set(&m, "user", big, err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "value of 'user' too long (161 bytes, at most 160)");
	EXPECT_EQ(config_mux_set(&m, NULL, "x", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_mux_set(&m, "apn", NULL, err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_mux_set(NULL, "apn", "x", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(config_mux_set(&m, "apn", "a b", NULL, 0), -EINVAL);
	EXPECT_MEM_EQ(&m, &saved, sizeof(m));

	/* Small error buffers: cut, terminated, never overrun. */
	for (size_t len = 1; len < 16; len++) {
		memset(err, 'z', sizeof(err));
		EXPECT_EQ(config_mux_set(&m, "ip-type", "ipv5", err, len), -EINVAL);
		EXPECT_EQ(strlen(err), len - 1);
		EXPECT_EQ(err[len], 'z');
	}

	/* default-route and a ::/0 route would install the same route twice. */
	EXPECT_EQ(config_mux_set(&m, "routes", "::/0", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "default-route duplicates the IPv6 default route in routes; use one "
			   "of them");
	EXPECT_EQ(m.present, false);
	EXPECT_EQ(config_mux_set(&m, "routes", "", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), 0);
	EXPECT_STR_EQ(err, "");
	EXPECT_EQ(m.present, true);

	/* The cross-key checks of a section. */
	config_mux_init_defaults(&m, 1);
	EXPECT_EQ(config_mux_set(&m, "mtu", "576", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "invalid mtu '576': ip-type 'ipv4v6' needs at least 1280");
	EXPECT_EQ(config_mux_set(&m, "ip-type", "ipv4", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_set(&m, "ipv6-address", "2001:db8::1", err, sizeof(err)), 0);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "ipv6-address needs ip-type ipv6 or ipv4v6, not 'ipv4'");

	/* Ids outside 1..254 never pass. */
	config_mux_init_defaults(&m, 0);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ(err, "invalid mux id 0: expected 1..254");
	config_mux_init_defaults(&m, 255);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), -EINVAL);
	config_mux_init_defaults(&m, 4096 + 3);
	EXPECT_EQ(config_mux_finish(&m, err, sizeof(err)), -EINVAL);
	config_mux_init_defaults(&m, 254);
	EXPECT_STR_EQ(m.interface, "qmap254");
	EXPECT_EQ(config_mux_finish(&m, NULL, 0), 0);
	EXPECT_EQ(config_mux_finish(NULL, err, sizeof(err)), -EINVAL);

	/* A run-time mux of a named modem: "<modem>.<N>" unless interface = was given. */
	config_mux_init_defaults(&m, 254);
	config_mux_name_for_modem(&m, "abcdefghijk");
	EXPECT_STR_EQ(m.interface, "abcdefghijk.254");
	config_mux_init_defaults(&m, 3);
	EXPECT_EQ(config_mux_set(&m, "interface", "wwan0", err, sizeof(err)), 0);
	EXPECT_EQ(m.interface_set, true);
	config_mux_name_for_modem(&m, "lte");
	EXPECT_STR_EQ(m.interface, "wwan0");
	config_mux_name_for_modem(NULL, "lte");
}

/*
 * The same value, once in a file and once through config_mux_set(): the messages must be
 * the same but for the file:line prefix and the section.
 */
TEST(mux_helpers_match_file)
{
	static const struct {
		const char *key, *value;
	} cases[] = {
		{ "ip-type", "ipv5" },
		{ "interface", "a/b" },
		{ "apn", "a..b" },
		{ "apn", "inter net" },
		{ "allowed-auth", "none|pap" },
		{ "user", "\x7f" },
		{ "password", "\x01" },
		{ "mtu", "1400x" },
		{ "headroom", "tap" },
		{ "uplink-queue", "cake" },
		{ "codel-interval", "100" },
		{ "ipv4-address", "2001:db8::1" },
		{ "ipv6-address", "192.0.2.1/24" },
		{ "routes", "10.0.0.0/8,,10.1.0.0/16" },
		{ "routes", "10.0.0.0/8 10.0.0.0/8" },
		{ "routes", "1.0.0.0/8 2.0.0.0/8 3.0.0.0/8 4.0.0.0/8 5.0.0.0/8 6.0.0.0/8 "
			    "7.0.0.0/8 8.0.0.0/8 9.0.0.0/8" },
		{ "route-metric", "4294967296" },
		{ "default-route", "2" },
		{ "autoconnect", "nope" },
		{ "qmap-version", "5" },
		{ "bogus", "1" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char text[512], file_err[CONFIG_ERROR_MAX], mux_err[CONFIG_ERROR_MAX];
		char want[CONFIG_ERROR_MAX];
		const char *prefix = NAME ":4: ", *in;
		struct config *c = untouched;
		struct config_mux m;

		snprintf(text, sizeof(text), DEV "[mux.1]\n%s = %s\n", cases[i].key,
			 cases[i].value);
		EXPECT_EQ(config_load_string(text, NAME, &c, file_err, sizeof(file_err)), -EINVAL);
		config_mux_init_defaults(&m, 1);
		EXPECT_EQ(
			config_mux_set(&m, cases[i].key, cases[i].value, mux_err, sizeof(mux_err)),
			-EINVAL);

		/* Remove "test.conf:4: " and the one " in [mux.1]" from the file's message. */
		if (strncmp(file_err, prefix, strlen(prefix)) != 0) {
			fprintf(stderr, "%s:%d: case %zu: unexpected '%s'\n", __FILE__, __LINE__, i,
				file_err);
			test_failures++;
			continue;
		}
		snprintf(want, sizeof(want), "%s", file_err + strlen(prefix));
		in = strstr(want, " in [mux.1]");
		if (in)
			memmove((char *)in, in + strlen(" in [mux.1]"),
				strlen(in + strlen(" in [mux.1]")) + 1);
		EXPECT_STR_EQ(mux_err, want);
	}
}

static struct config *load_ok(const char *text, int line);

#ifdef QMAPD_SOURCE_DIR
/* FILE's commented "[section]" and "key = value" lines from the line starting with MARKER
 * on, uncommented and loaded: an example in comments must stay valid too. */
static struct config *load_commented_example(const char *file, const char *marker, int line)
{
	FILE *f = fopen(file, "re");
	char buf[256], *text = calloc(1, 64 * 1024);
	size_t n = 0;
	bool in_example = false;
	struct config *c;

	if (!f || !text) {
		fprintf(stderr, "%s: cannot read\n", file);
		test_failures++;
		if (f)
			fclose(f);
		free(text);
		return NULL;
	}
	while (fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, marker, strlen(marker)) == 0)
			in_example = true;
		/* "#key = value" and "#[section]", not "# prose" */
		if (in_example && buf[0] == '#' && buf[1] != ' ' && buf[1] != '\n')
			n += (size_t)snprintf(text + n, 64 * 1024 - n, "%s", buf + 1);
	}
	fclose(f);
	EXPECT_TRUE(n > 0);
	c = load_ok(text, line);
	free(text);
	return c;
}
#endif

/* The simulator's example (demo, tests) must stay valid and mean what its comments say. */
TEST(example_sim)
{
#ifdef QMAPD_SOURCE_DIR
	struct config *c = NULL;
	char err[CONFIG_ERROR_MAX];

	EXPECT_EQ(
		config_load_file(QMAPD_SOURCE_DIR "/conf/examples/sim.conf", &c, err, sizeof(err)),
		0);
	if (!c) {
		fprintf(stderr, "conf/examples/sim.conf: %s\n", err);
		test_failures++;
		return;
	}
	EXPECT_STR_EQ(c->device.device, "sim:/run/qmapd/sim.sock");
	EXPECT_EQ(c->device.qmap_version, QMAP_V5);
	EXPECT_EQ(c->device.rx_transfers, 16);
	EXPECT_EQ(count_muxes(c), 2);
	EXPECT_STR_EQ(c->mux[129]->interface, "qmap1");
	EXPECT_STR_EQ(c->mux[129]->apn, "internet");
	EXPECT_EQ(c->mux[129]->ip_type, CONFIG_IP_TYPE_IPV4V6);
	EXPECT_TRUE(is_prefix(&c->mux[129]->ipv4_address, AF_INET, "192.0.2.2", 32));
	EXPECT_TRUE(is_prefix(&c->mux[129]->ipv6_address, AF_INET6, "2001:db8:1::2", 128));
	EXPECT_EQ(c->mux[129]->n_routes, 2);
	EXPECT_TRUE(is_prefix(&c->mux[129]->routes[0], AF_INET, "198.51.100.0", 24));
	EXPECT_TRUE(is_prefix(&c->mux[129]->routes[1], AF_INET6, "2001:db8:ff::", 64));
	EXPECT_STR_EQ(c->mux[130]->interface, "qmap2");
	EXPECT_TRUE(is_prefix(&c->mux[130]->ipv4_address, AF_INET, "203.0.113.2", 32));
	EXPECT_TRUE(is_prefix(&c->mux[130]->ipv6_address, AF_INET6, "2001:db8:2::2", 128));
	EXPECT_EQ(c->discovery, false);
	EXPECT_EQ(c->n_modems, 1);
	EXPECT_STR_EQ(c->modem[0].name, "modem0");
	config_free(c);

	/* Its commented multi-modem example, uncommented, means what its comments say. */
	c = load_commented_example(QMAPD_SOURCE_DIR "/conf/examples/sim.conf", "# Several modems.",
				   __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->discovery, true);
	EXPECT_EQ(c->n_modems, 2);
	EXPECT_STR_EQ(c->modem[0].name, "lte");
	EXPECT_STR_EQ(c->modem[0].device.device, "usb-path:1-1.4");
	EXPECT_EQ(c->modem[0].device.qmap_version, QMAP_V1);
	EXPECT_STR_EQ(c->modem[0].mux[129]->interface, "lte.129");
	EXPECT_STR_EQ(c->modem[1].name, "backup");
	EXPECT_STR_EQ(c->modem[1].mux[129]->interface, "backup.129");
	EXPECT_STR_EQ(c->modem[1].device.control_link, "/run/qmapd/backup.qmi");
	config_free(c);
#else
	fprintf(stderr, "example_sim: QMAPD_SOURCE_DIR not defined, conf/ not checked\n");
#endif
}

/*
 * The default configuration (/etc/qmapd/qmapd.conf) is for real modems: every modem
 * discovered, control = auto, D-Bus when there is a bus, and each modem one session from the
 * [mux.129] template with the modem's default APN and the network's addresses.
 */
TEST(example_default)
{
#ifdef QMAPD_SOURCE_DIR
	struct config *c = NULL;
	struct config_modem m;
	char err[CONFIG_ERROR_MAX];

	EXPECT_EQ(config_load_file(QMAPD_SOURCE_DIR "/conf/qmapd.conf", &c, err, sizeof(err)), 0);
	if (!c) {
		fprintf(stderr, "conf/qmapd.conf: %s\n", err);
		test_failures++;
		return;
	}
	EXPECT_STR_EQ(c->device.device, "");
	EXPECT_EQ(c->discovery, true);
	EXPECT_EQ(c->n_modems, 0);
	EXPECT_TRUE(c->device.control_auto);
	EXPECT_EQ(c->dbus.enabled, CONFIG_DBUS_ENABLED_AUTO);
	EXPECT_EQ(c->dbus.bus, CONFIG_DBUS_SYSTEM);
	EXPECT_EQ(count_muxes(c), 1);
	EXPECT_TRUE(c->mux[129] != NULL);
	EXPECT_STR_EQ(c->mux[129]->apn, "");
	EXPECT_EQ(c->mux[129]->ip_type, CONFIG_IP_TYPE_IPV4V6);
	/* Addresses from the network: nothing static. */
	EXPECT_EQ(c->mux[129]->ipv4_address.prefixlen, 0);
	EXPECT_EQ(c->mux[129]->ipv6_address.prefixlen, 0);
	EXPECT_EQ(c->mux[129]->n_routes, 0);
	EXPECT_TRUE(c->mux[129]->default_route);
	EXPECT_EQ(c->mux[129]->route_metric, 700);
	EXPECT_TRUE(c->mux[129]->autoconnect);

	/* What a discovered modem gets from it. */
	EXPECT_EQ(config_modem_from_template(c, "modem0", "usb-path:1-1", &m), 0);
	EXPECT_TRUE(m.mux[129] != NULL);
	EXPECT_STR_EQ(m.mux[129]->interface, "modem0.129");
	EXPECT_TRUE(m.device.control_auto);
	config_modem_clear(&m);
	config_free(c);

	c = load_commented_example(QMAPD_SOURCE_DIR "/conf/qmapd.conf", "# Several modems,",
				   __LINE__);
	if (!c)
		return;
	EXPECT_EQ(c->discovery, true);
	EXPECT_EQ(c->n_modems, 2);
	EXPECT_STR_EQ(c->modem[0].name, "lte");
	EXPECT_STR_EQ(c->modem[0].mux[129]->interface, "lte.129");
	EXPECT_STR_EQ(c->modem[1].name, "backup");
	EXPECT_EQ(c->modem[1].mux[129]->route_metric, 800);
	config_free(c);
#else
	fprintf(stderr, "example_default: QMAPD_SOURCE_DIR not defined, conf/ not checked\n");
#endif
}

/* downlink-rate: auto sets the flag and no fixed rate; off is 0. */
TEST(downlink_rate_values)
{
	struct config *c = NULL;
	char err[CONFIG_ERROR_MAX];

	EXPECT_EQ(config_load_string("[device]\ndevice=sim:/run/qmapd/sim.sock\n"
				     "downlink-rate = auto\n",
				     NAME, &c, err, sizeof(err)),
		  0);
	if (!c)
		return;
	EXPECT_EQ(c->device.downlink_rate, 0);
	EXPECT_EQ(c->device.downlink_rate_auto, true);
	config_free(c);
	c = NULL;
	EXPECT_EQ(config_load_string("[device]\ndevice=sim:/run/qmapd/sim.sock\n"
				     "downlink-rate = off\n",
				     NAME, &c, err, sizeof(err)),
		  0);
	if (!c)
		return;
	EXPECT_EQ(c->device.downlink_rate, 0);
	EXPECT_EQ(c->device.downlink_rate_auto, false);
	config_free(c);
}

/*
 * Allocation failures. The test is linked with --wrap for malloc, calloc, realloc and free
 * (tests/unit/CMakeLists.txt), so calls from config.c come here: fail_at < 0 lets every one
 * through; otherwise the allocation numbered fail_at (from 0) fails and the rest succeed.
 * live counts what the wrapped calls hold, so a leak shows in either build, not only under
 * LeakSanitizer. Nothing in config.c frees memory that libc allocated, or the reverse.
 */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);

static long fail_at = -1, n_allocs;
static long live;

static bool alloc_fails(void)
{
	return fail_at >= 0 && n_allocs++ == fail_at;
}

void *__wrap_malloc(size_t size)
{
	void *p = alloc_fails() ? NULL : __real_malloc(size);

	live += p != NULL;
	return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
	void *p = alloc_fails() ? NULL : __real_calloc(n, size);

	live += p != NULL;
	return p;
}

void *__wrap_realloc(void *p, size_t size)
{
	void *q;

	if (alloc_fails())
		return NULL;
	q = __real_realloc(p, size);
	live += !p && q;
	return q;
}

void __wrap_free(void *p)
{
	live -= p != NULL;
	__real_free(p);
}

/*
 * Every allocation of a parse fails once, in turn: each time -ENOMEM, "out of memory" at the
 * file, *ret_config untouched and nothing held; past the last one the parse succeeds.
 */
static void parse_each_failing(const char *text, unsigned line)
{
	for (long n = 0;; n++) {
		struct config *c = untouched;
		char err[CONFIG_ERROR_MAX];
		long before = live;
		bool failed;
		int r;

		n_allocs = 0;
		fail_at = n;
		r = config_load_string(text, NAME, &c, err, sizeof(err));
		failed = n_allocs > n;
		fail_at = -1;
		if (!failed) {
			EXPECT_EQ(r, 0);
			if (r == 0)
				config_free(c);
			EXPECT_EQ(live, before);
			/* the config of line `line` needs this many allocations */
			EXPECT_TRUE(n >= 3);
			if (n < 3)
				fprintf(stderr, "line %u: only %ld allocations\n", line, n);
			return;
		}
		if (r != -ENOMEM || c != untouched || !strstr(err, "out of memory") ||
		    live != before) {
			fprintf(stderr,
				"line %u: allocation %ld failing: r=%d, config %s, \"%s\", %ld "
				"allocations held\n",
				line, n, r, c == untouched ? "untouched" : "set", err,
				live - before);
			test_failures++;
			if (r == 0)
				config_free(c);
			return;
		}
	}
}

TEST(out_of_memory)
{
	struct config *c = NULL;
	struct config_modem m, copy;
	char err[CONFIG_ERROR_MAX];
	long before;

	parse_each_failing(full, __LINE__); /* the single modem of device = SPEC */
	parse_each_failing(modems, __LINE__);
	parse_each_failing("[device]\n[mux.1]\n[mux.2]\n[mux.254]\n", __LINE__); /* discovery */

	/* A discovered modem's copy of the template, and a copy of that. */
	EXPECT_EQ(config_load_string(modems, NAME, &c, err, sizeof(err)), 0);
	if (!c)
		return;
	before = live;
	for (long n = 0;; n++) {
		n_allocs = 0;
		fail_at = n;
		int r = config_modem_from_template(c, "modem7", "usb-path:1-4", &m);
		bool failed = n_allocs > n;
		fail_at = -1;
		if (!failed) {
			EXPECT_EQ(r, 0);
			break;
		}
		EXPECT_EQ(r, -ENOMEM);
		EXPECT_EQ(live, before);
	}
	EXPECT_STR_EQ(m.mux[1]->interface, "modem7.1");
	for (long n = 0;; n++) {
		long held = live;

		n_allocs = 0;
		fail_at = n;
		int r = config_modem_copy(&copy, &c->modem[0]);
		bool failed = n_allocs > n;
		fail_at = -1;
		if (!failed) {
			EXPECT_EQ(r, 0);
			break;
		}
		EXPECT_EQ(r, -ENOMEM);
		EXPECT_EQ(live, held);
	}
	config_modem_clear(&copy);
	config_modem_clear(&m);
	EXPECT_EQ(live, before);
	config_free(c);
}

/* Muxes are allocated per section; copies are deep; a mux id is added once. */
TEST(mux_ownership)
{
	struct config_mux *mux[CONFIG_MUX_ID_MAX + 1] = { 0 };
	struct config_modem copy;
	struct config *c;

	c = load_ok(modems, __LINE__);
	if (!c)
		return;
	/* modem a, second in the file: muxes 1 and 3, nothing in between */
	EXPECT_EQ(c->n_modems, 2);
	EXPECT_STR_EQ(c->modem[1].name, "a");
	if (c->n_modems != 2 || strcmp(c->modem[1].name, "a") != 0) {
		config_free(c);
		return;
	}
	EXPECT_TRUE(c->modem[1].mux[1] && c->modem[1].mux[3] && !c->modem[1].mux[2]);
	EXPECT_EQ(config_modem_copy(&copy, &c->modem[1]), 0);
	EXPECT_STR_EQ(copy.name, "a");
	EXPECT_STR_EQ(copy.device.device, "usb:2C7C:0125");
	EXPECT_TRUE(copy.mux[1] && copy.mux[1] != c->modem[1].mux[1]);
	EXPECT_TRUE(copy.mux[3] && !copy.mux[2]);
	if (!copy.mux[3] || !c->modem[1].mux[3]) {
		config_modem_clear(&copy);
		config_free(c);
		return;
	}
	EXPECT_EQ(memcmp(copy.mux[3], c->modem[1].mux[3], sizeof(*copy.mux[3])), 0);
	config_free(c);
	/* The copy lives on without the config. */
	EXPECT_STR_EQ(copy.mux[1]->apn, "a1");
	config_modem_clear(&copy);
	EXPECT_PTR_EQ(copy.mux[1], NULL);
	config_modem_clear(NULL);

	EXPECT_TRUE(config_mux_add(mux, 5) != NULL);
	EXPECT_TRUE(mux[5]->present);
	EXPECT_STR_EQ(mux[5]->interface, "qmap5");
	EXPECT_PTR_EQ(config_mux_add(mux, 5), NULL);
	EXPECT_PTR_EQ(config_mux_add(mux, 0), NULL);
	EXPECT_PTR_EQ(config_mux_add(mux, CONFIG_MUX_ID_MAX + 1), NULL);
	free(mux[5]);
}
