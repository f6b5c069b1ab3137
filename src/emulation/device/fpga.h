/*
 * The output side of an AUTD3 device: what the 0.9 CPU firmware writes into
 * the FPGA for the pattern (drive), silencer, phase-correction and output-mask
 * commands, and the output state that results. Described from crates
 * autd3-cpu-fw 0.9.0 (src/cmd/{write_pattern,write_pattern_fused,
 * config_pattern,change_pattern_bank,silencer,phase_corr,output_mask}.rs,
 * src/fpga.rs init) and autd3-rs-firmware-emulator 0.9.0 (src/emu_fpga/
 * mod.rs emissions_at, swapchain.rs set); docs/commands.md has the layouts.
 *
 * What is modelled: the validation of each command (same error codes, same
 * order), slot 0 of both pattern banks (the drive a single-pattern bank
 * emits, and what an STM emits at index 0), the pattern-bank registers and
 * the bank swap as the FPGA performs it when no time passes (infinite loop:
 * at once; finite loop: pending), the silencer registers and the CPU's strict
 * silencer guard, phase correction and output mask; both modulation banks
 * (all 65536 samples each), their registers and bank swap; the pulse-width
 * table, force fan, emulated GPIO inputs and the GPIO output settings.
 * Not modelled: time (STM and modulation index advance, silencer ramps,
 * sys-time and GPIO transitions: the cursors stay at index 0), STM slots
 * past 0 (validated, then discarded). Foci banks are computed as the FPGA
 * computes them, at index 0.
 *
 * No allocation, no I/O: safe on the bus thread. Not thread-safe.
 */
#ifndef AUTD3_EMULATION_DEVICE_FPGA_H
#define AUTD3_EMULATION_DEVICE_FPGA_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/emulator.h"
#include "autd3/proto.h"

#define AUTD3_FPGA_NUM_BANKS 2
#define AUTD3_FPGA_SLOT_WORDS 256u            /* one pattern index: 249 words used */
#define AUTD3_FPGA_EMISSION_INDICES 1024u     /* pattern indices per bank */
#define AUTD3_FPGA_EMISSION_RAM_WORDS (AUTD3_FPGA_SLOT_WORDS * AUTD3_FPGA_EMISSION_INDICES)
#define AUTD3_FPGA_REP_INFINITE 0xFFFFu
#define AUTD3_FPGA_MOD_SAMPLES 65536u          /* modulation samples per bank */

/* One bank-swapping sequencer (pattern or modulation) of the FPGA, without
 * time: its bank registers, the requested bank and the bank being played. */
typedef struct autd3_fpga_seq {
  uint16_t cycle[AUTD3_FPGA_NUM_BANKS]; /* size − 1 */
  uint16_t div[AUTD3_FPGA_NUM_BANKS];
  uint16_t rep[AUTD3_FPGA_NUM_BANKS];
  uint8_t req_bank; /* last requested bank (REQ_RD_BANK) */
  uint8_t transition_mode;
  uint64_t transition_value;
  uint8_t cur_bank;
  bool pending; /* a finite loop waits for its transition */
  uint8_t pending_bank;
} autd3_fpga_seq_t;

typedef struct autd3_fpga {
  /* emission RAM, slot 0 of each bank: low byte phase, high byte intensity */
  uint16_t em[AUTD3_FPGA_NUM_BANKS][AUTD3_FPGA_SLOT_WORDS];
  /* pattern registers per bank besides the sequencer's */
  uint8_t pattern_mode[AUTD3_FPGA_NUM_BANKS]; /* emission type: 0 foci, 1 raw */
  uint16_t pattern_sound_speed[AUTD3_FPGA_NUM_BANKS];
  uint8_t pattern_num_foci[AUTD3_FPGA_NUM_BANKS];
  autd3_fpga_seq_t pattern;
  /* modulation RAM (one byte per sample) and sequencer */
  uint8_t mod[AUTD3_FPGA_NUM_BANKS][AUTD3_FPGA_MOD_SAMPLES];
  autd3_fpga_seq_t modulation;
  /* silencer registers */
  uint8_t silencer_flag;
  uint16_t silencer_rate_intensity, silencer_rate_phase;
  uint16_t silencer_steps_intensity, silencer_steps_phase;
  /* the CPU's silencer guard (cmd/silencer.rs SilencerGuard) */
  bool guard_strict;
  uint16_t guard_steps_intensity, guard_steps_phase;
  uint16_t guard_pattern_div[AUTD3_FPGA_NUM_BANKS];
  uint16_t guard_mod_div[AUTD3_FPGA_NUM_BANKS];
  uint8_t guard_pattern_bank, guard_mod_bank;
  /* per-transducer tables */
  uint8_t phase_corr[AUTD3_NUM_TRANSDUCERS];
  uint8_t output_mask[AUTD3_NUM_TRANSDUCERS]; /* 1 = enabled */
  /* pulse-width table, control flags, GPIO outputs */
  uint16_t pwe[256];
  bool force_fan;
  uint8_t gpio_in;      /* bit i = emulated GPIO input i */
  uint64_t gpio_out[4]; /* type << 56 | parameter */
} autd3_fpga_t;

/* Power-on: every RAM zero, then autd3_fpga_init(). */
void autd3_fpga_power_on(autd3_fpga_t *f);
/* Clear (fpga::init plus SilencerGuard::init): registers and tables to their
 * defaults, pattern slot 0 zero, modulation samples 0 and 1 at 0xFF; the rest
 * of the RAMs keeps its content, as on the FPGA. */
void autd3_fpga_init(autd3_fpga_t *f);
/* Whether `cmd` is one this model executes. */
bool autd3_fpga_handles(uint8_t cmd);
/* Execute one command's payload (624 bytes) at the device's DC system time
 * `sys_time_ns` (for sys-time transitions); returns the firmware's error code
 * (AUTD3_DEV_ERR_*; 0 = success). Only for autd3_fpga_handles(cmd). */
uint8_t autd3_fpga_exec(autd3_fpga_t *f, uint8_t cmd, const uint8_t *payload, uint64_t sys_time_ns);
/* The FPGA-state bits this model owns (banks, pattern mode, transition pending). */
uint8_t autd3_fpga_state_bits(const autd3_fpga_t *f);
/* The output state now (phase with correction, intensity with mask, as
 * autd3-rs-firmware-emulator's emissions() for a raw pattern); fills every
 * field but fpga_state and error_detail, which the device owns. */
void autd3_fpga_output(const autd3_fpga_t *f, autd3_output_state_t *out);

struct autd3_dev;
/* The whole output state of a device: autd3_fpga_output() plus the device's
 * FPGA-state byte and latched error code. */
void autd3_dev_output_state(const struct autd3_dev *d, autd3_output_state_t *out);

#endif
