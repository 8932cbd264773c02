#!/bin/bash
# SPDX-License-Identifier: MIT
# How two muxes of one modem share the uplink: qmapd + qmapd-sim (no rate limit), a 3 s
# iperf3 upload through each mux alone, then both at once (mux 1 started first, then mux 2
# first), with uplink-queue = fq-codel and fifo. Prints Mbit/s per mux and the per-mux drop
# counters. A measurement, not a test: run from the build directory, as root.
#   sudo tests/bench/ul-mux-share.sh            (BUILD_DIR=. by default, as in tests/support/lib.sh)
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need jq jq
e2e_setup

mbps() { jq '.end.sum_received.bits_per_second / 1e6 | floor' "$1"; }

run_queue() { # uplink-queue
	write_config "$E2E_TMP/qmapd.conf"
	sed -i "s/^headroom = .*/&\nuplink-queue = $1/" "$E2E_TMP/qmapd.conf"
	rm -f "$E2E_TMP/sim.sock" "$E2E_TMP/control"
	start_sim
	start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
	in_net iperf3 -s -D -B 198.51.100.1 -p 5201 --pidfile "$E2E_TMP/ip1.pid"
	in_net iperf3 -s -D -B 198.51.100.2 -p 5202 --pidfile "$E2E_TMP/ip2.pid"
	wait_for 5 "iperf3 servers" test -s "$E2E_TMP/ip1.pid" -a -s "$E2E_TMP/ip2.pid"
	E2E_PIDS+=("$(cat "$E2E_TMP/ip1.pid")" "$(cat "$E2E_TMP/ip2.pid")")
	for m in 1 2; do
		in_host iperf3 -c 198.51.100.$m -p 520$m -t 3 -J >"$E2E_TMP/alone$m.json" ||
			fail "iperf3 mux $m alone"
		echo "$1: mux $m alone: $(mbps "$E2E_TMP/alone$m.json") Mbit/s"
	done
	local order m pid=()
	for order in "1 2" "2 1"; do
		for m in $order; do
			in_host iperf3 -c 198.51.100.$m -p 520$m -t 3 -J >"$E2E_TMP/both$m.json" &
			pid[m]=$!
		done
		wait "${pid[1]}" && wait "${pid[2]}" || fail "iperf3 both at once"
		echo "$1: both at once, mux ${order%% *} started first:" \
			"mux 1 $(mbps "$E2E_TMP/both1.json") Mbit/s, mux 2 $(mbps "$E2E_TMP/both2.json") Mbit/s"
	done
	refresh_stats
	grep -E "^modem0 mux [12] " "$E2E_TMP/qmapd.stats" | while read -r _ _ id rest; do
		echo "$1: mux $id counters: $(tr ' ' '\n' <<<"$rest" |
			grep -E '^(tx_packets|[a-z_]*drop[a-z_]*|[a-z_]*flow[a-z_]*)=' | grep -v '=0$' | paste -sd' ')"
	done
	stop_qmapd
	kill "$(cat "$E2E_TMP/ip1.pid")" "$(cat "$E2E_TMP/ip2.pid")" "$SIM_PID" 2>/dev/null
	wait "$SIM_PID" 2>/dev/null
}
run_queue fq-codel
run_queue fifo
echo "ul-mux-share: done"
