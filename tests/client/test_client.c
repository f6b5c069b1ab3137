/*
 * The client against the in-process emulator link (and, for the cases the
 * emulator cannot stage, the small synchronous "testlink" of
 * client_fixture.h). No test asserts timing: only outcomes and counters.
 */
#include <pthread.h>

#include "client/client_fixture.h"

#define CYCLE_NS 500000u /* 0.5 ms: keeps the suite short; pacing is not under test here */

static autd3_frame_t bench_frame(void) {
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, AUTD3_XOR_HASH_MAX_DATA));
  return f;
}

/* Send `count` frames keeping up to `window` in flight; every one must be OK. */
static void stream_ok(autd3_client_t *c, size_t count, size_t window) {
  autd3_request_t *win[AUTD3_MAX_INFLIGHT];
  size_t head = 0, len = 0;
  autd3_frame_t f = bench_frame();
  for (size_t i = 0; i < count; i++) {
    if (len == window) {
      ASSERT_OK(autd3_request_wait(win[head], NULL));
      head = (head + 1) % AUTD3_MAX_INFLIGHT;
      len--;
    }
    ASSERT_OK(autd3_client_send(c, &f, &win[(head + len) % AUTD3_MAX_INFLIGHT]));
    len++;
  }
  if (len == 0) return;
  /* In order: wait for the newest; every older one must then be complete
   * already (poll never returns PENDING), because acks are cumulative and the
   * client completes strictly from the head. */
  autd3_response_t r;
  ASSERT_OK(autd3_request_wait(win[(head + len - 1) % AUTD3_MAX_INFLIGHT], &r));
  for (size_t i = 0; i + 1 < len; i++) ASSERT_OK(autd3_request_poll(win[(head + i) % AUTD3_MAX_INFLIGHT], NULL));
}

/* ---- handshake ------------------------------------------------------------------------ */

TEST(handshake_counters) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  ASSERT_EQ(autd3_client_num_devices(c), 2);
  for (uint16_t d = 0; d < 2; d++) {
    autd3_device_counters_t k = fx_counters(c, d);
    ASSERT_EQ(k.resets, 2);          /* Reset seq 0, Reset seq 1 */
    ASSERT_EQ(k.executed, FX_OPEN_EXECUTED); /* SetMode (seq 0), 10 reads, Clear, Synchronize */
    ASSERT_EQ(k.errors, 0);
    ASSERT_EQ(k.seq_mismatch, 0);
  }
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.sent, FX_OPEN_SENT);
  ASSERT_EQ(s.completed, FX_OPEN_SENT);
  ASSERT_EQ(s.failed, 0);
  ASSERT_CLOSE_OK(c);
}

static void expect_log(const uint8_t *seq, const uint8_t *cmd, int n) {
  ASSERT_GE(atomic_load(&fx_tl.log_len), n);
  for (int i = 0; i < n; i++) {
    if (fx_tl.log_seq[i] != seq[i] || fx_tl.log_cmd[i] != cmd[i])
      TEST_FAIL_("frame %d: got (seq %u, %s), expected (seq %u, %s)", i, fx_tl.log_seq[i], autd3_cmd_name(fx_tl.log_cmd[i]),
                 seq[i], autd3_cmd_name(cmd[i]));
  }
}

/* The open sequence of the reference client autd3-rs 0.9.0 (mod.rs open_impl,
 * rt.rs handshake/negotiate_mode, read_firmware_version): Reset, SetMode
 * (always), the identity reads each checked through ReadErrorDetail, Clear,
 * Synchronize. Our Resets use seq 0 then 1 (bus.c handshake). */
static const uint8_t open_seq[] = {0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const uint8_t open_cmd[] = {
    AUTD3_CMD_RESET,                      AUTD3_CMD_RESET,                      AUTD3_CMD_SET_MODE,
    AUTD3_CMD_READ_CPU_FW_VERSION_MAJOR,  AUTD3_CMD_READ_CPU_FW_VERSION_MINOR,  AUTD3_CMD_READ_CPU_FW_VERSION_PATCH,
    AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_READ_FPGA_FW_VERSION_MAJOR, AUTD3_CMD_READ_FPGA_FW_VERSION_MINOR,
    AUTD3_CMD_READ_FPGA_FW_VERSION_PATCH, AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_READ_FPGA_FUNCTIONS,
    AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_CLEAR,                      AUTD3_CMD_SYNCHRONIZE};

TEST(handshake_sequence) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(1);
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  expect_log(open_seq, open_cmd, (int)sizeof open_seq);
  ASSERT_EQ(atomic_load(&fx_tl.log_len), (int)sizeof open_seq); /* nothing else: the last frame is re-sent, not new */
  ASSERT_EQ(fx_tl_last->devs[0].mode, AUTD3_MODE_FIFO); /* asked for explicitly (SetMode FIFO) */
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}

TEST(handshake_low_latency_sequence) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(1);
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.low_latency = true;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  /* SetMode takes seq 0, so the first data frame is seq 1 (rt.rs negotiate_mode). */
  expect_log(open_seq, open_cmd, (int)sizeof open_seq);
  ASSERT_EQ(fx_tl_last->devs[0].mode, AUTD3_MODE_LOW_LATENCY);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}

/* A device takes its output image at SYNC0; before the first edge every image
 * is replaced unseen (docs/device-model.md "Before the first SYNC0"). The
 * handshake holds its SetMode until it is acked, so a late SYNC0 (here 40
 * cycles, past the reference's max(timeout_cycles, 2) = 10) cannot lose it. */
TEST(setmode_survives_late_first_sync0) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(2);
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.low_latency = true;
  fx_tl.blind_cycles = 40;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  for (int d = 0; d < 2; d++) {
    ASSERT_EQ(fx_tl_last->devs[d].mode, AUTD3_MODE_LOW_LATENCY);
    ASSERT_EQ(fx_tl_last->devs[d].counters.executed, FX_OPEN_EXECUTED);
  }
  ASSERT_OK(autd3_client_close(c));
  autd3_geometry_free(g);
}

TEST(low_latency_emulator) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.low_latency = true;
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  stream_ok(c, 200, AUTD3_MAX_INFLIGHT);
  for (uint16_t d = 0; d < 2; d++) {
    autd3_device_counters_t k = fx_counters(c, d);
    ASSERT_EQ(k.executed, FX_OPEN_EXECUTED + 200); /* SetMode, reads, Clear, Synchronize, the frames */
    ASSERT_EQ(k.errors, 0);
  }
  ASSERT_CLOSE_OK(c);
}

/* ---- pipelining ------------------------------------------------------------------------ */

TEST(pipelined_10000) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  stream_ok(c, 10000, AUTD3_MAX_INFLIGHT);
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.completed, FX_OPEN_SENT + 10000);
  ASSERT_EQ(s.failed, 0);
  for (uint16_t d = 0; d < 2; d++) {
    autd3_device_counters_t k = fx_counters(c, d);
    ASSERT_EQ(k.executed, FX_OPEN_EXECUTED + 10000); /* each exactly once */
    ASSERT_EQ(k.errors, 0);
  }
  ASSERT_CLOSE_OK(c);
}

TEST(seq_wraparound) {
  /* 3 wraps of the 8-bit seq, alternating full windows and stop-and-wait. */
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  size_t sent = 0;
  for (int round = 0; round < 3; round++) {
    stream_ok(c, 200, AUTD3_MAX_INFLIGHT);
    for (int i = 0; i < 60; i++) ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
    sent += 260;
  }
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.completed, FX_OPEN_SENT + sent);
  ASSERT_EQ(s.resyncs, 0);
  for (uint16_t d = 0; d < 2; d++) ASSERT_EQ(fx_counters(c, d).executed, FX_OPEN_EXECUTED + sent);
  ASSERT_CLOSE_OK(c);
}

TEST(fire_and_forget_and_detach) {
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
  autd3_frame_t f = bench_frame();
  for (int i = 0; i < 150; i++) {
    if (i % 2) {
      ASSERT_OK(autd3_client_send(c, &f, NULL));
    } else {
      autd3_request_t *r = NULL;
      ASSERT_OK(autd3_client_send(c, &f, &r));
      autd3_request_detach(r);
    }
  }
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL)); /* in order: all before it are done */
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.completed, FX_OPEN_SENT + 151);
  ASSERT_EQ(fx_counters(c, 0).executed, FX_OPEN_EXECUTED + 151);
  ASSERT_CLOSE_OK(c);
}

/* ---- faults ----------------------------------------------------------------------------- */

TEST(dropped_frames_retransmitted) {
  /* Many resync rounds: recovery must come from retransmitting the head, not
   * from a reset (a reset renumbers and re-sends frames device 0 already ran). */
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_resync_rounds = 100;
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_frame_t f = bench_frame();
  autd3_request_t *r[100];
  uint64_t sent = 0;
  autd3_client_stats_t s;
  /* The bus thread takes one new frame per cycle, so while these 100 are
   * queued the next images device 1 sees are new frames, and 3 of them are
   * lost before its firmware sees them. Should this thread stall for the whole
   * 50 ms window the drops hit re-sent images instead (harmless, nothing to
   * retransmit): then try again, at most 5 times. */
  for (int attempt = 0; attempt < 5; attempt++) {
    for (int i = 0; i < 100; i++) ASSERT_OK(autd3_client_send(c, &f, &r[i]));
    autd3_device_fault_t fault = {.drop_next = 3};
    ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &fault));
    for (int i = 0; i < 100; i++) ASSERT_OK(autd3_request_wait(r[i], NULL));
    sent += 100;
    autd3_client_stats(c, &s);
    if (s.resyncs > 0) break;
  }
  ASSERT_GE(s.resyncs, 1);
  ASSERT_GE(s.retransmits, 1);
  ASSERT_EQ(s.resets, 0);
  ASSERT_EQ(s.failed, 0);
  /* Nothing lost, nothing executed twice, on either device. */
  for (uint16_t d = 0; d < 2; d++) {
    autd3_device_counters_t k = fx_counters(c, d);
    ASSERT_EQ(k.executed, FX_OPEN_EXECUTED + sent);
    ASSERT_EQ(k.errors, 0);
  }
  ASSERT_CLOSE_OK(c);
}

TEST(frozen_device_times_out_then_recovers) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 4;
  cfg.max_resync_rounds = 2;
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_device_fault_t freeze = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &freeze));
  autd3_frame_t f = bench_frame();
  autd3_response_t resp;
  /* A frozen device never confirms the client's Reset, and a hung firmware
   * may still run what it had queued when it resumes: UNKNOWN, not a guess. */
  ASSERT_ERR(autd3_client_send_checked(c, &f, &resp), AUTD3_E_OUTCOME_UNKNOWN);
  ASSERT_CONTAINS(autd3_last_error(), "device 1");
  ASSERT_CONTAINS(autd3_last_error(), "not acked");
  /* Device 0 ran it once (not replayed by any recovery). */
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  ASSERT_EQ(resp.outcome[1], AUTD3_OUTCOME_UNKNOWN);
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_GE(s.resyncs, 1);
  ASSERT_EQ(s.resets, 1);
  ASSERT_EQ(s.device_timeouts, 1);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 1);
  ASSERT_EQ(autd3_client_device_resets(c, 0), 0);
  /* Frames sent while device 1 is re-established run on device 0 only:
   * never sent to device 1, so certainly NOT_EXECUTED there (TIMEOUT). */
  ASSERT_ERR(autd3_client_send_checked(c, &f, &resp), AUTD3_E_TIMEOUT);
  ASSERT_CONTAINS(autd3_last_error(), "device 1");
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  ASSERT_EQ(resp.outcome[1], AUTD3_OUTCOME_NOT_EXECUTED);
  /* Thaw: the client re-establishes device 1 alone, then it is back in the stream. */
  autd3_device_fault_t none = {0};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &none));
  fx_wait_device_ready(c, 1, 1);
  ASSERT_OK(autd3_client_send_checked(c, &f, &resp));
  ASSERT_EQ(resp.outcome[1], AUTD3_OUTCOME_EXECUTED);
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.reinits, 1);
  /* Device 0: Clear, Synchronize and the three frames, each exactly once.
   * Device 1 (frozen before the first frame reached it): Clear and
   * Synchronize at open, again when re-established, and the last frame. */
  ASSERT_EQ(fx_counters(c, 0).executed, FX_OPEN_EXECUTED + 3);
  ASSERT_EQ(fx_counters(c, 1).executed, FX_OPEN_EXECUTED + FX_REINIT_EXECUTED + 1);
  ASSERT_CLOSE_OK(c);
}

TEST(stale_inputs_outcome_unknown) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 4;
  cfg.max_resync_rounds = 2;
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, &cfg);
  autd3_device_fault_t bad = {.invalidate_rx = 100000};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 0, &bad));
  autd3_frame_t f = bench_frame();
  autd3_response_t resp;
  /* The device got the frame but nothing tells whether it ran it. */
  ASSERT_ERR(autd3_client_send_checked(c, &f, &resp), AUTD3_E_OUTCOME_UNKNOWN);
  ASSERT_CONTAINS(autd3_last_error(), "stale");
  ASSERT_CONTAINS(autd3_last_error(), "device 0");
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_UNKNOWN);
  autd3_link_stats_t ls;
  autd3_link_stats(autd3_client_link(c), &ls);
  ASSERT_GE(ls.stale_cycles, 8);
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_TIMEOUT); /* its inputs stay stale: the silencing frame is never seen acked */
}

TEST(device_error_names_device) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  /* XorHash whose data does not XOR to 0 → INVALID_DATA (0x03), device 1 only. */
  autd3_frame_t bad;
  const uint8_t data[4] = {1, 2, 3, 4};
  ASSERT_OK(autd3_frame_xor_hash(&bad, 0, data, sizeof data));
  uint8_t cmds[2] = {AUTD3_CMD_NOP, AUTD3_CMD_XOR_HASH};
  uint8_t payloads[2 * AUTD3_PAYLOAD_BYTES] = {0};
  memcpy(payloads + AUTD3_PAYLOAD_BYTES, bad.payload, AUTD3_PAYLOAD_BYTES);
  autd3_frame_t per = autd3_frame_simple(AUTD3_CMD_NOP);
  per.device_cmds = cmds;
  per.device_payloads = payloads;
  autd3_response_t r;
  ASSERT_ERR(autd3_client_send_checked(c, &per, &r), AUTD3_E_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "device 1");
  ASSERT_CONTAINS(autd3_last_error(), "0x03");
  ASSERT_EQ(r.num_devices, 2);
  ASSERT_EQ(r.data[0], 0);
  ASSERT_EQ(r.data[1], AUTD3_DEV_ERR_INVALID_DATA);
  int dev = -1;
  uint8_t code = 0;
  ASSERT_ERR(autd3_response_check(&r, &dev, &code), AUTD3_E_DEVICE);
  ASSERT_EQ(dev, 1);
  ASSERT_EQ(code, AUTD3_DEV_ERR_INVALID_DATA);
  /* The firmware latched it: the error-detail read shows it on device 1 only. */
  uint8_t detail[2] = {0xAA, 0xAA};
  ASSERT_OK(autd3_client_read_error_detail(c, detail));
  ASSERT_EQ(detail[0], 0);
  ASSERT_EQ(detail[1], AUTD3_DEV_ERR_INVALID_DATA);
  /* Broadcast: the first failing device is 0. */
  ASSERT_ERR(autd3_client_send_checked(c, &bad, NULL), AUTD3_E_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "device 0");
  ASSERT_CLOSE_OK(c);
}

TEST(exclusive_reads) {
  autd3_geometry_t *g = fx_geometry(3);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  autd3_fw_version_t v = {1, 2, 3, 4, 5, 6};
  o.u.emulator.version = v;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  /* Frames in flight ahead of the read: the read waits for them and goes out alone. */
  autd3_frame_t f = bench_frame();
  for (int i = 0; i < 30; i++) ASSERT_OK(autd3_client_send(c, &f, NULL));
  autd3_fw_version_t got[3];
  memset(got, 0, sizeof got);
  ASSERT_OK(autd3_client_read_firmware_version(c, got));
  for (int d = 0; d < 3; d++) ASSERT_MEMEQ(&got[d], &v, sizeof v);
  uint8_t st[3];
  ASSERT_OK(autd3_client_read_fpga_state(c, st));
  for (int i = 0; i < 30; i++) ASSERT_OK(autd3_client_send(c, &f, NULL));
  uint8_t detail[3] = {0xAA, 0xAA, 0xAA};
  ASSERT_OK(autd3_client_read_error_detail(c, detail));
  for (int d = 0; d < 3; d++) ASSERT_EQ(detail[d], 0);
  ASSERT_EQ(fx_counters(c, 2).executed, FX_OPEN_EXECUTED + 60 + 10 + 1 + 1); /* the version read is 10 reads */
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}

TEST(close_fails_inflight) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 1000000; /* nothing may time out before close, however slow the host is */
  cfg.close_timeout_ms = 1;     /* the frozen device cannot be silenced: do not wait for it */
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_device_fault_t freeze = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 0, &freeze));
  autd3_frame_t f = bench_frame();
  autd3_request_t *r[20];
  for (int i = 0; i < 20; i++) ASSERT_OK(autd3_client_send(c, &f, &r[i]));
  for (int i = 0; i < 10; i++) ASSERT_OK(autd3_client_send(c, &f, NULL)); /* fire-and-forget too */
  ASSERT_ERR(autd3_request_wait_for(r[0], 5, NULL), AUTD3_E_PENDING);
  ASSERT_ERR(autd3_request_poll(r[0], NULL), AUTD3_E_PENDING);
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_TIMEOUT); /* the frozen devices cannot be silenced */
  /* The handles outlive the client and report CLOSED. */
  for (int i = 0; i < 20; i++) {
    ASSERT_ERR(autd3_request_wait(r[i], NULL), AUTD3_E_CLOSED);
  }
}

typedef struct {
  autd3_client_t *c;
  autd3_request_t *r[3];
  autd3_err_t third;
  atomic_int progress;
} blocked_sender_t;

static void *blocked_sender(void *arg) {
  blocked_sender_t *b = arg;
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_NOP);
  for (int i = 0; i < 2; i++) {
    ASSERT_OK(autd3_client_send(b->c, &f, &b->r[i]));
    atomic_fetch_add(&b->progress, 1);
  }
  b->third = autd3_client_send(b->c, &f, &b->r[2]); /* both slots busy: blocks until close */
  atomic_fetch_add(&b->progress, 1);
  return NULL;
}

TEST(close_wakes_blocked_sender) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_inflight = 2;
  cfg.close_timeout_ms = 1; /* the frozen device cannot be silenced: close at once, before the frames time out */
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, &cfg);
  autd3_device_fault_t freeze = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 0, &freeze));
  blocked_sender_t b = {.c = c, .third = AUTD3_OK};
  atomic_init(&b.progress, 0);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, blocked_sender, &b), 0);
  while (atomic_load(&b.progress) < 2) autd3__sleep_ns(1000000);
  /* Give it time to block in the third send. Not asserted: if it were late,
   * the send would still fail with CLOSED, and the client memory stays valid
   * either way because r[0] and r[1] (busy slots) hold references. */
  autd3__sleep_ns(20000000);
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_TIMEOUT); /* the frozen device cannot be silenced */
  pthread_join(th, NULL);
  ASSERT_ERR(b.third, AUTD3_E_CLOSED);
  for (int i = 0; i < 2; i++) ASSERT_ERR(autd3_request_wait(b.r[i], NULL), AUTD3_E_CLOSED);
}

/* ---- close silences the array (crate autd3-rs 0.9.0: close writes a zero pattern) ---- */

TEST(close_silences_every_device) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(3);
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  autd3_frame_t f = bench_frame();
  for (int i = 0; i < 20; i++) ASSERT_OK(autd3_client_send(c, &f, NULL)); /* in flight at close */
  ASSERT_OK(autd3_client_close(c));
  /* The last frame: WritePatternFused, bank 0, raw, divider 0xFFFF, size 1,
   * immediate, rep infinite, 498 data bytes, all zero (crate autd3-rs 0.9.0
   * commands/pattern.rs → write_pattern_fused.rs for Emission::NULL). */
  const uint8_t *t = fx_tl.last_tx0;
  ASSERT_EQ(t[0], FX_OPEN_SENT + 1 + 20); /* after the 20 frames, in order */
  ASSERT_EQ(t[1], AUTD3_CMD_WRITE_PATTERN_FUSED);
  const uint8_t hdr[16] = {0x00, 0x01, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00, 0xFF, 0xFF, 0xF2, 0x01};
  ASSERT_MEMEQ(t + 2, hdr, sizeof hdr);
  for (size_t i = 2 + sizeof hdr; i < AUTD3_TX_FRAME_BYTES; i++) ASSERT_EQ(t[i], 0);
  for (int d = 0; d < 3; d++) { /* every device acked it, without error */
    ASSERT_EQ(fx_tl.closed_ack[d], t[0]);
    ASSERT_EQ(fx_tl.closed_data[d], 0);
  }
  autd3_geometry_free(g);
}

typedef struct {
  autd3_client_t *c;
  atomic_int sent;
} racing_sender_t;

static void *racing_sender(void *arg) {
  racing_sender_t *b = arg;
  autd3_frame_t f = bench_frame();
  while (autd3_client_send(b->c, &f, NULL) == AUTD3_OK) atomic_fetch_add(&b->sent, 1);
  return NULL;
}

/* Senders on other threads, some blocked on back-pressure, while close runs:
 * nothing they send may reach a device after the silencing frame. */
TEST(close_silencing_frame_is_the_last_frame) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(2);
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_inflight = 2; /* the senders block on back-pressure most of the time */
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  racing_sender_t b = {.c = c};
  atomic_init(&b.sent, 0);
  pthread_t th[3];
  for (int i = 0; i < 3; i++) ASSERT_EQ(pthread_create(&th[i], NULL, racing_sender, &b), 0);
  while (atomic_load(&b.sent) < 50) autd3__sleep_ns(1000000);
  ASSERT_OK(autd3_client_close(c));
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  ASSERT_EQ(fx_tl.last_tx0[1], AUTD3_CMD_WRITE_PATTERN_FUSED);
  for (int d = 0; d < 2; d++) ASSERT_EQ(fx_tl.closed_ack[d], fx_tl.last_tx0[0]);
  autd3_geometry_free(g);
}

TEST(close_reports_device_not_silenced) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.close_timeout_ms = 50;
  autd3_client_t *c = fx_open_emu(3, CYCLE_NS, &cfg);
  autd3_device_fault_t freeze = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &freeze));
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_TIMEOUT);
  ASSERT_CONTAINS(autd3_last_error(), "device(s) 1 did not ack the silencing frame");
  ASSERT_CONTAINS(autd3_last_error(), "may still be emitting");
}

TEST(close_silences_a_device_being_reestablished) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  /* Device 0 reboots just before close: the silencing frame is not sent to it
   * while it is re-established; close waits for it and silences it then. */
  ASSERT_OK(autd3_emulator_power_cycle(autd3_client_link(c), 0));
  ASSERT_OK(autd3_client_close(c));
}

TEST(close_after_link_error_reports_it) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(1);
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  fx_tl.fail_after_cycles = (int)atomic_load(&fx_tl.cycles) + 1;
  while (autd3_client_send(c, &(autd3_frame_t){.cmd = AUTD3_CMD_NOP}, NULL) == AUTD3_OK) autd3__sleep_ns(1000000);
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_LINK);
  ASSERT_CONTAINS(autd3_last_error(), "not silenced");
  ASSERT_CONTAINS(autd3_last_error(), "injected cable cut");
  autd3_geometry_free(g);
}

TEST(close_twice_is_refused) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_inflight = 1;
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, &cfg);
  autd3_request_t *r = NULL;
  ASSERT_OK(autd3_client_send(c, &(autd3_frame_t){.cmd = AUTD3_CMD_NOP}, &r)); /* keeps the client alive */
  ASSERT_OK(autd3_client_close(c));
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_CLOSED);
  autd3_request_wait(r, NULL);
}

/* ---- firmware identity ------------------------------------------------------------------ */

TEST(require_supported_firmware_refuses_other_series) {
  autd3_geometry_t *g = fx_geometry(2);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  autd3_fw_version_t old = {0, 1, 0, 0, 1, 0};
  o.u.emulator.version = old;
  autd3_client_config_t cfg = autd3_client_config_default();
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c)); /* the check is off by default: 0.1.0 is accepted */
  ASSERT_OK(autd3_client_close(c));
  cfg.require_supported_firmware = true;
  c = (autd3_client_t *)1;
  ASSERT_ERR(autd3_client_open(g, &o, &cfg, &c), AUTD3_E_VERSION);
  ASSERT_TRUE(c == NULL);
  ASSERT_CONTAINS(autd3_last_error(), "device 0 runs firmware CPU 0.1.0, FPGA 0.1.0 [emulator]");
  ASSERT_CONTAINS(autd3_last_error(), "0.9.x");
  autd3_geometry_free(g);
}

TEST(default_emulator_identity_is_supported) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.require_supported_firmware = true;
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, &cfg);
  autd3_fw_version_t v[2];
  ASSERT_OK(autd3_client_read_firmware_version(c, v));
  ASSERT_EQ(v[1].cpu_minor, AUTD3_FW_SERIES_MINOR);
  ASSERT_EQ(v[1].fpga_minor, AUTD3_FW_SERIES_MINOR);
  /* After open the FPGA is in single-pattern mode (bit 3), as the reference
   * firmware reports: 0x08. */
  uint8_t st[2];
  ASSERT_OK(autd3_client_read_fpga_state(c, st));
  ASSERT_EQ(st[0], 0x08);
  ASSERT_EQ(st[1], 0x08);
  ASSERT_OK(autd3_client_close(c));
}

TEST(link_error_fails_pending) {
  autd3_link_option_t o = fx_testlink_option();
  autd3_geometry_t *g = fx_geometry(2);
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  /* The cable is cut 60 cycles from now, while the 127 frames below (which
   * need at least 127 cycles) are in flight or still queued. */
  fx_tl.fail_after_cycles = (int)atomic_load(&fx_tl.cycles) + 60;
  autd3_frame_t f = bench_frame();
  autd3_request_t *r[AUTD3_MAX_INFLIGHT];
  int ok = 0, link = 0;
  for (int i = 0; i < AUTD3_MAX_INFLIGHT; i++) {
    autd3_err_t e = autd3_client_send(c, &f, &r[i]);
    if (e != AUTD3_OK) { /* this thread was so slow that the bus thread is already gone */
      ASSERT_ERR(e, AUTD3_E_LINK);
      ASSERT_CONTAINS(autd3_last_error(), "injected cable cut");
      r[i] = NULL;
      link++;
    }
  }
  bool failed = false;
  for (int i = 0; i < AUTD3_MAX_INFLIGHT; i++) {
    if (r[i] == NULL) continue;
    autd3_err_t e = autd3_request_wait(r[i], NULL);
    if (e == AUTD3_OK) {
      ASSERT_FALSE(failed); /* in order: no success after the first failure */
      ok++;
    } else {
      ASSERT_ERR(e, AUTD3_E_LINK);
      ASSERT_CONTAINS(autd3_last_error(), "injected cable cut");
      failed = true;
      link++;
    }
  }
  ASSERT_GT(link, 0);
  ASSERT_EQ(ok + link, AUTD3_MAX_INFLIGHT);
  /* The bus thread is gone: a new send fails at once with the link's message. */
  ASSERT_ERR(autd3_client_send(c, &f, NULL), AUTD3_E_LINK);
  ASSERT_CONTAINS(autd3_last_error(), "injected cable cut");
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_LINK); /* the cable is cut: nothing can be silenced */
  autd3_geometry_free(g);
}

TEST(link_error_during_handshake) {
  autd3_link_option_t o = fx_testlink_option();
  fx_tl.fail_after_cycles = 1;
  autd3_geometry_t *g = fx_geometry(1);
  autd3_client_t *c = (autd3_client_t *)1;
  ASSERT_ERR(autd3_client_open(g, &o, NULL, &c), AUTD3_E_LINK);
  ASSERT_CONTAINS(autd3_last_error(), "handshake");
  ASSERT_CONTAINS(autd3_last_error(), "injected cable cut");
  ASSERT_TRUE(c == NULL);
  autd3_geometry_free(g);
}

/* ---- bad input --------------------------------------------------------------------------- */

TEST(config_validation) {
  autd3_client_config_t d = autd3_client_config_default();
  ASSERT_OK(autd3_client_config_validate(&d));
  ASSERT_EQ(d.timeout_cycles, 10);
  ASSERT_EQ(d.max_inflight, 127);
  ASSERT_EQ(d.max_resync_rounds, 8);
  ASSERT_EQ(d.reset_resend_cycles, 2);
  struct {
    autd3_client_config_t c;
    const char *field;
  } bad[7];
  for (int i = 0; i < 7; i++) bad[i].c = d;
  bad[0].c.max_inflight = 0, bad[0].field = "max_inflight";
  bad[1].c.max_inflight = 128, bad[1].field = "max_inflight";
  bad[2].c.timeout_cycles = 0, bad[2].field = "timeout_cycles";
  bad[3].c.max_resync_rounds = 0, bad[3].field = "max_resync_rounds";
  bad[4].c.reset_resend_cycles = 0, bad[4].field = "reset_resend_cycles";
  bad[5].c.rt_priority = 100, bad[5].field = "rt_priority";
  bad[6].c.rt_cpu = -2, bad[6].field = "rt_cpu";
  autd3_geometry_t *g = fx_geometry(1);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  for (int i = 0; i < 7; i++) {
    ASSERT_ERR(autd3_client_config_validate(&bad[i].c), AUTD3_E_INVALID_CONFIG);
    ASSERT_CONTAINS(autd3_last_error(), bad[i].field);
    autd3_client_t *c = NULL;
    ASSERT_ERR(autd3_client_open(g, &o, &bad[i].c, &c), AUTD3_E_INVALID_CONFIG);
    ASSERT_CONTAINS(autd3_last_error(), bad[i].field);
  }
  ASSERT_ERR(autd3_client_config_validate(NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3_geometry_free(g);
}

TEST(null_arguments) {
  autd3_geometry_t *g = fx_geometry(1);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  autd3_client_t *c = NULL;
  ASSERT_ERR(autd3_client_open(NULL, &o, NULL, &c), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "geometry");
  ASSERT_ERR(autd3_client_open(g, NULL, NULL, &c), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "link option");
  ASSERT_ERR(autd3_client_open(g, &o, NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_NOP);
  ASSERT_ERR(autd3_client_send(NULL, &f, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_client_send_checked(NULL, &f, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_request_wait(NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_request_poll(NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_request_wait_for(NULL, 1, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_response_check(NULL, NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_client_read_firmware_version(NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3_request_detach(NULL);
  ASSERT_OK(autd3_client_close(NULL)); /* a no-op, as free(NULL) */
  ASSERT_EQ(autd3_client_num_devices(NULL), 0);
  ASSERT_TRUE(autd3_client_link(NULL) == NULL);

  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  ASSERT_ERR(autd3_client_send(c, NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_client_read_firmware_version(c, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_client_read_error_detail(c, NULL), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_client_read_fpga_state(c, NULL), AUTD3_E_INVALID_ARGUMENT);
  f.len = AUTD3_PAYLOAD_BYTES + 1;
  ASSERT_ERR(autd3_client_send(c, &f, NULL), AUTD3_E_PAYLOAD);
  f.len = 0;
  uint8_t cmds[1] = {AUTD3_CMD_NOP};
  f.device_cmds = cmds;
  ASSERT_ERR(autd3_client_send(c, &f, NULL), AUTD3_E_PAYLOAD);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
}

static void expect_count_error(int link_devices, size_t geometry_devices, autd3_err_t expected, const char *needle) {
  autd3_link_option_t o = fx_testlink_option();
  fx_tl.num_devices_override = link_devices;
  autd3_geometry_t *g = fx_geometry(geometry_devices);
  autd3_client_t *c = (autd3_client_t *)1;
  ASSERT_ERR(autd3_client_open(g, &o, NULL, &c), expected);
  ASSERT_CONTAINS(autd3_last_error(), needle);
  ASSERT_TRUE(c == NULL);
  autd3_geometry_free(g);
}

TEST(link_reports_zero_devices) { expect_count_error(0, 1, AUTD3_E_DEVICE_COUNT_RANGE, "0 devices"); }
TEST(link_reports_129_devices) { expect_count_error(129, 1, AUTD3_E_DEVICE_COUNT_RANGE, "129 devices"); }
TEST(geometry_link_mismatch) { expect_count_error(2, 3, AUTD3_E_GEOMETRY_MISMATCH, "geometry has 3 device(s) but the remote link exposes 2"); }

TEST(geometry_out_of_range) {
  autd3_geometry_t *g = NULL;
  ASSERT_ERR(autd3_geometry_create(0, NULL, &g), AUTD3_E_DEVICE_COUNT_RANGE);
  ASSERT_ERR(autd3_geometry_create(129, NULL, &g), AUTD3_E_DEVICE_COUNT_RANGE);
  /* 128 is the largest chain, and the client drives it (128-bit ack mask). */
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_inflight = 4;
  autd3_client_t *c = fx_open_emu(128, CYCLE_NS, &cfg);
  autd3_frame_t f = bench_frame();
  for (int i = 0; i < 10; i++) ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_EQ(fx_counters(c, 127).executed, FX_OPEN_EXECUTED + 10);
  ASSERT_CLOSE_OK(c);
}

TEST(unknown_link_kind) {
  autd3_geometry_t *g = fx_geometry(1);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  o.kind = (autd3_link_kind_t)42;
  autd3_client_t *c = NULL;
  ASSERT_ERR(autd3_client_open(g, &o, NULL, &c), AUTD3_E_UNKNOWN_LINK);
  ASSERT_CONTAINS(autd3_last_error(), "42");
  autd3_geometry_free(g);
}

TEST(link_not_built) {
  if (autd3_link_kind_available(AUTD3_LINK_SOEM)) SKIP("the SOEM link is registered in this process");
  autd3_geometry_t *g = fx_geometry(1);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_SOEM);
  autd3_client_t *c = NULL;
  ASSERT_ERR(autd3_client_open(g, &o, NULL, &c), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "AUTD3_LINK_SOEM");
  autd3_geometry_free(g);
}

TEST(rt_settings_refused_cleanly) {
  /* A CPU that does not exist: the bus thread cannot pin itself, and open
   * says so instead of silently running unpinned. */
  autd3_geometry_t *g = fx_geometry(1);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.rt_cpu = 4095;
  autd3_client_t *c = (autd3_client_t *)1;
  autd3_err_t e = autd3_client_open(g, &o, &cfg, &c);
  ASSERT_NE(e, AUTD3_OK);
  ASSERT_CONTAINS(autd3_last_error(), "rt_cpu");
  ASSERT_CONTAINS(autd3_last_error(), "4095");
  ASSERT_TRUE(c == NULL);
  autd3_geometry_free(g);
}
