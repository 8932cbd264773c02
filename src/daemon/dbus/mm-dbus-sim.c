/* SPDX-License-Identifier: MIT */
/*
 * The SIM's methods: SendPin, SendPuk, EnablePin and ChangePin through the control plane
 * (QMI: UIM Verify PIN, Unblock PIN, Set PIN Protection, Change PIN; MBIM: MBIM_CID_PIN
 * set), with the errors ModemManager gives (a wrong code is
 * MobileEquipment.IncorrectPassword, a blocked PIN SimPuk), and the error for calls that
 * need the SIM unlocked.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "modem.h"

/* A SIM method waiting for the modem; outlives its modem object if that goes first. */
struct mmd_pin_call {
	struct mmd_modem *mm; /* NULL once the modem object is gone */
	struct mm_dbus *bus;
	GDBusMethodInvocation *inv;
	enum modem_pin_op op;
};

static void complete(struct mmd_pin_call *pc)
{
	MmGdbusSim *sim = pc->mm->sim;

	switch (pc->op) {
	case MODEM_PIN_OP_VERIFY:
		mm_gdbus_sim_complete_send_pin(sim, pc->inv);
		break;
	case MODEM_PIN_OP_UNBLOCK:
		mm_gdbus_sim_complete_send_puk(sim, pc->inv);
		break;
	case MODEM_PIN_OP_ENABLE:
	case MODEM_PIN_OP_DISABLE:
		mm_gdbus_sim_complete_enable_pin(sim, pc->inv);
		break;
	case MODEM_PIN_OP_CHANGE:
		mm_gdbus_sim_complete_change_pin(sim, pc->inv);
		break;
	}
}

static void pin_done(void *userdata, enum modem_pin_result result, int retries, const char *message)
{
	struct mmd_pin_call *pc = userdata;
	struct mm_dbus *bus = pc->bus;
	GDBusMethodInvocation *inv = pc->inv;
	const char *code = pc->op == MODEM_PIN_OP_UNBLOCK ? "PUK" : "PIN";

	if (pc->mm)
		pc->mm->pin_call = NULL;
	if (!pc->mm) {
		/* The modem object is gone (and perhaps the bus): answer without it. */
		g_dbus_method_invocation_return_error(inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED,
						      "The modem went away");
		free(pc);
		return;
	}
	/* ModemManager's errors: a wrong code is MobileEquipment.IncorrectPassword, a PIN
	 * blocked by it SimPuk, a SIM no code opens any more SimFailure. */
	switch (result) {
	case MODEM_PIN_OK:
		complete(pc);
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_WRONG:
		mmd_reject(bus, inv, MM_MOBILE_EQUIPMENT_ERROR,
			   MM_MOBILE_EQUIPMENT_ERROR_INCORRECT_PASSWORD,
			   "Incorrect %s (%d attempts left)", code, retries);
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_BLOCKED:
		mmd_reject(bus, inv, MM_MOBILE_EQUIPMENT_ERROR, MM_MOBILE_EQUIPMENT_ERROR_SIM_PUK,
			   "The PIN is blocked: the PUK is needed");
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_SIM_BLOCKED:
		mmd_reject(bus, inv, MM_MOBILE_EQUIPMENT_ERROR,
			   MM_MOBILE_EQUIPMENT_ERROR_SIM_FAILURE,
			   "The SIM is blocked for good: no PUK attempts left");
		mmd_schedule_sync(bus);
		break;
	case MODEM_PIN_NOT_NEEDED:
		mmd_reject(bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE, "%s",
			   pc->op == MODEM_PIN_OP_ENABLE    ? "The PIN is enabled already"
			   : pc->op == MODEM_PIN_OP_DISABLE ? "The PIN is disabled already"
			   : pc->op == MODEM_PIN_OP_UNBLOCK ? "The PIN is not blocked"
							    : "The SIM has no PIN enabled");
		break;
	case MODEM_PIN_NO_SERVICE:
		mmd_reject(bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "Cannot send the %s: %s", code, message);
		break;
	case MODEM_PIN_FAILED:
	default:
		mmd_reject(bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "Cannot send the %s: %s",
			   code, message);
		break;
	}
	free(pc);
}

/* TS 31.102 / TS 102 221: a PIN is 4 to 8 digits, a PUK 8; anything else never reaches the
 * card. */
static bool valid_code(const char *code, size_t min, size_t max)
{
	size_t len = strlen(code);

	return len >= min && len <= max && strspn(code, "0123456789") == len;
}

static void start(struct mmd_modem *mm, GDBusMethodInvocation *inv, enum modem_pin_op op,
		  const char *code, const char *new_code)
{
	mm->bus->calls++;
	bool puk = op == MODEM_PIN_OP_UNBLOCK;
	if (!valid_code(code, puk ? 8 : 4, 8)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			   puk ? "A PUK is 8 digits" : "A PIN is 4 to 8 digits");
		return;
	}
	if (new_code && !valid_code(new_code, 4, 8)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			   "The new PIN is not 4 to 8 digits");
		return;
	}
	if (!modem_can_pin(mm->modem)) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "This modem takes no SIM codes");
		return;
	}
	if (mm->pin_call) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "A SIM code is being sent already");
		return;
	}
	struct mmd_pin_call *pc = calloc(1, sizeof(*pc));
	if (!pc) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return;
	}
	*pc = (struct mmd_pin_call){ .mm = mm, .bus = mm->bus, .inv = inv, .op = op };
	mm->pin_call = pc;
	/* May answer at once (modem not ready): pin_done() clears mm->pin_call itself. */
	modem_pin(mm->modem, op, code, new_code, pin_done, pc);
}

static gboolean handle_send_pin(MmGdbusSim *sim, GDBusMethodInvocation *inv, const gchar *pin,
				gpointer user_data)
{
	(void)sim;
	start(user_data, inv, MODEM_PIN_OP_VERIFY, pin, NULL);
	return TRUE;
}

static gboolean handle_send_puk(MmGdbusSim *sim, GDBusMethodInvocation *inv, const gchar *puk,
				const gchar *pin, gpointer user_data)
{
	(void)sim;
	start(user_data, inv, MODEM_PIN_OP_UNBLOCK, puk, pin);
	return TRUE;
}

static gboolean handle_enable_pin(MmGdbusSim *sim, GDBusMethodInvocation *inv, const gchar *pin,
				  gboolean enabled, gpointer user_data)
{
	(void)sim;
	start(user_data, inv, enabled ? MODEM_PIN_OP_ENABLE : MODEM_PIN_OP_DISABLE, pin, NULL);
	return TRUE;
}

static gboolean handle_change_pin(MmGdbusSim *sim, GDBusMethodInvocation *inv, const gchar *old_pin,
				  const gchar *new_pin, gpointer user_data)
{
	(void)sim;
	start(user_data, inv, MODEM_PIN_OP_CHANGE, old_pin, new_pin);
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
	g_signal_connect(mm->sim, "handle-send-puk", G_CALLBACK(handle_send_puk), mm);
	g_signal_connect(mm->sim, "handle-enable-pin", G_CALLBACK(handle_enable_pin), mm);
	g_signal_connect(mm->sim, "handle-change-pin", G_CALLBACK(handle_change_pin), mm);
}

void mmd_sim_free(struct mmd_modem *mm)
{
	if (mm->pin_call)
		mm->pin_call->mm = NULL;
	mm->pin_call = NULL;
	g_signal_handlers_disconnect_by_data(mm->sim, mm);
}
