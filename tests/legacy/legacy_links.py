"""The legacy client (--protocol v12) through the real links against the emulators in v12 mode,
and the pyautd3 36 client peer. One scenario per call (tests/legacy/CMakeLists.txt):

  legacy_links.py echocat  NETNS BUILD     autd3-perftest --link echocat --protocol v12 vs autd3-emu --firmware v12 (veth, netns)
  legacy_links.py soem     NETNS BUILD LIBDIR   the same through the SOEM link (skips if libautd3-link-soem is not built)
  legacy_links.py twincat  TCEMU PERFTEST  autd3-perftest --link twincat --protocol v12 vs autd3-twincat-emu --firmware v12
  legacy_links.py auto-twincat TCEMU PERFTEST  --protocol auto finds v12 behind TwinCAT
  legacy_links.py pyautd3  TCEMU VENV_PY   pyautd3_peer.py in the pyautd3 36 venv (skips if the venv is missing)

No timing is asserted: every send must succeed. Exit 77 = skipped (reason printed).
"""
import ctypes
import os
import signal
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def summary_ok(out, count):
    fields = {}
    for line in out.stdout.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields.setdefault(k.strip(), v.strip())
    ok = out.returncode == 0 and fields.get("success") == str(count) and fields.get("link errors") == "0" \
        and fields.get("timeouts") == "0"
    print(out.stdout)
    print(out.stderr[-3000:])
    print("ok" if ok else "FAILED: not every send succeeded")
    return 0 if ok else 1


def ethercat(link, netns, build, libdir=None):
    if link == "soem" and (not libdir or libdir == "none"):
        skip("libautd3-link-soem.so not built (SOEM v2 not found or AUTD3_LINK_SOEM=OFF)")
    count = 300
    cmd = [netns, "--devices", "2", "--build", build, "--emu-args", "--firmware v12", "--",
           os.path.join(build, "tools/perftest/autd3-perftest"), "--link", link, "--interface", "@MASTER@",
           "--devices", "2", "--count", str(count), "--protocol", "v12"]
    print(" ".join(cmd))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=150,
                         env=dict(os.environ, LD_LIBRARY_PATH=libdir or build))
    if out.returncode == SKIP or "SKIPPED" in out.stdout + out.stderr[:200]:
        skip((out.stdout + out.stderr).strip()[:300])
    return summary_ok(out, count)


def start_tcemu(emu, *extra):
    e = subprocess.Popen([emu, "--devices", "2", "--listen", "127.0.0.1:0", "--firmware", "v12", *extra],
                         stdout=subprocess.PIPE, preexec_fn=lambda: ctypes.CDLL(None).prctl(1, signal.SIGTERM))
    line = e.stdout.readline().decode()
    if not line.startswith("port "):
        e.kill()
        raise RuntimeError(f"emulator did not start: {line!r}")
    return e, line.split()[1]


def twincat(emu, perftest, protocol):
    e, port = start_tcemu(emu)
    try:
        count = 300
        cmd = [perftest, "--link", "twincat", "--twincat-server", "127.0.0.1", "--twincat-port", port,
               "--ams-net-id", "127.0.0.1.1.1", "--devices", "2", "--count", str(count), "--protocol", protocol]
        print(" ".join(cmd))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=80)
        if "protocol: v12" not in out.stderr:
            print(out.stderr[-2000:])
            print("FAILED: the run did not use the v12 protocol")
            return 1
        return summary_ok(out, count)
    finally:
        e.terminate()
        e.wait(timeout=5)


def pyautd3(emu, venv_py):
    if not os.access(venv_py, os.X_OK):
        skip(f"{venv_py} missing: run scripts/setup-deps.sh (pyautd3 36.0.2 venv)")
    return subprocess.call([venv_py, os.path.join(HERE, "pyautd3_peer.py"), emu], timeout=120)


def main():
    what, args = sys.argv[1], sys.argv[2:]
    if what in ("echocat", "soem"):
        return ethercat(what, args[0], args[1], args[2] if len(args) > 2 else None)
    if what == "twincat":
        return twincat(args[0], args[1], "v12")
    if what == "auto-twincat":
        return twincat(args[0], args[1], "auto")
    if what == "pyautd3":
        return pyautd3(args[0], args[1])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
