/* EtherCrab link tests: what only EtherCrab has. Option checks, error paths
 * on a bare veth pair (`unshare -rn`), and over the emulated chain
 * (tests/harness/emu_chain.h) the shim's own thread, every device
 * power-cycled, the adapter removed under the link, late replies. The
 * scenarios every EtherCAT link shares (open, client, auto interface, count
 * mismatch, identity, unplug/replug, capture, second master) run for
 * EtherCrab in tests/ethercat as ethercrab.*. No timing is asserted. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autd3/link.h"
#include "autd3/link_driver.h"
#include "harness/emu_chain.h"
#include "harness/emuctl.h"
#include "harness/netns.h"
#include "harness/test.h"
#include "platform/platform.h"

/* This test case in a private namespace with a veth pair crab0 <-> emu0. */
static void netns(const char *name) { autd3_test_netns_veth(name, "crab0", "emu0"); }

static autd3_geometry_t *geometry(size_t n) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  return g;
}

static autd3_link_option_t crab_option(const char *ifname) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ETHERCRAB);
  o.u.ethercrab.ethercat.interface = ifname;
  o.u.ethercrab.ethercat.sync_timeout_ms = 5000;
  o.u.ethercrab.ethercat.state_timeout_ms = 5000;
  o.u.ethercrab.ethercat.op_wait_timeout_ms = 5000;
  return o;
}

TEST(registered) {
  ASSERT_TRUE(autd3_link_kind_available(AUTD3_LINK_ETHERCRAB));
  autd3_link_kind_t k;
  ASSERT_OK(autd3_link_kind_parse("ethercrab", &k));
  ASSERT_EQ(k, AUTD3_LINK_ETHERCRAB);
}

TEST(invalid_options) {
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  o.u.ethercrab.ethercat.sync0_period_ns = 700000;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "sync0_period_ns");
  o = crab_option("crab0");
  o.u.ethercrab.pdu_timeout_ms = 0;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "pdu_timeout_ms");
  o = crab_option("crab0");
  o.u.ethercrab.ethercat.sync0_period_ns = 1000000;
  o.u.ethercrab.ethercat.send_cycle_ns = 1500000;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "send_cycle_ns");
  o = crab_option("crab0");
  o.u.ethercrab.ethercat.rt_priority = 100;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "rt_priority");
  ASSERT_TRUE(l == NULL);
  autd3_geometry_free(g);
}

TEST(no_interface) {
  netns("no_interface");
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("nosuch0");
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "nosuch0");
  autd3_geometry_free(g);
}

/* A veth with nothing behind it: no EtherCAT reply at all. */
TEST(no_device) {
  netns("no_device");
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  o.u.ethercrab.pdu_timeout_ms = 20;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NO_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "crab0");
  /* "auto" tries every adapter that is up and names them */
  o.u.ethercrab.ethercat.interface = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NO_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "crab0");
  autd3_geometry_free(g);
}

/* ---- over the emulated chain (tests/harness/emu_chain.h) ------------------ */

/* This case inside the emulated chain (SM watchdog off unless `emu_args` asks for it). */
static void chain(const char *name, int devices, const char *emu_args) {
  in_netns_kind(AUTD3_LINK_ETHERCRAB, name, devices, emu_args, false);
}

static const char *ifname(void) { return getenv("AUTD3_TEST_IFNAME"); }

static void emu_ok(const char *cmd) {
  char r[512];
  if (autd3_emuctl(cmd, r, sizeof r) != 0) TEST_FAIL_("autd3-emu '%s': %s", cmd, r);
}

/* Device k's AL state as the emulator reports it ("ok 0x08" = OP). */
static void expect_al(uint16_t k, const char *want) {
  char cmd[16], r[256];
  snprintf(cmd, sizeof cmd, "al %u", (unsigned)k);
  if (autd3_emuctl(cmd, r, sizeof r) != 0) TEST_FAIL_("autd3-emu '%s': %s", cmd, r);
  ASSERT_CONTAINS(r, want);
}

/* Run `n` cycles (every other one after autd3_link_wait_next_cycle, as the
 * client's bus thread does); returns how many had valid inputs. */
static int run_cycles(autd3_link_t *l, int n, uint8_t *rx_out) {
  size_t dev = autd3_link_num_devices(l);
  uint8_t *tx = calloc(dev, AUTD3_TX_FRAME_BYTES), *rx = calloc(dev, AUTD3_RX_FRAME_BYTES);
  ASSERT_TRUE(tx && rx);
  int valid = 0;
  for (int i = 0; i < n; i++) {
    bool ok = false;
    if (i % 2) ASSERT_OK(autd3_link_wait_next_cycle(l)); /* both pacing paths */
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &ok));
    if (ok) {
      valid++;
      if (rx_out) memcpy(rx_out, rx, dev * AUTD3_RX_FRAME_BYTES);
    }
  }
  free(tx);
  free(rx);
  return valid;
}

/* Threads of this process whose name is `comm` (the shim names its own). */
static int threads_named(const char *comm) {
  int count = 0;
  DIR *d = opendir("/proc/self/task");
  ASSERT_TRUE(d != NULL);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[300], buf[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    if (fgets(buf, sizeof buf, f) && strncmp(buf, comm, strlen(comm)) == 0) count++;
    fclose(f);
  }
  closedir(d);
  return count;
}

/* What only EtherCrab has around open/close (the shared open/cycle scenarios
 * are tests/ethercat's ethercrab.open_*): the shim's tx/rx thread lives
 * exactly as long as the link, and both pacing paths cycle. */
TEST(open_cycle_close_2) {
  const uint16_t n = 2;
  chain("open_cycle_close_2", n, NULL);
  autd3_geometry_t *g = geometry(n);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option(ifname());
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_EQ(autd3_link_num_devices(l), n);
  ASSERT_EQ(autd3_link_kind(l), AUTD3_LINK_ETHERCRAB);
  for (uint16_t k = 0; k < n; k++) expect_al(k, "ok 0x08");

  uint8_t rx[2 * 128];
  int valid = run_cycles(l, 300, rx);
  ASSERT_GT(valid, 0);
  /* inputs really come from the devices: a freshly booted firmware acks 0xFF */
  for (uint16_t k = 0; k < n; k++) ASSERT_EQ(rx[2 * k], 0xFF);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_EQ(st.cycles, 300);
  ASSERT_EQ(st.stale_cycles, (uint64_t)(300 - valid));

  char diag[1024];
  ASSERT_GT(autd3_link_diagnostics(l, diag, sizeof diag), 0);
  ASSERT_CONTAINS(diag, ifname());

  ASSERT_EQ(threads_named("autd3-crab-txrx"), 1);
  autd3_link_close(l);
  /* close stops the shim's runtime (its tx/rx thread) ... */
  ASSERT_EQ(threads_named("autd3-crab-txrx"), 0);
  /* ... and returns every device to INIT */
  for (uint16_t k = 0; k < n; k++) expect_al(k, "ok 0x01");
  autd3_geometry_free(g);
}

/* Every device, including the DC reference, unplugged and power-cycled (the
 * shared scenarios power-cycle one device): the checker brings them all back
 * unconfigured devices to OP, and the inputs are valid again. */
TEST(power_cycle_all) {
  chain("power_cycle_all", 2, "--sm-watchdog-ms 100");
  autd3_geometry_t *g = geometry(2);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option(ifname());
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(run_cycles(l, 50, NULL), 0);
  emu_ok("unplug 0");
  int valid = run_cycles(l, 50, NULL);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_GE(st.stale_cycles, (uint64_t)(50 - valid));
  ASSERT_GT(st.stale_cycles, 0);
  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s));
  for (uint16_t k = 0; k < 2; k++) ASSERT_EQ(s.state[k], AUTD3_DEVICE_LOST);
  emu_ok("power-cycle 0");
  emu_ok("power-cycle 1");
  emu_ok("replug");
  /* Recovery is driven by the checker; no deadline is asserted, only a
   * bounded number of attempts. */
  bool all_op = false;
  for (int attempt = 0; attempt < 200 && !all_op; attempt++) {
    run_cycles(l, 10, NULL);
    ASSERT_OK(autd3_link_check_state(l, &s));
    all_op = s.state[0] == AUTD3_DEVICE_OP && s.state[1] == AUTD3_DEVICE_OP;
  }
  ASSERT_TRUE(all_op);
  ASSERT_GE(s.recoveries, 1);
  ASSERT_GT(run_cycles(l, 50, NULL), 0);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* The adapter disappears under a running link: the shim's tx/rx driver ends
 * and the next cycles report a fatal LINK error instead of stale forever. */
TEST(interface_removed) {
  chain("interface_removed", 1, NULL);
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option(ifname());
  o.u.ethercrab.pdu_timeout_ms = 20;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(run_cycles(l, 20, NULL), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "ip link del %s", ifname());
  ASSERT_EQ(system(cmd), 0);
  uint8_t tx[AUTD3_TX_FRAME_BYTES] = {0}, rx[AUTD3_RX_FRAME_BYTES];
  autd3_err_t err = AUTD3_OK;
  for (int i = 0; i < 200 && err == AUTD3_OK; i++) {
    bool ok;
    err = autd3_link_cycle(l, tx, rx, &ok);
  }
  ASSERT_ERR(err, AUTD3_E_LINK);
  ASSERT_CONTAINS(autd3_last_error(), ifname());
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* The "ignored replies : N" line of the link's diagnostics. */
static unsigned long long ignored_replies(autd3_link_t *l) {
  char diag[1024];
  ASSERT_GT(autd3_link_diagnostics(l, diag, sizeof diag), 0);
  const char *p = strstr(diag, "ignored replies : ");
  ASSERT_TRUE(p != NULL);
  return strtoull(p + strlen("ignored replies : "), NULL, 10);
}

/* Replies that arrive after their PDU timed out (the emulator holds every
 * reply 500 ms, 5x pdu_timeout_ms; 100 ms rather than 20 so that the scan at
 * open survives a loaded CI machine) are counted and ignored, and cycles work
 * again once replies are prompt. EtherCrab 0.7.1's own tx_rx_task ended on
 * such a reply (ReceiveFrame), so every later cycle failed with a fatal LINK
 * error. */
TEST(late_reply) {
  chain("late_reply", 1, NULL); /* no SM watchdog: the hold must not also trip it */
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option(ifname());
  o.u.ethercrab.pdu_timeout_ms = 100;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(run_cycles(l, 20, NULL), 0);
  unsigned long long before = ignored_replies(l);
  emu_ok("delay 500000");
  /* Cycles go lost (not errors: run_cycles asserts OK) while replies are
   * held; bounded wait for a late reply to reach the link. */
  for (int i = 0; i < 200 && ignored_replies(l) == before; i++) run_cycles(l, 10, NULL);
  ASSERT_GE(ignored_replies(l), before + 1);
  emu_ok("delay 0");
  int valid = 0;
  for (int i = 0; i < 200 && valid == 0; i++) valid = run_cycles(l, 10, NULL);
  ASSERT_GT(valid, 0);
  autd3_link_close(l);
  autd3_geometry_free(g);
}
