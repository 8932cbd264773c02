# SPDX-License-Identifier: MIT
# What the latency benchmarks (latency.sh, latency-dl.sh) share, sourced after
# tests/support/lib.sh: their setup (namespaces, TCP's ECN setting on both sides, two iperf3
# servers: 5201 and 5202, for loads in both directions at once), ping percentiles, and
# stopping a qmapd + qmapd-sim pair between runs.

# latency_setup ECN: e2e_setup, net.ipv4.tcp_ecn=ECN on both sides, the iperf3 servers.
# Loads run through iperf_load, with TCP's congestion control CC (default cubic: namespaces
# inherit the host's, BBR v1 ignores ECN marks, and a namespace may not choose a restricted
# one by sysctl, so iperf3 sets it on each socket).
latency_setup() {
	command -v iperf3 >/dev/null || skip "iperf3 not installed"
	command -v jq >/dev/null || skip "jq not installed"
	e2e_setup
	in_host sysctl -qw net.ipv4.tcp_ecn="$1"
	in_net sysctl -qw net.ipv4.tcp_ecn="$1"
	grep -qw "${CC:=cubic}" /proc/sys/net/ipv4/tcp_available_congestion_control ||
		skip "congestion control $CC not available"
	start_iperf3_server
	in_net iperf3 -s -p 5202 -D --pidfile "$E2E_TMP/iperf3b.pid" \
		--logfile "$E2E_TMP/iperf3b.log"
	wait_for 5 "second iperf3 server" test -s "$E2E_TMP/iperf3b.pid"
	E2E_PIDS+=($(cat "$E2E_TMP/iperf3b.pid"))
}

# iperf_load ARGS...: an iperf3 client in the host namespace with the senders' CC.
iperf_load() { in_host iperf3 -c 198.51.100.1 -C "$CC" "$@"; }

# pct FILE P: the P-th percentile of the numbers in FILE (one per line).
pct() {
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'
}

# rtts PING-OUTPUT: the replies' round trips, ms, one per line.
rtts() { sed -n 's/.*time=\([0-9.]*\) ms/\1/p' "$1"; }

stop_pair() {
	kill -TERM "$QMAPD_PID" "$SIM_PID" 2>/dev/null
	wait "$QMAPD_PID" "$SIM_PID" 2>/dev/null
	rm -f "$E2E_TMP/sim.sock"
}
