#!/bin/bash
# SPDX-License-Identifier: MIT
# uplink-rate = auto following a moving radio (issue 14): 4 TCP uploads through qmapd and
# qmapd-sim while the sim's uplink rate steps through RATES (Mbit/s, changed by --rate-file and
# SIGHUP every PHASE seconds; --dl-rate 5x, --modem-buffer 32768, --network-delay 10), ping at
# 10 ms intervals throughout. Per phase, counted from SETTLE seconds after the change: ping RTT
# added to the idle p50 (p50/p99/max), ping loss (sequence numbers of the phase not answered), upload goodput as a fraction of the rate
# (iperf3's per-second intervals), and how long after the change qmapd's shaper rate first
# lay within 80-100% of the new rate (counters sampled every 0.25 s).
# Also prints the shaper rate / estimate trajectory (TRACE lines, to stderr).
# Usage: tests/bench/latency-auto.sh BUILD_DIR   env: RATES ("50 20 80"), PHASE (10), SETTLE (3),
#        MODE (auto; "fixed" = uplink-rate at 95% of the first rate, for comparison)
# Needs root; runs in namespaces it creates and deletes, traffic on documentation ranges only.
BUILD_DIR=${1:?usage: $0 BUILD_DIR}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
source "$(dirname "$0")/../support/lib.sh"

RATES=${RATES:-"50 20 80"}
PHASE=${PHASE:-10}
SETTLE=${SETTLE:-3}
MODE=${MODE:-auto}
command -v iperf3 >/dev/null || skip "iperf3 not installed"
command -v jq >/dev/null || skip "jq not installed"

e2e_setup
in_host sysctl -qw net.ipv4.tcp_ecn=0
in_net sysctl -qw net.ipv4.tcp_ecn=0
start_iperf3_server

pct() {
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'
}

set -- $RATES
first=$1
n_phases=$#
rate_file=$E2E_TMP/rates
echo "ul-rate=$((first * 1000000)) dl-rate=$((first * 5000000))" >"$rate_file"
shaper="uplink-rate = auto"
[ "$MODE" = auto ] || shaper="uplink-rate = $((first * 950000))"
write_config "$E2E_TMP/qmapd.conf" "$shaper"
start_sim --ul-rate $((first * 1000000)) --dl-rate $((first * 5000000)) --modem-buffer 32768 \
	--network-delay 10 --rate-file "$rate_file"
start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2

in_host ping -c 200 -i 0.01 -W 2 198.51.100.1 >"$E2E_TMP/idle.log" || fail "ping while idle"
idle=$(sed -n 's/.*time=\([0-9.]*\) ms/\1/p' "$E2E_TMP/idle.log" >"$E2E_TMP/idle.rtt" &&
	pct "$E2E_TMP/idle.rtt" 50)

total=$((PHASE * n_phases))
t0=$(date +%s.%N)
in_host iperf3 -c 198.51.100.1 -t "$total" -P 4 -J >"$E2E_TMP/up.json" &
up=$!
in_host ping -D -c $((total * 100 - 50)) -i 0.01 -W 2 198.51.100.1 >"$E2E_TMP/load.log" &
pinger=$!
# Counters every 0.25 s; the rate changes at each phase boundary.
i=0
phase=0
: >"$E2E_TMP/trace"
while [ "$i" -lt $((total * 4)) ]; do
	now=$(date +%s.%N)
	el=$(awk -v a="$now" -v b="$t0" 'BEGIN { print a - b }')
	p=$(awk -v e="$el" -v l="$PHASE" 'BEGIN { print int(e / l) }')
	if [ "$p" -gt "$phase" ] && [ "$p" -lt "$n_phases" ]; then
		phase=$p
		shift
		echo "ul-rate=$(($1 * 1000000)) dl-rate=$(($1 * 5000000))" >"$rate_file"
		kill -HUP "$SIM_PID"
	fi
	refresh_stats
	echo "$el $(qstat device: uplink_rate) $(qstat device: ul_rate_estimate)" >>"$E2E_TMP/trace"
	i=$((i + 1))
	sleep 0.2
done
wait "$up" || fail "iperf3 up"
wait "$pinger"

awk '{ printf "TRACE t=%.2f shaper=%.1f estimate=%.1f\n", $1, $2 / 1e6, $3 / 1e6 }' \
	"$E2E_TMP/trace" >&2

printf '| %s | %s | %s | %s | %s | %s |\n' "phase" "rate Mbit/s" "shaper within 80-100% after" \
	"added p50/p99/max ms (settled)" "ping loss" "up goodput (settled)"
printf '|---|---|---|---|---|---|\n'
set -- $RATES
for ((ph = 0; ph < n_phases; ph++)); do
	rate=$1
	shift
	from=$((ph * PHASE))
	to=$(((ph + 1) * PHASE))
	# Replies of the settled part of the phase (ping -D: [epoch] ... time=X ms).
	sed -n 's/^\[\([0-9.]*\)\].*time=\([0-9.]*\) ms/\1 \2/p' "$E2E_TMP/load.log" |
		awk -v t0="$t0" -v a=$((from + SETTLE)) -v b="$to" -v i="$idle" \
			'{ e = $1 - t0; if (e >= a && e < b) print $2 - i }' >"$E2E_TMP/ph.rtt"
	# Loss: sequence numbers between the phase's first and last reply that got none.
	loss=$(sed -n 's/^\[\([0-9.]*\)\].*icmp_seq=\([0-9]*\) .*time=.*/\1 \2/p' \
		"$E2E_TMP/load.log" | awk -v t0="$t0" -v a=$((from + SETTLE)) -v b="$to" '
		{ e = $1 - t0; if (e >= a && e < b) { n++; if (!lo || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } }
		END { printf "%.1f%%", n ? 100 * (1 - n / (hi - lo + 1)) : 100 }')
	good=$(jq --argjson a $((from + SETTLE)) --argjson b "$to" \
		'[.intervals[] | select(.sum.start >= $a and .sum.end <= $b) | .sum.bits_per_second]
		| add / length' "$E2E_TMP/up.json")
	frac=$(awk -v g="$good" -v r="$rate" 'BEGIN { printf "%.2f", g / (r * 1e6) }')
	within=$(awk -v a="$from" -v b="$to" -v r="$rate" '$1 >= a && $1 < b &&
		$2 >= 0.8 * r * 1e6 && $2 <= r * 1e6 { printf "%.2f s", $1 - a; found = 1; exit }
		END { if (!found) print "never" }' "$E2E_TMP/trace")
	printf '| %s | %s | %s | %.1f / %.1f / %.1f | %s | %s |\n' "$ph" "$rate" "$within" \
		"$(pct "$E2E_TMP/ph.rtt" 50)" "$(pct "$E2E_TMP/ph.rtt" 99)" \
		"$(pct "$E2E_TMP/ph.rtt" 100)" "$loss" "$frac"
done
