#!/bin/bash
# SPDX-License-Identifier: MIT
# Commit subjects are `area: what` (or `area, area: what`), at most 72 characters, with the
# areas HACKING.md lists under "Commits". Checked for every commit after the one that added
# this test (older history stays as it was written); merges are git's own words and skipped.
source "$(dirname "$0")/../support/lib.sh" || exit 1
need git git
cd "$SOURCE_DIR"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "$SOURCE_DIR is not a git checkout"

# The areas: the backquoted words in the first column of the table under "## Commits".
mapfile -t areas < <(awk '/^## Commits/ { on = 1; next } /^## / { on = 0 }
	on && /^\| `/ { split($0, col, "|"); print col[2] }' HACKING.md | grep -o '`[^`]*`' | tr -d '`')
[ ${#areas[@]} -ge 10 ] || fail "HACKING.md lists only ${#areas[@]} commit areas"
# A lookup table, not `printf | grep -q`: with pipefail, grep -q leaving early can fail the
# pipeline with SIGPIPE.
declare -A known
for a in "${areas[@]}"; do known[$a]=1; done

base=$(git log --diff-filter=A --format=%H -- tests/lint/commit-subjects.sh | tail -n 1)
[ -n "$base" ] || skip "the commit that added this test is not in this clone (shallow?)"

bad=0 n=0
while IFS=$'\t' read -r hash subject; do
	n=$((n + 1))
	why=
	if [ ${#subject} -gt 72 ]; then
		why="${#subject} characters (at most 72)"
	elif [[ ! $subject =~ ^([a-z0-9-]+(,\ [a-z0-9-]+)*):\ [^\ ] ]]; then
		why="not 'area: what'"
	else
		IFS=, read -ra used <<<"${BASH_REMATCH[1]// /}"
		for a in "${used[@]}"; do
			[ -n "${known[$a]:-}" ] || why="area '$a' is not one of HACKING.md's"
		done
	fi
	if [ -n "$why" ]; then
		echo "commit ${hash:0:12} \"$subject\": $why" >&2
		bad=$((bad + 1))
	fi
done < <(git log --no-merges --format='%H%x09%s' "$base..HEAD")
[ $bad -eq 0 ] || fail "$bad of $n commit subjects break HACKING.md's rule"
echo "commit-subjects: $n commits after ${base:0:12}, ${#areas[@]} areas, all well formed"
