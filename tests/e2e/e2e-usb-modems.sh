#!/bin/bash
# SPDX-License-Identifier: MIT
# Two modems on one umockdev testbed (usb-harness.c with two --sim), each carried to its own
# qmapd-sim and driven by its own qmapd pinned by port path (usb-path:1-1:4, usb-path:1-2:4):
# traffic on both at once; unplugging one takes its carrier only, the other's ping goes on
# without loss; replugging brings it back; each modem's URBs, claim and kernel driver are
# its own. Data plane only (static addresses). Needs root (namespaces) and /dev/pts.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need_usb_harness
[ -c /dev/ptmx ] || unavailable "no /dev/ptmx: the fake usbfs node is a pty"
e2e_setup
chmod 755 "$E2E_TMP"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

# Modem a: mux 1 = 192.0.2.2, reaches 198.51.100.1; modem b: mux 1 = 203.0.113.2, reaches
# 198.51.100.2. Each sim has its own network-side TUN.
start_modem_sim() { # NAME NETDEV NET-ADDRESS MUX
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/sim-$1.sock" --netdev "$2" \
		--net-address "$3" --mux "$4" --always-connected \
		--stats-file "$E2E_TMP/sim-$1.stats" >"$E2E_TMP/sim-$1.log" 2>&1 &
	E2E_PIDS+=($!)
	wait_for 10 "qmapd-sim $1" test -S "$E2E_TMP/sim-$1.sock"
}
start_modem_sim a simnet0 198.51.100.1/32 1=192.0.2.2/32
start_modem_sim b simnet1 198.51.100.2/32 1=203.0.113.2/32

mkfifo "$E2E_TMP/usb.ctl"
start_usb_harness --sim "$E2E_TMP/sim-a.sock" --sim "$E2E_TMP/sim-b.sock"

usb() { echo "$*" >"$E2E_TMP/usb.ctl"; }
usb_stats() {
	rm -f "$E2E_TMP/usb.stats"
	usb stats
	wait_for 5 "harness counters" test -s "$E2E_TMP/usb.stats"
}
ustat() { sed -n "s/^$1=//p" "$E2E_TMP/usb.stats"; }

start_modem_qmapd() { # NAME PORT ADDRESS ROUTE
	cat >"$E2E_TMP/qmapd-$1.conf" <<-CONF
	[device]
	device = usb-path:1-$2:4
	control = none
	control-socket = $E2E_TMP/control-$1

	[mux.1]
	interface = qmap$1
	ipv4-address = $3/32
	routes = $4/32
	CONF
	ip netns exec "$NS_HOST" env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
		"$QMAPD" -c "$E2E_TMP/qmapd-$1.conf" >"$E2E_TMP/qmapd-$1.log" 2>&1 &
	E2E_PIDS+=($!)
	eval "QMAPD_$1=$!"
	wait_for 20 "qmap$1 with carrier" has_carrier "$NS_HOST" "qmap$1"
}
start_modem_qmapd a 1 192.0.2.2 198.51.100.1
start_modem_qmapd b 2 203.0.113.2 198.51.100.2
# The claim is waited for, not assumed from the carrier: once, on a loaded machine, both
# carriers were seen before qmapd b had logged its claim.
wait_for 10 "qmapd a claiming 1-1" grep -q "usb 1-1 (2c7c:0125) if4: claimed" "$E2E_TMP/qmapd-a.log"
wait_for 10 "qmapd b claiming 1-2" grep -q "usb 1-2 (2c7c:0125) if4: claimed" "$E2E_TMP/qmapd-b.log"
grep -q "serial 'qmapdsim0002'" "$E2E_TMP/qmapd-b.log" || fail "modem 1's serial is not qmapdsim0002"

for target in 198.51.100.1 198.51.100.2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target"
done
usb_stats
for k in 0 1; do
	expect_eq "modem $k driver" "$(ustat $k.driver)" usbfs
	expect_eq "modem $k claims" "$(ustat $k.claimed)" 1
	expect_ge "modem $k bulk OUT URBs" "$(ustat $k.bulk_out)" 3
	# ping succeeds with one reply of three: at least that one came through this modem.
	expect_ge "modem $k bulk IN URBs" "$(ustat $k.bulk_in)" 1
done
echo "ok: two modems on one testbed, each claimed by its qmapd, traffic on both"

# Unplug modem 1 while both carry pings: modem 0 loses nothing.
in_host ping -c 60 -i 0.05 -W 1 198.51.100.1 >"$E2E_TMP/ping-a.out" 2>&1 &
PING_A=$!
E2E_PIDS+=($PING_A)
sleep 0.5
usb @1 unplug
wait_for 10 "carrier off on qmapb" no_carrier qmapb
has_carrier "$NS_HOST" qmapa || fail "qmapa lost its carrier when modem 1 was unplugged"
wait "$PING_A" || fail "ping over modem 0 while modem 1 was unplugged: $(tail -2 "$E2E_TMP/ping-a.out")"
grep -q " 0% packet loss" "$E2E_TMP/ping-a.out" || fail "loss on modem 0: $(grep loss "$E2E_TMP/ping-a.out")"
usb_stats
expect_eq "modem 1 present" "$(ustat 1.present)" 0
expect_eq "modem 0 present" "$(ustat 0.present)" 1
expect_eq "modem 0 unplugged" "$(ustat 0.unplugged)" 0
grep -q "modem disconnected" "$E2E_TMP/qmapd-b.log" || fail "qmapd b did not log the unplug"
! grep -q "modem disconnected" "$E2E_TMP/qmapd-a.log" || fail "qmapd a saw a disconnect"
echo "ok: unplugging modem 1 took only its carrier; 60 pings over modem 0, no loss"

usb @1 plug
wait_for 20 "carrier on qmapb after replug" has_carrier "$NS_HOST" qmapb
in_host ping -c 3 -i 0.2 -W 2 198.51.100.2 >/dev/null || fail "ping over modem 1 after replug"
usb_stats
expect_eq "modem 1 claims" "$(ustat 1.claimed)" 2
expect_eq "modem 0 claims" "$(ustat 0.claimed)" 1
echo "ok: modem 1 replugged and claimed again"

stop_process "qmapd a" "$QMAPD_a"
stop_process "qmapd b" "$QMAPD_b"
usb_stats
for k in 0 1; do expect_eq "modem $k driver after exit" "$(ustat $k.driver)" qmi_wwan; done
echo "e2e-usb-modems: passed"
