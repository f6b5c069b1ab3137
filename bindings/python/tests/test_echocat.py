"""echocat (raw Ethernet EtherCAT) against autd3-emu in a private network namespace
(tools/netns/autd3-netns sets AUTD3_TEST_IFNAME): the same API as on the in-process emulator."""

from __future__ import annotations

import asyncio
import os

import pytest

import libautd3 as autd
from libautd3 import aio

IFNAME = os.environ.get("AUTD3_TEST_IFNAME")
pytestmark = pytest.mark.skipif(not IFNAME, reason="needs autd3-netns (AUTD3_TEST_IFNAME)")


def test_open_send_read_close() -> None:
    g = autd.Geometry.row(2)
    with autd.Client.open(g, autd.EchoCATLinkOption(interface=IFNAME)) as c:
        assert c.num_devices == 2 and c.link_kind == autd.LinkKind.ECHOCAT
        assert len(c.read_firmware_version()) == 2
        assert c.check_state().all_op
        c.send_checked((autd.Silencer(), autd.Sine(150), autd.Focus(g.center + [0, 0, 150])))
        reqs = [c.send(autd.XorHash()) for _ in range(200)]
        assert all(r.wait().all_executed for r in reqs)
        assert c.stats().failed == 0
        with pytest.raises(TypeError, match="not the in-process emulator"):
            c.emulator


def test_asyncio_over_echocat() -> None:
    async def main() -> None:
        async with await aio.Client.open(autd.Geometry.row(2), autd.EchoCATLinkOption(interface=IFNAME)) as c:
            res = await asyncio.gather(*(c.send(autd.XorHash()) for _ in range(100)))
            assert all(r.all_executed for r in res)
            await c.send_checked(autd.Null())

    asyncio.run(main())


def test_wrong_device_count_is_an_error() -> None:
    with pytest.raises(autd.DeviceCountMismatchError) as ei:
        autd.Client.open(autd.Geometry.row(3), autd.EchoCATLinkOption(interface=IFNAME))
    assert ei.value.detail
