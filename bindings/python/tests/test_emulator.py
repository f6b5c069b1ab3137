"""The emulator's device-side reads and fault injection, as a user's own tests would use them."""

from __future__ import annotations

import time

import libautd3 as autd


def test_execution_log_proves_exactly_once(client: autd.Client) -> None:
    client.emulator.drain_log(0)
    for _ in range(20):
        client.send_checked(autd.XorHash(16))
    entries, dropped = client.emulator.drain_log(0)
    assert dropped == 0
    assert [e.cmd for e in entries].count(0xF0) == 20
    assert all(e.result == 0 for e in entries)


def test_dropped_images_are_recovered(client: autd.Client) -> None:
    em = client.emulator

    def lag() -> int:  # images device 0 got that device 1 did not (the two reads may straddle one cycle)
        return em.counters(0).received - em.counters(1).received

    before = lag()
    em.drain_log(1)
    em.inject(1, drop_next=5)
    client.send_checked(autd.Null())
    client.send_checked(autd.Null())
    assert lag() - before >= 4, "the fault was not applied"
    entries, _ = em.drain_log(1)
    assert [e.cmd for e in entries].count(autd.Null().frames(client.geometry)[0].cmd) == 2  # each once


def test_power_cycle_is_seen_and_reestablished(client: autd.Client) -> None:
    client.emulator.power_cycle(1)
    deadline = time.monotonic() + 10
    while client.device_resets(1) == 0 and time.monotonic() < deadline:
        try:
            client.send_checked(autd.Null())
        except (autd.DeviceResetError, autd.OutcomeUnknownError):
            pass
    assert client.device_resets(1) >= 1, "the power cycle was not seen"
    while time.monotonic() < deadline:
        s = client.device_status(1)
        if s.state == autd.ClientDeviceState.READY and s.reinits == s.resets:
            break
        time.sleep(0.01)
    assert client.device_status(1).state == autd.ClientDeviceState.READY
    assert client.send_checked(autd.Null()).all_executed
    assert client.stats().device_resets >= 1
