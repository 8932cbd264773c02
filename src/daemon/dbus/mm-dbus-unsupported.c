/* SPDX-License-Identifier: MIT */
/*
 * The methods of an exported interface that qmapd does not implement answer
 * org.freedesktop.ModemManager1.Error.Core.Unsupported, as ModemManager does for what a
 * modem cannot do, not org.freedesktop.DBus.Error.UnknownMethod (clients such as
 * NetworkManager and mmcli read ModemManager's errors, and the method is in the
 * introspection). Driven by the skeleton's introspection data, so a method a newer
 * libmm-glib adds is covered without a change here.
 */
#include <ctype.h>
#include <libmm-glib.h>
#include <string.h>

#include "log.h"
#include "mm-dbus-internal.h"

struct unsupported {
	struct mm_dbus *bus;
	const char *iface; /* the interface info's strings: the generated code's, static */
	const char *method;
};

/* Every handle-* signal passes the invocation right after the skeleton; whatever arguments
 * follow, a marshaller (not a C callback with one fixed signature) may ignore them. */
static void marshal_unsupported(GClosure *closure, GValue *return_value, guint n_params,
				const GValue *params, gpointer hint, gpointer marshal_data)
{
	const struct unsupported *u = closure->data;
	(void)hint;
	(void)marshal_data;

	if (n_params < 2 || !G_VALUE_HOLDS(&params[1], G_TYPE_DBUS_METHOD_INVOCATION))
		return;
	mmd_reject(u->bus, g_value_get_object(&params[1]), MM_CORE_ERROR, MM_CORE_ERROR_UNSUPPORTED,
		   "%s is not supported by qmapd", u->method);
	if (return_value)
		g_value_set_boolean(return_value, TRUE);
}

static void unsupported_free(gpointer data, GClosure *closure)
{
	(void)closure;
	g_free(data);
}

/* gdbus-codegen's signal name for a method: "handle-" and the CamelCase name in lower case,
 * a hyphen where an upper-case letter follows a lower-case one or a digit. */
static void signal_name(const char *method, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "handle-");
	bool prev_lower = false;

	for (const char *p = method; *p && n + 2 < len; p++) {
		bool upper = isupper((unsigned char)*p);
		if (upper && prev_lower)
			buf[n++] = '-';
		prev_lower = !upper;
		buf[n++] = (char)tolower((unsigned char)*p);
	}
	buf[n] = '\0';
}

void mmd_answer_unsupported(struct mm_dbus *d, gpointer skeleton)
{
	GDBusInterfaceInfo *info =
		g_dbus_interface_skeleton_get_info(G_DBUS_INTERFACE_SKELETON(skeleton));
	unsigned total = 0, unsupported = 0;

	for (GDBusMethodInfo **m = info->methods; m && *m; m++) {
		char name[128];

		total++;
		signal_name((*m)->name, name, sizeof(name));
		guint id = g_signal_lookup(name, G_OBJECT_TYPE(skeleton));
		if (!id) {
			/* The generated code would answer UnknownMethod: a naming rule to fix. */
			log_warning("dbus: %s.%s: no signal %s", info->name, (*m)->name, name);
			continue;
		}
		if (g_signal_has_handler_pending(skeleton, id, 0, FALSE))
			continue;
		struct unsupported *u = g_new(struct unsupported, 1);
		*u = (struct unsupported){ .bus = d, .iface = info->name, .method = (*m)->name };
		GClosure *c = g_closure_new_simple(sizeof(GClosure), u);
		g_closure_add_finalize_notifier(c, u, unsupported_free);
		g_closure_set_marshal(c, marshal_unsupported);
		g_signal_connect_closure_by_id(skeleton, id, 0, c, FALSE);
		unsupported++;
	}
	log_debug("dbus: %s: %u methods, %u answer Unsupported", info->name, total, unsupported);
}
