/* SPDX-License-Identifier: MIT */
/*
 * One modem on the bus: Modem/N with Modem, Modem.Simple and Modem.Modem3gpp while the modem
 * is present (a modem that goes away leaves the bus, as with ModemManager), its properties
 * from what qmapd learnt over QMI or MBIM (the neutral model of modem-model.h), and the
 * methods that act on it.
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "manager.h"
#include "mm-dbus-internal.h"
#include "mm-dbus-map.h"
#include "modem.h"
#include "session.h"

/* Keys of Simple.GetStatus (ModemManager's mm-simple-status.h shows them only to itself). */
#define STATUS_STATE		       "state"
#define STATUS_SIGNAL_QUALITY	       "signal-quality"
#define STATUS_ACCESS_TECHNOLOGIES     "access-technologies"
#define STATUS_3GPP_REGISTRATION_STATE "m3gpp-registration-state"
#define STATUS_3GPP_OPERATOR_CODE      "m3gpp-operator-code"
#define STATUS_3GPP_OPERATOR_NAME      "m3gpp-operator-name"

static const char *str(const char *s)
{
	return s ? s : "";
}

/* On the bus once qmapd is done with it (as ModemManager exports a modem once initialized):
 * its identity and SIM are known, or it failed. */
static bool modem_present(const struct modem *modem)
{
	struct modem_view v;

	return modem_view(modem, &v) &&
	       (v.state == MODEM_CONTROL_READY || v.state == MODEM_CONTROL_FAILED);
}

/* ---- properties ----------------------------------------------------------------------- */

/* Everything a client reads, to ModemManager's "unknown" values: set once, at creation. */
static void set_unknowns(struct mmd_modem *mm)
{
	MmGdbusModem *i = mm->iface;
	GVariantBuilder b;

	mm_gdbus_modem_set_sim(i, "/");
	mm_gdbus_modem_set_sim_slots(i, (const gchar *const[]){ NULL });
	mm_gdbus_modem_set_primary_sim_slot(i, 0);
	mm_gdbus_modem_set_drivers(i, (const gchar *const[]){ "qmapd", NULL });
	mm_gdbus_modem_set_plugin(i, "qmapd");
	mm_gdbus_modem_set_hardware_revision(i, "");
	mm_gdbus_modem_set_carrier_configuration(i, "");
	mm_gdbus_modem_set_carrier_configuration_revision(i, "");
	mm_gdbus_modem_set_device_identifier(i, "");
	mm_gdbus_modem_set_own_numbers(i, (const gchar *const[]){ NULL });
	mm_gdbus_modem_set_power_state(i, MM_MODEM_POWER_STATE_ON);
	mm_gdbus_modem_set_state_failed_reason(i, MM_MODEM_STATE_FAILED_REASON_NONE);
	mm_gdbus_modem_set_supported_ip_families(i, MM_BEARER_IP_FAMILY_IPV4 |
							    MM_BEARER_IP_FAMILY_IPV6 |
							    MM_BEARER_IP_FAMILY_IPV4V6);
	unsigned max = CONFIG_MUX_ID_MAX - CONFIG_MUX_ID_MIN + 1;
	mm_gdbus_modem_set_max_bearers(i, max);
	mm_gdbus_modem_set_max_active_bearers(i, max);
	mm_gdbus_modem_set_max_active_multiplexed_bearers(i, max);
	g_variant_builder_init(&b, G_VARIANT_TYPE("a{uu}"));
	mm_gdbus_modem_set_unlock_retries(i, g_variant_builder_end(&b));
	/* Until the modem tells its modes and bands: any mode, no band known. */
	g_variant_builder_init(&b, G_VARIANT_TYPE("a(uu)"));
	g_variant_builder_add(&b, "(uu)", MM_MODEM_MODE_ANY, MM_MODEM_MODE_NONE);
	mm_gdbus_modem_set_supported_modes(i, g_variant_builder_end(&b));
	mm_gdbus_modem_set_current_modes(
		i, g_variant_new("(uu)", MM_MODEM_MODE_ANY, MM_MODEM_MODE_NONE));
	g_variant_builder_init(&b, G_VARIANT_TYPE("au"));
	g_variant_builder_add(&b, "u", MM_MODEM_BAND_UNKNOWN);
	mm_gdbus_modem_set_supported_bands(i, g_variant_builder_end(&b));
	g_variant_builder_init(&b, G_VARIANT_TYPE("au"));
	g_variant_builder_add(&b, "u", MM_MODEM_BAND_UNKNOWN);
	mm_gdbus_modem_set_current_bands(i, g_variant_builder_end(&b));
	mm_gdbus_modem_set_signal_quality(i, g_variant_new("(ub)", 0, FALSE));

	MmGdbusModem3gpp *g = mm->m3gpp;
	mm_gdbus_modem3gpp_set_operator_code(g, "");
	mm_gdbus_modem3gpp_set_operator_name(g, "");
	mm_gdbus_modem3gpp_set_enabled_facility_locks(g, MM_MODEM_3GPP_FACILITY_NONE);
	mm_gdbus_modem3gpp_set_subscription_state(g, MM_MODEM_3GPP_SUBSCRIPTION_STATE_UNKNOWN);
	mm_gdbus_modem3gpp_set_eps_ue_mode_operation(g,
						     MM_MODEM_3GPP_EPS_UE_MODE_OPERATION_UNKNOWN);
	mm_gdbus_modem3gpp_set_pco(g, g_variant_new_array(G_VARIANT_TYPE("(ubay)"), NULL, 0));
	mm_gdbus_modem3gpp_set_initial_eps_bearer(g, "/");
	mm_gdbus_modem3gpp_set_initial_eps_bearer_settings(
		g, g_variant_new_array(G_VARIANT_TYPE("{sv}"), NULL, 0));
	mm_gdbus_modem3gpp_set_packet_service_state(g, MM_MODEM_3GPP_PACKET_SERVICE_STATE_UNKNOWN);
	mm_gdbus_modem3gpp_set_nr5g_registration_settings(
		g, g_variant_new_array(G_VARIANT_TYPE("{sv}"), NULL, 0));
}

/*
 * What the modem told about itself beyond identity (modem_info): each property keeps its
 * "unknown" value (set_unknowns) until the modem answered the query behind it.
 */
static void sync_info(struct mmd_modem *mm)
{
	struct modem_view view;
	MmGdbusModem *i = mm->iface;

	modem_view(mm->modem, &view);
	const struct modem_info *info = &view.info;
	GVariantBuilder b;

	mm_gdbus_modem_set_hardware_revision(i, str(info->hardware_revision));
	/* A modem that is ready is on: ON (set_unknowns) until it says more. */
	if (info->power != MODEM_POWER_UNKNOWN)
		mm_gdbus_modem_set_power_state(i, mmd_power_state(info->power));
	mm_gdbus_modem_set_own_numbers(i, info->own_number
						  ? (const gchar *const[]){ info->own_number, NULL }
						  : (const gchar *const[]){ NULL });
	if (info->modes) {
		MMModemMode modes = mmd_modes(info->modes);
		MMModemMode allowed[8];
		size_t n = mmd_supported_modes(modes, allowed, G_N_ELEMENTS(allowed));

		g_variant_builder_init(&b, G_VARIANT_TYPE("a(uu)"));
		for (size_t k = 0; k < n; k++)
			g_variant_builder_add(&b, "(uu)", allowed[k], MM_MODEM_MODE_NONE);
		mm_gdbus_modem_set_supported_modes(i, g_variant_builder_end(&b));
		/* What the modem may use now: its mode preference within what it has. */
		mm_gdbus_modem_set_current_modes(
			i,
			g_variant_new("(uu)", mmd_modes(info->current_modes), MM_MODEM_MODE_NONE));
	}
	MMModemBand bands[256];
	size_t n = mmd_lte_bands(info->lte_bands, bands, G_N_ELEMENTS(bands));
	if (n) {
		mm_gdbus_modem_set_supported_bands(
			i, g_variant_new_fixed_array(G_VARIANT_TYPE_UINT32, bands, n,
						     sizeof(guint32)));
		/* Allowed now: the LTE band preference, or every band when it says none. */
		size_t k = mmd_lte_bands(info->lte_bands_allowed, bands, G_N_ELEMENTS(bands));
		if (!k)
			k = mmd_lte_bands(info->lte_bands, bands, G_N_ELEMENTS(bands));
		mm_gdbus_modem_set_current_bands(i, g_variant_new_fixed_array(G_VARIANT_TYPE_UINT32,
									      bands, k,
									      sizeof(guint32)));
	}
	/* The lock as the SIM service tells it; a modem that cannot tell is NONE (set by the
	 * caller). */
	if (info->tells_lock)
		mm_gdbus_modem_set_unlock_required(i, mmd_lock(info->lock));
	g_variant_builder_init(&b, G_VARIANT_TYPE("a{uu}"));
	if (info->have_pin_retries)
		g_variant_builder_add(&b, "{uu}", MM_MODEM_LOCK_SIM_PIN, info->pin_retries);
	if (info->have_puk_retries)
		g_variant_builder_add(&b, "{uu}", MM_MODEM_LOCK_SIM_PUK, info->puk_retries);
	mm_gdbus_modem_set_unlock_retries(i, g_variant_builder_end(&b));

	MmGdbusModem3gpp *g = mm->m3gpp;
	mm_gdbus_modem3gpp_set_enabled_facility_locks(g, mmd_facility_locks(info->sim_pin_enabled));
	mm_gdbus_modem3gpp_set_packet_service_state(g,
						    mmd_packet_service_state(info->packet_service));
	/* What LTE attaches with: the default profile's APN and PDP type. */
	if (info->attach_apn) {
		g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
		g_variant_builder_add(&b, "{sv}", "apn", g_variant_new_string(info->attach_apn));
		MMBearerIpFamily family = mmd_ip_family(info->attach_ip_family);
		if (family != MM_BEARER_IP_FAMILY_NONE)
			g_variant_builder_add(&b, "{sv}", "ip-type", g_variant_new_uint32(family));
		mm_gdbus_modem3gpp_set_initial_eps_bearer_settings(g, g_variant_builder_end(&b));
	}
}

static void sync_properties(struct mmd_modem *mm)
{
	struct modem_view view, *qm = &view; /* QMI's or MBIM's, read alike */
	const struct config_device *dev = modem_config_device(mm->modem);
	MmGdbusModem *i = mm->iface;

	modem_view(mm->modem, &view);
	struct mmd_state_input in = { .control = qm->state,
				      .registration = qm->registration,
				      .disabled = mm->disabled };
	GVariantBuilder ports;
	const char *paths[CONFIG_MUX_ID_MAX * 2 + 1];
	unsigned n_paths = 0;

	g_variant_builder_init(&ports, G_VARIANT_TYPE("a(su)"));
	/* The control port as ModemManager names it (the kernel's cdc-wdmN, known when a driver
	 * held the interface before qmapd claimed it), else the control link's name. */
	const char *link = strrchr(dev->control_link, '/');
	link = link ? link + 1 : dev->control_link;
	if (qm->control_port)
		link = qm->control_port;
	g_variant_builder_add(&ports, "(su)", link,
			      qm->mbim ? MM_MODEM_PORT_TYPE_MBIM : MM_MODEM_PORT_TYPE_QMI);
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const char *state = modem_mux_state(mm->modem, id);
		if (!state)
			continue;
		g_variant_builder_add(&ports, "(su)", modem_mux_interface(mm->modem, id),
				      MM_MODEM_PORT_TYPE_NET);
		in.connected += strcmp(state, "connected") == 0;
		in.connecting += strcmp(state, "connecting") == 0;
		in.disconnecting += strcmp(state, "disconnecting") == 0;
	}
	for (struct mmd_bearer *b = mm->bearers; b && n_paths < G_N_ELEMENTS(paths) - 1;
	     b = b->next)
		paths[n_paths++] = b->path;
	paths[n_paths] = NULL;

	mm_gdbus_modem_set_manufacturer(i, str(qm->manufacturer));
	mm_gdbus_modem_set_model(i, str(qm->model));
	mm_gdbus_modem_set_revision(i, str(qm->revision));
	mm_gdbus_modem_set_equipment_identifier(i, str(qm->imei));
	mm_gdbus_modem_set_device(i, modem_device(mm->modem));
	/* ModemManager's own digest, so profiles made against it still match. */
	g_autofree char *ident = mmd_device_identifier(qm->usb_vid, qm->usb_pid, qm->imei,
						       qm->revision, qm->model, qm->manufacturer);
	mm_gdbus_modem_set_device_identifier(i, str(ident));
	mm_gdbus_modem_set_primary_port(i, link);
	mm_gdbus_modem_set_ports(i, g_variant_builder_end(&ports));
	mm_gdbus_modem_set_bearers(i, paths);
	mm_gdbus_modem_set_unlock_required(
		i, qm->state == MODEM_CONTROL_READY ? MM_MODEM_LOCK_NONE : MM_MODEM_LOCK_UNKNOWN);
	/* A modem that stopped at its SIM (MBIM: locked, absent) still says why. */
	if (qm->state == MODEM_CONTROL_READY ||
	    (qm->state == MODEM_CONTROL_FAILED && qm->info.tells_lock))
		sync_info(mm);
	in.locked = modem_info_sim_locked(&qm->info);
	in.sim_failed = qm->info.failed_reason != MODEM_FAILED_NONE &&
			(qm->state == MODEM_CONTROL_READY || qm->state == MODEM_CONTROL_FAILED);
	mm_gdbus_modem_set_state_failed_reason(
		i, in.sim_failed ? mmd_failed_reason(qm->info.failed_reason)
				 : MM_MODEM_STATE_FAILED_REASON_NONE);

	MMModemAccessTechnology act = qm->state == MODEM_CONTROL_READY
					      ? mmd_access_technology(qm->access_technology)
					      : MM_MODEM_ACCESS_TECHNOLOGY_UNKNOWN;
	/* What the modem says it has, else what its access technology proves. */
	MMModemCapability caps = qm->info.capabilities ? mmd_capability(qm->info.capabilities)
						       : mmd_capabilities(act);
	mm_gdbus_modem_set_access_technologies(i, act);
	mm_gdbus_modem_set_current_capabilities(i, caps);
	mm_gdbus_modem_set_supported_capabilities(
		i, g_variant_new_fixed_array(G_VARIANT_TYPE_UINT32, &caps, 1, sizeof(guint32)));
	mm_gdbus_modem_set_signal_quality(
		i, g_variant_new("(ub)", qm->have_signal ? mmd_signal_quality(qm->rssi) : 0,
				 qm->have_signal && qm->state == MODEM_CONTROL_READY));

	MMModemState state = mmd_modem_state(&in);
	if (state != mm->state) {
		mm_gdbus_modem_emit_state_changed(i, mm->state, state,
						  MM_MODEM_STATE_CHANGE_REASON_UNKNOWN);
		mm->state = state;
	}
	mm_gdbus_modem_set_state(i, state);

	MmGdbusModem3gpp *g = mm->m3gpp;
	mm_gdbus_modem3gpp_set_imei(g, str(qm->imei));
	mm_gdbus_modem3gpp_set_registration_state(g, mmd_registration_state(qm->registration));
	mm_gdbus_modem3gpp_set_operator_code(g, str(qm->operator_code));
	mm_gdbus_modem3gpp_set_operator_name(g, str(qm->operator_desc));
}

/* ---- the SIM: SIM/N once the modem told its ICCID or IMSI ----------------------------- */

static void sim_unexport(struct mmd_modem *mm)
{
	if (!mm->sim_path[0])
		return;
	g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(mm->sim));
	mm->sim_path[0] = '\0';
	mm_gdbus_modem_set_sim(mm->iface, "/");
}

static void sync_sim(struct mmd_modem *mm)
{
	struct modem_view view, *qm = &view;
	MmGdbusSim *s = mm->sim;
	g_autoptr(GError) error = NULL;

	modem_view(mm->modem, &view);
	/* No card: no SIM object, Sim "/" (ModemManager's, with the failed reason). */
	if (qm->info.sim == MODEM_SIM_ABSENT) {
		sim_unexport(mm);
		return;
	}
	/* A card UIM reports present is a SIM even before its files are read (NetworkManager
	 * waits for the object). */
	if (!qm->iccid && !qm->imsi && qm->info.sim != MODEM_SIM_PRESENT)
		return;
	mm_gdbus_sim_set_active(s, TRUE);
	mm_gdbus_sim_set_sim_identifier(s, str(qm->iccid));
	mm_gdbus_sim_set_imsi(s, str(qm->imsi));
	mm_gdbus_sim_set_operator_identifier(s, str(qm->info.sim_operator_id));
	mm_gdbus_sim_set_operator_name(s, str(qm->info.sim_operator_name));
	if (mm->sim_path[0] || !mm->bus->conn)
		return;
	snprintf(mm->sim_path, sizeof(mm->sim_path), MMD_PATH "/SIM/%u", mm->bus->next_sim_index++);
	if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(s), mm->bus->conn,
					      mm->sim_path, &error)) {
		log_error("dbus: cannot export %s: %s", mm->sim_path, error->message);
		mm->sim_path[0] = '\0';
		return;
	}
	mm_gdbus_modem_set_sim(mm->iface, mm->sim_path);
}

static void set_sim_unknowns(MmGdbusSim *s)
{
	mm_gdbus_sim_set_active(s, FALSE);
	mm_gdbus_sim_set_sim_identifier(s, "");
	mm_gdbus_sim_set_imsi(s, "");
	mm_gdbus_sim_set_eid(s, "");
	/* The home network is not what the network serving now says: unknown until qmapd
	 * reads the SIM's files. */
	mm_gdbus_sim_set_operator_identifier(s, "");
	mm_gdbus_sim_set_operator_name(s, "");
	mm_gdbus_sim_set_emergency_numbers(s, (const gchar *const[]){ NULL });
	mm_gdbus_sim_set_preferred_networks(s,
					    g_variant_new_array(G_VARIANT_TYPE("(su)"), NULL, 0));
	mm_gdbus_sim_set_gid1(s, g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, NULL, 0, 1));
	mm_gdbus_sim_set_gid2(s, g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, NULL, 0, 1));
	mm_gdbus_sim_set_sim_type(s, MM_SIM_TYPE_UNKNOWN);
	mm_gdbus_sim_set_esim_status(s, MM_SIM_ESIM_STATUS_UNKNOWN);
	mm_gdbus_sim_set_removability(s, MM_SIM_REMOVABILITY_UNKNOWN);
}

/* ---- bearers follow the muxes --------------------------------------------------------- */

static struct mmd_bearer *bearer_of_mux(struct mmd_modem *mm, unsigned id)
{
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next)
		if (b->mux_id == id)
			return b;
	return NULL;
}

static void sync_bearers(struct mmd_modem *mm)
{
	/* Bearers whose mux is gone: a mux of the file leaves; a D-Bus bearer stays. */
	for (struct mmd_bearer **p = &mm->bearers; *p;) {
		struct mmd_bearer *b = *p;
		if (b->mux_id && !modem_mux_config(mm->modem, b->mux_id) && !b->from_dbus) {
			*p = b->next;
			mmd_bearer_free(b, "its mux was removed");
			continue;
		}
		p = &b->next;
	}
	/* Muxes of the file and of qmapctl appear as bearers. */
	for (unsigned id = CONFIG_MUX_ID_MIN; id <= CONFIG_MUX_ID_MAX; id++) {
		const struct config_mux *cfg = modem_mux_config(mm->modem, id);
		unsigned index;
		bool roaming;
		if (!cfg || bearer_of_mux(mm, id))
			continue;
		struct mmd_bearer *b = NULL;
		if (modem_mux_bearer(mm->modem, id, &index, &roaming)) {
			/* A D-Bus client's bearer that a restart brought back: the same object
			 * path, unless another bearer has taken the number meanwhile. */
			bool taken = false;
			for (const struct mmd_modem *o = mm->bus->modems; o; o = o->next)
				for (const struct mmd_bearer *x = o->bearers; x; x = x->next)
					taken |= x->index == index;
			if (taken)
				log_warning("dbus: bearer %u of the last run is taken: mux %u gets "
					    "a new one",
					    index, id);
			b = mmd_bearer_new(mm, true, id, cfg, taken ? -1 : (int)index);
			if (b) {
				b->allow_roaming = roaming;
				log_info("dbus: %s: the D-Bus bearer of mux %u, back after a "
					 "restart",
					 b->path, id);
			}
		} else {
			b = mmd_bearer_new(mm, false, id, cfg, -1);
		}
		if (!b)
			continue;
		struct mmd_bearer **tail = &mm->bearers;
		while (*tail)
			tail = &(*tail)->next;
		*tail = b;
		mmd_bearer_export(b);
	}
	/* The modem started roaming: a connected bearer that may not roam goes down. */
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next) {
		char err[256];

		if (!b->mux_id || !mmd_bearer_roaming_forbidden(b))
			continue;
		log_info("dbus: modem %s is roaming: %s (allow-roaming no) disconnected",
			 modem_name(mm->modem), b->path);
		if (mmd_bearer_disconnect(b, err, sizeof(err)) < 0)
			log_warning("dbus: modem %s: %s: %s", modem_name(mm->modem), b->path, err);
	}
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next)
		mmd_bearer_sync(b);
}

/* ---- presence ------------------------------------------------------------------------- */

static void modem_export(struct mmd_modem *mm)
{
	snprintf(mm->path, sizeof(mm->path), MMD_PATH "/Modem/%u", mm->bus->next_modem_index++);
	mm->object = mm_gdbus_object_skeleton_new(mm->path);
	mm_gdbus_object_skeleton_set_modem(mm->object, mm->iface);
	mm_gdbus_object_skeleton_set_modem_simple(mm->object, mm->simple);
	mm_gdbus_object_skeleton_set_modem3gpp(mm->object, mm->m3gpp);
	if (mmd_signal_exported(mm))
		mm_gdbus_object_skeleton_set_modem_signal(mm->object, mm->signal);
	g_dbus_object_manager_server_export(mm->bus->om, G_DBUS_OBJECT_SKELETON(mm->object));
	log_info("dbus: modem %s is %s", modem_name(mm->modem), mm->path);
}

static void bearers_free(struct mmd_modem *mm, const char *why)
{
	while (mm->bearers) {
		struct mmd_bearer *b = mm->bearers;
		mm->bearers = b->next;
		mmd_bearer_free(b, why);
	}
}

/* ---- enabling and disabling ------------------------------------------------------------ */

static void waits_abort(struct mmd_modem *mm, const char *why)
{
	while (mm->waiting) {
		struct mmd_wait *w = mm->waiting;
		mm->waiting = w->next;
		mmd_reject(mm->bus, w->inv, MM_CORE_ERROR, MM_CORE_ERROR_ABORTED, "%s", why);
		free(w);
	}
}

/*
 * A disabled modem has no data session at all, as with ModemManager: the client's bearers are
 * disconnected and the muxes of qmapd.conf and qmapctl are removed, kept here to be added
 * again when the modem is enabled (their bearers leave the bus and come back as new ones).
 */
static void modem_disable(struct mmd_modem *mm)
{
	char err[256];

	waits_abort(mm, "The modem was disabled");
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next) {
		const struct config_mux *cfg =
			b->mux_id ? modem_mux_config(mm->modem, b->mux_id) : NULL;
		json_t *reply = NULL;

		if (b->from_dbus) {
			mmd_bearer_disconnect(b, err, sizeof(err));
			continue;
		}
		if (!cfg)
			continue;
		struct mmd_parked *parked =
			realloc(mm->parked, (mm->n_parked + 1) * sizeof(*mm->parked));
		if (!parked) {
			log_warning_errno(-ENOMEM, "dbus: modem %s: mux %u stays up",
					  modem_name(mm->modem), b->mux_id);
			continue;
		}
		mm->parked = parked;
		parked[mm->n_parked].cfg = *cfg;
		parked[mm->n_parked].from_config = modem_mux_from_config(mm->modem, b->mux_id);
		if (manager_mux_del(mm->bus->manager, modem_name(mm->modem), b->mux_id, &reply, err,
				    sizeof(err)) < 0)
			log_warning("dbus: modem %s: cannot stop mux %u: %s", modem_name(mm->modem),
				    b->mux_id, err);
		else
			log_info("dbus: modem %s disabled: mux %u stopped until it is enabled",
				 modem_name(mm->modem), parked[mm->n_parked++].cfg.id);
		json_decref(reply);
	}
	mm->disabled = true;
}

void mmd_modem_enable(struct mmd_modem *mm)
{
	char err[256];

	for (unsigned i = 0; i < mm->n_parked; i++) {
		json_t *reply = NULL;

		const struct mmd_parked *p = &mm->parked[i];

		if (manager_mux_restore(mm->bus->manager, modem_name(mm->modem), &p->cfg,
					p->from_config, &reply, err, sizeof(err)) < 0)
			log_warning("dbus: modem %s: cannot start mux %u again: %s",
				    modem_name(mm->modem), p->cfg.id, err);
		else
			log_info("dbus: modem %s enabled: mux %u started again",
				 modem_name(mm->modem), p->cfg.id);
		json_decref(reply);
	}
	free(mm->parked);
	mm->parked = NULL;
	mm->n_parked = 0;
	mm->disabled = false;
}

static void waits_run(struct mmd_modem *mm);

static void modem_unexport(struct mmd_modem *mm)
{
	if (!mm->path[0])
		return;
	log_info("dbus: modem %s (%s) left the bus", modem_name(mm->modem), mm->path);
	waits_abort(mm, "The modem is gone");
	bearers_free(mm, "the modem is gone");
	sim_unexport(mm);
	mmd_messaging_unexport(mm);
	mmd_location_unexport(mm);
	mmd_signal_stop(mm);
	mm->time_exported = false; /* it goes with the object */
	g_dbus_object_manager_server_unexport(mm->bus->om, mm->path);
	g_clear_object(&mm->object);
	mm->path[0] = '\0';
	mm->state = MM_MODEM_STATE_UNKNOWN;
	mm->disabled = false;
}

void mmd_modem_bus_lost(struct mmd_modem *mm)
{
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next)
		mmd_bearer_unexport(b);
	sim_unexport(mm);
}

void mmd_modem_sync(struct mmd_modem *mm)
{
	/* qmapd is exiting: the modem closed because of that, not gone. modem_stop() decided
	 * the D-Bus bearers' fate (kept for the next qmapd on a restart); removing their muxes
	 * here would end the sessions a restart keeps. The bus view stays as it was. */
	if (modem_stopping(mm->modem))
		return;
	/* Its control channel is on its way back (the proxy went away): the modem and its
	 * sessions are as they were, and so is the bus view until the channel is ready. */
	struct modem_view v;
	if (modem_view(mm->modem, &v) && v.reopening)
		return;
	bool present = modem_present(mm->modem);

	if (!present) {
		char err[256];

		/* The client's sessions went with the modem: their muxes go too. */
		for (struct mmd_bearer *b = mm->bearers; mm->path[0] && b; b = b->next)
			if (b->from_dbus)
				mmd_bearer_disconnect(b, err, sizeof(err));
		/* Enable(false) was the bus's: the modem comes back as qmapd.conf has it. */
		if (mm->n_parked)
			mmd_modem_enable(mm);
		modem_unexport(mm);
		return;
	}
	if (!mm->path[0]) {
		sync_bearers(mm);
		sync_sim(mm);
		sync_properties(mm);
		modem_export(mm);
		mmd_time_sync(mm);
		return;
	}
	sync_bearers(mm);
	sync_sim(mm);
	sync_properties(mm);
	mmd_messaging_sync(mm);
	mmd_location_sync(mm);
	mmd_signal_sync(mm);
	mmd_time_sync(mm);
	waits_run(mm);
}

/* ---- methods -------------------------------------------------------------------------- */

static gboolean handle_enable(MmGdbusModem *iface, GDBusMethodInvocation *inv, gboolean enable,
			      gpointer user_data)
{
	struct mmd_modem *mm = user_data;

	mm->bus->calls++;
	if (!enable && !mm->disabled)
		modem_disable(mm);
	else if (enable && mm->disabled && mmd_power_low(mm)) {
		/* Enabling powers the modem up first, as ModemManager's does: answered then. */
		mmd_power_up_enable(mm, inv);
		return TRUE;
	} else if (enable && mm->disabled)
		mmd_modem_enable(mm);
	mmd_schedule_sync(mm->bus);
	mm_gdbus_modem_complete_enable(iface, inv);
	return TRUE;
}

static gboolean handle_list_bearers(MmGdbusModem *iface, GDBusMethodInvocation *inv,
				    gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	GPtrArray *paths = g_ptr_array_new();

	mm->bus->calls++;
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next)
		g_ptr_array_add(paths, b->path);
	g_ptr_array_add(paths, NULL);
	mm_gdbus_modem_complete_list_bearers(iface, inv, (const gchar *const *)paths->pdata);
	g_ptr_array_free(paths, TRUE);
	return TRUE;
}

static struct mmd_bearer *add_dbus_bearer(struct mmd_modem *mm, const struct config_mux *cfg,
					  bool allow_roaming)
{
	struct mmd_bearer *b = mmd_bearer_new(mm, true, 0, cfg, -1);
	struct mmd_bearer **tail = &mm->bearers;

	if (!b)
		return NULL;
	b->allow_roaming = allow_roaming;
	while (*tail)
		tail = &(*tail)->next;
	*tail = b;
	mmd_bearer_export(b);
	mmd_bearer_sync(b);
	sync_properties(mm);
	return b;
}

static gboolean handle_create_bearer(MmGdbusModem *iface, GDBusMethodInvocation *inv,
				     GVariant *props, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	g_autoptr(GError) error = NULL;
	struct config_mux cfg;
	bool allow_roaming;

	mm->bus->calls++;
	if (!mmd_bearer_config(mm, props, false, &cfg, &allow_roaming, &error)) {
		mmd_reject(mm->bus, inv, error->domain, error->code, "%s", error->message);
		return TRUE;
	}
	struct mmd_bearer *b = add_dbus_bearer(mm, &cfg, allow_roaming);
	if (!b) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return TRUE;
	}
	mm_gdbus_modem_complete_create_bearer(iface, inv, b->path);
	return TRUE;
}

static gboolean handle_delete_bearer(MmGdbusModem *iface, GDBusMethodInvocation *inv,
				     const gchar *path, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	struct mmd_bearer *b = mmd_bearer_find(mm, path);
	char err[256];

	mm->bus->calls++;
	if (!b) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_NOT_FOUND,
			   "No bearer %s on this modem", path);
		return TRUE;
	}
	if (!b->from_dbus) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
			   "Bearer %s is mux %u of qmapd's configuration: qmapctl mux del removes "
			   "it",
			   path, b->mux_id);
		return TRUE;
	}
	if (mmd_bearer_disconnect(b, err, sizeof(err)) < 0) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "%s", err);
		return TRUE;
	}
	for (struct mmd_bearer **p = &mm->bearers; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			break;
		}
	mmd_bearer_free(b, "deleted");
	sync_properties(mm);
	mm_gdbus_modem_complete_delete_bearer(iface, inv);
	return TRUE;
}

/* Simple.Connect on a registered modem: a bearer of the same settings is used, connected or
 * not, as ModemManager does; otherwise a new one. */
static void connect_now(struct mmd_modem *mm, GDBusMethodInvocation *inv,
			const struct config_mux *cfg, bool allow_roaming)
{
	struct mmd_bearer *b = NULL;

	for (struct mmd_bearer *o = mm->bearers; o && !b; o = o->next)
		if (o->from_dbus && strcmp(o->cfg.apn, cfg->apn) == 0 &&
		    o->cfg.ip_type == cfg->ip_type && strcmp(o->cfg.user, cfg->user) == 0 &&
		    strcmp(o->cfg.password, cfg->password) == 0 &&
		    strcmp(o->cfg.allowed_auth, cfg->allowed_auth) == 0 &&
		    o->allow_roaming == allow_roaming)
			b = o;
	if (!b)
		b = add_dbus_bearer(mm, cfg, allow_roaming);
	if (!b) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "out of memory");
		return;
	}
	mmd_bearer_connect(b, inv, true);
}

/* Waiting Simple.Connects go on once the modem is registered; registration denied or the
 * timeout answers them with ModemManager's errors for those. */
static void waits_run(struct mmd_modem *mm)
{
	struct modem_view view;

	modem_view(mm->modem, &view);
	gint64 now = g_get_monotonic_time();

	for (struct mmd_wait **p = &mm->waiting; *p;) {
		struct mmd_wait *w = *p;
		bool registered = mm->state >= MM_MODEM_STATE_REGISTERED;
		bool denied = view.registration == MODEM_REGISTRATION_DENIED;

		if (!registered && !denied && now < w->deadline) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		if (registered) {
			log_info("dbus: modem %s registered: the waiting connect goes on",
				 modem_name(mm->modem));
			connect_now(mm, w->inv, &w->cfg, w->allow_roaming);
		} else if (denied) {
			mmd_reject(mm->bus, w->inv, MM_MOBILE_EQUIPMENT_ERROR,
				   MM_MOBILE_EQUIPMENT_ERROR_NETWORK_NOT_ALLOWED,
				   "Registration denied by the network");
		} else {
			mmd_reject(mm->bus, w->inv, MM_MOBILE_EQUIPMENT_ERROR,
				   MM_MOBILE_EQUIPMENT_ERROR_NETWORK_TIMEOUT,
				   "Not registered after %d s", MMD_REGISTRATION_TIMEOUT_SECONDS);
		}
		free(w);
	}
}

static gboolean handle_simple_connect(MmGdbusModemSimple *iface, GDBusMethodInvocation *inv,
				      GVariant *props, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	g_autoptr(GError) error = NULL;
	struct config_mux cfg;
	bool allow_roaming;

	(void)iface;
	mm->bus->calls++;
	if (!mmd_bearer_config(mm, props, true, &cfg, &allow_roaming, &error)) {
		mmd_reject(mm->bus, inv, error->domain, error->code, "%s", error->message);
		return TRUE;
	}
	if (mm->disabled && mmd_power_low(mm))
		mmd_power_up_enable(mm, NULL); /* the connect waits for registration */
	if (mm->disabled)
		mmd_modem_enable(mm); /* Simple.Connect enables, as ModemManager's does */
	sync_properties(mm);
	if (mm->state == MM_MODEM_STATE_LOCKED) {
		mmd_reject_locked(mm, inv);
		return TRUE;
	}
	if (mm->state == MM_MODEM_STATE_FAILED) {
		mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_WRONG_STATE,
			   "The modem failed (%s)", modem_state(mm->modem));
		return TRUE;
	}
	/* Not registered yet (just plugged, searching): wait for it as ModemManager does. A
	 * modem without NAS never tells its registration: its session start will. */
	struct modem_view view;
	modem_view(mm->modem, &view);
	if (mm->state < MM_MODEM_STATE_REGISTERED && view.tells_registration) {
		struct mmd_wait *w = calloc(1, sizeof(*w));
		if (!w) {
			mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED,
				   "out of memory");
			return TRUE;
		}
		w->inv = inv;
		w->cfg = cfg;
		w->allow_roaming = allow_roaming;
		w->deadline =
			g_get_monotonic_time() + MMD_REGISTRATION_TIMEOUT_SECONDS * G_USEC_PER_SEC;
		w->next = mm->waiting;
		mm->waiting = w;
		log_info("dbus: modem %s is %s: the connect waits up to %d s for registration",
			 modem_name(mm->modem), mm_modem_state_get_string(mm->state),
			 MMD_REGISTRATION_TIMEOUT_SECONDS);
		return TRUE;
	}
	connect_now(mm, inv, &cfg, allow_roaming);
	return TRUE;
}

static gboolean handle_simple_disconnect(MmGdbusModemSimple *iface, GDBusMethodInvocation *inv,
					 const gchar *path, gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	bool all = strcmp(path, "/") == 0;
	char err[256];

	mm->bus->calls++;
	if (!all) {
		struct mmd_bearer *b = mmd_bearer_find(mm, path);
		if (!b) {
			mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_NOT_FOUND,
				   "No bearer %s on this modem", path);
			return TRUE;
		}
		if (!b->from_dbus) {
			mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_UNAUTHORIZED,
				   "Bearer %s is mux %u of qmapd's configuration: qmapctl mux "
				   "del stops it",
				   path, b->mux_id);
			return TRUE;
		}
	}
	/* "/" also cancels a connect still waiting for registration, as ModemManager's does. */
	while (all && mm->waiting) {
		struct mmd_wait *w = mm->waiting;
		mm->waiting = w->next;
		mmd_reject(mm->bus, w->inv, MM_CORE_ERROR, MM_CORE_ERROR_CANCELLED,
			   "Connection attempt cancelled");
		free(w);
	}
	for (struct mmd_bearer *b = mm->bearers; b; b = b->next) {
		if (!b->from_dbus || (!all && strcmp(b->path, path) != 0))
			continue;
		if (mmd_bearer_disconnect(b, err, sizeof(err)) < 0) {
			mmd_reject(mm->bus, inv, MM_CORE_ERROR, MM_CORE_ERROR_FAILED, "%s", err);
			return TRUE;
		}
	}
	mmd_schedule_sync(mm->bus);
	mm_gdbus_modem_simple_complete_disconnect(iface, inv);
	return TRUE;
}

static gboolean handle_simple_get_status(MmGdbusModemSimple *iface, GDBusMethodInvocation *inv,
					 gpointer user_data)
{
	struct mmd_modem *mm = user_data;
	GVariantBuilder b;

	mm->bus->calls++;
	sync_properties(mm);
	g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
	g_variant_builder_add(&b, "{sv}", STATUS_STATE, g_variant_new_uint32(mm->state));
	if (mm->state >= MM_MODEM_STATE_REGISTERED) {
		g_variant_builder_add(&b, "{sv}", STATUS_SIGNAL_QUALITY,
				      mm_gdbus_modem_get_signal_quality(mm->iface));
		g_variant_builder_add(
			&b, "{sv}", STATUS_ACCESS_TECHNOLOGIES,
			g_variant_new_uint32(mm_gdbus_modem_get_access_technologies(mm->iface)));
		g_variant_builder_add(
			&b, "{sv}", STATUS_3GPP_REGISTRATION_STATE,
			g_variant_new_uint32(mm_gdbus_modem3gpp_get_registration_state(mm->m3gpp)));
		g_variant_builder_add(
			&b, "{sv}", STATUS_3GPP_OPERATOR_CODE,
			g_variant_new_string(mm_gdbus_modem3gpp_get_operator_code(mm->m3gpp)));
		g_variant_builder_add(
			&b, "{sv}", STATUS_3GPP_OPERATOR_NAME,
			g_variant_new_string(mm_gdbus_modem3gpp_get_operator_name(mm->m3gpp)));
	}
	mm_gdbus_modem_simple_complete_get_status(iface, inv, g_variant_builder_end(&b));
	return TRUE;
}

/* ---- life cycle ----------------------------------------------------------------------- */

struct mmd_modem *mmd_modem_new(struct mm_dbus *d, struct modem *modem)
{
	struct mmd_modem *mm;
	struct modem_view view;

	if (!modem_view(modem, &view))
		return NULL; /* control = none: no modem to speak of, only a data path */
	mm = calloc(1, sizeof(*mm));
	if (!mm)
		return NULL;
	mm->bus = d;
	mm->modem = modem;
	mm->iface = mm_gdbus_modem_skeleton_new();
	mm->simple = mm_gdbus_modem_simple_skeleton_new();
	mm->m3gpp = mm_gdbus_modem3gpp_skeleton_new();
	mm->sim = mm_gdbus_sim_skeleton_new();
	set_unknowns(mm);
	set_sim_unknowns(mm->sim);
	g_signal_connect(mm->iface, "handle-enable", G_CALLBACK(handle_enable), mm);
	g_signal_connect(mm->iface, "handle-list-bearers", G_CALLBACK(handle_list_bearers), mm);
	g_signal_connect(mm->iface, "handle-create-bearer", G_CALLBACK(handle_create_bearer), mm);
	g_signal_connect(mm->iface, "handle-delete-bearer", G_CALLBACK(handle_delete_bearer), mm);
	g_signal_connect(mm->simple, "handle-connect", G_CALLBACK(handle_simple_connect), mm);
	g_signal_connect(mm->simple, "handle-disconnect", G_CALLBACK(handle_simple_disconnect), mm);
	g_signal_connect(mm->simple, "handle-get-status", G_CALLBACK(handle_simple_get_status), mm);
	mmd_sim_init(mm);
	mmd_power_init(mm);
	mmd_messaging_init(mm);
	mmd_location_init(mm);
	mmd_modes_init(mm);
	mmd_3gpp_init(mm);
	mmd_signal_init(mm);
	mmd_time_init(mm);
	mmd_answer_unsupported(d, mm->iface);
	mmd_answer_unsupported(d, mm->simple);
	mmd_answer_unsupported(d, mm->m3gpp);
	mmd_answer_unsupported(d, mm->sim);
	mmd_answer_unsupported(d, mm->signal);
	mmd_answer_unsupported(d, mm->time);
	mmd_auth_watch(d, mm->iface);
	mmd_auth_watch(d, mm->simple);
	mmd_auth_watch(d, mm->m3gpp);
	mmd_auth_watch(d, mm->sim);
	mmd_auth_watch(d, mm->signal);
	mmd_auth_watch(d, mm->time);
	return mm;
}

void mmd_modem_free(struct mmd_modem *mm)
{
	if (!mm)
		return;
	modem_unexport(mm);
	waits_abort(mm, "The modem is gone");
	bearers_free(mm, "the modem is gone");
	free(mm->parked);
	g_signal_handlers_disconnect_by_data(mm->iface, mm);
	g_signal_handlers_disconnect_by_data(mm->simple, mm);
	mmd_auth_unwatch(mm->bus, mm->iface);
	mmd_auth_unwatch(mm->bus, mm->simple);
	mmd_auth_unwatch(mm->bus, mm->m3gpp);
	mmd_auth_unwatch(mm->bus, mm->sim);
	mmd_auth_unwatch(mm->bus, mm->signal);
	mmd_auth_unwatch(mm->bus, mm->time);
	mmd_sim_free(mm);
	mmd_power_free(mm);
	mmd_messaging_free(mm);
	mmd_location_free(mm);
	mmd_modes_free(mm);
	mmd_3gpp_free(mm);
	mmd_signal_free(mm);
	mmd_time_free(mm);
	g_clear_object(&mm->iface);
	g_clear_object(&mm->simple);
	g_clear_object(&mm->m3gpp);
	g_clear_object(&mm->sim);
	free(mm);
}
