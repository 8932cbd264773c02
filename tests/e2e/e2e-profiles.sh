#!/bin/bash
# SPDX-License-Identifier: MIT
# The profile matrix: qmapd against every modem family qmapd-sim reproduces (--profile,
# docs/PROTOCOLS.md §5), one qmapd + sim start per profile. Each: the session comes up on
# the mux id the family takes (0x81 as Qualcomm advises; 112 on Telit), qmapctl status shows
# what qmapd asked and exactly the profile's grant, ping IPv4 and IPv6, iperf3 for 1 s each
# way (IPERF_SECONDS), and the counters of qmapd and the sim agree byte for byte with
# nothing malformed (the padded profile included). Against the strict profile, qmicli
# through qmapd's proxy shows what it refuses: today's requests before the fix (no Endpoint
# Info, a bind to interface 0) fail, the same with the descriptor's interface succeed. A
# summary table of the figures ends the output. PROFILES_ONLY="a b" runs only those.
# Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
need jq jq
need qmicli libqmi-utils
need /usr/libexec/qmi-proxy libqmi-proxy
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
IPERF_SECONDS=${IPERF_SECONDS:-1}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
SIM_ALWAYS_CONNECTED=no

# What qmapd asks for in every run (quectel-CM's uplink request: 11 datagrams, 8192 bytes).
REQ="qmapv5 16384/32 8192/11"
# profile  mux  interface  granted: protocol dl-size dl-datagrams ul-size ul-datagrams padding
PROFILES=(
	"default       129 4 qmapv5 16384 32 8192 11 0"
	"mdm9x07       129 4 qmap    4096 10 4096 11 0"
	"mdm9x07-pad16 129 4 qmap    4096 10 4096 11 16"
	"sdx55         129 4 qmapv5 16384 32 8192 16 0"
	"sdx62         129 4 qmapv5 31744 32 8192 11 0"
	"fm150         129 4 qmapv5 32768 32 8192 11 0"
	"telit         112 2 qmap   16384 32 8192 11 0"
	"strict        129 4 qmapv5 16384 32 8192 11 0"
)
SUMMARY=$E2E_TMP/summary

write_profile_config() { # mux
	cat >"$E2E_TMP/qmapd.conf" <<-CONF
	[device]
	device = sim:$E2E_TMP/sim.sock
	control = qmi
	control-link = $E2E_TMP/qmi0
	control-socket = $E2E_TMP/control
	ul-max-size = 8192
	ul-max-datagrams = 11

	[mux.$1]
	interface = qmap0
	apn = internet
	routes = 198.51.100.1/32 2001:db8:ff::1/128
	CONF
}

mux_state() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state"; }
mux_is() { [ "$(mux_state "$1")" = "$2" ]; }
gbits() { jq '.end.sum_received.bits_per_second / 1e9 * 100 | floor / 100' "$1"; }

# qmicli through qmapd's qmi-proxy: its output and exit status.
qmi() { in_host timeout 20 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" "$@" 2>&1; }
expect_refused() { # what error-text qmicli-args...
	local what=$1 want=$2 out rc=0
	shift 2
	out=$(qmi "$@") || rc=$?
	[ "$rc" -ne 0 ] || fail "strict: $what was accepted: $out"
	[[ ${out,,} == *"${want,,}"* ]] || fail "strict: $what refused without '$want': $out"
	echo "ok: strict refuses $what ($want)"
}
expect_accepted() { # what qmicli-args...
	local what=$1 out
	shift
	out=$(qmi "$@") || fail "strict: $what refused: $out"
	echo "ok: strict accepts $what"
}
strict_checks() { # mux interface
	local bind="mux-id=130,ep-type=hsusb"
	expect_refused "WDA Set Data Format without Endpoint Info" MissingArgument \
		--wda-set-data-format="link-layer-protocol=raw-ip,ul-protocol=qmapv5,dl-protocol=qmapv5,dl-datagram-max-size=16384,dl-max-datagrams=32"
	expect_refused "WDA Get Data Format without Endpoint Info" MissingArgument --wda-get-data-format
	expect_refused "Bind Mux Data Port to interface 0" InvalidArgument \
		--wds-bind-mux-data-port="$bind,ep-iface-number=0" --client-no-release-cid
	expect_accepted "WDA Get Data Format with the descriptor's interface" \
		--wda-get-data-format="ep-type=hsusb,ep-iface-number=$2"
	expect_accepted "Bind Mux Data Port to the descriptor's interface" \
		--wds-bind-mux-data-port="$bind,ep-iface-number=$2"
	in_host ping -c 1 -W 2 198.51.100.1 >/dev/null || fail "strict: ping after the qmicli checks"
	expect_eq "strict: qmapd's session after the qmicli checks" "$(mux_state "$1")" connected
}

start_iperf3_server
printf '%-14s %-24s %-30s %8s %8s\n' profile requested granted "up Gb/s" "down Gb/s" >"$SUMMARY"

for row in "${PROFILES[@]}"; do
	read -r name mux iface proto dls dld uls uld pad <<<"$row"
	[ -z "${PROFILES_ONLY:-}" ] || [[ " $PROFILES_ONLY " == *" $name "* ]] || continue
	echo "---- profile $name"
	SIM_MUX_ARGS=(--mux "$mux=192.0.2.2/25,2001:db8:1::2/64")
	start_sim --profile "$name"
	write_profile_config "$mux"
	start_qmapd "$E2E_TMP/qmapd.conf"
	wait_for 30 "profile $name: mux $mux connected" mux_is "$mux" connected

	df=$("${CTL[@]}" -j status | jq -c '.modems[0].modem["data-format"]')
	got="$(jq -r '[.granted.protocol, .granted["dl-max-size"], .granted["dl-max-datagrams"],
		.granted["ul-max-size"], .granted["ul-max-datagrams"], .granted["dl-min-padding"]]
		| map(tostring) | join(" ")' <<<"$df")"
	expect_eq "$name: granted (protocol, DL size/datagrams, UL size/datagrams, padding)" \
		"$got" "$proto $dls $dld $uls $uld $pad"
	expect_eq "$name: requested DL size" "$(jq -r '.requested["dl-max-size"]' <<<"$df")" 16384
	expect_eq "$name: requested UL datagrams" "$(jq -r '.requested["ul-max-datagrams"]' <<<"$df")" 11
	expect_eq "$name: in use DL size (the grant)" "$(jq -r '.["dl-max-size"]' <<<"$df")" "$dls"
	expect_eq "$name: in use UL datagrams (the grant)" "$(jq -r '.["ul-max-datagrams"]' <<<"$df")" "$uld"
	expect_eq "$name: data interface" "$(jq -r '.["data-interface"]' <<<"$df")" "$iface"
	"${CTL[@]}" status | grep -q "granted $dls / $dld" ||
		fail "$name: qmapctl status does not show the grant side by side"

	for target in 198.51.100.1 2001:db8:ff::1; do
		in_host ping -c 2 -i 0.2 -W 2 "$target" >/dev/null || fail "$name: ping $target"
	done
	refresh_stats
	rx0=$(qstat "mux $mux " rx_bytes)
	tx0=$(qstat "mux $mux " tx_bytes)
	# With -J iperf3 says what went wrong only in its JSON, which no log shows.
	in_host iperf3 -c 198.51.100.1 -t "$IPERF_SECONDS" -J >"$E2E_TMP/up.json" ||
		fail "$name: iperf3 uplink: $(jq -r '.error // "no error in its JSON"' "$E2E_TMP/up.json")"
	in_host iperf3 -c 198.51.100.1 -t "$IPERF_SECONDS" -J -R >"$E2E_TMP/down.json" ||
		fail "$name: iperf3 downlink: $(jq -r '.error // "no error in its JSON"' "$E2E_TMP/down.json")"
	up=$(gbits "$E2E_TMP/up.json")
	down=$(gbits "$E2E_TMP/down.json")
	echo "ok: $name: iperf3 up $up Gbit/s, down $down Gbit/s"

	refresh_stats
	up_bytes=$(jq '.end.sum_received.bytes' "$E2E_TMP/up.json")
	down_bytes=$(jq '.end.sum_received.bytes' "$E2E_TMP/down.json")
	expect_ge "$name: qmapd tx bytes over iperf3's" $(($(qstat "mux $mux " tx_bytes) - tx0)) "$up_bytes"
	expect_ge "$name: qmapd rx bytes over iperf3's" $(($(qstat "mux $mux " rx_bytes) - rx0)) "$down_bytes"
	expect_eq "$name: uplink bytes qmapd vs sim" "$(qstat "mux $mux " tx_bytes)" "$(sstat "mux $mux:" ul_bytes)"
	expect_eq "$name: downlink bytes qmapd vs sim" "$(qstat "mux $mux " rx_bytes)" "$(sstat "mux $mux:" dl_bytes)"
	for e in truncated_header len_overflow zero_len pad_too_long no_csum_header bad_next_header not_ip short_command; do
		expect_eq "$name: malformed $e" "$(qstat malformed: $e)" 0
	done
	expect_eq "$name: transfer errors" "$(qstat device: transfer_errors)" 0
	expect_eq "$name: sim saw requests without Endpoint Info" "$(sstat endpoint_missing endpoint_missing)" 0
	expect_eq "$name: sim saw a wrong Endpoint Info" "$(sstat endpoint_wrong endpoint_wrong)" 0
	expect_eq "$name: interface qmapd bound" "$(sstat bind_interface bind_interface)" "$iface"
	[ "$name" != strict ] || strict_checks "$mux" "$iface"
	# The largest downlink aggregate never passes the grant: the sim fills to it.
	expect_ge "$name: downlink datagrams" "$(qstat device: datagrams)" 100

	printf '%-14s %-24s %-30s %8s %8s\n' "$name" "$REQ" \
		"$proto $dls/$dld $uls/$uld pad $pad" "$up" "$down" >>"$SUMMARY"
	stop_qmapd
	stop_process qmapd-sim "$SIM_PID"
done
cat "$SUMMARY"
echo "e2e-profiles: passed"
