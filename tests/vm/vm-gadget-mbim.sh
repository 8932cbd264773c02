#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd-sim as a Sierra Wireless EM7455 in its MBIM composition on the real USB stack
# (vm-lib.sh): in the guest, qmapd-sim --mbim --gadgetfs plays the whole device 1199:9079 on
# dummy_hcd (tests/sim/sim-gadgetfs.h says why gadgetfs and not FunctionFS). The guest's USB
# core enumerates it and the kernel's cdc_mbim binds (cdc-wdm0 and wwan0 appear, through the
# CDC functional descriptors, the data interface's alternate settings and the NCM class
# requests); mbimcli's DEVICE_CAPS query and a connect travel through cdc-wdm's encapsulated
# commands and RESPONSE_AVAILABLE on the interrupt endpoint, and a ping goes through wwan0 as
# NTBs on the bulk endpoints. Then qmapd takes the modem from cdc_mbim: detach, claim, MBIM
# through its own transfers, one session, a ping through its mux, and at exit the interface
# goes back to cdc_mbim.
source "$(dirname "$0")/../support/lib.sh" || exit 1

if [ "${1:-}" != --guest ]; then
	source "$(dirname "$0")/vm-lib.sh"
	[ "$(id -u)" = 0 ] || skip "needs root (qemu's 9p export of / as root)"
	VM_MODULES+=" gadgetfs"
	VM_ENV="VM_QMAPD VM_VERBOSE" vm_run "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" --guest
	exit $?
fi

# In the guest, root of its own kernel.
# On a failure: what the guest's USB core saw, and its kernel's last words.
usb_diag() {
	local rc=$? d
	set +e # in the EXIT trap: e2e_cleanup must still run, and see the status
	[ $rc = 0 ] && return 0
	for d in /sys/bus/usb/devices/*; do
		[ -f "$d/bInterfaceNumber" ] || [ -f "$d/idVendor" ] || continue
		echo "usb: ${d##*/} $(cat "$d"/{idVendor,idProduct,bInterfaceNumber,bAlternateSetting,bInterfaceClass,bNumEndpoints} 2>/dev/null | tr '\n' ' ')driver $(basename "$(readlink "$d/driver" 2>/dev/null)")"
	done >&2
	od -An -tx1 /sys/bus/usb/devices/1-1/descriptors >&2
	[ ! -f "$E2E_TMP/qmapd.log" ] || tail -n 30 "$E2E_TMP/qmapd.log" >&2
	dmesg | tail -n 25 >&2
	return $rc
}
need mbimcli libmbim-utils
e2e_setup
trap 'usb_diag; e2e_cleanup' EXIT
GFS=/tmp/gadgetfs
mkdir "$GFS"
mount -t gadgetfs gadgetfs "$GFS" || fail "no gadgetfs (the gadgetfs module, a free UDC)"

# Session 0 (cdc_mbim's untagged wwan0) and qmapd's mux 1 are the same sim session.
SIM_MUX_ARGS=(--mux "1=192.0.2.2/32")
SIM_ALWAYS_CONNECTED=no start_sim --mbim --apn internet --gadgetfs "$GFS"
t0=$(date +%s%N)
wait_for 20 "cdc-wdm0 (cdc_mbim bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0" test -e /sys/class/net/wwan0
echo "ok: cdc_mbim bound in $((($(date +%s%N) - t0) / 1000000)) ms:" \
	"$(basename "$(readlink /sys/class/net/wwan0/device/driver)")" \
	"on interface $(cat /sys/class/net/wwan0/device/bInterfaceNumber)"
expect_eq "wwan0's driver" "$(basename "$(readlink /sys/class/net/wwan0/device/driver)")" cdc_mbim
expect_eq "wwan0's interface" "$(cat /sys/class/net/wwan0/device/bInterfaceNumber)" 0c
# cdc_mbim left the data interface in its data setting, after the NCM requests in setting 0.
expect_eq "data interface setting" "$(cat /sys/bus/usb/devices/1-1:1.13/bAlternateSetting)" " 1"

out=$(timeout 20 mbimcli -d /dev/cdc-wdm0 --query-device-caps 2>&1) ||
	fail "mbimcli --query-device-caps: $out"
echo "$out" | grep -E "Device ID|Max sessions"
[[ $out == *350000000000006* ]] || fail "no device id in mbimcli's answer"
echo "ok: DEVICE_CAPS answered through cdc_mbim/cdc-wdm and the gadget"

# Session 0 up, kept after mbimcli exits (no CLOSE), and a ping through wwan0: NTBs both ways.
out=$(timeout 20 mbimcli -d /dev/cdc-wdm0 --connect=apn=internet,ip-type=ipv4 --no-close 2>&1) ||
	fail "mbimcli --connect: $out"
[[ $out == *192.0.2.2* ]] || fail "mbimcli --connect printed no IPv4 address: $out"
ip link set wwan0 netns "$NS_HOST"
in_host ip addr add 192.0.2.2/32 dev wwan0
in_host ip link set wwan0 up
in_host ip route add 198.51.100.1/32 dev wwan0
in_host ping -c 3 -i 0.2 -W 5 198.51.100.1 >/dev/null || fail "ping through wwan0 (cdc_mbim)"
echo "ok: ping through cdc_mbim's wwan0, session 0, NTBs over the gadget's bulk endpoints"
in_host ip link set wwan0 netns 1
# A new OPEN ends every session (the sim, like a function reset), and mbimcli closes.
timeout 20 mbimcli -d /dev/cdc-wdm0 --query-device-caps >/dev/null || fail "mbimcli after connect"

# qmapd takes the modem from cdc_mbim: detach, claim both interfaces, MBIM through its own
# transfers, NTBs in usbfs memory, one session; at exit the interface goes back.
# VM_QMAPD=0 stops before it. gadgetfs keeps only the newest unread SETUP, so commands queued
# back to back can be lost (tests/sim/sim-gadgetfs.h): a lost one would show as an MBIM
# timeout in qmapd's log (3 runs of 3 passed after the RWF_NOWAIT fix in uring.c).
if [ "${VM_QMAPD:-1}" != 1 ]; then
	echo "vm-gadget-mbim: passed (without qmapd: VM_QMAPD=0)"
	exit 0
fi
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = usb:1199:9079
control = mbim
control-link = $E2E_TMP/mbim0
control-socket = $E2E_TMP/control

[dbus]
enabled = no

[mux.1]
interface = qmap1
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32
CONF
t0=$(date +%s%N)
ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 30 "qmap1 with carrier" has_carrier "$NS_HOST" qmap1
echo "ok: qmapd connected mux 1 in $((($(date +%s%N) - t0) / 1000000)) ms"
grep -E "detached the kernel driver|claimed" "$E2E_TMP/qmapd.log"
grep -q "detached the kernel driver (cdc_mbim)" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not log detaching cdc_mbim"
[ ! -e /sys/class/net/wwan0 ] || fail "wwan0 still there while qmapd holds the interfaces"
in_host ping -c 3 -i 0.2 -W 5 198.51.100.1 >/dev/null || fail "ping through mux 1 over the gadget"
echo "ok: ping through qmapd's mux 1, the kernel's USB stack and the gadget"
stop_qmapd
wait_for 10 "cdc-wdm0 back (cdc_mbim re-bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0 back" test -e /sys/class/net/wwan0
echo "ok: the interfaces handed back to $(basename "$(readlink /sys/class/net/wwan0/device/driver)")"
