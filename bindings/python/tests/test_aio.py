"""The asyncio client: the same errors as the sync one, a loop that never blocks on the bus, the
reads of the sync client."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable

import numpy as np
import pytest

import libautd3 as autd
from libautd3 import aio

BAD_STM = autd.FociSTM([[0, 0, 150], [5, 0, 150]], divider=10)  # after a strict Silencer: device error 0x04


def run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(coro(), 60))  # a hang fails the test instead of the run


@pytest.mark.parametrize("order", ["bad first", "bad last"])
def test_send_checked_raises_every_frames_device_error(geometry: autd.Geometry, order: str) -> None:
    """Each frame's data bytes are checked, not only the last frame's; a failing frame stops the rest."""

    async def main() -> None:
        async with await aio.Client.open(geometry, autd.EmulatorLinkOption()) as c:
            await c.send_checked((autd.Silencer(), autd.Uniform(phase=7, intensity=200)))
            seq = (BAD_STM, autd.Null()) if order == "bad first" else (autd.Null(), BAD_STM)
            with pytest.raises(autd.DeviceError) as ei:
                await c.send_checked(seq)
            assert ei.value.response.data[0] == 0x04  # type: ignore[attr-defined]
            out = c.emulator.output(0)
            if order == "bad first":  # the Null after the failing frame was not sent
                assert out.phase[0] == 7 and np.all(out.intensity == 200)
            else:
                assert np.all(out.intensity == 0)

    run(main)


def test_sync_send_checked_stops_at_the_failing_frame(client: autd.Client) -> None:
    client.send_checked((autd.Silencer(), autd.Uniform(phase=7, intensity=200)))
    with pytest.raises(autd.DeviceError):
        client.send_checked((BAD_STM, autd.Null()))
    assert np.all(client.emulator.output(1).intensity == 200)


def test_send_future_reports_outcome_failures_not_data_bytes(geometry: autd.Geometry) -> None:
    async def main() -> None:
        async with await aio.Client.open(geometry, autd.EmulatorLinkOption()) as c:
            await c.send_checked(autd.Silencer())
            r = await c.send(BAD_STM)  # as Request.wait: executed, the data byte is the caller's to check
            assert r.all_executed and r.data[0] == 0x04
            with pytest.raises(autd.DeviceError):
                r.check()

    run(main)


def test_closed_client(geometry: autd.Geometry) -> None:
    async def main() -> None:
        c = await aio.Client.open(geometry, autd.EmulatorLinkOption())
        await c.send_checked(autd.Null())
        await c.close()
        assert c.closed
        with pytest.raises(autd.ClosedError):
            await c.send(autd.Null())
        with pytest.raises(autd.ClosedError):
            await c.send_checked(autd.Null())
        with pytest.raises(autd.ClosedError):
            await c.read_firmware_version()
        with pytest.raises(autd.ClosedError):
            c.device_resets(0)

    run(main)


def test_close_fails_or_completes_every_pending_future(geometry: autd.Geometry) -> None:
    """Futures pending at close (in flight or still in the backlog) resolve: never a hang."""

    async def main() -> None:
        cfg = autd.ClientConfig(max_inflight=2, timeout_cycles=1000, close_timeout_ms=5000)
        c = await aio.Client.open(geometry, autd.EmulatorLinkOption(), cfg)
        futs = [c.send(autd.XorHash(16, sleep_ms=20)) for _ in range(8)]
        await asyncio.sleep(0.01)
        await c.close()
        res = await asyncio.gather(*futs, return_exceptions=True)
        closed = [r for r in res if isinstance(r, autd.ClosedError)]
        done = [r for r in res if isinstance(r, autd.Response)]
        assert len(closed) + len(done) == 8, res
        assert closed, "close came after every frame: nothing was pending"

    run(main)


def test_backpressure_queues_instead_of_blocking_the_loop(geometry: autd.Geometry) -> None:
    async def main() -> None:
        cfg = autd.ClientConfig(max_inflight=2, timeout_cycles=1000)
        async with await aio.Client.open(geometry, autd.EmulatorLinkOption(), cfg) as c:
            order: list[int] = []
            futs = []
            for i in range(8):  # no await in between: a blocking send would stall here
                f = c.send((autd.XorHash(16, sleep_ms=5), autd.Uniform(phase=i)))  # 2 frames: fills both slots
                f.add_done_callback(lambda _f, i=i: order.append(i))
                futs.append(f)
            backlog = len(c.sync._completer()._backlog)
            assert backlog >= 6, f"only {backlog} datagrams queued: the sends blocked instead"
            res = await asyncio.gather(*futs)
            assert all(r.all_executed for r in res)
            assert order == list(range(8)), order  # sent and completed in order
            assert c.emulator.output(0).phase[0] == 7

    run(main)


def test_datagram_larger_than_the_slots(geometry: autd.Geometry) -> None:
    async def main() -> None:
        async with await aio.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig(max_inflight=2)) as c:
            m = autd.Modulation(np.arange(2000) % 256)  # 4 frames, 2 slots
            r = await c.send(m)
            assert r.all_executed and c.emulator.output(0).modulation_size == 2000
            r = await c.send_checked(m)
            assert r.all_executed

    run(main)


def test_cancelled_backlogged_send_is_still_sent(geometry: autd.Geometry) -> None:
    async def main() -> None:
        cfg = autd.ClientConfig(max_inflight=1, timeout_cycles=1000)
        async with await aio.Client.open(geometry, autd.EmulatorLinkOption(), cfg) as c:
            first = c.send(autd.XorHash(16, sleep_ms=20))
            later = c.send(autd.Uniform(phase=42))
            later.cancel()
            await first
            await c.send_checked(autd.XorHash(16))  # behind the cancelled one
            assert c.emulator.output(0).phase[0] == 42

    run(main)


def test_reads_and_checker_parity(geometry: autd.Geometry) -> None:
    async def main() -> None:
        c, checker = await aio.Client.open_with_checker(geometry, autd.EmulatorLinkOption())
        async with c:
            pending = checker.check()
            assert asyncio.iscoroutine(pending)  # runs in the executor: the loop is not blocked
            st = await pending
            assert st.all_op and len(st.device_states) == 2
            assert c.protocol == autd.Protocol.NEW and c.link_kind == autd.LinkKind.EMULATOR
            assert c.device_resets(1) == 0
            assert [s.state for s in c.device_statuses()] == [autd.ClientDeviceState.READY] * 2
            assert "cycle_ns" in c.diagnostics()
            assert len(await c.read_fpga_state()) == 2 and await c.read_error_detail() == [0, 0]
            assert (await c.check_state()).all_op

    run(main)


def test_awaiting_a_request_after_close(geometry: autd.Geometry) -> None:
    """A sync Request awaited after close still gives its result (or ClosedError), with or without a
    completer thread before: never a hang."""

    async def main(start_completer: bool) -> None:
        c = autd.Client.open(geometry, autd.EmulatorLinkOption())
        if start_completer:
            await c.send(autd.Null())
        done = c.send(autd.Null())
        time.sleep(0.05)  # completed before the close
        c.close()
        r = await asyncio.wait_for(done, 10)
        assert r.all_executed

    for start in (False, True):
        asyncio.run(main(start))
