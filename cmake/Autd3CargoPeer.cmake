# autd3_cargo_peer(NAME <folder under tests/peers> BIN <binary name> OUT_VAR <var>)
#
# A Rust test peer (a small cargo project with its Cargo.lock committed, depending on published
# crates) built for the tests that need it, never by the normal build:
#  - registers the ctest test `peers.build.<NAME>`, which runs `cargo build --release --locked`
#    into <source>/build/cargo-peers (shared by the build trees), as the fixture `peer.<NAME>`;
#  - sets <var> to the path of the peer's binary and <var>_FIXTURE to the fixture name, to pass to
#    autd3_add_test(... DEFINES ... FIXTURES ${<var>_FIXTURE}).
# Without cargo both are empty: the dependent tests find no binary and skip (exit 77) by name.
function(autd3_cargo_peer)
  cmake_parse_arguments(P "" "NAME;BIN;OUT_VAR" "" ${ARGN})
  find_program(AUTD3_CARGO cargo HINTS "$ENV{CARGO_HOME}/bin" "$ENV{HOME}/.cargo/bin"
               DOC "cargo, for the EtherCrab link and the Rust test peers")
  set(${P_OUT_VAR} "" PARENT_SCOPE)
  set(${P_OUT_VAR}_FIXTURE "" PARENT_SCOPE)
  if(NOT AUTD3_CARGO)
    message(STATUS "Test peer ${P_NAME}: cargo not found, its tests will skip")
    return()
  endif()
  set(manifest ${PROJECT_SOURCE_DIR}/tests/peers/${P_NAME}/Cargo.toml)
  # One target dir for every build tree of this checkout (the normal, the
  # sanitizer build ...), so each peer's crates compile once, as the EtherCrab
  # shim's do (src/link/ethercrab/CMakeLists.txt).
  if(DEFINED ENV{AUTD3_CARGO_PEERS_DIR})
    set(target_dir "$ENV{AUTD3_CARGO_PEERS_DIR}")
  else()
    set(target_dir ${PROJECT_SOURCE_DIR}/build/cargo-peers)
  endif()
  # Several test folders may use one peer: its build test is registered once.
  get_property(registered GLOBAL PROPERTY AUTD3_CARGO_PEER_${P_NAME})
  if(NOT registered)
    set_property(GLOBAL PROPERTY AUTD3_CARGO_PEER_${P_NAME} TRUE)
    add_test(NAME peers.build.${P_NAME}
             COMMAND ${CMAKE_COMMAND} -E env "CARGO_TARGET_DIR=${target_dir}"
                     ${AUTD3_CARGO} build --release --locked --quiet --manifest-path ${manifest})
    # Building the crates the first time takes minutes on a small machine.
    set_tests_properties(peers.build.${P_NAME} PROPERTIES FIXTURES_SETUP peer.${P_NAME} TIMEOUT 1200 LABELS peer)
  endif()
  set(${P_OUT_VAR} ${target_dir}/release/${P_BIN} PARENT_SCOPE)
  set(${P_OUT_VAR}_FIXTURE peer.${P_NAME} PARENT_SCOPE)
endfunction()
