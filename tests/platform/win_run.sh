#!/bin/sh
# Run one case of a MinGW-built test under wine (tests/platform/CMakeLists.txt):
#   win_run.sh PREFIX HAVE EXE CASE    one case (exit code: the case's; 77 = skipped)
#   win_run.sh PREFIX HAVE --boot      create the wine prefix (ctest fixture set-up)
#   win_run.sh PREFIX HAVE --stop      stop its wineserver (fixture clean-up)
# HAVE is TRUE when MinGW-w64 and wine were found at configure time.
#
# Every wine process runs inside a private user + network namespace
# (unshare -rn, loopback up): the wineserver is started by the first case, inside that
# case's namespace, and serves the later ones (same prefix) until it idles out
# or --stop; none is ever started on the host's network.
set -eu
prefix=$1 have=$2 what=$3
if [ "$have" != TRUE ]; then
  echo "SKIPPED: no Windows build: MinGW-w64 (x86_64-w64-mingw32-gcc) or wine is not installed (scripts/setup-deps.sh installs both)"
  exit 77
fi
wine=$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)
export WINEPREFIX="$prefix" WINEDEBUG=-all WINE="$wine" WINESERVER="$wineserver" WHAT="$what" CASE="${4:-}"
exec unshare -rn sh -c '
  ip link set lo up
  case "$WHAT" in
    --boot) "$WINE" wineboot -i >/dev/null 2>&1 ;;
    --stop) "$WINESERVER" -k 2>/dev/null; exit 0 ;;
    *) exec "$WINE" "$WHAT" "$CASE" ;;
  esac'
