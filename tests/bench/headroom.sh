#!/bin/bash
# SPDX-License-Identifier: MIT
# Headroom benchmark: packets qmapd writes into mux 1 that the host namespace forwards into a
# VXLAN tunnel (over a veth pair to a third namespace), per headroom mode (off, xdp, auto):
#  - per-packet traffic: UDP from 256 source ports at once (qmapd-bench-udp-flood), which
#    neither qmapd's GRO nor the kernel can merge;
#  - GRO traffic: one iperf3 TCP flow (qmapd writes super-packets).
# For each: throughput reaching the far end of the tunnel, and pskb_expand_head per packet.
# In auto mode every UDP run after the first follows a TCP run that made qmapd detach XDP:
# the transition is measured as the time from the UDP start to qmapd's "XDP headroom on" log
# line (and from the TCP start to "off"), time-stamped as the lines arrive, and as the
# re-allocations of that run (steady-state auto = xdp = 0 per packet).
# Re-allocations are counted as docs/ARCHITECTURE.md "Tests" describes (kmem:kmalloc, call_site pskb_expand_head)
# but with `perf stat` instead of the trace buffer: it counts in the kernel, so nothing is lost
# at hundreds of thousands of events per second, and it does not touch the tracefs settings
# that tests/e2e/e2e-headroom.sh (possibly running concurrently) uses. It counts system-wide, so an
# idle window of the same length is measured first and reported next to the figures.
# Usage: tests/bench/headroom.sh BUILD_DIR   env: RUNS (3), HEADROOM_SECS (4), FLOWS (256),
#   PAYLOAD (1000 bytes of UDP payload)
# Needs root and perf; runs in namespaces it creates and deletes, documentation ranges only.
BUILD_DIR=${1:?usage: $0 BUILD_DIR}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
source "$(dirname "$0")/../support/lib.sh"

RUNS=${RUNS:-3}
SECS=${HEADROOM_SECS:-4}
FLOWS=${FLOWS:-256}
PAYLOAD=${PAYLOAD:-1000}
FLOOD=$BUILD_DIR/qmapd-bench-udp-flood
command -v iperf3 >/dev/null || skip "iperf3 not installed"
command -v jq >/dev/null || skip "jq not installed"
command -v perf >/dev/null || skip "perf not installed (linux-perf)"
[ -x "$FLOOD" ] || fail "$FLOOD missing; build first"
require_root
perf stat -x, -e kmem:kmalloc --filter 'call_site.function == pskb_expand_head' -a true \
	>/dev/null 2>&1 || skip "perf cannot count kmem:kmalloc filtered by call_site.function"

NS_VX=qmapd-v-$E2E_ID
E2E_EXTRA_NS+=("$NS_VX")
e2e_setup

setup_vxlan_forward # as tests/e2e/e2e-headroom.sh

# count_start / count_stop: pskb_expand_head calls system-wide between the two -> $EXPANDED
count_start() {
	perf stat -x, -o "$E2E_TMP/perf.out" -e kmem:kmalloc \
		--filter 'call_site.function == pskb_expand_head' -a &
	PERF_PID=$!
	E2E_PIDS+=("$PERF_PID")
	sleep 0.5 # perf opens its events before anything is sent
}
count_stop() {
	kill -INT "$PERF_PID"
	wait "$PERF_PID" 2>/dev/null || true
	EXPANDED=$(awk -F, '$3 == "kmem:kmalloc" { print $1 }' "$E2E_TMP/perf.out")
	[[ $EXPANDED =~ ^[0-9]+$ ]] || fail "perf stat gave no count: $(cat "$E2E_TMP/perf.out")"
}

out() { echo "$*" >>"$E2E_TMP/rows"; }

# stamp_start / stamp_stop: qmapd's log lines with their arrival time (bash's EPOCHREALTIME,
# no fork per line) -> $E2E_TMP/stamped. tail -F waits on inotify: no polling load.
stamp_start() {
	rm -f "$E2E_TMP/log.fifo"
	mkfifo "$E2E_TMP/log.fifo"
	: >"$E2E_TMP/stamped"
	(while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done \
		<"$E2E_TMP/log.fifo" >"$E2E_TMP/stamped") &
	STAMP_PID=$!
	tail -n0 -F "$E2E_TMP/qmapd.log" 2>/dev/null >"$E2E_TMP/log.fifo" &
	TAIL_PID=$!
	E2E_PIDS+=("$STAMP_PID" "$TAIL_PID")
}
stamp_stop() {
	sleep 0.1 # lines written just now reach the fifo
	kill -TERM "$TAIL_PID"
	wait "$TAIL_PID" "$STAMP_PID" 2>/dev/null || true
}
# switch_ms T0 on|off: ms from T0 to the first "XDP headroom on|off" line of mux 1, or "-"
switch_ms() {
	awk -v t0="$1" -v w="XDP headroom $2" '
		index($0, "mux 1 (qmap1): ") && index($0, w) == length($0) - length(w) + 1 {
			printf "%.0f\n", ($1 - t0) * 1000; found = 1; exit
		}
		END { if (!found) print "-" }' "$E2E_TMP/stamped"
}

in_vx iperf3 -s -D -B 192.0.2.100 --pidfile "$E2E_TMP/iperf3.pid" --logfile "$E2E_TMP/iperf3.log"
wait_for 5 "iperf3 server" test -s "$E2E_TMP/iperf3.pid"
E2E_PIDS+=("$(cat "$E2E_TMP/iperf3.pid")")
KEEP_PIDS=("${E2E_PIDS[@]}")

# Background: the same window with no traffic of ours (other processes on a shared machine).
count_start
sleep "$SECS"
count_stop
IDLE=$EXPANDED
echo "idle ${SECS} s: $IDLE pskb_expand_head system-wide"

for mode in off xdp auto; do
	MUX_HEADROOM=$mode write_config "$E2E_TMP/qmapd-$mode.conf"
	rm -f "$E2E_TMP/sim.sock" "$E2E_TMP/control"
	start_sim
	start_qmapd "$E2E_TMP/qmapd-$mode.conf" qmap1
	in_net bash -c 'for i in $(seq 20); do echo warm >/dev/udp/192.0.2.100/9; done'
	sleep 0.5
	for run in $(seq "$RUNS"); do
		# Per-packet traffic.
		refresh_stats
		p0=$(qstat "mux 1 " rx_packets)
		sw0=$(qstat "mux 1 " headroom_switches)
		sd0=$(qstat "mux 1 " rx_silent_drops)
		rx0=$(vx_rx)
		stamp_start
		count_start
		t0=$EPOCHREALTIME
		in_net "$FLOOD" -d 192.0.2.100 -f "$FLOWS" -s "$PAYLOAD" -t "$SECS" >"$E2E_TMP/flood.out"
		sleep 0.3 # let the queues drain into the tunnel
		count_stop
		stamp_stop
		sleep 1 # a headroom tick: the silent-drop check covers the whole run
		fwd=$(($(vx_rx) - rx0))
		refresh_stats
		dev=$(qstat "mux 1 " mode)
		written=$(($(qstat "mux 1 " rx_packets) - p0))
		switches=$(($(qstat "mux 1 " headroom_switches) - sw0))
		silent=$(($(qstat "mux 1 " rx_silent_drops) - sd0))
		out "udp $mode $run $dev $fwd $written $EXPANDED $(awk -v f="$fwd" -v s="$SECS" -v p="$PAYLOAD" \
			'BEGIN { printf "%.1f %.3f", f / s / 1e3, f * (p + 28) * 8 / s / 1e9 }') $switches $(switch_ms "$t0" on) $silent"

		# GRO traffic: one TCP flow from the network side to the far end of the tunnel.
		refresh_stats
		p0=$(qstat "mux 1 " rx_packets)
		w0=$(qstat "mux 1 " rx_writes)
		sw0=$(qstat "mux 1 " headroom_switches)
		sd0=$(qstat "mux 1 " rx_silent_drops)
		stamp_start
		count_start
		t0=$EPOCHREALTIME
		in_net iperf3 -c 192.0.2.100 -t "$SECS" -J >"$E2E_TMP/iperf.json" || fail "iperf3 ($mode)"
		count_stop
		stamp_stop
		sleep 1 # a headroom tick: the silent-drop check covers the whole run
		refresh_stats
		dev=$(qstat "mux 1 " mode)
		segs=$(($(qstat "mux 1 " rx_packets) - p0))
		writes=$(($(qstat "mux 1 " rx_writes) - w0))
		switches=$(($(qstat "mux 1 " headroom_switches) - sw0))
		silent=$(($(qstat "mux 1 " rx_silent_drops) - sd0))
		out "tcp $mode $run $dev $segs $writes $EXPANDED $(jq '.end.sum_received.bits_per_second / 1e9' "$E2E_TMP/iperf.json") $switches $(switch_ms "$t0" off) $silent"
	done
	kill -TERM "$QMAPD_PID" "$SIM_PID"
	wait "$QMAPD_PID" "$SIM_PID" 2>/dev/null || true
	E2E_PIDS=("${KEEP_PIDS[@]}")
done

echo
echo "Per run (idle window: $IDLE):"
echo "udp MODE RUN DEVICE forwarded written-by-qmapd pskb_expand_head kpps Gbit/s switches ms-to-xdp-on silent-drops"
echo "tcp MODE RUN DEVICE segments writes pskb_expand_head Gbit/s switches ms-to-xdp-off silent-drops"
cat "$E2E_TMP/rows"

med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "Medians of $RUNS runs of ${SECS} s (pskb_expand_head minus the idle window's count):"
echo "| traffic | headroom | device | pskb_expand_head per packet | per write | throughput |"
echo "|---|---|---|---:|---:|---:|"
for mode in off xdp auto; do
	dev=$(awk -v m=$mode '$1 == "udp" && $2 == m { print $4 }' "$E2E_TMP/rows" | sort | uniq | paste -sd/)
	per=$(awk -v m=$mode -v i="$IDLE" '$1 == "udp" && $2 == m && $5 > 0 { e = $7 - i; if (e < 0) e = 0; printf "%.4f\n", e / $5 }' "$E2E_TMP/rows" | med)
	kpps=$(awk -v m=$mode '$1 == "udp" && $2 == m { print $8 }' "$E2E_TMP/rows" | med)
	gbit=$(awk -v m=$mode '$1 == "udp" && $2 == m { print $9 }' "$E2E_TMP/rows" | med)
	echo "| UDP, $FLOWS flows, $((PAYLOAD + 28)) B IP | $mode | $dev | $per | — | $kpps kpps ($gbit Gbit/s) |"
	echo "RESULT hr_udp_${mode}_per_packet $per" >>"$E2E_TMP/results"
	echo "RESULT hr_udp_${mode}_kpps $kpps" >>"$E2E_TMP/results"
	echo "RESULT hr_udp_${mode}_device $dev" >>"$E2E_TMP/results"
done
for mode in off xdp auto; do
	dev=$(awk -v m=$mode '$1 == "tcp" && $2 == m { print $4 }' "$E2E_TMP/rows" | sort | uniq | paste -sd/)
	per=$(awk -v m=$mode -v i="$IDLE" '$1 == "tcp" && $2 == m && $5 > 0 { e = $7 - i; if (e < 0) e = 0; printf "%.4f\n", e / $5 }' "$E2E_TMP/rows" | med)
	perw=$(awk -v m=$mode -v i="$IDLE" '$1 == "tcp" && $2 == m && $6 > 0 { e = $7 - i; if (e < 0) e = 0; printf "%.3f\n", e / $6 }' "$E2E_TMP/rows" | med)
	gbit=$(awk -v m=$mode '$1 == "tcp" && $2 == m { printf "%.2f\n", $8 }' "$E2E_TMP/rows" | med)
	echo "| TCP, 1 flow (GRO) | $mode | $dev | $per | $perw | $gbit Gbit/s |"
	echo "RESULT hr_tcp_${mode}_per_packet $per" >>"$E2E_TMP/results"
	echo "RESULT hr_tcp_${mode}_per_write $perw" >>"$E2E_TMP/results"
	echo "RESULT hr_tcp_${mode}_gbit $gbit" >>"$E2E_TMP/results"
	echo "RESULT hr_tcp_${mode}_device $dev" >>"$E2E_TMP/results"
done
# The switch-back: auto's UDP runs 2.. each start right after a TCP run left XDP detached.
trans=$(awk -v i="$IDLE" '$1 == "udp" && $2 == "auto" && $3 > 1 {
	e = $7 - i; if (e < 0) e = 0; print $3, e, $11, $10 }' "$E2E_TMP/rows")
if [ -n "$trans" ]; then
	ms=$(awk '$3 != "-" { print $3 }' <<<"$trans" | med)
	exp=$(awk '{ print $2 }' <<<"$trans" | med)
	off=$(awk '$1 == "tcp" && $2 == "auto" && $10 != "-" { print $10 }' "$E2E_TMP/rows" | med)
	echo
	echo "auto, TCP -> UDP (UDP runs 2..$RUNS): XDP back on after ${ms:-?} ms, $exp packets" \
		"re-expanded (medians; per run: run re-expanded ms switches: $(paste -sd, <<<"$trans"))"
	echo "auto, UDP -> TCP: XDP off after ${off:-?} ms (median)"
	echo "RESULT hr_auto_reattach_ms ${ms:--}" >>"$E2E_TMP/results"
	echo "RESULT hr_auto_transition_expanded $exp" >>"$E2E_TMP/results"
	echo "RESULT hr_auto_detach_ms ${off:--}" >>"$E2E_TMP/results"
fi
echo "RESULT hr_idle $IDLE" >>"$E2E_TMP/results"
echo
cat "$E2E_TMP/results"
echo "headroom.sh: done"
