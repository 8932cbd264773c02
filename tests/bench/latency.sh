#!/bin/bash
# SPDX-License-Identifier: MIT
# Latency under load through qmapd + qmapd-sim's radio (issue 14): ping at 10 ms intervals
# measures the round trip while iperf3 runs 4 TCP uploads ("up"), or 4 uploads and 4 downloads
# ("updown"), at each uplink rate with --dl-rate 5x, --modem-buffer 32768 and
# --network-delay 10, for each uplink queue: fifo (qmapd before issue 14), fq-codel, and
# fq-codel with the shaper at 95% of the rate (uplink-rate), and (mode "auto", not run by
# default) with uplink-rate = auto.
# Per run: the idle round trip (p50), what the load adds to it (p50/p99/max of the replies
# minus the idle p50), ping loss, upload goodput as a fraction of the rate, download goodput,
# and the queue's CoDel drops, overlimit drops and ECN marks on the mux.
# Prints one table row per run (RESULTS.md's format) and RESULT lines.
# RATES=0 runs without a radio (no rate, buffer or delay): goodput in Gbit/s, to compare the
# queues' throughput when nothing limits it (the shaper mode is skipped there).
# Usage: tests/bench/latency.sh BUILD_DIR   env: RATES ("10 50 200", Mbit/s),
#        MODES ("fifo fq-codel shaper"), LOADS ("up updown"), SECS (10), ECN (0: TCP as
#        Debian ships it, not asking for ECN; 1: the host asks), MODEM_BUFFER (32768),
#        DELAY (10 ms one way), CC (cubic: the senders' congestion control)
# Needs root; runs in namespaces it creates and deletes, traffic on documentation ranges only.
BUILD_DIR=${1:?usage: $0 BUILD_DIR}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
source "$(dirname "$0")/../support/lib.sh"
source "$(dirname "$0")/latency-lib.sh"

RATES=${RATES:-"10 50 200"}
MODES=${MODES:-"fifo fq-codel shaper"}
LOADS=${LOADS:-"up updown"}
SECS=${SECS:-10}
ECN=${ECN:-0}
MODEM_BUFFER=${MODEM_BUFFER:-32768}
DELAY=${DELAY:-10}
latency_setup "$ECN"

printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "rate" "queue" "load" \
	"idle p50 ms" "added p50/p99/max ms" "ping loss" "up goodput" "down Mbit/s" \
	"drops codel/limit" "ECN marks"
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for rate in $RATES; do
	bps=$((rate * 1000000))
	for mode in $MODES; do
		extra=()
		queue=fq-codel
		case $mode in
		fifo) queue=fifo ;;
		shaper)
			[ "$rate" != 0 ] || continue
			extra=("uplink-rate = $((bps * 95 / 100))")
			;;
		auto) extra=("uplink-rate = auto") ;;
		esac
		radio=(--ul-rate "$bps" --dl-rate $((bps * 5)) --modem-buffer "$MODEM_BUFFER"
			--network-delay "$DELAY")
		[ "$rate" != 0 ] || radio=()
		write_config "$E2E_TMP/qmapd.conf" "${extra[@]}"
		sed -i "s/^headroom = .*/&\nuplink-queue = $queue/" "$E2E_TMP/qmapd.conf"
		start_sim "${radio[@]}"
		start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
		for load in $LOADS; do
			idle=$(idle_p50)
			refresh_stats
			d0=$(qstat "mux 1 " ulq_drops_codel)
			o0=$(qstat "mux 1 " ulq_drops_overlimit)
			m0=$(qstat "mux 1 " ulq_ecn_marks)
			other=
			[ "$load" != updown ] || other=down
			load_run up "$other" "$idle"
			upf=$(goodput up "$bps")
			downg=-
			[ -z "$other" ] ||
				downg=$(jq '.end.sum_received.bits_per_second / 1e6 | floor' "$E2E_TMP/down.json")
			d=$(($(qstat "mux 1 " ulq_drops_codel) - d0))
			o=$(($(qstat "mux 1 " ulq_drops_overlimit) - o0))
			m=$(($(qstat "mux 1 " ulq_ecn_marks) - m0))
			p50=$(pct "$E2E_TMP/load.rtt" 50)
			p99=$(pct "$E2E_TMP/load.rtt" 99)
			max=$(pct "$E2E_TMP/load.rtt" 100)
			printf '| %s | %s | %s | %.1f | %.1f / %.1f / %.1f | %s | %s | %s | %s / %s | %s |\n' \
				"$rate" "$mode" "$load" "$idle" "$p50" "$p99" "$max" "$LOSS" "$upf" \
				"$downg" "$d" "$o" "$m"
			echo "RESULT $rate-$mode-$load added_p99_ms=$p99 loss=$LOSS up_fraction=$upf" \
				"inflight_limit=$(qstat device: ul_inflight_limit)" \
				"rate_estimate=$(qstat device: ul_rate_estimate)" \
				"sojourn_p99_us=$(qstat "mux 1 " ulq_sojourn_p99_us)" \
				"modem_buffer_max=$(sstat ul_modem_buffer_max= ul_modem_buffer_max)" \
				"sim_late_takes=$(sstat ul_modem_late_takes= ul_modem_late_takes)" \
				"sim_late_us=$(sstat ul_modem_late_us= ul_modem_late_us)" >&2
		done
		stop_pair
	done
done
