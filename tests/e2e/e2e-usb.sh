#!/bin/bash
# SPDX-License-Identifier: MIT
# The usb transport end to end: qmapd's real libusb code against a umockdev testbed whose URBs
# tests/usb/usb-harness.c carries to qmapd-sim (docs/ARCHITECTURE.md, "Tests"). Enumeration,
# kernel driver detach and claim, DTR, QMI over encapsulated commands through qmi-proxy,
# sessions, ping both ways and iperf3 with matching counters, STALL/-EPROTO/short/overflow
# injection on bulk IN, STALL/-EPROTO/timeout on bulk OUT, failing encapsulated commands and
# a silent interrupt endpoint, unplug with transfers in flight and mid-control-transfer,
# replug with sessions restored, the kernel driver handed back on exit, and the same modem
# found by its port path (usb-path:). Needs root (namespaces) and /dev/pts.
source "$(dirname "$0")/../support/lib.sh" || exit 1

QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
need_usb_harness
need /usr/libexec/qmi-proxy libqmi-proxy
need iperf3 iperf3
need jq jq
[ -c /dev/ptmx ] || unavailable "no /dev/ptmx: the fake usbfs node is a pty"
e2e_setup
chmod 755 "$E2E_TMP"
# Sanitizer builds: the preload comes first in the link order, which ASan must accept.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25,2001:db8:1::2/64 --mux 2=203.0.113.2/24,2001:db8:2::2/64)
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = usb:2c7c:0125
control = qmi
control-link = $E2E_TMP/qmi0
control-socket = $E2E_TMP/control

[mux.1]
interface = qmap1
apn = internet
routes = 198.51.100.1/32 2001:db8:ff::1/128

[mux.2]
interface = qmap2
apn = internet
routes = 198.51.100.2/32 2001:db8:ff::2/128
CONF

# The sim carries data only for muxes with a session. The strict profile refuses a bind to
# another interface than the harness's descriptor names (4).
SIM_ALWAYS_CONNECTED=no start_sim --profile strict --data-interface 4

mkfifo "$E2E_TMP/usb.ctl"
start_usb_harness --sim "$E2E_TMP/sim.sock"

usb() { echo "$*" >"$E2E_TMP/usb.ctl"; }
usb_stats() {
	rm -f "$E2E_TMP/usb.stats"
	usb stats
	wait_for 5 "harness counters" test -s "$E2E_TMP/usb.stats"
}
ustat() { sed -n "s/^$1=//p" "$E2E_TMP/usb.stats"; }
mux_state() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state"; }
mux_is() { [ "$(mux_state "$1")" = "$2" ]; }

# qmapd sees the testbed's /sys and /dev/bus/usb through the preload; nothing else changes.
ip netns exec "$NS_HOST" env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
	"$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
for m in 1 2; do
	wait_for 30 "mux $m connected over usb" mux_is $m connected
done
echo "ok: both sessions connected over the usb transport"

# The interface qmapd binds is the descriptor's bInterfaceNumber, read by libusb: the
# harness drops the sim's own descriptor message, so nothing else could have told it.
expect_eq "data interface in qmapctl status" \
	"$("${CTL[@]}" -j status | jq -r '.modems[0].modem["data-format"]["data-interface"]')" 4
rm -f "$E2E_TMP/sim.stats"
kill -USR1 "$SIM_PID"
wait_for 5 "sim counters" test -s "$E2E_TMP/sim.stats"
expect_ge "binds with Endpoint Info" "$(sstat binds_with_endpoint binds_with_endpoint)" 2
expect_eq "interface named in Bind Mux Data Port" "$(sstat bind_interface bind_interface)" 4
expect_eq "requests without Endpoint Info" "$(sstat endpoint_missing endpoint_missing)" 0

grep -q "usb 1-1 (2c7c:0125) if4: claimed (vendor class ff/ff/ff" "$E2E_TMP/qmapd.log" ||
	fail "qmapd did not log the claim of 1-1 interface 4"
usb_stats
expect_eq "kernel driver detached" "$(ustat driver_detached)" 1
expect_eq "interface claimed" "$(ustat claimed)" 1
expect_eq "driver now" "$(ustat driver)" usbfs
expect_ge "DTR set" "$(ustat dtr_set)" 1
expect_ge "SEND_ENCAPSULATED_COMMAND" "$(ustat ctrl_commands)" 4
expect_ge "GET_ENCAPSULATED_RESPONSE" "$(ustat ctrl_responses)" 4
expect_ge "bulk IN transfers in flight" "$(ustat bulk_in_urbs_pending)" 16
# One encapsulated transfer on EP0 at a time, as cdc-wdm sends commands, though qmapd and its
# clients started several QMI requests at once.
expect_eq "encapsulated transfers in flight at once" "$(ustat ctrl_in_flight_max)" 1
[ "$(jq -r .modems[0].modem.transport <<<"$("${CTL[@]}" -j status)")" = usb:2c7c:0125 ] ||
	fail "qmapctl status does not show the usb transport"

# Ping both ways: host -> network through each mux, network -> the host's session address.
for target in 198.51.100.1 2001:db8:ff::1 198.51.100.2 2001:db8:ff::2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target over usb"
done
in_net ping -c 3 -i 0.2 -W 2 192.0.2.2 >/dev/null || fail "ping from the network to 192.0.2.2"
echo "ok: ping both ways over usb"

# The same transfers on every side: qmapd's transport, the harness's URBs, the sim's messages.
refresh_stats
usb_stats
expect_eq "bulk OUT URBs = sim uplink transfers" "$(ustat bulk_out)" "$(sstat ul_transfers ul_transfers)"
expect_eq "ZLP URBs = sim ZLP transfers" "$(ustat bulk_out_zlp)" "$(sstat ul_zlp ul_zlp)"
expect_eq "qmapd ul_zlp = harness ZLPs" "$(qstat device: ul_zlp)" "$(ustat bulk_out_zlp)"
expect_eq "bulk IN URBs = qmapd transfers" "$(ustat bulk_in)" "$(qstat device: transfers)"
expect_eq "transfer errors" "$(qstat device: transfer_errors)" 0

start_iperf3_server
in_host iperf3 -c 198.51.100.1 -t 2 >/dev/null || fail "iperf3 uplink over usb"
in_host iperf3 -c 198.51.100.2 -t 2 -R >/dev/null || fail "iperf3 downlink over usb"
echo "ok: iperf3 both directions over usb"

# Faults on the bulk IN pipe: each is counted, a STALL is cleared, traffic goes on.
refresh_stats
errors0=$(qstat device: transfer_errors)
usb inject stall 2
usb inject eproto 2
usb inject short 2
usb inject overflow 2
in_host ping -c 5 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after the injected faults"
usb_stats
expect_eq "injected faults" "$(($(ustat injected_stall) + $(ustat injected_eproto) + $(ustat injected_short) + $(ustat injected_overflow)))" 8
# Two STALLs reaped in one event pass are one halt to clear (vm-gadget-qmi.sh: a halt fails
# every queued transfer at once).
expect_ge "halts cleared" "$(ustat clear_halt)" 1
refresh_stats
expect_eq "halts cleared, as qmapd counts them" "$(qstat device: halts_cleared)" "$(ustat clear_halt)"
expect_eq "faults counted by qmapd" "$(($(qstat device: transfer_errors) - errors0))" 8
expect_ge "bulk IN transfers in flight after the faults" "$(ustat bulk_in_urbs_pending)" 16
grep -q "bulk IN stall" "$E2E_TMP/qmapd.log" || fail "the stall was not logged"
echo "ok: STALL, -EPROTO, short and overflow counted and survived"

# A response without RESPONSE_AVAILABLE, and another client's command announced within the
# poll second (vm-gadget-qmi.sh saw it once on a real UDC): that notification's
# GET_ENCAPSULATED_RESPONSE fetches the older, unannounced response (the modem's queue is
# FIFO), so the newer one must be asked for too, not left in the modem for the next
# notification to fetch one behind. Client a's first request is answered silently; b starts
# while a waits. Each must get its own answer at once (4 s is far beyond the tens of ms a
# qmicli takes here and the poll second, far below the 10 s a response left behind waited)
# and nothing may stay queued in the modem. Run before the modem ever lost a notification
# (qmapd asks again because fewer responses came than commands went), after (it asks after
# every response), and with a modem that STALLs an ask with nothing queued (empty-stall:
# Qualcomm's f_gsi), where qmapd must take the STALL for "nothing" and stop asking.
ids_timed() { # NAME: qmicli -p --dms-get-ids, "rc ms IMEI-or-none" into ids.NAME
	local t0 out rc=0
	t0=$(date +%s%N)
	out=$(in_host timeout 20 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids 2>&1) ||
		rc=$?
	echo "$rc $((($(date +%s%N) - t0) / 1000000)) $([[ $out == *IMEI:* ]] && echo IMEI || echo none)" \
		>"$E2E_TMP/ids.$1"
}
two_clients_one_silent() { # WHEN [empty-stall]
	local silent0 polled0 drained0 errors0 stalls0 c rc ms imei a b
	usb_stats
	refresh_stats
	silent0=$(ustat injected_int_silent)
	stalls0=$(ustat injected_empty_stall)
	polled0=$(qstat device: resp_polled)
	drained0=$(qstat device: resp_drained)
	errors0=$(qstat device: resp_errors)
	[ -z "${2:-}" ] || usb inject empty-stall 1000
	usb inject int-silent 1
	ids_timed a &
	a=$!
	sleep 0.3
	ids_timed b &
	b=$!
	E2E_PIDS+=("$a" "$b")
	wait "$a" "$b"
	[ -z "${2:-}" ] || usb inject empty-stall 0
	usb_stats
	refresh_stats
	expect_eq "silent notifications injected ($1)" $(($(ustat injected_int_silent) - silent0)) 1
	[ -z "${2:-}" ] || expect_ge "empty asks STALLed ($1)" $(($(ustat injected_empty_stall) - stalls0)) 1
	for c in a b; do
		read -r rc ms imei <"$E2E_TMP/ids.$c"
		echo "client $c ($1): exit $rc after $ms ms, $imei"
		expect_eq "client $c's exit status" "$rc" 0
		expect_eq "client $c's answer" "$imei" IMEI
		[ "$ms" -lt 4000 ] || fail "client $c waited $ms ms for its answer ($1): one left behind"
	done
	expect_eq "responses left in the modem ($1)" "$(ustat ctrl_responses_queued)" 0
	# Fetched by asking again after the notified one, not by the poll a second later.
	expect_eq "responses polled ($1)" $(($(qstat device: resp_polled) - polled0)) 0
	expect_ge "responses fetched by asking again ($1)" \
		$(($(qstat device: resp_drained) - drained0)) 1
	# A STALLed ask with nothing queued is the answer "nothing", not a failure.
	expect_eq "failed response fetches ($1)" $(($(qstat device: resp_errors) - errors0)) 0
	dms_ids || fail "qmicli after the unannounced response and the one behind it ($1)"
	usb_stats
	expect_eq "responses left in the modem after one more client ($1)" \
		"$(ustat ctrl_responses_queued)" 0
	echo "ok: another command's notification within the poll second leaves nothing behind ($1)"
}
dms_ids() { in_host timeout 20 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids >/dev/null; }
# What asking again costs a modem that lost no notification: only where qmapd and its clients
# had several commands out at once (start-up), a few asks answered with nothing.
usb_stats
echo "empty answers before any control-path fault: $(ustat ctrl_responses_empty) of" \
	"$(ustat ctrl_responses) responses"
expect_ge "responses, a tenth of them: more than the empty answers" \
	$(($(ustat ctrl_responses) / 10)) "$(ustat ctrl_responses_empty)"
two_clients_one_silent "no notification lost before"

# Faults beyond bulk IN. Bulk OUT: STALL (halt cleared), -EPROTO, a transfer that never
# completes (libusb times it out after 5 s). The control path: SEND_ENCAPSULATED_COMMAND
# failing with STALL and -EPROTO (sent again), a response without RESPONSE_AVAILABLE (fetched
# by asking). Each is survived, counted and logged once; the sessions stay connected.
refresh_stats
ul_errors0=$(qstat device: ul_errors)
silent0=$(ustat injected_int_silent)
usb inject out-stall 2
usb inject out-eproto 2
usb inject out-timeout 1
in_host ping -c 20 -i 0.1 -W 1 198.51.100.1 >/dev/null 2>&1 || true
ul_faults() { refresh_stats; [ $(($(qstat device: ul_errors) - ul_errors0)) -ge 5 ]; }
wait_for 15 "5 bulk OUT faults counted (one by libusb's 5 s timeout)" ul_faults
usb inject cmd-stall 1
usb inject cmd-eproto 1
dms_ids || fail "qmicli through failing SEND_ENCAPSULATED_COMMANDs"
usb inject int-silent 1
dms_ids || fail "qmicli with a response that came without RESPONSE_AVAILABLE"
refresh_stats
usb_stats
expect_eq "bulk OUT faults injected" "$(($(ustat injected_out_stall) + $(ustat injected_out_eproto) + $(ustat injected_out_timeout)))" 5
expect_eq "bulk OUT faults counted by qmapd" "$(($(qstat device: ul_errors) - ul_errors0))" 5
expect_eq "command faults injected" "$(($(ustat injected_cmd_stall) + $(ustat injected_cmd_eproto)))" 2
expect_eq "commands sent again" "$(qstat device: ctrl_retries)" 2
expect_eq "commands lost" "$(qstat device: ctrl_errors)" 0
expect_eq "silent notifications injected" $(($(ustat injected_int_silent) - silent0)) 1
expect_ge "responses fetched without a notification" "$(qstat device: resp_polled)" 1
for m in 1 2; do expect_eq "mux $m after the control-path faults" "$(mux_state $m)" connected; done
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after the bulk OUT faults"
# Once per run of failures: the four in a row, then the timeout, which ends after good ones.
expect_eq "bulk OUT failure log lines" "$(grep -c 'bulk OUT .*only counted' "$E2E_TMP/qmapd.log")" 2
expect_eq "command failure log lines" "$(grep -c 'SEND_ENCAPSULATED_COMMAND: .*only counted' "$E2E_TMP/qmapd.log")" 1
expect_eq "missing notification log lines" "$(grep -c 'without RESPONSE_AVAILABLE' "$E2E_TMP/qmapd.log")" 1
echo "ok: bulk OUT and control-path faults counted, logged once, sessions kept"
two_clients_one_silent "after a response was polled"
two_clients_one_silent "empty asks STALLed" empty-stall

# Unplug while traffic flows: every transfer completes, carrier off, devices and addresses kept.
refresh_stats
tx0=$(qstat "mux 1 " tx_packets)
in_host ping -i 0.05 -W 1 198.51.100.1 >/dev/null 2>&1 &
PING_PID=$!
E2E_PIDS+=($PING_PID)
pinging() { refresh_stats; [ "$(qstat "mux 1 " tx_packets)" -ge $((tx0 + 3)) ]; }
wait_for 5 "the ping going up mux 1" pinging
usb unplug
wait_for 10 "carrier off on qmap1 after unplug" no_carrier qmap1
wait_for 10 "carrier off on qmap2 after unplug" no_carrier qmap2
grep -q "modem disconnected" "$E2E_TMP/qmapd.log" || fail "the unplug was not logged"
wait_for 5 "all transfers completed" grep -q "all transfers completed" "$E2E_TMP/qmapd.log"
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/25* ]] || fail "qmap1 lost its address on unplug"
usb_stats
expect_ge "URBs flushed by the unplug" "$(ustat flushed_on_unplug)" 16
st=$("${CTL[@]}" -j status)
echo "ok: unplug -> carrier off, devices and addresses kept (modem $(jq -r .modems[0].modem.state <<<"$st"))"

usb plug
for m in 1 2; do
	wait_for 30 "mux $m connected after replug" mux_is $m connected
done
wait_for 10 "carrier on qmap1 after replug" has_carrier "$NS_HOST" qmap1
kill "$PING_PID" 2>/dev/null
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after replug"
in_host ping -c 3 -i 0.2 -W 2 198.51.100.2 >/dev/null || fail "ping on mux 2 after replug"
usb_stats
expect_eq "claims" "$(ustat claimed)" 2
expect_eq "kernel driver detached again" "$(ustat driver_detached)" 2
refresh_stats
expect_ge "qmapd counted the disconnect" "$(qstat device: disconnects)" 1
echo "ok: replug of the same modem -> claimed again, sessions restored, traffic resumes"

# The modem vanishes while a SEND_ENCAPSULATED_COMMAND is in flight: noticed as a disconnect,
# and the sessions come back on replug.
disconnects0=$(qstat device: disconnects)
usb inject vanish-ctrl 1
# qmicli's request is the control transfer the modem vanishes under. It gets no answer: once
# the disconnect is counted it has done its part and is stopped, not waited for until its
# timeout. The wait gets the 20 s that qmicli's timeout and the check had between them.
ip netns exec "$NS_HOST" timeout 10 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids \
	>/dev/null 2>&1 &
QMICLI_PID=$!
E2E_PIDS+=("$QMICLI_PID")
vanished() { refresh_stats; [ "$(qstat device: disconnects)" -gt "$disconnects0" ]; }
wait_for 20 "the disconnect mid-control-transfer counted" vanished
kill -TERM "$QMICLI_PID" 2>/dev/null || true
wait "$QMICLI_PID" 2>/dev/null || true
wait_for 10 "carrier off on qmap1 after the vanish" no_carrier qmap1
usb plug
for m in 1 2; do
	wait_for 30 "mux $m connected after the vanish and replug" mux_is $m connected
done
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after the vanish and replug"
usb_stats
expect_eq "vanish-ctrl injected" "$(ustat injected_vanish_ctrl)" 1
echo "ok: a modem gone mid-control-transfer is a disconnect; sessions restored on replug"

# On exit, also after an unplug/replug cycle, qmapd releases the interface and gives it back
# to qmi_wwan.
stop_qmapd
usb_stats
expect_eq "interface released" "$(ustat released)" 1
expect_ge "DTR cleared on release" "$(ustat dtr_clear)" 1
expect_eq "kernel driver re-attached (USBDEVFS_CONNECT)" "$(ustat driver_reattached)" 1
expect_eq "driver after exit" "$(ustat driver)" qmi_wwan
grep -q "handed back to the kernel driver" "$E2E_TMP/qmapd.log" || fail "re-attach not logged"

# The same modem by its port path (usb-path:BUS-PORT[:IFACE]), as for two modems of one model;
# a path with nothing plugged in leaves qmapd waiting, without claiming anything.
start_usb_qmapd() { # device-spec log-file
	sed "s|^device = .*|device = $1|" "$E2E_TMP/qmapd.conf" >"$E2E_TMP/qmapd-path.conf"
	ip netns exec "$NS_HOST" env LD_PRELOAD=$PRELOAD UMOCKDEV_DIR="$UMOCKDEV_DIR" \
		"$QMAPD" -c "$E2E_TMP/qmapd-path.conf" >"$2" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
}
start_usb_qmapd usb-path:1-1:4 "$E2E_TMP/qmapd-path.log"
wait_for 30 "mux 1 connected with usb-path:1-1:4" mux_is 1 connected
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping with usb-path:1-1:4"
[ "$(jq -r .modems[0].modem.transport <<<"$("${CTL[@]}" -j status)")" = usb-path:1-1:4 ] ||
	fail "qmapctl status does not show usb-path:1-1:4"
stop_qmapd
echo "ok: usb-path:1-1:4 finds, claims and carries traffic on the same modem"
usb_stats
claims=$(ustat claimed)
start_usb_qmapd usb-path:1-2 "$E2E_TMP/qmapd-nopath.log"
wait_for 10 "qmapd to look for usb-path:1-2" grep -q "usb-path:1-2: no such device" "$E2E_TMP/qmapd-nopath.log"
kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd exited with nothing at usb-path:1-2"
usb_stats
expect_eq "claims with nothing at usb-path:1-2" "$(ustat claimed)" "$claims"
[ "$(mux_state 1)" != connected ] || fail "mux 1 connected with nothing at usb-path:1-2"
stop_qmapd
echo "ok: usb-path:1-2 (nothing there): qmapd waits, claims nothing"
echo "e2e-usb: passed"
