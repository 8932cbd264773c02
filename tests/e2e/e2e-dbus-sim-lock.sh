#!/bin/bash
# SPDX-License-Identifier: MIT
# A SIM's codes and a missing SIM through ModemManager's API, for a QMI and an MBIM modem,
# checked with mmcli (from the Debian package, unpacked) against qmapd-sim's card (3 PIN
# tries, 10 PUK tries, PUK 12345678). Each of the two PIN-locked modems: LOCKED with
# UnlockRequired sim-pin; a wrong PIN is MobileEquipment.IncorrectPassword with a try less,
# the right one unlocks it; three wrong PINs (given to ChangePin, which the card counts alike)
# block it: SimPuk, UnlockRequired sim-puk with the PUK's tries; a wrong PUK is
# IncorrectPassword with one PUK try less; the right PUK with a new PIN unlocks it;
# EnablePin(false/true) shows in EnabledFacilityLocks; after ChangePin the old PIN is
# IncorrectPassword and the new one works. Each of the two modems without a SIM: FAILED with
# StateFailedReason sim-missing and no SIM object; an MBIM modem with a bad SIM: sim-error.
# Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need /usr/libexec/mbim-proxy libmbim-proxy
need_mmcli
e2e_setup_bus

PIN=2468
PUK=12345678
declare -A SIM_ARGS=(
	[q]="--net-address 198.51.100.1/32 --sim-pin $PIN"
	[m]="--net-address 198.51.100.2/32 --mbim --sim-pin $PIN"
	[qn]="--net-address 198.51.100.3/32 --no-sim"
	[mn]="--net-address 198.51.100.4/32 --mbim --no-sim"
	[mb]="--net-address 198.51.100.5/32 --mbim --sim-state bad-sim"
)
declare -A CONTROL=([q]=qmi [m]=mbim [qn]=qmi [mn]=mbim [mb]=mbim)
NAMES=(q m qn mn mb)
{
	printf '[device]\ncontrol-socket = %s\ndiscovery = no\n\n[dbus]\nenabled = no\n' "$E2E_TMP/control"
	for name in "${NAMES[@]}"; do
		printf '\n[modem.%s]\ndevice = sim:%s\ncontrol = %s\ncontrol-link = %s\n' \
			"$name" "$E2E_TMP/$name.sock" "${CONTROL[$name]}" "$E2E_TMP/$name.${CONTROL[$name]}"
	done
} >"$E2E_TMP/qmapd.conf"
for name in "${NAMES[@]}"; do
	# shellcheck disable=SC2086 # the arguments are words
	start_named_sim "$name" ${SIM_ARGS[$name]} --apn internet
done
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

wait_for 20 "five modems on the bus" modem_count_is 5
gen() { mmj -m "$1" | jq -r ".modem.generic$2"; }
gen_is() { [ "$(gen "$1" "$2")" = "$3" ]; }
retries() { gen "$1" '["unlock-retries"] | join(",")'; }
locks() { mmj -m "$1" | jq -r '.modem["3gpp"]["enabled-locks"] | join(",")'; }
locks_are() { [ "$(locks "$1")" = "$2" ]; }
unlocked() { gen_is "$1" .state registered && gen_is "$1" '["unlock-required"]' --; }
# expect_error NAME ERROR mmcli-args...: the call fails with ModemManager's ERROR.
expect_error() {
	local what=$1 err=$2 rc=0
	shift 2
	mm "$@" >/dev/null || rc=$?
	[ "$rc" -ne 0 ] || fail "$what: succeeded"
	tail -1 "$E2E_TMP/mmcli.stderr" | tee -a "$E2E_TMP/transcript"
	tail -1 "$E2E_TMP/mmcli.stderr" | grep -q "org.freedesktop.ModemManager1.Error.$err" ||
		fail "$what: not $err: $(tail -1 "$E2E_TMP/mmcli.stderr")"
}

codes() {
	local name=$1 M S
	M=$(modem_of "$name.${CONTROL[$name]}")
	[ -n "$M" ] || fail "$name: not on the bus"
	wait_for 20 "$name locked" gen_is "$M" .state locked
	expect_eq "$name: UnlockRequired" "$(gen "$M" '["unlock-required"]')" sim-pin
	expect_eq "$name: UnlockRetries" "$(retries "$M" | grep -o 'sim-pin ([0-9]*)')" "sim-pin (3)"
	S=$(gen "$M" .sim)
	[ "$S" != / ] && [ "$S" != -- ] || fail "$name: no SIM object while locked"

	# A wrong PIN, then the right one.
	expect_error "$name: wrong PIN" MobileEquipment.IncorrectPassword -i "$S" --pin=0000
	wait_for 5 "$name: two PIN tries left" eval '[ "$(retries "$M" | grep -o "sim-pin ([0-9]*)")" = "sim-pin (2)" ]'
	mm -i "$S" --pin="$PIN" >/dev/null || fail "$name: the right PIN: $(tail -1 "$E2E_TMP/mmcli.stderr")"
	wait_for 20 "$name unlocked" unlocked "$M"
	expect_eq "$name: EnabledFacilityLocks (PIN1 on)" "$(locks "$M")" sim
	echo "ok: $name: unlocked with the PIN after a wrong one"

	# Three wrong PINs block PIN1 (the card counts ChangePin's old PIN as any other).
	expect_error "$name: wrong PIN 1" MobileEquipment.IncorrectPassword -i "$S" --pin=0000 --change-pin=1111
	expect_error "$name: wrong PIN 2" MobileEquipment.IncorrectPassword -i "$S" --pin=0000 --change-pin=1111
	expect_error "$name: wrong PIN 3" MobileEquipment.SimPuk -i "$S" --pin=0000 --change-pin=1111
	wait_for 20 "$name PUK-locked" gen_is "$M" '["unlock-required"]' sim-puk
	expect_eq "$name: state" "$(gen "$M" .state)" locked
	expect_eq "$name: UnlockRetries (PUK)" "$(retries "$M" | grep -o 'sim-puk ([0-9]*)')" "sim-puk (10)"
	expect_error "$name: the PIN once blocked" MobileEquipment.SimPuk -i "$S" --pin="$PIN"
	echo "ok: $name: blocked by three wrong PINs"

	# A wrong PUK costs a PUK try; the right one with a new PIN unlocks.
	expect_error "$name: wrong PUK" MobileEquipment.IncorrectPassword -i "$S" --puk=87654321 --pin=1357
	wait_for 5 "$name: nine PUK tries left" eval '[ "$(retries "$M" | grep -o "sim-puk ([0-9]*)")" = "sim-puk (9)" ]'
	mm -i "$S" --puk="$PUK" --pin=1357 >/dev/null || fail "$name: the right PUK: $(tail -1 "$E2E_TMP/mmcli.stderr")"
	wait_for 20 "$name unlocked with the PUK" unlocked "$M"
	echo "ok: $name: recovered with the PUK"

	# PIN1 off and on, then changed: the old PIN no longer works, the new one does.
	mm -i "$S" --pin=1357 --disable-pin >/dev/null || fail "$name: DisablePin: $(tail -1 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "$name: no facility lock" locks_are "$M" ""
	mm -i "$S" --pin=1357 --enable-pin >/dev/null || fail "$name: EnablePin: $(tail -1 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "$name: SIM facility lock" locks_are "$M" sim
	mm -i "$S" --pin=1357 --change-pin=8642 >/dev/null || fail "$name: ChangePin: $(tail -1 "$E2E_TMP/mmcli.stderr")"
	expect_error "$name: the old PIN after ChangePin" MobileEquipment.IncorrectPassword -i "$S" --pin=1357 --disable-pin
	mm -i "$S" --pin=8642 --disable-pin >/dev/null || fail "$name: the new PIN: $(tail -1 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "$name: no facility lock after the new PIN" locks_are "$M" ""
	echo "ok: $name: EnablePin and ChangePin"
}

# failed NAME REASON SIM: the modem FAILED with StateFailedReason REASON, its Sim SIM.
failed() {
	local name=$1 M
	M=$(modem_of "$name.${CONTROL[$name]}")
	[ -n "$M" ] || fail "$name: not on the bus"
	wait_for 20 "$name failed" gen_is "$M" .state failed
	mm -m "$M" | tee -a "$E2E_TMP/transcript"
	expect_eq "$name: StateFailedReason" "$(gen "$M" '["state-failed-reason"]')" "$2"
	expect_eq "$name: Sim" "$(gen "$M" .sim)" "$3"
	echo "ok: $name: $2"
}

codes q
codes m
failed qn sim-missing --
failed mn sim-missing --
# A SIM the modem calls bad (MBIM BAD_SIM): sim-error (no SIM object: it tells no ICCID).
failed mb sim-error --
if [ -s "$E2E_TMP/mmcli.stderr" ] && grep -E "CRITICAL|WARNING" "$E2E_TMP/mmcli.stderr"; then
	fail "GLib warnings on mmcli's stderr"
fi
echo "ok: e2e-dbus-sim-lock"
