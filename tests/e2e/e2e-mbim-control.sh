#!/bin/bash
# SPDX-License-Identifier: MIT
# MBIM control end to end: qmapd (control = mbim, through mbim-proxy on its pty bridge) against
# qmapd-sim --mbim, which carries data only for activated sessions. Two sessions (mux 1 IPv4,
# mux 2 IPv6) get their addresses, DNS and MTU from IP_CONFIGURATION; the SIM's operator
# (HOME_PROVIDER) and own number (SUBSCRIBER_READY_STATUS) are read; ping and iperf3 both
# ways; mbimcli -p shares the control channel while they are up, with libmbim finding no
# descriptors file for the link (wMaxControlMessage unknown: its 4096 default) and the sim
# declaring a smaller wMaxControlMessage, so answers come in fragments; qmapctl adds and
# removes a mux; a wrong APN fails with the modem's reason; a network drop turns the carrier
# off and the session comes back with traffic; malformed NTBs are counted while traffic goes
# on; qmapd deactivates its sessions on the way out; a locked SIM stops the modem with its
# state named. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need mbimcli libmbim-utils
need /usr/libexec/mbim-proxy libmbim-proxy
need jq jq
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
[ -x "$QMAPCTL" ] || fail "$QMAPCTL not built"
e2e_setup

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25 --mux 2=2001:db8:2::2/64 --mux 3=192.0.2.130/25)
SIM_NET_ARGS+=(--net-address 198.51.100.3/32 --apn internet --apn secure:alice:secret)
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
LINK=$E2E_TMP/mbim0

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control = mbim
control-link = $LINK
control-socket = $E2E_TMP/control

[mux.1]
interface = qmap1
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32

[mux.2]
interface = qmap2
apn = secure
user = alice
password = secret
allowed-auth = chap
ip-type = ipv6
routes = 2001:db8:ff::2/128
CONF

# The sim carries data only for activated sessions, as a real modem.
SIM_ALWAYS_CONNECTED=no
mux_state() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state"; }
mux_is() { [ "$(mux_state "$1")" = "$2" ]; }
mux_field() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | $2"; }

# A wMaxControlMessage below libmbim's 4096: the sim fragments what does not fit.
start_sim --mbim --max-control-message 128 --session-mtu 1420 --qmi-over-mbim \
	--msisdn +15555550123
start_qmapd "$E2E_TMP/qmapd.conf"
for m in 1 2; do
	wait_for 30 "mux $m connected" mux_is $m connected
done
echo "ok: both MBIM sessions connected"

status=$("${CTL[@]}" -j status)
modem=$(jq -c '.modems[0].modem' <<<"$status")
expect_eq "control" "$(jq -r .control <<<"$modem")" mbim
expect_eq "modem state" "$(jq -r .state <<<"$modem")" ready
expect_eq "IMEI (DEVICE_CAPS)" "$(jq -r .imei <<<"$modem")" 350000000000006
expect_eq "SIM (SUBSCRIBER_READY_STATUS)" "$(jq -r .sim <<<"$modem")" initialized
expect_eq "registration (REGISTER_STATE)" "$(jq -r .registration <<<"$modem")" home
expect_eq "operator" "$(jq -r .operator <<<"$modem")" "Test Network (00101)"
expect_eq "packet service" "$(jq -r '.["packet-service"]' <<<"$modem")" attached
expect_eq "QMI over MBIM" "$(jq -r '.["qmi-over-mbim"]' <<<"$modem")" "offered, not used"
expect_eq "data format" "$(jq -r '.["data-format"].protocol' <<<"$modem")" mbim/ntb16
grep -q "QMI over MBIM offered, not used" "$E2E_TMP/qmapd.log" || fail "the log does not say QMI over MBIM is not used"
# HOME_PROVIDER and the telephone number of SUBSCRIBER_READY_STATUS, as the ready line says.
grep -qF "SIM operator 00101 (qmapd test), 1 own number" "$E2E_TMP/qmapd.log" ||
	fail "the log does not name the SIM operator (HOME_PROVIDER) and one own number"
expect_eq "mux 1 IPv4 from IP_CONFIGURATION" "$(mux_field 1 .ipv4.address)" 192.0.2.2/25
expect_eq "mux 1 gateway" "$(mux_field 1 .ipv4.gateway)" 192.0.2.1
expect_eq "mux 1 MTU" "$(mux_field 1 .ipv4.mtu)" 1420
[ "$(mux_field 1 '.ipv4.dns | length')" = 2 ] || fail "mux 1 has not two DNS servers"
expect_eq "mux 1 has no IPv6" "$(mux_field 1 .ipv6)" null
expect_eq "mux 2 IPv6 from IP_CONFIGURATION" "$(mux_field 2 .ipv6.address)" 2001:db8:2::2/64
expect_eq "mux 2 has no IPv4" "$(mux_field 2 .ipv4)" null
expect_eq "mux 2 password hidden" "$(mux_field 2 .password)" "(hidden)"
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/25* ]] || fail "qmap1 lacks its address"
[[ $(ip -n "$NS_HOST" -o addr show dev qmap2) == *2001:db8:2::2/64* ]] || fail "qmap2 lacks its address"
expect_eq "qmap1 MTU from the session" "$(ip -n "$NS_HOST" -j link show qmap1 | jq .[0].mtu)" 1420
"${CTL[@]}" status | grep -q "mbim" || fail "qmapctl status table does not show MBIM"
echo "ok: addresses, gateway, DNS and MTU from IP_CONFIGURATION on the devices"

in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping 198.51.100.1 over mux 1"
in_host ping -c 3 -i 0.2 -W 2 2001:db8:ff::2 >/dev/null || fail "ping 2001:db8:ff::2 over mux 2"
start_iperf3_server
for args in "198.51.100.1" "198.51.100.1 -R" "2001:db8:ff::2" "2001:db8:ff::2 -R"; do
	# shellcheck disable=SC2086
	out=$(in_host iperf3 -c $args -t 2 -J) || fail "iperf3 -c $args"
	bytes=$(jq '.end.sum_received.bytes' <<<"$out")
	[ "$bytes" -gt 1000000 ] || fail "iperf3 -c $args moved only $bytes bytes"
	echo "ok: iperf3 -c $args: $bytes bytes," \
		"$(jq '.end.sum_received.bits_per_second / 1e6 | floor' <<<"$out") Mbit/s"
done

# mbimcli shares the control channel through mbim-proxy while the sessions are up. The link
# is no cdc-wdm: libmbim finds no descriptors file in sysfs for it.
[ ! -e "/sys/class/usbmisc/$(basename "$LINK")" ] || fail "a usbmisc device is named like the link"
caps=$(in_host timeout 20 mbimcli -p -d "$LINK" --query-device-caps) ||
	fail "mbimcli -p --query-device-caps through $LINK"
[[ $caps == *350000000000006* ]] || fail "mbimcli printed no device id: $caps"
reg=$(in_host timeout 20 mbimcli -p -d "$LINK" --query-registration-state) ||
	fail "mbimcli -p --query-registration-state"
[[ $reg == *home* ]] || fail "mbimcli registration state is not home: $reg"
ipc=$(in_host timeout 20 mbimcli -p -d "$LINK" --query-ip-configuration=0) ||
	fail "mbimcli -p --query-ip-configuration=0"
[[ $ipc == *192.0.2.2* ]] || fail "mbimcli IP configuration of session 0 lacks 192.0.2.2: $ipc"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after mbimcli"
expect_eq "mux 1 after mbimcli" "$(mux_state 1)" connected
refresh_stats
expect_ge "MBIM fragments the sim sent (wMaxControlMessage 128)" "$(sstat mbim_fragments_out mbim_fragments_out)" 1
expect_eq "control messages the sim found malformed" "$(sstat mbim_malformed mbim_malformed)" 0
# libmbim sends up to 4096 bytes unfragmented; the bridge splits what exceeds 128.
expect_ge "commands the bridge split into fragments" "$(qstat control-link: to_modem_split)" 1
expect_ge "command fragments the sim put together" "$(sstat mbim_fragments_in mbim_fragments_in)" 1
# Every OPEN (qmapd's own libmbim and mbim-proxy's) asked for 4096: lowered to 128.
expect_ge "OPENs the bridge lowered to wMaxControlMessage" "$(qstat control-link: to_modem_open_clamped)" 1
expect_eq "client fragments that continued no command" "$(qstat control-link: to_modem_frag_errors)" 0
echo "ok: mbimcli -p through mbim-proxy while the sessions are up"

# A third mux at runtime, then removed: its session is deactivated on the modem.
t0=$(date +%s%N)
"${CTL[@]}" mux add 3 apn=internet ip-type=ipv4 interface=qmap3 routes=198.51.100.3/32 ||
	fail "qmapctl mux add 3"
echo "qmapctl mux add 3 (device, CONNECT, IP_CONFIGURATION, addresses) returned after" \
	"$((($(date +%s%N) - t0) / 1000000)) ms"
expect_eq "mux 3 state" "$(mux_state 3)" connected
in_host ping -c 2 -i 0.2 -W 2 198.51.100.3 >/dev/null || fail "ping through runtime mux 3"
"${CTL[@]}" mux del 3 || fail "qmapctl mux del 3"
! ip -n "$NS_HOST" link show qmap3 >/dev/null 2>&1 || fail "qmap3 still exists after mux del"
reg=$(in_host timeout 20 mbimcli -p -d "$LINK" --query-connection-state=2) ||
	fail "mbimcli -p --query-connection-state=2"
[[ $reg == *deactivated* ]] || fail "session 2 still active on the modem after mux del: $reg"
echo "ok: qmapctl mux add / mux del; the removed session is deactivated"

# A wrong APN: the session fails with the modem's reason (FAILURE, nw_error 27).
"${CTL[@]}" mux add 4 apn=nosuchapn ip-type=ipv4 interface=qmap4 --no-wait || fail "mux add 4"
wait_for 15 "mux 4 failed" mux_is 4 failed
err=$(mux_field 4 '.["last-error"]')
[[ $err == *"nw_error 27"* && $err == *missing-or-unknown-apn* ]] ||
	fail "mux 4 last-error does not give the modem's reason: '$err'"
"${CTL[@]}" status | grep -q "missing-or-unknown-apn" || fail "qmapctl status table lacks the reason"
retry=$(mux_field 4 '.["retry-in"]')
awk "BEGIN { exit !($retry > 10) }" || fail "a refused APN is retried soon ($retry s)"
"${CTL[@]}" mux del 4
echo "ok: wrong APN -> '$err', next attempt in ${retry%.*} s"

# Wrong credentials: FAILURE with nw_error 29.
"${CTL[@]}" mux add 5 apn=secure user=alice password=wrong allowed-auth=chap ip-type=ipv4 \
	interface=qmap5 --no-wait || fail "mux add 5"
wait_for 15 "mux 5 failed" mux_is 5 failed
err=$(mux_field 5 '.["last-error"]')
[[ $err == *"nw_error 29"* ]] || fail "mux 5 last-error does not give the modem's reason: '$err'"
"${CTL[@]}" mux del 5
echo "ok: wrong credentials -> '$err'"

# The network drops every session: carrier off, then back by itself, traffic again.
kill -USR2 "$SIM_PID"
wait_for 5 "carrier off on qmap1 after the drop" no_carrier qmap1
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/25* ]] || fail "qmap1 lost its address on the drop"
wait_for 20 "qmap1 reconnected" has_carrier "$NS_HOST" qmap1
wait_for 20 "qmap2 reconnected" has_carrier "$NS_HOST" qmap2
grep -q "disconnected by the network: nw_error 36" "$E2E_TMP/qmapd.log" ||
	fail "the log does not give the drop's reason"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over mux 1 after reconnect"
in_host ping -c 2 -i 0.2 -W 2 2001:db8:ff::2 >/dev/null || fail "ping over mux 2 after reconnect"
refresh_stats
expect_eq "sessions the network dropped (sim)" "$(sstat mbim_sessions_dropped mbim_sessions_dropped)" 2
echo "ok: network drop -> carrier off -> reconnect -> traffic"

# The modem goes away and comes back (a USB replug): mbim-proxy still holds the function
# open from before, the new one is not; qmapd opens it again and its sessions come back.
stop_process qmapd-sim "$SIM_PID"
wait_for 5 "carrier off on qmap1 with the modem gone" no_carrier qmap1
rm -f "$E2E_TMP/sim.sock"
start_sim --mbim --max-control-message 128 --session-mtu 1420 --qmi-over-mbim
wait_for 30 "mux 1 connected after the modem came back" mux_is 1 connected
wait_for 30 "mux 2 connected after the modem came back" mux_is 2 connected
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping over mux 1 after the modem came back"
echo "ok: modem gone and back -> sessions up again -> traffic"
stop_qmapd
for sid in 0 1; do
	grep -q "mbim session $sid: deactivated by the host" "$E2E_TMP/sim.log" ||
		fail "qmapd did not deactivate session $sid on the way out"
done
echo "ok: qmapd deactivated its sessions on SIGTERM"
stop_process qmapd-sim "$SIM_PID"
E2E_PIDS=()

# Malformed NTBs between real ones: counted per kind while traffic goes on.
rm -f "$E2E_TMP/sim.sock"
start_sim --mbim --inject bad-signature,ndp-loop,datagram-outside --inject-every 20
start_qmapd "$E2E_TMP/qmapd.conf"
wait_for 30 "mux 1 connected" mux_is 1 connected
out=$(in_host iperf3 -c 198.51.100.1 -t 2 -R -J) || fail "iperf3 -R with injection"
bytes=$(jq '.end.sum_received.bytes' <<<"$out")
[ "$bytes" -gt 1000000 ] || fail "iperf3 with injection moved only $bytes bytes"
refresh_stats
for e in ntb_bad_signature ntb_ndp_loop ntb_datagram_out_of_range; do
	expect_ge "malformed $e" "$(qstat malformed: $e)" 1
done
expect_eq "mux 1 state with injection" "$(mux_state 1)" connected
echo "ok: malformed NTBs counted, $bytes bytes moved meanwhile"
stop_qmapd
stop_process qmapd-sim "$SIM_PID"
E2E_PIDS=()

# A locked SIM: the modem stops before attaching and says why; the muxes wait, no carrier.
rm -f "$E2E_TMP/sim.sock"
start_sim --mbim --sim-state device-locked
start_qmapd "$E2E_TMP/qmapd.conf"
modem_failed() { [ "$("${CTL[@]}" -j status | jq -r .modems[0].modem.state)" = failed ]; }
wait_for 15 "the modem failed on the locked SIM" modem_failed
modem=$("${CTL[@]}" -j status | jq -c .modems[0].modem)
expect_eq "SIM state" "$(jq -r .sim <<<"$modem")" device-locked
expect_eq "modem last-error" "$(jq -r '.["last-error"]' <<<"$modem")" "SIM not ready: device-locked"
expect_eq "mux 1 with a locked SIM" "$(mux_state 1)" waiting
! has_carrier "$NS_HOST" qmap1 || fail "qmap1 has carrier with a locked SIM"
"${CTL[@]}" status | grep -q "device-locked" || fail "qmapctl status table lacks the SIM state"
echo "ok: locked SIM -> modem failed, 'SIM not ready: device-locked', muxes waiting"
stop_qmapd
echo "e2e-mbim-control: passed"
