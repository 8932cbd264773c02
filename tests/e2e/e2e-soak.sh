#!/bin/bash
# SPDX-License-Identifier: MIT
# The soak's CI form: scripts/soak.sh for 2 minutes (traffic both ways, network drops, mux
# and reload churn, status polling; qmapd's RSS, fds and threads and the modem's QMI client
# ids must not grow after warm-up). Longer runs: scripts/soak.sh -m 60.
exec bash "$(dirname "$0")/../../scripts/soak.sh" -m "${SOAK_MINUTES:-2}" "${BUILD_DIR:-$(pwd)}"
