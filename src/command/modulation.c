/*
 * Modulation: encoders of the four modulation commands, the split of a
 * modulation into frames as the 0.9 client does it (crate autd3-rs 0.9.0
 * src/commands/modulation.rs, write_modulation_buffer.rs), and the static and
 * sine helpers (include/autd3/command.h). Layouts: crate autd3-cpu-wire 0.9.0
 * src/payload (write_mod.rs, config_mod.rs, change_mod_bank.rs,
 * write_mod_fused.rs); docs/commands.md.
 */
#include <math.h>
#include <string.h>

#include "autd3/command.h"
#include "autd3/link_driver.h" /* autd3_set_error */
#include "command/encode.h"

#define MOD_SAMPLES 65536u
#define WM_HEADER 8u  /* WriteModPayload */
#define MF_HEADER 24u /* WriteModulationFusedPayload */
#define WRITE_MAX (AUTD3_PAYLOAD_BYTES - WM_HEADER) /* 616 samples per WriteModulationBuffer */
#define FUSED_MAX (AUTD3_PAYLOAD_BYTES - MF_HEADER) /* 600 samples in a WriteModulationFused */
#define ULTRASOUND_FREQ_HZ 40000.0
#define PI_ 3.14159265358979323846 /* M_PI is POSIX, not C11 */

static autd3_err_t start(autd3_command_t *out, uint8_t cmd, uint8_t bank, const char *fn) {
  autd3_err_t err = autd3__cmd_start(out, cmd, fn);
  return err != AUTD3_OK ? err : autd3__cmd_check_bank(bank, fn);
}

autd3_err_t autd3_cmd_write_modulation(autd3_command_t *out, uint8_t bank, uint32_t offset, const uint8_t *data, size_t n) {
  static const char fn[] = "autd3_cmd_write_modulation";
  autd3_err_t err = start(out, AUTD3_CMD_WRITE_MODULATION_BUFFER, bank, fn);
  if (err != AUTD3_OK) return err;
  if (data == NULL && n > 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: data is NULL", fn);
  if (n > WRITE_MAX) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %zu samples: at most %u per frame", fn, n, WRITE_MAX);
  if (offset % 2 != 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: offset %u: must be even", fn, (unsigned)offset);
  if (offset > MOD_SAMPLES || n > MOD_SAMPLES - offset)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: samples %u..%zu: a bank holds %u", fn, (unsigned)offset, offset + n,
                           MOD_SAMPLES);
  out->payload[0] = bank;
  autd3__put32(out->payload + 2, offset);
  autd3__put16(out->payload + 6, (uint16_t)n);
  if (n > 0) memcpy(out->payload + WM_HEADER, data, n);
  out->len = (uint16_t)(WM_HEADER + n);
  return AUTD3_OK;
}

static autd3_err_t check_config(uint16_t divider, uint32_t size, const char *fn) {
  if (divider == 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: divider 0: must be 1..65535", fn);
  if (size < 2 || size > MOD_SAMPLES)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: size %u: must be 2..%u", fn, (unsigned)size, MOD_SAMPLES);
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_config_modulation(autd3_command_t *out, uint8_t bank, uint16_t divider, uint32_t size, uint16_t rep) {
  static const char fn[] = "autd3_cmd_config_modulation";
  autd3_err_t err = start(out, AUTD3_CMD_CONFIG_MODULATION, bank, fn);
  if (err != AUTD3_OK) return err;
  if ((err = check_config(divider, size, fn)) != AUTD3_OK) return err;
  out->payload[0] = bank;
  autd3__put16(out->payload + 2, divider);
  autd3__put32(out->payload + 4, size);
  autd3__put16(out->payload + 8, rep);
  out->len = 10;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_change_modulation_bank(autd3_command_t *out, uint8_t bank, const autd3_transition_t *transition) {
  return autd3__cmd_change_bank(out, AUTD3_CMD_CHANGE_MODULATION_BANK, bank, transition, "autd3_cmd_change_modulation_bank");
}

autd3_err_t autd3_cmd_write_modulation_fused(autd3_command_t *out, uint8_t bank, const uint8_t *data, size_t n, uint16_t divider,
                                             uint16_t rep, const autd3_transition_t *transition) {
  static const char fn[] = "autd3_cmd_write_modulation_fused";
  autd3_err_t err = start(out, AUTD3_CMD_WRITE_MODULATION_FUSED, bank, fn);
  if (err != AUTD3_OK) return err;
  if (data == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: data is NULL", fn);
  if (n > FUSED_MAX)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %zu samples: at most %u in one frame (autd3_modulation_commands splits)", fn, n,
                           FUSED_MAX);
  if ((err = check_config(divider, (uint32_t)n, fn)) != AUTD3_OK) return err;
  autd3_transition_t imm = {AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  const autd3_transition_t *t = transition ? transition : &imm;
  if ((err = autd3__check_transition(t, rep, fn)) != AUTD3_OK) return err;
  uint8_t *p = out->payload;
  p[0] = bank;
  p[1] = (uint8_t)t->mode;
  autd3__put16(p + 2, divider);
  autd3__put32(p + 4, (uint32_t)n);
  autd3__put16(p + 8, rep);
  autd3__put16(p + 10, (uint16_t)n);
  autd3__put64(p + 12, t->value);
  autd3__put32(p + 20, t->margin_ns);
  memcpy(p + MF_HEADER, data, n);
  out->len = (uint16_t)(MF_HEADER + n);
  return AUTD3_OK;
}

autd3_err_t autd3_modulation_commands(const autd3_modulation_t *m, autd3_command_t *out, size_t cap, size_t *n) {
  static const char fn[] = "autd3_modulation_commands";
  if (m == NULL || out == NULL || n == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: NULL argument", fn);
  *n = 0;
  if (m->data == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: data is NULL", fn);
  autd3_err_t err = check_config(m->divider, m->size > MOD_SAMPLES ? MOD_SAMPLES + 1 : (uint32_t)m->size, fn);
  if (err != AUTD3_OK) return err;
  if ((err = autd3__cmd_check_bank(m->bank, fn)) != AUTD3_OK) return err;
  if (!m->later && (err = autd3__check_transition(&m->transition, m->rep, fn)) != AUTD3_OK) return err;
  if (!m->later && m->size <= FUSED_MAX) {
    if (cap < 1) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: cap %zu: this modulation needs 1 command", fn, cap);
    if ((err = autd3_cmd_write_modulation_fused(&out[0], m->bank, m->data, m->size, m->divider, m->rep, &m->transition)) != AUTD3_OK)
      return err;
    *n = 1;
    return AUTD3_OK;
  }
  size_t chunks = (m->size + WRITE_MAX - 1) / WRITE_MAX;
  size_t need = chunks + 1 + (m->later ? 0 : 1);
  if (cap < need) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: cap %zu: this modulation needs %zu commands", fn, cap, need);
  size_t k = 0;
  for (size_t i = 0; i < chunks; i++) {
    size_t off = i * WRITE_MAX, len = m->size - off < WRITE_MAX ? m->size - off : WRITE_MAX;
    if ((err = autd3_cmd_write_modulation(&out[k++], m->bank, (uint32_t)off, m->data + off, len)) != AUTD3_OK) return err;
  }
  if ((err = autd3_cmd_config_modulation(&out[k++], m->bank, m->divider, (uint32_t)m->size, m->rep)) != AUTD3_OK) return err;
  if (!m->later && (err = autd3_cmd_change_modulation_bank(&out[k++], m->bank, &m->transition)) != AUTD3_OK) return err;
  *n = k;
  return AUTD3_OK;
}

static autd3_modulation_t modulation_default(const uint8_t *data, size_t size, uint16_t divider) {
  autd3_modulation_t m;
  memset(&m, 0, sizeof m);
  m.data = data;
  m.size = size;
  m.divider = divider;
  m.rep = AUTD3_LOOP_INFINITE;
  m.transition.mode = AUTD3_TRANSITION_IMMEDIATE;
  return m;
}

autd3_err_t autd3_modulation_static(uint8_t intensity, uint8_t buf[2], autd3_modulation_t *out) {
  if (buf == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_modulation_static: NULL argument");
  buf[0] = buf[1] = intensity;
  *out = modulation_default(buf, 2, 0xFFFF);
  return AUTD3_OK;
}

autd3_err_t autd3_modulation_sine(float freq_hz, uint16_t divider, uint8_t amplitude, uint8_t offset, uint8_t *buf, size_t cap,
                                  autd3_modulation_t *out) {
  static const char fn[] = "autd3_modulation_sine";
  if (buf == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: NULL argument", fn);
  if (divider == 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: divider 0: must be 1..65535", fn);
  if (cap > MOD_SAMPLES) cap = MOD_SAMPLES; /* a bank holds no more */
  if (cap < 2) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: cap %zu: at least 2 samples", fn, cap);
  const double fs = ULTRASOUND_FREQ_HZ / divider, f = freq_hz;
  if (!isfinite(f) || !(f > 0.0) || f > fs / 2.0)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %g Hz: must be > 0 and <= %g Hz (half the sampling rate %g Hz)", fn, f,
                           fs / 2.0, fs);
  double half = amplitude / 2.0;
  if (offset - half < -0.5 || offset + half >= 255.5)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: offset %u ± amplitude/2 %g leaves 0..255", fn, (unsigned)offset, half);
  /* The shortest n with a whole number of periods: n·f/fs an integer. */
  size_t n = 0;
  for (size_t c = 2; c <= cap; c++) {
    double k = (double)c * f / fs;
    if (k >= 1.0 && fabs(k - floor(k + 0.5)) < 1e-6) {
      n = c;
      break;
    }
  }
  if (n == 0) {
    size_t near = (size_t)floor(fs / f + 0.5);
    if (near < 2) near = 2;
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT,
                           "%s: %g Hz has no whole period within %zu samples at %g Hz sampling (e.g. %g Hz has %zu)", fn, f, cap, fs,
                           fs / (double)near, near);
  }
  for (size_t i = 0; i < n; i++) {
    double v = floor((double)offset + half * sin(2.0 * PI_ * f * (double)i / fs) + 0.5);
    buf[i] = (uint8_t)(v < 0.0 ? 0.0 : v > 255.0 ? 255.0 : v); /* the range check above keeps v in 0..255 */
  }
  *out = modulation_default(buf, n, divider);
  return AUTD3_OK;
}
