# SPDX-License-Identifier: MIT
# Cross toolchain for big-endian 32-bit MIPS (Debian: gcc-mips-linux-gnu, libc6-dev-mips-cross,
# linux-libc-dev-mips-cross). Programs are linked statically so that qemu-mips runs them
# without a MIPS root file system. Used by tests/big-endian/big-endian.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR mips)
set(CMAKE_C_COMPILER mips-linux-gnu-gcc)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-mips)
# Headers and libraries from the cross sysroot only; programs (cmake, ...) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/mips-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
