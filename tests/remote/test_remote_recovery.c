/*
 * The Remote server in front of an EtherCAT chain (the appliance setup):
 * echocat -> autd3-emu on a veth pair in a private namespace, an in-process
 * autd3-remote-server wrapping echocat, and a client over the Remote link.
 * A device that is power-cycled behind the server must come back without
 * anything from the client: the server's own state checker recovers it (the
 * reference server samples its link's status every 100 ms), the v7 replies
 * report the device's state and the recovery, and the client's frames are
 * executed again. Without the checker nothing on the server calls the link's
 * check_state, so the device stays in INIT and every later frame fails.
 * No timing is asserted: the waits are bounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "harness/emuctl.h"
#include "harness/test.h"
#include "platform/platform.h"
#include "harness/emu_chain.h"
#include "remote_helpers.h"

static void power_cycle_behind_server(uint32_t protocol) {
  autd3_remote_server_option_t so = autd3_remote_server_option_default();
  so.link = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  autd3_ethercat_option_t *ec = autd3_link_option_ethercat(&so.link);
  ASSERT_TRUE(ec != NULL);
  ec->interface = getenv("AUTD3_TEST_IFNAME");
  so.pickup_percent = 0; /* echocat sends at call time (remote_server.h) */
  srv_t v;
  srv_start_opt(&v, so);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.address = v.addr;
  o.u.remote.protocol = protocol;
  o.u.remote.timeout_ms = 10000;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, 64));
  for (int i = 0; i < 20; i++) ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  char reply[256];
  ASSERT_EQ(autd3_emuctl("power-cycle 1", reply, sizeof reply), 0);
  /* Keep sending: frames fail while device 1 reboots, then must be executed again (bound: 30 s). */
  int failed = 0, ok_after = 0;
  bool saw_not_op = false;
  for (int i = 0; i < 3000 && ok_after < 20; i++) {
    autd3_response_t r;
    autd3_err_t e = autd3_client_send_checked(c, &f, &r);
    if (e == AUTD3_OK) {
      if (failed > 0) ok_after++;
    } else {
      failed++;
      autd3__sleep_ns(10000000u);
    }
    if (protocol == AUTD3_REMOTE_PROTOCOL_V7 && !saw_not_op) {
      autd3_link_status_t st;
      ASSERT_OK(autd3_link_check_state(autd3_client_link(c), &st));
      saw_not_op = st.state[1] != AUTD3_DEVICE_OP;
    }
  }
  printf("protocol v%u: %d failed sends while device 1 rebooted, %d executed after%s\n", protocol, failed, ok_after,
         protocol == AUTD3_REMOTE_PROTOCOL_V7 ? (saw_not_op ? "; v7 replies reported device 1 not in OP" : "") : "");
  ASSERT_TRUE(failed > 0);   /* the power cycle did reach the device */
  ASSERT_EQ(ok_after, 20);   /* and the chain came back behind the server */
  if (protocol == AUTD3_REMOTE_PROTOCOL_V7) {
    /* the v7 replies carry the devices' states: the reboot must have shown there */
    if (!saw_not_op) TEST_FAIL_("v7: no reply reported device 1 out of OP while it rebooted");
    autd3_link_status_t st;
    ASSERT_OK(autd3_link_check_state(autd3_client_link(c), &st));
    printf("recoveries reported over v7: %llu\n", (unsigned long long)st.recoveries);
    ASSERT_TRUE(st.recoveries >= 1);
    ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP);
    ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  }
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
  srv_stop(&v);
}

TEST(power_cycle_behind_server_v7) {
  in_netns_kind(AUTD3_LINK_ECHOCAT, "power_cycle_behind_server_v7", 2, NULL, false);
  power_cycle_behind_server(AUTD3_REMOTE_PROTOCOL_V7);
}

TEST(power_cycle_behind_server_v3) {
  in_netns_kind(AUTD3_LINK_ECHOCAT, "power_cycle_behind_server_v3", 2, NULL, false);
  power_cycle_behind_server(AUTD3_REMOTE_PROTOCOL_V3);
}
