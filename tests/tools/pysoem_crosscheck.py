"""pysoem (SOEM inside) against `autd3 scan` / `autd3 sii` on the same chain.

Run inside tools/netns/autd3-netns (AUTD3_TEST_IFNAME = the master-side veth):
  pysoem_crosscheck.py AUTD3_CLI N
1. `autd3 scan --json` and `autd3 sii --raw` for every device, before any
   master touched the chain;
2. pysoem's config_init on the same chain: the device count, and per device
   the name / vendor / product / revision SOEM read from the SII equal the
   scan's; every SII word SOEM reads (eeprom_read) equals the raw dump;
3. `autd3 scan --json` again: the station addresses SOEM assigned and the AL
   states SOEM reads are the ones the scan reports.
Exit 0 = pass, 1 = a check failed (message on stderr), 77 = pysoem missing.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import pysoem
except ImportError:
    print("SKIPPED: pysoem is not installed in this interpreter", file=sys.stderr)
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True)
    if r.returncode != 0:
        fail("autd3 %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


CLI, N = sys.argv[1], int(sys.argv[2])
IF = os.environ["AUTD3_TEST_IFNAME"]

scan = json.loads(cli("scan", "--interface", IF, "--json"))
if scan["count"] != N:
    fail("scan counted %d devices, expected %d" % (scan["count"], N))
raw = []
with tempfile.TemporaryDirectory() as d:
    for k in range(N):
        p = os.path.join(d, "sii%d.bin" % k)
        cli("sii", "--interface", IF, "--position", str(k), "--raw", p)
        raw.append(open(p, "rb").read())

m = pysoem.Master()
m.open(IF)
n = m.config_init()
if n != N:
    fail("pysoem found %d slaves, the scan %d" % (n, N))
for k, s in enumerate(m.slaves):
    dev = scan["devices"][k]
    got = (s.name, s.man, s.id, s.rev)
    want = (dev["name"], dev["vendor"], dev["product"], dev["revision"])
    if got != want:
        fail("device %d: pysoem reads %r, the scan %r" % (k, got, want))
    dec = json.loads(cli("sii", "--interface", IF, "--position", str(k), "--json"))
    if (dec["general"]["name"], dec["header"]["vendor"], dec["header"]["product"], dec["header"]["revision"]) != got:
        fail("device %d: the decoded SII %r differs from pysoem's %r" % (k, dec["general"], got))
    img = raw[k]
    for w in range(0, len(img) // 2, 2):
        b = bytes(s.eeprom_read(w))
        if b[: len(img) - 2 * w] != img[2 * w : 2 * w + 4]:
            fail("device %d SII word 0x%x: pysoem %s, autd3 sii %s" % (k, w, b.hex(), img[2 * w : 2 * w + 4].hex()))
m.read_state()
states = [s.state for s in m.slaves]
m.close()

scan = json.loads(cli("scan", "--interface", IF, "--json"))
names = {1: "INIT", 2: "PRE-OP", 3: "BOOT", 4: "SAFE-OP", 8: "OP"}
for k, dev in enumerate(scan["devices"]):
    if dev["station"] != 0x1001 + k:
        fail("device %d: station 0x%04x after SOEM's config, expected 0x%04x" % (k, dev["station"], 0x1001 + k))
    if dev["al"]["state"] != names.get(states[k] & 0x0F):
        fail("device %d: scan says %s, pysoem read state 0x%02x" % (k, dev["al"]["state"], states[k]))
print("pysoem cross-check: %d devices, identity, %d SII bytes each, stations and states agree" % (N, len(raw[0])))
