/* A program that does not link autd3_link_ethercrab: the ethercrab kind is
 * unavailable and opening it says which CMake option and library enable it. */
#include "autd3/link.h"
#include "harness/test.h"

TEST(reports_not_built) {
  ASSERT_FALSE(autd3_link_kind_available(AUTD3_LINK_ETHERCRAB));
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ETHERCRAB);
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "AUTD3_LINK_ETHERCRAB");
  ASSERT_CONTAINS(autd3_last_error(), "cargo");
  ASSERT_TRUE(l == NULL);
  autd3_geometry_free(g);
}
