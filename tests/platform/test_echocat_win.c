/* echocat built for Windows (MinGW), under wine, against this build's Linux
 * autd3-emu on a veth pair in the case's namespace: tests/platform/
 * win_run.sh starts tools/netns/autd3-netns there as the case's peer
 * (autd3m0 <-> autd3e0, 2 emulated devices), so the master side is wine's
 * wpcap.dll on the host libpcap. Built a second time with AUTD3_TEST_SOEM
 * for the SOEM link on SOEM's win32 port (test_soem_win). Registered for
 * wine only (tests/platform/CMakeLists.txt). No timing is asserted: wine 8
 * has no immediate mode, frames wait for libpcap's 1 ms timeout; the figures
 * printed are for docs/platforms.md. */
/* A Windows program's usual first include, objbase.h's `interface` macro
 * and all: the public headers must compile after it (link_ethercat.h). */
#include <windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "harness/test.h"
#include "platform/platform.h"

#ifdef AUTD3_TEST_SOEM
#define LINK_KIND AUTD3_LINK_SOEM
#define ETHERCAT(o) ((o).u.soem.ethercat)
#else
#define LINK_KIND AUTD3_LINK_ECHOCAT
#define ETHERCAT(o) ((o).u.echocat.ethercat)
#endif

static autd3_link_option_t option(const char *ifname) {
#ifdef AUTD3_TEST_SOEM
  autd3_link_soem_register(); /* linked in: portable programs register it (docs/platforms.md) */
#endif
  autd3_link_option_t o = autd3_link_option_default(LINK_KIND);
  ETHERCAT(o).adapter = ifname; /* `interface` is a macro after <windows.h> */
  return o;
}

/* Open the chain by the adapter's description ("autd3m0", the Linux name
 * under wine), waiting while the peer is still starting (no adapter, or no
 * device answering yet). */
static autd3_link_t *open_chain(const autd3_link_option_t *o, autd3_geometry_t *g) {
  if (getenv("AUTD3_TEST_PEER") == NULL) SKIP("needs the emulated chain that tests/platform/win_run.sh starts");
  autd3_link_t *l = NULL;
  autd3_err_t e = AUTD3_OK;
  for (int round = 0; round < 150; round++) {
    if ((e = autd3_link_open(o, g, &l)) == AUTD3_OK) return l;
    if (e != AUTD3_E_NO_INTERFACE && e != AUTD3_E_NO_DEVICE) break;
    autd3__sleep_ns(200000000);
  }
  TEST_FAIL_("open: %s: %s", autd3_err_name(e), autd3_last_error());
  return NULL;
}

TEST(open_cycle_close_2) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option("autd3m0");
  autd3_link_t *l = open_chain(&o, g);
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES] = {0}, rx[4];
  enum { CYCLES = 1000 };
  int valid = 0;
  uint64_t t0 = autd3__now_ns();
  for (int i = 0; i < CYCLES; i++) {
    bool v = false;
    if (i % 2) ASSERT_OK(autd3_link_wait_next_cycle(l));
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
    valid += v;
  }
  uint64_t dt = autd3__now_ns() - t0;
  ASSERT_GT(valid, 0);
  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s));
  ASSERT_EQ(s.state[0], AUTD3_DEVICE_OP);
  ASSERT_EQ(s.state[1], AUTD3_DEVICE_OP);
  char diag[2048] = "";
  autd3_link_diagnostics(l, diag, sizeof diag);
  printf("wine: %d cycles in %.1f ms (%.1f us each), %d valid\n%s\n", CYCLES, dt / 1e6, dt / 1e3 / CYCLES, valid, diag);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* The client over the link on Windows: every checked frame is acknowledged. */
TEST(stop_and_wait) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option("autd3m0");
  autd3_link_close(open_chain(&o, g)); /* the chain is up */
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, 620));
  autd3_response_t r;
  uint64_t t0 = autd3__now_ns();
  enum { N = 50 };
  for (int i = 0; i < N; i++) {
    ASSERT_OK(autd3_client_send_checked(c, &f, &r));
    ASSERT_EQ(r.num_devices, 2);
    ASSERT_EQ(r.data[0], 0);
    ASSERT_EQ(r.data[1], 0);
  }
  printf("wine: %d stop-and-wait frames, %.2f ms each\n", N, (autd3__now_ns() - t0) / 1e6 / N);
  autd3_client_stats_t cs;
  autd3_client_stats(c, &cs);
  ASSERT_EQ(cs.failed, 0);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}

/* interface "auto": the link lists the adapters (Npcap's, through wine's
 * wpcap.dll; SOEM through its own port's listing) and takes the one whose
 * devices are AUTD3s. */
TEST(open_auto) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option("auto");
  autd3_link_t *l = open_chain(&o, g);
  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s));
  ASSERT_EQ(s.state[0], AUTD3_DEVICE_OP);
  char diag[2048] = "";
  autd3_link_diagnostics(l, diag, sizeof diag);
  printf("%s\n", diag);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

TEST(wrong_interface) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option("no-such-adapter");
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NO_INTERFACE);
  printf("message: %s\n", autd3_last_error());
  ASSERT_CONTAINS(autd3_last_error(), "no-such-adapter");
  ASSERT_TRUE(l == NULL);
  autd3_geometry_free(g);
}

/* Run with wine's wpcap.dll disabled (WINEDLLOVERRIDES=wpcap=d, set by
 * CMakeLists.txt for this case): the machine without Npcap. */
TEST(missing_wpcap) {
  if (getenv("WINEDLLOVERRIDES") == NULL || strstr(getenv("WINEDLLOVERRIDES"), "wpcap") == NULL)
    SKIP("needs WINEDLLOVERRIDES=wpcap=d (tests/platform/CMakeLists.txt sets it)");
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option("autd3m0");
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NOT_BUILT);
  printf("message: %s\n", autd3_last_error());
  ASSERT_CONTAINS(autd3_last_error(), "Npcap");
  ASSERT_CONTAINS(autd3_last_error(), "WinPcap API-compatible Mode");
  ETHERCAT(o).adapter = NULL; /* "auto" lists adapters: the same error */
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "Npcap");
  autd3_geometry_free(g);
}
