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
# In the guest: /tmp, /run, /var/tmp are tmpfs (the host's / stays untouched; a $BUILD_DIR or
# $SOURCE_DIR under the host's /tmp is bound back in, read only), /dev, /proc,
# /sys and configfs are the guest's own; $VM_OUT (/tmp/vm-out) is a writable 9p share with a
# host directory, where the exit status and log come back. The guest's console is kept in
# $VM_CONSOLE for a failure's post-mortem. No network device: the guest's traffic stays in its
# own namespaces. VM_KEEP=1 keeps the host directory of a guest that did not finish (its out
# share, console); VM_TIMEOUT (seconds, default 170) bounds one boot.
#
# There is no KVM for guests on the machines this runs on (nested virtualisation is not
# offered), so qemu runs TCG; Debian's kernel boots in a few seconds that way.

# The modules the guest loads at boot, with their dependencies (resolved here, from the
# modules' own depends= fields, so they load in order without modprobe or modules.dep).
VM_MODULES=${VM_MODULES:-"virtio_pci 9pnet_virtio 9p dummy_hcd libcomposite usb_f_fs usb_f_serial usb_f_hid cdc-wdm qmi_wwan cdc_mbim tun veth"}
VM_MEMORY=${VM_MEMORY:-768}
VM_TIMEOUT=${VM_TIMEOUT:-170}

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
		cp "$f" "$ir/mods/"
		echo "${f##*/}" >>"$ir/mods/order"
	done
	cat >"$ir/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m || echo "vm: insmod $m failed"; done
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
echo "vm: done $(cut -d' ' -f1 /proc/uptime) s"
sync
poweroff -f
INIT
	chmod +x "$ir/init"
	(cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out")
}

vm_run() {
	local script=$1 w rc=0 t0 t1
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
		printf ' BUILD_DIR=%q SOURCE_DIR=%q VM_KEEP=%q VM_QMAPD=%q\n' \
			"$BUILD_DIR" "$SOURCE_DIR" "${VM_KEEP:-0}" "${VM_QMAPD:-0}"
		printf 'cd /tmp\nexec bash %q' "$script"
		printf ' %q' "$@"
		echo
	} >"$w/out/guest.sh"
	for p in "$BUILD_DIR" "$SOURCE_DIR"; do
		p=$(realpath "$p")
		[[ $p != /tmp/* ]] || echo "$p"
	done >"$w/out/binds"
	t0=$(date +%s.%N)
	timeout "$VM_TIMEOUT" qemu-system-x86_64 -accel tcg -m "$VM_MEMORY" -nographic \
		-nic none -no-reboot -kernel "$VM_KERNEL" -initrd "$w/initrd.gz" \
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
		rm -rf "$w"
		return 1
	fi
	rc=$(cat "$w/out/rc")
	rm -rf "$w"
	return "$rc"
}
