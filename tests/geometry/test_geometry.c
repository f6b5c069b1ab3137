/* Geometry: 249 transducers on the 18 × 14 grid minus (1,1), (2,1), (16,1),
 * row-major order, quaternion rotation (shinolab/autd3-sdk geometry). */
#include <math.h>

#include "autd3/geometry.h"
#include "autd3/proto.h"
#include "harness/test.h"

#define NEAR(a, b) (fabsf((a) - (b)) < 1e-3f)
#define ASSERT_NEAR(a, b) do { float a__ = (a), b__ = (b); if (!NEAR(a__, b__)) TEST_FAIL_("%s ≈ %s: %f vs %f", #a, #b, a__, b__); } while (0)

TEST(create_free) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  ASSERT_EQ(autd3_geometry_num_devices(g), 2);
  ASSERT_EQ(autd3_geometry_num_transducers(g, 0), 249);
  ASSERT_EQ(autd3_geometry_num_transducers(g, 1), 249);
  ASSERT_EQ(autd3_geometry_num_transducers(g, 2), 0);
  autd3_geometry_free(g);
  autd3_geometry_free(NULL);
  ASSERT_EQ(autd3_geometry_num_devices(NULL), 0);
}

TEST(bad_input) {
  autd3_geometry_t *g = (autd3_geometry_t *)1;
  ASSERT_ERR(autd3_geometry_create(0, NULL, &g), AUTD3_E_DEVICE_COUNT_RANGE);
  ASSERT_TRUE(g == NULL);
  ASSERT_ERR(autd3_geometry_create(129, NULL, &g), AUTD3_E_DEVICE_COUNT_RANGE);
  ASSERT_CONTAINS(autd3_last_error(), "129");
  ASSERT_ERR(autd3_geometry_create(1, NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3_device_pose_t p = autd3_device_pose_at(0, 0, 0);
  p.rot[0] = 0;
  ASSERT_ERR(autd3_geometry_create(1, &p, &g), AUTD3_E_INVALID_ARGUMENT);
  p = autd3_device_pose_at(NAN, 0, 0);
  ASSERT_ERR(autd3_geometry_create(1, &p, &g), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_OK(autd3_geometry_create(128, NULL, &g));
  float pos[3], dir[3];
  ASSERT_ERR(autd3_geometry_transducer(g, 128, 0, pos, dir), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_geometry_transducer(g, 0, 249, pos, dir), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_geometry_transducer(NULL, 0, 0, pos, dir), AUTD3_E_INVALID_ARGUMENT);
  autd3_geometry_free(g);
}

/* Every grid position except the three screw holes, each exactly once, in row-major order. */
TEST(grid_layout) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  int seen[14][18] = {{0}};
  float prev_key = -1;
  for (size_t tr = 0; tr < 249; tr++) {
    float pos[3], dir[3];
    ASSERT_OK(autd3_geometry_transducer(g, 0, tr, pos, dir));
    float fx = pos[0] / AUTD3_TRANSDUCER_PITCH_MM, fy = pos[1] / AUTD3_TRANSDUCER_PITCH_MM;
    int x = (int)lroundf(fx), y = (int)lroundf(fy);
    ASSERT_NEAR(fx, (float)x);
    ASSERT_NEAR(fy, (float)y);
    ASSERT_NEAR(pos[2], 0.0f);
    ASSERT_TRUE(x >= 0 && x < 18 && y >= 0 && y < 14);
    seen[y][x]++;
    float key = (float)(y * 18 + x);
    ASSERT_TRUE(key > prev_key);
    prev_key = key;
    ASSERT_NEAR(dir[0], 0.0f);
    ASSERT_NEAR(dir[1], 0.0f);
    ASSERT_NEAR(dir[2], 1.0f);
  }
  for (int y = 0; y < 14; y++)
    for (int x = 0; x < 18; x++) {
      int missing = (y == 1 && (x == 1 || x == 2 || x == 16));
      ASSERT_EQ(seen[y][x], missing ? 0 : 1);
    }
  /* spot checks of the index → grid mapping around the holes */
  float pos[3];
  ASSERT_OK(autd3_geometry_transducer(g, 0, 18, pos, NULL)); /* (0,1) */
  ASSERT_NEAR(pos[0], 0.0f);
  ASSERT_NEAR(pos[1], 10.16f);
  ASSERT_OK(autd3_geometry_transducer(g, 0, 19, pos, NULL)); /* (3,1) */
  ASSERT_NEAR(pos[0], 3 * 10.16f);
  ASSERT_OK(autd3_geometry_transducer(g, 0, 31, pos, NULL)); /* (15,1) */
  ASSERT_NEAR(pos[0], 15 * 10.16f);
  ASSERT_OK(autd3_geometry_transducer(g, 0, 32, pos, NULL)); /* (17,1) */
  ASSERT_NEAR(pos[0], 17 * 10.16f);
  ASSERT_OK(autd3_geometry_transducer(g, 0, 248, pos, NULL)); /* (17,13) */
  ASSERT_NEAR(pos[0], 17 * 10.16f);
  ASSERT_NEAR(pos[1], 13 * 10.16f);
  autd3_geometry_free(g);
}

TEST(default_row) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(3, NULL, &g));
  float pos[3];
  ASSERT_OK(autd3_geometry_transducer(g, 2, 0, pos, NULL));
  ASSERT_NEAR(pos[0], 2 * AUTD3_DEVICE_WIDTH_MM);
  ASSERT_NEAR(pos[1], 0.0f);
  autd3_geometry_free(g);
}

TEST(rotation) {
  /* 90° about +y: w = cos45, y = sin45. Local +x → world −z, +z → +x. */
  const float h = 0.70710678f;
  autd3_device_pose_t p[2] = {autd3_device_pose_at(10, 20, 30), autd3_device_pose_at(0, 0, 0)};
  p[0].rot[0] = h;
  p[0].rot[2] = h;
  /* unnormalised quaternion for 180° about z: it is normalised on create */
  p[1].rot[0] = 0;
  p[1].rot[3] = 2;
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(2, p, &g));
  float pos[3], dir[3];
  ASSERT_OK(autd3_geometry_transducer(g, 0, 1, pos, dir)); /* grid (1,0): local (10.16, 0, 0) */
  ASSERT_NEAR(pos[0], 10.0f);
  ASSERT_NEAR(pos[1], 20.0f);
  ASSERT_NEAR(pos[2], 30.0f - 10.16f);
  ASSERT_NEAR(dir[0], 1.0f);
  ASSERT_NEAR(dir[1], 0.0f);
  ASSERT_NEAR(dir[2], 0.0f);
  ASSERT_OK(autd3_geometry_transducer(g, 0, 18, pos, NULL)); /* grid (0,1): local +y is unchanged */
  ASSERT_NEAR(pos[1], 20.0f + 10.16f);
  ASSERT_OK(autd3_geometry_transducer(g, 1, 248, pos, dir)); /* (17,13) rotated 180° about z */
  ASSERT_NEAR(pos[0], -17 * 10.16f);
  ASSERT_NEAR(pos[1], -13 * 10.16f);
  ASSERT_NEAR(dir[2], 1.0f);
  autd3_geometry_free(g);
}
