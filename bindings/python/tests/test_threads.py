"""Blocking waits release the GIL; asyncio completes without a thread or a poll per request;
cancelling an awaiting task is safe."""

from __future__ import annotations

import asyncio
import threading
import time

import libautd3 as autd
from libautd3 import aio


def test_blocking_wait_releases_the_gil(geometry: autd.Geometry) -> None:
    # a device that sleeps 400 ms per frame: the client must wait longer than that before resync
    client = autd.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig(timeout_cycles=1000))
    stamps: list[float] = []
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            stamps.append(time.monotonic())

    t = threading.Thread(target=spin)
    t.start()
    t0 = time.monotonic()
    client.send_checked(autd.XorHash(16, sleep_ms=400))  # the device sleeps 400 ms: the call blocks that long
    t1 = time.monotonic()
    stop.set()
    t.join()
    client.close()
    assert t1 - t0 >= 0.3, "the frame did not block (the device sleep was not applied)"
    inside = [s for s in stamps if t0 + 0.1 < s < t1 - 0.1]
    assert inside, "no other Python thread ran while send_checked blocked: the GIL was held"


def test_asyncio_send_and_no_thread_per_request(geometry: autd.Geometry) -> None:
    async def main() -> None:
        async with await aio.Client.open(geometry, autd.EmulatorLinkOption()) as c:
            before = threading.active_count()
            futs = [c.send(autd.Uniform(phase=i)) for i in range(100)]
            res = await asyncio.gather(*futs)
            assert all(r.all_executed for r in res)
            assert threading.active_count() <= before + 1  # the one completer thread at most
            r = await c.send_checked(autd.Focus((0, 0, 150)))
            assert r.all_executed
            fw = await c.read_firmware_version()
            assert len(fw) == 2
            req = c.sync.send(autd.Null())
            assert (await req).all_executed  # a Request is awaitable too

    asyncio.run(main())


def test_cancelling_an_awaiting_task_is_safe(geometry: autd.Geometry) -> None:
    async def main() -> None:
        c = await aio.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig(timeout_cycles=1000))
        done0 = c.stats().completed
        task = asyncio.ensure_future(c.send_checked(autd.XorHash(16, sleep_ms=200)))
        await asyncio.sleep(0.02)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert task.cancelled()
        r = await c.send_checked(autd.Null())  # the client is fine; the cancelled frame still completed
        assert r.all_executed and c.stats().completed >= done0 + 2
        await c.close()

    asyncio.run(main())


def test_concurrent_senders_from_threads(client: autd.Client) -> None:
    errs: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(30):
                client.send_checked(autd.Uniform(phase=(k * 30 + i) % 256))
        except BaseException as e:  # noqa: BLE001
            errs.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    assert client.stats().failed == 0
