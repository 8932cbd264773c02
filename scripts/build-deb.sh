#!/bin/bash
# SPDX-License-Identifier: MIT
# Build qmapd's Debian packages (debian/) into OUTDIR: scripts/build-deb.sh [--reuse] OUTDIR
# The build runs in a temporary copy of the tree, because dpkg-buildpackage writes its
# results to the parent of the source directory and dh leaves debian/ full of build files.
# The copy holds the files git knows (committed or not) when the tree is a git checkout,
# otherwise everything but build directories. Prints the paths of the .deb files.
# OUTDIR/qmapd.tree names the copy the packages were built from (a hash of its files); with
# --reuse, packages in OUTDIR built from the very same files are printed, not built again
# (the container test after the package test in one ctest run).
# Needs dpkg-dev, debhelper and the build dependencies of debian/control (scripts/deps.sh).
set -euo pipefail
REUSE=0
[ "${1:-}" != --reuse ] || { REUSE=1; shift; }
[ $# -eq 1 ] || { echo "usage: $0 [--reuse] OUTDIR" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
command -v dpkg-buildpackage >/dev/null || { echo "build-deb: dpkg-buildpackage missing (apt-get install dpkg-dev debhelper)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/qmapd-deb.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/qmapd"
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -xf - -C "$WORK/qmapd"
else
	tar -C "$SRC" --exclude=./build --exclude='./build-*' -cf - . | tar -xf - -C "$WORK/qmapd"
fi

# The copy's files and their contents, in one hash.
TREE=$(cd "$WORK/qmapd" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum |
	sha256sum | cut -d' ' -f1)
if [ $REUSE = 1 ] && [ "$(cat "$OUT/qmapd.tree" 2>/dev/null)" = "$TREE" ]; then
	shopt -s nullglob
	debs=("$OUT"/qmapd_*.deb "$OUT"/qmapd-mm-compat_*.deb "$OUT"/qmapd-dbgsym_*.deb)
	if [ ${#debs[@]} -gt 0 ]; then
		printf '%s\n' "${debs[@]}"
		exit 0
	fi
	shopt -u nullglob
fi
rm -f "$OUT/qmapd.tree"

# -b: binary packages only (the source is this repository); -us -uc: unsigned.
jobs=$(nproc 2>/dev/null || echo 1)
(cd "$WORK/qmapd" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=$jobs}" \
	dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1 ||
	{ tail -n 40 "$WORK/build.log" >&2; echo "build-deb: dpkg-buildpackage failed" >&2; exit 1; }
shopt -s nullglob
debs=("$WORK"/*.deb)
[ ${#debs[@]} -gt 0 ] || { tail -n 40 "$WORK/build.log" >&2; echo "build-deb: no .deb built" >&2; exit 1; }
rm -f "$OUT"/qmapd_*.deb "$OUT"/qmapd-mm-compat_*.deb "$OUT"/qmapd-dbgsym_*.deb
cp "${debs[@]}" "$WORK"/*.changes "$WORK"/*.buildinfo "$OUT"/
echo "$TREE" >"$OUT/qmapd.tree"
for d in "${debs[@]}"; do echo "$OUT/$(basename "$d")"; done
