"""Argument checks the binding must make itself: ctypes truncates an out-of-range integer silently
(``c_uint8(300)`` is 44), so every integer crossing into C is checked here first."""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional

from .errors import InvalidArgumentError


def integer(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int in {lo}..{hi}, got {type(value).__name__} {value!r}")
    v = int(value)
    if not lo <= v <= hi:
        raise InvalidArgumentError(f"{name} = {v}: out of range {lo}..{hi}")
    return v


def u8(name: str, v: Any) -> int:
    return integer(name, v, 0, 0xFF)


def u16(name: str, v: Any) -> int:
    return integer(name, v, 0, 0xFFFF)


def u32(name: str, v: Any) -> int:
    return integer(name, v, 0, 0xFFFFFFFF)


def i32(name: str, v: Any) -> int:
    return integer(name, v, -(1 << 31), (1 << 31) - 1)


def u64(name: str, v: Any) -> int:
    return integer(name, v, 0, (1 << 64) - 1)


def boolean(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{name}: expected a bool, got {type(v).__name__} {v!r}")
    return v


def real(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(v).__name__} {v!r}")
    f = float(v)
    if not math.isfinite(f):
        raise InvalidArgumentError(f"{name} = {f}: must be finite")
    return f


def text(name: str, v: Optional[str]) -> Optional[bytes]:
    if v is None:
        return None
    if not isinstance(v, str):
        raise TypeError(f"{name}: expected a str or None, got {type(v).__name__} {v!r}")
    if "\0" in v:
        raise InvalidArgumentError(f"{name}: contains a NUL character")
    return v.encode("utf-8")
