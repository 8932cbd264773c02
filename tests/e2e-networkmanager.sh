#!/bin/bash
# SPDX-License-Identifier: MIT
# NetworkManager drives qmapd through ModemManager's D-Bus API, unchanged: Debian's
# NetworkManager (unpacked, never installed) runs in the host namespace of the test inside a
# private mount namespace (tmpfs /run and /var/lib, its plugins overlaid on the library
# directory, polkit off, dns=none) on a private system-like bus. A GSM keyfile profile:
# nmcli connection up brings the mux device up with the simulated network's address and
# default route, set by NetworkManager; ping through it; a network-side drop (qmapd-sim
# SIGUSR2) fails the device with modem-no-carrier and takes its address away; up again
# restores it; down stops
# qmapd's session and removes the mux. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need dbus-daemon dbus-daemon
need jq jq
need unshare util-linux
need gdbus libglib2.0-bin
NM=$(need_unpacked network-manager usr/sbin/NetworkManager) || exit $?
NMCLI_BIN=$(need_unpacked network-manager usr/bin/nmcli) || exit $?
NM_PLUGINS=$(need_unpacked network-manager 'usr/lib/*/NetworkManager') || exit $?
LIBNM=$(need_unpacked libnm0 'usr/lib/*/libnm.so.0') || exit $?
LIBNDP=$(need_unpacked libndp0 'usr/lib/*/libndp.so.0') || exit $?
LIBTEAM=$(need_unpacked libteamdctl0 'usr/lib/*/libteamdctl.so.0') || exit $?
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
LIBDIR=$(dirname "$NM_PLUGINS") # the multiarch library directory NetworkManager loads from
LIBS="$(dirname "$LIBNM"):$(dirname "$LIBNDP"):$(dirname "$LIBTEAM")"
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
nmcli() { LD_LIBRARY_PATH=$LIBS "$NMCLI_BIN" "$@"; }

start_system_bus '<policy user="root">
    <allow own="org.freedesktop.NetworkManager"/>
    <allow send_destination="org.freedesktop.NetworkManager"/>
  </policy>'

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25)
SIM_NET_ARGS=(--net-address 198.51.100.1/32 --apn internet)
SIM_ALWAYS_CONNECTED=no
start_sim
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control = qmi
control-link = $E2E_TMP/qmi0
control-socket = $E2E_TMP/control
CONF
start_qmapd_dbus "$E2E_TMP/qmapd.conf"
wait_for 20 "the modem on the bus" grep -q "dbus: modem modem0 is" "$E2E_TMP/qmapd.log"
# NetworkManager offers a modem's connections once it is registered (State 8).
modem_registered() {
	[[ $(gdbus call --system -d org.freedesktop.ModemManager1 \
		-o /org/freedesktop/ModemManager1/Modem/0 -m org.freedesktop.DBus.Properties.Get \
		org.freedesktop.ModemManager1.Modem State 2>/dev/null) == "(<8>,)" ]]
}
wait_for 20 "the modem registered" modem_registered

# NetworkManager, as a distribution would run it, but everything it writes is private.
mkdir -p "$E2E_TMP/nm/conns"
cat >"$E2E_TMP/nm/NetworkManager.conf" <<CONF
[main]
plugins=keyfile
auth-polkit=false
dns=none
no-auto-default=*
[keyfile]
path=$E2E_TMP/nm/conns
[logging]
level=INFO
domains=MB,DEVICE,CORE,IP4,IP6
CONF
cat >"$E2E_TMP/nm/conns/wwan.nmconnection" <<CONF
[connection]
id=wwan
type=gsm
autoconnect=false
[gsm]
apn=internet
[ipv4]
method=auto
[ipv6]
method=ignore
CONF
chmod 600 "$E2E_TMP/nm/conns/wwan.nmconnection"
cat >"$E2E_TMP/nm/run.sh" <<RUN
set -e
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /var/lib
mkdir -p /run/NetworkManager /var/lib/NetworkManager
# Its plugins (the WWAN one among them) where it looks for them, for it alone.
mount -t overlay overlay -o lowerdir=$LIBDIR:/usr/lib/$(basename "$LIBDIR") /usr/lib/$(basename "$LIBDIR")
export LD_LIBRARY_PATH=$LIBS
exec $NM --debug --config=$E2E_TMP/nm/NetworkManager.conf --state-file=/var/lib/NetworkManager/state
RUN
ip netns exec "$NS_HOST" unshare -m --propagation private bash "$E2E_TMP/nm/run.sh" \
	>"$E2E_TMP/nm.log" 2>&1 &
E2E_PIDS+=($!)
NM_PID=$!
modem_device() { nmcli -t -f DEVICE device 2>/dev/null | grep -qx qmi0; }
wait_for 20 "NetworkManager's modem device qmi0" modem_device
nmcli device | tee "$E2E_TMP/transcript"

dev_state() { nmcli -g GENERAL.STATE device show qmi0 | cut -d' ' -f1; }
up() {
	local t0=$(date +%s%N)
	nmcli connection up wwan | tee -a "$E2E_TMP/transcript" || fail "nmcli connection up wwan"
	echo "nmcli connection up took $((($(date +%s%N) - t0) / 1000000)) ms" | tee -a "$E2E_TMP/transcript"
	expect_eq "device state" "$(dev_state)" 100
	# The mux device: the network's address and the default route, both from NetworkManager.
	[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *"inet 192.0.2.2/25"* ]] ||
		fail "qmap1 lacks 192.0.2.2/25: $(ip -n "$NS_HOST" -o addr show dev qmap1)"
	[[ $(ip -n "$NS_HOST" route show default) == *"via 192.0.2.1 dev qmap1"* ]] ||
		fail "no default route via qmap1: $(ip -n "$NS_HOST" route show default)"
	in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping through qmap1"
	echo "ok: connected, address and default route by NetworkManager, ping"
}
up
nmcli -f GENERAL.STATE,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS device show qmi0 | tee -a "$E2E_TMP/transcript"
expect_eq "qmapctl: the session is D-Bus's" \
	"$("${CTL[@]}" -j status | jq -r '.modems[0].muxes[0] | .state + " " + .["managed-by"]')" \
	"connected dbus"

# The network drops the session: NetworkManager takes the device down and the address away.
kill -USR2 "$SIM_PID"
not_activated() { [ "$(dev_state)" != 100 ]; }
wait_for 15 "NetworkManager leaves activated after the drop" not_activated
no_address() { ! ip -n "$NS_HOST" -o addr show dev qmap1 2>/dev/null | grep -q 192.0.2.2; }
wait_for 10 "the address gone after the drop" no_address
drop=$(grep -oE "device \(qmi0\): state change: activated -> [a-z]+ \(reason '[^']*'" "$E2E_TMP/nm.log" | head -1)
echo "after the drop: $drop" | tee -a "$E2E_TMP/transcript"
[[ $drop == *"activated -> failed (reason 'modem-no-carrier'"* ]] ||
	fail "NetworkManager after the drop: '$drop', not failed with modem-no-carrier"
echo "ok: network drop -> NetworkManager: failed (modem-no-carrier), the address is gone"

# Up again, then down: qmapd's session stops and the mux goes.
wait_for 15 "the modem back to disconnected" sh -c "[ \"\$(LD_LIBRARY_PATH=$LIBS $NMCLI_BIN -g GENERAL.STATE device show qmi0 | cut -d' ' -f1)\" = 30 ]"
up
nmcli connection down wwan >/dev/null || fail "nmcli connection down wwan"
no_mux() { [ "$("${CTL[@]}" -j status | jq '.modems[0].muxes | length')" = 0 ]; }
wait_for 10 "qmapd's mux removed after connection down" no_mux
echo "ok: nmcli connection down stops qmapd's session and removes the mux"

stop_process NetworkManager "$NM_PID" || true
stop_qmapd
echo "---- transcript"
cat "$E2E_TMP/transcript"
echo PASS
