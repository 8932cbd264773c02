#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd talks to systemd as qmapd(8) says, checked on a NOTIFY_SOCKET of our own:
#   READY=1 once the config is loaded and the control socket listens, with no modem at all;
#   WATCHDOG=1 from the main loop at half of WATCHDOG_USEC; STATUS= lines;
#   SIGHUP: RELOADING=1 (with MONOTONIC_USEC=) then READY=1, also when the new config is
#   invalid, and qmapd keeps running on the old one; STATUS= then says the reload was
#   refused and why, until a reload takes a file; `qmapctl reload` (the unit's ExecReload=)
#   exits 1 with the reason on a refused file, with RELOADING=1 ... READY=1 as well;
#   SIGTERM: STOPPING=1, exit 0;
#   no WATCHDOG=1 when WATCHDOG_PID names another process (libqmi's qmi-proxy child).
# No muxes and `control = none`, so no modem, device or QMI is involved; as root it still
# runs in a network namespace of its own in case start-up touches links.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need python3 python3
PYTHON=$(command -v python3)
[ -x "$QMAPD" ] || fail "$QMAPD not built (set BUILD_DIR)"
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
[ -x "$QMAPCTL" ] || fail "$QMAPCTL not built (set BUILD_DIR)"

TMP=$(mktemp -d /tmp/qmapd-notify.XXXXXX)
NS=
PIDS=()
cleanup() {
	local rc=$?
	set +e
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [ $rc -ne 0 ]; then
		for f in "$TMP"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $(basename "$f") (last 30 lines)" >&2
			tail -n 30 "$f" >&2
		done
	fi
	[ -z "$NS" ] || ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

RUN=()
if [ "$(id -u)" = 0 ]; then
	need ip iproute2
	ip netns add "qmapd-notify-$$" || fail "cannot create the network namespace qmapd-notify-$$"
	NS=qmapd-notify-$$
	ip -n "$NS" link set lo up
	RUN=(ip netns exec "$NS")
fi

# The service manager's end: one datagram per sd_notify() call. Each assignment becomes a
# line "<monotonic ms> <n> KEY=VALUE" (n numbers the datagrams), flushed at once.
NOTIFY_SOCKET_PATH=$TMP/notify.sock
"$PYTHON" -u - "$NOTIFY_SOCKET_PATH" "$TMP/notify.txt" >"$TMP/listener.log" 2>&1 <<'PY' &
import socket, sys, time
sk = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sk.bind(sys.argv[1])
# Append mode: the test empties the file between runs and the next line must land at its
# start, not at the old offset.
with open(sys.argv[2], "a", buffering=1) as out:
    n = 0
    while True:
        msg = sk.recv(4096).decode("utf-8", "replace")
        n += 1
        ms = int(time.monotonic() * 1000)
        for line in msg.split("\n"):
            if line:
                out.write(f"{ms} {n} {line}\n")
PY
PIDS+=($!)
wait_for 5 "the notify listener" test -S "$NOTIFY_SOCKET_PATH"

write_conf() {
	cat >"$1" <<-CONF
	[device]
	device = sim:$TMP/no-modem.sock
	control = none
	control-socket = $TMP/control
	CONF
}
write_conf "$TMP/qmapd.conf"

# start_qmapd LOG [VAR=VALUE...]: qmapd under our NOTIFY_SOCKET, WATCHDOG_PID unset unless
# given (qmapd then trusts WATCHDOG_USEC as its own, as sd_watchdog_enabled(3) does).
start_qmapd() {
	local log=$1
	shift
	env -u WATCHDOG_PID NOTIFY_SOCKET="$NOTIFY_SOCKET_PATH" WATCHDOG_USEC=400000 "$@" \
		"${RUN[@]}" "$QMAPD" -c "$TMP/qmapd.conf" >"$TMP/$log" 2>&1 &
	QMAPD_PID=$!
	PIDS+=($QMAPD_PID)
}

# Lines of notify.txt after line $2 whose assignment is exactly $1 or starts with "$1=".
lines_after() {
	awk -v key="$1" -v from="$2" 'NR > from && ($3 == key || index($3, key "=") == 1) { print NR }' \
		"$TMP/notify.txt"
}

# wait_msg KEY AFTER-LINE SECONDS: the line number of the first KEY after AFTER-LINE.
# Once qmapd has exited, whatever it sent is already queued on the socket: the listener gets
# one more second to write it down, not the whole time.
wait_msg() {
	local key=$1 after=$2 secs=$3 n grace=10
	for _ in $(seq $((secs * 10))); do
		n=$(lines_after "$key" "$after" | head -n1)
		if [ -n "$n" ]; then
			echo "$n"
			return 0
		fi
		if ! kill -0 "$QMAPD_PID" 2>/dev/null; then
			grace=$((grace - 1))
			[ "$grace" -gt 0 ] || fail "qmapd exited without sending $key"
		fi
		sleep 0.1
	done
	fail "no $key from qmapd within ${secs}s (after notify line $after)"
}

field() { sed -n "${2}p" "$TMP/notify.txt" | cut -d' ' -f"$1"; }
last_line() { wc -l <"$TMP/notify.txt"; }

# Start-up: READY=1 with no modem, and only once the control socket is there.
start_qmapd qmapd.log
ready=$(wait_msg READY=1 0 10)
test -S "$TMP/control" || fail "READY=1 sent before the control socket $TMP/control exists"
echo "ok: READY=1 without a modem, control socket listening"
[ "$(lines_after READY=1 0 | wc -l)" = 1 ] || fail "READY=1 sent more than once at start-up"

# The watchdog: 400 ms asked for, so a keep-alive every 200 ms; at least two in 1.5 s. The
# window is closed once the listener has written a keep-alive from after it.
t_ready=$(field 1 "$ready")
wd_after() { awk -v t="$1" '$3 == "WATCHDOG=1" && $1 > t { ok = 1 } END { exit !ok }' \
	"$TMP/notify.txt"; }
wait_for 5 "a WATCHDOG=1 more than 1.5 s after READY=1" wd_after $((t_ready + 1500))
n_wd=$(awk -v t0="$t_ready" '$3 == "WATCHDOG=1" && $1 >= t0 && $1 <= t0 + 1500' \
	"$TMP/notify.txt" | wc -l)
[ "$n_wd" -ge 2 ] || fail "$n_wd WATCHDOG=1 in the 1.5 s after READY=1, expected at least 2"
# Half the period, not the whole: the median gap is ~200 ms (a whole period would be 400).
# The median, so that one late tick on a busy CI machine does not decide.
gap=$(awk '$3 == "WATCHDOG=1" { if (p) print $1 - p; p = $1 }' "$TMP/notify.txt" | sort -n |
	awk '{ g[NR] = $1 } END { print NR ? g[int((NR + 1) / 2)] : 0 }')
[ "$gap" -le 300 ] || fail "median WATCHDOG=1 gap ${gap} ms for WATCHDOG_USEC=400000 (expect ~200)"
echo "ok: $n_wd WATCHDOG=1 in 1.5 s, median gap ${gap} ms"

wait_msg STATUS 0 5 >/dev/null
echo "ok: STATUS=$(sed -n "$(lines_after STATUS 0 | tail -n1)p" "$TMP/notify.txt" | cut -d= -f2-)"

# SIGHUP with a valid config: RELOADING=1 (with MONOTONIC_USEC= in the same message), then
# READY=1.
mark=$(last_line)
kill -HUP "$QMAPD_PID"
reloading=$(wait_msg RELOADING=1 "$mark" 5)
msg=$(field 2 "$reloading")
awk -v m="$msg" '$2 == m && $3 ~ /^MONOTONIC_USEC=[0-9]+$/ { ok = 1 } END { exit !ok }' \
	"$TMP/notify.txt" || fail "RELOADING=1 without MONOTONIC_USEC= in the same message"
wait_msg READY=1 "$reloading" 5 >/dev/null
echo "ok: SIGHUP: RELOADING=1 (with MONOTONIC_USEC=), then READY=1"

# SIGHUP with an invalid config: still RELOADING=1 then READY=1 (systemd leaves the
# reloading state only on READY=1), and qmapd keeps running on the old config.
printf '[device]\ndevice = sim:%s\ncontrol = none\ncontrol-socket = %s\nqmap-version = 7\n' \
	"$TMP/no-modem.sock" "$TMP/control" >"$TMP/qmapd.conf"
mark=$(last_line)
kill -HUP "$QMAPD_PID"
reloading=$(wait_msg RELOADING=1 "$mark" 5)
wait_msg READY=1 "$reloading" 5 >/dev/null
# Not a poll: that qmapd does not exit can only be seen by giving it the time to.
sleep 0.3
kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd exited on an invalid config at reload"
grep -q "qmap-version '7'" "$TMP/qmapd.log" ||
	fail "the invalid config at reload was not logged with its key and value"
test -S "$TMP/control" || fail "control socket gone after a failed reload"
mark=$(last_line)
wait_msg WATCHDOG=1 "$mark" 2 >/dev/null
echo "ok: SIGHUP with an invalid config: RELOADING=1, READY=1, still running, watchdog alive"
# STATUS= says the file was refused, with the reason, until a reload takes a file.
last_status() { sed -n "$(lines_after STATUS 0 | tail -n1)p" "$TMP/notify.txt" | cut -d= -f2-; }
status=$(last_status)
[[ $status == "reload refused: "*"qmap-version '7'"*"; running with the previous configuration; "* ]] ||
	fail "STATUS= after a refused reload: '$status'"
echo "ok: STATUS=$status"

# `qmapctl reload`, what the unit's ExecReload= runs: exit 1 and the reason on stderr, so
# that `systemctl reload` fails with it; RELOADING=1 ... READY=1 as for SIGHUP.
mark=$(last_line)
rc=0
"$QMAPCTL" -s "$TMP/control" reload 2>"$TMP/qmapctl.err" || rc=$?
expect_eq "qmapctl reload exit status on a refused file" "$rc" 1
grep -q "qmap-version '7'" "$TMP/qmapctl.err" ||
	fail "qmapctl reload did not say why the file was refused: $(cat "$TMP/qmapctl.err")"
reloading=$(wait_msg RELOADING=1 "$mark" 5)
wait_msg READY=1 "$reloading" 5 >/dev/null
echo "ok: qmapctl reload on a refused file: exit 1, $(head -n1 "$TMP/qmapctl.err")"

write_conf "$TMP/qmapd.conf"
"$QMAPCTL" -s "$TMP/control" reload || fail "qmapctl reload of a valid file failed"
status=$(last_status)
[[ $status != *"reload refused"* ]] || fail "STATUS= still says refused after a good reload: '$status'"
echo "ok: qmapctl reload of a valid file: exit 0, STATUS=$status"

# SIGTERM: a clean exit, and STOPPING=1 on the way.
mark=$(last_line)
stop_qmapd
wait_msg STOPPING=1 "$mark" 5 >/dev/null
echo "ok: SIGTERM: STOPPING=1"

# WATCHDOG_PID naming another process: the keep-alives are not ours to send.
: >"$TMP/notify.txt"
rm -f "$TMP/control"
start_qmapd qmapd-other-pid.log WATCHDOG_PID=$$
wait_msg READY=1 0 10 >/dev/null
# Not a poll: an absence. 0.8 s is four keep-alive periods in which none may come.
sleep 0.8
[ -z "$(lines_after WATCHDOG=1 0)" ] || fail "WATCHDOG=1 sent although WATCHDOG_PID=$$ is not qmapd"
echo "ok: no WATCHDOG=1 when WATCHDOG_PID is another process"
stop_qmapd
echo "e2e-notify: passed"
