#!/bin/bash
# SPDX-License-Identifier: MIT
# Manual pages must be lint-clean under mandoc.
source "$(dirname "$0")/../support/lib.sh" || exit 1
need mandoc mandoc
shopt -s nullglob
pages=("$SOURCE_DIR"/man/*.[1-8])
[ ${#pages[@]} -gt 0 ] || fail "no manual pages in man/"
mandoc -T lint -W warning "${pages[@]}"
echo "man: ${#pages[@]} pages lint-clean"
