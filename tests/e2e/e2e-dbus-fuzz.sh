#!/bin/bash
# SPDX-License-Identifier: MIT
# ModemManager's D-Bus API fuzzed: mm-dbus-fuzz (tests/e2e/mm-dbus-fuzz.c) calls every method
# qmapd exports, as the live introspection declares it, with generated arguments (wrong
# types, unknown dict keys, huge and empty strings, random object paths, wrong signatures)
# over a private bus with the system bus's policy, against qmapd with two simulated modems:
# a (QMI, the config's mux connected) and b (MBIM). First as an unprivileged caller outside
# qmapd.conf's admin-group (uid 65534, gid 65533): every answer allowed (mm-dbus-fuzz's
# header lists which), at least one call refused with Core.Unauthorized, and the sessions
# not disturbed (the sims' session counters and connected muxes as before, the config's mux
# still connected). Then as root, which changes state (Enable(false), Reset, SetPowerState,
# Disconnect, ...): every answer allowed. At the end qmapd is alive, answers qmapctl status
# and exits 0 on SIGTERM (in the ASan build with ASAN_OPTIONS=detect_leaks=1: no leak).
#
#   e2e-dbus-fuzz.sh [SECONDS [SEED]]   default: FUZZ_DBUS_SECONDS or 40 s, seed 1 (or
#                                       FUZZ_DBUS_SEED); the time is split between the two
#                                       callers. A longer run: e2e-dbus-fuzz.sh 3600 7
# Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

SECONDS_TOTAL=${1:-${FUZZ_DBUS_SECONDS:-40}}
SEED=${2:-${FUZZ_DBUS_SEED:-1}}
need dbus-daemon dbus
need setpriv util-linux
need jq jq
need /usr/libexec/qmi-proxy libqmi-proxy
need /usr/libexec/mbim-proxy libmbim-proxy
[ "$(id -un 65534 2>/dev/null)" = nobody ] || skip "uid 65534 is not nobody here"
FUZZ=${MM_DBUS_FUZZ:-$BUILD_DIR/mm-dbus-fuzz}
[ -x "$FUZZ" ] || fail "no $FUZZ (built with the tests)"
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
start_system_bus

declare -A SIM_ARGS=(
	[a]="--net-address 198.51.100.1/32 --mux 1=192.0.2.2/25 --mux 2=203.0.113.2/24"
	[b]="--mbim --net-address 198.51.100.2/32 --mux 1=192.0.2.130/25"
)
declare -A SIM_PIDS=()
for name in a b; do
	# shellcheck disable=SC2086 # the arguments are words
	start_named_sim "$name" ${SIM_ARGS[$name]} --apn internet --apn ims \
		--stats-file "$E2E_TMP/sim-$name.stats"
	SIM_PIDS[$name]=$NAMED_SIM_PID
done

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control-socket = $E2E_TMP/control
discovery = no
admin-group = nogroup

[dbus]
enabled = no

[modem.a]
device = sim:$E2E_TMP/a.sock
control = qmi
control-link = $E2E_TMP/a.qmi

[modem.a.mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32

[modem.b]
device = sim:$E2E_TMP/b.sock
control = mbim
control-link = $E2E_TMP/b.mbim
CONF
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

mux_state() {
	"${CTL[@]}" -j status | jq -r '.modems[] | select(.name == "a") | .muxes[] | select(.id == 1) | .state'
}
mux_connected() { [ "$(mux_state)" = connected ]; }
wait_for 30 "the config's mux connected" mux_connected
modems_on_bus() {
	[ "$(gdbus call --system -d org.freedesktop.ModemManager1 -o /org/freedesktop/ModemManager1 \
		-m org.freedesktop.DBus.ObjectManager.GetManagedObjects | grep -o '/Modem/[0-9]*' |
		sort -u | wc -l)" -eq 2 ]
}
wait_for 20 "two modems on the bus" modems_on_bus

# The sims' session counters and connected muxes: what the network sees of the host.
sessions() {
	local name
	for name in a b; do
		rm -f "$E2E_TMP/sim-$name.stats"
		kill -USR1 "${SIM_PIDS[$name]}"
		wait_for 5 "sim $name's counters" test -s "$E2E_TMP/sim-$name.stats"
		grep -E '^(qmi|mbim)_sessions_(started|failed|dropped)=|^qmi_muxes_connected=|^low_power=' \
			"$E2E_TMP/sim-$name.stats" | sed "s/^/$name /"
	done
}
before=$(sessions)

half=$(((SECONDS_TOTAL + 1) / 2))
echo "== as an unprivileged caller outside admin-group: $half s, seed $SEED"
# A copy nobody can run: the build directory may sit where only root can reach (/root/...).
install -m 755 "$FUZZ" "$E2E_TMP/mm-dbus-fuzz"
setpriv --reuid=65534 --regid=65533 --clear-groups env DBUS_SYSTEM_BUS_ADDRESS="$BUS" \
	"$E2E_TMP/mm-dbus-fuzz" --seed "$SEED" --seconds "$half" --count 100000000 --unprivileged \
	>"$E2E_TMP/fuzz-user.out" 2>&1 || { cat "$E2E_TMP/fuzz-user.out"; fail "mm-dbus-fuzz as nobody"; }
cat "$E2E_TMP/fuzz-user.out"
grep -q ' org.freedesktop.ModemManager1.Error.Core.Unauthorized$' "$E2E_TMP/fuzz-user.out" ||
	fail "no call was refused with Core.Unauthorized"
kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd died during the unprivileged run"
after=$(sessions)
[ "$before" = "$after" ] || fail "refused calls changed the sessions:
$(diff <(echo "$before") <(echo "$after"))"
mux_connected || fail "the config's mux is $(mux_state) after refused calls"
echo "ok: refused calls left the sessions as they were"

echo "== as root: $half s, seed $((SEED + 1))"
"$FUZZ" --seed "$((SEED + 1))" --seconds "$half" --count 100000000 \
	>"$E2E_TMP/fuzz-root.out" 2>&1 || { cat "$E2E_TMP/fuzz-root.out"; fail "mm-dbus-fuzz as root"; }
cat "$E2E_TMP/fuzz-root.out"

kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd died during the root run"
"${CTL[@]}" status >"$E2E_TMP/status" || fail "qmapctl status does not answer after the run"
echo "ok: qmapd alive and answering qmapctl status"
stop_qmapd
echo "e2e-dbus-fuzz: passed"
