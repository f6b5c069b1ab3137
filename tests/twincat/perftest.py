"""perftest through the TwinCAT link against the emulated TwinCAT runtime (short run).

  perftest.py EMU PERFTEST MODE [extra perftest args]

Starts autd3-twincat-emu on a free loopback port, runs autd3-perftest with
--link twincat against it and checks that every send succeeded (no timing
assertion: the figures are printed for the benchmark note).
"""
import ctypes
import signal
import subprocess
import sys


def main():
    emu, perftest, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    count = "300" if mode == "stop-and-wait" else "1000"
    e = subprocess.Popen([emu, "--devices", "2", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         preexec_fn=lambda: ctypes.CDLL(None).prctl(1, signal.SIGTERM))
    try:
        line = e.stdout.readline().decode()
        if not line.startswith("port "):
            print(f"FAILED: emulator did not start: {line!r}")
            return 1
        port = line.split()[1]
        cmd = [perftest, "--link", "twincat", "--twincat-server", "127.0.0.1", "--twincat-port", port,
               "--ams-net-id", "127.0.0.1.1.1", "--devices", "2", "--count", count, "--mode", mode, *sys.argv[4:]]
        print(" ".join(cmd))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=80)
        print(out.stdout)
        print(out.stderr[-2000:])
        fields = {}
        for l in out.stdout.splitlines():
            if ":" in l:
                k, v = l.split(":", 1)
                fields.setdefault(k.strip(), v.strip())
        ok = out.returncode == 0 and fields.get("success") == count and fields.get("link errors") == "0" \
            and fields.get("timeouts") == "0" and "device notification" in out.stdout
        print("ok" if ok else "FAILED: not every send succeeded through the TwinCAT link")
        return 0 if ok else 1
    finally:
        e.terminate()
        e.wait(timeout=5)


if __name__ == "__main__":
    sys.exit(main())
