/**
 * @file geometry.h
 * @brief The AUTD3 device model: 249 transducers per device on a 10.16 mm
 * grid of 18 × 14 positions minus three (screw holes at grid (1,1), (2,1),
 * (16,1)), each device placed by a position and a rotation.
 *
 * Calling context: create/free allocate; the getters are pure and thread-safe.
 * @since 0.1.0
 */
#ifndef AUTD3_GEOMETRY_H
#define AUTD3_GEOMETRY_H

#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AUTD3_DEVICE_WIDTH_MM 192.0f   /**< outer width of a device */
#define AUTD3_DEVICE_HEIGHT_MM 151.4f  /**< outer height of a device */
#define AUTD3_TRANSDUCER_PITCH_MM 10.16f /**< grid pitch */

/** Pose of one device: position (mm) of transducer 0 and rotation quaternion (w, x, y, z). */
typedef struct autd3_device_pose {
  float pos[3];
  float rot[4];
} autd3_device_pose_t;

/**
 * Identity pose at `x, y, z`.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_device_pose_t autd3_device_pose_at(float x, float y, float z);

/** Opaque geometry: an ordered list of devices (bus order). */
typedef struct autd3_geometry autd3_geometry_t;

/**
 * Create a geometry of `n` devices (1..128). `poses` NULL → devices in a row along x.
 * Context: any thread; allocates; never blocks.
 */
AUTD3_EXTERN autd3_err_t autd3_geometry_create(size_t n, const autd3_device_pose_t *poses, autd3_geometry_t **out);
/**
 * Free a geometry (NULL is fine).
 * Context: any thread, once no other call uses `g` (links and clients do not keep it after open); frees.
 */
AUTD3_EXTERN void autd3_geometry_free(autd3_geometry_t *g);
/**
 * Number of devices.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN size_t autd3_geometry_num_devices(const autd3_geometry_t *g);
/**
 * Number of transducers of device `dev` (249 for an AUTD3), 0 if out of range.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN size_t autd3_geometry_num_transducers(const autd3_geometry_t *g, size_t dev);
/**
 * World position (mm) and emission direction (unit vector) of one transducer.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_geometry_transducer(const autd3_geometry_t *g, size_t dev, size_t tr, float pos[3], float dir[3]);

/** Sound speed a new geometry has: 340 m/s, as the reference SDK's default. @since 0.3.0 */
#define AUTD3_SOUND_SPEED_DEFAULT_MM_S 340000.0f

/**
 * Set the sound speed (mm/s, finite, > 0) the gain helpers (command.h) use.
 * Context: any thread, not concurrently with other calls on `g`; RT-safe. @since 0.3.0
 */
AUTD3_EXTERN autd3_err_t autd3_geometry_set_sound_speed(autd3_geometry_t *g, float mm_per_s);
/**
 * The sound speed (mm/s); 0 for a NULL geometry.
 * Context: any thread; RT-safe. @since 0.3.0
 */
AUTD3_EXTERN float autd3_geometry_sound_speed(const autd3_geometry_t *g);

#ifdef __cplusplus
}
#endif
#endif
