#!/bin/bash
# SPDX-License-Identifier: MIT
# ModemManager's D-Bus API, driven by ModemManager's own client: mmcli (from the Debian
# package, unpacked, never installed) against qmapd + qmapd-sim on a private bus with a
# system-bus-like policy. Checks: mmcli -L, -m and -i show the sim's identity and state; a mux
# of the config is a bearer; --simple-connect creates a multiplexed bearer whose device and
# Ip4Config are the simulated network's, and traffic passes once the address is put on the
# device as NetworkManager would (qmapd does not); qmapctl status shows the bearer; a wrong
# APN fails with ModemManager's MobileEquipment error name; a network-side drop leaves the
# bearer disconnected with its ConnectionError and the modem registered; --simple-disconnect
# removes the mux; a second modem appears on the bus when its sim starts and leaves when it
# stops; with qmapd's D-Bus policy an unprivileged caller reads but cannot connect. Needs
# root; namespaces it creates and deletes.
source "$(dirname "$0")/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need dbus-daemon dbus
need gdbus libglib2.0-bin
need jq jq
MMCLI=$(need_unpacked modemmanager usr/bin/mmcli) || exit $?
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

start_system_bus
mm() { "$MMCLI" "$@" 2>>"$E2E_TMP/mmcli.stderr"; }
mmj() { mm -J "$@"; }

declare -A SIM_ARGS=(
	[a]="--net-address 198.51.100.1/32 --net-address 198.51.100.2/32 --mux 1=192.0.2.2/25 --mux 2=203.0.113.2/24,2001:db8:2::2/64 --mux 3=203.0.113.130/25"
	[b]="--net-address 198.51.100.3/32 --mux 1=192.0.2.130/32"
)
declare -A SIM_PIDS=()
start_modem_sim() {
	local name=$1
	rm -f "$E2E_TMP/$name.sock"
	# shellcheck disable=SC2086 # the arguments are words
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/$name.sock" --netdev "simnet-$name" \
		${SIM_ARGS[$name]} --apn internet --stats-file "$E2E_TMP/sim-$name.stats" \
		>>"$E2E_TMP/sim-$name.log" 2>&1 &
	SIM_PIDS[$name]=$!
	E2E_PIDS+=($!)
	wait_for 10 "qmapd-sim $name's socket" test -S "$E2E_TMP/$name.sock"
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

[modem.a.mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32

[modem.b]
device = sim:$E2E_TMP/b.sock
control-link = $E2E_TMP/b.qmi
CONF

start_modem_sim a
# [dbus] enabled = no in the file; the option wins, as the tests need.
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

modem_paths() { mmj -L | jq -r '."modem-list"[]'; }
modem_count_is() { [ "$(modem_paths | wc -l)" -eq "$1" ]; }
wait_for 20 "one modem on the bus" modem_count_is 1
MODEM=$(modem_paths)
expect_eq "modem path" "$MODEM" /org/freedesktop/ModemManager1/Modem/0
mm -L | tee -a "$E2E_TMP/transcript"
modem_state() { mmj -m "$MODEM" | jq -r '.modem.generic.state'; }
state_is() { [ "$(modem_state)" = "$1" ]; }
# The config's mux connects by itself: the modem is connected.
wait_for 30 "modem connected (the config's mux)" state_is connected
mm -m "$MODEM" | tee -a "$E2E_TMP/transcript"
m=$(mmj -m "$MODEM")
expect_eq "Manufacturer" "$(jq -r .modem.generic.manufacturer <<<"$m")" qmapd-sim
expect_eq "Model" "$(jq -r .modem.generic.model <<<"$m")" "Simulated QMAP modem"
expect_eq "EquipmentIdentifier" "$(jq -r '.modem.generic["equipment-identifier"]' <<<"$m")" 350000000000006
expect_eq "3GPP IMEI" "$(jq -r '.modem["3gpp"].imei' <<<"$m")" 350000000000006
expect_eq "Plugin" "$(jq -r .modem.generic.plugin <<<"$m")" qmapd
expect_eq "PrimaryPort" "$(jq -r '.modem.generic["primary-port"]' <<<"$m")" a.qmi
jq -e '.modem.generic.ports | index("a.1 (net)")' <<<"$m" >/dev/null ||
	fail "the config's mux device is not a NET port: $(jq -c .modem.generic.ports <<<"$m")"
expect_eq "3GPP registration" "$(jq -r '.modem["3gpp"]["registration-state"]' <<<"$m")" home
expect_eq "bearers before connecting" "$(jq -r '.modem.generic.bearers | length' <<<"$m")" 1
CONFIG_BEARER=$(jq -r '.modem.generic.bearers[0]' <<<"$m")
b=$(mmj -b "$CONFIG_BEARER")
expect_eq "the config's mux as a bearer: interface" "$(jq -r .bearer.status.interface <<<"$b")" a.1
expect_eq "the config's mux as a bearer: connected" "$(jq -r .bearer.status.connected <<<"$b")" yes
expect_eq "the config's mux as a bearer: address" "$(jq -r '.bearer["ipv4-config"].address' <<<"$b")" 192.0.2.2
SIM=$(jq -r '.modem.generic.sim' <<<"$m")
expect_eq "Modem.Sim" "$SIM" /org/freedesktop/ModemManager1/SIM/0
mm -i "$SIM" | tee -a "$E2E_TMP/transcript"
i=$(mmj -i "$SIM")
expect_eq "SIM ICCID (DMS UIM)" "$(jq -r '.sim.properties.iccid' <<<"$i")" 8999001000000000006
expect_eq "SIM IMSI (DMS UIM)" "$(jq -r '.sim.properties.imsi' <<<"$i")" 001010000000006
expect_eq "SIM active" "$(jq -r '.sim.properties.active' <<<"$i")" yes
echo "ok: mmcli -L / -m / -i show the sim's identity; the config's mux is a connected bearer"

# Simple.Connect: a new multiplexed bearer on mux 2; returns once the session is up.
t0=$(date +%s%N)
out=$(mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4v6") ||
	fail "mmcli --simple-connect failed: $(tail -3 "$E2E_TMP/mmcli.stderr")"
echo "$out" | tee -a "$E2E_TMP/transcript"
echo "mmcli --simple-connect (ipv4v6) returned after $((($(date +%s%N) - t0) / 1000000)) ms" |
	tee -a "$E2E_TMP/transcript"
BEARER=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]' | grep -vx "$CONFIG_BEARER")
[ -n "$BEARER" ] || fail "no new bearer after --simple-connect"
mm -b "$BEARER" | tee -a "$E2E_TMP/transcript"
b=$(mmj -b "$BEARER")
expect_eq "bearer connected" "$(jq -r .bearer.status.connected <<<"$b")" yes
expect_eq "bearer multiplexed" "$(jq -r .bearer.status.multiplexed <<<"$b")" yes
IFACE=$(jq -r .bearer.status.interface <<<"$b")
expect_eq "bearer interface" "$IFACE" a.2
expect_eq "Ip4Config method" "$(jq -r '.bearer["ipv4-config"].method' <<<"$b")" static
ADDR4=$(jq -r '.bearer["ipv4-config"].address' <<<"$b")
PREFIX4=$(jq -r '.bearer["ipv4-config"].prefix' <<<"$b")
expect_eq "Ip4Config address (the sim's for mux 2)" "$ADDR4/$PREFIX4" 203.0.113.2/24
expect_eq "Ip6Config address" "$(jq -r '.bearer["ipv6-config"].address' <<<"$b")" 2001:db8:2::2
expect_eq "modem state" "$(modem_state)" connected
# qmapd put nothing on the device: that is the client's job.
[[ $(ip -n "$NS_HOST" -o addr show dev "$IFACE") != *203.0.113.2* ]] ||
	fail "qmapd configured $IFACE itself"
st=$("${CTL[@]}" -j status)
expect_eq "qmapctl status: the D-Bus bearer's mux" \
	"$(jq -r '.modems[] | select(.name == "a") | .muxes[] | select(.id == 2) | .state + " " + .["managed-by"]' <<<"$st")" \
	"connected dbus"
# As NetworkManager would: the address and a route from Ip4Config.
ip -n "$NS_HOST" addr add "$ADDR4/$PREFIX4" dev "$IFACE"
ip -n "$NS_HOST" link set "$IFACE" up
ip -n "$NS_HOST" route add 198.51.100.2/32 dev "$IFACE"
in_host ping -c 3 -i 0.2 -W 2 -I "$IFACE" 198.51.100.2 >/dev/null || fail "ping through $IFACE"
echo "ok: --simple-connect: $BEARER on $IFACE with $ADDR4/$PREFIX4; ping through it"

# A second bearer at once: its own mux and device, traffic on both.
mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4" >/dev/null ||
	fail "second --simple-connect: $(tail -2 "$E2E_TMP/mmcli.stderr")"
BEARER2=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]' | grep -vx -e "$CONFIG_BEARER" -e "$BEARER")
b=$(mmj -b "$BEARER2")
IFACE2=$(jq -r .bearer.status.interface <<<"$b")
expect_eq "second bearer interface" "$IFACE2" a.3
ADDR2="$(jq -r '.bearer["ipv4-config"].address' <<<"$b")/$(jq -r '.bearer["ipv4-config"].prefix' <<<"$b")"
expect_eq "second bearer Ip4Config" "$ADDR2" 203.0.113.130/25
ip -n "$NS_HOST" addr add "$ADDR2" dev "$IFACE2"
ip -n "$NS_HOST" link set "$IFACE2" up
ip -n "$NS_HOST" route add 198.51.100.2/32 dev "$IFACE2" metric 10
in_host ping -c 3 -i 0.2 -W 2 -I "$IFACE" 198.51.100.2 >/dev/null || fail "ping through $IFACE"
in_host ping -c 3 -i 0.2 -W 2 -I "$IFACE2" 198.51.100.2 >/dev/null || fail "ping through $IFACE2"
mm -b "$BEARER2" --disconnect >/dev/null || fail "mmcli -b $BEARER2 --disconnect"
! ip -n "$NS_HOST" link show "$IFACE2" >/dev/null 2>&1 || fail "$IFACE2 stays after Bearer.Disconnect"
mm -m "$MODEM" --delete-bearer="$BEARER2" >/dev/null || fail "mmcli --delete-bearer"
echo "ok: two multiplexed bearers at once ($IFACE, $IFACE2), traffic on both; Bearer.Disconnect, DeleteBearer"

# The policy: anyone may read, only root may connect.
need setpriv util-linux
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$MMCLI" "$@"; }
as_nobody -J -m "$MODEM" | jq -e '.modem.generic.state' >/dev/null || fail "unprivileged mmcli -m refused"
rc=0
out=$(as_nobody -m "$MODEM" --simple-connect="apn=internet" 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "an unprivileged caller connected"
[[ $out == *org.freedesktop.DBus.Error.AccessDenied* ]] || fail "unprivileged connect: $out"
echo "ok: the policy: an unprivileged caller reads but cannot connect"

# A wrong APN: ModemManager's error name for 3GPP cause 27.
rc=0
out=$(mm -m "$MODEM" --simple-connect="apn=nosuchapn,ip-type=ipv4" 2>&1) || rc=$?
tail -2 "$E2E_TMP/mmcli.stderr" | tee -a "$E2E_TMP/transcript"
[ "$rc" -ne 0 ] || fail "a wrong APN connected"
grep -q "org.freedesktop.ModemManager1.Error.MobileEquipment.MissingOrUnknownApn" \
	"$E2E_TMP/mmcli.stderr" || fail "wrong APN: not MissingOrUnknownApn: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "modem state after the failed connect" "$(modem_state)" connected
echo "ok: wrong APN -> MobileEquipment.MissingOrUnknownApn"

# Invalid input is refused with ModemManager's error, and qmapd carries on.
rc=0
gdbus call --system -d org.freedesktop.ModemManager1 -o "$MODEM" \
	-m org.freedesktop.ModemManager1.Modem.Simple.Connect "{'apn': <42>}" \
	>/dev/null 2>"$E2E_TMP/gdbus.err" || rc=$?
[ "$rc" -ne 0 ] || fail "an apn of type int was taken"
grep -q "org.freedesktop.ModemManager1.Error.Core.InvalidArgs" "$E2E_TMP/gdbus.err" ||
	fail "apn=<42>: not Core.InvalidArgs: $(cat "$E2E_TMP/gdbus.err")"
rc=0
gdbus call --system -d org.freedesktop.ModemManager1 -o "$MODEM" \
	-m org.freedesktop.ModemManager1.Modem.Simple.Disconnect /org/freedesktop/ModemManager1/Bearer/99 \
	>/dev/null 2>"$E2E_TMP/gdbus.err" || rc=$?
grep -q "org.freedesktop.ModemManager1.Error.Core.NotFound" "$E2E_TMP/gdbus.err" ||
	fail "Disconnect of an unknown bearer: not Core.NotFound: $(cat "$E2E_TMP/gdbus.err")"
echo "ok: invalid requests get ModemManager's errors"

# The config's mux removed with qmapctl leaves the bus; the D-Bus bearer stays.
"${CTL[@]}" -m a mux del 1 >/dev/null || fail "qmapctl mux del 1"
bearers=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]')
! grep -qx "$CONFIG_BEARER" <<<"$bearers" || fail "$CONFIG_BEARER stays after mux del"
grep -qx "$BEARER" <<<"$bearers" || fail "the D-Bus bearer $BEARER went away"
bearer_gone() { ! mm -b "$CONFIG_BEARER" >/dev/null 2>&1; }
wait_for 5 "$CONFIG_BEARER unexported" bearer_gone
echo "ok: the config's mux removed with qmapctl left the bus"

# The network drops every session: the D-Bus bearer stays down with the reason (its client
# decides about reconnecting) and the modem is registered.
kill -USR2 "${SIM_PIDS[a]}"
bearer_connected() { [ "$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" = "$1" ]; }
wait_for 10 "the D-Bus bearer disconnected by the drop" bearer_connected no
err=$(gdbus call --system -d org.freedesktop.ModemManager1 -o "$BEARER" \
	-m org.freedesktop.DBus.Properties.Get org.freedesktop.ModemManager1.Bearer ConnectionError)
echo "ConnectionError: $err" | tee -a "$E2E_TMP/transcript"
[[ $err == *org.freedesktop.ModemManager1.Error.MobileEquipment.RegularDeactivation* ]] ||
	fail "ConnectionError after the drop: $err"
wait_for 10 "modem registered after the drop" state_is registered
echo "ok: network drop -> bearer Connected=false, ConnectionError set, modem registered"

# Disconnect: the mux goes; again is fine (idempotent).
mm -m "$MODEM" --simple-disconnect >/dev/null || fail "mmcli --simple-disconnect"
mm -m "$MODEM" --simple-disconnect >/dev/null || fail "second --simple-disconnect"
! ip -n "$NS_HOST" link show "$IFACE" >/dev/null 2>&1 || fail "$IFACE still exists after disconnect"
expect_eq "modem state after disconnect" "$(modem_state)" registered
echo "ok: --simple-disconnect removes the mux, twice is fine"

# A second modem appears on the bus with its sim, and leaves with it.
gdbus monitor --system -d org.freedesktop.ModemManager1 -o /org/freedesktop/ModemManager1 \
	>"$E2E_TMP/monitor.log" 2>&1 &
E2E_PIDS+=($!)
sleep 0.5
start_modem_sim b
wait_for 20 "two modems on the bus" modem_count_is 2
kill -TERM "${SIM_PIDS[b]}"
wait_for 20 "the second modem gone from the bus" modem_count_is 1
wait_for 5 "InterfacesRemoved" grep -q "InterfacesRemoved" "$E2E_TMP/monitor.log"
grep -q "InterfacesAdded (objectpath '/org/freedesktop/ModemManager1/Modem/1'" "$E2E_TMP/monitor.log" ||
	fail "no InterfacesAdded for Modem/1: $(head -c 600 "$E2E_TMP/monitor.log")"
echo "ok: a modem appears (InterfacesAdded) and leaves (InterfacesRemoved) with its sim"

# Neither mmcli nor qmapd complained (GLib's warnings and criticals).
if grep -E "CRITICAL|WARNING" "$E2E_TMP/mmcli.stderr"; then
	fail "mmcli printed GLib warnings"
fi
if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
refresh() { rm -f "$E2E_TMP/qmapd.stats"; kill -USR1 "$QMAPD_PID"; wait_for 5 counters test -s "$E2E_TMP/qmapd.stats"; }
refresh
grep "^dbus:" "$E2E_TMP/qmapd.stats"
stop_process qmapd "$QMAPD_PID"
echo "---- transcript"
cat "$E2E_TMP/transcript"
echo "PASS"
