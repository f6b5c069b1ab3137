"""``python -m libautd3.perftest``: the perftest of tools/perftest, through this binding.

Same method and same report as ``autd3-perftest`` (tools/perftest/report.c, which follows the
reference SDK's perftest line for line): a broadcast XorHash frame sent over and over;
stop-and-wait (send_checked per sample) or streaming (keep ``--inflight`` requests pending, wait for
the oldest). It adds the CPU time of the whole Python process (bus thread included, as the
reference binding's bus runs inside its Python process too) and of the process without the bus
thread. With ``--link emulator`` the emulated devices run inside the process too and are counted:
compare CPU figures over echocat against autd3-emu (bindings/python/README.md, "Performance").
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from typing import Optional, Sequence

from . import (
    AUTD3Error,
    Client,
    ClientConfig,
    DeviceError,
    EchoCATLinkOption,
    EmulatorLinkOption,
    Geometry,
    LinkOption,
    Request,
    TimedOutError,
    TimingModel,
    XorHash,
)

OK, DEVICE, TIMEOUT, LINK = range(4)


def _dur(ns: int) -> str:
    if ns < 1000:
        return f"{ns} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.3f} us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def _rank(n: int, p: int) -> int:
    i = max((p * n + 99) // 100 - 1, 0)
    return min(i, n - 1)


def _classify(e: Optional[BaseException]) -> tuple[int, int]:
    if e is None:
        return OK, 0
    if isinstance(e, DeviceError):
        resp = getattr(e, "response", None)
        code = next((d.data for d in resp.devices if d.data), 0) if resp is not None else 0
        return DEVICE, code
    if isinstance(e, TimedOutError):
        return TIMEOUT, 0
    print(f"\nlink error: {e}", file=sys.stderr)
    return LINK, 0


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m libautd3.perftest", description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--count", type=int, help="number of sends")
    g.add_argument("--duration", type=float, help="run time in seconds")
    p.add_argument("--link", choices=["emulator", "echocat"], default="emulator")
    p.add_argument("--interface", default=None, help="echocat: the adapter")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--mode", choices=["stop-and-wait", "streaming"], default="stop-and-wait")
    p.add_argument("--inflight", type=int, default=127)
    p.add_argument("--cycle-us", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--data-len", type=int, default=620)
    p.add_argument("--sleep-ms", type=int, default=0)
    p.add_argument("--timeout-cycles", type=int, default=10)
    p.add_argument("--timing", default=None, help="emulator timing model (default, pessimistic, ideal, ...)")
    p.add_argument("--json", default=None, help="write the summary as JSON")
    a = p.parse_args(argv)
    if a.count is not None and a.count <= 0:
        p.error("--count must be > 0")
    if not 1 <= a.inflight <= 127:
        p.error("--inflight must be in 1..127")
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = _parse(argv)
    link: LinkOption
    if a.link == "emulator":
        timing = TimingModel.parse(a.timing) if a.timing else TimingModel.default()
        link = EmulatorLinkOption(cycle_ns=a.cycle_us * 1000, timing=timing)
    else:
        link = EchoCATLinkOption(interface=a.interface, sync0_period_ns=a.cycle_us * 1000)
    streaming = a.mode == "streaming"
    cfg = ClientConfig(max_inflight=a.inflight if streaming else 1, timeout_cycles=a.timeout_cycles)
    try:
        client = Client.open(Geometry.row(a.devices), link, cfg)
    except AUTD3Error as e:
        print(f"python -m libautd3.perftest: client open over {a.link} failed: {e}", file=sys.stderr)
        return 1
    with client:
        print(f"devices: {client.num_devices}", file=sys.stderr)
        for i, v in enumerate(client.read_firmware_version()):
            print(f"device[{i}] firmware version: {v}", file=sys.stderr)
        frame = XorHash(a.data_len, a.sleep_ms).frame()
        samples: list[tuple[int, int, int]] = []  # (rtt_ns, status, code)
        st0 = client.stats()
        cpu0 = time.process_time_ns()
        now = time.perf_counter_ns
        start = now()
        end = start + int(a.duration * 1e9) if a.duration is not None else None

        def more(issued: int) -> bool:
            return issued < a.count if end is None else now() < end

        fatal = False
        if not streaming:
            while not fatal and more(len(samples)):
                t0 = now()
                err: Optional[BaseException] = None
                try:
                    client.send_checked(frame)
                except AUTD3Error as e:
                    err = e
                rtt = now() - t0
                s, code = _classify(err)
                fatal = s == LINK
                samples.append((rtt, s, code))
        else:
            # The loop of tools/perftest: keep `inflight` requests pending, wait for the oldest. Written
            # flat (no helper call on the success path): what it measures is the binding, not this loop.
            win: collections.deque[tuple[Request, int]] = collections.deque()
            send, pop, push, record = client.send, win.popleft, win.append, samples.append
            inflight, issued = a.inflight, 0
            count = a.count if end is None else None
            while True:
                if not fatal and len(win) < inflight and (issued < count if count is not None else more(issued)):
                    t = now()
                    try:
                        push((send(frame), t))
                        issued += 1
                    except AUTD3Error as e:
                        record((now() - t, _classify(e)[0], 0))
                        fatal = True
                    continue
                if not win:
                    break
                req, t = pop()
                try:
                    req.wait().check()
                    record((now() - t, OK, 0))
                except AUTD3Error as e:
                    rtt = now() - t
                    s, code = _classify(e)
                    fatal = fatal or s == LINK
                    record((rtt, s, code))
        elapsed = now() - start
        cpu = time.process_time_ns() - cpu0
        st1 = client.stats()
        ls = client.link_stats()
        diag = client.diagnostics()

    body = samples[min(a.warmup, len(samples)):]
    ok = sorted(r for r, s, _ in body if s == OK)
    dev_codes = collections.Counter(c for _, s, c in body if s == DEVICE)
    timeouts = sum(1 for _, s, _ in body if s == TIMEOUT)
    link_errors = sum(1 for _, s, _ in body if s == LINK)
    secs = elapsed / 1e9
    cmd_s = len(ok) / secs if secs else 0.0
    lat = {k: 0 for k in ("mean", "p50", "p95", "p99", "min", "max")}
    if ok:
        lat = {"mean": sum(ok) // len(ok), "p50": ok[_rank(len(ok), 50)], "p95": ok[_rank(len(ok), 95)],
               "p99": ok[_rank(len(ok), 99)], "min": ok[0], "max": ok[-1]}
    total = len(ok) + sum(dev_codes.values()) + timeouts + link_errors
    out = sys.stdout
    out.write("=== perftest summary ===\n")
    out.write(f"elapsed         : {_dur(elapsed)}\n")
    out.write(f"total sends     : {total}\n")
    out.write(f"  success       : {len(ok)}\n")
    out.write(f"  timeouts      : {timeouts}\n")
    out.write(f"  link errors   : {link_errors}\n")
    if not dev_codes:
        out.write("  device errors : 0\n")
    else:
        out.write("  device errors :\n")
        for code in sorted(dev_codes):
            out.write(f"    code 0x{code:02x} : {dev_codes[code]}\n")
    out.write(f"  stale cycles  : {ls.stale_cycles}\n")
    out.write(f"  lost cycles   : {ls.lost_cycles}\n\n")
    out.write("throughput      :\n")
    out.write(f"  cmd / sec     : {cmd_s:12.2f}\n")
    out.write(f"  byte / sec    : {len(ok) * 626 / secs if secs else 0.0:12.2f}\n\n")
    out.write("latency (successful samples):\n")
    for k in ("mean", "p50", "p95", "p99", "min", "max"):
        out.write(f"  {k:<14}: {_dur(lat[k])}\n")
    cyc = a.cycle_us * 1e3
    out.write(f"\nlatency in cycles (cycle = {a.cycle_us} us):\n")
    for k in ("mean", "p50", "p99"):
        out.write(f"  {k:<14}: {lat[k] / cyc:.3f}\n")
    bus_cpu = st1.bus_cpu_ns - st0.bus_cpu_ns
    out.write("\nbus thread      :\n")
    out.write(f"  cpu           : {bus_cpu / elapsed * 100 if elapsed else 0:.2f} % of one core\n")
    out.write(f"  cycles        : {st1.bus_cycles - st0.bus_cycles}\n")
    out.write(f"  resyncs       : {st1.resyncs - st0.resyncs}\n")
    out.write(f"  resets        : {st1.resets - st0.resets}\n")
    out.write(f"  retransmits   : {st1.retransmits - st0.retransmits}\n")
    out.write("\npython process  :\n")
    out.write(f"  cpu           : {cpu / elapsed * 100 if elapsed else 0:.2f} % of one core (bus thread included)\n")
    out.write(f"  cpu w/o bus   : {(cpu - bus_cpu) / elapsed * 100 if elapsed else 0:.2f} % of one core\n")
    if diag:
        out.write(f"\nlink diagnostics ({a.link}):\n")
        for k, val in diag.items():
            out.write(f"  {k} : {val}\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"mode": a.mode, "link": a.link, "devices": a.devices, "elapsed_ns": elapsed, "success": len(ok),
                       "timeouts": timeouts, "link_errors": link_errors, "cmd_per_sec": cmd_s, "latency_ns": lat,
                       "process_cpu_percent": cpu / elapsed * 100 if elapsed else 0,
                       "bus_cpu_percent": bus_cpu / elapsed * 100 if elapsed else 0}, f, indent=2)
    return 3 if link_errors else 0


if __name__ == "__main__":
    sys.exit(main())
