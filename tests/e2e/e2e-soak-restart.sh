#!/bin/bash
# SPDX-License-Identifier: MIT
# The control-side soak's CI form: scripts/soak-restart.sh for 40 s (a QMI and an MBIM modem
# with the D-Bus API, NetworkManager's connect and disconnect on each every 10 s, a network
# drop at 15 s, a restart at 25 s that must keep the QMI session and its TCP connection;
# qmapd's RSS and fds, the proxies' fds and the modem's client ids must not grow). In the ASan
# build LeakSanitizer judges each exit, with GLib's slice allocator off (it hid a leaked
# GVariant per bearer update). The hour: scripts/soak-restart.sh -m 60.
export SOAK_SECONDS=${SOAK_SECONDS:-40} RESTART_EVERY=${RESTART_EVERY:-25}
export DROP_EVERY=${DROP_EVERY:-30} SAMPLE_EVERY=${SAMPLE_EVERY:-5}
exec bash "$(dirname "$0")/../../scripts/soak-restart.sh" "${BUILD_DIR:-$(pwd)}"
