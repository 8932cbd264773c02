/* SPDX-License-Identifier: MIT */
/*
 * Modem.Messaging: the modem's stored messages as SMS objects (mm-dbus-sms.c), listed from
 * the modem when its messaging is up and again whenever it says a new message was stored
 * (modem_view.sms_received), each new one announced with Added(path, received); Create makes a
 * message to send, Delete removes one from the modem's storage and the bus. The interface is
 * on the modem object only while the control plane can do messaging (modem_view.tells_sms):
 * QMI with WMS. Storages: the modem's memory (ME, QMI NV), where received messages are routed,
 * and the SIM (SM, QMI UIM), which is read too.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"
#include "modem.h"

struct mmd_messaging {
	MmGdbusModemMessaging *iface;
	bool on_object;		/* set on mm->object */
	struct mmd_sms *list;	/* newest last */
	bool listed;		/* listed once since the modem became ready */
	bool listing;		/* a list waits for the modem */
	unsigned list_received; /* sms_received when the running list started */
	unsigned seen_received; /* ... when the last one that finished started */
	uint64_t undecodable;	/* stored messages that were no readable SMS-DELIVER */
};

/* A list or Delete waiting for the modem; outlives the modem object if that goes first. */
struct msg_call {
	struct mm_dbus *bus;
	struct mmd_modem *mm;	    /* checked against the bus's modems before use */
	GDBusMethodInvocation *inv; /* Delete's; NULL for a list */
	char path[MMD_PATH_MAX];
};

static bool modem_alive(struct mm_dbus *d, const struct mmd_modem *mm)
{
	for (struct mmd_modem *m = d->modems; m; m = m->next)
		if (m == mm)
			return true;
	return false;
}

struct mmd_sms *mmd_messaging_find(struct mmd_modem *mm, const char *path)
{
	if (!mm->messaging)
		return NULL;
	for (struct mmd_sms *s = mm->messaging->list; s; s = s->next)
		if (s->path[0] && strcmp(s->path, path) == 0)
			return s;
	return NULL;
}

static void update_messages(struct mmd_modem *mm)
{
	struct mmd_messaging *g = mm->messaging;
	GPtrArray *paths = g_ptr_array_new();

	for (struct mmd_sms *s = g->list; s; s = s->next)
		if (s->path[0])
			g_ptr_array_add(paths, s->path);
	g_ptr_array_add(paths, NULL);
	mm_gdbus_modem_messaging_set_messages(g->iface, (const gchar *const *)paths->pdata);
	g_ptr_array_free(paths, TRUE);
}

static void add(struct mmd_modem *mm, struct mmd_sms *s, bool received)
{
	struct mmd_sms **p = &mm->messaging->list;

	while (*p)
		p = &(*p)->next;
	*p = s;
	mmd_sms_export(s);
	update_messages(mm);
	if (s->path[0]) {
		log_info("dbus: modem %s: %s %s", modem_name(mm->modem), s->path,
			 received ? "received" : "created");
		mm_gdbus_modem_messaging_emit_added(mm->messaging->iface, s->path, received);
	}
}

static void remove_sms(struct mmd_modem *mm, struct mmd_sms *s)
{
	char path[MMD_PATH_MAX];

	for (struct mmd_sms **p = &mm->messaging->list; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	snprintf(path, sizeof(path), "%s", s->path);
	mmd_sms_free(s);
	update_messages(mm);
	if (path[0])
		mm_gdbus_modem_messaging_emit_deleted(mm->messaging->iface, path);
}

/* ---- listing ------------------------------------------------------------------------------ */

static void list_done(void *userdata, int r, const char *message, const struct modem_sms *msgs,
		      size_t n)
{
	struct msg_call *c = userdata;
	struct mmd_modem *mm = c->mm;

	if (!modem_alive(c->bus, mm)) {
		free(c);
		return;
	}
	free(c);
	struct mmd_messaging *g = mm->messaging;
	g->listing = false;
	if (r < 0) {
		log_warning("dbus: modem %s: cannot list messages: %s", modem_name(mm->modem),
			    message);
		return;
	}
	g->listed = true;
	g->seen_received = g->list_received;
	/* Stored messages that are gone from the modem leave the bus. */
	for (struct mmd_sms *s = g->list, *next; s; s = next) {
		bool there = false;
		next = s->next;
		for (size_t i = 0; s->stored && i < n; i++)
			there |= msgs[i].storage == s->storage && msgs[i].index == s->index;
		if (s->stored && !there && !s->busy)
			remove_sms(mm, s);
	}
	for (size_t i = 0; i < n; i++) {
		bool known = !msgs[i].received;
		for (struct mmd_sms *s = g->list; s && !known; s = s->next)
			known = s->stored && s->storage == msgs[i].storage &&
				s->index == msgs[i].index;
		if (known)
			continue;
		struct mmd_sms *s = mmd_sms_new_received(mm, &msgs[i]);
		if (!s) {
			g->undecodable++;
			continue;
		}
		add(mm, s, true);
	}
	/* Another message arrived while this list ran. */
	mmd_schedule_sync(mm->bus);
}

void mmd_messaging_sync(struct mmd_modem *mm)
{
	struct mmd_messaging *g = mm->messaging;
	struct modem_view view;

	if (!g || !mm->object || !modem_view(mm->modem, &view))
		return;
	if (view.state != MODEM_CONTROL_READY || !view.tells_sms) {
		g->listed = false;
		return;
	}
	if (!g->on_object) {
		mm_gdbus_object_skeleton_set_modem_messaging(mm->object, g->iface);
		g->on_object = true;
	}
	if (g->listing || (g->listed && view.sms_received == g->seen_received))
		return;
	struct msg_call *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	*c = (struct msg_call){ .bus = mm->bus, .mm = mm };
	g->listing = true;
	g->list_received = view.sms_received;
	modem_sms_list(mm->modem, list_done, c);
}

/* ---- methods ------------------------------------------------------------------------------ */

static gboolean handle_list(MmGdbusModemMessaging *iface, GDBusMethodInvocation *inv,
			    gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	mm->bus->calls++;
	mm_gdbus_modem_messaging_complete_list(iface, inv,
					       mm_gdbus_modem_messaging_get_messages(iface));
	return TRUE;
}

static gboolean handle_create(MmGdbusModemMessaging *iface, GDBusMethodInvocation *inv,
			      GVariant *props, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	g_autoptr(GError) error = NULL;

	mm->bus->calls++;
	struct mmd_sms *s = mmd_sms_new_created(mm, props, &error);
	if (!s) {
		mmd_return_error(mm->bus, inv, error);
		return TRUE;
	}
	add(mm, s, false);
	if (!s->path[0]) {
		remove_sms(mm, s);
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot put the message on the bus");
		return TRUE;
	}
	mm_gdbus_modem_messaging_complete_create(iface, inv, s->path);
	return TRUE;
}

static void delete_done(void *userdata, int r, const char *message)
{
	struct msg_call *c = userdata;
	struct mmd_modem *mm = c->mm;
	struct mmd_sms *s = modem_alive(c->bus, mm) ? mmd_messaging_find(mm, c->path) : NULL;

	if (s)
		s->busy = false;
	if (r < 0)
		mmd_reject(c->bus, c->inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
			   "Cannot delete the message: %s", message);
	else {
		if (s)
			remove_sms(mm, s);
		g_dbus_method_invocation_return_value(c->inv, NULL);
	}
	free(c);
}

static gboolean handle_delete(MmGdbusModemMessaging *iface, GDBusMethodInvocation *inv,
			      const gchar *path, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	struct mmd_sms *s = mmd_messaging_find(mm, path);

	mm->bus->calls++;
	if (!s) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_NOT_FOUND,
			   "No SMS %s on this modem", path);
		return TRUE;
	}
	if (s->busy) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_IN_PROGRESS,
			   "SMS %s is being sent or deleted", path);
		return TRUE;
	}
	if (!s->stored) {
		remove_sms(mm, s);
		mm_gdbus_modem_messaging_complete_delete(iface, inv);
		return TRUE;
	}
	struct msg_call *c = calloc(1, sizeof(*c));
	if (!c) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return TRUE;
	}
	*c = (struct msg_call){ .bus = mm->bus, .mm = mm, .inv = inv };
	snprintf(c->path, sizeof(c->path), "%s", path);
	s->busy = true;
	modem_sms_delete(mm->modem, s->storage, s->index, delete_done, c);
	return TRUE;
}

/* ---- life cycle --------------------------------------------------------------------------- */

void mmd_messaging_init(struct mmd_modem *mm)
{
	struct mmd_messaging *g = calloc(1, sizeof(*g));

	if (!g)
		return;
	mm->messaging = g;
	g->iface = mm_gdbus_modem_messaging_skeleton_new();
	GVariantBuilder b;
	g_variant_builder_init(&b, G_VARIANT_TYPE("au"));
	g_variant_builder_add(&b, "u", MM_SMS_STORAGE_ME);
	g_variant_builder_add(&b, "u", MM_SMS_STORAGE_SM);
	mm_gdbus_modem_messaging_set_supported_storages(g->iface, g_variant_builder_end(&b));
	mm_gdbus_modem_messaging_set_default_storage(g->iface, MM_SMS_STORAGE_ME);
	mm_gdbus_modem_messaging_set_messages(g->iface, (const gchar *const[]){ NULL });
	g_signal_connect(g->iface, "handle-list", G_CALLBACK(handle_list), mm);
	g_signal_connect(g->iface, "handle-create", G_CALLBACK(handle_create), mm);
	g_signal_connect(g->iface, "handle-delete", G_CALLBACK(handle_delete), mm);
	mmd_answer_unsupported(mm->bus, g->iface);
	mmd_auth_watch(mm->bus, g->iface);
}

void mmd_messaging_unexport(struct mmd_modem *mm)
{
	struct mmd_messaging *g = mm->messaging;

	if (!g)
		return;
	while (g->list) {
		struct mmd_sms *s = g->list;
		g->list = s->next;
		mmd_sms_free(s);
	}
	update_messages(mm);
	g->on_object = false;
	g->listed = false;
}

void mmd_messaging_free(struct mmd_modem *mm)
{
	struct mmd_messaging *g = mm->messaging;

	if (!g)
		return;
	mmd_messaging_unexport(mm);
	g_signal_handlers_disconnect_by_data(g->iface, mm);
	mmd_auth_unwatch(mm->bus, g->iface);
	g_clear_object(&g->iface);
	free(g);
	mm->messaging = NULL;
}
