/* SPDX-License-Identifier: MIT */
/*
 * Network selection on an MBIM modem with MBIM 1.0's basic commands, as ModemManager's
 * generic MBIM modem does it: VISIBLE_PROVIDERS (a full scan) for Scan, REGISTER_STATE set
 * (manual with the provider id, or automatic) for Register. Providers say their state but
 * not their radio (the cellular class is GSM or CDMA, not a technology): the access
 * technology of a scanned network stays unknown.
 */
#include <errno.h>
#include <string.h>

#include "log-modem.h"
#include "mbim-modem.h"

#define MBIM_SCAN_TIMEOUT_SECONDS     300 /* a full scan takes minutes */
#define MBIM_REGISTER_TIMEOUT_SECONDS 120

struct provider_ctx {
	struct mbim_modem *mm;
	modem_done done;
	modem_scan_done scan_done;
	void *userdata;
};

static MbimMessage *finish(GObject *src, GAsyncResult *res, GError **error)
{
	MbimMessage *resp = mbim_device_command_finish(MBIM_DEVICE(src), res, error);

	if (resp && !mbim_message_response_get_result(resp, MBIM_MESSAGE_TYPE_COMMAND_DONE, error))
		g_clear_pointer(&resp, mbim_message_unref);
	return resp;
}

static void scan_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = finish(src, res, &error);
	struct provider_ctx ctx = *(struct provider_ctx *)user_data;
	g_autoptr(MbimProviderArray) providers = NULL;
	guint32 n = 0;

	g_free(user_data);
	if (mbim_step_cancelled(error)) {
		ctx.scan_done(ctx.userdata, -ENODEV, "the modem went away", NULL, 0);
		return;
	}
	if (!resp || !mbim_message_visible_providers_response_parse(resp, &n, &providers, &error)) {
		log_modem_warning(ctx.mm->path, "network scan failed: %s", error->message);
		ctx.scan_done(ctx.userdata, -EIO, error->message, NULL, 0);
		return;
	}
	struct modem_network *nets = g_new0(struct modem_network, n ? n : 1);
	for (guint32 i = 0; i < n; i++) {
		const MbimProvider *p = providers[i];

		snprintf(nets[i].operator_code, sizeof(nets[i].operator_code), "%s",
			 p->provider_id ? p->provider_id : "");
		snprintf(nets[i].operator_long, sizeof(nets[i].operator_long), "%s",
			 p->provider_name ? p->provider_name : "");
		nets[i].status = mbim_map_provider_state(p->provider_state);
	}
	log_modem_info(ctx.mm->path, "network scan: %u networks", n);
	ctx.scan_done(ctx.userdata, 0, "", nets, n);
	g_free(nets);
}

void mbim_provider_scan(struct mbim_modem *mm, modem_scan_done done, void *userdata)
{
	if (mm->state != MBIM_MODEM_STATE_READY) {
		done(userdata, -EAGAIN, "the modem is not ready", NULL, 0);
		return;
	}
	struct provider_ctx *ctx = g_new(struct provider_ctx, 1);
	MbimMessage *msg = mbim_message_visible_providers_query_new(
		MBIM_VISIBLE_PROVIDERS_ACTION_FULL_SCAN, NULL);

	*ctx = (struct provider_ctx){ .mm = mm, .scan_done = done, .userdata = userdata };
	log_modem_info(mm->path, "scanning for networks");
	mbim_device_command(mm->device, msg, MBIM_SCAN_TIMEOUT_SECONDS, mm->cancellable, scan_ready,
			    ctx);
	mbim_message_unref(msg);
}

/* The answer carries the registration that followed: denied is the request's failure. */
static void register_ready(GObject *src, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(MbimMessage) resp = finish(src, res, &error);
	struct provider_ctx ctx = *(struct provider_ctx *)user_data;

	g_free(user_data);
	if (mbim_step_cancelled(error)) {
		ctx.done(ctx.userdata, -ENODEV, "the modem went away");
		return;
	}
	if (!resp || !mbim_modem_register_state(ctx.mm, resp, &error)) {
		log_modem_warning(ctx.mm->path, "register failed: %s", error->message);
		ctx.done(ctx.userdata, -EIO, error->message);
		return;
	}
	if (strcmp(ctx.mm->registration, "denied") == 0) {
		log_modem_warning(ctx.mm->path, "registration denied by the network");
		ctx.done(ctx.userdata, -EACCES, "registration denied by the network");
		return;
	}
	ctx.done(ctx.userdata, 0, "");
}

void mbim_provider_register(struct mbim_modem *mm, const char *operator_id, modem_done done,
			    void *userdata)
{
	if (mm->state != MBIM_MODEM_STATE_READY) {
		done(userdata, -EAGAIN, "the modem is not ready");
		return;
	}
	struct provider_ctx *ctx = g_new(struct provider_ctx, 1);
	/* Data class 0: the modem's choice of radio. */
	MbimMessage *msg = mbim_message_register_state_set_new(
		operator_id,
		*operator_id ? MBIM_REGISTER_ACTION_MANUAL : MBIM_REGISTER_ACTION_AUTOMATIC, 0,
		NULL);

	*ctx = (struct provider_ctx){ .mm = mm, .done = done, .userdata = userdata };
	log_modem_info(mm->path, "registering %s%s", *operator_id ? "in " : "automatically",
		       operator_id);
	mbim_device_command(mm->device, msg, MBIM_REGISTER_TIMEOUT_SECONDS, mm->cancellable,
			    register_ready, ctx);
	mbim_message_unref(msg);
}
