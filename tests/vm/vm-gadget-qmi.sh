#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd-sim as a Quectel EC25 on the real USB stack (vm-lib.sh), and qmapd taking it from the
# kernel's driver. In the guest, a configfs gadget 2c7c:0125 on dummy_hcd with serial-like
# functions at interfaces 0-3 and qmapd-sim's FunctionFS QMI function at interface 4 (--ffs).
# The guest's USB core enumerates it, the kernel's qmi_wwan binds (cdc-wdm0 and wwan0 appear),
# and qmicli's DMS Get IDs travels through cdc-wdm's encapsulated commands and the interrupt
# endpoint to the sim and back. Then qmapd detaches qmi_wwan, claims the interface, receives
# into usbfs-mapped memory (logged, and counted as transfers_mapped), sets the data format,
# binds the muxes to interface 4, shares its QMI channel with qmicli -p, brings up two muxes, carries ping (IPv4 and IPv6) and iperf3 both ways between the guest's
# namespaces with its counters equal to the sim's, and at exit hands the interface back:
# cdc-wdm0 and wwan0 reappear and qmicli works through them again. The gadget counts
# SET_CONTROL_LINE_STATE: DTR=1 once qmapd claimed, DTR=0 at its exit. Before that exit,
# e2e-usb.sh's faults as the gadget makes them at the USB level (halts of bulk IN and OUT, a
# short transfer, bulk OUT unread past qmapd's timeout, a stalled command, a withheld
# RESPONSE_AVAILABLE), each counted exactly with the sessions kept, and the modem gone while
# a SEND_ENCAPSULATED_COMMAND is in flight (a disconnect; the same qmapd takes the
# replugged modem back without udevd, both sessions back). Then the same modem by its port
# path (usb-path:1-1:4), a path with nothing there (usb-path:1-2): qmapd waits and claims
# nothing, and discovery (device = auto) taking the modem plugged in after qmapd started,
# without udevd, then with udevd running and qmapd in a network namespace of its own.
source "$(dirname "$0")/../support/lib.sh" || exit 1
source "$(dirname "$0")/vm-lib.sh"

if [ "${1:-}" != --guest ]; then
	[ "$(id -u)" = 0 ] || skip "needs root (qemu's 9p export of / as root)"
	# udevd for the last row only; unpacked as vm-qmapd-replug.sh does.
	UDEVADM=$( (unavailable() { skip "$*"; }; need_unpacked udev bin/udevadm)) || exit $?
	export UDEVADM
	VM_TIMEOUT=${VM_TIMEOUT:-270} VM_ENV="UDEVADM VM_VERBOSE" vm_run "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" --guest
	exit $?
fi

# In the guest, root of its own kernel.
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need qmicli libqmi-utils
need /usr/libexec/qmi-proxy libqmi-proxy
need iperf3 iperf3
need jq jq
e2e_setup
trap 'rc=$?; set +e; [ $rc = 0 ] || vm_usb_diag; (exit $rc); e2e_cleanup' EXIT
V=()
[ "${VM_VERBOSE:-0}" = 1 ] && V=(-v)
FFS=/tmp/ffs-qmi
vm_gadget_ec25 "$FFS"

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25,2001:db8:1::2/64 --mux 2=203.0.113.2/24,2001:db8:2::2/64)
SIM_ALWAYS_CONNECTED=no start_sim --profile strict --data-interface 4 --ffs "$FFS" \
	--ffs-faults "$E2E_TMP/ffs-faults" "${V[@]}"
wait_for 10 "the sim's FunctionFS endpoints" test -e "$FFS/ep3"
t0=$(date +%s%N)
vm_gadget_plug
wait_for 20 "cdc-wdm0 (qmi_wwan bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0" test -e /sys/class/net/wwan0
echo "ok: qmi_wwan bound in $((($(date +%s%N) - t0) / 1000000)) ms:" \
	"$(basename "$(readlink /sys/class/net/wwan0/device/driver)")" \
	"on interface $(cat /sys/class/net/wwan0/device/bInterfaceNumber)"
expect_eq "wwan0's interface" "$(cat /sys/class/net/wwan0/device/bInterfaceNumber)" 04

dms_ids() {
	local out
	out=$(timeout 20 qmicli -d /dev/cdc-wdm0 --dms-get-ids 2>&1) || fail "qmicli --dms-get-ids: $out"
	[[ $out == *"IMEI:"* ]] || fail "no IMEI in qmicli's answer: $out"
}
dms_ids
echo "ok: DMS Get IDs answered through qmi_wwan/cdc-wdm and the gadget"
# The gadget's SET_CONTROL_LINE_STATE count before qmapd (whatever qmi_wwan sent).
sim_stats() {
	rm -f "$E2E_TMP/sim.stats"
	kill -USR1 "$SIM_PID"
	wait_for 5 "the sim's counters" test -s "$E2E_TMP/sim.stats"
}
sim_stats
dtr_set0=$(sstat ffs_dtr_set ffs_dtr_set)

# qmapd takes the modem from qmi_wwan.
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = usb:2c7c:0125
control = qmi
control-link = $E2E_TMP/qmi0
control-socket = $E2E_TMP/control

[dbus]
enabled = no

[mux.1]
interface = qmap1
apn = internet
routes = 198.51.100.1/32 2001:db8:ff::1/128

[mux.2]
interface = qmap2
apn = internet
routes = 198.51.100.2/32 2001:db8:ff::2/128
CONF
mux_is() { [ "$("${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state")" = "$2" ]; }
start_qmapd_main() { # its log appended to qmapd.log
	ip netns exec "$NS_HOST" "$QMAPD" "${V[@]}" -c "$E2E_TMP/qmapd.conf" \
		--stats-file "$E2E_TMP/qmapd.stats" >>"$E2E_TMP/qmapd.log" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
}
t0=$(date +%s%N)
start_qmapd_main
# VM_KEEP: what a hang leaves behind, copied to the out share while the test runs.
if [ "${VM_KEEP:-0}" = 1 ]; then
	(while sleep 2; do
		cp "$E2E_TMP/qmapd.log" "$E2E_TMP/sim.log" "$VM_OUT/" 2>/dev/null
		dmesg >"$VM_OUT/dmesg"
	done) &
	E2E_PIDS+=($!)
fi
for m in 1 2; do
	vm_wait 60 "mux $m connected over the gadget" mux_is $m connected
done
wait_for 10 "qmap1 with carrier" has_carrier "$NS_HOST" qmap1
wait_for 10 "qmap2 with carrier" has_carrier "$NS_HOST" qmap2
echo "ok: qmapd connected both muxes in $((($(date +%s%N) - t0) / 1000000)) ms"
grep -q "detached the kernel driver (qmi_wwan)" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not log detaching qmi_wwan"
grep -q "usb 1-1 (2c7c:0125) if4: claimed (.*(usbfs memory)" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not claim interface 4 with usbfs memory: $(grep claimed "$E2E_TMP/qmapd.log")"
[ ! -e /sys/class/net/wwan0 ] || fail "wwan0 still there while qmapd holds the interface"
[ ! -e /dev/cdc-wdm0 ] || fail "cdc-wdm0 still there while qmapd holds the interface"
expect_eq "interface 4's driver" "$(basename "$(readlink /sys/bus/usb/devices/1-1:1.4/driver)")" usbfs
expect_eq "data interface and transport in qmapctl status" \
	"$("${CTL[@]}" -j status | jq -r '.modems[0].modem | "\(.["data-format"]["data-interface"]) \(.transport)"')" \
	"4 usb:2c7c:0125"
# qmicli beside qmapd: through qmi-proxy and qmapd's control link, over the gadget's ep0.
out=$(in_host timeout 30 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids 2>&1) ||
	fail "qmicli -p through qmapd's control link: $out"
[[ $out == *"IMEI:"* ]] || fail "no IMEI in qmicli -p's answer: $out"
echo "ok: qmicli -p --dms-get-ids through qmi-proxy and qmapd's control link"

for target in 198.51.100.1 2001:db8:ff::1 198.51.100.2 2001:db8:ff::2; do
	in_host ping -c 3 -i 0.2 -W 5 "$target" >/dev/null || fail "ping $target over the gadget"
done
in_net ping -c 3 -i 0.2 -W 5 192.0.2.2 >/dev/null || fail "ping from the network to 192.0.2.2"
echo "ok: ping both ways, IPv4 and IPv6, through both muxes and the kernel's USB stack"

start_iperf3_server
in_host iperf3 -c 198.51.100.1 -t 2 >"$E2E_TMP/iperf3-up.txt" || fail "iperf3 uplink over the gadget"
in_host iperf3 -c 198.51.100.2 -t 2 -R >"$E2E_TMP/iperf3-down.txt" || fail "iperf3 downlink over the gadget"
echo "ok: iperf3 both ways: up $(grep -m1 receiver "$E2E_TMP/iperf3-up.txt" | grep -o '[0-9.]* [KMG]bits/sec')," \
	"down $(grep -m1 receiver "$E2E_TMP/iperf3-down.txt" | grep -o '[0-9.]* [KMG]bits/sec') (TCG guest)"

# Every transfer counted the same on both sides of the real USB stack, and each one received
# into usbfs memory.
refresh_stats
expect_eq "bulk IN transfers received into usbfs memory" "$(qstat device: transfers_mapped)" \
	"$(qstat device: transfers)"
expect_ge "bulk IN transfers" "$(qstat device: transfers)" 100
expect_eq "qmapd's bulk IN transfers = the gadget's" "$(qstat device: transfers)" \
	"$(sstat ffs_bulk_in ffs_bulk_in)"
expect_eq "the sim's aggregates = the gadget's sent and dropped" "$(sstat dl_aggregates dl_aggregates)" \
	"$(($(sstat ffs_bulk_in ffs_bulk_in) + $(sstat ffs_bulk_in_dropped ffs_bulk_in_dropped)))"
expect_eq "qmapd's uplink aggregates = the sim's bulk OUT transfers" \
	"$(qstat device: ul_aggregates)" "$(sstat ul_transfers ul_transfers)"
expect_eq "the gadget's bulk OUT transfers = the sim's" "$(sstat ffs_bulk_out ffs_bulk_out)" \
	"$(sstat ul_transfers ul_transfers)"
expect_eq "ZLPs sent = ZLPs seen" "$(qstat device: ul_zlp)" "$(sstat ul_zlp ul_zlp)"
echo "ok: downlink aggregates dropped by the gadget (host not reading): $(sstat ffs_bulk_in_dropped ffs_bulk_in_dropped)," \
	"ZLPs down $(sstat ffs_bulk_in_zlp ffs_bulk_in_zlp), up $(sstat ul_zlp ul_zlp)"
# The Bind Mux Data Port requests named the interface libusb read from the descriptors.
expect_ge "binds with Endpoint Info" "$(sstat binds_with_endpoint binds_with_endpoint)" 2
expect_eq "interface named in Bind Mux Data Port" "$(sstat bind_interface bind_interface)" 4
expect_eq "requests without Endpoint Info" "$(sstat endpoint_missing endpoint_missing)" 0
# DTR set when qmapd claimed the interface (qmi_wwan's DTR quirk, PROTOCOLS.md 1.9).
expect_eq "SET_CONTROL_LINE_STATE with DTR=1 from qmapd" \
	"$(($(sstat ffs_dtr_set ffs_dtr_set) - dtr_set0)) $(sstat ffs_line_state ffs_line_state)" "1 1"
dtr_clear0=$(sstat ffs_dtr_clear ffs_dtr_clear)
expect_eq "transfer errors" "$(qstat device: transfer_errors)" 0
expect_eq "uplink errors" "$(qstat device: ul_errors)" 0
expect_eq "responses fetched without RESPONSE_AVAILABLE" "$(qstat device: resp_polled)" 0
echo "ok: qmapctl stats: transfers-mapped $("${CTL[@]}" -j stats | jq '.modems[0].device["transfers-mapped"]')"

# Faults as a modem makes them at the USB level, carried by the real stack (sim-ffs.h): the
# gadget halts bulk IN and bulk OUT, sends a 2-byte transfer, stops reading bulk OUT for 7 s,
# stalls a SEND_ENCAPSULATED_COMMAND and keeps a RESPONSE_AVAILABLE back. qmapd must do what
# e2e-usb.sh asks under umockdev: clear each halt once and go on, count every failed
# transfer, send the command again, fetch the response unasked, keep the sessions. -EPROTO
# and -EOVERFLOW cannot be made here (tests/README.md). In a TCG guest every program started
# costs, so the counters are read with bash alone.
ffs_fault() { # "KIND [N]"...: the gadget makes them (SIGRTMIN+4 reads --ffs-faults)
	printf '%s\n' "$@" >"$E2E_TMP/ffs-faults"
	kill -RTMIN+4 "$SIM_PID"
	wait_for 5 "the gadget to take the faults" test ! -e "$E2E_TMP/ffs-faults"
}
pings() { # COUNT TARGET: the echo replies received, waiting 1 s for the last
	{ in_host ping -c "$1" -i 0.2 -W 1 "$2" || true; } | sed -n 's/.* \([0-9]*\) received.*/\1/p'
}
declare -A Q S Q0 S0
counters() { # qmapd's device counters into Q, the sim's into S; "mark" keeps them in Q0, S0
	local line kv k
	refresh_stats
	Q=()
	while read -r line; do
		[[ $line == "modem0 device: "* ]] || continue
		for kv in ${line#modem0 device: }; do Q[${kv%%=*}]=${kv#*=}; done
	done <"$E2E_TMP/qmapd.stats"
	vm_sim_counters
	[ "${1:-}" = mark ] || return 0
	for k in "${!Q[@]}"; do Q0[$k]=${Q[$k]}; done
	for k in "${!S[@]}"; do S0[$k]=${S[$k]}; done
}
in_urbs() { # the host's transfers on dummy_hcd's queue for bulk IN (endpoint 2 IN), into URBS
	local line
	URBS=0
	while read -r line; do [[ $line != *" ep2in-bulk "* ]] || URBS=$((URBS + 1)); done \
		</sys/devices/platform/dummy_hcd.0/urbs
}
log_lines() { grep -c "$1" "$E2E_TMP/qmapd.log" || true; }
t_faults=$(now_ms)
counters mark
in_urbs
expect_eq "bulk IN transfers queued on dummy_hcd" "$URBS" "${Q[rx_transfers_posted]}"
stall_lines0=$(log_lines 'bulk IN stall')
# Bulk IN halted while all its transfers wait: dummy_hcd fails every one with -EPIPE; the
# 2-byte transfer and the echo replies wait in the gadget until qmapd cleared the halt. Bulk
# OUT halted: the next transfer fails (an echo request, or another packet qmapd sends up).
ffs_fault stall short out-stall
replies=$(pings 5 198.51.100.1)
counters
expect_ge "echo replies through the halts" "$replies" 4
expect_eq "faults the gadget made (stall short out-stall)" \
	"${S[ffs_injected_stall]} ${S[ffs_injected_short]} ${S[ffs_injected_out_stall]}" "1 1 1"
expect_eq "bulk IN errors: every queued transfer stalled, and the short one" \
	$((Q[transfer_errors] - Q0[transfer_errors])) $((Q[rx_transfers_posted] + 1))
expect_eq "halts cleared: one per halt" $((Q[halts_cleared] - Q0[halts_cleared])) 2
expect_eq "bulk IN stall log lines" $(($(log_lines 'bulk IN stall') - stall_lines0)) 1
expect_eq "bulk IN transfers qmapd took = aggregates the gadget sent" \
	$((Q[transfers] - Q0[transfers])) $((S[ffs_bulk_in] - S0[ffs_bulk_in]))
# Every aggregate qmapd sent reached the sim through the gadget, or is counted as lost.
expect_eq "bulk OUT transfers the gadget took = the sim's" \
	$((S[ffs_bulk_out] - S0[ffs_bulk_out])) $((S[ul_transfers] - S0[ul_transfers]))
expect_eq "bulk OUT errors = aggregates lost" $((Q[ul_errors] - Q0[ul_errors])) \
	$((Q[ul_aggregates] - Q0[ul_aggregates] - S[ul_transfers] + S0[ul_transfers]))
expect_ge "bulk OUT errors" $((Q[ul_errors] - Q0[ul_errors])) 1
in_urbs
expect_eq "bulk IN transfers queued on dummy_hcd again" "$URBS" "${Q[rx_transfers_posted]}"
echo "ok: bulk IN and OUT halts cleared, the short transfer counted ($(($(now_ms) - t_faults)) ms)"

# Bulk OUT unread for 7 s: an echo request sent now waits, NAKed, until qmapd's 5 s OUT
# timeout takes it back. Meanwhile the control path: a stalled command sent again, and its
# response kept from RESPONSE_AVAILABLE, both on one command. Once seen here: a
# RESPONSE_AVAILABLE of another command within the poll second fetched the unannounced
# response in its place and left the queue one behind. qmapd fetches it by asking, after the
# poll second or another notification, and asks again until the gadget has none: a second
# client gets its own answer, and nothing stays queued in the gadget.
t_out=$(now_ms)
counters mark
cmd_lines0=$(log_lines 'SEND_ENCAPSULATED_COMMAND: stall')
dms_proxy() { # WHAT: DMS Get IDs through qmi-proxy and qmapd's control link
	local out
	out=$(in_host timeout 30 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids 2>&1) ||
		fail "qmicli -p $1: $out"
	[[ $out == *"IMEI:"* ]] || fail "no IMEI in qmicli -p's answer $1: $out"
}
ffs_fault out-timeout cmd-stall int-silent
expect_eq "echo replies while bulk OUT is not read" "$(pings 1 198.51.100.1)" 0
dms_proxy "through a stalled command answered without RESPONSE_AVAILABLE"
dms_proxy "after the stalled, unannounced one"
ul_timed_out() { counters; [ "${Q[ul_errors]}" -gt "${Q0[ul_errors]}" ]; }
vm_wait 15 "the bulk OUT transfer to time out" ul_timed_out
t_timeout=$(($(now_ms) - t_out))
wait_for 15 "the gadget to read bulk OUT again" grep -q "bulk OUT read again" "$E2E_TMP/sim.log"
expect_eq "echo replies once the gadget reads again" "$(pings 3 198.51.100.1)" 3
counters
expect_eq "faults the gadget made (out-timeout cmd-stall int-silent)" \
	"${S[ffs_injected_out_timeout]} ${S[ffs_injected_cmd_stall]} ${S[ffs_injected_int_silent]}" "1 1 1"
expect_eq "bulk OUT errors = aggregates lost" $((Q[ul_errors] - Q0[ul_errors])) \
	$((Q[ul_aggregates] - Q0[ul_aggregates] - S[ul_transfers] + S0[ul_transfers]))
expect_ge "bulk OUT errors (timed out)" $((Q[ul_errors] - Q0[ul_errors])) 1
grep -q "bulk OUT timeout" "$E2E_TMP/qmapd.log" || fail "the bulk OUT timeout was not logged"
expect_eq "commands sent again, lost" \
	"$((Q[ctrl_retries] - Q0[ctrl_retries])) $((Q[ctrl_errors] - Q0[ctrl_errors]))" "1 0"
expect_eq "command stall log lines" $(($(log_lines 'SEND_ENCAPSULATED_COMMAND: stall') - cmd_lines0)) 1
# Asked for the unannounced response (polled or asked again after another), and asked
# again until the gadget had nothing left.
expect_ge "responses fetched unannounced" \
	$((Q[resp_polled] - Q0[resp_polled] + Q[resp_drained] - Q0[resp_drained])) 1
expect_ge "empty answers" $((S[ffs_get_empty] - S0[ffs_get_empty])) 1
expect_eq "responses left in the gadget" "${S[ffs_responses_queued]}" 0
expect_eq "muxes after the faults" \
	"$("${CTL[@]}" -j status | jq -r '[.modems[].muxes[].state] | join(" ")')" "connected connected"
expect_eq "disconnects" "${Q[disconnects]}" 0
echo "ok: bulk OUT timeout (counted after $t_timeout ms), command STALL and silent notification" \
	"($(($(now_ms) - t_out)) ms); every fault row: $(($(now_ms) - t_faults)) ms"

# The modem vanishes while a SEND_ENCAPSULATED_COMMAND is in flight (e2e-usb.sh's
# vanish-ctrl): the gadget holds qmicli's next command on ep0, neither taking its data nor
# answering, and the cable is pulled (the UDC unbound) while the host's control transfer
# waits, well within qmapd's 5 s control timeout. qmapd must count one disconnect and drop
# carrier; the gadget must drop the held request on the unbind (FunctionFS cancels it, the
# read of its data fails with EIDRM) and serve the next enumeration: qmi_wwan binds to it.
# Then the same qmapd takes the replugged modem back without udevd, which this guest does
# not run: libusb (built with udev) hears of no new device then and lists only the old
# ones, so qmapd looks at /sys/bus/usb/devices and makes its libusb context anew when it
# changed (vm-qmapd-replug.sh has udevd, whose hotplug events bring the modem back there).
t_vanish=$(now_ms)
counters mark
log_n0=$(wc -l <"$E2E_TMP/qmapd.log")
ffs_fault cmd-hold
in_host timeout 10 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids >/dev/null 2>&1 &
qmicli_pid=$!
wait_for 4 "the gadget to hold a SEND_ENCAPSULATED_COMMAND" grep -q "fault cmd-hold made" \
	"$E2E_TMP/sim.log"
vm_gadget_unplug
vanished() { counters; [ "${Q[disconnects]}" -gt "${Q0[disconnects]}" ]; }
wait_for 10 "the disconnect mid-control-transfer counted" vanished
wait_for 10 "carrier off on qmap1 after the vanish" no_carrier qmap1
kill "$qmicli_pid" 2>/dev/null # its request went with the modem
wait "$qmicli_pid" || true
expect_eq "disconnects" $((Q[disconnects] - Q0[disconnects])) 1
expect_eq "commands held, held commands dropped by the gadget" \
	"${S[ffs_injected_cmd_hold]} ${S[ffs_cmd_hold_dropped]}" "1 1"
expect_eq "the gadget unbound by the unplug" $((S[ffs_unbinds] - S0[ffs_unbinds])) 1
grep -q "held command dropped after [0-9]* ms: the host disabled the function" \
	"$E2E_TMP/sim.log" || fail "the gadget did not drop the held command on the unplug"
echo "ok: a modem gone mid-control-transfer is a disconnect ($(($(now_ms) - t_vanish)) ms); qmapd:"
tail -n +$((log_n0 + 1)) "$E2E_TMP/qmapd.log" | grep -E "^$LOG_TIME_RE (usb|modem|transport) " |
	head -n 8 | sed 's/^/  /'
qmapd_pid=$QMAPD_PID
claims0=$(grep -c ": claimed (" "$E2E_TMP/qmapd.log")
t_replug=$(now_ms)
vm_gadget_plug
for m in 1 2; do
	vm_wait 60 "mux $m connected after the vanish and replug" mux_is $m connected
done
wait_for 10 "carrier on qmap1 after the vanish and replug" has_carrier "$NS_HOST" qmap1
t_replug=$(($(now_ms) - t_replug))
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after the vanish and replug"
in_host ping -c 3 -i 0.2 -W 2 198.51.100.2 >/dev/null || fail "ping on mux 2 after the vanish and replug"
kill -0 "$qmapd_pid" 2>/dev/null && [ "$QMAPD_PID" = "$qmapd_pid" ] ||
	fail "the replugged modem was not taken by the qmapd that had it"
expect_eq "claims by the same qmapd after the replug" \
	$(($(grep -c ": claimed (" "$E2E_TMP/qmapd.log") - claims0)) 1
grep -q "udevd is not running, so libusb hears of no new device" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not say it watches sysfs without udevd"
echo "ok: the replugged modem taken back by the same qmapd without udevd, sessions back in" \
	"$t_replug ms ($(($(now_ms) - t_vanish)) ms in all)"
# The claim after the replug set DTR again; the hand-back below clears it once.
counters
dtr_clear0=${S[ffs_dtr_clear]}

# At exit the interface goes back to qmi_wwan, and the kernel's driver works again.
stop_qmapd
wait_for 10 "cdc-wdm0 back (qmi_wwan re-bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0 back" test -e /sys/class/net/wwan0
grep -q "handed back to the kernel driver" "$E2E_TMP/qmapd.log" || fail "the hand-back was not logged"
sim_stats
expect_eq "SET_CONTROL_LINE_STATE with DTR=0 from qmapd at exit" \
	"$(($(sstat ffs_dtr_clear ffs_dtr_clear) - dtr_clear0))" 1
dms_ids
echo "ok: the interface handed back to $(basename "$(readlink /sys/class/net/wwan0/device/driver)"), qmicli through cdc-wdm0 again"

# The same modem by its port path (usb-path:BUS-PORT:IFACE); a path with nothing plugged in
# (dummy_hcd's root hub has one port) leaves qmapd waiting, claiming nothing (e2e-usb.sh).
start_qmapd_at() { # device-spec log-file
	sed "s|^device = .*|device = $1|" "$E2E_TMP/qmapd.conf" >"$E2E_TMP/qmapd-path.conf"
	ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd-path.conf" >"$2" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
}
t_path=$(now_ms)
start_qmapd_at usb-path:1-1:4 "$E2E_TMP/qmapd-path.log"
vm_wait 60 "mux 1 connected with usb-path:1-1:4" mux_is 1 connected
in_host ping -c 2 -i 0.2 -W 5 198.51.100.1 >/dev/null || fail "ping with usb-path:1-1:4"
expect_eq "transport in qmapctl status" \
	"$("${CTL[@]}" -j status | jq -r '.modems[0].modem.transport')" usb-path:1-1:4
stop_qmapd
wait_for 10 "cdc-wdm0 back after usb-path:1-1:4" test -c /dev/cdc-wdm0
echo "ok: usb-path:1-1:4 finds, claims and carries traffic on the same modem"
start_qmapd_at usb-path:1-2 "$E2E_TMP/qmapd-nopath.log"
vm_wait 20 "qmapd to look for usb-path:1-2" grep -q "usb-path:1-2: no such device" \
	"$E2E_TMP/qmapd-nopath.log"
kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd exited with nothing at usb-path:1-2"
[ -c /dev/cdc-wdm0 ] && [ "$(basename "$(readlink /sys/bus/usb/devices/1-1:1.4/driver)")" = qmi_wwan ] ||
	fail "interface 4 taken from qmi_wwan with nothing at usb-path:1-2"
stop_qmapd
echo "ok: usb-path:1-2 (nothing there): qmapd waits, claims nothing" \
	"(both usb-path runs: $(($(now_ms) - t_path)) ms)"
# Discovery without udevd: qmapd started with no modem plugged in (device = auto) takes the
# EC25 once it is plugged in; discovery looks at sysfs as the transport does.
t_disc=$(now_ms)
vm_gadget_unplug
wait_for 10 "the modem unplugged" test ! -e /sys/bus/usb/devices/1-1
# control-link is one modem's ([device] without it: /run/qmapd/NAME.qmi per modem).
sed -e "s|^device = .*|device = auto|" -e "/^control-link = /d" "$E2E_TMP/qmapd.conf" \
	>"$E2E_TMP/qmapd-auto.conf"
ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd-auto.conf" >"$E2E_TMP/qmapd-auto.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
vm_wait 20 "qmapd (device = auto) answering" "${CTL[@]}" status
expect_eq "modems with nothing plugged in" "$("${CTL[@]}" -j status | jq '.modems | length')" 0
vm_gadget_plug
vm_wait 60 "mux 1 connected on the modem discovered without udevd" mux_is 1 connected
in_host ping -c 2 -i 0.2 -W 5 198.51.100.1 >/dev/null || fail "ping on the discovered modem"
grep -q "discovery: udevd is not running, so libusb hears of no new device" \
	"$E2E_TMP/qmapd-auto.log" || fail "discovery did not say it watches sysfs without udevd"
stop_qmapd
echo "ok: discovery without udevd: the modem plugged in after qmapd started is taken" \
	"($(($(now_ms) - t_disc)) ms)"
# The same with udevd running in the guest's first network namespace and qmapd in NS_HOST (as
# NetworkNamespacePath= or ip netns exec run it): udevd's netlink messages reach only
# sockets of its own namespace, so libusb's hotplug never fires for qmapd, which must tell
# that it is not in PID 1's namespace and look at sysfs instead.
t_ns=$(now_ms)
vm_gadget_unplug
wait_for 10 "the modem unplugged" test ! -e /sys/bus/usb/devices/1-1
vm_udevd "$UDEVADM"
ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd-auto.conf" >"$E2E_TMP/qmapd-netns.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
vm_wait 20 "qmapd (device = auto, udevd running) answering" "${CTL[@]}" status
vm_gadget_plug
vm_wait 60 "mux 1 connected on the modem plugged in with udevd in another namespace" \
	mux_is 1 connected
in_host ping -c 2 -i 0.2 -W 5 198.51.100.1 >/dev/null || fail "ping with udevd in another namespace"
grep -q "discovery: udevd's messages stay in PID 1's network namespace, not this one" \
	"$E2E_TMP/qmapd-netns.log" || fail "discovery did not say udevd's messages cannot reach it"
stop_qmapd
echo "ok: discovery with udevd in another network namespace: the modem plugged in is taken" \
	"($(($(now_ms) - t_ns)) ms)"
echo "vm-gadget-qmi: passed"
