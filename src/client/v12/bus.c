/*
 * The legacy client's bus thread: drives devices running firmware v10–v12
 * (shinolab/autd3-firmware v12.1.0) with the msg_id protocol, on the same
 * request slots, hand-off ring and handles as the new-generation protocol
 * (the core: client_internal.h), so send / wait / poll / detach / close
 * behave the same. docs/legacy.md.
 *
 * Follows the previous SDK generation's sender (crate autd3-driver 38.1.0
 * src/firmware/transmission: Sender::send_impl / wait_msg_processed; crate
 * autd3 38.1.0 controller open/close), except where noted:
 *  - one frame at a time (stop-and-wait): msg_id += 1 (wrapping 15 → 0), the
 *    frame is written every cycle until every device's ack carries its msg_id
 *    (or error 2, invalid msg_id) or 200 ms pass. No pipelining although the
 *    firmware's ring holds 15 frames: the ack names only the *last* executed
 *    msg_id, so a frame a device never took (a lost or stale cycle while the
 *    host had moved on) would be hidden by the acks of the frames after it —
 *    silently dropped. Stop-and-wait repeats the frame until it is confirmed.
 *  - before the first frame the bus thread writes msg_id 0 with a Nop until
 *    the devices ack it, so a device still holding msg_id 1 from an earlier
 *    session cannot make the first frame look acked (the reference sends a
 *    Nop first for the same reason).
 *  - no retries: a frame not acked in time fails with AUTD3_E_TIMEOUT and
 *    outcome UNKNOWN (it may still be in the device's ring), as the
 *    reference's ConfirmResponseFailed; the caller decides.
 * Bus-thread rules as seqcmd/bus.c: no allocation, no lock, no printf in the
 * loop. The core (bus_thread.c) starts the thread, applies its RT policy and
 * fails what is still queued when the loop ends.
 */
#include <string.h>

#include "client/v12/v12.h"

static void encode_slot(struct autd3_client *c, uint8_t msg_id, const struct autd3__slot *r) {
  for (size_t d = 0; d < c->num_devices; d++) {
    size_t i = r->broadcast ? 0 : d;
    autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, msg_id, r->cmds[i], r->payload + i * AUTD3_PAYLOAD_BYTES,
                    AUTD3_PAYLOAD_BYTES);
  }
}

static void fail_dev(struct autd3__slot *r, size_t d, uint8_t outcome, autd3_err_t code, uint8_t why, uint8_t ack) {
  r->outcome[d] = outcome;
  autd3__slot_blame(r, d, code, why, ack); /* even when EXECUTED: a v12 error nibble fails the request */
}

/* The link's evidence of device resets (autd3_link_report_device_reset), one
 * atomic load per cycle when nothing happened (as seqcmd/bus.c). A rebooted v12
 * device lost Clear/Synchronize and everything sent before: it is counted
 * (autd3_client_device_resets) and the frame in flight, which the fresh
 * firmware may or may not take from the repeated image, ends UNKNOWN for it.
 * The legacy client does not re-establish the device (the reference does
 * not either): the application re-sends its state. */
static void check_link_evidence(struct autd3_client *c) {
  autd3__v12_t *s = c->proto_state;
  uint8_t reset[AUTD3_MAX_DEVICES];
  size_t k = autd3__bus_reset_devices(c, reset);
  for (size_t i = 0; i < k; i++) {
    size_t d = reset[i];
    atomic_fetch_add(&c->ds_resets[d], 1);
    AUTD3__STAT_INC(c, st_device_resets);
    if (s->cur != NULL && !s->acked[d]) {
      s->acked[d] = true;
      s->left--;
      fail_dev(s->cur, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, AUTD3__WHY_V12_RESET, 0);
      AUTD3__STAT_INC(c, st_unknown);
    }
  }
}

/* Before the first frame: write msg_id 0 / Nop until every device acks
 * msg_id 0 (bounded by 200 ms of cycles); the link's reset evidence so far
 * is settled by it (as seqcmd/bus.c start_numbering). */
autd3_err_t autd3__v12_handshake(struct autd3_client *c) {
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0};
  for (size_t d = 0; d < c->num_devices; d++) autd3_v12_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, 0, 0, nop, 2);
  uint64_t deadline = autd3__now_ns() + AUTD3__V12_ACK_TIMEOUT_NS;
  for (;;) {
    bool valid = false;
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
    bool all = valid;
    for (size_t d = 0; all && d < c->num_devices; d++) all = (c->bus.rx[d * AUTD3_RX_FRAME_BYTES + 1] & 0x0F) == 0;
    if (all || autd3__now_ns() >= deadline) break; /* a silent device fails the open's first frame */
  }
  autd3__bus_evidence_baseline(c);
  return AUTD3_OK;
}

/* Take the next frame from the ring, if any: the next msg_id, written every cycle until acked. */
static void take_next(struct autd3_client *c) {
  autd3__v12_t *s = c->proto_state;
  s->cur = autd3__ring_peek(c);
  if (s->cur == NULL) return;
  autd3__ring_pop(c);
  s->msg_id = s->msg_id >= AUTD3_V12_MSG_ID_MAX ? 0 : (uint8_t)(s->msg_id + 1);
  encode_slot(c, s->msg_id, s->cur);
  memset(s->acked, 0, c->num_devices);
  s->left = (uint32_t)c->num_devices;
  s->deadline = autd3__now_ns() + AUTD3__V12_ACK_TIMEOUT_NS;
  AUTD3__STAT_INC(c, st_sent);
}

/* One valid-or-not cycle's acks for the frame in flight; completes it once
 * every device has answered or the deadline has passed. */
static void route_acks(struct autd3_client *c, bool valid) {
  autd3__v12_t *s = c->proto_state;
  const size_t n = c->num_devices;
  struct autd3__slot *cur = s->cur;
  /* Per device (docs/reliability.md "A fault costs only its device"): a
   * device whose inputs the link vouches for acks on its own, whatever the
   * others' inputs are; one whose inputs are stale is written again. */
  for (size_t d = 0; d < n; d++) {
    if (s->acked[d] || !(valid || c->bus.dev_valid[d])) continue;
    uint8_t ack = c->bus.rx[d * AUTD3_RX_FRAME_BYTES + 1];
    uint8_t e = (uint8_t)(ack >> 4);
    if ((ack & 0x0F) != s->msg_id && e != AUTD3_V12_ERR_INVALID_MSG_ID) continue;
    s->acked[d] = true;
    s->left--;
    cur->data[d] = c->bus.rx[d * AUTD3_RX_FRAME_BYTES];
    cur->outcome[d] = AUTD3_OUTCOME_EXECUTED;
    /* It ran, and failed: the request fails with the device's error. */
    if (e != 0) fail_dev(cur, d, AUTD3_OUTCOME_EXECUTED, AUTD3_E_DEVICE, AUTD3__WHY_V12_ERR, ack);
  }
  if (!valid) AUTD3__STAT_INC(c, st_retransmits); /* the frame is simply written again */
  if (s->left > 0 && autd3__now_ns() >= s->deadline) {
    for (size_t d = 0; d < n; d++)
      if (!s->acked[d]) {
        fail_dev(cur, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_TIMEOUT, AUTD3__WHY_V12_TIMEOUT, s->msg_id);
        AUTD3__STAT_INC(c, st_unknown);
        AUTD3__STAT_INC(c, st_timeouts);
      }
    s->left = 0;
  }
  if (s->left == 0) {
    autd3__client_complete(c, cur, cur->err_dev < 0 ? AUTD3_OK : cur->err_code);
    s->cur = NULL;
  }
}

autd3_err_t autd3__v12_run(struct autd3_client *c) {
  autd3__v12_t *s = c->proto_state;
  /* ---- the cycle loop: no allocation, no lock, no printf from here on ---- */
  while (!atomic_load_explicit(&c->closing, memory_order_acquire)) {
    autd3_err_t err = autd3_link_wait_next_cycle(c->link);
    if (err == AUTD3_OK && s->cur == NULL) take_next(c);
    bool valid = false;
    if (err == AUTD3_OK) err = autd3_link_cycle_devices(c->link, c->bus.tx, c->bus.rx, &valid, c->bus.dev_valid);
    AUTD3__STAT_INC(c, st_cycles);
    if (err != AUTD3_OK) return AUTD3_E_LINK; /* the core keeps the link's message */
    check_link_evidence(c);
    if (s->cur != NULL) route_acks(c, valid);
  }
  return AUTD3_E_CLOSED;
}

/* The loop has ended: the frame in flight was delivered, so UNKNOWN where not
 * acked (the core fails the queued ones: NOT_EXECUTED). */
void autd3__v12_stop(struct autd3_client *c, autd3_err_t why, uint8_t w) {
  autd3__v12_t *s = c->proto_state;
  if (s->cur == NULL) return;
  for (size_t d = 0; d < c->num_devices; d++)
    if (!s->acked[d]) fail_dev(s->cur, d, AUTD3_OUTCOME_UNKNOWN, why, w, 0);
  autd3__client_complete(c, s->cur, s->cur->err_dev < 0 ? AUTD3_OK : why);
  s->cur = NULL;
}
