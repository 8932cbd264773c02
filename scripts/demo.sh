#!/bin/bash
# SPDX-License-Identifier: MIT
# The quick-start demo, as root on Debian 12: install dependencies, build, start qmapd-sim
# (the modem) and qmapd in network namespaces of their own, bring up two muxes (one from the
# config, one with qmapctl mux add; addresses from the network), ping IPv4 and IPv6 and run
# a short iperf3 across each, print qmapctl status and the per-mux counters, clean up.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
"$SRC/scripts/deps.sh"
cmake -S "$SRC" -B "$SRC/build/gcc" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$SRC/build/gcc" -j "$(nproc)" >/dev/null

export BUILD_DIR=$SRC/build/gcc SOURCE_DIR=$SRC
source "$SRC/tests/support/lib.sh"
e2e_setup

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "qmapd-sim plays the modem in namespace $NS_NET; qmapd runs in $NS_HOST"
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control-link = $E2E_TMP/qmi0
control-socket = $E2E_TMP/control

[mux.1]
interface = qmap1
apn = internet
routes = 198.51.100.1/32 2001:db8:ff::1/128
CONF
cat "$E2E_TMP/qmapd.conf"
# Each mux's session gets its addresses from the simulated network.
SIM_MUX_ARGS=(--mux 1=192.0.2.2/24,2001:db8:1::2/64 --mux 2=203.0.113.2/24,2001:db8:2::2/64)
SIM_ALWAYS_CONNECTED=no start_sim
start_qmapd "$E2E_TMP/qmapd.conf"
qmapctl() { in_host "$BUILD_DIR/qmapctl" -s "$E2E_TMP/control" "$@"; }

say "qmapctl mux add 2 apn=internet interface=qmap2 routes=198.51.100.2/32,2001:db8:ff::2/128"
qmapctl mux add 2 apn=internet interface=qmap2 routes="198.51.100.2/32 2001:db8:ff::2/128"
connected() { [ "$(qmapctl -j status | jq -r '[.modems[].muxes[].state] | unique | join(",")')" = connected ]; }
wait_for 30 "both sessions connected" connected
say "qmapctl status"
qmapctl status
ip -n "$NS_HOST" -d link show qmap1 | grep -o 'prog/xdp id [0-9]*' | sed 's/^/qmap1 headroom: /'

for target in 198.51.100.1 2001:db8:ff::1 198.51.100.2 2001:db8:ff::2; do
	say "ping $target"
	in_host ping -c 3 -i 0.2 "$target"
done

start_iperf3_server
for target in 198.51.100.1 198.51.100.2; do
	say "iperf3 to $target, uplink then downlink (-R)"
	in_host iperf3 -c "$target" -t 2 | tail -n 4
	in_host iperf3 -c "$target" -t 2 -R | tail -n 4
done

say "qmapctl stats"
qmapctl stats
say "done: namespaces and devices are removed on exit"
