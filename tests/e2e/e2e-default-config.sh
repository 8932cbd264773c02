#!/bin/bash
# SPDX-License-Identifier: MIT
# The shipped default configuration (conf/qmapd.conf, installed as /etc/qmapd/qmapd.conf) on
# a host without a modem: `qmapd -t` accepts it, and qmapd started with it runs, says once
# that there is no modem, answers qmapctl at the default socket path, stays up waiting for a
# modem, and stops cleanly on SIGTERM. qmapd runs in namespaces of its own: a private /run
# (its control socket at the default path; no system bus socket, so [dbus] enabled = auto is
# off), empty USB directories (no modem, whatever this host has plugged in) and a network
# namespace. Needs root.
source "$(dirname "$0")/../support/lib.sh" || exit 1
require_root
need unshare util-linux
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
CONF=$SOURCE_DIR/conf/qmapd.conf
UP_SECONDS=${UP_SECONDS:-4}

"$QMAPD" -t -c "$CONF" >/dev/null || fail "qmapd -t rejects $CONF"

LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
# The whole run happens inside the namespaces; its last line is the verdict.
verdict=$(unshare --mount --net --propagation private bash -s "$QMAPD" "$QMAPCTL" "$CONF" \
	"$LOG" "$UP_SECONDS" <<'INNER' 2>&1
set -u
qmapd=$1 qmapctl=$2 conf=$3 log=$4 up=$5
mount -t tmpfs tmpfs /run || { echo "VERDICT private /run failed"; exit 0; }
for d in /sys/bus/usb/devices /dev/bus/usb; do
	if [ -d "$d" ]; then
		mount -t tmpfs tmpfs "$d" || { echo "VERDICT cannot hide $d"; exit 0; }
	fi
done
ip link set lo up
"$qmapd" -c "$conf" >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q 'running' "$log" && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
done
grep -q 'running' "$log" || { echo "VERDICT qmapd did not start"; exit 0; }
status=$("$qmapctl" status 2>&1) || { echo "VERDICT qmapctl status failed: $status"; exit 0; }
sleep "$up"
kill -0 $pid 2>/dev/null || { echo "VERDICT qmapd exited within ${up}s"; exit 0; }
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 0 ] || { echo "VERDICT qmapd exited $rc on SIGTERM"; exit 0; }
printf 'qmapctl status:\n%s\n' "$status"
echo "VERDICT ok"
INNER
) || true
echo "$verdict" | sed '$d'
echo "qmapd's log:"
cat "$LOG"
[ "$(echo "$verdict" | tail -n 1)" = "VERDICT ok" ] || fail "${verdict##*VERDICT }"

n=$(grep -c 'no modem' "$LOG" || true)
[ "$n" -eq 1 ] || fail "the log says 'no modem' $n times, not once"
if grep -Ei 'warn|error|fail' "$LOG"; then
	fail "qmapd logged a warning or an error with the default configuration and no modem"
fi
grep -q 'D-Bus API: off: no system bus' "$LOG" || fail "[dbus] enabled = auto did not stay off without a bus"
echo "e2e-default-config: qmapd -t accepts it; no modem: said once, up ${UP_SECONDS}s, clean stop"
