"""Print the wheel platform tag a macOS dylib supports: macosx_<major>_<minor>_<arch>, from the
minimum macOS version recorded in its load commands (LC_BUILD_VERSION, or the older
LC_VERSION_MIN_MACOSX; layouts from Apple's <mach-o/loader.h>), so that the wheel's tag is what the
binary really needs. Exit 1 if the file is not a 64-bit Mach-O for macOS.

    python macho_minos.py libautd3.dylib      ->  macosx_11_0_arm64
"""

from __future__ import annotations

import struct
import sys

MH_MAGIC_64 = 0xFEEDFACF
CPU = {0x01000007: "x86_64", 0x0100000C: "arm64"}
LC_VERSION_MIN_MACOSX = 0x24
LC_BUILD_VERSION = 0x32
PLATFORM_MACOS = 1


def tag(path: str) -> str:
    with open(path, "rb") as f:
        data = f.read()
    magic, cputype, _, _, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != MH_MAGIC_64 or cputype not in CPU:
        raise ValueError(f"{path}: not a 64-bit little-endian Mach-O for x86_64 or arm64")
    off = 32  # sizeof(struct mach_header_64)
    minos = None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, off)
        if cmd == LC_BUILD_VERSION:
            platform, version = struct.unpack_from("<II", data, off + 8)
            if platform != PLATFORM_MACOS:
                raise ValueError(f"{path}: built for platform {platform}, not macOS")
            minos = version
        elif cmd == LC_VERSION_MIN_MACOSX:
            (minos,) = struct.unpack_from("<I", data, off + 8)
        off += size
    if minos is None:
        raise ValueError(f"{path}: no minimum macOS version recorded")
    major, minor = minos >> 16, (minos >> 8) & 0xFF
    if major >= 11:
        minor = 0  # pip matches macOS 11 and later by major version only (PEP 425 / packaging.tags)
    return f"macosx_{major}_{minor}_{CPU[cputype]}"


if __name__ == "__main__":
    try:
        print(tag(sys.argv[1]))
    except (OSError, ValueError, struct.error) as e:
        print(f"macho_minos: {e}", file=sys.stderr)
        sys.exit(1)
