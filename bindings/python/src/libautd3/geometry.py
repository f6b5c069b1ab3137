"""Geometry: devices placed by position and rotation; transducer positions as NumPy arrays."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import numpy.typing as npt

from . import _check
from ._native import MAX_DEVICES, NUM_TRANSDUCERS, DevicePose, lib
from .errors import raise_for

__all__ = ["AUTD3", "Geometry", "DEVICE_WIDTH_MM", "DEVICE_HEIGHT_MM", "TRANSDUCER_PITCH_MM", "NUM_TRANSDUCERS"]

DEVICE_WIDTH_MM = 192.0
DEVICE_HEIGHT_MM = 151.4
TRANSDUCER_PITCH_MM = 10.16


@dataclass(frozen=True)
class AUTD3:
    """One device: `pos` (mm) of transducer 0 and rotation quaternion `rot` = (w, x, y, z)."""

    pos: Sequence[float] = (0.0, 0.0, 0.0)
    rot: Sequence[float] = (1.0, 0.0, 0.0, 0.0)


def _vec(name: str, v: Any, n: int) -> list[float]:
    try:
        items = list(v)
    except TypeError:
        raise TypeError(f"{name}: expected {n} numbers, got {type(v).__name__}") from None
    if len(items) != n:
        raise ValueError(f"{name}: expected {n} numbers, got {len(items)}")
    return [_check.real(f"{name}[{i}]", x) for i, x in enumerate(items)]


class Geometry:
    """An ordered list of devices (bus order). ``Geometry([AUTD3(pos=(0, 0, 0))])`` or ``Geometry.row(n)``.

    The C geometry is owned by this object and freed with it. ``transducer_positions(dev)`` and
    ``positions`` give NumPy arrays (mm, world frame), computed by the library.
    """

    def __init__(self, devices: Iterable[AUTD3]) -> None:
        devs = list(devices)
        for i, d in enumerate(devs):
            if not isinstance(d, AUTD3):
                raise TypeError(f"devices[{i}]: expected libautd3.AUTD3, got {type(d).__name__}")
        _check.integer("number of devices", len(devs), 1, MAX_DEVICES)
        poses = (DevicePose * len(devs))()
        for i, d in enumerate(devs):
            poses[i].pos[:] = _vec(f"devices[{i}].pos", d.pos, 3)
            poses[i].rot[:] = _vec(f"devices[{i}].rot", d.rot, 4)
        self._init(len(devs), poses)
        self.devices: tuple[AUTD3, ...] = tuple(devs)

    @classmethod
    def row(cls, n: int) -> "Geometry":
        """`n` devices in a row along x (the library's default placement)."""
        _check.integer("n", n, 1, MAX_DEVICES)
        g = cls.__new__(cls)
        g._init(n, None)
        g.devices = tuple(AUTD3(pos=(i * DEVICE_WIDTH_MM, 0.0, 0.0)) for i in range(n))
        return g

    def _init(self, n: int, poses: Optional[ctypes.Array[DevicePose]]) -> None:
        self._h = ctypes.c_void_p()
        self._positions: Optional[npt.NDArray[np.float32]] = None
        self._directions: Optional[npt.NDArray[np.float32]] = None
        raise_for(lib().autd3_geometry_create(n, poses, ctypes.byref(self._h)))

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h:
            lib().autd3_geometry_free(h)
            self._h = ctypes.c_void_p()

    @property
    def handle(self) -> ctypes.c_void_p:
        return self._h

    @property
    def num_devices(self) -> int:
        return int(lib().autd3_geometry_num_devices(self._h))

    def __len__(self) -> int:
        return self.num_devices

    @property
    def num_transducers(self) -> int:
        return self.num_devices * NUM_TRANSDUCERS

    @property
    def sound_speed(self) -> float:
        """Sound speed (mm/s) the gains use; default 340 000."""
        return float(lib().autd3_geometry_sound_speed(self._h))

    @sound_speed.setter
    def sound_speed(self, mm_per_s: float) -> None:
        raise_for(lib().autd3_geometry_set_sound_speed(self._h, _check.real("sound_speed", mm_per_s)))
        # positions do not depend on it; nothing cached changes

    def _fill(self) -> None:
        n = self.num_devices
        pos = np.empty((n, NUM_TRANSDUCERS, 3), dtype=np.float32)
        dirs = np.empty((n, NUM_TRANSDUCERS, 3), dtype=np.float32)
        p = (ctypes.c_float * 3)()
        d = (ctypes.c_float * 3)()
        fn = lib().autd3_geometry_transducer
        for dev in range(n):
            for tr in range(NUM_TRANSDUCERS):
                raise_for(fn(self._h, dev, tr, p, d))
                pos[dev, tr] = p[:]
                dirs[dev, tr] = d[:]
        pos.setflags(write=False)
        dirs.setflags(write=False)
        self._positions, self._directions = pos, dirs

    @property
    def positions(self) -> npt.NDArray[np.float32]:
        """All transducer positions, shape (num_devices, 249, 3), mm (read-only)."""
        if self._positions is None:
            self._fill()
        assert self._positions is not None
        return self._positions

    @property
    def directions(self) -> npt.NDArray[np.float32]:
        """Emission directions (unit vectors), shape (num_devices, 249, 3) (read-only)."""
        if self._directions is None:
            self._fill()
        assert self._directions is not None
        return self._directions

    def transducer_positions(self, dev: int) -> npt.NDArray[np.float32]:
        """Device `dev`'s transducer positions, shape (249, 3), mm."""
        _check.integer("dev", dev, 0, self.num_devices - 1)
        p: npt.NDArray[np.float32] = self.positions[dev]
        return p

    @property
    def center(self) -> npt.NDArray[np.float32]:
        """Mean of all transducer positions (mm), as pyautd3's ``geometry.center``."""
        c: npt.NDArray[np.float32] = np.asarray(self.positions.reshape(-1, 3).mean(axis=0), dtype=np.float32)
        return c
