#!/bin/bash
# SPDX-License-Identifier: MIT
# The quick-start demo, as root on Debian 12: install dependencies, build, start qmapd-sim
# (the modem) and qmapd in network namespaces of their own, bring up two muxes, ping IPv4
# and IPv6 and run a short iperf3 across each, print the per-mux counters, clean up.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
"$SRC/scripts/deps.sh"
cmake -S "$SRC" -B "$SRC/build/gcc" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$SRC/build/gcc" -j "$(nproc)" >/dev/null

export BUILD_DIR=$SRC/build/gcc SOURCE_DIR=$SRC
source "$SRC/tests/lib.sh"
e2e_setup

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "qmapd-sim plays the modem in namespace $NS_NET; qmapd runs in $NS_HOST"
write_config "$E2E_TMP/qmapd.conf"
start_sim
start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
ip -n "$NS_HOST" -br addr show
ip -n "$NS_HOST" -d link show qmap1 | grep -o 'prog/xdp id [0-9]*' | sed 's/^/qmap1 headroom: /'

for target in 198.51.100.1 2001:db8:ff::1 198.51.100.2 2001:db8:ff::2; do
	say "ping $target"
	in_host ping -c 3 -i 0.2 "$target"
done

in_net iperf3 -s -D --pidfile "$E2E_TMP/iperf3.pid" --logfile "$E2E_TMP/iperf3-server.log"
wait_for 5 "iperf3 server" test -s "$E2E_TMP/iperf3.pid"
E2E_PIDS+=($(cat "$E2E_TMP/iperf3.pid"))
for target in 198.51.100.1 198.51.100.2; do
	say "iperf3 to $target, uplink then downlink (-R)"
	in_host iperf3 -c "$target" -t 2 | tail -n 4
	in_host iperf3 -c "$target" -t 2 -R | tail -n 4
done

say "qmapd counters (SIGUSR1)"
refresh_stats
cat "$E2E_TMP/qmapd.stats"
say "done: namespaces and devices are removed on exit"
