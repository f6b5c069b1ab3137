"""SOEM's slaveinfo sample against `autd3 scan` / `autd3 sii` on the same chain.

Run inside tools/netns/autd3-netns (AUTD3_TEST_IFNAME = the master-side veth, a line of N devices):
  slaveinfo_crosscheck.py AUTD3_CLI SLAVEINFO N
1. `slaveinfo IF -map` (SOEM v2.0.0 samples/slaveinfo/slaveinfo.c): SOEM configures the chain (station
   addresses, SyncManagers and FMMUs, DC delays, SAFE-OP) and prints per slave what it found and set, and
   the PDO map from the SII;
2. `autd3 scan --json` on the chain as SOEM left it: station address, identity, AL state, DC support and
   the delay SOEM wrote (0x0928), the active ports and the DC parent port (topology), the SyncManager and
   FMMU registers SOEM programmed;
3. `autd3 sii --json` per device: the SII's SyncManager category (SOEM's SM A/L/F), FMMU functions,
   mailbox sizes and protocols, general category (CoE..SoE details, E-bus current, "not LRW"), and the
   PDO categories (SOEM's input/output bit sizes and its PDO map, entry by entry).
Exit 0 = pass, 1 = a check failed (every mismatch on stderr).
"""
import json
import os
import re
import subprocess
import sys

CLI, SLAVEINFO, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
IF = os.environ["AUTD3_TEST_IFNAME"]
bad = []


def check(what, got, want):
    if got != want:
        bad.append("%s: autd3 says %r, slaveinfo %r" % (what, got, want))


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        print("FAIL: autd3 %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr), file=sys.stderr)
        sys.exit(1)
    return json.loads(r.stdout)


def parse_slaveinfo(text):
    """Per slave (1-based in slaveinfo, 0-based here): a dict of its lines, its SMs, FMMUs and PDO map."""
    slaves = []
    cur = None
    pdo = None
    for line in text.splitlines():
        m = re.match(r"^Slave:(\d+)$", line)
        if m:
            cur = {"sm": {}, "fmmu": {}, "pdos": []}
            slaves.append(cur)
            pdo = None
            continue
        if cur is None:
            continue
        s = line.strip()
        for key, rx in (("name", r"^Name:(.*)$"), ("obits", r"^Output size: (\d+)bits$"), ("ibits", r"^Input size: (\d+)bits$"),
                        ("state", r"^State: (\d+)$"), ("delay", r"^Delay: (\d+)\[ns\]$"), ("hasdc", r"^Has DC: (\d+)$"),
                        ("parentport", r"^DCParentport:(\d+)$"), ("ebus", r"^Ebus current: (\d+)\[mA\]$"),
                        ("blocklrw", r"^only LRD/LWR:(\d+)$")):
            m = re.match(rx, s)
            if m:
                cur[key] = m.group(1) if key == "name" else int(m.group(1))
        m = re.match(r"^Activeports:(\d)\.(\d)\.(\d)\.(\d)$", s)
        if m:
            cur["active"] = [int(g) for g in m.groups()]
        m = re.match(r"^Configured address: ([0-9a-f]+)$", s)
        if m:
            cur["station"] = int(m.group(1), 16)
        m = re.match(r"^Man: ([0-9a-f]+) ID: ([0-9a-f]+) Rev: ([0-9a-f]+)$", s)
        if m:
            cur["identity"] = tuple(int(g, 16) for g in m.groups())
        m = re.match(r"^SM(\d) A:([0-9a-f]+) L:\s*(\d+) F:([0-9a-f]+) Type:(\d+)$", s)
        if m:
            cur["sm"][int(m.group(1))] = (int(m.group(2), 16), int(m.group(3)), int(m.group(4), 16), int(m.group(5)))
        m = re.match(r"^FMMU(\d) Ls:([0-9a-f]+) Ll:\s*(\d+) Lsb:(\d+) Leb:(\d+) Ps:([0-9a-f]+) Psb:(\d+) Ty:([0-9a-f]+) "
                     r"Act:([0-9a-f]+)$", s)
        if m:
            g = m.groups()
            cur["fmmu"][int(g[0])] = (int(g[1], 16), int(g[2]), int(g[3]), int(g[4]), int(g[5], 16), int(g[6]),
                                      int(g[7], 16), int(g[8], 16))
        m = re.match(r"^FMMUfunc 0:(\d+) 1:(\d+) 2:(\d+) 3:(\d+)$", s)
        if m:
            cur["fmmufunc"] = [int(g) for g in m.groups()]
        m = re.match(r"^MBX length wr: (\d+) rd: (\d+) MBX protocols : ([0-9a-f]+)$", s)
        if m:
            cur["mbx"] = (int(m.group(1)), int(m.group(2)), int(m.group(3), 16))
        m = re.match(r"^CoE details: ([0-9a-f]+) FoE details: ([0-9a-f]+) EoE details: ([0-9a-f]+) SoE details: ([0-9a-f]+)$", s)
        if m:
            cur["details"] = tuple(int(g, 16) for g in m.groups())
        m = re.match(r"^SM(\d+) (RXPDO|TXPDO) 0x([0-9A-Fa-f]+) (.*)$", s)
        if m:
            pdo = {"sm": int(m.group(1)), "dir": m.group(2), "index": int(m.group(3), 16), "name": m.group(4).strip(),
                   "entries": []}
            cur["pdos"].append(pdo)
        m = re.match(r"^\[0x([0-9A-Fa-f]+)\.(\d)\] 0x([0-9A-Fa-f]+):0x([0-9A-Fa-f]+) 0x([0-9A-Fa-f]+)", s)
        if m and pdo is not None:
            pdo["entries"].append((int(m.group(3), 16), int(m.group(4), 16), int(m.group(5), 16)))
    return slaves


r = subprocess.run([SLAVEINFO, IF, "-map"], capture_output=True, text=True, timeout=120)
print(r.stdout[-3000:])
if r.returncode != 0 or "End slaveinfo" not in r.stdout:
    print("FAIL: slaveinfo exited %d: %s" % (r.returncode, r.stderr), file=sys.stderr)
    sys.exit(1)
si = parse_slaveinfo(r.stdout)
if len(si) != N:
    print("FAIL: slaveinfo lists %d slaves, expected %d" % (len(si), N), file=sys.stderr)
    sys.exit(1)

scan = cli("scan", "--interface", IF, "--json")
check("device count", scan["count"], N)
STATE = {"INIT": 1, "PRE-OP": 2, "BOOT": 3, "SAFE-OP": 4, "OP": 8}
FMMU_FUNC = {"unused": 0, "outputs": 1, "inputs": 2, "mailbox state": 3}
for k, (s, d) in enumerate(zip(si, scan["devices"])):
    p = "device %d " % k
    check(p + "station address", d["station"], s["station"])
    check(p + "identity", (d["vendor"], d["product"], d["revision"]), s["identity"])
    check(p + "name", d["name"], s["name"])
    check(p + "AL state", STATE.get(d["al"]["state"], 0) | (0x10 if d["al"]["error"] else 0), s["state"])
    check(p + "has DC", int(d["esc"]["dc"]), s["hasdc"])
    check(p + "DC delay (0x0928)", d["dc"]["delay_ns"] if d["dc"] else 0, s["delay"])
    # SOEM: a port is active when its loop is open and communication established (DL status 0x0110)
    check(p + "active ports", [int(q["communication"] and not q["loop_closed"]) for q in d["ports"]], s["active"])
    if s["hasdc"]:
        # a line: the parent's port that leads here is the first active one after port 0 in the ESC's
        # processing order 0 -> 3 -> 1 -> 2 (ETG.1000.4); the first device's parent is the master (0)
        if k == 0:
            want = 0
        else:
            prev = scan["devices"][k - 1]["ports"]
            want = next((q for q in (3, 1, 2) if prev[q]["communication"] and not prev[q]["loop_closed"]), -1)
        check(p + "DC parent port (from the ports' status)", want, s["parentport"])
    for i, (a, length, flags, typ) in sorted(s["sm"].items()):
        if typ in (3, 4):  # the process-data SyncManagers SOEM programmed (SM0/1 only with a mailbox)
            reg = d["sm"][i]
            check(p + "SM%d register (start, length, control|status|activate|pdi)" % i,
                  (reg["start"], reg["length"], reg["control"] | reg["status"] << 8 | reg["activate"] << 16 | reg["pdi_control"] << 24),
                  (a, length, flags))
    for i, f in sorted(s["fmmu"].items()):
        reg = d["fmmu"][i]
        check(p + "FMMU%d register" % i, (reg["logical_start"], reg["length"], reg["logical_start_bit"], reg["logical_end_bit"],
                                          reg["physical_start"], reg["physical_start_bit"], reg["type"], reg["activate"]), f)

    sii = cli("sii", "--interface", IF, "--position", str(k), "--json")
    for i, (a, length, flags, typ) in sorted(s["sm"].items()):  # SOEM's SM[] is the SII SyncManager category
        e = sii["sm"][i]
        check(p + "SII SM%d (start, length, control + enable << 16)" % i, (e["start"], e["length"], e["control"] | e["enable"] << 16),
              (a, length, flags))
    check(p + "SII FMMU functions", [FMMU_FUNC.get(f, -1) for f in sii["fmmu"]][:4] + [0] * (4 - len(sii["fmmu"][:4])),
          s["fmmufunc"])
    h, g = sii["header"], sii["general"]
    check(p + "SII mailbox (rx size, tx size, protocols)", (h["mailbox_rx_size"], h["mailbox_tx_size"], h["mailbox_protocols"]),
          s["mbx"])
    check(p + "SII general CoE/FoE/EoE/SoE details", (g["coe_details"], g["foe_details"], g["eoe_details"], g["soe_channels"]),
          s["details"])
    check(p + "SII general E-bus current", g["current_on_ebus_ma"], s["ebus"])
    check(p + "SII general 'not LRW'", (g["flags"] >> 1) & 1, s["blocklrw"])
    check(p + "output bits (RxPDO)", sum(x["bits"] for x in sii["rxpdo"]), s["obits"])
    check(p + "input bits (TxPDO)", sum(x["bits"] for x in sii["txpdo"]), s["ibits"])
    mine = [{"sm": x["sm"], "dir": d_, "index": x["index"], "name": x["name"],
             "entries": [(e["index"], e["subindex"], e["bits"]) for e in x["entries"]]}
            for d_, key in (("RXPDO", "rxpdo"), ("TXPDO", "txpdo")) for x in sii[key]]
    check(p + "PDO map (SM, direction, index, name, entries)", mine, s["pdos"])

if bad:
    for b in bad:
        print("FAIL: " + b, file=sys.stderr)
    sys.exit(1)
print("ok: scan and sii agree with slaveinfo on %d devices" % N)
