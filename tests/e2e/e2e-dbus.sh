#!/bin/bash
# SPDX-License-Identifier: MIT
# ModemManager's D-Bus API, driven by ModemManager's own client: mmcli (from the Debian
# package, unpacked, never installed) against qmapd + qmapd-sim on a private bus with a
# system-bus-like policy. Checks: mmcli -L, -m and -i show the sim's identity and state; a mux
# of the config is a bearer; --simple-connect creates a multiplexed bearer whose device and
# Ip4Config are the simulated network's, and traffic passes once the address is put on the
# device as NetworkManager would (qmapd does not); qmapctl status shows the bearer; a wrong
# APN fails with ModemManager's MobileEquipment error name; a network-side drop leaves the
# bearer disconnected with its ConnectionError and the modem registered; --simple-disconnect
# removes the mux; a second modem appears on the bus when its sim starts and leaves when it
# stops; everyone reads, a caller outside qmapd.conf's admin-group cannot connect or
# disconnect (Core.Unauthorized from qmapd, counted), one in it (primary or supplementary
# group) can. Also: two bearers on two APNs at once (CreateBearer + Bearer.Connect), each its
# own multiplexed device, ping and iperf3 on both together; Simple.Connect with the settings
# of a connected bearer returns it; an invalid call is counted in qmapctl stats;
# Enable(false) stops every data session (the config's mux too, as the sim sees) and
# Enable(true) brings the config's back as the config's (a reload of a file without it
# removes it); Simple.Connect on a modem still searching waits for its registration;
# mmcli -m 0 prints nothing on stderr. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need gdbus libglib2.0-bin
need iperf3 iperf3
need_mmcli
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup
chmod 755 "$E2E_TMP"
CTL=(in_host "$QMAPCTL" -s "$E2E_TMP/control")

start_system_bus

declare -A SIM_ARGS=(
	[a]="--net-address 198.51.100.1/32 --net-address 198.51.100.2/32 --net-address 198.51.100.4/32 --mux 1=192.0.2.2/25 --mux 2=203.0.113.2/24,2001:db8:2::2/64 --mux 3=203.0.113.130/25"
	# Just plugged: searching for the network for a while, as a modem does after power-up.
	[b]="--net-address 198.51.100.3/32 --mux 1=192.0.2.130/32 --register-delay 6000"
)
declare -A SIM_PIDS=()
start_modem_sim() {
	local name=$1
	# shellcheck disable=SC2086 # the arguments are words
	start_named_sim "$name" ${SIM_ARGS[$name]} --apn internet --apn ims \
		--stats-file "$E2E_TMP/sim-$name.stats"
	SIM_PIDS[$name]=$NAMED_SIM_PID
}

cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control
discovery = no
admin-group = nogroup

[dbus]
enabled = no

[modem.a]
device = sim:$E2E_TMP/a.sock
control-link = $E2E_TMP/a.qmi

[modem.a.mux.1]
apn = internet
ip-type = ipv4
routes = 198.51.100.1/32

[modem.b]
device = sim:$E2E_TMP/b.sock
control-link = $E2E_TMP/b.qmi
CONF

start_modem_sim a
# [dbus] enabled = no in the file; the option wins, as the tests need.
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

modem_paths() { mmj -L | jq -r '."modem-list"[]'; }
modem_count_is() { [ "$(modem_paths | wc -l)" -eq "$1" ]; }
wait_for 20 "one modem on the bus" modem_count_is 1
MODEM=$(modem_paths)
expect_eq "modem path" "$MODEM" /org/freedesktop/ModemManager1/Modem/0
mm -L | tee -a "$E2E_TMP/transcript"
# mmcli -m 0 as a user types it: nothing at all on stderr (no GLib warnings or criticals).
"$MMCLI" -m 0 >/dev/null 2>"$E2E_TMP/mmcli-m0.stderr" || fail "mmcli -m 0 failed"
[ ! -s "$E2E_TMP/mmcli-m0.stderr" ] || fail "mmcli -m 0 wrote to stderr: $(cat "$E2E_TMP/mmcli-m0.stderr")"
modem_state() { mmj -m "$MODEM" | jq -r '.modem.generic.state'; }
state_is() { [ "$(modem_state)" = "$1" ]; }
# The config's mux connects by itself: the modem is connected.
wait_for 30 "modem connected (the config's mux)" state_is connected
mm -m "$MODEM" | tee -a "$E2E_TMP/transcript"
m=$(mmj -m "$MODEM")
expect_eq "Manufacturer" "$(jq -r .modem.generic.manufacturer <<<"$m")" qmapd-sim
expect_eq "Model" "$(jq -r .modem.generic.model <<<"$m")" "Simulated QMAP modem"
expect_eq "EquipmentIdentifier" "$(jq -r '.modem.generic["equipment-identifier"]' <<<"$m")" 350000000000006
expect_eq "3GPP IMEI" "$(jq -r '.modem["3gpp"].imei' <<<"$m")" 350000000000006
expect_eq "Plugin" "$(jq -r .modem.generic.plugin <<<"$m")" qmapd
# DeviceIdentifier as ModemManager computes it (mm_create_device_identifier(), ATI and ATI1
# "" for QMI): SHA-1 of the USB IDs (none over the sim) and IMEI, revision, model,
# manufacturer without white space or non-ASCII bytes; reimplemented here, not qmapd's code.
want_ident=$(jq -r '.modem.generic | [."equipment-identifier", .revision, .model,
	.manufacturer] | map(if . == "--" then "" else . end) | .[]' <<<"$m" | python3 -c '
import hashlib, sys
h = hashlib.sha1()
for s in sys.stdin.read().split("\n"):
    h.update(bytes(c for c in s.encode() if c < 0x80 and c not in b" \t\n\v\f\r"))
print(h.hexdigest())')
expect_eq "DeviceIdentifier (ModemManager's)" \
	"$(jq -r '.modem.generic["device-identifier"]' <<<"$m")" "$want_ident"
expect_eq "PrimaryPort" "$(jq -r '.modem.generic["primary-port"]' <<<"$m")" a.qmi
jq -e '.modem.generic.ports | index("a.1 (net)")' <<<"$m" >/dev/null ||
	fail "the config's mux device is not a NET port: $(jq -c .modem.generic.ports <<<"$m")"
expect_eq "3GPP registration" "$(jq -r '.modem["3gpp"]["registration-state"]' <<<"$m")" home
expect_eq "bearers before connecting" "$(jq -r '.modem.generic.bearers | length' <<<"$m")" 1
CONFIG_BEARER=$(jq -r '.modem.generic.bearers[0]' <<<"$m")
b=$(mmj -b "$CONFIG_BEARER")
expect_eq "the config's mux as a bearer: interface" "$(jq -r .bearer.status.interface <<<"$b")" a.1
expect_eq "the config's mux as a bearer: connected" "$(jq -r .bearer.status.connected <<<"$b")" yes
expect_eq "the config's mux as a bearer: address" "$(jq -r '.bearer["ipv4-config"].address' <<<"$b")" 192.0.2.2
SIM=$(jq -r '.modem.generic.sim' <<<"$m")
expect_eq "Modem.Sim" "$SIM" /org/freedesktop/ModemManager1/SIM/0
mm -i "$SIM" | tee -a "$E2E_TMP/transcript"
i=$(mmj -i "$SIM")
expect_eq "SIM ICCID (DMS UIM)" "$(jq -r '.sim.properties.iccid' <<<"$i")" 8999001000000000006
expect_eq "SIM IMSI (DMS UIM)" "$(jq -r '.sim.properties.imsi' <<<"$i")" 001010000000006
expect_eq "SIM active" "$(jq -r '.sim.properties.active' <<<"$i")" yes
echo "ok: mmcli -L / -m / -i show the sim's identity; the config's mux is a connected bearer"

# Simple.Connect: a new multiplexed bearer on mux 2; returns once the session is up.
t0=$(date +%s%N)
out=$(mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4v6") ||
	fail "mmcli --simple-connect failed: $(tail -3 "$E2E_TMP/mmcli.stderr")"
echo "$out" | tee -a "$E2E_TMP/transcript"
echo "mmcli --simple-connect (ipv4v6) returned after $((($(date +%s%N) - t0) / 1000000)) ms" |
	tee -a "$E2E_TMP/transcript"
BEARER=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]' | grep -vx "$CONFIG_BEARER")
[ -n "$BEARER" ] || fail "no new bearer after --simple-connect"
mm -b "$BEARER" | tee -a "$E2E_TMP/transcript"
b=$(mmj -b "$BEARER")
expect_eq "bearer connected" "$(jq -r .bearer.status.connected <<<"$b")" yes
expect_eq "bearer multiplexed" "$(jq -r .bearer.status.multiplexed <<<"$b")" yes
IFACE=$(jq -r .bearer.status.interface <<<"$b")
expect_eq "bearer interface" "$IFACE" a.2
expect_eq "Ip4Config method" "$(jq -r '.bearer["ipv4-config"].method' <<<"$b")" static
ADDR4=$(jq -r '.bearer["ipv4-config"].address' <<<"$b")
PREFIX4=$(jq -r '.bearer["ipv4-config"].prefix' <<<"$b")
expect_eq "Ip4Config address (the sim's for mux 2)" "$ADDR4/$PREFIX4" 203.0.113.2/24
expect_eq "Ip6Config address" "$(jq -r '.bearer["ipv6-config"].address' <<<"$b")" 2001:db8:2::2
expect_eq "modem state" "$(modem_state)" connected
# qmapd put nothing on the device: that is the client's job.
[[ $(ip -n "$NS_HOST" -o addr show dev "$IFACE") != *203.0.113.2* ]] ||
	fail "qmapd configured $IFACE itself"
st=$("${CTL[@]}" -j status)
expect_eq "qmapctl status: the D-Bus bearer's mux" \
	"$(jq -r '.modems[] | select(.name == "a") | .muxes[] | select(.id == 2) | .state + " " + .["managed-by"]' <<<"$st")" \
	"connected dbus"
# As NetworkManager would: the address and a route from Ip4Config.
ip -n "$NS_HOST" addr add "$ADDR4/$PREFIX4" dev "$IFACE"
ip -n "$NS_HOST" link set "$IFACE" up
ip -n "$NS_HOST" route add 198.51.100.2/32 dev "$IFACE"
in_host ping -c 3 -i 0.2 -W 2 -I "$IFACE" 198.51.100.2 >/dev/null || fail "ping through $IFACE"
echo "ok: --simple-connect: $BEARER on $IFACE with $ADDR4/$PREFIX4; ping through it"

# Simple.Connect with the settings of a connected bearer returns that bearer (ModemManager's
# Simple.Connect looks the bearer up by its properties): no second bearer, no second session.
mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4v6" >/dev/null ||
	fail "--simple-connect again: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "bearers after the same --simple-connect again" \
	"$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers | length')" 2
expect_eq "the bearer after the same --simple-connect again" \
	"$(mmj -b "$BEARER" | jq -r .bearer.status.interface)" "$IFACE"

# A second bearer at once on another APN, the way ModemManager's API offers it: CreateBearer,
# then Bearer.Connect. Its own mux and device; traffic on both at once.
mm -m "$MODEM" --create-bearer="apn=ims,ip-type=ipv4" | tee -a "$E2E_TMP/transcript" ||
	fail "mmcli --create-bearer: $(tail -2 "$E2E_TMP/mmcli.stderr")"
BEARER2=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]' | grep -vx -e "$CONFIG_BEARER" -e "$BEARER")
[ -n "$BEARER2" ] || fail "no bearer after --create-bearer"
expect_eq "created bearer before Connect" "$(mmj -b "$BEARER2" | jq -r .bearer.status.connected)" no
mm -b "$BEARER2" --connect | tee -a "$E2E_TMP/transcript" ||
	fail "mmcli -b $BEARER2 --connect: $(tail -2 "$E2E_TMP/mmcli.stderr")"
mm -b "$BEARER2" | tee -a "$E2E_TMP/transcript"
b=$(mmj -b "$BEARER2")
IFACE2=$(jq -r .bearer.status.interface <<<"$b")
expect_eq "second bearer interface" "$IFACE2" a.3
[ "$IFACE2" != "$IFACE" ] || fail "both bearers on $IFACE"
expect_eq "second bearer connected" "$(jq -r .bearer.status.connected <<<"$b")" yes
expect_eq "second bearer multiplexed" "$(jq -r .bearer.status.multiplexed <<<"$b")" yes
expect_eq "first bearer still multiplexed" "$(mmj -b "$BEARER" | jq -r .bearer.status.multiplexed)" yes
expect_eq "second bearer APN" "$(jq -r .bearer.properties.apn <<<"$b")" ims
ADDR2="$(jq -r '.bearer["ipv4-config"].address' <<<"$b")/$(jq -r '.bearer["ipv4-config"].prefix' <<<"$b")"
expect_eq "second bearer Ip4Config" "$ADDR2" 203.0.113.130/25
st=$("${CTL[@]}" -j status)
expect_eq "qmapctl status: the second D-Bus bearer's mux" \
	"$(jq -r '.modems[] | select(.name == "a") | .muxes[] | select(.id == 3) | .state + " " + .["managed-by"]' <<<"$st")" \
	"connected dbus"
# As NetworkManager would, from Ip4Config; each bearer reaches its own server address.
ip -n "$NS_HOST" addr add "$ADDR2" dev "$IFACE2"
ip -n "$NS_HOST" link set "$IFACE2" up
ip -n "$NS_HOST" route add 198.51.100.4/32 dev "$IFACE2"
in_host ping -c 5 -i 0.2 -W 2 -I "$IFACE" 198.51.100.2 >/dev/null &
p1=$!
in_host ping -c 5 -i 0.2 -W 2 -I "$IFACE2" 198.51.100.4 >/dev/null &
p2=$!
wait "$p1" || fail "ping through $IFACE (while $IFACE2 pings too)"
wait "$p2" || fail "ping through $IFACE2 (while $IFACE pings too)"
in_net iperf3 -s -D -B 198.51.100.2 -p 5201 --pidfile "$E2E_TMP/iperf3-1.pid" --logfile "$E2E_TMP/iperf3-1.log"
in_net iperf3 -s -D -B 198.51.100.4 -p 5202 --pidfile "$E2E_TMP/iperf3-2.pid" --logfile "$E2E_TMP/iperf3-2.log"
wait_for 5 "the iperf3 servers" test -s "$E2E_TMP/iperf3-1.pid" -a -s "$E2E_TMP/iperf3-2.pid"
E2E_PIDS+=("$(cat "$E2E_TMP/iperf3-1.pid")" "$(cat "$E2E_TMP/iperf3-2.pid")")
mux_bytes() {
	"${CTL[@]}" -j status |
		jq ".modems[] | select(.name == \"a\") | .muxes[] | select(.id == $1) | .counters | .[\"rx-bytes\"] + .[\"tx-bytes\"]"
}
before2=$(mux_bytes 2) before3=$(mux_bytes 3)
# Both bearers at once, uplink then downlink (-R), 3 s each.
for dir in up down; do
	r=()
	[ "$dir" = down ] && r=(-R)
	in_host iperf3 -c 198.51.100.2 -p 5201 -B "${ADDR4%/*}" -t 3 -J "${r[@]}" >"$E2E_TMP/iperf-1-$dir.json" &
	p1=$!
	in_host iperf3 -c 198.51.100.4 -p 5202 -B "${ADDR2%/*}" -t 3 -J "${r[@]}" >"$E2E_TMP/iperf-2-$dir.json" &
	p2=$!
	wait "$p1" || fail "iperf3 $dir through $IFACE: $(tail -c 300 "$E2E_TMP/iperf-1-$dir.json")"
	wait "$p2" || fail "iperf3 $dir through $IFACE2: $(tail -c 300 "$E2E_TMP/iperf-2-$dir.json")"
	for n in 1 2; do
		bps=$(jq '.end.sum_received.bits_per_second | floor' "$E2E_TMP/iperf-$n-$dir.json")
		iface=$IFACE
		[ "$n" = 2 ] && iface=$IFACE2
		echo "figure: iperf3 $dir through bearer $n ($iface), both at once: $((bps / 1000000)) Mbit/s" |
			tee -a "$E2E_TMP/transcript"
		[ "$bps" -ge 10000000 ] || fail "iperf3 $dir through $iface: $bps bit/s, under 10 Mbit/s"
	done
	# Two backlogged muxes of one modem share the uplink: neither gets under a quarter.
	if [ "$dir" = up ]; then
		up1=$(jq '.end.sum_received.bits_per_second | floor' "$E2E_TMP/iperf-1-up.json")
		up2=$(jq '.end.sum_received.bits_per_second | floor' "$E2E_TMP/iperf-2-up.json")
		for bps in "$up1" "$up2"; do
			[ $((bps * 4)) -ge $((up1 + up2)) ] ||
				fail "uploads at once through $IFACE and $IFACE2 unfair: $up1 vs $up2 bit/s"
		done
		echo "ok: the two uploads at once share the uplink ($((up1 / 1000000)) / $((up2 / 1000000)) Mbit/s)"
	fi
done
# The traffic went through each bearer's own mux.
expect_ge "mux 2 bytes during iperf3" "$(($(mux_bytes 2) - before2))" 10000000
expect_ge "mux 3 bytes during iperf3" "$(($(mux_bytes 3) - before3))" 10000000
mm -b "$BEARER2" --disconnect >/dev/null || fail "mmcli -b $BEARER2 --disconnect"
! ip -n "$NS_HOST" link show "$IFACE2" >/dev/null 2>&1 || fail "$IFACE2 stays after Bearer.Disconnect"
mm -m "$MODEM" --delete-bearer="$BEARER2" >/dev/null || fail "mmcli --delete-bearer"
echo "ok: two multiplexed bearers at once on two APNs ($IFACE, $IFACE2), ping and iperf3 on both; Bearer.Disconnect, DeleteBearer"

# Who may do what: the bus policy lets everyone send, qmapd lets everyone read and checks
# every state-changing call against the rule of the control socket (root or admin-group,
# here nogroup, as the primary or a supplementary group).
need setpriv util-linux
dbus_stat() { "${CTL[@]}" -j stats | jq -r ".dbus$1 // 0"; }
UNAUTHORIZED=org.freedesktop.ModemManager1.Error.Core.Unauthorized
# nobody in a group that is not nogroup, and in no other.
as_outsider() { setpriv --reuid=65534 --regid=65533 --clear-groups "$MMCLI" "$@"; }
# nobody with nogroup as the primary group / only as a supplementary group.
as_admin_primary() { setpriv --reuid=65534 --regid=65534 --clear-groups "$MMCLI" "$@"; }
as_admin_supplementary() { setpriv --reuid=65534 --regid=65533 --groups=65534 "$MMCLI" "$@"; }
for who in as_outsider as_admin_primary as_admin_supplementary; do
	$who -J -m "$MODEM" | jq -e '.modem.generic.state' >/dev/null || fail "$who: mmcli -m refused"
	$who -J -L | jq -e '."modem-list" | length == 1' >/dev/null || fail "$who: mmcli -L refused"
	$who -J -b "$BEARER" | jq -e '.bearer.status.connected == "yes"' >/dev/null ||
		fail "$who: mmcli -b refused"
done
unauth0=$(dbus_stat ".errors[\"$UNAUTHORIZED\"]")
rc=0
out=$(as_outsider -m "$MODEM" --simple-connect="apn=ims" 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "a caller outside the admin group connected"
[[ $out == *$UNAUTHORIZED*"membership in group 'nogroup'"* ]] || fail "outsider's connect: $out"
rc=0
out=$(as_outsider -b "$BEARER" --disconnect 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "a caller outside the admin group disconnected a bearer"
[[ $out == *$UNAUTHORIZED* ]] || fail "outsider's Bearer.Disconnect: $out"
rc=0
out=$(as_outsider -m "$MODEM" --simple-disconnect 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "a caller outside the admin group ran Simple.Disconnect"
[[ $out == *$UNAUTHORIZED* ]] || fail "outsider's Simple.Disconnect: $out"
expect_eq "the bearer after the outsider's disconnects" \
	"$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" yes
expect_eq "qmapctl stats: Unauthorized counted" "$(dbus_stat ".errors[\"$UNAUTHORIZED\"]")" \
	$((unauth0 + 3))
grep -q "dbus: org.freedesktop.ModemManager1.Modem.Simple.Connect from .*$UNAUTHORIZED" \
	"$E2E_TMP/qmapd.log" || fail "the refusal is not in qmapd's log"
echo "ok: a caller outside the admin group reads but cannot connect or disconnect ($UNAUTHORIZED)"

# The admin group: connect a bearer (mux 3, the ims APN) and disconnect and delete it, once
# with nogroup as the primary group and once as a supplementary group only.
for who in as_admin_primary as_admin_supplementary; do
	out=$($who -m "$MODEM" --simple-connect="apn=ims,ip-type=ipv4" 2>&1) ||
		fail "$who: --simple-connect refused: $out"
	ADMIN_BEARER=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]' |
		grep -vx -e "$CONFIG_BEARER" -e "$BEARER")
	[ "$(wc -l <<<"$ADMIN_BEARER")" -eq 1 ] && [ -n "$ADMIN_BEARER" ] ||
		fail "$who: not one new bearer: $ADMIN_BEARER"
	expect_eq "$who: the admin's bearer connected" \
		"$(mmj -b "$ADMIN_BEARER" | jq -r .bearer.status.connected)" yes
	out=$($who -b "$ADMIN_BEARER" --disconnect 2>&1) || fail "$who: Bearer.Disconnect refused: $out"
	expect_eq "$who: the admin's bearer after disconnect" \
		"$(mmj -b "$ADMIN_BEARER" | jq -r .bearer.status.connected)" no
	out=$($who -m "$MODEM" --delete-bearer="$ADMIN_BEARER" 2>&1) ||
		fail "$who: DeleteBearer refused: $out"
	expect_eq "$who: Simple.Disconnect of an unknown bearer is answered, not refused" \
		"$(setpriv --reuid=65534 --regid=65534 --clear-groups gdbus call --system \
			-d org.freedesktop.ModemManager1 -o "$MODEM" \
			-m org.freedesktop.ModemManager1.Modem.Simple.Disconnect \
			/org/freedesktop/ModemManager1/Bearer/99 2>&1 | grep -o 'Error\.Core\.[A-Za-z]*')" \
		Error.Core.NotFound
done
expect_eq "the root's bearer untouched by the admins" \
	"$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" yes
echo "ok: the admin group (primary or supplementary) connects, disconnects and deletes bearers"

# A wrong APN: ModemManager's error name for 3GPP cause 27.
rc=0
out=$(mm -m "$MODEM" --simple-connect="apn=nosuchapn,ip-type=ipv4" 2>&1) || rc=$?
tail -2 "$E2E_TMP/mmcli.stderr" | tee -a "$E2E_TMP/transcript"
[ "$rc" -ne 0 ] || fail "a wrong APN connected"
grep -q "org.freedesktop.ModemManager1.Error.MobileEquipment.MissingOrUnknownApn" \
	"$E2E_TMP/mmcli.stderr" || fail "wrong APN: not MissingOrUnknownApn: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "modem state after the failed connect" "$(modem_state)" connected
echo "ok: wrong APN -> MobileEquipment.MissingOrUnknownApn"

# Invalid input is refused with ModemManager's error, counted, and qmapd carries on.
INVALID_ARGS=org.freedesktop.ModemManager1.Error.Core.InvalidArgs
invalid0=$(dbus_stat .invalid)
named0=$(dbus_stat ".errors[\"$INVALID_ARGS\"]")
rc=0
gdbus call --system -d org.freedesktop.ModemManager1 -o "$MODEM" \
	-m org.freedesktop.ModemManager1.Modem.Simple.Connect "{'apn': <42>}" \
	>/dev/null 2>"$E2E_TMP/gdbus.err" || rc=$?
[ "$rc" -ne 0 ] || fail "an apn of type int was taken"
grep -q "org.freedesktop.ModemManager1.Error.Core.InvalidArgs" "$E2E_TMP/gdbus.err" ||
	fail "apn=<42>: not Core.InvalidArgs: $(cat "$E2E_TMP/gdbus.err")"
expect_eq "qmapctl stats: dbus invalid after one invalid call" "$(dbus_stat .invalid)" $((invalid0 + 1))
expect_eq "qmapctl stats: dbus errors by name (InvalidArgs)" \
	"$(dbus_stat ".errors[\"$INVALID_ARGS\"]")" $((named0 + 1))
rc=0
gdbus call --system -d org.freedesktop.ModemManager1 -o "$MODEM" \
	-m org.freedesktop.ModemManager1.Modem.Simple.Disconnect /org/freedesktop/ModemManager1/Bearer/99 \
	>/dev/null 2>"$E2E_TMP/gdbus.err" || rc=$?
grep -q "org.freedesktop.ModemManager1.Error.Core.NotFound" "$E2E_TMP/gdbus.err" ||
	fail "Disconnect of an unknown bearer: not Core.NotFound: $(cat "$E2E_TMP/gdbus.err")"
"${CTL[@]}" stats | sed -n '/ModemManager D-Bus API/,$p' | tee -a "$E2E_TMP/transcript"
echo "ok: invalid requests get ModemManager's errors, counted in qmapctl stats"

# Enable(false): ModemManager disconnects every bearer of a modem it disables; qmapd does, and
# stops the config's muxes too (a disabled modem has no data session). Enable(true) starts
# the config's muxes again; the client's bearers wait for the client.
sim_stat() {
	rm -f "$E2E_TMP/sim-a.stats"
	kill -USR1 "${SIM_PIDS[a]}"
	wait_for 5 "sim a's counters" test -s "$E2E_TMP/sim-a.stats"
	sed -n "s/^$1=//p" "$E2E_TMP/sim-a.stats"
}
expect_eq "the sim's connected muxes before disabling" "$(sim_stat qmi_muxes_connected)" 2
mm -m "$MODEM" -d | tee -a "$E2E_TMP/transcript" || fail "mmcli -d: $(tail -2 "$E2E_TMP/mmcli.stderr")"
wait_for 10 "modem disabled" state_is disabled
expect_eq "the D-Bus bearer after disabling" "$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" no
! ip -n "$NS_HOST" link show "$IFACE" >/dev/null 2>&1 || fail "$IFACE stays on a disabled modem"
a_muxes() { "${CTL[@]}" -j status | jq -r '.modems[] | select(.name == "a") | .muxes | length'; }
expect_eq "qmapctl status: muxes of the disabled modem" "$(a_muxes)" 0
sim_idle() { [ "$(sim_stat qmi_muxes_connected)" = 0 ]; }
wait_for 10 "no session left at the sim" sim_idle
rc=0
out=$(mm -b "$BEARER" --connect 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "Bearer.Connect on a disabled modem connected"
grep -q "org.freedesktop.ModemManager1.Error.Core.WrongState" "$E2E_TMP/mmcli.stderr" ||
	fail "Bearer.Connect on a disabled modem: not Core.WrongState: $(tail -2 "$E2E_TMP/mmcli.stderr")"
mm -m "$MODEM" -e | tee -a "$E2E_TMP/transcript" || fail "mmcli -e: $(tail -2 "$E2E_TMP/mmcli.stderr")"
wait_for 30 "modem connected again (the config's mux)" state_is connected
CONFIG_BEARER=
for path in $(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]'); do
	[ "$(mmj -b "$path" | jq -r .bearer.status.interface)" = a.1 ] && CONFIG_BEARER=$path
done
[ -n "$CONFIG_BEARER" ] && [ "$CONFIG_BEARER" != "$BEARER" ] ||
	fail "no bearer for the config's mux after enabling"
expect_eq "the D-Bus bearer after enabling (the client reconnects it)" \
	"$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" no
expect_eq "the sim's connected muxes after enabling" "$(sim_stat qmi_muxes_connected)" 1
# The client connects again: the same bearer, as ModemManager finds it by its settings.
mm -m "$MODEM" --simple-connect="apn=internet,ip-type=ipv4v6" >/dev/null ||
	fail "--simple-connect after enabling: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "the D-Bus bearer reconnected" "$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" yes
echo "ok: Enable(false) stops every session (bearers, the config's mux; the sim sees none); Enable(true) brings the config's back"

# The config's mux, started again by Enable(true), is still the config's: a reload of a file
# without it removes it, and its bearer leaves the bus; the D-Bus bearer's mux (added at
# runtime) stays.
sed -i '/^\[modem\.a\.mux\.1\]$/,/^$/d' "$E2E_TMP/qmapd.conf"
! grep -q 'modem\.a\.mux\.1' "$E2E_TMP/qmapd.conf" || fail "the test could not edit its config"
"${CTL[@]}" reload >/dev/null || fail "qmapctl reload"
muxes_a=$("${CTL[@]}" -j status | jq -r '[.modems[] | select(.name == "a") | .muxes[].id] | sort | join(" ")')
expect_eq "qmapctl status: modem a's muxes after the reload" "$muxes_a" 2
bearers=$(mmj -m "$MODEM" | jq -r '.modem.generic.bearers[]')
! grep -qx "$CONFIG_BEARER" <<<"$bearers" || fail "$CONFIG_BEARER stays after the reload"
grep -qx "$BEARER" <<<"$bearers" || fail "the D-Bus bearer $BEARER went away"
bearer_gone() { ! mm -b "$CONFIG_BEARER" >/dev/null 2>&1; }
wait_for 5 "$CONFIG_BEARER unexported" bearer_gone
echo "ok: after Enable(false)/Enable(true) the config's mux is still the config's: a reload without it removes it"

# The network drops every session: the D-Bus bearer stays down with the reason (its client
# decides about reconnecting) and the modem is registered.
kill -USR2 "${SIM_PIDS[a]}"
bearer_connected() { [ "$(mmj -b "$BEARER" | jq -r .bearer.status.connected)" = "$1" ]; }
wait_for 10 "the D-Bus bearer disconnected by the drop" bearer_connected no
err=$(gdbus call --system -d org.freedesktop.ModemManager1 -o "$BEARER" \
	-m org.freedesktop.DBus.Properties.Get org.freedesktop.ModemManager1.Bearer ConnectionError)
echo "ConnectionError: $err" | tee -a "$E2E_TMP/transcript"
[[ $err == *org.freedesktop.ModemManager1.Error.MobileEquipment.RegularDeactivation* ]] ||
	fail "ConnectionError after the drop: $err"
wait_for 10 "modem registered after the drop" state_is registered
echo "ok: network drop -> bearer Connected=false, ConnectionError set, modem registered"

# Disconnect: the mux goes; again is fine (idempotent).
mm -m "$MODEM" --simple-disconnect >/dev/null || fail "mmcli --simple-disconnect"
mm -m "$MODEM" --simple-disconnect >/dev/null || fail "second --simple-disconnect"
! ip -n "$NS_HOST" link show "$IFACE" >/dev/null 2>&1 || fail "$IFACE still exists after disconnect"
expect_eq "modem state after disconnect" "$(modem_state)" registered
echo "ok: --simple-disconnect removes the mux, twice is fine"

# A second modem appears on the bus with its sim, and leaves with it.
gdbus monitor --system -d org.freedesktop.ModemManager1 -o /org/freedesktop/ModemManager1 \
	>"$E2E_TMP/monitor.log" 2>&1 &
E2E_PIDS+=($!)
sleep 0.5
start_modem_sim b
wait_for 20 "two modems on the bus" modem_count_is 2
# Modem b was just plugged and still searches for the network: Simple.Connect waits for the
# registration (up to 60 s, as ModemManager) instead of failing.
MODEM_B=$(modem_paths | grep -vx "$MODEM")
state_b=$(mmj -m "$MODEM_B" | jq -r .modem.generic.state)
echo "modem b on the bus: $state_b" | tee -a "$E2E_TMP/transcript"
[[ $state_b == searching || $state_b == enabled ]] || fail "modem b is $state_b, not searching yet"
# Simple.Disconnect("/") cancels a connect that waits, as ModemManager's does.
"$MMCLI" -m "$MODEM_B" --simple-connect="apn=internet,ip-type=ipv4" >/dev/null 2>"$E2E_TMP/cancelled.err" &
cancelled_pid=$!
wait_for 5 "the connect waiting" sh -c "grep -c 'waits up to 60 s for registration' '$E2E_TMP/qmapd.log' | grep -qx 1"
mm -m "$MODEM_B" --simple-disconnect >/dev/null || fail "--simple-disconnect while a connect waits"
rc=0
wait "$cancelled_pid" || rc=$?
[ "$rc" -ne 0 ] || fail "the waiting connect was not cancelled"
grep -q "org.freedesktop.ModemManager1.Error.Core.Cancelled" "$E2E_TMP/cancelled.err" ||
	fail "the cancelled connect: $(cat "$E2E_TMP/cancelled.err")"
state_b=$(mmj -m "$MODEM_B" | jq -r .modem.generic.state)
[[ $state_b == searching || $state_b == enabled ]] || fail "modem b is $state_b after the cancel, not searching"
echo "ok: Simple.Disconnect(\"/\") cancels a connect waiting for registration (Core.Cancelled)"
t0=$(date +%s%N)
mm -m "$MODEM_B" --simple-connect="apn=internet,ip-type=ipv4" >/dev/null ||
	fail "--simple-connect on a searching modem: $(tail -2 "$E2E_TMP/mmcli.stderr")"
waited=$((($(date +%s%N) - t0) / 1000000))
echo "figure: --simple-connect on a searching modem returned connected after $waited ms" |
	tee -a "$E2E_TMP/transcript"
grep -q "waits up to 60 s for registration" "$E2E_TMP/qmapd.log" || fail "the connect did not wait"
BEARER_B=$(mmj -m "$MODEM_B" | jq -r '.modem.generic.bearers[0]')
expect_eq "modem b's bearer" "$(mmj -b "$BEARER_B" | jq -r '.bearer.status.connected + " " + .bearer.status.interface')" "yes b.1"
expect_eq "modem b registered and connected" "$(mmj -m "$MODEM_B" | jq -r .modem.generic.state)" connected
echo "ok: Simple.Connect on a modem still searching waits for the registration, then connects"
kill -TERM "${SIM_PIDS[b]}"
wait_for 20 "the second modem gone from the bus" modem_count_is 1
wait_for 5 "InterfacesRemoved" grep -q "InterfacesRemoved" "$E2E_TMP/monitor.log"
grep -q "InterfacesAdded (objectpath '/org/freedesktop/ModemManager1/Modem/1'" "$E2E_TMP/monitor.log" ||
	fail "no InterfacesAdded for Modem/1: $(head -c 600 "$E2E_TMP/monitor.log")"
echo "ok: a modem appears (InterfacesAdded) and leaves (InterfacesRemoved) with its sim"

# Every method of every exported interface answers: a reply or a ModemManager error
# (Core.Unsupported for what qmapd does not do), never UnknownMethod. Last, as Enable(false),
# Simple.Disconnect('/') and the like act on modem a.
MMI=org.freedesktop.ModemManager1
CALL_ALL=("$(dirname "$0")/mm-call-every-method.py")
"${CALL_ALL[@]}" "$BEARER" $MMI.Bearer >"$E2E_TMP/methods.log" 2>&1 &&
	"${CALL_ALL[@]}" "$SIM" $MMI.Sim >>"$E2E_TMP/methods.log" 2>&1 &&
	"${CALL_ALL[@]}" /org/freedesktop/ModemManager1 $MMI >>"$E2E_TMP/methods.log" 2>&1 &&
	"${CALL_ALL[@]}" "$MODEM" $MMI.Modem.Modem3gpp $MMI.Modem.Simple $MMI.Modem.Signal \
		$MMI.Modem.Time $MMI.Modem \
		>>"$E2E_TMP/methods.log" 2>&1 ||
	fail "a method answered other than ModemManager does: $(grep -E 'FAIL|Traceback' -A3 "$E2E_TMP/methods.log")"
grep -E "^$MMI" "$E2E_TMP/methods.log" | sed 's/^/figure: /' | tee -a "$E2E_TMP/transcript"
grep -q "^$MMI.Modem.Modem3gpp: .* [1-9][0-9]* Unsupported" "$E2E_TMP/methods.log" ||
	fail "Modem3gpp's methods do not answer Unsupported"
# The SIM's codes are implemented (SendPin, SendPuk, EnablePin, ChangePin): only
# SetPreferredNetworks answers Unsupported.
grep -q "^$MMI.Sim: .* 1 Unsupported" "$E2E_TMP/methods.log" ||
	fail "Sim: not only SetPreferredNetworks Unsupported: $(grep "^$MMI.Sim:" "$E2E_TMP/methods.log")"
echo "ok: every exported method answers a reply or a ModemManager error"
# The coverage of ModemManager's API read from the sources agrees with what the bus answered.
"$(dirname "$0")/mm-api-coverage.py" --check-log "$E2E_TMP/methods.log" "$(dirname "$0")/../.." \
	>"$E2E_TMP/coverage.md" || fail "API coverage: $(grep FAIL "$E2E_TMP/coverage.md")"
sed 's/^/figure: /' "$E2E_TMP/coverage.md" | tee -a "$E2E_TMP/transcript"
echo "ok: the API coverage read from the sources matches the methods' answers"

# Neither mmcli nor qmapd complained (GLib's warnings and criticals).
if grep -E "CRITICAL|WARNING" "$E2E_TMP/mmcli.stderr"; then
	fail "mmcli printed GLib warnings"
fi
if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
refresh() { rm -f "$E2E_TMP/qmapd.stats"; kill -USR1 "$QMAPD_PID"; wait_for 5 counters test -s "$E2E_TMP/qmapd.stats"; }
refresh
grep "^dbus:" "$E2E_TMP/qmapd.stats"
stop_process qmapd "$QMAPD_PID"
echo "---- transcript"
cat "$E2E_TMP/transcript"
echo "PASS"
