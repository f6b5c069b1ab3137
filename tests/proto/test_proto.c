/* Wire protocol: opcode and error tables, payload encoders, byte for byte
 * (layouts: shinolab/autd3-sdk crates/autd3-rs-core/src/protocol). */
#include "autd3/proto.h"
#include "harness/test.h"

TEST(sizes) {
  ASSERT_EQ(AUTD3_TX_FRAME_BYTES, 626);
  ASSERT_EQ(AUTD3_RX_FRAME_BYTES, 2);
  ASSERT_EQ(AUTD3_PAYLOAD_BYTES, 624);
  ASSERT_EQ(AUTD3_XOR_HASH_MAX_DATA, 620);
}

TEST(opcodes) {
  static const struct { uint8_t v; const char *name; } t[] = {
      {0x00, "RESET"}, {0x01, "SYNCHRONIZE"}, {0x02, "SET_MODE"}, {0x03, "CLEAR"}, {0x04, "NOP"},
      {0xE0, "READ_ERROR_DETAIL"}, {0xE1, "READ_CPU_FW_VERSION_MAJOR"}, {0xE2, "READ_CPU_FW_VERSION_MINOR"},
      {0xE3, "READ_CPU_FW_VERSION_PATCH"}, {0xE4, "READ_FPGA_FW_VERSION_MAJOR"}, {0xE5, "READ_FPGA_FW_VERSION_MINOR"},
      {0xE6, "READ_FPGA_FW_VERSION_PATCH"}, {0xE7, "READ_FPGA_STATE"}, {0xF0, "XOR_HASH"}, {0x10, "WRITE_PATTERN_BUFFER"},
      {0x60, "FORCE_FAN"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) ASSERT_STREQ(autd3_cmd_name(t[i].v), t[i].name);
  ASSERT_STREQ(autd3_cmd_name(0x99), "UNKNOWN");
  ASSERT_STREQ(autd3_cmd_name(0xFF), "UNKNOWN");
}

TEST(device_errors) {
  ASSERT_EQ(AUTD3_DEV_ERR_UNKNOWN_CMD, 1);
  ASSERT_EQ(AUTD3_DEV_ERR_INVALID_PAYLOAD, 2);
  ASSERT_EQ(AUTD3_DEV_ERR_INVALID_DATA, 3);
  ASSERT_EQ(AUTD3_DEV_ERR_SYNC_NOT_READY, 8);
  ASSERT_EQ(AUTD3_DEV_ERR_INVALID_SYNC0_CYCLE, 9);
  ASSERT_STREQ(autd3_dev_err_message(0), "no error");
  ASSERT_STREQ(autd3_dev_err_message(1), "unknown command");
  ASSERT_STREQ(autd3_dev_err_message(3), "invalid data");
  ASSERT_STREQ(autd3_dev_err_message(0xAA), "unknown device error");
}

TEST(frame_simple) {
  static const uint8_t zero[AUTD3_PAYLOAD_BYTES];
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_CLEAR);
  ASSERT_EQ(f.cmd, 0x03);
  ASSERT_EQ(f.len, 0);
  ASSERT_MEMEQ(f.payload, zero, sizeof zero);
  ASSERT_TRUE(f.device_cmds == NULL);
  ASSERT_TRUE(f.device_payloads == NULL);
}

TEST(frame_set_mode) {
  autd3_frame_t f = autd3_frame_set_mode(AUTD3_MODE_LOW_LATENCY);
  ASSERT_EQ(f.cmd, 0x02);
  ASSERT_EQ(f.len, 1);
  ASSERT_EQ(f.payload[0], 0x01);
  ASSERT_EQ(f.payload[1], 0x00);
  f = autd3_frame_set_mode(AUTD3_MODE_FIFO);
  ASSERT_EQ(f.payload[0], 0x00);
}

TEST(frame_xor_hash) {
  const uint8_t data[3] = {0x11, 0x22, 0x33};
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash(&f, 0x0102, data, 3));
  const uint8_t want[] = {0x02, 0x01, 0x03, 0x00, 0x11, 0x22, 0x33, 0x00};
  ASSERT_EQ(f.cmd, 0xF0);
  ASSERT_EQ(f.len, 7);
  ASSERT_MEMEQ(f.payload, want, sizeof want);
  /* the largest: 620 data bytes fill the payload exactly (4 + 620 = 624) */
  uint8_t big[621];
  memset(big, 0x5A, sizeof big);
  ASSERT_OK(autd3_frame_xor_hash(&f, 0, big, 620));
  ASSERT_EQ(f.len, 624);
  ASSERT_EQ(f.payload[2], 0x6C);
  ASSERT_EQ(f.payload[3], 0x02);
  ASSERT_EQ(f.payload[623], 0x5A);
  ASSERT_ERR(autd3_frame_xor_hash(&f, 0, big, 621), AUTD3_E_PAYLOAD);
  ASSERT_CONTAINS(autd3_last_error(), "621");
  ASSERT_ERR(autd3_frame_xor_hash(NULL, 0, big, 1), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3_frame_xor_hash(&f, 0, NULL, 1), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_OK(autd3_frame_xor_hash(&f, 7, NULL, 0));
  ASSERT_EQ(f.len, 4);
  ASSERT_EQ(f.payload[0], 7);
}

TEST(frame_xor_hash_bench) {
  autd3_frame_t f;
  /* 620 bytes: 619 × 0xA5 XOR to 0xA5, so every byte is 0xA5 and the XOR of all is 0 */
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 3, 620));
  ASSERT_EQ(f.cmd, AUTD3_CMD_XOR_HASH);
  ASSERT_EQ(f.payload[0], 3);
  ASSERT_EQ(f.payload[1], 0);
  ASSERT_EQ(f.payload[2], 0x6C);
  ASSERT_EQ(f.payload[3], 0x02);
  uint8_t x = 0;
  for (int i = 0; i < 620; i++) {
    ASSERT_EQ(f.payload[4 + i], 0xA5);
    x ^= f.payload[4 + i];
  }
  ASSERT_EQ(x, 0);
  /* odd length: the two 0xA5 cancel, the check byte is 0 */
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, 3));
  const uint8_t want[] = {0x00, 0x00, 0x03, 0x00, 0xA5, 0xA5, 0x00};
  ASSERT_MEMEQ(f.payload, want, sizeof want);
  ASSERT_EQ(f.len, 7);
  ASSERT_ERR(autd3_frame_xor_hash_bench(&f, 0, 621), AUTD3_E_PAYLOAD);
  ASSERT_ERR(autd3_frame_xor_hash_bench(NULL, 0, 1), AUTD3_E_INVALID_ARGUMENT);
}

TEST(tx_encode) {
  uint8_t tx[AUTD3_TX_FRAME_BYTES];
  memset(tx, 0xEE, sizeof tx);
  const uint8_t pl[3] = {1, 2, 3};
  autd3_tx_encode(tx, 0x7F, AUTD3_CMD_NOP, pl, 3);
  ASSERT_EQ(tx[0], 0x7F);
  ASSERT_EQ(tx[1], 0x04);
  ASSERT_EQ(tx[2], 1);
  ASSERT_EQ(tx[3], 2);
  ASSERT_EQ(tx[4], 3);
  for (int i = 5; i < AUTD3_TX_FRAME_BYTES; i++) ASSERT_EQ(tx[i], 0);
  /* full payload: the last byte lands at 625 */
  uint8_t full[AUTD3_PAYLOAD_BYTES];
  for (int i = 0; i < AUTD3_PAYLOAD_BYTES; i++) full[i] = (uint8_t)i;
  autd3_tx_encode(tx, 0, AUTD3_CMD_XOR_HASH, full, sizeof full);
  ASSERT_EQ(tx[625], (uint8_t)623);
  ASSERT_MEMEQ(tx + 2, full, sizeof full);
  /* NULL payload: all zero */
  autd3_tx_encode(tx, 0xFF, AUTD3_CMD_RESET, NULL, 10);
  ASSERT_EQ(tx[0], 0xFF);
  ASSERT_EQ(tx[1], 0x00);
  for (int i = 2; i < AUTD3_TX_FRAME_BYTES; i++) ASSERT_EQ(tx[i], 0);
}
