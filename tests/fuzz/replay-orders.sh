#!/bin/bash
# SPDX-License-Identifier: MIT
# The committed corpus of FUZZ_TARGET (default fuzz-sim-qmi) through the target twice in one
# process, forwards and then backwards, so that every input also runs after other ones. For
# a target that keeps one engine for all inputs and checks that an input run again gets the
# same answers (fuzz-sim-qmi.c): whatever one input leaves in the engine for the next fails
# here. The targets exist only in a build configured with -DQMAPD_FUZZ=ON: elsewhere skips.
source "$(dirname "$0")/../support/lib.sh" || exit 1
target=${FUZZ_TARGET:-fuzz-sim-qmi}
bin=$BUILD_DIR/$target
corpus=$SOURCE_DIR/tests/fuzz/corpus/$target
[ -x "$bin" ] || skip "$target not built in $BUILD_DIR (configure with clang, -DQMAPD_FUZZ=ON)"
mapfile -t files < <(find "$corpus" -maxdepth 1 -type f | sort)
[ ${#files[@]} -ge 2 ] || fail "fewer than two inputs in $corpus"
backwards=()
for ((i = ${#files[@]} - 1; i >= 0; i--)); do
	backwards+=("${files[i]}")
done
log=$(mktemp /tmp/qmapd-replay.XXXXXX)
trap 'rm -f "$log"' EXIT
# Files (not folders) as arguments: libFuzzer runs each once, in the order given.
if ! QMAPD_FUZZ_STRICT_REPLAY=1 "$bin" "${files[@]}" "${backwards[@]}" >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	fail "$target answered an input differently after other inputs (above)"
fi
runs=$(grep -c '^Running: ' "$log" || true)
[ "$runs" -eq $((2 * ${#files[@]})) ] || fail "$target ran $runs inputs, expected $((2 * ${#files[@]}))"
echo "$target: ${#files[@]} inputs forwards and backwards, the same answers each time"
