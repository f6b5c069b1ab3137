"""asyncio completion: one thread per client (not per request), started at the first await.

libautd3 has no completion signal an event loop could watch, so this thread blocks in
``autd3_request_wait`` (GIL released, no polling) on the oldest awaited request and hands each result
to its loop with ``call_soon_threadsafe``. Requests complete in send order (cumulative acks), so
waiting on the oldest first adds no latency. The reasons for a thread rather than a descriptor are in
bindings/python/README.md ("asyncio").

Sends from the event loop never block it: ``submit`` sends at once when the datagram's frames fit in
the free slots and no earlier datagram is queued; otherwise the datagram joins a backlog that this
thread sends, in order, as slots free up (back-pressure waits here, not on the loop).
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import threading
import weakref
from typing import TYPE_CHECKING, Any, Optional

from . import _native as N
from ._core import SLICE_MS
from .commands import Frame
from .errors import AUTD3Error, ClosedError
from .request import _AWAITED, _PENDING, Request, Response, _fail

if TYPE_CHECKING:
    from .client import Client


class _Op:
    """One awaited send: its future and what its frames gave so far."""

    __slots__ = ("loop", "fut", "left", "err", "raw")

    def __init__(self, n: int, raw: Optional[N.Response] = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.fut: asyncio.Future[Response] = self.loop.create_future()
        self.left = n  # frames not yet completed (or given up)
        self.err: Optional[BaseException] = None  # the first failure
        self.raw = raw if raw is not None else N.Response()  # the last frame's response


def _resolve(fut: "asyncio.Future[Response]", ok: bool, value: Any) -> None:
    if fut.cancelled():  # the awaiting task was cancelled: the frames completed all the same
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


class Completer:
    def __init__(self, client: "Client") -> None:
        self._core = client._core
        self._client = weakref.ref(client)  # no strong reference: a forgotten client is still collected
        self._send_lock = client._core.send_lock  # the client's sends and ours go one at a time
        self._lock = threading.Lock()  # `with` on the lock itself: a Condition's `with` is Python code
        self._cond = threading.Condition(self._lock)
        self._inflight: collections.deque[tuple[ctypes.c_void_p, _Op]] = collections.deque()  # sent, in send order
        self._backlog: collections.deque[tuple[list[Frame], _Op]] = collections.deque()  # not yet sent
        self._exited = False
        self._wait = N.lib().autd3_request_wait
        self._core.on_close = self._wake
        self._thread = threading.Thread(target=self._run, name="libautd3-completer", daemon=True)
        self._thread.start()

    # ---- the event loop's side ------------------------------------------------------------------

    def submit(self, frames: list[Frame]) -> "asyncio.Future[Response]":
        """Send (or queue) a datagram's frames; its future resolves when all have completed."""
        op = _Op(len(frames))
        core = self._core
        with self._lock:
            if core.closed:
                op.fut.set_exception(ClosedError("the client is closed"))
                return op.fut
            if self._backlog or not core.slot_free(len(frames)) or not self._send_lock.acquire(False):
                self._backlog.append((frames, op))
                self._cond.notify()
                return op.fut
        try:  # the frames fit in free slots and nobody else sends (we hold the send lock): no blocking
            self._send(frames, op, wait_for_room=False)
        finally:
            self._send_lock.release()
        return op.fut

    def adopt(self, req: Request) -> "Optional[asyncio.Future[Response]]":
        """``await request`` of a sync Request: this thread waits on its handles. None if the thread
        has ended (the client was closed and everything before was resolved)."""
        req._claim(_AWAITED)
        op = _Op(len(req._handles), req._resp)
        op.err = req._err  # a frame already waited on (Client._make_room) may have failed
        with self._lock:
            if self._exited:
                req._set(_PENDING)
                return None
            self._inflight.extend((h, op) for h in req._handles)
            req._handles = []
            self._cond.notify()
        if not op.left:
            self._post(op)
        return op.fut

    # ---- sending, from either side ---------------------------------------------------------------

    def _send(self, frames: list[Frame], op: _Op, wait_for_room: bool) -> None:
        """Send the frames (the send lock held); with `wait_for_room`, wait for free slots first."""
        core = self._core
        for i, f in enumerate(frames):
            try:
                while wait_for_room and not core.slot_free():
                    if self._inflight:
                        self._wait_head()
                        continue
                    client = self._client()
                    if client is None or not client._make_room(None):
                        break  # slots held by requests others wait on: the send blocks until one is released
                h = core.send(f.c)
            except AUTD3Error as e:
                with self._lock:  # the frames sent before stay in flight; the rest is given up
                    op.err = op.err or e
                    op.left -= len(frames) - i
                    done = op.left == 0
                if done:
                    self._post(op)
                return
            with self._lock:
                self._inflight.append((h, op))
                self._cond.notify()

    # ---- the completer thread ----------------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:
            self._cond.notify_all()

    def _run(self) -> None:
        core = self._core
        while True:
            with self._lock:
                while not self._inflight and not self._backlog and not core.closed:
                    self._cond.wait()
                if not self._inflight and not self._backlog:
                    self._exited = True
                    return  # closed, and every future resolved
                send_next = bool(self._backlog) and (not self._inflight or core.slot_free())
            if not send_next:
                self._wait_head()
            elif self._send_lock.acquire(timeout=SLICE_MS / 1000):
                try:
                    with self._lock:
                        frames, op = self._backlog.popleft()
                    self._send(frames, op, wait_for_room=True)
                finally:
                    self._send_lock.release()
            elif self._inflight:
                # another thread sends (it may be waiting for a slot that one of ours holds): free one
                self._wait_head()

    def _wait_head(self) -> None:
        h, op = self._inflight[0]  # only this thread takes from the left
        e = self._wait(h, ctypes.byref(op.raw))  # blocks, GIL released
        err = _fail(e, op.raw) if e else None  # the message of this thread's call
        self._core.released(1)
        with self._lock:
            self._inflight.popleft()
            if err is not None and op.err is None:
                op.err = err
            op.left -= 1
            done = op.left == 0
        if done:
            self._post(op)

    def _post(self, op: _Op) -> None:
        res: tuple[bool, Any] = (False, op.err) if op.err is not None else (True, Response(op.raw))
        try:
            op.loop.call_soon_threadsafe(_resolve, op.fut, *res)
        except RuntimeError:  # the loop was closed meanwhile: nobody is waiting
            pass
