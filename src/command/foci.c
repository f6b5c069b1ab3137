/*
 * Foci STM (include/autd3/command.h): focal points the device's FPGA turns
 * into drives itself, split into frames as the 0.9 client splits them
 * (crate autd3-rs 0.9.0: src/commands/stm/foci.rs, write_foci_buffer.rs,
 * operation/{write_foci_chunk,config_pattern,write_pattern_fused}.rs; the
 * point encoding: crate autd3-rs-core 0.9.0 src/value/{focus,control_point}.rs).
 *
 * A point becomes one 64-bit word: x, y, z in the device's frame, in units
 * of 0.025 mm rounded to the nearest (halves away from zero), as 18-bit two's
 * complement at bits 0, 18 and 36, and at bit 54 the step's intensity (the
 * step's first point) or the point's phase offset relative to the first
 * point (the others). x and y stop short of the 18-bit minimum by the
 * farthest transducer's position (6909 and 5283 units), so that the FPGA's
 * difference never leaves 18 bits.
 */
#include <math.h>
#include <string.h>

#include "autd3/command.h"
#include "autd3/link_driver.h" /* autd3_set_error */
#include "command/encode.h"
#include "geometry/geometry_internal.h"

#define EMISSION_TYPE_FOCI 0u
#define FOCUS_WORDS 4u
#define WP_HEADER 8u                                          /* WritePatternPayload */
#define PF_HEADER 32u                                         /* WritePatternFusedPayload */
#define FOCI_PER_WRITE ((AUTD3_PAYLOAD_BYTES - WP_HEADER) / 8u) /* 77 */
#define FOCI_PER_FUSED ((AUTD3_PAYLOAD_BYTES - PF_HEADER) / 8u) /* 74 */
#define FOCUS_UNIT_MM 0.025f
#define COORD_MIN (-(1 << 17))
#define COORD_MAX ((1 << 17) - 1)
#define TR_X_MAX 6909 /* the farthest transducer, in focus units (17 · 10.16 mm) */
#define TR_Y_MAX 5283 /* (13 · 10.16 mm) */

static autd3_err_t encode_point(const autd3_foci_stm_t *s, const autd3_geometry_t *geo, size_t dev, size_t k, const char *fn,
                                uint64_t *out) {
  const size_t step = k / s->num_foci, j = k % s->num_foci;
  const autd3_control_point_t *cp = &s->points[k];
  float local[3];
  autd3__geometry_to_local(geo, dev, cp->pos, local);
  static const int32_t lo[3] = {COORD_MIN + TR_X_MAX, COORD_MIN + TR_Y_MAX, COORD_MIN};
  static const char axis[3] = {'x', 'y', 'z'};
  uint64_t v = 0;
  for (int a = 0; a < 3; a++) {
    const float units = local[a] / FOCUS_UNIT_MM; /* in float, as the reference computes it */
    if (!(units >= (float)lo[a] - 0.5f && units < (float)COORD_MAX + 0.5f))
      return autd3_set_error(AUTD3_E_INVALID_ARGUMENT,
                             "%s: step %zu point %zu: device %zu's %c = %.3f mm is outside %.3f..%.3f mm (18-bit, 0.025 mm units)", fn,
                             step, j, dev, axis[a], (double)local[a], lo[a] * 0.025, COORD_MAX * 0.025);
    const int32_t fixed = (int32_t)lroundf(units);
    if (fixed < lo[a] || fixed > COORD_MAX)
      return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: step %zu point %zu: device %zu's %c = %.3f mm is outside the 18-bit range",
                             fn, step, j, dev, axis[a], (double)local[a]);
    v |= ((uint64_t)(uint32_t)fixed & 0x3FFFFu) << (18 * a);
  }
  uint8_t extra;
  if (j == 0) extra = s->intensities ? s->intensities[step] : 0xFF;
  else extra = (uint8_t)(cp->phase_offset - s->points[k - j].phase_offset);
  *out = v | (uint64_t)extra << 54;
  return AUTD3_OK;
}

static autd3_err_t put_points(const autd3_foci_stm_t *s, const autd3_geometry_t *geo, size_t dev, size_t first, size_t count,
                              uint8_t *dst, const char *fn) {
  for (size_t i = 0; i < count; i++) {
    uint64_t w = 0;
    autd3_err_t err = encode_point(s, geo, dev, first + i, fn, &w);
    if (err != AUTD3_OK) return err;
    autd3__put64(dst + 8 * i, w);
  }
  return AUTD3_OK;
}

/* config_pattern.rs: the sound speed goes as m/s · 64, rounded (the 0.9
 * client saturates an out-of-range value; it is refused here). */
static autd3_err_t sound_speed_word(const autd3_geometry_t *geo, const char *fn, uint16_t *out) {
  const float m_s = autd3_geometry_sound_speed(geo) / 1000.0f;
  const float v = roundf(m_s * 64.0f);
  if (!(v >= 1.0f && v <= 65535.0f))
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: sound speed %.3f m/s: the device takes 1/64..1023.98 m/s", fn, (double)m_s);
  *out = (uint16_t)v;
  return AUTD3_OK;
}

autd3_err_t autd3_foci_stm_commands(const autd3_foci_stm_t *s, const autd3_geometry_t *geo, size_t dev, autd3_command_t *out,
                                    size_t cap, size_t *n) {
  static const char fn[] = "autd3_foci_stm_commands";
  if (s == NULL || geo == NULL || out == NULL || n == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: NULL argument", fn);
  *n = 0;
  if (dev >= autd3_geometry_num_devices(geo))
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: device %zu out of range (%zu devices)", fn, dev, autd3_geometry_num_devices(geo));
  if (s->points == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: points is NULL", fn);
  if (s->bank > 1) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: bank %u: must be 0 or 1", fn, (unsigned)s->bank);
  if (s->num_foci < 1 || s->num_foci > AUTD3_FOCI_NUM_MAX)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: num_foci %u: must be 1..%u", fn, (unsigned)s->num_foci, AUTD3_FOCI_NUM_MAX);
  if (s->size < 2 || s->size > AUTD3_FOCI_MAX_TOTAL / s->num_foci)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %zu steps of %u foci: a foci STM has 2..%u steps (%u foci in all)", fn, s->size,
                           (unsigned)s->num_foci, AUTD3_FOCI_MAX_TOTAL / s->num_foci, AUTD3_FOCI_MAX_TOTAL);
  if (s->divider == 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: divider 0: must be 1..65535", fn);
  autd3_err_t err;
  if (!s->later && (err = autd3__check_transition(&s->transition, s->rep, fn)) != AUTD3_OK) return err;
  uint16_t speed = 0;
  if ((err = sound_speed_word(geo, fn, &speed)) != AUTD3_OK) return err;
  const size_t total = s->size * s->num_foci;
  const bool fused = !s->later && total <= FOCI_PER_FUSED;
  const size_t writes = fused ? 1 : (total + FOCI_PER_WRITE - 1) / FOCI_PER_WRITE;
  const size_t need = fused ? 1 : writes + 1 + (s->later ? 0 : 1);
  if (cap < need) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: cap %zu: this STM needs %zu commands", fn, cap, need);
  memset(out, 0, need * sizeof *out);
  if (fused) {
    uint8_t *p = out[0].payload;
    out[0].cmd = AUTD3_CMD_WRITE_PATTERN_FUSED;
    p[0] = s->bank;
    p[1] = EMISSION_TYPE_FOCI;
    autd3__put16(p + 2, s->divider);
    autd3__put32(p + 4, (uint32_t)s->size);
    p[8] = s->num_foci;
    p[9] = (uint8_t)s->transition.mode;
    autd3__put16(p + 10, speed);
    autd3__put16(p + 12, s->rep);
    autd3__put16(p + 14, (uint16_t)(total * 8));
    autd3__put64(p + 16, s->transition.value);
    autd3__put32(p + 24, s->transition.margin_ns);
    if ((err = put_points(s, geo, dev, 0, total, p + PF_HEADER, fn)) != AUTD3_OK) return err;
    out[0].len = (uint16_t)(PF_HEADER + total * 8);
    *n = 1;
    return AUTD3_OK;
  }
  size_t k = 0;
  for (size_t first = 0; first < total; first += FOCI_PER_WRITE, k++) {
    const size_t count = total - first < FOCI_PER_WRITE ? total - first : FOCI_PER_WRITE;
    uint8_t *p = out[k].payload;
    out[k].cmd = AUTD3_CMD_WRITE_PATTERN_BUFFER;
    p[0] = s->bank;
    autd3__put32(p + 2, (uint32_t)(first * FOCUS_WORDS));
    autd3__put16(p + 6, (uint16_t)(count * 8));
    if ((err = put_points(s, geo, dev, first, count, p + WP_HEADER, fn)) != AUTD3_OK) return err;
    out[k].len = (uint16_t)(WP_HEADER + count * 8);
  }
  uint8_t *c = out[k].payload;
  out[k].cmd = AUTD3_CMD_CONFIG_PATTERN;
  c[0] = s->bank;
  c[1] = EMISSION_TYPE_FOCI;
  autd3__put16(c + 2, s->divider);
  autd3__put32(c + 4, (uint32_t)s->size);
  c[8] = s->num_foci;
  autd3__put16(c + 10, speed);
  autd3__put16(c + 12, s->rep);
  out[k++].len = 14;
  if (!s->later && (err = autd3_cmd_change_pattern_bank(&out[k++], s->bank, &s->transition)) != AUTD3_OK) return err;
  *n = k;
  return AUTD3_OK;
}
