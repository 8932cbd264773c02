#!/bin/bash
# SPDX-License-Identifier: MIT
# `cmake --install` into a DESTDIR lands where a distribution would put things, and the
# installed qmapd accepts the installed default configuration at its default path; the D-Bus
# activation file starts the unit's alias, and dbus-daemon takes it and the policy.
set -euo pipefail
BUILD_DIR=${BUILD_DIR:?BUILD_DIR is the build tree}
source "$(dirname "$0")/../support/lib.sh" || exit 1
need readelf binutils

DEST=$(mktemp -d)
trap 'rm -rf "$DEST"' EXIT
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD_DIR/CMakeCache.txt"; }

DESTDIR=$DEST cmake --install "$BUILD_DIR" >"$DEST.log" 2>&1 || { cat "$DEST.log" >&2; fail "cmake --install"; }
rm -f "$DEST.log"
prefix=$(cache CMAKE_INSTALL_PREFIX)
root=$DEST$prefix
# GNUInstallDirs: /usr keeps its configuration in /etc, every other prefix below itself.
if [ "$prefix" = /usr ]; then etc=$DEST/etc; else etc=$root/etc; fi

for f in sbin/qmapd bin/qmapctl share/man/man8/qmapd.8 share/man/man5/qmapd.conf.5 \
	share/bash-completion/completions/qmapctl share/dbus-1/system.d/qmapd.conf \
	share/dbus-1/system-services/org.freedesktop.ModemManager1.service; do
	[ -e "$root/$f" ] || fail "$prefix/$f not installed"
done
[ -f "$etc/qmapd/qmapd.conf" ] || fail "default configuration not in $etc/qmapd"
# The installed default is for real modems; the simulator's configuration is an example.
! grep -q '^device = sim:' "$etc/qmapd/qmapd.conf" || fail "the installed default configuration is the simulator's"
[ -f "$root/share/doc/qmapd/examples/sim.conf" ] || fail "the simulator's example is not installed"

# D-Bus activation of ModemManager's name starts the alias dbus-org.freedesktop.ModemManager1
# (which the ModemManager compatibility links to qmapd.service), and the unit never runs
# beside ModemManager.
unit=$(find "$DEST" -name qmapd.service -path '*/systemd/system/*' | head -1)
[ -n "$unit" ] || fail "qmapd.service not installed"
activation=$root/share/dbus-1/system-services/org.freedesktop.ModemManager1.service
alias=$(sed -n 's/^SystemdService=//p' "$activation")
expect_alias=dbus-org.freedesktop.ModemManager1.service
[ "$alias" = "$expect_alias" ] || fail "the activation file starts '$alias', not $expect_alias"
# The unit does not claim the alias: enabling ModemManager creates it in /etc, and
# `systemctl enable qmapd` would then fail on the taken name. The compatibility links it.
! grep -q "^Alias=.*$expect_alias" "$unit" ||
	fail "the unit claims $expect_alias in [Install]; enabling it fails while ModemManager is enabled"
grep -qx "Name=org.freedesktop.ModemManager1" "$activation" || fail "activation file for another name"
grep -qx "Conflicts=ModemManager.service" "$unit" || fail "the unit does not conflict with ModemManager"
# dbus-daemon reads the activation file and the policy as installed: a private bus with both
# lists the name as activatable. (Without dbus-daemon and gdbus, only the lines above check.)
if command -v dbus-daemon >/dev/null && command -v gdbus >/dev/null; then
	cat >"$DEST/bus.conf" <<-CONF
	<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
	 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
	<busconfig>
	  <listen>unix:path=$DEST/bus</listen>
	  <auth>EXTERNAL</auth>
	  <servicedir>$root/share/dbus-1/system-services</servicedir>
	  <policy context="default">
	    <allow send_destination="*"/>
	    <allow receive_type="method_return"/>
	    <allow receive_type="error"/>
	    <allow receive_type="signal"/>
	  </policy>
	  <include>$root/share/dbus-1/system.d/qmapd.conf</include>
	</busconfig>
	CONF
	dbus-daemon --config-file="$DEST/bus.conf" --nofork --nopidfile --print-address=3 \
		3>"$DEST/bus.address" 2>"$DEST/bus.log" &
	bus_pid=$!
	for _ in $(seq 50); do [ -s "$DEST/bus.address" ] && break; sleep 0.1; done
	names=$(timeout 10 gdbus call -a "unix:path=$DEST/bus" -d org.freedesktop.DBus -o /org/freedesktop/DBus \
		-m org.freedesktop.DBus.ListActivatableNames 2>&1) || names="gdbus: $names"
	kill "$bus_pid" 2>/dev/null
	wait "$bus_pid" 2>/dev/null || true
	[[ $names == *"'org.freedesktop.ModemManager1'"* ]] ||
		fail "dbus-daemon does not offer the installed activation file: $names $(cat "$DEST/bus.log")"
fi

# The test tools are installed only when asked.
if [ "$(cache QMAPD_INSTALL_TOOLS)" != ON ]; then
	[ ! -e "$root/sbin/qmapd-sim" ] || fail "qmapd-sim installed without QMAPD_INSTALL_TOOLS"
	[ -z "$(find "$DEST" -name 'qmapd-bench-*')" ] || fail "benchmarks installed without QMAPD_INSTALL_TOOLS"
fi

# Units stay below a prefix other than /usr, and name the installed daemon.
if [ "$prefix" != /usr ]; then
	unit=$root/lib/systemd/system/qmapd.service
	[ -f "$unit" ] || fail "qmapd.service not below $prefix"
	grep -qx "ExecStart=$prefix/sbin/qmapd.*" "$unit" || grep -q "^ExecStart=$prefix/sbin/qmapd" "$unit" ||
		fail "the installed unit does not start $prefix/sbin/qmapd"
	[ -f "$root/lib/sysusers.d/qmapd.conf" ] || fail "sysusers file not below $prefix"
	[ -z "$(find "$DEST" -path "$DEST/lib/*" -o -path "$DEST/usr/lib/systemd/*" | head -1)" ] ||
		fail "files installed outside $prefix"
fi

# The compiled-in default is where the default configuration went.
default=$("$root/sbin/qmapd" --help | sed -n 's/.*configuration file (default \(.*\))$/\1/p')
[ "$default" = "${etc#"$DEST"}/qmapd/qmapd.conf" ] ||
	fail "qmapd's default configuration is '$default', it was installed in ${etc#"$DEST"}/qmapd"
"$root/sbin/qmapd" -t -c "$etc/qmapd/qmapd.conf" || fail "qmapd -t rejects the installed default configuration"

# qmapctl is a small client: no libsystemd, no libev.
if readelf -d "$root/bin/qmapctl" | grep -E 'NEEDED.*(libsystemd|libev)'; then
	fail "qmapctl links libsystemd or libev"
fi
echo "install: $prefix, configuration $default, qmapd -t accepts it"
