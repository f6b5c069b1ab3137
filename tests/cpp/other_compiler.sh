#!/bin/sh
# other_compiler.sh CXX MODE SRC INCLUDE_DIR LIBAUTD3_SO OUT WERROR: build SRC with CXX (C++17, -Wall -Wextra
# -Wshadow -Wpedantic, -Werror when WERROR is ON, -fno-exceptions when MODE is noexceptions) against the shared
# library, then run it. 77 (skipped) when CXX is not installed.
set -eu
cxx=$1 mode=$2 src=$3 inc=$4 lib=$5 out=$6 werror=$7
if [ -z "$cxx" ] || [ "${cxx%NOTFOUND}" != "$cxx" ]; then
  echo "SKIPPED: the other C++ compiler (g++ or clang++) is not installed"
  exit 77
fi
flags="-std=c++17 -Wall -Wextra -Wshadow -Wpedantic"
[ "$werror" = ON ] && flags="$flags -Werror"
[ "$mode" = noexceptions ] && flags="$flags -fno-exceptions"
libdir=$(dirname "$lib")
# shellcheck disable=SC2086
"$cxx" $flags -I"$inc" "$src" "$lib" -Wl,-rpath,"$libdir" -lpthread -o "$out"
"$out"
