#!/bin/bash
# SPDX-License-Identifier: MIT
# Messaging (SMS) with mmcli (from the Debian package, unpacked) on a private bus, on a QMI
# modem: a message created with --messaging-create-sms and sent with -s N --send reaches
# qmapd-sim (WMS Raw Send) as an SMS-SUBMIT whose number and text this script decodes itself
# (TS 23.040, GSM 7-bit unpacked here, not by qmapd's codec). Needs root; namespaces it
# creates and deletes.
source "$(dirname "$0")/../support/lib.sh" || exit 1

need /usr/libexec/qmi-proxy libqmi-proxy
need dbus-daemon dbus
need jq jq
need python3 python3
MMCLI=$(need_unpacked modemmanager usr/bin/mmcli) || exit $?
e2e_setup
chmod 755 "$E2E_TMP"

start_system_bus
mm() { "$MMCLI" "$@" 2>>"$E2E_TMP/mmcli.stderr"; }
mmj() { mm -J "$@"; }

OUTBOX="$E2E_TMP/outbox"
SIM_ALWAYS_CONNECTED=no
start_sim --apn internet --sms-outbox "$OUTBOX"
cat >"$E2E_TMP/qmapd.conf" <<CONF
[device]
control = qmi
control-socket = $E2E_TMP/control
discovery = no

[dbus]
enabled = no

[modem.q]
device = sim:$E2E_TMP/sim.sock
control-link = $E2E_TMP/q.qmi
CONF
start_qmapd_dbus "$E2E_TMP/qmapd.conf"

modem_count_is() { [ "$(mmj -L | jq -r '."modem-list" | length')" -eq "$1" ]; }
wait_for 20 "the modem on the bus" modem_count_is 1
Q=$(mmj -L | jq -r '."modem-list"[0]')
has_messaging() { mmj -m "$Q" --messaging-status >/dev/null; }
wait_for 20 "the modem's Messaging interface" has_messaging
sms_list() { mmj -m "$Q" --messaging-list-sms | jq -r '."modem.messaging.sms"[]'; }

# Sent: the PDU the "network" got says what was asked.
TEXT="Hello from qmapd 42"
NUMBER="+15550100987"
out=$(mm -m "$Q" --messaging-create-sms="text='$TEXT',number='$NUMBER'") ||
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
echo "ok: created, sent; the network got an SMS-SUBMIT to $NUMBER with the text"

if grep -E "GLib.*(CRITICAL|WARNING)" "$E2E_TMP/qmapd.log" "$E2E_TMP/mmcli.stderr"; then
	fail "GLib warnings"
fi
stop_process qmapd "$QMAPD_PID"
echo "e2e-dbus-sms: passed"
