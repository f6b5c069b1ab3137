# Windows x64 with MinGW-w64 (Debian: gcc-mingw-w64-x86-64), from Linux:
#   cmake -S . -B build-win --toolchain cmake/toolchains/x86_64-w64-mingw32.cmake
# Tests and tools then run under wine (CMAKE_CROSSCOMPILING_EMULATOR);
# docs/platforms.md "Windows x64".
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The C99 printf (%zu, %llu) instead of msvcrt's, as src/core/error.c expects.
add_compile_definitions(__USE_MINGW_ANSI_STDIO=1)
# The programs carry MinGW's runtime (libgcc, winpthreads) inside, so wine or
# a Windows box needs no MinGW DLLs next to them.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libgcc")
find_program(_wine NAMES wine64 wine PATHS /usr/lib/wine)
if(_wine)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${_wine})
endif()
