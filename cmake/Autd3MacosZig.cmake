# The macOS cross toolchain on Zig's C compiler (PyPI ziglang ships macOS libc
# headers and libSystem stubs; scripts/setup-deps.sh installs it into
# build/.venv-zig), for the architecture in AUTD3_MACOS_ARCH (arm64 or x86_64)
# set by cmake/toolchains/*-macos-zig.cmake. Built, never run: docs/platforms.md "macOS".
# The oldest macOS the binaries support (their LC_BUILD_VERSION minos; Zig's own default is its
# newest macOS): 11.0 for arm64 (the first on Apple silicon), 10.15 for x86_64. The Python wheels
# take their platform tag from it (scripts/python-wheels.sh reads it back from the dylib).
if(AUTD3_MACOS_ARCH STREQUAL "arm64")
  set(AUTD3_MACOS_MIN "11.0" CACHE STRING "Minimum macOS version of the arm64 build")
  set(_zig_target aarch64-macos.${AUTD3_MACOS_MIN})
else()
  set(AUTD3_MACOS_MIN "10.15" CACHE STRING "Minimum macOS version of the x86_64 build")
  set(_zig_target ${AUTD3_MACOS_ARCH}-macos.${AUTD3_MACOS_MIN})
endif()
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR ${AUTD3_MACOS_ARCH})
set(CMAKE_C_COMPILER ${CMAKE_CURRENT_LIST_DIR}/../scripts/zig-cc)
set(CMAKE_CXX_COMPILER ${CMAKE_CURRENT_LIST_DIR}/../scripts/zig-c++)
set(CMAKE_C_COMPILER_TARGET ${_zig_target})
set(CMAKE_CXX_COMPILER_TARGET ${_zig_target})
# Nothing is installed from a cross build; CMake only insists that the tool exists.
set(CMAKE_INSTALL_NAME_TOOL true)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
