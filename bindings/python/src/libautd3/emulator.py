"""The in-process emulator's reads and fault injection (include/autd3/emulator.h), for users' own
tests without hardware: ``client.emulator`` of a client opened with ``EmulatorLinkOption``."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import _check
from . import _native as N
from .errors import raise_for

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Emulator", "DeviceCounters", "ExecEntry", "OutputState", "EmulatorOutputs"]


@dataclass(frozen=True)
class DeviceCounters:
    """Counters of one emulated device."""

    received: int
    executed: int
    deduplicated: int
    dropped: int
    seq_mismatch: int
    resets: int
    errors: int


@dataclass(frozen=True)
class ExecEntry:
    """One frame a device executed (its own record: the execution log)."""

    index: int
    tag: int
    boot: int
    seq: int
    cmd: int
    result: int


@dataclass(frozen=True)
class OutputState:
    """What one emulated device emits now, as its FPGA would (time not modelled: index 0)."""

    phase: npt.NDArray[np.uint8]
    intensity: npt.NDArray[np.uint8]
    pattern_bank: int
    pattern_emission_type: int
    pattern_divider: int
    pattern_size: int
    pattern_rep: int
    transition_pending: bool
    modulation_bank: int
    modulation_size: int
    modulation_divider: int
    modulation_rep: int
    modulation_transition_pending: bool
    modulation_cursor: int
    modulation: int
    modulation_buffer: npt.NDArray[np.uint8]
    silencer_flag: int
    silencer_update_rate_intensity: int
    silencer_update_rate_phase: int
    silencer_completion_steps_intensity: int
    silencer_completion_steps_phase: int
    pulse_width_table: npt.NDArray[np.uint16]
    force_fan: bool
    gpio_in: int
    gpio_out: tuple[int, int, int, int]
    fpga_state: int
    error_detail: int

    @classmethod
    def _from_c(cls, s: N.OutputState) -> "OutputState":
        kw: dict[str, Any] = {}
        for name in (fld[0] for fld in N.OutputState._fields_):
            v = getattr(s, name)
            if name in ("phase", "intensity"):
                kw[name] = np.frombuffer(v, dtype=np.uint8).copy()
            elif name == "modulation_buffer":
                kw[name] = np.frombuffer(v, dtype=np.uint8)[: min(s.modulation_size, N.OUTPUT_MOD_SAMPLES)].copy()
            elif name == "pulse_width_table":
                kw[name] = np.frombuffer(v, dtype=np.uint16).copy()
            elif name == "gpio_out":
                kw[name] = tuple(int(x) for x in v)
            elif isinstance(v, bool):
                kw[name] = v
            else:
                kw[name] = int(v)
        return cls(**kw)

    @property
    def silent(self) -> bool:
        """Nothing emitted: every intensity zero (or the modulation sample is zero)."""
        return bool(not self.intensity.any() or self.modulation == 0)


class EmulatorOutputs:
    """The output states of an emulator link that outlive the client: take it while the client is
    open, read it after close to see what close left the devices emitting."""

    def __init__(self, h: ctypes.c_void_p, n: int) -> None:
        self._h = h
        self._n = n

    def read(self, dev: int) -> OutputState:
        _check.integer("dev", dev, 0, self._n - 1)
        s = N.OutputState()
        raise_for(N.lib().autd3_emulator_outputs_read(self._h, dev, ctypes.byref(s)))
        return OutputState._from_c(s)

    def release(self) -> None:
        if self._h:
            N.lib().autd3_emulator_outputs_release(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self) -> "EmulatorOutputs":
        return self

    def __exit__(self, *a: Any) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            pass


class Emulator:
    """Fault injection and device-side reads of the in-process emulator (valid while the client is open)."""

    def __init__(self, client: "Client") -> None:
        self._client = client

    def _dev(self, dev: int) -> int:
        return _check.integer("dev", dev, 0, self._client.num_devices - 1)

    def inject(self, dev: int, *, drop_next: int = 0, freeze: bool = False, invalidate_rx: int = 0) -> None:
        """Replace device `dev`'s faults: drop the next `drop_next` output images, `freeze` it (no
        processing, inputs keep their last value), invalidate the next `invalidate_rx` cycles' inputs.
        ``inject(dev)`` with no faults clears them (and thaws a frozen device)."""
        f = N.DeviceFault(_check.u32("drop_next", drop_next), _check.boolean("freeze", freeze),
                          _check.u32("invalidate_rx", invalidate_rx))
        d = self._dev(dev)
        raise_for(self._client._with_link(N.lib().autd3_emulator_inject, d, ctypes.byref(f)))

    def clear_faults(self, dev: int) -> None:
        self.inject(dev)

    def power_cycle(self, dev: int) -> None:
        """Reboot device `dev` at the next cycle (its firmware state is lost; the client re-establishes it)."""
        d = self._dev(dev)
        raise_for(self._client._with_link(N.lib().autd3_emulator_power_cycle, d))

    def counters(self, dev: int) -> DeviceCounters:
        d = self._dev(dev)
        c = N.DeviceCounters()
        raise_for(self._client._with_link(N.lib().autd3_emulator_counters_sized, d, ctypes.byref(c), ctypes.sizeof(c)))
        return DeviceCounters(*(int(getattr(c, f)) for f in (fld[0] for fld in N.DeviceCounters._fields_)))

    def drain_log(self, dev: int, max_entries: int = N.EXEC_LOG_CAPACITY) -> tuple[list[ExecEntry], int]:
        """Move up to `max_entries` oldest entries of device `dev`'s execution log out; returns them and
        the number of entries lost so far because the log was full."""
        d = self._dev(dev)
        cap = _check.integer("max_entries", max_entries, 1, 1 << 20)
        buf = (N.ExecEntry * cap)()
        n = ctypes.c_size_t()
        dropped = ctypes.c_uint64()
        raise_for(self._client._with_link(N.lib().autd3_emulator_log_drain, d, buf, cap, ctypes.byref(n),
                                          ctypes.byref(dropped)))
        return [ExecEntry(e.index, e.tag, e.boot, e.seq, e.cmd, e.result) for e in buf[: n.value]], int(dropped.value)

    def output(self, dev: int) -> OutputState:
        """What device `dev` emits now (reflects every frame whose ack the client has seen)."""
        d = self._dev(dev)
        s = N.OutputState()
        raise_for(self._client._with_link(N.lib().autd3_emulator_output, d, ctypes.byref(s)))
        return OutputState._from_c(s)

    def outputs(self) -> EmulatorOutputs:
        """An object that keeps the output states readable after the client is closed."""
        h = ctypes.c_void_p()
        n = self._client.num_devices
        raise_for(self._client._with_link(N.lib().autd3_emulator_outputs, ctypes.byref(h)))
        return EmulatorOutputs(h, n)

    def __repr__(self) -> str:
        return f"Emulator(devices={self._client.num_devices})"


