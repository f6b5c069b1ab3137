"""The API against the in-process emulator: what was sent is what the devices emit."""

from __future__ import annotations

import numpy as np
import pytest

import libautd3 as autd


def test_defaults_come_from_the_library() -> None:
    cfg = autd.ClientConfig()
    assert (cfg.timeout_cycles, cfg.max_inflight, cfg.max_resync_rounds) == (10, 127, 8)
    assert cfg.protocol == autd.Protocol.NEW and cfg.rt_cpu == -1
    o = autd.EchoCATLinkOption()
    assert o.interface is None and o.sync0_period_ns == 1_000_000 and o.warmup_cycles == 200
    e = autd.EmulatorLinkOption()
    assert e.cycle_ns == 1_000_000 and e.version == autd.FirmwareVersion((0, 9, 0), (0, 9, 0))
    assert autd.TwinCATLinkOption.remote("10.0.0.2").server_port == 48898
    assert autd.RemoteLinkOption().address == "127.0.0.1:8080"


def test_geometry(geometry: autd.Geometry) -> None:
    assert geometry.num_devices == 2 and len(geometry) == 2
    p = geometry.positions
    assert p.shape == (2, 249, 3) and p.dtype == np.float32
    assert np.allclose(p[0, 0], (0, 0, 0)) and np.allclose(p[0, 1], (10.16, 0, 0), atol=1e-4)
    assert np.allclose(p[1, 0], (192.0, 0, 0), atol=1e-3)
    g = autd.Geometry([autd.AUTD3(pos=(0, 0, 0)), autd.AUTD3(pos=(0, 0, 100), rot=(0, 0, 0, 1))])
    assert np.allclose(g.positions[1, 0], (0, 0, 100), atol=1e-4)
    assert geometry.sound_speed == 340000.0
    geometry.sound_speed = 346000.0
    assert geometry.sound_speed == 346000.0


def test_reads(client: autd.Client) -> None:
    assert client.num_devices == 2 and client.protocol == autd.Protocol.NEW
    assert [str(v) for v in client.read_firmware_version()] == ["cpu v0.9.0, fpga v0.9.0"] * 2
    assert len(client.read_fpga_state()) == 2 and client.read_error_detail() == [0, 0]
    st = client.stats()
    assert st.completed >= 1 and st.failed == 0
    assert [s.state for s in client.device_statuses()] == [autd.ClientDeviceState.READY] * 2
    ls = client.check_state()
    assert ls.all_op and not ls.any_lost
    lk = client.link_stats()
    assert lk.cycles > 0
    # the emulator link times its exchanges and has no phase to measure: None, not 0
    assert lk.exchanges and lk.exchanges > 0 and lk.mean_exchange_ns() is not None
    assert lk.worst_exchange_ns is not None and lk.worst_exchange_ns >= lk.mean_exchange_ns()
    assert lk.phase_excursions is None and lk.worst_phase_deviation_ns is None
    assert "cycle_ns" in client.diagnostics()


def test_focus_is_what_the_devices_emit(client: autd.Client, geometry: autd.Geometry) -> None:
    f = autd.Focus(geometry.center + np.array([0, 0, 150]), intensity=200)
    client.send_checked(f)
    phase, intensity = f.calc(geometry)
    for dev in range(2):
        out = client.emulator.output(dev)
        assert np.array_equal(out.phase, phase[dev]) and np.all(out.intensity == 200)
    assert len(set(phase[0].tolist())) > 10  # a focus, not a uniform field


def test_custom_drives(client: autd.Client) -> None:
    rng = np.random.default_rng(1)
    ph = rng.integers(0, 256, (2, 249))
    client.send_checked(autd.Custom(ph, 77))
    for dev in range(2):
        out = client.emulator.output(dev)
        assert np.array_equal(out.phase, ph[dev]) and np.all(out.intensity == 77)


def test_modulation_silencer_stm(client: autd.Client) -> None:
    sine = autd.Sine(150)
    client.send_checked((autd.Silencer.fixed_completion_time(25_000, 25_000, strict=False), sine))
    out = client.emulator.output(0)
    s = sine.samples()
    assert out.modulation_size == len(s) and np.array_equal(out.modulation_buffer, s[:1024])
    assert out.silencer_completion_steps_phase == 1
    long = autd.Modulation(np.arange(2000) % 256, divider=10)
    assert len(long.frames(client.geometry)) > 1
    client.send_checked(long)
    assert client.emulator.output(1).modulation_size == 2000
    client.send_checked(autd.Static(100))
    assert client.emulator.output(0).modulation == 100
    client.send_checked(autd.FociSTM(np.array([[0, 0, 150], [10, 0, 150], [20, 0, 150]]), divider=40))
    assert client.emulator.output(0).pattern_size == 3
    g = client.geometry
    client.send_checked(autd.GainSTM.from_gains([autd.Focus((0, 0, 150)), autd.Plane((0, 0, 1)), autd.Null()], g,
                                                divider=40))
    assert client.emulator.output(1).pattern_size == 3
    client.send_checked((autd.Bessel((0, 0, 0), (0, 0, 1), 0.1), autd.Silencer.disable()))
    assert client.emulator.output(0).pattern_size == 1


def test_streaming_requests(client: autd.Client) -> None:
    reqs = [client.send(autd.Uniform(phase=i, intensity=255)) for i in range(50)]
    for r in reqs:
        resp = r.wait()
        assert resp.outcomes == [autd.Outcome.EXECUTED] * 2
    assert client.emulator.output(0).phase[0] == 49
    r = client.send(autd.Null())
    while (resp2 := r.poll()) is None:
        pass
    assert resp2.all_executed and r.done()


def test_context_manager_silences(geometry: autd.Geometry) -> None:
    with autd.Client.open(geometry, autd.EmulatorLinkOption()) as c:
        c.send_checked((autd.Static(), autd.Focus((0, 0, 150))))
        assert not c.emulator.output(0).silent
        outs = c.emulator.outputs()
    assert c.closed
    with outs:
        for dev in range(2):
            assert outs.read(dev).silent


def test_open_with_checker(geometry: autd.Geometry) -> None:
    c, chk = autd.Client.open_with_checker(geometry, autd.EmulatorLinkOption())
    with c:
        st = chk.check()
        assert st.all_op and st.recoveries == 0 and len(st.device_states) == 2


def test_more_unwaited_requests_than_slots_never_hang(geometry: autd.Geometry) -> None:
    """A handle holds its slot until released: 300 sends nobody waits on yet must not block forever."""
    with autd.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig(max_inflight=4)) as c:
        reqs = [c.send(autd.Uniform(phase=i % 256)) for i in range(300)]
        assert all(r.wait().all_executed for r in reqs)
        # a single send with more frames than slots (a 2000-sample modulation is 4 frames)
        r = c.send(autd.Modulation(np.arange(2000) % 256))
        assert r.wait().all_executed
        with pytest.raises(autd.InvalidHandleError):
            reqs[0].wait()


def test_the_reaped_request_keeps_its_failure(geometry: autd.Geometry) -> None:
    with autd.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig(max_inflight=1)) as c:
        c.send_checked(autd.Silencer())
        bad = c.send(autd.FociSTM([[0, 0, 150], [5, 0, 150]], divider=10))  # refused by the devices (0x04)
        good = c.send(autd.Null())  # needs bad's slot: bad is waited on here
        assert good.wait().all_executed
        with pytest.raises(autd.DeviceError):
            bad.wait().check()
