/* The in-process emulator link: exchanges, timing-model cycle counts, faults,
 * counters, bad options. Pacing is measured and printed, never asserted
 * (beyond the lower bound that absolute sleeps guarantee). */
#include <stdbool.h>
#include <time.h>

#include "autd3/emulator.h"
#include "autd3/geometry.h"
#include "autd3/link.h"
#include "autd3/link_driver.h"
#include "harness/test.h"
#include "platform/platform.h"

#define N_MAX 4
static uint8_t tx[N_MAX * AUTD3_TX_FRAME_BYTES];
static uint8_t rx[N_MAX * AUTD3_RX_FRAME_BYTES];

static autd3_link_t *open_emu(size_t n, uint32_t cycle_ns, const autd3_timing_model_t *timing) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = cycle_ns;
  if (timing) o.u.emulator.timing = *timing;
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_geometry_free(g); /* the link does not keep the geometry */
  ASSERT_EQ(autd3_link_num_devices(l), n);
  ASSERT_EQ(autd3_link_kind(l), AUTD3_LINK_EMULATOR);
  return l;
}

static void set_all(size_t n, uint8_t seq, uint8_t cmd) {
  for (size_t i = 0; i < n; i++) autd3_tx_encode(tx + i * AUTD3_TX_FRAME_BYTES, seq, cmd, NULL, 0);
}

static bool cycle(autd3_link_t *l) {
  bool valid = false;
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  return valid;
}

/* Exchanges from the one that carries (seq, cmd) until every device acks it. */
static int exchanges_until_ack(autd3_link_t *l, size_t n, uint8_t seq, uint8_t cmd) {
  set_all(n, seq, cmd);
  for (int k = 0; k < 50; k++) {
    cycle(l);
    bool all = true;
    for (size_t i = 0; i < n; i++) all = all && rx[2 * i] == seq;
    if (all) return k;
  }
  TEST_FAIL_("seq %u never acked", seq);
}

TEST(open_bad_options) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  autd3_link_t *l = NULL;
  o.u.emulator.cycle_ns = 0;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "cycle_ns");
  ASSERT_TRUE(l == NULL);
  o.u.emulator.cycle_ns = 2000000000u;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  ASSERT_ERR(autd3_link_open(&o, g, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_link_open(NULL, g, &l), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_link_open(&o, NULL, &l), AUTD3_E_INVALID_ARGUMENT);
  autd3_geometry_free(g);
  ASSERT_EQ(autd3_emulator_option_default().cycle_ns, 1000000);
}

TEST(bad_arguments) {
  autd3_link_t *l = open_emu(2, 1000000, NULL);
  autd3_device_counters_t c;
  autd3_device_fault_t f = {0};
  ASSERT_ERR(autd3_emulator_counters(l, 2, &c), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "device 2");
  ASSERT_ERR(autd3_emulator_inject(l, 5, &f), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_emulator_inject(l, 0, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR((autd3_emulator_counters)(l, 0, NULL), AUTD3_E_INVALID_ARGUMENT); /* the function: the macro takes sizeof *out */
  ASSERT_ERR(autd3_emulator_counters(NULL, 0, &c), AUTD3_E_INVALID_ARGUMENT);
  bool valid;
  ASSERT_ERR(autd3_link_cycle(l, NULL, rx, &valid), AUTD3_E_INVALID_ARGUMENT);
  autd3_link_close(l);
}

/* Default model: a frame sent in exchange k is taken at the next SYNC0 and
 * its ack is in the inputs of exchange k+2 (never in k itself). */
TEST(default_model_ack_after_two_exchanges) {
  autd3_link_t *l = open_emu(2, 1000000, NULL);
  set_all(2, 0xFF, 0xFF); /* boot dedup memory: nothing taken */
  cycle(l);
  ASSERT_EQ(rx[0], 0xFF);
  ASSERT_EQ(rx[2], 0xFF);
  set_all(2, 0, AUTD3_CMD_RESET); /* Reset acks as 0xFF */
  for (int i = 0; i < 3; i++) cycle(l);
  ASSERT_EQ(rx[0], 0xFF);
  int k;
  int hist[4] = {0};
  for (int s = 0; s < 20; s++) {
    k = exchanges_until_ack(l, 2, (uint8_t)s, AUTD3_CMD_NOP);
    ASSERT_GE(k, 1); /* never in the same exchange */
    ASSERT_LE(k, 2);
    hist[k]++;
  }
  char diag[512];
  autd3_link_diagnostics(l, diag, sizeof diag);
  printf("exchanges until ack: 1:%d 2:%d\n%s", hist[1], hist[2], diag);
  autd3_device_counters_t c;
  ASSERT_OK(autd3_emulator_counters(l, 1, &c));
  ASSERT_EQ(c.executed, 20);
  ASSERT_EQ(c.resets, 1);
  ASSERT_EQ(c.seq_mismatch, 0);
  ASSERT_GT(c.deduplicated, 0); /* the repeats of each frame */
  ASSERT_EQ(c.received, c.executed + c.resets + c.deduplicated);
  autd3_link_status_t st;
  ASSERT_OK(autd3_link_check_state(l, &st));
  ASSERT_EQ(st.num_devices, 2);
  ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  autd3_link_close(l);
}

TEST(ideal_model_same_exchange) {
  autd3_timing_model_t m = autd3_timing_model_ideal();
  autd3_link_t *l = open_emu(3, 250000, &m);
  for (int s = 0; s < 300; s++) ASSERT_EQ(exchanges_until_ack(l, 3, (uint8_t)s, AUTD3_CMD_NOP), 0);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_EQ(st.cycles, 300);
  ASSERT_EQ(st.stale_cycles, 0);
  autd3_link_close(l);
}

TEST(read_version_and_errors) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = 200000;
  o.u.emulator.timing = autd3_timing_model_ideal();
  o.u.emulator.version.cpu_major = 9;
  autd3_link_t *l;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_geometry_free(g);
  exchanges_until_ack(l, 1, 0, AUTD3_CMD_READ_CPU_FW_VERSION_MAJOR);
  ASSERT_EQ(rx[1], 9);
  exchanges_until_ack(l, 1, 1, AUTD3_CMD_SYNCHRONIZE); /* any SYNC0 period is fine in-process */
  ASSERT_EQ(rx[1], 0);
  exchanges_until_ack(l, 1, 2, 0x77);
  ASSERT_EQ(rx[1], AUTD3_DEV_ERR_UNKNOWN_CMD);
  autd3_link_close(l);
}

TEST(fault_drop_next) {
  autd3_timing_model_t m = autd3_timing_model_ideal();
  autd3_link_t *l = open_emu(2, 200000, &m);
  exchanges_until_ack(l, 2, 0, AUTD3_CMD_NOP);
  autd3_device_fault_t f = {.drop_next = 3};
  ASSERT_OK(autd3_emulator_inject(l, 1, &f));
  set_all(2, 1, AUTD3_CMD_NOP);
  for (int k = 0; k < 3; k++) {
    ASSERT_TRUE(cycle(l));
    ASSERT_EQ(rx[0], 1);
    ASSERT_EQ(rx[2], 0); /* device 1 never saw it */
  }
  cycle(l);
  ASSERT_EQ(rx[2], 1); /* the repeat gets through */
  autd3_device_counters_t c0, c1;
  ASSERT_OK(autd3_emulator_counters(l, 0, &c0));
  ASSERT_OK(autd3_emulator_counters(l, 1, &c1));
  ASSERT_EQ(c0.received, c1.received + 3);
  ASSERT_EQ(c0.executed, 2);
  ASSERT_EQ(c1.executed, 2);
  autd3_link_close(l);
}

TEST(fault_invalidate_rx) {
  autd3_link_t *l = open_emu(2, 200000, NULL);
  set_all(2, 0xFF, 0xFF);
  cycle(l);
  autd3_device_fault_t f = {.invalidate_rx = 3};
  ASSERT_OK(autd3_emulator_inject(l, 0, &f));
  int invalid = 0;
  for (int k = 0; k < 10; k++) invalid += !cycle(l);
  ASSERT_EQ(invalid, 3);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_EQ(st.cycles, 11);
  ASSERT_EQ(st.stale_cycles, 3);
  ASSERT_EQ(st.lost_cycles, 0);
  autd3_link_close(l);
}

TEST(fault_freeze) {
  autd3_link_t *l = open_emu(2, 200000, NULL);
  exchanges_until_ack(l, 2, 0, AUTD3_CMD_NOP);
  autd3_device_fault_t f = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(l, 0, &f));
  set_all(2, 1, AUTD3_CMD_NOP);
  for (int k = 0; k < 10; k++) ASSERT_TRUE(cycle(l));
  ASSERT_EQ(rx[0], 0); /* frozen: last value */
  ASSERT_EQ(rx[2], 1);
  autd3_link_status_t st;
  ASSERT_OK(autd3_link_check_state(l, &st));
  ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP); /* the ESC still answers: only the firmware hangs */
  f.freeze = false;
  ASSERT_OK(autd3_emulator_inject(l, 0, &f));
  for (int k = 0; k < 4; k++) cycle(l);
  ASSERT_EQ(rx[0], 1);
  autd3_link_close(l);
}

/* Injection and counter reads from another thread while the link cycles. */
static _Atomic bool stop;
static void *injector(void *arg) {
  autd3_link_t *l = arg;
  autd3_device_counters_t c;
  uint64_t last = 0;
  while (!stop) {
    autd3_device_fault_t f = {.invalidate_rx = 1};
    ASSERT_OK(autd3_emulator_inject(l, 1, &f));
    ASSERT_OK(autd3_emulator_counters(l, 1, &c));
    ASSERT_GE(c.received, last); /* monotonic */
    last = c.received;
    autd3__sleep_ns(300000);
  }
  return NULL;
}

TEST(concurrent_inject_and_counters) {
  autd3_link_t *l = open_emu(2, 100000, NULL);
  autd3__thread_t th;
  stop = false;
  ASSERT_OK(autd3__thread_start(&th, injector, l, "injector"));
  set_all(2, 0, AUTD3_CMD_NOP);
  for (int k = 0; k < 300; k++) cycle(l);
  stop = true;
  autd3__thread_join(&th);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_EQ(st.cycles, 300);
  ASSERT_GT(st.stale_cycles, 0);
  autd3_device_counters_t c;
  ASSERT_OK(autd3_emulator_counters(l, 1, &c));
  ASSERT_EQ(c.received, 299); /* 300 images; the last one is taken at the SYNC0 after the final exchange */
  autd3_link_close(l);
}

/* Pacing: deadlines on an absolute grid. Prints the drift (elapsed minus n
 * cycles); asserts only the lower bound that absolute sleeps guarantee. */
TEST(pacing_measured) {
  const uint32_t cycle_ns = 1000000;
  const int n = 500;
  autd3_link_t *l = open_emu(2, cycle_ns, NULL);
  set_all(2, 0, AUTD3_CMD_NOP);
  cycle(l);
  uint64_t t0 = autd3__now_ns();
  for (int k = 0; k < n; k++) cycle(l);
  uint64_t el = autd3__now_ns() - t0;
  char diag[512];
  autd3_link_diagnostics(l, diag, sizeof diag);
  printf("%d cycles of %u ns: elapsed %.3f ms, drift %+.3f ms\n%s", n, cycle_ns, el / 1e6,
         ((double)el - (double)n * cycle_ns) / 1e6, diag);
  /* By construction the n-th exchange is at least n-1 grid points after the
   * latest grid point before t0, itself less than a cycle before t0. */
  ASSERT_GE(el, (uint64_t)(n - 2) * cycle_ns);
  autd3_link_stats_t st;
  autd3_link_stats(l, &st);
  ASSERT_EQ(st.cycles, (uint64_t)n + 1);
  autd3_link_close(l);
}

/* A caller late by several cycles: the next exchange moves to the next grid
 * point and the following ones are paced again (no burst). */
TEST(late_caller_resynchronises) {
  const uint32_t cycle_ns = 1000000;
  autd3_link_t *l = open_emu(1, cycle_ns, NULL);
  set_all(1, 0, AUTD3_CMD_NOP);
  cycle(l);
  autd3__sleep_ns(5ull * cycle_ns);
  cycle(l);
  uint64_t t0 = autd3__now_ns();
  for (int k = 0; k < 10; k++) cycle(l);
  uint64_t el = autd3__now_ns() - t0;
  ASSERT_GE(el, 8ull * cycle_ns); /* (n-2) cycles by construction; a burst would return at once */
  char diag[512];
  autd3_link_diagnostics(l, diag, sizeof diag);
  ASSERT_CONTAINS(diag, "skipped grid points : ");
  ASSERT_TRUE(strstr(diag, "skipped grid points : 0\n") == NULL);
  printf("%s", diag);
  autd3_link_close(l);
}

/* autd3_emulator_power_cycle: the device boots (ack 0xFF, expects seq 0
 * again) and the link reports it as reset evidence before that cycle's
 * inputs; the other device is untouched. */
TEST(power_cycle_reports_reset) {
  autd3_link_t *l = open_emu(2, 200000, NULL);
  set_all(2, 0, AUTD3_CMD_RESET);
  for (int i = 0; i < 3; i++) cycle(l);
  for (int s = 0; s < 5; s++) exchanges_until_ack(l, 2, (uint8_t)s, AUTD3_CMD_NOP);
  ASSERT_EQ(autd3_link_device_resets(l, 0), 0);
  ASSERT_EQ(autd3_link_device_resets(l, 1), 0);
  ASSERT_OK(autd3_emulator_power_cycle(l, 1));
  cycle(l); /* applied at this exchange, before its inputs are read */
  ASSERT_EQ(autd3_link_device_resets(l, 1), 1);
  ASSERT_EQ(autd3_link_device_resets(l, 0), 0);
  ASSERT_EQ(rx[2], 0xFF); /* booted: seq 4 in the tx image is not its expected seq 0 */
  ASSERT_EQ(rx[0], 4);
  /* After the boot it numbers from 0 again. */
  autd3_tx_encode(tx + AUTD3_TX_FRAME_BYTES, 0, AUTD3_CMD_NOP, NULL, 0);
  for (int k = 0; k < 50 && rx[2] != 0; k++) cycle(l);
  ASSERT_EQ(rx[2], 0);
  ASSERT_ERR(autd3_emulator_power_cycle(l, 2), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_emulator_power_cycle(NULL, 0), AUTD3_E_INVALID_ARGUMENT);
  autd3_link_close(l);
}
