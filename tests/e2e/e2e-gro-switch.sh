#!/bin/bash
# SPDX-License-Identifier: MIT
# `ethtool -K qmap1 gro off` switches qmapd's downlink merging off for that mux (one write
# per packet, counted as gro_off), `gro on` brings super-packets back; the other mux keeps
# merging, and TCP runs through every switch. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need ethtool ethtool
need jq jq
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
write_config "$E2E_TMP/qmapd.conf"
start_sim
start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
start_iperf3_server

mux_line() { grep "^modem0 mux $1 " "$E2E_TMP/qmapd.stats"; }
gro_is() { # mux state: the counters say gro=state
	refresh_stats
	[[ $(mux_line "$1") == *" gro=$2"* ]]
}

# Downlink TCP on mux 1 for 2 s; prints the deltas of rx_packets, rx_writes, super-packets.
downlink() {
	refresh_stats
	local p0 w0 s0
	p0=$(qstat "mux 1 " rx_packets) w0=$(qstat "mux 1 " rx_writes)
	s0=$(qstat "mux 1 " gro_super_packets)
	in_host iperf3 -c 198.51.100.1 -R -t 2 >"$E2E_TMP/iperf.log" 2>&1 ||
		fail "iperf3 downlink: $(tail -3 "$E2E_TMP/iperf.log")"
	refresh_stats
	echo "$(($(qstat "mux 1 " rx_packets) - p0)) $(($(qstat "mux 1 " rx_writes) - w0))" \
		"$(($(qstat "mux 1 " gro_super_packets) - s0))"
}

gro_is 1 on || fail "mux 1 does not start with gro=on"
read -r packets writes supers < <(downlink)
expect_ge "super-packets with gro on" "$supers" 10
[ "$writes" -lt "$packets" ] || fail "gro on: $writes writes for $packets packets"

in_host ethtool -K qmap1 gro off
wait_for 5 "mux 1 to follow gro off" gro_is 1 off
gro_is 2 on || fail "mux 2 switched too"
in_host "$QMAPCTL" -s "$E2E_TMP/control" -j stats | jq -e '.modems[].muxes[] | select(.id == 1) | .gro == "off"' \
	>/dev/null || fail "qmapctl stats does not show gro off"
read -r packets writes supers < <(downlink)
expect_ge "packets with gro off" "$packets" 1000
expect_eq "super-packets with gro off" "$supers" 0
expect_eq "writes with gro off (one per packet)" "$writes" "$packets"

in_host ethtool -K qmap1 gro on
wait_for 5 "mux 1 to follow gro on" gro_is 1 on
read -r packets writes supers < <(downlink)
expect_ge "super-packets after gro on again" "$supers" 10
stop_qmapd
echo "e2e-gro-switch: passed"
