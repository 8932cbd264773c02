#!/bin/bash
# SPDX-License-Identifier: MIT
# Real TCP through qmapd + qmapd-sim (iperf3), with qmapd's CPU time from /proc/<pid>/stat:
#  - DL bulk TCP (iperf3 -R, one flow) into a local socket in qmapd's namespace and forwarded
#    over a veth pair to a second namespace, per headroom mode (off, auto, xdp): Gbit/s, and
#    Gbit/s per qmapd core = bytes moved / qmapd's CPU seconds (user + system). The system part
#    is the kernel's receive path that a TUN/TAP write runs in the writer's context (for a
#    local socket up to the socket queue; forwarded, up to the veth), so it is charged to qmapd
#    exactly as it would be with a modem. The user/system split and the system time per write
#    (per super-packet) show how much of a core the kernel alone takes.
#  - iperf3 uplink and downlink (headroom = auto, production): Gbit/s and qmapd's and the
#    sim's CPU share (CPU seconds / wall seconds), 1.0 = one core.
#  - DL at a fixed rate (-b RATE, default 3.2G): qmapd's CPU share at the rate reached, and
#    per Gbit/s; the share at 3.2 Gbit/s is extrapolated when the rate is not reached.
#  - DL local with GRO switched off (ethtool -K qmap1 gro off; headroom = auto): the same
#    figures with one write per packet, for comparison.
# Placement (env): QMAPD_CPU pins qmapd to that CPU; RPS_CPUS writes that hex mask to qmap1's
# rx-0/rps_cpus, so the kernel's receive path after the TUN write (IP, TCP, forwarding) runs on
# those CPUs instead of inside qmapd's write (Receive Packet Steering, as phones do for rmnet).
# Prints a table per scenario and RESULT <name> <value> lines (medians of RUNS runs).
# Usage: tests/bench/iperf.sh BUILD_DIR   env: RUNS (3), IPERF_SECS (5), RATE (3.2G), SIM_ARGS (--csum-valid),
#        QMAPD_CPU, RPS_CPUS, MODES ("off auto xdp")
# Needs root; runs in namespaces it creates and deletes, traffic on documentation ranges only.
BUILD_DIR=${1:?usage: $0 BUILD_DIR}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
source "$(dirname "$0")/../support/lib.sh"

RUNS=${RUNS:-3}
SECS=${IPERF_SECS:-5}
RATE=${RATE:-3.2G}
# A QMAPv5 modem marks the checksums it verified (rmnet relies on that); SIM_ARGS= (empty)
# makes qmapd verify every merged segment in software instead.
read -r -a EXTRA_SIM_ARGS <<<"${SIM_ARGS-"--csum-valid"}"
command -v iperf3 >/dev/null || skip "iperf3 not installed"
command -v jq >/dev/null || skip "jq not installed"
command -v ethtool >/dev/null || skip "ethtool not installed"
TCK=$(getconf CLK_TCK)

NS_FWD=qmapd-f-$E2E_ID
E2E_EXTRA_NS+=("$NS_FWD")
e2e_setup

# mux 1 owns 192.0.2.0/25: qmapd's own address 192.0.2.2 and 192.0.2.100, which the host
# namespace forwards over a veth pair to NS_FWD (the "LAN behind the router").
SIM_MUX_ARGS=(--mux 1=192.0.2.0/25 --mux 2=203.0.113.2/32)
ip netns add "$NS_FWD"
ip -n "$NS_FWD" link set lo up
ip -n "$NS_HOST" link add veth-h type veth peer name veth-f netns "$NS_FWD"
ip -n "$NS_HOST" addr add 192.0.2.129/32 dev veth-h
ip -n "$NS_FWD" addr add 192.0.2.100/32 dev veth-f
ip -n "$NS_HOST" link set veth-h up
ip -n "$NS_FWD" link set veth-f up
ip -n "$NS_HOST" route add 192.0.2.100/32 dev veth-h
ip -n "$NS_FWD" route add 192.0.2.129/32 dev veth-f
ip -n "$NS_FWD" route add 198.51.100.0/24 via 192.0.2.129 dev veth-f
in_host sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
in_fwd() { ip netns exec "$NS_FWD" "$@"; }

# cpu PID -> "utime stime" in clock ticks (fields 14 and 15; comm has no spaces here)
cpu() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
now() { date +%s.%N; }

# iperf_run NAME NS-CMD ARGS... : one iperf3 client run; appends a result line to $E2E_TMP/NAME:
# gbit qmapd_share qmapd_user_share qmapd_sys_share sim_share per_core_gbit sys_us_per_write
# bytes_per_write kernel_bound_gbit. The last three are per DL write (a GRO super-packet or a
# lone packet) and only mean something for downlink runs; kernel_bound_gbit = bytes per write /
# system time per write: what one core would carry if qmapd's own userspace work were free.
iperf_run() {
	local name=$1 runner=$2
	shift 2
	local json=$E2E_TMP/$name.json q0 s0 t0 q1 s1 t1 w0 w1
	refresh_stats
	w0=$(qstat "mux 1 " rx_writes)
	q0=$(cpu "$QMAPD_PID")
	s0=$(cpu "$SIM_PID")
	t0=$(now)
	$runner iperf3 -c 198.51.100.1 -t "$SECS" -J "$@" >"$json" || fail "iperf3 $name $*"
	t1=$(now)
	q1=$(cpu "$QMAPD_PID")
	s1=$(cpu "$SIM_PID")
	refresh_stats
	w1=$(qstat "mux 1 " rx_writes)
	local bytes
	bytes=$(jq '.end.sum_received.bytes' "$json")
	awk -v b="$bytes" -v q0="$q0" -v q1="$q1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" \
		-v w="$((w1 - w0))" -v tck="$TCK" -v secs="$SECS" 'BEGIN {
		split(q0, a); split(q1, c); split(s0, d); split(s1, e)
		wall = t1 - t0
		qu = (c[1] - a[1]) / tck; qs = (c[2] - a[2]) / tck; sim = (e[1] + e[2] - d[1] - d[2]) / tck
		printf "%.2f %.3f %.3f %.3f %.3f %.1f %.2f %.0f %.1f\n", b * 8 / secs / 1e9,
			(qu + qs) / wall, qu / wall, qs / wall, sim / wall,
			((qu + qs) > 0 ? b * 8 / (qu + qs) / 1e9 : 0),
			(w > 0 ? qs * 1e6 / w : 0), (w > 0 ? b / w : 0), (qs > 0 ? b * 8 / qs / 1e9 : 0) }' >>"$E2E_TMP/$name"
}

# median NAME COLUMN
median() {
	awk -v c="$2" '{ print $c }' "$E2E_TMP/$1" | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

start_pair() { # headroom mode
	MUX_HEADROOM=$1 write_config "$E2E_TMP/qmapd-$1.conf"
	rm -f "$E2E_TMP/sim.sock" "$E2E_TMP/control"
	start_sim "${EXTRA_SIM_ARGS[@]}"
	start_qmapd "$E2E_TMP/qmapd-$1.conf" qmap1
	[ -z "${QMAPD_CPU:-}" ] || taskset -a -p -c "$QMAPD_CPU" "$QMAPD_PID" >/dev/null
	[ -z "${RPS_CPUS:-}" ] || in_host sh -c "echo $RPS_CPUS >/sys/class/net/qmap1/queues/rx-0/rps_cpus"
	in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping through mux 1"
	in_fwd ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping from $NS_FWD through mux 1"
}
stop_pair() {
	kill -TERM "$QMAPD_PID" "$SIM_PID"
	wait "$QMAPD_PID" "$SIM_PID" 2>/dev/null || true
	E2E_PIDS=("$IPERF_PID") # the server stays for the next pair
}
gro_off_seen() { refresh_stats && grep -q '^modem0 mux 1 .* gro=off' "$E2E_TMP/qmapd.stats"; }
mode_of() { refresh_stats && qstat "mux 1 " mode; }

start_iperf3_server
IPERF_PID=$(cat "$E2E_TMP/iperf3.pid")

hdr="Gbit/s qmapd-CPU (user sys) sim-CPU Gbit/s-per-qmapd-core sys-us/write bytes/write kernel-bound-Gbit/s"
for mode in ${MODES:-off auto xdp}; do
	start_pair "$mode"
	for _ in $(seq "$RUNS"); do
		iperf_run "dl-local-$mode" in_host -R
		iperf_run "dl-fwd-$mode" in_fwd -R
	done
	if [ "$mode" = auto ]; then
		# Production default: both directions and the fixed rate, in the same daemon pair.
		for _ in $(seq "$RUNS"); do
			iperf_run ul in_host
			iperf_run "dl-rate" in_host -R -b "$RATE"
		done
		in_host ethtool -K qmap1 gro off
		wait_for 5 "qmapd to follow gro off" gro_off_seen
		for _ in $(seq "$RUNS"); do
			iperf_run "dl-local-nogro" in_host -R
		done
		in_host ethtool -K qmap1 gro on
	fi
	echo "headroom=$mode: device after the runs: $(mode_of)"
	stop_pair
done

echo
echo "Medians of $RUNS runs of ${SECS} s, one TCP flow, 1500-byte MTU; CPU shares: 1.0 = one core"
printf '%-22s %s\n' "scenario" "$hdr"
for name in dl-local-off dl-local-auto dl-local-xdp dl-fwd-off dl-fwd-auto dl-fwd-xdp ul dl-rate dl-local-nogro; do
	[ -s "$E2E_TMP/$name" ] || continue
	printf '%-22s' "$name"
	cols="1 2 3 4 5 6 7 8 9"
	[ "$name" = ul ] && cols="1 2 3 4 5 6" # per-write figures count DL writes (ACKs here)
	for c in $cols; do printf ' %8s' "$(median "$name" $c)"; done
	echo
	for c in ${cols/3 4 /}; do
		case $c in
		1) k=gbit ;; 2) k=qmapd_share ;; 5) k=sim_share ;; 6) k=per_core_gbit ;;
		7) k=sys_us_per_write ;; 8) k=bytes_per_write ;; 9) k=kernel_bound_gbit ;;
		esac
		echo "RESULT ${name//-/_}_$k $(median "$name" $c)" >>"$E2E_TMP/results"
	done
done
# Share of one core at 3.2 Gbit/s: measured if reached, else scaled from the rate reached.
awk '$2 == "dl_rate_gbit" { g = $3 } $2 == "dl_rate_qmapd_share" { s = $3 } END {
	if (g > 0) printf "RESULT dl_rate_share_per_gbit %.3f\nRESULT dl_3g2_share %.3f\nRESULT dl_3g2_extrapolated %s\n",
		s / g, s / g * 3.2, (g < 3.15) ? "yes" : "no" }' "$E2E_TMP/results" >>"$E2E_TMP/results"
echo
cat "$E2E_TMP/results"
echo "iperf.sh: done"
