#!/bin/bash
# SPDX-License-Identifier: MIT
# Several modems in one qmapd: one qmapd-sim per modem ([modem.a], [modem.b], later
# [modem.c]), each with its QMI sessions through its own control link. Checks: a modem added
# by reload comes up next to the running one (qmapd's RSS with one and with two modems up);
# iperf3 on all four muxes at once; one sim killed mid-traffic (an unplug for the sim
# transport) leaves the other modem's sessions and iperf3 alone, and its restart brings the
# same name, devices and sessions back (time from plug to sessions up); a section whose sim
# starts only later is brought up when it appears, one that answers no QMI fails alone, and a
# reload without their sections removes them; qmapctl -m addresses one modem and mux add
# without it is refused as ambiguous. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need /usr/libexec/qmi-proxy libqmi-proxy
need jq jq
need python3 python3
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
IPERF_SECS=${IPERF_SECS:-8}
# Each of the four transfers is paced: unpaced, a.1's uplink and a.2's downlink compete for
# one sim (and, with sanitizers on a loaded machine, for the CPU), and the uplink's CoDel
# drops starve a.1 to a few Mbit/s whether or not b fails. Paced, a's rate before b's unplug
# is the reference its rate after it is held to.
IPERF_RATE=${IPERF_RATE:-100M}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

# Per modem: its muxes' host addresses (from the network) and the servers they reach.
#   a.1 192.0.2.2    -> 198.51.100.1     a.2 192.0.2.18   -> 198.51.100.2
#   b.1 203.0.113.2  -> 198.51.100.3     b.2 203.0.113.18 -> 198.51.100.4
#   b.3 203.0.113.34 -> 198.51.100.6 (added at runtime)
#   c.1 192.0.2.34   -> 198.51.100.5
declare -A SIM_ARGS=(
	[a]="--net-address 198.51.100.1/32 --net-address 198.51.100.2/32 --mux 1=192.0.2.2/32 --mux 2=192.0.2.18/32"
	[b]="--net-address 198.51.100.3/32 --net-address 198.51.100.4/32 --net-address 198.51.100.6/32 --mux 1=203.0.113.2/32 --mux 2=203.0.113.18/32 --mux 3=203.0.113.34/32"
	[c]="--net-address 198.51.100.5/32 --mux 1=192.0.2.34/32"
	[d]="--silent --net-address 198.51.100.7/32 --mux 1=192.0.2.50/32"
)
declare -A SIM_PIDS=()

# start_modem_sim NAME: its qmapd-sim in the network namespace, TUN simnet-NAME.
start_modem_sim() {
	local name=$1
	rm -f "$E2E_TMP/$name.sock"
	# shellcheck disable=SC2086 # the arguments are words
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/$name.sock" --netdev "simnet-$name" \
		${SIM_ARGS[$name]} --apn internet --stats-file "$E2E_TMP/sim-$name.stats" \
		>>"$E2E_TMP/sim-$name.log" 2>&1 &
	SIM_PIDS[$name]=$!
	E2E_PIDS+=($!)
	wait_for 10 "qmapd-sim $name's socket" test -S "$E2E_TMP/$name.sock"
}

modem_section() { # NAME: [modem.NAME] and its muxes
	local name=$1 n=0
	cat <<-CONF

	[modem.$name]
	device = sim:$E2E_TMP/$name.sock
	control-link = $E2E_TMP/$name.qmi
	CONF
	# d answers no QMI: its own short open-timeout, the others keep the default
	[ "$name" != d ] || echo "open-timeout = 3"
	case $name in
	a) routes=(198.51.100.1/32 198.51.100.2/32) ;;
	b) routes=(198.51.100.3/32 198.51.100.4/32) ;;
	c) routes=(198.51.100.5/32) ;;
	d) routes=(198.51.100.7/32) ;;
	esac
	for r in "${routes[@]}"; do
		n=$((n + 1))
		printf '\n[modem.%s.mux.%d]\napn = internet\nip-type = ipv4\nroutes = %s\n' "$name" "$n" "$r"
	done
}

# Discovery runs beside the sections: keep it off every USB device of this host that it
# could take (vendor-class interfaces), so that the test never claims a real modem.
host_excludes() {
	local d ids=()
	for d in /sys/bus/usb/devices/*; do
		[ -f "$d/idVendor" ] || continue
		grep -qsx ff "$d"/*:*/bInterfaceClass || continue
		ids+=("usb:$(cat "$d/idVendor"):$(cat "$d/idProduct")")
	done
	[ ${#ids[@]} -eq 0 ] || printf 'exclude = %s\n' $(printf '%s\n' "${ids[@]}" | sort -u)
}

write_multi_config() { # MODEM...
	{
		echo "[device]"
		echo "control = qmi"
		echo "control-socket = $E2E_TMP/control"
		host_excludes
		for m in "$@"; do modem_section "$m"; done
	} >"$E2E_TMP/qmapd.conf"
}

status() { "${CTL[@]}" -j status; }
modem_muxes_connected() { # NAME N: the modem has N muxes, all connected
	[ "$("${CTL[@]}" -m "$1" -j status 2>/dev/null |
		jq -r '[.modems[0].muxes[] | select(.state == "connected")] | length')" = "$2" ]
}
mux_state() { status | jq -r ".modems[] | select(.name == \"$1\") | .muxes[] | select(.id == $2) | .state"; }
ifindex() { ip -n "$NS_HOST" -j link show "$1" | jq '.[0].ifindex'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$QMAPD_PID/status"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# plug_to_up NAME N: start NAME's sim, print the ms until its N muxes are connected.
plug_to_up() {
	local t0
	t0=$(now_ms)
	start_modem_sim "$1"
	for _ in $(seq 600); do
		modem_muxes_connected "$1" "$2" && {
			echo $(($(now_ms) - t0))
			return
		}
		sleep 0.05
	done
	fail "modem $1: its $2 mux(es) not connected 30 s after its sim started"
}

# ---- one modem, then a second one added by reload: RSS with one and with two up ---------------
start_modem_sim a
start_modem_sim b
write_multi_config a
start_qmapd "$E2E_TMP/qmapd.conf"
wait_for 30 "modem a's two muxes connected" modem_muxes_connected a 2
expect_eq "modems with one section" "$(status | jq -r '[.modems[].name] | join(",")')" a
expect_eq "default interface names" "$(status | jq -r '[.modems[0].muxes[].interface] | join(",")')" a.1,a.2
expect_eq "every mux names its modem" "$(status | jq -r '[.modems[].muxes[].modem] | unique | join(",")')" a

for i in 1 2 3 4 6; do
	in_net iperf3 -s -D -B "198.51.100.$i" -p $((5200 + i)) --pidfile "$E2E_TMP/iperf3-$i.pid" \
		--logfile "$E2E_TMP/iperf3-server-$i.log"
done
for i in 1 2 3 4 6; do
	wait_for 5 "iperf3 server $i" test -s "$E2E_TMP/iperf3-$i.pid"
	E2E_PIDS+=($(cat "$E2E_TMP/iperf3-$i.pid"))
done
# The same warm-up through each modem before its RSS is read: buffers in use, not just made.
in_host iperf3 -c 198.51.100.1 -p 5201 -t 2 >/dev/null || fail "iperf3 through a.1"
RSS_ONE=$(rss_kib)

write_multi_config a b
"${CTL[@]}" reload || fail "qmapctl reload adding [modem.b]"
wait_for 30 "modem b's two muxes connected" modem_muxes_connected b 2
expect_eq "modem a untouched by the reload" "$(mux_state a 1),$(mux_state a 2)" connected,connected
in_host iperf3 -c 198.51.100.3 -p 5203 -t 2 >/dev/null || fail "iperf3 through b.1"
RSS_TWO=$(rss_kib)
echo "ok: reload added modem b next to a; qmapd VmRSS: one modem up ${RSS_ONE} KiB, two modems up ${RSS_TWO} KiB (+$((RSS_TWO - RSS_ONE)) KiB)"

# ---- qmapctl across modems ---------------------------------------------------------------
expect_eq "qmapctl -m a status: one modem" "$("${CTL[@]}" -m a -j status | jq -r '[.modems[].name] | join(",")')" a
expect_eq "qmapctl mux list: both modems" "$("${CTL[@]}" -j mux list | jq -r '[.muxes[] | "\(.modem).\(.id)"] | join(",")')" a.1,a.2,b.1,b.2
expect_eq "qmapctl -m b stats: b's muxes" "$("${CTL[@]}" -m b -j stats | jq -r '[.modems[].muxes[].interface] | join(",")')" b.1,b.2
"${CTL[@]}" status | grep -q "^modem a$" || fail "qmapctl status lacks the header of modem a"
"${CTL[@]}" status | grep -q "^modem b$" || fail "qmapctl status lacks the header of modem b"
rc=0
out=$("${CTL[@]}" mux add 3 apn=internet ip-type=ipv4 2>&1) || rc=$?
expect_eq "mux add without -m, two modems: exit" "$rc" 2
[[ $out == *"-m"* ]] || fail "mux add without -m: the message does not say to use -m: '$out'"
reply=$(in_host timeout 5 python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$E2E_TMP/control'); s.sendall(b'{\"command\": \"mux-del\", \"id\": 1}\n'); print(s.makefile().readline())")
expect_eq "mux-del without a modem: code" "$(jq -r .code <<<"$reply")" ambiguous-modem
rc=0
"${CTL[@]}" -m zz status >/dev/null 2>&1 || rc=$?
expect_eq "qmapctl -m of an unknown modem: exit" "$rc" 11
"${CTL[@]}" -m b mux add 3 apn=internet ip-type=ipv4 routes=198.51.100.6/32 >/dev/null ||
	fail "qmapctl -m b mux add 3"
expect_eq "runtime mux on b: interface" "$(status | jq -r '.modems[] | select(.name == "b") | .muxes[] | select(.id == 3) | .interface')" b.3
in_host ping -c 2 -i 0.2 -W 2 198.51.100.6 >/dev/null || fail "ping through b.3"
"${CTL[@]}" -m b mux del 3 || fail "qmapctl -m b mux del 3"
! ip -n "$NS_HOST" link show b.3 >/dev/null 2>&1 || fail "b.3 still there after mux del"
expect_eq "a's mux 1 after b's mux add/del" "$(mux_state a 1)" connected
echo "ok: qmapctl -m addresses one modem; mux add without it is ambiguous-modem"

# ---- traffic on all four muxes; modem b unplugged mid-traffic ----------------------------
drops() { # NAME: rx + tx drops over the modem's muxes
	status | jq ".modems[] | select(.name == \"$1\") | [.muxes[].counters | .[\"rx-dropped\"] + .[\"tx-dropped\"]] | add"
}
A_DROPS0=$(drops a)
A1_IF=$(ifindex a.1) B1_IF=$(ifindex b.1) B2_IF=$(ifindex b.2)
# a.1 and b.1 uplink, a.2 and b.2 downlink (-R).
declare -A IPERF_PIDS=()
run_iperf() { # MUX SERVER PORT [-R]
	# Not in_host, a function: $! is then timeout's own pid, which a signal reaches.
	ip netns exec "$NS_HOST" timeout $((IPERF_SECS + 20)) iperf3 -c "$2" -p "$3" -t "$IPERF_SECS" -b "$IPERF_RATE" -J "${@:4}" \
		>"$E2E_TMP/iperf-$1.json" 2>"$E2E_TMP/iperf-$1.err" &
	IPERF_PIDS[$1]=$!
}
run_iperf a.1 198.51.100.1 5201
run_iperf a.2 198.51.100.2 5202 -R
run_iperf b.1 198.51.100.3 5203
run_iperf b.2 198.51.100.4 5204 -R
sleep 3
kill -KILL "${SIM_PIDS[b]}"
wait "${SIM_PIDS[b]}" 2>/dev/null || true
echo "ok: sim b killed 3 s into the transfers"
wait_for 5 "b.1 without carrier" no_carrier b.1
for m in a.1 a.2; do
	wait "${IPERF_PIDS[$m]}" || fail "iperf3 through $m failed while modem b went away: $(cat "$E2E_TMP/iperf-$m.err")"
done
# b's two lost their server with sim b and would hang until their timeout (IPERF_SECS + 20):
# their figures are printed, not judged, so they are stopped now (iperf3 writes its JSON on
# SIGTERM, which timeout passes on).
for m in b.1 b.2; do kill -TERM "${IPERF_PIDS[$m]}" 2>/dev/null || true; done
for m in b.1 b.2; do wait "${IPERF_PIDS[$m]}" || true; done

mbps() { jq -r '.end.sum_received.bits_per_second // 0 | . / 1e6 | floor' "$E2E_TMP/iperf-$1.json" 2>/dev/null || echo 0; }
retrans() { jq -r '.end.sum_sent.retransmits // "-"' "$E2E_TMP/iperf-$1.json" 2>/dev/null || echo -; }
min_interval() { jq -r '[.intervals[].sum.bytes] | min' "$E2E_TMP/iperf-$1.json"; }
# Mean bytes per interval over [FROM, TO) seconds (b was killed at 3 s; 0-1 is the start).
mean_bytes() { jq -r "[.intervals[$2:$3][].sum.bytes] | add / length | floor" "$E2E_TMP/iperf-$1.json"; }
for m in a.1 a.2; do
	[ "$(min_interval $m)" -gt 0 ] || fail "iperf3 through $m stalled: an interval carried nothing"
	before=$(mean_bytes $m 1 3) after=$(mean_bytes $m 4 "$IPERF_SECS")
	echo "figure: iperf3 $m: $((before / 125000)) Mbit/s before b's unplug, $((after / 125000)) after"
	[ "$((after * 2))" -ge "$before" ] ||
		fail "iperf3 through $m: $((after / 125000)) Mbit/s after b's unplug, $((before / 125000)) before"
done
expect_eq "modem a: drops on its muxes while b went away" "$(($(drops a) - A_DROPS0))" 0
expect_eq "modem a's sessions after b's unplug" "$(mux_state a 1),$(mux_state a 2)" connected,connected
expect_eq "b.1 kept (same device) after the unplug" "$(ifindex b.1)" "$B1_IF"
expect_eq "a.1 kept" "$(ifindex a.1)" "$A1_IF"
for m in a.1 a.2 b.1 b.2; do
	echo "figure: iperf3 $m: $(mbps $m) Mbit/s received, retransmits $(retrans $m)$([[ $m == b.* ]] && echo " (sim b killed after 3 s of ${IPERF_SECS} s)")"
done
echo "ok: a's iperf3 on both muxes completed, no interval empty, no drop, sessions connected"

# ---- replug b: same name, devices, sessions -----------------------------------------------
PLUG_B=$(plug_to_up b 2)
expect_eq "modem b's name after the replug" "$("${CTL[@]}" -m b -j status | jq -r '.modems[0].name')" b
expect_eq "b.1 the same device after the replug" "$(ifindex b.1)" "$B1_IF"
expect_eq "b.2 the same device after the replug" "$(ifindex b.2)" "$B2_IF"
wait_for 10 "b.1 with carrier" has_carrier "$NS_HOST" b.1
in_host ping -c 2 -i 0.2 -W 2 198.51.100.3 >/dev/null || fail "ping through b.1 after the replug"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.4 >/dev/null || fail "ping through b.2 after the replug"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping through a.1 after b's replug"
echo "figure: replug of b (sim start) to both sessions connected: ${PLUG_B} ms"

# ---- a third modem whose sim comes later, and a fourth that answers no QMI ----------------------
start_modem_sim d
write_multi_config a b c d
"${CTL[@]}" reload || fail "qmapctl reload adding [modem.c] and [modem.d]"
expect_eq "modem c before its sim exists" "$("${CTL[@]}" -m c -j status | jq -r '.modems[0].modem.state')" absent
expect_eq "modems" "$(status | jq -r '[.modems[].name] | join(",")')" a,b,c,d
PLUG_C=$(plug_to_up c 1)
in_host ping -c 2 -i 0.2 -W 2 198.51.100.5 >/dev/null || fail "ping through c.1"
expect_eq "a and b after c came" "$(mux_state a 1),$(mux_state b 1)" connected,connected
echo "figure: plug of c (sim start) to its session connected: ${PLUG_C} ms"
d_failed() { [ "$("${CTL[@]}" -m d -j status | jq -r '.modems[0].modem.state')" = failed ]; }
wait_for 40 "modem d (silent) reported failed" d_failed
d_err=$("${CTL[@]}" -m d -j status | jq -r '.modems[0].modem["last-error"]')
[[ $d_err == *"answered no QMI"* ]] || fail "modem d: unclear error for a silent modem: '$d_err'"
[[ $d_err == *"within 3 s"* ]] || fail "modem d: not its [modem.d] open-timeout of 3 s: '$d_err'"
expect_eq "a, b and c while d answers no QMI" "$(mux_state a 1),$(mux_state b 1),$(mux_state c 1)" connected,connected,connected
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping through a.1 while d is silent"
echo "ok: a modem that answers no QMI fails alone"

# Reload without [modem.c] and [modem.d]: they go, with their devices; a and b stay as they are.
A1_IF=$(ifindex a.1)
"${CTL[@]}" -m c status >/dev/null || fail "qmapctl -m c before the reload"
write_multi_config a b
"${CTL[@]}" reload || fail "qmapctl reload removing [modem.c] and [modem.d]"
expect_eq "modems after removing [modem.c] and [modem.d]" "$(status | jq -r '[.modems[].name] | join(",")')" a,b
! ip -n "$NS_HOST" link show c.1 >/dev/null 2>&1 || fail "c.1 still there after its section went"
expect_eq "a.1 kept through the reload" "$(ifindex a.1)" "$A1_IF"
expect_eq "a and b after c went" "$(mux_state a 1),$(mux_state b 2)" connected,connected
echo "ok: reload removed modems c and d and left a and b alone"

# The counters of each modem, each line after its name.
refresh_qmapd_stats() {
	rm -f "$E2E_TMP/qmapd.stats"
	kill -USR1 "$QMAPD_PID"
	wait_for 5 "qmapd's counters" test -s "$E2E_TMP/qmapd.stats"
}
refresh_qmapd_stats
for m in a b; do
	QSTAT_MODEM=$m qstat "mux 1 " rx_packets >/dev/null
done
expect_ge "a.1 received (stats file)" "$(QSTAT_MODEM=a qstat "mux 1 " rx_packets)" 100
echo "ok: the counters of every modem, each line after its name"

stop_qmapd
echo "e2e-multi-modem: passed"
