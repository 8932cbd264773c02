#!/bin/bash
# SPDX-License-Identifier: MIT
# Discovery end to end: one qmapd without `device =` on a umockdev testbed of four modems
# (tests/usb/usb-harness.c, each carried to its own qmapd-sim): the modem whose serial a
# [modem.lte] section names gets that name and section, another one the next free name
# (modem0) and the top-level [mux.1]; an excluded modem is never claimed and keeps its kernel
# driver; a transfer error storm on modem0 and its unplug leave lte's traffic alone, and the
# replug gives back the same name, devices and session; a modem plugged in later is
# discovered as modem1 (time from plug to session up). Needs root (namespaces, a private mount of /run) and /dev/pts.
source "$(dirname "$0")/../support/lib.sh" || exit 1

QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need_usb_harness
need /usr/libexec/qmi-proxy libqmi-proxy
need unshare util-linux
need jq jq
[ -c /dev/ptmx ] || unavailable "no /dev/ptmx: the fake usbfs node is a pty"
e2e_setup
chmod 755 "$E2E_TMP"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

# Sims: a (harness modem 0, port 1-1), b (modem 1, 1-2, serial qmapdsim0002), c (modem 3,
# 1-4, plugged in later). Modem 2 (1-3) has no sim and is excluded.
start_modem_sim() { # NAME NETDEV NET-ADDRESS MUX
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/sim-$1.sock" --netdev "$2" \
		--net-address "$3" --mux "$4" --apn internet --profile strict --data-interface 4 \
		--stats-file "$E2E_TMP/sim-$1.stats" >"$E2E_TMP/sim-$1.log" 2>&1 &
	E2E_PIDS+=($!)
	wait_for 10 "qmapd-sim $1" test -S "$E2E_TMP/sim-$1.sock"
}
start_modem_sim a simnet0 198.51.100.1/32 1=192.0.2.2/32
start_modem_sim b simnet1 198.51.100.2/32 1=203.0.113.2/32
start_modem_sim c simnet2 198.51.100.3/32 1=192.0.2.18/32

mkfifo "$E2E_TMP/usb.ctl"
start_usb_harness --sim "$E2E_TMP/sim-a.sock" --sim "$E2E_TMP/sim-b.sock" \
	--modem port=3,serial=notours --modem "sim=$E2E_TMP/sim-c.sock,port=4,plugged=0"

usb() { echo "$*" >"$E2E_TMP/usb.ctl"; }
usb_stats() {
	rm -f "$E2E_TMP/usb.stats"
	usb stats
	wait_for 5 "harness counters" test -s "$E2E_TMP/usb.stats"
}
ustat() { sed -n "s/^$1=//p" "$E2E_TMP/usb.stats"; }
status() { "${CTL[@]}" -j status; }
names() { status | jq -r '[.modems[].name] | sort | join(",")'; }
connected() { # MODEM: its mux 1 is connected
	[ "$("${CTL[@]}" -m "$1" -j status 2>/dev/null | jq -r '.modems[0].muxes[0].state')" = connected ]
}
ifindex() { ip -n "$NS_HOST" -j link show "$1" | jq '.[0].ifindex'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control
exclude = usb-path:1-3

[modem.lte]
device = usb-serial:qmapdsim0002
control-link = $E2E_TMP/lte.qmi

[modem.lte.mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.2/32

# Every other modem: one session, its route added below (one per modem).
[mux.1]
apn = internet
ip-type = ipv4
CONF

# Discovered modems get /run/qmapd/NAME.qmi: a /run of their own, not the host's.
ip netns exec "$NS_HOST" unshare -m --propagation private sh -c \
	'mount -t tmpfs qmapd-test-run /run && exec "$@"' sh \
	env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
	"$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"
wait_for 30 "modem0 connected" connected modem0
wait_for 30 "lte connected" connected lte
expect_eq "modems found" "$(names)" lte,modem0
expect_eq "lte is the modem with serial qmapdsim0002" "$("${CTL[@]}" -m lte -j status | jq -r '.modems[0].modem.transport')" usb-path:1-2:4
expect_eq "modem0 is the one at 1-1" "$("${CTL[@]}" -m modem0 -j status | jq -r '.modems[0].modem.transport')" usb-path:1-1:4
expect_eq "device names" "$(status | jq -r '[.modems[].muxes[].interface] | sort | join(",")')" lte.1,modem0.1
ip -n "$NS_HOST" route add 198.51.100.1/32 dev modem0.1
for target in 198.51.100.1 198.51.100.2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target"
done
usb_stats
expect_eq "excluded modem: claims" "$(ustat 2.claimed)" 0
expect_eq "excluded modem: driver" "$(ustat 2.driver)" qmi_wwan
echo "ok: two modems discovered and named (section by serial, next free name), the excluded one left bound"

# A transfer error storm on modem0 while both carry pings: lte loses nothing.
in_host ping -c 40 -i 0.05 -W 1 198.51.100.2 >"$E2E_TMP/ping-storm.out" 2>&1 &
PING=$!
in_host ping -c 40 -i 0.05 -W 1 198.51.100.1 >/dev/null 2>&1 &
PING0=$!
E2E_PIDS+=($PING $PING0)
sleep 0.3
usb @0 inject eproto 30
usb @0 inject stall 10
usb @0 inject out-eproto 10
wait "$PING" || fail "ping over lte during modem0's error storm: $(tail -2 "$E2E_TMP/ping-storm.out")"
wait "$PING0" || true
grep -q " 0% packet loss" "$E2E_TMP/ping-storm.out" || fail "loss on lte during modem0's errors: $(grep loss "$E2E_TMP/ping-storm.out")"
usb_stats
expect_ge "errors injected on modem0" "$(($(ustat 0.injected_eproto) + $(ustat 0.injected_stall) + $(ustat 0.injected_out_eproto)))" 10
expect_eq "errors injected on lte's modem" "$(($(ustat 1.injected_eproto) + $(ustat 1.injected_stall) + $(ustat 1.injected_out_eproto)))" 0
wait_for 30 "modem0 connected after its error storm" connected modem0
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over modem0 after its error storm"
echo "ok: an error storm on modem0 left lte's pings alone; modem0 recovered"

# Unplug modem0 while lte carries pings: lte loses nothing; the replug gives modem0 back.
IF0=$(ifindex modem0.1)
in_host ping -c 40 -i 0.05 -W 1 198.51.100.2 >"$E2E_TMP/ping-lte.out" 2>&1 &
PING=$!
E2E_PIDS+=($PING)
sleep 0.5
usb @0 unplug
wait_for 10 "modem0.1 without carrier" no_carrier modem0.1
wait "$PING" || fail "ping over lte while modem0 was unplugged: $(tail -2 "$E2E_TMP/ping-lte.out")"
grep -q " 0% packet loss" "$E2E_TMP/ping-lte.out" || fail "loss on lte: $(grep loss "$E2E_TMP/ping-lte.out")"
connected lte || fail "lte's session after modem0's unplug"
expect_eq "modems while modem0 is away" "$(names)" lte,modem0
T0=$(now_ms)
usb @0 plug
wait_for 30 "modem0 connected after the replug" connected modem0
echo "figure: replug of modem0 (USB, umockdev) to its session connected: $(($(now_ms) - T0)) ms"
expect_eq "modem0.1 the same device after the replug" "$(ifindex modem0.1)" "$IF0"
expect_eq "modems after the replug" "$(names)" lte,modem0
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over modem0 after the replug"
echo "ok: unplug of modem0 left lte alone; replug: same name, device and session"

# A modem plugged in later: the next free name, the template's mux.
T0=$(now_ms)
usb @3 plug
wait_for 30 "modem1 connected" connected modem1
echo "figure: plug of a new modem (USB, umockdev, discovery) to its session connected: $(($(now_ms) - T0)) ms"
expect_eq "modems after the plug" "$(names)" lte,modem0,modem1
expect_eq "modem1 at 1-4" "$("${CTL[@]}" -m modem1 -j status | jq -r '.modems[0].modem.transport')" usb-path:1-4:4
ip -n "$NS_HOST" route add 198.51.100.3/32 dev modem1.1
in_host ping -c 3 -i 0.2 -W 2 198.51.100.3 >/dev/null || fail "ping over modem1"
echo "ok: a modem plugged in later is discovered as modem1 and brought up"

stop_qmapd
usb_stats
for k in 0 1 3; do expect_eq "modem $k driver after exit" "$(ustat $k.driver)" qmi_wwan; done
expect_eq "excluded modem: claims at the end" "$(ustat 2.claimed)" 0
echo "e2e-discovery: passed"
