#!/bin/bash
# SPDX-License-Identifier: MIT
# Run every libFuzzer target for a bounded time; a crash, leak or sanitizer report fails.
# The targets exist only in a build configured with -DQMAPD_FUZZ=ON (clang).
set -euo pipefail
BUILD_DIR=${BUILD_DIR:-$(pwd)}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
shopt -s nullglob
# Built next to the other programs (the build's runtime output directory); tests/ in older trees.
targets=("$BUILD_DIR"/fuzz-* "$BUILD_DIR"/tests/fuzz-*)
if [ ${#targets[@]} -eq 0 ]; then
	echo "SKIP: no fuzz targets in $BUILD_DIR (configure with -DQMAPD_FUZZ=ON and clang)" >&2
	exit 77
fi
for t in "${targets[@]}"; do
	[ -x "$t" ] || continue
	corpus=$(mktemp -d)
	echo "fuzzing $(basename "$t") for ${SECONDS_PER_TARGET}s"
	if ! "$t" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
		-artifact_prefix="$BUILD_DIR/$(basename "$t")-" "$corpus" >"$corpus.log" 2>&1; then
		tail -n 40 "$corpus.log" >&2
		rm -rf "$corpus" "$corpus.log"
		echo "FAIL: $(basename "$t") found a crash (artifact in $BUILD_DIR)" >&2
		exit 1
	fi
	grep -E '^stat::number_of_executed_units' "$corpus.log" || true
	rm -rf "$corpus" "$corpus.log"
done
echo "fuzz: ${#targets[@]} targets clean"
