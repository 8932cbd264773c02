#!/bin/bash
# SPDX-License-Identifier: MIT
# qmapd built without D-Bus (-DQMAPD_DBUS=OFF, as on a router without a system bus): the
# programs build with -Werror, qmapd links no libmm-glib and calls no GDBus function, a
# configuration asking for D-Bus is refused with the reason, `enabled = auto` runs with it
# off and `qmapctl status` says so, and the data plane (e2e-dataplane) and the QMI sessions
# with their DNS files (e2e-sessions) pass with these binaries.
# The build goes to $BUILD_DIR/nodbus (kept: a second run only relinks).
source "$(dirname "$0")/../support/lib.sh" || exit 1

need cmake cmake
need nm binutils
OFF=$BUILD_DIR/nodbus
QMAPD=$OFF/qmapd
QMAPD_SIM=$OFF/qmapd-sim
log=$(mktemp)
start=$(date +%s)
if ! { cmake -S "$SOURCE_DIR" -B "$OFF" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_C_COMPILER="${CC:-gcc}" -DQMAPD_WERROR=ON -DQMAPD_DBUS=OFF \
	-DBUILD_TESTING=OFF -DQMAPD_BUILD_TOOLS=ON &&
	cmake --build "$OFF" -j"$(nproc)" --target qmapd qmapctl qmapd-sim; } >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	rm -f "$log"
	fail "the build with -DQMAPD_DBUS=OFF"
fi
rm -f "$log"
echo "ok: built with -DQMAPD_DBUS=OFF in $(($(date +%s) - start)) s"

# Nothing of ModemManager's library, and no D-Bus call of qmapd's own (GIO itself stays:
# libqmi-glib and libmbim-glib are GIO libraries).
! ldd "$OFF/qmapd" | grep -q 'libmm-glib' || fail "qmapd links libmm-glib: $(ldd "$OFF/qmapd" | grep mm-glib)"
! nm -u "$OFF/qmapd" | grep -q 'g_dbus_' || fail "qmapd calls GDBus: $(nm -u "$OFF/qmapd" | grep g_dbus_ | head -3)"
echo "ok: no libmm-glib, no g_dbus_* in qmapd"

e2e_setup
cfg=$E2E_TMP/qmapd.conf
write_config "$cfg"
printf '\n[dbus]\nenabled = yes\n' >>"$cfg"
out=$("$OFF/qmapd" -t -c "$cfg" 2>&1) && fail "qmapd -t accepted [dbus] enabled = yes: $out"
[[ $out == *"built without D-Bus"*"enabled = yes"* ]] || fail "qmapd -t: no reason given: $out"
echo "ok: qmapd -t refuses enabled = yes: ${out##*> }"
rc=0
out=$(ip netns exec "$NS_HOST" timeout 10 "$OFF/qmapd" -c "$cfg" 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "qmapd with enabled = yes exited $rc, not 1: $out"
[[ $out == *"built without D-Bus"* ]] || fail "qmapd with enabled = yes: no reason given: $out"
rc=0
out=$("$OFF/qmapd" -t -c "$cfg" --dbus-address unix:path=/nonexistent 2>&1) || rc=$?
[[ $rc -ne 0 && $out == *"--dbus-address"* ]] || fail "--dbus-address not refused: $out"

write_config "$cfg"
out=$("$OFF/qmapd" -t -c "$cfg" 2>&1) || fail "qmapd -t refused enabled = auto: $out"
[[ $out == *"D-Bus API: off: qmapd was built without D-Bus ([dbus] enabled = auto)"* ]] ||
	fail "qmapd -t does not say D-Bus is not built: $out"
start_sim
start_qmapd "$cfg" qmap1
status=$("$OFF/qmapctl" -s "$E2E_TMP/control" status) || fail "qmapctl status"
[[ $status == *"ModemManager D-Bus API: off: qmapd was built without D-Bus"* ]] ||
	fail "qmapctl status does not show the D-Bus state: $status"
expect_eq "qmapctl status -j: dbus.built" \
	"$("$OFF/qmapctl" -s "$E2E_TMP/control" -j status | jq .dbus.built)" false
echo "ok: enabled = auto runs; qmapctl status: $(grep 'D-Bus' <<<"$status")"
stop_qmapd

for t in e2e-dataplane e2e-sessions; do
	rc=0
	BUILD_DIR=$OFF QMAPD=$OFF/qmapd QMAPD_SIM=$OFF/qmapd-sim \
		bash "$SOURCE_DIR/tests/e2e/$t.sh" >"$E2E_TMP/$t.log" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 30 "$E2E_TMP/$t.log" >&2
		fail "$t with the binaries built without D-Bus (exit $rc)"
	fi
	echo "ok: $t passed without D-Bus"
done
echo "nodbus: passed"
