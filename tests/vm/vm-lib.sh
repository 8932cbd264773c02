# SPDX-License-Identifier: MIT
# The VM harness: Debian's own kernel (the linux-image-amd64 package, fetched with apt-get
# download and unpacked under $QMAPD_TEST_CACHE once) boots in qemu, mounts the host's / read
# only over virtio-9p and chroots into it, so the guest runs this machine's binaries (the
# build tree, qmicli, ip) on its own kernel with the real USB core, usbfs, dummy_hcd and the
# kernel's modem drivers. Source it after tests/support/lib.sh, then:
#
#   vm_run SCRIPT [ARGS...]    boot, run `bash SCRIPT ARGS...` in the guest, power off;
#                              returns the script's exit status, its output on stdout
#
# The variables named in VM_ENV (and BUILD_DIR, SOURCE_DIR, VM_KEEP) reach the guest script.
# In the guest, the same file gives the gadget helpers at its end (vm_gadget_*, vm_udevd,
# vm_usb_diag): a test sources it on both sides.
#
# In the guest: /tmp, /run, /var/tmp are tmpfs (the host's / stays untouched; a $BUILD_DIR or
# $SOURCE_DIR under the host's /tmp is bound back in, read only), /dev, /proc,
# /sys and configfs are the guest's own; $VM_OUT (/tmp/vm-out) is a writable 9p share with a
# host directory, where the exit status and log come back. The guest's console is kept in
# $VM_CONSOLE for a failure's post-mortem. No network device: the guest's traffic stays in its
# own namespaces. E2E_KEEP=DIR (lib.sh's, for the e2e tests) keeps a failed guest's run in
# DIR/qmapd-vm.XXXXXX: the guest's console, its output (log), its dmesg and the test's
# directory from the guest's /tmp (qmapd-e2e.XXXXXX: logs, configs, counters, qmapctl's
# status; not its sockets and FIFOs), which the guest's e2e_cleanup keeps for the out share.
# VM_KEEP=1 keeps the host directory of a guest that did not finish (its out share,
# console); VM_TIMEOUT (seconds, default 170, read when vm_run starts qemu, so a test may
# set it after sourcing this file) bounds one boot; VM_QEMU_ARGS adds qemu options (the
# forwarding benchmark's `-icount shift=0`).
#
# There is no KVM for guests on the machines this runs on (nested virtualisation is not
# offered), so qemu runs TCG; Debian's kernel boots in a few seconds that way.

# The modules the guest loads at boot, with their dependencies (resolved here, from the
# modules' own depends= fields, so they load in order without modprobe or modules.dep).
VM_MODULES=${VM_MODULES:-"virtio_pci 9pnet_virtio 9p dummy_hcd libcomposite usb_f_fs usb_f_serial usb_f_hid cdc-wdm qmi_wwan cdc_mbim tun veth"}
# Parameters for some of them, "NAME:PARAM=VALUE ..." (two modems: dummy_hcd:num=2, two
# controllers, each its own bus with one port and its own UDC).
VM_MODULE_PARAMS=${VM_MODULE_PARAMS:-}
VM_MEMORY=${VM_MEMORY:-768}

# Unlike the host's own test dependencies, the kernel package needs the network at its first
# run, and qemu-system-x86 is a large optional install: without them the VM tests skip
# (77) with one line, even as root.
vm_unavailable() {
	skip "$*"
}

vm_kernel() {
	local pkg
	command -v apt-cache >/dev/null || vm_unavailable "no apt-cache: cannot find Debian's kernel package"
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
	[ -n "$pkg" ] || vm_unavailable "linux-image-amd64 is unknown to apt (no Debian sources?)"
	# need_unpacked fails as root where it cannot fetch; here that is a skip.
	VM_KERNEL=$( (unavailable() { skip "$*"; }; need_unpacked "$pkg" 'boot/vmlinuz-*')) ||
		exit $?
	VM_KROOT=${VM_KERNEL%/boot/*}
	VM_KVER=${VM_KERNEL##*/vmlinuz-}
}

# vm_module_order NAME...: the .ko paths, dependencies first, each once.
vm_module_order() {
	local -A seen=()
	local dir=$VM_KROOT/lib/modules/$VM_KVER
	_vm_mod() {
		local name=${1//-/_} f dep
		[ -z "${seen[$name]:-}" ] || return 0
		seen[$name]=1
		f=$(find "$dir/kernel" -name "$1.ko" -o -name "${1//_/-}.ko" -o -name "${1//-/_}.ko" | head -n 1)
		if [ -z "$f" ]; then
			# Built into the kernel: nothing to load.
			grep -q "/${1//_/[-_]}\.ko$" "$dir/modules.builtin" 2>/dev/null ||
				grep -qE "/$(echo "$name" | sed 's/_/[-_]/g')\.ko$" "$dir/modules.builtin" ||
				fail "vm: module $1 is neither in $VM_KVER's package nor built in"
			return 0
		fi
		for dep in $(strings "$f" | sed -n 's/^depends=//p' | tr , ' '); do
			_vm_mod "$dep"
		done
		echo "$f"
	}
	for m in "$@"; do _vm_mod "$m"; done
}

vm_initramfs() {
	local ir=$1 out=$2 f lib
	mkdir -p "$ir"/{bin,lib64,lib/x86_64-linux-gnu,mods,proc,sys,dev,host,out}
	cp /bin/busybox "$ir/bin/"
	# Debian's busybox is dynamically linked: its libraries come along.
	for lib in $(ldd /bin/busybox | grep -oE '/[^ ]+'); do
		cp "$lib" "$ir$lib"
	done
	: >"$ir/mods/order"
	for f in $(vm_module_order $VM_MODULES); do
		local name=${f##*/} p params=
		cp "$f" "$ir/mods/"
		for p in $VM_MODULE_PARAMS; do
			[ "${p%%:*}.ko" != "$name" ] || params+=" ${p#*:}"
		done
		echo "$name$params" >>"$ir/mods/order"
	done
	cat >"$ir/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r m params; do insmod /mods/$m $params || echo "vm: insmod $m failed"; done </mods/order
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,ro host /host || echo "vm: 9p mount of the host failed"
mount -t 9p -o $o out /out || echo "vm: 9p mount of the out share failed"
# The host's /tmp stays reachable for the build and source trees that live there (binds).
mkdir /hosttmp
mount --bind /host/tmp /hosttmp
for d in tmp run var/tmp; do mount -t tmpfs tmpfs /host/$d; done
for p in $(cat /out/binds); do
	mkdir -p /host$p
	mount --bind /hosttmp${p#/tmp} /host$p
done
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t configfs none /host/sys/kernel/config
mount -t debugfs none /host/sys/kernel/debug 2>/dev/null
mkdir /host/tmp/vm-out
mount --bind /out /host/tmp/vm-out
echo "vm: up $(cut -d' ' -f1 /proc/uptime) s"
chroot /host /bin/bash /tmp/vm-out/guest.sh >/out/log 2>&1
echo $? >/out/rc
[ "$(cat /out/rc)" = 0 ] || dmesg >/out/dmesg
echo "vm: done $(cut -d' ' -f1 /proc/uptime) s"
sync
poweroff -f
INIT
	chmod +x "$ir/init"
	(cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out")
}

# vm_keep DIR: a failed guest's run (vm_run's directory DIR, its out share) into $E2E_KEEP.
vm_keep() {
	[ -n "${E2E_KEEP:-}" ] || return 0
	rm -rf "$1/ir" "$1/initrd.gz"
	mv "$1/console" "$1/out/"
	if mkdir -p "$E2E_KEEP" && mv -T "$1/out" "$E2E_KEEP/${1##*/}"; then
		echo "E2E_KEEP: the guest's run kept in $E2E_KEEP/${1##*/}: $(cd "$E2E_KEEP/${1##*/}" && echo *)" >&2
	else
		echo "E2E_KEEP: could not keep the guest's run in $E2E_KEEP" >&2
	fi
}

vm_run() {
	local script=$1 w rc=0 t0 t1 v
	shift
	command -v qemu-system-x86_64 >/dev/null ||
		vm_unavailable "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	vm_kernel
	w=$(mktemp -d /tmp/qmapd-vm.XXXXXX)
	VM_DIR=$w
	VM_CONSOLE=$w/console
	mkdir "$w/out"
	vm_initramfs "$w/ir" "$w/initrd.gz"
	{
		printf 'export PATH=/usr/sbin:/usr/bin:/sbin:/bin VM_OUT=/tmp/vm-out'
		printf ' BUILD_DIR=%q SOURCE_DIR=%q VM_KEEP=%q' "$BUILD_DIR" "$SOURCE_DIR" "${VM_KEEP:-0}"
		# The guest's e2e_cleanup moves a failed run's directory to /tmp/vm-keep, copied
		# below to the out share, which becomes $E2E_KEEP/qmapd-vm.XXXXXX (vm_keep).
		[ -z "${E2E_KEEP:-}" ] ||
			printf ' E2E_KEEP=/tmp/vm-keep E2E_KEEP_AS=%q' "$(realpath -m "$E2E_KEEP")/${w##*/}"
		for v in ${VM_ENV:-}; do
			printf ' %s=%q' "$v" "${!v:-}"
		done
		echo
		printf 'cd /tmp\nbash %q' "$script"
		printf ' %q' "$@"
		echo
		# 9p makes no FIFO or socket (ENXIO), and in a kept directory they are only names.
		echo 'rc=$?'
		echo '[ ! -d /tmp/vm-keep ] || { find /tmp/vm-keep \( -type p -o -type s \) -delete; cp -R --preserve=timestamps /tmp/vm-keep/. /tmp/vm-out/; }'
		echo 'exit $rc'
	} >"$w/out/guest.sh"
	for p in "$BUILD_DIR" "$SOURCE_DIR"; do
		p=$(realpath "$p")
		[[ $p != /tmp/* ]] || echo "$p"
	done >"$w/out/binds"
	t0=$(date +%s.%N)
	timeout "${VM_TIMEOUT:-170}" qemu-system-x86_64 -accel tcg -m "$VM_MEMORY" -nographic \
		-nic none -no-reboot ${VM_QEMU_ARGS:-} -kernel "$VM_KERNEL" -initrd "$w/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet" \
		-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$w/out",mount_tag=out,security_model=none \
		</dev/null >"$VM_CONSOLE" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	[ -s "$w/out/log" ] && cat "$w/out/log"
	echo "vm: qemu ran $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s, guest: $(grep -ao 'vm: [a-z]* [0-9.]* s' "$VM_CONSOLE" | tr '\n' ' ')"
	if [ ! -s "$w/out/rc" ]; then
		echo "vm: no exit status from the guest (qemu status $rc); console:" >&2
		tail -n 40 "$VM_CONSOLE" >&2
		[ "${VM_KEEP:-0}" = 1 ] && echo "vm: kept $w" >&2 && return 1
		vm_keep "$w"
		rm -rf "$w"
		return 1
	fi
	rc=$(cat "$w/out/rc")
	[ "$rc" = 0 ] || vm_keep "$w"
	rm -rf "$w"
	return "$rc"
}

# ---- In the guest ----
# A USB device as the guest's host stack sees it: a configfs gadget (libcomposite) bound to
# dummy_hcd's UDC, whose functions are the kernel's own (serial, HID) or a userspace program's
# (FunctionFS). Binding and unbinding the UDC is plugging and pulling the cable.

VM_GADGET_ROOT=/sys/kernel/config/usb_gadget

# vm_gadget_new NAME VID PID MANUFACTURER PRODUCT [SERIAL]: a gadget with one configuration
# (c.1); sets VM_GADGET to its directory.
vm_gadget_new() {
	VM_GADGET=$VM_GADGET_ROOT/$1
	mkdir "$VM_GADGET" || fail "no configfs gadget $1 (libcomposite loaded?)"
	echo "$2" >"$VM_GADGET/idVendor"
	echo "$3" >"$VM_GADGET/idProduct"
	mkdir "$VM_GADGET/strings/0x409" "$VM_GADGET/configs/c.1"
	echo "$4" >"$VM_GADGET/strings/0x409/manufacturer"
	echo "$5" >"$VM_GADGET/strings/0x409/product"
	[ -z "${6:-}" ] || echo "$6" >"$VM_GADGET/strings/0x409/serialnumber"
}

# vm_gadget_ec25_ports: the Quectel EC25's interfaces 0-3 (DM, NMEA, AT, modem), so that the
# next function added is interface 4, the QMI function's. dummy_hcd has only four bulk IN and
# four bulk OUT endpoints, and the QMI function needs one of each: 0-2 are serial functions,
# 3 a function without bulk endpoints (a vendor HID, interrupt IN only, no driver binds).
vm_gadget_ec25_ports() {
	local i h=$VM_GADGET/functions/hid.3
	for i in 0 1 2; do
		mkdir "$VM_GADGET/functions/gser.$i"
		ln -s "$VM_GADGET/functions/gser.$i" "$VM_GADGET/configs/c.1/"
	done
	mkdir "$h"
	echo 1 >"$h/no_out_endpoint"
	echo 8 >"$h/report_length"
	# Vendor page, one 8-byte input report.
	printf '\x06\x00\xff\x09\x01\xa1\x01\x15\x00\x26\xff\x00\x75\x08\x95\x08\x09\x01\x81\x02\xc0' \
		>"$h/report_desc"
	ln -s "$h" "$VM_GADGET/configs/c.1/"
}

# vm_gadget_ffs INSTANCE DIR: a FunctionFS function as the configuration's next interface,
# its filesystem mounted at DIR, for a program to write its descriptors to (qmapd-sim --ffs).
vm_gadget_ffs() {
	mkdir "$VM_GADGET/functions/ffs.$1" "$2"
	mount -t functionfs "$1" "$2"
	ln -s "$VM_GADGET/functions/ffs.$1" "$VM_GADGET/configs/c.1/"
}

# vm_gadget_ec25 DIR: qmapd-sim's EC25 (2c7c:0125) with its QMI function at interface 4 as
# FunctionFS at DIR; start `qmapd-sim --ffs DIR`, then vm_gadget_plug.
vm_gadget_ec25() {
	vm_gadget_new qmapd 0x2c7c 0x0125 Quectel "EC25 (qmapd-sim)"
	vm_gadget_ec25_ports
	vm_gadget_ffs qmi "$1"
}

# vm_gadget_plug [UDC] / vm_gadget_unplug: bind VM_GADGET to a dummy_hcd UDC (the first one
# unless named: dummy_udc.N is the device side of bus N + 1), or unbind it (the host sees
# the device disconnect, every transfer in flight fails).
vm_gadget_plug() { echo "${1:-$(ls /sys/class/udc | head -n 1)}" >"$VM_GADGET/UDC"; }
vm_gadget_unplug() { echo "" >"$VM_GADGET/UDC"; }

# For the unplug and replug steps below (which also call the test's status and mux_is, and
# lib.sh's no_carrier): a device's ifindex, the clock in ms.
ifindex() { ip -n "$NS_HOST" -j link show "$1" | jq '.[0].ifindex'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# vm_unplug_under_traffic UNPLUG...: with iperf3 carrying data down modem0.1 (IPERF_PID),
# run UNPLUG (the cable out) once data flows, then check what an unplug must leave: carrier
# off on modem0.1 and modem0.2, every transfer back, modem0.1's address kept; iperf3 ends.
vm_unplug_under_traffic() {
	local rx0
	rx0=$(ip -n "$NS_HOST" -j -s link show modem0.1 | jq '.[0].stats64.rx.packets')
	flowing() { [ "$(ip -n "$NS_HOST" -j -s link show modem0.1 | jq '.[0].stats64.rx.packets')" -ge $((rx0 + 50)) ]; }
	vm_wait 30 "iperf3 data flowing down mux 1" flowing
	"$@"
	wait_for 10 "carrier off on modem0.1 after the unplug" no_carrier modem0.1
	wait_for 10 "carrier off on modem0.2 after the unplug" no_carrier modem0.2
	wait_for 10 "every transfer back" grep -q "all transfers completed" "$E2E_TMP/qmapd.log"
	[[ $(ip -n "$NS_HOST" -o addr show dev modem0.1) == *192.0.2.2/25* ]] ||
		fail "modem0.1 lost its address on the unplug"
	kill "$IPERF_PID" 2>/dev/null
	echo "ok: unplugged mid-transfer -> carrier off, every transfer completed, devices and addresses kept"
}

# vm_replug_keeps_sessions PLUG...: after vm_unplug_under_traffic, run PLUG (the cable in)
# timed as vm_timed_plug does, and check what a replug must give back: both sessions up
# (carrier) no later than 3 s after the first plug's time (FIRST_PLUG_MS, its PLUG_MS) would
# have them, both muxes connected, the same modem name and devices (IF1, IF2: modem0.1's and
# modem0.2's ifindexes before), traffic on both, the disconnect counted.
vm_replug_keeps_sessions() {
	local m target
	vm_timed_plug "$@"
	echo "ok: plugged in again -> both sessions up in $PLUG_MS ms (the first plug: $FIRST_PLUG_MS ms)"
	# A lost command costs a timeout and a retry, seconds more than the first plug.
	[ "$PLUG_MS" -le $((FIRST_PLUG_MS + 3000)) ] ||
		fail "the replug took $PLUG_MS ms to both sessions up, the first plug $FIRST_PLUG_MS ms" \
			"(qmapd.log says why: a timeout, a retry)"
	for m in 1 2; do
		vm_wait 60 "mux $m connected after the replug" mux_is $m connected
	done
	wait_for 10 "carrier on modem0.1 after the replug" has_carrier "$NS_HOST" modem0.1
	expect_eq "modem name after the replug" "$(status | jq -r '[.modems[].name] | join(",")')" modem0
	expect_eq "modem0.1 the same device" "$(ifindex modem0.1)" "$IF1"
	expect_eq "modem0.2 the same device" "$(ifindex modem0.2)" "$IF2"
	for target in 198.51.100.1 2001:db8:ff::2; do
		in_host ping -c 2 -i 0.2 -W 5 "$target" >/dev/null || fail "ping $target after the replug"
	done
	refresh_stats
	expect_ge "disconnects counted" "$(qstat device: disconnects)" 1
}

# vm_timed_plug PLUG...: run PLUG (the cable in) and wait until modem0.1 and modem0.2 both
# have carrier (their sessions connected); sets PLUG_MS, from PLUG's start. For qmapd in the
# guest's first network namespace (the tests with udevd), whose devices are in its sysfs.
# Polled with bash builtins (sysfs, a read that times out), as qmapd's log has no times: in
# a loaded TCG guest every program started costs up to seconds, and polling with qmapctl and
# jq made the time mostly the harness's (a replug whose sessions qmapd had up 4.3 s after
# the plug measured 14.9 s that way, with two busy loops in the guest).
vm_carriers_up() {
	local c1='' c2=''
	{ read -r c1 </sys/class/net/modem0.1/carrier && read -r c2 </sys/class/net/modem0.2/carrier; } 2>/dev/null
	[ "$c1$c2" = 11 ]
}
vm_timed_plug() {
	local t0 end=$((SECONDS + 60))
	[ -p "$E2E_TMP/tick" ] || mkfifo "$E2E_TMP/tick"
	t0=${EPOCHREALTIME/./}
	"$@"
	until vm_carriers_up; do
		[ "$SECONDS" -lt "$end" ] || fail "modem0.1 and modem0.2 without carrier 60 s after the plug"
		read -r -t 0.05 <>"$E2E_TMP/tick" || true
	done
	PLUG_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
}

# vm_udevd UDEVADM: systemd-udevd from the udev package unpacked at UDEVADM's root (the host
# does not install udev; the host side finds it with need_unpacked udev 'bin/udevadm'),
# with the package's rules and the project's 70-qmapd.rules, then every device added again
# and settled; sets UDEVD_PID. libusb's hotplug (udev backend) hears of devices only
# through udevd.
vm_udevd() {
	local root=${1%/bin/udevadm}
	mkdir -p /run/udev/rules.d /run/vm-bin
	cp "$root"/lib/udev/rules.d/*.rules /run/udev/rules.d/
	cp "$SOURCE_DIR/systemd/70-qmapd.rules" /run/udev/rules.d/
	ln -sf "$1" /run/vm-bin/udevadm
	ln -sf "$1" /run/vm-bin/systemd-udevd
	# The guest's test runs chrooted into the host's /, where udevadm would ignore every
	# request ("Running in chroot").
	export SYSTEMD_IGNORE_CHROOT=1
	/run/vm-bin/systemd-udevd >"$E2E_TMP/udevd.log" 2>&1 &
	UDEVD_PID=$!
	E2E_PIDS+=($UDEVD_PID)
	wait_for 10 "systemd-udevd's control socket" test -S /run/udev/control
	/run/vm-bin/udevadm trigger --action=add
	/run/vm-bin/udevadm settle --timeout=20
}

# vm_sim_counters: the sim's last counters ($E2E_TMP/sim.stats, KEY=VALUE lines) into the
# caller's associative array S (declare -A S), with bash alone: in the TCG guest every
# program started (sstat's grep, tr, sed) costs a few hundred ms.
vm_sim_counters() {
	local k v
	S=()
	while IFS='=' read -r k v; do [ -z "$k" ] || S[$k]=$v; done <"$E2E_TMP/sim.stats"
}

# vm_wait SECONDS WHAT CMD...: wait_for by the clock. wait_for counts tries of 0.1 s, and
# in a TCG guest one try of a check that starts programs (qmapctl | jq) takes seconds.
vm_wait() {
	local secs=$1 what=$2 end=$((SECONDS + $1))
	shift 2
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || fail "timed out after ${secs}s waiting for $what"
		sleep 0.2
	done
}

# vm_keep_status: with E2E_KEEP, on a failure, each qmapd's `qmapctl -j status` (one per
# control socket in $E2E_TMP) into $E2E_TMP/qmapctl-status*.json, for the kept directory.
vm_keep_status() {
	local s
	[ -n "${E2E_KEEP:-}" ] || return 0
	for s in "$E2E_TMP"/control*; do
		[ -S "$s" ] || continue
		timeout 10 "${QMAPCTL:-$BUILD_DIR/qmapctl}" -s "$s" -j status \
			>"$E2E_TMP/qmapctl-status${s#"$E2E_TMP"/control}.json" 2>&1
	done
}

# vm_usb_diag: on a failure, what the guest's USB core saw, the counters of qmapd and the
# sim when they run (into $E2E_TMP/*.stats, which e2e_cleanup does not print), each qmapd's
# status (vm_keep_status), and the kernel's last words.
vm_usb_diag() {
	local d
	vm_keep_status
	if [ -n "${QMAPD_PID:-}" ] || [ -n "${SIM_PID:-}" ]; then
		kill -USR1 ${QMAPD_PID:-} ${SIM_PID:-} 2>/dev/null && sleep 1
		grep -h "device:\|^mux [0-9]\|^dl_aggregates\|^ul_transfers\|^ffs_" "$E2E_TMP"/*.stats >&2
		grep -h " mux [0-9]" "$E2E_TMP"/qmapd.stats | cut -d' ' -f1-13 >&2
		[ -z "${NS_HOST:-}" ] || ip -n "$NS_HOST" -s link >&2
		# The start of qmapd's log (e2e_cleanup prints its end).
		[ ! -f "$E2E_TMP/qmapd.log" ] ||
			grep -v "encapsulated\|control client" "$E2E_TMP/qmapd.log" | head -n 40 >&2
	fi
	for d in /sys/bus/usb/devices/*; do
		[ -f "$d/bInterfaceNumber" ] || [ -f "$d/idVendor" ] || continue
		echo "usb: ${d##*/} $(cat "$d"/{idVendor,idProduct,bInterfaceNumber,bInterfaceClass,bNumEndpoints} 2>/dev/null | tr '\n' ' ')driver $(basename "$(readlink "$d/driver" 2>/dev/null)")"
	done >&2
	dmesg | tail -n 25 >&2
}
