/* SPDX-License-Identifier: MIT */
/*
 * The Time interface (mmcli --time): GetNetworkTime asks the modem for the network's time
 * (QMI: NAS Get Network Time) and answers it in ISO 8601; NetworkTimezone is the zone of the
 * last answer. As ModemManager checks support before it adds the interface, the modem object
 * gets it once the modem has answered such a request (qmapd asks once the modem is ready);
 * a modem that cannot (MBIM: ModemManager needs Microsoft's extension for NITZ) never has it.
 */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "modem.h"

static void time_done(void *userdata, int r, const char *message,
		      const struct modem_network_time *t)
{
	struct mmd_call *c = userdata;
	g_autofree char *iso = r == 0 ? mmd_network_time_iso8601(t) : NULL;

	if (!mmd_call_done(c)) {
		free(c);
		return;
	}
	if (r == 0 && iso)
		mm_gdbus_modem_time_complete_get_network_time(c->mm->time, c->inv, iso);
	else if (r == 0)
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "The modem told a date that does not exist");
	else if (r == -EOPNOTSUPP)
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Cannot load network time: %s", message);
	else
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot load network time: %s", message);
	mmd_schedule_sync(c->bus); /* the zone may be new */
	free(c);
}

static gboolean handle_get_network_time(MmGdbusModemTime *iface, GDBusMethodInvocation *inv,
					gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	(void)iface;
	mm->bus->calls++;
	/* ModemManager's check: the network's time comes with registration. */
	if (mm->state < MM_MODEM_STATE_ENABLED) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "Cannot load network time: device not yet enabled");
		return TRUE;
	}
	if (mm->time_call) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "The network time is being asked already");
		return TRUE;
	}
	struct mmd_call *c = mmd_call_new(mm, inv, &mm->time_call);
	if (c)
		modem_network_time(mm->modem, time_done, c);
	return TRUE;
}

void mmd_time_sync(struct mmd_modem *mm)
{
	struct modem_view view;

	if (!mm->object || !modem_view(mm->modem, &view) || !view.info.tells_time)
		return;
	if (view.info.have_zone)
		mm_gdbus_modem_time_set_network_timezone(
			mm->time, mmd_network_timezone(view.info.zone_offset_minutes,
						       view.info.zone_dst_minutes));
	if (mm->time_exported)
		return;
	mm_gdbus_object_skeleton_set_modem_time(mm->object, mm->time);
	mm->time_exported = true;
	log_info("dbus: modem %s tells the network's time: Time interface added",
		 modem_name(mm->modem));
}

void mmd_time_init(struct mmd_modem *mm)
{
	mm->time = mm_gdbus_modem_time_skeleton_new();
	mm_gdbus_modem_time_set_network_timezone(
		mm->time, g_variant_new_array(G_VARIANT_TYPE("{sv}"), NULL, 0));
	g_signal_connect(mm->time, "handle-get-network-time", G_CALLBACK(handle_get_network_time),
			 mm);
}

void mmd_time_free(struct mmd_modem *mm)
{
	mmd_call_orphan(&mm->time_call);
	g_signal_handlers_disconnect_by_data(mm->time, mm);
	g_clear_object(&mm->time);
}
