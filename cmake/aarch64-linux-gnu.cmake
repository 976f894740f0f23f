# Cross build for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu, against the arm64
# packages installed by multiarch (scripts/install-deps.sh --aarch64: libfmt-dev:arm64, ...).
# Test binaries run through qemu-aarch64 (Debian qemu-user); QEMU_CPU picks the CPU model
# (cortex-a76: NEON + dot product; max: + i8mm, SVE).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# No -L: the multiarch libc6:arm64 (/lib/ld-linux-aarch64.so.1) is the one the arm64
# libraries were built against; mixing in the cross toolchain's own libc hangs threads.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

# Headers and libraries from the arm64 multiarch paths only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config: the arm64 .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
