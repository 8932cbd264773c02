#!/bin/bash
# SPDX-License-Identifier: MIT
# control = auto with discovery: no device = and no control = in the file; qmapd finds the
# umockdev testbed's MBIM function (tests/usb/usb-harness.c, carried to qmapd-sim --mbim), names
# it modem0, chooses mbim for it and brings its session up: address from IP_CONFIGURATION,
# ping. qmapctl status says "control: mbim (auto)". qmapd -t, and qmapd itself, resolve the
# same for an explicit usb: device. Needs root (namespaces) and /dev/pts.
source "$(dirname "$0")/../support/lib.sh" || exit 1

QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need_usb_harness
need /usr/libexec/mbim-proxy libmbim-proxy
need unshare util-linux
need jq jq
[ -c /dev/ptmx ] || unavailable "no /dev/ptmx: the fake usbfs node is a pty"
e2e_setup
chmod 755 "$E2E_TMP"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25)
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control-socket = $E2E_TMP/control

[mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32
CONF

start_sim --mbim --apn internet
mkfifo "$E2E_TMP/usb.ctl"
start_usb_harness --modem "kind=mbim,sim=$E2E_TMP/sim.sock"

# qmapd -t: the explicit device's descriptors decide, read without claiming.
cat >"$E2E_TMP/explicit.conf" <<CONF
[device]
device = usb:1199:9079
control-link = $E2E_TMP/mbim0
control-socket = $E2E_TMP/control

[mux.1]
interface = qmap1
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32
CONF
out=$(env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" "$QMAPD" -t -c "$E2E_TMP/explicit.conf" 2>&1) ||
	fail "qmapd -t: $out"
[[ $out == *"control: mbim (auto)"* ]] || fail "qmapd -t does not say control: mbim (auto): $out"
echo "ok: qmapd -t: control: mbim (auto) for usb:1199:9079"

# Discovered modems get /run/qmapd/NAME.mbim (MBIM): a /run of their own, not the host's.
ip netns exec "$NS_HOST" unshare -m --propagation private sh -c \
	'mount -t tmpfs qmapd-test-run /run && exec "$@"' sh \
	env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
	"$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"

status() { "${CTL[@]}" -j status; }
connected() { [ "$(status | jq -r '.modems[0].muxes[0].state')" = connected ]; }
wait_for 30 "modem0's mux 1 connected over MBIM" connected
expect_eq "modem found" "$(status | jq -r '[.modems[].name] | join(",")')" modem0
expect_eq "its transport" "$(status | jq -r '.modems[0].modem.transport')" usb-path:1-1:12
expect_eq "control" "$(status | jq -r '.modems[0].modem.control')" mbim
expect_eq "control auto" "$(status | jq -r '.modems[0].modem["control-auto"]')" true
expect_eq "control link named for what it speaks" \
	"$(status | jq -r '.modems[0].modem["control-path"]')" /run/qmapd/modem0.mbim
expect_eq "mux 1 IPv4 from IP_CONFIGURATION" \
	"$(status | jq -r '.modems[0].muxes[0].ipv4.address')" 192.0.2.2/25
[[ $("${CTL[@]}" status) == *"control"*"mbim (auto)"* ]] ||
	fail "qmapctl status does not show control: mbim (auto): $("${CTL[@]}" status)"
grep -q "MBIM modem" "$E2E_TMP/qmapd.log" || fail "the log does not say discovery found an MBIM modem"
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over modem0.1"
echo "ok: discovered MBIM modem, control = auto -> mbim, session up, traffic"
stop_qmapd

# The same with the device named: its descriptors, read before the modem is created, decide.
ip netns exec "$NS_HOST" env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
	"$QMAPD" -c "$E2E_TMP/explicit.conf" >"$E2E_TMP/qmapd-explicit.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"
wait_for 30 "mux 1 connected over MBIM (usb:1199:9079)" connected
expect_eq "control, device named" "$(status | jq -r '.modems[0].modem.control')" mbim
expect_eq "control auto, device named" "$(status | jq -r '.modems[0].modem["control-auto"]')" true
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over qmap1"
echo "ok: usb:1199:9079 without control =: mbim from its descriptors, session up, traffic"
stop_qmapd
echo "e2e-usb-mbim-discovery: passed"
