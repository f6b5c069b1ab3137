#!/bin/sh
# Run one case of the MinGW-built seam test (test_platform.c against
# src/platform/win) under wine: `win_run.sh PREFIX EXE CASE`, or
# `win_run.sh PREFIX EXE --boot` to create the wine prefix (a ctest fixture).
#
# wine runs inside a private user + network namespace (unshare -rn): its
# wineserver starts there and is killed before the namespace ends, so none is
# ever left running on the host. The cases run one at a time (RESOURCE_LOCK) for
# that reason: they share the prefix, and so one wineserver.
set -eu
prefix=$1 exe=$2 what=$3
if [ -z "$exe" ] || [ ! -f "$exe" ]; then
  echo "SKIPPED: no Windows build of the seam test: MinGW-w64 (x86_64-w64-mingw32-gcc) or wine is not installed (scripts/setup-deps.sh installs both)"
  exit 77
fi
wine=$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)
[ -x "$wine" ] || { echo "SKIPPED: wine not found"; exit 77; }
export WINEPREFIX="$prefix" WINEDEBUG=-all WINE="$wine" WINESERVER="$wineserver" EXE="$exe" WHAT="$what"
exec unshare -rn sh -c '
  if [ "$WHAT" = --boot ]; then "$WINE" wineboot -i >/dev/null 2>&1; rc=$?
  else "$WINE" "$EXE" "$WHAT"; rc=$?; fi
  "$WINESERVER" -k 2>/dev/null || true
  exit $rc'
