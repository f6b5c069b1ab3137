/*
 * echocat: frame slots and transactions: build/send a slot, match replies (idx +
 * datagram chain), one exchange from the calling thread, and the transaction
 * path during open/close or through the bus thread's mailbox afterwards.
 */
#define _GNU_SOURCE
#include "link/echocat/echocat_internal.h"

void autd3__echocat_slot_start(echocat_t *ec, slot_t *s, bool bus) {
  uint8_t idx = bus ? (uint8_t)(ec->bus_idx++ & 0x7F) : (uint8_t)(0x80 | (ec->x_idx++ & 0x7F));
  autd3__ecat_frame_init(&s->f, ec->mac, idx);
  s->state = SLOT_IDLE;
  s->accounted = false;
  s->stamped = false;
}

autd3_err_t autd3__echocat_slot_send(echocat_t *ec, slot_t *s) {
  s->wire = autd3__ecat_frame_finish(&s->f);
  s->sent_ns = autd3__now_ns();
  autd3_err_t e = autd3__nic_send(ec->nic, s->f.buf, s->wire);
  s->state = e == AUTD3_OK ? SLOT_SENT : SLOT_FAILED;
  return e;
}

/* Receive replies until none of `set` is SENT or `deadline` passes. A reply is
 * matched on the idx of its first datagram and on an unchanged datagram chain;
 * anything else (late replies of an earlier cycle, foreign frames) is ignored. */
autd3_err_t autd3__echocat_collect_until(echocat_t *ec, slot_t **set, int n, uint64_t deadline, const slot_t *stop) {
  int pending = 0;
  for (int i = 0; i < n; i++)
    pending += set[i]->state == SLOT_SENT;
  while (pending > 0 && !(stop && stop->state == SLOT_DONE)) {
    size_t len = 0;
    uint64_t t0 = deadline ? autd3__now_ns() : 0;
    autd3_err_t e = autd3__nic_recv(ec->nic, ec->rxbuf, sizeof ec->rxbuf, &len, deadline);
    uint64_t t = autd3__now_ns();
    /* a receive that had to wait (more than a few µs): one wake-up of the bus thread */
    if (deadline && t - t0 > WAIT_SEEN_NS)
      atomic_fetch_add_explicit(&ec->wakeups, 1, memory_order_relaxed);
    if (e == AUTD3_E_TIMEOUT)
      break;
    if (e != AUTD3_OK)
      return e;
    if (!autd3__frame_from(ec->rxbuf, ec->mac)) { /* another master's frame (the source MAC is this open's own) */
      if (atomic_load_explicit(&ec->foreign, memory_order_relaxed) == 0)
        memcpy(ec->foreign_mac, ec->rxbuf + 6, 6);
      atomic_fetch_add_explicit(&ec->foreign, 1, memory_order_release);
      continue;
    }
    if (len < ECAT_ETH_HDR + ECAT_HDR + ECAT_DG_OVERHEAD)
      continue;
    uint8_t idx = ec->rxbuf[ECAT_ETH_HDR + ECAT_HDR + 1];
    for (int i = 0; i < n; i++) {
      slot_t *s = set[i];
      if (s->state == SLOT_SENT && s->f.idx == idx && s->f.ndg <= 64 &&
          autd3__ecat_reply_matches(&s->f, s->wire, ec->rxbuf, len, s->dg)) {
        memcpy(s->f.buf, ec->rxbuf, len);
        /* The NIC's arrival stamp where it has one: a reply taken from the
         * ring long after it arrived still proves how far the devices' clock
         * has got (the lower bound of dc.c) and gives a true round trip. */
        uint64_t k = autd3__nic_rx_ns(ec->nic);
        s->stamped = k != 0 && k >= s->sent_ns && k <= t;
        s->rx_ns = s->stamped ? k : t;
        s->state = SLOT_DONE;
        pending--;
        break;
      }
    }
  }
  return AUTD3_OK;
}

autd3_err_t autd3__echocat_collect(echocat_t *ec, slot_t **set, int n, uint64_t deadline) {
  return autd3__echocat_collect_until(ec, set, n, deadline, NULL);
}

/* One exchange on the NIC from the calling thread: send, wait, resend with the
 * same idx on timeout (as SOEM does). */
autd3_err_t autd3__echocat_xfer_direct(echocat_t *ec, slot_t *s, uint32_t timeout_us, int tries) {
  for (int t = 0; t < tries; t++) {
    autd3_err_t e = autd3__echocat_slot_send(ec, s);
    if (e != AUTD3_OK)
      return e;
    slot_t *set[1] = {s};
    e = autd3__echocat_collect(ec, set, 1, autd3__now_ns() + (uint64_t)timeout_us * 1000u);
    if (e != AUTD3_OK)
      return e;
    if (s->state == SLOT_DONE)
      return AUTD3_OK;
  }
  return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: no reply to a frame after %d tries", ec->ifname, tries);
}

/* A transaction on ec->xs: direct during open/close, through the bus thread's
 * mailbox while cycle() runs, or direct again (ownership flag) when nobody cycles. */
autd3_err_t autd3__echocat_xfer(echocat_t *ec, slot_t *s) {
  if (!atomic_load(&ec->running))
    return autd3__echocat_xfer_direct(ec, s, 20000, 3);
  s->wire = autd3__ecat_frame_finish(&s->f);
  for (int attempt = 0; attempt < 3; attempt++) {
    s->state = SLOT_IDLE;
    atomic_store(&ec->mbx, MBX_POSTED);
    uint64_t c0 = atomic_load(&ec->bus_cycles);
    uint64_t t0 = autd3__now_ns();
    for (;;) {
      int st = atomic_load(&ec->mbx);
      if (st == MBX_DONE) {
        atomic_store(&ec->mbx, MBX_IDLE);
        return AUTD3_OK;
      }
      if (st == MBX_FAILED)
        break;
      uint64_t waited = autd3__now_ns() - t0;
      if (st == MBX_POSTED && atomic_load(&ec->bus_cycles) - c0 < 2 && waited > 4 * ec->period + 20000000u) {
        /* Nobody is cycling: take the mailbox back and the NIC for ourselves. */
        int exp = MBX_POSTED;
        if (atomic_compare_exchange_strong(&ec->mbx, &exp, MBX_IDLE)) {
          int own = OWN_NONE;
          if (atomic_compare_exchange_strong(&ec->owner, &own, OWN_CHECKER)) {
            autd3_err_t e = autd3__echocat_xfer_direct(ec, s, 20000, 3);
            atomic_store(&ec->owner, OWN_NONE);
            return e;
          }
          break; /* the bus thread just started: post again */
        }
        continue;
      }
      if (waited > 1000000000ull) { /* the bus thread holds it without answering: give up */
        int exp = MBX_POSTED;
        atomic_compare_exchange_strong(&ec->mbx, &exp, MBX_IDLE);
        return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: bus thread did not serve a state-check frame", ec->ifname);
      }
      autd3__sleep_ns(100000);
    }
    atomic_store(&ec->mbx, MBX_IDLE);
  }
  return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: no reply to a state-check frame", ec->ifname);
}

/* Per-slave datagrams: for each slave in `list`, the datagrams `spec` addressed
 * by station address (or position when by_pos), data from `in` (per-slave
 * stride = sum of lengths; NULL = zeros) and results into `out` (same layout;
 * may be NULL) and wkc[i*nspec + j]. Frames are split at slave boundaries. */

autd3_err_t autd3__echocat_each(echocat_t *ec, const uint16_t *list, int cnt, bool by_pos, const dgspec_t *spec, int nspec,
                        const uint8_t *in, uint8_t *out, uint16_t *wkc) {
  size_t stride = 0, need = 0;
  for (int j = 0; j < nspec; j++)
    stride += spec[j].len, need += spec[j].len + ECAT_DG_OVERHEAD;
  int i = 0;
  while (i < cnt) {
    slot_t *s = &ec->xs;
    autd3__echocat_slot_start(ec, s, false);
    int first = i;
    uint16_t offs[64];
    int nd = 0;
    while (i < cnt && nd + nspec <= 64 && (size_t)autd3__ecat_frame_room(&s->f) + ECAT_DG_OVERHEAD >= need) {
      uint16_t k = list[i];
      uint16_t adp = by_pos ? POSITION(k) : STATION(k);
      size_t o = 0;
      for (int j = 0; j < nspec; j++) {
        offs[nd++] = autd3__ecat_dg_add(&s->f, spec[j].cmd, adp, spec[j].ado, in ? in + (size_t)k * stride + o : NULL, spec[j].len);
        o += spec[j].len;
      }
      i++;
    }
    if (i == first)
      return autd3_set_error(AUTD3_E_INTERNAL, "echocat: datagram set does not fit a frame");
    autd3_err_t e = autd3__echocat_xfer(ec, s);
    if (e != AUTD3_OK)
      return e;
    nd = 0;
    for (int q = first; q < i; q++) {
      size_t o = 0;
      for (int j = 0; j < nspec; j++, nd++) {
        if (out)
          memcpy(out + (size_t)list[q] * stride + o, s->f.buf + offs[nd], spec[j].len);
        if (wkc)
          wkc[(size_t)list[q] * nspec + j] = ecat_get16(s->f.buf + offs[nd] + spec[j].len);
        o += spec[j].len;
      }
    }
  }
  return AUTD3_OK;
}

/* One datagram in one frame. */
autd3_err_t autd3__echocat_dg1(echocat_t *ec, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len,
                       void *out, uint16_t *wkc) {
  slot_t *s = &ec->xs;
  autd3__echocat_slot_start(ec, s, false);
  uint16_t o = autd3__ecat_dg_add(&s->f, cmd, adp, ado, data, len);
  autd3_err_t e = autd3__echocat_xfer(ec, s);
  if (e != AUTD3_OK)
    return e;
  if (out)
    memcpy(out, s->f.buf + o, len);
  if (wkc)
    *wkc = ecat_get16(s->f.buf + o + len);
  return AUTD3_OK;
}

void autd3__echocat_list_range(uint16_t *list, int first, int cnt) {
  for (int i = 0; i < cnt; i++)
    list[i] = (uint16_t)(first + i);
}
