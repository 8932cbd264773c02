#!/bin/bash
# SPDX-License-Identifier: MIT
# A modem that refuses QMAPv5 (WDA Set Data Format fails): qmapd falls back to QMAPv1, the
# session comes up, and traffic flows in both directions with the v1 framing.
# Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need /usr/libexec/qmi-proxy libqmi-proxy
need jq jq
e2e_setup

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control-link = $E2E_TMP/qmi0
control-socket = $E2E_TMP/control
qmap-version = 5

[mux.1]
interface = qmap1
apn = internet
routes = 198.51.100.1/32 2001:db8:ff::1/128
CONF

SIM_MUX_ARGS=(--mux 1=192.0.2.2/24,2001:db8:1::2/64)
SIM_ALWAYS_CONNECTED=no start_sim --no-qmapv5
start_qmapd "$E2E_TMP/qmapd.conf"

ctl() { in_host "$QMAPCTL" -s "$E2E_TMP/control" "$@"; }
connected() { [ "$(ctl -j status | jq -r '.modems[0].muxes[0].state')" = connected ]; }
wait_for 30 "mux 1 connected" connected
expect_eq "granted protocol" "$(ctl -j status | jq -r '.modems[0].modem["data-format"].protocol')" qmap
grep -q "QMAPv5 refused" "$E2E_TMP/qmapd.log" || fail "fallback not logged"
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping IPv4 over QMAPv1"
in_host ping -c 3 -i 0.2 -W 2 2001:db8:ff::1 >/dev/null || fail "ping IPv6 over QMAPv1"
refresh_stats
for e in no_csum_header bad_next_header; do
	expect_eq "qmapd malformed $e" "$(qstat malformed: $e)" 0
	expect_eq "sim malformed $e" "$(sstat malformed_$e= malformed_$e)" 0
done
stop_qmapd
echo "e2e-qmap-fallback: passed"
