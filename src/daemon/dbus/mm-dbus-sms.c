/* SPDX-License-Identifier: MIT */
/*
 * One short message on the bus: org.freedesktop.ModemManager1.Sms at SMS/N. A received one is
 * decoded from the PDU the modem stored (sms-pdu.h); a created one holds what Create was given
 * and is encoded when sent: Send hands the modem an SMS-SUBMIT (its state goes sending, then
 * sent or back to unknown), as ModemManager sends a message it did not store. Store is not
 * offered (Core.Unsupported): qmapd sends from memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "modem.h"
#include "sms-pdu.h"

static void set_unknowns(MmGdbusSms *i)
{
	mm_gdbus_sms_set_state(i, MM_SMS_STATE_UNKNOWN);
	mm_gdbus_sms_set_pdu_type(i, MM_SMS_PDU_TYPE_UNKNOWN);
	mm_gdbus_sms_set_number(i, "");
	mm_gdbus_sms_set_text(i, "");
	mm_gdbus_sms_set_data(i, g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, NULL, 0, 1));
	mm_gdbus_sms_set_smsc(i, "");
	mm_gdbus_sms_set_timestamp(i, "");
	mm_gdbus_sms_set_discharge_timestamp(i, "");
	mm_gdbus_sms_set_validity(
		i, g_variant_new("(uv)", MM_SMS_VALIDITY_TYPE_UNKNOWN, g_variant_new_uint32(0)));
	mm_gdbus_sms_set_class(i, -1);
	mm_gdbus_sms_set_delivery_state(i, MM_SMS_DELIVERY_STATE_UNKNOWN);
	mm_gdbus_sms_set_storage(i, MM_SMS_STORAGE_UNKNOWN);
	mm_gdbus_sms_set_service_category(i, MM_SMS_CDMA_SERVICE_CATEGORY_UNKNOWN);
	mm_gdbus_sms_set_teleservice_id(i, MM_SMS_CDMA_TELESERVICE_ID_UNKNOWN);
}

/* ---- Send ----------------------------------------------------------------------------- */

/* A Send waiting for the modem; finds its SMS again by path (it may be gone by then). */
struct send_call {
	struct mm_dbus *bus;
	struct mmd_modem *mm;
	GDBusMethodInvocation *inv;
	char path[MMD_PATH_MAX];
};

static void send_done(void *userdata, int r, const char *message)
{
	struct send_call *c = userdata;
	struct mmd_modem *mm = c->mm;
	struct mmd_sms *s = NULL;

	/* The modem object is only known to be alive if the bus still lists it. */
	for (struct mmd_modem *m = c->bus->modems; m; m = m->next)
		if (m == mm)
			s = mmd_messaging_find(mm, c->path);
	if (s) {
		s->busy = false;
		mm_gdbus_sms_set_state(s->iface, r < 0 ? MM_SMS_STATE_UNKNOWN : MM_SMS_STATE_SENT);
	}
	if (r < 0)
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot send the message: %s", message);
	else {
		log_info("dbus: %s sent", c->path);
		g_dbus_method_invocation_return_value(c->inv, NULL);
	}
	free(c);
}

static gboolean handle_send(MmGdbusSms *iface, GDBusMethodInvocation *inv, gpointer user_data)
{
	struct mmd_sms *s = user_data;
	struct mmd_modem *mm = s->mm;
	uint8_t pdu[SMS_PDU_MAX];

	mm->bus->calls++;
	if (mm_gdbus_sms_get_pdu_type(iface) != MM_SMS_PDU_TYPE_SUBMIT) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			   "Cannot send a received message");
		return TRUE;
	}
	if (s->busy || mm_gdbus_sms_get_state(iface) == MM_SMS_STATE_SENDING) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "The message is being sent already");
		return TRUE;
	}
	if (mmd_sim_locked(mm)) {
		mmd_reject_locked(mm, inv);
		return TRUE;
	}
	int n = sms_pdu_encode_submit(mm_gdbus_sms_get_number(iface), mm_gdbus_sms_get_text(iface),
				      pdu, sizeof(pdu));
	if (n < 0) {
		/* Create checked the same: only a changed limit gets here. */
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot encode the message: %s", strerror(-n));
		return TRUE;
	}
	struct send_call *c = calloc(1, sizeof(*c));
	if (!c) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return TRUE;
	}
	*c = (struct send_call){ .bus = mm->bus, .mm = mm, .inv = inv };
	snprintf(c->path, sizeof(c->path), "%s", s->path);
	s->busy = true;
	mm_gdbus_sms_set_state(iface, MM_SMS_STATE_SENDING);
	modem_sms_send(mm->modem, pdu, (size_t)n, send_done, c);
	return TRUE;
}

/* ---- life cycle --------------------------------------------------------------------------- */

static struct mmd_sms *sms_new(struct mmd_modem *mm)
{
	struct mmd_sms *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->mm = mm;
	s->iface = mm_gdbus_sms_skeleton_new();
	set_unknowns(s->iface);
	g_signal_connect(s->iface, "handle-send", G_CALLBACK(handle_send), s);
	mmd_answer_unsupported(mm->bus, s->iface);
	mmd_auth_watch(mm->bus, s->iface);
	return s;
}

struct mmd_sms *mmd_sms_new_received(struct mmd_modem *mm, const struct modem_sms *m)
{
	struct sms_deliver d;
	int r = sms_pdu_decode_deliver(m->pdu, m->len, &d);

	if (r < 0) {
		log_warning("dbus: modem %s: message %u is no SMS-DELIVER qmapd can read (%zu "
			    "bytes): not shown",
			    modem_name(mm->modem), m->index, m->len);
		return NULL;
	}
	struct mmd_sms *s = sms_new(mm);
	if (!s)
		return NULL;
	MmGdbusSms *i = s->iface;
	s->stored = true;
	s->storage = m->storage;
	s->index = m->index;
	mm_gdbus_sms_set_state(i, MM_SMS_STATE_RECEIVED);
	mm_gdbus_sms_set_pdu_type(i, MM_SMS_PDU_TYPE_DELIVER);
	mm_gdbus_sms_set_storage(i, (MMSmsStorage)m->storage);
	mm_gdbus_sms_set_number(i, d.number);
	mm_gdbus_sms_set_smsc(i, d.smsc);
	mm_gdbus_sms_set_timestamp(i, d.timestamp);
	mm_gdbus_sms_set_class(i, d.message_class);
	if (d.encoding == SMS_ENCODING_8BIT)
		mm_gdbus_sms_set_data(
			i, g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, d.data, d.data_len, 1));
	else
		mm_gdbus_sms_set_text(i, d.text);
	return s;
}

struct mmd_sms *mmd_sms_new_created(struct mmd_modem *mm, GVariant *props, GError **error)
{
	const char *number = NULL, *text = NULL;
	uint8_t pdu[SMS_PDU_MAX];

	if (!g_variant_is_of_type(props, G_VARIANT_TYPE("a{sv}")) ||
	    !g_variant_lookup(props, "number", "&s", &number)) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			    "Missing 'number' in the message properties");
		return NULL;
	}
	if (!g_variant_lookup(props, "text", "&s", &text)) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			    g_variant_lookup_value(props, "data", NULL)
				    ? "Data messages are not supported: give 'text'"
				    : "Missing 'text' in the message properties");
		return NULL;
	}
	int n = sms_pdu_encode_submit(number, text, pdu, sizeof(pdu));
	if (n == -EMSGSIZE) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
			    "The text needs more than one message: multipart messages are not "
			    "supported");
		return NULL;
	}
	if (n < 0) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_INVALID_ARGS,
			    "Invalid number '%s' (a '+' and up to 20 digits) or text", number);
		return NULL;
	}
	struct mmd_sms *s = sms_new(mm);
	if (!s) {
		g_set_error(error, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return NULL;
	}
	mm_gdbus_sms_set_pdu_type(s->iface, MM_SMS_PDU_TYPE_SUBMIT);
	mm_gdbus_sms_set_number(s->iface, number);
	mm_gdbus_sms_set_text(s->iface, text);
	return s;
}

void mmd_sms_export(struct mmd_sms *s)
{
	struct mm_dbus *d = s->mm->bus;
	g_autoptr(GError) error = NULL;

	if (s->path[0] || !d->conn)
		return;
	snprintf(s->path, sizeof(s->path), MMD_PATH "/SMS/%u", d->next_sms_index++);
	if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(s->iface), d->conn, s->path,
					      &error)) {
		log_error("dbus: cannot export %s: %s", s->path, error->message);
		s->path[0] = '\0';
	}
}

void mmd_sms_unexport(struct mmd_sms *s)
{
	if (!s->path[0])
		return;
	g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(s->iface));
	s->path[0] = '\0';
}

void mmd_sms_free(struct mmd_sms *s)
{
	if (!s)
		return;
	mmd_sms_unexport(s);
	g_signal_handlers_disconnect_by_data(s->iface, s);
	mmd_auth_unwatch(s->mm->bus, s->iface);
	g_clear_object(&s->iface);
	free(s);
}
