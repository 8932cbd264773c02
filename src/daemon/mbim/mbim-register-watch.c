/* SPDX-License-Identifier: MIT */
/*
 * Registration as it changes: an MBIM function sends REGISTER_STATE indications on its own
 * (Basic Connect's notifications are on unless the host turns them off), with the same
 * MBIM_REGISTRATION_STATE_INFO as the answer. Without them a change (roaming starts, the
 * network lets us go) waits for the next poll, up to 30 s; the poll stays.
 */
#include <string.h>

#include "log-modem.h"
#include "mbim-modem.h"

static void on_indicate_status(MbimDevice *device, MbimMessage *msg, gpointer user_data)
{
	struct mbim_modem *mm = user_data;
	g_autoptr(GError) error = NULL;
	char before[sizeof(mm->registration)];

	(void)device;
	if (mbim_message_indicate_status_get_service(msg) != MBIM_SERVICE_BASIC_CONNECT ||
	    mbim_message_indicate_status_get_cid(msg) != MBIM_CID_BASIC_CONNECT_REGISTER_STATE)
		return;
	memcpy(before, mm->registration, sizeof(before));
	if (!mbim_modem_register_state(mm, msg, &error)) {
		log_modem_warning(mm->path, "malformed REGISTER_STATE indication: %s",
				  error->message);
		return;
	}
	if (strcmp(before, mm->registration) != 0)
		log_modem_info(mm->path, "registration %s (indication)", mm->registration);
}

void mbim_register_watch_start(struct mbim_modem *mm)
{
	if (!mm->register_indicate_id)
		mm->register_indicate_id =
			g_signal_connect(mm->device, MBIM_DEVICE_SIGNAL_INDICATE_STATUS,
					 G_CALLBACK(on_indicate_status), mm);
}

void mbim_register_watch_stop(struct mbim_modem *mm)
{
	if (mm->device && mm->register_indicate_id)
		g_signal_handler_disconnect(mm->device, mm->register_indicate_id);
	mm->register_indicate_id = 0;
}
