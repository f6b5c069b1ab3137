"""Independent peers for the TwinCAT link and the emulated TwinCAT runtime.

Run by ctest (tests/twincat/CMakeLists.txt), one scenario per call:

  peers.py pyads-client  EMU            pyads (Beckhoff AdsLib inside) reads/writes our emulated runtime
  peers.py pyads-server  PROBE          our ADS client and link against pyads' AdsTestServer
  peers.py reference     EMU            the reference link (PyPI autd3-link-twincat, remote mode) drives our runtime
  peers.py tshark        EMU PROBE      tshark's AMS dissector decodes a capture of a link run: no malformed frame

Scenarios whose peer needs TCP port 48898 (pyads' AdsLib and the reference
crate always connect there) re-run themselves inside a private network
namespace (`unshare -rn`, no real root needed). A missing peer exits 77
(skipped) with the reason.
"""

import ctypes
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
IG = 0x03040030
NETID = "127.0.0.1.1.1"


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def in_netns():
    """Re-exec inside a fresh user+network namespace with lo up (once)."""
    if os.environ.get("AUTD3_IN_NETNS") == "1":
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        skip("unshare or ip (util-linux, iproute2) not installed: cannot make a private network namespace")
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        skip(f"unshare -rn refused here: {probe.stderr.decode().strip()}")
    env = dict(os.environ, AUTD3_IN_NETNS="1")
    cmd = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable] + sys.argv
    sys.exit(subprocess.call(cmd, env=env))


def _die_with_parent():
    libc = ctypes.CDLL(None)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: never outlive the test


def start_emu(emu, devices=2, port=48898, extra=()):
    p = subprocess.Popen([emu, "--devices", str(devices), "--listen", f"127.0.0.1:{port}", *extra],
                         stdout=subprocess.PIPE, preexec_fn=_die_with_parent)
    line = p.stdout.readline().decode()
    if not line.startswith("port "):
        p.kill()
        raise RuntimeError(f"emulator did not start: {line!r}")
    return p


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"ok: {what}")


def scenario_pyads_client(emu):
    try:
        import pyads
    except Exception as e:  # noqa: BLE001
        skip(f"pyads cannot be imported: {e}")
    in_netns()
    p = start_emu(emu, devices=2)
    try:
        pyads.open_port()
        pyads.set_local_address("127.0.0.2.1.1")
        pyads.add_route(NETID, "127.0.0.1")
        plc = pyads.Connection(NETID, 301, "127.0.0.1")
        plc.open()
        name, version = plc.read_device_info()
        check(name == "Task 1" and version.version == 3 and version.build == 4026, f"ReadDeviceInfo: {name} {version.version}.{version.revision}.{version.build}")
        check(plc.read_state() == (pyads.ADSSTATE_RUN, 0), "ReadState = Run")
        count = plc.read(IG, 0x80000000, pyads.PLCTYPE_UINT)
        check(count == 2, f"CfgSlaveCount at 0x80000000 = {count}")
        # Reset, then Nop with seq 0 to both devices; wait for ack 0 in the inputs.
        frame = bytearray(2 * 626)
        plc.write(IG, 0x81000000, bytes(frame), pyads.PLCTYPE_BYTE * len(frame))
        time.sleep(0.01)
        frame[1] = frame[626 + 1] = 0x04
        plc.write(IG, 0x81000000, bytes(frame), pyads.PLCTYPE_BYTE * len(frame))
        back = bytes(plc.read(IG, 0x81000000, pyads.PLCTYPE_BYTE * len(frame), return_ctypes=True))
        check(back == bytes(frame), "output image reads back what was written")
        rx = None
        for _ in range(200):
            rx = bytes(plc.read(IG, 0x80000002, pyads.PLCTYPE_BYTE * 4, return_ctypes=True))
            if rx == b"\x00\x00\x00\x00":
                break
            time.sleep(0.005)
        check(rx == b"\x00\x00\x00\x00", f"both devices ack seq 0 with data 0 (rx {rx.hex()})")
        states = plc.read(IG, 0x80000006, pyads.PLCTYPE_UINT * 2)
        check(list(states) == [8, 8], f"state words = OP ({list(states)})")
        for (ig, io, code, what) in [(0x4020, 0, 0x702, "unknown index group"), (IG, 0x12345678, 0x703, "unknown index offset"),
                                     (IG, 0x80000000, 0x705, "read past the input image")]:
            try:
                plc.read(ig, io, pyads.PLCTYPE_BYTE * 64)
                check(False, what)
            except pyads.ADSError as e:
                check(e.err_code == code, f"{what} -> ADS error {e.err_code:#06x}")
        try:
            plc.write(IG, 0x80000000, 1, pyads.PLCTYPE_UINT)
            check(False, "write to inputs")
        except pyads.ADSError as e:
            check(e.err_code == 0x704, f"write to the input image -> ADS error {e.err_code:#06x}")
        seen = []

        def cb(notification, data):
            seen.append(data)

        attr = pyads.NotificationAttrib(10, trans_mode=pyads.ADSTRANS_SERVERCYCLE, max_delay=0, cycle_time=1)
        handles = plc.add_device_notification((IG, 0x80000000), attr, cb)
        deadline = time.time() + 5
        while len(seen) < 5 and time.time() < deadline:
            time.sleep(0.01)
        plc.del_device_notification(*handles)
        check(len(seen) >= 5, f"server-cycle notifications received ({len(seen)})")
        plc.close()
        other = pyads.Connection(NETID, 851, "127.0.0.1")
        other.open()
        try:
            other.read_state()
            check(False, "port 851")
        except pyads.ADSError as e:
            check(e.err_code == 6, f"AMS port 851 (no PLC) -> error {e.err_code:#06x}")
        other.close()
    finally:
        stop(p)


def scenario_pyads_server(probe):
    try:
        from pyads.testserver import AdsTestServer, AdvancedHandler, PLCVariable
        import pyads.constants as c
    except Exception as e:  # noqa: BLE001
        skip(f"pyads.testserver cannot be imported: {e}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    handler = AdvancedHandler()
    n = 2
    # CfgSlaveCount, N x 2 rx bytes, N state words in OP (a running task's slaves: the link counts a device's
    # inputs valid only in OP)
    inputs = struct.pack("<H", n) + bytes(2 * n) + struct.pack(f"<{n}H", *([0x0008] * n))
    handler.add_variable(PLCVariable("inputs", inputs, c.ADST_UINT8, "BYTE", IG, 0x80000000))
    handler.add_variable(PLCVariable("outputs", bytes(626 * n), c.ADST_UINT8, "BYTE", IG, 0x81000000))
    server = AdsTestServer(handler=handler, ip_address="127.0.0.1", port=port, logging=False)
    server.start()
    time.sleep(0.3)
    try:
        out = subprocess.run([probe, "ads", "127.0.0.1", str(port), NETID], capture_output=True, text=True, timeout=60)
        print(out.stdout, out.stderr)
        lines = dict(l.split(" ", 1) for l in out.stdout.splitlines() if " " in l)
        check(out.returncode == 0, "ADS services against pyads' test server")
        check(lines.get("devinfo") == "TestServer 1.2.3", "ReadDeviceInfo parsed: name and version")
        check(lines.get("state") == "5 0", "ReadState parsed: Run")
        check(lines.get("readback") == "8 equal", "Write then Read round-trips the bytes")
        check(lines.get("count") == "2", "Read of 2 bytes")
        check("notification-handle" in lines and "notification-deleted" in out.stdout, "Add/DeleteDeviceNotification")
        check(lines.get("readwrite") == "4", "ReadWrite returns the 4 bytes asked for")
        # the link itself (synchronous-read path: this server sends no notification stream over the wire)
        out = subprocess.run([probe, "link", "127.0.0.1", str(port), NETID, str(n), "50", "--no-notification"],
                             capture_output=True, text=True, timeout=60)
        print(out.stdout, out.stderr)
        check(out.returncode == 0 and "valid 50" in out.stdout, "the TwinCAT link opens and cycles against pyads' server")
        out_var = handler.get_variable_by_indices(IG, 0x81000000).value
        check(len(out_var) == 626 * n and out_var[1] == 0x04, "the server holds the link's last N x 626-byte write")
    finally:
        server.stop()


def scenario_reference(emu):
    try:
        import asyncio
        import autd3
        from autd3.geometry import Autd3, Geometry
        from autd3_link_twincat import TwinCATLinkOption
    except Exception as e:  # noqa: BLE001
        skip(f"the reference binding cannot be imported ({type(e).__name__}: {e}); it needs autd3==0.9.0, "
             "autd3-core==0.9.0 and autd3-link-twincat==0.9.0 in one venv")
    in_netns()
    p = start_emu(emu, devices=2)
    try:
        geo = Geometry([Autd3([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]), Autd3([192.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0])])
        two = autd3.Duration.from_secs(2)
        link = TwinCATLinkOption.remote_with_timeouts("127.0.0.1", NETID, two, two, two)

        async def run():
            client = await autd3.Client.open(geo, link, autd3.ClientConfig())
            check(True, "reference client opened through the reference TwinCAT link (Reset, Clear, Synchronize acked)")
            versions = await client.read_firmware_version()
            check(len(versions) == 2 and all("0.9.0" in str(v) for v in versions), f"firmware versions read: {versions}")
            # 0.9.0 reads the FPGA function bits (opcode 0xE9) after the FPGA version; an
            # UnknownCmd there makes it report the FPGA version as unknown.
            check(all("unknown" not in str(v).lower() for v in versions), "FPGA version and function bits read without UnknownCmd")
            for _ in range(20):
                b = client.datagram_builder()
                b.push(autd3.commands.Clear())
                frames = b.build()
                await client.send_checked(frames if isinstance(frames, autd3.Frame) else frames[0])
            check(True, "20 checked Clear frames acked")
            details = await client.read_error_detail()
            check(list(details) == [0, 0], f"no device latched an error during the session (error detail {list(details)})")
            # close() silences the array with WritePatternFused (opcode 0x14) and checks the
            # acks: it raises on any device error (it used to get 0x01 unknown command).
            await client.close()
            check(True, "close() succeeded without a device error")

        asyncio.run(asyncio.wait_for(run(), 60))
    finally:
        stop(p)


def scenario_tshark(emu, probe):
    tshark = shutil.which("tshark")
    if tshark is None:
        skip("tshark is not installed (apt-get install -y tshark)")
    in_netns()
    p = start_emu(emu, devices=2)
    tmp = tempfile.mkdtemp(prefix="autd3-tshark-")
    cap = os.path.join(tmp, "ads.pcapng")
    t = subprocess.Popen([tshark, "-i", "lo", "-f", "tcp port 48898", "-w", cap, "-q"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
    try:
        # wait until the capture runs ("Capturing on 'Loopback: lo'")
        lines = []
        for _ in range(10):
            lines.append(t.stderr.readline().decode().strip())
            if "Capturing" in lines[-1] or t.poll() is not None:
                break
        if "Capturing" not in lines[-1]:
            skip(f"tshark cannot capture here: {' / '.join(lines)}")
        time.sleep(1.0)  # dumpcap announces before its filter is live
        out1 = subprocess.run([probe, "link", "127.0.0.1", "48898", NETID, "2", "200"], capture_output=True, text=True, timeout=60)
        out2 = subprocess.run([probe, "ads", "127.0.0.1", "48898", NETID], capture_output=True, text=True, timeout=60)
        print(out1.stdout, out2.stdout)
        check(out1.returncode == 0 and out2.returncode == 0, "link run and ADS services completed")
        time.sleep(0.5)
    finally:
        t.send_signal(signal.SIGINT)
        t.wait(timeout=10)
        stop(p)
    ams = subprocess.run([tshark, "-r", cap, "-Y", "ams", "-T", "fields", "-e", "ams.cmdid"], capture_output=True, text=True)
    cmds = [c for l in ams.stdout.split() for c in l.split(",") if c]
    bad = subprocess.run([tshark, "-r", cap, "-Y", "_ws.malformed || _ws.expert.severity >= \"error\""], capture_output=True, text=True)
    writes = subprocess.run([tshark, "-r", cap, "-Y", "ams.cmdid == 3 && ams.ads_indexgroup == 0x03040030 && ams.ads_indexoffset == 0x81000000 && ams.ads_cblength == 1252",
                             "-T", "fields", "-e", "frame.number"],
                            capture_output=True, text=True)
    shutil.rmtree(tmp, ignore_errors=True)
    kinds = sorted(set(cmds))
    # tshark's AMS dissector decodes the first AMS packet of each TCP segment
    # only; the emulator sends replies and notifications with separate send()s,
    # but the kernel may still merge some.
    check(len(cmds) > 300, f"tshark decoded {len(cmds)} AMS packets (command ids {kinds}, {cmds.count('8')} notifications)")
    check(all(k in kinds for k in ["1", "2", "3", "4", "6", "7", "8"]), "ReadDeviceInfo, Read, Write, ReadState, Add/DeleteDeviceNotification, DeviceNotification decoded")
    nwrites = len([l for l in writes.stdout.splitlines() if l.strip().isdigit()])
    check(nwrites >= 200, f"tshark decodes {nwrites} N x 626-byte Writes at IG 0x03040030 IO 0x81000000")
    check(bad.stdout.strip() == "", f"no malformed frame or error-level expert info: {bad.stdout.strip()[:500]!r}")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    what, args = sys.argv[1], sys.argv[2:]
    if what == "pyads-client":
        scenario_pyads_client(args[0])
    elif what == "pyads-server":
        scenario_pyads_server(args[0])
    elif what == "reference":
        scenario_reference(args[0])
    elif what == "tshark":
        scenario_tshark(args[0], args[1])
    else:
        print(f"unknown scenario {what}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
