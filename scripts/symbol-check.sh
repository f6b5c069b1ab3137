#!/usr/bin/env bash
# Every external symbol a library defines starts with "autd3" (autd3_ public,
# autd3__ internal, autd3crab_ the EtherCrab shim's C ABI): a program that
# links libautd3.a, or loads a link library, next to its own code or another
# library cannot collide with ours.
#
#   scripts/symbol-check.sh [--rust-staticlib] FILE...
#
# A static library (.a) is read with `nm -g --defined-only` (every external
# symbol the archive defines: what a static link exposes), a shared library
# with `nm -D --defined-only` (its dynamic exports).
#
# --rust-staticlib: the files after it are Rust staticlibs (the EtherCrab
# shim's libautd3_link_ethercrab.a). Rust-mangled symbols (_ZN..., _R...) carry
# their crate's hash and cannot collide; the Rust runtime's unmangled ones
# (rust_*, __rust_*), compiler-builtins' (__*, e.g. __udivti3) and LLVM's
# (anon.<hash>.N.llvm.<hash>, DW.ref.*) are the toolchain's, counted but allowed. Only the crate's own C ABI (#[no_mangle])
# must be autd3-prefixed. That staticlib is not installed: it is linked into
# libautd3-link-ethercrab.so with --exclude-libs,ALL, which exports none of it.
#
# Exit: 0 clean, 1 a symbol without the prefix (listed), 77 nm not found.
set -euo pipefail
command -v nm > /dev/null || { echo "symbol-check: SKIPPED: nm not found (binutils)"; exit 77; }
rust=0 bad=0 checked=0
# The toolchain's names in a Rust staticlib: mangled Rust (_ZN legacy, _R v0),
# the runtime (rust_*, __rust_*), compiler-builtins (__*), LLVM's cross-unit
# promoted constants (anon.<hash>.N.llvm.<hash>), the personality reference
# (DW.ref.rust_eh_personality) and compiler-builtins' "LLVM" marker.
rust_toolchain='^(_ZN|_R|rust_|__rust_|__|anon\..*\.llvm\.|DW\.ref\.|LLVM$)'
for f in "$@"; do
  if [ "$f" = --rust-staticlib ]; then rust=1; continue; fi
  if [ ! -e "$f" ]; then echo "symbol-check: $f: no such file" >&2; exit 2; fi
  case "$f" in
    *.a) syms=$(nm -g --defined-only "$f" 2> /dev/null | awk 'NF >= 3 {print $3}') ;;
    *) syms=$(nm -D --defined-only "$f" 2> /dev/null | awk 'NF >= 3 {print $3}') ;;
  esac
  # Versioned symbols (name@VERSION) and the linker's own markers.
  # AddressSanitizer's one-definition-rule markers (__odr_asan.NAME) name
  # the global NAME they guard: NAME is what is checked.
  syms=$(printf '%s\n' "$syms" | sed -e 's/@.*//' -e 's/^__odr_asan[._]//' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)?$' | sort -u || true)
  allowed=0
  if [ $rust = 1 ]; then
    unprefixed=$(printf '%s\n' "$syms" | grep -v -E '^autd3' | grep -v -E "$rust_toolchain" || true)
    allowed=$(printf '%s\n' "$syms" | grep -v -E '^autd3' | grep -c -E "$rust_toolchain" || true)
  else
    unprefixed=$(printf '%s\n' "$syms" | grep -v -E '^autd3' || true)
  fi
  n=$(printf '%s\n' "$syms" | grep -c . || true)
  checked=$((checked + n))
  if [ -n "$unprefixed" ]; then
    echo "symbol-check: $f: $(printf '%s\n' "$unprefixed" | wc -l) of $n external symbols without the autd3 prefix:"
    printf '%s\n' "$unprefixed" | sed 's/^/  /'
    bad=1
  else
    if [ $rust = 1 ]; then
      echo "symbol-check: $f: $n external symbols: $((n - allowed)) autd3-prefixed, $allowed the Rust toolchain's (allowed)"
    else
      echo "symbol-check: $f: $n external symbols, all autd3-prefixed"
    fi
  fi
done
[ $checked -gt 0 ] || { echo "symbol-check: no symbols read" >&2; exit 2; }
exit $bad
