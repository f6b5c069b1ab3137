#!/bin/sh
# Configure the project with nothing but a toolchain file (what a user types
# first), as cmake/toolchains/<name>.cmake documents it: configure must
# succeed; a link that cannot be built for the target is skipped by configure.
# Usage: configure.sh <source dir> <toolchain file> <scratch dir> <cmake>
set -eu
src=$1; tc=$2; dir=$3; cmake=$4
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
rm -rf "$dir" "$dir.log"
echo "OK: configured with $(basename "$tc") alone"
