#!/bin/bash
# SPDX-License-Identifier: MIT
# A restart or a crash of qmapd keeps the modem's sessions (docs/ARCHITECTURE.md "Restart and
# crash"). With a QMI modem, or with RESTART_CONTROL=mbim an MBIM one, whose sessions outlive
# the host process (qmapd-sim --keep-sessions, as a USB modem when nobody drops DTR):
# - a restart (SIGUSR2: what the unit's ExecStop= sends when systemd's job is a restart)
#   keeps the sessions, the addresses and an open TCP connection, which carries data afterwards; the
#   largest gap between ping replies (every 10 ms) must stay within RESTART_GAP_MS (500 ms);
#   the one between TCP echoes (one every 10 ms) is longer by TCP's retransmission timeout
#   (200 ms at least, doubling) and must stay within TCP_GAP_MS (1000 ms);
# - kill -9, 20 times in a row under traffic: each next qmapd takes the sessions over (same
#   addresses, ping back within 2 s) and the modem's count of allocated client ids stays flat;
#   MBIM: the function is never opened again (a second OPEN would end its sessions, MBIM 1.0
#   §9.3.1) and no session is ended by the host;
# - qmi-proxy (mbim-proxy) killed under traffic: qmapd reopens through a new one and takes
#   the sessions over (none started again, no client id more, no second OPEN), traffic back
#   within PROXY_GAP_MS (500 ms), and a network drop afterwards is still seen and recovered;
# - a stop (SIGTERM) still ends the sessions and releases every client id.
# qmapd offers ModemManager's D-Bus API on a private bus throughout: the modem, the bearer
# of the config's mux and one a D-Bus client created and connected (CreateBearer, Connect: a
# mux not in the config) keep their object paths, and the bearers are connected again, after
# the restart and after every crash. QMI only, then: a stop whose releases are lost
# (qmapd-sim --lose-releases) leaves the ids in <link>.clients for the next run to release.
# Last, after a crash, a qmapd without the muxes and without D-Bus ends the sessions of the
# config's muxes and of a D-Bus client's bearer (QMI: releases their ids; MBIM: deactivates
# them), drops the bearer's record and removes the devices kept for them, and only those.
# Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

CONTROL=${RESTART_CONTROL:-qmi}
case $CONTROL in
qmi) need /usr/libexec/qmi-proxy libqmi-proxy ;;
mbim) need /usr/libexec/mbim-proxy libmbim-proxy ;;
*) fail "RESTART_CONTROL must be qmi or mbim, not '$CONTROL'" ;;
esac
need jq jq
need python3 python3
MMCLI=$(need_unpacked modemmanager usr/bin/mmcli) || exit $?
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
RESTART_GAP_MS=${RESTART_GAP_MS:-500}
TCP_GAP_MS=${TCP_GAP_MS:-1000}
CRASH_GAP_MS=${CRASH_GAP_MS:-2000}
CRASHES=${CRASHES:-20}
e2e_setup
chmod 755 "$E2E_TMP"
start_system_bus

SIM_ALWAYS_CONNECTED=no
SIM_ARGS=(--keep-sessions)
[ "$CONTROL" = mbim ] && SIM_ARGS+=(--mbim)
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control = $CONTROL
control-link = $E2E_TMP/${CONTROL}0
control-socket = $E2E_TMP/control

[mux.1]
interface = qmap1
routes = 198.51.100.1/32 2001:db8:ff::1/128
CONF
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
mux_connected() { [ "$("${CTL[@]}" -j status 2>/dev/null | jq -r '.modems[].muxes[] | select(.id == 1) | .state')" = connected ]; }
addresses() { ip -n "$NS_HOST" -j addr show qmap1 | jq -c '[.[0].addr_info[] | select(.scope == "global") | .local + "/" + (.prefixlen | tostring)]'; }
if [ "$CONTROL" = qmi ]; then
	clients() { refresh_stats && sstat qmi_clients= qmi_clients; }
	started() { sstat qmi_sessions_started= qmi_sessions_started; }
else
	# MBIM has no client ids: what must stay flat is the function's OPENs (the first only)
	# and the sessions the host ended (none).
	clients() { refresh_stats && echo "$(sstat mbim_opens= mbim_opens)/$(sstat mbim_reopens= mbim_reopens)/$(sstat mbim_sessions_ended_by_host= mbim_sessions_ended_by_host)"; }
	started() { sstat mbim_sessions_started= mbim_sessions_started; }
fi
# "MODEM-PATH BEARER-PATH connected": what a D-Bus client sees of the config's mux.
bearer() {
	local m b
	m=$("$MMCLI" -L -J 2>/dev/null | jq -r '.["modem-list"][0] // empty') && [ -n "$m" ] || return 1
	b=$("$MMCLI" -m "$m" -J 2>/dev/null | jq -r '.modem.generic.bearers[0] // empty') && [ -n "$b" ] || return 1
	echo "$m $b $("$MMCLI" -b "$b" -J 2>/dev/null | jq -r .bearer.status.connected)"
}
bearer_connected() { [[ "$(bearer)" == *" yes" ]]; }
# "PATH connected interface" of the bearer a D-Bus client created (DBUS_BEARER, once made).
dbus_state() {
	local b
	b=$("$MMCLI" -b "$DBUS_BEARER" -J 2>/dev/null) || return 1
	echo "$DBUS_BEARER $(jq -r '.bearer.status.connected + " " + .bearer.status.interface' <<<"$b")"
}
dbus_connected() { [[ "$(dbus_state)" == *" yes "* ]]; }
run_qmapd() {
	start_qmapd_dbus "$E2E_TMP/qmapd.conf"
	wait_for 30 "mux 1 connected" mux_connected
	wait_for 10 "the bearer connected on D-Bus" bearer_connected
	[ -z "${DBUS_BEARER:-}" ] || wait_for 10 "the D-Bus client's bearer connected" dbus_connected
}

start_sim "${SIM_ARGS[@]}"
run_qmapd
bearer0=$(bearer)
addr0=$(addresses)
[ "$addr0" != "[]" ] || fail "qmap1 has no address"
# A bearer a D-Bus client creates and connects, as NetworkManager does: its mux (2) is not in
# the config; the record of it brings it back with the same path after a restart or a crash.
modem_path=${bearer0%% *}
cfg_bearer=$(awk '{ print $2 }' <<<"$bearer0")
"$MMCLI" -m "$modem_path" --create-bearer="apn=internet,ip-type=ipv4v6" >/dev/null ||
	fail "mmcli --create-bearer failed"
DBUS_BEARER=$("$MMCLI" -m "$modem_path" -J | jq -r '.modem.generic.bearers[]' | grep -vx -e "$cfg_bearer")
[ -n "$DBUS_BEARER" ] || fail "no bearer after --create-bearer"
"$MMCLI" -b "$DBUS_BEARER" --connect >/dev/null || fail "mmcli -b $DBUS_BEARER --connect failed"
wait_for 10 "the D-Bus client's bearer connected" dbus_connected
dbus0=$(dbus_state)
# The devices are kept across every crash, the D-Bus client's bearer's too: the same ifindex.
ifindexes() { ip -n "$NS_HOST" -j link show | jq -c '[.[] | select(.ifname | startswith("qmap")) | .ifname + "=" + (.ifindex | tostring)] | sort'; }
[ -e "$E2E_TMP/${CONTROL}0.bearer2" ] || fail "the D-Bus client's bearer is not recorded"
clients0=$(clients)
started0=$(started)
[ "$CONTROL" = qmi ] || expect_eq "MBIM OPENs/reopens/sessions ended by the host" "$clients0" "1/0/0"
echo "ok: connected with $addr0, on D-Bus $bearer0, $clients0 client ids in the modem" \
	"(MBIM: OPENs/reopens/sessions ended by the host), $started0 sessions started"

# A TCP echo server behind the modem and a client that sends a line every 10 ms over one
# connection, logging when each echo comes back; it exits 1 if the connection breaks.
cat >"$E2E_TMP/echo.py" <<'PY'
import socket, sys, time, os
mode, addr = sys.argv[1], sys.argv[2]
if mode == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 5001)); s.listen(1); open(sys.argv[3], "w").close()
    c, _ = s.accept()
    while (d := c.recv(4096)):
        c.sendall(d)
    sys.exit(0)
stop, log = sys.argv[3], open(sys.argv[4], "w")
c = socket.create_connection((addr, 5001), timeout=30)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
n, buf = 0, b""
while not os.path.exists(stop):
    n += 1
    c.sendall(b"%d\n" % n)
    while b"\n" not in buf:
        d = c.recv(4096)
        if not d:
            print("connection closed", file=sys.stderr); sys.exit(1)
        buf += d
    line, buf = buf.split(b"\n", 1)
    assert int(line) == n, (line, n)
    print("%.6f %d" % (time.time(), n), file=log, flush=True)
    time.sleep(0.01)
print("echoes %d" % n)
PY
in_net python3 "$E2E_TMP/echo.py" server 198.51.100.1 "$E2E_TMP/server.up" &
E2E_PIDS+=($!)
wait_for 5 "the echo server" test -e "$E2E_TMP/server.up"
in_host python3 "$E2E_TMP/echo.py" client 198.51.100.1 "$E2E_TMP/stop" "$E2E_TMP/tcp.log" \
	>"$E2E_TMP/client.out" 2>&1 &
CLIENT_PID=$!
E2E_PIDS+=($CLIENT_PID)
in_host ping -D -n -i 0.01 198.51.100.1 >"$E2E_TMP/ping.log" 2>&1 &
PING_PID=$!
E2E_PIDS+=($PING_PID)
wait_for 5 "TCP echoes" test -s "$E2E_TMP/tcp.log"
sleep 1

# max_gap_ms FILE FROM-SECONDS [TO-SECONDS]: the largest gap between two successive
# timestamps (ping -D "[t]" or the client's "t n" lines) from FROM on.
max_gap_ms() {
	python3 - "$@" <<'PY'
import re, sys
f, lo = sys.argv[1], float(sys.argv[2])
hi = float(sys.argv[3]) if len(sys.argv) > 3 else 1e18
ts = []
for l in open(f):
    m = re.match(r"\[?(\d+\.\d+)\]?", l)
    if m and ("bytes from" in l or "[" not in l):
        t = float(m.group(1))
        if lo <= t <= hi:
            ts.append(t)
print(int(max(b - a for a, b in zip(ts, ts[1:])) * 1000) if len(ts) > 1 else 999999)
PY
}

# first_reply_after T: the time of the first ping reply later than T + 20 ms (a ping sent
# before T may still be answered just after it), or nothing.
first_reply_after() {
	python3 - "$E2E_TMP/ping.log" "$1" <<'PY'
import re, sys
t = float(sys.argv[2]) + 0.02
for l in open(sys.argv[1]):
    m = re.match(r"\[(\d+\.\d+)\].*bytes from", l)
    if m and float(m.group(1)) > t:
        print(m.group(1))
        break
PY
}

# ---- restart ----
t0=$(date +%s.%N)
kill -USR2 "$QMAPD_PID"
wait_for 10 "qmapd to exit for the restart" not_running "$QMAPD_PID"
rc=0
wait "$QMAPD_PID" || rc=$?
expect_eq "qmapd's exit status after SIGUSR2" "$rc" 0
run_qmapd
sleep 2
t1=$(date +%s.%N)
grep -q "of the last run taken over" "$E2E_TMP/qmapd.log" ||
	fail "the new qmapd did not take the session over"
expect_eq "addresses after the restart" "$(addresses)" "$addr0"
expect_eq "modem, bearer and its state on D-Bus after the restart" "$(bearer)" "$bearer0"
expect_eq "the D-Bus client's bearer after the restart" "$(dbus_state)" "$dbus0"
expect_eq "sessions started in the modem after the restart" "$(clients >/dev/null; started)" "$started0"
expect_eq "client ids in the modem after the restart" "$(clients)" "$clients0"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the TCP connection broke: $(cat "$E2E_TMP/client.out")"
ping_gap=$(max_gap_ms "$E2E_TMP/ping.log" "$t0" "$t1")
tcp_gap=$(max_gap_ms "$E2E_TMP/tcp.log" "$t0" "$t1")
echo "restart: largest gap between ping replies ${ping_gap} ms, between TCP echoes ${tcp_gap} ms"
[ "$ping_gap" -le "$RESTART_GAP_MS" ] || fail "ping gap ${ping_gap} ms over ${RESTART_GAP_MS} ms"
[ "$tcp_gap" -le "$TCP_GAP_MS" ] || fail "TCP gap ${tcp_gap} ms over ${TCP_GAP_MS} ms"
echo "ok: a restart keeps the session, the addresses and the TCP connection"

# ---- crashes ----
worst=0
ifindex0=$(ifindexes)
for i in $(seq "$CRASHES"); do
	t0=$(date +%s.%N)
	kill -KILL "$QMAPD_PID"
	wait "$QMAPD_PID" 2>/dev/null || true
	run_qmapd
	# Traffic is back at the first reply to a ping sent after the kill (not at the last one
	# logged when run_qmapd returns: its D-Bus checks take their time).
	first=
	for _ in $(seq 100); do
		first=$(first_reply_after "$t0")
		[ -n "$first" ] && break
		sleep 0.05
	done
	[ -n "$first" ] || fail "crash $i: no ping answered after the new start"
	back=$(python3 -c "print(int((float('$first') - $t0) * 1000))")
	[ "$back" -gt "$worst" ] && worst=$back
	echo "crash $i: traffic back after $back ms"
	[ "$back" -le "$CRASH_GAP_MS" ] || fail "crash $i: traffic back after ${back} ms"
	expect_eq "addresses after crash $i" "$(addresses)" "$addr0" >/dev/null
	expect_eq "the bearer after crash $i" "$(bearer)" "$bearer0" >/dev/null
	expect_eq "the D-Bus client's bearer after crash $i" "$(dbus_state)" "$dbus0" >/dev/null
	expect_eq "the devices after crash $i" "$(ifindexes)" "$ifindex0" >/dev/null
	expect_eq "client ids in the modem after crash $i" "$(clients)" "$clients0" >/dev/null
done
expect_eq "sessions started in the modem after $CRASHES crashes" "$(started)" "$started0"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the TCP connection broke: $(cat "$E2E_TMP/client.out")"
echo "ok: $CRASHES kill -9 in a row: sessions taken over, traffic back within ${worst} ms at" \
	"worst, $clients0 client ids throughout"

# ---- the proxy dies ----
# qmi-proxy (mbim-proxy) killed under traffic: libqmi (libmbim) calls the device removed, and
# qmapd reopens through a new proxy and takes the sessions over, as after a crash of its own:
# none started again in the modem, no client id more (MBIM: no second OPEN reaches the
# function), traffic back within PROXY_GAP_MS. The proxy's abstract socket is per network
# namespace: ours is the one in the host namespace.
PROXY=$CONTROL-proxy
proxy_pid() {
	local p
	for p in $(ip netns pids "$NS_HOST"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" != "$PROXY" ] || echo "$p"
	done
}
proxy_losses() { "${CTL[@]}" -j status 2>/dev/null | jq -r '.modems[0].modem["proxy-losses"]'; }
modem_ready() { [ "$("${CTL[@]}" -j status 2>/dev/null | jq -r '.modems[0].modem.state')" = ready ]; }
PROXY_GAP_MS=${PROXY_GAP_MS:-500}
proxy0=$(proxy_pid)
[ -n "$proxy0" ] || fail "no $PROXY in the host namespace"
expect_eq "$PROXY losses before" "$(proxy_losses)" 0
clients1=$(clients)
started1=$(started)
t0=$(date +%s.%N)
kill -KILL "$proxy0"
new_proxy() { local p; p=$(proxy_pid) && [ -n "$p" ] && [ "$p" != "$proxy0" ]; }
# At least once: the reopen may reach the dying proxy before it is gone (its socket still
# there) and lose it a second time, which qmapd counts too (1 MBIM run in ~12).
wait_for 10 "qmapd to count the $PROXY lost" eval '[ "$(proxy_losses)" -ge 1 ]'
wait_for 10 "a new $PROXY" new_proxy
wait_for 10 "the control plane ready again" modem_ready
wait_for 10 "mux 1 connected again" mux_connected
wait_for 10 "the bearer connected on D-Bus again" bearer_connected
wait_for 10 "the D-Bus client's bearer connected again" dbus_connected
sleep 1
t1=$(date +%s.%N)
kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd died with its $PROXY"
grep -q "$PROXY went away" "$E2E_TMP/qmapd.log" || fail "qmapd did not say the $PROXY went away"
expect_eq "sessions started in the modem after the $PROXY died" "$(clients >/dev/null; started)" "$started1"
expect_eq "client ids in the modem after the $PROXY died" "$(clients)" "$clients1"
expect_eq "addresses after the $PROXY died" "$(addresses)" "$addr0"
expect_eq "the bearer after the $PROXY died" "$(bearer)" "$bearer0"
expect_eq "the D-Bus client's bearer after the $PROXY died" "$(dbus_state)" "$dbus0"
ping_gap=$(max_gap_ms "$E2E_TMP/ping.log" "$t0" "$t1")
echo "$PROXY killed: largest gap between ping replies ${ping_gap} ms"
[ "$ping_gap" -le "$PROXY_GAP_MS" ] || fail "ping gap ${ping_gap} ms over ${PROXY_GAP_MS} ms"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the TCP connection broke: $(cat "$E2E_TMP/client.out")"
echo "ok: qmapd reopened through a new $PROXY and took the sessions over"

touch "$E2E_TMP/stop"
wait_for 5 "the TCP client to finish" not_running "$CLIENT_PID"
wait "$CLIENT_PID" || fail "the TCP client failed: $(cat "$E2E_TMP/client.out")"
echo "ok: one TCP connection throughout: $(cat "$E2E_TMP/client.out")"
kill "$PING_PID"

# The control plane works through the new proxy: the network drops the sessions (SIGUSR2 to
# the simulator), qmapd hears of it and connects the config's mux again; the D-Bus client's
# bearer stays down, as ModemManager's does, until the client connects it again.
kill -USR2 "$SIM_PID"
wait_for 10 "the D-Bus client's bearer disconnected by the drop" eval '! dbus_connected'
wait_for 10 "the sessions started again" eval '[ "$(clients >/dev/null; started)" -gt "$started1" ]'
wait_for 20 "mux 1 connected after the drop" mux_connected
"$MMCLI" -b "$DBUS_BEARER" --connect >/dev/null || fail "mmcli -b $DBUS_BEARER --connect failed"
wait_for 10 "the D-Bus client's bearer connected again" dbus_connected
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after the network's drop"
echo "ok: a network drop after the $PROXY died is seen and recovered"

# ---- stop ----
# While the control channel is reopened: the proxy dies twice within 10 s, so qmapd waits a
# second before the second reopen, and the stop lands in that second. The stop waits for the
# reopen to take the sessions over and then ends them as any stop does; without the wait
# nothing could reach the modem (no channel), the sessions stayed up and their client ids
# allocated.
for kill_no in 1 2; do
	losses=$(proxy_losses)
	proxy0=$(proxy_pid)
	kill -KILL "$proxy0"
	wait_for 10 "qmapd to count the $PROXY lost again" eval '[ "$(proxy_losses)" -gt "$losses" ]'
	if [ "$kill_no" = 2 ]; then
		expect_eq "the modem's state while its control channel is reopened" \
			"$("${CTL[@]}" -j status | jq -r '.modems[0].modem.state')" reopening
		"${CTL[@]}" status | grep -Eq "^ +state:? +reopening$" ||
			fail "qmapctl status does not say reopening: $("${CTL[@]}" status)"
		break
	fi
	wait_for 10 "a new $PROXY" new_proxy
	wait_for 10 "the control plane ready again" modem_ready
	wait_for 10 "mux 1 connected again" mux_connected
done
stop_qmapd
grep -q "a control channel is being reopened: the sessions end once" "$E2E_TMP/qmapd.log" ||
	fail "the stop did not land while the control channel was reopened"
rm -f "$E2E_TMP/sim.stats"
kill -USR1 "$SIM_PID"
wait_for 5 "sim counters" test -s "$E2E_TMP/sim.stats"
if [ "$CONTROL" = qmi ]; then
	expect_eq "client ids in the modem after a stop" "$(sstat qmi_clients= qmi_clients)" 0
	grep -q "stopped by the host" "$E2E_TMP/sim.log" || fail "the stop did not end the session"
	[ ! -e "$E2E_TMP/qmi0.mux1" ] || fail "a stop left the session's state behind"
else
	expect_eq "MBIM sessions the host ended with the stop" \
		"$(sstat mbim_sessions_ended_by_host= mbim_sessions_ended_by_host)" 2
	grep -q "deactivated by the host" "$E2E_TMP/sim.log" || fail "the stop did not end the session"
fi
! ip -n "$NS_HOST" link show qmap1 >/dev/null 2>&1 || fail "a stop left qmap1 behind"
[ ! -e "$E2E_TMP/${CONTROL}0.bearer2" ] || fail "a stop left the D-Bus bearer's record behind"
echo "ok: a stop while the control channel is reopened ends the sessions and releases" \
	"every client id"

# The configs of what follows: own.conf has no mux (and no D-Bus API, which the private bus
# in the environment would otherwise give it), one.conf mux 1.
cat >"$E2E_TMP/own.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control = $CONTROL
control-link = $E2E_TMP/${CONTROL}0
control-socket = $E2E_TMP/control

[dbus]
enabled = no
CONF
cp "$E2E_TMP/own.conf" "$E2E_TMP/one.conf"
printf '[mux.1]\ninterface = qmap1\n' >>"$E2E_TMP/one.conf"
sim_stat() {
	rm -f "$E2E_TMP/sim.stats"
	kill -USR1 "$SIM_PID"
	wait_for 5 "sim counters" test -s "$E2E_TMP/sim.stats"
	sstat "$1=" "$1"
}

# ---- QMI: releases the modem never answered ----
# An id leaves <link>.clients only once the modem answered its release: a qmapd that stops
# while its releases are lost on their way (qmapd-sim --lose-releases, as when the host died
# right after sending them: the session's 2 WDS clients, then the modem's own 6) leaves every
# id listed, and the next qmapd releases them: the modem's count is that of one run, not two.
if [ "$CONTROL" = qmi ]; then
	kill "$SIM_PID"
	wait "$SIM_PID" 2>/dev/null || true
	rm -f "$E2E_TMP/sim.sock" "$E2E_TMP/qmi0.clients"
	start_sim --keep-sessions --lose-releases 8
	listed() { grep -c . "$E2E_TMP/qmi0.clients" || true; }
	listed_is() { [ "$(listed)" = "$1" ]; }
	start_qmapd "$E2E_TMP/one.conf"
	wait_for 30 "mux 1 connected" mux_connected
	one=$(clients)
	expect_eq "client ids: the modem's own 6 and the session's 2" "$one" 8
	own=6
	stop_qmapd
	expect_eq "releases lost" "$(sim_stat qmi_releases_lost)" 8
	expect_eq "ids still listed after the unanswered releases" "$(listed)" "$one"
	expect_eq "client ids in the modem then" "$(sim_stat qmi_clients)" "$one"
	start_qmapd "$E2E_TMP/one.conf"
	wait_for 30 "mux 1 connected" mux_connected
	# Listed meanwhile: the last run's (being released) and this run's own.
	wait_for 10 "the last run's ids released" listed_is "$own"
	expect_eq "client ids in the modem after the next start" "$(clients)" "$one"
	stop_qmapd
	expect_eq "client ids in the modem after its stop" "$(sim_stat qmi_clients)" 0
	expect_eq "ids listed after a stop whose releases were answered" "$(listed)" 0
	echo "ok: ids whose release went unanswered stay listed and are released by the next run"
fi

# ---- a crash, and the next qmapd lacks the muxes ----
# The last run had the config's mux 1 and a D-Bus client's bearer (mux 2); after a crash the
# next one has no mux (its config edited meanwhile) and no D-Bus API, so nobody could see the
# bearer. What the
# last run left for them ends instead of staying for ever: the sessions (QMI: their WDS ids
# released; MBIM: CONNECT DEACTIVATE on the session ids qmapd activated, <link>.sessions), the
# bearer's record, and the devices kept across the crash (<link>.devices) - but only those:
# a bridge and a persistent TAP not marked as qmapd's, listed there too, stay.
start_qmapd_dbus "$E2E_TMP/one.conf"
wait_for 30 "mux 1 connected" mux_connected
wait_for 10 "the modem on D-Bus" eval '"$MMCLI" -L -J 2>/dev/null | jq -e ".[\"modem-list\"][0]" >/dev/null'
modem_path=$("$MMCLI" -L -J | jq -r '.["modem-list"][0]')
old_bearers=$("$MMCLI" -m "$modem_path" -J | jq -r '.modem.generic.bearers[]')
"$MMCLI" -m "$modem_path" --create-bearer="apn=internet,ip-type=ipv4v6" >/dev/null ||
	fail "mmcli --create-bearer failed"
DBUS_BEARER=$("$MMCLI" -m "$modem_path" -J | jq -r '.modem.generic.bearers[]' | grep -vxF -e "$old_bearers")
"$MMCLI" -b "$DBUS_BEARER" --connect >/dev/null || fail "mmcli -b $DBUS_BEARER --connect failed"
wait_for 10 "the D-Bus client's bearer connected" dbus_connected
bearer_dev=$("$MMCLI" -b "$DBUS_BEARER" -J | jq -r .bearer.status.interface)
[ -e "$E2E_TMP/${CONTROL}0.bearer2" ] || fail "the D-Bus client's bearer is not recorded as mux 2"
if [ "$CONTROL" = qmi ]; then
	two=$(clients)
	[ "$two" -gt "$own" ] || fail "two sessions hold no client ids ($two)"
	[ -e "$E2E_TMP/qmi0.mux2" ] || fail "no state recorded for mux 2"
else
	ended=$(sim_stat mbim_sessions_ended_by_host)
fi
kill -KILL "$QMAPD_PID"
wait "$QMAPD_PID" 2>/dev/null || true
for dev in qmap1 "$bearer_dev"; do
	ip -n "$NS_HOST" link show "$dev" >/dev/null 2>&1 || fail "$dev did not outlive the crash"
done
ip -n "$NS_HOST" link add decoy200 type bridge
ip -n "$NS_HOST" tuntap add decoy201 mode tap
printf '200 decoy200\n201 decoy201\n' >>"$E2E_TMP/${CONTROL}0.devices"
start_qmapd "$E2E_TMP/own.conf"
wait_for 30 "the modem ready" modem_ready
grep -q "ending the D-Bus bearer" "$E2E_TMP/qmapd.log" || fail "qmapd did not say why the bearer ended"
[ ! -e "$E2E_TMP/${CONTROL}0.bearer2" ] || fail "the D-Bus bearer's record is left"
gone() { ! ip -n "$NS_HOST" link show "$1" >/dev/null 2>&1; }
for dev in qmap1 "$bearer_dev"; do
	wait_for 5 "the kept device $dev removed" gone "$dev"
done
for dev in decoy200 decoy201; do
	ip -n "$NS_HOST" link show "$dev" >/dev/null 2>&1 || fail "$dev, not qmapd's, was removed"
	ip -n "$NS_HOST" link del "$dev"
done
[ ! -e "$E2E_TMP/${CONTROL}0.devices" ] || fail "the list of kept devices is left: $(cat "$E2E_TMP/${CONTROL}0.devices")"
if [ "$CONTROL" = qmi ]; then
	wait_for 10 "the state of the muxes it lacks gone" eval '! ls "$E2E_TMP"/qmi0.mux* >/dev/null 2>&1'
	wait_for 10 "their ids released" listed_is "$own"
	expect_eq "client ids in the modem without the muxes" "$(clients)" "$own"
	expect_eq "sessions up in the modem" "$(grep -c 'released with a session up' "$E2E_TMP/sim.log")" 4
	summary="$two ids, then $own"
else
	wait_for 10 "the 2 sessions ended by the host" eval '[ "$(sim_stat mbim_sessions_ended_by_host)" = $((ended + 2)) ]'
	wait_for 5 "the list of sessions gone" eval '[ ! -e "$E2E_TMP/mbim0.sessions" ]'
	expect_eq "MBIM OPENs that found the function open" "$(sim_stat mbim_reopens)" 0
	summary="2 MBIM sessions deactivated"
fi
stop_qmapd
echo "ok: after a crash, what the last run left for muxes the next qmapd lacks ends" \
	"($summary; the kept devices removed, the D-Bus bearer dropped without D-Bus)"
