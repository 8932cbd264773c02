/* SPDX-License-Identifier: MIT */
/*
 * The Signal interface (mmcli --signal-setup / --signal-get, GNOME's signal details): on a
 * modem whose control plane measures the signal (QMI: NAS Get Signal Info), as ModemManager
 * exports it only where the modem can. Setup(rate) polls every rate seconds and fills one
 * dict per radio the modem reported (Gsm, Umts, Lte, Nr5g: rssi, rsrq, rsrp, snr, ecio in
 * dBm / dB); rate 0 stops it and empties them, as ModemManager's mm-iface-modem-signal.c does.
 * SetupThresholds (reports on change) is not implemented: Unsupported.
 */
#include "log.h"
#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "modem.h"

static GVariant *empty(void)
{
	return g_variant_new_array(G_VARIANT_TYPE("{sv}"), NULL, 0);
}

static void clear_values(MmGdbusModemSignal *s)
{
	mm_gdbus_modem_signal_set_cdma(s, empty());
	mm_gdbus_modem_signal_set_evdo(s, empty());
	mm_gdbus_modem_signal_set_gsm(s, empty());
	mm_gdbus_modem_signal_set_umts(s, empty());
	mm_gdbus_modem_signal_set_lte(s, empty());
	mm_gdbus_modem_signal_set_nr5g(s, empty());
}

bool mmd_signal_exported(const struct mmd_modem *mm)
{
	struct modem_view view;

	/* The control plane measures, and its radio side is there (QMI: a NAS client). */
	return modem_can_refresh_signal(mm->modem) && modem_view(mm->modem, &view) &&
	       view.tells_registration;
}

void mmd_signal_sync(struct mmd_modem *mm)
{
	struct modem_view view;
	MmGdbusModemSignal *s = mm->signal;

	if (!mm->signal_timer || !modem_view(mm->modem, &view))
		return;
	mm_gdbus_modem_signal_set_gsm(s, mmd_signal_dict(&view.signal.gsm));
	mm_gdbus_modem_signal_set_umts(s, mmd_signal_dict(&view.signal.umts));
	mm_gdbus_modem_signal_set_lte(s, mmd_signal_dict(&view.signal.lte));
	mm_gdbus_modem_signal_set_nr5g(s, mmd_signal_dict(&view.signal.nr5g));
}

static gboolean on_poll(gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	/* The answer to the last request is in the view by now; this one shows next time or
	 * at the next sync. */
	mmd_signal_sync(mm);
	modem_refresh_signal(mm->modem);
	return G_SOURCE_CONTINUE;
}

void mmd_signal_stop(struct mmd_modem *mm)
{
	if (mm->signal_timer)
		g_source_remove(mm->signal_timer);
	mm->signal_timer = 0;
	mm_gdbus_modem_signal_set_rate(mm->signal, 0);
	clear_values(mm->signal);
}

static gboolean handle_setup(MmGdbusModemSignal *s, GDBusMethodInvocation *inv, guint rate,
			     gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	mm->bus->calls++;
	mmd_signal_stop(mm);
	if (rate) {
		mm_gdbus_modem_signal_set_rate(s, rate);
		mm->signal_timer = g_timeout_add_seconds(rate, on_poll, mm);
		modem_refresh_signal(mm->modem);
		mmd_schedule_sync(mm->bus);
	}
	if (rate)
		log_info("dbus: modem %s: signal every %u s", modem_name(mm->modem), rate);
	else
		log_info("dbus: modem %s: signal polling stopped", modem_name(mm->modem));
	mm_gdbus_modem_signal_complete_setup(s, inv);
	return TRUE;
}

void mmd_signal_init(struct mmd_modem *mm)
{
	mm->signal = mm_gdbus_modem_signal_skeleton_new();
	mm_gdbus_modem_signal_set_rate(mm->signal, 0);
	mm_gdbus_modem_signal_set_rssi_threshold(mm->signal, 0);
	mm_gdbus_modem_signal_set_error_rate_threshold(mm->signal, FALSE);
	clear_values(mm->signal);
	g_signal_connect(mm->signal, "handle-setup", G_CALLBACK(handle_setup), mm);
}

void mmd_signal_free(struct mmd_modem *mm)
{
	if (mm->signal_timer)
		g_source_remove(mm->signal_timer);
	mm->signal_timer = 0;
	g_signal_handlers_disconnect_by_data(mm->signal, mm);
	g_clear_object(&mm->signal);
}
