/* SPDX-License-Identifier: MIT */
/*
 * The SIM's methods: SendPin through the control plane (QMI: UIM Verify PIN), with the
 * errors ModemManager gives
 * (a wrong PIN is MobileEquipment.IncorrectPassword, a blocked one SimPuk), and the error
 * for calls that need the SIM unlocked.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "modem.h"

/* A SendPin waiting for the modem; outlives its modem object if that goes first. */
struct mmd_pin_call {
	struct mmd_modem *mm; /* NULL once the modem object is gone */
	struct mm_dbus *bus;
	GDBusMethodInvocation *inv;
};

static void pin_done(void *userdata, enum modem_pin_result result, int retries, const char *message)
{
	struct mmd_pin_call *pc = userdata;
	struct mm_dbus *bus = pc->bus;
	GDBusMethodInvocation *inv = pc->inv;

	if (pc->mm)
		pc->mm->pin_call = NULL;
	if (!pc->mm) {
		/* The modem object is gone (and perhaps the bus): answer without it. */
		g_dbus_method_invocation_return_error(inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
						      "The modem went away");
		free(pc);
		return;
	}
	switch (result) {
	case MODEM_PIN_OK:
		mm_gdbus_sim_complete_send_pin(pc->mm->sim, inv);
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_WRONG:
		mmd_reject(bus, inv, MM_MOBILE_EQUIPMENT_ERROR,
			   MM_MOBILE_EQUIPMENT_ERROR_INCORRECT_PASSWORD,
			   "Incorrect PIN (%d attempts left)", retries);
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_BLOCKED:
		mmd_reject(bus, inv, MM_MOBILE_EQUIPMENT_ERROR, MM_MOBILE_EQUIPMENT_ERROR_SIM_PUK,
			   "The PIN is blocked: the PUK is needed");
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_NOT_NEEDED:
	case MODEM_PIN_NO_SERVICE:
		mmd_reject(bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "Cannot send the PIN: %s",
			   result == MODEM_PIN_NOT_NEEDED ? "the SIM has no PIN enabled" : message);
		break;
	case MODEM_PIN_FAILED:
	default:
		mmd_reject(bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "Cannot send the PIN: %s",
			   message);
		break;
	}
	free(pc);
}

static gboolean handle_send_pin(MmGdbusSim *sim, GDBusMethodInvocation *inv, const gchar *pin,
				gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	size_t len = strlen(pin);

	(void)sim;
	mm->bus->calls++;
	/* TS 31.102: a PIN is 4 to 8 digits; anything else never reaches the card. */
	if (len < 4 || len > 8 || strspn(pin, "0123456789") != len) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			   "A PIN is 4 to 8 digits");
		return TRUE;
	}
	if (!modem_can_verify_pin(mm->modem)) {
		/* MBIM: PIN entry (MBIM_CID_PIN) is not implemented. */
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "PIN entry is not supported on MBIM modems");
		return TRUE;
	}
	if (mm->pin_call) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "A PIN is being verified already");
		return TRUE;
	}
	struct mmd_pin_call *pc = calloc(1, sizeof(*pc));
	if (!pc) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return TRUE;
	}
	*pc = (struct mmd_pin_call){ .mm = mm, .bus = mm->bus, .inv = inv };
	mm->pin_call = pc;
	/* May answer at once (modem not ready): pin_done() clears mm->pin_call itself. */
	modem_verify_pin(mm->modem, pin, pin_done, pc);
	return TRUE;
}

bool mmd_sim_locked(const struct mmd_modem *mm)
{
	struct modem_view view;

	return modem_view(mm->modem, &view) && modem_info_sim_locked(&view.info);
}

void mmd_reject_locked(struct mmd_modem *mm, GDBusMethodInvocation *inv)
{
	struct modem_view view;

	modem_view(mm->modem, &view);
	bool puk = view.info.lock == MODEM_LOCK_SIM_PUK;

	mmd_reject(mm->bus, inv, MM_MOBILE_EQUIPMENT_ERROR,
		   puk ? MM_MOBILE_EQUIPMENT_ERROR_SIM_PUK : MM_MOBILE_EQUIPMENT_ERROR_SIM_PIN,
		   "The SIM is locked: %s required", puk ? "SIM PUK" : "SIM PIN");
}

void mmd_sim_init(struct mmd_modem *mm)
{
	g_signal_connect(mm->sim, "handle-send-pin", G_CALLBACK(handle_send_pin), mm);
}

void mmd_sim_free(struct mmd_modem *mm)
{
	if (mm->pin_call)
		mm->pin_call->mm = NULL;
	mm->pin_call = NULL;
	g_signal_handlers_disconnect_by_data(mm->sim, mm);
}
