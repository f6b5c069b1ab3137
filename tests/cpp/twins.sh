#!/bin/sh
# docs/cpp.md promises that every fallible call of the C++ binding exists twice: try_x() returning
# autd3::Result and x() throwing autd3::Exception (declared only with exceptions). This check lists every
# try_ function the headers define and fails naming each one without its throwing twin (`static` is a C++
# keyword: Modulation::try_static's twin is static_()).
# usage: twins.sh INCLUDE_DIR
set -u
dir="$1/autd3"
files="$dir/autd3.hpp $dir/cpp/base.hpp $dir/cpp/command.hpp"
names=$(grep -hoE 'Result<[^;{]*> try_[a-z0-9_]+\(' $files | sed -E 's/.* try_([a-z0-9_]+)\($/\1/' | sort -u)
[ -n "$names" ] || { echo "twins.sh: no try_ function found in $dir (wrong folder?)"; exit 1; }
missing=0
for n in $names; do
  twin="$n"
  [ "$n" = static ] && twin=static_
  # A definition of the twin: at the start of a line, a return type then the name then '(' (try_x( itself
  # never matches: `_` is not a separator).
  if ! grep -qE "^[[:space:]]*(static |inline )*[A-Za-z_:<>, 0-9*&]+[ *&]$twin\(" $files; then
    echo "no throwing twin for try_$n"
    missing=$((missing + 1))
  fi
done
count=$(echo "$names" | wc -l)
if [ "$missing" -ne 0 ]; then echo "twins.sh: $missing of $count try_ functions lack a throwing form"; exit 1; fi
echo "twins.sh: all $count try_ functions have a throwing form"
