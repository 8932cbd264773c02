#!/bin/bash
# SPDX-License-Identifier: MIT
# "Data roaming off" as NetworkManager's gsm.home-only sends it, with mmcli (from the Debian
# package, unpacked) on a private bus, on a QMI and an MBIM modem: qmapd-sim registers roaming
# while its --roaming-file exists (NAS roaming indicator; REGISTER_STATE roaming). A connect
# with allow-roaming=no is refused while roaming with ModemManager's Core.Unauthorized; at
# home it connects and its bearer says roaming forbidden; when the modem starts roaming that
# bearer is disconnected while one with allow-roaming=yes stays up. The sims tell the switch
# as modems do (QMI NAS Serving System indication to the clients that registered for it,
# MBIM REGISTER_STATE indication) and qmapd polls only every 30 s, so seeing each switch
# within 10 s proves the indications work. Needs root; namespaces it creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need /usr/libexec/mbim-proxy libmbim-proxy
need_mmcli
e2e_setup_bus

ROAM="$E2E_TMP/roaming"
touch "$ROAM"
SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25 --mux 2=192.0.2.130/25)
write_qmi_mbim_config

start_sim --apn internet --roaming-file "$ROAM"
start_mbim_sim --mux 1=203.0.113.2/25 --mux 2=203.0.113.130/25 --apn internet \
	--roaming-file "$ROAM"
start_qmapd_dbus "$E2E_TMP/qmapd.conf"
find_qmi_mbim_modems
reg() { mmj -m "$1" | jq -r '.modem["3gpp"]["registration-state"]'; }
reg_is() { [ "$(reg "$1")" = "$2" ]; }
connected() { mmj -b "$1" | jq -r .bearer.status.connected; }
connected_is() { [ "$(connected "$1")" = "$2" ]; }
bearer_with() { # modem, allow-roaming as the bearer's properties say it (allowed|forbidden)
	local b
	for b in $(mmj -m "$1" | jq -r '.modem.generic.bearers[]'); do
		if [ "$(mmj -b "$b" | jq -r '.bearer.properties.roaming')" = "$2" ]; then
			echo "$b"
		fi
	done
}

for X in "$Q" "$M"; do
	wait_for 10 "modem $X registered roaming" reg_is "$X" roaming
	rc=0
	mm -m "$X" --simple-connect="apn=internet,ip-type=ipv4,allow-roaming=no" >/dev/null 2>&1 ||
		rc=$?
	[ "$rc" -ne 0 ] || fail "modem $X: allow-roaming=no connected while roaming"
	expect_eq "modem $X: allow-roaming=no while roaming" "$(last_error)" \
		org.freedesktop.ModemManager1.Error.Core.Unauthorized
done
echo "ok: allow-roaming=no refused while roaming (Core.Unauthorized)"

rm -f "$ROAM"
for X in "$Q" "$M"; do
	wait_for 10 "modem $X registered home" reg_is "$X" home
	mm -m "$X" --simple-connect="apn=internet,ip-type=ipv4,allow-roaming=no" >/dev/null ||
		fail "modem $X: allow-roaming=no at home: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	mm -m "$X" --simple-connect="apn=internet,ip-type=ipv4,allow-roaming=yes" >/dev/null ||
		fail "modem $X: allow-roaming=yes at home: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	HOME_ONLY=$(bearer_with "$X" forbidden)
	ROAMER=$(bearer_with "$X" allowed)
	[ -n "$HOME_ONLY" ] && [ -n "$ROAMER" ] ||
		fail "modem $X: bearers home-only '$HOME_ONLY' roaming '$ROAMER'"
	expect_eq "modem $X home-only bearer connected" "$(connected "$HOME_ONLY")" yes
	expect_eq "modem $X roaming bearer connected" "$(connected "$ROAMER")" yes
done
echo "ok: at home both connect; BearerProperties allow-roaming reported"

touch "$ROAM"
for X in "$Q" "$M"; do
	wait_for 10 "modem $X registered roaming again" reg_is "$X" roaming
	HOME_ONLY=$(bearer_with "$X" forbidden)
	ROAMER=$(bearer_with "$X" allowed)
	wait_for 10 "modem $X: the allow-roaming=no bearer dropped" connected_is "$HOME_ONLY" no
	expect_eq "modem $X: the allow-roaming=yes bearer stays" "$(connected "$ROAMER")" yes
done
echo "ok: starting to roam drops the allow-roaming=no bearer, not the other"

if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log"; then
	fail "qmapd printed GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "e2e-dbus-roaming: passed"
