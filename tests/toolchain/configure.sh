#!/bin/sh
# Configure the project with nothing but a toolchain file (what a user types
# first), as cmake/toolchains/<name>.cmake documents it: configure must
# succeed; a link that cannot be built for the target is skipped by configure.
# With `build`, then build everything as that user would (cmake --build):
# a link configure let through must also link (the MinGW build with cargo
# present once stopped at EtherCrab's link step).
# Usage: configure.sh <source dir> <toolchain file> <scratch dir> <cmake> [build]
set -eu
src=$1; tc=$2; dir=$3; cmake=$4; mode=${5:-configure}
# The compiler is set by the toolchain file or by a file it includes from
# its own folder (cmake/Autd3MacosZig.cmake for both macOS files).
files=$tc
for inc in $(sed -n 's/^include(\${CMAKE_CURRENT_LIST_DIR}\/\([^ )]*\)).*/\1/p' "$tc"); do
  files="$files $(dirname "$tc")/$inc"
done
cc=$(cat $files | sed -n 's/^set(CMAKE_C_COMPILER \([^ )]*\)).*/\1/p' | head -n 1)
case $cc in
  *zig-cc) cc=${AUTD3_ZIG_PYTHON:-$src/build/.venv-zig/bin/python} ;;  # scripts/zig-cc runs ziglang from there
esac
if [ -n "$cc" ] && ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIP: compiler $cc of $(basename "$tc") is not installed"
  exit 77
fi
rm -rf "$dir"
"$cmake" -S "$src" -B "$dir" --toolchain "$tc" -DCMAKE_BUILD_TYPE=Release > "$dir.log" 2>&1 || {
  cat "$dir.log"; echo "FAIL: configure with $(basename "$tc") failed"; exit 1; }
grep -E 'link: (skipped|building|NOT BUILT|OFF|disabled)' "$dir.log" || true
if [ "$mode" = build ]; then
  echo "cargo: $(command -v cargo || ls "$HOME/.cargo/bin/cargo" 2>/dev/null || echo 'not installed (EtherCrab is left out by that alone)')"
  "$cmake" --build "$dir" -j 2 > "$dir.log" 2>&1 || {
    tail -n 40 "$dir.log"; echo "FAIL: building with $(basename "$tc") alone failed"; exit 1; }
  echo "OK: configured and built with $(basename "$tc") alone"
else
  echo "OK: configured with $(basename "$tc") alone"
fi
rm -rf "$dir" "$dir.log"
