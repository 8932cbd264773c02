# SPDX-License-Identifier: MIT
# The common part of the cross toolchains (mipsel-linux-gnu.cmake, aarch64-linux-gnu.cmake):
# Debian's cross gcc for QMAPD_TRIPLET, the libraries either from Debian's multiarch
# packages installed on the host (/usr/lib/TRIPLET: dpkg --add-architecture) or, with
# -DQMAPD_SYSROOT=DIR, from a root file system (tests/cross/sysroot.sh makes one where the
# multiarch packages cannot be installed). Programs run under qemu-user: the loader and the
# libraries are looked up below QEMU_LD_PREFIX (the sysroot, or / for multiarch).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${QMAPD_TRIPLET}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${QMAPD_TRIPLET})
# try_compile() projects get the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES QMAPD_SYSROOT QMAPD_TRIPLET)
if(QMAPD_SYSROOT)
	set(CMAKE_SYSROOT ${QMAPD_SYSROOT})
	set(CMAKE_FIND_ROOT_PATH ${QMAPD_SYSROOT})
	set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
	set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
	set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
	# The host's pkg-config, reading only the sysroot's .pc files and prefixing its paths.
	set(ENV{PKG_CONFIG_SYSROOT_DIR} ${QMAPD_SYSROOT})
	set(ENV{PKG_CONFIG_LIBDIR}
		"${QMAPD_SYSROOT}/usr/lib/${QMAPD_TRIPLET}/pkgconfig:${QMAPD_SYSROOT}/usr/share/pkgconfig")
	set(CMAKE_CROSSCOMPILING_EMULATOR ${QMAPD_QEMU} -L ${QMAPD_SYSROOT})
else()
	# Multiarch: pkgconf's per-triplet wrapper reads /usr/lib/TRIPLET/pkgconfig; headers
	# are the host's /usr/include (the same versions: Multi-Arch: same).
	set(PKG_CONFIG_EXECUTABLE ${QMAPD_TRIPLET}-pkg-config)
	set(CMAKE_CROSSCOMPILING_EMULATOR ${QMAPD_QEMU})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
