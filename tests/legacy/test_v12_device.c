/*
 * The v12 device model's ring and pacing (src/emulation/device/v12.c), which the
 * reference emulator (it executes on receipt) cannot show: one frame per
 * update, dedup against the last *queued* msg_id, 15 usable slots, a frame
 * that finds the ring full dropped and taken again on the host's repetition.
 */
#include <string.h>

#include "autd3/autd3.h"
#include "emulation/device/v12.h"
#include "harness/test.h"

static void frame(uint8_t tx[AUTD3_TX_FRAME_BYTES], uint8_t msg_id, uint8_t tag, uint8_t arg) {
  uint8_t op[2] = {tag, arg};
  autd3_v12_tx_encode(tx, msg_id, 0, op, 2);
}

TEST(boot_answer) {
  static autd3_v12_dev_t d;
  autd3_v12_dev_init(&d, AUTD3_V12_UPDATE_PERIOD_NS);
  uint8_t rx[2];
  autd3_v12_dev_read(&d, 0, rx);
  ASSERT_EQ(rx[0], 0x00);
  ASSERT_EQ(rx[1], 0x0F); /* msg_id 0xFF & 0x0F, err 0 */
}

TEST(one_frame_per_update) {
  static autd3_v12_dev_t d;
  const uint64_t ms = AUTD3_V12_UPDATE_PERIOD_NS;
  autd3_v12_dev_init(&d, (uint32_t)ms);
  uint8_t tx[AUTD3_TX_FRAME_BYTES], rx[2];
  autd3_v12_dev_read(&d, 0, rx); /* first update at t=0: nothing queued */
  for (uint8_t id = 1; id <= 3; id++) {
    frame(tx, id, AUTD3_V12_TAG_NOP, 0);
    autd3_v12_dev_write(&d, tx, 1000); /* all three between two updates */
  }
  ASSERT_EQ(d.ring_len, 3);
  autd3_v12_dev_read(&d, ms, rx);
  ASSERT_EQ(rx[1], 0x01);
  autd3_v12_dev_read(&d, 2 * ms, rx);
  ASSERT_EQ(rx[1], 0x02);
  autd3_v12_dev_read(&d, 3 * ms, rx);
  ASSERT_EQ(rx[1], 0x03);
  ASSERT_EQ(d.counters.executed, 3);
}

TEST(repeated_frame_is_taken_once) {
  static autd3_v12_dev_t d;
  autd3_v12_dev_init(&d, AUTD3_V12_UPDATE_PERIOD_NS);
  uint8_t tx[AUTD3_TX_FRAME_BYTES], rx[2];
  frame(tx, 1, AUTD3_V12_TAG_NOP, 0);
  for (int i = 0; i < 10; i++) autd3_v12_dev_write(&d, tx, (uint64_t)i * 100000u);
  autd3_v12_dev_read(&d, 5000000, rx);
  ASSERT_EQ(d.counters.executed, 1);
  ASSERT_EQ(d.counters.deduplicated, 9);
  ASSERT_EQ(rx[1], 0x01);
}

TEST(ring_overflow_drops_then_takes_the_repetition) {
  static autd3_v12_dev_t d;
  autd3_v12_dev_init(&d, AUTD3_V12_UPDATE_PERIOD_NS);
  d.fault.freeze = false;
  uint8_t tx[AUTD3_TX_FRAME_BYTES], rx[2];
  /* 16 distinct msg_ids (0x10 included: it is queued like any other) before any update. */
  autd3_v12_dev_read(&d, 0, rx);
  for (uint8_t k = 0; k < 16; k++) {
    frame(tx, (uint8_t)((k + 1) & 0x1F), AUTD3_V12_TAG_NOP, 0);
    autd3_v12_dev_write(&d, tx, 1000 + k);
  }
  ASSERT_EQ(d.ring_len, AUTD3_V12_RING_SLOTS - 1);
  ASSERT_EQ(d.counters.dropped, 1);
  /* The host repeats its last frame (msg_id 16) every cycle: once a slot frees, it is taken. */
  autd3_v12_dev_read(&d, AUTD3_V12_UPDATE_PERIOD_NS, rx);
  autd3_v12_dev_write(&d, tx, AUTD3_V12_UPDATE_PERIOD_NS + 1);
  ASSERT_EQ(d.ring_len, AUTD3_V12_RING_SLOTS - 1);
  for (uint64_t t = 2; t <= 20; t++) autd3_v12_dev_read(&d, t * AUTD3_V12_UPDATE_PERIOD_NS, rx);
  ASSERT_EQ(d.counters.executed, 16);
  ASSERT_EQ(rx[1], (uint8_t)((AUTD3_V12_ERR_INVALID_MSG_ID << 4) | 0x00)); /* msg_id 0x10: err 2, id nibble 0 */
}

TEST(frozen_device_keeps_its_answer) {
  static autd3_v12_dev_t d;
  autd3_v12_dev_init(&d, 0);
  uint8_t tx[AUTD3_TX_FRAME_BYTES], rx[2];
  frame(tx, 1, AUTD3_V12_TAG_NOP, 0);
  autd3_v12_dev_write(&d, tx, 0);
  d.fault.freeze = true;
  frame(tx, 2, AUTD3_V12_TAG_NOP, 0);
  autd3_v12_dev_write(&d, tx, 10);
  autd3_v12_dev_read(&d, 20, rx);
  ASSERT_EQ(rx[1], 0x01);
}
