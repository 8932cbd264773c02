#!/bin/bash
# SPDX-License-Identifier: MIT
# An MBIM modem on the usb transport end to end: qmapd's real libusb code against a umockdev
# testbed (tests/usb/usb-harness.c) playing a Sierra EM7455-like MBIM function whose URBs are
# carried to qmapd-sim --mbim. The function is found by class, its data interface set up as
# cdc_ncm does (the class requests, in order, on the communications interface, between
# alternate settings 0 and 1), qmapctl shows the function and the negotiated NTB parameters,
# at least 16 bulk IN transfers of the agreed input size stay in flight, and NTBs carry ping
# and iperf3 both ways on two sessions (control = none: the sim's sessions are always up),
# ZLPs counted alike on every side. Then an unplug and replug: negotiated again, traffic
# again. Needs root (namespaces) and /dev/pts.
source "$(dirname "$0")/../support/lib.sh" || exit 1

QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need_usb_harness
need iperf3 iperf3
need jq jq
[ -c /dev/ptmx ] || unavailable "no /dev/ptmx: the fake usbfs node is a pty"
e2e_setup
chmod 755 "$E2E_TMP"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
write_config "$E2E_TMP/qmapd.conf" "ntb-format = ${NTB:-16}"
sed -i "s|^device = .*|device = usb:1199:9079|" "$E2E_TMP/qmapd.conf"

# NTB32 offered by the function, asked for by qmapd when NTB=32; the 8-byte input size form
# (caps 20), as most MBIM modems announce.
start_sim --mbim --ntb "${NTB:-16}" --ntb-out-divisor 4 --ntb-out-alignment 4

mkfifo "$E2E_TMP/usb.ctl"
# FN_MTU: the extended descriptor's wMTU; below the muxes' 1500 qmapd warns at connect.
start_usb_harness --modem "kind=mbim,sim=$E2E_TMP/sim.sock,mtu=${FN_MTU:-1500}"

usb() { echo "$*" >"$E2E_TMP/usb.ctl"; }
usb_stats() {
	rm -f "$E2E_TMP/usb.stats"
	usb stats
	wait_for 5 "harness counters" test -s "$E2E_TMP/usb.stats"
}
ustat() { sed -n "s/^$1=//p" "$E2E_TMP/usb.stats"; }

ip netns exec "$NS_HOST" env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
	"$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"
for dev in qmap1 qmap2; do
	wait_for 20 "$dev with carrier over usb" has_carrier "$NS_HOST" "$dev"
done
wait_for 10 "the claim of the MBIM function on interface 12" \
	grep -q "usb 1-1 (1199:9079) if12: claimed (MBIM class 02/0e" "$E2E_TMP/qmapd.log"
echo "ok: the MBIM function claimed over the usb transport"

# The class requests in cdc_ncm's order, between the data alternate settings.
want="data-alt1,data-alt0,GET_NTB_PARAMETERS,SET_NTB_INPUT_SIZE/8,data-alt1"
[ "${NTB:-16}" = 32 ] &&
	want="data-alt1,data-alt0,GET_NTB_PARAMETERS,SET_NTB_FORMAT/32,SET_NTB_INPUT_SIZE/8,data-alt1"
usb_stats
expect_eq "class requests and alternate settings" "$(ustat class_sequence)" "$want"
expect_eq "class requests stalled" "$(ustat class_stalled)" 0
expect_eq "settings the sim refused" "$(ustat sim_class_stalled)" 0
expect_eq "bulk URBs before the data alternate setting" "$(ustat bulk_without_alt)" 0
expect_eq "interfaces claimed" "$(ustat claimed)" 2
expect_eq "kernel driver detached" "$(ustat driver_detached)" 1
expect_eq "DTR (cdc_mbim sets none)" "$(ustat dtr_set)" 0
expect_ge "bulk IN transfers in flight" "$(ustat bulk_in_urbs_pending)" 16

st=$("${CTL[@]}" -j status) || fail "qmapctl status"
df=$(jq -c '.modems[0].modem["data-format"]' <<<"$st")
expect_eq "transport" "$(jq -r .modems[0].modem.transport <<<"$st")" usb:1199:9079
expect_eq "protocol" "$(jq -r .protocol <<<"$df")" "mbim/ntb${NTB:-16}"
expect_eq "data interface" "$(jq -r '.["data-interface"]' <<<"$df")" 13
expect_eq "communications interface" "$(jq -r '.ntb["control-interface"]' <<<"$df")" 12
expect_eq "data alternate setting" "$(jq -r '.ntb["data-alt-setting"]' <<<"$df")" 1
expect_eq "wMaxControlMessage" "$(jq -r '.ntb["max-control-message"]' <<<"$df")" 4096
expect_eq "wMaxSegmentSize" "$(jq -r '.ntb["max-segment-size"]' <<<"$df")" 2048
expect_eq "extended wMTU" "$(jq -r '.ntb.mtu' <<<"$df")" "${FN_MTU:-1500}"
if [ "${FN_MTU:-1500}" -lt 1500 ]; then
	grep -q "mux 1 (qmap1): MTU 1500 is above the MBIM function's ${FN_MTU} bytes" "$E2E_TMP/qmapd.log" ||
		fail "no warning about the muxes' MTU above the function's wMTU ${FN_MTU}"
	echo "ok: the MTU above the function's wMTU is warned about"
else
	! grep -q "above the MBIM function's" "$E2E_TMP/qmapd.log" || fail "MTU warning without cause"
fi
expect_eq "CRC" "$(jq -r '.ntb.crc' <<<"$df")" "not offered"
in_size=$(jq -r '.["dl-max-size"]' <<<"$df")
expect_ge "negotiated NTB input size" "$in_size" 2048
"${CTL[@]}" status | grep -q "USB MBIM function" || fail "qmapctl status does not show the USB MBIM function"
"${CTL[@]}" status | grep -q "NTB out" || fail "qmapctl status does not show the NTB parameters"
grep -q "bulk IN transfers of $(( (in_size + 511) / 512 * 512 )) bytes in flight" "$E2E_TMP/qmapd.log" ||
	fail "the bulk IN transfers are not of the negotiated input size $in_size"
echo "ok: status shows the USB MBIM function and NTB input size $in_size"

for target in 198.51.100.1 2001:db8:ff::1 198.51.100.2 2001:db8:ff::2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target over usb mbim"
done
in_net ping -c 3 -i 0.2 -W 2 192.0.2.2 >/dev/null || fail "ping from the network to 192.0.2.2"
echo "ok: ping both ways over usb mbim, both sessions"

start_iperf3_server
in_host iperf3 -c 198.51.100.1 -t 2 >"$E2E_TMP/iperf-up.txt" || fail "iperf3 uplink over usb mbim"
in_host iperf3 -c 2001:db8:ff::2 -t 2 -R >"$E2E_TMP/iperf-down.txt" || fail "iperf3 downlink over usb mbim"
echo "ok: iperf3 both directions over usb mbim:" \
	"$(grep receiver "$E2E_TMP/iperf-up.txt" | awk '{print $7, $8}') up," \
	"$(grep receiver "$E2E_TMP/iperf-down.txt" | awk '{print $7, $8}') down"

# ZLPs: pings of growing size until an uplink NTB is a multiple of wMaxPacketSize (512).
for size in $(seq 420 520); do
	in_host ping -c 1 -W 2 -s "$size" 198.51.100.1 >/dev/null || fail "ping -s $size"
done

# The same transfers on every side; nothing the strict sim refused.
refresh_stats
usb_stats
expect_eq "bulk OUT URBs = sim uplink transfers" "$(ustat bulk_out)" "$(sstat ul_transfers ul_transfers)"
expect_ge "ZLP URBs" "$(ustat bulk_out_zlp)" 1
expect_eq "ZLP URBs = sim ZLP transfers" "$(ustat bulk_out_zlp)" "$(sstat ul_zlp ul_zlp)"
expect_eq "qmapd ul_zlp = harness ZLPs" "$(qstat device: ul_zlp)" "$(ustat bulk_out_zlp)"
expect_eq "bulk IN URBs = qmapd transfers" "$(ustat bulk_in)" "$(qstat device: transfers)"
expect_eq "transfer errors" "$(qstat device: transfer_errors)" 0
for m in 1 2; do
	expect_eq "mux $m uplink bytes qmapd vs sim" "$(qstat "mux $m " tx_bytes)" "$(sstat "mux $m:" ul_bytes)"
	expect_eq "mux $m downlink bytes qmapd vs sim" "$(qstat "mux $m " rx_bytes)" "$(sstat "mux $m:" dl_bytes)"
done
for e in $(grep -m1 '^modem0 malformed:' "$E2E_TMP/qmapd.stats" | tr ' ' '\n' | sed -n 's/=.*//p' | grep '^ntb_'); do
	expect_eq "malformed $e" "$(qstat malformed: "$e")" 0
done

# Unplug and replug: carrier off, then the function set up again from alternate setting 0.
usb unplug
wait_for 10 "carrier off on qmap1 after unplug" bash -c "ip -n $NS_HOST -o link show qmap1 | grep -q NO-CARRIER"
usb plug
for dev in qmap1 qmap2; do
	wait_for 20 "$dev with carrier after replug" has_carrier "$NS_HOST" "$dev"
done
usb_stats
expect_eq "class requests after replug" "$(ustat class_sequence)" "$want"
in_host ping -c 3 -i 0.2 -W 2 198.51.100.2 >/dev/null || fail "ping after replug"
echo "ok: unplug and replug, negotiated again, traffic again"

# On exit the data interface goes back to alternate setting 0 and cdc_mbim gets it back.
kill -TERM "$QMAPD_PID"
wait "$QMAPD_PID" 2>/dev/null
usb_stats
expect_eq "data alternate setting after exit" "$(ustat data_alt)" 0
expect_eq "driver after exit" "$(ustat driver)" cdc_mbim
echo "ok: e2e-usb-mbim"
