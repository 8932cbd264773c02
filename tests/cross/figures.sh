#!/bin/bash
# SPDX-License-Identifier: MIT
# figures.sh [ARCH...]: the figures of tests/bench/RESULTS.md "On routers": stripped sizes of
# qmapd and qmapctl, and qmapd's resident memory with one modem (qmapd-sim) and two muxes
# after a few pings, with and without D-Bus, per architecture (amd64 natively, mipsel and
# arm64 under qemu-user). With D-Bus, qmapd owns ModemManager's name on a private bus.
# As root; builds go to $BUILD_DIR/cross-ARCH[-nodbus] and $BUILD_DIR/native[-nodbus].
# Under qemu-user VmRSS is the qemu process: the guest's pages plus qemu itself and its
# translated code, so it is an upper bound of what the router would see; "guest's" leaves
# qemu's own mappings out (see below).
source "$(dirname "$0")/../support/lib.sh" || exit 1

# rss LABEL PREFIX QEMU QMAPD QMAPD_SIM DBUS: one measurement in namespaces of its own.
if [ "${1:-}" = rss ]; then
	label=$2 prefix=$3 qemu=$4 dbus=$7
	wrap=$(mktemp -d)
	for p in qmapd qmapd-sim; do
		bin=$5
		[ $p = qmapd-sim ] && bin=$6
		if [ "$qemu" = native ]; then
			ln -s "$bin" "$wrap/$p"
		else
			printf '#!/bin/sh\nexec env QEMU_LD_PREFIX=%s %s %s "$@"\n' "$prefix" "$qemu" "$bin" >"$wrap/$p"
			chmod +x "$wrap/$p"
		fi
	done
	QMAPD=$wrap/qmapd QMAPD_SIM=$wrap/qmapd-sim
	e2e_setup
	write_config "$E2E_TMP/qmapd.conf"
	start_sim
	if [ "$dbus" = ON ]; then
		start_system_bus
		start_qmapd_dbus "$E2E_TMP/qmapd.conf"
		wait_for 20 "ModemManager's name" grep -q 'dbus: owning' "$E2E_TMP/qmapd.log"
		for dev in qmap1 qmap2; do wait_for 10 "$dev with carrier" has_carrier "$NS_HOST" "$dev"; done
	else
		start_qmapd "$E2E_TMP/qmapd.conf" qmap1 qmap2
	fi
	for target in 198.51.100.1 198.51.100.2; do
		in_host ping -c 3 -i 0.2 -W 2 "$target" >/dev/null || fail "ping $target"
	done
	sleep 1
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$QMAPD_PID/status")
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$QMAPD_PID/status")
	# The guest's share under qemu-user: the resident pages less qemu's own (its binary,
	# the host's libraries, its heap and stack, and the translated code: the one large
	# anonymous executable mapping). What stays are the guest's mappings and the small
	# anonymous ones of qemu, so still an upper bound.
	guest="$rss $(awk '/^RssAnon/ { print $2 }' "/proc/$QMAPD_PID/status")"
	if [ "$qemu" != native ]; then
		guest=$(awk '
			/^[0-9a-f]+-[0-9a-f]+ / { perms = $2; path = $6; next }
			/^Size:/ {
				host = path ~ /qemu-|^\/(usr\/)?lib(64)?\/x86_64-linux-gnu|^\/lib64|^\[(heap|stack|vdso|vvar|vsyscall)\]/ ||
					(path == "" && perms ~ /x/ && $2 >= 16384)
			}
			/^Rss:/ && !host { sum += $2 }
			/^Anonymous:/ && !host { anon += $2 }
			END { print sum, anon }' "/proc/$QMAPD_PID/smaps")
	fi
	stop_qmapd
	rm -rf "$wrap"
	echo "RSS $label $rss $hwm $guest"
	exit 0
fi

arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(amd64 mipsel arm64)
kib() { echo $((($(stat -c %s "$1") + 512) / 1024)); }
rows=()
for arch in "${arches[@]}"; do
	for dbus in ON OFF; do
		suffix=$([ $dbus = ON ] || echo -nodbus)
		case $arch in
		amd64) out=$BUILD_DIR/native$suffix strip=strip qemu=native prefix=/ args=(-DCMAKE_C_COMPILER=gcc) ;;
		mipsel)
			out=$BUILD_DIR/cross-mipsel$suffix strip=mipsel-linux-gnu-strip qemu=qemu-mipsel
			prefix=$QMAPD_TEST_CACHE/sysroot-mipsel
			args=(-DCMAKE_TOOLCHAIN_FILE="$SOURCE_DIR/cmake/mipsel-linux-gnu.cmake" -DQMAPD_SYSROOT="$prefix")
			[ -d "$prefix" ] || "$SOURCE_DIR/tests/cross/sysroot.sh" mipsel "$prefix"
			;;
		arm64)
			out=$BUILD_DIR/cross-arm64$suffix strip=aarch64-linux-gnu-strip qemu=qemu-aarch64 prefix=/
			args=(-DCMAKE_TOOLCHAIN_FILE="$SOURCE_DIR/cmake/aarch64-linux-gnu.cmake")
			;;
		*) fail "unknown architecture '$arch'" ;;
		esac
		{ cmake -S "$SOURCE_DIR" -B "$out" "${args[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DQMAPD_DBUS=$dbus -DBUILD_TESTING=OFF -DQMAPD_BUILD_TOOLS=ON &&
			cmake --build "$out" -j"$(nproc)" --target qmapd qmapctl qmapd-sim; } >"$out.figures.log" 2>&1 ||
			fail "build $arch D-Bus $dbus: see $out.figures.log"
		"$strip" -o "$out/qmapd.stripped" "$out/qmapd"
		"$strip" -o "$out/qmapctl.stripped" "$out/qmapctl"
		line=$(bash "$0" rss "$arch-$dbus" "$prefix" "$qemu" "$out/qmapd" "$out/qmapd-sim" $dbus | grep '^RSS') ||
			fail "RSS of $arch D-Bus $dbus"
		read -r _ _ rss hwm guest anon <<<"$line"
		rows+=("| $arch | $dbus | $(kib "$out/qmapd.stripped") | $(kib "$out/qmapctl.stripped") | $rss | $hwm | $guest | $anon | $([ "$qemu" = native ] && echo native || echo "$qemu") |")
		echo "${rows[-1]}"
	done
done
echo
echo "| arch | D-Bus | qmapd KiB | qmapctl KiB | VmRSS KiB | VmHWM KiB | guest's KiB | of it anonymous | run |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
