"""Blocking waits release the GIL; asyncio completes without a thread or a poll per request;
cancelling an awaiting task is safe."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import pytest

import libautd3 as autd
from libautd3 import _native as N
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


def test_close_waits_for_a_call_inside_the_library(geometry: autd.Geometry) -> None:
    """A call that has entered the library finishes before close frees the C client (a close that
    overtook it would free the client under it: undefined behaviour in C)."""
    c = autd.Client.open(geometry, autd.EmulatorLinkOption())
    lib = N.lib()
    real_stats, real_close = lib.autd3_client_stats_sized, c._core._close
    events: list[str] = []
    inside = threading.Event()

    def slow_stats(*a: Any) -> None:  # stands for a call that is slow inside the library
        events.append("enter")
        inside.set()
        time.sleep(0.3)
        real_stats(*a)
        events.append("leave")

    def close(h: Any) -> int:
        events.append("close")
        return int(real_close(h))

    lib.autd3_client_stats_sized = slow_stats
    c._core._close = close
    try:
        t = threading.Thread(target=c.stats)
        t.start()
        assert inside.wait(10)
        c.close()
        t.join()
    finally:
        lib.autd3_client_stats_sized = real_stats
    assert events == ["enter", "leave", "close"], events
    with pytest.raises(autd.ClosedError):
        c.stats()


def test_close_racing_every_call_never_crashes(geometry: autd.Geometry) -> None:
    """Threads keep calling while another closes: every call either works or raises ClosedError."""
    calls: list[Callable[[autd.Client], object]] = [
        lambda c: c.send(autd.Null()).wait(),
        lambda c: c.send(autd.Null()),
        lambda c: c.send_checked(autd.Null()),
        lambda c: c.stats(),
        lambda c: c.device_status(1),
        lambda c: c.device_resets(0),
        lambda c: c.link_stats(),
        lambda c: c.diagnostics(),
        lambda c: c.emulator.counters(0),
        lambda c: c.emulator.output(1),
        lambda c: c.read_fpga_state(),
    ]
    for rnd in range(12):
        c = autd.Client.open(geometry, autd.EmulatorLinkOption())
        bad: list[BaseException] = []
        closed = threading.Event()
        ran = [0]

        def worker(k: int) -> None:
            while True:
                try:
                    calls[(k + ran[0]) % len(calls)](c)
                    ran[0] += 1
                except autd.ClosedError:
                    return
                except BaseException as e:  # noqa: BLE001
                    if not closed.is_set() or not isinstance(e, autd.AUTD3Error):
                        bad.append(e)
                        return

        ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        time.sleep(0.005 * (rnd % 4))
        c.close()
        closed.set()
        for t in ts:
            t.join(30)
            assert not t.is_alive(), "a call hung after close"
        assert not bad, bad
    assert ran[0] > 0


CTRL_C = r"""
import os, signal, threading, libautd3 as autd
cfg = autd.ClientConfig(timeout_cycles=60000, close_timeout_ms=10000)
c = autd.Client.open(autd.Geometry.row(1), autd.EmulatorLinkOption(), cfg)
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
before = c.stats().completed
try:
    c.{call}
    print("NOT INTERRUPTED")
except KeyboardInterrupt:
    print("INTERRUPTED", c.stats().completed - before)
c.emulator.inject(0)
try:
    c.close()
except autd.AUTD3Error as e:
    print("close:", e)
"""


@pytest.mark.parametrize("call", ["send_checked(autd.XorHash(16, sleep_ms=2500))",
                                  "send(autd.XorHash(16, sleep_ms=2500)).wait()"])
def test_ctrl_c_interrupts_a_blocking_wait(call: str) -> None:
    """The device takes 2.5 s over the frame; Ctrl-C after 0.3 s ends the wait, not the frame."""
    out = subprocess.run([sys.executable, "-c", CTRL_C.replace("{call}", call)], capture_output=True, text=True,
                         timeout=120)
    assert "INTERRUPTED 0" in out.stdout, (out.stdout, out.stderr)


def test_wait_timeout_bounds_the_whole_request(client: autd.Client) -> None:
    """Three frames of 40 ms each: a 60 ms timeout is for the request, not for each frame."""
    cfg = autd.ClientConfig(timeout_cycles=1000)
    with autd.Client.open(client.geometry, autd.EmulatorLinkOption(), cfg) as c:
        r = c.send((autd.XorHash(16, sleep_ms=40),) * 3)
        with pytest.raises(autd.PendingError):
            r.wait(timeout=0.06)
        assert not r.done()
        assert r.wait().all_executed


def test_wait_while_a_send_frees_the_requests_slot(geometry: autd.Geometry) -> None:
    """With every slot held, a send waits on the oldest request nobody waits on (Client._make_room);
    its owner's wait() meanwhile waits for that and gets the result, it does not fail."""
    cfg = autd.ClientConfig(max_inflight=1, timeout_cycles=1000)
    with autd.Client.open(geometry, autd.EmulatorLinkOption(), cfg) as c:
        slow = c.send(autd.XorHash(16, sleep_ms=300))
        t = threading.Thread(target=lambda: c.send(autd.Null()).wait())
        t.start()
        time.sleep(0.05)  # the other send is waiting on `slow` now (300 ms)
        assert slow.wait().all_executed
        t.join(30)
        assert not t.is_alive()


def test_slot_tokens_follow_the_library_when_a_send_finds_none(geometry: autd.Geometry) -> None:
    """A send can return with no token left (the completer checks for room before it takes the send
    lock; a wait gives its token back just after the library freed the slot). It must owe the token,
    not drop it: else the next release would count a slot free that a handle still holds, and a send
    could block in the library on requests nobody waits on."""
    cfg = autd.ClientConfig(max_inflight=2)
    with autd.Client.open(geometry, autd.EmulatorLinkOption(), cfg) as c:
        core = c._core
        assert core.slot_free(2) and not core.slot_free(3)
        core.free.clear()  # two releases whose tokens are not back yet: the library has both slots, we count none
        r = c.send(autd.Null())
        assert core.debt == 1 and not core.slot_free()  # the send owes its token
        core.released()  # the first late release pays the debt
        assert core.debt == 0 and not core.slot_free()
        core.released()  # the second gives its token back: one handle (r) out of two slots
        assert core.slot_free(1) and not core.slot_free(2)
        assert r.wait().all_executed
        assert core.slot_free(2) and not core.slot_free(3)


def test_a_client_dropped_while_its_thread_holds_the_send_lock_is_closed(geometry: autd.Geometry) -> None:
    """A client dropped without close() is closed by its finalizer in whichever thread drops the last
    reference: possibly the completer's, between two sends with the send lock held. That close must
    not wait for the lock its own thread holds (it would wait forever)."""
    import warnings

    holder = {"client": autd.Client.open(geometry, autd.EmulatorLinkOption())}
    core = holder["client"]._core
    done = threading.Event()

    def drop() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            with core.send_lock:
                holder.pop("client")  # the last reference: the finalizer closes the client here
        done.set()

    t = threading.Thread(target=drop, daemon=True)
    t.start()
    t.join(10)
    assert done.is_set(), "the finalizer's close waited on the send lock its own thread holds"
    assert core.closed
