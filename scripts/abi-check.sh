#!/usr/bin/env bash
# Compare the ABI of libautd3.so with the committed baseline abi/libautd3.abi
# (libabigail: abidw dumps, abidiff compares). Any difference fails: a change of
# the public ABI must come with a regenerated baseline in the same commit, so
# that it shows up in review. The message says whether abidiff judges the
# change incompatible (existing binaries break).
#
#   scripts/abi-check.sh                 build build-abi/ (RelWithDebInfo) and compare
#   scripts/abi-check.sh --lib FILE      compare FILE (built with -g) instead
#   scripts/abi-check.sh --update [...]  write the baseline from the same build
#
# Exit: 0 same ABI (or --update done), 1 different, 77 cannot check here
# (no abidw/abidiff, no debug info, other architecture than the baseline).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
baseline="$root/abi/libautd3.abi"
suppr="$root/abi/libautd3.suppr"
update=0 lib=""
while [ $# -gt 0 ]; do
  case "$1" in
    --update) update=1 ;;
    --lib) lib="$2"; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "abi-check: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for t in abidw abidiff; do
  command -v "$t" > /dev/null || { echo "abi-check: SKIPPED: $t not found (Debian: apt-get install abigail-tools)"; exit 77; }
done

if [ -z "$lib" ]; then
  # A fixed configuration: only the options that decide what libautd3.so
  # exports matter; the separate link libraries and everything else are off.
  build="${BUILD_ABI:-$root/build-abi}"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DAUTD3_BUILD_TOOLS=OFF \
    -DAUTD3_LINK_SOEM=OFF -DAUTD3_LINK_ETHERCRAB=OFF > /dev/null
  cmake --build "$build" --target autd3_shared -j "$(nproc)" > /dev/null
  lib="$build/libautd3.so"
fi
lib=$(readlink -f "$lib")
[ -f "$lib" ] || { echo "abi-check: $lib not found" >&2; exit 2; }
# (No `grep -q` after a pipe: under pipefail, readelf's SIGPIPE would read as "no debug info".)
if ! readelf -S "$lib" | grep '\.debug_info' > /dev/null; then
  echo "abi-check: SKIPPED: $lib has no debug info (build it as RelWithDebInfo or Debug)"; exit 77
fi

tmp=$(mktemp -d /tmp/autd3-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# --load-all-types: also the enums no exported function mentions (see the
# suppression file). Paths are made relative to the source tree so that the
# baseline does not depend on where it was built.
abidw --load-all-types --drop-private-types --headers-dir "$root/include/autd3" --suppressions "$suppr" \
  --no-corpus-path --no-comp-dir-path --type-id-style hash --out-file "$tmp/raw.abi" "$lib"
sed -e "s|filepath='$root/|filepath='|g" -e "s|path='$root/|path='|g" "$tmp/raw.abi" > "$tmp/current.abi"

if [ "$update" = 1 ]; then
  mkdir -p "$(dirname "$baseline")"
  cp "$tmp/current.abi" "$baseline"
  echo "abi-check: wrote $baseline ($(grep -c '<elf-symbol ' "$baseline") exported symbols); commit it"
  exit 0
fi

[ -f "$baseline" ] || { echo "abi-check: no baseline $baseline; run scripts/abi-check.sh --update" >&2; exit 1; }
want=$(grep -m1 -o "architecture='[^']*'" "$baseline" || true)
have=$(grep -m1 -o "architecture='[^']*'" "$tmp/current.abi" || true)
if [ -n "$want" ] && [ "$want" != "$have" ]; then
  echo "abi-check: SKIPPED: the baseline is for $want, this library is $have"; exit 77
fi

set +e
abidiff --non-reachable-types --suppressions "$suppr" "$baseline" "$tmp/current.abi" > "$tmp/diff.txt" 2>&1
rc=$?
set -e
cat "$tmp/diff.txt"
# abidiff's status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
if [ $((rc & 3)) -ne 0 ]; then
  echo "abi-check: abidiff failed (status $rc)" >&2; exit 2
elif [ $((rc & 8)) -ne 0 ]; then
  echo "abi-check: FAIL: incompatible ABI change against abi/libautd3.abi: existing binaries break." >&2
  echo "  Intended? It needs a new soname (project VERSION: the minor while 0.x, else the major)" >&2
  echo "  unless nothing was released since the baseline; then run scripts/abi-check.sh --update." >&2
  exit 1
elif [ $((rc & 4)) -ne 0 ]; then
  echo "abi-check: FAIL: the ABI changed and abi/libautd3.abi was not regenerated. abidiff does not call it" >&2
  echo "  incompatible (added functions are not; a removed enumerator is not flagged either): read the report." >&2
  echo "  Intended: run scripts/abi-check.sh --update and commit abi/libautd3.abi with the change." >&2
  exit 1
fi
echo "abi-check: ABI matches abi/libautd3.abi ($(basename "$lib"))"
