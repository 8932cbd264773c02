#!/bin/bash
# SPDX-License-Identifier: MIT
# The control plane end to end: qmapd talks QMI (through qmi-proxy on its pty bridge) to
# qmapd-sim; two muxes from the config get their addresses from the network; ping and iperf3
# through each; qmicli shares the control channel; qmapctl adds and removes a third mux;
# an unknown APN shows its call-end reason; a network-initiated drop turns the carrier off
# and the session comes back by itself; an invalid config on SIGHUP changes nothing; an
# unprivileged user cannot change anything. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need qmicli libqmi-utils
need /usr/libexec/qmi-proxy libqmi-proxy
need jq jq
need setpriv util-linux
need python3 python3
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25,2001:db8:1::2/64 --mux 2=203.0.113.2/24,2001:db8:2::2/64
	--mux 3=192.0.2.130/25,2001:db8:3::2/64)
SIM_NET_ARGS+=(--net-address 198.51.100.3/32 --apn internet --apn secure:alice:secret)
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

write_session_config() { # file [extra mux.2 lines]
	cat >"$1" <<-CONF
	[device]
	device = sim:$E2E_TMP/sim.sock
	control = qmi
	control-link = $E2E_TMP/qmi0
	control-socket = $E2E_TMP/control

	[mux.1]
	interface = qmap1
	apn = internet
	routes = 198.51.100.1/32 2001:db8:ff::1/128

	[mux.2]
	interface = qmap2
	apn = secure
	user = alice
	password = secret
	allowed-auth = chap
	routes = 198.51.100.2/32 2001:db8:ff::2/128
	CONF
}

# The sim carries data only for muxes with a session.
SIM_ALWAYS_CONNECTED=no

mux_state() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state"; }
mux_is() { [ "$(mux_state "$1")" = "$2" ]; }

write_session_config "$E2E_TMP/qmapd.conf"
start_sim
start_qmapd "$E2E_TMP/qmapd.conf"
for m in 1 2; do
	wait_for 30 "mux $m connected" mux_is $m connected
done
echo "ok: both sessions connected"

status=$("${CTL[@]}" -j status)
expect_eq "data format" "$(jq -r .modems[0].modem[\"data-format\"].protocol <<<"$status")" qmapv5
expect_eq "manufacturer (DMS)" "$(jq -r .modems[0].modem.manufacturer <<<"$status")" qmapd-sim
expect_eq "model (DMS)" "$(jq -r .modems[0].modem.model <<<"$status")" "Simulated QMAP modem"
expect_eq "IMEI (DMS)" "$(jq -r .modems[0].modem.imei <<<"$status")" 350000000000006
[ -n "$(jq -r '.modems[0].modem.revision // empty' <<<"$status")" ] || fail "no revision (DMS) in status"
expect_eq "mux 1 IPv4 from the network" "$(jq -r '.modems[0].muxes[0].ipv4.address' <<<"$status")" 192.0.2.2/25
expect_eq "mux 1 IPv6 from the network" "$(jq -r '.modems[0].muxes[0].ipv6.address' <<<"$status")" 2001:db8:1::2/64
expect_eq "mux 2 IPv4 from the network" "$(jq -r '.modems[0].muxes[1].ipv4.address' <<<"$status")" 203.0.113.2/24
expect_eq "mux 2 password hidden" "$(jq -r '.modems[0].muxes[1].password' <<<"$status")" "(hidden)"
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/25* ]] || fail "qmap1 lacks its address"
"${CTL[@]}" status | grep -q "qmap1" || fail "qmapctl status table lacks qmap1"
echo "ok: addresses come from the network, qmapctl status shows them"

for target in 198.51.100.1 2001:db8:ff::1 198.51.100.2 2001:db8:ff::2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target"
done
start_iperf3_server
in_host iperf3 -c 198.51.100.1 -t 2 >/dev/null || fail "iperf3 uplink on mux 1"
in_host iperf3 -c 198.51.100.2 -t 2 -R >/dev/null || fail "iperf3 downlink on mux 2"
echo "ok: ping and iperf3 through both sessions"

# qmicli shares the control channel through qmi-proxy while the sessions are up.
ids=$(in_host timeout 20 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids) ||
	fail "qmicli -p --dms-get-ids through $E2E_TMP/qmi0"
[[ $ids == *IMEI* ]] || fail "qmicli printed no IMEI: $ids"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after qmicli"
echo "ok: qmicli through qmi-proxy while sessions are up"

# A third mux at runtime, then removed.
"${CTL[@]}" mux add 3 apn=internet ip-type=ipv4 interface=qmap3 route-metric=50 \
	routes=198.51.100.3/32 || fail "qmapctl mux add 3"
expect_eq "mux 3 state" "$(mux_state 3)" connected
in_host ping -c 2 -i 0.2 -W 2 198.51.100.3 >/dev/null || fail "ping through runtime mux 3"
"${CTL[@]}" mux del 3 || fail "qmapctl mux del 3"
! ip -n "$NS_HOST" link show qmap3 >/dev/null 2>&1 || fail "qmap3 still exists after mux del"
rc=0
"${CTL[@]}" mux del 3 2>/dev/null || rc=$?
expect_eq "mux del of a missing mux exits" "$rc" 10
echo "ok: qmapctl mux add / mux del at runtime"

# An unknown APN: the call-end reason is shown.
"${CTL[@]}" mux add 4 apn=nosuchapn ip-type=ipv4 interface=qmap4 --no-wait || fail "mux add 4"
wait_for 15 "mux 4 failed" mux_is 4 failed
err=$("${CTL[@]}" -j status | jq -r '.modems[].muxes[] | select(.id == 4) | .["last-error"]')
[[ ${err,,} == *apn* ]] || fail "mux 4 last-error does not name the APN problem: '$err'"
"${CTL[@]}" status | grep -qi "apn" || fail "qmapctl status table lacks the call-end reason"
"${CTL[@]}" mux del 4
echo "ok: unknown APN shows '$err'"

# The network drops every session: carrier off, then back by itself.
kill -USR2 "$SIM_PID"
wait_for 5 "carrier off on qmap1 after the drop" no_carrier qmap1
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/25* ]] || fail "qmap1 lost its address on the drop"
wait_for 20 "qmap1 reconnected" has_carrier "$NS_HOST" qmap1
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after reconnect"
echo "ok: network drop -> carrier off -> automatic reconnect -> traffic"

# SIGHUP with an invalid file: nothing changes. With a valid one: only the difference.
cp "$E2E_TMP/qmapd.conf" "$E2E_TMP/qmapd.conf.good"
printf '\n[mux.9]\nip-type = ipv5\n' >>"$E2E_TMP/qmapd.conf"
ifindex=$(ip -n "$NS_HOST" -j link show qmap1 | jq .[0].ifindex)
kill -HUP "$QMAPD_PID"
# The error is logged when the reload is refused: from then on, nothing may have changed.
wait_for 5 "the reload error in qmapd's log" grep -q "invalid ip-type 'ipv5'" "$E2E_TMP/qmapd.log"
expect_eq "mux 1 after invalid reload" "$(mux_state 1)" connected
expect_eq "qmap1 ifindex after invalid reload" "$(ip -n "$NS_HOST" -j link show qmap1 | jq .[0].ifindex)" "$ifindex"
in_host ping -c 1 -W 2 198.51.100.1 >/dev/null || fail "ping after invalid reload"
echo "ok: invalid config on SIGHUP keeps the running sessions"

# qmapctl reload with a valid file: only the difference is applied.
cp "$E2E_TMP/qmapd.conf.good" "$E2E_TMP/qmapd.conf"
printf '\n[mux.3]\ninterface = qmap3\napn = internet\nip-type = ipv4\nroutes = 198.51.100.3/32\n' >>"$E2E_TMP/qmapd.conf"
"${CTL[@]}" reload || fail "qmapctl reload"
wait_for 20 "mux 3 from the reloaded file connected" mux_is 3 connected
expect_eq "qmap1 untouched by the reload" "$(ip -n "$NS_HOST" -j link show qmap1 | jq .[0].ifindex)" "$ifindex"
expect_eq "mux 1 after reload" "$(mux_state 1)" connected
in_host ping -c 2 -i 0.2 -W 2 198.51.100.3 >/dev/null || fail "ping through reloaded mux 3"
echo "ok: qmapctl reload adds mux 3 and leaves mux 1 alone"

# Permissions: read-only for anyone who can connect, changes only for root/admin group.
chmod 0666 "$E2E_TMP/control"
as_nobody() { in_host setpriv --reuid=65534 --regid=65534 --clear-groups "$QMAPCTL" -s "$E2E_TMP/control" "$@"; }
as_nobody -j status | jq -e .modems[0].modem >/dev/null || fail "unprivileged status refused"
rc=0
out=$(as_nobody mux del 1 2>&1) || rc=$?
expect_eq "unprivileged mux del exit" "$rc" 1
[[ ${out,,} == *permission* ]] || fail "unprivileged mux del: unclear message '$out'"
expect_eq "mux 1 after refused del" "$(mux_state 1)" connected
echo "ok: unprivileged change refused: $out"

# A bad request gets an error, not a hang.
reply=$(in_host timeout 5 python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$E2E_TMP/control'); s.sendall(b'{\"command\": \"frobnicate\"}\n'); print(s.makefile().readline())")
[[ $(jq -r .ok <<<"$reply") == false ]] || fail "bad request did not get an error reply: '$reply'"
echo "ok: bad request -> $(jq -c . <<<"$reply")"
stop_qmapd
echo "e2e-sessions: passed"
