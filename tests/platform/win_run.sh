#!/bin/sh
# Run one case of a MinGW-built test under wine (tests/platform/CMakeLists.txt):
#   win_run.sh PREFIX HAVE EXE CASE [PEER...]
#                                      one case (exit code: the case's; 77 = skipped);
#                                      PEER, a Linux command, runs beside it in the
#                                      namespace (AUTD3_TEST_PEER=1 tells the case);
#                                      CASE may be several arguments of a program
#                                      (split at spaces); with AUTD3_PEER_READY=FILE
#                                      set, EXE starts once the peer created FILE
#   win_run.sh PREFIX HAVE --boot      create the wine prefix (ctest fixture set-up)
#   win_run.sh PREFIX HAVE --stop      stop its wineserver (fixture clean-up)
# HAVE is TRUE when MinGW-w64 and wine were found at configure time.
#
# Every wine process runs inside a private user + network namespace
# (unshare -rn, loopback up): the wineserver is started by the first case,
# inside that case's namespace, and serves the later ones (same prefix) until
# it idles out or --stop; none is ever started on the host's network. Wine
# creates sockets in the wineserver, so they live in that first namespace:
# harmless for cases that talk to themselves, but a case with a peer gets a
# prefix and a wineserver of its own (see below and CMakeLists.txt).
set -eu
prefix=$1 have=$2 what=$3
if [ "$have" != TRUE ]; then
  echo "SKIPPED: no Windows build: MinGW-w64 (x86_64-w64-mingw32-gcc) or wine is not installed (scripts/setup-deps.sh installs both)"
  exit 77
fi
wine=$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)
export WINEPREFIX="$prefix" WINEDEBUG=-all WINE="$wine" WINESERVER="$wineserver" WHAT="$what" CASE="${4:-}"
if [ $# -gt 4 ]; then shift 4; else shift $#; fi
exec unshare -rn sh -c '
  ip link set lo up
  case "$WHAT" in
    --boot) "$WINE" wineboot -i >/dev/null 2>&1; rc=$?; "$WINESERVER" -k 2>/dev/null; exit $rc ;;
    --stop) "$WINESERVER" -k 2>/dev/null; exit 0 ;;
    *)
      peer=""
      if [ $# -gt 0 ]; then
        # Wine creates sockets in its wineserver, so the case needs one of its
        # own, started here (beside the peer), not one lingering in another
        # case namespace: stop any first, and this one at the end.
        "$WINESERVER" -k 2>/dev/null || true
        # -k only signals: wait until that server is gone, or the case could
        # still reach it (and see the other namespace: "adapters: none").
        "$WINESERVER" -w 2>/dev/null || true
        [ -z "${AUTD3_PEER_READY:-}" ] || rm -f "$AUTD3_PEER_READY"
        "$@" >/dev/null 2>&1 &
        peer=$!
        export AUTD3_TEST_PEER=1
        if [ -n "${AUTD3_PEER_READY:-}" ]; then
          i=0
          while [ ! -e "$AUTD3_PEER_READY" ] && [ $i -lt 600 ] && kill -0 "$peer" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
          [ -e "$AUTD3_PEER_READY" ] || { echo "win_run.sh: the peer did not become ready: $*" >&2; kill "$peer"; exit 1; }
        fi
      fi
      rc=0
      # CASE unquoted: a case name, or the arguments of a program. A case that
      # lost its wineserver ("wine client error", e.g. the shared server of
      # another case'"'"'s namespace went away under it) never ran its test: it
      # is run once more, and only then (the test'"'"'s own failures never are).
      log=$(mktemp)
      "$WINE" "$WHAT" $CASE 2> "$log" || rc=$?
      if [ $rc -ne 0 ] && grep -q "wine client error" "$log"; then
        cat "$log" >&2
        echo "win_run.sh: wine lost its server; running the case once more" >&2
        rc=0
        "$WINE" "$WHAT" $CASE 2> "$log" || rc=$?
      fi
      cat "$log" >&2
      rm -f "$log"
      if [ -n "$peer" ]; then
        "$WINESERVER" -k 2>/dev/null || true
        kill "$peer" 2>/dev/null || true
        wait "$peer" 2>/dev/null || true
      fi
      exit $rc ;;
  esac' win_run "$@"
