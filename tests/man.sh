#!/bin/bash
# SPDX-License-Identifier: MIT
# Manual pages must be lint-clean under mandoc.
set -euo pipefail
SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v mandoc >/dev/null || { echo "SKIP: mandoc not installed" >&2; exit 77; }
shopt -s nullglob
pages=("$SOURCE_DIR"/man/*.[1-8])
[ ${#pages[@]} -gt 0 ] || { echo "FAIL: no manual pages in man/" >&2; exit 1; }
mandoc -T lint -W warning "${pages[@]}"
echo "man: ${#pages[@]} pages lint-clean"
