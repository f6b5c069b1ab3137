"""Interop peer: the published AUTD3 Python client (PyPI autd3 + autd3-link-remote) against OUR
autd3-remote-server, for either ARMT version the published packages speak. Exit 0 = success,
77 = the installed package cannot be used (reason printed), anything else = failure.

usage: armt_peer.py v3 session HOST:PORT DEVICES   autd3-link-remote 0.2.0 (ARMT v3, build/.venv-armt3)
       armt_peer.py v7 session HOST:PORT DEVICES   autd3-link-remote 0.9.0 (ARMT v7, build/.venv)
       armt_peer.py v7 discover INSTANCE           its DNS-SD discovery finds our advertised server
       armt_peer.py v3|v7 bench HOST:PORT DEVICES COUNT   COUNT frames stop-and-wait (scripts/bench-appliance.sh)
A session is: open, firmware info, 20 frames, FPGA state, close. A bench run is: open, COUNT Nop frames each
sent when the previous one completed (send_checked), close; it prints cmd / sec and the latency's mean, p50, p99
in autd3-perftest's format.
"""
import asyncio
import sys
import time
from importlib.metadata import PackageNotFoundError, version


def skip(reason: str) -> None:
    print(f"SKIPPED: {reason}", file=sys.stderr)
    sys.exit(77)


armt = sys.argv[1]
try:
    ver = version("autd3-link-remote")
except PackageNotFoundError:
    skip(f"autd3-link-remote is not installed for {sys.executable}")
major, minor = (int(x) for x in ver.split(".")[:2])
# PyPI autd3-link-remote 0.2.0 bundles crates.io autd3-rs-link-remote 0.1-0.4 (ARMT v3);
# 0.8.0 and 0.9.0 speak ARMT v7.
if armt == "v3" and (major, minor) >= (0, 5):
    skip(f"{sys.executable} has autd3-link-remote {ver}, which speaks ARMT v7; the ARMT v3 client is "
         "autd3-link-remote==0.2.0 (with autd3==0.2.0, autd3-core==0.2.0), e.g. in build/.venv-armt3")
if armt == "v7" and (major, minor) < (0, 8):
    skip(f"{sys.executable} has autd3-link-remote {ver} (ARMT v3); the v7 client is autd3-link-remote==0.9.0 "
         "(with autd3==0.9.0, autd3-core==0.9.0), e.g. in build/.venv")
if armt not in ("v3", "v7"):
    sys.exit(f"unknown ARMT version {armt}")
try:
    import autd3
    import autd3_link_remote
except Exception as e:  # noqa: BLE001 - any import problem means the peer is unavailable
    skip(f"cannot import autd3 / autd3_link_remote: {e}")


async def session(addr: str, n: int) -> None:
    client = await open_client(addr, n)
    assert client.num_devices() == n, client.num_devices()
    versions = await asyncio.wait_for(client.read_firmware_version(), 10)
    print("firmware:", versions)
    assert len(versions) == n
    for _ in range(20):
        builder = client.datagram_builder()
        builder.push(autd3.commands.Nop())
        for frame in builder.build():
            await asyncio.wait_for(client.send_checked(frame), 10)
    print("fpga state:", await asyncio.wait_for(client.read_fpga_state(), 10))
    await client.close()
    print(f"ok: autd3-link-remote {ver} exchanged frames with {n} device(s) through {addr}")


async def open_client(addr: str, n: int):
    geometry = autd3.geometry.Geometry(
        [autd3.geometry.Autd3([192.0 * i, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]) for i in range(n)]
    )
    if armt == "v3":  # 0.2.0's option takes its own timeout; 0.9.0's has none
        link = autd3_link_remote.RemoteLinkOption(addr, timeout=autd3.Duration.from_millis(5000))
    else:
        link = autd3_link_remote.RemoteLinkOption(addr)
    return await asyncio.wait_for(autd3.Client.open(geometry, link, autd3.ClientConfig()), 30)


async def bench(addr: str, n: int, count: int) -> None:
    client = await open_client(addr, n)
    lat = []
    t0 = time.perf_counter()
    for _ in range(count):
        builder = client.datagram_builder()
        builder.push(autd3.commands.Nop())
        for frame in builder.build():
            t = time.perf_counter()
            await asyncio.wait_for(client.send_checked(frame), 10)
            lat.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - t0
    await client.close()
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000.0  # noqa: E731
    print(f"  success       : {len(lat)}")
    print(f"  cmd / sec     : {len(lat) / elapsed:12.2f}")
    print(f"  mean          : {sum(lat) / len(lat) * 1000.0:.3f} ms")
    print(f"  p50           : {q(0.50):.3f} ms")
    print(f"  p99           : {q(0.99):.3f} ms")


def discover(instance: str) -> None:
    found = autd3_link_remote.RemoteLinkOption.discover(timeout=autd3.Duration.from_millis(3000), instance=instance)
    print(f"ok: autd3-link-remote {ver} discovered {instance} at {found.addr}")


if sys.argv[2] == "session":
    asyncio.run(session(sys.argv[3], int(sys.argv[4])))
elif sys.argv[2] == "bench":
    asyncio.run(bench(sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
elif sys.argv[2] == "discover":
    discover(sys.argv[3])
else:
    sys.exit(f"unknown mode {sys.argv[2]}")
