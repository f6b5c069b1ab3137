"""The reference Python binding's side of the perftest comparison (bindings/python/README.md,
"Performance"): PyPI ``autd3`` 0.9.0 + ``autd3-link-echocat`` 0.9.0 driven the way
``python -m libautd3.perftest`` and ``autd3-perftest`` drive libautd3, so the three are measured
alike against the same emulated chain (autd3-emu in a private namespace):

    stop-and-wait  per sample: t0; await send_checked(frame); rtt = now - t0
    streaming      send while fewer than --inflight are pending; when the window is full (or all
                   are sent) await the OLDEST and record rtt = now - its send time; drain at the end

The frame: the reference's Python API has no XorHash (the perftest command of libautd3), so the
largest payload it can build from plain values is used, SetPulseWidthTable with its default table
(256 x u16 = 512 bytes of payload, against XorHash's 624; on the wire every frame is the same
626 bytes per device). ``--frame nop`` sends an empty Nop instead.

Reported as the other two: cmd/s (successes over the whole elapsed time), latency of the successful
samples, and the CPU time of the whole Python process over the run (the reference's bus thread runs
inside it, as libautd3's does inside ours), from time.process_time().

    tools/netns/autd3-netns --devices 2 --build build -- build/.venv/bin/python \\
        bindings/python/tools/ref_perftest.py --interface @MASTER@ --devices 2 --count 5000 --mode streaming
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
from typing import Any, Optional


def _dur(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.3f} us"


def _rank(n: int, p: int) -> int:  # the same rank rule as libautd3.perftest and autd3-perftest
    return min(max((p * n + 99) // 100 - 1, 0), n - 1)


async def run(a: argparse.Namespace) -> dict[str, Any]:
    import autd3
    import autd3_link_echocat
    from autd3 import commands

    geometry = autd3.geometry.Geometry(
        [autd3.geometry.Autd3([192.0 * i, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]) for i in range(a.devices)])
    streaming = a.mode == "streaming"
    cfg = autd3.ClientConfig(max_inflight=a.inflight if streaming else 1, timeout_cycles=a.timeout_cycles)
    # the bus cycle of the other two (their default 1 ms; the reference link's own default differs)
    link = autd3_link_echocat.EchocatLinkOption(a.interface, sync0_period=autd3.Duration.from_micros(a.cycle_us))
    client = await autd3.Client.open(geometry, link, cfg)
    b = client.datagram_builder()
    if a.frame == "pwt":
        b.push(commands.SetPulseWidthTable(commands.SetPulseWidthTable.default_table()))
    else:
        b.push(commands.Nop())
    frames = b.build()
    assert len(frames) == 1, f"{a.frame}: {len(frames)} frames, expected one"
    frame = frames[0]
    ok: list[int] = []
    failed = 0
    now = time.perf_counter_ns
    cpu0 = time.process_time_ns()
    start = now()
    if not streaming:
        for _ in range(a.count):
            t0 = now()
            try:
                await client.send_checked(frame)
                ok.append(now() - t0)
            except Exception as e:  # noqa: BLE001 - counted, as the perftests count failures
                failed += 1
                print(f"send_checked: {e}", file=sys.stderr)
                if failed > 10:
                    break
    else:
        win: collections.deque[tuple[Any, int]] = collections.deque()
        issued = 0
        while issued < a.count or win:
            if issued < a.count and len(win) < a.inflight:
                win.append((client.send(frame), now()))
                issued += 1
                continue
            fut, t0 = win.popleft()
            try:
                await fut
                ok.append(now() - t0)
            except Exception as e:  # noqa: BLE001
                failed += 1
                print(f"send: {e}", file=sys.stderr)
    elapsed = now() - start
    cpu = time.process_time_ns() - cpu0
    closing: Optional[Any] = client.close()
    if asyncio.iscoroutine(closing) or isinstance(closing, asyncio.Future):
        await closing
    body = sorted(ok[min(a.warmup, len(ok)):])
    lat = {k: 0 for k in ("mean", "p50", "p95", "p99", "min", "max")}
    if body:
        lat = {"mean": sum(body) // len(body), "p50": body[_rank(len(body), 50)], "p95": body[_rank(len(body), 95)],
               "p99": body[_rank(len(body), 99)], "min": body[0], "max": body[-1]}
    return {"binding": "autd3 0.9.0 + autd3-link-echocat 0.9.0", "mode": a.mode, "frame": a.frame,
            "cycle_us": a.cycle_us, "devices": a.devices, "elapsed_ns": elapsed, "success": len(ok), "failed": failed,
            "cmd_per_sec": len(ok) / (elapsed / 1e9) if elapsed else 0.0, "latency_ns": lat,
            "process_cpu_percent": cpu / elapsed * 100 if elapsed else 0.0}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--interface", required=True, help="the master-side interface (@MASTER@ under autd3-netns)")
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--mode", choices=["stop-and-wait", "streaming"], default="stop-and-wait")
    p.add_argument("--inflight", type=int, default=127)
    p.add_argument("--cycle-us", type=int, default=1000, help="bus cycle (sync0 period), as the other perftests")
    p.add_argument("--timeout-cycles", type=int, default=10)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--frame", choices=["pwt", "nop"], default="pwt")
    p.add_argument("--json", default=None, help="write the summary as JSON")
    a = p.parse_args()
    try:
        import autd3  # noqa: F401
        import autd3_link_echocat  # noqa: F401
    except ImportError as e:
        print(f"ref_perftest: {e}: install autd3==0.9.0 autd3-link-echocat==0.9.0 (scripts/setup-deps.sh puts "
              "them into build/.venv)", file=sys.stderr)
        return 2
    r = asyncio.run(run(a))
    print("=== reference perftest summary ===")
    print(f"binding         : {r['binding']} ({r['frame']} frames, {r['mode']})")
    print(f"elapsed         : {_dur(r['elapsed_ns'])}")
    print(f"  success       : {r['success']}")
    print(f"  failed        : {r['failed']}")
    print(f"  cmd / sec     : {r['cmd_per_sec']:12.2f}")
    for k in ("mean", "p50", "p95", "p99", "min", "max"):
        print(f"  {k:<14}: {_dur(r['latency_ns'][k])}")
    print(f"python process  : {r['process_cpu_percent']:.2f} % of one core (bus thread included)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=2)
    return 0 if r["failed"] == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
