/*
 * The firmware v12 (msg_id) wire protocol: error table and frame encoders.
 * Layout: include/autd3/proto.h (crate autd3-driver 38.1.0 src/firmware,
 * shinolab/autd3-firmware v12.1.0).
 */
#include <string.h>

#include "autd3/link_driver.h" /* autd3_set_error */
#include "autd3/proto.h"

const char *autd3_v12_err_message(uint8_t err) {
  switch (err) {
#define AUTD3_V12_ERR_MSG_(name, val, msg) \
  case (val):                              \
    return msg;
    AUTD3_V12_ERR_MAP(AUTD3_V12_ERR_MSG_)
#undef AUTD3_V12_ERR_MSG_
    default:
      return "Unknown firmware error";
  }
}

autd3_err_t autd3_v12_frame(autd3_frame_t *out, const uint8_t *op1, size_t len1, const uint8_t *op2, size_t len2) {
  if (out == NULL || op1 == NULL || len1 == 0 || (op2 == NULL && len2 != 0))
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_v12_frame: %s", out == NULL ? "NULL out" : "operation 1 missing");
  /* Operations are 2-byte aligned (the reference packs each op to an even size). */
  size_t off2 = (len1 + 1u) & ~(size_t)1u;
  size_t total = len2 ? off2 + len2 : len1;
  if (total > AUTD3_V12_PAYLOAD_BYTES)
    return autd3_set_error(AUTD3_E_PAYLOAD, "v12 operations need %zu bytes, a frame holds %d", total,
                           AUTD3_V12_PAYLOAD_BYTES);
  memset(out, 0, sizeof *out);
  out->cmd = 0; /* the v12 header's reserved byte */
  uint16_t s2 = len2 ? (uint16_t)off2 : 0;
  out->payload[0] = (uint8_t)(s2 & 0xFF);
  out->payload[1] = (uint8_t)(s2 >> 8);
  memcpy(out->payload + 2, op1, len1);
  if (len2) memcpy(out->payload + 2 + off2, op2, len2);
  out->len = (uint16_t)(2 + total);
  return AUTD3_OK;
}

void autd3_v12_tx_encode(uint8_t tx[AUTD3_TX_FRAME_BYTES], uint8_t msg_id, uint16_t slot_2_offset, const uint8_t *ops,
                         size_t len) {
  if (len > AUTD3_V12_PAYLOAD_BYTES) len = AUTD3_V12_PAYLOAD_BYTES;
  memset(tx, 0, AUTD3_TX_FRAME_BYTES);
  tx[0] = msg_id;
  tx[1] = 0;
  tx[2] = (uint8_t)(slot_2_offset & 0xFF);
  tx[3] = (uint8_t)(slot_2_offset >> 8);
  if (len) memcpy(tx + AUTD3_V12_HEADER_BYTES, ops, len);
}
