"""Responses and requests: what a send gives back (include/autd3/client.h)."""

from __future__ import annotations

import ctypes
import enum
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from . import _check
from . import _native as N
from ._core import SLICE_MS, _Core
from .errors import AUTD3Error, InvalidHandleError, PendingError, make_error

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Outcome", "DeviceResponse", "Response", "Request"]


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
        e = (_check_fn or _load_check())(ctypes.byref(self._raw), None, None)
        if e != 0:
            raise _fail(e, self._raw)
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Response) and self.devices == other.devices

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Response(devices={self.devices!r})"


_check_fn: Any = None  # autd3_response_check(byref(Response), None, None), bare (see _native.bare)


def _load_check() -> Any:
    global _check_fn
    _check_fn = N.bare("autd3_response_check")
    return _check_fn


def _fail(code: int, resp: Optional[N.Response]) -> AUTD3Error:
    """The exception of a failing call, with a copy of its response (read in the calling thread)."""
    e = make_error(code, N.last_error())
    e.response = Response._from_c(resp) if resp is not None else None  # type: ignore[attr-defined]
    return e


def timeout_ms(timeout: Optional[float]) -> Optional[int]:
    if timeout is None:
        return None
    return _check.integer("timeout (ms)", round(_check.real("timeout", timeout) * 1000), 0, 0xFFFFFFFF)


_PENDING, _WAITING, _DONE, _DETACHED, _AWAITED, _REAPING = range(6)
_WHY = {_WAITING: "another thread is waiting on it", _DONE: "it was already waited on",
        _DETACHED: "it was detached", _AWAITED: "it is being awaited"}
_PENDING_CODE = PendingError.code


class Request:
    """A send in flight (``Client.send``). Consume it exactly once: ``wait()``, a ``poll()`` that
    returns a Response, ``await request``, or ``detach()``; a second use raises InvalidHandleError.
    Dropping it unconsumed detaches it (the frames stay in flight and are still acked)."""

    __slots__ = ("_client", "_core", "_handles", "_state", "_err", "_resp", "__weakref__")

    def __init__(self, client: "Client", core: _Core) -> None:
        self._client = client
        self._core = core
        self._handles: list[ctypes.c_void_p] = []  # one per frame, oldest first (the library copied the frames)
        self._state = _PENDING
        self._err: Optional[AUTD3Error] = None  # the first failure among the handles waited so far
        self._resp = N.Response()  # the last waited handle's response

    def _claim(self, to: int) -> None:
        core = self._core
        with core.lock:
            if self._state == _PENDING:  # the common case first: one compare under the lock
                self._state = to
                return
            while self._state == _REAPING:  # a send is freeing its slot (Client._make_room): one slice at most
                core.cond.wait()
            if self._state != _PENDING:
                raise InvalidHandleError(f"request cannot be used again: {_WHY[self._state]}")
            self._state = to

    def _set(self, to: int) -> None:
        with self._core.lock:
            self._state = to

    def _wait_handles(self, deadline: Optional[float]) -> bool:
        """Wait on the handles in order, in slices (Ctrl-C gets through between two), until every one
        ended (True) or `deadline` (time.monotonic(); one already past polls) passed with some left
        (False, those still valid). Streaming runs it once per command."""
        handles = self._handles
        core = self._core
        rr = ctypes.byref(self._resp)
        wait_for = core.wait_for
        ms = SLICE_MS
        while handles:
            if deadline is not None:
                ms = min(SLICE_MS, max(0, int((deadline - time.monotonic()) * 1000 + 0.999)))
            e = wait_for(handles[0], ms, rr)
            if e == _PENDING_CODE:
                if ms == 0:
                    return False
                continue
            del handles[0]
            core.released()
            if e != 0 and self._err is None:
                self._err = _fail(e, self._resp)  # read in this thread, right after the call
        return True

    def _result(self) -> Response:
        if self._err is not None:
            raise self._err
        return Response(self._resp)  # nothing writes into _resp any more

    def wait(self, timeout: Optional[float] = None) -> Response:
        """Block until every frame of the send completed (GIL released; Ctrl-C interrupts the wait,
        not the frames). Returns the last frame's Response; raises the first failure
        (DeviceResetError, TimedOutError, ClosedError, ...). Data bytes are not checked (see
        ``Response.check``). With `timeout` (s) for the whole request: PendingError if not done by
        then, and the request stays usable, as after an interrupted wait."""
        ms = None if timeout is None else timeout_ms(timeout)
        self._claim(_WAITING)
        try:
            if not self._wait_handles(None if ms is None else time.monotonic() + ms / 1000):
                raise PendingError("request not finished within its timeout")
        except BaseException:  # PendingError, KeyboardInterrupt: the handles left stay usable
            self._set(_PENDING if self._handles else _DONE)
            raise
        self._state = _DONE  # nobody else changes a claimed request's state
        return self._result()

    def poll(self) -> Optional[Response]:
        """Non-blocking: None while pending, else as wait() (and the request is consumed)."""
        self._claim(_WAITING)
        try:
            if not self._wait_handles(0.0):  # a deadline long past: each wait polls
                self._set(_PENDING)
                return None
        except BaseException:
            self._set(_PENDING if self._handles else _DONE)
            raise
        self._set(_DONE)
        return self._result()

    def detach(self) -> None:
        """Give the request up without waiting (its frames stay in flight)."""
        self._claim(_DETACHED)
        self._detach_rest()

    def done(self) -> bool:
        """Whether the request was consumed (waited, polled to completion or detached)."""
        return self._state in (_DONE, _DETACHED)

    def _detach_rest(self) -> None:
        n = 0
        while self._handles:
            self._core.detach(self._handles.pop(0))
            n += 1
        if n:
            self._core.released(n)

    def __await__(self) -> Any:
        """``await request``: resolved by the client's completer thread (one per client, not per
        request); the event loop is never blocked. Cancelling the awaiting task is safe: the
        request still completes in the library and its handle is released; the result is dropped."""
        comp = self._client._completer(or_none=True)
        fut = comp.adopt(self) if comp is not None else None
        if fut is None:  # the client is closed and its completer gone: the handles end at once
            import asyncio

            fut = asyncio.get_running_loop().run_in_executor(None, self.wait)
        return fut.__await__()

    def __del__(self) -> None:
        try:
            if self._state == _PENDING and self._handles:
                self._state = _DETACHED
                self._detach_rest()
        except Exception:  # interpreter shutdown: the library may be gone
            pass
