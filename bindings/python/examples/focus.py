"""A focus 150 mm above the array's centre with 150 Hz sine modulation (the in-process emulator;
swap the link option for EchoCATLinkOption(interface="eth0") to drive a real array)."""

from __future__ import annotations

import numpy as np

import libautd3 as autd


def main() -> None:
    geometry = autd.Geometry([autd.AUTD3(pos=(0.0, 0.0, 0.0))])
    with autd.Client.open(geometry, autd.EmulatorLinkOption(), autd.ClientConfig()) as client:
        for i, v in enumerate(client.read_firmware_version()):
            print(f"device {i}: {v}")
        focus = autd.Focus(geometry.center + np.array([0.0, 0.0, 150.0]))
        client.send_checked((autd.Silencer(), autd.Sine(150), focus))
        print("emitting; device 0 phase[0..4] =", client.emulator.output(0).phase[:5])
    # leaving the block closed the client: every device is silenced


if __name__ == "__main__":
    main()
