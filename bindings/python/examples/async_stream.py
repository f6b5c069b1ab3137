"""asyncio, as the reference binding: await open, stream frames as futures, await send_checked."""

from __future__ import annotations

import asyncio

import libautd3 as autd
from libautd3 import aio


async def main() -> None:
    geometry = autd.Geometry.row(2)
    async with await aio.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig()) as client:
        await client.send_checked(autd.Silencer())
        futures = [client.send(autd.Focus((x, 70.0, 150.0))) for x in range(0, 300, 10)]
        responses = await asyncio.gather(*futures)
        print(sum(r.all_executed for r in responses), "of", len(responses), "frames executed")
        stats: autd.ClientStats = client.stats()
        print("completed", stats.completed, "failed", stats.failed)


if __name__ == "__main__":
    asyncio.run(main())
