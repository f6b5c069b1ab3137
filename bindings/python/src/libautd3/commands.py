"""Commands as Python objects: gains, modulations, silencer, STMs. Each one only gathers its
parameters; the frames are encoded by the library's encoders (include/autd3/command.h), never here.

A *datagram* is anything with ``frames(geometry)``: the frames to send, in order (a modulation of
more than 600 samples or an STM is several frames). A tuple or list of datagrams is sent one after
the other, as pyautd3's ``send((Sine(...), Focus(...)))``.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence, Union, overload, runtime_checkable

import numpy as np
import numpy.typing as npt

from . import _check
from . import _native as N
from .errors import InvalidArgumentError, raise_for
from .geometry import Geometry

__all__ = ["Frame", "Datagram", "Gain", "Null", "Focus", "Plane", "Bessel", "Uniform", "Custom",
           "Modulation", "Static", "Sine", "Silencer", "FociSTM", "GainSTM", "XorHash", "LOOP_INFINITE",
           "frames_of", "DatagramLike"]

LOOP_INFINITE = N.LOOP_INFINITE


class Frame:
    """One encoded frame and the buffers it points into (kept alive as long as the frame)."""

    __slots__ = ("c", "_keep")

    def __init__(self, c: N.Frame, keep: Any = None) -> None:
        self.c = c
        self._keep = keep

    @property
    def cmd(self) -> int:
        """Opcode (broadcast) or the first device's opcode."""
        if self.c.device_cmds:
            return int(self.c.device_cmds[0])
        return int(self.c.cmd)

    def __repr__(self) -> str:
        name = N.lib().autd3_cmd_name(self.cmd)
        return f"Frame({name.decode() if name else hex(self.cmd)})"


@runtime_checkable
class Datagram(Protocol):
    def frames(self, geometry: Geometry) -> list[Frame]: ...


DatagramLike = Union[Datagram, Frame, Sequence[Any]]


def frames_of(d: DatagramLike, geometry: Geometry) -> list[Frame]:
    """The frames of a datagram, a Frame, or a sequence of them, in sending order."""
    if isinstance(d, Frame):
        return [d]
    if isinstance(d, (tuple, list)):
        out: list[Frame] = []
        for x in d:
            out += frames_of(x, geometry)
        if not out:
            raise ValueError("nothing to send: an empty sequence of datagrams")
        return out
    if isinstance(d, Datagram):
        return d.frames(geometry)
    raise TypeError(f"expected a datagram (Focus, Sine, Silencer, ...), a Frame or a tuple of them, got {type(d).__name__}")


def _broadcast(cmd: N.Command) -> Frame:
    f = N.Frame()
    raise_for(N.lib().autd3_frame_broadcast(ctypes.byref(cmd), ctypes.byref(f)))
    return Frame(f, cmd)


def _per_device(cmds: Sequence[N.Command]) -> Frame:
    """A frame with device i's command cmds[i]."""
    buf = N.FrameBuffer()
    lib = N.lib()
    for i, c in enumerate(cmds):
        raise_for(lib.autd3_frame_buffer_set(ctypes.byref(buf), i, ctypes.byref(c)))
    f = N.Frame()
    raise_for(lib.autd3_frame_buffer_frame(ctypes.byref(buf), ctypes.byref(f)))
    return Frame(f, buf)


def _vec3(name: str, v: Any) -> tuple[float, float, float]:
    a = np.asarray(v, dtype=np.float64)
    if a.shape != (3,):
        raise ValueError(f"{name}: expected 3 numbers (x, y, z), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidArgumentError(f"{name}: must be finite, got {a.tolist()}")
    return float(a[0]), float(a[1]), float(a[2])


def _u8_array(name: str, v: Any, shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
    """An integer array of `shape` with every value in 0..255 (refused, never clamped or wrapped)."""
    a = np.asarray(v)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name}: expected integers 0..255, got dtype {a.dtype}")
    try:
        a = np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"{name}: shape {np.shape(v)} does not fit {shape}") from None
    if a.size and (a.min() < 0 or a.max() > 255):
        raise InvalidArgumentError(f"{name}: values must be in 0..255 (got {int(a.min())}..{int(a.max())})")
    return np.ascontiguousarray(a, dtype=np.uint8)


class _Param:
    """A command parameter checked whenever it is set, at construction and after it: an out-of-range
    value is refused (never wrapped by ctypes: ``Focus(...).intensity = 300`` raises, it does not
    become 44)."""

    def __init__(self, check: Callable[[str, Any], Any]) -> None:
        self._check = check

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._slot = "_p_" + name

    @overload
    def __get__(self, obj: None, owner: type) -> "_Param": ...

    @overload
    def __get__(self, obj: object, owner: type) -> Any: ...

    def __get__(self, obj: Optional[object], owner: type) -> Any:
        if obj is None:
            return self
        return getattr(obj, self._slot)

    def __set__(self, obj: object, value: Any) -> None:
        setattr(obj, self._slot, self._check(self._name, value))


def _u8_param(name: str, v: Any) -> int:
    return _check.u8(name, v)


def _divider(name: str, v: Any) -> int:
    return _check.integer(name, v, 1, 0xFFFF)


def _bank(name: str, v: Any) -> int:
    return _check.integer(name, v, 0, 1)


def _repeat(name: str, v: Any) -> Optional[int]:
    """None = forever; otherwise the number of repetitions (≥ 1)."""
    return None if v is None else _check.integer(name, v, 1, LOOP_INFINITE)


def _loop(rep: Optional[int]) -> int:
    """The C `rep`: AUTD3_LOOP_INFINITE for forever, else repetitions − 1."""
    return LOOP_INFINITE if rep is None else rep - 1


# ---- gains --------------------------------------------------------------------------------------


class Gain:
    """A drive (phase, intensity) per transducer, computed by the library (``autd3_gain_calc``).
    Parameters may be changed after construction; each is checked when set."""

    intensity = _Param(_u8_param)
    phase_offset = _Param(_u8_param)

    def __init__(self, intensity: int = 255, phase_offset: int = 0) -> None:
        self.intensity = intensity
        self.phase_offset = phase_offset

    def _c(self) -> N.Gain:
        raise NotImplementedError

    def _gain(self) -> N.Gain:
        g = self._c()
        g.intensity = self.intensity
        g.phase_offset = self.phase_offset
        return g

    def calc(self, geometry: Geometry) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        """(phase, intensity), each shape (num_devices, 249), as the frame would carry them."""
        g = self._gain()
        n = geometry.num_devices
        phase = np.empty((n, N.NUM_TRANSDUCERS), dtype=np.uint8)
        inten = np.empty((n, N.NUM_TRANSDUCERS), dtype=np.uint8)
        drives = (N.Drive * N.NUM_TRANSDUCERS)()
        for dev in range(n):
            raise_for(N.lib().autd3_gain_calc(ctypes.byref(g), geometry.handle, dev, drives))
            raw = np.frombuffer(memoryview(drives), dtype=np.uint8).reshape(N.NUM_TRANSDUCERS, 2)
            phase[dev] = raw[:, 0]
            inten[dev] = raw[:, 1]
        return phase, inten

    def frames(self, geometry: Geometry) -> list[Frame]:
        g = self._gain()
        buf = N.FrameBuffer()
        f = N.Frame()
        raise_for(N.lib().autd3_gain_frame(ctypes.byref(g), geometry.handle, ctypes.byref(buf), ctypes.byref(f)))
        return [Frame(f, buf)]


class Null(Gain):
    """Every transducer off."""

    def __init__(self) -> None:
        super().__init__(intensity=0)

    def _gain(self) -> N.Gain:
        return N.lib().autd3_gain_null()  # type: ignore[no-any-return]


class Focus(Gain):
    """A focal point at `pos` (mm, world frame)."""

    pos = _Param(_vec3)

    def __init__(self, pos: Any, *, intensity: int = 255, phase_offset: int = 0) -> None:
        super().__init__(intensity, phase_offset)
        self.pos = pos

    def _c(self) -> N.Gain:
        return N.lib().autd3_gain_focus(*self.pos)  # type: ignore[no-any-return]


class Plane(Gain):
    """A plane wave travelling along `dir` (need not be unit, must not be zero)."""

    dir = _Param(_vec3)

    def __init__(self, dir: Any, *, intensity: int = 255, phase_offset: int = 0) -> None:
        super().__init__(intensity, phase_offset)
        self.dir = dir

    def _c(self) -> N.Gain:
        return N.lib().autd3_gain_plane(*self.dir)  # type: ignore[no-any-return]


class Bessel(Gain):
    """A Bessel beam from apex `pos` (mm) along `dir`, cone half-angle `theta` (rad)."""

    pos = _Param(_vec3)
    dir = _Param(_vec3)
    theta = _Param(_check.real)

    def __init__(self, pos: Any, dir: Any, theta: float, *, intensity: int = 255, phase_offset: int = 0) -> None:
        super().__init__(intensity, phase_offset)
        self.pos = pos
        self.dir = dir
        self.theta = theta

    def _c(self) -> N.Gain:
        return N.lib().autd3_gain_bessel(*self.pos, *self.dir, self.theta)  # type: ignore[no-any-return]


class Uniform(Gain):
    """Every transducer at `phase` (256 = 2π) and `intensity`."""

    phase = _Param(_u8_param)

    def __init__(self, phase: int = 0, intensity: int = 255) -> None:
        super().__init__(intensity, 0)
        self.phase = phase

    def _gain(self) -> N.Gain:
        return N.lib().autd3_gain_uniform(self.phase, self.intensity)  # type: ignore[no-any-return]


class Custom:
    """Drives given by the caller: `phase` and `intensity` (integers 0..255), each broadcastable to
    (num_devices, 249). Sent as the 0.9 client sends a static gain (WritePatternFused, bank 0)."""

    def __init__(self, phase: Any, intensity: Any = 255) -> None:
        self.phase = np.asarray(phase)
        self.intensity = np.asarray(intensity)

    def frames(self, geometry: Geometry) -> list[Frame]:
        n = geometry.num_devices
        shape = (n, N.NUM_TRANSDUCERS)
        ph = _u8_array("phase", self.phase, shape)
        it = _u8_array("intensity", self.intensity, shape)
        cmds = []
        drives = (N.Drive * N.NUM_TRANSDUCERS)()
        raw = np.frombuffer(memoryview(drives), dtype=np.uint8).reshape(N.NUM_TRANSDUCERS, 2)
        for dev in range(n):
            raw[:, 0] = ph[dev]
            raw[:, 1] = it[dev]
            c = N.Command()
            raise_for(N.lib().autd3_cmd_write_pattern_fused(ctypes.byref(c), 0, drives, 0xFFFF, None))
            cmds.append(c)
        return [_per_device(cmds)]


# ---- modulation ---------------------------------------------------------------------------------


def _samples(name: str, v: Any) -> npt.NDArray[np.uint8]:
    a = np.asarray(v)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of samples, got shape {a.shape}")
    out = _u8_array(name, a, a.shape).copy()  # a copy of its own: changing the caller's array changes nothing
    out.flags.writeable = False
    return out


class Modulation:
    """An amplitude modulation: `data` samples (integers 0..255), one every `divider` periods of 40 kHz,
    repeated forever (`repeat` None) or `repeat` times, into `bank` (0/1)."""

    data = _Param(_samples)
    divider = _Param(_divider)
    repeat = _Param(_repeat)
    bank = _Param(_bank)

    def __init__(self, data: Any, divider: int = 10, *, repeat: Optional[int] = None, bank: int = 0) -> None:
        self.data = data
        self.divider = divider
        self.repeat = repeat
        self.bank = bank

    def _modulation(self) -> tuple[N.Modulation, Any]:
        data: npt.NDArray[np.uint8] = self.data
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data.tobytes())
        m = N.Modulation()
        m.data = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
        m.size = len(data)
        m.divider = self.divider
        m.rep = _loop(self.repeat)
        m.bank = self.bank
        m.transition.mode = 0xFF  # IMMEDIATE
        return m, buf

    def frames(self, geometry: Geometry) -> list[Frame]:
        m, buf = self._modulation()
        cmds = (N.Command * N.MODULATION_MAX_COMMANDS)()
        n = ctypes.c_size_t()
        raise_for(N.lib().autd3_modulation_commands(ctypes.byref(m), cmds, len(cmds), ctypes.byref(n)))
        return [_broadcast(cmds[i]) for i in range(n.value)]


class Static(Modulation):
    """No modulation: constant `intensity` (255 = full)."""

    intensity = _Param(_u8_param)

    def __init__(self, intensity: int = 255) -> None:
        self.intensity = intensity

    def _modulation(self) -> tuple[N.Modulation, Any]:
        buf = (ctypes.c_uint8 * 2)()
        m = N.Modulation()
        raise_for(N.lib().autd3_modulation_static(self.intensity, buf, ctypes.byref(m)))
        return m, buf


class Sine(Modulation):
    """Sine modulation of `freq` Hz, sampled every `divider` periods of 40 kHz (default 10: 4 kHz);
    sample = offset + amplitude/2 · sin(...) (the library computes it: autd3_modulation_sine)."""

    freq = _Param(_check.real)
    amplitude = _Param(_u8_param)
    offset = _Param(_u8_param)

    def __init__(self, freq: float, *, amplitude: int = 255, offset: int = 127, divider: int = 10) -> None:
        self.freq = freq
        self.amplitude = amplitude
        self.offset = offset
        self.divider = divider

    def _modulation(self) -> tuple[N.Modulation, Any]:
        cap = 65536
        buf = (ctypes.c_uint8 * cap)()
        m = N.Modulation()
        raise_for(N.lib().autd3_modulation_sine(self.freq, self.divider, self.amplitude, self.offset, buf, cap,
                                                ctypes.byref(m)))
        return m, buf

    def samples(self) -> npt.NDArray[np.uint8]:
        """The samples the library computed."""
        m, buf = self._modulation()
        return np.frombuffer(buf, dtype=np.uint8, count=m.size).copy()


# ---- silencer -----------------------------------------------------------------------------------


class Silencer:
    """SetSilencer. ``Silencer()`` is the reference's default (fixed completion time 250 µs / 1 ms,
    strict); ``Silencer.disable()``, ``Silencer.fixed_completion_time(...)``, ``Silencer.fixed_update_rate(...)``."""

    def __init__(self) -> None:
        self._args: tuple[str, tuple[Any, ...]] = ("default", ())

    @classmethod
    def disable(cls) -> "Silencer":
        s = cls()
        s._args = ("disable", ())
        return s

    @classmethod
    def fixed_completion_time(cls, intensity_ns: int = 250_000, phase_ns: int = 1_000_000, *,
                              strict: bool = True) -> "Silencer":
        s = cls()
        s._args = ("time", (_check.u64("intensity_ns", intensity_ns), _check.u64("phase_ns", phase_ns),
                            _check.boolean("strict", strict)))
        return s

    @classmethod
    def fixed_update_rate(cls, intensity: int, phase: int) -> "Silencer":
        s = cls()
        s._args = ("rate", (_check.u16("intensity", intensity), _check.u16("phase", phase)))
        return s

    def frames(self, geometry: Geometry) -> list[Frame]:
        lib = N.lib()
        c = N.Command()
        kind, a = self._args
        if kind == "default":
            raise_for(lib.autd3_cmd_silencer_default(ctypes.byref(c)))
        elif kind == "disable":
            raise_for(lib.autd3_cmd_silencer_disable(ctypes.byref(c)))
        elif kind == "time":
            raise_for(lib.autd3_cmd_silencer_fixed_completion_time(ctypes.byref(c), *a))
        else:
            raise_for(lib.autd3_cmd_silencer_fixed_update_rate(ctypes.byref(c), *a))
        return [_broadcast(c)]


# ---- STM ----------------------------------------------------------------------------------------


def _device_frames(per_device: list[list[N.Command]]) -> list[Frame]:
    counts = {len(c) for c in per_device}
    if len(counts) != 1:
        raise InvalidArgumentError(f"devices need different numbers of frames ({sorted(counts)})")
    return [_per_device([cmds[k] for cmds in per_device]) for k in range(counts.pop())]


def _points(name: str, v: Any) -> npt.NDArray[np.float64]:
    p = np.array(v, dtype=np.float64)  # a copy of its own
    if p.ndim == 2:
        p = p[:, None, :]
    if p.ndim != 3 or p.shape[2] != 3:
        raise ValueError(f"{name}: expected shape (size, 3) or (size, num_foci, 3), got {np.shape(v)}")
    if not np.all(np.isfinite(p)):
        raise InvalidArgumentError(f"{name}: must be finite")
    _check.integer("num_foci", p.shape[1], 1, N.FOCI_NUM_MAX)
    p.flags.writeable = False
    return p


def _opt_samples(name: str, v: Any) -> Optional[npt.NDArray[np.uint8]]:
    return None if v is None else _samples(name, v)


def _stack3(name: str, v: Any) -> npt.NDArray[Any]:
    a = np.asarray(v)
    if a.ndim != 3:
        raise ValueError(f"{name}: expected shape (size, num_devices, 249), got {a.shape}")
    return a


class FociSTM:
    """A foci STM: `points` of shape (size, 3) or (size, num_foci, 3) mm, one step every `divider`
    periods of 40 kHz; `intensities` (size,) integers or None (255)."""

    points = _Param(_points)
    intensities = _Param(_opt_samples)
    divider = _Param(_divider)
    repeat = _Param(_repeat)
    bank = _Param(_bank)

    def __init__(self, points: Any, divider: int, *, intensities: Any = None, repeat: Optional[int] = None,
                 bank: int = 0) -> None:
        self.points = points
        self.divider = divider
        self.intensities = intensities
        self.repeat = repeat
        self.bank = bank

    def frames(self, geometry: Geometry) -> list[Frame]:
        points: npt.NDArray[np.float64] = self.points
        size, nf = points.shape[0], points.shape[1]
        pts = (N.ControlPoint * (size * nf))()
        flat = points.reshape(-1, 3)
        for i in range(size * nf):
            pts[i].pos[:] = [float(x) for x in flat[i]]
        inten = None
        if self.intensities is not None:
            if self.intensities.shape != (size,):
                raise ValueError(f"intensities: expected shape ({size},) (one per point), got {self.intensities.shape}")
            inten = (ctypes.c_uint8 * size).from_buffer_copy(self.intensities.tobytes())
        rep = _loop(self.repeat)
        stm = N.FociStm(points=pts, intensities=inten, size=size, num_foci=nf, divider=self.divider, rep=rep,
                        bank=self.bank)
        stm.transition.mode = 0xFF if rep == LOOP_INFINITE else 0x00
        per_device = []
        for dev in range(geometry.num_devices):
            cmds = (N.Command * N.FOCI_STM_MAX_COMMANDS)()
            n = ctypes.c_size_t()
            raise_for(N.lib().autd3_foci_stm_commands(ctypes.byref(stm), geometry.handle, dev, cmds, len(cmds),
                                                      ctypes.byref(n)))
            per_device.append([cmds[k] for k in range(n.value)])
        return _device_frames(per_device)


class GainSTM:
    """A pattern (gain) STM: `phase` and `intensity` integers 0..255 broadcastable to
    (size, num_devices, 249), one pattern every `divider` periods of 40 kHz (the arrays are checked
    when sent: out-of-range values are refused). ``GainSTM.from_gains`` builds it from gains."""

    phase = _Param(_stack3)
    divider = _Param(_divider)
    repeat = _Param(_repeat)
    bank = _Param(_bank)

    def __init__(self, phase: Any, divider: int, *, intensity: Any = 255, repeat: Optional[int] = None,
                 bank: int = 0) -> None:
        self.phase = phase
        self.intensity = np.asarray(intensity)
        self.divider = divider
        self.repeat = repeat
        self.bank = bank

    @classmethod
    def from_gains(cls, gains: Sequence[Gain], geometry: Geometry, divider: int, **kw: Any) -> "GainSTM":
        ph, it = zip(*(g.calc(geometry) for g in gains))
        return cls(np.stack(ph), divider, intensity=np.stack(it), **kw)

    def frames(self, geometry: Geometry) -> list[Frame]:
        size = self.phase.shape[0]
        shape = (size, geometry.num_devices, N.NUM_TRANSDUCERS)
        ph = _u8_array("phase", self.phase, shape)
        it = _u8_array("intensity", self.intensity, shape)
        per_device = []
        for dev in range(geometry.num_devices):
            drives = (N.Drive * (size * N.NUM_TRANSDUCERS))()
            raw = np.frombuffer(memoryview(drives), dtype=np.uint8).reshape(size, N.NUM_TRANSDUCERS, 2)
            raw[:, :, 0] = ph[:, dev]
            raw[:, :, 1] = it[:, dev]
            rep = _loop(self.repeat)
            stm = N.PatternStm(drives=drives, size=size, divider=self.divider, rep=rep, bank=self.bank)
            stm.transition.mode = 0xFF if rep == LOOP_INFINITE else 0x00
            cmds = (N.Command * N.PATTERN_STM_MAX_COMMANDS)()
            n = ctypes.c_size_t()
            raise_for(N.lib().autd3_pattern_stm_commands(ctypes.byref(stm), cmds, len(cmds), ctypes.byref(n)))
            per_device.append([cmds[k] for k in range(n.value)])
        return _device_frames(per_device)


@dataclass(frozen=True)
class XorHash:
    """The perftest frame (autd3_frame_xor_hash_bench): `data_len` bytes (≤ 620) the device hashes
    after sleeping `sleep_ms`; it answers 0."""

    data_len: int = N.XOR_HASH_MAX_DATA
    sleep_ms: int = 0

    def __post_init__(self) -> None:
        _check.integer("data_len", self.data_len, 0, N.XOR_HASH_MAX_DATA)
        _check.u16("sleep_ms", self.sleep_ms)

    def frame(self) -> Frame:
        f = N.Frame()
        raise_for(N.lib().autd3_frame_xor_hash_bench(ctypes.byref(f), self.sleep_ms, self.data_len))
        return Frame(f)

    def frames(self, geometry: Geometry) -> list[Frame]:
        return [self.frame()]
