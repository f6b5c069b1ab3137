/*
 * AUTD3 geometry: 18 × 14 grid positions at 10.16 mm pitch minus the three
 * screw holes at (x, y) = (1,1), (2,1), (16,1) → 249 transducers.
 * Transducer order (shinolab/autd3-sdk geometry, `is_missing_transducer` and
 * the y-outer/x-inner loop): row by row from y = 0, x = 0..17 within a row.
 * World position = device pos + rot · (pitch·x, pitch·y, 0); emission
 * direction = rot · (0, 0, 1).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/geometry.h"
#include "autd3/link_driver.h" /* autd3_set_error */
#include "autd3/proto.h"
#include "geometry/geometry_internal.h"

#define GRID_X 18
#define GRID_Y 14

struct autd3_geometry {
  size_t n;
  float sound_speed_mm_s;
  autd3_device_pose_t poses[]; /* rotation stored normalised */
};

/* Grid (x, y) of local transducer index tr (0..248). Row 0 is full (18),
 * row 1 lacks x = 1, 2, 16 (15 there), rows 2.. are full. */
void autd3__transducer_grid(size_t tr, unsigned *x, unsigned *y) {
  size_t uid;
  if (tr < 19) uid = tr;          /* row 0 and (0,1) */
  else if (tr < 32) uid = tr + 2; /* (3..15, 1): skips (1,1), (2,1) */
  else uid = tr + 3;              /* (17,1) onwards: skips (16,1) too */
  *x = (unsigned)(uid % GRID_X);
  *y = (unsigned)(uid / GRID_X);
}

autd3_device_pose_t autd3_device_pose_at(float x, float y, float z) {
  autd3_device_pose_t p = {{x, y, z}, {1.0f, 0.0f, 0.0f, 0.0f}};
  return p;
}

autd3_err_t autd3_geometry_create(size_t n, const autd3_device_pose_t *poses, autd3_geometry_t **out) {
  if (out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_geometry_create: out is NULL");
  *out = NULL;
  if (n < 1 || n > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "geometry of %zu devices: must be 1..%d", n, AUTD3_MAX_DEVICES);
  if (poses != NULL) {
    for (size_t i = 0; i < n; i++) {
      const float *q = poses[i].rot;
      float norm = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
      bool finite = isfinite(norm) && isfinite(poses[i].pos[0]) && isfinite(poses[i].pos[1]) && isfinite(poses[i].pos[2]);
      if (!finite || norm < 1e-6f)
        return autd3_set_error(AUTD3_E_INVALID_ARGUMENT,
                               "geometry device %zu: rotation must be a non-zero quaternion and position finite", i);
    }
  }
  autd3_geometry_t *g = malloc(sizeof *g + n * sizeof(autd3_device_pose_t));
  if (g == NULL) return autd3_set_error(AUTD3_E_NOMEM, "autd3_geometry_create: out of memory for %zu devices", n);
  g->n = n;
  g->sound_speed_mm_s = AUTD3_SOUND_SPEED_DEFAULT_MM_S;
  for (size_t i = 0; i < n; i++) {
    if (poses == NULL) {
      /* Default: devices side by side along +x, one device width apart. */
      g->poses[i] = autd3_device_pose_at(AUTD3_DEVICE_WIDTH_MM * (float)i, 0.0f, 0.0f);
    } else {
      g->poses[i] = poses[i];
      const float *q = poses[i].rot;
      float norm = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
      for (int k = 0; k < 4; k++) g->poses[i].rot[k] = q[k] / norm;
    }
  }
  *out = g;
  return AUTD3_OK;
}

void autd3_geometry_free(autd3_geometry_t *g) { free(g); }

size_t autd3_geometry_num_devices(const autd3_geometry_t *g) { return g ? g->n : 0; }

size_t autd3_geometry_num_transducers(const autd3_geometry_t *g, size_t dev) {
  return (g != NULL && dev < g->n) ? AUTD3_NUM_TRANSDUCERS : 0;
}

/* v' = q v q*, for a unit quaternion q = (w, x, y, z). */
static void rotate(const float q[4], const float v[3], float out[3]) {
  float w = q[0], x = q[1], y = q[2], z = q[3];
  /* t = 2 (q_vec × v); v' = v + w t + q_vec × t */
  float tx = 2.0f * (y * v[2] - z * v[1]);
  float ty = 2.0f * (z * v[0] - x * v[2]);
  float tz = 2.0f * (x * v[1] - y * v[0]);
  out[0] = v[0] + w * tx + (y * tz - z * ty);
  out[1] = v[1] + w * ty + (z * tx - x * tz);
  out[2] = v[2] + w * tz + (x * ty - y * tx);
}

void autd3__geometry_to_local(const autd3_geometry_t *g, size_t dev, const float p[3], float out[3]) {
  const autd3_device_pose_t *d = &g->poses[dev];
  const float inv[4] = {d->rot[0], -d->rot[1], -d->rot[2], -d->rot[3]}; /* the conjugate of a unit quaternion */
  const float v[3] = {p[0] - d->pos[0], p[1] - d->pos[1], p[2] - d->pos[2]};
  rotate(inv, v, out);
}

autd3_err_t autd3_geometry_transducer(const autd3_geometry_t *g, size_t dev, size_t tr, float pos[3], float dir[3]) {
  if (g == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_geometry_transducer: geometry is NULL");
  if (dev >= g->n)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_geometry_transducer: device %zu out of range (%zu devices)", dev, g->n);
  if (tr >= AUTD3_NUM_TRANSDUCERS)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_geometry_transducer: transducer %zu out of range (device %zu has %d)", tr,
                           dev, AUTD3_NUM_TRANSDUCERS);
  const autd3_device_pose_t *p = &g->poses[dev];
  if (pos != NULL) {
    unsigned x, y;
    autd3__transducer_grid(tr, &x, &y);
    float local[3] = {AUTD3_TRANSDUCER_PITCH_MM * (float)x, AUTD3_TRANSDUCER_PITCH_MM * (float)y, 0.0f};
    float r[3];
    rotate(p->rot, local, r);
    for (int k = 0; k < 3; k++) pos[k] = p->pos[k] + r[k];
  }
  if (dir != NULL) {
    static const float ez[3] = {0.0f, 0.0f, 1.0f};
    rotate(p->rot, ez, dir);
  }
  return AUTD3_OK;
}

autd3_err_t autd3_geometry_set_sound_speed(autd3_geometry_t *g, float mm_per_s) {
  if (g == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_geometry_set_sound_speed: geometry is NULL");
  if (!isfinite(mm_per_s) || mm_per_s <= 0.0f)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_geometry_set_sound_speed: %g mm/s: must be finite and > 0",
                           (double)mm_per_s);
  g->sound_speed_mm_s = mm_per_s;
  return AUTD3_OK;
}

float autd3_geometry_sound_speed(const autd3_geometry_t *g) { return g ? g->sound_speed_mm_s : 0.0f; }
