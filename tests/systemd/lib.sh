# SPDX-License-Identifier: MIT
# A booted container with a real systemd, system bus, journald and logind, for the tests of
# qmapd as a distribution installs it: systemd-nspawn boots the host's own system from an
# overlay of / (so nothing is downloaded and the host's / is never written), with no network
# (--private-network). Commands run inside with nsenter on the container's PID 1 (machinectl
# needs a registered machine, and the host may have no system bus: --register=no).
# Sourced after ../support/lib.sh. ct_setup boots it; on exit (trap), also on failure, the
# container is powered off (or killed), the overlay unmounted and its directories deleted.
#
# Two settings make the container behave like a host for qmapd:
# - --system-call-filter="bpf @keyring": nspawn's own seccomp filter leaves out bpf(2), and
#   qmapd would fall back from XDP to TUN; @keyring for the unit's KeyringMode=private.
# - --capability=CAP_BPF: nspawn's default bounding set has no CAP_BPF (it keeps
#   CAP_SYS_ADMIN, which qmapd's unit drops), so bpf(BPF_PROG_LOAD) fails with EPERM and
#   qmapd falls back to TUN with a warning, which no host with qmapd's unit would see.
# - SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1: on a host with hybrid cgroups the container would get
#   them too, and then DeviceAllow= and IPAddressDeny= are silently not enforced.

CT_DIR=     # the overlay's directories: up, work, root (the merged tree the container boots)
CT_ROOT=
CT_NSPAWN=  # systemd-nspawn's pid
CT_LEADER=  # the container's PID 1, as the host sees it
CT_NAME=qmapd-test-$$

# in_ct CMD...: CMD inside the container (every namespace of its PID 1, its root), with a
# clean environment.
in_ct() {
	nsenter -t "$CT_LEADER" -a -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 SYSTEMD_COLORS=0 SYSTEMD_PAGER= "$@"
}

ct_running() { [ -n "$CT_NSPAWN" ] && kill -0 "$CT_NSPAWN" 2>/dev/null; }

ct_cleanup() {
	local rc=$?
	set +e
	if ct_running; then
		[ $rc -eq 0 ] || {
			echo "---- the container's journal (warnings and worse)" >&2
			in_ct journalctl -b -p warning --no-pager -q -n 40 >&2
		}
		in_ct systemctl poweroff --no-block >/dev/null 2>&1
		for _ in $(seq 300); do ct_running || break; sleep 0.1; done
		# nspawn turns SIGTERM into a poweroff of the container; SIGKILL ends it for good.
		ct_running && kill -TERM "$CT_NSPAWN" && sleep 3
		ct_running && kill -KILL "$CT_NSPAWN"
	fi
	[ -n "$CT_NSPAWN" ] && wait "$CT_NSPAWN" 2>/dev/null
	if [ $rc -ne 0 ] && [ -f "$CT_DIR/console.log" ]; then
		echo "---- console (last 20 lines)" >&2
		tail -n 20 "$CT_DIR/console.log" >&2
	fi
	if [ -n "$CT_ROOT" ] && mountpoint -q "$CT_ROOT"; then
		umount "$CT_ROOT" || umount -l "$CT_ROOT"
	fi
	# Deleting through a mounted overlay would hide the host's files; never do that.
	if [ -n "$CT_DIR" ] && ! mountpoint -q "$CT_ROOT"; then
		rm -rf "$CT_DIR"
	elif [ -n "$CT_DIR" ]; then
		echo "WARNING: $CT_ROOT is still mounted; $CT_DIR left behind" >&2
	fi
	exit $rc
}

# ct_setup: the overlay and the booted container (multi-user.target reached).
ct_setup() {
	local err
	[ "$(id -u)" = 0 ] || skip "needs root (overlayfs, systemd-nspawn)"
	need systemd-nspawn systemd-container
	need nsenter util-linux
	[ -x /lib/systemd/systemd ] || unavailable "no /lib/systemd/systemd to boot (apt-get install systemd)"
	# overlayfs over the host's / is what the container boots; where the kernel or the
	# sandbox running the test has none, the test cannot work at all.
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
		skip "no overlayfs in this kernel"
	# /var/tmp, not /tmp: nspawn mounts a tmpfs on the container's /tmp anyway, and the
	# upper directory is better on a disk than in memory.
	CT_DIR=$(mktemp -d /var/tmp/qmapd-nspawn.XXXXXX)
	CT_ROOT=$CT_DIR/root
	trap ct_cleanup EXIT
	trap 'exit 130' INT TERM
	mkdir "$CT_DIR/up" "$CT_DIR/work" "$CT_ROOT"
	err=$(mount -t overlay overlay \
		-o "lowerdir=/,upperdir=$CT_DIR/up,workdir=$CT_DIR/work" "$CT_ROOT" 2>&1) ||
		skip "cannot mount an overlay of / here: $err"
	# The host's own services would start in the container too, for nothing: only what a
	# system with qmapd needs stays (the units masked here are the host's business).
	local u
	for u in $(systemctl --root="$CT_ROOT" list-unit-files --state=enabled --no-legend \
		--type=service 2>/dev/null | awk '{print $1}'); do
		case $u in
		dbus* | systemd-* | getty* | console-getty* | *@*) ;;
		*) ln -sf /dev/null "$CT_ROOT/etc/systemd/system/$u" ;;
		esac
	done
	# A Docker image's /usr/sbin/policy-rc.d (exit 101) makes deb-systemd-invoke refuse to
	# start or stop any unit: a package's prerm would leave its daemon running while dpkg
	# deletes the files. A booted Debian has none; in the overlay only, the host keeps its own.
	rm -f "$CT_ROOT/usr/sbin/policy-rc.d"
	# A persistent journal, in the overlay: what happened during the container's shutdown
	# can be read after it (journalctl -D $CT_ROOT/var/log/journal).
	mkdir -p "$CT_ROOT/var/log/journal"
	SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 systemd-nspawn -D "$CT_ROOT" --machine="$CT_NAME" \
		--register=no --keep-unit --private-network --boot --console=read-only \
		--system-call-filter="bpf @keyring" --capability=CAP_BPF </dev/null >"$CT_DIR/console.log" 2>&1 &
	CT_NSPAWN=$!
	# nspawn forks twice on the way; PID 1 is its child running systemd.
	local c
	for _ in $(seq 100); do
		for c in $(ps -o pid= --ppid "$CT_NSPAWN"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && CT_LEADER=$c
		done
		[ -n "$CT_LEADER" ] && break
		ct_running || fail "systemd-nspawn exited: $(tail -n 5 "$CT_DIR/console.log")"
		sleep 0.1
	done
	[ -n "$CT_LEADER" ] || fail "no container PID 1 under systemd-nspawn (pid $CT_NSPAWN)"
	# "running" or "degraded": the boot is over either way; which units failed is the host's
	# business unless it is one of ours.
	local state
	for _ in $(seq 600); do
		state=$(in_ct systemctl is-system-running 2>/dev/null) || true
		case $state in running | degraded) break ;; esac
		ct_running || fail "the container exited while booting: $(tail -n 5 "$CT_DIR/console.log")"
		sleep 0.1
	done
	case $state in running | degraded) ;; *) fail "the container did not boot in 60 s (state: $state)" ;; esac
	echo "ok: container booted ($state), PID 1 is host pid $CT_LEADER"
}

# ct_install_qmapd BUILD_DIR: qmapd installed in the container as a distribution installs it.
# With scripts/build-deb.sh in the tree: its packages, with apt-get inside the container (no
# network needed for local files whose dependencies the host already has); those in
# $BUILD_DIR/deb when they were built from this very tree (deb-package, earlier in the same
# ctest run), built there otherwise. Without: the build tree's `cmake --install` for the /usr
# prefix and /etc into the overlay, then what a package's maintainer scripts would do
# (sysusers, daemon-reload, the bus's policy).
ct_install_qmapd() {
	local build=$1 debs
	if [ -x "$SOURCE_DIR/scripts/build-deb.sh" ]; then
		mkdir -p "$CT_ROOT/var/cache/qmapd-debs"
		debs=$("$SOURCE_DIR/scripts/build-deb.sh" --reuse "$BUILD_DIR/deb" 2>"$CT_DIR/build-deb.log") ||
			{ tail -n 30 "$CT_DIR/build-deb.log" >&2; fail "scripts/build-deb.sh failed"; }
		# shellcheck disable=SC2086 # one path a line, none with a blank
		cp $debs "$CT_ROOT/var/cache/qmapd-debs/"
		# The daemon's package, and the ModemManager compatibility if it is a package of
		# its own (the test checks D-Bus activation through the alias).
		# No --no-download: apt 2.6 then fails on local files ("Internal Error, Pathname
		# to install is not absolute"). With no network, a dependency the host lacks fails.
		in_ct sh -c 'apt-get install -y -q /var/cache/qmapd-debs/qmapd_*.deb \
			$(ls /var/cache/qmapd-debs/qmapd-mm-compat_*.deb 2>/dev/null)' \
			>"$CT_DIR/apt.log" 2>&1 ||
			{ tail -n 30 "$CT_DIR/apt.log" >&2; fail "apt-get install of the .deb failed"; }
		echo "ok: qmapd installed from scripts/build-deb.sh's package"
	else
		DESTDIR=$CT_ROOT cmake --install "$build" >"$CT_DIR/install.log" 2>&1 ||
			{ cat "$CT_DIR/install.log" >&2; fail "cmake --install into the container"; }
		in_ct systemd-sysusers || fail "systemd-sysusers in the container"
		in_ct systemctl daemon-reload || fail "daemon-reload in the container"
		in_ct systemctl reload dbus || fail "reloading the container's bus"
		echo "ok: qmapd installed with cmake --install (no scripts/build-deb.sh in the tree)"
	fi
}

# ct_install_build BUILD_DIR: a build of the tree configured as a distribution's (/usr, /etc),
# the daemon and qmapctl only; incremental on a second run.
ct_prepare_build() {
	local build=$1
	cmake -S "$SOURCE_DIR" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc \
		-DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc -DBUILD_TESTING=OFF \
		-DQMAPD_BUILD_TOOLS=OFF >"$build.log" 2>&1 &&
		cmake --build "$build" -j "$(nproc)" >>"$build.log" 2>&1 ||
		{ tail -n 30 "$build.log" >&2; fail "building qmapd for /usr in $build"; }
}
