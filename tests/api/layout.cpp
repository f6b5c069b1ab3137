/* The C++ side of api.cxx_layout_matches_c: where a C++ compiler puts the
 * fields of the structs a C++ link implementation or caller shares with
 * libautd3 (compiled as C++17; see test_api.c for the C side). */
#include <cstddef>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "autd3/remote_server.h"

extern "C" void autd3_test_layout_cxx(size_t out[16]);

extern "C" void autd3_test_layout_cxx(size_t out[16]) {
  out[0] = sizeof(struct autd3_link);
  out[1] = alignof(struct autd3_link);
  out[2] = offsetof(struct autd3_link, cycles);
  out[3] = offsetof(struct autd3_link, lost_cycles);
  out[4] = offsetof(struct autd3_link, device_resets);
  out[5] = offsetof(struct autd3_link, device_resets_any);
  out[6] = sizeof(autd3_link_option_t);
  out[7] = sizeof(autd3_link_status_t);
  /* The size-tagged structs: a C++ caller's sizeof is the size it passes. */
  out[8] = AUTD3_LINK_OPTION_SIZE(autd3_echocat_option_t);
  out[9] = sizeof(autd3_client_config_t);
  out[10] = sizeof(autd3_remote_server_option_t);
  out[11] = autd3_remote_server_option_default().size;
  /* appended in 0.5.0 */
  out[12] = offsetof(struct autd3_link, header_size_);
  out[13] = offsetof(struct autd3_link, measured);
  out[14] = offsetof(struct autd3_link, device_stale);
  out[15] = offsetof(struct autd3_link, device_recoveries_);
}
