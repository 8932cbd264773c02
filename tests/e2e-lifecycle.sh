#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd's life cycle: config errors name file:line and exit 1, usage errors exit 2; the
# devices exist before the modem does (no carrier) and come up when it appears; SIGUSR1
# prints counters; SIGTERM removes the devices, or keeps them with persist-devices = yes,
# and a restart takes the kept devices over. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/lib.sh" || exit 1
e2e_setup

# Bad input: clear error, right exit code.
printf '[device]\ndevice = sim:/x\n\n[mux.2]\nip-type = ipv5\n' >"$E2E_TMP/bad.conf"
rc=0
"$QMAPD" -t -c "$E2E_TMP/bad.conf" 2>"$E2E_TMP/bad.err" || rc=$?
expect_eq "exit code for an invalid config" "$rc" 1
grep -q "bad.conf:5: invalid ip-type 'ipv5'" "$E2E_TMP/bad.err" ||
	fail "config error does not name file:line and value: $(cat "$E2E_TMP/bad.err")"
rc=0
"$QMAPD" --no-such-option 2>/dev/null || rc=$?
expect_eq "exit code for a usage error" "$rc" 2
"$QMAPD" --help | grep -q "Usage: qmapd" || fail "qmapd --help"

# qmapd first, the modem later: devices wait without carrier.
write_config "$E2E_TMP/qmapd.conf"
start_qmapd "$E2E_TMP/qmapd.conf"
wait_for 5 "qmap1 created" ip -n "$NS_HOST" link show qmap1
# Not a poll: an absence. A carrier that wrongly comes up needs a moment to show.
sleep 0.3
! has_carrier "$NS_HOST" qmap1 || fail "qmap1 has carrier before the modem exists"
echo "ok: devices exist without carrier while the modem is absent"
start_sim
wait_for 10 "carrier on qmap1 once the modem appears" has_carrier "$NS_HOST" qmap1
in_host ping -c 2 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping once the modem appeared"
echo "ok: modem appears later, traffic flows"

kill -USR1 "$QMAPD_PID"
wait_for 5 "counters in the log" grep -q '^mux 1 (qmap1): mode=tap+xdp' "$E2E_TMP/qmapd.log"
echo "ok: SIGUSR1 prints counters"

stop_qmapd
! ip -n "$NS_HOST" link show qmap1 >/dev/null 2>&1 || fail "qmap1 still exists after SIGTERM"
echo "ok: SIGTERM removes the devices"

# persist-devices keeps them, with their addresses, and a new qmapd takes them over.
write_config "$E2E_TMP/persist.conf" "persist-devices = yes"
start_qmapd "$E2E_TMP/persist.conf" qmap1 qmap2
stop_qmapd
[[ $(ip -n "$NS_HOST" -o addr show dev qmap1 2>/dev/null) == *192.0.2.2/32* ]] ||
	fail "persistent qmap1 missing or without its address after SIGTERM"
echo "ok: persist-devices keeps qmap1 and its address"
start_qmapd "$E2E_TMP/persist.conf" qmap1 qmap2
in_host ping -c 2 -i 0.2 -W 2 198.51.100.2 >/dev/null || fail "ping after taking over kept devices"
echo "ok: restart takes over the kept devices"
stop_qmapd
echo "e2e-lifecycle: passed"
