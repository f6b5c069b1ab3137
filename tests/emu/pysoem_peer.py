"""pysoem (SOEM inside) as an independent EtherCAT master against autd3-emu.

Run inside tools/netns/autd3-netns (AUTD3_TEST_IFNAME = master-side veth):
  pysoem_peer.py N [CYCLES] [--faults] [--sdo] [--od]
Checks: N slaves named "AUTD" with vendor 0x8A9 / product 1 / revision 1,
626 output and 2 input bytes each, DC configured with SYNC0 1 ms, SAFE-OP and
OP reached, CYCLES process-data cycles with WKC 3 per device, and firmware
round trips (Reset, then Nop frames with increasing seq come back as acks).
With --faults (N >= 2, needs AUTD3_EMU_CONTROL): unplug the last device
(WKC drops to 3(N-1)), re-plug and recover it as SOEM's samples do (ack
SAFE-OP+ERR, request OP), power-cycle it (back in INIT, station address lost)
and recover it with ecx_recover_slave/ecx_reconfig_slave; WKC 3N again.
With --sdo (autd3-emu --mailbox): CoE reads of identity and PDO mapping
(expedited, complete access with segments) and the aborts for a missing
object / a write.
With --od (autd3-emu --mailbox): only the object dictionary, browsed through
SDO Information and read through SDO uploads (od_checks), then exit.
Exit 0 = pass, 1 = a check failed (message on stderr), 77 = pysoem missing.
"""
import os
import socket
import sys
import time

try:
    import pysoem
except ImportError:
    print("SKIPPED: pysoem is not installed in this interpreter", file=sys.stderr)
    sys.exit(77)

CMD_RESET, CMD_NOP = 0x00, 0x04

# No check may depend on how fast this host runs (CI machines stall for many ms):
# - every wait for a reply is bounded by RECV_TIMEOUT_US, a bound for a reply that
#   never comes, not an expectation (the emulator answers in microseconds, veth
#   loses nothing; a 2 ms timeout made a stalled cycle count as a wrong WKC);
# - state changes are polled up to STATE_LIMIT_S;
# - a master stalled longer than the SM watchdog (0x0420, 100 ms by default) drops
#   its devices to SAFE-OP+ERR 0x001B, as a real ESC does: with the watchdog on
#   (the --faults run) the cyclic loop recovers them as SOEM's samples do and says
#   so; with it off (autd3-emu --sm-watchdog-ms 0) any drop is a failure;
# - DC convergence is checked after the cyclic exchange, with up to SETTLE_CYCLES
#   more cycles if a stall just before its end let the clocks drift apart again.
RECV_TIMEOUT_US = 10_000_000
STATE_LIMIT_S = 30
SETTLE_CYCLES = 200
AL_CODE_SM_WATCHDOG = 0x001B


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def frame(seq, cmd):
    return bytes([seq, cmd]) + bytes(624)


def dc_diffs(m):
    """0x092C of every slave but the reference: sign-magnitude, bit 31 = negative."""
    out = []
    for s in m.slaves[1:]:
        v = int.from_bytes(s._fprd(0x092C, 4, RECV_TIMEOUT_US), "little")
        out.append(-(v & 0x7FFFFFFF) if v & 0x80000000 else v)
    return out


def emuctl(cmd):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(STATE_LIMIT_S)
        s.connect(os.environ["AUTD3_EMU_CONTROL"])
        s.sendall(cmd.encode() + b"\n")
        r = b""
        while not r.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            r += chunk
    r = r.decode().strip()
    if not r.startswith("ok"):
        fail("emulator control '%s': %s" % (cmd, r))
    return r


def cycle(m, k):
    """k process-data cycles; returns the list of WKCs."""
    w = []
    for _ in range(k):
        m.send_processdata()
        w.append(m.receive_processdata(RECV_TIMEOUT_US))
        time.sleep(0.001)
    return w


def recover(m, n, what, limit_s=STATE_LIMIT_S):
    """SOEM's recovery loop (samples/simple_test check thread) until all OP and WKC 3n."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        w = cycle(m, 5)
        m.read_state()
        if all(s.state == pysoem.OP_STATE for s in m.slaves) and w[-1] == 3 * n:
            return
        for i, s in enumerate(m.slaves):
            if s.state == pysoem.OP_STATE:
                continue
            if s.state == pysoem.SAFEOP_STATE + pysoem.STATE_ERROR:
                s.state = pysoem.SAFEOP_STATE + pysoem.STATE_ACK
                s.write_state()
            elif s.state == pysoem.SAFEOP_STATE:
                s.state = pysoem.OP_STATE
                s.write_state()
            elif s.state > pysoem.NONE_STATE:
                if s.reconfig(500_000):
                    s.is_lost = False
            else:
                s.recover(500_000)
    m.read_state()
    fail("%s: no recovery: states %s, last WKC %s" % (what, [hex(s.state) for s in m.slaves], w))


def watchdog_drops(m, watchdog_on):
    """Devices the SM watchdog dropped to SAFE-OP+ERR (master stalled): acknowledge them and
    request OP again (SOEM's recovery). Any other state, or a drop with the watchdog off, fails."""
    m.read_state()
    dropped = 0
    for i, s in enumerate(m.slaves):
        if s.state == pysoem.OP_STATE:
            continue
        if s.state == pysoem.SAFEOP_STATE + pysoem.STATE_ERROR and s.al_status == AL_CODE_SM_WATCHDOG and watchdog_on:
            s.state = pysoem.SAFEOP_STATE + pysoem.STATE_ACK
            s.write_state()
            s.state = pysoem.OP_STATE
            s.write_state()
            dropped += 1
        else:
            fail("slave %d left OP during the cyclic exchange: state %#x AL status code %#x (SM watchdog %s)"
                 % (i, s.state, s.al_status, "on" if watchdog_on else "off"))
    return dropped


def faults(m, n):
    emuctl("unplug %d" % (n - 1))
    w = cycle(m, 20)
    if w[-1] != 3 * (n - 1):
        fail("unplugged device %d: WKC %s, expected %d" % (n - 1, w[-5:], 3 * (n - 1)))
    time.sleep(0.2)  # longer than the SM watchdog (100 ms): the device drops to SAFE-OP+ERR
    emuctl("replug")
    st = emuctl("al %d" % (n - 1))
    if "0x14 code 0x001b" not in st:
        fail("re-plugged device: expected SAFE-OP+ERR with SM watchdog code, got %s" % st)
    recover(m, n, "re-plug")
    emuctl("power-cycle %d" % (n - 1))
    if "0x01" not in emuctl("al %d" % (n - 1)):
        fail("power-cycled device is not in INIT")
    recover(m, n, "power-cycle")
    w = cycle(m, 50)
    if any(x != 3 * n for x in w):
        fail("after recovery: WKCs %s" % w)
    print("pysoem: unplug -> WKC %d, replug/power-cycle recovered -> WKC %d" % (3 * (n - 1), 3 * n))


def sdo_checks(m):
    for i, s in enumerate(m.slaves):
        ven = int.from_bytes(s.sdo_read(0x1018, 1), "little")
        if ven != 0x8A9 or s.sdo_read(0x1008, 0) != b"AUTD":
            fail("slave %d CoE identity %#x %r" % (i, ven, s.sdo_read(0x1008, 0)))
        rx = s.sdo_read(0x1600, 0, size=1024, ca=True)  # 2 + 249 x 4 bytes: segmented
        if len(rx) != 998 or rx[0] != 249 or int.from_bytes(rx[-4:], "little") != 0x7000F910:
            fail("slave %d 0x1600 by complete access: %d bytes %s..%s" % (i, len(rx), rx[:6].hex(), rx[-4:].hex()))
    for what, call in (("read of 0x2000", lambda: m.slaves[0].sdo_read(0x2000, 0)),
                       ("write of 0x1C12", lambda: m.slaves[0].sdo_write(0x1C12, 0, b"\x00"))):
        try:
            call()
        except pysoem.SdoError:
            continue
        fail("%s was not aborted" % what)


# The dictionary an AUTD3 with the ESI's CoE (SdoInfo="true") lists: index ->
# (object code, data type, highest subindex, name); 7 VAR, 8 ARRAY, 9 RECORD.
OD_EXPECTED = {
    0x1000: (7, 0x0007, 0, "Device type"), 0x1008: (7, 0x0009, 0, "Device name"),
    0x1009: (7, 0x0009, 0, "Hardware version"), 0x100A: (7, 0x0009, 0, "Software version"),
    0x1018: (9, 0x0023, 4, "Identity"), 0x1600: (9, 0x0021, 249, "RxPdo0"), 0x1601: (9, 0x0021, 64, "RxPdo1"),
    0x1A00: (9, 0x0021, 1, "TxPdo"), 0x1C00: (8, 0x0005, 4, "Sync manager type"),
    0x1C12: (8, 0x0006, 2, "RxPDO assign"), 0x1C13: (8, 0x0006, 1, "TxPDO assign"),
    0x6000: (8, 0x0006, 1, "Inputs"), 0x7000: (8, 0x0006, 249, "Outputs 0"), 0x7001: (8, 0x0006, 64, "Outputs 1"),
}


def od_checks(m):
    """Browse every device's object dictionary as a configuration tool does: the
    object list, each object's description, each entry's description (SDO
    Information: ecx_readODlist / ecx_readODdescription / ecx_readOE), then an
    SDO upload of every readable entry, whose size must match the entry's bit
    length. Any unanswered request would cost SOEM a 700 ms timeout and show
    up as an SdoInfoError / empty entry, which fails the run."""
    requests = 0
    t0 = time.monotonic()
    for i, s in enumerate(m.slaves):
        try:
            od = s.od
        except pysoem.SdoInfoError as e:
            fail("slave %d object list: %s" % (i, e))
        got = [o.index for o in od]
        requests += 1
        if got != sorted(OD_EXPECTED):
            fail("slave %d object list %s" % (i, [hex(x) for x in got]))
        for o in od:
            code, dtype, maxsub, name = OD_EXPECTED[o.index]
            requests += 1
            if (o.object_code, o.data_type, o.name) != (code, dtype, name.encode()):
                fail("slave %d %#x description: code %d type %#x name %r" % (i, o.index, o.object_code, o.data_type, o.name))
            # one entry description request per subindex 0..max; pysoem gives a
            # VAR's (subindex 0) on the object itself
            entries = o.entries if code != 7 else ([o] if not o.entries else [])
            requests += maxsub + 1
            if len(entries) != maxsub + 1:
                fail("slave %d %#x: %d entries, expected %d" % (i, o.index, len(entries), maxsub + 1))
            for sub, en in enumerate(entries):
                if en.data_type == 0 or en.bit_length == 0 or (en.obj_access & 0x07) != 0x07:
                    fail("slave %d %#x:%d entry: type %#x bits %d access %#x"
                         % (i, o.index, sub, en.data_type, en.bit_length, en.obj_access))
                value = s.sdo_read(o.index, sub)
                requests += 1
                if len(value) * 8 != en.bit_length:
                    fail("slave %d %#x:%d: %d bytes uploaded, entry says %d bits" % (i, o.index, sub, len(value), en.bit_length))
                if o.index == 0x1018 and sub >= 1 and int.from_bytes(value, "little") != (0x8A9, 1, 1, i + 1)[sub - 1]:
                    fail("slave %d identity %d = %s" % (i, sub, value.hex()))
                if o.index == 0x1600 and sub >= 1 and int.from_bytes(value, "little") != (0x7000 << 16 | sub << 8 | 16):
                    fail("slave %d 0x1600:%d = %s" % (i, sub, value.hex()))
        if s.sdo_read(0x1008, 0) != b"AUTD" or od[1].bit_length != 32:
            fail("slave %d device name" % i)
    # informational only (never asserted: hosts stall): a silent device would make this minutes
    print("pysoem: object dictionary of %d devices, %d SDO Information + upload requests in %.1f s"
          % (len(m.slaves), requests, time.monotonic() - t0))


def main():
    n = int(sys.argv[1])
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else 1000
    with_faults = "--faults" in sys.argv
    with_sdo = "--sdo" in sys.argv
    ifname = os.environ["AUTD3_TEST_IFNAME"]
    # SOEM's bring-up waits (2 ms per datagram, 20 ms per EEPROM word) are for
    # a real bus; on a loaded CI machine the emulator is simply scheduled
    # late, and config_init then reports -1. Waiting longer changes no check.
    t = pysoem.settings.timeouts
    t.ret, t.safe, t.eeprom = 200000, 200000, 2000000
    m = pysoem.Master()
    m.open(ifname)
    try:
        found = m.config_init()
        if found != n:
            fail("config_init found %d slaves, expected %d" % (found, n))
        for i, s in enumerate(m.slaves):
            if s.name != "AUTD" or s.man != 0x8A9 or s.id != 1 or s.rev != 1:
                fail("slave %d identity: name %r vendor %#x product %#x rev %#x" % (i, s.name, s.man, s.id, s.rev))

        if with_sdo:
            sdo_checks(m)
        if "--od" in sys.argv:
            od_checks(m)
            return

        def po2so(pos):  # PRE-OP -> SAFE-OP hook, as the AUTD SOEM link: SYNC0 1 ms
            m.slaves[pos].dc_sync(True, 1_000_000)

        for s in m.slaves:
            s.config_func = po2so
        if not m.config_dc():
            fail("config_dc: no DC slave")
        m.config_map()
        for i, s in enumerate(m.slaves):
            if len(s.output) != 626 or len(s.input) != 2:
                fail("slave %d mapped %d/%d bytes, expected 626/2" % (i, len(s.output), len(s.input)))
        if m.state_check(pysoem.SAFEOP_STATE, STATE_LIMIT_S * 1_000_000) != pysoem.SAFEOP_STATE:
            m.read_state()
            fail("not SAFE-OP: " + ", ".join("%#x/%#x" % (s.state, s.al_status) for s in m.slaves))
        if m.expected_wkc != 3 * n:
            fail("expected_wkc %d != %d" % (m.expected_wkc, 3 * n))
        # Reset every device (seq 0), then request OP while exchanging process data.
        for s in m.slaves:
            s.output = frame(0, CMD_RESET)
        m.send_processdata()
        m.receive_processdata(RECV_TIMEOUT_US)
        diff0 = dc_diffs(m)  # after the first FRMW compare: the drift accumulated since config_dc
        m.state = pysoem.OP_STATE
        m.write_state()
        deadline = time.monotonic() + STATE_LIMIT_S
        while True:
            m.send_processdata()
            m.receive_processdata(RECV_TIMEOUT_US)
            if m.state_check(pysoem.OP_STATE, 1000) == pysoem.OP_STATE:
                break
            if time.monotonic() > deadline:
                m.read_state()
                fail("not OP: " + ", ".join("%#x/%#x" % (s.state, s.al_status) for s in m.slaves))
            time.sleep(0.001)
        # Cyclic exchange: Reset for 20 cycles, then Nop frames with seq 0, 1, 2, ...;
        # the next seq goes out once every device acknowledged the previous one.
        # SM watchdog time as the devices have it (0x0420, 100 us units); 0 = off
        watchdog_on = any(int.from_bytes(s._fprd(0x0420, 2, RECV_TIMEOUT_US), "little") != 0 for s in m.slaves)
        wd_recoveries = 0
        bad_wkc = 0
        seq = -1
        acked = [0xFF] * n
        last_dc = None
        for c in range(cycles):
            if c == 20:
                seq = 0
            elif seq >= 0 and seq < 250 and all(a == seq for a in acked):
                seq += 1
            for s in m.slaves:
                s.output = frame(0, CMD_RESET) if seq < 0 else frame(seq, CMD_NOP)
            m.send_processdata()
            wkc = m.receive_processdata(RECV_TIMEOUT_US)
            if wkc != 3 * n:
                bad_wkc += 1
            for i, s in enumerate(m.slaves):
                acked[i] = s.input[0]
            dc = m.dc_time
            if last_dc is not None and dc < last_dc:
                fail("DC time went back: %d -> %d" % (last_dc, dc))
            last_dc = dc
            if c % 50 == 49:
                wd_recoveries += watchdog_drops(m, watchdog_on)
            time.sleep(0.001)
        wd_recoveries += watchdog_drops(m, watchdog_on)
        if wd_recoveries:
            print("note: the master stalled longer than the SM watchdog; %d device(s) recovered from SAFE-OP+ERR 0x001B"
                  % wd_recoveries)
        # Devices recovered just now get their pending frame at the next images.
        for c in range(SETTLE_CYCLES if wd_recoveries else 0):
            if all(a == seq for a in acked):
                break
            m.send_processdata()
            m.receive_processdata(RECV_TIMEOUT_US)
            acked = [s.input[0] for s in m.slaves]
            time.sleep(0.001)
        if bad_wkc:
            fail("%d of %d cycles had WKC != %d" % (bad_wkc, cycles, 3 * n))
        if seq < 10 or any(a not in (seq, seq - 1) for a in acked):
            fail("firmware round trips: sent up to seq %d, acks %s" % (seq, acked))
        diff1 = dc_diffs(m)
        settle = 0
        while any(abs(d) >= 1000 for d in diff1) and settle < SETTLE_CYCLES:
            settle += 1  # a stall just before: more FRMW compares (one per cycle) converge it again
            m.send_processdata()
            m.receive_processdata(RECV_TIMEOUT_US)
            time.sleep(0.001)
            diff1 = dc_diffs(m)
        if any(abs(d) >= 1000 for d in diff1):
            fail("DC system time differences did not converge below 1 us: %s (after the first compare: %s, %d more cycles)"
                 % (diff1, diff0, settle))
        if settle:
            print("note: DC converged again after %d more cycles (the master stalled near the end)" % settle)
        # The SII reads back through SOEM's own EEPROM code: vendor at word 8, product at word 10.
        for i, s in enumerate(m.slaves):
            ven = int.from_bytes(s.eeprom_read(0x08), "little")
            prod = int.from_bytes(s.eeprom_read(0x0A), "little")
            if ven != 0x8A9 or prod != 1:
                fail("slave %d EEPROM vendor %#x product %#x" % (i, ven, prod))
        print("pysoem: %d devices OP, %d cycles WKC %d, acks up to seq %d, DC diff first %s ns -> %s ns"
              % (n, cycles, 3 * n, seq, diff0, diff1))
        if with_faults:
            faults(m, n)
        m.state = pysoem.INIT_STATE
        m.write_state()
    finally:
        m.close()


if __name__ == "__main__":
    main()
