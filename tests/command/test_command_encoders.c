/*
 * Our encoders (src/command) against the reference encoders: the 0.9
 * client's own commands (crate autd3-rs 0.9.0, DatagramBuilder over a
 * one-device geometry) run by the peer binary `encoders` of
 * tests/peers/firmware-emulator-0.9. For the same inputs both must give the
 * same frames: count, opcode and all 624 payload bytes; where the reference
 * refuses an input, ours must refuse it too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "harness/peer_proc.h"
#include "harness/test.h"

#ifndef AUTD3_PEER_ENCODERS
#define AUTD3_PEER_ENCODERS ""
#endif

#define MAX_FRAMES 16

typedef struct {
  int n;          /* frames; -1 = refused */
  uint8_t cmd[MAX_FRAMES];
  uint8_t payload[MAX_FRAMES][AUTD3_PAYLOAD_BYTES];
} result_t;

static void hex(char *out, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
  out[2 * n] = 0;
}

/* One request through the peer. */
static void reference(const char *request, result_t *r) {
  peer_proc_require(AUTD3_PEER_ENCODERS, "firmware-emulator-0.9");
  peer_proc_t p;
  peer_proc_input(&p);
  fprintf(p.in, "%s\n", request);
  peer_proc_start(&p, AUTD3_PEER_ENCODERS);
  static char line[4096];
  memset(r, 0, sizeof *r);
  while (peer_proc_line(&p, line, sizeof line)) {
    if (!strncmp(line, "end", 3)) break;
    if (!strncmp(line, "error", 5)) {
      fprintf(stderr, "  reference refuses: %s\n", line + 6);
      r->n = -1;
      continue;
    }
    ASSERT_TRUE(!strncmp(line, "frame ", 6));
    ASSERT_TRUE(r->n < MAX_FRAMES);
    unsigned c = 0;
    ASSERT_EQ(sscanf(line + 6, "%2x", &c), 1);
    r->cmd[r->n] = (uint8_t)c;
    const char *h = line + 9;
    for (int i = 0; i < AUTD3_PAYLOAD_BYTES; i++) {
      unsigned v = 0;
      ASSERT_EQ(sscanf(h + 2 * i, "%2x", &v), 1);
      r->payload[r->n][i] = (uint8_t)v;
    }
    r->n++;
  }
  peer_proc_finish(&p);
}

static void ours_one(result_t *r, autd3_err_t err, const autd3_command_t *c) {
  memset(r, 0, sizeof *r);
  if (err != AUTD3_OK) {
    fprintf(stderr, "  ours refuses: %s\n", autd3_last_error());
    r->n = -1;
    return;
  }
  r->n = 1;
  r->cmd[0] = c->cmd;
  memcpy(r->payload[0], c->payload, AUTD3_PAYLOAD_BYTES);
}

/* Our frames for a request that makes several (or a refusal). */
static void ours_many(result_t *r, autd3_err_t err, const autd3_command_t *cmds, size_t k) {
  memset(r, 0, sizeof *r);
  if (err != AUTD3_OK) {
    fprintf(stderr, "  ours refuses: %s\n", autd3_last_error());
    r->n = -1;
    return;
  }
  ASSERT_TRUE(k <= MAX_FRAMES);
  r->n = (int)k;
  for (size_t i = 0; i < k; i++) {
    r->cmd[i] = cmds[i].cmd;
    memcpy(r->payload[i], cmds[i].payload, AUTD3_PAYLOAD_BYTES);
  }
}

static void same(const char *what, const result_t *ref, const result_t *ours) {
  fprintf(stderr, "%-48s reference %d frame(s), ours %d\n", what, ref->n, ours->n);
  ASSERT_EQ(ours->n, ref->n);
  for (int i = 0; i < ref->n; i++) {
    ASSERT_EQ(ours->cmd[i], ref->cmd[i]);
    for (int b = 0; b < AUTD3_PAYLOAD_BYTES; b++)
      if (ours->payload[i][b] != ref->payload[i][b])
        TEST_FAIL_("%s: frame %d byte %d: reference 0x%02x, ours 0x%02x", what, i, b, ref->payload[i][b], ours->payload[i][b]);
  }
}

static void pattern_case(const char *what, uint8_t bank, const autd3_drive_t *dr) {
  static char req[2048];
  uint8_t raw[2 * AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) {
    raw[2 * i] = dr[i].phase;
    raw[2 * i + 1] = dr[i].intensity;
  }
  int n = snprintf(req, sizeof req, "pattern %u ", bank);
  hex(req + n, raw, sizeof raw);
  result_t ref, ours;
  reference(req, &ref);
  autd3_command_t c;
  ours_one(&ours, autd3_cmd_write_pattern_fused(&c, bank, dr, 0xFFFF, NULL), &c);
  same(what, &ref, &ours);
}

TEST(patterns) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  autd3_gain_t focus = autd3_gain_focus(90, 70, 150);
  ASSERT_OK(autd3_gain_calc(&focus, g, 0, dr));
  pattern_case("focus, bank 0", 0, dr);
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){(uint8_t)(i * 37), (uint8_t)(i * 11)};
  pattern_case("arbitrary drives, bank 1", 1, dr);
  autd3_gain_t null = autd3_gain_null();
  ASSERT_OK(autd3_gain_calc(&null, g, 0, dr));
  pattern_case("null (the close frame)", 0, dr);
  autd3_geometry_free(g);
}

static void modulation_case(const char *what, const autd3_modulation_t *m) {
  static char req[140000];
  int n = snprintf(req, sizeof req, "modulation %u %u ", m->bank, m->divider);
  if (m->rep == AUTD3_LOOP_INFINITE) n += snprintf(req + n, sizeof req - (size_t)n, "inf ");
  else n += snprintf(req + n, sizeof req - (size_t)n, "%u ", m->rep);
  n += snprintf(req + n, sizeof req - (size_t)n, "%d ", m->later ? 1 : 0);
  hex(req + n, m->data, m->size);
  result_t ref, ours;
  reference(req, &ref);
  static autd3_command_t cmds[AUTD3_MODULATION_MAX_COMMANDS];
  size_t k = 0;
  autd3_err_t err = autd3_modulation_commands(m, cmds, AUTD3_MODULATION_MAX_COMMANDS, &k);
  ours_many(&ours, err, cmds, k);
  same(what, &ref, &ours);
}

TEST(modulations) {
  static uint8_t buf[4096];
  autd3_modulation_t m;
  ASSERT_OK(autd3_modulation_sine(150.0f, 10, 255, 127, buf, sizeof buf, &m));
  modulation_case("sine 150 Hz (fused)", &m);
  for (int i = 0; i < 1999; i++) buf[i] = (uint8_t)(i * 13 + 5);
  m.data = buf;
  m.size = 1999;
  m.bank = 1;
  m.divider = 20;
  modulation_case("1999 samples, bank 1 (split)", &m);
  m.size = 600;
  modulation_case("600 samples (the largest fused)", &m);
  m.size = 601;
  modulation_case("601 samples (split)", &m);
  m.size = 100;
  m.later = true;
  modulation_case("100 samples, later", &m);
  m.later = false;
  m.rep = 3;
  m.transition.mode = AUTD3_TRANSITION_SYNC_IDX;
  modulation_case("100 samples, 4 loops, sync-idx", &m);
  uint8_t two[2];
  ASSERT_OK(autd3_modulation_static(200, two, &m));
  modulation_case("static 200", &m);
}

static void silencer_case(const char *what, const char *req, autd3_err_t err, const autd3_command_t *c) {
  result_t ref, ours;
  reference(req, &ref);
  ours_one(&ours, err, c);
  same(what, &ref, &ours);
}

TEST(silencer_phase_correction_output_mask) {
  autd3_command_t c;
  silencer_case("silencer default (250 us / 1 ms strict)", "silencer_time 250000 1000000 1", autd3_cmd_silencer_default(&c), &c);
  silencer_case("silencer disable", "silencer_time 25000 25000 0", autd3_cmd_silencer_disable(&c), &c);
  silencer_case("silencer 30 us (not a period multiple)", "silencer_time 30000 25000 0",
                autd3_cmd_silencer_fixed_completion_time(&c, 30000, 25000, false), &c);
  silencer_case("silencer 65536 periods (too long)", "silencer_time 1638400000 25000 0",
                autd3_cmd_silencer_fixed_completion_time(&c, 1638400000ull, 25000, false), &c);
  silencer_case("silencer fixed update rate 12/34", "silencer_rate 12 34", autd3_cmd_silencer_fixed_update_rate(&c, 12, 34), &c);
  uint8_t ph[AUTD3_NUM_TRANSDUCERS];
  bool mask[AUTD3_NUM_TRANSDUCERS];
  uint8_t mraw[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) {
    ph[i] = (uint8_t)(i * 7 + 1);
    mask[i] = i % 3 != 0;
    mraw[i] = mask[i] ? 1 : 0;
  }
  static char req[1024];
  strcpy(req, "phase_corr ");
  hex(req + strlen(req), ph, sizeof ph);
  silencer_case("phase correction", req, autd3_cmd_phase_correction(&c, ph), &c);
  strcpy(req, "output_mask ");
  hex(req + strlen(req), mraw, sizeof mraw);
  silencer_case("output mask", req, autd3_cmd_output_mask(&c, mask), &c);
}

TEST(compressed_pwe_gpio_fan) {
  autd3_command_t c;
  static char req[4096];
  static uint8_t ph[4 * AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < 4 * AUTD3_NUM_TRANSDUCERS; i++) ph[i] = (uint8_t)(i * 29 + 3);
  static const struct {
    const char *what, *fmt;
    autd3_pattern_compression_t f;
    uint8_t bank;
    uint32_t index;
    size_t count;
  } pc[] = {{"compressed full x2", "full", AUTD3_PATTERN_PHASE_FULL, 0, 0, 2},
            {"compressed full x1, bank 1 index 7", "full", AUTD3_PATTERN_PHASE_FULL, 1, 7, 1},
            {"compressed half x4", "half", AUTD3_PATTERN_PHASE_HALF, 0, 1020, 4},
            {"compressed half x3", "half", AUTD3_PATTERN_PHASE_HALF, 1, 3, 3},
            {"compressed half x4 past the bank", "half", AUTD3_PATTERN_PHASE_HALF, 0, 1021, 4}};
  for (size_t k = 0; k < sizeof pc / sizeof pc[0]; k++) {
    int n = snprintf(req, sizeof req, "compressed %u %u %s ", pc[k].bank, (unsigned)pc[k].index, pc[k].fmt);
    hex(req + n, ph, pc[k].count * AUTD3_NUM_TRANSDUCERS);
    silencer_case(pc[k].what, req,
                  autd3_cmd_write_pattern_compressed(&c, pc[k].bank, pc[k].index, pc[k].f, ph, pc[k].count), &c);
  }
  uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE];
  autd3_pulse_width_table_default(table);
  uint8_t raw[2 * AUTD3_PULSE_WIDTH_TABLE_SIZE];
  for (int i = 0; i < AUTD3_PULSE_WIDTH_TABLE_SIZE; i++) {
    raw[2 * i] = (uint8_t)table[i];
    raw[2 * i + 1] = (uint8_t)(table[i] >> 8);
  }
  strcpy(req, "pwe ");
  hex(req + 4, raw, sizeof raw);
  silencer_case("pulse-width table (default)", req, autd3_cmd_pulse_width_table(&c, table), &c);
  table[9] = 512;
  raw[18] = 0;
  raw[19] = 2;
  hex(req + 4, raw, sizeof raw);
  silencer_case("pulse-width table with 512", req, autd3_cmd_pulse_width_table(&c, table), &c);
  silencer_case("force fan on", "force_fan 1", autd3_cmd_force_fan(&c, true), &c);
  silencer_case("force fan off", "force_fan 0", autd3_cmd_force_fan(&c, false), &c);
  bool in[4] = {true, false, true, true};
  silencer_case("GPIO in 1011", "gpio_in 1011", autd3_cmd_emulate_gpio_in(&c, in), &c);
  autd3_gpio_out_t outs[4] = {{AUTD3_GPIO_OUT_PWM_OUT, 17}, {AUTD3_GPIO_OUT_SYS_TIME_EQ, 123456789012ull},
                              {AUTD3_GPIO_OUT_DIRECT, 1}, {AUTD3_GPIO_OUT_MOD_IDX, 300}};
  silencer_case("GPIO out pwm/systime/direct/modidx", "gpio_out 224:17 96:123456789012 240:1 33:300", autd3_cmd_gpio_out(&c, outs),
                &c);
  autd3_gpio_out_t outs2[4] = {{AUTD3_GPIO_OUT_BASE_SIGNAL, 0}, {AUTD3_GPIO_OUT_SYNC_DIFF, 0}, {AUTD3_GPIO_OUT_NONE, 0},
                               {AUTD3_GPIO_OUT_PATTERN_IDX, 65535}};
  silencer_case("GPIO out base/syncdiff/none/patidx", "gpio_out 1:0 112:0 0:0 81:65535", autd3_cmd_gpio_out(&c, outs2), &c);
  /* the default table is the firmware's power-on table (the model uses the same formula) */
  uint16_t def[AUTD3_PULSE_WIDTH_TABLE_SIZE];
  autd3_pulse_width_table_default(def);
  ASSERT_EQ(def[0], 0);
  ASSERT_EQ(def[255], 256);
}

static void stm_case(const char *what, const autd3_pattern_stm_t *s, const char *mode) {
  static char req[80000];
  int n = snprintf(req, sizeof req, "stm %u %u ", s->bank, s->divider);
  if (s->rep == AUTD3_LOOP_INFINITE) n += snprintf(req + n, sizeof req - (size_t)n, "inf ");
  else n += snprintf(req + n, sizeof req - (size_t)n, "%u ", s->rep);
  n += snprintf(req + n, sizeof req - (size_t)n, "%d %s ", s->later ? 1 : 0, mode);
  hex(req + n, (const uint8_t *)s->drives, s->size * AUTD3_NUM_TRANSDUCERS * 2); /* autd3_drive_t is (phase, intensity) bytes */
  result_t ref, ours;
  reference(req, &ref);
  static autd3_command_t cmds[AUTD3_PATTERN_STM_MAX_COMMANDS];
  size_t k = 0;
  autd3_err_t err = autd3_pattern_stm_commands(s, cmds, AUTD3_PATTERN_STM_MAX_COMMANDS, &k);
  ours_many(&ours, err, cmds, k);
  same(what, &ref, &ours);
}

TEST(pattern_stm) {
  ASSERT_EQ(sizeof(autd3_drive_t), 2);
  static autd3_drive_t dr[9 * AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < 9 * AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){(uint8_t)(i * 7 + 1), (uint8_t)(i * 3)};
  autd3_pattern_stm_t s;
  memset(&s, 0, sizeof s);
  s.drives = dr;
  s.size = 5;
  s.divider = 40;
  s.rep = AUTD3_LOOP_INFINITE;
  s.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  stm_case("5 patterns, phase+intensity", &s, "intensity");
  s.bank = 1;
  s.size = 9;
  s.compression = AUTD3_PATTERN_PHASE_HALF;
  stm_case("9 patterns, half phase, bank 1", &s, "half");
  s.size = 3;
  s.compression = AUTD3_PATTERN_PHASE_FULL;
  s.later = true;
  stm_case("3 patterns, full phase, later", &s, "phase");
  s.later = false;
  s.rep = 1;
  s.transition.mode = AUTD3_TRANSITION_SYNC_IDX;
  s.compression = 0;
  s.size = 2;
  stm_case("2 patterns, 2 loops, sync-idx", &s, "intensity");
}

/* Foci STM: the reference's FociStm over its one-device geometry (at the origin, sound speed
 * `c` m/s) against autd3_foci_stm_commands on ours. */
static void foci_case(const char *what, const autd3_foci_stm_t *s, float c) {
  static char req[200000];
  int n = snprintf(req, sizeof req, "foci_stm %u %u ", s->bank, s->divider);
  if (s->rep == AUTD3_LOOP_INFINITE) n += snprintf(req + n, sizeof req - (size_t)n, "inf ");
  else n += snprintf(req + n, sizeof req - (size_t)n, "%u ", s->rep);
  n += snprintf(req + n, sizeof req - (size_t)n, "%d %u %.9g", s->later ? 1 : 0, s->num_foci, (double)c);
  for (size_t i = 0; i < s->size; i++) {
    n += snprintf(req + n, sizeof req - (size_t)n, " %u", s->intensities ? s->intensities[i] : 255);
    for (size_t j = 0; j < s->num_foci; j++) {
      const autd3_control_point_t *p = &s->points[i * s->num_foci + j];
      n += snprintf(req + n, sizeof req - (size_t)n, "/%.9g,%.9g,%.9g,%u", (double)p->pos[0], (double)p->pos[1], (double)p->pos[2],
                    p->phase_offset);
    }
    ASSERT_TRUE((size_t)n < sizeof req);
  }
  result_t ref, ours;
  reference(req, &ref);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  ASSERT_OK(autd3_geometry_set_sound_speed(g, c * 1000.0f));
  static autd3_command_t cmds[AUTD3_FOCI_STM_MAX_COMMANDS];
  size_t k = 0;
  autd3_err_t err = autd3_foci_stm_commands(s, g, 0, cmds, AUTD3_FOCI_STM_MAX_COMMANDS, &k);
  autd3_geometry_free(g);
  ours_many(&ours, err, cmds, k);
  same(what, &ref, &ours);
}

TEST(foci_stm) {
  static autd3_control_point_t pts[240];
  static uint8_t inten[240];
  for (int i = 0; i < 240; i++) {
    const double a = 6.283185307179586 * i / 240.0;
    pts[i] = (autd3_control_point_t){{86.36f + 30.0f * (float)cos(a), 66.04f + 30.0f * (float)sin(a), 150.0f + 0.37f * (float)i},
                                     (uint8_t)(i * 29)};
    inten[i] = (uint8_t)(255 - i);
  }
  autd3_foci_stm_t s;
  memset(&s, 0, sizeof s);
  s.points = pts;
  s.size = 20;
  s.num_foci = 1;
  s.divider = 10;
  s.rep = AUTD3_LOOP_INFINITE;
  s.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  foci_case("circle, 20 steps, fused", &s, 340.0f);
  s.size = 100;
  s.intensities = inten;
  foci_case("100 steps: two writes, config, change", &s, 346.5f);
  s.num_foci = 4;
  s.size = 30;
  s.bank = 1;
  foci_case("30 steps x 4 foci, bank 1", &s, 340.0f);
  s.num_foci = 8;
  s.size = 9;
  s.bank = 0;
  foci_case("9 steps x 8 foci: 72, fused", &s, 340.0f);
  s.num_foci = 2;
  s.size = 5;
  s.rep = 1;
  s.transition.mode = AUTD3_TRANSITION_SYNC_IDX;
  foci_case("5 x 2, 2 loops, sync-idx", &s, 340.0f);
  s.rep = AUTD3_LOOP_INFINITE;
  s.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  s.later = true;
  s.size = 10;
  foci_case("10 x 2, later", &s, 340.0f);
  s.later = false;
  s.num_foci = 1;
  s.size = 2;
  autd3_control_point_t far[2] = {{{-3300.0f, 0.0f, 100.0f}, 0}, {{0.0f, 0.0f, 100.0f}, 0}};
  s.points = far;
  s.intensities = NULL;
  foci_case("x = -3300 mm: refused", &s, 340.0f);
  far[0].pos[0] = 0.0f;
  far[1].pos[2] = -3276.8f; /* the 18-bit minimum exactly */
  foci_case("z = -3276.8 mm: accepted", &s, 340.0f);
  far[1].pos[2] = -3276.82f;
  foci_case("z = -3276.82 mm: rounds past the minimum, refused", &s, 340.0f);
  far[1].pos[2] = -3276.84f;
  foci_case("z = -3276.84 mm: refused", &s, 340.0f);
}
