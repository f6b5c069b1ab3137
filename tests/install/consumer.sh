#!/bin/sh
# Install the build into a temporary prefix, then build consumer.c against it
# twice: with pkg-config and with find_package(autd3); run both.
set -eu
build="$1" src="$2" cc="$3"
tmp=$(mktemp -d /tmp/autd3-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
"$cc" "$src/consumer.c" $(pkg-config --cflags --libs autd3) -o "$tmp/app-pc"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/app-pc"
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
