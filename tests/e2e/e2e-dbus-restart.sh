#!/bin/bash
# SPDX-License-Identifier: MIT
# The system bus restarts under a running qmapd (`systemctl restart dbus`, a dbus-daemon
# crash): qmapd stays up, the mux keeps carrying a ping throughout, and once a new bus listens
# at the same address qmapd owns org.freedesktop.ModemManager1 again with the modem and the
# bearer of its config mux, as mmcli -L and -m show. qmapd is given the bus as a system bus
# ([dbus] enabled = yes, DBUS_SYSTEM_BUS_ADDRESS), not with --dbus-address, so that it takes
# the path a real boot takes. Also: READY=1 comes once the name is owned. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need_mmcli
e2e_setup_bus
BUS_PID=${E2E_PIDS[-1]}

ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/sim.sock" --netdev simnet0 \
	--net-address 198.51.100.1/32 --mux 1=192.0.2.2/25 --apn internet \
	--stats-file "$E2E_TMP/sim.stats" >"$E2E_TMP/sim.log" 2>&1 &
E2E_PIDS+=($!)
wait_for 10 "qmapd-sim's socket" test -S "$E2E_TMP/sim.sock"

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control
discovery = no

[dbus]
enabled = yes
bus = system

[modem.a]
device = sim:$E2E_TMP/sim.sock
control-link = $E2E_TMP/a.qmi

[modem.a.mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32
CONF
DBUS_SYSTEM_BUS_ADDRESS=$BUS ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd.conf" \
	>"$E2E_TMP/qmapd.log" 2>&1 &
QMAPD_PID=$!
E2E_PIDS+=($QMAPD_PID)
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"

modem_listed() { [ "$(mmj -L | jq -r '."modem-list" | length')" = 1 ]; }
config_bearer_connected() {
	local b
	b=$(mmj -m 0 | jq -r '.modem.generic.bearers[0] // empty')
	[ -n "$b" ] && [ "$(mmj -b "$b" | jq -r .bearer.status.connected)" = yes ]
}
wait_for 20 "the modem on the bus" modem_listed
wait_for 30 "the config's mux connected, as a bearer" config_bearer_connected
wait_for 10 "a.1 with carrier" has_carrier "$NS_HOST" a.1
in_host ping -c 1 -W 2 198.51.100.1 >/dev/null || fail "no ping through a.1 before the test"
echo "ok: mmcli -L lists the modem, its config mux is a connected bearer, a.1 carries a ping"
# READY=1 (logged as "running" where it is sent) waits for the name, so that a client ordered
# after qmapd.service finds it.
owning=$(grep -n "dbus: owning org.freedesktop.ModemManager1" "$E2E_TMP/qmapd.log" | head -n1 | cut -d: -f1)
running=$(grep -n "qmapd .*: running" "$E2E_TMP/qmapd.log" | head -n1 | cut -d: -f1)
[ -n "$owning" ] && [ -n "$running" ] && [ "$owning" -lt "$running" ] ||
	fail "qmapd said it runs (READY=1) before it owned the name (log lines ${running:-?}, ${owning:-?})"
echo "ok: READY=1 after the name was owned"

# A ping every 0.2 s from before the bus goes until after it is back.
# ip netns exec execs ping, so $! is ping itself, which handles SIGINT (a background
# subshell would ignore it) and prints its summary.
ip netns exec "$NS_HOST" ping -i 0.2 -W 1 198.51.100.1 >"$E2E_TMP/ping.out" 2>&1 &
PING_PID=$!
E2E_PIDS+=($PING_PID)
sleep 1

kill -TERM "$BUS_PID"
wait "$BUS_PID" 2>/dev/null
rm -f "$E2E_TMP/bus"
sleep 3
kill -0 "$QMAPD_PID" 2>/dev/null || {
	wait "$QMAPD_PID"
	fail "qmapd exited (status $?) when the bus went away"
}
grep -q "the bus at .* went away" "$E2E_TMP/qmapd.log" || fail "qmapd did not say the bus went away"
echo "ok: qmapd runs on without the bus"

t0=$(date +%s%N)
start_system_bus
wait_for 10 "the modem on the new bus" modem_listed
t_back=$((($(date +%s%N) - t0) / 1000000))
wait_for 10 "the config's bearer on the new bus, connected" config_bearer_connected
echo "ok: mmcli -L lists the modem ${t_back} ms after the new bus started; its bearer is connected"
sleep 1

kill -INT "$PING_PID"
wait_for 5 "ping to stop" not_running "$PING_PID"
stats=$(grep "packets transmitted" "$E2E_TMP/ping.out") || fail "ping printed no summary"
sent=$(awk '{ print $1 }' <<<"$stats")
got=$(awk '{ print $4 }' <<<"$stats")
[ "$sent" -ge 20 ] || fail "only $sent pings sent while the bus restarted"
# One may be in flight when ping is stopped.
[ "$got" -ge $((sent - 1)) ] || fail "ping through a.1 lost packets while the bus restarted: $stats"
echo "ok: the mux carried the ping throughout: $stats"

n=$(grep -c "dbus: the bus at .* went away" "$E2E_TMP/qmapd.log")
expect_eq "bus-gone messages in qmapd's log" "$n" 1
grep -q "dbus: the bus at .* is back" "$E2E_TMP/qmapd.log" || fail "qmapd did not say the bus is back"
# The DNS side has its own connection when it found the bus (qmapd in PID 1's namespace).
if grep -q "dns: the bus went away" "$E2E_TMP/qmapd.log"; then
	grep -q "dns: the bus is back" "$E2E_TMP/qmapd.log" || fail "the DNS side did not connect again"
fi
# The sessions were never touched: the sim saw no session stop.
if grep -q "stopped by the host" "$E2E_TMP/sim.log"; then
	fail "the sim saw a session stop while the bus restarted: $(grep "stopped by the host" "$E2E_TMP/sim.log" | head -3)"
fi
echo "ok: qmapd said once that the bus went away, and that it is back; no session was stopped"
