/*
 * Exactly-once over the TwinCAT link against the emulated TwinCAT runtime
 * (tools/twincat-emu, in-process on loopback), proven with the runtime's
 * device execution logs (tcemu_log_drain). Faults: dropped TCP connections
 * and a device reporting SAFE-OP+ERROR in its state word for a while.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "autd3/autd3.h"
#include "harness/test.h"
#include "reliability/exactly_once.h"
#include "twincat_emu.h"

static void *emu_thread(void *arg) {
  tcemu_run(arg);
  return NULL;
}

static size_t drain_tcemu(void *emu, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  return tcemu_log_drain(emu, dev, out, cap, dropped);
}

static void schedule(void *vemu, size_t i, uint64_t elapsed_ns) {
  (void)elapsed_ns;
  tcemu_t *emu = vemu;
  if (i == 300 || i == 1300) tcemu_drop_connections(emu);
  if (i == 800) tcemu_set_state_word(emu, 1, 0x0014); /* SAFE-OP + error */
  if (i == 900) tcemu_set_state_word(emu, 1, 0x0008);
}

static void twincat_case(const char *name, size_t requests, bool faults) {
  tcemu_config_t tc = tcemu_config_default();
  tc.devices = 2;
  tc.listen_port = 0; /* any free port */
  tcemu_t *emu;
  ASSERT_OK(tcemu_create(&tc, &emu));
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, emu_thread, emu), 0);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = "127.0.0.1";
  o.u.twincat.server_port = tcemu_port(emu);
  o.u.twincat.server_ams_net_id = "127.0.0.1.1.1";
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  eo_config_t cfg = {.requests = requests, .wait_ms = 20000, .drain = drain_tcemu, .drain_ctx = emu,
                     .fault = faults ? schedule : NULL, .fault_ctx = emu, .name = name};
  eo_result_t res;
  eo_run(c, &cfg, &res);
  autd3_client_close(c);
  eo_finish(&cfg, &res);
  eo_print(&cfg, &res);
  tcemu_stop(emu);
  pthread_join(th, NULL);
  tcemu_free(emu);
  autd3_geometry_free(g);
  char why[256];
  if (!eo_ok(&res, why, sizeof why)) TEST_FAIL_("%s: %s", name, why);
}

TEST(no_faults) { twincat_case("twincat_no_faults", 1000, false); }
TEST(connection_drops_and_state) { twincat_case("twincat_faults", 2000, true); }
