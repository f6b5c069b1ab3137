# Cross build for Linux aarch64 (the appliance) with Debian's
# gcc-aarch64-linux-gnu, tests run under qemu-user (scripts/qemu-aarch64-netns).
#   cmake -S . -B build-aarch64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
find_program(_autd3_aarch64_cxx aarch64-linux-gnu-g++)
if(_autd3_aarch64_cxx)
  set(CMAKE_CXX_COMPILER ${_autd3_aarch64_cxx})
endif()
# Libraries and headers only from the cross sysroot (no host libpcap).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# ctest runs every test binary through this wrapper: qemu-user inside a
# private network namespace (see the script for why).
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../../scripts/qemu-aarch64-netns)
