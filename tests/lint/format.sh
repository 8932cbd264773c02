#!/bin/bash
# SPDX-License-Identifier: MIT
# Formatting is the tool's job: every C file must be as clang-format leaves it.
source "$(dirname "$0")/../support/lib.sh" || exit 1
need clang-format clang-format
cd "$SOURCE_DIR"
mapfile -t files < <(find src include tests -name '*.[ch]' | sort)
[ ${#files[@]} -gt 0 ] || fail "no C files found"
clang-format --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
