#!/bin/bash
# SPDX-License-Identifier: MIT
# The soak's CI form: scripts/soak.sh for 1 minute (traffic both ways, mux and reload churn,
# status polling) with a network drop at 35 s, after the 30 s of warm-up, so that the three
# samples judged (40, 50, 60 s) see the sessions dropped and back; qmapd's RSS, fds and
# threads and the modem's QMI client ids must not grow after warm-up. Longer runs:
# scripts/soak.sh -m 60 (a drop a minute).
exec bash "$(dirname "$0")/../../scripts/soak.sh" -m "${SOAK_MINUTES:-1}" -d "${SOAK_DROP_EVERY:-35}" \
	"${BUILD_DIR:-$(pwd)}"
