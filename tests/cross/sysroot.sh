#!/bin/bash
# SPDX-License-Identifier: MIT
# sysroot.sh ARCH DIR: a root file system with qmapd's build dependencies for Debian
# architecture ARCH (mipsel), unpacked from the archive's packages with apt-get download and
# dpkg -x into DIR, without installing them. For an architecture whose multiarch packages
# cannot be installed beside the host's: Debian 12's mipsel lags behind amd64's security
# updates (linux-libc-dev, libpcre2-8-0, zlib1g, libssl3), and Multi-Arch: same packages must
# have one version on every architecture. Needs `dpkg --add-architecture ARCH` and
# `apt-get update` done (scripts/deps.sh). DIR is made whole or not at all.
set -euo pipefail
arch=$1 dir=$2
# What CMakeLists.txt asks pkg-config and find_library for, with their dependencies.
ROOTS=(libqmi-glib-dev libmbim-glib-dev libmm-glib-dev libusb-1.0-0-dev libev-dev libinih-dev
	libjansson-dev liburing-dev libmnl-dev libglib2.0-dev libc6-dev)
# Build and run time need none of these (tools, interpreters, introspection data).
SKIP='^(python3|libpython3|dpkg|tar|install-info|libglib2\.0-bin|libglib2\.0-dev-bin|pkgconf|pkg-config|gir1\.2-|libgirepository|libmbim-proxy|libqmi-proxy|libreadline|libncurses|libtinfo|libsqlite|libdb5|libbz2|libmd0|libacl1|rpcsvc-proto)'

[ -d "$dir" ] && exit 0
tmp=$(mktemp -d "$dir.XXXXXX")
chmod 755 "$tmp" # apt-get download runs as _apt where it can
trap 'rm -rf "$tmp"' EXIT
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances "${ROOTS[@]/%/:$arch}" 2>/dev/null |
	sed -n "s/^\([a-z0-9][^ ]*\):$arch\$/\1/p" | sort -u | grep -Ev "$SKIP")
# Virtual packages have no candidate: drop them (one apt-cache call: each takes a while).
mapfile -t real < <(apt-cache policy "${pkgs[@]/%/:$arch}" 2>/dev/null |
	awk '/^[^ ]/ { p = $1; sub(/:$/, "", p) } /Candidate:/ && $2 != "(none)" { print p }')
[ ${#real[@]} -gt 10 ] || { echo "sysroot: no $arch packages known (dpkg --add-architecture $arch; apt-get update)" >&2; exit 1; }
(cd "$tmp" && apt-get download -q "${real[@]}" >/dev/null)
for deb in "$tmp"/*.deb; do
	dpkg -x "$deb" "$tmp/root"
done
mv -T "$tmp/root" "$dir"
echo "sysroot: ${#real[@]} $arch packages in $dir"
