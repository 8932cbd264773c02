#!/bin/bash
# SPDX-License-Identifier: MIT
# QMAP flow control with the simulator: FLOW_DISABLE stops qmapd reading the mux devices
# (uplink stops, the kernel queues and backpressures, and what the device's queue drops
# shows in qmapd's counters), FLOW_ENABLE resumes it, and every command is ACKed back as
# rmnet does. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need iperf3 iperf3
e2e_setup
write_config "$E2E_TMP/qmapd.conf"
start_sim
start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
start_iperf3_server

# flow_is STATE ACKS: qmapd says flow=STATE for mux 1, and the modem has ACKS ACKs. An ACK goes
# up behind the uplink data qmapd read before the command, so with the ACK in, the modem's
# uplink count for the time before the command is complete.
flow_is() {
	refresh_stats
	[[ $(grep '^modem0 mux 1 ' "$E2E_TMP/qmapd.stats") == *" flow=$1 "* ]] &&
		[ "$(sstat commands_ack= commands_ack)" -ge "$2" ]
}
ul_reached() { # packets: the modem has received at least that many uplink packets on mux 1
	refresh_stats
	[ "$(sstat "mux 1:" ul_packets)" -ge "$1" ]
}

# A steady uplink on mux 1 while the modem says stop, then go.
in_host iperf3 -c 198.51.100.1 -t 6 -b 50M >"$E2E_TMP/iperf.log" 2>&1 &
IPERF=$!
wait_for 5 "uplink traffic on mux 1" ul_reached 500
kill -RTMIN "$SIM_PID"
wait_for 5 "mux 1 flow-controlled and both FLOW_DISABLE ACKed" flow_is off 2
ul0=$(sstat "mux 1:" ul_packets)
# Not a poll: nothing may pass during a stop, so the stop has to last. 1.5 s of iperf3 pushing.
sleep 1.5
refresh_stats
ul1=$(sstat "mux 1:" ul_packets)
expect_eq "uplink packets on mux 1 while flow is off" "$((ul1 - ul0))" 0
# While qmapd does not read, the device's own queue overflows: the kernel counts that as the
# device's tx_dropped, and qmapd must show it (tx_dropped_device) rather than lose it unseen.
in_host bash -c 'for i in $(seq 3000); do echo x; done >/dev/udp/198.51.100.1/9' 2>/dev/null || true
dev_tx_dropped() { ip -n "$NS_HOST" -j -s link show qmap1 | jq '.[0].stats64.tx.dropped'; }
shown_tx_dropped() { refresh_stats; [ "$(qstat "mux 1 " tx_dropped_device)" = "$(dev_tx_dropped)" ]; }
expect_ge "packets qmap1's queue dropped while flow was off" "$(dev_tx_dropped)" 1
wait_for 5 "qmapd's tx_dropped_device to match the device's tx_dropped" shown_tx_dropped
echo "ok: the device's own drops show in qmapd's counters ($(dev_tx_dropped))"
kill -RTMIN+1 "$SIM_PID"
wait_for 5 "mux 1 flowing again and both FLOW_ENABLE ACKed" flow_is on 4
wait_for 5 "100 uplink packets on mux 1 after FLOW_ENABLE" ul_reached $((ul1 + 100))
ul2=$(sstat "mux 1:" ul_packets)
expect_ge "uplink packets on mux 1 after FLOW_ENABLE" "$((ul2 - ul1))" 100
wait "$IPERF" || fail "iperf3 did not survive the pause: $(tail -3 "$E2E_TMP/iperf.log")"
in_host ping -c 2 -i 0.2 -W 2 198.51.100.2 >/dev/null || fail "ping mux 2 after flow control"

expect_eq "FLOW_DISABLE honoured (2 muxes)" "$(qstat device: flow_disable)" 2
expect_eq "FLOW_ENABLE honoured (2 muxes)" "$(qstat device: flow_enable)" 2
expect_eq "ACKs sent" "$(qstat device: command_acks)" 4
expect_eq "ACKs the modem received" "$(sstat commands_ack= commands_ack)" 4
stop_qmapd
echo "e2e-flow-control: passed"
