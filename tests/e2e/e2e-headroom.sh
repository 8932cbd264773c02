#!/bin/bash
# SPDX-License-Identifier: MIT
# The headroom promise (docs/ARCHITECTURE.md, lesson 1): packets qmapd writes into a mux
# device and the kernel forwards into a VXLAN tunnel must not be re-allocated
# (pskb_expand_head). Counted with the kmem:kmalloc tracepoint from the host mount namespace
# (docs/ARCHITECTURE.md, "Tests"), in qmapd's context only. Run three times: headroom=xdp (TAP
# + XDP_PASS) and auto (unmergeable traffic keeps XDP on) must show ~0 per packet;
# headroom=off (plain TUN) must show ~1 per packet, which proves the measurement can fail.
# auto must also follow the traffic: bulk TCP detaches the program, per-packet UDP right after
# attaches it again after one window of segments, and no write goes missing across switches.
# GRO super-packets (bulk TCP, XDP detached) must not be re-allocated either.
# With SIM_EXTRA_ARGS=--mbim (ctest e2e-headroom-mbim) the modem is an MBIM function and the
# packets arrive in NTBs: the same promise holds.
# Needs root and tracefs; runs in namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

N=${HEADROOM_PACKETS:-2000}
FLOOD=$BUILD_DIR/qmapd-bench-udp-flood
TRACING=/sys/kernel/tracing
require_root
need jq jq
need iperf3 iperf3
[ -x "$FLOOD" ] || fail "$FLOOD not built (it comes with qmapd-sim)"
# A kernel built without tracing is a reason to skip; tracing that root cannot use is not.
if [ ! -d "$TRACING/events/kmem" ]; then
	grep -qw tracefs /proc/filesystems || skip "the kernel has no tracefs"
	mount -t tracefs nodev "$TRACING" || fail "cannot mount tracefs at $TRACING"
fi
[ -d "$TRACING/events/kmem/kmalloc" ] || skip "the kernel has no kmem:kmalloc tracepoint"
[ -w "$TRACING/events/kmem/kmalloc/enable" ] || fail "the kmem:kmalloc tracepoint is not writable"

NS_VX=qmapd-v-$E2E_ID
E2E_EXTRA_NS+=("$NS_VX")
trace_off() {
	echo 0 >"$TRACING/events/kmem/kmalloc/enable"
	echo 0 >"$TRACING/events/kmem/kmalloc/filter"
}
e2e_setup
# e2e_cleanup exits with the status it finds: the test's, not trace_off's. set +e first: a
# failing trace_off under set -e would end the trap there, with its status, namespaces left.
trap 'rc=$?; set +e; trace_off 2>/dev/null; (exit $rc); e2e_cleanup' EXIT

setup_vxlan_forward

# arrived FROM COUNT: the tunnel's end has received COUNT packets since its counter read FROM,
# or nothing more for 0.5 s (the forwarding has drained; the checks say if that is enough).
arrived() {
	local now
	now=$(vx_rx)
	if [ $((now - $1)) -ge "$2" ]; then
		return 0
	fi
	if [ "$now" = "${ARRIVED_LAST:-}" ]; then
		ARRIVED_SAME=$((ARRIVED_SAME + 1))
	else
		ARRIVED_LAST=$now ARRIVED_SAME=0
	fi
	[ "$ARRIVED_SAME" -ge 5 ]
}
drain() { # from count
	ARRIVED_LAST= ARRIVED_SAME=0
	wait_for 10 "packets through the tunnel to stop coming" arrived "$1" "$2"
}

# The modem's framing is the one asked for: an MBIM sim's NTBs, else QMAP.
check_framing() {
	if [[ " ${SIM_EXTRA_ARGS:-} " == *" --mbim "* ]]; then
		wait_for 5 "the NTB negotiation" grep -q 'MBIM data interface' "$E2E_TMP/qmapd.log"
	elif grep -q 'MBIM' "$E2E_TMP/qmapd.log"; then
		fail "an MBIM function without --mbim"
	fi
}

# Packets the network side's TUN dropped because the sim did not read them in time.
tun_drops() { ip -n "$NS_NET" -j -s link show simnet0 | jq '.[0].stats64.tx.dropped'; }

# measure MODE: sets EXPANDED, FORWARDED and TUN_DROPS
measure() {
	MUX_HEADROOM=$1 write_config "$E2E_TMP/qmapd-$1.conf"
	rm -f "$E2E_TMP/sim.sock"
	start_sim --flush-usec 0
	# The burst comes from a loop faster than a slow (sanitizer) sim reads its TUN, whose
	# queue holds 500 packets by default: the rest would be dropped before qmapd sees them.
	# Room for the whole burst keeps the count about qmapd, not about the sim's speed.
	ip -n "$NS_NET" link set simnet0 txqueuelen $((N + 1000)) || fail "txqueuelen of simnet0"
	start_qmapd "$E2E_TMP/qmapd-$1.conf" qmap1
	check_framing
	# Warm up neighbour and route caches, then count.
	local rx0
	rx0=$(vx_rx)
	in_net bash -c 'for i in $(seq 20); do echo warm >/dev/udp/192.0.2.100/9; done'
	drain "$rx0" 20
	rx0=$(vx_rx)
	local tun_drops0
	tun_drops0=$(tun_drops)
	echo >"$TRACING/trace"
	echo 'call_site.function == pskb_expand_head' >"$TRACING/events/kmem/kmalloc/filter"
	echo 1 >"$TRACING/events/kmem/kmalloc/enable"
	in_net bash -c "for i in \$(seq $N); do echo headroom-probe >/dev/udp/192.0.2.100/9; done"
	drain "$rx0" "$N"
	trace_off
	# Only qmapd's own context: the kernel forwards inside its write (or an io_uring worker's),
	# and other processes on the machine re-expand packets of their own. grep -c exits 1 when
	# it counts 0, which is an answer; 2 is an error, and fails.
	EXPANDED=$(grep -cE "^ *(qmapd-$QMAPD_PID|iou-wrk-$QMAPD_PID-[0-9]+) .*call_site=pskb_expand_head" \
		"$TRACING/trace" || [ $? = 1 ])
	ALL_EXPANDED=$(grep -c 'call_site=pskb_expand_head' "$TRACING/trace" || [ $? = 1 ])
	FORWARDED=$(($(vx_rx) - rx0))
	TUN_DROPS=$(($(tun_drops) - tun_drops0))
	refresh_stats
	MODE=$(qstat "mux 1 " mode)
	echo "headroom=$1 (device $MODE): $FORWARDED of $N packets forwarded into VXLAN," \
		"$EXPANDED pskb_expand_head in qmapd's context ($ALL_EXPANDED machine-wide);" \
		"$TUN_DROPS dropped by the sim's TUN queue, qmapd received $(qstat "mux 1 " rx_packets) with the 20 of the warm-up"
	stop_qmapd
	stop_process qmapd-sim "$SIM_PID"
	E2E_PIDS=()
}

measure xdp
[ "$MODE" = tap+xdp ] || fail "headroom=xdp did not get a TAP+XDP device (got $MODE)"
[ "$FORWARDED" -ge $((N * 95 / 100)) ] || fail "only $FORWARDED of $N forwarded with TAP+XDP"
[ "$EXPANDED" -le $((N / 100)) ] || fail "TAP+XDP: $EXPANDED re-expansions for $N packets (want ~0)"
xdp_expanded=$EXPANDED

# auto: packets that cannot merge (a new UDP flow each) keep the XDP program attached.
measure auto
[ "$MODE" = tap+xdp ] || fail "headroom=auto did not keep XDP for unmergeable traffic (got $MODE)"
[ "$EXPANDED" -le $((N / 100)) ] || fail "auto: $EXPANDED re-expansions for $N packets (want ~0)"
auto_expanded=$EXPANDED

# transition: auto after bulk TCP (XDP detached), then per-packet UDP (XDP back on).
transition() {
	MUX_HEADROOM=auto write_config "$E2E_TMP/qmapd-transition.conf"
	rm -f "$E2E_TMP/sim.sock"
	start_sim
	start_qmapd "$E2E_TMP/qmapd-transition.conf" qmap1
	check_framing
	in_vx iperf3 -s -1 -D -B 192.0.2.100 --pidfile "$E2E_TMP/iperf3.pid"
	wait_for 5 "iperf3 server" test -s "$E2E_TMP/iperf3.pid"
	E2E_PIDS+=("$(cat "$E2E_TMP/iperf3.pid")")
	in_net iperf3 -c 192.0.2.100 -t 2 >/dev/null || fail "iperf3 through the tunnel"
	refresh_stats
	expect_eq "auto after bulk TCP: device" "$(qstat "mux 1 " mode)" tap
	# GRO super-packets never get XDP's headroom: their room is the 802.1Q priority tag's
	# (mux.c), which must be enough for VXLAN too. Without it, one re-expansion per write.
	local sp0 sp exp
	sp0=$(qstat "mux 1 " gro_super_packets)
	echo >"$TRACING/trace"
	echo 'call_site.function == pskb_expand_head' >"$TRACING/events/kmem/kmalloc/filter"
	echo 1 >"$TRACING/events/kmem/kmalloc/enable"
	in_vx iperf3 -s -1 -D -B 192.0.2.100 -p 5202 --pidfile "$E2E_TMP/iperf3b.pid"
	wait_for 5 "iperf3 server" test -s "$E2E_TMP/iperf3b.pid"
	E2E_PIDS+=("$(cat "$E2E_TMP/iperf3b.pid")")
	in_net iperf3 -c 192.0.2.100 -p 5202 -t 1 >/dev/null || fail "iperf3 through the tunnel"
	trace_off
	refresh_stats
	sp=$(($(qstat "mux 1 " gro_super_packets) - sp0))
	exp=$(grep -cE "^ *(qmapd-$QMAPD_PID|iou-wrk-$QMAPD_PID-[0-9]+) .*call_site=pskb_expand_head" \
		"$TRACING/trace" || [ $? = 1 ])
	echo "GRO into VXLAN (device tap): $sp super-packets, $exp pskb_expand_head in qmapd's context"
	[ "$sp" -ge 100 ] || fail "only $sp GRO super-packets in a second of bulk TCP"
	[ "$exp" -le $((sp / 100 + 5)) ] || fail "GRO: $exp re-expansions for $sp super-packets (want ~0)"
	in_net "$FLOOD" -d 192.0.2.100 -f 256 -s 1000 -t 1 >/dev/null
	# Not a poll: the silent-drop check runs on the once-a-second headroom tick, which leaves
	# nothing to wait for; 1.2 s makes sure one has covered the switches.
	sleep 1.2
	refresh_stats
	expect_eq "auto after per-packet UDP: device" "$(qstat "mux 1 " mode)" tap+xdp
	expect_eq "auto: switches" "$(qstat "mux 1 " headroom_switches)" 2
	expect_eq "auto: silent drops across the switches" "$(qstat "mux 1 " rx_silent_drops)" 0
	# The switch back came from a window of segments, not from the once-a-second timer
	# (which sees the whole second: tens of thousands of segments at this rate).
	local n
	n=$(sed -n 's/.* of the last \([0-9]*\) downlink segments merged, XDP headroom on$/\1/p' \
		"$E2E_TMP/qmapd.log" | tail -n1)
	[ -n "$n" ] || fail "no 'XDP headroom on' line in qmapd's log"
	[ "$n" -lt 8192 ] || fail "XDP came back after $n segments: not from a window of 2048"
	echo "ok: XDP back on after a window of $n segments"
	stop_qmapd
	stop_process qmapd-sim "$SIM_PID"
	E2E_PIDS=()
}
transition

measure off
[ "$MODE" = tun ] || fail "headroom=off did not get a TUN device (got $MODE)"
[ "$FORWARDED" -ge $((N * 95 / 100)) ] || fail "only $FORWARDED of $N forwarded with TUN"
[ "$EXPANDED" -ge $((N * 90 / 100)) ] ||
	fail "TUN: only $EXPANDED re-expansions for $N packets: the measurement cannot tell the modes apart"
echo "ok: re-expansions per packet: xdp $xdp_expanded/$N, auto $auto_expanded/$N, tun $EXPANDED/$N"
echo "e2e-headroom: passed"
