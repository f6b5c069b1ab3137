/*
 * The new-generation wire protocol: opcode/error tables and payload encoders.
 * Layouts: shinolab/autd3-sdk crates/autd3-rs-core/src/protocol and
 * firmware/cpu/inc/proto.h (crates autd3-rs-core / autd3-cpu-wire 0.9.0).
 */
#include <string.h>

#include "autd3/link_driver.h" /* autd3_set_error */
#include "autd3/proto.h"

const char *autd3_cmd_name(uint8_t cmd) {
  switch (cmd) {
#define AUTD3_CMD_NAME_(name, val) \
  case (val):                      \
    return #name;
    AUTD3_CMD_MAP(AUTD3_CMD_NAME_)
#undef AUTD3_CMD_NAME_
    default:
      return "UNKNOWN";
  }
}

const char *autd3_dev_err_message(uint8_t code) {
  switch (code) {
#define AUTD3_DEV_ERR_MSG_(name, val, msg) \
  case (val):                              \
    return msg;
    AUTD3_DEV_ERR_MAP(AUTD3_DEV_ERR_MSG_)
#undef AUTD3_DEV_ERR_MSG_
    default:
      return "unknown device error";
  }
}

autd3_frame_t autd3_frame_simple(uint8_t cmd) {
  autd3_frame_t f;
  memset(&f, 0, sizeof f);
  f.cmd = cmd;
  return f;
}

autd3_frame_t autd3_frame_set_mode(autd3_fw_mode_t mode) {
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_SET_MODE);
  f.payload[0] = (uint8_t)mode; /* set_mode.c: payload[0] = mode, > 1 → InvalidPayload */
  f.len = 1;
  return f;
}

static void put_u16le(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v & 0xFF);
  p[1] = (uint8_t)(v >> 8);
}

autd3_err_t autd3_frame_xor_hash(autd3_frame_t *out, uint16_t sleep_ms, const uint8_t *data, size_t len) {
  if (out == NULL || (data == NULL && len != 0))
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_xor_hash: NULL %s", out == NULL ? "out" : "data");
  if (len > AUTD3_XOR_HASH_MAX_DATA)
    return autd3_set_error(AUTD3_E_PAYLOAD, "XorHash data_len %zu exceeds %d bytes", len, AUTD3_XOR_HASH_MAX_DATA);
  *out = autd3_frame_simple(AUTD3_CMD_XOR_HASH);
  /* xor_hash_payload_t: u16 sleep_ms @0, u16 data_len @2, data @4 (little-endian). */
  put_u16le(out->payload, sleep_ms);
  put_u16le(out->payload + 2, (uint16_t)len);
  if (len) memcpy(out->payload + 4, data, len);
  out->len = (uint16_t)(4 + len);
  return AUTD3_OK;
}

autd3_err_t autd3_frame_xor_hash_bench(autd3_frame_t *out, uint16_t sleep_ms, size_t len) {
  if (out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_xor_hash_bench: NULL out");
  if (len > AUTD3_XOR_HASH_MAX_DATA)
    return autd3_set_error(AUTD3_E_PAYLOAD, "XorHash data_len %zu exceeds %d bytes", len, AUTD3_XOR_HASH_MAX_DATA);
  /* perftest: len bytes of 0xA5, the last one the XOR of the others, so the
   * device's XOR check yields 0 and it answers data 0. */
  uint8_t data[AUTD3_XOR_HASH_MAX_DATA];
  uint8_t x = 0;
  for (size_t i = 0; i + 1 < len; i++) {
    data[i] = 0xA5;
    x ^= 0xA5;
  }
  if (len) data[len - 1] = x;
  return autd3_frame_xor_hash(out, sleep_ms, data, len);
}

void autd3_tx_encode(uint8_t tx[AUTD3_TX_FRAME_BYTES], uint8_t seq, uint8_t cmd, const uint8_t *payload, size_t len) {
  tx[0] = seq;
  tx[1] = cmd;
  if (len > AUTD3_PAYLOAD_BYTES) len = AUTD3_PAYLOAD_BYTES;
  if (payload == NULL) len = 0;
  if (len) memcpy(tx + 2, payload, len);
  memset(tx + 2 + len, 0, AUTD3_PAYLOAD_BYTES - len);
}
