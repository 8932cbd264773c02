#!/bin/bash
# SPDX-License-Identifier: MIT
# Userspace instructions per downlink packet (deaggregate + demux + GRO) under callgrind.
# Runs qmapd-bench-instr under valgrind, counting only inside datapath_bulk_in() and the GRO
# flush that ends each batch (setup and the modem's stand-in DMA copy are excluded), one dump
# per scenario, and divides by the packets of that scenario. Instruction counts repeat from
# run to run, unlike times on the shared machine: it runs RUNS times (default 2) to show it.
# Usage: tests/bench/callgrind.sh [BUILD_DIR]   (env: AGGREGATES=1000 RUNS=2); root.
set -euo pipefail
SOURCE_DIR=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${1:-${BUILD_DIR:-$SOURCE_DIR/build/gcc}}
AGGREGATES=${AGGREGATES:-1000}
RUNS=${RUNS:-2}
prog=$BUILD_DIR/qmapd-bench-instr
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed" >&2; exit 77; }
[ -x "$prog" ] || { echo "FAIL: $prog not built" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespace, TAP)" >&2; exit 77; }

work=$(mktemp -d /tmp/qmapd-callgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT

declare -A ir
names=()
for run in $(seq 1 "$RUNS"); do
	out=$work/run$run
	mkdir -p "$out"
	valgrind --tool=callgrind --collect-atstart=no \
		--toggle-collect=datapath_bulk_in --toggle-collect=datapath_gro_flush \
		--callgrind-out-file="$out/cg.out" "$prog" -n "$AGGREGATES" \
		>"$out/stdout" 2>"$out/stderr" || {
		echo "FAIL: valgrind run $run failed:" >&2
		cat "$out/stdout" "$out/stderr" >&2
		exit 1
	}
	# One dump per scenario: cg.out.1, .2, ... named by the client request's trigger.
	for dump in "$out"/cg.out.[0-9]*; do
		name=$(sed -n 's/^desc: Trigger: Client Request: //p' "$dump")
		[ -n "$name" ] || continue
		total=$(sed -n 's/^summary: //p' "$dump")
		pkts=$(sed -n "s/^SCENARIO $name packets=\([0-9]*\) .*/\1/p" "$out/stdout")
		if [ -z "$pkts" ] || [ "$pkts" -eq 0 ]; then
			echo "FAIL: no packet count for $name" >&2
			exit 1
		fi
		ir[$run,$name]=$(awk -v t="$total" -v p="$pkts" 'BEGIN { printf "%.1f", t / p }')
		[ "$run" = 1 ] && names+=("$name")
	done
	[ "$run" = 1 ] && sed -n 's/^qmapd-bench-instr: /# /p; s/^SCENARIO /# /p' "$out/stdout"
done

describe() {
	case $1 in
	v1) echo "QMAPv1, per-packet path (writes through io_uring)" ;;
	v5-valid) echo "QMAPv5 + GRO, checksum-valid bit set" ;;
	v5-novalid) echo "QMAPv5 + GRO, no valid bit (software verification)" ;;
	ntb16) echo "MBIM NTB16, per-packet path (one write per packet, io_uring)" ;;
	ntb16-gro) echo "MBIM NTB16 + GRO (no valid bit in MBIM: software verification)" ;;
	v1-writev) echo "QMAPv1, per-packet path, one write per packet (no io_uring)" ;;
	ntb16-writev) echo "MBIM NTB16, per-packet path, one write per packet (no io_uring)" ;;
	flows-try) echo "GRO device, a TCP flow per packet (nothing merges), GRO tried, writev" ;;
	flows-skip) echo "GRO device, a TCP flow per packet, GRO skipped (gro-auto), writev" ;;
	*) echo "$1" ;;
	esac
}

header="| scenario (TCP/IPv4, 1500 B, 10 per aggregate) |"
sep="|---|"
for run in $(seq 1 "$RUNS"); do
	header+=" run $run Ir/pkt |"
	sep+="---:|"
done
echo "$header repeats |"
echo "$sep---|"
for name in "${names[@]}"; do
	line="| $(describe "$name") |"
	same=yes
	for run in $(seq 1 "$RUNS"); do
		line+=" ${ir[$run,$name]} |"
		[ "${ir[$run,$name]}" = "${ir[1,$name]}" ] || same=no
	done
	echo "$line $same |"
done
for name in "${names[@]}"; do
	echo "RESULT instr_${name//-/_} ${ir[1,$name]}"
done
