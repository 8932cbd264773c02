#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd's life cycle: config errors name file:line and exit 1, usage errors exit 2; -t
# refuses what start refuses (qmap%d, another device's name, an impossible socket directory)
# with start's message and ends on a FIFO; the
# devices exist before the modem does (no carrier) and come up when it appears; SIGUSR1
# prints counters; SIGTERM removes the devices, or keeps them with persist-devices = yes,
# and a restart takes the kept devices over. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1
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

# -t refuses what start refuses, with start's message, once; and ends on a FIFO.
check_refused() { # what expected-message config-lines...
	local what=$1 want=$2 rc=0 start_err
	shift 2
	printf '%s\n' "[device]" "device = sim:$E2E_TMP/none.sock" "control = none" "$@" \
		>"$E2E_TMP/t.conf"
	in_host timeout 10 "$QMAPD" -t -c "$E2E_TMP/t.conf" >"$E2E_TMP/t.out" 2>&1 || rc=$?
	expect_eq "qmapd -t exit code with $what" "$rc" 1
	grep -qF "$want" "$E2E_TMP/t.out" || fail "qmapd -t with $what said: $(cat "$E2E_TMP/t.out")"
	rc=0
	in_host timeout 10 "$QMAPD" -c "$E2E_TMP/t.conf" >"$E2E_TMP/start.out" 2>&1 || rc=$?
	expect_eq "qmapd exit code with $what" "$rc" 1
	start_err=$(grep -F "$want" "$E2E_TMP/start.out") ||
		fail "qmapd with $what said: $(cat "$E2E_TMP/start.out")"
	# The same message; a start logs it with the time in front, -t (a command) without.
	[[ $start_err =~ ^$LOG_TIME_RE\  ]] || fail "no time in front of start's line: $start_err"
	expect_eq "-t's and start's message for $what" "$(grep -F "$want" "$E2E_TMP/t.out")" \
		"$(strip_log_time <<<"$start_err")"
	# A message says its reason once ("Invalid argument: Invalid argument" said it twice).
	! grep -E '(: [A-Z][a-z ]+)\1$' "$E2E_TMP/t.out" "$E2E_TMP/start.out" ||
		fail "a message repeats its reason"
}
check_refused "qmap%d" "t.conf:6: invalid interface 'qmap%d' in [mux.1]" \
	"control-socket = $E2E_TMP/c" "[mux.1]" "interface = qmap%d"
check_refused "lo as a mux" "mux 1: interface lo exists and was not created by qmapd" \
	"control-socket = $E2E_TMP/c" "[mux.1]" "interface = lo"
check_refused "a socket under /proc" \
	"control socket /proc/qmapd-e2e/control: cannot create its directory: /proc is on a proc" \
	"control-socket = /proc/qmapd-e2e/control" "[mux.1]"
mkfifo "$E2E_TMP/fifo.conf"
rc=0
timeout 10 "$QMAPD" -t -c "$E2E_TMP/fifo.conf" 2>"$E2E_TMP/fifo.err" || rc=$?
expect_eq "qmapd -t exit code on a FIFO nobody writes" "$rc" 1
grep -q "fifo.conf: no complete file within 5 s" "$E2E_TMP/fifo.err" ||
	fail "qmapd -t on a FIFO said: $(cat "$E2E_TMP/fifo.err")"
write_config "$E2E_TMP/ok.conf"
in_host "$QMAPD" -t -c "$E2E_TMP/ok.conf" | grep -q "^Not checked (only start can tell): whether the modem" ||
	fail "qmapd -t does not say what it could not check"
echo "ok: -t refuses what start refuses, says what it could not check, ends on a FIFO"

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
wait_for 5 "counters in the log" grep -qE "^$LOG_TIME_RE modem0 mux 1 \(qmap1\): mode=tap\+xdp" \
	"$E2E_TMP/qmapd.log"
echo "ok: SIGUSR1 prints counters, each line with the time in front as log lines have it"

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

# 254 muxes go in parallel on SIGTERM: one by one the kernel's device removals took 4.65 s.
{
	echo "[device]"
	echo "device = sim:$E2E_TMP/none.sock"
	echo "control = none"
	echo "control-socket = $E2E_TMP/control"
	for i in $(seq 1 254); do echo "[mux.$i]"; done
} >"$E2E_TMP/many.conf"
start_qmapd "$E2E_TMP/many.conf"
wait_for 20 "254 mux devices" test "$(ip -n "$NS_HOST" -o link show | grep -c ': qmap')" -eq 254
t0=$(date +%s%N)
stop_qmapd
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(ip -n "$NS_HOST" -o link show | grep -c ': qmap')" -eq 0 ] || fail "mux devices left after stop"
[ "$ms" -le 3500 ] || fail "stopping with 254 muxes took $ms ms (bound 3500)"
echo "ok: stopping with 254 muxes took $ms ms"
echo "e2e-lifecycle: passed"
