#!/bin/bash
# SPDX-License-Identifier: MIT
# Forwarding cost on the real USB stack (issue 21 items 4-5), run on purpose, not in CI:
# whole-system instructions per forwarded downlink packet, the kernel's qmi_wwan + qmimux
# beside qmapd (per packet and with GRO), on the same gadget modem.
#
# The guest (tests/vm/vm-lib.sh) boots under `-icount shift=0`: one guest instruction is one
# nanosecond of guest time, so the guest's busy time (elapsed minus idle, /proc/stat) counts
# the instructions of the whole system, kernel and userspace. In the guest, qmapd-sim plays a
# Quectel EC25 as a FunctionFS gadget on dummy_hcd (as tests/vm/vm-gadget-qmi.sh); iperf3
# sends from the sim's namespace to a sink namespace; the guest's own namespace forwards the
# modem's downlink to the sink over (a) a veth pair and (b) a VXLAN tunnel on that pair.
#
# The sim, iperf3 at both ends and the emulated USB bus run in the same guest and their
# instructions count too, so each run also samples the whole system with perf (cpu-clock:
# guest time, hence instructions) and splits the busy time into
#   sim   - qmapd-sim's threads in process context (the modem's firmware, incl. FunctionFS)
#   bus   - dummy_hcd moving bytes between gadget and host (dummy_timer outside the host
#           driver's completion): the USB controller's DMA on real hardware
#   ends  - iperf3 at both ends and their protocol stacks (ip_local_deliver and below, also
#           the VXLAN decapsulation at the far end)
#   perf  - the sampler itself and the script's own tools (ip, jq, awk...)
#   fwd   - the rest: the host driver (completion, qmi_wwan/usbnet or usbfs + qmapd), IP
#           forwarding, veth/VXLAN transmit, the uplink ACKs, timers, kworkers.
# "fwd" is what the paths are compared by; "all" is the whole system.
# pskb_expand_head is counted system-wide with a tracefs kprobe and a hist trigger (lossless).
#
# Usage: tests/bench/vm-forward.sh BUILD_DIR [PATH...]   PATH: qmimux, qmapd (rows qmapd and
#   qmapd-gro: GRO off and on, one boot)
#   env: SECS (guest seconds per run, 3), CASES ("tcp udp64 udpmtu"), TARGETS ("veth vxlan"),
#   UDP_PPS (UDP packets per guest second offered, 20000), PERF_PERIOD (ns, 500000)
# Needs root, qemu-system-x86, perf, iperf3, jq, libqmi-utils. One boot per path.
source "$(dirname "$0")/../support/lib.sh" || exit 1

if [ "${1:-}" != --guest ]; then
	BUILD_DIR=${1:?usage: $0 BUILD_DIR [qmimux qmapd]}
	BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
	shift
	QMAPD=$BUILD_DIR/qmapd
	QMAPD_SIM=$BUILD_DIR/qmapd-sim
	[ $# -gt 0 ] || set -- qmimux qmapd
	# Before vm-lib.sh, whose own default (170 s) would otherwise win: one boot runs every case.
	VM_TIMEOUT=${VM_TIMEOUT:-1500}
	source "$(dirname "$0")/../vm/vm-lib.sh"
	require_root
	need iperf3 iperf3
	need jq jq
	need perf linux-perf
	need qmicli libqmi-utils
	VM_MODULES="$VM_MODULES vxlan"
	VM_QEMU_ARGS="-icount shift=0"
	self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
	echo "| path | target | traffic | packets | loss | all instr/pkt | fwd | sim | bus | ends | perf | pskb_expand_head/pkt |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	rc=0
	for path in "$@"; do
		vm_run "$self" --guest "$path" "${SECS:-3}" "${CASES:-tcp udp64 udpmtu}" \
			"${TARGETS:-veth vxlan}" "${UDP_PPS:-20000}" "${PERF_PERIOD:-500000}" \
			>"/tmp/vm-forward-$path.log" 2>&1 || rc=$?
		grep '^| ' "/tmp/vm-forward-$path.log" || true
		[ "$rc" = 0 ] || echo "vm-forward: $path failed (status $rc): /tmp/vm-forward-$path.log" >&2
	done
	echo "(details per path: /tmp/vm-forward-PATH.log)"
	exit $rc
fi

# In the guest, root of its own kernel, which is the forwarder.
FWPATH=$2 SECS=$3 CASES=$4 TARGETS=$5 UDP_PPS=$6 PERIOD=$7
NS_VX=qmapd-v-$E2E_ID
E2E_EXTRA_NS+=("$NS_VX")
e2e_setup
TR=/sys/kernel/tracing
mountpoint -q $TR || mount -t tracefs none $TR

# The EC25 gadget (vm-lib.sh): the sim's QMI function at interface 4.
source "$(dirname "$0")/../vm/vm-lib.sh"
FFS=/tmp/ffs-qmi
vm_gadget_ec25 "$FFS"

# The sim sends 192.0.2.0/25 down mux 1; its namespace holds the iperf3 clients.
SIM_MUX_ARGS=(--mux 1=192.0.2.0/25)
# The network side's MTU is 1496, not 1500: Debian 12's qmi_wwan (6.1) in raw-ip mode
# receives into URBs of its MTU, at most 1500 bytes, and a packet of 1500 bytes with its
# 4-byte QMAP header would overflow them (seen: nothing of 1500 bytes came through).
MTU=1496
SIM_ALWAYS_CONNECTED=yes start_sim --profile strict --data-interface 4 --ffs "$FFS" --mtu $MTU
wait_for 10 "the sim's FunctionFS endpoints" test -e "$FFS/ep3"
vm_gadget_plug
wait_for 20 "cdc-wdm0 (qmi_wwan bound)" test -c /dev/cdc-wdm0
wait_for 5 "wwan0" test -e /sys/class/net/wwan0

# The sink: 192.0.2.101 behind the veth pair, 192.0.2.100 behind VXLAN over the same pair;
# answers go back the way they came (source routing in the sink's namespace).
ip netns add "$NS_VX"
ip -n "$NS_VX" link set lo up
ip link add veth-h mtu 1600 type veth peer name veth-v mtu 1600 netns "$NS_VX"
ip addr add 192.0.2.129/30 dev veth-h
ip -n "$NS_VX" addr add 192.0.2.130/30 dev veth-v
ip link set veth-h up
ip -n "$NS_VX" link set veth-v up
ip link add vxlan0 mtu 1500 type vxlan id 42 local 192.0.2.129 remote 192.0.2.130 dstport 4789
ip -n "$NS_VX" link add vxlan0 mtu 1500 type vxlan id 42 local 192.0.2.130 remote 192.0.2.129 dstport 4789
ip addr add 192.0.2.193/30 dev vxlan0
ip -n "$NS_VX" addr add 192.0.2.194/30 dev vxlan0
ip link set vxlan0 up
ip -n "$NS_VX" link set vxlan0 up
ip -n "$NS_VX" addr add 192.0.2.100/32 dev lo
ip -n "$NS_VX" addr add 192.0.2.101/32 dev lo
ip route add 192.0.2.100/32 via 192.0.2.194 dev vxlan0
ip route add 192.0.2.101/32 via 192.0.2.130 dev veth-h
ip -n "$NS_VX" route add 198.51.100.0/24 via 192.0.2.129 dev veth-v
ip -n "$NS_VX" route add 198.51.100.0/24 via 192.0.2.193 dev vxlan0 table 100
ip -n "$NS_VX" rule add from 192.0.2.100 table 100
vx_mac=$(ip -n "$NS_VX" -j link show vxlan0 | jq -r '.[0].address')
ip neigh replace 192.0.2.194 lladdr "$vx_mac" dev vxlan0 nud permanent
sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
ip netns exec "$NS_VX" iperf3 -s -D --pidfile "$E2E_TMP/iperf3.pid" --logfile "$E2E_TMP/iperf3.log"
wait_for 5 "iperf3 server" test -s "$E2E_TMP/iperf3.pid"
E2E_PIDS+=("$(cat "$E2E_TMP/iperf3.pid")")
# The UDP sink: a socket on port 9 that never reads. Datagrams are delivered (and dropped
# when its buffer is full) without ICMP errors going back.
ip netns exec "$NS_VX" perl -e 'use Socket; socket(S, PF_INET, SOCK_DGRAM, 0) or die;
	bind(S, sockaddr_in(9, INADDR_ANY)) or die; sleep 100000' &
E2E_PIDS+=($!)

# The modem's downlink device: qmimux0 (the kernel) or qmap1 (qmapd).
case $FWPATH in
qmimux)
	# raw-ip and QMAP (v1: qmimux knows no v5 header) through qmicli, aggregates as large as
	# usbnet's receive URBs can take: wwan0's MTU sizes them, up to the device's maximum,
	# which is 1500 on 6.1, so one datagram per transfer (QMIMUX_DGRAMS). Then one mux, id 1.
	ip link set wwan0 down
	echo Y >/sys/class/net/wwan0/qmi/raw_ip
	MAXMTU=$(ip -j -d link show wwan0 | jq '.[0].max_mtu')
	QMIMUX_DGRAMS=$((MAXMTU < 16384 ? 1 : 32))
	AGG=$((MAXMTU < 16384 ? MAXMTU : 16384))
	# The sim refuses less than its MTU + 128 (its smallest aggregate).
	ASK=$((AGG < 1628 ? 1628 : AGG))
	echo "wwan0: max MTU $MAXMTU: MTU $AGG, aggregates of up to $ASK bytes asked"
	out=$(timeout 20 qmicli -d /dev/cdc-wdm0 --wda-set-data-format="link-layer-protocol=raw-ip,ul-protocol=qmap,dl-protocol=qmap,dl-max-datagrams=$QMIMUX_DGRAMS,dl-datagram-max-size=$ASK,ep-type=hsusb,ep-iface-number=4" 2>&1) ||
		fail "qmicli --wda-set-data-format: $out"
	echo "$out" | sed 's/^/qmicli: /'
	ip link set wwan0 mtu "$AGG"
	echo 1 >/sys/class/net/wwan0/qmi/add_mux
	wait_for 5 "qmimux0" test -e /sys/class/net/qmimux0
	ip link set wwan0 up
	ip link set qmimux0 up
	DEV=qmimux0
	ip route add 198.51.100.0/24 dev "$DEV"
	;;
qmapd | qmapd-gro)
	cat >"$E2E_TMP/qmapd.conf" <<-CONF
	[device]
	device = usb:2c7c:0125
	control = qmi
	control-socket = $E2E_TMP/control

	[dbus]
	enabled = no

	[mux.1]
	interface = qmap1
	apn = internet
	routes = 198.51.100.0/24
	CONF
	"$QMAPD" -c "$E2E_TMP/qmapd.conf" --stats-file "$E2E_TMP/qmapd.stats" >"$E2E_TMP/qmapd.log" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
	wait_for 60 "qmap1 with carrier" bash -c '[[ $(ip -o link show qmap1 2>/dev/null) == *"UP"* && $(ip -o link show qmap1) != *NO-CARRIER* ]]'
	DEV=qmap1
	;;
*) fail "unknown path $FWPATH (qmimux, qmapd, qmapd-gro)" ;;
esac
echo "forwarder: $FWPATH on $DEV: $(ip -o link show "$DEV" | cut -d' ' -f2-)"
sleep 1
ip netns exec "$NS_NET" ping -c 2 -W 5 192.0.2.101 >/dev/null || fail "no path 198.51.100.1 -> 192.0.2.101 (veth)"
ip netns exec "$NS_NET" ping -c 2 -W 5 192.0.2.100 >/dev/null || fail "no path 198.51.100.1 -> 192.0.2.100 (vxlan)"

# pskb_expand_head, counted by a hist trigger: per call stack, nothing lost.
echo 'p:kbench/expand pskb_expand_head' >>$TR/kprobe_events || fail "no kprobe on pskb_expand_head"
EXP=$TR/events/kbench/expand

# busy_ns: guest time not idle since boot, all CPUs (one here): instructions, under icount.
busy_ns() {
	local idle up
	idle=$(awk '$1 == "cpu" { print $5 + $6; exit }' /proc/stat)
	up=$(awk '{ print $1 }' /proc/uptime)
	awk -v u="$up" -v i="$idle" -v n="$(nproc)" 'BEGIN { printf "%.0f\n", (u * n - i / 100) * 1e9 }'
}

# classify START END: perf samples between the two uptimes, by class (see the header).
classify() {
	perf script -i "$E2E_TMP/perf.data" -F comm,time,ip,sym,dso 2>/dev/null | awk -v t0="$1" -v t1="$2" \
		-v top="$E2E_TMP/top" -v chains="$E2E_TMP/chains" '
		function done_sample() {
			if (!have || t < t0 || t > t1) return
			if (comm ~ /^(perf|jq|ip|awk|sed|cat|sleep|bash)$/) c = "perf"
			else if (soft || hard) {
				# ip_local_deliver is often a tail call (dst_input), not on the stack.
				if (stack ~ / (ip_local_deliver|ip_local_deliver_finish|ip_protocol_deliver_rcu|ip6_input|vxlan_rcv) /) c = "ends"
				else if (stack ~ / (usb_hcd_giveback_urb|usb_giveback_urb_bh) /) c = "fwd"
				else if (stack ~ / dummy_timer /) c = "bus"
				else c = "fwd"
			} else if (comm == "swapper") c = "idle"
			else if (comm ~ /^qmapd-sim/) c = "sim"
			else if (comm == "iperf3" || comm ~ /^qmapd-bench-udp/ || comm == "perl") c = "ends"
			else c = "fwd"
			n[c]++
			if (c == "fwd") {
				where[(soft || hard ? "irq:" : comm ":") leaf]++
				chain[(soft || hard ? "irq:" : comm ":") callers]++
			}
		}
		/^\t/ {
			# An unknown symbol by its object ([unknown] (/path/to/lib.so)).
			sym = $2 == "[unknown]" ? $2 $NF : $2
			if (stack == " ") leaf = sym
			if (++depth <= 4) callers = callers (depth > 1 ? " < " : "") sym
			stack = stack sym " "
			if (sym ~ /^(__do_softirq|do_softirq|run_ksoftirqd|__irq_exit_rcu|irq_exit_rcu|handle_softirqs)$/) soft = 1
			if (sym ~ /^(asm_sysvec_|asm_common_interrupt|common_interrupt|__sysvec_)/) hard = 1
			next
		}
		NF > 0 {
			done_sample()
			have = 1; stack = " "; soft = 0; hard = 0; depth = 0; callers = ""
			comm = $1; t = $2; sub(/:$/, "", t)
		}
		END {
			done_sample()
			for (k in where) print where[k], k >top
			for (k in chain) print chain[k], k >chains
			printf "fwd=%d sim=%d bus=%d ends=%d perf=%d idle=%d\n", n["fwd"], n["sim"], n["bus"], n["ends"], n["perf"], n["idle"]
		}'
}

# sink_rx veth|vxlan: packets the sink's device received (one per datagram: nothing merges)
sink_rx() {
	local dev=veth-v
	[ "$1" = vxlan ] && dev=vxlan0
	ip -n "$NS_VX" -j -s link show "$dev" | jq '.[0].stats64.rx.packets'
}

run_case() {
	local target=$1 kind=$2 dst payload json t0 t1 b0 b1 hits pkts lost busy cls rx0 sent
	case $target in veth) dst=192.0.2.101 ;; vxlan) dst=192.0.2.100 ;; esac
	case $kind in
	tcp) ;;
	udp64) payload=36 ;;
	udpmtu) payload=$((MTU - 28)) ;;
	*) fail "unknown traffic $kind" ;;
	esac
	echo 'hist:keys=stacktrace:vals=hitcount:sort=hitcount.descending' >"$EXP/trigger"
	# perf starts with its events off, turns them on when told and says when it has. Started
	# in the background and given a second, it was not always sampling by the window's start
	# (0.8-1.1 s of guest time from its start to the first sample: the first run of a boot
	# often had no samples at all).
	rm -f "$E2E_TMP/perf.ctl" "$E2E_TMP/perf.ack"
	mkfifo "$E2E_TMP/perf.ctl" "$E2E_TMP/perf.ack"
	perf record -q -B -N -a -g -e cpu-clock -c "$PERIOD" -k CLOCK_MONOTONIC -o "$E2E_TMP/perf.data" \
		-D -1 --control "fifo:$E2E_TMP/perf.ctl,$E2E_TMP/perf.ack" >"$E2E_TMP/perf.log" 2>&1 &
	local perf_pid=$! ctl ack reply
	local p0 p1
	p0=$(awk '{ print $1 }' /proc/uptime)
	exec {ctl}<>"$E2E_TMP/perf.ctl" {ack}<>"$E2E_TMP/perf.ack"
	echo enable >&"$ctl"
	read -r -t 120 -u "$ack" reply || true
	exec {ctl}>&- {ack}>&-
	[ "$reply" = ack ] || fail "perf record did not start sampling: $(cat "$E2E_TMP/perf.log")"
	p1=$(awk '{ print $1 }' /proc/uptime)
	echo "perf sampling $(awk -v a="$p0" -v b="$p1" 'BEGIN { print b - a }') s after its start"
	# The counters' own queries (ip | jq: ~10^8 instructions in this guest) stay outside
	# the window.
	rx0=$(sink_rx "$target")
	sleep 1
	t0=$(awk '{ print $1 }' /proc/uptime)
	b0=$(busy_ns)
	if [ "$kind" = tcp ]; then
		ip netns exec "$NS_NET" iperf3 -c "$dst" -t "$SECS" -J >"$E2E_TMP/iperf3.json" ||
			{ cat "$E2E_TMP/iperf3.json" >&2; fail "iperf3 to $target"; }
	else
		# 256 flows round robin: nothing merges, on either path (udp-flood.c). It sends as fast
		# as it can; what the sim or the TUN drop shows as loss.
		ip netns exec "$NS_NET" "$BUILD_DIR/qmapd-bench-udp-flood" -d "$dst" -s "$payload" \
			-t "$SECS" >"$E2E_TMP/flood.out"
	fi
	b1=$(busy_ns)
	t1=$(awk '{ print $1 }' /proc/uptime)
	kill -INT "$perf_pid"
	wait "$perf_pid" || true
	hits=$(awk '/^ *Hits:/ { print $2 }' "$EXP/hist" | tail -n 1)
	awk '/^\{ stacktrace:/,/hitcount:/' "$EXP/hist" >"$E2E_TMP/expand-$target-$kind"
	echo '!hist:keys=stacktrace:vals=hitcount:sort=hitcount.descending' >"$EXP/trigger"
	if [ "$kind" = tcp ]; then
		# Segments of the MSS iperf3 saw; GRO super-packets count as the segments they carry.
		json=$E2E_TMP/iperf3.json
		pkts=$(jq '(.end.sum_received.bytes / .start.tcp_mss_default) | floor' "$json")
		lost="$(jq '.end.sum_sent.retransmits' "$json") rtx"
	else
		sleep 0.5 # what is in flight arrives
		pkts=$(($(sink_rx "$target") - rx0))
		sent=$(sed -n 's/.*sent=\([0-9]*\).*/\1/p' "$E2E_TMP/flood.out")
		lost=$(awk -v s="$sent" -v p="$pkts" 'BEGIN { printf "%.1f%%", s ? 100 * (s - p) / s : 0 }')
	fi
	busy=$((b1 - b0))
	cls=$(classify "$t0" "$t1")
	echo "run $FWPATH $target $kind: busy ${busy} ns over $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') s, $pkts packets, expand $hits, samples $cls"
	# (sed reads it all: head would end the pipe early, and pipefail the run)
	sed -n '1,12s/^/  expand stack: /p' "$E2E_TMP/expand-$target-$kind"
	# Every stack by the two callers above pskb_expand_head, with its hits.
	awk '/pskb_expand_head/ { n = 2; by = ""; next }
		n > 0 && NF { by = by (by ? " < " : "") $1; n--; next }
		/hitcount:/ { print "  expand by: " by ": " $NF }' "$E2E_TMP/expand-$target-$kind"
	# Where "fwd" goes: its samples by context (process name, or irq for soft/hard irq) and
	# the function sampled.
	touch "$E2E_TMP/top"
	sort -rn "$E2E_TMP/top" | sed -n '1,40s/^/  fwd samples: /p'
	# The same by the sampled function and its three callers.
	touch "$E2E_TMP/chains"
	sort -rn "$E2E_TMP/chains" | sed -n '1,30s/^/  fwd stacks: /p'
	rm -f "$E2E_TMP/top" "$E2E_TMP/chains"
	[ "$pkts" -gt 0 ] || fail "nothing forwarded: $FWPATH $target $kind"
	awk -v path="$FWPATH" -v target="$target" -v kind="$kind" -v busy="$busy" -v pkts="$pkts" \
		-v lost="$lost" -v hits="${hits:-0}" -v cls="$cls" 'BEGIN {
		n = split(cls, kv, /[ =]/)
		for (i = 1; i < n; i += 2) s[kv[i]] = kv[i + 1]
		work = s["fwd"] + s["sim"] + s["bus"] + s["ends"] + s["perf"]
		if (work == 0) work = 1
		per = busy / pkts
		printf "| %s | %s | %s | %d | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.3f |\n",
			path, target, kind, pkts, lost, per, per * s["fwd"] / work, per * s["sim"] / work,
			per * s["bus"] / work, per * s["ends"] / work, per * s["perf"] / work, hits / pkts
	}'
}

if [ "$CASES" = debug ]; then
	ip netns exec "$NS_NET" tcpdump -nni simnet0 -c 40 >"$E2E_TMP/td-net" 2>&1 &
	ip netns exec "$NS_VX" tcpdump -nni veth-v -c 40 >"$E2E_TMP/td-vx" 2>&1 &
	sleep 2
	ip netns exec "$NS_NET" timeout 15 iperf3 -c 192.0.2.101 -t 1 || true
	sleep 1
	echo "== simnet0"; cat "$E2E_TMP/td-net"; echo "== veth-v"; cat "$E2E_TMP/td-vx"
	for ns in "" "$NS_NET" "$NS_VX"; do
		echo "== nstat ${ns:-forwarder}"
		if [ -n "$ns" ]; then ip netns exec "$ns" nstat -az; else nstat -az; fi |
			grep -E 'Csum|InHdrErr|InAddrErr|InDiscards|OutNoRoutes|InErrors|NoPorts|InSegs|InDatagrams|ForwDatagrams|InReceives|FragFails|ReasmFails' | grep -v ' 0 '
	done
	kill -USR1 "$SIM_PID"; sleep 1; cat "$E2E_TMP/sim.stats"
	ip -s link show "$DEV"
	exit 0
fi
# qmapd: one boot for both of its rows, per packet (GRO off) and with GRO.
ROWS=$FWPATH
[ "$FWPATH" != qmapd ] || ROWS="qmapd qmapd-gro"
for FWPATH in $ROWS; do
	case $FWPATH in
	qmapd) ethtool -K qmap1 gro off ;;
	qmapd-gro) ethtool -K qmap1 gro on ;;
	esac
	for target in $TARGETS; do
		for kind in $CASES; do
			run_case "$target" "$kind"
		done
	done
done
if [ -n "${QMAPD_PID:-}" ]; then
	refresh_stats 2>/dev/null || true
	grep -E '^modem0 (mux 1 |dl)' "$E2E_TMP/qmapd.stats" 2>/dev/null | head -n 5 || true
fi
grep -iE 'data format|dropped|error' "$E2E_TMP/sim.log" | tail -n 5 || true
[ "$FWPATH" != qmimux ] || ip -s -s link show wwan0
dmesg | tail -n 8
