#!/bin/bash
# SPDX-License-Identifier: MIT
# Run libFuzzer targets with their committed corpus (tests/fuzz/corpus/<target>/) and
# dictionary (tests/fuzz/dict/<target>.dict) for a given time each, and print for every
# target the executions, executions per second, coverage (edges, "cov") and features
# ("ft") it reached. A crash, leak or sanitizer report fails (exit 1) and leaves the input
# as BUILD_DIR/<target>-crash-*.
#
#   tests/fuzz/run.sh [-t SECONDS] [--minimize] [--bare] BUILD_DIR [TARGET...]
#
#   -t SECONDS   per target (default 60; tests/fuzz/fuzz.sh, the ctest form, uses FUZZ_SECONDS)
#   --minimize   afterwards merge what was found into the committed corpus, keeping the
#                smallest set of inputs with the same coverage (libFuzzer -merge=1)
#   --bare       no corpus and no dictionary: the figures to compare against
#   -j JOBS      run that many targets at once (default 1; the machine is shared)
#
# The targets exist in a build configured with clang, -DQMAPD_SANITIZE=ON -DQMAPD_FUZZ=ON.
# New inputs go to a temporary directory, so the committed corpus changes only with
# --minimize. tests/fuzz/make-seeds.py wrote the hand-made starting points.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
seconds=60 minimize=0 bare=0 jobs=1
while [ $# -gt 0 ]; do
	case $1 in
	-t) seconds=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	--minimize) minimize=1; shift ;;
	--bare) bare=1; shift ;;
	-h | --help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: run.sh [-t SECONDS] [--minimize] [--bare] BUILD_DIR [TARGET...]" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
if [ $# -gt 0 ]; then
	targets=("$@")
else
	targets=()
	for t in "$build"/fuzz-*; do
		[ -x "$t" ] && [ -f "$t" ] && targets+=("$(basename "$t")")
	done
fi
if [ ${#targets[@]} -eq 0 ]; then
	echo "SKIP: no fuzz targets in $build (configure with clang, -DQMAPD_FUZZ=ON)" >&2
	exit 77
fi

work=$(mktemp -d /tmp/qmapd-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

# run_one TARGET: fuzz it; its summary line goes to $work/TARGET.result
run_one() {
	local name=$1 bin=$build/$1 corpus=$here/corpus/$1 dict=$here/dict/$1.dict
	local new=$work/$name.new log=$work/$name.log args=()
	mkdir -p "$new"
	[ -x "$bin" ] || { echo "$name: not built in $build" >"$work/$name.result"; return 1; }
	if [ $bare = 0 ]; then
		[ -f "$dict" ] && args+=(-dict="$dict")
		[ -d "$corpus" ] || { echo "$name: no corpus $corpus" >"$work/$name.result"; return 1; }
	fi
	local dirs=("$new")
	[ $bare = 0 ] && dirs+=("$corpus")
	if ! "$bin" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 \
		-artifact_prefix="$build/$name-" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		echo "$name: FAILED, input in $build/$name-*" >"$work/$name.result"
		return 1
	fi
	local execs cov ft units
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	# The last status line ("#N DONE cov: C ft: F corp: U/...") has the final coverage.
	cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	units=$(ls "$new" | wc -l)
	printf '%-16s %6ss %12s execs %9s/s  cov %5s  ft %6s  new inputs %5s\n' "$name" \
		"$seconds" "${execs:-?}" "$(( ${execs:-0} / seconds ))" "${cov:-?}" "${ft:-?}" \
		"$units" >"$work/$name.result"
	if [ $minimize = 1 ]; then
		local merged=$work/$name.merged
		mkdir -p "$merged" "$corpus"
		"$bin" -merge=1 "${args[@]}" "$merged" "$corpus" "$new" >>"$log" 2>&1
		rm -f "$corpus"/*
		cp "$merged"/* "$corpus"/
		echo "  $name: corpus minimized to $(ls "$corpus" | wc -l) inputs" >>"$work/$name.result"
	fi
}

failed=0
running=0
for name in "${targets[@]}"; do
	run_one "$name" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || failed=1
		running=$((running - 1))
	fi
done
while [ "$running" -gt 0 ]; do
	wait -n || failed=1
	running=$((running - 1))
done
for name in "${targets[@]}"; do
	cat "$work/$name.result" 2>/dev/null || echo "$name: no result"
done
if [ $failed != 0 ]; then
	echo "FAIL: a fuzz target found a crash or could not run" >&2
	exit 1
fi
