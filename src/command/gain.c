/*
 * Gains: a drive per transducer from the geometry (include/autd3/command.h).
 * The formulas are the usual ones of the AUTD3 SDKs' Focus, Plane and Bessel
 * gains (shinolab/autd3-sdk; pyautd3): the phase that makes every wave
 * arrive in step, with k = 2π f / c, f = 40 kHz. The sign is the device's:
 * a transducer farther along the path gets the smaller phase, −k · path, as
 * the SDK's Focus computes it and as the FPGA itself computes foci (the
 * foci-STM differential test checks the FPGA side, and
 * test_command.gain_focus_agrees_with_the_fpga_foci that both agree). Phases are quantised as
 * crate autd3-rs-core 0.9.0 src/value/phase.rs quantises an angle: to the
 * nearest 1/256 turn, halves away from zero, modulo 256.
 */
#include <math.h>
#include <string.h>

#include "autd3/command.h"
#include "autd3/link_driver.h" /* autd3_set_error */

#define ULTRASOUND_FREQ_HZ 40000.0
#define PI_ 3.14159265358979323846 /* M_PI is POSIX, not C11 */

autd3_gain_t autd3_gain_null(void) {
  autd3_gain_t g;
  memset(&g, 0, sizeof g);
  g.kind = AUTD3_GAIN_NULL;
  return g;
}

autd3_gain_t autd3_gain_focus(float x, float y, float z) {
  autd3_gain_t g = autd3_gain_null();
  g.kind = AUTD3_GAIN_FOCUS;
  g.pos[0] = x;
  g.pos[1] = y;
  g.pos[2] = z;
  g.intensity = 255;
  return g;
}

autd3_gain_t autd3_gain_plane(float dx, float dy, float dz) {
  autd3_gain_t g = autd3_gain_null();
  g.kind = AUTD3_GAIN_PLANE;
  g.dir[0] = dx;
  g.dir[1] = dy;
  g.dir[2] = dz;
  g.intensity = 255;
  return g;
}

autd3_gain_t autd3_gain_bessel(float x, float y, float z, float dx, float dy, float dz, float theta) {
  autd3_gain_t g = autd3_gain_focus(x, y, z);
  g.kind = AUTD3_GAIN_BESSEL;
  g.dir[0] = dx;
  g.dir[1] = dy;
  g.dir[2] = dz;
  g.theta = theta;
  return g;
}

autd3_gain_t autd3_gain_uniform(uint8_t phase, uint8_t intensity) {
  autd3_gain_t g = autd3_gain_null();
  g.kind = AUTD3_GAIN_UNIFORM;
  g.phase_offset = phase;
  g.intensity = intensity;
  return g;
}

/* A phase in radians to 1/256 turns: nearest, halves away from zero, mod 256. */
static uint8_t quantise(double rad) {
  double lsb = rad * 256.0 / (2.0 * PI_);
  double turns = floor(lsb / 256.0) * 256.0; /* keep the magnitude small before rounding */
  double r = round(lsb - turns);             /* round(): halves away from zero */
  long v = (long)r;
  return (uint8_t)(v & 0xFF);
}

static bool finite3(const float v[3]) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

autd3_err_t autd3_gain_calc(const autd3_gain_t *g, const autd3_geometry_t *geo, size_t dev, autd3_drive_t out[AUTD3_NUM_TRANSDUCERS]) {
  static const char fn[] = "autd3_gain_calc";
  if (g == NULL || geo == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: NULL argument", fn);
  size_t ntr = autd3_geometry_num_transducers(geo, dev);
  if (ntr != AUTD3_NUM_TRANSDUCERS)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: device %zu out of range (%zu devices)", fn, dev,
                           autd3_geometry_num_devices(geo));
  const double k = 2.0 * PI_ * ULTRASOUND_FREQ_HZ / (double)autd3_geometry_sound_speed(geo); /* rad per mm */
  double dir[3] = {g->dir[0], g->dir[1], g->dir[2]};
  switch (g->kind) {
    case AUTD3_GAIN_NULL:
    case AUTD3_GAIN_UNIFORM: break;
    case AUTD3_GAIN_FOCUS:
      if (!finite3(g->pos))
        return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: focus (%g, %g, %g) mm: must be finite", fn, (double)g->pos[0],
                               (double)g->pos[1], (double)g->pos[2]);
      break;
    case AUTD3_GAIN_BESSEL:
      if (!finite3(g->pos) || !isfinite(g->theta))
        return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: Bessel apex and theta must be finite", fn);
      /* fall through */
    case AUTD3_GAIN_PLANE: {
      double n = norm3(dir);
      if (!finite3(g->dir) || !(n > 1e-9))
        return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: direction (%g, %g, %g): must be finite and non-zero", fn,
                               (double)g->dir[0], (double)g->dir[1], (double)g->dir[2]);
      for (int i = 0; i < 3; i++) dir[i] /= n;
      break;
    }
    default: return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: unknown gain kind %d", fn, (int)g->kind);
  }
  for (size_t t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
    float p[3];
    autd3_geometry_transducer(geo, dev, t, p, NULL);
    double d[3] = {(double)p[0] - g->pos[0], (double)p[1] - g->pos[1], (double)p[2] - g->pos[2]};
    double rad = 0.0;
    switch (g->kind) {
      case AUTD3_GAIN_FOCUS: rad = -k * norm3(d); break;
      case AUTD3_GAIN_PLANE: rad = -k * (dir[0] * p[0] + dir[1] * p[1] + dir[2] * p[2]); break;
      case AUTD3_GAIN_BESSEL: {
        /* In the beam frame (z along dir): distance along the cone's
         * generatrix, sin θ · ρ − cos θ · z. */
        double z = d[0] * dir[0] + d[1] * dir[1] + d[2] * dir[2];
        double rho2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] - z * z;
        double rho = rho2 > 0.0 ? sqrt(rho2) : 0.0;
        rad = -k * (sin((double)g->theta) * rho - cos((double)g->theta) * z);
        break;
      }
      default: break;
    }
    bool on = g->kind != AUTD3_GAIN_NULL;
    out[t].phase = on ? (uint8_t)(quantise(rad) + g->phase_offset) : 0;
    out[t].intensity = on ? g->intensity : 0;
  }
  return AUTD3_OK;
}

autd3_err_t autd3_gain_frame(const autd3_gain_t *g, const autd3_geometry_t *geo, autd3_frame_buffer_t *buf, autd3_frame_t *out) {
  if (g == NULL || geo == NULL || buf == NULL || out == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_gain_frame: NULL argument");
  size_t n = autd3_geometry_num_devices(geo);
  buf->num_devices = 0;
  autd3_drive_t drives[AUTD3_NUM_TRANSDUCERS];
  autd3_command_t cmd;
  for (size_t dev = 0; dev < n; dev++) {
    autd3_err_t err = autd3_gain_calc(g, geo, dev, drives);
    if (err != AUTD3_OK) return err;
    if ((err = autd3_cmd_write_pattern_fused(&cmd, 0, drives, 0xFFFF, NULL)) != AUTD3_OK) return err;
    if ((err = autd3_frame_buffer_set(buf, dev, &cmd)) != AUTD3_OK) return err;
  }
  return autd3_frame_buffer_frame(buf, out);
}
