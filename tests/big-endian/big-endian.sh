#!/bin/bash
# SPDX-License-Identifier: MIT
# Big-endian proof: cross-build the dependency-free codecs of libqmapd-common and their unit
# tests for big-endian 32-bit MIPS (static, tests/big-endian/CMakeLists.txt with the toolchain
# tests/big-endian/mips-linux-gnu.cmake) and run every test under qemu-mips. Many routers
# that carry LTE modems are big-endian MIPS.
#
# Covered (built and run big-endian):
#   qmap.c gro.c gso.c csum.c usb-spec.c usb-ids.c   test-qmap test-gro test-gso test-usb-spec
#   ntb.c (MBIM NTB codec)                            test-ntb
#   wdm-frame.c (QMUX/MBIM framing)                   test-wdm-frame
#   mbim-frag.c (MBIM re-fragmentation)               test-mbim-frag
#   log.c                                             test-log
#   atomic-file.c                                     built only: it has no unit test
# Not covered, and why:
#   config.c (inih), control-protocol.c (jansson), test-config: Debian 12 has no big-endian
#     MIPS architecture to install their -dev packages for, and no source packages here.
#   the wdm bridge (wdm.c: the pty, test-wdm, test-wdm-qmi): libev (same reason).
#   test-gro-kernel: needs a kernel (a TUN device), which qemu-user does not emulate.
#   netdev, the daemon, qmapctl, qmapd-sim: libmnl, libev, libqmi, libusb, jansson.
#
# Needs gcc-mips-linux-gnu, libc6-dev-mips-cross, linux-libc-dev-mips-cross and qemu-user
# (scripts/deps.sh installs them). As root, where CI runs with deps.sh done, a missing tool
# is a failure; otherwise the test is skipped (77).
set -euo pipefail
SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CC_MIPS=mips-linux-gnu-gcc
QEMU=qemu-mips

missing() {
	if [ "$(id -u)" -eq 0 ]; then
		echo "FAIL: $1 (scripts/deps.sh installs it)" >&2
		exit 1
	fi
	echo "SKIP: $1 (run scripts/deps.sh as root)" >&2
	exit 77
}
command -v cmake >/dev/null || missing "cmake not installed"
command -v "$CC_MIPS" >/dev/null || missing "$CC_MIPS not installed (gcc-mips-linux-gnu)"
command -v "$QEMU" >/dev/null || missing "$QEMU not installed (qemu-user)"
echo '#include <stdio.h>
#include <linux/virtio_net.h>' | "$CC_MIPS" -E -x c - >/dev/null 2>&1 ||
	missing "MIPS C library or kernel headers missing (libc6-dev-mips-cross, linux-libc-dev-mips-cross)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/build.log
if ! { cmake -S "$SOURCE_DIR/tests/big-endian" -B "$work/build" \
	-DCMAKE_TOOLCHAIN_FILE="$SOURCE_DIR/tests/big-endian/mips-linux-gnu.cmake" &&
	cmake --build "$work/build" -j"$(nproc)"; } >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "FAIL: cross build for big-endian MIPS" >&2
	exit 1
fi
cd "$work/build"

# Refuse to pass without really running big-endian: the ELF header must say so, and a
# program that looks at its own memory must find the most significant byte first.
elf_field() { LC_ALL=C mips-linux-gnu-readelf -h "$2" 2>/dev/null | sed -n "s/^ *$1: *//p"; }
elf_order() { elf_field Data "$1"; }
order=$(elf_order byte-order)
case "$order" in
*"big endian"*) ;;
*)
	echo "FAIL: byte-order is not a big-endian ELF (readelf: ${order:-nothing})" >&2
	exit 1
	;;
esac
run_order=$(timeout 60 "$QEMU" ./byte-order) || {
	echo "FAIL: $QEMU ./byte-order did not run" >&2
	exit 1
}
if [ "$run_order" != big-endian ]; then
	echo "FAIL: under $QEMU the target is ${run_order:-silent}, not big-endian" >&2
	exit 1
fi
echo "big-endian: $(elf_field Class byte-order) $(elf_field Machine byte-order), $order; under $QEMU it reads memory $run_order"

shopt -s nullglob
tests=(test-*)
if [ ${#tests[@]} -eq 0 ]; then
	echo "FAIL: no test programs were built" >&2
	exit 1
fi
failed=0
for t in "${tests[@]}"; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$(elf_order "$t")" in
	*"big endian"*) ;;
	*)
		echo "FAIL $t: not a big-endian ELF" >&2
		failed=$((failed + 1))
		continue
		;;
	esac
	start=$(date +%s%N)
	rc=0
	timeout 120 "$QEMU" "./$t" >"$work/$t.log" 2>&1 || rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	if [ $rc -eq 0 ]; then
		echo "PASS $t (${ms} ms)"
	else
		echo "FAIL $t (exit $rc, ${ms} ms):" >&2
		tail -n 40 "$work/$t.log" >&2
		failed=$((failed + 1))
	fi
done
if [ $failed -gt 0 ]; then
	echo "FAIL: $failed of ${#tests[@]} tests failed big-endian" >&2
	exit 1
fi
echo "big-endian: ${#tests[@]} tests passed under $QEMU"
