#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd-sim as a Quectel EC25 on the real USB stack (vm-lib.sh): in the guest, a configfs
# gadget 2c7c:0125 on dummy_hcd with serial-like functions at interfaces 0-3 (the EC25's
# DM/NMEA/AT/modem ports; see below) and qmapd-sim's FunctionFS QMI function at interface 4 (--ffs). The
# guest's USB core enumerates it, the kernel's qmi_wwan binds (cdc-wdm0 and wwan0 appear),
# and qmicli's DMS Get IDs travels through cdc-wdm's encapsulated commands and the
# interrupt endpoint to the sim and back.
source "$(dirname "$0")/../support/lib.sh" || exit 1

if [ "${1:-}" != --guest ]; then
	source "$(dirname "$0")/vm-lib.sh"
	[ "$(id -u)" = 0 ] || skip "needs root (qemu's 9p export of / as root)"
	vm_run "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" --guest
	exit $?
fi

# In the guest, root of its own kernel.
# On a failure: what the guest's USB core saw, and its kernel's last words.
usb_diag() {
	local rc=$? d
	[ $rc = 0 ] && return 0
	for d in /sys/bus/usb/devices/*; do
		[ -f "$d/bInterfaceNumber" ] || [ -f "$d/idVendor" ] || continue
		echo "usb: ${d##*/} $(cat "$d"/{idVendor,idProduct,bInterfaceNumber,bInterfaceClass,bNumEndpoints} 2>/dev/null | tr '\n' ' ')driver $(basename "$(readlink "$d/driver" 2>/dev/null)")"
	done >&2
	od -An -tx1 /sys/bus/usb/devices/1-1/descriptors >&2
	[ ! -f "$E2E_TMP/qmapd.log" ] || tail -n 30 "$E2E_TMP/qmapd.log" >&2
	dmesg | tail -n 25 >&2
	return $rc
}
need qmicli libqmi-utils
e2e_setup
trap 'usb_diag; e2e_cleanup' EXIT
G=/sys/kernel/config/usb_gadget/qmapd
FFS=/tmp/ffs-qmi
mkdir "$G" || fail "no configfs gadget (libcomposite)"
echo 0x2c7c >"$G/idVendor"
echo 0x0125 >"$G/idProduct"
mkdir "$G/strings/0x409" "$G/configs/c.1"
echo Quectel >"$G/strings/0x409/manufacturer"
echo "EC25 (qmapd-sim)" >"$G/strings/0x409/product"
# The EC25's interfaces 0-3 are serial ports, each with a bulk pair; dummy_hcd has only four
# bulk IN and four bulk OUT endpoints, and the QMI function needs one of each. So 0-2 are
# serial functions and 3 is a function without bulk endpoints (a vendor HID, interrupt IN
# only, no driver in the guest): the QMI function still sits at interface 4.
for i in 0 1 2; do
	mkdir "$G/functions/gser.$i"
	ln -s "$G/functions/gser.$i" "$G/configs/c.1/"
done
H=$G/functions/hid.3
mkdir "$H"
echo 1 >"$H/no_out_endpoint"
echo 8 >"$H/report_length"
# Vendor page, one 8-byte input report.
printf '\x06\x00\xff\x09\x01\xa1\x01\x15\x00\x26\xff\x00\x75\x08\x95\x08\x09\x01\x81\x02\xc0' \
	>"$H/report_desc"
ln -s "$H" "$G/configs/c.1/"
mkdir "$G/functions/ffs.qmi" "$FFS"
mount -t functionfs qmi "$FFS"
ln -s "$G/functions/ffs.qmi" "$G/configs/c.1/"

SIM_ALWAYS_CONNECTED=no start_sim --profile strict --data-interface 4 --ffs "$FFS"
wait_for 10 "the sim's FunctionFS endpoints" test -e "$FFS/ep3"
t0=$(date +%s%N)
ls /sys/class/udc >"$G/UDC"
wait_for 20 "cdc-wdm0 (qmi_wwan bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0" test -e /sys/class/net/wwan0
echo "ok: qmi_wwan bound in $((($(date +%s%N) - t0) / 1000000)) ms:" \
	"$(basename "$(readlink /sys/class/net/wwan0/device/driver)")" \
	"on interface $(cat /sys/class/net/wwan0/device/bInterfaceNumber)"
expect_eq "wwan0's interface" "$(cat /sys/class/net/wwan0/device/bInterfaceNumber)" 04

out=$(timeout 20 qmicli -d /dev/cdc-wdm0 --dms-get-ids 2>&1) || fail "qmicli --dms-get-ids: $out"
echo "$out"
[[ $out == *"IMEI:"* ]] || fail "no IMEI in qmicli's answer"
echo "ok: DMS Get IDs answered through qmi_wwan/cdc-wdm and the gadget"

# qmapd takes the modem from qmi_wwan: detach, claim, QMI over its own usbfs transfers, one
# session, a ping through the mux; on exit the interface goes back to qmi_wwan.
# Not yet by default (VM_QMAPD=1 runs it): qmapd detaches qmi_wwan, claims the interface with
# usbfs memory and negotiates the data format, then its CTL client allocations time out after
# "a response came without RESPONSE_AVAILABLE" (sim-ffs.c's response queue and notifications
# across the driver switch are the first suspect). VM_KEEP=1 keeps the logs of such a run.
if [ "${VM_QMAPD:-0}" != 1 ]; then
	echo "vm-gadget-qmi: passed (qmapd on the gadget: VM_QMAPD=1, in progress)"
	exit 0
fi
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = usb:2c7c:0125
control = qmi
control-socket = $E2E_TMP/control

[dbus]
enabled = no

[mux.1]
interface = qmap1
apn = internet
routes = 198.51.100.1/32
CONF
t0=$(date +%s%N)
ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
# VM_KEEP: what a hang leaves behind, copied to the out share while the test runs.
if [ "${VM_KEEP:-0}" = 1 ]; then
	(while sleep 2; do
		cp "$E2E_TMP/qmapd.log" "$E2E_TMP/sim.log" "$VM_OUT/" 2>/dev/null
		dmesg >"$VM_OUT/dmesg"
		ps -eo pid,stat,wchan:32,args >"$VM_OUT/ps"
	done) &
	E2E_PIDS+=($!)
fi
wait_for 30 "qmap1 with carrier" has_carrier "$NS_HOST" qmap1
echo "ok: qmapd connected mux 1 in $((($(date +%s%N) - t0) / 1000000)) ms"
grep -E "detached the kernel driver|claimed" "$E2E_TMP/qmapd.log"
grep -q "detached the kernel driver (qmi_wwan)" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not log detaching qmi_wwan"
[ ! -e /sys/class/net/wwan0 ] || fail "wwan0 still there while qmapd holds the interface"
in_host ping -c 3 -i 0.2 -W 5 198.51.100.1 >/dev/null || fail "ping through mux 1 over the gadget"
echo "ok: ping through mux 1, the kernel's USB stack and the gadget"
stop_qmapd
wait_for 10 "cdc-wdm0 back (qmi_wwan re-bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0 back" test -e /sys/class/net/wwan0
echo "ok: the interface handed back to $(basename "$(readlink /sys/class/net/wwan0/device/driver)")"
