"""The C client handle and what keeps every call on it safe (not public API).

libautd3 frees a client in ``autd3_client_close()`` when no request handle is outstanding, and any
later call with it is undefined (include/autd3/client.h, "Lifetime"). A Python thread that has
checked "not closed" and is about to enter the library must therefore not be overtaken by a
``close()`` on another thread. ``_Core`` counts the calls inside the library (``users``); ``close``
marks the client closed (new calls raise ClosedError), waits until ``users`` is zero, then closes
the C client. Waits on request handles need no count: an outstanding handle keeps the C client
alive (client.h). The count is two short lock sections per call, never held across the call.

It also counts the handles it gave out and not yet released (``held``): in the library a handle
holds its slot until it is released, which is what back-pressure follows.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable, Optional, TypeVar

from . import _native as N
from .errors import AUTD3Error, ClosedError, make_error

T = TypeVar("T")

#: Blocking waits wait in slices of this many ms, so that Ctrl-C (KeyboardInterrupt, delivered to
#: the main thread between two calls) interrupts them within a slice.
SLICE_MS = 200


class _Core:
    __slots__ = ("h", "lock", "cond", "users", "held", "closed", "max_inflight", "on_close", "wait_for", "detach",
                 "_send", "_close")

    def __init__(self, h: ctypes.c_void_p, max_inflight: int) -> None:
        lib = N.lib()
        self.h = h
        self.lock = threading.Lock()  # taken with `with lock` (C-level; a Condition's own `with` is Python code)
        self.cond = threading.Condition(self.lock)  # close waits on it for the calls inside
        self.users = 0  # calls inside the library with h
        self.held = 0  # handles given out and not yet released
        self.closed = False
        self.max_inflight = max_inflight
        self.on_close: Optional[Callable[[], None]] = None
        self.wait_for = lib.autd3_request_wait_for  # request handles need no count: they keep the client alive
        self.detach = lib.autd3_request_detach
        self._send = lib.autd3_client_send
        self._close = lib.autd3_client_close

    def enter(self) -> ctypes.c_void_p:
        with self.lock:
            if self.closed:
                raise ClosedError("the client is closed")
            self.users += 1
        return self.h

    def leave(self) -> None:
        with self.lock:
            self.users -= 1
            if self.closed and not self.users:
                self.cond.notify_all()

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(h, *args) inside the library, guarded against a concurrent close."""
        h = self.enter()
        try:
            return fn(h, *args)
        finally:
            self.leave()

    def send(self, frame: N.Frame) -> ctypes.c_void_p:
        """autd3_client_send; the handle (counted in `held`) or the error (raised)."""
        h = self.enter()
        r = ctypes.c_void_p()
        e = -1
        try:
            e = self._send(h, ctypes.byref(frame), ctypes.byref(r))
            err = make_error(e, N.last_error()) if e else None  # the message of this thread's call
        finally:
            with self.lock:
                self.users -= 1
                if e == 0:
                    self.held += 1
                if self.closed and not self.users:
                    self.cond.notify_all()
        if err is not None:
            raise err
        return r

    def released(self, n: int) -> None:
        with self.lock:
            self.held -= n

    def slot_free(self, n: int = 1) -> bool:
        return self.held + n <= self.max_inflight

    def close(self) -> Optional[AUTD3Error]:
        """Refuse new calls, wait for those inside, close the C client (silencing the devices).
        None if it was already closed or closed cleanly, else the error close returned."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            while self.users:
                self.cond.wait()
        e = self._close(self.h)
        err = make_error(e, N.last_error()) if e else None
        hook = self.on_close
        if hook is not None:
            hook()
        return err
