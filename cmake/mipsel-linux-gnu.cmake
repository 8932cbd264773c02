# SPDX-License-Identifier: MIT
# Little-endian 32-bit MIPS (MediaTek MT7621 routers): gcc-mipsel-linux-gnu, the libraries
# from a sysroot (-DQMAPD_SYSROOT=DIR, tests/cross/sysroot.sh mipsel DIR), run under
# qemu-mipsel. tests/cross/cross.sh uses it.
set(CMAKE_SYSTEM_PROCESSOR mipsel)
set(QMAPD_TRIPLET mipsel-linux-gnu)
set(QMAPD_QEMU qemu-mipsel)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
