#!/bin/bash
# SPDX-License-Identifier: MIT
# Formatting is the tool's job: every C file must be as clang-format leaves it.
set -euo pipefail
SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v clang-format >/dev/null || { echo "SKIP: clang-format not installed" >&2; exit 77; }
cd "$SOURCE_DIR"
mapfile -t files < <(find src include tests -name '*.[ch]' | sort)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no C files found" >&2; exit 1; }
clang-format --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
