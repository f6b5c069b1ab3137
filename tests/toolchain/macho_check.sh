#!/bin/sh
# macho_check.<case>: scripts/macho-check.sh (the macOS stage's link check) fed
# Mach-O files made here with Zig's linker, each with one fault, must fail
# saying so; the clean one must pass.
# Usage: macho_check.sh <source dir> <scratch dir> <case>
set -eu
src=$1; dir=$2; case=$3
check=$src/scripts/macho-check.sh
zig=$src/scripts/zig-cc
py=${AUTD3_ZIG_PYTHON:-$src/build/.venv-zig/bin/python}
if [ ! -x "$py" ]; then
  echo "SKIP: Zig (PyPI ziglang in $py) is not installed (scripts/setup-deps.sh installs it)"; exit 77
fi
if [ "$case" != missing_nm ] && ! command -v "${LLVM_NM:-llvm-nm}" >/dev/null 2>&1; then
  echo "SKIP: llvm-nm is not installed (apt-get install llvm; scripts/setup-deps.sh installs it)"; exit 77
fi
rm -rf "$dir"; mkdir -p "$dir/in"
cd "$dir"
printf '#include <stdio.h>\nint good(void) { return puts("x"); }\n' > good.c
printf 'extern int foreign_sym(void);\nint uses(void) { return foreign_sym(); }\n' > foreign.c
cc() { AUTD3_ZIG_PYTHON=$py "$zig" -target aarch64-macos -shared "$@"; }
cc -o in/good.dylib good.c

# expect <rc> <text>: macho-check on in/ exits with <rc> and prints <text>.
expect() {
  rc=0; out=$(sh "$check" in 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -eq "$1" ] || { echo "FAIL: macho-check exited $rc, expected $1"; exit 1; }
  echo "$out" | grep -q -F -e "$2" || { echo "FAIL: macho-check did not say: $2"; exit 1; }
  echo "OK: $case"
}
case $case in
  accepts_system_only) expect 0 "1 Mach-O files, 0 failed" ;;
  rejects_foreign_library)
    # a symbol bound to a library macOS does not ship (a .tbd stub stands for it)
    printf -- "--- !tapi-tbd\ntbd-version: 4\ntargets: [ arm64-macos ]\ninstall-name: '/opt/x/libforeign.dylib'\nexports:\n  - targets: [ arm64-macos ]\n    symbols: [ _foreign_sym ]\n...\n" > libforeign.tbd
    cc -o in/foreign.dylib foreign.c -L. -lforeign
    expect 1 "_foreign_sym (from libforeign)" ;;
  rejects_dynamic_lookup)
    cc -o in/lookup.dylib foreign.c -Wl,-undefined,dynamic_lookup
    expect 1 "in/lookup.dylib has undefined symbols outside the system" ;;
  rejects_unreadable)
    printf '\317\372\355\376this is no Mach-O file' > in/broken.dylib
    expect 1 "cannot read in/broken.dylib" ;;
  missing_nm) LLVM_NM=/nonexistent/llvm-nm expect 1 "/nonexistent/llvm-nm not found" ;;
  rejects_no_macho) rm -f in/good.dylib; expect 1 "no Mach-O file under in" ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
rm -rf "$dir"
