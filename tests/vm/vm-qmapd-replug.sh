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
# Then two modems of one model (e2e-usb-modems' scenario): a second EC25 gadget on a second
# dummy_hcd (bus 2), each modem driven by its own qmapd pinned by port path (usb-path:1-1:4,
# usb-path:2-1:4); traffic on both, unplugging one takes only its carrier while the other's
# ping loses nothing, the replugged one is claimed again, and at exit both go back to
# qmi_wwan.
source "$(dirname "$0")/../support/lib.sh" || exit 1
source "$(dirname "$0")/vm-lib.sh"

if [ "${1:-}" != --guest ]; then
	[ "$(id -u)" = 0 ] || skip "needs root (qemu's 9p export of / as root)"
	# udev is not installed on the host (its daemon would take the host's devices): it is
	# unpacked once, as the kernel is, and where it cannot be fetched the test skips.
	UDEVADM=$( (unavailable() { skip "$*"; }; need_unpacked udev bin/udevadm)) || exit $?
	export UDEVADM
	# Two plugs, two sessions each, then two modems: longer than one boot's default.
	VM_MODULE_PARAMS="dummy_hcd:num=2"
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
# hears nothing and looks at sysfs every second instead: vm-gadget-qmi.sh's last row). This
# test is about the hotplug events themselves. The guest is the test's alone, so the
# host-side name becomes a name for it.
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

# Both plugs timed from the UDC bound to both carriers on (vm_timed_plug, shell builtins: in
# the TCG guest, polling qmapctl and jq made these figures seconds longer).
vm_timed_plug vm_gadget_plug
FIRST_PLUG_MS=$PLUG_MS
for m in 1 2; do
	vm_wait 60 "mux $m of the discovered modem connected" mux_is $m connected
done
echo "ok: plugged in -> found by hotplug, both sessions up in $FIRST_PLUG_MS ms"
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

# Two modems of one model, told apart by port path. Modem a is the EC25 above on bus 1 (its
# sim still runs); modem b a second EC25 gadget, serial of its own, on the second UDC (bus 2),
# with a sim of its own: mux 1 = 192.0.2.130, network side 198.51.100.3.
vm_gadget_new qmapdb 0x2c7c 0x0125 Quectel "EC25 (qmapd-sim b)" qmapdsimb
vm_gadget_ec25_ports
FFS_B=/tmp/ffs-qmi-b
vm_gadget_ffs qmib "$FFS_B"
start_named_sim b --profile strict --data-interface 4 --ffs "$FFS_B" --stats-file "$E2E_TMP/sim-b.stats" \
	--net-address 198.51.100.3/32 --mux 1=192.0.2.130/25,2001:db8:3::2/64 "${V[@]}"
SIM_B_PID=$NAMED_SIM_PID
wait_for 10 "sim b's FunctionFS endpoints" test -e "$FFS_B/ep3"
vm_gadget_plug dummy_udc.1
wait_for 20 "modem b at 2-1 (qmi_wwan bound)" test -e /sys/bus/usb/devices/2-1:1.4/driver
expect_eq "modem b's serial at 2-1" "$(cat /sys/bus/usb/devices/2-1/serial)" qmapdsimb

# start_port_qmapd NAME PORT ROUTE: qmapd NAME for usb-path:PORT:4 alone, one mux (qmapNAME)
# routing ROUTE; sets QMAPD_NAME.
start_port_qmapd() {
	cat >"$E2E_TMP/qmapd-$1.conf" <<-CONF
	[device]
	device = usb-path:$2:4
	control = qmi
	control-link = $E2E_TMP/qmi-$1
	control-socket = $E2E_TMP/control-$1

	[dbus]
	enabled = no

	[mux.1]
	interface = qmap$1
	apn = internet
	routes = $3/32
	CONF
	ip netns exec "$NS_HOST" "$QMAPD" "${V[@]}" -c "$E2E_TMP/qmapd-$1.conf" \
		--stats-file "$E2E_TMP/qmapd-$1.stats" >"$E2E_TMP/qmapd-$1.log" 2>&1 &
	E2E_PIDS+=($!)
	eval "QMAPD_$1=$!"
}
start_port_qmapd a 1-1 198.51.100.1
start_port_qmapd b 2-1 198.51.100.3
for m in a b; do
	vm_wait 60 "qmap$m with carrier" has_carrier "$NS_HOST" qmap$m
done
grep -q "usb 1-1 (2c7c:0125) if4: claimed" "$E2E_TMP/qmapd-a.log" || fail "qmapd a did not claim 1-1"
grep -q "usb 2-1 (2c7c:0125) if4: claimed" "$E2E_TMP/qmapd-b.log" || fail "qmapd b did not claim 2-1"
grep -q "serial 'qmapdsimb'" "$E2E_TMP/qmapd-b.log" || fail "qmapd b's modem is not qmapdsimb"
! grep -q "usb 2-1" "$E2E_TMP/qmapd-a.log" || fail "qmapd a touched 2-1"
! grep -q "usb 1-1" "$E2E_TMP/qmapd-b.log" || fail "qmapd b touched 1-1"
for target in 198.51.100.1 198.51.100.3; do
	in_host ping -c 3 -i 0.2 -W 5 "$target" >/dev/null || fail "ping $target"
done
echo "ok: two modems, each claimed by its own qmapd by port path, traffic on both"

# Unplug modem b while modem a carries pings: modem a loses nothing.
in_host ping -c 60 -i 0.05 -W 2 198.51.100.1 >"$E2E_TMP/ping-a.out" 2>&1 &
PING_A=$!
E2E_PIDS+=($PING_A)
sleep 0.5
vm_gadget_unplug # VM_GADGET is modem b's
wait_for 10 "carrier off on qmapb" no_carrier qmapb
has_carrier "$NS_HOST" qmapa || fail "qmapa lost its carrier when modem b was unplugged"
wait "$PING_A" || fail "ping over modem a while modem b was unplugged: $(tail -2 "$E2E_TMP/ping-a.out")"
grep -q " 0% packet loss" "$E2E_TMP/ping-a.out" || fail "loss on modem a: $(grep loss "$E2E_TMP/ping-a.out")"
grep -q "modem disconnected" "$E2E_TMP/qmapd-b.log" || fail "qmapd b did not log the unplug"
! grep -q "modem disconnected" "$E2E_TMP/qmapd-a.log" || fail "qmapd a saw a disconnect"
echo "ok: unplugging modem b took only its carrier; 60 pings over modem a, no loss"

vm_gadget_plug dummy_udc.1
vm_wait 60 "carrier on qmapb after the replug" has_carrier "$NS_HOST" qmapb
in_host ping -c 3 -i 0.2 -W 5 198.51.100.3 >/dev/null || fail "ping over modem b after the replug"
expect_eq "qmapd b's claims" "$(grep -c "usb 2-1 (2c7c:0125) if4: claimed" "$E2E_TMP/qmapd-b.log")" 2
expect_eq "qmapd a's claims" "$(grep -c "usb 1-1 (2c7c:0125) if4: claimed" "$E2E_TMP/qmapd-a.log")" 1
echo "ok: modem b replugged and claimed again"

stop_process "qmapd a" "$QMAPD_a"
stop_process "qmapd b" "$QMAPD_b"
for port in 1-1 2-1; do
	wait_for 10 "qmi_wwan back on $port" test -e /sys/bus/usb/devices/$port:1.4/driver
	expect_eq "$port's driver after exit" "$(basename "$(readlink /sys/bus/usb/devices/$port:1.4/driver)")" qmi_wwan
done
echo "ok: at exit both modems went back to qmi_wwan"
echo "vm-qmapd-replug: passed"
