# SOEM v2.0.0 (OpenEtherCATsociety/SOEM, GPL-3.0-only) fetched from a registry
# package and built inside this build tree, for the SOEM link only.
#
# The crates.io crate autd3-rs-link-soem 0.6.1 carries SOEM v2.0.0's full
# source under 3rdparty/SOEM. With -DAUTD3_SOEM_FROM_CRATE=ON (the Makefile and
# so CI set it) configure downloads that .crate (sha256 pinned below), unpacks
# it under <build>/_soem, builds SOEM as position-independent static code and
# installs it to <build>/_soem/install, which then serves as SOEM_ROOT.
# Nothing of SOEM enters the source tree or libautd3: only the separate
# libautd3-link-soem links it (docs/soem.md, README "Licence").
#
# A SOEM_ROOT given by the user wins: this module then does nothing.
set(_crate_ver 0.6.1)
set(_crate_sha256 87e1c8da9445e1d82e0b609cc22ba5c650800f91e67a6814b262a482a2a04cca)
set(_crate_url "https://static.crates.io/crates/autd3-rs-link-soem/autd3-rs-link-soem-${_crate_ver}.crate")
set(_soem_dir "${CMAKE_BINARY_DIR}/_soem")
set(_soem_prefix "${_soem_dir}/install")
set(_soem_src "${_soem_dir}/autd3-rs-link-soem-${_crate_ver}/3rdparty/SOEM")

if(NOT EXISTS "${_soem_prefix}/include/soem/soem.h")
  set(_crate "${_soem_dir}/autd3-rs-link-soem-${_crate_ver}.crate")
  if(NOT EXISTS "${_crate}")
    message(STATUS "SOEM link: downloading SOEM v2.0.0 (crate autd3-rs-link-soem ${_crate_ver})")
    file(DOWNLOAD "${_crate_url}" "${_crate}" EXPECTED_HASH SHA256=${_crate_sha256} STATUS _dl TLS_VERIFY ON)
    list(GET _dl 0 _dl_rc)
    if(NOT _dl_rc EQUAL 0)
      file(REMOVE "${_crate}")
      message(FATAL_ERROR "SOEM link: AUTD3_SOEM_FROM_CRATE=ON but ${_crate_url} could not be downloaded (${_dl}); "
                          "pass -DSOEM_ROOT=<prefix of SOEM v2> instead")
    endif()
  endif()
  file(ARCHIVE_EXTRACT INPUT "${_crate}" DESTINATION "${_soem_dir}")
  # SOEM v2.0.0 asks for CMake 3.28 but uses nothing newer than 3.16 here:
  # lower the minimum in the build copy only.
  file(READ "${_soem_src}/CMakeLists.txt" _cml)
  string(REPLACE "cmake_minimum_required(VERSION 3.28)" "cmake_minimum_required(VERSION 3.16)" _cml "${_cml}")
  file(WRITE "${_soem_src}/CMakeLists.txt" "${_cml}")
  set(_tc "")
  if(CMAKE_TOOLCHAIN_FILE)
    set(_tc "-DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE}")
  endif()
  message(STATUS "SOEM link: building SOEM v2.0.0 into ${_soem_prefix}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${_soem_src}" -B "${_soem_dir}/build" -G "${CMAKE_GENERATOR}" ${_tc}
            -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF -DSOEM_BUILD_SAMPLES=OFF
            -DCMAKE_INSTALL_PREFIX=${_soem_prefix}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(_rc EQUAL 0)
    execute_process(COMMAND "${CMAKE_COMMAND}" --build "${_soem_dir}/build" -j 2 --target install
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  endif()
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "SOEM link: building SOEM v2.0.0 from the crate failed:\n${_out}")
  endif()
endif()
set(SOEM_ROOT "${_soem_prefix}" CACHE PATH "Install prefix of SOEM v2 (OpenEtherCATsociety/SOEM, GPL-3.0-only) for the SOEM link" FORCE)
