/*
 * The seq/cmd protocol's bus thread: the handshake, then one iteration per bus
 * cycle (stage → autd3_link_cycle → route acks / age the head / count stale
 * runs). The core (bus_thread.c) starts the thread, applies its RT policy and
 * fails what is still queued when the loop ends.
 *
 * Follows shinolab/autd3-sdk crates/autd3-rs/src/client/rt.rs (handshake,
 * staging, cumulative acks, resync) except where exactly-once needs more
 * (docs/reliability.md "Exactly once"): the seq state is kept per device, a
 * device reboot is an event and never an ack, and recovery (resync, giving
 * up, re-establishing) touches only the devices that need it, so no device
 * ever runs a frame twice. Hot path: after open nothing here allocates,
 * prints or takes a lock; every loop is bounded by the device count (≤ 128)
 * or the in-flight window (≤ 127); the only place it blocks is inside
 * autd3_link_cycle(), which paces the loop to the bus cycle.
 */
#include "client/seqcmd/seqcmd.h"

static autd3__pending_t *pend_at(autd3__seqcmd_t *b, uint32_t i) { return &b->pend[(b->pend_head + i) % AUTD3__RING_CAP]; }

static void stage_reset(struct autd3_client *c, uint8_t seq) {
  for (size_t d = 0; d < c->num_devices; d++)
    autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, seq, AUTD3_CMD_RESET, NULL, 0);
}

/* Every device numbers the first data frame `seq`; the link's reset
 * evidence so far is settled by the handshake's own Resets. */
static void start_numbering(struct autd3_client *c, uint8_t seq) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__bus_evidence_baseline(c);
  for (size_t d = 0; d < c->num_devices; d++) {
    autd3__dev_t *v = &b->dev[d];
    v->base_seq = seq;
    v->last_ack = (uint8_t)(seq - 1);
    v->base_g = v->done_g = v->ack_g = b->next_g;
  }
}

/* ---- handshake (rt.rs handshake / negotiate_mode) ------------------------------------------ */

/* SetMode with the configured mode: FIFO unless low latency is asked. Always
 * sent, as the reference client since 0.6.1 (before, the mode was left at
 * whatever the firmware had, e.g. low latency from an earlier session). */
static uint8_t fw_mode(const struct autd3_client *c) { return c->cfg.low_latency ? AUTD3_MODE_LOW_LATENCY : AUTD3_MODE_FIFO; }

/* How many cycles the handshake holds a frame that must be taken before the
 * next one (a Reset, SetMode): a device takes its output image at SYNC0
 * (docs/device-model.md "Before the first SYNC0"), and a frame written
 * before the first SYNC0 edge is replaced by the next one before the
 * firmware ever sees it. Holding the frame until the device shows it ran it
 * means it is never lost that way; the bound keeps open from hanging. */
static uint32_t hold_bound(const struct autd3_client *c) {
  uint32_t b = autd3__seqcmd(c)->stale_limit;
  return b > 2 ? b : 2;
}

static autd3_err_t handshake(struct autd3_client *c) {
  bool valid = false;
  /* Reset with seq 0 then seq 1: two different (seq, cmd) pairs, so at least
   * one passes the device's duplicate filter even if the last frame it saw
   * was (0, Reset) (firmware/cpu/src/app.c recv_ethercat in shinolab/autd3-sdk;
   * docs/device-model.md). Crate autd3-rs 0.9.0 sends (0, Reset) reset_resend_cycles times. */
  for (uint8_t seq = 0; seq < 2; seq++) {
    stage_reset(c, seq);
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
  }
  /* Hold the Reset until every device answers 0xFF (what a Reset leaves):
   * a device not fresh from boot that has not yet taken it (no SYNC0 yet)
   * would ignore the SetMode seq 0 that follows. A device at boot answers
   * 0xFF already, so this costs nothing then. */
  for (uint32_t i = 0; i < hold_bound(c); i++) {
    bool all = valid;
    for (size_t d = 0; all && d < c->num_devices; d++) all = c->bus.rx[d * AUTD3_RX_FRAME_BYTES] == 0xFF;
    if (all) break;
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
  }
  start_numbering(c, 0);

  /* SetMode with seq 0 until every device acks seq 0, bounded; then the
   * first data frame is seq 1. A device that never acks keeps numbering from
   * 0, as in the reference; numbering is per device, so the devices that did
   * ack still start at 1 (a shared choice would feed them a seq 0 they have
   * passed). */
  autd3_frame_t f = autd3_frame_set_mode((autd3_fw_mode_t)fw_mode(c));
  for (size_t d = 0; d < c->num_devices; d++)
    autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, 0, f.cmd, f.payload, f.len);
  size_t acked = 0;
  for (uint32_t i = 0; i < hold_bound(c) && acked < c->num_devices; i++) {
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
    for (size_t d = 0; valid && d < c->num_devices; d++) {
      autd3__dev_t *v = &autd3__seqcmd(c)->dev[d];
      if (v->base_seq == 0 && c->bus.rx[d * AUTD3_RX_FRAME_BYTES] == 0) {
        v->base_seq = 1;
        v->last_ack = 0;
        acked++;
      }
    }
  }
  return AUTD3_OK;
}

/* ---- per-device bookkeeping ------------------------------------------------------------- */

static uint8_t seq_of(const autd3__dev_t *d, uint32_t g) { return (uint8_t)(d->base_seq + (uint8_t)(g - d->base_g)); }

static void set_dev_state(struct autd3_client *c, size_t d, uint8_t st) {
  autd3__seqcmd(c)->dev[d].state = st;
  atomic_store(&c->ds_state[d], st);
}

/* Record what device d did with the frame in slot r. A non-executed outcome
 * makes the request fail; the lowest-index such device names the error. */
static void resolve(struct autd3_client *c, struct autd3__slot *r, size_t d, uint8_t outcome, autd3_err_t code, uint8_t why,
                    uint8_t ack) {
  r->outcome[d] = outcome;
  if (outcome == AUTD3_OUTCOME_EXECUTED) return;
  if (outcome == AUTD3_OUTCOME_UNKNOWN) AUTD3__STAT_INC(c, st_unknown);
  autd3__slot_blame(r, d, code, why, ack);
}

/* End of device d's outstanding ordinals: [done_g, end). */
static uint32_t out_end(const autd3__seqcmd_t *b, const autd3__dev_t *v) {
  if (v->state == AUTD3__DEV_RUN) return b->next_g;
  return v->held ? v->held_end : v->done_g;
}

/* Whether device d has resolved frame g. */
static bool resolved_by(const autd3__seqcmd_t *b, const autd3__dev_t *v, uint32_t g) {
  if ((int32_t)(g - v->done_g) < 0) return true;
  return (int32_t)(g - out_end(b, v)) >= 0;
}

/* Resolve every frame still outstanding on device d. */
static void resolve_outstanding(struct autd3_client *c, size_t d, uint8_t outcome, autd3_err_t code, uint8_t why, uint8_t ack) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__dev_t *v = &b->dev[d];
  uint32_t end = out_end(b, v);
  if (b->pend_len > 0) {
    uint32_t head_g = pend_at(b, 0)->g;
    for (uint32_t g = v->done_g; g != end; g++)
      resolve(c, &c->slots[pend_at(b, g - head_g)->slot], d, outcome, code, why, ack);
  }
  v->done_g = b->next_g;
  v->held = false;
}

/* Device d's ack window: the seqs it may still ack, (last_ack, seq of the
 * newest frame it was sent]; `ack`'s offset into it. */
static uint32_t ack_window(const autd3__seqcmd_t *b, const autd3__dev_t *v) { return out_end(b, v) - v->ack_g; }
static uint8_t ack_offset(const autd3__dev_t *v, uint8_t ack) { return (uint8_t)(ack - (uint8_t)(v->last_ack + 1)); }

/* Device d acked `ack` (data byte `data`), inside its window: every frame up
 * to it ran; the unresolved ones become EXECUTED (frames already resolved
 * UNKNOWN by a stale give-up are only skipped over). */
static void take_acks(struct autd3_client *c, size_t d, uint8_t ack, uint8_t data) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__dev_t *v = &b->dev[d];
  uint32_t end = v->ack_g + ack_offset(v, ack) + 1;
  if ((int32_t)(end - v->done_g) > 0) {
    uint32_t head_g = pend_at(b, 0)->g; /* unresolved frames are pending */
    for (uint32_t g = v->done_g; g != end; g++) {
      struct autd3__slot *r = &c->slots[pend_at(b, g - head_g)->slot];
      r->data[d] = data;
      resolve(c, r, d, AUTD3_OUTCOME_EXECUTED, AUTD3_OK, AUTD3__WHY_NONE, ack);
    }
    v->done_g = end;
  }
  v->ack_g = end;
  v->last_ack = ack;
  v->stale_mark = v->stale_epoch;
}

/* Start re-establishing device d (its open sequence, for it alone): Reset
 * seq 0, Reset seq 1, SetMode (FIFO or low latency), Clear, Synchronize. Its
 * outstanding frames must be resolved already, or held. */
static void recover_start(struct autd3_client *c, size_t d, uint8_t why) {
  autd3__dev_t *v = &autd3__seqcmd(c)->dev[d];
  if (v->state != AUTD3__DEV_RECOVER) autd3__seqcmd(c)->recovering++;
  set_dev_state(c, d, AUTD3__DEV_RECOVER);
  v->phase = AUTD3__PH_RESET0;
  v->phase_cycles = 0;
  v->saw_ff = false;
  v->odd_run = 0;
  v->rec_why = why;
  AUTD3__STAT_INC(c, st_resets);
  atomic_fetch_add(&c->ds_resets[d], 1);
}

/* Device d lost (or may have lost) its firmware state: the frames it had
 * outstanding were delivered before the reset, so whether it ran them is
 * unknown (a frame may have been executed just before the reboot and its ack
 * never seen, or re-executed from the tx image by the rebooted device when
 * its seq happened to match); they are never re-sent. */
static void device_reset(struct autd3_client *c, size_t d, uint8_t why, uint8_t ack) {
  AUTD3__STAT_INC(c, st_device_resets);
  if (autd3__seqcmd(c)->dev[d].state == AUTD3__DEV_FOREIGN) return; /* another master owns it: leave it alone */
  resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, why, ack);
  recover_start(c, d, why);
}

/* ---- staging --------------------------------------------------------------------------------- */

static void encode_for(struct autd3_client *c, size_t d, uint8_t seq, const struct autd3__slot *r) {
  size_t src = r->broadcast ? 0 : d;
  autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, seq, r->cmds[src], r->payload + src * AUTD3_PAYLOAD_BYTES,
                  AUTD3_PAYLOAD_BYTES);
}

/* The recovery frame of device d for this cycle. */
static void stage_recovery(struct autd3_client *c, size_t d) {
  autd3__dev_t *v = &autd3__seqcmd(c)->dev[d];
  uint8_t *tx = c->bus.tx + d * AUTD3_TX_FRAME_BYTES;
  switch (v->phase) {
    case AUTD3__PH_RESET0: autd3_tx_encode(tx, 0, AUTD3_CMD_RESET, NULL, 0); break;
    case AUTD3__PH_RESET1: autd3_tx_encode(tx, 1, AUTD3_CMD_RESET, NULL, 0); break;
    case AUTD3__PH_SETMODE: {
      uint8_t mode = fw_mode(c);
      autd3_tx_encode(tx, 0, AUTD3_CMD_SET_MODE, &mode, 1);
      break;
    }
    case AUTD3__PH_CLEAR: autd3_tx_encode(tx, v->rec_seq, AUTD3_CMD_CLEAR, NULL, 0); break;
    default: autd3_tx_encode(tx, v->rec_seq, AUTD3_CMD_SYNCHRONIZE, NULL, 0); break;
  }
}

static void stage(struct autd3_client *c) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  size_t n = c->num_devices;
  if (b->recovering > 0)
    for (size_t d = 0; d < n; d++)
      if (b->dev[d].state == AUTD3__DEV_RECOVER) stage_recovery(c, d);
  if (b->resync_active) {
    /* Stop-and-wait, per device: each device gets the oldest frame it has
     * not acked, with its own seq. A device that already ran a frame never
     * sees it again (the old whole-chain retransmit relied on the duplicate
     * filter for that; renumbering after a reset defeated it). */
    if (b->pend_len > 0) {
      uint32_t head_g = pend_at(b, 0)->g;
      for (size_t d = 0; d < n; d++) {
        autd3__dev_t *v = &b->dev[d];
        if (v->state != AUTD3__DEV_RUN || v->done_g == b->next_g) continue;
        encode_for(c, d, seq_of(v, v->done_g), &c->slots[pend_at(b, v->done_g - head_g)->slot]);
      }
      AUTD3__STAT_INC(c, st_retransmits);
    }
    return;
  }
  struct autd3__slot *r = autd3__ring_peek(c);
  if (r == NULL || b->pend_len >= c->cfg.max_inflight) return; /* nothing new: tx keeps the last frame */
  /* Exclusive reads go out alone: only into an empty pipeline, and nothing
   * joins them while they are in flight (crate autd3-rs 0.9.0 src/client/rt.rs; docs/architecture.md "stage"). */
  if (b->pend_len > 0 && (r->exclusive || c->slots[pend_at(b, 0)->slot].exclusive)) return;
  autd3__ring_pop(c);

  uint32_t g = b->next_g++;
  autd3__pending_t *p = pend_at(b, b->pend_len++);
  p->slot = r->index;
  p->g = g;
  p->age = 0;
  for (size_t d = 0; d < n; d++) {
    autd3__dev_t *v = &b->dev[d];
    if (v->state == AUTD3__DEV_RUN) {
      encode_for(c, d, seq_of(v, g), r);
    } else if (v->state == AUTD3__DEV_AWAY) {
      /* Not sent to it: its tx image keeps the frame it had (go_away). */
      resolve(c, r, d, AUTD3_OUTCOME_NOT_EXECUTED, AUTD3_E_TIMEOUT, AUTD3__WHY_AWAY, v->last_ack);
    } else {
      /* Not sent to this device at all: provably not executed. */
      resolve(c, r, d, AUTD3_OUTCOME_NOT_EXECUTED,
              v->state == AUTD3__DEV_FOREIGN                                      ? AUTD3_E_SECOND_MASTER
              : v->rec_why == AUTD3__WHY_TIMEOUT || v->rec_why == AUTD3__WHY_STALE ? AUTD3_E_TIMEOUT
                                                                                   : AUTD3_E_DEVICE_RESET,
              v->state == AUTD3__DEV_FOREIGN ? AUTD3__WHY_FOREIGN : AUTD3__WHY_RECOVERING, v->last_ack);
    }
  }
  AUTD3__STAT_INC(c, st_sent);
}

/* ---- per-cycle processing --------------------------------------------------------------------- */

/* The link's own evidence of device resets (autd3_link_report_device_reset).
 * It is checked before this cycle's acks are routed, so a rebooted device's
 * 0xFF is never read as an ack. */
static void check_link_evidence(struct autd3_client *c) {
  uint8_t reset[AUTD3_MAX_DEVICES];
  size_t k = autd3__bus_reset_devices(c, reset);
  for (size_t i = 0; i < k; i++) device_reset(c, reset[i], AUTD3__WHY_RESET_EVIDENCE, 0xFF);
}

/* One valid cycle of device d's re-establishment. Every phase is bounded
 * (timeout_cycles × max_resync_rounds valid cycles); a phase that runs out
 * starts over from the Resets (the device may have been frozen and missed
 * them), and the frames staged meanwhile keep failing for this device. */
static void recover_step(struct autd3_client *c, size_t d, bool valid) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__dev_t *v = &b->dev[d];
  uint8_t ack = c->bus.rx[d * AUTD3_RX_FRAME_BYTES];
  v->phase_cycles++;
  if (v->held && valid && ack != v->last_ack) {
    /* Given up on after a timeout (age_head): late acks still count; a
     * change to 0xFF confirms the Reset, unless seq 0xFF itself is
     * outstanding (then the two cannot be told apart). */
    bool in_window = ack_offset(v, ack) < ack_window(b, v);
    if (ack == 0xFF) {
      v->saw_ff = true;
      if (in_window)
        resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, AUTD3__WHY_HUNG, ack);
      else if (v->stale_epoch != v->held_stale) /* an ack may have gone unseen */
        resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, AUTD3__WHY_HUNG, ack);
      else
        resolve_outstanding(c, d, AUTD3_OUTCOME_NOT_EXECUTED, AUTD3_E_TIMEOUT, AUTD3__WHY_TIMEOUT, ack);
      v->last_ack = 0xFF;
    } else if (in_window) {
      take_acks(c, d, ack, c->bus.rx[d * AUTD3_RX_FRAME_BYTES + 1]);
      if (v->done_g == v->held_end) v->held = false; /* it ran them all after all */
    }
  }
  switch (v->phase) {
    case AUTD3__PH_RESET0:
      if (v->phase_cycles >= c->cfg.reset_resend_cycles) {
        v->phase = AUTD3__PH_RESET1;
        v->phase_cycles = 0;
      }
      return;
    case AUTD3__PH_RESET1:
      /* Leave only once the device shows the post-Reset ack 0xFF: before
       * that, an old ack could pass for the Clear's. */
      if (valid && ack == 0xFF && !v->held) v->saw_ff = true;
      if (v->phase_cycles >= c->cfg.reset_resend_cycles && v->saw_ff && !v->held) {
        v->phase = AUTD3__PH_SETMODE; /* always, as the open (fw_mode) */
        v->rec_seq = 0;
        v->phase_cycles = 0;
        return;
      }
      break;
    case AUTD3__PH_SETMODE:
      /* As the handshake: if the device never acks, it stays in FIFO mode
       * and numbering starts at 0. */
      if ((valid && ack == 0) || v->phase_cycles >= hold_bound(c)) {
        v->rec_seq = valid && ack == 0 ? 1 : 0;
        v->phase = AUTD3__PH_CLEAR;
        v->phase_cycles = 0;
      }
      return;
    case AUTD3__PH_CLEAR:
      if (valid && ack == v->rec_seq) {
        v->rec_seq++;
        v->phase = AUTD3__PH_SYNC;
        v->phase_cycles = 0;
        return;
      }
      break;
    default: /* PH_SYNC */
      if (valid && ack == v->rec_seq) {
        /* Back in the stream: the next staged frame gets rec_seq + 1. */
        v->last_ack = v->rec_seq;
        v->base_seq = (uint8_t)(v->rec_seq + 1);
        v->base_g = v->done_g = v->ack_g = b->next_g;
        v->stale_mark = v->stale_epoch;
        set_dev_state(c, d, AUTD3__DEV_RUN);
        b->recovering--;
        AUTD3__STAT_INC(c, st_reinits);
        /* Covers every reset so far (a reset during a recovery restarts it). */
        atomic_store(&c->ds_reinits[d], atomic_load(&c->ds_resets[d]));
        return;
      }
      break;
  }
  if (v->phase_cycles >= b->stale_limit) {
    /* Still no confirmation of the Reset: a hung device may yet run what it
     * had queued. */
    if (v->held) resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, AUTD3__WHY_HUNG, v->last_ack);
    v->phase = AUTD3__PH_RESET0;
    v->phase_cycles = 0;
    v->saw_ff = false;
  }
}

/* Device d rejoins the stream where it stands: the next frame staged gets
 * the seq after its last ack, whatever was sent to it before. */
static void rejoin(struct autd3_client *c, size_t d) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__dev_t *v = &b->dev[d];
  v->base_seq = (uint8_t)(v->last_ack + 1);
  v->base_g = v->done_g = v->ack_g = b->next_g;
  v->stale_mark = v->stale_epoch;
  v->odd_run = 0;
  set_dev_state(c, d, AUTD3__DEV_RUN);
}

/* One valid cycle of an AWAY device (its acks routed already; `moved`: its
 * ack changed). Its tx image has kept one frame since it went away (seq
 * `held`); it can run that frame and nothing else. It rejoins without being
 * re-established (it kept its state: no reset was reported, no ack 0xFF
 * seen):
 *  - at once when it has run that frame (ack == held): nothing it could
 *    still run is left;
 *  - otherwise once its ack stood still for the stale budget while it
 *    answered: frames it received before it went away were run or dropped
 *    long since (the firmware's FIFO holds 7, docs/device-model.md), so the
 *    seq after its ack is free to number new frames with;
 *  - except when the held frame is the one it is due to run (held == ack +
 *    1) and it does not run it for that long: a device that answers but
 *    does not run frames is given up on (re-established, as after a
 *    timeout), since renumbering could make that frame pass for a new one. */
static void rejoin_step(struct autd3_client *c, size_t d, bool moved) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__dev_t *v = &b->dev[d];
  uint8_t held = c->bus.tx[d * AUTD3_TX_FRAME_BYTES];
  v->quiet = moved ? 0 : v->quiet + 1;
  if (v->last_ack == held) {
    rejoin(c, d);
  } else if (v->quiet >= b->stale_limit) {
    if ((uint8_t)(v->last_ack + 1) == held) {
      AUTD3__STAT_INC(c, st_timeouts);
      recover_start(c, d, AUTD3__WHY_TIMEOUT);
    } else {
      rejoin(c, d);
    }
  }
}

/* Cumulative acks, per device: device d's ack acknowledges every frame of
 * its own window (last_ack, seq of the newest frame staged] up to it; the
 * data byte is recorded for each of them (reads are exclusive for that
 * reason, rt.rs route_acks). An ack outside the window is an event, never an
 * ack: 0xFF is a reboot, anything else another writer (SECOND_MASTER).
 * Seq 0xFF is a legit seq, so 0xFF inside the window is ambiguous; the link's
 * evidence (checked before) settles it where the link has any: a link that
 * reports every reset before the device's inputs count again
 * (reset_evidence) makes it an ack. Otherwise: a device reboots in far more
 * than a bus cycle, and while it does the link sees its inputs stale or
 * lost, while a legit wrap comes with none. So 0xFF after at least
 * timeout_cycles stale cycles since the device last made progress counts as
 * a possible reboot (its frames: UNKNOWN, the device is re-established), and
 * otherwise as the ack it is (a lone stale cycle, a common glitch, must not
 * cost the device its state). An AWAY device's acks are routed the same way
 * (its window holds the frames it was sent before it went away), then
 * rejoin_step decides whether it is back. */
static void route_acks(struct autd3_client *c) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  for (size_t d = 0; d < c->num_devices; d++) {
    autd3__dev_t *v = &b->dev[d];
    if ((v->state != AUTD3__DEV_RUN && v->state != AUTD3__DEV_AWAY) || !v->valid) continue; /* stale inputs: on_stale */
    const uint8_t *rx = c->bus.rx + d * AUTD3_RX_FRAME_BYTES;
    uint8_t ack = rx[0];
    bool odd = ack != v->last_ack && ack != 0xFF && ack_offset(v, ack) >= ack_window(b, v);
    v->odd_run = odd ? v->odd_run + 1 : 0;
    bool moved = false;
    if (ack == v->last_ack) {
      /* nothing new */
    } else if (ack_offset(v, ack) < ack_window(b, v)) {
      if (ack == 0xFF && !c->reset_evidence && v->stale_epoch - v->stale_mark >= c->cfg.timeout_cycles) {
        device_reset(c, d, AUTD3__WHY_ACK_FF_STALE, ack);
        continue;
      }
      take_acks(c, d, ack, rx[1]);
      moved = true;
    } else if (ack == 0xFF) {
      device_reset(c, d, AUTD3__WHY_ACK_FF, ack);
      continue;
    } else if (v->odd_run >= c->cfg.timeout_cycles) {
      /* Backwards, or a seq never sent, in timeout_cycles valid cycles in a
       * row: someone else writes this device's outputs. Its frames are failed
       * (whether it ran them depends on the other writer's seqs) and it is
       * left alone from now on. Not on the first such ack: a bit error the
       * FCS did not catch (autd3-emu's "corrupt") gives one cycle an ack the
       * device never made, and the next read shows its real ack again, while
       * a device another master drives keeps showing that master's seqs (the
       * firmware ignores ours). A glitch taken for a second master left the
       * device unsilenced at close (SECOND_MASTER); meanwhile the odd ack is
       * ignored and the device stays in the stream. */
      AUTD3__STAT_INC(c, st_foreign);
      resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_SECOND_MASTER, AUTD3__WHY_FOREIGN, ack);
      v->last_ack = ack;
      set_dev_state(c, d, AUTD3__DEV_FOREIGN);
      continue;
    }
    if (v->state == AUTD3__DEV_AWAY) rejoin_step(c, d, moved);
  }
}

/* Complete the head frames every device has resolved. */
static bool pop_resolved(struct autd3_client *c) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  bool progressed = false;
  while (b->pend_len > 0) {
    autd3__pending_t *p = pend_at(b, 0);
    for (size_t d = 0; d < c->num_devices; d++)
      if (!resolved_by(b, &b->dev[d], p->g)) return progressed;
    struct autd3__slot *r = &c->slots[p->slot];
    b->pend_head = (b->pend_head + 1) % AUTD3__RING_CAP;
    b->pend_len--;
    autd3__client_complete(c, r, r->err_dev < 0 ? AUTD3_OK : r->err_code);
    progressed = true;
  }
  return progressed;
}

static void resync_clear(autd3__seqcmd_t *b) {
  b->resync_active = false;
  b->resync_rounds = 0;
}

/* Age the head (rt.rs ResyncState::advance_head): after timeout_cycles enter
 * resync; every further timeout is a round; after max_resync_rounds rounds
 * the devices still holding the head are given up on and re-established
 * alone; the devices that kept up are not touched (the reference's
 * chain-wide reset renumbered and re-sent frames they had already run).
 * A given-up device may be hung with frames in its queue that it would still
 * run if it resumed, so its outstanding frames are held, not failed, until
 * it confirms the client's Reset (ack 0xFF; the Reset empties its queue):
 * acks it makes before that still count as EXECUTED, and once confirmed,
 * with no stale input in between, the rest are NOT_EXECUTED (TIMEOUT). If it
 * never confirms within the phase bound they are UNKNOWN (recover_step). */
static void age_head(struct autd3_client *c, bool progressed) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  if (b->pend_len == 0) {
    if (b->resync_active) resync_clear(b);
    return;
  }
  autd3__pending_t *h = pend_at(b, 0);
  if (progressed && b->resync_active) {
    b->resync_rounds = 0;
    h->age = 0;
  }
  if (++h->age < c->cfg.timeout_cycles) return;
  h->age = 0;
  /* A head held only by a device given up on already (its frames wait for
   * its Reset's confirmation, bounded in recover_step) needs no resync, and
   * resync would stop new frames for the devices that are fine. Nor does one
   * held only by devices whose inputs are stale: nothing says they missed a
   * frame, and their stale run settles their frames (on_stale). */
  bool run_holds = false;
  for (size_t d = 0; d < c->num_devices && !run_holds; d++)
    run_holds = b->dev[d].state == AUTD3__DEV_RUN && b->dev[d].valid && b->dev[d].done_g == h->g;
  if (!run_holds) {
    resync_clear(b);
    return;
  }
  if (!b->resync_active) {
    b->resync_active = true;
    b->resync_rounds = 0;
    AUTD3__STAT_INC(c, st_resyncs);
    return;
  }
  if (++b->resync_rounds < c->cfg.max_resync_rounds) return;
  for (size_t d = 0; d < c->num_devices; d++) {
    autd3__dev_t *v = &b->dev[d];
    if (v->state != AUTD3__DEV_RUN || !v->valid || v->done_g != h->g) continue;
    AUTD3__STAT_INC(c, st_timeouts);
    v->held = true;
    v->held_end = b->next_g;
    v->held_stale = v->stale_epoch;
    recover_start(c, d, AUTD3__WHY_TIMEOUT);
  }
  resync_clear(b);
  pop_resolved(c);
}

/* Device d goes AWAY: its tx image keeps the frame it holds now, and frames
 * staged from now on are not sent to it (NOT_EXECUTED there), so that
 * nothing it runs once it answers again can be mistaken for a later frame.
 * It keeps its state (no Reset, no Clear): rejoin_step takes it back. */
static void go_away(struct autd3_client *c, size_t d) {
  autd3__seqcmd(c)->dev[d].quiet = 0;
  set_dev_state(c, d, AUTD3__DEV_AWAY);
  atomic_fetch_add_explicit(&c->ds_aways[d], 1, memory_order_relaxed);
}

/* A cycle with device d's inputs stale. After the whole budget in a row
 * (timeout_cycles × max_resync_rounds) nothing tells what it did with the
 * frames in flight, so they are UNKNOWN on it and complete now (as far as it
 * is concerned), and it goes AWAY. It most likely kept running (only its
 * answers were lost) or was cut off the line: it is not re-established (a
 * Clear would wipe its state); its window keeps those frames ([ack_g,
 * done_g)) so that its later acks are still recognised, and are never
 * mistaken for another master. Per device: the others' inputs may be valid
 * meanwhile (autd3_link_cycle_devices), and they lose nothing; when every
 * device's are stale (the link cannot tell who is missing, or the whole
 * chain is), every device goes AWAY and a request staged then completes at
 * once, sent to nobody (NOT_EXECUTED everywhere). Returns whether its budget
 * ran out now. */
static bool on_stale(struct autd3_client *c, size_t d) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  autd3__dev_t *v = &b->dev[d];
  v->stale_epoch++;
  if (++v->stale_run < b->stale_limit) return false;
  v->stale_run = 0;
  if (v->state == AUTD3__DEV_RUN) {
    if (v->done_g != b->next_g)
      resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, AUTD3_E_OUTCOME_UNKNOWN, AUTD3__WHY_STALE, v->last_ack);
    go_away(c, d);
  }
  return true;
}

/* More than one request queued and stage() will take one (no resync or
 * recovery, room in the window): the frame of this cycle is decided already. */
static bool more_queued(struct autd3_client *c) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  if (b->resync_active || b->recovering > 0 || b->pend_len + 1 >= c->cfg.max_inflight) return false;
  /* an exclusive read waits for an empty pipeline: its predecessors' acks are awaited */
  return autd3__ring_len(c) >= 2 && !autd3__ring_peek(c)->exclusive;
}

/* ---- the table's bus-thread entries (the core's bus_thread.c runs them) ---------------------- */

autd3_err_t autd3__seqcmd_handshake(struct autd3_client *c) {
  autd3__seqcmd(c)->stale_limit = c->cfg.timeout_cycles * c->cfg.max_resync_rounds;
  return handshake(c);
}

autd3_err_t autd3__seqcmd_run(struct autd3_client *c) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  size_t n = c->num_devices;
  /* ---- the cycle loop: no allocation, no lock, no printf from here on ---- */
  while (!atomic_load_explicit(&c->closing, memory_order_acquire)) {
    /* Wait first, stage second: a request that arrives while we sleep still
     * makes this cycle's frame (links with wait_next_cycle wake us just
     * before the exchange), which saves up to one cycle of pick-up latency.
     * Not when more frames are queued than this cycle takes (streaming): the
     * wait could change nothing, and skipping it tells the link that nobody
     * waits for this cycle's acks before the next frame (link_driver.h). */
    autd3_err_t err = more_queued(c) ? AUTD3_OK : autd3_link_wait_next_cycle(c->link);
    bool valid = false;
    if (err == AUTD3_OK) {
      stage(c);
      err = autd3_link_cycle_devices(c->link, c->bus.tx, c->bus.rx, &valid, c->bus.dev_valid);
    }
    AUTD3__STAT_INC(c, st_cycles);
    /* Fatal for the link (link.h): everything pending fails with LINK and
     * the thread stops (the core keeps the link's message first). */
    if (err != AUTD3_OK) return AUTD3_E_LINK;
    check_link_evidence(c);
    /* Per device (docs/reliability.md "A fault costs only its device"): a
     * device's stale inputs cost it alone; `valid` (all of them) is the
     * common case and costs one pass over the devices. */
    bool any = valid, budget_out = false;
    for (size_t d = 0; d < n; d++) {
      autd3__dev_t *v = &b->dev[d];
      v->valid = valid || c->bus.dev_valid[d];
      if (v->valid) {
        v->stale_run = 0;
        any = true;
      }
    }
    if (b->recovering > 0)
      for (size_t d = 0; d < n; d++)
        if (b->dev[d].state == AUTD3__DEV_RECOVER) recover_step(c, d, b->dev[d].valid);
    if (any) {
      route_acks(c);
      age_head(c, pop_resolved(c));
    }
    if (!valid)
      for (size_t d = 0; d < n; d++)
        if (!b->dev[d].valid && on_stale(c, d)) budget_out = true;
    if (budget_out && !any) resync_clear(b); /* the whole chain went stale: nothing to resync against */
    pop_resolved(c); /* frames the link's evidence or a stale budget resolved */
  }
  return AUTD3_E_CLOSED;
}

/* The loop has ended (close or link error): fail what is in flight; the
 * core then fails what is still queued and wakes blocked senders. */
void autd3__seqcmd_stop(struct autd3_client *c, autd3_err_t why, uint8_t w) {
  autd3__seqcmd_t *b = autd3__seqcmd(c);
  /* In flight: delivered, so UNKNOWN where not yet resolved. */
  for (size_t d = 0; d < c->num_devices; d++) resolve_outstanding(c, d, AUTD3_OUTCOME_UNKNOWN, why, w, 0);
  while (b->pend_len > 0) {
    struct autd3__slot *r = &c->slots[pend_at(b, 0)->slot];
    b->pend_head = (b->pend_head + 1) % AUTD3__RING_CAP;
    b->pend_len--;
    /* The close/link error is the request's result whatever the devices did. */
    autd3__client_complete(c, r, r->err_dev < 0 ? AUTD3_OK : why);
  }
}
