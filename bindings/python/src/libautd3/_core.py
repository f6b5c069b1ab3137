"""The C client handle and what keeps every call on it safe (not public API).

libautd3 frees a client in ``autd3_client_close()`` when no request handle is outstanding, and any
later call with it is undefined (include/autd3/client.h, "Lifetime"). A Python thread that has
checked "not closed" and is about to enter the library must therefore not be overtaken by a
``close()`` on another thread. ``_Core`` counts the calls inside the library (``users``); ``close``
marks the client closed (new calls raise ClosedError), waits until ``users`` is zero, then closes
the C client. Waits on request handles need no count: an outstanding handle keeps the C client
alive (client.h). The count is two short lock sections per call, never held across the call. Sends
are guarded by the send lock instead, which every send holds anyway (``send``).

It also counts the handles it gave out and not yet released: in the library a handle holds its slot
until it is released, which is what back-pressure follows. The count is a deque of ``max_inflight``
tokens (``free``): a send takes one, a release gives one back. ``deque.pop``/``append`` are atomic in
CPython, so the waits that release handles (one per command while streaming) take no lock for it.
A send can return with no token left (the completer checks for room before it takes the send lock,
and a release gives its token back just after the library freed the slot): it then owes one
(``debt``, under the lock), paid back by the next release.
"""

from __future__ import annotations

import collections
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
    __slots__ = ("h", "lock", "send_lock", "cond", "users", "free", "debt", "closed", "max_inflight", "on_close", "wait_for", "detach",
                 "_send", "_close")

    def __init__(self, h: ctypes.c_void_p, max_inflight: int) -> None:
        lib = N.lib()
        self.h = h
        self.lock = threading.Lock()  # taken with `with lock` (C-level; a Condition's own `with` is Python code)
        self.cond = threading.Condition(self.lock)  # close waits on it for the calls inside
        # A datagram's frames go out back to back; it guards send (see there). Reentrant: a client
        # dropped unclosed is closed by its finalizer in whichever thread drops the last reference,
        # possibly the completer's while it holds this lock between two sends (close must not wait
        # on itself then; no send of that thread is inside the library at that moment).
        self.send_lock = threading.RLock()
        self.users = 0  # calls inside the library with h
        self.free = collections.deque([None] * max_inflight)  # a token per slot not held by a handle
        self.debt = 0  # tokens owed by sends that found none (see above)
        self.closed = False
        self.max_inflight = max_inflight
        self.on_close: Optional[Callable[[], None]] = None
        # request handles need no count: they keep the client alive
        self.wait_for = N.bare("autd3_request_wait_for")  # (c_void_p, int <= SLICE_MS, byref(Response))
        self.detach = lib.autd3_request_detach
        self._send = N.bare("autd3_client_send")  # (c_void_p, byref(Frame), byref(c_void_p))
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
        """autd3_client_send; the handle (it holds a token of `free`) or the error (raised). Called
        with `send_lock` held (Client.send, the completer), which is the guard here instead of
        `users`: close() takes that lock once after marking the client closed, so a send inside the
        library finishes before the C client can be freed and a later one sees `closed`. (Streaming
        sends once per command: two lock sections fewer.)"""
        r = ctypes.c_void_p()
        fr, rr = ctypes.byref(frame), ctypes.byref(r)
        # Nothing between this check and the call allocates, so no finalizer (see send_lock) can
        # close the client on this thread in between.
        if self.closed:
            raise ClosedError("the client is closed")
        e = self._send(self.h, fr, rr)
        if e:
            raise make_error(e, N.last_error())  # the message of this thread's call
        try:
            self.free.pop()
        except IndexError:
            with self.lock:
                self.debt += 1
        return r

    def released(self, n: int = 1) -> None:
        """`n` handles ended (waited on or detached): their slots are free again."""
        if self.debt:
            with self.lock:
                paid = min(n, self.debt)
                self.debt -= paid
                n -= paid
        if n == 1:  # every wait while streaming
            self.free.append(None)
        elif n:
            self.free.extend([None] * n)

    def slot_free(self, n: int = 1) -> bool:
        return len(self.free) - self.debt >= n

    def close(self) -> Optional[AUTD3Error]:
        """Refuse new calls, wait for those inside, close the C client (silencing the devices).
        None if it was already closed or closed cleanly, else the error close returned."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
        with self.send_lock:  # a send inside the library returns first (see send)
            pass
        with self.lock:
            while self.users:
                self.cond.wait()
        e = self._close(self.h)
        err = make_error(e, N.last_error()) if e else None
        hook = self.on_close
        if hook is not None:
            hook()
        return err
