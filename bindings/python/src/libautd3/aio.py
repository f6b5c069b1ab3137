"""asyncio front end, shaped like the reference binding (PyPI autd3 0.9):

    client = await libautd3.aio.Client.open(geometry, libautd3.EmulatorLinkOption(), libautd3.ClientConfig())
    await client.send_checked(frame)
    fut = client.send(frame)          # an asyncio.Future[Response]
    response = await fut
    await client.close()              # or: async with await Client.open(...) as client:

Completion: the library offers no signal an event loop could watch, so each client has one
completer thread (started at the first send) that waits on the oldest request inside the library
(GIL released) and resolves its future on the loop with ``call_soon_threadsafe``. No thread and no
poll per request; requests complete in send order, so waiting on the oldest costs nothing.

The event loop never blocks on the bus: ``send`` queues a datagram that does not fit in the free
slots (back-pressure) and the completer thread sends it, in order, once slots free up. ``open``,
``close``, the firmware reads and the state check run in the loop's default executor.

Cancellation: cancelling a task awaiting a ``send`` future does not cancel the datagram (its frames
may already be executing on the devices, and every frame of a datagram ``send`` accepted is sent);
the frames complete in the library, their handles are released, the result is dropped.
``send_checked`` sends frame by frame: cancelling it lets the frame in flight complete and sends no
further frame. Cancelling ``open``, ``close`` or a read leaves the call to finish in the executor (an
``open`` cancelled that way closes the client it produced).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional, TypeVar

from . import client as _c
from .client import (
    ClientConfig,
    ClientStats,
    DeviceStatus,
    LinkStats,
    LinkStatus,
    Protocol,
    Response,
)
from .commands import DatagramLike
from .emulator import Emulator
from .geometry import Geometry
from .link import FirmwareVersion, LinkKind, LinkOption

__all__ = ["Client", "Checker"]

T = TypeVar("T")


async def _run(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


class Checker:
    """The state checker of an asyncio client: ``await checker.check()`` (runs in the executor: a
    check may block while a device is being recovered)."""

    def __init__(self, client: "_c.Client") -> None:
        self._client = client

    async def check(self) -> LinkStatus:
        return await _run(self._client.check_state)


class Client:
    """The asyncio client. ``await Client.open(geometry, link, config)``; ``async with`` closes it."""

    def __init__(self, sync: _c.Client) -> None:
        self.sync = sync  #: the underlying libautd3.Client

    @classmethod
    async def open(cls, geometry: Geometry, link: LinkOption, config: Optional[ClientConfig] = None) -> "Client":
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, _c.Client.open, geometry, link, config)
        try:
            sync = await asyncio.shield(fut)
        except asyncio.CancelledError:
            def close_late(f: "asyncio.Future[_c.Client]") -> None:
                if not f.cancelled() and f.exception() is None:
                    f.result().close()

            fut.add_done_callback(close_late)
            raise
        return cls(sync)

    @classmethod
    async def open_with_checker(cls, geometry: Geometry, link: LinkOption,
                                config: Optional[ClientConfig] = None) -> tuple["Client", Checker]:
        c = await cls.open(geometry, link, config)
        return c, Checker(c.sync)

    def send(self, datagram: DatagramLike) -> "asyncio.Future[Response]":
        """Queue the datagram; a future of its last frame's Response, raising the first failure when
        awaited (data bytes not checked, as ``Request.wait``). Never blocks the loop: under
        back-pressure the datagram waits in the client's backlog (sent in order)."""
        return self.sync._completer().submit(self.sync._frames(datagram))

    async def send_checked(self, datagram: DatagramLike) -> Response:
        """Frame by frame as the sync ``send_checked``: send, await the ack, check the devices' data
        bytes (DeviceError names the device and the code; the frames after a failure are not sent)."""
        check = self.sync.protocol != Protocol.V12  # v12: the data byte is a value, not an error code
        r: Optional[Response] = None
        for f in self.sync._frames(datagram):
            r = await self.sync._completer().submit([f])
            if check:
                r.check()
        assert r is not None
        return r

    async def read_firmware_version(self) -> list[FirmwareVersion]:
        return await _run(self.sync.read_firmware_version)

    async def read_fpga_state(self) -> list[int]:
        return await _run(self.sync.read_fpga_state)

    async def read_error_detail(self) -> list[int]:
        return await _run(self.sync.read_error_detail)

    async def check_state(self) -> LinkStatus:
        return await _run(self.sync.check_state)

    async def close(self) -> None:
        """Silence the devices and close (see libautd3.Client.close)."""
        await _run(self.sync.close)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> None:
        if et is None:
            await self.close()
        else:
            try:
                await self.close()
            except Exception:  # noqa: BLE001 - do not mask the exception already propagating
                pass

    # non-blocking reads, as on the sync client
    @property
    def geometry(self) -> Geometry:
        return self.sync.geometry

    @property
    def num_devices(self) -> int:
        return self.sync.num_devices

    @property
    def protocol(self) -> Protocol:
        return self.sync.protocol

    @property
    def link_kind(self) -> LinkKind:
        return self.sync.link_kind

    @property
    def closed(self) -> bool:
        return self.sync.closed

    @property
    def emulator(self) -> Emulator:
        return self.sync.emulator

    def stats(self) -> ClientStats:
        return self.sync.stats()

    def link_stats(self) -> LinkStats:
        return self.sync.link_stats()

    def device_status(self, dev: int) -> DeviceStatus:
        return self.sync.device_status(dev)

    def device_statuses(self) -> list[DeviceStatus]:
        return self.sync.device_statuses()

    def device_resets(self, dev: int) -> int:
        return self.sync.device_resets(dev)

    def diagnostics(self) -> dict[str, str]:
        return self.sync.diagnostics()
