#!/bin/bash
# SPDX-License-Identifier: MIT
# Airplane mode as NetworkManager does it, with mmcli (from the Debian package, unpacked) on a
# private bus: Enable(false) then SetPowerState(LOW) puts a QMI modem in low power (qmapd-sim's
# DMS operating mode, its low_power gauge) and an MBIM one's radio off (RADIO_STATE); both
# then report PowerState low and are no longer registered. LOW while
# enabled is refused with WrongState, OFF is Unsupported. --set-power-state-on brings the
# radio back (registered again); Enable(true) from low power powers up first, as ModemManager
# does. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need /usr/libexec/mbim-proxy libmbim-proxy
need dbus-daemon dbus
need jq jq
MMCLI=$(need_unpacked modemmanager usr/bin/mmcli) || exit $?
e2e_setup
chmod 755 "$E2E_TMP"

start_system_bus
mm() { "$MMCLI" "$@" 2>>"$E2E_TMP/mmcli.stderr"; }
mmj() { mm -J "$@"; }

SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/24)
write_qmi_mbim_config

start_sim --apn internet
ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/mbim.sock" --netdev simnet-m \
	--net-address 198.51.100.9/32 --mux 1=203.0.113.2/24 --mbim --apn internet \
	>"$E2E_TMP/sim-mbim.log" 2>&1 &
E2E_PIDS+=($!)
wait_for 10 "the MBIM sim's socket" test -S "$E2E_TMP/mbim.sock"
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

modem_count_is() { [ "$(mmj -L | jq -r '."modem-list" | length')" -eq "$1" ]; }
wait_for 20 "two modems on the bus" modem_count_is 2
modem_of() {
	local p
	for p in $(mmj -L | jq -r '."modem-list"[]'); do
		if [ "$(mmj -m "$p" | jq -r '.modem.generic["primary-port"]')" = "$1" ]; then
			echo "$p"
		fi
	done
}
Q=$(modem_of q.qmi)
M=$(modem_of m.mbim)
[ -n "$Q" ] && [ -n "$M" ] || fail "modems q ($Q) and m ($M) not both on the bus"
gen() { mmj -m "$1" | jq -r ".modem.generic[\"$2\"]"; }
reg() { mmj -m "$1" | jq -r '.modem["3gpp"]["registration-state"]'; }
is() { [ "$("$1" "${@:2:$(($# - 2))}")" = "${!#}" ]; }
last_error() { grep -o "org.freedesktop.ModemManager1.Error.[A-Za-z.]*" "$E2E_TMP/mmcli.stderr" | tail -1; }

for X in "$Q" "$M"; do
	wait_for 30 "modem $X registered" is gen "$X" state registered
	expect_eq "modem $X PowerState at start" "$(gen "$X" power-state)" on

	# LOW needs the modem disabled (ModemManager: WrongState); OFF is not offered.
	rc=0
	mm -m "$X" --set-power-state-low >/dev/null 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || fail "modem $X: low power accepted while enabled"
	expect_eq "low power while enabled" "$(last_error)" \
		org.freedesktop.ModemManager1.Error.Core.WrongState
	rc=0
	mm -m "$X" --set-power-state-off >/dev/null 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || fail "modem $X: power off accepted"
	expect_eq "power off" "$(last_error)" org.freedesktop.ModemManager1.Error.Core.Unsupported

	# Airplane mode: disable, then low power.
	mm -m "$X" --disable >/dev/null || fail "modem $X: --disable: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	mm -m "$X" --set-power-state-low >/dev/null ||
		fail "modem $X: --set-power-state-low: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "modem $X PowerState low" is gen "$X" power-state low
	wait_for 10 "modem $X deregistered" is reg "$X" idle
	expect_eq "modem $X state in low power" "$(gen "$X" state)" disabled
	echo "ok: modem $X: --disable, --set-power-state-low -> power low, not registered"
done

refresh_stats
expect_eq "qmapd-sim's DMS operating mode (low_power gauge)" "$(sstat low_power= low_power)" 1

# Back on: SetPowerState(ON) for the QMI modem, Enable(true) alone for the MBIM one.
mm -m "$Q" --set-power-state-on >/dev/null ||
	fail "--set-power-state-on: $(tail -2 "$E2E_TMP/mmcli.stderr")"
wait_for 10 "modem q PowerState on" is gen "$Q" power-state on
refresh_stats
expect_eq "qmapd-sim's DMS operating mode online" "$(sstat low_power= low_power)" 0
mm -m "$Q" --enable >/dev/null || fail "modem q: --enable: $(tail -2 "$E2E_TMP/mmcli.stderr")"
mm -m "$M" --enable >/dev/null || fail "modem m: --enable: $(tail -2 "$E2E_TMP/mmcli.stderr")"
for X in "$Q" "$M"; do
	wait_for 30 "modem $X registered again" is gen "$X" state registered
	expect_eq "modem $X PowerState" "$(gen "$X" power-state)" on
	expect_eq "modem $X registration" "$(reg "$X")" home
	mm -m "$X" --simple-connect="apn=internet,ip-type=ipv4" >/dev/null ||
		fail "modem $X: connect after power on: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "modem $X connected" is gen "$X" state connected
	mm -m "$X" --simple-disconnect >/dev/null || fail "modem $X: --simple-disconnect"
	echo "ok: modem $X: back on, registered, connects"
done

if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "e2e-dbus-power: passed"
