#!/bin/sh
# Every Mach-O file under the given folders must link with no undefined symbol
# beyond the system's: each undefined symbol has to be bound (two-level
# namespace) to libSystem or to one of this project's own dylibs (libautd3*),
# never left to dynamic lookup. Uses llvm-nm's Darwin format (`-m`), which
# prints "(undefined) external _sym (from <dylib>)".
# Usage: macho-check.sh <dir>...
set -eu
nm=${LLVM_NM:-llvm-nm}
files=0; bad=0
for dir in "$@"; do
  for f in $(find "$dir" -type f -not -path '*/CMakeFiles/*' \( -perm -u+x -o -name '*.dylib' \)); do
    head -c 4 "$f" | od -An -tx1 | grep -q 'cf fa ed fe' || continue
    files=$((files + 1))
    out=$("$nm" -m -u "$f" | grep -v -E '\(from (libSystem|libautd3[^)]*)\)$' || true)
    if [ -n "$out" ]; then
      echo "FAIL: $f has undefined symbols outside the system:"; echo "$out" | head -20
      bad=$((bad + 1))
    fi
  done
done
[ "$files" -gt 0 ] || { echo "FAIL: no Mach-O file under $*"; exit 1; }
echo "macho-check: $files Mach-O files, $bad with foreign undefined symbols"
[ "$bad" -eq 0 ]
