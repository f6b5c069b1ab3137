"""The client (include/autd3/client.h): open, send, wait, read, close.

Threads: every method may be called from any thread. Blocking calls (open, send under
back-pressure, waits, the firmware reads, close) run inside the library with the GIL released
(ctypes releases it around every call), so other Python threads keep running.

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
import queue
import threading
import warnings
import weakref
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeVar

from . import _check
from . import _native as N
from .commands import DatagramLike, Frame, frames_of
from .errors import AUTD3Error, ClosedError, InvalidHandleError, PendingError, make_error, raise_for
from .geometry import Geometry
from .link import FirmwareVersion, LinkKind, LinkOption

if TYPE_CHECKING:
    import asyncio

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


class Outcome(enum.IntEnum):
    """What one device did with one frame."""

    NONE = 0
    EXECUTED = 1
    NOT_EXECUTED = 2
    UNKNOWN = 3


@dataclass(frozen=True)
class DeviceResponse:
    index: int
    data: int
    outcome: Outcome


class Response:
    """Per device: the data byte returned with its ack and what it did with the frame. Built lazily
    from the C response (streaming code that only checks ``all_executed`` pays for no objects)."""

    __slots__ = ("_raw", "_devices")

    def __init__(self, raw: N.Response) -> None:
        self._raw = raw
        self._devices: Optional[tuple[DeviceResponse, ...]] = None

    @classmethod
    def _from_c(cls, r: N.Response) -> "Response":
        return cls(N.Response.from_buffer_copy(r))

    @property
    def devices(self) -> tuple[DeviceResponse, ...]:
        if self._devices is None:
            r = self._raw
            self._devices = tuple(DeviceResponse(i, int(r.data[i]), Outcome(r.outcome[i]))
                                  for i in range(r.num_devices))
        return self._devices

    @property
    def data(self) -> list[int]:
        return list(self._raw.data[: self._raw.num_devices])

    @property
    def outcomes(self) -> list[Outcome]:
        return [Outcome(o) for o in self._raw.outcome[: self._raw.num_devices]]

    @property
    def all_executed(self) -> bool:
        n = self._raw.num_devices
        return bool(self._raw.outcome[:n] == [int(Outcome.EXECUTED)] * n)

    def check(self) -> "Response":
        """Raise DeviceError (naming the device and its code) for the first non-zero data byte
        (autd3_response_check); else return self."""
        e = N.lib().autd3_response_check(ctypes.byref(self._raw), None, None)
        if e != 0:
            raise _fail(e, self._raw)
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Response) and self.devices == other.devices

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Response(devices={self.devices!r})"


def _fail(code: int, resp: Optional[N.Response]) -> AUTD3Error:
    """The exception of a failing call, with its response attached (read in the calling thread)."""
    e = make_error(code, N.last_error())
    e.response = Response._from_c(resp) if resp is not None else None  # type: ignore[attr-defined]
    return e


_PENDING, _WAITING, _DONE, _DETACHED, _AWAITED = range(5)


class Request:
    """A send in flight (``Client.send``). Consume it exactly once: ``wait()``, a ``poll()`` that
    returns a Response, ``await request``, or ``detach()``; a second use raises InvalidHandleError.
    Dropping it unconsumed detaches it (the frames stay in flight and are still acked)."""

    __slots__ = ("_handles", "_frames", "_state", "_lock", "_client", "_err", "_resp", "__weakref__")

    def __init__(self, client: "Client", handles: list[ctypes.c_void_p], frames: list[Frame]) -> None:
        self._client = client
        self._handles = handles
        self._frames = frames  # the C frames point into these buffers until the request completes
        self._state = _PENDING
        self._lock = threading.Lock()
        self._err: Optional[AUTD3Error] = None  # the first failure among the handles waited so far
        self._resp = N.Response()  # the last handle's response

    def _claim(self, to: int) -> None:
        with self._lock:
            if self._state != _PENDING:
                why = {_WAITING: "another thread is waiting on it", _DONE: "it was already waited on",
                       _DETACHED: "it was detached", _AWAITED: "it is being awaited"}[self._state]
                raise InvalidHandleError(f"request cannot be used again: {why}")
            self._state = to

    def _step(self, timeout_ms: Optional[int] = None, poll: bool = False) -> bool:
        """Wait on (or poll) the oldest handle; False if it is still pending (the handle stays valid)."""
        lib = N.lib()
        h = self._handles[0]
        if poll:
            e = lib.autd3_request_poll(h, ctypes.byref(self._resp))
        elif timeout_ms is None:
            e = lib.autd3_request_wait(h, ctypes.byref(self._resp))
        else:
            e = lib.autd3_request_wait_for(h, timeout_ms, ctypes.byref(self._resp))
        if e == PendingError.code:
            return False
        self._handles.pop(0)
        self._client._released(1)
        if e != 0 and self._err is None:
            self._err = _fail(e, self._resp)  # read in this thread, right after the call
        return True

    def _result(self) -> Response:
        if self._err is not None:
            raise self._err
        return Response._from_c(self._resp)

    def _wait_all(self, timeout_ms: Optional[int]) -> Response:
        """Wait on the handles in order (GIL released inside). On PendingError the rest stays valid."""
        while self._handles:
            if not self._step(timeout_ms):
                raise PendingError(f"request not finished within {timeout_ms} ms")
        return self._result()

    def wait(self, timeout: Optional[float] = None) -> Response:
        """Block until every frame of the send completed (GIL released). Returns the last frame's
        Response; raises the first failure (DeviceResetError, TimedOutError, ClosedError, ...).
        With `timeout` (s): PendingError if not done by then, and the request stays usable."""
        ms = None if timeout is None else _check.integer("timeout (ms)", round(_check.real("timeout", timeout) * 1000),
                                                         0, 0xFFFFFFFF)
        self._claim(_WAITING)
        try:
            r = self._wait_all(ms)
        except PendingError:
            with self._lock:
                self._state = _PENDING
            raise
        except BaseException:
            self._finish()
            raise
        self._finish()
        return r

    def poll(self) -> Optional[Response]:
        """Non-blocking: None while pending, else as wait() (and the request is consumed)."""
        self._claim(_WAITING)
        try:
            while self._handles:
                if not self._step(poll=True):
                    with self._lock:
                        self._state = _PENDING
                    return None
            r = self._result()
        except BaseException:
            self._finish()
            raise
        self._finish()
        return r

    def detach(self) -> None:
        """Give the request up without waiting (its frames stay in flight)."""
        self._claim(_DETACHED)
        self._detach_rest()

    def done(self) -> bool:
        """Whether the request was consumed (waited, polled to completion or detached)."""
        return self._state in (_DONE, _DETACHED)

    def _detach_rest(self) -> None:
        lib = N.lib()
        n = 0
        while self._handles:
            lib.autd3_request_detach(self._handles.pop(0))
            n += 1
        if n:
            self._client._released(n)
        self._frames = []

    def _finish(self) -> None:
        with self._lock:
            self._state = _DONE
        self._frames = []

    def __await__(self) -> Any:
        """``await request``: completion through the client's completer thread (one per client, not
        per request); the event loop is never blocked. Cancelling the awaiting task is safe: the
        request still completes in the library and its handle is released; the result is dropped."""
        return self._client._completer().submit(self).__await__()

    def __del__(self) -> None:
        try:
            if self._state == _PENDING and self._handles:
                self._state = _DETACHED
                self._detach_rest()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class _Completer:
    """Resolves asyncio futures of a client's requests from one thread, in submission order.

    libautd3 has no completion descriptor to hand to an event loop, so this thread blocks in
    autd3_request_wait (GIL released) on the oldest request and posts each result to its loop with
    call_soon_threadsafe. Requests complete in send order (cumulative acks), so waiting on the oldest
    first costs no latency. One thread per client, started at the first await."""

    def __init__(self) -> None:
        self._q: "queue.SimpleQueue[Optional[tuple[Request, asyncio.AbstractEventLoop, asyncio.Future[Response]]]]" = (
            queue.SimpleQueue())
        self._t = threading.Thread(target=self._run, name="libautd3-completer", daemon=True)
        self._t.start()

    def submit(self, req: Request) -> "asyncio.Future[Response]":
        import asyncio

        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Response] = loop.create_future()
        req._claim(_AWAITED)
        self._q.put((req, loop, fut))
        return fut

    def stop(self) -> None:
        self._q.put(None)

    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            req, loop, fut = item
            try:
                r = req._wait_all(None)
                res: tuple[bool, Any] = (True, r)
            except BaseException as e:  # noqa: BLE001 - delivered to the awaiting task
                res = (False, e)
            req._finish()
            try:
                loop.call_soon_threadsafe(_resolve, fut, res)
            except RuntimeError:  # the loop was closed meanwhile: nobody is waiting
                pass


def _resolve(fut: "asyncio.Future[Response]", res: tuple[bool, Any]) -> None:
    if fut.cancelled():
        return
    if res[0]:
        fut.set_result(res[1])
    else:
        fut.set_exception(res[1])


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


@dataclass(frozen=True)
class DeviceStatus:
    """One device as the client sees it; ``resets`` changing means its state (patterns, modulation,
    silencer...) is gone and the application must send it again."""

    resets: int
    reinits: int
    state: ClientDeviceState


@dataclass(frozen=True)
class LinkStats:
    cycles: int
    stale_cycles: int
    lost_cycles: int


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

    _h: ctypes.c_void_p
    _geometry: Geometry
    _kind: LinkKind
    _closed: bool
    _guard: threading.RLock
    _checker_lock: threading.Lock
    _completer_obj: Optional[_Completer]
    _finalizer: Any  # weakref.finalize
    _send_lock: threading.Lock
    _live: "collections.deque[weakref.ReferenceType[Request]]"
    _max_inflight: int
    _held_lock: threading.Lock
    _held: int

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
        e = N.lib().autd3_client_open(geometry.handle, ctypes.byref(lo), ctypes.byref(cc), ctypes.byref(h))
        del keep
        raise_for(e)
        self = cls.__new__(cls)
        self._h = h
        self._geometry = geometry
        self._kind = LinkKind(link.KIND)
        self._closed = False
        self._guard = threading.RLock()  # held by quick calls; close takes it before freeing
        self._checker_lock = threading.Lock()
        self._completer_obj = None
        self._send_lock = threading.Lock()
        self._held_lock = threading.Lock()
        self._held = 0  # handles sent and not yet released (each holds a slot in the library)
        self._live = collections.deque()
        self._max_inflight = config.max_inflight if config.protocol != Protocol.V12 else 1
        self._finalizer = weakref.finalize(self, _close_forgotten, h)
        return self

    @classmethod
    def open_with_checker(cls, geometry: Geometry, link: LinkOption,
                          config: Optional[ClientConfig] = None) -> tuple["Client", Checker]:
        c = cls.open(geometry, link, config)
        return c, Checker(c)

    # ---- lifetime ----------------------------------------------------------------------------

    def _handle(self) -> ctypes.c_void_p:
        if self._closed:
            raise ClosedError("the client is closed")
        return self._h

    def _quick(self, fn: Callable[[ctypes.c_void_p], T]) -> T:
        """A non-blocking call that close must not race with."""
        with self._guard:
            return fn(self._handle())

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Silence every device, stop the bus thread, close the link. Raises (TimedOutError,
        SecondMasterError, LinkError, DeviceError) naming the devices that may still be emitting;
        the client is closed in any case. A second close is a no-op."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            e = N.lib().autd3_client_close(self._h)
            if self._completer_obj is not None:
                self._completer_obj.stop()
            raise_for(e)

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

    def _completer(self) -> _Completer:
        with self._guard:
            if self._completer_obj is None:
                self._handle()
                self._completer_obj = _Completer()
            return self._completer_obj

    # ---- sending -----------------------------------------------------------------------------

    def _frames(self, d: DatagramLike) -> list[Frame]:
        return frames_of(d, self._geometry)

    def send(self, datagram: DatagramLike) -> Request:
        """Queue the datagram's frames (streaming). Blocks only under back-pressure (max_inflight
        frames in flight). Returns a Request to wait on, poll, await or detach."""
        frames = self._frames(datagram)
        lib = N.lib()
        h = self._handle()
        req = Request(self, [], frames)
        with self._send_lock:
            for f in frames:
                self._make_room(req)
                r = ctypes.c_void_p()
                e = lib.autd3_client_send(h, ctypes.byref(f.c), ctypes.byref(r))
                if e != 0:
                    exc = _fail(e, None)
                    req._state = _DETACHED
                    req._detach_rest()  # the frames queued before stay in flight
                    raise exc
                req._handles.append(r)
                with self._held_lock:
                    self._held += 1
            self._live.append(weakref.ref(req))
        return req

    def _released(self, n: int) -> None:
        with self._held_lock:
            self._held -= n

    def _make_room(self, current: Request) -> None:
        """A handle holds its slot until it is released, so requests nobody waits on would block the
        next send forever once max_inflight of them exist. Before that happens, wait on the oldest
        unclaimed one here and keep its result in it (its wait() returns it later)."""
        while True:
            with self._held_lock:
                if self._held < self._max_inflight:  # the common case: a free slot, nothing to scan
                    if len(self._live) > 4 * self._max_inflight:
                        self._live = collections.deque(w for w in self._live if (x := w()) is not None and x._handles)
                    return
            live = [r for r in (w() for w in self._live) if r is not None and r._handles]
            self._live = collections.deque(weakref.ref(r) for r in live)
            held = sum(len(r._handles) for r in live) + len(current._handles)
            if held < self._max_inflight:
                return
            for r in live + [current]:
                with r._lock:
                    if r._state != _PENDING or not r._handles:
                        continue
                    r._state = _WAITING
                try:
                    r._step()
                finally:
                    with r._lock:
                        if r._state == _WAITING:
                            r._state = _PENDING
                break
            else:
                return  # every slot is held by a request someone is waiting on: they will free it

    def send_checked(self, datagram: DatagramLike) -> Response:
        """Stop-and-wait: send each frame, wait, check the devices' data bytes (DeviceError names the
        device and the code). Returns the last frame's Response. Blocks (GIL released)."""
        frames = self._frames(datagram)
        lib = N.lib()
        h = self._handle()
        resp = N.Response()
        for f in frames:
            e = lib.autd3_client_send_checked(h, ctypes.byref(f.c), ctypes.byref(resp))
            if e != 0:
                raise _fail(e, resp)
        return Response._from_c(resp)

    # ---- reads -------------------------------------------------------------------------------

    @property
    def geometry(self) -> Geometry:
        return self._geometry

    @property
    def num_devices(self) -> int:
        return self._quick(lambda h: int(N.lib().autd3_client_num_devices(h)))

    @property
    def protocol(self) -> Protocol:
        return self._quick(lambda h: Protocol(N.lib().autd3_client_protocol(h)))

    @property
    def link_kind(self) -> LinkKind:
        return self._kind

    def read_firmware_version(self) -> list[FirmwareVersion]:
        """Every device's CPU and FPGA firmware versions (exclusive reads). Blocks."""
        n = self.num_devices
        out = (N.FwVersion * n)()
        raise_for(N.lib().autd3_client_read_firmware_version(self._handle(), out))
        return [FirmwareVersion._from_c(v) for v in out]

    def read_fpga_state(self) -> list[int]:
        """Every device's FPGA state byte. Blocks."""
        n = self.num_devices
        out = (ctypes.c_uint8 * n)()
        raise_for(N.lib().autd3_client_read_fpga_state(self._handle(), out))
        return list(out)

    def read_error_detail(self) -> list[int]:
        """Every device's latched firmware error code (0 = none). Blocks."""
        n = self.num_devices
        out = (ctypes.c_uint8 * n)()
        raise_for(N.lib().autd3_client_read_error_detail(self._handle(), out))
        return list(out)

    def stats(self) -> ClientStats:
        s = N.ClientStats()
        self._quick(lambda h: N.lib().autd3_client_stats_sized(h, ctypes.byref(s), ctypes.sizeof(s)))
        return ClientStats(*(int(getattr(s, f)) for f in (fld[0] for fld in N.ClientStats._fields_)))

    def device_status(self, dev: int) -> DeviceStatus:
        _check.integer("dev", dev, 0, N.MAX_DEVICES - 1)
        s = N.ClientDeviceStatus()
        e = self._quick(lambda h: N.lib().autd3_client_device_status_sized(h, dev, ctypes.byref(s), ctypes.sizeof(s)))
        raise_for(e)
        return DeviceStatus(int(s.resets), int(s.reinits), ClientDeviceState(s.state))

    def device_statuses(self) -> list[DeviceStatus]:
        return [self.device_status(i) for i in range(self.num_devices)]

    def device_resets(self, dev: int) -> int:
        """Times device `dev`'s state was lost or discarded (its patterns etc. must be re-sent)."""
        d = _check.integer("dev", dev, 0, N.MAX_DEVICES - 1)
        return self._quick(lambda h: int(N.lib().autd3_client_device_resets(h, d)))

    def link_stats(self) -> LinkStats:
        s = N.LinkStats()
        self._quick(lambda h: N.lib().autd3_link_stats_sized(N.lib().autd3_client_link(h), ctypes.byref(s),
                                                             ctypes.sizeof(s)))
        return LinkStats(int(s.cycles), int(s.stale_cycles), int(s.lost_cycles))

    def check_state(self) -> LinkStatus:
        """Check the devices' EtherCAT states and try to recover those not in OP (one checker at a time)."""
        s = N.LinkStatus()
        with self._checker_lock:
            link = self._quick(lambda h: N.lib().autd3_client_link(h))
            raise_for(N.lib().autd3_link_check_state_sized(link, ctypes.byref(s), ctypes.sizeof(s)))
        n = s.num_devices
        return LinkStatus(tuple(DeviceState(s.state[i]) if s.state[i] <= 5 else DeviceState.OTHER for i in range(n)),
                          tuple(int(s.al_state[i]) for i in range(n)), int(s.recoveries))

    def diagnostics(self) -> dict[str, str]:
        """The link's diagnostics ("name : value" lines) as a dict."""
        buf = ctypes.create_string_buffer(8192)
        self._quick(lambda h: N.lib().autd3_link_diagnostics(N.lib().autd3_client_link(h), buf, len(buf)))
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

    def _link(self) -> Any:
        return self._quick(lambda h: N.lib().autd3_client_link(h))


def _close_forgotten(h: ctypes.c_void_p) -> None:
    """A client dropped (or still open at exit) without close(): close it, which silences the array."""
    try:
        warnings.warn("libautd3: a Client was not closed; closing it now (the devices are silenced)",
                      ResourceWarning, stacklevel=1)
        N.lib().autd3_client_close(h)
    except Exception:
        pass
