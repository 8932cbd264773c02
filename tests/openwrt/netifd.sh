#!/bin/bash
# SPDX-License-Identifier: MIT
# The netifd protocol handler (openwrt/qmapd/files/qmapd.proto) under OpenWrt's real
# netifd and ubusd: an /etc/config/network with a `proto qmapd` interface, qmapd and
# qmapd-sim behind it. `ubus call network.interface.wan up` brings the session up, status
# shows the addresses, routes and DNS servers the simulated network assigned, ping goes
# through, a network drop is seen by netifd as a lost connection and the session comes back,
# `down` removes the mux; a bad option, a missing modem and a refused APN reach netifd as
# interface errors. qmapd runs on the qmapd.conf the init script's qmapd_write_conf makes of
# an /etc/config/qmapd, read with OpenWrt's uci.
#
# netifd, ubusd, ubus, jshn and their shell helpers are not Debian packages: they are built
# from OpenWrt's sources into OPENWRT_HOST (default /opt/openwrt-host), laid out as
#   sbin/netifd sbin/ubusd bin/ubus bin/jshn bin/uci lib/*.so share/libubox/jshn.sh
#   lib/netifd/netifd-proto.sh lib/netifd/utils.sh lib/functions.sh lib/config/uci.sh
# Without them the test is skipped. netifd runs in the namespace of qmapd's devices and a
# mount namespace of its own where an overlay on /usr puts the handler and the helpers at
# their OpenWrt paths (/lib/netifd/proto/qmapd.sh, /lib/functions.sh,
# /usr/share/libubox/jshn.sh, /sbin/uci), /bin/sh is busybox's ash as on OpenWrt, and /var
# is the test's directory: ubus's socket and qmapd's control socket at their default paths
# (/var/run/ubus/ubus.sock, /var/run/qmapd/control). qmapd runs in that mount namespace too.
source "$(dirname "$0")/../support/lib.sh" || exit 1

OPENWRT_HOST=${OPENWRT_HOST:-/opt/openwrt-host}
for f in sbin/netifd sbin/ubusd bin/ubus bin/jshn bin/uci share/libubox/jshn.sh \
	lib/netifd/netifd-proto.sh lib/netifd/utils.sh lib/functions.sh lib/config/uci.sh; do
	[ -e "$OPENWRT_HOST/$f" ] || skip "netifd/ubus not installed under $OPENWRT_HOST (no $f)"
done
need busybox busybox
need jq jq
QMAPCTL=${QMAPCTL:-$BUILD_DIR/qmapctl}
e2e_setup

OW=$E2E_TMP/openwrt
UBUS_SOCK=$OW/var/run/ubus/ubus.sock
UBUS=("$OPENWRT_HOST/bin/ubus" -s "$UBUS_SOCK" -t 10)
CONTROL=$OW/var/run/qmapd/control
CTL=(in_host "$QMAPCTL" -s "$CONTROL")

# The network: mux 129's session gets these addresses; DNS servers are the sim's fixed ones.
SIM_MUX_ARGS=(--mux "129=192.0.2.2/25,2001:db8:1::2/64")
SIM_NET_ARGS=(--net-address 198.51.100.1/32 --net-address 2001:db8:ff::1/128 --apn internet)
SIM_ALWAYS_CONNECTED=no

# /etc/config/qmapd: qmapd as a router runs it, with no sessions of its own (netifd asks
# for them); the modem has a name, which the network interface's device option gives.
write_qmapd_uci() {
	mkdir -p "$OW/config"
	cat >"$OW/config/qmapd" <<-CONF
	config qmapd 'main'
		option enabled '1'
		option verbose '1'
		option discovery '0'
		list exclude 'usb:1199:9071'
		list exclude 'usb-serial:0123456789AB'

	config modem 'lte'
		option device 'sim:$E2E_TMP/sim.sock'
		option control 'qmi'
		option control_link '$E2E_TMP/qmi0'

	config dbus 'dbus'
		option enabled 'no'
	CONF
}

# /etc/config/network (README.md, "On OpenWrt", shows the same interface).
write_network() { # wan options, one per argument; device 'lte' unless one is given
	mkdir -p "$OW/config"
	{
		cat <<-CONF
		config interface 'loopback'
			option device 'lo'
			option proto 'static'
			option ipaddr '127.0.0.1'
			option netmask '255.0.0.0'

		config interface 'wan'
			option proto 'qmapd'
			option auto '0'
			option metric '10'
		CONF
		[[ " $* " == *" device "* ]] || set -- "device 'lte'" "$@"
		for o in "$@"; do printf '\toption %s\n' "$o"; done
	} >"$OW/config/network"
}

setup_openwrt_root() {
	local up=$OW/usr
	mkdir -p "$up/lib/netifd/proto" "$up/lib/config" "$up/share/libubox" "$up/bin" "$up/sbin" \
		"$OW/work" "$OW/var/run/ubus" "$OW/var/state"
	cp "$OPENWRT_HOST/lib/functions.sh" "$up/lib/functions.sh"
	cp "$OPENWRT_HOST/lib/config/uci.sh" "$up/lib/config/uci.sh"
	ln -s "$OPENWRT_HOST/bin/uci" "$up/sbin/uci"
	cp "$OPENWRT_HOST/lib/netifd/netifd-proto.sh" "$OPENWRT_HOST/lib/netifd/utils.sh" \
		"$up/lib/netifd/"
	install -m 755 "$SOURCE_DIR/openwrt/qmapd/files/qmapd.proto" "$up/lib/netifd/proto/qmapd.sh"
	cp "$OPENWRT_HOST/share/libubox/jshn.sh" "$up/share/libubox/jshn.sh"
	ln -s "$OPENWRT_HOST/bin/ubus" "$up/bin/ubus"
	ln -s "$OPENWRT_HOST/bin/jshn" "$up/bin/jshn"
	ln -s "$(readlink -f "$QMAPCTL")" "$up/bin/qmapctl"
	ln -s "$(command -v busybox)" "$up/bin/sh"
}

start_ubusd() {
	"$OPENWRT_HOST/sbin/ubusd" -s "$UBUS_SOCK" >"$E2E_TMP/ubusd.log" 2>&1 &
	E2E_PIDS+=($!)
	wait_for 5 "ubusd's socket" test -S "$UBUS_SOCK"
}

# "${IN_OPENWRT[@]}" CMD...: CMD in a mount namespace with the OpenWrt layout; every step
# execs the next, so a background job's $! is CMD's pid.
IN_OPENWRT=(unshare -m --propagation private sh -c '
	mount -t overlay overlay -o "lowerdir=/usr,upperdir=$1/usr,workdir=$1/work" /usr &&
	mount --bind "$1/var" /var && shift && exec "$@"' sh "$OW" env UCI_CONFIG_DIR="$OW/config")

# What /etc/init.d/qmapd's start_service does before it starts qmapd.
write_qmapd_conf() {
	"${IN_OPENWRT[@]}" sh -c '. /lib/functions.sh && . "$1" && mkdir -p /var/run/qmapd &&
		qmapd_write_conf /var/run/qmapd/qmapd.conf' sh "$SOURCE_DIR/openwrt/qmapd/files/qmapd.init"
}

start_openwrt_qmapd() {
	ip netns exec "$NS_HOST" "${IN_OPENWRT[@]}" "$QMAPD" -v -c /var/run/qmapd/qmapd.conf \
		--stats-file "$E2E_TMP/qmapd.stats" >"$E2E_TMP/qmapd.log" 2>&1 &
	E2E_PIDS+=($!)
	QMAPD_PID=$!
	wait_for 10 "qmapd's control socket" test -S "$CONTROL"
}

start_netifd() {
	# QMAPD_RETRY_SECONDS: the handler's pause after a failure that may pass (5 s on a router).
	ip netns exec "$NS_HOST" "${IN_OPENWRT[@]}" QMAPD_RETRY_SECONDS=1 "$OPENWRT_HOST/sbin/netifd" \
		-S -l 4 -c "$OW/config" -s /var/run/ubus/ubus.sock -r "$OW/resolv.conf.auto" \
		-h /bin/true >"$E2E_TMP/netifd.log" 2>&1 &
	E2E_PIDS+=($!)
	NETIFD_PID=$!
	wait_for 10 "netifd's network.interface.wan on ubus" \
		"${UBUS[@]}" list network.interface.wan
}

wan_status() { "${UBUS[@]}" call network.interface.wan status; }
wan_is_up() { [ "$(wan_status | jq -r .up)" = "${1:-true}" ]; }
wan_error() { wan_status | jq -r '[.errors[]?.code] | join(" ")'; }
wan_has_error() { [[ " $(wan_error) " == *" $1 "* ]]; }
reload_network() { "${UBUS[@]}" call network reload; }
mux_exists() { "${CTL[@]}" -j mux list | jq -e '.muxes[] | select(.id == 129)' >/dev/null; }

write_network "apn 'internet'" "pdptype 'ipv4v6'" "mux '129'"
write_qmapd_uci
setup_openwrt_root
write_qmapd_conf
conf=$OW/var/run/qmapd/qmapd.conf
expect_eq "[device] of /etc/config/qmapd" "$(sed -n '/^\[device\]/,/^$/p' "$conf" | grep -v '^$')" \
	"[device]
control-socket = /var/run/qmapd/control
discovery = 0
exclude = usb:1199:9071
exclude = usb-serial:0123456789AB"
expect_eq "[modem.lte] of /etc/config/qmapd" "$(sed -n '/^\[modem.lte\]/,/^$/p' "$conf" | grep -v '^$')" \
	"[modem.lte]
device = sim:$E2E_TMP/sim.sock
control = qmi
control-link = $E2E_TMP/qmi0"
grep -qx 'enabled = no' "$conf" || fail "no [dbus] enabled = no in $conf"
echo "ok: the init script turns /etc/config/qmapd into qmapd.conf"
start_sim
start_openwrt_qmapd
start_ubusd
start_netifd
wan_is_up false || fail "wan is up before ifup (auto 0)"

# ifup: the session, and what netifd shows of it.
"${UBUS[@]}" call network.interface.wan up
wait_for 40 "wan up in netifd" wan_is_up
status=$(wan_status)
dev=$(jq -r .l3_device <<<"$status")
[[ -n $dev && $dev != null ]] || fail "no l3_device in status: $status"
expect_eq "qmapd's device for mux 129" "$("${CTL[@]}" -j mux list | jq -r '.muxes[] | select(.id == 129) | .interface')" "$dev"
expect_eq "IPv4 address" "$(jq -r '."ipv4-address"[0] | "\(.address)/\(.mask)"' <<<"$status")" 192.0.2.2/25
expect_eq "IPv6 address" "$(jq -r '."ipv6-address"[0] | "\(.address)/\(.mask)"' <<<"$status")" 2001:db8:1::2/64
expect_eq "IPv4 default route" \
	"$(jq -r '[.route[] | select(.target == "0.0.0.0" and .mask == 0)] | length' <<<"$status")" 1
expect_eq "IPv6 default route" \
	"$(jq -r '[.route[] | select(.target == "::" and .mask == 0)] | length' <<<"$status")" 1
expect_eq "route metric (the metric option)" "$(jq -r .metric <<<"$status")" 10
expect_eq "DNS servers of the network" "$(jq -r '."dns-server" | join(" ")' <<<"$status")" \
	"198.51.100.53 198.51.100.54 2001:db8:ff::53 2001:db8:ff::54"
expect_eq "proto data: mux" "$(jq -r .data.mux <<<"$status")" 129
grep -q '^nameserver 198.51.100.53$' "$OW/resolv.conf.auto" ||
	fail "netifd's resolv.conf lacks the network's DNS server: $(cat "$OW/resolv.conf.auto")"
ip -n "$NS_HOST" route show default | grep -q "dev $dev .*metric 10" ||
	fail "no default route through $dev with metric 10: $(ip -n "$NS_HOST" route show default)"
ip -n "$NS_HOST" -6 route show default | grep -q "dev $dev .*metric 10" ||
	fail "no IPv6 default route through $dev with metric 10"
echo "ok: ifup wan: $dev with the network's addresses, default routes and DNS in netifd"

for target in 198.51.100.1 2001:db8:ff::1; do
	in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target through wan"
done
echo "ok: ping through the session netifd brought up"

# The network drops the session: netifd sees the connection lost, then back.
kill -USR2 "$SIM_PID"
wait_for 10 "netifd sees wan go down after the drop" wan_is_up false
grep -q "Interface 'wan' has lost the connection" "$E2E_TMP/netifd.log" ||
	fail "netifd did not log the lost connection"
wait_for 40 "wan up again after qmapd reconnected" wan_is_up
expect_eq "IPv4 address after the reconnect" \
	"$(wan_status | jq -r '."ipv4-address"[0] | "\(.address)/\(.mask)"')" 192.0.2.2/25
in_host ping -c 3 -i 0.2 -W 2 198.51.100.1 >/dev/null || fail "ping after the reconnect"
echo "ok: network drop -> wan down in netifd -> qmapd reconnects -> wan up, traffic"

# ifdown: the mux goes.
"${UBUS[@]}" call network.interface.wan down
wait_for 15 "wan down" wan_is_up false
wait_for 15 "mux 129 removed by teardown" eval '! mux_exists'
! ip -n "$NS_HOST" link show "$dev" >/dev/null 2>&1 || fail "$dev still exists after ifdown"
echo "ok: ifdown wan removes the mux"

# A bad option: an error for netifd, no restart, no mux.
write_network "pdptype 'ipv5'"
reload_network
"${UBUS[@]}" call network.interface.wan up
wait_for 15 "INVALID_OPTION on wan" wan_has_error INVALID_OPTION
grep -q "pdptype 'ipv5' is not" "$E2E_TMP/netifd.log" || fail "no log line for the bad pdptype"
sleep 2
expect_eq "setups with the bad option (restart blocked)" \
	"$(grep -c "pdptype 'ipv5' is not" "$E2E_TMP/netifd.log")" 1
wan_is_up false || fail "wan up with a bad pdptype"
! mux_exists || fail "a mux was added for a bad option"
"${UBUS[@]}" call network.interface.wan down
echo "ok: a bad option is an interface error (INVALID_OPTION), restart blocked"

# A modem qmapd does not have.
write_network "apn 'internet'" "device 'nosuchmodem'"
reload_network
"${UBUS[@]}" call network.interface.wan up
wait_for 20 "NO_DEVICE on wan" wan_has_error NO_DEVICE
grep -q "qmapd has no modem 'nosuchmodem'" "$E2E_TMP/netifd.log" || fail "no log line for the missing modem"
"${UBUS[@]}" call network.interface.wan down
wait_for 15 "wan down" wan_is_up false
echo "ok: a missing modem is an interface error (NO_DEVICE)"

# The network refuses the APN: the call fails, the mux does not stay behind.
write_network "apn 'nosuchapn'" "timeout '20'"
reload_network
"${UBUS[@]}" call network.interface.wan up
wait_for 40 "CALL_FAILED on wan" wan_has_error CALL_FAILED
"${UBUS[@]}" call network.interface.wan down
wait_for 15 "wan down" wan_is_up false
wait_for 15 "no mux left after the refused call" eval '! mux_exists'
echo "ok: a refused connect is an interface error (CALL_FAILED), no mux left"

# qmapd not running: NO_DAEMON, and setup does not hang.
stop_qmapd
write_network "apn 'internet'"
reload_network
"${UBUS[@]}" call network.interface.wan up
wait_for 20 "NO_DAEMON on wan" wan_has_error NO_DAEMON
"${UBUS[@]}" call network.interface.wan down
wait_for 15 "wan down" wan_is_up false
echo "ok: qmapd not running is an interface error (NO_DAEMON)"

stop_process netifd "$NETIFD_PID"
echo "PASS"
