"""Client peer: the previous SDK generation's published Python binding drives our emulator in v12 mode.

  pyautd3_peer.py TWINCAT_EMU

PyPI pyautd3 36.0.2 (venv build/.venv-pyautd3, made by scripts/setup-deps.sh) opens
autd3-twincat-emu --firmware v12 --legacy-image through its RemoteTwinCAT link (ADS over TCP 48898,
Write IG 0x03040030 / IO 0x81000000, Read 0x80000000), reads the firmware versions (must be
v12.1.0, the emulator bit set), then sends its own datagrams (Silencer, a Sine modulation with a
Focus gain, Null, ReadsFPGAState) without error, and reads the FPGA state. RemoteTwinCAT always
connects to port 48898, so the scenario re-runs itself inside a private network namespace
(`unshare -rn`). pyautd3's bundled AdsLib segfaults when it logs (close, timeouts), so the script
prints every check and ends with os._exit(0) after the last one; the test is judged by exit status
and output. A missing peer exits 77 (skipped) with the reason.
"""

import ctypes
import os
import shutil
import signal
import subprocess
import sys

SKIP = 77


def skip(reason):
    print(f"SKIPPED: {reason}", flush=True)
    sys.exit(SKIP)


def in_netns():
    if os.environ.get("AUTD3_IN_NETNS") == "1":
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        skip("unshare or ip (util-linux, iproute2) not installed: cannot make a private network namespace")
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        skip("unshare -rn refused here")
    env = dict(os.environ, AUTD3_IN_NETNS="1")
    cmd = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable] + sys.argv
    sys.exit(subprocess.call(cmd, env=env))


def check(cond, what):
    print(("ok: " if cond else "FAILED: ") + what, flush=True)
    if not cond:
        os._exit(1)


def main():
    try:
        import numpy as np
        import pyautd3
        from pyautd3 import AUTD3, Controller, Focus, FocusOption, Hz, Null, ReadsFPGAState, Silencer, Sine, SineOption
        from pyautd3.link.twincat import RemoteTwinCAT, RemoteTwinCATOption
    except Exception as e:  # noqa: BLE001
        skip(f"pyautd3 36 cannot be imported: {e}")
    in_netns()
    emu = sys.argv[1]
    p = subprocess.Popen([emu, "--devices", "2", "--listen", "127.0.0.1:48898", "--firmware", "v12", "--legacy-image"],
                         stdout=subprocess.PIPE, preexec_fn=lambda: ctypes.CDLL(None).prctl(1, signal.SIGTERM))
    line = p.stdout.readline().decode()
    check(line.startswith("port "), f"autd3-twincat-emu --firmware v12 started ({line.strip()})")
    print(f"pyautd3 {getattr(pyautd3, '__version__', '36.x')}", flush=True)
    autd = Controller.open([AUTD3(), AUTD3(pos=[192.0, 0.0, 0.0])],
                           RemoteTwinCAT("127.0.0.1.1.1", RemoteTwinCATOption(server_ip="127.0.0.1")))
    check(True, "Controller.open (Nop, Clear + Synchronize) through RemoteTwinCAT")
    infos = [str(i) for i in autd.firmware_version()]
    for i in infos:
        print(f"  {i}", flush=True)
    check(len(infos) == 2 and all("v12.1.0" in i for i in infos), "firmware_version: every device v12.1.0")
    autd.send(Silencer())
    check(True, "send(Silencer)")
    center = autd.center() + np.array([0.0, 0.0, 150.0])
    autd.send((Sine(freq=150 * Hz, option=SineOption()), Focus(pos=center, option=FocusOption())))
    check(True, "send((Sine 150 Hz, Focus)) (modulation + gain in two slots)")
    autd.send(ReadsFPGAState(lambda _dev: True))
    check(True, "send(ReadsFPGAState)")
    st = autd.fpga_state()
    check(len(st) == 2 and all(s is not None for s in st), f"fpga_state: {st}")
    autd.send(Null())
    check(True, "send(Null)")
    print("ok: all checks passed; exiting without close (AdsLib logging pitfall)", flush=True)
    # Not p.terminate() first: the emulator closing the connection makes AdsLib log (and crash)
    # before _exit runs. The emulator gets SIGTERM when we are gone (PR_SET_PDEATHSIG).
    os._exit(0)


if __name__ == "__main__":
    main()
