#!/bin/bash
# SPDX-License-Identifier: MIT
# NetworkManager drives qmapd through ModemManager's D-Bus API, unchanged: Debian's
# NetworkManager (unpacked, never installed) runs in the host namespace of the test inside a
# private mount namespace (tmpfs /run and /var/lib, its plugins overlaid on the library
# directory, polkit off, dns=none) on a private system-like bus. A GSM keyfile profile:
# nmcli connection up brings the mux device up with the simulated network's address, default
# route, DNS and MTU (1420, not the device's default: qmapd puts nothing on a D-Bus bearer's
# device), all set by NetworkManager; ping and iperf3 (both directions) through it, and the
# time from nmcli connection up to the first ping reply; a network-side drop (qmapd-sim
# SIGUSR2) fails the device with modem-no-carrier and takes its address away; up again
# restores address, route and ping; down stops qmapd's session (qmapctl status and the sim
# see none) and removes the mux; nmcli radio wwan off puts the modem in low power (the sim's
# DMS operating mode), on brings it back registered. Needs root; namespaces it creates and
# deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need dbus-daemon dbus-daemon
need jq jq
need unshare util-linux
need gdbus libglib2.0-bin
need iperf3 iperf3
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
# The network's MTU differs from the device's default, so that NetworkManager has to set it.
start_sim --session-mtu 1420
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
mux_bytes() { "${CTL[@]}" -j status | jq '.modems[0].muxes[0].counters | .["rx-bytes"] + .["tx-bytes"]'; }
sim_stat() {
	rm -f "$E2E_TMP/sim.stats"
	kill -USR1 "$SIM_PID"
	wait_for 5 "the sim's counters" test -s "$E2E_TMP/sim.stats"
	sed -n "s/^$1=//p" "$E2E_TMP/sim.stats"
}
up() {
	local t0 t1 nm_pid
	t0=$(date +%s%N)
	nmcli connection up wwan >"$E2E_TMP/up.out" 2>&1 &
	nm_pid=$!
	# The first reply through the new device: ping until one comes back (inside the
	# namespace: no `ip netns exec` per try).
	in_host timeout 30 bash -c 'until ping -c 1 -W 0.2 -q 198.51.100.1 >/dev/null 2>&1; do sleep 0.005; done' ||
		fail "no ping reply within 30 s of nmcli connection up"
	t1=$(date +%s%N)
	wait "$nm_pid" || fail "nmcli connection up wwan: $(cat "$E2E_TMP/up.out")"
	tee -a "$E2E_TMP/transcript" <"$E2E_TMP/up.out"
	echo "figure: nmcli connection up to the first ping reply through the modem: $(((t1 - t0) / 1000000)) ms" |
		tee -a "$E2E_TMP/transcript"
	expect_eq "device state" "$(dev_state)" 100
	# The mux device: the network's address and the default route, both from NetworkManager.
	[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *"inet 192.0.2.2/25"* ]] ||
		fail "qmap1 lacks 192.0.2.2/25: $(ip -n "$NS_HOST" -o addr show dev qmap1)"
	[[ $(ip -n "$NS_HOST" route show default) == *"via 192.0.2.1 dev qmap1"* ]] ||
		fail "no default route via qmap1: $(ip -n "$NS_HOST" route show default)"
	expect_eq "NetworkManager's IP interface of the modem" "$(nmcli -g GENERAL.IP-IFACE device show qmi0)" qmap1
	# DNS: NetworkManager holds the network's servers for the device (dns=none: it writes
	# no resolv.conf here).
	expect_eq "DNS servers set by NetworkManager" "$(nmcli -g IP4.DNS device show qmi0)" \
		"198.51.100.53 | 198.51.100.54"
	# MTU: the network's, put on the device by NetworkManager (qmapd leaves it at 1500).
	expect_eq "qmap1 MTU" "$(ip -n "$NS_HOST" -j link show qmap1 | jq '.[0].mtu')" 1420
	in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping through qmap1"
	echo "ok: connected; address, default route, DNS and MTU by NetworkManager; ping"
}
up
nmcli -f GENERAL.STATE,GENERAL.IP-IFACE,GENERAL.MTU,IP4.ADDRESS,IP4.GATEWAY,IP4.ROUTE,IP4.DNS device show qmi0 |
	tee -a "$E2E_TMP/transcript"
expect_eq "qmapctl: the session is D-Bus's" \
	"$("${CTL[@]}" -j status | jq -r '.modems[0].muxes[0] | .state + " " + .["managed-by"]')" \
	"connected dbus"

# iperf3 through NetworkManager's connection, both directions, over its default route.
start_iperf3_server
before=$(mux_bytes)
for dir in up down; do
	r=()
	[ "$dir" = down ] && r=(-R)
	in_host iperf3 -c 198.51.100.1 -t 3 -J "${r[@]}" >"$E2E_TMP/iperf-$dir.json" ||
		fail "iperf3 $dir through qmap1: $(tail -c 300 "$E2E_TMP/iperf-$dir.json")"
	bps=$(jq '.end.sum_received.bits_per_second | floor' "$E2E_TMP/iperf-$dir.json")
	echo "figure: iperf3 $dir through NetworkManager's qmap1: $((bps / 1000000)) Mbit/s" |
		tee -a "$E2E_TMP/transcript"
	[ "$bps" -ge 10000000 ] || fail "iperf3 $dir through qmap1: $bps bit/s, under 10 Mbit/s"
done
expect_ge "bytes through the mux during iperf3" "$(($(mux_bytes) - before))" 10000000

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
expect_eq "the sim's connected muxes before down" "$(sim_stat qmi_muxes_connected)" 1
nmcli connection down wwan | tee -a "$E2E_TMP/transcript" || fail "nmcli connection down wwan"
no_mux() { [ "$("${CTL[@]}" -j status | jq '.modems[0].muxes | length')" = 0 ]; }
wait_for 10 "qmapd's mux removed after connection down" no_mux
"${CTL[@]}" status | tee -a "$E2E_TMP/transcript"
sim_idle() { [ "$(sim_stat qmi_muxes_connected)" = 0 ]; }
wait_for 10 "no session left at the sim" sim_idle
! ip -n "$NS_HOST" link show qmap1 >/dev/null 2>&1 || fail "qmap1 stays after connection down"
[[ $(ip -n "$NS_HOST" route show default) != *qmap1* ]] || fail "the default route stays"
nmcli device | tee -a "$E2E_TMP/transcript"
echo "ok: nmcli connection down stops qmapd's session (qmapctl and the sim see none) and removes the mux"

# Airplane mode: NetworkManager disables the modem and asks for low power; on again powers it
# up (Enable(true)) and it registers.
nmcli radio wwan off || fail "nmcli radio wwan off"
sim_low() { [ "$(sim_stat low_power)" = "$1" ]; }
wait_for 15 "the sim in low power after nmcli radio wwan off" sim_low 1
nmcli device | tee -a "$E2E_TMP/transcript"
nmcli radio wwan on || fail "nmcli radio wwan on"
wait_for 15 "the sim online after nmcli radio wwan on" sim_low 0
wait_for 45 "the modem registered again" modem_registered
echo "ok: nmcli radio wwan off puts the modem in low power (DMS), on brings it back registered"

stop_process NetworkManager "$NM_PID" || true
stop_qmapd
echo "---- transcript"
cat "$E2E_TMP/transcript"
echo PASS
