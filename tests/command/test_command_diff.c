/*
 * Differential test of the output commands: the frames our encoders make
 * (src/command), valid and deliberately invalid, go one at a time to our
 * device model (src/emulation/device, FPGA side in fpga.c) and to the reference
 * firmware (crates.io autd3-rs-firmware-emulator 0.9.0: the real CPU
 * firmware sources of autd3-cpu-fw 0.9.0 over its FPGA emulator) through the
 * peer tests/peers/firmware-emulator-0.9. After every frame both print
 * (ack, data, FPGA state); at every `state` step both print the whole output
 * state (pattern bank, emission type, size, divider, rep, silencer registers,
 * FPGA state; modulation bank, size, divider, rep, current sample and a hash
 * of the bank's samples; GPIO inputs, force fan, GPIO outputs and a hash of
 * the pulse-width table; the 249 emitted (phase, intensity) pairs). Every
 * line must match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "emulation/device/device.h"
#include "harness/peer_proc.h"
#include "harness/test.h"

#ifndef AUTD3_PEER_FW_EMU
#define AUTD3_PEER_FW_EMU ""
#endif

#define LINE_MAX_ 1400 /* a state line: ~200 + 249 × 4 hex digits */

typedef struct {
  peer_script_t p; /* frames, and "state" steps: print the output state instead of sending a frame */
  uint8_t seq;
} script_t;

static void add_cmd(script_t *sc, const char *what, const autd3_command_t *c) {
  autd3_tx_encode(peer_script_frame(&sc->p, what), sc->seq++, c->cmd, c->payload, AUTD3_PAYLOAD_BYTES);
}

static void add_state(script_t *sc, const char *what) { peer_script_directive(&sc->p, what, "state"); }

static void add_simple(script_t *sc, const char *what, uint8_t cmd) {
  autd3_command_t c;
  memset(&c, 0, sizeof c);
  c.cmd = cmd;
  add_cmd(sc, what, &c);
}

static void print_state(const autd3_dev_t *d, char *line) {
  autd3_output_state_t st;
  autd3_dev_output_state(d, &st);
  int n = snprintf(line, LINE_MAX_, "state %u %u %u %u %u %u %u %u %u %u %02x ", st.pattern_bank, st.pattern_emission_type,
                   (unsigned)st.pattern_size, st.pattern_divider, st.pattern_rep, st.silencer_flag,
                   st.silencer_update_rate_intensity, st.silencer_update_rate_phase, st.silencer_completion_steps_intensity,
                   st.silencer_completion_steps_phase, st.fpga_state);
  /* the whole modulation bank, hashed (FNV-1a 32) as the peer does */
  uint32_t h = 0x811c9dc5u;
  for (uint32_t i = 0; i < st.modulation_size; i++) h = (h ^ d->fpga.mod[st.modulation_bank][i]) * 0x01000193u;
  n += snprintf(line + n, (size_t)(LINE_MAX_ - n), "mod %u %u %u %u %u %08x ", st.modulation_bank, (unsigned)st.modulation_size,
                st.modulation_divider, st.modulation_rep, st.modulation, (unsigned)h);
  uint32_t hp = 0x811c9dc5u;
  for (int k = 0; k < 256; k++) {
    hp = (hp ^ (uint8_t)st.pulse_width_table[k]) * 0x01000193u;
    hp = (hp ^ (uint8_t)(st.pulse_width_table[k] >> 8)) * 0x01000193u;
  }
  n += snprintf(line + n, (size_t)(LINE_MAX_ - n), "ext %x %u %016llx %016llx %016llx %016llx %08x ", st.gpio_in, st.force_fan ? 1u : 0u,
                (unsigned long long)st.gpio_out[0], (unsigned long long)st.gpio_out[1], (unsigned long long)st.gpio_out[2],
                (unsigned long long)st.gpio_out[3], (unsigned)hp);
  for (int t = 0; t < AUTD3_NUM_TRANSDUCERS && n > 0 && n < LINE_MAX_ - 5; t++)
    n += snprintf(line + n, (size_t)(LINE_MAX_ - n), "%02x%02x", st.phase[t], st.intensity[t]);
}

static void run_model(const peer_script_t *sc, char (*lines)[LINE_MAX_]) {
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  static autd3_dev_t d;
  autd3_dev_init(&d, NULL, &ideal);
  autd3_dev_set_sync0(&d, 0, 1000000); /* as the peer */
  for (int i = 0; i < sc->n; i++) {
    if (sc->s[i].directive) {
      print_state(&d, lines[i]);
      continue;
    }
    autd3_dev_recv_frame(&d, sc->s[i].frame, 0);
    snprintf(lines[i], LINE_MAX_, "%02x %02x %02x", d.ack, d.data, d.fpga_state);
  }
}

static void compare(const script_t *sc) {
  peer_proc_require(AUTD3_PEER_FW_EMU, "firmware-emulator-0.9");
  static char peer[PEER_SCRIPT_MAX][LINE_MAX_], ours[PEER_SCRIPT_MAX][LINE_MAX_];
  peer_script_run(AUTD3_PEER_FW_EMU, &sc->p, peer[0], LINE_MAX_);
  run_model(&sc->p, ours);
  peer_script_compare(&sc->p, peer[0], ours[0], LINE_MAX_);
}

/* The client's open (without the identity reads): Reset, SetMode FIFO, Clear. */
static void opened(script_t *sc) {
  sc->p.n = 0;
  sc->seq = 0;
  autd3_command_t c;
  memset(&c, 0, sizeof c);
  c.cmd = AUTD3_CMD_RESET;
  add_cmd(sc, "Reset", &c);
  sc->seq = 0;
  add_simple(sc, "Clear", AUTD3_CMD_CLEAR);
  add_state(sc, "boot state");
}

static autd3_geometry_t *geo1(void) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  return g;
}

TEST(focus_and_null_gain) {
  static script_t sc;
  opened(&sc);
  autd3_geometry_t *g = geo1();
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  autd3_command_t c;
  autd3_gain_t focus = autd3_gain_focus(90, 70, 150);
  focus.intensity = 200;
  ASSERT_OK(autd3_gain_calc(&focus, g, 0, dr));
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 0, dr, 0xFFFF, NULL));
  add_cmd(&sc, "WritePatternFused focus bank 0", &c);
  add_state(&sc, "after focus");
  autd3_gain_t bessel = autd3_gain_bessel(90, 70, 0, 0.1f, 0, 1, 0.2f);
  ASSERT_OK(autd3_gain_calc(&bessel, g, 0, dr));
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 1, dr, 0xFFFF, NULL));
  add_cmd(&sc, "WritePatternFused Bessel bank 1", &c);
  add_state(&sc, "after Bessel (bank 1)");
  uint8_t corr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) corr[i] = (uint8_t)(i * 7);
  ASSERT_OK(autd3_cmd_phase_correction(&c, corr));
  add_cmd(&sc, "SetPhaseCorrection", &c);
  bool mask[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) mask[i] = i % 5 != 0;
  ASSERT_OK(autd3_cmd_output_mask(&c, mask));
  add_cmd(&sc, "SetOutputMask", &c);
  add_state(&sc, "with correction and mask");
  autd3_gain_t null = autd3_gain_null();
  ASSERT_OK(autd3_gain_calc(&null, g, 0, dr));
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 0, dr, 0xFFFF, NULL));
  add_cmd(&sc, "WritePatternFused null (the close frame)", &c);
  add_state(&sc, "after null");
  compare(&sc);
  autd3_geometry_free(g);
}

TEST(stm_banks_and_transitions) {
  static script_t sc;
  opened(&sc);
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){(uint8_t)(i + 1), (uint8_t)(255 - i)};
  autd3_command_t c;
  ASSERT_OK(autd3_cmd_write_pattern(&c, 1, 0, dr, AUTD3_NUM_TRANSDUCERS));
  add_cmd(&sc, "WritePatternBuffer bank 1 index 0", &c);
  ASSERT_OK(autd3_cmd_write_pattern(&c, 1, 256, dr + 100, 149));
  add_cmd(&sc, "WritePatternBuffer bank 1 index 1 (part)", &c);
  ASSERT_OK(autd3_cmd_config_pattern(&c, 1, 8, 2, AUTD3_LOOP_INFINITE));
  add_cmd(&sc, "ConfigPattern bank 1 size 2 div 8", &c);
  add_state(&sc, "config alone: bank 0 still");
  autd3_transition_t imm = {AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 1, &imm));
  add_cmd(&sc, "ChangePatternBank 1 immediate", &c);
  add_state(&sc, "STM on bank 1");
  ASSERT_OK(autd3_cmd_config_pattern(&c, 0, 10, 3, 4));
  add_cmd(&sc, "ConfigPattern bank 0 size 3 rep 4 (finite)", &c);
  autd3_transition_t sync = {AUTD3_TRANSITION_SYNC_IDX, 0, 0};
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 0, &sync));
  add_cmd(&sc, "ChangePatternBank 0 sync-idx (pending)", &c);
  add_state(&sc, "transition pending");
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 0, &imm));
  add_cmd(&sc, "ChangePatternBank 0 immediate on a finite loop", &c);
  add_simple(&sc, "ReadErrorDetail", AUTD3_CMD_READ_ERROR_DETAIL);
  autd3_transition_t systime = {AUTD3_TRANSITION_SYS_TIME, 5, 0};
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 0, &systime));
  add_cmd(&sc, "ChangePatternBank 0 sys-time in the past", &c);
  autd3_transition_t bad = {AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 0, &bad));
  c.payload[1] = 0x33; /* unknown transition mode */
  add_cmd(&sc, "ChangePatternBank unknown mode 0x33", &c);
  c.payload[0] = 2;
  add_cmd(&sc, "ChangePatternBank bank 2", &c);
  add_state(&sc, "after the refused changes");
  compare(&sc);
}

TEST(invalid_patterns_and_silencer) {
  static script_t sc;
  opened(&sc);
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){(uint8_t)(2 * i), 0x80};
  autd3_command_t c;
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 0, dr, 0xFFFF, NULL));
  add_cmd(&sc, "WritePatternFused valid", &c);
  autd3_command_t bad = c;
  bad.payload[4] = 2; /* raw with size 2 */
  add_cmd(&sc, "WritePatternFused raw size 2", &bad);
  bad = c;
  bad.payload[1] = 7; /* unknown emission type */
  add_cmd(&sc, "WritePatternFused emission type 7", &bad);
  bad = c;
  bad.payload[2] = bad.payload[3] = 0; /* divider 0 */
  add_cmd(&sc, "WritePatternFused divider 0", &bad);
  bad = c;
  bad.payload[9] = 0x00; /* sync-idx with an infinite loop */
  add_cmd(&sc, "WritePatternFused sync-idx on infinite loop", &bad);
  bad = c;
  bad.payload[0] = 2;
  add_cmd(&sc, "WritePatternFused bank 2", &bad);
  ASSERT_OK(autd3_cmd_write_pattern(&c, 0, 0, dr, 10));
  c.payload[6] = 21; /* odd data_len */
  add_cmd(&sc, "WritePatternBuffer odd length", &c);
  ASSERT_OK(autd3_cmd_write_pattern(&c, 0, 262144 - 5, dr, 5));
  c.payload[6] = 12; /* 6 words past the end */
  add_cmd(&sc, "WritePatternBuffer past the RAM", &c);
  ASSERT_OK(autd3_cmd_config_pattern(&c, 0, 1, 2, AUTD3_LOOP_INFINITE));
  c.payload[4] = 0x01;
  c.payload[5] = 0x04; /* size 1025 */
  add_cmd(&sc, "ConfigPattern size 1025", &c);
  add_simple(&sc, "ReadErrorDetail", AUTD3_CMD_READ_ERROR_DETAIL);
  add_state(&sc, "nothing changed");
  ASSERT_OK(autd3_cmd_silencer_fixed_update_rate(&c, 12, 34));
  add_cmd(&sc, "Silencer fixed update rate", &c);
  add_state(&sc, "fixed update rate");
  ASSERT_OK(autd3_cmd_silencer_fixed_update_rate(&c, 1, 1));
  c.payload[2] = c.payload[3] = 0;
  add_cmd(&sc, "Silencer update rate 0", &c);
  ASSERT_OK(autd3_cmd_silencer_default(&c));
  add_cmd(&sc, "Silencer default (strict, 10/40 steps)", &c);
  add_state(&sc, "strict silencer");
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 1, dr, 39, NULL));
  add_cmd(&sc, "WritePatternFused divider 39 under strict 40", &c);
  ASSERT_OK(autd3_cmd_config_pattern(&c, 1, 10, 2, AUTD3_LOOP_INFINITE));
  add_cmd(&sc, "ConfigPattern divider 10 under strict 40", &c);
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 1, dr, 40, NULL));
  add_cmd(&sc, "WritePatternFused divider 40 bank 1", &c);
  ASSERT_OK(autd3_cmd_silencer_fixed_completion_time(&c, 25000 * 50, 25000 * 50, true));
  add_cmd(&sc, "Silencer strict 50 steps over divider 40", &c);
  ASSERT_OK(autd3_cmd_silencer_fixed_completion_time(&c, 25000 * 20, 25000 * 30, false));
  add_cmd(&sc, "Silencer completion 20/30 not strict", &c);
  bad = c;
  bad.payload[6] = bad.payload[7] = 0;
  add_cmd(&sc, "Silencer completion steps 0", &bad);
  add_state(&sc, "final");
  add_simple(&sc, "Clear", AUTD3_CMD_CLEAR);
  add_state(&sc, "after Clear");
  compare(&sc);
}

TEST(modulation_fused_split_and_banks) {
  static script_t sc;
  opened(&sc);
  static uint8_t buf[2000];
  autd3_modulation_t m;
  autd3_command_t cmds[AUTD3_MODULATION_MAX_COMMANDS];
  size_t n = 0;
  ASSERT_OK(autd3_modulation_sine(150.0f, 10, 255, 127, buf, 600, &m)); /* 4 kHz sampling: 80 samples */
  ASSERT_OK(autd3_modulation_commands(&m, cmds, AUTD3_MODULATION_MAX_COMMANDS, &n));
  ASSERT_EQ(n, 1);
  add_cmd(&sc, "Sine 150 Hz fused (bank 0)", &cmds[0]);
  add_state(&sc, "sine on bank 0");
  /* 1999 samples, odd: four WriteModulationBuffer frames (616 each, 151 last), config, change */
  for (int i = 0; i < 1999; i++) buf[i] = (uint8_t)(i * 13);
  autd3_modulation_t big = m;
  big.data = buf;
  big.size = 1999;
  big.bank = 1;
  big.divider = 20;
  ASSERT_OK(autd3_modulation_commands(&big, cmds, AUTD3_MODULATION_MAX_COMMANDS, &n));
  ASSERT_EQ(n, 6);
  for (size_t i = 0; i < n; i++) add_cmd(&sc, autd3_cmd_name(cmds[i].cmd), &cmds[i]);
  add_state(&sc, "1999 samples on bank 1");
  /* later: written and configured on bank 0, not switched */
  uint8_t st2[2];
  autd3_modulation_t stat;
  ASSERT_OK(autd3_modulation_static(77, st2, &stat));
  stat.later = true;
  ASSERT_OK(autd3_modulation_commands(&stat, cmds, AUTD3_MODULATION_MAX_COMMANDS, &n));
  ASSERT_EQ(n, 2);
  for (size_t i = 0; i < n; i++) add_cmd(&sc, autd3_cmd_name(cmds[i].cmd), &cmds[i]);
  add_state(&sc, "static written later: still bank 1");
  autd3_command_t c;
  autd3_transition_t imm = {AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  ASSERT_OK(autd3_cmd_change_modulation_bank(&c, 0, &imm));
  add_cmd(&sc, "ChangeModulationBank 0 immediate", &c);
  add_state(&sc, "static on bank 0");
  /* a finite loop on bank 1 waits for its transition */
  ASSERT_OK(autd3_cmd_config_modulation(&c, 1, 20, 1999, 2));
  add_cmd(&sc, "ConfigModulation bank 1 rep 2", &c);
  autd3_transition_t gpio = {AUTD3_TRANSITION_GPIO, 2, 0};
  ASSERT_OK(autd3_cmd_change_modulation_bank(&c, 1, &gpio));
  add_cmd(&sc, "ChangeModulationBank 1 on GPIO 2", &c);
  add_state(&sc, "modulation transition pending");
  /* invalid ones */
  autd3_command_t bad;
  ASSERT_OK(autd3_cmd_write_modulation(&bad, 0, 2, buf, 10));
  bad.payload[2] = 3; /* odd offset */
  add_cmd(&sc, "WriteModulationBuffer odd offset", &bad);
  ASSERT_OK(autd3_cmd_write_modulation(&bad, 0, 65536 - 10, buf, 10));
  bad.payload[6] = 11; /* one past the bank */
  add_cmd(&sc, "WriteModulationBuffer past the bank", &bad);
  ASSERT_OK(autd3_cmd_config_modulation(&bad, 0, 1, 2, AUTD3_LOOP_INFINITE));
  bad.payload[4] = 1; /* size 1 */
  add_cmd(&sc, "ConfigModulation size 1", &bad);
  ASSERT_OK(autd3_cmd_write_modulation_fused(&bad, 0, buf, 10, 10, AUTD3_LOOP_INFINITE, NULL));
  bad.payload[1] = 0x00; /* sync-idx on an infinite loop */
  add_cmd(&sc, "WriteModulationFused sync-idx infinite", &bad);
  ASSERT_OK(autd3_cmd_write_modulation_fused(&bad, 0, buf, 10, 10, AUTD3_LOOP_INFINITE, NULL));
  bad.payload[10] = 0x59; /* data_len 601 */
  bad.payload[11] = 0x02;
  add_cmd(&sc, "WriteModulationFused data_len 601", &bad);
  ASSERT_OK(autd3_cmd_silencer_default(&c));
  add_cmd(&sc, "Silencer default (strict, 10 steps)", &c);
  ASSERT_OK(autd3_cmd_write_modulation_fused(&bad, 0, buf, 10, 9, AUTD3_LOOP_INFINITE, NULL));
  add_cmd(&sc, "WriteModulationFused divider 9 under strict 10", &bad);
  add_simple(&sc, "ReadErrorDetail", AUTD3_CMD_READ_ERROR_DETAIL);
  add_state(&sc, "nothing changed by the refused ones");
  add_simple(&sc, "Clear", AUTD3_CMD_CLEAR);
  add_state(&sc, "after Clear (RAM kept past sample 1)");
  compare(&sc);
}

TEST(compressed_pwe_gpio_fan) {
  static script_t sc;
  opened(&sc);
  autd3_command_t c;
  static uint8_t ph[5 * AUTD3_NUM_TRANSDUCERS]; /* 4 patterns from ph + 17 below */
  for (int i = 0; i < 5 * AUTD3_NUM_TRANSDUCERS; i++) ph[i] = (uint8_t)(i * 29 + 3);
  ASSERT_OK(autd3_cmd_write_pattern_compressed(&c, 0, 0, AUTD3_PATTERN_PHASE_FULL, ph, 2));
  add_cmd(&sc, "WritePatternCompressed full x2 bank 0", &c);
  add_state(&sc, "compressed full on slot 0");
  ASSERT_OK(autd3_cmd_write_pattern_compressed(&c, 0, 0, AUTD3_PATTERN_PHASE_HALF, ph + 17, 4));
  add_cmd(&sc, "WritePatternCompressed half x4 bank 0", &c);
  add_state(&sc, "compressed half on slot 0");
  ASSERT_OK(autd3_cmd_write_pattern_compressed(&c, 1, 1022, AUTD3_PATTERN_PHASE_FULL, ph, 2));
  add_cmd(&sc, "WritePatternCompressed at the last indices", &c);
  autd3_command_t bad = c;
  bad.payload[2] = 3; /* 3 patterns in PHASE_FULL */
  add_cmd(&sc, "WritePatternCompressed full x3", &bad);
  bad = c;
  bad.payload[1] = 3; /* unknown format */
  add_cmd(&sc, "WritePatternCompressed format 3", &bad);
  ASSERT_OK(autd3_cmd_write_pattern_compressed(&bad, 1, 1023, AUTD3_PATTERN_PHASE_FULL, ph, 1));
  bad.payload[2] = 2; /* index 1023 + 2 patterns: past the bank */
  add_cmd(&sc, "WritePatternCompressed past the bank", &bad);
  uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE];
  for (int i = 0; i < AUTD3_PULSE_WIDTH_TABLE_SIZE; i++) table[i] = (uint16_t)(i * 2 % 512);
  ASSERT_OK(autd3_cmd_pulse_width_table(&c, table));
  add_cmd(&sc, "SetPulseWidthTable linear", &c);
  ASSERT_OK(autd3_cmd_force_fan(&c, true));
  add_cmd(&sc, "ForceFan on", &c);
  bool in[4] = {true, false, true, true};
  ASSERT_OK(autd3_cmd_emulate_gpio_in(&c, in));
  add_cmd(&sc, "EmulateGpioIn 1,0,1,1", &c);
  autd3_gpio_out_t outs[4] = {{AUTD3_GPIO_OUT_PWM_OUT, 17}, {AUTD3_GPIO_OUT_SYS_TIME_EQ, 123456789012ull},
                              {AUTD3_GPIO_OUT_DIRECT, 1}, {AUTD3_GPIO_OUT_MOD_IDX, 300}};
  ASSERT_OK(autd3_cmd_gpio_out(&c, outs));
  add_cmd(&sc, "SetGpioOut", &c);
  add_state(&sc, "table, fan, GPIO set");
  ASSERT_OK(autd3_cmd_force_fan(&bad, false));
  bad.payload[0] = 2;
  add_cmd(&sc, "ForceFan 2", &bad);
  ASSERT_OK(autd3_cmd_emulate_gpio_in(&bad, in));
  bad.payload[3] = 5;
  add_cmd(&sc, "EmulateGpioIn with a 5", &bad);
  add_simple(&sc, "ReadErrorDetail", AUTD3_CMD_READ_ERROR_DETAIL);
  add_state(&sc, "unchanged by the refused ones");
  add_simple(&sc, "Clear", AUTD3_CMD_CLEAR);
  add_state(&sc, "after Clear (default table, fan off)");
  compare(&sc);
}

/* Foci STMs: the FPGA computes the drives from the points (sin/atan tables, integer square
 * root, the sound speed as m/s · 64); the reference's emulated FPGA and our model must give the
 * same 249 emissions, with 1, 3 and 8 foci per step, phase offsets, phase correction and mask. */
TEST(foci_stm_emissions) {
  static script_t sc;
  opened(&sc);
  autd3_geometry_t *g = geo1();
  static autd3_control_point_t pts[64];
  for (int i = 0; i < 64; i++)
    pts[i] = (autd3_control_point_t){{86.36f + 25.0f * (float)(i % 5) - 40.0f, 66.04f - 7.5f * (float)(i % 7), 80.0f + 13.0f * (float)i},
                                     (uint8_t)(i * 41)};
  static uint8_t inten[16] = {200, 17, 255, 128, 1, 99, 250, 3, 77, 66, 55, 44, 33, 22, 11, 0};
  autd3_foci_stm_t s;
  memset(&s, 0, sizeof s);
  s.points = pts;
  s.intensities = inten;
  s.divider = 40;
  s.rep = AUTD3_LOOP_INFINITE;
  s.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  static const struct {
    uint8_t num_foci, bank;
    size_t size;
    float c;
    bool fused;
  } cases[] = {{1, 0, 8, 340.0f, true}, {3, 1, 12, 346.0f, true}, {8, 0, 8, 331.3f, true}, {1, 1, 100, 340.0f, false}};
  static autd3_command_t cmds[8];
  static char labels[24][96]; /* the script keeps pointers to its labels */
  size_t nl = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    s.num_foci = cases[k].num_foci;
    s.bank = cases[k].bank;
    s.size = cases[k].size;
    static autd3_control_point_t many[100]; /* 100 steps: the points again, full intensity */
    if (!cases[k].fused) {
      s.intensities = NULL;
      for (int i = 0; i < 100; i++) many[i] = pts[i % 64];
      s.points = many;
    }
    ASSERT_OK(autd3_geometry_set_sound_speed(g, cases[k].c * 1000.0f));
    size_t n = 0;
    ASSERT_OK(autd3_foci_stm_commands(&s, g, 0, cmds, sizeof cmds / sizeof cmds[0], &n));
    ASSERT_EQ(n, cases[k].fused ? 1u : 4u);
    for (size_t i = 0; i < n; i++) {
      snprintf(labels[nl], sizeof labels[nl], "foci STM %u x %zu, bank %u: command %zu/%zu", cases[k].num_foci, cases[k].size,
               cases[k].bank, i + 1, n);
      add_cmd(&sc, labels[nl++], &cmds[i]);
    }
    snprintf(labels[nl], sizeof labels[nl], "emissions of %u foci per step", cases[k].num_foci);
    add_state(&sc, labels[nl++]);
  }
  autd3_command_t c;
  uint8_t corr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) corr[i] = (uint8_t)(i * 13);
  ASSERT_OK(autd3_cmd_phase_correction(&c, corr));
  add_cmd(&sc, "SetPhaseCorrection", &c);
  bool mask[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) mask[i] = i % 3 != 0;
  ASSERT_OK(autd3_cmd_output_mask(&c, mask));
  add_cmd(&sc, "SetOutputMask", &c);
  add_state(&sc, "foci with correction and mask");
  /* invalid foci configurations the firmware refuses: num_foci 0 and 9, sound speed 0 */
  s.num_foci = 1;
  s.size = 2;
  s.points = pts;
  ASSERT_OK(autd3_geometry_set_sound_speed(g, 340000.0f));
  size_t n = 0;
  ASSERT_OK(autd3_foci_stm_commands(&s, g, 0, cmds, 8, &n));
  ASSERT_EQ(n, 1u);
  c = cmds[0];
  c.payload[8] = 0;
  add_cmd(&sc, "fused foci, num_foci 0", &c);
  c.payload[8] = 9;
  add_cmd(&sc, "fused foci, num_foci 9", &c);
  c.payload[8] = 1;
  c.payload[10] = c.payload[11] = 0;
  add_cmd(&sc, "fused foci, sound speed 0", &c);
  add_state(&sc, "after the refused foci");
  compare(&sc);
  autd3_geometry_free(g);
}
