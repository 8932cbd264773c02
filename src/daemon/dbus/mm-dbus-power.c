/* SPDX-License-Identifier: MIT */
/*
 * The modem's power as ModemManager's clients switch it for airplane mode: NetworkManager
 * disables the modem (Enable(false)), then asks for low power (SetPowerState(LOW)); Enable(true)
 * powers it up again. The control plane does it (QMI: DMS Set Operating Mode; MBIM:
 * RADIO_STATE); PowerState follows what the modem then reports. As in ModemManager's
 * mm-iface-modem.c, LOW and ON are only for a disabled modem (low power implies disabled, so
 * no session is up), and OFF needs a power-off qmapd has no way to undo: Unsupported.
 */
#include <stdlib.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "modem.h"

/* A power change waiting for the modem; outlives its modem object if that goes first. */
struct mmd_power_call {
	struct mmd_modem *mm; /* NULL once the modem object is gone */
	struct mm_dbus *bus;
	GDBusMethodInvocation *inv;
	bool enable; /* an Enable(true) that powers up first (else SetPowerState) */
};

static void power_done(void *userdata, int r, const char *message)
{
	struct mmd_power_call *pc = userdata;
	struct mmd_modem *mm = pc->mm;

	if (mm)
		mm->power_call = NULL;
	if (!pc->inv) {
		if (r < 0 && mm)
			log_warning("dbus: modem %s: cannot power up: %s", modem_name(mm->modem),
				    message);
		if (mm)
			mmd_schedule_sync(pc->bus);
		free(pc);
		return;
	}
	if (!mm) {
		g_dbus_method_invocation_return_error(pc->inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
						      "The modem went away");
		free(pc);
		return;
	}
	if (r < 0)
		mmd_reject(pc->bus, pc->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot set the power state: %s", message);
	else if (pc->enable) {
		mmd_modem_enable(mm);
		mm_gdbus_modem_complete_enable(mm->iface, pc->inv);
	} else
		mm_gdbus_modem_complete_set_power_state(mm->iface, pc->inv);
	mmd_schedule_sync(pc->bus);
	free(pc);
}

static void power_start(struct mmd_modem *mm, GDBusMethodInvocation *inv, bool on, bool enable)
{
	struct mmd_power_call *pc = calloc(1, sizeof(*pc));

	if (!pc) {
		if (inv)
			mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
				   "out of memory");
		return;
	}
	*pc = (struct mmd_power_call){ .mm = mm, .bus = mm->bus, .inv = inv, .enable = enable };
	mm->power_call = pc;
	log_info("dbus: modem %s: %s", modem_name(mm->modem), on ? "powering up" : "low power");
	/* May answer at once (modem not ready): power_done() clears mm->power_call itself. */
	modem_set_power(mm->modem, on, power_done, pc);
}

static enum modem_power_state power_now(const struct mmd_modem *mm)
{
	struct modem_view view;

	return modem_view(mm->modem, &view) ? view.info.power : MODEM_POWER_UNKNOWN;
}

bool mmd_power_low(const struct mmd_modem *mm)
{
	return power_now(mm) == MODEM_POWER_LOW;
}

void mmd_power_up_enable(struct mmd_modem *mm, GDBusMethodInvocation *inv)
{
	if (mm->power_call) {
		if (inv)
			mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
				   "The power state is being changed already");
		return;
	}
	power_start(mm, inv, true, true);
}

static gboolean handle_set_power_state(MmGdbusModem *iface, GDBusMethodInvocation *inv, guint state,
				       gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	mm->bus->calls++;
	if (state != MM_MODEM_POWER_STATE_LOW && state != MM_MODEM_POWER_STATE_ON &&
	    state != MM_MODEM_POWER_STATE_OFF) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			   "Cannot set power state %u", state);
		return TRUE;
	}
	if (state == MM_MODEM_POWER_STATE_OFF) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Powering the modem off is not supported");
		return TRUE;
	}
	if (!mm->disabled) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "Cannot set power state: not in disabled state");
		return TRUE;
	}
	if (mm->power_call) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "The power state is being changed already");
		return TRUE;
	}
	if (!modem_can_set_power(mm->modem)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "This modem's power cannot be switched");
		return TRUE;
	}
	/* Already there: nothing to ask the modem (ModemManager answers at once too). */
	if ((unsigned)power_now(mm) == state) {
		mm_gdbus_modem_complete_set_power_state(iface, inv);
		return TRUE;
	}
	power_start(mm, inv, state == MM_MODEM_POWER_STATE_ON, false);
	return TRUE;
}

void mmd_power_init(struct mmd_modem *mm)
{
	g_signal_connect(mm->iface, "handle-set-power-state", G_CALLBACK(handle_set_power_state),
			 mm);
}

void mmd_power_free(struct mmd_modem *mm)
{
	if (mm->power_call)
		mm->power_call->mm = NULL;
	mm->power_call = NULL;
}
