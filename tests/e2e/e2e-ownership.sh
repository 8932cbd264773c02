#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd touches only what is its own. A second qmapd with the same configuration says so in
# one line and exits 1, leaving the first one's control socket, control link and devices
# alone (qmicli -p still works). Another program's persistent TAP is neither taken over by
# `mux add` nor deleted by `mux del`. A reload is validated as a whole and applied all or
# nothing: two muxes swapping names works; a name held by a foreign device, `qmap%d`, or a
# device that cannot be created fails with the reason and leaves the previous muxes running.
# Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need qmicli libqmi-utils
need /usr/libexec/qmi-proxy libqmi-proxy
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
SIM_ALWAYS_CONNECTED=no

write_own_config() { # file if1 if2 [apn2]
	cat >"$1" <<-CONF
	[device]
	device = sim:$E2E_TMP/sim.sock
	control = qmi
	control-link = $E2E_TMP/qmi0
	control-socket = $E2E_TMP/control

	[mux.1]
	interface = $2

	[mux.2]
	interface = $3
	apn = ${4:-}
	CONF
}
ifindex() { ip -n "$NS_HOST" -j link show "$1" | jq .[0].ifindex; }
mux_if() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .interface"; }

write_own_config "$E2E_TMP/qmapd.conf" qmap1 qmap2
start_sim
start_qmapd "$E2E_TMP/qmapd.conf"
wait_for 10 "the control link" test -L "$E2E_TMP/qmi0"
wait_for 10 "qmap1 and qmap2" ip -n "$NS_HOST" link show qmap2 >/dev/null

# ---- a second instance -------------------------------------------------------------------
link=$(readlink "$E2E_TMP/qmi0")
idx1=$(ifindex qmap1)
rc=0
in_host timeout 10 "$QMAPD" -c "$E2E_TMP/qmapd.conf" >"$E2E_TMP/second.out" 2>&1 || rc=$?
expect_eq "exit code of a second qmapd" "$rc" 1
expect_eq "lines the second qmapd printed" "$(wc -l <"$E2E_TMP/second.out")" 1
grep -q "another qmapd (pid $QMAPD_PID) is running with control socket $E2E_TMP/control" \
	"$E2E_TMP/second.out" || fail "second qmapd said: $(cat "$E2E_TMP/second.out")"
expect_eq "control link after the second qmapd" "$(readlink "$E2E_TMP/qmi0")" "$link"
expect_eq "qmap1 after the second qmapd" "$(ifindex qmap1)" "$idx1"
test -S "$E2E_TMP/control" || fail "the control socket is gone"
"${CTL[@]}" status >/dev/null || fail "qmapctl status after the second qmapd"
in_host timeout 20 qmicli -p --device-open-qmi -d "$E2E_TMP/qmi0" --dms-get-ids >/dev/null ||
	fail "qmicli -p through the first qmapd's control link"
echo "ok: a second qmapd leaves the first one alone"

# ---- another program's TAP ---------------------------------------------------------------
ip -n "$NS_HOST" tuntap add mode tap name victim0
ip -n "$NS_HOST" addr add 192.0.2.77/32 dev victim0
rc=0
"${CTL[@]}" mux add 3 interface=victim0 2>"$E2E_TMP/add.err" || rc=$?
[ "$rc" -ne 0 ] || fail "mux add took over victim0"
grep -q "interface victim0 exists and was not created by qmapd" "$E2E_TMP/add.err" ||
	fail "mux add error: $(cat "$E2E_TMP/add.err")"
rc=0
"${CTL[@]}" mux del 3 2>/dev/null || rc=$?
expect_eq "exit code of mux del 3" "$rc" 10
[[ $(ip -n "$NS_HOST" -o addr show dev victim0) == *192.0.2.77/32* ]] ||
	fail "victim0 or its address is gone"
echo "ok: another program's TAP is refused and kept"

# ---- reloads -----------------------------------------------------------------------------
# Two muxes swap their names: both go before either comes back.
write_own_config "$E2E_TMP/qmapd.conf" qmap2 qmap1
"${CTL[@]}" reload || fail "reload swapping qmap1 and qmap2"
expect_eq "mux 1 after the swap" "$(mux_if 1)" qmap2
expect_eq "mux 2 after the swap" "$(mux_if 2)" qmap1
echo "ok: a reload swaps two interface names"

expect_unchanged() { # what
	expect_eq "mux 1 after $1" "$(mux_if 1)" qmap2
	expect_eq "mux 2 after $1" "$(mux_if 2)" qmap1
	ip -n "$NS_HOST" link show qmap1 >/dev/null && ip -n "$NS_HOST" link show qmap2 >/dev/null ||
		fail "a mux device is gone after $1"
}
reload_fails() { # what expected-message
	local rc=0
	"${CTL[@]}" reload 2>"$E2E_TMP/reload.err" || rc=$?
	expect_eq "exit code of reload with $1" "$rc" 1
	grep -qF "$2" "$E2E_TMP/reload.err" || fail "reload with $1 said: $(cat "$E2E_TMP/reload.err")"
	expect_unchanged "$1"
}

write_own_config "$E2E_TMP/qmapd.conf" victim0 qmap1
reload_fails "a foreign device's name" \
	"[mux.1]: interface victim0 exists and was not created by qmapd"
write_own_config "$E2E_TMP/qmapd.conf" 'qmap%d' qmap1
reload_fails "qmap%d" "invalid interface 'qmap%d' in [mux.1]"

# A device marked as ours but held open by another process: validation passes, creating it
# fails (EBUSY), and the reload undoes what it did.
in_host python3 -c '
import fcntl, os, struct, sys, time
fd = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", b"busy0", 0x0002 | 0x1000))
print("ready", flush=True)
time.sleep(60)' >"$E2E_TMP/busy.out" &
E2E_PIDS+=($!)
wait_for 5 "busy0" grep -q ready "$E2E_TMP/busy.out"
ip -n "$NS_HOST" link set busy0 alias "qmapd mux device"
write_own_config "$E2E_TMP/qmapd.conf" busy0 qmap1 internet
reload_fails "a device that cannot be created" "the previous configuration is running again"

# SIGHUP: the same refusal, in the log.
write_own_config "$E2E_TMP/qmapd.conf" victim0 qmap1
kill -HUP "$QMAPD_PID"
wait_for 5 "the refused reload in the log" \
	grep -q "reload: .*\[mux.1\]: interface victim0 exists" "$E2E_TMP/qmapd.log"
expect_unchanged "SIGHUP with a foreign device's name"
echo "ok: failed reloads say why and keep the running muxes"

stop_qmapd
ip -n "$NS_HOST" link show victim0 >/dev/null || fail "victim0 deleted when qmapd stopped"
echo "e2e-ownership: passed"
