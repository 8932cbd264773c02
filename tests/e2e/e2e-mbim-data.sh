#!/bin/bash
# SPDX-License-Identifier: MIT
# The MBIM data path end to end, without MBIM control: qmapd (control = none, static
# addresses) against qmapd-sim --mbim --always-connected, two sessions (mux 1 = session 0,
# mux 2 = session 1). For NTB16 and NTB32 and two sets of uplink divisor, remainder and
# alignment: the class requests negotiate what qmapctl shows, ping v4/v6 on both muxes and
# iperf3 both ways for 1 s (IPERF_SECONDS; IPv4 and IPv6 on each mux over the run), the
# strict sim drops no uplink NTB, the byte counters of both sides agree. Then malformed NTBs
# injected between real ones are counted per kind while traffic goes on.
# Needs root; runs in namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need jq jq
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
[ -x "$QMAPCTL" ] || fail "$QMAPCTL not built"
e2e_setup

qmapctl() { in_host "$QMAPCTL" -s "$E2E_TMP/control" "$@"; }

run_iperf() { # mux server direction-flag
	local json=$E2E_TMP/iperf-$1$3.json
	in_host iperf3 -c "$2" -t "${IPERF_SECONDS:-1}" -J $3 >"$json" || fail "iperf3 -c $2 $3"
	local bytes
	bytes=$(jq '.end.sum_received.bytes' "$json")
	echo "ok: iperf3 mux $1 ${3:-uplink} moved $bytes bytes" \
		"($(jq '.end.sum_received.bits_per_second / 1e9 * 100 | floor / 100' "$json") Gbit/s)"
	[ "$bytes" -gt 1000000 ] || fail "iperf3 mux $1 moved only $bytes bytes"
}

# run_case NTB DIVISOR REMAINDER ALIGNMENT [extra sim options...]
run_case() {
	local ntb=$1 div=$2 rem=$3 align=$4
	shift 4
	echo "== NTB$ntb, uplink divisor $div remainder $rem alignment $align $*"
	write_config "$E2E_TMP/qmapd.conf" "ntb-format = $ntb"
	rm -f "$E2E_TMP/sim.sock"
	start_sim --mbim --ntb "$ntb" --ntb-out-divisor "$div" --ntb-out-remainder "$rem" \
		--ntb-out-alignment "$align" "$@"
	start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2

	local st df
	st=$(qmapctl -j status) || fail "qmapctl status"
	df=$(jq -c 'first(..|objects|select(has("data-format"))|.["data-format"])' <<<"$st")
	expect_eq "protocol" "$(jq -r .protocol <<<"$df")" "mbim/ntb$ntb"
	expect_eq "NTB out divisor" "$(jq .ntb["\"out-divisor\""] <<<"$df")" "$div"
	expect_eq "NTB out remainder" "$(jq .ntb["\"out-remainder\""] <<<"$df")" "$rem"
	expect_eq "NTB out alignment" "$(jq .ntb["\"out-alignment\""] <<<"$df")" "$align"
	qmapctl status | grep -q "mbim/ntb$ntb" || fail "qmapctl status does not show mbim/ntb$ntb"
	qmapctl status | grep -q "NTB out" || fail "qmapctl status does not show the NTB parameters"

	for target in 198.51.100.1 198.51.100.2 2001:db8:ff::1 2001:db8:ff::2; do
		in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target"
		echo "ok: ping $target"
	done
	# IPv4 on one mux, IPv6 on the other, swapped by SWAP_FAMILIES: both on both over the run.
	local s1=198.51.100.1 s2=2001:db8:ff::2
	[ "${SWAP_FAMILIES:-no}" = yes ] && s1=2001:db8:ff::1 s2=198.51.100.2
	run_iperf 1 "$s1" ""
	run_iperf 1 "$s1" -R
	run_iperf 2 "$s2" ""
	run_iperf 2 "$s2" -R

	refresh_stats
	for m in 1 2; do
		expect_eq "mux $m uplink bytes qmapd vs sim" "$(qstat "mux $m " tx_bytes)" "$(sstat "mux $m:" ul_bytes)"
		expect_eq "mux $m downlink bytes qmapd vs sim" "$(qstat "mux $m " rx_bytes)" "$(sstat "mux $m:" dl_bytes)"
		for k in rx_dropped_queue_full rx_dropped_write_error tx_dropped_too_big tx_dropped_link_down tx_dropped_bad_gso; do
			expect_eq "mux $m $k" "$(qstat "mux $m " $k)" 0
		done
		expect_ge "mux $m GRO merged segments" "$(qstat "mux $m " gro_merged)" 16
	done
	expect_eq "transfer errors" "$(qstat device: transfer_errors)" 0
}

# check_clean: no malformed NTB, nothing the strict sim refused.
check_clean() {
	for e in $(grep -m1 '^modem0 malformed:' "$E2E_TMP/qmapd.stats" | tr ' ' '\n' | sed -n 's/=.*//p' | grep '^ntb_'); do
		expect_eq "malformed $e" "$(qstat malformed: "$e")" 0
	done
	expect_eq "unknown mux" "$(qstat device: unknown_mux)" 0
	grep -q 'MBIM function' "$E2E_TMP/qmapd.log" || fail "qmapd did not see an MBIM function"
	# The strict sim checks every uplink NTB against what it announced.
	expect_eq "uplink NTBs the sim refused" "$(sstat ul_ntb_dropped ul_ntb_dropped)" 0
}

stop_both() {
	stop_qmapd
	stop_process qmapd-sim "$SIM_PID"
	E2E_PIDS=()
}

start_iperf3_server

run_case 16 4 0 4
check_clean
stop_both

SWAP_FAMILIES=yes run_case 32 16 4 32
check_clean
stop_both

# Malformed NTBs after every 20th real one: counted per kind, traffic goes on.
run_case 16 8 0 16 --inject bad-signature,bad-block-length,ndp-loop,datagram-outside --inject-every 20
for e in ntb_bad_signature ntb_bad_block_length ntb_ndp_loop ntb_datagram_out_of_range; do
	expect_ge "malformed $e" "$(qstat malformed: $e)" 1
done
qmapctl -j stats | jq -e '..|objects|select(has("malformed"))|.malformed.ntb_ndp_loop > 0' >/dev/null ||
	fail "qmapctl stats does not show the NTB errors"
echo "counters:"
cat "$E2E_TMP/qmapd.stats"
stop_both
echo "e2e-mbim-data: passed"
