# SPDX-License-Identifier: MIT
# 64-bit ARM: gcc-aarch64-linux-gnu, the libraries from Debian's arm64 multiarch packages
# (scripts/deps.sh) or a sysroot (-DQMAPD_SYSROOT=DIR), run under qemu-aarch64.
# tests/cross/cross.sh uses it.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(QMAPD_TRIPLET aarch64-linux-gnu)
set(QMAPD_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
