#!/bin/bash
# SPDX-License-Identifier: MIT
# The example udev rule marks exactly the modems of qmapd's table (src/common/usb-ids.c)
# between "# BEGIN usb-ids" and "# END usb-ids", so neither can change without the other;
# every rule line of the file has udev's KEY=="value" shape, and the lines that leave a modem
# to ModemManager come before the ones that mark modems.
source "$(dirname "$0")/../support/lib.sh" || exit 1

RULES=$SOURCE_DIR/systemd/70-qmapd.rules
TABLE=$SOURCE_DIR/src/common/usb-ids.c
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# { 0x05c6, 0x9215, 4, "Quectel EC20 Mini PCIe" },
grep -oE '\{ 0x[0-9a-fA-F]{4}, 0x[0-9a-fA-F]{4}, [0-9]+, "[^"]*" \}' "$TABLE" |
	sed -E 's/\{ 0x([0-9a-fA-F]{4}), 0x([0-9a-fA-F]{4}),.*/\1:\2/' | tr 'A-F' 'a-f' |
	sort -u >"$TMP/table"
[ "$(wc -l <"$TMP/table")" -ge 10 ] || fail "read only $(wc -l <"$TMP/table") modems from $TABLE"

sed -n '/^# BEGIN usb-ids$/,/^# END usb-ids$/p' "$RULES" >"$TMP/block"
[ -s "$TMP/block" ] || fail "no '# BEGIN usb-ids' ... '# END usb-ids' block in $RULES"
line_re='^ATTRS\{idVendor\}=="([0-9a-f]{4})", ATTRS\{idProduct\}=="([0-9a-f]{4})", ENV\{QMAPD_MODEM\}="1"$'
if grep -vE '^#' "$TMP/block" | grep -vE "$line_re" | grep -q .; then
	fail "lines in the usb-ids block that do not mark one VID:PID: $(grep -vE '^#' "$TMP/block" | grep -vE "$line_re")"
fi
grep -E "$line_re" "$TMP/block" | sed -E "s/$line_re/\1:\2/" | sort >"$TMP/rules.all"
sort -u "$TMP/rules.all" >"$TMP/rules"
cmp -s "$TMP/rules.all" "$TMP/rules" ||
	fail "VID:PID marked twice in the usb-ids block: $(uniq -d "$TMP/rules.all" | tr '\n' ' ')"
missing=$(comm -23 "$TMP/table" "$TMP/rules" | tr '\n' ' ')
extra=$(comm -13 "$TMP/table" "$TMP/rules" | tr '\n' ' ')
[ -z "$missing" ] || fail "in usb-ids.c but not in 70-qmapd.rules: $missing"
[ -z "$extra" ] || fail "in 70-qmapd.rules' usb-ids block but not in usb-ids.c: $extra"

# Every rule line: comma-separated KEY[{attr}] OP "value" pairs (what udev parses).
pair='[A-Z_]+(\{[A-Za-z_]+\})?(==|!=|=|\+=|:=)"[^"]*"'
bad=$(grep -vE '^(#|$)' "$RULES" | grep -vE "^$pair(, $pair)*$" || true)
[ -z "$bad" ] || fail "not a udev rule line: $bad"
labels=$(grep -oE 'GOTO="[a-z_]+"' "$RULES" | sort -u | sed -E 's/GOTO="(.*)"/\1/')
for l in $labels; do
	grep -qx "LABEL=\"$l\"" "$RULES" || fail "GOTO=\"$l\" without its LABEL"
done

# Modems found by class are marked by class too: QMI through qmi_wwan, MBIM functions by
# their communications interface 02/0e and through cdc_mbim (discovery finds both).
for re in '^DRIVERS=="qmi_wwan", ENV\{QMAPD_MODEM\}="1"$' \
	'^SUBSYSTEM=="usb", ENV\{DEVTYPE\}=="usb_interface", ATTR\{bInterfaceClass\}=="02", ATTR\{bInterfaceSubClass\}=="0e", ENV\{QMAPD_MODEM\}="1"$' \
	'^DRIVERS=="cdc_mbim", ENV\{QMAPD_MODEM\}="1"$'; do
	grep -qE "$re" "$RULES" || fail "no class-matched line /$re/ in $RULES"
done

# Exclusion examples before the first line that marks a modem.
first_mark=$(grep -nE '^[^#].*ENV\{QMAPD_MODEM\}="1"' "$RULES" | head -1 | cut -d: -f1)
last_exclude=$(grep -nE '^#?[A-Z].*GOTO="qmapd_end"' "$RULES" | grep -vE 'ACTION==|QMAPD_MODEM' | tail -1 | cut -d: -f1)
[ -n "$last_exclude" ] || fail "no example of a modem left to ModemManager"
[ "$last_exclude" -lt "$first_mark" ] || fail "an exclusion line comes after the first marked modem"
echo "udev-rules: $(wc -l <"$TMP/table") VID:PIDs of usb-ids.c marked, $(grep -cvE '^(#|$)' "$RULES") rule lines well-formed"
