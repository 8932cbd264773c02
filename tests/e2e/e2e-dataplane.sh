#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd + qmapd-sim end to end: two muxes, ping v4/v6 through each, iperf3 TCP both
# directions, no drops, per-mux byte counters consistent with what iperf3 moved.
# Needs root; runs in namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need jq jq
e2e_setup

write_config "$E2E_TMP/qmapd.conf"
start_sim
start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2

# Each mux gets its own device, TAP with the XDP program attached for headroom.
# E2E_EXPECT_XDP=no (tests/cross/: qemu-user has no bpf(2)): TUN, the fallback, instead.
if [ "${E2E_EXPECT_XDP:-yes}" = yes ]; then
	for dev in qmap1 qmap2; do
		[[ $(ip -n "$NS_HOST" -d link show "$dev") == *"prog/xdp"* ]] || fail "$dev: no XDP program attached"
	done
	grep -q 'mode=tap+xdp' <(refresh_stats; cat "$E2E_TMP/qmapd.stats") || fail "mux not in tap+xdp mode"
else
	grep -q 'mode=tun' <(refresh_stats; cat "$E2E_TMP/qmapd.stats") || fail "mux not in tun mode"
fi
expect_ge "receive transfers posted" "$(qstat device: rx_transfers_posted)" 16

for target in 198.51.100.1 198.51.100.2 2001:db8:ff::1 2001:db8:ff::2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target"
	echo "ok: ping $target"
done

start_iperf3_server

refresh_stats
declare -A before
for m in 1 2; do
	before[rx$m]=$(qstat "mux $m " rx_bytes)
	before[tx$m]=$(qstat "mux $m " tx_bytes)
done

# mux 1 uplink, mux 2 downlink, then the other way round: every direction on every mux.
declare -A moved
run_iperf() { # mux server direction-flag
	local json=$E2E_TMP/iperf-$1$3.json
	in_host iperf3 -c "$2" -t 3 -J $3 >"$json" || fail "iperf3 -c $2 $3"
	local bytes
	bytes=$(jq '.end.sum_received.bytes' "$json")
	echo "ok: iperf3 mux $1 ${3:-uplink} moved $bytes bytes" \
		"($(jq '.end.sum_received.bits_per_second / 1e9 * 100 | floor / 100' "$json") Gbit/s)"
	[ "$bytes" -gt 1000000 ] || fail "iperf3 mux $1 moved only $bytes bytes"
	if [ "$3" = -R ]; then moved[rx$1]=$((${moved[rx$1]:-0} + bytes)); else moved[tx$1]=$((${moved[tx$1]:-0} + bytes)); fi
}
run_iperf 1 198.51.100.1 ""
run_iperf 1 198.51.100.1 -R
run_iperf 2 198.51.100.2 ""
run_iperf 2 198.51.100.2 -R

refresh_stats
for m in 1 2; do
	for dir in rx tx; do
		delta=$(($(qstat "mux $m " ${dir}_bytes) - ${before[$dir$m]}))
		want=${moved[$dir$m]}
		# The device counts IP bytes: payload plus TCP/IP headers (~3-5%), never less.
		[ "$delta" -ge "$want" ] || fail "mux $m ${dir}_bytes grew $delta < iperf3's $want"
		[ "$delta" -le $((want * 110 / 100)) ] ||
			fail "mux $m ${dir}_bytes grew $delta, more than 1.10x iperf3's $want"
		echo "ok: mux $m ${dir}_bytes +$delta for iperf3's $want"
	done
	for k in rx_dropped_queue_full rx_dropped_write_error tx_dropped_too_big tx_dropped_link_down; do
		expect_eq "mux $m $k" "$(qstat "mux $m " $k)" 0
	done
	# What qmapd sent up each mux is exactly what the modem received on it, and back.
	expect_eq "mux $m uplink bytes qmapd vs sim" "$(qstat "mux $m " tx_bytes)" "$(sstat "mux $m:" ul_bytes)"
	expect_eq "mux $m downlink bytes qmapd vs sim" "$(qstat "mux $m " rx_bytes)" "$(sstat "mux $m:" dl_bytes)"
done
# headroom = auto: bulk downlink is mostly merged, so XDP came off at least once; no packet
# written vanished without the device counting it.
for m in 1 2; do
	[ "${E2E_EXPECT_XDP:-yes}" = no ] ||
		expect_ge "mux $m headroom switches" "$(qstat "mux $m " headroom_switches)" 1
	expect_eq "mux $m silent drops" "$(qstat "mux $m " rx_silent_drops)" 0
	expect_ge "mux $m GRO merged segments" "$(qstat "mux $m " gro_merged)" 16
done
expect_eq "unknown mux" "$(qstat device: unknown_mux)" 0
for e in truncated_header len_overflow zero_len pad_too_long no_csum_header bad_next_header not_ip short_command; do
	expect_eq "malformed $e" "$(qstat malformed: $e)" 0
done
expect_eq "transfer errors" "$(qstat device: transfer_errors)" 0
expect_ge "datagrams per downlink aggregate x100" \
	"$(qstat device: datagrams_per_aggregate | awk '{printf "%d", $1 * 100}')" 100
echo "counters:"
cat "$E2E_TMP/qmapd.stats"
stop_qmapd
echo "e2e-dataplane: passed"
