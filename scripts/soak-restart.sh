#!/bin/bash
# SPDX-License-Identifier: MIT
# Soak of the control side: two modems (a QMI and an MBIM qmapd-sim) in one qmapd with
# ModemManager's D-Bus API on a private bus, for an hour, under what a laptop's or router's
# life brings. Run on purpose like the benchmarks (as root; it makes and deletes its own
# network namespaces); tests/e2e/e2e-soak-restart.sh runs 40 s of it in ctest; scripts/soak.sh
# is the data plane's soak.
#
#   scripts/soak-restart.sh [-m MINUTES] [BUILD_DIR]   (default 60 minutes, BUILD_DIR = .)
#   scripts/soak-restart.sh -r DIR    the report and judgement again, on a run's kept logs
#                                     (SOAK_KEEP=DIR keeps a passed run's, E2E_KEEP a failed one's)
#
# Load, all at once, each on its own clock (env: CYCLE_EVERY=10 DROP_EVERY=60
# RESTART_EVERY=600 SAMPLE_EVERY=30, seconds):
#   - per modem, what NetworkManager does with a modem: Simple.Connect (apn, ip-type
#     ipv4v6) over D-Bus, the bearer's Interface and Ip4Config read, the address and a route
#     put on the device, one ping through it, Simple.Disconnect of that bearer 5 s after
#     the cycle began; one cycle every CYCLE_EVERY;
#   - the network drops every session of both modems (SIGUSR2 to the sims) every
#     DROP_EVERY, at half the period; the config's muxes come back by themselves;
#   - a restart of qmapd every RESTART_EVERY as systemd's restart does it (the unit's
#     ExecStop=): SIGUSR2, wait for the exit (20 s, TimeoutStopSec=), start again;
#   - through the config's mux of each modem (q.1, m.1): a ping every 0.2 s and one TCP
#     connection carrying a line and its echo every 0.1 s (a new one if it breaks).
# Sampled every SAMPLE_EVERY: qmapd's RSS, open fds and threads, qmi-proxy's and
# mbim-proxy's, the QMI client ids and sessions in the modems, qmapd's counters; and qmapd's
# lowest RSS of the readings every second since the sample before (its RSS between D-Bus
# cycles, whose slope is judged). qmapd runs with glibc's per-thread caches off (see below).
# Fails when: qmapd dies other than by a restart, or does not exit 0 on SIGUSR2 or at the
# end on SIGTERM; a restart does not keep a modem's config session (q.1, m.1: taken over, no
# session started in the modem, same addresses, no gap over 10 s, the TCP connection
# unbroken; MBIM also: the function not opened again, the session not ended by the host),
# unless a drop had just ended it; a modem's config mux is not connected again within 60 s
# of a restart; growth, with one qmapd per RESTART_EVERY: its largest RSS / fds in the run's
# last segment above the first segment's by more than 2 MiB / 4 fds, or within any segment
# the samples after its first quarter above that quarter's by as much, or its RSS rising by
# more than 32 KiB a minute in a run of 6 minutes or more; the modem's QMI client ids or a
# proxy's fds above the first segment's by more than 4; a D-Bus cycle failing away from a
# drop or a restart; an error counter of a modem (malformed or unsupported requests) above 0.
set -euo pipefail

MINUTES=60 REPORT_ONLY=
while getopts "m:r:h" opt; do
	case $opt in
	m) MINUTES=$OPTARG ;;
	r) REPORT_ONLY=$OPTARG ;;
	h) sed -n '3,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
BUILD_DIR=$(cd "${1:-${BUILD_DIR:-.}}" && pwd)
SOURCE_DIR=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR SOURCE_DIR
source "$SOURCE_DIR/tests/support/lib.sh"

# report DIR: what the run in DIR did, and the judgement (exit 1 on a failure).
report() {
python3 - "$1" <<'PY'
import re, sys
d = sys.argv[1]
p = dict(l.strip().split("=", 1) for l in open(d + "/params"))
start, end, judge_rss = float(p["START"]), float(p["END"]), p["JUDGE_RSS"] == "1"
slack_rss, slack_fds, slack_cids = int(p["SLACK_RSS_KB"]), int(p["SLACK_FDS"]), int(p["SLACK_CIDS"])
bad = []

events = [l.split() for l in open(d + "/events.log")]
drops = [float(e[0]) for e in events if e[1] == "drop"]
rs_begin = [float(e[0]) for e in events if e[1] == "restart-begin"]
rs_end = [(float(e[0]), dict(kv.split("=", 1) for kv in e[2:])) for e in events if e[1] == "restart-end"]
restarts = [(b, e, kv) for b, (e, kv) in zip(rs_begin, rs_end)]

def cause(t0, t1, lead=1, tail=10):
    """What [t0, t1] (a gap, a failed cycle) overlaps: a restart or a drop, from lead s before
    it to tail s after it ended (the sessions coming back), or nothing."""
    for b, e, _ in restarts:
        if t0 <= e + tail and t1 >= b - lead:
            return "restart"
    for x in drops:
        if t0 <= x + tail and t1 >= x - lead:
            return "drop"
    return "none"

def ts_lines(path, pat):
    out = []
    for l in open(path):
        m = re.match(pat, l)
        if m:
            out.append(float(m.group(1)))
    return out

def max_gap(ts, lo, hi):
    ts = [t for t in ts if lo <= t <= hi]
    return max((z - a for a, z in zip(ts, ts[1:])), default=None)

pings = {m: ts_lines("%s/ping-%s.log" % (d, m), r"\[(\d+\.\d+)\] \d+ bytes from") for m in "qm"}
echoes = {m: ts_lines("%s/tcp-%s.log" % (d, m), r"(\d+\.\d+) \d+$") for m in "qm"}
print("\n---- restarts (SIGUSR2, exit, start, both config muxes connected); largest gaps in ms")
# m:o/r/e: OPENs of the MBIM function, OPENs while open, m.1's session ended by the host.
print("%3s %6s %6s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s" % (
    "n", "t/s", "secs", "q:taken", "q.1:new", "q:cids", "q:addr", "q:ping", "q:tcp",
    "m:taken", "m.1:new", "m:o/r/e", "m:addr", "m:ping", "m:tcp"))
for i, (b, e, kv) in enumerate(restarts, 1):
    g = {}
    for m in "qm":
        for name, ts in (("ping", pings[m]), ("tcp", echoes[m])):
            x = max_gap(ts, b - 1, e + 10)
            g[m + name] = "%d" % (x * 1000) if x is not None else "-"
    # A drop just before the restart: the session was down or coming back when qmapd went,
    # so the next one rightly starts it anew.
    near_drop = any(b - 5 <= x <= e for x in drops)
    dropped = kv.get("q_up_before") == "no" or near_drop
    m_dropped = kv.get("m_up_before") == "no" or near_drop
    # Sessions started on mux 1 over the restart; a run of the first version counted every
    # mux's (a D-Bus connect in the window too: marked *), so there both families must
    # have been taken over instead.
    q1, m1 = kv.get("q_mux1_started"), kv.get("m_mux1_started")
    legacy = q1 is None
    if legacy:
        q1, m1 = kv["q_sessions_started"] + "*", kv["m_sessions_started"] + "*"
    kept = kv["q_addr_same"] == "yes" and (kv["q_taken_over"] == "2" if legacy else
                                           kv["q_taken_over"] != "0" and q1 == "0")
    # MBIM: judged once the run logged what the MBIM modem saw (a run of a script before
    # MBIM sessions were taken over did not).
    m_judged = "m_taken_over" in kv
    m_ore = "%s/%s/%s" % (kv["m_opens"], kv["m_reopens"], kv["m_mux1_ended"]) if m_judged else "-"
    m_kept = (m_judged and kv["m_taken_over"] != "0" and m1 == "0" and m_ore == "0/0/0" and
              kv["m_addr_same"] == "yes")
    notes = [x for x, y in (("q.1", dropped), ("m.1", m_dropped and m_judged)) if y]
    print("%3d %6.0f %6s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s%s" % (
        i, b - start, kv["secs"], kv["q_taken_over"], q1, kv["q_clients"],
        kv["q_addr_same"], g["qping"], g["qtcp"], kv.get("m_taken_over", "-"), m1, m_ore,
        kv.get("m_addr_same", "-"), g["mping"], g["mtcp"],
        ("  (%s down or just dropped before: not judged)" % " and ".join(notes)) if notes else
        ("" if m_judged else "  (m.1 not judged: a run from before MBIM take-over)")))
    if not dropped and not kept:
        bad.append("restart %d did not keep the QMI session: %s" % (i, kv))
    if m_judged and not m_dropped and not m_kept:
        bad.append("restart %d did not keep the MBIM session: %s" % (i, kv))

mbim_judged = all("m_taken_over" in kv for _, _, kv in restarts)
print("\n---- traffic through the config muxes (gaps over 1 s, by what was going on)")
for m in ("q", "m"):
    summary = re.search(r"(\d+) packets transmitted, (\d+) received", open("%s/ping-%s.log" % (d, m)).read())
    tcp = [l.split() for l in open("%s/tcp-%s.log" % (d, m))]
    conns = [x for x in tcp if x[1] == "connect"]
    breaks = [x for x in tcp if x[1] == "break"]
    for name, ts in (("ping", pings[m]), ("tcp", echoes[m])):
        gaps = {"restart": [], "drop": [], "none": []}
        for a, z in zip(ts, ts[1:]):
            if z - a > 1.0:
                gaps[cause(a, z)].append(z - a)
        print("%s.1 %-4s %6d replies; gaps > 1 s: " % (m, name, len(ts)) + ", ".join(
            "%s %d (max %.1f s)" % (k, len(v), max(v)) if v else "%s 0" % k for k, v in gaps.items()))
        if (m == "q" or mbim_judged) and gaps["restart"] and max(gaps["restart"]) > 10:
            bad.append("%s.1 %s: a gap of %.1f s over a restart" % (m, name, max(gaps["restart"])))
    for x in breaks:
        c = cause(float(x[0]) - 30, float(x[0]))  # 30 s without an echo count as a break
        print("%s.1 tcp  connection %s broke at t=%.0f s (%s; around: %s)" % (m, x[2], float(x[0]) - start,
              " ".join(x[3:]), c))
        if (m == "q" or mbim_judged) and c == "restart":
            bad.append("the TCP connection through %s.1 broke over a restart at t=%.0f s" % (
                m, float(x[0]) - start))
    print("%s.1 tcp  %d connection(s) in all; ping: %s" % (m, len(conns), "%s sent, %s answered" % summary.groups()
          if summary else "no summary"))
    if not echoes[m] or end - echoes[m][-1] > 30:
        bad.append("%s.1: no TCP echo in the last 30 s" % m)

print("\n---- D-Bus cycles (Simple.Connect, address, ping, Simple.Disconnect)")
for m in ("q", "m"):
    rows = [l.split(None, 3) for l in open("%s/dbus-%s.log" % (d, m))]
    ok = sum(1 for r in rows if r[3].strip() == "ok")
    failed = {}
    for r in rows:
        if r[3].strip() == "ok":
            continue
        c = cause(float(r[0]), float(r[1]), lead=0.5, tail=5)
        failed.setdefault(c, []).append(r[3].strip())
        if c == "none":
            bad.append("D-Bus cycle %s on %s failed away from a drop or restart: %s" % (r[2], m, r[3].strip()))
    print("%s: %d cycles, %d ok; failed: %s" % (m, len(rows), ok, "; ".join(
        "%s %d (%s)" % (k, len(v), ", ".join(sorted(set(v)))) for k, v in failed.items()) or "none"))
    if ok < len(rows) / 2:
        bad.append("%s: only %d of %d D-Bus cycles succeeded" % (m, ok, len(rows)))

print("\n---- samples (growth judged per qmapd run: one run per restart period)")
lines = [l.split() for l in open(d + "/samples")]
head, rows = lines[0], lines[1:]
col = {k: i for i, k in enumerate(head)}
def num(r, k):
    v = r[col[k]]
    return int(v) if v.lstrip("-").isdigit() else None
runs = sorted({int(r[1]) for r in rows})
seg = {n: [r for r in rows if int(r[1]) == n] for n in runs}
def seg_max(n, k, rs=None):
    vs = [num(r, k) for r in (rs if rs is not None else seg[n]) if num(r, k) is not None]
    return max(vs) if vs else None
print("%4s %8s %17s %11s %14s %15s %8s" % ("run", "samples", "qmapd rss KiB", "qmapd fds", "qmi-proxy fds",
                                        "mbim-proxy fds", "q cids"))
for n in runs:
    rs = seg[n]
    def rng(k):
        vs = [num(r, k) for r in rs if num(r, k) is not None]
        return "%d-%d" % (min(vs), max(vs)) if vs else "-"
    print("%4d %8d %17s %11s %14s %15s %8s" % (n, len(rs), rng("qmapd_rss"), rng("qmapd_fds"), rng("qmi_proxy_fds"),
                                          rng("mbim_proxy_fds"), rng("q_cids")))
# The slope of qmapd's RSS in each run long enough to tell (5 minutes of samples after its
# first minute, when the D-Bus objects and caches are up), least squares: a leak per D-Bus
# update showed as 90 KiB a minute, the same runs without it 10 to 12. Judged on the lowest
# reading of each sample's period (qmapd_rss_min, every second): RSS with a D-Bus bearer up
# is some 130 KiB above RSS between cycles (its mux's uplink queue and ring, 121 KiB of heap,
# come and go with it, and glibc trims the top of the heap when they go), and a sample every
# 30 s on a 10 s cycle lands at one phase of the cycle that drifts, so a run whose samples
# drift from one phase to the other showed a step that read as a slope. A leak raises the
# lowest reading as much as the others. Runs kept from before that column: the sample.
slope_max = 32
rss_key = "qmapd_rss_min" if "qmapd_rss_min" in col else "qmapd_rss"
for n in runs:
    pts = [(int(r[0]), num(r, rss_key)) for r in seg[n] if num(r, rss_key) is not None]
    pts = [(t, v) for t, v in pts if t - pts[0][0] >= 60] if pts else []
    if len(pts) < 5 or pts[-1][0] - pts[0][0] < 300:
        continue
    mt, mv = sum(t for t, _ in pts) / len(pts), sum(v for _, v in pts) / len(pts)
    slope = 60 * sum((t - mt) * (v - mv) for t, v in pts) / sum((t - mt) ** 2 for t, _ in pts)
    verdict = "ok" if slope <= slope_max else ("FAIL" if judge_rss else "not judged")
    print("%s in run %d: %+.1f KiB a minute after its first minute (bound %d): %s" % (
        rss_key, n, slope, slope_max, verdict))
    if verdict == "FAIL":
        bad.append("qmapd's RSS grew %.1f KiB a minute in run %d" % (slope, n))
first, last = runs[0], runs[-1]
for k, slack, judged in (("qmapd_rss", slack_rss, judge_rss), ("qmapd_fds", slack_fds, True),
                         ("qmi_proxy_fds", slack_cids, True), ("mbim_proxy_fds", slack_cids, True),
                         ("q_cids", slack_cids, True)):
    a, z = seg_max(first, k), seg_max(last, k)
    if a is None or z is None:
        continue
    verdict = "ok" if z <= a + slack else ("FAIL" if judged else "not judged")
    print("%s: first run's max %d, last run's max %d (bound +%d): %s" % (k, a, z, slack, verdict))
    if verdict == "FAIL":
        bad.append("%s grew from the first run (max %d) to the last (max %d)" % (k, a, z))
    if not k.startswith("qmapd"):
        continue
    for n in runs:
        rs = seg[n]
        q = max(1, len(rs) // 4)
        a, z = seg_max(n, k, rs[:q]), seg_max(n, k, rs[q:])
        if a is not None and z is not None and z > a + slack:
            msg = "%s grew within run %d: first quarter max %d, then max %d" % (k, n, a, z)
            print(msg + ("" if judged else " (not judged)"))
            if judged:
                bad.append(msg)

def stats(path):
    return dict(l.strip().split("=", 1) for l in open(path) if re.match(r"^[a-z_0-9]+=\d+$", l.strip()))
print("\n---- the modems' counters (whole run)")
for m, keys in (("q", ("qmi_requests", "qmi_errors", "qmi_malformed", "qmi_sessions_started",
                        "qmi_sessions_dropped", "qmi_sessions_failed", "qmi_clients")),
                ("m", ("mbim_requests", "mbim_errors", "mbim_malformed", "mbim_not_opened",
                       "mbim_unsupported", "mbim_sessions_started", "mbim_sessions_dropped",
                       "mbim_sessions_failed"))):
    try:
        s = stats("%s/sim-%s.final" % (d, m))
    except FileNotFoundError:  # a run that failed before its end
        s = stats("%s/sim-%s.stats" % (d, m))
    print("%s: " % m + " ".join("%s=%s" % (k, s.get(k, "?")) for k in keys))
    for k in ("qmi_malformed", "mbim_malformed", "mbim_unsupported", "truncated", "short_messages",
              "ul_unknown_mux", "unknown_ep"):
        if int(s.get(k, "0")) > 0:
            bad.append("modem %s counted %s=%s" % (m, k, s[k]))
    mal = {k: v for k, v in s.items() if (k.startswith("malformed_") or k.startswith("ul_ntb_malformed_")) and v != "0"}
    if mal:
        bad.append("modem %s counted malformed data: %s" % (m, mal))
errs = sorted({r[col["qmapd_errors"]] for r in rows} - {"0", "-"})
print("qmapd's error-like counters seen in samples: %s" % (", ".join(errs) or "none"))
print("\nrestarts %d, network drops %d, samples %d" % (len(restarts), len(drops), len(rows)))
if bad:
    print("\nFAIL:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
}
[ -z "$REPORT_ONLY" ] || { report "$REPORT_ONLY"; exit; }

DURATION=${SOAK_SECONDS:-$((MINUTES * 60))}
CYCLE_EVERY=${CYCLE_EVERY:-10}
DROP_EVERY=${DROP_EVERY:-60}
RESTART_EVERY=${RESTART_EVERY:-600}
SAMPLE_EVERY=${SAMPLE_EVERY:-30}
SLACK_RSS_KB=2048 SLACK_FDS=4 SLACK_CIDS=4
# A sanitizer build keeps freed memory in ASan's quarantine: RSS is shown, not judged there;
# LeakSanitizer judges leaks at every exit (a report makes the exit status non-zero).
JUDGE_RSS=1
grep -q '^QMAPD_SANITIZE:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null && JUDGE_RSS=0
# GLib 2.74's slice allocator keeps GVariants in pages of its own, which stay reachable: what
# is leaked there shows neither to LeakSanitizer nor, until the pages run out, in RSS. Plain
# malloc shows both (GLib 2.76 dropped the slice allocator anyway).
export G_SLICE=always-malloc
# glibc's per-thread caches (tcache: up to 7 freed chunks of each size to 1 KiB, some 235 KiB
# a thread at most) fill over qmapd's first tens of minutes: with them on, malloc's bytes in
# use rose 19 KiB a minute over a 10-minute run and RSS 10.5 (tests/bench/RESULTS.md, "What
# the 10 KiB a minute was"), while heaptrack saw qmapd's live heap flat (0.2 KiB over 356
# D-Bus cycles). Off, bytes in use stayed flat to 64 bytes: what moves RSS is then the heap
# itself. Set for qmapd only (the proxies it starts inherit it).
QMAPD_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.tcache_count=0

need /usr/libexec/qmi-proxy libqmi-proxy
need /usr/libexec/mbim-proxy libmbim-proxy
need gdbus libglib2.0-bin
need python3 python3
need_mmcli
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup_bus
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
EVENTS=$E2E_TMP/events.log
event() { echo "$(date +%s.%N) $*" >>"$EVENTS"; }

# The modems. Each mux's first prefixes are the addresses its session gets; mux 1 is the
# config's, mux 2 the D-Bus bearer's (qmapd gives a D-Bus bearer the next free mux id; an
# MBIM session N carries mux N+1). Both sims keep their sessions when qmapd goes away, as a
# USB modem does when nobody drops DTR.
#   q.1 192.0.2.2  -> 198.51.100.1    q.2 192.0.2.18 -> 198.51.100.2
#   m.1 192.0.2.34 -> 198.51.100.9    m.2 192.0.2.50 -> 198.51.100.10
start_named_sim q --net-address 198.51.100.1/32 --net-address 198.51.100.2/32 \
	--mux 1=192.0.2.2/28,2001:db8:1::2/64 --mux 2=192.0.2.18/28,2001:db8:2::2/64 \
	--apn internet --keep-sessions --stats-file "$E2E_TMP/sim-q.stats"
SIM_Q=$NAMED_SIM_PID
start_named_sim m --mbim --net-address 198.51.100.9/32 --net-address 198.51.100.10/32 \
	--mux 1=192.0.2.34/28,2001:db8:3::2/64 --mux 2=192.0.2.50/28,2001:db8:4::2/64 \
	--apn internet --keep-sessions --stats-file "$E2E_TMP/sim-m.stats"
SIM_M=$NAMED_SIM_PID
declare -A SIM_PID=([q]=$SIM_Q [m]=$SIM_M) TARGET=([q]=198.51.100.1 [m]=198.51.100.9)
declare -A DBUS_TARGET=([q]=198.51.100.2 [m]=198.51.100.10)

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control-socket = $E2E_TMP/control
discovery = no

[dbus]
enabled = no

[modem.q]
device = sim:$E2E_TMP/q.sock
control = qmi
control-link = $E2E_TMP/q.qmi

[modem.q.mux.1]
apn = internet
ip-type = ipv4v6
routes = 198.51.100.1/32

[modem.m]
device = sim:$E2E_TMP/m.sock
control = mbim
control-link = $E2E_TMP/m.mbim

[modem.m.mux.1]
apn = internet
ip-type = ipv4v6
routes = 198.51.100.9/32
CONF

mux_state() { "${CTL[@]}" -m "$1" -j status 2>/dev/null | jq -r '.modems[0].muxes[] | select(.id == 1) | .state'; }
mux_connected() { [ "$(mux_state "$1")" = connected ]; }
addresses() { ip -n "$NS_HOST" -j addr show "$1.1" | jq -c '[.[0].addr_info[] | select(.scope == "global") | .local + "/" + (.prefixlen | tostring)] | sort'; }

# One qmapd per run: its log is appended to qmapd.log after a marker line, so that a run's
# own lines can be told apart (run_log).
RUN=0
start_qmapd_run() {
	RUN=$((RUN + 1))
	echo "==== soak: run $RUN" >>"$E2E_TMP/qmapd.log"
	GLIBC_TUNABLES=$QMAPD_TUNABLES ip netns exec "$NS_HOST" "$QMAPD" -c "$E2E_TMP/qmapd.conf" \
		--dbus-address "$BUS" \
		--stats-file "$E2E_TMP/qmapd.stats" >>"$E2E_TMP/qmapd.log" 2>&1 &
	QMAPD_PID=$!
	E2E_PIDS+=($QMAPD_PID)
	event "start run=$RUN pid=$QMAPD_PID"
	RSS_MIN=
	wait_for 20 "qmapd's control socket" ctl_answers
}
ctl_answers() { "${CTL[@]}" status >/dev/null 2>&1; }
run_log() { awk -v r="==== soak: run $1" '$0 == r { on = 1; next } /^==== soak: run / { on = 0 } on' "$E2E_TMP/qmapd.log"; }

# refresh PID FILE: have the process write its counters (SIGUSR1) and wait for the file.
refresh() {
	for _ in 1 2 3; do
		rm -f "$2"
		kill -USR1 "$1" 2>/dev/null || return 1
		for _ in $(seq 50); do
			[ -s "$2" ] && return 0
			sleep 0.1
		done
	done
	return 1
}
simstat() { refresh "${SIM_PID[$1]}" "$E2E_TMP/sim-$1.stats" && counter_of "$E2E_TMP/sim-$1.stats" "$2=" "$2"; }

start_qmapd_run
for m in q m; do wait_for 60 "$m.1 connected" mux_connected $m; done
wait_for 20 "two modems on the bus" modem_count_is 2
echo "ok: both modems up, their config muxes connected: q.1 $(addresses q), m.1 $(addresses m)"
START=$(date +%s)
END=$((START + DURATION))
printf '%s\n' "START=$START" "END=$END" "JUDGE_RSS=$JUDGE_RSS" "SLACK_RSS_KB=$SLACK_RSS_KB" \
	"SLACK_FDS=$SLACK_FDS" "SLACK_CIDS=$SLACK_CIDS" >"$E2E_TMP/params"

# ---- traffic through the config muxes ----
cat >"$E2E_TMP/echo.py" <<'PY'
# server ADDRESS READY-FILE: echo every connection. client ADDRESS STOP-FILE LOG: one
# connection carrying a line and its echo every 0.1 s; "T n" per echo, "T connect N" and
# "T break N REASON"; a connection silent for 30 s counts as broken and a new one starts.
import os, select, socket, sys, threading, time
mode, addr = sys.argv[1], sys.argv[2]
if mode == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 5001)); s.listen(8); open(sys.argv[3], "w").close()
    def echo(c):
        try:
            while (d := c.recv(4096)):
                c.sendall(d)
        except OSError:
            pass
        c.close()
    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()
stop, log = sys.argv[3], open(sys.argv[4], "a", buffering=1)
conns = 0
while not os.path.exists(stop):
    try:
        c = socket.create_connection((addr, 5001), timeout=5)
    except OSError as e:
        log.write("%.3f nocon %s\n" % (time.time(), e.__class__.__name__)); time.sleep(1); continue
    conns += 1
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.settimeout(30)
    log.write("%.3f connect %d %s\n" % (time.time(), conns, c.getsockname()[0]))
    n, buf = 0, b""
    try:
        while not os.path.exists(stop):
            n += 1
            c.sendall(b"%d\n" % n)
            while b"\n" not in buf:
                d = c.recv(4096)
                if not d:
                    raise ConnectionError("closed")
                buf += d
            line, buf = buf.split(b"\n", 1)
            if int(line) != n:
                raise ConnectionError("echo %s for %d" % (line, n))
            log.write("%.3f %d\n" % (time.time(), n))
            time.sleep(0.1)
    except (OSError, ConnectionError) as e:
        log.write("%.3f break %d %s\n" % (time.time(), conns, str(e) or e.__class__.__name__))
    c.close()
PY
declare -A TCP_PID PING_PID
for m in q m; do
	in_net python3 "$E2E_TMP/echo.py" server "${TARGET[$m]}" "$E2E_TMP/server-$m.up" &
	E2E_PIDS+=($!)
	wait_for 5 "the echo server behind $m" test -e "$E2E_TMP/server-$m.up"
	in_host python3 "$E2E_TMP/echo.py" client "${TARGET[$m]}" "$E2E_TMP/stop" \
		"$E2E_TMP/tcp-$m.log" >"$E2E_TMP/tcp-$m.out" 2>&1 &
	TCP_PID[$m]=$!
	E2E_PIDS+=($!)
	ip netns exec "$NS_HOST" ping -D -n -i 0.2 -W 1 "${TARGET[$m]}" >"$E2E_TMP/ping-$m.log" 2>&1 &
	PING_PID[$m]=$!
	E2E_PIDS+=($!)
done
first_echo() { grep -q "^[0-9.]* 1$" "$E2E_TMP/tcp-$1.log" 2>/dev/null; }
for m in q m; do wait_for 10 "TCP echoes through $m.1" first_echo $m; done

# ---- D-Bus: NetworkManager's connect and disconnect, per modem ----
MM_BUS=(gdbus call --system --timeout 60 -d org.freedesktop.ModemManager1)
# sleep_until T: until T, or the end of the soak if that comes first.
sleep_until() {
	local t=$1
	[ "$t" -le "$END" ] || t=$END
	sleep $((t - $(date +%s))) 2>/dev/null || true # nothing when t has passed
}
dbus_cycles() {
	local m=$1 n=0 t0 t0f modem out bearer b iface addr prefix result
	set +e # a failed step is a result to log, not the end of the loop
	while [ "$(date +%s)" -lt "$END" ]; do
		t0=$(date +%s) t0f=$(date +%s.%N)
		n=$((n + 1))
		result=ok
		modem=$(modem_of "$m.$([ $m = q ] && echo qmi || echo mbim)" 2>/dev/null)
		if [ -z "$modem" ]; then
			result="no-modem"
		elif ! out=$("${MM_BUS[@]}" -o "$modem" -m org.freedesktop.ModemManager1.Modem.Simple.Connect \
			"{'apn': <'internet'>, 'ip-type': <uint32 4>}" 2>&1); then
			result="connect-failed $(grep -o 'org.freedesktop.[A-Za-z0-9.]*Error[A-Za-z0-9.]*' <<<"$out" | head -n1)"
		else
			bearer=$(sed -n "s/^(objectpath '\(.*\)',)$/\1/p" <<<"$out")
			b=$(mmj -b "$bearer" 2>/dev/null) || b='{}'
			iface=$(jq -r '.bearer.status.interface // empty' <<<"$b")
			addr=$(jq -r '.bearer["ipv4-config"].address // empty' <<<"$b")
			prefix=$(jq -r '.bearer["ipv4-config"].prefix // empty' <<<"$b")
			if [ -z "$iface" ] || [ -z "$addr" ]; then
				result="no-ip4config"
			# replace, not add: a bearer kept across a restart (its Disconnect fell into
			# the restart) comes back connected, its device with the address still on.
			elif ! { ip -n "$NS_HOST" addr replace "$addr/$prefix" dev "$iface" &&
				ip -n "$NS_HOST" link set "$iface" up &&
				ip -n "$NS_HOST" route replace "${DBUS_TARGET[$m]}/32" dev "$iface"; } 2>/dev/null; then
				result="no-device $iface"
			elif ! ip netns exec "$NS_HOST" ping -c 1 -W 3 -I "$iface" "${DBUS_TARGET[$m]}" >/dev/null 2>&1 &&
				! ip netns exec "$NS_HOST" ping -c 1 -W 3 -I "$iface" "${DBUS_TARGET[$m]}" >/dev/null 2>&1; then
				result="no-ping $iface"
			fi
			sleep_until $((t0 + CYCLE_EVERY / 2))
			if ! out=$("${MM_BUS[@]}" -o "$modem" -m org.freedesktop.ModemManager1.Modem.Simple.Disconnect \
				"objectpath '$bearer'" 2>&1); then
				[ "$result" = ok ] &&
					result="disconnect-failed $(grep -o 'org.freedesktop.[A-Za-z0-9.]*Error[A-Za-z0-9.]*' <<<"$out" | head -n1)"
			elif [ -n "$iface" ]; then
				for _ in $(seq 50); do
					ip -n "$NS_HOST" link show "$iface" >/dev/null 2>&1 || break
					sleep 0.1
				done
				ip -n "$NS_HOST" link show "$iface" >/dev/null 2>&1 && [ "$result" = ok ] &&
					result="device-left $iface"
			fi
		fi
		echo "$t0f $(date +%s.%N) $n $result" >>"$E2E_TMP/dbus-$m.log"
		sleep_until $((t0 + CYCLE_EVERY))
	done
}
drops() {
	local next=$((START + DROP_EVERY / 2))
	set +e
	while [ "$next" -lt "$END" ]; do
		sleep_until "$next"
		kill -USR2 "$SIM_Q" "$SIM_M" && event drop
		next=$((next + DROP_EVERY))
	done
}
dbus_cycles q & E2E_PIDS+=($!)
dbus_cycles m & E2E_PIDS+=($!)
drops & E2E_PIDS+=($!)
LOADS=("${E2E_PIDS[@]: -3}")

# ---- restarts, as the unit's ExecStop= for systemd's restart job ----
# mux1_sessions MODEM: sessions the modem started on the config's mux so far, from its log (its
# counters count the D-Bus bearer's too, which a restart rightly ends).
mux1_sessions() {
	case $1 in
	q) grep -c "session up on mux 1," "$E2E_TMP/sim-q.log" || true ;;
	m) grep -c "mbim session 0: activated" "$E2E_TMP/sim-m.log" || true ;;
	esac
}
# mbim_mux1_ended: times the host ended the MBIM modem's session 0 (m.1's): deactivated, or
# the function closed (a CLOSE, an OPEN while open) while sessions were up. The D-Bus
# bearer's session 1 is ended by every cycle's Disconnect, so the modem's counter
# mbim_sessions_ended_by_host would not tell.
mbim_mux1_ended() {
	grep -Ec "mbim session 0: deactivated by the host|mbim: .*: closed, [1-9][0-9]* session" \
		"$E2E_TMP/sim-m.log" || true
}
RESTARTS=0
restart_qmapd() {
	local t0 t1 rc=0 started_q clients_q started_m ended_m opens_m reopens_m addr_q addr_m
	local q_started m_started before before_m
	started_q=$(mux1_sessions q) clients_q=$(simstat q qmi_clients)
	started_m=$(mux1_sessions m) ended_m=$(mbim_mux1_ended)
	opens_m=$(simstat m mbim_opens) reopens_m=$(simstat m mbim_reopens)
	addr_q=$(addresses q) addr_m=$(addresses m)
	# Only a session that is up can be taken over: one a drop just ended is started anew.
	mux_connected q && before=yes || before=no
	mux_connected m && before_m=yes || before_m=no
	t0=$(date +%s.%N)
	event "restart-begin run=$RUN"
	kill -USR2 "$QMAPD_PID"
	for _ in $(seq 200); do not_running "$QMAPD_PID" && break; sleep 0.1; done
	not_running "$QMAPD_PID" || fail "restart $((RESTARTS + 1)): qmapd still runs 20 s after SIGUSR2"
	wait "$QMAPD_PID" || rc=$?
	[ "$rc" = 0 ] || fail "restart $((RESTARTS + 1)): qmapd exited with status $rc after SIGUSR2"
	local pids=() p
	for p in "${E2E_PIDS[@]}"; do [ "$p" = "$QMAPD_PID" ] || pids+=("$p"); done
	E2E_PIDS=("${pids[@]}") # a dead pid of ours must not be signalled at the clean-up
	start_qmapd_run
	for m in q m; do wait_for 60 "$m.1 connected after restart $((RESTARTS + 1))" mux_connected $m; done
	t1=$(date +%s.%N)
	RESTARTS=$((RESTARTS + 1))
	q_started=$(($(mux1_sessions q) - started_q))
	m_started=$(($(mux1_sessions m) - started_m))
	event "restart-end n=$RESTARTS secs=$(python3 -c "print('%.2f' % ($t1 - $t0))")" \
		"q_up_before=$before q_taken_over=$(run_log $RUN | grep -c '(q\.1): .* session of the last run taken over' || true)" \
		"q_mux1_started=$q_started q_clients=$clients_q/$(simstat q qmi_clients)" \
		"q_addr_same=$([ "$(addresses q)" = "$addr_q" ] && echo yes || echo no)" \
		"m_up_before=$before_m m_taken_over=$(run_log $RUN | grep -c '(m\.1): .*MBIM session [0-9]* of the last run taken over' || true)" \
		"m_mux1_started=$m_started m_mux1_ended=$(($(mbim_mux1_ended) - ended_m))" \
		"m_opens=$(($(simstat m mbim_opens) - opens_m)) m_reopens=$(($(simstat m mbim_reopens) - reopens_m))" \
		"m_addr_same=$([ "$(addresses m)" = "$addr_m" ] && echo yes || echo no)"
	tail -n 1 "$EVENTS" | cut -d' ' -f2-
}

# ---- samples ----
proc_sample() { # PID: "pid rss fds threads", or "- - - -"
	local p=$1
	if [ -n "$p" ] && [ -r "/proc/$p/status" ]; then
		echo "$p $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status") $(ls "/proc/$p/fd" | wc -l)" \
			"$(awk '/^Threads:/ {print $2}' "/proc/$p/status")"
	else
		echo "- - - -"
	fi
}
field() { # CMD...: its output as one column of a sample, "-" if it has none
	local v
	v=$("$@" 2>/dev/null) || true
	echo "${v:--}"
}
proxy_pid() { # NAME: the one in qmapd's namespace
	local p
	for p in $(ip netns pids "$NS_HOST"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && echo "$p" && return 0
	done
	return 0
}
# qmapd's counters whose name says error: their sum per modem, and the largest few by name.
qmapd_errors() {
	refresh "$QMAPD_PID" "$E2E_TMP/qmapd.stats" || { echo "-"; return 0; }
	cp "$E2E_TMP/qmapd.stats" "$E2E_TMP/stats/qmapd-$RUN-$(($(date +%s) - START)).stats"
	tr ' ' '\n' <"$E2E_TMP/qmapd.stats" | grep -E '(error|malformed|invalid|bad|unknown|fail)[a-z_]*=[1-9]' |
		sort | uniq -c | awk '{ printf "%s%s", sep, $2; sep = "," } END { if (!NR) printf "0" }'
}
SAMPLES=$E2E_TMP/samples
mkdir "$E2E_TMP/stats" # every sample's counters of qmapd, for a look afterwards (SOAK_KEEP)
echo "t run qmapd_pid qmapd_rss qmapd_fds qmapd_threads" \
	"qmi_proxy_pid qmi_proxy_rss qmi_proxy_fds qmi_proxy_threads" \
	"mbim_proxy_pid mbim_proxy_rss mbim_proxy_fds mbim_proxy_threads" \
	"q_cids q_started m_started q_mux m_mux qmapd_errors qmapd_rss_min" >"$SAMPLES"
# qmapd's lowest RSS since the sample before, read every second (RSS_MIN; empty after a start).
RSS_MIN=
read_rss_min() {
	local v
	v=$(awk '/^VmRSS:/ {print $2}' "/proc/$QMAPD_PID/status" 2>/dev/null) || return 0
	[ -n "$v" ] || return 0
	if [ -z "$RSS_MIN" ] || [ "$v" -lt "$RSS_MIN" ]; then RSS_MIN=$v; fi
}
sample() {
	local t=$(($(date +%s) - START))
	echo "$t $RUN $(proc_sample "$QMAPD_PID") $(proc_sample "$(proxy_pid qmi-proxy)")" \
		"$(proc_sample "$(proxy_pid mbim-proxy)") $(field simstat q qmi_clients)" \
		"$(field simstat q qmi_sessions_started) $(field simstat m mbim_sessions_started)" \
		"$(field mux_state q) $(field mux_state m) $(field qmapd_errors) ${RSS_MIN:--}" >>"$SAMPLES"
	RSS_MIN=
	tail -n 1 "$SAMPLES"
}

head -n 1 "$SAMPLES"
sample
next_sample=$((START + SAMPLE_EVERY)) next_restart=$((START + RESTART_EVERY))
while [ "$(date +%s)" -lt "$END" ]; do
	sleep 1
	read_rss_min
	if not_running "$QMAPD_PID"; then
		rc=0
		wait "$QMAPD_PID" || rc=$?
		fail "qmapd (run $RUN) died with status $rc"
	fi
	now=$(date +%s)
	# A restart too close to the end would leave a run without samples: the last segment
	# is as long as the others.
	if [ "$now" -ge "$next_restart" ] && [ $((END - now)) -ge $((RESTART_EVERY / 2)) ]; then
		restart_qmapd
		next_restart=$((next_restart + RESTART_EVERY))
	fi
	if [ "$(date +%s)" -ge "$next_sample" ]; then
		sample
		next_sample=$((next_sample + SAMPLE_EVERY))
	fi
done
for pid in "${LOADS[@]}"; do wait "$pid" 2>/dev/null || true; done

# ---- the end: everything still up, then a stop ----
for m in q m; do wait_for 60 "$m.1 connected at the end" mux_connected $m; done
for m in q m; do
	in_host ping -c 3 -i 0.2 -W 2 "${TARGET[$m]}" >/dev/null || fail "no ping through $m.1 at the end"
done
touch "$E2E_TMP/stop"
for m in q m; do wait_for 40 "the TCP client through $m.1 to finish" not_running "${TCP_PID[$m]}"; done
for m in q m; do kill -INT "${PING_PID[$m]}" 2>/dev/null || true; done
sleep 0.5
stop_qmapd
refresh "$SIM_Q" "$E2E_TMP/sim-q.stats" || fail "the QMI sim wrote no counters"
refresh "$SIM_M" "$E2E_TMP/sim-m.stats" || fail "the MBIM sim wrote no counters"
expect_eq "QMI client ids in the modem after the stop" "$(counter_of "$E2E_TMP/sim-q.stats" qmi_clients= qmi_clients)" 0
grep -E "GLib.*(CRITICAL|WARNING)|ERROR: (Address|Leak)Sanitizer|runtime error:" "$E2E_TMP/qmapd.log" &&
	fail "qmapd printed GLib warnings or sanitizer reports"

# ---- report and judgement ----
for m in q m; do cp "$E2E_TMP/sim-$m.stats" "$E2E_TMP/sim-$m.final"; done
report "$E2E_TMP"
# SOAK_KEEP=DIR keeps a passed run's logs too (E2E_KEEP keeps a failed one's).
if [ -n "${SOAK_KEEP:-}" ]; then
	mkdir -p "$SOAK_KEEP" && cp -r "$E2E_TMP" "$SOAK_KEEP/" &&
		echo "soak: logs kept in $SOAK_KEEP/$(basename "$E2E_TMP")"
fi
echo "soak-restart: passed ($((DURATION / 60)) min $((DURATION % 60)) s)"
