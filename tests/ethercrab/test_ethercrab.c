/* EtherCrab link smoke tests: option checks, error paths, and open / cycle /
 * check / close against the device emulator (src/emu, driven in a thread of
 * this process over the raw NIC layer) on a veth pair in a private network
 * namespace (`unshare -rn`). The shared EtherCAT scenarios
 * (tests/ethercat, prefix `ethercrab.`) cover the rest.
 * No timing is asserted anywhere. */
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
#include "harness/netns.h"
#include "harness/test.h"
#include "platform/platform.h"
#ifdef CRAB_HAVE_EMU
#include "emu/emu.h"
#include "nic/nic.h"
#endif

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

#ifdef CRAB_HAVE_EMU
/* ---- the emulator on emu0, in a thread of this process ------------------------ */

typedef struct emu_thread {
  autd3_emu_t *emu;
  autd3_nic_t *nic;
  pthread_mutex_t mu; /* the chain is not thread-safe: faults vs. frames */
  atomic_bool stop;
  atomic_uint hold_next_ms; /* hold the next reply this long before sending it */
  pthread_t th;
} emu_thread_t;

static void *emu_main(void *arg) {
  emu_thread_t *t = arg;
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
  while (!atomic_load(&t->stop)) {
    size_t len = 0;
    autd3_err_t e = autd3__nic_recv(t->nic, buf, sizeof buf, &len, autd3__now_ns() + 1000000);
    pthread_mutex_lock(&t->mu);
    uint64_t now = autd3__now_ns();
    bool reply = e == AUTD3_OK && autd3_emu_process(t->emu, buf, len, now);
    autd3_emu_tick(t->emu, now);
    pthread_mutex_unlock(&t->mu);
    if (reply) {
      unsigned hold_ms = atomic_exchange(&t->hold_next_ms, 0u);
      if (hold_ms) autd3__sleep_ns((uint64_t)hold_ms * 1000000u);
      (void)autd3__nic_send(t->nic, buf, len);
    }
  }
  return NULL;
}

static void emu_start(emu_thread_t *t, const autd3_emu_config_t *cfg) {
  memset(t, 0, sizeof *t);
  ASSERT_OK(autd3_emu_create(cfg, autd3__now_ns(), &t->emu));
  ASSERT_OK(autd3__nic_open("emu0", AUTD3_NIC_AUTO, &t->nic));
  pthread_mutex_init(&t->mu, NULL);
  ASSERT_EQ(pthread_create(&t->th, NULL, emu_main, t), 0);
}

static void emu_stop(emu_thread_t *t) {
  atomic_store(&t->stop, true);
  pthread_join(t->th, NULL);
  autd3__nic_close(t->nic);
  autd3_emu_destroy(t->emu);
  pthread_mutex_destroy(&t->mu);
}

static uint8_t emu_al_state(emu_thread_t *t, uint16_t k) {
  pthread_mutex_lock(&t->mu);
  uint8_t s = autd3_esc_al_state(&t->emu->esc[k]);
  pthread_mutex_unlock(&t->mu);
  return s;
}

/* SM watchdog off: a CI stall of 100 ms would otherwise drop devices to
 * SAFE-OP+ERROR in tests that are not about recovery (unplug_replug turns it
 * back on). */
static autd3_emu_config_t emu_config(uint16_t n) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = n;
  c.sm_watchdog_100us = 0;
  return c;
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

static void open_cycle_close(const char *name, uint16_t n) {
  netns(name);
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(n);
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(n);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_EQ(autd3_link_num_devices(l), n);
  ASSERT_EQ(autd3_link_kind(l), AUTD3_LINK_ETHERCRAB);
  for (uint16_t k = 0; k < n; k++) ASSERT_EQ(emu_al_state(&t, k), ESC_AL_OP);

  uint8_t rx[2 * 128];
  int valid = run_cycles(l, 300, rx);
  ASSERT_GT(valid, 0);
  /* inputs really come from the devices: a freshly booted firmware acks 0xFF */
  for (uint16_t k = 0; k < n; k++) ASSERT_EQ(rx[2 * k], 0xFF);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_EQ(st.cycles, 300);
  ASSERT_EQ(st.stale_cycles, (uint64_t)(300 - valid));

  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s));
  ASSERT_EQ(s.num_devices, n);
  for (uint16_t k = 0; k < n; k++) ASSERT_EQ(s.state[k], AUTD3_DEVICE_OP);

  char diag[512];
  ASSERT_GT(autd3_link_diagnostics(l, diag, sizeof diag), 0);
  ASSERT_CONTAINS(diag, "crab0");

  ASSERT_EQ(threads_named("autd3-crab-txrx"), 1);
  autd3_link_close(l);
  /* close stops the shim's runtime (its tx/rx thread) ... */
  ASSERT_EQ(threads_named("autd3-crab-txrx"), 0);
  /* ... and returns every device to INIT */
  for (uint16_t k = 0; k < n; k++) ASSERT_EQ(emu_al_state(&t, k), ESC_AL_INIT);
  autd3_geometry_free(g);
  emu_stop(&t);
}

TEST(open_cycle_close_1) { open_cycle_close("open_cycle_close_1", 1); }
TEST(open_cycle_close_2) { open_cycle_close("open_cycle_close_2", 2); }
TEST(open_cycle_close_5) { open_cycle_close("open_cycle_close_5", 5); }

TEST(auto_interface) {
  netns("auto_interface");
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(2);
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(2);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option(NULL);
  ASSERT_OK(autd3_link_open(&o, g, &l));
  char diag[512];
  autd3_link_diagnostics(l, diag, sizeof diag);
  ASSERT_CONTAINS(diag, "interface : crab0");
  ASSERT_GT(run_cycles(l, 50, NULL), 0);
  autd3_link_close(l);
  autd3_geometry_free(g);
  emu_stop(&t);
}

TEST(count_mismatch) {
  netns("count_mismatch");
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(2);
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(3);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_DEVICE_COUNT_MISMATCH);
  ASSERT_CONTAINS(autd3_last_error(), "found 2");
  autd3_geometry_free(g);
  emu_stop(&t);
}

TEST(not_autd) {
  netns("not_autd");
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(2);
  cfg.override_index = 1;
  cfg.override_vendor = 0x00000002;
  strcpy(cfg.override_name, "EL1004");
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(2);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NOT_AUTD);
  ASSERT_CONTAINS(autd3_last_error(), "position 1");
  ASSERT_CONTAINS(autd3_last_error(), "EL1004");
  autd3_geometry_free(g);
  emu_stop(&t);
}

/* Unplug device `first` and the ones after it mid-run: cycles go stale/lost
 * (counted, not errors) and the checker reports them Lost; after re-plugging
 * (optionally after a power cycle, which clears their configuration) the
 * checker brings them back, the link recovers to valid inputs and every
 * device reports OP again. */
static void unplug_replug(const char *name, bool power_cycle, uint16_t first) {
  netns(name);
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(2);
  cfg.sm_watchdog_100us = autd3_emu_config_default().sm_watchdog_100us; /* recovery paths included */
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(2);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(run_cycles(l, 50, NULL), 0);

  pthread_mutex_lock(&t.mu);
  ASSERT_OK(autd3_emu_unplug(t.emu, first));
  pthread_mutex_unlock(&t.mu);
  int valid = run_cycles(l, 50, NULL);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_GE(st.stale_cycles, (uint64_t)(50 - valid));
  ASSERT_GT(st.stale_cycles, 0);
  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s));
  for (uint16_t k = 0; k < 2; k++) ASSERT_EQ(s.state[k], k < first ? AUTD3_DEVICE_OP : AUTD3_DEVICE_LOST);

  pthread_mutex_lock(&t.mu);
  for (uint16_t k = first; power_cycle && k < 2; k++) ASSERT_OK(autd3_emu_power_cycle(t.emu, k, autd3__now_ns()));
  autd3_emu_replug(t.emu);
  pthread_mutex_unlock(&t.mu);
  /* Recovery is driven by the checker (ack SAFE-OP+ERROR, request OP); no
   * deadline is asserted, only a bounded number of attempts. */
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
  emu_stop(&t);
}

TEST(unplug_replug) { unplug_replug("unplug_replug", false, 1); }
TEST(unplug_power_cycle_replug) { unplug_replug("unplug_power_cycle_replug", true, 1); }
/* Every device, including the DC reference, comes back unconfigured. */
TEST(power_cycle_all) { unplug_replug("power_cycle_all", true, 0); }

/* The adapter disappears under a running link: the shim's tx/rx driver ends
 * and the next cycles report a fatal LINK error instead of stale forever. */
TEST(interface_removed) {
  netns("interface_removed");
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(1);
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  o.u.ethercrab.pdu_timeout_ms = 20;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(run_cycles(l, 20, NULL), 0);
  ASSERT_EQ(system("ip link del crab0"), 0);
  uint8_t tx[AUTD3_TX_FRAME_BYTES] = {0}, rx[AUTD3_RX_FRAME_BYTES];
  autd3_err_t err = AUTD3_OK;
  for (int i = 0; i < 200 && err == AUTD3_OK; i++) {
    bool ok;
    err = autd3_link_cycle(l, tx, rx, &ok);
  }
  ASSERT_ERR(err, AUTD3_E_LINK);
  ASSERT_CONTAINS(autd3_last_error(), "crab0");
  autd3_link_close(l);
  autd3_geometry_free(g);
  emu_stop(&t);
}
/* The "ignored replies : N" line of the link's diagnostics. */
static unsigned long long ignored_replies(autd3_link_t *l) {
  char diag[1024];
  ASSERT_GT(autd3_link_diagnostics(l, diag, sizeof diag), 0);
  const char *p = strstr(diag, "ignored replies : ");
  ASSERT_TRUE(p != NULL);
  return strtoull(p + strlen("ignored replies : "), NULL, 10);
}

/* A reply that arrives after its PDU timed out (the emulator holds it for 5x
 * pdu_timeout_ms; 100 ms rather than 20 so that the scan at open survives a
 * loaded CI machine) is counted and ignored, and later cycles still work.
 * EtherCrab 0.7.1's own tx_rx_task ended on such a reply (ReceiveFrame), so
 * every later cycle failed with a fatal LINK error. */
TEST(late_reply) {
  netns("late_reply");
  emu_thread_t t;
  autd3_emu_config_t cfg = emu_config(1);
  cfg.sm_watchdog_100us = 0; /* the hold must not also trip the SM watchdog */
  emu_start(&t, &cfg);
  autd3_geometry_t *g = geometry(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t o = crab_option("crab0");
  o.u.ethercrab.pdu_timeout_ms = 100;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(run_cycles(l, 20, NULL), 0);
  unsigned long long before = ignored_replies(l);
  atomic_store(&t.hold_next_ms, 500u);
  /* Cycles go lost (not errors: run_cycles asserts OK) while the reply is
   * held; bounded wait for the late reply to reach the link. */
  for (int i = 0; i < 200 && ignored_replies(l) == before; i++) run_cycles(l, 10, NULL);
  ASSERT_GE(ignored_replies(l), before + 1);
  ASSERT_GT(run_cycles(l, 50, NULL), 0);
  autd3_link_close(l);
  autd3_geometry_free(g);
  emu_stop(&t);
}
#else
/* Same names as above (ctest registers them from the TEST lines). */
#define EMU_SKIP(name) \
  TEST(name) { SKIP("the device emulator library (src/emu, target autd3emu) is not built in this tree"); }
EMU_SKIP(open_cycle_close_1)
EMU_SKIP(open_cycle_close_2)
EMU_SKIP(open_cycle_close_5)
EMU_SKIP(auto_interface)
EMU_SKIP(count_mismatch)
EMU_SKIP(not_autd)
EMU_SKIP(unplug_replug)
EMU_SKIP(unplug_power_cycle_replug)
EMU_SKIP(power_cycle_all)
EMU_SKIP(interface_removed)
EMU_SKIP(late_reply)
#endif
