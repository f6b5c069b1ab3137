/* The TwinCAT and Remote links of the Windows build (MinGW, run under wine)
 * against the Linux peers of this build, in the same private namespace:
 * win_run.sh starts autd3-twincat-emu / autd3-remote-server (emulator link)
 * there first and sets AUTD3_TEST_PEER. Only registered for wine
 * (tests/platform/CMakeLists.txt); the Linux links have their own tests. */
#include <stdlib.h>

#include "autd3/autd3.h"
#include "harness/test.h"
#include "platform/platform.h"

static void need_peer(void) {
  if (getenv("AUTD3_TEST_PEER") == NULL) SKIP("needs the peer that tests/platform/win_run.sh starts");
}

/* The peer was started just before us: retry while it is not listening yet. */
static autd3_client_t *open_client(const autd3_link_option_t *o, autd3_geometry_t *g) {
  autd3_client_t *c = NULL;
  autd3_err_t e = AUTD3_E_CONNECT;
  for (int i = 0; i < 200 && e != AUTD3_OK; i++) {
    e = autd3_client_open(g, o, NULL, &c);
    if (e != AUTD3_OK) {
      if (e != AUTD3_E_CONNECT && e != AUTD3_E_TIMEOUT && e != AUTD3_E_PEER_CLOSED) break;
      autd3__sleep_ns(50000000);
    }
  }
  ASSERT_OK(e);
  return c;
}

static void send_some(autd3_client_t *c) {
  for (uint8_t i = 0; i < 50; i++) {
    autd3_frame_t f;
    ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, (size_t)(100 + i)));
    ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  }
}

TEST(twincat_link_to_emulated_runtime) {
  need_peer();
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = "127.0.0.1";
  o.u.twincat.server_port = 48898;
  o.u.twincat.server_ams_net_id = "127.0.0.1.1.1";
  autd3_client_t *c = open_client(&o, g);
  send_some(c);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}

TEST(remote_link_to_server) {
  need_peer();
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.address = "127.0.0.1:8080";
  o.u.remote.timeout_ms = 5000;
  autd3_client_t *c = open_client(&o, g);
  send_some(c);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}
