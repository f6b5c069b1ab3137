"""Every error path a user can hit gives a clear exception: never a crash, hang or silent clamp."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import libautd3 as autd
from libautd3 import _native as N
from libautd3 import errors


def test_hierarchy_mirrors_the_c_table() -> None:
    lib = N.lib()
    for name, value, cls_name, _ in errors._TABLE:
        assert lib.autd3_err_name(value).decode() == name
        cls = getattr(autd, cls_name)
        assert issubclass(cls, autd.AUTD3Error) and cls.code == value and cls.name == name
    # every code the library names has a class (a code added in C without one fails here)
    for v in range(-128, 0):
        n = lib.autd3_err_name(v).decode()
        if n != "UNKNOWN":
            assert errors.error_class(v).name == n, f"code {v} ({n}) has no exception class"


def test_builtin_bases() -> None:
    assert issubclass(autd.TimedOutError, TimeoutError)
    assert issubclass(autd.InvalidArgumentError, ValueError)
    assert issubclass(autd.PermissionDeniedError, PermissionError)


def test_invalid_config_names_the_field(geometry: autd.Geometry) -> None:
    with pytest.raises(autd.InvalidConfigError) as ei:
        autd.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig(max_inflight=0))
    assert ei.value.code == -3 and "max_inflight" in ei.value.detail


def test_out_of_range_is_refused_not_truncated(geometry: autd.Geometry) -> None:
    with pytest.raises(autd.InvalidArgumentError, match="max_inflight"):
        autd.ClientConfig(max_inflight=2**32 + 1).validate()  # ctypes would store 1
    with pytest.raises(autd.InvalidArgumentError, match="phase"):
        autd.Uniform(phase=256)
    with pytest.raises(autd.InvalidArgumentError, match="intensity"):
        autd.Focus((0, 0, 150), intensity=-1)
    with pytest.raises(autd.InvalidArgumentError, match="0..255"):
        autd.Custom(np.full((2, 249), 300)).frames(geometry)
    with pytest.raises(autd.InvalidArgumentError, match="cycle_ns"):
        autd.EmulatorLinkOption(cycle_ns=-5)._to_c()
    with pytest.raises(autd.InvalidArgumentError, match="finite"):
        autd.Focus((0, 0, float("nan")))


def test_wrong_types() -> None:
    with pytest.raises(TypeError, match="geometry"):
        autd.Client.open("two devices", autd.EmulatorLinkOption())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="link"):
        autd.Client.open(autd.Geometry.row(1), "emulator")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="integers"):
        autd.Custom(np.zeros((1, 249), dtype=np.float32)).frames(autd.Geometry.row(1))
    with pytest.raises(TypeError, match="low_latency"):
        autd.ClientConfig(low_latency=1).validate()  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="datagram"):
        autd.Geometry.row(1) and autd.commands.frames_of(42, autd.Geometry.row(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        autd.Geometry([(0, 0, 0)])  # type: ignore[list-item]


def test_device_count_range() -> None:
    with pytest.raises(autd.InvalidArgumentError):
        autd.Geometry.row(129)


def test_device_error_carries_code_and_response(client: autd.Client) -> None:
    client.send_checked(autd.Silencer())  # strict: a divider shorter than its 1 ms completion is refused
    with pytest.raises(autd.DeviceError) as ei:
        client.send_checked(autd.FociSTM([[0, 0, 150], [5, 0, 150]], divider=10))
    assert "0x04" in ei.value.detail and "device 0" in ei.value.detail
    assert ei.value.response.data[0] == 0x04  # type: ignore[attr-defined]


def test_sine_without_exact_period_names_the_nearest() -> None:
    with pytest.raises(autd.InvalidArgumentError) as ei:
        autd.Sine(150.123456).samples()
    assert ei.value.detail


def test_closed_client(geometry: autd.Geometry) -> None:
    c = autd.Client.open(geometry, autd.EmulatorLinkOption())
    c.close()
    c.close()  # a second close is a no-op
    for call in (lambda: c.send(autd.Null()), lambda: c.send_checked(autd.Null()), c.stats, c.read_firmware_version,
                 lambda: c.emulator.counters(0)):
        with pytest.raises(autd.ClosedError, match="closed"):
            call()


def test_second_wait_and_detach(client: autd.Client) -> None:
    r = client.send(autd.Null())
    r.wait()
    with pytest.raises(autd.InvalidHandleError, match="already waited"):
        r.wait()
    r2 = client.send(autd.Null())
    r2.detach()
    with pytest.raises(autd.InvalidHandleError, match="detached"):
        r2.wait()
    with pytest.raises(autd.InvalidHandleError):
        r2.detach()


def test_wait_with_timeout_leaves_the_request_usable(client: autd.Client) -> None:
    r = client.send(autd.XorHash(16, sleep_ms=40))  # within timeout_cycles x max_resync_rounds (80 ms)
    with pytest.raises(autd.PendingError):
        r.wait(timeout=0.001)
    assert r.wait().all_executed


def test_request_survives_close(geometry: autd.Geometry) -> None:
    c = autd.Client.open(geometry, autd.EmulatorLinkOption())
    r = c.send(autd.XorHash(16, sleep_ms=40))
    c.close()
    try:  # either it completed before the close or the close failed it: never a hang or a crash
        r.wait(timeout=5)
    except autd.ClosedError:
        pass


def test_timeout_of_a_frozen_device(geometry: autd.Geometry) -> None:
    cfg = autd.ClientConfig(timeout_cycles=2, max_resync_rounds=1, close_timeout_ms=200)
    c = autd.Client.open(geometry, autd.EmulatorLinkOption(), cfg)
    c.emulator.inject(1, freeze=True)
    with pytest.raises(autd.AUTD3Error) as ei:
        c.send_checked(autd.Null())
    assert isinstance(ei.value, (autd.TimedOutError, autd.DeviceResetError, autd.OutcomeUnknownError)), ei.value
    assert "device 1" in ei.value.detail
    c.emulator.clear_faults(1)
    try:
        c.close()
    except autd.AUTD3Error:
        pass  # close may report the device it could not confirm


def test_message_is_the_failing_threads_own() -> None:
    """autd3_last_error() is thread-local: each thread's exception carries its own message."""
    got: dict[str, str] = {}
    barrier = threading.Barrier(2)

    def fail(name: str, cfg: autd.ClientConfig) -> None:
        barrier.wait()
        for _ in range(50):
            try:
                cfg.validate()
            except autd.InvalidConfigError as e:
                got[name] = e.detail
                if name not in e.detail:
                    got[name] = "WRONG: " + e.detail
                    return

    t = threading.Thread(target=fail, args=("timeout_cycles", autd.ClientConfig(timeout_cycles=0)))
    t.start()
    fail("max_inflight", autd.ClientConfig(max_inflight=0))
    t.join()
    assert "timeout_cycles" in got["timeout_cycles"] and not got["timeout_cycles"].startswith("WRONG")
    assert "max_inflight" in got["max_inflight"] and not got["max_inflight"].startswith("WRONG")


def test_missing_library_is_a_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, LIBAUTD3_LIBRARY=str(tmp_path / "nowhere" / "libautd3.so"))
    code = ("import libautd3\n"
            "try:\n    libautd3.Geometry.row(1)\nexcept libautd3.LibraryNotFoundError as e:\n"
            "    print('OK', e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK") and "LIBAUTD3_LIBRARY" in out.stdout and "nowhere" in out.stdout


def test_link_not_available_or_no_interface(geometry: autd.Geometry) -> None:
    with pytest.raises(autd.AUTD3Error) as ei:
        autd.Client.open(geometry, autd.EchoCATLinkOption(interface="autd3-none0"))
    assert isinstance(ei.value, (autd.NoInterfaceError, autd.PermissionDeniedError, autd.NotBuiltError)), ei.value
    assert ei.value.detail


def test_parameters_are_checked_when_changed_too(client: autd.Client) -> None:
    """Changing a parameter after construction is checked like the constructor's: ctypes would
    otherwise wrap 300 to 44 without a word."""
    f = autd.Focus((0, 0, 150))
    with pytest.raises(autd.InvalidArgumentError, match="intensity"):
        f.intensity = 300
    f.intensity = 100
    client.send_checked(f)
    assert np.all(client.emulator.output(0).intensity == 100)
    with pytest.raises(autd.InvalidArgumentError, match="finite"):
        f.pos = (0, 0, float("inf"))
    with pytest.raises(ValueError, match="3 numbers"):
        f.pos = (0, 0)
    u = autd.Uniform()
    with pytest.raises(autd.InvalidArgumentError, match="phase"):
        u.phase = -1
    m = autd.Modulation(np.arange(100))
    for name, value in (("divider", 0), ("divider", 65536), ("bank", 2), ("repeat", 0), ("data", [0, 256])):
        with pytest.raises(autd.InvalidArgumentError, match=name):
            setattr(m, name, value)
    with pytest.raises(ValueError):
        m.data[0] = 1  # the samples are a read-only copy: no in-place wrap either
    s = autd.Sine(150)
    with pytest.raises(autd.InvalidArgumentError, match="amplitude"):
        s.amplitude = 256
    with pytest.raises(autd.InvalidArgumentError, match="divider"):
        s.divider = 0
    stm = autd.FociSTM([[0, 0, 150], [5, 0, 150]], divider=40)
    with pytest.raises(autd.InvalidArgumentError, match="divider"):
        stm.divider = 70000
    with pytest.raises(autd.InvalidArgumentError, match="0..255"):
        stm.intensities = [0, 300]
    stm.intensities = [10, 20, 30]
    with pytest.raises(ValueError, match="one per point"):
        stm.frames(client.geometry)
    with pytest.raises(autd.InvalidArgumentError, match="data_len"):
        autd.XorHash(621)


def test_missing_npcap_is_named() -> None:
    """On Windows without Npcap the library answers NOT_BUILT naming Npcap and wpcap.dll
    (src/nic/wpcap.c); the binding raises NpcapMissingError, still a NotBuiltError. (No Windows
    Python here: the mapping is tested with the library's message.)"""
    detail = ("raw Ethernet needs Npcap, whose wpcap.dll cannot be loaded (LoadLibrary failed): install Npcap "
              "(https://npcap.com) with \"Install Npcap in WinPcap API-compatible Mode\" checked, or WinPcap")
    e = errors.make_error(-7, detail)
    assert isinstance(e, autd.NpcapMissingError) and isinstance(e, autd.NotBuiltError)
    assert e.code == -7 and e.detail == detail
    assert "Npcap is missing" in str(e) and "https://npcap.com" in str(e)
    other = errors.make_error(-7, "the soem link is not built into this copy of libautd3")
    assert type(other) is autd.NotBuiltError
