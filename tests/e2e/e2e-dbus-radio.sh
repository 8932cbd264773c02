#!/bin/bash
# SPDX-License-Identifier: MIT
# Modes, bands, network scan and manual registration, and the Signal interface, with mmcli
# (from the Debian package, unpacked) on a private bus, on a QMI and an MBIM modem of
# qmapd-sim. QMI: --set-allowed-modes / --set-current-bands go to the sim (NAS Set System
# Selection Preference) and come back from it (Get); bands the modem lacks are refused with
# Core.Unsupported as ModemManager does; --3gpp-scan lists the sim's three networks;
# --3gpp-register-in-operator moves the modem to another network, a forbidden one is denied
# (MobileEquipment.NetworkNotAllowed), --3gpp-register-home goes back; --signal-setup=1 then
# --signal-get shows the sim's LTE values and follows them when the test changes them
# (--signal-file); --time answers the sim's clock in its zone (NAS Get Network Time). MBIM (no
# vendor extensions, as ModemManager's generic MBIM modem): modes and bands answer
# Core.Unsupported, scan and registration go through VISIBLE_PROVIDERS and REGISTER_STATE,
# Time is not exported, and the Signal interface has SIGNAL_STATE's RSSI. Needs root;
# namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need /usr/libexec/mbim-proxy libmbim-proxy
need gdbus libglib2.0-bin
need_mmcli
e2e_setup_bus
# expect_error WHAT ERROR mmcli-args...: the call fails with ModemManager's ERROR.
expect_error() {
	local what=$1 error=$2 rc=0
	shift 2
	mm "$@" >/dev/null 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || fail "$what: succeeded"
	expect_eq "$what" "$(last_error)" "org.freedesktop.ModemManager1.Error.$error"
}

SIGNAL="$E2E_TMP/signal"
SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25)
write_qmi_mbim_config

start_sim --apn internet --signal-file "$SIGNAL"
start_mbim_sim --mux 1=203.0.113.2/25 --apn internet
start_qmapd_dbus "$E2E_TMP/qmapd.conf"
find_qmi_mbim_modems
g() { mmj -m "$1" | jq -r "$2"; }
reg_is() { [ "$(g "$1" '.modem["3gpp"]["registration-state"]')" = "$2" ]; }
bands_are() { [ "$(g "$Q" '.modem.generic["current-bands"] | join(",")')" = "$1" ]; }
ALL_BANDS="eutran-1,eutran-3,eutran-7,eutran-8,eutran-20,eutran-28"
wait_for 20 "modem q registered" reg_is "$Q" home
wait_for 10 "modem q's bands read" bands_are "$ALL_BANDS"

ifaces() { gdbus introspect --system --dest org.freedesktop.ModemManager1 --object-path "$1"; }

# ---- modes and bands (QMI) ----
mm -m "$Q" --set-allowed-modes=4g >/dev/null ||
	fail "--set-allowed-modes=4g: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "CurrentModes after --set-allowed-modes=4g" "$(g "$Q" '.modem.generic["current-modes"]')" \
	"allowed: 4g; preferred: none"
grep -q "NAS: system selection mode 0x10" "$E2E_TMP/sim.log" ||
	fail "the sim was not asked for mode preference LTE"
expect_error "--set-allowed-modes=3g (the modem has LTE only)" Core.Unsupported \
	-m "$Q" --set-allowed-modes=3g
echo "ok: --set-allowed-modes 4g set through NAS, 3g refused as unsupported"

mm -m "$Q" --set-current-bands="eutran-3|eutran-20" >/dev/null ||
	fail "--set-current-bands: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "CurrentBands read back from the sim" \
	"$(g "$Q" '.modem.generic["current-bands"] | join(",")')" "eutran-3,eutran-20"
grep -q "NAS: system selection mode 0x10 LTE bands 0x80004$" "$E2E_TMP/sim.log" ||
	fail "the sim did not get LTE bands 3 and 20"
expect_error "--set-current-bands=eutran-2 (not supported)" Core.Unsupported \
	-m "$Q" --set-current-bands=eutran-2
expect_eq "CurrentBands unchanged by a refusal" \
	"$(g "$Q" '.modem.generic["current-bands"] | join(",")')" "eutran-3,eutran-20"
mm -m "$Q" --set-current-bands=any >/dev/null ||
	fail "--set-current-bands=any: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "CurrentBands after any" "$(g "$Q" '.modem.generic["current-bands"] | join(",")')" \
	"$ALL_BANDS"
echo "ok: --set-current-bands set, read back, unsupported band refused, any restores"

# ---- scan and registration (QMI) ----
SCAN=$(mmj -m "$Q" --3gpp-scan --timeout=60) ||
	fail "--3gpp-scan: $(tail -2 "$E2E_TMP/mmcli.stderr")"
echo "$SCAN" >>"$E2E_TMP/transcript"
networks=$(jq -r '.modem["3gpp"]["scan-networks"][]' <<<"$SCAN")
expect_eq "networks found" "$(wc -l <<<"$networks")" 3
grep -q "operator-code: 00101, operator-name: Test Network, access-technologies: lte, availability: current" <<<"$networks" ||
	fail "scan: no current 00101: $networks"
grep -q "operator-code: 00102, operator-name: Other Network, access-technologies: lte, availability: available" <<<"$networks" ||
	fail "scan: no available 00102: $networks"
grep -q "operator-code: 00103, operator-name: Barred Network, access-technologies: lte, availability: forbidden" <<<"$networks" ||
	fail "scan: no forbidden 00103: $networks"
echo "ok: --3gpp-scan lists current, available and forbidden networks with their technology"

# register_checks MODEM: manual registration in 00102, the barred 00103 denied, home again.
register_checks() {
	local X=$1
	op_is() { [ "$(g "$X" '.modem["3gpp"]["operator-code"]')" = "$1" ]; }
	mm -m "$X" --3gpp-register-in-operator=00102 >/dev/null ||
		fail "modem $X --3gpp-register-in-operator=00102: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "modem $X registered in 00102" op_is 00102
	expect_eq "modem $X operator name in 00102" "$(g "$X" '.modem["3gpp"]["operator-name"]')" \
		"Other Network"
	expect_error "modem $X --3gpp-register-in-operator=00103 (forbidden)" \
		MobileEquipment.NetworkNotAllowed -m "$X" --3gpp-register-in-operator=00103
	wait_for 10 "modem $X denied" reg_is "$X" denied
	expect_error "modem $X --3gpp-register-in-operator=abc" Core.InvalidArgs \
		-m "$X" --3gpp-register-in-operator=abc
	mm -m "$X" --3gpp-register-home >/dev/null ||
		fail "modem $X --3gpp-register-home: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	wait_for 10 "modem $X home again" reg_is "$X" home
	expect_eq "modem $X operator after --3gpp-register-home" \
		"$(g "$X" '.modem["3gpp"]["operator-code"]')" 00101
}
register_checks "$Q"
echo "ok: manual registration in 00102, 00103 denied, automatic back home"

# ---- signal (QMI) ----
sig() { mmj -m "$Q" --signal-get | jq -r ".modem.signal.lte.$1"; }
sig_is() { [ "$(sig rssi)/$(sig rsrq)/$(sig rsrp)/$(sig snr)" = "$1" ]; }
expect_eq "Lte before --signal-setup" "$(sig rssi)" "--"
# Every second: a changed value shows at the second poll after the change (each poll shows
# the answer to the one before), so the rate is what the wait below waits.
mm -m "$Q" --signal-setup=1 >/dev/null || fail "--signal-setup=1: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "Rate" "$(mmj -m "$Q" --signal-get | jq -r '.modem.signal.refresh.rate')" 1
wait_for 12 "the sim's LTE signal" sig_is "-65.00/-9.00/-95.00/13.00"
echo "-71 -12 -104 35" >"$SIGNAL"
wait_for 12 "the changed LTE signal" sig_is "-71.00/-12.00/-104.00/3.50"
mm -m "$Q" --signal-setup=0 >/dev/null || fail "--signal-setup=0: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "Lte after polling stopped" "$(sig rssi)" "--"
echo "ok: --signal-setup polls NAS Get Signal Info, --signal-get shows the sim's values"

# ---- network time (QMI: NAS Get Network Time, the sim's clock in UTC+01:00) ----
has_time() { ifaces "$Q" | grep -q "interface org.freedesktop.ModemManager1.Modem.Time "; }
wait_for 10 "modem q's Time interface" has_time
T=$(mmj -m "$Q" --time) || fail "--time: $(tail -2 "$E2E_TMP/mmcli.stderr")"
echo "$T" >>"$E2E_TMP/transcript"
net_time=$(jq -r '.modem.time.current' <<<"$T")
[[ "$net_time" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\+01(:00)?$ ]] ||
	fail "--time: '$net_time' is not ISO 8601 in +01"
# The same instant as this host's clock (the sim's), within a few seconds.
skew=$(($(date -d "$net_time" +%s) - $(date +%s)))
[ "${skew#-}" -le 5 ] || fail "--time: $net_time is $skew s from the host's clock"
expect_eq "NetworkTimezone offset" "$(jq -r '.modem.timezone.current' <<<"$T")" 60
expect_eq "NetworkTimezone dst-offset" "$(jq -r '.modem.time["dst-offset"]' <<<"$T")" 0
echo "ok: --time answers the network's time in its zone"

# ---- MBIM (basic commands, no extensions) ----
expect_error "MBIM --set-allowed-modes" Core.Unsupported -m "$M" --set-allowed-modes=4g
expect_error "MBIM --set-current-bands" Core.Unsupported -m "$M" --set-current-bands=eutran-1
echo "ok: MBIM --set-allowed-modes and --set-current-bands answer Unsupported"
# VISIBLE_PROVIDERS: the same networks, technology unknown (MBIM 1.0 does not say it).
SCAN=$(mmj -m "$M" --3gpp-scan --timeout=60) ||
	fail "MBIM --3gpp-scan: $(tail -2 "$E2E_TMP/mmcli.stderr")"
echo "$SCAN" >>"$E2E_TMP/transcript"
networks=$(jq -r '.modem["3gpp"]["scan-networks"][]' <<<"$SCAN")
expect_eq "MBIM networks found" "$(wc -l <<<"$networks")" 3
for want in "00101, operator-name: Test Network, .*availability: current" \
	"00102, operator-name: Other Network, .*availability: available" \
	"00103, operator-name: Barred Network, .*availability: forbidden"; do
	grep -q "operator-code: $want" <<<"$networks" || fail "MBIM scan: no $want: $networks"
done
echo "ok: MBIM --3gpp-scan lists VISIBLE_PROVIDERS"
register_checks "$M"
echo "ok: MBIM registration through REGISTER_STATE set"
if ifaces "$M" | grep -q "interface org.freedesktop.ModemManager1.Modem.Time "; then
	fail "modem m exports a Time interface it cannot serve"
fi
echo "ok: MBIM has no Time interface"
# MBIM 1.0's SIGNAL_STATE: the RSSI alone, in the dict of the radio in use (LTE).
mm -m "$M" --signal-setup=5 >/dev/null || fail "MBIM --signal-setup=5: $(tail -2 "$E2E_TMP/mmcli.stderr")"
msig() { mmj -m "$M" --signal-get | jq -r ".modem.signal.lte.$1"; }
msig_is() { [ "$(msig rssi)/$(msig rsrp)" = "$1" ]; }
wait_for 12 "the MBIM sim's RSSI in Lte" msig_is "-73.00/--"
echo "ok: MBIM --signal-get shows SIGNAL_STATE's RSSI as LTE's"

if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "e2e-dbus-radio: passed"
