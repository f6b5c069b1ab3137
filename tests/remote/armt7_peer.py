"""Interop peer: the published AUTD3 Python client (PyPI autd3 0.9.0 + autd3-link-remote 0.9.0,
ARMT v7) against OUR autd3-remote-server. Exit 0 = success, 77 = the installed package cannot be
used (reason printed), anything else = failure.

usage: armt7_peer.py session HOST:PORT DEVICES   full session: open, firmware info, frames, close
       armt7_peer.py discover INSTANCE            its DNS-SD discovery finds our advertised server
"""
import asyncio
import sys


def skip(reason: str) -> None:
    print(f"SKIPPED: {reason}", file=sys.stderr)
    sys.exit(77)


from importlib.metadata import PackageNotFoundError, version

try:
    ver = version("autd3-link-remote")
except PackageNotFoundError:
    skip(f"autd3-link-remote is not installed for {sys.executable}")
major, minor = (int(x) for x in ver.split(".")[:2])
# PyPI autd3-link-remote 0.8.0 and 0.9.0 speak ARMT v7 (0.2.0: v3, see armt3_peer.py).
if (major, minor) < (0, 8):
    skip(f"{sys.executable} has autd3-link-remote {ver} (ARMT v3); the v7 client is autd3-link-remote==0.9.0 "
         "(with autd3==0.9.0, autd3-core==0.9.0), e.g. in build/.venv")
try:
    import autd3
    import autd3_link_remote
except Exception as e:  # noqa: BLE001 - any import problem means the peer is unavailable
    skip(f"cannot import autd3 / autd3_link_remote: {e}")


async def session(addr: str, n: int) -> None:
    geometry = autd3.geometry.Geometry(
        [autd3.geometry.Autd3([192.0 * i, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]) for i in range(n)]
    )
    link = autd3_link_remote.RemoteLinkOption(addr)
    client = await asyncio.wait_for(autd3.Client.open(geometry, link, autd3.ClientConfig()), 30)
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


def discover(instance: str) -> None:
    found = autd3_link_remote.RemoteLinkOption.discover(timeout=autd3.Duration.from_millis(3000), instance=instance)
    print(f"ok: autd3-link-remote {ver} discovered {instance} at {found.addr}")


if sys.argv[1] == "session":
    asyncio.run(session(sys.argv[2], int(sys.argv[3])))
elif sys.argv[1] == "discover":
    discover(sys.argv[2])
else:
    sys.exit(f"unknown mode {sys.argv[1]}")
