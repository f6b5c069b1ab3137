/*
 * Making ultrasound: the encoders (src/command), the gain helpers, the FPGA
 * model executing them (src/emulation/device/fpga.c) and the emulator's output-state
 * API, end to end through a client on the in-process emulator.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "client/seqcmd/seqcmd.h" /* autd3__silence_payload: the frame close really sends */
#include "emulation/device/device.h"
#include "harness/test.h"

static autd3_geometry_t *geometry(size_t n) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  return g;
}

/* Expected focus phase of one transducer, computed here independently:
 * −distance × 256 f / c, nearest (halves away from zero), mod 256. */
static uint8_t expected_focus_phase(const autd3_geometry_t *g, size_t dev, size_t tr, const float f[3]) {
  float p[3];
  ASSERT_OK(autd3_geometry_transducer(g, dev, tr, p, NULL));
  double dx = (double)p[0] - f[0], dy = (double)p[1] - f[1], dz = (double)p[2] - f[2];
  double lsb = sqrt(dx * dx + dy * dy + dz * dz) * 256.0 * 40000.0 / (double)autd3_geometry_sound_speed(g);
  return (uint8_t)(-(long)floor(lsb + 0.5) & 0xFF);
}

/* One frame's command for device `dev` straight into a device model. */
static uint8_t run_cmd(autd3_dev_t *d, uint8_t seq, const autd3_command_t *c) {
  uint8_t tx[AUTD3_TX_FRAME_BYTES];
  autd3_tx_encode(tx, seq, c->cmd, c->payload, AUTD3_PAYLOAD_BYTES);
  autd3_dev_recv_frame(d, tx, 0);
  ASSERT_EQ(d->ack, seq);
  return d->data;
}

TEST(null_gain_frame_is_the_close_frame) {
  /* The 0.9 client silences with an all-zero WritePatternFused; our
   * encoder must produce the same bytes for the null gain. */
  autd3_geometry_t *g = geometry(2);
  autd3_frame_buffer_t *buf = calloc(1, sizeof *buf);
  autd3_gain_t null = autd3_gain_null();
  autd3_frame_t f;
  ASSERT_OK(autd3_gain_frame(&null, g, buf, &f));
  uint8_t sil[AUTD3_PAYLOAD_BYTES];
  uint16_t len = 0;
  autd3__silence_payload(sil, &len);
  ASSERT_EQ(buf->num_devices, 2);
  for (int d = 0; d < 2; d++) {
    ASSERT_EQ(f.device_cmds[d], AUTD3_CMD_WRITE_PATTERN_FUSED);
    ASSERT_MEMEQ(f.device_payloads + (size_t)d * AUTD3_PAYLOAD_BYTES, sil, AUTD3_PAYLOAD_BYTES);
  }
  free(buf);
  autd3_geometry_free(g);
}

TEST(write_pattern_fused_layout) {
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){(uint8_t)i, (uint8_t)(255 - i)};
  autd3_command_t c;
  autd3_transition_t t = {AUTD3_TRANSITION_EXT, 0, 0};
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 1, dr, 40, &t));
  ASSERT_EQ(c.cmd, 0x14);
  ASSERT_EQ(c.len, 32 + 498);
  const uint8_t *p = c.payload;
  ASSERT_EQ(p[0], 1);              /* bank */
  ASSERT_EQ(p[1], 1);              /* raw */
  ASSERT_EQ(p[2] | p[3] << 8, 40); /* divider */
  ASSERT_EQ(p[4], 1);              /* size 1 */
  ASSERT_EQ(p[9], 0xF0);           /* transition */
  ASSERT_EQ(p[12] | p[13] << 8, 0xFFFF);
  ASSERT_EQ(p[14] | p[15] << 8, 498);
  ASSERT_EQ(p[32 + 2 * 17], 17);      /* phase of transducer 17 */
  ASSERT_EQ(p[32 + 2 * 17 + 1], 238); /* its intensity */
}

TEST(range_errors_are_errors) {
  autd3_command_t c;
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS] = {{0, 0}};
  ASSERT_ERR(autd3_cmd_write_pattern_fused(&c, 2, dr, 0xFFFF, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "bank 2");
  ASSERT_ERR(autd3_cmd_write_pattern_fused(&c, 0, dr, 0, NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3_transition_t sync = {AUTD3_TRANSITION_SYNC_IDX, 0, 0};
  ASSERT_ERR(autd3_cmd_write_pattern_fused(&c, 0, dr, 1, &sync), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "finite loops");
  ASSERT_ERR(autd3_cmd_write_pattern(&c, 0, 0, dr, 309), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_write_pattern(&c, 0, 262144 - 10, dr, 11), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_OK(autd3_cmd_write_pattern(&c, 0, 262144 - 10, dr, 10));
  ASSERT_ERR(autd3_cmd_config_pattern(&c, 0, 1, 1025, AUTD3_LOOP_INFINITE), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_config_pattern(&c, 0, 1, 1, 3), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_silencer_fixed_update_rate(&c, 0, 1), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_silencer_fixed_completion_time(&c, 30000, 25000, false), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "multiple of 25000");
  ASSERT_ERR(autd3_cmd_silencer_fixed_completion_time(&c, 0, 25000, false), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_silencer_fixed_completion_time(&c, 25000ull * 65536, 25000, false), AUTD3_E_INVALID_ARGUMENT);
  autd3_geometry_t *g = geometry(1);
  autd3_gain_t bad = autd3_gain_focus(NAN, 0, 0);
  autd3_drive_t out[AUTD3_NUM_TRANSDUCERS];
  ASSERT_ERR(autd3_gain_calc(&bad, g, 0, out), AUTD3_E_INVALID_ARGUMENT);
  bad = autd3_gain_plane(0, 0, 0);
  ASSERT_ERR(autd3_gain_calc(&bad, g, 0, out), AUTD3_E_INVALID_ARGUMENT);
  autd3_gain_t ok = autd3_gain_focus(0, 0, 150);
  ASSERT_ERR(autd3_gain_calc(&ok, g, 1, out), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_geometry_set_sound_speed(g, 0.0f), AUTD3_E_INVALID_ARGUMENT);
  autd3_geometry_free(g);
}

TEST(silencer_encodings_match_the_reference_defaults) {
  autd3_command_t c;
  ASSERT_OK(autd3_cmd_silencer_default(&c));
  static const uint8_t def[10] = {0x02, 0, 0x00, 0x01, 0x00, 0x01, 10, 0, 40, 0};
  ASSERT_EQ(c.cmd, 0x30);
  ASSERT_MEMEQ(c.payload, def, sizeof def);
  ASSERT_OK(autd3_cmd_silencer_fixed_update_rate(&c, 7, 9));
  static const uint8_t rate[10] = {0x01, 0, 7, 0, 9, 0, 10, 0, 40, 0};
  ASSERT_MEMEQ(c.payload, rate, sizeof rate);
}

TEST(focus_phases_follow_the_geometry) {
  const float f[3] = {90.0f, 70.0f, 150.0f};
  autd3_device_pose_t poses[2] = {autd3_device_pose_at(0, 0, 0), autd3_device_pose_at(0, 0, 0)};
  /* device 1 turned 90° about z and moved: a geometry that is not a row */
  poses[1].pos[0] = 300.0f;
  poses[1].rot[0] = 0.70710678f;
  poses[1].rot[3] = 0.70710678f;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, poses, &g));
  autd3_gain_t focus = autd3_gain_focus(f[0], f[1], f[2]);
  autd3_drive_t out[AUTD3_NUM_TRANSDUCERS];
  for (size_t dev = 0; dev < 2; dev++) {
    ASSERT_OK(autd3_gain_calc(&focus, g, dev, out));
    for (size_t t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
      int diff = abs((int)out[t].phase - (int)expected_focus_phase(g, dev, t, f));
      ASSERT_TRUE(diff <= 1 || diff == 255); /* float rounding of positions may move a half-LSB case */
      ASSERT_EQ(out[t].intensity, 255);
    }
  }
  /* the sound speed is the geometry's */
  ASSERT_OK(autd3_geometry_set_sound_speed(g, 346000.0f));
  autd3_drive_t out2[AUTD3_NUM_TRANSDUCERS];
  ASSERT_OK(autd3_gain_calc(&focus, g, 1, out2));
  ASSERT_EQ(out2[17].phase, expected_focus_phase(g, 1, 17, f));
  autd3_geometry_free(g);
}

TEST(plane_and_bessel_are_in_step) {
  autd3_geometry_t *g = geometry(1);
  autd3_drive_t out[AUTD3_NUM_TRANSDUCERS];
  /* A plane wave along +z: every transducer (all at z = 0) in phase. */
  autd3_gain_t plane = autd3_gain_plane(0, 0, 1);
  ASSERT_OK(autd3_gain_calc(&plane, g, 0, out));
  for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) ASSERT_EQ(out[t].phase, 0);
  /* A Bessel beam along +z from the array's centre: equal phase on a ring. */
  float c[3], p[3];
  ASSERT_OK(autd3_geometry_transducer(g, 0, 0, c, NULL));
  autd3_gain_t bessel = autd3_gain_bessel(c[0], c[1], 0, 0, 0, 1, 0.3f);
  ASSERT_OK(autd3_gain_calc(&bessel, g, 0, out));
  ASSERT_OK(autd3_geometry_transducer(g, 0, 1, p, NULL));
  ASSERT_EQ(out[0].phase, 0);
  /* transducer 1 at ρ = pitch: −k·sin θ·ρ */
  double lsb = sin(0.3) * AUTD3_TRANSDUCER_PITCH_MM * 256.0 * 40000.0 / 340000.0;
  ASSERT_EQ(out[1].phase, (uint8_t)(-(long)floor(lsb + 0.5) & 0xFF));
  autd3_gain_t off = autd3_gain_null();
  ASSERT_OK(autd3_gain_calc(&off, g, 0, out));
  for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) ASSERT_EQ(out[t].intensity, 0);
  autd3_geometry_free(g);
}

TEST(device_model_executes_pattern_and_latches_errors) {
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  autd3_dev_t d;
  autd3_dev_init(&d, NULL, &ideal);
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){(uint8_t)(3 * i), 200};
  autd3_command_t c;
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 0, dr, 0xFFFF, NULL));
  ASSERT_EQ(run_cmd(&d, 0, &c), 0);
  autd3_output_state_t st;
  autd3_dev_output_state(&d, &st);
  ASSERT_EQ(st.phase[17], 51);
  ASSERT_EQ(st.intensity[17], 200);
  ASSERT_EQ(st.pattern_size, 1);
  ASSERT_EQ(st.fpga_state, 0x08);
  /* Phase correction adds; the output mask silences. */
  uint8_t corr[AUTD3_NUM_TRANSDUCERS] = {0};
  corr[17] = 250;
  ASSERT_OK(autd3_cmd_phase_correction(&c, corr));
  ASSERT_EQ(run_cmd(&d, 1, &c), 0);
  bool mask[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) mask[i] = i != 18;
  ASSERT_OK(autd3_cmd_output_mask(&c, mask));
  ASSERT_EQ(run_cmd(&d, 2, &c), 0);
  autd3_dev_output_state(&d, &st);
  ASSERT_EQ(st.phase[17], (uint8_t)(51 + 250));
  ASSERT_EQ(st.intensity[18], 0);
  /* An invalid payload (size 2 in a raw fused write) is refused, latched,
   * and changes nothing. */
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 1, dr, 0xFFFF, NULL));
  c.payload[4] = 2;
  ASSERT_EQ(run_cmd(&d, 3, &c), AUTD3_DEV_ERR_INVALID_PAYLOAD);
  autd3_dev_output_state(&d, &st);
  ASSERT_EQ(st.error_detail, AUTD3_DEV_ERR_INVALID_PAYLOAD);
  ASSERT_EQ(st.pattern_bank, 0);
  ASSERT_EQ(st.intensity[17], 200);
  /* Strict silencer (1 ms phase completion = 40 steps) refuses a faster pattern divider. */
  ASSERT_OK(autd3_cmd_silencer_default(&c));
  ASSERT_EQ(run_cmd(&d, 4, &c), 0);
  ASSERT_OK(autd3_cmd_write_pattern_fused(&c, 1, dr, 20, NULL));
  ASSERT_EQ(run_cmd(&d, 5, &c), AUTD3_DEV_ERR_INVALID_SILENCER_SETTING);
  /* Clear brings the boot state back. */
  autd3_command_t clear = {.cmd = AUTD3_CMD_CLEAR};
  ASSERT_EQ(run_cmd(&d, 6, &clear), 0);
  autd3_dev_output_state(&d, &st);
  ASSERT_EQ(st.intensity[17], 0);
  ASSERT_EQ(st.phase[17], 0);
  ASSERT_EQ(st.silencer_completion_steps_phase, 40);
}

/* A focus computed here (autd3_gain_calc, world frame, doubles) and the same focus as a foci STM
 * that the device's FPGA computes (device frame, 0.025 mm integers, 8-bit tables) must agree to
 * the tables' precision on every transducer, also on a moved and turned device: the sign of the
 * phase, the world-to-device transform and the sound-speed word are all in this. */
TEST(gain_focus_agrees_with_the_fpga_foci) {
  autd3_device_pose_t poses[2] = {autd3_device_pose_at(100.0f, 20.0f, 0.0f), autd3_device_pose_at(0, 0, 0)};
  poses[1].pos[0] = 400.0f;
  poses[1].rot[0] = 0.70710678f; /* 90° about z */
  poses[1].rot[3] = 0.70710678f;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, poses, &g));
  ASSERT_OK(autd3_geometry_set_sound_speed(g, 343000.0f));
  const autd3_control_point_t pts[2] = {{{250.0f, 80.0f, 120.0f}, 0}, {{250.0f, 80.0f, 120.0f}, 0}};
  autd3_foci_stm_t s;
  memset(&s, 0, sizeof s);
  s.points = pts;
  s.size = 2;
  s.num_foci = 1;
  s.divider = 0xFFFF;
  s.rep = AUTD3_LOOP_INFINITE;
  s.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  autd3_gain_t focus = autd3_gain_focus(250.0f, 80.0f, 120.0f);
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  for (size_t dev = 0; dev < 2; dev++) {
    autd3_dev_t d;
    autd3_dev_init(&d, NULL, &ideal);
    autd3_command_t c[4];
    size_t n = 0;
    ASSERT_OK(autd3_foci_stm_commands(&s, g, dev, c, 4, &n));
    ASSERT_EQ(n, 1u);
    ASSERT_EQ(run_cmd(&d, 0, &c[0]), 0);
    autd3_output_state_t st;
    autd3_dev_output_state(&d, &st);
    ASSERT_EQ(st.pattern_emission_type, 0);
    autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
    ASSERT_OK(autd3_gain_calc(&focus, g, dev, dr));
    int worst = 0;
    for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
      int diff = abs((int)(int8_t)(uint8_t)(st.phase[t] - dr[t].phase));
      if (diff > worst) worst = diff;
      ASSERT_EQ(st.intensity[t], 255);
    }
    fprintf(stderr, "device %zu: largest difference %d/256\n", dev, worst);
    ASSERT_TRUE(worst <= 2);
  }
  /* bad input is refused with a message, never clamped */
  autd3_command_t c[4];
  size_t n = 0;
  s.num_foci = 0;
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 0, c, 4, &n), AUTD3_E_INVALID_ARGUMENT);
  s.num_foci = 9;
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 0, c, 4, &n), AUTD3_E_INVALID_ARGUMENT);
  s.num_foci = 1;
  s.size = 1;
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 0, c, 4, &n), AUTD3_E_INVALID_ARGUMENT);
  s.size = 2;
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 2, c, 4, &n), AUTD3_E_INVALID_ARGUMENT); /* no device 2 */
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 0, c, 0, &n), AUTD3_E_INVALID_ARGUMENT); /* no room */
  s.divider = 0;
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 0, c, 4, &n), AUTD3_E_INVALID_ARGUMENT);
  s.divider = 1;
  ASSERT_OK(autd3_geometry_set_sound_speed(g, 1100000.0f)); /* 1100 m/s: past the 16-bit word */
  ASSERT_EQ(autd3_foci_stm_commands(&s, g, 0, c, 4, &n), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(autd3_last_error(), "sound speed") != NULL);
  autd3_geometry_free(g);
}

TEST(stm_config_and_bank_change) {
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  autd3_dev_t d;
  autd3_dev_init(&d, NULL, &ideal);
  autd3_drive_t dr[AUTD3_NUM_TRANSDUCERS];
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) dr[i] = (autd3_drive_t){7, 9};
  autd3_command_t c;
  uint8_t seq = 0;
  /* two patterns into bank 1, words 0 and 256 */
  ASSERT_OK(autd3_cmd_write_pattern(&c, 1, 0, dr, AUTD3_NUM_TRANSDUCERS));
  ASSERT_EQ(run_cmd(&d, seq++, &c), 0);
  ASSERT_OK(autd3_cmd_write_pattern(&c, 1, 256, dr, AUTD3_NUM_TRANSDUCERS));
  ASSERT_EQ(run_cmd(&d, seq++, &c), 0);
  ASSERT_OK(autd3_cmd_config_pattern(&c, 1, 100, 2, AUTD3_LOOP_INFINITE));
  ASSERT_EQ(run_cmd(&d, seq++, &c), 0);
  autd3_output_state_t st;
  autd3_dev_output_state(&d, &st);
  ASSERT_EQ(st.pattern_bank, 0); /* the requested bank is still 0 */
  autd3_transition_t imm = {AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 1, &imm));
  ASSERT_EQ(run_cmd(&d, seq++, &c), 0);
  autd3_dev_output_state(&d, &st);
  ASSERT_EQ(st.pattern_bank, 1);
  ASSERT_EQ(st.pattern_size, 2);
  ASSERT_EQ(st.pattern_divider, 100);
  ASSERT_EQ(st.phase[100], 7);
  ASSERT_EQ(st.fpga_state & 0x0C, 0x04); /* bank 1, not pattern mode */
  /* a SyncIdx transition for an infinite loop: InvalidTransitionMode */
  autd3_transition_t sync = {AUTD3_TRANSITION_SYNC_IDX, 0, 0};
  ASSERT_OK(autd3_cmd_change_pattern_bank(&c, 0, &sync));
  ASSERT_EQ(run_cmd(&d, seq++, &c), AUTD3_DEV_ERR_INVALID_TRANSITION_MODE);
}

/* End to end: a client on the in-process emulator sends a focus; every
 * device's transducers get the helper's phases; close leaves all silent. */
TEST(emulator_focus_then_close_leaves_every_device_silent) {
  autd3_geometry_t *g = geometry(2);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = 500000;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  autd3_emulator_outputs_t *outs = NULL;
  ASSERT_OK(autd3_emulator_outputs(autd3_client_link(c), &outs));

  const float f[3] = {150.0f, 70.0f, 150.0f};
  autd3_gain_t focus = autd3_gain_focus(f[0], f[1], f[2]);
  autd3_frame_buffer_t *buf = calloc(1, sizeof *buf);
  autd3_frame_t fr;
  ASSERT_OK(autd3_gain_frame(&focus, g, buf, &fr));
  ASSERT_OK(autd3_client_send_checked(c, &fr, NULL));

  autd3_output_state_t st;
  ASSERT_OK(autd3_emulator_output(autd3_client_link(c), 1, &st));
  ASSERT_EQ(st.error_detail, 0);
  autd3_drive_t expect[AUTD3_NUM_TRANSDUCERS];
  ASSERT_OK(autd3_gain_calc(&focus, g, 1, expect));
  ASSERT_EQ(st.phase[17], expect[17].phase);
  int diff = abs((int)st.phase[17] - (int)expected_focus_phase(g, 1, 17, f));
  ASSERT_TRUE(diff <= 1 || diff == 255);
  for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
    ASSERT_EQ(st.phase[t], expect[t].phase);
    ASSERT_EQ(st.intensity[t], 255);
  }
  ASSERT_ERR(autd3_emulator_output(autd3_client_link(c), 2, &st), AUTD3_E_INVALID_ARGUMENT);

  ASSERT_OK(autd3_client_close(c));
  for (uint16_t d = 0; d < 2; d++) {
    ASSERT_OK(autd3_emulator_outputs_read(outs, d, &st));
    for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) ASSERT_EQ(st.intensity[t], 0);
    ASSERT_EQ(st.error_detail, 0);
  }
  autd3_emulator_outputs_release(outs);
  free(buf);
  autd3_geometry_free(g);
}

TEST(modulation_helpers_and_split) {
  static uint8_t buf[65536];
  autd3_modulation_t m;
  /* 150 Hz at 4 kHz sampling: 80 samples hold 3 whole periods */
  ASSERT_OK(autd3_modulation_sine(150.0f, 10, 255, 127, buf, sizeof buf, &m));
  ASSERT_EQ(m.size, 80);
  ASSERT_EQ(buf[0], 127);
  ASSERT_EQ(m.divider, 10);
  int lo = 255, hi = 0;
  for (size_t i = 0; i < m.size; i++) {
    lo = buf[i] < lo ? buf[i] : lo;
    hi = buf[i] > hi ? buf[i] : hi;
  }
  ASSERT_LE(lo, 1);
  ASSERT_GE(hi, 254);
  ASSERT_ERR(autd3_modulation_sine(2500.0f, 10, 255, 127, buf, sizeof buf, &m), AUTD3_E_INVALID_ARGUMENT); /* above fs/2 */
  ASSERT_ERR(autd3_modulation_sine(150.0f, 10, 255, 200, buf, sizeof buf, &m), AUTD3_E_INVALID_ARGUMENT); /* leaves 0..255 */
  ASSERT_ERR(autd3_modulation_sine(151.3f, 10, 255, 127, buf, 100, &m), AUTD3_E_INVALID_ARGUMENT);        /* no period in 100 */
  ASSERT_CONTAINS(autd3_last_error(), "whole period");
  uint8_t two[2];
  ASSERT_OK(autd3_modulation_static(90, two, &m));
  autd3_command_t cmds[AUTD3_MODULATION_MAX_COMMANDS];
  size_t n = 0;
  ASSERT_OK(autd3_modulation_commands(&m, cmds, 1, &n));
  ASSERT_EQ(n, 1);
  ASSERT_EQ(cmds[0].cmd, AUTD3_CMD_WRITE_MODULATION_FUSED);
  static const uint8_t fused[] = {0, 0xFF, 0xFF, 0xFF, 2, 0, 0, 0, 0xFF, 0xFF, 2, 0};
  ASSERT_MEMEQ(cmds[0].payload, fused, sizeof fused);
  ASSERT_EQ(cmds[0].payload[24], 90);
  /* the longest: 65536 samples = 107 frames of 616 + config + change */
  memset(buf, 1, sizeof buf);
  m.data = buf;
  m.size = 65536;
  ASSERT_OK(autd3_modulation_commands(&m, cmds, AUTD3_MODULATION_MAX_COMMANDS, &n));
  ASSERT_EQ(n, AUTD3_MODULATION_MAX_COMMANDS);
  ASSERT_EQ(cmds[107].cmd, AUTD3_CMD_CONFIG_MODULATION);
  ASSERT_EQ(cmds[108].cmd, AUTD3_CMD_CHANGE_MODULATION_BANK);
  ASSERT_ERR(autd3_modulation_commands(&m, cmds, 108, &n), AUTD3_E_INVALID_ARGUMENT);
  m.size = 65537;
  ASSERT_ERR(autd3_modulation_commands(&m, cmds, AUTD3_MODULATION_MAX_COMMANDS, &n), AUTD3_E_INVALID_ARGUMENT);
  /* a finite loop needs a finite-loop transition */
  m.size = 100;
  m.rep = 3;
  ASSERT_ERR(autd3_modulation_commands(&m, cmds, AUTD3_MODULATION_MAX_COMMANDS, &n), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "infinite loops");
}

TEST(misc_encoders_refuse_out_of_range) {
  autd3_command_t c;
  autd3_gpio_out_t outs[4] = {{AUTD3_GPIO_OUT_PWM_OUT, 249}, {AUTD3_GPIO_OUT_NONE, 0}, {AUTD3_GPIO_OUT_NONE, 0}, {AUTD3_GPIO_OUT_NONE, 0}};
  ASSERT_ERR(autd3_cmd_gpio_out(&c, outs), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "0..248");
  outs[0] = (autd3_gpio_out_t){AUTD3_GPIO_OUT_DIRECT, 2};
  ASSERT_ERR(autd3_cmd_gpio_out(&c, outs), AUTD3_E_INVALID_ARGUMENT);
  outs[0] = (autd3_gpio_out_t){AUTD3_GPIO_OUT_THERMO, 1}; /* a type without a parameter */
  ASSERT_ERR(autd3_cmd_gpio_out(&c, outs), AUTD3_E_INVALID_ARGUMENT);
  outs[0] = (autd3_gpio_out_t){(autd3_gpio_out_type_t)0x99, 0};
  ASSERT_ERR(autd3_cmd_gpio_out(&c, outs), AUTD3_E_INVALID_ARGUMENT);
  uint8_t ph[3 * AUTD3_NUM_TRANSDUCERS] = {0};
  ASSERT_ERR(autd3_cmd_write_pattern_compressed(&c, 0, 0, AUTD3_PATTERN_PHASE_FULL, ph, 3), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_write_pattern_compressed(&c, 0, 0, AUTD3_PATTERN_PHASE_HALF, ph, 0), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_cmd_write_pattern_compressed(&c, 2, 0, AUTD3_PATTERN_PHASE_HALF, ph, 1), AUTD3_E_INVALID_ARGUMENT);
  uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE];
  autd3_pulse_width_table_default(table);
  ASSERT_OK(autd3_cmd_pulse_width_table(&c, table));
  table[3] = 600;
  ASSERT_ERR(autd3_cmd_pulse_width_table(&c, table), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "entry 3 = 600");
  /* pattern STM: 2..1024 patterns, enough room for the commands */
  static autd3_drive_t dr[3 * AUTD3_NUM_TRANSDUCERS];
  autd3_pattern_stm_t s = {.drives = dr, .size = 1, .divider = 10, .rep = AUTD3_LOOP_INFINITE};
  s.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  autd3_command_t cmds[5];
  size_t n = 0;
  ASSERT_ERR(autd3_pattern_stm_commands(&s, cmds, 5, &n), AUTD3_E_INVALID_ARGUMENT);
  s.size = 3;
  ASSERT_ERR(autd3_pattern_stm_commands(&s, cmds, 4, &n), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "needs 5 commands");
  ASSERT_OK(autd3_pattern_stm_commands(&s, cmds, 5, &n));
  ASSERT_EQ(n, 5);
  ASSERT_EQ(cmds[2].payload[2] | cmds[2].payload[3] << 8 | cmds[2].payload[4] << 16, 512); /* index 2 at word 512 */
}

/* A reader hammering the output state while frames change it never sees a
 * torn state: every copy is one whole uniform pattern (all 249 phases equal),
 * and after each acknowledged frame the state read is that frame's. */
typedef struct {
  autd3_link_t *link;
  atomic_bool stop;
  atomic_int torn, reads;
} reader_t;

static void *reader(void *arg) {
  reader_t *r = arg;
  autd3_output_state_t st;
  while (!atomic_load(&r->stop)) {
    if (autd3_emulator_output(r->link, 0, &st) != AUTD3_OK) continue;
    atomic_fetch_add(&r->reads, 1);
    for (int t = 1; t < AUTD3_NUM_TRANSDUCERS; t++)
      if (st.phase[t] != st.phase[0] || st.intensity[t] != st.intensity[0]) {
        atomic_fetch_add(&r->torn, 1);
        break;
      }
  }
  return NULL;
}

TEST(output_state_is_never_torn_and_follows_acks) {
  autd3_geometry_t *g = geometry(1);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = 200000;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  static reader_t r;
  r.link = autd3_client_link(c);
  atomic_init(&r.stop, false);
  atomic_init(&r.torn, 0);
  atomic_init(&r.reads, 0);
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&th[i], NULL, reader, &r), 0);
  autd3_frame_buffer_t *buf = calloc(1, sizeof *buf);
  for (int k = 1; k <= 60; k++) {
    autd3_gain_t u = autd3_gain_uniform((uint8_t)k, (uint8_t)(255 - k));
    autd3_frame_t fr;
    ASSERT_OK(autd3_gain_frame(&u, g, buf, &fr));
    ASSERT_OK(autd3_client_send_checked(c, &fr, NULL));
    autd3_output_state_t st;
    ASSERT_OK(autd3_emulator_output(r.link, 0, &st));
    ASSERT_EQ(st.phase[100], k);
    ASSERT_EQ(st.intensity[100], 255 - k);
  }
  atomic_store(&r.stop, true);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  ASSERT_EQ(atomic_load(&r.torn), 0);
  ASSERT_GT(atomic_load(&r.reads), 0);
  ASSERT_OK(autd3_client_close(c));
  free(buf);
  autd3_geometry_free(g);
}

/* Random payloads for every output command: the model never reads past the
 * payload, and a refused command leaves the output state unchanged. */
TEST(fpga_model_random_payloads) {
  static const uint8_t cmds[] = {AUTD3_CMD_WRITE_PATTERN_BUFFER, AUTD3_CMD_CONFIG_PATTERN, AUTD3_CMD_CHANGE_PATTERN_BANK,
                                 AUTD3_CMD_WRITE_PATTERN_COMPRESSED, AUTD3_CMD_WRITE_PATTERN_FUSED, AUTD3_CMD_WRITE_MODULATION_BUFFER,
                                 AUTD3_CMD_CONFIG_MODULATION, AUTD3_CMD_CHANGE_MODULATION_BANK, AUTD3_CMD_WRITE_MODULATION_FUSED,
                                 AUTD3_CMD_SET_SILENCER, AUTD3_CMD_SET_PHASE_CORRECTION, AUTD3_CMD_SET_OUTPUT_MASK,
                                 AUTD3_CMD_SET_PULSE_WIDTH_TABLE, AUTD3_CMD_EMULATE_GPIO_IN, AUTD3_CMD_SET_GPIO_OUT,
                                 AUTD3_CMD_FORCE_FAN};
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  static autd3_dev_t d;
  autd3_dev_init(&d, NULL, &ideal);
  uint32_t x = 12345;
  static autd3_output_state_t before, after;
  uint8_t seq = 0;
  int refused = 0;
  for (int i = 0; i < 20000; i++) {
    uint8_t pl[AUTD3_PAYLOAD_BYTES];
    for (int b = 0; b < AUTD3_PAYLOAD_BYTES; b++) {
      x = x * 1103515245u + 12345u;
      pl[b] = (uint8_t)(x >> 16);
    }
    /* small header values often, so that valid commands happen too */
    if (x & 0x100) memset(pl, 0, 16);
    if (x & 0x200) pl[0] &= 1;
    uint8_t cmd = cmds[(x >> 20) % sizeof cmds];
    uint8_t tx[AUTD3_TX_FRAME_BYTES];
    autd3_tx_encode(tx, seq, cmd, pl, sizeof pl);
    autd3_dev_output_state(&d, &before);
    autd3_dev_recv_frame(&d, tx, 0);
    ASSERT_EQ(d.ack, seq);
    seq++;
    if (d.data != 0) {
      refused++;
      autd3_dev_output_state(&d, &after);
      after.error_detail = before.error_detail; /* the latched code is the one thing that changes */
      ASSERT_MEMEQ(&before, &after, sizeof before);
    }
  }
  ASSERT_GT(refused, 0);
  ASSERT_LT(refused, 20000);
}
