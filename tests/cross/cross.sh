#!/bin/bash
# SPDX-License-Identifier: MIT
# cross.sh ARCH (mipsel | arm64; or CROSS_ARCH=ARCH): the whole daemon cross-built for a router CPU and run under
# qemu-user: qmapd, qmapctl and qmapd-sim for ARCH (-Werror, cmake/ARCH's toolchain), then
# tests/e2e/e2e-dataplane.sh with both qmapd and qmapd-sim the ARCH binaries (two muxes,
# ping v4/v6, iperf3 both ways, qmapd's and the sim's counters equal). mipsel is the MT7621's
# little-endian MIPS32; its libraries come from a sysroot (tests/cross/sysroot.sh: Debian 12
# mipsel cannot be installed beside amd64), arm64's from Debian's multiarch packages.
# CROSS_DBUS=OFF builds without D-Bus. What qmapd fell back to under qemu is printed.
# Needs the packages scripts/deps.sh installs; without them the test is skipped (77).
source "$(dirname "$0")/../support/lib.sh" || exit 1

arch=${1:-${CROSS_ARCH:-}}
[ -n "$arch" ] || fail "usage: cross.sh mipsel|arm64 (or CROSS_ARCH=)"
case $arch in
mipsel) triplet=mipsel-linux-gnu qemu=qemu-mipsel ;;
arm64) triplet=aarch64-linux-gnu qemu=qemu-aarch64 ;;
*) fail "unknown architecture '$arch' (mipsel or arm64)" ;;
esac
dbus=${CROSS_DBUS:-ON}
command -v "$triplet-gcc" >/dev/null || skip "$triplet-gcc not installed (gcc-$triplet; scripts/deps.sh)"
command -v "$qemu" >/dev/null || skip "$qemu not installed (qemu-user; scripts/deps.sh)"
need cmake cmake
sysroot_args=()
prefix=/
if [ "$arch" = mipsel ]; then
	prefix=${CROSS_SYSROOT:-$QMAPD_TEST_CACHE/sysroot-mipsel}
	if [ ! -d "$prefix" ]; then
		grep -qx mipsel <<<"$(dpkg --print-foreign-architectures)" ||
			skip "dpkg has no mipsel architecture (scripts/deps.sh adds it)"
		mkdir -p "$(dirname "$prefix")"
		"$SOURCE_DIR/tests/cross/sysroot.sh" mipsel "$prefix" ||
			skip "cannot unpack the mipsel sysroot (apt-get download failed)"
	fi
	sysroot_args=(-DQMAPD_SYSROOT="$prefix")
else
	[ -f "/usr/lib/$triplet/pkgconfig/qmi-glib.pc" ] && command -v "$triplet-pkg-config" >/dev/null ||
		skip "the $arch -dev packages are not installed (libqmi-glib-dev:$arch ...; scripts/deps.sh)"
fi

out=$BUILD_DIR/cross-$arch$([ "$dbus" = ON ] || echo -nodbus)
log=$(mktemp)
start=$(date +%s)
if ! { cmake -S "$SOURCE_DIR" -B "$out" -DCMAKE_TOOLCHAIN_FILE="$SOURCE_DIR/cmake/$triplet.cmake" \
	"${sysroot_args[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQMAPD_WERROR=ON \
	-DQMAPD_DBUS="$dbus" -DBUILD_TESTING=OFF -DQMAPD_BUILD_TOOLS=ON &&
	cmake --build "$out" -j"$(nproc)" --target qmapd qmapctl qmapd-sim; } >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	rm -f "$log"
	fail "cross build for $arch"
fi
rm -f "$log"
echo "ok: qmapd, qmapctl, qmapd-sim built for $arch (D-Bus $dbus) in $(($(date +%s) - start)) s"
for p in qmapd qmapctl qmapd-sim; do
	info=$(LC_ALL=C readelf -h "$out/$p" | sed -n 's/^ *Machine: *//p')
	echo "  $p: $info"
done

# The e2e test execs QMAPD and QMAPD_SIM: wrappers that run them under qemu-user, keeping
# their standard error beside the build to read after the test removed its directory.
wrap=$(mktemp -d)
trap 'rm -rf "$wrap"' EXIT
for p in qmapd qmapd-sim; do
	cat >"$wrap/$p" <<-WRAP
	#!/bin/bash
	exec 2> >(tee -a "$out/$p.e2e.log" >&2)
	exec env QEMU_LD_PREFIX="$prefix" "$qemu" "$out/$p" "\$@"
	WRAP
	chmod +x "$wrap/$p"
	: >"$out/$p.e2e.log"
done
"$wrap/qmapd" --version >/dev/null || fail "$qemu cannot run qmapd"

rc=0
# qemu-user emulates neither bpf(2) nor io_uring: qmapd must fall back to TUN and plain writes.
QMAPD=$wrap/qmapd QMAPD_SIM=$wrap/qmapd-sim BUILD_DIR=$out E2E_EXPECT_XDP=no \
	bash "$SOURCE_DIR/tests/e2e/e2e-dataplane.sh" || rc=$?
echo "qmapd under $qemu, warnings and fallbacks:"
grep -E 'unavailable|fall|not supported|warning' "$out/qmapd.e2e.log" |
	grep -vE "^$LOG_TIME_RE modem0 " | sed 's/^/  /' || echo "  none"
[ $rc -eq 0 ] || fail "e2e-dataplane with the $arch binaries under $qemu (exit $rc)"
echo "cross: e2e-dataplane passed with qmapd and qmapd-sim for $arch under $qemu"
