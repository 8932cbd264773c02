/* SPDX-License-Identifier: MIT */
/*
 * Modem3gpp's network selection: Scan (mmcli --3gpp-scan) and Register (a network chosen by
 * its MCC+MNC, NetworkManager's gsm.network-id, or "" for automatic) through the control
 * plane (QMI: NAS Network Scan, Initiate Network Register). As in ModemManager's
 * mm-iface-modem-3gpp.c, both need an enabled modem, and Scan answers one dict per network:
 * operator-code, operator-long, status (MMModem3gppNetworkAvailability) and
 * access-technology.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "modem.h"

static bool usable(struct mmd_modem *mm, GDBusMethodInvocation *inv, bool can)
{
	if (!can) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "%s is not supported by this modem",
			   g_dbus_method_invocation_get_method_name(inv));
		return false;
	}
	if (mm->state == MM_MODEM_STATE_LOCKED) {
		mmd_reject_locked(mm, inv);
		return false;
	}
	if (mm->state < MM_MODEM_STATE_ENABLED) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "The modem is %s: not enabled", mm_modem_state_get_string(mm->state));
		return false;
	}
	if (mm->m3gpp_call) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "A scan or registration is under way");
		return false;
	}
	return true;
}

static void scan_done(void *userdata, int r, const char *message, const struct modem_network *nets,
		      size_t n)
{
	struct mmd_call *c = userdata;
	GVariantBuilder b;

	if (!mmd_call_done(c)) {
		free(c);
		return;
	}
	if (r < 0) {
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot scan networks: %s", message);
		free(c);
		return;
	}
	g_variant_builder_init(&b, G_VARIANT_TYPE("aa{sv}"));
	for (size_t i = 0; i < n; i++) {
		g_variant_builder_open(&b, G_VARIANT_TYPE("a{sv}"));
		g_variant_builder_add(
			&b, "{sv}", "status",
			g_variant_new_uint32(mmd_network_availability(nets[i].status)));
		g_variant_builder_add(&b, "{sv}", "operator-code",
				      g_variant_new_string(nets[i].operator_code));
		if (nets[i].operator_long[0])
			g_variant_builder_add(&b, "{sv}", "operator-long",
					      g_variant_new_string(nets[i].operator_long));
		if (nets[i].access_technology != MODEM_ACCESS_UNKNOWN)
			g_variant_builder_add(&b, "{sv}", "access-technology",
					      g_variant_new_uint32(mmd_access_technology(
						      nets[i].access_technology)));
		g_variant_builder_close(&b);
	}
	mm_gdbus_modem3gpp_complete_scan(c->mm->m3gpp, c->inv, g_variant_builder_end(&b));
	free(c);
}

static gboolean handle_scan(MmGdbusModem3gpp *iface, GDBusMethodInvocation *inv, gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	(void)iface;
	mm->bus->calls++;
	if (!usable(mm, inv, modem_can_scan(mm->modem)))
		return TRUE;
	struct mmd_call *c = mmd_call_new(mm, inv, &mm->m3gpp_call);
	if (c)
		modem_scan(mm->modem, scan_done, c);
	return TRUE;
}

static void register_done(void *userdata, int r, const char *message)
{
	struct mmd_call *c = userdata;

	if (!mmd_call_done(c)) {
		free(c);
		return;
	}
	if (r == -EACCES)
		mmd_reject(c->bus, c->inv, MM_MOBILE_EQUIPMENT_ERROR,
			   MM_MOBILE_EQUIPMENT_ERROR_NETWORK_NOT_ALLOWED, "Cannot register: %s",
			   message);
	else if (r < 0)
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot register: %s", message);
	else
		mm_gdbus_modem3gpp_complete_register(c->mm->m3gpp, c->inv);
	mmd_schedule_sync(c->bus);
	free(c);
}

static gboolean handle_register(MmGdbusModem3gpp *iface, GDBusMethodInvocation *inv,
				const gchar *operator_id, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	size_t len = strlen(operator_id);

	(void)iface;
	mm->bus->calls++;
	/* ModemManager's check: an operator id is the MCC and MNC, 5 or 6 digits. */
	if (len && ((len != 5 && len != 6) || strspn(operator_id, "0123456789") != len)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			   "Invalid operator id '%s': 5 or 6 digits (MCC and MNC) expected",
			   operator_id);
		return TRUE;
	}
	if (!usable(mm, inv, modem_can_register_network(mm->modem)))
		return TRUE;
	struct mmd_call *c = mmd_call_new(mm, inv, &mm->m3gpp_call);
	if (!c)
		return TRUE;
	log_info("dbus: modem %s: register %s", modem_name(mm->modem),
		 len ? operator_id : "automatically");
	modem_register_network(mm->modem, operator_id, register_done, c);
	return TRUE;
}

void mmd_3gpp_init(struct mmd_modem *mm)
{
	g_signal_connect(mm->m3gpp, "handle-scan", G_CALLBACK(handle_scan), mm);
	g_signal_connect(mm->m3gpp, "handle-register", G_CALLBACK(handle_register), mm);
}

void mmd_3gpp_free(struct mmd_modem *mm)
{
	mmd_call_orphan(&mm->m3gpp_call);
	g_signal_handlers_disconnect_by_data(mm->m3gpp, mm);
}
