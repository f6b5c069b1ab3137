/*
 * What the geometry knows that other parts of the library need without a
 * geometry object: the grid position of a transducer (the device model's
 * FPGA computes foci from it) and the world-to-device transform (the foci
 * encoders send device-local coordinates).
 */
#ifndef AUTD3_GEOMETRY_INTERNAL_H
#define AUTD3_GEOMETRY_INTERNAL_H

#include <stddef.h>

#include "autd3/geometry.h"

/* Grid column x (0..17) and row y (0..13) of transducer tr (0..248). */
void autd3__transducer_grid(size_t tr, unsigned *x, unsigned *y);
/* Point p (world frame, mm) in device dev's frame: rot⁻¹ · (p − pos). dev < n. */
void autd3__geometry_to_local(const autd3_geometry_t *g, size_t dev, const float p[3], float out[3]);

#endif
