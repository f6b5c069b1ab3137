/* The AUTD3 device model: firmware protocol behaviour (app.c / proto.c of
 * shinolab/autd3-sdk firmware/cpu) and the timing model. Times are model
 * time (ns) chosen by the test, never the wall clock. */
#include "autd3/emulator.h"
#include "emulation/device/device.h"
#include "emulation/device/exec_log.h"
#include "harness/test.h"

#define MS 1000000ull
#define US 1000ull

static uint8_t F[AUTD3_TX_FRAME_BYTES];

static const uint8_t *fr(uint8_t seq, uint8_t cmd) {
  autd3_tx_encode(F, seq, cmd, NULL, 0);
  return F;
}

static const uint8_t *fr_payload(uint8_t seq, const autd3_frame_t *f) {
  autd3_tx_encode(F, seq, f->cmd, f->payload, f->len);
  return F;
}

/* A device whose firmware core is driven directly (recv_ethercat + app_process_pending). */
static autd3_dev_t *core_dev(void) {
  static autd3_dev_t d;
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  autd3_dev_init(&d, NULL, &ideal);
  return &d;
}

static void rx_of(autd3_dev_t *d, uint64_t t, uint8_t *ack, uint8_t *data) {
  uint8_t rx[2];
  autd3_dev_read(d, t, rx);
  *ack = rx[0];
  *data = rx[1];
}

#define ASSERT_RX(d, t, want_ack, want_data) do { uint8_t got_ack_, got_data_; rx_of((d), (t), &got_ack_, &got_data_); \
    ASSERT_EQ(got_ack_, (want_ack)); ASSERT_EQ(got_data_, (want_data)); } while (0)

TEST(boot_state) {
  autd3_dev_t *d = core_dev();
  ASSERT_EQ(d->ack, 0xFF);
  ASSERT_EQ(d->data, 0);
  ASSERT_EQ(d->expected_seq, 0);
  ASSERT_EQ(d->mode, AUTD3_MODE_FIFO);
  ASSERT_EQ(d->last_seq, 0xFF);
  ASSERT_EQ(d->last_cmd, 0xFF);
  ASSERT_EQ(d->error_detail, 0);
  ASSERT_EQ(d->fifo_len, 0);
  ASSERT_RX(d, 0, 0xFF, 0);
  ASSERT_EQ(d->counters.received, 0);
}

TEST(in_order) {
  autd3_dev_t *d = core_dev();
  for (int i = 0; i < 300; i++) { /* past the 8-bit wrap */
    autd3_dev_recv_frame(d, fr((uint8_t)i, AUTD3_CMD_NOP), 0);
    ASSERT_RX(d, 0, (uint8_t)i, 0);
  }
  ASSERT_EQ(d->counters.executed, 300);
  ASSERT_EQ(d->expected_seq, 300 % 256);
}

TEST(out_of_order_ignored) {
  autd3_dev_t *d = core_dev();
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_NOP), 0); /* expected 0 */
  ASSERT_RX(d, 0, 0xFF, 0);
  ASSERT_EQ(d->counters.seq_mismatch, 1);
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_NOP), 0);
  ASSERT_RX(d, 0, 0, 0);
  autd3_dev_recv_frame(d, fr(2, AUTD3_CMD_XOR_HASH), 0); /* a gap: ignored, no dispatch */
  ASSERT_RX(d, 0, 0, 0);
  ASSERT_EQ(d->counters.seq_mismatch, 2);
  ASSERT_EQ(d->counters.executed, 1);
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_NOP), 0);
  ASSERT_RX(d, 0, 1, 0);
}

TEST(dedup) {
  autd3_dev_t *d = core_dev();
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_NOP), 0);
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_NOP), 0); /* the host repeats its frame every cycle */
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_NOP), 0);
  ASSERT_EQ(d->counters.received, 3);
  ASSERT_EQ(d->counters.deduplicated, 2);
  ASSERT_EQ(d->counters.executed, 1);
  ASSERT_EQ(d->counters.seq_mismatch, 0);
  /* same seq, other cmd: not a duplicate (processed, then ignored for seq) */
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_CLEAR), 0);
  ASSERT_EQ(d->counters.deduplicated, 2);
  ASSERT_EQ(d->counters.seq_mismatch, 1);
  /* (0xFF, 0xFF) at boot is in the dedup memory */
  d = core_dev();
  autd3_dev_recv_frame(d, fr(0xFF, 0xFF), 0);
  ASSERT_EQ(d->counters.deduplicated, 1);
}

TEST(reset) {
  autd3_dev_t *d = core_dev();
  autd3_dev_recv_frame(d, fr(0, 0x99), 0); /* unknown → error latched */
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_NOP), 0);
  ASSERT_RX(d, 0, 1, 0);
  autd3_dev_recv_frame(d, fr(7, AUTD3_CMD_RESET), 0); /* any seq */
  ASSERT_RX(d, 0, 0xFF, 0);
  ASSERT_EQ(d->expected_seq, 0);
  ASSERT_EQ(d->counters.resets, 1);
  ASSERT_EQ(d->error_detail, AUTD3_DEV_ERR_UNKNOWN_CMD); /* proto.c: Reset leaves error_detail */
  /* the client's handshake: Reset seq 0 then seq 1, then frames from seq 0 */
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_RESET), 0);
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_RESET), 0);
  ASSERT_EQ(d->counters.resets, 3);
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_NOP), 0);
  ASSERT_RX(d, 0, 0, 0);
  /* an immediately repeated Reset is a duplicate */
  autd3_dev_recv_frame(d, fr(9, AUTD3_CMD_RESET), 0);
  autd3_dev_recv_frame(d, fr(9, AUTD3_CMD_RESET), 0);
  ASSERT_EQ(d->counters.resets, 4);
}

/* Take on arrival, a main loop that needs 1 s per frame: the FIFO fills up. */
TEST(fifo_drop_on_full) {
  autd3_dev_t d;
  autd3_timing_model_t m = {.take_on_sync0 = false, .fifo_latency_ns = 1000 * MS, .ll_latency_ns = 0, .publish_on_sync0 = false};
  autd3_dev_init(&d, NULL, &m);
  for (int i = 0; i < 7; i++) autd3_dev_write(&d, fr((uint8_t)i, AUTD3_CMD_NOP), (uint64_t)i);
  ASSERT_EQ(d.fifo_len, 7); /* ring of 8, 7 usable (the head in progress still occupies its slot) */
  ASSERT_EQ(d.counters.dropped, 0);
  autd3_dev_write(&d, fr(7, AUTD3_CMD_NOP), 10);
  ASSERT_EQ(d.counters.dropped, 1);
  ASSERT_EQ(d.last_seq, 6); /* dedup memory not updated by the dropped frame */
  ASSERT_EQ(d.last_cmd, AUTD3_CMD_NOP);
  ASSERT_RX(&d, 999 * MS, 0xFF, 0);
  ASSERT_RX(&d, 1000 * MS, 0, 0); /* head done after 1 s: a slot is free */
  autd3_dev_write(&d, fr(7, AUTD3_CMD_NOP), 1000 * MS + 1); /* the retransmission is not a duplicate */
  ASSERT_EQ(d.counters.deduplicated, 0);
  ASSERT_EQ(d.fifo_len, 7);
  ASSERT_RX(&d, 8000 * MS, 7, 0); /* all eight processed in order, one per second */
  ASSERT_EQ(d.counters.executed, 8);
  ASSERT_EQ(d.counters.received, 9);
}

TEST(low_latency_mode) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_default(); /* take at SYNC0, FIFO 100 µs, LL 10 µs */
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 1 * MS, 1 * MS);
  autd3_frame_t sm = autd3_frame_set_mode(AUTD3_MODE_LOW_LATENCY);
  autd3_dev_write(&d, fr_payload(0, &sm), 1 * MS); /* just after the edge at 1 ms: taken at 2 ms */
  ASSERT_RX(&d, 2 * MS + 99 * US, 0xFF, 0);
  ASSERT_RX(&d, 2 * MS + 100 * US, 0, 0); /* FIFO: +100 µs */
  ASSERT_EQ(d.mode, AUTD3_MODE_LOW_LATENCY);
  autd3_dev_write(&d, fr(1, AUTD3_CMD_NOP), 3 * MS); /* taken at 4 ms, processed inline */
  ASSERT_RX(&d, 4 * MS + 9 * US, 0, 0);
  ASSERT_RX(&d, 4 * MS + 10 * US, 1, 0); /* LL: +10 µs */
  ASSERT_EQ(d.fifo_len, 0);
  /* bad mode → InvalidPayload, mode unchanged */
  sm.payload[0] = 2;
  autd3_dev_write(&d, fr_payload(2, &sm), 5 * MS);
  ASSERT_RX(&d, 7 * MS, 2, AUTD3_DEV_ERR_INVALID_PAYLOAD);
  ASSERT_EQ(d.mode, AUTD3_MODE_LOW_LATENCY);
  /* back to FIFO */
  sm.payload[0] = 0;
  autd3_dev_write(&d, fr_payload(3, &sm), 7 * MS);
  ASSERT_RX(&d, 9 * MS, 3, 0);
  ASSERT_EQ(d.mode, AUTD3_MODE_FIFO);
}

TEST(error_latch_and_read_error_detail) {
  autd3_dev_t *d = core_dev();
  autd3_frame_t bad;
  const uint8_t data[2] = {1, 2};
  ASSERT_OK(autd3_frame_xor_hash(&bad, 0, data, 2));
  autd3_dev_recv_frame(d, fr_payload(0, &bad), 0);
  ASSERT_RX(d, 0, 0, AUTD3_DEV_ERR_INVALID_DATA);
  ASSERT_EQ(d->counters.errors, 1);
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_NOP), 0);
  ASSERT_RX(d, 0, 1, 0);
  autd3_dev_recv_frame(d, fr(2, AUTD3_CMD_READ_ERROR_DETAIL), 0);
  ASSERT_RX(d, 0, 2, AUTD3_DEV_ERR_INVALID_DATA);
  autd3_dev_recv_frame(d, fr(3, AUTD3_CMD_READ_ERROR_DETAIL), 0); /* reads do not clear it */
  ASSERT_RX(d, 0, 3, AUTD3_DEV_ERR_INVALID_DATA);
  autd3_dev_recv_frame(d, fr(4, 0x99), 0);
  ASSERT_RX(d, 0, 4, AUTD3_DEV_ERR_UNKNOWN_CMD);
  autd3_dev_recv_frame(d, fr(5, AUTD3_CMD_READ_ERROR_DETAIL), 0);
  ASSERT_RX(d, 0, 5, AUTD3_DEV_ERR_UNKNOWN_CMD);
  ASSERT_EQ(d->counters.errors, 2);
}

TEST(xor_hash) {
  autd3_dev_t *d = core_dev();
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, 620));
  autd3_dev_recv_frame(d, fr_payload(0, &f), 0);
  ASSERT_RX(d, 0, 0, 0);
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, 0)); /* empty data XORs to 0 */
  autd3_dev_recv_frame(d, fr_payload(1, &f), 0);
  ASSERT_RX(d, 0, 1, 0);
  const uint8_t bad[1] = {0x01};
  ASSERT_OK(autd3_frame_xor_hash(&f, 0, bad, 1));
  autd3_dev_recv_frame(d, fr_payload(2, &f), 0);
  ASSERT_RX(d, 0, 2, AUTD3_DEV_ERR_INVALID_DATA);
  /* data_len 621 (hand-made: the encoder refuses it) → InvalidPayload */
  autd3_tx_encode(F, 3, AUTD3_CMD_XOR_HASH, NULL, 0);
  F[4] = 621 & 0xFF;
  F[5] = 621 >> 8;
  autd3_dev_recv_frame(d, F, 0);
  ASSERT_RX(d, 0, 3, AUTD3_DEV_ERR_INVALID_PAYLOAD);
}

/* XorHash sleep_ms keeps the main loop busy: the next frame waits. */
TEST(sleep_delays_later_frames) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_default();
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 1 * MS, 1 * MS);
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 5, 620));
  autd3_dev_write(&d, fr_payload(0, &f), 1 * MS);  /* taken at 2 ms, done at 2 + 0.1 + 5 ms */
  autd3_dev_write(&d, fr(1, AUTD3_CMD_NOP), 2 * MS); /* taken at 3 ms, waits for the main loop */
  ASSERT_RX(&d, 7 * MS + 99 * US, 0xFF, 0);
  ASSERT_RX(&d, 7 * MS + 100 * US, 0, 0);
  ASSERT_RX(&d, 7 * MS + 199 * US, 0, 0);
  ASSERT_RX(&d, 7 * MS + 200 * US, 1, 0);
  /* a sleep on a frame that is not dispatched (wrong seq) costs nothing */
  autd3_dev_write(&d, fr_payload(9, &f), 8 * MS); /* taken at 9 ms, ignored at 9.1 ms */
  autd3_dev_write(&d, fr(2, AUTD3_CMD_NOP), 9 * MS); /* taken at 10 ms, done 10.1 ms */
  ASSERT_RX(&d, 10 * MS + 100 * US, 2, 0);
}

TEST(version_reads) {
  autd3_fw_version_t v = {1, 2, 3, 4, 5, 6};
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  autd3_dev_t d;
  autd3_dev_init(&d, &v, &ideal);
  d.fpga_state = 0x42;
  const uint8_t cmds[] = {AUTD3_CMD_READ_CPU_FW_VERSION_MAJOR, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR,
                          AUTD3_CMD_READ_CPU_FW_VERSION_PATCH, AUTD3_CMD_READ_FPGA_FW_VERSION_MAJOR,
                          AUTD3_CMD_READ_FPGA_FW_VERSION_MINOR, AUTD3_CMD_READ_FPGA_FW_VERSION_PATCH,
                          AUTD3_CMD_READ_FPGA_STATE};
  const uint8_t want[] = {1, 2, 3, 4, 5, 6, 0x42};
  for (int i = 0; i < 7; i++) {
    autd3_dev_recv_frame(&d, fr((uint8_t)i, cmds[i]), 0);
    ASSERT_RX(&d, 0, i, want[i]);
  }
  ASSERT_EQ(d.counters.errors, 0);
  ASSERT_EQ(d.error_detail, 0); /* values are not errors */
  /* default identity: the 0.9 series the client speaks (CPU/FPGA 0.9.0), an
   * emulator by its function bits, FPGA state "pattern mode" (0x08) as the
   * reference firmware answers after power-on */
  autd3_dev_init(&d, NULL, &ideal);
  autd3_dev_recv_frame(&d, fr(0, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR), 0);
  ASSERT_RX(&d, 0, 0, 9);
  autd3_dev_recv_frame(&d, fr(1, AUTD3_CMD_READ_FPGA_FW_VERSION_MINOR), 0);
  ASSERT_RX(&d, 0, 1, 9);
  autd3_dev_recv_frame(&d, fr(2, AUTD3_CMD_READ_FPGA_FUNCTIONS), 0);
  ASSERT_RX(&d, 0, 2, AUTD3_DEV_FPGA_FUNC_EMULATOR);
  autd3_dev_recv_frame(&d, fr(3, AUTD3_CMD_READ_FPGA_STATE), 0);
  ASSERT_RX(&d, 0, 3, AUTD3_DEV_FPGA_STATE_PATTERN_MODE);
  /* Clear restores pattern mode (fpga::init), keeps the thermal input */
  d.fpga_state = AUTD3_DEV_FPGA_STATE_THERMAL_ASSERT | AUTD3_DEV_FPGA_STATE_PATTERN_BANK;
  autd3_dev_recv_frame(&d, fr(4, AUTD3_CMD_CLEAR), 0);
  autd3_dev_recv_frame(&d, fr(5, AUTD3_CMD_READ_FPGA_STATE), 0);
  ASSERT_RX(&d, 0, 5, AUTD3_DEV_FPGA_STATE_THERMAL_ASSERT | AUTD3_DEV_FPGA_STATE_PATTERN_MODE);
}

/* Opcodes of the reference client autd3-rs 0.9.0 (PyPI autd3 0.9.0): open() reads
 * the FPGA function bits (0xE9) after the versions, close() writes a zero raw
 * pattern with WritePatternFused (0x14). Neither may answer UnknownCmd. */
TEST(reference_0_9_opcodes) {
  autd3_dev_t *d = core_dev();
  d->fpga_functions = 0xA5;
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_READ_FPGA_FUNCTIONS), 0);
  ASSERT_RX(d, 0, 0, 0xA5);
  ASSERT_EQ(d->error_detail, 0); /* a read, not an error */
  /* close()'s frame as captured from the 0.9.0 client: bank 0, raw (type 1),
   * divider 0xFFFF, size 1, rep 0xFFFF, data_len 498 (249 words) at offset 14 */
  uint8_t pl[AUTD3_PAYLOAD_BYTES] = {0x00, 0x01, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00, 0xFF, 0xFF, 0xF2, 0x01};
  autd3_tx_encode(F, 1, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, sizeof pl);
  autd3_dev_recv_frame(d, F, 0);
  ASSERT_RX(d, 0, 1, 0);
  /* the firmware's payload checks: odd length, or longer than 624 - 32 bytes */
  pl[14] = 0xF3; /* 499 */
  autd3_tx_encode(F, 2, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, sizeof pl);
  autd3_dev_recv_frame(d, F, 0);
  ASSERT_RX(d, 0, 2, AUTD3_DEV_ERR_INVALID_PAYLOAD);
  pl[14] = 0x52; /* 594 */
  pl[15] = 0x02;
  autd3_tx_encode(F, 3, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, sizeof pl);
  autd3_dev_recv_frame(d, F, 0);
  ASSERT_RX(d, 0, 3, AUTD3_DEV_ERR_INVALID_PAYLOAD);
  pl[14] = 0x50; /* 592: the largest */
  autd3_tx_encode(F, 4, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, sizeof pl);
  autd3_dev_recv_frame(d, F, 0);
  ASSERT_RX(d, 0, 4, 0);
  /* an all-zero WriteModulationFused has divider 0 and size 0: the firmware
   * (write_mod_fused.rs, validate_mod_config) refuses it, and so does the model */
  autd3_dev_recv_frame(d, fr(5, AUTD3_CMD_WRITE_MODULATION_FUSED), 0);
  ASSERT_RX(d, 0, 5, AUTD3_DEV_ERR_INVALID_PAYLOAD);
  ASSERT_EQ(d->counters.errors, 3);
  ASSERT_STREQ(autd3_cmd_name(AUTD3_CMD_WRITE_PATTERN_FUSED), "WRITE_PATTERN_FUSED");
  ASSERT_STREQ(autd3_cmd_name(0xE9), "READ_FPGA_FUNCTIONS");
  /* still unknown: an opcode in no table */
  autd3_dev_recv_frame(d, fr(6, 0xEF), 0);
  ASSERT_RX(d, 0, 6, AUTD3_DEV_ERR_UNKNOWN_CMD);
}

TEST(clear_sync_nop) {
  autd3_dev_t *d = core_dev();
  autd3_dev_set_sync0(d, 0, 1000000);
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_CLEAR), 0);
  ASSERT_RX(d, 0, 0, 0);
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_SYNCHRONIZE), 0);
  ASSERT_RX(d, 0, 1, 0);
  ASSERT_TRUE(d->synchronized);
  autd3_dev_recv_frame(d, fr(2, AUTD3_CMD_NOP), 0);
  ASSERT_RX(d, 0, 2, 0);
  autd3_dev_recv_frame(d, fr(3, AUTD3_CMD_WRITE_MODULATION_BUFFER), 0); /* FPGA command: accepted */
  ASSERT_RX(d, 0, 3, 0);
  /* sync.c: SYNC0 off → SyncNotReady; not a multiple of 500 µs → InvalidSync0Cycle */
  d = core_dev();
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_SYNCHRONIZE), 0);
  ASSERT_RX(d, 0, 0, AUTD3_DEV_ERR_SYNC_NOT_READY);
  autd3_dev_set_sync0(d, 0, 300000);
  autd3_dev_recv_frame(d, fr(1, AUTD3_CMD_SYNCHRONIZE), 0);
  ASSERT_RX(d, 0, 1, AUTD3_DEV_ERR_INVALID_SYNC0_CYCLE);
  d->sync0_any_period = true;
  autd3_dev_recv_frame(d, fr(2, AUTD3_CMD_SYNCHRONIZE), 0);
  ASSERT_RX(d, 0, 2, 0);
}

/* Default: taken at the next SYNC0 edge after arrival; ideal arrival model: at once. */
TEST(timing_take_sync0_vs_arrival) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_default();
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1500 * US);
  ASSERT_EQ(d.counters.received, 0);
  ASSERT_RX(&d, 1999 * US, 0xFF, 0);
  ASSERT_EQ(d.counters.received, 0);
  ASSERT_RX(&d, 2000 * US, 0xFF, 0);
  ASSERT_EQ(d.counters.received, 1); /* taken at 2 ms */
  ASSERT_RX(&d, 2099 * US, 0xFF, 0);
  ASSERT_RX(&d, 2100 * US, 0, 0);
  /* a frame arriving exactly at an edge waits for the next one (it arrives just after SYNC0) */
  autd3_dev_write(&d, fr(1, AUTD3_CMD_NOP), 3 * MS);
  ASSERT_EQ(d.counters.received, 1);
  ASSERT_RX(&d, 4100 * US, 1, 0);

  m.take_on_sync0 = false; /* arrival */
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1500 * US);
  ASSERT_EQ(d.counters.received, 1);
  ASSERT_RX(&d, 1599 * US, 0xFF, 0);
  ASSERT_RX(&d, 1600 * US, 0, 0);
}

TEST(timing_newest_image_wins) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_default();
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  autd3_dev_write(&d, fr(0, 0x99), 1100 * US);           /* replaced before the edge */
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1200 * US);
  ASSERT_RX(&d, 3 * MS, 0, 0); /* the unknown command never ran */
  ASSERT_EQ(d.counters.received, 1);
  ASSERT_EQ(d.counters.errors, 0);
}

TEST(timing_publish_on_sync0) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_pessimistic(); /* take at SYNC0, FIFO 900 µs, publish at SYNC0 */
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1 * MS); /* taken at 2 ms, processed at 2.9 ms */
  ASSERT_RX(&d, 2950 * US, 0xFF, 0);
  ASSERT_EQ(d.ack, 0); /* the firmware has it, the inputs do not yet */
  ASSERT_RX(&d, 3 * MS, 0, 0); /* published at the 3 ms edge */
  /* with a 500 µs cycle the 900 µs main loop costs a whole extra cycle */
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 500 * US);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1000 * US); /* taken 1.5, done 2.4, published 2.5 */
  ASSERT_RX(&d, 2499 * US, 0xFF, 0);
  ASSERT_RX(&d, 2500 * US, 0, 0);
}

TEST(timing_ideal_same_exchange) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_ideal();
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  for (int i = 0; i < 10; i++) {
    uint64_t t = (uint64_t)(i + 1) * MS;
    autd3_dev_write(&d, fr((uint8_t)i, AUTD3_CMD_NOP), t);
    ASSERT_RX(&d, t, i, 0);
  }
}

TEST(timing_model_parse) {
  autd3_timing_model_t m;
  ASSERT_OK(autd3_timing_model_parse("default", &m));
  ASSERT_TRUE(m.take_on_sync0);
  ASSERT_EQ(m.fifo_latency_ns, 100000);
  ASSERT_EQ(m.ll_latency_ns, 10000);
  ASSERT_FALSE(m.publish_on_sync0);
  ASSERT_OK(autd3_timing_model_parse("pessimistic", &m));
  ASSERT_EQ(m.fifo_latency_ns, 900000);
  ASSERT_TRUE(m.publish_on_sync0);
  ASSERT_OK(autd3_timing_model_parse("ideal", &m));
  ASSERT_FALSE(m.take_on_sync0);
  ASSERT_EQ(m.fifo_latency_ns, 0);
  ASSERT_EQ(m.ll_latency_ns, 0);
  ASSERT_OK(autd3_timing_model_parse("take=arrival,fifo=5,ll=6,publish=sync0", &m));
  ASSERT_FALSE(m.take_on_sync0);
  ASSERT_EQ(m.fifo_latency_ns, 5);
  ASSERT_EQ(m.ll_latency_ns, 6);
  ASSERT_TRUE(m.publish_on_sync0);
  ASSERT_OK(autd3_timing_model_parse("fifo=250000", &m)); /* other keys: default */
  ASSERT_TRUE(m.take_on_sync0);
  ASSERT_EQ(m.fifo_latency_ns, 250000);
  const char *bad[] = {"", "fast", "take=foo", "fifo=", "fifo=1,", "x=1", "fifo=99999999999", "fifo=-1", "publish=later", "take"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ASSERT_ERR(autd3_timing_model_parse(bad[i], &m), AUTD3_E_INVALID_OPTION);
    ASSERT_CONTAINS(autd3_last_error(), "timing model");
  }
  ASSERT_ERR(autd3_timing_model_parse(NULL, &m), AUTD3_E_INVALID_ARGUMENT);
}

TEST(power_cycle) {
  autd3_dev_t *d = core_dev();
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_SET_MODE), 0);
  F[2] = 1;
  autd3_frame_t sm = autd3_frame_set_mode(AUTD3_MODE_LOW_LATENCY);
  autd3_dev_recv_frame(d, fr_payload(1, &sm), 0);
  autd3_dev_recv_frame(d, fr(2, 0x99), 0);
  ASSERT_EQ(d->mode, AUTD3_MODE_LOW_LATENCY);
  autd3_device_fault_t fz = {.freeze = true};
  autd3_dev_set_fault(d, &fz, 0);
  autd3_dev_power_cycle(d, 1);
  ASSERT_EQ(d->mode, AUTD3_MODE_FIFO);
  ASSERT_EQ(d->expected_seq, 0);
  ASSERT_EQ(d->error_detail, 0);
  ASSERT_EQ(d->last_seq, 0xFF);
  ASSERT_FALSE(d->fault.freeze);
  ASSERT_RX(d, 1, 0xFF, 0);
  ASSERT_EQ(d->counters.executed, 3); /* counters survive */
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_NOP), 2);
  ASSERT_RX(d, 2, 0, 0);
}

TEST(fault_drop_next) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_ideal();
  autd3_dev_init(&d, NULL, &m);
  autd3_device_fault_t f = {.drop_next = 2};
  autd3_dev_set_fault(&d, &f, 0);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 2);
  ASSERT_RX(&d, 2, 0xFF, 0);
  ASSERT_EQ(d.counters.received, 0);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 3); /* the host's repeat gets through */
  ASSERT_RX(&d, 3, 0, 0);
  ASSERT_EQ(d.counters.received, 1);
}

TEST(fault_freeze) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_default();
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_NOP), 1 * MS);
  ASSERT_RX(&d, 3 * MS, 0, 0);
  autd3_device_fault_t f = {.freeze = true};
  autd3_dev_set_fault(&d, &f, 3 * MS);
  for (uint64_t t = 3; t < 10; t++) autd3_dev_write(&d, fr(1, AUTD3_CMD_CLEAR), t * MS);
  ASSERT_RX(&d, 20 * MS, 0, 0); /* inputs keep their last value */
  ASSERT_EQ(d.counters.received, 1);
  f.freeze = false;
  autd3_dev_set_fault(&d, &f, 20 * MS);
  autd3_dev_write(&d, fr(1, AUTD3_CMD_CLEAR), 20 * MS);
  ASSERT_RX(&d, 22 * MS, 1, 0);
}

TEST(fault_invalidate_rx) {
  autd3_dev_t *d = core_dev();
  autd3_device_fault_t f = {.invalidate_rx = 2};
  autd3_dev_set_fault(d, &f, 0);
  ASSERT_TRUE(autd3_dev_consume_rx_invalid(d));
  ASSERT_TRUE(autd3_dev_consume_rx_invalid(d));
  ASSERT_FALSE(autd3_dev_consume_rx_invalid(d));
}

/* Reset is processed inline and empties the FIFO, also the frame in progress. */
TEST(reset_empties_fifo) {
  autd3_dev_t d;
  autd3_timing_model_t m = {.take_on_sync0 = false, .fifo_latency_ns = 10 * MS, .ll_latency_ns = 0, .publish_on_sync0 = false};
  autd3_dev_init(&d, NULL, &m);
  for (int i = 0; i < 4; i++) autd3_dev_write(&d, fr((uint8_t)i, AUTD3_CMD_NOP), (uint64_t)i);
  ASSERT_EQ(d.fifo_len, 4);
  autd3_dev_write(&d, fr(0, AUTD3_CMD_RESET), 5);
  ASSERT_EQ(d.fifo_len, 0);
  ASSERT_RX(&d, 100 * MS, 0xFF, 0);
  ASSERT_EQ(d.counters.executed, 0);
  ASSERT_EQ(d.counters.resets, 1);
}

/* Low-latency mode: an inline XorHash sleep keeps the ISR busy, so the next
 * image is only taken at the first SYNC0 edge after the ISR is free, and
 * meanwhile newer images replace it. */
TEST(low_latency_sleep_blocks_takes) {
  autd3_dev_t d;
  autd3_timing_model_t m = autd3_timing_model_default();
  autd3_dev_init(&d, NULL, &m);
  autd3_dev_set_sync0(&d, 0, 1 * MS);
  autd3_frame_t sm = autd3_frame_set_mode(AUTD3_MODE_LOW_LATENCY);
  autd3_dev_write(&d, fr_payload(0, &sm), 1 * MS);
  ASSERT_RX(&d, 3 * MS, 0, 0);
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 3, 10));
  autd3_dev_write(&d, fr_payload(1, &f), 3 * MS);       /* taken at 4 ms, ISR busy until 7.01 ms */
  autd3_dev_write(&d, fr(2, AUTD3_CMD_NOP), 4 * MS);     /* replaced before it is taken */
  autd3_dev_write(&d, fr(2, AUTD3_CMD_CLEAR), 6 * MS);   /* the newest image */
  ASSERT_RX(&d, 7 * MS, 0, 0);
  ASSERT_RX(&d, 7 * MS + 10 * US, 1, 0);
  ASSERT_EQ(d.counters.received, 2);
  ASSERT_RX(&d, 8 * MS + 10 * US, 2, 0); /* taken at the 8 ms edge */
  ASSERT_EQ(d.counters.received, 3);
  ASSERT_EQ(d.counters.executed, 3);
}

/* Random frames, times and models (fixed seed): the model never crashes, the
 * counters add up, and ack/expected stay consistent. Memory safety comes from
 * running this under the sanitizer build. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)rng_state;
}

TEST(random_walk_invariants) {
  static const uint8_t cmds[] = {AUTD3_CMD_NOP, AUTD3_CMD_CLEAR, AUTD3_CMD_SET_MODE, AUTD3_CMD_XOR_HASH, AUTD3_CMD_RESET,
                                 AUTD3_CMD_READ_ERROR_DETAIL, 0x99, AUTD3_CMD_SYNCHRONIZE};
  for (int run = 0; run < 40; run++) {
    autd3_timing_model_t m = {.take_on_sync0 = rnd() & 1, .fifo_latency_ns = rnd() % (2 * MS), .ll_latency_ns = rnd() % (200 * US),
                              .publish_on_sync0 = rnd() & 1};
    autd3_dev_t d;
    autd3_dev_init(&d, NULL, &m);
    uint32_t period = (rnd() % 4) * 250 * US;
    autd3_dev_set_sync0(&d, rnd() % MS, period);
    uint64_t t = 0;
    uint8_t seq = 0;
    for (int i = 0; i < 2000; i++) {
      t += rnd() % (2 * MS);
      uint8_t cmd = cmds[rnd() % sizeof cmds];
      if (rnd() % 4 == 0) seq++; /* the host moves on (or repeats) */
      if (rnd() % 16 == 0) seq = (uint8_t)rnd();
      autd3_tx_encode(F, seq, cmd, NULL, 0);
      F[2] = (uint8_t)(rnd() % 3);           /* SetMode 0/1/2, or XorHash sleep_ms */
      F[4] = (uint8_t)rnd();                 /* XorHash data_len, sometimes > 620 */
      F[5] = (uint8_t)(rnd() % 3);
      autd3_dev_write(&d, F, t);
      uint8_t rx[2];
      autd3_dev_read(&d, t + rnd() % MS, rx);
      if (rnd() % 500 == 0) {
        autd3_device_fault_t f = {.drop_next = rnd() % 3, .freeze = (rnd() % 3) == 0, .invalidate_rx = rnd() % 3};
        autd3_dev_set_fault(&d, &f, t);
      }
      if (rnd() % 700 == 0) autd3_dev_power_cycle(&d, t);
      const autd3_device_counters_t *c = &d.counters;
      ASSERT_GE(c->received, c->deduplicated + c->dropped + c->executed + c->seq_mismatch + c->resets);
      ASSERT_LE(d.fifo_len, AUTD3_DEV_FIFO_DEPTH - 1);
      ASSERT_TRUE(d.ack == 0xFF || (uint8_t)(d.ack + 1) == d.expected_seq);
      ASSERT_EQ(d.time_reversals, 0);
    }
  }
}

/* ---- execution log (device/exec_log.h) ---- */

static autd3_exec_log_t g_log;

static const uint8_t *tagged(uint8_t seq, uint32_t id) {
  uint8_t data[8];
  for (int k = 0; k < 4; k++) data[k] = data[4 + k] = (uint8_t)(id >> (8 * k));
  autd3_frame_t f;
  autd3_frame_xor_hash(&f, 0, data, sizeof data);
  return fr_payload(seq, &f);
}

/* Executed frames are logged with their tag; repeats (dedup) and seq
 * mismatches are not; a power cycle keeps the log and counts a boot. */
TEST(exec_log_records_executions_only) {
  memset(&g_log, 0, sizeof g_log);
  autd3_dev_t *d = core_dev();
  autd3_dev_attach_log(d, &g_log);
  autd3_dev_recv_frame(d, fr(0, AUTD3_CMD_RESET), 1);
  autd3_dev_recv_frame(d, tagged(0, 0x11223344u), 2);
  autd3_dev_recv_frame(d, tagged(0, 0x11223344u), 3); /* the host repeats its last frame: dedup */
  autd3_dev_recv_frame(d, tagged(5, 0x55555555u), 4); /* seq mismatch: ignored */
  autd3_dev_recv_frame(d, tagged(1, 0xA0A0A0A0u), 5);
  autd3_dev_power_cycle(d, 6);
  autd3_dev_recv_frame(d, tagged(0, 0x01020304u), 7);
  autd3_exec_entry_t e[8];
  uint64_t dropped = 99;
  size_t n = autd3_exec_log_drain(&g_log, e, 8, &dropped);
  ASSERT_EQ(n, 4);
  ASSERT_EQ(dropped, 0);
  ASSERT_EQ(e[0].cmd, AUTD3_CMD_RESET);
  ASSERT_EQ(e[1].cmd, AUTD3_CMD_XOR_HASH);
  ASSERT_EQ(e[1].tag, 0x11223344u);
  ASSERT_EQ(e[1].seq, 0);
  ASSERT_EQ(e[1].result, 0);
  ASSERT_EQ(e[2].tag, 0xA0A0A0A0u);
  ASSERT_EQ(e[2].index, 2);
  ASSERT_EQ(e[2].boot, 0);
  ASSERT_EQ(e[3].tag, 0x01020304u);
  ASSERT_EQ(e[3].boot, 1);
  ASSERT_EQ(e[3].index, 3);
  ASSERT_EQ(autd3_exec_log_drain(&g_log, e, 8, NULL), 0);
  autd3_dev_attach_log(d, NULL);
}

/* A full ring drops new entries and counts them; indices show the gap. */
TEST(exec_log_full_ring_drops_and_counts) {
  memset(&g_log, 0, sizeof g_log);
  for (uint32_t i = 0; i < AUTD3_EXEC_LOG_CAPACITY + 5; i++) {
    uint8_t pl[8] = {0, 0, 0, 0, (uint8_t)i, (uint8_t)(i >> 8), 0, 0};
    autd3_exec_log_push(&g_log, (uint8_t)i, AUTD3_CMD_NOP, 0, pl);
  }
  static autd3_exec_entry_t e[AUTD3_EXEC_LOG_CAPACITY];
  uint64_t dropped = 0;
  ASSERT_EQ(autd3_exec_log_drain(&g_log, e, AUTD3_EXEC_LOG_CAPACITY, &dropped), AUTD3_EXEC_LOG_CAPACITY);
  ASSERT_EQ(dropped, 5);
  ASSERT_EQ(e[AUTD3_EXEC_LOG_CAPACITY - 1].index, AUTD3_EXEC_LOG_CAPACITY - 1);
  uint8_t pl[8] = {0};
  autd3_exec_log_push(&g_log, 0, AUTD3_CMD_NOP, 0, pl);
  ASSERT_EQ(autd3_exec_log_drain(&g_log, e, 4, &dropped), 1);
  ASSERT_EQ(e[0].index, AUTD3_EXEC_LOG_CAPACITY + 5); /* the gap: 5 lost */
}
