#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmark suite, run on purpose (never from ctest): qmapd-bench-dl, qmapd-bench-ul,
# qmapd-bench-tcp (DL bulk TCP per qmapd core, saturated), the callgrind instruction counts,
# and end to end through qmapd + qmapd-sim tests/bench/iperf.sh
# (iperf3, qmapd's CPU time) and tests/bench/headroom.sh (pskb_expand_head into VXLAN), from
# one build directory, as root. Prints each program's
# own output, then one markdown table with every figure next to its reference (measured in the
# same run) and its target, misses marked as such.
# Usage: scripts/bench.sh [BUILD_DIR]    (default build/gcc, configured RelWithDebInfo)
#   env: RUNS (median of, default 5), DL_PACKETS (200000), UL_PACKETS (100000),
#        TCP_SECS (qmapd-bench-tcp, seconds per scenario and run, 1),
#        AGGREGATES (callgrind, 1000), E2E_RUNS (median of, end-to-end scripts, default 3),
#        IPERF_SECS (5), HEADROOM_SECS (4), RATE (iperf3 -b for the CPU-share figure, 3.2G),
#        SKIP_E2E=1 (only the in-process benchmarks, ~30 s instead of ~7 min)
set -euo pipefail
SOURCE_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-$SOURCE_DIR/build/gcc}
RUNS=${RUNS:-5}
DL_PACKETS=${DL_PACKETS:-200000}
UL_PACKETS=${UL_PACKETS:-100000}
TCP_SECS=${TCP_SECS:-1}
E2E_RUNS=${E2E_RUNS:-3}
SKIP_E2E=${SKIP_E2E:-0}

[ "$(id -u)" = 0 ] || { echo "bench.sh: needs root (network namespaces, TUN/TAP)" >&2; exit 77; }
for prog in qmapd-bench-dl qmapd-bench-ul qmapd-bench-tcp qmapd-bench-instr qmapd-bench-udp-flood qmapd qmapd-sim; do
	[ -x "$BUILD_DIR/$prog" ] || {
		echo "bench.sh: $BUILD_DIR/$prog missing; build first:" >&2
		echo "  cmake -S $SOURCE_DIR -B $BUILD_DIR -DCMAKE_BUILD_TYPE=RelWithDebInfo && make -C $BUILD_DIR" >&2
		exit 1
	}
done
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
[ "$build_type" = RelWithDebInfo ] ||
	echo "bench.sh: warning: $BUILD_DIR is a '${build_type:-unknown}' build, figures are for RelWithDebInfo" >&2

out=$(mktemp -d /tmp/qmapd-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "## qmapd-bench-dl -n $DL_PACKETS -r $RUNS"
"$BUILD_DIR/qmapd-bench-dl" -n "$DL_PACKETS" -r "$RUNS" | tee "$out/dl"
echo
echo "## qmapd-bench-ul -n $UL_PACKETS -r $RUNS"
"$BUILD_DIR/qmapd-bench-ul" -n "$UL_PACKETS" -r "$RUNS" >"$out/ul"
grep -v '^RESULT ' "$out/ul"
echo
echo "## qmapd-bench-tcp -t $TCP_SECS -r $RUNS"
# Exit 1 = a check failed (bytes lost, drops, malformed): still a table, with the miss in it.
tcp_rc=0
"$BUILD_DIR/qmapd-bench-tcp" -t "$TCP_SECS" -r "$RUNS" >"$out/tcp" || tcp_rc=$?
[ $tcp_rc -le 1 ] || { cat "$out/tcp" >&2; echo "bench.sh: qmapd-bench-tcp failed" >&2; exit 1; }
grep -v '^RESULT ' "$out/tcp"
echo
echo "## tests/bench/callgrind.sh $BUILD_DIR"
"$SOURCE_DIR/tests/bench/callgrind.sh" "$BUILD_DIR" >"$out/instr"
grep -v '^RESULT ' "$out/instr"
echo
if [ "$SKIP_E2E" != 1 ]; then
	# Each script makes and deletes its own namespaces and processes (trap), also on failure.
	echo "## tests/bench/iperf.sh $BUILD_DIR (RUNS=$E2E_RUNS)"
	RUNS=$E2E_RUNS "$SOURCE_DIR/tests/bench/iperf.sh" "$BUILD_DIR" >"$out/iperf" 2>&1 ||
		{ cat "$out/iperf" >&2; echo "bench.sh: iperf.sh failed" >&2; exit 1; }
	grep -v -e '^RESULT ' -e '^<' "$out/iperf"
	echo
	echo "## tests/bench/headroom.sh $BUILD_DIR (RUNS=$E2E_RUNS)"
	RUNS=$E2E_RUNS "$SOURCE_DIR/tests/bench/headroom.sh" "$BUILD_DIR" >"$out/hr" 2>&1 ||
		{ cat "$out/hr" >&2; echo "bench.sh: headroom.sh failed" >&2; exit 1; }
	grep -v -e '^RESULT ' -e '^<' "$out/hr"
	echo
fi

# RESULT <name> <value> lines of the UL, TCP, callgrind and end-to-end runs.
result() {
	local v
	v=$(cat "$out/ul" "$out/tcp" "$out/instr" "$out/iperf" "$out/hr" 2>/dev/null |
		awk -v k="$1" '$1 == "RESULT" && $2 == k { print $3 }')
	[ -n "$v" ] || { echo "bench.sh: no figure $1" >&2; exit 1; }
	echo "$v"
}
# met VALUE OP TARGET -> "yes" / "**MISS**"
met() {
	awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
		ok = (op == "<=") ? v <= t : v >= t
		print ok ? "yes" : "**MISS**" }'
}

# The DL bulk TCP case (local or fwd) as "label|target in Gbit/s per qmapd core".
tcp_case() {
	if [ "$1" = fwd ]; then
		echo "forwarded over veth to a second namespace|10"
	else
		echo "into a local TCP socket|30"
	fi
}

echo "## Summary ($(date -u +%Y-%m-%d), $(uname -r), $(nproc) cores, medians of $RUNS runs)"
echo
echo "| figure | measured | reference (same run) | target | met |"
echo "|---|---:|---|---:|---|"

# qmapd-bench-dl rows: size frames | floor_ns gbit | qmapd_ns gbit ratio | gro_ns gbit ratio
#   | pp+uring_ns ratio | flows_ns ratio | flows+uring_ns ratio | pp_auto_ns ratio
#   | flows_auto_ns ratio
awk '/^ *[0-9]+ +[0-9]+ +\|/ { print $1, $4, $7, $9, $11, $13, $15, $16, $18, $19, $21, $22,
	$24, $25, $27, $28 }' \
	"$out/dl" >"$out/dl.rows"
[ -s "$out/dl.rows" ] || { echo "bench.sh: could not read qmapd-bench-dl's table" >&2; exit 1; }
# dl_row WHAT RATIO NS FLOOR TARGET: one DL figure against the raw TUN floor (ratio <= target).
dl_row() {
	echo "| $1: qmapd / floor | ${2%x}x (${3} ns/pkt) |" \
		"raw TUN write ${4} ns/pkt | ≤ ${5}x | $(met "${2%x}" "<=" "$5") |"
}
while read -r size floor qns qratio gns gratio uns uratio fns fratio funs furatio pans paratio \
	fans faratio; do
	dl_row "DL per-packet, ${size} B UDP, write mode measured (production)" "$paratio" "$pans" "$floor" 1.05
	dl_row "DL per-packet, ${size} B UDP, one writev per packet" "$qratio" "$qns" "$floor" 1.10
	dl_row "DL batched (GRO), ${size} B UDP" "$gratio" "$gns" "$floor" 0.85
	dl_row "DL per-packet mux through io_uring, ${size} B UDP" "$uratio" "$uns" "$floor" 0.85
	dl_row "DL GRO device, a flow per packet (nothing merges), production" "$faratio" "$fans" "$floor" 1.10
	dl_row "DL GRO device, a flow per packet, GRO tried, plain writes" "$fratio" "$fns" "$floor" 1.10
	dl_row "DL GRO device, a flow per packet, GRO tried, io_uring" "$furatio" "$funs" "$floor" 1.10
done <"$out/dl.rows"

for size in 64 1400; do
	floor=$(result ul_plain_${size}_floor_kpps)
	for mux in mux1 mux2; do
		kpps=$(result ul_plain_${size}_${mux}_kpps)
		ratio=$(result ul_plain_${size}_${mux}_ratio)
		what="offload device (production)"
		[ $mux = mux2 ] && what="device without offloads"
		echo "| UL plain reads, ${size} B UDP, ${what}: kpps per core | ${kpps} (${ratio}x floor's ns/pkt) |" \
			"raw read() ${floor} kpps | ≥ 400 | $(met "$kpps" ">=" 400) |"
	done
done
nooff=$(result ul_tso_nooffload_ns)
for v in v1 v5; do
	ns=$(result ul_tso_${v}_ns)
	csum="software UDP checksums"
	[ $v = v5 ] && csum="checksums offloaded to the modem"
	echo "| UL USO 64 KB sends, QMAP${v} (${csum}): ns per 1428-B segment | ${ns} |" \
		"no offloads ${nooff} ns/seg | ≤ 400 | $(met "$ns" "<=" 400) |"
done
loss=$(($(result ul_plain_64_loss) + $(result ul_plain_1400_loss) + $(result ul_tso_loss)))
lossmet=yes
[ "$loss" = 0 ] || lossmet="**MISS**"
echo "| UL packets lost (sent - read by qmapd, all UL scenarios) | $loss | the sender's count | 0 | $lossmet |"

# DL bulk TCP per qmapd core, saturated, only qmapd's thread CPU charged (qmapd-bench-tcp),
# against one write() per TSO super-packet into a plain TUN (the floor) in the same runs.
for where in local fwd; do
	IFS='|' read -r what target <<<"$(tcp_case $where)"
	for rps in off on; do
		k=tcp_${where}_rps${rps}
		echo "| DL bulk TCP + GRO ${what}, RPS ${rps} (qmapd-bench-tcp, saturated): Gbit/s per qmapd core |" \
			"$(result ${k}_qmapd_per_core_gbit) ($(result ${k}_qmapd_segs_per_write) segments per write) |" \
			"raw TUN write of the same super-packets: $(result ${k}_floor_per_core_gbit) Gbit/s per core | ≥ ${target} |" \
			"$(met "$(result ${k}_qmapd_per_core_gbit)" ">=" $target) |"
	done
done
tcpfail=$(result tcp_check_failures)
echo "| qmapd-bench-tcp scenarios with bytes lost, drops or malformed frames | $tcpfail | bytes sent by the TCP sender | 0 |" \
	"$(met "$tcpfail" "<=" 0) |"

v1=$(result instr_v1)
for name in v1 v5_valid v5_novalid; do
	case $name in
	v1) what="QMAPv1 per-packet path" ;;
	v5_valid) what="QMAPv5 + GRO, valid bit" ;;
	v5_novalid) what="QMAPv5 + GRO, no valid bit" ;;
	esac
	echo "| DL userspace instructions per packet (callgrind), ${what} | $(result instr_$name) |" \
		"QMAPv1 per-packet ${v1} | — (repeatable) | — |"
done

if [ "$SKIP_E2E" != 1 ]; then
	# 1. DL bulk TCP with GRO, per qmapd core = bytes moved / qmapd's CPU seconds. The kernel
	# bound (bytes per write / qmapd's system time per write) is what one core could carry if
	# qmapd's userspace were free: when it is below the target, the target is out of reach here.
	for where in local fwd; do
		IFS='|' read -r what target <<<"$(tcp_case $where)"
		for mode in off auto xdp; do
			k=dl_${where}_${mode}
			echo "| DL bulk TCP + GRO ${what}, headroom=${mode}: Gbit/s per qmapd core |" \
				"$(result ${k}_per_core_gbit) ($(result ${k}_gbit) Gbit/s at $(result ${k}_qmapd_share) of a core) |" \
				"kernel alone: $(result ${k}_kernel_bound_gbit) Gbit/s per core ($(result ${k}_sys_us_per_write) µs system time per $(result ${k}_bytes_per_write)-B write) | ≥ ${target} |" \
				"$(met "$(result ${k}_per_core_gbit)" ">=" $target) |"
		done
	done
	# 2. iperf3 both directions, headroom = auto (production default).
	echo "| iperf3 uplink (1 TCP flow): Gbit/s, qmapd CPU share | $(result ul_gbit) Gbit/s, $(result ul_qmapd_share) of a core |" \
		"qmapd-sim $(result ul_sim_share) of a core | — | — |"
	echo "| iperf3 downlink -R (1 TCP flow): Gbit/s, qmapd CPU share | $(result dl_local_auto_gbit) Gbit/s, $(result dl_local_auto_qmapd_share) of a core |" \
		"qmapd-sim $(result dl_local_auto_sim_share) of a core | — | — |"
	echo "| iperf3 downlink -R with GRO off (ethtool -K qmap1 gro off): Gbit/s per qmapd core | $(result dl_local_nogro_per_core_gbit) ($(result dl_local_nogro_gbit) Gbit/s at $(result dl_local_nogro_qmapd_share) of a core) |" \
		"GRO on, same daemon: $(result dl_local_auto_per_core_gbit) ($(result dl_local_auto_gbit) Gbit/s at $(result dl_local_auto_qmapd_share) of a core) | — | — |"
	# 3. CPU share at 3.2 Gbit/s.
	share=$(result dl_3g2_share)
	label="measured"
	[ "$(result dl_3g2_extrapolated)" = yes ] && label="**extrapolated** linearly"
	echo "| qmapd CPU share at 3.2 Gbit/s DL TCP, GRO on (${label}) | $share |" \
		"iperf3 -R -b ${RATE:-3.2G} reached $(result dl_rate_gbit) Gbit/s at $(result dl_rate_qmapd_share) of a core ($(result dl_rate_share_per_gbit) per Gbit/s) | ≤ 0.35 |" \
		"$(met "$share" "<=" 0.35) |"
	# 4. Headroom: re-allocations per packet forwarded into VXLAN, and throughput.
	for mode in off xdp auto; do
		per=$(result hr_udp_${mode}_per_packet)
		t="≤ 0.01"
		ok=$(met "$per" "<=" 0.01)
		if [ $mode = off ]; then
			t="— (reference: ~1)"
			ok="—"
		fi
		echo "| Headroom, UDP 256 flows (per-packet), headroom=${mode} ($(result hr_udp_${mode}_device)): pskb_expand_head per packet | ${per} ($(result hr_udp_${mode}_kpps) kpps into VXLAN) |" \
			"headroom=off: $(result hr_udp_off_per_packet) ($(result hr_udp_off_kpps) kpps) | ${t} | ${ok} |"
	done
	for mode in off xdp auto; do
		echo "| Headroom, 1 TCP flow (GRO), headroom=${mode} ($(result hr_tcp_${mode}_device)): pskb_expand_head per segment / per write | $(result hr_tcp_${mode}_per_packet) / $(result hr_tcp_${mode}_per_write) ($(result hr_tcp_${mode}_gbit) Gbit/s into VXLAN) |" \
			"headroom=off: $(result hr_tcp_off_per_packet) / $(result hr_tcp_off_per_write) ($(result hr_tcp_off_gbit) Gbit/s) | — | — |"
	done
fi
echo
echo "See tests/bench/RESULTS.md for what the end-to-end figures mean and why some targets are"
echo "out of reach on this machine."
