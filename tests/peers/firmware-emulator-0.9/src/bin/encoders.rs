//! Reference encoders for libautd3's command encoders (src/command): the 0.9 client's own
//! commands (crate autd3-rs 0.9.0, `DatagramBuilder` over a one-device geometry) turned into
//! frames, so that tests/command/test_command_encoders.c can require byte-identical payloads.
//!
//! stdin, one request per line (numbers decimal, byte strings hex):
//!   `pattern <bank> <drives: 249 × phase,intensity>`              Pattern (WritePatternFused)
//!   `modulation <bank> <divider> <rep|inf> <later 0|1> <samples>`  Modulation (fused or split)
//!   `silencer_time <intensity_ns> <phase_ns> <strict 0|1>`         SetSilencer FixedCompletionTime
//!   `silencer_rate <intensity> <phase>`                            SetSilencer FixedUpdateRate
//!   `phase_corr <249 phases>`                                      SetPhaseCorrection
//!   `output_mask <249 bytes, 0 = off>`                             SetOutputMask
//! For each request: one line `frame <cmd> <624-byte payload>` per frame (hex), then `end`;
//! or `error <message>` then `end` when the reference refuses the request.
use std::io::{self, BufRead, Write};
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::Duration;

use autd3_rs::commands::{
    FixedCompletionTime, FixedUpdateRate, Modulation, Pattern, SetOutputMask, SetPhaseCorrection,
    SetSilencer,
};
use autd3_rs::value::{
    Emission, Intensity, LoopBehavior, ModulationBank, PatternBank, Phase, SamplingConfig,
    TransitionMode,
};
use autd3_rs::{Autd3, DatagramBuilder, Geometry};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn emit(out: &mut impl Write, b: &DatagramBuilder<'_>) {
    match b.build() {
        Ok(frames) => {
            for i in 0..frames.len() {
                let f = frames.frame(i).unwrap();
                let d = &f.datagrams()[0];
                let mut line = format!("frame {:02x} ", d.cmd.as_u8());
                for b in d.payload.iter() {
                    line.push_str(&format!("{b:02x}"));
                }
                writeln!(out, "{line}").unwrap();
            }
        }
        Err(e) => writeln!(out, "error {e}").unwrap(),
    }
    writeln!(out, "end").unwrap();
}

fn main() {
    let geometry = Arc::new(Geometry::new(vec![Autd3::default()]));
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0].starts_with('#') {
            continue;
        }
        // A builder per request, declared after the data it borrows.
        let builder = || DatagramBuilder::new(geometry.clone());
        match w[0] {
            "pattern" => {
                let bank = if w[1] == "1" { PatternBank::B1 } else { PatternBank::B0 };
                let d = hex(w[2]);
                let em: Vec<Vec<Emission>> = vec![(0..d.len() / 2)
                    .map(|i| Emission { phase: Phase(d[2 * i]), intensity: Intensity(d[2 * i + 1]) })
                    .collect()];
                let mut b = builder();
                b.push(Pattern::with_bank(bank, &em));
                emit(&mut out, &b);
            }
            "modulation" => {
                let bank = if w[1] == "1" { ModulationBank::B1 } else { ModulationBank::B0 };
                let div = NonZeroU16::new(w[2].parse().unwrap()).unwrap();
                let data = hex(w[5]);
                let mut m = Modulation::with_bank(bank, SamplingConfig::new(div), &data);
                if w[3] != "inf" {
                    let rep: u16 = w[3].parse().unwrap();
                    m.loop_behavior = LoopBehavior::Finite(NonZeroU16::new(rep + 1).unwrap());
                    m.transition_mode = TransitionMode::SyncIdx;
                }
                if w[4] == "1" {
                    m.transition_mode = TransitionMode::Later;
                }
                let mut b = builder();
                b.push(m);
                emit(&mut out, &b);
            }
            "silencer_time" => {
                let c = FixedCompletionTime {
                    intensity: Duration::from_nanos(w[1].parse().unwrap()),
                    phase: Duration::from_nanos(w[2].parse().unwrap()),
                    strict_mode: w[3] == "1",
                };
                let mut b = builder();
                b.push(SetSilencer::new(c));
                emit(&mut out, &b);
            }
            "silencer_rate" => {
                let c = FixedUpdateRate {
                    intensity: NonZeroU16::new(w[1].parse().unwrap()).unwrap(),
                    phase: NonZeroU16::new(w[2].parse().unwrap()).unwrap(),
                };
                let mut b = builder();
                b.push(SetSilencer::new(c));
                emit(&mut out, &b);
            }
            "phase_corr" => {
                let p: Vec<Vec<Phase>> = vec![hex(w[1]).into_iter().map(Phase).collect()];
                let mut b = builder();
                b.push(SetPhaseCorrection { phases: &p });
                emit(&mut out, &b);
            }
            "output_mask" => {
                let m: Vec<Vec<bool>> = vec![hex(w[1]).into_iter().map(|v| v != 0).collect()];
                let mut b = builder();
                b.push(SetOutputMask { masks: &m });
                emit(&mut out, &b);
            }
            other => {
                eprintln!("unknown request {other}");
                std::process::exit(2);
            }
        }
    }
}
