# SPDX-License-Identifier: MIT
# Shared helpers for the end-to-end tests: namespaces, qmapd + qmapd-sim, counters.
# Every test sources this, calls e2e_setup, and gets everything deleted on exit (trap),
# also on failure. Traffic stays in the namespaces, on documentation address ranges.
# The other shell tests use only fail, skip and need from it.

set -euo pipefail

BUILD_DIR=${BUILD_DIR:-$(pwd)}
SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
QMAPD=${QMAPD:-$BUILD_DIR/qmapd}
QMAPD_SIM=${QMAPD_SIM:-$BUILD_DIR/qmapd-sim}

E2E_ID=$$
NS_HOST=qmapd-h-$E2E_ID   # qmapd and its mux devices
NS_NET=qmapd-n-$E2E_ID    # qmapd-sim and its network-side device (the "internet")
E2E_TMP=
E2E_PIDS=()
E2E_EXTRA_NS=()

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# unavailable WHY: the test cannot run here. Without root that is a skip (the end-to-end tests
# could not run anyway); as root, where scripts/test.sh runs the suite after scripts/deps.sh,
# the environment is the test's to set up, and a missing piece is a failure, not a pass.
unavailable() {
	[ "$(id -u)" != 0 ] || fail "$* (as root a broken test setup fails rather than skips)"
	skip "$*"
}

# need COMMAND PACKAGE: COMMAND (on PATH, or a path) installed; PACKAGE has it.
need() {
	command -v "$1" >/dev/null ||
		unavailable "$1 not installed (apt-get install $2; scripts/deps.sh installs it)"
}

# need_unpacked PACKAGE PATH: a file of a Debian package that must not be installed on the
# host (its daemon would start and take the modems or the network), unpacked with apt-get
# download and dpkg -x into $QMAPD_TEST_CACHE/PACKAGE once. PATH is relative to the
# package's root and may be a glob (usr/lib/*/libnm.so.0). Prints the file's absolute path;
# call it as X=$(need_unpacked ...) || exit $?.
QMAPD_TEST_CACHE=${QMAPD_TEST_CACHE:-/var/cache/qmapd-test}
need_unpacked() {
	local pkg=$1 path=$2 dir="$QMAPD_TEST_CACHE/$1" tmp f
	if [ ! -d "$dir" ]; then
		command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
			unavailable "$pkg: needs apt-get and dpkg to unpack it"
		mkdir -p "$QMAPD_TEST_CACHE" 2>/dev/null ||
			unavailable "$pkg: cannot create $QMAPD_TEST_CACHE (set QMAPD_TEST_CACHE)"
		tmp=$(mktemp -d "$QMAPD_TEST_CACHE/.$pkg.XXXXXX")
		# Tests running at the same time each unpack into their own directory; the first
		# rename wins and the others drop theirs.
		if ! (cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1 &&
			dpkg -x "$pkg"_*.deb root); then
			rm -rf "$tmp"
			unavailable "$pkg: apt-get download failed (no network or no apt sources?)"
		fi
		mv -T "$tmp/root" "$dir" 2>/dev/null || true
		rm -rf "$tmp"
	fi
	for f in "$dir"/$path; do
		[ -e "$f" ] && echo "$f" && return 0
	done
	unavailable "$pkg: no $path in the package"
}

require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, TAP devices); run as root"
	[ -c /dev/net/tun ] || fail "/dev/net/tun missing (modprobe tun)"
	need ip iproute2
}

# E2E_HOLD=1, for a person at a terminal: before the clean-up, say where everything is and
# wait for Enter, so the namespaces, devices and daemons can be looked at (HACKING.md).
e2e_hold() {
	local rc=$1
	[ "${E2E_HOLD:-0}" = 1 ] && [ -t 0 ] || return 0
	echo "E2E_HOLD: the test ended with status $rc; nothing is cleaned up yet" >&2
	echo "  namespaces: $NS_HOST (qmapd) $NS_NET (qmapd-sim) ${E2E_EXTRA_NS[*]}" >&2
	echo "  directory:  $E2E_TMP (configs, logs, control socket)" >&2
	echo "  processes:  qmapd ${QMAPD_PID:-none}, qmapd-sim ${SIM_PID:-none}; all: ${E2E_PIDS[*]}" >&2
	read -r -p "  press Enter to clean up " _ || true
}

e2e_cleanup() {
	local rc=$?
	set +e
	e2e_hold "$rc"
	for pid in "${E2E_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${E2E_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [ $rc -ne 0 ] && [ -n "$E2E_TMP" ]; then
		for log in "$E2E_TMP"/*.log "$E2E_TMP"/*.log.prev; do
			[ -f "$log" ] || continue
			echo "---- $(basename "$log") (last 30 lines)" >&2
			tail -n 30 "$log" >&2
		done
	fi
	for ns in "$NS_HOST" "$NS_NET" "${E2E_EXTRA_NS[@]}"; do
		# Helpers started inside, such as qmi-proxy spawned by libqmi, end with the test.
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill -TERM $pids 2>/dev/null && sleep 0.2
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	# E2E_KEEP=DIR: a failed run's directory (every log whole, counters, configs) is moved
	# there before it would be deleted, for a flake seen once in many runs. E2E_KEEP_AS: what
	# DIR will be called where the reader looks (a VM guest's out share, vm-lib.sh).
	if [ $rc -ne 0 ] && [ -n "$E2E_TMP" ] && [ -n "${E2E_KEEP:-}" ]; then
		mkdir -p "$E2E_KEEP" && mv "$E2E_TMP" "$E2E_KEEP/" &&
			echo "E2E_KEEP: kept in ${E2E_KEEP_AS:-$E2E_KEEP}/$(basename "$E2E_TMP")" >&2
	fi
	[ -n "$E2E_TMP" ] && rm -rf "$E2E_TMP"
	exit $rc
}

# Two namespaces with loopback up; nothing is connected to the host's interfaces.
e2e_setup() {
	local ns
	require_root
	E2E_TMP=$(mktemp -d /tmp/qmapd-e2e.XXXXXX)
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
	for ns in "$NS_HOST" "$NS_NET"; do
		ip netns add "$ns" || fail "cannot create the network namespace $ns (ip netns add)"
	done
	ip -n "$NS_HOST" link set lo up
	ip -n "$NS_NET" link set lo up
}

in_host() {
	iperf3_server_ready "$@"
	ip netns exec "$NS_HOST" "$@"
}
in_net() {
	iperf3_server_ready "$@"
	ip netns exec "$NS_NET" "$@"
}

# Before an iperf3 client of start_iperf3_server's server: wait (up to 5 s) until the
# server listens for the next test. Between two tests iperf3 closes its listening socket and
# opens a new one, and a client that connects in that gap is reset ("unable to receive
# control message: Connection reset by peer"), a race of the tool, not of the path tested.
iperf3_server_ready() {
	local log=$E2E_TMP/iperf3-server.log prev= a
	[ "${1:-}" = iperf3 ] && [ -n "$E2E_TMP" ] && [ -f "$log" ] || return 0
	for a in "$@"; do
		[ "$prev" = -p ] && [ "$a" != 5201 ] && return 0 # another server's client
		prev=$a
	done
	[[ " $* " == *" -c "* ]] || return 0
	for _ in $(seq 50); do
		[ "$(grep -c '^Server listening on' "$log")" -gt \
			"$(grep -c '^Accepted connection from' "$log")" ] && return 0
		sleep 0.1
	done
}

# The standard two-mux topology:
#   host ns: qmap1 192.0.2.2 / 2001:db8:1::2, qmap2 203.0.113.2 / 2001:db8:2::2
#   net ns:  simnet0 198.51.100.1, .2 / 2001:db8:ff::1, ::2 (server side)
#   mux 1 reaches 198.51.100.1 and 2001:db8:ff::1, mux 2 reaches .2 and ::2
SIM_MUX_ARGS=(--mux 1=192.0.2.2/32,2001:db8:1::2/128 --mux 2=203.0.113.2/32,2001:db8:2::2/128)
SIM_NET_ARGS=(--net-address 198.51.100.1/32 --net-address 198.51.100.2/32
	--net-address 2001:db8:ff::1/128 --net-address 2001:db8:ff::2/128)

# write_config FILE [extra [device] lines...]
write_config() {
	local file=$1
	shift
	{
		echo "[device]"
		echo "device = sim:$E2E_TMP/sim.sock"
		# Data plane only: static addresses, no QMI (e2e-sessions.sh tests that side).
		echo "control = none"
		echo "control-socket = $E2E_TMP/control"
		for line in "$@"; do echo "$line"; done
		cat <<-CONF

		[mux.1]
		interface = qmap1
		ipv4-address = 192.0.2.2/32
		ipv6-address = 2001:db8:1::2/128
		routes = 198.51.100.1/32 2001:db8:ff::1/128
		headroom = ${MUX_HEADROOM:-auto}

		[mux.2]
		interface = qmap2
		ipv4-address = 203.0.113.2/32
		ipv6-address = 2001:db8:2::2/128
		routes = 198.51.100.2/32 2001:db8:ff::2/128
		headroom = ${MUX_HEADROOM:-auto}
		CONF
	} >"$file"
}

# Two modems of qmapd-sim, a QMI one ("q", $E2E_TMP/sim.sock) and an MBIM one ("m",
# $E2E_TMP/mbim.sock), in $E2E_TMP/qmapd.conf; D-Bus off in the file (the test passes its
# private bus with --dbus-address).
write_qmi_mbim_config() {
	cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control-socket = $E2E_TMP/control
discovery = no

[dbus]
enabled = no

[modem.q]
device = sim:$E2E_TMP/sim.sock
control = qmi
control-link = $E2E_TMP/q.qmi

[modem.m]
device = sim:$E2E_TMP/mbim.sock
control = mbim
control-link = $E2E_TMP/m.mbim
CONF
}

# start_sim [extra qmapd-sim options...]
# Data-plane tests run without QMI (or MBIM) control, so the sim carries data on every mux
# (--always-connected); control-plane tests set SIM_ALWAYS_CONNECTED=no, and then only muxes
# with a session carry data, as on a real modem.
start_sim() {
	local always=() extra=()
	[ "${SIM_ALWAYS_CONNECTED:-yes}" = yes ] && always=(--always-connected)
	# SIM_EXTRA_ARGS: options for every sim a test starts (e2e-headroom-mbim: --mbim).
	read -r -a extra <<<"${SIM_EXTRA_ARGS:-}"
	# `ip netns exec` execs the program, so $! is its pid (a shell function would fork).
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/sim.sock" --netdev simnet0 \
		"${SIM_NET_ARGS[@]}" "${SIM_MUX_ARGS[@]}" --stats-file "$E2E_TMP/sim.stats" \
		"${always[@]}" "${extra[@]}" "$@" >"$E2E_TMP/sim.log" 2>&1 &
	E2E_PIDS+=($!)
	SIM_PID=$!
	wait_for 10 "qmapd-sim socket" test -S "$E2E_TMP/sim.sock"
}

# start_system_bus [POLICY-XML]: a private D-Bus with the system bus's default rules (no name
# may be owned, no method called unless a policy allows it), qmapd's policy file as installed,
# and POLICY-XML; its socket in $E2E_TMP. Sets BUS and DBUS_SYSTEM_BUS_ADDRESS, which GLib's
# clients (mmcli, nmcli, gdbus --system) and NetworkManager use.
start_system_bus() {
	BUS="unix:path=$E2E_TMP/bus"
	cat >"$E2E_TMP/bus.conf" <<-CONF
	<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
	 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
	<busconfig>
	  <type>system</type>
	  <listen>$BUS</listen>
	  <auth>EXTERNAL</auth>
	  <policy context="default">
	    <allow user="*"/>
	    <deny own="*"/>
	    <deny send_type="method_call"/>
	    <allow send_type="signal"/>
	    <allow send_requested_reply="true" send_type="method_return"/>
	    <allow send_requested_reply="true" send_type="error"/>
	    <allow receive_type="method_call"/>
	    <allow receive_type="method_return"/>
	    <allow receive_type="error"/>
	    <allow receive_type="signal"/>
	    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
	    <allow send_destination="org.freedesktop.DBus"
	           send_interface="org.freedesktop.DBus.Introspectable"/>
	  </policy>
	  <include>$SOURCE_DIR/conf/qmapd-dbus.conf</include>
	  ${1:-}
	</busconfig>
	CONF
	dbus-daemon --config-file="$E2E_TMP/bus.conf" --nofork --nopidfile \
		>"$E2E_TMP/dbus-daemon.log" 2>&1 &
	E2E_PIDS+=($!)
	wait_for 5 "the private bus" test -S "$E2E_TMP/bus"
	export DBUS_SYSTEM_BUS_ADDRESS=$BUS
}

# e2e_setup_bus: e2e_setup, then start_system_bus (no extra policy). $E2E_TMP is opened to every
# user, as callers of other users (setpriv to nobody) reach the bus's socket in it.
e2e_setup_bus() {
	e2e_setup
	chmod 755 "$E2E_TMP"
	start_system_bus
}

# qmapd's and qmapd-sim's log lines (to a file, not the journal) start with the time,
# "2026-12-03T10:40:12.345Z ": LOG_TIME_RE matches it, strip_log_time takes it off stdin's
# lines. A QMAPD_LOG_TIME=0 of the caller's would change what the tests read: unset here.
LOG_TIME_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
unset QMAPD_LOG_TIME
strip_log_time() { sed -E "s/^$LOG_TIME_RE //"; }

# The log of the qmapd before this one stays as qmapd.log.prev (E2E_KEEP keeps both): a
# restart test's failure is often the earlier run's doing.
keep_previous_log() {
	[ ! -e "$E2E_TMP/qmapd.log" ] || mv -f "$E2E_TMP/qmapd.log" "$E2E_TMP/qmapd.log.prev"
}

# start_qmapd_dbus CONFIG: qmapd offering ModemManager's API on the private bus.
start_qmapd_dbus() {
	keep_previous_log
	ip netns exec "$NS_HOST" "$QMAPD" -c "$1" --dbus-address "$BUS" \
		--stats-file "$E2E_TMP/qmapd.stats" >"$E2E_TMP/qmapd.log" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
	wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"
}

# start_mbim_sim [extra qmapd-sim options...]: the MBIM modem of write_qmi_mbim_config
# ($E2E_TMP/mbim.sock; network device simnet-m with 198.51.100.9), log sim-mbim.log; sets
# SIM_MBIM_PID. The test gives its muxes and APNs, which differ from test to test.
start_mbim_sim() {
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/mbim.sock" --netdev simnet-m \
		--net-address 198.51.100.9/32 --mbim "$@" >"$E2E_TMP/sim-mbim.log" 2>&1 &
	E2E_PIDS+=($!)
	SIM_MBIM_PID=$!
	wait_for 10 "the MBIM sim's socket" test -S "$E2E_TMP/mbim.sock"
}

# start_named_sim NAME [qmapd-sim options...]: one of a test's several modems: socket
# $E2E_TMP/NAME.sock, network device simnet-NAME, log sim-NAME.log (appended to: a test may stop
# it and start it again, and its old socket is removed first); sets NAMED_SIM_PID.
start_named_sim() {
	local name=$1
	shift
	rm -f "$E2E_TMP/$name.sock"
	ip netns exec "$NS_NET" "$QMAPD_SIM" --socket "$E2E_TMP/$name.sock" --netdev "simnet-$name" \
		"$@" >>"$E2E_TMP/sim-$name.log" 2>&1 &
	E2E_PIDS+=($!)
	NAMED_SIM_PID=$!
	wait_for 10 "qmapd-sim $name's socket" test -S "$E2E_TMP/$name.sock"
}

# need_mmcli: ModemManager's own client for the D-Bus tests, from the Debian package, unpacked
# and never installed (ModemManager itself would take the modems); sets MMCLI. Also the
# private bus's daemon and jq, which reads mmcli -J.
need_mmcli() {
	need dbus-daemon dbus
	need jq jq
	MMCLI=$(need_unpacked modemmanager usr/bin/mmcli) || exit $?
}

# mm ARGS...: mmcli on the private bus, its stderr kept in $E2E_TMP/mmcli.stderr (where
# last_error finds ModemManager's error names); mmj: the same as JSON.
mm() { "$MMCLI" "$@" 2>>"$E2E_TMP/mmcli.stderr"; }
mmj() { mm -J "$@"; }
last_error() { grep -o "org.freedesktop.ModemManager1.Error.[A-Za-z.]*" "$E2E_TMP/mmcli.stderr" | tail -1; }

# modem_count_is N: mmcli -L lists N modems.
modem_count_is() { [ "$(mmj -L | jq -r '."modem-list" | length')" -eq "$1" ]; }

# modem_of PORT: the modem's object path whose primary port is PORT. Which modem of the config
# is which: the primary port names the control link, the bus's numbers follow the probe order.
modem_of() {
	local p
	for p in $(mmj -L | jq -r '."modem-list"[]'); do
		if [ "$(mmj -m "$p" | jq -r '.modem.generic["primary-port"]')" = "$1" ]; then
			echo "$p"
		fi
	done
}

# find_qmi_mbim_modems: waits until both modems of write_qmi_mbim_config are on the bus; sets
# Q and M to their object paths.
find_qmi_mbim_modems() {
	wait_for 20 "two modems on the bus" modem_count_is 2
	Q=$(modem_of q.qmi)
	M=$(modem_of m.mbim)
	[ -n "$Q" ] && [ -n "$M" ] || fail "modems q ($Q) and m ($M) not both on the bus"
}

# start_qmapd CONFIG
start_qmapd() {
	keep_previous_log
	ip netns exec "$NS_HOST" "$QMAPD" -c "$1" --stats-file "$E2E_TMP/qmapd.stats" >"$E2E_TMP/qmapd.log" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
	# READY means the control socket listens; the test configs put it here.
	wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"
	for dev in "${@:2}"; do
		wait_for 10 "$dev with carrier" has_carrier "$NS_HOST" "$dev"
	done
}

# no_carrier DEV [NS]: DEV (in NS, by default the test's host namespace $NS_HOST) is there
# without carrier.
no_carrier() { [[ $(ip -n "${2:-$NS_HOST}" -o link show "$1" 2>/dev/null) == *NO-CARRIER* ]]; }

has_carrier() {
	local out
	out=$(ip -n "$1" -o link show "$2" 2>/dev/null) || return 1
	[[ $out == *",UP"* || $out == *"<UP"* ]] && [[ $out != *NO-CARRIER* ]]
}

# wait_for SECONDS WHAT CMD...
wait_for() {
	local secs=$1 what=$2
	shift 2
	for _ in $(seq $((secs * 10))); do
		"$@" && return 0
		sleep 0.1
	done
	fail "timed out after ${secs}s waiting for $what"
}

not_running() { ! kill -0 "$1" 2>/dev/null; }

# The umockdev testbed of tests/usb/usb-harness.c. need_usb_harness: skip (77) unless it was built
# and umockdev-wrapper is installed; sets HARNESS and PRELOAD (qmapd runs with
# LD_PRELOAD=$PRELOAD UMOCKDEV_DIR=$UMOCKDEV_DIR to see the testbed).
need_usb_harness() {
	HARNESS=${HARNESS:-$BUILD_DIR/usb-harness}
	PRELOAD=libumockdev-preload.so.0
	[ -x "$HARNESS" ] || unavailable "$HARNESS not built: libumockdev-dev was missing at" \
		"configure time (scripts/deps.sh installs it; configure again)"
	need umockdev-wrapper umockdev
}

# start_usb_harness ARGS...: the harness with ARGS (--sim, --modem ...), its FIFO at
# $E2E_TMP/usb.ctl and counters at $E2E_TMP/usb.stats, log usb-harness.log; sets UMOCKDEV_DIR
# once the testbed exists.
start_usb_harness() {
	umockdev-wrapper "$HARNESS" "$@" --dir-file "$E2E_TMP/umockdev.dir" \
		--control "$E2E_TMP/usb.ctl" --stats "$E2E_TMP/usb.stats" \
		>"$E2E_TMP/usb-harness.log" 2>&1 &
	E2E_PIDS+=($!)
	wait_for 10 "the umockdev testbed" test -s "$E2E_TMP/umockdev.dir"
	UMOCKDEV_DIR=$(cat "$E2E_TMP/umockdev.dir")
}

# stop_process NAME PID: SIGTERM, and the test fails unless the process exits within 10 s with
# status 0: a crash, a hang or an error on the way out is a bug like any other.
stop_process() {
	local what=$1 pid=$2 rc=0 how
	if ! kill -TERM "$pid" 2>/dev/null; then
		wait "$pid" || rc=$?
		fail "$what (pid $pid) had already ended, with status $rc, when it was to be stopped"
	fi
	wait_for 10 "$what to exit after SIGTERM" not_running "$pid"
	wait "$pid" || rc=$?
	how="status $rc"
	[ "$rc" -le 128 ] || how="signal $(kill -l "$rc")"
	[ "$rc" -eq 0 ] || fail "$what ended with $how after SIGTERM"
	echo "ok: $what exited 0 on SIGTERM"
}
stop_qmapd() { stop_process qmapd "$QMAPD_PID"; }

# Refresh both counter files (SIGUSR1) and wait until they are rewritten.
refresh_stats() {
	rm -f "$E2E_TMP/qmapd.stats" "$E2E_TMP/sim.stats"
	kill -USR1 "$QMAPD_PID" "$SIM_PID"
	wait_for 5 "counters" test -s "$E2E_TMP/qmapd.stats" -a -s "$E2E_TMP/sim.stats"
}

# counter_of FILE LINE-PREFIX KEY: the value of KEY=... on the line starting with LINE-PREFIX
counter_of() {
	local v
	v=$(grep -m1 "^$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p")
	[ -n "$v" ] || fail "no counter '$3' on line '$2' of $(basename "$1")"
	echo "$v"
}
# qmapd's lines start with the modem's name: modem0 unless QSTAT_MODEM says another.
qstat() { counter_of "$E2E_TMP/qmapd.stats" "${QSTAT_MODEM:-modem0} $1" "$2"; }
sstat() { counter_of "$E2E_TMP/sim.stats" "$1" "$2"; }

expect_eq() {
	[ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"
	echo "ok: $1 = $2"
}
expect_ge() {
	[ "$2" -ge "$3" ] || fail "$1: expected >= $3, got $2"
	echo "ok: $1 = $2 (>= $3)"
}

# An iperf3 server in the network namespace; stopped with the rest at exit.
start_iperf3_server() {
	# --forceflush: iperf3_server_ready reads the log while the server runs.
	in_net iperf3 -s -D --forceflush --pidfile "$E2E_TMP/iperf3.pid" \
		--logfile "$E2E_TMP/iperf3-server.log"
	wait_for 5 "iperf3 server" test -s "$E2E_TMP/iperf3.pid"
	E2E_PIDS+=($(cat "$E2E_TMP/iperf3.pid"))
}

# The forwarding topology of the headroom test and benchmark: the sim sends 192.0.2.0/25 down
# mux 1; the host namespace forwards 192.0.2.100 into VXLAN (VNI 42) over a veth pair to NS_VX,
# which the caller names and adds to E2E_EXTRA_NS before e2e_setup. The veth MTU leaves room
# for VXLAN's 50 bytes, so 1500-byte packets are forwarded whole.
setup_vxlan_forward() {
	SIM_MUX_ARGS=(--mux 1=192.0.2.0/25 --mux 2=203.0.113.2/32)
	ip netns add "$NS_VX" || fail "cannot create the network namespace $NS_VX (ip netns add)"
	ip -n "$NS_HOST" link add veth-h mtu 1600 type veth peer name veth-v mtu 1600 netns "$NS_VX"
	ip -n "$NS_HOST" addr add 192.0.2.129/30 dev veth-h
	ip -n "$NS_VX" addr add 192.0.2.130/30 dev veth-v
	ip -n "$NS_HOST" link set veth-h up
	ip -n "$NS_VX" link set veth-v up
	ip -n "$NS_VX" link set lo up
	ip -n "$NS_HOST" link add vxlan0 mtu 1500 type vxlan id 42 local 192.0.2.129 remote 192.0.2.130 dstport 4789
	ip -n "$NS_VX" link add vxlan0 mtu 1500 type vxlan id 42 local 192.0.2.130 remote 192.0.2.129 dstport 4789
	ip -n "$NS_HOST" addr add 192.0.2.193/30 dev vxlan0
	ip -n "$NS_VX" addr add 192.0.2.194/30 dev vxlan0
	ip -n "$NS_HOST" link set vxlan0 up
	ip -n "$NS_VX" link set vxlan0 up
	ip -n "$NS_VX" addr add 192.0.2.100/32 dev lo
	ip -n "$NS_HOST" route add 192.0.2.100/32 via 192.0.2.194 dev vxlan0
	ip -n "$NS_VX" route add 198.51.100.0/24 via 192.0.2.193 dev vxlan0
	local vx_mac
	vx_mac=$(ip -n "$NS_VX" -j link show vxlan0 | jq -r '.[0].address')
	ip -n "$NS_HOST" neigh replace 192.0.2.194 lladdr "$vx_mac" dev vxlan0 nud permanent
	in_host sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}
in_vx() { ip netns exec "$NS_VX" "$@"; }
vx_rx() { ip -n "$NS_VX" -j -s link show vxlan0 | jq '.[0].stats64.rx.packets'; }
