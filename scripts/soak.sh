#!/bin/bash
# SPDX-License-Identifier: MIT
# Soak: qmapd + qmapd-sim for N minutes under everything at once, and a check that nothing
# qmapd holds grows. Run on purpose like the benchmarks (as root; it makes and deletes its
# own network namespaces); tests/e2e/e2e-soak.sh runs the 1-minute form in CI.
#
#   scripts/soak.sh [-m MINUTES] [-d SECONDS] [BUILD_DIR]   (default 2 minutes, BUILD_DIR = .)
#
# Load, all at once:
#   - iperf3 through mux 1, 8 s uplink then 8 s downlink, over and over (200 Mbit/s);
#   - a network-initiated drop of every session every -d SECONDS (default 60; SIGUSR2 to the
#     sim), from which the sessions come back by themselves;
#   - mux churn: `qmapctl mux add 3` / `mux del 3` every 4 s; a reload every 15 s that
#     alternately changes mux 2 (torn down and re-created) and restores it;
#   - `qmapctl status` every second.
# Sampled every 10 s: qmapd's RSS, open fds and threads, and the QMI client ids the
# simulated modem has allocated. The first 30 s are warm-up; after it, the check fails if a
# sample exceeds the warm-up's largest by more than: RSS 8 MiB, fds 4, threads 2, client
# ids 4 (mux 3's two WDS clients come and go with the churn); in a sanitizer build RSS is
# shown but not judged. It also fails if qmapd dies, stops answering, or does not exit
# cleanly at the end.
set -euo pipefail

MINUTES=2 DROP_EVERY=60
while getopts "m:d:h" opt; do
	case $opt in
	m) MINUTES=$OPTARG ;;
	d) DROP_EVERY=$OPTARG ;;
	h) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
BUILD_DIR=$(cd "${1:-${BUILD_DIR:-.}}" && pwd)
SOURCE_DIR=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR SOURCE_DIR
source "$SOURCE_DIR/tests/support/lib.sh"

BOUND_RSS_KB=8192 BOUND_FDS=4 BOUND_THREADS=2 BOUND_CIDS=4 WARMUP=30 INTERVAL=10
# A sanitizer build keeps freed memory in ASan's quarantine (256 MiB by default), so its RSS
# grows by design: there RSS is shown, not judged, and LeakSanitizer judges leaks at exit.
JUDGE_RSS=1
grep -q '^QMAPD_SANITIZE:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null && JUDGE_RSS=0

command -v iperf3 >/dev/null || skip "iperf3 not installed (apt-get install iperf3)"
[ -x /usr/libexec/qmi-proxy ] || skip "qmi-proxy not installed (apt-get install libqmi-proxy)"
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"

SIM_MUX_ARGS=(--mux 1=192.0.2.2/25,2001:db8:1::2/64 --mux 2=203.0.113.2/24,2001:db8:2::2/64
	--mux 3=192.0.2.130/25,2001:db8:3::2/64)
SIM_NET_ARGS+=(--apn internet)
SIM_ALWAYS_CONNECTED=no
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

soak_config() { # file metric-of-mux-2
	cat >"$1" <<-CONF
	[device]
	device = sim:$E2E_TMP/sim.sock
	control = qmi
	control-link = $E2E_TMP/qmi0
	control-socket = $E2E_TMP/control

	[mux.1]
	interface = qmap1
	apn = internet
	routes = 198.51.100.1/32 2001:db8:ff::1/128

	[mux.2]
	interface = qmap2
	apn = internet
	route-metric = $2
	routes = 198.51.100.2/32 2001:db8:ff::2/128
	CONF
}
mux_state() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state"; }
mux_is() { [ "$(mux_state "$1")" = "$2" ]; }

soak_config "$E2E_TMP/qmapd.conf" 100
start_sim
start_qmapd "$E2E_TMP/qmapd.conf"
for m in 1 2; do wait_for 30 "mux $m connected" mux_is $m connected; done
start_iperf3_server
END=$(($(date +%s) + MINUTES * 60))

# Each load runs in a subshell until END; its counts go to $E2E_TMP/<name>.count.
traffic() {
	local ok=0 failed=0 dir=
	while [ "$(date +%s)" -lt "$END" ]; do
		if in_host timeout 20 iperf3 -c 198.51.100.1 -t 8 -b 200M $dir >/dev/null 2>&1; then
			ok=$((ok + 1))
		else
			failed=$((failed + 1)) # a network drop ends a run; the next one starts anew
			sleep 1
		fi
		[ -z "$dir" ] && dir=-R || dir=
		echo "$ok $failed" >"$E2E_TMP/traffic.count"
	done
}
drops() {
	local n=0
	# No sleep past the end: the soak waits for every load before its verdict.
	while [ $(($(date +%s) + DROP_EVERY)) -lt "$END" ]; do
		sleep "$DROP_EVERY"
		kill -USR2 "$SIM_PID" && n=$((n + 1))
		echo "$n" >"$E2E_TMP/drops.count"
	done
}
churn() {
	local adds=0 reloads=0 metric=100 last_reload=$(date +%s)
	while [ "$(date +%s)" -lt "$END" ]; do
		"${CTL[@]}" mux add 3 --no-wait apn=internet >/dev/null 2>&1 && adds=$((adds + 1))
		sleep 2
		"${CTL[@]}" mux del 3 >/dev/null 2>&1 || true
		sleep 2
		if [ $(($(date +%s) - last_reload)) -ge 15 ]; then
			[ $metric = 100 ] && metric=200 || metric=100
			soak_config "$E2E_TMP/qmapd.conf" $metric
			"${CTL[@]}" reload >/dev/null 2>&1 && reloads=$((reloads + 1))
			last_reload=$(date +%s)
		fi
		echo "$adds $reloads" >"$E2E_TMP/churn.count"
	done
}
polling() {
	local ok=0 failed=0
	while [ "$(date +%s)" -lt "$END" ]; do
		"${CTL[@]}" status >/dev/null 2>&1 && ok=$((ok + 1)) || failed=$((failed + 1))
		echo "$ok $failed" >"$E2E_TMP/status.count"
		sleep 1
	done
}
traffic & E2E_PIDS+=($!)
drops & E2E_PIDS+=($!)
churn & E2E_PIDS+=($!)
polling & E2E_PIDS+=($!)
LOADS=("${E2E_PIDS[@]: -4}")

# The simulated modem's client ids, from its counters (SIGUSR1). A busy machine once kept
# the answer past 5 s at the end of an hour's run: ask three times before giving up.
sim_clients() {
	for _ in 1 2 3; do
		rm -f "$E2E_TMP/sim.stats"
		kill -USR1 "$SIM_PID" || fail "qmapd-sim is gone"
		for _ in $(seq 50); do
			if [ -s "$E2E_TMP/sim.stats" ]; then
				sstat qmi_clients= qmi_clients
				return 0
			fi
			sleep 0.1
		done
	done
	fail "qmapd-sim did not write its counters (3 tries of 5 s)"
}
# One sample, into $E2E_TMP/sample (not a subshell, so that a failure ends the soak).
sample() {
	local rss threads fds cids
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$QMAPD_PID/status")
	threads=$(awk '/^Threads:/ {print $2}' "/proc/$QMAPD_PID/status")
	fds=$(ls "/proc/$QMAPD_PID/fd" | wc -l)
	sim_clients >"$E2E_TMP/cids"
	cids=$(cat "$E2E_TMP/cids")
	echo "$rss $fds $threads $cids" >"$E2E_TMP/sample"
}

START=$(date +%s)
printf '%6s %9s %5s %8s %9s\n' "t/s" "rss/KiB" "fds" "threads" "qmi-cids" | tee "$E2E_TMP/samples"
warm=(0 0 0 0) worst=(0 0 0 0) names=(rss fds threads qmi-cids)
bounds=($BOUND_RSS_KB $BOUND_FDS $BOUND_THREADS $BOUND_CIDS)
while [ "$(date +%s)" -lt "$END" ]; do
	sleep $INTERVAL
	kill -0 "$QMAPD_PID" 2>/dev/null || fail "qmapd died during the soak"
	sample
	read -r -a s <"$E2E_TMP/sample"
	t=$(($(date +%s) - START))
	printf '%6d %9d %5d %8d %9d\n' "$t" "${s[0]}" "${s[1]}" "${s[2]}" "${s[3]}" | tee -a "$E2E_TMP/samples"
	for i in 0 1 2 3; do
		if [ $t -le $WARMUP ]; then
			[ "${s[$i]}" -gt "${warm[$i]}" ] && warm[$i]=${s[$i]}
		else
			[ "${s[$i]}" -gt "${worst[$i]}" ] && worst[$i]=${s[$i]}
		fi
	done
done
for pid in "${LOADS[@]}"; do wait "$pid" 2>/dev/null || true; done

read -r t_ok t_failed <"$E2E_TMP/traffic.count" || true
read -r adds reloads <"$E2E_TMP/churn.count" || true
read -r s_ok s_failed <"$E2E_TMP/status.count" || true
drops=$(cat "$E2E_TMP/drops.count" 2>/dev/null || echo 0)
echo "load: iperf3 runs ${t_ok:-0} ok / ${t_failed:-0} cut by drops, network drops $drops," \
	"mux adds ${adds:-0}, reloads ${reloads:-0}, status ${s_ok:-0} ok / ${s_failed:-0} failed"
[ "${s_failed:-0}" -eq 0 ] || fail "qmapctl status failed ${s_failed} times"
[ "${t_ok:-0}" -ge 1 ] || fail "no iperf3 run completed"
[ "${adds:-0}" -ge 1 ] || fail "no mux add succeeded"
[ "${reloads:-0}" -ge 1 ] || fail "no reload succeeded"
[ "$DROP_EVERY" -ge $((MINUTES * 60)) ] || [ "$drops" -ge 1 ] || fail "no network drop happened"

bad=0
for i in 0 1 2 3; do
	growth=$((worst[i] - warm[i]))
	[ "${worst[$i]}" -eq 0 ] && growth=0 # no sample after warm-up (a run under 40 s)
	if [ "$i" = 0 ] && [ $JUDGE_RSS = 0 ]; then
		echo "note: rss not judged in a sanitizer build: warm-up max ${warm[$i]}," \
			"later max ${worst[$i]}, growth $growth"
	elif [ $growth -gt "${bounds[$i]}" ]; then
		echo "FAIL: ${names[$i]} grew by $growth after warm-up (bound ${bounds[$i]}):" \
			"warm-up max ${warm[$i]}, later max ${worst[$i]}" >&2
		bad=1
	else
		echo "ok: ${names[$i]} after warm-up: max ${worst[$i]}, warm-up max ${warm[$i]}," \
			"growth $growth (bound ${bounds[$i]})"
	fi
done
[ $bad = 0 ] || exit 1
for m in 1 2; do wait_for 30 "mux $m connected at the end" mux_is $m connected; done
stop_qmapd
echo "soak: passed (${MINUTES} min)"
