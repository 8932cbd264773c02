/* SPDX-License-Identifier: MIT */
/*
 * The SIM's codes on an MBIM modem (mbim-modem.h): MBIM_CID_PIN query (which code the SIM
 * waits for and its tries left) and PIN_LIST (whether PIN1 is enabled), read with the SIM's
 * state and after every change; MBIM_CID_PIN set for ModemManager's SendPin, SendPuk,
 * EnablePin and ChangePin. A modem stopped at a locked SIM keeps its device open for this
 * (mbim-modem.c polls the SIM), and goes on with its open once the SIM is initialized.
 */
#include <errno.h>
#include <stdlib.h>

#include "log-modem.h"
#include "mbim-modem.h"

#define MBIM_PIN_TIMEOUT_SECONDS 10

static void pin_query_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	MbimPinType type;
	MbimPinState state;
	guint32 attempts;

	if (mbim_step_cancelled(error))
		return;
	if (!resp ||
	    !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error) ||
	    !mbim_message_pin_response_parse(resp, &type, &state, &attempts, &error)) {
		/* Status only: the lock stays what SUBSCRIBER_READY_STATUS said. */
		log_modem_debug(mm->path, "PIN query: %s", error->message);
		return;
	}
	mm->have_pin = true;
	mm->pin_type = type;
	mm->pin_state = state;
	mm->pin_attempts = attempts;
	log_modem_info(mm->path, "SIM PIN: %s %s, %u tries left",
		       mbim_pin_type_get_string(type) ?: "?",
		       mbim_pin_state_get_string(state) ?: "?", attempts);
}

static void pin_list_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct mbim_modem *mm = user_data;
	g_autoptr(MbimPinDesc) pin1 = NULL;

	if (mbim_step_cancelled(error))
		return;
	if (!resp ||
	    !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error) ||
	    !mbim_message_pin_list_response_parse(resp, &pin1, NULL, NULL, NULL, NULL, NULL, NULL,
						  NULL, NULL, NULL, &error)) {
		log_modem_debug(mm->path, "PIN list: %s", error->message);
		return;
	}
	mm->pin1_enabled = pin1->pin_mode == MBIM_PIN_MODE_ENABLED    ? 1
			   : pin1->pin_mode == MBIM_PIN_MODE_DISABLED ? 0
								      : -1;
}

void mbim_pin_query(struct mbim_modem *mm)
{
	MbimMessage *msg = mbim_message_pin_query_new(NULL);

	mbim_device_command(mm->device, msg, MBIM_PIN_TIMEOUT_SECONDS, mm->cancellable,
			    pin_query_ready, mm);
	mbim_message_unref(msg);
	msg = mbim_message_pin_list_query_new(NULL);
	mbim_device_command(mm->device, msg, MBIM_PIN_TIMEOUT_SECONDS, mm->cancellable,
			    pin_list_ready, mm);
	mbim_message_unref(msg);
}

struct pin_ctx {
	struct mbim_modem *mm;
	enum modem_pin_op op;
	modem_pin_done done;
	void *userdata;
};

static void pin_set_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = mbim_device_command_finish(MBIM_DEVICE(src), res, &error);
	struct pin_ctx ctx = *(struct pin_ctx *)user_data;
	MbimPinType type = MBIM_PIN_TYPE_UNKNOWN;
	MbimPinState state = MBIM_PIN_STATE_UNLOCKED;
	guint32 attempts = 0;

	g_free(user_data);
	if (mbim_step_cancelled(error)) {
		ctx.done(ctx.userdata, MODEM_PIN_NO_SERVICE, -1, "the modem went away");
		return;
	}
	struct mbim_modem *mm = ctx.mm;
	if (!resp) {
		log_modem_warning(mm->path, "PIN: %s", error->message);
		ctx.done(ctx.userdata, MODEM_PIN_FAILED, -1, error->message);
		return;
	}
	bool ok = mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, &error);
	/* A refusal still carries the PIN_INFO of the code now waited for (MBIM 1.0 10.5.7),
	 * when the modem says it. */
	bool parsed = mbim_message_pin_response_parse(resp, &type, &state, &attempts, NULL);
	MbimStatusError status = MBIM_STATUS_ERROR_NONE;
	if (error && error->domain == MBIM_STATUS_ERROR)
		status = (MbimStatusError)error->code;
	else if (!ok)
		status = MBIM_STATUS_ERROR_FAILURE;
	int retries;
	enum modem_pin_result r =
		mbim_map_pin_result(ok, status, parsed, type, attempts, ctx.op, &retries);
	if (parsed) {
		mm->have_pin = true;
		mm->pin_type = type;
		mm->pin_state = state;
		mm->pin_attempts = attempts;
	}
	log_modem_info(mm->path, "PIN operation %d: %s (%d tries left)", ctx.op,
		       ok ? "done" : error->message, retries);
	/* What changed on the SIM: the lock, PIN1's mode, and the open waiting for it. */
	if (ok || r == MODEM_PIN_BLOCKED || r == MODEM_PIN_SIM_BLOCKED)
		mbim_modem_check_sim(mm);
	ctx.done(ctx.userdata, r, retries, ok ? "" : error->message);
}

void mbim_modem_pin(struct mbim_modem *mm, enum modem_pin_op op, const char *code,
		    const char *new_code, modem_pin_done done, void *userdata)
{
	if (!mm->device || (mm->state != MBIM_MODEM_STATE_READY && !mm->sim_wait)) {
		done(userdata, MODEM_PIN_NO_SERVICE, -1, "the modem is not ready");
		return;
	}
	static const MbimPinOperation ops[] = {
		[MODEM_PIN_OP_VERIFY] = MBIM_PIN_OPERATION_ENTER,
		[MODEM_PIN_OP_UNBLOCK] = MBIM_PIN_OPERATION_ENTER,
		[MODEM_PIN_OP_ENABLE] = MBIM_PIN_OPERATION_ENABLE,
		[MODEM_PIN_OP_DISABLE] = MBIM_PIN_OPERATION_DISABLE,
		[MODEM_PIN_OP_CHANGE] = MBIM_PIN_OPERATION_CHANGE,
	};
	/* A PUK is entered as PUK1 with the new PIN1 (MBIM 1.0 10.5.7). */
	MbimPinType type = op == MODEM_PIN_OP_UNBLOCK ? MBIM_PIN_TYPE_PUK1 : MBIM_PIN_TYPE_PIN1;
	MbimMessage *msg =
		mbim_message_pin_set_new(type, ops[op], code, new_code ? new_code : "", NULL);
	struct pin_ctx *ctx = g_new(struct pin_ctx, 1);

	*ctx = (struct pin_ctx){ .mm = mm, .op = op, .done = done, .userdata = userdata };
	mbim_device_command(mm->device, msg, MBIM_PIN_TIMEOUT_SECONDS, mm->cancellable,
			    pin_set_ready, ctx);
	mbim_message_unref(msg);
}
