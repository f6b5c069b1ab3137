"""asyncio front end, shaped like the reference binding (PyPI autd3 0.9):

    client = await libautd3.aio.Client.open(geometry, libautd3.EmulatorLinkOption(), libautd3.ClientConfig())
    await client.send_checked(frame)
    fut = client.send(frame)          # an asyncio.Future[Response]
    response = await fut
    await client.close()              # or: async with await Client.open(...) as client:

Completion: the library offers no descriptor an event loop could watch, so each client has one
completer thread (started at the first send) that waits on the oldest request inside the library
(GIL released) and resolves its future on the loop with ``call_soon_threadsafe``. No thread and no
poll per request; requests complete in send order, so waiting on the oldest costs nothing.

Cancellation: cancelling a task awaiting ``send_checked`` or a ``send`` future does not cancel the
frame (it may already be executing on the devices); the request completes in the library, its
handle is released, and the result is dropped. ``open``, ``close`` and the firmware reads run in the
loop's default executor; cancelling them leaves the call to finish there (an ``open`` cancelled that
way closes the client it produced).
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from . import client as _c
from .client import (
    Checker,
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
from .link import FirmwareVersion, LinkOption

__all__ = ["Client"]


class Client:
    """The asyncio client. ``await Client.open(geometry, link, config)``; ``async with`` closes it."""

    def __init__(self, sync: _c.Client) -> None:
        self.sync = sync  #: the underlying libautd3.Client (every sync read is available on it)

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
        """Queue the datagram and return a future of its Response (raises on failure when awaited).
        Blocks only under back-pressure (all max_inflight slots in use)."""
        req = self.sync.send(datagram)
        return self.sync._completer().submit(req)

    async def send_checked(self, datagram: DatagramLike) -> Response:
        """Send, await the ack, check the devices' data bytes (DeviceError names the device and code)."""
        r = await self.send(datagram)
        if self.sync.protocol != Protocol.V12:  # as autd3_client_send_checked
            r.check()
        return r

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def read_firmware_version(self) -> list[FirmwareVersion]:
        return await self._run(self.sync.read_firmware_version)  # type: ignore[no-any-return]

    async def read_fpga_state(self) -> list[int]:
        return await self._run(self.sync.read_fpga_state)  # type: ignore[no-any-return]

    async def read_error_detail(self) -> list[int]:
        return await self._run(self.sync.read_error_detail)  # type: ignore[no-any-return]

    async def check_state(self) -> LinkStatus:
        return await self._run(self.sync.check_state)  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Silence the devices and close (see libautd3.Client.close)."""
        await self._run(self.sync.close)

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
