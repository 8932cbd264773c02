#!/bin/bash
# SPDX-License-Identifier: MIT
# control = mbim over the usb transport: qmapd's libusb code against the umockdev testbed
# (tests/usb/usb-harness.c) playing an MBIM function whose URBs go to qmapd-sim --mbim, which
# carries data only for activated sessions. MBIM control runs through mbim-proxy, the pty
# bridge and the encapsulated commands of the USB function: two sessions (IPv4 on mux 1,
# IPv6 on mux 2) get their addresses from IP_CONFIGURATION, ping and iperf3 both ways,
# mbimcli -p shares the channel, a network drop turns the carrier off and the sessions come
# back, an unplug and replug brings them up again; the device's manufacturer and product
# strings are read (MBIM itself names neither). Needs root (namespaces) and /dev/pts.
source "$(dirname "$0")/../support/lib.sh" || exit 1

QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need_usb_harness
need mbimcli libmbim-utils
need /usr/libexec/mbim-proxy libmbim-proxy
need iperf3 iperf3
need jq jq
[ -c /dev/ptmx ] || unavailable "no /dev/ptmx: the fake usbfs node is a pty"
e2e_setup
chmod 755 "$E2E_TMP"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25 --mux 2=2001:db8:2::2/64)
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = usb:1199:9079
control = mbim
control-link = $E2E_TMP/mbim0
control-socket = $E2E_TMP/control

[mux.1]
interface = qmap1
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32

[mux.2]
interface = qmap2
apn = internet
ip-type = ipv6
routes = 2001:db8:ff::2/128
CONF

start_sim --mbim --apn internet
mkfifo "$E2E_TMP/usb.ctl"
start_usb_harness --modem "kind=mbim,sim=$E2E_TMP/sim.sock,mtu=1500"
usb() { echo "$*" >"$E2E_TMP/usb.ctl"; }

ip netns exec "$NS_HOST" env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
	"$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"

mux_field() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | $2"; }
mux_is() { [ "$(mux_field "$1" .state)" = "$2" ]; }
for m in 1 2; do
	wait_for 30 "mux $m connected over usb" mux_is $m connected
done
expect_eq "control" "$("${CTL[@]}" -j status | jq -r .modems[0].modem.control)" mbim
expect_eq "mux 1 IPv4 from IP_CONFIGURATION" "$(mux_field 1 .ipv4.address)" 192.0.2.2/25
expect_eq "mux 2 IPv6 from IP_CONFIGURATION" "$(mux_field 2 .ipv6.address)" 2001:db8:2::2/64
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/25* ]] || fail "qmap1 lacks its address"
# MBIM names no manufacturer or model: the USB strings are what there is (ModemManager too).
grep -qF "claimed (MBIM class 02/0e with data interface 0a/00/02), 'Sierra Wireless, Incorporated' 'EM7455 (qmapd-sim)'" \
	"$E2E_TMP/qmapd.log" || fail "qmapd did not read the device's manufacturer and product strings"
echo "ok: two MBIM sessions over the usb transport"

in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over mux 1"
in_host ping -c 3 -i 0.2 -W 2 2001:db8:ff::2 >/dev/null || fail "ping over mux 2"
start_iperf3_server
for args in "198.51.100.1" "2001:db8:ff::2 -R"; do
	# shellcheck disable=SC2086
	out=$(in_host iperf3 -c $args -t 2 -J) || fail "iperf3 -c $args"
	bytes=$(jq '.end.sum_received.bytes' <<<"$out")
	[ "$bytes" -gt 1000000 ] || fail "iperf3 -c $args moved only $bytes bytes"
	echo "ok: iperf3 -c $args over usb: $bytes bytes," \
		"$(jq '.end.sum_received.bits_per_second / 1e6 | floor' <<<"$out") Mbit/s"
done

caps=$(in_host timeout 20 mbimcli -p -d "$E2E_TMP/mbim0" --query-device-caps) ||
	fail "mbimcli -p --query-device-caps over usb"
[[ $caps == *350000000000006* ]] || fail "mbimcli printed no device id: $caps"
echo "ok: mbimcli -p through mbim-proxy over the usb function"
# qmapd's queries (several at once from libmbim) and mbimcli's, one encapsulated transfer on
# EP0 at a time: a function like the gadgetfs one loses a command that another control
# request follows in the same bus pass (tests/sim/sim-gadgetfs.h).
rm -f "$E2E_TMP/usb.stats"
usb stats
wait_for 5 "harness counters" test -s "$E2E_TMP/usb.stats"
expect_eq "encapsulated transfers in flight at once" \
	"$(sed -n 's/^ctrl_in_flight_max=//p' "$E2E_TMP/usb.stats")" 1

kill -USR2 "$SIM_PID"
wait_for 5 "carrier off on qmap1 after the drop" no_carrier qmap1
wait_for 20 "qmap1 reconnected" has_carrier "$NS_HOST" qmap1
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after reconnect"
echo "ok: network drop -> carrier off -> reconnect -> traffic"

# The replugged function is closed while mbim-proxy believes it open: the proxy checks
# with a DEVICE_CAPS query, which is lost here (as gadgetfs can lose a SETUP), so the proxy
# keeps its device open and qmapd's own DEVICE_CAPS is answered NOT_OPENED. libmbim 1.28's
# proxy then closes its device by force and never OPENs it again (every command answered
# NOT_OPENED for good): the bridge must OPEN the function itself (mbim-frag.h).
usb unplug
wait_for 10 "carrier off on qmap1 after unplug" no_carrier qmap1
usb inject cmd-lose 1
t0=$(date +%s%N)
usb plug
for m in 1 2; do
	wait_for 30 "mux $m connected after replug (a lost command, the function closed)" \
		mux_is $m connected
done
echo "replug with a lost command: both muxes connected after $((($(date +%s%N) - t0) / 1000000)) ms"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after replug"
[ "$("${CTL[@]}" -j status | jq -r '.modems[0].modem["function-resets"]')" -ge 1 ] ||
	fail "qmapd counted no reset function (function-resets)"
grep -q "answered transaction [0-9]* NOT_OPENED: it was reset" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not log the closed function"
echo "ok: unplug and replug (a command lost, the function closed) -> sessions up again -> traffic"

# Firmware that resets its function under running sessions (a crash, a watchdog) says
# nothing: the next command (mbimcli's here; qmapd's own radio poll within 30 s) gets
# NOT_OPENED, the bridge OPENs it, and qmapd opens again and activates the sessions anew.
refresh_stats
before=$(sstat mbim_sessions_started mbim_sessions_started)
kill -s RTMIN+3 "$SIM_PID"
t0=$(date +%s%N)
in_host timeout 20 mbimcli -p -d "$E2E_TMP/mbim0" --query-device-caps >/dev/null 2>&1 || true
wait_for 20 "ping after the function reset" in_host ping -c 1 -W 1 198.51.100.1
echo "function reset: traffic again after $((($(date +%s%N) - t0) / 1000000)) ms"
refresh_stats
expect_eq "sessions activated again after the function reset" \
	"$(($(sstat mbim_sessions_started mbim_sessions_started) - before))" 2
[ "$("${CTL[@]}" -j status | jq -r '.modems[0].modem["function-resets"]')" -ge 2 ] ||
	fail "qmapd counted no second reset function (function-resets)"
echo "ok: the function reset under running sessions -> opened again -> sessions again -> traffic"
stop_qmapd
echo "e2e-usb-mbim-control: passed"
