//! Differential peer for libautd3's device model (src/emulation/device).
//!
//! stdin, one command per line:
//!   `<1252 hex digits>`  one 626-byte output image for the device: the firmware takes it
//!                        (recv), its main loop runs until idle (process_pending), then
//!                        the peer prints `<ack> <data> <fpga_state>` (two hex digits each)
//!   `power_cycle`        power-cycle the device (prints `power_cycle`)
//!   `state`              print the output state in one line (see `print_state`)
//!   `# ...` or empty     ignored
//! SYNC0 is configured active with a 1 ms period (so Synchronize can succeed), as in the C test.
use std::io::{self, BufRead, Write};

use autd3_rs_core::protocol::TX_FRAME_BYTES;
use autd3_rs_firmware_emulator::Device;

fn parse_hex(line: &str) -> Option<[u8; TX_FRAME_BYTES]> {
    let b = line.as_bytes();
    if b.len() != TX_FRAME_BYTES * 2 {
        return None;
    }
    let mut out = [0u8; TX_FRAME_BYTES];
    for (i, o) in out.iter_mut().enumerate() {
        let s = std::str::from_utf8(&b[2 * i..2 * i + 2]).ok()?;
        *o = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

fn setup(dev: &mut Device) {
    dev.fpga_mut().set_sync0_cycle_ns(1_000_000);
    dev.fpga_mut().set_next_sync0(1_000_000_000);
}

/// The output state, as tests/command/test_command_diff.c prints ours:
/// `state <bank> <emission type> <size> <divider> <rep> <silencer flag> <rate i> <rate p>
/// <steps i> <steps p> <fpga state>`, then `mod <bank> <size> <divider> <rep> <current sample>
/// <FNV-1a 32 of the bank's samples>`, then `ext <gpio in bits> <force fan> <4 GPIO out words>
/// <FNV-1a 32 of the pulse-width table, LE words>`, then the 249 emissions (phase, intensity) in hex.
/// Register addresses: crate autd3-cpu-fw 0.9.0 src/params.rs (PATTERN_REP0 0x57, MOD_REP0 0x27,
/// SILENCER_FLAG 0x40).
fn print_state(out: &mut impl Write, dev: &Device) {
    const ADDR_PATTERN_REP0: u16 = 0x57;
    const ADDR_MOD_REP0: u16 = 0x27;
    const ADDR_SILENCER_FLAG: u16 = 0x40;
    let f = dev.fpga();
    let bank = f.current_pattern_bank();
    let mut line = format!(
        "state {} {} {} {} {} {} {} {} {} {} {:02x} ",
        bank,
        f.pattern_mode(bank),
        f.pattern_cycle(bank),
        f.pattern_freq_div(bank),
        f.controller_reg(ADDR_PATTERN_REP0 + bank as u16),
        f.controller_reg(ADDR_SILENCER_FLAG),
        f.silencer_update_rate_intensity(),
        f.silencer_update_rate_phase(),
        f.silencer_completion_steps_intensity(),
        f.silencer_completion_steps_phase(),
        f.fpga_state()
    );
    let mb = f.current_mod_bank();
    let fnv = f
        .modulation_buffer(mb)
        .iter()
        .fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    line.push_str(&format!(
        "mod {} {} {} {} {} {:08x} ",
        mb,
        f.modulation_cycle(mb),
        f.modulation_freq_div(mb),
        f.controller_reg(ADDR_MOD_REP0 + mb as u16),
        f.modulation(),
        fnv
    ));
    const ADDR_CTL_FLAG: u16 = 0x00; // GPIO_IN_0..3 at bits 8..11, FORCE_FAN at bit 13
    let ctl = f.controller_reg(ADDR_CTL_FLAG);
    let pwe = (0..256).fold(0x811c_9dc5u32, |h, k| {
        let v = f.pulse_width_table(k);
        let h = (h ^ u32::from(v as u8)).wrapping_mul(0x0100_0193);
        (h ^ u32::from((v >> 8) as u8)).wrapping_mul(0x0100_0193)
    });
    line.push_str(&format!(
        "ext {:x} {} {:016x} {:016x} {:016x} {:016x} {:08x} ",
        (ctl >> 8) & 0xF,
        u8::from(f.force_fan()),
        f.gpio_out(0),
        f.gpio_out(1),
        f.gpio_out(2),
        f.gpio_out(3),
        pwe
    ));
    for e in f.emissions() {
        line.push_str(&format!("{:02x}{:02x}", e.phase.0, e.intensity.0));
    }
    writeln!(out, "{line}").unwrap();
}

fn main() {
    let mut dev = Device::new(249);
    setup(&mut dev);
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.expect("stdin");
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "state" {
            print_state(&mut out, &dev);
            continue;
        }
        if line == "power_cycle" {
            dev.power_cycle();
            setup(&mut dev);
            writeln!(out, "power_cycle").unwrap();
            continue;
        }
        let Some(frame) = parse_hex(line) else {
            eprintln!("line {}: expected {} hex digits", n + 1, TX_FRAME_BYTES * 2);
            std::process::exit(2);
        };
        let rx = dev.send(&frame);
        writeln!(out, "{:02x} {:02x} {:02x}", rx.ack.get(), rx.data, dev.fpga().fpga_state()).unwrap();
    }
}
