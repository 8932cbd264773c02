#!/bin/bash
# SPDX-License-Identifier: MIT
# Latency under download load through qmapd + qmapd-sim (issue 26): ping at 10 ms intervals
# while iperf3 runs 4 TCP downloads ("down"), or 4 downloads and 4 uploads ("updown"), through
# a downlink of RATE Mbit/s behind a base station's buffer of DL_BUFFER packets (qmapd-sim
# --dl-rate, --dl-buffer; the uplink at the same rate with a 32 KiB modem buffer, 10 ms of
# network delay each way), for each downlink mode: none (no shaper, qmapd before issue 26),
# fixed (downlink-rate at 95% of the rate) and auto (downlink-rate = auto). The uplink is
# shaped at 95% in every mode (issue 14's answer), so what differs is the downlink.
# Per run: the idle round trip (p50), what the load adds to it (p50/p99/max of the replies
# minus the idle p50), ping loss, download goodput as a fraction of the rate, and the
# shaper's CoDel drops, ECN marks and final rate.
# RATES=0 runs without a radio (no rate, buffer or delay): download goodput in Gbit/s, to see
# that auto costs no throughput where nothing limits it (fixed is skipped there).
# MOVING="50 20 80" (Mbit/s, PHASE seconds each, set through --rate-file and SIGHUP) runs 4
# downloads across the steps instead, per mode: per phase from SETTLE s after the change, the
# ping's added p50/p99, the goodput as a fraction of that phase's rate, and (auto) how long
# after the change the shaper's rate first lay within 70-100% of the new rate.
# Usage: tests/bench/latency-dl.sh BUILD_DIR   env: RATES ("10 50 200"), MODES ("none fixed
#        auto"), LOADS ("down updown"), SECS (10), DL_BUFFER (500), ECN (0), MOVING (""),
#        PHASE (10), SETTLE (2), CC (cubic: the senders' congestion control)
# Needs root; runs in namespaces it creates and deletes, traffic on documentation ranges only.
BUILD_DIR=${1:?usage: $0 BUILD_DIR}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
source "$(dirname "$0")/../support/lib.sh"
source "$(dirname "$0")/latency-lib.sh"

RATES=${RATES:-"10 50 200"}
MODES=${MODES:-"none fixed auto"}
LOADS=${LOADS:-"down updown"}
SECS=${SECS:-10}
DL_BUFFER=${DL_BUFFER:-500}
ECN=${ECN:-0}
MOVING=${MOVING:-}
PHASE=${PHASE:-10}
SETTLE=${SETTLE:-2}
latency_setup "$ECN"

# start_pair MODE RATE(Mbit/s, 0 = no radio) [SIM-ARGS...]
start_pair() {
	local mode=$1 rate=$2 bps=$(($2 * 1000000))
	shift 2
	local extra=() radio=()
	case $mode in
	fixed) extra=("downlink-rate = $((bps * 95 / 100))") ;;
	auto) extra=("downlink-rate = auto") ;;
	esac
	if [ "$rate" != 0 ]; then
		extra+=("uplink-rate = $((bps * 95 / 100))")
		radio=(--ul-rate "$bps" --dl-rate "$bps" --dl-buffer "$DL_BUFFER"
			--modem-buffer 32768 --network-delay 10)
	fi
	write_config "$E2E_TMP/qmapd.conf" "${extra[@]}"
	start_sim "${radio[@]}" "$@"
	start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
}

if [ -n "$MOVING" ]; then
	set -- $MOVING
	n_phases=$#
	total=$((PHASE * n_phases))
	printf '| %s | %s | %s | %s | %s | %s |\n' "phase Mbit/s" "downlink" "added p50/p99 ms" \
		"down goodput" "shaper Mbit/s at end" "reaction s"
	printf '|---|---|---|---|---|---|\n'
	for mode in $MODES; do
		set -- $MOVING
		echo "ul-rate=$(($1 * 1000000)) dl-rate=$(($1 * 1000000))" >"$E2E_TMP/rates"
		start_pair "$mode" "$1" --rate-file "$E2E_TMP/rates"
		idle=$(idle_p50)
		rm -f "$E2E_TMP/trace"
		t0=$(date +%s.%N)
		iperf_load -R -t "$total" -P 4 -J >"$E2E_TMP/down.json" &
		down=$!
		in_host ping -D -c $((total * 100 - 50)) -i 0.01 -W 2 198.51.100.1 \
			>"$E2E_TMP/load.log" &
		pinger=$!
		phase=0
		while kill -0 "$down" 2>/dev/null; do
			el=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print a - b }')
			p=$(awk -v e="$el" -v l="$PHASE" 'BEGIN { print int(e / l) }')
			if [ "$p" -gt "$phase" ] && [ "$p" -lt "$n_phases" ]; then
				phase=$p
				shift
				echo "ul-rate=$(($1 * 1000000)) dl-rate=$(($1 * 1000000))" \
					>"$E2E_TMP/rates"
				kill -HUP "$SIM_PID"
			fi
			refresh_stats
			echo "$el $(qstat device: downlink_rate) $(qstat device: dl_delay_us) $(qstat "mux 1 " dlq_queued_packets)" >>"$E2E_TMP/trace"
			sleep 0.25
		done
		wait "$down" || fail "iperf3 down"
		wait "$pinger"
		ts0=$(sed -n 's/^\[\([0-9.]*\)\].*/\1/p' "$E2E_TMP/load.log" | awk 'NR == 1')
		set -- $MOVING
		for ((k = 0; k < n_phases; k++)); do
			r=$1
			shift
			from=$((k * PHASE + SETTLE))
			to=$(((k + 1) * PHASE))
			# Ping replies of the phase (by the -D timestamps, from t0 of the pinger).
			sed -n 's/^\[\([0-9.]*\)\].*time=\([0-9.]*\) ms/\1 \2/p' "$E2E_TMP/load.log" |
				awk -v t="$ts0" -v f="$from" -v e="$to" -v i="$idle" \
					'$1 - t >= f && $1 - t < e { print $2 - i }' >"$E2E_TMP/phase.rtt"
			good=$(jq --argjson f "$from" --argjson e "$to" '[.intervals[].sum |
				select(.start >= $f and .end <= $e) | .bits_per_second] |
				(add / length)' "$E2E_TMP/down.json")
			frac=$(awk -v g="$good" -v r="$r" 'BEGIN { printf "%.2f", g / (r * 1e6) }')
			endrate=$(awk -v e="$to" '$1 < e { v = $2 } END { printf "%.1f", v / 1e6 }' \
				"$E2E_TMP/trace")
			react=-
			if [ "$mode" = auto ] && [ "$k" -gt 0 ]; then
				react=$(awk -v s=$((k * PHASE)) -v e="$to" -v r="$r" '$1 >= s && $1 < e &&
					$2 > 0 && $2 >= 0.7 * r * 1e6 && $2 <= r * 1e6 {
					printf "%.2f", $1 - s; found = 1; exit }
					END { if (!found) print "never" }' "$E2E_TMP/trace")
			fi
			printf '| %s | %s | %.1f / %.1f | %s | %s | %s |\n' "$r" "$mode" \
				"$(pct "$E2E_TMP/phase.rtt" 50)" "$(pct "$E2E_TMP/phase.rtt" 99)" \
				"$frac" "$endrate" "$react"
		done
		awk '{ printf "TRACE %s t=%.2f shaper=%.1f delay_ms=%.1f queued=%d\n", m, $1, $2 / 1e6, $3 / 1e3, $4 }' m="$mode" \
			"$E2E_TMP/trace" >&2
		stop_pair
	done
	exit 0
fi

printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "rate" "downlink" "load" \
	"idle p50 ms" "added p50/p99/max ms" "ping loss" "down goodput" "dl drops codel / marks" \
	"shaper Mbit/s"
printf '|---|---|---|---|---|---|---|---|---|\n'
for rate in $RATES; do
	bps=$((rate * 1000000))
	for mode in $MODES; do
		[ "$rate" != 0 ] || [ "$mode" != fixed ] || continue
		start_pair "$mode" "$rate"
		for load in $LOADS; do
			idle=$(idle_p50)
			other=
			[ "$load" != updown ] || other=up
			load_run down "$other" "$idle"
			downf=$(goodput down "$bps")
			printf '| %s | %s | %s | %.1f | %.1f / %.1f / %.1f | %s | %s | %s / %s | %.1f |\n' \
				"$rate" "$mode" "$load" "$idle" "$(pct "$E2E_TMP/load.rtt" 50)" \
				"$(pct "$E2E_TMP/load.rtt" 99)" "$(pct "$E2E_TMP/load.rtt" 100)" "$LOSS" \
				"$downf" "$(qstat "mux 1 " dlq_drops_codel)" \
				"$(qstat "mux 1 " dlq_ecn_marks)" \
				"$(awk -v r="$(qstat device: downlink_rate)" 'BEGIN { print r / 1e6 }')"
			echo "RESULT $rate-$mode-$load cuts=$(qstat device: dl_rate_cuts)" \
				"raises=$(qstat device: dl_rate_raises)" \
				"dl_delay_us=$(qstat device: dl_delay_us)" \
				"sojourn_p99_us=$(qstat "mux 1 " dlq_sojourn_p99_us)" >&2
		done
		stop_pair
	done
done
