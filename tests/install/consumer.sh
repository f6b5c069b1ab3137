#!/bin/sh
# Install the build into a temporary prefix, then build consumer.c against it
# twice: with pkg-config and with find_package(autd3); run both.
set -eu
build="$1" src="$2" cc="$3" cxx="${4:-}"  # the build's own compilers (cross builds too)
tmp=$(mktemp -d /tmp/autd3-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
"$cc" "$src/consumer.c" $(pkg-config --cflags --libs autd3) -o "$tmp/app-pc"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/app-pc"
# The C++ binding is installed with the C headers (include/autd3/autd3.hpp and autd3/cpp/): the C++ focus
# example built against the installed prefix only.
if [ -n "$cxx" ] && command -v "$cxx" > /dev/null 2>&1; then
  [ -f "$tmp/prefix/include/autd3/autd3.hpp" ] && [ -f "$tmp/prefix/include/autd3/cpp/base.hpp" ] ||
    { echo "consumer: autd3.hpp not installed"; exit 1; }
  "$cxx" -std=c++17 -Wall -Wextra -Werror "$src/../../examples/focus.cpp" $(pkg-config --cflags --libs autd3) -o "$tmp/app-cpp"
  LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/app-cpp" | grep "after close: 0 transducers emitting"
else
  echo "consumer: no C++ compiler configured: the installed C++ header is not compiled"
fi
mkdir "$tmp/proj"
cat > "$tmp/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(autd3 REQUIRED)
add_executable(app $src/consumer.c)
target_link_libraries(app autd3::autd3)
CM
cmake -S "$tmp/proj" -B "$tmp/proj/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_COMPILER="$cc" > /dev/null
cmake --build "$tmp/proj/b" > /dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/proj/b/app"
