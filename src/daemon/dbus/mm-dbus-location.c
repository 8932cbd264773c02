/* SPDX-License-Identifier: MIT */
/*
 * Modem.Location with ModemManager's 3GPP LAC/CI source only: the serving cell's MCC, MNC,
 * LAC, cell id and TAC as the control plane reads them (QMI: NAS Get Serving System's 3GPP
 * cell id, LAC and LTE TAC TLVs, what ModemManager's QMI modem reads too). GPS and CDMA base
 * station sources are not offered. The interface is on the modem only while the control
 * plane can tell the cell (modem_view.tells_cell): basic MBIM's REGISTER_STATE names the
 * provider but no cell, so an MBIM modem has no Location interface rather than one whose
 * only source never has a value. Setup enables the source and, with signal_location, the
 * Location property then follows the cell; GetLocation answers the cell now, or an empty
 * dictionary while it is not known (not registered), as ModemManager does.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "modem.h"

struct mmd_location {
	MmGdbusModemLocation *iface;
	bool on_object;
};

char *mmd_location_3gpp_string(const char *operator_code, const struct modem_cell *cell)
{
	size_t n = operator_code ? strlen(operator_code) : 0;

	/* ModemManager needs an operator, a LAC or TAC, and a cell id for the string. */
	if (!cell->known || (n != 5 && n != 6) || strspn(operator_code, "0123456789") != n ||
	    !cell->cell_id || (!cell->lac && !cell->tac))
		return NULL;
	return g_strdup_printf("%.3s,%s,%X,%X,%X", operator_code, operator_code + 3, cell->lac,
			       cell->cell_id, cell->tac);
}

static GVariant *location_now(struct mmd_modem *mm)
{
	struct mmd_location *l = mm->location;
	struct modem_view view;
	GVariantBuilder b;

	g_variant_builder_init(&b, G_VARIANT_TYPE("a{uv}"));
	if ((mm_gdbus_modem_location_get_enabled(l->iface) &
	     MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI) &&
	    modem_view(mm->modem, &view) && view.state == MODEM_CONTROL_READY) {
		g_autofree char *s = mmd_location_3gpp_string(view.operator_code, &view.cell);
		if (s)
			g_variant_builder_add(&b, "{uv}", MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI,
					      g_variant_new_string(s));
	}
	return g_variant_builder_end(&b);
}

static void update_property(struct mmd_modem *mm)
{
	struct mmd_location *l = mm->location;
	GVariant *now = location_now(mm);

	/* Only a signalled location is published (ModemManager's rule): else it stays empty. */
	if (!mm_gdbus_modem_location_get_signals_location(l->iface)) {
		g_variant_unref(g_variant_ref_sink(now));
		GVariantBuilder b;
		g_variant_builder_init(&b, G_VARIANT_TYPE("a{uv}"));
		now = g_variant_builder_end(&b);
	}
	GVariant *old = mm_gdbus_modem_location_get_location(l->iface);
	if (old && g_variant_equal(old, now)) {
		g_variant_unref(g_variant_ref_sink(now));
		return;
	}
	mm_gdbus_modem_location_set_location(l->iface, now);
}

void mmd_location_sync(struct mmd_modem *mm)
{
	struct mmd_location *l = mm->location;
	struct modem_view view;

	if (!l || !mm->object || !modem_view(mm->modem, &view))
		return;
	if (!view.tells_cell)
		return;
	if (!l->on_object) {
		mm_gdbus_object_skeleton_set_modem_location(mm->object, l->iface);
		l->on_object = true;
	}
	update_property(mm);
}

static gboolean handle_setup(MmGdbusModemLocation *iface, GDBusMethodInvocation *inv, guint sources,
			     gboolean signal_location, gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	mm->bus->calls++;
	if (sources & ~(guint)MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Cannot enable unsupported location sources: only 3GPP LAC/CI is "
			   "offered");
		return TRUE;
	}
	mm_gdbus_modem_location_set_enabled(iface, sources);
	mm_gdbus_modem_location_set_signals_location(iface, signal_location);
	log_info("dbus: modem %s: location 3GPP %s%s", modem_name(mm->modem),
		 sources ? "enabled" : "disabled", signal_location ? ", signalled" : "");
	update_property(mm);
	mm_gdbus_modem_location_complete_setup(iface, inv);
	return TRUE;
}

static gboolean handle_get_location(MmGdbusModemLocation *iface, GDBusMethodInvocation *inv,
				    gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	mm->bus->calls++;
	mm_gdbus_modem_location_complete_get_location(iface, inv, location_now(mm));
	return TRUE;
}

void mmd_location_init(struct mmd_modem *mm)
{
	struct mmd_location *l = calloc(1, sizeof(*l));
	GVariantBuilder b;

	if (!l)
		return;
	mm->location = l;
	l->iface = mm_gdbus_modem_location_skeleton_new();
	mm_gdbus_modem_location_set_capabilities(l->iface, MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI);
	mm_gdbus_modem_location_set_supported_assistance_data(
		l->iface, MM_MODEM_LOCATION_ASSISTANCE_DATA_TYPE_NONE);
	mm_gdbus_modem_location_set_enabled(l->iface, MM_MODEM_LOCATION_SOURCE_NONE);
	mm_gdbus_modem_location_set_signals_location(l->iface, FALSE);
	mm_gdbus_modem_location_set_supl_server(l->iface, "");
	mm_gdbus_modem_location_set_gps_refresh_rate(l->iface, 0);
	mm_gdbus_modem_location_set_assistance_data_servers(l->iface,
							    (const gchar *const[]){ NULL });
	g_variant_builder_init(&b, G_VARIANT_TYPE("a{uv}"));
	mm_gdbus_modem_location_set_location(l->iface, g_variant_builder_end(&b));
	g_signal_connect(l->iface, "handle-setup", G_CALLBACK(handle_setup), mm);
	g_signal_connect(l->iface, "handle-get-location", G_CALLBACK(handle_get_location), mm);
	mmd_answer_unsupported(mm->bus, l->iface);
	mmd_auth_watch(mm->bus, l->iface);
}

void mmd_location_unexport(struct mmd_modem *mm)
{
	if (mm->location)
		mm->location->on_object = false;
}

void mmd_location_free(struct mmd_modem *mm)
{
	struct mmd_location *l = mm->location;

	if (!l)
		return;
	g_signal_handlers_disconnect_by_data(l->iface, mm);
	mmd_auth_unwatch(mm->bus, l->iface);
	g_clear_object(&l->iface);
	free(l);
	mm->location = NULL;
}
