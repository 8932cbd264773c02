#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd on the real USB stack with real udev (vm-lib.sh): in the guest, systemd-udevd (from
# Debian's udev package, unpacked, never installed on the host) runs with its own rules and
# the project's 70-qmapd.rules. qmapd runs with discovery (no `device =`) before the modem
# exists; qmapd-sim's EC25 gadget is plugged in, the rule marks it (QMAPD_MODEM,
# ID_MM_DEVICE_IGNORE on the device and on qmi_wwan's cdc-wdm0), libusb's hotplug (through
# udevd) tells qmapd, which takes it from qmi_wwan as modem0 and brings up two sessions.
# Then the cable is pulled while iperf3 runs (the gadget's UDC unbound): carrier off, every
# transfer back, devices and addresses kept; plugged in again: the same modem name, the same
# mux devices (ifindex), both sessions up, traffic again. At exit qmi_wwan gets the interface.
source "$(dirname "$0")/../support/lib.sh" || exit 1
source "$(dirname "$0")/vm-lib.sh"

if [ "${1:-}" != --guest ]; then
	[ "$(id -u)" = 0 ] || skip "needs root (qemu's 9p export of / as root)"
	# udev is not installed on the host (its daemon would take the host's devices): it is
	# unpacked once, as the kernel is, and where it cannot be fetched the test skips.
	UDEVADM=$( (unavailable() { skip "$*"; }; need_unpacked udev bin/udevadm)) || exit $?
	export UDEVADM
	# Two plugs, two sessions each: longer than one boot's default.
	VM_TIMEOUT=${VM_TIMEOUT:-300} VM_ENV="UDEVADM VM_VERBOSE" vm_run "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" --guest
	exit $?
fi

# In the guest, root of its own kernel.
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need iperf3 iperf3
need jq jq
e2e_setup
# qmapd in the guest's own network namespace: libusb hears of devices through udevd's
# netlink messages, which reach only sockets in udevd's namespace (in another one, qmapd
# would never see the modem arrive). The guest is the test's alone, so the host-side name
# becomes a name for it.
ip netns del "$NS_HOST"
touch "/run/netns/$NS_HOST"
mount --bind /proc/1/ns/net "/run/netns/$NS_HOST"
ip -n "$NS_HOST" link set lo up
# Before e2e_cleanup, which would stop every process of NS_HOST: here the test itself.
vm_host_ns_release() { umount "/run/netns/$NS_HOST" && rm -f "/run/netns/$NS_HOST"; }
trap 'rc=$?; set +e; [ $rc = 0 ] || { vm_usb_diag; tail -n 20 "$E2E_TMP/udevd.log" >&2; }; vm_host_ns_release; (exit $rc); e2e_cleanup' EXIT
V=()
[ "${VM_VERBOSE:-0}" = 1 ] && V=(-v)
FFS=/tmp/ffs-qmi
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
udevadm() { /run/vm-bin/udevadm "$@"; }
status() { "${CTL[@]}" -j status; }
mux_is() { [ "$(status | jq -r ".modems[].muxes[] | select(.id == $1) | .state")" = "$2" ]; }
# The network device qmi_wwan made on interface 4, whatever udev named it.
wwan_dev() { ls /sys/bus/usb/devices/1-1:1.4/net 2>/dev/null; }
has_wwan() { [ -n "$(wwan_dev)" ]; }
udev_prop() { udevadm info --query=property "$1" | sed -n "s/^$2=//p"; }

vm_gadget_ec25 "$FFS"
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25,2001:db8:1::2/64 --mux 2=203.0.113.2/24,2001:db8:2::2/64)
SIM_ALWAYS_CONNECTED=no start_sim --profile strict --data-interface 4 --ffs "$FFS" "${V[@]}"
wait_for 10 "the sim's FunctionFS endpoints" test -e "$FFS/ep3"
vm_udevd "$UDEVADM"
echo "ok: systemd-udevd $(udevadm --version) running with 70-qmapd.rules"

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control

[dbus]
enabled = no

[mux.1]
apn = internet
routes = 198.51.100.1/32 2001:db8:ff::1/128

[mux.2]
apn = internet
routes = 198.51.100.2/32 2001:db8:ff::2/128
CONF
ip netns exec "$NS_HOST" "$QMAPD" "${V[@]}" -c "$E2E_TMP/qmapd.conf" \
	--stats-file "$E2E_TMP/qmapd.stats" >"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"

t0=$(now_ms)
vm_gadget_plug
for m in 1 2; do
	vm_wait 60 "mux $m of the discovered modem connected" mux_is $m connected
done
echo "ok: plugged in -> found by hotplug, both sessions up in $(($(now_ms) - t0)) ms"
expect_eq "modem name" "$(status | jq -r '[.modems[].name] | join(",")')" modem0
expect_eq "mux devices" "$(status | jq -r '[.modems[].muxes[].interface] | sort | join(",")')" \
	modem0.1,modem0.2
grep -q "detached the kernel driver (qmi_wwan)" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not take the interface from qmi_wwan"
udevadm settle --timeout=10
expect_eq "QMAPD_MODEM on the USB device (70-qmapd.rules)" "$(udev_prop /sys/bus/usb/devices/1-1 QMAPD_MODEM)" 1
expect_eq "ID_MM_DEVICE_IGNORE on the USB device" "$(udev_prop /sys/bus/usb/devices/1-1 ID_MM_DEVICE_IGNORE)" 1
expect_eq "ID_MM_DEVICE_IGNORE on the QMI interface" "$(udev_prop /sys/bus/usb/devices/1-1:1.4 ID_MM_DEVICE_IGNORE)" 1

for target in 198.51.100.1 2001:db8:ff::2; do
	in_host ping -c 2 -i 0.2 -W 5 "$target" >/dev/null || fail "ping $target"
done
echo "ok: ping through modem0.1 (IPv4) and modem0.2 (IPv6)"
IF1=$(ifindex modem0.1)
IF2=$(ifindex modem0.2)

# The cable pulled while iperf3 carries data down mux 1.
start_iperf3_server
in_host iperf3 -c 198.51.100.1 -R -t 30 >"$E2E_TMP/iperf3-cut.txt" 2>&1 &
IPERF_PID=$!
E2E_PIDS+=($IPERF_PID)
vm_unplug_under_traffic vm_gadget_unplug

vm_replug_keeps_sessions vm_gadget_plug
expect_eq "detaches of qmi_wwan" "$(grep -c "detached the kernel driver (qmi_wwan)" "$E2E_TMP/qmapd.log")" 2
echo "ok: same name, devices and sessions after the replug; ping again"

stop_qmapd
wait_for 10 "cdc-wdm0 back (qmi_wwan re-bound)" test -c /dev/cdc-wdm0
wait_for 5 "qmi_wwan's network device back" has_wwan
expect_eq "ID_MM_DEVICE_IGNORE on cdc-wdm0" "$(udev_prop /dev/cdc-wdm0 ID_MM_DEVICE_IGNORE)" 1
echo "ok: at exit the interface went back to qmi_wwan ($(wwan_dev), cdc-wdm0)"
echo "vm-qmapd-replug: passed"
