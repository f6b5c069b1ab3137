"""Every ctypes mirror has the C struct's size and every field its offset, as the C compiler sees
the headers (a header that changes without the mirror fails here, not in a user's program)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from libautd3 import _native as N

ROOT = Path(__file__).resolve().parents[3]


def _c_program() -> str:
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "autd3/autd3.h"', "int main(void) {"]
    for cname, py in N.MIRRORS.items():
        lines.append(f'  printf("{cname} %zu\\n", sizeof({cname}));')
        for fname, _ in py._fields_:
            lines.append(f'  printf("{cname}.{fname} %zu\\n", offsetof({cname}, {fname}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines)


def test_mirrors_match_the_c_layout(tmp_path: Path) -> None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to compare the layouts with (ctest: python.layout reports it as a skip)")
    src = tmp_path / "layout.c"
    src.write_text(_c_program())
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", str(ROOT / "include"), str(src), "-o", str(exe)], check=True)
    out = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                               check=True).stdout.splitlines())
    bad = []
    for cname, py in N.MIRRORS.items():
        if int(out[cname]) != ctypes.sizeof(py):
            bad.append(f"sizeof({cname}) C {out[cname]} != ctypes {ctypes.sizeof(py)}")
        for fname, _ in py._fields_:
            off = getattr(py, fname).offset
            if int(out[f"{cname}.{fname}"]) != off:
                bad.append(f"offsetof({cname}, {fname}) C {out[f'{cname}.{fname}']} != ctypes {off}")
    assert not bad, "\n".join(bad)


def test_size_tags_come_from_the_library() -> None:
    o = N.lib().autd3_link_option_default(1)
    assert o.size == N.LinkOption.u.offset + ctypes.sizeof(N.EchocatOption)
    c = N.ClientConfig()
    N.lib().autd3_client_config_init(ctypes.byref(c), ctypes.sizeof(c))
    assert c.size == ctypes.sizeof(c)
    assert N.lib().autd3_client_config_validate(ctypes.byref(c)) == 0
