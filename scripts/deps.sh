#!/bin/bash
# SPDX-License-Identifier: MIT
# Install what qmapd needs to build, test and run its demo on Debian 12 (as root).
set -euo pipefail
PACKAGES=(
	build-essential cmake pkg-config clang clang-format
	libev-dev libmnl-dev libinih-dev libmbim-glib-dev libqmi-glib-dev libmm-glib-dev
	libjansson-dev libusb-1.0-0-dev liburing-dev umockdev libumockdev-dev
	gcc-mips-linux-gnu libc6-dev-mips-cross linux-libc-dev-mips-cross qemu-user
	iproute2 iputils-ping iperf3 jq ethtool procps mandoc python3 util-linux libqmi-utils libqmi-proxy
	libmbim-utils libmbim-proxy
	dbus-daemon libglib2.0-bin polkitd
	dpkg-dev debhelper lintian
	systemd-container dbus
	busybox
	qemu-system-x86
)
# systemd-container (systemd-nspawn) boots the container of tests/systemd, from an overlay of
# this system; dbus is that container's system bus.
# polkitd: e2e-dbus-polkit.sh runs it on its private bus; on the system bus it starts only
# when D-Bus activation asks for it. busybox is OpenWrt's shell (ash) for tests/openwrt, which
# runs the netifd protocol handler under netifd as a router does; tests/vm copies it (with
# its libraries) into the guest's initramfs. qemu-system-x86 boots that guest (tests/vm).
# mmcli (e2e-dbus.sh) and NetworkManager (e2e-networkmanager.sh) come from the modemmanager,
# network-manager, libnm0, libndp0 and libteamdctl0 packages, which are not installed: their
# daemons would start and take the modems and the network. tests/support/lib.sh need_unpacked fetches
# them with apt-get download and unpacks them under /var/cache/qmapd-test at the first run.
# tests/cross/: the whole daemon for mipsel (MT7621 routers) and arm64 under qemu-user. arm64's
# libraries are Debian's multiarch -dev packages; mipsel's cannot be installed beside amd64's
# (Debian 12 mipsel lags behind the security updates of linux-libc-dev, libpcre2-8-0, zlib1g
# and libssl3, and Multi-Arch: same wants one version), so tests/cross/sysroot.sh unpacks
# them into a sysroot at the first run; dpkg only has to know the architecture.
CROSS_ARCHES=(mipsel arm64)
CROSS_LIBS=(libqmi-glib-dev libmbim-glib-dev libmm-glib-dev libusb-1.0-0-dev libev-dev
	libinih-dev libjansson-dev liburing-dev libmnl-dev libglib2.0-dev)
# pkgconf:arm64 is aarch64-linux-gnu-pkg-config, which cmake/aarch64-linux-gnu.cmake runs.
PACKAGES+=(gcc-mipsel-linux-gnu gcc-aarch64-linux-gnu pkgconf:arm64 "${CROSS_LIBS[@]/%/:arm64}")
added=0
foreign=$(dpkg --print-foreign-architectures)
for a in "${CROSS_ARCHES[@]}"; do
	if ! grep -qx "$a" <<<"$foreign"; then
		dpkg --add-architecture "$a"
		added=1
	fi
done
missing=()
for p in "${PACKAGES[@]}"; do
	[[ $(dpkg-query -W -f="\${Status}" "$p" 2>/dev/null) == *"ok installed"* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ $added = 1 ]; then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
