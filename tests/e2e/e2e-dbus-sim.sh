#!/bin/bash
# SPDX-License-Identifier: MIT
# What the modem and its SIM tell, through ModemManager's API, checked with mmcli (from the
# Debian package, unpacked) against what qmapd-sim was told to answer: hardware revision,
# capabilities, modes and bands (DMS, NAS), own number (not provisioned), unlock state and
# retries, facility locks, packet service state, the initial EPS bearer settings (WDS
# default profile), and the SIM's ICCID, IMSI, operator id and
# name read from its files through UIM. A second modem has firmware without the DMS UIM
# messages (profile mdm9x30) and a PIN-locked SIM: it still gets a SIM object, is LOCKED,
# refuses to connect with SimPin (Simple.Connect and Bearer.Connect), a wrong PIN is
# IncorrectPassword with one try less, the right one unlocks it and it connects. Bearer stats
# count attempts, failures and the time connected. No GLib warnings on mmcli's stderr. Needs
# root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need gdbus libglib2.0-bin
need_mmcli
e2e_setup_bus

PIN=2468
MSISDN=15550100
declare -A SIM_ARGS=(
	[a]="--net-address 198.51.100.1/32 --mux 1=192.0.2.2/24"
	[b]="--net-address 198.51.100.2/32 --mux 1=203.0.113.2/24 --profile mdm9x30 --sim-pin $PIN --msisdn $MSISDN"
)
start_modem_sim() {
	# shellcheck disable=SC2086 # the arguments are words
	start_named_sim "$1" ${SIM_ARGS[$1]} --apn internet
}

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control
discovery = no

[dbus]
enabled = no

[modem.a]
device = sim:$E2E_TMP/a.sock
control-link = $E2E_TMP/a.qmi

[modem.b]
device = sim:$E2E_TMP/b.sock
control-link = $E2E_TMP/b.qmi
CONF

start_modem_sim a
start_modem_sim b
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

wait_for 20 "two modems on the bus" modem_count_is 2
A=$(modem_of a.qmi)
B=$(modem_of b.qmi)
[ -n "$A" ] && [ -n "$B" ] || fail "modems a ($A) and b ($B) not both on the bus"
state_of() { mmj -m "$1" | jq -r '.modem.generic.state'; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
wait_for 20 "modem a registered" state_is "$A" registered
# The facts are read once the modem is ready; the SIM's a moment later.
sim_read() { [ "$(mmj -i "$(mmj -m "$A" | jq -r .modem.generic.sim)" | jq -r '.sim.properties["operator-name"]')" = "qmapd test" ]; }
wait_for 10 "modem a's SIM files read" sim_read
attach_read() { [ "$(mmj -m "$A" | jq -r '.modem["3gpp"].eps["initial-bearer"].settings.apn')" = internet ]; }
wait_for 10 "modem a's default profile read" attach_read

# ---- modem a: the default sim, PIN disabled ----
mm -m "$A" | tee -a "$E2E_TMP/transcript"
m=$(mmj -m "$A")
g() { jq -r "$1" <<<"$m"; }
expect_eq "HardwareRevision (DMS Get Hardware Revision)" "$(g '.modem.generic["hardware-revision"]')" 10000
expect_eq "SupportedCapabilities (DMS Get Capabilities: LTE)" \
	"$(g '.modem.generic["supported-capabilities"] | join(",")')" lte
expect_eq "CurrentCapabilities" "$(g '.modem.generic["current-capabilities"] | join(",")')" lte
expect_eq "SupportedModes" "$(g '.modem.generic["supported-modes"] | join(",")')" \
	"allowed: 4g; preferred: none"
expect_eq "CurrentModes (NAS mode preference LTE)" "$(g '.modem.generic["current-modes"]')" \
	"allowed: 4g; preferred: none"
expect_eq "SupportedBands (DMS LTE band capability)" \
	"$(g '.modem.generic["supported-bands"] | join(",")')" \
	"eutran-1,eutran-3,eutran-7,eutran-8,eutran-20,eutran-28"
expect_eq "CurrentBands (NAS LTE band preference)" \
	"$(g '.modem.generic["current-bands"] | join(",")')" \
	"eutran-1,eutran-3,eutran-7,eutran-8,eutran-20,eutran-28"
expect_eq "OwnNumbers (MSISDN not provisioned)" "$(g '.modem.generic["own-numbers"] | length')" 0
expect_eq "UnlockRequired" "$(g '.modem.generic["unlock-required"]')" --
expect_eq "UnlockRetries" "$(g '.modem.generic["unlock-retries"] | join(",")')" "sim-pin (3),sim-puk (10)"
expect_eq "EnabledFacilityLocks (PIN1 disabled)" "$(g '.modem["3gpp"]["enabled-locks"] | length')" 0
expect_eq "PacketServiceState" "$(g '.modem["3gpp"]["packet-service-state"]')" attached
expect_eq "InitialEpsBearerSettings APN (WDS default profile)" \
	"$(g '.modem["3gpp"].eps["initial-bearer"].settings.apn')" internet
expect_eq "InitialEpsBearerSettings IP type" \
	"$(g '.modem["3gpp"].eps["initial-bearer"].settings["ip-type"]')" ipv4v6
SIM_A=$(g .modem.generic.sim)
mm -i "$SIM_A" | tee -a "$E2E_TMP/transcript"
i=$(mmj -i "$SIM_A")
expect_eq "SIM ICCID" "$(jq -r '.sim.properties.iccid' <<<"$i")" 8999001000000000006
expect_eq "SIM IMSI" "$(jq -r '.sim.properties.imsi' <<<"$i")" 001010000000006
expect_eq "SIM OperatorIdentifier (IMSI + EF_AD)" "$(jq -r '.sim.properties["operator-code"]' <<<"$i")" 00101
expect_eq "SIM OperatorName (EF_SPN)" "$(jq -r '.sim.properties["operator-name"]' <<<"$i")" "qmapd test"
echo "ok: modem a: hardware revision, capabilities, modes, bands, locks, PS state, SIM files"

# ---- modem b: no DMS UIM, SIM locked with a PIN ----
wait_for 20 "modem b locked" state_is "$B" locked
mm -m "$B" | tee -a "$E2E_TMP/transcript"
m=$(mmj -m "$B")
expect_eq "b: UnlockRequired" "$(g '.modem.generic["unlock-required"]')" sim-pin
expect_eq "b: UnlockRetries" "$(g '.modem.generic["unlock-retries"] | join(",")')" "sim-pin (3),sim-puk (10)"
expect_eq "b: EnabledFacilityLocks" "$(g '.modem["3gpp"]["enabled-locks"] | join(",")')" sim
expect_eq "b: PacketServiceState (not registered)" "$(g '.modem["3gpp"]["packet-service-state"]')" detached
expect_eq "b: OwnNumbers (behind the PIN)" "$(g '.modem.generic["own-numbers"] | length')" 0
SIM_B=$(g .modem.generic.sim)
[ "$SIM_B" != / ] && [ -n "$SIM_B" ] || fail "firmware without DMS UIM: no SIM object"
i=$(mmj -i "$SIM_B")
expect_eq "b: SIM ICCID through UIM while locked" "$(jq -r '.sim.properties.iccid' <<<"$i")" 8999001000000000006
expect_eq "b: SIM IMSI unknown while locked" "$(jq -r '.sim.properties.imsi' <<<"$i")" --
rc=0
mm -m "$B" --simple-connect="apn=internet,ip-type=ipv4" >/dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "a PIN-locked modem connected"
tail -1 "$E2E_TMP/mmcli.stderr" | tee -a "$E2E_TMP/transcript"
tail -1 "$E2E_TMP/mmcli.stderr" | grep -q "org.freedesktop.ModemManager1.Error.MobileEquipment.SimPin" ||
	fail "connect while locked: not MobileEquipment.SimPin: $(tail -1 "$E2E_TMP/mmcli.stderr")"
# Bearer.Connect on a bearer created while locked: the same SimPin.
LOCKED_BEARER=$(mm -m "$B" --create-bearer="apn=internet,ip-type=ipv4" |
	grep -o '/org/freedesktop/ModemManager1/Bearer/[0-9]*') ||
	fail "CreateBearer while locked: $(tail -1 "$E2E_TMP/mmcli.stderr")"
# (gdbus: mmcli looks for bearers only on enabled modems.)
rc=0
gdbus call --system -d org.freedesktop.ModemManager1 -o "$LOCKED_BEARER" \
	-m org.freedesktop.ModemManager1.Bearer.Connect >/dev/null 2>"$E2E_TMP/gdbus.err" || rc=$?
[ "$rc" -ne 0 ] || fail "Bearer.Connect on a PIN-locked modem connected"
tee -a "$E2E_TMP/transcript" <"$E2E_TMP/gdbus.err"
grep -q "org.freedesktop.ModemManager1.Error.MobileEquipment.SimPin" "$E2E_TMP/gdbus.err" ||
	fail "Bearer.Connect while locked: not MobileEquipment.SimPin: $(cat "$E2E_TMP/gdbus.err")"
gdbus call --system -d org.freedesktop.ModemManager1 -o "$B" \
	-m org.freedesktop.ModemManager1.Modem.DeleteBearer "$LOCKED_BEARER" >/dev/null \
	2>"$E2E_TMP/gdbus.err" || fail "DeleteBearer of $LOCKED_BEARER: $(cat "$E2E_TMP/gdbus.err")"

rc=0
mm -i "$SIM_B" --pin=1111 >/dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "a wrong PIN was accepted"
tail -1 "$E2E_TMP/mmcli.stderr" | tee -a "$E2E_TMP/transcript"
tail -1 "$E2E_TMP/mmcli.stderr" |
	grep -q "org.freedesktop.ModemManager1.Error.MobileEquipment.IncorrectPassword" ||
	fail "wrong PIN: not IncorrectPassword: $(tail -1 "$E2E_TMP/mmcli.stderr")"
retries_are() { [ "$(mmj -m "$B" | jq -r '.modem.generic["unlock-retries"] | join(",")')" = "$1" ]; }
wait_for 5 "b: one PIN try less" retries_are "sim-pin (2),sim-puk (10)"
expect_eq "b: still locked after a wrong PIN" "$(state_of "$B")" locked
echo "ok: modem b: UIM-only firmware has a SIM object; locked; connect -> SimPin; wrong PIN -> IncorrectPassword, 2 tries left"

mm -i "$SIM_B" --pin="$PIN" | tee -a "$E2E_TMP/transcript" ||
	fail "the right PIN: $(tail -1 "$E2E_TMP/mmcli.stderr")"
wait_for 10 "b registered after the PIN" state_is "$B" registered
m=$(mmj -m "$B")
expect_eq "b: UnlockRequired after the PIN" "$(g '.modem.generic["unlock-required"]')" --
expect_eq "b: UnlockRetries after the PIN" "$(g '.modem.generic["unlock-retries"] | join(",")')" "sim-pin (3),sim-puk (10)"
expect_eq "b: EnabledFacilityLocks after the PIN" "$(g '.modem["3gpp"]["enabled-locks"] | join(",")')" sim
imsi_read() { [ "$(mmj -i "$SIM_B" | jq -r '.sim.properties.imsi')" = 001010000000006 ]; }
wait_for 10 "b: IMSI read after the PIN" imsi_read
own_number() { [ "$(mmj -m "$B" | jq -r '.modem.generic["own-numbers"] | join(",")')" = "$MSISDN" ]; }
wait_for 10 "b: own number read after the PIN" own_number
mm -i "$SIM_B" | tee -a "$E2E_TMP/transcript"
expect_eq "b: SIM OperatorIdentifier" "$(mmj -i "$SIM_B" | jq -r '.sim.properties["operator-code"]')" 00101
out=$(mm -m "$B" --simple-connect="apn=internet,ip-type=ipv4") ||
	fail "connect after the PIN: $(tail -2 "$E2E_TMP/mmcli.stderr")"
echo "$out" | tee -a "$E2E_TMP/transcript"
wait_for 10 "b connected" state_is "$B" connected
BEARER_B=$(mmj -m "$B" | jq -r '.modem.generic.bearers[0]')
mm -b "$BEARER_B" | tee -a "$E2E_TMP/transcript"
# mmcli leaves out zeros: the property itself, through gdbus.
stat() {
	gdbus call --system -d org.freedesktop.ModemManager1 -o "$1" \
		-m org.freedesktop.DBus.Properties.Get org.freedesktop.ModemManager1.Bearer Stats |
		grep -o "'$2': <uint32 [0-9]*>" | grep -o '[0-9]*>' | tr -d '>'
}
expect_eq "b: bearer stats attempts" "$(stat "$BEARER_B" attempts)" 1
expect_eq "b: bearer stats failed attempts" "$(stat "$BEARER_B" failed-attempts)" 0
# Stats are refreshed with the 2 s poll, as ModemManager refreshes them on a timer.
duration_at_least() { [ "$(stat "$BEARER_B" duration)" -ge "$1" ]; }
wait_for 5 "b: bearer stats duration >= 1 s" duration_at_least 1
mm -m "$B" --simple-disconnect >/dev/null || fail "--simple-disconnect on b"
echo "ok: modem b: the right PIN unlocks it (registered, IMSI, own number), then it connects"

# Stats of a bearer whose connects fail: the same settings reuse the bearer.
for _ in 1 2; do
	! mm -m "$A" --simple-connect="apn=nosuchapn,ip-type=ipv4" >/dev/null ||
		fail "a wrong APN connected"
done
BEARER_A=$(mmj -m "$A" | jq -r '.modem.generic.bearers[0]')
expect_eq "a: bearer stats attempts after two failures" "$(stat "$BEARER_A" attempts)" 2
expect_eq "a: bearer stats failed attempts" "$(stat "$BEARER_A" failed-attempts)" 2
expect_eq "a: bearer stats duration" "$(stat "$BEARER_A" duration)" 0
echo "ok: bearer stats: attempts, failed attempts, duration"

if grep -E "CRITICAL|WARNING" "$E2E_TMP/mmcli.stderr"; then
	fail "mmcli printed GLib warnings"
fi
if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "---- transcript"
cat "$E2E_TMP/transcript"
echo "PASS"
