#!/bin/bash
# SPDX-License-Identifier: MIT
# An MBIM modem (control = mbim) on ModemManager's D-Bus API, the same objects as a QMI one,
# driven by mmcli (from the Debian package, unpacked, never installed) on a private bus:
# mmcli -L, -m and -i show what DEVICE_CAPS, SUBSCRIBER_READY_STATUS, REGISTER_STATE and
# SIGNAL_STATE told; the primary port is an MBIM port; the config's mux is a connected bearer;
# --simple-connect brings up an MBIM session on a new mux whose Ip4Config/Ip6Config come from
# IP_CONFIGURATION, with traffic once the address is on the device; a wrong APN fails with
# MobileEquipment.MissingOrUnknownApn (the sim's nw_error 27); a network drop leaves the
# bearer disconnected with RegularDeactivation; --simple-disconnect removes the mux. Needs
# root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/mbim-proxy libmbim-proxy
need gdbus libglib2.0-bin
need_mmcli
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

start_system_bus

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25 --mux 2=203.0.113.2/24,2001:db8:2::2/64)
SIM_ALWAYS_CONNECTED=no
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control-socket = $E2E_TMP/control
discovery = no

[dbus]
enabled = no

[modem.a]
device = sim:$E2E_TMP/sim.sock
control = mbim
control-link = $E2E_TMP/a.mbim

[modem.a.mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32
CONF

start_sim --mbim --apn internet --msisdn +15555550100
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

modem_paths() { mmj -L | jq -r '."modem-list"[]'; }
modem_count_is() { [ "$(modem_paths | wc -l)" -eq "$1" ]; }
wait_for 20 "the MBIM modem on the bus" modem_count_is 1
MODEM=$(modem_paths)
modem_state() { mmj -m "$MODEM" | jq -r '.modem.generic.state'; }
state_is() { [ "$(modem_state)" = "$1" ]; }
wait_for 30 "modem connected (the config's mux)" state_is connected
mm -m "$MODEM" | tee -a "$E2E_TMP/transcript"
m=$(mmj -m "$MODEM")
expect_eq "Model (DEVICE_CAPS hardware)" "$(jq -r .modem.generic.model <<<"$m")" qmapd-sim
expect_eq "Revision (DEVICE_CAPS firmware)" "$(jq -r .modem.generic.revision <<<"$m")" "qmapd-sim MBIM 1"
expect_eq "HardwareRevision (DEVICE_CAPS hardware)" "$(jq -r '.modem.generic["hardware-revision"]' <<<"$m")" qmapd-sim
expect_eq "EquipmentIdentifier (DEVICE_CAPS device id)" "$(jq -r '.modem.generic["equipment-identifier"]' <<<"$m")" 350000000000006
expect_eq "PrimaryPort" "$(jq -r '.modem.generic["primary-port"]' <<<"$m")" a.mbim
jq -e '.modem.generic.ports | index("a.mbim (mbim)")' <<<"$m" >/dev/null ||
	fail "the control link is not an MBIM port: $(jq -c .modem.generic.ports <<<"$m")"
expect_eq "3GPP registration" "$(jq -r '.modem["3gpp"]["registration-state"]' <<<"$m")" home
expect_eq "3GPP operator" "$(jq -r '.modem["3gpp"]["operator-code"]' <<<"$m")" 00101
expect_eq "3GPP packet service (PACKET_SERVICE)" "$(jq -r '.modem["3gpp"]["packet-service-state"]' <<<"$m")" attached
expect_eq "access technology" "$(jq -r '.modem.generic["access-technologies"][0]' <<<"$m")" lte
expect_eq "signal quality (SIGNAL_STATE -73 dBm)" "$(jq -r '.modem.generic["signal-quality"].value' <<<"$m")" 64
expect_eq "OwnNumbers (SUBSCRIBER_READY_STATUS telephone numbers)" "$(jq -r '.modem.generic["own-numbers"][0]' <<<"$m")" +15555550100
expect_eq "PowerState (RADIO_STATE)" "$(jq -r '.modem.generic["power-state"]' <<<"$m")" on
CONFIG_BEARER=$(jq -r '.modem.generic.bearers[0]' <<<"$m")
b=$(mmj -b "$CONFIG_BEARER")
expect_eq "the config's mux as a bearer: connected" "$(jq -r .bearer.status.connected <<<"$b")" yes
expect_eq "the config's mux as a bearer: address" "$(jq -r '.bearer["ipv4-config"].address' <<<"$b")" 192.0.2.2
SIM=$(jq -r '.modem.generic.sim' <<<"$m")
i=$(mmj -i "$SIM")
expect_eq "SIM ICCID (SUBSCRIBER_READY_STATUS)" "$(jq -r '.sim.properties.iccid' <<<"$i")" 8900100000000000001
expect_eq "SIM IMSI (SUBSCRIBER_READY_STATUS)" "$(jq -r '.sim.properties.imsi' <<<"$i")" 001010000000001
expect_eq "SIM operator id (HOME_PROVIDER)" "$(jq -r '.sim.properties["operator-code"]' <<<"$i")" 00101
expect_eq "SIM operator name (HOME_PROVIDER)" "$(jq -r '.sim.properties["operator-name"]' <<<"$i")" "qmapd test"
echo "ok: mmcli -L / -m / -i show the MBIM modem's identity; the config's mux is a connected bearer"

# Simple.Connect: an MBIM session (id 1) on a new mux (2).
t0=$(date +%s%N)
mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4v6" >/dev/null ||
	fail "mmcli --simple-connect failed: $(tail -3 "$E2E_TMP/mmcli.stderr")"
echo "mmcli --simple-connect (MBIM, ipv4v6) returned after $((($(date +%s%N) - t0) / 1000000)) ms" |
	tee -a "$E2E_TMP/transcript"
BEARER=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]' | grep -vx "$CONFIG_BEARER")
b=$(mmj -b "$BEARER")
IFACE=$(jq -r .bearer.status.interface <<<"$b")
expect_eq "bearer interface" "$IFACE" a.2
ADDR4="$(jq -r '.bearer["ipv4-config"].address' <<<"$b")/$(jq -r '.bearer["ipv4-config"].prefix' <<<"$b")"
expect_eq "Ip4Config (IP_CONFIGURATION of session 1)" "$ADDR4" 203.0.113.2/24
expect_eq "Ip6Config address" "$(jq -r '.bearer["ipv6-config"].address' <<<"$b")" 2001:db8:2::2
ip -n "$NS_HOST" addr add "$ADDR4" dev "$IFACE"
ip -n "$NS_HOST" link set "$IFACE" up
ip -n "$NS_HOST" route add 198.51.100.2/32 dev "$IFACE"
in_host ping -c 3 -i 0.2 -W 2 -I "$IFACE" 198.51.100.2 >/dev/null || fail "ping through $IFACE"
echo "ok: --simple-connect: MBIM session on $IFACE with $ADDR4; ping through it"

# A wrong APN: the sim's FAILURE with nw_error 27 as ModemManager names it.
rc=0
mm -m "$MODEM" --simple-connect="apn=nosuchapn,ip-type=ipv4" >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "a wrong APN connected"
grep -q "org.freedesktop.ModemManager1.Error.MobileEquipment.MissingOrUnknownApn" \
	"$E2E_TMP/mmcli.stderr" || fail "wrong APN: $(tail -2 "$E2E_TMP/mmcli.stderr")"
echo "ok: wrong APN -> MobileEquipment.MissingOrUnknownApn"

# The network drops every session: the D-Bus bearer stays down with the reason.
kill -USR2 "$SIM_PID"
bearer_connected() { [ "$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" = "$1" ]; }
wait_for 10 "the D-Bus bearer disconnected by the drop" bearer_connected no
err=$(gdbus call --system -d org.freedesktop.ModemManager1 -o "$BEARER" \
	-m org.freedesktop.DBus.Properties.Get org.freedesktop.ModemManager1.Bearer ConnectionError)
[[ $err == *org.freedesktop.ModemManager1.Error.MobileEquipment.RegularDeactivation* ]] ||
	fail "ConnectionError after the drop: $err"
echo "ok: network drop -> bearer Connected=false, ConnectionError RegularDeactivation"

mm -m "$MODEM" --simple-disconnect >/dev/null || fail "mmcli --simple-disconnect"
! ip -n "$NS_HOST" link show "$IFACE" >/dev/null 2>&1 || fail "$IFACE still exists after disconnect"
echo "ok: --simple-disconnect removes the mux"
if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "---- transcript"
cat "$E2E_TMP/transcript"
echo "e2e-dbus-mbim: passed"
