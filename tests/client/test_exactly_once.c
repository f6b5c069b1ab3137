/*
 * The client's exactly-once accounting (docs/reliability.md "Exactly once"):
 * device reboots are events, not acks; recovery touches only the device that
 * needs it, so nobody runs a frame twice; every request says per device what
 * happened; misuse of handles and of a closed client fails cleanly.
 *
 * Over the in-process emulator (which reports power-cycles as link evidence)
 * and the fixture's testlink (no evidence; hooks for a silent reboot and for
 * a foreign writer). No test asserts timing: only outcomes and counters.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "client/client_fixture.h"

#define CYCLE_NS 500000u

static autd3_frame_t bench_frame(void) {
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, AUTD3_XOR_HASH_MAX_DATA));
  return f;
}

/* Outcome of one request on one device, and the checks every result must pass. */
typedef struct {
  autd3_err_t err;
  autd3_response_t resp;
} result_t;

static void check_result(const result_t *r, size_t n) {
  int first = -1;
  for (size_t d = 0; d < n; d++) {
    uint8_t o = r->resp.outcome[d];
    ASSERT_TRUE(o == AUTD3_OUTCOME_EXECUTED || o == AUTD3_OUTCOME_NOT_EXECUTED || o == AUTD3_OUTCOME_UNKNOWN);
    if (o != AUTD3_OUTCOME_EXECUTED && first < 0) first = (int)d;
  }
  /* OK iff every device executed it. */
  ASSERT_EQ(r->err == AUTD3_OK, first < 0);
}

/* What stream() does to one device just before frame `at`: a power cycle
 * (the emulator reports it as link evidence) or an emulator fault. */
typedef struct {
  size_t at;
  uint16_t dev;
  bool power_cycle;
  autd3_device_fault_t fault;
} injection_t;

#define STREAM_MAX 400

/* Stream n bench frames with `window` requests in flight, injecting `inj`;
 * every request's result lands in res[] (in send order). */
static void stream(autd3_client_t *c, size_t n, size_t window, const injection_t *inj, result_t *res) {
  ASSERT_TRUE(n <= STREAM_MAX);
  static autd3_request_t *win[STREAM_MAX];
  autd3_frame_t f = bench_frame();
  size_t waited = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == inj->at) {
      if (inj->power_cycle) ASSERT_OK(autd3_emulator_power_cycle(autd3_client_link(c), inj->dev));
      else ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), inj->dev, &inj->fault));
    }
    if (i >= window) {
      res[waited].err = autd3_request_wait(win[waited], &res[waited].resp);
      waited++;
    }
    ASSERT_OK(autd3_client_send(c, &f, &win[i]));
  }
  while (waited < n) {
    res[waited].err = autd3_request_wait(win[waited], &res[waited].resp);
    waited++;
  }
}

/* ---- power-cycle of one device mid-stream (emulator: link evidence) ----------------------- */

TEST(power_cycle_mid_stream) {
  enum { N = 400, WINDOW = 16, AT = 150 };
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  static result_t res[N];
  const injection_t inj = {.at = AT, .dev = 1, .power_cycle = true};
  stream(c, N, WINDOW, &inj, res);
  /* Device 1: EXECUTED*, then what was in flight at the reboot (UNKNOWN), then
   * what was staged while it was re-established (NOT_EXECUTED), then EXECUTED
   * again. Device 0 executed every frame. */
  size_t executed1 = 0, unknown1 = 0, not_executed1 = 0, phase = 0;
  for (size_t i = 0; i < N; i++) {
    check_result(&res[i], 2);
    ASSERT_EQ(res[i].resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
    uint8_t o = res[i].resp.outcome[1];
    size_t p = o == AUTD3_OUTCOME_UNKNOWN ? 1 : o == AUTD3_OUTCOME_NOT_EXECUTED ? 2 : phase == 0 ? 0 : 3;
    ASSERT_GE(p, phase);
    phase = p;
    if (o == AUTD3_OUTCOME_EXECUTED) executed1++;
    if (o == AUTD3_OUTCOME_UNKNOWN) {
      unknown1++;
      ASSERT_EQ(res[i].err, AUTD3_E_OUTCOME_UNKNOWN);
    }
    if (o == AUTD3_OUTCOME_NOT_EXECUTED) {
      not_executed1++;
      ASSERT_EQ(res[i].err, AUTD3_E_DEVICE_RESET);
    }
  }
  fprintf(stderr, "device 1: %zu executed, %zu unknown, %zu not executed\n", executed1, unknown1, not_executed1);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 1);
  ASSERT_EQ(autd3_client_device_resets(c, 0), 0);
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.device_resets, 1);

  /* After the re-establishment device 1 runs new frames again. */
  fx_wait_device_ready(c, 1, 1);
  autd3_response_t resp;
  ASSERT_OK(autd3_client_send_checked(c, &f, &resp));
  ASSERT_EQ(resp.outcome[1], AUTD3_OUTCOME_EXECUTED);
  executed1++;

  /* Exactly once: device 0 ran the open sequence and every frame once. */
  ASSERT_EQ(fx_counters(c, 0).executed, FX_OPEN_EXECUTED + N + 1);
  /* Device 1 ran the open sequence, SetMode + Clear + Synchronize when re-established,
   * every EXECUTED frame, and at most the UNKNOWN ones on top. */
  uint64_t k1 = fx_counters(c, 1).executed;
  ASSERT_GE(k1, FX_OPEN_EXECUTED + FX_REINIT_EXECUTED + executed1);
  ASSERT_TRUE(k1 <= FX_OPEN_EXECUTED + FX_REINIT_EXECUTED + executed1 + unknown1);
  ASSERT_CLOSE_OK(c);
}

/* A request failing because of the reboot names the device. */
TEST(power_cycle_names_device) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  ASSERT_OK(autd3_emulator_power_cycle(autd3_client_link(c), 1));
  /* Keep sending until a request reports the reset (the first ones may run before it). */
  autd3_err_t err = AUTD3_OK;
  autd3_response_t resp;
  for (int i = 0; i < 1000 && err == AUTD3_OK; i++) err = autd3_client_send_checked(c, &f, &resp);
  ASSERT_TRUE(err == AUTD3_E_DEVICE_RESET || err == AUTD3_E_OUTCOME_UNKNOWN);
  ASSERT_CONTAINS(autd3_last_error(), "device 1");
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  ASSERT_TRUE(resp.outcome[1] != AUTD3_OUTCOME_EXECUTED);
  fx_wait_device_ready(c, 1, 1);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_CLOSE_OK(c);
}

/* Low latency: the re-establishment includes SetMode, and numbering after it
 * continues per device. */
TEST(power_cycle_low_latency) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.low_latency = true;
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_frame_t f = bench_frame();
  for (int i = 0; i < 5; i++) ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_OK(autd3_emulator_power_cycle(autd3_client_link(c), 0));
  fx_wait_device_ready(c, 0, 1);
  for (int i = 0; i < 300; i++) ASSERT_OK(autd3_client_send_checked(c, &f, NULL)); /* across a seq wrap */
  /* Device 1: the open sequence and 305 frames, each once. */
  ASSERT_EQ(fx_counters(c, 1).executed, FX_OPEN_EXECUTED + 5 + 300);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 0);
  ASSERT_CLOSE_OK(c);
}

/* ---- ack 0xFF inside the window (testlink: no reset evidence) ------------------------------ */

/* Stop-and-wait until the next frame gets seq `seq` (user frames start at
 * FX_OPEN_SENT + 1: SetMode took 0, the open's frames 1..FX_OPEN_SENT). */
static void advance_to_seq(autd3_client_t *c, uint8_t seq) {
  autd3_frame_t nop = autd3_frame_simple(AUTD3_CMD_NOP);
  for (unsigned s = FX_OPEN_SENT + 1; s < seq; s++) ASSERT_OK(autd3_client_send_checked(c, &nop, NULL));
}

/* One Nop, stop and wait: expect err (its message naming `names`, unless
 * NULL) and outcomes o0, o1 on devices 0 and 1. */
TEST(ack_ff_in_window_after_stale_is_unknown) {
  autd3_client_t *c = fx_open_testlink(2, NULL);
  advance_to_seq(c, 0xFF);
  /* Device 1 reboots silently just as the frame with seq 0xFF reaches it, and
   * the inputs are stale for a while (as a real reboot's are). Device 0 runs
   * the frame and acks 0xFF, device 1 answers 0xFF after booting: the client
   * cannot tell the two apart, so neither is counted as executed. */
  fx_tl.hook_stale = 12; /* ≥ timeout_cycles (10) */
  fx_tl_arm(1, 0xFF, FX_HOOK_REBOOT);
  fx_nop_expect(c, AUTD3_E_OUTCOME_UNKNOWN, "device 0", AUTD3_OUTCOME_UNKNOWN, AUTD3_OUTCOME_UNKNOWN);
  ASSERT_CONTAINS(autd3_last_error(), "0xFF");
  /* Both possibly lost their state: both are re-established, then run again. */
  fx_wait_device_ready(c, 0, 1);
  fx_wait_device_ready(c, 1, 1);
  fx_nop_expect(c, AUTD3_OK, NULL, AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_EXECUTED);
  ASSERT_CLOSE_OK(c);
}

TEST(ack_ff_in_window_without_stale_is_an_ack) {
  autd3_client_t *c = fx_open_testlink(2, NULL);
  /* A legit wrap: seq 0xFF is acked 0xFF and counts as executed. */
  advance_to_seq(c, 0xFF);
  for (int i = 0; i < 3; i++) fx_nop_expect(c, AUTD3_OK, NULL, AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_EXECUTED);
  ASSERT_EQ(autd3_client_device_resets(c, 0), 0);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 0);
  ASSERT_CLOSE_OK(c);
}

TEST(ack_ff_outside_window_is_a_reboot) {
  autd3_client_t *c = fx_open_testlink(2, NULL);
  advance_to_seq(c, 16);
  /* Device 1 reboots silently (no stale cycles, no evidence) as seq 16 reaches
   * it: its 0xFF is outside its window (15, 16], so it is a definite reboot. */
  fx_tl_arm(1, 16, FX_HOOK_REBOOT);
  fx_nop_expect(c, AUTD3_E_OUTCOME_UNKNOWN, "device 1", AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_UNKNOWN);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 1);
  ASSERT_EQ(autd3_client_device_resets(c, 0), 0);
  fx_wait_device_ready(c, 1, 1);
  fx_nop_expect(c, AUTD3_OK, NULL, AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_EXECUTED);
  /* Device 0 executed every frame once: the open sequence, 3 Nops, 1 + 1. */
  ASSERT_EQ(fx_tl_last->devs[0].counters.executed, FX_OPEN_EXECUTED + (16 - FX_OPEN_SENT - 1) + 2);
  ASSERT_CLOSE_OK(c);
}

/* ---- a device that stops acking ---------------------------------------------------------- */

TEST(unresponsive_device_times_out_not_executed) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 4;
  cfg.max_resync_rounds = 2;
  autd3_client_t *c = fx_open_testlink(2, &cfg);
  advance_to_seq(c, 30);
  /* Device 1 stays alive but ignores every frame: resync cannot help; the
   * client gives up on it alone, its Reset is confirmed, so the frame is
   * certainly not executed there: TIMEOUT. */
  fx_tl_arm(1, 30, FX_HOOK_DESYNC);
  fx_nop_expect(c, AUTD3_E_TIMEOUT, "not acked by device 1", AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_NOT_EXECUTED);
  fx_wait_device_ready(c, 1, 1);
  fx_nop_expect(c, AUTD3_OK, NULL, AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_EXECUTED);
  /* Device 0: every frame once, with no replay from device 1's recovery:
   * the open sequence, the Nops up to seq 29, then 1 + 1. Device 1: the same Nops, then
   * Clear, Sync again and the last Nop. */
  ASSERT_EQ(fx_tl_last->devs[0].counters.executed, FX_OPEN_EXECUTED + (30 - FX_OPEN_SENT - 1) + 2);
  ASSERT_EQ(fx_tl_last->devs[1].counters.executed, FX_OPEN_EXECUTED + (30 - FX_OPEN_SENT - 1) + FX_REINIT_EXECUTED + 1);
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.device_timeouts, 1);
  ASSERT_CLOSE_OK(c);
}

TEST(frozen_device_mid_stream_no_replays) {
  enum { N = 200, WINDOW = 16, AT = 60 };
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 4;
  cfg.max_resync_rounds = 2;
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_frame_t f = bench_frame();
  static result_t res[N];
  const injection_t inj = {.at = AT, .dev = 1, .fault = {.freeze = true}};
  stream(c, N, WINDOW, &inj, res);
  size_t executed1 = 0, unknown1 = 0, timeouts = 0;
  for (size_t i = 0; i < N; i++) {
    check_result(&res[i], 2);
    ASSERT_EQ(res[i].resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
    uint8_t o = res[i].resp.outcome[1];
    if (o == AUTD3_OUTCOME_EXECUTED) executed1++;
    if (o == AUTD3_OUTCOME_UNKNOWN) unknown1++;
    if (o == AUTD3_OUTCOME_NOT_EXECUTED) {
      ASSERT_EQ(res[i].err, AUTD3_E_TIMEOUT);
      timeouts++;
    }
  }
  fprintf(stderr, "device 1: %zu executed, %zu unknown, %zu timeout\n", executed1, unknown1, timeouts);
  ASSERT_GE(unknown1 + timeouts, 1);
  /* The healthy device executed every frame exactly once. */
  ASSERT_EQ(fx_counters(c, 0).executed, FX_OPEN_EXECUTED + N);
  /* Thaw: device 1 may run what it had queued (UNKNOWN ones), nothing else. */
  autd3_device_fault_t none = {0};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &none));
  fx_wait_device_ready(c, 1, 1);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_EQ(fx_counters(c, 0).executed, FX_OPEN_EXECUTED + N + 1);
  uint64_t k1 = fx_counters(c, 1).executed;
  ASSERT_GE(k1, FX_OPEN_EXECUTED + executed1 + FX_REINIT_EXECUTED + 1);
  ASSERT_TRUE(k1 <= FX_OPEN_EXECUTED + executed1 + unknown1 + FX_REINIT_EXECUTED + 1);
  ASSERT_CLOSE_OK(c);
}

/* ---- a long stale outage ----------------------------------------------------------------- */

TEST(stale_outage_away_then_rejoins) {
  enum { N = 200, WINDOW = 8, AT = 50 };
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 4;
  cfg.max_resync_rounds = 2; /* stale budget: 8 cycles */
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_frame_t f = bench_frame();
  static result_t res[N];
  /* 30 cycles without valid inputs (the emulator link has one verdict for
   * every device): after the budget both devices go AWAY. */
  const injection_t inj = {.at = AT, .dev = 0, .fault = {.invalidate_rx = 30}};
  stream(c, N, WINDOW, &inj, res);
  size_t unknown[2] = {0}, away[2] = {0}, executed[2] = {0};
  for (size_t i = 0; i < N; i++) {
    check_result(&res[i], 2);
    for (int d = 0; d < 2; d++) {
      uint8_t o = res[i].resp.outcome[d];
      executed[d] += o == AUTD3_OUTCOME_EXECUTED;
      unknown[d] += o == AUTD3_OUTCOME_UNKNOWN;
      away[d] += o == AUTD3_OUTCOME_NOT_EXECUTED;
    }
    /* frames in flight at the budget: UNKNOWN; staged while away: not sent, NOT_EXECUTED (TIMEOUT) */
    if (res[i].err != AUTD3_OK) ASSERT_TRUE(res[i].err == AUTD3_E_OUTCOME_UNKNOWN || res[i].err == AUTD3_E_TIMEOUT);
  }
  fprintf(stderr, "per device: executed %zu/%zu unknown %zu/%zu not sent %zu/%zu\n", executed[0], executed[1], unknown[0],
          unknown[1], away[0], away[1]);
  for (uint16_t d = 0; d < 2; d++) {
    ASSERT_GE(unknown[d] + away[d], 1);
    autd3_client_device_status_t st;
    ASSERT_OK(autd3_client_device_status(c, d, &st));
    ASSERT_GE(st.aways, 1);
    autd3_link_device_info_t info;
    ASSERT_OK(autd3_link_device_info(autd3_client_link(c), d, &info));
    ASSERT_GE(info.stale_cycles, 30);
  }
  /* Only the answers were lost: nobody is re-established (a Clear would wipe
   * the devices' state), both rejoin the stream, and each ran the frames
   * reported EXECUTED, none reported NOT_EXECUTED, and at most the UNKNOWN ones. */
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  for (uint16_t d = 0; d < 2; d++) {
    ASSERT_EQ(autd3_client_device_resets(c, d), 0);
    uint64_t k = fx_counters(c, d).executed;
    ASSERT_GE(k, FX_OPEN_EXECUTED + executed[d] + 1);
    ASSERT_LE(k, FX_OPEN_EXECUTED + executed[d] + unknown[d] + 1);
    /* The client's per-device account (autd3_client_device_status) is the responses' (+ the open sequence and the
     * last frame, executed): what a tool such as `autd3 watch` shows per device. */
    autd3_client_device_status_t st;
    ASSERT_OK(autd3_client_device_status(c, d, &st));
    ASSERT_EQ(st.unknown, unknown[d]);
    ASSERT_EQ(st.not_executed, away[d]);
    ASSERT_GE(st.executed, executed[d] + 1);
  }
  ASSERT_CLOSE_OK(c);
}

/* ---- another master ---------------------------------------------------------------------- */

TEST(foreign_writer_is_second_master) {
  autd3_client_t *c = fx_open_testlink(2, NULL);
  advance_to_seq(c, 20);
  /* Another writer drove device 1 to seq 100, a seq this client never sent. */
  fx_tl.foreign_ack = 100;
  fx_tl_arm(1, 20, FX_HOOK_FOREIGN);
  autd3_frame_t nop = autd3_frame_simple(AUTD3_CMD_NOP);
  autd3_response_t resp;
  ASSERT_ERR(autd3_client_send_checked(c, &nop, &resp), AUTD3_E_SECOND_MASTER);
  ASSERT_CONTAINS(autd3_last_error(), "device 1");
  ASSERT_CONTAINS(autd3_last_error(), "another master");
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  ASSERT_TRUE(resp.outcome[1] != AUTD3_OUTCOME_EXECUTED);
  /* It stays failed (never mixed in); device 0 keeps going. */
  fx_nop_expect(c, AUTD3_E_SECOND_MASTER, NULL, AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_NOT_EXECUTED);
  autd3_client_device_status_t st;
  ASSERT_OK(autd3_client_device_status(c, 1, &st));
  ASSERT_EQ(st.state, AUTD3_CLIENT_DEVICE_FOREIGN);
  ASSERT_GE(st.not_executed + st.unknown, 2); /* the two frames it did not run, per device */
  autd3_client_device_status_t st0;
  ASSERT_OK(autd3_client_device_status(c, 0, &st0));
  ASSERT_EQ(st0.not_executed + st0.unknown, 0);
  ASSERT_GT(st0.executed, st.executed);
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.second_master, 1);
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_SECOND_MASTER); /* device 1 is driven by the other writer: not silenced */
}

/* One cycle's inputs show device 1 at an ack it never made (a bit error the
 * FCS did not catch; seq 20 read as 28): no second master, the next read has
 * the real ack, every frame is EXECUTED and close silences both devices. */
TEST(one_corrupt_ack_is_not_a_second_master) {
  autd3_client_t *c = fx_open_testlink(2, NULL);
  advance_to_seq(c, 20);
  fx_tl_arm(1, 20, FX_HOOK_GLITCH);
  for (int i = 0; i < 3; i++) fx_nop_expect(c, AUTD3_OK, NULL, AUTD3_OUTCOME_EXECUTED, AUTD3_OUTCOME_EXECUTED);
  ASSERT_EQ(atomic_load(&fx_tl.hook_kind), 0); /* the glitch happened */
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.second_master, 0);
  ASSERT_CLOSE_OK(c);
}

/* ---- handles and a closed client --------------------------------------------------------- */

TEST(double_wait_is_invalid_handle) {
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  autd3_request_t *r = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &r));
  ASSERT_OK(autd3_request_wait(r, NULL));
  ASSERT_ERR(autd3_request_wait(r, NULL), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_poll(r, NULL), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_wait_for(r, 10, NULL), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_detach(r), AUTD3_E_INVALID_HANDLE);
  /* Still caught after the slot was reused by later sends. */
  for (int i = 0; i < 3; i++) ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_ERR(autd3_request_wait(r, NULL), AUTD3_E_INVALID_HANDLE);
  ASSERT_CLOSE_OK(c);
}

TEST(wait_after_detach_is_invalid_handle) {
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  autd3_request_t *r = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &r));
  ASSERT_OK(autd3_request_detach(r));
  ASSERT_ERR(autd3_request_wait(r, NULL), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_detach(r), AUTD3_E_INVALID_HANDLE);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_CLOSE_OK(c);
}

TEST(poll_pending_keeps_handle) {
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  autd3_request_t *r = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &r));
  autd3_err_t e;
  int polls = 0;
  while ((e = autd3_request_poll(r, NULL)) == AUTD3_E_PENDING) polls++;
  ASSERT_OK(e);
  ASSERT_ERR(autd3_request_poll(r, NULL), AUTD3_E_INVALID_HANDLE);
  (void)polls;
  ASSERT_CLOSE_OK(c);
}

TEST(closed_client_detectable_while_handles_live) {
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  autd3_request_t *r = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &r));
  ASSERT_CLOSE_OK(c);
  /* The outstanding handle keeps the client alive: misuse is detected. */
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_CLOSED);
  ASSERT_ERR(autd3_client_send(c, &f, NULL), AUTD3_E_CLOSED);
  autd3_err_t e = autd3_request_wait(r, NULL);
  ASSERT_TRUE(e == AUTD3_OK || e == AUTD3_E_CLOSED);
  /* The client is freed now; any further call with it is undefined. */
}

/* Once the last handle is released the client is freed: a later close is
 * undefined behaviour, which an AUTD3_SANITIZE (ASan) build must report. */
TEST(use_after_free_caught_by_sanitizer) {
#ifndef FX_ASAN
  SKIP("not an AUTD3_SANITIZE build: use after close is undefined, not detected");
#else
  pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) {
    autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
    autd3_client_close(c);
    autd3_client_close(c); /* freed: ASan aborts here */
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_FALSE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#endif
}

TEST(close_outcomes) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  autd3_request_t *r[40];
  for (int i = 0; i < 40; i++) ASSERT_OK(autd3_client_send(c, &f, &r[i]));
  ASSERT_CLOSE_OK(c);
  for (int i = 0; i < 40; i++) {
    autd3_response_t resp;
    autd3_err_t e = autd3_request_wait(r[i], &resp);
    ASSERT_TRUE(e == AUTD3_OK || e == AUTD3_E_CLOSED);
    for (int d = 0; d < 2; d++) {
      ASSERT_TRUE(resp.outcome[d] != AUTD3_OUTCOME_NONE);
      if (e == AUTD3_OK) ASSERT_EQ(resp.outcome[d], AUTD3_OUTCOME_EXECUTED);
    }
  }
}


