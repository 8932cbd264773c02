# SPDX-License-Identifier: MIT
# What the latency benchmarks (latency.sh, latency-dl.sh) share, sourced after
# tests/support/lib.sh: their setup (namespaces, TCP's ECN setting on both sides, two iperf3
# servers: 5201 and 5202, for loads in both directions at once), the idle round trip, one run
# under load with the pings' loss and goodput, ping percentiles, and stopping a qmapd +
# qmapd-sim pair between runs.

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

# idle_p50: the median round trip of 200 pings at 10 ms while nothing else runs, ms.
idle_p50() {
	in_host ping -c 200 -i 0.01 -W 2 198.51.100.1 >"$E2E_TMP/idle.log" || fail "ping while idle"
	rtts "$E2E_TMP/idle.log" >"$E2E_TMP/idle.rtt"
	pct "$E2E_TMP/idle.rtt" 50
}

# iperf_dir DIR [ARGS...]: 4 TCP flows for SECS s, DIR "up" (host to network) or "down" (-R),
# the report in $E2E_TMP/DIR.json.
iperf_dir() {
	local dir=$1 reverse=()
	shift
	[ "$dir" = up ] || reverse=(-R)
	iperf_load "${reverse[@]}" "$@" -t "$SECS" -P 4 -J >"$E2E_TMP/$dir.json"
}

# load_run MAIN OTHER IDLE: SECS s of iperf_dir MAIN, and of iperf_dir OTHER on the second
# server too unless OTHER is empty, pinged at 10 ms from 2 s on (past slow start: the
# standing queue, if any, has formed) to 1 s before the end. Then refresh_stats; each reply's
# round trip minus IDLE (ms) in $E2E_TMP/load.rtt and the pings' loss in LOSS ("0.5%").
load_run() {
	local main=$1 other=$2 idle=$3 main_pid other_pid= n=$(((SECS - 3) * 100))
	iperf_dir "$main" &
	main_pid=$!
	if [ -n "$other" ]; then
		iperf_dir "$other" -p 5202 &
		other_pid=$!
	fi
	sleep 2
	in_host ping -c "$n" -i 0.01 -W 2 198.51.100.1 >"$E2E_TMP/load.log" || true
	wait "$main_pid" || fail "iperf3 $main: $(tail -3 "$E2E_TMP/$main.json")"
	[ -z "$other_pid" ] || wait "$other_pid" || fail "iperf3 $other"
	refresh_stats
	rtts "$E2E_TMP/load.log" | awk -v i="$idle" '{ print $1 - i }' >"$E2E_TMP/load.rtt"
	LOSS=$(awk -v n="$n" -v g="$(wc -l <"$E2E_TMP/load.rtt")" \
		'BEGIN { printf "%.1f%%", 100 * (n - g) / n }')
}

# goodput DIR BPS: what $E2E_TMP/DIR.json received as a fraction of BPS ("0.93"), or in
# Gbit/s when BPS is 0 (no radio: nothing to be a fraction of).
goodput() {
	awk -v g="$(jq '.end.sum_received.bits_per_second' "$E2E_TMP/$1.json")" -v r="$2" 'BEGIN {
		if (r > 0) printf "%.2f", g / r; else printf "%.2f Gbit/s", g / 1e9 }'
}

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
