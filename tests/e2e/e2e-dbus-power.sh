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
need_mmcli
e2e_setup_bus

SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/24)
write_qmi_mbim_config

start_sim --apn internet
start_mbim_sim --mux 1=203.0.113.2/24 --apn internet
start_qmapd_dbus "$E2E_TMP/qmapd.conf"
find_qmi_mbim_modems
gen() { mmj -m "$1" | jq -r ".modem.generic[\"$2\"]"; }
reg() { mmj -m "$1" | jq -r '.modem["3gpp"]["registration-state"]'; }
is() { [ "$("$1" "${@:2:$(($# - 2))}")" = "${!#}" ]; }

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
