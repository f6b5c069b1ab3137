/*
 * The legacy client: drives devices running firmware v10–v12 (shinolab/
 * autd3-firmware v12.1.0) with the msg_id protocol, on the same request
 * slots, hand-off ring and handles as the new-generation client (client.c),
 * so send / wait / poll / detach / close behave the same. docs/legacy.md.
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
 * Bus-thread rules as bus.c: no allocation, no lock, no printf in the loop.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "core/error_context.h"

#define STAT_INC(c, f) atomic_fetch_add_explicit(&(c)->f, 1, memory_order_relaxed)

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

static void keep_message(char *dst, size_t cap, const char *prefix) {
  snprintf(dst, cap, "%s%s", prefix, autd3_last_error());
}

/* The link's evidence of device resets (autd3_link_report_device_reset), one
 * atomic load per cycle when nothing happened (as bus.c). A rebooted v12
 * device lost Clear/Synchronize and everything sent before: it is counted
 * (autd3_client_device_resets) and the frame in flight, which the fresh
 * firmware may or may not take from the repeated image, ends UNKNOWN for it.
 * The legacy client does not re-establish the device (the reference does
 * not either): the application re-sends its state. */
static void check_link_evidence(struct autd3_client *c, struct autd3__slot *cur, bool *acked, uint32_t *left) {
  if (!autd3__bus_link_evidence_moved(c)) return;
  for (size_t d = 0; d < c->num_devices; d++) {
    if (!autd3__bus_link_reset_seen(c, d)) continue;
    atomic_fetch_add(&c->ds_resets[d], 1);
    STAT_INC(c, st_device_resets);
    if (cur != NULL && !acked[d]) {
      acked[d] = true;
      (*left)--;
      fail_dev(cur, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, AUTD3__WHY_V12_RESET, 0);
      STAT_INC(c, st_unknown);
    }
  }
}

/* Write msg_id 0 / Nop until every device acks msg_id 0 (bounded by 200 ms of cycles). */
static autd3_err_t settle(struct autd3_client *c) {
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0};
  for (size_t d = 0; d < c->num_devices; d++) autd3_v12_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, 0, 0, nop, 2);
  uint64_t deadline = autd3__now_ns() + AUTD3__V12_ACK_TIMEOUT_NS;
  for (;;) {
    bool valid = false;
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
    bool all = valid;
    for (size_t d = 0; all && d < c->num_devices; d++) all = (c->bus.rx[d * AUTD3_RX_FRAME_BYTES + 1] & 0x0F) == 0;
    if (all || autd3__now_ns() >= deadline) return AUTD3_OK; /* a silent device fails the open's first frame */
  }
}

void *autd3__legacy_bus_main(void *arg) {
  struct autd3_client *c = arg;
  autd3__bus_t *b = &c->bus;
  const size_t n = c->num_devices;
  autd3_err_t err = AUTD3_OK;
  if (c->cfg.rt_priority > 0 || c->cfg.rt_cpu >= 0) {
    err = autd3__thread_set_rt(c->cfg.rt_priority, c->cfg.rt_cpu);
    if (err != AUTD3_OK) keep_message(c->hs_msg, sizeof c->hs_msg, "client bus thread: rt_priority/rt_cpu: ");
  }
  if (err == AUTD3_OK) {
    err = settle(c);
    if (err != AUTD3_OK) {
      keep_message(c->hs_msg, sizeof c->hs_msg, "legacy client: link cycle failed: ");
      err = AUTD3_E_LINK;
    }
  }
  /* Reset evidence so far is settled by the open (bus.c start_numbering). */
  b->link_resets_any = atomic_load_explicit(&c->link->device_resets_any, memory_order_acquire);
  for (size_t d = 0; d < n; d++) b->dev[d].link_resets = atomic_load_explicit(&c->link->device_resets[d], memory_order_acquire);
  c->hs_err = err;
  autd3__sem_post(&c->hs_done);
  if (err != AUTD3_OK) return NULL;

  /* ---- the cycle loop: no allocation, no lock, no printf from here on ---- */
  uint8_t msg_id = 0;
  struct autd3__slot *cur = NULL;
  uint64_t deadline = 0;
  uint32_t left = 0; /* devices that have not acked cur */
  bool acked[AUTD3_MAX_DEVICES];
  autd3_err_t why = AUTD3_E_CLOSED;
  while (!atomic_load_explicit(&c->closing, memory_order_acquire)) {
    err = autd3_link_wait_next_cycle(c->link);
    if (err == AUTD3_OK && cur == NULL) {
      cur = autd3__ring_peek(c);
      if (cur != NULL) {
        autd3__ring_pop(c);
        msg_id = msg_id >= AUTD3_V12_MSG_ID_MAX ? 0 : (uint8_t)(msg_id + 1);
        encode_slot(c, msg_id, cur);
        memset(acked, 0, n);
        left = (uint32_t)n;
        deadline = autd3__now_ns() + AUTD3__V12_ACK_TIMEOUT_NS;
        STAT_INC(c, st_sent);
      }
    }
    bool valid = false;
    if (err == AUTD3_OK) err = autd3_link_cycle_devices(c->link, b->tx, b->rx, &valid, b->dev_valid);
    STAT_INC(c, st_cycles);
    if (err != AUTD3_OK) {
      keep_message(c->link_msg, sizeof c->link_msg, "");
      why = AUTD3_E_LINK;
      break;
    }
    check_link_evidence(c, cur, acked, &left);
    if (cur == NULL) continue;
    /* Per device (docs/reliability.md "A fault costs only its device"): a
     * device whose inputs the link vouches for acks on its own, whatever the
     * others' inputs are; one whose inputs are stale is written again. */
    for (size_t d = 0; d < n; d++) {
      if (acked[d] || !(valid || b->dev_valid[d])) continue;
      uint8_t ack = b->rx[d * AUTD3_RX_FRAME_BYTES + 1];
      uint8_t e = (uint8_t)(ack >> 4);
      if ((ack & 0x0F) != msg_id && e != AUTD3_V12_ERR_INVALID_MSG_ID) continue;
      acked[d] = true;
      left--;
      cur->data[d] = b->rx[d * AUTD3_RX_FRAME_BYTES];
      cur->outcome[d] = AUTD3_OUTCOME_EXECUTED;
      /* It ran, and failed: the request fails with the device's error. */
      if (e != 0) fail_dev(cur, d, AUTD3_OUTCOME_EXECUTED, AUTD3_E_DEVICE, AUTD3__WHY_V12_ERR, ack);
    }
    if (!valid) STAT_INC(c, st_retransmits); /* the frame is simply written again */
    if (left > 0 && autd3__now_ns() >= deadline) {
      for (size_t d = 0; d < n; d++)
        if (!acked[d]) {
          fail_dev(cur, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_TIMEOUT, AUTD3__WHY_V12_TIMEOUT, msg_id);
          STAT_INC(c, st_unknown);
          STAT_INC(c, st_timeouts);
        }
      left = 0;
    }
    if (left == 0) {
      autd3__client_complete(c, cur, cur->err_dev < 0 ? AUTD3_OK : cur->err_code);
      cur = NULL;
    }
  }
  atomic_store_explicit(&c->st_cpu_ns, autd3__thread_cpu_ns(), memory_order_relaxed);

  /* Teardown (as bus.c): the frame in flight was delivered, so UNKNOWN where
   * not acked; queued frames were never written: NOT_EXECUTED. */
  c->dead_reason = why;
  atomic_store(&c->dead, true);
  uint8_t w = why == AUTD3_E_LINK ? AUTD3__WHY_LINK : AUTD3__WHY_CLOSED;
  if (cur != NULL) {
    for (size_t d = 0; d < n; d++)
      if (!acked[d]) fail_dev(cur, d, AUTD3_OUTCOME_UNKNOWN, why, w, 0);
    autd3__client_complete(c, cur, cur->err_dev < 0 ? AUTD3_OK : why);
  }
  autd3__ring_close(c);
  for (struct autd3__slot *r; (r = autd3__ring_peek(c)) != NULL;) {
    autd3__ring_pop(c);
    for (size_t d = 0; d < n; d++) fail_dev(r, d, AUTD3_OUTCOME_NOT_EXECUTED, why, w, 0);
    autd3__client_complete(c, r, why);
  }
  autd3__sem_post(&c->free_sem); /* the "baton": see client.c slot_acquire() */
  return NULL;
}
