#!/bin/bash
# SPDX-License-Identifier: MIT
# Malformed frames injected by the simulator mid-stream: traffic keeps flowing through both
# muxes, and qmapd counts what it dropped by reason. Then the modem goes away and comes
# back: carrier follows it, the devices and their addresses stay, traffic resumes.
# Needs root; runs in namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
e2e_setup

write_config "$E2E_TMP/qmapd.conf"
start_sim --inject garbage,unknown-mux,command,oversize --inject-every 5
start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2

start_iperf3_server

in_host iperf3 -c 198.51.100.1 -t 2 -R >/dev/null || fail "iperf3 downlink on mux 1 with faults"
in_host iperf3 -c 198.51.100.2 -t 2 >/dev/null || fail "iperf3 uplink on mux 2 with faults"
for target in 198.51.100.1 2001:db8:ff::2; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target with faults"
done
echo "ok: traffic flows with malformed frames mid-stream"

refresh_stats
expect_ge "qmapd alive" "$(kill -0 "$QMAPD_PID" && echo 1 || echo 0)" 1
expect_ge "sim injected garbage" "$(sstat injected_garbage= injected_garbage)" 1
expect_eq "not_ip drops = garbage injected" "$(qstat malformed: not_ip)" "$(sstat injected_garbage= injected_garbage)"
expect_eq "len_overflow = oversize injected" "$(qstat malformed: len_overflow)" "$(sstat injected_oversize= injected_oversize)"
expect_eq "unknown_mux = unknown-mux injected" "$(qstat device: unknown_mux)" "$(sstat injected_unknown_mux= injected_unknown_mux)"
expect_eq "commands = command injected" "$(qstat device: commands)" "$(sstat injected_command= injected_command)"
# An ACK leaves in the next uplink aggregate, and an OUT transfer is in flight until the modem
# takes it, as on USB: the last ACKs may still be on their way when the counters are read, and
# with every OUT transfer in flight and 32 ACKs waiting, qmapd drops (and counts) the next, as
# the modem retries an unanswered command.
acks_caught_up() {
	refresh_stats
	[ $(($(sstat commands_ack= commands_ack) + $(qstat device: command_acks_dropped))) = \
		"$(sstat injected_command= injected_command)" ]
}
wait_for 5 "the modem to receive every ACK qmapd sent" acks_caught_up
expect_eq "every injected FLOW_ENABLE ACKed or counted as dropped" \
	"$(($(sstat commands_ack= commands_ack) + $(qstat device: command_acks_dropped)))" \
	"$(sstat injected_command= injected_command)"
echo "ok: ACKs dropped for want of an OUT transfer: $(qstat device: command_acks_dropped)"
expect_ge "mux 1 received" "$(qstat "mux 1 " rx_packets)" 1000

# Unplug: the modem disappears. Devices stay, with their addresses, carrier goes off.
stop_process qmapd-sim "$SIM_PID"
wait_for 5 "carrier off on qmap1" no_carrier qmap1
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1) == *192.0.2.2/32* ]] || fail "qmap1 lost its address on unplug"
[[ $(ip -n "$NS_HOST" route show dev qmap1) == *198.51.100.1* ]] || fail "qmap1 lost its route on unplug"
echo "ok: unplug keeps qmap1 with its address, carrier off"

# Replug: qmapd reconnects by itself and traffic resumes.
rm -f "$E2E_TMP/sim.sock"
start_sim
wait_for 10 "carrier back on qmap1" has_carrier "$NS_HOST" qmap1
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after replug"
echo "ok: replug restores traffic"
refresh_stats
expect_ge "disconnects counted" "$(qstat device: disconnects)" 1
stop_qmapd
echo "e2e-faults: passed"
