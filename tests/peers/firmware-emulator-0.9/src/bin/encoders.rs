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
//!   `pwe <256 × u16 LE>`                                           SetPulseWidthTable
//!   `force_fan <0|1>`                                              ForceFan
//!   `gpio_in <4 × 0|1>` (e.g. `1011`)                              EmulateGpioIn
//!   `gpio_out <type:value> × 4` (type and value decimal)           SetGpioOut
//!   `compressed <bank> <index> <full|half> <count × 249 phases>`   WritePatternCompressed
//!   `stm <bank> <divider> <rep|inf> <later 0|1> <intensity|phase|half> <n × 249 drives>` PatternStm
//!   `foci_stm <bank> <divider> <rep|inf> <later 0|1> <num_foci> <sound speed m/s> <step>...`  FociStm;
//!        a step is `<intensity>/<x>,<y>,<z>,<phase offset>` with one `/x,y,z,o` per focus (mm, f32)
//! For each request: one line `frame <cmd> <624-byte payload>` per frame (hex), then `end`;
//! or `error <message>` then `end` when the reference refuses the request.
use std::io::{self, BufRead, Write};
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::Duration;

use autd3_rs::commands::{
    EmulateGpioIn, FixedCompletionTime, FixedUpdateRate, ForceFan, GpioOut, Modulation, Pattern,
    FociStm, FociStmOption, PatternCompression, PatternStm, PatternStmMode, PatternStmOption,
    SetGpioOut, SetOutputMask,
    SetPhaseCorrection, SetPulseWidthTable, SetSilencer, WritePatternCompressed,
};
use autd3_rs::value::{
    ControlPoint, ControlPoints, DcSysTime, Emission, Intensity, LoopBehavior, ModulationBank, PatternBank, Phase, PulseWidth,
    SamplingConfig, TransitionMode,
};
use autd3_rs::{Autd3, DatagramBuilder, Geometry, Point3, Velocity};

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

/// An STM's loop and transition from the request's `<rep|inf> <later 0|1>` words: a finite loop
/// switches at the sync index, an infinite one at once; `later` switches later.
fn stm_loop(rep: &str, later: &str) -> (LoopBehavior, TransitionMode) {
    let (mut lb, mut tm) = (LoopBehavior::Infinite, TransitionMode::Immediate);
    if rep != "inf" {
        let r: u16 = rep.parse().unwrap();
        lb = LoopBehavior::Finite(NonZeroU16::new(r + 1).unwrap());
        tm = TransitionMode::SyncIdx;
    }
    if later == "1" {
        tm = TransitionMode::Later;
    }
    (lb, tm)
}

/// One foci STM step: intensity and (point, phase offset) per focus.
type Step = (u8, Vec<(Point3<f32>, u8)>);

fn parse_steps(words: &[&str]) -> Vec<Step> {
    words
        .iter()
        .map(|w| {
            let mut parts = w.split('/');
            let intensity: u8 = parts.next().unwrap().parse().unwrap();
            let foci = parts
                .map(|f| {
                    let v: Vec<&str> = f.split(',').collect();
                    let c = |i: usize| v[i].parse::<f32>().unwrap();
                    (Point3::new(c(0), c(1), c(2)), v[3].parse::<u8>().unwrap())
                })
                .collect();
            (intensity, foci)
        })
        .collect()
}

/// FociStm is generic over the foci per step: build the N-point steps and emit.
fn foci_stm<const N: usize>(out: &mut impl Write, geometry: &Arc<Geometry>, steps: &[Step], option: FociStmOption, div: NonZeroU16) {
    let points: Vec<ControlPoints<N>> = steps
        .iter()
        .map(|(intensity, foci)| {
            let cps: [ControlPoint; N] =
                core::array::from_fn(|j| ControlPoint::new(foci[j].0, Phase(foci[j].1)));
            ControlPoints::new(cps, Intensity(*intensity))
        })
        .collect();
    let mut b = DatagramBuilder::new(geometry.clone());
    b.push(FociStm::new(SamplingConfig::new(div), &points, option));
    emit(out, &b);
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
            "pwe" => {
                let d = hex(w[1]);
                let t: [PulseWidth; 256] = core::array::from_fn(|i| {
                    PulseWidth::new(u16::from_le_bytes([d[2 * i], d[2 * i + 1]]))
                });
                let mut b = builder();
                b.push(SetPulseWidthTable { table: &t });
                emit(&mut out, &b);
            }
            "force_fan" => {
                let mut b = builder();
                b.push(ForceFan { value: w[1] == "1" });
                emit(&mut out, &b);
            }
            "gpio_in" => {
                let v: [bool; 4] = core::array::from_fn(|i| w[1].as_bytes()[i] == b'1');
                let mut b = builder();
                b.push(EmulateGpioIn { values: v });
                emit(&mut out, &b);
            }
            "gpio_out" => {
                let outputs: [GpioOut; 4] = core::array::from_fn(|i| {
                    let (t, v) = w[1 + i].split_once(':').unwrap();
                    let v: u64 = v.parse().unwrap();
                    match t.parse::<u8>().unwrap() {
                        0x00 => GpioOut::Off,
                        0x01 => GpioOut::BaseSignal,
                        0x02 => GpioOut::Thermo,
                        0x03 => GpioOut::ForceFan,
                        0x10 => GpioOut::Sync,
                        0x20 => GpioOut::ModBank,
                        0x21 => GpioOut::ModIdx(v as u16),
                        0x50 => GpioOut::PatternBank,
                        0x51 => GpioOut::PatternIdx(v as u16),
                        0x52 => GpioOut::IsStmMode,
                        0x60 => GpioOut::SysTimeEq(DcSysTime::from_nanos(v)),
                        0x70 => GpioOut::SyncDiff,
                        0xE0 => GpioOut::PwmOut(v as u8),
                        0xF0 => GpioOut::Direct(v != 0),
                        other => panic!("gpio type {other}"),
                    }
                });
                let mut b = builder();
                b.push(SetGpioOut { outputs });
                emit(&mut out, &b);
            }
            "compressed" => {
                let bank = if w[1] == "1" { PatternBank::B1 } else { PatternBank::B0 };
                let index: usize = w[2].parse().unwrap();
                let format = if w[3] == "full" { PatternCompression::PhaseFull } else { PatternCompression::PhaseHalf };
                let d = hex(w[4]);
                let pats: Vec<Vec<Vec<Emission>>> = d
                    .chunks(249)
                    .map(|c| {
                        vec![c
                            .iter()
                            .map(|&p| Emission { phase: Phase(p), intensity: Intensity(0xFF) })
                            .collect()]
                    })
                    .collect();
                let patterns: [Option<&[Vec<Emission>]>; 4] =
                    core::array::from_fn(|i| pats.get(i).map(|p| p.as_slice()));
                let mut b = builder();
                b.push(WritePatternCompressed { bank, index, format, patterns });
                emit(&mut out, &b);
            }
            "stm" => {
                let bank = if w[1] == "1" { PatternBank::B1 } else { PatternBank::B0 };
                let div = NonZeroU16::new(w[2].parse().unwrap()).unwrap();
                let d = hex(w[6]);
                let pats: Vec<Vec<Vec<Emission>>> = d
                    .chunks(2 * 249)
                    .map(|c| {
                        vec![c
                            .chunks(2)
                            .map(|e| Emission { phase: Phase(e[0]), intensity: Intensity(e[1]) })
                            .collect()]
                    })
                    .collect();
                let mut option = PatternStmOption {
                    bank,
                    mode: match w[5] {
                        "intensity" => PatternStmMode::PhaseIntensityFull,
                        "phase" => PatternStmMode::PhaseFull,
                        _ => PatternStmMode::PhaseHalf,
                    },
                    ..Default::default()
                };
                (option.loop_behavior, option.transition_mode) = stm_loop(w[3], w[4]);
                let mut b = builder();
                b.push(PatternStm::new(SamplingConfig::new(div), &pats, option));
                emit(&mut out, &b);
            }
            "foci_stm" => {
                let bank = if w[1] == "1" { PatternBank::B1 } else { PatternBank::B0 };
                let div = NonZeroU16::new(w[2].parse().unwrap()).unwrap();
                let n: usize = w[5].parse().unwrap();
                let mut option = FociStmOption {
                    bank,
                    sound_speed: Velocity::from_m_s(w[6].parse().unwrap()),
                    ..Default::default()
                };
                (option.loop_behavior, option.transition_mode) = stm_loop(w[3], w[4]);
                let steps = parse_steps(&w[7..]);
                match n {
                    1 => foci_stm::<1>(&mut out, &geometry, &steps, option, div),
                    2 => foci_stm::<2>(&mut out, &geometry, &steps, option, div),
                    3 => foci_stm::<3>(&mut out, &geometry, &steps, option, div),
                    4 => foci_stm::<4>(&mut out, &geometry, &steps, option, div),
                    8 => foci_stm::<8>(&mut out, &geometry, &steps, option, div),
                    other => panic!("num_foci {other} not wired"),
                }
            }
            other => {
                eprintln!("unknown request {other}");
                std::process::exit(2);
            }
        }
    }
}
