//! Differential peer for libautd3's v12 device model (src/emulation/device/v12.c).
//!
//! stdin, one command per line:
//!   `<1252 hex digits>`  one 626-byte v12 output image for the device: the emulator takes and
//!                        executes it (CPUEmulator::send), then the peer prints
//!                        `<data> <ack> <fpga_state>` (two hex digits each, ack = err << 4 | msg_id)
//!   `power_cycle`        a fresh device (prints `power_cycle`)
//!   `# ...` or empty     ignored
//! The reserved header byte cannot be set through the crate's TxMessage (it is crate-private);
//! the scripts keep it 0.
use std::io::{self, BufRead, Write};

use autd3_driver::ethercat::EC_OUTPUT_FRAME_SIZE;
use autd3_driver::link::{MsgId, TxMessage};
use autd3_firmware_emulator::CPUEmulator;

fn parse_hex(line: &str) -> Option<Vec<u8>> {
    let b = line.as_bytes();
    if b.len() != EC_OUTPUT_FRAME_SIZE * 2 {
        return None;
    }
    (0..EC_OUTPUT_FRAME_SIZE)
        .map(|i| u8::from_str_radix(std::str::from_utf8(&b[2 * i..2 * i + 2]).ok()?, 16).ok())
        .collect()
}

fn main() {
    let mut cpu = CPUEmulator::new(0, 249);
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.expect("stdin");
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "power_cycle" {
            cpu = CPUEmulator::new(0, 249);
            writeln!(out, "power_cycle").unwrap();
            continue;
        }
        let Some(frame) = parse_hex(line) else {
            eprintln!("line {}: expected {} hex digits", n + 1, EC_OUTPUT_FRAME_SIZE * 2);
            std::process::exit(2);
        };
        let mut tx = TxMessage::new();
        tx.header.msg_id = MsgId::new(frame[0]);
        tx.header.slot_2_offset = u16::from_le_bytes([frame[2], frame[3]]);
        tx.payload_mut().copy_from_slice(&frame[4..]);
        cpu.send(std::slice::from_ref(&tx));
        let rx = cpu.rx();
        writeln!(out, "{:02x} {:02x} {:02x}", rx.data(), (rx.ack().err() << 4) | rx.ack().msg_id(), cpu.fpga().fpga_state() & 0xFF).unwrap();
    }
}
