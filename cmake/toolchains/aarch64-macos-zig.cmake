# macOS arm64 with Zig's C compiler: cmake/Autd3MacosZig.cmake.
set(AUTD3_MACOS_ARCH arm64)
include(${CMAKE_CURRENT_LIST_DIR}/../Autd3MacosZig.cmake)
