#!/bin/bash
# SPDX-License-Identifier: MIT
# The fuzzers' CI form: every libFuzzer target for FUZZ_SECONDS (default 20) with its
# committed corpus and dictionary (tests/fuzz/run.sh); a crash, leak or sanitizer report
# fails. The targets exist only in a build configured with -DQMAPD_FUZZ=ON (clang): elsewhere
# this skips (77). FUZZ_JOBS targets run at once (default 1; scripts/test.sh, alone on its
# machine, gives one per core). Longer runs and corpus minimization: tests/fuzz/run.sh -t 600
# BUILD_DIR.
set -euo pipefail
exec bash "$(dirname "$0")/run.sh" -t "${FUZZ_SECONDS:-20}" -j "${FUZZ_JOBS:-1}" "${BUILD_DIR:-$(pwd)}"
