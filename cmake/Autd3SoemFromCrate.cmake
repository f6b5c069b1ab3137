# SOEM v2.0.0 (OpenEtherCATsociety/SOEM, GPL-3.0-only) fetched from a registry
# package and built inside this build tree, for the SOEM link only.
#
# The crates.io crate autd3-rs-link-soem 0.6.1 carries SOEM v2.0.0's full
# source under 3rdparty/SOEM, and a macOS NIC port under macos/. With
# -DAUTD3_SOEM_FROM_CRATE=ON (the Makefile and so CI set it) configure
# downloads that .crate (sha256 pinned below) into AUTD3_DOWNLOAD_DIR, unpacks
# it under <build>/_soem, builds SOEM for the target as position-independent
# static code and installs it to <build>/_soem/install, which then serves as
# SOEM_ROOT. Its symbols are hidden, so no library that links it exports
# them. Nothing of SOEM enters the source tree or libautd3: only the
# separate libautd3-link-soem links it (docs/soem.md, README "Licence").
#
# The build copy is adjusted for the target (the crate's files are only read):
#  - every target: SOEM asks for CMake 3.28 but needs nothing newer than 3.16;
#  - Windows (MinGW-w64): SOEM's cmake/Windows.cmake names MSVC's files
#    (wpcap.lib, ws2_32.lib) and MSYS2's UCRT runtime; MinGW links the bundled
#    x64 import libraries and its own ws2_32/winmm, on its default runtime
#    (msvcrt), whose lack of timespec_get osal/win32/osal.c's wall clock
#    replaces with GetSystemTimePreciseAsFileTime (what UCRT's does). SOEM's
#    win32 port then imports wpcap.dll (Npcap) when the link is loaded;
#  - macOS: staged as the crate's build.rs does (osal/macosx and oshw/macosx
#    from macos/ and SOEM's Linux files, cmake/Darwin.cmake). Its NIC driver
#    calls libpcap, which macOS ships (/usr/lib/libpcap.A.dylib) but Zig's SDK
#    has neither headers nor a stub for: the headers are the build host's
#    libpcap headers (libpcap-dev; libpcap's API is the same everywhere) and
#    the link stub (libpcap.tbd) lists exactly the calls the port makes.
#
# A SOEM_ROOT given by the user wins: this module then does nothing.
set(_crate_ver 0.6.1)
set(_crate_sha256 87e1c8da9445e1d82e0b609cc22ba5c650800f91e67a6814b262a482a2a04cca)
set(_crate_url "https://static.crates.io/crates/autd3-rs-link-soem/autd3-rs-link-soem-${_crate_ver}.crate")
set(AUTD3_DOWNLOAD_DIR "${CMAKE_BINARY_DIR}/_downloads" CACHE PATH
    "Where configure keeps downloaded registry packages (checked by checksum, so several build folders may share it)")
set(AUTD3_SOEM_OPTIONS "" CACHE STRING
    "SOEM's own compile-time options for the SOEM built from the crate, e.g. -DEC_TIMEOUTRET=20000 (SOEM's CMakeLists.txt)")
set(_soem_dir "${CMAKE_BINARY_DIR}/_soem")
set(_soem_prefix "${_soem_dir}/install")
set(_crate_root "${_soem_dir}/autd3-rs-link-soem-${_crate_ver}")
set(_soem_src "${_crate_root}/3rdparty/SOEM")

function(_autd3_soem_patch file from to)
  file(READ "${file}" _t)
  string(FIND "${_t}" "${from}" _at)
  if(_at LESS 0)
    message(FATAL_ERROR "SOEM link: ${file} no longer contains the text this build adjusts (${from})")
  endif()
  string(REPLACE "${from}" "${to}" _t "${_t}")
  file(WRITE "${file}" "${_t}")
endfunction()

function(_autd3_soem_fetch crate)
  if(EXISTS "${crate}")
    file(SHA256 "${crate}" _have)
    if(_have STREQUAL _crate_sha256)
      return()
    endif()
    file(REMOVE "${crate}")
  endif()
  message(STATUS "SOEM link: downloading SOEM v2.0.0 (crate autd3-rs-link-soem ${_crate_ver})")
  file(DOWNLOAD "${_crate_url}" "${crate}.part" EXPECTED_HASH SHA256=${_crate_sha256} STATUS _dl TLS_VERIFY ON)
  list(GET _dl 0 _dl_rc)
  if(NOT _dl_rc EQUAL 0)
    file(REMOVE "${crate}.part")
    message(FATAL_ERROR "SOEM link: AUTD3_SOEM_FROM_CRATE=ON but ${_crate_url} could not be downloaded (${_dl}); "
                        "pass -DSOEM_ROOT=<prefix of SOEM v2> instead")
  endif()
  file(RENAME "${crate}.part" "${crate}")
endfunction()

# The target's adjustments of the build copy (see the top of this file).
function(_autd3_soem_adjust_for_target)
  _autd3_soem_patch("${_soem_src}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.28)" "cmake_minimum_required(VERSION 3.16)")
  if(CMAKE_SYSTEM_NAME STREQUAL "Windows" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
    set(_w "${_soem_src}/cmake/Windows.cmake")
    _autd3_soem_patch("${_w}" "$<$<C_COMPILER_ID:GNU>:_UCRT>" "")
    _autd3_soem_patch("${_w}" "$<$<C_COMPILER_ID:GNU>:ucrt>" "")
    _autd3_soem_patch("${_w}" "ws2_32.lib\n  winmm.lib" "ws2_32\n  winmm")
    # msvcrt has no timespec_get (UCRT's): the wall clock as UCRT reads it.
    _autd3_soem_patch("${_soem_src}/osal/win32/osal.c" "timespec_get(&ts, TIME_UTC);"
      "FILETIME ft; ULARGE_INTEGER t; GetSystemTimePreciseAsFileTime(&ft);
   t.LowPart = ft.dwLowDateTime; t.HighPart = ft.dwHighDateTime;
   t.QuadPart -= 116444736000000000ULL; /* 100 ns since 1601 -> since 1970 */
   ts.tv_sec = (time_t)(t.QuadPart / 10000000u); ts.tv_nsec = (long)(t.QuadPart % 10000000u) * 100;")
  elseif(CMAKE_SYSTEM_NAME STREQUAL "Darwin")
    file(MAKE_DIRECTORY "${_soem_src}/osal/macosx" "${_soem_src}/oshw/macosx")
    file(COPY "${_soem_src}/oshw/linux/oshw.c" "${_soem_src}/oshw/linux/oshw.h" "${_crate_root}/macos/nicdrv.c"
              "${_crate_root}/macos/nicdrv.h" DESTINATION "${_soem_src}/oshw/macosx")
    file(COPY "${_soem_src}/osal/linux/osal_defs.h" "${_crate_root}/macos/osal.c" DESTINATION "${_soem_src}/osal/macosx")
    file(COPY "${_crate_root}/macos/Darwin.cmake" DESTINATION "${_soem_src}/cmake")
    find_path(_autd3_host_pcap_h pcap/pcap.h PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH NO_DEFAULT_PATH)
    if(NOT _autd3_host_pcap_h)
      message(FATAL_ERROR "SOEM link for macOS: SOEM's macOS port needs libpcap's headers, which Zig's SDK lacks; "
                          "install the build host's (apt-get install libpcap-dev)")
    endif()
    file(COPY "${_autd3_host_pcap_h}/pcap.h" "${_autd3_host_pcap_h}/pcap" DESTINATION "${_soem_src}/oshw/macosx")
    # The calls SOEM's macOS NIC driver makes: a call not listed here is a
    # link error, never a symbol left for dyld to miss.
    file(MAKE_DIRECTORY "${_soem_prefix}/lib")
    file(WRITE "${_soem_prefix}/lib/libpcap.tbd"
"--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos ]
install-name:    '/usr/lib/libpcap.A.dylib'
exports:
  - targets:         [ x86_64-macos, arm64-macos ]
    symbols:         [ _pcap_close, _pcap_next_ex, _pcap_open_live, _pcap_sendpacket,
                       _pcap_setdirection, _pcap_setnonblock ]
...
")
  endif()
endfunction()

# Built once per build folder, again when AUTD3_SOEM_OPTIONS change.
set(_soem_stamp "${_soem_dir}/options.txt")
set(_soem_have_opts "")
if(EXISTS "${_soem_stamp}")
  file(READ "${_soem_stamp}" _soem_have_opts)
endif()
if(NOT _soem_have_opts STREQUAL "${AUTD3_SOEM_OPTIONS}")
  file(REMOVE_RECURSE "${_soem_prefix}")
endif()
if(NOT EXISTS "${_soem_prefix}/include/soem/soem.h")
  set(_crate "${AUTD3_DOWNLOAD_DIR}/autd3-rs-link-soem-${_crate_ver}.crate")
  file(MAKE_DIRECTORY "${AUTD3_DOWNLOAD_DIR}")
  _autd3_soem_fetch("${_crate}")
  file(REMOVE_RECURSE "${_crate_root}" "${_soem_dir}/build")
  file(ARCHIVE_EXTRACT INPUT "${_crate}" DESTINATION "${_soem_dir}")
  _autd3_soem_adjust_for_target()
  set(_tc "")
  if(CMAKE_TOOLCHAIN_FILE)
    set(_tc "-DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE}")
  endif()
  message(STATUS "SOEM link: building SOEM v2.0.0 for ${CMAKE_SYSTEM_NAME} into ${_soem_prefix}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${_soem_src}" -B "${_soem_dir}/build" -G "${CMAKE_GENERATOR}" ${_tc}
            -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_C_VISIBILITY_PRESET=hidden
            -DBUILD_SHARED_LIBS=OFF -DSOEM_BUILD_SAMPLES=OFF ${AUTD3_SOEM_OPTIONS}
            -DCMAKE_INSTALL_PREFIX=${_soem_prefix}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(_rc EQUAL 0)
    execute_process(COMMAND "${CMAKE_COMMAND}" --build "${_soem_dir}/build" -j 2 --target install
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  endif()
  if(NOT _rc EQUAL 0)
    file(REMOVE_RECURSE "${_soem_prefix}/include")
    message(FATAL_ERROR "SOEM link: building SOEM v2.0.0 from the crate failed:\n${_out}")
  endif()
  file(WRITE "${_soem_stamp}" "${AUTD3_SOEM_OPTIONS}")
  # SOEM's installed nicdrv.h includes pcap.h on Windows and macOS: install
  # the headers it was built with beside it.
  if(CMAKE_SYSTEM_NAME STREQUAL "Windows")
    file(GLOB _pcap_h "${_soem_src}/oshw/win32/wpcap/Include/*")
    file(COPY ${_pcap_h} DESTINATION "${_soem_prefix}/include/soem")
  elseif(CMAKE_SYSTEM_NAME STREQUAL "Darwin")
    file(COPY "${_soem_src}/oshw/macosx/pcap.h" "${_soem_src}/oshw/macosx/pcap" DESTINATION "${_soem_prefix}/include/soem")
  endif()
endif()
set(SOEM_ROOT "${_soem_prefix}" CACHE PATH "Install prefix of SOEM v2 (OpenEtherCATsociety/SOEM, GPL-3.0-only) for the SOEM link" FORCE)
# SOEM's slaveinfo sample, which the tests build as an independent CoE client
# (tests/CMakeLists.txt: emu_tool.soem_slaveinfo_*, the autd3 tool's scan/sii check).
set_property(GLOBAL PROPERTY AUTD3_SOEM_SAMPLES_DIR "${_soem_src}/samples")
# The crate's folder under <build>/_soem (the Windows tests link SOEM's x64
# import libraries from a Windows build's copy: tests/platform).
set_property(GLOBAL PROPERTY AUTD3_SOEM_CRATE_DIR "autd3-rs-link-soem-${_crate_ver}")
