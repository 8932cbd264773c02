#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmark suite, run on purpose (never from ctest): qmapd-bench-dl, qmapd-bench-ul and
# the callgrind instruction counts, from one build directory, as root. Prints each program's
# own output, then one markdown table with every figure next to its reference (measured in the
# same run) and its target, misses marked as such.
# Usage: scripts/bench.sh [BUILD_DIR]    (default build/gcc, configured RelWithDebInfo)
#   env: RUNS (median of, default 5), DL_PACKETS (200000), UL_PACKETS (100000),
#        AGGREGATES (callgrind, 1000)
set -euo pipefail
SOURCE_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-$SOURCE_DIR/build/gcc}
RUNS=${RUNS:-5}
DL_PACKETS=${DL_PACKETS:-200000}
UL_PACKETS=${UL_PACKETS:-100000}

[ "$(id -u)" = 0 ] || { echo "bench.sh: needs root (network namespaces, TUN/TAP)" >&2; exit 77; }
for prog in qmapd-bench-dl qmapd-bench-ul qmapd-bench-instr; do
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
echo "## tests/bench/callgrind.sh $BUILD_DIR"
"$SOURCE_DIR/tests/bench/callgrind.sh" "$BUILD_DIR" >"$out/instr"
grep -v '^RESULT ' "$out/instr"
echo

# RESULT <name> <value> lines of the UL and callgrind runs.
result() {
	local v
	v=$(awk -v k="$1" '$1 == "RESULT" && $2 == k { print $3 }' "$out/ul" "$out/instr")
	[ -n "$v" ] || { echo "bench.sh: no figure $1" >&2; exit 1; }
	echo "$v"
}
# met VALUE OP TARGET -> "yes" / "**MISS**"
met() {
	awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
		ok = (op == "<=") ? v <= t : v >= t
		print ok ? "yes" : "**MISS**" }'
}

echo "## Summary ($(date -u +%Y-%m-%d), $(uname -r), $(nproc) cores, medians of $RUNS runs)"
echo
echo "| figure | measured | reference (same run) | target | met |"
echo "|---|---:|---|---:|---|"

# qmapd-bench-dl rows: size frames | floor_ns gbit | qmapd_ns gbit ratio | gro_ns gbit ratio
awk '/^ *[0-9]+ +[0-9]+ +\|/ { print $1, $4, $7, $9, $11, $13 }' "$out/dl" >"$out/dl.rows"
[ -s "$out/dl.rows" ] || { echo "bench.sh: could not read qmapd-bench-dl's table" >&2; exit 1; }
while read -r size floor qns qratio gns gratio; do
	qratio=${qratio%x}
	gratio=${gratio%x}
	echo "| DL per-packet, ${size} B UDP: qmapd / floor | ${qratio}x (${qns} ns/pkt) |" \
		"raw TUN write ${floor} ns/pkt | ≤ 1.10x | $(met "$qratio" "<=" 1.10) |"
	echo "| DL batched (GRO), ${size} B UDP: qmapd / floor | ${gratio}x (${gns} ns/pkt) |" \
		"raw TUN write ${floor} ns/pkt | ≤ 0.85x | $(met "$gratio" "<=" 0.85) |"
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
echo
echo "Not measured by this suite (see tests/bench/RESULTS.md): DL bulk TCP Gbit/s per core into"
echo "a socket and forwarded, iperf3 through qmapd + qmapd-sim, CPU share at 3.2 Gbit/s, headroom"
echo "pskb_expand_head counts and throughput per headroom mode."
