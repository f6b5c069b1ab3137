"""Link options as dataclasses. Every default comes from the library (``autd3_link_option_default()``),
read when an option is created, so the Python side never carries a second copy of them."""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Optional

from . import _check
from . import _native as N
from .errors import raise_for

__all__ = ["LinkKind", "NicBackend", "RemotePipeline", "EmuFirmware", "TimingModel", "FirmwareVersion",
           "LinkOption", "EmulatorLinkOption", "EchoCATLinkOption", "SoemLinkOption", "EtherCrabLinkOption",
           "TwinCATLinkOption", "RemoteLinkOption", "link_kind_available"]


class LinkKind(enum.IntEnum):
    EMULATOR = 0
    ECHOCAT = 1
    SOEM = 2
    ETHERCRAB = 3
    TWINCAT = 4
    REMOTE = 5


class NicBackend(enum.IntEnum):
    AUTO = 0
    AF_PACKET = 1
    PCAP = 2


class RemotePipeline(enum.IntEnum):
    AUTO = 0
    OFF = 1
    ON = 2


class EmuFirmware(enum.IntEnum):
    NEW = 0
    V12 = 1
    MIXED = 2


def link_kind_available(kind: LinkKind) -> bool:
    """Whether this library has the link kind built in (or registered)."""
    return bool(N.lib().autd3_link_kind_available(int(LinkKind(kind))))


@dataclass(frozen=True)
class FirmwareVersion:
    """CPU and FPGA firmware versions of one device."""

    cpu: tuple[int, int, int]
    fpga: tuple[int, int, int]

    @classmethod
    def _from_c(cls, v: N.FwVersion) -> "FirmwareVersion":
        return cls((v.cpu_major, v.cpu_minor, v.cpu_patch), (v.fpga_major, v.fpga_minor, v.fpga_patch))

    def _to_c(self, name: str) -> N.FwVersion:
        out = N.FwVersion()
        for part, vals in (("cpu", self.cpu), ("fpga", self.fpga)):
            if len(vals) != 3:
                raise ValueError(f"{name}.{part}: expected (major, minor, patch)")
            for k, v in zip(("major", "minor", "patch"), vals):
                setattr(out, f"{part}_{k}", _check.u8(f"{name}.{part}", v))
        return out

    def __str__(self) -> str:
        return "cpu v{}.{}.{}, fpga v{}.{}.{}".format(*self.cpu, *self.fpga)


@dataclass(frozen=True)
class TimingModel:
    """When an emulated device acts on a frame (include/autd3/emulator.h). Default: ``TimingModel.default()``."""

    take_on_sync0: bool
    fifo_latency_ns: int
    ll_latency_ns: int
    publish_on_sync0: bool

    @classmethod
    def _from_c(cls, t: N.TimingModel) -> "TimingModel":
        return cls(bool(t.take_on_sync0), int(t.fifo_latency_ns), int(t.ll_latency_ns), bool(t.publish_on_sync0))

    def _to_c(self) -> N.TimingModel:
        return N.TimingModel(_check.boolean("timing.take_on_sync0", self.take_on_sync0),
                             _check.u32("timing.fifo_latency_ns", self.fifo_latency_ns),
                             _check.u32("timing.ll_latency_ns", self.ll_latency_ns),
                             _check.boolean("timing.publish_on_sync0", self.publish_on_sync0))

    @classmethod
    def default(cls) -> "TimingModel":
        return cls._from_c(N.lib().autd3_timing_model_default())

    @classmethod
    def pessimistic(cls) -> "TimingModel":
        return cls._from_c(N.lib().autd3_timing_model_pessimistic())

    @classmethod
    def ideal(cls) -> "TimingModel":
        return cls._from_c(N.lib().autd3_timing_model_ideal())

    @classmethod
    def parse(cls, s: str) -> "TimingModel":
        """"default", "pessimistic", "ideal" or "take=sync0|arrival,fifo=NS,ll=NS,publish=sync0|now"."""
        t = N.TimingModel()
        raise_for(N.lib().autd3_timing_model_parse(_check.text("timing", s), ctypes.byref(t)))
        return cls._from_c(t)


# ---- generic mapping between a dataclass field and a C field ------------------------------------

_KIND_MEMBER = {0: "emulator", 1: "echocat", 2: "soem", 3: "ethercrab", 4: "twincat", 5: "remote"}


def _member(o: N.LinkOption, kind: int) -> Any:
    return getattr(o.u, _KIND_MEMBER[kind])


def _walk(obj: Any, path: tuple[str, ...]) -> tuple[Any, str]:
    for p in path[:-1]:
        obj = getattr(obj, p)
    return obj, path[-1]


def _read(kind: int, path: tuple[str, ...], conv: str) -> Any:
    o = N.lib().autd3_link_option_default(kind)
    obj, last = _walk(_member(o, kind), path)
    v = getattr(obj, last)
    if conv == "str":
        return None if v is None else v.decode("utf-8")
    if conv == "bool":
        return bool(v)
    if conv == "timing":
        return TimingModel._from_c(v)
    if conv == "version":
        return FirmwareVersion._from_c(v)
    if conv.startswith("enum:"):
        return _ENUMS[conv[5:]](v)
    return int(v)


_ENUMS: dict[str, type[enum.IntEnum]] = {"backend": NicBackend, "pipeline": RemotePipeline, "firmware": EmuFirmware}
_INTS: dict[str, Callable[[str, Any], int]] = {"u8": _check.u8, "u16": _check.u16, "u32": _check.u32, "i32": _check.i32}


def _f(kind: int, path: str, conv: str) -> Any:
    p = tuple(path.split("."))
    return field(default_factory=lambda: _read(kind, p, conv), metadata={"c": p, "conv": conv})


class LinkOption:
    """Base of the link options. ``kind`` says which link; fields mirror the C option."""

    KIND: LinkKind

    def _to_c(self) -> tuple[N.LinkOption, list[Any]]:
        """The tagged C option, started from the library's default, and the objects it borrows."""
        o = N.lib().autd3_link_option_default(int(self.KIND))
        member = _member(o, int(self.KIND))
        keep: list[Any] = []
        for f in fields(self):  # type: ignore[arg-type]
            path, conv = f.metadata["c"], f.metadata["conv"]
            obj, last = _walk(member, path)
            v = getattr(self, f.name)
            if conv == "str":
                b = _check.text(f.name, v)
                keep.append(b)
                setattr(obj, last, b)
            elif conv == "bool":
                setattr(obj, last, _check.boolean(f.name, v))
            elif conv == "timing":
                if not isinstance(v, TimingModel):
                    raise TypeError(f"{f.name}: expected libautd3.TimingModel, got {type(v).__name__}")
                setattr(obj, last, v._to_c())
            elif conv == "version":
                if not isinstance(v, FirmwareVersion):
                    raise TypeError(f"{f.name}: expected libautd3.FirmwareVersion, got {type(v).__name__}")
                setattr(obj, last, v._to_c(f.name))
            elif conv.startswith("enum:"):
                e = _ENUMS[conv[5:]]
                if isinstance(v, str):
                    try:
                        v = e[v.upper()]
                    except KeyError:
                        raise ValueError(f"{f.name}: {v!r} is not one of {[m.name.lower() for m in e]}") from None
                if not isinstance(v, int) or isinstance(v, bool) or v not in set(int(m) for m in e):
                    raise TypeError(f"{f.name}: expected {e.__name__} or its name, got {v!r}")
                setattr(obj, last, int(v))
            else:
                setattr(obj, last, _INTS[conv](f.name, v))
        return o, keep




@dataclass
class EmulatorLinkOption(LinkOption):
    """The in-process emulator: devices emulated inside this process (tests, teaching)."""

    KIND = LinkKind.EMULATOR
    cycle_ns: int = _f(0, "cycle_ns", "u32")
    timing: TimingModel = _f(0, "timing", "timing")
    version: FirmwareVersion = _f(0, "version", "version")
    firmware: EmuFirmware = _f(0, "firmware", "enum:firmware")


@dataclass
class EchoCATLinkOption(LinkOption):
    """echocat, the EtherCAT master dedicated to AUTD3 (raw Ethernet; Linux needs CAP_NET_RAW)."""

    KIND = LinkKind.ECHOCAT
    interface: Optional[str] = _f(1, "ethercat.interface", "str")
    sync0_period_ns: int = _f(1, "ethercat.sync0_period_ns", "u32")
    sync0_shift_ns: int = _f(1, "ethercat.sync0_shift_ns", "i32")
    send_cycle_ns: int = _f(1, "ethercat.send_cycle_ns", "u32")
    sync_tolerance_ns: int = _f(1, "ethercat.sync_tolerance_ns", "u32")
    sync_timeout_ms: int = _f(1, "ethercat.sync_timeout_ms", "u32")
    state_timeout_ms: int = _f(1, "ethercat.state_timeout_ms", "u32")
    op_wait_timeout_ms: int = _f(1, "ethercat.op_wait_timeout_ms", "u32")
    rt_priority: int = _f(1, "ethercat.rt_priority", "i32")
    rt_cpu: int = _f(1, "ethercat.rt_cpu", "i32")
    capture_path: Optional[str] = _f(1, "ethercat.capture_path", "str")
    backend: NicBackend = _f(1, "backend", "enum:backend")
    spin_ns: int = _f(1, "spin_ns", "u32")
    warmup_cycles: int = _f(1, "warmup_cycles", "u32")


@dataclass
class SoemLinkOption(LinkOption):
    """SOEM (libautd3-link-soem, GPL-3.0-only, a separate library)."""

    KIND = LinkKind.SOEM
    interface: Optional[str] = _f(2, "ethercat.interface", "str")
    sync0_period_ns: int = _f(2, "ethercat.sync0_period_ns", "u32")
    sync0_shift_ns: int = _f(2, "ethercat.sync0_shift_ns", "i32")
    send_cycle_ns: int = _f(2, "ethercat.send_cycle_ns", "u32")
    sync_tolerance_ns: int = _f(2, "ethercat.sync_tolerance_ns", "u32")
    sync_timeout_ms: int = _f(2, "ethercat.sync_timeout_ms", "u32")
    state_timeout_ms: int = _f(2, "ethercat.state_timeout_ms", "u32")
    op_wait_timeout_ms: int = _f(2, "ethercat.op_wait_timeout_ms", "u32")
    rt_priority: int = _f(2, "ethercat.rt_priority", "i32")
    rt_cpu: int = _f(2, "ethercat.rt_cpu", "i32")
    capture_path: Optional[str] = _f(2, "ethercat.capture_path", "str")


@dataclass
class EtherCrabLinkOption(LinkOption):
    """EtherCrab (libautd3-link-ethercrab, a separate library)."""

    KIND = LinkKind.ETHERCRAB
    interface: Optional[str] = _f(3, "ethercat.interface", "str")
    sync0_period_ns: int = _f(3, "ethercat.sync0_period_ns", "u32")
    sync0_shift_ns: int = _f(3, "ethercat.sync0_shift_ns", "i32")
    send_cycle_ns: int = _f(3, "ethercat.send_cycle_ns", "u32")
    sync_tolerance_ns: int = _f(3, "ethercat.sync_tolerance_ns", "u32")
    sync_timeout_ms: int = _f(3, "ethercat.sync_timeout_ms", "u32")
    state_timeout_ms: int = _f(3, "ethercat.state_timeout_ms", "u32")
    op_wait_timeout_ms: int = _f(3, "ethercat.op_wait_timeout_ms", "u32")
    rt_priority: int = _f(3, "ethercat.rt_priority", "i32")
    rt_cpu: int = _f(3, "ethercat.rt_cpu", "i32")
    capture_path: Optional[str] = _f(3, "ethercat.capture_path", "str")
    pdu_timeout_ms: int = _f(3, "pdu_timeout_ms", "u32")


@dataclass
class TwinCATLinkOption(LinkOption):
    """TwinCAT over ADS: ``TwinCATLinkOption.local()`` or ``.remote(server_ip, server_ams_net_id)``."""

    KIND = LinkKind.TWINCAT
    server_ip: Optional[str] = _f(4, "server_ip", "str")
    server_port: int = _f(4, "server_port", "u16")
    server_ams_net_id: Optional[str] = _f(4, "server_ams_net_id", "str")
    client_ams_net_id: Optional[str] = _f(4, "client_ams_net_id", "str")
    ams_port: int = _f(4, "ams_port", "u16")
    timeout_ms: int = _f(4, "timeout_ms", "u32")
    task_cycle_us: int = _f(4, "task_cycle_us", "u32")
    no_notification: bool = _f(4, "no_notification", "bool")

    @classmethod
    def local(cls) -> "TwinCATLinkOption":
        return cls()

    @classmethod
    def remote(cls, server_ip: str, server_ams_net_id: Optional[str] = None) -> "TwinCATLinkOption":
        return cls(server_ip=server_ip, server_ams_net_id=server_ams_net_id)


@dataclass
class RemoteLinkOption(LinkOption):
    """A Remote server (autd3-remote-server, or the reference's) at ``address`` ("host:port")."""

    KIND = LinkKind.REMOTE
    address: Optional[str] = _f(5, "address", "str")
    timeout_ms: int = _f(5, "timeout_ms", "u32")
    pipeline: RemotePipeline = _f(5, "pipeline", "enum:pipeline")
    protocol: int = _f(5, "protocol", "u32")
