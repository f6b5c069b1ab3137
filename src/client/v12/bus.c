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

/* ---- user side: frames through the normal send path ---------------------------------------- */

static autd3_err_t send_ops(struct autd3_client *c, const uint8_t *op1, size_t len1, const uint8_t *op2, size_t len2,
                            uint64_t deadline_ns, autd3_response_t *resp) {
  autd3_frame_t f;
  autd3_err_t err = autd3_v12_frame(&f, op1, len1, op2, len2);
  if (err != AUTD3_OK) return err;
  autd3_request_t *req = NULL;
  err = deadline_ns ? autd3__client_submit_until(c, &f, deadline_ns, &req) : autd3_client_send(c, &f, &req);
  if (err != AUTD3_OK) return err;
  return autd3_request_wait(req, resp);
}

/* The firmware-info reads (info.rs): CPU major, CPU minor, FPGA major, FPGA
 * minor, FPGA functions, then INFO_CLEAR, which gives the data byte back. */
static autd3_err_t read_info(struct autd3_client *c, uint8_t raw[5][AUTD3_MAX_DEVICES]) {
  static const uint8_t types[5] = {AUTD3_V12_INFO_CPU_MAJOR, AUTD3_V12_INFO_CPU_MINOR, AUTD3_V12_INFO_FPGA_MAJOR,
                                   AUTD3_V12_INFO_FPGA_MINOR, AUTD3_V12_INFO_FPGA_FUNCTIONS};
  autd3_response_t resp;
  autd3_err_t first = AUTD3_OK;
  autd3__error_saved_t msg;
  for (int i = 0; i < 5; i++) {
    uint8_t op[2] = {AUTD3_V12_TAG_FIRM_INFO, types[i]};
    autd3_err_t err = send_ops(c, op, 2, NULL, 0, 0, &resp);
    if (err != AUTD3_OK && first == AUTD3_OK) {
      first = err;
      autd3__error_save(&msg);
    }
    for (size_t d = 0; d < c->num_devices; d++) raw[i][d] = resp.data[d];
  }
  uint8_t op[2] = {AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CLEAR};
  autd3_err_t err = send_ops(c, op, 2, NULL, 0, 0, &resp);
  if (first != AUTD3_OK) {
    autd3__error_restore(&msg, first); /* the first failure, not the INFO_CLEAR's */
    return autd3__error_context(first, "read firmware info failed");
  }
  return err;
}

/* crate autd3-driver 38.1.0 src/firmware/version.rs version_map: the major
 * byte names the release (0xA4..0xA5 = v12.0 / v12.1, 0xA3 = v11, 0xA2 = v10,
 * 0xA0..0xA1 = v9.x), the minor byte is the patch. Others: 0.0.0. */
static void decode(uint8_t major, uint8_t minor, uint8_t *ma, uint8_t *mi, uint8_t *pa) {
  *ma = *mi = *pa = 0;
  if (major >= 0xA4 && major <= 0xA5) *ma = 12, *mi = (uint8_t)(major - 0xA4);
  else if (major == 0xA3) *ma = 11;
  else if (major == 0xA2) *ma = 10;
  else if (major >= 0xA0 && major <= 0xA1) *ma = 9, *mi = (uint8_t)(major - 0xA0);
  else return;
  *pa = minor;
}

autd3_err_t autd3__legacy_read_firmware_version(struct autd3_client *c, autd3_fw_version_t *out) {
  uint8_t raw[5][AUTD3_MAX_DEVICES];
  autd3_err_t err = read_info(c, raw);
  if (err != AUTD3_OK) return err;
  for (size_t d = 0; d < c->num_devices; d++) {
    decode(raw[0][d], raw[1][d], &out[d].cpu_major, &out[d].cpu_minor, &out[d].cpu_patch);
    decode(raw[2][d], raw[3][d], &out[d].fpga_major, &out[d].fpga_minor, &out[d].fpga_patch);
  }
  return AUTD3_OK;
}

/* READS_FPGA_STATE on, then a Nop: its data byte is 0x80 | state (emulator.rs
 * read_fpga_state). Left on, as the reference's ReadsFPGAState datagram does. */
autd3_err_t autd3__legacy_read_fpga_state(struct autd3_client *c, uint8_t *out) {
  uint8_t on[2] = {AUTD3_V12_TAG_READS_FPGA_STATE, 1}, nop[2] = {AUTD3_V12_TAG_NOP, 0};
  autd3_response_t resp;
  autd3_err_t err = send_ops(c, on, 2, NULL, 0, 0, &resp);
  if (err == AUTD3_OK) err = send_ops(c, nop, 2, NULL, 0, 0, &resp);
  if (err != AUTD3_OK) return err;
  for (size_t d = 0; d < c->num_devices; d++) out[d] = resp.data[d];
  return AUTD3_OK;
}

/* crate autd3 38.1.0 controller open: Nop, then (Clear, Synchronize) in one
 * frame; if that fails and every CPU major byte read is below 0xA5, the
 * firmware is unsupported. Then the optional check for v12.1.0 exactly. */
autd3_err_t autd3__legacy_open_sequence(struct autd3_client *c) {
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0}, clear[2] = {AUTD3_V12_TAG_CLEAR, 0}, sync[2] = {AUTD3_V12_TAG_SYNC, 0};
  autd3_err_t err = send_ops(c, nop, 2, NULL, 0, 0, NULL);
  if (err != AUTD3_OK) return err;
  err = send_ops(c, clear, 2, sync, 2, 0, NULL);
  uint8_t raw[5][AUTD3_MAX_DEVICES];
  if (err != AUTD3_OK) {
    autd3__error_saved_t msg; /* the reads below set their own */
    autd3__error_save(&msg);
    if (read_info(c, raw) == AUTD3_OK) {
      bool all_old = true;
      for (size_t d = 0; d < c->num_devices; d++) all_old = all_old && raw[0][d] < AUTD3_V12_MAJOR_BYTE_V12_1;
      if (all_old)
        return autd3_set_error(AUTD3_E_VERSION, "Clear/Synchronize failed (%s) and no device runs firmware v12.1 "
                                                "(device 0 CPU major byte 0x%02x): unsupported firmware", msg.msg, raw[0][0]);
    }
    autd3__error_restore(&msg, err);
    return autd3__error_context(err, "Clear/Synchronize");
  }
  if (!c->cfg.require_supported_firmware) return AUTD3_OK;
  err = read_info(c, raw);
  if (err != AUTD3_OK) return err;
  for (size_t d = 0; d < c->num_devices; d++)
    if (raw[0][d] != AUTD3_V12_MAJOR_BYTE_V12_1 || raw[2][d] != AUTD3_V12_MAJOR_BYTE_V12_1)
      return autd3_set_error(AUTD3_E_VERSION, "device %zu runs CPU major byte 0x%02x / FPGA 0x%02x, not firmware v12.1 "
                                              "(0x%02x): require_supported_firmware",
                             d, raw[0][d], raw[2][d], AUTD3_V12_MAJOR_BYTE_V12_1);
  return AUTD3_OK;
}

/* Close: a Clear, which re-initialises the FPGA and zeroes the drive buffers
 * (clear.rs), so every device ends silent. Bounded by close_timeout_ms. */
autd3_err_t autd3__legacy_silence(struct autd3_client *c) {
  uint64_t deadline_ns = autd3__now_ns() + (uint64_t)c->cfg.close_timeout_ms * 1000000ull;
  uint8_t clear[2] = {AUTD3_V12_TAG_CLEAR, 0};
  autd3_response_t resp;
  autd3_err_t err = send_ops(c, clear, 2, NULL, 0, deadline_ns, &resp);
  if (err != AUTD3_OK) {
    return autd3__error_context(err, "close: the silencing Clear failed (devices may still be emitting)");
  }
  return AUTD3_OK;
}

/* ---- AUTO: which generation do the devices speak? ------------------------------------------- */

/* Frames both generations read as harmless: a v12 Nop with msg_id m is, to a
 * new-generation device, (seq m, cmd 0x00 = Reset). After msg_id 0 then 2, a
 * v12 device answers ack byte 0x02 (msg_id 2, no error); a new-generation one
 * has just been Reset: (ack 0xFF, data 0x00), i.e. byte 1 = 0x00. Neither
 * answer can be mistaken for the other. */
autd3_err_t autd3__legacy_probe(autd3_link_t *link, size_t n, uint32_t *out) {
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
