/* SPDX-License-Identifier: MIT */
/*
 * The modes and bands a client lets the modem use (GNOME's Network Mode, mmcli
 * --set-current-modes / --set-current-bands): checked as ModemManager's mm-iface-modem.c
 * checks them (a combination of SupportedModes, bands among SupportedBands, ANY alone), then
 * set through the control plane (QMI: NAS System Selection Preference). CurrentModes and
 * CurrentBands then show what the modem reports back. A control plane that cannot (MBIM
 * without vendor extensions, as ModemManager's generic MBIM modem) answers Unsupported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "modem.h"

struct mmd_call *mmd_call_new(struct mmd_modem *mm, GDBusMethodInvocation *inv,
			      struct mmd_call **slot)
{
	struct mmd_call *c = calloc(1, sizeof(*c));

	if (!c) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return NULL;
	}
	*c = (struct mmd_call){ .mm = mm, .bus = mm->bus, .inv = inv, .slot = slot };
	*slot = c;
	return c;
}

bool mmd_call_done(struct mmd_call *c)
{
	if (c->mm) {
		*c->slot = NULL;
		return true;
	}
	g_dbus_method_invocation_return_error(c->inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
					      "The modem went away");
	return false;
}

void mmd_call_orphan(struct mmd_call **slot)
{
	if (*slot)
		(*slot)->mm = NULL;
	*slot = NULL;
}

/* The modem must be known and its SIM open; ModemManager allows this from DISABLED on. */
static bool usable(struct mmd_modem *mm, GDBusMethodInvocation *inv)
{
	if (mm->state == MM_MODEM_STATE_LOCKED) {
		mmd_reject_locked(mm, inv);
		return false;
	}
	if (mm->state < MM_MODEM_STATE_DISABLED) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "The modem is %s", mm_modem_state_get_string(mm->state));
		return false;
	}
	if (mm->modes_call) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "Modes or bands are being set already");
		return false;
	}
	return true;
}

static void modes_done(void *userdata, int r, const char *message)
{
	struct mmd_call *c = userdata;

	if (!mmd_call_done(c)) {
		free(c);
		return;
	}
	struct mmd_modem *mm = c->mm;
	if (r < 0)
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "Cannot set: %s",
			   message);
	else if (strcmp(g_dbus_method_invocation_get_method_name(c->inv), "SetCurrentModes") == 0)
		mm_gdbus_modem_complete_set_current_modes(mm->iface, c->inv);
	else
		mm_gdbus_modem_complete_set_current_bands(mm->iface, c->inv);
	mmd_schedule_sync(c->bus);
	free(c);
}

static gboolean handle_set_current_modes(MmGdbusModem *iface, GDBusMethodInvocation *inv,
					 GVariant *modes, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	guint32 allowed, preferred;
	bool supported = false;
	GVariantIter it;
	guint32 a, p;

	mm->bus->calls++;
	g_variant_get(modes, "(uu)", &allowed, &preferred);
	if (!modem_can_set_modes(mm->modem)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Setting the modes is not supported by this modem");
		return TRUE;
	}
	if (!usable(mm, inv))
		return TRUE;
	/* ANY means every supported mode (ModemManager's reading): the widest combination. */
	g_variant_iter_init(&it, mm_gdbus_modem_get_supported_modes(iface));
	guint32 widest = 0;
	while (g_variant_iter_next(&it, "(uu)", &a, &p)) {
		if (__builtin_popcount(a) > __builtin_popcount(widest))
			widest = a;
		if (allowed != MM_MODEM_MODE_ANY && a == allowed && p == preferred)
			supported = true;
	}
	if (allowed == MM_MODEM_MODE_ANY && preferred == MM_MODEM_MODE_NONE && widest) {
		allowed = widest;
		supported = true;
	}
	if (!supported) {
		g_autofree char *as = mm_modem_mode_build_string_from_mask(allowed);
		g_autofree char *ps = mm_modem_mode_build_string_from_mask(preferred);
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "The given combination of allowed and preferred modes is not "
			   "supported (allowed '%s', preferred '%s')",
			   as, ps);
		return TRUE;
	}
	struct mmd_call *c = mmd_call_new(mm, inv, &mm->modes_call);
	if (!c)
		return TRUE;
	log_info("dbus: modem %s: modes %#x", modem_name(mm->modem), allowed);
	modem_set_modes(mm->modem, mmd_modes_from_mm(allowed), mmd_modes_from_mm(preferred),
			modes_done, c);
	return TRUE;
}

static gboolean handle_set_current_bands(MmGdbusModem *iface, GDBusMethodInvocation *inv,
					 GVariant *bands, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	struct modem_view view;
	uint64_t lte[MODEM_LTE_BAND_WORDS];
	gsize n = 0;
	guint32 bad;

	(void)iface;
	mm->bus->calls++;
	if (!modem_can_set_bands(mm->modem)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Setting the bands is not supported by this modem");
		return TRUE;
	}
	if (!usable(mm, inv))
		return TRUE;
	const guint32 *list = g_variant_get_fixed_array(bands, &n, sizeof(guint32));
	modem_view(mm->modem, &view);
	int r = mmd_bands_to_lte(list, n, view.info.lte_bands, lte, &bad);
	if (r == -EINVAL) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			   "Invalid list of bands: %s",
			   n == 0 ? "empty" : mm_modem_band_get_string((MMModemBand)bad) ?: "?");
		return TRUE;
	}
	if (r < 0) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Some of the given bands are not supported: %s",
			   mm_modem_band_get_string((MMModemBand)bad) ?: "?");
		return TRUE;
	}
	struct mmd_call *c = mmd_call_new(mm, inv, &mm->modes_call);
	if (!c)
		return TRUE;
	log_info("dbus: modem %s: %zu bands", modem_name(mm->modem), (size_t)n);
	modem_set_bands(mm->modem, lte, modes_done, c);
	return TRUE;
}

void mmd_modes_init(struct mmd_modem *mm)
{
	g_signal_connect(mm->iface, "handle-set-current-modes",
			 G_CALLBACK(handle_set_current_modes), mm);
	g_signal_connect(mm->iface, "handle-set-current-bands",
			 G_CALLBACK(handle_set_current_bands), mm);
}

void mmd_modes_free(struct mmd_modem *mm)
{
	mmd_call_orphan(&mm->modes_call);
}
