#!/bin/sh
# Every Mach-O file under the given folders must link with no undefined symbol
# beyond the system's: each undefined symbol has to be bound (two-level
# namespace) to a library macOS ships (libSystem; libpcap, which SOEM's macOS
# port calls) or to one of this project's own dylibs (libautd3*), never left to
# dynamic lookup. Uses llvm-nm's Darwin format (`-m`), which prints
# "(undefined) external _sym (from <dylib>)".
# Fails (exit 1) on a foreign or unbound symbol, on a file llvm-nm cannot read,
# when llvm-nm is missing, and when there is no Mach-O file at all.
# Usage: macho-check.sh <dir>...   (LLVM_NM overrides the llvm-nm used)
set -eu
nm=${LLVM_NM:-llvm-nm}
if ! command -v "$nm" >/dev/null 2>&1; then
  echo "FAIL: $nm not found (Debian: apt-get install llvm; scripts/setup-deps.sh installs it)"
  exit 1
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for dir in "$@"; do
  [ -d "$dir" ] || { echo "FAIL: no folder $dir"; exit 1; }
  find "$dir" -type f -not -path '*/CMakeFiles/*' \( -perm -u+x -o -name '*.dylib' \) >> "$list"
done
files=0; bad=0
while IFS= read -r f; do
  head -c 4 "$f" | od -An -tx1 | grep -q 'cf fa ed fe' || continue
  files=$((files + 1))
  if ! out=$("$nm" -m -u "$f" 2>&1); then
    echo "FAIL: $nm cannot read $f:"; echo "$out" | head -5
    bad=$((bad + 1))
    continue
  fi
  foreign=$(echo "$out" | grep -v -e '^$' | grep -v -E '\(from (libSystem|libpcap|libautd3[^)]*)\)$' || true)
  if [ -n "$foreign" ]; then
    echo "FAIL: $f has undefined symbols outside the system:"; echo "$foreign" | head -20
    bad=$((bad + 1))
  fi
done < "$list"
[ "$files" -gt 0 ] || { echo "FAIL: no Mach-O file under $*"; exit 1; }
echo "macho-check: $files Mach-O files, $bad failed"
[ "$bad" -eq 0 ]
