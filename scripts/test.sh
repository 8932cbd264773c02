#!/bin/bash
# SPDX-License-Identifier: MIT
# Install dependencies, build, and run the whole test suite, as root on Debian 12:
#   1. gcc build, -Werror, every ctest test (unit, end to end, headroom, formatting);
#   2. clang build with AddressSanitizer + UndefinedBehaviorSanitizer and the libFuzzer
#      targets: the tests again (not the tree checks, VM, container and cross tests, which
#      are about the tree, the kernel or the packaging), plus each fuzz target for
#      FUZZ_SECONDS, one target per core at a time.
# Budget: under 40 minutes on a 2-core machine (issue 21); long runs are benchmark scripts.
# ctest -j: the C unit tests run side by side, one per core; every shell test (end to end,
# VM, container, cross, lint, fuzzing) is RUN_SERIAL (tests/CMakeLists.txt), so ctest runs
# it alone, with nothing beside it to disturb its timing.
# .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
BUILD=${BUILD:-$SRC/build}
# 20 s each with the committed corpora: the short form; tests/fuzz/run.sh runs long ones.
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
JOBS=$(nproc)

"$SRC/scripts/deps.sh"

echo "== gcc build + tests"
cmake -S "$SRC" -B "$BUILD/gcc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DQMAPD_WERROR=ON
cmake --build "$BUILD/gcc" -j "$JOBS"
(cd "$BUILD/gcc" && ctest --output-on-failure -j "$JOBS")

echo "== clang ASan+UBSan build + tests + fuzzing (${FUZZ_SECONDS}s per target)"
cmake -S "$SRC" -B "$BUILD/asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DQMAPD_WERROR=ON \
	-DQMAPD_SANITIZE=ON -DQMAPD_FUZZ=ON
cmake --build "$BUILD/asan" -j "$JOBS"
(cd "$BUILD/asan" && FUZZ_SECONDS=$FUZZ_SECONDS FUZZ_JOBS=$JOBS ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j "$JOBS")
