/* SPDX-License-Identifier: MIT */
/*
 * What a qmapd leaves behind for the next one (docs/ARCHITECTURE.md "Restart and crash"):
 * the QMI client ids it holds in the modem and, per mux, the WDS client and packet data
 * handle of each connected family. Kept in small text files beside the control link
 * (/run/qmapd/qmi0.clients, /run/qmapd/qmi0.mux1), written atomically whenever they change,
 * so they are right also after a kill -9. The parser is pure (fuzz-qmi-state).
 */
#ifndef QMAPD_QMI_STATE_H
#define QMAPD_QMI_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QMI_STATE_MAX_CLIENTS 16

struct qmi_state_client {
	uint8_t service; /* QMI service number */
	uint8_t cid;
};

/* "<service> <cid>" lines: the modem's clients that no session owns. */
struct qmi_state_clients {
	unsigned n;
	struct qmi_state_client c[QMI_STATE_MAX_CLIENTS];
};

/* "v4 <cid> <handle>" / "v6 <cid> <handle>" lines: one mux's connected families. */
struct qmi_state_mux {
	struct qmi_state_family {
		bool present;
		uint8_t cid;
		uint32_t handle;
	} fam[2]; /* [0] IPv4, [1] IPv6 */
};

/* Parse text (len bytes, need not end in NUL); -EINVAL for anything but the lines above. */
int qmi_state_parse_clients(const char *text, size_t len, struct qmi_state_clients *ret);
int qmi_state_parse_mux(const char *text, size_t len, struct qmi_state_mux *ret);

/* The text of a file (what the parsers read back), NUL-terminated in size > 0 bytes; its
 * length (cut at size - 1). */
size_t qmi_state_format_clients(const struct qmi_state_clients *c, char *buf, size_t size);
size_t qmi_state_format_mux(const struct qmi_state_mux *m, char *buf, size_t size);

/* The files: "<link>.clients" and "<link>.mux<id>". */
int qmi_state_read_clients(const char *link, struct qmi_state_clients *ret);
int qmi_state_write_clients(const char *link, const struct qmi_state_clients *c);
int qmi_state_read_mux(const char *link, unsigned mux_id, struct qmi_state_mux *ret);
int qmi_state_write_mux(const char *link, unsigned mux_id, const struct qmi_state_mux *m);
void qmi_state_remove_mux(const char *link, unsigned mux_id);

#endif
