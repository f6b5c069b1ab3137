/*
 * The client's bus thread: the handshake, then one iteration per bus cycle
 * (stage → autd3_link_cycle → route acks / age the head / count stale runs).
 *
 * Faithful to shinolab/autd3-sdk crates/autd3-rs/src/client/rt.rs (notes:
 * autd3-link-layer.md §1.2). Hot path: after open nothing here allocates,
 * prints or takes a lock; every loop is bounded by the device count (≤ 128)
 * or the in-flight window (≤ 127); the only place it blocks is inside
 * autd3_link_cycle(), which paces the loop to the bus cycle.
 */
#define _GNU_SOURCE
#include <string.h>

#include "client/client_internal.h"

#define STAT_INC(c, f) atomic_fetch_add_explicit(&(c)->f, 1, memory_order_relaxed)

static autd3__pending_t *pend_at(autd3__bus_t *b, uint32_t i) { return &b->pend[(b->pend_head + i) % AUTD3__RING_CAP]; }

static void stage_reset(struct autd3_client *c, uint8_t seq) {
  for (size_t d = 0; d < c->num_devices; d++)
    autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, seq, AUTD3_CMD_RESET, NULL, 0);
}

/* Write one frame into every device's tx image (Nop-filled per-device frames
 * come from the caller; a broadcast frame reads cmds[0]/payload[0]). */
static void stage_frame(struct autd3_client *c, uint8_t seq, const struct autd3_request *r) {
  for (size_t d = 0; d < c->num_devices; d++) {
    size_t src = r->broadcast ? 0 : d;
    autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, seq, r->cmds[src], r->payload + src * AUTD3_PAYLOAD_BYTES,
                    AUTD3_PAYLOAD_BYTES);
  }
}

/* Copy the link's (thread-local) message where user threads can read it. */
static void keep_link_message(struct autd3_client *c, char *dst, size_t cap, const char *prefix) {
  size_t p = strlen(prefix);
  if (p >= cap) p = cap - 1;
  memcpy(dst, prefix, p);
  const char *m = autd3_last_error();
  size_t ml = strlen(m);
  if (ml > cap - 1 - p) ml = cap - 1 - p;
  memcpy(dst + p, m, ml);
  dst[p + ml] = 0;
  (void)c;
}

/* ---- handshake (rt.rs handshake / negotiate_low_latency) ---------------------------------- */

static autd3_err_t handshake(struct autd3_client *c) {
  bool valid = false;
  /* Reset with seq 0 then seq 1: two different (seq, cmd) pairs, so at least
   * one passes the device's duplicate filter even if the last frame it saw
   * was (0, Reset) (firmware proto.c; notes §1.2 step 3). */
  for (uint8_t seq = 0; seq < 2; seq++) {
    stage_reset(c, seq);
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
  }
  c->bus.next_seq = 0;
  if (!c->cfg.low_latency) return AUTD3_OK;

  /* SetMode(LowLatency) with seq 0 until every device acks seq 0, bounded by
   * max(timeout_cycles, 2) cycles; then the first data frame is seq 1. If the
   * devices never ack, the client stays in FIFO mode numbering from 0, as the
   * reference does. */
  autd3_frame_t f = autd3_frame_set_mode(AUTD3_MODE_LOW_LATENCY);
  for (size_t d = 0; d < c->num_devices; d++)
    autd3_tx_encode(c->bus.tx + d * AUTD3_TX_FRAME_BYTES, 0, f.cmd, f.payload, f.len);
  uint32_t bound = c->cfg.timeout_cycles > 2 ? c->cfg.timeout_cycles : 2;
  for (uint32_t i = 0; i < bound; i++) {
    autd3_err_t err = autd3_link_cycle(c->link, c->bus.tx, c->bus.rx, &valid);
    if (err != AUTD3_OK) return err;
    bool all = valid;
    for (size_t d = 0; all && d < c->num_devices; d++) all = c->bus.rx[d * AUTD3_RX_FRAME_BYTES] == 0;
    if (all) {
      c->bus.next_seq = 1;
      return AUTD3_OK;
    }
  }
  return AUTD3_OK;
}

/* ---- staging --------------------------------------------------------------------------------- */

static void stage(struct autd3_client *c) {
  autd3__bus_t *b = &c->bus;
  if (b->reset_remaining > 0) {
    stage_reset(c, 0);
    return;
  }
  if (b->resync_active) {
    /* Stop-and-wait on the oldest unacked frame, with its original seq. */
    if (b->pend_len > 0) {
      autd3__pending_t *h = pend_at(b, 0);
      stage_frame(c, h->seq, &c->slots[h->slot]);
      STAT_INC(c, st_retransmits);
    }
    return;
  }
  uint32_t head = atomic_load_explicit(&c->ring_head, memory_order_relaxed);
  uint32_t tail = atomic_load_explicit(&c->ring_tail, memory_order_acquire) & AUTD3__RING_MASK;
  if (head == tail || b->pend_len >= c->cfg.max_inflight) return; /* nothing new: tx keeps the last frame */
  struct autd3_request *r = &c->slots[c->ring[head % AUTD3__RING_CAP]];
  /* Exclusive reads go out alone: only into an empty pipeline, and nothing
   * joins them while they are in flight (notes §1.2 "stage"). */
  if (b->pend_len > 0 && (r->exclusive || c->slots[pend_at(b, 0)->slot].exclusive)) return;
  atomic_store_explicit(&c->ring_head, (head + 1) & AUTD3__RING_MASK, memory_order_release);

  uint8_t seq = b->next_seq++;
  stage_frame(c, seq, r);
  autd3__pending_t *p = pend_at(b, b->pend_len++);
  p->slot = r->index;
  p->seq = seq;
  p->age = 0;
  p->acked[0] = p->acked[1] = 0;
  STAT_INC(c, st_sent);
}

/* ---- completion helpers ---------------------------------------------------------------- */

static int first_missing(const autd3__bus_t *b, const autd3__pending_t *p) {
  for (int d = 0; d < 128; d++) {
    uint64_t want = b->all_acked[d / 64] & (1ull << (d % 64));
    if (want && !(p->acked[d / 64] & (1ull << (d % 64)))) return d;
  }
  return -1;
}

static void fail_pending(struct autd3_client *c, autd3_err_t err, bool name_device) {
  autd3__bus_t *b = &c->bus;
  while (b->pend_len > 0) {
    autd3__pending_t *p = pend_at(b, 0);
    struct autd3_request *r = &c->slots[p->slot];
    r->missing_device = name_device ? first_missing(b, p) : -1;
    b->pend_head = (b->pend_head + 1) % AUTD3__RING_CAP;
    b->pend_len--;
    autd3__client_complete(c, r, err);
  }
}

static void resync_clear(autd3__bus_t *b) {
  b->resync_active = false;
  b->resync_rounds = 0;
  b->reset_tried = false;
}

/* ---- per-cycle processing --------------------------------------------------------------------- */

/* Cumulative acks (rt.rs route_acks): device d's ack seq acknowledges every
 * pending frame up to it; the data byte is recorded for the frames that
 * device had not acked before. Pop the fully acked head frames. */
static void route_acks(struct autd3_client *c) {
  autd3__bus_t *b = &c->bus;
  if (b->pend_len == 0) return;
  uint8_t front = pend_at(b, 0)->seq;
  uint8_t span = (uint8_t)(pend_at(b, b->pend_len - 1)->seq - front);
  for (size_t d = 0; d < c->num_devices; d++) {
    const uint8_t *rx = c->bus.rx + d * AUTD3_RX_FRAME_BYTES;
    uint8_t off = (uint8_t)(rx[0] - front);
    if (off > span) continue; /* older than the head, or 0xFF after Reset */
    uint64_t bit = 1ull << (d % 64);
    for (uint32_t i = 0; i <= off; i++) {
      autd3__pending_t *p = pend_at(b, i);
      if (!(p->acked[d / 64] & bit)) {
        p->acked[d / 64] |= bit;
        c->slots[p->slot].data[d] = rx[1];
      }
    }
  }
  bool progressed = false;
  while (b->pend_len > 0) {
    autd3__pending_t *p = pend_at(b, 0);
    if (p->acked[0] != b->all_acked[0] || p->acked[1] != b->all_acked[1]) break;
    struct autd3_request *r = &c->slots[p->slot];
    b->pend_head = (b->pend_head + 1) % AUTD3__RING_CAP;
    b->pend_len--;
    autd3__client_complete(c, r, AUTD3_OK);
    progressed = true;
  }
  if (progressed && b->resync_active) {
    b->resync_rounds = 0;
    b->reset_tried = false;
    if (b->pend_len > 0) pend_at(b, 0)->age = 0;
  }
}

/* Age the head (rt.rs ResyncState::advance_head): after timeout_cycles enter
 * resync; every further timeout is a round; after max_resync_rounds rounds
 * reset once; after another max_resync_rounds rounds give up. */
static void age_head(struct autd3_client *c) {
  autd3__bus_t *b = &c->bus;
  if (b->pend_len == 0) {
    if (b->resync_active) resync_clear(b);
    return;
  }
  autd3__pending_t *h = pend_at(b, 0);
  if (++h->age < c->cfg.timeout_cycles) return;
  h->age = 0;
  if (!b->resync_active) {
    b->resync_active = true;
    b->resync_rounds = 0;
    STAT_INC(c, st_resyncs);
    return;
  }
  if (++b->resync_rounds < c->cfg.max_resync_rounds) return;
  b->resync_rounds = 0;
  if (b->reset_tried) {
    fail_pending(c, AUTD3_E_TIMEOUT, true);
    resync_clear(b);
  } else {
    b->reset_tried = true;
    b->reset_remaining = c->cfg.reset_resend_cycles;
    STAT_INC(c, st_resets);
  }
}

/* After the Reset cycles the devices expect seq 0: renumber what is pending
 * from 0 and resend it stop-and-wait (rt.rs advance_reset_phase). */
static void advance_reset(struct autd3_client *c) {
  autd3__bus_t *b = &c->bus;
  if (--b->reset_remaining > 0) return;
  uint8_t seq = 0;
  for (uint32_t i = 0; i < b->pend_len; i++) {
    autd3__pending_t *p = pend_at(b, i);
    p->seq = seq++;
    p->acked[0] = p->acked[1] = 0;
    p->age = 0;
  }
  b->next_seq = seq;
  b->resync_active = b->pend_len > 0;
  b->resync_rounds = 0;
}

static void on_stale(struct autd3_client *c) {
  autd3__bus_t *b = &c->bus;
  if (++b->stale_run >= b->stale_limit) {
    fail_pending(c, AUTD3_E_TIMEOUT, false);
    resync_clear(b);
    b->stale_run = 0;
  }
}

/* ---- teardown --------------------------------------------------------------------------------- */

/* The loop has ended (close or link error): refuse new pushes, fail what is
 * in flight and what is still queued, and wake blocked senders. */
static void teardown(struct autd3_client *c, autd3_err_t why) {
  c->dead_reason = why;
  atomic_store(&c->dead, true);
  fail_pending(c, why, false);
  uint32_t tail = atomic_fetch_or(&c->ring_tail, AUTD3__RING_CLOSED) & AUTD3__RING_MASK;
  uint32_t head = atomic_load(&c->ring_head);
  while (head != tail) { /* bounded: ≤ 127 entries */
    struct autd3_request *r = &c->slots[c->ring[head % AUTD3__RING_CAP]];
    head = (head + 1) & AUTD3__RING_MASK;
    atomic_store(&c->ring_head, head);
    autd3__client_complete(c, r, why);
  }
  sem_post(&c->free_sem); /* the "baton": see slot_acquire() */
}

void *autd3__client_bus_main(void *arg) {
  struct autd3_client *c = arg;
  autd3__bus_t *b = &c->bus;
  size_t n = c->num_devices;
  b->all_acked[0] = n >= 64 ? ~0ull : (1ull << n) - 1;
  b->all_acked[1] = n >= 128 ? ~0ull : n > 64 ? (1ull << (n - 64)) - 1 : 0;
  b->stale_limit = c->cfg.timeout_cycles * c->cfg.max_resync_rounds;

  autd3_err_t err = AUTD3_OK;
  if (c->cfg.rt_priority > 0 || c->cfg.rt_cpu >= 0) {
    err = autd3__thread_set_rt(c->cfg.rt_priority, c->cfg.rt_cpu);
    if (err != AUTD3_OK) keep_link_message(c, c->hs_msg, sizeof c->hs_msg, "client bus thread: rt_priority/rt_cpu: ");
  }
  if (err == AUTD3_OK) {
    err = handshake(c);
    if (err != AUTD3_OK) keep_link_message(c, c->hs_msg, sizeof c->hs_msg, "client handshake: link cycle failed: ");
    if (err != AUTD3_OK) err = AUTD3_E_LINK;
  }
  c->hs_err = err;
  sem_post(&c->hs_done);
  if (err != AUTD3_OK) return NULL;

  /* ---- the cycle loop: no allocation, no lock, no printf from here on ---- */
  autd3_err_t why = AUTD3_E_CLOSED;
  while (!atomic_load_explicit(&c->closing, memory_order_acquire)) {
    /* Wait first, stage second: a request that arrives while we sleep still
     * makes this cycle's frame (links with wait_next_cycle wake us just
     * before the exchange), which saves up to one cycle of pick-up latency. */
    err = autd3_link_wait_next_cycle(c->link);
    bool valid = false;
    if (err == AUTD3_OK) {
      stage(c);
      err = autd3_link_cycle(c->link, b->tx, b->rx, &valid);
    }
    STAT_INC(c, st_cycles);
    if (err != AUTD3_OK) {
      /* Fatal for the link (link.h): everything pending fails with LINK and
       * the thread stops. The message is copied before any completion so the
       * waiters can re-raise it on their own threads. */
      keep_link_message(c, c->link_msg, sizeof c->link_msg, "");
      why = AUTD3_E_LINK;
      break;
    }
    if (b->reset_remaining > 0) {
      advance_reset(c);
    } else if (valid) {
      b->stale_run = 0;
      route_acks(c);
      age_head(c);
    } else {
      on_stale(c);
    }
  }
  /* The final CPU figure, for stats read after the thread has stopped (while
   * it runs, autd3_client_stats() reads the thread's CPU clock itself, so the
   * cycle pays no clock_gettime for it). */
  atomic_store_explicit(&c->st_cpu_ns, autd3__thread_cpu_ns(), memory_order_relaxed);
  teardown(c, why);
  return NULL;
}
