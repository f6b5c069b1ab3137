#!/bin/sh
# run.sh HAVE LIBAUTD3_SO BIN MODE [ARGS]: one C# test (tests/csharp/CMakeLists.txt). HAVE is TRUE when mcs and
# mono were found at configure time; BIN holds Autd3.dll, test_csharp.exe and layout_cs.exe.
#   emulator | echocat IF   test_csharp.exe in that mode
#   remote                  test_csharp.exe remote in a private network namespace (unshare -rn) with multicast on
#                           loopback, so the server's DNS-SD advertisement and the discovery stay inside it
#   exports                 the DllImports of libautd3 = the functions libautd3.so exports (less link_driver.h's)
#   layout C_PRINTER        C's sizes/offsets = C#'s
#   layout_win WIN_RUN PREFIX HAVE_WIN EXE LAYOUT_C   the MinGW printer under wine = C#'s
set -eu
have=$1 lib=$2 bin=$3 mode=$4
shift 4
if [ "$have" != TRUE ]; then
  echo "SKIPPED: mcs or mono not installed (Debian mono-mcs, mono-runtime: scripts/setup-deps.sh)"
  exit 77
fi
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tmp=$(mktemp -d /tmp/autd3-cs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The link implementers' functions (link_driver.h): a binding never implements a link.
driver='^(autd3_link_init|autd3_link_init_sized|autd3_link_count_cycle|autd3_link_report_device_reset|autd3_link_report_inputs|autd3_link_report_stage_deadline|autd3_link_register|autd3_set_error|autd3_link_services|autd3_link_set_measured|autd3_link_report_exchange|autd3_link_report_phase|autd3_link_report_dc_time|autd3_link_add_counts)$'
case "$mode" in
  emulator|echocat) exec mono "$bin/test_csharp.exe" "$mode" "$@" ;;
  remote)
    command -v unshare > /dev/null || { echo "SKIPPED: unshare not available"; exit 77; }
    exec unshare -rn sh -c 'ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo &&
                            exec mono "$1/test_csharp.exe" remote' sh "$bin" ;;
  exports)
    nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^autd3_/ {print $3}' | grep -Ev "$driver" | sort -u > "$tmp/so"
    mono "$bin/test_csharp.exe" entrypoints | awk '$2 == "autd3" {print $1}' | sort -u > "$tmp/cs"
    [ -s "$tmp/so" ] || { echo "no exports read from $lib"; exit 1; }
    echo "libautd3 exports $(wc -l < "$tmp/so") functions (link_driver.h's left out); C# declares $(wc -l < "$tmp/cs")"
    if ! diff "$tmp/so" "$tmp/cs" > "$tmp/d"; then
      echo "mismatch (< exported without a DllImport, > DllImport the library does not export):"
      cat "$tmp/d"
      exit 1
    fi
    echo "every exported function has a DllImport" ;;
  layout)
    "$1" > "$tmp/c0"
    sort "$tmp/c0" > "$tmp/c"
    # Its own status too: it fails when a mirror is not blittable.
    mono "$bin/layout_cs.exe" > "$tmp/cs0"
    sort "$tmp/cs0" > "$tmp/cs"
    echo "C: $(grep -c ' size ' "$tmp/c") structs, $(wc -l < "$tmp/c") lines; C#: $(grep -c ' size ' "$tmp/cs") structs"
    diff "$tmp/c" "$tmp/cs" && echo "x86-64 Linux: every size and offset equal" ;;
  layout_win)
    win_run=$1 prefix=$2 have_win=$3 exe=$4
    if [ "$have_win" != TRUE ]; then echo "SKIPPED: MinGW-w64 or wine not installed"; exit 77; fi
    sh "$win_run" "$prefix" TRUE "$exe" > "$tmp/w0"
    tr -d '\r' < "$tmp/w0" | sort > "$tmp/w"
    mono "$bin/layout_cs.exe" > "$tmp/cs0"
    sort "$tmp/cs0" > "$tmp/cs"
    [ -s "$tmp/w" ] || { echo "the Windows printer printed nothing"; exit 1; }
    echo "Windows x64 (MinGW, wine): $(grep -c ' size ' "$tmp/w") structs, $(wc -l < "$tmp/w") lines"
    diff "$tmp/w" "$tmp/cs" && echo "Windows x64 C layout = C# layout (mono's marshaller, see docs/bindings.md)" ;;
  unity)
    # The package script on this build, then the package's Runtime and the sample compiled (UnityEngine stand-in).
    src=$1 build=$2
    sh "$src/bindings/csharp/unity/make-package.sh" "$tmp/pkg" "$build"
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["name"]=="com.autd3.libautd3" and p["samples"]' "$tmp/pkg/package.json"
    [ -f "$tmp/pkg/Plugins/Linux/x86_64/libautd3.so.meta" ] || { echo "no Linux x86_64 plugin"; exit 1; }
    grep -q "OS: Linux" "$tmp/pkg/Plugins/Linux/x86_64/libautd3.so.meta" || { echo "the Linux plugin's .meta does not enable Linux"; exit 1; }
    # The MinGW build (tests/platform) is part of this build when wine tests are on: its DLL must be packaged.
    if [ -f "$build/tests/platform/win-build/bin/libautd3.dll" ]; then
      [ -f "$tmp/pkg/Plugins/Windows/x86_64/autd3.dll" ] || { echo "the MinGW build exists but no Windows plugin"; exit 1; }
      grep -q "OS: Windows" "$tmp/pkg/Plugins/Windows/x86_64/autd3.dll.meta" || { echo "the Windows plugin's .meta does not enable Windows"; exit 1; }
      echo "Windows x86_64 plugin packaged"
    fi
    for f in "$src"/bindings/csharp/src/*.cs; do [ -f "$tmp/pkg/Runtime/$(basename "$f")" ] || { echo "Runtime lacks $f"; exit 1; }; done
    mcs -nologo -unsafe -warnaserror -target:library -out:"$tmp/Autd3.dll" "$tmp/pkg/Runtime/"*.cs
    mcs -nologo -warnaserror -target:library -out:"$tmp/UnityEngine.dll" "$src/bindings/csharp/tests/UnityEngineStub.cs"
    mcs -nologo -warnaserror -target:library -r:"$tmp/Autd3.dll" -r:"$tmp/UnityEngine.dll" -out:"$tmp/Sample.dll" "$tmp/pkg/Samples~/Focus/"*.cs
    echo "the package's Runtime and the Focus sample compile (Unity itself is not run)" ;;
  layout_win_managed)
    echo "SKIPPED: no Windows CLR (Mono or .NET for Windows) is reachable here, so the managed layout under Windows x64"
    echo "is not measured; csharp.layout_win compares the Windows C layout with Mono's on Linux (docs/bindings.md)"
    exit 77 ;;
  *) echo "run.sh: unknown mode $mode"; exit 2 ;;
esac
