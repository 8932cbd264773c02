#!/bin/bash
# SPDX-License-Identifier: MIT
# polkit decides who may change state through ModemManager's API when polkitd is on the bus:
# Debian's real polkitd runs on the test's private bus (DBUS_SYSTEM_BUS_ADDRESS), with
# qmapd's action file (systemd/org.freedesktop.ModemManager1.policy, installed for the test
# into /usr/share/polkit-1/actions unless a file of that name is there) and a temporary rule
# in /etc/polkit-1/rules.d that grants Device.Control to the user nobody; both are removed at
# the end, also on failure. SendPin as nobody (mmcli, from the Debian package, unpacked):
# refused with Core.Unauthorized without the rule (though nobody is in qmapd.conf's
# admin-group: polkit decides, not the group), accepted with it (the SIM unlocks); polkitd
# without the action file cannot decide, and the admin-group rule does; with polkitd gone,
# the admin-group rule decides again. qmapd exits 0 at the end. Needs root; namespaces it
# creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

POLKITD=/usr/lib/polkit-1/polkitd
need /usr/libexec/qmi-proxy libqmi-proxy
need "$POLKITD" polkitd
need setpriv util-linux
need_mmcli
[ "$(id -un 65534)" = nobody ] || skip "uid 65534 is not nobody here"

ACTIONS=/usr/share/polkit-1/actions/org.freedesktop.ModemManager1.policy
RULE=/etc/polkit-1/rules.d/10-qmapd-e2e-$$.rules
INSTALLED_ACTIONS=no
polkit_cleanup() {
	rm -f "$RULE"
	[ "$INSTALLED_ACTIONS" = yes ] && rm -f "$ACTIONS"
}
e2e_setup
trap 'rc=$?; polkit_cleanup; (exit $rc); e2e_cleanup' EXIT
chmod 755 "$E2E_TMP"

if [ ! -e "$ACTIONS" ]; then
	INSTALLED_ACTIONS=yes
	install -m 644 "$SOURCE_DIR/systemd/org.freedesktop.ModemManager1.policy" "$ACTIONS"
fi
grep -q 'action id="org.freedesktop.ModemManager1.Device.Control"' "$ACTIONS" ||
	fail "$ACTIONS has no Device.Control action"

# polkitd owns its name by the policy file of its package.
start_system_bus "<include>/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf</include>"
# nobody with nogroup, qmapd.conf's admin-group; an outsider: nobody in another group.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$MMCLI" "$@"; }
as_outsider() { setpriv --reuid=65534 --regid=65533 --clear-groups "$MMCLI" "$@"; }
UNAUTHORIZED=org.freedesktop.ModemManager1.Error.Core.Unauthorized

start_polkitd() {
	"$POLKITD" >>"$E2E_TMP/polkitd.log" 2>&1 &
	POLKITD_PID=$!
	E2E_PIDS+=($!)
	wait_for 10 "polkitd on the bus" grep -q "Acquired the name org.freedesktop.PolicyKit1" \
		"$E2E_TMP/polkitd.log"
}
rules_loaded() { [ "$(grep -c 'Finished loading, compiling and executing' "$E2E_TMP/polkitd.log")" -ge "$1" ]; }
start_polkitd

PIN=2468
start_named_sim a --net-address 198.51.100.1/32 --mux 1=192.0.2.2/24 --sim-pin "$PIN" \
	--apn internet
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control
discovery = no
admin-group = nogroup

[dbus]
enabled = no

[modem.a]
device = sim:$E2E_TMP/a.sock
control-link = $E2E_TMP/a.qmi
CONF
start_qmapd_dbus "$E2E_TMP/qmapd.conf"
wait_for 10 "qmapd sees polkit" grep -q "org.freedesktop.PolicyKit1 is on the bus" "$E2E_TMP/qmapd.log"

wait_for 20 "the modem on the bus" modem_count_is 1
MODEM=$(mmj -L | jq -r '."modem-list"[0]')
state_is() { [ "$(mmj -m "$MODEM" | jq -r .modem.generic.state)" = "$1" ]; }
wait_for 20 "the modem locked" state_is locked
SIM=$(mmj -m "$MODEM" | jq -r .modem.generic.sim)

# No rule: polkit's default for Device.Control needs an active session, which nobody has.
rc=0
out=$(as_nobody -i "$SIM" --pin="$PIN" 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "SendPin as nobody allowed without a polkit rule"
[[ $out == *$UNAUTHORIZED*"polkit refuses org.freedesktop.ModemManager1.Device.Control"* ]] ||
	fail "SendPin as nobody without a rule: $out"
state_is locked || fail "the SIM changed after a refused SendPin"
echo "ok: SendPin as nobody (in admin-group) refused by polkit without a rule ($UNAUTHORIZED)"

# The rule: polkitd reloads its rules when the directory changes.
loaded=$(grep -c 'Finished loading, compiling and executing' "$E2E_TMP/polkitd.log")
cat >"$RULE" <<'JS'
polkit.addRule(function(action, subject) {
	if (action.id == "org.freedesktop.ModemManager1.Device.Control" && subject.user == "nobody")
		return polkit.Result.YES;
});
JS
wait_for 10 "polkitd reloading its rules" rules_loaded $((loaded + 1))
as_nobody -i "$SIM" --pin="$PIN" >"$E2E_TMP/sendpin.out" 2>&1 ||
	fail "SendPin as nobody with the polkit rule: $(cat "$E2E_TMP/sendpin.out")"
wait_for 20 "the modem unlocked" state_is registered
echo "ok: SendPin as nobody allowed by a polkit rule naming nobody; the SIM unlocked"

# The rule gone: refused again (an enabled modem's Enable(true) is a state-changing call too).
loaded=$(grep -c 'Finished loading, compiling and executing' "$E2E_TMP/polkitd.log")
rm -f "$RULE"
wait_for 10 "polkitd reloading its rules" rules_loaded $((loaded + 1))
rc=0
out=$(as_nobody -m "$MODEM" --enable 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "Enable as nobody allowed after the rule went"
[[ $out == *$UNAUTHORIZED*polkit* ]] || fail "Enable as nobody after the rule went: $out"
mm -m "$MODEM" --enable >/dev/null || fail "Enable as root with polkit: $(tail -1 "$E2E_TMP/mmcli.stderr")"
echo "ok: the rule removed: nobody refused again, root allowed"

# polkitd without the action file (qmapd without its package's file): polkit cannot decide,
# and qmapd falls back to the admin-group rule rather than refuse everyone, root included.
if [ "$INSTALLED_ACTIONS" = yes ]; then
	rm -f "$ACTIONS"
	polkit_undecided() {
		as_nobody -m "$MODEM" --enable >"$E2E_TMP/enable.out" 2>&1 &&
			grep -q "polkit cannot decide org.freedesktop.ModemManager1.Device.Control" \
				"$E2E_TMP/qmapd.log"
	}
	wait_for 10 "Enable as nobody allowed by the admin group with polkit undecided" \
		polkit_undecided
	rc=0
	out=$(as_outsider -m "$MODEM" --enable 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "Enable by an outsider allowed with polkit undecided"
	[[ $out == *$UNAUTHORIZED*"membership in group 'nogroup'"* ]] ||
		fail "Enable by an outsider with polkit undecided: $out"
	echo "ok: polkit without the action: the admin-group rule decides"
else
	echo "the action file was there before the test: the undecided polkit is not tried"
fi

# polkitd gone: the admin group decides (nobody in nogroup may, the outsider may not).
kill -TERM "$POLKITD_PID"
wait_for 10 "polkitd to exit" not_running "$POLKITD_PID"
wait_for 10 "qmapd sees polkit leave" grep -q "org.freedesktop.PolicyKit1 left the bus" "$E2E_TMP/qmapd.log"
as_nobody -m "$MODEM" --enable >"$E2E_TMP/enable.out" 2>&1 ||
	fail "Enable as nobody in admin-group without polkitd: $(cat "$E2E_TMP/enable.out")"
rc=0
out=$(as_outsider -m "$MODEM" --enable 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "Enable by an outsider allowed without polkitd"
[[ $out == *$UNAUTHORIZED*"membership in group 'nogroup'"* ]] ||
	fail "Enable by an outsider without polkitd: $out"
echo "ok: without polkitd the admin-group rule decides"
# qmapd ends cleanly after all this (exit 0: no leak report under the sanitizers).
stop_qmapd
