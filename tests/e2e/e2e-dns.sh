#!/bin/bash
# SPDX-License-Identifier: MIT
# DNS without NetworkManager: the muxes qmapd configures itself (qmapd.conf, qmapctl) hand the
# network's DNS servers to systemd-resolved, here a stand-in (fake-resolved) that owns
# org.freedesktop.resolve1 on a private bus and records the calls. Checks: SetLinkDNS gets the
# sim's IPv4 and IPv6 servers for the mux's ifindex, with "~." and DefaultRoute only for the
# mux with the default route; RevertLink when the mux is removed and when qmapd stops; without
# resolved on the bus the servers go to <control-socket dir>/resolv/IFNAME.conf, which goes
# with the mux; a resolved that refuses is counted (qmapctl stats) and the file used; a bearer
# made over D-Bus (mmcli --simple-connect) is left to its client: no call, no file. qmapd sees
# the bus socket on a read-only mount, as the hardened unit does. Needs root; namespaces it
# creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need dbus-daemon dbus
need jq jq
FAKE_RESOLVED=$BUILD_DIR/fake-resolved
[ -x "$FAKE_RESOLVED" ] || fail "no $FAKE_RESOLVED (cmake --build the fake-resolved target)"
MMCLI=$(need_unpacked modemmanager usr/bin/mmcli) || exit $?
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")
CALLS=$E2E_TMP/resolved.calls
RESOLV=$E2E_TMP/resolv
DNS4="198.51.100.53 198.51.100.54"
DNS6="2001:db8:ff::53 2001:db8:ff::54"

start_system_bus '<policy user="root">
    <allow own="org.freedesktop.resolve1"/>
    <allow send_destination="org.freedesktop.resolve1"/>
  </policy>'

# [dbus] enabled = auto|yes|no as qmapd -t and a start decide them, from the bus socket's
# existence ($DBUS_SYSTEM_BUS_ADDRESS points at this private bus, or at nothing).
mkdir "$E2E_TMP/check"
check_conf() {
	printf '[device]\ndevice = sim:%s/none.sock\ncontrol = none\ncontrol-socket = %s/check/control\n%s\n' \
		"$E2E_TMP" "$E2E_TMP" "$1" >"$E2E_TMP/check.conf"
}
qmapd_check() { # BUS-ADDRESS -> qmapd -t's output and status
	DBUS_SYSTEM_BUS_ADDRESS=$1 in_host "$QMAPD" -t -c "$E2E_TMP/check.conf" 2>&1
}
NOBUS="unix:path=$E2E_TMP/no-bus"
check_conf "[dbus]"
out=$(qmapd_check "$NOBUS") || fail "qmapd -t, enabled = auto without a bus: $out"
[[ $out == *"D-Bus API: off: no system bus at $E2E_TMP/no-bus ([dbus] enabled = auto)"* ]] ||
	fail "qmapd -t, auto without a bus: $out"
out=$(qmapd_check "$BUS") || fail "qmapd -t, auto with the bus: $out"
[[ $out == *"D-Bus API: on the system bus at $BUS ([dbus] enabled = auto)"* ]] ||
	fail "qmapd -t, auto with the bus: $out"
check_conf $'[dbus]\nenabled = yes'
rc=0
out=$(qmapd_check "$NOBUS") || rc=$?
[ "$rc" = 1 ] && [[ $out == *"D-Bus API: off: no system bus at $E2E_TMP/no-bus ([dbus] enabled = yes)"* ]] ||
	fail "qmapd -t, enabled = yes without a bus: status $rc: $out"
rc=0
out=$(DBUS_SYSTEM_BUS_ADDRESS=$NOBUS timeout 10 ip netns exec "$NS_HOST" "$QMAPD" \
	-c "$E2E_TMP/check.conf" 2>&1) || rc=$?
[ "$rc" = 1 ] && [[ $out == *"no system bus at $E2E_TMP/no-bus"* ]] ||
	fail "qmapd with enabled = yes and no bus: status $rc (expected 1): $out"
check_conf $'[dbus]\nenabled = no'
out=$(qmapd_check "$BUS") || fail "qmapd -t, enabled = no: $out"
[[ $out == *"D-Bus API: off ([dbus] enabled = no)"* ]] || fail "qmapd -t, enabled = no: $out"
check_conf "dbus = none"
out=$(qmapd_check "$BUS") || fail "qmapd -t, the deprecated key: $out"
[[ $out == *"check.conf:5: 'dbus' in [device] is deprecated"* && $out == *"D-Bus API: off ([dbus] enabled = no)"* ]] ||
	fail "qmapd -t, dbus = none in [device]: $out"
echo "ok: [dbus] enabled = auto/yes/no and the deprecated [device] dbus = decided as documented"

FAKE_PID=
start_fake_resolved() {
	: >"$CALLS"
	"$FAKE_RESOLVED" --address "$BUS" --record "$CALLS" "$@" >>"$E2E_TMP/fake-resolved.log" 2>&1 &
	FAKE_PID=$!
	E2E_PIDS+=($!)
	wait_for 5 "fake-resolved owning org.freedesktop.resolve1" grep -qx ready "$CALLS"
}
stop_fake_resolved() {
	kill -TERM "$FAKE_PID"
	wait "$FAKE_PID" 2>/dev/null || true
}
called() { grep -qx "$1" "$CALLS"; }
ifindex() { ip -n "$NS_HOST" -o link show "$1" | cut -d: -f1; }
mux_state() { "${CTL[@]}" -j status | jq -r ".modems[].muxes[] | select(.id == $1) | .state"; }
mux_is() { [ "$(mux_state "$1")" = "$2" ]; }
dns_stat() { "${CTL[@]}" -j stats | jq -r ".dns[\"$1\"]"; }

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
device = sim:$E2E_TMP/sim.sock
control = qmi
control-link = $E2E_TMP/qmi0
control-socket = $E2E_TMP/control

[dbus]
enabled = no

[mux.1]
interface = qmap1
apn = internet
ip-type = ipv4v6
default-route = yes

[mux.2]
interface = qmap2
apn = internet
ip-type = ipv4
routes = 198.51.100.2/32
CONF

SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25,2001:db8:1::2/64 --mux 2=203.0.113.2/24 --mux 3=192.0.2.130/25)
SIM_NET_ARGS+=(--apn internet)
start_fake_resolved
start_sim
# [dbus] enabled = no in the file: --dbus-address wins, and is where resolved is looked for.
# As under the unit's ProtectSystem=strict, the bus socket is on a read-only mount for qmapd:
# connecting must still work. (ip netns exec, unshare and sh exec in turn: $! is qmapd.)
ip netns exec "$NS_HOST" unshare -m --propagation private sh -c \
	'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' sh \
	"$E2E_TMP/bus" "$QMAPD" -c "$E2E_TMP/qmapd.conf" --dbus-address "$BUS" \
	--stats-file "$E2E_TMP/qmapd.stats" >"$E2E_TMP/qmapd.log" 2>&1 &
E2E_PIDS+=($!)
QMAPD_PID=$!
wait_for 10 "qmapd's control socket" test -S "$E2E_TMP/control"
awk -v p="$E2E_TMP/bus" '$5 == p && $6 ~ /^ro(,|$)/ { found = 1 } END { exit !found }' \
	"/proc/$QMAPD_PID/mountinfo" || fail "the bus socket is not read-only for qmapd"
wait_for 30 "mux 1 connected" mux_is 1 connected
wait_for 30 "mux 2 connected" mux_is 2 connected
IDX1=$(ifindex qmap1)
IDX2=$(ifindex qmap2)

# The default-route mux: every server, all queries; the other one: its servers, no queries.
wait_for 10 "SetLinkDNS for qmap1" called "SetLinkDNS $IDX1 $DNS4 $DNS6"
wait_for 10 "SetLinkDomains ~. for qmap1" called "SetLinkDomains $IDX1 ~."
wait_for 10 "SetLinkDefaultRoute yes for qmap1" called "SetLinkDefaultRoute $IDX1 yes"
wait_for 10 "SetLinkDNS for qmap2" called "SetLinkDNS $IDX2 $DNS4"
wait_for 10 "SetLinkDomains (none) for qmap2" called "SetLinkDomains $IDX2"
wait_for 10 "SetLinkDefaultRoute no for qmap2" called "SetLinkDefaultRoute $IDX2 no"
wait_for 5 "resolved-links = 2 in qmapctl stats" test "$(dns_stat resolved-links)" = 2
[ ! -e "$RESOLV/qmap1.conf" ] || fail "a DNS file although resolved took the servers"
echo "ok: SetLinkDNS/SetLinkDomains/SetLinkDefaultRoute for qmap1 ($IDX1, ~.) and qmap2 ($IDX2)"
wait_for 10 "qmapd owning ModemManager's name over the read-only socket" \
	grep -q "dbus: owning org.freedesktop.ModemManager1" "$E2E_TMP/qmapd.log"

# A bearer over D-Bus: NetworkManager (or whoever connected) does its DNS, qmapd does not.
MODEM=$(mm -J -L | jq -r '."modem-list"[0]')
[ "$MODEM" != null ] && [ -n "$MODEM" ] || fail "no modem on the bus"
mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4" >/dev/null ||
	fail "mmcli --simple-connect: $(tail -2 "$E2E_TMP/mmcli.stderr")"
BEARER=$(mm -J -m "$MODEM" | jq -r '.modem.generic.bearers[]' | while read -r b; do
	[ "$(mm -J -b "$b" | jq -r '.bearer.properties.apn // empty')" = internet ] || continue
	[ "$(mm -J -b "$b" | jq -r .bearer.status.interface)" != qmap1 ] &&
		[ "$(mm -J -b "$b" | jq -r .bearer.status.interface)" != qmap2 ] && echo "$b"
done | head -1)
[ -n "$BEARER" ] || fail "no D-Bus bearer after --simple-connect"
IFACE3=$(mm -J -b "$BEARER" | jq -r .bearer.status.interface)
IDX3=$(ifindex "$IFACE3")
expect_eq "D-Bus bearer's DNS in Ip4Config" "$(mm -J -b "$BEARER" | jq -r '.bearer["ipv4-config"].dns | join(" ")')" "$DNS4"
mm -m "$MODEM" --simple-disconnect >/dev/null || fail "mmcli --simple-disconnect"
! grep -q "^[A-Za-z]* $IDX3\b" "$CALLS" || fail "resolved was called for the D-Bus bearer $IFACE3: $(grep " $IDX3" "$CALLS")"
[ ! -e "$RESOLV/$IFACE3.conf" ] || fail "a DNS file for the D-Bus bearer $IFACE3"
echo "ok: the D-Bus bearer $IFACE3 ($IDX3) is not handed to resolved"

# Removing the mux reverts its link.
"${CTL[@]}" mux del 2 >/dev/null || fail "qmapctl mux del 2"
wait_for 10 "RevertLink for qmap2" called "RevertLink $IDX2"
! called "RevertLink $IDX1" || fail "qmap1 reverted with qmap2"
echo "ok: mux del 2 -> RevertLink $IDX2"

# No resolved on the bus: a file, world-readable, gone with the mux.
stop_fake_resolved
"${CTL[@]}" mux add 2 apn=internet ip-type=ipv4 interface=qmap2 routes=198.51.100.2/32 \
	>/dev/null || fail "qmapctl mux add 2"
wait_for 30 "mux 2 connected again" mux_is 2 connected
wait_for 10 "$RESOLV/qmap2.conf" test -f "$RESOLV/qmap2.conf"
expect_eq "nameserver lines" "$(grep -v '^#' "$RESOLV/qmap2.conf")" "$(printf 'nameserver %s\n' $DNS4)"
expect_eq "file mode" "$(command stat -c %a "$RESOLV/qmap2.conf")" 644
expect_eq "resolved-failures (absent is no failure)" "$(dns_stat resolved-failures)" 0
"${CTL[@]}" mux del 2 >/dev/null || fail "qmapctl mux del 2 (file)"
wait_for 10 "$RESOLV/qmap2.conf removed" test ! -e "$RESOLV/qmap2.conf"
echo "ok: without resolved: $RESOLV/qmap2.conf with the servers, removed with the mux"

# A resolved that refuses: counted, logged once, the file instead, the session unharmed.
start_fake_resolved --refuse
"${CTL[@]}" mux add 2 apn=internet ip-type=ipv4 interface=qmap2 routes=198.51.100.2/32 \
	>/dev/null || fail "qmapctl mux add 2 (refused)"
wait_for 30 "mux 2 connected (refused)" mux_is 2 connected
IDX2=$(ifindex qmap2)
wait_for 10 "the refused SetLinkDNS" called "SetLinkDNS $IDX2 $DNS4 refused"
wait_for 10 "$RESOLV/qmap2.conf after the refusal" test -f "$RESOLV/qmap2.conf"
expect_eq "resolved-failures" "$(dns_stat resolved-failures)" 1
"${CTL[@]}" stats | grep -Eq '^  resolved-failures: +1$' ||
	fail "qmapctl stats does not show resolved-failures: $("${CTL[@]}" stats)"
expect_eq "mux 2 state" "$(mux_state 2)" connected
grep -q "dns: systemd-resolved refused the DNS servers for qmap2" "$E2E_TMP/qmapd.log" ||
	fail "the refusal is not logged"
echo "ok: a refusing resolved: counted ($(dns_stat resolved-failures)), logged, file written"

# qmapd stopping reverts what it set and removes its files.
kill -TERM "$QMAPD_PID"
wait_for 10 "qmapd to exit" sh -c "! kill -0 $QMAPD_PID 2>/dev/null"
wait_for 5 "RevertLink for qmap1 at exit" called "RevertLink $IDX1"
[ ! -e "$RESOLV/qmap2.conf" ] || fail "$RESOLV/qmap2.conf left behind at exit"
echo "ok: qmapd's exit: RevertLink $IDX1, files removed"
