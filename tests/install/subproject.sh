#!/bin/sh
# libautd3 as a subproject, the way FetchContent (and so add_subdirectory)
# users meet it: the parent builds consumer.c against autd3::autd3 and runs it.
# Also checks the build policy for subprojects: warnings are never errors
# (even when the parent's cache says AUTD3_WERROR=ON) and none of libautd3's
# tests or tools are added to the parent's build.
set -eu
src="$1" here="$2" cc="$3"
tmp=$(mktemp -d /tmp/autd3-subproject.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/proj"
cp "$here/consumer.c" "$tmp/proj/"
cat > "$tmp/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(consumer C)
include(CTest)
include(FetchContent)
FetchContent_Declare(autd3 SOURCE_DIR "$src")
FetchContent_MakeAvailable(autd3)
add_executable(app consumer.c)
target_link_libraries(app autd3::autd3)
CM
cmake -S "$tmp/proj" -B "$tmp/b" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
  -DAUTD3_WERROR=ON -DAUTD3_LINK_ETHERCRAB=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; exit 1; }
cc_json="$tmp/b/compile_commands.json"
if grep -q -- '-Werror' "$cc_json"; then
  echo "FAIL: -Werror reached a subproject build:"; grep -m3 -- '-Werror' "$cc_json"; exit 1
fi
if grep -q '"file": "[^"]*/\(tests\|tools\|fuzz\)/' "$cc_json"; then
  echo "FAIL: libautd3's tests/tools are part of the parent's build:"
  grep -m3 '"file": "[^"]*/\(tests\|tools\|fuzz\)/' "$cc_json"; exit 1
fi
cmake --build "$tmp/b" --target app -j 2 > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
LD_LIBRARY_PATH="$tmp/b/_deps/autd3-build" "$tmp/b/app"
