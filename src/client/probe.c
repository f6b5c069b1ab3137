/*
 * protocol AUTO: which generation do the devices speak? Run on the opener's
 * thread before any bus thread exists, with v12 Nop frames that both
 * generations read as harmless (docs/legacy.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

/* Frames both generations read as harmless: a v12 Nop with msg_id m is, to a
 * new-generation device, (seq m, cmd 0x00 = Reset). After msg_id 0 then 2, a
 * v12 device answers ack byte 0x02 (msg_id 2, no error); a new-generation one
 * has just been Reset: (ack 0xFF, data 0x00), i.e. byte 1 = 0x00. Neither
 * answer can be mistaken for the other. */
autd3_err_t autd3__protocol_probe(autd3_link_t *link, size_t n, uint32_t *out) {
  uint8_t rx[AUTD3_MAX_DEVICES * AUTD3_RX_FRAME_BYTES];
  uint8_t *tx = calloc(n, AUTD3_TX_FRAME_BYTES); /* the opener's thread: allocation is fine */
  if (tx == NULL) return autd3_set_error(AUTD3_E_NOMEM, "protocol auto: out of memory");
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0};
  uint8_t kind[AUTD3_MAX_DEVICES]; /* 0 unknown, 1 new, 2 v12 */
  memset(kind, 0, sizeof kind);
  for (int phase = 0; phase < 2; phase++) {
    uint8_t id = phase == 0 ? 0 : 2;
    for (size_t d = 0; d < n; d++) autd3_v12_tx_encode(tx + d * AUTD3_TX_FRAME_BYTES, id, 0, nop, 2);
    uint64_t deadline = autd3__now_ns() + AUTD3__V12_ACK_TIMEOUT_NS;
    for (;;) {
      bool valid = false;
      autd3_err_t err = autd3_link_cycle(link, tx, rx, &valid);
      if (err != AUTD3_OK) {
        free(tx);
        return err;
      }
      size_t decided = 0;
      for (size_t d = 0; valid && d < n; d++) {
        const uint8_t *r = rx + d * AUTD3_RX_FRAME_BYTES;
        if (phase == 0) {
          decided += (r[1] & 0x0F) == 0 || r[0] == 0xFF;
        } else {
          if (r[1] == 0x02) kind[d] = 2;
          else if (r[0] == 0xFF && r[1] == 0x00) kind[d] = 1;
          decided += kind[d] != 0;
        }
      }
      if (decided == n || autd3__now_ns() >= deadline) break;
    }
  }
  free(tx);
  char v12[160] = "", nw[160] = "", unk[160] = "";
  for (size_t d = 0; d < n; d++) {
    char *l = kind[d] == 2 ? v12 : kind[d] == 1 ? nw : unk;
    size_t len = strlen(l);
    if (len + 8 < 160) snprintf(l + len, 160 - len, "%s%zu", len ? "," : "", d);
  }
  if (unk[0])
    return autd3_set_error(AUTD3_E_TIMEOUT, "protocol auto: device(s) %s answered neither as firmware v12 nor as the new "
                                            "generation within 200 ms", unk);
  if (v12[0] && nw[0])
    return autd3_set_error(AUTD3_E_VERSION, "protocol auto: mixed chain refused: device(s) %s run firmware v12, device(s) "
                                            "%s the new generation; one client speaks one protocol", v12, nw);
  *out = v12[0] ? AUTD3_PROTOCOL_V12 : AUTD3_PROTOCOL_NEW;
  return AUTD3_OK;
}
