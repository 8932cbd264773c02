#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/): scripts/build-deb.sh builds them in a temporary copy of the
# tree into $BUILD_DIR/deb/ (where the container test installs them from), lintian finds no
# error or warning, and each package holds what debian/README.Debian says: qmapd the daemon,
# qmapctl, units, sysusers, the default configuration as a conffile, man pages and
# completion, and no test tool; qmapd-mm-compat what hands ModemManager's name to qmapd, and
# it alone replaces modemmanager.
source "$(dirname "$0")/../support/lib.sh" || exit 1
need dpkg-buildpackage dpkg-dev
need dh debhelper
need lintian lintian
OUT=$BUILD_DIR/deb
X=$(mktemp -d)
trap 'rm -rf "$X"' EXIT

"$SOURCE_DIR/scripts/build-deb.sh" "$OUT" >"$X/built" || fail "scripts/build-deb.sh failed"
deb() { # PACKAGE: its .deb in $OUT
	local f
	f=$(grep "/$1_[^/]*\.deb$" "$X/built" | head -n 1)
	[ -n "$f" ] && [ -f "$f" ] || fail "no $1 package among: $(tr '\n' ' ' <"$X/built")"
	echo "$f"
}
main=$(deb qmapd)
compat=$(deb qmapd-mm-compat)

# lintian on everything built; overrides (debian/*.lintian-overrides) each give their reason.
changes=$(ls "$OUT"/qmapd_*.changes)
rc=0
lintian --fail-on error,warning "$changes" >"$X/lintian" 2>&1 || rc=$?
grep -v 'running with root privileges' "$X/lintian" || true
[ $rc -eq 0 ] || fail "lintian exits $rc: errors or warnings"
! grep -q '^[EW]: ' "$X/lintian" || fail "lintian reports errors or warnings"

dpkg -c "$main" | awk '{ print $6 }' | sed 's|^\./|/|' >"$X/main.list"
dpkg -c "$compat" | awk '{ print $6 }' | sed 's|^\./|/|' >"$X/compat.list"
has() { grep -qxF "$2" "$X/$1.list" || fail "$1 package lacks $2"; }
lacks() { ! grep -qE "$2" "$X/$1.list" || fail "$1 package has $(grep -E "$2" "$X/$1.list" | head -1)"; }
for f in /usr/sbin/qmapd /usr/bin/qmapctl /lib/systemd/system/qmapd.service \
	/lib/systemd/system/qmapd.socket /usr/lib/sysusers.d/qmapd.conf /etc/qmapd/qmapd.conf \
	/usr/share/man/man8/qmapd.8.gz /usr/share/man/man8/qmapctl.8.gz \
	/usr/share/man/man5/qmapd.conf.5.gz /usr/share/bash-completion/completions/qmapctl \
	/usr/share/doc/qmapd/examples/sim.conf /usr/share/doc/qmapd/copyright \
	/usr/share/doc/qmapd/README.Debian; do
	has main "$f"
done
# The test tools are in no package; ModemManager's name is the compat package's alone.
lacks main 'qmapd-sim|qmapd-bench|/usr/lib/debug'
lacks main 'dbus-1|ModemManager|/lib/udev/'
for f in /usr/share/dbus-1/system-services/org.freedesktop.ModemManager1.service \
	/usr/share/dbus-1/system.d/qmapd.conf /lib/udev/rules.d/70-qmapd.rules \
	/lib/systemd/system/dbus-org.freedesktop.ModemManager1.service; do
	has compat "$f"
done
lacks compat 'bin/|/etc/'
dpkg -c "$compat" | grep -q 'dbus-org.freedesktop.ModemManager1.service -> qmapd.service$' ||
	fail "the alias in qmapd-mm-compat does not point to qmapd.service"

# Relations: the switch is the compat package's; qmapd itself installs beside ModemManager.
field() { dpkg-deb -f "$1" "$2"; }
for f in Provides Conflicts Replaces; do
	[[ $(field "$compat" $f) == *modemmanager* ]] || fail "qmapd-mm-compat: no $f: modemmanager"
	[[ $(field "$main" $f) != *modemmanager* ]] || fail "qmapd: $f: modemmanager (that is qmapd-mm-compat's)"
done
[[ $(field "$compat" Depends) == *"qmapd (= "* || $(field "$compat" Depends) == *"qmapd (>= "* ]] ||
	fail "qmapd-mm-compat does not depend on qmapd"

# The unpacked package: the conffile, the unit's daemon, the default configuration accepted
# by the packaged qmapd, and nothing enables or starts qmapd on a first install.
dpkg-deb -x "$main" "$X/root"
dpkg-deb -e "$main" "$X/ctl"
grep -qx /etc/qmapd/qmapd.conf "$X/ctl/conffiles" || fail "/etc/qmapd/qmapd.conf is not a conffile"
grep -qx 'ExecStart=/usr/sbin/qmapd' "$X/root/lib/systemd/system/qmapd.service" ||
	fail "the packaged unit does not start /usr/sbin/qmapd"
"$X/root/usr/sbin/qmapd" -t -c "$X/root/etc/qmapd/qmapd.conf" >/dev/null ||
	fail "the packaged qmapd rejects the packaged /etc/qmapd/qmapd.conf"
grep -q 'systemd-sysusers.*qmapd.conf' "$X/ctl/postinst" || fail "postinst does not create group qmapd"
# dh_installsystemd --no-enable: enable only for a unit that was enabled before (upgrade).
if grep -q 'was-enabled defaults to true' "$X/ctl/postinst"; then
	fail "postinst enables qmapd on a first install (it would stop ModemManager)"
fi
echo "deb-package: $(basename "$main") $(basename "$compat") in $OUT; lintian clean"
