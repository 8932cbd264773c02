#!/bin/bash
# SPDX-License-Identifier: MIT
# Messaging (SMS) with mmcli (from the Debian package, unpacked) on a private bus, on a QMI
# and an MBIM modem: a message created with --messaging-create-sms and sent with -s N --send reaches
# qmapd-sim (WMS Raw Send) as an SMS-SUBMIT whose number and text this script decodes itself
# (TS 23.040, GSM 7-bit unpacked here, not by qmapd's codec); a message from the network
# (qmapd-sim --sms-inbox and SIGRTMIN+2: QMI stores it in NV with a WMS Event Report,
# MBIM in its store with an SMS_MESSAGE_STORE_STATUS indication) appears in
# --messaging-list-sms with its sender and text; --messaging-delete-sms removes it from the
# bus and from the modem's storage. Location: --location-enable-3gpp, then --location-get
# shows the sim's cell (NAS Get Serving System: PLMN 001/01, TAC 1, cell id 0x1A2D1), and
# --location-enable-gps-nmea is refused; the MBIM modem (basic MBIM names no cell) has
# no Location interface. Every method of Messaging, Sms and Location answers
# a reply or a ModemManager error (mm-call-every-method.py). Needs root; namespaces it
# creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need python3 python3
need gdbus libglib2.0-bin
need_mmcli
e2e_setup_bus

SIM_ALWAYS_CONNECTED=no
SIM_MUX_ARGS=(--mux 1=192.0.2.2/25)
write_qmi_mbim_config
start_sim --apn internet --sms-inbox "$E2E_TMP/inbox-q" --sms-outbox "$E2E_TMP/outbox-q"
SIM_Q=$SIM_PID
start_mbim_sim --mux 1=203.0.113.2/25 --apn internet --sms-inbox "$E2E_TMP/inbox-m" \
	--sms-outbox "$E2E_TMP/outbox-m" --stats-file "$E2E_TMP/sim-m.stats"
SIM_M=$SIM_MBIM_PID
start_qmapd_dbus "$E2E_TMP/qmapd.conf"
find_qmi_mbim_modems

# messaging MODEM INBOX OUTBOX SIM-PID SIM-STATS: create, send, receive, delete.
messaging() {
	local X=$1 INBOX=$2 OUTBOX=$3 PID=$4 STATS=$5
	has_messaging() { mmj -m "$X" --messaging-status >/dev/null; }
	wait_for 20 "modem $X's Messaging interface" has_messaging
	sms_list() { mmj -m "$X" --messaging-list-sms | jq -r '."modem.messaging.sms"[]'; }
	# Sent: the PDU the "network" got says what was asked.
	TEXT="Hello from qmapd 42"
	NUMBER="+15550100987"
	out=$(mm -m "$X" --messaging-create-sms="text='$TEXT',number='$NUMBER'") ||
		fail "create: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	S=$(grep -o '/org/freedesktop/ModemManager1/SMS/[0-9]*' <<<"$out" | head -1)
	[ -n "$S" ] || fail "create printed no SMS path: $out"
	sms_list | grep -qx "$S" || fail "$S not in --messaging-list-sms"
	expect_eq "created SMS number" "$(mmj -s "$S" | jq -r .sms.content.number)" "$NUMBER"
	mm -s "$S" --send >/dev/null || fail "send: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	expect_eq "sent SMS state" "$(mmj -s "$S" | jq -r .sms.properties.state)" sent
	[ -s "$OUTBOX" ] || fail "qmapd-sim recorded no submitted PDU"
	decoded=$(python3 - "$(head -1 "$OUTBOX")" <<'PY'
import sys
p = bytes.fromhex(sys.argv[1])
i = 1 + p[0]                      # past the SMSC address
assert p[i] & 0x03 == 0x01, "not an SMS-SUBMIT"
vpf = p[i] >> 3 & 0x03
i += 2                            # first octet, TP-MR
nd, toa = p[i], p[i + 1]
digits = "".join("%x%x" % (b & 0xF, b >> 4) for b in p[i + 2:i + 2 + (nd + 1) // 2])[:nd]
number = ("+" if toa >> 4 & 0x7 == 1 else "") + digits
i += 2 + (nd + 1) // 2
pid, dcs = p[i], p[i + 1]
i += 2 + {0: 0, 2: 1, 1: 7, 3: 7}[vpf]
udl, ud = p[i], p[i + 1:]
assert dcs == 0, "not GSM 7-bit: %02x" % dcs
bits = int.from_bytes(ud, "little")
text = "".join(chr(bits >> (7 * k) & 0x7F) for k in range(udl))
print(number + "|" + text)
PY
	) || fail "the submitted PDU does not decode: $(head -1 "$OUTBOX")"
	expect_eq "submitted PDU (number|text)" "$decoded" "$NUMBER|$TEXT"
	echo "ok: modem $X: created, sent; the network got an SMS-SUBMIT to $NUMBER with the text"

	# Received: a widely published SMS-DELIVER, from +31641600986, "How are you?".
	echo 07911326040000F0040B911346610089F60000208062917314080CC8F71D14969741F977FD07 >"$INBOX"
	kill -RTMIN+2 "$PID"
	received() {
		local s
		for s in $(sms_list); do
			if [ "$(mmj -s "$s" | jq -r '.sms.properties["pdu-type"]')" = deliver ]; then
				echo "$s"
			fi
		done
	}
	has_received() { [ -n "$(received)" ]; }
	wait_for 20 "the message from the network on the bus" has_received
	R=$(received)
	expect_eq "received SMS text" "$(mmj -s "$R" | jq -r .sms.content.text)" "How are you?"
	expect_eq "received SMS number" "$(mmj -s "$R" | jq -r .sms.content.number)" "+31641600986"
	expect_eq "received SMS state" "$(mmj -s "$R" | jq -r .sms.properties.state)" received
	echo "ok: modem $X: an SMS from the network is listed with its sender and text"

	mm -m "$X" --messaging-delete-sms="$R" >/dev/null || fail "delete: $(tail -2 "$E2E_TMP/mmcli.stderr")"
	sms_list | grep -qx "$R" && fail "$R still listed after delete"
	# The modem's storage too: qmapd-sim counts a WMS Delete that found the message.
	sim_deleted() { kill -USR1 "$PID" && grep -qx "sms_deleted=1" "$STATS"; }
	wait_for 10 "qmapd-sim's count of deleted messages" sim_deleted
	echo "ok: modem $X: deleted from the bus and from the modem's storage"
}
messaging "$Q" "$E2E_TMP/inbox-q" "$E2E_TMP/outbox-q" "$SIM_Q" "$E2E_TMP/sim.stats"
messaging "$M" "$E2E_TMP/inbox-m" "$E2E_TMP/outbox-m" "$SIM_M" "$E2E_TMP/sim-m.stats"

# Location: the 3GPP source only, with the cell the sim serves.
expect_eq "location capabilities" \
	"$(mmj -m "$Q" --location-status | jq -r '.modem.location.capabilities | join(",")')" 3gpp-lac-ci
mm -m "$Q" --location-enable-3gpp >/dev/null || fail "enable 3gpp: $(tail -2 "$E2E_TMP/mmcli.stderr")"
expect_eq "location enabled" \
	"$(mmj -m "$Q" --location-status | jq -r '.modem.location.enabled | join(",")')" 3gpp-lac-ci
loc=$(mmj -m "$Q" --location-get | jq -c '.modem.location["3gpp"]')
expect_eq "3GPP location (mcc, mnc, lac, tac, cid)" \
	"$(jq -r '[.mcc, .mnc, .lac, .tac, .cid] | join(" ")' <<<"$loc")" "001 01 0000 000001 0001A2D1"
mm -m "$Q" --location-enable-gps-nmea >/dev/null 2>&1 && fail "GPS NMEA enabled"
mm -m "$M" --location-status >/dev/null 2>&1 && fail "the MBIM modem has a Location interface"
echo "ok: 3GPP location $loc; GPS not offered; no Location on MBIM"

# Every method answers a reply or a ModemManager error, never UnknownMethod.
MMI=org.freedesktop.ModemManager1
CALL_ALL=("$(dirname "$0")/mm-call-every-method.py")
S2=$(mm -m "$Q" --messaging-create-sms="text='x',number='+1'" | grep -o '/org/freedesktop/ModemManager1/SMS/[0-9]*' | head -1)
"${CALL_ALL[@]}" "$S2" $MMI.Sms >"$E2E_TMP/methods.log" 2>&1 &&
	"${CALL_ALL[@]}" "$Q" $MMI.Modem.Messaging $MMI.Modem.Location >>"$E2E_TMP/methods.log" 2>&1 &&
	"${CALL_ALL[@]}" "$M" $MMI.Modem.Messaging >>"$E2E_TMP/methods.log" 2>&1 ||
	fail "a method answered other than ModemManager does: $(grep -E 'FAIL|Traceback' -A3 "$E2E_TMP/methods.log")"
grep -E "^$MMI" "$E2E_TMP/methods.log" | sed 's/^/figure: /'
echo "ok: every Messaging, Sms and Location method answers"

if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log" "$E2E_TMP/mmcli.stderr"; then
	fail "GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "e2e-dbus-sms: passed"
