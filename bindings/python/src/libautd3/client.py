"""The client (include/autd3/client.h): open, send, wait, read, close.

Threads: every method may be called from any thread, also while another thread closes the client
(a call that has entered the library finishes before the C client is freed; later calls raise
ClosedError). Blocking calls (open, send under back-pressure, waits, the firmware reads, close) run
inside the library with the GIL released (ctypes releases it around every call), so other Python
threads keep running; waits on requests (``wait``, ``send_checked``) wait in slices, so Ctrl-C
interrupts them.

Lifetime: ``close()`` (or leaving ``with``) silences every device as the C close does and raises if a
device may still be emitting. A client that is garbage collected or still open at interpreter exit
is closed the same way (with a ResourceWarning), so a script that forgets ``close()`` does not leave
the array emitting. After close every method raises :class:`ClosedError`; requests still pending stay
valid (waiting on them reports CLOSED).
"""

from __future__ import annotations

import collections
import ctypes
import enum
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, overload

from . import _check
from . import _native as N
from ._core import SLICE_MS, _Core
from .commands import DatagramLike, Frame, frames_of
from .errors import AUTD3Error, ClosedError, raise_for
from .geometry import Geometry
from .link import FirmwareVersion, LinkKind, LinkOption
from .request import _DETACHED, _PENDING, _REAPING, DeviceResponse, Outcome, Request, Response

if TYPE_CHECKING:
    from ._completer import Completer
    from .emulator import Emulator

__all__ = ["Protocol", "ClientConfig", "Outcome", "DeviceResponse", "Response", "Request", "ClientStats",
           "ClientDeviceState", "DeviceStatus", "LinkStats", "DeviceState", "LinkStatus", "Checker", "Client"]


class Protocol(enum.IntEnum):
    NEW = 0
    V12 = 1
    AUTO = 2


def _cfg_default(name: str) -> Callable[[], Any]:
    def f() -> Any:
        c = N.ClientConfig()
        N.lib().autd3_client_config_init(ctypes.byref(c), ctypes.sizeof(c))
        v = getattr(c, name)
        return Protocol(v) if name == "protocol" else v

    return f


@dataclass
class ClientConfig:
    """Client configuration (the reference's ClientConfig); defaults from ``autd3_client_config_init()``."""

    timeout_cycles: int = field(default_factory=_cfg_default("timeout_cycles"))
    max_inflight: int = field(default_factory=_cfg_default("max_inflight"))
    max_resync_rounds: int = field(default_factory=_cfg_default("max_resync_rounds"))
    low_latency: bool = field(default_factory=_cfg_default("low_latency"))
    reset_resend_cycles: int = field(default_factory=_cfg_default("reset_resend_cycles"))
    rt_priority: int = field(default_factory=_cfg_default("rt_priority"))
    rt_cpu: int = field(default_factory=_cfg_default("rt_cpu"))
    require_supported_firmware: bool = field(default_factory=_cfg_default("require_supported_firmware"))
    close_timeout_ms: int = field(default_factory=_cfg_default("close_timeout_ms"))
    protocol: Protocol = field(default_factory=_cfg_default("protocol"))

    def _to_c(self) -> N.ClientConfig:
        c = N.ClientConfig()
        N.lib().autd3_client_config_init(ctypes.byref(c), ctypes.sizeof(c))
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("low_latency", "require_supported_firmware"):
                v = _check.boolean(f.name, v)
            elif f.name in ("rt_priority", "rt_cpu"):
                v = _check.i32(f.name, v)
            elif f.name == "protocol":
                v = _check.integer(f.name, v, 0, 2)
            else:
                v = _check.u32(f.name, v)
            setattr(c, f.name, v)
        raise_for(N.lib().autd3_client_config_validate(ctypes.byref(c)))
        return c

    def validate(self) -> None:
        """Raise InvalidConfigError (naming the field) if the library refuses this configuration."""
        self._to_c()


@dataclass(frozen=True)
class ClientStats:
    """Client-side counters (autd3_client_stats_t)."""

    sent: int
    completed: int
    failed: int
    resyncs: int
    resets: int
    retransmits: int
    bus_cpu_ns: int
    bus_cycles: int
    device_resets: int
    reinits: int
    unknown_outcomes: int
    second_master: int
    device_timeouts: int


class ClientDeviceState(enum.IntEnum):
    READY = 0
    RECOVERING = 1
    FOREIGN = 2
    AWAY = 3


@dataclass(frozen=True)
class DeviceStatus:
    """One device as the client sees it; ``resets`` changing means its state (patterns, modulation,
    silencer...) is gone and the application must send it again."""

    resets: int
    reinits: int
    state: ClientDeviceState
    aways: int = 0


# autd3_link_stats_t.measured bits (link.h AUTD3_LINK_MEASURES_*)
_MEASURES_PHASE, _MEASURES_EXCHANGE = 0x04, 0x08


@dataclass(frozen=True)
class LinkStats:
    """The link's statistics since open (the reference's LinkStats). ``None``: the link cannot measure it
    (docs/architecture.md "Link statistics"); ``lost_cycles`` is 0 then, ``measured`` has the library's bits."""

    cycles: int
    stale_cycles: int
    lost_cycles: int
    phase_excursions: Optional[int] = None
    worst_phase_deviation_ns: Optional[int] = None
    exchanges: Optional[int] = None
    worst_exchange_ns: Optional[int] = None
    exchange_ns_total: Optional[int] = None
    measured: int = 0

    def mean_exchange_ns(self) -> Optional[int]:
        """The mean exchange time (ns), None when the link does not time its exchanges."""
        if self.exchanges is None or self.exchange_ns_total is None:
            return None
        return self.exchange_ns_total // self.exchanges if self.exchanges else 0


class DeviceState(enum.IntEnum):
    UNKNOWN = 0
    OP = 1
    SAFE_OP = 2
    SAFE_OP_ERROR = 3
    LOST = 4
    OTHER = 5


@dataclass(frozen=True)
class LinkStatus:
    """A state check (the reference checker's LinkStatus)."""

    device_states: tuple[DeviceState, ...]
    al_states: tuple[int, ...]
    recoveries: int

    @property
    def all_op(self) -> bool:
        return all(s == DeviceState.OP for s in self.device_states)

    @property
    def any_lost(self) -> bool:
        return any(s == DeviceState.LOST for s in self.device_states)


class Checker:
    """State checker of an open client (``Client.open_with_checker``): ``check()`` checks the devices'
    EtherCAT states and tries to bring back those not in OP. One checker per client."""

    def __init__(self, client: "Client") -> None:
        self._client = client

    def check(self) -> LinkStatus:
        return self._client.check_state()


T = TypeVar("T")


class Client:
    """An open client. ``Client.open(geometry, link_option, config)``; for asyncio see
    ``libautd3.aio.Client``. Use it as a context manager: leaving the block closes it (silencing the
    array)."""

    _core: _Core
    _geometry: Geometry
    _kind: LinkKind
    _num_devices: int
    _protocol: Protocol
    _checker_lock: threading.Lock
    _completer_obj: Optional["Completer"]
    _finalizer: Any  # weakref.finalize
    _live: "collections.deque[weakref.ReferenceType[Request]]"

    def __init__(self) -> None:  # use Client.open
        raise TypeError("use libautd3.Client.open(geometry, link_option, config)")

    @classmethod
    def open(cls, geometry: Geometry, link: LinkOption, config: Optional[ClientConfig] = None) -> "Client":
        """Open the link, check its device count against the geometry, run the open sequence. Blocks."""
        if not isinstance(geometry, Geometry):
            raise TypeError(f"geometry: expected libautd3.Geometry, got {type(geometry).__name__}")
        if not isinstance(link, LinkOption):
            raise TypeError(f"link: expected a link option (EmulatorLinkOption, EchoCATLinkOption, ...), got "
                            f"{type(link).__name__}")
        if config is None:
            config = ClientConfig()
        if not isinstance(config, ClientConfig):
            raise TypeError(f"config: expected libautd3.ClientConfig, got {type(config).__name__}")
        lo, keep = link._to_c()
        cc = config._to_c()
        h = ctypes.c_void_p()
        lib = N.lib()
        e = lib.autd3_client_open(geometry.handle, ctypes.byref(lo), ctypes.byref(cc), ctypes.byref(h))
        del keep
        raise_for(e)
        self = cls.__new__(cls)
        self._geometry = geometry
        self._kind = LinkKind(link.KIND)
        # fixed once open (AUTO resolved): read now, so that these never touch the C client again
        self._num_devices = int(lib.autd3_client_num_devices(h))
        self._protocol = Protocol(lib.autd3_client_protocol(h))
        self._core = _Core(h, cc.max_inflight if self._protocol != Protocol.V12 else 1)
        self._checker_lock = threading.Lock()
        self._completer_obj = None
        self._live = collections.deque()  # the requests sent, for _make_room
        self._finalizer = weakref.finalize(self, _close_forgotten, self._core)
        return self

    @classmethod
    def open_with_checker(cls, geometry: Geometry, link: LinkOption,
                          config: Optional[ClientConfig] = None) -> tuple["Client", Checker]:
        c = cls.open(geometry, link, config)
        return c, Checker(c)

    # ---- lifetime ----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._core.closed

    def close(self) -> None:
        """Silence every device, stop the bus thread, close the link. Calls already inside the
        library on other threads finish first; later ones raise ClosedError. Raises (TimedOutError,
        SecondMasterError, LinkError, DeviceError) naming the devices that may still be emitting;
        the client is closed in any case. A second close is a no-op."""
        self._finalizer.detach()
        err = self._core.close()
        if err is not None:
            raise err

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        if et is None:
            self.close()
            return
        try:
            self.close()
        except AUTD3Error as e:  # do not mask the exception already propagating
            warnings.warn(f"libautd3: close after an exception: {e}", RuntimeWarning, stacklevel=2)

    @overload
    def _completer(self) -> "Completer": ...

    @overload
    def _completer(self, or_none: bool) -> "Optional[Completer]": ...

    def _completer(self, or_none: bool = False) -> "Optional[Completer]":
        """The asyncio completer, started at the first use; after close the one there was, or
        ClosedError (None with `or_none`)."""
        from ._completer import Completer

        with self._core.lock:
            if self._completer_obj is None:
                if self._core.closed:
                    if or_none:
                        return None
                    raise ClosedError("the client is closed")
                self._completer_obj = Completer(self)
            return self._completer_obj

    # ---- sending -----------------------------------------------------------------------------

    def _frames(self, d: DatagramLike) -> list[Frame]:
        return [d] if type(d) is Frame else frames_of(d, self._geometry)

    def send(self, datagram: DatagramLike) -> Request:
        """Queue the datagram's frames (streaming). Blocks only under back-pressure (max_inflight
        frames in flight). Returns a Request to wait on, poll, await or detach."""
        frames = self._frames(datagram)
        core = self._core
        req = Request(self, core)
        with core.send_lock:
            if len(frames) == 1 and len(core.free) > core.debt:  # streaming's path: one frame, a slot free
                req._handles.append(core.send(frames[0].c))  # raising, it queued nothing: req holds nothing
            else:
                self._send_frames(req, frames)
            live = self._live
            live.append(weakref.ref(req))
            # At most max_inflight requests hold handles: pruning the ended ones every max_inflight
            # sends keeps the registry short at O(1) per send.
            if len(live) > 2 * core.max_inflight:
                self._live = collections.deque(w for w in live if (x := w()) is not None and x._handles)
        return req

    def _send_frames(self, req: Request, frames: list[Frame]) -> None:
        """Queue the frames for `req`, each after a slot is free (the send lock held)."""
        core = self._core
        for f in frames:
            try:
                while not core.slot_free() and self._make_room(req):
                    pass
                req._handles.append(core.send(f.c))
            except BaseException:
                req._state = _DETACHED  # the frames queued before stay in flight
                req._detach_rest()
                raise

    def _make_room(self, current: Optional[Request]) -> bool:
        """A handle holds its slot until it is released, so requests nobody waits on would block the
        next send forever once max_inflight of them exist. Wait (one slice) on the oldest one nobody
        has claimed and keep its result in it (its wait() returns it later). False if there is none:
        every slot is then held by a request someone waits on, which frees it."""
        live = [r for r in (w() for w in self._live) if r is not None and r._handles]
        self._live = collections.deque(weakref.ref(r) for r in live)
        core = self._core
        for r in live + ([current] if current is not None else []):
            with core.lock:
                if r._state != _PENDING or not r._handles:
                    continue
                r._state = _REAPING  # its owner's wait() waits for this step instead of failing
            try:
                r._wait_handles(time.monotonic() + SLICE_MS / 1000)
            finally:
                with core.lock:
                    r._state = _PENDING
                    core.cond.notify_all()
            return True
        return False

    def send_checked(self, datagram: DatagramLike) -> Response:
        """Stop-and-wait, frame by frame as autd3_client_send_checked: send, wait, check the devices'
        data bytes (DeviceError names the device and the code; the frames after a failure are not
        sent). Returns the last frame's Response. Blocks (GIL released; Ctrl-C interrupts the wait,
        the frame in flight still completes)."""
        check = self._protocol != Protocol.V12  # v12: the data byte is a value, not an error code
        r: Optional[Response] = None
        for f in self._frames(datagram):
            req = self.send(f)
            try:
                r = req.wait()
            except KeyboardInterrupt:
                if not req.done():
                    req.detach()
                raise
            if check:
                r.check()
        assert r is not None
        return r

    # ---- reads -------------------------------------------------------------------------------

    @property
    def geometry(self) -> Geometry:
        return self._geometry

    @property
    def num_devices(self) -> int:
        return self._num_devices

    @property
    def protocol(self) -> Protocol:
        return self._protocol

    @property
    def link_kind(self) -> LinkKind:
        return self._kind

    def _read(self, fn: Callable[..., int], out: Any) -> Any:
        raise_for(self._core.call(fn, out))
        return out

    def read_firmware_version(self) -> list[FirmwareVersion]:
        """Every device's CPU and FPGA firmware versions (exclusive reads). Blocks."""
        out = self._read(N.lib().autd3_client_read_firmware_version, (N.FwVersion * self._num_devices)())
        return [FirmwareVersion._from_c(v) for v in out]

    def read_fpga_state(self) -> list[int]:
        """Every device's FPGA state byte. Blocks."""
        return list(self._read(N.lib().autd3_client_read_fpga_state, (ctypes.c_uint8 * self._num_devices)()))

    def read_error_detail(self) -> list[int]:
        """Every device's latched firmware error code (0 = none). Blocks."""
        return list(self._read(N.lib().autd3_client_read_error_detail, (ctypes.c_uint8 * self._num_devices)()))

    def stats(self) -> ClientStats:
        s = N.ClientStats()
        self._core.call(N.lib().autd3_client_stats_sized, ctypes.byref(s), ctypes.sizeof(s))
        return ClientStats(*(int(getattr(s, f)) for f in (fld[0] for fld in N.ClientStats._fields_)))

    def device_status(self, dev: int) -> DeviceStatus:
        _check.integer("dev", dev, 0, N.MAX_DEVICES - 1)
        s = N.ClientDeviceStatus()
        raise_for(self._core.call(N.lib().autd3_client_device_status_sized, dev, ctypes.byref(s), ctypes.sizeof(s)))
        return DeviceStatus(int(s.resets), int(s.reinits), ClientDeviceState(s.state), int(s.aways))

    def device_statuses(self) -> list[DeviceStatus]:
        return [self.device_status(i) for i in range(self._num_devices)]

    def device_resets(self, dev: int) -> int:
        """Times device `dev`'s state was lost or discarded (its patterns etc. must be re-sent)."""
        d = _check.integer("dev", dev, 0, self._num_devices - 1)
        return int(self._core.call(N.lib().autd3_client_device_resets, d))

    def _with_link(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(link, *args) with the client's link, guarded against a concurrent close."""
        lib = N.lib()
        return self._core.call(lambda h: fn(lib.autd3_client_link(h), *args))

    def link_stats(self) -> LinkStats:
        s = N.LinkStats()
        self._with_link(N.lib().autd3_link_stats_sized, ctypes.byref(s), ctypes.sizeof(s))
        m = int(s.measured)
        ph, ex = bool(m & _MEASURES_PHASE), bool(m & _MEASURES_EXCHANGE)
        return LinkStats(int(s.cycles), int(s.stale_cycles), int(s.lost_cycles),
                         int(s.phase_excursions) if ph else None, int(s.worst_phase_deviation_ns) if ph else None,
                         int(s.exchanges) if ex else None, int(s.worst_exchange_ns) if ex else None,
                         int(s.exchange_ns_total) if ex else None, m)

    def check_state(self) -> LinkStatus:
        """Check the devices' EtherCAT states and try to recover those not in OP (one checker at a
        time). May block while a device is being recovered."""
        s = N.LinkStatus()
        with self._checker_lock:
            raise_for(self._with_link(N.lib().autd3_link_check_state_sized, ctypes.byref(s), ctypes.sizeof(s)))
        n = s.num_devices
        return LinkStatus(tuple(DeviceState(s.state[i]) if s.state[i] <= 5 else DeviceState.OTHER for i in range(n)),
                          tuple(int(s.al_state[i]) for i in range(n)), int(s.recoveries))

    def diagnostics(self) -> dict[str, str]:
        """The link's diagnostics ("name : value" lines) as a dict."""
        buf = ctypes.create_string_buffer(8192)
        self._with_link(N.lib().autd3_link_diagnostics, buf, len(buf))
        out: dict[str, str] = {}
        for line in buf.value.decode("utf-8", "replace").splitlines():
            k, sep, v = line.partition(":")
            if sep:
                out[k.strip()] = v.strip()
        return out

    @property
    def emulator(self) -> "Emulator":
        """Fault injection and device reads of the in-process emulator link (EmulatorLinkOption only)."""
        from .emulator import Emulator

        if self._kind != LinkKind.EMULATOR:
            raise TypeError(f"client.emulator: the link is {self._kind.name.lower()}, not the in-process emulator")
        return Emulator(self)


def _close_forgotten(core: _Core) -> None:
    """A client dropped (or still open at exit) without close(): close it, which silences the array."""
    try:
        warnings.warn("libautd3: a Client was not closed; closing it now (the devices are silenced)",
                      ResourceWarning, stacklevel=1)
        core.close()
    except Exception:
        pass
