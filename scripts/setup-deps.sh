#!/usr/bin/env bash
# Install what building and testing libautd3 needs, only what is missing.
# Idempotent; called by `make demo` and `make test` on every run, so it must be
# quick when everything is there. Needs root (or sudo) for apt-get.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Debian packages: compiler and build, raw-socket tests (iproute2 for veth,
# util-linux for unshare), the libpcap back end, clang for the fuzz targets,
# tshark for the capture checks.
APT_PKGS=(cmake make gcc clang libpcap-dev iproute2 util-linux tshark python3 python3-pip python3-venv pkg-config)
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

# Python test peers (independent implementations), in a venv of the build tree.
VENV="${AUTD3_VENV:-$(pwd)/build/.venv}"
PY_PKGS=(pysoem pyads autd3 autd3-link-remote autd3-link-twincat)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
need=()
for p in "${PY_PKGS[@]}"; do
  "$VENV/bin/python" -m pip show -q "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-deps: pip installing ${need[*]}"
  # A peer that cannot be installed makes its tests skip (by name), not fail the build.
  for p in "${need[@]}"; do
    "$VENV/bin/python" -m pip install -q "$p" >/dev/null 2>&1 || echo "setup-deps: warning: pip could not install $p"
  done
fi
