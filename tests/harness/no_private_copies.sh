#!/bin/sh
# Usage: no_private_copies.sh NM LIBRARY
# A link library installed beside libautd3 takes libautd3's insides only
# through the services table (include/autd3/link_driver.h,
# autd3_link_services()): no internal function of libautd3 (autd3__*) may be
# compiled into it. The header-only helpers of src/core/error_context.h are
# the exception: they are static inline, built from the public API only, and
# an unoptimised build keeps them as local symbols.
nm_tool=$1
lib=$2
# The check can fail: a library nm cannot read fails it.
syms=$("$nm_tool" "$lib") || { echo "$nm_tool cannot read $lib"; exit 1; }
found=$(printf '%s\n' "$syms" | grep ' [tT] autd3__' | grep -v -e ' autd3__error_save$' -e ' autd3__error_restore$')
if [ -n "$found" ]; then
  echo "$found"
  echo "private copies of libautd3 internals (above) in $lib"
  exit 1
fi
echo "no private copies in $lib"
