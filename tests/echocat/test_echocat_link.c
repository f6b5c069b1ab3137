/* echocat-only scenarios over veth + autd3-emu (the shared ones are in
 * tests/ethercat/test_ethercat_link.c): the libpcap back end, send cycles,
 * a state check while nobody cycles, diagnostics. No timing assertions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "harness/emuctl.h"
#include "harness/test.h"
#include "platform/platform.h"

#define LINK_KIND AUTD3_LINK_ECHOCAT
#include "harness/emu_chain.h"

static autd3_link_option_t option(void) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.ethercat.interface = getenv("AUTD3_TEST_IFNAME");
  return o;
}

/* Open, run `cycles` (every other one after wait_next_cycle, as the client's
 * bus thread does), return the number of valid ones; all devices must be OP after. */
static int run(const autd3_link_option_t *o, size_t n, int cycles, char *diag, size_t cap) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(o, g, &l));
  uint8_t *tx = calloc(n, AUTD3_TX_FRAME_BYTES), rx[2 * AUTD3_MAX_DEVICES];
  int valid = 0;
  for (int i = 0; i < cycles; i++) {
    bool v = false;
    if (i % 2)
      ASSERT_OK(autd3_link_wait_next_cycle(l));
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
    valid += v;
  }
  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s));
  for (size_t d = 0; d < n; d++)
    ASSERT_EQ(s.state[d], AUTD3_DEVICE_OP);
  autd3_link_diagnostics(l, diag, cap);
  autd3_link_close(l);
  free(tx);
  autd3_geometry_free(g);
  return valid;
}

TEST(pcap_backend) {
  in_netns("pcap_backend", 2, NULL, false);
  autd3_link_option_t o = option();
  o.u.echocat.backend = AUTD3_NIC_PCAP;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_t *l = NULL;
  autd3_err_t e = autd3_link_open(&o, g, &l);
  autd3_geometry_free(g);
  if (e == AUTD3_E_NOT_BUILT)
    SKIP("no libpcap back end or no libpcap to load: %s", autd3_last_error());
  ASSERT_OK(e);
  autd3_link_close(l);
  char diag[1024];
  ASSERT_GT(run(&o, 2, 200, diag, sizeof diag), 0);
}

TEST(cycle_500us_and_2ms_send_cycle) {
  in_netns("cycle_500us_and_2ms_send_cycle", 2, "--dc-required", false);
  char diag[1024];
  autd3_link_option_t o = option();
  o.u.echocat.ethercat.sync0_period_ns = 500000;
  o.u.echocat.spin_ns = 20000;
  ASSERT_GT(run(&o, 2, 300, diag, sizeof diag), 0);
  printf("500 us:\n%s", diag);
  o = option();
  o.u.echocat.ethercat.send_cycle_ns = 2000000; /* every other SYNC0 */
  o.u.echocat.ethercat.sync0_shift_ns = 200000;
  ASSERT_GT(run(&o, 2, 100, diag, sizeof diag), 0);
  printf("2 ms send cycle:\n%s", diag);
  ASSERT_CONTAINS(diag, "departure jitter p50");
  ASSERT_CONTAINS(diag, "frames per cycle     : 2.00");
}

/* check_state with nobody cycling: the checker drives the bus itself. */
TEST(check_state_without_cycles) {
  in_netns("check_state_without_cycles", 3, "--sm-watchdog-ms 100", false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(3, NULL, &g));
  autd3_link_option_t o = option();
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_link_status_t s;
  ASSERT_OK(autd3_link_check_state(l, &s)); /* devices may have dropped to SAFE-OP (no outputs): still answers */
  ASSERT_EQ(s.num_devices, 3);
  for (int d = 0; d < 3; d++)
    ASSERT_NE(s.state[d], AUTD3_DEVICE_LOST);
  uint8_t tx[3 * AUTD3_TX_FRAME_BYTES] = {0}, rx[6];
  bool v;
  for (int i = 0; i < 300; i++) /* cycling again brings everything back to OP through the checker */
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
  for (int t = 0; t < 50; t++) {
    ASSERT_OK(autd3_link_check_state(l, &s));
    if (s.state[0] == AUTD3_DEVICE_OP && s.state[1] == AUTD3_DEVICE_OP && s.state[2] == AUTD3_DEVICE_OP)
      break;
    for (int i = 0; i < 100; i++)
      ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
  }
  for (int d = 0; d < 3; d++)
    ASSERT_EQ(s.state[d], AUTD3_DEVICE_OP);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* The bus goes silent (nothing answers) and comes back: every silent cycle is
 * counted lost, cycling does not stall, and valid cycles resume. */
TEST(silent_bus_recovers) {
  in_netns("silent_bus_recovers", 2, "--sm-watchdog-ms 100", false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option();
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES] = {0}, rx[4];
  bool v;
  for (int i = 0; i < 50; i++)
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
  char reply[256];
  ASSERT_EQ(autd3_emuctl("silence 1", reply, sizeof reply), 0);
  autd3_link_stats_t a, b;
  autd3_link_stats(l, &a);
  for (int i = 0; i < 100; i++) {
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
    ASSERT_FALSE(v && i > 5); /* a cycle or two may still have been answered */
  }
  autd3_link_stats(l, &b);
  ASSERT_GE(b.lost_cycles - a.lost_cycles, 94);
  ASSERT_EQ(autd3_emuctl("silence 0", reply, sizeof reply), 0);
  int valid = 0;
  for (int i = 0; i < 3000 && valid < 10; i++) {
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
    valid += v;
    if (i % 100 == 99) { /* devices whose SM watchdog expired are brought back by the checker */
      autd3_link_status_t s;
      ASSERT_OK(autd3_link_check_state(l, &s));
    }
  }
  ASSERT_EQ(valid, 10);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* Reset every device, then send K frames (seq k, NOP), one per cycle, with
 * wait_next_cycle before most and the caller's stalls given by `stall`; then
 * the last frame again until its ack is read. A device executes a frame only
 * if its seq is the next one, so one lost or overwritten image (two in one
 * SYNC0 interval) stops its acks for good: every device must ack K - 1. */
static void every_image_executed(autd3_link_t *l, size_t n, int K, bool stall) {
  uint8_t *tx = calloc(n, AUTD3_TX_FRAME_BYTES), rx[2 * AUTD3_MAX_DEVICES] = {0};
  bool v = false, reset = false;
  for (int i = 0; i < 300 && !reset; i++) { /* Reset: ack 0xFF, the next seq expected is 0 */
    for (size_t d = 0; d < n; d++)
      autd3_tx_encode(tx + d * AUTD3_TX_FRAME_BYTES, 0, AUTD3_CMD_RESET, NULL, 0);
    ASSERT_OK(autd3_link_wait_next_cycle(l));
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
    reset = v;
    for (size_t d = 0; d < n; d++)
      reset = reset && rx[2 * d] == 0xFF;
  }
  ASSERT_TRUE(reset);
  uint32_t lcg = 12345;
  for (int k = 0; k < K; k++) {
    for (size_t d = 0; d < n; d++)
      autd3_tx_encode(tx + d * AUTD3_TX_FRAME_BYTES, (uint8_t)k, AUTD3_CMD_NOP, NULL, 0);
    lcg = lcg * 1103515245u + 12345u;
    switch (k % 5) {
    case 0:
    case 1: ASSERT_OK(autd3_link_wait_next_cycle(l)); break;
    case 2: break; /* a caller without the hook: cycle() alone, as before */
    case 3:
      ASSERT_OK(autd3_link_wait_next_cycle(l));
      ASSERT_OK(autd3_link_wait_next_cycle(l));
      break;
    default:
      ASSERT_OK(autd3_link_wait_next_cycle(l));
      if (stall)
        autd3__sleep_ns((lcg >> 8) % 1500000u);
    }
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
  }
  bool acked = false;
  for (int i = 0; i < 200 && !acked; i++) { /* the last frame again until its ack is read */
    ASSERT_OK(autd3_link_wait_next_cycle(l));
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &v));
    acked = v;
    for (size_t d = 0; d < n; d++)
      acked = acked && rx[2 * d] == (uint8_t)(K - 1);
  }
  char diag[1024];
  autd3_link_diagnostics(l, diag, sizeof diag);
  printf("%s", diag);
  for (size_t d = 0; d < n; d++)
    ASSERT_EQ(rx[2 * d], (uint8_t)(K - 1));
  ASSERT_TRUE(acked);
  free(tx);
}

/* wait_next_cycle + cycle as the client's bus thread calls them, mixed with
 * cycles without a wait, a repeated wait, and callers that stall between the
 * wait and the cycle (up to 1.5 cycles: late wake-ups). All frames must be
 * executed, in order. */
TEST(wait_next_cycle_keeps_every_image) {
  in_netns("wait_next_cycle_keeps_every_image", 2, NULL, false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option();
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  every_image_executed(l, 2, 600, true);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* The computed wire limit (docs/echocat.md "The wire limit"): 18 devices fill
 * a 1 ms cycle of the emulator's 100 Mbit/s line and run the long-chain plan;
 * every frame is executed once, in order (late edges are allowed, lost or
 * overwritten images are not), with callers that stall. */
TEST(long_chain_at_wire_limit) {
  in_netns("long_chain_at_wire_limit", 18, "--wire", false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(18, NULL, &g));
  autd3_link_option_t o = option();
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  every_image_executed(l, 18, 400, true);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* A chain one device beyond the wire limit of its cycle (docs/echocat.md "The
 * wire limit"; the emulator's --wire line) is refused naming the cycle that
 * carries it, and at that cycle every image is executed once, in order. */
static void beyond_wire_limit(const char *name, size_t n, uint32_t sync0_ns, const char *need) {
  in_netns(name, n, "--wire", false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  autd3_link_option_t o = option();
  o.u.echocat.ethercat.sync0_period_ns = sync0_ns;
  autd3_link_t *l = NULL;
  char want[32];
  snprintf(want, sizeof want, "%zu devices need", n);
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), want);
  ASSERT_CONTAINS(autd3_last_error(), need);
  ASSERT_TRUE(l == NULL);
  o.u.echocat.ethercat.sync0_period_ns = sync0_ns + 500000u;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  every_image_executed(l, n, 200, false);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* 18 devices fit 1 ms (981 µs of line), the 19th needs 1.5 ms. */
TEST(chain_beyond_wire_limit) { beyond_wire_limit("chain_beyond_wire_limit", 19, 1000000u, "at least 1500 us"); }

/* 9 devices fit 500 µs (496.8 µs of line), the 10th needs 1 ms. */
TEST(chain_beyond_wire_limit_500us) { beyond_wire_limit("chain_beyond_wire_limit_500us", 10, 500000u, "at least 1000 us"); }

/* A chain whose outputs cannot cross a 100 Mbit/s line within one send cycle
 * is refused with a message that says how long the cycle must be; the same
 * chain opens with that longer cycle. */
TEST(chain_too_long_for_cycle) {
  in_netns("chain_too_long_for_cycle", 20, NULL, false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(20, NULL, &g));
  autd3_link_option_t o = option();
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "20 devices need");
  ASSERT_CONTAINS(autd3_last_error(), "raise sync0_period_ns");
  ASSERT_TRUE(l == NULL);
  o.u.echocat.ethercat.sync0_period_ns = 1500000;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_link_close(l);
  autd3_geometry_free(g);
}

/* One wake-up per cycle while streaming (docs/echocat.md "Wake-ups and CPU"):
 * with more frames queued the client's bus thread skips wait_next_cycle, and
 * echocat then takes each read's reply at its next call from the NIC's ring
 * instead of waiting for it. Every frame still completes, in order, with the
 * devices' answer, and a stop-and-wait request afterwards is answered (the
 * hook is used again). With AUTD3_NIC_RING=0 (no arrival stamps: the phase
 * guard needs them) no cycle defers. Counts, no timing. */
TEST(streaming_defers_reads) {
  in_netns("streaming_defers_reads", 2, NULL, false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = option();
  /* stalls of a loaded CI box: 2 s of stale inputs before a frame is given up on */
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 250;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, 620));
  autd3_response_t r;
  enum { N = 1500, WINDOW = 32 };
  static autd3_request_t *req[N];
  for (int i = 0; i < N + WINDOW; i++) {
    if (i >= WINDOW) {
      ASSERT_OK(autd3_request_wait(req[i - WINDOW], &r));
      ASSERT_EQ(r.data[0], 0);
      ASSERT_EQ(r.data[1], 0);
    }
    if (i < N)
      ASSERT_OK(autd3_client_send(c, &f, &req[i]));
  }
  for (int i = 0; i < 20; i++)
    ASSERT_OK(autd3_client_send_checked(c, &f, &r));
  autd3_client_stats_t cs;
  autd3_client_stats(c, &cs);
  ASSERT_EQ(cs.failed, 0);
  char diag[2048];
  autd3_link_diagnostics(autd3_client_link(c), diag, sizeof diag);
  printf("%s", diag);
  const char *p = strstr(diag, "one-wake-up cycles   : ");
  ASSERT_TRUE(p != NULL);
  unsigned long deferred = strtoul(p + strlen("one-wake-up cycles   : "), NULL, 10);
  const char *ring = getenv("AUTD3_NIC_RING");
  /* qemu-user (make test-aarch64 exports QEMU_LD_PREFIX) cannot set up PACKET_MMAP: the fallback path
   * runs there, which must then never defer; natively the ring must be in use. */
  if ((ring && strcmp(ring, "0") == 0) || (getenv("QEMU_LD_PREFIX") && strstr(diag, "AF_PACKET, recvfrom"))) {
    ASSERT_CONTAINS(diag, "nic receive path     : AF_PACKET, recvfrom");
    ASSERT_EQ(deferred, 0);
  } else {
    ASSERT_CONTAINS(diag, "PACKET_MMAP RX ring");
    ASSERT_GT(deferred, 0);
  }
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}
