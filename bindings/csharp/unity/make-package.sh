#!/bin/sh
# make-package.sh OUT [BUILD_DIR...]: assemble the Unity package com.autd3.libautd3 in OUT from this folder
# (package.json, README.md, Runtime/Autd3.asmdef, Samples~), the C# sources (bindings/csharp/src -> Runtime/)
# and the native library of every build that exists (default: build, build-aarch64, build-macos*):
#   BUILD/libautd3.so                              -> Plugins/Linux/x86_64/libautd3.so   (x86-64 build)
#   BUILD/libautd3.so of an aarch64 build          -> Plugins/Linux/arm64/libautd3.so
#   BUILD/tests/platform/win-build/bin/libautd3.dll -> Plugins/Windows/x86_64/autd3.dll (the MinGW build)
#   any libautd3.dylib under BUILD                 -> Plugins/macOS/libautd3.dylib
# with a .meta per plugin restricting it to its platform and CPU. Nothing here is committed: binaries come
# from builds. Prints what it put in; exit 1 if no native library was found.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$1
shift
[ $# -gt 0 ] || set -- "$root/build" "$root/build-aarch64" "$root"/build-macos*
rm -rf "$out"
mkdir -p "$out/Runtime" "$out/Plugins"
cp "$here/package.json" "$here/README.md" "$out/"
cp "$here/Runtime/Autd3.asmdef" "$out/Runtime/"
cp "$root/bindings/csharp/src/"*.cs "$out/Runtime/"
cp -r "$here/Samples~" "$out/"

guid() { printf '%s' "$1" | md5sum | cut -c1-32; }
# meta FILE OS CPU: a PluginImporter .meta enabling FILE for the editor and the standalone player of OS/CPU only.
meta() {
  file=$1 os=$2 cpu=$3
  case "$os" in
    Linux) standalone=Linux64 ;;
    Windows) standalone=Win64 ;;
    OSX) standalone=OSXUniversal ;;
  esac
  cat > "$file.meta" <<META
fileFormatVersion: 2
guid: $(guid "${file#"$out"/}")
PluginImporter:
  serializedVersion: 2
  isPreloaded: 0
  isOverridable: 0
  platformData:
  - first:
      Any:
    second:
      enabled: 0
  - first:
      Editor: Editor
    second:
      enabled: 1
      settings:
        CPU: $cpu
        OS: $os
  - first:
      Standalone: $standalone
    second:
      enabled: 1
      settings:
        CPU: $cpu
META
}
put() { # SRC DEST_DIR NAME OS CPU
  mkdir -p "$out/Plugins/$2"
  cp -L "$1" "$out/Plugins/$2/$3"
  meta "$out/Plugins/$2/$3" "$4" "$5"
  echo "make-package: Plugins/$2/$3 <- $1"
}
n=0
for b in "$@"; do
  [ -d "$b" ] || continue
  if [ -f "$b/libautd3.so" ]; then
    case "$(od -An -tx1 -j18 -N1 "$b/libautd3.so" | tr -d ' ')" in # ELF e_machine: 3e x86-64, b7 aarch64
      3e) put "$b/libautd3.so" Linux/x86_64 libautd3.so Linux x86_64; n=$((n + 1)) ;;
      b7) put "$b/libautd3.so" Linux/arm64 libautd3.so Linux ARM64; n=$((n + 1)) ;;
    esac
  fi
  if [ -f "$b/tests/platform/win-build/bin/libautd3.dll" ]; then
    # DllImport("autd3") finds autd3.dll on Windows.
    put "$b/tests/platform/win-build/bin/libautd3.dll" Windows/x86_64 autd3.dll Windows x86_64; n=$((n + 1))
  fi
  dylib=$(find "$b" -name 'libautd3.dylib' -o -name 'libautd3.*.dylib' 2>/dev/null | head -n 1)
  if [ -n "$dylib" ]; then put "$dylib" macOS libautd3.dylib OSX AnyCPU; n=$((n + 1)); fi
done
[ $n -gt 0 ] || { echo "make-package: no native library in $*"; exit 1; }
echo "make-package: $out ($n native libraries)"
